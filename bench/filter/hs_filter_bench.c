/*
 * bench/filter/hs_filter_bench.c - times filtered table scans through the
 * public C API (hs_scan_plan + hs_scan_stream), fetching every column of the
 * matching rows, as bench/filter/bench.py asks.
 *
 *   hs_filter_bench TABLE REPEAT FILTER_FILE
 *
 * TABLE is a path-table directory (opened through a path catalog) or a
 * *.metadata.json file (opened read-only with hs_table_open_metadata: the
 * bench uses the metadata version from before the indexes were declared to
 * time the same table without indexes).  FILTER_FILE holds one filter per
 * line.  For each filter the scan runs REPEAT times on the same table handle
 * (a warm engine, as a server would hold it); every batch is pulled through
 * the Arrow C stream and released at once.  After the last batch of the last
 * run, and before the stream is released (the stream owns the hs_scan), the
 * counters of hs_scan_get_index_stats are read.  One JSON line per filter:
 *
 *   {"filter":"..","rows":N,"best_s":S,"best_cpu_s":C,"all_s":[..],
 *    "stats":{"files_planned":..,...}}
 *
 * and a last line with the process's peak RSS and the page cache's state:
 *
 *   {"max_rss_kb":K,"page_cache":{"bytes":..,"entries":..,"budget":..,...}}
 *
 * hs_scan_get_index_stats is referenced weakly so that the driver also links
 * against a library without the index API ("stats" is then null).
 * Built by bench/filter/run.sh against <build>/libhyperstream.so.
 */
#include "hyperstream/index.h"
#include "hyperstream/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#pragma weak hs_scan_get_index_stats

/* The process's cache of decompressed Parquet pages (parquet/pcache.h, not
 * public API: referenced weakly; the last output line reports it and the
 * process's peak resident memory). */
typedef struct pq_page_cache_stats {
    unsigned long long hits, misses, inserts, evictions;
    size_t bytes, entries, budget;
} pq_page_cache_stats;
void pq_page_cache_get_stats(pq_page_cache_stats *out);
#pragma weak pq_page_cache_get_stats

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

/* One scan: plan, stream, drain.  *rows gets the row count; st (may be NULL)
 * the index counters. */
static int run_scan(hs_table *t, const char *filter, long long *rows, hs_index_stats *st)
{
    hs_error err;
    memset(&err, 0, sizeof err);
    hs_scan_options opt;
    memset(&opt, 0, sizeof opt);
    opt.filter = filter[0] ? filter : NULL;
    hs_scan *s = NULL;
    if (hs_scan_plan(t, &opt, &s, &err) != HS_OK) {
        fprintf(stderr, "hs_filter_bench: plan '%s': %s\n", filter, err.msg);
        return -1;
    }
    hs_scan *handle = s;
    struct ArrowArrayStream stream;
    if (hs_scan_stream(s, &stream, &err) != HS_OK) {
        fprintf(stderr, "hs_filter_bench: stream '%s': %s\n", filter, err.msg);
        return -1;
    }
    *rows = 0;
    for (;;) {
        struct ArrowArray a;
        memset(&a, 0, sizeof a);
        if (stream.get_next(&stream, &a) != 0) {
            fprintf(stderr, "hs_filter_bench: '%s': %s\n", filter, stream.get_last_error(&stream));
            stream.release(&stream);
            return -1;
        }
        if (!a.release)
            break;
        *rows += a.length;
        a.release(&a);
    }
    if (st) {
        memset(st, 0, sizeof *st);
        if (hs_scan_get_index_stats)
            hs_scan_get_index_stats(handle, st);
    }
    stream.release(&stream);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: hs_filter_bench TABLE REPEAT FILTER_FILE\n");
        return 2;
    }
    const char *table = argv[1];
    int repeat = atoi(argv[2]);
    if (repeat < 1)
        repeat = 1;
    hs_error err;
    memset(&err, 0, sizeof err);
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    size_t tl = strlen(table);
    hs_status rc;
    if (tl > 14 && strcmp(table + tl - 14, ".metadata.json") == 0) {
        rc = hs_table_open_metadata(table, &t, &err);
    } else {
        rc = hs_catalog_open_path(NULL, &cat, &err);
        if (rc == HS_OK)
            rc = hs_table_open(cat, table, &t, &err);
    }
    if (rc != HS_OK) {
        fprintf(stderr, "hs_filter_bench: %s: %s\n", table, err.msg);
        hs_catalog_close(cat);
        return 1;
    }
    FILE *f = fopen(argv[3], "r");
    if (!f) {
        perror(argv[3]);
        return 1;
    }
    char line[8192];
    int status = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        double best = 1e300, best_cpu = 1e300;
        double all[64];
        long long rows = 0;
        hs_index_stats st = HS_INDEX_STATS_INIT;
        int n_all = 0, ok = 1;
        for (int r = 0; r < repeat; r++) {
            double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            if (run_scan(t, line, &rows, r == repeat - 1 ? &st : NULL) != 0) {
                ok = 0;
                break;
            }
            double w = clock_s(CLOCK_MONOTONIC) - w0, c = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            if (w < best)
                best = w;
            if (c < best_cpu)
                best_cpu = c;
            if (n_all < 64)
                all[n_all++] = w;
        }
        if (!ok) {
            status = 1;
            continue;
        }
        printf("{\"filter\":");
        json_string(line);
        printf(",\"rows\":%lld,\"best_s\":%.6f,\"best_cpu_s\":%.6f,\"all_s\":[", rows, best,
               best_cpu);
        for (int i = 0; i < n_all; i++)
            printf(i ? ",%.6f" : "%.6f", all[i]);
        printf("],\"stats\":");
        if (hs_scan_get_index_stats)
            printf("{\"files_planned\":%lld,\"files_pruned_by_index\":%lld,"
                   "\"files_indexed\":%lld,\"index_lookups\":%lld,\"index_files_skipped\":%lld,"
                   "\"row_groups_read\":%lld,\"row_groups_skipped\":%lld,"
                   "\"pages_decoded\":%lld,\"pages_skipped\":%lld,\"rows_decoded\":%lld,"
                   "\"rows_selected_by_index\":%lld,\"rows_emitted\":%lld}",
                   (long long)st.files_planned, (long long)st.files_pruned_by_index,
                   (long long)st.files_indexed, (long long)st.index_lookups,
                   (long long)st.index_files_skipped, (long long)st.row_groups_read,
                   (long long)st.row_groups_skipped, (long long)st.pages_decoded,
                   (long long)st.pages_skipped, (long long)st.rows_decoded,
                   (long long)st.rows_selected_by_index, (long long)st.rows_emitted);
        else
            printf("null");
        printf("}\n");
        fflush(stdout);
    }
    fclose(f);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"max_rss_kb\":%ld", ru.ru_maxrss);
    if (pq_page_cache_get_stats) {
        pq_page_cache_stats pc;
        pq_page_cache_get_stats(&pc);
        printf(",\"page_cache\":{\"bytes\":%zu,\"entries\":%zu,\"budget\":%zu,\"hits\":%llu,"
               "\"misses\":%llu,\"evictions\":%llu}", pc.bytes, pc.entries, pc.budget, pc.hits,
               pc.misses, pc.evictions);
    }
    printf("}\n");
    hs_table_close(t);
    hs_catalog_close(cat);
    return status;
}

/*
 * bench/filter/hs_take_bench.c - times row retrieval by position ("take")
 * through the public C API (hs_parquet_read_selection), one column at a time
 * and all columns, as bench/filter/take.py asks.
 *
 *   hs_take_bench FILE N_ROWS N_TAKES PASSES COLUMN...
 *
 * For each COLUMN (the name "*" means all columns) the driver takes N_TAKES
 * single rows at random positions (a fixed seed, the same rows in every
 * pass), PASSES times; every batch is pulled through the Arrow C stream and
 * released.  Pass 1 finds cold pages (nothing of them decompressed yet in
 * this process), later passes find them in the page cache (unless
 * HS_PAGE_CACHE_MB=0).  One JSON line per column:
 *
 *   {"column":"..","passes":[{"us":wall,"cpu_us":cpu}, ..],"pages_decoded":N}
 *
 * (microseconds per take; cpu time is what to compare on a loaded machine)
 */
#include "hyperstream/parquet.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int take_one(const char *path, const char *col, uint32_t row, hs_parquet_scan_stats *st)
{
    struct ArrowArrayStream s;
    hs_error err;
    memset(&err, 0, sizeof err);
    const char *cols[1] = {col};
    int all = strcmp(col, "*") == 0;
    if (hs_parquet_read_selection(path, all ? NULL : cols, all ? 0 : 1, &row, 1, 0, st, &s,
                                  &err) != HS_OK) {
        fprintf(stderr, "hs_take_bench: %s\n", err.msg);
        return -1;
    }
    long long got = 0;
    for (;;) {
        struct ArrowArray a;
        if (s.get_next(&s, &a) != 0) {
            fprintf(stderr, "hs_take_bench: %s\n", s.get_last_error(&s));
            s.release(&s);
            return -1;
        }
        if (!a.release)
            break;
        got += a.length;
        a.release(&a);
    }
    s.release(&s);
    return got == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: hs_take_bench FILE N_ROWS N_TAKES PASSES COLUMN...\n");
        return 2;
    }
    const char *path = argv[1];
    uint64_t n_rows = strtoull(argv[2], NULL, 10);
    int n_takes = atoi(argv[3]), passes = atoi(argv[4]);
    uint32_t *rows = malloc(sizeof(uint32_t) * (size_t)n_takes);
    if (!rows || n_rows == 0)
        return 2;
    for (int c = 5; c < argc; c++) {
        uint64_t x = 0x9E3779B97F4A7C15ull + (uint64_t)c;
        for (int i = 0; i < n_takes; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            rows[i] = (uint32_t)(x % n_rows);
        }
        printf("{\"column\":\"%s\",\"passes\":[", argv[c]);
        long long pages = 0;
        for (int p = 0; p < passes; p++) {
            double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
            for (int i = 0; i < n_takes; i++) {
                hs_parquet_scan_stats st = HS_PARQUET_SCAN_STATS_INIT;
                memset(&st, 0, sizeof st);
                if (take_one(path, argv[c], rows[i], &st) != 0)
                    return 1;
                pages += st.pages_decoded;
            }
            printf("%s{\"us\":%.2f,\"cpu_us\":%.2f}", p ? "," : "",
                   (now_s(CLOCK_MONOTONIC) - t0) * 1e6 / n_takes,
                   (now_s(CLOCK_PROCESS_CPUTIME_ID) - c0) * 1e6 / n_takes);
        }
        printf("],\"pages_decoded\":%lld}\n", pages);
        fflush(stdout);
    }
    free(rows);
    return 0;
}

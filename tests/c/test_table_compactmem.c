/*
 * tests/c/test_table_compactmem.c - compaction's bin-pack path streams rows
 * from its input files into the writer: its memory is bounded by the write
 * buffer and one read batch, not by the size of its input files.
 *
 *   test        table                              checks
 *   ----------  ---------------------------------  ---------------------------------
 *   bin_pack    COMPACTMEM_FILES (8) appends of    one output file; the scan's row
 *               COMPACTMEM_ROWS (2M; ASan 512K)    count, sum(id), sum(id^2),
 *               rows each (id int64, v double,     sum(v) and every s = the
 *               s string), one file each (each     generator's formulas; peak
 *               decodes to 60 MB at 2M rows),     live hs_malloc bytes of the
 *               write buffer 16 MiB                compaction <= COMPACT_BOUND
 *                                                  (48 MiB)
 *
 * Why this measure: live hs_malloc bytes are what the library holds (column
 * buffers, read windows, decoded pages, the writer's row groups); see
 * docs/tables.md "Memory of a compaction".  Before the bin-pack path
 * streamed, it held each input file's decoded batches at once and a row map
 * of 8 bytes a row (8 x 2M rows: peak 230.5 MB; now 26.0 MB, and 20.9 MB at
 * 256K rows a file).  COMPACTMEM_INDEX=kind declares that index on id and
 * only reports the peak: an indexed table's bin is rewritten in memory.
 *
 * The generator is the oracle: row i holds id = i, v = i / 2 and
 * s = "k" followed by i in 9 digits, so the expected sums are closed
 * formulas, never read back from our own output.
 */
#define _DEFAULT_SOURCE 1
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/index.h"
#include "hyperstream/table.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the generator ---- */

#define S_LEN 10   /* "k" + 9 digits */

typedef struct gen {
    int64_t next_row, end_row, batch_rows;
} gen;

static hs_field gen_schema(void)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    (void)!hs_field_add_child(&schema, &f);
    hs_field_init(&f, "v", HS_TYPE_FLOAT64, false);
    (void)!hs_field_add_child(&schema, &f);
    hs_field_init(&f, "s", HS_TYPE_STRING, false);
    (void)!hs_field_add_child(&schema, &f);
    return schema;
}

static void s_of(int64_t i, char out[24])
{
    snprintf(out, 24, "k%09lld", (long long)(i % 1000000000));
}

static hs_status gen_next(void *ctx, hs_batch **out, hs_error *err)
{
    gen *g = ctx;
    *out = NULL;
    int64_t n = g->end_row - g->next_row < g->batch_rows ? g->end_row - g->next_row
                                                          : g->batch_rows;
    if (n <= 0)
        return HS_OK;
    hs_field schema = gen_schema();
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, err);
    hs_field_clear(&schema);
    HS_TRY(st);
    if (hs_col_reserve(b->cols[0], n, (size_t)n * 8) != HS_OK ||
        hs_col_reserve(b->cols[1], n, (size_t)n * 8) != HS_OK ||
        hs_col_reserve(b->cols[2], n, (size_t)n * S_LEN) != HS_OK) {
        hs_batch_free(b);
        return hs_err_nomem(err, (size_t)n * 8);
    }
    int64_t *id = HS_COL_VALUES(b->cols[0], int64_t);
    double *v = HS_COL_VALUES(b->cols[1], double);
    int32_t *off = HS_COL_OFFSETS(b->cols[2]);
    char *s = HS_COL_VALUES(b->cols[2], char);
    off[0] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = g->next_row + i;
        id[i] = r;
        v[i] = (double)r * 0.5;
        char tmp[24];
        s_of(r, tmp);
        memcpy(s + i * S_LEN, tmp, S_LEN);
        off[i + 1] = (int32_t)((i + 1) * S_LEN);
    }
    for (int c = 0; c < 3; c++)
        b->cols[c]->length = n;
    b->cols[0]->values.len = b->cols[1]->values.len = (size_t)n * 8;
    b->cols[2]->offsets.len = (size_t)(n + 1) * 4;
    b->cols[2]->values.len = (size_t)n * S_LEN;
    b->n_rows = n;
    g->next_row += n;
    *out = b;
    return HS_OK;
}

static void gen_close(void *ctx) { (void)ctx; }

/* ---- the table ---- */

#define COMPACT_BOUND ((int64_t)48 << 20)

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#ifdef UNDER_ASAN
#define DEFAULT_ROWS ((int64_t)1 << 19)
#else
#define DEFAULT_ROWS ((int64_t)2 << 20)
#endif

static char g_dir[512];
static hs_catalog *g_cat;
static hs_table *g_tbl;
static int64_t g_files, g_per_file, g_rows;

static int64_t env_i64(const char *name, int64_t dflt)
{
    const char *v = getenv(name);
    return v && atoll(v) > 0 ? atoll(v) : dflt;
}

static hs_status make_table(hs_error *err)
{
    g_files = env_i64("COMPACTMEM_FILES", 8);
    g_per_file = env_i64("COMPACTMEM_ROWS", DEFAULT_ROWS);
    g_rows = g_files * g_per_file;
    snprintf(g_dir, sizeof g_dir, "%s/compactmem-%d", hs_test_tmpdir(), (int)getpid());
    HS_TRY(hs_catalog_open_path(g_dir, &g_cat, err));
    hs_field schema = gen_schema();
    struct ArrowSchema as;
    hs_status st = hs_arrow_export_schema(&schema, &as, err);
    hs_field_clear(&schema);
    HS_TRY(st);
    /* each append one file; the compaction's writer buffers 16 MiB */
    const char *keys[] = {"write.target-file-size-bytes", "hyperstream.write.buffer-bytes"};
    const char *vals[] = {"4000000000", "16777216"};
    hs_table_create_options o = {.arrow_schema = &as, .property_keys = keys,
                                 .property_values = vals, .n_properties = 2};
    st = hs_table_create(g_cat, "t", &o, &g_tbl, err);
    as.release(&as);
    HS_TRY(st);
    for (int64_t f = 0; f < g_files && st == HS_OK; f++) {
        gen g = {.next_row = f * g_per_file, .end_row = (f + 1) * g_per_file,
                 .batch_rows = 1 << 18};
        hs_batch_source src = {.next = gen_next, .close = gen_close, .ctx = &g};
        src.schema = gen_schema();
        struct ArrowArrayStream s;
        st = hs_arrow_export_stream(&src, &s, err);
        if (st == HS_OK)
            st = hs_table_append(g_tbl, &s, err);
    }
    /* COMPACTMEM_INDEX=kind declares that index on id: the in-memory path
     * (measured, not bounded: docs/tables.md) */
    const char *kind = getenv("COMPACTMEM_INDEX");
    if (st == HS_OK && kind && *kind) {
        hs_index_options io = HS_INDEX_OPTIONS_INIT;
        io.kind = kind;
        st = hs_table_add_index(g_tbl, "id", &io, err);
    }
    return st;
}

/* The table's rows against the generator's formulas. */
static void check_rows(void)
{
    hs_error err = {0};
    const char *cols[] = {"id", "v", "s"};
    hs_scan_options o = {.columns = cols, .n_columns = 3};
    struct ArrowArrayStream s;
    REQUIRE(hs_table_scan(g_tbl, &o, &s, &err) == HS_OK);
    hs_batch_source src = {0};
    REQUIRE(hs_arrow_import_stream(&s, &src, &err) == HS_OK);
    int64_t rows = 0, id_sum = 0, bad_s = 0, bad_v = 0;
    unsigned __int128 sq = 0;
    for (;;) {
        hs_batch *b = NULL;
        hs_status st = src.next(src.ctx, &b, &err);
        CHECK(st == HS_OK);
        if (st != HS_OK || !b)
            break;
        const int64_t *id = HS_COL_VALUES(b->cols[0], int64_t);
        const double *v = HS_COL_VALUES(b->cols[1], double);
        const int32_t *off = HS_COL_OFFSETS(b->cols[2]);
        const char *sv = HS_COL_VALUES(b->cols[2], char);
        for (int64_t i = 0; i < b->n_rows; i++) {
            id_sum += id[i];
            sq += (unsigned __int128)((uint64_t)id[i] * (uint64_t)id[i]);
            bad_v += v[i] != (double)id[i] * 0.5;
            char want[24];
            s_of(id[i], want);
            bad_s += off[i + 1] - off[i] != S_LEN || memcmp(sv + off[i], want, S_LEN) != 0;
        }
        rows += b->n_rows;
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    int64_t n = g_rows;
    unsigned __int128 want_sq = (unsigned __int128)n * (unsigned __int128)(n - 1) *
                                (unsigned __int128)(2 * n - 1) / 6;
    CHECK(rows == n);
    CHECK(id_sum == n * (n - 1) / 2);
    CHECK(sq == want_sq);   /* with the sum and count: ids are 0..n-1 (no dup/loss pairs) */
    CHECK(bad_v == 0);
    CHECK(bad_s == 0);
}

static int count_data_files(void)
{
    char data[600];
    snprintf(data, sizeof data, "%s/t/data", g_dir);
    DIR *d = opendir(data);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".parquet") != NULL;
    if (d)
        closedir(d);
    return n;
}

static void test_bin_pack(void)
{
    REQUIRE(g_tbl);
    hs_error err = {0};
    int64_t base = hs_test_alloc_live();
    hs_test_alloc_set_peak(base);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
    char *res = NULL;
    hs_status st = hs_table_compact(g_tbl, &o, &res, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t peak = hs_test_alloc_peak() - base;
    CHECK(st == HS_OK);
    if (st != HS_OK)
        fprintf(stderr, "  compact: %s\n", err.msg);
    fprintf(stderr, "  %lld files x %lld rows (each decodes to %.1f MB): peak live %.1f MB, "
            "%.2f s\n", (long long)g_files, (long long)g_per_file,
            (double)g_per_file * (16 + 4 + S_LEN) / 1048576.0, (double)peak / 1048576.0,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    char want[64];
    snprintf(want, sizeof want, "\"rewritten_data_files\":%lld,", (long long)g_files);
    CHECK(res && strstr(res, want) != NULL);
    CHECK(res && strstr(res, "\"added_data_files\":1,") != NULL);
    if (res && (!strstr(res, want) || !strstr(res, "\"added_data_files\":1,")))
        fprintf(stderr, "  result: %s\n", res);
    if (res)
        hs_free(res);
    const char *kind = getenv("COMPACTMEM_INDEX");
    if (!kind || !*kind)
        CHECK(peak <= COMPACT_BOUND);
    fprintf(stderr, "  live after: %+.1f MB\n", (double)(hs_test_alloc_live() - base) / 1048576.0);
    /* the old files stay until expiry: the new snapshot has one */
    hs_table_close(g_tbl);
    g_tbl = NULL;
    REQUIRE(hs_table_open(g_cat, "t", &g_tbl, &err) == HS_OK);
    CHECK(count_data_files() == (int)g_files + 1);   /* one output file */
    check_rows();
}

static void remove_tree(const char *p)
{
    struct stat st;
    if (lstat(p, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(p);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char q[1200];
            snprintf(q, sizeof q, "%s/%s", p, e->d_name);
            remove_tree(q);
        }
        if (d)
            closedir(d);
        rmdir(p);
    } else {
        unlink(p);
    }
}

int main(void)
{
    hs_test_count_allocs();   /* before any allocation: every block has its header */
    hs_error err = {0};
    if (make_table(&err) != HS_OK) {
        fprintf(stderr, "making the table: %s\n", err.msg);
        return 1;
    }
    HS_RUN(test_bin_pack);
    if (g_tbl)
        hs_table_close(g_tbl);
    hs_catalog_close(g_cat);
    remove_tree(g_dir);
    return hs_test_summary();
}

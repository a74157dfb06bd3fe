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
 *   indexed     8 files of ROWS/8 rows (256K;      the same, plus emb: its count
 *               ASan 64K) and emb list<float>[4]   and sum of emb[0]; both indexes
 *               on every 16th row; a range index   cover every live file; a range
 *               on id and an hnsw index on emb     filter's count and sums (index
 *                                                  used, per explain); a search's
 *                                                  10 distances = brute force over
 *                                                  the formulas; peak <= IX_BOUND
 *   v3          format 3, 8 files of ROWS/4 rows   rows with id % 10 = 3 deleted
 *               (512K; ASan 128K), rows with       (deletion vectors) before: the
 *               id % 10 = 3 deleted                rest, each _row_id = id and each
 *                                                  _last_updated_sequence_number =
 *                                                  its append's (file + 1); peak
 *                                                  <= COMPACT_BOUND
 *
 * Why this measure: live hs_malloc bytes are what the library holds (column
 * buffers, read windows, decoded pages, the writer's row groups); see
 * docs/tables.md "Memory of a compaction".  Before the bin-pack path
 * streamed, it held each input file's decoded batches at once and a row map
 * of 8 bytes a row (8 x 2M rows: peak 230.5 MB; now 26.0 MB, and 20.9 MB at
 * 256K rows a file).  Indexed and v3 tables took an in-memory path that
 * held the bin decoded, about 3 times over (indexed: peak 210.8 MB; v3:
 * 383.8 MB, with the input pages its reads with deletes left in the page
 * cache); they stream now: 58.2 MB and 30.2 MB (docs/tables.md).
 * COMPACTMEM_INDEX=kind also declares that index on id of the first table.
 *
 * The generator is the oracle: row i holds id = i, v = i / 2,
 * s = "k" followed by i in 9 digits and, where i % 16 = 0, emb = emb_of(i),
 * so the expected sums are closed formulas (or loops over them), never
 * read back from our own output.
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
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the generator ---- */

#define S_LEN 10   /* "k" + 9 digits */

#define EMB_DIM 4
#define EMB_EVERY 16   /* rows with a vector: id % EMB_EVERY == 0 */

typedef struct gen {
    int64_t next_row, end_row, batch_rows;
    bool emb;
} gen;

static hs_field gen_schema(bool emb)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    (void)!hs_field_add_child(&schema, &f);
    hs_field_init(&f, "v", HS_TYPE_FLOAT64, false);
    (void)!hs_field_add_child(&schema, &f);
    hs_field_init(&f, "s", HS_TYPE_STRING, false);
    (void)!hs_field_add_child(&schema, &f);
    if (emb) {
        hs_field elem;
        hs_field_init(&elem, "element", HS_TYPE_FLOAT32, true);
        hs_field_init_list(&f, "emb", true, &elem);
        (void)!hs_field_add_child(&schema, &f);
    }
    return schema;
}

/* Element j of row i's vector: pseudo-random in [0, 1000), multiples of
 * 1/64 (splitmix64 of the vector's number and the coordinate).  Not a lattice: coordinates linear in i
 * modulo a prime put the vectors on a few lines, where an HNSW graph built
 * by several threads missed 2 of the exact top 10 at ef 256 now and then. */
static float emb_of(int64_t i, int j)
{
    uint64_t z = (uint64_t)(i / EMB_EVERY) * EMB_DIM + (uint64_t)j + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z % 64000) / 64.0f;   /* multiples of 1/64: sums stay exact */
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
    hs_field schema = gen_schema(g->emb);
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
    for (int64_t i = 0; g->emb && st == HS_OK && i < n; i++) {
        int64_t r = g->next_row + i;
        hs_column *e = b->cols[3];
        if (r % EMB_EVERY) {
            st = hs_col_append_null(e);
            continue;
        }
        for (int j = 0; j < EMB_DIM && st == HS_OK; j++) {
            float x = emb_of(r, j);
            st = hs_col_append_fixed(e->children[0], &x);
        }
        if (st == HS_OK)
            st = hs_col_list_end(e);
    }
    if (st != HS_OK) {
        hs_batch_free(b);
        return hs_err_nomem(err, 64);
    }
    g->next_row += n;
    *out = b;
    return HS_OK;
}

static void gen_close(void *ctx) { (void)ctx; }

/* ---- the table ---- */

#define COMPACT_BOUND ((int64_t)48 << 20)
/* the indexed table's: the write buffer, plus the index builders of the one
 * output file (range: 12 bytes a row; hnsw: its vectors and graph) */
#define IX_BOUND ((int64_t)64 << 20)

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

/* Table `name` of `files` appends of `per_file` rows each (one file each;
 * the compaction's writer buffers 16 MiB), format 2 or 3, with emb. */
static hs_status make_table(const char *name, int format, bool emb, int64_t files,
                            int64_t per_file, hs_table **out, hs_error *err)
{
    *out = NULL;
    hs_field schema = gen_schema(emb);
    struct ArrowSchema as;
    hs_status st = hs_arrow_export_schema(&schema, &as, err);
    hs_field_clear(&schema);
    HS_TRY(st);
    const char *keys[] = {"write.target-file-size-bytes", "hyperstream.write.buffer-bytes"};
    const char *vals[] = {"4000000000", "16777216"};
    hs_table_create_options o = {.arrow_schema = &as, .property_keys = keys,
                                 .property_values = vals, .n_properties = 2,
                                 .format_version = format};
    hs_table *t = NULL;
    st = hs_table_create(g_cat, name, &o, &t, err);
    as.release(&as);
    HS_TRY(st);
    for (int64_t f = 0; f < files && st == HS_OK; f++) {
        gen g = {.next_row = f * per_file, .end_row = (f + 1) * per_file,
                 .batch_rows = 1 << 18, .emb = emb};
        hs_batch_source src = {.next = gen_next, .close = gen_close, .ctx = &g};
        src.schema = gen_schema(emb);
        struct ArrowArrayStream s;
        st = hs_arrow_export_stream(&src, &s, err);
        if (st == HS_OK)
            st = hs_table_append(t, &s, err);
    }
    if (st != HS_OK) {
        hs_table_close(t);
        return st;
    }
    *out = t;
    return HS_OK;
}

/* What a scan of id, v, s (and emb) must sum to, from the formulas. */
typedef struct sums {
    int64_t rows, id_sum, emb_rows;
    unsigned __int128 sq;
    double emb0_sum;
} sums;

/* The rows of t (filter may be NULL) against the generator's formulas:
 * ids summed, v and s checked row by row, emb counted and summed. */
static void scan_sums(hs_table *t, const char *filter, bool emb, sums *got)
{
    memset(got, 0, sizeof *got);
    hs_error err = {0};
    const char *cols[] = {"id", "v", "s", "emb"};
    hs_scan_options o = {.columns = cols, .n_columns = emb ? 4 : 3, .filter = filter};
    struct ArrowArrayStream s;
    REQUIRE(hs_table_scan(t, &o, &s, &err) == HS_OK);
    hs_batch_source src = {0};
    REQUIRE(hs_arrow_import_stream(&s, &src, &err) == HS_OK);
    int64_t bad_s = 0, bad_v = 0, bad_emb = 0;
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
            got->id_sum += id[i];
            got->sq += (unsigned __int128)((uint64_t)id[i] * (uint64_t)id[i]);
            bad_v += v[i] != (double)id[i] * 0.5;
            char want[24];
            s_of(id[i], want);
            bad_s += off[i + 1] - off[i] != S_LEN || memcmp(sv + off[i], want, S_LEN) != 0;
        }
        if (emb) {
            const hs_column *e = b->cols[3];
            const int32_t *eo = HS_COL_OFFSETS(e);
            const float *ev = HS_COL_VALUES(e->children[0], float);
            for (int64_t i = 0; i < b->n_rows; i++) {
                bool has = hs_col_is_valid(e, i);
                if (has != (id[i] % EMB_EVERY == 0) ||
                    (has && eo[i + 1] - eo[i] != EMB_DIM)) {
                    bad_emb++;
                    continue;
                }
                if (!has)
                    continue;
                got->emb_rows++;
                got->emb0_sum += ev[eo[i]];
                for (int j = 0; j < EMB_DIM; j++)
                    bad_emb += ev[eo[i] + j] != emb_of(id[i], j);
            }
        }
        got->rows += b->n_rows;
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    CHECK(bad_v == 0);
    CHECK(bad_s == 0);
    CHECK(bad_emb == 0);
}

/* The sums of ids [lo, hi) by formula (emb: every EMB_EVERY-th). */
static void want_range(int64_t lo, int64_t hi, sums *w)
{
    memset(w, 0, sizeof *w);
    unsigned __int128 a = (unsigned __int128)lo, b = (unsigned __int128)hi;
    w->rows = hi - lo;
    w->id_sum = (hi * (hi - 1) - lo * (lo - 1)) / 2;
    w->sq = (b * (b - 1) * (2 * b - 1) - (a ? a * (a - 1) * (2 * a - 1) : 0)) / 6;
    for (int64_t i = (lo + EMB_EVERY - 1) / EMB_EVERY * EMB_EVERY; i < hi; i += EMB_EVERY) {
        w->emb_rows++;
        w->emb0_sum += emb_of(i, 0);
    }
}

static bool sums_equal(const sums *a, const sums *b, bool emb)
{
    return a->rows == b->rows && a->id_sum == b->id_sum && a->sq == b->sq &&
           (!emb || (a->emb_rows == b->emb_rows && a->emb0_sum == b->emb0_sum));
}

static int count_data_files(const char *name)
{
    char data[600];
    snprintf(data, sizeof data, "%s/%s/data", g_dir, name);
    DIR *d = opendir(data);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".parquet") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* Compacts t, measuring the peak of live library allocations; checks
 * that `files` files were rewritten into one. */
static int64_t compact_measured(hs_table *t, const char *what, int64_t files, int64_t per_file,
                                int row_bytes)
{
    hs_error err = {0};
    int64_t base = hs_test_alloc_live();
    hs_test_alloc_set_peak(base);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
    char *res = NULL;
    hs_status st = hs_table_compact(t, &o, &res, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t peak = hs_test_alloc_peak() - base;
    CHECK(st == HS_OK);
    if (st != HS_OK)
        fprintf(stderr, "  compact: %s\n", err.msg);
    fprintf(stderr, "  %s: %lld files x %lld rows (each decodes to %.1f MB): peak live %.1f MB, "
            "%.2f s\n", what, (long long)files, (long long)per_file,
            (double)per_file * row_bytes / 1048576.0, (double)peak / 1048576.0,
            (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    char want[64];
    snprintf(want, sizeof want, "\"rewritten_data_files\":%lld,", (long long)files);
    bool ok = res && strstr(res, want) && strstr(res, "\"added_data_files\":1,");
    CHECK(ok);
    if (res && !ok)
        fprintf(stderr, "  result: %s\n", res);
    if (res)
        hs_free(res);
    fprintf(stderr, "  live after: %+.1f MB\n", (double)(hs_test_alloc_live() - base) / 1048576.0);
    return peak;
}

static void test_bin_pack(void)
{
    hs_error err = {0};
    g_files = env_i64("COMPACTMEM_FILES", 8);
    g_per_file = env_i64("COMPACTMEM_ROWS", DEFAULT_ROWS);
    g_rows = g_files * g_per_file;
    REQUIRE(make_table("t", 0, false, g_files, g_per_file, &g_tbl, &err) == HS_OK);
    /* COMPACTMEM_INDEX=kind declares that index on id */
    const char *kind = getenv("COMPACTMEM_INDEX");
    if (kind && *kind) {
        hs_index_options io = HS_INDEX_OPTIONS_INIT;
        io.kind = kind;
        REQUIRE(hs_table_add_index(g_tbl, "id", &io, &err) == HS_OK);
    }
    int64_t peak = compact_measured(g_tbl, "plain", g_files, g_per_file, 16 + 4 + S_LEN);
    CHECK(peak <= COMPACT_BOUND);
    /* the old files stay until expiry: the new snapshot has one */
    hs_table_close(g_tbl);
    g_tbl = NULL;
    REQUIRE(hs_table_open(g_cat, "t", &g_tbl, &err) == HS_OK);
    CHECK(count_data_files("t") == (int)g_files + 1);   /* one output file */
    sums got, want;
    scan_sums(g_tbl, NULL, false, &got);
    want_range(0, g_rows, &want);
    CHECK(sums_equal(&got, &want, false));
    hs_table_close(g_tbl);
    g_tbl = NULL;
}

/* files_indexed == files_live of the index on col (list_indexes). */
static bool index_covers(hs_table *t, const char *col)
{
    char *s = NULL;
    hs_error err = {0};
    if (hs_table_list_indexes(t, &s, &err) != HS_OK)
        return false;
    json_t *j = json_loads(s, 0, NULL);
    hs_string_free(s);
    bool ok = false;
    size_t i;
    json_t *o;
    json_array_foreach(j, i, o) {
        if (strcmp(json_string_value(json_object_get(o, "column")), col) == 0)
            ok = json_integer_value(json_object_get(o, "files_live")) == 1 &&
                 json_integer_value(json_object_get(o, "files_indexed")) == 1;
    }
    json_decref(j);
    return ok;
}

static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void test_indexed(void)
{
    hs_error err = {0};
    int64_t files = 8, per = env_i64("COMPACTMEM_IX_ROWS", DEFAULT_ROWS / 8);
    int64_t n = files * per;
    hs_table *t = NULL;
    REQUIRE(make_table("tix", 0, true, files, per, &t, &err) == HS_OK);
    hs_index_options io = HS_INDEX_OPTIONS_INIT;
    io.kind = "range";
    REQUIRE(hs_table_add_index(t, "id", &io, &err) == HS_OK);
    io.kind = "hnsw";
    REQUIRE(hs_table_add_index(t, "emb", &io, &err) == HS_OK);
    int64_t peak = compact_measured(t, "range + hnsw", files, per,
                                    16 + 4 + S_LEN + 4 + 16 / EMB_EVERY * 4);
    CHECK(peak <= IX_BOUND);
    hs_table_close(t);
    REQUIRE(hs_table_open(g_cat, "tix", &t, &err) == HS_OK);
    CHECK(count_data_files("tix") == (int)files + 1);
    CHECK(index_covers(t, "id"));
    CHECK(index_covers(t, "emb"));
    sums got, want;
    scan_sums(t, NULL, true, &got);
    want_range(0, n, &want);
    CHECK(sums_equal(&got, &want, true));
    /* a range filter through the new file's range index */
    int64_t lo = n / 3 + 5, hi = n / 3 + n / 5;
    char filter[128];
    snprintf(filter, sizeof filter, "id >= %lld and id < %lld", (long long)lo, (long long)hi);
    scan_sums(t, filter, true, &got);
    want_range(lo, hi, &want);
    CHECK(sums_equal(&got, &want, true));
    char *ex = NULL;
    hs_scan_options so = {.filter = filter};
    REQUIRE(hs_table_explain(t, &so, &ex, &err) == HS_OK);
    CHECK(strstr(ex, "\"files_indexed\":1") != NULL);
    if (!strstr(ex, "\"files_indexed\":1"))
        fprintf(stderr, "  explain: %.400s\n", ex);
    hs_string_free(ex);
    /* top 10 by the hnsw index = brute force over the formulas */
    float q[EMB_DIM] = {500.5f, 250.25f, 700.0f, 33.0f};
    hs_search_options vo = HS_SEARCH_OPTIONS_INIT;
    vo.column = "emb";
    vo.query = q;
    vo.dim = EMB_DIM;
    vo.k = 10;
    vo.ef_search = 256;
    const char *cols[] = {"id"};
    hs_scan_options sc = {.columns = cols, .n_columns = 1};
    struct ArrowArrayStream s;
    REQUIRE(hs_table_search(t, &sc, &vo, &s, &err) == HS_OK);
    hs_batch_source src = {0};
    REQUIRE(hs_arrow_import_stream(&s, &src, &err) == HS_OK);
    double d_got[10];
    int n_got = 0, bad_d = 0;
    for (;;) {
        hs_batch *b = NULL;
        if (src.next(src.ctx, &b, &err) != HS_OK || !b)
            break;
        const int64_t *id = HS_COL_VALUES(b->cols[0], int64_t);
        const double *d = HS_COL_VALUES(b->cols[b->n_cols - 1], double);
        for (int64_t i = 0; i < b->n_rows && n_got < 10; i++) {
            double e = 0;   /* the row's distance, from the formulas */
            for (int j = 0; j < EMB_DIM; j++)
                e += ((double)emb_of(id[i], j) - q[j]) * ((double)emb_of(id[i], j) - q[j]);
            bad_d += id[i] % EMB_EVERY != 0 || fabs(sqrt(e) - d[i]) > 1e-3;
            d_got[n_got++] = d[i];
        }
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    double best[10];
    int n_best = 0;
    for (int64_t i = 0; i < n; i += EMB_EVERY) {
        double e = 0;
        for (int j = 0; j < EMB_DIM; j++)
            e += ((double)emb_of(i, j) - q[j]) * ((double)emb_of(i, j) - q[j]);
        e = sqrt(e);
        if (n_best < 10)
            best[n_best++] = e;
        else if (e < best[9])
            best[9] = e;
        qsort(best, (size_t)n_best, sizeof *best, cmp_f64);
    }
    CHECK(n_got == 10 && bad_d == 0);
    int diff = 0;
    for (int i = 0; i < n_got && i < n_best; i++)
        diff += fabs(d_got[i] - best[i]) > 1e-3;
    if (diff)
        for (int i = 0; i < n_got && i < n_best; i++)
            fprintf(stderr, "  top %d: got %.4f, brute force %.4f\n", i, d_got[i], best[i]);
    CHECK(diff == 0);
    hs_table_close(t);
}

static void test_v3(void)
{
    hs_error err = {0};
    int64_t files = 8, per = env_i64("COMPACTMEM_V3_ROWS", DEFAULT_ROWS / 4);
    int64_t n = files * per;
    hs_table *t = NULL;
    REQUIRE(make_table("tv3", 3, false, files, per, &t, &err) == HS_OK);
    CHECK(hs_table_format_version(t) == 3);
    int64_t deleted = 0;
    REQUIRE(hs_table_delete(t, "id % 10 = 3", &deleted, &err) == HS_OK);
    CHECK(deleted == n / 10 + (n % 10 > 3));
    int64_t peak = compact_measured(t, "v3", files, per, 16 + 4 + S_LEN + 16);
    CHECK(peak <= COMPACT_BOUND);
    hs_table_close(t);
    REQUIRE(hs_table_open(g_cat, "tv3", &t, &err) == HS_OK);
    /* the rows left, each with its lineage: _row_id = id (appended in
     * order from row 0), _last_updated_sequence_number = its append's */
    const char *cols[] = {"id", "_row_id", "_last_updated_sequence_number"};
    hs_scan_options o = {.columns = cols, .n_columns = 3};
    struct ArrowArrayStream s;
    REQUIRE(hs_table_scan(t, &o, &s, &err) == HS_OK);
    hs_batch_source src = {0};
    REQUIRE(hs_arrow_import_stream(&s, &src, &err) == HS_OK);
    int64_t rows = 0, id_sum = 0, bad = 0;
    for (;;) {
        hs_batch *b = NULL;
        if (src.next(src.ctx, &b, &err) != HS_OK || !b)
            break;
        const int64_t *id = HS_COL_VALUES(b->cols[0], int64_t);
        const int64_t *rid = HS_COL_VALUES(b->cols[1], int64_t);
        const int64_t *seq = HS_COL_VALUES(b->cols[2], int64_t);
        for (int64_t i = 0; i < b->n_rows; i++) {
            id_sum += id[i];
            bool wrong = id[i] % 10 == 3 || rid[i] != id[i] || seq[i] != id[i] / per + 1 ||
                         !hs_col_is_valid(b->cols[1], i) || !hs_col_is_valid(b->cols[2], i);
            if (wrong && bad++ < 3)
                fprintf(stderr, "  id %lld: _row_id %lld, _last_updated_sequence_number %lld\n",
                        (long long)id[i], (long long)rid[i], (long long)seq[i]);
        }
        rows += b->n_rows;
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    int64_t want_sum = n * (n - 1) / 2, want_rows = n;
    for (int64_t i = 3; i < n; i += 10) {
        want_sum -= i;
        want_rows--;
    }
    CHECK(rows == want_rows);
    CHECK(id_sum == want_sum);
    CHECK(bad == 0);
    hs_table_close(t);
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
    snprintf(g_dir, sizeof g_dir, "%s/compactmem-%d", hs_test_tmpdir(), (int)getpid());
    if (hs_catalog_open_path(g_dir, &g_cat, &err) != HS_OK) {
        fprintf(stderr, "opening the catalog: %s\n", err.msg);
        return 1;
    }
    /* COMPACTMEM_ONLY=bin_pack|indexed|v3 runs one */
    const char *only = getenv("COMPACTMEM_ONLY");
    if (!only || strcmp(only, "bin_pack") == 0)
        HS_RUN(test_bin_pack);
    if (!only || strcmp(only, "indexed") == 0)
        HS_RUN(test_indexed);
    if (!only || strcmp(only, "v3") == 0)
        HS_RUN(test_v3);
    if (g_tbl)
        hs_table_close(g_tbl);
    hs_catalog_close(g_cat);
    remove_tree(g_dir);
    return hs_test_summary();
}

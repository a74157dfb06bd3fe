/*
 * tests/c/test_table_stream.c - hs_table_append streams its input: memory
 * stays bounded whatever the input size, files roll at the target size, and
 * partitioned / sorted tables and failures in the middle of the stream
 * behave as for a small append.
 *
 *   test                     input                          checks
 *   -----------------------  -----------------------------  ---------------------------------
 *   bounded_memory           200 MB of generated batches    peak live hs_malloc bytes during
 *                            (ASan: 25 MB, 8 MiB buffer,     the append <= 100 MB (ASan: 16;
 *                            HS_LONG_TESTS=1: 20 GB, in a    long form:
 *                            child under RLIMIT_AS 2 GB)     2 GB); rows, sum(id), sum(2v),
 *                                                            null count read back equal the
 *                                                            generator's formulas; every file
 *                                                            but the last >= the target size
 *   partitioned_sorted       12 MB, spec identity(cat),     each file holds one cat and ids
 *                            order id DESC, 1 MiB buffer    strictly descending (one sorted
 *                                                            run), all rows present once
 *   stream_error             generator fails at batch k     error returned, no snapshot, no
 *                                                            data file, no new metadata file
 *   io_fault_loop            6 MB, cat_set_io_fault(k)      the same for an I/O error at step k
 *                            (k = 1..24, then x1.4)          of a many-file append
 *   oom_sampled              3 MB, the nth allocation       the same for out of memory
 *                            fails (1..16, then x1.5)
 *
 * The whole binary runs under a counting allocation hook installed before
 * the first allocation (so every block carries its size).  The generator is
 * the oracle: the expected counts and sums are closed formulas of the row
 * number, never read back from our own output.  Interop of what the
 * streaming writer produces (pyarrow, pyiceberg, bounds) is checked in
 * tests/python/test_table_stream.py.
 */
#define _DEFAULT_SOURCE 1
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/table.h"

#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- the generator ----
 * row i: id = i, name = "name-<i>", v = i * 0.5 (null when i % 10 == 3),
 * cat = "c<i % 3>" */

typedef struct gen {
    int64_t next_row;
    int64_t batch_rows;
    int64_t bytes_limit;    /* stop after this many bytes of column data */
    int64_t bytes_made;
    int fail_at;            /* batch number (1-based) that fails; 0 = never */
    int batches;
} gen;

static hs_field gen_schema(void)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    (void)!hs_field_add_child(&schema, &f);
    hs_field_init(&f, "name", HS_TYPE_STRING, true);
    (void)!hs_field_add_child(&schema, &f);
    hs_field_init(&f, "v", HS_TYPE_FLOAT64, true);
    (void)!hs_field_add_child(&schema, &f);
    hs_field_init(&f, "cat", HS_TYPE_STRING, true);
    (void)!hs_field_add_child(&schema, &f);
    return schema;
}

static int64_t col_len_bytes(const hs_column *c)
{
    return (int64_t)(c->validity.len + c->offsets.len + c->values.len);
}

static hs_status gen_next(void *ctx, hs_batch **out, hs_error *err)
{
    gen *g = ctx;
    *out = NULL;
    if (g->bytes_made >= g->bytes_limit)
        return HS_OK;
    if (g->fail_at && ++g->batches == g->fail_at)
        return hs_err_set(err, HS_IO, "generator: batch %d failed", g->fail_at);
    hs_field schema = gen_schema();
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, g->batch_rows, &b, err);
    hs_field_clear(&schema);
    HS_TRY(st);
    char buf[40];
    for (int64_t k = 0; k < g->batch_rows && st == HS_OK; k++) {
        int64_t i = g->next_row++;
        double v = (double)i * 0.5;
        int len = snprintf(buf, sizeof buf, "name-%lld", (long long)i);
        if (hs_col_append_fixed(b->cols[0], &i) != HS_OK ||
            hs_col_append_bytes(b->cols[1], buf, (size_t)len) != HS_OK ||
            (i % 10 == 3 ? hs_col_append_null(b->cols[2])
                         : hs_col_append_fixed(b->cols[2], &v)) != HS_OK ||
            hs_col_append_bytes(b->cols[3], i % 3 == 0 ? "c0" : i % 3 == 1 ? "c1" : "c2", 2) !=
                HS_OK)
            st = hs_err_nomem(err, 64);
        b->n_rows++;
    }
    if (st != HS_OK) {
        hs_batch_free(b);
        return st;
    }
    for (int c = 0; c < b->n_cols; c++)
        g->bytes_made += col_len_bytes(b->cols[c]);
    *out = b;
    return HS_OK;
}

static void gen_close(void *ctx) { (void)ctx; }

static int gen_stream(gen *g, struct ArrowArrayStream *out)
{
    hs_batch_source src = {.next = gen_next, .close = gen_close, .ctx = g};
    src.schema = gen_schema();
    return hs_arrow_export_stream(&src, out, NULL) == HS_OK ? 0 : -1;
}

/* ---- tables and checks ---- */

static const char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/stream-%s-%d", hs_test_tmpdir(), name, (int)getpid());
    return buf[k];
}

static hs_table *create_table(hs_catalog *cat, const char *name, const char *spec,
                              const char *sort, const char *const *keys,
                              const char *const *vals, int n, hs_error *err)
{
    hs_field schema = gen_schema();
    struct ArrowSchema as;
    hs_status st = hs_arrow_export_schema(&schema, &as, err);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    hs_table_create_options o = {.arrow_schema = &as, .partition_spec = spec, .sort_order = sort,
                                 .property_keys = keys, .property_values = vals,
                                 .n_properties = n};
    hs_table *t = NULL;
    st = hs_table_create(cat, name, &o, &t, err);
    as.release(&as);
    return st == HS_OK ? t : NULL;
}

typedef struct sums {
    int64_t rows, id_sum, v2_sum, v_nulls;
} sums;

/* What rows [0, n) of the generator hold. */
static sums expected(int64_t n)
{
    sums s = {n, 0, 0, 0};
    s.id_sum = n * (n - 1) / 2;
    int64_t nulls = n / 10 + (n % 10 > 3 ? 1 : 0);   /* i % 10 == 3 */
    /* sum of i over i % 10 == 3, i < n: 3, 13, ... */
    int64_t null_sum = nulls * 3 + 10 * (nulls * (nulls - 1) / 2);
    s.v_nulls = nulls;
    s.v2_sum = s.id_sum - null_sum;   /* 2 * v = i where not null */
    return s;
}

static hs_status scan_sums(hs_table *t, sums *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    const char *cols[] = {"id", "v"};
    hs_scan_options o = {.columns = cols, .n_columns = 2};
    struct ArrowArrayStream s;
    HS_TRY(hs_table_scan(t, &o, &s, err));
    hs_batch_source src = {0};
    HS_TRY(hs_arrow_import_stream(&s, &src, err));
    hs_status st = HS_OK;
    for (;;) {
        hs_batch *b = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        const int64_t *id = HS_COL_VALUES(b->cols[0], int64_t);
        const double *v = HS_COL_VALUES(b->cols[1], double);
        for (int64_t i = 0; i < b->n_rows; i++) {
            out->id_sum += id[i];
            if (!hs_col_is_valid(b->cols[1], i))
                out->v_nulls++;
            else
                out->v2_sum += (int64_t)(v[i] * 2);
        }
        out->rows += b->n_rows;
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    return st;
}

/* file_size_in_bytes of every planned file, in plan order. */
static int file_sizes(hs_table *t, int64_t *sizes, int max, hs_error *err)
{
    hs_scan *sc = NULL;
    char *js = NULL;
    if (hs_scan_plan(t, NULL, &sc, err) != HS_OK || hs_scan_files_json(sc, &js, err) != HS_OK) {
        hs_scan_free(sc);
        return -1;
    }
    hs_scan_free(sc);
    json_t *arr = json_loads(js, 0, NULL);
    hs_string_free(js);
    int n = 0;
    size_t i;
    json_t *f;
    json_array_foreach(arr, i, f) {
        if (n < max)
            sizes[n] = json_integer_value(json_object_get(f, "file_size_in_bytes"));
        n++;
    }
    json_decref(arr);
    return n;
}

static int64_t count_files_in(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int64_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
            n += count_files_in(p);
        else
            n++;
    }
    closedir(d);
    return n;
}

/* ---- tests ---- */

static bool long_form(void)
{
    const char *v = getenv("HS_LONG_TESTS");
    return v && strcmp(v, "1") == 0;
}

/* One bounded-memory append of input_bytes with buffer budget `buffer`
 * (0 = the default); the long form runs it in a child, which reports
 * through its exit status. */
static void bounded_append(int64_t input_bytes, int64_t cap_bytes, int64_t buffer)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("mem"), &cat, &err), &err);
    const char *keys[] = {"write.target-file-size-bytes", "hyperstream.write.buffer-bytes"};
    char target[32], buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)buffer);
    int64_t target_bytes = input_bytes / 64;   /* several files, whatever the compression */
    if (target_bytes > ((int64_t)512 << 20))
        target_bytes = (int64_t)512 << 20;
    snprintf(target, sizeof target, "%lld", (long long)target_bytes);
    const char *vals[] = {target, buf};
    hs_table *t = create_table(cat, "t", NULL, NULL, keys, vals, buffer ? 2 : 1, &err);
    REQUIRE(t);
    gen g = {.batch_rows = 65536, .bytes_limit = input_bytes};
    struct ArrowArrayStream s;
    REQUIRE(gen_stream(&g, &s) == 0);
    int64_t base = hs_test_alloc_live();
    hs_test_alloc_set_peak(base);
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    hs_status st = hs_table_append(t, &s, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int64_t peak = hs_test_alloc_peak() - base;
    struct rusage ru = {0};
    getrusage(RUSAGE_SELF, &ru);   /* peak RSS of the append (before reading back) */
    if (long_form()) {
        /* the address-space limit is the append's; reading back maps whole
         * data files, so lift it (to the hard limit, kept as it was) */
        struct rlimit rl;
        if (getrlimit(RLIMIT_AS, &rl) == 0) {
            rl.rlim_cur = rl.rlim_max;
            (void)setrlimit(RLIMIT_AS, &rl);
        }
    }
    CHECK_OK(st, &err);
    double append_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    fprintf(stderr, "  append of %lld MB (%lld rows) in %.1f s: peak live allocations %.1f MB "
            "(cap %lld MB), peak RSS %ld MB\n", (long long)(g.bytes_made >> 20),
            (long long)g.next_row, append_s, (double)peak / 1048576.0,
            (long long)(cap_bytes >> 20), (long)(ru.ru_maxrss >> 10));
    CHECK(g.bytes_made >= input_bytes);
    CHECK(peak <= cap_bytes);
    sums got, want = expected(g.next_row);
    CHECK_OK(scan_sums(t, &got, &err), &err);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    fprintf(stderr, "  read back in %.1f s\n",
            (double)(t2.tv_sec - t1.tv_sec) + (double)(t2.tv_nsec - t1.tv_nsec) / 1e9);
    CHECK(got.rows == want.rows);
    CHECK(got.id_sum == want.id_sum);
    CHECK(got.v2_sum == want.v2_sum);
    CHECK(got.v_nulls == want.v_nulls);
    CHECK(hs_snapshot_count(t) == 1);
    int64_t sizes[4096];
    int n = file_sizes(t, sizes, 4096, &err);
    CHECK(n >= 2);
    int small = 0;
    for (int i = 0; i < n && i < 4096; i++)
        small += sizes[i] < target_bytes;
    CHECK(small <= 1);   /* only the last file may be below the target */
    fprintf(stderr, "  %d data files, target %lld bytes\n", n, (long long)target_bytes);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_bounded_memory(void)
{
    if (!long_form()) {
#if defined(__SANITIZE_ADDRESS__)
        /* the same shape at an eighth of the size: 200 MB take ~3 min
         * under ASan on the 2-core CI machine */
        bounded_append((int64_t)25 << 20, (int64_t)16 << 20, (int64_t)8 << 20);
#else
        bounded_append((int64_t)200 << 20, (int64_t)100 << 20, 0);
#endif
        return;
    }
    /* 20 GB (HS_LONG_APPEND_GB) under a 2 GB address-space limit, in a child
     * (the limit must not outlive the test); live allocations are also
     * capped at 2 GB */
    const char *gb_env = getenv("HS_LONG_APPEND_GB");
    int64_t gb = gb_env && atoi(gb_env) > 0 ? atoi(gb_env) : 20;
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_AS, &rl) != 0)
            _exit(2);
        rl.rlim_cur = (rlim_t)2 << 30;   /* soft limit: the append runs under it */
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(2);
        int before = hs_test_failures;
        bounded_append(gb << 30, (int64_t)2 << 30, 0);
        _exit(hs_test_failures == before ? 0 : 1);
    }
    int status = 0;
    REQUIRE(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_partitioned_sorted(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(tmp_path("part"), &cat, &err), &err);
    const char *keys[] = {"hyperstream.write.buffer-bytes", "write.target-file-size-bytes"};
    const char *vals[] = {"1048576", "200000"};
    hs_table *t = create_table(cat, "t", "cat", "id DESC", keys, vals, 2, &err);
    REQUIRE(t);
    gen g = {.batch_rows = 8192, .bytes_limit = (int64_t)12 << 20};
    struct ArrowArrayStream s;
    REQUIRE(gen_stream(&g, &s) == 0);
    CHECK_OK(hs_table_append(t, &s, &err), &err);
    CHECK(hs_snapshot_count(t) == 1);
    /* per file: one category, ids strictly descending */
    const char *cols[] = {"_file", "id", "cat"};
    hs_scan_options o = {.columns = cols, .n_columns = 3};
    struct ArrowArrayStream rs;
    CHECK_OK(hs_table_scan(t, &o, &rs, &err), &err);
    hs_batch_source src = {0};
    CHECK_OK(hs_arrow_import_stream(&rs, &src, &err), &err);
    char cur_file[1024] = "", cur_cat[8] = "";
    int64_t prev = INT64_MAX, rows = 0, id_sum = 0, files = 0, bad_order = 0, bad_cat = 0;
    for (;;) {
        hs_batch *b = NULL;
        if (src.next(src.ctx, &b, &err) != HS_OK || !b)
            break;
        const int32_t *fo = HS_COL_OFFSETS(b->cols[0]), *co = HS_COL_OFFSETS(b->cols[2]);
        const char *fv = (const char *)b->cols[0]->values.data;
        const char *cv = (const char *)b->cols[2]->values.data;
        const int64_t *id = HS_COL_VALUES(b->cols[1], int64_t);
        for (int64_t i = 0; i < b->n_rows; i++) {
            int fl = fo[i + 1] - fo[i], cl = co[i + 1] - co[i];
            if ((int)strlen(cur_file) != fl || memcmp(cur_file, fv + fo[i], (size_t)fl) != 0) {
                snprintf(cur_file, sizeof cur_file, "%.*s", fl, fv + fo[i]);
                snprintf(cur_cat, sizeof cur_cat, "%.*s", cl, cv + co[i]);
                prev = INT64_MAX;
                files++;
            }
            bad_cat += (int)strlen(cur_cat) != cl || memcmp(cur_cat, cv + co[i], (size_t)cl) != 0;
            bad_order += id[i] >= prev;
            prev = id[i];
            /* the file's partition directory names its category */
            char want[16];
            snprintf(want, sizeof want, "/cat=%s/", cur_cat);
            bad_cat += strstr(cur_file, want) == NULL;
            id_sum += id[i];
            rows++;
        }
        hs_batch_free(b);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    sums want = expected(g.next_row);
    CHECK(rows == want.rows && id_sum == want.id_sum);
    CHECK(bad_order == 0);
    CHECK(bad_cat == 0);
    CHECK(files > 6);   /* several sorted runs per partition: the input did not fit one chunk */
    fprintf(stderr, "  partitioned + sorted: %lld rows in %lld files\n", (long long)rows,
            (long long)files);
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_stream_error(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    const char *wh = tmp_path("err");
    CHECK_OK(hs_catalog_open_path(wh, &cat, &err), &err);
    const char *keys[] = {"hyperstream.write.buffer-bytes", "write.target-file-size-bytes"};
    const char *vals[] = {"1048576", "100000"};
    for (int part = 0; part < 2; part++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", part);
        hs_table *t = create_table(cat, name, part ? "cat" : NULL, part ? "id" : NULL, keys, vals,
                                   2, &err);
        REQUIRE(t);
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", wh, name);
        char mdir[1100], ddir[1100];
        snprintf(mdir, sizeof mdir, "%s/metadata", dir);
        snprintf(ddir, sizeof ddir, "%s/data", dir);
        int64_t meta_before = count_files_in(mdir);
        static const int FAIL_AT[] = {1, 2, 9, 30};
        for (int k = 0; k < 4; k++) {
            gen g = {.batch_rows = 8192, .bytes_limit = (int64_t)64 << 20, .fail_at = FAIL_AT[k]};
            struct ArrowArrayStream s;
            REQUIRE(gen_stream(&g, &s) == 0);
            hs_err_clear(&err);
            hs_status st = hs_table_append(t, &s, &err);
            CHECK(st != HS_OK);
            CHECK(strstr(err.msg, "generator") != NULL);
            CHECK(hs_snapshot_count(t) == 0);
            CHECK(count_files_in(ddir) == 0);
            CHECK(count_files_in(mdir) == meta_before);
        }
        hs_table *again = NULL;
        CHECK_OK(hs_table_open(cat, name, &again, &err), &err);
        CHECK(hs_table_current_snapshot_id(again) == -1);
        hs_table_close(again);
        hs_table_close(t);
    }
    hs_catalog_close(cat);
}

/* An I/O failure at a step of a multi-chunk, multi-file append (cat_set_io_fault
 * counts every file create, write and close): the append fails, nothing is
 * committed and no file of it is left; without a fault it commits.  Steps
 * 1..24, then every ~1.4x until the append gets through. */
static void test_io_fault_loop(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    const char *wh = tmp_path("iofault");
    CHECK_OK(hs_catalog_open_path(wh, &cat, &err), &err);
    const char *keys[] = {"hyperstream.write.buffer-bytes", "write.target-file-size-bytes"};
    const char *vals[] = {"1048576", "150000"};
    hs_table *t = create_table(cat, "t", NULL, NULL, keys, vals, 2, &err);
    REQUIRE(t);
    char mdir[1100], ddir[1100];
    snprintf(mdir, sizeof mdir, "%s/t/metadata", wh);
    snprintf(ddir, sizeof ddir, "%s/t/data", wh);
    int64_t meta_before = count_files_in(mdir);
    int failed = 0, k = 1;
    for (;;) {
        gen g = {.batch_rows = 8192, .bytes_limit = (int64_t)6 << 20};
        struct ArrowArrayStream s;
        REQUIRE(gen_stream(&g, &s) == 0);
        hs_err_clear(&err);
        cat_set_io_fault(k);
        hs_status st = hs_table_append(t, &s, &err);
        int64_t reached = cat_io_fault_count();
        cat_set_io_fault(0);
        if (st == HS_OK) {
            CHECK(reached < k);
            break;
        }
        failed++;
        CHECK(st == HS_IO && strstr(err.msg, "injected fault") != NULL);
        CHECK(hs_snapshot_count(t) == 0);
        CHECK(count_files_in(ddir) == 0);
        CHECK(count_files_in(mdir) == meta_before);
        if (k > 100000)
            break;
        k = k < 24 ? k + 1 : k * 7 / 5;
    }
    CHECK(failed >= 24);
    sums got;
    CHECK_OK(scan_sums(t, &got, &err), &err);
    CHECK(got.rows > 0 && got.id_sum == expected(got.rows).id_sum);
    int64_t sizes[64];
    CHECK(file_sizes(t, sizes, 64, &err) >= 3);
    fprintf(stderr, "  %d injected I/O faults failed the append cleanly\n", failed);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* Out of memory at sampled allocations of a many-file streamed append: an
 * error (HS_NOMEM, or the failure reported by the stream), nothing
 * committed, no file left; ASan's leak check covers what is freed. */
static void test_oom_sampled(void)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    const char *wh = tmp_path("oom");
    CHECK_OK(hs_catalog_open_path(wh, &cat, &err), &err);
    const char *keys[] = {"hyperstream.write.buffer-bytes", "write.target-file-size-bytes"};
    const char *vals[] = {"1048576", "100000"};
    hs_table *t = create_table(cat, "t", "cat", NULL, keys, vals, 2, &err);
    REQUIRE(t);
    char ddir[1100];
    snprintf(ddir, sizeof ddir, "%s/t/data", wh);
    /* how many allocations a successful append makes (on a scratch table) */
    hs_table *probe = create_table(cat, "probe", "cat", NULL, keys, vals, 2, &err);
    REQUIRE(probe);
    gen g0 = {.batch_rows = 8192, .bytes_limit = (int64_t)3 << 20};
    struct ArrowArrayStream s0;
    REQUIRE(gen_stream(&g0, &s0) == 0);
    int64_t a0 = hs_test_alloc_count();
    CHECK_OK(hs_table_append(probe, &s0, &err), &err);
    int64_t total = hs_test_alloc_count() - a0;
    hs_table_close(probe);
    int tried = 0, failed = 0;
    for (int64_t nth = 1; nth < total; nth = nth < 16 ? nth + 1 : nth * 3 / 2) {
        gen g = {.batch_rows = 8192, .bytes_limit = (int64_t)3 << 20};
        struct ArrowArrayStream s;
        REQUIRE(gen_stream(&g, &s) == 0);
        hs_err_clear(&err);
        hs_mem_fail_after(nth);
        hs_status st = hs_table_append(t, &s, &err);
        hs_mem_fail_after(0);
        tried++;
        if (st == HS_OK) {   /* the failing allocation was not reached, or recovered */
            hs_table_close(t);
            t = NULL;
            CHECK_OK(hs_table_open(cat, "t", &t, &err), &err);
            break;
        }
        failed++;
        CHECK(err.msg[0] != 0);
        CHECK(hs_snapshot_count(t) == 0);
        CHECK(count_files_in(ddir) == 0);
    }
    CHECK(failed > 10);
    fprintf(stderr, "  %d of %d sampled allocation failures (of %lld allocations) failed the "
            "append cleanly\n", failed, tried, (long long)total);
    hs_table_close(t);
    hs_catalog_close(cat);
}

int main(void)
{
    hs_test_count_allocs();   /* before any allocation: every block has its header */
    HS_RUN(test_stream_error);
    HS_RUN(test_partitioned_sorted);
    HS_RUN(test_io_fault_loop);
    HS_RUN(test_oom_sampled);
    HS_RUN(test_bounded_memory);
    return hs_test_summary();
}

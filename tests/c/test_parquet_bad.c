/*
 * test_parquet_bad.c - corrupt Parquet input never crashes, hangs or leaks.
 *
 * Runs under ASan+UBSan in CI, so "no crash" includes no out-of-bounds
 * access, no use of uninitialised sizes and no leak.  What is read:
 *
 *   input                                   how many                 expectation
 *   --------------------------------------  -----------------------  ----------------------
 *   bad_data/ files (parquet-testing)     every file               error or values
 *   truncated copies of 19 good files       64 cut points per file   error or values
 *   bit-flipped / byte-smashed copies       a few hundred per file   error or values
 *   bad_data through hs_parquet_read        every file               error or values
 *
 * "Values" must be well formed: every batch a scan returns passes
 * hs_col_validate, so a consumer cannot be led out of bounds by it.
 * Every read goes through the reader API directly (pq_reader_open on
 * hs_mem_open, scan all columns), sometimes with a row selection so that the
 * page-index paths see the corruption too.  Mutations come from a seeded
 * xorshift PRNG (reproducible), and each file has a time budget so the whole
 * test stays well under 20 s under ASan.  Footers are cached by name and
 * size, so every variant gets a unique name and the cache is cleared between
 * variants.  Skips when ../shared/testdata is absent.
 */
#include "harness.h"

#include "base/mem.h"
#include "hyperstream/parquet.h"
#include "io/io.h"
#include "parquet/reader.h"

#include <dirent.h>
#include <time.h>

static const char *const good_files[] = {
    "alltypes_plain.snappy.parquet",     "alltypes_dictionary.parquet",
    "datapage_v2.snappy.parquet",        "nested_lists.snappy.parquet",
    "nested_maps.snappy.parquet",        "nullable.impala.parquet",
    "byte_stream_split.zstd.parquet",    "delta_length_byte_array.parquet",
    "delta_encoding_optional_column.parquet", "rle_boolean_encoding.parquet",
    "fixed_length_decimal.parquet",      "lz4_raw_compressed.parquet",
    "int32_with_null_pages.parquet",     "repeated_no_annotation.parquet",
    "list_columns.parquet",              "concatenated_gzip_members.parquet",
    "delta_byte_array.parquet",          "delta_binary_packed.parquet",
    "alltypes_tiny_pages.parquet", /* has a page index: exercised by the selections */
};
#define N_GOOD (int)(sizeof good_files / sizeof good_files[0])

static double budget_per_file = 0.7; /* seconds of mutation per good file */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

typedef struct read_result {
    hs_status status;
    int64_t rows;
    int batches_invalid;
} read_result;

/* Reads every column of every row group (or the selection) of data[0..len). */
static read_result scan_all(const uint8_t *data, size_t len, const char *name, int64_t batch,
                            const roaring_bitmap_t *rows)
{
    read_result res = {HS_OK, 0, 0};
    hs_error err = {0};
    hs_file *f = NULL;
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    pq_scan_options o;

    memset(&o, 0, sizeof o);
    o.batch_size = batch;
    o.rows = rows;
    res.status = hs_mem_open(name, data, len, false, &f, &err);
    if (res.status != HS_OK)
        goto out;
    res.status = pq_reader_open(f, &r, &err);
    if (res.status != HS_OK)
        goto out;
    res.status = pq_scan_open(r, &o, &s, &err);
    if (res.status != HS_OK)
        goto out;
    for (;;) {
        hs_batch *b = NULL;
        res.status = pq_scan_next(s, &b, &err);
        if (res.status != HS_OK || !b)
            break;
        for (int i = 0; i < b->n_cols; i++) {
            hs_error verr = {0};
            if (b->cols[i]->length != b->n_rows ||
                hs_col_validate(b->cols[i], &b->schema.children[i], &verr) != HS_OK) {
                res.batches_invalid++;
                fprintf(stderr, "%s: column %d of a returned batch is malformed: %s\n", name, i,
                        verr.msg);
            }
        }
        res.rows += b->n_rows;
        hs_batch_free(b);
    }
out:
    if (res.status != HS_OK && err.code == HS_OK)
        fprintf(stderr, "%s: status %s without an error message\n", name,
                hs_status_name(res.status));
    pq_scan_close(s);
    pq_reader_close(r);
    hs_file_close(f);
    return res;
}

static bool load(const char *dir, const char *file, hs_buf *out)
{
    char path[4096];
    hs_error err = {0};
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (hs_local_read_all(path, out, &err) != HS_OK) {
        fprintf(stderr, "cannot read %s: %s\n", path, err.msg);
        return false;
    }
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted *.parquet names in dir (caller frees each and the array); -1 if absent. */
static int list_parquet(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0, cap = 0;
    char **names = NULL;
    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 8 || strcmp(e->d_name + l - 8, ".parquet") != 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = realloc(names, cap * sizeof *names);
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    *out = names;
    return n;
}

static void test_bad_data_files(void)
{
    const char *td = hs_testdata_dir();
    char dir[4096];
    char **names = NULL;
    int n, i, errors = 0;
    if (!td) {
        SKIP("no testdata");
    }
    snprintf(dir, sizeof dir, "%s/parquet-testing/bad_data", td);
    n = list_parquet(dir, &names);
    if (n < 0) {
        char why_[4200];
        snprintf(why_, sizeof why_, "%s absent", dir);
        SKIP(why_);
    }
    CHECK(n >= 5);
    for (i = 0; i < n; i++) {
        hs_buf buf = {0};
        if (!load(dir, names[i], &buf)) {
            CHECK(0);
            continue;
        }
        pq_footer_cache_clear();
        int64_t live = hs_mem_live_count();
        read_result r = scan_all(buf.data, buf.len, names[i], 0, NULL);
        pq_footer_cache_clear();
        CHECK(r.batches_invalid == 0);
        CHECK(hs_mem_live_count() == live);
        if (hs_mem_live_count() != live)
            fprintf(stderr, "%s: %lld allocations leaked\n", names[i],
                    (long long)(hs_mem_live_count() - live));
        fprintf(stderr, "  bad_data/%s: %s (%lld rows)\n", names[i],
                r.status ? hs_status_name(r.status) : "read", (long long)r.rows);
        errors += r.status != HS_OK;
        hs_buf_free(&buf);
        free(names[i]);
    }
    free(names);
    /* Most of these files must be rejected; a reader accepting all of them
     * would not be checking anything. */
    CHECK(errors >= n / 2);
}

/* The same files through the public API, which adds the Arrow stream export. */
static void test_bad_data_public_api(void)
{
    const char *td = hs_testdata_dir();
    char dir[4096], path[4200];
    char **names = NULL;
    int n, i;
    if (!td)
        SKIP("no testdata");
    snprintf(dir, sizeof dir, "%s/parquet-testing/bad_data", td);
    n = list_parquet(dir, &names);
    if (n < 0) {
        char why_[4200];
        snprintf(why_, sizeof why_, "%s absent", dir);
        SKIP(why_);
    }
    CHECK(n > 0);
    for (i = 0; i < n; i++) {
        struct ArrowArrayStream st;
        struct ArrowSchema schema;
        hs_error err = {0};
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        pq_footer_cache_clear();
        if (hs_parquet_read(path, NULL, 0, 1000, &st, &err) == HS_OK) {
            if (st.get_schema(&st, &schema) == 0 && schema.release)
                schema.release(&schema);
            for (;;) {
                struct ArrowArray a;
                memset(&a, 0, sizeof a);
                int rc = st.get_next(&st, &a);
                if (rc != 0) {
                    const char *m = st.get_last_error(&st);
                    CHECK(m != NULL && *m);
                    break;
                }
                if (!a.release)
                    break;
                a.release(&a);
            }
            st.release(&st);
        } else {
            CHECK(err.msg[0] != '\0');
        }
        free(names[i]);
    }
    free(names);
    pq_footer_cache_clear();
}

/* One mutated variant: read it (sometimes with a row selection). */
static int n_variant_ok; /* variants that read without error (values) */

static void read_variant(const uint8_t *data, size_t len, const char *file, const char *kind,
                         int k, int64_t n_rows, int *n_invalid)
{
    char name[512];
    roaring_bitmap_t *sel = NULL;
    snprintf(name, sizeof name, "%s#%s%d", file, kind, k);
    if (k % 3 == 2 && n_rows > 0) {
        sel = roaring_bitmap_create();
        roaring_bitmap_add(sel, (uint32_t)(rnd() % (uint64_t)n_rows));
        roaring_bitmap_add(sel, (uint32_t)(n_rows - 1));
    }
    pq_footer_cache_clear();
    read_result r = scan_all(data, len, name, (int64_t)(1 + rnd() % 300), sel);
    *n_invalid += r.batches_invalid;
    n_variant_ok += r.status == HS_OK;
    if (sel)
        roaring_bitmap_free(sel);
}

static void test_mutated_good_files(void)
{
    const char *td = hs_testdata_dir();
    char dir[4096];
    int i, total_variants = 0, n_invalid = 0;
    if (!td) {
        SKIP("no testdata");
    }
    snprintf(dir, sizeof dir, "%s/parquet-testing/data", td);
    pq_footer_cache_clear();
    int64_t live = hs_mem_live_count();
    for (i = 0; i < N_GOOD; i++) {
        hs_buf orig = {0};
        uint8_t *work;
        size_t len, cut;
        int k, variants = 0;
        double t0 = now_s();
        n_variant_ok = 0;
        if (!load(dir, good_files[i], &orig)) {
            CHECK(0);
            continue;
        }
        len = orig.len;
        rng_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)(i + 1) * 0x2545F4914F6CDD1Dull;
        /* The original must read cleanly. */
        read_result base = scan_all(orig.data, len, good_files[i], 0, NULL);
        CHECK(base.status == HS_OK);
        if (base.status != HS_OK)
            fprintf(stderr, "%s: good file fails: %s\n", good_files[i],
                    hs_status_name(base.status));
        work = malloc(len);
        /* Truncations: the first bytes, evenly spread cuts, and the last bytes
         * (where the footer and its length live).  Exact-size buffers so ASan
         * sees any read past the end. */
        for (k = 0; k < 64; k++) {
            if (k < 8)
                cut = (size_t)k;
            else if (k < 48)
                cut = len * (size_t)(k - 8) / 40;
            else
                cut = len - 1 - (size_t)(k - 48);
            if (cut >= len)
                continue;
            uint8_t *t = malloc(cut ? cut : 1);
            memcpy(t, orig.data, cut);
            read_variant(t, cut, good_files[i], "cut", k, base.rows, &n_invalid);
            free(t);
            variants++;
        }
        /* Bit flips and byte smashes until the budget is spent (at most 400). */
        for (k = 0; k < 400 && now_s() - t0 < budget_per_file; k++) {
            int m, n_mut = 1 + (int)(rnd() % 4);
            memcpy(work, orig.data, len);
            for (m = 0; m < n_mut; m++) {
                size_t pos;
                /* Half the mutations hit the footer region (schema, offsets,
                 * sizes), the rest anywhere (page headers, levels, values). */
                if (rnd() % 2 && len > 64)
                    pos = len - 8 - (size_t)(rnd() % (len / 4 < 4096 ? len / 4 : 4096));
                else
                    pos = (size_t)(rnd() % len);
                switch (rnd() % 4) {
                case 0: case 1: work[pos] ^= (uint8_t)(1u << (rnd() % 8)); break;
                case 2: work[pos] = (uint8_t)rnd(); break;
                default: work[pos] = (rnd() % 2) ? 0xff : 0x00; break;
                }
            }
            read_variant(work, len, good_files[i], "flip", k, base.rows, &n_invalid);
            variants++;
        }
        fprintf(stderr, "  %s: %d variants (%d read, the rest rejected) in %.2f s\n",
                good_files[i], variants, n_variant_ok, now_s() - t0);
        total_variants += variants;
        free(work);
        hs_buf_free(&orig);
    }
    pq_footer_cache_clear();
    CHECK(n_invalid == 0);
    CHECK(hs_mem_live_count() == live);
    if (hs_mem_live_count() != live)
        fprintf(stderr, "mutations: %lld allocations leaked\n",
                (long long)(hs_mem_live_count() - live));
    fprintf(stderr, "  %d mutated variants read\n", total_variants);
}

int main(void)
{
    const char *b = getenv("HS_BAD_BUDGET"); /* seconds per good file, for local fuzzing */
    if (b && atof(b) > 0)
        budget_per_file = atof(b);
    HS_RUN(test_bad_data_files);
    HS_RUN(test_bad_data_public_api);
    HS_RUN(test_mutated_good_files);
    return hs_test_summary();
}

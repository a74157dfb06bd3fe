/*
 * tests/c/test_parquet_gather.c - selective reads (pq_scan_options rows /
 * ranges), which read flat leaves by random access inside each page
 * (cur_gather in parquet/reader.c), the footer's cache of decoded
 * dictionaries, the lazy dictionary load of page mode, and the buffer pool.
 *
 * Oracles: the same file read whole without a selection (the sequential
 * path, which never gathers), cut to the selected rows with hs_col_take;
 * and the per-run path of the same selection (pq_read_no_fast_paths).
 * Files: every readable file of the apache/parquet-testing corpus, and files
 * of our writer with nulls, dictionary pages that fall back to PLAIN, PLAIN
 * and dictionary strings, booleans, DELTA_BINARY_PACKED and BYTE_STREAM_SPLIT
 * values, a list column beside them, small odd-sized pages, v1 and v2 pages,
 * with and without a page index (page mode / sequential mode), read from
 * memory and from local files (page mode then reads pages in place from
 * the file's mapping and, once a page was seen, from the footer's notes).
 * Selections: empty, first row, last row, every row, 1 in 997, 1%, 30%,
 * random runs, and one row per page; odd batch sizes.
 */
#include "harness.h"

#include "base/mem.h"
#include "parquet/reader.h"
#include "parquet/reader_int.h"
#include "parquet/writer.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    uint64_t x = g_rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return g_rng = x;
}

/* All rows of the scan as one column per top-level column (caller frees). */
typedef struct cols_out {
    int n;
    hs_column **c;
    int64_t rows;
} cols_out;

static void cols_free(cols_out *o)
{
    for (int i = 0; i < o->n; i++)
        hs_col_free(o->c[i]);
    hs_free(o->c);
    memset(o, 0, sizeof *o);
}

static hs_status read_all(hs_file *f, const pq_scan_options *opt, cols_out *out, hs_error *err)
{
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    memset(out, 0, sizeof *out);
    hs_status st = pq_reader_open(f, &r, err);
    if (st == HS_OK)
        st = pq_scan_open(r, opt, &s, err);
    if (st == HS_OK) {
        const hs_field *sch = pq_reader_schema(r);
        int n = opt && opt->columns ? opt->n_columns : sch->n_children;
        out->c = hs_calloc((size_t)n + 1, sizeof *out->c);
        out->n = n;
        for (int i = 0; i < n && st == HS_OK; i++)
            st = hs_col_create(&sch->children[opt && opt->columns ? opt->columns[i] : i], 0,
                               &out->c[i], err);
    }
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = pq_scan_next(s, &b, err);
        if (st != HS_OK || !b)
            break;
        for (int i = 0; i < b->n_cols && st == HS_OK; i++) {
            st = hs_col_validate(b->cols[i], &b->schema.children[i], err);
            if (st == HS_OK)
                st = hs_col_append_column(out->c[i], b->cols[i], err);
        }
        out->rows += b->n_rows;
        hs_batch_free(b);
    }
    pq_scan_close(s);
    pq_reader_close(r);
    if (st != HS_OK)
        cols_free(out);
    return st;
}

/* Compares got with rows `idx` of full, column by column. */
static bool same_rows(const cols_out *full, const int64_t *idx, int64_t n, const cols_out *got,
                      const char *what)
{
    bool ok = got->rows == n && got->n == full->n;
    for (int i = 0; ok && i < full->n; i++) {
        hs_column *want = NULL;
        hs_error err = {0};
        if (hs_col_take(full->c[i], idx, n, &want, &err) != HS_OK) {
            fprintf(stderr, "  %s: take: %s\n", what, err.msg);
            return false;
        }
        if (!hs_col_equals(want, got->c[i])) {
            fprintf(stderr, "  %s: column %d differs\n", what, i);
            ok = false;
        }
        hs_col_free(want);
    }
    if (got->rows != n)
        fprintf(stderr, "  %s: %lld rows, expected %lld\n", what, (long long)got->rows,
                (long long)n);
    return ok;
}

/* One selection of one file: the gather path and the per-run path against
 * the cut-down full read. */
static void check_selection(hs_file *f, const cols_out *full, const roaring_bitmap_t *bm,
                            const char *what)
{
    int64_t n = (int64_t)roaring_bitmap_get_cardinality(bm);
    int64_t *idx = hs_malloc(sizeof(int64_t) * (size_t)(n + 1));
    REQUIRE(idx);
    roaring_uint32_iterator_t it;
    roaring_init_iterator(bm, &it);
    for (int64_t i = 0; it.has_value; i++, roaring_advance_uint32_iterator(&it))
        idx[i] = it.current_value;
    for (int mode = 0; mode < 2; mode++) {
        pq_read_no_fast_paths = mode == 1;
        pq_scan_options o;
        memset(&o, 0, sizeof o);
        o.rows = bm;
        o.batch_size = (int64_t)(1 + rnd() % 700);
        cols_out got;
        hs_error err = {0};
        hs_status st = read_all(f, &o, &got, &err);
        CHECK_OK(st, &err);
        if (st == HS_OK) {
            char label[256];
            snprintf(label, sizeof label, "%s, %s, %s", f->name, what,
                     mode ? "per-run path" : "gather");
            CHECK(same_rows(full, idx, n, &got, label));
            cols_free(&got);
        }
    }
    pq_read_no_fast_paths = false;
    hs_free(idx);
}

/* Every kind of selection on one file (n_rows rows); pages: first row of
 * every page of leaf 0 (from the offset index), or -1 spaced rows. */
static void check_file(hs_file *f, int64_t n_rows)
{
    cols_out full;
    hs_error err = {0};
    hs_status st = read_all(f, NULL, &full, &err);
    CHECK_OK(st, &err);
    if (st != HS_OK)
        return;
    CHECK(full.rows == n_rows);
    roaring_bitmap_t *bm = roaring_bitmap_create();
    check_selection(f, &full, bm, "empty");
    if (n_rows > 0) {
        roaring_bitmap_add(bm, 0);
        check_selection(f, &full, bm, "first row");
        roaring_bitmap_clear(bm);
        roaring_bitmap_add(bm, (uint32_t)(n_rows - 1));
        check_selection(f, &full, bm, "last row");
        roaring_bitmap_add_range(bm, 0, (uint64_t)n_rows);
        check_selection(f, &full, bm, "every row");
        static const int per_mille[] = {1, 10, 300};
        for (size_t k = 0; k < sizeof per_mille / sizeof per_mille[0]; k++) {
            roaring_bitmap_clear(bm);
            for (int64_t i = 0; i < n_rows; i++)
                if (rnd() % 1000 < (uint64_t)per_mille[k])
                    roaring_bitmap_add(bm, (uint32_t)i);
            char what[64];
            snprintf(what, sizeof what, "random %d/1000", per_mille[k]);
            check_selection(f, &full, bm, what);
        }
        roaring_bitmap_clear(bm);
        for (int64_t i = (int64_t)(rnd() % 50); i < n_rows; i += 1 + (int64_t)(rnd() % 200)) {
            int64_t e = i + 1 + (int64_t)(rnd() % 120);
            roaring_bitmap_add_range(bm, (uint64_t)i, (uint64_t)(e < n_rows ? e : n_rows));
            i = e;
        }
        check_selection(f, &full, bm, "runs");
        roaring_bitmap_clear(bm);
        for (int64_t i = 3; i < n_rows; i += 997)
            roaring_bitmap_add(bm, (uint32_t)i);
        check_selection(f, &full, bm, "every 997th");
    }
    roaring_bitmap_free(bm);
    cols_free(&full);
}

/* ---- the corpus ---- */

static void test_corpus(void)
{
    const char *td = hs_testdata_dir();
    if (!td) {
        SKIP("no testdata");
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/parquet-testing/data", td);
    DIR *d = opendir(dir);
    if (!d) {
        char why_[4200];
        snprintf(why_, sizeof why_, "no %s", dir);
        SKIP(why_);
    }
    pq_footer_cache_clear();
    int64_t live = hs_mem_live_count();
    int n_files = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 8 || strcmp(de->d_name + l - 8, ".parquet") != 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || sb.st_size > (32 << 20))
            continue;   /* keep the test short */
        hs_file *f = NULL;
        pq_reader *r = NULL;
        hs_error err = {0};
        if (hs_local_open(path, &f, &err) != HS_OK)
            continue;
        /* files the reader rejects are test_parquet_read's business */
        cols_out probe;
        if (pq_reader_open(f, &r, &err) == HS_OK && read_all(f, NULL, &probe, &err) == HS_OK) {
            int64_t n = pq_reader_num_rows(r);
            cols_free(&probe);
            if (n <= 200000) {
                check_file(f, n);
                n_files++;
            }
        }
        pq_reader_close(r);
        hs_file_close(f);
    }
    closedir(d);
    fprintf(stderr, "  corpus: %d files, selections compared\n", n_files);
    CHECK(n_files >= 40);
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
}

/* ---- files of our writer ---- */

static hs_status build_batch(hs_batch **out, int64_t n, hs_error *err)
{
    hs_field schema, f, elem;
    hs_field_init(&schema, "schema", HS_TYPE_STRUCT, false);
    static const struct { const char *name; hs_type t; bool nullable; } cols[] = {
        {"id", HS_TYPE_INT64, false},     {"q", HS_TYPE_INT32, true},
        {"cat", HS_TYPE_STRING, true},    {"uniq", HS_TYPE_STRING, true},
        {"flag", HS_TYPE_BOOL, true},     {"bss", HS_TYPE_FLOAT64, true},
        {"delta", HS_TYPE_INT64, false},  {"all_null", HS_TYPE_INT32, true},
    };
    int nc = (int)(sizeof cols / sizeof cols[0]);
    for (int i = 0; i < nc; i++) {
        hs_field_init(&f, cols[i].name, cols[i].t, cols[i].nullable);
        f.field_id = i + 1;
        HS_TRY(hs_field_add_child(&schema, &f));
    }
    hs_field_init(&elem, "element", HS_TYPE_INT32, true);
    hs_field_init_list(&f, "tags", true, &elem);
    f.field_id = nc + 1;
    HS_TRY(hs_field_add_child(&schema, &f));
    hs_status st = hs_batch_create(&schema, n, out, err);
    hs_field_clear(&schema);
    HS_TRY(st);
    hs_batch *b = *out;
    for (int64_t i = 0; i < n; i++) {
        int64_t id = i * 1000003 % 7919 * 100000 + i;   /* many distinct: dictionary falls back */
        HS_TRY(hs_col_append_fixed(b->cols[0], &id));
        int32_t q = (int32_t)(i % 13);
        HS_TRY(i % 5 == 1 ? hs_col_append_null(b->cols[1]) : hs_col_append_fixed(b->cols[1], &q));
        char s[48];
        int l = snprintf(s, sizeof s, "c%02d", (int)(i % 17));
        HS_TRY(i % 9 == 4 ? hs_col_append_null(b->cols[2]) : hs_col_append_bytes(b->cols[2], s, (size_t)l));
        l = snprintf(s, sizeof s, "unique-%lld-%s", (long long)i, i % 3 ? "x" : "");
        HS_TRY(i % 31 == 7 ? hs_col_append_null(b->cols[3]) : hs_col_append_bytes(b->cols[3], s, (size_t)l));
        uint8_t fl = (uint8_t)(i % 3 == 0);
        HS_TRY(i % 4 == 3 ? hs_col_append_null(b->cols[4]) : hs_col_append_fixed(b->cols[4], &fl));
        double d = (double)i * 0.5 - 3.25;
        HS_TRY(i % 6 == 5 ? hs_col_append_null(b->cols[5]) : hs_col_append_fixed(b->cols[5], &d));
        int64_t dl = i * 3 - (i % 7) * 11;
        HS_TRY(hs_col_append_fixed(b->cols[6], &dl));
        HS_TRY(hs_col_append_null(b->cols[7]));
        if (i % 8 == 2) {
            HS_TRY(hs_col_append_null(b->cols[8]));
        } else {
            for (int k = 0; k < (int)(i % 3); k++) {
                int32_t v = (int32_t)(i + k);
                HS_TRY(hs_col_append_fixed(b->cols[8]->children[0], &v));
            }
            HS_TRY(hs_col_list_end(b->cols[8]));
        }
    }
    b->n_rows = n;
    return HS_OK;
}

static void test_writer_files(void)
{
    const int64_t n = 5000;
    hs_error err = {0};
    hs_batch *b = NULL;
    CHECK_OK(build_batch(&b, n, &err), &err);
    pq_footer_cache_clear();
    int64_t live = hs_mem_live_count();
    for (int variant = 0; variant < 6; variant++) {
        pq_column_option co[2];
        memset(co, 0, sizeof co);
        co[0].path = "bss";
        co[0].set_encoding = true;
        co[0].encoding = PQ_ENC_BYTE_STREAM_SPLIT;
        co[1].path = "delta";
        co[1].set_encoding = true;
        co[1].encoding = PQ_ENC_DELTA_BINARY_PACKED;
        pq_writer_options wo;
        memset(&wo, 0, sizeof wo);
        wo.codec = variant % 3 == 0 ? HS_CODEC_ZSTD : variant % 3 == 1 ? HS_CODEC_SNAPPY
                                                                       : HS_CODEC_NONE;
        wo.page_rows = variant < 3 ? 97 : 613;
        wo.row_group_rows = variant < 3 ? 1700 : 5000;
        wo.dictionary_page_bytes = 2048;   /* id and uniq fall back to PLAIN */
        wo.data_page_v2 = variant % 2 == 1;
        wo.no_page_index = variant == 4;    /* sequential mode */
        wo.column_options = co;
        wo.n_column_options = 2;
        hs_buf file = {0};
        hs_wfile *wf = NULL;
        pq_writer *w = NULL;
        CHECK_OK(hs_mem_create(&file, &wf, &err), &err);
        CHECK_OK(pq_writer_open(wf, &b->schema, &wo, &w, &err), &err);
        CHECK_OK(pq_writer_write(w, b, &err), &err);
        CHECK_OK(pq_writer_finish(w, &err), &err);
        pq_writer_free(w);
        CHECK_OK(hs_wfile_close(wf, &err), &err);
        char name[64];
        snprintf(name, sizeof name, "gather-%d.parquet", variant);
        hs_file *f = NULL;
        CHECK_OK(hs_mem_open(name, file.data, file.len, false, &f, &err), &err);
        /* the whole read against the written batch (an oracle independent of
         * the reader), then the selections against the whole read */
        cols_out all;
        CHECK_OK(read_all(f, NULL, &all, &err), &err);
        for (int i = 0; i < all.n && i < b->n_cols; i++)
            CHECK(hs_col_equals(all.c[i], b->cols[i]));
        cols_free(&all);
        check_file(f, n);
        /* again with the dictionaries cached by the reads above */
        check_file(f, n);
        hs_file_close(f);
        /* a local file: page mode reads pages in place from the mapping, and
         * the second round sets known uncompressed pages up from the
         * footer's page notes (header and levels untouched) */
        char path[512];
        snprintf(path, sizeof path, "%s/gather-%d.parquet", hs_test_tmpdir(), variant);
        FILE *fp = fopen(path, "wb");
        REQUIRE(fp);
        REQUIRE(fwrite(file.data, 1, file.len, fp) == file.len);
        fclose(fp);
        CHECK_OK(hs_local_open(path, &f, &err), &err);
        check_file(f, n);
        check_file(f, n);
        hs_file_close(f);
        CHECK_OK(hs_local_open(path, &f, &err), &err);   /* a new handle, the same footer */
        check_file(f, n);
        hs_file_close(f);
        unlink(path);
        hs_buf_free(&file);
        pq_footer_cache_clear();
    }
    CHECK(hs_mem_live_count() == live);
    hs_batch_free(b);
}

/* Page mode reads the dictionary page only when a selected page is
 * dictionary-encoded: a selection inside the PLAIN pages after the
 * fallback reads fewer bytes than one in the first (dictionary) pages. */
static void test_lazy_dictionary(void)
{
    const int64_t n = 4000;
    hs_error err = {0};
    hs_field schema, fld;
    hs_field_init(&schema, "schema", HS_TYPE_STRUCT, false);
    hs_field_init(&fld, "v", HS_TYPE_INT64, false);
    fld.field_id = 1;
    CHECK_OK(hs_field_add_child(&schema, &fld), &err);
    hs_batch *b = NULL;
    CHECK_OK(hs_batch_create(&schema, n, &b, &err), &err);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = i * 7919;
        CHECK_OK(hs_col_append_fixed(b->cols[0], &v), &err);
    }
    b->n_rows = n;
    pq_writer_options wo;
    memset(&wo, 0, sizeof wo);
    wo.page_rows = 100;
    wo.dictionary_page_bytes = 8 * 1000;   /* the first ~1000 rows dictionary-encoded */
    hs_buf file = {0};
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;
    CHECK_OK(hs_mem_create(&file, &wf, &err), &err);
    CHECK_OK(pq_writer_open(wf, &schema, &wo, &w, &err), &err);
    CHECK_OK(pq_writer_write(w, b, &err), &err);
    CHECK_OK(pq_writer_finish(w, &err), &err);
    pq_writer_free(w);
    CHECK_OK(hs_wfile_close(wf, &err), &err);
    int64_t bytes[2];
    for (int k = 0; k < 2; k++) {
        pq_footer_cache_clear();   /* no cached dictionary */
        hs_file *f = NULL;
        pq_reader *r = NULL;
        pq_scan *s = NULL;
        CHECK_OK(hs_mem_open("lazy.parquet", file.data, file.len, false, &f, &err), &err);
        CHECK_OK(pq_reader_open(f, &r, &err), &err);
        pq_row_range rr = {k == 0 ? 10 : 3500, k == 0 ? 11 : 3501};
        pq_scan_options o;
        memset(&o, 0, sizeof o);
        o.ranges = &rr;
        o.n_ranges = 1;
        CHECK_OK(pq_scan_open(r, &o, &s, &err), &err);
        hs_batch *got = NULL;
        CHECK_OK(pq_scan_next(s, &got, &err), &err);
        REQUIRE(got && got->n_rows == 1);
        CHECK(HS_COL_VALUES(got->cols[0], int64_t)[0] == rr.start * 7919);
        hs_batch_free(got);
        bytes[k] = pq_scan_get_stats(s)->bytes_read;
        pq_scan_close(s);
        pq_reader_close(r);
        hs_file_close(f);
    }
    CHECK(bytes[1] < bytes[0]);
    CHECK(bytes[0] > 8000);   /* the dictionary page was read */
    pq_footer_cache_clear();
    hs_buf_free(&file);
    hs_batch_free(b);
    hs_field_clear(&schema);
}

/* Scans on several threads at once share footers, cached dictionaries and
 * the buffer pool. */
typedef struct th_arg {
    hs_file *f;
    const cols_out *full;
    int fails;
} th_arg;

static void *th_main(void *p)
{
    th_arg *a = p;
    for (int round = 0; round < 8; round++) {
        roaring_bitmap_t *bm = roaring_bitmap_create();
        for (int64_t i = round; i < a->full->rows; i += 3 + round)
            roaring_bitmap_add(bm, (uint32_t)i);
        int64_t n = (int64_t)roaring_bitmap_get_cardinality(bm);
        int64_t *idx = hs_malloc(sizeof(int64_t) * (size_t)(n + 1));
        roaring_uint32_iterator_t it;
        roaring_init_iterator(bm, &it);
        for (int64_t i = 0; it.has_value; i++, roaring_advance_uint32_iterator(&it))
            idx[i] = it.current_value;
        pq_scan_options o;
        memset(&o, 0, sizeof o);
        o.rows = bm;
        cols_out got;
        hs_error err = {0};
        if (read_all(a->f, &o, &got, &err) != HS_OK) {
            a->fails++;
        } else {
            a->fails += !same_rows(a->full, idx, n, &got, "thread");
            cols_free(&got);
        }
        hs_free(idx);
        roaring_bitmap_free(bm);
        if (round % 3 == 2)
            pq_footer_cache_clear();   /* readers in flight keep theirs */
    }
    return NULL;
}

static void test_threads(void)
{
    hs_error err = {0};
    hs_batch *b = NULL;
    CHECK_OK(build_batch(&b, 3000, &err), &err);
    pq_writer_options wo;
    memset(&wo, 0, sizeof wo);
    wo.codec = HS_CODEC_ZSTD;
    wo.page_rows = 211;
    wo.dictionary_page_bytes = 4096;
    hs_buf file = {0};
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;
    CHECK_OK(hs_mem_create(&file, &wf, &err), &err);
    CHECK_OK(pq_writer_open(wf, &b->schema, &wo, &w, &err), &err);
    CHECK_OK(pq_writer_write(w, b, &err), &err);
    CHECK_OK(pq_writer_finish(w, &err), &err);
    pq_writer_free(w);
    CHECK_OK(hs_wfile_close(wf, &err), &err);
    hs_file *f = NULL;
    CHECK_OK(hs_mem_open("threads.parquet", file.data, file.len, false, &f, &err), &err);
    cols_out full;
    CHECK_OK(read_all(f, NULL, &full, &err), &err);
    enum { N_TH = 4 };
    pthread_t th[N_TH];
    th_arg args[N_TH];
    for (int i = 0; i < N_TH; i++) {
        args[i] = (th_arg){f, &full, 0};
        CHECK(pthread_create(&th[i], NULL, th_main, &args[i]) == 0);
    }
    for (int i = 0; i < N_TH; i++) {
        pthread_join(th[i], NULL);
        CHECK(args[i].fails == 0);
    }
    cols_free(&full);
    hs_file_close(f);
    hs_buf_free(&file);
    hs_batch_free(b);
    pq_footer_cache_clear();
}

int main(void)
{
    int64_t live = hs_mem_live_count();
    HS_RUN(test_writer_files);
    HS_RUN(test_lazy_dictionary);
    HS_RUN(test_threads);
    HS_RUN(test_corpus);
    pq_footer_cache_clear();
    CHECK(hs_mem_live_count() == live);
    return hs_test_summary();
}

/*
 * tests/c/test_parquet_meta.c - Thrift compact codec and Parquet metadata.
 *
 * What is checked, and against what:
 *   - every footer of the parquet-testing corpus decodes (the corpus was
 *     written by parquet-mr, Arrow, Impala, Spark, Rust...: independent
 *     writers), and so does every page header of every column chunk;
 *   - decode -> encode -> decode gives a structurally identical result for
 *     footers, page headers, column and offset indexes of the corpus;
 *   - hand-built structures with every field set round trip; hand-assembled
 *     compact bytes (written here byte by byte from the Thrift spec, not by
 *     our encoder) decode to the expected values, including unknown fields of
 *     every type, which must be skipped;
 *   - hostile input: huge counts, deep nesting, negative sizes, missing
 *     required fields, every truncation of a real footer, random bit flips:
 *     HS_CORRUPT with a message, never a crash or a leak (live allocation
 *     count returns to its start value).
 * The field-by-field comparison with pyarrow is in tests/python/test_parquet_meta.py.
 */
#include "harness.h"

#include "base/arena.h"
#include "base/buf.h"
#include "base/mem.h"
#include "parquet/meta.h"
#include "parquet/thrift.h"

#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ comparisons */

static bool str_eq(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

static bool bytes_eq(pq_bytes a, pq_bytes b)
{
    if (!a.p || !b.p)
        return a.p == b.p;
    return a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0);
}

static bool stats_eq(const pq_statistics *a, const pq_statistics *b)
{
    return bytes_eq(a->max, b->max) && bytes_eq(a->min, b->min) &&
           a->has_null_count == b->has_null_count &&
           (!a->has_null_count || a->null_count == b->null_count) &&
           a->has_distinct_count == b->has_distinct_count &&
           (!a->has_distinct_count || a->distinct_count == b->distinct_count) &&
           bytes_eq(a->max_value, b->max_value) && bytes_eq(a->min_value, b->min_value) &&
           a->has_is_max_exact == b->has_is_max_exact &&
           a->is_max_value_exact == b->is_max_value_exact &&
           a->has_is_min_exact == b->has_is_min_exact &&
           a->is_min_value_exact == b->is_min_value_exact;
}

static bool kv_eq(int32_t n, const pq_kv *a, int32_t m, const pq_kv *b)
{
    if (n != m)
        return false;
    for (int32_t i = 0; i < n; i++)
        if (!str_eq(a[i].key, b[i].key) || !str_eq(a[i].value, b[i].value))
            return false;
    return true;
}

static bool logical_eq(const pq_logical_type *a, const pq_logical_type *b)
{
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case PQ_LT_DECIMAL:
        return a->scale == b->scale && a->precision == b->precision;
    case PQ_LT_TIME:
    case PQ_LT_TIMESTAMP:
        return a->is_adjusted_to_utc == b->is_adjusted_to_utc && a->unit == b->unit;
    case PQ_LT_INTEGER:
        return a->bit_width == b->bit_width && a->is_signed == b->is_signed;
    default:
        return true;
    }
}

static bool schema_eq(const pq_schema_element *a, const pq_schema_element *b)
{
    return a->has_type == b->has_type && (!a->has_type || a->type == b->type) &&
           a->type_length == b->type_length && a->has_repetition == b->has_repetition &&
           (!a->has_repetition || a->repetition == b->repetition) && str_eq(a->name, b->name) &&
           a->num_children == b->num_children && a->converted_type == b->converted_type &&
           a->scale == b->scale && a->precision == b->precision &&
           a->has_field_id == b->has_field_id && (!a->has_field_id || a->field_id == b->field_id) &&
           logical_eq(&a->logical, &b->logical);
}

static bool colmeta_eq(const pq_column_meta *a, const pq_column_meta *b)
{
    if (a->type != b->type || a->n_encodings != b->n_encodings || a->n_path != b->n_path ||
        a->codec != b->codec || a->num_values != b->num_values ||
        a->total_uncompressed_size != b->total_uncompressed_size ||
        a->total_compressed_size != b->total_compressed_size ||
        !kv_eq(a->n_kv, a->kv, b->n_kv, b->kv) || a->data_page_offset != b->data_page_offset ||
        a->has_index_page_offset != b->has_index_page_offset ||
        a->index_page_offset != b->index_page_offset ||
        a->has_dictionary_page_offset != b->has_dictionary_page_offset ||
        a->dictionary_page_offset != b->dictionary_page_offset ||
        a->has_statistics != b->has_statistics ||
        (a->has_statistics && !stats_eq(&a->statistics, &b->statistics)) ||
        a->n_encoding_stats != b->n_encoding_stats ||
        a->has_bloom_filter_offset != b->has_bloom_filter_offset ||
        a->bloom_filter_offset != b->bloom_filter_offset ||
        a->has_bloom_filter_length != b->has_bloom_filter_length ||
        a->bloom_filter_length != b->bloom_filter_length)
        return false;
    for (int32_t i = 0; i < a->n_encodings; i++)
        if (a->encodings[i] != b->encodings[i])
            return false;
    for (int32_t i = 0; i < a->n_path; i++)
        if (!str_eq(a->path[i], b->path[i]))
            return false;
    for (int32_t i = 0; i < a->n_encoding_stats; i++)
        if (a->encoding_stats[i].page_type != b->encoding_stats[i].page_type ||
            a->encoding_stats[i].encoding != b->encoding_stats[i].encoding ||
            a->encoding_stats[i].count != b->encoding_stats[i].count)
            return false;
    return true;
}

static bool chunk_eq(const pq_column_chunk *a, const pq_column_chunk *b)
{
    return str_eq(a->file_path, b->file_path) && a->file_offset == b->file_offset &&
           a->has_meta_data == b->has_meta_data &&
           (!a->has_meta_data || colmeta_eq(&a->meta_data, &b->meta_data)) &&
           a->has_offset_index == b->has_offset_index &&
           a->offset_index_offset == b->offset_index_offset &&
           a->offset_index_length == b->offset_index_length &&
           a->has_column_index == b->has_column_index &&
           a->column_index_offset == b->column_index_offset &&
           a->column_index_length == b->column_index_length;
}

static bool row_group_eq(const pq_row_group *a, const pq_row_group *b)
{
    if (a->n_columns != b->n_columns || a->total_byte_size != b->total_byte_size ||
        a->num_rows != b->num_rows || a->n_sorting_columns != b->n_sorting_columns ||
        a->has_file_offset != b->has_file_offset || a->file_offset != b->file_offset ||
        a->has_total_compressed_size != b->has_total_compressed_size ||
        a->total_compressed_size != b->total_compressed_size || a->has_ordinal != b->has_ordinal ||
        a->ordinal != b->ordinal)
        return false;
    for (int32_t i = 0; i < a->n_columns; i++)
        if (!chunk_eq(&a->columns[i], &b->columns[i]))
            return false;
    for (int32_t i = 0; i < a->n_sorting_columns; i++)
        if (a->sorting_columns[i].column_idx != b->sorting_columns[i].column_idx ||
            a->sorting_columns[i].descending != b->sorting_columns[i].descending ||
            a->sorting_columns[i].nulls_first != b->sorting_columns[i].nulls_first)
            return false;
    return true;
}

static bool file_meta_eq(const pq_file_meta *a, const pq_file_meta *b)
{
    if (a->version != b->version || a->n_schema != b->n_schema || a->num_rows != b->num_rows ||
        a->n_row_groups != b->n_row_groups || !kv_eq(a->n_kv, a->kv, b->n_kv, b->kv) ||
        !str_eq(a->created_by, b->created_by) || a->n_column_orders != b->n_column_orders)
        return false;
    for (int32_t i = 0; i < a->n_schema; i++)
        if (!schema_eq(&a->schema[i], &b->schema[i]))
            return false;
    for (int32_t i = 0; i < a->n_row_groups; i++)
        if (!row_group_eq(&a->row_groups[i], &b->row_groups[i]))
            return false;
    return true;
}

static bool page_header_eq(const pq_page_header *a, const pq_page_header *b)
{
    if (a->type != b->type || a->uncompressed_page_size != b->uncompressed_page_size ||
        a->compressed_page_size != b->compressed_page_size || a->has_crc != b->has_crc ||
        (a->has_crc && a->crc != b->crc) || a->has_data != b->has_data ||
        a->has_dict != b->has_dict || a->has_data_v2 != b->has_data_v2)
        return false;
    if (a->has_data) {
        const pq_data_page_header *x = &a->data, *y = &b->data;
        if (x->num_values != y->num_values || x->encoding != y->encoding ||
            x->def_encoding != y->def_encoding || x->rep_encoding != y->rep_encoding ||
            x->has_statistics != y->has_statistics ||
            (x->has_statistics && !stats_eq(&x->statistics, &y->statistics)))
            return false;
    }
    if (a->has_dict && (a->dict.num_values != b->dict.num_values ||
                        a->dict.encoding != b->dict.encoding ||
                        a->dict.is_sorted != b->dict.is_sorted))
        return false;
    if (a->has_data_v2) {
        const pq_data_page_header_v2 *x = &a->data_v2, *y = &b->data_v2;
        if (x->num_values != y->num_values || x->num_nulls != y->num_nulls ||
            x->num_rows != y->num_rows || x->encoding != y->encoding ||
            x->def_levels_byte_length != y->def_levels_byte_length ||
            x->rep_levels_byte_length != y->rep_levels_byte_length ||
            x->is_compressed != y->is_compressed || x->has_statistics != y->has_statistics ||
            (x->has_statistics && !stats_eq(&x->statistics, &y->statistics)))
            return false;
    }
    return true;
}

static bool column_index_eq(const pq_column_index *a, const pq_column_index *b)
{
    if (a->n_pages != b->n_pages || a->boundary_order != b->boundary_order ||
        a->has_null_counts != b->has_null_counts)
        return false;
    for (int32_t i = 0; i < a->n_pages; i++) {
        if (a->null_pages[i] != b->null_pages[i] ||
            !bytes_eq(a->min_values[i], b->min_values[i]) ||
            !bytes_eq(a->max_values[i], b->max_values[i]) ||
            (a->has_null_counts && a->null_counts[i] != b->null_counts[i]))
            return false;
    }
    return true;
}

static bool offset_index_eq(const pq_offset_index *a, const pq_offset_index *b)
{
    if (a->n_pages != b->n_pages)
        return false;
    for (int32_t i = 0; i < a->n_pages; i++)
        if (a->pages[i].offset != b->pages[i].offset ||
            a->pages[i].compressed_page_size != b->pages[i].compressed_page_size ||
            a->pages[i].first_row_index != b->pages[i].first_row_index)
            return false;
    return true;
}

/* ------------------------------------------------------------ file helpers */

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(sz > 0 ? (size_t)sz : 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)sz;
    return b;
}

/* Footer slice of a whole file; false when not a plain PAR1 file. */
static bool footer_of(const uint8_t *file, size_t len, const uint8_t **foot, size_t *flen)
{
    if (len < 12 || memcmp(file + len - 4, "PAR1", 4) != 0)
        return false;
    uint32_t n = (uint32_t)file[len - 8] | (uint32_t)file[len - 7] << 8 |
                 (uint32_t)file[len - 6] << 16 | (uint32_t)file[len - 5] << 24;
    if ((size_t)n > len - 12)
        return false;
    *foot = file + len - 8 - n;
    *flen = n;
    return true;
}

#define MAX_FILES 256
static char *corpus[MAX_FILES];
static int n_corpus;

static void add_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) && n_corpus < MAX_FILES) {
        size_t n = strlen(e->d_name);
        if (n > 8 && strcmp(e->d_name + n - 8, ".parquet") == 0) {
            char *p = malloc(strlen(dir) + n + 2);
            sprintf(p, "%s/%s", dir, e->d_name);
            corpus[n_corpus++] = p;
        }
    }
    closedir(d);
}

static int load_corpus(void)
{
    const char *td = hs_testdata_dir();
    char dir[1024];
    if (!td)
        return 0;
    if (n_corpus)
        return n_corpus;
    snprintf(dir, sizeof dir, "%s/parquet-testing/data", td);
    add_dir(dir);
    snprintf(dir, sizeof dir, "%s/parquet-testing/data/geospatial", td);
    add_dir(dir);
    return n_corpus;
}

/* ------------------------------------------------------------ corpus tests */

/* Walks the pages of one column chunk: decode, re-encode, decode again. */
static void check_pages(const char *path, const uint8_t *file, size_t len,
                        const pq_column_meta *m, hs_arena *a, long *n_pages)
{
    int64_t off = m->data_page_offset;
    if (m->has_dictionary_page_offset && m->dictionary_page_offset > 0 &&
        m->dictionary_page_offset < off)
        off = m->dictionary_page_offset;
    int64_t end = off + m->total_compressed_size, values = 0;
    hs_buf enc = {0};
    while (off >= 0 && off < end && (size_t)off < len && values < m->num_values) {
        pq_page_header h, h2;
        size_t used = 0, used2 = 0;
        hs_error err = {0};
        hs_status st = pq_decode_page_header(file + off, len - (size_t)off, a, &h, &used, &err);
        if (st != HS_OK) {
            fprintf(stderr, "%s: page header at %lld: %s\n", path, (long long)off, err.msg);
            CHECK(st == HS_OK);
            break;
        }
        (*n_pages)++;
        hs_buf_reset(&enc);
        CHECK(pq_encode_page_header(&h, &enc) == HS_OK);
        CHECK(pq_decode_page_header(enc.data, enc.len, a, &h2, &used2, &err) == HS_OK);
        CHECK(used2 == enc.len);
        CHECK(page_header_eq(&h, &h2));
        if (h.has_data)
            values += h.data.num_values;
        if (h.has_data_v2)
            values += h.data_v2.num_values;
        off += (int64_t)used + h.compressed_page_size;
    }
    hs_buf_free(&enc);
}

static void check_page_index(const char *path, const uint8_t *file, size_t len,
                             const pq_column_chunk *c, hs_arena *a, long *n_idx)
{
    hs_buf enc = {0};
    hs_error err = {0};
    if (c->has_column_index && c->column_index_offset >= 0 &&
        (uint64_t)c->column_index_offset + (uint64_t)c->column_index_length <= len) {
        pq_column_index ci, ci2;
        hs_status st = pq_decode_column_index(file + c->column_index_offset,
                                              (size_t)c->column_index_length, a, &ci, &err);
        if (st != HS_OK)
            fprintf(stderr, "%s: column index: %s\n", path, err.msg);
        CHECK(st == HS_OK);
        if (st == HS_OK) {
            (*n_idx)++;
            CHECK(pq_encode_column_index(&ci, &enc) == HS_OK);
            CHECK(pq_decode_column_index(enc.data, enc.len, a, &ci2, &err) == HS_OK);
            CHECK(column_index_eq(&ci, &ci2));
        }
    }
    hs_buf_reset(&enc);
    if (c->has_offset_index && c->offset_index_offset >= 0 &&
        (uint64_t)c->offset_index_offset + (uint64_t)c->offset_index_length <= len) {
        pq_offset_index oi, oi2;
        hs_status st = pq_decode_offset_index(file + c->offset_index_offset,
                                              (size_t)c->offset_index_length, a, &oi, &err);
        if (st != HS_OK)
            fprintf(stderr, "%s: offset index: %s\n", path, err.msg);
        CHECK(st == HS_OK);
        if (st == HS_OK) {
            (*n_idx)++;
            CHECK(pq_encode_offset_index(&oi, &enc) == HS_OK);
            CHECK(pq_decode_offset_index(enc.data, enc.len, a, &oi2, &err) == HS_OK);
            CHECK(offset_index_eq(&oi, &oi2));
        }
    }
    hs_buf_free(&enc);
}

static void test_corpus_footers(void)
{
    if (!load_corpus()) {
        SKIP("no testdata");
    }
    int64_t live0 = hs_mem_live_count();
    int decoded = 0;
    long n_pages = 0, n_idx = 0;
    for (int i = 0; i < n_corpus; i++) {
        size_t len, flen;
        const uint8_t *foot;
        uint8_t *file = read_file(corpus[i], &len);
        REQUIRE(file);
        if (len >= 4 && memcmp(file + len - 4, "PARE", 4) == 0) {
            free(file);
            continue;
        }
        CHECK(footer_of(file, len, &foot, &flen));
        hs_arena a = {0};
        hs_error err = {0};
        pq_file_meta m, m2;
        hs_status st = pq_decode_file_meta(foot, flen, &a, &m, &err);
        if (st != HS_OK)
            fprintf(stderr, "%s: %s\n", corpus[i], err.msg);
        CHECK(st == HS_OK);
        if (st == HS_OK) {
            decoded++;
            CHECK(m.n_schema >= 1);
            hs_buf enc = {0};
            CHECK(pq_encode_file_meta(&m, &enc) == HS_OK);
            st = pq_decode_file_meta(enc.data, enc.len, &a, &m2, &err);
            CHECK(st == HS_OK);
            if (st == HS_OK && !file_meta_eq(&m, &m2))
                fprintf(stderr, "%s: round trip differs\n", corpus[i]);
            CHECK(st == HS_OK && file_meta_eq(&m, &m2));
            hs_buf_free(&enc);
            for (int r = 0; r < m.n_row_groups; r++)
                for (int c = 0; c < m.row_groups[r].n_columns; c++) {
                    const pq_column_chunk *cc = &m.row_groups[r].columns[c];
                    if (cc->has_meta_data && !cc->file_path)
                        check_pages(corpus[i], file, len, &cc->meta_data, &a, &n_pages);
                    check_page_index(corpus[i], file, len, cc, &a, &n_idx);
                }
        }
        hs_arena_destroy(&a);
        free(file);
    }
    fprintf(stderr, "     %d footers, %ld page headers, %ld page indexes\n", decoded, n_pages,
            n_idx);
    CHECK(decoded >= 50);
    CHECK(n_pages > 1000);
    CHECK(n_idx > 10);
    CHECK(hs_mem_live_count() == live0);
}

/* The bad_data corpus: anything may fail, nothing may crash. */
static void test_bad_data(void)
{
    const char *td = hs_testdata_dir();
    char dir[1024];
    if (!td) {
        SKIP("no testdata");
    }
    int saved = n_corpus;
    snprintf(dir, sizeof dir, "%s/parquet-testing/bad_data", td);
    add_dir(dir);
    for (int i = saved; i < n_corpus; i++) {
        size_t len, flen;
        const uint8_t *foot;
        uint8_t *file = read_file(corpus[i], &len);
        if (file && footer_of(file, len, &foot, &flen)) {
            hs_arena a = {0};
            hs_error err = {0};
            pq_file_meta m;
            hs_status st = pq_decode_file_meta(foot, flen, &a, &m, &err);
            CHECK(st == HS_OK || (st == HS_CORRUPT && err.msg[0]));
            hs_arena_destroy(&a);
        }
        free(file);
        free(corpus[i]);
    }
    n_corpus = saved;
}

static void test_truncations(void)
{
    if (!load_corpus()) {
        SKIP("no testdata");
    }
    int64_t live0 = hs_mem_live_count();
    int files = 0;
    for (int i = 0; i < n_corpus && files < 6; i++) {
        size_t len, flen;
        const uint8_t *foot;
        uint8_t *file = read_file(corpus[i], &len);
        if (!file || !footer_of(file, len, &foot, &flen) || flen > 20000) {
            free(file);
            continue;
        }
        files++;
        for (size_t cut = 0; cut < flen; cut++) {
            /* a fresh heap copy so ASan sees reads past the cut */
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, foot, cut);
            hs_arena a = {0};
            hs_error err = {0};
            pq_file_meta m;
            hs_status st = pq_decode_file_meta(copy, cut, &a, &m, &err);
            CHECK(st == HS_CORRUPT);
            CHECK(err.msg[0] != 0);
            hs_arena_destroy(&a);
            free(copy);
        }
        free(file);
    }
    CHECK(files > 0);
    CHECK(hs_mem_live_count() == live0);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void test_bit_flips(void)
{
    if (!load_corpus()) {
        SKIP("no testdata");
    }
    int64_t live0 = hs_mem_live_count();
    long ok = 0, bad = 0;
    for (int i = 0; i < n_corpus; i += 4) {
        size_t len, flen;
        const uint8_t *foot;
        uint8_t *file = read_file(corpus[i], &len);
        if (!file || !footer_of(file, len, &foot, &flen) || flen == 0 || flen > 30000) {
            free(file);
            continue;
        }
        uint8_t *copy = malloc(flen);
        hs_arena a = {0};
        hs_buf enc = {0};
        for (int iter = 0; iter < 150; iter++) {
            memcpy(copy, foot, flen);
            int flips = 1 + (int)(rng() % 4);
            for (int k = 0; k < flips; k++) {
                size_t at = rng() % flen;
                if (rng() % 4 == 0)
                    copy[at] = (uint8_t)rng(); /* a whole random byte */
                else
                    copy[at] ^= (uint8_t)(1u << (rng() % 8));
            }
            hs_error err = {0};
            pq_file_meta m, m2;
            if (pq_decode_file_meta(copy, flen, &a, &m, &err) == HS_OK) {
                ok++;
                hs_buf_reset(&enc);
                CHECK(pq_encode_file_meta(&m, &enc) == HS_OK);
                CHECK(pq_decode_file_meta(enc.data, enc.len, &a, &m2, &err) == HS_OK);
                if (!file_meta_eq(&m, &m2)) {
                    hs_buf j1 = {0}, j2 = {0};
                    CHECK(pq_file_meta_to_json(&m, &j1) == HS_OK);
                    CHECK(pq_file_meta_to_json(&m2, &j2) == HS_OK);
                    size_t k = 0;
                    while (k < j1.len && k < j2.len && j1.data[k] == j2.data[k])
                        k++;
                    fprintf(stderr, "%s: bit-flip round trip differs near: %.80s | %.80s\n",
                            corpus[i], (const char *)j1.data + (k > 40 ? k - 40 : 0),
                            (const char *)j2.data + (k > 40 ? k - 40 : 0));
                    hs_buf_free(&j1);
                    hs_buf_free(&j2);
                    CHECK(false);
                }
            } else {
                bad++;
                CHECK(err.code != HS_OK && err.msg[0]);
            }
            hs_arena_reset(&a);
        }
        hs_buf_free(&enc);
        hs_arena_destroy(&a);
        free(copy);
        free(file);
    }
    fprintf(stderr, "     bit flips: %ld decoded, %ld rejected\n", ok, bad);
    CHECK(ok + bad > 0);
    CHECK(hs_mem_live_count() == live0);
}

/* ------------------------------------------------------------ hand-built */

static void test_handbuilt_file_meta(void)
{
    static const uint8_t mx[] = {0xff, 0x7f, 0x00}, mn[] = {0x80};
    pq_schema_element schema[4] = {0};
    schema[0].name = "schema";
    schema[0].num_children = 3;
    schema[0].converted_type = PQ_CT_NONE;
    schema[1] = (pq_schema_element){.has_type = true, .type = PQ_INT64, .has_repetition = true,
                                    .repetition = PQ_REQUIRED, .name = "id",
                                    .converted_type = PQ_CT_INT_64, .has_field_id = true,
                                    .field_id = -7,
                                    .logical = {.kind = PQ_LT_INTEGER, .bit_width = 64,
                                                .is_signed = true}};
    schema[2] = (pq_schema_element){.has_type = true, .type = PQ_FIXED_LEN_BYTE_ARRAY,
                                    .type_length = 16, .has_repetition = true,
                                    .repetition = PQ_OPTIONAL, .name = "d\"\\\x01",
                                    .converted_type = PQ_CT_DECIMAL, .scale = 3, .precision = 30,
                                    .logical = {.kind = PQ_LT_DECIMAL, .scale = 3,
                                                .precision = 30}};
    schema[3] = (pq_schema_element){.has_type = true, .type = PQ_INT64, .has_repetition = true,
                                    .repetition = PQ_REPEATED, .name = "ts",
                                    .converted_type = PQ_CT_NONE,
                                    .logical = {.kind = PQ_LT_TIMESTAMP,
                                                .is_adjusted_to_utc = true, .unit = PQ_TU_NANOS}};
    pq_encoding encs[] = {PQ_ENC_PLAIN, PQ_ENC_RLE, PQ_ENC_RLE_DICTIONARY};
    const char *path[] = {"id"};
    pq_kv ckv[] = {{"k", NULL}, {"", "v"}};
    pq_encoding_stats es[] = {{PQ_PAGE_DICTIONARY, PQ_ENC_PLAIN, 1},
                              {PQ_PAGE_DATA, PQ_ENC_RLE_DICTIONARY, 12345}};
    pq_column_chunk cols[2] = {0};
    cols[0].file_offset = 4;
    cols[0].has_meta_data = true;
    cols[0].meta_data = (pq_column_meta){
        .type = PQ_INT64, .n_encodings = 3, .encodings = encs, .n_path = 1, .path = path,
        .codec = PQ_CODEC_ZSTD, .num_values = INT64_MAX, .total_uncompressed_size = 1ll << 40,
        .total_compressed_size = 1, .n_kv = 2, .kv = ckv, .data_page_offset = 100,
        .has_index_page_offset = true, .index_page_offset = 0,
        .has_dictionary_page_offset = true, .dictionary_page_offset = 4,
        .has_statistics = true,
        .statistics = {.max = {mx, 3}, .min = {mn, 1}, .has_null_count = true, .null_count = 0,
                       .has_distinct_count = true, .distinct_count = INT64_MIN,
                       .max_value = {mx, 0}, .min_value = {mn, 1}, .has_is_max_exact = true,
                       .is_max_value_exact = false, .has_is_min_exact = true,
                       .is_min_value_exact = true},
        .n_encoding_stats = 2, .encoding_stats = es, .has_bloom_filter_offset = true,
        .bloom_filter_offset = 999, .has_bloom_filter_length = true, .bloom_filter_length = 77};
    cols[0].has_offset_index = true;
    cols[0].offset_index_offset = 5000;
    cols[0].offset_index_length = 12;
    cols[0].has_column_index = true;
    cols[0].column_index_offset = 6000;
    cols[0].column_index_length = 0;
    cols[1].file_path = "other.parquet";
    cols[1].file_offset = -1;
    pq_sorting_column sc[] = {{0, true, false}, {2, false, true}};
    pq_row_group rg[2] = {0};
    rg[0] = (pq_row_group){.n_columns = 2, .columns = cols, .total_byte_size = 123,
                           .num_rows = 1000, .n_sorting_columns = 2, .sorting_columns = sc,
                           .has_file_offset = true, .file_offset = 4,
                           .has_total_compressed_size = true, .total_compressed_size = 99,
                           .has_ordinal = true, .ordinal = 32767};
    rg[1] = (pq_row_group){.n_columns = 0, .total_byte_size = 0, .num_rows = 0};
    pq_kv fkv[] = {{"ARROW:schema", "x\xc3\xa9y"}, {"bad\xff", NULL}};
    pq_file_meta m = {.version = 2, .n_schema = 4, .schema = schema, .num_rows = 1000,
                      .n_row_groups = 2, .row_groups = rg, .n_kv = 2, .kv = fkv,
                      .created_by = "hyperstream test", .n_column_orders = 3};

    int64_t live0 = hs_mem_live_count();
    hs_buf enc = {0};
    hs_arena a = {0};
    hs_error err = {0}, *ep = &err;
    pq_file_meta d;
    CHECK_OK(pq_encode_file_meta(&m, &enc), ep);
    CHECK_OK(pq_decode_file_meta(enc.data, enc.len, &a, &d, &err), ep);
    CHECK(file_meta_eq(&m, &d));
    CHECK(d.row_groups[0].columns[0].meta_data.statistics.max_value.p != NULL);
    CHECK(d.row_groups[0].columns[0].meta_data.statistics.max_value.len == 0);
    CHECK(d.row_groups[0].columns[0].meta_data.statistics.max.p != mx); /* a copy */
    CHECK(d.row_groups[0].columns[1].file_path &&
          strcmp(d.row_groups[0].columns[1].file_path, "other.parquet") == 0);
    CHECK(!d.has_encryption_algorithm);

    /* JSON view is valid JSON with the values we set. */
    hs_buf js = {0};
    CHECK_OK(pq_footer_to_json(enc.data, enc.len, &js, &err), ep);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)js.data, js.len, 0, &jerr);
    if (!root)
        fprintf(stderr, "json: %s: %.*s\n", jerr.text, (int)js.len, (const char *)js.data);
    REQUIRE(root);
    CHECK(json_integer_value(json_object_get(root, "num_rows")) == 1000);
    json_t *s2 = json_array_get(json_object_get(root, "schema"), 2);
    CHECK(strcmp(json_string_value(json_object_get(s2, "name")), "d\"\\\x01") == 0);
    CHECK(strcmp(json_string_value(json_object_get(s2, "type")), "FIXED_LEN_BYTE_ARRAY") == 0);
    json_t *c0 = json_array_get(
        json_object_get(json_array_get(json_object_get(root, "row_groups"), 0), "columns"), 0);
    json_t *st = json_object_get(json_object_get(json_object_get(c0, "meta_data"), "statistics"),
                                 "max");
    CHECK(strcmp(json_string_value(st), "ff7f00") == 0);
    json_t *kv1 = json_array_get(json_object_get(root, "key_value_metadata"), 1);
    CHECK(strcmp(json_string_value(json_object_get(kv1, "key")), "bad\xef\xbf\xbd") == 0);
    CHECK(json_is_null(json_object_get(kv1, "value")));
    json_decref(root);
    hs_buf_free(&js);

    hs_arena_destroy(&a);
    hs_buf_free(&enc);
    CHECK(hs_mem_live_count() == live0);
}

static void test_handbuilt_pages(void)
{
    static const uint8_t v[] = {1, 2, 3};
    pq_page_header hs[3] = {0};
    hs[0] = (pq_page_header){.type = PQ_PAGE_DATA, .uncompressed_page_size = 100,
                             .compressed_page_size = 0, .has_crc = true, .crc = INT32_MIN,
                             .has_data = true,
                             .data = {.num_values = 7, .encoding = PQ_ENC_PLAIN,
                                      .def_encoding = PQ_ENC_RLE,
                                      .rep_encoding = PQ_ENC_BIT_PACKED, .has_statistics = true,
                                      .statistics = {.min_value = {v, 3}, .max_value = {v, 1},
                                                     .has_null_count = true, .null_count = 3}}};
    hs[1] = (pq_page_header){.type = PQ_PAGE_DICTIONARY, .uncompressed_page_size = INT32_MAX,
                             .compressed_page_size = INT32_MAX, .has_dict = true,
                             .dict = {.num_values = 0, .encoding = PQ_ENC_PLAIN_DICTIONARY,
                                      .is_sorted = true}};
    hs[2] = (pq_page_header){.type = PQ_PAGE_DATA_V2, .uncompressed_page_size = 5,
                             .compressed_page_size = 6, .has_data_v2 = true,
                             .data_v2 = {.num_values = 10, .num_nulls = 2, .num_rows = 9,
                                         .encoding = PQ_ENC_DELTA_BINARY_PACKED,
                                         .def_levels_byte_length = 3,
                                         .rep_levels_byte_length = 4, .is_compressed = false}};
    hs_buf enc = {0};
    hs_arena a = {0};
    hs_error err = {0}, *ep = &err;
    for (int i = 0; i < 3; i++)
        CHECK_OK(pq_encode_page_header(&hs[i], &enc), ep);
    /* Three headers back to back: `used` walks them. */
    size_t off = 0;
    for (int i = 0; i < 3; i++) {
        pq_page_header d;
        size_t used = 0;
        CHECK_OK(pq_decode_page_header(enc.data + off, enc.len - off, &a, &d, &used, &err), ep);
        CHECK(page_header_eq(&hs[i], &d));
        off += used;
    }
    CHECK(off == enc.len);

    /* column index and offset index */
    bool np[3] = {false, true, false};
    pq_bytes mins[3] = {{v, 1}, {v, 0}, {v, 3}}, maxs[3] = {{v, 2}, {v, 0}, {v, 3}};
    int64_t nc[3] = {0, 5, INT64_MAX};
    pq_column_index ci = {.n_pages = 3, .null_pages = np, .min_values = mins, .max_values = maxs,
                          .boundary_order = PQ_BOUNDARY_ASCENDING, .has_null_counts = true,
                          .null_counts = nc};
    pq_column_index cd;
    hs_buf_reset(&enc);
    CHECK_OK(pq_encode_column_index(&ci, &enc), ep);
    CHECK_OK(pq_decode_column_index(enc.data, enc.len, &a, &cd, &err), ep);
    CHECK(column_index_eq(&ci, &cd));
    ci.has_null_counts = false;
    hs_buf_reset(&enc);
    CHECK_OK(pq_encode_column_index(&ci, &enc), ep);
    CHECK_OK(pq_decode_column_index(enc.data, enc.len, &a, &cd, &err), ep);
    CHECK(column_index_eq(&ci, &cd));
    CHECK(!cd.has_null_counts);

    pq_page_location locs[20];
    for (int i = 0; i < 20; i++)
        locs[i] = (pq_page_location){4 + 1000ll * i, 1000, 1ll << (i + 20)};
    pq_offset_index oi = {.n_pages = 20, .pages = locs}, od;
    hs_buf_reset(&enc);
    CHECK_OK(pq_encode_offset_index(&oi, &enc), ep);
    CHECK_OK(pq_decode_offset_index(enc.data, enc.len, &a, &od, &err), ep);
    CHECK(offset_index_eq(&oi, &od));
    oi.n_pages = 0;
    hs_buf_reset(&enc);
    CHECK_OK(pq_encode_offset_index(&oi, &enc), ep);
    CHECK_OK(pq_decode_offset_index(enc.data, enc.len, &a, &od, &err), ep);
    CHECK(od.n_pages == 0);

    hs_arena_destroy(&a);
    hs_buf_free(&enc);
}

/* ------------------------------------------------------------ raw bytes */

/* A page header written byte by byte from the spec, with unknown fields of
 * every compact type (ids 20+) sprinkled between the known ones. */
static void test_raw_bytes_and_unknown_fields(void)
{
    static const uint8_t b[] = {
        0x15, 0x00,             /* 1: type = i32 0 (DATA_PAGE) */
        0x15, 0xc8, 0x01,       /* 2: uncompressed = 100 (zigzag 200) */
        0x15, 0x14,             /* 3: compressed = 10 */
        0x07, 0x28, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, /* 20 (long form): double 1.0 */
        0x01, 0x2a,             /* 21: bool true (long form) */
        0x02, 0x2c,             /* 22: bool false */
        0x03, 0x2e, 0x7f,       /* 23: byte */
        0x04, 0x30, 0x03,       /* 24: i16 */
        0x16, 0x01,             /* 25 (delta 1): i64 */
        0x18, 0x03, 'a', 'b', 'c', /* 26: binary "abc" */
        0x19, 0x21, 0x01, 0x02, /* 27: list<bool> [true, false] */
        0x19, 0x19, 0x15, 0x00, /* 28: list<list<i32>> [[0]] */
        0x1a, 0x2c, 0x00, 0x00, /* 29: set<struct> of 2 empty structs */
        0x1b, 0x02, 0x54, 0x01, 0x02, 0x03, 0x04, /* 30: map<i32,i16> 2 pairs */
        0x1b, 0x00,             /* 31: empty map */
        0x1c, 0x11, 0x1c, 0x00, 0x00, /* 32: struct{1: bool, 2: struct{}} */
        0x1d, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15, /* 33: uuid */
        0x0c, 0x0a,             /* field 5 in long form: data_page_header struct */
        0x15, 0x06,             /*   1: num_values = 3 */
        0x15, 0x00,             /*   2: encoding PLAIN */
        0x15, 0x06,             /*   3: RLE */
        0x15, 0x06,             /*   4: RLE */
        0x00,                   /* end DataPageHeader */
        0x00,                   /* end PageHeader */
        0xee, 0xee              /* trailing bytes: not ours */
    };
    hs_arena a = {0};
    hs_error err = {0}, *ep = &err;
    pq_page_header h;
    size_t used = 0;
    CHECK_OK(pq_decode_page_header(b, sizeof b, &a, &h, &used, &err), ep);
    CHECK(used == sizeof b - 2);
    CHECK(h.type == PQ_PAGE_DATA);
    CHECK(h.uncompressed_page_size == 100);
    CHECK(h.compressed_page_size == 10);
    CHECK(h.has_data && h.data.num_values == 3 && h.data.encoding == PQ_ENC_PLAIN);
    CHECK(h.data.def_encoding == PQ_ENC_RLE && h.data.rep_encoding == PQ_ENC_RLE);
    CHECK(!h.has_dict && !h.has_data_v2 && !h.has_crc);

    /* Known field id with an unexpected wire type is skipped like an unknown
     * field: here field 2 comes as a binary, then as the right i32. */
    static const uint8_t b2[] = {0x15, 0x04, 0x18, 0x01, 'x', 0x05, 0x04, 0x04,
                                 0x15, 0x08, 0x00};
    CHECK_OK(pq_decode_page_header(b2, sizeof b2, &a, &h, &used, &err), ep);
    CHECK(h.type == PQ_PAGE_DICTIONARY && h.uncompressed_page_size == 2 &&
          h.compressed_page_size == 4);
    hs_arena_destroy(&a);
}

static hs_status decode_footer_bytes(const uint8_t *b, size_t n, hs_error *err)
{
    hs_arena a = {0};
    pq_file_meta m;
    hs_status st = pq_decode_file_meta(b, n, &a, &m, err);
    hs_arena_destroy(&a);
    return st;
}

static void test_hostile(void)
{
    int64_t live0 = hs_mem_live_count();
    hs_error err = {0};

    /* list of 2^31-1 elements in a tiny footer: counted, not allocated */
    static const uint8_t huge[] = {0x15, 0x02, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0, 0};
    CHECK(decode_footer_bytes(huge, sizeof huge, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "exceeds remaining") != NULL);
    CHECK(strstr(err.msg, "footer") == err.msg);

    /* binary longer than the input */
    hs_err_clear(&err);
    static const uint8_t bin[] = {0x15, 0x02, 0x58, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'};
    CHECK(decode_footer_bytes(bin, sizeof bin, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "exceeds remaining") != NULL);

    /* unknown field nesting 10000 structs deep */
    hs_err_clear(&err);
    size_t n = 20000;
    uint8_t *deep = malloc(n);
    for (size_t i = 0; i < n; i++)
        deep[i] = i % 2 ? 0x1c : 0x0c;
    deep[0] = 0x0c, deep[1] = 0xc8, deep[2] = 0x01; /* field 100 struct */
    for (size_t i = 3; i < n; i++)
        deep[i] = 0x1c; /* field delta 1, struct, forever */
    CHECK(decode_footer_bytes(deep, n, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "nesting") != NULL);
    /* nested lists */
    hs_err_clear(&err);
    deep[0] = 0x09, deep[1] = 0xc8, deep[2] = 0x01;
    for (size_t i = 3; i < n; i++)
        deep[i] = 0x19; /* list of one list of one list ... */
    CHECK(decode_footer_bytes(deep, n, &err) == HS_CORRUPT);
    free(deep);

    /* missing required field names struct and field */
    hs_err_clear(&err);
    static const uint8_t noschema[] = {0x15, 0x02, 0x26, 0x00, 0x00}; /* version, num_rows(3) */
    CHECK(decode_footer_bytes(noschema, sizeof noschema, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "FileMetaData.schema") != NULL);
    hs_err_clear(&err);
    static const uint8_t noname[] = {0x15, 0x02, 0x19, 0x1c, 0x15, 0x02, 0x00, 0x16, 0x00,
                                     0x19, 0x0c, 0x00};
    CHECK(decode_footer_bytes(noname, sizeof noname, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "SchemaElement.name") != NULL);

    /* negative page sizes */
    hs_err_clear(&err);
    static const uint8_t neg[] = {0x15, 0x00, 0x15, 0x01, 0x15, 0x02, 0x00};
    hs_arena a = {0};
    pq_page_header h;
    size_t used;
    CHECK(pq_decode_page_header(neg, sizeof neg, &a, &h, &used, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "negative") != NULL);
    /* varint that never ends, i32 out of range */
    hs_err_clear(&err);
    static const uint8_t vlong[] = {0x15, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                    0xff, 0xff, 0x01};
    CHECK(pq_decode_page_header(vlong, sizeof vlong, &a, &h, &used, &err) == HS_CORRUPT);
    hs_err_clear(&err);
    static const uint8_t big32[] = {0x15, 0x80, 0x80, 0x80, 0x80, 0x20, 0x00};
    CHECK(pq_decode_page_header(big32, sizeof big32, &a, &h, &used, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "out of range") != NULL);
    /* invalid field type 14 */
    hs_err_clear(&err);
    static const uint8_t badtype[] = {0x1e, 0x00};
    CHECK(pq_decode_page_header(badtype, sizeof badtype, &a, &h, &used, &err) == HS_CORRUPT);
    /* empty input */
    hs_err_clear(&err);
    CHECK(pq_decode_page_header(neg, 0, &a, &h, &used, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "truncated") != NULL);

    /* column index lists of different lengths */
    hs_err_clear(&err);
    static const uint8_t ci[] = {0x19, 0x21, 1, 2, 0x19, 0x18, 0x00, 0x19, 0x28, 0x00, 0x00,
                                 0x15, 0x00, 0x00};
    pq_column_index cix;
    CHECK(pq_decode_column_index(ci, sizeof ci, &a, &cix, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "disagree") != NULL);
    hs_arena_destroy(&a);
    CHECK(hs_mem_live_count() == live0);
}

/* Out of memory at every allocation: HS_NOMEM (never a crash), no leak. */
static void test_oom(void)
{
    if (!load_corpus()) {
        SKIP("no testdata");
    }
    size_t len, flen;
    const uint8_t *foot;
    uint8_t *file = NULL;
    for (int i = 0; i < n_corpus && !file; i++) {
        file = read_file(corpus[i], &len);
        if (file && (!footer_of(file, len, &foot, &flen) || flen < 2000)) {
            free(file);
            file = NULL;
        }
    }
    REQUIRE(file);
    int64_t live0 = hs_mem_live_count();
    int ok = 0, nomem = 0;
    for (int k = 1; k < 400 && ok == 0; k++) {
        hs_arena a = {0};
        hs_error err = {0};
        hs_buf js = {0};
        pq_file_meta m;
        hs_mem_fail_after(k);
        hs_status st = pq_decode_file_meta(foot, flen, &a, &m, &err);
        if (st == HS_OK)
            st = pq_file_meta_to_json(&m, &js);
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM);
        if (st == HS_OK)
            ok++;
        else
            nomem++;
        hs_buf_free(&js);
        hs_arena_destroy(&a);
    }
    CHECK(ok == 1 && nomem > 0);
    CHECK(hs_mem_live_count() == live0);
    free(file);
}

static void test_footer_json_file(void)
{
    if (!load_corpus()) {
        SKIP("no testdata");
    }
    int64_t live0 = hs_mem_live_count();
    for (int i = 0; i < n_corpus; i++) {
        hs_error err = {0};
        char *s = hs_parquet_footer_json(corpus[i], &err);
        if (!s)
            fprintf(stderr, "%s: %s\n", corpus[i], err.msg);
        CHECK(s != NULL);
        if (!s)
            continue;
        json_error_t jerr;
        json_t *root = json_loads(s, 0, &jerr);
        if (!root)
            fprintf(stderr, "%s: bad JSON: %s\n", corpus[i], jerr.text);
        CHECK(root != NULL);
        json_decref(root);
        hs_string_free(s);
    }
    hs_error err = {0};
    CHECK(hs_parquet_footer_json("/nonexistent/x.parquet", &err) == NULL);
    CHECK(err.code == HS_NOT_FOUND);
    CHECK(hs_mem_live_count() == live0);
}

int main(void)
{
    HS_RUN(test_handbuilt_file_meta);
    HS_RUN(test_handbuilt_pages);
    HS_RUN(test_raw_bytes_and_unknown_fields);
    HS_RUN(test_hostile);
    HS_RUN(test_corpus_footers);
    HS_RUN(test_bad_data);
    HS_RUN(test_truncations);
    HS_RUN(test_bit_flips);
    HS_RUN(test_oom);
    HS_RUN(test_footer_json_file);
    for (int i = 0; i < n_corpus; i++)
        free(corpus[i]);
    return hs_test_summary();
}

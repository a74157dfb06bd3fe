/*
 * parquet/reader.c - Parquet files into column batches.
 *
 * File layout read here:
 *
 *   offset            bytes     content
 *   0                 4         "PAR1"
 *   chunk start       ...       column chunks: [dictionary page] data pages...
 *                               (chunk start = min(dictionary_page_offset,
 *                               data_page_offset) when the former is >= 4)
 *   ...               ...       ColumnIndex / OffsetIndex blobs (page index)
 *   size-8-F          F         FileMetaData (thrift compact)
 *   size-8            4         F, little-endian
 *   size-4            4         "PAR1"
 *
 *   page = PageHeader (thrift) + body of compressed_page_size bytes
 *   v1 body (all compressed): [rep levels: u32 len + RLE] [def levels: same] [values]
 *   v2 body: [rep levels RLE, rep_len bytes][def levels, def_len bytes] -- never
 *            compressed -- then the values, compressed when is_compressed.
 *
 * What every scan of a file shares (footer, schema mapping, the file's
 * mapping, decoded page indexes and page notes, dictionaries) and the pool
 * of cursor buffers live in parquet/footer.c.  This file reads pages with
 * column chunk cursors (reader_cur.h); the scan that drives them (row
 * groups, selections, batches) is parquet/reader_scan.c.
 *
 * Scanning (pq_scan): for each chosen row group the scan computes the rows to
 * emit as sorted ranges (all rows, or the caller's bitmap / ranges, minus the
 * pages a prune callback vetoes), then per batch a list of (skip, take) runs.
 * Every projected leaf has a cursor (pq_cursor) that executes the same runs:
 *
 *   sequential mode  the column chunk is read with one range read when it is at
 *                    most 8 MiB, else through an 8 MiB window (a page that is
 *                    larger gets a read of its own); pages are walked in
 *                    order; a page wholly inside a skip whose row
 *                    count is known from its header (flat columns, v2 pages)
 *                    is passed over without decompression.
 *   page mode        with an OffsetIndex and a partial selection: only the
 *                    pages holding wanted rows are read (in place from the
 *                    file's mapping where there is one, else one range read
 *                    each) and decoded, and the dictionary page only when one
 *                    of them is dictionary-encoded (need_dict); others count
 *                    as skipped.  A flat page stored uncompressed with no
 *                    nulls leaves a note in the footer (values offset,
 *                    encoding, count): later scans set it up from the note,
 *                    without its header or levels.  Dictionary indices
 *                    between wanted rows are skipped, not decoded.  A
 *                    compressed page is taken from (or left in) the
 *                    process's cache of decompressed pages (pcache.h),
 *                    and so are the decoded levels of repeated leaves: a
 *                    page that later scans touch again is not
 *                    decompressed or level-decoded again.  Before every
 *                    batch that may touch the mapping, and after it, the
 *                    file's identity is checked (hs_file_check), and a
 *                    truncation during the batch is caught by the SIGBUS
 *                    guard (io/mapguard.c): a file changed since it was
 *                    opened fails with HS_IO, never SIGBUS.
 *
 * Flat leaves of a scan with a selection do not execute runs one by one:
 * pq_cur_gather takes the batch's rows as ranges and, page by page, reads the
 * wanted rows by random access inside the page (see "gathering" below), so
 * a scattered selection costs per page and per selected row only.
 *
 * A decoded page holds its levels (uint16, whole page) and a value source:
 * PLAIN read in place, dictionary indices through a resumable RLE decoder
 * gathering from a dictionary converted once to the output representation,
 * or (DELTA_*, BYTE_STREAM_SPLIT, RLE booleans) values decoded for the whole
 * page by parquet/encoding.c.  Values go straight into the output column
 * buffers: fixed-width values are decoded densely at the slot position and
 * spread backwards over null slots; strings are appended slot by slot.  A
 * compressed PLAIN page of a flat required leaf stored as it is output
 * (ints, floats, dates), read sequentially and wholly inside the current
 * run, is decompressed at its slot position itself (direct_offer): no
 * page buffer, no copy.
 *
 * Assembly of levels into validity/offsets/children follows the rules in
 * reader_int.h.  Required flat columns do no level work; optional flat
 * columns turn def levels into validity; everything else takes the general
 * loop over the leaf's path, with these shortcuts (pq_read_no_fast_paths
 * turns them off for tests):
 *
 *   page condition                          shortcut
 *   def levels all max_def (one RLE run:    def not decoded (else checked
 *     seen in the encoded bytes)            after decoding); c->def = NULL:
 *                                           every entry is a present value
 *   + top-level list leaf (depth 2)         assemble_list_dense: values in one
 *                                           piece, offsets at r == 0, no per-
 *                                           entry work, no validity writes
 *   + rep = whole rows of one width w       c->fixed_w = w: rows counted and
 *     (0 then w-1 ones; w = the fixed        offsets written arithmetically
 *     size, or the first row's length)
 *
 * Validity bitmaps stay absent (data NULL = all valid) until a slot is null.
 * Output buffers of 8 MiB or more are advised MADV_HUGEPAGE: they are fresh
 * memory each batch, and 4 KiB page faults were a large share of a scan of
 * wide (embedding) columns.
 *
 * A node is filled by the first leaf below it
 * (its "owner"); later leaves of the same struct only fill their own nodes,
 * and the finished batch is checked for agreement (lengths, offsets).
 *
 * Bounds on untrusted input: chunk ranges inside the file, page bodies inside
 * the chunk, uncompressed pages <= pq_max_page_bytes (1 GiB) and no larger
 * than their codec can produce from their compressed bytes
 * (pq_page_decompress), uncompressed == compressed when
 * uncompressed, value counts per page <= 2^26 and consistent with levels and
 * value bytes, dictionary indices < dictionary size, levels <= their maxima,
 * rows start with repetition level 0.  Errors name file, row group, column
 * and page offset.
 */
#include "parquet/reader.h"

#include "base/compress.h"
#include "base/mem.h"
#include "parquet/encoding.h"
#include "parquet/footer.h"
#include "parquet/pcache.h"
#include "parquet/reader_cur.h"
#include "parquet/reader_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PQ_MAX_PAGE_VALUES ((int64_t)1 << 26)
#define PQ_IDX_CHUNK 1024
/* Bytes past the end of a decoded string dictionary (zeroed) and of a string
 * column's values that leaf_emit_bytes may write/read with whole 16-byte moves. */
#define PQ_DICT_SLACK 16
#define PQ_WINDOW ((size_t)8 << 20)  /* sequential read window */

bool pq_read_no_fast_paths;

static uint32_t rd_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ===================================================================== */
/* reader                                                                 */
/* ===================================================================== */

/* created_by "parquet-mr" without a version, or "parquet-mr version X.Y.Z" with X.Y.Z < 1.2.9 */
static bool is_old_parquet_mr(const char *cb)
{
    if (!cb || strncmp(cb, "parquet-mr", 10) != 0)
        return false;
    const char *v = strstr(cb, "version ");
    if (!v)
        return true;
    int a = 0, b = 0, c = 0;
    if (sscanf(v + 8, "%d.%d.%d", &a, &b, &c) < 1)
        return true;
    return a < 1 || (a == 1 && (b < 2 || (b == 2 && c < 9)));
}

hs_status pq_reader_open(hs_file *f, pq_reader **out, hs_error *err)
{
    *out = NULL;
    pq_reader *r = hs_calloc(1, sizeof *r);
    if (!r)
        return hs_err_nomem(err, sizeof *r);
    r->f = f;
    r->fname = f->name ? f->name : "";
    hs_status st = pq_footer_get(f, &r->ft, err);
    if (st != HS_OK) {
        hs_free(r);
        return st;
    }
    r->old_parquet_mr = is_old_parquet_mr(r->ft->meta.created_by);
    *out = r;
    return HS_OK;
}

void pq_reader_close(pq_reader *r)
{
    if (!r)
        return;
    pq_footer_release(r->ft);
    hs_arena_destroy(&r->arena);
    pq_fpidx_free(r->own);
    hs_free(r->pidx);
    hs_free(r);
}

const pq_file_meta *pq_reader_meta(const pq_reader *r) { return &r->ft->meta; }
const hs_field *pq_reader_schema(const pq_reader *r) { return &r->ft->schema.root; }
int64_t pq_reader_num_rows(const pq_reader *r)
{
    int64_t n = 0;
    for (int g = 0; g < r->ft->meta.n_row_groups; g++)
        n += r->ft->meta.row_groups[g].num_rows;
    return n;
}
int pq_reader_num_row_groups(const pq_reader *r) { return r->ft->meta.n_row_groups; }

void pq_reader_leaves_of(const pq_reader *r, int top_column, int *first_leaf, int *n_leaves)
{
    const pq_schema_info *s = &r->ft->schema;
    if (top_column < 0 || top_column >= s->n_tops) {
        *first_leaf = 0;
        *n_leaves = 0;
        return;
    }
    *first_leaf = s->tops[top_column].first_leaf;
    *n_leaves = s->tops[top_column].n_leaves;
}

static hs_status read_blob(pq_reader *r, int64_t off, int64_t len, hs_buf *b, const char *what,
                           hs_error *err)
{
    if (off < 4 || len <= 0 || len > (int64_t)r->f->size || (uint64_t)off > r->f->size - (uint64_t)len)
        return HS_CORRUPT_AT(err, "%s: %s at offset %lld, %lld bytes, lies outside the file", r->fname,
                             what, (long long)off, (long long)len);
    return hs_file_read_buf(r->f, (uint64_t)off, (size_t)len, b, err);
}

hs_status pq_reader_page_index(pq_reader *r, int row_group, int leaf, const pq_column_index **ci,
                               const pq_offset_index **oi, hs_error *err)
{
    const pq_file_meta *m = &r->ft->meta;
    int nl = r->ft->schema.n_leaves;
    *ci = NULL;
    *oi = NULL;
    if (row_group < 0 || row_group >= m->n_row_groups || leaf < 0 || leaf >= nl)
        return hs_err_set(err, HS_INVALID, "%s: no column chunk (row group %d, leaf %d)", r->fname,
                          row_group, leaf);
    if (!r->pidx) {
        r->pidx = hs_calloc((size_t)m->n_row_groups * (size_t)nl, sizeof *r->pidx);
        if (!r->pidx)
            return hs_err_nomem(err, (size_t)m->n_row_groups * nl * sizeof *r->pidx);
    }
    size_t slot = (size_t)row_group * nl + leaf;
    pq_pidx *p = &r->pidx[slot];
    if (!p->loaded) {
        /* decoded by an earlier reader of this (cached) file? */
        const pq_fpidx *fe = pq_footer_fpidx(r->ft, slot);
        if (fe) {
            p->oi = fe->oi;
            p->ci = fe->ci;
            p->pinfo = fe->pinfo;
            p->loaded = true;
        }
    }
    if (!p->loaded) {
        const pq_column_chunk *cc = &m->row_groups[row_group].columns[leaf];
        hs_buf b = { 0 };
        hs_status st = HS_OK;
        pq_fpidx *fe = hs_calloc(1, sizeof *fe);
        if (!fe)
            return hs_err_nomem(err, sizeof *fe);
        if (cc->has_offset_index && cc->offset_index_length > 0) {
            pq_offset_index *o = hs_arena_calloc(&fe->arena, 1, sizeof *o);
            if (!o)
                st = hs_err_nomem(err, sizeof *o);
            if (st == HS_OK)
                st = read_blob(r, cc->offset_index_offset, cc->offset_index_length, &b, "offset index", err);
            if (st == HS_OK)
                st = pq_decode_offset_index(b.data, b.len, &fe->arena, o, err);
            if (st == HS_OK)
                p->oi = o;
        }
        if (st == HS_OK && cc->has_column_index && cc->column_index_length > 0) {
            pq_column_index *c = hs_arena_calloc(&fe->arena, 1, sizeof *c);
            if (!c)
                st = hs_err_nomem(err, sizeof *c);
            if (st == HS_OK)
                st = read_blob(r, cc->column_index_offset, cc->column_index_length, &b, "column index", err);
            if (st == HS_OK)
                st = pq_decode_column_index(b.data, b.len, &fe->arena, c, err);
            if (st == HS_OK)
                p->ci = c;
        }
        hs_buf_free(&b);
        if (st != HS_OK) {
            pq_fpidx_free(fe);
            p->oi = NULL;
            p->ci = NULL;
            hs_err_prefix(err, "%s: row group %d, column %s", r->fname, row_group,
                          r->ft->schema.leaves[leaf].dotted);
            return st;
        }
        /* an offset index whose pages are not in order is useless: ignore it */
        if (p->oi) {
            const pq_offset_index *o = p->oi;
            bool ok = o->n_pages > 0 && o->pages[0].first_row_index == 0;
            for (int i = 0; ok && i < o->n_pages; i++) {
                const pq_page_location *pl = &o->pages[i];
                if (pl->offset < 4 || pl->compressed_page_size <= 0 ||
                    (uint64_t)pl->offset + (uint64_t)pl->compressed_page_size > r->f->size ||
                    pl->first_row_index < 0 ||
                    pl->first_row_index > m->row_groups[row_group].num_rows ||
                    (i > 0 && pl->first_row_index < o->pages[i - 1].first_row_index))
                    ok = false;
            }
            if (!ok)
                p->oi = NULL;
        }
        if (p->ci && p->oi && p->ci->n_pages != p->oi->n_pages)
            p->ci = NULL;
        fe->oi = p->oi;
        fe->ci = p->ci;
        if (fe->oi)
            fe->pinfo = hs_calloc((size_t)fe->oi->n_pages, sizeof *fe->pinfo);  /* optional */
        /* publish for later readers of the file (or take the one published meanwhile) */
        pq_fpidx *mine = fe;
        fe = pq_footer_fpidx_publish(r->ft, slot, mine);
        if (fe) {
            p->oi = fe->oi;
            p->ci = fe->ci;
            p->pinfo = fe->pinfo;
        } else {
            /* keep the decoded index alive with the reader */
            p->pinfo = NULL;
            if (!r->own) {
                r->own = mine;
            } else {
                pq_fpidx_free(mine);
                p->oi = NULL;   /* rare (out of memory): read without the page index */
                p->ci = NULL;
            }
        }
        p->loaded = true;
    }
    *ci = p->ci;
    *oi = p->oi;
    return HS_OK;
}

/* ===================================================================== */
/* output column buffers                                                  */
/* ===================================================================== */


hs_status pq_cb_reserve(hs_colbuf *b, size_t need)
{
    if (need <= b->cap && b->data)
        return HS_OK;
    size_t nc = b->cap ? b->cap : 64;
    while (nc < need) {
        if (nc > ((size_t)1 << 40))
            return HS_NOMEM;
        nc *= 2;
    }
    uint8_t *p = hs_malloc_aligned(nc);
    if (!p)
        return HS_NOMEM;
    hs_mem_advise_huge(p, nc);
    if (b->data && b->len)
        memcpy(p, b->data, b->len);
    if (b->data)
        hs_free_aligned(b->data);
    b->data = p;
    b->cap = nc;
    return HS_OK;
}

/* Room for `add` more slots of column c (validity when nullable, offsets when
 * the type has them); keeps len fields in step with c->length. */
hs_status pq_col_prep(hs_column *c, bool nullable, int64_t add)
{
    int64_t n = c->length + add;
    if (nullable) {
        size_t vb = (size_t)((n + 7) / 8);
        bool fresh = c->validity.data == NULL;
        if (pq_cb_reserve(&c->validity, vb) != HS_OK)
            return HS_NOMEM;
        if (fresh) {  /* rows so far were all valid */
            memset(c->validity.data, 0xff, (size_t)((c->length + 7) / 8));
            c->validity.len = (size_t)((c->length + 7) / 8);
        }
    }
    if (c->type == HS_TYPE_LIST || c->type == HS_TYPE_MAP || c->type == HS_TYPE_FIXED_LIST ||
        c->type == HS_TYPE_STRING || c->type == HS_TYPE_BINARY) {
        if (pq_cb_reserve(&c->offsets, (size_t)(n + 1) * 4) != HS_OK)
            return HS_NOMEM;
        if (c->length == 0) {
            ((int32_t *)c->offsets.data)[0] = 0;
            if (c->offsets.len < 4)
                c->offsets.len = 4;
        }
    }
    return HS_OK;
}

static inline void put_bit(uint8_t *bits, int64_t i, bool v)
{
    if (v)
        hs_bit_set(bits, i);
    else
        hs_bit_clear(bits, i);
}

/* ===================================================================== */
/* value conversion                                                       */
/* ===================================================================== */

static bool be_to_dec(const uint8_t *p, size_t len, uint8_t *out)
{
    if (len == 0) {
        memset(out, 0, 16);
        return true;
    }
    uint8_t fill = (p[0] & 0x80) ? 0xff : 0;
    if (len > 16) {
        for (size_t i = 0; i < len - 16; i++)
            if (p[i] != fill)
                return false;
        p += len - 16;
        len = 16;
        if ((p[0] & 0x80 ? 0xff : 0) != fill)
            return false;
    }
    for (size_t i = 0; i < 16; i++)
        out[i] = i < len ? p[len - 1 - i] : fill;
    return true;
}

static void int_to_dec(int64_t v, uint8_t *out)
{
    uint64_t lo = (uint64_t)v, hi = v < 0 ? ~(uint64_t)0 : 0;
    memcpy(out, &lo, 8);
    memcpy(out + 8, &hi, 8);
}

/* k physical fixed-width values at src -> output representation at dst. */
static bool conv_fixed(pq_conv cv, int pw, const uint8_t *src, int64_t k, uint8_t *dst)
{
    int64_t i;
    switch (cv) {
    case PQ_CV_I32_TO_I8:
        for (i = 0; i < k; i++) {
            int32_t v;
            memcpy(&v, src + 4 * i, 4);
            dst[i] = (uint8_t)v;
        }
        return true;
    case PQ_CV_I32_TO_I16:
        for (i = 0; i < k; i++) {
            int32_t v;
            memcpy(&v, src + 4 * i, 4);
            uint16_t u = (uint16_t)v;
            memcpy(dst + 2 * i, &u, 2);
        }
        return true;
    case PQ_CV_INT96_TO_NS:
        for (i = 0; i < k; i++) {
            uint64_t nanos;
            uint32_t jd;
            memcpy(&nanos, src + 12 * i, 8);
            memcpy(&jd, src + 12 * i + 8, 4);
            uint64_t v = (uint64_t)((int64_t)jd - 2440588) * 86400000000000ull + nanos;
            memcpy(dst + 8 * i, &v, 8);
        }
        return true;
    case PQ_CV_I32_TO_DEC:
        for (i = 0; i < k; i++) {
            int32_t v;
            memcpy(&v, src + 4 * i, 4);
            int_to_dec(v, dst + 16 * i);
        }
        return true;
    case PQ_CV_I64_TO_DEC:
        for (i = 0; i < k; i++) {
            int64_t v;
            memcpy(&v, src + 8 * i, 8);
            int_to_dec(v, dst + 16 * i);
        }
        return true;
    case PQ_CV_BE_TO_DEC:
        for (i = 0; i < k; i++)
            if (!be_to_dec(src + (size_t)pw * i, (size_t)pw, dst + 16 * i))
                return false;
        return true;
    default:
        if (k > 0)
            memcpy(dst, src, (size_t)k * pw);
        return true;
    }
}

/* One byte-array-like value -> output representation (fixed outputs only). */
static bool conv_view(pq_conv cv, int out_w, const uint8_t *p, size_t len, uint8_t *dst)
{
    if (cv == PQ_CV_BE_TO_DEC)
        return be_to_dec(p, len, dst);
    if (len != (size_t)out_w)
        return false;
    memcpy(dst, p, len);
    return true;
}

/* ===================================================================== */
/* column chunk cursor                                                    */
/* ===================================================================== */


void pq_cursor_free(pq_cursor *c)
{
    pq_pc_release(c->page_ref);
    c->page_ref = NULL;
    pq_pc_release(c->lvl_ref);
    c->lvl_ref = NULL;
    pq_bufpool_give(&c->chunk);
    hs_arena_destroy(&c->hdr_arena);
    hs_buf_free(&c->dict_vals);
    hs_buf_free(&c->dict_offs);
    hs_buf_free(&c->dict_bytes);
    pq_bufpool_give(&c->dict_raw);
    pq_bufpool_give(&c->dict_page);
    pq_bufpool_give(&c->page_buf);
    hs_buf_free(&c->g_vix);
    hs_buf_free(&c->g_idx);
    hs_buf_free(&c->g_off);
    hs_buf_free(&c->g_pieces);
    hs_buf_free(&c->def_buf);
    hs_buf_free(&c->rep_buf);
    hs_buf_free(&c->staged);
    hs_buf_free(&c->scratch);
    hs_buf_free(&c->hv);
    hs_buf_free(&c->tmp);
    hs_buf_free(&c->bools);
    hs_buf_free(&c->vd_dict);
    hs_buf_free(&c->vd_out);
}

hs_status pq_cursor_ctx(pq_cursor *c, hs_status st, hs_error *err)
{
    if (st != HS_OK)
        hs_err_prefix(err, "%s: row group %d, column %s, page at offset %llu", c->r->fname, c->rg,
                      c->leaf->dotted, (unsigned long long)c->page_off);
    return st;
}

/* Bytes of a page body: decompresses src into dst unless uncompressed. */
static hs_status page_body_to(pq_cursor *c, hs_buf *dst, const uint8_t *src, size_t src_len,
                              size_t unc_len, bool compressed, const uint8_t **out, hs_error *err)
{
    if (!compressed || c->codec == HS_CODEC_NONE) {
        if (src_len != unc_len)
            return HS_CORRUPT_AT(err, "uncompressed page claims %zu bytes but holds %zu", unc_len,
                                 src_len);
        *out = src;
        return HS_OK;
    }
    if (unc_len == 0) {
        *out = src;
        return HS_OK;
    }
    hs_buf_reset(dst);
    pq_bufpool_take(dst, unc_len + 8);
    HS_TRY(pq_page_decompress(c->codec, src, src_len, unc_len, dst, err));
    *out = dst->data;
    return HS_OK;
}

/* Bytes of the current page body (into page_buf when compressed).  Page
 * mode takes compressed bodies from the process's page cache (pcache.h),
 * keyed by the file's identity and the page's offset, and leaves there what
 * it decompresses: a page read again by a later selective scan is not
 * decompressed again.  The cursor holds the entry until its next page. */
static hs_status page_body(pq_cursor *c, const uint8_t *src, size_t src_len, size_t unc_len,
                           bool compressed, const uint8_t **out, hs_error *err)
{
    pq_pc_release(c->page_ref);
    c->page_ref = NULL;
    const pq_footer *ft = c->r->ft;
    if (!c->page_mode || !compressed || c->codec == HS_CODEC_NONE || unc_len == 0 ||
        ft->id.kind == HS_FILE_ID_NONE || pq_page_cache_budget() == 0)
        return page_body_to(c, &c->page_buf, src, src_len, unc_len, compressed, out, err);
    pq_pc_key key = { .id = ft->id, .size = ft->size, .off = c->page_off };
    pq_pc_ref *ref = pq_page_cache_get(&key);
    if (!ref) {
        /* exactly the page (+ padding): hs_buf growth would round it up to a
         * power of two, and the cache counts what is allocated */
        hs_buf b = { .data = hs_malloc(unc_len + 9), .cap = unc_len + 9 };
        if (!b.data)
            return hs_err_nomem(err, unc_len);
        hs_status st = pq_page_decompress(c->codec, src, src_len, unc_len, &b, err);
        if (st != HS_OK) {
            hs_buf_free(&b);
            return st;
        }
        ref = pq_page_cache_put(&key, &b);
        if (!ref) {   /* not cached (too large, out of memory): the cursor's buffer */
            hs_buf_free(&c->page_buf);
            c->page_buf = b;
            *out = c->page_buf.data;
            return HS_OK;
        }
        hs_buf_free(&b);
    }
    size_t len = 0;
    const uint8_t *p = pq_pc_data(ref, &len);
    if (len != unc_len) {   /* the same page of the same file: cannot differ */
        pq_pc_release(ref);
        return hs_err_set(err, HS_INTERNAL, "cached page holds %zu bytes, its header claims %zu",
                          len, unc_len);
    }
    c->page_ref = ref;
    *out = p;
    return HS_OK;
}

/* The chunk's dictionary from the footer's cache, if there; true when found. */
static bool dict_from_cache(pq_cursor *c)
{
    pq_footer *ft = c->r->ft;
    const pq_dict *d = pq_footer_dict(ft, (size_t)c->rg * (size_t)ft->schema.n_leaves +
                                              (size_t)c->leaf_index);
    if (!d)
        return false;
    c->has_dict = true;
    c->dict_n = d->n;
    c->dv = d->vals.data;
    c->doff = (const uint32_t *)d->offs.data;
    c->dbytes = d->bytes.data;
    return true;
}

/* Moves the dictionary the cursor just decoded into the footer's cache
 * (within the budget; the cursor keeps pointing at the same bytes, now
 * owned by the footer, which outlives the cursor's reader). */
static void dict_publish(pq_cursor *c)
{
    pq_footer *ft = c->r->ft;
    pq_footer_dict_adopt(ft, (size_t)c->rg * (size_t)ft->schema.n_leaves + (size_t)c->leaf_index,
                         c->dict_n, &c->dict_vals, &c->dict_offs, &c->dict_bytes);
}

/* Dictionary page body (already decompressed) -> dict_* buffers. */
static hs_status load_dict(pq_cursor *c, const pq_page_header *h, const uint8_t *p, size_t len,
                           hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    const pq_schema_element *e = lf->elem;
    if (c->has_dict)
        return HS_CORRUPT_AT(err, "second dictionary page in one column chunk");
    if (!h->has_dict)
        return HS_CORRUPT_AT(err, "dictionary page without a dictionary page header");
    int32_t n = h->dict.num_values;
    if (n < 0)
        return HS_CORRUPT_AT(err, "dictionary page claims %d values", (int)n);
    if (h->dict.encoding != PQ_ENC_PLAIN && h->dict.encoding != PQ_ENC_PLAIN_DICTIONARY)
        return hs_err_set(err, HS_UNSUPPORTED, "dictionary page encoding %d", (int)h->dict.encoding);
    hs_buf_reset(&c->dict_vals);
    hs_buf_reset(&c->dict_offs);
    hs_buf_reset(&c->dict_bytes);
    if (lf->conv == PQ_CV_NULL) {
        c->has_dict = true;
        c->dict_n = (uint32_t)n;
        c->dv = NULL;
        c->doff = NULL;
        c->dbytes = NULL;
        return HS_OK;
    }
    if (e->type == PQ_BOOLEAN)
        return hs_err_set(err, HS_UNSUPPORTED, "dictionary-encoded BOOLEAN column");
    if (e->type == PQ_BYTE_ARRAY) {
        if ((uint64_t)n * 4 > len)
            return HS_CORRUPT_AT(err, "dictionary of %d byte arrays in %zu bytes", (int)n, len);
        bool to_dec = lf->conv == PQ_CV_BE_TO_DEC;
        if (hs_buf_reserve(&c->dict_offs, ((size_t)n + 1) * 4) != HS_OK ||
            (to_dec && hs_buf_reserve(&c->dict_vals, (size_t)n * 16) != HS_OK) ||
            (!to_dec && hs_buf_reserve(&c->dict_bytes, len + PQ_DICT_SLACK) != HS_OK))
            return hs_err_nomem(err, len);
        uint32_t *offs = (uint32_t *)c->dict_offs.data;
        size_t pos = 0, out = 0;
        offs[0] = 0;
        for (int32_t i = 0; i < n; i++) {
            if (len - pos < 4)
                return HS_CORRUPT_AT(err, "dictionary value %d runs past the page", (int)i);
            uint32_t l = rd_u32le(p + pos);
            pos += 4;
            if (l > len - pos)
                return HS_CORRUPT_AT(err, "dictionary value %d claims %u bytes, %zu left", (int)i, l,
                                     len - pos);
            if (to_dec) {
                if (!be_to_dec(p + pos, l, c->dict_vals.data + 16 * (size_t)i))
                    return HS_CORRUPT_AT(err, "decimal dictionary value %d does not fit 128 bits", (int)i);
            } else {
                memcpy(c->dict_bytes.data + out, p + pos, l);
                out += l;
            }
            pos += l;
            offs[i + 1] = (uint32_t)out;
        }
        c->dict_offs.len = ((size_t)n + 1) * 4;
        if (!to_dec)  /* the slack is read by leaf_emit_bytes's 16-byte copies */
            memset(c->dict_bytes.data + out, 0, PQ_DICT_SLACK);
        c->dict_bytes.len = out;
        c->dict_vals.len = to_dec ? (size_t)n * 16 : 0;
    } else {
        int pw = lf->phys_width;
        if ((uint64_t)n * (uint64_t)pw > len)
            return HS_CORRUPT_AT(err, "dictionary of %d values of %d bytes in %zu bytes", (int)n, pw, len);
        size_t need = (size_t)n * (size_t)lf->out_width;
        if (hs_buf_reserve(&c->dict_vals, need + 16) != HS_OK)
            return hs_err_nomem(err, need);
        if (!conv_fixed(lf->conv, pw, p, n, c->dict_vals.data))
            return HS_CORRUPT_AT(err, "decimal dictionary value does not fit 128 bits");
        c->dict_vals.len = need;
    }
    c->has_dict = true;
    c->dict_n = (uint32_t)n;
    c->dv = c->dict_vals.data;
    c->doff = (const uint32_t *)c->dict_offs.data;
    c->dbytes = c->dict_bytes.data;
    dict_publish(c);
    return HS_OK;
}

static hs_status levels_check(const uint16_t *lv, int64_t n, int max, const char *what, hs_error *err)
{
    if ((max & (max + 1)) == 0)
        return HS_OK;  /* 2^k - 1: the bit width cannot express anything larger */
    uint16_t m = 0;
    for (int64_t i = 0; i < n; i++)
        m = lv[i] > m ? lv[i] : m;
    if (m > max)
        return HS_CORRUPT_AT(err, "%s level above its maximum %d", what, max);
    return HS_OK;
}

/* OR of lv[i] ^ v over [0, n): 0 iff every level is v (four at a time). */
static uint64_t levels_diff(const uint16_t *lv, int64_t n, uint16_t v)
{
    uint64_t x = v * 0x0001000100010001ULL, bad = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint64_t t;
        memcpy(&t, lv + i, 8);
        bad |= t ^ x;
    }
    for (; i < n; i++)
        bad |= (uint64_t)(lv[i] ^ v);
    return bad;
}

/* *all_max (when not NULL) is set instead of decoding when every level is
 * max (one RLE run); buf is then left alone. */
static hs_status decode_levels(pq_cursor *c, hs_buf *buf, pq_encoding enc, bool prefixed,
                               const uint8_t *p, size_t len, int max, int64_t n, size_t *used,
                               bool *all_max, const char *what, hs_error *err)
{
    if (pq_read_no_fast_paths)
        all_max = NULL;
    if (all_max) {
        *all_max = pq_levels_all_max(enc, prefixed, p, len, max, n, used);
        if (*all_max)
            return HS_OK;
    }
    hs_buf_reset(buf);
    if (hs_buf_reserve(buf, (size_t)n * 2 + 2) != HS_OK)
        return hs_err_nomem(err, (size_t)n * 2);
    if (enc != PQ_ENC_RLE && enc != PQ_ENC_BIT_PACKED)
        return hs_err_set(err, HS_UNSUPPORTED, "%s level encoding %d", what, (int)enc);
    const uint16_t *lv = (const uint16_t *)buf->data;
    HS_TRY(pq_levels_decode(enc, prefixed, p, len, max, n, (uint16_t *)buf->data, used, err));
    HS_TRY(levels_check(lv, n, max, what, err));
    if (all_max && n > 0) {  /* several runs (or bit-packed) that are all max */
        *all_max = levels_diff(lv, n, (uint16_t)max) == 0;
    }
    return HS_OK;
}

/* Sets up the value source of a data page whose levels are decoded. */
static hs_status setup_values(pq_cursor *c, pq_encoding enc, const uint8_t *p, size_t len,
                              hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    const pq_schema_element *e = lf->elem;
    /* values present in the page: counted only where a decoder needs it up
     * front; the in-place sources check their bounds as they read */
    int64_t k = c->lvl_n;
    bool staged = enc == PQ_ENC_DELTA_BINARY_PACKED || enc == PQ_ENC_DELTA_LENGTH_BYTE_ARRAY ||
                  enc == PQ_ENC_DELTA_BYTE_ARRAY || enc == PQ_ENC_BYTE_STREAM_SPLIT;
    if (c->def && staged) {
        k = 0;
        for (int64_t i = 0; i < c->lvl_n; i++)
            k += c->def[i] == lf->max_def;
    }
    c->vp = p;
    c->vlen = len;
    c->vpos = 0;
    c->bitpos = 0;
    c->staged_n = c->staged_pos = 0;
    c->vs = VS_NONE;
    if (k == 0 || (len == 0 && !staged))
        return HS_OK;  /* reads of values, if levels ask for any, fail */
    switch (enc) {
    case PQ_ENC_PLAIN:
        c->vs = e->type == PQ_BOOLEAN ? VS_PLAIN_BOOL : VS_PLAIN;
        return HS_OK;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: {
        if (!c->has_dict)
            return HS_CORRUPT_AT(err, "dictionary-encoded page without a dictionary page");
        int bw = p[0];
        if (bw > 32)
            return HS_CORRUPT_AT(err, "dictionary index bit width %d", bw);
        pq_rle_init(&c->rle, p + 1, len - 1, bw);
        c->vs = VS_DICT;
        return HS_OK;
    }
    case PQ_ENC_RLE:
        if (e->type != PQ_BOOLEAN)
            return hs_err_set(err, HS_UNSUPPORTED, "RLE encoding for a non-BOOLEAN column");
        if (len < 4 || rd_u32le(p) > len - 4)
            return HS_CORRUPT_AT(err, "RLE boolean data length runs past the page");
        pq_rle_init(&c->rle, p + 4, rd_u32le(p), 1);
        c->vs = VS_RLE_BOOL;
        return HS_OK;
    case PQ_ENC_DELTA_BINARY_PACKED:
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY:
    case PQ_ENC_BYTE_STREAM_SPLIT: {
        if (e->type == PQ_BOOLEAN)
            return hs_err_set(err, HS_UNSUPPORTED, "encoding %d for BOOLEAN", (int)enc);
        size_t w = (e->type == PQ_BYTE_ARRAY || e->type == PQ_FIXED_LEN_BYTE_ARRAY)
                       ? sizeof(pq_bytes) : (size_t)lf->phys_width;
        hs_buf_reset(&c->staged);
        hs_buf_reset(&c->scratch);
        if (hs_buf_reserve(&c->staged, (size_t)k * w + 8) != HS_OK)
            return hs_err_nomem(err, (size_t)k * w);
        HS_TRY(pq_values_decode(enc, e->type, e->type_length, p, len, k, c->staged.data, &c->scratch,
                                err));
        c->staged_n = k;
        c->vs = VS_STAGED;
        return HS_OK;
    }
    default:
        return hs_err_set(err, HS_UNSUPPORTED, "value encoding %d", (int)enc);
    }
}

/* The width of the top-level fixed_size_list whose element is this leaf
 * (and that it owns), else 0. */
static int32_t fixed_width_of(const pq_cursor *c)
{
    const pq_leaf *lf = c->leaf;
    const pq_anode *L = lf->path[0];
    if (lf->depth != 2 || c->own_from != 0 || L->kind != PQ_AN_LIST || lf->max_rep != 1 ||
        L->type != HS_TYPE_FIXED_LIST || L->width <= 0)
        return 0;
    return L->width;
}

/* Width w when the leaf is the element of a top-level list (or
 * fixed_size_list) that it owns and rep[0..n) is whole rows of w entries
 * each (0, then w-1 ones), w = the fixed width or the first row's length;
 * else 0.  Only used on pages whose def levels are all max_def. */
static int32_t dense_fixed_width(const pq_cursor *c, const uint16_t *rep, int64_t n)
{
    const pq_leaf *lf = c->leaf;
    const pq_anode *L = lf->path[0];
    if (lf->depth != 2 || c->own_from != 0 || L->kind != PQ_AN_LIST || lf->max_rep != 1 ||
        rep[0] != 0)
        return 0;
    int64_t w = 1;
    if (L->type == HS_TYPE_FIXED_LIST) {
        w = L->width;
    } else {
        while (w < n && rep[w] != 0)
            w++;
    }
    if (w <= 0 || w > INT32_MAX || n % w != 0)
        return 0;
    uint64_t bad = 0;
    for (int64_t r = 0; r < n && !bad; r += w)
        bad |= rep[r] | levels_diff(rep + r + 1, w - 1, 1);
    return bad ? 0 : (int32_t)w;
}

/*
 * Decoded levels of repeated leaves in the page cache.  A take of one row of
 * a list column must find the row among the page's level entries, and
 * decoding the levels of a 20000-row page costs more than the row; page
 * mode keeps them beside the decompressed body, under the same file
 * identity and page offset with the top bit set:
 *
 *   bytes                  content
 *   0   (pq_lvl_note)      level entries, bytes the levels take in the body
 *                          (v1: offset of the values), the shortcuts found
 *   32  n x uint16         repetition levels (when has_rep)
 *   ..  n x uint16         definition levels (when has_def)
 */
typedef struct pq_lvl_note {
    int64_t n;
    uint64_t pos;
    int32_t rep_rows;
    uint8_t has_rep, has_def, def_all, pad;
    uint64_t pad2;
} pq_lvl_note;

static bool lvl_cacheable(const pq_cursor *c)
{
    return c->page_mode && c->leaf->max_rep > 0 && !pq_read_no_fast_paths &&
           c->r->ft->id.kind != HS_FILE_ID_NONE && pq_page_cache_budget() > 0;
}

static pq_pc_key lvl_key(const pq_cursor *c)
{
    pq_pc_key k = { .id = c->r->ft->id, .size = c->r->ft->size,
                    .off = c->page_off | ((uint64_t)1 << 63) };
    return k;
}

/* The page's levels from the cache: true and the note set when found (the
 * cursor then holds the entry in lvl_ref). */
static bool lvl_lookup(pq_cursor *c, int64_t n, const pq_lvl_note **note)
{
    pq_pc_release(c->lvl_ref);
    c->lvl_ref = NULL;
    if (!lvl_cacheable(c))
        return false;
    pq_pc_key k = lvl_key(c);
    pq_pc_ref *r = pq_page_cache_get(&k);
    if (!r)
        return false;
    size_t len = 0;
    const pq_lvl_note *nt = (const pq_lvl_note *)pq_pc_data(r, &len);
    size_t need = sizeof *nt + (nt->has_rep + nt->has_def) * (size_t)nt->n * 2;
    if (len < sizeof *nt || len != need || nt->n != n) {   /* cannot happen: the same page */
        pq_pc_release(r);
        return false;
    }
    c->lvl_ref = r;
    *note = nt;
    return true;
}

/* Leaves what decode_data_page found of the page's levels in the cache. */
static void lvl_store(pq_cursor *c, int64_t n, size_t pos, int32_t rep_rows, bool def_all)
{
    if (!lvl_cacheable(c))
        return;
    const pq_leaf *lf = c->leaf;
    pq_lvl_note nt = { .n = n, .pos = pos, .rep_rows = rep_rows,
                       .has_rep = lf->max_rep > 0 && !rep_rows,
                       .has_def = lf->max_def > 0 && !def_all, .def_all = def_all };
    size_t len = sizeof nt + (nt.has_rep + nt.has_def) * (size_t)n * 2;
    hs_buf b = { .data = hs_malloc(len), .cap = len };   /* exact: the cache counts cap */
    if (!b.data)
        return;
    memcpy(b.data, &nt, sizeof nt);
    uint8_t *w = b.data + sizeof nt;
    if (nt.has_rep) {
        memcpy(w, c->rep_buf.data, (size_t)n * 2);
        w += (size_t)n * 2;
    }
    if (nt.has_def)
        memcpy(w, c->def_buf.data, (size_t)n * 2);
    b.len = len;
    pq_pc_key k = lvl_key(c);
    pq_pc_release(pq_page_cache_put(&k, &b));
    hs_buf_free(&b);
}

/* Decodes the data page whose header is h and whose body is src[0..src_len). */
static hs_status decode_data_page(pq_cursor *c, const pq_page_header *h, const uint8_t *src,
                                  size_t src_len, hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    int64_t n;
    size_t unc = (size_t)h->uncompressed_page_size;
    const uint8_t *vals;
    size_t vlen;
    pq_encoding enc;
    bool def_all = false;  /* every def level is max_def: c->def stays NULL */
    int32_t rep_rows = 0;  /* > 0: rep levels checked to be whole rows of this width, not decoded */
    const pq_lvl_note *lnote = NULL;   /* levels from the page cache */
    c->stats->pages_decoded++;
    if (h->type == PQ_PAGE_DATA) {
        if (!h->has_data)
            return HS_CORRUPT_AT(err, "data page without a data page header");
        n = h->data.num_values;
        if (n < 0 || n > PQ_MAX_PAGE_VALUES)
            return HS_CORRUPT_AT(err, "data page claims %lld values", (long long)n);
        const uint8_t *p = NULL;
        uint8_t *direct = c->direct;
        c->direct = NULL;
        if (direct && h->data.encoding == PQ_ENC_PLAIN && n <= c->direct_n &&
            (uint64_t)n * (uint64_t)lf->phys_width == unc && unc > 0 && !c->page_mode &&
            c->codec != HS_CODEC_NONE && c->codec != HS_CODEC_BROTLI) {
            /* the values go where vs_read_fixed would copy them (see
             * pq_cur_rows): no copy, no page_buf */
            hs_buf out = { .data = direct, .cap = unc + 9 };
            pq_pc_release(c->page_ref);
            c->page_ref = NULL;
            HS_TRY(pq_page_decompress(c->codec, src, src_len, unc, &out, err));
            p = direct;
            c->stats->pages_in_place++;
        } else {
            HS_TRY(page_body(c, src, src_len, unc, true, &p, err));
        }
        size_t pos = 0, used = 0;
        if (lvl_lookup(c, n, &lnote)) {
            pos = (size_t)lnote->pos;
            rep_rows = lnote->rep_rows;
            def_all = lnote->def_all;
            if (pos > unc)
                return HS_CORRUPT_AT(err, "levels overrun the page");
        } else {
        if (lf->max_rep > 0) {
            /* whole rows of a fixed_size_list with all def levels at max: the
             * rep levels are checked in their encoded form, never decoded */
            int32_t fw = fixed_width_of(c);
            size_t du = 0;
            if (fw > 0 && h->data.rep_encoding == PQ_ENC_RLE && unc >= 4 &&
                rd_u32le(p) <= unc - 4 && !pq_read_no_fast_paths &&
                pq_levels_all_max(h->data.def_encoding, true, p + 4 + rd_u32le(p),
                                  unc - 4 - rd_u32le(p), lf->max_def, n, &du) &&
                pq_levels_periodic(PQ_ENC_RLE, true, p, unc, n, fw, &used))
                rep_rows = fw;
            else
                HS_TRY(decode_levels(c, &c->rep_buf, h->data.rep_encoding, true, p, unc,
                                     lf->max_rep, n, &used, NULL, "repetition", err));
            pos += used;
        }
        if (lf->max_def > 0) {
            HS_TRY(decode_levels(c, &c->def_buf, h->data.def_encoding, true, p + pos, unc - pos,
                                 lf->max_def, n, &used, &def_all, "definition", err));
            pos += used;
        }
        if (pos > unc)
            return HS_CORRUPT_AT(err, "levels overrun the page");
        lvl_store(c, n, pos, rep_rows, def_all);
        }
        vals = p + pos;
        vlen = unc - pos;
        enc = h->data.encoding;
    } else {
        if (!h->has_data_v2)
            return HS_CORRUPT_AT(err, "v2 data page without its header");
        const pq_data_page_header_v2 *h2 = &h->data_v2;
        n = h2->num_values;
        if (n < 0 || n > PQ_MAX_PAGE_VALUES || h2->num_nulls < 0 || h2->num_nulls > n)
            return HS_CORRUPT_AT(err, "v2 data page claims %lld values, %d nulls", (long long)n,
                                 (int)h2->num_nulls);
        int64_t rl = h2->rep_levels_byte_length, dl = h2->def_levels_byte_length;
        if (rl < 0 || dl < 0 || (uint64_t)(rl + dl) > src_len || (uint64_t)(rl + dl) > unc)
            return HS_CORRUPT_AT(err, "v2 level lengths %lld + %lld exceed the page", (long long)rl,
                                 (long long)dl);
        size_t used = 0;
        if (lvl_lookup(c, n, &lnote)) {
            rep_rows = lnote->rep_rows;
            def_all = lnote->def_all;
        } else {
        int32_t fw = lf->max_rep > 0 ? fixed_width_of(c) : 0;
        size_t du = 0;
        if (fw > 0 && !pq_read_no_fast_paths &&
            pq_levels_all_max(PQ_ENC_RLE, false, src + rl, (size_t)dl, lf->max_def, n, &du) &&
            pq_levels_periodic(PQ_ENC_RLE, false, src, (size_t)rl, n, fw, &used))
            rep_rows = fw;
        else if (lf->max_rep > 0)
            HS_TRY(decode_levels(c, &c->rep_buf, PQ_ENC_RLE, false, src, (size_t)rl, lf->max_rep, n,
                                 &used, NULL, "repetition", err));
        if (lf->max_def > 0)
            HS_TRY(decode_levels(c, &c->def_buf, PQ_ENC_RLE, false, src + rl, (size_t)dl, lf->max_def,
                                 n, &used, &def_all, "definition", err));
        lvl_store(c, n, 0, rep_rows, def_all);
        }
        HS_TRY(page_body(c, src + rl + dl, src_len - (size_t)(rl + dl), unc - (size_t)(rl + dl),
                         h2->is_compressed, &vals, err));
        vlen = unc - (size_t)(rl + dl);
        enc = h2->encoding;
    }
    c->rep = lf->max_rep > 0 && !rep_rows ? (const uint16_t *)c->rep_buf.data : NULL;
    c->def = lf->max_def > 0 && !def_all ? (const uint16_t *)c->def_buf.data : NULL;
    if (lnote) {   /* the levels decoded by an earlier read of this page */
        const uint16_t *lv = (const uint16_t *)(lnote + 1);
        c->rep = lnote->has_rep ? lv : NULL;
        c->def = lnote->has_def ? lv + (lnote->has_rep ? n : 0) : NULL;
    }
    c->fixed_w = 0;
    if (rep_rows > 0 && (c->def || n == 0))
        return hs_err_set(err, HS_INTERNAL, "level shortcuts disagree");  /* cannot happen */
    if (rep_rows > 0)
        c->fixed_w = rep_rows;
    else if (lf->max_rep > 0 && !c->def && n > 0)
        c->fixed_w = dense_fixed_width(c, c->rep, n);
    c->lvl_n = n;
    c->lvl_pos = 0;
    c->values_total += n;
    if (c->rep && n > 0 && c->page_mode && c->rep[0] != 0)
        return HS_CORRUPT_AT(err, "page does not start at a row boundary (repetition level %u)",
                             c->rep[0]);
    c->page_enc = enc;
    HS_TRY(setup_values(c, enc, vals, vlen, err));
    c->in_page = true;
    c->g_ready = false;
    return HS_OK;
}

static hs_status check_header(pq_cursor *c, const pq_page_header *h, size_t avail, hs_error *err)
{
    if (h->compressed_page_size < 0 || (uint64_t)h->compressed_page_size > avail)
        return HS_CORRUPT_AT(err, "page claims %d compressed bytes, %zu left in the column chunk",
                             (int)h->compressed_page_size, avail);
    if (h->uncompressed_page_size < 0 ||
        (uint64_t)h->uncompressed_page_size > (uint64_t)pq_max_page_bytes())
        return HS_CORRUPT_AT(err, "page claims %d uncompressed bytes (at most %zu allowed, "
                             "HS_PARQUET_MAX_PAGE_MB)", (int)h->uncompressed_page_size,
                             pq_max_page_bytes());
    return HS_OK;
}

/* Rows in a data page known from its header without decoding, or -1. */
static int64_t header_rows(const pq_cursor *c, const pq_page_header *h)
{
    if (h->type == PQ_PAGE_DATA && h->has_data && c->leaf->max_rep == 0)
        return h->data.num_values;
    if (h->type == PQ_PAGE_DATA_V2 && h->has_data_v2)
        return c->leaf->max_rep == 0 ? h->data_v2.num_values : h->data_v2.num_rows;
    return -1;
}

/* Sequential mode reads a column chunk through a window of at least
 * PQ_WINDOW bytes (one read for chunks up to that size), so a large chunk
 * never sits in memory whole.  Makes [off, off + need) of the chunk
 * (chunk-relative) available in c->chunk at c->win_off. */
static hs_status seq_window(pq_cursor *c, size_t off, size_t need, hs_error *err)
{
    if (off >= c->win_off && off + need <= c->win_off + c->chunk.len)
        return HS_OK;
    size_t len = c->chunk_total - off;
    if (len > PQ_WINDOW && need <= PQ_WINDOW)
        len = PQ_WINDOW;
    else if (len > PQ_WINDOW)
        len = need;
    pq_bufpool_take(&c->chunk, len);
    HS_TRY(hs_file_read_buf(c->r->f, c->chunk_off + off, len, &c->chunk, err));
    c->stats->bytes_read += (int64_t)len;
    c->win_off = off;
    return HS_OK;
}

/* Sequential mode: moves to the next data page.  While skip_rows > 0, pages
 * wholly inside the skip are passed over undecoded and their rows subtracted
 * from *skip_rows.  *eof when the chunk has no more pages. */
static hs_status seq_next_page(pq_cursor *c, int64_t *skip_rows, bool *eof, hs_error *err)
{
    *eof = false;
    c->in_page = false;
    for (;;) {
        if (c->pos >= c->chunk_total) {
            *eof = true;
            return HS_OK;
        }
        c->page_off = c->chunk_off + c->pos;
        size_t rem = c->chunk_total - c->pos;
        pq_page_header h;
        size_t used = 0;
        /* the header: from what the window holds; a failure with the window
         * short of the chunk's end retries with a larger window */
        size_t want = rem < 65536 ? rem : 65536;
        for (;;) {
            HS_TRY(seq_window(c, c->pos, want, err));
            size_t hav = c->win_off + c->chunk.len - c->pos;
            hs_error e1 = { 0 };
            hs_arena_reset(&c->hdr_arena);
            hs_status hs = pq_decode_page_header(c->chunk.data + (c->pos - c->win_off), hav,
                                                 &c->hdr_arena, &h, &used, &e1);
            if (hs == HS_OK)
                break;
            if (hav >= rem || hs == HS_NOMEM) {
                if (err && err->code == HS_OK)
                    *err = e1;
                return hs;
            }
            want = hav * 8 < rem ? hav * 8 : rem;
        }
        if (used == 0 || used > rem)
            return HS_CORRUPT_AT(err, "page header overruns the column chunk");
        HS_TRY(check_header(c, &h, rem - used, err));
        size_t blen = (size_t)h.compressed_page_size;
        HS_TRY(seq_window(c, c->pos, used + blen, err));
        const uint8_t *body = c->chunk.data + (c->pos - c->win_off) + used;
        c->pos += used + blen;
        if (h.type == PQ_PAGE_DICTIONARY) {
            if (!c->has_dict && dict_from_cache(c))
                continue;  /* decoded by an earlier scan of this file */
            const uint8_t *p = NULL;
            HS_TRY(page_body(c, body, blen, (size_t)h.uncompressed_page_size, true, &p, err));
            HS_TRY(load_dict(c, &h, p, (size_t)h.uncompressed_page_size, err));
            continue;
        }
        if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
            continue;  /* index pages and unknown kinds */
        int64_t hr = header_rows(c, &h);
        if (skip_rows && *skip_rows > 0 && hr >= 0 && hr <= *skip_rows) {
            if (hr < 0 || hr > c->rg_rows - c->row)
                return HS_CORRUPT_AT(err, "page claims %lld rows, %lld left in the row group",
                                     (long long)hr, (long long)(c->rg_rows - c->row));
            *skip_rows -= hr;
            c->row += hr;
            c->values_total += h.type == PQ_PAGE_DATA ? h.data.num_values : h.data_v2.num_values;
            c->stats->pages_skipped++;
            continue;
        }
        return decode_data_page(c, &h, body, blen, err);
    }
}

static hs_status read_dict_region(pq_cursor *c, int64_t start, int64_t end, hs_error *err);

/* Page mode: the dictionary, when the page with header h is dictionary-
 * encoded and it is not loaded yet (from the footer's cache, else read). */
static hs_status need_dict_enc(pq_cursor *c, pq_encoding enc, hs_error *err);

static hs_status need_dict(pq_cursor *c, const pq_page_header *h, hs_error *err)
{
    pq_encoding enc = PQ_ENC_PLAIN;
    if (h->type == PQ_PAGE_DATA && h->has_data)
        enc = h->data.encoding;
    else if (h->type == PQ_PAGE_DATA_V2 && h->has_data_v2)
        enc = h->data_v2.encoding;
    return need_dict_enc(c, enc, err);
}

static hs_status need_dict_enc(pq_cursor *c, pq_encoding enc, hs_error *err)
{
    if (c->has_dict || (enc != PQ_ENC_PLAIN_DICTIONARY && enc != PQ_ENC_RLE_DICTIONARY))
        return HS_OK;
    if (dict_from_cache(c))
        return HS_OK;
    int64_t lo = c->dict_lo, hi = c->dict_hi;
    c->dict_lo = c->dict_hi;   /* read once, found or not */
    uint64_t page_off = c->page_off;
    HS_TRY(read_dict_region(c, lo, hi, err));
    c->page_off = page_off;
    return HS_OK;
}

/* Page mode: reads and decodes OffsetIndex page `pi`. */
static hs_status load_oi_page(pq_cursor *c, int pi, hs_error *err)
{
    const pq_page_location *pl = &c->oi->pages[pi];
    c->in_page = false;
    c->page_off = (uint64_t)pl->offset;
    const uint8_t *pg, *map = pq_footer_map(c->r->ft, c->r->f);
    size_t pg_len = (size_t)pl->compressed_page_size;
    pq_pinfo *pn = map && c->pinfo && !pq_read_no_fast_paths ? &c->pinfo[pi] : NULL;
    if (pn && __atomic_load_n(&pn->state, __ATOMIC_ACQUIRE) == 1) {
        /* seen before: values set up again in place, header and levels untouched */
        pq_encoding enc = (pq_encoding)pn->enc;
        HS_TRY(need_dict_enc(c, enc, err));
        c->stats->bytes_read += pl->compressed_page_size;
        c->stats->pages_decoded++;
        c->chunk_off = (uint64_t)pl->offset;
        c->row = pl->first_row_index;
        c->page_row_end = pi + 1 < c->oi->n_pages ? c->oi->pages[pi + 1].first_row_index : c->rg_rows;
        c->next_page = pi + 1;
        c->rep = c->def = NULL;
        c->fixed_w = 0;
        c->lvl_n = pn->n;
        c->lvl_pos = 0;
        c->values_total += pn->n;
        c->page_enc = enc;
        HS_TRY(setup_values(c, enc, map + pn->voff, pn->vlen, err));
        c->in_page = true;
        c->g_ready = false;
        return HS_OK;
    }
    if (map) {
        /* the mapping: no copy (an uncompressed page is then decoded in place) */
        uint64_t fsz = c->r->f->size;
        if (pl->offset < 0 || pl->compressed_page_size < 0 || (uint64_t)pl->offset > fsz ||
            (uint64_t)pl->compressed_page_size > fsz - (uint64_t)pl->offset)
            return HS_CORRUPT_AT(err, "offset index page at %lld (%d bytes) lies outside the "
                                 "file of %llu bytes", (long long)pl->offset,
                                 (int)pl->compressed_page_size, (unsigned long long)fsz);
        pg = map + pl->offset;
    } else {
        pq_bufpool_take(&c->chunk, pg_len);
        HS_TRY(hs_file_read_buf(c->r->f, (uint64_t)pl->offset, pg_len, &c->chunk, err));
        pg = c->chunk.data;
        pg_len = c->chunk.len;
    }
    c->stats->bytes_read += pl->compressed_page_size;
    c->chunk_off = (uint64_t)pl->offset;
    pq_page_header h;
    size_t used = 0;
    hs_arena_reset(&c->hdr_arena);
    HS_TRY(pq_decode_page_header_ex(pg, pg_len, &c->hdr_arena, true, &h, &used, err));
    if (used > pg_len)
        return HS_CORRUPT_AT(err, "page header overruns the page");
    HS_TRY(check_header(c, &h, pg_len - used, err));
    if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
        return HS_CORRUPT_AT(err, "offset index points at a page of type %d", (int)h.type);
    HS_TRY(need_dict(c, &h, err));
    c->row = pl->first_row_index;
    c->page_row_end = pi + 1 < c->oi->n_pages ? c->oi->pages[pi + 1].first_row_index : c->rg_rows;
    c->next_page = pi + 1;
    HS_TRY(decode_data_page(c, &h, pg + used, (size_t)h.compressed_page_size, err));
    const pq_leaf *lf = c->leaf;
    if (pn && lf->max_rep == 0 && !c->def && c->lvl_n > 0 && c->lvl_n <= INT32_MAX &&
        (c->vs == VS_PLAIN || c->vs == VS_PLAIN_BOOL || c->vs == VS_DICT ||
         c->vs == VS_RLE_BOOL) &&
        c->vp >= map && c->vlen <= UINT32_MAX && c->vp + c->vlen <= map + c->r->f->size) {
        pq_footer_note_page(pn, (int32_t)c->lvl_n, (int32_t)c->page_enc, (uint32_t)c->vlen,
                            (uint64_t)(c->vp - map));
    }
    return HS_OK;
}

/* ---------- value sources ---------- */

static hs_status dict_indices(pq_cursor *c, uint32_t *idx, int64_t m, hs_error *err)
{
    HS_TRY(pq_rle_get_u32(&c->rle, idx, m, err));
    uint32_t bad = 0, n = c->dict_n;
    for (int64_t i = 0; i < m; i++)
        bad |= (uint32_t)(idx[i] >= n);
    if (bad)
        return HS_CORRUPT_AT(err, "dictionary index out of range (dictionary has %u values)", n);
    return HS_OK;
}

static hs_status tmp_room(pq_cursor *c, size_t bytes, hs_error *err)
{
    if (c->tmp.cap < bytes) {
        hs_buf_reset(&c->tmp);
        if (hs_buf_reserve(&c->tmp, bytes) != HS_OK)
            return hs_err_nomem(err, bytes);
    }
    return HS_OK;
}

/* Reads the next PLAIN byte array. */
static inline hs_status plain_ba(pq_cursor *c, const uint8_t **p, uint32_t *l, hs_error *err)
{
    if (c->vlen - c->vpos < 4)
        return HS_CORRUPT_AT(err, "byte array length runs past the page");
    uint32_t n = rd_u32le(c->vp + c->vpos);
    c->vpos += 4;
    if (n > c->vlen - c->vpos)
        return HS_CORRUPT_AT(err, "byte array of %u bytes runs past the page", n);
    *p = c->vp + c->vpos;
    *l = n;
    c->vpos += n;
    return HS_OK;
}

static hs_status vs_need(pq_cursor *c, int64_t k, hs_error *err)
{
    if (k > 0 && c->vs == VS_NONE)
        return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
    if (c->vs == VS_STAGED && k > c->staged_n - c->staged_pos)
        return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
    return HS_OK;
}

/* dst[i] = dictionary value idx[i] (ow bytes each), i < k.  Constant
 * widths copy inline: a 16-byte decimal through memcpy of a variable
 * size was a libc call per value (15% of a sum over l_quantity). */
static void dict_gather(uint8_t *dst, const uint8_t *dv, const uint32_t *idx, int64_t k, int ow)
{
    switch (ow) {
    case 1:
        for (int64_t i = 0; i < k; i++)
            dst[i] = dv[idx[i]];
        break;
    case 2:
        for (int64_t i = 0; i < k; i++)
            memcpy(dst + 2 * i, dv + 2 * (size_t)idx[i], 2);
        break;
    case 4:
        for (int64_t i = 0; i < k; i++)
            memcpy(dst + 4 * i, dv + 4 * (size_t)idx[i], 4);
        break;
    case 8:
        for (int64_t i = 0; i < k; i++)
            memcpy(dst + 8 * i, dv + 8 * (size_t)idx[i], 8);
        break;
    case 16:
        for (int64_t i = 0; i < k; i++)
            memcpy(dst + 16 * i, dv + 16 * (size_t)idx[i], 16);
        break;
    default:
        for (int64_t i = 0; i < k; i++)
            memcpy(dst + (size_t)ow * i, dv + (size_t)ow * idx[i], (size_t)ow);
    }
}

/* k values, dense, into dst (fixed-width output representation). */
static hs_status vs_read_fixed(pq_cursor *c, uint8_t *dst, int64_t k, hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    int ow = lf->out_width, pw = lf->phys_width;
    HS_TRY(vs_need(c, k, err));
    if (k == 0)
        return HS_OK;
    switch (c->vs) {
    case VS_PLAIN:
        if (pw > 0) {
            if ((uint64_t)k * pw > c->vlen - c->vpos)
                return HS_CORRUPT_AT(err, "page holds fewer values than its levels announce");
            if (c->vp + c->vpos == dst && lf->conv == PQ_CV_COPY && pw == ow) {
                c->vpos += (size_t)k * pw;   /* decompressed in place (c->direct) */
                return HS_OK;
            }
            if (!conv_fixed(lf->conv, pw, c->vp + c->vpos, k, dst))
                return HS_CORRUPT_AT(err, "decimal value does not fit 128 bits");
            c->vpos += (size_t)k * pw;
        } else {  /* BYTE_ARRAY decimal */
            for (int64_t i = 0; i < k; i++) {
                const uint8_t *p = NULL;
                uint32_t l = 0;
                HS_TRY(plain_ba(c, &p, &l, err));
                if (!be_to_dec(p, l, dst + (size_t)ow * i))
                    return HS_CORRUPT_AT(err, "decimal value does not fit 128 bits");
            }
        }
        return HS_OK;
    case VS_DICT: {
        HS_TRY(tmp_room(c, PQ_IDX_CHUNK * 4, err));
        uint32_t *idx = (uint32_t *)c->tmp.data;
        const uint8_t *dv = c->dv;
        while (k > 0) {
            int64_t m = k < PQ_IDX_CHUNK ? k : PQ_IDX_CHUNK;
            HS_TRY(dict_indices(c, idx, m, err));
            dict_gather(dst, dv, idx, m, ow);
            dst += (size_t)ow * m;
            k -= m;
        }
        return HS_OK;
    }
    case VS_STAGED:
        if (lf->elem->type == PQ_BYTE_ARRAY || lf->elem->type == PQ_FIXED_LEN_BYTE_ARRAY) {
            const pq_bytes *v = (const pq_bytes *)c->staged.data + c->staged_pos;
            for (int64_t i = 0; i < k; i++)
                if (!conv_view(lf->conv, ow, v[i].p, v[i].len, dst + (size_t)ow * i))
                    return HS_CORRUPT_AT(err, "value of %u bytes does not fit the column type",
                                         v[i].len);
        } else if (!conv_fixed(lf->conv, pw, c->staged.data + (size_t)pw * c->staged_pos, k, dst)) {
            return HS_CORRUPT_AT(err, "value does not fit the column type");
        }
        c->staged_pos += k;
        return HS_OK;
    default:
        return HS_CORRUPT_AT(err, "no values for a fixed-width column");
    }
}

/* k booleans, one byte each, into out. */
static hs_status vs_read_bool(pq_cursor *c, uint8_t *out, int64_t k, hs_error *err)
{
    HS_TRY(vs_need(c, k, err));
    if (k == 0)
        return HS_OK;
    if (c->vs == VS_PLAIN_BOOL) {
        if ((uint64_t)(c->bitpos + k) > (uint64_t)c->vlen * 8)
            return HS_CORRUPT_AT(err, "page holds fewer booleans than its levels announce");
        for (int64_t i = 0; i < k; i++, c->bitpos++)
            out[i] = (c->vp[c->bitpos >> 3] >> (c->bitpos & 7)) & 1;
        return HS_OK;
    }
    if (c->vs == VS_RLE_BOOL) {
        HS_TRY(tmp_room(c, PQ_IDX_CHUNK * 4, err));
        uint32_t *t = (uint32_t *)c->tmp.data;
        while (k > 0) {
            int64_t m = k < PQ_IDX_CHUNK ? k : PQ_IDX_CHUNK;
            HS_TRY(pq_rle_get_u32(&c->rle, t, m, err));
            for (int64_t i = 0; i < m; i++)
                out[i] = t[i] != 0;
            out += m;
            k -= m;
        }
        return HS_OK;
    }
    if (c->vs == VS_STAGED) {
        memcpy(out, c->staged.data + c->staged_pos, (size_t)k);
        c->staged_pos += k;
        return HS_OK;
    }
    return HS_CORRUPT_AT(err, "no values for a boolean column");
}

/* Skips k values. */
static hs_status vs_skip(pq_cursor *c, int64_t k, hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    HS_TRY(vs_need(c, k, err));
    if (k == 0)
        return HS_OK;
    switch (c->vs) {
    case VS_PLAIN:
        if (lf->phys_width > 0) {
            if ((uint64_t)k * lf->phys_width > c->vlen - c->vpos)
                return HS_CORRUPT_AT(err, "page holds fewer values than its levels announce");
            c->vpos += (size_t)k * lf->phys_width;
        } else {
            for (int64_t i = 0; i < k; i++) {
                const uint8_t *p = NULL;
                uint32_t l = 0;
                HS_TRY(plain_ba(c, &p, &l, err));
            }
        }
        return HS_OK;
    case VS_PLAIN_BOOL:
        if ((uint64_t)(c->bitpos + k) > (uint64_t)c->vlen * 8)
            return HS_CORRUPT_AT(err, "page holds fewer booleans than its levels announce");
        c->bitpos += k;
        return HS_OK;
    case VS_DICT:
    case VS_RLE_BOOL:
        /* skipped indices are never used: passed over by whole runs and
         * bit-packed groups, not decoded (nor checked against the
         * dictionary: only emitted values must be in it) */
        return pq_rle_skip(&c->rle, k, err);
    case VS_STAGED:
        c->staged_pos += k;
        return HS_OK;
    default:
        return HS_CORRUPT_AT(err, "no values to skip");
    }
}

/* ---------- leaf output ---------- */

/* Validity bits [base, base + n) from hv (NULL: all set). */
static void write_bits(uint8_t *bits, int64_t base, const uint8_t *hv, int64_t n)
{
    int64_t s = 0;
    for (; s < n && ((base + s) & 7); s++)
        put_bit(bits, base + s, hv ? hv[s] : 1);
    uint8_t *out = bits + ((base + s) >> 3);
    if (!hv) {
        int64_t full = (n - s) >> 3;
        memset(out, 0xff, (size_t)full);
        s += full * 8;
    } else {
        for (; s + 8 <= n; s += 8) {
            const uint8_t *h = hv + s;
            *out++ = (uint8_t)(h[0] | h[1] << 1 | h[2] << 2 | h[3] << 3 | h[4] << 4 | h[5] << 5 |
                               h[6] << 6 | h[7] << 7);
        }
    }
    for (; s < n; s++)
        put_bit(bits, base + s, hv ? hv[s] : 1);
}

/* Spreads k dense values at dst over n slots (hv[s]: slot s has a value),
 * backwards so it works in place; empty slots become zero. */
#define PQ_SPREAD(name, T)                                                    \
    static void name(uint8_t *dst, const uint8_t *hv, int64_t n, int64_t k)  \
    {                                                                         \
        T *d = (T *)(void *)dst;                                              \
        int64_t src = k - 1;                                                  \
        for (int64_t s = n - 1; s >= 0; s--) {                                \
            T v = 0;                                                          \
            if (hv[s])                                                        \
                memcpy(&v, &d[src--], sizeof v);                              \
            memcpy(&d[s], &v, sizeof v);                                      \
        }                                                                     \
    }
PQ_SPREAD(spread4, uint32_t)
PQ_SPREAD(spread8, uint64_t)

static void spread_any(uint8_t *dst, const uint8_t *hv, int64_t n, int64_t k, int w)
{
    int64_t src = k - 1;
    for (int64_t s = n - 1; s >= 0; s--) {
        if (hv[s]) {
            if (src != s)
                memcpy(dst + (size_t)s * w, dst + (size_t)src * w, (size_t)w);
            src--;
        } else {
            memset(dst + (size_t)s * w, 0, (size_t)w);
        }
    }
}

/* STRING/BINARY slots: values appended slot by slot (dictionary indices are
 * decoded PQ_IDX_CHUNK at a time and the bytes reserved once per chunk). */
/* The next run [s, *e) of rows holding at most PQ_IDX_CHUNK present values
 * (hv: one byte a row, 1 = present; NULL = every row present): their count. */
static inline int64_t idx_run(const uint8_t *hv, int64_t s, int64_t n, int64_t *e)
{
    int64_t m = 0, t = s;
    if (!hv) {
        m = n - s < PQ_IDX_CHUNK ? n - s : PQ_IDX_CHUNK;
        *e = s + m;
        return m;
    }
    for (; t < n && m < PQ_IDX_CHUNK; t++)
        m += hv[t];
    *e = t;
    return m;
}

static hs_status leaf_emit_bytes(pq_cursor *c, hs_column *col, int64_t n, const uint8_t *hv,
                                 hs_error *err)
{
    int64_t base = col->length;
    int32_t *offs = (int32_t *)col->offsets.data;
    size_t cur = (size_t)offs[base];
    if (c->vs == VS_DICT) {
        HS_TRY(tmp_room(c, PQ_IDX_CHUNK * 4, err));
        uint32_t *idx = (uint32_t *)c->tmp.data;
        const uint32_t *doff = c->doff;
        const uint8_t *dbytes = c->dbytes;
        int64_t s = 0;
        while (s < n) {
            int64_t e, m = idx_run(hv, s, n, &e);
            HS_TRY(dict_indices(c, idx, m, err));
            size_t bytes = 0;
            for (int64_t j = 0; j < m; j++)
                bytes += doff[idx[j] + 1] - doff[idx[j]];
            if (cur + bytes > (size_t)INT32_MAX)
                return hs_err_set(err, HS_UNSUPPORTED, "more than 2 GiB of strings in one batch");
            col->values.len = cur;
            if (pq_cb_reserve(&col->values, cur + bytes + PQ_DICT_SLACK) != HS_OK)
                return hs_err_nomem(err, cur + bytes);
            uint8_t *out = col->values.data;
            int64_t j = 0;
            if (!hv) {
                /* short values (most dictionaries): whole 16-byte moves instead of a
                 * memcpy call per value; the dictionary and the output both have
                 * PQ_DICT_SLACK bytes past their ends */
                for (int64_t t = s; t < e; t++) {
                    uint32_t ix = idx[j++];
                    uint32_t o = doff[ix], l = doff[ix + 1] - o;
                    if (l <= 2 * PQ_DICT_SLACK) {
                        memcpy(out + cur, dbytes + o, PQ_DICT_SLACK);
                        if (l > PQ_DICT_SLACK)
                            memcpy(out + cur + PQ_DICT_SLACK, dbytes + o + PQ_DICT_SLACK,
                                   PQ_DICT_SLACK);
                    } else {
                        memcpy(out + cur, dbytes + o, l);
                    }
                    cur += l;
                    offs[base + t + 1] = (int32_t)cur;
                }
            } else {
                for (int64_t t = s; t < e; t++) {
                    if (hv[t]) {
                        uint32_t ix = idx[j++];
                        uint32_t o = doff[ix], l = doff[ix + 1] - o;
                        if (l <= PQ_DICT_SLACK)
                            memcpy(out + cur, dbytes + o, PQ_DICT_SLACK);
                        else
                            memcpy(out + cur, dbytes + o, l);
                        cur += l;
                    }
                    offs[base + t + 1] = (int32_t)cur;
                }
            }
            s = e;
        }
    } else {
        if (n > 0 && c->vs != VS_PLAIN && c->vs != VS_STAGED) {
            bool any = !hv;
            for (int64_t t = 0; !any && t < n; t++)
                any = hv[t];
            if (any)
                return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
        }
        for (int64_t t = 0; t < n; t++) {
            if (!hv || hv[t]) {
                const uint8_t *p = NULL;
                uint32_t l = 0;
                if (c->vs == VS_PLAIN) {
                    HS_TRY(plain_ba(c, &p, &l, err));
                } else {
                    HS_TRY(vs_need(c, 1, err));
                    const pq_bytes *v = (const pq_bytes *)c->staged.data + c->staged_pos++;
                    p = v->p;
                    l = v->len;
                }
                if (cur + l > (size_t)INT32_MAX)
                    return hs_err_set(err, HS_UNSUPPORTED, "more than 2 GiB of strings in one batch");
                if (cur + l > col->values.cap) {
                    col->values.len = cur;
                    if (pq_cb_reserve(&col->values, cur + l) != HS_OK)
                        return hs_err_nomem(err, cur + l);
                }
                if (l)
                    memcpy(col->values.data + cur, p, l);
                cur += l;
            }
            offs[base + t + 1] = (int32_t)cur;
        }
    }
    col->values.len = cur;
    col->offsets.len = (size_t)(base + n + 1) * 4;
    col->length += n;
    return HS_OK;
}

/* ---------- verdict columns (pq_verdict, reader.h) ---------- */

/* The verdict on NULL, once per cursor. */
static hs_status vd_null(pq_cursor *c, hs_error *err)
{
    if (c->vd_null >= 0)
        return HS_OK;
    hs_column *t = NULL;
    HS_TRY(hs_col_create(c->vd_field, 1, &t, err));
    uint8_t v = 0;
    hs_status st = hs_col_append_null(t) == HS_OK ? HS_OK : hs_err_nomem(err, 1);
    if (st == HS_OK)
        st = c->vd->fn(c->vd->ctx, t, &v, err);
    hs_col_free(t);
    if (st == HS_OK)
        c->vd_null = v != 0;
    return st;
}

/* The verdicts on the row group's dictionary entries, once per row group. */
static hs_status vd_dict(pq_cursor *c, hs_error *err)
{
    if (c->vd_ready)
        return HS_OK;
    uint32_t n = c->dict_n;
    hs_column *t = NULL;
    HS_TRY(hs_col_create(c->vd_field, n, &t, err));
    hs_status st = HS_OK;
    for (uint32_t i = 0; i < n && st == HS_OK; i++)
        if (hs_col_append_bytes(t, c->dbytes + c->doff[i], c->doff[i + 1] - c->doff[i]) != HS_OK)
            st = hs_err_nomem(err, c->doff[i + 1] - c->doff[i]);
    hs_buf_reset(&c->vd_dict);
    if (st == HS_OK && hs_buf_reserve(&c->vd_dict, (size_t)n + 1) != HS_OK)
        st = hs_err_nomem(err, (size_t)n);
    if (st == HS_OK)
        st = c->vd->fn(c->vd->ctx, t, c->vd_dict.data, err);
    hs_col_free(t);
    if (st == HS_OK) {
        c->vd_dict.len = n;
        c->vd_ready = true;
    }
    return st;
}

/* n slots of a verdict column (col is BOOL, never null): on a dictionary
 * page each present value takes its entry's verdict by index (judged once
 * per row group; unless the dictionary is much larger than the rows read
 * so far, when judging it would cost more than judging the rows), a null
 * slot the verdict on NULL; other pages decode the slots into a scratch
 * column of the file's type and judge them. */
static hs_status leaf_emit_verdict(pq_cursor *c, hs_column *col, int64_t n, const uint8_t *hv,
                                   int64_t k, hs_error *err)
{
    int64_t base = col->length;
    if (pq_cb_reserve(&col->values, (size_t)((base + n + 7) / 8)) != HS_OK)
        return hs_err_nomem(err, (size_t)n);
    c->vd_rows += n;
    if (c->vs == VS_DICT && (c->vd_ready || (int64_t)c->dict_n <= 2 * c->vd_rows + 64)) {
        HS_TRY(vd_dict(c, err));
        if (k < n)
            HS_TRY(vd_null(c, err));
        HS_TRY(tmp_room(c, PQ_IDX_CHUNK * 4, err));
        uint32_t *idx = (uint32_t *)c->tmp.data;
        const uint8_t *vd = c->vd_dict.data;
        uint8_t vn = (uint8_t)(c->vd_null > 0);
        uint8_t *vb = col->values.data;
        int64_t s = 0;
        while (s < n) {
            int64_t e, m = idx_run(hv, s, n, &e);
            HS_TRY(dict_indices(c, idx, m, err));
            int64_t j = 0;
            if (!hv)
                for (int64_t t = s; t < e; t++)
                    put_bit(vb, base + t, vd[idx[j++]]);
            else
                for (int64_t t = s; t < e; t++)
                    put_bit(vb, base + t, hv[t] ? vd[idx[j++]] : vn);
            s = e;
        }
    } else {
        hs_column *t = NULL;
        HS_TRY(hs_col_create(c->vd_field, n, &t, err));
        hs_status st = pq_col_prep(t, hv != NULL, n) == HS_OK ? HS_OK : hs_err_nomem(err, (size_t)n);
        if (st == HS_OK && hv) {
            write_bits(t->validity.data, 0, hv, n);
            t->null_count = n - k;
            t->validity.len = (size_t)((n + 7) / 8);
        }
        if (st == HS_OK)
            st = leaf_emit_bytes(c, t, n, hv, err);
        hs_buf_reset(&c->vd_out);
        if (st == HS_OK && hs_buf_reserve(&c->vd_out, (size_t)n + 1) != HS_OK)
            st = hs_err_nomem(err, (size_t)n);
        if (st == HS_OK)
            st = c->vd->fn(c->vd->ctx, t, c->vd_out.data, err);
        hs_col_free(t);
        HS_TRY(st);
        write_bits(col->values.data, base, c->vd_out.data, n);
    }
    col->values.len = (size_t)((base + n + 7) / 8);
    col->length += n;
    return HS_OK;
}

/* Appends n slots to the leaf column: hv[s] says whether slot s has a value
 * (hv NULL: all do); k = number of values. */
static hs_status leaf_emit(pq_cursor *c, hs_column *col, int64_t n, const uint8_t *hv, int64_t k,
                           hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    const pq_anode *an = lf->path[lf->depth - 1];
    int64_t base = col->length;
    if (n == 0)
        return HS_OK;
    if (c->vd)
        return leaf_emit_verdict(c, col, n, hv, k, err);
    if (lf->conv == PQ_CV_NULL) {
        HS_TRY(vs_skip(c, k, err));
        col->length += n;
        col->null_count += n;
        return HS_OK;
    }
    /* no validity bitmap while every slot so far is valid (data NULL = all valid) */
    bool vis = an->nullable && (hv || col->validity.data);
    if (pq_col_prep(col, vis, n) != HS_OK)
        return hs_err_nomem(err, (size_t)n);
    if (vis) {
        write_bits(col->validity.data, base, hv, n);
        col->null_count += n - k;
        col->validity.len = (size_t)((base + n + 7) / 8);
    }
    if (lf->conv == PQ_CV_BYTES)
        return leaf_emit_bytes(c, col, n, hv, err);
    if (lf->conv == PQ_CV_BOOL) {
        if (c->bools.cap < (size_t)k + 8) {
            hs_buf_reset(&c->bools);
            if (hs_buf_reserve(&c->bools, (size_t)k + 8) != HS_OK)
                return hs_err_nomem(err, (size_t)k);
        }
        if (pq_cb_reserve(&col->values, (size_t)((base + n + 7) / 8)) != HS_OK)
            return hs_err_nomem(err, (size_t)n);
        uint8_t *t = c->bools.data;
        HS_TRY(vs_read_bool(c, t, k, err));
        uint8_t *vb = col->values.data;
        int64_t src = 0;
        for (int64_t s = 0; s < n; s++)
            put_bit(vb, base + s, (!hv || hv[s]) ? t[src++] : 0);
        col->values.len = (size_t)((base + n + 7) / 8);
        col->length += n;
        return HS_OK;
    }
    /* fixed width: dense at base, then spread over the null slots */
    int w = lf->out_width;
    if (pq_cb_reserve(&col->values, (size_t)(base + n) * w) != HS_OK)
        return hs_err_nomem(err, (size_t)n * w);
    uint8_t *dst = col->values.data + (size_t)base * w;
    HS_TRY(vs_read_fixed(c, dst, k, err));
    if (k < n) {
        if (w == 4)
            spread4(dst, hv, n, k);
        else if (w == 8)
            spread8(dst, hv, n, k);
        else
            spread_any(dst, hv, n, k, w);
    }
    col->values.len = (size_t)(base + n) * w;
    col->length += n;
    return HS_OK;
}

/* ---------- assembly of one run of level entries [a, b) ---------- */

/* Room for n bytes in c->hv, keeping the first `keep` bytes. */
static hs_status hv_room(pq_cursor *c, size_t n, size_t keep, hs_error *err)
{
    if (c->hv.cap < n) {
        c->hv.len = keep;
        if (hs_buf_reserve(&c->hv, n - keep) != HS_OK)
            return hs_err_nomem(err, n);
        c->hv.len = 0;
    }
    return HS_OK;
}

/* Fast path of assemble(): a top-level list (or map) whose element is the
 * leaf, e.g. list<float> embeddings.  A list slot starts at every r == 0. */
static hs_status assemble_list1(pq_cursor *c, int64_t a, int64_t b, hs_column **cols, hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    const pq_anode *L = lf->path[0];
    hs_column *lc = cols[0], *leafcol = cols[1];
    int64_t n = b - a;
    if (pq_col_prep(lc, L->nullable, n) != HS_OK)
        return hs_err_nomem(err, (size_t)n);
    HS_TRY(hv_room(c, (size_t)n + 1, 0, err));
    const uint16_t *def = c->def, *rep = c->rep;
    uint8_t *hv = c->hv.data, *vb = lc->validity.data;
    int32_t *offs = (int32_t *)lc->offsets.data;
    int64_t len = lc->length, nl = 0, k = 0, nulls = 0;
    int64_t leaf_base = leafcol->length;
    uint16_t dv = (uint16_t)L->def_valid, reach = (uint16_t)lf->path[1]->def_reach;
    uint16_t md = (uint16_t)lf->max_def;
    if (leaf_base + n > INT32_MAX)
        return hs_err_set(err, HS_UNSUPPORTED, "more than 2^31 list elements in one batch");
    if (reach == md && !L->nullable) {
        /* required elements in a non-null list: every element slot has a value */
        for (int64_t i = a; i < b; i++) {
            uint16_t d = def ? def[i] : md;
            if (rep[i] == 0)
                offs[len++] = (int32_t)(leaf_base + nl);
            nl += d >= md;
        }
        k = nl;
    } else {
        for (int64_t i = a; i < b; i++) {
            uint16_t d = def ? def[i] : md;
            if (rep[i] == 0) {
                if (L->nullable) {
                    put_bit(vb, len, d >= dv);
                    nulls += d < dv;
                }
                offs[len++] = (int32_t)(leaf_base + nl);
            }
            uint8_t has = d >= md;
            hv[nl] = has;
            k += has;
            nl += d >= reach;
        }
    }
    lc->null_count += nulls;
    HS_TRY(leaf_emit(c, leafcol, nl, k == nl ? NULL : hv, k, err));
    lc->length = len;
    if (L->nullable)
        lc->validity.len = (size_t)((len + 7) / 8);
    offs[len] = (int32_t)leafcol->length;
    lc->offsets.len = (size_t)(len + 1) * 4;
    return HS_OK;
}

/* Fast path of assemble(): a top-level list (or map) whose element is the
 * leaf, on a page whose def levels are all max_def (c->def NULL): every entry
 * is a present element, every r == 0 starts a valid list.  Fixed-size lists
 * whose page was checked to be whole rows (c->fixed_w) get their offsets
 * arithmetically; the values are copied in one piece by leaf_emit. */
static hs_status assemble_list_dense(pq_cursor *c, int64_t a, int64_t b, hs_column **cols,
                                     hs_error *err)
{
    const pq_anode *L = c->leaf->path[0];
    hs_column *lc = cols[0], *leafcol = cols[1];
    const uint16_t *rep = c->rep;
    int64_t n = b - a, leaf_base = leafcol->length, w = c->fixed_w, rows = 0;
    if (leaf_base + n > INT32_MAX)
        return hs_err_set(err, HS_UNSUPPORTED, "more than 2^31 list elements in one batch");
    if (w > 0) {
        rows = n / w;
    } else {
        for (int64_t i = a; i < b; i++)
            rows += rep[i] == 0;
    }
    bool vis = L->nullable && lc->validity.data;
    if (pq_col_prep(lc, vis, rows) != HS_OK)
        return hs_err_nomem(err, (size_t)rows);
    int32_t *offs = (int32_t *)lc->offsets.data;
    int64_t len = lc->length;
    if (w > 0) {
        int32_t o = (int32_t)leaf_base;
        for (int64_t j = 0; j < rows; j++, o += (int32_t)w)
            offs[len + j] = o;
    } else {
        int64_t t = len;
        for (int64_t i = a; i < b; i++)
            if (rep[i] == 0)
                offs[t++] = (int32_t)(leaf_base + (i - a));
    }
    if (vis) {
        write_bits(lc->validity.data, len, NULL, rows);
        lc->validity.len = (size_t)((len + rows + 7) / 8);
    }
    HS_TRY(leaf_emit(c, leafcol, n, NULL, n, err));
    len += rows;
    lc->length = len;
    offs[len] = (int32_t)leafcol->length;
    lc->offsets.len = (size_t)(len + 1) * 4;
    return HS_OK;
}

static hs_status assemble(pq_cursor *c, int64_t a, int64_t b, hs_column **cols, hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    int depth = lf->depth;
    int64_t n = b - a;
    const uint16_t *def = c->def, *rep = c->rep;
    hs_column *leafcol = cols[depth - 1];
    if (depth == 1) {  /* flat */
        if (!def)
            return leaf_emit(c, leafcol, n, NULL, n, err);
        HS_TRY(hv_room(c, (size_t)n, 0, err));
        uint8_t *hv = c->hv.data;
        int64_t k = 0;
        uint16_t md = (uint16_t)lf->max_def;
        for (int64_t i = 0; i < n; i++) {
            hv[i] = def[a + i] == md;
            k += hv[i];
        }
        return leaf_emit(c, leafcol, n, k == n ? NULL : hv, k, err);
    }
    if (depth == 2 && !def && c->own_from == 0 && lf->path[0]->kind == PQ_AN_LIST)
        return assemble_list_dense(c, a, b, cols, err);
    if (depth == 2 && c->own_from == 0 && lf->path[0]->kind == PQ_AN_LIST &&
        !(lf->path[0]->type == HS_TYPE_FIXED_LIST && lf->path[0]->nullable))
        return assemble_list1(c, a, b, cols, err);
    /* general: walk the owned nodes for every entry */
    int64_t len[2 * PQ_MAX_NESTING + 8];
    for (int j = c->own_from; j < depth - 1; j++) {
        const pq_anode *nd = lf->path[j];
        if (pq_col_prep(cols[j], nd->nullable, n) != HS_OK)
            return hs_err_nomem(err, (size_t)n);
        len[j] = cols[j]->length;
    }
    HS_TRY(hv_room(c, (size_t)n, 0, err));
    int64_t nl = 0, k = 0;
    int16_t leaf_reach = lf->path[depth - 1]->def_reach;
    for (int64_t i = a; i < b; i++) {
        int d = def ? def[i] : lf->max_def;
        int r = rep ? rep[i] : 0;
        for (int j = c->own_from; j < depth - 1; j++) {
            const pq_anode *nd = lf->path[j];
            if (r > nd->rep_ctx || d < nd->def_reach)
                continue;
            hs_column *cj = cols[j];
            int64_t slot = len[j]++;
            bool valid = d >= nd->def_valid;
            if (nd->nullable) {
                put_bit(cj->validity.data, slot, valid);
                cj->null_count += !valid;
            }
            if (nd->kind == PQ_AN_LIST) {
                int64_t child_len = j + 1 == depth - 1 ? leafcol->length + nl : len[j + 1];
                if (child_len > INT32_MAX)
                    return hs_err_set(err, HS_UNSUPPORTED, "more than 2^31 list elements in one batch");
                ((int32_t *)cj->offsets.data)[slot] = (int32_t)child_len;
                if (nd->type == HS_TYPE_FIXED_LIST && !valid && j + 1 == depth - 1) {
                    /* a null fixed-size list still owns `width` (null) elements */
                    HS_TRY(hv_room(c, (size_t)(nl + nd->width + (b - i)), (size_t)nl, err));
                    memset(c->hv.data + nl, 0, (size_t)nd->width);
                    nl += nd->width;
                }
            }
        }
        if (d >= leaf_reach) {
            if ((size_t)nl >= c->hv.cap)
                HS_TRY(hv_room(c, (size_t)nl * 2 + 16, (size_t)nl, err));
            uint8_t has = d >= lf->max_def;
            c->hv.data[nl++] = has;
            k += has;
        }
    }
    HS_TRY(leaf_emit(c, leafcol, nl, c->hv.data, k, err));
    for (int j = c->own_from; j < depth - 1; j++) {
        const pq_anode *nd = lf->path[j];
        hs_column *cj = cols[j];
        cj->length = len[j];
        if (nd->nullable)
            cj->validity.len = (size_t)((len[j] + 7) / 8);
        if (nd->kind == PQ_AN_LIST) {
            int64_t child_len = j + 1 == depth - 1 ? leafcol->length : len[j + 1];
            ((int32_t *)cj->offsets.data)[len[j]] = (int32_t)child_len;
            cj->offsets.len = (size_t)(len[j] + 1) * 4;
        }
    }
    return HS_OK;
}

/* ---------- rows ---------- */

/* Consumes n_rows rows: emitted into cols (cols[j] = column of path node j)
 * or, with cols NULL, skipped. */
/* Sequential reads of a flat required leaf whose PLAIN values are copied
 * as they are (ints, floats, dates; no levels in the page): the next page
 * may decompress straight into the output column at its next slot, when
 * all its values belong to this run (n <= left: the page is used up before
 * pq_cur_rows returns, so nothing reads c->vp after the batch is handed
 * on) and the column has room for them plus the 8 bytes of padding the
 * decompressor writes.  decode_data_page decides by the page's header. */
static void direct_offer(pq_cursor *c, hs_column **cols, int64_t left)
{
    const pq_leaf *lf = c->leaf;
    c->direct = NULL;
    if (lf->max_rep != 0 || lf->max_def != 0 || lf->conv != PQ_CV_COPY || lf->phys_width <= 0 ||
        lf->phys_width != lf->out_width || pq_read_no_fast_paths)
        return;
    hs_column *col = cols[lf->depth - 1];
    size_t w = (size_t)lf->out_width, at = (size_t)col->length * w;
    if (!col->values.data || col->values.len != at || col->values.cap <= at + 8)
        return;
    int64_t room = (int64_t)((col->values.cap - at - 8) / w);
    c->direct = col->values.data + at;
    c->direct_n = room < left ? room : left;
}

hs_status pq_cur_rows(pq_cursor *c, int64_t n_rows, hs_column **cols, hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    int64_t left = n_rows;
    bool first = true;
    for (;;) {
        if (!c->in_page || c->lvl_pos >= c->lvl_n) {
            if (left == 0 && (lf->max_rep == 0 || c->page_mode))
                break;
            bool eof = false;
            if (c->page_mode) {
                if (c->next_page >= c->oi->n_pages)
                    eof = true;
                else
                    HS_TRY(load_oi_page(c, c->next_page, err));
            } else {
                if (cols && left > 0)
                    direct_offer(c, cols, left);
                HS_TRY(seq_next_page(c, cols ? NULL : &left, &eof, err));
                c->direct = NULL;
            }
            if (eof) {
                if (left > 0)
                    return HS_CORRUPT_AT(err, "column chunk ends after %lld of %lld rows",
                                         (long long)c->row, (long long)c->rg_rows);
                break;
            }
            continue;
        }
        int64_t a = c->lvl_pos, b, rows;
        if (lf->max_rep == 0) {
            rows = left < c->lvl_n - a ? left : c->lvl_n - a;
            if (rows == 0)
                break;
            b = a + rows;
        } else if (c->fixed_w > 0) {  /* whole rows of fixed_w entries, a at a row start */
            int64_t avail = (c->lvl_n - a) / c->fixed_w;
            rows = left < avail ? left : avail;
            if (rows == 0)
                break;
            b = a + rows * c->fixed_w;
        } else {
            const uint16_t *rep = c->rep;
            if (first && rep[a] != 0)
                return HS_CORRUPT_AT(err, "repetition level %u where a row must start", rep[a]);
            if (left == 0 && rep[a] == 0)
                break;
            /* up to the start of row `left` (or the page's end): the scan
             * stops there, so taking a row near the page start costs its
             * length, not the page's */
            int64_t i = a;
            rows = 0;
            /* whole blocks of 64 entries while their row starts do not pass
             * `left` (a branch-free count the compiler vectorizes), then one
             * entry at a time */
            while (i + 64 <= c->lvl_n) {
                int64_t z = 0;
                for (int j = 0; j < 64; j++)
                    z += rep[i + j] == 0;
                if (rows + z > left)
                    break;
                rows += z;
                i += 64;
            }
            for (; i < c->lvl_n; i++) {
                if (rep[i] == 0) {
                    if (rows == left)
                        break;
                    rows++;
                }
            }
            b = i;
        }
        first = false;
        if (rows > c->rg_rows - c->row)
            return HS_CORRUPT_AT(err, "column chunk holds more rows than its row group (%lld)",
                                 (long long)c->rg_rows);
        if (cols) {
            HS_TRY(assemble(c, a, b, cols, err));
        } else {
            int64_t k = b - a;
            if (c->def) {
                k = 0;
                for (int64_t i = a; i < b; i++)
                    k += c->def[i] == lf->max_def;
            }
            HS_TRY(vs_skip(c, k, err));
        }
        left -= rows;
        c->row += rows;
        c->lvl_pos = b;
        if (lf->max_rep > 0 && b < c->lvl_n)
            break;  /* stopped at the start of a row we do not want */
    }
    return HS_OK;
}

hs_status pq_cur_skip(pq_cursor *c, int64_t n, hs_error *err)
{
    if (n <= 0)
        return HS_OK;
    if (c->page_mode) {
        int64_t target = c->row + n;
        if (!c->in_page || target >= c->page_row_end) {
            int p = -1;
            for (int i = c->next_page; i < c->oi->n_pages; i++) {
                if (c->oi->pages[i].first_row_index <= target)
                    p = i;
                else
                    break;
            }
            if (p >= 0) {
                c->stats->pages_skipped += p - c->next_page;
                HS_TRY(load_oi_page(c, p, err));
            }
            if (target < c->row)
                return HS_CORRUPT_AT(err, "offset index rows out of order");
        }
        return pq_cur_rows(c, target - c->row, NULL, err);
    }
    return pq_cur_rows(c, n, NULL, err);
}

/* ---------- flat leaves of selective scans: gathering ---------- */

/*
 * A scan with a row selection reads flat leaves (one level entry per row)
 * through pq_cur_gather instead of the per-run skip/take of pq_cur_rows: the rows
 * of a batch are sorted row-group ranges, and inside each decoded page the
 * value of row i is found directly -- PLAIN fixed-width values at i * width,
 * dictionary indices and RLE booleans decoded (once per page, as far as the
 * furthest wanted value), PLAIN byte arrays indexed the same way, pages with
 * nulls through a prefix count of present values.  A scattered selection then
 * costs per page and per selected row, never per skipped row, so callers need
 * not widen it to blocks.  Page choice, dictionaries and checks are those of
 * the sequential path: g_seek loads pages as pq_cur_skip does.
 */

/* Random access to the current page's values: value index of every level
 * entry (pages with def levels) and the bounds every later access relies on. */
static hs_status g_setup(pq_cursor *c, hs_error *err)
{
    if (c->g_ready)
        return HS_OK;
    const pq_leaf *lf = c->leaf;
    int64_t n = c->lvl_n, nv = n;
    if (c->def) {
        hs_buf_reset(&c->g_vix);
        if (hs_buf_reserve(&c->g_vix, (size_t)(n + 1) * 4) != HS_OK)
            return hs_err_nomem(err, (size_t)n * 4);
        uint32_t *v = (uint32_t *)c->g_vix.data, acc = 0;
        const uint16_t *def = c->def;
        uint16_t md = (uint16_t)lf->max_def;
        for (int64_t i = 0; i < n; i++) {
            v[i] = acc;
            acc += def[i] == md;
        }
        v[n] = acc;
        nv = acc;
    }
    c->g_nvals = nv;
    c->g_idx_n = 0;
    c->g_off_n = 0;
    c->g_off_pos = 0;
    if (nv > 0) {
        hs_buf *b = NULL;
        switch (c->vs) {
        case VS_PLAIN:
            if (lf->phys_width > 0 && (uint64_t)nv * (uint64_t)lf->phys_width > c->vlen)
                return HS_CORRUPT_AT(err, "page holds fewer values than its levels announce");
            if (lf->phys_width == 0)
                b = &c->g_off;
            break;
        case VS_PLAIN_BOOL:
            if ((uint64_t)nv > (uint64_t)c->vlen * 8)
                return HS_CORRUPT_AT(err, "page holds fewer booleans than its levels announce");
            break;
        case VS_STAGED:
            if (nv > c->staged_n)
                return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
            break;
        case VS_DICT:
        case VS_RLE_BOOL:
            b = &c->g_idx;
            break;
        default:
            break;  /* VS_NONE: reading a value fails */
        }
        if (b) {
            hs_buf_reset(b);
            if (hs_buf_reserve(b, (size_t)nv * 4 + 4) != HS_OK)
                return hs_err_nomem(err, (size_t)nv * 4);
        }
    }
    c->g_ready = true;
    return HS_OK;
}

/* Makes values [0, e) of the page accessible (decodes dictionary indices /
 * RLE booleans, indexes PLAIN byte arrays); e <= g_nvals. */
static hs_status g_prepare(pq_cursor *c, int64_t e, hs_error *err)
{
    if (e > c->g_nvals)
        return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
    if (c->vs == VS_DICT || c->vs == VS_RLE_BOOL) {
        if (e <= c->g_idx_n)
            return HS_OK;
        int64_t m = e - c->g_idx_n, rest = c->g_nvals - c->g_idx_n;
        if (m < PQ_IDX_CHUNK)
            m = rest < PQ_IDX_CHUNK ? rest : PQ_IDX_CHUNK;  /* a little ahead */
        uint32_t *idx = (uint32_t *)c->g_idx.data + c->g_idx_n;
        if (c->vs == VS_DICT)
            HS_TRY(dict_indices(c, idx, m, err));
        else
            HS_TRY(pq_rle_get_u32(&c->rle, idx, m, err));
        c->g_idx_n += m;
    } else if (c->vs == VS_PLAIN && c->leaf->phys_width == 0) {
        uint32_t *off = (uint32_t *)c->g_off.data;
        size_t pos = c->g_off_pos, vlen = c->vlen;
        for (int64_t i = c->g_off_n; i < e; i++) {
            if (vlen - pos < 4)
                return HS_CORRUPT_AT(err, "byte array length runs past the page");
            uint32_t l = rd_u32le(c->vp + pos);
            if (l > vlen - pos - 4)
                return HS_CORRUPT_AT(err, "byte array of %u bytes runs past the page", l);
            off[i] = (uint32_t)pos;
            pos += 4 + (size_t)l;
        }
        if (e > c->g_off_n) {
            c->g_off_n = e;
            c->g_off_pos = pos;
        }
    }
    return HS_OK;
}

/* Makes values [a, b) of a dictionary / RLE boolean page accessible, where a
 * selective gather may pass over the values before a: they are skipped
 * without decoding when the gap is long (their g_idx slots stay unset and
 * are never read: gathers only move forward). */
static hs_status g_prepare_range(pq_cursor *c, int64_t a, int64_t b, hs_error *err)
{
    if (b > c->g_nvals)
        return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
    if (b <= c->g_idx_n)
        return HS_OK;
    int64_t e = b, gap = a - c->g_idx_n;
    if (gap > 64 && !pq_read_no_fast_paths) {
        HS_TRY(pq_rle_skip(&c->rle, gap, err));
        c->g_idx_n = a;
    } else {
        /* close to the last wanted value: decode ahead about 32 more wanted
         * values' worth at the density the gap suggests (a value costs ~1 ns
         * to decode, a decoder call ~25 ns), at most PQ_IDX_CHUNK */
        int64_t ahead = 32 * (gap > 0 ? gap + 1 : 1);
        if (ahead > PQ_IDX_CHUNK)
            ahead = PQ_IDX_CHUNK;
        if (e - c->g_idx_n < ahead)
            e = c->g_idx_n + ahead < c->g_nvals ? c->g_idx_n + ahead : c->g_nvals;
    }
    int64_t m = e - c->g_idx_n;
    uint32_t *idx = (uint32_t *)c->g_idx.data + c->g_idx_n;
    if (c->vs == VS_DICT)
        HS_TRY(dict_indices(c, idx, m, err));
    else
        HS_TRY(pq_rle_get_u32(&c->rle, idx, m, err));
    c->g_idx_n = e;
    return HS_OK;
}

/* Value j (prepared) of a byte-array page. */
static hs_status g_bytes(pq_cursor *c, int64_t j, const uint8_t **p, uint32_t *l, hs_error *err)
{
    switch (c->vs) {
    case VS_DICT: {
        uint32_t ix = ((const uint32_t *)c->g_idx.data)[j];
        uint32_t o = c->doff[ix];
        *p = c->dbytes + o;
        *l = c->doff[ix + 1] - o;
        return HS_OK;
    }
    case VS_PLAIN: {
        uint32_t o = ((const uint32_t *)c->g_off.data)[j];
        *l = rd_u32le(c->vp + o);
        *p = c->vp + o + 4;
        return HS_OK;
    }
    case VS_STAGED: {
        const pq_bytes *v = (const pq_bytes *)c->staged.data + j;
        *p = v->p;
        *l = v->len;
        return HS_OK;
    }
    default:
        return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
    }
}

/* k consecutive values from j (prepared) -> output representation at dst. */
static hs_status g_fixed(pq_cursor *c, int64_t j, int64_t k, uint8_t *dst, hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    int ow = lf->out_width, pw = lf->phys_width;
    switch (c->vs) {
    case VS_PLAIN:
        if (pw > 0) {
            if (!conv_fixed(lf->conv, pw, c->vp + (size_t)j * pw, k, dst))
                return HS_CORRUPT_AT(err, "decimal value does not fit 128 bits");
            return HS_OK;
        }
        for (int64_t i = 0; i < k; i++) {  /* BYTE_ARRAY decimal */
            const uint8_t *p = NULL;
            uint32_t l = 0;
            HS_TRY(g_bytes(c, j + i, &p, &l, err));
            if (!be_to_dec(p, l, dst + (size_t)ow * i))
                return HS_CORRUPT_AT(err, "decimal value does not fit 128 bits");
        }
        return HS_OK;
    case VS_DICT: {
        const uint32_t *idx = (const uint32_t *)c->g_idx.data + j;
        const uint8_t *dv = c->dv;
        dict_gather(dst, dv, idx, k, ow);
        return HS_OK;
    }
    case VS_STAGED:
        if (lf->elem->type == PQ_BYTE_ARRAY || lf->elem->type == PQ_FIXED_LEN_BYTE_ARRAY) {
            const pq_bytes *v = (const pq_bytes *)c->staged.data + j;
            for (int64_t i = 0; i < k; i++)
                if (!conv_view(lf->conv, ow, v[i].p, v[i].len, dst + (size_t)ow * i))
                    return HS_CORRUPT_AT(err, "value of %u bytes does not fit the column type",
                                         v[i].len);
        } else if (!conv_fixed(lf->conv, pw, c->staged.data + (size_t)pw * j, k, dst)) {
            return HS_CORRUPT_AT(err, "value does not fit the column type");
        }
        return HS_OK;
    case VS_NONE:
        return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
    default:
        return HS_CORRUPT_AT(err, "no values for a fixed-width column");
    }
}

/* Boolean value j (prepared). */
static hs_status g_bool(pq_cursor *c, int64_t j, bool *v, hs_error *err)
{
    switch (c->vs) {
    case VS_PLAIN_BOOL:
        *v = (c->vp[j >> 3] >> (j & 7)) & 1;
        return HS_OK;
    case VS_RLE_BOOL:
        *v = ((const uint32_t *)c->g_idx.data)[j] != 0;
        return HS_OK;
    case VS_STAGED:
        *v = c->staged.data[j] != 0;
        return HS_OK;
    case VS_NONE:
        return HS_CORRUPT_AT(err, "levels announce more values than the page holds");
    default:
        return HS_CORRUPT_AT(err, "no values for a boolean column");
    }
}

/* Appends the level entries of pieces pc[0..m) (sorted [a, b) ranges of the
 * current page: rows of a flat leaf) to col, n entries in all. */
static hs_status g_emit(pq_cursor *c, hs_column *col, const pq_row_range *pc, size_t m, int64_t n,
                        hs_error *err)
{
    const pq_leaf *lf = c->leaf;
    const pq_anode *an = lf->path[0];
    int64_t base = col->length;
    if (n <= 0 || m == 0)
        return HS_OK;
    if (lf->conv == PQ_CV_NULL) {
        col->length += n;
        col->null_count += n;
        return HS_OK;
    }
    const uint16_t *def = c->def;
    const uint32_t *vix = def ? (const uint32_t *)c->g_vix.data : NULL;
    uint16_t md = (uint16_t)lf->max_def;
    int64_t k = n, last = pc[m - 1].end;   /* values among the rows; past the last one */
    if (def) {
        k = 0;
        for (size_t i = 0; i < m; i++)
            k += vix[pc[i].end] - vix[pc[i].start];
        last = vix[last];
    }
    if (k > 0 && (c->vs == VS_DICT || c->vs == VS_RLE_BOOL)) {
        for (size_t i = 0; i < m; i++) {
            int64_t a = pc[i].start, b = pc[i].end;
            if (def) {
                a = vix[a];
                b = vix[b];
            }
            if (b > a)
                HS_TRY(g_prepare_range(c, a, b, err));
        }
    } else if (k > 0) {
        HS_TRY(g_prepare(c, last, err));
    }
    bool vis = an->nullable && (k < n || col->validity.data);
    if (pq_col_prep(col, vis, n) != HS_OK)
        return hs_err_nomem(err, (size_t)n);
    if (vis) {
        int64_t o = base;
        for (size_t i = 0; i < m; i++) {
            int64_t a = pc[i].start, len = pc[i].end - a;
            if (k == n) {
                write_bits(col->validity.data, o, NULL, len);
            } else {
                for (int64_t s = 0; s < len; s++)
                    put_bit(col->validity.data, o + s, def[a + s] == md);
            }
            o += len;
        }
        col->null_count += n - k;
        col->validity.len = (size_t)((base + n + 7) / 8);
    }
    if (lf->conv == PQ_CV_BYTES) {
        int32_t *offs = (int32_t *)col->offsets.data;
        size_t cur = (size_t)offs[base];
        int64_t o = base;
        for (size_t i = 0; i < m; i++) {
            for (int64_t r = pc[i].start; r < pc[i].end; r++, o++) {
                if (!def || def[r] == md) {
                    const uint8_t *p = NULL;
                    uint32_t l = 0;
                    HS_TRY(g_bytes(c, def ? vix[r] : r, &p, &l, err));
                    if (cur + l > (size_t)INT32_MAX)
                        return hs_err_set(err, HS_UNSUPPORTED,
                                          "more than 2 GiB of strings in one batch");
                    if (cur + l > col->values.cap) {
                        col->values.len = cur;
                        if (pq_cb_reserve(&col->values, cur + l) != HS_OK)
                            return hs_err_nomem(err, cur + l);
                    }
                    if (l)
                        memcpy(col->values.data + cur, p, l);
                    cur += l;
                }
                offs[o + 1] = (int32_t)cur;
            }
        }
        col->values.len = cur;
        col->offsets.len = (size_t)(base + n + 1) * 4;
        col->length += n;
        return HS_OK;
    }
    if (lf->conv == PQ_CV_BOOL) {
        if (pq_cb_reserve(&col->values, (size_t)((base + n + 7) / 8)) != HS_OK)
            return hs_err_nomem(err, (size_t)n);
        uint8_t *vb = col->values.data;
        int64_t o = base;
        for (size_t i = 0; i < m; i++) {
            for (int64_t r = pc[i].start; r < pc[i].end; r++, o++) {
                bool v = false;
                if (!def || def[r] == md)
                    HS_TRY(g_bool(c, def ? vix[r] : r, &v, err));
                put_bit(vb, o, v);
            }
        }
        col->values.len = (size_t)((base + n + 7) / 8);
        col->length += n;
        return HS_OK;
    }
    int w = lf->out_width;
    if (pq_cb_reserve(&col->values, (size_t)(base + n) * w) != HS_OK)
        return hs_err_nomem(err, (size_t)n * w);
    uint8_t *dst = col->values.data + (size_t)base * w;
    if (k == n && !def && c->vs == VS_PLAIN && lf->conv == PQ_CV_COPY && w == lf->phys_width &&
        (w == 4 || w == 8)) {
        /* the common case: plain 4/8-byte values, no nulls */
        const uint8_t *src = c->vp;
        for (size_t i = 0; i < m; i++) {
            int64_t a = pc[i].start, len = pc[i].end - a;
            if (len == 1 && w == 8)
                memcpy(dst, src + (size_t)a * 8, 8);
            else if (len == 1)
                memcpy(dst, src + (size_t)a * 4, 4);
            else
                memcpy(dst, src + (size_t)a * w, (size_t)len * w);
            dst += (size_t)len * w;
        }
    } else if (k == n) {
        for (size_t i = 0; i < m; i++) {
            int64_t a = pc[i].start, len = pc[i].end - a;
            HS_TRY(g_fixed(c, def ? vix[a] : a, len, dst, err));
            dst += (size_t)len * w;
        }
    } else {
        for (size_t i = 0; i < m; i++) {
            for (int64_t r = pc[i].start; r < pc[i].end; r++, dst += w) {
                if (def[r] == md)
                    HS_TRY(g_fixed(c, vix[r], 1, dst, err));
                else
                    memset(dst, 0, (size_t)w);
            }
        }
    }
    col->values.len = (size_t)(base + n) * w;
    col->length += n;
    return HS_OK;
}

/* Moves a flat leaf's cursor to row r of the row group (r >= its current
 * row), loading the page holding it; rows passed over are never decoded. */
static hs_status g_seek(pq_cursor *c, int64_t r, hs_error *err)
{
    if (r < c->row)
        return hs_err_set(err, HS_INTERNAL, "rows of a selection out of order");
    if (c->in_page) {
        int64_t first = c->row - c->lvl_pos;
        if (r < first + c->lvl_n) {
            c->lvl_pos = r - first;
            c->row = r;
            return HS_OK;
        }
        c->row = first + c->lvl_n;   /* the rest of the page is passed over */
        c->lvl_pos = c->lvl_n;
    }
    if (c->page_mode) {
        int p = -1;
        for (int i = c->next_page; i < c->oi->n_pages && c->oi->pages[i].first_row_index <= r; i++)
            p = i;
        if (p < 0)
            return HS_CORRUPT_AT(err, "offset index has no page holding row %lld", (long long)r);
        c->stats->pages_skipped += p - c->next_page;
        HS_TRY(load_oi_page(c, p, err));
        if (r >= c->row + c->lvl_n)
            return HS_CORRUPT_AT(err, "page at row %lld holds %lld rows, fewer than the offset "
                                 "index says", (long long)c->row, (long long)c->lvl_n);
    } else {
        int64_t skip = r - c->row;
        for (;;) {
            bool eof = false;
            HS_TRY(seq_next_page(c, &skip, &eof, err));
            if (eof)
                return HS_CORRUPT_AT(err, "column chunk ends after %lld of %lld rows",
                                     (long long)c->row, (long long)c->rg_rows);
            if (skip < c->lvl_n)
                break;
            skip -= c->lvl_n;   /* a page whose rows its header did not tell */
            c->row += c->lvl_n;
            c->lvl_pos = c->lvl_n;
        }
    }
    c->lvl_pos = r - c->row;
    c->row = r;
    return HS_OK;
}

/* Reads the rows of rr[0..n_rr) (sorted, disjoint, row-group relative, at
 * or after the cursor's row) of a flat leaf into col: page by page, the
 * pieces of the ranges inside the page emitted together. */
hs_status pq_cur_gather(pq_cursor *c, const pq_row_range *rr, size_t n_rr, hs_column *col,
                            hs_error *err)
{
    size_t i = 0;
    int64_t r = n_rr ? rr[0].start : 0;
    while (i < n_rr) {
        if (r >= rr[i].end) {
            if (++i < n_rr)
                r = rr[i].start;
            continue;
        }
        HS_TRY(g_seek(c, r, err));
        HS_TRY(g_setup(c, err));
        int64_t first = c->row - c->lvl_pos, pend = first + c->lvl_n, n = 0;
        hs_buf *pcs = &c->g_pieces;   /* at most one piece per range left */
        hs_buf_reset(pcs);
        if (hs_buf_reserve(pcs, (n_rr - i) * sizeof(pq_row_range)) != HS_OK)
            return hs_err_nomem(err, (n_rr - i) * sizeof(pq_row_range));
        pq_row_range *pc = (pq_row_range *)pcs->data;
        size_t m = 0;
        while (i < n_rr && r < pend) {
            int64_t e = rr[i].end < pend ? rr[i].end : pend;
            pc[m].start = r - first;
            pc[m].end = e - first;
            m++;
            n += e - r;
            r = e;
            if (r >= rr[i].end && ++i < n_rr)
                r = rr[i].start;
        }
        HS_TRY(g_emit(c, col, pc, m, n, err));
        int64_t done = pc[m - 1].end;
        c->lvl_pos = done;
        c->row = first + done;
    }
    return HS_OK;
}

/* Reads the pages in [chunk_start, first OffsetIndex page): the dictionary
 * (page mode, on the first dictionary-encoded page; own buffers, so the
 * current page's bytes stay intact). */
static hs_status read_dict_region(pq_cursor *c, int64_t start, int64_t end, hs_error *err)
{
    if (end <= start)
        return HS_OK;
    hs_buf *raw = &c->dict_raw;
    pq_bufpool_take(raw, (size_t)(end - start));
    HS_TRY(hs_file_read_buf(c->r->f, (uint64_t)start, (size_t)(end - start), raw, err));
    c->stats->bytes_read += end - start;
    size_t pos = 0;
    while (pos < raw->len) {
        c->page_off = (uint64_t)start + pos;
        pq_page_header h;
        size_t used = 0;
        hs_arena_reset(&c->hdr_arena);
        HS_TRY(pq_decode_page_header(raw->data + pos, raw->len - pos, &c->hdr_arena, &h, &used,
                                     err));
        if (used == 0 || used > raw->len - pos)
            return HS_CORRUPT_AT(err, "page header overruns the column chunk");
        HS_TRY(check_header(c, &h, raw->len - pos - used, err));
        if (h.type == PQ_PAGE_DICTIONARY) {
            const uint8_t *p = NULL;
            HS_TRY(page_body_to(c, &c->dict_page, raw->data + pos + used,
                                (size_t)h.compressed_page_size, (size_t)h.uncompressed_page_size,
                                true, &p, err));
            HS_TRY(load_dict(c, &h, p, (size_t)h.uncompressed_page_size, err));
        }
        pos += used + (size_t)h.compressed_page_size;
    }
    return HS_OK;
}

/* Positions the cursor at the start of row group rg. */
hs_status pq_cursor_open_rg(pq_cursor *c, int rg, bool want_pages, hs_error *err)
{
    pq_reader *r = c->r;
    const pq_row_group *g = &r->ft->meta.row_groups[rg];
    const pq_column_chunk *cc = &g->columns[c->leaf_index];
    c->rg = rg;
    c->rg_rows = g->num_rows;
    c->in_page = false;
    c->vd_ready = false;
    c->vd_rows = 0;
    c->has_dict = false;
    c->dict_n = 0;
    c->dv = NULL;
    c->doff = NULL;
    c->dbytes = NULL;
    c->dict_lo = c->dict_hi = 0;
    c->g_ready = false;
    c->row = 0;
    c->values_total = 0;
    c->next_page = 0;
    c->page_mode = false;
    c->oi = NULL;
    c->pinfo = NULL;
    c->pos = 0;
    c->lvl_n = c->lvl_pos = 0;
    c->vs = VS_NONE;
    hs_buf_reset(&c->chunk);
    c->chunk_total = 0;
    c->win_off = 0;
    if (!cc->has_meta_data)
        return HS_CORRUPT_AT(err, "column chunk without metadata");
    if (cc->file_path)
        return hs_err_set(err, HS_UNSUPPORTED, "column chunk stored in another file (%s)", cc->file_path);
    const pq_column_meta *cm = &cc->meta_data;
    c->cm = cm;
    if (cm->type != c->leaf->elem->type)
        return HS_CORRUPT_AT(err, "column chunk type %d differs from the schema's %d", (int)cm->type,
                             (int)c->leaf->elem->type);
    if ((int)cm->codec < 0 || (int)cm->codec > 7)
        return hs_err_set(err, HS_UNSUPPORTED, "compression codec %d", (int)cm->codec);
    if (cm->codec == PQ_CODEC_LZO)
        return hs_err_set(err, HS_UNSUPPORTED, "LZO compression is not supported");
    c->codec = (hs_codec)cm->codec;  /* the numbering matches parquet.thrift */
    int64_t start = cm->data_page_offset;
    if (cm->has_dictionary_page_offset && cm->dictionary_page_offset >= 4 &&
        cm->dictionary_page_offset < start)
        start = cm->dictionary_page_offset;
    int64_t len = cm->total_compressed_size;
    uint64_t fsize = r->f->size;
    if (start < 4 || len < 0 || (uint64_t)start > fsize || (uint64_t)len > fsize - (uint64_t)start)
        return HS_CORRUPT_AT(err, "column chunk at offset %lld, %lld bytes, lies outside the file (%llu bytes)",
                             (long long)start, (long long)len, (unsigned long long)fsize);
    if (r->old_parquet_mr) {
        /* PARQUET-816: parquet-mr <= 1.2.8 left the dictionary page header out
         * of total_compressed_size; read up to 100 bytes more, as Arrow does */
        uint64_t rest = fsize - (uint64_t)start - (uint64_t)len;
        len += rest < 100 ? (int64_t)rest : 100;
    }
    c->chunk_start = start;
    c->page_off = (uint64_t)start;
    if (want_pages) {
        const pq_column_index *ci;
        const pq_offset_index *oi;
        HS_TRY(pq_reader_page_index(r, rg, c->leaf_index, &ci, &oi, err));
        if (oi && oi->pages[0].offset >= start) {
            c->oi = oi;
            c->pinfo = r->pidx ? r->pidx[(size_t)rg * r->ft->schema.n_leaves + c->leaf_index].pinfo
                               : NULL;
            c->page_mode = true;
            c->dict_lo = start;   /* read by need_dict, if a page needs it */
            c->dict_hi = oi->pages[0].offset;
            return HS_OK;
        }
    }
    c->chunk_off = (uint64_t)start;
    c->chunk_total = (size_t)len;
    c->win_off = 0;
    return HS_OK;  /* seq_next_page reads through the window */
}

void pq_cursor_close_rg(pq_cursor *c)
{
    pq_pc_release(c->page_ref);
    c->page_ref = NULL;
    pq_pc_release(c->lvl_ref);
    c->lvl_ref = NULL;
    if (c->page_mode && c->oi && c->next_page < c->oi->n_pages)
        c->stats->pages_skipped += c->oi->n_pages - c->next_page;
    c->page_mode = false;
    c->in_page = false;
}

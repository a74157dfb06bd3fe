/*
 * parquet/writer.c - streaming Parquet writer: batches -> shredded levels and
 * values -> encoded pages -> row groups -> page indexes -> footer.
 *
 * File layout written (everything little-endian):
 *
 *   "PAR1"
 *   row group 0: column chunk 0: [dictionary page] data page ... data page
 *                column chunk 1: ...
 *   row group 1 ...
 *   ColumnIndex of every chunk (row group order, then leaf order)
 *   OffsetIndex of every chunk (same order)
 *   FileMetaData (thrift compact)   u32 length   "PAR1"
 *
 * Data flow.  pq_writer_write cuts a batch into slices that never cross a
 * row-group boundary (and are at most SLICE_ROWS rows, so the byte limit is
 * checked often).  For each leaf column a slice is fed in chunks of at most
 * CHUNK_ROWS rows, never crossing a page's row limit, so every page starts
 * at a row boundary (repetition level 0).  A chunk is shredded into
 * definition/repetition levels and runs of non-null leaf positions
 * ("shred" below); runs are converted to physical values (widening, unit
 * scaling, decimal re-encoding) and dictionary-encoded or PLAIN-encoded into
 * the page under construction, with page statistics updated in the same pass.
 * After each chunk the page is closed if its estimated value bytes reach
 * page_bytes or its rows reach page_rows, and the dictionary falls back to
 * PLAIN (or the column's chosen encoding) once its PLAIN size reaches
 * dictionary_page_bytes: pages already dictionary-encoded stay so, the
 * dictionary page is still written first in the chunk, later pages are plain
 * (what parquet-mr and Arrow do).  A closed page is compressed straight onto
 * the end of the column's chunk buffer (its header, whose sizes are known only
 * then, goes to a side buffer); its location and statistics are recorded for
 * the page index.  When a row group is flushed each column writes its
 * dictionary page and then header + body of each page, contiguously, so memory
 * is bounded by one row group's compressed pages.
 *
 *   per column, per row group      per page
 *   chunk   page bodies            def, rep   uint16 levels
 *   hdrs    page headers           vals       PLAIN values (bool: packed bits)
 *   pages   pq_page_rec            idx        uint32 dictionary indices
 *   dict    PLAIN dictionary       pstats     min/max/nulls, merged into cstats
 *   ci_bytes page-index bounds                at close
 *
 * Shredding (nested columns).  A leaf's node chain (writer_int.h) is walked
 * top-down over arrays of entries (def, rep, idx): idx >= 0 is a live slot of
 * the current column, idx = -1 a terminated entry (null or empty somewhere
 * above) whose def level is final.  A nullable node terminates null slots and
 * adds 1 to the def of the others; a list-like node replaces each live entry
 * by its elements (first keeps the entry's rep, later ones get the list's rep
 * level, all def + 1) or terminates it when empty.  At the leaf, live entries
 * are the non-null values.  Flat columns skip all of this: def levels come
 * straight from the validity bitmap and values in runs of valid bits; a
 * top-level LIST/FIXED_LIST of primitives (tags, embeddings) writes its
 * levels row by row and its values in runs of adjacent element ranges.
 *
 * Dictionaries: 4- and 8-byte values use an open-addressing table of
 * {key, index} slots (one cache miss per probe); FLBA and byte arrays use
 * hs_map.  Byte-array page statistics in dictionary mode compare each entry
 * only the first time a page uses it (a per-entry page stamp).
 *
 * Invariants: every page starts at rep level 0; a column chunk's pages are
 * contiguous and its dictionary page (if any) comes first; page statistics are
 * merged into chunk statistics exactly once, when the page is closed.
 */
#include "parquet/writer.h"

#include "base/hashmap.h"
#include "base/mem.h"
#include "parquet/encoding.h"
#include "parquet/stats.h"
#include "parquet/writer_int.h"

#include <string.h>

#ifndef HS_VERSION
#define HS_VERSION "0.1.0"
#endif

#define CHUNK_ROWS 1024        /* rows shredded and encoded at a time (Arrow's batch) */
#define SLICE_ROWS 65536       /* rows between row-group byte checks */
#define CONV_BLOCK 4096        /* values converted at a time */
#define MAX_CHUNK_STAT 4096    /* longer chunk min/max are omitted */
#define PAGE_INDEX_TRUNC 64    /* byte-array bounds in the column index */

/* ------------------------------------------------------------------------ */
/* integer hash table for 4- and 8-byte dictionary values                     */

typedef struct pq_islot {
    uint64_t key;
    uint32_t val;     /* dictionary index + 1; 0 = empty */
    uint32_t pad;
} pq_islot;           /* key and value in one cache line: one miss per probe */

typedef struct pq_ihash {
    pq_islot *slots;
    size_t cap;       /* power of two or 0 */
    size_t count;
} pq_ihash;

static inline size_t ih_slot(uint64_t k, size_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & mask;
}

static hs_status ih_grow(pq_ihash *h)
{
    size_t ncap = h->cap ? h->cap * 2 : 1024;
    pq_islot *ns = hs_calloc(ncap, sizeof *ns);
    if (!ns)
        return HS_NOMEM;
    for (size_t i = 0; i < h->cap; i++) {
        if (!h->slots[i].val)
            continue;
        size_t j = ih_slot(h->slots[i].key, ncap - 1);
        while (ns[j].val)
            j = (j + 1) & (ncap - 1);
        ns[j] = h->slots[i];
    }
    hs_free(h->slots);
    h->slots = ns;
    h->cap = ncap;
    return HS_OK;
}

static void ih_clear(pq_ihash *h)
{
    if (h->cap)
        memset(h->slots, 0, h->cap * sizeof *h->slots);
    h->count = 0;
}

static void ih_free(pq_ihash *h)
{
    hs_free(h->slots);
    memset(h, 0, sizeof *h);
}

/* ------------------------------------------------------------------------ */
/* per-leaf column writer                                                     */

typedef struct pq_page_rec {
    int64_t offset;         /* from the first data page (filled when written) */
    uint32_t hdr_off, hdr_len;   /* page header bytes in hdrs */
    uint64_t body_off;      /* page body bytes in chunk */
    int32_t size;           /* header + compressed body */
    int64_t first_row;      /* within the row group */
    int64_t null_count;
    bool null_page;
    bool has_minmax;
    uint32_t min_off, min_len, max_off, max_len;  /* into ci_bytes */
} pq_page_rec;

#define N_ENC 10

typedef struct pq_colw {
    pq_wleaf *leaf;
    int width;              /* physical value width (0 = byte array, bool 1) */
    /* page under construction */
    hs_buf def, rep;        /* uint16 levels */
    int64_t n_levels, n_rows, n_values;
    hs_buf vals;            /* PLAIN values (bool: packed bits) */
    int64_t n_bits;         /* bool values in vals */
    hs_buf idx;             /* uint32 dictionary indices */
    pq_wstats pstats;
    uint32_t *seen;         /* byte-array dict stats: page epoch per entry */
    size_t seen_cap;
    uint32_t epoch;
    int64_t pmin_idx, pmax_idx;
    /* dictionary */
    bool dict_on;           /* encoding the current page with the dictionary */
    bool dict_used;         /* this chunk needs its dictionary page */
    pq_ihash ih;
    hs_map bm;
    hs_buf dict;            /* PLAIN dictionary page body */
    hs_buf dict_off;        /* uint32: start of entry i's bytes in dict (byte arrays) */
    uint32_t n_dict;
    /* chunk */
    hs_buf chunk;           /* data page bodies (compressed straight into it) */
    hs_buf hdrs;            /* data page headers */
    hs_buf pages;           /* pq_page_rec */
    hs_buf ci_bytes;
    bool ci_valid;          /* false: some non-null page has no min/max -> no column index */
    pq_wstats cstats;
    int64_t c_levels, c_uncompressed, c_compressed, c_rows;
    int32_t enc_pages[N_ENC];
} pq_colw;

struct pq_writer {
    hs_wfile *out;
    uint64_t start_offset;
    pq_writer_options opt;
    hs_codec codec;
    int level;
    bool want_stats;
    hs_field schema;
    hs_arena arena;         /* footer, schema, paths: file lifetime */
    hs_arena tmp;           /* per row group */
    pq_wschema ws;
    pq_colw *cols;
    int64_t rg_rows, total_rows;
    hs_buf rgs;             /* pq_row_group */
    hs_buf ci, oi;          /* encoded page indexes, in chunk order */
    hs_buf refs;            /* int64 x4 per chunk: ci off, ci len (-1 none), oi off, oi len */
    pq_file_meta meta;
    bool finished, failed;
    /* scratch, reused */
    hs_buf ed[2], er[2], ei[2];   /* shredding entries */
    hs_buf page, vbody, comp, hdr, conv, views, smin, smax;
};

static hs_status nomem(hs_error *err) { return hs_err_nomem(err, 0); }

#define TRY_MEM(expr)                            \
    do {                                         \
        if (HS_UNLIKELY((expr) != HS_OK))        \
            return nomem(err);                   \
    } while (0)

/* ------------------------------------------------------------------------ */
/* dictionary                                                                 */

static inline hs_status dict_idx_push(pq_colw *cw, uint32_t v)
{
    return HS_VEC_PUSH(&cw->idx, uint32_t, v);
}

/* Dictionary-encodes n fixed values of width 4 or 8. */
static hs_status dict_put_int(pq_colw *cw, const uint8_t *p, int64_t n, int width)
{
    HS_TRY(hs_buf_reserve(&cw->idx, (size_t)n * 4));
    uint32_t *out = (uint32_t *)(cw->idx.data + cw->idx.len);
    for (int64_t i = 0; i < n; i++) {
        uint64_t k;
        if (width == 4) {
            uint32_t k32;
            memcpy(&k32, p + 4 * i, 4);
            k = k32;
        } else {
            memcpy(&k, p + 8 * i, 8);
        }
        if (HS_UNLIKELY((cw->ih.count + 1) * 2 > cw->ih.cap))
            HS_TRY(ih_grow(&cw->ih));
        size_t mask = cw->ih.cap - 1, j = ih_slot(k, mask);
        pq_islot *sl = cw->ih.slots;
        uint32_t v;
        for (;;) {
            v = sl[j].val;
            if (!v || sl[j].key == k)
                break;
            j = (j + 1) & mask;
        }
        if (!v) {
            v = ++cw->n_dict;
            sl[j].key = k;
            sl[j].val = v;
            cw->ih.count++;
            HS_TRY(hs_buf_append(&cw->dict, p + (size_t)width * i, width));
        }
        out[i] = v - 1;
    }
    cw->idx.len += (size_t)n * 4;
    return HS_OK;
}

/* Dictionary-encodes n fixed values of another width (FLBA). */
static hs_status dict_put_flba(pq_colw *cw, const uint8_t *p, int64_t n, int width)
{
    for (int64_t i = 0; i < n; i++) {
        uint64_t v;
        bool found;
        HS_TRY(hs_map_get_or_put(&cw->bm, p + (size_t)width * i, width, cw->n_dict, &v, &found));
        if (!found) {
            HS_TRY(hs_buf_append(&cw->dict, p + (size_t)width * i, width));
            cw->n_dict++;
        }
        HS_TRY(dict_idx_push(cw, (uint32_t)v));
    }
    return HS_OK;
}

static inline const uint8_t *dict_entry(const pq_colw *cw, int64_t i, uint32_t *len)
{
    uint32_t off = ((const uint32_t *)cw->dict_off.data)[i];
    uint32_t l;
    memcpy(&l, cw->dict.data + off - 4, 4);
    *len = l;
    return cw->dict.data + off;
}

static int dict_cmp(const pq_colw *cw, int64_t a, int64_t b)
{
    uint32_t la, lb;
    const uint8_t *pa = dict_entry(cw, a, &la), *pb = dict_entry(cw, b, &lb);
    uint32_t n = la < lb ? la : lb;
    int c = n ? memcmp(pa, pb, n) : 0;
    return c ? c : (la < lb ? -1 : la > lb);
}

static hs_status dict_put_bytes(pq_colw *cw, const int32_t *off, const uint8_t *data, int64_t n,
                                bool stats)
{
    HS_TRY(hs_buf_reserve(&cw->idx, (size_t)n * 4));
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = data + off[i];
        uint32_t len = (uint32_t)(off[i + 1] - off[i]);
        uint64_t v;
        bool found;
        HS_TRY(hs_map_get_or_put(&cw->bm, p, len, cw->n_dict, &v, &found));
        if (!found) {
            HS_TRY(hs_buf_reserve(&cw->dict, 4 + (size_t)len));
            HS_TRY(hs_buf_put_u32le(&cw->dict, len));
            HS_TRY(HS_VEC_PUSH(&cw->dict_off, uint32_t, (uint32_t)cw->dict.len));
            HS_TRY(hs_buf_append(&cw->dict, p, len));
            cw->n_dict++;
            if (cw->n_dict > cw->seen_cap) {
                size_t nc = cw->seen_cap ? cw->seen_cap * 2 : 1024;
                uint32_t *ns = hs_realloc(cw->seen, nc * sizeof *ns);
                if (!ns)
                    return HS_NOMEM;
                memset(ns + cw->seen_cap, 0, (nc - cw->seen_cap) * sizeof *ns);
                cw->seen = ns;
                cw->seen_cap = nc;
            }
        }
        ((uint32_t *)(cw->idx.data + cw->idx.len))[0] = (uint32_t)v;
        cw->idx.len += 4;
        if (stats && cw->seen[v] != cw->epoch) {
            cw->seen[v] = cw->epoch;
            if (cw->pmin_idx < 0) {
                cw->pmin_idx = cw->pmax_idx = (int64_t)v;
            } else if (dict_cmp(cw, (int64_t)v, cw->pmin_idx) < 0) {
                cw->pmin_idx = (int64_t)v;
            } else if (dict_cmp(cw, (int64_t)v, cw->pmax_idx) > 0) {
                cw->pmax_idx = (int64_t)v;
            }
        }
    }
    return HS_OK;
}

static void dict_reset(pq_colw *cw)
{
    ih_clear(&cw->ih);
    hs_map_clear(&cw->bm);
    hs_buf_reset(&cw->dict);
    hs_buf_reset(&cw->dict_off);
    cw->n_dict = 0;
    cw->dict_used = cw->dict_on = cw->leaf->dictionary;
}

/* ------------------------------------------------------------------------ */
/* values into the current page                                               */

static hs_status put_fixed(pq_writer *w, pq_colw *cw, const uint8_t *p, int64_t n)
{
    const pq_wleaf *lf = cw->leaf;
    if (w->want_stats)
        HS_TRY(pq_wstats_update_fixed(&cw->pstats, lf->order, lf->ptype, cw->width, p, n));
    if (cw->dict_on) {
        if (cw->width == 4 || cw->width == 8)
            return dict_put_int(cw, p, n, cw->width);
        return dict_put_flba(cw, p, n, cw->width);
    }
    return hs_buf_append(&cw->vals, p, (size_t)n * cw->width);
}

static hs_status put_bytes(pq_writer *w, pq_colw *cw, const int32_t *off, const uint8_t *data,
                           int64_t n)
{
    if (cw->dict_on)
        return dict_put_bytes(cw, off, data, n, w->want_stats);
    if (w->want_stats)
        HS_TRY(pq_wstats_update_binary(&cw->pstats, cw->leaf->order, off, data, n));
    size_t total = (size_t)n * 4 + (size_t)(off[n] - off[0]);
    HS_TRY(hs_buf_reserve(&cw->vals, total));
    uint8_t *o = cw->vals.data + cw->vals.len;
    for (int64_t i = 0; i < n; i++) {
        uint32_t len = (uint32_t)(off[i + 1] - off[i]);
        memcpy(o, &len, 4);
        memcpy(o + 4, data + off[i], len);
        o += 4 + len;
    }
    cw->vals.len += total;
    return HS_OK;
}

static hs_status put_bool(pq_writer *w, pq_colw *cw, const uint8_t *bits, int64_t s, int64_t n)
{
    if (w->want_stats)
        pq_wstats_update_bool(&cw->pstats, bits, s, n);
    size_t need = (size_t)((cw->n_bits + n + 7) >> 3);
    if (need > cw->vals.len)
        HS_TRY(hs_buf_resize(&cw->vals, need));
    uint8_t *o = cw->vals.data;
    int64_t b = cw->n_bits;
    for (int64_t i = 0; i < n; i++, b++) {
        int bit = (bits[(s + i) >> 3] >> ((s + i) & 7)) & 1;
        if (bit)
            o[b >> 3] |= (uint8_t)(1u << (b & 7));
        else
            o[b >> 3] &= (uint8_t)~(1u << (b & 7));
    }
    cw->n_bits = b;
    return HS_OK;
}

/* Appends values [s, s+n) of leaf column col (all valid). */
static hs_status put_run(pq_writer *w, pq_colw *cw, const hs_column *col, int64_t s, int64_t n)
{
    const pq_wleaf *lf = cw->leaf;
    const uint8_t *src = col->values.data;
    switch (lf->vk) {
    case PQ_VK_NULL:
        return HS_OK;
    case PQ_VK_BOOL:
        return put_bool(w, cw, src, s, n);
    case PQ_VK_COPY:
        return put_fixed(w, cw, src + (size_t)s * cw->width, n);
    case PQ_VK_BYTES:
        return put_bytes(w, cw, HS_COL_OFFSETS(col) + s, src, n);
    default:
        break;
    }
    while (n > 0) {
        int64_t m = n < CONV_BLOCK ? n : CONV_BLOCK;
        hs_buf_reset(&w->conv);
        HS_TRY(hs_buf_reserve(&w->conv, (size_t)m * 16));
        uint8_t *o = w->conv.data;
        int32_t *o32 = (int32_t *)o;
        int64_t *o64 = (int64_t *)o;
        switch (lf->vk) {
        case PQ_VK_I8:
            for (int64_t i = 0; i < m; i++) o32[i] = ((const int8_t *)src)[s + i];
            break;
        case PQ_VK_U8:
            for (int64_t i = 0; i < m; i++) o32[i] = ((const uint8_t *)src)[s + i];
            break;
        case PQ_VK_I16:
            for (int64_t i = 0; i < m; i++) o32[i] = ((const int16_t *)src)[s + i];
            break;
        case PQ_VK_U16:
            for (int64_t i = 0; i < m; i++) o32[i] = ((const uint16_t *)src)[s + i];
            break;
        case PQ_VK_MUL1000_32:
            for (int64_t i = 0; i < m; i++)
                o32[i] = (int32_t)((uint32_t)((const int32_t *)src)[s + i] * 1000u);
            break;
        case PQ_VK_MUL1000_64:
            for (int64_t i = 0; i < m; i++)
                o64[i] = (int64_t)((uint64_t)((const int64_t *)src)[s + i] * 1000u);
            break;
        case PQ_VK_DEC32:
            for (int64_t i = 0; i < m; i++)
                memcpy(o + 4 * i, src + 16 * (s + i), 4);
            break;
        case PQ_VK_DEC64:
            for (int64_t i = 0; i < m; i++)
                memcpy(o + 8 * i, src + 16 * (s + i), 8);
            break;
        case PQ_VK_DECFLBA: {
            int wd = cw->width;
            for (int64_t i = 0; i < m; i++) {
                const uint8_t *v = src + 16 * (s + i);
                for (int j = 0; j < wd; j++)
                    o[wd * i + j] = v[wd - 1 - j];
            }
            break;
        }
        default:
            return HS_INTERNAL;
        }
        HS_TRY(put_fixed(w, cw, o, m));
        s += m;
        n -= m;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* pages                                                                      */

static int64_t page_value_bytes(const pq_colw *cw)
{
    if (cw->dict_on) {
        int bw = pq_bit_width(cw->n_dict ? cw->n_dict - 1 : 0);
        int64_t groups = (cw->n_values + 7) / 8;
        int rle = 1 + (bw + 7) / 8;
        return 1 + groups * (bw > rle ? bw : rle);
    }
    return (int64_t)cw->vals.len;
}

/* Re-encodes the page's PLAIN values with encoding enc into out. */
static hs_status encode_values(pq_writer *w, pq_colw *cw, pq_encoding enc, hs_buf *out,
                               hs_error *err)
{
    const pq_wleaf *lf = cw->leaf;
    const void *values = cw->vals.data;
    if (lf->ptype == PQ_BOOLEAN) {
        /* packed bits -> one byte per value */
        hs_buf_reset(&w->views);
        TRY_MEM(hs_buf_reserve(&w->views, (size_t)cw->n_values + 1));
        for (int64_t i = 0; i < cw->n_values; i++)
            w->views.data[i] = (cw->vals.data[i >> 3] >> (i & 7)) & 1;
        values = w->views.data;
    } else if (lf->ptype == PQ_BYTE_ARRAY || lf->ptype == PQ_FIXED_LEN_BYTE_ARRAY) {
        hs_buf_reset(&w->views);
        TRY_MEM(hs_buf_reserve(&w->views, (size_t)cw->n_values * sizeof(pq_bytes)));
        pq_bytes *v = (pq_bytes *)w->views.data;
        const uint8_t *p = cw->vals.data;
        for (int64_t i = 0; i < cw->n_values; i++) {
            if (lf->ptype == PQ_BYTE_ARRAY) {
                uint32_t len;
                memcpy(&len, p, 4);
                v[i].p = p + 4;
                v[i].len = len;
                p += 4 + len;
            } else {
                v[i].p = p;
                v[i].len = (uint32_t)cw->width;
                p += cw->width;
            }
        }
        values = v;
    }
    hs_status s = pq_values_encode(enc, lf->ptype, lf->type_length, values, cw->n_values, out);
    if (s != HS_OK)
        return hs_err_set(err, s, "parquet writer: column %s: encoding values failed",
                          lf->dotted);
    return HS_OK;
}

/* Appends the value section of the page to out. */
static hs_status page_values(pq_writer *w, pq_colw *cw, hs_buf *out, pq_encoding *enc,
                             hs_error *err)
{
    if (cw->dict_on) {
        *enc = PQ_ENC_RLE_DICTIONARY;
        hs_status s = pq_dict_indices_encode((const uint32_t *)cw->idx.data, cw->n_values,
                                             cw->n_dict, out);
        if (s != HS_OK)
            return hs_err_set(err, s, "parquet writer: column %s: dictionary indices",
                              cw->leaf->dotted);
        return HS_OK;
    }
    *enc = cw->leaf->encoding;
    if (*enc == PQ_ENC_PLAIN) {
        TRY_MEM(hs_buf_append(out, cw->vals.data, cw->vals.len));
        return HS_OK;
    }
    return encode_values(w, cw, *enc, out, err);
}

static hs_status compress_into(pq_writer *w, const uint8_t *p, size_t n, hs_buf *dst,
                               hs_error *err)
{
    hs_buf_reset(dst);
    return hs_compress(w->codec, w->level, p, n, dst, err);
}

static hs_status write_out(pq_writer *w, const void *p, size_t n, hs_error *err)
{
    hs_status s = hs_wfile_write(w->out, p, n, err);
    if (s != HS_OK)
        w->failed = true;
    return s;
}

/* Closes the page under construction (no-op when empty). */
static hs_status flush_page(pq_writer *w, pq_colw *cw, hs_error *err)
{
    if (cw->n_levels == 0)
        return HS_OK;
    const pq_wleaf *lf = cw->leaf;
    bool v2 = w->opt.data_page_v2;
    /* statistics */
    if (cw->dict_on && lf->vk == PQ_VK_BYTES && w->want_stats && cw->pmin_idx >= 0) {
        uint32_t l;
        const uint8_t *p = dict_entry(cw, cw->pmin_idx, &l);
        TRY_MEM(pq_wstats_update_one(&cw->pstats, lf->order, p, l));
        p = dict_entry(cw, cw->pmax_idx, &l);
        TRY_MEM(pq_wstats_update_one(&cw->pstats, lf->order, p, l));
    }
    cw->pstats.null_count = cw->n_levels - cw->n_values;
    bool has_mm = false;
    hs_buf_reset(&w->smin);
    hs_buf_reset(&w->smax);
    if (w->want_stats)
        TRY_MEM(pq_wstats_encode(&cw->pstats, lf->order, lf->ptype, lf->type_length, &w->smin,
                                 &w->smax, &has_mm));

    /* body: compressed (or copied) straight onto the end of the chunk */
    hs_buf *pg = &w->page;
    hs_buf_reset(pg);
    size_t rep_len = 0, def_len = 0;
    if (lf->max_rep > 0) {
        TRY_MEM(pq_levels_encode((const uint16_t *)cw->rep.data, cw->n_levels, lf->max_rep, !v2, pg));
        rep_len = pg->len;
    }
    if (lf->max_def > 0) {
        TRY_MEM(pq_levels_encode((const uint16_t *)cw->def.data, cw->n_levels, lf->max_def, !v2, pg));
        def_len = pg->len - rep_len;
    }
    pq_encoding enc;
    const uint8_t *src;
    size_t src_len, unc_len;
    bool plain_direct = !cw->dict_on && lf->encoding == PQ_ENC_PLAIN;
    size_t body_start = cw->chunk.len;
    if (!v2) {
        if (plain_direct && pg->len == 0) {
            enc = PQ_ENC_PLAIN;  /* no levels: the values are the page */
            src = cw->vals.data ? cw->vals.data : (const uint8_t *)"";
            src_len = cw->vals.len;
        } else {
            HS_TRY(page_values(w, cw, pg, &enc, err));
            src = pg->data;
            src_len = pg->len;
        }
        unc_len = src_len;
    } else {
        TRY_MEM(hs_buf_append(&cw->chunk, pg->data, pg->len));  /* levels, uncompressed */
        if (plain_direct) {
            enc = PQ_ENC_PLAIN;
            src = cw->vals.data ? cw->vals.data : (const uint8_t *)"";
            src_len = cw->vals.len;
        } else {
            hs_buf_reset(&w->vbody);
            HS_TRY(page_values(w, cw, &w->vbody, &enc, err));
            src = w->vbody.data ? w->vbody.data : (const uint8_t *)"";
            src_len = w->vbody.len;
        }
        unc_len = pg->len + src_len;
    }
    if (w->codec == HS_CODEC_NONE)
        TRY_MEM(hs_buf_append(&cw->chunk, src, src_len));
    else
        HS_TRY(hs_compress(w->codec, w->level, src, src_len, &cw->chunk, err));
    size_t body_len = cw->chunk.len - body_start;

    /* header */
    pq_page_header h;
    memset(&h, 0, sizeof h);
    h.uncompressed_page_size = (int32_t)unc_len;
    h.compressed_page_size = (int32_t)body_len;
    pq_statistics *st;
    if (!v2) {
        h.type = PQ_PAGE_DATA;
        h.has_data = true;
        h.data.num_values = (int32_t)cw->n_levels;
        h.data.encoding = enc;
        h.data.def_encoding = PQ_ENC_RLE;
        h.data.rep_encoding = PQ_ENC_RLE;
        h.data.has_statistics = !w->opt.no_statistics;
        st = &h.data.statistics;
    } else {
        h.type = PQ_PAGE_DATA_V2;
        h.has_data_v2 = true;
        h.data_v2.num_values = (int32_t)cw->n_levels;
        h.data_v2.num_nulls = (int32_t)(cw->n_levels - cw->n_values);
        h.data_v2.num_rows = (int32_t)cw->n_rows;
        h.data_v2.encoding = enc;
        h.data_v2.def_levels_byte_length = (int32_t)def_len;
        h.data_v2.rep_levels_byte_length = (int32_t)rep_len;
        h.data_v2.is_compressed = w->codec != HS_CODEC_NONE;
        h.data_v2.has_statistics = !w->opt.no_statistics;
        st = &h.data_v2.statistics;
    }
    st->has_null_count = true;
    st->null_count = cw->pstats.null_count;
    if (has_mm && w->smin.len <= MAX_CHUNK_STAT && w->smax.len <= MAX_CHUNK_STAT) {
        st->min_value.p = w->smin.data ? w->smin.data : (const uint8_t *)"";
        st->min_value.len = (uint32_t)w->smin.len;
        st->max_value.p = w->smax.data ? w->smax.data : (const uint8_t *)"";
        st->max_value.len = (uint32_t)w->smax.len;
    }
    size_t hdr_start = cw->hdrs.len;
    TRY_MEM(pq_encode_page_header(&h, &cw->hdrs));
    size_t hdr_len = cw->hdrs.len - hdr_start;

    /* record */
    pq_page_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.hdr_off = (uint32_t)hdr_start;
    rec.hdr_len = (uint32_t)hdr_len;
    rec.body_off = body_start;
    rec.size = (int32_t)(hdr_len + body_len);
    rec.first_row = cw->c_rows;
    rec.null_count = cw->pstats.null_count;
    rec.null_page = cw->n_values == 0;
    if (!w->opt.no_page_index) {
        if (has_mm) {
            uint32_t ml = (uint32_t)w->smin.len, xl = (uint32_t)w->smax.len;
            if (lf->order == PQ_ORD_BYTES) {
                ml = pq_truncate_min(ml, PAGE_INDEX_TRUNC);
                xl = pq_truncate_max(w->smax.data, xl, PAGE_INDEX_TRUNC);
            }
            rec.has_minmax = true;
            rec.min_off = (uint32_t)cw->ci_bytes.len;
            rec.min_len = ml;
            TRY_MEM(hs_buf_append(&cw->ci_bytes, w->smin.data, ml));
            rec.max_off = (uint32_t)cw->ci_bytes.len;
            rec.max_len = xl;
            TRY_MEM(hs_buf_append(&cw->ci_bytes, w->smax.data, xl));
        } else if (!rec.null_page) {
            cw->ci_valid = false;
        }
    }
    TRY_MEM(hs_buf_append(&cw->pages, &rec, sizeof rec));
    if (w->want_stats)
        TRY_MEM(pq_wstats_merge(&cw->cstats, &cw->pstats, lf->order));
    cw->c_levels += cw->n_levels;
    cw->c_rows += cw->n_rows;
    cw->c_uncompressed += (int64_t)(hdr_len + unc_len);
    cw->c_compressed += rec.size;
    cw->enc_pages[enc < N_ENC ? enc : 0]++;

    /* reset the page */
    hs_buf_reset(&cw->def);
    hs_buf_reset(&cw->rep);
    hs_buf_reset(&cw->vals);
    hs_buf_reset(&cw->idx);
    cw->n_levels = cw->n_rows = cw->n_values = cw->n_bits = 0;
    pq_wstats_reset(&cw->pstats);
    cw->epoch++;
    cw->pmin_idx = cw->pmax_idx = -1;
    return HS_OK;
}

/* The dictionary of a column chunk whose first values are nearly all
 * distinct will not pay: before any page is closed, the page's values are
 * turned back into PLAIN and the chunk is written without a dictionary page
 * (instead of a dictionary filled to dictionary_page_bytes that readers load
 * for the first pages only: a 1 MiB dictionary per chunk of random keys). */
static hs_status dict_give_up(pq_writer *w, pq_colw *cw)
{
    const pq_wleaf *lf = cw->leaf;
    const uint32_t *idx = (const uint32_t *)cw->idx.data;
    hs_buf_reset(&cw->vals);
    if (lf->vk == PQ_VK_BYTES) {
        if (w->want_stats && cw->pmin_idx >= 0) {
            uint32_t l;
            const uint8_t *p = dict_entry(cw, cw->pmin_idx, &l);
            HS_TRY(pq_wstats_update_one(&cw->pstats, lf->order, p, l));
            p = dict_entry(cw, cw->pmax_idx, &l);
            HS_TRY(pq_wstats_update_one(&cw->pstats, lf->order, p, l));
        }
        for (int64_t i = 0; i < cw->n_values; i++) {
            uint32_t l;
            const uint8_t *p = dict_entry(cw, idx[i], &l);
            HS_TRY(hs_buf_append(&cw->vals, p - 4, 4 + (size_t)l));
        }
    } else {
        size_t wd = (size_t)cw->width;
        HS_TRY(hs_buf_reserve(&cw->vals, (size_t)cw->n_values * wd));
        for (int64_t i = 0; i < cw->n_values; i++)
            memcpy(cw->vals.data + (size_t)i * wd, cw->dict.data + (size_t)idx[i] * wd, wd);
        cw->vals.len = (size_t)cw->n_values * wd;
    }
    hs_buf_reset(&cw->idx);
    ih_clear(&cw->ih);
    hs_map_clear(&cw->bm);
    hs_buf_reset(&cw->dict);
    hs_buf_reset(&cw->dict_off);
    cw->n_dict = 0;
    cw->dict_on = cw->dict_used = false;
    cw->pmin_idx = cw->pmax_idx = -1;
    return HS_OK;
}

/* After a chunk of rows: dictionary fallback and page limits. */
static hs_status after_chunk(pq_writer *w, pq_colw *cw, hs_error *err)
{
    if (cw->dict_on && cw->c_rows == 0 && cw->n_values >= 1024 &&
        (int64_t)cw->n_dict * 4 > cw->n_values * 3 && cw->leaf->ptype != PQ_BOOLEAN) {
        TRY_MEM(dict_give_up(w, cw));
    }
    if (cw->dict_on && (int64_t)cw->dict.len >= w->opt.dictionary_page_bytes) {
        HS_TRY(flush_page(w, cw, err));
        cw->dict_on = false;
        return HS_OK;
    }
    if (cw->n_rows >= w->opt.page_rows || page_value_bytes(cw) >= w->opt.page_bytes)
        return flush_page(w, cw, err);
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* shredding                                                                  */

/* Appends values of leaf column col for the valid positions in [s, s+n). */
static hs_status put_valid_runs(pq_writer *w, pq_colw *cw, const hs_column *col, int64_t s,
                                int64_t n, hs_error *err)
{
    const uint8_t *v = col->validity.data;
    if (!v || col->null_count == 0) {
        TRY_MEM(put_run(w, cw, col, s, n));
        return HS_OK;
    }
    int64_t i = s, end = s + n;
    while (i < end) {
        /* skip nulls, whole bytes at a time */
        while (i < end && !hs_bit_get(v, i)) {
            if ((i & 7) == 0 && i + 8 <= end && v[i >> 3] == 0)
                i += 8;
            else
                i++;
        }
        int64_t j = i;
        while (j < end && hs_bit_get(v, j)) {
            if ((j & 7) == 0 && j + 8 <= end && v[j >> 3] == 0xff)
                j += 8;
            else
                j++;
        }
        if (j > i)
            TRY_MEM(put_run(w, cw, col, i, j - i));
        i = j;
    }
    return HS_OK;
}

static int64_t count_valid(const hs_column *col, int64_t s, int64_t n)
{
    if (!col->validity.data || col->null_count == 0)
        return n;
    int64_t c = 0;
    for (int64_t i = s; i < s + n; i++)
        c += hs_bit_get(col->validity.data, i);
    return c;
}

/* Flat column: rows [r0, r0+n) of leaf column col. */
static hs_status feed_flat(pq_writer *w, pq_colw *cw, const hs_column *col, int64_t r0,
                           int64_t n, hs_error *err)
{
    if (cw->leaf->max_def > 0) {
        TRY_MEM(hs_buf_reserve(&cw->def, (size_t)n * 2));
        uint16_t *d = (uint16_t *)(cw->def.data + cw->def.len);
        const uint8_t *v = col->validity.data;
        if (!v || col->null_count == 0 || cw->leaf->vk == PQ_VK_NULL) {
            uint16_t one = cw->leaf->vk == PQ_VK_NULL ? 0 : 1;
            for (int64_t i = 0; i < n; i++)
                d[i] = one;
        } else {
            for (int64_t i = 0; i < n; i++)
                d[i] = (uint16_t)hs_bit_get(v, r0 + i);
        }
        cw->def.len += (size_t)n * 2;
    }
    int64_t nv = cw->leaf->vk == PQ_VK_NULL ? 0 : count_valid(col, r0, n);
    if (nv)
        HS_TRY(put_valid_runs(w, cw, col, r0, n, err));
    cw->n_levels += n;
    cw->n_rows += n;
    cw->n_values += nv;
    return HS_OK;
}

/* Nested column: shreds rows [r0, r0+n) of the top-level column. */
static hs_status feed_nested(pq_writer *w, pq_colw *cw, const hs_column *top, int64_t r0,
                             int64_t n, hs_error *err)
{
    const pq_wleaf *lf = cw->leaf;
    int cur = 0;
    TRY_MEM(hs_buf_resize(&w->ed[0], (size_t)n * 2));
    TRY_MEM(hs_buf_resize(&w->er[0], (size_t)n * 2));
    TRY_MEM(hs_buf_resize(&w->ei[0], (size_t)n * 8));
    uint16_t *def = (uint16_t *)w->ed[0].data, *rep = (uint16_t *)w->er[0].data;
    int64_t *idx = (int64_t *)w->ei[0].data;
    for (int64_t i = 0; i < n; i++) {
        def[i] = 0;
        rep[i] = 0;
        idx[i] = r0 + i;
    }
    int64_t cnt = n;
    const hs_column *col = top;
    for (int k = 0; k < lf->n_nodes; k++) {
        const pq_wnode *nd = &lf->nodes[k];
        if (k == lf->n_nodes - 1 && lf->vk == PQ_VK_NULL) {
            for (int64_t i = 0; i < cnt; i++)
                idx[i] = -1;  /* the null type: every slot is null */
            break;
        }
        if (nd->nullable) {
            const uint8_t *v = col->validity.data;
            if (v && col->null_count > 0) {
                for (int64_t i = 0; i < cnt; i++) {
                    if (idx[i] < 0)
                        continue;
                    if (hs_bit_get(v, idx[i]))
                        def[i]++;
                    else
                        idx[i] = -1;
                }
            } else {
                for (int64_t i = 0; i < cnt; i++)
                    def[i] += idx[i] >= 0;
            }
        }
        if (k == lf->n_nodes - 1)
            break;
        if (nd->kind == PQ_NODE_PLAIN) {
            if (nd->child >= col->n_children)
                return hs_err_set(err, HS_INVALID, "parquet writer: column %s: missing child",
                                  lf->dotted);
            col = col->children[nd->child];
            continue;
        }
        /* list-like: expand */
        if (col->n_children < 1)
            return hs_err_set(err, HS_INVALID, "parquet writer: column %s: list without child",
                              lf->dotted);
        const hs_column *child = col->children[0];
        const int32_t *off = nd->kind == PQ_NODE_FIXED ? NULL : HS_COL_OFFSETS(col);
        int64_t wd = nd->width;
        int64_t total = 0;
        for (int64_t i = 0; i < cnt; i++) {
            if (idx[i] < 0) {
                total++;
                continue;
            }
            int64_t s = off ? off[idx[i]] : idx[i] * wd, e = off ? off[idx[i] + 1] : s + wd;
            if (s < 0 || e < s || e > child->length)
                return hs_err_set(err, HS_INVALID,
                                  "parquet writer: column %s: list offsets out of range",
                                  lf->dotted);
            total += e > s ? e - s : 1;
        }
        int nx = cur ^ 1;
        TRY_MEM(hs_buf_resize(&w->ed[nx], (size_t)total * 2));
        TRY_MEM(hs_buf_resize(&w->er[nx], (size_t)total * 2));
        TRY_MEM(hs_buf_resize(&w->ei[nx], (size_t)total * 8));
        uint16_t *d2 = (uint16_t *)w->ed[nx].data, *r2 = (uint16_t *)w->er[nx].data;
        int64_t *i2 = (int64_t *)w->ei[nx].data;
        int64_t o = 0;
        uint16_t lrep = (uint16_t)nd->rep_level;
        for (int64_t i = 0; i < cnt; i++) {
            if (idx[i] < 0) {
                d2[o] = def[i]; r2[o] = rep[i]; i2[o] = -1; o++;
                continue;
            }
            int64_t s = off ? off[idx[i]] : idx[i] * wd, e = off ? off[idx[i] + 1] : s + wd;
            if (s == e) {
                d2[o] = def[i]; r2[o] = rep[i]; i2[o] = -1; o++;
                continue;
            }
            uint16_t dd = (uint16_t)(def[i] + 1);
            d2[o] = dd; r2[o] = rep[i]; i2[o] = s; o++;
            for (int64_t j = s + 1; j < e; j++) {
                d2[o] = dd; r2[o] = lrep; i2[o] = j; o++;
            }
        }
        cur = nx;
        def = d2; rep = r2; idx = i2;
        cnt = total;
        col = child;
    }
    /* levels */
    if (lf->max_def > 0)
        TRY_MEM(hs_buf_append(&cw->def, def, (size_t)cnt * 2));
    if (lf->max_rep > 0)
        TRY_MEM(hs_buf_append(&cw->rep, rep, (size_t)cnt * 2));
    /* values: runs of consecutive live positions */
    int64_t nv = 0;
    if (lf->vk != PQ_VK_NULL) {
        int64_t i = 0;
        while (i < cnt) {
            if (idx[i] < 0) {
                i++;
                continue;
            }
            int64_t j = i + 1;
            while (j < cnt && idx[j] == idx[j - 1] + 1)
                j++;
            TRY_MEM(put_run(w, cw, col, idx[i], j - i));
            nv += j - i;
            i = j;
        }
    }
    cw->n_levels += cnt;
    cw->n_rows += n;
    cw->n_values += nv;
    return HS_OK;
}

/* Fast path of feed_nested for a top-level LIST or FIXED_LIST of primitives
 * (tags, vectors): levels written directly per row, values appended in runs
 * of adjacent element ranges. */
static hs_status feed_list_leaf(pq_writer *w, pq_colw *cw, const hs_column *top, int64_t r0,
                                int64_t n, hs_error *err)
{
    const pq_wleaf *lf = cw->leaf;
    const pq_wnode *ln = &lf->nodes[0], *en = &lf->nodes[1];
    if (top->n_children < 1)
        return hs_err_set(err, HS_INVALID, "parquet writer: column %s: list without child",
                          lf->dotted);
    const hs_column *child = top->children[0];
    const int32_t *off = ln->kind == PQ_NODE_FIXED ? NULL : HS_COL_OFFSETS(top);
    int64_t wd = ln->width;
    const uint8_t *lv = ln->nullable && top->validity.data && top->null_count > 0
                            ? top->validity.data : NULL;
    const uint8_t *ev = en->nullable && child->validity.data && child->null_count > 0
                            ? child->validity.data : NULL;
    uint16_t d_empty = (uint16_t)ln->nullable, d_max = (uint16_t)lf->max_def;
    uint16_t d_enull = (uint16_t)(d_max - 1), lrep = (uint16_t)ln->rep_level;
    if (lf->vk == PQ_VK_NULL)
        d_max = d_enull;  /* the null type: every element is null */
    int64_t total = 0;
    for (int64_t r = r0; r < r0 + n; r++) {
        if (lv && !hs_bit_get(lv, r)) {
            total++;
            continue;
        }
        int64_t s = off ? off[r] : r * wd, e = off ? off[r + 1] : s + wd;
        if (s < 0 || e < s || e > child->length)
            return hs_err_set(err, HS_INVALID,
                              "parquet writer: column %s: list offsets out of range", lf->dotted);
        total += e > s ? e - s : 1;
    }
    TRY_MEM(hs_buf_reserve(&cw->def, (size_t)total * 2));
    TRY_MEM(hs_buf_reserve(&cw->rep, (size_t)total * 2));
    uint16_t *d = (uint16_t *)(cw->def.data + cw->def.len);
    uint16_t *rp = (uint16_t *)(cw->rep.data + cw->rep.len);
    int64_t o = 0, run_s = 0, run_e = 0, nv = 0;
    bool has_vals = lf->vk != PQ_VK_NULL;
    for (int64_t r = r0; r < r0 + n; r++) {
        if (lv && !hs_bit_get(lv, r)) {
            d[o] = 0; rp[o] = 0; o++;
            continue;
        }
        int64_t s = off ? off[r] : r * wd, e = off ? off[r + 1] : s + wd;
        if (s == e) {
            d[o] = d_empty; rp[o] = 0; o++;
            continue;
        }
        rp[o] = 0;
        for (int64_t j = 1; j < e - s; j++)
            rp[o + j] = lrep;
        if (ev) {
            for (int64_t j = s; j < e; j++)
                d[o + j - s] = hs_bit_get(ev, j) ? d_max : d_enull;
        } else {
            for (int64_t j = 0; j < e - s; j++)
                d[o + j] = d_max;
        }
        o += e - s;
        if (!has_vals)
            continue;
        if (run_e == s && run_e > run_s) {
            run_e = e;
        } else {
            if (run_e > run_s) {
                HS_TRY(put_valid_runs(w, cw, child, run_s, run_e - run_s, err));
                nv += count_valid(child, run_s, run_e - run_s);
            }
            run_s = s;
            run_e = e;
        }
    }
    if (has_vals && run_e > run_s) {
        HS_TRY(put_valid_runs(w, cw, child, run_s, run_e - run_s, err));
        nv += count_valid(child, run_s, run_e - run_s);
    }
    cw->def.len += (size_t)total * 2;
    cw->rep.len += (size_t)total * 2;
    cw->n_levels += total;
    cw->n_rows += n;
    cw->n_values += nv;
    return HS_OK;
}

/* Feeds rows [r0, r1) of top-level column top into leaf writer cw. */
static hs_status feed_rows(pq_writer *w, pq_colw *cw, const hs_column *top, int64_t r0,
                           int64_t r1, hs_error *err)
{
    const pq_wleaf *lf = cw->leaf;
    bool flat = lf->n_nodes == 1;
    bool list_leaf = lf->n_nodes == 2 && lf->max_rep == 1 &&
                     (lf->nodes[0].kind == PQ_NODE_LIST || lf->nodes[0].kind == PQ_NODE_FIXED);
    while (r0 < r1) {
        int64_t room = w->opt.page_rows - cw->n_rows;
        if (room <= 0) {
            HS_TRY(flush_page(w, cw, err));
            continue;
        }
        int64_t n = r1 - r0;
        if (n > CHUNK_ROWS)
            n = CHUNK_ROWS;
        if (n > room)
            n = room;
        if (flat)
            HS_TRY(feed_flat(w, cw, top, r0, n, err));
        else if (list_leaf)
            HS_TRY(feed_list_leaf(w, cw, top, r0, n, err));
        else
            HS_TRY(feed_nested(w, cw, top, r0, n, err));
        HS_TRY(after_chunk(w, cw, err));
        r0 += n;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* row groups                                                                 */

static int64_t rg_estimated_bytes(const pq_writer *w)
{
    int64_t b = 0;
    for (int i = 0; i < w->ws.n_leaves; i++) {
        const pq_colw *cw = &w->cols[i];
        b += (int64_t)(cw->chunk.len + cw->hdrs.len + cw->dict.len) + page_value_bytes(cw);
    }
    return b;
}

static hs_status write_dict_page(pq_writer *w, pq_colw *cw, int64_t *size, int64_t *unc,
                                 hs_error *err)
{
    const uint8_t *body = cw->dict.data ? cw->dict.data : (const uint8_t *)"";
    size_t body_len = cw->dict.len;
    if (w->codec != HS_CODEC_NONE) {
        HS_TRY(compress_into(w, body, body_len, &w->comp, err));
        body = w->comp.data;
        body_len = w->comp.len;
    }
    pq_page_header h;
    memset(&h, 0, sizeof h);
    h.type = PQ_PAGE_DICTIONARY;
    h.uncompressed_page_size = (int32_t)cw->dict.len;
    h.compressed_page_size = (int32_t)body_len;
    h.has_dict = true;
    h.dict.num_values = (int32_t)cw->n_dict;
    h.dict.encoding = PQ_ENC_PLAIN;
    hs_buf_reset(&w->hdr);
    TRY_MEM(pq_encode_page_header(&h, &w->hdr));
    HS_TRY(write_out(w, w->hdr.data, w->hdr.len, err));
    HS_TRY(write_out(w, body, body_len, err));
    *size = (int64_t)(w->hdr.len + body_len);
    *unc = (int64_t)(w->hdr.len + cw->dict.len);
    return HS_OK;
}

static hs_status copy_bytes(pq_writer *w, const hs_buf *b, pq_bytes *out, hs_error *err)
{
    uint8_t *p = hs_arena_alloc(&w->arena, b->len ? b->len : 1);
    if (!p)
        return nomem(err);
    if (b->len)
        memcpy(p, b->data, b->len);
    out->p = p;
    out->len = (uint32_t)b->len;
    return HS_OK;
}

/* Builds and encodes the page index of one chunk. */
static hs_status chunk_page_index(pq_writer *w, pq_colw *cw, int64_t data_start, hs_error *err)
{
    const pq_page_rec *recs = (const pq_page_rec *)cw->pages.data;
    int32_t np = (int32_t)(cw->pages.len / sizeof *recs);
    int64_t ref[4] = {-1, -1, -1, -1};
    hs_arena_reset(&w->tmp);
    if (cw->ci_valid && w->want_stats) {
        pq_column_index ci;
        memset(&ci, 0, sizeof ci);
        ci.n_pages = np;
        ci.null_pages = hs_arena_calloc(&w->tmp, np ? np : 1, sizeof(bool));
        ci.min_values = hs_arena_calloc(&w->tmp, np ? np : 1, sizeof(pq_bytes));
        ci.max_values = hs_arena_calloc(&w->tmp, np ? np : 1, sizeof(pq_bytes));
        ci.null_counts = hs_arena_calloc(&w->tmp, np ? np : 1, sizeof(int64_t));
        if (!ci.null_pages || !ci.min_values || !ci.max_values || !ci.null_counts)
            return nomem(err);
        ci.has_null_counts = true;
        /* never NULL: a NULL pq_bytes would mean "absent" to the encoder */
        const uint8_t *cb = cw->ci_bytes.data ? cw->ci_bytes.data : (const uint8_t *)"";
        bool asc = true, desc = true;
        int prev = -1;
        const pq_wleaf *lf = cw->leaf;
        for (int32_t i = 0; i < np; i++) {
            ci.null_pages[i] = recs[i].null_page;
            ci.null_counts[i] = recs[i].null_count;
            if (!recs[i].has_minmax) {
                ci.min_values[i].p = ci.max_values[i].p = (const uint8_t *)"";
                continue;
            }
            ci.min_values[i].p = cb + recs[i].min_off;
            ci.min_values[i].len = recs[i].min_len;
            ci.max_values[i].p = cb + recs[i].max_off;
            ci.max_values[i].len = recs[i].max_len;
            if (prev >= 0) {
                int cmin = pq_stat_cmp(lf->order, lf->ptype, ci.min_values[prev].p,
                                       ci.min_values[prev].len, ci.min_values[i].p,
                                       ci.min_values[i].len);
                int cmax = pq_stat_cmp(lf->order, lf->ptype, ci.max_values[prev].p,
                                       ci.max_values[prev].len, ci.max_values[i].p,
                                       ci.max_values[i].len);
                if (cmin > 0 || cmax > 0)
                    asc = false;
                if (cmin < 0 || cmax < 0)
                    desc = false;
            }
            prev = i;
        }
        ci.boundary_order = asc ? PQ_BOUNDARY_ASCENDING
                          : desc ? PQ_BOUNDARY_DESCENDING : PQ_BOUNDARY_UNORDERED;
        ref[0] = (int64_t)w->ci.len;
        TRY_MEM(pq_encode_column_index(&ci, &w->ci));
        ref[1] = (int64_t)w->ci.len - ref[0];
    }
    pq_offset_index oi;
    oi.n_pages = np;
    oi.pages = hs_arena_calloc(&w->tmp, np ? np : 1, sizeof(pq_page_location));
    if (!oi.pages)
        return nomem(err);
    for (int32_t i = 0; i < np; i++) {
        oi.pages[i].offset = data_start + recs[i].offset;
        oi.pages[i].compressed_page_size = recs[i].size;
        oi.pages[i].first_row_index = recs[i].first_row;
    }
    ref[2] = (int64_t)w->oi.len;
    TRY_MEM(pq_encode_offset_index(&oi, &w->oi));
    ref[3] = (int64_t)w->oi.len - ref[2];
    TRY_MEM(hs_buf_append(&w->refs, ref, sizeof ref));
    return HS_OK;
}

/* Writes one column chunk and fills its metadata. */
static hs_status write_chunk(pq_writer *w, pq_colw *cw, pq_column_chunk *cc, hs_error *err)
{
    const pq_wleaf *lf = cw->leaf;
    HS_TRY(flush_page(w, cw, err));
    int64_t start = (int64_t)w->out->offset;
    int64_t dict_size = 0, dict_unc = 0;
    if (cw->dict_used)
        HS_TRY(write_dict_page(w, cw, &dict_size, &dict_unc, err));
    int64_t data_start = start + dict_size;
    {
        pq_page_rec *recs = (pq_page_rec *)cw->pages.data;
        size_t np = cw->pages.len / sizeof *recs;
        int64_t pos = 0;
        for (size_t i = 0; i < np; i++) {
            recs[i].offset = pos;
            pos += recs[i].size;
            HS_TRY(write_out(w, cw->hdrs.data + recs[i].hdr_off, recs[i].hdr_len, err));
            HS_TRY(write_out(w, cw->chunk.data + recs[i].body_off,
                             (size_t)recs[i].size - recs[i].hdr_len, err));
        }
    }

    memset(cc, 0, sizeof *cc);
    cc->file_offset = start;
    cc->has_meta_data = true;
    pq_column_meta *m = &cc->meta_data;
    m->type = lf->ptype;
    m->n_path = lf->n_path;
    m->path = lf->path;
    m->codec = (pq_codec)(w->codec == HS_CODEC_NONE ? PQ_CODEC_UNCOMPRESSED
                         : w->codec == HS_CODEC_SNAPPY ? PQ_CODEC_SNAPPY
                         : w->codec == HS_CODEC_GZIP ? PQ_CODEC_GZIP
                         : w->codec == HS_CODEC_ZSTD ? PQ_CODEC_ZSTD : PQ_CODEC_LZ4_RAW);
    m->num_values = cw->c_levels;
    m->total_uncompressed_size = cw->c_uncompressed + dict_unc;
    m->total_compressed_size = cw->c_compressed + dict_size;
    m->data_page_offset = data_start;
    if (cw->dict_used) {
        m->has_dictionary_page_offset = true;
        m->dictionary_page_offset = start;
    }
    /* encodings: dictionary page PLAIN, levels RLE, data page encodings */
    bool used[N_ENC] = {false};
    int n_stats = 0;
    for (int e = 0; e < N_ENC; e++)
        if (cw->enc_pages[e]) {
            used[e] = true;
            n_stats++;
        }
    if (cw->dict_used) {
        used[PQ_ENC_PLAIN] = true;
        n_stats++;
    }
    used[PQ_ENC_RLE] = true;
    int n_enc = 0;
    for (int e = 0; e < N_ENC; e++)
        n_enc += used[e];
    m->encodings = hs_arena_alloc(&w->arena, sizeof(pq_encoding) * n_enc);
    m->encoding_stats = hs_arena_alloc(&w->arena, sizeof(pq_encoding_stats) * (n_stats + 1));
    if (!m->encodings || !m->encoding_stats)
        return nomem(err);
    for (int e = 0; e < N_ENC; e++)
        if (used[e])
            m->encodings[m->n_encodings++] = (pq_encoding)e;
    if (cw->dict_used)
        m->encoding_stats[m->n_encoding_stats++] =
            (pq_encoding_stats){PQ_PAGE_DICTIONARY, PQ_ENC_PLAIN, 1};
    for (int e = 0; e < N_ENC; e++)
        if (cw->enc_pages[e])
            m->encoding_stats[m->n_encoding_stats++] = (pq_encoding_stats){
                w->opt.data_page_v2 ? PQ_PAGE_DATA_V2 : PQ_PAGE_DATA, (pq_encoding)e,
                cw->enc_pages[e]};
    if (w->want_stats && !w->opt.no_statistics) {
        m->has_statistics = true;
        m->statistics.has_null_count = true;
        m->statistics.null_count = cw->cstats.null_count;
        bool has = false;
        hs_buf_reset(&w->smin);
        hs_buf_reset(&w->smax);
        TRY_MEM(pq_wstats_encode(&cw->cstats, lf->order, lf->ptype, lf->type_length, &w->smin,
                                 &w->smax, &has));
        if (has && w->smin.len <= MAX_CHUNK_STAT && w->smax.len <= MAX_CHUNK_STAT) {
            HS_TRY(copy_bytes(w, &w->smin, &m->statistics.min_value, err));
            HS_TRY(copy_bytes(w, &w->smax, &m->statistics.max_value, err));
        }
    }
    if (!w->opt.no_page_index)
        HS_TRY(chunk_page_index(w, cw, data_start, err));

    /* reset the chunk */
    hs_buf_reset(&cw->chunk);
    hs_buf_reset(&cw->hdrs);
    hs_buf_reset(&cw->pages);
    hs_buf_reset(&cw->ci_bytes);
    cw->ci_valid = true;
    pq_wstats_reset(&cw->cstats);
    cw->c_levels = cw->c_uncompressed = cw->c_compressed = cw->c_rows = 0;
    memset(cw->enc_pages, 0, sizeof cw->enc_pages);
    dict_reset(cw);
    return HS_OK;
}

static hs_status flush_row_group(pq_writer *w, hs_error *err)
{
    if (w->rg_rows == 0)
        return HS_OK;
    int32_t n_rg = (int32_t)(w->rgs.len / sizeof(pq_row_group));
    if (n_rg >= 32767)
        return hs_err_set(err, HS_UNSUPPORTED, "parquet writer: more than 32767 row groups");
    pq_row_group rg;
    memset(&rg, 0, sizeof rg);
    rg.n_columns = w->ws.n_leaves;
    rg.columns = hs_arena_calloc(&w->arena, w->ws.n_leaves, sizeof(pq_column_chunk));
    if (!rg.columns)
        return nomem(err);
    rg.num_rows = w->rg_rows;
    rg.has_file_offset = true;
    rg.file_offset = (int64_t)w->out->offset;
    for (int i = 0; i < w->ws.n_leaves; i++) {
        hs_status s = write_chunk(w, &w->cols[i], &rg.columns[i], err);
        if (s != HS_OK) {
            w->failed = true;
            return s;
        }
        rg.total_byte_size += rg.columns[i].meta_data.total_uncompressed_size;
        rg.total_compressed_size += rg.columns[i].meta_data.total_compressed_size;
    }
    rg.has_total_compressed_size = true;
    rg.has_ordinal = true;
    rg.ordinal = (int16_t)n_rg;
    TRY_MEM(hs_buf_append(&w->rgs, &rg, sizeof rg));
    w->total_rows += w->rg_rows;
    w->rg_rows = 0;
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* options                                                                    */

static bool encoding_fits(pq_encoding e, pq_ptype t)
{
    switch (e) {
    case PQ_ENC_PLAIN:
        return true;
    case PQ_ENC_RLE:
        return t == PQ_BOOLEAN;
    case PQ_ENC_DELTA_BINARY_PACKED:
        return t == PQ_INT32 || t == PQ_INT64;
    case PQ_ENC_BYTE_STREAM_SPLIT:
        return t == PQ_INT32 || t == PQ_INT64 || t == PQ_FLOAT || t == PQ_DOUBLE ||
               t == PQ_FIXED_LEN_BYTE_ARRAY;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        return t == PQ_BYTE_ARRAY;
    case PQ_ENC_DELTA_BYTE_ARRAY:
        return t == PQ_BYTE_ARRAY || t == PQ_FIXED_LEN_BYTE_ARRAY;
    default:
        return false;
    }
}

static bool option_matches(const char *opt_path, const pq_wleaf *lf, const hs_field *schema)
{
    if (!opt_path)
        return false;
    if (strcmp(opt_path, lf->dotted) == 0)
        return true;
    return strcmp(opt_path, schema->children[lf->top].name) == 0;
}

static hs_status resolve_leaf_options(pq_writer *w, pq_wleaf *lf, hs_error *err)
{
    lf->dictionary = !w->opt.no_dictionary;
    lf->encoding = PQ_ENC_PLAIN;
    const pq_column_option *best_enc = NULL, *best_dict = NULL;
    for (int i = 0; i < w->opt.n_column_options; i++) {
        const pq_column_option *o = &w->opt.column_options[i];
        if (!option_matches(o->path, lf, &w->schema))
            continue;
        bool exact = strcmp(o->path, lf->dotted) == 0;
        if (o->set_encoding && (!best_enc || exact))
            best_enc = o;
        if (o->set_dictionary && (!best_dict || exact))
            best_dict = o;
    }
    if (best_enc) {
        pq_encoding e = best_enc->encoding;
        if (e == PQ_ENC_RLE_DICTIONARY || e == PQ_ENC_PLAIN_DICTIONARY) {
            lf->dictionary = true;
        } else {
            if (!encoding_fits(e, lf->ptype))
                return hs_err_set(err, HS_INVALID,
                                  "parquet writer: column %s: encoding %d does not apply to its "
                                  "physical type %d", lf->dotted, (int)e, (int)lf->ptype);
            lf->encoding = e;
            lf->dictionary = false;
        }
    }
    if (best_dict)
        lf->dictionary = best_dict->dictionary;
    if (lf->ptype == PQ_BOOLEAN || lf->vk == PQ_VK_NULL)
        lf->dictionary = false;  /* booleans: PLAIN unless RLE was asked for */
    if (lf->vk == PQ_VK_NULL)
        lf->encoding = PQ_ENC_PLAIN;
    return HS_OK;
}

/* ------------------------------------------------------------------------ */
/* public API                                                                 */

hs_status pq_writer_open(hs_wfile *out, const hs_field *schema, const pq_writer_options *opt,
                         pq_writer **wp, hs_error *err)
{
    *wp = NULL;
    if (!out || !schema)
        return hs_err_set(err, HS_INVALID, "parquet writer: no output or schema");
    pq_writer *w = hs_calloc(1, sizeof *w);
    if (!w)
        return nomem(err);
    w->out = out;
    w->start_offset = out->offset;
    if (opt)
        w->opt = *opt;
    pq_writer_options *o = &w->opt;
    if (o->row_group_rows <= 0) o->row_group_rows = 1048576;
    if (o->row_group_bytes <= 0) o->row_group_bytes = 128LL << 20;
    if (o->page_bytes <= 0) o->page_bytes = PQ_DEFAULT_PAGE_BYTES;
    if (o->page_rows <= 0) o->page_rows = 20000;
    if (o->dictionary_page_bytes <= 0) o->dictionary_page_bytes = 1LL << 20;
    /* 32-bit offsets and counts inside pages and dictionaries stay in range */
    if (o->dictionary_page_bytes > (1LL << 30)) o->dictionary_page_bytes = 1LL << 30;
    if (o->page_bytes > (1LL << 30)) o->page_bytes = 1LL << 30;
    if (o->page_rows > (1LL << 30)) o->page_rows = 1LL << 30;
    o->created_by = NULL;  /* copied below */
    w->codec = o->codec;
    w->level = o->codec_level;
    w->want_stats = !o->no_statistics || !o->no_page_index;
    hs_status s;
    if (w->codec != HS_CODEC_NONE && w->codec != HS_CODEC_SNAPPY && w->codec != HS_CODEC_GZIP &&
        w->codec != HS_CODEC_ZSTD && w->codec != HS_CODEC_LZ4_RAW) {
        s = hs_err_set(err, HS_UNSUPPORTED, "parquet writer: cannot write codec %s",
                       hs_codec_name(w->codec));
        goto fail;
    }
    s = hs_field_copy(schema, &w->schema);
    if (s != HS_OK) {
        s = hs_err_set(err, s, "parquet writer: copying the schema failed");
        goto fail;
    }
    s = pq_wschema_build(&w->schema, &w->arena, &w->ws, err);
    if (s != HS_OK)
        goto fail;
    w->cols = hs_calloc(w->ws.n_leaves, sizeof *w->cols);
    if (!w->cols) {
        s = nomem(err);
        goto fail;
    }
    for (int i = 0; i < w->ws.n_leaves; i++) {
        pq_wleaf *lf = &w->ws.leaves[i];
        s = resolve_leaf_options(w, lf, err);
        if (s != HS_OK)
            goto fail;
        pq_colw *cw = &w->cols[i];
        cw->leaf = lf;
        cw->width = lf->ptype == PQ_BYTE_ARRAY ? 0 : pq_ptype_width(lf->ptype, lf->type_length);
        cw->epoch = 1;
        cw->pmin_idx = cw->pmax_idx = -1;
        cw->ci_valid = true;
        dict_reset(cw);
    }
    /* copy the user's key-value metadata and created_by into the arena */
    {
        const char *cb = opt && opt->created_by ? opt->created_by
                                                : "hyperstream version " HS_VERSION " (build hyperstream)";
        w->meta.created_by = hs_arena_strndup(&w->arena, cb, strlen(cb));
        int n_kv = (opt ? opt->n_kv : 0) + (w->ws.fixed_list_json ? 1 : 0);
        w->meta.kv = n_kv ? hs_arena_calloc(&w->arena, n_kv, sizeof(pq_kv)) : NULL;
        if (!w->meta.created_by || (n_kv && !w->meta.kv)) {
            s = nomem(err);
            goto fail;
        }
        for (int i = 0; opt && i < opt->n_kv; i++) {
            const char *k = opt->kv_keys[i], *v = opt->kv_values ? opt->kv_values[i] : NULL;
            pq_kv *kv = &w->meta.kv[w->meta.n_kv++];
            kv->key = hs_arena_strndup(&w->arena, k ? k : "", k ? strlen(k) : 0);
            kv->value = v ? hs_arena_strndup(&w->arena, v, strlen(v)) : NULL;
            if (!kv->key || (v && !kv->value)) {
                s = nomem(err);
                goto fail;
            }
        }
        if (w->ws.fixed_list_json) {
            pq_kv *kv = &w->meta.kv[w->meta.n_kv++];
            kv->key = PQ_FIXED_LIST_KEY;
            kv->value = w->ws.fixed_list_json;
        }
    }
    o->column_options = NULL;   /* borrowed pointers are not kept */
    o->n_column_options = 0;
    o->kv_keys = o->kv_values = NULL;
    o->n_kv = 0;
    s = write_out(w, "PAR1", 4, err);
    if (s != HS_OK)
        goto fail;
    *wp = w;
    return HS_OK;
fail:
    pq_writer_free(w);
    return s;
}

hs_status pq_writer_write(pq_writer *w, const hs_batch *b, hs_error *err)
{
    if (w->finished || w->failed)
        return hs_err_set(err, HS_INVALID, "parquet writer: write after %s",
                          w->finished ? "finish" : "an error");
    if (b->n_cols != w->schema.n_children ||
        !hs_field_equals(&b->schema, &w->schema, true, false))
        return hs_err_set(err, HS_INVALID, "parquet writer: batch schema differs from the file's");
    for (int i = 0; i < b->n_cols; i++) {
        if (!b->cols[i] || b->cols[i]->length < b->n_rows)
            return hs_err_set(err, HS_INVALID, "parquet writer: column %d shorter than the batch",
                              i);
        const hs_field *f = &w->schema.children[i];
        if (!f->nullable && f->type != HS_TYPE_NA && b->cols[i]->null_count > 0)
            return hs_err_set(err, HS_INVALID,
                              "parquet writer: column %s is not nullable but has %lld nulls",
                              f->name, (long long)b->cols[i]->null_count);
    }
    int64_t off = 0;
    while (off < b->n_rows) {
        int64_t take = b->n_rows - off;
        int64_t room = w->opt.row_group_rows - w->rg_rows;
        if (take > room)
            take = room;
        if (take > SLICE_ROWS)
            take = SLICE_ROWS;
        for (int i = 0; i < w->ws.n_leaves; i++) {
            pq_colw *cw = &w->cols[i];
            hs_status s = feed_rows(w, cw, b->cols[cw->leaf->top], off, off + take, err);
            if (s != HS_OK) {
                w->failed = true;
                return s;
            }
        }
        w->rg_rows += take;
        off += take;
        if (w->rg_rows >= w->opt.row_group_rows || rg_estimated_bytes(w) >= w->opt.row_group_bytes)
            HS_TRY(flush_row_group(w, err));
    }
    return HS_OK;
}

hs_status pq_writer_finish(pq_writer *w, hs_error *err)
{
    if (w->finished)
        return HS_OK;
    if (w->failed)
        return hs_err_set(err, HS_INVALID, "parquet writer: finish after an error");
    hs_status s = flush_row_group(w, err);
    if (s != HS_OK) {
        w->failed = true;
        return s;
    }
    pq_row_group *rgs = (pq_row_group *)w->rgs.data;
    int n_rg = (int)(w->rgs.len / sizeof(pq_row_group));
    const int64_t *refs = (const int64_t *)w->refs.data;
    if (!w->opt.no_page_index) {
        int64_t base = (int64_t)w->out->offset;
        HS_TRY(write_out(w, w->ci.data, w->ci.len, err));
        int64_t obase = (int64_t)w->out->offset;
        HS_TRY(write_out(w, w->oi.data, w->oi.len, err));
        int k = 0;
        for (int g = 0; g < n_rg; g++)
            for (int c = 0; c < rgs[g].n_columns; c++, k++) {
                pq_column_chunk *cc = &rgs[g].columns[c];
                const int64_t *r = refs + 4 * k;
                if (r[1] >= 0) {
                    cc->has_column_index = true;
                    cc->column_index_offset = base + r[0];
                    cc->column_index_length = (int32_t)r[1];
                }
                cc->has_offset_index = true;
                cc->offset_index_offset = obase + r[2];
                cc->offset_index_length = (int32_t)r[3];
            }
    }
    pq_file_meta *m = &w->meta;
    m->version = 2;
    m->n_schema = w->ws.n_elems;
    m->schema = w->ws.elems;
    m->num_rows = w->total_rows;
    m->n_row_groups = n_rg;
    m->row_groups = rgs;
    m->n_column_orders = w->ws.n_leaves;
    hs_buf foot = {0};
    if (pq_encode_file_meta(m, &foot) != HS_OK) {
        hs_buf_free(&foot);
        w->failed = true;
        return nomem(err);
    }
    uint8_t tail[8];
    uint32_t fl = (uint32_t)foot.len;
    memcpy(tail, &fl, 4);
    memcpy(tail + 4, "PAR1", 4);
    s = write_out(w, foot.data, foot.len, err);
    if (s == HS_OK)
        s = write_out(w, tail, 8, err);
    hs_buf_free(&foot);
    if (s != HS_OK)
        return s;
    w->finished = true;
    return HS_OK;
}

const pq_file_meta *pq_writer_file_meta(const pq_writer *w)
{
    return w && w->finished ? &w->meta : NULL;
}

uint64_t pq_writer_bytes_written(const pq_writer *w)
{
    return w ? w->out->offset - w->start_offset : 0;
}

static void colw_free(pq_colw *cw)
{
    hs_buf_free(&cw->def);
    hs_buf_free(&cw->rep);
    hs_buf_free(&cw->vals);
    hs_buf_free(&cw->idx);
    pq_wstats_free(&cw->pstats);
    pq_wstats_free(&cw->cstats);
    hs_free(cw->seen);
    ih_free(&cw->ih);
    hs_map_free(&cw->bm);
    hs_buf_free(&cw->dict);
    hs_buf_free(&cw->dict_off);
    hs_buf_free(&cw->chunk);
    hs_buf_free(&cw->hdrs);
    hs_buf_free(&cw->pages);
    hs_buf_free(&cw->ci_bytes);
}

void pq_writer_free(pq_writer *w)
{
    if (!w)
        return;
    if (w->cols)
        for (int i = 0; i < w->ws.n_leaves; i++)
            colw_free(&w->cols[i]);
    hs_free(w->cols);
    pq_wschema_free(&w->ws);
    hs_field_clear(&w->schema);
    hs_arena_destroy(&w->arena);
    hs_arena_destroy(&w->tmp);
    hs_buf_free(&w->rgs);
    hs_buf_free(&w->ci);
    hs_buf_free(&w->oi);
    hs_buf_free(&w->refs);
    for (int i = 0; i < 2; i++) {
        hs_buf_free(&w->ed[i]);
        hs_buf_free(&w->er[i]);
        hs_buf_free(&w->ei[i]);
    }
    hs_buf_free(&w->page);
    hs_buf_free(&w->vbody);
    hs_buf_free(&w->comp);
    hs_buf_free(&w->hdr);
    hs_buf_free(&w->conv);
    hs_buf_free(&w->views);
    hs_buf_free(&w->smin);
    hs_buf_free(&w->smax);
    hs_free(w);
}

/*
 * parquet/reader_cur.h - the column chunk cursor shared by the two halves of
 * the reader: reader.c (pages, decoding, level assembly, gathering: one
 * cursor reads one leaf of one row group) and reader_scan.c (the scan: which
 * row groups and rows, batches, the cursors of the projected leaves).
 * reader.c's header comment describes the modes and shortcuts.
 */
#ifndef HS_PARQUET_READER_CUR_H
#define HS_PARQUET_READER_CUR_H

#include "base/arena.h"
#include "base/buf.h"
#include "parquet/encoding.h"
#include "parquet/footer.h"
#include "parquet/pcache.h"
#include "parquet/reader.h"
#include "parquet/reader_int.h"

/* The page index of one (row group, leaf), loaded lazily. */
typedef struct pq_pidx {
    bool loaded;
    const pq_column_index *ci;
    const pq_offset_index *oi;
    pq_pinfo *pinfo;         /* the footer's page notes for oi, or NULL */
} pq_pidx;

/* An open file: its footer (shared), page indexes. */
struct pq_reader {
    hs_file *f;
    const char *fname;
    pq_footer *ft;
    hs_arena arena;          /* page indexes */
    pq_pidx *pidx;           /* n_row_groups * n_leaves, lazily */
    pq_fpidx *own;           /* a page index the footer had no room for */
    bool old_parquet_mr;     /* written by parquet-mr older than 1.2.9 */
};

typedef enum { VS_NONE = 0, VS_PLAIN, VS_PLAIN_BOOL, VS_DICT, VS_RLE_BOOL, VS_STAGED } pq_vs_kind;

typedef struct pq_cursor {
    pq_reader *r;
    pq_scan_stats *stats;
    int leaf_index;
    const pq_leaf *leaf;
    const pq_column_meta *cm;
    int rg;
    int64_t rg_rows;
    hs_codec codec;
    int own_from;                    /* first node on the path this leaf fills */
    /* chunk bytes (sequential) or the current page's bytes (page mode) */
    hs_buf chunk;
    uint64_t chunk_off;              /* file offset of the chunk (page mode: of the page) */
    size_t chunk_total;              /* sequential: bytes in the chunk */
    size_t win_off;                  /* sequential: chunk offset of chunk.data[0] */
    size_t pos;                      /* sequential: next page header, chunk-relative */
    bool page_mode;
    const pq_offset_index *oi;
    pq_pinfo *pinfo;                 /* page mode: the footer's notes on oi's pages, or NULL */
    pq_encoding page_enc;            /* values encoding of the current page */
    int next_page;                   /* page mode: next OffsetIndex entry */
    int64_t chunk_start;             /* file offset of the chunk's first page */
    int64_t values_total;            /* level entries seen, for the chunk's num_values */
    hs_arena hdr_arena;
    /* dictionary, converted to the output representation: in the dict_*
     * buffers, or borrowed from the footer's cache (pq_dict) */
    bool has_dict;
    uint32_t dict_n;
    const uint8_t *dv;               /* fixed outputs: dict_n * out_width */
    const uint32_t *doff;            /* bytes outputs: dict_n + 1 offsets into dbytes */
    const uint8_t *dbytes;
    hs_buf dict_vals;                /* the cursor's own decoding of them */
    hs_buf dict_offs;
    hs_buf dict_bytes;
    int64_t dict_lo, dict_hi;        /* page mode: the file range before the first
                                      * data page, read when a page needs it */
    hs_buf dict_raw, dict_page;      /* its bytes, decompressed dictionary page */
    /* current page */
    bool in_page;
    uint64_t page_off;               /* file offset of the page header, for messages */
    int64_t page_row_end;            /* page mode: first row after this page */
    hs_buf page_buf;                 /* decompressed body */
    uint8_t *direct;                 /* sequential mode, flat required PLAIN leaf
                                      * copied as is: where the next page's values
                                      * belong in the output column (pq_cur_rows),
                                      * with room for direct_n values + 8 bytes; a
                                      * page of at most direct_n values decompresses
                                      * there instead of into page_buf */
    int64_t direct_n;
    pq_pc_ref *page_ref;             /* page mode: the body from the page cache, held
                                      * until the next page (or NULL) */
    pq_pc_ref *lvl_ref;              /* page mode, repeated leaves: the page's decoded
                                      * levels from the page cache (or NULL) */
    hs_buf def_buf, rep_buf;         /* uint16 levels */
    const uint16_t *def, *rep;       /* NULL when the max level is 0; def also NULL
                                      * when every def level of the page is max_def */
    int32_t fixed_w;                 /* > 0: the page is whole dense rows of a
                                      * fixed_size_list of this width (def NULL,
                                      * rep = 0 then width-1 ones per row) */
    int64_t lvl_n, lvl_pos;
    pq_vs_kind vs;
    const uint8_t *vp;
    size_t vlen, vpos;
    int64_t bitpos;
    pq_rle_decoder rle;
    hs_buf staged, scratch;
    int64_t staged_n, staged_pos;
    /* rows */
    int64_t row;                     /* rows of the row group consumed */
    bool expect_row_start;
    /* per-call scratch */
    hs_buf hv;                       /* uint8 per leaf slot: has a value */
    hs_buf tmp;                      /* index scratch */
    hs_buf bools;                    /* booleans of one run, one byte each */
    int64_t last_slots;              /* leaf slots and value bytes of the previous */
    size_t last_bytes;               /* batch: the next one reserves as much up front */
    /* gathering (flat leaves of selective scans, see cur_gather) */
    bool gather;                     /* this cursor reads by cur_gather */
    bool g_ready;                    /* the current page's gather state is set up */
    int64_t g_nvals;                 /* values present in the page */
    hs_buf g_vix;                    /* uint32 per level entry + 1: values before it */
    hs_buf g_idx;                    /* uint32 dictionary indices / RLE booleans */
    int64_t g_idx_n;                 /* decoded so far */
    hs_buf g_off;                    /* PLAIN byte arrays: uint32 offset of value i */
    int64_t g_off_n;                 /* indexed so far */
    size_t g_off_pos;                /* page offset after the last indexed value */
    hs_buf g_pieces;                 /* pq_row_range: the rows wanted in the page */
    /* verdict column (pq_verdict): fn's verdicts on this row group's
     * dictionary entries (vd_ready) and on NULL (vd_null < 0: not yet) */
    const pq_verdict *vd;
    const hs_field *vd_field;        /* the file's field of the column */
    bool vd_ready;
    int vd_null;
    int64_t vd_rows;                 /* slots emitted in this row group */
    hs_buf vd_dict;                  /* uint8 per dictionary entry */
    hs_buf vd_out;                   /* uint8 per slot of one emit */
} pq_cursor;

/* Output buffers (reader.c). */
HS_MUST_USE hs_status pq_cb_reserve(hs_colbuf *b, size_t need);
HS_MUST_USE hs_status pq_col_prep(hs_column *c, bool nullable, int64_t add);

/* Cursors (reader.c): opening a row group's chunk, executing skip/take runs,
 * gathering selected rows of flat leaves, error context, freeing. */
HS_MUST_USE hs_status pq_cur_rows(pq_cursor *c, int64_t n_rows, hs_column **cols, hs_error *err);
HS_MUST_USE hs_status pq_cur_skip(pq_cursor *c, int64_t n, hs_error *err);
HS_MUST_USE hs_status pq_cur_gather(pq_cursor *c, const pq_row_range *rr, size_t n_rr, hs_column *col, hs_error *err);
void pq_cursor_free(pq_cursor *c);
HS_MUST_USE hs_status pq_cursor_ctx(pq_cursor *c, hs_status st, hs_error *err);
HS_MUST_USE hs_status pq_cursor_open_rg(pq_cursor *c, int rg, bool want_pages, hs_error *err);
void pq_cursor_close_rg(pq_cursor *c);

#endif

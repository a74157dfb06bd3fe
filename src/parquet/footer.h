/*
 * parquet/footer.h - what every scan of one Parquet file shares, kept with
 * its decoded footer in a process-wide cache (footer.c): the file metadata
 * and schema mapping, a read-only mapping of the file, decoded page indexes
 * with notes on pages read in place, decoded dictionaries; and the pool of
 * byte buffers that cursors borrow.  Internal to parquet/.
 */
#ifndef HS_PARQUET_FOOTER_H
#define HS_PARQUET_FOOTER_H

#include "base/arena.h"
#include "base/buf.h"
#include "io/io.h"
#include "parquet/meta.h"
#include "parquet/reader_int.h"

typedef struct pq_footer pq_footer;

/* A decoded dictionary (load_dict: already in the output representation)
 * of one column chunk, shared by every scan of the file through its footer. */
typedef struct pq_dict {
    uint32_t n;
    hs_buf vals, offs, bytes;        /* as pq_cursor's dict_* buffers */
    size_t mem;
} pq_dict;

struct pq_footer {
    int refs;
    char *name;
    uint64_t size;
    hs_file_id id;           /* of the file it was read from (the cache key, with size) */
    hs_arena arena;          /* meta */
    pq_file_meta meta;
    pq_schema_info schema;
    pq_dict **dicts;         /* [row group * n_leaves + leaf] or NULL; under the dictionary lock */
    size_t dict_mem;         /* bytes of them, counted in the process's dictionary budget */
    /* a read-only mapping of the file (pq_footer_map): page-mode reads take
     * their pages from it without a copy; map_state 0 untried, 1 mapped,
     * -1 none (set once under the cache lock, read with acquire) */
    const uint8_t *map;
    int map_state;
    /* decoded page indexes ([row group * n_leaves + leaf], entries published
     * once under the cache lock, read with acquire) */
    struct pq_fpidx **fpidx;
    pq_footer *next;
};

/* What a page-mode read learned of one page, kept for the next scans of the
 * file: for a page of a flat leaf, stored uncompressed, whose values are all
 * present, the values section can be set up again without touching the
 * page header or the levels. */
typedef struct pq_pinfo {
    int state;               /* 0 unknown, 1 known (fields valid), read with acquire */
    int32_t n;               /* values (= rows) */
    int32_t enc;             /* pq_encoding of the values */
    uint32_t vlen;
    uint64_t voff;           /* file offset of the values section */
} pq_pinfo;

/* A column chunk's page index, decoded once per cached footer. */
typedef struct pq_fpidx {
    hs_arena arena;
    const pq_offset_index *oi;   /* NULL: absent or unusable */
    const pq_column_index *ci;
    pq_pinfo *pinfo;             /* oi->n_pages entries when oi, else NULL */
} pq_fpidx;

/* The footer of f: from the cache (keyed by the file's identity and size,
 * see io.h; files without an identity are not cached) or read, checked and decoded; the caller
 * holds a reference until pq_footer_release. */
HS_MUST_USE hs_status pq_footer_get(hs_file *f, pq_footer **out, hs_error *err);
void pq_footer_release(pq_footer *ft);   /* accepts NULL */

/* The file's bytes through the footer's mapping (made from f on first use,
 * kept with the footer), or NULL where the backend has none. */
const uint8_t *pq_footer_map(pq_footer *ft, hs_file *f);

/* The page index published for column chunk `slot` (row group * n_leaves +
 * leaf), or NULL. */
const pq_fpidx *pq_footer_fpidx(pq_footer *ft, size_t slot);
/* Publishes fe (heap, owned by the caller until then) for `slot`: returns fe,
 * or the entry another reader published meanwhile (fe is then freed), or
 * NULL when out of memory (fe stays the caller's). */
pq_fpidx *pq_footer_fpidx_publish(pq_footer *ft, size_t slot, pq_fpidx *fe);
void pq_fpidx_free(pq_fpidx *e);   /* accepts NULL */
/* Records what a read learned of a page, once (later calls keep the first). */
void pq_footer_note_page(pq_pinfo *pn, int32_t n, int32_t enc, uint32_t vlen, uint64_t voff);

/* The dictionary cached for `slot`, or NULL. */
const pq_dict *pq_footer_dict(pq_footer *ft, size_t slot);
/* Takes a decoded dictionary into the footer when the process budget
 * (HS_DICT_CACHE_MB, default 128) allows: the buffers' storage moves (they
 * are left empty; their bytes stay where they were, owned by the footer). */
void pq_footer_dict_adopt(pq_footer *ft, size_t slot, uint32_t n, hs_buf *vals, hs_buf *offs,
                          hs_buf *bytes);

/* Cursor buffers: an empty b gets pooled storage (the smallest holding
 * `want` bytes, else the largest); give hands it back (or frees it). */
void pq_bufpool_take(hs_buf *b, size_t want);
void pq_bufpool_give(hs_buf *b);

#endif

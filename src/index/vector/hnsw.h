/*
 * index/vector/hnsw.h - HNSW graphs over one data file's vectors, searched
 * on exact vectors (VQ_FLAT) or on quantized codes (TQ8/TQ4/PQ/BIN, then
 * reranked with exact vectors), with an allow-list filter that never returns
 * fewer than k rows when k rows are allowed; and IVF (k-means partitions,
 * one graph per partition) for large files.
 *
 * Ids are the data file's row positions 0..n-1.  Index files are
 * checksummed images that hnsw_open validates and then searches in place
 * (the caller mmaps them); a corrupt or truncated image is HS_CORRUPT, and
 * the caller falls back to exact search.
 *
 * Exact vectors for reranking and for exact (flat) search over a small
 * allow-list come from the caller through hnsw_fetch_fn, so the table layer
 * reads only those rows from Parquet.  A flat index keeps its own vectors and
 * never calls fetch.
 */
#ifndef HS_INDEX_VECTOR_HNSW_H
#define HS_INDEX_VECTOR_HNSW_H

#include "base/buf.h"
#include "base/error.h"
#include "hyperstream/vector.h"
#include "index/vector/vq.h"
#include <roaring/roaring.h>
#include <stddef.h>
#include <stdint.h>

typedef struct hnsw_params {
    int M;                    /* links per node above level 0 (level 0: 2M); 0 = 16 */
    int ef_construction;      /* 0 = 200 */
    int ef_search;            /* default ef stored in the index; 0 = 64 */
    hs_metric metric;         /* L2, COSINE or IP */
    vq_params quant;          /* quant.type VQ_FLAT = plain hnsw */
    int rerank;               /* candidates reranked = max(k * rerank, ef); 0 =
                               * hnsw_default_rerank(quant.type): 1 for TQ8, else 4 */
    int ivf_lists;            /* 0 = no IVF; > 0: k-means lists, one graph each */
    int ivf_nprobe;           /* default nprobe; 0 = max(1, lists / 8) */
    uint64_t seed;            /* level generator (0 = fixed default) */
    int n_threads;            /* build threads (0 = one per core) */
} hnsw_params;

/* Progress: called from the building thread now and then with done/total
 * vectors inserted; return nonzero to cancel (the build returns
 * HS_CANCELLED, and nothing is kept). */
typedef int (*hnsw_progress_fn)(void *ctx, int64_t done, int64_t total);

/* Exact vectors of rows ids[0..n) into out (n * d floats).  Returns HS_OK or
 * an error (the search then fails with it). */
typedef hs_status (*hnsw_fetch_fn)(void *ctx, const uint32_t *ids, size_t n, float *out,
                                   hs_error *err);

typedef struct hnsw_index hnsw_index;

/* Builds over x (n vectors of dimension d, row-major; borrowed during the
 * call).  Vectors must be finite (HS_INVALID naming the row otherwise).
 * Caller frees with hnsw_free. */
/* The rerank factor of an index built without one (see hnsw_params). */
int hnsw_default_rerank(vq_type quant);

HS_MUST_USE hs_status hnsw_build(const float *x, size_t n, size_t d, const hnsw_params *p,
                                 hnsw_progress_fn progress, void *progress_ctx,
                                 hnsw_index **out, hs_error *err);
/* Serializes the whole index (params, quantizer, codes or vectors, graph,
 * IVF lists) as one checksummed image appended to out. */
HS_MUST_USE hs_status hnsw_save(const hnsw_index *ix, hs_buf *out, hs_error *err);
/* The same in a chosen image version: 2 (what hnsw_save writes: payloads
 * apart from the links, so that a reader of the image's head gets them in
 * one range) or 1 (each row's payload beside its links: the walk of an
 * index opened from it touches one region per row, 5-9% faster locally;
 * an index opened from a version 2 image is written as version 2). */
HS_MUST_USE hs_status hnsw_save_version(const hnsw_index *ix, unsigned version, hs_buf *out,
                                        hs_error *err);
/* Opens an image p[0..n) (borrowed: must outlive the index, e.g. an mmap).
 * Validates magic, version, checksum and every offset; HS_CORRUPT else. */
HS_MUST_USE hs_status hnsw_open(const uint8_t *p, size_t n, hnsw_index **out, hs_error *err);
/* Opens the head p[0..avail) of an image (borrowed, 4-byte aligned): the
 * header and, for a flat index without IVF, the vectors (version 2 images
 * keep them in one section right after the header).  Such a partial index
 * answers only searches that go exact over an allow-list (hnsw_search says
 * HS_UNSUPPORTED to any other); hnsw_exact_vector works on it.
 * HS_UNSUPPORTED when the head cannot serve (version 1, IVF, too short),
 * HS_CORRUPT when its checksums fail. */
HS_MUST_USE hs_status hnsw_open_prefix(const uint8_t *p, size_t avail, hnsw_index **out,
                                       hs_error *err);
void hnsw_free(hnsw_index *ix);  /* accepts NULL */

typedef struct hnsw_info {
    size_t n, d;
    hs_metric metric;
    vq_type quant;
    int M, ef_construction, ef_search, ivf_lists;
    size_t memory_bytes;      /* graph + codes/vectors + quantizer, as searched */
} hnsw_info;
void hnsw_get_info(const hnsw_index *ix, hnsw_info *out);

/* The caller's exact vector of row `row` (d floats, borrowed until
 * hnsw_free) where the index holds it: a VQ_FLAT index with metric L2 or IP.
 * NULL otherwise (quantized codes; COSINE keeps normalized vectors) and for
 * row >= n. */
const float *hnsw_exact_vector(const hnsw_index *ix, uint32_t row);

typedef struct hnsw_hit {
    uint32_t id;
    float dist;               /* ordering distance (vd_order_dist_f32), exact after rerank */
} hnsw_hit;

typedef struct hnsw_search_opts {
    int k;
    int ef;                   /* 0 = the index's ef_search */
    int nprobe;               /* IVF; 0 = the index's default */
    const roaring_bitmap_t *allow;  /* NULL = all rows */
    /* when allow holds at most this many rows, search exactly over them
     * (0 = a default from n, ef, the quantizer and the allowed fraction:
     * hnsw.c's default_exact_threshold, like Qdrant's full_scan_threshold) */
    int64_t exact_threshold;
    hnsw_fetch_fn fetch; void *fetch_ctx;  /* required unless quant is VQ_FLAT */
    int rerank;               /* quantized: 0 = the index's rerank factor */
    /* quantized: the exact vectors of rows 0..n-1 (d floats each, one block),
     * read in place by exact search and reranking instead of fetch; NULL =
     * fetch */
    const float *vectors;
    /* allow as a dense bitset of rows (bit r & 63 of word r >> 6), from
     * hnsw_allow_bits for this index and allow, or NULL: then the search
     * builds it itself where its walk reads one (a pass over allow per
     * search; callers searching many queries under one allow-list build it
     * once) */
    const uint64_t *allow_bits;
} hnsw_search_opts;

typedef struct hnsw_search_stats {
    int64_t distances;        /* code/vector distance evaluations */
    int64_t reranked;         /* exact vectors fetched */
    int widenings;            /* times ef was doubled to reach k allowed rows */
    int exact;                /* 1 when the allow-list was searched exactly */
} hnsw_search_stats;

/* Top-k nearest rows to q (dimension d), nearest first, into out (room for
 * k).  *n_out = min(k, number of allowed rows): never fewer.  stats may be NULL. */
HS_MUST_USE hs_status hnsw_search(const hnsw_index *ix, const float *q,
                                  const hnsw_search_opts *o, hnsw_hit *out, int *n_out,
                                  hnsw_search_stats *stats, hs_error *err);

/* The dense bitset of allow's rows below the index's n that hnsw_search
 * reads under this allow-list ((n + 63) / 64 words, hs_free it), for
 * hnsw_search_opts.allow_bits; *out = NULL when the search would not read
 * one (no allow-list, or one roaring answers as cheaply). */
HS_MUST_USE hs_status hnsw_allow_bits(const hnsw_index *ix, const roaring_bitmap_t *allow,
                                      uint64_t **out, hs_error *err);

/* Exact top-k over rows (allow NULL = all n rows), vectors from fetch (or
 * from x when x != NULL: n * d floats).  Used for files without an index and
 * as the fallback when an index file is corrupt. */
HS_MUST_USE hs_status hnsw_exact_search(const float *x, size_t n, size_t d, hs_metric metric,
                                        const float *q, int k, const roaring_bitmap_t *allow,
                                        hnsw_fetch_fn fetch, void *fetch_ctx, hnsw_hit *out,
                                        int *n_out, hs_error *err);

#endif

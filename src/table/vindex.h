/*
 * table/vindex.h - vector sidecar indexes of data files, and reading the
 * vector column of one data file (vindex.c).
 *
 * A vector sidecar covers one vector column (a top-level list<float> or
 * fixed_size_list<float> field, by field id) of one immutable data file.
 * The graph (index/vector/hnsw.h) numbers its vectors densely 0..n-1: the
 * non-null vectors in file order.  When the file has null vectors the
 * sidecar carries the map id -> file position; without nulls id ==
 * position.  Byte layout: the header comment of vindex.c.  Sidecars of
 * format version 2 also keep the exact float32 vectors, read in place for
 * reranking and for returning the vector column (tbl_vindex_vector).
 *
 * Kinds (include/hyperstream/index.h):
 *   hnsw hnsw_tq8 hnsw_tq4 hnsw_pq hnsw_bin          one graph per file
 *   ivf_hnsw ivf_hnsw_tq8 ivf_hnsw_tq4 ivf_hnsw_pq ivf_hnsw_bin
 *                                                   IVF lists, a graph each
 * Parameters (JSON object, all optional): m, ef_construction, ef_search,
 * metric ("l2" | "cosine" | "ip"), pq_m, ivf_lists, nprobe, rerank, seed,
 * exact_vectors (true | false: keep the exact vectors in the sidecar where
 * the graph does not hold them; default true);
 * the dict form's names complexity (= m), quality (= ef_construction),
 * compression (= pq_m); "type" (must name the same kind when kind is given).
 * Unknown keys, wrong types and out-of-range values are HS_INVALID.
 *
 * Ownership: every handle is freed by its own close function, which
 * accepts NULL; strings passed in are borrowed for the call.
 */
#ifndef HS_TABLE_VINDEX_H
#define HS_TABLE_VINDEX_H

#include "base/buf.h"
#include "base/error.h"
#include "columnar/column.h"
#include "index/vector/hnsw.h"
#include "table/table_int.h"
#include <roaring/roaring.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- kinds and parameters ---- */

typedef struct tbl_vindex_spec {
    char kind[24];            /* canonical kind name, e.g. "hnsw_pq" */
    hnsw_params hp;           /* M, ef_construction, ef_search, metric, quant, rerank, ivf */
    bool no_vectors;          /* "exact_vectors": false: the sidecar keeps no exact vectors */
} tbl_vindex_spec;

/* True for the vector kinds above ("auto" is not one: callers map it). */
bool tbl_vindex_is_vector_kind(const char *kind);
/* Parses kind (NULL: the "type" key of params_json, else "hnsw") and
 * params_json (NULL = defaults) into *out.  HS_INVALID naming the bad key. */
HS_MUST_USE hs_status tbl_vindex_parse(const char *kind, const char *params_json,
                                       tbl_vindex_spec *out, hs_error *err);
/* The parameters as a JSON object with the canonical names
 * {"m":16,"ef_construction":200,"ef_search":64,"metric":"l2",...}, appended
 * to out (no NUL). */
HS_MUST_USE hs_status tbl_vindex_params_json(const tbl_vindex_spec *s, hs_buf *out);

/* ---- the vector column of one data file ---- */

typedef struct tbl_vcol tbl_vcol;

/* Opens data file `path` for reading column `field` (a top-level field of
 * the table schema; found in the file by field id, or by name in files
 * without field ids).  HS_INVALID when field is not a float vector type.
 * A file that lacks the column reads as all null.  Caller frees with
 * tbl_vcol_close. */
HS_MUST_USE hs_status tbl_vcol_open(const char *path, const hs_field *field, tbl_vcol **out,
                                    hs_error *err);
void tbl_vcol_close(tbl_vcol *vc);  /* accepts NULL */
int64_t tbl_vcol_num_rows(const tbl_vcol *vc);
const char *tbl_vcol_path(const tbl_vcol *vc);   /* borrowed until close */

/* Called for each row read, in file order: v points at dim floats
 * (borrowed for the call), or v == NULL and dim == 0 for a null vector. */
typedef hs_status (*tbl_vrow_fn)(void *ctx, uint32_t pos, const float *v, int dim,
                                 hs_error *err);
/* Reads the rows in `rows` (file positions; NULL = every row).  A non-null
 * vector with a null element is HS_INVALID naming file, column and row. */
HS_MUST_USE hs_status tbl_vcol_scan(tbl_vcol *vc, const roaring_bitmap_t *rows,
                                    tbl_vrow_fn fn, void *ctx, hs_error *err);

/* ---- building ---- */

/* A builder of one data file's sidecar: rows arrive in position order
 * (tbl_vbuilder_add), the graph is built at finish.  This is what the
 * vector family of index kinds (tbl_vector_ixkind, table_int.h's
 * tbl_ixkind) runs for add_index and for the files a write produces. */
typedef struct tbl_vbuilder tbl_vbuilder;

/* done/total vectors inserted; nonzero cancels (HS_CANCELLED). */
typedef int (*tbl_vprogress_fn)(void *ctx, int64_t done, int64_t total);

/* kind and params as tbl_vindex_parse takes them; f the column (a float
 * vector type, else HS_INVALID); the data file has n_rows rows and
 * data_file_size bytes (recorded in the sidecar).  Caller frees with
 * tbl_vbuilder_free. */
/* local: write the graph as a version 1 image (each row's vector or code
 * beside its links, the faster walk) instead of version 2 (vectors apart:
 * the head serves exact searches on object stores).  Default: version 2;
 * the table's builds choose by the table's location (vfam_begin). */
void tbl_vbuilder_set_local(tbl_vbuilder *b, bool local);
HS_MUST_USE hs_status tbl_vbuilder_new(const char *kind, const char *params, const hs_field *f,
                                       int64_t data_file_size, int64_t n_rows,
                                       tbl_vbuilder **out, hs_error *err);
/* Build threads (0 = a share of the cores: all of them divided by the
 * builds running at once) and an optional progress callback. */
void tbl_vbuilder_set_threads(tbl_vbuilder *b, int n_threads);
void tbl_vbuilder_set_progress(tbl_vbuilder *b, tbl_vprogress_fn fn, void *ctx);
/* Rows [0, c->length) of the column (list<float> or fixed_size_list<float>)
 * at positions first_pos...  Every non-null vector of the file must have the
 * same length (HS_INVALID naming the row otherwise) and no null element. */
HS_MUST_USE hs_status tbl_vbuilder_add(tbl_vbuilder *b, const hs_column *c, int64_t first_pos,
                                       hs_error *err);
/* Builds the graph and appends the sidecar image to out. */
HS_MUST_USE hs_status tbl_vbuilder_finish(tbl_vbuilder *b, hs_buf *out, hs_error *err);
void tbl_vbuilder_free(tbl_vbuilder *b);  /* accepts NULL */

/* Makes the sidecar image p[0..n) (as tbl_vbuilder_finish wrote it, with
 * vectors) a version 3 sidecar: a clustered vector section
 * (table/vcluster.h) follows its graph.  The caller appends the section. */
HS_MUST_USE hs_status tbl_vindex_mark_clustered(uint8_t *p, size_t n, hs_error *err);

/* The vector kinds as an index family for table/index_build.c (kind_families). */
extern const tbl_ixkind tbl_vector_ixkind;

/* ---- opening ---- */

typedef struct tbl_vindex tbl_vindex;

typedef struct tbl_vindex_info {
    int32_t field_id;
    int64_t data_file_size;
    int64_t n_rows;           /* rows of the data file */
    int64_t n_vectors;
    int dim;                  /* 0 when n_vectors == 0 */
    hs_metric metric;
    vq_type quant;
    int ivf_lists;
} tbl_vindex_info;

/* Opens a sidecar image p[0..n) and validates it: magic, version, header
 * checksum, the position map (strictly increasing, < rows), and the graph
 * image (hnsw_open).  Takes ownership of p when `own` (freed with
 * hs_free_aligned at close, also on failure); else p is borrowed until
 * close.  p must be 64-byte aligned.  HS_CORRUPT on any mismatch. */
HS_MUST_USE hs_status tbl_vindex_open_image(uint8_t *p, size_t n, bool own, tbl_vindex **out,
                                            hs_error *err);
/* Reads the sidecar file and opens it; also checks that it covers field_id
 * of a data file of data_file_size bytes (HS_CORRUPT "stale" otherwise)
 * and, when file_size >= 0, that the sidecar has that many bytes (the
 * registry's record; HS_CORRUPT "truncated" otherwise).  HS_NOT_FOUND /
 * HS_IO when it cannot be read. */
HS_MUST_USE hs_status tbl_vindex_open_file(const char *path, int32_t field_id,
                                           int64_t data_file_size, int64_t file_size,
                                           tbl_vindex **out, hs_error *err);
void tbl_vindex_close(tbl_vindex *vi);  /* accepts NULL */

/* The cache of opened sidecars (process-wide, thread-safe).  Sidecar files
 * are immutable (written once under a fresh name), so an opened and
 * validated image is reused while the file's identity (device, inode,
 * size, modification and change times) is unchanged.  tbl_vindex_acquire
 * checks like tbl_vindex_open_file and returns a shared index (borrowed
 * until tbl_vindex_release).  Unused images are evicted least recently
 * used first when the cache exceeds HS_VINDEX_CACHE_MB (default 1024; 0
 * disables caching). */
HS_MUST_USE hs_status tbl_vindex_acquire(const char *path, int32_t field_id,
                                         int64_t data_file_size, int64_t file_size,
                                         const tbl_vindex **out, hs_error *err);
void tbl_vindex_release(const tbl_vindex *vi);   /* accepts NULL */
/* Drops every unused cached image (tests; memory pressure). */
void tbl_vindex_cache_clear(void);
void tbl_vindex_get_info(const tbl_vindex *vi, tbl_vindex_info *out);
/* The graph (borrowed until close); NULL when the file had no vector. */
const hnsw_index *tbl_vindex_hnsw(const tbl_vindex *vi);
/* File position of graph id `id` (< n_vectors). */
uint32_t tbl_vindex_pos_of(const tbl_vindex *vi, uint32_t id);
/* Graph id of file position pos, or -1 when that row has no vector. */
int64_t tbl_vindex_id_of(const tbl_vindex *vi, uint32_t pos);
/* Whether tbl_vindex_vector answers for every id: a version 2 sidecar
 * (exact vectors stored), a flat L2/IP graph (its own vectors are exact),
 * or a sidecar of no vector.  Else exact vectors come from the data file. */
/* tbl_vindex_acquire for a search that goes exact over few rows
 * (tbl_search): on an object store, only the head of a sidecar not cached
 * yet is read, in one ranged GET: the header, the position map and the
 * exact vectors (format version 2), or the graph's header and its flat
 * vectors (graph image version 2), whichever the sidecar holds, sized for
 * `rows` rows of `dim` dimensions.  The graph itself is not read: such a
 * partial index (tbl_vindex_is_partial) answers hnsw_search only where the
 * search goes exact and HS_UNSUPPORTED otherwise (then tbl_vindex_acquire
 * the whole).  Where the head cannot serve (older graph images, IVF) the
 * rest is read after it and the whole opened.  Heads are cached apart from
 * whole images.  Local paths: tbl_vindex_acquire. */
HS_MUST_USE hs_status tbl_vindex_acquire_head(const char *path, int32_t field_id,
                                              int64_t data_file_size, int64_t file_size,
                                              int64_t rows, int dim, const tbl_vindex **out,
                                              hs_error *err);
/* tbl_vindex_acquire_head (head) or tbl_vindex_acquire (!head) of a
 * sidecar whose first pre_len bytes the caller read already (object stores:
 * hs_io_read_head_start while the file's allow-list was computed, before it
 * was known which is wanted).  pre is taken (hs_malloc_aligned; NULL: none);
 * it must be the tbl_vindex_head_bytes of the sidecar, else it is dropped
 * and the sidecar read as without it.  The whole then costs one ranged GET
 * of the bytes after the head, not the head again. */
HS_MUST_USE hs_status tbl_vindex_acquire_read(const char *path, int32_t field_id,
                                              int64_t data_file_size, int64_t file_size,
                                              int64_t rows, int dim, bool head, uint8_t *pre,
                                              uint64_t pre_len, const tbl_vindex **out,
                                              hs_error *err);
bool tbl_vindex_is_partial(const tbl_vindex *vi);
/* True when the head of this sidecar image (as written: p[0..n)) holds what
 * an exact search needs: a version 2 graph image (its payloads first) or
 * exact vectors before it.  The registry records it ("head"), so that a
 * reader fetches only the head of sidecars that can serve. */
bool tbl_vindex_image_head_serves(const uint8_t *p, size_t n);
/* The bytes of a sidecar of file_size bytes that tbl_vindex_acquire_head
 * reads for `rows` rows of dimension `dim`. */
uint64_t tbl_vindex_head_bytes(int64_t rows, int dim, int64_t file_size);
/* Opens the first `avail` bytes p[0..avail) of a sidecar image of n bytes
 * (borrowed; avail == n opens it whole): a partial index where the head
 * serves (tbl_vindex_acquire_head), HS_UNSUPPORTED where it cannot,
 * HS_CORRUPT where its checks fail.  Fuzzing and tests. */
HS_MUST_USE hs_status tbl_vindex_open_head(uint8_t *p, size_t n, size_t avail,
                                           tbl_vindex **out, hs_error *err);
bool tbl_vindex_has_vectors(const tbl_vindex *vi);
/* The exact vector of graph id `id` (info.dim floats, bitwise what the data
 * file holds; borrowed until release), or NULL (id out of range, or
 * !tbl_vindex_has_vectors). */
const float *tbl_vindex_vector(const tbl_vindex *vi, uint32_t id);
/* The exact vectors as one block (n_vectors x dim, graph-id order) when the
 * sidecar stores them (version 2), else NULL (a flat graph's own). */
const float *tbl_vindex_vectors(const tbl_vindex *vi);
/* The graph ids of the file positions in `positions` (rows without a vector
 * drop out): a new bitmap (caller frees), or NULL when positions is NULL. */
HS_MUST_USE hs_status tbl_vindex_ids_of(const tbl_vindex *vi, const roaring_bitmap_t *positions,
                                        roaring_bitmap_t **out, hs_error *err);

/* ---- search.c ---- */

/* Process-wide counters of hs_table_search (any may be NULL): files
 * searched through a sidecar, files searched exactly, sidecars skipped
 * (missing, truncated, corrupt, stale; an unreadable registry counts one). */
void tbl_search_counters(int64_t *files_indexed, int64_t *files_exact, int64_t *skipped);
/* Filtered searches that prepared their files (allowed rows, sidecars) and
 * that reused the handle's kept preparation (tbl_fsearch in search.c). */
void tbl_search_filter_counters(int64_t *prepared, int64_t *reused);
/* Data files that filtered searches answered from clustered vector blocks
 * (table/vcluster.h) instead of sidecar heads and data files. */
void tbl_search_cluster_counter(int64_t *files);

#endif

/*
 * table/vcluster.h - the clustered vector section of a vector sidecar: the
 * exact vectors of one data file grouped by the value of a cluster column,
 * one block per value holding its rows' positions, vectors and included
 * column values, and the value directory that the index registry carries
 * (ix_entry.cluster), so that a filtered search `cluster = v` (or IN) reads
 * one range per data file and no head, footer or page (vcluster.c has the
 * byte layout; docs/storage.md "The filtered top-10 at 1M").
 *
 * Declared through the vector index's parameters:
 *   {"cluster": "category", "include": ["id", "title"]}
 * cluster: a top-level string, binary or integer column (int8..int64,
 * uint8..uint32, date); include: top-level columns of a fixed-width type
 * (not bool) or string/binary, at most TBL_VCL_MAX_INCLUDE.
 *
 * Ownership: a builder is freed by tbl_vcbuilder_free (accepts NULL); a
 * block view borrows the bytes it was decoded from; a directory owns its
 * parsed JSON (tbl_vcdir_clear).
 */
#ifndef HS_TABLE_VCLUSTER_H
#define HS_TABLE_VCLUSTER_H

#include "base/buf.h"
#include "base/error.h"
#include "columnar/column.h"
#include "expr/pred.h"
#include "iceberg/model.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define TBL_VCL_MAX_INCLUDE 16

typedef struct tbl_vcl_cols {
    const hs_field *cluster;                     /* borrowed from the schema */
    int n_include;
    const hs_field *include[TBL_VCL_MAX_INCLUDE];
} tbl_vcl_cols;

/* Whether params_json (a vector index's parameters) names a cluster column. */
bool tbl_vcl_declared(const char *params_json);
/* Checks the types of "cluster" and "include" in the parameter object o
 * (vindex.c's parser calls it for those keys): HS_INVALID naming the key. */
HS_MUST_USE hs_status tbl_vcl_check_param(const char *key, json_t *v, hs_error *err);
/* Resolves "cluster" and "include" of params_json against the schema's
 * top-level columns.  *found false (HS_OK) when no cluster is declared.
 * HS_INVALID for an unknown column, an unsupported type, the vector column
 * itself, or too many includes. */
HS_MUST_USE hs_status tbl_vcl_resolve(const char *params_json, const ice_schema *sc,
                                      int32_t vector_fid, tbl_vcl_cols *out, bool *found,
                                      hs_error *err);

/* ---- building (table/index.c, beside the sidecar's builder) ---- */

typedef struct tbl_vcbuilder tbl_vcbuilder;
/* cols borrowed for the builder's life; the data file has n_rows rows. */
HS_MUST_USE hs_status tbl_vcbuilder_new(const tbl_vcl_cols *cols, int32_t vector_fid,
                                        int64_t n_rows, tbl_vcbuilder **out, hs_error *err);
/* Rows [0, b->n_rows) of a batch holding the vector, cluster and included
 * columns (found by field id), at file positions first_pos...  Rows whose
 * vector or cluster value is null are left out (no filter `c = v` matches
 * them). */
HS_MUST_USE hs_status tbl_vcbuilder_add(tbl_vcbuilder *b, const hs_batch *batch,
                                        int64_t first_pos, hs_error *err);
/* Appends the section to out (after zero padding to a multiple of 64 from
 * out's start) and sets *dir (caller frees with hs_free) to the directory's
 * JSON text, offsets from out's start.  Nothing appended and *dir NULL when
 * the file has no such row or a string value is not UTF-8 (JSON cannot
 * carry it): the sidecar then has no section and searches use the graph. */
HS_MUST_USE hs_status tbl_vcbuilder_finish(tbl_vcbuilder *b, hs_buf *out, char **dir,
                                           hs_error *err);
void tbl_vcbuilder_free(tbl_vcbuilder *b);

/* ---- reading ---- */

/* A cluster value as the filter has it: an integer or bytes (pr_val kinds
 * PR_V_I64 and PR_V_BYTES). */
typedef struct tbl_vcl_key {
    bool is_int;
    int64_t i;
    const uint8_t *p;       /* borrowed */
    size_t n;
} tbl_vcl_key;

/* The directory of one sidecar (registry entry "cluster"), parsed. */
typedef struct tbl_vcdir {
    json_t *root;           /* owned */
    int32_t cluster_fid;
    int n_include;
    int32_t include_fid[TBL_VCL_MAX_INCLUDE];
    json_t *values;         /* borrowed from root */
} tbl_vcdir;

/* Parses and checks a directory (untrusted text).  HS_CORRUPT when
 * malformed.  Clear with tbl_vcdir_clear. */
HS_MUST_USE hs_status tbl_vcdir_parse(const char *text, tbl_vcdir *out, hs_error *err);
void tbl_vcdir_clear(tbl_vcdir *d);
/* The block of value k: *found, and its offset, bytes and rows.  HS_CORRUPT
 * for an entry out of shape or past file_size. */
HS_MUST_USE hs_status tbl_vcdir_find(const tbl_vcdir *d, const tbl_vcl_key *k,
                                     int64_t file_size, bool *found, uint64_t *off,
                                     uint64_t *len, uint32_t *rows, hs_error *err);

/* One included column of a decoded block. */
typedef struct tbl_vcinc {
    hs_type type;
    uint32_t width;          /* fixed: value bytes; 0: string/binary */
    const uint8_t *validity; /* rows bits */
    const uint8_t *values;   /* fixed: rows * width; var: the bytes */
    const uint32_t *offsets; /* var: rows + 1 */
} tbl_vcinc;

/* A decoded block (borrows its bytes, which must be 8-byte aligned). */
typedef struct tbl_vcblock {
    uint32_t rows, dim;
    uint64_t key_hash;
    const uint32_t *pos;     /* rows, strictly increasing */
    const float *vecs;       /* rows * dim */
    int n_include;
    tbl_vcinc inc[TBL_VCL_MAX_INCLUDE];
} tbl_vcblock;

/* The hash a block records for its value. */
uint64_t tbl_vcl_key_hash(const tbl_vcl_key *k);
/* Decodes and validates block p[0..n) (untrusted): magic, checksum, every
 * length and offset, positions strictly increasing and < n_rows (n_rows
 * < 0: unchecked).  HS_CORRUPT naming what is wrong. */
HS_MUST_USE hs_status tbl_vcblock_decode(const uint8_t *p, size_t n, int64_t n_rows,
                                         tbl_vcblock *out, hs_error *err);

#endif

/*
 * table/index_int.h - what the files of a table's sidecar indexes share:
 *
 *   index.c        the registry commits and the operations on declared
 *                  indexes: add_index, refresh_indexes, drop_index, list,
 *                  orphan removal; the sidecars of written files (tbl_ixw_*)
 *   index_build.c  building sidecars: the index kind families (the scalar
 *                  one here), one data file's sidecar from its rows or from
 *                  disk, many of them in parallel with progress and cancel
 *   index_scan.c   reading them: the process-wide cache of opened sidecars
 *                  and registry versions, lookups per planned file
 *                  (tbl_ixscan_*), warming, and hs_table_explain
 *
 * index.c's header comment gives the storage layout and the commit rules,
 * index_scan.c's how a filter is answered from sidecars.  Functions shared
 * between the files carry the tbl_ix_ prefix; the rest stay static.
 */
#ifndef HS_TABLE_INDEX_INT_H
#define HS_TABLE_INDEX_INT_H

#include "table/table_int.h"

#include "hyperstream/index.h"
#include "index/registry.h"

/* What to build: one declared index of one data file. */
typedef struct build_req {
    const char *location;          /* table location */
    int wflags;
    const ix_decl *decl;           /* borrowed */
    const hs_field *field;         /* the indexed field in the current schema */
    const hs_field *top;           /* its top-level column (reading from disk) */
    const char *data_file;
    int64_t data_file_size;
    int64_t record_count;
    const volatile int *cancel;    /* optional */
    const ice_schema *schema;      /* the current schema (a vector index's cluster and
                                    * included columns); NULL: none built */
} build_req;

/* index.c */
void tbl_ix_warn(const char *fmt, ...) HS_PRINTF(1, 2);   /* hs_warn, formatted */
void tbl_ix_entry_free_strings(ix_entry *e);
void tbl_ix_remove_local(const char *location, const char *rel);
void tbl_ix_free_strs(hs_buf *v);

/* index_build.c */
bool tbl_ix_scalar_handles(const char *kind);
bool tbl_ix_is_vector_kind(const char *kind);
HS_MUST_USE hs_status tbl_ix_build_from_batch(const build_req *q, const hs_batch *b, ix_entry *e,
                                              hs_error *err);
HS_MUST_USE hs_status tbl_ix_build_from_file(const build_req *q, ix_entry *e, hs_error *err);
const hs_field *tbl_ix_top_of(const ice_schema *sc, int32_t fid);
HS_MUST_USE hs_status tbl_ix_build_all(build_req *reqs, ix_entry *out, int n, int n_threads,
                                       const hs_index_options *opt, const char *what, const char *location,
                                       hs_error *err);

#endif

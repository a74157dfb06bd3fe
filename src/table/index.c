/*
 * table/index.c - sidecar indexes of a table (hyperstream/index.h): the
 * registry commits, declaring / dropping / listing indexes, building
 * sidecars (for every live data file, and for the files each write
 * produces), index lookups for scans, orphan removal and explain.
 *
 * Where things are (DESIGN.md "Storage layout"; format in index/registry.h):
 *
 *   <table>/index/<data-file-stem>.<field-id>.<kind>   sidecar of one data file
 *   <table>/index/registry/<uuid>.json                 registry root, named by
 *                                                       property hyperstream.index-registry
 *   <table>/index/registry/seg-<uuid>.json             registry segment (listed by roots)
 *
 * Commits.  Every registry change is a metadata commit (tbl_commit) whose
 * rebase callback re-reads the registry of the fresh base and applies the
 * change to it, so concurrent writers merge instead of overwriting:
 *
 *   change            applied to the base's registry           also, on a newer base
 *   ----------------  ---------------------------------------  --------------------------------
 *   add_index         declaration + our entries (an entry the  entries of our files no longer
 *                     base already has for the same data file  live are dropped; live files
 *                     and size is kept, ours is dropped)       without a sidecar get one built
 *   append/overwrite  our entries (write.c commits them with   sidecars for indexes declared
 *   /delete           the snapshot: one commit); entries of    since the write began are built
 *                     the files the operation removes go       from the written files
 *   refresh_indexes   entries for live files that lack one     files that came meanwhile get
 *                     (written by other engines)               theirs too
 *   drop_index        declarations and their entries go        -
 *   remove_orphans    entries of data files not live go        (re-checked against the base)
 *
 * Writes and refresh add one segment to the base's root (only the root is
 * read: index/registry.h's format 2, whose merge policy keeps the segment
 * count logarithmic); add_index, drop_index and pruning write the registry
 * whole (one segment).  The files of each attempt (unique names, exclusive
 * create) are removed before the next one, and a failed operation removes
 * its sidecars.  Sidecar files are immutable and never overwritten: a taken
 * name gets a random suffix.
 *
 * Reading (tbl_ixscan_*).  A scan loads the registry once.  Per planned data
 * file, entries are used only when path AND size match the file; the
 * sidecar is read into memory and opened (which validates its checksum);
 * its row count and data file size must match the file too.  Anything else
 * (missing, truncated, corrupt, stale) is skipped with a warning (hs_warn:
 * the warning handler of hyperstream/config.h) and counted: the scan then reads the data, so results never change.  The
 * simple filter is evaluated as bitmap algebra over the lookups:
 *
 *   node          candidate set              exact (set == matching rows)
 *   ------------  -------------------------  -----------------------------
 *   TRUE / FALSE  all / empty                yes
 *   leaf, index   sidx_lookup                yes
 *   leaf, none    all ("unknown")            no
 *   AND           intersection               both exact, or the set is empty
 *   OR            union                      both exact
 *
 * An AND is taken as a whole (nested ANDs flattened): its leaves on one
 * column with a sidecar are answered by one sidx_lookup_all, which
 * intersects comparisons as spans of the sorted order before reading any
 * row (`ts >= a AND ts < b` costs the rows between a and b, not two
 * bitmaps of most of the file); the parts are then intersected in order,
 * stopping at the first empty one.
 *
 * Kinds.  tbl_ixkind families build sidecars; the scalar family (inverted,
 * range, auto) is here over index/scalar/sidx.h.  Vector kind names are
 * recognised and refused with HS_UNSUPPORTED until a family handles them.
 */
#include "table/fcache.h"
#include "table/mcache.h"
#include "table/table_int.h"
#include "table/vcluster.h"
#include "table/vindex.h"

#include "base/avro.h"
#include "base/config.h"
#include "base/opts.h"
#include "base/hash.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include "base/threadpool.h"
#include "expr/expr.h"
#include "hyperstream/index.h"
#include "index/registry.h"
#include "index/scalar/sidx.h"
#include "io/io.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* the scalar family                                                   */

static bool scalar_handles(const char *kind)
{
    sidx_kind k;
    return sidx_kind_from_name(kind, &k);
}

static hs_status scalar_check(const char *kind, const hs_field *f, const char *params,
                              hs_error *err)
{
    if (!sidx_supports(f))
        return hs_err_set(err, HS_INVALID, "a %s index needs a scalar column; \"%s\" is %s",
                          kind, f->name, hs_type_name(f->type));
    if (params && *params) {
        json_t *j = hs_json_loads(params, 0, NULL);
        const char *key;
        json_t *v;
        hs_status st = HS_OK;
        json_object_foreach(j, key, v) {
            if (strcmp(key, "type") != 0) {
                st = hs_err_set(err, HS_INVALID, "index parameter \"%s\" does not apply to a %s "
                                "index (scalar indexes take no parameters)", key, kind);
                break;
            }
        }
        json_decref(j);
        HS_TRY(st);
    }
    return HS_OK;
}

static hs_status scalar_begin(const char *kind, const char *params, const hs_field *f,
                              int64_t data_file_size, int64_t n_rows, bool object_store, void **state,
                              hs_error *err)
{
    (void)object_store;
    sidx_kind k;
    if (!sidx_kind_from_name(kind, &k))
        return hs_err_set(err, HS_INVALID, "unknown scalar index kind \"%s\"", kind);
    HS_TRY(sidx_builder_new(k, f, data_file_size, (sidx_builder **)state, err));
    sidx_builder_expect_rows(*state, n_rows);
    return HS_OK;
}

static hs_status scalar_add(void *state, const hs_column *c, int64_t first_pos, hs_error *err)
{
    return sidx_builder_add(state, c, first_pos, err);
}

static hs_status scalar_finish(void *state, hs_buf *out, hs_error *err)
{
    return sidx_builder_finish(state, out, NULL, err);
}

static void scalar_free(void *state) { sidx_builder_free(state); }

static const tbl_ixkind scalar_kind = {
    "scalar", scalar_handles, scalar_check, scalar_begin, scalar_add, scalar_finish, scalar_free,
};

/* Every family; vector kinds join here. */
static const tbl_ixkind *const kind_families[] = {&scalar_kind, &tbl_vector_ixkind};

const tbl_ixkind *tbl_ixkind_find(const char *kind)
{
    for (size_t i = 0; kind && i < sizeof kind_families / sizeof kind_families[0]; i++)
        if (kind_families[i]->handles(kind))
            return kind_families[i];
    return NULL;
}

/* Names index.h lists for vector columns (refused until a family builds them). */
static bool is_vector_kind(const char *kind)
{
    return strncmp(kind, "hnsw", 4) == 0 || strncmp(kind, "ivf_hnsw", 8) == 0 ||
           strcmp(kind, "ivf") == 0;
}

/* ------------------------------------------------------------------ */
/* small helpers                                                       */

static bool fsync_on(const ice_table_metadata *m)
{
    const char *v = ice_kv_get(&m->properties, "hyperstream.commit.fsync");
    return v && strcasecmp(v, "true") == 0;
}

static int wflags_of(const ice_table_metadata *m)
{
    return HS_WFILE_EXCLUSIVE | (fsync_on(m) ? 0 : HS_WFILE_NO_SYNC);
}

static void warn(const char *fmt, ...) HS_PRINTF(1, 2);
static void warn(const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hs_warn("%s", msg);
}

static void entry_free_strings(ix_entry *e)
{
    hs_free(e->data_file);
    hs_free(e->kind);
    hs_free(e->index_file);
    hs_free(e->cluster);
    memset(e, 0, sizeof *e);
}

static void remove_local(const char *location, const char *rel)
{
    hs_buf p = {0};
    if (ix_resolve_path(location, rel, &p) == HS_OK)
        (void)!hs_io_delete(hs_buf_cstr(&p), NULL);
    hs_buf_free(&p);
}

/* Removes the files of a list of location-relative names (char *, owned)
 * and empties it. */
static void remove_listed(const char *location, hs_buf *rels)
{
    for (size_t i = 0; i < HS_VEC_LEN(rels, char *); i++) {
        if (location)
            remove_local(location, HS_VEC_AT(rels, char *, i));
        hs_free(HS_VEC_AT(rels, char *, i));
    }
    hs_buf_free(rels);
}

/* The root of the registry of metadata m (declarations and segments, no
 * segment read); unreadable is treated as load_registry_of does. */
static hs_status load_root_of(const ice_table_metadata *m, ix_registry *reg, hs_error *err)
{
    const char *rel = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    hs_error e;
    hs_err_clear(&e);
    hs_status st = ix_registry_load_root(m->location, rel, reg, &e);
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 64);
    if (st == HS_IO) {   /* a read that failed (EIO): not damage; retry later */
        memset(reg, 0, sizeof *reg);
        if (err)
            *err = e;
        return st;
    }
    if (st != HS_OK) {
        warn("%s: %s; starting a new index registry", m->location, e.msg);
        memset(reg, 0, sizeof *reg);
    }
    return HS_OK;
}

/* The registry of metadata m: empty when there is none; an unreadable one is
 * reported (warning) and treated as empty, so that writers can repair it. */
static hs_status load_registry_ex(const ice_table_metadata *m, ix_registry *reg, int *n_bad,
                                  hs_error *err);

static hs_status load_registry_of(const ice_table_metadata *m, ix_registry *reg, hs_error *err)
{
    int bad = 0;
    return load_registry_ex(m, reg, &bad, err);
}

/* The same; *n_bad counts the segments left out. */
static hs_status load_registry_ex(const ice_table_metadata *m, ix_registry *reg, int *n_bad,
                                  hs_error *err)
{
    const char *rel = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    hs_error e;
    hs_err_clear(&e);
    hs_status st = ix_registry_load_root(m->location, rel, reg, &e);
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 64);
    if (st == HS_IO) {   /* a read that failed (EIO): not damage; retry later */
        memset(reg, 0, sizeof *reg);
        if (err)
            *err = e;
        return st;
    }
    if (st != HS_OK) {
        warn("%s: %s; starting a new index registry", m->location, e.msg);
        memset(reg, 0, sizeof *reg);
        return HS_OK;
    }
    /* a damaged segment loses its entries only (a refresh rebuilds them);
     * one that could not be read (EIO) fails the call instead: writing a
     * registry without its entries would drop indexes that are fine */
    int bad = 0;
    st = ix_registry_load_segments_lenient(m->location, reg, &bad, &e, err);
    *n_bad = bad;
    if (st == HS_OK && bad && e.code == HS_IO) {
        if (err)
            *err = e;
        st = HS_IO;
    }
    if (st != HS_OK) {
        ix_registry_clear(reg);
        return st;
    }
    if (bad)
        warn("%s: index registry %s: %d segment(s) unusable, their entries are dropped "
             "(first: %s)", m->location, rel, bad, e.msg);
    return HS_OK;
}

/* A leaf column for field id `fid` from a batch: the column itself, or for
 * a field inside structs a copy whose rows are null where a parent is null.
 * *tmp (to free) is set when a copy was made. */
static hs_status leaf_column(const hs_batch *b, int32_t fid, const hs_column **out,
                             hs_column **tmp, hs_error *err)
{
    *tmp = NULL;
    pr_col_ref ref;
    if (!pr_batch_find_id(b, fid, &ref))
        return hs_err_set(err, HS_INTERNAL, "column of field id %d is not in the batch",
                          (int)fid);
    if (ref.n_parents == 0) {
        *out = ref.col;
        return HS_OK;
    }
    bool any = false;
    for (int64_t i = 0; i < b->n_rows && !any; i++)
        for (int k = 0; k < ref.n_parents && !any; k++)
            any = !hs_col_is_valid(ref.parents[k], i);
    if (!any) {
        *out = ref.col;
        return HS_OK;
    }
    hs_column *c = NULL;
    HS_TRY(hs_col_slice(ref.col, 0, b->n_rows, &c, err));
    if (hs_col_ensure_validity(c) != HS_OK) {
        hs_col_free(c);
        return hs_err_nomem(err, (size_t)b->n_rows);
    }
    for (int64_t i = 0; i < b->n_rows; i++) {
        bool valid = hs_col_is_valid(c, i);
        for (int k = 0; k < ref.n_parents && valid; k++)
            valid = hs_col_is_valid(ref.parents[k], i);
        if (!valid && hs_col_is_valid(c, i)) {
            hs_bit_clear(c->validity.data, i);
            c->null_count++;
        }
    }
    *out = c;
    *tmp = c;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* building sidecars                                                   */

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

/* The clustered vector section of a vector index declared with a cluster
 * column (table/vcluster.h), built beside the sidecar from the same rows. */
typedef struct cluster_build {
    tbl_vcl_cols cols;
    tbl_vcbuilder *b;              /* NULL: no section for this build */
} cluster_build;

static hs_status cluster_begin(const build_req *q, cluster_build *cb, hs_error *err)
{
    memset(cb, 0, sizeof *cb);
    bool found = false;
    if (!q->schema || !tbl_vindex_is_vector_kind(q->decl->kind) ||
        !tbl_vcl_declared(q->decl->params))
        return HS_OK;
    hs_error why = {0};
    hs_status st = tbl_vcl_resolve(q->decl->params, q->schema, q->decl->field_id, &cb->cols,
                                   &found, &why);
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 64);
    if (st != HS_OK || !found)
        return HS_OK;   /* a column renamed or dropped since: the sidecar without it */
    return tbl_vcbuilder_new(&cb->cols, q->decl->field_id, q->record_count, &cb->b, err);
}

/* Appends the section to the sidecar bytes and marks the sidecar; *dir gets
 * the directory (or NULL: no section). */
static hs_status cluster_finish(cluster_build *cb, hs_buf *bytes, char **dir, hs_error *err)
{
    *dir = NULL;
    if (!cb->b || bytes->len == 0)
        return HS_OK;
    size_t before = bytes->len;
    HS_TRY(tbl_vcbuilder_finish(cb->b, bytes, dir, err));
    if (!*dir)
        return HS_OK;
    hs_status st = tbl_vindex_mark_clustered(bytes->data, before, err);
    if (st != HS_OK) {
        bytes->len = before;
        hs_free(*dir);
        *dir = NULL;
    }
    return st;
}

/* Writes sidecar bytes under a fresh name; fills e (owned strings). */
static hs_status write_sidecar(const build_req *q, const hs_buf *bytes, ix_entry *e,
                               hs_error *err)
{
    memset(e, 0, sizeof *e);
    hs_buf rel = {0}, path = {0};
    hs_status st = HS_OK;
    for (int attempt = 0; attempt < 8; attempt++) {
        char suffix[12];
        if (attempt) {
            char uuid[37];
            ice_uuid_v4(uuid);
            memcpy(suffix, uuid, 8);
            suffix[8] = '\0';
        }
        if (ix_sidecar_rel(q->data_file, q->decl->field_id, q->decl->kind,
                           attempt ? suffix : NULL, &rel) != HS_OK ||
            ix_resolve_path(q->location, hs_buf_cstr(&rel), &path) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        const char *local = tbl_local(hs_buf_cstr(&path));
        if (attempt == 0) {
            const char *slash = strrchr(local, '/');
            char *dir = slash ? hs_strndup(local, (size_t)(slash - local)) : NULL;
            st = slash && !dir ? hs_err_nomem(err, 256) : dir ? cat_io_mkdirs(dir, err) : HS_OK;
            hs_free(dir);
            if (st != HS_OK)
                break;
        }
        hs_error e2;
        hs_err_clear(&e2);
        st = cat_io_write_all_ex(local, q->wflags | HS_WFILE_EXCLUSIVE, bytes->data, bytes->len,
                                 &e2);
        if (st == HS_CONFLICT)
            continue;   /* the name is taken: another suffix */
        if (st != HS_OK && err)
            *err = e2;
        break;
    }
    if (st == HS_CONFLICT)
        st = hs_err_set(err, HS_IO, "%s: cannot find a free sidecar name", q->data_file);
    if (st == HS_OK) {
        size_t n;
        e->data_file = hs_strdup(q->data_file);
        e->kind = hs_strdup(q->decl->kind);
        e->index_file = (char *)hs_buf_detach(&rel, &n);
        e->data_file_size = q->data_file_size;
        e->field_id = q->decl->field_id;
        e->index_file_size = (int64_t)bytes->len;
        e->checksum = hs_xxh64(bytes->data ? bytes->data : (const uint8_t *)"", bytes->len, 0);
        e->head = tbl_vindex_is_vector_kind(e->kind ? e->kind : "") && bytes->data &&
                  tbl_vindex_image_head_serves(bytes->data, bytes->len);
        if (!e->data_file || !e->kind) {
            remove_local(q->location, e->index_file);
            entry_free_strings(e);
            st = hs_err_nomem(err, 256);
        }
    }
    hs_buf_free(&rel);
    hs_buf_free(&path);
    return st;
}

/* Builds from one batch holding every row of the data file. */
static hs_status build_from_batch(const build_req *q, const hs_batch *b, ix_entry *e,
                                  hs_error *err)
{
    const tbl_ixkind *k = tbl_ixkind_find(q->decl->kind);
    if (!k)
        return hs_err_set(err, HS_UNSUPPORTED, "index kind \"%s\" cannot be built by this "
                          "build", q->decl->kind);
    void *state = NULL;
    HS_TRY(k->build_begin(q->decl->kind, q->decl->params, q->field, q->data_file_size, b->n_rows,
                          hs_io_is_object_uri(q->location), &state, err));
    const hs_column *c = NULL;
    hs_column *tmp = NULL;
    hs_buf bytes = {0};
    hs_status st = leaf_column(b, q->decl->field_id, &c, &tmp, err);
    if (st == HS_OK)
        st = k->build_add(state, c, 0, err);
    if (st == HS_OK)
        st = k->build_finish(state, &bytes, err);
    k->build_free(state);
    hs_col_free(tmp);
    cluster_build cb = {0};
    char *dir = NULL;
    if (st == HS_OK)
        st = cluster_begin(q, &cb, err);
    if (st == HS_OK && cb.b)
        st = tbl_vcbuilder_add(cb.b, b, 0, err);
    if (st == HS_OK)
        st = cluster_finish(&cb, &bytes, &dir, err);
    tbl_vcbuilder_free(cb.b);
    if (st == HS_OK)
        st = write_sidecar(q, &bytes, e, err);
    if (st == HS_OK) {
        e->cluster = dir;
        dir = NULL;
    }
    hs_free(dir);
    hs_buf_free(&bytes);
    if (st != HS_OK)
        hs_err_prefix(err, "index %s on %s of %s", q->decl->kind, q->decl->column, q->data_file);
    return st;
}

typedef struct disk_build {
    const build_req *q;
    const tbl_ixkind *k;
    void *state;
    int64_t pos;
    tbl_vcbuilder *cluster;        /* optional: fed the same batches */
} disk_build;

static hs_status disk_emit(void *ctx, hs_batch *b, hs_error *err)
{
    disk_build *d = ctx;
    hs_status st = HS_OK;
    if (d->q->cancel && *d->q->cancel)
        st = hs_err_set(err, HS_CANCELLED, "cancelled");
    const hs_column *c = NULL;
    hs_column *tmp = NULL;
    if (st == HS_OK)
        st = leaf_column(b, d->q->decl->field_id, &c, &tmp, err);
    if (st == HS_OK)
        st = d->k->build_add(d->state, c, d->pos, err);
    if (st == HS_OK && d->cluster)
        st = tbl_vcbuilder_add(d->cluster, b, d->pos, err);
    d->pos += b->n_rows;
    hs_col_free(tmp);
    hs_batch_free(b);
    return st;
}

/* Builds by reading the column from the data file (every row, deletes
 * ignored: positions are the file's). */
static hs_status build_from_file(const build_req *q, ix_entry *e, hs_error *err)
{
    const tbl_ixkind *k = tbl_ixkind_find(q->decl->kind);
    if (!k)
        return hs_err_set(err, HS_UNSUPPORTED, "index kind \"%s\" cannot be built by this "
                          "build", q->decl->kind);
    tbl_plan_file pf = {0};
    pf.path = q->data_file;
    pf.record_count = q->record_count;
    pf.file_size = q->data_file_size;
    hs_field rs;
    hs_field_init(&rs, "", HS_TYPE_STRUCT, false);
    hs_field copy = {0};
    if (hs_field_copy(q->top, &copy) != HS_OK || hs_field_add_child(&rs, &copy) != HS_OK) {
        hs_field_clear(&copy);
        hs_field_clear(&rs);
        return hs_err_nomem(err, 64);
    }
    cluster_build cb = {0};
    hs_status st = cluster_begin(q, &cb, err);
    /* the cluster and included columns are read in the same pass */
    for (int i = 0; st == HS_OK && cb.b && i <= cb.cols.n_include; i++) {
        const hs_field *f = i == 0 ? cb.cols.cluster : cb.cols.include[i - 1];
        hs_field fc = {0};
        if (hs_field_copy(f, &fc) != HS_OK || hs_field_add_child(&rs, &fc) != HS_OK) {
            hs_field_clear(&fc);
            st = hs_err_nomem(err, 64);
        }
    }
    if (st != HS_OK) {
        tbl_vcbuilder_free(cb.b);
        hs_field_clear(&rs);
        return st;
    }
    disk_build d = {q, k, NULL, 0, cb.b};
    hs_buf bytes = {0};
    char *dir = NULL;
    st = k->build_begin(q->decl->kind, q->decl->params, q->field, q->data_file_size,
                        q->record_count, hs_io_is_object_uri(q->location), &d.state, err);
    tbl_read_opts o = {.n_out = -1, .batch_size = 65536};
    if (st == HS_OK)
        st = tbl_read_file_ex(&pf, &rs, &o, disk_emit, &d, NULL, NULL, NULL, err);
    if (st == HS_OK && d.pos != q->record_count)
        st = HS_CORRUPT_AT(err, "%s has %lld rows; the manifest says %lld", q->data_file,
                           (long long)d.pos, (long long)q->record_count);
    if (st == HS_OK)
        st = k->build_finish(d.state, &bytes, err);
    if (d.state)
        k->build_free(d.state);
    if (st == HS_OK)
        st = cluster_finish(&cb, &bytes, &dir, err);
    tbl_vcbuilder_free(cb.b);
    if (st == HS_OK)
        st = write_sidecar(q, &bytes, e, err);
    if (st == HS_OK) {
        e->cluster = dir;
        dir = NULL;
    }
    hs_free(dir);
    hs_buf_free(&bytes);
    hs_field_clear(&rs);
    if (st != HS_OK && st != HS_CANCELLED)
        hs_err_prefix(err, "index %s on %s of %s", q->decl->kind, q->decl->column, q->data_file);
    return st;
}

/* The top-level column of schema holding field id, or NULL. */
static const hs_field *top_of(const ice_schema *sc, int32_t fid)
{
    for (int i = 0; i < sc->root.n_children; i++) {
        const hs_field *c = &sc->root.children[i];
        if (c->field_id == fid)
            return c;
        ice_schema tmp = {.root = *c};
        if (c->n_children && ice_schema_find_id(&tmp, fid))
            return c;
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* live data files                                                     */

typedef struct live_set {
    tbl_plan *plan;                /* current snapshot, no filter */
    hs_map by_path;                /* path -> plan index */
    int64_t snapshot_id;           /* -1 = empty table */
} live_set;

static void live_free(live_set *l)
{
    tbl_plan_free(l->plan);
    hs_map_free(&l->by_path);
    memset(l, 0, sizeof *l);
}

static hs_status live_of(const ice_table_metadata *m, live_set *l, hs_error *err)
{
    memset(l, 0, sizeof *l);
    const ice_snapshot *snap = ice_metadata_current_snapshot(m);
    const ice_schema *sc = ice_metadata_current_schema(m);
    if (!sc)
        return hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
    l->snapshot_id = snap ? snap->snapshot_id : -1;
    HS_TRY(tbl_plan_make(m, snap, sc, NULL, &l->plan, err));
    for (int i = 0; i < l->plan->n_files; i++) {
        const char *p = l->plan->files[i].path;
        if (hs_map_put(&l->by_path, p, strlen(p), (uint64_t)i) != HS_OK) {
            live_free(l);
            return hs_err_nomem(err, 64);
        }
    }
    return HS_OK;
}

static bool live_has(const live_set *l, const char *path, int64_t size)
{
    uint64_t i;
    return hs_map_get(&l->by_path, path, strlen(path), &i) && l->plan->files[i].file_size == size;
}

/* Whether entry e is usable: sidecar present with the recorded size. */
static bool sidecar_present(const char *location, const ix_entry *e)
{
    hs_buf p = {0};
    bool exists = false;
    uint64_t size = 0;
    bool ok = ix_resolve_path(location, e->index_file, &p) == HS_OK &&
              hs_io_stat(hs_buf_cstr(&p), &exists, &size, NULL) == HS_OK && exists &&
              (int64_t)size == e->index_file_size;
    hs_buf_free(&p);
    return ok;
}

/* ------------------------------------------------------------------ */
/* registry commits                                                    */

/* A change applied to the base's registry (entries loaded): either it
 * edits reg and sets *changed (the registry is written whole), or it
 * pushes entries onto *add (ix_entry, strings borrowed from the change's
 * context) to be written as one new segment on the base's root. */
typedef hs_status (*reg_change_fn)(void *ctx, const ice_table_metadata *base, ix_registry *reg,
                                   bool *changed, hs_buf *add, hs_error *err);

typedef struct reg_commit {
    reg_change_fn fn;
    void *ctx;
    hs_buf written;                /* char *: files of the last attempt (location-relative) */
    char *location;                /* of that attempt */
    bool root_always;              /* write a root even when nothing changed (its
                                    * manifest summaries brought up to date) */
} reg_commit;

static void reg_commit_forget(reg_commit *c, bool remove_files)
{
    remove_listed(remove_files ? c->location : NULL, &c->written);
    hs_free(c->location);
    c->location = NULL;
}

/* Sets the manifest summaries the root written for metadata m will hold
 * (index/registry.h "manifests"): those of m's current snapshot, kept from
 * reg's root where it has them (files_too: where it has them with the
 * manifests' files; tbl_plan_msums).  Only a lack of memory fails. */
static hs_status set_msums(ix_registry *reg, const ice_table_metadata *m, bool files_too,
                          hs_error *err)
{
    ix_msum *a = NULL;
    int n = 0;
    HS_TRY(tbl_plan_msums(m, reg, files_too, &a, &n, err));
    ix_registry_set_msums(reg, a, n);
    return HS_OK;
}

static hs_status reg_commit_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                               ice_table_metadata *nm, hs_error *err)
{
    reg_commit *c = vctx;
    (void)loc;
    reg_commit_forget(c, true);
    ix_registry reg = {0};
    int bad = 0;
    HS_TRY(load_registry_ex(base, &reg, &bad, err));
    bool changed = false;
    hs_buf add = {0};
    hs_status st = c->fn(c->ctx, base, &reg, &changed, &add, err);
    if (st == HS_OK && bad > 0 && add.len > 0) {
        /* the base lists segments that cannot be read: write the registry
         * whole, without them, instead of one more segment on that root */
        for (size_t i = 0; i < HS_VEC_LEN(&add, ix_entry) && st == HS_OK; i++)
            st = ix_registry_add_entry(&reg, &HS_VEC_AT(&add, ix_entry, i), err);
        add.len = 0;
        changed = true;
    }
    char *rel = NULL;
    if (st == HS_OK)
        st = ice_metadata_copy(base, nm, err);
    bool do_write = changed || add.len > 0 || c->root_always;
    if (st == HS_OK && do_write)
        st = set_msums(&reg, base, c->root_always, err);
    if (st == HS_OK && do_write) {
        c->location = hs_strdup(base->location);
        if (!c->location)
            st = hs_err_nomem(err, 64);
        else if (changed)
            st = ix_registry_write(base->location, &reg, wflags_of(base), &rel, &c->written,
                                   err);
        else
            st = ix_registry_write_delta(base->location, &reg, (const ix_entry *)add.data,
                                         (int)HS_VEC_LEN(&add, ix_entry), NULL, 0,
                                         wflags_of(base), &rel, &c->written, err);
        if (st == HS_OK)
            st = ice_metadata_set_property(nm, IX_REGISTRY_PROPERTY, rel, err);
        hs_free(rel);
    }
    hs_buf_free(&add);
    ix_registry_clear(&reg);
    return st;
}

/* Commits a registry change (fn applied to each fresh base's registry). */
static hs_status reg_commit_run_ex(hs_table *t, reg_change_fn fn, void *ctx, bool root_always,
                                   hs_error *err)
{
    reg_commit c = {fn, ctx, {0}, NULL, root_always};
    hs_status st = tbl_commit(t, reg_commit_cb, &c, err);
    reg_commit_forget(&c, st != HS_OK);
    return st;
}

/* True when the manifest summaries of m's current snapshot that a root
 * written now would hold differ from reg's (a root written before they
 * existed, before the snapshot's newest manifests, or before summaries
 * carried the manifests' files, where these now fit). */
static hs_status msums_stale(const ix_registry *reg, const ice_table_metadata *m, bool *stale,
                             hs_error *err)
{
    ix_msum *a = NULL;
    int n = 0;
    *stale = false;
    HS_TRY(tbl_plan_msums(m, reg, true, &a, &n, err));
    *stale = n != reg->n_msums;
    for (int i = 0; i < n && !*stale; i++) {
        const ix_msum *old = ix_registry_find_msum(reg, a[i].path, a[i].length, a[i].snapshot);
        *stale = !old || (a[i].has_files && !old->has_files);
    }
    ix_msums_free(a, n);
    return HS_OK;
}

static hs_status reg_commit_run(hs_table *t, reg_change_fn fn, void *ctx, hs_error *err)
{
    reg_commit c = {fn, ctx, {0}, NULL, false};
    hs_status st = tbl_commit(t, reg_commit_cb, &c, err);
    reg_commit_forget(&c, st != HS_OK);
    return st;
}

/* ------------------------------------------------------------------ */
/* add_index                                                           */

typedef struct add_ctx {
    hs_table *t;
    ix_decl decl;                  /* borrowed strings */
    const hs_field *field;         /* in the schema of `schema` */
    const ice_schema *schema;      /* t's current schema at planning (copy below) */
    ice_schema schema_copy;
    int64_t planned_snapshot;
    hs_buf mine;                   /* ix_entry built (owned strings) */
    int n_threads;
} add_ctx;

static void free_entries(hs_buf *v)
{
    for (size_t i = 0; i < HS_VEC_LEN(v, ix_entry); i++)
        entry_free_strings(&HS_VEC_AT(v, ix_entry, i));
    hs_buf_free(v);
}

static void free_strs(hs_buf *v)
{
    for (size_t i = 0; i < HS_VEC_LEN(v, char *); i++)
        hs_free(HS_VEC_AT(v, char *, i));
    hs_buf_free(v);
}

/* Parallel building of a list of requests, with progress and cancel. */
typedef struct build_run {
    build_req *reqs;
    ix_entry *out;
    int n;
    volatile int cancel;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int next;
} build_run;

/* A task's own status: tasks never fail the pool group (which would skip
 * the tasks after the first failure, so that r->done could never reach the
 * number submitted and the progress loop below would wait forever). */
typedef struct build_task { build_run *r; int i; hs_status st; hs_error err; } build_task;

static hs_status build_task_fn(void *arg, hs_error *err)
{
    build_task *t = arg;
    build_run *r = t->r;
    (void)err;
    hs_status st = HS_OK;
    hs_err_clear(&t->err);
    if (r->cancel)
        st = hs_err_set(&t->err, HS_CANCELLED, "cancelled");
    else
        st = build_from_file(&r->reqs[t->i], &r->out[t->i], &t->err);
    t->st = st;
    pthread_mutex_lock(&r->mu);
    r->done++;
    if (st != HS_OK)
        r->cancel = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return HS_OK;
}

static int threads_of(int n_threads, int n_jobs)
{
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > n_jobs)
        n_threads = n_jobs;
    return n_threads < 1 ? 1 : n_threads;
}

/* Builds every request; out[i] filled for each success.  On failure or
 * cancel, every sidecar built here is removed and out[] cleared. */
static hs_status build_all(build_req *reqs, ix_entry *out, int n, int n_threads,
                           const hs_index_options *opt, const char *what, const char *location,
                           hs_error *err)
{
    build_run r = {reqs, out, n, 0, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    for (int i = 0; i < n; i++)
        reqs[i].cancel = &r.cancel;
    hs_progress_fn progress = opt ? opt->progress : NULL;
    void *pctx = opt ? opt->progress_ctx : NULL;
    hs_status st = HS_OK;
    if (progress && progress(pctx, what, 0, n))
        st = hs_err_set(err, HS_CANCELLED, "%s: cancelled by the progress callback", what);
    int threads = threads_of(n_threads, n);
    if (st == HS_OK && threads <= 1) {
        for (int i = 0; i < n && st == HS_OK; i++) {
            st = build_from_file(&reqs[i], &out[i], err);
            if (st == HS_OK && progress && progress(pctx, what, i + 1, n))
                st = hs_err_set(err, HS_CANCELLED, "%s: cancelled by the progress callback",
                                what);
        }
    } else if (st == HS_OK) {
        hs_pool *pool = NULL;
        hs_group *g = NULL;
        build_task *tasks = hs_calloc((size_t)n, sizeof *tasks);
        st = tasks ? hs_pool_create(threads, &pool, err) : hs_err_nomem(err, 64);
        if (st == HS_OK)
            st = hs_group_create(pool, &g, err);
        int submitted = 0;
        for (int i = 0; i < n && st == HS_OK; i++) {
            tasks[i] = (build_task){&r, i};
            if (hs_group_submit(g, build_task_fn, &tasks[i]) != HS_OK)
                st = hs_err_nomem(err, 64);
            else
                submitted++;
        }
        /* the calling thread reports progress while the pool works */
        bool cancelled = false;
        pthread_mutex_lock(&r.mu);
        int reported = 0;
        while (r.done < submitted) {
            while (r.done == reported && r.done < submitted)
                pthread_cond_wait(&r.cv, &r.mu);
            int d = r.done;
            pthread_mutex_unlock(&r.mu);
            if (progress && !cancelled && !r.cancel && d > reported && progress(pctx, what, d, n)) {
                cancelled = true;
                r.cancel = 1;
            }
            reported = d;
            pthread_mutex_lock(&r.mu);
        }
        pthread_mutex_unlock(&r.mu);
        if (g) {
            hs_error gerr;
            hs_err_clear(&gerr);
            hs_status gs = hs_group_wait(g, &gerr);
            /* the first task that failed for its own reason (not because
             * another one's failure cancelled it) */
            const build_task *failed = NULL;
            for (int i = 0; i < submitted && !failed; i++)
                if (tasks[i].st != HS_OK && tasks[i].st != HS_CANCELLED)
                    failed = &tasks[i];
            for (int i = 0; i < submitted && !failed; i++)
                if (tasks[i].st != HS_OK)
                    failed = &tasks[i];
            if (st == HS_OK && cancelled)
                st = hs_err_set(err, HS_CANCELLED, "%s: cancelled by the progress callback",
                                what);
            else if (st == HS_OK && failed) {
                st = failed->st;
                if (err)
                    *err = failed->err;
            } else if (st == HS_OK && gs != HS_OK) {
                st = gs;
                if (err)
                    *err = gerr;
            }
        }
        hs_group_destroy(g);
        hs_pool_destroy(pool);
        hs_free(tasks);
    }
    if (st != HS_OK) {
        for (int i = 0; i < n; i++) {
            if (out[i].index_file)
                remove_local(location, out[i].index_file);
            entry_free_strings(&out[i]);
        }
    }
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.cv);
    return st;
}

/* Requests for the files of `live` lacking a usable sidecar of the
 * declaration (in reg or already built by us). */
static hs_status missing_reqs(add_ctx *c, const ice_table_metadata *m, const live_set *live,
                              const ix_registry *reg, hs_buf *reqs, hs_error *err)
{
    const hs_field *top = top_of(c->schema, c->decl.field_id);
    if (!top)
        return hs_err_set(err, HS_NOT_FOUND, "column \"%s\" is no longer in the table",
                          c->decl.column);
    for (int i = 0; i < live->plan->n_files; i++) {
        const tbl_plan_file *f = &live->plan->files[i];
        const ix_entry *e = ix_registry_find_entry(reg, f->path, c->decl.field_id, c->decl.kind);
        if (e && e->data_file_size == f->file_size && sidecar_present(m->location, e))
            continue;
        bool mine = false;
        for (size_t k = 0; k < HS_VEC_LEN(&c->mine, ix_entry) && !mine; k++) {
            const ix_entry *me = &HS_VEC_AT(&c->mine, ix_entry, k);
            mine = strcmp(me->data_file, f->path) == 0 && me->data_file_size == f->file_size;
        }
        if (mine)
            continue;
        build_req q = {m->location, wflags_of(m), &c->decl, c->field, top, f->path,
                       f->file_size, f->record_count, NULL, c->schema};
        if (hs_buf_append(reqs, &q, sizeof q) != HS_OK)
            return hs_err_nomem(err, sizeof q);
    }
    return HS_OK;
}

static hs_status build_reqs_into(add_ctx *c, hs_buf *reqs, const hs_index_options *opt,
                                 const char *location, hs_error *err)
{
    int n = (int)(reqs->len / sizeof(build_req));
    if (n == 0)
        return HS_OK;
    ix_entry *out = hs_calloc((size_t)n, sizeof *out);
    if (!out)
        return hs_err_nomem(err, (size_t)n * sizeof *out);
    char what[300];
    snprintf(what, sizeof what, "add_index %s", c->decl.column);
    hs_status st = build_all((build_req *)reqs->data, out, n, c->n_threads, opt, what, location,
                             err);
    for (int i = 0; i < n; i++) {
        if (st == HS_OK && hs_buf_append(&c->mine, &out[i], sizeof out[i]) == HS_OK)
            continue;
        if (st == HS_OK) {
            st = hs_err_nomem(err, 64);
            /* the rest is freed below; what is in mine is cleaned by the caller */
        }
        if (out[i].index_file)
            remove_local(location, out[i].index_file);
        entry_free_strings(&out[i]);
    }
    hs_free(out);
    return st;
}

static bool entry_live(void *ctx, const ix_entry *e)
{
    return live_has(ctx, e->data_file, e->data_file_size);
}

/* On a base newer than the one planned: drops our entries of files that
 * left, builds sidecars for the files that came. */
static hs_status add_catch_up(add_ctx *c, const ice_table_metadata *base, const ix_registry *reg,
                              hs_error *err)
{
    int64_t cur = ice_metadata_current_snapshot(base) ? base->current_snapshot_id : -1;
    if (cur != c->planned_snapshot) {
        /* files came or went since planning: drop ours that left, build the new ones */
        live_set live;
        HS_TRY(live_of(base, &live, err));
        size_t k = 0;
        for (size_t i = 0; i < HS_VEC_LEN(&c->mine, ix_entry); i++) {
            ix_entry *e = &HS_VEC_AT(&c->mine, ix_entry, i);
            if (live_has(&live, e->data_file, e->data_file_size)) {
                HS_VEC_AT(&c->mine, ix_entry, k++) = *e;
                continue;
            }
            remove_local(base->location, e->index_file);
            entry_free_strings(e);
        }
        c->mine.len = k * sizeof(ix_entry);
        hs_buf reqs = {0};
        hs_status st = missing_reqs(c, base, &live, reg, &reqs, err);
        if (st == HS_OK)
            st = build_reqs_into(c, &reqs, NULL, base->location, err);
        hs_buf_free(&reqs);
        live_free(&live);
        HS_TRY(st);
        c->planned_snapshot = cur;
    }
    return HS_OK;
}

static hs_status add_change(void *vctx, const ice_table_metadata *base, ix_registry *reg,
                            bool *changed, hs_buf *add, hs_error *err)
{
    (void)add;
    add_ctx *c = vctx;
    HS_TRY(add_catch_up(c, base, reg, err));
    HS_TRY(ix_registry_add_decl(reg, c->decl.column, c->decl.field_id, c->decl.kind,
                                c->decl.params, err));
    for (size_t i = 0; i < HS_VEC_LEN(&c->mine, ix_entry); i++) {
        const ix_entry *e = &HS_VEC_AT(&c->mine, ix_entry, i);
        const ix_entry *theirs = ix_registry_find_entry(reg, e->data_file, e->field_id, e->kind);
        if (theirs && theirs->data_file_size == e->data_file_size &&
            sidecar_present(base->location, theirs))
            continue;   /* a concurrent add_index built it: keep theirs */
        HS_TRY(ix_registry_add_entry(reg, e, err));
    }
    *changed = true;
    return HS_OK;
}

/* Resolves kind and params from the options (dict form: params "type"). */
static hs_status resolve_kind(const hs_index_options *opt, char **kind, char **params,
                              hs_error *err)
{
    *kind = *params = NULL;
    const char *k = opt && opt->kind ? opt->kind : NULL;
    const char *p = opt && opt->params_json && *opt->params_json ? opt->params_json : NULL;
    char *canon = NULL;
    if (p) {
        json_error_t je;
        json_t *j = hs_json_loads(p, 0, &je);
        if (!j || !json_is_object(j)) {
            json_decref(j);
            return hs_err_set(err, HS_INVALID, "index parameters: not a JSON object: %s",
                              j ? "a different JSON value" : je.text);
        }
        const char *type = json_string_value(json_object_get(j, "type"));
        if (!k && type)
            k = type;   /* borrowed from j until the strdup below */
        if (type && opt->kind && strcmp(type, opt->kind) != 0) {
            hs_status st = hs_err_set(err, HS_INVALID, "index kind \"%s\" and parameter type "
                                      "\"%s\" disagree", opt->kind, type);
            json_decref(j);
            return st;
        }
        canon = hs_json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        *kind = hs_strdup(k ? k : "auto");
        json_decref(j);
        if (!canon) {
            hs_free(*kind);
            *kind = NULL;
            return hs_err_nomem(err, 64);
        }
        *params = hs_strdup(canon);
        free(canon);
    } else {
        *kind = hs_strdup(k ? k : "auto");
        *params = hs_strdup("{}");
    }
    if (!*kind || !*params) {
        hs_free(*kind);
        hs_free(*params);
        *kind = *params = NULL;
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

hs_status hs_table_add_index(hs_table *t, const char *column, const hs_index_options *opt,
                             hs_error *err)
{
    HS_TRY(tbl_check_writable(t, err));
    HS_OPTS_IN(opt, hs_index_options, err);
    if (!column || !*column)
        return hs_err_set(err, HS_INVALID, "add_index: no column given");
    HS_TRY(hs_table_refresh(t, err));
    const ice_schema *sc = ice_metadata_current_schema(&t->meta);
    if (!sc)
        return hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
    const hs_field *f = ice_schema_find_name(sc, column, true);
    if (!f)
        f = ice_schema_find_name(sc, column, false);
    if (!f)
        return hs_err_set(err, HS_NOT_FOUND, "add_index: no column \"%s\" in the table schema",
                          column);
    char *kind = NULL, *params = NULL;
    HS_TRY(resolve_kind(opt, &kind, &params, err));
    if (strcasecmp(kind, "auto") == 0 && tbl_is_float_vector_type(f)) {
        /* "auto" on a vector column means the default vector index */
        char *h = hs_strdup("hnsw");
        if (!h) {
            hs_free(kind);
            hs_free(params);
            return hs_err_nomem(err, 8);
        }
        hs_free(kind);
        kind = h;
    }
    hs_status st = HS_OK;
    const tbl_ixkind *fam = tbl_ixkind_find(kind);
    if (!fam && is_vector_kind(kind))
        st = hs_err_set(err, HS_UNSUPPORTED, "add_index: index kind \"%s\" is not available in "
                        "this build yet", kind);
    else if (!fam)
        st = hs_err_set(err, HS_INVALID, "add_index: unknown index kind \"%s\" (inverted, range, "
                        "auto, hnsw, hnsw_tq8, hnsw_tq4, hnsw_pq, hnsw_bin, ivf_hnsw...)", kind);
    else {
        st = fam->check(kind, f, params, err);
        tbl_vcl_cols vcols;
        bool clustered = false;
        if (st == HS_OK && tbl_vindex_is_vector_kind(kind))
            st = tbl_vcl_resolve(params, sc, f->field_id, &vcols, &clustered, err);
        if (st != HS_OK)
            hs_err_prefix(err, "add_index");
    }
    add_ctx c = {0};
    live_set live = {0};
    ix_registry reg = {0};
    hs_buf reqs = {0};
    if (st == HS_OK)
        st = ice_schema_copy(sc, &c.schema_copy);
    if (st == HS_OK) {
        c.t = t;
        c.schema = &c.schema_copy;
        c.field = ice_schema_find_id(&c.schema_copy, f->field_id);
        c.decl.column = (char *)column;
        c.decl.field_id = f->field_id;
        c.decl.kind = kind;
        c.decl.params = params;
        c.n_threads = opt ? opt->n_threads : 0;
        st = live_of(&t->meta, &live, err);
    }
    if (st == HS_OK) {
        c.planned_snapshot = live.snapshot_id;
        st = load_registry_of(&t->meta, &reg, err);
    }
    if (st == HS_OK)
        st = missing_reqs(&c, &t->meta, &live, &reg, &reqs, err);
    if (st == HS_OK)
        st = build_reqs_into(&c, &reqs, opt, t->meta.location, err);
    char *location = hs_strdup(t->meta.location);
    if (st == HS_OK && !location)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = reg_commit_run(t, add_change, &c, err);
    if (st != HS_OK && location) {
        for (size_t i = 0; i < HS_VEC_LEN(&c.mine, ix_entry); i++)
            remove_local(location, HS_VEC_AT(&c.mine, ix_entry, i).index_file);
    } else if (st == HS_OK && HS_VEC_LEN(&c.mine, ix_entry) > 0) {
        /* sidecars of ours that lost to a concurrent add_index's: remove */
        ix_registry now = {0};
        if (load_registry_of(&t->meta, &now, NULL) == HS_OK) {
            for (size_t i = 0; i < HS_VEC_LEN(&c.mine, ix_entry); i++) {
                const ix_entry *e = &HS_VEC_AT(&c.mine, ix_entry, i);
                const ix_entry *k = ix_registry_find_entry(&now, e->data_file, e->field_id,
                                                           e->kind);
                if (!k || strcmp(k->index_file, e->index_file) != 0)
                    remove_local(location, e->index_file);
            }
        }
        ix_registry_clear(&now);
    }
    hs_free(location);
    free_entries(&c.mine);
    hs_buf_free(&reqs);
    ix_registry_clear(&reg);
    live_free(&live);
    ice_schema_clear(&c.schema_copy);
    hs_free(kind);
    hs_free(params);
    return st;
}

/* ------------------------------------------------------------------ */
/* refresh_indexes (catch-up)                                          */

/* One add_ctx per declaration (strings copied: the registry they come from
 * is freed before the commit). */
typedef struct refresh_ctx {
    add_ctx *c;
    int n;
    int64_t n_added;               /* entries of the last attempt */
} refresh_ctx;

static void refresh_ctx_free(refresh_ctx *r, const char *location, bool remove_mine)
{
    for (int i = 0; i < r->n; i++) {
        add_ctx *c = &r->c[i];
        for (size_t k = 0; remove_mine && location && k < HS_VEC_LEN(&c->mine, ix_entry); k++)
            remove_local(location, HS_VEC_AT(&c->mine, ix_entry, k).index_file);
        free_entries(&c->mine);
        ice_schema_clear(&c->schema_copy);
        hs_free(c->decl.column);
        hs_free(c->decl.kind);
        hs_free(c->decl.params);
    }
    hs_free(r->c);
    memset(r, 0, sizeof *r);
}

/* Our entries, for declarations the base still has, that the base lacks
 * (a concurrent refresh or add_index may have built some: theirs stay). */
static hs_status refresh_change(void *vctx, const ice_table_metadata *base, ix_registry *reg,
                                bool *changed, hs_buf *add, hs_error *err)
{
    refresh_ctx *r = vctx;
    (void)changed;
    r->n_added = 0;
    for (int i = 0; i < r->n; i++) {
        add_ctx *c = &r->c[i];
        if (ix_registry_find_decl(reg, c->decl.field_id, c->decl.kind) < 0)
            continue;   /* dropped meanwhile */
        HS_TRY(add_catch_up(c, base, reg, err));
        for (size_t k = 0; k < HS_VEC_LEN(&c->mine, ix_entry); k++) {
            const ix_entry *e = &HS_VEC_AT(&c->mine, ix_entry, k);
            const ix_entry *theirs = ix_registry_find_entry(reg, e->data_file, e->field_id,
                                                            e->kind);
            if (theirs && theirs->data_file_size == e->data_file_size &&
                sidecar_present(base->location, theirs))
                continue;
            if (hs_buf_append(add, e, sizeof *e) != HS_OK)
                return hs_err_nomem(err, 64);
            r->n_added++;
        }
    }
    return HS_OK;
}

/* Sets up r->c[] for the declarations of reg whose column and kind this
 * build can index, and builds what the live files lack. */
static hs_status refresh_plan(hs_table *t, const ix_registry *reg, const live_set *live,
                              const hs_index_options *opt, refresh_ctx *r, hs_error *err)
{
    const ice_schema *sc = ice_metadata_current_schema(&t->meta);
    if (!sc || reg->n_decls == 0)
        return HS_OK;
    r->c = hs_calloc((size_t)reg->n_decls, sizeof *r->c);
    if (!r->c)
        return hs_err_nomem(err, (size_t)reg->n_decls * sizeof *r->c);
    hs_status st = HS_OK;
    for (int i = 0; i < reg->n_decls && st == HS_OK; i++) {
        const ix_decl *d = &reg->decls[i];
        if (!ice_schema_find_id(sc, d->field_id) || !top_of(sc, d->field_id) ||
            !tbl_ixkind_find(d->kind))
            continue;   /* column dropped, or a kind this build cannot make */
        add_ctx *c = &r->c[r->n++];
        c->t = t;
        c->decl.column = hs_strdup(d->column);
        c->decl.kind = hs_strdup(d->kind);
        c->decl.params = hs_strdup(d->params ? d->params : "{}");
        c->decl.field_id = d->field_id;
        c->n_threads = opt ? opt->n_threads : 0;
        c->planned_snapshot = live->snapshot_id;
        if (!c->decl.column || !c->decl.kind || !c->decl.params)
            st = hs_err_nomem(err, 64);
        if (st == HS_OK)
            st = ice_schema_copy(sc, &c->schema_copy);
        if (st == HS_OK) {
            c->schema = &c->schema_copy;
            c->field = ice_schema_find_id(&c->schema_copy, d->field_id);
        }
        hs_buf reqs = {0};
        if (st == HS_OK)
            st = missing_reqs(c, &t->meta, live, reg, &reqs, err);
        if (st == HS_OK)
            st = build_reqs_into(c, &reqs, opt, t->meta.location, err);
        hs_buf_free(&reqs);
    }
    return st;
}

hs_status hs_table_refresh_indexes(hs_table *t, const hs_index_options *opt, int64_t *n_built,
                                   hs_error *err)
{
    if (n_built)
        *n_built = 0;
    HS_TRY(tbl_check_writable(t, err));
    HS_OPTS_IN(opt, hs_index_options, err);
    HS_TRY(hs_table_refresh(t, err));
    if (!ice_kv_get(&t->meta.properties, IX_REGISTRY_PROPERTY))
        return HS_OK;   /* nothing declared */
    ix_registry reg = {0};
    live_set live = {0};
    refresh_ctx r = {0};
    HS_TRY(load_registry_of(&t->meta, &reg, err));
    hs_status st = live_of(&t->meta, &live, err);
    if (st == HS_OK)
        st = refresh_plan(t, &reg, &live, opt, &r, err);
    int64_t built = 0;
    for (int i = 0; i < r.n; i++)
        built += (int64_t)HS_VEC_LEN(&r.c[i].mine, ix_entry);
    char *location = hs_strdup(t->meta.location);
    if (st == HS_OK && !location)
        st = hs_err_nomem(err, 64);
    /* nothing missing now: commit only when the table moved since (the
     * commit's catch-up then builds the new files) */
    if (st == HS_OK && built > 0)
        st = reg_commit_run(t, refresh_change, &r, err);
    bool stale = false;
    if (st == HS_OK && built == 0 && reg.format_version >= 1)
        st = msums_stale(&reg, &t->meta, &stale, err);
    if (st == HS_OK && stale)   /* a root of an older version: give it the summaries */
        st = reg_commit_run_ex(t, refresh_change, &r, true, err);
    if (st == HS_OK && built > 0) {
        /* sidecars that lost to a concurrent refresh or add_index: remove */
        ix_registry now = {0};
        if (load_registry_of(&t->meta, &now, NULL) == HS_OK) {
            for (int i = 0; i < r.n; i++) {
                add_ctx *c = &r.c[i];
                for (size_t k = 0; k < HS_VEC_LEN(&c->mine, ix_entry); k++) {
                    const ix_entry *e = &HS_VEC_AT(&c->mine, ix_entry, k);
                    const ix_entry *x = ix_registry_find_entry(&now, e->data_file, e->field_id,
                                                               e->kind);
                    if (!x || strcmp(x->index_file, e->index_file) != 0)
                        remove_local(location, e->index_file);
                }
            }
        }
        ix_registry_clear(&now);
        if (n_built)
            *n_built = r.n_added;
    }
    refresh_ctx_free(&r, location, st != HS_OK);
    hs_free(location);
    live_free(&live);
    ix_registry_clear(&reg);
    return st;
}

void tbl_index_auto_refresh(hs_table *t)
{
    const char *v = ice_kv_get(&t->meta.properties, "hyperstream.index.auto-refresh");
    if (!t->catalog || !v || strcasecmp(v, "true") != 0 ||
        !ice_kv_get(&t->meta.properties, IX_REGISTRY_PROPERTY))
        return;
    hs_error e;
    hs_err_clear(&e);
    int64_t n = 0;
    if (hs_table_refresh_indexes(t, NULL, &n, &e) != HS_OK)
        warn("%s: index auto-refresh: %s; scans read the files without a sidecar",
             t->meta.location, e.msg);
}

/* ------------------------------------------------------------------ */
/* drop_index                                                          */

typedef struct drop_ctx {
    const char *column;
    int32_t field_id;              /* -1 = match declarations by column name */
    const char *kind;
} drop_ctx;

static hs_status drop_change(void *vctx, const ice_table_metadata *base, ix_registry *reg,
                             bool *changed, hs_buf *add, hs_error *err)
{
    (void)add;
    drop_ctx *c = vctx;
    int removed = 0;
    if (c->field_id >= 0)
        removed = ix_registry_remove_decls(reg, c->field_id, c->kind);
    for (int i = 0; i < reg->n_decls; i++) {
        const ix_decl *d = &reg->decls[i];
        if (strcmp(d->column, c->column) == 0 && (!c->kind || strcmp(d->kind, c->kind) == 0)) {
            removed += ix_registry_remove_decls(reg, d->field_id, d->kind);
            i = -1;   /* the array moved: start over */
        }
    }
    if (removed == 0)
        return hs_err_set(err, HS_NOT_FOUND, "drop_index: no %s%sindex on \"%s\"",
                          c->kind ? c->kind : "", c->kind ? " " : "", c->column);
    *changed = true;
    return HS_OK;
}

hs_status hs_table_drop_index(hs_table *t, const char *column, const char *kind, hs_error *err)
{
    HS_TRY(tbl_check_writable(t, err));
    if (!column || !*column)
        return hs_err_set(err, HS_INVALID, "drop_index: no column given");
    HS_TRY(hs_table_refresh(t, err));
    const ice_schema *sc = ice_metadata_current_schema(&t->meta);
    const hs_field *f = sc ? ice_schema_find_name(sc, column, true) : NULL;
    if (!f && sc)
        f = ice_schema_find_name(sc, column, false);
    drop_ctx c = {column, f ? f->field_id : -1, kind && *kind ? kind : NULL};
    return reg_commit_run(t, drop_change, &c, err);
}

/* ------------------------------------------------------------------ */
/* list                                                                */

hs_status hs_table_list_indexes(const hs_table *t, char **out, hs_error *err)
{
    *out = NULL;
    ix_registry reg = {0};
    live_set live = {0};
    HS_TRY(load_registry_of(&t->meta, &reg, err));
    hs_status st = live_of(&t->meta, &live, err);
    json_t *arr = json_array();
    if (st == HS_OK && !arr)
        st = hs_err_nomem(err, 64);
    for (int i = 0; st == HS_OK && i < reg.n_decls; i++) {
        const ix_decl *d = &reg.decls[i];
        int64_t indexed = 0, bytes = 0;
        for (int k = 0; k < reg.n_entries; k++) {
            const ix_entry *e = &reg.entries[k];
            if (e->field_id == d->field_id && strcmp(e->kind, d->kind) == 0 &&
                live_has(&live, e->data_file, e->data_file_size)) {
                indexed++;
                bytes += e->index_file_size;
            }
        }
        json_t *params = hs_json_loads(d->params, 0, NULL);
        json_t *o = json_pack("{s:s, s:i, s:s, s:o, s:I, s:I, s:I}", "column", d->column,
                              "field_id", (int)d->field_id, "kind", d->kind, "params",
                              params ? params : json_object(), "files_indexed",
                              (json_int_t)indexed, "files_live",
                              (json_int_t)live.plan->n_files, "bytes", (json_int_t)bytes);
        if (!o || json_array_append_new(arr, o) != 0)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK) {
        char *s = hs_json_dumps(arr, JSON_COMPACT);
        *out = s ? hs_strdup(s) : NULL;
        free(s);
        if (!*out)
            st = hs_err_nomem(err, 64);
    }
    json_decref(arr);
    live_free(&live);
    ix_registry_clear(&reg);
    return st;
}

/* ------------------------------------------------------------------ */
/* orphans                                                             */

static hs_status prune_change(void *vctx, const ice_table_metadata *base, ix_registry *reg,
                              bool *changed, hs_buf *add, hs_error *err)
{
    (void)add;
    live_set live;
    HS_TRY(live_of(base, &live, err));
    *changed = ix_registry_retain(reg, entry_live, &live) > 0;
    live_free(&live);
    return HS_OK;
}

/* Deletes the files of dir (not subdirectories) not in `keep` (absolute
 * local paths) and last modified before cutoff_ms. */
static hs_status sweep_dir(const char *dir, const hs_map *keep, int64_t cutoff_ms,
                           int64_t *n_removed, hs_error *err)
{
    char **names = NULL;
    size_t n = 0;
    hs_status st = cat_io_list_dir(dir, &names, &n, err);
    if (st == HS_NOT_FOUND) {
        hs_err_clear(err);
        return HS_OK;
    }
    HS_TRY(st);
    hs_buf p = {0};
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        hs_buf_reset(&p);
        if (hs_buf_printf(&p, "%s/%s", dir, names[i]) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        const char *path = hs_buf_cstr(&p);
        if (hs_map_get(keep, path, strlen(path), NULL) || strstr(names[i], ".tmp-"))
            continue;   /* referenced, or a file being written */
        /* through io.h: local files and objects alike (S3: HEAD, Last-Modified) */
        bool exists = false;
        int64_t mtime = -1;
        st = hs_io_stat_mtime(path, &exists, NULL, &mtime, err);
        if (st != HS_OK || !exists || mtime < 0 || mtime > cutoff_ms)
            continue;
        st = hs_io_delete(path, err);
        if (st == HS_OK)
            (*n_removed)++;
    }
    hs_buf_free(&p);
    cat_strv_free(names, n);
    return st;
}

hs_status hs_table_remove_orphan_indexes(hs_table *t, int64_t older_than_ms, int64_t *n_removed,
                                         hs_error *err)
{
    if (n_removed)
        *n_removed = 0;
    HS_TRY(tbl_check_writable(t, err));
    if (older_than_ms < 0)
        return hs_err_set(err, HS_INVALID, "remove_orphan_indexes: negative age");
    HS_TRY(hs_table_refresh(t, err));
    /* 1. entries of data files that left the current snapshot go */
    ix_registry reg = {0};
    live_set live = {0};
    HS_TRY(load_registry_of(&t->meta, &reg, err));
    hs_status st = live_of(&t->meta, &live, err);
    bool stale = false;
    for (int i = 0; st == HS_OK && i < reg.n_entries && !stale; i++)
        stale = !entry_live(&live, &reg.entries[i]);
    live_free(&live);
    ix_registry_clear(&reg);
    if (st == HS_OK && stale)
        st = reg_commit_run(t, prune_change, NULL, err);
    /* 2. files under index/ that the registry does not reference */
    hs_map keep = {0};
    if (st == HS_OK)
        st = load_registry_of(&t->meta, &reg, err);
    hs_buf p = {0};
    for (int i = 0; st == HS_OK && i < reg.n_entries; i++) {
        if (ix_resolve_path(t->meta.location, reg.entries[i].index_file, &p) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        const char *l = tbl_local(hs_buf_cstr(&p));
        if (hs_map_put(&keep, l, strlen(l), 1) != HS_OK)
            st = hs_err_nomem(err, 256);
    }
    /* the current root and its segments */
    const char *cur = ice_kv_get(&t->meta.properties, IX_REGISTRY_PROPERTY);
    for (int i = -1; st == HS_OK && cur && i < reg.n_segments; i++) {
        if (ix_resolve_path(t->meta.location, i < 0 ? cur : reg.segments[i].path, &p) != HS_OK)
            st = hs_err_nomem(err, 256);
        else {
            const char *l = tbl_local(hs_buf_cstr(&p));
            if (hs_map_put(&keep, l, strlen(l), 1) != HS_OK)
                st = hs_err_nomem(err, 256);
        }
    }
    int64_t cutoff = ice_now_ms() - older_than_ms, count = 0;
    if (st == HS_OK && ix_resolve_path(t->meta.location, "index", &p) != HS_OK)
        st = hs_err_nomem(err, 256);
    char *dir = st == HS_OK ? hs_strdup(tbl_local(hs_buf_cstr(&p))) : NULL;
    if (st == HS_OK && !dir)
        st = hs_err_nomem(err, 256);
    if (st == HS_OK)
        st = sweep_dir(dir, &keep, cutoff, &count, err);
    if (st == HS_OK) {
        hs_buf_reset(&p);
        if (hs_buf_printf(&p, "%s/registry", dir) != HS_OK)
            st = hs_err_nomem(err, 256);
        else
            st = sweep_dir(hs_buf_cstr(&p), &keep, cutoff, &count, err);
    }
    hs_free(dir);
    hs_buf_free(&p);
    hs_map_free(&keep);
    ix_registry_clear(&reg);
    if (n_removed)
        *n_removed = count;
    return st;
}

/* ------------------------------------------------------------------ */
/* the cache of opened sidecars and registry versions                  */

/* Sidecars and registry versions are immutable files, so a process keeps
 * the ones it opened (a table/fcache.h cache): a warm engine answers a
 * point lookup with lookups only, not by re-reading and re-verifying every
 * sidecar.  A file replaced or damaged in place no longer matches its
 * entry's identity and is loaded (and verified) again.  Entries are copies
 * in memory (no mmap: a file truncated under a mapping would fault),
 * evicted least-recently-used beyond HS_INDEX_CACHE_MB (default 256; 0
 * disables keeping them). */

enum { CE_SIDECAR = 1, CE_REGISTRY = 2, CE_SEGMENT = 3, CE_ROOT = 4 };

/* A registry root's entry holds the composed registry; its segments are
 * entries of their own, so that the root written by the next append (one
 * new segment, the others shared) is composed from cached segments and
 * only the new segment is read and parsed. */
typedef struct cache_ent {
    int64_t size;                  /* bytes of the file */
    hs_buf bytes;                  /* sidecar file */
    sidx_index *ix;                /* sidecar, over bytes */
    ix_registry reg;               /* registry, indexed by data file */
    ix_segdata seg;                /* registry segment */
} cache_ent;

static void ent_free(void *obj)
{
    cache_ent *c = obj;
    sidx_close(c->ix);
    hs_buf_free(&c->bytes);
    ix_registry_clear(&c->reg);
    ix_segdata_clear(&c->seg);
    hs_free(c);
}

static tbl_fcache g_ix_cache = TBL_FCACHE_INIT("HS_INDEX_CACHE_MB", 256, ent_free);

void tbl_index_cache_clear(void)
{
    hs_io_background_wait();   /* a registry warming (tbl_ix_warm_async) adds entries */
    tbl_fcache_clear(&g_ix_cache);
    hs_avro_schema_cache_clear();   /* the manifests' parsed schemas, too */
    tbl_mcache_clear();             /* and decoded manifests */
    tbl_vindex_cache_clear();       /* and opened vector indexes */
    tbl_list_cache_clear();         /* and decoded manifest lists */
    tbl_filter_cache_clear();       /* and bound filters */
    tbl_eqdel_cache_clear();        /* and equality-deleted positions */
}

static void cache_release(tbl_fref *ref)
{
    tbl_fcache_release(&g_ix_cache, ref);
}

typedef struct ent_ctx {
    int kind;
    const char *location;          /* registry: the table's, for its segments */
    const hs_field *field;
    int64_t want_size;
    char *why;
    size_t why_cap;
    hs_buf pre;                    /* a sidecar read whole already (object stores) */
    bool have_pre;
} ent_ctx;

static hs_status compose_cached(const char *location, const char *root_path, ix_registry *r,
                                hs_error *err);

/* Loads what an entry holds (tbl_fcache_load); *obj NULL with x->why set
 * when the file is unusable (the message for the warning). */
static hs_status ent_load(void *ctx, const char *path, tbl_fref *ref, void **obj, size_t *cost,
                          hs_error *err)
{
    (void)ref;
    ent_ctx *x = ctx;
    cache_ent *c = hs_calloc(1, sizeof *c);
    if (!c)
        return hs_err_nomem(err, sizeof *c);
    hs_error e2;
    hs_err_clear(&e2);
    hs_status st = HS_OK;
    if (x->have_pre) {   /* cache_get read it: take the bytes */
        c->bytes = x->pre;
        memset(&x->pre, 0, sizeof x->pre);
        x->have_pre = false;
    } else {
        st = hs_io_read_all(path, &c->bytes, &e2);
    }
    c->size = (int64_t)c->bytes.len;
    if (st == HS_OK && x->kind == CE_SIDECAR && x->want_size >= 0 &&
        (int64_t)c->bytes.len != x->want_size) {
        snprintf(x->why, x->why_cap, "size %zu differs from the registry's %lld", c->bytes.len,
                 (long long)x->want_size);
        ent_free(c);
        return HS_OK;
    }
    if (st == HS_OK && x->kind == CE_SEGMENT) {
        if (x->want_size >= 0 && (int64_t)c->bytes.len != x->want_size)
            st = hs_err_set(&e2, HS_CORRUPT, "%s: %zu bytes, the root says %lld", path,
                            c->bytes.len, (long long)x->want_size);
        else
            st = ix_segment_parse(path, (const char *)c->bytes.data, c->bytes.len, &c->seg,
                                  &e2);
        hs_buf_free(&c->bytes);
    } else if (st == HS_OK && x->kind == CE_SIDECAR) {
        st = sidx_open(c->bytes.data ? c->bytes.data : (const uint8_t *)"", c->bytes.len,
                       x->field, &c->ix, &e2);
    } else if (st == HS_OK) {
        st = ix_registry_parse(path, (const char *)c->bytes.data, c->bytes.len, &c->reg, &e2);
        hs_buf_free(&c->bytes);
        if (st == HS_OK && x->location && c->reg.format_version >= 2)
            st = compose_cached(x->location, path, &c->reg, &e2);
        if (st == HS_OK)
            st = ix_registry_build_index(&c->reg, &e2);
    }
    if (st == HS_NOMEM) {
        size_t want = (size_t)c->size;
        ent_free(c);
        return hs_err_nomem(err, want);
    }
    if (st != HS_OK) {
        snprintf(x->why, x->why_cap, "%s", e2.msg);
        ent_free(c);
        return HS_OK;
    }
    *cost = c->bytes.len + ((size_t)c->reg.n_entries + (size_t)c->seg.n_entries) * 256 + 512;
    *obj = c;
    return HS_OK;
}

/* The entry for file `path` (local), loaded when needed.  *out NULL with
 * why[] set when the file is missing or unusable. */
static hs_status cache_get(int kind, const char *location, const char *path,
                           const hs_field *field, int64_t want_size,
                           cache_ent **out, tbl_fref **ref, char *why, size_t why_cap,
                           hs_error *err)
{
    *out = NULL;
    why[0] = '\0';
    int64_t key[2] = {kind, field ? (int64_t)pr_kind_of(field) : -1};
    ent_ctx ctx = {kind, location, field, want_size, why, why_cap, {0}, false};
    /* object stores: a sidecar not seen before is read whole by the
     * registry's size, which gives the cache its identity too (one GET, not
     * a tail GET to open it and then a GET of the rest); on any failure the
     * usual path runs and reports */
    if (kind == CE_SIDECAR && want_size > 0 && want_size < ((int64_t)1 << 32) &&
        hs_io_is_object_uri(path) && !hs_io_identity_cached(path) &&
        hs_buf_reserve(&ctx.pre, (size_t)want_size) == HS_OK) {
        hs_error ignored = {0};
        ctx.have_pre = hs_io_read_whole(path, ctx.pre.data, (uint64_t)want_size, &ignored) ==
                       HS_OK;
        ctx.pre.len = ctx.have_pre ? (size_t)want_size : 0;
    }
    void *obj = NULL;
    hs_status gs = tbl_fcache_get(&g_ix_cache, path, key, 2, ent_load, &ctx, &obj, ref, err);
    hs_buf_free(&ctx.pre);   /* not taken: the cache held the entry already */
    HS_TRY(gs);
    *out = obj;
    if (!obj && !why[0])
        snprintf(why, why_cap, "%s: unreadable", path);
    return HS_OK;
}

/* Sets r's entries (r parsed from a format-2 root) to the composition of
 * its segments, each taken from the cache (loaded when needed).  A segment
 * that is missing or damaged is left out with a warning: the entries of
 * the others are still good. */
static hs_status compose_cached(const char *location, const char *root_path, ix_registry *r,
                                hs_error *err)
{
    int n = r->n_segments;
    if (n == 0)
        return HS_OK;
    ix_segdata *segs = hs_calloc((size_t)n, sizeof *segs);
    tbl_fref **refs = hs_calloc((size_t)n, sizeof *refs);
    hs_status st = segs && refs ? HS_OK : hs_err_nomem(err, (size_t)n * sizeof *segs);
    hs_buf p = {0};
    int bad = 0;
    char why[1200], first[1200] = "";
    bool *own = hs_calloc((size_t)n, sizeof *own);
    if (!own && st == HS_OK)
        st = hs_err_nomem(err, (size_t)n);
    for (int i = 0; i < n && st == HS_OK; i++) {
        cache_ent *se = NULL;
        if (r->segments[i].inline_json) {
            /* carried by the root: no request (ix_segment_load reads the
             * file instead when the copy does not match the root) */
            hs_error le;
            hs_err_clear(&le);
            hs_status ls = ix_segment_load(location, &r->segments[i], &segs[i], &le);
            if (ls == HS_NOMEM)
                st = hs_err_nomem(err, 4096);
            else if (ls == HS_OK)
                own[i] = true;
            else if (bad++ == 0)
                snprintf(first, sizeof first, "%s", le.msg);
            continue;
        }
        if (ix_resolve_path(location, r->segments[i].path, &p) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        st = cache_get(CE_SEGMENT, NULL, tbl_local(hs_buf_cstr(&p)), NULL, r->segments[i].bytes,
                       &se, &refs[i], why, sizeof why, err);
        if (st == HS_OK && se)
            segs[i] = se->seg;   /* borrowed while refs[i] is held */
        else if (st == HS_OK && bad++ == 0)
            snprintf(first, sizeof first, "%s", why);
    }
    ix_segdata all = {0};
    if (st == HS_OK)
        st = ix_segments_compose(segs, n, true, &all, err);
    for (int i = 0; refs && i < n; i++)
        cache_release(refs[i]);
    for (int i = 0; own && segs && i < n; i++)
        if (own[i])
            ix_segdata_clear(&segs[i]);
    hs_free(own);
    hs_free(refs);
    hs_free(segs);
    hs_buf_free(&p);
    if (st != HS_OK)
        return st;
    if (bad)
        warn("%s: %d index registry segment(s) unusable, their sidecars are not used "
             "(first: %s)", root_path, bad, first);
    ix_registry_clear_entries(r);
    r->entries = all.entries;
    r->n_entries = all.n_entries;
    r->cap_entries = all.cap_entries;
    all.entries = NULL;
    all.n_entries = 0;
    ix_segdata_clear(&all);
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* scans: lookups                                                      */

struct tbl_ixscan {
    char *location;
    cache_ent *ent;                /* the registry version ... */
    tbl_fref *ref;                 /* ... and its cache reference */
    const ix_registry *reg;        /* &ent->reg (or &own): indexed by data file */
    ix_registry own;               /* time travel: the current registry plus the old one's
                                    * entries it lacks */
};

hs_status tbl_ixscan_open(const ice_table_metadata *m, tbl_ixscan **out, int64_t *skipped,
                          hs_error *err)
{
    *out = NULL;
    const char *rel = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    if (!rel)
        return HS_OK;
    tbl_ixscan *x = hs_calloc(1, sizeof *x);
    hs_buf p = {0};
    if (!x || ix_resolve_path(m->location, rel, &p) != HS_OK ||
        !(x->location = hs_strdup(m->location))) {
        hs_buf_free(&p);
        tbl_ixscan_free(x);
        return hs_err_nomem(err, 64);
    }
    char why[1200];
    hs_status st = cache_get(CE_REGISTRY, m->location, tbl_local(hs_buf_cstr(&p)), NULL, -1,
                             &x->ent, &x->ref, why, sizeof why, err);
    hs_buf_free(&p);
    if (st == HS_OK && !x->ent) {
        warn("%s: index registry %s: %s; indexes are not used", m->location, rel, why);
        if (skipped)
            (*skipped)++;
    }
    if (st != HS_OK || !x->ent || x->ent->reg.n_entries == 0) {
        tbl_ixscan_free(x);
        return st;
    }
    x->reg = &x->ent->reg;
    *out = x;
    return HS_OK;
}

/* Object stores: the registry (root, then its segments: two dependent
 * fetches) loaded into the cache on a background thread while the caller
 * reads the manifest list and manifests; tbl_ixscan_open then finds it (or
 * waits for the fetches in flight instead of repeating them). */
typedef struct warm_arg {
    char *location, *path;
} warm_arg;

static void warm_main(void *a)
{
    warm_arg *w = a;
    cache_ent *ent = NULL;
    tbl_fref *ref = NULL;
    char why[1200];
    hs_error e;
    hs_err_clear(&e);
    if (cache_get(CE_REGISTRY, w->location, w->path, NULL, -1, &ent, &ref, why, sizeof why,
                  &e) == HS_OK)
        cache_release(ref);   /* errors: the scan's own load reports them */
    hs_free(w->location);
    hs_free(w->path);
    hs_free(w);
}

hs_status tbl_ix_root_acquire(const ice_table_metadata *m, const ix_registry **root,
                             tbl_fref **ref, hs_error *err)
{
    *root = NULL;
    *ref = NULL;
    const char *rel = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    if (!rel || !hs_io_is_object_uri(m->location))
        return HS_OK;
    hs_buf p = {0};
    if (ix_resolve_path(m->location, rel, &p) != HS_OK)
        return hs_err_nomem(err, 256);
    cache_ent *ent = NULL;
    char why[1200];
    /* a root (CE_ROOT: parsed, its segments not read); the byte fetch the
     * registry warming started is joined by io (opens in flight) */
    hs_status st = cache_get(CE_ROOT, NULL, tbl_local(hs_buf_cstr(&p)), NULL, -1, &ent, ref,
                             why, sizeof why, err);
    hs_buf_free(&p);
    if (st == HS_OK && ent)
        *root = &ent->reg;
    return st;
}

void tbl_ix_root_release(tbl_fref *ref)
{
    cache_release(ref);
}

void tbl_ix_warm_async(const ice_table_metadata *m)
{
    const char *rel = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    if (!rel || !hs_io_is_object_uri(m->location))
        return;
    warm_arg *w = hs_calloc(1, sizeof *w);
    hs_buf p = {0};
    /* a root opened before (a warm query): its load costs no round trip, no thread */
    if (w && ix_resolve_path(m->location, rel, &p) == HS_OK &&
        !hs_io_identity_cached(hs_buf_cstr(&p)) &&
        (w->location = hs_strdup(m->location)) &&
        (w->path = hs_strdup(tbl_local(hs_buf_cstr(&p)))) && hs_io_background(warm_main, w))
        w = NULL;
    if (w) {
        hs_free(w->location);
        hs_free(w->path);
        hs_free(w);
    }
    hs_buf_free(&p);
}

/* Time travel.  The registry root that the table had while snapshot
 * `snap` was current: the property of the newest metadata-log file (from
 * the snapshot's commit on) whose current snapshot is snap.  *rel_out NULL
 * when none is found or readable (then the current registry alone serves:
 * its entries still match the files they cover). */
static hs_status root_at_snapshot(const ice_table_metadata *m, const ice_snapshot *snap,
                                  char **rel_out, hs_error *err)
{
    *rel_out = NULL;
    for (int i = 0; i < m->n_metadata_log; i++) {
        const ice_metadata_log_entry *le = &m->metadata_log[i];
        if (le->timestamp_ms < snap->timestamp_ms)
            continue;
        hs_buf text = {0};
        ice_table_metadata old = {0};
        hs_error e;
        hs_err_clear(&e);
        hs_status st = hs_io_read_all(tbl_local(le->file), &text, &e);
        if (st == HS_OK)
            st = ice_metadata_parse((const char *)text.data, text.len, &old, &e);
        hs_buf_free(&text);
        bool current = st == HS_OK && old.current_snapshot_id == snap->snapshot_id;
        const char *rel = current ? ice_kv_get(&old.properties, IX_REGISTRY_PROPERTY) : NULL;
        if (current) {
            hs_free(*rel_out);
            *rel_out = rel ? hs_strdup(rel) : NULL;
            if (rel && !*rel_out) {
                ice_metadata_free(&old);
                return hs_err_nomem(err, 64);
            }
        }
        ice_metadata_free(&old);
        if (st == HS_NOMEM)
            return hs_err_nomem(err, 64);
        if (st == HS_OK && !current && *rel_out)
            break;   /* past the versions where snap was current */
    }
    return HS_OK;
}

hs_status tbl_ixscan_open_at(const ice_table_metadata *m, const ice_snapshot *snap,
                             tbl_ixscan **out, int64_t *skipped, hs_error *err)
{
    HS_TRY(tbl_ixscan_open(m, out, skipped, err));
    const char *cur = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    if (!snap || !ice_metadata_current_snapshot(m) || snap->snapshot_id == m->current_snapshot_id)
        return HS_OK;
    char *rel = NULL;
    HS_TRY(root_at_snapshot(m, snap, &rel, err));
    if (!rel || (cur && strcmp(rel, cur) == 0)) {
        hs_free(rel);
        return HS_OK;
    }
    /* the old version, loaded quietly: a version removed since (orphan
     * removal) only means its entries are not used */
    hs_buf p = {0};
    cache_ent *old = NULL;
    tbl_fref *old_ref = NULL;
    char why[1200];
    hs_status st = ix_resolve_path(m->location, rel, &p) == HS_OK ? HS_OK
                                                                   : hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = cache_get(CE_REGISTRY, m->location, tbl_local(hs_buf_cstr(&p)), NULL, -1, &old,
                       &old_ref, why, sizeof why, err);
    hs_buf_free(&p);
    hs_free(rel);
    tbl_ixscan *x = *out;
    if (st == HS_OK && old && old->reg.n_entries > 0 && !x) {
        x = hs_calloc(1, sizeof *x);
        if (!x || !(x->location = hs_strdup(m->location))) {
            tbl_ixscan_free(x);
            x = NULL;
            st = hs_err_nomem(err, 64);
        }
    }
    if (st == HS_OK && old && old->reg.n_entries > 0) {
        /* the current registry first, then the old one's entries it lacks */
        if (x->reg)
            st = ix_registry_copy(x->reg, &x->own, err);
        for (int i = 0; st == HS_OK && i < old->reg.n_entries; i++) {
            const ix_entry *e = &old->reg.entries[i];
            if (!x->reg || !ix_registry_find_entry(x->reg, e->data_file, e->field_id, e->kind))
                st = ix_registry_append_entry(&x->own, e, err);
        }
        if (st == HS_OK)
            st = ix_registry_build_index(&x->own, err);
        if (st == HS_OK)
            x->reg = &x->own;
        *out = x;
    }
    cache_release(old_ref);
    if (st != HS_OK) {
        tbl_ixscan_free(*out);
        *out = NULL;
    }
    return st;
}

const ix_registry *tbl_ixscan_registry(const tbl_ixscan *x) { return x->reg; }

void tbl_ixscan_free(tbl_ixscan *x)
{
    if (!x)
        return;
    ix_registry_clear(&x->own);
    cache_release(x->ref);
    hs_free(x->location);
    hs_free(x);
}

/* A sidecar of the file being evaluated. */
typedef struct side {
    int entry;                     /* registry index */
    int state;                     /* 0 = not tried, 1 = open, -1 = unusable */
    cache_ent *ent;                /* while open ... */
    tbl_fref *ref;                 /* ... and its cache reference */
    const sidx_index *ix;
} side;

typedef struct ixeval {
    const tbl_ixscan *x;
    const tbl_plan_file *f;
    tbl_file_report *rep;
    side *sides;
    int n_sides;
    bool indexed;
} ixeval;

/* A candidate set: all rows (bm NULL) or a bitmap; exact = equals the matches. */
typedef struct cset {
    roaring_bitmap_t *bm;
    bool exact;
} cset;

static void note_used(tbl_file_report *rep, const ix_entry *e)
{
    char item[48];
    snprintf(item, sizeof item, "%d:%s", (int)e->field_id, e->kind);
    if (strstr(rep->used, item))
        return;
    size_t n = strlen(rep->used);
    if (n + strlen(item) + 2 < sizeof rep->used)
        snprintf(rep->used + n, sizeof rep->used - n, "%s%s", n ? "," : "", item);
}

static void side_skip(ixeval *v, side *s, const char *why)
{
    const ix_entry *e = &v->x->reg->entries[s->entry];
    hs_buf p = {0};
    const char *path = ix_resolve_path(v->x->location, e->index_file, &p) == HS_OK
                           ? hs_buf_cstr(&p) : e->index_file;
    warn("index %s of %s: %s; reading the data instead", path, v->f->path, why);
    hs_buf_free(&p);
    cache_release(s->ref);
    s->ref = NULL;
    s->ent = NULL;
    s->ix = NULL;
    s->state = -1;
    v->rep->n_skipped++;
}

/* Opens sidecar s for a leaf on field `field`; false when unusable. */
static hs_status side_open(ixeval *v, side *s, const hs_field *field, bool *ok, hs_error *err)
{
    *ok = false;
    if (s->state != 0) {
        *ok = s->state == 1;
        return HS_OK;
    }
    const ix_entry *e = &v->x->reg->entries[s->entry];
    if (e->data_file_size != v->f->file_size) {
        side_skip(v, s, "stale (the data file's size differs from the registry's)");
        return HS_OK;
    }
    hs_buf p = {0};
    if (ix_resolve_path(v->x->location, e->index_file, &p) != HS_OK)
        return hs_err_nomem(err, 256);
    char why[1200];
    hs_status st = cache_get(CE_SIDECAR, NULL, tbl_local(hs_buf_cstr(&p)), field,
                             e->index_file_size, &s->ent, &s->ref, why, sizeof why, err);
    hs_buf_free(&p);
    HS_TRY(st);
    if (!s->ent) {
        side_skip(v, s, why);
        return HS_OK;
    }
    if (s->ent->size != e->index_file_size) {
        snprintf(why, sizeof why, "size %lld differs from the registry's %lld",
                 (long long)s->ent->size, (long long)e->index_file_size);
        side_skip(v, s, why);
        return HS_OK;
    }
    s->ix = s->ent->ix;
    sidx_info info;
    sidx_get_info(s->ix, &info);
    if (info.n_rows != v->f->record_count || info.data_file_size != v->f->file_size) {
        side_skip(v, s, "it describes a different data file (row count or size)");
        return HS_OK;
    }
    s->state = 1;
    *ok = true;
    return HS_OK;
}

/* Lookup of one leaf: *got = false when no sidecar answered. */
static hs_status leaf_lookup(ixeval *v, const pr_expr *leaf, roaring_bitmap_t **out, bool *got,
                             hs_error *err)
{
    *got = false;
    *out = NULL;
    for (int i = 0; i < v->n_sides; i++) {
        side *s = &v->sides[i];
        const ix_entry *e = &v->x->reg->entries[s->entry];
        if (e->field_id != leaf->field_id || !scalar_handles(e->kind))
            continue;
        bool ok;
        HS_TRY(side_open(v, s, leaf->field, &ok, err));
        if (!ok)
            continue;
        hs_error e2;
        hs_err_clear(&e2);
        v->rep->n_lookups++;
        hs_status st = sidx_lookup(s->ix, leaf, out, &e2);
        if (st == HS_OK) {
            *got = true;
            v->indexed = true;
            note_used(v->rep, e);
            return HS_OK;
        }
        if (st == HS_UNSUPPORTED)
            return HS_OK;   /* this leaf cannot be answered by an index */
        if (st == HS_NOMEM)
            return hs_err_nomem(err, 64);
        side_skip(v, s, e2.msg);
    }
    return HS_OK;
}

/* Lookup of several leaves on one column as one AND (sidx_lookup_all):
 * *got = false when no sidecar answered (the caller then tries them one by
 * one). */
static hs_status group_lookup(ixeval *v, const pr_expr *const *leaves, int n,
                              roaring_bitmap_t **out, bool *got, hs_error *err)
{
    *got = false;
    *out = NULL;
    for (int i = 0; i < v->n_sides; i++) {
        side *s = &v->sides[i];
        const ix_entry *e = &v->x->reg->entries[s->entry];
        if (e->field_id != leaves[0]->field_id || !scalar_handles(e->kind))
            continue;
        bool ok;
        HS_TRY(side_open(v, s, leaves[0]->field, &ok, err));
        if (!ok)
            continue;
        hs_error e2;
        hs_err_clear(&e2);
        hs_status st = sidx_lookup_all(s->ix, leaves, n, out, &e2);
        if (st == HS_OK) {
            v->rep->n_lookups++;
            *got = true;
            v->indexed = true;
            note_used(v->rep, e);
            return HS_OK;
        }
        if (st == HS_UNSUPPORTED)
            return HS_OK;   /* leaf by leaf, then */
        if (st == HS_NOMEM)
            return hs_err_nomem(err, 64);
        side_skip(v, s, e2.msg);
    }
    return HS_OK;
}

static bool index_leaf(const pr_expr *e)
{
    return e->field && (e->kind == PR_E_CMP || e->kind == PR_E_IN || e->kind == PR_E_NOT_IN ||
                        e->kind == PR_E_IS_NULL || e->kind == PR_E_NOT_NULL);
}

/* The disjuncts of an OR when every one (nested ORs flattened) is a leaf
 * on column field_id; else false. */
static bool or_of_leaves(const pr_expr *e, int32_t field_id, hs_buf *out, bool *nomem)
{
    if (e->kind == PR_E_OR)
        return or_of_leaves(e->l, field_id, out, nomem) && or_of_leaves(e->r, field_id, out, nomem);
    if (!index_leaf(e) || e->field_id != field_id)
        return false;
    if (HS_VEC_PUSH(out, const pr_expr *, e) != HS_OK) {
        *nomem = true;
        return false;
    }
    return true;
}

/* (d1 OR d2 ...) AND g1 AND g2 ..., all leaves on one column: the union of
 * sidx_lookup_all(di, g...) (a NaN-aware `x >= a`, which the simple filter
 * writes as `x >= a OR x IN (nan)`, stays a span).  *got = false when some
 * lookup was not answered (nothing is returned then). */
static hs_status or_group_lookup(ixeval *v, const pr_expr *const *dis, int n_dis,
                                 const pr_expr *const *g, int n_g, roaring_bitmap_t **out,
                                 bool *got, hs_error *err)
{
    *out = NULL;
    *got = false;
    const pr_expr **leaves = hs_calloc((size_t)n_g + 2, sizeof *leaves);
    if (!leaves)
        return hs_err_nomem(err, 64);
    memcpy(leaves + 1, g, sizeof *leaves * (size_t)n_g);
    roaring_bitmap_t *acc = NULL;
    hs_status st = HS_OK;
    bool ok = true;
    for (int k = 0; k < n_dis && ok && st == HS_OK; k++) {
        roaring_bitmap_t *bm = NULL;
        leaves[0] = dis[k];
        st = group_lookup(v, leaves, n_g + 1, &bm, &ok, err);
        if (st == HS_OK && ok) {
            if (!acc) {
                acc = bm;
            } else {
                roaring_bitmap_or_inplace(acc, bm);
                tbl_bitmap_free(bm);
            }
        }
    }
    hs_free(leaves);
    if (st != HS_OK || !ok) {
        tbl_bitmap_free(acc);
        return st;
    }
    *out = acc;
    *got = true;
    return HS_OK;
}

/* The operands of an AND, nested ANDs flattened, in order. */
static hs_status and_operands(const pr_expr *e, hs_buf *out)
{
    if (e->kind == PR_E_AND) {
        HS_TRY(and_operands(e->l, out));
        return and_operands(e->r, out);
    }
    return HS_VEC_PUSH(out, const pr_expr *, e);
}

static hs_status eval_node(ixeval *v, const pr_expr *e, cset *out, hs_error *err);

/* An AND: the leaves on one column together (group_lookup), the rest one
 * by one, intersected in order until the set is empty. */
static hs_status eval_and(ixeval *v, const pr_expr *e, cset *out, hs_error *err)
{
    hs_buf ops = {0}, grp = {0}, dis = {0};
    if (and_operands(e, &ops) != HS_OK) {
        hs_buf_free(&ops);
        return hs_err_nomem(err, 64);
    }
    size_t n = HS_VEC_LEN(&ops, const pr_expr *);
    const pr_expr **op = (const pr_expr **)ops.data;
    /* leaves first, so that an OR on a leaf's column (anywhere) joins its group */
    size_t nl = 0;
    for (size_t i = 0; i < n; i++)
        if (index_leaf(op[i])) {
            const pr_expr *t = op[i];
            memmove(op + nl + 1, op + nl, (i - nl) * sizeof *op);
            op[nl++] = t;
        }
    uint8_t *done = hs_calloc(n + 1, 1);
    hs_status st = done ? HS_OK : hs_err_nomem(err, n);
    cset acc = {NULL, true};
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        if (done[i])
            continue;
        if (acc.bm && roaring_bitmap_is_empty(acc.bm))
            break;   /* nothing can match */
        cset part = {NULL, false};
        bool have = false;
        if (index_leaf(op[i])) {
            hs_buf_reset(&grp);
            for (size_t j = i; j < nl && st == HS_OK; j++)
                if (!done[j] && index_leaf(op[j]) && op[j]->field_id == op[i]->field_id &&
                    HS_VEC_PUSH(&grp, const pr_expr *, op[j]) != HS_OK)
                    st = hs_err_nomem(err, 64);
            int ng = (int)HS_VEC_LEN(&grp, const pr_expr *);
            /* an OR of leaves on the same column among the operands */
            for (size_t j = nl; j < n && st == HS_OK && !have && ng >= 1; j++) {
                if (done[j] || op[j]->kind != PR_E_OR)
                    continue;
                bool nomem = false;
                hs_buf_reset(&dis);
                if (!or_of_leaves(op[j], op[i]->field_id, &dis, &nomem)) {
                    if (nomem)
                        st = hs_err_nomem(err, 64);
                    continue;
                }
                st = or_group_lookup(v, (const pr_expr *const *)dis.data,
                                     (int)HS_VEC_LEN(&dis, const pr_expr *),
                                     (const pr_expr *const *)grp.data, ng, &part.bm, &have, err);
                if (st == HS_OK && have) {
                    part.exact = true;
                    done[j] = 1;
                    for (size_t q = i; q < nl; q++)
                        if (index_leaf(op[q]) && op[q]->field_id == op[i]->field_id)
                            done[q] = 1;
                }
            }
            if (st == HS_OK && !have && ng >= 2) {
                st = group_lookup(v, (const pr_expr *const *)grp.data, ng, &part.bm, &have, err);
                if (st == HS_OK && have) {
                    part.exact = true;
                    for (size_t j = i; j < nl; j++)
                        if (index_leaf(op[j]) && op[j]->field_id == op[i]->field_id)
                            done[j] = 1;
                }
            }
        }
        if (st == HS_OK && !have) {
            st = eval_node(v, op[i], &part, err);
            done[i] = 1;
        }
        if (st != HS_OK)
            break;
        acc.exact = acc.exact && part.exact;
        if (!part.bm) {
            /* all rows: the set stays */
        } else if (!acc.bm) {
            acc.bm = part.bm;
        } else {
            roaring_bitmap_and_inplace(acc.bm, part.bm);
            tbl_bitmap_free(part.bm);
        }
    }
    hs_buf_free(&ops);
    hs_buf_free(&grp);
    hs_buf_free(&dis);
    hs_free(done);
    if (st != HS_OK) {
        tbl_bitmap_free(acc.bm);
        return st;
    }
    if (acc.bm && roaring_bitmap_is_empty(acc.bm))
        acc.exact = true;
    *out = acc;
    return HS_OK;
}

static hs_status eval_node(ixeval *v, const pr_expr *e, cset *out, hs_error *err)
{
    out->bm = NULL;
    out->exact = false;
    switch (e->kind) {
    case PR_E_TRUE:
        out->exact = true;
        return HS_OK;
    case PR_E_FALSE:
        out->exact = true;
        out->bm = roaring_bitmap_create();
        return out->bm ? HS_OK : hs_err_nomem(err, 64);
    case PR_E_AND:
        return eval_and(v, e, out, err);
    case PR_E_OR: {
        cset l, r;
        HS_TRY(eval_node(v, e->l, &l, err));
        if (e->kind == PR_E_AND && l.bm && roaring_bitmap_is_empty(l.bm)) {
            *out = l;   /* nothing can match: exact */
            out->exact = true;
            return HS_OK;
        }
        hs_status st = eval_node(v, e->r, &r, err);
        if (st != HS_OK) {
            tbl_bitmap_free(l.bm);
            return st;
        }
        out->exact = l.exact && r.exact;
        if (e->kind == PR_E_AND) {
            if (!l.bm || !r.bm) {
                out->bm = l.bm ? l.bm : r.bm;
            } else {
                roaring_bitmap_and_inplace(l.bm, r.bm);
                tbl_bitmap_free(r.bm);
                out->bm = l.bm;
            }
            if (out->bm && roaring_bitmap_is_empty(out->bm))
                out->exact = true;
        } else {
            if (!l.bm || !r.bm) {
                /* all rows on one side: the union is all rows */
                tbl_bitmap_free(l.bm);
                tbl_bitmap_free(r.bm);
                out->bm = NULL;
                out->exact = (!l.bm && l.exact) || (!r.bm && r.exact);
            } else {
                roaring_bitmap_or_inplace(l.bm, r.bm);
                tbl_bitmap_free(r.bm);
                out->bm = l.bm;
            }
        }
        return HS_OK;
    }
    case PR_E_CMP:
    case PR_E_IN:
    case PR_E_NOT_IN:
    case PR_E_IS_NULL:
    case PR_E_NOT_NULL: {
        if (!e->field)
            return HS_OK;
        bool got;
        HS_TRY(leaf_lookup(v, e, &out->bm, &got, err));
        out->exact = got;
        return HS_OK;
    }
    default:
        return HS_OK;   /* unknown: all rows */
    }
}

hs_status tbl_ixscan_file(const tbl_ixscan *x, const tbl_plan_file *f, const pr_filter *filter,
                          roaring_bitmap_t **cand, bool *exact, tbl_file_report *rep,
                          hs_error *err)
{
    *cand = NULL;
    *exact = false;
    if (!x || !filter || pr_filter_is_true(filter))
        return HS_OK;
    int first = ix_registry_first(x->reg, f->path);
    if (first < 0)
        return HS_OK;
    ixeval v = {x, f, rep, NULL, 0, false};
    int n = 0;
    for (int i = first; i >= 0; i = ix_registry_next(x->reg, i))
        n++;
    v.sides = hs_calloc((size_t)n, sizeof *v.sides);
    if (!v.sides)
        return hs_err_nomem(err, (size_t)n * sizeof *v.sides);
    for (int i = first; i >= 0; i = ix_registry_next(x->reg, i))
        v.sides[v.n_sides++].entry = i;
    cset r = {0};
    hs_status st = eval_node(&v, filter->root, &r, err);
    for (int i = 0; i < v.n_sides; i++)
        cache_release(v.sides[i].ref);
    hs_free(v.sides);
    if (st != HS_OK)
        return st;
    if (!v.indexed || !r.bm) {
        tbl_bitmap_free(r.bm);
        return HS_OK;
    }
    rep->indexed = true;
    rep->index_exact = r.exact;
    rep->candidates = (int64_t)roaring_bitmap_get_cardinality(r.bm);
    *cand = r.bm;
    *exact = r.exact;
    return HS_OK;
}

static bool filter_has_field(const pr_expr *e, int32_t field_id)
{
    if (!e)
        return false;
    if (e->kind == PR_E_AND || e->kind == PR_E_OR || e->kind == PR_E_NOT)
        return filter_has_field(e->l, field_id) || filter_has_field(e->r, field_id);
    return e->field && e->field_id == field_id;
}

/* The warming of tbl_ixscan_warm, on a background thread once the process
 * is idle: uris (char *: manifests, footers, sidecars) fetched, then the
 * pages of `ids` of `files` (char *). */
typedef struct warm_job {
    hs_buf uris, files;
    int32_t *ids;
    int n_ids;
} warm_job;

static void warm_job_free(warm_job *j)
{
    if (!j)
        return;
    free_strs(&j->uris);
    free_strs(&j->files);
    hs_free(j->ids);
    hs_free(j);
}

static void warm_next_main(void *arg)
{
    warm_job *j = arg;
    size_t nu = j->uris.len / sizeof(char *), nf = j->files.len / sizeof(char *);
    if (tbl_plan_wait_idle()) {
        if (nu)   /* copies the names; skips objects opened before */
            hs_io_prefetch_async((const char *const *)(void *)j->uris.data, nu);
        if (nf && j->n_ids > 0)   /* each file's thread waits for its footer's fetch */
            tbl_plan_warm_pages((const char *const *)(void *)j->files.data, (int)nf, j->ids,
                                j->n_ids);
    }
    warm_job_free(j);
}

static void push_dup(hs_buf *v, const char *s)
{
    char *u = hs_strdup(s);
    if (u && hs_buf_append(v, &u, sizeof u) != HS_OK)
        hs_free(u);
}

void tbl_ixscan_warm(const tbl_ixscan *x, const tbl_plan *plan, const pr_filter *filter,
                     const int32_t *page_ids, int n_page_ids)
{
    int64_t cap = hs_cfg_get(HS_CFG_WARM_FILES);
    if (!filter || pr_filter_is_true(filter) || plan->stats.data_files_total > cap ||
        plan->n_files == 0 || !hs_io_is_object_uri(plan->files[0].path))
        return;   /* nothing to warm for, or a snapshot too large to keep warm */
    hs_buf files = {0}, uris = {0}, p = {0};   /* char * (hs_strdup'd) */
    /* the data files: those the plan read or pruned, and those of skipped
     * manifests as the registry lists them (each once) */
    hs_map seen = {0};
    for (int src = 0; src < 3; src++) {
        int n = src == 0 ? plan->n_files : src == 1 ? plan->n_pruned
                : x && x->reg ? x->reg->n_entries : 0;
        for (int i = 0; i < n && (int64_t)HS_VEC_LEN(&files, char *) < cap; i++) {
            const char *f = src == 0 ? plan->files[i].path : src == 1 ? plan->pruned[i]
                            : x->reg->entries[i].data_file;
            if (hs_map_get(&seen, f, strlen(f), NULL) || hs_map_put(&seen, f, strlen(f), 1) != HS_OK)
                continue;
            push_dup(&files, f);
        }
    }
    hs_map_free(&seen);
    char **fa = (char **)(void *)files.data;
    size_t nf = files.len / sizeof(char *);
    for (int k = 0; k < plan->n_skipped; k++)
        push_dup(&uris, plan->skipped[k]);
    for (size_t k = 0; k < nf; k++) {
        push_dup(&uris, fa[k]);   /* its footer (the object's tail) */
        for (int i = x && x->reg ? ix_registry_first(x->reg, fa[k]) : -1; i >= 0;
             i = ix_registry_next(x->reg, i)) {
            const ix_entry *e = &x->reg->entries[i];
            if (!scalar_handles(e->kind) || !filter_has_field(filter->root, e->field_id))
                continue;
            hs_buf_reset(&p);
            if (ix_resolve_path(x->location, e->index_file, &p) == HS_OK)
                push_dup(&uris, hs_buf_cstr(&p));
        }
    }
    hs_buf_free(&p);
    warm_job *j = hs_calloc(1, sizeof *j);
    if (j && n_page_ids > 0 && (j->ids = hs_malloc((size_t)n_page_ids * sizeof *j->ids))) {
        memcpy(j->ids, page_ids, (size_t)n_page_ids * sizeof *j->ids);
        j->n_ids = n_page_ids;
    }
    if (j) {
        j->uris = uris;
        j->files = files;
        if (hs_io_background(warm_next_main, j))
            return;
    }
    if (j) {
        warm_job_free(j);   /* frees uris and files */
    } else {
        free_strs(&uris);
        free_strs(&files);
    }
}

/* ------------------------------------------------------------------ */
/* writes                                                              */

typedef struct tbl_ixw_file {
    char *path;
    int64_t size;
    int64_t record_count;
} tbl_ixw_file;

void tbl_ixw_init(tbl_ixw *w, hs_table *t)
{
    memset(w, 0, sizeof *w);
    w->t = t;
}

static hs_status ixw_load(tbl_ixw *w, hs_error *err)
{
    if (w->loaded)
        return HS_OK;
    w->loaded = true;
    const char *rel = ice_kv_get(&w->t->meta.properties, IX_REGISTRY_PROPERTY);
    if (!rel)
        return HS_OK;
    ix_registry *reg = hs_calloc(1, sizeof *reg);
    w->loaded_rel = hs_strdup(rel);
    if (!reg || !w->loaded_rel) {
        hs_free(reg);
        return hs_err_nomem(err, 64);
    }
    w->reg = reg;
    return load_root_of(&w->t->meta, reg, err);   /* the declarations: no segment is read */
}

static bool ixw_has_entry(const tbl_ixw *w, const char *path, int32_t fid, const char *kind)
{
    for (size_t i = 0; i < HS_VEC_LEN(&w->entries, ix_entry); i++) {
        const ix_entry *e = &HS_VEC_AT(&w->entries, ix_entry, i);
        if (e->field_id == fid && strcmp(e->data_file, path) == 0 && strcmp(e->kind, kind) == 0)
            return true;
    }
    return false;
}

static hs_status ixw_push_entry(tbl_ixw *w, ix_entry *e, hs_error *err)
{
    char *side = hs_strdup(e->index_file);
    if (!side || HS_VEC_PUSH(&w->sidecars, char *, side) != HS_OK) {
        hs_free(side);
        remove_local(w->t->meta.location, e->index_file);
        entry_free_strings(e);
        return hs_err_nomem(err, 64);
    }
    if (hs_buf_append(&w->entries, e, sizeof *e) != HS_OK) {
        entry_free_strings(e);
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

hs_status tbl_ixw_file_written(tbl_ixw *w, const char *path, int64_t size, int64_t n_rows,
                               const hs_batch *b, hs_error *err)
{
    HS_TRY(ixw_load(w, err));
    tbl_ixw_file f = {hs_strdup(path), size, n_rows};
    if (!f.path || hs_buf_append(&w->files, &f, sizeof f) != HS_OK) {
        hs_free(f.path);
        return hs_err_nomem(err, 64);
    }
    const ix_registry *reg = w->reg;
    if (!reg || reg->n_decls == 0)
        return HS_OK;
    const ice_schema *sc = ice_metadata_current_schema(&w->t->meta);
    for (int i = 0; sc && i < reg->n_decls; i++) {
        const ix_decl *d = &reg->decls[i];
        const hs_field *field = ice_schema_find_id(sc, d->field_id);
        if (!field || !tbl_ixkind_find(d->kind))
            continue;   /* column dropped, or a kind this build cannot make */
        /* from the rows in memory, or else from the file just written,
         * read back one column a batch at a time (build_from_file: the
         * builder keeps what the index needs, the column is not held) */
        const hs_field *top = b ? NULL : top_of(sc, d->field_id);
        if (!b && !top)
            continue;
        build_req q = {w->t->meta.location, wflags_of(&w->t->meta), d, field, top, path, size,
                       n_rows, NULL, sc};
        ix_entry e;
        HS_TRY(b ? build_from_batch(&q, b, &e, err) : build_from_file(&q, &e, err));
        HS_TRY(ixw_push_entry(w, &e, err));
    }
    return HS_OK;
}

hs_status tbl_ixw_file_removed(tbl_ixw *w, const char *path, hs_error *err)
{
    char *p = hs_strdup(path);
    if (!p || HS_VEC_PUSH(&w->removed, char *, p) != HS_OK) {
        hs_free(p);
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

hs_status tbl_ixw_apply(tbl_ixw *w, const ice_table_metadata *base, ice_table_metadata *nm,
                        hs_error *err)
{
    remove_listed(base->location, &w->prev_registry);
    const char *rel = ice_kv_get(&base->properties, IX_REGISTRY_PROPERTY);
    if (!rel)
        return HS_OK;   /* no registry: nothing to record */
    /* the base's root only: declarations and segments (an append costs the
     * same however many files the registry covers) */
    ix_registry reg = {0};
    hs_status st;
    if (w->reg && w->loaded_rel && strcmp(w->loaded_rel, rel) == 0)
        st = ix_registry_copy(w->reg, &reg, err);
    else
        st = load_root_of(base, &reg, err);
    HS_TRY(st);
    /* indexes declared since the write began: build them from our files */
    const ice_schema *sc = ice_metadata_current_schema(base);
    for (int i = 0; st == HS_OK && sc && i < reg.n_decls; i++) {
        const ix_decl *d = &reg.decls[i];
        const hs_field *field = ice_schema_find_id(sc, d->field_id);
        const hs_field *top = top_of(sc, d->field_id);
        if (!field || !top || !tbl_ixkind_find(d->kind))
            continue;
        for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&w->files, tbl_ixw_file); k++) {
            const tbl_ixw_file *f = &HS_VEC_AT(&w->files, tbl_ixw_file, k);
            if (ixw_has_entry(w, f->path, d->field_id, d->kind))
                continue;
            build_req q = {base->location, wflags_of(base), d, field, top, f->path, f->size,
                           f->record_count, NULL, sc};
            ix_entry e;
            st = build_from_file(&q, &e, err);
            if (st == HS_OK)
                st = ixw_push_entry(w, &e, err);
        }
    }
    /* one segment: tombstones for the removed files, our entries of
     * indexes still declared */
    hs_buf add = {0};
    for (size_t i = 0; st == HS_OK && i < HS_VEC_LEN(&w->entries, ix_entry); i++) {
        const ix_entry *e = &HS_VEC_AT(&w->entries, ix_entry, i);
        if (ix_registry_find_decl(&reg, e->field_id, e->kind) < 0)
            continue;   /* dropped meanwhile */
        if (hs_buf_append(&add, e, sizeof *e) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    int n_add = (int)HS_VEC_LEN(&add, ix_entry);
    int n_removed = (int)HS_VEC_LEN(&w->removed, char *);
    if (reg.n_segments == 0 && reg.n_entries == 0)
        n_removed = 0;   /* nothing listed yet: no tombstones needed */
    char *nrel = NULL;
    if (st == HS_OK && (n_add > 0 || n_removed > 0))
        st = set_msums(&reg, nm, false, err);
    if (st == HS_OK && (n_add > 0 || n_removed > 0))
        st = ix_registry_write_delta(base->location, &reg, (const ix_entry *)add.data, n_add,
                                     (const char *const *)w->removed.data, n_removed,
                                     wflags_of(base), &nrel, &w->prev_registry, err);
    if (st == HS_OK && nrel)
        st = ice_metadata_set_property(nm, IX_REGISTRY_PROPERTY, nrel, err);
    hs_free(nrel);
    hs_buf_free(&add);
    ix_registry_clear(&reg);
    return st;
}

void tbl_ixw_abort(tbl_ixw *w)
{
    if (!w->t)
        return;
    const char *loc = w->t->meta.location;
    for (size_t i = 0; i < HS_VEC_LEN(&w->sidecars, char *); i++)
        remove_local(loc, HS_VEC_AT(&w->sidecars, char *, i));
    remove_listed(loc, &w->prev_registry);
    free_strs(&w->sidecars);
}

void tbl_ixw_free(tbl_ixw *w)
{
    for (size_t i = 0; i < HS_VEC_LEN(&w->files, tbl_ixw_file); i++)
        hs_free(HS_VEC_AT(&w->files, tbl_ixw_file, i).path);
    hs_buf_free(&w->files);
    free_strs(&w->removed);
    free_entries(&w->entries);
    free_strs(&w->sidecars);
    remove_listed(NULL, &w->prev_registry);
    hs_free(w->loaded_rel);
    if (w->reg) {
        ix_registry_clear(w->reg);
        hs_free(w->reg);
    }
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------------ */
/* explain                                                             */

static hs_status fmt_val(const pr_val *v, hs_buf *b)
{
    switch (v->kind) {
    case PR_V_I64:
        return hs_buf_printf(b, "%lld", (long long)v->i);
    case PR_V_F64:
        return hs_buf_printf(b, "%.17g", v->f);
    case PR_V_I128: {
        __int128 x = v->d;
        bool neg = x < 0;
        unsigned __int128 u = neg ? -(unsigned __int128)x : (unsigned __int128)x;
        char digits[64];
        int n = 0;
        do {
            digits[n++] = (char)('0' + (int)(u % 10));
            u /= 10;
        } while (u && n < 60);
        while (n <= v->scale && n < 60)
            digits[n++] = '0';
        HS_TRY(hs_buf_puts(b, neg ? "-" : ""));
        for (int i = n - 1; i >= 0; i--) {
            HS_TRY(hs_buf_append_byte(b, (uint8_t)digits[i]));
            if (i == v->scale && i > 0)
                HS_TRY(hs_buf_append_byte(b, '.'));
        }
        return HS_OK;
    }
    case PR_V_BYTES: {
        HS_TRY(hs_buf_append_byte(b, '\''));
        for (size_t i = 0; i < v->n; i++) {
            uint8_t c = v->p[i];
            if (c == '\'')
                HS_TRY(hs_buf_puts(b, "''"));
            else if (c < 0x20 || c == 0x7f)
                HS_TRY(hs_buf_printf(b, "\\x%02x", c));
            else
                HS_TRY(hs_buf_append_byte(b, c));
        }
        return hs_buf_append_byte(b, '\'');
    }
    default:
        return hs_buf_puts(b, "NULL");
    }
}

static hs_status fmt_expr(const pr_expr *e, hs_buf *b)
{
    static const char *const ops[] = {"=", "<>", "<", "<=", ">", ">="};
    switch (e->kind) {
    case PR_E_TRUE: return hs_buf_puts(b, "TRUE");
    case PR_E_FALSE: return hs_buf_puts(b, "FALSE");
    case PR_E_AND:
    case PR_E_OR:
        HS_TRY(hs_buf_puts(b, "("));
        HS_TRY(fmt_expr(e->l, b));
        HS_TRY(hs_buf_puts(b, e->kind == PR_E_AND ? " AND " : " OR "));
        HS_TRY(fmt_expr(e->r, b));
        return hs_buf_puts(b, ")");
    default:
        break;
    }
    const char *name = e->column ? e->column : e->field ? e->field->name : "?";
    HS_TRY(hs_buf_puts(b, name));
    if (e->kind == PR_E_IS_NULL)
        return hs_buf_puts(b, " IS NULL");
    if (e->kind == PR_E_NOT_NULL)
        return hs_buf_puts(b, " IS NOT NULL");
    if (e->kind == PR_E_CMP && e->vals && e->n_lits >= 1) {
        HS_TRY(hs_buf_printf(b, " %s ", ops[e->op <= PR_GE ? e->op : 0]));
        return fmt_val(&e->vals[0], b);
    }
    if ((e->kind == PR_E_IN || e->kind == PR_E_NOT_IN) && e->vals) {
        HS_TRY(hs_buf_puts(b, e->kind == PR_E_IN ? " IN (" : " NOT IN ("));
        for (int i = 0; i < e->n_lits; i++) {
            if (i)
                HS_TRY(hs_buf_puts(b, ", "));
            HS_TRY(fmt_val(&e->vals[i], b));
        }
        return hs_buf_puts(b, ")");
    }
    return hs_buf_puts(b, " ?");
}

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

hs_status hs_table_explain(hs_table *t, const hs_scan_options *opt, char **out, hs_error *err)
{
    *out = NULL;
    hs_scan *s = NULL;
    HS_TRY(hs_scan_plan(t, opt, &s, err));
    hs_status st = tbl_scan_keep_reports(s, err);
    if (st == HS_OK)
        st = tbl_scan_drain(s, err);
    const tbl_plan *p = tbl_scan_get_plan(s);
    char *exact_text = NULL;
    hs_buf implied = {0};
    if (st == HS_OK)
        st = tbl_pred_format(&p->pred, &exact_text, err);
    if (st == HS_OK && fmt_expr(p->pred.filter->root, &implied) != HS_OK)
        st = hs_err_nomem(err, 64);
    json_t *root = st == HS_OK ? json_object() : NULL;
    if (st == HS_OK && !root)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK) {
        hs_scan_stats ss = HS_SCAN_STATS_INIT;
        hs_index_stats is = HS_INDEX_STATS_INIT;
        hs_scan_get_stats(s, &ss);
        hs_scan_get_index_stats(s, &is);
        json_t *files = json_array();
        const tbl_file_report *reps = tbl_scan_reports(s);
        for (int i = 0; files && reps && i < p->n_files; i++) {
            const tbl_file_report *r = &reps[i];
            const tbl_plan_file *f = &p->files[i];
            json_t *used = json_array();
            char tmp[sizeof r->used];
            memcpy(tmp, r->used, sizeof tmp);
            for (char *tok = strtok(tmp, ","); used && tok; tok = strtok(NULL, ","))
                json_array_append_new(used, json_string(tok));
            const char *pruned = r->pruned_by_index ? "index" : r->pruned_by_stats ? "statistics"
                                                                                   : NULL;
            json_t *o = json_pack(
                "{s:s, s:I, s:I, s:I, s:o, s:b, s:o, s:o, s:I, s:b, s:o, s:I, s:I, s:I, s:I, "
                "s:I, s:I, s:I}",
                "file", f->path, "record_count", (json_int_t)f->record_count, "file_size",
                (json_int_t)f->file_size, "delete_files", (json_int_t)f->n_deletes, "indexes_used",
                used ? used : json_array(), "index_exact", r->index_exact, "candidates",
                r->candidates >= 0 ? json_integer(r->candidates) : json_null(), "pruned_by",
                jstr(pruned), "sidecars_skipped", (json_int_t)r->n_skipped, "two_phase",
                r->two_phase, "second_phase",
                r->two_phase ? json_string(r->sparse_second ? "sparse" : "dense") : json_null(),
                "index_lookups", (json_int_t)r->n_lookups, "row_groups_read",
                (json_int_t)r->pq.row_groups_read, "row_groups_skipped",
                (json_int_t)r->pq.row_groups_skipped, "pages_decoded",
                (json_int_t)r->pq.pages_decoded, "pages_skipped", (json_int_t)r->pq.pages_skipped,
                "rows_decoded", (json_int_t)r->rows_decoded, "rows_matched",
                (json_int_t)r->rows_matched);
            if (!o || json_array_append_new(files, o) != 0)
                st = hs_err_nomem(err, 64);
        }
        const tbl_plan *pl = tbl_scan_get_plan(s);
        json_t *planning = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "manifests_total",
            (json_int_t)ss.manifests_total, "manifests_pruned", (json_int_t)ss.manifests_pruned,
            "data_files_total", (json_int_t)ss.data_files_total, "data_files_pruned",
            (json_int_t)ss.data_files_pruned, "delete_files", (json_int_t)ss.delete_files,
            "eq_delete_pairs_applied", (json_int_t)(pl ? pl->eq_pairs_applied : 0),
            "eq_delete_pairs_pruned", (json_int_t)(pl ? pl->eq_pairs_pruned : 0));
        json_t *totals = json_pack(
            "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "files_planned",
            (json_int_t)is.files_planned, "files_pruned_by_index",
            (json_int_t)is.files_pruned_by_index, "files_indexed", (json_int_t)is.files_indexed,
            "index_lookups", (json_int_t)is.index_lookups, "index_files_skipped",
            (json_int_t)is.index_files_skipped, "row_groups_read", (json_int_t)is.row_groups_read,
            "row_groups_skipped", (json_int_t)is.row_groups_skipped, "pages_decoded",
            (json_int_t)is.pages_decoded, "pages_skipped", (json_int_t)is.pages_skipped,
            "rows_decoded", (json_int_t)is.rows_decoded, "rows_selected_by_index",
            (json_int_t)is.rows_selected_by_index, "rows_emitted", (json_int_t)is.rows_emitted,
            "rows_deleted", (json_int_t)ss.rows_deleted);
        const ice_snapshot *snap = p->snap;
        if (!files || !planning || !totals ||
            json_object_set_new(root, "filter", json_string(exact_text)) ||
            json_object_set_new(root, "implied_filter", json_string(hs_buf_cstr(&implied))) ||
            json_object_set_new(root, "implied_filter_exact", json_boolean(p->pred.exact)) ||
            json_object_set_new(root, "snapshot_id",
                                snap ? json_integer(snap->snapshot_id) : json_null()) ||
            json_object_set_new(root, "totals", totals) ||
            json_object_set_new(root, "planning", planning) ||
            json_object_set_new(root, "files", files))
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK) {
        char *txt = hs_json_dumps(root, JSON_COMPACT);
        *out = txt ? hs_strdup(txt) : NULL;
        free(txt);
        if (!*out)
            st = hs_err_nomem(err, 64);
    }
    json_decref(root);
    hs_free(exact_text);
    hs_buf_free(&implied);
    hs_scan_free(s);
    return st;
}

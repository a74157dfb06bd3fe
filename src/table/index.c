/*
 * table/index.c - sidecar indexes of a table (hyperstream/index.h): the
 * registry commits and the operations on declared indexes (add_index,
 * refresh_indexes, drop_index, list, orphan removal) and on the sidecars of
 * the files each write produces (tbl_ixw_*).  Building sidecars is
 * index_build.c, reading them for scans index_scan.c (index_int.h).
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
 */
#include "table/index_int.h"

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

void tbl_ix_warn(const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    hs_warn("%s", msg);
}

void tbl_ix_entry_free_strings(ix_entry *e)
{
    hs_free(e->data_file);
    hs_free(e->kind);
    hs_free(e->index_file);
    hs_free(e->cluster);
    memset(e, 0, sizeof *e);
}

void tbl_ix_remove_local(const char *location, const char *rel)
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
            tbl_ix_remove_local(location, HS_VEC_AT(rels, char *, i));
        hs_free(HS_VEC_AT(rels, char *, i));
    }
    hs_buf_free(rels);
}

/* The root of the registry of metadata m (declarations and segments, no
 * segment read); unreadable is treated as load_registry_of does (*reset,
 * may be NULL, says so: reg is then empty). */
static hs_status load_root_ex(const ice_table_metadata *m, ix_registry *reg, bool *reset,
                              hs_error *err)
{
    const char *rel = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    hs_error e;
    hs_err_clear(&e);
    if (reset)
        *reset = false;
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
        tbl_ix_warn("%s: %s; starting a new index registry", m->location, e.msg);
        memset(reg, 0, sizeof *reg);
        if (reset)
            *reset = true;
    }
    return HS_OK;
}

static hs_status load_root_of(const ice_table_metadata *m, ix_registry *reg, hs_error *err)
{
    return load_root_ex(m, reg, NULL, err);
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
    bool reset;
    HS_TRY(load_root_ex(m, reg, &reset, err));
    if (reset)
        return HS_OK;
    /* a damaged segment loses its entries only (a refresh rebuilds them);
     * one that could not be read (EIO) fails the call instead: writing a
     * registry without its entries would drop indexes that are fine */
    hs_error e;
    hs_err_clear(&e);
    int bad = 0;
    hs_status st = ix_registry_load_segments_lenient(m->location, reg, &bad, &e, err);
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
        tbl_ix_warn("%s: index registry %s: %d segment(s) unusable, their entries are dropped "
             "(first: %s)", m->location, rel, bad, e.msg);
    return HS_OK;
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
        tbl_ix_entry_free_strings(&HS_VEC_AT(v, ix_entry, i));
    hs_buf_free(v);
}

void tbl_ix_free_strs(hs_buf *v)
{
    for (size_t i = 0; i < HS_VEC_LEN(v, char *); i++)
        hs_free(HS_VEC_AT(v, char *, i));
    hs_buf_free(v);
}

/* Requests for the files of `live` lacking a usable sidecar of the
 * declaration (in reg or already built by us). */
static hs_status missing_reqs(add_ctx *c, const ice_table_metadata *m, const live_set *live,
                              const ix_registry *reg, hs_buf *reqs, hs_error *err)
{
    const hs_field *top = tbl_ix_top_of(c->schema, c->decl.field_id);
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
    hs_status st = tbl_ix_build_all((build_req *)reqs->data, out, n, c->n_threads, opt, what, location,
                             err);
    for (int i = 0; i < n; i++) {
        if (st == HS_OK && hs_buf_append(&c->mine, &out[i], sizeof out[i]) == HS_OK)
            continue;
        if (st == HS_OK) {
            st = hs_err_nomem(err, 64);
            /* the rest is freed below; what is in mine is cleaned by the caller */
        }
        if (out[i].index_file)
            tbl_ix_remove_local(location, out[i].index_file);
        tbl_ix_entry_free_strings(&out[i]);
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
            tbl_ix_remove_local(base->location, e->index_file);
            tbl_ix_entry_free_strings(e);
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
    if (!fam && tbl_ix_is_vector_kind(kind))
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
            tbl_ix_remove_local(location, HS_VEC_AT(&c.mine, ix_entry, i).index_file);
    } else if (st == HS_OK && HS_VEC_LEN(&c.mine, ix_entry) > 0) {
        /* sidecars of ours that lost to a concurrent add_index's: remove */
        ix_registry now = {0};
        if (load_registry_of(&t->meta, &now, NULL) == HS_OK) {
            for (size_t i = 0; i < HS_VEC_LEN(&c.mine, ix_entry); i++) {
                const ix_entry *e = &HS_VEC_AT(&c.mine, ix_entry, i);
                const ix_entry *k = ix_registry_find_entry(&now, e->data_file, e->field_id,
                                                           e->kind);
                if (!k || strcmp(k->index_file, e->index_file) != 0)
                    tbl_ix_remove_local(location, e->index_file);
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
            tbl_ix_remove_local(location, HS_VEC_AT(&c->mine, ix_entry, k).index_file);
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
        if (!ice_schema_find_id(sc, d->field_id) || !tbl_ix_top_of(sc, d->field_id) ||
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
                        tbl_ix_remove_local(location, e->index_file);
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
        tbl_ix_warn("%s: index auto-refresh: %s; scans read the files without a sidecar",
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
        tbl_ix_remove_local(w->t->meta.location, e->index_file);
        tbl_ix_entry_free_strings(e);
        return hs_err_nomem(err, 64);
    }
    if (hs_buf_append(&w->entries, e, sizeof *e) != HS_OK) {
        tbl_ix_entry_free_strings(e);
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
         * read back one column a batch at a time (tbl_ix_build_from_file: the
         * builder keeps what the index needs, the column is not held) */
        const hs_field *top = b ? NULL : tbl_ix_top_of(sc, d->field_id);
        if (!b && !top)
            continue;
        build_req q = {w->t->meta.location, wflags_of(&w->t->meta), d, field, top, path, size,
                       n_rows, NULL, sc};
        ix_entry e;
        HS_TRY(b ? tbl_ix_build_from_batch(&q, b, &e, err) : tbl_ix_build_from_file(&q, &e, err));
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
        const hs_field *top = tbl_ix_top_of(sc, d->field_id);
        if (!field || !top || !tbl_ixkind_find(d->kind))
            continue;
        for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&w->files, tbl_ixw_file); k++) {
            const tbl_ixw_file *f = &HS_VEC_AT(&w->files, tbl_ixw_file, k);
            if (ixw_has_entry(w, f->path, d->field_id, d->kind))
                continue;
            build_req q = {base->location, wflags_of(base), d, field, top, f->path, f->size,
                           f->record_count, NULL, sc};
            ix_entry e;
            st = tbl_ix_build_from_file(&q, &e, err);
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
        tbl_ix_remove_local(loc, HS_VEC_AT(&w->sidecars, char *, i));
    remove_listed(loc, &w->prev_registry);
    tbl_ix_free_strs(&w->sidecars);
}

void tbl_ixw_free(tbl_ixw *w)
{
    for (size_t i = 0; i < HS_VEC_LEN(&w->files, tbl_ixw_file); i++)
        hs_free(HS_VEC_AT(&w->files, tbl_ixw_file, i).path);
    hs_buf_free(&w->files);
    tbl_ix_free_strs(&w->removed);
    free_entries(&w->entries);
    tbl_ix_free_strs(&w->sidecars);
    remove_listed(NULL, &w->prev_registry);
    hs_free(w->loaded_rel);
    if (w->reg) {
        ix_registry_clear(w->reg);
        hs_free(w->reg);
    }
    memset(w, 0, sizeof *w);
}

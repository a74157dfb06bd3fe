/*
 * table/index_build.c - building sidecar indexes: one data file's sidecar
 * from rows in memory (the files a write produces) or from the file on disk
 * (add_index, refresh), and many of them in parallel on a thread pool with
 * progress and cancel.  index.c decides what to build and commits the
 * entries; a failed build removes what it wrote.
 *
 * Kinds.  tbl_ixkind families build sidecars; the scalar family (inverted,
 * range, auto) is here over index/scalar/sidx.h.  Vector kind names are
 * recognised and refused with HS_UNSUPPORTED until a family handles them.
 *
 * A sidecar is written under <table>/index/ with an exclusive create; a
 * taken name gets a random suffix (sidecars are never overwritten).
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
/* the scalar family                                                   */

bool tbl_ix_scalar_handles(const char *kind)
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
    "scalar", tbl_ix_scalar_handles, scalar_check, scalar_begin, scalar_add, scalar_finish, scalar_free,
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
bool tbl_ix_is_vector_kind(const char *kind)
{
    return strncmp(kind, "hnsw", 4) == 0 || strncmp(kind, "ivf_hnsw", 8) == 0 ||
           strcmp(kind, "ivf") == 0;
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
            tbl_ix_remove_local(q->location, e->index_file);
            tbl_ix_entry_free_strings(e);
            st = hs_err_nomem(err, 256);
        }
    }
    hs_buf_free(&rel);
    hs_buf_free(&path);
    return st;
}

/* The end of either build, st its status so far: the clustered section
 * (cb's builder, freed here) after the index bytes, the sidecar written and
 * e->cluster set; bytes freed. */
static hs_status finish_build(const build_req *q, hs_status st, cluster_build *cb, hs_buf *bytes,
                              ix_entry *e, hs_error *err)
{
    char *dir = NULL;
    if (st == HS_OK)
        st = cluster_finish(cb, bytes, &dir, err);
    tbl_vcbuilder_free(cb->b);
    cb->b = NULL;
    if (st == HS_OK)
        st = write_sidecar(q, bytes, e, err);
    if (st == HS_OK) {
        e->cluster = dir;
        dir = NULL;
    }
    hs_free(dir);
    hs_buf_free(bytes);
    return st;
}

/* Builds from one batch holding every row of the data file. */
hs_status tbl_ix_build_from_batch(const build_req *q, const hs_batch *b, ix_entry *e,
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
    if (st == HS_OK)
        st = cluster_begin(q, &cb, err);
    if (st == HS_OK && cb.b)
        st = tbl_vcbuilder_add(cb.b, b, 0, err);
    st = finish_build(q, st, &cb, &bytes, e, err);
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
hs_status tbl_ix_build_from_file(const build_req *q, ix_entry *e, hs_error *err)
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
    st = finish_build(q, st, &cb, &bytes, e, err);
    hs_field_clear(&rs);
    if (st != HS_OK && st != HS_CANCELLED)
        hs_err_prefix(err, "index %s on %s of %s", q->decl->kind, q->decl->column, q->data_file);
    return st;
}

/* The top-level column of schema holding field id, or NULL. */
const hs_field *tbl_ix_top_of(const ice_schema *sc, int32_t fid)
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
        st = tbl_ix_build_from_file(&r->reqs[t->i], &r->out[t->i], &t->err);
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
hs_status tbl_ix_build_all(build_req *reqs, ix_entry *out, int n, int n_threads,
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
            st = tbl_ix_build_from_file(&reqs[i], &out[i], err);
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
                tbl_ix_remove_local(location, out[i].index_file);
            tbl_ix_entry_free_strings(&out[i]);
        }
    }
    pthread_mutex_destroy(&r.mu);
    pthread_cond_destroy(&r.cv);
    return st;
}

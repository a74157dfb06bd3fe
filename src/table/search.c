/*
 * table/search.c - hs_table_search: top-k vector search over a snapshot,
 * with the scan's filter, deletes respected, per data file through its
 * vector sidecar when a usable one exists, else exactly.
 *
 *   plan the snapshot with the filter (partition + bounds pruning, deletes)
 *     |
 *     v  per data file f (plan order = file ordinal)
 *   allowed positions A_f = filter matches minus deleted rows
 *     (NULL = every row: no filter and no delete; empty: skip the file)
 *     |
 *     +-- a live, valid sidecar for (f, column) with the search's metric
 *     |     and dimension: hnsw_search(k, allow = ids of A_f, fetch = exact
 *     |     vectors of given rows read from f, only that column)
 *     +-- else (no sidecar; missing / truncated / corrupt / stale: warning
 *     |     and counter): exact search streaming the allowed rows' vectors
 *     v
 *   per-file top k (ordering distance, position) -> global top k, ties
 *   broken by (file ordinal, position) so the answer is deterministic
 *     |
 *     v
 *   materialize the projected columns of the winners: per file one read
 *   of exactly those rows (tbl_read_file_ex with the rows as candidates),
 *   conformed to the snapshot schema as scans do; one batch nearest first
 *   + the distance column (float64, user form: L2 distance, cosine
 *   distance, inner product for ip)
 *
 * Files are searched in parallel on a pool (HS_SEARCH_THREADS, default the
 * cores up to 8), each into its own top k; the merge is in file order.
 * Rows whose vector is null have no distance and are never returned, so
 * the answer has exactly min(k, matching rows with a vector) rows.
 *
 * The sidecars come from the index registry (index/registry.h): an entry is
 * used only when its data file path and size match the planned file and
 * the sidecar has the recorded size; table/vindex.h then validates it.
 * Skipped sidecars print a warning on stderr and count in
 * tbl_search_counters.
 *
 * Ownership: the search borrows the table handle's metadata for the call;
 * the returned stream owns its one batch.
 */
#include "table/table_int.h"
#include "table/vindex.h"

#include "base/config.h"
#include "base/opts.h"
#include "base/mem.h"
#include "base/threadpool.h"
#include "columnar/arrow_c.h"
#include "hyperstream/index.h"
#include "index/registry.h"
#include "index/vector/distance.h"
#include "io/io.h"
#include "parquet/reader.h"

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* counters and warnings                                               */

static _Atomic int64_t g_index_files_skipped;
static _Atomic int64_t g_files_indexed;
static _Atomic int64_t g_files_exact;

void tbl_search_counters(int64_t *files_indexed, int64_t *files_exact, int64_t *skipped)
{
    if (files_indexed)
        *files_indexed = atomic_load(&g_files_indexed);
    if (files_exact)
        *files_exact = atomic_load(&g_files_exact);
    if (skipped)
        *skipped = atomic_load(&g_index_files_skipped);
}

/* A sidecar that cannot be used: the search goes on exactly. */
static void skip_warning(const char *data_path, const hs_error *why)
{
    atomic_fetch_add(&g_index_files_skipped, 1);
    hs_warn("vector index of %s skipped, searching exactly: %s",
            data_path, why && why->msg[0] ? why->msg : "unusable");
}

/* ------------------------------------------------------------------ */
/* top-k of (distance, file, position)                                 */

typedef struct cand {
    float d;                  /* ordering distance; NaN mapped to +inf */
    int32_t file;
    uint32_t pos;
} cand;

static inline bool cand_less(const cand *a, const cand *b)
{
    if (a->d != b->d)
        return a->d < b->d;
    if (a->file != b->file)
        return a->file < b->file;
    return a->pos < b->pos;
}

typedef struct topk {
    cand *h;                  /* max-heap by cand_less, n <= k */
    size_t n, k;
} topk;

static void topk_offer(topk *t, cand c)
{
    if (t->k == 0)
        return;
    if (t->n < t->k) {
        size_t i = t->n++;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            if (!cand_less(&t->h[p], &c))
                break;
            t->h[i] = t->h[p];
            i = p;
        }
        t->h[i] = c;
        return;
    }
    if (!cand_less(&c, &t->h[0]))
        return;
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const cand *big = &c;
        if (l < t->n && cand_less(big, &t->h[l])) {
            m = l;
            big = &t->h[l];
        }
        if (r < t->n && cand_less(big, &t->h[r]))
            m = r;
        if (m == i)
            break;
        t->h[i] = t->h[m];
        i = m;
    }
    t->h[i] = c;
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return cand_less(x, y) ? -1 : cand_less(y, x) ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* per-file search                                                     */

typedef struct search_ctx {
    const hs_search_options *so;
    const hs_field *col;      /* the vector column (snapshot schema) */
    hs_metric metric;
    bool metric_given;
    const vd_table *kern;
    topk top;
    /* reused per file */
    hnsw_hit *hits;
    size_t hits_cap;
} search_ctx;

typedef struct exact_ctx {
    search_ctx *sc;
    int32_t file;
    const char *path;
} exact_ctx;

static hs_status dim_error(const search_ctx *sc, const char *path, uint32_t pos, int dim,
                           hs_error *err)
{
    return hs_err_set(err, HS_INVALID, "query vector has %d dimensions, column \"%s\" has %d "
                      "(%s, row %" PRIu32 ")", sc->so->dim, sc->col->name, dim, path, pos);
}

static hs_status exact_row(void *ctx, uint32_t pos, const float *v, int dim, hs_error *err)
{
    exact_ctx *e = ctx;
    search_ctx *sc = e->sc;
    if (!v)
        return HS_OK;
    if (dim != sc->so->dim)
        return dim_error(sc, e->path, pos, dim, err);
    float d = vd_order_dist_f32(sc->kern, sc->metric, sc->so->query, v, (size_t)dim);
    topk_offer(&sc->top, (cand){d == d ? d : INFINITY, e->file, pos});
    return HS_OK;
}

static hs_status search_exact(search_ctx *sc, tbl_vcol *vc, int32_t file,
                              const roaring_bitmap_t *allow, hs_error *err)
{
    atomic_fetch_add(&g_files_exact, 1);
    exact_ctx e = {.sc = sc, .file = file, .path = tbl_vcol_path(vc)};
    return tbl_vcol_scan(vc, allow, exact_row, &e, err);
}

/* hnsw_fetch_fn over a data file: exact vectors of graph ids. */
typedef struct fetch_ctx {
    tbl_vcol *vc;
    const tbl_vindex *vi;
    int dim;
    /* per call */
    uint32_t *pos;            /* positions sorted, with their slots */
    uint32_t *slot;
    size_t n, at;
    float *out;
} fetch_ctx;

static hs_status fetch_row(void *ctx, uint32_t pos, const float *v, int dim, hs_error *err)
{
    fetch_ctx *f = ctx;
    if (!v || dim != f->dim)
        return HS_CORRUPT_AT(err, "%s: row %" PRIu32 " has %s, the vector index says a vector "
                             "of %d", tbl_vcol_path(f->vc), pos, v ? "another dimension" :
                             "no vector", f->dim);
    while (f->at < f->n && f->pos[f->at] < pos)
        f->at++;
    for (; f->at < f->n && f->pos[f->at] == pos; f->at++)
        memcpy(f->out + (size_t)f->slot[f->at] * (size_t)dim, v, (size_t)dim * sizeof(float));
    return HS_OK;
}

typedef struct pos_slot { uint32_t pos, slot; } pos_slot;

static int pos_slot_cmp(const void *a, const void *b)
{
    const pos_slot *x = a, *y = b;
    return x->pos < y->pos ? -1 : x->pos > y->pos ? 1 : (x->slot > y->slot) - (x->slot < y->slot);
}

static hs_status fetch_vectors(void *ctx, const uint32_t *ids, size_t n, float *out,
                               hs_error *err)
{
    fetch_ctx *f = ctx;
    if (n == 0)
        return HS_OK;
    pos_slot *ps = hs_malloc(n * sizeof *ps);
    uint32_t *buf = hs_malloc(2 * n * sizeof *buf);
    roaring_bitmap_t *rows = roaring_bitmap_create();
    hs_status st = ps && buf && rows ? HS_OK : hs_err_nomem(err, n * sizeof *ps);
    tbl_vindex_info info;
    tbl_vindex_get_info(f->vi, &info);
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        if (ids[i] >= (uint64_t)info.n_vectors) {
            st = hs_err_set(err, HS_INTERNAL, "vector fetch: id %" PRIu32 " out of range", ids[i]);
            break;
        }
        ps[i] = (pos_slot){tbl_vindex_pos_of(f->vi, ids[i]), (uint32_t)i};
    }
    if (st == HS_OK) {
        qsort(ps, n, sizeof *ps, pos_slot_cmp);
        for (size_t i = 0; i < n; i++) {
            buf[i] = ps[i].pos;
            buf[n + i] = ps[i].slot;
            roaring_bitmap_add(rows, ps[i].pos);
        }
        f->pos = buf;
        f->slot = buf + n;
        f->n = n;
        f->at = 0;
        f->out = out;
        st = tbl_vcol_scan(f->vc, rows, fetch_row, f, err);
        if (st == HS_OK && f->at < n)
            st = HS_CORRUPT_AT(err, "%s: %zu of %zu fetched rows missing", tbl_vcol_path(f->vc),
                               n - f->at, n);
    }
    hs_free(ps);
    hs_free(buf);
    tbl_bitmap_free(rows);
    return st;
}

/* Searches one file through its sidecar.  HS_CORRUPT means "not usable":
 * the caller falls back to exact search. */
static hs_status search_index(search_ctx *sc, tbl_vcol *vc, const tbl_vindex *vi, int32_t file,
                              const roaring_bitmap_t *allow, hs_error *err)
{
    tbl_vindex_info info;
    tbl_vindex_get_info(vi, &info);
    if (info.n_rows != tbl_vcol_num_rows(vc))
        return HS_CORRUPT_AT(err, "vector index covers %" PRId64 " rows, the data file has %"
                             PRId64, info.n_rows, tbl_vcol_num_rows(vc));
    const hnsw_index *ix = tbl_vindex_hnsw(vi);
    if (!ix)
        return HS_OK;  /* the file has no vector */
    roaring_bitmap_t *ids = NULL;
    HS_TRY(tbl_vindex_ids_of(vi, allow, &ids, err));
    size_t k = sc->top.k < (size_t)info.n_vectors ? sc->top.k : (size_t)info.n_vectors;
    if (k > sc->hits_cap) {
        hnsw_hit *h = hs_realloc(sc->hits, k * sizeof *h);
        if (!h) {
            tbl_bitmap_free(ids);
            return hs_err_nomem(err, k * sizeof *h);
        }
        sc->hits = h;
        sc->hits_cap = k;
    }
    fetch_ctx fc = {.vc = vc, .vi = vi, .dim = info.dim};
    hnsw_search_opts o = {.k = (int)k, .ef = sc->so->ef_search, .nprobe = sc->so->nprobe,
                          .allow = ids, .fetch = fetch_vectors, .fetch_ctx = &fc};
    int n_out = 0;
    hs_status st = hnsw_search(ix, sc->so->query, &o, sc->hits, &n_out, NULL, err);
    tbl_bitmap_free(ids);
    if (st != HS_OK)
        return st;
    atomic_fetch_add(&g_files_indexed, 1);
    for (int i = 0; i < n_out; i++) {
        float d = sc->hits[i].dist;
        topk_offer(&sc->top, (cand){d == d ? d : INFINITY, file,
                                    tbl_vindex_pos_of(vi, sc->hits[i].id)});
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* sidecar lookup                                                      */

/* The registry of the table, loaded once per search, and the metrics of the
 * vector indexes declared on the searched column. */
typedef struct vreg {
    const char *location;     /* borrowed (table metadata) */
    ix_registry reg;          /* indexed by data file; empty when none */
    bool loaded;
} vreg;

static void vreg_clear(vreg *r)
{
    ix_registry_clear(&r->reg);
    r->loaded = false;
}

/* Loads the registry named by the table property; an unreadable one is a
 * warning (indexes unused, the counter counts it), never a failure. */
static hs_status vreg_load(const ice_table_metadata *m, vreg *r, hs_error *err)
{
    memset(r, 0, sizeof *r);
    r->location = m->location;
    const char *rel = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY);
    if (!rel)
        return HS_OK;
    hs_error e = {0};
    hs_status st = ix_registry_load(m->location, rel, &r->reg, &e);
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 64);
    if (st != HS_OK) {
        atomic_fetch_add(&g_index_files_skipped, 1);
        hs_warn("%s: index registry unreadable (%s); vector search reads the data", m->location,
                e.msg);
        memset(&r->reg, 0, sizeof r->reg);
        return HS_OK;
    }
    if (ix_registry_build_index(&r->reg, err) != HS_OK) {
        ix_registry_clear(&r->reg);
        return hs_err_nomem(err, 64);
    }
    r->loaded = true;
    return HS_OK;
}

/* The metric an index declaration of `kind` with `params` builds for. */
static bool decl_metric(const char *kind, const char *params, hs_metric *out)
{
    tbl_vindex_spec spec;
    if (!tbl_vindex_is_vector_kind(kind) || tbl_vindex_parse(kind, params, &spec, NULL) != HS_OK)
        return false;
    *out = spec.hp.metric;
    return true;
}

/* The metric of the first vector index declared on field_id, or L2. */
static hs_metric default_metric(const vreg *r, int32_t field_id)
{
    hs_metric m;
    for (int i = 0; i < r->reg.n_decls; i++)
        if (r->reg.decls[i].field_id == field_id &&
            decl_metric(r->reg.decls[i].kind, r->reg.decls[i].params, &m))
            return m;
    return HS_METRIC_L2;
}

/* The registry entry of a vector sidecar of (data file, field) built for
 * `metric`, or NULL.  Entries are used only when the data file's path and
 * size both match. */
static const ix_entry *find_sidecar(const vreg *r, const tbl_plan_file *pf, int32_t field_id,
                                    hs_metric metric)
{
    if (!r->loaded)
        return NULL;
    for (int i = ix_registry_first(&r->reg, pf->path); i >= 0; i = ix_registry_next(&r->reg, i)) {
        const ix_entry *e = &r->reg.entries[i];
        if (e->field_id != field_id || e->data_file_size != pf->file_size ||
            !tbl_vindex_is_vector_kind(e->kind))
            continue;
        int d = ix_registry_find_decl(&r->reg, field_id, e->kind);
        hs_metric m;
        if (d >= 0 && decl_metric(e->kind, r->reg.decls[d].params, &m) && m == metric)
            return e;
    }
    return NULL;
}

/* Allowed positions of one file: filter matches minus deletes (scalar
 * indexes narrow the rows read).  *out NULL = every row. */
static hs_status allowed_rows(const tbl_plan *plan, const tbl_ixscan *six,
                              const tbl_plan_file *pf, const hs_field *filter_schema,
                              roaring_bitmap_t **out, hs_error *err)
{
    *out = NULL;
    const tbl_pred *pred = &plan->pred;
    if (!tbl_pred_is_true(pred)) {
        roaring_bitmap_t *cand = NULL;
        bool exact = false;
        tbl_file_report rep = {0};
        if (six)
            HS_TRY(tbl_ixscan_file(six, pf, pred->filter, &cand, &exact, &rep, err));
        if (cand && roaring_bitmap_is_empty(cand)) {
            *out = cand;
            return HS_OK;
        }
        tbl_read_opts o = {.pred = pred, .candidates = cand,
                           .candidates_exact = cand && exact && pred->exact,
                           .use_stats = true, .n_out = 0, .batch_size = 65536};
        hs_status st = tbl_read_file_ex(pf, filter_schema, &o, NULL, NULL, out, NULL, NULL, err);
        tbl_bitmap_free(cand);
        return st;
    }
    roaring_bitmap_t *del = NULL;
    HS_TRY(tbl_plan_load_deletes(pf, &del, err));
    if (!del)
        return HS_OK;
    roaring_bitmap_t *all = roaring_bitmap_from_range(0, (uint64_t)pf->record_count, 1);
    if (!all) {
        roaring_bitmap_free(del);
        return hs_err_nomem(err, 64);
    }
    roaring_bitmap_andnot_inplace(all, del);
    roaring_bitmap_free(del);
    *out = all;
    return HS_OK;
}

static hs_status search_file(search_ctx *sc, const vreg *vr, const tbl_ixscan *six,
                             const tbl_plan *plan, int32_t file, const hs_field *filter_schema,
                             hs_buf *path, hs_error *err)
{
    const tbl_plan_file *pf = &plan->files[file];
    if (pf->record_count == 0)
        return HS_OK;
    roaring_bitmap_t *allow = NULL;
    HS_TRY(allowed_rows(plan, six, pf, filter_schema, &allow, err));
    if (allow && roaring_bitmap_is_empty(allow)) {
        roaring_bitmap_free(allow);
        return HS_OK;
    }
    tbl_vcol *vc = NULL;
    hs_status st = tbl_vcol_open(pf->path, sc->col, &vc, err);
    const ix_entry *e = st == HS_OK ? find_sidecar(vr, pf, sc->col->field_id, sc->metric) : NULL;
    bool done = false;
    if (e) {
        const tbl_vindex *vi = NULL;
        hs_error why = {0};
        hs_status vs = ix_resolve_path(vr->location, e->index_file, path) == HS_OK
                           ? HS_OK : hs_err_nomem(&why, 256);
        if (vs == HS_OK)
            vs = tbl_vindex_acquire(hs_buf_cstr(path), sc->col->field_id, pf->file_size,
                                    e->index_file_size, &vi, &why);
        if (vs == HS_OK) {
            tbl_vindex_info info;
            tbl_vindex_get_info(vi, &info);
            if (info.metric != sc->metric && info.n_vectors > 0)
                vs = HS_CORRUPT_AT(&why, "%s: built for metric %s, the registry says %s",
                                   hs_buf_cstr(path), hs_metric_name(info.metric),
                                   hs_metric_name(sc->metric));
            else if (info.dim == sc->so->dim || info.n_vectors == 0)
                vs = search_index(sc, vc, vi, file, allow, &why);
            /* else: the data has another dimension; the exact search names the row */
            done = vs == HS_OK && (info.dim == sc->so->dim || info.n_vectors == 0);
        }
        tbl_vindex_release(vi);
        if (vs == HS_NOMEM || vs == HS_CANCELLED || vs == HS_INVALID || vs == HS_INTERNAL) {
            if (err)
                *err = why;
            st = vs;
        } else if (vs != HS_OK) {
            skip_warning(pf->path, &why);
        }
    }
    if (st == HS_OK && !done)
        st = search_exact(sc, vc, file, allow, err);
    tbl_vcol_close(vc);
    tbl_bitmap_free(allow);
    return st;
}

/* One data file's search on a worker: its own top k, merged afterwards. */
typedef struct file_job {
    search_ctx sc;            /* copy of the shared one, own heap and hits */
    const vreg *vr;
    const tbl_ixscan *six;
    const tbl_plan *plan;
    const hs_field *filter_schema;
    int32_t file;
    hs_buf path;
} file_job;

static hs_status file_job_run(void *arg, hs_error *err)
{
    file_job *j = arg;
    return search_file(&j->sc, j->vr, j->six, j->plan, j->file, j->filter_schema, &j->path, err);
}

/* Threads for the per-file searches: HS_SEARCH_THREADS, else the cores (at
 * most 8), never more than the files. */
static int search_threads(int n_files)
{
    long set = (long)hs_cfg_get(HS_CFG_SEARCH_THREADS);
    long n = set > 0 ? set : sysconf(_SC_NPROCESSORS_ONLN);
    if (set <= 0 && n > 8)
        n = 8;
    if (n > n_files)
        n = n_files;
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* Searches every planned file (in parallel when there are several) and
 * merges the per-file top k into sc->top. */
static hs_status search_files(search_ctx *sc, const vreg *vr, const tbl_ixscan *six,
                              const tbl_plan *plan, const hs_field *filter_schema, hs_error *err)
{
    int n = plan->n_files;
    int threads = search_threads(n);
    if (threads <= 1) {
        hs_buf path = {0};
        hs_status st = HS_OK;
        for (int i = 0; i < n && st == HS_OK; i++)
            st = search_file(sc, vr, six, plan, i, filter_schema, &path, err);
        hs_buf_free(&path);
        hs_free(sc->hits);
        sc->hits = NULL;
        return st;
    }
    file_job *jobs = hs_calloc((size_t)n, sizeof *jobs);
    if (!jobs)
        return hs_err_nomem(err, (size_t)n * sizeof *jobs);
    hs_status st = HS_OK;
    for (int i = 0; i < n && st == HS_OK; i++) {
        file_job *j = &jobs[i];
        j->sc = *sc;
        j->sc.top.n = 0;
        j->sc.hits = NULL;
        j->sc.hits_cap = 0;
        j->vr = vr;
        j->six = six;
        j->plan = plan;
        j->filter_schema = filter_schema;
        j->file = i;
        if (!(j->sc.top.h = hs_malloc(sc->top.k * sizeof(cand))))
            st = hs_err_nomem(err, sc->top.k * sizeof(cand));
    }
    hs_pool *pool = NULL;
    hs_group *g = NULL;
    if (st == HS_OK)
        st = hs_pool_create(threads, &pool, err);
    if (st == HS_OK)
        st = hs_group_create(pool, &g, err);
    for (int i = 0; i < n && st == HS_OK; i++)
        if (hs_group_submit(g, file_job_run, &jobs[i]) != HS_OK)
            st = hs_err_nomem(err, 64);
    if (g) {
        hs_error gerr = {0};
        hs_status gs = hs_group_wait(g, &gerr);
        if (st == HS_OK && gs != HS_OK) {
            st = gs;
            if (err)
                *err = gerr;
        }
    }
    hs_group_destroy(g);
    hs_pool_destroy(pool);
    for (int i = 0; i < n; i++) {
        file_job *j = &jobs[i];
        for (size_t c = 0; st == HS_OK && c < j->sc.top.n; c++)
            topk_offer(&sc->top, j->sc.top.h[c]);
        hs_free(j->sc.top.h);
        hs_free(j->sc.hits);
        hs_buf_free(&j->path);
    }
    hs_free(jobs);
    return st;
}

/* ------------------------------------------------------------------ */
/* materializing the winners                                           */

typedef struct collect {
    hs_column **cols;         /* n columns being appended to */
    int n;
    int64_t rows;
} collect;

static hs_status collect_batch(void *ctx, hs_batch *b, hs_error *err)
{
    collect *c = ctx;
    hs_status st = HS_OK;
    for (int i = 0; i < c->n && st == HS_OK; i++)
        st = hs_col_append_column(c->cols[i], b->cols[i], err);
    c->rows += b->n_rows;
    hs_batch_free(b);
    return st;
}

/* Appends the rows at positions `rows` of data file pf (live rows, read in
 * position order, conformed to rs as scans do) to cols. */
static hs_status read_rows(const tbl_plan_file *pf, const hs_field *rs,
                           const roaring_bitmap_t *rows, hs_column **cols, hs_error *err)
{
    uint64_t n = roaring_bitmap_get_cardinality(rows);
    collect c = {cols, rs->n_children, 0};
    tbl_read_opts o = {.candidates = rows, .n_out = -1,
                       .batch_size = n > 0 && n < 65536 ? (int64_t)n : 65536};
    HS_TRY(tbl_read_file_ex(pf, rs, &o, collect_batch, &c, NULL, NULL, NULL, err));
    if ((uint64_t)c.rows != n)
        return HS_CORRUPT_AT(err, "%s: read %" PRId64 " of the %" PRIu64 " rows found by the "
                             "search", pf->path, c.rows, n);
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* schemas                                                             */

static hs_status add_field(hs_field *rs, const hs_field *f, hs_error *err)
{
    for (int i = 0; i < rs->n_children; i++)
        if (rs->children[i].field_id == f->field_id)
            return HS_OK;
    hs_field copy = {0};
    if (hs_field_copy(f, &copy) != HS_OK) {
        hs_field_clear(&copy);
        return hs_err_nomem(err, 64);
    }
    if (hs_field_add_child(rs, &copy) != HS_OK)   /* frees copy on failure */
        return hs_err_nomem(err, 64);
    return HS_OK;
}

static hs_status add_meta(hs_field *rs, const char *name, int32_t id, hs_type type,
                          hs_error *err)
{
    hs_field f;
    hs_field_init(&f, name, type, true);
    f.field_id = id;
    hs_status st = f.name ? add_field(rs, &f, err) : hs_err_nomem(err, 64);
    hs_field_clear(&f);
    return st;
}

static const hs_field *top_field(const ice_schema *sc, const char *name)
{
    for (int k = 0; k < sc->root.n_children; k++)
        if (strcmp(sc->root.children[k].name, name) == 0)
            return &sc->root.children[k];
    for (int k = 0; k < sc->root.n_children; k++)
        if (strcasecmp(sc->root.children[k].name, name) == 0)
            return &sc->root.children[k];
    return NULL;
}

/* The output columns (as hs_scan_options names them), without distance. */
static hs_status project_schema(const ice_schema *sc, const hs_scan_options *o, hs_field *rs,
                                hs_error *err)
{
    hs_field_init(rs, "", HS_TYPE_STRUCT, false);
    if (o && o->columns) {
        for (int i = 0; i < o->n_columns; i++) {
            const char *nm = o->columns[i];
            if (!nm)
                return hs_err_set(err, HS_INVALID, "search: column %d is NULL", i);
            if (strcmp(nm, "_row_id") == 0)
                HS_TRY(add_meta(rs, nm, ICE_FIELD_ID_ROW_ID, HS_TYPE_INT64, err));
            else if (strcmp(nm, "_last_updated_sequence_number") == 0)
                HS_TRY(add_meta(rs, nm, ICE_FIELD_ID_LAST_UPDATED_SEQ, HS_TYPE_INT64, err));
            else if (strcmp(nm, "_file") == 0)
                HS_TRY(add_meta(rs, nm, ICE_FIELD_ID_FILE_PATH, HS_TYPE_STRING, err));
            else if (strcmp(nm, "_pos") == 0)
                HS_TRY(add_meta(rs, nm, ICE_FIELD_ID_POS, HS_TYPE_INT64, err));
            else {
                const hs_field *f = top_field(sc, nm);
                if (!f)
                    return hs_err_set(err, HS_NOT_FOUND, "search: no column \"%s\" in the table "
                                      "schema", nm);
                HS_TRY(add_field(rs, f, err));
            }
        }
    } else {
        for (int k = 0; k < sc->root.n_children; k++)
            HS_TRY(add_field(rs, &sc->root.children[k], err));
    }
    if (o && o->include_row_lineage) {
        HS_TRY(add_meta(rs, "_row_id", ICE_FIELD_ID_ROW_ID, HS_TYPE_INT64, err));
        HS_TRY(add_meta(rs, "_last_updated_sequence_number", ICE_FIELD_ID_LAST_UPDATED_SEQ,
                        HS_TYPE_INT64, err));
    }
    return HS_OK;
}

static bool contains_id(const hs_field *f, int32_t id)
{
    if (f->field_id == id)
        return true;
    for (int i = 0; i < f->n_children; i++)
        if (contains_id(&f->children[i], id))
            return true;
    return false;
}

/* The top-level columns the filter reads. */
static hs_status filter_schema(const ice_schema *sc, const tbl_pred *pred, hs_field *out,
                               hs_error *err)
{
    hs_field_init(out, "", HS_TYPE_STRUCT, false);
    hs_buf ids = {0};
    if (tbl_pred_field_ids(pred, &ids) != HS_OK) {
        hs_buf_free(&ids);
        return hs_err_nomem(err, 64);
    }
    hs_status st = HS_OK;
    for (size_t i = 0; i < HS_VEC_LEN(&ids, int32_t) && st == HS_OK; i++)
        for (int k = 0; k < sc->root.n_children && st == HS_OK; k++)
            if (contains_id(&sc->root.children[k], HS_VEC_AT(&ids, int32_t, i)))
                st = add_field(out, &sc->root.children[k], err);
    hs_buf_free(&ids);
    return st;
}

/* ------------------------------------------------------------------ */
/* the answer                                                          */

typedef struct one_batch {
    hs_batch *b;
} one_batch;

static hs_status one_next(void *ctx, hs_batch **out, hs_error *err)
{
    (void)err;
    one_batch *o = ctx;
    *out = o->b;
    o->b = NULL;
    return HS_OK;
}

static void one_close(void *ctx)
{
    one_batch *o = ctx;
    hs_batch_free(o->b);
    hs_free(o);
}

/* Builds the result batch from the sorted winners win[0..n). */
static hs_status materialize(const tbl_plan *plan, const hs_field *rs, const char *dist_name,
                             hs_metric metric, const cand *win, size_t n, hs_batch **out,
                             hs_error *err)
{
    *out = NULL;
    int nc = rs->n_children;
    /* winners grouped by file, positions ascending: the order rows are read */
    cand *byf = hs_malloc((n + 1) * sizeof *byf);
    int64_t *take = hs_malloc((n + 1) * sizeof *take);
    hs_column **all = hs_calloc((size_t)nc + 1, sizeof *all);
    hs_column **cols = hs_calloc((size_t)nc + 2, sizeof *cols);
    hs_status st = byf && take && all && cols ? HS_OK : hs_err_nomem(err, n * 16);
    if (st == HS_OK) {
        if (n)
            memcpy(byf, win, n * sizeof *byf);
        for (size_t i = 0; i < n; i++)
            byf[i].d = 0;
        qsort(byf, n, sizeof *byf, cand_cmp);
    }
    for (int i = 0; st == HS_OK && i < nc; i++)
        st = hs_col_create(&rs->children[i], (int64_t)n, &all[i], err);
    roaring_bitmap_t *rows = NULL;
    for (size_t i = 0; st == HS_OK && i < n;) {
        if (!(rows = roaring_bitmap_create())) {
            st = hs_err_nomem(err, 64);
            break;
        }
        size_t j = i;
        for (; j < n && byf[j].file == byf[i].file; j++)
            roaring_bitmap_add(rows, byf[j].pos);
        st = read_rows(&plan->files[byf[i].file], rs, rows, all, err);
        roaring_bitmap_free(rows);
        rows = NULL;
        i = j;
    }
    /* winner r is the row of (file, pos) in `all`, which is its index in byf */
    for (size_t r = 0; st == HS_OK && r < n; r++) {
        cand key = win[r];
        key.d = 0;
        const cand *hit = bsearch(&key, byf, n, sizeof *byf, cand_cmp);
        take[r] = hit ? (int64_t)(hit - byf) : 0;
    }
    for (int c = 0; st == HS_OK && c < nc; c++)
        st = hs_col_take(all[c], take, (int64_t)n, &cols[c], err);
    hs_field schema = {0};
    if (st == HS_OK && hs_field_copy(rs, &schema) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK) {
        hs_field df;
        hs_field_init(&df, dist_name, HS_TYPE_FLOAT64, false);
        if (!df.name || hs_field_add_child(&schema, &df) != HS_OK)   /* frees df on failure */
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK)
        st = hs_col_create(&schema.children[nc], (int64_t)n, &cols[nc], err);
    for (size_t r = 0; st == HS_OK && r < n; r++) {
        /* a cosine distance of a zero vector is undefined: NaN (sorted last) */
        double d = metric == HS_METRIC_COSINE && isinf(win[r].d) ? NAN
                                                                 : vd_user_dist(metric, win[r].d);
        if (hs_col_append_fixed(cols[nc], &d) != HS_OK)
            st = hs_err_nomem(err, n * 8);
    }
    if (st == HS_OK) {
        st = tbl_batch_from_cols(&schema, cols, nc + 1, (int64_t)n, out, err);
    } else if (cols) {
        for (int c = 0; c <= nc; c++)
            hs_col_free(cols[c]);
    }
    hs_field_clear(&schema);
    hs_free(cols);
    for (int c = 0; all && c < nc; c++)
        hs_col_free(all[c]);
    hs_free(all);
    hs_free(take);
    hs_free(byf);
    return st;
}

/* ------------------------------------------------------------------ */
/* entry point                                                         */

static hs_status check_options(const hs_search_options *so, hs_error *err)
{
    if (!so)
        return hs_err_set(err, HS_INVALID, "search: no search options");
    if (!so->column || !*so->column)
        return hs_err_set(err, HS_INVALID, "search: no vector column given");
    if (!so->query || so->dim <= 0)
        return hs_err_set(err, HS_INVALID, "search: no query vector (dimension %d)", so->dim);
    if (so->k <= 0)
        return hs_err_set(err, HS_INVALID, "search: k must be > 0, got %d", so->k);
    if (so->ef_search < 0 || so->nprobe < 0)
        return hs_err_set(err, HS_INVALID, "search: ef_search (%d) and nprobe (%d) must be >= 0",
                          so->ef_search, so->nprobe);
    for (int i = 0; i < so->dim; i++)
        if (!isfinite(so->query[i]))
            return hs_err_set(err, HS_INVALID, "search: query vector element %d is not finite "
                              "(NaN or infinity)", i);
    return HS_OK;
}

hs_status hs_table_search(hs_table *t, const hs_scan_options *scan, const hs_search_options *so,
                          struct ArrowArrayStream *out, hs_error *err)
{
    if (!t || !out)
        return hs_err_set(err, HS_INVALID, "search: NULL table or output stream");
    memset(out, 0, sizeof *out);
    HS_OPTS_IN(scan, hs_scan_options, err);
    HS_OPTS_IN(so, hs_search_options, err);
    HS_TRY(check_options(so, err));
    search_ctx sc = {.so = so, .kern = vd_kernels()};
    if (so->metric) {
        HS_TRY(hs_metric_from_name(so->metric, &sc.metric, err));
        if (sc.metric != HS_METRIC_L2 && sc.metric != HS_METRIC_COSINE &&
            sc.metric != HS_METRIC_IP)
            return hs_err_set(err, HS_INVALID, "search: metric \"%s\" is not l2, cosine or ip",
                              so->metric);
        sc.metric_given = true;
    }
    const char *dist_name = so->distance_column ? so->distance_column : "_distance";
    const ice_snapshot *snap = NULL;
    const ice_schema *schema = NULL;
    HS_TRY(tbl_resolve_snapshot(&t->meta, scan, &snap, &schema, err));
    sc.col = top_field(schema, so->column);
    if (!sc.col)
        return hs_err_set(err, HS_NOT_FOUND, "search: no column \"%s\" in the table schema",
                          so->column);
    if (!tbl_is_float_vector_type(sc.col))
        return hs_err_set(err, HS_INVALID, "search: column \"%s\" is %s, not a vector column "
                          "(list<float>)", sc.col->name, hs_type_name(sc.col->type));
    int dim = tbl_vector_dimension(&t->meta, sc.col->field_id);
    if (dim > 0 && dim != so->dim)
        return hs_err_set(err, HS_INVALID, "search: query vector has %d dimensions, column "
                          "\"%s\" has %d", so->dim, sc.col->name, dim);
    hs_field rs = {0}, fsch = {0};
    tbl_plan *plan = NULL;
    vreg vr = {0};
    tbl_ixscan *six = NULL;
    hs_status st = project_schema(schema, scan, &rs, err);
    for (int i = 0; st == HS_OK && i < rs.n_children; i++)
        if (strcmp(rs.children[i].name, dist_name) == 0)
            st = hs_err_set(err, HS_INVALID, "search: the distance column \"%s\" collides with "
                            "a column of the output (set distance_column)", dist_name);
    if (st == HS_OK)
        st = tbl_plan_make(&t->meta, snap, schema, scan ? scan->filter : NULL, &plan, err);
    if (st == HS_OK)
        st = filter_schema(schema, &plan->pred, &fsch, err);
    if (st == HS_OK)
        st = vreg_load(&t->meta, &vr, err);
    if (st == HS_OK && !tbl_pred_is_true(&plan->pred)) {
        int64_t skipped = 0;
        st = tbl_ixscan_open(&t->meta, &six, &skipped, err);
    }
    if (st == HS_OK && !sc.metric_given)
        sc.metric = default_metric(&vr, sc.col->field_id);
    int64_t total = 0;
    for (int i = 0; st == HS_OK && i < plan->n_files; i++)
        total += plan->files[i].record_count > 0 ? plan->files[i].record_count : 0;
    sc.top.k = (size_t)so->k < (uint64_t)total ? (size_t)so->k : (size_t)total;
    if (st == HS_OK && sc.top.k > 0 && !(sc.top.h = hs_malloc(sc.top.k * sizeof(cand))))
        st = hs_err_nomem(err, sc.top.k * sizeof(cand));
    if (st == HS_OK && sc.top.k > 0)
        st = search_files(&sc, &vr, six, plan, &fsch, err);
    hs_batch *res = NULL;
    if (st == HS_OK) {
        if (sc.top.n > 1)
            qsort(sc.top.h, sc.top.n, sizeof(cand), cand_cmp);
        st = materialize(plan, &rs, dist_name, sc.metric, sc.top.h, sc.top.n, &res, err);
    }
    one_batch *ob = NULL;
    if (st == HS_OK && !(ob = hs_calloc(1, sizeof *ob)))
        st = hs_err_nomem(err, sizeof *ob);
    hs_batch_source src = {.next = one_next, .close = one_close, .ctx = ob};
    if (st == HS_OK && hs_field_copy(&res->schema, &src.schema) != HS_OK) {
        hs_field_clear(&src.schema);
        st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK) {
        ob->b = res;
        res = NULL;
        st = hs_arrow_export_stream(&src, out, err);
        ob = NULL;  /* owned by the stream now (freed on failure too) */
    }
    hs_free(ob);
    hs_batch_free(res);
    tbl_ixscan_free(six);
    vreg_clear(&vr);
    tbl_plan_free(plan);
    hs_field_clear(&rs);
    hs_field_clear(&fsch);
    hs_free(sc.top.h);
    return st;
}

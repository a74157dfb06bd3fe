/*
 * table/search.c - hs_table_search and hs_table_search_batch: top-k vector
 * search over a snapshot, with the scan's filter, deletes respected, per
 * data file through its vector sidecar when a usable one exists, else
 * exactly.
 *
 *   plan the snapshot with the filter (partition + bounds pruning, deletes;
 *   without a filter the handle keeps the plan for the next call while its
 *   metadata file and the snapshot stay the same)
 *     |
 *     v  once per call, per data file f (plan order = file ordinal; files
 *        on the pool when there are several)
 *   allowed positions A_f = filter matches minus deleted rows
 *     (NULL = every row: no filter and no delete; empty: skip the file)
 *   a live, valid sidecar for (f, column) with the search's metric and
 *     dimension (acquired from the sidecar cache, held for the call), and
 *     the graph ids of A_f; else (missing / truncated / corrupt / stale:
 *     warning and counter) none
 *     |
 *     v  per query, per file (one query: a job per file; a batch: a job per
 *        query, over every file)
 *   sidecar: hnsw_search(k, allow = ids of A_f, fetch = exact vectors of
 *     given ids: read in place from the sidecar (format version 2, or a
 *     flat L2/IP graph), else read from f, only that column)
 *   else: exact search streaming the allowed rows' vectors
 *     |
 *     v
 *   per-file top k (ordering distance, position) -> the query's top k, ties
 *   broken by (file ordinal, position) so the answer is deterministic
 *     |
 *     v
 *   materialize the projected columns of every query's winners together
 *   (each row read once): the vector column from the sidecar where it holds
 *   the exact vectors (position -> id -> vector; no Parquet), every other
 *   column by one read per file of exactly those rows (tbl_read_file_ex
 *   with the rows as candidates), conformed to the snapshot schema as scans
 *   do; one batch, queries in order, nearest first, + the distance column
 *   (float64, user form: L2 distance, cosine distance, inner product for
 *   ip); a batch has a first column query_index (int32)
 *
 * Threads: HS_SEARCH_THREADS, default the cores up to 8, never more than the
 * jobs; one job runs inline (no pool for the common one-file query).
 * Rows whose vector is null have no distance and are never returned, so
 * each answer has exactly min(k, matching rows with a vector) rows.
 *
 * On an object store, a file whose allow-list is small enough to be searched
 * exactly (at most max(2000, rows / 50) rows, under hnsw.c's default exact
 * threshold) reads only its sidecar's head where the registry says it
 * serves (tbl_vindex_acquire_head: the exact vectors, not the graph); if
 * the search wants the graph after all (HS_UNSUPPORTED from the partial
 * index), search_index acquires the whole sidecar for it.
 *
 * The sidecars come from the index registry (index/registry.h, decoded once
 * per version in table/index_scan.c's cache): an entry is used only when its
 * data file path and size match the planned file and the sidecar has the
 * recorded size; table/vindex.h then validates it.  A sidecar that fails
 * during a search (HS_CORRUPT from the fetch) is skipped for that query
 * and the file searched exactly.  Skipped sidecars are reported through
 * hs_warn (the warning handler) and count in tbl_search_counters.
 *
 * Ownership: the search borrows the table handle's metadata for the call
 * (and keeps its unfiltered plan in the handle: hs_table.search_plan, and
 * the prepared files of its last filtered search: hs_table.search_filtered,
 * see tbl_fsearch; both freed by tbl_search_cache_clear when the handle
 * closes); the returned stream owns its one batch.
 */
#include "table/table_int.h"
#include "table/vcache.h"
#include "table/vcluster.h"
#include "table/vindex.h"

#include "base/config.h"
#include "base/fork.h"
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
#include <pthread.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
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
static _Atomic int64_t g_filter_prepared, g_filter_reused;
static _Atomic int64_t g_files_clustered;   /* files answered from cluster blocks */

void tbl_search_cluster_counter(int64_t *files)
{
    if (files)
        *files = atomic_load(&g_files_clustered);
}

void tbl_search_filter_counters(int64_t *prepared, int64_t *reused)
{
    if (prepared)
        *prepared = atomic_load(&g_filter_prepared);
    if (reused)
        *reused = atomic_load(&g_filter_reused);
}

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

/* The registry of the table.  Registry versions are immutable files, so
 * the decoded, indexed version comes from the process-wide cache behind
 * tbl_ixscan (table/index_scan.c): a warm search does not re-read it.  The same
 * view serves the filter's scalar index lookups. */
typedef struct vreg {
    const char *location;     /* borrowed (table metadata) */
    tbl_ixscan *six;          /* the cached version; NULL when none or unusable */
    const ix_registry *reg;   /* six's, or &own */
    ix_registry own;          /* a version without entries (declarations only) */
    bool loaded;
} vreg;

static void vreg_clear(vreg *r)
{
    tbl_ixscan_free(r->six);
    ix_registry_clear(&r->own);
    r->six = NULL;
    r->reg = NULL;
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
    int64_t skipped = 0;
    HS_TRY(tbl_ixscan_open(m, &r->six, &skipped, err));
    if (skipped) {
        atomic_fetch_add(&g_index_files_skipped, skipped);
        return HS_OK;
    }
    if (r->six) {
        r->reg = tbl_ixscan_registry(r->six);
        r->loaded = true;
        return HS_OK;
    }
    /* no entries: the declarations still name the metric */
    hs_error e = {0};
    hs_status st = ix_registry_load(m->location, rel, &r->own, &e);
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 64);
    if (st != HS_OK) {
        ix_registry_clear(&r->own);
        return HS_OK;
    }
    if (ix_registry_build_index(&r->own, err) != HS_OK) {
        ix_registry_clear(&r->own);
        return hs_err_nomem(err, 64);
    }
    r->reg = &r->own;
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
    for (int i = 0; r->loaded && i < r->reg->n_decls; i++)
        if (r->reg->decls[i].field_id == field_id &&
            decl_metric(r->reg->decls[i].kind, r->reg->decls[i].params, &m))
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
    for (int i = ix_registry_first(r->reg, pf->path); i >= 0; i = ix_registry_next(r->reg, i)) {
        const ix_entry *e = &r->reg->entries[i];
        if (e->field_id != field_id || e->data_file_size != pf->file_size ||
            !tbl_vindex_is_vector_kind(e->kind))
            continue;
        int d = ix_registry_find_decl(r->reg, field_id, e->kind);
        hs_metric m;
        if (d >= 0 && decl_metric(e->kind, r->reg->decls[d].params, &m) && m == metric)
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
        if (cand && exact && pred->exact) {
            /* the index answered the whole filter: the allowed rows are its
             * rows less the deleted ones, without opening the data file
             * (what tbl_read_file_ex would compute with nothing to evaluate) */
            roaring_bitmap_t *del = NULL;
            hs_status st = tbl_plan_load_deletes(pf, &del, err);
            if (st != HS_OK) {
                roaring_bitmap_free(cand);
                return st;
            }
            if (del) {
                roaring_bitmap_andnot_inplace(cand, del);
                roaring_bitmap_free(del);
            }
            roaring_bitmap_remove_range(cand, (uint64_t)(pf->record_count > 0 ? pf->record_count
                                                                             : 0),
                                        (uint64_t)UINT32_MAX + 1);
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

/* ------------------------------------------------------------------ */
/* one call: the files, prepared once for all its queries              */

/* What a call knows of one planned data file before any query runs. */
typedef struct fstate {
    roaring_bitmap_t *allow;  /* allowed positions; NULL = every row */
    roaring_bitmap_t *ids;    /* graph ids of allow (vi set, allow set) */
    uint64_t *ids_bits;       /* ids as the walk's dense bitset, or NULL (hnsw_allow_bits) */
    const tbl_vindex *vi;     /* a usable sidecar (acquired), else NULL: exact search */
    bool skip;                /* no allowed row */
    bool vecs;                /* vi holds the exact vectors (tbl_vindex_has_vectors) */
    char *vi_path;            /* vi partial (its head only): the sidecar, for the whole */
    int64_t vi_size;
} fstate;

/* Shared by the workers of one call; read-only while queries run. */
typedef struct search_call {
    const hs_search_options *so;
    const hs_field *col;      /* the vector column (snapshot schema) */
    hs_metric metric;
    const vd_table *kern;
    const tbl_plan *plan;
    fstate *fs;               /* plan->n_files */
    size_t k;                 /* min(so->k, rows planned) */
} search_call;

/* One worker's state for one query over a range of files. */
typedef struct query_run {
    const search_call *c;
    const float *q;           /* the query (so->dim floats) */
    topk top;                 /* own heap of c->k */
    hnsw_hit *hits;           /* per-file hits buffer */
    size_t hits_cap;
} query_run;

static hs_status dim_error(const search_call *c, const char *path, uint32_t pos, int dim,
                           hs_error *err)
{
    return hs_err_set(err, HS_INVALID, "query vector has %d dimensions, column \"%s\" has %d "
                      "(%s, row %" PRIu32 ")", c->so->dim, c->col->name, dim, path, pos);
}

typedef struct exact_ctx {
    query_run *r;
    int32_t file;
    const char *path;
} exact_ctx;

static hs_status exact_row(void *ctx, uint32_t pos, const float *v, int dim, hs_error *err)
{
    exact_ctx *e = ctx;
    query_run *r = e->r;
    if (!v)
        return HS_OK;
    if (dim != r->c->so->dim)
        return dim_error(r->c, e->path, pos, dim, err);
    float d = vd_order_dist_f32(r->c->kern, r->c->metric, r->q, v, (size_t)dim);
    topk_offer(&r->top, (cand){d == d ? d : INFINITY, e->file, pos});
    return HS_OK;
}

/* Exact search of one file, streaming the allowed rows' vectors from it. */
static hs_status search_exact(query_run *r, int32_t file, hs_error *err)
{
    const tbl_plan_file *pf = &r->c->plan->files[file];
    tbl_vcol *vc = NULL;
    HS_TRY(tbl_vcol_open(pf->path, r->c->col, &vc, err));
    atomic_fetch_add(&g_files_exact, 1);
    exact_ctx e = {.r = r, .file = file, .path = tbl_vcol_path(vc)};
    hs_status st = tbl_vcol_scan(vc, r->c->fs[file].allow, exact_row, &e, err);
    tbl_vcol_close(vc);
    return st;
}

/* hnsw_fetch_fn: exact vectors of graph ids, from the sidecar when it holds
 * them, else read from the data file (only that column, only those rows;
 * the file is opened at the first call). */
typedef struct fetch_ctx {
    const search_call *c;
    const tbl_plan_file *pf;
    const tbl_vindex *vi;
    int dim;
    tbl_vcol *vc;             /* opened on demand */
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

static hs_status fetch_from_file(fetch_ctx *f, const uint32_t *ids, size_t n, float *out,
                                 hs_error *err)
{
    if (!f->vc)
        HS_TRY(tbl_vcol_open(f->pf->path, f->c->col, &f->vc, err));
    pos_slot *ps = hs_malloc(n * sizeof *ps);
    uint32_t *buf = hs_malloc(2 * n * sizeof *buf);
    roaring_bitmap_t *rows = roaring_bitmap_create();
    hs_status st = ps && buf && rows ? HS_OK : hs_err_nomem(err, n * sizeof *ps);
    for (size_t i = 0; st == HS_OK && i < n; i++)
        ps[i] = (pos_slot){tbl_vindex_pos_of(f->vi, ids[i]), (uint32_t)i};
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

static hs_status fetch_vectors(void *ctx, const uint32_t *ids, size_t n, float *out,
                               hs_error *err)
{
    fetch_ctx *f = ctx;
    if (n == 0)
        return HS_OK;
    tbl_vindex_info info;
    tbl_vindex_get_info(f->vi, &info);
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= (uint64_t)info.n_vectors)
            return hs_err_set(err, HS_INTERNAL, "vector fetch: id %" PRIu32 " out of range",
                              ids[i]);
    if (!tbl_vindex_has_vectors(f->vi))
        return fetch_from_file(f, ids, n, out, err);
    size_t row = (size_t)f->dim * sizeof(float);
    for (size_t i = 0; i < n; i++)
        memcpy(out + i * (size_t)f->dim, tbl_vindex_vector(f->vi, ids[i]), row);
    return HS_OK;
}

/* Searches one file through sidecar vi.  HS_CORRUPT means "not usable":
 * the caller falls back to exact search; HS_UNSUPPORTED (a partial vi) that
 * the search needs the whole sidecar. */
static hs_status search_with(query_run *r, int32_t file, const tbl_vindex *vi, hs_error *err)
{
    const fstate *fs = &r->c->fs[file];
    tbl_vindex_info info;
    tbl_vindex_get_info(vi, &info);
    const hnsw_index *ix = tbl_vindex_hnsw(vi);
    if (!ix)
        return HS_OK;  /* the file has no vector */
    size_t k = r->c->k < (size_t)info.n_vectors ? r->c->k : (size_t)info.n_vectors;
    if (k > r->hits_cap) {
        hnsw_hit *h = hs_realloc(r->hits, k * sizeof *h);
        if (!h)
            return hs_err_nomem(err, k * sizeof *h);
        r->hits = h;
        r->hits_cap = k;
    }
    fetch_ctx fc = {.c = r->c, .pf = &r->c->plan->files[file], .vi = vi, .dim = info.dim};
    hnsw_search_opts o = {.k = (int)k, .ef = r->c->so->ef_search, .nprobe = r->c->so->nprobe,
                          .allow = fs->ids, .fetch = fetch_vectors, .fetch_ctx = &fc,
                          .rerank = r->c->so->rerank,
                          /* version 2 sidecars: exact search and reranking read in place */
                          .vectors = tbl_vindex_vectors(vi),
                          .allow_bits = vi == fs->vi ? fs->ids_bits : NULL};
    int n_out = 0;
    hs_status st = hnsw_search(ix, r->q, &o, r->hits, &n_out, NULL, err);
    tbl_vcol_close(fc.vc);
    if (st != HS_OK)
        return st;
    atomic_fetch_add(&g_files_indexed, 1);
    for (int i = 0; i < n_out; i++) {
        float d = r->hits[i].dist;
        topk_offer(&r->top, (cand){d == d ? d : INFINITY, file,
                                   tbl_vindex_pos_of(vi, r->hits[i].id)});
    }
    return HS_OK;
}

/* The file's sidecar; where only its head was read and this search needs
 * the graph, the whole sidecar (cached for later queries; the same ids). */
static hs_status search_index(query_run *r, int32_t file, hs_error *err)
{
    const fstate *fs = &r->c->fs[file];
    hs_status st = search_with(r, file, fs->vi, err);
    if (st != HS_UNSUPPORTED || !tbl_vindex_is_partial(fs->vi))
        return st;
    const tbl_vindex *whole = NULL;
    HS_TRY(tbl_vindex_acquire(fs->vi_path, r->c->col->field_id,
                              r->c->plan->files[file].file_size, fs->vi_size, &whole, err));
    st = search_with(r, file, whole, err);
    tbl_vindex_release(whole);
    return st;
}

/* One query over one file: the sidecar, else (or when it proves unusable
 * during the search) exactly. */
static hs_status search_one(query_run *r, int32_t file, hs_error *err)
{
    const fstate *fs = &r->c->fs[file];
    if (fs->skip)
        return HS_OK;
    if (fs->vi) {
        hs_error why = {0};
        size_t before = r->top.n;
        hs_status vs = search_index(r, file, &why);
        if (vs == HS_OK)
            return HS_OK;
        if (vs == HS_NOMEM || vs == HS_CANCELLED || vs == HS_INVALID || vs == HS_INTERNAL) {
            if (err)
                *err = why;
            return vs;
        }
        if (r->top.n != before)
            return hs_err_set(err, HS_INTERNAL, "search: a failed index search left results");
        skip_warning(r->c->plan->files[file].path, &why);
    }
    return search_exact(r, file, err);
}

/* The allowed rows and the sidecar of one file (file_prep_run on a worker
 * when there are several files). */
typedef struct prep_ctx {
    search_call *c;
    const vreg *vr;
    const tbl_ixscan *six;
    const hs_field *filter_schema;
} prep_ctx;

static hs_status prep_file(const prep_ctx *x, int32_t file, hs_buf *path, hs_error *err)
{
    search_call *c = x->c;
    const tbl_plan_file *pf = &c->plan->files[file];
    fstate *fs = &c->fs[file];
    if (pf->record_count == 0) {
        fs->skip = true;
        return HS_OK;
    }
    const ix_entry *e = find_sidecar(x->vr, pf, c->col->field_id, c->metric);
    hs_error why = {0};
    hs_status vs = !e || ix_resolve_path(x->vr->location, e->index_file, path) == HS_OK
                       ? HS_OK : hs_err_nomem(&why, 256);
    /* On an object store a filtered search of a head-readable sidecar not
     * read before starts the head's GET now, while the filter's own reads
     * (its sidecar, or the data file's pages) answer: one round trip for
     * both instead of two.  The allow-list then decides: the head serves
     * (few rows), or it is the first bytes of the whole (the rest after it). */
    hs_io_pending *pend = NULL;
    uint64_t pend_len = 0;
    if (e && vs == HS_OK && e->head && !tbl_pred_is_true(&c->plan->pred) &&
        hs_io_is_object_uri(hs_buf_cstr(path)) && !hs_io_identity_cached(hs_buf_cstr(path))) {
        pend_len = tbl_vindex_head_bytes(pf->record_count, c->so->dim, e->index_file_size);
        pend = hs_io_read_head_start(hs_buf_cstr(path), pend_len,
                                     (uint64_t)e->index_file_size);
    }
    hs_status as = allowed_rows(c->plan, x->six, pf, x->filter_schema, &fs->allow, err);
    uint8_t *pre = NULL;
    if (pend) {
        hs_error ignored = {0};   /* a failed read: the usual path reports it */
        if (hs_io_read_head_finish(pend, as == HS_OK ? &pre : NULL, &ignored) != HS_OK)
            pre = NULL;
    }
    if (as != HS_OK)
        return as;
    if ((fs->allow && roaring_bitmap_is_empty(fs->allow)) || !e) {
        hs_free_aligned(pre);
        fs->skip = fs->allow && roaring_bitmap_is_empty(fs->allow);
        return HS_OK;
    }
    const tbl_vindex *vi = NULL;
    /* an allow-list this small is searched exactly (hnsw.c's
     * default_exact_threshold is at least max(2000, n / 50) rows outside
     * the two-hop band, which starts at n / 16): on an object store the
     * sidecar's head is enough, its exact vectors without the graph
     * (docs/storage.md: about half of its bytes).  Should the
     * search want the graph after all, search_index reads the whole. */
    uint64_t allowed = fs->allow ? roaring_bitmap_get_cardinality(fs->allow) : UINT64_MAX;
    uint64_t few = (uint64_t)pf->record_count / 50 > 2000 ? (uint64_t)pf->record_count / 50
                                                           : 2000;
    bool head = vs == HS_OK && e->head && allowed <= few &&
                hs_io_is_object_uri(hs_buf_cstr(path));
    if (vs == HS_OK && pre) {
        vs = tbl_vindex_acquire_read(hs_buf_cstr(path), c->col->field_id, pf->file_size,
                                     e->index_file_size, pf->record_count, c->so->dim, head,
                                     pre, pend_len, &vi, &why);
        pre = NULL;
        if (vs == HS_OK && tbl_vindex_is_partial(vi)) {
            fs->vi_path = hs_strdup(hs_buf_cstr(path));
            fs->vi_size = e->index_file_size;
            if (!fs->vi_path)
                vs = hs_err_nomem(&why, 256);
        }
    } else if (vs == HS_OK && head) {
        vs = tbl_vindex_acquire_head(hs_buf_cstr(path), c->col->field_id, pf->file_size,
                                     e->index_file_size, pf->record_count, c->so->dim, &vi,
                                     &why);
        if (vs == HS_OK && tbl_vindex_is_partial(vi)) {
            fs->vi_path = hs_strdup(hs_buf_cstr(path));
            fs->vi_size = e->index_file_size;
            if (!fs->vi_path)
                vs = hs_err_nomem(&why, 256);
        }
    } else if (vs == HS_OK) {
        vs = tbl_vindex_acquire(hs_buf_cstr(path), c->col->field_id, pf->file_size,
                                e->index_file_size, &vi, &why);
    }
    hs_free_aligned(pre);   /* not taken (no sidecar path) */
    bool use = false;
    if (vs == HS_OK) {
        tbl_vindex_info info;
        tbl_vindex_get_info(vi, &info);
        if (info.metric != c->metric && info.n_vectors > 0)
            vs = HS_CORRUPT_AT(&why, "%s: built for metric %s, the registry says %s",
                               hs_buf_cstr(path), hs_metric_name(info.metric),
                               hs_metric_name(c->metric));
        else if (info.n_rows != pf->record_count)
            vs = HS_CORRUPT_AT(&why, "%s: vector index covers %" PRId64 " rows, the data file "
                               "has %" PRId64, hs_buf_cstr(path), info.n_rows,
                               pf->record_count);
        else
            /* another dimension: the exact search names the row */
            use = info.dim == c->so->dim || info.n_vectors == 0;
    }
    if (vs == HS_OK && use && fs->allow)
        vs = tbl_vindex_ids_of(vi, fs->allow, &fs->ids, &why);
    /* built once for every query of the call and of the kept preparation */
    if (vs == HS_OK && use && fs->ids && tbl_vindex_hnsw(vi))
        vs = hnsw_allow_bits(tbl_vindex_hnsw(vi), fs->ids, &fs->ids_bits, &why);
    if (vs == HS_OK && use) {
        fs->vi = vi;
        fs->vecs = tbl_vindex_has_vectors(vi);
        return HS_OK;
    }
    tbl_vindex_release(vi);
    if (vs == HS_NOMEM || vs == HS_CANCELLED || vs == HS_INVALID || vs == HS_INTERNAL) {
        if (err)
            *err = why;
        return vs;
    }
    if (vs != HS_OK)
        skip_warning(pf->path, &why);
    return HS_OK;
}

static void fstates_free(fstate *fs, int n)
{
    for (int i = 0; fs && i < n; i++) {
        tbl_bitmap_free(fs[i].allow);
        tbl_bitmap_free(fs[i].ids);
        hs_free(fs[i].ids_bits);
        tbl_vindex_release(fs[i].vi);
        hs_free(fs[i].vi_path);
    }
    hs_free(fs);
}

/* Threads for a call's jobs: HS_SEARCH_THREADS, else the cores (at most 8),
 * never more than the jobs. */
static int search_threads(int64_t n_jobs)
{
    if (n_jobs <= 1)
        return 1;     /* no sysconf: glibc reads /sys for it, per call */
    long set = (long)hs_cfg_get(HS_CFG_SEARCH_THREADS);
    long n = set > 0 ? set : sysconf(_SC_NPROCESSORS_ONLN);
    if (set <= 0 && n > 8)
        n = 8;
    if (n > n_jobs)
        n = (long)n_jobs;
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* A job on the pool: files [f0, f1) of the call for query q (prep: q < 0). */
typedef struct job {
    const prep_ctx *prep;     /* prep jobs */
    query_run run;            /* query jobs */
    int32_t f0, f1;
    hs_buf path;
} job;

static hs_status job_run(void *arg, hs_error *err)
{
    job *j = arg;
    hs_status st = HS_OK;
    for (int32_t f = j->f0; f < j->f1 && st == HS_OK; f++)
        st = j->prep ? prep_file(j->prep, f, &j->path, err) : search_one(&j->run, f, err);
    return st;
}

/* Runs fn on items[0..n) (item_size bytes each) on a pool of `threads`
 * of its own (inline when 1); the first failure is returned. */
static hs_status run_on_pool(hs_task_fn fn, void *items, size_t item_size, int64_t n, int threads,
                             hs_error *err)
{
    char *it = items;
    if (threads <= 1 || n <= 1) {
        hs_status st = HS_OK;
        for (int64_t i = 0; i < n && st == HS_OK; i++)
            st = fn(it + (size_t)i * item_size, err);
        return st;
    }
    hs_pool *pool = NULL;
    hs_group *g = NULL;
    hs_status st = hs_pool_create(threads, &pool, err);
    if (st == HS_OK)
        st = hs_group_create(pool, &g, err);
    for (int64_t i = 0; i < n && st == HS_OK; i++)
        if (hs_group_submit(g, fn, it + (size_t)i * item_size) != HS_OK)
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
    return st;
}

static hs_status run_jobs(job *jobs, int64_t n, int threads, hs_error *err)
{
    return run_on_pool(job_run, jobs, sizeof *jobs, n, threads, err);
}

/* Files prepared at once on an object store: io/s3.c's parallel limit. */
#define PREP_IO_THREADS 16

/* Prepares every file (in parallel when there are several).  On an object
 * store preparing a file is mostly waiting for its filter sidecar and its
 * vector sidecar, so every file (up to PREP_IO_THREADS) gets a thread of its
 * own whatever the core count: the sidecars of all candidate files are
 * requested in one round, not in waves of as many files as there are
 * search threads. */
static hs_status prep_files(const prep_ctx *x, hs_error *err)
{
    int n = x->c->plan->n_files;
    if (n == 0)
        return HS_OK;
    int threads = search_threads(n);
    if (n > 1 && hs_io_is_object_uri(x->c->plan->files[0].path))
        threads = n < PREP_IO_THREADS ? n : PREP_IO_THREADS;
    job *jobs = hs_calloc((size_t)n, sizeof *jobs);
    if (!jobs)
        return hs_err_nomem(err, (size_t)n * sizeof *jobs);
    for (int i = 0; i < n; i++)
        jobs[i] = (job){.prep = x, .f0 = i, .f1 = i + 1};
    if (threads <= 1) {   /* one job over every file: one path buffer */
        jobs[0].f1 = n;
        n = 1;
    }
    hs_status st = run_jobs(jobs, n, threads, err);
    for (int i = 0; i < n; i++)
        hs_buf_free(&jobs[i].path);
    hs_free(jobs);
    return st;
}

/* Runs n_queries queries (queries: n_queries * dim floats) over every file:
 * one query with several files runs a job per file; several queries run a
 * job per query (over all files).  Each query's winners, sorted nearest
 * first, go to win[q] / n_win[q] (hs_malloc'd, caller frees). */
static hs_status run_queries(const search_call *c, const float *queries, int n_queries,
                             cand **win, size_t *n_win, hs_error *err)
{
    int nf = c->plan->n_files;
    bool per_file = n_queries == 1 && nf > 1;
    int64_t n_jobs = per_file ? nf : n_queries;
    job *jobs = hs_calloc((size_t)n_jobs, sizeof *jobs);
    if (!jobs)
        return hs_err_nomem(err, (size_t)n_jobs * sizeof *jobs);
    hs_status st = HS_OK;
    for (int64_t i = 0; i < n_jobs && st == HS_OK; i++) {
        job *j = &jobs[i];
        int q = per_file ? 0 : (int)i;
        j->run.c = c;
        j->run.q = queries + (size_t)q * (size_t)c->so->dim;
        j->run.top.k = c->k;
        j->f0 = per_file ? (int32_t)i : 0;
        j->f1 = per_file ? (int32_t)i + 1 : nf;
        if (c->k && !(j->run.top.h = hs_malloc(c->k * sizeof(cand))))
            st = hs_err_nomem(err, c->k * sizeof(cand));
    }
    if (st == HS_OK && c->k > 0)
        st = run_jobs(jobs, n_jobs, search_threads(n_jobs), err);
    for (int q = 0; st == HS_OK && q < n_queries; q++) {
        topk t = {.k = c->k};
        if (c->k && !(t.h = hs_malloc(c->k * sizeof(cand)))) {
            st = hs_err_nomem(err, c->k * sizeof(cand));
            break;
        }
        for (int64_t i = per_file ? 0 : q; i < (per_file ? n_jobs : q + 1); i++)
            for (size_t x = 0; x < jobs[i].run.top.n; x++)
                topk_offer(&t, jobs[i].run.top.h[x]);
        if (t.n > 1)
            qsort(t.h, t.n, sizeof(cand), cand_cmp);
        win[q] = t.h;
        n_win[q] = t.n;
    }
    for (int64_t i = 0; i < n_jobs; i++) {
        hs_free(jobs[i].run.top.h);
        hs_free(jobs[i].run.hits);
    }
    hs_free(jobs);
    return st;
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
/* materializing the winners                                           */

typedef struct collect {
    hs_column **cols;         /* the columns being appended to, by batch column */
    int n;
    int64_t rows;
} collect;

static hs_status collect_batch(void *ctx, hs_batch *b, hs_error *err)
{
    collect *c = ctx;
    hs_status st = b->n_cols == c->n ? HS_OK
                                     : hs_err_set(err, HS_INTERNAL, "search: read %d columns, "
                                                  "asked for %d", b->n_cols, c->n);
    for (int i = 0; i < c->n && st == HS_OK; i++)
        st = hs_col_append_column(c->cols[i], b->cols[i], err);
    c->rows += b->n_rows;
    hs_batch_free(b);
    return st;
}

/* Appends the rows at positions `rows` of data file pf (live rows, read in
 * position order, conformed to rs as scans do) to cols (one per child of
 * rs). */
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

/* Whether the vector column `vf` (output type) of a file can be taken from
 * its sidecar: one that holds the exact vectors, of a dimension the type
 * admits. */
static bool vectors_from_sidecar(const fstate *fs, const hs_field *vf)
{
    if (!fs->vi || !fs->vecs)
        return false;
    tbl_vindex_info info;
    tbl_vindex_get_info(fs->vi, &info);
    return vf->type == HS_TYPE_LIST || (vf->type == HS_TYPE_FIXED_LIST &&
                                        (info.n_vectors == 0 || vf->width == info.dim));
}

/* Appends the vectors of positions `rows` (ascending) of one file to c (a
 * list<float> or fixed_size_list<float> column) from the sidecar: position
 * -> graph id -> the vector in place; a row without a vector is null. */
static hs_status append_sidecar_vectors(const tbl_vindex *vi, const roaring_bitmap_t *rows,
                                        hs_column *c, hs_error *err)
{
    tbl_vindex_info info;
    tbl_vindex_get_info(vi, &info);
    if (c->n_children != 1 || c->children[0]->type != HS_TYPE_FLOAT32)
        return hs_err_set(err, HS_INTERNAL, "search: vector column is not a list of float");
    roaring_uint32_iterator_t it;
    roaring_init_iterator(rows, &it);
    for (; it.has_value; roaring_advance_uint32_iterator(&it)) {
        int64_t id = tbl_vindex_id_of(vi, it.current_value);
        const float *v = id >= 0 ? tbl_vindex_vector(vi, (uint32_t)id) : NULL;
        hs_status st;
        if (!v) {
            st = hs_col_append_null(c);
        } else {
            st = hs_col_append_fixed_n(c->children[0], v, info.dim);
            if (st == HS_OK)
                st = hs_col_list_end(c);
        }
        if (st != HS_OK)
            return hs_err_nomem(err, (size_t)info.dim * sizeof(float));
    }
    return HS_OK;
}

/* The winners of every query as unique rows (file, position), sorted. */
static hs_status unique_rows(cand *const *win, const size_t *n_win, int n_queries, cand **out,
                             size_t *n_out, hs_error *err)
{
    size_t n = 0;
    for (int q = 0; q < n_queries; q++)
        n += n_win[q];
    cand *u = hs_malloc((n + 1) * sizeof *u);
    if (!u)
        return hs_err_nomem(err, n * sizeof *u);
    size_t at = 0;
    for (int q = 0; q < n_queries; q++)
        for (size_t i = 0; i < n_win[q]; i++) {
            u[at] = win[q][i];
            u[at++].d = 0;
        }
    qsort(u, n, sizeof *u, cand_cmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || u[m - 1].file != u[i].file || u[m - 1].pos != u[i].pos)
            u[m++] = u[i];
    *out = u;
    *n_out = m;
    return HS_OK;
}

/* The rows of one file that read_unique reads (u[i0] is the first) */
typedef struct file_rows {
    const tbl_plan_file *pf;
    const hs_field *schema;   /* what is read from the file (rs or rs less the vector) */
    roaring_bitmap_t *rows;
    hs_column **cols;         /* one per child of schema; NULL: read in order instead */
    bool from_sidecar;        /* the vector column comes from the sidecar */
    size_t i0;
} file_rows;

static hs_status file_rows_read(void *arg, hs_error *err)
{
    file_rows *fr = arg;
    if (fr->schema->n_children == 0)   /* no column of this file to read */
        return HS_OK;
    return read_rows(fr->pf, fr->schema, fr->rows, fr->cols, err);
}

/* Object stores: the files' rows are read in parallel, each file into
 * columns of its own (then appended in order), so that the page GETs of
 * all the winners' files go out in one round, not one file after another. */
static hs_status read_files_parallel(file_rows *fr, int n, hs_error *err)
{
    hs_status st = HS_OK;
    for (int i = 0; i < n && st == HS_OK; i++) {
        int nc = fr[i].schema->n_children;
        if (!(fr[i].cols = hs_calloc((size_t)nc + 1, sizeof *fr[i].cols)))
            st = hs_err_nomem(err, 64);
        for (int k = 0; k < nc && st == HS_OK; k++)
            st = hs_col_create(&fr[i].schema->children[k], 0, &fr[i].cols[k], err);
    }
    if (st == HS_OK)
        st = run_on_pool(file_rows_read, fr, sizeof *fr, n,
                         n < PREP_IO_THREADS ? n : PREP_IO_THREADS, err);
    return st;
}

/* Reads the columns of rs for the unique rows u[0..n) (sorted by file and
 * position) into all[] (one column per child of rs, row i = u[i]).  The
 * vector column (index vcol in rs, -1 when not projected) comes from the
 * sidecar of files whose sidecar holds the exact vectors; everything else
 * through the file's own read (one per file, exactly those rows; on an
 * object store the files in parallel, read_files_parallel). */
static hs_status read_unique(const search_call *c, const hs_field *rs, int vcol, const cand *u,
                             size_t n, hs_column **all, hs_error *err)
{
    int nc = rs->n_children;
    hs_field rest = {0};            /* rs without the vector column */
    hs_field vonly = {0};           /* the vector column alone */
    hs_column **rest_cols = hs_calloc((size_t)nc + 1, sizeof *rest_cols);
    hs_status st = rest_cols ? HS_OK : hs_err_nomem(err, 64);
    hs_field_init(&rest, "", HS_TYPE_STRUCT, false);
    hs_field_init(&vonly, "", HS_TYPE_STRUCT, false);
    int n_rest = 0;
    for (int i = 0; st == HS_OK && i < nc; i++) {
        if (i == vcol) {
            st = add_field(&vonly, &rs->children[i], err);
            continue;
        }
        st = add_field(&rest, &rs->children[i], err);
        rest_cols[n_rest++] = all[i];
    }
    /* the files' row sets */
    file_rows *fr = NULL;
    int n_fr = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || u[i].file != u[i - 1].file)
            n_fr++;
    if (st == HS_OK && n_fr > 0 && !(fr = hs_calloc((size_t)n_fr, sizeof *fr)))
        st = hs_err_nomem(err, (size_t)n_fr * sizeof *fr);
    for (size_t i = 0, k = 0; st == HS_OK && i < n; k++) {
        file_rows *f = &fr[k];
        if (!(f->rows = roaring_bitmap_create())) {
            st = hs_err_nomem(err, 64);
            break;
        }
        size_t j = i;
        for (; j < n && u[j].file == u[i].file; j++)
            roaring_bitmap_add(f->rows, u[j].pos);
        f->pf = &c->plan->files[u[i].file];
        f->from_sidecar = vcol >= 0 && vectors_from_sidecar(&c->fs[u[i].file],
                                                            &rs->children[vcol]);
        f->schema = f->from_sidecar ? &rest : rs;
        f->i0 = i;
        i = j;
    }
    bool parallel = st == HS_OK && n_fr > 1 && hs_io_is_object_uri(fr[0].pf->path);
    if (parallel)
        st = read_files_parallel(fr, n_fr, err);
    for (int k = 0; st == HS_OK && k < n_fr; k++) {
        file_rows *f = &fr[k];
        hs_column **dst = f->from_sidecar ? rest_cols : all;
        if (f->schema->n_children == 0) {
            /* nothing to read from the file */
        } else if (parallel) {
            for (int x = 0; x < f->schema->n_children && st == HS_OK; x++)
                st = hs_col_append_column(dst[x], f->cols[x], err);
        } else {
            st = read_rows(f->pf, f->schema, f->rows, dst, err);
        }
        if (st == HS_OK && f->from_sidecar)
            st = append_sidecar_vectors(c->fs[u[f->i0].file].vi, f->rows, all[vcol], err);
    }
    for (int k = 0; fr && k < n_fr; k++) {
        roaring_bitmap_free(fr[k].rows);
        for (int x = 0; fr[k].cols && x < fr[k].schema->n_children; x++)
            hs_col_free(fr[k].cols[x]);
        hs_free(fr[k].cols);
    }
    hs_free(fr);
    hs_field_clear(&rest);
    hs_field_clear(&vonly);
    hs_free(rest_cols);
    return st;
}

/* Appends a column `name` of `type` (nullable, no field id) to schema. */
static hs_status add_plain(hs_field *schema, const char *name, hs_type type, hs_error *err)
{
    hs_field f;
    hs_field_init(&f, name, type, false);
    if (!f.name || hs_field_add_child(schema, &f) != HS_OK)   /* frees f on failure */
        return hs_err_nomem(err, 64);
    return HS_OK;
}

/* Builds the result batch: for each query in order its winners, nearest
 * first; with_qi: a first column query_index (int32). */
/* Candidates of an append stream's tail (near-real-time rows): file
 * TAIL_FILE, pos = the row in the tail batch; they sort after every data
 * file on ties. */
#define TAIL_FILE INT32_MAX

static hs_status materialize(const search_call *c, const hs_field *rs, const char *dist_name,
                             cand *const *win, const size_t *n_win, int n_queries, bool with_qi,
                             hs_column **tail_cols, hs_batch **out, hs_error *err)
{
    *out = NULL;
    int nc = rs->n_children;
    int vcol = -1;
    for (int i = 0; i < nc; i++)
        if (rs->children[i].field_id == c->col->field_id)
            vcol = i;
    size_t n_out = 0;
    for (int q = 0; q < n_queries; q++)
        n_out += n_win[q];
    cand *u = NULL;
    size_t nu = 0;
    int lead = with_qi ? 1 : 0;
    int64_t *take = hs_malloc((n_out + 1) * sizeof *take);
    hs_column **all = hs_calloc((size_t)nc + 1, sizeof *all);
    hs_column **cols = hs_calloc((size_t)nc + 3, sizeof *cols);
    hs_status st = take && all && cols ? HS_OK : hs_err_nomem(err, n_out * 16);
    if (st == HS_OK)
        st = unique_rows(win, n_win, n_queries, &u, &nu, err);
    for (int i = 0; st == HS_OK && i < nc; i++)
        st = hs_col_create(&rs->children[i], (int64_t)nu, &all[i], err);
    /* tail candidates sort last in u: the data files' rows are u[0..nu_files) */
    size_t nu_files = 0;
    while (nu_files < nu && u[nu_files].file != TAIL_FILE)
        nu_files++;
    if (st == HS_OK)
        st = read_unique(c, rs, vcol, u, nu_files, all, err);
    for (int i = 0; st == HS_OK && tail_cols && i < nc; i++)
        st = hs_col_append_column(all[i], tail_cols[i], err);
    /* output row r is the row of (file, pos) in `all`: its index in u, or
     * nu_files + pos for a tail row */
    size_t r = 0;
    for (int q = 0; st == HS_OK && q < n_queries; q++)
        for (size_t i = 0; i < n_win[q]; i++) {
            cand key = win[q][i];
            key.d = 0;
            if (key.file == TAIL_FILE) {
                take[r++] = (int64_t)(nu_files + key.pos);
                continue;
            }
            const cand *hit = bsearch(&key, u, nu_files, sizeof *u, cand_cmp);
            take[r++] = hit ? (int64_t)(hit - u) : 0;
        }
    for (int i = 0; st == HS_OK && i < nc; i++)
        st = hs_col_take(all[i], take, (int64_t)n_out, &cols[lead + i], err);
    hs_field schema = {0};
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    if (st == HS_OK && with_qi)
        st = add_plain(&schema, "query_index", HS_TYPE_INT32, err);
    for (int i = 0; st == HS_OK && i < nc; i++)
        st = add_field(&schema, &rs->children[i], err);
    if (st == HS_OK)
        st = add_plain(&schema, dist_name, HS_TYPE_FLOAT64, err);
    if (st == HS_OK && with_qi)
        st = hs_col_create(&schema.children[0], (int64_t)n_out, &cols[0], err);
    for (int q = 0; st == HS_OK && with_qi && q < n_queries; q++)
        for (size_t i = 0; i < n_win[q] && st == HS_OK; i++) {
            int32_t qi = q;
            if (hs_col_append_fixed(cols[0], &qi) != HS_OK)
                st = hs_err_nomem(err, n_out * 4);
        }
    if (st == HS_OK)
        st = hs_col_create(&schema.children[lead + nc], (int64_t)n_out, &cols[lead + nc], err);
    for (int q = 0; st == HS_OK && q < n_queries; q++)
        for (size_t i = 0; i < n_win[q] && st == HS_OK; i++) {
            float od = win[q][i].d;
            /* a cosine distance of a zero vector is undefined: NaN (sorted last) */
            double d = c->metric == HS_METRIC_COSINE && isinf(od) ? NAN
                                                                  : vd_user_dist(c->metric, od);
            if (hs_col_append_fixed(cols[lead + nc], &d) != HS_OK)
                st = hs_err_nomem(err, n_out * 8);
        }
    if (st == HS_OK) {
        st = tbl_batch_from_cols(&schema, cols, lead + nc + 1, (int64_t)n_out, out, err);
    } else if (cols) {
        for (int i = 0; i < lead + nc + 1; i++)
            hs_col_free(cols[i]);
    }
    hs_field_clear(&schema);
    hs_free(cols);
    for (int i = 0; all && i < nc; i++)
        hs_col_free(all[i]);
    hs_free(all);
    hs_free(take);
    hs_free(u);
    return st;
}

/* ------------------------------------------------------------------ */
/* the clustered path                                                  */

/*
 * A filter `c = v` or `c IN (...)` on the cluster column of a vector index
 * declared with one (table/vcluster.h), a projection within the block's
 * columns (the included ones, the cluster column, the vector column): per
 * data file one ranged GET of the value's block (several values' blocks
 * that lie together: one GET), found through the registry's directory
 * without reading the sidecar's head, the data file's footer or a page;
 * exact search over the blocks' vectors; the winners' columns from the
 * blocks.  Same answer as the path above (ties by file and position;
 * position deletes applied).  HS_UNSUPPORTED (nothing done) sends the
 * search down the path above: another filter or projection, a file without
 * a usable directory entry (not live by path and size, no section, another
 * metric), equality deletes, a tail; and a block that fails its checks
 * (a warning and the skip counter, as for a bad sidecar).
 */

#define CL_MAX_KEYS 64

typedef struct cl_read {
    const char *uri;          /* resolved sidecar path (cl_call.paths) */
    uint64_t off, len, size;
    uint8_t *buf;             /* hs_malloc_aligned(len) */
    bool cached;              /* came from the section cache */
    hs_status st;
    hs_error err;
} cl_read;

typedef struct cl_block {
    int32_t file;
    int key;                  /* index into cl_call.keys */
    int read;                 /* cl_read holding it */
    uint64_t at;              /* offset in that read */
    uint64_t len;
    uint32_t rows;
    tbl_vcblock b;
    roaring_bitmap_t *allow;  /* local indices not deleted; NULL = all */
} cl_block;

typedef struct cl_cand {
    cand c;
    int blk;
    uint32_t li;              /* row in the block */
} cl_cand;

static int cl_cand_cmp(const void *a, const void *b)
{
    return cand_cmp(&((const cl_cand *)a)->c, &((const cl_cand *)b)->c);
}

static hs_status cl_read_run(void *arg, hs_error *err)
{
    (void)err;
    cl_read *r = arg;
    if (!(r->buf = hs_malloc_aligned((size_t)r->len)))
        r->st = hs_err_nomem(&r->err, (size_t)r->len);
    else if (!(r->cached = hs_io_is_object_uri(r->uri) &&
                           tbl_vcache_read(r->uri, r->size, r->off, r->len, r->buf)))
        r->st = hs_io_read_range(r->uri, r->buf, r->off, r->len, r->size, &r->err);
    return HS_OK;   /* each read's status is its own */
}

/* The filter's values when it is `col = v` or `col IN (...)` on one column
 * (exactly: no residual); else 0. */
static int cl_filter_keys(const tbl_pred *pred, int32_t *fid, tbl_vcl_key *keys)
{
    const pr_expr *e = pred->exact && pred->filter ? pred->filter->root : NULL;
    if (!e || !((e->kind == PR_E_CMP && e->op == PR_EQ) || e->kind == PR_E_IN) || !e->vals ||
        e->n_lits < 1 || e->n_lits > CL_MAX_KEYS)
        return 0;
    for (int i = 0; i < e->n_lits; i++) {
        const pr_val *v = &e->vals[i];
        if (v->kind == PR_V_I64)
            keys[i] = (tbl_vcl_key){true, v->i, NULL, 0};
        else if (v->kind == PR_V_BYTES)
            keys[i] = (tbl_vcl_key){false, 0, v->p, v->n};
        else
            return 0;
    }
    *fid = e->field_id;
    return e->n_lits;
}

/* The registry entry of a clustered sidecar for pf, or NULL. */
static const ix_entry *cl_entry(const vreg *r, const tbl_plan_file *pf, int32_t field_id,
                                hs_metric metric)
{
    for (int i = ix_registry_first(r->reg, pf->path); i >= 0; i = ix_registry_next(r->reg, i)) {
        const ix_entry *e = &r->reg->entries[i];
        if (e->field_id != field_id || e->data_file_size != pf->file_size || !e->cluster ||
            !tbl_vindex_is_vector_kind(e->kind))
            continue;
        int d = ix_registry_find_decl(r->reg, field_id, e->kind);
        hs_metric m;
        if (d >= 0 && decl_metric(e->kind, r->reg->decls[d].params, &m) && m == metric)
            return e;
    }
    return NULL;
}

/* Whether every projected column can come from the blocks. */
static bool cl_projection_ok(const hs_field *rs, const tbl_vcdir *dir, const hs_field *vcol)
{
    for (int i = 0; i < rs->n_children; i++) {
        const hs_field *f = &rs->children[i];
        bool ok = f->field_id == dir->cluster_fid ||
                  (f->field_id == vcol->field_id && f->type == HS_TYPE_LIST);
        for (int k = 0; !ok && k < dir->n_include; k++)
            ok = f->field_id == dir->include_fid[k];
        if (!ok)
            return false;
    }
    return true;
}

/* Appends the value of projected column f of block row (bk, li) to col. */
static hs_status cl_append(const cl_block *bk, uint32_t li, const hs_field *f,
                           const tbl_vcl_key *key, int32_t cluster_fid, int32_t vcol_fid,
                           const tbl_vcdir *dir, hs_column *col, hs_error *err)
{
    hs_status st = HS_OK;
    if (f->field_id == cluster_fid) {
        if (key->is_int) {
            uint8_t v[8];
            memcpy(v, &key->i, 8);   /* little-endian: the low bytes are the narrower value */
            st = hs_col_append_fixed(col, v);
        } else {
            st = hs_col_append_bytes(col, key->p, key->n);
        }
    } else if (f->field_id == vcol_fid) {
        const float *v = bk->b.vecs + (size_t)li * bk->b.dim;
        st = hs_col_append_fixed_n(col->children[0], v, bk->b.dim);
        if (st == HS_OK)
            st = hs_col_list_end(col);
    } else {
        int k = 0;
        while (k < dir->n_include && dir->include_fid[k] != f->field_id)
            k++;
        const tbl_vcinc *ic = &bk->b.inc[k];
        if (!hs_bit_get(ic->validity, li))
            st = hs_col_append_null(col);
        else if (ic->offsets)
            st = hs_col_append_bytes(col, ic->values + ic->offsets[li],
                                     ic->offsets[li + 1] - ic->offsets[li]);
        else
            st = hs_col_append_fixed(col, ic->values + (size_t)li * ic->width);
    }
    return st == HS_OK ? HS_OK : hs_err_nomem(err, 64);
}

/* Whether block bk's included columns have the projection's types. */
static bool cl_types_ok(const cl_block *bk, const hs_field *rs, const tbl_vcdir *dir)
{
    for (int i = 0; i < rs->n_children; i++)
        for (int k = 0; k < dir->n_include; k++)
            if (dir->include_fid[k] == rs->children[i].field_id) {
                const tbl_vcinc *ic = &bk->b.inc[k];
                const hs_field *f = &rs->children[i];
                if (ic->type != f->type ||
                    (ic->width && (int)ic->width != hs_type_width(f)))
                    return false;
            }
    return true;
}

static hs_status clustered_search(const search_call *c, const vreg *vr, const hs_field *rs,
                                  const char *dist_name, const float *queries, int n_queries,
                                  bool with_qi, hs_batch **out, hs_error *err)
{
    *out = NULL;
    const tbl_plan *plan = c->plan;
    tbl_vcl_key keys[CL_MAX_KEYS];
    int32_t cfid = -1;
    int n_keys = cl_filter_keys(&plan->pred, &cfid, keys);
    if (n_keys == 0 || !vr->loaded || plan->n_files == 0)
        return HS_UNSUPPORTED;
    int nf = plan->n_files;
    tbl_vcdir *dirs = hs_calloc((size_t)nf, sizeof *dirs);
    hs_buf *paths = hs_calloc((size_t)nf, sizeof *paths);
    const ix_entry **ents = hs_calloc((size_t)nf, sizeof *ents);
    hs_buf blocks = {0}, reads = {0};
    hs_status st = dirs && paths && ents ? HS_OK : hs_err_nomem(err, (size_t)nf * 64);
    /* every file: a live entry with a directory on the filter's column, no
     * equality deletes; the projection from the blocks */
    for (int f = 0; st == HS_OK && f < nf; f++) {
        const tbl_plan_file *pf = &plan->files[f];
        if (!(ents[f] = cl_entry(vr, pf, c->col->field_id, c->metric))) {
            st = HS_UNSUPPORTED;
            break;
        }
        for (int d = 0; d < pf->n_deletes; d++)
            if (pf->deletes[d].kind == ICE_CONTENT_EQUALITY_DELETES)
                st = HS_UNSUPPORTED;
        hs_error pe = {0};
        if (st == HS_OK && tbl_vcdir_parse(ents[f]->cluster, &dirs[f], &pe) != HS_OK)
            st = HS_UNSUPPORTED;
        if (st == HS_OK && (dirs[f].cluster_fid != cfid ||
                            !cl_projection_ok(rs, &dirs[f], c->col)))
            st = HS_UNSUPPORTED;
        if (st == HS_OK && ix_resolve_path(vr->location, ents[f]->index_file, &paths[f]) != HS_OK)
            st = hs_err_nomem(err, 256);
    }
    /* the blocks, and one read per run of adjacent blocks of a file */
    for (int f = 0; st == HS_OK && f < nf; f++) {
        size_t first = HS_VEC_LEN(&blocks, cl_block);
        for (int k = 0; st == HS_OK && k < n_keys; k++) {
            bool found = false, dup = false;
            cl_block bk = {.file = f, .key = k};
            hs_error de = {0};
            if (tbl_vcdir_find(&dirs[f], &keys[k], ents[f]->index_file_size, &found, &bk.at,
                               &bk.len, &bk.rows, &de) != HS_OK) {
                skip_warning(plan->files[f].path, &de);
                st = HS_UNSUPPORTED;
                break;
            }
            for (size_t j = first; found && j < HS_VEC_LEN(&blocks, cl_block); j++)
                dup |= HS_VEC_AT(&blocks, cl_block, j).at == bk.at;   /* IN (a, a) */
            if (found && !dup && hs_buf_append(&blocks, &bk, sizeof bk) != HS_OK)
                st = hs_err_nomem(err, sizeof bk);
        }
        /* sort this file's blocks by offset (few: insertion sort), then runs */
        cl_block *a = (cl_block *)(void *)blocks.data;
        size_t n = HS_VEC_LEN(&blocks, cl_block);
        for (size_t i = first + 1; st == HS_OK && i < n; i++)
            for (size_t j = i; j > first && a[j - 1].at > a[j].at; j--) {
                cl_block t = a[j];
                a[j] = a[j - 1];
                a[j - 1] = t;
            }
        for (size_t i = first; st == HS_OK && i < n; i++) {
            cl_read *last = HS_VEC_LEN(&reads, cl_read)
                                ? &HS_VEC_AT(&reads, cl_read, HS_VEC_LEN(&reads, cl_read) - 1)
                                : NULL;
            if (i > first && last && last->off + last->len == a[i].at) {
                a[i].read = (int)HS_VEC_LEN(&reads, cl_read) - 1;
                a[i].at -= last->off;
                last->len += a[i].len;
                continue;
            }
            cl_read r = {.uri = hs_buf_cstr(&paths[f]), .off = a[i].at, .len = a[i].len,
                         .size = (uint64_t)ents[f]->index_file_size};
            a[i].read = (int)HS_VEC_LEN(&reads, cl_read);
            a[i].at = 0;
            if (hs_buf_append(&reads, &r, sizeof r) != HS_OK)
                st = hs_err_nomem(err, sizeof r);
        }
    }
    size_t n_reads = HS_VEC_LEN(&reads, cl_read), n_blocks = HS_VEC_LEN(&blocks, cl_block);
    cl_read *rd = (cl_read *)(void *)reads.data;
    cl_block *bk = (cl_block *)(void *)blocks.data;
    if (st == HS_OK && n_reads > 0) {
        int threads = n_reads > PREP_IO_THREADS ? PREP_IO_THREADS : (int)n_reads;
        st = run_on_pool(cl_read_run, rd, sizeof *rd, (int64_t)n_reads, threads, err);
    }
    for (size_t i = 0; st == HS_OK && i < n_reads; i++)
        if (rd[i].st == HS_NOMEM)
            st = hs_err_nomem(err, (size_t)rd[i].len);
    /* check every block; a bad one sends the search down the other path */
    for (size_t i = 0; st == HS_OK && i < n_blocks; i++) {
        cl_block *b = &bk[i];
        const tbl_plan_file *pf = &plan->files[b->file];
        const cl_read *r = &rd[b->read];
        hs_error be = {0};
        hs_status bs = r->st;
        if (bs != HS_OK)
            be = r->err;
        if (bs == HS_OK)
            bs = tbl_vcblock_decode(r->buf + b->at, (size_t)b->len, pf->record_count, &b->b, &be);
        if (bs == HS_OK && (b->b.rows != b->rows || b->b.dim != (uint32_t)c->so->dim ||
                            b->b.key_hash != tbl_vcl_key_hash(&keys[b->key]) ||
                            b->b.n_include != dirs[b->file].n_include ||
                            !cl_types_ok(b, rs, &dirs[b->file])))
            bs = HS_CORRUPT_AT(&be, "cluster block at %" PRIu64 " does not match its directory "
                               "entry (rows, dimension, value or columns)", r->off + b->at);
        if (bs != HS_OK) {
            hs_err_prefix(&be, "%s", r->uri);
            skip_warning(pf->path, &be);
            st = HS_UNSUPPORTED;
        }
    }
    /* position deletes: once per file that has blocks */
    for (int f = 0; st == HS_OK && f < nf; f++) {
        if (plan->files[f].n_deletes == 0)
            continue;
        bool any = false;
        for (size_t i = 0; i < n_blocks; i++)
            any |= bk[i].file == f;
        roaring_bitmap_t *del = NULL;
        if (any)
            st = tbl_plan_load_deletes(&plan->files[f], &del, err);
        for (size_t i = 0; st == HS_OK && del && i < n_blocks; i++) {
            if (bk[i].file != f)
                continue;
            if (!(bk[i].allow = roaring_bitmap_create())) {
                st = hs_err_nomem(err, 64);
                break;
            }
            for (uint32_t li = 0; li < bk[i].b.rows; li++)
                if (!roaring_bitmap_contains(del, bk[i].b.pos[li]))
                    roaring_bitmap_add(bk[i].allow, li);
        }
        if (del)
            roaring_bitmap_free(del);
    }
    /* search: per query, per block an exact top k, then the merge */
    size_t k = c->k, n_out = 0;
    cl_cand *win = NULL;
    size_t *n_win = hs_calloc((size_t)n_queries, sizeof *n_win);
    cl_cand *all = hs_malloc((n_blocks * k + 1) * sizeof *all);
    hnsw_hit *hits = hs_malloc((k + 1) * sizeof *hits);
    if (st == HS_OK && (!n_win || !all || !hits ||
                        !(win = hs_malloc(((size_t)n_queries * k + 1) * sizeof *win))))
        st = hs_err_nomem(err, n_blocks * k * sizeof *all);
    for (int q = 0; st == HS_OK && q < n_queries; q++) {
        const float *qv = queries + (size_t)q * c->so->dim;
        size_t na = 0;
        for (size_t i = 0; st == HS_OK && i < n_blocks; i++) {
            int nh = 0;
            if (bk[i].allow && roaring_bitmap_is_empty(bk[i].allow))
                continue;
            st = hnsw_exact_search(bk[i].b.vecs, bk[i].b.rows, bk[i].b.dim, c->metric, qv, (int)k,
                                   bk[i].allow, NULL, NULL, hits, &nh, err);
            for (int h = 0; st == HS_OK && h < nh; h++) {
                float d = isnan(hits[h].dist) ? INFINITY : hits[h].dist;
                all[na++] = (cl_cand){{d, bk[i].file, bk[i].b.pos[hits[h].id]}, (int)i,
                                      hits[h].id};
            }
        }
        if (st != HS_OK)
            break;
        qsort(all, na, sizeof *all, cl_cand_cmp);
        n_win[q] = na < k ? na : k;
        memcpy(win + n_out, all, n_win[q] * sizeof *all);
        n_out += n_win[q];
    }
    /* the answer: [query_index], the projection, the distance */
    int nc = rs->n_children, lead = with_qi ? 1 : 0;
    hs_field schema = {0};
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_column **cols = hs_calloc((size_t)nc + 2, sizeof *cols);
    if (st == HS_OK && !cols)
        st = hs_err_nomem(err, 64);
    if (st == HS_OK && with_qi)
        st = add_plain(&schema, "query_index", HS_TYPE_INT32, err);
    for (int i = 0; st == HS_OK && i < nc; i++)
        st = add_field(&schema, &rs->children[i], err);
    if (st == HS_OK)
        st = add_plain(&schema, dist_name, HS_TYPE_FLOAT64, err);
    for (int i = 0; st == HS_OK && i < lead + nc + 1; i++)
        st = hs_col_create(&schema.children[i], (int64_t)n_out, &cols[i], err);
    size_t r = 0;
    for (int q = 0; st == HS_OK && q < n_queries; q++)
        for (size_t i = 0; st == HS_OK && i < n_win[q]; i++, r++) {
            const cl_cand *w = &win[r];
            const cl_block *b = &bk[w->blk];
            int32_t qi = q;
            if (with_qi && hs_col_append_fixed(cols[0], &qi) != HS_OK)
                st = hs_err_nomem(err, 64);
            for (int j = 0; st == HS_OK && j < nc; j++)
                st = cl_append(b, w->li, &rs->children[j], &keys[b->key], cfid,
                               c->col->field_id, &dirs[b->file], cols[lead + j], err);
            double d = c->metric == HS_METRIC_COSINE && isinf(w->c.d)
                           ? NAN : vd_user_dist(c->metric, w->c.d);
            if (st == HS_OK && hs_col_append_fixed(cols[lead + nc], &d) != HS_OK)
                st = hs_err_nomem(err, 64);
        }
    if (st == HS_OK) {
        st = tbl_batch_from_cols(&schema, cols, lead + nc + 1, (int64_t)n_out, out, err);
    } else if (cols) {
        for (int i = 0; i < lead + nc + 1; i++)
            hs_col_free(cols[i]);
    }
    if (st == HS_OK)
        atomic_fetch_add(&g_files_clustered, nf);
    /* object stores: the whole sections of the files read, for the next
     * search of another value (in the background, after this answer) */
    for (size_t i = 0; st == HS_OK && i < n_blocks; i++) {
        const cl_read *rr = &rd[bk[i].read];
        if (!rr->cached && hs_io_is_object_uri(rr->uri))
            tbl_vcache_warm(rr->uri, rr->size, &dirs[bk[i].file]);
    }
    hs_field_clear(&schema);
    hs_free(cols);
    hs_free(win);
    hs_free(n_win);
    hs_free(all);
    hs_free(hits);
    for (size_t i = 0; i < n_blocks; i++)
        if (bk[i].allow)
            roaring_bitmap_free(bk[i].allow);
    for (size_t i = 0; i < n_reads; i++)
        hs_free_aligned(rd[i].buf);
    hs_buf_free(&blocks);
    hs_buf_free(&reads);
    for (int f = 0; dirs && f < nf; f++)
        tbl_vcdir_clear(&dirs[f]);
    for (int f = 0; paths && f < nf; f++)
        hs_buf_free(&paths[f]);
    hs_free(dirs);
    hs_free(paths);
    hs_free(ents);
    return st;
}

/* ------------------------------------------------------------------ */
/* the answer                                                          */

/* ------------------------------------------------------------------ */
/* entry points                                                        */

/* The vector of row i of column v (list or fixed_size_list of float32):
 * NULL when null; *dim its length. */
static const float *row_vector(const hs_column *v, int64_t i, int *dim)
{
    if (!hs_col_is_valid(v, i))
        return NULL;
    const hs_column *e = v->children[0];
    int64_t lo, hi;
    if (v->type == HS_TYPE_FIXED_LIST) {
        lo = i * v->width;
        hi = lo + v->width;
    } else {
        lo = HS_COL_OFFSETS(v)[i];
        hi = HS_COL_OFFSETS(v)[i + 1];
    }
    *dim = (int)(hi - lo);
    for (int64_t k = lo; k < hi; k++)
        if (!hs_col_is_valid(e, k))
            return NULL;   /* a vector with a null element has no distance */
    return HS_COL_VALUES(e, const float) + lo;
}

/* Near-real-time rows: the visible rows of t's append stream that pass the
 * filter join every query's candidates (exact distances; the tail is small,
 * bounded by the stream's memory budget), each winner list is cut to k
 * again, and *tail_cols get the tail rows' columns of rs for materialize
 * (caller frees them, rs->n_children of them). */
static hs_status tail_merge(const search_call *c, tbl_tail_view *tv, const hs_field *rs,
                            const hs_field *fsch, const tbl_pred *pred, int n_queries,
                            cand **win, size_t *n_win, hs_column ***tail_cols, hs_error *err)
{
    *tail_cols = NULL;
    hs_field trs = {0};
    hs_batch *all = NULL;
    hs_status st = hs_field_copy(rs, &trs) == HS_OK ? HS_OK : hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = add_field(&trs, c->col, err);
    for (int i = 0; st == HS_OK && i < fsch->n_children; i++)
        st = add_field(&trs, &fsch->children[i], err);
    int vpos = -1;
    for (int i = 0; i < trs.n_children; i++)
        if (trs.children[i].field_id == c->col->field_id)
            vpos = i;
    if (st == HS_OK)
        st = hs_batch_create(&trs, 0, &all, err);
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = tbl_tail_view_next(tv, &trs, pred, &trs, &b, err);
        if (st != HS_OK || !b)
            break;
        for (int i = 0; st == HS_OK && i < all->n_cols; i++)
            st = hs_col_append_column(all->cols[i], b->cols[i], err);
        all->n_rows += b->n_rows;
        hs_batch_free(b);
    }
    size_t k = (size_t)c->so->k;
    for (int q = 0; st == HS_OK && q < n_queries && all->n_rows > 0; q++) {
        const float *qv = c->so->query + (size_t)q * (size_t)c->so->dim;
        topk t = {.k = k, .h = hs_malloc((k + 1) * sizeof(cand))};
        if (!t.h) {
            st = hs_err_nomem(err, k * sizeof(cand));
            break;
        }
        for (size_t i = 0; i < n_win[q]; i++)
            topk_offer(&t, win[q][i]);
        for (int64_t i = 0; i < all->n_rows && st == HS_OK; i++) {
            int dim = 0;
            const float *v = row_vector(all->cols[vpos], i, &dim);
            if (!v)
                continue;
            if (dim != c->so->dim) {
                st = hs_err_set(err, HS_INVALID, "query vector has %d dimensions, column \"%s\" "
                                "has %d (a row of the append stream)", c->so->dim,
                                c->col->name, dim);
                break;
            }
            float d = vd_order_dist_f32(c->kern, c->metric, qv, v, (size_t)dim);
            topk_offer(&t, (cand){d == d ? d : INFINITY, TAIL_FILE, (uint32_t)i});
        }
        if (st != HS_OK) {
            hs_free(t.h);
            break;
        }
        if (t.n > 1)
            qsort(t.h, t.n, sizeof(cand), cand_cmp);
        hs_free(win[q]);
        win[q] = t.h;
        n_win[q] = t.n;
    }
    int nc = rs->n_children;
    if (st == HS_OK) {
        hs_column **cols = hs_calloc((size_t)nc + 1, sizeof *cols);
        if (!cols)
            st = hs_err_nomem(err, 64);
        for (int i = 0; st == HS_OK && i < nc; i++) {
            cols[i] = all->cols[i];   /* moved: rs's columns come first in trs */
            all->cols[i] = NULL;
        }
        *tail_cols = cols;
    }
    if (all) {
        for (int i = 0; i < all->n_cols; i++)
            hs_col_free(all->cols[i]);
        all->n_cols = 0;
        hs_batch_free(all);
    }
    hs_field_clear(&trs);
    return st;
}

static hs_status check_options(const hs_search_options *so, int n_queries, hs_error *err)
{
    if (!so)
        return hs_err_set(err, HS_INVALID, "search: no search options");
    if (!so->column || !*so->column)
        return hs_err_set(err, HS_INVALID, "search: no vector column given");
    if (!so->query || so->dim <= 0)
        return hs_err_set(err, HS_INVALID, "search: no query vector (dimension %d)", so->dim);
    if (so->k <= 0)
        return hs_err_set(err, HS_INVALID, "search: k must be > 0, got %d", so->k);
    if (n_queries <= 0)
        return hs_err_set(err, HS_INVALID, "search: %d queries (at least one)", n_queries);
    if (so->ef_search < 0 || so->nprobe < 0)
        return hs_err_set(err, HS_INVALID, "search: ef_search (%d) and nprobe (%d) must be >= 0",
                          so->ef_search, so->nprobe);
    if (so->rerank < 0 || so->rerank > 10000)
        return hs_err_set(err, HS_INVALID, "search: rerank = %d is outside [0, 10000]",
                          so->rerank);
    size_t n = (size_t)so->dim * (size_t)n_queries;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(so->query[i]))
            return hs_err_set(err, HS_INVALID, "search: query %zu element %zu is not finite "
                              "(NaN or infinity)", i / (size_t)so->dim, i % (size_t)so->dim);
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* the plan of an unfiltered search, kept by the handle                */

static void plan_cache_clear(hs_table *t)
{
    tbl_plan_free(t->search_plan);
    hs_free(t->search_plan_meta);
    t->search_plan = NULL;
    t->search_plan_meta = NULL;
}

/* The files of the last filtered search, as prep_files left them.  A
 * filtered search prepares per file the allowed positions (the filter's
 * index lookups and reads, minus deletes), the sidecar and the graph ids of
 * those positions: a cost that does not depend on the query vector, and
 * that made a filtered query 2-3x an unfiltered one (a 60,000-row file:
 * ~1 ms of the 1.5 ms at 50%).  Applications ask many queries with the
 * same filter (a tenant, a category), so the handle keeps the last one.
 * What the key pins down decides every part of it: the metadata file
 * (immutable; deletes, files and the index registry are in it), the
 * snapshot and schema, the filter text, the column and metric; the
 * sidecars stay acquired while kept, so their graph ids stay valid.
 * The setting search_filter_cache = 0 (HS_SEARCH_FILTER_CACHE=0) turns it
 * off (benchmarks, tests). */
typedef struct tbl_fsearch {
    char *meta_loc;           /* owned */
    char *filter;             /* owned */
    const ice_snapshot *snap;
    const ice_schema *schema;
    int32_t field_id;
    hs_metric metric;
    tbl_plan *plan;           /* owned */
    fstate *fs;               /* owned, plan->n_files */
} tbl_fsearch;

static void fstates_free(fstate *fs, int n);

static void fsearch_free(tbl_fsearch *f)
{
    if (!f)
        return;
    fstates_free(f->fs, f->plan ? f->plan->n_files : 0);
    tbl_plan_free(f->plan);
    hs_free(f->meta_loc);
    hs_free(f->filter);
    hs_free(f);
}

static bool fsearch_enabled(void) { return hs_cfg_get(HS_CFG_SEARCH_FILTER_CACHE) != 0; }

/* The kept files for this call's key, or NULL. */
static tbl_fsearch *fsearch_find(hs_table *t, const ice_snapshot *snap, const ice_schema *schema,
                                 const char *filter, int32_t field_id, hs_metric metric)
{
    tbl_fsearch *f = t->search_filtered;
    if (!f || !fsearch_enabled() || !t->metadata_location || !filter || f->snap != snap ||
        f->schema != schema || f->field_id != field_id || f->metric != metric || f->plan->meta != &t->meta ||
        strcmp(f->meta_loc, t->metadata_location) != 0 || strcmp(f->filter, filter) != 0)
        return NULL;
    return f;
}

/* Keeps plan and fs (taken on success: true) as the handle's filtered entry. */
static bool fsearch_keep(hs_table *t, const ice_snapshot *snap, const ice_schema *schema,
                         const char *filter, int32_t field_id, hs_metric metric, tbl_plan *plan,
                         fstate *fs)
{
    if (!fsearch_enabled() || !t->metadata_location || !filter)
        return false;
    tbl_fsearch *f = hs_calloc(1, sizeof *f);
    if (!f || !(f->meta_loc = hs_strdup(t->metadata_location)) || !(f->filter = hs_strdup(filter))) {
        if (f)
            hs_free(f->meta_loc);
        hs_free(f);
        return false;
    }
    f->snap = snap;
    f->schema = schema;
    f->field_id = field_id;
    f->metric = metric;
    f->plan = plan;
    f->fs = fs;
    fsearch_free(t->search_filtered);
    t->search_filtered = f;
    return true;
}

void tbl_search_cache_clear(hs_table *t)
{
    plan_cache_clear(t);
    fsearch_free(t->search_filtered);
    t->search_filtered = NULL;
}

static bool filter_blank(const char *f)
{
    return !f || f[strspn(f, " \t\r\n")] == '\0';
}

/* The plan of (snap, schema, filter): without a filter, the one the handle
 * kept when it was made under the same metadata file (immutable: a new
 * version is a new file) for the same snapshot and schema, else a new one
 * that the handle keeps (*owned false: not to be freed).  Reading the
 * manifest list again costs more than a small search (~20 us).  The plan
 * borrows t->meta, which changes only with metadata_location. */
static hs_status search_plan(hs_table *t, const ice_snapshot *snap, const ice_schema *schema,
                             const char *filter, tbl_plan **plan, bool *owned, hs_error *err)
{
    *owned = true;
    /* a filtered search on a table with an index registry may be answered
     * from clustered vector blocks, which need no footer: search_impl asks
     * for the footers once it knows (tbl_plan_prefetch_footers) */
    if (!filter_blank(filter))
        return tbl_plan_make_ex(&t->meta, snap, schema, filter,
                                ice_kv_get(&t->meta.properties, IX_REGISTRY_PROPERTY)
                                    ? TBL_PLAN_DEFER_FOOTERS : 0, plan, err);
    if (!t->metadata_location)
        return tbl_plan_make(&t->meta, snap, schema, filter, plan, err);
    tbl_plan *p = t->search_plan;
    if (p && p->meta == &t->meta && p->snap == snap && p->schema == schema &&
        strcmp(t->search_plan_meta, t->metadata_location) == 0) {
        *plan = p;
        *owned = false;
        return HS_OK;
    }
    plan_cache_clear(t);
    HS_TRY(tbl_plan_make(&t->meta, snap, schema, NULL, plan, err));
    if ((t->search_plan_meta = hs_strdup(t->metadata_location)) != NULL) {
        t->search_plan = *plan;
        *owned = false;
    }
    return HS_OK;   /* not kept without memory for the key: owned by the call */
}

/* hs_table_search (batch false, one query) and hs_table_search_batch. */
static hs_status search_impl(hs_table *t, const hs_scan_options *scan,
                             const hs_search_options *so, int n_queries, bool batch,
                             struct ArrowArrayStream *out, hs_error *err)
{
    if (!t || !out)
        return hs_err_set(err, HS_INVALID, "search: NULL table or output stream");
    memset(out, 0, sizeof *out);
    HS_OPTS_IN(scan, hs_scan_options, err);
    /* rerank was appended after 0.1: a struct_size of 0 means the layout before it */
    hs_search_options so_in_;
    if (so) {
        HS_TRY(hs_opts_copy(&so_in_, sizeof so_in_, offsetof(hs_search_options, rerank), so,
                            "hs_search_options", err));
        so = &so_in_;
    }
    HS_TRY(check_options(so, n_queries, err));
    search_call c = {.so = so, .kern = vd_kernels()};
    bool metric_given = false;
    if (so->metric) {
        HS_TRY(hs_metric_from_name(so->metric, &c.metric, err));
        if (c.metric != HS_METRIC_L2 && c.metric != HS_METRIC_COSINE &&
            c.metric != HS_METRIC_IP)
            return hs_err_set(err, HS_INVALID, "search: metric \"%s\" is not l2, cosine or ip",
                              so->metric);
        metric_given = true;
    }
    const char *dist_name = so->distance_column ? so->distance_column : "_distance";
    const ice_snapshot *snap = NULL;
    const ice_schema *schema = NULL;
    /* the current snapshot of a handle with an append stream: its tail
     * too (captured first: it may refresh t) */
    tbl_tail_view *tv = NULL;
    if (!(scan && (scan->use_snapshot_id || scan->use_as_of || scan->ref)) &&
        tbl_tail_attach(t))
        HS_TRY(tbl_tail_capture(t, &tv, err));
    hs_status rst = tbl_resolve_snapshot(&t->meta, scan, &snap, &schema, err);
    if (rst != HS_OK) {
        tbl_tail_view_free(tv);
        return rst;
    }
    c.col = top_field(schema, so->column);
    int dim = c.col ? tbl_vector_dimension(&t->meta, c.col->field_id) : 0;
    if (!c.col)
        rst = hs_err_set(err, HS_NOT_FOUND, "search: no column \"%s\" in the table schema",
                         so->column);
    else if (!tbl_is_float_vector_type(c.col))
        rst = hs_err_set(err, HS_INVALID, "search: column \"%s\" is %s, not a vector column "
                         "(list<float>)", c.col->name, hs_type_name(c.col->type));
    else if (dim > 0 && dim != so->dim)
        rst = hs_err_set(err, HS_INVALID, "search: query vector has %d dimensions, column "
                         "\"%s\" has %d", so->dim, c.col->name, dim);
    if (rst != HS_OK) {
        tbl_tail_view_free(tv);
        return rst;
    }
    hs_field rs = {0}, fsch = {0};
    tbl_plan *plan = NULL;
    bool plan_owned = true;
    vreg vr = {0};
    hs_status st = project_schema(schema, scan, &rs, err);
    for (int i = 0; st == HS_OK && i < rs.n_children; i++)
        if (strcmp(rs.children[i].name, dist_name) == 0 ||
            (batch && strcmp(rs.children[i].name, "query_index") == 0))
            st = hs_err_set(err, HS_INVALID, "search: the %s column \"%s\" collides with a "
                            "column of the output%s", batch && strcmp(rs.children[i].name,
                            "query_index") == 0 ? "query index" : "distance",
                            rs.children[i].name, batch ? "" : " (set distance_column)");
    if (st == HS_OK && batch && strcmp(dist_name, "query_index") == 0)
        st = hs_err_set(err, HS_INVALID, "search: the distance column may not be named "
                        "query_index in a batch search");
    const char *filter = scan && !filter_blank(scan->filter) ? scan->filter : NULL;
    tbl_fsearch *kept = NULL;
    bool fs_owned = true, vr_done = false;
    if (st == HS_OK && filter && metric_given)
        kept = fsearch_find(t, snap, schema, filter, c.col->field_id, c.metric);
    if (st == HS_OK && filter && !metric_given && t->search_filtered) {
        st = vreg_load(&t->meta, &vr, err);   /* the metric first: part of the key */
        vr_done = true;
        if (st == HS_OK)
            kept = fsearch_find(t, snap, schema, filter, c.col->field_id,
                                default_metric(&vr, c.col->field_id));
    }
    if (kept) {   /* the same files, allowed rows and sidecars as last time */
        atomic_fetch_add(&g_filter_reused, 1);
        plan = kept->plan;
        plan_owned = false;
        c.metric = kept->metric;
        c.fs = kept->fs;
        fs_owned = false;
    }
    if (st == HS_OK && !kept)
        st = search_plan(t, snap, schema, filter, &plan, &plan_owned, err);
    if (st == HS_OK && !kept)
        st = filter_schema(schema, &plan->pred, &fsch, err);
    if (st == HS_OK && !kept && !vr_done)
        st = vreg_load(&t->meta, &vr, err);
    /* the registry view also answers the filter's scalar index lookups */
    const tbl_ixscan *six = st == HS_OK && !tbl_pred_is_true(&plan->pred) ? vr.six : NULL;
    if (st == HS_OK && !metric_given && !kept)
        c.metric = default_metric(&vr, c.col->field_id);
    int64_t total = 0;
    for (int i = 0; st == HS_OK && i < plan->n_files; i++)
        total += plan->files[i].record_count > 0 ? plan->files[i].record_count : 0;
    c.k = (size_t)so->k < (uint64_t)total ? (size_t)so->k : (size_t)total;
    c.plan = plan;
    /* the clustered path (above) when it can answer; else the rest */
    hs_batch *res = NULL;
    if (st == HS_OK && !kept && !tv && filter && c.k > 0) {
        hs_status cs = clustered_search(&c, &vr, &rs, dist_name, so->query, n_queries, batch,
                                        &res, err);
        if (cs != HS_OK && cs != HS_UNSUPPORTED)
            st = cs;
        if (err && cs == HS_UNSUPPORTED)
            hs_err_clear(err);
    }
    if (st == HS_OK && !res && !kept && filter && plan_owned)
        tbl_plan_prefetch_footers(plan);   /* deferred by search_plan */
    if (st == HS_OK && !res && !kept && plan->n_files > 0 &&
        !(c.fs = hs_calloc((size_t)plan->n_files, sizeof *c.fs)))
        st = hs_err_nomem(err, (size_t)plan->n_files * sizeof *c.fs);
    if (st == HS_OK && !res && !kept && c.k > 0 && plan->n_files > 0 &&
        hs_io_is_object_uri(plan->files[0].path)) {
        /* object stores: the pages of the projected columns (not the vector
         * column: the sidecars hold it) come in the background while the
         * sidecars are read, so that the winners' rows, here and in the next
         * search, are read from the byte cache instead of a last round trip */
        int32_t ids[64];
        int n_ids = 0;
        for (int i = 0; i < rs.n_children && n_ids < 64; i++)
            if (rs.children[i].field_id >= 0 && rs.children[i].field_id != c.col->field_id)
                ids[n_ids++] = rs.children[i].field_id;
        const char **paths = hs_calloc((size_t)plan->n_files, sizeof *paths);
        for (int i = 0; paths && i < plan->n_files; i++)
            paths[i] = plan->files[i].path;
        if (paths)
            tbl_plan_warm_pages(paths, plan->n_files, ids, n_ids);
        hs_free(paths);
    }
    if (st == HS_OK && !res && !kept && c.k > 0) {
        prep_ctx px = {.c = &c, .vr = &vr, .six = six, .filter_schema = &fsch};
        st = prep_files(&px, err);
        if (filter)
            atomic_fetch_add(&g_filter_prepared, 1);
        /* prepared for every k > 0 alike: kept for the next call */
        if (st == HS_OK && filter && plan_owned &&
            fsearch_keep(t, snap, schema, filter, c.col->field_id, c.metric, plan, c.fs)) {
            plan_owned = false;
            fs_owned = false;
        }
    }
    cand **win = hs_calloc((size_t)n_queries, sizeof *win);
    size_t *n_win = hs_calloc((size_t)n_queries, sizeof *n_win);
    if (st == HS_OK && (!win || !n_win))
        st = hs_err_nomem(err, (size_t)n_queries * 16);
    if (st == HS_OK && !res && c.k > 0)
        st = run_queries(&c, so->query, n_queries, win, n_win, err);
    hs_column **tail_cols = NULL;
    if (st == HS_OK && tv)
        st = tail_merge(&c, tv, &rs, &fsch, &plan->pred, n_queries, win, n_win, &tail_cols,
                        err);
    if (st == HS_OK && !res)
        st = materialize(&c, &rs, dist_name, win, n_win, n_queries, batch, tail_cols, &res,
                         err);
    for (int i = 0; tail_cols && i < rs.n_children; i++)
        hs_col_free(tail_cols[i]);
    hs_free(tail_cols);
    tbl_tail_view_free(tv);
    if (st == HS_OK)
        st = hs_arrow_export_one_batch(res, out, err);
    else
        hs_batch_free(res);   /* the clustered path's, when a later step failed */
    for (int q = 0; win && q < n_queries; q++)
        hs_free(win[q]);
    hs_free(win);
    hs_free(n_win);
    if (fs_owned)
        fstates_free(c.fs, plan ? plan->n_files : 0);
    vreg_clear(&vr);
    if (plan_owned)
        tbl_plan_free(plan);
    hs_field_clear(&rs);
    hs_field_clear(&fsch);
    return st;
}

hs_status hs_table_search(hs_table *t, const hs_scan_options *scan, const hs_search_options *so,
                          struct ArrowArrayStream *out, hs_error *err)
{
    return search_impl(t, scan, so, 1, false, out, err);
}

hs_status hs_table_search_batch(hs_table *t, const hs_scan_options *scan,
                                const hs_search_options *so, int n_queries,
                                struct ArrowArrayStream *out, hs_error *err)
{
    return search_impl(t, scan, so, n_queries, true, out, err);
}

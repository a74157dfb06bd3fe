/*
 * table/plan.c - scan planning for one snapshot.
 *
 *   step                         input                       prunes with
 *   ---------------------------  --------------------------  ----------------------------
 *   1 choose snapshot + schema   options (id, as-of, ref)    -
 *   2 manifest list              snapshot.manifest-list      -
 *   3 data manifests             manifest_file.partitions    filter projected through
 *                                (field summaries)           the manifest's spec
 *   4 data files                 manifest_entry partition    the same projection, exact
 *                                                            partition values
 *   5 data files                 lower/upper bounds, value,  the filter itself ("might
 *                                null counts by field id     match" on statistics)
 *   6 deletes                    delete manifests            sequence numbers: a position
 *                                                            delete applies to data files
 *                                                            with a data sequence number
 *                                                            <= its own, an equality
 *                                                            delete to those < its own
 *
 * Projection of a filter leaf on column c through a partition field
 * p = T(c) (Iceberg's "inclusive projection"):
 *
 *   transform                    c = v     c < v, c <= v   c > v, c >= v   c IN (..)   IS [NOT] NULL
 *   --------------------------   -------   -------------   -------------   ---------   -------------
 *   identity                     p = v     same op         same op         p IN (..)   same
 *   truncate, year..hour         p = T(v)  p <= T(v)       p >= T(v)       p IN T(..)  same
 *   bucket                       p = T(v)  -               -               p IN T(..)  same
 *   void, unknown                -         -               -               -           -
 *
 * ("-" = no constraint.)  !=, NOT IN project to no constraint.  The result
 * is evaluated with pr_expr_might_match over partition summaries (manifest
 * level) and over each file's partition tuple (lower = upper = the value).
 *
 * The filter (tbl_pred): the text is SQL WHERE syntax bound by expr/expr.h
 * (the exact form, evaluated on rows) and ex_to_pred's simple filter
 * IMPLIED by it (every row the expression accepts satisfies it), which is
 * what all pruning here, the statistics pruning and the index lookups of
 * scan.c / index.c use: pruning with a weaker filter is still sound.
 *
 * Which deletes apply to a data file: a deletion vector whose
 * referenced_data_file is the file; a position delete file whose
 * referenced_data_file is the file or, without one, whose file_path bounds
 * (field 2147483546) contain the file's path or are absent (those apply to
 * data sequence numbers <= their own); an equality delete file whose data
 * sequence number is strictly greater than the file's and whose partition
 * (spec id and tuple) is the file's, or whose spec is unpartitioned (then
 * every file), unless the column statistics of one of its equality columns
 * rule out a match (below).  What equality deletes delete: eqdel.c.
 *
 * Equality delete pruning by column bounds.  A delete row deletes a data
 * row only when every equality column is equal (NULL equal to NULL), so an
 * equality delete file cannot delete anything in a data file when, for one
 * equality column c,
 *
 *   nulls on both sides possible    (null counts unknown or > 0)   no
 *   values on both sides possible   (not all null) and the ranges
 *                                   [lower, upper] overlap          no
 *
 * holds.  Bounds are typed by the table schema (pr_val_from_bound: promoted
 * columns, truncated strings stay bounds); missing statistics mean "may
 * match"; float and double columns are never used (bounds exclude NaN, and
 * -0.0 / 0.0 compare equal as bounds but not as keys).  The delete
 * manifests are planned before the data manifests, so that each data
 * file keeps only the statistics of the equality columns (plan->eq_ids).
 */
#include "table/fcache.h"
#include "table/mcache.h"
#include "table/table_int.h"

#include "base/config.h"
#include "base/fork.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/mem.h"
#include "expr/expr.h"
#include "expr/expr_fastparse.h"
#include "iceberg/puffin.h"
#include "index/registry.h"
#include "io/io.h"
#include "parquet/reader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* the filter                                                          */

hs_status tbl_pred_make(const char *text, const hs_field *schema, tbl_pred *p, hs_error *err)
{
    memset(p, 0, sizeof *p);
    hs_status st = ex_parse_filter_fast(text, schema, &p->expr, err);
    if (st == HS_OK)
        st = ex_to_pred(p->expr, &p->filter, &p->exact, err);
    if (st == HS_OK && p->exact && ex_is_true(p->expr)) {
        ex_free(p->expr);   /* no filter: nothing to evaluate */
        p->expr = NULL;
    }
    if (st != HS_OK) {
        hs_err_prefix(err, "filter");
        tbl_pred_clear(p);
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* the bound-filter cache                                              */

/* Parsing and binding a filter (libpg_query's parse, its JSON output read
 * back, binding, ex_to_pred) costs ~60 us: more than the rest of a
 * selective indexed query or a filtered vector search (issue 12: a new
 * filter's first query).  Applications repeat filter texts (a tenant, a
 * category, a window), so bound filters are kept process-wide.
 *
 * A bound filter depends on its text and the schema it was bound against
 * and on nothing else (no session settings: expr/expr_bind.c has no
 * time-dependent or setting-dependent function), so the key is the text and
 * the schema compared whole (names, field ids, types, nullability, keys and
 * values of field metadata).  An entry owns a deep copy of that schema and
 * the tbl_pred bound to the copy; a plan using it holds a reference and a
 * shallow copy of the pred, read-only (evaluation only reads an expression:
 * expr/expr.h, so threads share it).  At most PCACHE_MAX entries; beyond
 * that the least recently used unreferenced one goes (a referenced one is
 * freed at its last release).  Texts longer than PCACHE_TEXT_MAX are not
 * kept (big IN lists: their parse is not the cost that matters).  Parse
 * errors are not kept.  The setting filter_cache = 0 (HS_FILTER_CACHE=0)
 * turns the cache off. */
#define PCACHE_MAX 64
#define PCACHE_TEXT_MAX 4096

typedef struct tbl_pcache_ent {
    struct tbl_pcache_ent *newer, *older;   /* recency list (while cached) */
    char *text;
    uint64_t hash;            /* of text */
    hs_field schema;          /* deep copy: pred is bound to it */
    tbl_pred pred;
    int refs;
    bool cached;
} tbl_pcache_ent;

static struct {
    pthread_mutex_t mu;
    tbl_pcache_ent *newest, *oldest;
    int n;
    int64_t hits, misses;
} g_pcache = {PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0, 0, 0};
HS_FORK_GUARD(g_pcache.mu, HS_FORK_RANK_LEAF);

static bool pcache_enabled(void) { return hs_cfg_get(HS_CFG_FILTER_CACHE) != 0; }

static bool meta_equal(const hs_field *a, const hs_field *b)
{
    if (a->n_meta != b->n_meta)
        return false;
    for (int i = 0; i < a->n_meta; i++)
        if (strcmp(a->meta_keys[i], b->meta_keys[i]) != 0 ||
            strcmp(a->meta_values[i] ? a->meta_values[i] : "",
                   b->meta_values[i] ? b->meta_values[i] : "") != 0)
            return false;
    for (int i = 0; i < a->n_children; i++)
        if (!meta_equal(&a->children[i], &b->children[i]))
            return false;
    return true;
}

/* The same schema for binding: hs_field_equals with names and ids, plus
 * metadata (children counts already equal when it returns true). */
static bool schema_same(const hs_field *a, const hs_field *b)
{
    return hs_field_equals(a, b, true, true) && meta_equal(a, b);
}

static void pcache_ent_free(tbl_pcache_ent *e)
{
    if (!e)
        return;
    tbl_pred_clear(&e->pred);
    hs_field_clear(&e->schema);
    hs_free(e->text);
    hs_free(e);
}

/* lock held: takes e out of the recency list */
static void pcache_unlink(tbl_pcache_ent *e)
{
    if (e->newer)
        e->newer->older = e->older;
    else
        g_pcache.newest = e->older;
    if (e->older)
        e->older->newer = e->newer;
    else
        g_pcache.oldest = e->newer;
    e->newer = e->older = NULL;
    e->cached = false;
    g_pcache.n--;
}

/* lock held */
static void pcache_push(tbl_pcache_ent *e)
{
    e->older = g_pcache.newest;
    e->newer = NULL;
    if (g_pcache.newest)
        g_pcache.newest->newer = e;
    else
        g_pcache.oldest = e;
    g_pcache.newest = e;
    e->cached = true;
    g_pcache.n++;
}

static void pcache_release(tbl_pcache_ent *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&g_pcache.mu);
    bool dead = --e->refs == 0 && !e->cached;
    pthread_mutex_unlock(&g_pcache.mu);
    if (dead)
        pcache_ent_free(e);
}

/* The pred of text bound to schema: from the cache (*ref set, *p a shallow
 * copy to leave untouched) or made now (*ref NULL when it could not be kept:
 * *p owned). */
static hs_status pred_acquire(const char *text, const hs_field *schema, tbl_pred *p,
                              tbl_pcache_ent **ref, hs_error *err)
{
    *ref = NULL;
    size_t len = text ? strlen(text) : 0;
    if (!pcache_enabled() || len == 0 || len > PCACHE_TEXT_MAX)
        return tbl_pred_make(text, schema, p, err);
    uint64_t h = hs_xxh64(text, len, 0);
    pthread_mutex_lock(&g_pcache.mu);
    for (tbl_pcache_ent *e = g_pcache.newest; e; e = e->older) {
        if (e->hash != h || strcmp(e->text, text) != 0 || !schema_same(&e->schema, schema))
            continue;
        e->refs++;
        g_pcache.hits++;
        pcache_unlink(e);   /* to the front */
        pcache_push(e);
        pthread_mutex_unlock(&g_pcache.mu);
        *p = e->pred;
        *ref = e;
        return HS_OK;
    }
    g_pcache.misses++;
    pthread_mutex_unlock(&g_pcache.mu);
    tbl_pcache_ent *e = hs_calloc(1, sizeof *e);
    if (!e || !(e->text = hs_strdup(text)) || hs_field_copy(schema, &e->schema) != HS_OK) {
        pcache_ent_free(e);
        return tbl_pred_make(text, schema, p, err);   /* uncached */
    }
    hs_status st = tbl_pred_make(text, &e->schema, &e->pred, err);
    if (st != HS_OK) {
        pcache_ent_free(e);
        return st;
    }
    e->hash = h;
    e->refs = 1;
    tbl_pcache_ent *dead = NULL;
    pthread_mutex_lock(&g_pcache.mu);
    pcache_push(e);
    for (tbl_pcache_ent *o = g_pcache.oldest; o && g_pcache.n > PCACHE_MAX;) {
        tbl_pcache_ent *next = o->newer;
        if (o->refs == 0) {
            pcache_unlink(o);
            o->older = dead;   /* a private list of the evicted */
            dead = o;
        }
        o = next;
    }
    pthread_mutex_unlock(&g_pcache.mu);
    while (dead) {
        tbl_pcache_ent *next = dead->older;
        pcache_ent_free(dead);
        dead = next;
    }
    *p = e->pred;
    *ref = e;
    return HS_OK;
}

void tbl_filter_cache_stats(int64_t *hits, int64_t *misses, int *entries)
{
    pthread_mutex_lock(&g_pcache.mu);
    if (hits)
        *hits = g_pcache.hits;
    if (misses)
        *misses = g_pcache.misses;
    if (entries)
        *entries = g_pcache.n;
    pthread_mutex_unlock(&g_pcache.mu);
}

void tbl_filter_cache_clear(void)
{
    tbl_pcache_ent *dead = NULL;
    pthread_mutex_lock(&g_pcache.mu);
    for (tbl_pcache_ent *o = g_pcache.oldest; o;) {
        tbl_pcache_ent *next = o->newer;
        pcache_unlink(o);
        if (o->refs == 0) {
            o->older = dead;
            dead = o;
        }
        o = next;
    }
    pthread_mutex_unlock(&g_pcache.mu);
    while (dead) {
        tbl_pcache_ent *next = dead->older;
        pcache_ent_free(dead);
        dead = next;
    }
}

void tbl_pred_clear(tbl_pred *p)
{
    ex_free(p->expr);
    pr_filter_free(p->filter);
    memset(p, 0, sizeof *p);
}

bool tbl_pred_is_true(const tbl_pred *p)
{
    return p->expr ? ex_is_true(p->expr) : !p->filter || pr_filter_is_true(p->filter);
}

hs_status tbl_pred_field_ids(const tbl_pred *p, hs_buf *ids)
{
    if (p->expr)
        return ex_field_ids(p->expr, ids);
    return p->filter ? pr_filter_field_ids(p->filter, ids) : HS_OK;
}

hs_status tbl_pred_eval(const tbl_pred *p, const hs_batch *b, const uint8_t *sel_in,
                        uint8_t *sel_out, int64_t *n_match, hs_error *err)
{
    if (p->expr)
        return ex_eval_filter(p->expr, b, sel_in, sel_out, n_match, err);
    if (!sel_in)
        return pr_filter_eval(p->filter, b, sel_out, n_match, err);
    /* pr_filter_eval has no input selection: evaluate all, then AND */
    uint8_t *tmp = hs_malloc((size_t)b->n_rows + 1);
    if (!tmp)
        return hs_err_nomem(err, (size_t)b->n_rows);
    int64_t m = 0;
    hs_status st = pr_filter_eval(p->filter, b, tmp, &m, err);
    m = 0;
    for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++) {
        sel_out[i] = tmp[i] && sel_in[i];
        m += sel_out[i];
    }
    hs_free(tmp);
    *n_match = m;
    return st;
}

bool tbl_pred_is_cheap(const tbl_pred *p)
{
    return !p->expr || ex_is_cheap(p->expr);   /* the simple form: comparisons */
}

hs_status tbl_pred_format(const tbl_pred *p, char **out, hs_error *err)
{
    *out = NULL;
    if (p->expr)
        return ex_format(p->expr, out, err);
    *out = hs_strdup(tbl_pred_is_true(p) ? "TRUE" : "(simple filter)");
    return *out ? HS_OK : hs_err_nomem(err, 16);
}

/* ------------------------------------------------------------------ */
/* snapshot choice                                                     */

hs_status tbl_resolve_snapshot(const ice_table_metadata *m, const hs_scan_options *o,
                               const ice_snapshot **snap, const ice_schema **schema,
                               hs_error *err)
{
    int n = o ? (o->use_snapshot_id != 0) + (o->use_as_of != 0) + (o->ref != NULL) : 0;
    if (n > 1)
        return hs_err_set(err, HS_INVALID, "scan: give at most one of snapshot id, as-of time "
                          "and ref");
    const ice_snapshot *s = NULL;
    bool historical = true;
    if (o && o->use_snapshot_id) {
        s = ice_metadata_snapshot(m, o->snapshot_id);
        if (!s)
            return hs_err_set(err, HS_NOT_FOUND, "scan: no snapshot %lld in the table",
                              (long long)o->snapshot_id);
    } else if (o && o->use_as_of) {
        s = ice_metadata_snapshot_as_of(m, o->as_of_ms);
        if (!s)
            return hs_err_set(err, HS_NOT_FOUND, "scan: no snapshot was current at or before "
                              "%lld ms", (long long)o->as_of_ms);
    } else if (o && o->ref) {
        const ice_ref *r = ice_metadata_ref(m, o->ref);
        if (!r)
            return hs_err_set(err, HS_NOT_FOUND, "scan: no branch or tag \"%s\"", o->ref);
        s = ice_metadata_snapshot(m, r->snapshot_id);
        if (!s)
            return hs_err_set(err, HS_CORRUPT, "scan: ref \"%s\" points to missing snapshot "
                              "%lld", o->ref, (long long)r->snapshot_id);
        historical = r->is_tag;
    } else {
        s = ice_metadata_current_snapshot(m);
        historical = false;
    }
    const ice_schema *sc = historical && s ? ice_metadata_snapshot_schema(m, s)
                                           : ice_metadata_current_schema(m);
    if (!sc)
        sc = ice_metadata_current_schema(m);
    if (!sc)
        return hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
    *snap = s;
    *schema = sc;
    return HS_OK;
}

static bool schema_has_sources(const ice_schema *sc, const ice_partition_spec *s)
{
    for (int i = 0; i < s->n_fields; i++)
        if (!ice_schema_find_id(sc, s->fields[i].source_id))
            return false;
    return true;
}

const ice_schema *tbl_schema_for_spec(const ice_table_metadata *m, const ice_partition_spec *s)
{
    const ice_schema *cur = ice_metadata_current_schema(m);
    if (!s || (cur && schema_has_sources(cur, s)))
        return cur;
    for (int i = m->n_schemas - 1; i >= 0; i--)
        if (schema_has_sources(&m->schemas[i], s))
            return &m->schemas[i];
    return cur;
}

/* ------------------------------------------------------------------ */
/* projection through a spec                                           */

typedef struct spec_proj {
    int32_t spec_id;
    const ice_partition_spec *spec;
    hs_field ptype;                /* partition tuple type (owned) */
    pr_expr *expr;                /* projected filter (plan arena), NULL = TRUE */
    bool ok;                       /* ptype built */
} spec_proj;

static pr_expr *mk(hs_arena *a, pr_ekind k)
{
    pr_expr *e = hs_arena_calloc(a, 1, sizeof *e);
    if (e) {
        e->kind = k;
        e->field_id = -1;
    }
    return e;
}

/* Transforms one literal; false when it cannot be projected. */
static bool transform_val(const pr_expr *leaf, const pr_val *v, const ice_transform *tr,
                          const hs_field *pfield, hs_arena *a, pr_val *out)
{
    if (v->kind != pr_kind_of(leaf->field))
        return false;
    hs_buf b = {0};
    ice_value in = {0}, res = {0};
    bool ok = false;
    if (pr_val_to_bound(leaf->field, v, &b) == HS_OK &&
        ice_value_from_bytes(leaf->field, b.data ? b.data : (const uint8_t *)"", b.len, &in,
                             NULL) == HS_OK &&
        ice_transform_apply(tr, &in, &res, NULL) == HS_OK && !res.is_null) {
        hs_buf_reset(&b);
        if (ice_value_to_bytes(&res, &b) == HS_OK) {
            uint8_t *copy = hs_arena_alloc(a, b.len + 1);
            if (copy) {
                if (b.len)
                    memcpy(copy, b.data, b.len);
                ok = pr_val_from_bound(pfield, copy, b.len, out);
            }
        }
    }
    ice_value_clear(&in);
    ice_value_clear(&res);
    hs_buf_free(&b);
    return ok;
}

static pr_expr *project_leaf_one(const pr_expr *e, const ice_partition_field *pf,
                                  const hs_field *pfield, hs_arena *a)
{
    ice_transform_kind k = pf->transform.kind;
    if (k == ICE_TR_VOID || k == ICE_TR_UNKNOWN)
        return NULL;
    if (e->kind == PR_E_IS_NULL || e->kind == PR_E_NOT_NULL) {
        pr_expr *r = mk(a, e->kind);
        if (r) {
            r->field = pfield;
            r->field_id = pf->field_id;
        }
        return r;
    }
    if (e->kind == PR_E_NOT_IN || (e->kind == PR_E_CMP && e->op == PR_NE))
        return NULL;
    pr_op op = e->op;
    if (e->kind == PR_E_CMP && k != ICE_TR_IDENTITY) {
        if (k == ICE_TR_BUCKET && op != PR_EQ)
            return NULL;
        if (op == PR_LT)
            op = PR_LE;
        else if (op == PR_GT)
            op = PR_GE;
    }
    pr_expr *r = mk(a, e->kind);
    if (!r)
        return NULL;
    r->op = op;
    r->field = pfield;
    r->field_id = pf->field_id;
    r->n_lits = e->n_lits;
    r->vals = hs_arena_calloc(a, (size_t)e->n_lits + 1, sizeof(pr_val));
    if (!r->vals)
        return NULL;
    for (int i = 0; i < e->n_lits; i++)
        if (!transform_val(e, &e->vals[i], &pf->transform, pfield, a, &r->vals[i]))
            return NULL;
    return r;
}

static pr_expr *and_of(pr_expr *l, pr_expr *r, hs_arena *a)
{
    if (!l)
        return r;
    if (!r)
        return l;
    pr_expr *e = mk(a, PR_E_AND);
    if (!e)
        return l;
    e->l = l;
    e->r = r;
    return e;
}

/* NULL = no constraint (TRUE). */
static pr_expr *project(const pr_expr *e, spec_proj *sp, hs_arena *a)
{
    switch (e->kind) {
    case PR_E_TRUE:
        return NULL;
    case PR_E_FALSE:
        return mk(a, PR_E_FALSE);
    case PR_E_AND:
        return and_of(project(e->l, sp, a), project(e->r, sp, a), a);
    case PR_E_OR: {
        pr_expr *l = project(e->l, sp, a), *r = project(e->r, sp, a);
        if (!l || !r)
            return NULL;
        pr_expr *o = mk(a, PR_E_OR);
        if (!o)
            return NULL;
        o->l = l;
        o->r = r;
        return o;
    }
    default:
        break;
    }
    if (!e->field)
        return NULL;
    pr_expr *acc = NULL;
    for (int i = 0; i < sp->spec->n_fields && i < sp->ptype.n_children; i++) {
        const ice_partition_field *pf = &sp->spec->fields[i];
        if (pf->source_id != e->field_id)
            continue;
        acc = and_of(acc, project_leaf_one(e, pf, &sp->ptype.children[i], a), a);
    }
    return acc;
}

/* ---- statistics callbacks ---- */

static int pfield_index(const ice_partition_spec *s, int32_t field_id)
{
    for (int i = 0; i < s->n_fields; i++)
        if (s->fields[i].field_id == field_id)
            return i;
    return -1;
}

typedef struct summary_ctx {
    const ice_manifest_file *mf;
    const ice_partition_spec *spec;
} summary_ctx;

static bool summary_stats(void *vctx, int32_t field_id, const hs_field *field, pr_col_stats *o)
{
    summary_ctx *c = vctx;
    int i = pfield_index(c->spec, field_id);
    if (i < 0 || c->mf->n_partitions <= i)
        return false;
    const ice_field_summary *s = &c->mf->partitions[i];
    o->null_count = s->contains_null ? -1 : 0;
    o->has_lower = s->lower && pr_val_from_bound(field, s->lower, s->lower_len, &o->lower);
    o->has_upper = s->upper && pr_val_from_bound(field, s->upper, s->upper_len, &o->upper);
    if (!s->contains_null && !o->has_lower && !o->has_upper && s->has_contains_nan &&
        !s->contains_nan) {
        /* no null, no NaN, no bounds: the manifest has no rows in this field */
        o->value_count = 0;
    }
    /* bounds exclude NaN, which sorts above every number: with NaN possible
     * the upper bound bounds nothing */
    if (o->has_upper && o->upper.kind == PR_V_F64 && (!s->has_contains_nan || s->contains_nan))
        o->has_upper = false;
    return true;
}

typedef struct tuple_ctx {
    const ice_partition_spec *spec;
    const ice_value *values;
    int n_values;
    hs_buf scratch;
} tuple_ctx;

static bool tuple_stats(void *vctx, int32_t field_id, const hs_field *field, pr_col_stats *o)
{
    tuple_ctx *c = vctx;
    int i = pfield_index(c->spec, field_id);
    if (i < 0 || i >= c->n_values)
        return false;
    const ice_value *v = &c->values[i];
    o->value_count = 1;
    if (v->is_null) {
        o->null_count = 1;
        return true;
    }
    o->null_count = 0;
    hs_buf_reset(&c->scratch);
    if (ice_value_to_bytes(v, &c->scratch) != HS_OK || hs_buf_append_byte(&c->scratch, 0) != HS_OK)
        return false;
    if (!pr_val_from_bound(field, c->scratch.data, c->scratch.len - 1, &o->lower))
        return false;
    o->upper = o->lower;
    o->has_lower = o->has_upper = true;
    return true;
}

typedef struct file_ctx {
    const ice_data_file *f;
} file_ctx;

static bool file_stats(void *vctx, int32_t id, const hs_field *field, pr_col_stats *o)
{
    const ice_data_file *f = ((file_ctx *)vctx)->f;
    bool any = false;
    for (int i = 0; i < f->n_value_counts; i++)
        if (f->value_counts[i].id == id) {
            o->value_count = f->value_counts[i].value;
            any = true;
        }
    for (int i = 0; i < f->n_null_value_counts; i++)
        if (f->null_value_counts[i].id == id) {
            o->null_count = f->null_value_counts[i].value;
            any = true;
        }
    for (int i = 0; i < f->n_nan_value_counts; i++)
        if (f->nan_value_counts[i].id == id) {
            o->nan_count = f->nan_value_counts[i].value;
            any = true;
        }
    for (int i = 0; i < f->n_lower_bounds; i++)
        if (f->lower_bounds[i].id == id && f->lower_bounds[i].p)
            any |= o->has_lower = pr_val_from_bound(field, f->lower_bounds[i].p,
                                                     f->lower_bounds[i].len, &o->lower);
    for (int i = 0; i < f->n_upper_bounds; i++)
        if (f->upper_bounds[i].id == id && f->upper_bounds[i].p)
            any |= o->has_upper = pr_val_from_bound(field, f->upper_bounds[i].p,
                                                     f->upper_bounds[i].len, &o->upper);
    /* bounds exclude NaN, which sorts above every number (pr_val_cmp): unless
     * the file is known to hold no NaN its upper bound bounds nothing */
    if (o->has_upper && o->upper.kind == PR_V_F64 && o->nan_count != 0)
        o->has_upper = false;
    /* a column added after the file was written: every row reads its v3
     * initial-default (one value: lower = upper), or null when it has none */
    const char *dj = any ? NULL : hs_field_get_meta(field, "iceberg.initial-default");
    if (!any && f->n_value_counts > 0 && dj && strcmp(dj, "null") != 0) {
        ice_value v;
        hs_buf b = {0};
        memset(&v, 0, sizeof v);
        bool ok = ice_value_from_json(field, dj, strlen(dj), &v, NULL) == HS_OK && !v.is_null &&
                  ice_value_to_bytes(&v, &b) == HS_OK &&
                  pr_val_from_bound(field, b.data, b.len, &o->lower) &&
                  o->lower.kind != PR_V_BYTES; /* bytes would borrow b: do not prune */
        ice_value_clear(&v);
        hs_buf_free(&b);
        if (!ok)
            return false;
        o->upper = o->lower;
        o->has_lower = o->has_upper = true;
        o->value_count = f->record_count;
        o->null_count = 0;
        return true;
    }
    if (!any && f->n_value_counts > 0) {
        o->value_count = f->record_count;
        o->null_count = f->record_count;
        return true;
    }
    return any;
}

/* ------------------------------------------------------------------ */
/* the plan                                                            */

typedef struct del_entry {
    bool is_dv;
    const char *path;                  /* plan arena */
    const char *ref;                   /* referenced data file or NULL */
    const uint8_t *lo, *hi;            /* file_path bounds (plan arena) or NULL */
    uint32_t lo_len, hi_len;
    int64_t seq;
    int64_t offset, length, record_count;
    int manifest_index;
    int64_t entry_index;
    tbl_eqdel *eq;                     /* equality deletes (plan-owned) */
    int n_eqs;                         /* eq: its equality columns' */
    const int32_t *eq_col_ids;         /*   field ids (plan arena) and */
    struct tbl_eqstat *eqs;            /*   statistics (plan arena) */
    bool global;                       /* eq: its spec is unpartitioned */
    int32_t spec_id;                   /* eq: its partition */
    int n_partition;
    ice_value *partition;              /* eq: owned until attach_deletes is done */
} del_entry;

static hs_status open_local(const char *loc, hs_file **f, hs_error *err)
{
    return hs_io_open(loc, f, err);
}

/* Decoded manifest lists, process-wide (table/fcache.h): a list file is
 * written once per snapshot and never changed, and every plan of the
 * snapshot reads it (~16 us to open and decode a one-manifest list: as
 * much as a selective indexed lookup).  Keyed by path and file identity;
 * the budget is the manifest cache's setting (HS_MANIFEST_CACHE_MB). */
static void free_list(void *obj) { ice_manifest_list_free(obj); }

static tbl_fcache g_lists = TBL_FCACHE_INIT("HS_MANIFEST_CACHE_MB", 64, free_list);

static hs_status list_load(void *ctx, const char *path, tbl_fref *ref, void **obj,
                           size_t *cost, hs_error *err)
{
    (void)ctx;
    (void)ref;
    hs_file *f = NULL;
    HS_TRY(open_local(path, &f, err));
    ice_manifest_list *l = NULL;
    hs_status st = ice_manifest_list_read(f, &l, err);
    size_t c = (size_t)f->size * 4 + 1024;
    hs_file_close(f);
    if (st != HS_OK)
        return st;
    *obj = l;
    *cost = c + (size_t)l->n_files * 256;
    return HS_OK;
}

void tbl_list_cache_clear(void) { tbl_fcache_clear(&g_lists); }

/* ------------------------------------------------------------------ */
/* manifest summaries (index/registry.h "manifests")                   */

/* A summary's statistics of one column: its bounds only (counts unknown,
 * so IS NULL and the like always may match). */
static bool msum_stats(void *vctx, int32_t id, const hs_field *field, pr_col_stats *o)
{
    const ix_msum *m = vctx;
    for (int k = 0; k < m->n_bounds; k++) {
        const ix_mbound *b = &m->bounds[k];
        if (b->field_id != id)
            continue;
        if (pr_kind_of(field) == PR_V_F64)
            return false;   /* never written; bounds exclude NaN */
        o->has_lower = pr_val_from_bound(field, b->lower, b->lower_len, &o->lower);
        o->has_upper = pr_val_from_bound(field, b->upper, b->upper_len, &o->upper);
        return o->has_lower || o->has_upper;
    }
    return false;
}

/* Whether summary m bounds every column the filter's leaves compare, so
 * that its copy of the manifest's files ("files") prunes them as the
 * manifest would.  A summary has no float bounds and no null counts: a
 * filter on a double column or with IS [NOT] NULL reads the manifest,
 * whose per-file bounds and counts prune it. */
static bool msum_covers(const ix_msum *m, const pr_expr *e, int depth)
{
    if (!e || depth > 200)
        return false;
    switch (e->kind) {
    case PR_E_TRUE:
    case PR_E_FALSE:
        return true;
    case PR_E_AND:
    case PR_E_OR:
        return msum_covers(m, e->l, depth + 1) && msum_covers(m, e->r, depth + 1);
    case PR_E_NOT:
        return msum_covers(m, e->l, depth + 1);
    case PR_E_IS_NULL:
    case PR_E_NOT_NULL:
        return false;
    default:
        break;
    }
    if (!e->field || pr_kind_of(e->field) == PR_V_F64)
        return false;
    for (int k = 0; k < m->n_bounds; k++)
        if (m->bounds[k].field_id == e->field_id)
            return true;
    return false;
}

static int64_t msum_snapshot(const ice_manifest_file *mf)
{
    return mf->has_added_snapshot_id ? mf->added_snapshot_id : -1;
}

/* One column's running bounds over a manifest's live data files. */
typedef struct msum_acc {
    int32_t id;
    const hs_field *f;
    bool dead;
    const ice_id_bytes *lo, *hi;
    pr_val lov, hiv;
} msum_acc;

static const ice_id_bytes *bound_of(const ice_id_bytes *a, int n, int32_t id)
{
    for (int i = 0; i < n; i++)
        if (a[i].id == id && a[i].p)
            return &a[i];
    return NULL;
}

static bool msum_field_ok(const hs_field *f)
{
    pr_vkind k = f ? pr_kind_of(f) : PR_V_NULL;
    return k != PR_V_NULL && k != PR_V_F64;
}

/* The summary of one manifest: columns `ids` (those of the declared indexes
 * first), then the schema's other top-level columns. */
static hs_status msum_of(const ice_manifest_file *mf, const ice_manifest *man,
                         const ice_schema *sc, const ix_registry *prev, ix_msum *out,
                         hs_error *err)
{
    memset(out, 0, sizeof *out);
    msum_acc acc[IX_MSUM_FIELDS];
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        int cnt = pass == 0 ? (prev ? prev->n_decls : 0) : sc->root.n_children;
        for (int i = 0; i < cnt && n < IX_MSUM_FIELDS; i++) {
            int32_t id = pass == 0 ? prev->decls[i].field_id : sc->root.children[i].field_id;
            const hs_field *f = ice_schema_find_id(sc, id);
            bool dup = false;
            for (int k = 0; k < n; k++)
                dup |= acc[k].id == id;
            if (!dup && msum_field_ok(f))
                acc[n++] = (msum_acc){.id = id, .f = f};
        }
    }
    bool any = false;
    for (int64_t i = 0; i < man->n_entries; i++) {
        const ice_manifest_entry *e = &man->entries[i];
        if (e->status == ICE_STATUS_DELETED || e->file.content != ICE_CONTENT_DATA)
            continue;
        any = true;
        for (int k = 0; k < n; k++) {
            msum_acc *a = &acc[k];
            if (a->dead)
                continue;
            const ice_id_bytes *lo = bound_of(e->file.lower_bounds, e->file.n_lower_bounds, a->id);
            const ice_id_bytes *hi = bound_of(e->file.upper_bounds, e->file.n_upper_bounds, a->id);
            pr_val lv, hv;
            if (!lo || !hi || lo->len > IX_MSUM_BOUND_MAX || hi->len > IX_MSUM_BOUND_MAX ||
                !pr_val_from_bound(a->f, lo->p, lo->len, &lv) ||
                !pr_val_from_bound(a->f, hi->p, hi->len, &hv)) {
                a->dead = true;
                continue;
            }
            if (!a->lo || pr_val_cmp(&lv, &a->lov) < 0) {
                a->lo = lo;
                a->lov = lv;
            }
            if (!a->hi || pr_val_cmp(&hv, &a->hiv) > 0) {
                a->hi = hi;
                a->hiv = hv;
            }
        }
    }
    out->length = mf->manifest_length;
    out->snapshot = msum_snapshot(mf);
    out->path = hs_strdup(mf->manifest_path);
    if (!out->path)
        return hs_err_nomem(err, 256);
    if (!any)
        return HS_OK;   /* no live file: no bounds (read like any other) */
    ix_mbound bs[IX_MSUM_FIELDS];
    int nb = 0;
    for (int k = 0; k < n; k++)
        if (!acc[k].dead && acc[k].lo)
            bs[nb++] = (ix_mbound){acc[k].id, acc[k].lo->len, acc[k].hi->len,
                                   (uint8_t *)acc[k].lo->p, (uint8_t *)acc[k].hi->p};
    /* borrowed bounds and paths: ix_msum_copy makes them owned */
    ix_msum tmp = {out->path, out->length, out->snapshot, nb, bs};
    ix_mfile *files = NULL;
    ix_mbound *fbs = NULL;
    bool flat = true;   /* "files" only for unpartitioned manifests */
    for (int64_t i = 0; i < man->n_entries && flat; i++)
        flat = man->entries[i].status == ICE_STATUS_DELETED ||
               man->entries[i].file.n_partition == 0;
    if (flat && man->n_entries > 0 && man->n_entries <= INT32_MAX / IX_MSUM_FIELDS &&
        (files = hs_calloc((size_t)man->n_entries, sizeof *files)) &&
        (fbs = hs_calloc((size_t)man->n_entries * IX_MSUM_FIELDS, sizeof *fbs))) {
        tmp.has_files = true;
        tmp.seq = mf->sequence_number;
        tmp.files = files;
        for (int64_t i = 0; i < man->n_entries; i++) {
            const ice_manifest_entry *e = &man->entries[i];
            if (e->status == ICE_STATUS_DELETED || e->file.content != ICE_CONTENT_DATA)
                continue;
            ix_mfile *f = &files[tmp.n_files];
            ix_mbound *fb = &fbs[(size_t)tmp.n_files * IX_MSUM_FIELDS];
            tmp.n_files++;
            f->path = (char *)e->file.file_path;
            f->size = e->file.file_size_in_bytes;
            f->records = e->file.record_count;
            f->entry = i;
            /* as plan_data_entry resolves them */
            f->data_seq = e->has_sequence_number ? e->sequence_number : 0;
            f->file_seq = e->has_file_sequence_number ? e->file_sequence_number : f->data_seq;
            f->has_first_row_id = e->file.has_first_row_id;
            f->first_row_id = e->file.first_row_id;
            f->bounds = fb;
            for (int k = 0; k < n; k++) {
                const ice_id_bytes *lo = bound_of(e->file.lower_bounds, e->file.n_lower_bounds,
                                                  acc[k].id);
                const ice_id_bytes *hi = bound_of(e->file.upper_bounds, e->file.n_upper_bounds,
                                                  acc[k].id);
                if (lo && hi && lo->len <= IX_MSUM_BOUND_MAX && hi->len <= IX_MSUM_BOUND_MAX)
                    fb[f->n_bounds++] = (ix_mbound){acc[k].id, lo->len, hi->len,
                                                    (uint8_t *)lo->p, (uint8_t *)hi->p};
            }
        }
    }
    ix_msum own;
    hs_status st = ix_msum_copy(&tmp, &own, err);
    hs_free(files);
    hs_free(fbs);
    hs_free(out->path);
    *out = st == HS_OK ? own : (ix_msum){0};
    return st;
}

/* Keeps the "files" of the summaries a[0..n) while their JSON stays within
 * IX_MFILES_MAX bytes (estimated), in list order; drops the rest's. */
static void msums_files_budget(ix_msum *a, int n)
{
    size_t used = 0;
    for (int i = 0; i < n; i++) {
        if (!a[i].has_files)
            continue;
        size_t b = 16;
        for (int k = 0; k < a[i].n_files; k++) {
            const ix_mfile *f = &a[i].files[k];
            b += strlen(f->path) + 120;
            for (int j = 0; j < f->n_bounds; j++)
                b += 2 * ((size_t)f->bounds[j].lower_len + f->bounds[j].upper_len) + 20;
        }
        if (used + b <= IX_MFILES_MAX) {
            used += b;
            continue;
        }
        ix_msum keep;   /* the same summary without its files */
        hs_error ignored = {0};
        ix_msum tmp = a[i];
        tmp.has_files = false;
        tmp.n_files = 0;
        tmp.files = NULL;
        if (ix_msum_copy(&tmp, &keep, &ignored) == HS_OK) {
            ix_msums_free_one(&a[i]);
            a[i] = keep;
        }
    }
}

hs_status tbl_plan_msums(const ice_table_metadata *m, const ix_registry *prev, bool files_too,
                         ix_msum **out, int *n_out, hs_error *err)
{
    *out = NULL;
    *n_out = 0;
    const ice_snapshot *snap = ice_metadata_current_snapshot(m);
    if (!snap || !snap->manifest_list)
        return HS_OK;
    void *obj = NULL;
    tbl_fref *lref = NULL;
    hs_error e2;
    hs_err_clear(&e2);
    hs_status st = tbl_fcache_get(&g_lists, tbl_local(snap->manifest_list), NULL, 0, list_load,
                                  NULL, &obj, &lref, &e2);
    const ice_manifest_list *list = obj;
    if (st != HS_OK || !list)
        return st == HS_NOMEM ? hs_err_nomem(err, 4096) : HS_OK;   /* no summaries */
    ix_msum *a = hs_calloc(IX_MSUM_MAX, sizeof *a);
    int n = 0;
    if (!a)
        st = hs_err_nomem(err, IX_MSUM_MAX * sizeof *a);
    for (int mi = 0; st == HS_OK && mi < list->n_files && n < IX_MSUM_MAX; mi++) {
        const ice_manifest_file *mf = &list->files[mi];
        if (mf->content != ICE_MANIFEST_DATA)
            continue;
        const ix_msum *old = prev ? ix_registry_find_msum(prev, mf->manifest_path,
                                                          mf->manifest_length,
                                                          msum_snapshot(mf)) : NULL;
        if (old && (old->has_files || !files_too)) {
            if ((st = ix_msum_copy(old, &a[n], err)) == HS_OK)
                n++;
            continue;
        }
        const ice_partition_spec *spec = NULL;
        for (int k = 0; k < m->n_specs; k++)
            if (m->specs[k].spec_id == mf->partition_spec_id)
                spec = &m->specs[k];
        const ice_schema *ss = spec ? tbl_schema_for_spec(m, spec) : NULL;
        const ice_manifest *man = NULL;
        tbl_fref *mref = NULL;
        if (!spec || !ss)
            continue;
        hs_status ms = tbl_mcache_get(mf, spec, ss, &man, &mref, &e2);
        if (ms == HS_NOMEM)
            st = hs_err_nomem(err, 4096);
        else if (ms == HS_OK && man && (st = msum_of(mf, man, ss, prev, &a[n], err)) == HS_OK)
            n++;
        tbl_mcache_release(mref);
    }
    tbl_fcache_release(&g_lists, lref);
    if (st != HS_OK) {
        ix_msums_free(a, n);
        return st;
    }
    msums_files_budget(a, n);
    *out = a;
    *n_out = n;
    return HS_OK;
}


static hs_status push_file(tbl_plan *p, const tbl_plan_file *pf, hs_error *err)
{
    if (p->n_files == p->cap_files) {
        int cap = p->cap_files ? p->cap_files * 2 : 64;
        tbl_plan_file *nf = hs_realloc(p->files, (size_t)cap * sizeof *nf);
        if (!nf)
            return hs_err_nomem(err, (size_t)cap * sizeof *nf);
        p->files = nf;
        p->cap_files = cap;
    }
    p->files[p->n_files++] = *pf;
    return HS_OK;
}

static const char *arena_str(hs_arena *a, const char *s)
{
    return s ? hs_arena_strndup(a, s, strlen(s)) : NULL;
}

static const uint8_t *arena_bytes(hs_arena *a, const uint8_t *p, uint32_t n)
{
    uint8_t *d = hs_arena_alloc(a, n + 1);
    if (d && n)
        memcpy(d, p, n);
    return d;
}

/* Remembers a path for warming the next query (object stores, at most
 * HS_WARM_FILES; see tbl_plan.pruned, tbl_plan.skipped).  Best effort: no
 * memory, no warming. */
static void note_path(tbl_plan *p, const char ***a, int *n, int *cap, const char *path)
{
    if (*n >= hs_cfg_get(HS_CFG_WARM_FILES) || !hs_io_is_object_uri(path))
        return;
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 16;
        const char **na = hs_realloc(*a, (size_t)nc * sizeof *na);
        if (!na)
            return;
        *a = na;
        *cap = nc;
    }
    const char *copy = arena_str(&p->arena, path);
    if (copy)
        (*a)[(*n)++] = copy;
}

static void note_pruned(tbl_plan *p, const char *path)
{
    note_path(p, &p->pruned, &p->n_pruned, &p->cap_pruned, path);
}

/* Statistics of one equality column of a file (header comment). */
struct tbl_eqstat {
    bool known;
    pr_col_stats s;
};

static hs_status eqstat_of(tbl_plan *p, const ice_data_file *df, int32_t id,
                           struct tbl_eqstat *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    out->s.value_count = out->s.null_count = out->s.nan_count = -1;
    const hs_field *f = ice_schema_find_id(p->schema, id);
    if (!f || f->type == HS_TYPE_FLOAT16 || f->type == HS_TYPE_FLOAT32 ||
        f->type == HS_TYPE_FLOAT64)
        return HS_OK;
    file_ctx fc = {df};
    out->known = file_stats(&fc, id, f, &out->s);
    /* BYTES bounds borrow the manifest's memory: copied */
    pr_val *v[2] = {out->s.has_lower ? &out->s.lower : NULL,
                    out->s.has_upper ? &out->s.upper : NULL};
    for (int k = 0; k < 2; k++)
        if (v[k] && v[k]->kind == PR_V_BYTES) {
            const uint8_t *c = arena_bytes(&p->arena, v[k]->p, (uint32_t)v[k]->n);
            if (!c)
                return hs_err_nomem(err, v[k]->n);
            v[k]->p = c;
        }
    return HS_OK;
}

/* Whether a delete file's column (d) and a data file's (f) may hold one
 * equal key (header comment). */
static bool eq_col_may_match(const pr_col_stats *d, const pr_col_stats *f)
{
    if (d->null_count != 0 && f->null_count != 0)
        return true;
    bool d_vals = !(d->value_count >= 0 && d->null_count >= 0 && d->null_count == d->value_count);
    bool f_vals = !(f->value_count >= 0 && f->null_count >= 0 && f->null_count == f->value_count);
    if (!d_vals || !f_vals)
        return false;
    if (d->has_lower && f->has_upper && pr_val_cmp(&d->lower, &f->upper) > 0)
        return false;
    if (f->has_lower && d->has_upper && pr_val_cmp(&f->lower, &d->upper) > 0)
        return false;
    return true;
}

/* The data file's statistics of the plan's equality columns. */
static hs_status data_eqstats(tbl_plan *p, const ice_data_file *df, tbl_plan_file *pf,
                              hs_error *err)
{
    size_t n = HS_VEC_LEN(&p->eq_ids, int32_t);
    if (n == 0)
        return HS_OK;
    pf->eq_stats = hs_arena_alloc(&p->arena, n * sizeof *pf->eq_stats);
    if (!pf->eq_stats)
        return hs_err_nomem(err, n * sizeof *pf->eq_stats);
    for (size_t j = 0; j < n; j++)
        HS_TRY(eqstat_of(p, df, HS_VEC_AT(&p->eq_ids, int32_t, j), &pf->eq_stats[j], err));
    return HS_OK;
}

/* One manifest entry of a data manifest (live data files only). */
static hs_status plan_data_entry(tbl_plan *p, int mi, int64_t i, const ice_manifest_file *mf,
                                 spec_proj *sp, tuple_ctx *ptc, const ice_manifest_entry *e,
                                 hs_error *err)
{
    const pr_filter *flt = p->pred.filter;
    hs_status st = HS_OK;
    if (e->status == ICE_STATUS_DELETED || e->file.content != ICE_CONTENT_DATA)
        return HS_OK;
    p->stats.data_files_total++;
    if (sp->expr) {
        ptc->values = e->file.partition;
        ptc->n_values = e->file.n_partition;
        if (!pr_expr_might_match(sp->expr, tuple_stats, ptc)) {
            p->stats.data_files_pruned++;
            return HS_OK;
        }
    }
    if (!pr_filter_is_true(flt)) {
        file_ctx fc = {&e->file};
        if (!pr_expr_might_match(flt->root, file_stats, &fc)) {
            p->stats.data_files_pruned++;
            note_pruned(p, e->file.file_path);
            return HS_OK;
        }
    }
    tbl_plan_file pf = {0};
    pf.path = arena_str(&p->arena, e->file.file_path);
    if (!pf.path)
        return hs_err_nomem(err, 256);
    pf.record_count = e->file.record_count;
    pf.file_size = e->file.file_size_in_bytes;
    pf.spec_id = mf->partition_spec_id;
    pf.data_seq = e->has_sequence_number ? e->sequence_number : 0;
    pf.file_seq = e->has_file_sequence_number ? e->file_sequence_number : pf.data_seq;
    pf.has_first_row_id = e->file.has_first_row_id;
    pf.first_row_id = e->file.first_row_id;
    pf.manifest_index = mi;
    pf.entry_index = i;
    st = data_eqstats(p, &e->file, &pf, err);
    if (st != HS_OK)
        return st;
    if (e->file.n_partition > 0) {
        pf.partition = hs_calloc((size_t)e->file.n_partition, sizeof(ice_value));
        if (!pf.partition)
            return hs_err_nomem(err, sizeof(ice_value));
        pf.n_partition = e->file.n_partition;
        for (int k = 0; k < pf.n_partition && st == HS_OK; k++)
            if (ice_value_copy(&e->file.partition[k], &pf.partition[k]) != HS_OK)
                st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK)
        st = push_file(p, &pf, err);
    if (st != HS_OK) {
        for (int k = 0; k < pf.n_partition; k++)
            ice_value_clear(&pf.partition[k]);
        hs_free(pf.partition);
    }
    return st;
}

/* A data manifest planned from its files as the registry root carries them
 * (index/registry.h "manifests.files": unpartitioned, sequence numbers
 * resolved, the summary's columns' bounds): the entries the manifest would
 * give, with fewer statistics (pruning with fewer is still sound). */
static hs_status plan_folded(tbl_plan *p, int mi, const ice_manifest_file *mf, spec_proj *sp,
                             const ix_msum *ms, hs_error *err)
{
    hs_status st = HS_OK;
    tuple_ctx tc = {.spec = sp->spec};
    for (int i = 0; st == HS_OK && i < ms->n_files; i++) {
        const ix_mfile *f = &ms->files[i];
        ice_id_bytes lo[IX_MSUM_FIELDS], hi[IX_MSUM_FIELDS];
        int nb = f->n_bounds < IX_MSUM_FIELDS ? f->n_bounds : IX_MSUM_FIELDS;
        for (int k = 0; k < nb; k++) {
            lo[k] = (ice_id_bytes){f->bounds[k].field_id, f->bounds[k].lower_len,
                                   f->bounds[k].lower};
            hi[k] = (ice_id_bytes){f->bounds[k].field_id, f->bounds[k].upper_len,
                                   f->bounds[k].upper};
        }
        ice_manifest_entry e = {0};
        e.status = ICE_STATUS_EXISTING;
        e.has_sequence_number = e.has_file_sequence_number = true;
        e.sequence_number = f->data_seq;
        e.file_sequence_number = f->file_seq;
        e.file.content = ICE_CONTENT_DATA;
        e.file.file_path = f->path;
        e.file.record_count = f->records;
        e.file.file_size_in_bytes = f->size;
        e.file.n_lower_bounds = e.file.n_upper_bounds = nb;
        e.file.lower_bounds = lo;
        e.file.upper_bounds = hi;
        e.file.has_first_row_id = f->has_first_row_id;
        e.file.first_row_id = f->first_row_id;
        st = plan_data_entry(p, mi, f->entry, mf, sp, &tc, &e, err);
    }
    hs_buf_free(&tc.scratch);
    return st;
}

static hs_status plan_data_manifest(tbl_plan *p, int mi, const ice_manifest_file *mf,
                                    spec_proj *sp, const ice_schema *spec_schema, hs_error *err)
{
    if (sp->expr && mf->n_partitions >= 0) {
        summary_ctx sc = {mf, sp->spec};
        if (!pr_expr_might_match(sp->expr, summary_stats, &sc)) {
            p->stats.manifests_pruned++;
            int64_t nf = (mf->added_files_count > 0 ? mf->added_files_count : 0) +
                         (mf->existing_files_count > 0 ? mf->existing_files_count : 0);
            p->stats.data_files_total += nf;
            p->stats.data_files_pruned += nf;
            return HS_OK;
        }
    }
    const ice_manifest *man = NULL;
    tbl_fref *mref = NULL;
    HS_TRY(tbl_mcache_get(mf, sp->spec, spec_schema, &man, &mref, err));
    hs_status st = HS_OK;
    tuple_ctx tc = {.spec = sp->spec};
    for (int64_t i = 0; st == HS_OK && i < man->n_entries; i++)
        st = plan_data_entry(p, mi, i, mf, sp, &tc, &man->entries[i], err);
    hs_buf_free(&tc.scratch);
    tbl_mcache_release(mref);
    return st;
}

/* An equality delete file entry: a del_entry with the plan's tbl_eqdel. */
static hs_status plan_eq_delete(tbl_plan *p, int mi, int64_t ei, const ice_manifest_entry *e,
                                const ice_manifest_file *mf, const ice_partition_spec *spec,
                                hs_buf *dels, hs_error *err)
{
    const ice_data_file *df = &e->file;
    del_entry d = {0};
    if (!p->eq_shared)
        HS_TRY(tbl_eqshared_new(&p->eq_shared, err));
    hs_status st = tbl_eqdel_new(p->meta, p->schema, df, &p->arena, p->eq_shared, &d.eq, err);
    if (st != HS_OK) {
        hs_err_prefix(err, "%s", mf->manifest_path);
        return st;
    }
    if (hs_buf_append(&p->eqdels, &d.eq, sizeof d.eq) != HS_OK) {
        tbl_eqdel_free(d.eq);
        return hs_err_nomem(err, sizeof d.eq);
    }
    d.path = tbl_eqdel_path(d.eq);
    d.seq = e->has_sequence_number ? e->sequence_number : 0;
    d.record_count = df->record_count;
    d.manifest_index = mi;
    d.entry_index = ei;
    d.global = ice_spec_is_unpartitioned(spec);
    d.spec_id = mf->partition_spec_id;
    /* the statistics of its equality columns, for pruning */
    if (df->n_equality_ids > 0) {
        size_t n = (size_t)df->n_equality_ids;
        int32_t *ids = hs_arena_alloc(&p->arena, n * sizeof *ids);
        d.eqs = hs_arena_alloc(&p->arena, n * sizeof *d.eqs);
        if (!ids || !d.eqs)
            return hs_err_nomem(err, n * 64);
        memcpy(ids, df->equality_ids, n * sizeof *ids);
        d.eq_col_ids = ids;
        d.n_eqs = (int)n;
        for (size_t k = 0; st == HS_OK && k < n; k++) {
            st = eqstat_of(p, df, ids[k], &d.eqs[k], err);
            bool seen = false;
            for (size_t j = 0; j < HS_VEC_LEN(&p->eq_ids, int32_t); j++)
                seen |= HS_VEC_AT(&p->eq_ids, int32_t, j) == ids[k];
            if (st == HS_OK && !seen && HS_VEC_PUSH(&p->eq_ids, int32_t, ids[k]) != HS_OK)
                st = hs_err_nomem(err, 8);
        }
        if (st != HS_OK)
            return st;
    }
    if (!d.global && df->n_partition > 0) {
        d.partition = hs_calloc((size_t)df->n_partition, sizeof(ice_value));
        if (!d.partition)
            return hs_err_nomem(err, sizeof(ice_value));
        d.n_partition = df->n_partition;
        for (int k = 0; k < d.n_partition && st == HS_OK; k++)
            if (ice_value_copy(&df->partition[k], &d.partition[k]) != HS_OK)
                st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK && hs_buf_append(dels, &d, sizeof d) != HS_OK)
        st = hs_err_nomem(err, sizeof d);
    if (st != HS_OK) {
        for (int k = 0; k < d.n_partition; k++)
            ice_value_clear(&d.partition[k]);
        hs_free(d.partition);
    }
    return st;
}

/* Whether equality delete d applies to data file f by sequence number and
 * partition (header comment). */
static bool eq_applies_part(const del_entry *d, const tbl_plan_file *f)
{
    if (d->seq <= f->data_seq)
        return false;
    if (d->global)
        return true;
    if (f->spec_id != d->spec_id || f->n_partition != d->n_partition)
        return false;
    for (int k = 0; k < d->n_partition; k++)
        if (!ice_value_equals(&f->partition[k], &d->partition[k]))
            return false;
    return true;
}

/* Whether d applies to f: by sequence number and partition, and then
 * unless column statistics rule it out (counted in the plan). */
static bool eq_applies(tbl_plan *p, const del_entry *d, const tbl_plan_file *f)
{
    if (!eq_applies_part(d, f))
        return false;
    for (int k = 0; f->eq_stats && k < d->n_eqs; k++) {
        if (!d->eqs[k].known)
            continue;
        for (size_t j = 0; j < HS_VEC_LEN(&p->eq_ids, int32_t); j++)
            if (HS_VEC_AT(&p->eq_ids, int32_t, j) == d->eq_col_ids[k] &&
                f->eq_stats[j].known &&
                !eq_col_may_match(&d->eqs[k].s, &f->eq_stats[j].s)) {
                p->eq_pairs_pruned++;
                return false;
            }
    }
    p->eq_pairs_applied++;
    return true;
}

static void free_del_entries(hs_buf *dels)
{
    del_entry *d = (del_entry *)dels->data;
    for (size_t i = 0; i < dels->len / sizeof *d; i++) {
        for (int k = 0; k < d[i].n_partition; k++)
            ice_value_clear(&d[i].partition[k]);
        hs_free(d[i].partition);
    }
    hs_buf_free(dels);
}

static hs_status plan_delete_manifest(tbl_plan *p, int mi, const ice_manifest_file *mf,
                                      const ice_partition_spec *spec, const ice_schema *sc,
                                      hs_buf *dels, hs_error *err)
{
    const ice_manifest *man = NULL;
    tbl_fref *mref = NULL;
    HS_TRY(tbl_mcache_get(mf, spec, sc, &man, &mref, err));
    hs_status st = HS_OK;
    for (int64_t i = 0; st == HS_OK && i < man->n_entries; i++) {
        const ice_manifest_entry *e = &man->entries[i];
        if (e->status == ICE_STATUS_DELETED)
            continue;
        const ice_data_file *df = &e->file;
        if (df->content == ICE_CONTENT_EQUALITY_DELETES) {
            st = plan_eq_delete(p, mi, i, e, mf, spec, dels, err);
            continue;
        }
        if (df->content != ICE_CONTENT_POSITION_DELETES)
            continue;
        del_entry d = {0};
        d.is_dv = df->file_format && (strcmp(df->file_format, "PUFFIN") == 0 ||
                                      strcmp(df->file_format, "puffin") == 0);
        d.path = arena_str(&p->arena, df->file_path);
        d.ref = arena_str(&p->arena, df->referenced_data_file);
        d.seq = e->has_sequence_number ? e->sequence_number : 0;
        d.offset = df->has_content_offset ? df->content_offset : 0;
        d.length = df->has_content_size ? df->content_size_in_bytes : 0;
        d.record_count = df->record_count;
        d.manifest_index = mi;
        d.entry_index = i;
        for (int k = 0; k < df->n_lower_bounds; k++)
            if (df->lower_bounds[k].id == ICE_FIELD_ID_FILE_PATH && df->lower_bounds[k].p) {
                d.lo = arena_bytes(&p->arena, df->lower_bounds[k].p, df->lower_bounds[k].len);
                d.lo_len = df->lower_bounds[k].len;
            }
        for (int k = 0; k < df->n_upper_bounds; k++)
            if (df->upper_bounds[k].id == ICE_FIELD_ID_FILE_PATH && df->upper_bounds[k].p) {
                d.hi = arena_bytes(&p->arena, df->upper_bounds[k].p, df->upper_bounds[k].len);
                d.hi_len = df->upper_bounds[k].len;
            }
        if (!d.path || (df->referenced_data_file && !d.ref))
            st = hs_err_nomem(err, 256);
        else if (d.is_dv && !d.ref)
            st = hs_err_set(err, HS_CORRUPT, "%s: deletion vector %s has no "
                            "referenced_data_file", mf->manifest_path, df->file_path);
        else if (hs_buf_append(dels, &d, sizeof d) != HS_OK)
            st = hs_err_nomem(err, sizeof d);
    }
    tbl_mcache_release(mref);
    return st;
}

static int bytes_cmp(const uint8_t *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (an < bn ? -1 : an > bn);
}

static hs_status attach_deletes(tbl_plan *p, const del_entry *d, size_t n_dels, hs_error *err)
{
    if (n_dels == 0)
        return HS_OK;
    p->stats.delete_files = (int64_t)n_dels;
    /* referenced deletes by data path; the rest checked by bounds */
    hs_map by_ref = {0};
    hs_status st = HS_OK;
    for (int i = 0; i < p->n_files && st == HS_OK; i++)
        if (hs_map_put(&by_ref, p->files[i].path, strlen(p->files[i].path), (uint64_t)i) != HS_OK)
            st = hs_err_nomem(err, 64);
    hs_buf *lists = st == HS_OK ? hs_calloc((size_t)p->n_files + 1, sizeof(hs_buf)) : NULL;
    if (st == HS_OK && !lists)
        st = hs_err_nomem(err, sizeof(hs_buf));
    for (size_t k = 0; k < n_dels && st == HS_OK; k++) {
        const del_entry *e = &d[k];
        tbl_delete_ref r = {e->eq ? ICE_CONTENT_EQUALITY_DELETES : ICE_CONTENT_POSITION_DELETES,
                            e->is_dv, e->eq, e->path, e->offset, e->length,
                            e->record_count, e->manifest_index, e->entry_index};
        int64_t used = 0;   /* data files it applies to */
        if (e->eq) {
            for (int i = 0; i < p->n_files && st == HS_OK; i++)
                if (eq_applies(p, e, &p->files[i])) {
                    used++;
                    if (hs_buf_append(&lists[i], &r, sizeof r) != HS_OK)
                        st = hs_err_nomem(err, sizeof r);
                }
        } else if (e->ref) {
            uint64_t i;
            if (hs_map_get(&by_ref, e->ref, strlen(e->ref), &i) &&
                e->seq >= p->files[i].data_seq) {
                used++;
                if (hs_buf_append(&lists[i], &r, sizeof r) != HS_OK)
                    st = hs_err_nomem(err, sizeof r);
            }
        } else {
            for (int i = 0; i < p->n_files && st == HS_OK; i++) {
                const char *path = p->files[i].path;
                size_t pn = strlen(path);
                if (e->seq < p->files[i].data_seq)
                    continue;
                if (e->lo && bytes_cmp(e->lo, e->lo_len, path, pn) > 0)
                    continue;
                if (e->hi && bytes_cmp(e->hi, e->hi_len, path, pn) < 0)
                    continue;
                used++;
                if (hs_buf_append(&lists[i], &r, sizeof r) != HS_OK)
                    st = hs_err_nomem(err, sizeof r);
            }
        }
        if (st == HS_OK && used == 0) {
            r.eq = NULL;   /* nothing reads it through this plan */
            if (hs_buf_append(&p->unused_dels, &r, sizeof r) != HS_OK)
                st = hs_err_nomem(err, sizeof r);
        }
    }
    for (int i = 0; lists && i < p->n_files; i++) {
        if (st == HS_OK && lists[i].len) {
            p->files[i].deletes = hs_arena_alloc(&p->arena, lists[i].len);
            if (!p->files[i].deletes)
                st = hs_err_nomem(err, lists[i].len);
            else {
                memcpy(p->files[i].deletes, lists[i].data, lists[i].len);
                p->files[i].n_deletes = (int)(lists[i].len / sizeof(tbl_delete_ref));
            }
        }
        hs_buf_free(&lists[i]);
    }
    hs_free(lists);
    hs_map_free(&by_ref);
    return st;
}

/* ------------------------------------------------------------------ */
/* queries in progress (the idle gate of background warming)          */

/* Plans alive (a query planning or reading) and when the last one ended:
 * warming for the next query waits until no query has run for
 * TBL_WARM_IDLE_MS (tbl_plan_wait_idle), so that its requests never compete
 * with a query's own, nor with a query issued right after one. */
#define TBL_WARM_IDLE_MS 50
#define TBL_WARM_IDLE_GIVE_UP_MS 60000
static atomic_int g_plans_alive;
static _Atomic int64_t g_plan_last_ns;

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool tbl_plan_wait_idle(void)
{
    int64_t start = mono_ns(), idle = (int64_t)TBL_WARM_IDLE_MS * 1000000;
    for (;;) {
        if (hs_io_background_stop())
            return false;
        int64_t now = mono_ns();
        if (atomic_load(&g_plans_alive) == 0 && now - atomic_load(&g_plan_last_ns) >= idle)
            return true;
        if (now - start > (int64_t)TBL_WARM_IDLE_GIVE_UP_MS * 1000000)
            return false;   /* never idle: the queries read what they need themselves */
        struct timespec ts = {0, 5 * 1000000};
        nanosleep(&ts, NULL);
    }
}

void tbl_plan_free(tbl_plan *p)
{
    if (!p)
        return;
    atomic_store(&g_plan_last_ns, mono_ns());
    atomic_fetch_sub(&g_plans_alive, 1);
    for (int i = 0; i < p->n_files; i++) {
        for (int k = 0; k < p->files[i].n_partition; k++)
            ice_value_clear(&p->files[i].partition[k]);
        hs_free(p->files[i].partition);
    }
    hs_free(p->files);
    hs_free(p->pruned);
    hs_free(p->skipped);
    for (size_t i = 0; i < p->eqdels.len / sizeof(tbl_eqdel *); i++)
        tbl_eqdel_free(((tbl_eqdel **)p->eqdels.data)[i]);
    hs_buf_free(&p->eqdels);
    hs_buf_free(&p->unused_dels);
    hs_buf_free(&p->eq_ids);
    tbl_eqshared_free(p->eq_shared);
    if (p->list_ref)
        tbl_fcache_release(&g_lists, p->list_ref);
    else
        ice_manifest_list_free(p->list);
    if (p->pred_ref)
        pcache_release(p->pred_ref);
    else
        tbl_pred_clear(&p->pred);
    hs_arena_destroy(&p->arena);
    hs_free(p);
}

/* Which data manifests of p's list the index registry root's summaries
 * rule out for p's filter (*skip NULL when none is): their files would all
 * be pruned by their statistics, so the plan is the same without them. */
static hs_status plan_skips(tbl_plan *p, bool **skip, ix_msum **fold, hs_error *err)
{
    *skip = NULL;
    *fold = NULL;
    const ix_registry *root = NULL;
    tbl_fref *ref = NULL;
    hs_error e2;
    hs_err_clear(&e2);
    hs_status st = tbl_ix_root_acquire(p->meta, &root, &ref, &e2);
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 4096);
    if (!root || root->n_msums == 0) {
        tbl_ix_root_release(ref);
        return HS_OK;
    }
    bool *sk = hs_calloc((size_t)p->list->n_files, sizeof *sk);
    if (!sk) {
        tbl_ix_root_release(ref);
        return hs_err_nomem(err, (size_t)p->list->n_files);
    }
    int n = 0, n_fold = 0;
    ix_msum *fd = NULL;
    st = HS_OK;
    for (int mi = 0; st == HS_OK && mi < p->list->n_files; mi++) {
        const ice_manifest_file *mf = &p->list->files[mi];
        if (mf->content != ICE_MANIFEST_DATA)
            continue;   /* delete manifests are always read */
        const ix_msum *ms = ix_registry_find_msum(root, mf->manifest_path, mf->manifest_length,
                                                  msum_snapshot(mf));
        if (!ms)
            continue;
        bool has_files = ms->has_files && ms->seq == mf->sequence_number &&
                         (pr_filter_is_true(p->pred.filter) ||
                          msum_covers(ms, p->pred.filter->root, 0));
        if (!pr_filter_is_true(p->pred.filter) &&
            !pr_expr_might_match(p->pred.filter->root, msum_stats, (void *)ms)) {
            sk[mi] = true;
            n++;
            if (!has_files)   /* for the next query (tbl_ixscan_warm) */
                note_path(p, &p->skipped, &p->n_skipped, &p->cap_skipped, mf->manifest_path);
        } else if (has_files) {
            /* its files, without reading it (index/registry.h "manifests.files") */
            if (!fd && !(fd = hs_calloc((size_t)p->list->n_files, sizeof *fd)))
                st = hs_err_nomem(err, (size_t)p->list->n_files * sizeof *fd);
            else if ((st = ix_msum_copy(ms, &fd[mi], err)) == HS_OK)
                n_fold++;
        }
    }
    tbl_ix_root_release(ref);
    if (n == 0 || st != HS_OK) {
        hs_free(sk);
        sk = NULL;
    }
    if (n_fold == 0 || st != HS_OK) {
        for (int mi = 0; fd && mi < p->list->n_files; mi++)
            ix_msums_free_one(&fd[mi]);
        hs_free(fd);
        fd = NULL;
    }
    *skip = sk;
    *fold = fd;
    return st;
}

hs_status tbl_plan_make(const ice_table_metadata *meta, const ice_snapshot *snap,
                        const ice_schema *schema, const char *filter_text, tbl_plan **out,
                        hs_error *err)
{
    return tbl_plan_make_ex(meta, snap, schema, filter_text, 0, out, err);
}

void tbl_plan_prefetch_footers(const tbl_plan *p)
{
    if (p->n_files > 0 && p->n_files <= 16 && hs_io_is_object_uri(p->files[0].path)) {
        /* object stores: the data files' footers arrive while the index
         * registry and sidecars are read (a few files: a selective query) */
        const char *uris[16];
        for (int i = 0; i < p->n_files; i++)
            uris[i] = p->files[i].path;
        hs_io_prefetch_async(uris, (size_t)p->n_files);
    }
}

hs_status tbl_plan_make_ex(const ice_table_metadata *meta, const ice_snapshot *snap,
                           const ice_schema *schema, const char *filter_text, int flags,
                           tbl_plan **out, hs_error *err)
{
    *out = NULL;
    tbl_plan *p = hs_calloc(1, sizeof *p);
    if (!p)
        return hs_err_nomem(err, sizeof *p);
    atomic_fetch_add(&g_plans_alive, 1);
    p->meta = meta;
    p->snap = snap;
    p->schema = schema;
    hs_status st = pred_acquire(filter_text, &schema->root, &p->pred, &p->pred_ref, err);
    if (st == HS_OK)   /* object stores: the index registry (root, segments) arrives */
        tbl_ix_warm_async(meta);   /* while the manifest list and manifests are read */
    if (st == HS_OK && snap) {
        if (!snap->manifest_list) {
            st = hs_err_set(err, HS_UNSUPPORTED, "snapshot %lld has no manifest list (format v1 "
                            "manifests field): not supported", (long long)snap->snapshot_id);
        } else {
            void *obj = NULL;
            st = tbl_fcache_get(&g_lists, tbl_local(snap->manifest_list), NULL, 0, list_load,
                                NULL, &obj, &p->list_ref, err);
            p->list = obj;
        }
    }
    /* object stores: data manifests that the index registry root's
     * summaries rule out are not fetched (skip[mi]) */
    bool *skip = NULL;
    ix_msum *fold = NULL;   /* [mi].has_files: planned from the root's copy of its files */
    if (st == HS_OK && p->list && p->list->n_files > 0 &&
        hs_io_is_object_uri(p->list->files[0].manifest_path))
        st = plan_skips(p, &skip, &fold, err);
    if (st == HS_OK && p->list && p->list->n_files > 1 &&
        hs_io_is_object_uri(p->list->files[0].manifest_path)) {
        /* object stores: fetch the manifests' tails in parallel first */
        const char **uris = hs_calloc((size_t)p->list->n_files, sizeof *uris);
        size_t nu = 0;
        for (int mi = 0; uris && mi < p->list->n_files; mi++)
            if ((!skip || !skip[mi]) && (!fold || !fold[mi].has_files))
                uris[nu++] = p->list->files[mi].manifest_path;
        if (uris && nu > 1)
            hs_io_prefetch(uris, nu);
        hs_free(uris);
    }
    spec_proj *projs = NULL;
    int n_projs = 0;
    hs_buf dels = {0};
    if (st == HS_OK && p->list) {
        projs = hs_calloc((size_t)meta->n_specs + 1, sizeof *projs);
        if (!projs)
            st = hs_err_nomem(err, sizeof *projs);
        for (int i = 0; st == HS_OK && i < meta->n_specs; i++) {
            spec_proj *sp = &projs[n_projs++];
            sp->spec = &meta->specs[i];
            sp->spec_id = meta->specs[i].spec_id;
            const ice_schema *ss = tbl_schema_for_spec(meta, sp->spec);
            if (ss && ice_spec_partition_type(sp->spec, ss, &sp->ptype, NULL) == HS_OK) {
                sp->ok = true;
                if (!pr_filter_is_true(p->pred.filter))
                    sp->expr = project(p->pred.filter->root, sp, &p->arena);
            }
        }
        /* delete manifests first: the data files then keep the statistics
         * of the equality delete columns (header comment) */
        for (int pass = 0; pass < 2; pass++)
        for (int mi = 0; st == HS_OK && mi < p->list->n_files; mi++) {
            const ice_manifest_file *mf = &p->list->files[mi];
            if ((mf->content == ICE_MANIFEST_DATA) != (pass == 1))
                continue;
            spec_proj *sp = NULL;
            for (int k = 0; k < n_projs; k++)
                if (projs[k].spec_id == mf->partition_spec_id)
                    sp = &projs[k];
            if (!sp) {
                st = hs_err_set(err, HS_CORRUPT, "%s: manifest %s uses partition spec %d, which "
                                "the metadata does not have", snap->manifest_list,
                                mf->manifest_path, (int)mf->partition_spec_id);
                break;
            }
            const ice_schema *ss = tbl_schema_for_spec(meta, sp->spec);
            if (mf->content == ICE_MANIFEST_DATA && skip && skip[mi]) {
                p->stats.manifests_total++;
                p->stats.manifests_pruned++;
                int64_t nf = (mf->added_files_count > 0 ? mf->added_files_count : 0) +
                             (mf->existing_files_count > 0 ? mf->existing_files_count : 0);
                p->stats.data_files_total += nf;
                p->stats.data_files_pruned += nf;
                continue;
            }
            if (mf->content == ICE_MANIFEST_DATA) {
                p->stats.manifests_total++;
                spec_proj tmp = *sp;
                if (!sp->ok)
                    tmp.expr = NULL;
                if (fold && fold[mi].has_files)
                    st = plan_folded(p, mi, mf, &tmp, &fold[mi], err);
                else
                    st = plan_data_manifest(p, mi, mf, &tmp, ss, err);
            } else {
                st = plan_delete_manifest(p, mi, mf, sp->spec, ss, &dels, err);
            }
        }
    }
    hs_free(skip);
    for (int mi = 0; fold && mi < p->list->n_files; mi++)
        ix_msums_free_one(&fold[mi]);
    hs_free(fold);
    if (st == HS_OK)
        st = attach_deletes(p, (const del_entry *)dels.data, dels.len / sizeof(del_entry), err);
    free_del_entries(&dels);
    for (int k = 0; k < n_projs; k++)
        hs_field_clear(&projs[k].ptype);
    hs_free(projs);
    if (st != HS_OK) {
        tbl_plan_free(p);
        return st;
    }
    if (!(flags & TBL_PLAN_DEFER_FOOTERS))
        tbl_plan_prefetch_footers(p);
    *out = p;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* warming the pages of files a query did not read (object stores)    */

/* One file's job: the column chunks of `ids` in every row group, read
 * through io's byte cache (sorted, coalesced over gaps up to 256 KiB, in
 * reads of at most 1 MiB: what io/s3.c caches), at most `budget` bytes. */
typedef struct pwarm {
    char *path;
    int32_t *ids;
    int n_ids;
    uint64_t budget;
} pwarm;

static int range_off_cmp(const void *a, const void *b)
{
    const hs_io_range *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

#define PWARM_GAP ((uint64_t)256 << 10)
#define PWARM_READ ((uint64_t)1 << 20)

static void pwarm_main(void *arg)
{
    pwarm *w = arg;
    hs_file *f = NULL;
    pq_reader *r = NULL;
    hs_error ignored = {0};
    hs_buf rr = {0};   /* hs_io_range */
    uint8_t *tmp = NULL;
    /* the footer: in the byte cache, or in flight (tbl_plan_make's
     * prefetch; an open waits for it rather than asking again) */
    if (hs_io_open(w->path, &f, &ignored) != HS_OK || pq_reader_open(f, &r, &ignored) != HS_OK)
        goto done;
    const hs_field *sch = pq_reader_schema(r);
    const pq_file_meta *m = pq_reader_meta(r);
    uint64_t left = w->budget;
    for (int c = 0; c < sch->n_children; c++) {
        bool want = false;
        for (int k = 0; k < w->n_ids && !want; k++)
            want = sch->children[c].field_id == w->ids[k];
        int first = 0, nl = 0;
        if (want)
            pq_reader_leaves_of(r, c, &first, &nl);
        for (int g = 0; g < m->n_row_groups; g++)
            for (int l = first; l < first + nl && l < m->row_groups[g].n_columns; l++) {
                const pq_column_chunk *cc = &m->row_groups[g].columns[l];
                if (!cc->has_meta_data)
                    continue;
                const pq_column_meta *cm = &cc->meta_data;
                int64_t off = cm->data_page_offset;
                if (cm->has_dictionary_page_offset && cm->dictionary_page_offset > 0 &&
                    cm->dictionary_page_offset < off)
                    off = cm->dictionary_page_offset;
                int64_t len = cm->total_compressed_size;
                if (off < 0 || len <= 0 || (uint64_t)off >= f->size ||
                    (uint64_t)len > f->size - (uint64_t)off)
                    continue;
                if ((uint64_t)len > left)
                    goto read;   /* the budget: the chunks so far */
                left -= (uint64_t)len;
                hs_io_range x = {(uint64_t)off, (uint64_t)len};
                if (hs_buf_append(&rr, &x, sizeof x) != HS_OK)
                    goto done;
            }
    }
read:;
    size_t n = rr.len / sizeof(hs_io_range);
    hs_io_range *v = (hs_io_range *)(void *)rr.data;
    if (n == 0 || !(tmp = hs_malloc((size_t)PWARM_READ)))
        goto done;
    qsort(v, n, sizeof *v, range_off_cmp);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k > 0 && v[i].off <= v[k - 1].off + v[k - 1].len + PWARM_GAP) {
            uint64_t end = v[i].off + v[i].len;
            if (end > v[k - 1].off + v[k - 1].len)
                v[k - 1].len = end - v[k - 1].off;
            continue;
        }
        v[k++] = v[i];
    }
    for (size_t i = 0; i < k; i++)
        for (uint64_t at = 0; at < v[i].len; at += PWARM_READ) {
            uint64_t len = v[i].len - at < PWARM_READ ? v[i].len - at : PWARM_READ;
            if (hs_file_read_at(f, v[i].off + at, (size_t)len, tmp, &ignored) != HS_OK)
                goto done;   /* the query that wants it reports the failure */
        }
done:
    hs_free(tmp);
    hs_buf_free(&rr);
    pq_reader_close(r);
    hs_file_close(f);
    hs_free(w->ids);
    hs_free(w->path);
    hs_free(w);
}

/* (file, columns) warmed lately, direct-mapped by hash: a query repeated on
 * a warm process starts no thread for files whose pages it warmed before
 * (a slot overwritten by another file only costs that file a re-warm, which
 * finds its blocks cached). */
#define PWARM_SEEN 1024
static _Atomic uint64_t g_pwarm_seen[PWARM_SEEN];

void tbl_plan_warm_pages(const char *const *paths, int n, const int32_t *field_ids, int n_ids)
{
    uint64_t mb = (uint64_t)hs_cfg_get(HS_CFG_WARM_PAGES_MB);
    if (n <= 0 || n_ids <= 0 || mb == 0 || !hs_io_is_object_uri(paths[0]) ||
        n > hs_cfg_get(HS_CFG_WARM_FILES))
        return;
    uint64_t per = (mb << 20) / (uint64_t)n;   /* the budget, shared by the files */
    uint64_t cols = hs_xxh64(field_ids, (size_t)n_ids * sizeof *field_ids, (uint64_t)mb);
    for (int i = 0; i < n; i++) {
        uint64_t key = hs_xxh64(paths[i], strlen(paths[i]), cols) | 1;
        if (atomic_exchange(&g_pwarm_seen[key % PWARM_SEEN], key) == key)
            continue;
        pwarm *w = hs_calloc(1, sizeof *w);
        if (!w)
            return;
        w->path = hs_strdup(paths[i]);
        w->ids = hs_malloc((size_t)n_ids * sizeof *w->ids);
        w->n_ids = n_ids;
        w->budget = per;
        if (w->ids)
            memcpy(w->ids, field_ids, (size_t)n_ids * sizeof *w->ids);
        if (!w->path || !w->ids || !hs_io_background(pwarm_main, w)) {
            hs_free(w->ids);
            hs_free(w->path);
            hs_free(w);
            return;
        }
    }
}

/* ------------------------------------------------------------------ */
/* loading the deletes of one data file                               */

hs_status tbl_pos_deletes_read(const char *path, tbl_pos_row_fn fn, void *ctx, hs_error *err)
{
    hs_file *f = NULL;
    pq_reader *r = NULL;
    pq_scan *s = NULL;
    HS_TRY(open_local(path, &f, err));
    hs_status st = pq_reader_open(f, &r, err);
    int cols[2] = {-1, -1};
    if (st == HS_OK) {
        const hs_field *sch = pq_reader_schema(r);
        for (int i = 0; i < sch->n_children; i++) {
            const hs_field *c = &sch->children[i];
            if (c->field_id == ICE_FIELD_ID_FILE_PATH ||
                (c->field_id < 0 && strcmp(c->name, "file_path") == 0))
                cols[0] = i;
            if (c->field_id == ICE_FIELD_ID_POS || (c->field_id < 0 && strcmp(c->name, "pos") == 0))
                cols[1] = i;
        }
        if (cols[0] < 0 || cols[1] < 0)
            st = HS_CORRUPT_AT(err, "%s: position delete file has no file_path and pos columns",
                               path);
    }
    if (st == HS_OK) {
        pq_scan_options so = {.columns = cols, .n_columns = 2};
        st = pq_scan_open(r, &so, &s, err);
    }
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = pq_scan_next(s, &b, err);
        if (st != HS_OK || !b)
            break;
        const hs_column *pc = b->cols[0], *qc = b->cols[1];
        if (pc->type != HS_TYPE_STRING || (qc->type != HS_TYPE_INT64 && qc->type != HS_TYPE_INT32))
            st = HS_CORRUPT_AT(err, "%s: position delete columns have the wrong types", path);
        for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++) {
            if (!hs_col_is_valid(pc, i) || !hs_col_is_valid(qc, i))
                continue;
            const int32_t *o = HS_COL_OFFSETS(pc);
            const char *sp = (const char *)pc->values.data + o[i];
            size_t sn = (size_t)(o[i + 1] - o[i]);
            int64_t pos = qc->type == HS_TYPE_INT64 ? HS_COL_VALUES(qc, int64_t)[i]
                                                    : HS_COL_VALUES(qc, int32_t)[i];
            if (pos < 0 || pos > UINT32_MAX)
                st = HS_CORRUPT_AT(err, "%s: position %lld out of range", path, (long long)pos);
            else
                st = fn(ctx, sp, sn, (uint32_t)pos, err);
        }
        hs_batch_free(b);
    }
    pq_scan_close(s);
    pq_reader_close(r);
    hs_file_close(f);
    return st;
}

bool tbl_same_data_path(const char *sp, size_t sn, const char *want, size_t wn,
                        const char *want_local, size_t wln)
{
    if ((sn == wn && memcmp(sp, want, wn) == 0) || (sn == wln && memcmp(sp, want_local, wln) == 0))
        return true;
    if (sn > 5 && sn < 4096 && memcmp(sp, "file:", 5) == 0) {
        char tmp[4096];
        memcpy(tmp, sp, sn);
        tmp[sn] = '\0';
        return strcmp(tbl_local(tmp), want_local) == 0;
    }
    return false;
}

/* The rows of one data file (want) in a position delete file. */
typedef struct pos_one {
    const char *want, *want_local;
    size_t wn, wln;
    roaring_bitmap_t *bm;
} pos_one;

static hs_status pos_one_row(void *ctx, const char *sp, size_t sn, uint32_t pos, hs_error *err)
{
    (void)err;
    pos_one *o = ctx;
    if (tbl_same_data_path(sp, sn, o->want, o->wn, o->want_local, o->wln))
        roaring_bitmap_add(o->bm, pos);
    return HS_OK;
}

hs_status tbl_load_pos_deletes(const tbl_plan_file *df, const char *path, roaring_bitmap_t *bm,
                               hs_error *err)
{
    pos_one o = {df->path, tbl_local(df->path), 0, 0, bm};
    o.wn = strlen(o.want);
    o.wln = strlen(o.want_local);
    return tbl_pos_deletes_read(path, pos_one_row, &o, err);
}

hs_status tbl_plan_load_deletes(const tbl_plan_file *df, roaring_bitmap_t **out, hs_error *err)
{
    *out = NULL;
    if (df->n_deletes == 0)
        return HS_OK;
    roaring_bitmap_t *bm = roaring_bitmap_create();
    if (!bm)
        return hs_err_nomem(err, 64);
    hs_status st = HS_OK;
    for (int i = 0; i < df->n_deletes && st == HS_OK; i++) {
        const tbl_delete_ref *d = &df->deletes[i];
        if (d->eq) {
            continue;   /* below, all at once */
        } else if (d->is_dv) {
            hs_file *f = NULL;
            roaring_bitmap_t *dv = NULL;
            st = open_local(d->path, &f, err);
            if (st == HS_OK)
                st = ice_dv_read(f, d->offset, d->length, &dv, err);
            hs_file_close(f);
            if (st == HS_OK) {
                roaring_bitmap_or_inplace(bm, dv);
                tbl_bitmap_free(dv);
            }
        } else {
            st = tbl_load_pos_deletes(df, d->path, bm, err);
        }
    }
    if (st == HS_OK)
        st = tbl_eqdel_apply(df, bm, err);
    if (st != HS_OK) {
        tbl_bitmap_free(bm);
        return st;
    }
    *out = bm;
    return HS_OK;
}

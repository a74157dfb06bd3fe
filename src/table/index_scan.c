/*
 * table/index_scan.c - reading a table's sidecar indexes for scans
 * (tbl_ixscan_*), the process-wide cache of opened sidecars and registry
 * versions, warming both ahead of a scan, and hs_table_explain.
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
        tbl_ix_warn("%s: %d index registry segment(s) unusable, their sidecars are not used "
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
        tbl_ix_warn("%s: index registry %s: %s; indexes are not used", m->location, rel, why);
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
    tbl_ix_warn("index %s of %s: %s; reading the data instead", path, v->f->path, why);
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
        if (e->field_id != leaf->field_id || !tbl_ix_scalar_handles(e->kind))
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
        if (e->field_id != leaves[0]->field_id || !tbl_ix_scalar_handles(e->kind))
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
    tbl_ix_free_strs(&j->uris);
    tbl_ix_free_strs(&j->files);
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
            if (!tbl_ix_scalar_handles(e->kind) || !filter_has_field(filter->root, e->field_id))
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
        tbl_ix_free_strs(&uris);
        tbl_ix_free_strs(&files);
    }
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

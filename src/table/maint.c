/*
 * table/maint.c - table maintenance (hyperstream/table.h "Maintenance"):
 * expire snapshots, remove orphan files, rewrite manifests and cherrypick;
 * compaction (Iceberg's rewrite_data_files, bin-pack) is maint_compact.c.
 *
 * Reachability.  Every call that deletes files first computes which files
 * the table still needs, the way Java's ReachableFileUtil does:
 *
 *   from                         reachable files
 *   ---------------------------  ------------------------------------------
 *   a snapshot                   its manifest list, the manifests it lists,
 *                                and the data / delete files of their
 *                                entries that are not DELETED
 *   a metadata file (current     itself, and the index registry root its
 *   and its metadata log)        property hyperstream.index-registry names,
 *                                the segments that root lists (a format-2
 *                                registry), and every sidecar they list
 *   a path table                 metadata/version-hint.text
 *
 * A manifest is read once per call however many snapshots list it (the
 * manifest cache of mcache.h serves repeated calls).  A file a remaining
 * snapshot needs but that cannot be read fails the call before anything is
 * deleted: reachability that is not known is never guessed.
 *
 *   operation            commits                        then deletes
 *   -------------------  -----------------------------  ------------------------------
 *   expire_snapshots     metadata without the expired   reach(expired) - reach(kept),
 *                        snapshots (and their snapshot  their sidecars, and registry
 *                        log entries)                   roots (not current) whose
 *                                                       entries all name files gone,
 *                                                       with their segments that no
 *                                                       other root lists
 *   remove_orphan_files  nothing                        files under metadata/, data/,
 *                                                       index/ older than the window
 *                                                       that nothing above reaches
 *   rewrite_manifests    "replace": small manifests     nothing (the old manifests stay
 *                        merged, entries EXISTING       for the older snapshots)
 *   compact              "replace": small files of a    nothing (expire removes the
 *                        partition rewritten, deletes   rewritten files later)
 *                        applied, indexes built
 *   rewrite_position_    "replace": a partition's       nothing
 *   delete_files         position delete files merged
 *                        (v3: into deletion vectors),
 *                        dangling deletes dropped
 *   cherrypick           fast-forward of main, or an    nothing
 *                        "append" of the picked files
 *
 * Expiry is committed before anything is deleted, so a crash between the
 * two leaves orphans (remove_orphan_files finds them), never a snapshot
 * whose files are gone.  A reader still planning an expired snapshot may
 * find its files deleted (HS_IO / HS_NOT_FOUND from the read): as in every
 * Iceberg engine, time travel reaches only unexpired snapshots.
 *
 * Compaction (bin-pack, its conflict rules) is in maint_compact.c; rewriting
 * position delete files in maint_deletes.c.
 */
#include "table/mcache.h"
#include "table/table_int.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "base/opts.h"
#include "columnar/arrow_c.h"
#include "index/registry.h"
#include "io/io.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define DAY_MS ((int64_t)24 * 3600 * 1000)

/* ------------------------------------------------------------------ */
/* sets of paths                                                       */

enum {
    FK_MANIFEST_LIST, FK_MANIFEST, FK_DATA, FK_POS_DELETES, FK_DV, FK_EQ_DELETES,
    FK_INDEX, FK_REGISTRY, FK_METADATA, FK_OTHER
};

static const char *const fk_names[] = {
    "manifest-list", "manifest", "data", "position-deletes", "deletion-vector",
    "equality-deletes", "index", "index-registry", "metadata", "other"
};

/* Paths (local form: file:// stripped) with a kind each, in insertion order. */
typedef struct fset {
    hs_map map;          /* path -> index + 1 */
    hs_buf paths;        /* char * (owned) */
    hs_buf kinds;        /* int */
} fset;

static void fset_free(fset *s)
{
    for (size_t i = 0; i < HS_VEC_LEN(&s->paths, char *); i++)
        hs_free(HS_VEC_AT(&s->paths, char *, i));
    hs_buf_free(&s->paths);
    hs_buf_free(&s->kinds);
    hs_map_free(&s->map);
}

static size_t fset_len(const fset *s) { return HS_VEC_LEN(&s->paths, char *); }
static const char *fset_path(const fset *s, size_t i) { return HS_VEC_AT(&s->paths, char *, i); }
static int fset_kind(const fset *s, size_t i) { return HS_VEC_AT(&s->kinds, int, i); }

static bool fset_has(const fset *s, const char *path)
{
    const char *l = tbl_local(path);
    return hs_map_get(&s->map, l, strlen(l), NULL);
}

static hs_status fset_add(fset *s, const char *path, int kind, hs_error *err)
{
    const char *l = tbl_local(path);
    size_t n = strlen(l);
    if (hs_map_get(&s->map, l, n, NULL))
        return HS_OK;
    char *c = hs_strndup(l, n);
    if (!c || HS_VEC_PUSH(&s->paths, char *, c) != HS_OK) {
        hs_free(c);
        return hs_err_nomem(err, n);
    }
    if (HS_VEC_PUSH(&s->kinds, int, kind) != HS_OK ||
        hs_map_put(&s->map, l, n, fset_len(s)) != HS_OK)
        return hs_err_nomem(err, n);
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* results                                                             */

hs_status tbl_maint_json_out(json_t *j, char **out, hs_error *err)
{
    if (!out) {
        json_decref(j);
        return HS_OK;
    }
    char *s = j ? hs_json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    *out = s ? hs_strdup(s) : NULL;
    free(s);
    return *out ? HS_OK : hs_err_nomem(err, 256);
}

/* [{"path":..,"kind":..}] of the set's members (all, or those in `only`). */
static json_t *files_json(const fset *s)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < fset_len(s); i++) {
        json_t *o = json_pack("{s:s,s:s}", "path", fset_path(s, i),
                              "kind", fk_names[fset_kind(s, i)]);
        if (!o || json_array_append_new(a, o) != 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

/* ------------------------------------------------------------------ */
/* reachability                                                        */

hs_status tbl_maint_read_list(const char *path, ice_manifest_list **out, hs_error *err)
{
    hs_file *f = NULL;
    HS_TRY(hs_io_open(path, &f, err));
    hs_status st = ice_manifest_list_read(f, out, err);
    hs_file_close(f);
    return st;
}

static int content_kind(const ice_data_file *df)
{
    if (df->content == ICE_CONTENT_DATA)
        return FK_DATA;
    if (df->content == ICE_CONTENT_EQUALITY_DELETES)
        return FK_EQ_DELETES;
    bool puffin = df->file_format && strcasecmp(df->file_format, "puffin") == 0;
    return puffin ? FK_DV : FK_POS_DELETES;
}

/* Adds the live files of manifest mf to out. */
static hs_status reach_manifest(const ice_table_metadata *m, const ice_manifest_file *mf,
                                fset *out, hs_error *err)
{
    const ice_partition_spec *spec = ice_metadata_spec(m, mf->partition_spec_id);
    const ice_schema *sc = spec ? tbl_schema_for_spec(m, spec) : NULL;
    const ice_manifest *man = NULL;
    tbl_fref *ref = NULL;
    HS_TRY(tbl_mcache_get(mf, sc ? spec : NULL, sc, &man, &ref, err));
    hs_status st = HS_OK;
    for (int64_t i = 0; st == HS_OK && i < man->n_entries; i++) {
        const ice_manifest_entry *e = &man->entries[i];
        if (e->status != ICE_STATUS_DELETED)
            st = fset_add(out, e->file.file_path, content_kind(&e->file), err);
    }
    tbl_mcache_release(ref);
    return st;
}

/* Adds what snapshot s reaches to out.  seen: manifests already read.
 * tolerate_missing: files that are gone are skipped (expired snapshots). */
static hs_status reach_snapshot(const ice_table_metadata *m, const ice_snapshot *s, fset *out,
                                hs_map *seen, bool tolerate_missing, hs_error *err)
{
    if (!s->manifest_list) {
        for (int i = 0; i < s->n_v1_manifests; i++) {
            HS_TRY(fset_add(out, s->v1_manifests[i], FK_MANIFEST, err));
            ice_manifest_file mf = {0};
            mf.manifest_path = s->v1_manifests[i];
            mf.partition_spec_id = m->default_spec_id;
            mf.has_added_snapshot_id = true;
            mf.added_snapshot_id = s->snapshot_id;
            const char *l = tbl_local(mf.manifest_path);
            if (hs_map_get(seen, l, strlen(l), NULL))
                continue;
            if (hs_map_put(seen, l, strlen(l), 1) != HS_OK)
                return hs_err_nomem(err, 64);
            hs_status st = reach_manifest(m, &mf, out, err);
            if (st == HS_NOT_FOUND && tolerate_missing) {
                hs_err_clear(err);
                continue;
            }
            HS_TRY(st);
        }
        return HS_OK;
    }
    HS_TRY(fset_add(out, s->manifest_list, FK_MANIFEST_LIST, err));
    ice_manifest_list *l = NULL;
    hs_status st = tbl_maint_read_list(s->manifest_list, &l, err);
    if (st == HS_NOT_FOUND && tolerate_missing) {
        hs_err_clear(err);
        return HS_OK;
    }
    HS_TRY(st);
    for (int i = 0; st == HS_OK && i < l->n_files; i++) {
        const ice_manifest_file *mf = &l->files[i];
        st = fset_add(out, mf->manifest_path, FK_MANIFEST, err);
        const char *lp = tbl_local(mf->manifest_path);
        if (st != HS_OK || hs_map_get(seen, lp, strlen(lp), NULL))
            continue;
        if (hs_map_put(seen, lp, strlen(lp), 1) != HS_OK) {
            st = hs_err_nomem(err, 64);
            break;
        }
        st = reach_manifest(m, mf, out, err);
        if (st == HS_NOT_FOUND && tolerate_missing) {
            hs_err_clear(err);
            st = HS_OK;
        }
    }
    ice_manifest_list_free(l);
    return st;
}

/* Everything the snapshots of m reach. */
static hs_status reach_all(const ice_table_metadata *m, fset *out, hs_error *err)
{
    hs_map seen = {0};
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < m->n_snapshots; i++)
        st = reach_snapshot(m, &m->snapshots[i], out, &seen, false, err);
    hs_map_free(&seen);
    return st;
}

/* The registry version named by metadata m (rel = its property value) with
 * its segments and sidecars, added to out (registry and index kinds).  An
 * unreadable registry is kept (its files added) but lists nothing, unless
 * strict: then a root or segment that exists but cannot be read or parsed
 * fails the call.  A missing root or segment names nothing (it was removed
 * with its version: its entries' sidecars are whatever other versions
 * keep). */
static hs_status reach_registry(const char *location, const char *rel, fset *out,
                                ix_registry *reg_out, bool strict, hs_error *err)
{
    if (!rel)
        return HS_OK;
    hs_buf p = {0};
    if (ix_resolve_path(location, rel, &p) != HS_OK) {
        hs_buf_free(&p);
        return hs_err_nomem(err, 256);
    }
    hs_status st = fset_add(out, hs_buf_cstr(&p), FK_REGISTRY, err);
    ix_registry reg = {0};
    hs_error e;
    hs_err_clear(&e);
    hs_status ls = st == HS_OK ? ix_registry_load_root(location, rel, &reg, &e) : HS_OK;
    if (ls != HS_OK) {
        memset(&reg, 0, sizeof reg);
        if (strict && ls != HS_NOT_FOUND)
            st = hs_err_set(err, ls, "%s (nothing was deleted)", e.msg);
    }
    /* format 2: every segment is kept; their entries, composed, are the
     * registry's (a missing segment contributes none) */
    ix_segdata *segs = reg.n_segments ? hs_calloc((size_t)reg.n_segments, sizeof *segs) : NULL;
    if (st == HS_OK && reg.n_segments && !segs)
        st = hs_err_nomem(err, 256);
    for (int i = 0; st == HS_OK && i < reg.n_segments; i++) {
        if (ix_resolve_path(location, reg.segments[i].path, &p) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        st = fset_add(out, hs_buf_cstr(&p), FK_REGISTRY, err);
        hs_err_clear(&e);
        ls = st == HS_OK ? ix_segment_load(location, &reg.segments[i], &segs[i], &e) : HS_OK;
        if (ls == HS_NOMEM)
            st = hs_err_nomem(err, 256);
        else if (ls != HS_OK && strict && ls != HS_NOT_FOUND)
            st = hs_err_set(err, ls, "%s (nothing was deleted)", e.msg);
    }
    if (st == HS_OK && reg.n_segments) {
        ix_segdata all = {0};
        st = ix_segments_compose(segs, reg.n_segments, true, &all, err);
        if (st == HS_OK) {
            ix_registry_clear_entries(&reg);
            reg.entries = all.entries;
            reg.n_entries = reg.cap_entries = all.n_entries;
            all.entries = NULL;
            all.n_entries = 0;
        }
        ix_segdata_clear(&all);
    }
    for (int i = 0; segs && i < reg.n_segments; i++)
        ix_segdata_clear(&segs[i]);
    hs_free(segs);
    for (int i = 0; st == HS_OK && i < reg.n_entries; i++) {
        if (ix_resolve_path(location, reg.entries[i].index_file, &p) != HS_OK)
            st = hs_err_nomem(err, 256);
        else
            st = fset_add(out, hs_buf_cstr(&p), FK_INDEX, err);
    }
    hs_buf_free(&p);
    if (reg_out && st == HS_OK)
        *reg_out = reg;
    else
        ix_registry_clear(&reg);
    return st;
}

/* The registry property of each metadata-log file, in `rels` (char *,
 * owned).  strict (orphan removal, where a registry not read would have its
 * sidecars taken for orphans): a file that exists but cannot be read or
 * parsed fails the call; otherwise (expiry, where it only means deleting
 * less) it is skipped.  A metadata file that is gone names nothing. */
static hs_status logged_registries(const ice_table_metadata *m, hs_buf *rels, fset *meta_files,
                                   bool strict, hs_error *err)
{
    for (int i = 0; i < m->n_metadata_log; i++) {
        const char *file = m->metadata_log[i].file;
        if (meta_files)
            HS_TRY(fset_add(meta_files, file, FK_METADATA, err));
        hs_buf text = {0};
        hs_error e;
        hs_err_clear(&e);
        hs_status rs = cat_io_read_all(tbl_local(file), &text, &e);
        if (rs != HS_OK) {
            hs_buf_free(&text);
            if (strict && rs != HS_NOT_FOUND)
                return hs_err_set(err, rs, "metadata log: %s", e.msg);
            continue;
        }
        ice_table_metadata old = {0};
        hs_status ps = ice_metadata_parse((const char *)text.data, text.len, &old, &e);
        if (ps != HS_OK && strict) {
            hs_buf_free(&text);
            return hs_err_set(err, ps, "metadata log: %s: %s", file, e.msg);
        }
        if (ps == HS_OK) {
            const char *rel = ice_kv_get(&old.properties, IX_REGISTRY_PROPERTY);
            char *c = rel ? hs_strdup(rel) : NULL;
            if (rel && (!c || HS_VEC_PUSH(rels, char *, c) != HS_OK)) {
                hs_free(c);
                ice_metadata_free(&old);
                hs_buf_free(&text);
                return hs_err_nomem(err, 256);
            }
        }
        ice_metadata_free(&old);
        hs_buf_free(&text);
    }
    return HS_OK;
}

static void strv_free(hs_buf *v)
{
    for (size_t i = 0; i < HS_VEC_LEN(v, char *); i++)
        hs_free(HS_VEC_AT(v, char *, i));
    hs_buf_free(v);
}

/* Deletes the files of `del`; failures (other than already gone) are
 * listed in *failed (a JSON array, may stay empty). */
static void delete_files(const fset *del, json_t *failed)
{
    /* content first, then manifests, then lists: a crash midway leaves
     * files that nothing lists rather than lists naming missing files */
    static const int order[] = {FK_INDEX, FK_DATA, FK_POS_DELETES, FK_DV, FK_EQ_DELETES,
                                FK_OTHER, FK_MANIFEST, FK_MANIFEST_LIST, FK_REGISTRY,
                                FK_METADATA};
    for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
        for (size_t i = 0; i < fset_len(del); i++) {
            if (fset_kind(del, i) != order[o])
                continue;
            const char *p = fset_path(del, i);
            hs_error e;
            hs_err_clear(&e);
            if (cat_io_unlink(p, &e) != HS_OK && failed)
                json_array_append_new(failed, json_pack("{s:s,s:s}", "path", p, "error", e.msg));
        }
}

/* ------------------------------------------------------------------ */
/* expire_snapshots                                                    */

int64_t tbl_maint_prop_i64(const ice_table_metadata *m, const char *key, int64_t dflt)
{
    const char *v = ice_kv_get(&m->properties, key);
    if (!v || !*v)
        return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    return *end ? dflt : (int64_t)x;
}

typedef struct expire_ctx {
    hs_expire_options o;
    int64_t now;
    hs_buf ids;                   /* int64_t: expired in the last attempt */
    int n_expired;
    ice_snapshot *expired;        /* copies (owned), for the file cleanup */
    int64_t *held;                /* snapshots readers of this process are on (pins.c) */
    int n_held;
    const char *held_base;        /* the metadata file they were taken against */
    bool moved;                   /* an attempt's base was another one */
} expire_ctx;

static void expire_ctx_reset(expire_ctx *c)
{
    for (int i = 0; i < c->n_expired; i++)
        ice_snapshot_clear(&c->expired[i]);
    hs_free(c->expired);
    c->expired = NULL;
    c->n_expired = 0;
    hs_buf_reset(&c->ids);
}

/* Which snapshots of m the options expire, into c->ids / c->expired. */
static hs_status select_expired(expire_ctx *c, const ice_table_metadata *m, hs_error *err)
{
    expire_ctx_reset(c);
    const hs_expire_options *o = &c->o;
    bool only_ids = o->n_snapshot_ids > 0 && !o->use_older_than && o->retain_last <= 0;
    int64_t cutoff;
    if (o->use_older_than)
        cutoff = o->older_than_ms;
    else if (only_ids)
        cutoff = INT64_MIN;
    else if (o->retain_last > 0)
        cutoff = INT64_MAX;
    else
        cutoff = c->now - tbl_maint_prop_i64(m, "history.expire.max-snapshot-age-ms", 5 * DAY_MS);
    int keep_n = o->retain_last > 0 ? o->retain_last
                                    : (int)tbl_maint_prop_i64(m, "history.expire.min-snapshots-to-keep", 1);
    if (only_ids)
        keep_n = 0;
    bool *keep = hs_calloc((size_t)m->n_snapshots + 1, sizeof(bool));
    bool *pinned = hs_calloc((size_t)m->n_snapshots + 1, sizeof(bool));   /* refs, current */
    if (!keep || !pinned) {
        hs_free(keep);
        hs_free(pinned);
        return hs_err_nomem(err, (size_t)m->n_snapshots);
    }
#define SNAP_INDEX(id, out)                                                   \
    do {                                                                      \
        (out) = -1;                                                           \
        for (int q_ = 0; q_ < m->n_snapshots; q_++)                           \
            if (m->snapshots[q_].snapshot_id == (id)) {                        \
                (out) = q_;                                                   \
                break;                                                        \
            }                                                                 \
    } while (0)
    int ci;
    SNAP_INDEX(m->current_snapshot_id, ci);
    if (ci >= 0)
        keep[ci] = pinned[ci] = true;
    /* branches: main (the current snapshot) and every other branch keep
     * their newest ancestors; tags keep their snapshot */
    int n_heads = m->n_refs + 1;
    for (int r = 0; r < n_heads; r++) {
        int64_t head;
        int k = keep_n;
        int64_t cut = cutoff;
        if (r == m->n_refs) {
            if (ci < 0 || ice_metadata_ref(m, "main"))
                continue;
            head = m->current_snapshot_id;
        } else {
            const ice_ref *ref = &m->refs[r];
            head = ref->snapshot_id;
            int hi;
            SNAP_INDEX(head, hi);
            if (hi >= 0)
                keep[hi] = pinned[hi] = true;
            if (ref->is_tag)
                continue;
            if (!only_ids && ref->min_snapshots_to_keep >= 0)
                k = ref->min_snapshots_to_keep;
            if (!only_ids && ref->max_snapshot_age_ms >= 0)
                cut = c->now - ref->max_snapshot_age_ms;
        }
        int64_t id = head;
        for (int depth = 0, guard = 0; guard <= m->n_snapshots; guard++, depth++) {
            int si;
            SNAP_INDEX(id, si);
            if (si < 0)
                break;
            const ice_snapshot *s = &m->snapshots[si];
            if (depth < k || s->timestamp_ms >= cut)
                keep[si] = true;
            if (!s->has_parent)
                break;
            id = s->parent_id;
        }
    }
    hs_status st = HS_OK;
    for (int k = 0; k < o->n_snapshot_ids && st == HS_OK; k++) {
        int si;
        SNAP_INDEX(o->snapshot_ids[k], si);
        if (si < 0)
            st = hs_err_set(err, HS_NOT_FOUND, "expire_snapshots: no snapshot %lld in the table",
                            (long long)o->snapshot_ids[k]);
        else if (pinned[si])
            st = hs_err_set(err, HS_INVALID, "expire_snapshots: snapshot %lld is the current "
                            "snapshot or referenced by a branch or tag",
                            (long long)o->snapshot_ids[k]);
        else
            keep[si] = false;
    }
    c->expired = hs_calloc((size_t)m->n_snapshots + 1, sizeof *c->expired);
    if (st == HS_OK && !c->expired)
        st = hs_err_nomem(err, (size_t)m->n_snapshots);
    for (int i = 0; st == HS_OK && i < m->n_snapshots; i++) {
        const ice_snapshot *s = &m->snapshots[i];
        bool listed = false;
        for (int k = 0; k < o->n_snapshot_ids; k++)
            listed = listed || o->snapshot_ids[k] == s->snapshot_id;
        bool expire = listed || (!keep[i] && s->timestamp_ms < cutoff);
        bool held = false;   /* a reader of this process is on it: kept, never an error */
        for (int k = 0; k < c->n_held && !held; k++)
            held = c->held[k] == s->snapshot_id;
        if (pinned[i] || held || !expire)
            continue;
        if (HS_VEC_PUSH(&c->ids, int64_t, s->snapshot_id) != HS_OK)
            st = hs_err_nomem(err, 8);
        else if ((st = ice_snapshot_copy(s, &c->expired[c->n_expired])) == HS_OK)
            c->n_expired++;
        else
            st = hs_err_nomem(err, 64);
    }
#undef SNAP_INDEX
    hs_free(keep);
    hs_free(pinned);
    return st;
}

static hs_status expire_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                           ice_table_metadata *nm, hs_error *err)
{
    expire_ctx *c = vctx;
    if (c->held_base && (!loc || strcmp(loc, c->held_base) != 0)) {
        /* another commit came after the readers' pins were taken: a reader
         * may have loaded it since; start over (hs_table_expire_snapshots) */
        c->moved = true;
        return hs_err_set(err, HS_BUSY, "expire_snapshots: the table moved on meanwhile");
    }
    HS_TRY(select_expired(c, base, err));
    HS_TRY(ice_metadata_copy(base, nm, err));
    return ice_metadata_remove_snapshots(nm, (const int64_t *)c->ids.data,
                                         (int)HS_VEC_LEN(&c->ids, int64_t), err);
}

/* The sidecars of the data files in del, found by name (the layout names
 * them <table>/index/<data-file stem>.<field-id>.<kind>), added to del
 * unless the current registry lists them.  The registry versions that once
 * listed them may have left the metadata log (a compaction drops the
 * entries of the files it rewrote; write.metadata.previous-versions-max
 * bounds the log), and nothing else would ever name them again. */
static hs_status sidecars_by_stem(const char *location, fset *del, const fset *cur_files,
                                  hs_error *err)
{
    fset stems = {0};
    hs_status st = HS_OK;
    size_t n_del = fset_len(del);
    for (size_t i = 0; st == HS_OK && i < n_del; i++) {
        if (fset_kind(del, i) != FK_DATA)
            continue;
        const char *path = fset_path(del, i);
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *dot = strchr(base, '.');
        char stem[512];
        size_t len = dot ? (size_t)(dot - base) : strlen(base);
        if (len == 0 || len >= sizeof stem)
            continue;
        memcpy(stem, base, len);
        stem[len] = 0;
        st = fset_add(&stems, stem, FK_OTHER, err);
    }
    if (st != HS_OK || fset_len(&stems) == 0) {
        fset_free(&stems);
        return st;
    }
    hs_buf dir = {0}, p = {0};
    char **names = NULL;
    size_t n = 0;
    if (hs_buf_printf(&dir, "%s/index", tbl_local(location)) != HS_OK)
        st = hs_err_nomem(err, 256);
    if (st == HS_OK) {
        hs_error e;
        hs_err_clear(&e);
        hs_status ls = cat_io_list_dir(hs_buf_cstr(&dir), &names, &n, &e);
        if (ls != HS_OK && ls != HS_NOT_FOUND) {
            st = ls;
            if (err)
                *err = e;
        }
    }
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        const char *dot = strchr(names[i], '.');
        char stem[512];
        size_t len = dot ? (size_t)(dot - names[i]) : 0;
        if (len == 0 || len >= sizeof stem)
            continue;
        memcpy(stem, names[i], len);
        stem[len] = 0;
        if (!fset_has(&stems, stem))
            continue;
        hs_buf_reset(&p);
        if (hs_buf_printf(&p, "%s/%s", hs_buf_cstr(&dir), names[i]) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        if (!fset_has(cur_files, hs_buf_cstr(&p)) && !fset_has(del, hs_buf_cstr(&p)))
            st = fset_add(del, hs_buf_cstr(&p), FK_INDEX, err);
    }
    cat_strv_free(names, n);
    hs_buf_free(&dir);
    hs_buf_free(&p);
    fset_free(&stems);
    return st;
}

/* A registry file younger than this is never deleted by expiry: a
 * concurrent commit writes its registry root just before its metadata. */
#define REGISTRY_GRACE_MS 10000

/* Registry versions (roots and segments under index/registry/) that no
 * kept version names: the metadata files that named them left the log
 * (every commit of an indexed table writes a root, and
 * write.metadata.previous-versions-max bounds the log), so no snapshot,
 * time travel or refresh can reach them again.  They go when last modified
 * before the expiry's cutoff (older_than, else history.expire.max-
 * snapshot-age-ms ago: a reader still holding such a metadata version has
 * what an expired snapshot's reader has) and at least REGISTRY_GRACE_MS
 * ago.  Local tables only (on object stores remove_orphan_files does it). */
static hs_status unnamed_registries(const expire_ctx *c, const ice_table_metadata *m,
                                    const fset *keep_a, const fset *keep_b, fset *del,
                                    hs_error *err)
{
    const char *loc = m->location;
    if (!loc || (strstr(loc, "://") && strncmp(loc, "file://", 7) != 0))
        return HS_OK;
    int64_t cutoff = c->o.use_older_than
                         ? c->o.older_than_ms
                         : c->now - tbl_maint_prop_i64(m, "history.expire.max-snapshot-age-ms",
                                                       5 * DAY_MS);
    if (cutoff > c->now - REGISTRY_GRACE_MS)
        cutoff = c->now - REGISTRY_GRACE_MS;
    hs_buf dir = {0}, rel = {0}, p = {0};
    char **names = NULL;
    size_t n = 0;
    hs_status st = hs_buf_printf(&dir, "%s/index/registry", tbl_local(loc)) == HS_OK
                       ? HS_OK
                       : hs_err_nomem(err, 256);
    if (st == HS_OK) {
        hs_error e;
        hs_err_clear(&e);
        hs_status ls = cat_io_list_dir(hs_buf_cstr(&dir), &names, &n, &e);
        if (ls != HS_OK && ls != HS_NOT_FOUND) {
            st = ls;
            if (err)
                *err = e;
        }
    }
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        hs_buf_reset(&rel);
        if (hs_buf_printf(&rel, "index/registry/%s", names[i]) != HS_OK ||
            ix_resolve_path(loc, hs_buf_cstr(&rel), &p) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        const char *path = hs_buf_cstr(&p);
        if (fset_has(keep_a, path) || fset_has(keep_b, path) || fset_has(del, path))
            continue;
        struct stat sb;
        if (stat(tbl_local(path), &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        int64_t mt = (int64_t)sb.st_mtim.tv_sec * 1000 + sb.st_mtim.tv_nsec / 1000000;
        if (mt < cutoff)
            st = fset_add(del, path, FK_REGISTRY, err);
    }
    cat_strv_free(names, n);
    hs_buf_free(&dir);
    hs_buf_free(&rel);
    hs_buf_free(&p);
    return st;
}

/* The files to delete after expiring c->expired from `before` (the table
 * as it was), leaving `after`. */
static hs_status expired_files(const expire_ctx *c, const ice_table_metadata *before,
                               const ice_table_metadata *after, fset *del, hs_error *err)
{
    fset gone = {0}, kept = {0};
    hs_map seen = {0};
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < c->n_expired; i++)
        st = reach_snapshot(before, &c->expired[i], &gone, &seen, true, err);
    if (st == HS_OK)
        st = reach_all(after, &kept, err);
    /* content files */
    for (size_t i = 0; st == HS_OK && i < fset_len(&gone); i++)
        if (!fset_has(&kept, fset_path(&gone, i)))
            st = fset_add(del, fset_path(&gone, i), fset_kind(&gone, i), err);
    /* sidecars of deleted data files, and registry versions (never the
     * current one) whose entries all name files no snapshot reaches */
    hs_buf rels = {0};
    const char *cur = ice_kv_get(&after->properties, IX_REGISTRY_PROPERTY);
    fset cur_files = {0};
    if (st == HS_OK)
        st = reach_registry(after->location, cur, &cur_files, NULL, false, err);
    if (st == HS_OK && cur) {
        char *cc = hs_strdup(cur);
        if (!cc || HS_VEC_PUSH(&rels, char *, cc) != HS_OK) {
            hs_free(cc);
            st = hs_err_nomem(err, 64);
        }
    }
    if (st == HS_OK)
        st = logged_registries(after, &rels, NULL, false, err);
    /* roots that go, and the files of the ones that stay */
    hs_buf p = {0};
    fset stay = {0}, go = {0};
    for (size_t r = 0; st == HS_OK && r < HS_VEC_LEN(&rels, char *); r++) {
        const char *rel = HS_VEC_AT(&rels, char *, r);
        ix_registry reg = {0};
        fset files = {0};
        hs_error e;
        hs_err_clear(&e);
        if (reach_registry(after->location, rel, &files, &reg, false, &e) != HS_OK) {
            fset_free(&files);
            continue;
        }
        bool any_live = false;
        for (int i = 0; st == HS_OK && i < reg.n_entries; i++) {
            const ix_entry *en = &reg.entries[i];
            if (fset_has(&kept, en->data_file)) {
                any_live = true;
                continue;
            }
            if (ix_resolve_path(after->location, en->index_file, &p) != HS_OK) {
                st = hs_err_nomem(err, 256);
                break;
            }
            if (fset_has(del, en->data_file) && !fset_has(&cur_files, hs_buf_cstr(&p)))
                st = fset_add(del, hs_buf_cstr(&p), FK_INDEX, err);
        }
        bool is_cur = cur && strcmp(rel, cur) == 0;
        bool goes = !is_cur && !any_live && reg.n_entries > 0;
        /* the root and its segments (registry kind) go or stay together */
        for (size_t i = 0; st == HS_OK && i < fset_len(&files); i++)
            if (fset_kind(&files, i) == FK_REGISTRY)
                st = fset_add(goes ? &go : &stay, fset_path(&files, i), FK_REGISTRY, err);
        fset_free(&files);
        ix_registry_clear(&reg);
    }
    for (size_t i = 0; st == HS_OK && i < fset_len(&go); i++)
        if (!fset_has(&stay, fset_path(&go, i)) && !fset_has(&cur_files, fset_path(&go, i)))
            st = fset_add(del, fset_path(&go, i), FK_REGISTRY, err);
    if (st == HS_OK)
        st = unnamed_registries(c, after, &stay, &cur_files, del, err);
    if (st == HS_OK)
        st = sidecars_by_stem(after->location, del, &cur_files, err);
    fset_free(&stay);
    fset_free(&go);
    hs_buf_free(&p);
    strv_free(&rels);
    fset_free(&cur_files);
    fset_free(&gone);
    fset_free(&kept);
    hs_map_free(&seen);
    return st;
}

hs_status hs_table_expire_snapshots(hs_table *t, const hs_expire_options *opt, char **result_json,
                                    hs_error *err)
{
    if (result_json)
        *result_json = NULL;
    HS_OPTS_IN(opt, hs_expire_options, err);
    if (!opt) {   /* NULL = every default */
        memset(&opt_in_, 0, sizeof opt_in_);
        opt = &opt_in_;
    }
    HS_TRY(tbl_check_writable(t, err));
    if (opt->n_snapshot_ids < 0 || (opt->n_snapshot_ids > 0 && !opt->snapshot_ids) ||
        opt->retain_last < 0)
        return hs_err_set(err, HS_INVALID, "expire_snapshots: negative retain_last or a "
                          "snapshot id count without ids");
    expire_ctx c = {0};
    c.o = *opt;
    ice_table_metadata before = {0}, dry = {0};
    fset del = {0};
    hs_status st = HS_OK;
    /* Readers of this process keep their snapshots (pins.c): the pins are
     * taken after loading the base and the commit must be on that very
     * base, else start over (a reader may have loaded a newer one and not
     * pinned it yet when the pins were taken). */
    for (int attempt = 0;; attempt++) {
        st = hs_table_refresh(t, err);
        hs_free(c.held);
        c.held = NULL;
        c.n_held = 0;
        c.held_base = t->metadata_location;
        c.moved = false;
        c.now = ice_now_ms();
        if (st == HS_OK)
            st = tbl_pins_of(t->meta.location, 10000, &c.held, &c.n_held, err);
        ice_metadata_free(&before);
        if (st == HS_OK)
            st = ice_metadata_copy(&t->meta, &before, err);
        if (st == HS_OK)
            st = select_expired(&c, &t->meta, err);
        if (st != HS_OK || c.n_expired == 0 || opt->dry_run)
            break;
        st = tbl_commit(t, expire_cb, &c, err);
        if (!(st != HS_OK && c.moved && attempt < 20))
            break;
        hs_err_clear(err);
    }
    c.held_base = NULL;
    bool nothing = st == HS_OK && c.n_expired == 0;
    if (st == HS_OK && !nothing) {
        if (opt->dry_run) {
            st = ice_metadata_copy(&t->meta, &dry, err);
            if (st == HS_OK)
                st = ice_metadata_remove_snapshots(&dry, (const int64_t *)c.ids.data,
                                                   (int)HS_VEC_LEN(&c.ids, int64_t), err);
            if (st == HS_OK)
                st = expired_files(&c, &before, &dry, &del, err);
        } else {
            /* committed in the loop above, on the base `before` */
            if (st == HS_OK && c.n_expired > 0)
                st = expired_files(&c, &before, &t->meta, &del, err);
        }
    }
    json_t *failed = json_array();
    if (st == HS_OK && !opt->dry_run && !opt->keep_files)
        delete_files(&del, failed);
    if (st == HS_OK) {
        json_t *ids = json_array();
        for (size_t i = 0; ids && i < HS_VEC_LEN(&c.ids, int64_t); i++)
            json_array_append_new(ids, json_integer(HS_VEC_AT(&c.ids, int64_t, i)));
        json_t *r = json_pack("{s:o,s:o,s:b,s:b,s:o}", "expired_snapshot_ids", ids,
                              "deleted_files", files_json(&del), "dry_run", opt->dry_run != 0,
                              "files_kept", opt->keep_files != 0, "delete_errors", failed);
        failed = NULL;
        st = r ? tbl_maint_json_out(r, result_json, err) : hs_err_nomem(err, 256);
    }
    json_decref(failed);
    fset_free(&del);
    ice_metadata_free(&before);
    ice_metadata_free(&dry);
    expire_ctx_reset(&c);
    hs_free(c.held);
    hs_buf_free(&c.ids);
    return st;
}

/* ------------------------------------------------------------------ */
/* remove_orphan_files                                                 */

static int64_t mtime_ms(const struct stat *s)
{
    return (int64_t)s->st_mtim.tv_sec * 1000 + s->st_mtim.tv_nsec / 1000000;
}

static int kind_by_place(const char *path, const char *loc)
{
    size_t n = strlen(loc);
    const char *rest = strncmp(path, loc, n) == 0 ? path + n : path;
    if (strncmp(rest, "/index/registry/", 16) == 0)
        return FK_REGISTRY;
    if (strncmp(rest, "/index/", 7) == 0)
        return FK_INDEX;
    if (strncmp(rest, "/metadata/", 10) == 0) {
        size_t l = strlen(rest);
        if (l > 14 && strcmp(rest + l - 14, ".metadata.json") == 0)
            return FK_METADATA;
        return strstr(rest, "/snap-") ? FK_MANIFEST_LIST : FK_MANIFEST;
    }
    if (strncmp(rest, "/data/", 6) == 0 || strstr(rest, ".parquet"))
        return strstr(rest, ".puffin") ? FK_DV : FK_DATA;
    return FK_OTHER;
}

/* Walks dir recursively: regular files not in keep, older than cutoff, not
 * dot files, go into out. */
/* dir is the table's own directory (loc, maybe with a trailing slash). */
static bool is_table_root(const char *dir, const char *loc)
{
    size_t n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/')
        n--;
    return strncmp(dir, loc, n) == 0 && (dir[n] == 0 || (dir[n] == '/' && dir[n + 1] == 0));
}

static hs_status sweep(const char *dir, const fset *keep, int64_t cutoff, const char *loc,
                       fset *out, int depth, hs_error *err)
{
    if (depth > 64)
        return HS_OK;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT || errno == ENOTDIR)
            return HS_OK;
        return hs_err_set(err, HS_IO, "%s: cannot list: %s", dir, strerror(errno));
    }
    hs_status st = HS_OK;
    hs_buf p = {0};
    struct dirent *de;
    while (st == HS_OK && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;   /* ., .., locks, temporaries of writes in progress */
        hs_buf_reset(&p);
        if (hs_buf_printf(&p, "%s/%s", dir, de->d_name) != HS_OK) {
            st = hs_err_nomem(err, 256);
            break;
        }
        const char *path = hs_buf_cstr(&p);
        struct stat s;
        if (lstat(path, &s) != 0)
            continue;
        if (S_ISDIR(s.st_mode)) {
            /* <table>/wal/ holds the write-ahead log of append streams
             * (table/wal.c): no Iceberg metadata references its segments,
             * yet they hold acknowledged rows not yet committed, so they
             * are never orphans (reached when write.data.path is the
             * table's own directory) */
            if (depth == 0 && strcmp(de->d_name, "wal") == 0 && is_table_root(dir, loc))
                continue;
            st = sweep(path, keep, cutoff, loc, out, depth + 1, err);
            continue;
        }
        if (!S_ISREG(s.st_mode) || fset_has(keep, path) || mtime_ms(&s) >= cutoff)
            continue;
        char *real = realpath(path, NULL);
        bool kept = real && fset_has(keep, real);
        free(real);
        if (kept)
            continue;
        if (strcmp(de->d_name, "version-hint.text") == 0)
            continue;
        st = fset_add(out, path, kind_by_place(path, loc), err);
    }
    closedir(d);
    hs_buf_free(&p);
    return st;
}

/* sweep for object stores (S3): one recursive listing, whose Last-Modified
 * is the age; the same exclusions (dot names, version-hint.text, the
 * table's wal/). */
static hs_status sweep_objects(const char *dir, const fset *keep, int64_t cutoff,
                               const char *loc, fset *out, hs_error *err)
{
    hs_io_entry *e = NULL;
    size_t n = 0;
    HS_TRY(hs_io_list_entries(dir, &e, &n, err));
    hs_status st = HS_OK;
    hs_buf p = {0};
    bool root = is_table_root(dir, loc);
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        const char *name = e[i].name, *base = strrchr(name, '/');
        base = base ? base + 1 : name;
        if (name[0] == '.' || strstr(name, "/.") || strcmp(base, "version-hint.text") == 0 ||
            (root && strncmp(name, "wal/", 4) == 0) || e[i].mtime_ms < 0 ||
            e[i].mtime_ms >= cutoff)
            continue;
        hs_buf_reset(&p);
        if (hs_buf_printf(&p, "%s/%s", dir, name) != HS_OK)
            st = hs_err_nomem(err, 256);
        else if (!fset_has(keep, hs_buf_cstr(&p)))
            st = fset_add(out, hs_buf_cstr(&p), kind_by_place(hs_buf_cstr(&p), loc), err);
    }
    hs_buf_free(&p);
    hs_io_entries_free(e, n);
    return st;
}

static char *dir_of(const char *loc, const char *sub)
{
    size_t n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/')
        n--;
    hs_buf b = {0};
    if (hs_buf_append(&b, loc, n) != HS_OK || hs_buf_printf(&b, "/%s", sub) != HS_OK) {
        hs_buf_free(&b);
        return NULL;
    }
    hs_buf_cstr(&b);
    return (char *)hs_buf_detach(&b, NULL);
}

hs_status hs_table_remove_orphan_files(hs_table *t, const hs_orphan_options *opt,
                                       char **result_json, hs_error *err)
{
    if (result_json)
        *result_json = NULL;
    HS_OPTS_IN(opt, hs_orphan_options, err);
    if (!opt) {   /* NULL = every default */
        memset(&opt_in_, 0, sizeof opt_in_);
        opt = &opt_in_;
    }
    HS_TRY(tbl_check_writable(t, err));
    HS_TRY(hs_table_refresh(t, err));
    const ice_table_metadata *m = &t->meta;
    const char *loc = tbl_local(m->location);
    bool objects = hs_io_is_object_uri(loc);   /* S3: sweep_objects */
    if (loc[0] != '/' && !objects)
        return hs_err_set(err, HS_UNSUPPORTED, "remove_orphan_files: %s is not a local "
                          "directory or object store location", m->location);
    int64_t cutoff = opt->use_older_than ? opt->older_than_ms : ice_now_ms() - 3 * DAY_MS;
    fset keep = {0}, del = {0};
    hs_buf rels = {0};
    /* what the table reaches: snapshots, metadata files, registries */
    hs_status st = reach_all(m, &keep, err);
    if (st == HS_OK)
        st = fset_add(&keep, t->metadata_location, FK_METADATA, err);
    if (st == HS_OK)
        st = logged_registries(m, &rels, &keep, true, err);
    if (st == HS_OK)
        st = reach_registry(m->location, ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY),
                            &keep, NULL, true, err);
    for (size_t i = 0; st == HS_OK && i < HS_VEC_LEN(&rels, char *); i++)
        st = reach_registry(m->location, HS_VEC_AT(&rels, char *, i), &keep, NULL, true, err);
    /* the same files by their canonical names (relative or symlinked
     * locations, "//"): a file is kept when either name matches */
    for (size_t i = 0, n = fset_len(&keep); st == HS_OK && i < n; i++) {
        char *real = realpath(fset_path(&keep, i), NULL);
        if (real)
            st = fset_add(&keep, real, fset_kind(&keep, i), err);
        free(real);
    }
    /* statistics files (Puffin, written by other engines) the metadata lists */
    const char *stats[2] = {m->statistics_json, m->partition_statistics_json};
    for (int k = 0; st == HS_OK && k < 2; k++) {
        if (!stats[k])
            continue;
        json_error_t je;
        json_t *a = hs_json_loads(stats[k], 0, &je);
        if (!json_is_array(a))
            st = hs_err_set(err, HS_CORRUPT, "%s: %s is not an array (nothing was deleted)",
                            t->metadata_location, k ? "partition-statistics" : "statistics");
        size_t i;
        json_t *o;
        json_array_foreach(a, i, o) {
            const char *sp = json_string_value(json_object_get(o, "statistics-path"));
            if (st == HS_OK && sp)
                st = fset_add(&keep, sp, FK_OTHER, err);
        }
        json_decref(a);
    }
    const char *subs[] = {"metadata", "data", "index"};
    char *root = NULL;
    for (size_t i = 0; st == HS_OK && i < 3; i++) {
        root = dir_of(loc, subs[i]);
        if (!root)
            st = hs_err_nomem(err, 256);
        else
            st = objects ? sweep_objects(root, &keep, cutoff, loc, &del, err)
                         : sweep(root, &keep, cutoff, loc, &del, 0, err);
        hs_free(root);
    }
    const char *data_path = ice_kv_get(&m->properties, "write.data.path");
    if (st == HS_OK && data_path && tbl_local(data_path)[0] == '/')
        st = sweep(tbl_local(data_path), &keep, cutoff, loc, &del, 0, err);
    else if (st == HS_OK && data_path && hs_io_is_object_uri(data_path))
        st = sweep_objects(data_path, &keep, cutoff, loc, &del, err);
    json_t *failed = json_array();
    if (st == HS_OK && !opt->dry_run)
        delete_files(&del, failed);
    if (st == HS_OK) {
        json_t *r = json_pack("{s:o,s:b,s:I,s:o}", "deleted_files", files_json(&del), "dry_run",
                              opt->dry_run != 0, "older_than_ms", (json_int_t)cutoff,
                              "delete_errors", failed);
        failed = NULL;
        st = r ? tbl_maint_json_out(r, result_json, err) : hs_err_nomem(err, 256);
    }
    json_decref(failed);
    strv_free(&rels);
    fset_free(&keep);
    fset_free(&del);
    return st;
}

/* ------------------------------------------------------------------ */
/* rewrite_manifests                                                   */

typedef struct mgroup {
    int content;
    int32_t spec_id;
    hs_buf members;               /* int: indexes into the list */
} mgroup;

hs_status hs_table_rewrite_manifests(hs_table *t, const hs_rewrite_manifests_options *opt,
                                     char **result_json, hs_error *err)
{
    if (result_json)
        *result_json = NULL;
    HS_OPTS_IN(opt, hs_rewrite_manifests_options, err);
    if (!opt) {   /* NULL = every default */
        memset(&opt_in_, 0, sizeof opt_in_);
        opt = &opt_in_;
    }
    HS_TRY(tbl_check_writable(t, err));
    if (opt->target_size_bytes < 0)
        return hs_err_set(err, HS_INVALID, "rewrite_manifests: negative target size");
    HS_TRY(hs_table_refresh(t, err));
    const ice_table_metadata *m = &t->meta;
    int64_t target = opt->target_size_bytes ? opt->target_size_bytes
                                            : tbl_maint_prop_i64(m, "commit.manifest.target-size-bytes",
                                                       (int64_t)8 << 20);
    const ice_snapshot *snap = ice_metadata_current_snapshot(m);
    ice_manifest_list *l = NULL;
    hs_status st = HS_OK;
    if (snap && !snap->manifest_list)
        return hs_err_set(err, HS_UNSUPPORTED, "rewrite_manifests: snapshot %lld has no "
                          "manifest list (format v1)", (long long)snap->snapshot_id);
    if (snap)
        HS_TRY(tbl_maint_read_list(snap->manifest_list, &l, err));
    /* groups of small manifests by (content, spec) */
    mgroup *groups = NULL;
    int n_groups = 0;
    for (int i = 0; st == HS_OK && l && i < l->n_files; i++) {
        const ice_manifest_file *mf = &l->files[i];
        if (mf->manifest_length >= target)
            continue;
        int g = 0;
        while (g < n_groups && (groups[g].content != mf->content ||
                                groups[g].spec_id != mf->partition_spec_id))
            g++;
        if (g == n_groups) {
            mgroup *ng = hs_realloc(groups, sizeof *groups * (size_t)(n_groups + 1));
            if (!ng) {
                st = hs_err_nomem(err, 64);
                break;
            }
            groups = ng;
            memset(&groups[n_groups], 0, sizeof *groups);
            groups[n_groups].content = mf->content;
            groups[n_groups].spec_id = mf->partition_spec_id;
            n_groups++;
        }
        if (HS_VEC_PUSH(&groups[g].members, int, i) != HS_OK)
            st = hs_err_nomem(err, 8);
    }
    tbl_rewrite *rw = NULL;
    int64_t n_rewritten = 0, n_added = 0;
    bool started = false;
    for (int g = 0; st == HS_OK && g < n_groups; g++) {
        int nm = (int)HS_VEC_LEN(&groups[g].members, int);
        if (nm < 2)
            continue;
        const ice_partition_spec *spec = ice_metadata_spec(m, groups[g].spec_id);
        const ice_schema *sc = spec ? tbl_schema_for_spec(m, spec) : NULL;
        if (!spec || !sc) {
            st = hs_err_set(err, HS_CORRUPT, "rewrite_manifests: partition spec %d of a "
                            "manifest is not in the table metadata", (int)groups[g].spec_id);
            break;
        }
        n_rewritten += nm;
        if (opt->dry_run) {
            int64_t bytes = 0;
            for (int k = 0; k < nm; k++)
                bytes += l->files[HS_VEC_AT(&groups[g].members, int, k)].manifest_length;
            n_added += (bytes + target - 1) / target;
            continue;
        }
        if (!started) {
            st = tbl_rewrite_begin(t, "replace", snap->snapshot_id, NULL, NULL, &rw, err);
            started = st == HS_OK;
            if (st != HS_OK)
                break;
        }
        /* bins of consecutive manifests up to the target size */
        hs_buf entries = {0};
        int64_t bin_bytes = 0;
        tbl_fref **refs = hs_calloc((size_t)nm, sizeof *refs);
        if (!refs)
            st = hs_err_nomem(err, (size_t)nm);
        for (int k = 0; st == HS_OK && k <= nm; k++) {
            const ice_manifest_file *mf =
                k < nm ? &l->files[HS_VEC_AT(&groups[g].members, int, k)] : NULL;
            if (HS_VEC_LEN(&entries, ice_manifest_entry) > 0 &&
                (!mf || bin_bytes + mf->manifest_length > target)) {
                st = tbl_rewrite_add_manifest(rw, groups[g].content, sc, spec,
                                              (const ice_manifest_entry *)entries.data,
                                              (int64_t)HS_VEC_LEN(&entries, ice_manifest_entry),
                                              err);
                n_added++;
                hs_buf_reset(&entries);
                bin_bytes = 0;
            }
            if (!mf || st != HS_OK)
                break;
            const ice_manifest *man = NULL;
            st = tbl_mcache_get(mf, spec, sc, &man, &refs[k], err);
            for (int64_t i = 0; st == HS_OK && i < man->n_entries; i++) {
                ice_manifest_entry e = man->entries[i];
                if (e.status == ICE_STATUS_DELETED)
                    continue;
                e.status = ICE_STATUS_EXISTING;   /* ids and sequence numbers are explicit */
                if (hs_buf_append(&entries, &e, sizeof e) != HS_OK)
                    st = hs_err_nomem(err, sizeof e);
            }
            bin_bytes += mf->manifest_length;
            if (st == HS_OK)
                st = tbl_rewrite_replace(rw, mf->manifest_path, err);
        }
        for (int k = 0; refs && k < nm; k++)
            tbl_mcache_release(refs[k]);
        hs_free(refs);
        hs_buf_free(&entries);
    }
    int64_t new_id = -1;
    if (st == HS_OK && rw) {
        st = tbl_rewrite_commit(rw, err);
        if (st == HS_OK)
            new_id = tbl_rewrite_snapshot_id(rw);
    }
    tbl_rewrite_free(rw);
    for (int g = 0; g < n_groups; g++)
        hs_buf_free(&groups[g].members);
    hs_free(groups);
    int total = l ? l->n_files : 0;
    ice_manifest_list_free(l);
    if (st == HS_OK) {
        json_t *r = json_pack("{s:I,s:I,s:I,s:o,s:b}", "rewritten_manifests",
                              (json_int_t)n_rewritten, "added_manifests", (json_int_t)n_added,
                              "kept_manifests", (json_int_t)(total - n_rewritten), "snapshot_id",
                              new_id >= 0 ? json_integer(new_id) : json_null(), "dry_run",
                              opt->dry_run != 0);
        st = r ? tbl_maint_json_out(r, result_json, err) : hs_err_nomem(err, 256);
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* cherrypick                                                          */

static bool is_ancestor(const ice_table_metadata *m, int64_t id)
{
    const ice_snapshot *s = ice_metadata_current_snapshot(m);
    for (int guard = 0; s && guard <= m->n_snapshots; guard++) {
        if (s->snapshot_id == id)
            return true;
        s = s->has_parent ? ice_metadata_snapshot(m, s->parent_id) : NULL;
    }
    return false;
}

static bool already_picked(const ice_table_metadata *m, int64_t id)
{
    char want[32];
    snprintf(want, sizeof want, "%lld", (long long)id);
    const ice_snapshot *s = ice_metadata_current_snapshot(m);
    for (int guard = 0; s && guard <= m->n_snapshots; guard++) {
        const char *v = ice_kv_get(&s->summary, "source-snapshot-id");
        if (v && strcmp(v, want) == 0)
            return true;
        s = s->has_parent ? ice_metadata_snapshot(m, s->parent_id) : NULL;
    }
    return false;
}

typedef struct ff_ctx {
    int64_t id;
} ff_ctx;

static hs_status ff_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                       ice_table_metadata *nm, hs_error *err)
{
    (void)loc;
    ff_ctx *c = vctx;
    const ice_snapshot *s = ice_metadata_snapshot(base, c->id);
    if (!s)
        return hs_err_set(err, HS_NOT_FOUND, "cherrypick: no snapshot %lld", (long long)c->id);
    if (!s->has_parent || s->parent_id != base->current_snapshot_id)
        return hs_err_set(err, HS_CONFLICT, "cherrypick: the table changed (snapshot %lld's "
                          "parent is no longer current); retry", (long long)c->id);
    HS_TRY(ice_metadata_copy(base, nm, err));
    return ice_metadata_set_ref(nm, "main", c->id, false, err);
}

static hs_status pick_check(void *vctx, const ice_table_metadata *base, hs_error *err)
{
    int64_t id = *(const int64_t *)vctx;
    if (already_picked(base, id) || is_ancestor(base, id))
        return hs_err_set(err, HS_CONFLICT, "cherrypick: snapshot %lld was applied by a "
                          "concurrent commit", (long long)id);
    return HS_OK;
}

hs_status hs_table_cherrypick_snapshot(hs_table *t, int64_t snapshot_id, hs_error *err)
{
    HS_TRY(tbl_check_writable(t, err));
    HS_TRY(hs_table_refresh(t, err));
    const ice_table_metadata *m = &t->meta;
    const ice_snapshot *s = ice_metadata_snapshot(m, snapshot_id);
    if (!s)
        return hs_err_set(err, HS_NOT_FOUND, "cherrypick: no snapshot %lld in the table",
                          (long long)snapshot_id);
    if (is_ancestor(m, snapshot_id))
        return hs_err_set(err, HS_INVALID, "cherrypick: snapshot %lld is already an ancestor "
                          "of the current snapshot", (long long)snapshot_id);
    if (already_picked(m, snapshot_id))
        return hs_err_set(err, HS_INVALID, "cherrypick: snapshot %lld was already picked",
                          (long long)snapshot_id);
    if (s->has_parent && s->parent_id == m->current_snapshot_id) {
        ff_ctx c = {snapshot_id};
        return tbl_commit(t, ff_cb, &c, err);
    }
    const char *o = ice_snapshot_operation(s);
    if (!o || strcmp(o, "append") != 0)
        return hs_err_set(err, HS_UNSUPPORTED, "cherrypick: snapshot %lld is a%s %s; only "
                          "appends can be applied onto a different parent",
                          (long long)snapshot_id, o && o[0] == 'o' ? "n" : "",
                          o ? o : "snapshot without operation");
    if (!s->manifest_list)
        return hs_err_set(err, HS_UNSUPPORTED, "cherrypick: snapshot %lld has no manifest list",
                          (long long)snapshot_id);
    ice_manifest_list *l = NULL;
    HS_TRY(tbl_maint_read_list(s->manifest_list, &l, err));
    int64_t id = snapshot_id;
    tbl_rewrite *rw = NULL;
    hs_status st = tbl_rewrite_begin(t, "append", -1, pick_check, &id, &rw, err);
    int64_t files = 0, records = 0, bytes = 0;
    for (int i = 0; st == HS_OK && i < l->n_files; i++) {
        const ice_manifest_file *mf = &l->files[i];
        if (mf->content != ICE_MANIFEST_DATA || !mf->has_added_snapshot_id ||
            mf->added_snapshot_id != snapshot_id)
            continue;
        const ice_partition_spec *spec = ice_metadata_spec(m, mf->partition_spec_id);
        const ice_schema *sc = spec ? tbl_schema_for_spec(m, spec) : NULL;
        if (!sc) {
            st = hs_err_set(err, HS_CORRUPT, "cherrypick: spec %d unknown",
                            (int)mf->partition_spec_id);
            break;
        }
        const ice_manifest *man = NULL;
        tbl_fref *ref = NULL;
        st = tbl_mcache_get(mf, spec, sc, &man, &ref, err);
        hs_buf entries = {0};
        for (int64_t k = 0; st == HS_OK && k < man->n_entries; k++) {
            ice_manifest_entry e = man->entries[k];
            if (e.status != ICE_STATUS_ADDED || !e.has_snapshot_id ||
                e.snapshot_id != snapshot_id)
                continue;
            e.has_snapshot_id = false;             /* inherited: the new snapshot */
            e.has_sequence_number = false;
            e.has_file_sequence_number = false;
            e.file.has_first_row_id = false;
            files++;
            records += e.file.record_count;
            bytes += e.file.file_size_in_bytes;
            if (hs_buf_append(&entries, &e, sizeof e) != HS_OK)
                st = hs_err_nomem(err, sizeof e);
        }
        if (st == HS_OK)
            st = tbl_rewrite_add_manifest(rw, ICE_MANIFEST_DATA, sc, spec,
                                          (const ice_manifest_entry *)entries.data,
                                          (int64_t)HS_VEC_LEN(&entries, ice_manifest_entry),
                                          err);
        hs_buf_free(&entries);
        tbl_mcache_release(ref);
    }
    char src[32];
    snprintf(src, sizeof src, "%lld", (long long)snapshot_id);
    if (st == HS_OK) {
        tbl_rewrite_count_added(rw, files, records, bytes);
        st = tbl_rewrite_summary(rw, "source-snapshot-id", src, err);
    }
    if (st == HS_OK)
        st = tbl_rewrite_commit(rw, err);
    tbl_rewrite_free(rw);
    ice_manifest_list_free(l);
    return st;
}

/*
 * table/maint_compact.c - compaction (hyperstream/table.h hs_table_compact:
 * Iceberg's rewrite_data_files with the bin-pack strategy); the rest of
 * table maintenance is in maint.c, whose header comment shows how the
 * operations fit together.
 *
 *   step          what
 *   ------------  -----------------------------------------------------------
 *   plan          the whole current snapshot (which deletes apply to which
 *                 file), plus the files the filter selects
 *   choose        per partition (spec id + tuple): files below the target
 *                 size, and files with many deletes (Iceberg's
 *                 delete-file-threshold: at least that many delete files,
 *                 default 2^31-1; delete-ratio-threshold: at least that
 *                 fraction of the rows deleted, default 0.3; options or
 *                 table properties hyperstream.compact.delete-*); a
 *                 partition is rewritten when it has min_input_files of
 *                 them or one with many deletes.  A file with a few deletes
 *                 is rewritten only when it is small (its deletes applied)
 *   pack          first-fit decreasing bins of at most the target size
 *   rewrite       per bin, rows read with deletes applied, written as new
 *                 files of the default spec, sorted by the default order
 *                 (or z-ordered: zorder_by, columnar/zorder.c: bins of up to
 *                 hyperstream.compact.zorder-group-bytes, default 1 GiB, read
 *                 whole, sorted as one, cut into files of the target size),
 *                 declared indexes built (write.c tbl_rewrite_*):
 *                   streamed       each batch read from an input file is
 *                                  pushed to the append path
 *                                  (tbl_rewrite_sink: memory bounded by
 *                                  its buffer, not by the input files;
 *                                  files rolled at the target); declared
 *                                  indexes are built from each new file
 *                                  as it closes, one indexed column read
 *                                  back at a time; v3 rows carry _row_id
 *                                  and _last_updated_sequence_number as
 *                                  columns of the batches
 *                   in memory      z-order, and a sort order on a table
 *                                  with indexes or v3: the bin whole, one
 *                                  sorted file per partition (a plain
 *                                  table's sort order streams: each
 *                                  buffer is one sorted run)
 *                 and the row map kept: the positions read of each source
 *                 file (live when planned), and for each row read the new
 *                 file and position it went to (write.c calls back as rows
 *                 are placed, through sorts and z-order), as runs of
 *                 consecutive rows (a streamed bin: a few per output file)
 *                 or, when runs would take more, 8 bytes a row (sorted and
 *                 z-ordered writes)
 *   commit        one "replace" snapshot; on every attempt, against its
 *                 base (compact_attempt):
 *                   - the rewritten files still live are removed, with the
 *                     delete entries that apply only to them (so deletes
 *                     committed meanwhile against them go too);
 *                   - deletes committed since planning against rewritten
 *                     files (position delete files, deletion vectors; a
 *                     file no longer live: all its rows) are carried over:
 *                     the positions deleted now that were live when read
 *                     are mapped to the new files and written as position
 *                     deletes (v2) or deletion vectors (v3) in the same
 *                     snapshot ("carried_deletes"), so a delete is never
 *                     lost nor applied twice and compaction is not starved
 *                     by a stream of small deletes;
 *                   - conflicts (HS_CONFLICT, nothing committed): the
 *                     planned snapshot is no longer an ancestor (rollback);
 *                     an equality delete added since planning applies to a
 *                     rewritten file (it would not apply to the moved rows:
 *                     their sequence number is newer); a rewritten file is
 *                     gone and a "replace" was committed meanwhile (another
 *                     compaction moved the rows: it wins)
 *
 * Partial progress (options partial_progress, max_commits: Iceberg's
 * partial-progress.enabled / .max-commits): the bins are committed
 * ceil(bins / max_commits) at a time, each commit a rewrite of its own
 * checked as above against its base, with only the sources read for it
 * (src_file.batch) removed; our own earlier commits are not taken for a
 * concurrent compaction (compact_ctx.own).  The plan is made on a copy of
 * the metadata, since every commit replaces the handle's.  A failure or
 * cancel loses only the bins not yet committed.  Without it, a conflict of
 * the kinds above loses the whole compaction.
 */
#define _GNU_SOURCE 1 /* qsort_r */
#include "table/mcache.h"
#include "table/table_int.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "base/opts.h"
#include "columnar/arrow_c.h"
#include "columnar/zorder.h"
#include "index/registry.h"
#include "parquet/pcache.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* compact                                                             */

typedef struct cgroup {
    hs_buf key;                   /* spec id + partition tuple */
    hs_buf files;                 /* int: plan indexes */
} cgroup;

hs_status tbl_maint_part_key(int32_t spec_id, const ice_value *vals, int n, hs_buf *key)
{
    hs_buf_reset(key);
    HS_TRY(hs_buf_append(key, &spec_id, sizeof spec_id));
    for (int i = 0; i < n; i++) {
        const ice_value *v = &vals[i];
        uint8_t tag[2] = {(uint8_t)v->is_null, (uint8_t)v->type};
        HS_TRY(hs_buf_append(key, tag, 2));
        size_t at = key->len;
        uint32_t len = 0;
        HS_TRY(hs_buf_append(key, &len, sizeof len));
        size_t before = key->len;
        if (!v->is_null)
            HS_TRY(ice_value_to_bytes(v, key));
        len = (uint32_t)(key->len - before);
        memcpy(key->data + at, &len, sizeof len);
    }
    return HS_OK;
}

/* A key of the partition of plan file f: spec id, then each value. */
static hs_status part_key(const tbl_plan_file *f, hs_buf *key)
{
    return tbl_maint_part_key(f->spec_id, f->partition, f->n_partition, key);
}

/* A rewritten (source) file: which of its positions were read (live at
 * planning), and the input row number of the first of them. */
typedef struct src_file {
    int plan_index;
    int64_t first_row;
    roaring_bitmap_t *live;
    int batch;                    /* the commit (partial progress) it is part of */
} src_file;

/* A data file the compaction wrote. */
typedef struct new_file {
    char *path;                   /* as in its manifest entry (owned) */
    const ice_value *pvals;       /* its partition tuple (the rewrite's) */
    int n_pvals;
    int64_t rows;
} new_file;

typedef struct compact_ctx {
    hs_table *t;
    const tbl_plan *p;
    const bool *rewrite;          /* per plan file */
    hs_map paths;                 /* local paths of rewritten files -> src index */
    int64_t planned;
    const char *ident;
    tbl_rewrite *rw;
    /* the row map (src -> new): input rows are numbered in reading order */
    src_file *src;
    int n_src;
    /* where each input row went (new file << 40 | position): runs of
     * consecutive input rows to consecutive positions (loc_run; a streamed
     * bin is a few runs per output file), or, once runs would take more
     * room than it, a dense array (sorted and z-ordered writes: 8 bytes a
     * row; -1 unset) */
    hs_buf runs;
    bool runs_sorted;
    int64_t *loc;
    int64_t cap_rows, next_row;
    hs_buf newf;                  /* new_file */
    hs_map newf_by_path;          /* path -> index */
    int64_t call_base;            /* input row of the current rewrite call's first row */
    const int64_t *perm;          /* z-order: the call's row i is the bin's row perm[i] */
    int32_t out_spec_id;
    /* partial progress: the commit being made, and the snapshots of the
     * ones made before (ours, not concurrent replaces) */
    int batch;
    hs_buf own;                   /* int64_t snapshot ids */
    /* per commit attempt */
    int64_t carried;
    tbl_del_counts dels;
} compact_ctx;

static bool own_snapshot(const compact_ctx *c, int64_t id)
{
    for (size_t i = 0; i < HS_VEC_LEN(&c->own, int64_t); i++)
        if (HS_VEC_AT(&c->own, int64_t, i) == id)
            return true;
    return false;
}

typedef struct loc_run {
    int64_t g, len, v;            /* input rows [g, g + len) -> v, v + 1, ... */
} loc_run;

#define LOC_POS_BITS 40
#define LOC_POS_MASK (((int64_t)1 << LOC_POS_BITS) - 1)

/* The row map's runs become the dense array. */
static hs_status cc_dense(compact_ctx *c, hs_error *err)
{
    c->loc = hs_malloc((size_t)c->cap_rows * sizeof(int64_t) + 8);
    if (!c->loc)
        return hs_err_nomem(err, (size_t)c->cap_rows * 8);
    memset(c->loc, 0xff, (size_t)c->cap_rows * sizeof(int64_t));
    for (size_t i = 0; i < HS_VEC_LEN(&c->runs, loc_run); i++) {
        const loc_run *r = &HS_VEC_AT(&c->runs, loc_run, i);
        for (int64_t k = 0; k < r->len; k++)
            c->loc[r->g + k] = r->v + k;
    }
    hs_buf_free(&c->runs);
    return HS_OK;
}

static int cmp_run(const void *a, const void *b)
{
    int64_t x = ((const loc_run *)a)->g, y = ((const loc_run *)b)->g;
    return x < y ? -1 : x > y;
}

/* Where input row g went; -1 = not written. */
static int64_t cc_loc(compact_ctx *c, int64_t g)
{
    if (c->loc)
        return c->loc[g];
    size_t n = HS_VEC_LEN(&c->runs, loc_run);
    if (!c->runs_sorted) {
        qsort(c->runs.data, n, sizeof(loc_run), cmp_run);
        c->runs_sorted = true;
    }
    size_t lo = 0, hi = n;   /* the first run starting after g */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (HS_VEC_AT(&c->runs, loc_run, mid).g <= g)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    const loc_run *r = &HS_VEC_AT(&c->runs, loc_run, lo - 1);
    return g < r->g + r->len ? r->v + (g - r->g) : -1;
}

/* tbl_row_map_fn: records where the rewrite put each input row. */
static hs_status cc_row_map(void *vctx, const char *path, const ice_value *pvals, int n_pvals,
                            int64_t pos0, int64_t base, const int64_t *idx, int64_t n,
                            hs_error *err)
{
    compact_ctx *c = vctx;
    uint64_t id;
    size_t plen = strlen(path);
    if (!hs_map_get(&c->newf_by_path, path, plen, &id)) {
        new_file nf = {hs_strdup(path), pvals, n_pvals, 0};
        id = HS_VEC_LEN(&c->newf, new_file);
        if (!nf.path || hs_buf_append(&c->newf, &nf, sizeof nf) != HS_OK ||
            hs_map_put(&c->newf_by_path, path, plen, id) != HS_OK) {
            if (HS_VEC_LEN(&c->newf, new_file) == id)
                hs_free(nf.path);
            return hs_err_nomem(err, plen);
        }
    }
    if (id >= ((uint64_t)1 << (63 - LOC_POS_BITS)) || pos0 + n > LOC_POS_MASK)
        return hs_err_set(err, HS_INVALID, "compact: too many output files or rows for the row "
                          "map");
    new_file *nf = &HS_VEC_AT(&c->newf, new_file, id);
    for (int64_t j = 0; j < n; j++) {
        int64_t in = base + idx[j];
        if (c->perm)
            in = c->perm[in];
        int64_t g = c->call_base + in;
        if (g < 0 || g >= c->next_row)
            return hs_err_set(err, HS_INTERNAL, "compact: row map: input row %lld of %lld",
                              (long long)g, (long long)c->next_row);
        int64_t v = (int64_t)(id << LOC_POS_BITS) | (pos0 + j);
        if (c->loc) {
            c->loc[g] = v;
            continue;
        }
        size_t nr = HS_VEC_LEN(&c->runs, loc_run);
        loc_run *last = nr ? &HS_VEC_AT(&c->runs, loc_run, nr - 1) : NULL;
        if (last && last->g + last->len == g && last->v + last->len == v) {
            last->len++;
            continue;
        }
        bool in_order = !last || last->g < g;
        loc_run r = {g, 1, v};
        if (hs_buf_append(&c->runs, &r, sizeof r) != HS_OK)
            return hs_err_nomem(err, sizeof r);
        c->runs_sorted = c->runs_sorted && in_order;
        if ((int64_t)(nr + 1) * (int64_t)sizeof(loc_run) > c->cap_rows * 8)
            HS_TRY(cc_dense(c, err));
    }
    if (pos0 + n > nf->rows)
        nf->rows = pos0 + n;
    return HS_OK;
}

/* Registers the positions read from source file plan index pi (taken),
 * whose rows are numbered from `first` (and run to c->next_row). */
static hs_status cc_source_at(compact_ctx *c, int pi, roaring_bitmap_t *live, int64_t first,
                              hs_error *err)
{
    uint64_t s;
    const char *l = tbl_local(c->p->files[pi].path);
    if (!hs_map_get(&c->paths, l, strlen(l), &s) || (int)s >= c->n_src) {
        tbl_bitmap_free(live);
        return hs_err_set(err, HS_INTERNAL, "compact: %s read but not planned", l);
    }
    if (!live && !(live = roaring_bitmap_create()))
        return hs_err_nomem(err, 64);
    src_file *sf = &c->src[s];
    tbl_bitmap_free(sf->live);
    sf->live = live;
    sf->batch = c->batch;
    sf->first_row = first;
    if (c->next_row - first != (int64_t)roaring_bitmap_get_cardinality(live))
        return hs_err_set(err, HS_INTERNAL, "compact: %s: %lld rows read, %lld positions", l,
                          (long long)(c->next_row - first),
                          (long long)roaring_bitmap_get_cardinality(live));
    return HS_OK;
}

/* The same for a file read whole before any of its rows is placed: its
 * rows are numbered from here. */
static hs_status cc_source(compact_ctx *c, int pi, roaring_bitmap_t *live, hs_error *err)
{
    int64_t first = c->next_row;
    c->next_row += live ? (int64_t)roaring_bitmap_get_cardinality(live) : 0;
    if (c->next_row > c->cap_rows) {
        tbl_bitmap_free(live);
        return hs_err_set(err, HS_INTERNAL, "compact: %s has more live rows than its record "
                          "count", c->p->files[pi].path);
    }
    return cc_source_at(c, pi, live, first, err);
}

/* Positions of new file `id` to delete (per attempt). */
static hs_status carry(compact_ctx *c, const src_file *sf, uint32_t pos, roaring_bitmap_t **bms,
                       hs_error *err)
{
    uint64_t rank = roaring_bitmap_rank(sf->live, pos);
    if (rank == 0 || !roaring_bitmap_contains(sf->live, pos))
        return HS_OK;   /* already deleted when planned */
    int64_t g = sf->first_row + (int64_t)rank - 1;
    int64_t v = cc_loc(c, g);
    if (v < 0)
        return hs_err_set(err, HS_INTERNAL, "compact: row %lld of %s was not written",
                          (long long)pos, c->p->files[sf->plan_index].path);
    int64_t id = v >> LOC_POS_BITS;
    if (!bms[id] && !(bms[id] = roaring_bitmap_create()))
        return hs_err_nomem(err, 64);
    if (roaring_bitmap_add_checked(bms[id], (uint32_t)(v & LOC_POS_MASK)))
        c->carried++;
    return HS_OK;
}

/* Whether delete ref d of a file is one of the file's planned refs. */
static bool planned_ref(const tbl_plan_file *pf, const tbl_delete_ref *d)
{
    for (int k = 0; k < pf->n_deletes; k++)
        if (strcmp(pf->deletes[k].path, d->path) == 0 && pf->deletes[k].offset == d->offset)
            return true;
    return false;
}

/* The delete entries of plan fp that apply only to removed files
 * (remove[i]), and those that apply to no live file at all (fp->unused_dels:
 * an equality delete all of whose pairs bounds or sequence numbers left
 * out, a position delete of files gone), as tbl_rewrite_remove's
 * remove_del; counted by kind in *dc (the snapshot summary's removed-*). */
static void count_drop(const tbl_delete_ref *d, tbl_del_counts *dc)
{
    if (d->kind == ICE_CONTENT_POSITION_DELETES || d->is_dv) {
        dc->pos_files++;
        dc->pos_records += d->record_count;
    } else {
        dc->eq_files++;
        dc->eq_records += d->record_count;
    }
}

static hs_status drop_deletes(const tbl_plan *fp, const bool *remove, hs_map *remove_del,
                              tbl_del_counts *dc, hs_error *err)
{
    hs_map refs = {0};
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < fp->n_files; i++)
        for (int k = 0; k < fp->files[i].n_deletes; k++) {
            const tbl_delete_ref *d = &fp->files[i].deletes[k];
            int64_t kk[2] = {d->manifest_index, d->entry_index};
            uint64_t v = 0;
            (void)hs_map_get(&refs, kk, sizeof kk, &v);
            /* low 32 bits: files it applies to; high: removed ones */
            v += 1 + (remove[i] ? ((uint64_t)1 << 32) : 0);
            if (hs_map_put(&refs, kk, sizeof kk, v) != HS_OK)
                st = hs_err_nomem(err, 64);
        }
    for (int i = 0; st == HS_OK && i < fp->n_files; i++)
        for (int k = 0; st == HS_OK && k < fp->files[i].n_deletes; k++) {
            const tbl_delete_ref *d = &fp->files[i].deletes[k];
            int64_t kk[2] = {d->manifest_index, d->entry_index};
            uint64_t v = 0;
            (void)hs_map_get(&refs, kk, sizeof kk, &v);
            if ((v & 0xffffffffu) != (v >> 32) || hs_map_get(remove_del, kk, sizeof kk, NULL))
                continue;
            int mi = d->manifest_index;
            char mkey[sizeof mi];
            memcpy(mkey, &mi, sizeof mi);
            if (hs_map_put(remove_del, kk, sizeof kk, 1) != HS_OK ||
                hs_map_put(remove_del, mkey, sizeof mi, 1) != HS_OK)
                st = hs_err_nomem(err, 64);
            count_drop(d, dc);
        }
    hs_map_free(&refs);
    for (size_t i = 0; st == HS_OK && i < HS_VEC_LEN(&fp->unused_dels, tbl_delete_ref); i++) {
        const tbl_delete_ref *d = &HS_VEC_AT(&fp->unused_dels, tbl_delete_ref, i);
        int64_t kk[2] = {d->manifest_index, d->entry_index};
        int mi = d->manifest_index;
        char mkey[sizeof mi];
        memcpy(mkey, &mi, sizeof mi);
        if (hs_map_get(remove_del, kk, sizeof kk, NULL))
            continue;
        if (hs_map_put(remove_del, kk, sizeof kk, 1) != HS_OK ||
            hs_map_put(remove_del, mkey, sizeof mi, 1) != HS_OK)
            st = hs_err_nomem(err, 64);
        count_drop(d, dc);
    }
    return st;
}

/* The commit check, on every attempt's base (header comment, "Commit"):
 * redoes the removal against the base's current snapshot and carries the
 * deletes committed since planning over to the new files. */
static hs_status compact_attempt(void *vctx, const ice_table_metadata *base, hs_error *err)
{
    compact_ctx *c = vctx;
    const ice_snapshot *cur = ice_metadata_current_snapshot(base);
    bool ancestor = false;
    const ice_snapshot *replace = NULL;   /* the latest concurrent "replace" */
    for (const ice_snapshot *s = cur; s && !ancestor;
         s = s->has_parent ? ice_metadata_snapshot(base, s->parent_id) : NULL) {
        ancestor = s->snapshot_id == c->planned;
        const char *o = ice_snapshot_operation(s);
        if (!ancestor && !replace && o && strcmp(o, "replace") == 0 &&
            !own_snapshot(c, s->snapshot_id))
            replace = s;
    }
    if (!ancestor)
        return hs_err_set(err, HS_CONFLICT, "%s: snapshot %lld, on which this compaction was "
                          "planned, is no longer an ancestor of the current snapshot; nothing "
                          "was committed", c->ident, (long long)c->planned);
    tbl_rewrite_reset(c->rw);
    c->carried = 0;
    c->dels = (tbl_del_counts){0};
    const tbl_plan *fp = c->p;
    tbl_plan *own = NULL;
    hs_status st = HS_OK;
    if (cur->snapshot_id != c->planned) {
        const ice_schema *sc = ice_metadata_current_schema(base);
        if (!sc)
            return hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
        HS_TRY(tbl_plan_make(base, cur, sc, NULL, &own, err));
        fp = own;
    }
    size_t n_new = HS_VEC_LEN(&c->newf, new_file);
    bool *remove = hs_calloc((size_t)fp->n_files + 1, sizeof(bool));
    bool *found = hs_calloc((size_t)c->n_src + 1, sizeof(bool));
    roaring_bitmap_t **bms = hs_calloc(n_new + 1, sizeof *bms);
    if (!remove || !found || !bms)
        st = hs_err_nomem(err, 64);
    for (int i = 0; st == HS_OK && i < fp->n_files; i++) {
        const tbl_plan_file *f = &fp->files[i];
        const char *l = tbl_local(f->path);
        uint64_t si;
        if (!hs_map_get(&c->paths, l, strlen(l), &si) || !c->src[si].live ||
            c->src[si].batch != c->batch)
            continue;   /* not rewritten, or not by this commit (partial progress) */
        remove[i] = true;
        found[si] = true;
        if (fp == c->p)
            continue;   /* nothing committed since planning */
        const src_file *sf = &c->src[si];
        const tbl_plan_file *pf = &c->p->files[sf->plan_index];
        /* deletes of this file committed since planning: position deletes
         * and deletion vectors are carried over; an equality delete would
         * no longer apply to the moved rows (their sequence number is
         * newer): a conflict */
        tbl_plan_file pos = *f;
        tbl_delete_ref *refs = hs_calloc((size_t)f->n_deletes + 1, sizeof *refs);
        if (!refs) {
            st = hs_err_nomem(err, 64);
            break;
        }
        pos.n_deletes = 0;
        pos.deletes = refs;
        for (int k = 0; st == HS_OK && k < f->n_deletes; k++) {
            const tbl_delete_ref *d = &f->deletes[k];
            if (d->kind == ICE_CONTENT_POSITION_DELETES || d->is_dv)
                refs[pos.n_deletes++] = *d;
            else if (!planned_ref(pf, d))
                st = hs_err_set(err, HS_CONFLICT, "%s: a concurrent commit added equality "
                                "deletes (%s) that may apply to rows of %s, which this "
                                "compaction rewrites; nothing was committed (compact again)",
                                c->ident, d->path, f->path);
        }
        roaring_bitmap_t *now = NULL;
        if (st == HS_OK)
            st = tbl_plan_load_deletes(&pos, &now, err);
        hs_free(refs);
        if (st == HS_OK && now) {
            roaring_bitmap_and_inplace(now, sf->live);
            roaring_uint32_iterator_t it;
            roaring_init_iterator(now, &it);
            for (; st == HS_OK && it.has_value; roaring_advance_uint32_iterator(&it))
                st = carry(c, sf, it.current_value, bms, err);
        }
        tbl_bitmap_free(now);
    }
    /* a rewritten file no longer live: a concurrent commit removed all its
     * rows (a delete, an overwrite or another compaction moved them) */
    for (int s = 0; st == HS_OK && fp != c->p && s < c->n_src; s++) {
        if (found[s] || !c->src[s].live || c->src[s].batch != c->batch)
            continue;
        if (replace) {   /* another compaction moved them: it wins, we give up */
            st = hs_err_set(err, HS_CONFLICT, "%s: a concurrent replace (snapshot %lld, another "
                            "compaction) rewrote %s, which this compaction rewrites; nothing "
                            "was committed", c->ident, (long long)replace->snapshot_id,
                            c->p->files[c->src[s].plan_index].path);
            break;
        }
        roaring_uint32_iterator_t it;
        roaring_init_iterator(c->src[s].live, &it);
        for (; st == HS_OK && it.has_value; roaring_advance_uint32_iterator(&it))
            st = carry(c, &c->src[s], it.current_value, bms, err);
    }
    /* delete entries that apply only to rewritten files go too */
    hs_map remove_del = {0};
    if (st == HS_OK)
        st = drop_deletes(fp, remove, &remove_del, &c->dels, err);
    if (st == HS_OK)
        st = tbl_rewrite_remove(c->rw, fp, remove, &remove_del, err);
    if (st == HS_OK)
        tbl_rewrite_count_deletes_removed(c->rw, &c->dels);
    /* the carried deletes, against the new files, in this same snapshot */
    int n_acts = 0;
    for (size_t k = 0; k < n_new && bms; k++)
        n_acts += bms[k] != NULL;
    if (st == HS_OK && n_acts > 0) {
        tbl_plan fake;
        memset(&fake, 0, sizeof fake);
        fake.meta = base;
        fake.files = hs_calloc((size_t)n_acts, sizeof *fake.files);
        tbl_file_action *acts = hs_calloc((size_t)n_acts, sizeof *acts);
        hs_map dummy = {0};
        if (!fake.files || !acts)
            st = hs_err_nomem(err, 64);
        for (size_t k = 0; st == HS_OK && k < n_new; k++) {
            if (!bms[k])
                continue;
            const new_file *nf = &HS_VEC_AT(&c->newf, new_file, k);
            tbl_plan_file *f = &fake.files[fake.n_files];
            f->path = nf->path;
            f->record_count = nf->rows;
            f->spec_id = c->out_spec_id;
            f->n_partition = nf->n_pvals;
            f->partition = (ice_value *)nf->pvals;
            acts[fake.n_files].file = fake.n_files;
            acts[fake.n_files].hits = bms[k];
            acts[fake.n_files].live = nf->rows;
            fake.n_files++;
        }
        if (st == HS_OK)
            st = tbl_rewrite_position_deletes(c->rw, &fake, acts, fake.n_files, &dummy, err);
        hs_map_free(&dummy);
        hs_free(acts);
        hs_free(fake.files);
    }
    if (st == HS_OK && c->carried > 0) {
        char v[32];
        snprintf(v, sizeof v, "%lld", (long long)c->carried);
        st = tbl_rewrite_summary(c->rw, "hyperstream.compact.carried-deletes", v, err);
    }
    for (size_t k = 0; bms && k < n_new; k++)
        tbl_bitmap_free(bms[k]);
    hs_free(bms);
    hs_free(found);
    hs_free(remove);
    hs_map_free(&remove_del);
    tbl_plan_free(own);
    return st;
}

static hs_status collect_batch(void *ctx, hs_batch *b, hs_error *err)
{
    hs_batch *acc = ctx;
    hs_status st = HS_OK;
    for (int c = 0; c < acc->n_cols && st == HS_OK; c++)
        st = hs_col_append_column(acc->cols[c], b->cols[c], err);
    if (st == HS_OK)
        acc->n_rows += b->n_rows;
    hs_batch_free(b);
    return st;
}

typedef struct bin {
    hs_buf files;                 /* int */
    int64_t bytes;
} bin;

/* The bin-pack path: each batch read from an input file (deletes applied)
 * goes straight to the writer, which buffers at most
 * hyperstream.write.buffer-bytes; the rows are numbered as they are read,
 * so the row map can place them before their file is read to the end. */
typedef struct bin_push {
    tbl_rewrite_sink *sink;
    compact_ctx *cc;
} bin_push;

static hs_status push_batch(void *ctx, hs_batch *b, hs_error *err)
{
    bin_push *bp = ctx;
    bp->cc->next_row += b->n_rows;
    if (bp->cc->next_row > bp->cc->cap_rows) {
        hs_batch_free(b);
        return hs_err_set(err, HS_INTERNAL, "compact: more live rows read than planned");
    }
    return tbl_rewrite_sink_push(bp->sink, b, err);
}

/* Streams bin bb's files through the writer (files rolled at target;
 * file_schema: NULL, or the current schema with the lineage columns, which
 * `schema` then reads too; declared indexes are built from each file the
 * writer closes). */
static hs_status bin_stream(tbl_rewrite *rw, compact_ctx *cc, const bin *bb,
                            const ice_schema *file_schema, const hs_field *schema,
                            const hs_compact_options *o, int64_t target, int64_t *done,
                            int64_t total, hs_error *err)
{
    bin_push bp = {NULL, cc};
    HS_TRY(tbl_rewrite_sink_open(rw, target, file_schema, &bp.sink, err));
    hs_status st = HS_OK;
    cc->call_base = cc->next_row;
    for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&bb->files, int); k++) {
        int pi = HS_VEC_AT(&bb->files, int, k);
        const tbl_plan_file *f = &cc->p->files[pi];
        roaring_bitmap_t *live = NULL;
        int64_t first = cc->next_row;
        st = tbl_read_file(f, schema, NULL, 0, push_batch, &bp, &live, NULL, err);
        if (st == HS_OK)
            st = cc_source_at(cc, pi, live, first, err);
        else
            tbl_bitmap_free(live);
        *done += f->record_count;
        if (st == HS_OK && o->progress && o->progress(o->progress_ctx, "compact", *done, total))
            st = hs_err_set(err, HS_CANCELLED, "compact: cancelled after %lld of %lld rows; "
                            "nothing was committed", (long long)*done, (long long)total);
    }
    hs_status cst = tbl_rewrite_sink_close(bp.sink, st == HS_OK, err);
    return st == HS_OK ? cst : st;
}

static int cmp_size_desc(const void *a, const void *b, void *ctx)
{
    const tbl_plan *p = ctx;
    int64_t x = p->files[*(const int *)a].file_size, y = p->files[*(const int *)b].file_size;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int cmp_size_asc(const void *a, const void *b, void *ctx)
{
    return cmp_size_desc(b, a, ctx);
}

/* First-fit decreasing bins of the group's chosen files. */
static hs_status pack_bins(const tbl_plan *p, int *idx, int n, int64_t target, hs_buf *bins,
                           hs_error *err)
{
    qsort_r(idx, (size_t)n, sizeof *idx, cmp_size_desc, (void *)p);
    size_t first = HS_VEC_LEN(bins, bin);
    for (int i = 0; i < n; i++) {
        int64_t sz = p->files[idx[i]].file_size;
        size_t b = first;
        for (; b < HS_VEC_LEN(bins, bin); b++)
            if (HS_VEC_AT(bins, bin, b).bytes + sz <= target)
                break;
        if (b == HS_VEC_LEN(bins, bin)) {
            bin nb = {{0}, 0};
            if (hs_buf_append(bins, &nb, sizeof nb) != HS_OK)
                return hs_err_nomem(err, sizeof nb);
        }
        bin *bb = &HS_VEC_AT(bins, bin, b);
        bb->bytes += sz;
        if (HS_VEC_PUSH(&bb->files, int, idx[i]) != HS_OK)
            return hs_err_nomem(err, 8);
    }
    return HS_OK;
}

static void bins_free(hs_buf *bins)
{
    for (size_t i = 0; i < HS_VEC_LEN(bins, bin); i++)
        hs_buf_free(&HS_VEC_AT(bins, bin, i).files);
    hs_buf_free(bins);
}

json_t *tbl_maint_partition_json(const ice_value *vals, int n)
{
    json_t *a = json_array();
    hs_buf b = {0};
    for (int i = 0; a && i < n; i++) {
        hs_buf_reset(&b);
        if (ice_value_to_json(&vals[i], &b) != HS_OK)
            break;
        json_error_t je;
        json_t *v = hs_json_loadb((const char *)b.data, b.len, JSON_DECODE_ANY, &je);
        json_array_append_new(a, v ? v : json_null());
    }
    hs_buf_free(&b);
    return a;
}

static json_t *partition_json(const tbl_plan_file *f)
{
    return tbl_maint_partition_json(f->partition, f->n_partition);
}

/* zorder_by "a, b" -> the columns' names (*names: n copies, hs_free each
 * and the array), checked against the current schema: known, ordered
 * types, 1..16 of them, none twice; and the table must have no sort order. */
static hs_status zorder_parse(const ice_table_metadata *m, const ice_schema *sc, const char *text,
                              char ***names, int *n, hs_error *err)
{
    *names = NULL;
    *n = 0;
    const ice_sort_order *so = ice_metadata_default_sort_order(m);
    if (so && so->n_fields > 0)
        return hs_err_set(err, HS_INVALID, "compact: z-order needs a table without a sort order "
                          "(writes sort by it); replace the sort order with an empty one first");
    char **out = hs_calloc(17, sizeof *out);
    if (!out)
        return hs_err_nomem(err, 17 * sizeof *out);
    hs_status st = HS_OK;
    int k = 0;
    for (const char *p = text; st == HS_OK && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *a = p, *b = p + len;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        p = e ? e + 1 : p + len;
        if (a == b) {
            st = hs_err_set(err, HS_INVALID, "compact: empty column name in zorder_by \"%s\"", text);
            break;
        }
        if (k == 16) {
            st = hs_err_set(err, HS_INVALID, "compact: z-order over at most 16 columns");
            break;
        }
        if (!(out[k] = hs_strndup(a, (size_t)(b - a)))) {
            st = hs_err_nomem(err, 64);
            break;
        }
        int c = -1;
        for (int i = 0; i < sc->root.n_children; i++)
            if (strcmp(sc->root.children[i].name, out[k]) == 0)
                c = i;
        if (c < 0)
            st = hs_err_set(err, HS_NOT_FOUND, "compact: z-order column \"%s\" is not a "
                            "top-level column of the table", out[k]);
        else if (!hs_zorder_type_ok(sc->root.children[c].type))
            st = hs_err_set(err, HS_INVALID, "compact: z-order column \"%s\" has type %s, which "
                            "has no order", out[k], hs_type_name(sc->root.children[c].type));
        for (int j = 0; st == HS_OK && j < k; j++)
            if (strcmp(out[j], out[k]) == 0)
                st = hs_err_set(err, HS_INVALID, "compact: z-order column \"%s\" given twice",
                                out[k]);
        k++;
    }
    if (st == HS_OK && k == 0)
        st = hs_err_set(err, HS_INVALID, "compact: zorder_by names no column");
    if (st != HS_OK) {
        for (int i = 0; i < k; i++)
            hs_free(out[i]);
        hs_free(out);
        return st;
    }
    *names = out;
    *n = k;
    return HS_OK;
}

/* Writes acc's rows in the z-order of the named columns, as files of about
 * `target` bytes each (the bin's input bytes, in_bytes, divided evenly by
 * rows): the whole bin is one sort, so each file covers a compact box of
 * the z-order columns' values. */
static hs_status zorder_write(tbl_rewrite *rw, compact_ctx *cc, const hs_batch *acc,
                              const ice_schema *as, char *const *names, int n, int64_t in_bytes,
                              int64_t target, hs_error *err)
{
    int cols[16];
    for (int j = 0; j < n; j++)
        if ((cols[j] = hs_batch_find(acc, names[j])) < 0)
            return hs_err_set(err, HS_INTERNAL, "compact: z-order column %s not read", names[j]);
    int64_t *perm = NULL;
    HS_TRY(hs_zorder_permutation(acc, cols, n, &perm, err));
    int64_t parts = target > 0 ? (in_bytes + target - 1) / target : 1;
    if (parts < 1)
        parts = 1;
    if (parts > acc->n_rows)
        parts = acc->n_rows > 0 ? acc->n_rows : 1;
    hs_status st = HS_OK;
    for (int64_t k = 0; st == HS_OK && k < parts; k++) {
        int64_t lo = acc->n_rows * k / parts, hi = acc->n_rows * (k + 1) / parts;
        hs_batch *part = NULL;
        st = hs_batch_take(acc, perm + lo, hi - lo, &part, err);
        cc->perm = perm + lo;   /* the row map: part's row i is acc's row perm[lo + i] */
        if (st == HS_OK)
            st = as ? tbl_rewrite_rows_as(rw, part, as, err) : tbl_rewrite_rows(rw, part, err);
        cc->perm = NULL;
        hs_batch_free(part);
    }
    hs_free(perm);
    return st;
}

/* Whether data file f has enough deletes to be rewritten for them
 * (Iceberg's delete-file-threshold / delete-ratio-threshold): at least
 * files_min delete files, or deleted rows / rows >= ratio, the deleted rows
 * counted as Iceberg does: the record counts of its deletion vector and
 * position delete files (ours reference one data file each). */
static bool many_deletes(const tbl_plan_file *f, int64_t files_min, double ratio)
{
    if (f->n_deletes == 0)
        return false;
    if (f->n_deletes >= files_min)
        return true;
    int64_t deleted = 0;
    for (int k = 0; k < f->n_deletes; k++)
        if (f->deletes[k].is_dv || f->deletes[k].kind == ICE_CONTENT_POSITION_DELETES)
            deleted += f->deletes[k].record_count;
    return f->record_count > 0 && (double)deleted >= ratio * (double)f->record_count;
}

/* The compaction of m's current snapshot (t's metadata, or a copy of it
 * that outlives the commits: with partial progress each commit replaces
 * t->meta, while the plan made from m is still read). */
static hs_status compact_on(hs_table *t, const ice_table_metadata *m,
                            const hs_compact_options *opt, char **result_json, hs_error *err)
{
    int64_t target = opt->target_file_size_bytes
                         ? opt->target_file_size_bytes
                         : tbl_maint_prop_i64(m, "write.target-file-size-bytes", (int64_t)512 << 20);
    int min_files = opt->min_input_files ? opt->min_input_files : 2;
    /* Iceberg's delete-file-threshold and delete-ratio-threshold: a file
     * with deletes is rewritten for them (whatever its size, and its
     * partition with it) only when it has at least this many delete files
     * or this fraction of its rows deleted */
    int64_t del_threshold = opt->delete_file_threshold > 0
                                ? opt->delete_file_threshold
                                : tbl_maint_prop_i64(m, "hyperstream.compact.delete-file-threshold",
                                                     INT32_MAX);
    double ratio_threshold = opt->delete_ratio_threshold;
    if (ratio_threshold == 0) {
        const char *v = ice_kv_get(&m->properties, "hyperstream.compact.delete-ratio-threshold");
        char *end = NULL;
        ratio_threshold = v ? hs_strtod(v, &end) : 0.3;
        if (v && (end == v || *end))
            return hs_err_set(err, HS_INVALID, "compact: table property "
                              "hyperstream.compact.delete-ratio-threshold \"%s\" is not a number",
                              v);
    }
    if (!(ratio_threshold >= 0 && ratio_threshold <= 1) || del_threshold < 1)
        return hs_err_set(err, HS_INVALID, "compact: delete-ratio-threshold must be in [0, 1] "
                          "and delete-file-threshold at least 1");
    /* z-order sorts a whole group of files at once (read into memory), then
     * writes it as files of the target size */
    int64_t zgroup = tbl_maint_prop_i64(m, "hyperstream.compact.zorder-group-bytes",
                                        (int64_t)1 << 30);
    if (zgroup < target)
        zgroup = target;
    const ice_snapshot *snap = ice_metadata_current_snapshot(m);
    const ice_schema *sc = ice_metadata_current_schema(m);
    if (!sc)
        return hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
    char **zcols = NULL;
    int n_z = 0;
    if (opt->zorder_by && *opt->zorder_by)
        HS_TRY(zorder_parse(m, sc, opt->zorder_by, &zcols, &n_z, err));
    tbl_plan *p = NULL, *pf = NULL;
    /* the whole table (which deletes apply to which files), and the files
     * the filter selects */
    hs_status st = tbl_plan_make(m, snap, sc, NULL, &p, err);
    if (st == HS_OK && opt->filter && *opt->filter)
        st = tbl_plan_make(m, snap, sc, opt->filter, &pf, err);
    hs_map eligible = {0};
    for (int i = 0; st == HS_OK && pf && i < pf->n_files; i++) {
        const char *l = tbl_local(pf->files[i].path);
        if (hs_map_put(&eligible, l, strlen(l), 1) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    /* groups by partition */
    cgroup *groups = NULL;
    int n_groups = 0;
    hs_map gmap = {0};
    hs_buf key = {0};
    for (int i = 0; st == HS_OK && p && i < p->n_files; i++) {
        const tbl_plan_file *f = &p->files[i];
        const char *l = tbl_local(f->path);
        if (pf && !hs_map_get(&eligible, l, strlen(l), NULL))
            continue;
        /* size-tiered: a file of at least 3/4 of the target counts as full
         * (Iceberg's min-file-size-bytes default): a compaction's output
         * files come out just under the target (2,095,317 bytes at 2 MiB),
         * and as "small" files they were rewritten by every later
         * compaction - the whole table each time, as the soak measured */
        int64_t full = opt->size_tiered ? target - target / 4 : target;
        if (f->file_size >= full && !many_deletes(f, del_threshold, ratio_threshold))
            continue;
        if (part_key(f, &key) != HS_OK) {
            st = hs_err_nomem(err, 64);
            break;
        }
        uint64_t g;
        if (!hs_map_get(&gmap, key.data, key.len, &g)) {
            cgroup *ng = hs_realloc(groups, sizeof *groups * (size_t)(n_groups + 1));
            if (!ng || hs_map_put(&gmap, key.data, key.len, (uint64_t)n_groups) != HS_OK) {
                if (ng)
                    groups = ng;
                st = hs_err_nomem(err, 64);
                break;
            }
            groups = ng;
            memset(&groups[n_groups], 0, sizeof *groups);
            g = (uint64_t)n_groups++;
        }
        if (HS_VEC_PUSH(&groups[g].files, int, i) != HS_OK)
            st = hs_err_nomem(err, 8);
    }
    hs_buf_free(&key);
    /* which groups are rewritten, and their bins */
    /* max_rewrite_fraction: the bytes this call may rewrite, of the live
     * data files' bytes (-1 = no bound) */
    int64_t budget = -1;
    if (opt->max_rewrite_fraction > 0 && p) {
        int64_t live = 0;
        for (int i = 0; i < p->n_files; i++)
            live += p->files[i].file_size;
        budget = (int64_t)(opt->max_rewrite_fraction * (double)live);
    }
    bool *rewrite = hs_calloc((size_t)(p ? p->n_files : 0) + 1, sizeof(bool));
    hs_buf bins = {0};
    json_t *jgroups = json_array();
    int64_t total_rows = 0, n_in = 0, in_bytes = 0;
    if (st == HS_OK && (!rewrite || !jgroups))
        st = hs_err_nomem(err, 64);
    for (int g = 0; st == HS_OK && g < n_groups; g++) {
        int n = (int)HS_VEC_LEN(&groups[g].files, int);
        int *idx = (int *)groups[g].files.data;
        bool deletes = false;
        for (int k = 0; k < n; k++)
            deletes = deletes || many_deletes(&p->files[idx[k]], del_threshold, ratio_threshold);
        if (opt->size_tiered && n > 1) {
            /* size-tiered: a small file larger than all the other small
             * files together stays (unless it has many deletes), so a row
             * is rewritten about log2(partition / flush size) times, not
             * at every compaction */
            qsort_r(idx, (size_t)n, sizeof *idx, cmp_size_desc, (void *)p);
            int64_t rest = 0;
            for (int k = 0; k < n; k++)
                rest += p->files[idx[k]].file_size;
            int k = 0, kept = 0;
            for (; k < n; k++) {
                const tbl_plan_file *f = &p->files[idx[k]];
                rest -= f->file_size;
                if (many_deletes(f, del_threshold, ratio_threshold))
                    idx[kept++] = idx[k];
                else if (f->file_size <= rest)
                    break;
            }
            for (; k < n; k++)
                idx[kept++] = idx[k];
            n = kept;
            groups[g].files.len = (size_t)n * sizeof(int);
        }
        if (budget >= 0) {
            /* bounded rewrite: the smallest files that fit what is left of
             * the budget (a file larger than it stays, deletes or not) */
            qsort_r(idx, (size_t)n, sizeof *idx, cmp_size_asc, (void *)p);
            int64_t sum = 0;
            int k = 0;
            deletes = false;
            for (; k < n && sum + p->files[idx[k]].file_size <= budget; k++) {
                sum += p->files[idx[k]].file_size;
                deletes = deletes ||
                          many_deletes(&p->files[idx[k]], del_threshold, ratio_threshold);
            }
            n = k;
            groups[g].files.len = (size_t)n * sizeof(int);
            if (n == 0 || (n < min_files && !deletes))
                continue;
            budget -= sum;
        }
        if (n == 0 || (n < min_files && !deletes))
            continue;
        json_t *jf = json_array();
        for (int k = 0; k < n; k++) {
            rewrite[idx[k]] = true;
            total_rows += p->files[idx[k]].record_count;
            in_bytes += p->files[idx[k]].file_size;
            n_in++;
            json_array_append_new(jf, json_string(p->files[idx[k]].path));
        }
        json_array_append_new(jgroups, json_pack("{s:o,s:i,s:o}", "partition",
                                                 partition_json(&p->files[idx[0]]), "spec_id",
                                                 (int)p->files[idx[0]].spec_id, "files", jf));
        st = pack_bins(p, idx, n, n_z ? zgroup : target, &bins, err);
    }
    /* write */
    compact_ctx cc = {0};
    cc.t = t;
    cc.p = p;
    cc.rewrite = rewrite;
    cc.planned = snap ? snap->snapshot_id : -1;
    cc.ident = t->ident;
    const ice_partition_spec *out_spec = ice_metadata_default_spec(m);
    cc.out_spec_id = out_spec ? out_spec->spec_id : 0;
    bool work = n_in > 0 && !opt->dry_run;
    if (st == HS_OK && work) {
        cc.src = hs_calloc((size_t)n_in + 1, sizeof *cc.src);
        cc.cap_rows = total_rows;
        cc.runs_sorted = true;
        if (!cc.src)
            st = hs_err_nomem(err, (size_t)n_in * sizeof *cc.src);
    }
    for (int i = 0; st == HS_OK && work && p && i < p->n_files; i++)
        if (rewrite[i]) {
            const char *l = tbl_local(p->files[i].path);
            cc.src[cc.n_src].plan_index = i;
            if (hs_map_put(&cc.paths, l, strlen(l), (uint64_t)cc.n_src++) != HS_OK)
                st = hs_err_nomem(err, 64);
        }
    tbl_rewrite *rw = NULL;   /* begun at the first bin of each commit */
    int64_t done = 0, new_id = -1, out_files = 0, out_rows = 0, out_bytes = 0;
    int64_t del_files_total = 0, carried_total = 0;
    /* each bin streams through the append path (memory bounded by
     * hyperstream.write.buffer-bytes, files rolled at the target); declared
     * indexes are built from each new file as it closes, read back one
     * indexed column at a time (write.c tbl_rewrite_sink_open) */
    bool indexed = ice_kv_get(&m->properties, IX_REGISTRY_PROPERTY) != NULL;
    /* v3: rows keep their lineage.  They are read with _row_id and
     * _last_updated_sequence_number (stored or inherited) and written with
     * those columns (spec "Row Lineage": a moved row keeps both), streamed
     * like any other column */
    bool lineage = m->format_version >= 3;
    ice_schema file_schema = {0};
    if (st == HS_OK && lineage) {
        hs_field f;
        st = hs_field_copy(&sc->root, &file_schema.root) == HS_OK ? HS_OK
                                                               : hs_err_nomem(err, 64);
        hs_field_init(&f, "_row_id", HS_TYPE_INT64, true);
        f.field_id = ICE_FIELD_ID_ROW_ID;
        if (st == HS_OK && hs_field_add_child(&file_schema.root, &f) != HS_OK)
            st = hs_err_nomem(err, 64);
        hs_field_init(&f, "_last_updated_sequence_number", HS_TYPE_INT64, true);
        f.field_id = ICE_FIELD_ID_LAST_UPDATED_SEQ;
        if (st == HS_OK && hs_field_add_child(&file_schema.root, &f) != HS_OK)
            st = hs_err_nomem(err, 64);
        file_schema.schema_id = sc->schema_id;
    }
    const hs_field *read_root = lineage ? &file_schema.root : &sc->root;
    /* in memory, the bin whole: z-order (it sorts a bin's rows as one);
     * and a table with a sort order and declared indexes or lineage, whose
     * bins were always sorted as one (one sorted file per partition, as
     * before streaming: the writer's buffers sort each on its own, and a
     * bounded global sort needs runs spilled and merged, not done yet:
     * docs/tables.md "Memory of a compaction") */
    const ice_sort_order *order = ice_metadata_default_sort_order(m);
    bool sorted = order && order->n_fields > 0;
    bool whole = n_z > 0 || (sorted && (indexed || lineage));
    /* partial progress: bins committed in batches of per_commit */
    size_t n_bins = HS_VEC_LEN(&bins, bin);
    int max_commits = opt->max_commits > 0 ? opt->max_commits : 10;
    size_t per_commit = n_bins;
    if (opt->partial_progress && n_bins > 0)
        per_commit = (n_bins + (size_t)max_commits - 1) / (size_t)max_commits;
    if (per_commit == 0)
        per_commit = 1;
    int n_commits = n_bins ? (int)((n_bins + per_commit - 1) / per_commit) : 0;
    json_t *jsnaps = json_array();
    if (st == HS_OK && !jsnaps)
        st = hs_err_nomem(err, 64);
    size_t committed_bins = 0;
    /* the input files are read once and leave: their pages stay out of the
     * process's page cache (a read with deletes goes page by page, and
     * would fill it up to its budget, evicting hot pages) */
    bool keep_pages = pq_page_cache_thread_keep(false);
    for (size_t b = 0; st == HS_OK && work && b < n_bins; b++) {
        const bin *bb = &HS_VEC_AT(&bins, bin, b);
        if (!rw) {   /* the next commit's rewrite (partial progress) */
            cc.batch++;
            st = tbl_rewrite_begin(t, "replace", cc.planned, compact_attempt, &cc, &rw, err);
            if (st != HS_OK)
                break;
            cc.rw = rw;
            tbl_rewrite_set_row_map(rw, cc_row_map, &cc);
        }
        if (!whole) {
            st = bin_stream(rw, &cc, bb, lineage ? &file_schema : NULL, read_root, opt, target,
                            &done, total_rows, err);
        } else {
            hs_batch *acc = NULL;
            st = hs_batch_create(read_root, 0, &acc, err);
            cc.call_base = cc.next_row;
            for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&bb->files, int); k++) {
                int pi = HS_VEC_AT(&bb->files, int, k);
                const tbl_plan_file *f = &p->files[pi];
                roaring_bitmap_t *live = NULL;
                st = tbl_read_file(f, read_root, NULL, 0, collect_batch, acc, &live, NULL, err);
                if (st == HS_OK)
                    st = cc_source(&cc, pi, live, err);
                else
                    tbl_bitmap_free(live);
                done += f->record_count;
                if (st == HS_OK && opt->progress &&
                    opt->progress(opt->progress_ctx, "compact", done, total_rows))
                    st = hs_err_set(err, HS_CANCELLED, "compact: cancelled after %lld of %lld "
                                    "rows; nothing was committed", (long long)done,
                                    (long long)total_rows);
            }
            if (st == HS_OK && n_z > 0)
                st = zorder_write(rw, &cc, acc, lineage ? &file_schema : NULL, zcols, n_z,
                                  bb->bytes, target, err);
            else if (st == HS_OK)
                st = lineage ? tbl_rewrite_rows_as(rw, acc, &file_schema, err)
                             : tbl_rewrite_rows(rw, acc, err);
            hs_batch_free(acc);
        }
        /* the removal of the rewritten files (and of the deletes that
         * applied only to them) and the carried deletes are made per
         * commit attempt, against its base (compact_attempt) */
        if (st == HS_OK && ((b + 1) % per_commit == 0 || b + 1 == n_bins)) {
            int64_t f = 0, r = 0, by = 0;
            tbl_rewrite_written(rw, &f, &r, &by);
            tbl_rewrite_mark(rw);
            st = tbl_rewrite_commit(rw, err);
            if (st == HS_OK) {
                out_files += f;
                out_rows += r;
                out_bytes += by;
                del_files_total += cc.dels.pos_files + cc.dels.eq_files;
                carried_total += cc.carried;
                new_id = tbl_rewrite_snapshot_id(rw);
                committed_bins = b + 1;
                json_array_append_new(jsnaps, json_integer(new_id));
                if (HS_VEC_PUSH(&cc.own, int64_t, new_id) != HS_OK)
                    st = hs_err_nomem(err, 8);
            }
            tbl_rewrite_free(rw);
            rw = NULL;
            cc.rw = NULL;
        }
    }
    (void)pq_page_cache_thread_keep(keep_pages);
    /* nothing to rewrite, but delete files that apply to no live data
     * file (an equality delete pruned by bounds everywhere, position
     * deletes of files gone): a "replace" that only drops them
     * (compact_attempt redoes the choice against its base) */
    bool unused = p && HS_VEC_LEN(&p->unused_dels, tbl_delete_ref) > 0;
    if (st == HS_OK && n_bins == 0 && unused && !opt->dry_run) {
        cc.batch++;
        st = tbl_rewrite_begin(t, "replace", cc.planned, compact_attempt, &cc, &rw, err);
        if (st == HS_OK) {
            cc.rw = rw;
            tbl_rewrite_mark(rw);
            st = tbl_rewrite_commit(rw, err);
            if (st == HS_OK) {
                del_files_total += cc.dels.pos_files + cc.dels.eq_files;
                new_id = tbl_rewrite_snapshot_id(rw);
                json_array_append_new(jsnaps, json_integer(new_id));
            }
            tbl_rewrite_free(rw);
            rw = NULL;
            cc.rw = NULL;
        }
    }
    if (st != HS_OK && opt->partial_progress && committed_bins > 0)
        hs_err_prefix(err, "compact (partial progress: %zu of %zu file groups committed in %zu "
                      "snapshots, which stay)", committed_bins, n_bins,
                      json_array_size(jsnaps));
    int64_t del_files = del_files_total;
    if (st == HS_OK && opt->dry_run && (n_in > 0 || unused)) {   /* what the commit would drop */
        hs_map rd = {0};
        tbl_del_counts dc = {0};
        st = drop_deletes(p, rewrite, &rd, &dc, err);
        del_files += dc.pos_files + dc.eq_files;
        hs_map_free(&rd);
    }
    tbl_rewrite_free(rw);
    json_t *jz = n_z ? json_array() : json_null();
    for (int j = 0; j < n_z; j++)
        json_array_append_new(jz, json_string(zcols[j]));
    if (st == HS_OK) {
        json_t *r = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:O,s:o,s:b,s:I,s:O,s:i,s:O}",
                              "rewritten_data_files", (json_int_t)n_in,
                              "added_data_files", (json_int_t)out_files,
                              "removed_delete_files", (json_int_t)del_files,
                              "carried_deletes", (json_int_t)carried_total,
                              "rewritten_bytes", (json_int_t)in_bytes,
                              "added_bytes", (json_int_t)out_bytes,
                              "rows", (json_int_t)total_rows, "groups", jgroups,
                              "snapshot_id", new_id >= 0 ? json_integer(new_id) : json_null(),
                              "dry_run", opt->dry_run != 0,
                              "target_file_size_bytes", (json_int_t)target,
                              "zorder_by", jz,
                              "commits", opt->dry_run ? n_commits : (int)json_array_size(jsnaps),
                              "snapshot_ids", jsnaps);
        st = r ? tbl_maint_json_out(r, result_json, err) : hs_err_nomem(err, 256);
    }
    json_decref(jgroups);
    json_decref(jz);
    json_decref(jsnaps);
    hs_buf_free(&cc.own);
    for (int j = 0; j < n_z; j++)
        hs_free(zcols[j]);
    hs_free(zcols);
    ice_schema_clear(&file_schema);
    hs_map_free(&cc.paths);
    for (int i = 0; i < cc.n_src; i++)
        tbl_bitmap_free(cc.src[i].live);
    hs_free(cc.src);
    hs_free(cc.loc);
    hs_buf_free(&cc.runs);
    for (size_t i = 0; i < HS_VEC_LEN(&cc.newf, new_file); i++)
        hs_free(HS_VEC_AT(&cc.newf, new_file, i).path);
    hs_buf_free(&cc.newf);
    hs_map_free(&cc.newf_by_path);
    bins_free(&bins);
    hs_free(rewrite);
    for (int g = 0; g < n_groups; g++) {
        hs_buf_free(&groups[g].files);
        hs_buf_free(&groups[g].key);
    }
    hs_free(groups);
    hs_map_free(&gmap);
    hs_map_free(&eligible);
    tbl_plan_free(pf);
    tbl_plan_free(p);
    return st;
}

hs_status hs_table_compact(hs_table *t, const hs_compact_options *opt, char **result_json,
                           hs_error *err)
{
    if (result_json)
        *result_json = NULL;
    /* zorder_by and the fields after it were appended after 0.1: a
     * struct_size of 0 means the layout before them (base/opts.h) */
    hs_compact_options opt_in_;
    if (opt) {
        HS_TRY(hs_opts_copy(&opt_in_, sizeof opt_in_, offsetof(hs_compact_options, zorder_by), opt,
                            "hs_compact_options", err));
        opt = &opt_in_;
    }
    if (!opt) {   /* NULL = every default */
        memset(&opt_in_, 0, sizeof opt_in_);
        opt = &opt_in_;
    }
    HS_TRY(tbl_check_writable(t, err));
    if (opt->target_file_size_bytes < 0 || opt->min_input_files < 0 ||
        opt->delete_file_threshold < 0 || opt->delete_ratio_threshold < 0 ||
        opt->delete_ratio_threshold > 1 || !(opt->max_rewrite_fraction >= 0) ||
        opt->max_rewrite_fraction > 1)
        return hs_err_set(err, HS_INVALID, "compact: negative target size, file count or delete "
                          "threshold, or a delete ratio or max_rewrite_fraction outside [0, 1]");
    HS_TRY(hs_table_refresh(t, err));
    if (!opt->partial_progress)
        return compact_on(t, &t->meta, opt, result_json, err);
    ice_table_metadata copy = {0};
    HS_TRY(ice_metadata_copy(&t->meta, &copy, err));
    hs_status st = compact_on(t, &copy, opt, result_json, err);
    ice_metadata_free(&copy);
    return st;
}

/*
 * table/maint_deletes.c - rewrite position delete files
 * (hyperstream/table.h hs_table_rewrite_position_delete_files: Iceberg's
 * RewritePositionDeleteFiles action); the rest of table maintenance is in
 * maint.c (whose header comment shows how the operations fit together) and
 * maint_compact.c.
 *
 *   step     what
 *   -------  ---------------------------------------------------------------
 *   plan     the current snapshot, unfiltered: which delete entries apply
 *            to which live data file (plan.c: sequence numbers, file_path
 *            bounds, referenced_data_file); then every position delete
 *            entry of its delete manifests (also those applying to no live
 *            file, which the plan never attaches)
 *   read     each position delete file (Parquet) that applies to a live
 *            data file, once: a row (file_path, pos) is live when its data
 *            file is live and the delete file applies to it, else
 *            dangling (the data file was removed, e.g. by a compaction
 *            that did not drop the delete file, or Java's rewrite)
 *   choose   v2: per partition of the delete files (spec id + tuple), the
 *            group is rewritten when it has min_input_files files (2), or
 *            rewrite_all, or a file holding dangling rows; a delete entry
 *            applying to no live data file is removed in any case.
 *            v3: every position delete file is folded into the deletion
 *            vectors of the data files it applies to (the spec: "when a DV
 *            is written, position deletes for that data file must be
 *            merged into it"), a data file with several vectors gets one,
 *            a vector of no live data file is removed
 *   write    v2: per rewritten group, the live positions of each data
 *            file (union: a row deleted twice is written once) as
 *            ceil(input bytes / target) files, data files in path order
 *            split evenly by rows (write.c tbl_rewrite_pos_delete_file:
 *            rows sorted by file_path, pos; full file_path bounds), in
 *            the group's partition; v3: one Puffin file of vectors
 *            (write.c tbl_rewrite_position_deletes merges the old ones)
 *   commit   one "replace" snapshot: the rewritten and dangling entries
 *            DELETED, the new files ADDED; the rows the table reads are
 *            the same
 *
 * Concurrency.  The commit callback (rd_attempt) redoes plan, read and
 * write against every attempt's base whose current snapshot is not the one
 * planned first, so what is committed was computed from exactly the delete
 * files of the snapshot it replaces: a delete committed meanwhile (a new
 * position delete file, a deletion vector that replaced ours, a data file
 * removed) is read by the retry, never lost, never resurrected.  When the
 * retry finds nothing left to do (another rewrite did it), nothing is
 * committed and the result says so.  The new delete files get the new
 * snapshot's sequence number; they name only data files that are live and
 * older, so they apply to the same rows.
 *
 * Memory: the plan, and per rewritten group one bitmap of deleted
 * positions per data file (roaring: a few bytes a delete).
 */
#define _GNU_SOURCE 1 /* qsort_r */
#include "table/mcache.h"
#include "table/table_int.h"

#include "base/mem.h"
#include "base/opts.h"
#include "iceberg/puffin.h"
#include "io/io.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* One position delete entry (file or deletion vector) of the snapshot. */
typedef struct rd_del {
    const ice_manifest_entry *e;  /* borrowed from the manifest cache (work->refs) */
    int mi;                       /* manifest index in the plan's list */
    int64_t ei;                   /* entry index in the manifest */
    int32_t spec_id;
    bool is_dv;
    int group;                    /* v2: its partition group; -1 none */
    int n_applies;                /* live data files it applies to */
    int64_t live, dangling;       /* rows read: of those files / of others */
    bool remove;                  /* removed by the rewrite */
} rd_del;

/* The deleted positions of one data file gathered from a group's files. */
typedef struct rd_acc {
    int file;                     /* plan index */
    roaring_bitmap_t *bm;
} rd_acc;

typedef struct rd_group {
    int32_t spec_id;
    const ice_data_file *first;   /* a member: the partition tuple */
    hs_buf dels;                  /* int: rd_del indexes */
    hs_buf accs;                  /* rd_acc */
    hs_map acc_of;                /* plan index -> accs index */
    int64_t bytes;
    bool rewrite;
} rd_group;

/* What one rewrite does, planned on one snapshot. */
typedef struct rd_work {
    const ice_table_metadata *m;  /* borrowed: the metadata planned on */
    int64_t snapshot_id;          /* -1 = empty table */
    bool reusable;                /* planned on the handle's metadata */
    int format_version;
    tbl_plan *p;
    hs_buf refs;                  /* tbl_fref *: manifests held */
    hs_buf dels;                  /* rd_del */
    hs_map del_of;                /* {mi, ei} -> dels index */
    hs_map applies;               /* {del, plan file} -> 1 */
    hs_map file_of;               /* local data path -> plan index */
    rd_group *groups;
    int n_groups;
    hs_map group_of;              /* partition key -> groups index */
    /* v3: deleted positions gathered per data file (plan index) */
    roaring_bitmap_t **v3;
    int *n_dvs;                   /* per plan file: deletion vectors applying */
    /* the result */
    int64_t rewritten, rewritten_bytes, dangling_files, dangling_rows, kept, converted;
    int64_t added, added_bytes, planned_added;
    json_t *jgroups;
} rd_work;

static void work_free(rd_work *w)
{
    if (!w)
        return;
    for (int g = 0; g < w->n_groups; g++) {
        rd_group *gr = &w->groups[g];
        for (size_t k = 0; k < HS_VEC_LEN(&gr->accs, rd_acc); k++)
            tbl_bitmap_free(HS_VEC_AT(&gr->accs, rd_acc, k).bm);
        hs_buf_free(&gr->accs);
        hs_buf_free(&gr->dels);
        hs_map_free(&gr->acc_of);
    }
    hs_free(w->groups);
    for (int i = 0; w->v3 && w->p && i < w->p->n_files; i++)
        tbl_bitmap_free(w->v3[i]);
    hs_free(w->v3);
    hs_free(w->n_dvs);
    for (size_t k = 0; k < HS_VEC_LEN(&w->refs, tbl_fref *); k++)
        tbl_mcache_release(HS_VEC_AT(&w->refs, tbl_fref *, k));
    hs_buf_free(&w->refs);
    hs_buf_free(&w->dels);
    hs_map_free(&w->del_of);
    hs_map_free(&w->applies);
    hs_map_free(&w->file_of);
    hs_map_free(&w->group_of);
    json_decref(w->jgroups);
    tbl_plan_free(w->p);
    hs_free(w);
}

/* ---- plan ---- */

/* Every position delete entry of the plan's delete manifests, and which
 * live data files each applies to (the plan's attachments). */
static hs_status collect_deletes(rd_work *w, hs_error *err)
{
    const tbl_plan *p = w->p;
    const ice_manifest_list *l = p->list;
    hs_status st = HS_OK;
    for (int mi = 0; st == HS_OK && l && mi < l->n_files; mi++) {
        const ice_manifest_file *mf = &l->files[mi];
        if (mf->content != ICE_MANIFEST_DELETES)
            continue;
        const ice_partition_spec *spec = ice_metadata_spec(w->m, mf->partition_spec_id);
        const ice_schema *sc = spec ? tbl_schema_for_spec(w->m, spec) : NULL;
        if (!spec || !sc)
            return hs_err_set(err, HS_CORRUPT, "rewrite_position_delete_files: partition spec %d "
                              "of manifest %s is not in the table metadata",
                              (int)mf->partition_spec_id, mf->manifest_path);
        const ice_manifest *man = NULL;
        tbl_fref *ref = NULL;
        HS_TRY(tbl_mcache_get(mf, spec, sc, &man, &ref, err));
        if (HS_VEC_PUSH(&w->refs, tbl_fref *, ref) != HS_OK) {
            tbl_mcache_release(ref);
            return hs_err_nomem(err, 64);
        }
        for (int64_t i = 0; st == HS_OK && i < man->n_entries; i++) {
            const ice_manifest_entry *e = &man->entries[i];
            if (e->status == ICE_STATUS_DELETED || e->file.content != ICE_CONTENT_POSITION_DELETES)
                continue;
            const char *fmt = e->file.file_format;
            rd_del d = {e, mi, i, mf->partition_spec_id,
                        fmt && (strcmp(fmt, "PUFFIN") == 0 || strcmp(fmt, "puffin") == 0),
                        -1, 0, 0, 0, false};
            int64_t key[2] = {mi, i};
            if (hs_map_put(&w->del_of, key, sizeof key, HS_VEC_LEN(&w->dels, rd_del)) != HS_OK ||
                hs_buf_append(&w->dels, &d, sizeof d) != HS_OK)
                st = hs_err_nomem(err, sizeof d);
        }
    }
    for (int i = 0; st == HS_OK && i < p->n_files; i++) {
        const tbl_plan_file *f = &p->files[i];
        const char *l = tbl_local(f->path);
        if (hs_map_put(&w->file_of, l, strlen(l), (uint64_t)i) != HS_OK)
            st = hs_err_nomem(err, 64);
        for (int k = 0; st == HS_OK && k < f->n_deletes; k++) {
            const tbl_delete_ref *r = &f->deletes[k];
            if (r->kind != ICE_CONTENT_POSITION_DELETES)
                continue;
            int64_t key[2] = {r->manifest_index, r->entry_index};
            uint64_t di;
            if (!hs_map_get(&w->del_of, key, sizeof key, &di))
                return hs_err_set(err, HS_INTERNAL, "rewrite_position_delete_files: delete %s "
                                  "of %s not among the snapshot's delete entries", r->path,
                                  f->path);
            HS_VEC_AT(&w->dels, rd_del, di).n_applies++;
            if (r->is_dv)
                w->n_dvs[i]++;
            int64_t pk[2] = {(int64_t)di, i};
            if (hs_map_put(&w->applies, pk, sizeof pk, 1) != HS_OK)
                st = hs_err_nomem(err, 64);
        }
    }
    return st;
}

/* Reading one position delete file: its rows sorted into bitmaps. */
typedef struct rd_reader {
    rd_work *w;
    int del;
    char tmp[4096];
} rd_reader;

/* The bitmap a live row of plan file i from delete d goes to. */
static hs_status target_bitmap(rd_work *w, rd_del *d, int i, roaring_bitmap_t **out,
                               hs_error *err)
{
    if (w->format_version >= 3) {
        if (!w->v3[i] && !(w->v3[i] = roaring_bitmap_create()))
            return hs_err_nomem(err, 64);
        *out = w->v3[i];
        return HS_OK;
    }
    rd_group *g = &w->groups[d->group];
    uint64_t a;
    if (!hs_map_get(&g->acc_of, &i, sizeof i, &a)) {
        rd_acc acc = {i, roaring_bitmap_create()};
        a = HS_VEC_LEN(&g->accs, rd_acc);
        if (!acc.bm || hs_buf_append(&g->accs, &acc, sizeof acc) != HS_OK ||
            hs_map_put(&g->acc_of, &i, sizeof i, a) != HS_OK) {
            if (acc.bm && HS_VEC_LEN(&g->accs, rd_acc) == a)
                roaring_bitmap_free(acc.bm);
            return hs_err_nomem(err, 64);
        }
    }
    *out = HS_VEC_AT(&g->accs, rd_acc, a).bm;
    return HS_OK;
}

static hs_status read_row(void *ctx, const char *sp, size_t sn, uint32_t pos, hs_error *err)
{
    rd_reader *r = ctx;
    rd_work *w = r->w;
    rd_del *d = &HS_VEC_AT(&w->dels, rd_del, r->del);
    const char *key = sp;
    size_t kn = sn;
    if (sn > 5 && sn < sizeof r->tmp && memcmp(sp, "file:", 5) == 0) {
        memcpy(r->tmp, sp, sn);
        r->tmp[sn] = '\0';
        key = tbl_local(r->tmp);
        kn = strlen(key);
    }
    uint64_t i;
    int64_t pk[2] = {r->del, 0};
    if (hs_map_get(&w->file_of, key, kn, &i)) {
        pk[1] = (int64_t)i;
        if (hs_map_get(&w->applies, pk, sizeof pk, NULL)) {
            roaring_bitmap_t *bm = NULL;
            HS_TRY(target_bitmap(w, d, (int)i, &bm, err));
            roaring_bitmap_add(bm, pos);
            d->live++;
            return HS_OK;
        }
    }
    d->dangling++;
    return HS_OK;
}

/* v3: the vectors of plan file i joined into w->v3[i] (the new vector's
 * positions; write.c merges them again when it writes it). */
static hs_status union_dvs(rd_work *w, int i, hs_error *err)
{
    if (!w->v3[i] && !(w->v3[i] = roaring_bitmap_create()))
        return hs_err_nomem(err, 64);
    const tbl_plan_file *f = &w->p->files[i];
    hs_status st = HS_OK;
    for (int k = 0; st == HS_OK && k < f->n_deletes; k++) {
        const tbl_delete_ref *d = &f->deletes[k];
        if (!d->is_dv)
            continue;
        hs_file *fh = NULL;
        roaring_bitmap_t *dv = NULL;
        st = hs_io_open(d->path, &fh, err);
        if (st == HS_OK)
            st = ice_dv_read(fh, d->offset, d->length, &dv, err);
        hs_file_close(fh);
        if (st == HS_OK)
            roaring_bitmap_or_inplace(w->v3[i], dv);
        tbl_bitmap_free(dv);
    }
    return st;
}

/* v2: the partition groups of the position delete files. */
static hs_status group_deletes(rd_work *w, hs_error *err)
{
    hs_buf key = {0};
    hs_status st = HS_OK;
    for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&w->dels, rd_del); k++) {
        rd_del *d = &HS_VEC_AT(&w->dels, rd_del, k);
        if (d->is_dv)
            continue;
        if (tbl_maint_part_key(d->spec_id, d->e->file.partition, d->e->file.n_partition,
                               &key) != HS_OK) {
            st = hs_err_nomem(err, 64);
            break;
        }
        uint64_t g;
        if (!hs_map_get(&w->group_of, key.data, key.len, &g)) {
            rd_group *ng = hs_realloc(w->groups, sizeof *ng * (size_t)(w->n_groups + 1));
            if (!ng) {
                st = hs_err_nomem(err, 64);
                break;
            }
            w->groups = ng;
            memset(&ng[w->n_groups], 0, sizeof *ng);
            ng[w->n_groups].spec_id = d->spec_id;
            ng[w->n_groups].first = &d->e->file;
            g = (uint64_t)w->n_groups++;
            if (hs_map_put(&w->group_of, key.data, key.len, g) != HS_OK) {
                st = hs_err_nomem(err, 64);
                break;
            }
        }
        d->group = (int)g;
        int di = (int)k;
        if (HS_VEC_PUSH(&w->groups[g].dels, int, di) != HS_OK)
            st = hs_err_nomem(err, 8);
        w->groups[g].bytes += d->e->file.file_size_in_bytes;
    }
    hs_buf_free(&key);
    return st;
}

/* The number of files group gr is written as: ceil(input bytes / target),
 * at least 1, at most one per data file. */
static int64_t outputs_of(const rd_group *gr, int64_t target)
{
    int64_t n = (int64_t)HS_VEC_LEN(&gr->accs, rd_acc);
    int64_t k = target > 0 ? (gr->bytes + target - 1) / target : 1;
    if (k < 1)
        k = 1;
    return k > n ? n : k;
}

static int min_files_of(const hs_rewrite_deletes_options *o)
{
    return o->min_input_files > 0 ? o->min_input_files : 2;
}

/* Plans the rewrite of m's current snapshot (header comment: plan, read,
 * choose).  *out: caller frees with work_free. */
static hs_status work_plan(const ice_table_metadata *m, const hs_rewrite_deletes_options *o,
                           int64_t target, rd_work **out, hs_error *err)
{
    *out = NULL;
    rd_work *w = hs_calloc(1, sizeof *w);
    if (!w)
        return hs_err_nomem(err, sizeof *w);
    w->m = m;
    w->format_version = m->format_version;
    const ice_snapshot *snap = ice_metadata_current_snapshot(m);
    const ice_schema *sc = ice_metadata_current_schema(m);
    w->snapshot_id = snap ? snap->snapshot_id : -1;
    hs_status st = sc ? HS_OK : hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
    if (st == HS_OK)
        st = tbl_plan_make(m, snap, sc, NULL, &w->p, err);
    if (st == HS_OK) {
        w->n_dvs = hs_calloc((size_t)w->p->n_files + 1, sizeof *w->n_dvs);
        w->v3 = hs_calloc((size_t)w->p->n_files + 1, sizeof *w->v3);
        w->jgroups = json_array();
        if (!w->n_dvs || !w->v3 || !w->jgroups)
            st = hs_err_nomem(err, (size_t)w->p->n_files * 12);
    }
    if (st == HS_OK)
        st = collect_deletes(w, err);
    if (st == HS_OK && w->format_version < 3)
        st = group_deletes(w, err);
    /* read the files that apply to a live data file; the rest are dangling */
    rd_reader *rr = st == HS_OK ? hs_calloc(1, sizeof *rr) : NULL;
    if (st == HS_OK && !rr)
        st = hs_err_nomem(err, sizeof *rr);
    for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&w->dels, rd_del); k++) {
        rd_del *d = &HS_VEC_AT(&w->dels, rd_del, k);
        if (d->n_applies == 0) {
            d->remove = true;
            w->dangling_files++;
            w->dangling_rows += d->e->file.record_count;
            continue;
        }
        if (d->is_dv)
            continue;
        rr->w = w;
        rr->del = (int)k;
        st = tbl_pos_deletes_read(d->e->file.file_path, read_row, rr, err);
    }
    hs_free(rr);
    /* choose */
    if (st == HS_OK && w->format_version >= 3) {
        for (size_t k = 0; k < HS_VEC_LEN(&w->dels, rd_del); k++) {
            rd_del *d = &HS_VEC_AT(&w->dels, rd_del, k);
            if (!d->is_dv && !d->remove) {   /* folded into vectors */
                d->remove = true;
                w->dangling_rows += d->dangling;
                w->rewritten++;
                w->rewritten_bytes += d->e->file.file_size_in_bytes;
                json_array_append_new(w->jgroups,
                                      json_pack("{s:o,s:i,s:[s]}", "partition",
                                                tbl_maint_partition_json(d->e->file.partition,
                                                                         d->e->file.n_partition),
                                                "spec_id", (int)d->spec_id, "files",
                                                d->e->file.file_path));
            }
        }
        for (int i = 0; i < w->p->n_files; i++)
            if (w->v3[i] || w->n_dvs[i] > 1) {
                w->converted += w->v3[i] != NULL;
                /* the vectors the new one replaces (write_dvs drops them) */
                w->rewritten += w->n_dvs[i];
            }
    }
    for (int g = 0; st == HS_OK && g < w->n_groups; g++) {
        rd_group *gr = &w->groups[g];
        int n = (int)HS_VEC_LEN(&gr->dels, int);
        int n_live = 0;
        bool dangling = false;
        for (int k = 0; k < n; k++) {
            rd_del *d = &HS_VEC_AT(&w->dels, rd_del, HS_VEC_AT(&gr->dels, int, k));
            n_live += !d->remove;
            dangling |= !d->remove && d->dangling > 0;
        }
        gr->rewrite = n_live > 0 && (n_live >= min_files_of(o) || o->rewrite_all || dangling);
        if (!gr->rewrite)
            continue;
        json_t *jf = json_array();
        for (int k = 0; k < n; k++) {
            rd_del *d = &HS_VEC_AT(&w->dels, rd_del, HS_VEC_AT(&gr->dels, int, k));
            if (d->remove)
                continue;   /* counted as dangling */
            d->remove = true;
            w->rewritten++;
            w->rewritten_bytes += d->e->file.file_size_in_bytes;
            w->dangling_rows += d->dangling;
            json_array_append_new(jf, json_string(d->e->file.file_path));
        }
        json_array_append_new(w->jgroups,
                              json_pack("{s:o,s:i,s:o}", "partition",
                                        tbl_maint_partition_json(gr->first->partition,
                                                                 gr->first->n_partition),
                                        "spec_id", (int)gr->spec_id, "files", jf));
        for (size_t k = 0; k < HS_VEC_LEN(&gr->accs, rd_acc); k++)
            w->kept += (int64_t)roaring_bitmap_get_cardinality(HS_VEC_AT(&gr->accs, rd_acc, k).bm);
        w->planned_added += outputs_of(gr, target);
    }
    for (int i = 0; st == HS_OK && w->format_version >= 3 && i < w->p->n_files; i++) {
        if (w->v3[i] || w->n_dvs[i] > 1)
            st = union_dvs(w, i, err);
        if (st == HS_OK && w->v3[i])
            w->kept += (int64_t)roaring_bitmap_get_cardinality(w->v3[i]);
        if (w->v3[i] || w->n_dvs[i] > 1)
            w->planned_added = 1;   /* one Puffin file */
    }
    if (st != HS_OK) {
        work_free(w);
        return st;
    }
    *out = w;
    return HS_OK;
}

/* Whether the work changes anything. */
static bool work_changes(const rd_work *w)
{
    for (size_t k = 0; k < HS_VEC_LEN(&w->dels, rd_del); k++)
        if (HS_VEC_AT(&w->dels, rd_del, k).remove)
            return true;
    for (int i = 0; w->format_version >= 3 && i < w->p->n_files; i++)
        if (w->n_dvs[i] > 1)
            return true;
    return false;
}

/* ---- write ---- */

static int cmp_acc_path(const void *a, const void *b, void *ctx)
{
    const tbl_plan *p = ctx;
    return strcmp(p->files[((const rd_acc *)a)->file].path, p->files[((const rd_acc *)b)->file].path);
}


/* v2: group gr as ceil(bytes / target) files; entries appended to ents. */
static hs_status write_group(rd_work *w, rd_group *gr, tbl_rewrite *rw, int64_t target,
                             hs_buf *ents, hs_error *err)
{
    int n = (int)HS_VEC_LEN(&gr->accs, rd_acc);
    if (n == 0)
        return HS_OK;   /* only dangling rows */
    rd_acc *a = (rd_acc *)gr->accs.data;
    qsort_r(a, (size_t)n, sizeof *a, cmp_acc_path, (void *)w->p);
    hs_map_free(&gr->acc_of);   /* indexes moved */
    int64_t total = 0;
    for (int k = 0; k < n; k++)
        total += (int64_t)roaring_bitmap_get_cardinality(a[k].bm);
    int64_t n_out = outputs_of(gr, target);
    const char **paths = hs_calloc((size_t)n, sizeof *paths);
    roaring_bitmap_t **bms = hs_calloc((size_t)n, sizeof *bms);
    hs_status st = paths && bms ? HS_OK : hs_err_nomem(err, (size_t)n * 16);
    int k = 0;
    int64_t done = 0;
    for (int64_t o = 0; st == HS_OK && o < n_out; o++) {
        /* data files [k, e): up to this output's share of the rows */
        int64_t share = total * (o + 1) / n_out;
        int first = k;
        do {
            paths[k - first] = w->p->files[a[k].file].path;
            bms[k - first] = a[k].bm;
            done += (int64_t)roaring_bitmap_get_cardinality(a[k].bm);
            k++;
        } while (k < n && (done < share || o == n_out - 1) && n - k > n_out - o - 1);
        ice_manifest_entry e;
        st = tbl_rewrite_pos_delete_file(rw, paths, bms, k - first, gr->first->n_partition,
                                         gr->first->partition, &e, err);
        if (st == HS_OK) {
            w->added++;
            w->added_bytes += e.file.file_size_in_bytes;
            int64_t spec_of = gr->spec_id;
            if (hs_buf_append(ents, &e, sizeof e) != HS_OK ||
                hs_buf_append(ents, &spec_of, sizeof spec_of) != HS_OK)
                st = hs_err_nomem(err, sizeof e);
        }
    }
    hs_free(paths);
    hs_free(bms);
    return st;
}

/* Writes the work into rw (reset to its mark first by the caller). */
static hs_status work_write(rd_work *w, tbl_rewrite *rw, int64_t target, hs_error *err)
{
    hs_map remove_del = {0};
    hs_status st = HS_OK;
    w->added = w->added_bytes = 0;
    tbl_del_counts rm = {0};   /* position delete files only (rd_del) */
    for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&w->dels, rd_del); k++) {
        const rd_del *d = &HS_VEC_AT(&w->dels, rd_del, k);
        if (!d->remove)
            continue;
        int64_t key[2] = {d->mi, d->ei};
        int mi = d->mi;
        if (hs_map_put(&remove_del, key, sizeof key, 1) != HS_OK ||
            hs_map_put(&remove_del, &mi, sizeof mi, 1) != HS_OK)
            st = hs_err_nomem(err, 64);
        rm.pos_files++;
        rm.pos_records += d->e->file.record_count;
    }
    if (w->format_version >= 3) {
        /* one vector per data file with folded deletes or several vectors */
        int n = 0;
        tbl_file_action *acts = hs_calloc((size_t)w->p->n_files + 1, sizeof *acts);
        if (st == HS_OK && !acts)
            st = hs_err_nomem(err, 64);
        for (int i = 0; st == HS_OK && i < w->p->n_files; i++) {
            if (!w->v3[i] && w->n_dvs[i] < 2)
                continue;
            acts[n].file = i;
            acts[n].hits = w->v3[i] ? roaring_bitmap_copy(w->v3[i]) : roaring_bitmap_create();
            acts[n].live = w->p->files[i].record_count;
            if (!acts[n++].hits)
                st = hs_err_nomem(err, 64);
        }
        if (st == HS_OK && n > 0)
            st = tbl_rewrite_position_deletes(rw, w->p, acts, n, &remove_del, err);
        for (int i = 0; i < n; i++)
            tbl_bitmap_free(acts[i].hits);
        hs_free(acts);
        if (st == HS_OK && n > 0)
            w->added = 1;   /* one Puffin file */
    } else {
        hs_buf ents = {0};   /* ice_manifest_entry, then its spec id (int64_t) */
        for (int g = 0; st == HS_OK && g < w->n_groups; g++)
            if (w->groups[g].rewrite)
                st = write_group(w, &w->groups[g], rw, target, &ents, err);
        /* one delete manifest per spec */
        size_t stride = sizeof(ice_manifest_entry) + sizeof(int64_t);
        size_t n_e = ents.len / stride;
        ice_manifest_entry *tmp = hs_calloc(n_e + 1, sizeof *tmp);
        if (st == HS_OK && !tmp)
            st = hs_err_nomem(err, n_e);
        for (int si = 0; st == HS_OK && si < w->m->n_specs; si++) {
            const ice_partition_spec *spec = &w->m->specs[si];
            size_t k = 0;
            for (size_t j = 0; j < n_e; j++) {
                int64_t spec_of;
                memcpy(&spec_of, ents.data + j * stride + sizeof(ice_manifest_entry), 8);
                if (spec_of == spec->spec_id)
                    memcpy(&tmp[k++], ents.data + j * stride, sizeof(ice_manifest_entry));
            }
            if (k)
                st = tbl_rewrite_add_manifest(rw, ICE_MANIFEST_DELETES,
                                              tbl_schema_for_spec(w->m, spec), spec, tmp,
                                              (int64_t)k, err);
        }
        hs_free(tmp);
        hs_buf_free(&ents);
    }
    bool *none = st == HS_OK ? hs_calloc((size_t)w->p->n_files + 1, sizeof(bool)) : NULL;
    if (st == HS_OK && !none)
        st = hs_err_nomem(err, (size_t)w->p->n_files);
    if (st == HS_OK)
        st = tbl_rewrite_remove(rw, w->p, none, &remove_del, err);
    if (st == HS_OK)
        tbl_rewrite_count_deletes_removed(rw, &rm);
    hs_free(none);
    hs_map_free(&remove_del);
    return st;
}

/* ---- the operation ---- */

typedef struct rd_ctx {
    const char *ident;
    const hs_rewrite_deletes_options *o;
    int64_t target;
    tbl_rewrite *rw;
    rd_work *work;
    bool nothing;                 /* the last attempt found nothing to do */
    int attempts, replans;
} rd_ctx;

/* tbl_rewrite_check_fn: plans again against the attempt's base unless it
 * is the snapshot planned on the handle's metadata, then writes. */
static hs_status rd_attempt(void *vctx, const ice_table_metadata *base, hs_error *err)
{
    rd_ctx *c = vctx;
    c->attempts++;
    tbl_rewrite_reset(c->rw);
    const ice_snapshot *cur = ice_metadata_current_snapshot(base);
    int64_t cur_id = cur ? cur->snapshot_id : -1;
    if (!c->work || !c->work->reusable || c->work->snapshot_id != cur_id ||
        c->work->format_version != base->format_version) {
        work_free(c->work);
        c->work = NULL;
        c->replans++;
        HS_TRY(work_plan(base, c->o, c->target, &c->work, err));
    }
    c->nothing = !work_changes(c->work);
    if (c->nothing)
        return hs_err_set(err, HS_CONFLICT, "%s: a concurrent commit left no position delete "
                          "files to rewrite; nothing was committed", c->ident);
    return work_write(c->work, c->rw, c->target, err);
}

hs_status hs_table_rewrite_position_delete_files(hs_table *t, const hs_rewrite_deletes_options *opt,
                                                 char **result_json, hs_error *err)
{
    if (result_json)
        *result_json = NULL;
    HS_OPTS_IN(opt, hs_rewrite_deletes_options, err);
    if (!opt) {   /* NULL = every default */
        memset(&opt_in_, 0, sizeof opt_in_);
        opt = &opt_in_;
    }
    HS_TRY(tbl_check_writable(t, err));
    if (opt->target_file_size_bytes < 0 || opt->min_input_files < 0)
        return hs_err_set(err, HS_INVALID, "rewrite_position_delete_files: negative target size "
                          "or min_input_files");
    HS_TRY(hs_table_refresh(t, err));
    const ice_table_metadata *m = &t->meta;
    const ice_snapshot *snap = ice_metadata_current_snapshot(m);
    if (snap && !snap->manifest_list)
        return hs_err_set(err, HS_UNSUPPORTED, "rewrite_position_delete_files: snapshot %lld has "
                          "no manifest list (format v1)", (long long)snap->snapshot_id);
    rd_ctx c = {0};
    c.ident = t->ident;
    c.o = opt;
    c.target = opt->target_file_size_bytes
                   ? opt->target_file_size_bytes
                   : tbl_maint_prop_i64(m, "write.delete.target-file-size-bytes",
                                        (int64_t)64 << 20);
    if (c.target <= 0)
        c.target = (int64_t)64 << 20;
    hs_status st = work_plan(m, opt, c.target, &c.work, err);
    if (st == HS_OK)
        c.work->reusable = true;
    bool changes = st == HS_OK && work_changes(c.work);
    int64_t new_id = -1;
    if (st == HS_OK && changes && !opt->dry_run) {
        st = tbl_rewrite_begin(t, "replace", c.work->snapshot_id, rd_attempt, &c, &c.rw, err);
        if (st == HS_OK) {
            tbl_rewrite_mark(c.rw);
            st = tbl_rewrite_commit(c.rw, err);
        }
        if (st == HS_CONFLICT && c.nothing) {
            hs_err_clear(err);
            st = HS_OK;
            changes = false;
        } else if (st == HS_OK) {
            new_id = tbl_rewrite_snapshot_id(c.rw);
        }
        tbl_rewrite_free(c.rw);
        c.rw = NULL;
    }
    if (st == HS_OK) {
        rd_work *w = c.work;
        json_t *jg = changes ? json_incref(w->jgroups) : json_array();
        json_t *r = json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:o,s:b,s:o,s:b}",
                              "format_version", w->format_version,
                              "rewritten_delete_files", (json_int_t)(changes ? w->rewritten : 0),
                              "added_delete_files", (json_int_t)(!changes ? 0
                                                                 : opt->dry_run ? w->planned_added
                                                                                : w->added),
                              "dangling_delete_files", (json_int_t)(changes ? w->dangling_files : 0),
                              "dangling_deletes", (json_int_t)(changes ? w->dangling_rows : 0),
                              "deletes", (json_int_t)w->kept,
                              "converted_data_files", (json_int_t)(changes ? w->converted : 0),
                              "rewritten_bytes", (json_int_t)(changes ? w->rewritten_bytes : 0),
                              "added_bytes", w->format_version >= 3 || opt->dry_run || !changes
                                                 ? json_null()
                                                 : json_integer(w->added_bytes),
                              "attempts", (json_int_t)c.attempts,
                              "groups", jg,
                              "nothing_to_do", !changes,
                              "snapshot_id", new_id >= 0 ? json_integer(new_id) : json_null(),
                              "dry_run", opt->dry_run != 0);
        st = r ? tbl_maint_json_out(r, result_json, err) : hs_err_nomem(err, 256);
    }
    work_free(c.work);
    return st;
}

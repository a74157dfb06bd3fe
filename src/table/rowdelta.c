/*
 * table/rowdelta.c - row deltas: delete rows by position in live data files
 * and add rows, as ONE snapshot.  This is what SQL's UPDATE, DELETE and
 * MERGE commit (src/sql/dml.c): they read the rows they change with the
 * scan's _file/_pos (and, on v3, _row_id) columns at some snapshot, then
 * hand the positions and the new rows here.
 *
 *   step            what
 *   --------------  ------------------------------------------------------
 *   open            remembers the table and the snapshot read (S)
 *   delete(file,p)  positions per data file path, in roaring bitmaps
 *   add(stream)     rows conformed to the current schema (by name, as
 *                   appends), buffered in memory; on v3 an int64 column
 *                   "_row_id" carries the row id an updated row keeps
 *   commit          refresh; plan the current snapshot C; each named file
 *                   must be live in C (else HS_CONFLICT) and its positions
 *                   < record_count and not already deleted in C; then
 *                   write.c's tbl_write_row_delta writes position delete
 *                   files (v2) or merged deletion vectors (v3) and the
 *                   new data files (declared sidecars built as appends
 *                   do), and commits one "overwrite" snapshot
 *
 * Validation (per attempt, against the fresh base of every commit retry):
 * every snapshot between S and the base must be an append, or a snapshot
 * whose own manifest entries touch none of the data files this delta
 * deletes from:
 *
 *   entry added by the concurrent snapshot       conflict when
 *   -------------------------------------------  --------------------------------
 *   data file DELETED                            its path is one of ours
 *   deletion vector / position delete file       referenced_data_file is ours, or
 *                                                (no reference) its file_path
 *                                                bounds hold one of our paths or
 *                                                are absent
 *   equality delete file                         always (it may hit our rows)
 *
 * So concurrent appends rebase, concurrent deletes/overwrites of other files
 * rebase too, and two row deltas on one file cannot both win (a lost delete
 * or a doubled update).  This is snapshot isolation for the rows changed:
 * a concurrent insert of a row that our WHERE would have matched does not
 * conflict (Iceberg's "snapshot" isolation level; "serializable" would also
 * check added data files against the statement's filter).
 *
 * Row lineage (v3, spec "Row Lineage"): an updated row is the old row
 * deleted plus a new row; the new data file stores the old _row_id in a
 * column with field id 2147483540 (null for inserted rows, which then
 * inherit first_row_id + position) and no _last_updated_sequence_number
 * column, so the updated rows read the new snapshot's sequence number - the
 * spec's rule for a modified row moved to a new file.
 */
#include "table/table_int.h"

#include "base/hashmap.h"
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "io/io.h"

#include <stdio.h>
#include <string.h>

struct hs_row_delta {
    hs_table *t;                   /* borrowed */
    int64_t read_snapshot_id;      /* -1 = read an empty table */
    hs_map by_path;                /* path -> index into paths / bitmaps */
    hs_buf paths;                  /* char * (owned) */
    hs_buf bitmaps;                /* roaring_bitmap_t * (owned) */
    hs_batch *rows;                /* buffered adds (owned): current schema, + _row_id on v3 */
    ice_schema rows_schema;        /* rows' schema (v3: with _row_id) */
    bool lineage;                  /* rows carry _row_id */
    bool any_row_id;               /* some buffered _row_id is not null */
    int64_t n_deleted;             /* distinct positions marked */
    bool spent;                    /* committed (or failed to): no more use */
};

static roaring_bitmap_t *rd_bitmap(const hs_row_delta *d, size_t i)
{
    return HS_VEC_AT(&d->bitmaps, roaring_bitmap_t *, i);
}

hs_status hs_row_delta_open(hs_table *t, int64_t read_snapshot_id, hs_row_delta **out,
                            hs_error *err)
{
    *out = NULL;
    HS_TRY(tbl_check_writable(t, err));
    /* The rows were planned from committed data: rows of an append stream
     * that are acknowledged but not committed would escape the change. */
    int64_t pending = tbl_tail_pending_rows(t);
    if (pending > 0)
        return hs_err_set(err, HS_BUSY, "%s: %lld acknowledged rows of the table's append stream "
                          "are not committed yet; flush the stream (hs_stream_flush, "
                          "AppendStream.flush()) before UPDATE, DELETE or MERGE", t->ident,
                          (long long)pending);
    const ice_schema *sc = ice_metadata_current_schema(&t->meta);
    if (!sc)
        return hs_err_set(err, HS_CORRUPT, "%s: table metadata has no current schema", t->ident);
    hs_row_delta *d = hs_calloc(1, sizeof *d);
    if (!d)
        return hs_err_nomem(err, sizeof *d);
    d->t = t;
    d->read_snapshot_id = read_snapshot_id < 0 ? -1 : read_snapshot_id;
    d->lineage = t->meta.format_version >= 3;
    hs_field root = {0};
    hs_status st = hs_field_copy(&sc->root, &root) == HS_OK ? HS_OK : hs_err_nomem(err, 64);
    if (st == HS_OK && d->lineage) {
        hs_field rid;
        hs_field_init(&rid, "_row_id", HS_TYPE_INT64, true);
        rid.field_id = ICE_FIELD_ID_ROW_ID;
        if (hs_field_add_child(&root, &rid) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK)
        st = ice_schema_from_field(&root, sc->schema_id, &d->rows_schema, err);
    hs_field_clear(&root);
    if (st != HS_OK) {
        hs_row_delta_free(d);
        return st;
    }
    *out = d;
    return HS_OK;
}

void hs_row_delta_free(hs_row_delta *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < HS_VEC_LEN(&d->paths, char *); i++) {
        hs_free(HS_VEC_AT(&d->paths, char *, i));
        tbl_bitmap_free(rd_bitmap(d, i));
    }
    hs_buf_free(&d->paths);
    hs_buf_free(&d->bitmaps);
    hs_map_free(&d->by_path);
    hs_batch_free(d->rows);
    ice_schema_clear(&d->rows_schema);
    hs_free(d);
}

static hs_status rd_usable(const hs_row_delta *d, hs_error *err)
{
    if (d->spent)
        return hs_err_set(err, HS_INVALID, "%s: this row delta was already committed",
                          d->t->ident);
    return HS_OK;
}

hs_status hs_row_delta_delete(hs_row_delta *d, const char *data_file, const int64_t *positions,
                              int64_t n, hs_error *err)
{
    HS_TRY(rd_usable(d, err));
    if (!data_file || !*data_file)
        return hs_err_set(err, HS_INVALID, "row delta: no data file path given");
    if (n < 0 || (n > 0 && !positions))
        return hs_err_set(err, HS_INVALID, "row delta: bad position count %lld", (long long)n);
    size_t len = strlen(data_file);
    uint64_t idx;
    roaring_bitmap_t *bm;
    if (hs_map_get(&d->by_path, data_file, len, &idx)) {
        bm = rd_bitmap(d, idx);
    } else {
        char *p = hs_malloc(len + 1);
        bm = roaring_bitmap_create();
        idx = HS_VEC_LEN(&d->paths, char *);
        if (!p || !bm || HS_VEC_PUSH(&d->paths, char *, p) != HS_OK) {
            hs_free(p);
            tbl_bitmap_free(bm);
            return hs_err_nomem(err, len);
        }
        memcpy(p, data_file, len + 1);
        if (HS_VEC_PUSH(&d->bitmaps, roaring_bitmap_t *, bm) != HS_OK) {
            d->paths.len -= sizeof(char *);
            hs_free(p);
            tbl_bitmap_free(bm);
            return hs_err_nomem(err, len);
        }
        if (hs_map_put(&d->by_path, p, len, idx) != HS_OK)
            return hs_err_nomem(err, len);   /* the entry stays, unreachable: freed with d */
    }
    for (int64_t i = 0; i < n; i++) {
        if (positions[i] < 0 || positions[i] > (int64_t)UINT32_MAX)
            return hs_err_set(err, HS_INVALID, "row delta: position %lld of %s is out of range",
                              (long long)positions[i], data_file);
        if (roaring_bitmap_add_checked(bm, (uint32_t)positions[i]))
            d->n_deleted++;
    }
    return HS_OK;
}

int64_t hs_row_delta_rows_deleted(const hs_row_delta *d)
{
    return d ? d->n_deleted : 0;
}

int64_t hs_row_delta_rows_added(const hs_row_delta *d)
{
    return d && d->rows ? d->rows->n_rows : 0;
}

/* Appends the rows of one input batch b (taken) to the buffer. */
static hs_status rd_add_batch(hs_row_delta *d, hs_batch *b, hs_error *err)
{
    const ice_schema *sc = ice_metadata_current_schema(&d->t->meta);
    int nc = sc->root.n_children;
    /* detach the _row_id column, if any */
    hs_column *rid = NULL;
    hs_field rid_field = {0};
    int k = hs_batch_find(b, "_row_id");
    hs_status st = HS_OK;
    if (k >= 0) {
        if (hs_field_copy(&b->schema.children[k], &rid_field) != HS_OK) {
            hs_batch_free(b);
            return hs_err_nomem(err, 64);
        }
        rid = b->cols[k];
        hs_field rest;
        hs_field_init(&rest, "", HS_TYPE_STRUCT, false);
        hs_column **cols = hs_calloc((size_t)b->n_cols + 1, sizeof *cols);
        int m = 0;
        if (!cols)
            st = hs_err_nomem(err, 64);
        for (int i = 0; i < b->n_cols && st == HS_OK; i++) {
            if (i == k)
                continue;
            hs_field c = {0};
            if (hs_field_copy(&b->schema.children[i], &c) != HS_OK ||
                hs_field_add_child(&rest, &c) != HS_OK) {
                hs_field_clear(&c);
                st = hs_err_nomem(err, 64);
            }
            cols[m++] = b->cols[i];
        }
        hs_batch *nb = NULL;
        int64_t n_rows = b->n_rows;
        if (st == HS_OK) {
            /* the columns move into nb */
            hs_free(b->cols);
            b->cols = NULL;
            b->n_cols = 0;
            hs_batch_free(b);
            b = NULL;
            st = tbl_batch_from_cols(&rest, cols, m, n_rows, &nb, err);
            if (st != HS_OK)
                for (int i = 0; i < m; i++)
                    hs_col_free(cols[i]);
        }
        hs_free(cols);
        hs_field_clear(&rest);
        if (st != HS_OK) {
            hs_batch_free(b);
            hs_col_free(rid);
            hs_field_clear(&rid_field);
            return st;
        }
        b = nb;
    }
    hs_batch *cb = NULL;
    int64_t base = d->rows ? d->rows->n_rows : 0;
    st = tbl_conform_batch(b, &sc->root, true, &cb, err);
    if (st == HS_OK)
        st = tbl_vector_check_batch(&d->t->meta, cb, base, err);
    if (st != HS_OK)
        hs_err_prefix(err, "row delta");
    if (st == HS_OK && !d->rows)
        st = hs_batch_create(&d->rows_schema.root, 0, &d->rows, err);
    for (int i = 0; i < nc && st == HS_OK; i++)
        st = hs_col_append_column(d->rows->cols[i], cb->cols[i], err);
    if (st == HS_OK && d->lineage) {
        hs_column *c = d->rows->cols[nc];
        if (rid) {
            hs_column *conv = NULL;
            st = tbl_conform_column(&rid_field, rid, &d->rows_schema.root.children[nc], true,
                                    &conv, err);
            rid = NULL;
            if (st != HS_OK)
                hs_err_prefix(err, "row delta: column _row_id");
            if (st == HS_OK) {
                for (int64_t i = 0; i < conv->length && !d->any_row_id; i++)
                    d->any_row_id = hs_col_is_valid(conv, i);
                st = hs_col_append_column(c, conv, err);
            }
            hs_col_free(conv);
        } else {
            for (int64_t i = 0; i < cb->n_rows && st == HS_OK; i++)
                if (hs_col_append_null(c) != HS_OK)
                    st = hs_err_nomem(err, 8);
        }
    }
    if (st == HS_OK)
        d->rows->n_rows += cb->n_rows;
    hs_col_free(rid);
    hs_field_clear(&rid_field);
    hs_batch_free(cb);
    return st;
}

hs_status hs_row_delta_add(hs_row_delta *d, struct ArrowArrayStream *in, hs_error *err)
{
    hs_status st = d ? rd_usable(d, err) : hs_err_set(err, HS_INVALID, "row delta: NULL");
    if (st != HS_OK) {
        if (in && in->release)
            in->release(in);
        return st;
    }
    hs_batch_source src = {0};
    HS_TRY(hs_arrow_import_stream(in, &src, err));
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        st = rd_add_batch(d, b, err);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    return st;
}

/* ---- validation against concurrent snapshots ---- */

typedef struct rd_check {
    const hs_row_delta *d;
} rd_check;

static bool rd_has_path(const hs_row_delta *d, const char *p)
{
    return p && hs_map_get(&d->by_path, p, strlen(p), NULL);
}

/* Whether a position delete file without referenced_data_file may cover one
 * of our data files: its file_path bounds (full paths, never truncated by
 * writers of delete files) hold one of our paths (returned), or are absent
 * (our first path returned).  NULL = it cannot. */
static const char *rd_pos_file_may_touch(const hs_row_delta *d, const ice_data_file *df)
{
    const ice_id_bytes *lo = NULL, *hi = NULL;
    for (int i = 0; i < df->n_lower_bounds; i++)
        if (df->lower_bounds[i].id == ICE_FIELD_ID_FILE_PATH)
            lo = &df->lower_bounds[i];
    for (int i = 0; i < df->n_upper_bounds; i++)
        if (df->upper_bounds[i].id == ICE_FIELD_ID_FILE_PATH)
            hi = &df->upper_bounds[i];
    if (!lo || !hi)
        return HS_VEC_AT(&d->paths, char *, 0);
    for (size_t i = 0; i < HS_VEC_LEN(&d->paths, char *); i++) {
        const char *p = HS_VEC_AT(&d->paths, char *, i);
        size_t n = strlen(p);
        size_t nl = lo->len < n ? lo->len : n, nh = hi->len < n ? hi->len : n;
        int cl = memcmp(lo->p, p, nl), ch = memcmp(p, hi->p, nh);
        bool ge_lo = cl < 0 || (cl == 0 && lo->len <= n);
        bool le_hi = ch < 0 || (ch == 0 && n <= hi->len);
        if (ge_lo && le_hi)
            return p;
    }
    return NULL;
}

static hs_status rd_validate(void *vctx, const ice_table_metadata *base, const ice_snapshot *s,
                             hs_error *err)
{
    const hs_row_delta *d = ((rd_check *)vctx)->d;
    if (HS_VEC_LEN(&d->paths, char *) == 0)
        return HS_OK;   /* only adds: nothing a concurrent commit can invalidate */
    const char *op = ice_snapshot_operation(s);
    if (!s->manifest_list)
        return hs_err_set(err, HS_CONFLICT, "%s: concurrent snapshot %lld has no manifest list",
                          d->t->ident, (long long)s->snapshot_id);
    hs_file *f = NULL;
    ice_manifest_list *l = NULL;
    hs_status st = hs_io_open(s->manifest_list, &f, err);
    if (st == HS_OK)
        st = ice_manifest_list_read(f, &l, err);
    hs_file_close(f);
    for (int mi = 0; st == HS_OK && mi < l->n_files; mi++) {
        const ice_manifest_file *mf = &l->files[mi];
        if (!mf->has_added_snapshot_id || mf->added_snapshot_id != s->snapshot_id)
            continue;
        const ice_partition_spec *spec = ice_metadata_spec(base, mf->partition_spec_id);
        const ice_schema *sc = spec ? tbl_schema_for_spec(base, spec) : NULL;
        ice_manifest *man = NULL;
        st = hs_io_open(mf->manifest_path, &f, err);
        if (st == HS_OK)
            st = ice_manifest_read(f, mf, spec, sc, &man, err);
        hs_file_close(f);
        for (int64_t i = 0; st == HS_OK && i < man->n_entries; i++) {
            const ice_manifest_entry *e = &man->entries[i];
            if (!e->has_snapshot_id || e->snapshot_id != s->snapshot_id)
                continue;
            const ice_data_file *df = &e->file;
            const char *why = NULL;
            const char *which = df->file_path;
            if (df->content == ICE_CONTENT_DATA) {
                if (e->status == ICE_STATUS_DELETED && rd_has_path(d, df->file_path))
                    why = "removed data file";
            } else if (e->status == ICE_STATUS_ADDED) {
                if (df->content == ICE_CONTENT_EQUALITY_DELETES) {
                    why = "added equality deletes";
                } else if (df->referenced_data_file) {
                    if (rd_has_path(d, df->referenced_data_file)) {
                        why = "deleted rows of data file";
                        which = df->referenced_data_file;
                    }
                } else if ((which = rd_pos_file_may_touch(d, df)) != NULL) {
                    why = "added position deletes that may cover data file";
                }
            }
            if (why)
                st = hs_err_set(err, HS_CONFLICT, "%s: a concurrent %s (snapshot %lld) %s %s, "
                                "which this change also modifies; retry the statement",
                                d->t->ident, op ? op : "commit", (long long)s->snapshot_id,
                                why, which);
        }
        ice_manifest_free(man);
    }
    ice_manifest_list_free(l);
    return st;
}

/* ---- commit ---- */

hs_status hs_row_delta_commit(hs_row_delta *d, hs_error *err)
{
    HS_TRY(rd_usable(d, err));
    d->spent = true;
    hs_table *t = d->t;
    size_t n_paths = HS_VEC_LEN(&d->paths, char *);
    bool has_rows = d->rows && d->rows->n_rows > 0;
    if (n_paths == 0 && !has_rows)
        return HS_OK;
    HS_TRY(hs_table_refresh(t, err));
    const ice_schema *sc = ice_metadata_current_schema(&t->meta);
    if (!sc)
        return hs_err_set(err, HS_CORRUPT, "%s: table metadata has no current schema", t->ident);
    if (has_rows && sc->schema_id != d->rows_schema.schema_id)
        return hs_err_set(err, HS_CONFLICT, "%s: the table schema changed (schema %d -> %d) "
                          "since the rows were buffered; retry the statement", t->ident,
                          (int)d->rows_schema.schema_id, (int)sc->schema_id);
    tbl_plan *p = NULL;
    const ice_snapshot *snap = ice_metadata_current_snapshot(&t->meta);
    hs_status st = HS_OK;
    if (n_paths > 0)
        st = tbl_plan_make(&t->meta, snap, sc, NULL, &p, err);
    else
        st = tbl_plan_make(&t->meta, NULL, sc, NULL, &p, err);
    tbl_file_action *acts = n_paths ? hs_calloc(n_paths, sizeof *acts) : NULL;
    if (st == HS_OK && n_paths && !acts)
        st = hs_err_nomem(err, n_paths * sizeof *acts);
    int n = 0;
    hs_map plan_idx = {0};
    for (int i = 0; st == HS_OK && n_paths && i < p->n_files; i++)
        if (hs_map_put(&plan_idx, p->files[i].path, strlen(p->files[i].path), (uint64_t)i) !=
            HS_OK)
            st = hs_err_nomem(err, 64);
    for (size_t k = 0; st == HS_OK && k < n_paths; k++) {
        const char *path = HS_VEC_AT(&d->paths, char *, k);
        roaring_bitmap_t *bm = rd_bitmap(d, k);
        if (roaring_bitmap_is_empty(bm))
            continue;
        uint64_t fi;
        if (!hs_map_get(&plan_idx, path, strlen(path), &fi)) {
            st = hs_err_set(err, HS_CONFLICT, "%s: data file %s is not live in the current "
                            "snapshot (a concurrent commit removed it, or it never was); retry "
                            "the statement", t->ident, path);
            break;
        }
        const tbl_plan_file *pf = &p->files[fi];
        uint32_t maxv = roaring_bitmap_maximum(bm);
        if ((int64_t)maxv >= pf->record_count) {
            st = hs_err_set(err, HS_INVALID, "%s: position %u is past the %lld rows of data "
                            "file %s", t->ident, maxv, (long long)pf->record_count, path);
            break;
        }
        roaring_bitmap_t *gone = NULL;
        st = tbl_plan_load_deletes(pf, &gone, err);
        if (st != HS_OK)
            break;
        uint64_t n_gone = gone ? roaring_bitmap_get_cardinality(gone) : 0;
        if (gone && roaring_bitmap_intersect(bm, gone)) {
            tbl_bitmap_free(gone);
            st = hs_err_set(err, HS_CONFLICT, "%s: rows of data file %s that this change "
                            "deletes are already deleted in the current snapshot (a concurrent "
                            "delete); retry the statement", t->ident, path);
            break;
        }
        tbl_bitmap_free(gone);
        tbl_file_action *a = &acts[n++];
        a->file = (int)fi;
        a->hits = roaring_bitmap_copy(bm);
        if (!a->hits) {
            st = hs_err_nomem(err, 64);
            break;
        }
        a->live = pf->record_count - (int64_t)n_gone;
        a->remove_all = (int64_t)roaring_bitmap_get_cardinality(bm) >= a->live;
    }
    hs_map_free(&plan_idx);
    hs_batch *rows = has_rows ? d->rows : NULL;
    /* the buffer's own schema (the current one, + _row_id on v3) */
    const ice_schema *rows_schema = &d->rows_schema;
    hs_batch *plain = NULL;
    if (st == HS_OK && rows && d->lineage) {
        if (!d->any_row_id) {
            rows_schema = NULL;
            /* no updated rows: a plain batch (the _row_id column dropped) */
            int nc = sc->root.n_children;
            hs_column **cols = hs_calloc((size_t)nc + 1, sizeof *cols);
            if (!cols)
                st = hs_err_nomem(err, 64);
            for (int i = 0; st == HS_OK && i < nc; i++) {
                cols[i] = rows->cols[i];
                rows->cols[i] = NULL;
            }
            if (st == HS_OK) {
                st = tbl_batch_from_cols(&sc->root, cols, nc, rows->n_rows, &plain, err);
                if (st != HS_OK)
                    for (int i = 0; i < nc; i++)
                        hs_col_free(cols[i]);
            }
            hs_free(cols);
            rows = plain;
        }
    }
    rd_check chk = {d};
    if (st == HS_OK)
        st = tbl_write_row_delta(t, p, acts, n, rows, rows_schema, d->read_snapshot_id,
                                 rd_validate, &chk, err);
    hs_batch_free(plain);
    for (int i = 0; i < n; i++)
        tbl_bitmap_free(acts[i].hits);
    hs_free(acts);
    tbl_plan_free(p);
    return st;
}

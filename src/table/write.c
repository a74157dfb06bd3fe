/*
 * table/write.c - append, overwrite and delete: data files, delete files,
 * manifests, manifest lists, and the commit that publishes them.
 *
 * Every write operation has two phases:
 *
 *   1. Prepare (once): write the new files.  Data files are Parquet under
 *      <location>/data/[<partition path>/], one or more per partition tuple
 *      of the default spec, rows sorted by the default sort order (appends
 *      stream their input in chunks: "append: streaming" below); delete files are
 *      Parquet position-delete files (v2) or one Puffin file of deletion
 *      vectors (v3).  Metrics come from the rows written (exact counts and
 *      bounds, strings and binary truncated to 16 as Iceberg's default
 *      metrics mode) and column sizes from the Parquet footer.  New files are
 *      listed in new manifests; manifests holding files this operation
 *      removes are rewritten (removed -> DELETED, others -> EXISTING).
 *   2. Commit (per attempt, tbl_commit's rebase callback): against the fresh
 *      base, check conflicts, build the manifest list = new manifests +
 *      the base snapshot's manifests minus the rewritten ones, write it,
 *      add the snapshot (sequence number base+1; v3 first-row-id = the
 *      base's next-row-id) with a summary of the standard counters.
 *
 *   operation          removes            adds                   conflicts when, since planning
 *   -----------------  -----------------  ---------------------  ------------------------------------
 *   append             -                  data manifest          never (always rebases)
 *   overwrite(filter)  files all of whose  data manifest (new     a snapshot other than an append was
 *                      rows match; files   rows + kept rows of    committed, or a rewritten manifest
 *                      partly matching     partly matching files) left the base
 *                      are rewritten
 *   delete(filter)     files all of whose  delete manifest(s)     same as overwrite
 *                      rows match          (pos deletes / DVs)
 *
 * Indexes (index.c, tbl_ixw): when the table's index registry declares
 * indexes, every data file written gets its sidecars from the rows still in
 * memory (so a streamed append writes such a table's files one chunk group
 * at a time), and commit_cb writes the new registry version (our entries added,
 * those of removed files dropped, indexes declared meanwhile built from the
 * written files) and sets its property in the same metadata commit.
 *
 * Atomicity: nothing is visible until the catalog swap.  A failed commit
 * removes the files this operation wrote (best effort: an I/O failure in the
 * cleanup leaves orphans, which are unreferenced and harmless).  All file
 * creation goes through cat_io_create_ex so crash tests can fail any step.
 *
 * Durability (table property hyperstream.commit.fsync, docs/tables.md):
 *
 *   value            each file written                 power loss
 *   ---------------  --------------------------------  ---------------------------
 *   false (default)  temp name + exclusive link, no    recent commits may point at
 *                    fsync (Java's and pyiceberg's     unwritten files; process
 *                    local FileIO semantics)           crashes lose nothing
 *   true             fsync(file) before the link,      table at a committed state
 *                    fsync(dir) after
 *
 * Why not one fsync of the final metadata file + directory only: on ext4
 * (delayed allocation) and most file systems, syncing the metadata file does
 * not write back the data files, manifests and manifest list, so after a
 * power loss the durable metadata would reference zero-length files - the
 * table would be unreadable, worse than losing the commit.  Durability needs
 * every file synced before the swap, so "true" syncs each one, and "false"
 * syncs none (no half-measure that costs fsyncs without buying safety).  The
 * catalog's metadata file follows the same property (catalog/sql.c, path.c).
 * The default is "false": ~8 fsyncs were most of a small append's latency
 * (bench/commit), and Java and pyiceberg promise no more on local disks.
 */
#define _GNU_SOURCE 1 /* qsort_r */
#include "table/table_int.h"

#include "base/hashmap.h"
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "iceberg/puffin.h"
#include "io/io.h"
#include "parquet/reader.h"
#include "parquet/writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* the operation                                                       */

typedef struct tbl_wop {
    hs_table *t;
    const char *operation;          /* "append" | "overwrite" | "delete" */
    int64_t snapshot_id;
    bool check_conflicts;
    int64_t planned_snapshot_id;    /* -1 = planned on an empty table */
    hs_arena arena;
    hs_buf add;                     /* ice_manifest_file: manifests to add */
    hs_buf replace;                 /* const char *: manifest paths to drop */
    hs_buf written;                 /* char * (arena): files written, for cleanup */
    char *prev_list;                /* list written by the previous attempt (arena) */
    /* summary deltas */
    int64_t added_files, added_records, added_size;
    int64_t removed_files, removed_records, removed_size;
    int64_t added_del_files, added_pos_deletes, removed_del_files, removed_pos_deletes;
    int64_t removed_eq_del_files, removed_eq_deletes;   /* of removed_del_files */
    int64_t changed_partitions;
    hs_map parts;                   /* partition tuple keys written (tuple_key) */
    hs_buf pvals;                   /* pv_owned: partition tuples of the files written */
    tbl_ixw ixw;                    /* declared indexes of the files written (index.c) */
    /* row deltas: judges each non-append snapshot committed since planning
     * (NULL = every such snapshot is a conflict) */
    tbl_validate_fn validate;
    void *validate_ctx;
    /* extra conflict check per attempt (tbl_rewrite_*: maintenance) */
    hs_status (*check)(void *ctx, const ice_table_metadata *base, hs_error *err);
    void *check_ctx;
    ice_kv extra_summary;           /* more summary keys (tbl_rewrite_summary) */
    ice_kv extra_props;             /* table properties set by the commit (tbl_rewrite_property) */
    int64_t target_file_size;       /* 0 = write.target-file-size-bytes */
    tbl_row_map_fn row_map;         /* where rows went (tbl_rewrite_set_row_map) */
    void *row_map_ctx;
} tbl_wop;

typedef struct pv_owned {
    ice_value *v;
    int n;
} pv_owned;

static void op_init(tbl_wop *op, hs_table *t, const char *operation)
{
    memset(op, 0, sizeof *op);
    op->t = t;
    op->operation = operation;
    op->snapshot_id = ice_new_snapshot_id();
    op->planned_snapshot_id = -1;
    tbl_ixw_init(&op->ixw, t);
}

/* Removes a file this operation wrote and will not publish, best effort,
 * through io.h: a local file or an object (remove() of an s3:// name would
 * silently leave the object behind as an orphan). */
static void remove_written(const char *path)
{
    (void)!hs_io_delete(path, NULL);
}

static void op_cleanup_files(tbl_wop *op)
{
    for (size_t i = 0; i < HS_VEC_LEN(&op->written, char *); i++)
        remove_written(HS_VEC_AT(&op->written, char *, i));
    tbl_ixw_abort(&op->ixw);
}

static void op_free(tbl_wop *op)
{
    hs_buf_free(&op->add);
    hs_buf_free(&op->replace);
    hs_buf_free(&op->written);
    hs_map_free(&op->parts);
    for (size_t i = 0; i < HS_VEC_LEN(&op->pvals, pv_owned); i++) {
        pv_owned *pv = &HS_VEC_AT(&op->pvals, pv_owned, i);
        for (int k = 0; k < pv->n; k++)
            ice_value_clear(&pv->v[k]);
        hs_free(pv->v);
    }
    hs_buf_free(&op->pvals);
    tbl_ixw_free(&op->ixw);
    ice_kv_clear(&op->extra_summary);
    ice_kv_clear(&op->extra_props);
    hs_arena_destroy(&op->arena);
}

/* A copy of partition tuple v[0..n) that lives as long as the operation
 * (manifest entries point at it). */
static ice_value *op_pvals(tbl_wop *op, const ice_value *v, int n)
{
    ice_value *c = hs_calloc((size_t)n + 1, sizeof *c);
    if (!c)
        return NULL;
    pv_owned pv = {c, 0};
    for (int k = 0; k < n; k++, pv.n++)
        if (ice_value_copy(&v[k], &c[k]) != HS_OK)
            break;
    if (pv.n < n || hs_buf_append(&op->pvals, &pv, sizeof pv) != HS_OK) {
        for (int k = 0; k < pv.n; k++)
            ice_value_clear(&c[k]);
        hs_free(c);
        return NULL;
    }
    return c;
}

static char *op_str(tbl_wop *op, const char *s)
{
    return hs_arena_strndup(&op->arena, s, strlen(s));
}

static hs_status op_record(tbl_wop *op, const char *path, hs_error *err)
{
    char *p = op_str(op, path);
    if (!p || HS_VEC_PUSH(&op->written, char *, p) != HS_OK)
        return hs_err_nomem(err, strlen(path));
    return HS_OK;
}

/* The hs_wfile flags of every file this operation writes: exclusive create
 * always; fsync (file + directory) only when the table property
 * hyperstream.commit.fsync is "true" (see the header comment). */
static int wflags(const hs_table *t)
{
    const char *v = ice_kv_get(&t->meta.properties, "hyperstream.commit.fsync");
    bool sync = v && strcasecmp(v, "true") == 0;
    return HS_WFILE_EXCLUSIVE | (sync ? 0 : HS_WFILE_NO_SYNC);
}

/* <location>/<sub>/<name>, with the location's file:// kept as written. */
static hs_status make_path(const hs_table *t, const char *sub, const char *part, const char *name,
                           hs_buf *out, hs_error *err)
{
    hs_buf_reset(out);
    const char *loc = t->meta.location;
    size_t n = strlen(loc);
    while (n > 1 && loc[n - 1] == '/')
        n--;
    hs_status st = HS_OK;
    const char *data_path = strcmp(sub, "data") == 0
                                ? ice_kv_get(&t->meta.properties, "write.data.path") : NULL;
    if (data_path)
        st = hs_buf_puts(out, data_path);
    else {
        st = hs_buf_append(out, loc, n);
        if (st == HS_OK)
            st = hs_buf_printf(out, "/%s", sub);
    }
    if (st == HS_OK && part && *part)
        st = hs_buf_printf(out, "/%s", part);
    if (st == HS_OK)
        st = hs_buf_printf(out, "/%s", name);
    if (st != HS_OK)
        return hs_err_nomem(err, n);
    hs_buf_cstr(out);
    return HS_OK;
}

static hs_status mkdir_of(const char *path, hs_error *err)
{
    const char *local = tbl_local(path);
    const char *slash = strrchr(local, '/');
    if (!slash || slash == local)
        return HS_OK;
    char *dir = hs_strndup(local, (size_t)(slash - local));
    if (!dir)
        return hs_err_nomem(err, strlen(local));
    hs_status st = cat_io_mkdirs(dir, err);
    hs_free(dir);
    return st;
}

/* ------------------------------------------------------------------ */
/* metrics of the rows written                                         */

typedef struct metric_acc {
    hs_buf ids_counts;   /* ice_id_long */
    hs_buf nulls;        /* ice_id_long */
    hs_buf nans;         /* ice_id_long */
    hs_buf lower;        /* ice_id_bytes */
    hs_buf upper;        /* ice_id_bytes */
} metric_acc;

static hs_status push_long(hs_buf *b, int32_t id, int64_t v)
{
    ice_id_long x = {id, v};
    return hs_buf_append(b, &x, sizeof x);
}

static hs_status push_bytes(hs_buf *b, int32_t id, uint32_t len, const uint8_t *p)
{
    ice_id_bytes x = {id, len, p};
    return hs_buf_append(b, &x, sizeof x);
}

static void metric_free(metric_acc *m)
{
    hs_buf_free(&m->ids_counts);
    hs_buf_free(&m->nulls);
    hs_buf_free(&m->nans);
    hs_buf_free(&m->lower);
    hs_buf_free(&m->upper);
}

/* Truncated bound bytes of v (column f) in the op arena; NULL when none. */
static const uint8_t *bound_bytes(tbl_wop *op, const hs_field *f, const pr_val *v, bool upper,
                                  uint32_t *len)
{
    hs_buf b = {0};
    ice_value iv = {0}, tv = {0};
    const uint8_t *res = NULL;
    if (pr_val_to_bound(f, v, &b) != HS_OK)
        goto done;
    ice_type_id it = ice_type_of(f);
    if (it == ICE_T_STRING || it == ICE_T_BINARY) {
        if (ice_value_from_bytes(f, b.data ? b.data : (const uint8_t *)"", b.len, &iv, NULL) != HS_OK)
            goto done;
        bool ok = true;
        hs_status st = upper ? ice_value_truncate_upper(&iv, ICE_BOUND_TRUNCATE_LEN, &tv, &ok)
                             : ice_value_truncate_lower(&iv, ICE_BOUND_TRUNCATE_LEN, &tv);
        if (st != HS_OK || !ok || tv.is_null)
            goto done;
        hs_buf_reset(&b);
        if (ice_value_to_bytes(&tv, &b) != HS_OK)
            goto done;
    }
    uint8_t *p = hs_arena_alloc(&op->arena, b.len + 1);
    if (p) {
        if (b.len)
            memcpy(p, b.data, b.len);
        *len = (uint32_t)b.len;
        res = p;
    }
done:
    ice_value_clear(&iv);
    ice_value_clear(&tv);
    hs_buf_free(&b);
    return res;
}

static hs_status metrics_of(tbl_wop *op, const hs_field *f, const hs_column *c,
                            const uint8_t *parent_valid, int64_t n, metric_acc *m)
{
    if (f->type == HS_TYPE_STRUCT) {
        /* children are null where the struct is null */
        uint8_t *valid = hs_malloc((size_t)n + 1);
        if (!valid)
            return HS_NOMEM;
        for (int64_t i = 0; i < n; i++)
            valid[i] = (!parent_valid || parent_valid[i]) && hs_col_is_valid(c, i);
        hs_status st = HS_OK;
        for (int k = 0; k < f->n_children && k < c->n_children && st == HS_OK; k++)
            st = metrics_of(op, &f->children[k], c->children[k], valid, n, m);
        hs_free(valid);
        return st;
    }
    if (f->type == HS_TYPE_LIST || f->type == HS_TYPE_MAP || f->field_id < 0)
        return HS_OK;  /* no metrics for repeated fields */
    int64_t nulls = 0, nans = 0;
    bool have = false;
    pr_val lo = {0}, hi = {0};
    bool comparable = pr_kind_of(f) != PR_V_NULL;
    for (int64_t i = 0; i < n; i++) {
        if ((parent_valid && !parent_valid[i]) || !hs_col_is_valid(c, i)) {
            nulls++;
            continue;
        }
        if (!comparable)
            continue;
        pr_val v;
        if (!pr_val_get(f, c, i, &v))
            continue;
        if (v.kind == PR_V_F64 && isnan(v.f)) {
            nans++;
            continue;
        }
        if (!have) {
            lo = hi = v;
            have = true;
        } else {
            if (pr_val_cmp(&v, &lo) < 0)
                lo = v;
            if (pr_val_cmp(&v, &hi) > 0)
                hi = v;
        }
    }
    if (push_long(&m->ids_counts, f->field_id, n) != HS_OK ||
        push_long(&m->nulls, f->field_id, nulls) != HS_OK)
        return HS_NOMEM;
    if (pr_kind_of(f) == PR_V_F64 &&
        push_long(&m->nans, f->field_id, nans) != HS_OK)
        return HS_NOMEM;
    if (have) {
        /* -0.0 and 0.0 as Java: lower -0.0, upper 0.0 are fine as found */
        uint32_t ll = 0, hl = 0;
        const uint8_t *lp = bound_bytes(op, f, &lo, false, &ll);
        const uint8_t *hp = bound_bytes(op, f, &hi, true, &hl);
        if (lp && push_bytes(&m->lower, f->field_id, ll, lp) != HS_OK)
            return HS_NOMEM;
        if (hp && push_bytes(&m->upper, f->field_id, hl, hp) != HS_OK)
            return HS_NOMEM;
    }
    return HS_OK;
}

static void *arena_copy(tbl_wop *op, const hs_buf *b)
{
    if (!b->len)
        return NULL;
    void *p = hs_arena_alloc(&op->arena, b->len);
    if (p)
        memcpy(p, b->data, b->len);
    return p;
}

/* Column sizes from the footer, by the leaf's field id. */
static hs_status column_sizes(tbl_wop *op, const pq_file_meta *fm, ice_data_file *df)
{
    hs_buf acc = {0};
    /* leaves in depth-first order carry field ids in the schema elements */
    int leaf = 0;
    for (int i = 1; i < fm->n_schema; i++) {
        const pq_schema_element *e = &fm->schema[i];
        if (e->num_children > 0)
            continue;
        int64_t total = 0;
        for (int g = 0; g < fm->n_row_groups; g++)
            if (leaf < fm->row_groups[g].n_columns)
                total += fm->row_groups[g].columns[leaf].meta_data.total_compressed_size;
        if (e->has_field_id &&
            push_long(&acc, e->field_id, total) != HS_OK) {
            hs_buf_free(&acc);
            return HS_NOMEM;
        }
        leaf++;
    }
    df->n_column_sizes = (int)HS_VEC_LEN(&acc, ice_id_long);
    df->column_sizes = arena_copy(op, &acc);
    hs_buf_free(&acc);
    return df->n_column_sizes && !df->column_sizes ? HS_NOMEM : HS_OK;
}

/* ------------------------------------------------------------------ */
/* writing data files                                                  */

/* Byte key of a partition tuple: per value a null flag, a 4-byte length and
 * the single-value binary form. */
static hs_status tuple_key(const ice_value *v, int n, hs_buf *key)
{
    hs_buf_reset(key);
    for (int k = 0; k < n; k++) {
        HS_TRY(hs_buf_append_byte(key, v[k].is_null ? 0 : 1));
        size_t before = key->len;
        HS_TRY(hs_buf_append_zeros(key, 4));
        if (!v[k].is_null)
            HS_TRY(ice_value_to_bytes(&v[k], key));
        uint32_t len = (uint32_t)(key->len - before - 4);
        memcpy(key->data + before, &len, 4);
    }
    return hs_buf_append_byte(key, 0xff);
}

typedef struct group {
    ice_value *values;      /* n partition fields (owned) */
    hs_buf rows;            /* int64_t row indexes */
} group;

typedef struct sort_key {
    pr_val *v;             /* per row */
    uint8_t *is_null;
    ice_sort_direction dir;
    ice_null_order nulls;
} sort_key;

typedef struct sort_ctx {
    sort_key *keys;
    int n_keys;
} sort_ctx;

static int cmp_rows(const void *a, const void *b, void *vctx)
{
    const sort_ctx *s = vctx;
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    for (int k = 0; k < s->n_keys; k++) {
        const sort_key *key = &s->keys[k];
        bool nx = key->is_null[x], ny = key->is_null[y];
        if (nx || ny) {
            if (nx && ny)
                continue;
            int c = nx ? -1 : 1;
            return key->nulls == ICE_NULLS_FIRST ? c : -c;
        }
        int c = pr_val_cmp(&key->v[x], &key->v[y]);
        if (c)
            return key->dir == ICE_SORT_ASC ? c : -c;
    }
    return x < y ? -1 : x > y;
}

/* Transformed value of one row of column `src` (field f) as a pr_val of
 * result type rf; bytes kept in scratch arena a.  Returns false for null. */
static bool transformed(const hs_field *f, const pr_col_ref *ref, int64_t row,
                        const ice_transform *tr, const hs_field *rf, hs_arena *a, pr_val *out,
                        ice_value *keep, hs_error *err, hs_status *st)
{
    ice_value in = {0};
    bool valid = pr_ref_valid(ref, row);
    if (!valid)
        ice_value_init_null(&in, f);
    else if ((*st = ice_value_from_column(f, ref->col, row, &in, err)) != HS_OK)
        return false;
    ice_value res = {0};
    *st = ice_transform_apply(tr, &in, &res, err);
    ice_value_clear(&in);
    if (*st != HS_OK)
        return false;
    bool nonnull = !res.is_null;
    if (nonnull && out) {
        hs_buf b = {0};
        if (ice_value_to_bytes(&res, &b) != HS_OK) {
            *st = hs_err_nomem(err, 16);
            hs_buf_free(&b);
            ice_value_clear(&res);
            return false;
        }
        uint8_t *p = hs_arena_alloc(a, b.len + 1);
        if (!p) {
            *st = hs_err_nomem(err, b.len);
        } else {
            if (b.len)
                memcpy(p, b.data, b.len);
            if (!pr_val_from_bound(rf, p, b.len, out))
                nonnull = false;
        }
        hs_buf_free(&b);
    }
    if (keep)
        *keep = res;
    else
        ice_value_clear(&res);
    return nonnull;
}

/* Parquet writer options from the table properties Iceberg defines
 * (write.parquet.compression-codec / -level, page-row-limit,
 * page-size-bytes, row-group-size-bytes).  Tables with sidecar indexes
 * default to 4096-row pages instead of 20000: an index lookup selects a few
 * rows, and the page is the unit that must be decompressed and decoded
 * (uncompressed pages are read in place: docs/indexes.md). */
static int64_t prop_i64(const hs_table *t, const char *key, int64_t dflt)
{
    const char *v = ice_kv_get(&t->meta.properties, key);
    if (!v)
        return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    return (*end == 0 && x > 0) ? (int64_t)x : dflt;
}

static pq_writer_options writer_opts(const hs_table *t)
{
    pq_writer_options wo = {.codec = HS_CODEC_ZSTD};
    const char *c = ice_kv_get(&t->meta.properties, "write.parquet.compression-codec");
    if (c) {
        if (!strcasecmp(c, "snappy"))
            wo.codec = HS_CODEC_SNAPPY;
        else if (!strcasecmp(c, "gzip"))
            wo.codec = HS_CODEC_GZIP;
        else if (!strcasecmp(c, "lz4"))
            wo.codec = HS_CODEC_LZ4_RAW;
        else if (!strcasecmp(c, "uncompressed") || !strcasecmp(c, "none"))
            wo.codec = HS_CODEC_NONE;
    }
    wo.codec_level = (int)prop_i64(t, "write.parquet.compression-level", 0);
    bool indexed = ice_kv_get(&t->meta.properties, "hyperstream.index-registry") != NULL;
    wo.page_rows = prop_i64(t, "write.parquet.page-row-limit", indexed ? 4096 : 0);
    wo.page_bytes = prop_i64(t, "write.parquet.page-size-bytes", 0);
    wo.row_group_bytes = prop_i64(t, "write.parquet.row-group-size-bytes", 0);
    return wo;
}

/* ---- one data file, written in slices ----
 *
 * A data file is opened, fed any number of slices (batches of rows in the
 * current schema), and closed.  Metrics are merged across slices: counts
 * add up, and bounds merge as min/max of each slice's truncated bounds -
 * truncation is monotone (a <= b implies trunc(a) <= trunc(b), for the
 * lower prefix and the incremented upper prefix alike), so the merge equals
 * the bounds computed over all rows at once.  A slice with values but no
 * upper bound (a string that cannot be truncated upward) drops the file's
 * upper bound, as a one-shot computation would have. */

typedef struct fm_field {
    int32_t id;
    int64_t count, nulls, nans;
    bool has_nans;                  /* a float column: its NaN count is recorded */
    bool lo_set, hi_set, lo_lost, hi_lost;
    hs_buf lo, hi;                  /* bound bytes (truncated) */
} fm_field;

typedef struct dfile {
    hs_buf path;
    hs_wfile *wf;
    pq_writer *w;
    int64_t rows;
    hs_buf fields;                  /* fm_field, in first-seen order */
    ice_value *pvals;               /* borrowed: outlives the manifest entries */
    int n_pvals;
} dfile;

static void dfile_fields_free(dfile *f)
{
    for (size_t i = 0; i < HS_VEC_LEN(&f->fields, fm_field); i++) {
        fm_field *x = &HS_VEC_AT(&f->fields, fm_field, i);
        hs_buf_free(&x->lo);
        hs_buf_free(&x->hi);
    }
    hs_buf_free(&f->fields);
}

/* Abandons an unfinished file: its temporary file is removed (the final
 * name was never published; op_cleanup_files also tries it). */
static void dfile_abort(dfile *f)
{
    pq_writer_free(f->w);
    if (f->wf)
        hs_wfile_abort(f->wf);
    dfile_fields_free(f);
    hs_buf_free(&f->path);
    memset(f, 0, sizeof *f);
}

static hs_status dfile_open(tbl_wop *op, const ice_schema *schema, const char *part_path,
                            ice_value *pvals, int n_pvals, int64_t row_group_bytes, int64_t seq,
                            dfile *f, hs_error *err)
{
    memset(f, 0, sizeof *f);
    f->pvals = pvals;
    f->n_pvals = n_pvals;
    char name[96];
    char uuid[37];
    ice_uuid_v4(uuid);
    snprintf(name, sizeof name, "00000-%lld-%s.parquet", (long long)seq, uuid);
    hs_status st = make_path(op->t, "data", part_path, name, &f->path, err);
    if (st == HS_OK)
        st = mkdir_of((const char *)f->path.data, err);
    if (st == HS_OK)
        st = cat_io_create_ex(tbl_local((const char *)f->path.data), wflags(op->t), &f->wf, err);
    if (st == HS_OK)
        st = op_record(op, (const char *)f->path.data, err);
    pq_writer_options wo = writer_opts(op->t);
    if (row_group_bytes > 0 && (wo.row_group_bytes <= 0 || wo.row_group_bytes > row_group_bytes))
        wo.row_group_bytes = row_group_bytes;
    if (st == HS_OK)
        st = pq_writer_open(f->wf, &schema->root, &wo, &f->w, err);
    if (st != HS_OK)
        dfile_abort(f);
    return st;
}

static fm_field *fm_get(dfile *f, int32_t id)
{
    for (size_t i = 0; i < HS_VEC_LEN(&f->fields, fm_field); i++)
        if (HS_VEC_AT(&f->fields, fm_field, i).id == id)
            return &HS_VEC_AT(&f->fields, fm_field, i);
    fm_field x = {.id = id};
    if (hs_buf_append(&f->fields, &x, sizeof x) != HS_OK)
        return NULL;
    return &HS_VEC_AT(&f->fields, fm_field, HS_VEC_LEN(&f->fields, fm_field) - 1);
}

static const ice_id_bytes *bound_of(const hs_buf *b, int32_t id)
{
    for (size_t i = 0; i < HS_VEC_LEN(b, ice_id_bytes); i++)
        if (HS_VEC_AT(b, ice_id_bytes, i).id == id)
            return &HS_VEC_AT(b, ice_id_bytes, i);
    return NULL;
}

/* Keeps the smaller (upper: larger) of the file's bound and the slice's. */
static hs_status fm_merge_bound(const hs_field *fd, hs_buf *cur, bool *set, const ice_id_bytes *b,
                                bool upper)
{
    if (*set && fd) {
        pr_val a, v;
        if (pr_val_from_bound(fd, cur->data ? cur->data : (const uint8_t *)"", cur->len, &a) &&
            pr_val_from_bound(fd, b->p ? b->p : (const uint8_t *)"", b->len, &v)) {
            int c = pr_val_cmp(&v, &a);
            if (upper ? c <= 0 : c >= 0)
                return HS_OK;
        }
    }
    hs_buf_reset(cur);
    *set = true;
    return b->len ? hs_buf_append(cur, b->p, b->len) : HS_OK;
}

static hs_status fm_merge(dfile *f, const ice_schema *schema, const metric_acc *m)
{
    for (size_t i = 0; i < HS_VEC_LEN(&m->ids_counts, ice_id_long); i++) {
        int32_t id = HS_VEC_AT(&m->ids_counts, ice_id_long, i).id;
        fm_field *x = fm_get(f, id);
        if (!x)
            return HS_NOMEM;
        x->count += HS_VEC_AT(&m->ids_counts, ice_id_long, i).value;
        for (size_t k = 0; k < HS_VEC_LEN(&m->nulls, ice_id_long); k++)
            if (HS_VEC_AT(&m->nulls, ice_id_long, k).id == id)
                x->nulls += HS_VEC_AT(&m->nulls, ice_id_long, k).value;
        for (size_t k = 0; k < HS_VEC_LEN(&m->nans, ice_id_long); k++)
            if (HS_VEC_AT(&m->nans, ice_id_long, k).id == id) {
                x->has_nans = true;
                x->nans += HS_VEC_AT(&m->nans, ice_id_long, k).value;
            }
        const ice_id_bytes *lo = bound_of(&m->lower, id), *hi = bound_of(&m->upper, id);
        if (!lo && !hi)
            continue;   /* no non-null, non-NaN value in this slice */
        const hs_field *fd = ice_schema_find_id(schema, id);
        if (!lo)
            x->lo_lost = true;
        else if (fm_merge_bound(fd, &x->lo, &x->lo_set, lo, false) != HS_OK)
            return HS_NOMEM;
        if (!hi)
            x->hi_lost = true;
        else if (fm_merge_bound(fd, &x->hi, &x->hi_set, hi, true) != HS_OK)
            return HS_NOMEM;
    }
    return HS_OK;
}

/* Writes the rows of b (current schema) into the file. */
static hs_status dfile_write(tbl_wop *op, const ice_schema *schema, dfile *f, const hs_batch *b,
                             hs_error *err)
{
    HS_TRY(pq_writer_write(f->w, b, err));
    metric_acc m = {0};
    hs_status st = HS_OK;
    for (int i = 0; i < b->n_cols && st == HS_OK; i++) {
        if (b->schema.children[i].field_id == ICE_FIELD_ID_ROW_ID)
            continue;   /* row lineage column of a row delta: no metrics */
        if (metrics_of(op, &b->schema.children[i], b->cols[i], NULL, b->n_rows, &m) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK && fm_merge(f, schema, &m) != HS_OK)
        st = hs_err_nomem(err, 64);
    metric_free(&m);
    if (st == HS_OK)
        f->rows += b->n_rows;
    return st;
}

/* Bytes the file has on disk so far (flushed row groups). */
static uint64_t dfile_bytes(const dfile *f) { return f->w ? pq_writer_bytes_written(f->w) : 0; }

/* Finishes and publishes the file, builds the sidecars of declared indexes
 * (from `rows`: every row of the file in file order; NULL: from the file,
 * read back), and queues its manifest entry.
 * The file is closed (or abandoned) either way. */
static hs_status dfile_close(tbl_wop *op, dfile *f, const hs_batch *rows, hs_buf *entries,
                             hs_error *err)
{
    hs_status st = pq_writer_finish(f->w, err);
    uint64_t size = pq_writer_bytes_written(f->w);
    ice_data_file df = {0};
    if (st == HS_OK) {
        df.content = ICE_CONTENT_DATA;
        df.file_path = op_str(op, (const char *)f->path.data);
        df.file_format = "PARQUET";
        df.n_partition = f->n_pvals;
        df.partition = f->pvals;
        df.record_count = f->rows;
        df.file_size_in_bytes = (int64_t)size;
        if (!df.file_path || column_sizes(op, pq_writer_file_meta(f->w), &df) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    size_t nfm = HS_VEC_LEN(&f->fields, fm_field);
    ice_id_long *vc = NULL, *nc = NULL, *nn = NULL;
    ice_id_bytes *lb = NULL, *ub = NULL;
    if (st == HS_OK && nfm) {
        vc = hs_arena_alloc(&op->arena, nfm * sizeof *vc);
        nc = hs_arena_alloc(&op->arena, nfm * sizeof *nc);
        nn = hs_arena_alloc(&op->arena, nfm * sizeof *nn);
        lb = hs_arena_alloc(&op->arena, nfm * sizeof *lb);
        ub = hs_arena_alloc(&op->arena, nfm * sizeof *ub);
        if (!vc || !nc || !nn || !lb || !ub)
            st = hs_err_nomem(err, nfm * 64);
    }
    for (size_t i = 0; st == HS_OK && i < nfm; i++) {
        fm_field *x = &HS_VEC_AT(&f->fields, fm_field, i);
        vc[df.n_value_counts++] = (ice_id_long){x->id, x->count};
        nc[df.n_null_value_counts++] = (ice_id_long){x->id, x->nulls};
        if (x->has_nans)
            nn[df.n_nan_value_counts++] = (ice_id_long){x->id, x->nans};
        if (x->lo_set && !x->lo_lost) {
            uint8_t *p = hs_arena_alloc(&op->arena, x->lo.len + 1);
            if (!p) {
                st = hs_err_nomem(err, x->lo.len);
                break;
            }
            if (x->lo.len)
                memcpy(p, x->lo.data, x->lo.len);
            lb[df.n_lower_bounds++] = (ice_id_bytes){x->id, (uint32_t)x->lo.len, p};
        }
        if (x->hi_set && !x->hi_lost) {
            uint8_t *p = hs_arena_alloc(&op->arena, x->hi.len + 1);
            if (!p) {
                st = hs_err_nomem(err, x->hi.len);
                break;
            }
            if (x->hi.len)
                memcpy(p, x->hi.data, x->hi.len);
            ub[df.n_upper_bounds++] = (ice_id_bytes){x->id, (uint32_t)x->hi.len, p};
        }
    }
    if (st == HS_OK) {
        df.value_counts = df.n_value_counts ? vc : NULL;
        df.null_value_counts = df.n_null_value_counts ? nc : NULL;
        df.nan_value_counts = df.n_nan_value_counts ? nn : NULL;
        df.lower_bounds = df.n_lower_bounds ? lb : NULL;
        df.upper_bounds = df.n_upper_bounds ? ub : NULL;
        const ice_sort_order *so = ice_metadata_default_sort_order(&op->t->meta);
        df.has_sort_order_id = true;
        df.sort_order_id = so ? so->order_id : 0;
    }
    pq_writer_free(f->w);
    f->w = NULL;
    if (st == HS_OK) {
        st = hs_wfile_close(f->wf, err);
        f->wf = NULL;
    }
    /* sidecars of the declared indexes, from the rows still in memory, or
     * (rows NULL: a file written in slices) from the file just published,
     * one indexed column at a time; a table without declared indexes only
     * has the file recorded */
    if (st == HS_OK)
        st = tbl_ixw_file_written(&op->ixw, df.file_path, (int64_t)size, f->rows, rows, err);
    int64_t nrows = f->rows;
    dfile_abort(f);   /* frees what is left (nothing to abort after close) */
    if (st != HS_OK)
        return st;
    ice_manifest_entry e = {0};
    e.status = ICE_STATUS_ADDED;
    e.has_snapshot_id = true;
    e.snapshot_id = op->snapshot_id;
    e.file = df;
    if (hs_buf_append(entries, &e, sizeof e) != HS_OK)
        return hs_err_nomem(err, sizeof e);
    op->added_files++;
    op->added_records += nrows;
    op->added_size += (int64_t)size;
    return HS_OK;
}

/* One file holding all rows of b. */
static hs_status write_one_file(tbl_wop *op, const ice_schema *schema, const hs_batch *b,
                                const char *part_path, ice_value *pvals, int n_pvals,
                                hs_buf *entries, hs_error *err)
{
    dfile f;
    HS_TRY(dfile_open(op, schema, part_path, pvals, n_pvals, 0,
                      (int64_t)HS_VEC_LEN(entries, ice_manifest_entry), &f, err));
    hs_status st = dfile_write(op, schema, &f, b, err);
    if (st == HS_OK)
        return dfile_close(op, &f, b, entries, err);
    dfile_abort(&f);
    return st;
}

/* Writes the manifest of entries (content: data or deletes) and queues it. */
static hs_status write_manifest(tbl_wop *op, int content, const ice_schema *schema,
                                const ice_partition_spec *spec, const ice_manifest_entry *e,
                                int64_t n, hs_error *err)
{
    if (n == 0)
        return HS_OK;
    char name[80];
    char uuid[37];
    ice_uuid_v4(uuid);
    snprintf(name, sizeof name, "%s-m%d.avro", uuid, (int)HS_VEC_LEN(&op->add, ice_manifest_file));
    hs_buf path = {0};
    HS_TRY(make_path(op->t, "metadata", NULL, name, &path, err));
    ice_manifest_writer *w = NULL;
    hs_wfile *wf = NULL;
    ice_manifest_file mf = {0};
    hs_status st = ice_manifest_writer_open((const char *)path.data, op->t->meta.format_version,
                                            content, schema, spec, op->snapshot_id,
                                            HS_AVRO_CODEC_DEFLATE, &w, err);
    for (int64_t i = 0; i < n && st == HS_OK; i++)
        st = ice_manifest_writer_add(w, &e[i], err);
    if (st == HS_OK)
        st = mkdir_of((const char *)path.data, err);
    if (st == HS_OK)
        st = cat_io_create_ex(tbl_local((const char *)path.data), wflags(op->t), &wf, err);
    if (st == HS_OK)
        st = op_record(op, (const char *)path.data, err);
    if (st == HS_OK) {
        st = ice_manifest_writer_finish(w, wf, &op->arena, &mf, err);
        w = NULL;
    }
    if (st == HS_OK) {
        st = hs_wfile_close(wf, err);
        wf = NULL;
    }
    ice_manifest_writer_free(w);
    if (wf)
        hs_wfile_abort(wf);
    hs_buf_free(&path);
    if (st == HS_OK && hs_buf_append(&op->add, &mf, sizeof mf) != HS_OK)
        st = hs_err_nomem(err, sizeof mf);
    return st;
}

static void groups_free(group *g, int n_groups, int n_fields)
{
    for (int i = 0; g && i < n_groups; i++) {
        for (int k = 0; k < n_fields && g[i].values; k++)
            ice_value_clear(&g[i].values[k]);
        hs_free(g[i].values);
        hs_buf_free(&g[i].rows);
    }
    hs_free(g);
}

/* What partition_rows hands over per partition tuple: the rows of `all` in
 * idx[0..cnt) (sorted by the default sort order), the tuple's values (valid
 * during the call; op_pvals copies them for longer), its path text ("" for
 * an unpartitioned spec) and its tuple_key bytes. */
typedef struct row_group {
    const hs_batch *all;
    const int64_t *idx;
    int64_t cnt;
    const ice_value *values;
    int n_values;
    const char *part_path;
    const uint8_t *key;
    size_t key_len;
} row_group;

typedef hs_status (*group_sink)(void *ctx, const row_group *g, hs_error *err);

/* Splits the rows of `all` (in the current schema) by the default spec's
 * partition tuple, sorts each group by the default sort order, and calls
 * sink once per group, in order of first appearance - except that the
 * group whose tuple_key equals prefer (when given) goes first.  Records the
 * tuple keys in op->parts; *n_groups (may be NULL) gets the group count. */
static hs_status partition_rows(tbl_wop *op, const hs_batch *all, const hs_buf *prefer,
                                group_sink sink, void *sink_ctx, int *n_groups_out,
                                hs_error *err)
{
    if (n_groups_out)
        *n_groups_out = 0;
    const ice_table_metadata *m = &op->t->meta;
    const ice_schema *schema = ice_metadata_current_schema(m);
    const ice_partition_spec *spec = ice_metadata_default_spec(m);
    const ice_sort_order *order = ice_metadata_default_sort_order(m);
    if (!schema || !spec)
        return hs_err_set(err, HS_CORRUPT, "table metadata lacks a current schema or spec");
    int64_t n = all->n_rows;
    if (n == 0)
        return HS_OK;
    int nf = spec->n_fields;
    hs_field ptype = {0};
    hs_status st = ice_spec_partition_type(spec, schema, &ptype, err);
    hs_map keys = {0};
    group *groups = NULL;
    int n_groups = 0, cap_groups = 0;
    int32_t *row_group_of = hs_malloc((size_t)n * sizeof(int32_t) + 4);
    hs_arena scratch = {0};
    hs_buf key = {0};
    if (st == HS_OK && !row_group_of)
        st = hs_err_nomem(err, (size_t)n * 4);
    pr_col_ref *refs = st == HS_OK ? hs_calloc((size_t)nf + 1, sizeof *refs) : NULL;
    if (st == HS_OK && !refs)
        st = hs_err_nomem(err, sizeof *refs);
    bool *have_ref = st == HS_OK ? hs_calloc((size_t)nf + 1, sizeof(bool)) : NULL;
    if (st == HS_OK && !have_ref)
        st = hs_err_nomem(err, (size_t)nf);
    for (int k = 0; k < nf && st == HS_OK; k++)
        have_ref[k] = pr_batch_find_id(all, spec->fields[k].source_id, &refs[k]);
    ice_value *vals = st == HS_OK ? hs_calloc((size_t)nf + 1, sizeof(ice_value)) : NULL;
    if (st == HS_OK && !vals)
        st = hs_err_nomem(err, sizeof(ice_value));
    /* 1. partition tuple of every row -> group */
    for (int64_t i = 0; i < n && st == HS_OK; i++) {
        for (int k = 0; k < nf && st == HS_OK; k++) {
            const ice_partition_field *pf = &spec->fields[k];
            const hs_field *src = ice_schema_find_id(schema, pf->source_id);
            ice_value_clear(&vals[k]);
            if (!have_ref[k] || !src) {
                ice_value_init_null(&vals[k], &ptype.children[k]);
                vals[k].is_null = true;
            } else {
                transformed(src, &refs[k], i, &pf->transform, &ptype.children[k], &scratch, NULL,
                            &vals[k], err, &st);
            }
        }
        if (st == HS_OK && tuple_key(vals, nf, &key) != HS_OK)
            st = hs_err_nomem(err, key.len);
        if (st != HS_OK)
            break;
        uint64_t gi;
        bool found = false;
        if (hs_map_get_or_put(&keys, key.data ? key.data : (const uint8_t *)"", key.len,
                              (uint64_t)n_groups, &gi, &found) != HS_OK) {
            st = hs_err_nomem(err, key.len);
            break;
        }
        if (!found) {
            if (n_groups == cap_groups) {
                int cap = cap_groups ? cap_groups * 2 : 8;
                group *ng = hs_realloc(groups, (size_t)cap * sizeof *ng);
                if (!ng) {
                    st = hs_err_nomem(err, (size_t)cap * sizeof *ng);
                    break;
                }
                groups = ng;
                cap_groups = cap;
            }
            group *g = &groups[n_groups++];
            memset(g, 0, sizeof *g);
            g->values = hs_calloc((size_t)nf + 1, sizeof(ice_value));
            if (!g->values) {
                st = hs_err_nomem(err, sizeof(ice_value));
                break;
            }
            for (int k = 0; k < nf && st == HS_OK; k++)
                if (ice_value_copy(&vals[k], &g->values[k]) != HS_OK)
                    st = hs_err_nomem(err, 16);
            gi = (uint64_t)(n_groups - 1);
            if (st == HS_OK && hs_map_put(&op->parts, key.data, key.len, 1) != HS_OK)
                st = hs_err_nomem(err, key.len);
        }
        row_group_of[i] = (int32_t)gi;
        if (st == HS_OK && HS_VEC_PUSH(&groups[gi].rows, int64_t, i) != HS_OK)
            st = hs_err_nomem(err, 8);
    }
    /* 2. sort keys */
    sort_ctx sctx = {0};
    if (st == HS_OK && order && order->n_fields > 0) {
        sctx.keys = hs_calloc((size_t)order->n_fields, sizeof(sort_key));
        if (!sctx.keys)
            st = hs_err_nomem(err, sizeof(sort_key));
        for (int k = 0; k < order->n_fields && st == HS_OK; k++) {
            const ice_sort_field *sf = &order->fields[k];
            sort_key *sk = &sctx.keys[sctx.n_keys++];
            sk->dir = sf->direction;
            sk->nulls = sf->null_order;
            sk->v = hs_calloc((size_t)n, sizeof(pr_val));
            sk->is_null = hs_malloc((size_t)n + 1);
            if (!sk->v || !sk->is_null) {
                st = hs_err_nomem(err, (size_t)n * sizeof(pr_val));
                break;
            }
            const hs_field *src = ice_schema_find_id(schema, sf->source_id);
            pr_col_ref ref;
            bool have = src && pr_batch_find_id(all, sf->source_id, &ref);
            hs_field rf = {0};
            if (have && sf->transform.kind != ICE_TR_IDENTITY &&
                ice_transform_result_type(&sf->transform, src, &rf, err) != HS_OK)
                have = false;
            for (int64_t i = 0; i < n && st == HS_OK; i++) {
                if (!have) {
                    sk->is_null[i] = 1;
                } else if (sf->transform.kind == ICE_TR_IDENTITY) {
                    sk->is_null[i] = !pr_ref_valid(&ref, i) ||
                                     !pr_val_get(src, ref.col, i, &sk->v[i]);
                } else {
                    sk->is_null[i] = !transformed(src, &ref, i, &sf->transform, &rf, &scratch,
                                                  &sk->v[i], NULL, err, &st);
                }
            }
            hs_field_clear(&rf);
        }
    }
    /* 3. the groups, the preferred one first */
    uint64_t first = 0;
    bool have_first = prefer && prefer->len &&
                      hs_map_get(&keys, prefer->data, prefer->len, &first);
    hs_buf part = {0};
    for (int k = 0; k < n_groups && st == HS_OK; k++) {
        int gi = have_first ? (k == 0 ? (int)first : (k <= (int)first ? k - 1 : k)) : k;
        group *g = &groups[gi];
        int64_t *idx = (int64_t *)g->rows.data;
        int64_t cnt = (int64_t)HS_VEC_LEN(&g->rows, int64_t);
        if (sctx.n_keys)
            qsort_r(idx, (size_t)cnt, sizeof(int64_t), cmp_rows, &sctx);
        hs_buf_reset(&part);
        if (nf > 0 && !ice_spec_is_unpartitioned(spec))
            st = ice_spec_partition_path(spec, g->values, &part, err);
        if (st == HS_OK && tuple_key(g->values, nf, &key) != HS_OK)
            st = hs_err_nomem(err, key.len);
        if (st == HS_OK) {
            row_group rg = {all, idx, cnt, g->values, nf, part.len ? hs_buf_cstr(&part) : NULL,
                            key.data, key.len};
            st = sink(sink_ctx, &rg, err);
        }
    }
    if (n_groups_out)
        *n_groups_out = n_groups;
    hs_buf_free(&part);
    for (int k = 0; k < sctx.n_keys; k++) {
        hs_free(sctx.keys[k].v);
        hs_free(sctx.keys[k].is_null);
    }
    hs_free(sctx.keys);
    for (int k = 0; vals && k < nf; k++)
        ice_value_clear(&vals[k]);
    hs_free(vals);
    hs_free(refs);
    hs_free(have_ref);
    hs_free(row_group_of);
    groups_free(groups, n_groups, nf);
    hs_map_free(&keys);
    hs_buf_free(&key);
    hs_arena_destroy(&scratch);
    hs_field_clear(&ptype);
    return st;
}

/* The rows idx[0..n) of all, as a new batch (caller frees). */
static hs_status take_rows(const hs_batch *all, const int64_t *idx, int64_t n, hs_batch **out,
                           hs_error *err)
{
    *out = NULL;
    hs_column **cols = hs_calloc((size_t)all->n_cols + 1, sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 64);
    hs_status st = HS_OK;
    for (int c = 0; c < all->n_cols && st == HS_OK; c++)
        st = hs_col_take(all->cols[c], idx, n, &cols[c], err);
    if (st == HS_OK)
        st = tbl_batch_from_cols(&all->schema, cols, all->n_cols, n, out, err);
    else
        for (int c = 0; c < all->n_cols; c++)
            hs_col_free(cols[c]);
    hs_free(cols);
    return st;
}

typedef struct one_file_per_group {
    tbl_wop *op;
    const ice_schema *schema;
    hs_buf entries;   /* ice_manifest_entry */
} one_file_per_group;

static hs_status one_file_sink(void *ctx, const row_group *g, hs_error *err)
{
    one_file_per_group *w = ctx;
    ice_value *pv = op_pvals(w->op, g->values, g->n_values);
    if (!pv)
        return hs_err_nomem(err, 64);
    /* every row in order (no partitions, no sort order: compaction's
     * in-memory bins): written from `all` itself, not from a copy */
    bool whole = g->cnt == g->all->n_rows;
    for (int64_t i = 0; whole && i < g->cnt; i++)
        whole = g->idx[i] == i;
    hs_batch *b = NULL;
    if (!whole)
        HS_TRY(take_rows(g->all, g->idx, g->cnt, &b, err));
    hs_status st = write_one_file(w->op, w->schema, whole ? g->all : b, g->part_path, pv,
                                  g->n_values, &w->entries, err);
    hs_batch_free(b);
    if (st == HS_OK && w->op->row_map) {
        const ice_manifest_entry *e = &HS_VEC_AT(&w->entries, ice_manifest_entry,
                                                 HS_VEC_LEN(&w->entries, ice_manifest_entry) - 1);
        st = w->op->row_map(w->op->row_map_ctx, e->file.file_path, pv, g->n_values, 0, 0, g->idx,
                            g->cnt, err);
    }
    return st;
}

/* Writes the rows of `all` (in the current schema) as data files of the
 * default spec, one per partition tuple, sorted by the default sort order,
 * plus one data manifest.  Used by overwrites, whose rows are in memory
 * anyway; appends stream (appender below). */
static hs_status write_rows_as(tbl_wop *op, const hs_batch *all, const ice_schema *file_schema,
                               hs_error *err)
{
    const ice_table_metadata *m = &op->t->meta;
    const ice_schema *schema = ice_metadata_current_schema(m);
    const ice_partition_spec *spec = ice_metadata_default_spec(m);
    if (!schema || !spec)
        return hs_err_set(err, HS_CORRUPT, "table metadata lacks a current schema or spec");
    one_file_per_group w = {op, file_schema ? file_schema : schema, {0}};
    int n_groups = 0;
    hs_status st = partition_rows(op, all, NULL, one_file_sink, &w, &n_groups, err);
    op->changed_partitions += n_groups;
    if (st == HS_OK)
        st = write_manifest(op, ICE_MANIFEST_DATA, schema, spec,
                            (const ice_manifest_entry *)w.entries.data,
                            (int64_t)HS_VEC_LEN(&w.entries, ice_manifest_entry), err);
    hs_buf_free(&w.entries);
    return st;
}

static hs_status write_rows(tbl_wop *op, const hs_batch *all, hs_error *err)
{
    return write_rows_as(op, all, NULL, err);
}

/* Reads a stream (moved) into one batch conformed to the current schema. */
static hs_status collect_stream(hs_table *t, struct ArrowArrayStream *in, hs_batch **out,
                                hs_error *err)
{
    *out = NULL;
    const ice_schema *schema = ice_metadata_current_schema(&t->meta);
    if (!schema) {
        if (in && in->release)
            in->release(in);
        return hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
    }
    hs_batch_source src = {0};
    HS_TRY(hs_arrow_import_stream(in, &src, err));
    hs_batch *all = NULL;
    hs_status st = hs_batch_create(&schema->root, 0, &all, err);
    while (st == HS_OK) {
        hs_batch *b = NULL, *cb = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        st = tbl_conform_batch(b, &schema->root, true, &cb, err);
        if (st == HS_OK)
            st = tbl_vector_check_batch(&t->meta, cb, all->n_rows, err);
        if (st != HS_OK) {
            hs_batch_free(cb);
            hs_err_prefix(err, "append");
            break;
        }
        for (int i = 0; i < all->n_cols && st == HS_OK; i++)
            st = hs_col_append_column(all->cols[i], cb->cols[i], err);
        all->n_rows += cb->n_rows;
        hs_batch_free(cb);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    if (st != HS_OK) {
        hs_batch_free(all);
        return st;
    }
    *out = all;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* commit                                                              */

static void summary_add(ice_kv *kv, const char *key, int64_t v, hs_status *st)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    if (*st == HS_OK)
        *st = ice_kv_set(kv, key, buf);
}

static int64_t parent_total(const ice_snapshot *p, const char *key)
{
    const char *v = p ? ice_kv_get(&p->summary, key) : NULL;
    return v ? strtoll(v, NULL, 10) : 0;
}

static hs_status build_summary(const tbl_wop *op, const ice_snapshot *parent, ice_kv *kv)
{
    hs_status st = ice_kv_set(kv, "operation", op->operation);
    if (op->added_files)
        summary_add(kv, "added-data-files", op->added_files, &st);
    if (op->added_records)
        summary_add(kv, "added-records", op->added_records, &st);
    if (op->added_files)
        summary_add(kv, "added-files-size", op->added_size, &st);
    if (op->removed_files) {
        summary_add(kv, "deleted-data-files", op->removed_files, &st);
        summary_add(kv, "deleted-records", op->removed_records, &st);
        summary_add(kv, "removed-files-size", op->removed_size, &st);
    }
    if (op->added_del_files) {
        summary_add(kv, "added-delete-files", op->added_del_files, &st);
        summary_add(kv, "added-position-delete-files", op->added_del_files, &st);
        summary_add(kv, "added-position-deletes", op->added_pos_deletes, &st);
    }
    if (op->removed_del_files) {   /* Java's SnapshotSummary: each key when non-zero */
        int64_t pos_files = op->removed_del_files - op->removed_eq_del_files;
        summary_add(kv, "removed-delete-files", op->removed_del_files, &st);
        if (pos_files)
            summary_add(kv, "removed-position-delete-files", pos_files, &st);
        if (op->removed_eq_del_files)
            summary_add(kv, "removed-equality-delete-files", op->removed_eq_del_files, &st);
        if (op->removed_pos_deletes)
            summary_add(kv, "removed-position-deletes", op->removed_pos_deletes, &st);
        if (op->removed_eq_deletes)
            summary_add(kv, "removed-equality-deletes", op->removed_eq_deletes, &st);
    }
    summary_add(kv, "changed-partition-count", op->changed_partitions, &st);
    summary_add(kv, "total-records", parent_total(parent, "total-records") + op->added_records -
                op->removed_records, &st);
    summary_add(kv, "total-files-size", parent_total(parent, "total-files-size") + op->added_size -
                op->removed_size, &st);
    summary_add(kv, "total-data-files", parent_total(parent, "total-data-files") +
                op->added_files - op->removed_files, &st);
    summary_add(kv, "total-delete-files", parent_total(parent, "total-delete-files") +
                op->added_del_files - op->removed_del_files, &st);
    summary_add(kv, "total-position-deletes", parent_total(parent, "total-position-deletes") +
                op->added_pos_deletes - op->removed_pos_deletes, &st);
    summary_add(kv, "total-equality-deletes", parent_total(parent, "total-equality-deletes") -
                op->removed_eq_deletes, &st);
    for (int i = 0; st == HS_OK && i < op->extra_summary.n; i++)
        st = ice_kv_set(kv, op->extra_summary.keys[i], op->extra_summary.values[i]);
    return st;
}

/* Snapshots committed after `planned` on main are all appends? */
static hs_status check_since(const tbl_wop *op, const ice_table_metadata *base, hs_error *err)
{
    const ice_snapshot *s = ice_metadata_current_snapshot(base);
    for (int guard = 0; s && guard <= base->n_snapshots; guard++) {
        if (s->snapshot_id == op->planned_snapshot_id)
            return HS_OK;
        const char *o = ice_snapshot_operation(s);
        if (op->validate && (!o || strcmp(o, "append") != 0)) {
            HS_TRY(op->validate(op->validate_ctx, base, s, err));
            o = "append";   /* judged harmless */
        }
        if (!o || strcmp(o, "append") != 0)
            return hs_err_set(err, HS_CONFLICT, "%s: a concurrent %s (snapshot %lld) changed the "
                              "rows this %s planned on; retry the operation", op->t->ident,
                              o ? o : "commit", (long long)s->snapshot_id, op->operation);
        s = s->has_parent ? ice_metadata_snapshot(base, s->parent_id) : NULL;
    }
    if (op->planned_snapshot_id < 0)
        return HS_OK;
    return hs_err_set(err, HS_CONFLICT, "%s: snapshot %lld, on which this %s was planned, is no "
                      "longer an ancestor of the current snapshot", op->t->ident,
                      (long long)op->planned_snapshot_id, op->operation);
}

static hs_status commit_cb(void *vctx, const ice_table_metadata *base, const char *base_location,
                           ice_table_metadata *nm, hs_error *err)
{
    tbl_wop *op = vctx;
    if (op->prev_list) {
        remove_written(op->prev_list);
        op->prev_list = NULL;
    }
    if (op->check_conflicts)
        HS_TRY(check_since(op, base, err));
    if (op->check)
        HS_TRY(op->check(op->check_ctx, base, err));
    while (ice_metadata_snapshot(base, op->snapshot_id))
        op->snapshot_id = ice_new_snapshot_id();
    const ice_snapshot *parent = ice_metadata_current_snapshot(base);
    ice_manifest_list *old = NULL;
    hs_status st = HS_OK;
    if (parent && parent->manifest_list) {
        hs_file *f = NULL;
        st = hs_io_open(parent->manifest_list, &f, err);
        if (st == HS_OK)
            st = ice_manifest_list_read(f, &old, err);
        hs_file_close(f);
    } else if (parent) {
        st = hs_err_set(err, HS_UNSUPPORTED, "snapshot %lld has no manifest list (v1 manifests "
                        "field): writing to it is not supported", (long long)parent->snapshot_id);
    }
    int n_add = (int)HS_VEC_LEN(&op->add, ice_manifest_file);
    int n_old = old ? old->n_files : 0;
    ice_manifest_file *files = hs_calloc((size_t)(n_add + n_old) + 1, sizeof *files);
    if (st == HS_OK && !files)
        st = hs_err_nomem(err, sizeof *files);
    int n = 0;
    for (int i = 0; st == HS_OK && i < n_add; i++)
        files[n++] = HS_VEC_AT(&op->add, ice_manifest_file, i);
    size_t n_rep = HS_VEC_LEN(&op->replace, const char *);
    bool *seen = n_rep ? hs_calloc(n_rep, sizeof(bool)) : NULL;
    if (st == HS_OK && n_rep && !seen)
        st = hs_err_nomem(err, n_rep);
    for (int i = 0; st == HS_OK && i < n_old; i++) {
        bool drop = false;
        for (size_t k = 0; k < n_rep; k++)
            if (strcmp(old->files[i].manifest_path, HS_VEC_AT(&op->replace, const char *, k)) == 0)
                drop = seen[k] = true;
        /* a manifest left with only DELETED entries (an earlier snapshot
         * removed all its files; that snapshot keeps it) is not carried
         * into this one, as Iceberg's snapshot producers do: otherwise
         * every compaction leaves such manifests behind for good (v2+:
         * the counts are required there) */
        const ice_manifest_file *mo = &old->files[i];
        if (!drop && base->format_version >= 2 && mo->added_files_count == 0 &&
            mo->existing_files_count == 0 && mo->deleted_files_count > 0)
            continue;
        if (!drop)
            files[n++] = old->files[i];
    }
    for (size_t k = 0; st == HS_OK && k < n_rep; k++)
        if (!seen[k])
            st = hs_err_set(err, HS_CONFLICT, "%s: manifest %s, which this %s rewrites, was "
                            "changed by a concurrent commit", op->t->ident,
                            HS_VEC_AT(&op->replace, const char *, k), op->operation);
    hs_free(seen);
    /* the manifest list */
    char name[128], uuid[37];
    ice_uuid_v4(uuid);
    snprintf(name, sizeof name, "snap-%lld-1-%s.avro", (long long)op->snapshot_id, uuid);
    hs_buf path = {0};
    if (st == HS_OK)
        st = make_path(op->t, "metadata", NULL, name, &path, err);
    int64_t seq = base->last_sequence_number + 1;
    int64_t assigned = 0;
    hs_wfile *wf = NULL;
    if (st == HS_OK)
        st = cat_io_create_ex(tbl_local((const char *)path.data), wflags(op->t), &wf, err);
    if (st == HS_OK) {
        op->prev_list = op_str(op, (const char *)path.data);
        ice_manifest_list_info info = {0};
        info.format_version = base->format_version;
        info.snapshot_id = op->snapshot_id;
        info.has_parent_id = parent != NULL;
        info.parent_id = parent ? parent->snapshot_id : 0;
        info.sequence_number = seq;
        info.first_row_id = base->next_row_id;
        info.codec = HS_AVRO_CODEC_DEFLATE;
        /* files[] holds copies: the sequence numbers the writer assigns do
         * not reach op->add, so a retry inherits afresh */
        st = ice_manifest_list_write(wf, &info, files, n, &assigned, err);
    }
    if (st == HS_OK) {
        st = hs_wfile_close(wf, err);
        wf = NULL;
    }
    if (wf)
        hs_wfile_abort(wf);
    ice_snapshot snap = {0};
    if (st == HS_OK) {
        snap.snapshot_id = op->snapshot_id;
        snap.has_parent = parent != NULL;
        snap.parent_id = parent ? parent->snapshot_id : 0;
        snap.sequence_number = seq;
        snap.timestamp_ms = ice_now_ms();
        if (snap.timestamp_ms <= base->last_updated_ms)
            snap.timestamp_ms = base->last_updated_ms + 1;
        snap.manifest_list = (char *)hs_buf_cstr(&path);
        snap.has_schema_id = true;
        snap.schema_id = base->current_schema_id;
        if (base->format_version >= 3) {
            snap.has_first_row_id = true;
            snap.first_row_id = base->next_row_id;
            snap.has_added_rows = true;
            snap.added_rows = assigned;
        }
        if (build_summary(op, parent, &snap.summary) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK)
        st = ice_metadata_copy(base, nm, err);
    if (st == HS_OK)
        st = ice_metadata_add_snapshot(nm, &snap, "main", err);
    for (int i = 0; st == HS_OK && i < op->extra_props.n; i++)
        if (ice_kv_set(&nm->properties, op->extra_props.keys[i], op->extra_props.values[i]) != HS_OK)
            st = hs_err_nomem(err, 64);
    /* the registry entries of the files written / removed: same commit */
    if (st == HS_OK)
        st = tbl_ixw_apply(&op->ixw, base, nm, err);
    snap.manifest_list = NULL;
    ice_kv_clear(&snap.summary);
    hs_buf_free(&path);
    hs_free(files);
    ice_manifest_list_free(old);
    return st;
}

static hs_status op_commit(tbl_wop *op, hs_error *err)
{
    /* our manifests' sequence numbers must stay unassigned across attempts:
     * commit_cb passes copies (files[] holds struct copies) */
    hs_status st = tbl_commit(op->t, commit_cb, op, err);
    if (st != HS_OK) {
        op_cleanup_files(op);
        if (op->prev_list) {
            remove_written(op->prev_list);
        }
    }
    return st;
}

/* ------------------------------------------------------------------ */
/* append: streaming                                                   */

/*
 * hs_table_append never holds the whole input.  Batches are conformed to the
 * current schema and buffered in a chunk; when the chunk's memory reaches
 * its share of the buffer budget, it is split by partition tuple and sorted
 * (partition_rows), and each group is written out; then the chunk is freed
 * and filled again.  One manifest lists every file and one commit at the
 * end publishes them all (or, on any failure, the files are removed and
 * nothing is committed).
 *
 *   table                     a data file is                         rolls when
 *   ------------------------  -------------------------------------  -------------------------
 *   unsorted, no index        kept open across chunks while the      it reaches the target
 *                             next group has its partition tuple     size, or the tuple changes
 *                             (the open one's group goes first)
 *   sorted (default order)    one sorted run: a chunk's group        target size within a group
 *   declared indexes          one chunk's group, whole (sidecars     at the group's end
 *                             are built from its rows in memory)
 *   declared indexes, a       as unsorted/sorted above; each file's  as above
 *   rewrite's sink            sidecars built when it closes, from
 *   (tbl_rewrite_sink_open)   the file read back one indexed column
 *                             at a time (tbl_ixw_file_written)
 *
 * Budget B = table property hyperstream.write.buffer-bytes (default 64 MiB):
 * the chunk (column buffers plus per-row partition and sort-key scratch)
 * stays under B/2 (B/4 when the group is also copied whole for index
 * builds), rows go to the Parquet writer in slices of about B/8, and the
 * writer's row groups are capped at B/4 (and at a quarter of the target
 * file size, so that files roll close to it: rolling compares the bytes of
 * the row groups flushed so far).  So memory is bounded by about B
 * plus one input batch, whatever the input size.  Target file size:
 * write.target-file-size-bytes (Iceberg's property; default 512 MiB),
 * checked after each slice against the bytes flushed so far.
 */

#define APPEND_BUFFER_DEFAULT ((int64_t)64 << 20)
#define TARGET_FILE_DEFAULT ((int64_t)512 << 20)

typedef struct appender {
    tbl_wop *op;
    const ice_schema *schema;   /* the table's (manifests) */
    const ice_schema *fschema;  /* the rows' and data files' (a rewrite's may add lineage) */
    const ice_partition_spec *spec;
    int n_sort_keys;
    bool sorted;
    bool indexed;               /* a group is written whole, its sidecars from its rows */
    int64_t budget, target;
    hs_batch *chunk;            /* buffered rows, in fschema */
    int64_t rows_total;
    dfile cur;                  /* the open data file (cur_open) */
    bool cur_open;
    hs_buf cur_key;             /* its tuple_key */
    ice_value *cur_pvals;       /* its partition tuple (op_pvals) */
    hs_buf entries;             /* ice_manifest_entry */
    int64_t chunk_base;         /* input row number of the chunk's first row */
} appender;

static int64_t col_bytes(const hs_column *c)
{
    int64_t n = (int64_t)(c->validity.cap + c->offsets.cap + c->values.cap);
    if (!c->validity.cap && !c->offsets.cap && !c->values.cap)   /* borrowed */
        n = (int64_t)(c->validity.len + c->offsets.len + c->values.len);
    for (int i = 0; i < c->n_children; i++)
        n += col_bytes(c->children[i]);
    return n;
}

static int64_t batch_bytes(const hs_batch *b)
{
    int64_t n = 0;
    for (int i = 0; i < b->n_cols; i++)
        n += col_bytes(b->cols[i]);
    return n;
}

/* The chunk's memory with partition_rows' scratch: per row a group index
 * and a row index (grown by doubling), and per sort key a value and a flag. */
static int64_t chunk_cost(const appender *ap)
{
    int64_t per_row = 4 + 16 + (int64_t)ap->n_sort_keys * (int64_t)(sizeof(pr_val) + 1);
    return batch_bytes(ap->chunk) + ap->chunk->n_rows * per_row;
}

static hs_status ap_close_cur(appender *ap, hs_error *err)
{
    if (!ap->cur_open)
        return HS_OK;
    ap->cur_open = false;
    hs_buf_reset(&ap->cur_key);
    return dfile_close(ap->op, &ap->cur, NULL, &ap->entries, err);
}

static hs_status ap_open_cur(appender *ap, const row_group *g, hs_error *err)
{
    if (!ap->cur_pvals || ap->cur_key.len != g->key_len ||
        memcmp(ap->cur_key.data, g->key, g->key_len) != 0) {
        if (!(ap->cur_pvals = op_pvals(ap->op, g->values, g->n_values)))
            return hs_err_nomem(err, 64);
        hs_buf_reset(&ap->cur_key);
        if (hs_buf_append(&ap->cur_key, g->key, g->key_len) != HS_OK)
            return hs_err_nomem(err, g->key_len);
    }
    /* row groups of at most B/4, and a quarter of the target: the file's
     * size on disk (what rolling checks) grows a row group at a time */
    int64_t rg = ap->budget / 4;
    if (rg > ap->target / 4)
        rg = ap->target / 4;
    if (rg < (64 << 10))
        rg = 64 << 10;
    HS_TRY(dfile_open(ap->op, ap->fschema, g->part_path, ap->cur_pvals, g->n_values, rg,
                      (int64_t)HS_VEC_LEN(&ap->entries, ice_manifest_entry), &ap->cur, err));
    ap->cur_open = true;
    return HS_OK;
}

static hs_status ap_group(void *ctx, const row_group *g, hs_error *err)
{
    appender *ap = ctx;
    if (ap->indexed) {   /* sidecars need the file's rows together */
        ice_value *pv = op_pvals(ap->op, g->values, g->n_values);
        if (!pv)
            return hs_err_nomem(err, 64);
        hs_batch *b = NULL;
        HS_TRY(take_rows(g->all, g->idx, g->cnt, &b, err));
        hs_status st = write_one_file(ap->op, ap->fschema, b, g->part_path, pv, g->n_values,
                                      &ap->entries, err);
        hs_batch_free(b);
        if (st == HS_OK && ap->op->row_map) {
            const ice_manifest_entry *e =
                &HS_VEC_AT(&ap->entries, ice_manifest_entry,
                           HS_VEC_LEN(&ap->entries, ice_manifest_entry) - 1);
            st = ap->op->row_map(ap->op->row_map_ctx, e->file.file_path, pv, g->n_values, 0,
                                 ap->chunk_base, g->idx, g->cnt, err);
        }
        return st;
    }
    bool same = ap->cur_open && ap->cur_key.len == g->key_len &&
                memcmp(ap->cur_key.data, g->key, g->key_len) == 0;
    if (ap->cur_open && (ap->sorted || !same))
        HS_TRY(ap_close_cur(ap, err));
    /* slices of about B/8 at the chunk's average row width */
    int64_t width = g->all->n_rows ? batch_bytes(g->all) / g->all->n_rows + 1 : 1;
    int64_t slice = ap->budget / 8 / width;
    if (slice < 1024)
        slice = 1024;
    for (int64_t off = 0; off < g->cnt;) {
        if (!ap->cur_open)
            HS_TRY(ap_open_cur(ap, g, err));
        int64_t n = g->cnt - off < slice ? g->cnt - off : slice;
        if (ap->op->row_map)
            HS_TRY(ap->op->row_map(ap->op->row_map_ctx, (const char *)ap->cur.path.data,
                                   ap->cur_pvals, g->n_values, ap->cur.rows, ap->chunk_base,
                                   g->idx + off, n, err));
        hs_batch *b = NULL;
        HS_TRY(take_rows(g->all, g->idx + off, n, &b, err));
        hs_status st = dfile_write(ap->op, ap->fschema, &ap->cur, b, err);
        hs_batch_free(b);
        HS_TRY(st);
        off += n;
        if ((int64_t)dfile_bytes(&ap->cur) >= ap->target)
            HS_TRY(ap_close_cur(ap, err));
    }
    if (ap->sorted)   /* the next group, here or in the next chunk, is another run */
        HS_TRY(ap_close_cur(ap, err));
    return HS_OK;
}

/* Writes out the buffered rows and empties the chunk (its memory freed). */
static hs_status ap_flush(appender *ap, hs_error *err)
{
    if (ap->chunk->n_rows == 0)
        return HS_OK;
    ap->chunk_base = ap->rows_total - ap->chunk->n_rows;
    hs_status st = partition_rows(ap->op, ap->chunk, ap->cur_open ? &ap->cur_key : NULL,
                                  ap_group, ap, NULL, err);
    hs_batch_free(ap->chunk);
    ap->chunk = NULL;
    if (st == HS_OK)
        st = hs_batch_create(&ap->fschema->root, 0, &ap->chunk, err);
    return st;
}

/* Sets up an appender of op's table (its chunk empty); ap_free undoes it. */
static hs_status ap_init(appender *ap, tbl_wop *op, hs_error *err)
{
    hs_table *t = op->t;
    memset(ap, 0, sizeof *ap);
    ap->op = op;
    ap->schema = ice_metadata_current_schema(&t->meta);
    ap->spec = ice_metadata_default_spec(&t->meta);
    if (!ap->schema || !ap->spec)
        return hs_err_set(err, HS_CORRUPT, "table metadata lacks a current schema or spec");
    const ice_sort_order *order = ice_metadata_default_sort_order(&t->meta);
    ap->n_sort_keys = order ? order->n_fields : 0;
    ap->sorted = ap->n_sort_keys > 0;
    ap->indexed = ice_kv_get(&t->meta.properties, "hyperstream.index-registry") != NULL;
    ap->budget = prop_i64(t, "hyperstream.write.buffer-bytes", APPEND_BUFFER_DEFAULT);
    if (ap->budget < (1 << 20))
        ap->budget = 1 << 20;
    ap->target = op->target_file_size > 0
                     ? op->target_file_size
                     : prop_i64(t, "write.target-file-size-bytes", TARGET_FILE_DEFAULT);
    ap->fschema = ap->schema;
    return hs_batch_create(&ap->fschema->root, 0, &ap->chunk, err);
}

/* Adds batch b (taken) to the chunk, written out when it reaches its share
 * of the budget. */
static hs_status ap_add(appender *ap, hs_batch *b, hs_error *err)
{
    hs_batch *cb = NULL;
    hs_status st = tbl_conform_batch(b, &ap->fschema->root, true, &cb, err);
    if (st == HS_OK)
        st = tbl_vector_check_batch(&ap->op->t->meta, cb, ap->rows_total, err);
    if (st != HS_OK) {
        hs_batch_free(cb);
        hs_err_prefix(err, "append");
        return st;
    }
    for (int i = 0; i < ap->chunk->n_cols && st == HS_OK; i++)
        st = hs_col_append_column(ap->chunk->cols[i], cb->cols[i], err);
    ap->chunk->n_rows += cb->n_rows;
    ap->rows_total += cb->n_rows;
    hs_batch_free(cb);
    int64_t limit = ap->indexed ? ap->budget / 4 : ap->budget / 2;
    if (st == HS_OK && chunk_cost(ap) >= limit)
        st = ap_flush(ap, err);
    return st;
}

/* Writes out what is buffered, closes the open file and writes the
 * manifest (ok: everything before succeeded), then frees the appender. */
static hs_status ap_finish(appender *ap, bool ok, hs_error *err)
{
    hs_status st = ok ? HS_OK : HS_INTERNAL;
    if (st == HS_OK)
        st = ap_flush(ap, err);
    if (st == HS_OK)
        st = ap_close_cur(ap, err);
    if (ap->cur_open)
        dfile_abort(&ap->cur);
    if (st == HS_OK)
        st = write_manifest(ap->op, ICE_MANIFEST_DATA, ap->schema, ap->spec,
                            (const ice_manifest_entry *)ap->entries.data,
                            (int64_t)HS_VEC_LEN(&ap->entries, ice_manifest_entry), err);
    ap->op->changed_partitions = (int64_t)ap->op->parts.count;
    hs_batch_free(ap->chunk);
    hs_buf_free(&ap->entries);
    hs_buf_free(&ap->cur_key);
    return ok ? st : HS_OK;
}

/* Reads the stream (moved) batch by batch into data files and one manifest:
 * everything of an append but the commit. */
static hs_status append_stream(tbl_wop *op, struct ArrowArrayStream *in, hs_error *err)
{
    appender ap;
    hs_status st = ap_init(&ap, op, err);
    if (st != HS_OK) {
        if (in && in->release)
            in->release(in);
        hs_batch_free(ap.chunk);
        return st;
    }
    hs_batch_source src = {0};
    st = hs_arrow_import_stream(in, &src, err);
    if (st != HS_OK) {
        hs_batch_free(ap.chunk);
        return st;
    }
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = src.next(src.ctx, &b, err);
        if (st != HS_OK || !b)
            break;
        st = ap_add(&ap, b, err);
    }
    src.close(src.ctx);
    hs_field_clear(&src.schema);
    hs_status fst = ap_finish(&ap, st == HS_OK, err);
    return st == HS_OK ? fst : st;
}

hs_status hs_table_append(hs_table *t, struct ArrowArrayStream *in, hs_error *err)
{
    hs_status st = tbl_check_writable(t, err);
    if (st != HS_OK) {
        if (in && in->release)
            in->release(in);
        return st;
    }
    tbl_wop op;
    op_init(&op, t, "append");
    st = append_stream(&op, in, err);
    if (st == HS_OK && op.added_files > 0)
        st = op_commit(&op, err);   /* removes the files itself when it fails */
    else if (st != HS_OK)
        op_cleanup_files(&op);
    op_free(&op);
    return st;
}

/* ------------------------------------------------------------------ */
/* removing files and rows                                             */

typedef tbl_file_action file_action;   /* table_int.h */

/* Rewrites the manifests of plan files being removed (and of replaced DV
 * entries): removed -> DELETED, the rest -> EXISTING. */
/* The touched manifests' entries go into ONE new manifest per (content,
 * spec) rather than one per touched manifest: a compaction touching the
 * manifests of many small appends writes a couple of manifests, not one
 * each (each Avro manifest carries kilobytes of header). */
typedef struct mbucket {
    int content;
    int32_t spec_id;
    hs_buf entries;               /* ice_manifest_entry (point into mans) */
} mbucket;

static hs_status rewrite_manifests(tbl_wop *op, const tbl_plan *p, const bool *remove_file,
                                   const hs_map *remove_del, hs_error *err)
{
    const ice_manifest_list *l = p->list;
    hs_status st = HS_OK;
    hs_buf mans = {0};            /* ice_manifest *: alive until written */
    hs_buf buckets = {0};         /* mbucket */
    for (int mi = 0; l && mi < l->n_files && st == HS_OK; mi++) {
        const ice_manifest_file *mf = &l->files[mi];
        bool touched = false;
        if (mf->content == ICE_MANIFEST_DATA) {
            for (int i = 0; i < p->n_files && !touched; i++)
                touched = remove_file[i] && p->files[i].manifest_index == mi;
        } else {
            uint64_t v;
            char key[16];
            memcpy(key, &mi, sizeof mi);
            touched = remove_del && hs_map_get(remove_del, key, sizeof mi, &v);
        }
        if (!touched)
            continue;
        const ice_partition_spec *spec = ice_metadata_spec(p->meta, mf->partition_spec_id);
        const ice_schema *sc = tbl_schema_for_spec(p->meta, spec);
        hs_file *f = NULL;
        ice_manifest *man = NULL;
        st = hs_io_open(mf->manifest_path, &f, err);
        if (st == HS_OK)
            st = ice_manifest_read(f, mf, spec, sc, &man, err);
        hs_file_close(f);
        if (st == HS_OK && HS_VEC_PUSH(&mans, ice_manifest *, man) != HS_OK) {
            ice_manifest_free(man);
            st = hs_err_nomem(err, 64);
        }
        mbucket *bk = NULL;
        for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&buckets, mbucket); k++) {
            mbucket *x = &HS_VEC_AT(&buckets, mbucket, k);
            if (x->content == mf->content && x->spec_id == mf->partition_spec_id)
                bk = x;
        }
        if (st == HS_OK && !bk) {
            mbucket nb = {mf->content, mf->partition_spec_id, {0}};
            if (hs_buf_append(&buckets, &nb, sizeof nb) != HS_OK)
                st = hs_err_nomem(err, sizeof nb);
            else
                bk = &HS_VEC_AT(&buckets, mbucket, HS_VEC_LEN(&buckets, mbucket) - 1);
        }
        for (int64_t i = 0; st == HS_OK && i < man->n_entries; i++) {
            ice_manifest_entry e = man->entries[i];
            if (e.status == ICE_STATUS_DELETED)
                continue;
            bool removed = false;
            if (mf->content == ICE_MANIFEST_DATA) {
                for (int k = 0; k < p->n_files && !removed; k++)
                    removed = remove_file[k] && p->files[k].manifest_index == mi &&
                              p->files[k].entry_index == i;
            } else {
                int64_t key[2] = {mi, i};
                removed = hs_map_get(remove_del, key, sizeof key, NULL);
            }
            if (removed) {
                e.status = ICE_STATUS_DELETED;
                e.has_snapshot_id = true;
                e.snapshot_id = op->snapshot_id;
                if (mf->content == ICE_MANIFEST_DATA)
                    st = tbl_ixw_file_removed(&op->ixw, e.file.file_path, err);
            } else {
                e.status = ICE_STATUS_EXISTING;
            }
            if (st == HS_OK && hs_buf_append(&bk->entries, &e, sizeof e) != HS_OK)
                st = hs_err_nomem(err, sizeof e);
        }
        if (st == HS_OK) {
            const char *path = op_str(op, mf->manifest_path);
            if (!path || HS_VEC_PUSH(&op->replace, const char *, path) != HS_OK)
                st = hs_err_nomem(err, 64);
        }
    }
    for (size_t k = 0; st == HS_OK && k < HS_VEC_LEN(&buckets, mbucket); k++) {
        mbucket *bk = &HS_VEC_AT(&buckets, mbucket, k);
        const ice_partition_spec *spec = ice_metadata_spec(p->meta, bk->spec_id);
        st = write_manifest(op, bk->content, tbl_schema_for_spec(p->meta, spec), spec,
                            (const ice_manifest_entry *)bk->entries.data,
                            (int64_t)HS_VEC_LEN(&bk->entries, ice_manifest_entry), err);
    }
    for (size_t k = 0; k < HS_VEC_LEN(&buckets, mbucket); k++)
        hs_buf_free(&HS_VEC_AT(&buckets, mbucket, k).entries);
    hs_buf_free(&buckets);
    for (size_t k = 0; k < HS_VEC_LEN(&mans, ice_manifest *); k++)
        ice_manifest_free(HS_VEC_AT(&mans, ice_manifest *, k));
    hs_buf_free(&mans);
    return st;
}

/* Finds matching live rows of every planned file. */
static hs_status find_hits(const tbl_plan *p, file_action **out, int *n_out, hs_error *err)
{
    *out = NULL;
    *n_out = 0;
    hs_field rs;
    hs_field_init(&rs, "", HS_TYPE_STRUCT, false);
    hs_buf ids = {0};
    hs_status st = tbl_pred_field_ids(&p->pred, &ids) == HS_OK ? HS_OK : HS_NOMEM;
    for (size_t i = 0; st == HS_OK && i < HS_VEC_LEN(&ids, int32_t); i++) {
        int32_t id = HS_VEC_AT(&ids, int32_t, i);
        for (int k = 0; k < p->schema->root.n_children; k++) {
            const hs_field *c = &p->schema->root.children[k];
            bool has = c->field_id == id || (c->n_children && ice_schema_find_id(p->schema, id));
            if (!has)
                continue;
            /* add c once */
            bool dup = false;
            for (int j = 0; j < rs.n_children; j++)
                dup |= rs.children[j].field_id == c->field_id;
            if (!dup && c->field_id == id) {
                hs_field copy = {0};
                if (hs_field_copy(c, &copy) != HS_OK || hs_field_add_child(&rs, &copy) != HS_OK) {
                    hs_field_clear(&copy);
                    st = HS_NOMEM;
                }
            }
        }
    }
    /* nested filter columns: add their top-level ancestors */
    for (size_t i = 0; st == HS_OK && i < HS_VEC_LEN(&ids, int32_t); i++) {
        int32_t id = HS_VEC_AT(&ids, int32_t, i);
        for (int k = 0; k < p->schema->root.n_children && st == HS_OK; k++) {
            const hs_field *c = &p->schema->root.children[k];
            if (c->type != HS_TYPE_STRUCT || c->field_id == id)
                continue;
            ice_schema tmp = {.root = *c};
            if (!ice_schema_find_id(&tmp, id))
                continue;
            bool dup = false;
            for (int j = 0; j < rs.n_children; j++)
                dup |= rs.children[j].field_id == c->field_id;
            if (!dup) {
                hs_field copy = {0};
                if (hs_field_copy(c, &copy) != HS_OK || hs_field_add_child(&rs, &copy) != HS_OK) {
                    hs_field_clear(&copy);
                    st = HS_NOMEM;
                }
            }
        }
    }
    hs_buf_free(&ids);
    if (st != HS_OK) {
        hs_field_clear(&rs);
        return hs_err_nomem(err, 64);
    }
    file_action *acts = hs_calloc((size_t)p->n_files + 1, sizeof *acts);
    if (!acts) {
        hs_field_clear(&rs);
        return hs_err_nomem(err, sizeof *acts);
    }
    int n = 0;
    for (int i = 0; i < p->n_files && st == HS_OK; i++) {
        roaring_bitmap_t *hits = NULL;
        int64_t deleted = 0;
        st = tbl_read_file(&p->files[i], &rs, &p->pred, 0, NULL, NULL, &hits, &deleted, err);
        if (st != HS_OK)
            break;
        uint64_t card = roaring_bitmap_get_cardinality(hits);
        if (card == 0) {
            tbl_bitmap_free(hits);
            continue;
        }
        file_action *a = &acts[n++];
        a->file = i;
        a->hits = hits;
        a->live = p->files[i].record_count - deleted;
        a->remove_all = (int64_t)card >= a->live;
    }
    hs_field_clear(&rs);
    if (st != HS_OK) {
        for (int i = 0; i < n; i++)
            tbl_bitmap_free(acts[i].hits);
        hs_free(acts);
        return st;
    }
    *out = acts;
    *n_out = n;
    return HS_OK;
}

static void actions_free(file_action *a, int n)
{
    for (int i = 0; a && i < n; i++)
        tbl_bitmap_free(a[i].hits);
    hs_free(a);
}

/* One v2 position delete file: the positions bms[i] of data files paths[i]
 * (i < n; paths in ascending byte order, each once, as the spec orders the
 * rows by file_path then pos), in partition (n_partition values, borrowed
 * until the entry is written).  *out is its manifest entry (ADDED; strings
 * in op's arena); counted in the operation's delete counts. */
static hs_status write_pos_delete_file(tbl_wop *op, const char *const *paths,
                                       roaring_bitmap_t *const *bms, int n, int n_partition,
                                       ice_value *partition, ice_manifest_entry *out,
                                       hs_error *err)
{
    hs_field schema;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field fp, pos;
    hs_field_init(&fp, "file_path", HS_TYPE_STRING, false);
    fp.field_id = ICE_FIELD_ID_FILE_PATH;
    hs_field_init(&pos, "pos", HS_TYPE_INT64, false);
    pos.field_id = ICE_FIELD_ID_POS;
    hs_status st = HS_OK;
    if (hs_field_add_child(&schema, &fp) != HS_OK || hs_field_add_child(&schema, &pos) != HS_OK)
        st = hs_err_nomem(err, 64);
    uint64_t card = 0;
    for (int i = 0; i < n; i++)
        card += roaring_bitmap_get_cardinality(bms[i]);
    hs_batch *b = NULL;
    if (st == HS_OK)
        st = hs_batch_create(&schema, (int64_t)card, &b, err);
    for (int i = 0; i < n && st == HS_OK; i++) {
        size_t plen = strlen(paths[i]);
        roaring_uint32_iterator_t it;
        roaring_init_iterator(bms[i], &it);
        for (; st == HS_OK && it.has_value; roaring_advance_uint32_iterator(&it)) {
            int64_t v = it.current_value;
            if (hs_col_append_bytes(b->cols[0], paths[i], plen) != HS_OK ||
                hs_col_append_fixed(b->cols[1], &v) != HS_OK)
                st = hs_err_nomem(err, plen);
            b->n_rows++;
        }
    }
    char name[96], uuid[37];
    ice_uuid_v4(uuid);
    snprintf(name, sizeof name, "00000-%d-%s-deletes.parquet",
             (int)HS_VEC_LEN(&op->written, char *), uuid);
    hs_buf path = {0};
    hs_wfile *wf = NULL;
    pq_writer *w = NULL;
    if (st == HS_OK)
        st = make_path(op->t, "data", NULL, name, &path, err);
    if (st == HS_OK)
        st = mkdir_of((const char *)path.data, err);
    if (st == HS_OK)
        st = cat_io_create_ex(tbl_local((const char *)path.data), wflags(op->t), &wf, err);
    if (st == HS_OK)
        st = op_record(op, (const char *)path.data, err);
    pq_writer_options wo = writer_opts(op->t);
    if (st == HS_OK)
        st = pq_writer_open(wf, &schema, &wo, &w, err);
    if (st == HS_OK)
        st = pq_writer_write(w, b, err);
    if (st == HS_OK)
        st = pq_writer_finish(w, err);
    ice_data_file df = {0};
    metric_acc m = {0};
    if (st == HS_OK) {
        df.content = ICE_CONTENT_POSITION_DELETES;
        df.file_path = op_str(op, (const char *)path.data);
        df.file_format = "PARQUET";
        df.n_partition = n_partition;
        df.partition = partition;
        df.record_count = b->n_rows;
        df.file_size_in_bytes = (int64_t)pq_writer_bytes_written(w);
        for (int c = 0; c < 2 && st == HS_OK; c++)
            if (metrics_of(op, &b->schema.children[c], b->cols[c], NULL, b->n_rows, &m) != HS_OK)
                st = hs_err_nomem(err, 64);
        if (st == HS_OK && column_sizes(op, pq_writer_file_meta(w), &df) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK) {
        df.n_value_counts = (int)HS_VEC_LEN(&m.ids_counts, ice_id_long);
        df.value_counts = arena_copy(op, &m.ids_counts);
        df.n_null_value_counts = (int)HS_VEC_LEN(&m.nulls, ice_id_long);
        df.null_value_counts = arena_copy(op, &m.nulls);
        /* file_path bounds must be the full paths (no truncation): readers
         * (ours, plan.c) match data files to the file by them */
        ice_id_bytes *lb = hs_arena_alloc(&op->arena, 2 * sizeof *lb);
        ice_id_bytes *ub = hs_arena_alloc(&op->arena, 2 * sizeof *ub);
        const char *lo = n > 0 ? op_str(op, paths[0]) : NULL;
        const char *hi = n > 0 ? op_str(op, paths[n - 1]) : NULL;
        if (!lb || !ub || !lo || !hi)
            st = hs_err_nomem(err, 64);
        else {
            int nb = 0;
            lb[nb] = (ice_id_bytes){ICE_FIELD_ID_FILE_PATH, (uint32_t)strlen(lo),
                                    (const uint8_t *)lo};
            ub[nb] = (ice_id_bytes){ICE_FIELD_ID_FILE_PATH, (uint32_t)strlen(hi),
                                    (const uint8_t *)hi};
            nb++;
            for (size_t k = 0; k < HS_VEC_LEN(&m.lower, ice_id_bytes); k++)
                if (HS_VEC_AT(&m.lower, ice_id_bytes, k).id == ICE_FIELD_ID_POS)
                    lb[nb] = HS_VEC_AT(&m.lower, ice_id_bytes, k);
            for (size_t k = 0; k < HS_VEC_LEN(&m.upper, ice_id_bytes); k++)
                if (HS_VEC_AT(&m.upper, ice_id_bytes, k).id == ICE_FIELD_ID_POS)
                    ub[nb] = HS_VEC_AT(&m.upper, ice_id_bytes, k);
            nb++;
            df.n_lower_bounds = df.n_upper_bounds = nb;
            df.lower_bounds = lb;
            df.upper_bounds = ub;
        }
    }
    metric_free(&m);
    pq_writer_free(w);
    if (st == HS_OK) {
        st = hs_wfile_close(wf, err);
        wf = NULL;
    }
    if (wf)
        hs_wfile_abort(wf);
    hs_buf_free(&path);
    hs_batch_free(b);
    hs_field_clear(&schema);
    if (st == HS_OK) {
        memset(out, 0, sizeof *out);
        out->status = ICE_STATUS_ADDED;
        out->has_snapshot_id = true;
        out->snapshot_id = op->snapshot_id;
        out->file = df;
        out->file.has_sort_order_id = false;
        op->added_del_files++;
        op->added_pos_deletes += (int64_t)card;
    }
    return st;
}

/* v2: one position delete file per data file, in delete manifests by spec. */
static hs_status write_pos_deletes(tbl_wop *op, const tbl_plan *p, file_action *acts, int n,
                                   hs_error *err)
{
    hs_status st = HS_OK;
    hs_buf entries = {0};
    for (int i = 0; i < n && st == HS_OK; i++) {
        file_action *a = &acts[i];
        if (a->remove_all)
            continue;
        const tbl_plan_file *pf = &p->files[a->file];
        ice_manifest_entry e;
        st = write_pos_delete_file(op, &pf->path, &a->hits, 1, pf->n_partition, pf->partition,
                                   &e, err);
        if (st == HS_OK) {
            /* the data file's spec id after the entry: manifests by spec below */
            int64_t spec_of = pf->spec_id;
            if (hs_buf_append(&entries, &e, sizeof e) != HS_OK ||
                hs_buf_append(&entries, &spec_of, sizeof spec_of) != HS_OK)
                st = hs_err_nomem(err, sizeof e);
        }
    }
    /* one delete manifest per spec */
    size_t stride = sizeof(ice_manifest_entry) + sizeof(int64_t);
    size_t n_e = entries.len / stride;
    ice_manifest_entry *tmp = hs_calloc(n_e + 1, sizeof *tmp);
    if (st == HS_OK && !tmp)
        st = hs_err_nomem(err, n_e);
    for (int si = 0; si < p->meta->n_specs && st == HS_OK; si++) {
        int32_t sid = p->meta->specs[si].spec_id;
        size_t k = 0;
        for (size_t j = 0; j < n_e; j++) {
            int64_t spec_of;
            memcpy(&spec_of, entries.data + j * stride + sizeof(ice_manifest_entry), 8);
            if (spec_of == sid)
                memcpy(&tmp[k++], entries.data + j * stride, sizeof(ice_manifest_entry));
        }
        const ice_partition_spec *spec = &p->meta->specs[si];
        if (k)
            st = write_manifest(op, ICE_MANIFEST_DELETES, tbl_schema_for_spec(p->meta, spec), spec,
                                tmp, (int64_t)k, err);
    }
    hs_free(tmp);
    hs_buf_free(&entries);
    return st;
}

/* v3: deletion vectors (merged with existing ones) in one Puffin file. */
static hs_status write_dvs(tbl_wop *op, const tbl_plan *p, file_action *acts, int n,
                           hs_map *remove_del, hs_error *err)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += !acts[i].remove_all;
    if (k == 0)
        return HS_OK;
    ice_dv_input *in = hs_calloc((size_t)k, sizeof *in);
    ice_blob_loc *locs = hs_calloc((size_t)k, sizeof *locs);
    int *which = hs_calloc((size_t)k, sizeof *which);
    roaring_bitmap_t **merged = hs_calloc((size_t)k, sizeof *merged);
    hs_status st = in && locs && which && merged ? HS_OK : hs_err_nomem(err, 64);
    int m = 0;
    for (int i = 0; i < n && st == HS_OK; i++) {
        if (acts[i].remove_all)
            continue;
        const tbl_plan_file *pf = &p->files[acts[i].file];
        roaring_bitmap_t *bm = roaring_bitmap_copy(acts[i].hits);
        if (!bm) {
            st = hs_err_nomem(err, 64);
            break;
        }
        /* merge the old DV(s) of the file and retire their entries; and
         * the file's positions in v2 position delete files (a table
         * upgraded from v2): the spec has readers ignore position delete
         * files for a data file with a DV, so they are merged into it (the
         * files stay while they apply to other data files) */
        for (int d = 0; d < pf->n_deletes && st == HS_OK; d++) {
            const tbl_delete_ref *dr = &pf->deletes[d];
            if (!dr->is_dv && dr->kind == ICE_CONTENT_POSITION_DELETES && !dr->eq)
                st = tbl_load_pos_deletes(pf, dr->path, bm, err);
            if (!dr->is_dv)
                continue;
            hs_file *f = NULL;
            roaring_bitmap_t *old = NULL;
            st = hs_io_open(dr->path, &f, err);
            if (st == HS_OK)
                st = ice_dv_read(f, dr->offset, dr->length, &old, err);
            hs_file_close(f);
            if (st == HS_OK) {
                roaring_bitmap_or_inplace(bm, old);
                tbl_bitmap_free(old);
                int64_t key[2] = {dr->manifest_index, dr->entry_index};
                int mi = dr->manifest_index;
                char mkey[16];
                memcpy(mkey, &mi, sizeof mi);
                if (hs_map_put(remove_del, key, sizeof key, 1) != HS_OK ||
                    hs_map_put(remove_del, mkey, sizeof mi, 1) != HS_OK)
                    st = hs_err_nomem(err, 64);
                op->removed_del_files++;
                op->removed_pos_deletes += dr->record_count;
            }
        }
        merged[m] = bm;
        in[m].referenced_data_file = pf->path;
        in[m].positions = bm;
        which[m] = acts[i].file;
        m++;
    }
    char name[96], uuid[37];
    ice_uuid_v4(uuid);
    snprintf(name, sizeof name, "00000-0-%s-deletes.puffin", uuid);
    hs_buf path = {0};
    hs_wfile *wf = NULL;
    if (st == HS_OK)
        st = make_path(op->t, "data", NULL, name, &path, err);
    if (st == HS_OK)
        st = mkdir_of((const char *)path.data, err);
    if (st == HS_OK)
        st = cat_io_create_ex(tbl_local((const char *)path.data), wflags(op->t), &wf, err);
    if (st == HS_OK)
        st = op_record(op, (const char *)path.data, err);
    if (st == HS_OK)
        st = ice_puffin_write_dvs(wf, in, m, "HyperStreamDB", locs, err);
    int64_t size = wf ? (int64_t)wf->offset : 0;
    if (st == HS_OK) {
        st = hs_wfile_close(wf, err);
        wf = NULL;
    }
    if (wf)
        hs_wfile_abort(wf);
    const char *ppath = st == HS_OK ? op_str(op, (const char *)path.data) : NULL;
    hs_buf entries = {0};
    for (int si = 0; si < p->meta->n_specs && st == HS_OK; si++) {
        const ice_partition_spec *spec = &p->meta->specs[si];
        hs_buf_reset(&entries);
        for (int j = 0; j < m && st == HS_OK; j++) {
            const tbl_plan_file *pf = &p->files[which[j]];
            if (pf->spec_id != spec->spec_id)
                continue;
            ice_manifest_entry e = {0};
            e.status = ICE_STATUS_ADDED;
            e.has_snapshot_id = true;
            e.snapshot_id = op->snapshot_id;
            e.file.content = ICE_CONTENT_POSITION_DELETES;
            e.file.file_path = ppath;
            e.file.file_format = "PUFFIN";
            e.file.n_partition = pf->n_partition;
            e.file.partition = pf->partition;
            e.file.record_count = locs[j].cardinality;
            e.file.file_size_in_bytes = size;
            e.file.referenced_data_file = pf->path;
            e.file.has_content_offset = true;
            e.file.content_offset = locs[j].offset;
            e.file.has_content_size = true;
            e.file.content_size_in_bytes = locs[j].length;
            if (hs_buf_append(&entries, &e, sizeof e) != HS_OK)
                st = hs_err_nomem(err, sizeof e);
            op->added_del_files++;
            op->added_pos_deletes += locs[j].cardinality;
        }
        if (st == HS_OK)
            st = write_manifest(op, ICE_MANIFEST_DELETES, tbl_schema_for_spec(p->meta, spec), spec,
                                (const ice_manifest_entry *)entries.data,
                                (int64_t)HS_VEC_LEN(&entries, ice_manifest_entry), err);
    }
    hs_buf_free(&entries);
    hs_buf_free(&path);
    for (int j = 0; j < m; j++)
        tbl_bitmap_free(merged[j]);
    hs_free(merged);
    hs_free(in);
    hs_free(locs);
    hs_free(which);
    return st;
}

static hs_status plan_current(hs_table *t, const char *filter, tbl_plan **out, hs_error *err)
{
    const ice_snapshot *snap = ice_metadata_current_snapshot(&t->meta);
    const ice_schema *sc = ice_metadata_current_schema(&t->meta);
    if (!sc)
        return hs_err_set(err, HS_CORRUPT, "table metadata has no current schema");
    return tbl_plan_make(&t->meta, snap, sc, filter, out, err);
}

hs_status hs_table_delete(hs_table *t, const char *filter, int64_t *rows_deleted, hs_error *err)
{
    if (rows_deleted)
        *rows_deleted = 0;
    HS_TRY(tbl_check_writable(t, err));
    if (!filter || !*filter)
        return hs_err_set(err, HS_INVALID, "delete: a filter is required (use overwrite to "
                          "replace all rows)");
    HS_TRY(tbl_tail_flush_pending(t, "delete", err));   /* rows of an open stream too */
    HS_TRY(hs_table_refresh(t, err));
    tbl_plan *p = NULL;
    HS_TRY(plan_current(t, filter, &p, err));
    file_action *acts = NULL;
    int n = 0;
    hs_status st = find_hits(p, &acts, &n, err);
    if (st != HS_OK || n == 0) {
        actions_free(acts, n);
        tbl_plan_free(p);
        return st;
    }
    tbl_wop op;
    op_init(&op, t, "delete");
    op.check_conflicts = true;
    op.planned_snapshot_id = p->snap ? p->snap->snapshot_id : -1;
    bool *remove = hs_calloc((size_t)p->n_files + 1, sizeof(bool));
    hs_map remove_del = {0};
    int64_t total = 0;
    if (!remove)
        st = hs_err_nomem(err, (size_t)p->n_files);
    for (int i = 0; i < n && st == HS_OK; i++) {
        total += (int64_t)roaring_bitmap_get_cardinality(acts[i].hits);
        if (acts[i].remove_all) {
            const tbl_plan_file *pf = &p->files[acts[i].file];
            remove[acts[i].file] = true;
            op.removed_files++;
            op.removed_records += pf->record_count;
            op.removed_size += pf->file_size;
        }
    }
    if (st == HS_OK) {
        if (t->meta.format_version >= 3)
            st = write_dvs(&op, p, acts, n, &remove_del, err);
        else
            st = write_pos_deletes(&op, p, acts, n, err);
    }
    if (st == HS_OK)
        st = rewrite_manifests(&op, p, remove, &remove_del, err);
    if (st == HS_OK)
        st = op_commit(&op, err);
    else
        op_cleanup_files(&op);
    if (st == HS_OK && rows_deleted)
        *rows_deleted = total;
    hs_map_free(&remove_del);
    hs_free(remove);
    actions_free(acts, n);
    op_free(&op);
    tbl_plan_free(p);
    return st;
}

/* ------------------------------------------------------------------ */
/* overwrite                                                           */

static hs_status collect_emit(void *ctx, hs_batch *b, hs_error *err)
{
    hs_buf *v = ctx;
    if (HS_VEC_PUSH(v, hs_batch *, b) != HS_OK) {
        hs_batch_free(b);
        return hs_err_nomem(err, 8);
    }
    return HS_OK;
}

static hs_status keep_rows_of(const tbl_plan *p, const file_action *a, hs_batch *keep,
                              hs_error *err)
{
    const tbl_plan_file *pf = &p->files[a->file];
    hs_field rs = {0};
    if (hs_field_copy(&p->schema->root, &rs) != HS_OK)
        return hs_err_nomem(err, 64);
    hs_field posf;
    hs_field_init(&posf, "_pos", HS_TYPE_INT64, true);
    posf.field_id = ICE_FIELD_ID_POS;
    if (hs_field_add_child(&rs, &posf) != HS_OK) {
        hs_field_clear(&rs);
        return hs_err_nomem(err, 64);
    }
    hs_buf batches = {0};
    hs_status st = tbl_read_file(pf, &rs, NULL, 0, collect_emit, &batches, NULL, NULL, err);
    int64_t *idx = NULL;
    for (size_t bi = 0; bi < HS_VEC_LEN(&batches, hs_batch *); bi++) {
        hs_batch *b = HS_VEC_AT(&batches, hs_batch *, bi);
        if (st == HS_OK) {
            int pc = b->n_cols - 1;
            const int64_t *pos = HS_COL_VALUES(b->cols[pc], int64_t);
            hs_free(idx);
            idx = hs_malloc((size_t)b->n_rows * sizeof *idx + 8);
            int64_t m = 0;
            if (!idx)
                st = hs_err_nomem(err, (size_t)b->n_rows);
            for (int64_t i = 0; st == HS_OK && i < b->n_rows; i++)
                if (!roaring_bitmap_contains(a->hits, (uint32_t)pos[i]))
                    idx[m++] = i;
            for (int c = 0; c < pc && st == HS_OK; c++) {
                hs_column *t = NULL;
                st = hs_col_take(b->cols[c], idx, m, &t, err);
                if (st == HS_OK)
                    st = hs_col_append_column(keep->cols[c], t, err);
                hs_col_free(t);
            }
            if (st == HS_OK)
                keep->n_rows += m;
        }
        hs_batch_free(b);
    }
    hs_free(idx);
    hs_buf_free(&batches);
    hs_field_clear(&rs);
    return st;
}

static hs_status overwrite_impl(hs_table *t, struct ArrowArrayStream *in, const char *filter,
                                bool by_partition, hs_error *err)
{
    hs_status st = tbl_check_writable(t, err);
    if (st == HS_OK)   /* rows of an open stream are replaced too */
        st = tbl_tail_flush_pending(t, "overwrite", err);
    if (st == HS_OK)
        st = hs_table_refresh(t, err);
    if (st != HS_OK) {
        if (in && in->release)
            in->release(in);
        return st;
    }
    hs_batch *rows = NULL;
    if (in)
        HS_TRY(collect_stream(t, in, &rows, err));
    tbl_plan *p = NULL;
    st = plan_current(t, by_partition ? NULL : filter, &p, err);
    file_action *acts = NULL;
    int n = 0;
    tbl_wop op;
    op_init(&op, t, "overwrite");
    op.check_conflicts = true;
    if (st == HS_OK) {
        op.planned_snapshot_id = p->snap ? p->snap->snapshot_id : -1;
        if (by_partition) {
            /* files of the default spec whose partition tuple the new rows touch */
            st = write_rows(&op, rows, err);
            acts = hs_calloc((size_t)p->n_files + 1, sizeof *acts);
            if (st == HS_OK && !acts)
                st = hs_err_nomem(err, 64);
            const ice_partition_spec *spec = ice_metadata_default_spec(&t->meta);
            hs_buf key = {0};
            for (int i = 0; st == HS_OK && i < p->n_files; i++) {
                const tbl_plan_file *pf = &p->files[i];
                if (!spec || pf->spec_id != spec->spec_id)
                    continue;
                if (tuple_key(pf->partition, pf->n_partition, &key) != HS_OK) {
                    st = hs_err_nomem(err, 64);
                    break;
                }
                if (hs_map_get(&op.parts, key.data, key.len, NULL)) {
                    acts[n].file = i;
                    acts[n].remove_all = true;
                    n++;
                }
            }
            hs_buf_free(&key);
        } else {
            st = find_hits(p, &acts, &n, err);
        }
    }
    bool *remove = st == HS_OK ? hs_calloc((size_t)(p ? p->n_files : 0) + 1, sizeof(bool)) : NULL;
    if (st == HS_OK && !remove)
        st = hs_err_nomem(err, 64);
    /* v3: a partly matching file is not rewritten; a deletion vector removes
     * its matching rows, so the surviving rows keep their _row_id and
     * _last_updated_sequence_number without being copied (row lineage). v2:
     * copy-on-write, the surviving rows are rewritten into new files. */
    bool merge_on_read = !by_partition && t->meta.format_version >= 3;
    hs_map remove_del = {0};
    hs_batch *keep = NULL;
    if (st == HS_OK && !by_partition && !merge_on_read) {
        const ice_schema *sc = ice_metadata_current_schema(&t->meta);
        st = hs_batch_create(&sc->root, 0, &keep, err);
    }
    for (int i = 0; i < n && st == HS_OK; i++) {
        const tbl_plan_file *pf = &p->files[acts[i].file];
        if (merge_on_read && !acts[i].remove_all)
            continue;
        remove[acts[i].file] = true;
        op.removed_files++;
        op.removed_records += pf->record_count;
        op.removed_size += pf->file_size;
        if (!acts[i].remove_all && keep)
            st = keep_rows_of(p, &acts[i], keep, err);
    }
    if (st == HS_OK && merge_on_read)
        st = write_dvs(&op, p, acts, n, &remove_del, err);
    if (st == HS_OK && keep && keep->n_rows)
        st = write_rows(&op, keep, err);
    if (st == HS_OK && rows && !by_partition)
        st = write_rows(&op, rows, err);
    if (st == HS_OK)
        st = rewrite_manifests(&op, p, remove, merge_on_read ? &remove_del : NULL, err);
    if (st == HS_OK && (op.added_files || op.removed_files || op.added_del_files))
        st = op_commit(&op, err);
    else if (st != HS_OK)
        op_cleanup_files(&op);
    hs_map_free(&remove_del);
    hs_batch_free(keep);
    hs_batch_free(rows);
    hs_free(remove);
    actions_free(acts, n);
    op_free(&op);
    tbl_plan_free(p);
    return st;
}

hs_status hs_table_overwrite(hs_table *t, struct ArrowArrayStream *in, const char *filter,
                             hs_error *err)
{
    return overwrite_impl(t, in, filter, false, err);
}

hs_status hs_table_overwrite_partitions(hs_table *t, struct ArrowArrayStream *in, hs_error *err)
{
    if (!in)
        return hs_err_set(err, HS_INVALID, "overwrite_partitions: no rows given");
    return overwrite_impl(t, in, NULL, true, err);
}

/* ------------------------------------------------------------------ */
/* row delta (rowdelta.c prepares it)                                  */

hs_status tbl_write_row_delta(hs_table *t, const tbl_plan *p, tbl_file_action *acts, int n,
                              const hs_batch *rows, const ice_schema *rows_schema,
                              int64_t read_snapshot_id, tbl_validate_fn validate, void *vctx,
                              hs_error *err)
{
    /* only rows added: a fast append (no validation needed, any base) */
    tbl_wop op;
    op_init(&op, t, n > 0 ? "overwrite" : "append");
    op.check_conflicts = n > 0;
    op.planned_snapshot_id = read_snapshot_id;
    op.validate = validate;
    op.validate_ctx = vctx;
    bool *remove = hs_calloc((size_t)p->n_files + 1, sizeof(bool));
    hs_map remove_del = {0};
    hs_status st = remove ? HS_OK : hs_err_nomem(err, (size_t)p->n_files);
    for (int i = 0; i < n && st == HS_OK; i++) {
        if (!acts[i].remove_all)
            continue;
        const tbl_plan_file *pf = &p->files[acts[i].file];
        remove[acts[i].file] = true;
        op.removed_files++;
        op.removed_records += pf->record_count;
        op.removed_size += pf->file_size;
    }
    if (st == HS_OK && n > 0) {
        if (t->meta.format_version >= 3)
            st = write_dvs(&op, p, acts, n, &remove_del, err);
        else
            st = write_pos_deletes(&op, p, acts, n, err);
    }
    if (st == HS_OK && rows && rows->n_rows > 0)
        st = write_rows_as(&op, rows, rows_schema, err);
    if (st == HS_OK)
        st = rewrite_manifests(&op, p, remove, &remove_del, err);
    if (st == HS_OK && (op.added_files || op.removed_files || op.added_del_files))
        st = op_commit(&op, err);   /* removes the files itself when it fails */
    else if (st != HS_OK)
        op_cleanup_files(&op);
    hs_map_free(&remove_del);
    hs_free(remove);
    op_free(&op);
    return st;
}

/* ------------------------------------------------------------------ */
/* rewrites for table maintenance (table/maint.c)                      */

struct tbl_rewrite {
    tbl_wop op;
    bool committed;
    /* tbl_rewrite_mark */
    size_t mark_add, mark_written;
    int64_t mark_counts[9];
};

hs_status tbl_rewrite_begin(hs_table *t, const char *operation, int64_t planned_snapshot_id,
                            tbl_rewrite_check_fn check, void *check_ctx, tbl_rewrite **out,
                            hs_error *err)
{
    *out = NULL;
    tbl_rewrite *rw = hs_calloc(1, sizeof *rw);
    if (!rw)
        return hs_err_nomem(err, sizeof *rw);
    op_init(&rw->op, t, operation);
    rw->op.planned_snapshot_id = planned_snapshot_id;
    rw->op.check = check;
    rw->op.check_ctx = check_ctx;
    *out = rw;
    return HS_OK;
}

int64_t tbl_rewrite_snapshot_id(const tbl_rewrite *rw) { return rw->op.snapshot_id; }

hs_status tbl_rewrite_rows(tbl_rewrite *rw, const hs_batch *rows, hs_error *err)
{
    if (!rows || rows->n_rows == 0)
        return HS_OK;
    return write_rows(&rw->op, rows, err);
}

hs_status tbl_rewrite_rows_as(tbl_rewrite *rw, const hs_batch *rows, const ice_schema *file_schema,
                              hs_error *err)
{
    if (!rows || rows->n_rows == 0)
        return HS_OK;
    tbl_wop *op = &rw->op;
    const ice_schema *schema = ice_metadata_current_schema(&op->t->meta);
    const ice_partition_spec *spec = ice_metadata_default_spec(&op->t->meta);
    if (!schema || !spec)
        return hs_err_set(err, HS_CORRUPT, "table metadata lacks a current schema or spec");
    /* as write_rows, with the data files in file_schema (the manifest
     * header keeps the table schema) */
    one_file_per_group w = {op, file_schema, {0}};
    int n_groups = 0;
    hs_status st = partition_rows(op, rows, NULL, one_file_sink, &w, &n_groups, err);
    op->changed_partitions += n_groups;
    if (st == HS_OK)
        st = write_manifest(op, ICE_MANIFEST_DATA, schema, spec,
                            (const ice_manifest_entry *)w.entries.data,
                            (int64_t)HS_VEC_LEN(&w.entries, ice_manifest_entry), err);
    hs_buf_free(&w.entries);
    return st;
}

hs_status tbl_rewrite_stream(tbl_rewrite *rw, struct ArrowArrayStream *in, int64_t target,
                             hs_error *err)
{
    rw->op.target_file_size = target;
    return append_stream(&rw->op, in, err);
}

struct tbl_rewrite_sink {
    appender ap;
};

hs_status tbl_rewrite_sink_open(tbl_rewrite *rw, int64_t target, const ice_schema *file_schema,
                                tbl_rewrite_sink **out, hs_error *err)
{
    *out = NULL;
    tbl_rewrite_sink *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    rw->op.target_file_size = target;
    hs_status st = ap_init(&s->ap, &rw->op, err);
    if (st == HS_OK && file_schema) {   /* rows and files with lineage columns */
        hs_batch_free(s->ap.chunk);
        s->ap.chunk = NULL;
        s->ap.fschema = file_schema;
        st = hs_batch_create(&file_schema->root, 0, &s->ap.chunk, err);
    }
    if (st != HS_OK) {
        hs_batch_free(s->ap.chunk);
        hs_free(s);
        return st;
    }
    /* files stream as a plain table's (kept open across chunks, rolled at
     * the target); their sidecars are built from the files as they close */
    s->ap.indexed = false;
    *out = s;
    return HS_OK;
}

hs_status tbl_rewrite_sink_push(tbl_rewrite_sink *s, hs_batch *b, hs_error *err)
{
    return ap_add(&s->ap, b, err);
}

hs_status tbl_rewrite_sink_close(tbl_rewrite_sink *s, bool finish, hs_error *err)
{
    if (!s)
        return HS_OK;
    hs_status st = ap_finish(&s->ap, finish, err);
    hs_free(s);
    return st;
}

hs_status tbl_rewrite_remove(tbl_rewrite *rw, const tbl_plan *p, const bool *remove_file,
                             const hs_map *remove_del, hs_error *err)
{
    for (int i = 0; i < p->n_files; i++)
        if (remove_file[i]) {
            rw->op.removed_files++;
            rw->op.removed_records += p->files[i].record_count;
            rw->op.removed_size += p->files[i].file_size;
        }
    return rewrite_manifests(&rw->op, p, remove_file, remove_del, err);
}

void tbl_rewrite_count_deletes_removed(tbl_rewrite *rw, const tbl_del_counts *dc)
{
    rw->op.removed_del_files += dc->pos_files + dc->eq_files;
    rw->op.removed_pos_deletes += dc->pos_records;
    rw->op.removed_eq_del_files += dc->eq_files;
    rw->op.removed_eq_deletes += dc->eq_records;
}

hs_status tbl_rewrite_add_manifest(tbl_rewrite *rw, int content, const ice_schema *schema,
                                   const ice_partition_spec *spec, const ice_manifest_entry *e,
                                   int64_t n, hs_error *err)
{
    return write_manifest(&rw->op, content, schema, spec, e, n, err);
}

hs_status tbl_rewrite_replace(tbl_rewrite *rw, const char *manifest_path, hs_error *err)
{
    const char *path = op_str(&rw->op, manifest_path);
    if (!path || HS_VEC_PUSH(&rw->op.replace, const char *, path) != HS_OK)
        return hs_err_nomem(err, 64);
    return HS_OK;
}

void tbl_rewrite_count_added(tbl_rewrite *rw, int64_t files, int64_t records, int64_t bytes)
{
    rw->op.added_files += files;
    rw->op.added_records += records;
    rw->op.added_size += bytes;
}

hs_status tbl_rewrite_summary(tbl_rewrite *rw, const char *key, const char *value, hs_error *err)
{
    if (ice_kv_set(&rw->op.extra_summary, key, value) != HS_OK)
        return hs_err_nomem(err, strlen(value));
    return HS_OK;
}

hs_status tbl_rewrite_property(tbl_rewrite *rw, const char *key, const char *value, hs_error *err)
{
    if (ice_kv_set(&rw->op.extra_props, key, value) != HS_OK)
        return hs_err_nomem(err, strlen(value));
    return HS_OK;
}

void tbl_rewrite_written(const tbl_rewrite *rw, int64_t *files, int64_t *records, int64_t *bytes)
{
    *files = rw->op.added_files;
    *records = rw->op.added_records;
    *bytes = rw->op.added_size;
}

hs_status tbl_rewrite_commit(tbl_rewrite *rw, hs_error *err)
{
    hs_status st = op_commit(&rw->op, err);
    rw->committed = st == HS_OK;
    return st;
}

void tbl_rewrite_free(tbl_rewrite *rw)
{
    if (!rw)
        return;
    if (!rw->committed)
        op_cleanup_files(&rw->op);
    op_free(&rw->op);
    hs_free(rw);
}

void tbl_rewrite_set_row_map(tbl_rewrite *rw, tbl_row_map_fn fn, void *ctx)
{
    rw->op.row_map = fn;
    rw->op.row_map_ctx = ctx;
}

void tbl_rewrite_mark(tbl_rewrite *rw)
{
    tbl_wop *op = &rw->op;
    rw->mark_add = HS_VEC_LEN(&op->add, ice_manifest_file);
    rw->mark_written = HS_VEC_LEN(&op->written, char *);
    int64_t c[9] = {op->removed_files, op->removed_records, op->removed_size, op->added_del_files,
                    op->added_pos_deletes, op->removed_del_files, op->removed_pos_deletes,
                    op->removed_eq_del_files, op->removed_eq_deletes};
    memcpy(rw->mark_counts, c, sizeof c);
}

void tbl_rewrite_reset(tbl_rewrite *rw)
{
    tbl_wop *op = &rw->op;
    for (size_t i = rw->mark_written; i < HS_VEC_LEN(&op->written, char *); i++)
        remove_written(HS_VEC_AT(&op->written, char *, i));
    op->written.len = rw->mark_written * sizeof(char *);
    op->add.len = rw->mark_add * sizeof(ice_manifest_file);
    hs_buf_reset(&op->replace);
    for (size_t i = 0; i < HS_VEC_LEN(&op->ixw.removed, char *); i++)
        hs_free(HS_VEC_AT(&op->ixw.removed, char *, i));
    hs_buf_reset(&op->ixw.removed);
    const int64_t *c = rw->mark_counts;
    op->removed_files = c[0];
    op->removed_records = c[1];
    op->removed_size = c[2];
    op->added_del_files = c[3];
    op->added_pos_deletes = c[4];
    op->removed_del_files = c[5];
    op->removed_pos_deletes = c[6];
    op->removed_eq_del_files = c[7];
    op->removed_eq_deletes = c[8];
}

hs_status tbl_rewrite_pos_delete_file(tbl_rewrite *rw, const char *const *paths,
                                     roaring_bitmap_t *const *bms, int n, int n_partition,
                                     ice_value *partition, ice_manifest_entry *out, hs_error *err)
{
    return write_pos_delete_file(&rw->op, paths, bms, n, n_partition, partition, out, err);
}

hs_status tbl_rewrite_position_deletes(tbl_rewrite *rw, const tbl_plan *p, tbl_file_action *acts,
                                       int n, hs_map *remove_del, hs_error *err)
{
    if (n == 0)
        return HS_OK;
    if (rw->op.t->meta.format_version >= 3)
        return write_dvs(&rw->op, p, acts, n, remove_del, err);
    return write_pos_deletes(&rw->op, p, acts, n, err);
}

/*
 * table/scan.c - reading a planned scan: data files -> batches of the table
 * schema, merge-on-read of deletes, row lineage, residual filter, projection;
 * and the public hs_scan_* / hs_table_scan entry points.
 *
 * Per data file (tbl_read_file_ex):
 *
 *   selection S = index candidates (index_scan.c's bitmap algebra; NULL = all)
 *                 minus deleted positions (position deletes, DVs)
 *                 AND what row-group / page statistics allow (no usable index)
 *        |         empty S: the file is not read at all
 *        v
 *   Parquet file --pq_scan(columns, rows = S)--> batches in the FILE's schema
 *        |         (the reader decodes only pages holding rows of S and
 *        |          gathers the rows of S inside them; with a nested column
 *        |          a scattered S is read in FRD_BLOCK-row blocks and cut after)
 *        | tbl_conform_column per column, by field id: rename, promote
 *        | (int->long, float->double, decimal), add missing nested fields as
 *        v null, drop removed ones; metadata columns (_row_id, _file, _pos,
 *   batches in the READ schema       _last_updated_sequence_number) from the
 *        |                           row positions
 *        v
 *   residual filter (exact expression, three-valued) unless the candidates
 *   are exactly the matches; the passing rows taken (hs_col_take)
 *
 *   reads, when the filter must be evaluated:
 *     one phase    the output columns + the filter's other columns
 *     two phases   (some output column is not a filter column: late
 *                  materialization) phase 1 reads the filter columns of S,
 *                  evaluates, keeps the passing rows of the filter columns
 *                  that are also output; phase 2 reads the other output
 *                  columns for the passing rows P ("sparse": |P| <= |S|/8,
 *                  or P's runs average 16 rows or more) or for S again,
 *                  cut by phase 1's verdicts ("dense")
 *
 * Files are read ahead on a thread pool (HS_SCAN_THREADS, default the cores
 * up to 8): a window of jobs, one per file, consumed in plan order, so
 * results keep the plan's order.  Each job streams its file's batches into
 * a queue of at most SCAN_QUEUE_BYTES (at least one batch): a reader that
 * finds its queue full waits for the consumer, so a scan holds at most
 * window x (queue + one reader's working set) whatever the size of its
 * files (docs/parquet.md, "Memory of a scan").  A file small enough to fit
 * the queue whole (estimated from its row count) is read on the consumer's
 * thread when no pool is needed.
 *
 * Since the stream takes files in order, a later file's reader soon fills
 * its queue and would sleep while the oldest file's reader decodes alone
 * (a full scan of big files ran on one core).  So a reader hands out the
 * columns of each batch it decodes (scan_par), and the threads that would
 * sleep - readers on a full queue, and the consumer on an empty one when
 * the window has fewer readers than scan_threads - decode them into that
 * batch: the oldest file gets every thread, memory stays what the queues
 * bound.
 *
 * Row lineage (v3, spec "Row Lineage"): a row's _row_id is the value stored
 * in the file when not null, else the data file's first_row_id + its
 * position; _last_updated_sequence_number is the stored value when not
 * null, else the file's data sequence number.  Files without first_row_id
 * (written before an upgrade to v3 and not yet assigned) read null for both.
 *
 * Ownership: an hs_scan owns a copy of the table metadata, so the table
 * handle may be closed while a scan or its stream is alive.
 */
#include "table/table_int.h"

#include "base/config.h"
#include "base/fork.h"
#include "base/opts.h"
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/jsonl.h"
#include "expr/expr.h"
#include "base/threadpool.h"
#include "hyperstream/index.h"
#include "io/io.h"
#include "parquet/reader.h"
#include "table/rtfilter.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* conformance                                                         */

static hs_status null_column(const hs_field *f, int64_t n, hs_column **out, hs_error *err)
{
    HS_TRY(hs_col_create(f, n, out, err));
    hs_status st = hs_col_append_nulls(*out, n);
    if (st != HS_OK) {
        hs_col_free(*out);
        *out = NULL;
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

/* One value of a primitive ice_value appended to c (a column of f's type). */
static hs_status append_ice_value(const hs_field *f, hs_column *c, const ice_value *v)
{
    switch (f->type) {
    case HS_TYPE_BOOL: { uint8_t b = v->v.b; return hs_col_append_fixed(c, &b); }
    case HS_TYPE_INT32:
    case HS_TYPE_DATE32: { int32_t x = (int32_t)v->v.i; return hs_col_append_fixed(c, &x); }
    case HS_TYPE_INT64:
    case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP: return hs_col_append_fixed(c, &v->v.i);
    case HS_TYPE_FLOAT32: return hs_col_append_fixed(c, &v->v.f);
    case HS_TYPE_FLOAT64: return hs_col_append_fixed(c, &v->v.d);
    case HS_TYPE_STRING:
    case HS_TYPE_BINARY:
    case HS_TYPE_FIXED_BINARY: return hs_col_append_bytes(c, v->bytes, v->len);
    case HS_TYPE_DECIMAL128: {
        __int128 x = ice_value_decimal(v);
        return hs_col_append_fixed(c, &x);
    }
    default: return HS_UNSUPPORTED;
    }
}

/* The column of a field that a data file lacks, or that rows being written
 * lack: the field's v3 default under `key` ("iceberg.initial-default" when
 * reading: the value for rows written before the field was added;
 * "iceberg.write-default" when writing) for primitive fields, else nulls. */
static hs_status missing_column(const hs_field *f, const char *key, int64_t n, hs_column **out,
                                hs_error *err)
{
    const char *dj = hs_field_get_meta(f, key);
    if (!dj || strcmp(dj, "null") == 0)
        return null_column(f, n, out, err);
    ice_value v;
    memset(&v, 0, sizeof v);
    HS_TRY(ice_value_from_json(f, dj, strlen(dj), &v, err));
    hs_status st = v.is_null ? HS_OK : hs_col_create(f, n, out, err);
    for (int64_t i = 0; st == HS_OK && !v.is_null && i < n; i++)
        st = append_ice_value(f, *out, &v);
    ice_value_clear(&v);
    if (v.is_null)
        return null_column(f, n, out, err);
    if (st != HS_OK) {
        hs_col_free(*out);
        *out = NULL;
        if (st == HS_UNSUPPORTED)
            return null_column(f, n, out, err);  /* nested defaults: not applied */
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

static int64_t unit_mul(hs_time_unit from, hs_time_unit to, bool *div)
{
    static const int64_t per_s[] = {1, 1000, 1000000, 1000000000};
    *div = per_s[from] > per_s[to];
    return *div ? per_s[from] / per_s[to] : per_s[to] / per_s[from];
}

/* Primitive casts row by row (rare paths: promotions and Arrow input). */
static hs_status cast_column(const hs_field *from, hs_column *c, const hs_field *to,
                             hs_column **out, hs_error *err)
{
    pr_vkind fk = pr_kind_of(from), tk = pr_kind_of(to);
    bool ok = (fk == PR_V_I64 && (tk == PR_V_I64 || tk == PR_V_F64)) ||
              (fk == PR_V_F64 && tk == PR_V_F64) ||
              (fk == PR_V_I128 && tk == PR_V_I128 && from->scale == to->scale);
    if (from->type == HS_TYPE_BOOL && to->type != HS_TYPE_BOOL)
        ok = false;
    if (to->type == HS_TYPE_BOOL && from->type != HS_TYPE_BOOL)
        ok = false;
    if ((from->type == HS_TYPE_DATE32) != (to->type == HS_TYPE_DATE32))
        ok = false;
    if (!ok) {
        hs_col_free(c);
        return hs_err_set(err, HS_INVALID, "column \"%s\": cannot read %s as %s", to->name,
                          hs_type_name(from->type), hs_type_name(to->type));
    }
    int64_t n = c->length;
    hs_column *r = NULL;
    hs_status st = hs_col_create(to, n, &r, err);
    bool div = false;
    int64_t mul = 1;
    bool timed = (from->type == HS_TYPE_TIMESTAMP && to->type == HS_TYPE_TIMESTAMP) ||
                 ((from->type == HS_TYPE_TIME32 || from->type == HS_TYPE_TIME64) &&
                  to->type == HS_TYPE_TIME64);
    if (timed)
        mul = unit_mul(from->unit, to->unit, &div);
    int w = hs_type_width(to);
    for (int64_t i = 0; st == HS_OK && i < n; i++) {
        pr_val v;
        if (!pr_val_get(from, c, i, &v)) {
            st = hs_col_append_null(r);
            continue;
        }
        uint8_t buf[16] = {0};
        if (tk == PR_V_I64) {
            int64_t x = v.i;
            if (timed)
                x = div ? (x >= 0 ? x / mul : -((-x + mul - 1) / mul)) : x * mul;
            if (w == 4) {
                int32_t y = (int32_t)x;
                memcpy(buf, &y, 4);
            } else {
                memcpy(buf, &x, 8);
            }
        } else if (tk == PR_V_F64) {
            double x = v.kind == PR_V_F64 ? v.f : (double)v.i;
            if (w == 4) {
                float y = (float)x;
                memcpy(buf, &y, 4);
            } else {
                memcpy(buf, &x, 8);
            }
        } else {
            memcpy(buf, &v.d, 16);
        }
        st = hs_col_append_fixed(r, buf);
    }
    hs_col_free(c);
    if (st != HS_OK) {
        hs_col_free(r);
        return st == HS_NOMEM ? hs_err_nomem(err, (size_t)n) : st;
    }
    *out = r;
    return HS_OK;
}

static int match_child(const hs_field *from, const hs_field *want, bool by_name)
{
    if (!by_name) {
        for (int k = 0; k < from->n_children; k++)
            if (from->children[k].field_id == want->field_id && want->field_id >= 0)
                return k;
        return -1;
    }
    for (int k = 0; k < from->n_children; k++)
        if (strcmp(from->children[k].name, want->name) == 0)
            return k;
    for (int k = 0; k < from->n_children; k++)
        if (strcasecmp(from->children[k].name, want->name) == 0)
            return k;
    return -1;
}

static bool same_physical(const hs_field *a, const hs_field *b)
{
    if (a->type != b->type)
        return false;
    switch (a->type) {
    case HS_TYPE_TIMESTAMP: case HS_TYPE_TIME32: case HS_TYPE_TIME64:
        return a->unit == b->unit;
    case HS_TYPE_FIXED_BINARY:
        return a->width == b->width;
    case HS_TYPE_DECIMAL128:
        return a->scale == b->scale;
    default:
        return true;
    }
}

/* Turns a FIXED_LIST column into a LIST in place: offsets i * width, and the
 * elements under null rows dropped (our LIST invariant: null rows are empty). */
static hs_status fixed_list_to_list(hs_column *c, hs_error *err)
{
    int64_t w = c->width, n = c->length;
    if (c->n_children != 1 || w < 0 || n > INT32_MAX / (w ? w : 1))
        return hs_err_set(err, HS_INVALID, "fixed_size_list column too large for a list");
    int32_t *off = hs_malloc_aligned((size_t)(n + 1) * sizeof(int32_t));
    if (!off)
        return hs_err_nomem(err, (size_t)(n + 1) * sizeof(int32_t));
    if (c->null_count > 0) {
        int64_t *idx = hs_malloc((size_t)(n * w + 1) * sizeof(int64_t));
        if (!idx) {
            hs_free_aligned(off);
            return hs_err_nomem(err, (size_t)(n * w) * sizeof(int64_t));
        }
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++) {
            off[i] = (int32_t)k;
            if (hs_col_is_valid(c, i))
                for (int64_t j = 0; j < w; j++)
                    idx[k++] = i * w + j;
        }
        off[n] = (int32_t)k;
        hs_column *child = NULL;
        hs_status st = hs_col_take(c->children[0], idx, k, &child, err);
        hs_free(idx);
        if (st != HS_OK) {
            hs_free_aligned(off);
            return st;
        }
        hs_col_free(c->children[0]);
        c->children[0] = child;
    } else {
        for (int64_t i = 0; i <= n; i++)
            off[i] = (int32_t)(i * w);
    }
    c->offsets.data = (uint8_t *)off;
    c->offsets.len = c->offsets.cap = (size_t)(n + 1) * sizeof(int32_t);
    c->type = HS_TYPE_LIST;
    c->width = 0;
    return HS_OK;
}

hs_status tbl_conform_column(const hs_field *from, hs_column *c, const hs_field *to, bool by_name,
                             hs_column **out, hs_error *err)
{
    *out = NULL;
    if (to->type == HS_TYPE_STRUCT) {
        if (from->type != HS_TYPE_STRUCT) {
            hs_col_free(c);
            return hs_err_set(err, HS_INVALID, "column \"%s\": expected a struct, got %s",
                              to->name, hs_type_name(from->type));
        }
        hs_column **kids = hs_calloc((size_t)to->n_children + 1, sizeof *kids);
        if (!kids) {
            hs_col_free(c);
            return hs_err_nomem(err, sizeof *kids);
        }
        hs_status st = HS_OK;
        for (int i = 0; i < to->n_children && st == HS_OK; i++) {
            const hs_field *tf = &to->children[i];
            int k = match_child(from, tf, by_name);
            if (k >= 0 && k < c->n_children && c->children[k]) {
                hs_column *child = c->children[k];
                c->children[k] = NULL;
                st = tbl_conform_column(&from->children[k], child, tf, by_name, &kids[i], err);
            } else if (!tf->nullable && by_name && !hs_field_get_meta(tf, "iceberg.write-default")) {
                st = hs_err_set(err, HS_INVALID, "required field \"%s\" is missing", tf->name);
            } else {
                /* by_name: rows being appended; else a data file being read */
                st = missing_column(tf, by_name ? "iceberg.write-default" : "iceberg.initial-default",
                                    c->length, &kids[i], err);
            }
        }
        if (st != HS_OK) {
            for (int i = 0; i < to->n_children; i++)
                hs_col_free(kids[i]);
            hs_free(kids);
            hs_col_free(c);
            return st;
        }
        if (by_name)
            for (int k = 0; k < c->n_children; k++)
                if (c->children[k]) {
                    st = hs_err_set(err, HS_INVALID, "field \"%s\" is not in the table schema",
                                    from->children[k].name);
                    break;
                }
        for (int k = 0; k < c->n_children; k++)
            hs_col_free(c->children[k]);
        hs_free(c->children);
        c->children = kids;
        c->n_children = to->n_children;
        if (st != HS_OK) {
            hs_col_free(c);
            return st;
        }
        *out = c;
        return HS_OK;
    }
    if (to->type == HS_TYPE_LIST && from->type == HS_TYPE_FIXED_LIST) {
        /* Iceberg has no fixed-size list: an embedding column arrives as
         * fixed_size_list<float>[d] and is stored as list<float>. */
        hs_status st = fixed_list_to_list(c, err);
        if (st != HS_OK) {
            hs_col_free(c);
            return st;
        }
        hs_field as_list = *from;
        as_list.type = HS_TYPE_LIST;
        as_list.width = 0;
        return tbl_conform_column(&as_list, c, to, by_name, out, err);
    }
    if (to->type == HS_TYPE_LIST || to->type == HS_TYPE_MAP) {
        if (from->type != to->type || c->n_children != 1 || from->n_children != 1) {
            hs_col_free(c);
            return hs_err_set(err, HS_INVALID, "column \"%s\": expected %s, got %s", to->name,
                              hs_type_name(to->type), hs_type_name(from->type));
        }
        hs_column *child = c->children[0];
        c->children[0] = NULL;
        hs_status st = tbl_conform_column(&from->children[0], child, &to->children[0], by_name,
                                          &c->children[0], err);
        if (st != HS_OK) {
            hs_col_free(c);
            return st;
        }
        *out = c;
        return HS_OK;
    }
    if (same_physical(from, to) ||
        (from->type == HS_TYPE_NA && to->type == HS_TYPE_NA)) {
        *out = c;
        return HS_OK;
    }
    if (from->type == HS_TYPE_NA) {
        int64_t n = c->length;
        hs_col_free(c);
        return null_column(to, n, out, err);
    }
    return cast_column(from, c, to, out, err);
}

hs_status tbl_batch_from_cols(const hs_field *schema, hs_column **cols, int n, int64_t n_rows,
                              hs_batch **out, hs_error *err)
{
    *out = NULL;
    hs_batch *b = hs_calloc(1, sizeof *b);
    hs_status st = b ? HS_OK : HS_NOMEM;
    if (st == HS_OK && hs_field_copy(schema, &b->schema) != HS_OK)
        st = HS_NOMEM;
    if (st == HS_OK && n > 0 && !(b->cols = hs_calloc((size_t)n, sizeof(hs_column *))))
        st = HS_NOMEM;
    if (st != HS_OK) {
        for (int i = 0; i < n; i++)
            hs_col_free(cols[i]);
        hs_batch_free(b);
        return hs_err_nomem(err, sizeof *b);
    }
    for (int i = 0; i < n; i++)
        b->cols[i] = cols[i];
    b->n_cols = n;
    b->n_rows = n_rows;
    *out = b;
    return HS_OK;
}

hs_status tbl_conform_batch(hs_batch *b, const hs_field *schema, bool by_name, hs_batch **out,
                            hs_error *err)
{
    *out = NULL;
    /* treat the batch as one struct column */
    hs_column root = {.type = HS_TYPE_STRUCT, .length = b->n_rows, .n_children = b->n_cols,
                      .children = b->cols};
    hs_column *rc = hs_calloc(1, sizeof *rc);
    if (!rc) {
        hs_batch_free(b);
        return hs_err_nomem(err, sizeof *rc);
    }
    *rc = root;
    hs_field from = b->schema;
    int64_t n_rows = b->n_rows;
    b->cols = NULL;
    b->n_cols = 0;
    hs_column *res = NULL;
    hs_status st = tbl_conform_column(&from, rc, schema, by_name, &res, err);
    hs_batch_free(b); /* frees the schema `from` pointed to (no longer used) */
    if (st != HS_OK)
        return st;
    st = tbl_batch_from_cols(schema, res->children, res->n_children, n_rows, out, err);
    hs_free(res->children);  /* the pointers moved into the batch */
    res->children = NULL;
    res->n_children = 0;
    hs_col_free(res);
    return st;
}

/* ------------------------------------------------------------------ */
/* reading one data file                                               */

static bool is_meta_id(int32_t id)
{
    return id == ICE_FIELD_ID_ROW_ID || id == ICE_FIELD_ID_LAST_UPDATED_SEQ ||
           id == ICE_FIELD_ID_FILE_PATH || id == ICE_FIELD_ID_POS;
}

static int file_col_by_id(const hs_field *fs, const hs_field *want)
{
    for (int k = 0; k < fs->n_children; k++)
        if (fs->children[k].field_id == want->field_id)
            return k;
    return -1;
}

static bool file_has_ids(const hs_field *fs)
{
    for (int k = 0; k < fs->n_children; k++)
        if (fs->children[k].field_id >= 0)
            return true;
    return false;
}

/* A metadata column for rows at file positions pos[0..n). */
static hs_status meta_column(const tbl_plan_file *pf, const hs_field *f, const hs_column *stored,
                             const uint32_t *pos, int64_t n, hs_column **out, hs_error *err)
{
    HS_TRY(hs_col_create(f, n, out, err));
    hs_column *c = *out;
    hs_status st = HS_OK;
    if (f->field_id == ICE_FIELD_ID_FILE_PATH) {
        size_t len = strlen(pf->path);
        for (int64_t i = 0; i < n && st == HS_OK; i++)
            st = hs_col_append_bytes(c, pf->path, len);
    } else if (f->field_id == ICE_FIELD_ID_POS) {
        for (int64_t i = 0; i < n && st == HS_OK; i++) {
            int64_t v = pos[i];
            st = hs_col_append_fixed(c, &v);
        }
    } else {
        bool row_id = f->field_id == ICE_FIELD_ID_ROW_ID;
        for (int64_t i = 0; i < n && st == HS_OK; i++) {
            if (stored && stored->type == HS_TYPE_INT64 && hs_col_is_valid(stored, i)) {
                st = hs_col_append_fixed(c, &HS_COL_VALUES(stored, int64_t)[i]);
                continue;
            }
            if (!pf->has_first_row_id) {
                st = hs_col_append_null(c);
                continue;
            }
            int64_t v = row_id ? pf->first_row_id + (int64_t)pos[i] : pf->data_seq;
            st = hs_col_append_fixed(c, &v);
        }
    }
    if (st != HS_OK) {
        hs_col_free(c);
        *out = NULL;
        return hs_err_nomem(err, (size_t)n);
    }
    return HS_OK;
}

/* ---- one open data file ---- */

typedef struct frd {
    const tbl_plan_file *pf;
    hs_file *f;
    pq_reader *r;
    const hs_field *fs;         /* the file's schema (borrowed from r) */
    bool ids;                   /* columns matched by field id (else by name) */
    int64_t n_rows;
    tbl_file_report *rep;       /* borrowed */
    pq_par_fn par;              /* a batch's columns at once (tbl_read_opts) */
    void *par_ctx;
    const struct tbl_vcol *vcols;   /* verdict columns of this read (dictionary filter) */
    int n_vcols;
} frd;

/* A verdict column (the dictionary filter, see tbl_read_file_ex): the filter
 * terms that read only string column `src` of the read schema, judged by
 * the reader per dictionary entry (pq_verdict), read as a BOOL column of
 * field id TBL_VCOL_ID0 + its index. */
#define TBL_VCOL_ID0 2100000000
#define TBL_VCOL_MAX 16
typedef struct tbl_vcol {
    int src;                    /* read-schema column */
    const hs_field *src_field;  /* borrowed from the read schema */
    hs_field one;               /* STRUCT of src_field alone: the batches judged */
    ex_expr *terms;             /* the AND of its terms (borrows the filter's nodes) */
} tbl_vcol;

static hs_status vcol_judge(void *ctx, const hs_column *values, uint8_t *verdict, hs_error *err)
{
    const tbl_vcol *v = ctx;
    hs_column *col = (hs_column *)values;   /* only read */
    hs_batch b = {.schema = v->one, .n_rows = values->length, .n_cols = 1, .cols = &col};
    int64_t m;
    return ex_eval_filter(v->terms, &b, NULL, verdict, &m, err);
}

static hs_status frd_open(frd *fr, const tbl_plan_file *pf, tbl_file_report *rep, hs_error *err)
{
    memset(fr, 0, sizeof *fr);
    fr->pf = pf;
    fr->rep = rep;
    HS_TRY(hs_io_open(pf->path, &fr->f, err));
    hs_status st = pq_reader_open(fr->f, &fr->r, err);
    if (st != HS_OK) {
        hs_err_prefix(err, "%s", pf->path);
        hs_file_close(fr->f);
        fr->f = NULL;
        return st;
    }
    fr->fs = pq_reader_schema(fr->r);
    fr->ids = file_has_ids(fr->fs);
    fr->n_rows = pq_reader_num_rows(fr->r);
    if (fr->n_rows > UINT32_MAX) {
        pq_reader_close(fr->r);
        hs_file_close(fr->f);
        memset(fr, 0, sizeof *fr);
        return hs_err_set(err, HS_UNSUPPORTED, "%s: data files of more than 2^32 rows are not "
                          "supported", pf->path);
    }
    return HS_OK;
}

static void frd_close(frd *fr)
{
    pq_reader_close(fr->r);
    hs_file_close(fr->f);
    memset(fr, 0, sizeof *fr);
}

/* The file's top-level column holding `want`, or -1 (metadata columns: only
 * the stored _row_id / _last_updated_sequence_number of v3 files). */
static int frd_source(const frd *fr, const hs_field *want)
{
    if (is_meta_id(want->field_id)) {
        if (want->field_id != ICE_FIELD_ID_ROW_ID &&
            want->field_id != ICE_FIELD_ID_LAST_UPDATED_SEQ)
            return -1;
        return file_col_by_id(fr->fs, want);
    }
    return fr->ids ? file_col_by_id(fr->fs, want) : match_child(fr->fs, want, true);
}

/* Receives one batch of wanted columns (cols[i] for want[i]; the callback
 * takes what it keeps and sets those slots to NULL) of n rows at file
 * positions pos[0..n). */
typedef hs_status (*frd_fn)(void *ctx, hs_column **cols, int64_t n, const uint32_t *pos,
                            hs_error *err);

/* A selection of many scattered rows is read in whole blocks of FRD_BLOCK
 * rows and cut down afterwards when some column read is nested: the reader
 * pays per run of selected rows there, and decoding a block costs little
 * more than skipping through it.  Flat columns are gathered row by row
 * inside each page (parquet/reader.c, cur_gather): no blocks. */
#define FRD_BLOCK 256

static bool frd_coarsen_pays(const frd *fr, const int *cols, int n_cols,
                             const roaring_bitmap_t *rows)
{
    bool nested = false;
    for (int j = 0; j < n_cols && !nested; j++) {
        hs_type t = fr->fs->children[cols[j]].type;
        nested = t == HS_TYPE_STRUCT || t == HS_TYPE_LIST || t == HS_TYPE_MAP ||
                 t == HS_TYPE_FIXED_LIST;
    }
    uint64_t card = roaring_bitmap_get_cardinality(rows);
    return nested && card > 1 && (int64_t)card * 1024 >= fr->n_rows;
}

/* The blocks of FRD_BLOCK rows holding a row of `rows`. */
static roaring_bitmap_t *frd_coarsen(const roaring_bitmap_t *rows, int64_t n_rows)
{
    roaring_bitmap_t *c = roaring_bitmap_create();
    if (!c)
        return NULL;
    roaring_uint32_iterator_t it;
    roaring_init_iterator(rows, &it);
    int64_t last = -1;
    while (it.has_value) {
        int64_t blk = it.current_value / FRD_BLOCK;
        if (blk != last) {
            int64_t lo = blk * FRD_BLOCK, hi = lo + FRD_BLOCK < n_rows ? lo + FRD_BLOCK : n_rows;
            if (hi > lo)
                roaring_bitmap_add_range(c, (uint64_t)lo, (uint64_t)hi);
            last = blk;
            /* jump to the next block */
            if (!roaring_move_uint32_iterator_equalorlarger(&it, (uint32_t)(lo + FRD_BLOCK)))
                break;
            continue;
        }
        roaring_advance_uint32_iterator(&it);
    }
    return c;
}

/* Reads the wanted fields (table columns by field id, or metadata columns)
 * of the rows in `rows` (NULL = all; at most the file's row count), batch by
 * batch, conformed to the wanted types. */
static hs_status frd_read(frd *fr, const hs_field *const *want, int n, const roaring_bitmap_t *rows,
                          int64_t batch_size, frd_fn fn, void *ctx, hs_error *err)
{
    int *src = hs_calloc((size_t)n + 1, sizeof *src);
    int *stored = hs_calloc((size_t)n + 1, sizeof *stored);
    int *cols = hs_calloc((size_t)n + 1, sizeof *cols);
    hs_column **out = hs_calloc((size_t)n + 1, sizeof *out);
    uint32_t *pos = hs_malloc((size_t)batch_size * sizeof *pos + 4);
    if (!src || !stored || !cols || !out || !pos) {
        hs_free(src);
        hs_free(stored);
        hs_free(cols);
        hs_free(out);
        hs_free(pos);
        return hs_err_nomem(err, (size_t)batch_size * 4);
    }
    int n_cols = 0;
    pq_verdict *vds = hs_calloc((size_t)n + 1, sizeof *vds);
    if (!vds) {
        hs_free(src);
        hs_free(stored);
        hs_free(cols);
        hs_free(out);
        hs_free(pos);
        return hs_err_nomem(err, 64);
    }
    bool any_vd = false;
    for (int i = 0; i < n; i++) {
        int v = want[i]->field_id - TBL_VCOL_ID0;
        src[i] = stored[i] = -1;
        if (v >= 0 && v < fr->n_vcols) {
            /* a verdict column: a scan column of its own, judged by the reader */
            int k = frd_source(fr, fr->vcols[v].src_field);
            if (k < 0)
                continue;   /* not reached: tbl_read_file_ex checked the file */
            vds[n_cols] = (pq_verdict){vcol_judge, (void *)&fr->vcols[v]};
            any_vd = true;
            src[i] = n_cols;
            cols[n_cols++] = k;
            continue;
        }
        int k = frd_source(fr, want[i]);
        if (k < 0)
            continue;
        int at = -1;
        for (int j = 0; j < n_cols; j++)
            if (cols[j] == k && !vds[j].fn)
                at = j;
        if (at < 0) {
            at = n_cols;
            cols[n_cols++] = k;
        }
        if (is_meta_id(want[i]->field_id))
            stored[i] = at;
        else
            src[i] = at;
    }
    /* many scattered rows: read their blocks, keep them (exact) */
    const roaring_bitmap_t *exact = NULL;
    roaring_bitmap_t *coarse = NULL;
    roaring_uint32_iterator_t eit;
    int64_t *keep = NULL;
    if (rows && n_cols > 0 && frd_coarsen_pays(fr, cols, n_cols, rows)) {
        coarse = frd_coarsen(rows, fr->n_rows);
        keep = hs_malloc((size_t)batch_size * sizeof *keep + 8);
        if (coarse && keep && roaring_bitmap_get_cardinality(coarse) >
                                  roaring_bitmap_get_cardinality(rows)) {
            exact = rows;
            rows = coarse;
            roaring_init_iterator(exact, &eit);
        }
    }
    roaring_uint32_iterator_t it;
    if (rows)
        roaring_init_iterator(rows, &it);
    int64_t next = 0;   /* next position when rows == NULL */
    pq_scan *s = NULL;
    hs_status st = HS_OK;
    if (n_cols > 0) {
        pq_scan_options so = {.columns = cols, .n_columns = n_cols, .rows = rows,
                              .batch_size = batch_size, .par = fr->par, .par_ctx = fr->par_ctx,
                              .verdicts = any_vd ? vds : NULL};
        st = pq_scan_open(fr->r, &so, &s, err);
        if (st != HS_OK)
            hs_err_prefix(err, "%s", fr->pf->path);
    }
    while (st == HS_OK) {
        hs_batch *fb = NULL;
        int64_t m;
        if (s) {
            st = pq_scan_next(s, &fb, err);
            if (st != HS_OK) {
                hs_err_prefix(err, "%s", fr->pf->path);
                break;
            }
            if (!fb)
                break;
            m = fb->n_rows;
        } else {
            /* no stored column is needed: only positions */
            int64_t left = rows ? INT64_MAX : fr->n_rows - next;
            m = left < batch_size ? left : batch_size;
        }
        if (rows) {
            int64_t got = roaring_read_uint32_iterator(&it, pos, (uint32_t)m);
            if (!s)
                m = got;
            else if (got != m)
                st = hs_err_set(err, HS_INTERNAL, "%s: the reader returned %lld rows where the "
                                "selection has %lld", fr->pf->path, (long long)m, (long long)got);
        } else {
            for (int64_t i = 0; i < m; i++)
                pos[i] = (uint32_t)(next + i);
        }
        next += m;
        if (st != HS_OK || m == 0) {
            hs_batch_free(fb);
            break;
        }
        if (s)
            fr->rep->rows_decoded += m;
        for (int i = 0; i < n && st == HS_OK; i++) {
            const hs_field *w = want[i];
            if (is_meta_id(w->field_id)) {
                st = meta_column(fr->pf, w, stored[i] >= 0 ? fb->cols[stored[i]] : NULL, pos, m,
                                 &out[i], err);
            } else if (src[i] >= 0 && fb->cols[src[i]] && vds[src[i]].fn) {
                out[i] = fb->cols[src[i]];   /* verdicts: BOOL, as wanted */
                fb->cols[src[i]] = NULL;
            } else if (src[i] >= 0 && fb->cols[src[i]]) {
                hs_column *c = fb->cols[src[i]];
                fb->cols[src[i]] = NULL;
                st = tbl_conform_column(&fb->schema.children[src[i]], c, w, !fr->ids, &out[i],
                                        err);
                if (st != HS_OK)
                    hs_err_prefix(err, "%s", fr->pf->path);
            } else {
                st = missing_column(w, "iceberg.initial-default", m, &out[i], err);
            }
        }
        hs_batch_free(fb);
        if (st == HS_OK && exact) {
            /* keep the exact rows of the blocks read */
            int64_t k = 0;
            for (int64_t i = 0; i < m; i++) {
                while (eit.has_value && eit.current_value < pos[i])
                    roaring_advance_uint32_iterator(&eit);
                if (eit.has_value && eit.current_value == pos[i])
                    keep[k++] = i;
            }
            for (int i = 0; i < n && st == HS_OK && k < m; i++) {
                hs_column *t = NULL;
                st = hs_col_take(out[i], keep, k, &t, err);
                hs_col_free(out[i]);
                out[i] = t;
            }
            for (int64_t i = 0; i < k; i++)
                pos[i] = pos[keep[i]];
            m = k;
        }
        if (st == HS_OK && m > 0)
            st = fn(ctx, out, m, pos, err);
        for (int i = 0; i < n; i++) {
            hs_col_free(out[i]);
            out[i] = NULL;
        }
    }
    if (s) {
        const pq_scan_stats *ps = pq_scan_get_stats(s);
        pq_scan_stats *acc = &fr->rep->pq;
        acc->row_groups_read += ps->row_groups_read;
        acc->row_groups_skipped += ps->row_groups_skipped;
        acc->pages_decoded += ps->pages_decoded;
        acc->pages_skipped += ps->pages_skipped;
        acc->bytes_read += ps->bytes_read;
        acc->rows_emitted += ps->rows_emitted;
    }
    pq_scan_close(s);
    tbl_bitmap_free(coarse);
    hs_free(keep);
    hs_free(src);
    hs_free(stored);
    hs_free(cols);
    hs_free(out);
    hs_free(pos);
    hs_free(vds);
    return st;
}

/* ---- statistics pruning ---- */

/* A filter column usable for statistics pruning in this file. */
typedef struct stat_leaf {
    int32_t field_id;
    int leaf;                       /* column chunk index */
    const pq_schema_element *el;
    const hs_field *ff;             /* the file's field */
    bool bytes;                     /* compare as bytes */
} stat_leaf;

typedef struct stat_ctx {
    const stat_leaf *leaves;
    int n_leaves;
    const pq_row_group *rg;         /* row-group level */
    int only;                       /* page level: the one known leaf (index into leaves) */
    const pq_column_index *ci;
    int page;
    int64_t rows;
} stat_ctx;

static const hs_field *find_field_id(const hs_field *f, int32_t id)
{
    /* through structs only: a field under a list or map is not one value per row */
    for (int i = 0; i < f->n_children; i++) {
        const hs_field *c = &f->children[i];
        if (c->field_id == id)
            return c;
        if (c->type == HS_TYPE_STRUCT) {
            const hs_field *r = find_field_id(c, id);
            if (r)
                return r;
        }
    }
    return NULL;
}

static const hs_field *expr_field(const pr_expr *e, int32_t id)
{
    if (!e)
        return NULL;
    if (e->kind == PR_E_AND || e->kind == PR_E_OR) {
        const hs_field *f = expr_field(e->l, id);
        return f ? f : expr_field(e->r, id);
    }
    return e->field && e->field_id == id ? e->field : NULL;
}

/* Whether a statistic of file field ff (physical element el) compares like
 * values of table field tf. */
static bool stats_usable(const pq_schema_element *el, const hs_field *ff, const hs_field *tf,
                         const pq_file_meta *fm, bool *bytes)
{
    if (!el->has_type || ff->type != tf->type)
        return false;
    *bytes = false;
    switch (ff->type) {
    case HS_TYPE_BOOL:
        return el->type == PQ_BOOLEAN;
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_DATE32:
        return el->type == PQ_INT32;
    case HS_TYPE_TIME32:
        return el->type == PQ_INT32 && ff->unit == tf->unit;
    case HS_TYPE_INT64:
        return el->type == PQ_INT64;
    case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP:
        return el->type == PQ_INT64 && ff->unit == tf->unit;
    case HS_TYPE_FLOAT32:
        return el->type == PQ_FLOAT;
    case HS_TYPE_FLOAT64:
        return el->type == PQ_DOUBLE;
    case HS_TYPE_STRING: case HS_TYPE_BINARY:
        /* byte order is only trustworthy with a TypeDefinedOrder column order */
        *bytes = true;
        return el->type == PQ_BYTE_ARRAY && fm->n_column_orders > 0;
    default:
        return false;   /* unsigned, decimals, fixed, float16, INT96: no pruning */
    }
}

static bool stat_val(const stat_leaf *l, pq_bytes b, pr_val *v)
{
    if (!b.p)
        return false;
    memset(v, 0, sizeof *v);
    switch (l->el->type) {
    case PQ_BOOLEAN:
        if (b.len < 1)
            return false;
        v->kind = PR_V_I64;
        v->i = b.p[0] & 1;
        return true;
    case PQ_INT32: {
        int32_t x;
        if (b.len != 4)
            return false;
        memcpy(&x, b.p, 4);
        v->kind = PR_V_I64;
        v->i = x;
        return true;
    }
    case PQ_INT64:
        if (b.len != 8)
            return false;
        v->kind = PR_V_I64;
        memcpy(&v->i, b.p, 8);
        return true;
    case PQ_FLOAT: {
        float x;
        if (b.len != 4)
            return false;
        memcpy(&x, b.p, 4);
        v->kind = PR_V_F64;
        v->f = x;
        return true;
    }
    case PQ_DOUBLE:
        if (b.len != 8)
            return false;
        v->kind = PR_V_F64;
        memcpy(&v->f, b.p, 8);
        return true;
    case PQ_BYTE_ARRAY:
        v->kind = PR_V_BYTES;
        v->p = b.p;
        v->n = b.len;
        return true;
    default:
        return false;
    }
}

static void bounds_from(const stat_leaf *l, pq_bytes lo, pq_bytes hi, pr_col_stats *o)
{
    o->has_lower = stat_val(l, lo, &o->lower);
    o->has_upper = stat_val(l, hi, &o->upper);
    /* Parquet bounds exclude NaN, which sorts above every value here: a float
     * maximum is no upper bound (the minimum stays a lower bound) */
    if (o->has_upper && o->upper.kind == PR_V_F64)
        o->has_upper = false;
}

static bool stats_fn(void *vctx, int32_t id, const hs_field *field, pr_col_stats *o)
{
    const stat_ctx *c = vctx;
    int k = -1;
    for (int i = 0; i < c->n_leaves; i++)
        if (c->leaves[i].field_id == id)
            k = i;
    if (k < 0 || (c->only >= 0 && k != c->only))
        return false;
    const stat_leaf *l = &c->leaves[k];
    o->value_count = c->rows;
    if (c->only < 0) {
        const pq_column_chunk *cc = &c->rg->columns[l->leaf];
        if (!cc->has_meta_data || !cc->meta_data.has_statistics)
            return false;
        const pq_statistics *s = &cc->meta_data.statistics;
        if (s->min_value.p && s->max_value.p)
            bounds_from(l, s->min_value, s->max_value, o);
        else if (!l->bytes && s->min.p && s->max.p)
            bounds_from(l, s->min, s->max, o);   /* legacy: signed order, fine for these */
        if (s->has_null_count)
            o->null_count = s->null_count;
        return true;
    }
    const pq_column_index *ci = c->ci;
    int p = c->page;
    if (ci->has_null_counts && ci->null_counts)
        o->null_count = ci->null_counts[p];
    if (ci->null_pages && ci->null_pages[p]) {
        o->null_count = c->rows;
        return true;
    }
    if (ci->min_values && ci->max_values)
        bounds_from(l, ci->min_values[p], ci->max_values[p], o);
    return true;
}

/* Rows of the file that row-group and page statistics cannot rule out:
 * *out = a new bitmap, or NULL when nothing was ruled out.  Row groups are
 * judged on all filter columns together; pages on one column at a time (each
 * column's pages have their own boundaries), which is sound because every
 * exclusion holds on its own. */
static hs_status stats_select(frd *fr, const pr_filter *flt, roaring_bitmap_t **out,
                              hs_error *err)
{
    *out = NULL;
    if (!fr->ids || pr_filter_is_true(flt))
        return HS_OK;
    const pq_file_meta *fm = pq_reader_meta(fr->r);
    hs_buf ids = {0};
    if (pr_filter_field_ids(flt, &ids) != HS_OK) {
        hs_buf_free(&ids);
        return hs_err_nomem(err, 64);
    }
    size_t n_ids = HS_VEC_LEN(&ids, int32_t);
    stat_leaf *leaves = hs_calloc(n_ids + 1, sizeof *leaves);
    if (!leaves) {
        hs_buf_free(&ids);
        return hs_err_nomem(err, n_ids * sizeof *leaves);
    }
    int n_leaves = 0;
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = HS_VEC_AT(&ids, int32_t, i);
        const hs_field *tf = expr_field(flt->root, id);
        const hs_field *ff = find_field_id(fr->fs, id);
        if (!tf || !ff)
            continue;
        int leaf = 0;
        for (int k = 1; k < fm->n_schema; k++) {
            const pq_schema_element *el = &fm->schema[k];
            if (el->num_children > 0)
                continue;
            if (el->has_field_id && el->field_id == id) {
                stat_leaf *l = &leaves[n_leaves];
                if (stats_usable(el, ff, tf, fm, &l->bytes)) {
                    l->field_id = id;
                    l->leaf = leaf;
                    l->el = el;
                    l->ff = ff;
                    n_leaves++;
                }
                break;
            }
            leaf++;
        }
    }
    hs_buf_free(&ids);
    roaring_bitmap_t *keep = NULL;
    hs_status st = HS_OK;
    int64_t first = 0;
    for (int g = 0; n_leaves > 0 && g < fm->n_row_groups && st == HS_OK; g++) {
        const pq_row_group *rg = &fm->row_groups[g];
        int64_t nr = rg->num_rows;
        stat_ctx c = {leaves, n_leaves, rg, -1, NULL, -1, nr};
        bool ok = true;
        for (int i = 0; i < n_leaves; i++)
            ok &= leaves[i].leaf < rg->n_columns;
        if (ok && nr > 0 && !pr_expr_might_match(flt->root, stats_fn, &c)) {
            if (!keep && !(keep = roaring_bitmap_from_range(0, (uint64_t)fr->n_rows, 1)))
                st = hs_err_nomem(err, 64);
            else
                roaring_bitmap_remove_range(keep, (uint64_t)first, (uint64_t)(first + nr));
            first += nr;
            continue;
        }
        for (int i = 0; ok && i < n_leaves && st == HS_OK; i++) {
            const pq_column_index *ci;
            const pq_offset_index *oi;
            st = pq_reader_page_index(fr->r, g, leaves[i].leaf, &ci, &oi, err);
            if (st != HS_OK || !ci || !oi || ci->n_pages != oi->n_pages)
                continue;
            for (int p = 0; p < oi->n_pages && st == HS_OK; p++) {
                int64_t ps = oi->pages[p].first_row_index;
                int64_t pe = p + 1 < oi->n_pages ? oi->pages[p + 1].first_row_index : nr;
                if (ps < 0 || pe > nr || pe <= ps)
                    continue;
                stat_ctx pc = {leaves, n_leaves, rg, i, ci, p, pe - ps};
                if (pr_expr_might_match(flt->root, stats_fn, &pc))
                    continue;
                if (!keep && !(keep = roaring_bitmap_from_range(0, (uint64_t)fr->n_rows, 1)))
                    st = hs_err_nomem(err, 64);
                else
                    roaring_bitmap_remove_range(keep, (uint64_t)(first + ps),
                                                (uint64_t)(first + pe));
            }
        }
        first += nr;
    }
    hs_free(leaves);
    if (st != HS_OK) {
        tbl_bitmap_free(keep);
        if (st == HS_CORRUPT || st == HS_IO)
            hs_err_prefix(err, "%s", fr->pf->path);
        return st;
    }
    *out = keep;
    return HS_OK;
}

/* ---- the file read (tbl_read_file_ex) ---- */

/* How a column of the read schema is produced. */
typedef struct rd_state {
    const tbl_plan_file *pf;
    const hs_field *rs;
    const tbl_pred *pred;          /* NULL: no residual evaluation */
    bool pred_cheap;               /* no pred, or tbl_pred_is_cheap: runtime filters after it */
    tbl_rtfilter **rtf;            /* runtime filters in use (rtfilter.h) */
    int n_rtf;
    tbl_emit_fn emit;
    void *ctx;
    tbl_file_report *rep;
    roaring_bitmap_t *hits;        /* passing positions, or NULL */
    int n_out;
    hs_field out_schema;           /* rs's first n_out columns */
    /* the columns of the current read: read-schema indexes */
    int *which;
    int n_which;
    hs_field read_schema;          /* their fields (batch schema for evaluation) */
    uint8_t *sel;
    int64_t *idx;
    uint32_t *hit_pos;
    size_t cap;
    /* two phases */
    hs_column **acc;               /* per output column: passing rows of phase 1, or NULL */
    int64_t acc_off;
    hs_buf mask;                   /* phase 1 verdict per selected row (dense phase 2) */
    size_t mask_off;
    int64_t pass_runs;             /* runs of passing rows in phase 1's batches */
    bool sparse;
} rd_state;

static hs_status rd_reserve(rd_state *r, int64_t n, hs_error *err)
{
    if ((size_t)n <= r->cap)
        return HS_OK;
    hs_free(r->sel);
    hs_free(r->idx);
    hs_free(r->hit_pos);
    r->cap = (size_t)n;
    r->sel = hs_malloc(r->cap + 1);
    r->idx = hs_malloc((r->cap + 1) * sizeof *r->idx);
    r->hit_pos = hs_malloc((r->cap + 1) * sizeof *r->hit_pos);
    if (!r->sel || !r->idx || !r->hit_pos) {
        r->cap = 0;
        return hs_err_nomem(err, (size_t)n * 13);
    }
    return HS_OK;
}

static hs_status sub_schema(const hs_field *rs, const int *which, int n, hs_field *out,
                            hs_error *err)
{
    hs_field_init(out, "", HS_TYPE_STRUCT, false);
    for (int i = 0; i < n; i++) {
        hs_field copy = {0};
        if (hs_field_copy(&rs->children[which[i]], &copy) != HS_OK ||
            hs_field_add_child(out, &copy) != HS_OK) {
            hs_field_clear(&copy);
            return hs_err_nomem(err, 64);
        }
    }
    return HS_OK;
}

/* A runtime filter that has dropped at least half of the rows it checked
 * (or has checked none yet): applied before a residual filter that is not
 * all cheap terms (tbl_pred_is_cheap), whose terms (string comparisons, LIKE)
 * then run only on the rows it keeps (TPC-H Q19: lineitem's l_partkey
 * filter keeps 0.3% of the rows, its shipmode/shipinstruct terms ran on
 * all of them).  A filter that keeps most rows, or any filter beside a
 * cheap residual filter (date comparisons cost less than a key lookup:
 * TPC-H Q3), is applied after, to the rows the residual filter keeps. */
static bool rtf_selective(tbl_rtfilter *rf)
{
    int64_t in = atomic_load_explicit(&rf->rows_in, memory_order_relaxed);
    int64_t out = atomic_load_explicit(&rf->rows_out, memory_order_relaxed);
    return in == 0 || out * 2 <= in;
}

/* Applies the runtime filters (the selective ones when `early`, the others
 * when not: rtf_selective) to the rows of b that r->sel selects (*nm of
 * them): a row whose key is NULL or not in a filter's set is dropped.
 * done[f] records the filters applied early (one batch's pass). */
static void rd_rtfilter(rd_state *r, const hs_batch *b, int64_t *nm, bool early, bool *done)
{
    for (int f = 0; f < r->n_rtf && *nm > 0; f++) {
        tbl_rtfilter *rf = r->rtf[f];
        if (atomic_load_explicit(&rf->off, memory_order_relaxed))
            continue;
        if (early ? !rtf_selective(rf) : done[f])
            continue;
        if (early)
            done[f] = true;
        int j = -1;
        for (int k = 0; k < r->n_which && j < 0; k++)
            if (r->which[k] == rf->col)
                j = k;
        const hs_column *c = j >= 0 ? b->cols[j] : NULL;
        if (!c || (c->type != HS_TYPE_INT32 && c->type != HS_TYPE_INT64))
            continue;
        int64_t n = b->n_rows, before = *nm;
        if (c->null_count > 0 && c->validity.data)
            for (int64_t i = 0; i < n; i++)
                r->sel[i] = r->sel[i] && hs_bit_get(c->validity.data, i);
        *nm = hs_keyfilter_apply(rf->kf, c->values.data, c->type == HS_TYPE_INT32 ? 4 : 8, n,
                                 r->sel);
        int64_t in = atomic_fetch_add(&rf->rows_in, before) + before;
        int64_t out = atomic_fetch_add(&rf->rows_out, *nm) + *nm;
        if (in >= TBL_RTF_PROBE && out * 10 > in * 9)
            atomic_store(&rf->off, true);
    }
}

/* Evaluates the residual filter over the columns of one read (taken into a
 * batch, returned in *b): r->sel, r->idx (passing rows), *m; records hits. */
static hs_status rd_eval(rd_state *r, hs_column **cols, int64_t n, const uint32_t *pos,
                         hs_batch **b, int64_t *m, hs_error *err)
{
    *b = NULL;
    HS_TRY(rd_reserve(r, n, err));
    hs_status st = tbl_batch_from_cols(&r->read_schema, cols, r->n_which, n, b, err);
    for (int i = 0; i < r->n_which; i++)
        cols[i] = NULL;   /* taken, also on failure */
    HS_TRY(st);
    int64_t nm = n;
    bool done[TBL_MAX_RTF] = {false};
    if (n)
        memset(r->sel, 1, (size_t)n);
    if (r->n_rtf && !r->pred_cheap)
        rd_rtfilter(r, *b, &nm, true, done);
    if (r->pred && nm > 0)   /* reads and rewrites r->sel: only its rows are evaluated */
        st = tbl_pred_eval(r->pred, *b, nm < n ? r->sel : NULL, r->sel, &nm, err);
    if (st != HS_OK) {
        hs_batch_free(*b);
        *b = NULL;
        return st;
    }
    if (r->n_rtf)
        rd_rtfilter(r, *b, &nm, false, done);
    int64_t k = 0;
    if (nm == n) {   /* every row passes: r->idx is read only when some do not */
        k = n;
        if (r->hits && n)
            memcpy(r->hit_pos, pos, (size_t)n * sizeof *pos);
    } else {
        for (int64_t i = 0; i < n; i++)
            if (r->sel[i]) {
                r->hit_pos[k] = pos[i];
                r->idx[k++] = i;
            }
    }
    if (r->hits && k)
        roaring_bitmap_add_many(r->hits, (size_t)k, r->hit_pos);
    r->rep->rows_matched += k;
    *m = k;
    return HS_OK;
}

/* Emits columns [0, n_out) of b's first columns (b's columns follow r->which,
 * whose first n_out entries are 0..n_out-1), keeping rows r->idx[0..m). */
static hs_status rd_emit_from(rd_state *r, hs_batch *b, int64_t m, hs_error *err)
{
    if (!r->emit || m == 0 || r->n_out == 0) {
        hs_batch_free(b);
        return HS_OK;
    }
    hs_column **cols = hs_calloc((size_t)r->n_out + 1, sizeof *cols);
    hs_status st = cols ? HS_OK : hs_err_nomem(err, 64);
    for (int i = 0; i < r->n_out && st == HS_OK; i++) {
        if (m == b->n_rows) {
            cols[i] = b->cols[i];
            b->cols[i] = NULL;
        } else {
            st = hs_col_take(b->cols[i], r->idx, m, &cols[i], err);
        }
    }
    hs_batch_free(b);
    hs_batch *ob = NULL;
    if (st == HS_OK)
        st = tbl_batch_from_cols(&r->out_schema, cols, r->n_out, m, &ob, err);
    else
        for (int i = 0; cols && i < r->n_out; i++)
            hs_col_free(cols[i]);
    hs_free(cols);
    if (st == HS_OK)
        st = r->emit(r->ctx, ob, err);
    return st;
}

/* One phase: the columns read include every output column. */
static hs_status cb_single(void *vctx, hs_column **cols, int64_t n, const uint32_t *pos,
                           hs_error *err)
{
    rd_state *r = vctx;
    hs_batch *b = NULL;
    int64_t m = 0;
    HS_TRY(rd_eval(r, cols, n, pos, &b, &m, err));
    return rd_emit_from(r, b, m, err);
}

/* Phase 1: filter columns; keeps the passing rows of those also in the output. */
static hs_status cb_phase1(void *vctx, hs_column **cols, int64_t n, const uint32_t *pos,
                           hs_error *err)
{
    rd_state *r = vctx;
    hs_batch *b = NULL;
    int64_t m = 0;
    HS_TRY(rd_eval(r, cols, n, pos, &b, &m, err));
    for (int64_t i = 0, prev = 0; i < n; i++) {
        r->pass_runs += r->sel[i] && !prev;
        prev = r->sel[i];
    }
    hs_status st = hs_buf_append(&r->mask, r->sel, (size_t)n) == HS_OK ? HS_OK
                                                                        : hs_err_nomem(err, (size_t)n);
    for (int j = 0; j < r->n_which && st == HS_OK && m > 0; j++) {
        int o = r->which[j];
        if (o >= r->n_out || !r->acc[o])
            continue;
        hs_column *t = NULL;
        if (m == n)
            st = hs_col_append_column(r->acc[o], b->cols[j], err);
        else if ((st = hs_col_take(b->cols[j], r->idx, m, &t, err)) == HS_OK)
            st = hs_col_append_column(r->acc[o], t, err);
        hs_col_free(t);
    }
    hs_batch_free(b);
    return st;
}

/* Phase 2: the output columns the filter did not read, for the passing rows
 * (sparse: exactly those were read; dense: all selected rows were read and
 * phase 1's verdicts pick the passing ones). */
static hs_status cb_phase2(void *vctx, hs_column **cols, int64_t n, const uint32_t *pos,
                           hs_error *err)
{
    rd_state *r = vctx;
    int64_t m = n;
    HS_TRY(rd_reserve(r, n, err));
    if (!r->sparse) {
        if (r->mask_off + (size_t)n > r->mask.len)
            return hs_err_set(err, HS_INTERNAL, "%s: second read is longer than the first",
                              r->pf->path);
        const uint8_t *v = r->mask.data + r->mask_off;
        m = 0;
        for (int64_t i = 0; i < n; i++)
            if (v[i])
                r->idx[m++] = i;
        r->mask_off += (size_t)n;
    }
    if (m == 0 || !r->emit)
        return HS_OK;
    hs_column **oc = hs_calloc((size_t)r->n_out + 1, sizeof *oc);
    hs_status st = oc ? HS_OK : hs_err_nomem(err, 64);
    for (int j = 0; j < r->n_which && st == HS_OK; j++) {
        int o = r->which[j];
        if (m == n) {
            oc[o] = cols[j];
            cols[j] = NULL;
        } else {
            st = hs_col_take(cols[j], r->idx, m, &oc[o], err);
        }
    }
    for (int o = 0; o < r->n_out && st == HS_OK; o++)
        if (!oc[o] && r->acc[o])
            st = hs_col_slice(r->acc[o], r->acc_off, m, &oc[o], err);
    r->acc_off += m;
    hs_batch *ob = NULL;
    for (int o = 0; o < r->n_out && st == HS_OK; o++)
        if (!oc[o])
            st = hs_err_set(err, HS_INTERNAL, "%s: output column %d not produced", r->pf->path, o);
    if (st == HS_OK)
        st = tbl_batch_from_cols(&r->out_schema, oc, r->n_out, m, &ob, err);
    else
        for (int o = 0; oc && o < r->n_out; o++)
            hs_col_free(oc[o]);
    hs_free(oc);
    if (st == HS_OK)
        st = r->emit(r->ctx, ob, err);
    return st;
}

static hs_status rd_set_read(rd_state *r, const int *which, int n, hs_error *err)
{
    hs_field_clear(&r->read_schema);
    r->which = (int *)which;
    r->n_which = n;
    return sub_schema(r->rs, which, n, &r->read_schema, err);
}

static hs_status rd_read(rd_state *r, frd *fr, const roaring_bitmap_t *rows, int64_t batch_size,
                         frd_fn fn, hs_error *err)
{
    const hs_field **want = hs_calloc((size_t)r->n_which + 1, sizeof *want);
    if (!want)
        return hs_err_nomem(err, 64);
    for (int i = 0; i < r->n_which; i++)
        want[i] = &r->rs->children[r->which[i]];
    hs_status st = frd_read(fr, want, r->n_which, rows, batch_size, fn, r, err);
    hs_free(want);
    return st;
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

/* The top-level column of root holding field id (itself or nested), or -1. */
static int top_index_of_id(const hs_field *root, int32_t id)
{
    for (int i = 0; i < root->n_children; i++)
        if (contains_id(&root->children[i], id))
            return i;
    return -1;
}

/* Marks in need[] the read-schema columns the filter reads. */
static hs_status filter_columns(const tbl_pred *p, const hs_field *rs, bool *need, hs_error *err)
{
    hs_buf ids = {0};
    if (tbl_pred_field_ids(p, &ids) != HS_OK) {
        hs_buf_free(&ids);
        return hs_err_nomem(err, 64);
    }
    for (size_t i = 0; i < HS_VEC_LEN(&ids, int32_t); i++) {
        int k = top_index_of_id(rs, HS_VEC_AT(&ids, int32_t, i));
        if (k >= 0)
            need[k] = true;
    }
    hs_buf_free(&ids);
    return HS_OK;
}

static bool stored_column(const hs_field *f) { return !is_meta_id(f->field_id); }

/* Selected rows: candidates (clamped), minus deletes, intersected with what
 * statistics allow.  *sel NULL = every row. */
static hs_status select_rows(frd *fr, const tbl_read_opts *o, const roaring_bitmap_t *del,
                             roaring_bitmap_t **sel, hs_error *err)
{
    *sel = NULL;
    roaring_bitmap_t *s = NULL;
    if (o->candidates) {
        if (!(s = roaring_bitmap_copy(o->candidates)))
            return hs_err_nomem(err, 64);
        roaring_bitmap_remove_range(s, (uint64_t)fr->n_rows, (uint64_t)UINT32_MAX + 1);
    }
    if (del && roaring_bitmap_get_cardinality(del) > 0) {
        if (!s && !(s = roaring_bitmap_from_range(0, (uint64_t)fr->n_rows, 1)))
            return hs_err_nomem(err, 64);
        roaring_bitmap_andnot_inplace(s, del);
    }
    if (o->use_stats && o->pred && !o->candidates_exact && !(s && roaring_bitmap_is_empty(s))) {
        roaring_bitmap_t *t = NULL;
        hs_status st = stats_select(fr, o->pred->filter, &t, err);
        if (st != HS_OK) {
            tbl_bitmap_free(s);
            return st;
        }
        if (t) {
            if (s) {
                roaring_bitmap_and_inplace(s, t);
                tbl_bitmap_free(t);
            } else {
                s = t;
            }
            if (roaring_bitmap_is_empty(s))
                fr->rep->pruned_by_stats = true;
        }
    }
    *sel = s;
    return HS_OK;
}

/* Rows per part of a two-phase read (whole row groups, at least this many
 * unless the file ends). */
#define TBL_TWO_PHASE_ROWS ((int64_t)1 << 20)

/* Both phases over the selected rows of [lo, hi): phase 1 reads the filter
 * columns, keeps the passing rows of those that are output (r->acc) and
 * the verdicts (r->mask); phase 2 reads the other output columns for the
 * passing rows and emits.  Passing positions are added to all_hits when
 * it is given. */
static hs_status two_phase_part(rd_state *r, frd *fr, const roaring_bitmap_t *sel, int64_t lo,
                                int64_t hi, const int *which, int k, const int *which2, int k2,
                                const bool *need, int64_t batch_size, roaring_bitmap_t *all_hits,
                                hs_error *err)
{
    roaring_bitmap_t *part = roaring_bitmap_from_range((uint64_t)lo, (uint64_t)hi, 1);
    if (!part)
        return hs_err_nomem(err, 64);
    if (sel)
        roaring_bitmap_and_inplace(part, sel);
    uint64_t n_sel = roaring_bitmap_get_cardinality(part);
    hs_status st = HS_OK;
    if (n_sel == 0) {
        roaring_bitmap_free(part);
        return HS_OK;
    }
    hs_buf_reset(&r->mask);
    r->mask_off = 0;
    r->acc_off = 0;
    r->pass_runs = 0;
    for (int i = 0; i < r->n_out && st == HS_OK; i++) {
        hs_col_free(r->acc[i]);
        r->acc[i] = NULL;
        if (need[i])
            st = hs_col_create(&r->rs->children[i], 0, &r->acc[i], err);
    }
    if (st == HS_OK && !(r->hits = roaring_bitmap_create()))
        st = hs_err_nomem(err, 64);
    if (st == HS_OK)
        st = rd_set_read(r, which, k, err);
    if (st == HS_OK)
        st = rd_read(r, fr, part, batch_size, cb_phase1, err);
    uint64_t n_pass = st == HS_OK ? roaring_bitmap_get_cardinality(r->hits) : 0;
    if (st == HS_OK && n_pass > 0 && r->emit) {
        /* few passing rows, or long runs of them (TPC-H Q1's 98%): read
         * only them, the reader gathers the runs inside its pages;
         * many short runs: read the same rows again and take the
         * passing ones (long runs decode faster than scattered ones) */
        r->sparse = n_pass * 8 <= n_sel || (uint64_t)r->pass_runs * 16 <= n_pass;
        r->rep->sparse_second |= r->sparse;
        st = rd_set_read(r, which2, k2, err);
        if (st == HS_OK)
            st = rd_read(r, fr, r->sparse ? r->hits : part, batch_size, cb_phase2, err);
    }
    if (st == HS_OK && all_hits)
        roaring_bitmap_or_inplace(all_hits, r->hits);
    tbl_bitmap_free(r->hits);
    r->hits = NULL;
    roaring_bitmap_free(part);
    return st;
}

/* ---- the dictionary filter ----
 *
 * A filter term that reads one string (or binary) column only, through
 * operators that cannot fail (ex_term_value_col: l_shipmode IN ('MAIL',
 * 'SHIP'), p_container LIKE 'SM%', s <> '' ...), is a function of the
 * column's value, so the reader judges it once per dictionary entry of a
 * dictionary-encoded page and gives each row its entry's verdict by index
 * (pq_verdict): the strings of the rows are never copied out, and the
 * column is not decoded at all when it is not output.  Pages that are not
 * dictionary-encoded (a writer's fallback to PLAIN in a large row group)
 * are decoded and judged in runs, NULLs get the verdict on NULL: the
 * result is the filter's, row for row.  The terms of such a column become
 * one BOOL column of the read (a verdict column, field id TBL_VCOL_ID0 + i)
 * in a rewritten filter, when no other term reads the column and the
 * column is either not output or read after the filter (late: phase 2
 * reads it for the passing rows only).  HS_DICT_FILTER=0 turns it off. */
typedef struct tbl_vset {
    int n;                      /* verdict columns */
    tbl_vcol v[TBL_VCOL_MAX];
    hs_field xs;                /* the read schema + one BOOL field per verdict column */
    ex_expr *residual;          /* the filter with their terms replaced */
    tbl_pred pred;              /* {the filter's pr_filter, residual} */
} tbl_vset;

static void vset_clear(tbl_vset *vs)
{
    for (int j = 0; j < vs->n; j++) {
        ex_free(vs->v[j].terms);
        hs_field_clear(&vs->v[j].one);
    }
    ex_free(vs->residual);
    if (vs->xs.type == HS_TYPE_STRUCT)
        hs_field_clear(&vs->xs);
    memset(vs, 0, sizeof *vs);
}

static bool id_in(const hs_buf *ids, int32_t id)
{
    for (size_t i = 0; i < HS_VEC_LEN(ids, int32_t); i++)
        if (HS_VEC_AT(ids, int32_t, i) == id)
            return true;
    return false;
}

/* The verdict columns of one file's read (vs->n = 0: none). */
static hs_status vset_make(tbl_vset *vs, const frd *fr, const hs_field *rs, int n_out, bool late,
                           const tbl_pred *pred, hs_error *err)
{
    memset(vs, 0, sizeof *vs);
    const ex_expr *e = pred->expr;
    const char *env = getenv("HS_DICT_FILTER");
    if (!e || (env && strcmp(env, "0") == 0))
        return HS_OK;
    int nt = ex_and_terms(e);
    if (nt > 64)
        return HS_OK;
    int32_t col[64];
    hs_buf other = {0};
    hs_status st = HS_OK;
    for (int t = 0; t < nt && st == HS_OK; t++) {
        col[t] = ex_term_value_col(e, t);
        if (col[t] < 0 && ex_term_field_ids(e, t, &other) != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    int src[TBL_VCOL_MAX];
    int32_t ids[TBL_VCOL_MAX];
    int nv = 0;
    for (int t = 0; t < nt && st == HS_OK && nv < TBL_VCOL_MAX; t++) {
        int32_t id = col[t];
        bool seen = false;
        for (int j = 0; j < nv; j++)
            seen |= ids[j] == id;
        if (id <= 0 || seen || id_in(&other, id) || id >= TBL_VCOL_ID0)
            continue;
        int i = -1;
        for (int k = 0; k < rs->n_children && i < 0; k++)
            if (rs->children[k].field_id == id)
                i = k;
        if (i < 0 || (i < n_out && !late) || is_meta_id(id))
            continue;
        const hs_field *f = &rs->children[i];
        int fk = frd_source(fr, f);
        if (fk < 0 || fr->fs->children[fk].type != f->type ||
            (f->type != HS_TYPE_STRING && f->type != HS_TYPE_BINARY))
            continue;
        src[nv] = i;
        ids[nv++] = id;
    }
    hs_buf_free(&other);
    for (int k = 0; k < rs->n_children && st == HS_OK; k++)
        if (rs->children[k].field_id >= TBL_VCOL_ID0)
            nv = 0;   /* a field id in our range: keep out of its way */
    if (st != HS_OK || nv == 0)
        return st;
    if (hs_field_copy(rs, &vs->xs) != HS_OK) {
        hs_field_init(&vs->xs, "", HS_TYPE_NA, false);
        return hs_err_nomem(err, 64);
    }
    for (int j = 0; j < nv && st == HS_OK; j++) {
        hs_field f;
        char name[64];
        snprintf(name, sizeof name, "$verdict%d", j);
        hs_field_init(&f, name, HS_TYPE_BOOL, false);
        f.field_id = TBL_VCOL_ID0 + j;
        if (hs_field_add_child(&vs->xs, &f) != HS_OK) {
            hs_field_clear(&f);
            st = hs_err_nomem(err, 64);
        }
    }
    /* the fields are in place (no more reallocation): the expressions */
    bool keep[64];
    const hs_field *vf[TBL_VCOL_MAX];
    for (int j = 0; j < nv && st == HS_OK; j++) {
        tbl_vcol *v = &vs->v[j];
        vs->n = j + 1;
        v->src = src[j];
        v->src_field = &rs->children[src[j]];
        vf[j] = &vs->xs.children[rs->n_children + j];
        hs_field_init(&v->one, "", HS_TYPE_STRUCT, false);
        hs_field copy = {0};
        if (hs_field_copy(v->src_field, &copy) != HS_OK || hs_field_add_child(&v->one, &copy) != HS_OK) {
            hs_field_clear(&copy);
            st = hs_err_nomem(err, 64);
            break;
        }
        for (int t = 0; t < nt; t++)
            keep[t] = col[t] == ids[j];
        st = ex_terms_expr(e, keep, NULL, 0, &v->terms, err);
    }
    for (int t = 0; t < nt; t++) {
        keep[t] = true;
        for (int j = 0; j < nv; j++)
            keep[t] &= col[t] != ids[j];
    }
    if (st == HS_OK)
        st = ex_terms_expr(e, keep, vf, nv, &vs->residual, err);
    if (st != HS_OK) {
        vset_clear(vs);
        return st;
    }
    vs->pred = *pred;
    vs->pred.expr = vs->residual;
    return HS_OK;
}

hs_status tbl_read_file_ex(const tbl_plan_file *pf, const hs_field *rs, const tbl_read_opts *o,
                           tbl_emit_fn emit, void *ctx, roaring_bitmap_t **positions_out,
                           int64_t *rows_deleted, tbl_file_report *rep_in, hs_error *err)
{
    if (positions_out)
        *positions_out = NULL;
    tbl_file_report local = {0};
    tbl_file_report *rep = rep_in ? rep_in : &local;
    int64_t batch_size = o->batch_size > 0 ? o->batch_size : 65536;
    const tbl_pred *pred = o->pred && !tbl_pred_is_true(o->pred) ? o->pred : NULL;
    bool need_eval = pred && !o->candidates_exact;
    int n = rs->n_children;
    int n_out = o->n_out < 0 || o->n_out > n ? n : o->n_out;
    if (!emit)
        n_out = 0;   /* only positions are wanted */
    frd fr;
    roaring_bitmap_t *del = NULL, *sel = NULL;
    HS_TRY(frd_open(&fr, pf, rep, err));
    fr.par = o->par;
    fr.par_ctx = o->par_ctx;
    rd_state r = {0};
    r.pf = pf;
    r.rs = rs;
    r.emit = emit;
    r.ctx = ctx;
    r.rep = rep;
    r.n_out = n_out;
    r.pred = need_eval ? pred : NULL;
    tbl_vset vs = {0};
    hs_status vst = r.pred ? vset_make(&vs, &fr, rs, n_out, o->late, r.pred, err) : HS_OK;
    if (vst != HS_OK) {
        frd_close(&fr);
        return vst;
    }
    if (vs.n > 0) {
        rs = &vs.xs;   /* the verdict columns are read-schema columns from here on */
        n = rs->n_children;
        r.rs = rs;
        r.pred = &vs.pred;
        fr.vcols = vs.v;
        fr.n_vcols = vs.n;
    }
    r.pred_cheap = !r.pred || tbl_pred_is_cheap(r.pred);
    /* runtime filters still on, on columns that are output */
    tbl_rtfilter *rtf_use[TBL_MAX_RTF];
    for (int i = 0; emit && i < o->n_rtf && i < TBL_MAX_RTF; i++)
        if (o->rtf[i].col < n_out && !atomic_load(&o->rtf[i].off))
            rtf_use[r.n_rtf++] = &o->rtf[i];
    r.rtf = rtf_use;
    bool eval = r.pred || r.n_rtf;
    hs_status st = tbl_plan_load_deletes(pf, &del, err);
    if (st == HS_OK && del) {
        roaring_bitmap_remove_range(del, (uint64_t)fr.n_rows, (uint64_t)UINT32_MAX + 1);
        if (rows_deleted)
            *rows_deleted += (int64_t)roaring_bitmap_get_cardinality(del);
    }
    tbl_read_opts oo = *o;
    oo.pred = pred;
    if (st == HS_OK)
        st = select_rows(&fr, &oo, del, &sel, err);
    if (st == HS_OK && positions_out && !(r.hits = roaring_bitmap_create()))
        st = hs_err_nomem(err, 64);
    int *which = hs_calloc((size_t)n + 1, sizeof *which);
    int *which2 = hs_calloc((size_t)n + 1, sizeof *which2);
    bool *need = hs_calloc((size_t)n + 1, sizeof *need);
    if (st == HS_OK && (!which || !which2 || !need))
        st = hs_err_nomem(err, (size_t)n * 8);
    if (st == HS_OK) {
        for (int i = 0; i < n_out; i++)
            which[i] = i;
        st = sub_schema(rs, which, n_out, &r.out_schema, err);
    }
    bool empty = sel && roaring_bitmap_is_empty(sel);
    /* a runtime filter of no keys (an empty build side) keeps nothing */
    for (int i = 0; st == HS_OK && !empty && i < r.n_rtf; i++)
        if (rtf_use[i]->kf->kind == HS_KEYFILTER_EMPTY) {
            empty = true;
            atomic_fetch_add(&rtf_use[i]->rows_in,
                             sel ? (int64_t)roaring_bitmap_get_cardinality(sel) : fr.n_rows);
        }
    if (st == HS_OK && r.pred)
        st = filter_columns(r.pred, rs, need, err);
    for (int i = 0; i < r.n_rtf; i++)
        need[rtf_use[i]->col] = true;
    /* two phases when the filter must be evaluated and some stored output
     * column is not a filter column */
    bool two = false;
    for (int i = 0; st == HS_OK && eval && o->late && i < n_out; i++)
        two |= !need[i] && stored_column(&rs->children[i]);
    if (st == HS_OK && !empty && !two) {
        /* one read: output columns, then the filter's other columns */
        int k = 0;
        for (int i = 0; i < n_out; i++)
            which[k++] = i;
        for (int i = n_out; r.pred && i < n; i++)
            if (need[i])
                which[k++] = i;
        if (!r.pred && n_out == 0 && !r.hits) {
            /* nothing to read */
        } else if (!r.pred && n_out == 0) {
            /* only positions: the selection itself */
            roaring_bitmap_t *all = sel ? roaring_bitmap_copy(sel)
                                        : roaring_bitmap_from_range(0, (uint64_t)fr.n_rows, 1);
            if (!all)
                st = hs_err_nomem(err, 64);
            else {
                tbl_bitmap_free(r.hits);
                r.hits = all;
                rep->rows_matched += (int64_t)roaring_bitmap_get_cardinality(all);
            }
        } else {
            st = rd_set_read(&r, which, k, err);
            if (st == HS_OK)
                st = rd_read(&r, &fr, sel, batch_size, cb_single, err);
        }
    } else if (st == HS_OK && !empty) {
        rep->two_phase = true;
        int k = 0, k2 = 0;
        for (int i = 0; i < n; i++)
            if (need[i])
                which[k++] = i;
        for (int i = 0; i < n_out; i++)
            if (!need[i])
                which2[k2++] = i;
        r.acc = hs_calloc((size_t)n_out + 1, sizeof *r.acc);
        if (!r.acc)
            st = hs_err_nomem(err, 64);
        /* the file in parts of whole row groups, so that phase 1's kept
         * columns and verdicts hold one part, not the file */
        roaring_bitmap_t *all_hits = r.hits;   /* positions_out's, or NULL */
        r.hits = NULL;
        const pq_file_meta *fm = pq_reader_meta(fr.r);
        int64_t lo = 0;
        int g = 0;
        while (st == HS_OK && lo < fr.n_rows) {
            int64_t hi = lo;
            while (g < fm->n_row_groups && hi - lo < TBL_TWO_PHASE_ROWS)
                hi += fm->row_groups[g++].num_rows;
            if (g >= fm->n_row_groups || hi > fr.n_rows)
                hi = fr.n_rows;
            st = two_phase_part(&r, &fr, sel, lo, hi, which, k, which2, k2, need, batch_size,
                                all_hits, err);
            lo = hi;
        }
        r.hits = all_hits;
    }
    if (r.acc)
        for (int i = 0; i < n_out; i++)
            hs_col_free(r.acc[i]);
    hs_free(r.acc);
    hs_buf_free(&r.mask);
    hs_field_clear(&r.read_schema);
    hs_field_clear(&r.out_schema);
    hs_free(r.sel);
    hs_free(r.idx);
    hs_free(r.hit_pos);
    hs_free(which);
    hs_free(which2);
    hs_free(need);
    if (st == HS_OK && empty) {
        /* nothing selected: the reader never ran; its row groups count as skipped */
        rep->pq.row_groups_skipped += pq_reader_num_row_groups(fr.r);
    }
    frd_close(&fr);
    vset_clear(&vs);
    tbl_bitmap_free(del);
    tbl_bitmap_free(sel);
    if (st == HS_OK && positions_out)
        *positions_out = r.hits ? r.hits : roaring_bitmap_create();
    else
        tbl_bitmap_free(r.hits);
    if (st == HS_OK && positions_out && !*positions_out)
        st = hs_err_nomem(err, 64);
    return st;
}

hs_status tbl_read_file(const tbl_plan_file *pf, const hs_field *rs, const tbl_pred *pred,
                        int64_t batch_size, tbl_emit_fn emit, void *ctx,
                        roaring_bitmap_t **positions_out, int64_t *rows_deleted, hs_error *err)
{
    tbl_read_opts o = {.pred = pred, .use_stats = true, .late = false, .n_out = -1,
                       .batch_size = batch_size};
    return tbl_read_file_ex(pf, rs, &o, emit, ctx, positions_out, rows_deleted, NULL, err);
}

/* ------------------------------------------------------------------ */
/* public scans                                                        */

/* Reading files ahead on a thread pool: a window of up to `window` files
 * is in flight, one job each; the stream takes their batches in plan
 * order.  A job on the pool hands its batches over through a bounded queue
 * (the scan's mutex guards every job's queue):
 *
 *   reader (pool worker)                  consumer (scan_next)
 *   job_push: wait on `room` while the    wait on `ready` while the oldest
 *     queue holds a batch and this one      job's queue is empty and the job
 *     would pass SCAN_QUEUE_BYTES; push,    is not finished; pop, signal
 *     signal `ready`                        `room`
 *   job_run ends: finished, signal        finished and empty: hs_group_wait
 *     `ready`                               (returns at once), next job
 *
 * Either side, before it sleeps, runs an unclaimed column of a batch being
 * decoded (scan_help; the oldest file's first), and a reader that hands out
 * columns wakes both sides (scan_par).
 *
 * Closing the stream early sets `stop`: waiting readers wake and fail
 * with HS_CANCELLED, jobs not started return at once.  A job run on the
 * consumer's thread (no pool, or a forked child whose workers are gone)
 * never waits: it collects its file, which is why files are read there
 * only when they fit the queue. */
#define SCAN_QUEUE_BYTES ((size_t)4 << 20)

typedef struct scan_job {
    hs_scan *s;
    int file;                  /* plan index; -1 = slot free */
    hs_group *group;
    hs_buf batches;            /* hs_batch *; [taken, len) queued */
    size_t taken;              /* batches handed out */
    size_t queued_bytes;       /* of the queued batches */
    bool finished;             /* job_run returned (under the scan's mutex) */
    bool no_wait;              /* runs on the consumer's thread: never waits */
    tbl_file_report rep;
    int64_t rows_deleted;
    hs_status st;
    hs_error err;
    bool done;                 /* waited for (or run) */
} scan_job;

struct hs_scan {
    ice_table_metadata meta;   /* copy: the plan borrows from it */
    tbl_plan *plan;
    hs_field read_schema;      /* output columns first, then filter-only columns */
    hs_field out_schema;
    int n_out;
    int64_t batch_size;
    int next_file;             /* next file to start */
    /* indexes and counters */
    bool ix_loaded;
    tbl_ixscan *ix;            /* NULL: no usable registry */
    hs_index_stats istats;
    tbl_file_report *reports;  /* per planned file when kept (explain), else NULL */
    /* jobs: a ring of `window` slots; cur = the job being consumed */
    hs_pool *pool;
    int window;
    scan_job *jobs;
    int cur;                   /* slot of the oldest job */
    int n_jobs;                /* jobs started and not yet consumed */
    bool failed;
    bool warmed;               /* scan_warm_next ran */
    /* the queues of jobs on the pool (see scan_job) */
    pthread_mutex_t mu;
    pthread_cond_t ready, room;
    struct scan_par *par;      /* posted column requests (scan_par), newest first */
    bool consumer_helps;       /* the window has fewer readers than scan_threads */
    pthread_cond_t par_done;
    tbl_scan_pipe pipe;        /* counters, under mu */
    bool sync_init;
    bool stop;                 /* the stream is being released */
    uint64_t fork_gen;         /* hs_fork_generation() when the pool started */
    /* an append stream's acknowledged rows read after the files (stream.c) */
    tbl_tail_view *tail;
    /* runtime filters (rtfilter.h): slots filled, then n_rtf published */
    tbl_rtfilter rtf[TBL_MAX_RTF];
    atomic_int n_rtf;
};

static void job_reset(scan_job *j)
{
    hs_group_destroy(j->group);   /* waits for a running job first */
    j->group = NULL;
    for (size_t i = j->taken; i < HS_VEC_LEN(&j->batches, hs_batch *); i++)
        hs_batch_free(HS_VEC_AT(&j->batches, hs_batch *, i));
    hs_buf_free(&j->batches);
    j->taken = 0;
    j->queued_bytes = 0;
    j->finished = false;
    j->no_wait = false;
    j->file = -1;
    j->done = false;
}

void hs_scan_free(hs_scan *s)
{
    if (!s)
        return;
    if (s->sync_init) {
        /* wake readers waiting for room: they give up */
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_broadcast(&s->room);
        pthread_mutex_unlock(&s->mu);
    }
    for (int i = 0; s->jobs && i < s->window; i++)
        job_reset(&s->jobs[i]);   /* waits for running jobs */
    if (s->sync_init) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->ready);
        pthread_cond_destroy(&s->room);
        pthread_cond_destroy(&s->par_done);
    }
    tbl_pin_drop(s);
    for (int i = 0; i < atomic_load(&s->n_rtf); i++)
        hs_keyfilter_free(s->rtf[i].kf);
    hs_free(s->jobs);
    hs_pool_destroy(s->pool);
    tbl_ixscan_free(s->ix);
    hs_free(s->reports);
    tbl_plan_free(s->plan);
    tbl_tail_view_free(s->tail);
    hs_field_clear(&s->read_schema);
    hs_field_clear(&s->out_schema);
    ice_metadata_free(&s->meta);
    hs_free(s);
}

static hs_status add_meta_field(hs_field *schema, const char *name, int32_t id, hs_type type,
                                hs_error *err)
{
    for (int i = 0; i < schema->n_children; i++)
        if (schema->children[i].field_id == id)
            return HS_OK;
    hs_field f;
    hs_field_init(&f, name, type, true);
    f.field_id = id;
    if (hs_field_add_child(schema, &f) != HS_OK) {
        hs_field_clear(&f);
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

static hs_status add_column(hs_field *rs, const hs_field *f, hs_error *err)
{
    for (int i = 0; i < rs->n_children; i++)
        if (rs->children[i].field_id == f->field_id)
            return HS_OK;
    hs_field copy = {0};
    if (hs_field_copy(f, &copy) != HS_OK || hs_field_add_child(rs, &copy) != HS_OK) {
        hs_field_clear(&copy);
        return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

static hs_status build_schemas(hs_scan *s, const ice_schema *sc, const hs_scan_options *o,
                               hs_error *err)
{
    hs_field_init(&s->read_schema, "", HS_TYPE_STRUCT, false);
    hs_field *rs = &s->read_schema;
    if (o && o->columns) {
        for (int i = 0; i < o->n_columns; i++) {
            const char *nm = o->columns[i];
            if (!nm)
                return hs_err_set(err, HS_INVALID, "scan: column %d is NULL", i);
            if (strcmp(nm, "_row_id") == 0)
                HS_TRY(add_meta_field(rs, "_row_id", ICE_FIELD_ID_ROW_ID, HS_TYPE_INT64, err));
            else if (strcmp(nm, "_last_updated_sequence_number") == 0)
                HS_TRY(add_meta_field(rs, nm, ICE_FIELD_ID_LAST_UPDATED_SEQ, HS_TYPE_INT64, err));
            else if (strcmp(nm, "_file") == 0)
                HS_TRY(add_meta_field(rs, nm, ICE_FIELD_ID_FILE_PATH, HS_TYPE_STRING, err));
            else if (strcmp(nm, "_pos") == 0)
                HS_TRY(add_meta_field(rs, nm, ICE_FIELD_ID_POS, HS_TYPE_INT64, err));
            else {
                const hs_field *f = NULL;
                for (int k = 0; k < sc->root.n_children && !f; k++)
                    if (strcmp(sc->root.children[k].name, nm) == 0)
                        f = &sc->root.children[k];
                for (int k = 0; k < sc->root.n_children && !f; k++)
                    if (strcasecmp(sc->root.children[k].name, nm) == 0)
                        f = &sc->root.children[k];
                if (!f)
                    return hs_err_set(err, HS_NOT_FOUND, "scan: no column \"%s\" in the table "
                                      "schema", nm);
                HS_TRY(add_column(rs, f, err));
            }
        }
    } else {
        for (int k = 0; k < sc->root.n_children; k++)
            HS_TRY(add_column(rs, &sc->root.children[k], err));
    }
    if (o && o->include_row_lineage) {
        HS_TRY(add_meta_field(rs, "_row_id", ICE_FIELD_ID_ROW_ID, HS_TYPE_INT64, err));
        HS_TRY(add_meta_field(rs, "_last_updated_sequence_number", ICE_FIELD_ID_LAST_UPDATED_SEQ,
                              HS_TYPE_INT64, err));
    }
    s->n_out = rs->n_children;
    if (hs_field_copy(rs, &s->out_schema) != HS_OK)
        return hs_err_nomem(err, 64);
    /* columns only the filter reads */
    hs_buf ids = {0};
    if (tbl_pred_field_ids(&s->plan->pred, &ids) != HS_OK) {
        hs_buf_free(&ids);
        return hs_err_nomem(err, 64);
    }
    hs_status st = HS_OK;
    for (size_t i = 0; i < HS_VEC_LEN(&ids, int32_t) && st == HS_OK; i++) {
        int top = top_index_of_id(&sc->root, HS_VEC_AT(&ids, int32_t, i));
        if (top >= 0)
            st = add_column(rs, &sc->root.children[top], err);
    }
    hs_buf_free(&ids);
    return st;
}

/* The scan reads row addresses (_file, _pos: DML computing positions to
 * delete): an append stream's tail rows have none, so it reads committed
 * rows only. */
static bool wants_positions(const hs_scan_options *o)
{
    for (int i = 0; o && o->columns && i < o->n_columns; i++)
        if (o->columns[i] && (strcmp(o->columns[i], "_file") == 0 ||
                              strcmp(o->columns[i], "_pos") == 0))
            return true;
    return false;
}

static hs_status scan_plan_once(hs_table *t, const hs_scan_options *opt, hs_scan **out,
                                hs_error *err);

/* A handle that still points at a snapshot another writer replaced and
 * expired finds its manifests gone (HS_NOT_FOUND while planning): the
 * current snapshot is read instead, after one refresh (docs/tables.md,
 * "Readers and expiry").  Time travel to the expired snapshot stays an
 * error. */
hs_status hs_scan_plan(hs_table *t, const hs_scan_options *opt, hs_scan **out, hs_error *err)
{
    hs_error e1;
    hs_err_clear(&e1);
    hs_status st = scan_plan_once(t, opt, out, &e1);
    bool time_travel = opt && (opt->use_snapshot_id || opt->use_as_of || opt->ref);
    if (st == HS_NOT_FOUND && !time_travel && t->catalog) {
        char *before = hs_strdup(t->metadata_location ? t->metadata_location : "");
        hs_error e2;
        hs_err_clear(&e2);
        if (before && hs_table_refresh(t, &e2) == HS_OK &&
            strcmp(before, t->metadata_location ? t->metadata_location : "") != 0) {
            hs_free(before);
            return scan_plan_once(t, opt, out, err);
        }
        hs_free(before);
    }
    if (st != HS_OK && err)
        *err = e1;
    return st;
}

static hs_status scan_plan_once(hs_table *t, const hs_scan_options *opt, hs_scan **out,
                                hs_error *err)
{
    *out = NULL;
    HS_OPTS_IN(opt, hs_scan_options, err);
    hs_scan *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    const ice_snapshot *snap = NULL;
    const ice_schema *sc = NULL;
    hs_status st = HS_OK;
    /* the current snapshot of a handle with an append stream: its tail too
     * (captured first: it may refresh t) */
    if (!(opt && (opt->use_snapshot_id || opt->use_as_of || opt->ref)) &&
        !wants_positions(opt) && tbl_tail_attach(t))
        st = tbl_tail_capture(t, &s->tail, err);
    if (st == HS_OK)
        st = ice_metadata_copy(&t->meta, &s->meta, err);
    if (st == HS_OK)
        st = tbl_resolve_snapshot(&s->meta, opt, &snap, &sc, err);
    if (st == HS_OK && snap)   /* expiry keeps what the scan reads (pins.c) */
        tbl_pin_set(s, &s->meta, snap->snapshot_id);
    if (st == HS_OK)
        st = tbl_plan_make(&s->meta, snap, sc, opt ? opt->filter : NULL, &s->plan, err);
    if (st == HS_OK)
        st = build_schemas(s, sc, opt, err);
    s->batch_size = opt && opt->batch_size > 0 ? opt->batch_size : 65536;
    if (st != HS_OK) {
        hs_scan_free(s);
        return st;
    }
    *out = s;
    return HS_OK;
}

void hs_scan_get_stats(const hs_scan *s, hs_scan_stats *out)
{
    HS_OUT(hs_scan_stats, out, s->plan->stats, sizeof(hs_scan_stats), NULL);
}

void hs_scan_get_index_stats(const hs_scan *s, hs_index_stats *out)
{
    hs_index_stats x = s->istats;
    x.files_planned = s->plan->n_files;
    x.rows_emitted = s->plan->stats.rows_emitted;
    HS_OUT(hs_index_stats, out, x, sizeof x, NULL);
}

const tbl_plan *tbl_scan_get_plan(const hs_scan *s) { return s->plan; }
const tbl_file_report *tbl_scan_reports(const hs_scan *s) { return s->reports; }

hs_status tbl_scan_keep_reports(hs_scan *s, hs_error *err)
{
    if (s->reports)
        return HS_OK;
    s->reports = hs_calloc((size_t)s->plan->n_files + 1, sizeof *s->reports);
    if (!s->reports)
        return hs_err_nomem(err, (size_t)s->plan->n_files * sizeof *s->reports);
    for (int i = 0; i < s->plan->n_files; i++) {
        s->reports[i].file = i;
        s->reports[i].candidates = -1;
    }
    return HS_OK;
}

hs_status hs_scan_files_json(const hs_scan *s, char **out, hs_error *err)
{
    *out = NULL;
    hs_buf b = {0};
    hs_status st = hs_buf_puts(&b, "[");
    for (int i = 0; i < s->plan->n_files && st == HS_OK; i++) {
        const tbl_plan_file *f = &s->plan->files[i];
        st = hs_buf_puts(&b, i ? ",{\"file_path\":" : "{\"file_path\":");
        if (st == HS_OK)
            st = hs_json_append_string(&b, (const uint8_t *)f->path, strlen(f->path));
        if (st == HS_OK)
            st = hs_buf_printf(&b, ",\"record_count\":%lld,\"file_size_in_bytes\":%lld,"
                               "\"spec_id\":%d,\"sequence_number\":%lld,\"partition\":[",
                               (long long)f->record_count, (long long)f->file_size,
                               (int)f->spec_id, (long long)f->data_seq);
        for (int k = 0; k < f->n_partition && st == HS_OK; k++) {
            if (k)
                st = hs_buf_puts(&b, ",");
            if (st == HS_OK)
                st = ice_value_to_json(&f->partition[k], &b);
        }
        if (st == HS_OK)
            st = hs_buf_puts(&b, "],\"deletes\":[");
        for (int k = 0; k < f->n_deletes && st == HS_OK; k++) {
            if (k)
                st = hs_buf_puts(&b, ",");
            if (st == HS_OK)
                st = hs_json_append_string(&b, (const uint8_t *)f->deletes[k].path,
                                           strlen(f->deletes[k].path));
        }
        if (st == HS_OK)
            st = hs_buf_puts(&b, "]}");
    }
    if (st == HS_OK)
        st = hs_buf_puts(&b, "]");
    if (st == HS_OK)
        st = hs_buf_append_byte(&b, 0);
    if (st != HS_OK) {
        hs_buf_free(&b);
        return hs_err_nomem(err, 64);
    }
    size_t n;
    *out = (char *)hs_buf_detach(&b, &n);
    return HS_OK;
}

/* ---- reading the files ---- */

/* Bytes a column holds (its buffers and its children's). */
static size_t col_bytes(const hs_column *c)
{
    if (!c)
        return 0;
    size_t n = c->validity.len + c->offsets.len + c->values.len;
    for (int i = 0; i < c->n_children; i++)
        n += col_bytes(c->children[i]);
    return n;
}

static size_t batch_bytes(const hs_batch *b)
{
    size_t n = 0;
    for (int i = 0; i < b->n_cols; i++)
        n += col_bytes(b->cols[i]);
    return n;
}

static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The columns of one batch being decoded at once (pq_scan_options.par):
 * posted by the reader that decodes the batch, which runs them itself and
 * lets every other thread of the scan that would otherwise sleep take one
 * (a reader whose queue is full, the consumer whose queue is empty).  The
 * window's later files then do not idle behind the oldest: its batches are
 * what the stream waits for, and they get every thread, while memory stays
 * what the queues hold (helpers decode into the poster's batch).  Guarded
 * by the scan's mutex. */
typedef struct scan_par {
    pq_task_fn task;
    void *arg;
    int n, next, done;         /* tasks; next unclaimed; returned */
    int file;                  /* the poster's plan index: the oldest is helped first */
    struct scan_par *link;
} scan_par;

/* Runs one unclaimed task of the oldest posted request, if any (false:
 * none).  Called, and returns, with s->mu held. */
static bool scan_help(hs_scan *s)
{
    scan_par *p = NULL;
    for (scan_par *q = s->par; q; q = q->link)
        if (q->next < q->n && (!p || q->file < p->file))
            p = q;
    if (!p)
        return false;
    int i = p->next++;
    s->pipe.tasks_helped++;
    pthread_mutex_unlock(&s->mu);
    p->task(p->arg, i);
    pthread_mutex_lock(&s->mu);
    if (++p->done == p->n)
        pthread_cond_broadcast(&s->par_done);
    return true;
}

/* pq_par_fn of a job on the pool: posts the tasks, runs what nobody else
 * claimed, waits for the claimed ones. */
static void job_par(void *ctx, int n, pq_task_fn task, void *arg)
{
    scan_job *j = ctx;
    hs_scan *s = j->s;
    if (j->no_wait || !s->sync_init) {
        for (int i = 0; i < n; i++)
            task(arg, i);
        return;
    }
    scan_par p = {.task = task, .arg = arg, .n = n, .file = j->file};
    pthread_mutex_lock(&s->mu);
    p.link = s->par;
    s->par = &p;
    s->pipe.par_batches++;
    s->pipe.par_tasks += n;
    pthread_cond_broadcast(&s->room);
    pthread_cond_broadcast(&s->ready);
    while (p.next < n) {
        int i = p.next++;
        pthread_mutex_unlock(&s->mu);
        task(arg, i);
        pthread_mutex_lock(&s->mu);
        p.done++;
    }
    while (p.done < n)
        pthread_cond_wait(&s->par_done, &s->mu);
    for (scan_par **q = &s->par; *q; q = &(*q)->link)
        if (*q == &p) {
            *q = p.link;
            break;
        }
    pthread_mutex_unlock(&s->mu);
}

void tbl_scan_get_pipe(hs_scan *s, tbl_scan_pipe *out)
{
    memset(out, 0, sizeof *out);
    if (!s->sync_init)
        return;
    pthread_mutex_lock(&s->mu);
    *out = s->pipe;
    pthread_mutex_unlock(&s->mu);
}

/* Queues one batch of the job's file (tbl_emit_fn); a job on the pool
 * waits while its queue is full (see scan_job). */
static hs_status job_push(void *ctx, hs_batch *b, hs_error *err)
{
    scan_job *j = ctx;
    hs_scan *s = j->s;
    if (j->no_wait) {
        if (HS_VEC_PUSH(&j->batches, hs_batch *, b) != HS_OK) {
            hs_batch_free(b);
            return hs_err_nomem(err, 64);
        }
        return HS_OK;
    }
    size_t nb = batch_bytes(b);
    pthread_mutex_lock(&s->mu);
    while (!s->stop && !j->no_wait && j->queued_bytes > 0 &&
           j->queued_bytes + nb > SCAN_QUEUE_BYTES) {
        if (scan_help(s))
            continue;
        s->pipe.room_waits++;
        int64_t t0 = mono_ns();
        pthread_cond_wait(&s->room, &s->mu);
        s->pipe.room_wait_ns += mono_ns() - t0;
    }
    hs_status st = HS_OK;
    if (s->stop)
        st = hs_err_set(err, HS_CANCELLED, "scan: the stream was released");
    else if (HS_VEC_PUSH(&j->batches, hs_batch *, b) != HS_OK)
        st = hs_err_nomem(err, 64);
    else
        j->queued_bytes += nb;
    pthread_cond_broadcast(&s->ready);
    pthread_mutex_unlock(&s->mu);
    if (st != HS_OK)
        hs_batch_free(b);
    return st;
}

static hs_status job_read(scan_job *j, hs_error *err);

/* The pool's task: reads the job's file, then marks it finished. */
static hs_status job_run(void *arg, hs_error *err)
{
    scan_job *j = arg;
    hs_scan *s = j->s;
    bool stopped = false;
    if (s->sync_init) {
        pthread_mutex_lock(&s->mu);
        stopped = s->stop;
        pthread_mutex_unlock(&s->mu);
    }
    hs_status st = stopped ? hs_err_set(err, HS_CANCELLED, "scan: the stream was released")
                           : job_read(j, err);
    j->st = st;
    if (st != HS_OK && err)
        j->err = *err;
    if (s->sync_init) {
        pthread_mutex_lock(&s->mu);
        j->finished = true;
        pthread_cond_broadcast(&s->ready);
        pthread_mutex_unlock(&s->mu);
    }
    return st;
}

/* Reads planned file j->file into j's batches: index lookups, then the
 * data with the candidates, statistics and the residual filter. */
static hs_status job_read(scan_job *j, hs_error *err)
{
    hs_scan *s = j->s;
    const tbl_plan_file *f = &s->plan->files[j->file];
    const tbl_pred *pred = &s->plan->pred;
    memset(&j->rep, 0, sizeof j->rep);
    j->rep.file = j->file;
    j->rep.candidates = -1;
    roaring_bitmap_t *cand = NULL;
    bool exact = false;
    hs_status st = HS_OK;
    if (s->ix && !tbl_pred_is_true(pred))
        st = tbl_ixscan_file(s->ix, f, pred->filter, &cand, &exact, &j->rep, err);
    if (st == HS_OK && cand && roaring_bitmap_is_empty(cand)) {
        j->rep.pruned_by_index = true;
    } else if (st == HS_OK) {
        tbl_read_opts o = {.pred = pred, .candidates = cand,
                           .candidates_exact = cand && exact && pred->exact,
                           .use_stats = true, .late = true, .n_out = s->n_out,
                           .batch_size = s->batch_size, .rtf = s->rtf,
                           .n_rtf = atomic_load_explicit(&s->n_rtf, memory_order_acquire),
                           .par = j->group ? job_par : NULL, .par_ctx = j};
        st = tbl_read_file_ex(f, &s->read_schema, &o, job_push, j, NULL, &j->rows_deleted,
                              &j->rep, err);
    }
    tbl_bitmap_free(cand);
    return st;
}

bool tbl_scan_add_rtfilter(hs_scan *s, int col, hs_keyfilter *kf)
{
    int n = atomic_load_explicit(&s->n_rtf, memory_order_relaxed);
    bool ok = col >= 0 && col < s->n_out && n < TBL_MAX_RTF &&
              (s->read_schema.children[col].type == HS_TYPE_INT32 ||
               s->read_schema.children[col].type == HS_TYPE_INT64);
    if (!ok) {
        hs_keyfilter_free(kf);
        return false;
    }
    tbl_rtfilter *f = &s->rtf[n];
    f->kf = kf;
    f->col = col;
    atomic_init(&f->rows_in, 0);
    atomic_init(&f->rows_out, 0);
    atomic_init(&f->off, false);
    atomic_store_explicit(&s->n_rtf, n + 1, memory_order_release);
    return true;
}

int tbl_scan_rtfilters(const hs_scan *s, const tbl_rtfilter **out)
{
    *out = s->rtf;
    return atomic_load_explicit(&((hs_scan *)s)->n_rtf, memory_order_acquire);
}

int64_t tbl_scan_max_rows(const hs_scan *s)
{
    if (s->tail)
        return -1;
    int64_t n = 0;
    for (int i = 0; i < s->plan->n_files; i++)
        n += s->plan->files[i].record_count;
    return n;
}

int64_t tbl_scan_exact_rows(const hs_scan *s)
{
    if (!tbl_pred_is_true(&s->plan->pred) || s->plan->stats.delete_files > 0 || s->tail)
        return -1;
    int64_t n = 0;
    for (int i = 0; i < s->plan->n_files; i++) {
        if (s->plan->files[i].n_deletes > 0)
            return -1;
        n += s->plan->files[i].record_count;
    }
    return n;
}

/* count(*) of the rows matching the scan's filter from the sidecar
 * indexes alone: every planned file has an index that decides the simple
 * filter exactly (tbl_ixscan_file), the simple filter is the whole WHERE
 * (pred.exact), no runtime filter, no append-stream tail and no equality
 * deletes; position deletes and DVs are subtracted from the candidates.
 * *n = -1 when any of that fails (the caller reads the data).  The
 * lookups are accounted in the index statistics; no data page is read. */
hs_status tbl_scan_index_count(hs_scan *s, int64_t *n, hs_error *err)
{
    *n = -1;
    const tbl_pred *pred = &s->plan->pred;
    if (s->tail || s->jobs || tbl_pred_is_true(pred) || !pred->exact ||
        atomic_load_explicit(&s->n_rtf, memory_order_acquire) > 0)
        return HS_OK;
    for (int i = 0; i < s->plan->n_files; i++)
        for (int k = 0; k < s->plan->files[i].n_deletes; k++)
            if (s->plan->files[i].deletes[k].kind == ICE_CONTENT_EQUALITY_DELETES)
                return HS_OK;
    if (!s->ix_loaded) {
        s->ix_loaded = true;
        HS_TRY(tbl_ixscan_open_at(&s->meta, s->plan->snap, &s->ix,
                                  &s->istats.index_files_skipped, err));
    }
    if (!s->ix)
        return HS_OK;
    int64_t total = 0, deleted = 0;
    hs_index_stats acc = {0};
    for (int i = 0; i < s->plan->n_files; i++) {
        const tbl_plan_file *f = &s->plan->files[i];
        tbl_file_report rep = {.file = i, .candidates = -1};
        roaring_bitmap_t *cand = NULL, *del = NULL;
        bool exact = false;
        HS_TRY(tbl_ixscan_file(s->ix, f, pred->filter, &cand, &exact, &rep, err));
        if (!cand || !exact) {
            tbl_bitmap_free(cand);
            return HS_OK;   /* a file without the index: read the data */
        }
        hs_status st = f->n_deletes > 0 ? tbl_plan_load_deletes(f, &del, err) : HS_OK;
        if (st != HS_OK) {
            tbl_bitmap_free(cand);
            return st;
        }
        int64_t c = (int64_t)roaring_bitmap_get_cardinality(cand);
        int64_t d = del ? (int64_t)roaring_bitmap_and_cardinality(cand, del) : 0;
        tbl_bitmap_free(cand);
        tbl_bitmap_free(del);
        total += c - d;
        deleted += d;
        acc.files_pruned_by_index += c == 0;
        acc.files_indexed++;
        acc.index_lookups += rep.n_lookups;
        acc.index_files_skipped += rep.n_skipped;
        acc.rows_selected_by_index += c;
    }
    s->istats.files_pruned_by_index += acc.files_pruned_by_index;
    s->istats.files_indexed += acc.files_indexed;
    s->istats.index_lookups += acc.index_lookups;
    s->istats.index_files_skipped += acc.index_files_skipped;
    s->istats.rows_selected_by_index += acc.rows_selected_by_index;
    s->istats.rows_counted_by_index += total;
    s->plan->stats.rows_deleted += deleted;
    *n = total;
    return HS_OK;
}

static int scan_threads(void)
{
    int64_t set = hs_cfg_get(HS_CFG_SCAN_THREADS);
    if (set > 0)
        return set > 64 ? 64 : (int)set;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (int)n;
}

/* Bytes a row of f takes in a batch, estimated high for variable widths
 * (it decides only whether a file is read on the consumer's thread). */
static size_t row_bytes_estimate(const hs_field *f)
{
    size_t n = 1;   /* validity */
    switch (f->type) {
    case HS_TYPE_STRUCT:
        for (int i = 0; i < f->n_children; i++)
            n += row_bytes_estimate(&f->children[i]);
        return n;
    case HS_TYPE_FIXED_LIST:
        return n + (size_t)(f->width > 0 ? f->width : 1) *
                       (f->n_children ? row_bytes_estimate(&f->children[0]) : 8);
    case HS_TYPE_LIST:
    case HS_TYPE_MAP:
        return n + 4 + 16 * (f->n_children ? row_bytes_estimate(&f->children[0]) : 8);
    case HS_TYPE_STRING:
    case HS_TYPE_BINARY: return n + 4 + 64;
    default: {
        int w = hs_type_width(f);
        return n + (size_t)(w > 0 ? w : 8);
    }
    }
}

/* Some planned file decodes to more than one job's queue. */
static bool scan_has_big_file(const hs_scan *s)
{
    size_t row = row_bytes_estimate(&s->read_schema);
    for (int i = 0; i < s->plan->n_files; i++)
        if ((double)s->plan->files[i].record_count * (double)row > (double)SCAN_QUEUE_BYTES)
            return true;
    return false;
}

static hs_status scan_sync_init(hs_scan *s, hs_error *err)
{
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        return hs_err_set(err, HS_NOMEM, "scan: cannot create a mutex");
    if (pthread_cond_init(&s->ready, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        return hs_err_set(err, HS_NOMEM, "scan: cannot create a condition variable");
    }
    if (pthread_cond_init(&s->room, NULL) != 0) {
        pthread_cond_destroy(&s->ready);
        pthread_mutex_destroy(&s->mu);
        return hs_err_set(err, HS_NOMEM, "scan: cannot create a condition variable");
    }
    if (pthread_cond_init(&s->par_done, NULL) != 0) {
        pthread_cond_destroy(&s->room);
        pthread_cond_destroy(&s->ready);
        pthread_mutex_destroy(&s->mu);
        return hs_err_set(err, HS_NOMEM, "scan: cannot create a condition variable");
    }
    s->sync_init = true;
    s->fork_gen = hs_fork_generation();
    return HS_OK;
}

/* First read: loads the registry, sizes the window, starts the pool when
 * more than one file is to be read and more than one thread is allowed,
 * or when some file is too big to collect whole (one reader then). */
static hs_status scan_start(hs_scan *s, hs_error *err)
{
    if (!s->ix_loaded && !tbl_pred_is_true(&s->plan->pred)) {   /* loaded: tbl_scan_index_count */
        s->ix_loaded = true;
        HS_TRY(tbl_ixscan_open_at(&s->meta, s->plan->snap, &s->ix,
                                  &s->istats.index_files_skipped, err));
    }
    int allowed = scan_threads();
    int threads = allowed;
    if (threads > s->plan->n_files)
        threads = s->plan->n_files;
    if (threads < 1)
        threads = 1;
    s->window = threads;
    s->jobs = hs_calloc((size_t)s->window, sizeof *s->jobs);
    if (!s->jobs)
        return hs_err_nomem(err, sizeof *s->jobs);
    for (int i = 0; i < s->window; i++) {
        s->jobs[i].s = s;
        s->jobs[i].file = -1;
    }
    if (threads > 1 || scan_has_big_file(s)) {
        HS_TRY(scan_sync_init(s, err));
        HS_TRY(hs_pool_create(threads, &s->pool, err));
        /* fewer files than threads: the consumer's thread is a spare one */
        s->consumer_helps = allowed > threads;
    }
    return HS_OK;
}

/* Starts jobs until the window is full or every file has one. */
static hs_status scan_fill(hs_scan *s, hs_error *err)
{
    while (s->n_jobs < s->window && s->next_file < s->plan->n_files) {
        scan_job *j = &s->jobs[(s->cur + s->n_jobs) % s->window];
        j->file = s->next_file++;
        j->st = HS_OK;
        j->rows_deleted = 0;
        hs_err_clear(&j->err);
        s->n_jobs++;
        if (!s->pool) {
            j->no_wait = true;
            continue;   /* run when consumed */
        }
        HS_TRY(hs_group_create(s->pool, &j->group, err));
        if (hs_group_submit(j->group, job_run, j) != HS_OK)
            return hs_err_nomem(err, 64);
    }
    return HS_OK;
}

static void account(hs_scan *s, const tbl_file_report *r, int64_t rows_deleted)
{
    hs_index_stats *x = &s->istats;
    x->files_pruned_by_index += r->pruned_by_index;
    x->files_indexed += r->indexed;
    x->index_lookups += r->n_lookups;
    x->index_files_skipped += r->n_skipped;
    x->row_groups_read += r->pq.row_groups_read;
    x->row_groups_skipped += r->pq.row_groups_skipped;
    x->pages_decoded += r->pq.pages_decoded;
    x->pages_skipped += r->pq.pages_skipped;
    x->rows_decoded += r->rows_decoded;
    if (r->candidates >= 0)
        x->rows_selected_by_index += r->candidates;
    s->plan->stats.rows_deleted += rows_deleted;
    if (s->reports)
        s->reports[r->file] = *r;
}

/* Waits for the oldest job to end (running it here without a pool). */
static hs_status scan_wait(hs_scan *s, scan_job *j, hs_error *err)
{
    hs_status st;
    if (j->group) {
        hs_error gerr;
        hs_err_clear(&gerr);
        st = hs_group_wait(j->group, &gerr);
        if (st != HS_OK) {
            hs_error *e = j->err.code != HS_OK ? &j->err : &gerr;
            if (err)
                *err = *e;
        }
    } else {
        st = job_run(j, err);
    }
    if (st == HS_OK)
        account(s, &j->rep, j->rows_deleted);
    return st;
}

/* Object stores: the files are read; warm the next selective query in the
 * background (tbl_ixscan_warm: skipped manifests, the other files' footers
 * and filter sidecars, the pages of the columns read).  Started now and not
 * with the plan, so that its requests never delay this query's own. */
static void scan_warm_next(hs_scan *s)
{
    s->warmed = true;
    if (tbl_pred_is_true(&s->plan->pred))
        return;
    int32_t ids[64];
    int n = 0;
    for (int i = 0; i < s->read_schema.n_children && n < 64; i++)
        if (s->read_schema.children[i].field_id > 0)
            ids[n++] = s->read_schema.children[i].field_id;
    tbl_ixscan_warm(s->ix, s->plan, s->plan->pred.filter, ids, n);
}

/* In a child forked while the scan ran, the pool's workers are gone and
 * the scan's mutex may have been copied held: fresh synchronization, and
 * every job not yet run runs on this thread without waiting (the
 * threadpool fails the ones that were running in the parent). */
static void scan_after_fork(hs_scan *s)
{
    if (!s->sync_init || s->fork_gen == hs_fork_generation())
        return;
    (void)pthread_mutex_init(&s->mu, NULL);
    (void)pthread_cond_init(&s->ready, NULL);
    (void)pthread_cond_init(&s->room, NULL);
    (void)pthread_cond_init(&s->par_done, NULL);
    s->par = NULL;   /* the posters were threads of the parent */
    s->fork_gen = hs_fork_generation();
    for (int i = 0; i < s->window; i++)
        s->jobs[i].no_wait = true;
}

/* The next queued batch of a job running on the pool, waiting for one;
 * *out NULL when the job finished and its queue is empty. */
static void job_take(hs_scan *s, scan_job *j, hs_batch **out)
{
    *out = NULL;
    pthread_mutex_lock(&s->mu);
    while (j->taken == HS_VEC_LEN(&j->batches, hs_batch *) && !j->finished) {
        if (s->consumer_helps && scan_help(s))
            continue;
        s->pipe.ready_waits++;
        int64_t t0 = mono_ns();
        pthread_cond_wait(&s->ready, &s->mu);
        s->pipe.ready_wait_ns += mono_ns() - t0;
    }
    if (j->taken < HS_VEC_LEN(&j->batches, hs_batch *)) {
        hs_batch *b = HS_VEC_AT(&j->batches, hs_batch *, j->taken);
        j->taken++;
        size_t nb = batch_bytes(b);
        j->queued_bytes = nb < j->queued_bytes ? j->queued_bytes - nb : 0;
        pthread_cond_broadcast(&s->room);
        *out = b;
    }
    pthread_mutex_unlock(&s->mu);
}

static hs_status scan_next(void *ctx, hs_batch **out, hs_error *err)
{
    hs_scan *s = ctx;
    *out = NULL;
    if (s->failed)
        return hs_err_set(err, HS_INVALID, "scan: the stream failed earlier");
    if (!s->jobs) {
        hs_status st = scan_start(s, err);
        if (st != HS_OK) {
            s->failed = true;
            return st;
        }
    }
    scan_after_fork(s);
    for (;;) {
        if (s->n_jobs == 0) {
            hs_status st = scan_fill(s, err);
            if (st != HS_OK) {
                s->failed = true;
                return st;
            }
            if (s->n_jobs == 0) {
                if (!s->warmed)
                    scan_warm_next(s);
                /* the files are done: the stream's tail, then the end */
                st = tbl_tail_view_next(s->tail, &s->read_schema, &s->plan->pred,
                                        &s->out_schema, out, err);
                if (st != HS_OK)
                    s->failed = true;
                else if (*out)
                    s->plan->stats.rows_emitted += (*out)->n_rows;
                return st;
            }
        }
        scan_job *j = &s->jobs[s->cur];
        if (j->group && !j->done && !j->no_wait) {
            /* on the pool: its batches as they come */
            hs_batch *b = NULL;
            job_take(s, j, &b);
            if (b) {
                s->plan->stats.rows_emitted += b->n_rows;
                *out = b;
                return HS_OK;
            }
        }
        if (!j->done) {
            /* finished (pool), or run it now (this thread) */
            j->done = true;
            hs_status st = scan_wait(s, j, err);
            if (st != HS_OK) {
                s->failed = true;
                return st;
            }
        }
        if (j->taken < HS_VEC_LEN(&j->batches, hs_batch *)) {
            /* what a job run on this thread collected */
            hs_batch *b = HS_VEC_AT(&j->batches, hs_batch *, j->taken);
            j->taken++;
            s->plan->stats.rows_emitted += b->n_rows;
            *out = b;
            return HS_OK;
        }
        /* the job is used up */
        job_reset(j);
        s->cur = (s->cur + 1) % s->window;
        s->n_jobs--;
        hs_status st = scan_fill(s, err);
        if (st != HS_OK) {
            s->failed = true;
            return st;
        }
    }
}

hs_status tbl_scan_drain(hs_scan *s, hs_error *err)
{
    for (;;) {
        hs_batch *b = NULL;
        HS_TRY(scan_next(s, &b, err));
        if (!b)
            return HS_OK;
        hs_batch_free(b);
    }
}

static void scan_close(void *ctx) { hs_scan_free(ctx); }

hs_status hs_scan_stream(hs_scan *s, struct ArrowArrayStream *out, hs_error *err)
{
    hs_batch_source src = {.next = scan_next, .close = scan_close, .ctx = s};
    if (hs_field_copy(&s->out_schema, &src.schema) != HS_OK) {
        hs_scan_free(s);
        return hs_err_nomem(err, 64);
    }
    return hs_arrow_export_stream(&src, out, err);
}

hs_status hs_table_scan(hs_table *t, const hs_scan_options *opt, struct ArrowArrayStream *out,
                        hs_error *err)
{
    hs_scan *s = NULL;
    HS_TRY(hs_scan_plan(t, opt, &s, err));
    return hs_scan_stream(s, out, err);
}

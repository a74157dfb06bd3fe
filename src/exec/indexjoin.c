/*
 * exec/indexjoin.c - IndexJoin: a join whose right side is a table scan
 * restricted to the keys the left side holds, so that the table layer's
 * pruning and sidecar indexes find the matching rows (the "index nested
 * loop join" of a small left side and an indexed table).
 *
 * On the first xo_next the left child is read to the end (it is the small
 * side; memory accounted), its distinct non-null keys are written as an IN
 * list into the scan's filter text:
 *     (<the scan's own filter>) AND "key" IN (k1, k2, ...)
 * and the join becomes HashJoin(Values(left rows), Scan(table, that
 * filter)), which then produces every batch.  Keys are integers (any
 * width) or strings; more than XO_INDEX_JOIN_MAX_KEYS distinct keys scan
 * with the scan's own filter only (same result, no index use).  A left
 * side without keys scans nothing (INNER/SEMI give no rows, LEFT/ANTI all
 * left rows).
 *
 * The scan is planned once in the constructor too (without the IN list) to
 * know the output schema and to surface unknown columns and filter errors
 * there.  EXPLAIN before the first batch shows the left child; after it,
 * the HashJoin tree that ran (with the scan's pruning and index counters).
 */
#include "exec/exec_int.h"
#include "base/hashmap.h"

#include <inttypes.h>
#include <stdio.h>

#define XO_INDEX_JOIN_MAX_KEYS 65536

typedef struct ijoin_op {
    xo_op op;
    hs_table *t;
    hs_scan_options opt;       /* strings and columns owned (copies) */
    char **cols;
    char *filter;
    char *key_name;            /* the table's key column */
    int lkey, rkey;            /* left key position, key position in the scan output */
    xo_join_kind kind;
    xo_op *inner;              /* the HashJoin that runs, after the first next */
} ijoin_op;

static hs_status quote_into(hs_buf *b, const char *s, size_t n, char q)
{
    HS_TRY(hs_buf_append_byte(b, (uint8_t)q));
    for (size_t i = 0; i < n; i++) {
        if (s[i] == q)
            HS_TRY(hs_buf_append_byte(b, (uint8_t)q));
        HS_TRY(hs_buf_append_byte(b, (uint8_t)s[i]));
    }
    return hs_buf_append_byte(b, (uint8_t)q);
}

/* The IN list of the distinct non-null keys of column lkey of rows; *n_keys
 * gets their count (the text is left empty past the cap). */
static hs_status key_list(const xo_rows *rows, int lkey, hs_buf *out, int64_t *n_keys,
                          hs_error *err)
{
    *n_keys = 0;
    if (!rows->b)
        return HS_OK;
    const hs_column *c = rows->b->cols[lkey];
    hs_map seen = {0};
    hs_buf kb = {0};
    hs_status st = HS_OK;
    for (int64_t i = 0; i < rows->b->n_rows && st == HS_OK; i++) {
        if (!hs_col_is_valid(c, i) || c->type == HS_TYPE_NA)
            continue;
        hs_buf_reset(&kb);
        uint64_t v;
        bool found;
        st = xo_key_append(&kb, c, i);
        if (st == HS_OK)
            st = hs_map_get_or_put(&seen, kb.data, kb.len, 0, &v, &found);
        if (st != HS_OK || found)
            continue;
        if (++*n_keys > XO_INDEX_JOIN_MAX_KEYS)
            break;
        if (*n_keys > 1)
            st = hs_buf_puts(out, ", ");
        if (st != HS_OK)
            break;
        if (c->type == HS_TYPE_STRING) {
            const int32_t *o = HS_COL_OFFSETS(c);
            st = quote_into(out, (const char *)c->values.data + o[i], (size_t)(o[i + 1] - o[i]), '\'');
        } else {
            bool big;
            int64_t x = xo_int_at(c, i, &big);
            st = big ? hs_buf_printf(out, "%" PRIu64, (uint64_t)x) : hs_buf_printf(out, "%" PRId64, x);
        }
    }
    hs_map_free(&seen);
    hs_buf_free(&kb);
    return st == HS_OK ? HS_OK : hs_err_nomem(err, 0);
}

static hs_status ijoin_start(ijoin_op *s, hs_error *err)
{
    xo_op *op = &s->op;
    xo_op *left = op->children[0];
    xo_rows rows = {0};
    hs_status st = xo_rows_init(&rows, &left->schema, err);
    for (;;) {
        hs_batch *b;
        if (st == HS_OK)
            st = xo_next(left, &b, err);
        if (st != HS_OK || !b)
            break;
        st = xo_rows_append(&rows, op->ctx, op->name, b, err);
        hs_batch_free(b);
    }
    hs_buf in = {0}, filter = {0};
    int64_t n_keys = 0;
    if (st == HS_OK)
        st = key_list(&rows, s->lkey, &in, &n_keys, err);
    hs_status bst = HS_OK;
    if (st == HS_OK && n_keys <= XO_INDEX_JOIN_MAX_KEYS) {
        if (s->opt.filter && s->opt.filter[0])
            bst = hs_buf_printf(&filter, "(%s) AND ", s->opt.filter);
        if (bst == HS_OK)
            bst = quote_into(&filter, s->key_name, strlen(s->key_name), '"');
        if (bst == HS_OK)
            bst = n_keys == 0 ? hs_buf_puts(&filter, " IS NULL AND FALSE")
                              : hs_buf_printf(&filter, " IN (%s)", hs_buf_cstr(&in));
    } else if (st == HS_OK && s->opt.filter) {
        bst = hs_buf_puts(&filter, s->opt.filter);
    }
    if (st == HS_OK && bst != HS_OK)
        st = hs_err_nomem(err, 0);
    hs_buf_free(&in);
    /* Values(left rows) and Scan(filter), joined */
    xo_op *values = NULL, *scan = NULL;
    hs_batch *lb = rows.b;
    if (st == HS_OK) {
        rows.b = NULL;   /* moved into Values */
        bool some = lb && lb->n_rows > 0;
        st = xo_values(op->ctx, &left->schema, some ? 1 : 0, &lb, &values, err);
        if (!some)
            hs_batch_free(lb);
    }
    if (st == HS_OK) {
        hs_scan_options o = s->opt;
        o.filter = filter.len ? hs_buf_cstr(&filter) : NULL;
        st = xo_scan(op->ctx, s->t, &o, &scan, err);
    }
    hs_buf_free(&filter);
    if (st == HS_OK) {
        values->name = "Values (left rows)";
        st = xo_hashjoin(values, scan, s->kind, 1, &s->lkey, &s->rkey, NULL, &s->inner, err);
        values = scan = NULL;
    }
    xo_free(values);
    xo_free(scan);
    /* the left rows' memory: released now that Values owns them (it streams
     * them out; the join's build side is the scan) */
    xo_mem_release(op->ctx, rows.bytes);
    rows.bytes = 0;
    xo_rows_free(&rows, op->ctx);
    return st;
}

static hs_status ijoin_next(xo_op *op, hs_batch **out, hs_error *err)
{
    ijoin_op *s = (ijoin_op *)op;
    if (!s->inner)
        HS_TRY(ijoin_start(s, err));
    HS_TRY(xo_next(s->inner, out, err));
    if (*out)
        HS_TRY(xo_batch_set_schema(*out, &op->schema, err));
    return HS_OK;
}

static hs_status ijoin_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const ijoin_op *s = (const ijoin_op *)op;
    if (!s->inner)
        return HS_OK;
    if (hs_buf_puts(out, "ran as:\n") != HS_OK)
        return hs_err_nomem(err, 0);
    return xo_explain(s->inner, true, out, err);
}

static void ijoin_destroy(xo_op *op)
{
    ijoin_op *s = (ijoin_op *)op;
    xo_free(s->inner);
    for (int i = 0; s->cols && i < s->opt.n_columns; i++)
        hs_free(s->cols[i]);
    hs_free(s->cols);
    hs_free(s->filter);
    hs_free((char *)s->opt.ref);
    hs_free(s->key_name);
}

static hs_status ijoin_setup(ijoin_op *s, const hs_scan_options *opt, const char *key,
                             hs_error *err)
{
    xo_op *op = &s->op, *left = op->children[0];
    if (opt) {
        if (opt->struct_size != 0 && opt->struct_size != sizeof s->opt)
            return hs_err_set(err, HS_INVALID, "IndexJoin: hs_scan_options.struct_size is %zu", opt->struct_size);
        s->opt = *opt;
    }
    s->opt.struct_size = sizeof s->opt;
    s->opt.columns = NULL;
    s->opt.filter = NULL;
    s->opt.ref = NULL;
    if (opt && opt->n_columns > 0 && opt->columns) {
        s->cols = hs_calloc((size_t)opt->n_columns, sizeof *s->cols);
        if (!s->cols)
            return hs_err_nomem(err, 0);
        for (int i = 0; i < opt->n_columns; i++)
            if (!(s->cols[i] = hs_strdup(opt->columns[i])))
                return hs_err_nomem(err, 0);
        s->opt.columns = (const char *const *)s->cols;
    } else {
        s->opt.n_columns = 0;
    }
    if ((opt && opt->filter && !(s->filter = hs_strdup(opt->filter))) ||
        (opt && opt->ref && !(s->opt.ref = hs_strdup(opt->ref))) || !(s->key_name = hs_strdup(key)))
        return hs_err_nomem(err, 0);
    s->opt.filter = s->filter;
    if (s->lkey < 0 || s->lkey >= left->schema.n_children)
        return hs_err_set(err, HS_INVALID, "IndexJoin: left key column %d out of range", s->lkey);
    hs_type lt = left->schema.children[s->lkey].type;
    if (lt != HS_TYPE_STRING && !(xo_is_int_type(lt) && lt != HS_TYPE_DATE32 && lt != HS_TYPE_TIME32 &&
                                  lt != HS_TYPE_TIME64 && lt != HS_TYPE_TIMESTAMP))
        return hs_err_set(err, HS_UNSUPPORTED, "IndexJoin: keys of type %s (integers and strings only)",
                          hs_type_name(lt));
    if (s->kind != XO_JOIN_INNER && s->kind != XO_JOIN_LEFT && s->kind != XO_JOIN_SEMI &&
        s->kind != XO_JOIN_ANTI)
        return hs_err_set(err, HS_UNSUPPORTED, "IndexJoin: INNER, LEFT, SEMI and ANTI only");
    /* plan once for the schema and the errors */
    xo_op *scan;
    HS_TRY(xo_scan(op->ctx, s->t, &s->opt, &scan, err));
    s->rkey = -1;
    for (int i = 0; i < scan->schema.n_children; i++)
        if (strcmp(scan->schema.children[i].name, key) == 0)
            s->rkey = i;
    hs_status st = HS_OK;
    if (s->rkey < 0)
        st = hs_err_set(err, HS_NOT_FOUND, "IndexJoin: key column \"%s\" is not among the scan's columns", key);
    xo_op *probe = NULL;
    if (st == HS_OK) {
        xo_op *lv;
        st = xo_values(op->ctx, &left->schema, 0, NULL, &lv, err);
        if (st == HS_OK)
            st = xo_hashjoin(lv, scan, s->kind, 1, &s->lkey, &s->rkey, NULL, &probe, err);
        scan = NULL;
    }
    xo_free(scan);
    if (st == HS_OK) {
        hs_field_clear(&op->schema);
        if (hs_field_copy(&probe->schema, &op->schema) != HS_OK) {
            hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
            st = hs_err_nomem(err, 0);
        }
    }
    xo_free(probe);
    if (st == HS_OK) {
        hs_buf d = {0};
        if (hs_buf_printf(&d, "key: #%d = \"%s\"; %s%s%s", s->lkey + 1, key,
                          s->kind == XO_JOIN_INNER ? "Inner" : s->kind == XO_JOIN_LEFT ? "Left"
                          : s->kind == XO_JOIN_SEMI ? "Semi" : "Anti",
                          s->filter ? "; filter: " : "", s->filter ? s->filter : "") != HS_OK) {
            hs_buf_free(&d);
            return hs_err_nomem(err, 0);
        }
        op->detail = (char *)hs_buf_detach(&d, NULL);
    }
    return st;
}

hs_status xo_index_join(xo_op *left, int lkey, hs_table *t, const hs_scan_options *opt,
                        const char *key_column, xo_join_kind kind, xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(ijoin_op), left->ctx, "IndexJoin", 1, &left, &op, err));
    ijoin_op *s = (ijoin_op *)op;
    op->next = ijoin_next;
    op->destroy = ijoin_destroy;
    op->explain_extra = ijoin_extra;
    s->t = t;
    s->lkey = lkey;
    s->kind = kind;
    hs_status st = ijoin_setup(s, opt, key_column ? key_column : "", err);
    if (st != HS_OK) {
        xo_free(op);
        return st;
    }
    *out = op;
    return HS_OK;
}

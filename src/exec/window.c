/*
 * exec/window.c - Window: window functions over one window (PARTITION BY
 * columns, ORDER BY keys), several functions at once.
 *
 * The input is materialised (xo_rows, memory accounted) and a permutation
 * sorted by (partition columns, order keys) with the stable merge sort.
 * Walking the permutation marks where partitions and peer groups (rows
 * equal on the order keys) start.  Every frame starts at the partition's
 * first row, so each function is one pass per partition with a running
 * state: the frame end of position p is
 *     ROWS                       p
 *     DEFAULT with ORDER BY      the last peer of p
 *     DEFAULT without, WHOLE     the partition's last row
 * and is non-decreasing, so the state consumes rows up to it and the value
 * at p is the state then.  Ranking functions count positions and peer
 * groups; lag/lead/first_value/last_value pick a row index (-1 = NULL)
 * and take it from the argument column.
 * Output: the rows in permutation order, child columns taken, the computed
 * columns sliced, in batches of XO_BATCH_ROWS.
 */
#include "exec/exec_int.h"

#include <stdio.h>

typedef struct win_op {
    xo_op op;
    int n_part, n_keys, n_fns;
    xo_sort_key *sort;    /* partition columns (ASC NULLS LAST) then keys */
    xo_win *fns;          /* names owned */
    xo_rows rows;
    int64_t *perm;
    int64_t n;
    hs_column **computed; /* n_fns columns of n rows, permutation order */
    int64_t emitted;
    bool done;
} win_op;

static const char *win_name(xo_win_fn f)
{
    static const char *names[] = {"row_number", "rank", "dense_rank", "count", "count", "sum",
                                  "avg", "min", "max", "lag", "lead", "first_value", "last_value"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "?";
}

static bool same_keys(const win_op *w, const xo_sort_key *keys, int n, int64_t a, int64_t b)
{
    return xo_keys_cmp(keys, n, w->rows.b->cols, a, w->rows.b->cols, b) == 0;
}

static bool is_float(hs_type t)
{
    return t == HS_TYPE_FLOAT16 || t == HS_TYPE_FLOAT32 || t == HS_TYPE_FLOAT64;
}

/* Computes function f into *out (n rows in permutation order). */
static hs_status compute(win_op *w, const xo_win *f, const hs_field *of, const uint8_t *pnew,
                         const uint8_t *peer_new, hs_column **out, hs_error *err)
{
    int64_t n = w->n;
    const int64_t *perm = w->perm;
    hs_column *arg = f->fn <= XO_WIN_COUNT_STAR ? NULL : w->rows.b->cols[f->arg];
    bool picks = f->fn >= XO_WIN_MIN;   /* result is a row of arg */
    int64_t *pick = NULL;
    hs_column *col = NULL;
    if (picks) {
        pick = hs_malloc((size_t)(n ? n : 1) * sizeof *pick);
        if (!pick)
            return hs_err_nomem(err, 0);
    } else {
        HS_TRY(hs_col_create(of, n, &col, err));
    }
    hs_status st = HS_OK;
    int64_t ps = 0;
    while (ps < n && st == HS_OK) {
        int64_t pe = ps + 1;
        while (pe < n && !pnew[pe])
            pe++;
        /* running state */
        int64_t consumed = ps, cnt = 0, best = -1, rank = 0, dense = 0;
        __int128 isum = 0;
        double fsum = 0;
        for (int64_t p = ps; p < pe && st == HS_OK; p++) {
            int64_t fend;
            if (f->frame == XO_FRAME_ROWS)
                fend = p;
            else if (f->frame == XO_FRAME_WHOLE || w->n_keys == 0)
                fend = pe - 1;
            else {
                fend = p;
                while (fend + 1 < pe && !peer_new[fend + 1])
                    fend++;
            }
            switch (f->fn) {
            case XO_WIN_ROW_NUMBER: {
                int64_t v = p - ps + 1;
                st = hs_col_append_fixed(col, &v);
                continue;
            }
            case XO_WIN_RANK: case XO_WIN_DENSE_RANK:
                if (p == ps || peer_new[p]) {
                    rank = p - ps + 1;
                    dense++;
                }
                st = hs_col_append_fixed(col, f->fn == XO_WIN_RANK ? &rank : &dense);
                continue;
            case XO_WIN_LAG: case XO_WIN_LEAD: {
                int64_t off = f->offset > 0 ? f->offset : 1;
                int64_t q = f->fn == XO_WIN_LAG ? p - off : p + off;
                pick[p] = q >= ps && q < pe ? perm[q] : -1;
                continue;
            }
            case XO_WIN_FIRST_VALUE: pick[p] = perm[ps]; continue;
            case XO_WIN_LAST_VALUE: pick[p] = perm[fend]; continue;
            default: break;
            }
            for (; consumed <= fend; consumed++) {
                int64_t r = perm[consumed];
                if (f->fn == XO_WIN_COUNT_STAR) {
                    cnt++;
                    continue;
                }
                if (!hs_col_is_valid(arg, r) || arg->type == HS_TYPE_NA)
                    continue;
                cnt++;
                if (f->fn == XO_WIN_MIN || f->fn == XO_WIN_MAX) {
                    int c = best < 0 ? -1 : xo_val_cmp(arg, r, arg, best);
                    if (best < 0 || (f->fn == XO_WIN_MIN ? c < 0 : c > 0))
                        best = r;
                } else if (is_float(arg->type)) {
                    fsum += xo_float_at(arg, r);
                } else if (arg->type == HS_TYPE_DECIMAL128) {
                    __int128 v;
                    memcpy(&v, arg->values.data + 16 * r, 16);
                    if (__builtin_add_overflow(isum, v, &isum))
                        st = hs_err_set(err, HS_INVALID, "%s: numeric field overflow", win_name(f->fn));
                } else {
                    bool big;
                    int64_t v = xo_int_at(arg, r, &big);
                    isum += big ? (__int128)(uint64_t)v : (__int128)v;
                }
            }
            if (st != HS_OK)
                break;
            if (f->fn == XO_WIN_MIN || f->fn == XO_WIN_MAX) {
                pick[p] = best;
                continue;
            }
            if (f->fn == XO_WIN_COUNT || f->fn == XO_WIN_COUNT_STAR) {
                st = hs_col_append_fixed(col, &cnt);
                continue;
            }
            if (cnt == 0) {
                st = hs_col_append_null(col);
                continue;
            }
            if (f->fn == XO_WIN_AVG) {
                double v;
                if (is_float(arg->type)) {
                    v = fsum / (double)cnt;
                } else {
                    long double q = (long double)isum / (long double)cnt;
                    for (int k = 0; arg->type == HS_TYPE_DECIMAL128 && k < w->rows.b->schema.children[f->arg].scale; k++)
                        q /= 10;
                    v = (double)q;
                }
                st = hs_col_append_fixed(col, &v);
            } else if (of->type == HS_TYPE_FLOAT64) {
                st = hs_col_append_fixed(col, &fsum);
            } else if (of->type == HS_TYPE_INT64) {
                if (isum > INT64_MAX || isum < INT64_MIN) {
                    st = hs_err_set(err, HS_INVALID, "sum: bigint out of range");
                    break;
                }
                int64_t v = (int64_t)isum;
                st = hs_col_append_fixed(col, &v);
            } else {
                st = hs_col_append_fixed(col, &isum);
            }
        }
        ps = pe;
    }
    if (st == HS_OK && picks)
        st = hs_col_take_nullable(arg, pick, n, out, err);
    else if (st == HS_OK)
        *out = col, col = NULL;
    if (st == HS_NOMEM)
        (void)hs_err_nomem(err, 0);
    hs_free(pick);
    hs_col_free(col);
    return st;
}

static hs_status win_consume(win_op *w, hs_error *err)
{
    xo_op *op = &w->op;
    HS_TRY(xo_rows_init(&w->rows, &op->children[0]->schema, err));
    for (;;) {
        hs_batch *b;
        HS_TRY(xo_next(op->children[0], &b, err));
        if (!b)
            break;
        hs_status st = xo_rows_append(&w->rows, op->ctx, op->name, b, err);
        hs_batch_free(b);
        HS_TRY(st);
    }
    int64_t n = w->n = xo_rows_count(&w->rows);
    w->perm = hs_malloc((size_t)(n ? n : 1) * sizeof *w->perm);
    uint8_t *pnew = hs_calloc((size_t)(n ? n : 1), 1), *peer = hs_calloc((size_t)(n ? n : 1), 1);
    w->computed = hs_calloc((size_t)(w->n_fns ? w->n_fns : 1), sizeof *w->computed);
    hs_status st = (!w->perm || !pnew || !peer || !w->computed) ? hs_err_nomem(err, 0) : HS_OK;
    for (int64_t i = 0; st == HS_OK && i < n; i++)
        w->perm[i] = i;
    if (st == HS_OK)
        st = xo_sort_perm(w->rows.b->cols, w->n_part + w->n_keys, w->sort, n, w->perm, err);
    for (int64_t p = 0; st == HS_OK && p < n; p++) {
        pnew[p] = p == 0 || !same_keys(w, w->sort, w->n_part, w->perm[p - 1], w->perm[p]);
        peer[p] = pnew[p] || !same_keys(w, w->sort + w->n_part, w->n_keys, w->perm[p - 1], w->perm[p]);
    }
    int nc = op->children[0]->schema.n_children;
    for (int j = 0; j < w->n_fns && st == HS_OK; j++) {
        st = compute(w, &w->fns[j], &op->schema.children[nc + j], pnew, peer, &w->computed[j], err);
        if (st == HS_OK) {
            int64_t bytes = xo_col_bytes(w->computed[j]);
            st = xo_mem_reserve(op->ctx, bytes, op->name, err);
            if (st == HS_OK)
                w->rows.bytes += bytes;   /* released with the rows */
            HS_TRY(xo_check_cancel(op->ctx, err));
        }
    }
    hs_free(pnew);
    hs_free(peer);
    return st;
}

static hs_status win_next(xo_op *op, hs_batch **out, hs_error *err)
{
    win_op *w = (win_op *)op;
    if (!w->done) {
        HS_TRY(win_consume(w, err));
        w->done = true;
    }
    HS_TRY(xo_check_cancel(op->ctx, err));
    if (w->emitted >= w->n)
        return HS_OK;
    int64_t n = w->n - w->emitted < XO_BATCH_ROWS ? w->n - w->emitted : XO_BATCH_ROWS;
    int nc = w->rows.b->n_cols, total = nc + w->n_fns;
    hs_column **cols = hs_calloc((size_t)total, sizeof *cols);
    if (!cols)
        return hs_err_nomem(err, 0);
    hs_status st = HS_OK;
    for (int c = 0; c < total && st == HS_OK; c++)
        st = c < nc ? hs_col_take(w->rows.b->cols[c], w->perm + w->emitted, n, &cols[c], err)
                    : hs_col_slice(w->computed[c - nc], w->emitted, n, &cols[c], err);
    if (st == HS_OK)
        st = xo_batch_wrap(&op->schema, total, cols, n, out, err);
    else
        for (int c = 0; c < total; c++)
            hs_col_free(cols[c]);
    hs_free(cols);
    w->emitted += n;
    return st;
}

static void win_destroy(xo_op *op)
{
    win_op *w = (win_op *)op;
    for (int j = 0; w->fns && j < w->n_fns; j++) {
        hs_free((char *)w->fns[j].name);
        if (w->computed)
            hs_col_free(w->computed[j]);
    }
    hs_free(w->computed);
    hs_free(w->fns);
    hs_free(w->sort);
    hs_free(w->perm);
    xo_rows_free(&w->rows, op->ctx);
}

static hs_status win_field(const xo_win *f, const hs_field *arg, hs_field *out, hs_error *err)
{
    const char *name = f->name ? f->name : win_name(f->fn);
    switch (f->fn) {
    case XO_WIN_ROW_NUMBER: case XO_WIN_RANK: case XO_WIN_DENSE_RANK: case XO_WIN_COUNT_STAR:
    case XO_WIN_COUNT:
        hs_field_init(out, name, HS_TYPE_INT64, false);
        return HS_OK;
    case XO_WIN_SUM: case XO_WIN_AVG:
        if (is_float(arg->type) || f->fn == XO_WIN_AVG) {
            if (!is_float(arg->type) && !(arg->type >= HS_TYPE_INT8 && arg->type <= HS_TYPE_UINT64) &&
                arg->type != HS_TYPE_DECIMAL128)
                break;
            hs_field_init(out, name, HS_TYPE_FLOAT64, true);
            return HS_OK;
        }
        if (arg->type == HS_TYPE_DECIMAL128 || arg->type == HS_TYPE_INT64 || arg->type == HS_TYPE_UINT64) {
            hs_field_init(out, name, HS_TYPE_DECIMAL128, true);
            out->precision = 38;
            out->scale = arg->type == HS_TYPE_DECIMAL128 ? arg->scale : 0;
            return HS_OK;
        }
        if (arg->type >= HS_TYPE_INT8 && arg->type <= HS_TYPE_UINT32) {
            hs_field_init(out, name, HS_TYPE_INT64, true);
            return HS_OK;
        }
        break;
    default:
        if (hs_field_copy(arg, out) != HS_OK)
            return hs_err_nomem(err, 0);
        hs_free(out->name);
        out->name = hs_strdup(name);
        out->nullable = true;
        return out->name ? HS_OK : hs_err_nomem(err, 0);
    }
    return hs_err_set(err, HS_INVALID, "function %s(%s) does not exist", win_name(f->fn),
                      hs_type_name(arg->type));
}

static hs_status win_setup(win_op *w, const int *part, const xo_sort_key *keys, const xo_win *fns,
                           hs_buf *d, hs_error *err)
{
    const hs_field *in = &w->op.children[0]->schema;
    w->sort = hs_calloc((size_t)(w->n_part + w->n_keys + 1), sizeof *w->sort);
    w->fns = hs_calloc((size_t)(w->n_fns + 1), sizeof *w->fns);
    if (!w->sort || !w->fns)
        return hs_err_nomem(err, 0);
    for (int i = 0; i < w->n_part + w->n_keys; i++) {
        xo_sort_key k = i < w->n_part ? (xo_sort_key){part[i], false, false} : keys[i - w->n_part];
        if (k.col < 0 || k.col >= in->n_children)
            return hs_err_set(err, HS_INVALID, "Window: column %d out of range", k.col);
        w->sort[i] = k;
        if (hs_buf_printf(d, "%s#%d%s", i == 0 ? (w->n_part ? "partition: " : "order: ")
                                        : i == w->n_part ? "; order: " : ", ",
                          k.col + 1, i >= w->n_part && k.desc ? " DESC" : "") != HS_OK)
            return hs_err_nomem(err, 0);
    }
    for (int i = 0; i < in->n_children; i++) {
        hs_field f;
        if (hs_field_copy(&in->children[i], &f) != HS_OK)
            return hs_err_nomem(err, 0);
        if (hs_field_add_child(&w->op.schema, &f) != HS_OK) {
            hs_field_clear(&f);
            return hs_err_nomem(err, 0);
        }
    }
    for (int j = 0; j < w->n_fns; j++) {
        w->fns[j] = fns[j];
        w->fns[j].name = NULL;
        bool needs_arg = fns[j].fn > XO_WIN_COUNT_STAR;
        if (needs_arg && (fns[j].arg < 0 || fns[j].arg >= in->n_children))
            return hs_err_set(err, HS_INVALID, "Window: %s argument column %d out of range",
                              win_name(fns[j].fn), fns[j].arg);
        if (fns[j].name && !(w->fns[j].name = hs_strdup(fns[j].name)))
            return hs_err_nomem(err, 0);
        hs_field f;
        HS_TRY(win_field(&w->fns[j], needs_arg ? &in->children[fns[j].arg] : NULL, &f, err));
        if (!f.name || hs_field_add_child(&w->op.schema, &f) != HS_OK) {
            hs_field_clear(&f);
            return hs_err_nomem(err, 0);
        }
        if (hs_buf_printf(d, "%s%s(%s)", j ? ", " : (d->len ? "; functions: " : "functions: "),
                          win_name(fns[j].fn), needs_arg ? "#" : "") != HS_OK ||
            (needs_arg && hs_buf_printf(d, "%d", fns[j].arg + 1) != HS_OK))
            return hs_err_nomem(err, 0);
    }
    xo_schema_renumber(&w->op.schema);
    return HS_OK;
}

hs_status xo_window(xo_op *child, int n_part, const int *part, int n_keys, const xo_sort_key *keys,
                    int n_fns, const xo_win *fns, xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(win_op), child->ctx, "Window", 1, &child, &op, err));
    win_op *w = (win_op *)op;
    op->next = win_next;
    op->destroy = win_destroy;
    w->n_part = n_part > 0 ? n_part : 0;
    w->n_keys = n_keys > 0 ? n_keys : 0;
    w->n_fns = n_fns > 0 ? n_fns : 0;
    hs_buf d = {0};
    hs_status st = win_setup(w, part, keys, fns, &d, err);
    if (st != HS_OK) {
        hs_buf_free(&d);
        xo_free(op);
        return st;
    }
    op->detail = d.len ? (char *)hs_buf_detach(&d, NULL) : NULL;
    hs_buf_free(&d);
    *out = op;
    return HS_OK;
}

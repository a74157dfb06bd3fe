/*
 * exec/srf.c - ProjectSet: set-returning functions evaluated per row
 * (unnest of a list column, generate_series), PostgreSQL 10's semantics.
 *
 * For each input row every function produces its rows in lockstep: the
 * input row repeats as often as the longest of them, the shorter ones are
 * padded with NULL, and a row for which every function produces nothing
 * yields no output row (with `outer`: one row whose function columns are
 * NULL, which is LEFT JOIN LATERAL f(...) ON true).  Output: the child's
 * columns, then one column per function, then (ordinality) a bigint
 * counting the row's outputs from 1 (WITH ORDINALITY).
 *
 * The functions read their arguments from child columns (the planner
 * projects argument expressions into columns first):
 *   unnest(list)                     the list's elements (LIST and
 *                                    FIXED_LIST; a NULL list is empty)
 *   unnest(ARRAY[e1, ..., en])       the row's values of n columns in order
 *   string_to_table(s, delim[, null_string]) PostgreSQL 14's: the pieces
 *                                    of s between delimiters; a NULL
 *                                    delimiter splits into characters
 *                                    (UTF-8), an empty one gives s whole;
 *                                    an empty s gives nothing; pieces equal
 *                                    to null_string are NULL
 *   generate_series(start, stop[, step]) of int32 / int64 (the type of the
 *                                    start column), step 1 when absent;
 *                                    of decimal128 (start, stop and step of
 *                                    one scale; exact, as PostgreSQL's
 *                                    numeric version),
 *                                    of timestamps with an interval step,
 *                                    added repeatedly as PostgreSQL does
 *                                    (month steps stay on the clamped day)
 * A NULL argument of generate_series gives no rows; a zero step fails
 * with "step size cannot equal zero" (22023), integer overflow of the
 * next value ends the series as PostgreSQL's int4/int8 versions do.
 *
 * Output batches are cut at XO_BATCH_ROWS rows; one input row that
 * produces more (generate_series(1, 10^9)) is resumed across calls, so
 * memory stays bounded by a batch whatever the series' length, and no
 * series is walked ahead of what is produced (a timestamp series of
 * 10^18 microsecond steps costs only the batches read from it).
 */
#include "exec/exec_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

typedef struct srf_op {
    xo_op op;
    int n;
    xo_srf *srfs;
    bool ordinality, outer;
    int n_child;          /* child's columns */
    hs_batch *in;         /* current input batch */
    int64_t row;          /* current input row */
    int64_t done;         /* outputs of that row already produced */
    /* per function, where the current row's outputs resume in the next
     * batch: rk outputs produced (-1: ended), rv the last timestamp
     * (generate_series of timestamps) or the byte offset of the next
     * piece (string_to_table) */
    int64_t *rk, *rv;
    bool eof;
} srf_op;

/* ---- generate_series ---- */

static int64_t col_i64(const hs_column *c, int64_t r)
{
    if (c->type == HS_TYPE_INT32)
        return HS_COL_VALUES(c, int32_t)[r];
    if (c->type == HS_TYPE_INT16)
        return HS_COL_VALUES(c, int16_t)[r];
    return HS_COL_VALUES(c, int64_t)[r];
}

/* Rows of generate_series at input row r: for integers the count is
 * computed exactly; for timestamps -1 (they end while producing), 0 when
 * an argument is NULL. */
static hs_status series_count(srf_op *s, const xo_srf *f, int64_t r, int64_t *out, hs_error *err)
{
    hs_column *a = s->in->cols[f->arg[0]], *b = s->in->cols[f->arg[1]];
    hs_column *c = f->arg[2] >= 0 ? s->in->cols[f->arg[2]] : NULL;
    *out = 0;
    if (!hs_col_is_valid(a, r) || !hs_col_is_valid(b, r) || (c && !hs_col_is_valid(c, r)))
        return HS_OK;
    if (f->kind == XO_SRF_SERIES_TS) {
        hs_interval iv = HS_COL_VALUES(c, hs_interval)[r];
        if (hs_interval_span(iv) == 0)
            return hs_err_set(err, HS_INVALID, "step size cannot equal zero");
        *out = -1;
        return HS_OK;
    }
    if (f->kind == XO_SRF_SERIES_DEC) {
        __int128 st = c ? HS_COL_VALUES(c, __int128)[r] : 1, lo = HS_COL_VALUES(a, __int128)[r],
                 hi = HS_COL_VALUES(b, __int128)[r], d, n = 0;
        if (st == 0)
            return hs_err_set(err, HS_INVALID, "step size cannot equal zero");
        if ((st > 0 && hi >= lo) || (st < 0 && hi <= lo)) {
            /* |hi - lo| can pass int128 only beyond 38 digits' reach of
             * both: then the series is practically endless */
            if (__builtin_sub_overflow(st > 0 ? hi : lo, st > 0 ? lo : hi, &d))
                n = (__int128)INT64_MAX;
            else
                n = d / (st > 0 ? st : -st) + 1;
        }
        *out = n > INT64_MAX ? INT64_MAX : (int64_t)n;
        return HS_OK;
    }
    __int128 st = c ? col_i64(c, r) : 1;
    if (st == 0)
        return hs_err_set(err, HS_INVALID, "step size cannot equal zero");
    __int128 lo = col_i64(a, r), hi = col_i64(b, r);
    __int128 n = 0;
    if (st > 0 && hi >= lo)
        n = (hi - lo) / st + 1;
    else if (st < 0 && hi <= lo)
        n = (lo - hi) / -st + 1;
    *out = n > INT64_MAX ? INT64_MAX : (int64_t)n;
    return HS_OK;
}

/* The k-th timestamp of the series at row r (k >= done, called in order:
 * *cur carries the previous value); false when past stop or out of range. */
static bool ts_step(const srf_op *s, const xo_srf *f, int64_t r, int64_t k, int64_t *cur)
{
    hs_column *a = s->in->cols[f->arg[0]], *b = s->in->cols[f->arg[1]], *c = s->in->cols[f->arg[2]];
    hs_interval iv = HS_COL_VALUES(c, hs_interval)[r];
    int64_t v = k == 0 ? HS_COL_VALUES(a, int64_t)[r] : *cur;
    if (k > 0 && !ex_timestamp_add_interval(v, f->unit, iv, &v))
        return false;
    int64_t stop = HS_COL_VALUES(b, int64_t)[r];
    bool pos = hs_interval_span(iv) > 0;
    if (pos ? v > stop : v < stop)
        return false;
    *cur = v;
    return true;
}

/* ---- rows of one input row ---- */

static int64_t list_len(const hs_column *c, int64_t r)
{
    if (!hs_col_is_valid(c, r))
        return 0;
    if (c->type == HS_TYPE_FIXED_LIST)
        return c->width;
    return HS_COL_OFFSETS(c)[r + 1] - HS_COL_OFFSETS(c)[r];
}

static int64_t list_start(const hs_column *c, int64_t r)
{
    return c->type == HS_TYPE_FIXED_LIST ? r * c->width : HS_COL_OFFSETS(c)[r];
}

static bool text_at(const hs_column *c, int64_t r, const uint8_t **p, size_t *n)
{
    if (!hs_col_is_valid(c, r))
        return false;
    const int32_t *o = HS_COL_OFFSETS(c);
    /* a column of only '' strings may have no value buffer at all */
    *p = c->values.data ? c->values.data + o[r] : (const uint8_t *)"";
    *n = (size_t)(o[r + 1] - o[r]);
    return true;
}

/* string_to_table: pieces [from, from + want) of row r (the string is
 * scanned from its start each call; a row's pieces rarely span batches). */
static hs_status split_fill(srf_op *s, int i, int64_t r, int64_t from, int64_t want,
                            hs_column *col, int64_t *made, hs_error *err)
{
    const xo_srf *f = &s->srfs[i];
    const uint8_t *str, *del = NULL, *nul = NULL;
    size_t ns, nd = 0, nn = 0;
    if (!text_at(s->in->cols[f->arg[0]], r, &str, &ns) || ns == 0)
        return HS_OK;
    bool by_char = !text_at(s->in->cols[f->arg[1]], r, &del, &nd);
    bool has_null = f->arg[2] >= 0 && text_at(s->in->cols[f->arg[2]], r, &nul, &nn);
    /* a batch ends inside a long string's pieces: the next resumes at the
     * piece it stopped at (rk, rv) instead of splitting from the start */
    size_t pos = 0;
    int64_t k = 0;
    if (from > 0 && s->rk[i] == from && s->rv[i] >= 0 && (size_t)s->rv[i] <= ns + 1) {
        k = from;
        pos = (size_t)s->rv[i];
    }
    while (pos <= ns && *made < want) {
        size_t end;
        if (by_char) {
            if (pos == ns)
                break;
            end = pos + 1;
            while (end < ns && (str[end] & 0xC0) == 0x80)
                end++;
        } else if (nd == 0) {
            if (pos > 0)
                break;
            end = ns;
        } else {
            end = ns;
            for (size_t i = pos; i + nd <= ns; i++)
                if (!memcmp(str + i, del, nd)) {
                    end = i;
                    break;
                }
        }
        if (k >= from) {
            hs_status st;
            if (has_null && end - pos == nn && !memcmp(str + pos, nul, nn))
                st = hs_col_append_null(col);
            else
                st = hs_col_append_bytes(col, str + pos, end - pos);
            if (st != HS_OK)
                return hs_err_nomem(err, 0);
            (*made)++;
        }
        k++;
        if (end == ns) {
            pos = ns + 1;   /* ended */
            break;
        }
        pos = by_char ? end : end + nd;
    }
    s->rk[i] = k;
    s->rv[i] = (int64_t)pos;
    return HS_OK;
}

/* Appends outputs [from, from + want) of input row r for function i to
 * col, as many as the function has (*made; fewer than want: it ended). */
static hs_status fill(srf_op *s, int i, int64_t r, int64_t from, int64_t want, hs_column *col,
                      int64_t *made, hs_error *err)
{
    const xo_srf *f = &s->srfs[i];
    *made = 0;
    if (f->kind == XO_SRF_SPLIT)
        return split_fill(s, i, r, from, want, col, made, err);
    if (f->kind == XO_SRF_VALUES) {
        for (int64_t k = from; k < f->n_vals && *made < want; k++) {
            hs_column *piece;
            HS_TRY(hs_col_slice(s->in->cols[f->vals[k]], r, 1, &piece, err));
            hs_status st = hs_col_append_column(col, piece, err);
            hs_col_free(piece);
            HS_TRY(st);
            (*made)++;
        }
        return HS_OK;
    }
    if (f->kind == XO_SRF_UNNEST) {
        const hs_column *l = s->in->cols[f->arg[0]];
        int64_t len = list_len(l, r), have = from < len ? (len - from < want ? len - from : want) : 0;
        if (have > 0) {
            hs_column *piece;
            HS_TRY(hs_col_slice(l->children[0], list_start(l, r) + from, have, &piece, err));
            hs_status st = hs_col_append_column(col, piece, err);
            hs_col_free(piece);
            HS_TRY(st);
        }
        *made = have;
        return HS_OK;
    }
    int64_t cnt;
    HS_TRY(series_count(s, f, r, &cnt, err));
    if (f->kind == XO_SRF_SERIES_TS) {
        /* the walk resumes where the previous batch left it (rk values
         * produced so far of this row, -1 once it ended; rv the last) */
        if (from == 0)
            s->rk[i] = cnt == 0 ? -1 : 0;
        while (*made < want && s->rk[i] >= 0) {
            if (!ts_step(s, f, r, s->rk[i], &s->rv[i])) {
                s->rk[i] = -1;
                break;
            }
            if (hs_col_append_fixed(col, &s->rv[i]) != HS_OK)
                return hs_err_nomem(err, 0);
            s->rk[i]++;
            (*made)++;
        }
        return HS_OK;
    }
    const hs_column *a = s->in->cols[f->arg[0]];
    const hs_column *c = f->arg[2] >= 0 ? s->in->cols[f->arg[2]] : NULL;
    int64_t have = from < cnt ? (cnt - from < want ? cnt - from : want) : 0;
    if (have > 0 && f->kind == XO_SRF_SERIES_DEC) {
        /* start + k * step lies within [start, stop] (k < count): no overflow */
        __int128 start = HS_COL_VALUES(a, __int128)[r], step = c ? HS_COL_VALUES(c, __int128)[r] : 1;
        for (int64_t k = 0; k < have; k++) {
            __int128 v = start + (__int128)(from + k) * step;
            if (hs_col_append_fixed(col, &v) != HS_OK)
                return hs_err_nomem(err, 0);
        }
        *made = have;
        return HS_OK;
    }
    if (have > 0) {
        if (hs_col_reserve(col, have, 0) != HS_OK)
            return hs_err_nomem(err, 0);
        int64_t start = col_i64(a, r), step = c ? col_i64(c, r) : 1;
        int64_t base = col->length;
        for (int64_t k = 0; k < have; k++) {
            /* start + (from + k) * step stays within [start, stop] */
            int64_t v = (int64_t)((__int128)start + (__int128)(from + k) * step);
            if (col->type == HS_TYPE_INT32)
                HS_COL_VALUES(col, int32_t)[base + k] = (int32_t)v;
            else
                HS_COL_VALUES(col, int64_t)[base + k] = v;
        }
        col->length += have;
        col->values.len = (size_t)col->length * (size_t)col->width;
        if (col->validity.data) {
            for (int64_t k = 0; k < have; k++)
                hs_bit_set(col->validity.data, base + k);
            col->validity.len = (size_t)(col->length + 7) / 8;
        }
    }
    *made = have;
    return HS_OK;
}

static hs_status grow_take(int64_t **take, int64_t *cap, int64_t need, hs_error *err)
{
    if (need <= *cap)
        return HS_OK;
    int64_t nc = *cap ? *cap * 2 : 1024;
    while (nc < need)
        nc *= 2;
    int64_t *t = hs_realloc(*take, (size_t)nc * sizeof *t);
    if (!t)
        return hs_err_nomem(err, 0);
    *take = t;
    *cap = nc;
    return HS_OK;
}

/* Produces up to `room` outputs of the current input row into cols (the
 * function columns from nc on); *n_made gets how many, *row_done whether
 * the row has no more.  The functions run in lockstep: each gives what
 * it has of the next `room` positions, the shorter are padded with NULL
 * to the longest, and the row ends when every function fell short. */
static hs_status row_chunk(srf_op *s, hs_column **cols, int64_t room, int64_t *n_made, bool *row_done,
                           hs_error *err)
{
    int nf = s->n, nc = s->n_child;
    int64_t r = s->row, made[64], m = 0;
    int64_t *mk = nf <= 64 ? made : hs_calloc((size_t)nf, sizeof *mk);
    if (!mk)
        return hs_err_nomem(err, 0);
    hs_status st = HS_OK;
    for (int i = 0; i < nf && st == HS_OK; i++) {
        st = fill(s, i, r, s->done, room, cols[nc + i], &mk[i], err);
        if (mk[i] > m)
            m = mk[i];
    }
    bool outer_row = st == HS_OK && m == 0 && s->done == 0 && s->outer;
    if (outer_row)
        m = 1;   /* LEFT JOIN LATERAL: one row of NULLs */
    for (int i = 0; i < nf && st == HS_OK; i++)
        if (m - mk[i] > 0 && hs_col_append_nulls(cols[nc + i], m - mk[i]) != HS_OK)
            st = hs_err_nomem(err, 0);
    if (st == HS_OK && s->ordinality) {
        hs_column *oc = cols[nc + nf];
        for (int64_t k = 0; k < m && st == HS_OK; k++) {
            int64_t v = s->done + k + 1;
            st = outer_row ? hs_col_append_null(oc) : hs_col_append_fixed(oc, &v);
        }
        if (st != HS_OK)
            st = hs_err_nomem(err, 0);
    }
    if (mk != made)
        hs_free(mk);
    *n_made = m;
    *row_done = outer_row || m < room;
    s->done += m;
    return st;
}

static hs_status srf_next(xo_op *op, hs_batch **out, hs_error *err)
{
    srf_op *s = (srf_op *)op;
    int nf = s->n, nc = s->n_child, n_out = nc + nf + (s->ordinality ? 1 : 0);
    int64_t *take = NULL, cap = 0, n = 0;
    hs_column **cols = hs_calloc((size_t)n_out + 1, sizeof *cols);
    hs_status st = cols ? HS_OK : hs_err_nomem(err, 0);
    for (int i = 0; i < nf + (s->ordinality ? 1 : 0) && st == HS_OK; i++)
        st = hs_col_create(&op->schema.children[nc + i], 256, &cols[nc + i], err);
    int64_t rows_seen = 0;
    while (st == HS_OK && n < XO_BATCH_ROWS) {
        if (!s->in || s->row >= s->in->n_rows) {
            if (s->in && n > 0)
                break;   /* the output takes rows of the current batch only */
            hs_batch_free(s->in);
            s->in = NULL;
            if (s->eof)
                break;
            st = xo_next(op->children[0], &s->in, err);
            if (st != HS_OK || !s->in) {
                s->eof = true;
                break;
            }
            s->row = 0;
            s->done = 0;
            continue;
        }
        if (++rows_seen % 1024 == 0 && (st = xo_check_cancel(op->ctx, err)) != HS_OK)
            break;
        int64_t m;
        bool row_done;
        st = row_chunk(s, cols, XO_BATCH_ROWS - n, &m, &row_done, err);
        if (st == HS_OK && m > 0)
            st = grow_take(&take, &cap, n + m, err);
        for (int64_t k = 0; k < m && st == HS_OK; k++)
            take[n + k] = s->row;
        n += m;
        if (row_done) {
            s->row++;
            s->done = 0;
        }
    }
    if (st == HS_OK && n > 0) {
        for (int c = 0; c < nc && st == HS_OK; c++)
            st = hs_col_take(s->in->cols[c], take, n, &cols[c], err);
        if (st == HS_OK) {
            st = xo_batch_wrap(&op->schema, n_out, cols, n, out, err);
            memset(cols, 0, (size_t)n_out * sizeof *cols);   /* the columns are taken */
        }
    }
    for (int i = 0; cols && i < n_out; i++)
        hs_col_free(cols[i]);
    hs_free(cols);
    hs_free(take);
    return st;
}

static void srf_destroy(xo_op *op)
{
    srf_op *s = (srf_op *)op;
    hs_batch_free(s->in);
    for (int i = 0; s->srfs && i < s->n; i++)
        hs_free((int *)s->srfs[i].vals);
    hs_free(s->srfs);
    hs_free(s->rk);
    hs_free(s->rv);
}

/* Same non-nested value type (hs_field_same_type). */
static bool same_scalar_type(const hs_field *a, const hs_field *b)
{
    return !hs_type_is_nested(a->type) && hs_field_same_type(a, b, false);
}

static hs_status out_field(const hs_field *cs, const xo_srf *f, hs_field *out)
{
    const hs_field *a = &cs->children[f->kind == XO_SRF_VALUES ? f->vals[0] : f->arg[0]];
    if (f->kind == XO_SRF_SPLIT) {
        hs_field_init(out, f->name ? f->name : "string_to_table", HS_TYPE_STRING, true);
        return HS_OK;
    }
    if (f->kind == XO_SRF_UNNEST || f->kind == XO_SRF_VALUES) {
        HS_TRY(hs_field_copy(f->kind == XO_SRF_UNNEST ? &a->children[0] : a, out));
        hs_free(out->name);
        out->name = hs_strdup(f->name ? f->name : "unnest");
        out->nullable = true;
        return out->name ? HS_OK : HS_NOMEM;
    }
    HS_TRY(hs_field_copy(a, out));
    hs_free(out->name);
    out->name = hs_strdup(f->name ? f->name : "generate_series");
    out->nullable = true;
    return out->name ? HS_OK : HS_NOMEM;
}

hs_status xo_projset(xo_op *child, int n, const xo_srf *srfs, bool ordinality, bool outer,
                     xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(srf_op), child->ctx, "ProjectSet", 1, &child, &op, err));
    srf_op *s = (srf_op *)op;
    op->next = srf_next;
    op->destroy = srf_destroy;
    s->n = n;
    s->ordinality = ordinality;
    s->outer = outer;
    const hs_field *cs = &child->schema;
    s->n_child = cs->n_children;
    s->srfs = hs_calloc((size_t)n + 1, sizeof *s->srfs);
    s->rk = hs_calloc((size_t)n + 1, sizeof *s->rk);
    s->rv = hs_calloc((size_t)n + 1, sizeof *s->rv);
    hs_status st = s->srfs && s->rk && s->rv ? HS_OK : hs_err_nomem(err, 0);
    if (st == HS_OK)
        memcpy(s->srfs, srfs, (size_t)n * sizeof *srfs);
    for (int i = 0; i < n && st == HS_OK; i++) {
        s->srfs[i].vals = NULL;
        if (srfs[i].kind != XO_SRF_VALUES)
            continue;
        int *v = hs_calloc((size_t)srfs[i].n_vals + 1, sizeof *v);
        if (!v) {
            st = hs_err_nomem(err, 0);
            break;
        }
        if (srfs[i].n_vals > 0)
            memcpy(v, srfs[i].vals, (size_t)srfs[i].n_vals * sizeof *v);
        s->srfs[i].vals = v;
        if (srfs[i].n_vals < 1)
            st = hs_err_set(err, HS_INVALID, "ProjectSet: unnest of no values");
        for (int k = 0; k < srfs[i].n_vals && st == HS_OK; k++)
            if (v[k] < 0 || v[k] >= child->schema.n_children ||
                !same_scalar_type(&child->schema.children[v[k]], &child->schema.children[v[0]]))
                st = hs_err_set(err, HS_INVALID, "ProjectSet: unnest values must be columns of one type");
    }
    hs_buf d = {0};
    for (int i = 0; i < n && st == HS_OK; i++) {
        const xo_srf *f = &srfs[i];
        if (f->kind == XO_SRF_VALUES) {
            st = hs_buf_printf(&d, "%sunnest(#%d..)", i ? ", " : "", f->vals[0] + 1);
            continue;
        }
        int na = f->kind == XO_SRF_UNNEST ? 1 : 3;
        for (int k = 0; k < na && st == HS_OK; k++)
            if ((k < 2 || f->arg[k] >= 0) && (f->arg[k] < 0 || f->arg[k] >= cs->n_children))
                st = hs_err_set(err, HS_INVALID, "ProjectSet: argument column %d out of range", f->arg[k]);
        if (st != HS_OK)
            break;
        hs_type t0 = cs->children[f->arg[0]].type;
        if (f->kind == XO_SRF_UNNEST && t0 != HS_TYPE_LIST && t0 != HS_TYPE_FIXED_LIST)
            st = hs_err_set(err, HS_INVALID, "ProjectSet: unnest of a column that is not a list");
        else if (f->kind == XO_SRF_SERIES_INT &&
                 ((t0 != HS_TYPE_INT32 && t0 != HS_TYPE_INT64) || cs->children[f->arg[1]].type != t0 ||
                  (f->arg[2] >= 0 && cs->children[f->arg[2]].type != t0)))
            st = hs_err_set(err, HS_INVALID, "ProjectSet: generate_series needs int32 or int64 arguments of one type");
        else if (f->kind == XO_SRF_SPLIT &&
                 (t0 != HS_TYPE_STRING || cs->children[f->arg[1]].type != HS_TYPE_STRING ||
                  (f->arg[2] >= 0 && cs->children[f->arg[2]].type != HS_TYPE_STRING)))
            st = hs_err_set(err, HS_INVALID, "ProjectSet: string_to_table needs text arguments");
        else if (f->kind == XO_SRF_SERIES_DEC &&
                 (t0 != HS_TYPE_DECIMAL128 || !same_scalar_type(&cs->children[f->arg[1]], &cs->children[f->arg[0]]) ||
                  (f->arg[2] >= 0 && !same_scalar_type(&cs->children[f->arg[2]], &cs->children[f->arg[0]]))))
            st = hs_err_set(err, HS_INVALID, "ProjectSet: generate_series needs decimals of one type");
        else if (f->kind == XO_SRF_SERIES_TS &&
                 (t0 != HS_TYPE_TIMESTAMP || cs->children[f->arg[1]].type != t0 || f->arg[2] < 0 ||
                  cs->children[f->arg[2]].type != HS_TYPE_INTERVAL))
            st = hs_err_set(err, HS_INVALID, "ProjectSet: generate_series needs timestamps and an interval");
        if (st == HS_OK && f->kind == XO_SRF_SERIES_TS)
            s->srfs[i].unit = cs->children[f->arg[0]].unit;
        if (st == HS_OK)
            st = hs_buf_printf(&d, "%s%s(#%d)", i ? ", " : "",
                               f->kind == XO_SRF_UNNEST ? "unnest"
                               : f->kind == XO_SRF_SPLIT ? "string_to_table" : "generate_series",
                               f->arg[0] + 1);
    }
    if (st == HS_OK && (ordinality || outer))
        st = hs_buf_printf(&d, "%s%s", ordinality ? " with ordinality" : "", outer ? " (outer)" : "");
    /* schema: the child's, then one per function (and ordinality) */
    hs_field_clear(&op->schema);
    if (st == HS_OK)
        st = hs_field_copy(cs, &op->schema) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
    else
        hs_field_init(&op->schema, "", HS_TYPE_STRUCT, false);
    for (int i = 0; i < n && st == HS_OK; i++) {
        hs_field f;
        memset(&f, 0, sizeof f);
        st = out_field(cs, &srfs[i], &f) == HS_OK ? hs_field_add_child(&op->schema, &f) : HS_NOMEM;
        if (st != HS_OK) {
            hs_field_clear(&f);
            st = hs_err_nomem(err, 0);
        }
        s->srfs[i].name = NULL;   /* borrowed at construction only */
    }
    if (st == HS_OK && ordinality) {
        hs_field f;
        hs_field_init(&f, "ordinality", HS_TYPE_INT64, true);
        st = hs_field_add_child(&op->schema, &f) == HS_OK ? HS_OK : hs_err_nomem(err, 0);
    }
    if (st == HS_OK) {
        xo_schema_renumber(&op->schema);
        op->detail = d.len ? hs_strndup((const char *)d.data, d.len) : NULL;
        if (d.len && !op->detail)
            st = hs_err_nomem(err, 0);
    }
    hs_buf_free(&d);
    if (st != HS_OK) {
        xo_free(op);
        return st;
    }
    *out = op;
    return HS_OK;
}

/*
 * tests/c/exec_testutil.h - helpers shared by the exec operator tests
 * (test_exec_*.c): building random batches with NULLs, running an operator
 * tree to the end into one batch, reading values back as plain C rows so
 * that expectations can be computed by brute force in the test.
 */
#ifndef HS_TESTS_EXEC_TESTUTIL_H
#define HS_TESTS_EXEC_TESTUTIL_H

#include "harness.h"

#include "base/buf.h"
#include "base/mem.h"
#include "columnar/column.h"
#include "exec/exec.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static uint64_t xt_rng = 0x9E3779B97F4A7C15ull;
static inline uint64_t xt_rnd(void)
{
    xt_rng ^= xt_rng << 13;
    xt_rng ^= xt_rng >> 7;
    xt_rng ^= xt_rng << 17;
    return xt_rng;
}

static inline void xt_add_field(hs_field *parent, const char *name, hs_type t)
{
    hs_field f;
    hs_field_init(&f, name, t, true);
    f.field_id = parent->n_children + 1;
    if (t == HS_TYPE_DECIMAL128) {
        f.precision = 18;
        f.scale = 2;
    }
    if (hs_field_add_child(parent, &f) != HS_OK)
        abort();
}

/* One value of a test row: null flag, int (also bool/decimal unscaled), double, string. */
typedef struct xt_val {
    bool null;
    int64_t i;
    double d;
    char s[128];
} xt_val;

/* Appends v to column c of type t. */
static inline void xt_append(hs_column *c, const xt_val *v)
{
    hs_status s;
    if (v->null) {
        s = hs_col_append_null(c);
    } else {
        switch (c->type) {
        case HS_TYPE_BOOL: { uint8_t b = v->i != 0; s = hs_col_append_fixed(c, &b); break; }
        case HS_TYPE_INT32: { int32_t x = (int32_t)v->i; s = hs_col_append_fixed(c, &x); break; }
        case HS_TYPE_INT64: s = hs_col_append_fixed(c, &v->i); break;
        case HS_TYPE_FLOAT64: s = hs_col_append_fixed(c, &v->d); break;
        case HS_TYPE_DECIMAL128: { __int128 x = v->i; s = hs_col_append_fixed(c, &x); break; }
        case HS_TYPE_STRING: s = hs_col_append_bytes(c, v->s, strlen(v->s)); break;
        default: abort();
        }
    }
    if (s != HS_OK)
        abort();
}

/* Reads row i of column c into v. */
static inline void xt_read(const hs_column *c, int64_t i, xt_val *v)
{
    memset(v, 0, sizeof *v);
    if (!hs_col_is_valid(c, i)) {
        v->null = true;
        return;
    }
    switch (c->type) {
    case HS_TYPE_BOOL: v->i = hs_bit_get(c->values.data, i); break;
    case HS_TYPE_INT32: v->i = HS_COL_VALUES(c, int32_t)[i]; break;
    case HS_TYPE_INT64: v->i = HS_COL_VALUES(c, int64_t)[i]; break;
    case HS_TYPE_FLOAT64: v->d = HS_COL_VALUES(c, double)[i]; break;
    case HS_TYPE_DECIMAL128: { __int128 x; memcpy(&x, c->values.data + 16 * i, 16); v->i = (int64_t)x; break; }
    case HS_TYPE_STRING: {
        const int32_t *o = HS_COL_OFFSETS(c);
        size_t n = (size_t)(o[i + 1] - o[i]);
        if (n >= sizeof v->s)
            n = sizeof v->s - 1;
        memcpy(v->s, c->values.data + o[i], n);
        break;
    }
    default: abort();
    }
}

/* A batch of schema with rows rows[r][c] (n_rows x schema->n_children). */
static inline hs_batch *xt_batch(const hs_field *schema, const xt_val *rows, int64_t n_rows)
{
    hs_batch *b;
    if (hs_batch_create(schema, n_rows, &b, NULL) != HS_OK)
        abort();
    int nc = schema->n_children;
    for (int64_t r = 0; r < n_rows; r++)
        for (int c = 0; c < nc; c++)
            xt_append(b->cols[c], &rows[r * nc + c]);
    b->n_rows = n_rows;
    return b;
}

/* Values operator over rows split into batches of `chunk` rows. */
static inline xo_op *xt_values(xo_ctx *ctx, const hs_field *schema, const xt_val *rows,
                               int64_t n_rows, int64_t chunk)
{
    int nb = (int)((n_rows + chunk - 1) / chunk);
    hs_batch **bs = hs_calloc((size_t)(nb ? nb : 1), sizeof *bs);
    int nc = schema->n_children;
    for (int i = 0; i < nb; i++) {
        int64_t start = i * chunk, n = n_rows - start < chunk ? n_rows - start : chunk;
        bs[i] = xt_batch(schema, rows + start * nc, n);
    }
    xo_op *op;
    hs_error err = {0};
    if (xo_values(ctx, schema, nb, bs, &op, &err) != HS_OK) {
        fprintf(stderr, "xo_values: %s\n", err.msg);
        abort();
    }
    hs_free(bs);
    return op;
}

/* Runs op to the end; *rows gets n_rows x n_cols values (caller hs_free). */
static inline hs_status xt_run(xo_op *op, xt_val **rows, int64_t *n_rows, hs_error *err)
{
    hs_buf out = {0};
    int64_t n = 0;
    int nc = op->schema.n_children;
    for (;;) {
        hs_batch *b;
        hs_status s = xo_next(op, &b, err);
        if (s != HS_OK) {
            hs_buf_free(&out);
            return s;
        }
        if (!b)
            break;
        if (b->n_rows == 0 || b->n_cols != nc)
            abort();   /* contract: non-empty batches of the schema's width */
        for (int64_t r = 0; r < b->n_rows; r++)
            for (int c = 0; c < nc; c++) {
                xt_val v;
                xt_read(b->cols[c], r, &v);
                if (hs_buf_append(&out, &v, sizeof v) != HS_OK)
                    abort();
            }
        n += b->n_rows;
        hs_batch_free(b);
    }
    *rows = (xt_val *)hs_buf_detach(&out, NULL);
    *n_rows = n;
    return HS_OK;
}

static inline int xt_val_cmp(const xt_val *a, const xt_val *b)
{
    if (a->null || b->null)
        return a->null - b->null;
    if (a->i != b->i)
        return a->i < b->i ? -1 : 1;
    if (a->d != b->d || isnan(a->d) != isnan(b->d)) {
        if (isnan(a->d) || isnan(b->d))
            return isnan(a->d) - isnan(b->d);
        return a->d < b->d ? -1 : 1;
    }
    return strcmp(a->s, b->s);
}

static int xt_ncols_for_sort;
static inline int xt_row_cmp(const void *x, const void *y)
{
    const xt_val *a = x, *b = y;
    for (int c = 0; c < xt_ncols_for_sort; c++) {
        int r = xt_val_cmp(&a[c], &b[c]);
        if (r)
            return r;
    }
    return 0;
}

/* Sorts rows (n x nc) canonically, to compare results as multisets. */
static inline void xt_sort_rows(xt_val *rows, int64_t n, int nc)
{
    xt_ncols_for_sort = nc;
    qsort(rows, (size_t)n, sizeof(xt_val) * (size_t)nc, xt_row_cmp);
}

static inline bool xt_rows_equal(const xt_val *a, const xt_val *b, int64_t n, int nc)
{
    for (int64_t i = 0; i < n * nc; i++)
        if (xt_val_cmp(&a[i], &b[i]) != 0)
            return false;
    return true;
}

static inline void xt_print_rows(const char *what, const xt_val *rows, int64_t n, int nc)
{
    fprintf(stderr, "%s (%lld rows):\n", what, (long long)n);
    for (int64_t r = 0; r < n && r < 40; r++) {
        for (int c = 0; c < nc; c++) {
            const xt_val *v = &rows[r * nc + c];
            if (v->null)
                fprintf(stderr, " NULL");
            else
                fprintf(stderr, " %lld/%g/'%s'", (long long)v->i, v->d, v->s);
        }
        fprintf(stderr, "\n");
    }
}

#endif

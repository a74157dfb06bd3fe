/*
 * expr/expr_eval.c - vectorized evaluation of bound expressions.
 *
 * A batch is evaluated in chunks of EX_CHUNK rows.  Within a chunk every
 * node produces a vector: one null byte per row (1 = null) and one value per
 * row in the type's run-time form (expr_int.h: int64, double, __int128,
 * ex_str, or a 0/1 byte for booleans).  Vectors are indexed by the row's
 * position in the chunk and live in a per-chunk arena that is reset after
 * each chunk, so nothing is freed individually.
 *
 * A node is evaluated for a selection: the list of chunk positions that
 * still matter.  Rows outside it are neither read nor written, which is
 * what makes AND / OR / CASE / COALESCE lazy per row:
 *
 *   AND(a, b, ...)   evaluate a on sel; rows where a is FALSE are decided;
 *                    evaluate b only on the rest, and so on (Kleene logic:
 *                    FALSE wins, then NULL, else TRUE).  OR is the dual.
 *   CASE             each WHEN is evaluated on the rows no earlier WHEN took;
 *                    its result only on the rows it takes.
 *   COALESCE         each argument only on the rows still null.
 *
 * Where only TRUE matters (a filter's result, a WHEN condition) the
 * predicate is evaluated by ev_true, which returns the selection of TRUE
 * rows: AND hands each term's TRUE rows to the next term (a NULL decides a
 * row too), OR evaluates each term only on rows no earlier term made TRUE.
 *
 * So `b <> 0 AND a / b > 1` never divides by zero, as in PostgreSQL.  Errors
 * (integer overflow, division by zero, bad casts) stop the evaluation with
 * HS_INVALID and point at the operator in the text.
 *
 * Columns are found in the batch by field id (pr_batch_find_id), or by name
 * path when the bound field has no id; an absent column reads as all null.
 * Constant folding (ex_fold) is evaluation of one row without a batch.
 *
 * Decimal arithmetic helpers and the numeric functions (round, trunc,
 * power, exp/ln/log, trig, div, to_char of numbers) are expr_num.c's;
 * ev_func hands their rows to ex_num_fn.  Casts and the text forms of
 * values are expr_cast.c's (ex_cast_rows, ex_to_text); the array
 * functions over list columns expr_array.c's (ex_ev_array_fn).  The
 * pgvector types' column forms, casts and kernels are expr_pgvector.c's
 * (ex_pv_*).
 */
#include "expr/expr_int.h"
#include "expr/textarr.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/jsonl.h"

#include "expr/pgvector.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ */
/* types                                                               */

const char *ex_type_name(const ex_ty *t, char *buf, size_t n)
{
    static const char *const unit_names[] = {"s", "ms", "us", "ns"};
    switch (t->t) {
    case EX_T_NULL: return "null";
    case EX_T_UNKNOWN: return "unknown";
    case EX_T_BOOL: return "boolean";
    case EX_T_INT:
        snprintf(buf, n, "int%d", t->bits ? t->bits : 64);
        return buf;
    case EX_T_FLOAT: return t->bits == 32 ? "float" : "double";
    case EX_T_DEC:
        snprintf(buf, n, "decimal(%d,%d)", t->prec, t->scale);
        return buf;
    case EX_T_STR: return "string";
    case EX_T_BIN: return t->uuid ? "uuid" : "binary";
    case EX_T_DATE: return "date";
    case EX_T_TS:
        snprintf(buf, n, "timestamp%s%s%s", t->unit != HS_UNIT_MICRO ? "[" : "",
                 t->unit != HS_UNIT_MICRO ? unit_names[t->unit & 3] : "",
                 t->unit != HS_UNIT_MICRO ? (t->tz ? "] with time zone" : "]")
                                           : (t->tz ? " with time zone" : ""));
        return buf;
    case EX_T_TIME: return "time";
    case EX_T_INTERVAL: return "interval";
    case EX_T_OTHER: return "nested";
    case EX_T_VEC: return "vector";
    case EX_T_HALFVEC: return "halfvec";
    case EX_T_SPARSEVEC: return "sparsevec";
    case EX_T_BIT: return "bit";
    case EX_T_ARRAY:
        return t->elem == PV_E_TEXT ? "text[]" : t->elem == PV_E_INT4 ? "integer[]" : t->elem == PV_E_FLOAT4 ? "real[]"
             : t->elem == PV_E_INT8 ? "bigint[]"
             : t->elem == PV_E_FLOAT8 ? "double precision[]" : "numeric[]";
    }
    return "?";
}

ex_ty ex_type_of_field(const hs_field *f)
{
    ex_ty t;
    memset(&t, 0, sizeof t);
    if (ex_pv_type_of_field(f, &t))
        return t;
    switch (f->type) {
    case HS_TYPE_BOOL: t.t = EX_T_BOOL; break;
    case HS_TYPE_INT8: t.t = EX_T_INT; t.bits = 8; break;
    case HS_TYPE_INT16: case HS_TYPE_UINT8: t.t = EX_T_INT; t.bits = 16; break;
    case HS_TYPE_INT32: case HS_TYPE_UINT16: t.t = EX_T_INT; t.bits = 32; break;
    case HS_TYPE_INT64: case HS_TYPE_UINT32: case HS_TYPE_UINT64: t.t = EX_T_INT; t.bits = 64; break;
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: t.t = EX_T_FLOAT; t.bits = 32; break;
    case HS_TYPE_FLOAT64: t.t = EX_T_FLOAT; t.bits = 64; break;
    case HS_TYPE_DECIMAL128:
        t.t = EX_T_DEC;
        t.prec = (int8_t)(f->precision < 1 || f->precision > 38 ? 38 : f->precision);
        t.scale = (int8_t)(f->scale < 0 || f->scale > t.prec ? 0 : f->scale);
        break;
    case HS_TYPE_DATE32: t.t = EX_T_DATE; break;
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: t.t = EX_T_TIME; t.unit = (uint8_t)(f->unit & 3); break;
    case HS_TYPE_TIMESTAMP:
        t.t = EX_T_TS;
        t.unit = (uint8_t)(f->unit & 3);
        t.tz = f->tz != NULL;
        break;
    case HS_TYPE_STRING: t.t = EX_T_STR; break;
    case HS_TYPE_BINARY: t.t = EX_T_BIN; break;
    case HS_TYPE_FIXED_BINARY:
        t.t = EX_T_BIN;
        t.uuid = f->ext == HS_EXT_UUID && f->width == 16;
        break;
    case HS_TYPE_INTERVAL: t.t = EX_T_INTERVAL; break;
    case HS_TYPE_NA: t.t = EX_T_NULL; break;
    default: t.t = EX_T_OTHER; break;
    }
    return t;
}


hs_status ex_type_to_field(const ex_ty *t, const char *name, hs_field *out)
{
    if (ex_is_pvx(t->t))
        return ex_pv_type_to_field(t, name, out);
    hs_type ht;
    switch (t->t) {
    case EX_T_NULL: ht = HS_TYPE_NA; break;
    case EX_T_BOOL: ht = HS_TYPE_BOOL; break;
    case EX_T_INT:
        ht = t->bits == 8 ? HS_TYPE_INT8 : t->bits == 16 ? HS_TYPE_INT16
           : t->bits == 32 ? HS_TYPE_INT32 : HS_TYPE_INT64;
        break;
    case EX_T_FLOAT: ht = t->bits == 32 ? HS_TYPE_FLOAT32 : HS_TYPE_FLOAT64; break;
    case EX_T_DEC: ht = HS_TYPE_DECIMAL128; break;
    case EX_T_UNKNOWN: case EX_T_STR: ht = HS_TYPE_STRING; break;
    case EX_T_INTERVAL: ht = HS_TYPE_INTERVAL; break;
    case EX_T_BIN: ht = t->uuid ? HS_TYPE_FIXED_BINARY : HS_TYPE_BINARY; break;
    case EX_T_DATE: ht = HS_TYPE_DATE32; break;
    case EX_T_TS: ht = HS_TYPE_TIMESTAMP; break;
    case EX_T_TIME: ht = t->unit <= HS_UNIT_MILLI ? HS_TYPE_TIME32 : HS_TYPE_TIME64; break;
    default: return HS_UNSUPPORTED;
    }
    hs_field_init(out, name, ht, true);
    if (!out->name)
        return HS_NOMEM;
    if (ht == HS_TYPE_DECIMAL128) {
        out->precision = t->prec;
        out->scale = t->scale;
    }
    if (ht == HS_TYPE_TIMESTAMP || ht == HS_TYPE_TIME32 || ht == HS_TYPE_TIME64)
        out->unit = (hs_time_unit)t->unit;
    if (ht == HS_TYPE_TIMESTAMP && t->tz) {
        out->tz = hs_strdup("UTC");
        if (!out->tz) {
            hs_field_clear(out);
            return HS_NOMEM;
        }
    }
    if (ht == HS_TYPE_FIXED_BINARY) {
        out->width = 16;
        out->ext = HS_EXT_UUID;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* vectors and the evaluation context (ex_vec, ex_ctx: expr_int.h)      */

size_t ex_elem_size(ex_t t)
{
    switch (t) {
    case EX_T_INT: case EX_T_FLOAT: case EX_T_DATE: case EX_T_TS: case EX_T_TIME: return 8;
    case EX_T_DEC: case EX_T_INTERVAL: return 16;
    case EX_T_STR: case EX_T_BIN: case EX_T_UNKNOWN: return sizeof(ex_str);
    case EX_T_VEC: case EX_T_HALFVEC: case EX_T_SPARSEVEC: case EX_T_BIT: case EX_T_ARRAY: return sizeof(ex_str);
    default: return 1;
    }
}

/* A vector for one chunk: nulls cleared, values uninitialized (kernels
 * write every selected row; rows outside the selection are never read). */
hs_status ex_vec_new(ex_ctx *c, ex_t t, ex_vec *v)
{
    v->nul = hs_arena_calloc(c->arena, EX_CHUNK, 1);
    v->v.p = hs_arena_alloc(c->arena, EX_CHUNK * ex_elem_size(t));
    if (!v->nul || !v->v.p)
        return hs_err_nomem(c->err, EX_CHUNK * 16);
    return HS_OK;
}

static ex_sel *sel_new(ex_ctx *c)
{
    return hs_arena_alloc(c->arena, EX_CHUNK * sizeof(ex_sel));
}

hs_status ex_fail(ex_ctx *c, const ex_node *n, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ex_err_at(c->err, HS_INVALID, c->e->text, n->loc, "%s", msg);
}

static void copy_row(ex_t t, ex_vec *dst, const ex_vec *src, int j)
{
    dst->nul[j] = src->nul[j];
    switch (ex_elem_size(t)) {
    case 8: dst->v.i[j] = src->v.i[j]; break;
    case 16:
        if (t == EX_T_DEC || t == EX_T_INTERVAL)
            dst->v.d[j] = src->v.d[j];
        else
            dst->v.s[j] = src->v.s[j];
        break;
    default: dst->v.b[j] = src->v.b[j]; break;
    }
}

static hs_status ev_true(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_sel *out,
                         int *n_out);

/* ------------------------------------------------------------------ */
/* comparisons                                                         */

static int cmp_bytes(const ex_str *a, const ex_str *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->p, b->p, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return a->n < b->n ? -1 : a->n > b->n;
}

static inline uint8_t cmp_res(int op, int c)
{
    switch (op) {
    case PR_EQ: return c == 0;
    case PR_NE: return c != 0;
    case PR_LT: return c < 0;
    case PR_LE: return c <= 0;
    case PR_GT: return c > 0;
    default: return c >= 0;
    }
}

/* Compares row j of two vectors in mode m. */
static inline int cmp_rows(ex_cmode m, const ex_ty *ta, const ex_vec *a, const ex_ty *tb,
                           const ex_vec *b, int j, int k)
{
    switch (m) {
    case EX_CM_I64: return a->v.i[j] < b->v.i[k] ? -1 : a->v.i[j] > b->v.i[k];
    case EX_CM_F64: return pr_cmp_f64(a->v.f[j], b->v.f[k]);
    case EX_CM_I64_F64: return pr_cmp_i64_f64(a->v.i[j], b->v.f[k]);
    case EX_CM_F64_I64: return -pr_cmp_i64_f64(b->v.i[k], a->v.f[j]);
    case EX_CM_DEC: return ex_dec_cmp(a->v.d[j], ta->scale, b->v.d[k], tb->scale);
    case EX_CM_BYTES: return cmp_bytes(&a->v.s[j], &b->v.s[k]);
    case EX_CM_BOOL: return a->v.b[j] < b->v.b[k] ? -1 : a->v.b[j] > b->v.b[k];
    case EX_CM_IV: {
        __int128 x = hs_interval_span(ex_iv_unpack(a->v.d[j]));
        __int128 y = hs_interval_span(ex_iv_unpack(b->v.d[k]));
        return x < y ? -1 : x > y;
    }
    case EX_CM_PV: {
        pv_val x = {a->v.s[j].p, a->v.s[j].n}, y = {b->v.s[k].p, b->v.s[k].n};
        (void)tb;
        if (ex_is_ta(ta))
            return ta_cmp(x, y);
        if (ta->t == EX_T_ARRAY)   /* numeric arrays of one kind (expr_numarr.c) */
            return pv_arr_cmp(x, y);
        return pv_cmp((pv_type)ex_pv_type(ta->t), x, y);
    }
    }
    return 0;
}

int ex_cmp_rows(ex_cmode m, const ex_ty *ta, const ex_vec *a, const ex_ty *tb, const ex_vec *b,
                int j, int k)
{
    return cmp_rows(m, ta, a, tb, b, j, k);
}

uint8_t ex_cmp_res(int op, int c) { return cmp_res(op, c); }

/* ------------------------------------------------------------------ */
/* columns                                                             */

static bool find_by_path(const hs_batch *b, const ex_node *n, pr_col_ref *r)
{
    memset(r, 0, sizeof *r);
    const hs_field *f = &b->schema;
    const hs_column *col = NULL;
    for (int d = 0; d < n->path_len; d++) {
        int hit = -1;
        for (int i = 0; i < f->n_children && hit < 0; i++)
            if (f->children[i].name && strcmp(f->children[i].name, n->path[d]) == 0)
                hit = i;
        if (hit < 0)
            return false;
        const hs_column *next = d == 0 ? (hit < b->n_cols ? b->cols[hit] : NULL)
                                       : (hit < col->n_children ? col->children[hit] : NULL);
        if (!next)
            return false;
        if (d > 0) {
            if (r->n_parents >= 8)
                return false;
            r->parents[r->n_parents++] = col;
        }
        col = next;
        f = &f->children[hit];
    }
    r->col = col;
    r->field = f;
    return col != NULL;
}

static bool phys_ok(ex_t t, hs_type h)
{
    switch (t) {
    case EX_T_BOOL: return h == HS_TYPE_BOOL;
    case EX_T_INT: return h >= HS_TYPE_INT8 && h <= HS_TYPE_UINT64;
    case EX_T_FLOAT: return h >= HS_TYPE_FLOAT16 && h <= HS_TYPE_FLOAT64;
    case EX_T_DEC: return h == HS_TYPE_DECIMAL128;
    case EX_T_INTERVAL: return h == HS_TYPE_INTERVAL;
    case EX_T_DATE: return h == HS_TYPE_DATE32;
    case EX_T_TS: return h == HS_TYPE_TIMESTAMP;
    case EX_T_TIME: return h == HS_TYPE_TIME32 || h == HS_TYPE_TIME64;
    case EX_T_STR: case EX_T_BIN:
        return h == HS_TYPE_STRING || h == HS_TYPE_BINARY || h == HS_TYPE_FIXED_BINARY;
    default: return true;
    }
}

int64_t ex_unit_per_sec(int unit)
{
    static const int64_t t[] = {1, 1000, 1000000, 1000000000};
    return t[unit & 3];
}

int64_t ex_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

/* Converts v from unit `from` to unit `to`; false on overflow. */
bool ex_unit_convert(int64_t v, int from, int to, int64_t *out)
{
    if (from == to) {
        *out = v;
        return true;
    }
    int64_t f = ex_unit_per_sec(from), t = ex_unit_per_sec(to);
    if (t > f)
        return !__builtin_mul_overflow(v, t / f, out);
    *out = ex_floor_div(v, f / t);
    return true;
}


/* A field of a struct column in SQL (n->sub > 0): the top-level column of
 * field id n->field_id, then the last n->sub names of n->path below it. */
static bool find_sub(const hs_batch *b, const ex_node *n, pr_col_ref *r)
{
    memset(r, 0, sizeof *r);
    int top = -1;
    for (int i = 0; i < b->n_cols && i < b->schema.n_children && top < 0; i++)
        if (b->schema.children[i].field_id == n->field_id)
            top = i;
    if (top < 0 || n->sub >= 8 || n->sub >= n->path_len)
        return false;
    const hs_field *f = &b->schema.children[top];
    const hs_column *col = b->cols[top];
    for (int d = n->path_len - n->sub; d < n->path_len; d++) {
        int hit = -1;
        for (int i = 0; i < f->n_children && hit < 0; i++)
            if (f->children[i].name && strcmp(f->children[i].name, n->path[d]) == 0)
                hit = i;
        if (hit < 0 || f->type != HS_TYPE_STRUCT || !col || hit >= col->n_children)
            return false;
        r->parents[r->n_parents++] = col;
        col = col->children[hit];
        f = &f->children[hit];
    }
    r->col = col;
    r->field = f;
    return col != NULL;
}

static bool find_col(const hs_batch *b, const ex_node *n, pr_col_ref *r)
{
    if (n->sub > 0)
        return find_sub(b, n, r);
    return n->field_id >= 0 ? pr_batch_find_id(b, n->field_id, r) : find_by_path(b, n, r);
}

/* The column of COL node n in the chunk's batch (cached), NULL when absent. */
hs_status ex_col_ref(ex_ctx *c, const ex_node *n, const pr_col_ref **out)
{
    ex_col_cache *cc = &c->cols[n->slot];
    *out = NULL;
    if (c->b && !cc->looked) {
        cc->looked = true;
        cc->found = find_col(c->b, n, &cc->ref);
        if (cc->found) {
            const pr_col_ref *r = &cc->ref;
            if (r->col->length < c->b->n_rows)
                return ex_fail(c, n, "column \"%s\" has %lld rows in a batch of %lld", n->name,
                            (long long)r->col->length, (long long)c->b->n_rows);
            for (int k = 0; k < r->n_parents; k++)
                if (r->parents[k]->length < c->b->n_rows)
                    return ex_fail(c, n, "column \"%s\": its struct is shorter than the batch", n->name);
        }
    }
    if (c->b && cc->found)
        *out = &cc->ref;
    return HS_OK;
}

static hs_status ev_col(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_vec_new(c, n->type.t, out));
    const pr_col_ref *r;
    HS_TRY(ex_col_ref(c, n, &r));
    if (!r) {
        for (int k = 0; k < ns; k++)
            out->nul[sel[k]] = 1;
        return HS_OK;
    }
    if (!phys_ok(n->type.t, r->col->type))
        return ex_fail(c, n, "column \"%s\" is %s in the batch, but the expression was bound to %s",
                    n->name, hs_type_name(r->col->type), hs_type_name(n->field->type));
    const hs_column *col = r->col;
    int64_t base = c->base;
    if (r->n_parents > 0 || col->validity.data != NULL) /* else: nul is all 0 already */
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            out->nul[j] = !pr_ref_valid(r, base + j);
        }
    if (ex_is_pv(n->type.t))
        return ex_pv_read_col(c, n, col, sel, ns, out);
    const uint8_t *d = col->values.data;
    if (!d && (col->type == HS_TYPE_STRING || col->type == HS_TYPE_BINARY) &&
        (n->type.t == EX_T_STR || n->type.t == EX_T_BIN || n->type.t == EX_T_UNKNOWN)) {
        /* every value empty (or NULL): the column has no bytes at all */
        for (int k = 0; k < ns; k++) {
            out->v.s[sel[k]].p = (const uint8_t *)"";
            out->v.s[sel[k]].n = 0;
        }
        return HS_OK;
    }
    if (n->type.t == EX_T_OTHER || n->type.t == EX_T_NULL || (!d && col->type != HS_TYPE_NA))
        return HS_OK;
    int from_unit = r->field ? (int)(r->field->unit & 3) : n->type.unit;
    if (ns > 0 && sel[ns - 1] - sel[0] == ns - 1) {
        /* a run of rows (ex_eval's chunks) of a type kept as it is: one copy */
        size_t at = (size_t)(base + sel[0]);
        int fs = r->field ? r->field->scale : n->type.scale;
        if ((col->type == HS_TYPE_DECIMAL128 && fs == n->type.scale) || col->type == HS_TYPE_INTERVAL) {
            memcpy(&out->v.d[sel[0]], d + 16 * at, 16 * (size_t)ns);
            return HS_OK;
        }
        if (col->type == HS_TYPE_INT64 || col->type == HS_TYPE_UINT64) {
            memcpy(&out->v.i[sel[0]], d + 8 * at, 8 * (size_t)ns);
            return HS_OK;
        }
        if (col->type == HS_TYPE_FLOAT64) {
            memcpy(&out->v.f[sel[0]], d + 8 * at, 8 * (size_t)ns);
            return HS_OK;
        }
    }
#define READ(T, dst, expr)                                   \
    for (int k = 0; k < ns; k++) {                           \
        int j = sel[k];                                      \
        int64_t row = base + j;                              \
        (void)row;                                           \
        dst[j] = (expr);                                     \
    }
    switch (col->type) {
    case HS_TYPE_BOOL: READ(uint8_t, out->v.b, hs_bit_get(d, row)); break;
    case HS_TYPE_INT8: READ(int64_t, out->v.i, ((const int8_t *)d)[row]); break;
    case HS_TYPE_INT16: READ(int64_t, out->v.i, ((const int16_t *)d)[row]); break;
    case HS_TYPE_INT32: READ(int64_t, out->v.i, ((const int32_t *)d)[row]); break;
    case HS_TYPE_INT64: case HS_TYPE_UINT64: READ(int64_t, out->v.i, ((const int64_t *)d)[row]); break;
    case HS_TYPE_UINT8: READ(int64_t, out->v.i, d[row]); break;
    case HS_TYPE_UINT16: READ(int64_t, out->v.i, ((const uint16_t *)d)[row]); break;
    case HS_TYPE_UINT32: READ(int64_t, out->v.i, ((const uint32_t *)d)[row]); break;
    case HS_TYPE_FLOAT16: READ(double, out->v.f, hs_half_to_float(((const uint16_t *)d)[row])); break;
    case HS_TYPE_FLOAT32: READ(double, out->v.f, ((const float *)d)[row]); break;
    case HS_TYPE_FLOAT64: READ(double, out->v.f, ((const double *)d)[row]); break;
    case HS_TYPE_DECIMAL128: {
        int fs = r->field ? r->field->scale : n->type.scale;
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            __int128 x;
            memcpy(&x, d + 16 * (base + j), 16);
            if (fs != n->type.scale && !out->nul[j]) {
                if (fs < n->type.scale) {
                    if (!ex_dec_up(x, n->type.scale - fs, &x))
                        return ex_fail(c, n, "column \"%s\": decimal out of range", n->name);
                } else {
                    x = ex_dec_round(x, fs - n->type.scale);
                }
            }
            out->v.d[j] = x;
        }
        break;
    }
    case HS_TYPE_INTERVAL:
        for (int k = 0; k < ns; k++)
            memcpy(&out->v.d[sel[k]], d + 16 * (base + sel[k]), 16);
        break;
    case HS_TYPE_DATE32: READ(int64_t, out->v.i, ((const int32_t *)d)[row]); break;
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: case HS_TYPE_TIMESTAMP: {
        bool w32 = col->type == HS_TYPE_TIME32;
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            int64_t row = base + j;
            int64_t x = w32 ? ((const int32_t *)d)[row] : ((const int64_t *)d)[row];
            if (from_unit != n->type.unit && !out->nul[j] &&
                !ex_unit_convert(x, from_unit, n->type.unit, &x))
                return ex_fail(c, n, "column \"%s\": timestamp out of range", n->name);
            out->v.i[j] = x;
        }
        break;
    }
    case HS_TYPE_STRING: case HS_TYPE_BINARY: {
        const int32_t *o = HS_COL_OFFSETS(col);
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            int64_t row = base + j;
            out->v.s[j].p = d + o[row];
            out->v.s[j].n = (size_t)(o[row + 1] - o[row]);
        }
        break;
    }
    case HS_TYPE_FIXED_BINARY:
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            out->v.s[j].p = d + (size_t)col->width * (size_t)(base + j);
            out->v.s[j].n = (size_t)col->width;
        }
        break;
    default:
        break;
    }
#undef READ
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* kernels                                                             */

static hs_status ev_const(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_vec_new(c, n->type.t, out));
    const ex_value *v = &n->val;
    ex_t t = n->type.t;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->nul[j] = v->null || t == EX_T_NULL || t == EX_T_OTHER;
        switch (t) {
        case EX_T_BOOL: out->v.b[j] = (uint8_t)v->i; break;
        case EX_T_INT: case EX_T_DATE: case EX_T_TS: case EX_T_TIME: out->v.i[j] = v->i; break;
        case EX_T_FLOAT: out->v.f[j] = v->f; break;
        case EX_T_DEC: case EX_T_INTERVAL: out->v.d[j] = v->d; break;
        case EX_T_STR: case EX_T_BIN: case EX_T_UNKNOWN: out->v.s[j] = v->s; break;
        case EX_T_VEC: case EX_T_HALFVEC: case EX_T_SPARSEVEC: case EX_T_BIT: case EX_T_ARRAY: out->v.s[j] = v->s; break;
        default: break;
        }
    }
    return HS_OK;
}

static hs_status ev_andor(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
    bool is_and = n->kind == EX_AND;
    uint8_t undecided = is_and ? 1 : 0;   /* value that does not decide the row */
    ex_sel *cur = sel_new(c);
    if (!cur)
        return hs_err_nomem(c->err, EX_CHUNK);
    for (int k = 0; k < ns; k++) {
        cur[k] = sel[k];
        out->v.b[sel[k]] = undecided;
        out->nul[sel[k]] = 0;
    }
    int nc = ns;
    for (int i = 0; i < n->n_args && nc > 0; i++) {
        ex_vec a;
        HS_TRY(ex_ev(c, n->args[i], cur, nc, &a));
        int m = 0;
        for (int k = 0; k < nc; k++) {
            int j = cur[k];
            if (!a.nul[j] && a.v.b[j] != undecided) {
                out->v.b[j] = a.v.b[j];
                out->nul[j] = 0;
            } else {
                if (a.nul[j])
                    out->nul[j] = 1;
                cur[m++] = (ex_sel)j;
            }
        }
        nc = m;
    }
    return HS_OK;
}

static hs_status ev_not(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_ev(c, n->args[0], sel, ns, out));
    for (int k = 0; k < ns; k++)
        out->v.b[sel[k]] = !out->v.b[sel[k]];
    return HS_OK;
}

/* column op constant: the common shapes, compared against one value. */
static bool cmp_const(ex_ctx *c, const ex_node *n, const ex_vec *a, const ex_sel *sel, int ns, ex_vec *out)
{
    const ex_node *k = n->args[1];
    int op = n->op;
    if (k->kind != EX_CONST || n->kind != EX_CMP || k->val.null)
        return false;
    switch (n->cmode) {
#define CMP_LOOP(T, F, test)                  \
    for (int q = 0; q < ns; q++) {            \
        int j = sel[q];                       \
        T x = a->v.F[j];                      \
        out->nul[j] = a->nul[j];              \
        out->v.b[j] = (test);                 \
    }                                         \
    return true
    case EX_CM_I64: {
        int64_t y = k->val.i;
        switch (op) {
        case PR_EQ: CMP_LOOP(int64_t, i, x == y);
        case PR_NE: CMP_LOOP(int64_t, i, x != y);
        case PR_LT: CMP_LOOP(int64_t, i, x < y);
        case PR_LE: CMP_LOOP(int64_t, i, x <= y);
        case PR_GT: CMP_LOOP(int64_t, i, x > y);
        default: CMP_LOOP(int64_t, i, x >= y);
        }
    }
    case EX_CM_F64: {
        /* y is not NaN; a NaN x is above y (so > and >= hold, = and < do not) */
        double y = k->val.f;
        if (isnan(y))
            return false;
        switch (op) {
        case PR_EQ: CMP_LOOP(double, f, x == y);
        case PR_NE: CMP_LOOP(double, f, !(x == y));
        case PR_LT: CMP_LOOP(double, f, x < y);
        case PR_LE: CMP_LOOP(double, f, x <= y);
        case PR_GT: CMP_LOOP(double, f, !(x <= y));
        default: CMP_LOOP(double, f, !(x < y));
        }
    }
#undef CMP_LOOP
    case EX_CM_BYTES: {
        const ex_str *y = &k->val.s;
        if (op == PR_EQ || op == PR_NE) {
            /* equality: lengths first, bytes only when they agree */
            uint8_t ne = op == PR_NE;
            for (int q = 0; q < ns; q++) {
                int j = sel[q];
                const ex_str *x = &a->v.s[j];
                out->nul[j] = a->nul[j];
                if (!a->nul[j])   /* a NULL row's string is not set */
                    out->v.b[j] = (x->n == y->n && (y->n == 0 || memcmp(x->p, y->p, y->n) == 0)) != ne;
            }
            return true;
        }
        for (int q = 0; q < ns; q++) {
            int j = sel[q];
            out->nul[j] = a->nul[j];
            if (!a->nul[j])
                out->v.b[j] = cmp_res(op, cmp_bytes(&a->v.s[j], y));
        }
        return true;
    }
    default:
        return false;
    }
    (void)c;
}

static hs_status ev_cmp(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a, b;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    if (n->kind == EX_CMP && n->args[1]->kind == EX_CONST) {
        HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
        if (cmp_const(c, n, &a, sel, ns, out))
            return HS_OK;
    }
    HS_TRY(ex_ev(c, n->args[1], sel, ns, &b));
    HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
    const ex_ty *ta = &n->args[0]->type, *tb = &n->args[1]->type;
    int op = n->op;
    if (n->kind == EX_DISTINCT) {
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            bool distinct = a.nul[j] || b.nul[j] ? a.nul[j] != b.nul[j]
                                                 : cmp_rows(n->cmode, ta, &a, tb, &b, j, j) != 0;
            out->v.b[j] = distinct != n->neg;
        }
        return HS_OK;
    }
    switch (n->cmode) {
    case EX_CM_I64:
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            out->nul[j] = a.nul[j] | b.nul[j];
            int64_t x = a.v.i[j], y = b.v.i[j];
            out->v.b[j] = cmp_res(op, x < y ? -1 : x > y);
        }
        break;
    case EX_CM_F64:
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            out->nul[j] = a.nul[j] | b.nul[j];
            out->v.b[j] = cmp_res(op, pr_cmp_f64(a.v.f[j], b.v.f[j]));
        }
        break;
    default:
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            out->nul[j] = a.nul[j] | b.nul[j];
            if (!out->nul[j])
                out->v.b[j] = cmp_res(op, cmp_rows(n->cmode, ta, &a, tb, &b, j, j));
        }
        break;
    }
    return HS_OK;
}

static inline bool inset_eq(const ex_inset *s, int64_t i, const ex_str *x, uint64_t w)
{
    return s->s[i].n == x->n && s->pre[i] == w &&
           (x->n <= 8 || memcmp(s->s[i].p + 8, x->p + 8, x->n - 8) == 0);
}

static bool inset_has_str(const ex_inset *s, const ex_str *x)
{
    if (!((s->lens >> (x->n < 63 ? x->n : 63)) & 1))
        return false; /* no item has this length */
    uint64_t w = ex_str_pre8(x->p, x->n);
    if (!s->slots) {
        for (int64_t i = 0; i < s->n; i++)
            if (inset_eq(s, i, x, w))
                return true;
        return false;
    }
    for (uint64_t h = ex_str_hash(x->p, x->n) & s->mask;; h = (h + 1) & s->mask) {
        uint32_t e = s->slots[h];
        if (!e)
            return false;
        if (inset_eq(s, e - 1, x, w))
            return true;
    }
}

static bool inset_has(const ex_inset *s, ex_cmode m, const ex_vec *a, int j)
{
    if (m == EX_CM_BYTES)
        return inset_has_str(s, &a->v.s[j]);
    int64_t lo = 0, hi = s->n - 1;
    while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c;
        if (m == EX_CM_I64)
            c = a->v.i[j] < s->i[mid] ? -1 : a->v.i[j] > s->i[mid];
        else if (m == EX_CM_F64)
            c = pr_cmp_f64(a->v.f[j], s->f[mid]);
        else
            c = cmp_bytes(&a->v.s[j], &s->s[mid]);
        if (c == 0)
            return true;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return false;
}

/* IN's items are all non-null constants (no item can make a miss NULL). */
static bool in_consts(const ex_node *n)
{
    for (int i = 1; i < n->n_args; i++)
        if (n->args[i]->kind != EX_CONST || n->args[i]->val.null)
            return false;
    return true;
}

static hs_status ev_in(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
    ex_sel *live = sel_new(c);
    if (!live)
        return hs_err_nomem(c->err, EX_CHUNK);
    int nl = 0;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->nul[j] = a.nul[j];
        out->v.b[j] = 0;
        if (!a.nul[j])
            live[nl++] = (ex_sel)j;
    }
    if (n->set) {
        for (int k = 0; k < nl; k++) {
            int j = live[k];
            bool hit = inset_has(n->set, n->cmode, &a, j);
            out->v.b[j] = hit;
            out->nul[j] = !hit && n->set->has_null;
        }
    } else if (n->cmode == EX_CM_BYTES && in_consts(n)) {
        /* a short list of non-null string constants (TPC-H Q12's l_shipmode
         * IN ('MAIL', 'SHIP')): each row against every item, lengths first */
        int ni = n->n_args - 1;
        for (int k = 0; k < nl; k++) {
            int j = live[k];
            const ex_str *x = &a.v.s[j];
            uint8_t hit = 0;
            for (int i = 1; i <= ni && !hit; i++) {
                const ex_str *y = &n->args[i]->val.s;
                hit = x->n == y->n && (x->n == 0 || memcmp(x->p, y->p, x->n) == 0);
            }
            out->v.b[j] = hit;
        }
    } else {
        const ex_ty *ta = &n->args[0]->type;
        for (int i = 1; i < n->n_args && nl > 0; i++) {
            ex_vec b;
            const ex_node *item = n->args[i];
            const ex_ty *tb = &item->type;
            /* a constant item is compared as one value (slot 0), not a vector */
            union { uint8_t b; int64_t i; double f; __int128 d; ex_str s; } one;
            uint8_t one_nul;
            bool is_k = item->kind == EX_CONST;
            if (is_k) {
                one_nul = item->val.null;
                one.d = 0;
                if (tb->t == EX_T_BOOL)
                    one.b = (uint8_t)item->val.i;
                else if (tb->t == EX_T_FLOAT)
                    one.f = item->val.f;
                else if (tb->t == EX_T_DEC || tb->t == EX_T_INTERVAL)
                    one.d = item->val.d;
                else if (ex_elem_size(tb->t) == sizeof(ex_str))
                    one.s = item->val.s;
                else
                    one.i = item->val.i;
                b.nul = &one_nul;
                b.v.p = &one;
            } else {
                HS_TRY(ex_ev(c, item, live, nl, &b));
            }
            int m = 0;
            for (int k = 0; k < nl; k++) {
                int j = live[k], jb = is_k ? 0 : j;
                if (b.nul[jb]) {
                    out->nul[j] = 1;
                } else if (cmp_rows(n->cmode, ta, &a, tb, &b, j, jb) == 0) {
                    out->v.b[j] = 1;
                    out->nul[j] = 0;
                    continue;
                }
                live[m++] = (ex_sel)j;
            }
            nl = m;
        }
    }
    if (n->neg)
        for (int k = 0; k < ns; k++)
            out->v.b[sel[k]] = !out->v.b[sel[k]];
    return HS_OK;
}

static hs_status ev_isnull(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        out->v.b[j] = a.nul[j] != n->neg;
    }
    return HS_OK;
}

static hs_status ev_booltest(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        bool t = !a.nul[j] && a.v.b[j], f = !a.nul[j] && !a.v.b[j], u = a.nul[j];
        bool r;
        switch (n->op) {
        case EX_IS_TRUE: r = t; break;
        case EX_IS_NOT_TRUE: r = !t; break;
        case EX_IS_FALSE: r = f; break;
        case EX_IS_NOT_FALSE: r = !f; break;
        case EX_IS_UNKNOWN: r = u; break;
        default: r = !u; break;
        }
        out->v.b[j] = r;
    }
    return HS_OK;
}

static hs_status ev_like(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a, p;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    if (!n->pat)
        HS_TRY(ex_ev(c, n->args[1], sel, ns, &p));
    HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
    uint8_t *low = NULL;
    size_t low_cap = 0;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        if (a.nul[j] || (!n->pat && p.nul[j])) {
            out->nul[j] = 1;
            continue;
        }
        ex_like tmp;
        const ex_like *pat = n->pat;
        if (!pat) {
            hs_error le = {0};
            hs_status st = ex_like_compile(p.v.s[j].p, p.v.s[j].n, n->esc, n->ci, c->arena, &tmp, &le);
            if (st == HS_NOMEM)
                return hs_err_nomem(c->err, p.v.s[j].n);
            if (st != HS_OK)
                return ex_fail(c, n, "%s", le.msg);
            pat = &tmp;
        }
        const uint8_t *s = a.v.s[j].p;
        size_t len = a.v.s[j].n;
        if (n->ci) {
            if (len > low_cap) {
                low_cap = len * 2 + 16;
                low = hs_arena_alloc(c->arena, low_cap);
                if (!low)
                    return hs_err_nomem(c->err, low_cap);
            }
            len = ex_case_map(s, len, low, false);
            s = low;
        }
        out->v.b[j] = ex_like_match(pat, s, len) != n->neg;
    }
    return HS_OK;
}

static hs_status concat2(ex_ctx *c, const ex_str *x, const ex_str *y, ex_str *dst)
{
    size_t len = x->n + y->n;
    uint8_t *p = hs_arena_alloc(c->arena, len ? len : 1);
    if (!p)
        return hs_err_nomem(c->err, len);
    if (x->n)
        memcpy(p, x->p, x->n);
    if (y->n)
        memcpy(p + x->n, y->p, y->n);
    dst->p = p;
    dst->n = len;
    return HS_OK;
}


static inline bool fits_i64(__int128 v) { return v == (int64_t)v; }

/* Decimal +, - and * (at the exact product scale) when every non-null
 * operand of the chunk fits in 64 bits: then no result can overflow (a
 * product of two is below 2^126 < 10^38; a sum of two values scaled up by
 * at most 10^18 is below 2^124), so the rows are computed with one 64x64
 * multiply each and without checks.  Null rows are computed from zeros.
 * Returns false (the rows hold garbage) when a non-null operand is wider: the
 * general loop then runs with its overflow checks.  TPC-H Q1's
 * l_extendedprice * (1 - l_discount) * (1 + l_tax). */
static bool dec_fast(int op, int sa, int sb, int sr, const ex_vec *a, const ex_vec *b,
                     const ex_sel *sel, int ns, ex_vec *out)
{
    int64_t ma = 1, mb = 1;
    if (op == '*') {
        if (sr != sa + sb)
            return false;
    } else if (op == '+' || op == '-') {
        if (sr < sa || sr < sb || sr - sa > 18 || sr - sb > 18)
            return false;
        ma = (int64_t)ex_pow10_tab[sr - sa];
        mb = (int64_t)ex_pow10_tab[sr - sb];
    } else {
        return false;
    }
    const uint8_t *nul = out->nul;
    const __int128 *av = a->v.d, *bv = b->v.d;
    __int128 *restrict rv = out->v.d;
    /* one pass: the results from the low halves, and whether a non-null
     * operand needed its high half (then they are thrown away) */
    bool wide = false;
#define DEC_LOOP(expr)                                                          \
    for (int k = 0; k < ns; k++) {                                              \
        int j = sel[k];                                                         \
        __int128 xw = nul[j] ? 0 : av[j], yw = nul[j] ? 0 : bv[j];              \
        wide |= !fits_i64(xw) | !fits_i64(yw);                                  \
        int64_t x = (int64_t)xw, y = (int64_t)yw;                               \
        rv[j] = (expr);                                                         \
    }
    if (op == '*')
        DEC_LOOP((__int128)x * y)
    else if (op == '+')
        DEC_LOOP((__int128)x * ma + (__int128)y * mb)
    else
        DEC_LOOP((__int128)x * ma - (__int128)y * mb)
#undef DEC_LOOP
    return !wide;
}

static hs_status ev_arith(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    if (ex_is_pv(n->type.t))
        return ex_pv_ev(c, n, sel, ns, out);
    ex_vec a, b;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    HS_TRY(ex_ev(c, n->args[1], sel, ns, &b));
    HS_TRY(ex_vec_new(c, n->type.t, out));
    const ex_ty *ta = &n->args[0]->type, *tb = &n->args[1]->type;
    int op = n->op;
    ex_t rt = n->type.t;
    if (ns > 0 && sel[ns - 1] - sel[0] == ns - 1) {
        /* a run of rows (ex_eval's chunks): 8 null bytes at a time (gcc's
         * -O2 cost model does not widen the byte loop) */
        uint8_t *restrict on = out->nul + sel[0];
        const uint8_t *restrict an = a.nul + sel[0], *restrict bn = b.nul + sel[0];
        int j = 0;
        for (; j + 8 <= ns; j += 8) {
            uint64_t x, y;
            memcpy(&x, an + j, 8);
            memcpy(&y, bn + j, 8);
            x |= y;
            memcpy(on + j, &x, 8);
        }
        for (; j < ns; j++)
            on[j] = an[j] | bn[j];
    } else {
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            out->nul[j] = a.nul[j] | b.nul[j];
        }
    }
    if (op == '|') {
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            if (!out->nul[j])
                HS_TRY(concat2(c, &a.v.s[j], &b.v.s[j], &out->v.s[j]));
        }
        return HS_OK;
    }
    if (tb->t == EX_T_INTERVAL || rt == EX_T_INTERVAL || ta->t == EX_T_INTERVAL) {
        /* timestamp +- interval, interval +- interval, timestamp - timestamp
         * (expr_interval.c) */
        int sign = op == '-' ? -1 : 1;
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            if (out->nul[j])
                continue;
            ex_interval r;
            if (ta->t == EX_T_TS && tb->t == EX_T_INTERVAL) {
                if (!ex_ts_add_interval(a.v.i[j], ta->unit, ex_iv_unpack(b.v.d[j]), sign, &out->v.i[j]))
                    return ex_fail(c, n, "timestamp out of range");
                continue;
            }
            if (tb->t == EX_T_FLOAT) {
                if (op == '/' && b.v.f[j] == 0)
                    return ex_fail(c, n, "division by zero");
                if (!hs_interval_mul(ex_iv_unpack(a.v.d[j]), b.v.f[j], op == '/', &r))
                    return ex_fail(c, n, "interval out of range");
                out->v.d[j] = ex_iv_pack(r);
                continue;
            }
            if (ta->t == EX_T_TS) {
                int64_t d;
                if (__builtin_sub_overflow(a.v.i[j], b.v.i[j], &d))
                    return ex_fail(c, n, "interval out of range");
                r = ex_ts_diff(a.v.i[j], b.v.i[j], ta->unit);
            } else if (!hs_interval_add(ex_iv_unpack(a.v.d[j]), ex_iv_unpack(b.v.d[j]), sign, &r)) {
                return ex_fail(c, n, "interval out of range");
            }
            out->v.d[j] = ex_iv_pack(r);
        }
        return HS_OK;
    }
    if (ta->t == EX_T_DATE) {
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            if (out->nul[j])
                continue;
            int64_t x = a.v.i[j], y = b.v.i[j], r;
            bool ovf = op == '+' ? __builtin_add_overflow(x, y, &r) : __builtin_sub_overflow(x, y, &r);
            if (rt == EX_T_DATE && (ovf || r > INT32_MAX || r < INT32_MIN))
                return ex_fail(c, n, "date out of range");
            if (ovf)
                return ex_fail(c, n, "integer out of range");
            out->v.i[j] = r;
        }
        return HS_OK;
    }
    if (rt == EX_T_INT) {
        /* PostgreSQL: the result has the wider operand's type (smallint,
         * integer, bigint) and leaving its range is 22003 */
        int bits = n->type.bits;   /* (8: an Arrow int8 column's width, kept exact) */
        int64_t lo = bits == 8 ? INT8_MIN : bits == 16 ? INT16_MIN : bits == 32 ? INT32_MIN : INT64_MIN;
        int64_t hi = bits == 8 ? INT8_MAX : bits == 16 ? INT16_MAX : bits == 32 ? INT32_MAX : INT64_MAX;
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            if (out->nul[j])
                continue;
            int64_t x = a.v.i[j], y = b.v.i[j], r = 0;
            bool ovf = false;
            switch (op) {
            case '+': ovf = __builtin_add_overflow(x, y, &r); break;
            case '-': ovf = __builtin_sub_overflow(x, y, &r); break;
            case '*': ovf = __builtin_mul_overflow(x, y, &r); break;
            case '/':
                if (y == 0)
                    return ex_fail(c, n, "division by zero");
                if (x == INT64_MIN && y == -1)
                    ovf = true;
                else
                    r = x / y;
                break;
            default:
                if (y == 0)
                    return ex_fail(c, n, "division by zero");
                r = y == -1 ? 0 : x % y;
                break;
            }
            if (ovf || r < lo || r > hi)
                return ex_fail(c, n, "%s out of range", ex_int_type_name(bits == 8 ? 16 : bits));
            out->v.i[j] = r;
        }
        return HS_OK;
    }
    if (rt == EX_T_FLOAT) {
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            if (out->nul[j])
                continue;
            double x = a.v.f[j], y = b.v.f[j], r;
            switch (op) {
            case '+': r = x + y; break;
            case '-': r = x - y; break;
            case '*': r = x * y; break;
            case '/':
                if (y == 0)
                    return ex_fail(c, n, "division by zero");
                r = x / y;
                break;
            default: r = fmod(x, y); break;
            }
            out->v.f[j] = r; /* IEEE: overflow is infinity (DuckDB; PostgreSQL raises) */
        }
        return HS_OK;
    }
    /* decimals */
    int sa = ta->scale, sb = tb->scale, sr = n->type.scale;
    if (dec_fast(op, sa, sb, sr, &a, &b, sel, ns, out))
        return HS_OK;
    if (op == '/') {
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            if (out->nul[j])
                continue;
            /* a double cast to numeric without a modifier has the display
             * scale of its shortest text (PostgreSQL's float8_numeric): its
             * digits without trailing zeros (n->args[i]->aux, bind_cast) */
            __int128 x = a.v.d[j], y = b.v.d[j];
            int sx = sa, sy = sb;
            if (n->args[0]->kind == EX_CAST && n->args[0]->aux == 1)
                while (sx > 0 && x % 10 == 0)
                    x /= 10, sx--;
            if (n->args[1]->kind == EX_CAST && n->args[1]->aux == 1)
                while (sy > 0 && y % 10 == 0)
                    y /= 10, sy--;
            int rc = n->aux == EX_DIV_ROUND ? ex_dec_div_round(x, sx, y, sy, sr, &out->v.d[j])
                                            : ex_dec_div(x, sx, y, sy, sr, false, &out->v.d[j]);
            if (rc == 1)
                return ex_fail(c, n, "division by zero");
            if (rc == 2)
                return ex_fail(c, n, "value out of range: the quotient needs more than 38 digits "
                                  "at scale %d (numeric precision is limited to 38 digits)", sr);
        }
        return HS_OK;
    }
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        if (out->nul[j])
            continue;
        __int128 x = a.v.d[j], y = b.v.d[j], r = 0;
        bool ovf = false;
        if (op == '*' && sr != sa + sb) {
            /* the exact product's scale exceeds 38 digits (expr_bind.c
             * bind_arith): multiply without the operands' trailing zeros,
             * then round to the result's scale */
            int sx = sa, sy = sb;
            while (sx > 0 && x % 10 == 0)
                x /= 10, sx--;
            while (sy > 0 && y % 10 == 0)
                y /= 10, sy--;
            ovf = __builtin_mul_overflow(x, y, &r);
            if (!ovf && sx + sy > sr)
                r = ex_dec_round(r, sx + sy - sr);
            else if (!ovf)
                ovf = !ex_dec_up(r, sr - sx - sy, &r);
        } else if (op == '*') {
            if (x == (int64_t)x && y == (int64_t)y)
                r = (__int128)(int64_t)x * (int64_t)y;
            else
                ovf = __builtin_mul_overflow(x, y, &r);
        } else {
            if (!ex_dec_up(x, sr - sa, &x) || !ex_dec_up(y, sr - sb, &y)) {
                ovf = true;
            } else if (op == '+') {
                ovf = __builtin_add_overflow(x, y, &r);
            } else if (op == '-') {
                ovf = __builtin_sub_overflow(x, y, &r);
            } else {
                if (y == 0)
                    return ex_fail(c, n, "division by zero");
                r = x % y;
            }
        }
        if (ovf || !ex_dec_fits(r))
            return ex_fail(c, n, "numeric field overflow");
        out->v.d[j] = r;
    }
    return HS_OK;
}

static hs_status ev_neg(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_ev(c, n->args[0], sel, ns, out));
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        if (out->nul[j])
            continue;
        switch (n->type.t) {
        case EX_T_INT: {
            int bits = n->type.bits;
            int64_t lo = bits == 16 ? INT16_MIN : bits == 32 ? INT32_MIN : INT64_MIN;
            if (out->v.i[j] <= lo)
                return ex_fail(c, n, "%s out of range", ex_int_type_name(bits));
            out->v.i[j] = -out->v.i[j];
            break;
        }
        case EX_T_FLOAT: out->v.f[j] = -out->v.f[j]; break;
        case EX_T_DEC: out->v.d[j] = -out->v.d[j]; break;
        case EX_T_INTERVAL: {
            ex_interval iv;
            if (!hs_interval_neg(ex_iv_unpack(out->v.d[j]), &iv))
                return ex_fail(c, n, "interval out of range");
            out->v.d[j] = ex_iv_pack(iv);
            break;
        }
        default: break;
        }
    }
    return HS_OK;
}

static hs_status ev_case(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_vec_new(c, n->type.t, out));
    ex_sel *rest = sel_new(c), *take = sel_new(c);
    uint8_t *taken = hs_arena_calloc(c->arena, EX_CHUNK, 1);
    if (!rest || !take || !taken)
        return hs_err_nomem(c->err, EX_CHUNK);
    memcpy(rest, sel, (size_t)ns * sizeof *sel);
    int nr = ns;
    int off = n->aux ? 1 : 0, n_when = (n->n_args - 1 - off) / 2;
    ex_vec subj;
    if (n->aux)
        HS_TRY(ex_ev(c, n->args[0], sel, ns, &subj));
    const ex_ty *ts = &n->args[0]->type;
    for (int w = 0; w <= n_when && nr > 0; w++) {
        int nt = 0;
        if (w < n_when && n->aux) {
            ex_vec v;
            const ex_node *vn = n->args[off + 2 * w];
            HS_TRY(ex_ev(c, vn, rest, nr, &v));
            for (int k = 0; k < nr; k++) {
                int j = rest[k];
                if (!subj.nul[j] && !v.nul[j] && cmp_rows(n->cmode, ts, &subj, &vn->type, &v, j, j) == 0) {
                    take[nt++] = (ex_sel)j;
                    taken[j] = 1;
                }
            }
        } else if (w < n_when) {
            HS_TRY(ev_true(c, n->args[2 * w], rest, nr, take, &nt));
            for (int k = 0; k < nt; k++)
                taken[take[k]] = 1;
        } else {
            memcpy(take, rest, (size_t)nr * sizeof *rest);
            nt = nr;
        }
        int m = 0;
        for (int k = 0; k < nr; k++)
            if (!taken[rest[k]])
                rest[m++] = rest[k];
        nr = w < n_when ? m : 0;
        if (nt == 0)
            continue;
        ex_vec r;
        HS_TRY(ex_ev(c, n->args[w < n_when ? off + 2 * w + 1 : n->n_args - 1], take, nt, &r));
        for (int k = 0; k < nt; k++)
            copy_row(n->type.t, out, &r, take[k]);
    }
    return HS_OK;
}

/* x BETWEEN lo AND hi = x >= lo AND x <= hi, in Kleene logic; x once. */
static hs_status ev_between(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec x, lo, hi;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &x));
    HS_TRY(ex_ev(c, n->args[1], sel, ns, &lo));
    HS_TRY(ex_ev(c, n->args[2], sel, ns, &hi));
    HS_TRY(ex_vec_new(c, EX_T_BOOL, out));
    const ex_ty *tx = &n->args[0]->type, *tl = &n->args[1]->type, *th = &n->args[2]->type;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        /* 0 false, 1 true, 2 unknown */
        int ge_lo = x.nul[j] || lo.nul[j] ? 2 : cmp_rows(n->cmode, tx, &x, tl, &lo, j, j) >= 0;
        int le_hi = x.nul[j] || hi.nul[j] ? 2 : cmp_rows(n->cmode, tx, &x, th, &hi, j, j) <= 0;
        int r = ge_lo == 0 || le_hi == 0 ? 0 : ge_lo == 2 || le_hi == 2 ? 2 : 1;
        if (n->aux && r != 1) {
            int ge_hi = x.nul[j] || hi.nul[j] ? 2 : cmp_rows(n->cmode, tx, &x, th, &hi, j, j) >= 0;
            int le_lo = x.nul[j] || lo.nul[j] ? 2 : cmp_rows(n->cmode, tx, &x, tl, &lo, j, j) <= 0;
            int r2 = ge_hi == 0 || le_lo == 0 ? 0 : ge_hi == 2 || le_lo == 2 ? 2 : 1;
            r = r2 == 1 ? 1 : r == 2 || r2 == 2 ? 2 : 0;
        }
        out->nul[j] = r == 2;
        out->v.b[j] = (r == 1) != n->neg;
    }
    return HS_OK;
}

static hs_status ev_coalesce(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    HS_TRY(ex_vec_new(c, n->type.t, out));
    ex_sel *rest = sel_new(c);
    if (!rest)
        return hs_err_nomem(c->err, EX_CHUNK);
    memcpy(rest, sel, (size_t)ns * sizeof *sel);
    int nr = ns;
    for (int k = 0; k < ns; k++)
        out->nul[sel[k]] = 1;
    for (int i = 0; i < n->n_args && nr > 0; i++) {
        ex_vec a;
        HS_TRY(ex_ev(c, n->args[i], rest, nr, &a));
        int m = 0;
        for (int k = 0; k < nr; k++) {
            int j = rest[k];
            if (a.nul[j])
                rest[m++] = (ex_sel)j;
            else
                copy_row(n->type.t, out, &a, j);
        }
        nr = m;
    }
    return HS_OK;
}

static hs_status ev_nullif(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec b;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, out));
    HS_TRY(ex_ev(c, n->args[1], sel, ns, &b));
    const ex_ty *t = &n->type;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        if (!out->nul[j] && !b.nul[j] && cmp_rows(n->cmode, t, out, t, &b, j, j) == 0)
            out->nul[j] = 1;
    }
    return HS_OK;
}

/* ---- functions ---- */

/* Byte offset of code point `cp` (0-based) in s, or n when past the end. */
static size_t cp_offset(const uint8_t *s, size_t n, int64_t cp)
{
    size_t i = 0;
    while (i < n && cp > 0) {
        i++;
        while (i < n && (s[i] & 0xC0) == 0x80)
            i++;
        cp--;
    }
    return i;
}

static uint32_t next_cp(const uint8_t *s, size_t n, size_t *i)
{
    uint8_t c0 = s[*i];
    size_t len = c0 < 0x80 ? 1 : c0 >= 0xF0 ? 4 : c0 >= 0xE0 ? 3 : c0 >= 0xC0 ? 2 : 1;
    if (*i + len > n)
        len = n - *i;
    uint32_t cp = c0;
    for (size_t k = 1; k < len; k++)
        cp = cp << 8 | s[*i + k]; /* an identity for set membership, not the code point */
    *i += len;
    return cp;
}

static bool cp_in_set(uint32_t cp, const ex_str *set)
{
    size_t i = 0;
    while (i < set->n)
        if (next_cp(set->p, set->n, &i) == cp)
            return true;
    return false;
}

static void trim(const ex_str *s, const ex_str *set, bool left, bool right, ex_str *out)
{
    size_t st = 0, en = s->n;
    if (left) {
        while (st < en) {
            size_t i = st;
            uint32_t cp = next_cp(s->p, en, &i);
            if (!cp_in_set(cp, set))
                break;
            st = i;
        }
    }
    if (right) {
        while (en > st) {
            size_t b = en - 1;
            while (b > st && (s->p[b] & 0xC0) == 0x80)
                b--;
            size_t i = b;
            uint32_t cp = next_cp(s->p, en, &i);
            if (!cp_in_set(cp, set))
                break;
            en = b;
        }
    }
    out->p = s->p + st;
    out->n = en - st;
}


/* ---- the functions of expr_sqlfn.c and the numeric ones added with them ---- */

/* A pattern (and flags) compiled for the rows of one chunk: once when they
 * are constants, else again whenever a row's pattern differs. */
typedef struct rx_cache {
    ex_regex *re;
    ex_str pat, flags;
    bool has, global;
} rx_cache;

static hs_status rx_get(ex_ctx *c, const ex_node *n, rx_cache *rc, const ex_str *pat,
                        const ex_str *flags)
{
    static const ex_str none = {(const uint8_t *)"", 0};
    if (!flags)
        flags = &none;
    if (rc->has && rc->pat.n == pat->n && rc->flags.n == flags->n &&
        (pat->n == 0 || memcmp(rc->pat.p, pat->p, pat->n) == 0) &&
        (flags->n == 0 || memcmp(rc->flags.p, flags->p, flags->n) == 0))
        return HS_OK;
    ex_regex_free(rc->re);
    rc->re = NULL;
    rc->has = false;
    char msg[256];
    hs_status st = ex_regex_compile(pat, n->ci, flags, &rc->re, &rc->global, msg);
    if (st == HS_NOMEM)
        return hs_err_nomem(c->err, pat->n);
    if (st != HS_OK)
        return ex_err_at(c->err, st, c->e->text, n->loc, "%s", msg);
    rc->pat = *pat;
    rc->flags = *flags;
    rc->has = true;
    return HS_OK;
}

static hs_status ev_func_more(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_fn fn = (ex_fn)n->op;
    HS_TRY(ex_vec_new(c, n->type.t, out));
    if (fn == EX_FN_ARR_ELEM || fn == EX_FN_CARDINALITY || fn == EX_FN_ARRAY_LENGTH ||
        fn == EX_FN_ARRAY_TO_STRING || fn == EX_FN_ARRAY_POSITION || fn == EX_FN_LIST_ANY)
        return ex_ev_array_fn(c, n, sel, ns, out);
    if (fn == EX_FN_CONCAT_WS) {
        ex_vec sep;
        HS_TRY(ex_ev(c, n->args[0], sel, ns, &sep));
        bool *any = hs_arena_calloc(c->arena, EX_CHUNK, 1);
        if (!any)
            return hs_err_nomem(c->err, EX_CHUNK);
        for (int k = 0; k < ns; k++) {
            int j = sel[k];
            out->nul[j] = sep.nul[j];
            out->v.s[j].p = (const uint8_t *)"";
            out->v.s[j].n = 0;
        }
        for (int i = 1; i < n->n_args; i++) {
            ex_vec x;
            HS_TRY(ex_ev(c, n->args[i], sel, ns, &x));
            for (int k = 0; k < ns; k++) {
                int j = sel[k];
                if (out->nul[j] || x.nul[j])
                    continue;
                if (any[j])
                    HS_TRY(concat2(c, &out->v.s[j], &sep.v.s[j], &out->v.s[j]));
                HS_TRY(concat2(c, &out->v.s[j], &x.v.s[j], &out->v.s[j]));
                any[j] = true;
            }
        }
        return HS_OK;
    }
    ex_vec a[4];
    int na = n->n_args < 4 ? n->n_args : 4;
    for (int i = 0; i < na; i++)
        HS_TRY(ex_ev(c, n->args[i], sel, ns, &a[i]));
    const ex_ty *t0 = na ? &n->args[0]->type : NULL;
    static const ex_str space = {(const uint8_t *)" ", 1};
    rx_cache rc = {0};
    hs_status st = HS_OK;
    char msg[256];
    for (int k = 0; k < ns && st == HS_OK; k++) {
        int j = sel[k];
        bool nul = false;
        for (int i = 0; i < na; i++)
            nul |= a[i].nul[j];
        out->nul[j] = nul;
        if (nul)
            continue;
        switch (fn) {
        case EX_FN_SIGN: case EX_FN_TRUNC: case EX_FN_MATH: case EX_FN_POWER: case EX_FN_LOG2:
        case EX_FN_ATAN2: case EX_FN_DIV: case EX_FN_NUM_STDDEV:
            st = ex_num_fn(c, n, a, j, out);
            break;
        case EX_FN_LPAD: case EX_FN_RPAD:
            st = ex_str_pad(c->arena, &a[0].v.s[j], a[1].v.i[j], na == 3 ? &a[2].v.s[j] : &space,
                            fn == EX_FN_LPAD, &out->v.s[j]);
            if (st == HS_INVALID)
                return ex_fail(c, n, "requested length too large");
            break;
        case EX_FN_TRANSLATE:
            st = ex_str_translate(c->arena, &a[0].v.s[j], &a[1].v.s[j], &a[2].v.s[j], &out->v.s[j]);
            break;
        case EX_FN_MD5:
            st = ex_str_md5(c->arena, &a[0].v.s[j], &out->v.s[j]);
            break;
        case EX_FN_CHR:
            st = ex_str_chr(c->arena, a[0].v.i[j], &out->v.s[j], msg);
            if (st == HS_INVALID)
                return ex_fail(c, n, "%s", msg);
            break;
        case EX_FN_ASCII:
            out->v.i[j] = ex_str_ascii(&a[0].v.s[j]);
            break;
        case EX_FN_OCTET_LENGTH:
            out->v.i[j] = (int64_t)a[0].v.s[j].n;
            break;
        case EX_FN_BIT_LENGTH:
            out->v.i[j] = (int64_t)a[0].v.s[j].n * 8;
            break;
        case EX_FN_INITCAP:
            st = ex_str_initcap(c->arena, &a[0].v.s[j], &out->v.s[j]);
            break;
        case EX_FN_MAKE_DATE:
            if (!ex_make_date(a[0].v.i[j], a[1].v.i[j], a[2].v.i[j], &out->v.i[j], msg))
                return ex_fail(c, n, "%s", msg);
            break;
        case EX_FN_REGEX: {
            st = rx_get(c, n, &rc, &a[1].v.s[j], na == 3 ? &a[2].v.s[j] : NULL);
            if (st != HS_OK)
                break;
            size_t m0, m1;
            int r = ex_regex_find(rc.re, &a[0].v.s[j], 0, &m0, &m1, NULL, msg);
            if (r < 0)
                st = ex_fail(c, n, "%s", msg);
            out->v.b[j] = (uint8_t)((r == 1) != n->neg);
            break;
        }
        case EX_FN_REGEXP_REPLACE:
            st = rx_get(c, n, &rc, &a[1].v.s[j], na == 4 ? &a[3].v.s[j] : NULL);
            if (st == HS_OK) {
                st = ex_regex_replace(c->arena, rc.re, &a[0].v.s[j], &a[2].v.s[j], rc.global,
                                      &out->v.s[j], msg);
                if (st == HS_INVALID)
                    st = ex_fail(c, n, "%s", msg);
            }
            break;
        case EX_FN_REGEXP_COUNT: {
            if (a[2].v.i[j] <= 0) {
                st = ex_fail(c, n, "invalid value for parameter \"start\": %lld", (long long)a[2].v.i[j]);
                break;
            }
            st = rx_get(c, n, &rc, &a[1].v.s[j], &a[3].v.s[j]);
            if (st != HS_OK)
                break;
            const ex_str *sv = &a[0].v.s[j];
            size_t from = cp_offset(sv->p, sv->n, a[2].v.i[j] - 1), m0, m1;
            int64_t cnt = 0;
            while (from <= sv->n) {
                int r = ex_regex_find(rc.re, sv, from, &m0, &m1, NULL, msg);
                if (r < 0) {
                    st = ex_fail(c, n, "%s", msg);
                    break;
                }
                if (r == 0)
                    break;
                cnt++;
                if (m1 > m0)
                    from = m1;
                else if (m0 >= sv->n)
                    break;
                else {
                    size_t e = m0 + 1;
                    while (e < sv->n && (sv->p[e] & 0xC0) == 0x80)
                        e++;
                    from = e;
                }
            }
            out->v.i[j] = cnt;
            break;
        }
        case EX_FN_REGEXP_SUBSTR: {
            st = rx_get(c, n, &rc, &a[1].v.s[j], NULL);
            if (st != HS_OK)
                break;
            size_t m0, m1;
            int r = ex_regex_find(rc.re, &a[0].v.s[j], 0, &m0, &m1, NULL, msg);
            if (r < 0)
                st = ex_fail(c, n, "%s", msg);
            out->nul[j] = r != 1;
            if (r == 1) {
                out->v.s[j].p = a[0].v.s[j].p + m0;
                out->v.s[j].n = m1 - m0;
            }
            break;
        }
        case EX_FN_AGE: {
            ex_interval r = {0, 0, 0};
            if (!ex_ts_age(a[0].v.i[j], a[1].v.i[j], t0->unit, &r))
                st = ex_fail(c, n, "interval out of range");
            out->v.d[j] = ex_iv_pack(r);
            break;
        }
        case EX_FN_JUSTIFY_DAYS: case EX_FN_JUSTIFY_HOURS: case EX_FN_JUSTIFY_INTERVAL: {
            ex_interval r = {0, 0, 0};
            if (!ex_interval_justify(fn, ex_iv_unpack(a[0].v.d[j]), &r))
                st = ex_fail(c, n, "interval out of range");
            out->v.d[j] = ex_iv_pack(r);
            break;
        }
        case EX_FN_TO_CHAR:
            if (t0->t == EX_T_INT || t0->t == EX_T_DEC || t0->t == EX_T_FLOAT) {
                st = ex_num_fn(c, n, a, j, out);
                break;
            }
            st = ex_to_char_ts(c->arena, a[0].v.i[j], t0->unit, &a[1].v.s[j], &out->v.s[j], msg);
            if (st == HS_INVALID || st == HS_UNSUPPORTED)
                st = ex_err_at(c->err, st, c->e->text, n->loc, "%s", msg);
            break;
        default:
            st = ex_fail(c, n, "internal: unknown function");
            break;
        }
        if (st == HS_NOMEM)
            st = hs_err_nomem(c->err, 0);
    }
    ex_regex_free(rc.re);
    return st;
}

static hs_status ev_func(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a[3];
    int na = n->n_args < 3 ? n->n_args : 3;
    ex_fn fn = (ex_fn)n->op;
    if (fn >= EX_FN_NA_OF_LIST)
        return ex_ev_na_fn(c, n, sel, ns, out);
    if (fn >= EX_FN_TA_OF_LIST || (fn == EX_FN_PV_ARRAY && ex_is_ta(&n->type)))
        return ex_ev_ta_fn(c, n, sel, ns, out);
    if (fn >= EX_FN_PV_DIST)
        return ex_pv_ev(c, n, sel, ns, out);
    if (fn >= EX_FN_SIGN)
        return ev_func_more(c, n, sel, ns, out);
    if (fn == EX_FN_CONCAT) {
        HS_TRY(ex_vec_new(c, EX_T_STR, out));
        for (int k = 0; k < ns; k++) {
            out->v.s[sel[k]].p = (const uint8_t *)"";
            out->v.s[sel[k]].n = 0;
        }
        for (int i = 0; i < n->n_args; i++) {
            ex_vec x;
            HS_TRY(ex_ev(c, n->args[i], sel, ns, &x));
            for (int k = 0; k < ns; k++) {
                int j = sel[k];
                if (!x.nul[j])
                    HS_TRY(concat2(c, &out->v.s[j], &x.v.s[j], &out->v.s[j]));
            }
        }
        return HS_OK;
    }
    for (int i = 0; i < na; i++)
        HS_TRY(ex_ev(c, n->args[i], sel, ns, &a[i]));
    HS_TRY(ex_vec_new(c, n->type.t, out));
    const ex_ty *t0 = &n->args[0]->type;
    static const ex_str space = {(const uint8_t *)" ", 1};
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        bool nul = false;
        for (int i = 0; i < na; i++)
            nul |= a[i].nul[j];
        out->nul[j] = nul;
        if (nul)
            continue;
        switch (fn) {
        case EX_FN_LOWER: case EX_FN_UPPER: {
            const ex_str *s = &a[0].v.s[j];
            uint8_t *p = hs_arena_alloc(c->arena, s->n ? s->n : 1);
            if (!p)
                return hs_err_nomem(c->err, s->n);
            out->v.s[j].n = ex_case_map(s->p, s->n, p, fn == EX_FN_UPPER);
            out->v.s[j].p = p;
            break;
        }
        case EX_FN_REPLACE:
            if (ex_str_replace(c->arena, &a[0].v.s[j], &a[1].v.s[j], &a[2].v.s[j],
                               &out->v.s[j]) != HS_OK)
                return hs_err_nomem(c->err, a[0].v.s[j].n);
            break;
        case EX_FN_STRPOS:
            out->v.i[j] = ex_str_strpos(&a[0].v.s[j], &a[1].v.s[j]);
            break;
        case EX_FN_LEFT: case EX_FN_RIGHT:
            ex_str_left(&a[0].v.s[j], a[1].v.i[j], fn == EX_FN_RIGHT, &out->v.s[j]);
            break;
        case EX_FN_REPEAT: {
            hs_status rs = ex_str_repeat(c->arena, &a[0].v.s[j], a[1].v.i[j], &out->v.s[j]);
            if (rs == HS_INVALID)
                return ex_fail(c, n, "requested length too large");
            if (rs != HS_OK)
                return hs_err_nomem(c->err, a[0].v.s[j].n);
            break;
        }
        case EX_FN_REVERSE:
            if (ex_str_reverse(c->arena, &a[0].v.s[j], &out->v.s[j]) != HS_OK)
                return hs_err_nomem(c->err, a[0].v.s[j].n);
            break;
        case EX_FN_SPLIT_PART:
            if (a[2].v.i[j] == 0)
                return ex_fail(c, n, "field position must not be zero");
            ex_str_split_part(&a[0].v.s[j], &a[1].v.s[j], a[2].v.i[j], &out->v.s[j]);
            break;
        case EX_FN_LENGTH:
            out->v.i[j] = t0->t == EX_T_BIN ? (int64_t)a[0].v.s[j].n
                                            : (int64_t)ex_utf8_len(a[0].v.s[j].p, a[0].v.s[j].n);
            break;
        case EX_FN_ABS: case EX_FN_ROUND: case EX_FN_FLOOR: case EX_FN_CEIL: case EX_FN_SQRT:
            HS_TRY(ex_num_fn(c, n, a, j, out));
            break;
        case EX_FN_STARTS_WITH: {
            const ex_str *s = &a[0].v.s[j], *p = &a[1].v.s[j];
            out->v.b[j] = p->n <= s->n && (p->n == 0 || memcmp(s->p, p->p, p->n) == 0);
            break;
        }
        case EX_FN_SUBSTR: {
            const ex_str *s = &a[0].v.s[j];
            int64_t start = a[1].v.i[j], end = INT64_MAX;
            if (na == 3) {
                if (a[2].v.i[j] < 0)
                    return ex_fail(c, n, "negative substring length not allowed");
                if (__builtin_add_overflow(start, a[2].v.i[j], &end))
                    end = INT64_MAX;
            }
            if (start < 1)
                start = 1;
            if (end <= start) {
                out->v.s[j].p = s->p;
                out->v.s[j].n = 0;
                break;
            }
            size_t b0 = cp_offset(s->p, s->n, start - 1);
            size_t b1 = end == INT64_MAX ? s->n : cp_offset(s->p, s->n, end - 1);
            out->v.s[j].p = s->p + b0;
            out->v.s[j].n = b1 - b0;
            break;
        }
        case EX_FN_BTRIM: case EX_FN_LTRIM: case EX_FN_RTRIM:
            trim(&a[0].v.s[j], na == 2 ? &a[1].v.s[j] : &space, fn != EX_FN_RTRIM, fn != EX_FN_LTRIM,
                 &out->v.s[j]);
            break;
        case EX_FN_DATE_PART:
            if (t0->t == EX_T_INTERVAL) {
                ex_interval iv = ex_iv_unpack(a[0].v.d[j]);
                if (n->aux == EX_DF_EPOCH)
                    out->v.f[j] = ex_interval_epoch(iv);
                else if (!ex_interval_part((ex_dfield)n->aux, iv, &out->v.i[j]))
                    return ex_fail(c, n, "unit not supported for type interval");
                break;
            }
            if (n->aux == EX_DF_EPOCH) { /* seconds with their fraction, as a double */
                int64_t v = a[0].v.i[j];
                out->v.f[j] = t0->t == EX_T_DATE ? (double)v * 86400.0
                            : (double)v / (double)ex_unit_per_sec(t0->unit);
                break;
            }
            if (!ex_date_part((ex_dfield)n->aux, t0->t, t0->unit, a[0].v.i[j], &out->v.i[j]))
                return ex_fail(c, n, "unit not supported for type %s", t0->t == EX_T_TIME ? "time" : "date");
            break;
        case EX_FN_DATE_TRUNC:
            if (!ex_date_trunc((ex_dfield)n->aux, t0->unit, a[0].v.i[j], &out->v.i[j]))
                return ex_fail(c, n, "date_trunc: unit not supported");
            break;
        default:
            return ex_fail(c, n, "internal: unknown function");
        }
    }
    return HS_OK;
}

static hs_status ev_cast(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_vec a;
    HS_TRY(ex_ev(c, n->args[0], sel, ns, &a));
    HS_TRY(ex_vec_new(c, n->type.t, out));
    return ex_cast_rows(c, n, &n->args[0]->type, &a, sel, ns, out);
}

/* The rows of sel (in order) where n is TRUE, into out (not sel).  Only
 * TRUE matters here, so AND also drops the rows where a term is NULL before
 * evaluating the next term, and OR evaluates each term only on rows no
 * earlier term made TRUE: this is the filter's fast path and what WHEN uses. */
/* A column or constant of a fixed-width type (not text, not nested). */
static bool fixed_leaf(const ex_node *n)
{
    if (n->kind == EX_CONST)
        return true;
    if (n->kind != EX_COL || n->sub > 0)
        return false;
    switch (n->type.t) {
    case EX_T_BOOL: case EX_T_INT: case EX_T_FLOAT: case EX_T_DEC: case EX_T_DATE:
    case EX_T_TS: case EX_T_TIME:
        return true;
    default:
        return false;
    }
}

/* A term that compares fixed-width columns and constants (=, <, BETWEEN,
 * IN of constants, IS NULL): a few nanoseconds a row, and it cannot fail. */
static bool cheap_term(const ex_node *n)
{
    switch (n->kind) {
    case EX_COL:   /* a boolean column as a term (the scan's dictionary verdicts) */
        return n->type.t == EX_T_BOOL && n->sub == 0;
    case EX_IS_NULL:
        return n->args[0]->kind == EX_COL;
    case EX_CMP: case EX_DISTINCT: case EX_BETWEEN: case EX_IN:
        switch (n->cmode) {
        case EX_CM_I64: case EX_CM_F64: case EX_CM_I64_F64: case EX_CM_F64_I64:
        case EX_CM_DEC: case EX_CM_BOOL:
            break;
        default:
            return false;
        }
        if (n->kind == EX_IN && !n->set)
            return false;
        for (int i = 0; i < (n->kind == EX_IN ? 1 : n->n_args); i++)
            if (!fixed_leaf(n->args[i]))
                return false;
        return true;
    default:
        return false;
    }
}

static bool cheap_tree(const ex_node *n)
{
    if (n->kind == EX_CONST)
        return true;
    if (n->kind != EX_AND)
        return cheap_term(n);
    for (int i = 0; i < n->n_args; i++)
        if (!cheap_tree(n->args[i]))
            return false;
    return true;
}

bool ex_is_cheap(const ex_expr *e)
{
    return cheap_tree(e->root);
}

static hs_status ev_true(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_sel *out,
                         int *n_out)
{
    if (n->kind == EX_AND) {
        ex_sel *tmp = sel_new(c);
        if (!tmp)
            return hs_err_nomem(c->err, EX_CHUNK);
        /* Only TRUE rows matter, so the terms may run in any order: the
         * cheap ones (cheap_term) first, then the others in their order on
         * the rows left (TPC-H Q12: four date comparisons before
         * l_shipmode IN (...)).  As PostgreSQL orders a scan's quals by
         * cost: a term that could fail is never run on more rows than in
         * the written order, only on fewer. */
        int ord[64], na = n->n_args, k = 0;
        if (na <= 64) {
            for (int i = 0; i < na; i++)
                if (cheap_term(n->args[i]))
                    ord[k++] = i;
            for (int i = 0; i < na; i++)
                if (!cheap_term(n->args[i]))
                    ord[k++] = i;
        }
        const ex_sel *cur = sel;
        int nc = ns;
        for (int i = 0; i < na; i++) {
            ex_sel *dst = (i % 2 == na % 2) ? tmp : out; /* the last term writes out */
            if (nc == 0) {
                *n_out = 0;
                return HS_OK;
            }
            HS_TRY(ev_true(c, n->args[na <= 64 ? ord[i] : i], cur, nc, dst, &nc));
            cur = dst;
        }
        *n_out = nc;
        return HS_OK;
    }
    if (n->kind == EX_OR) {
        uint8_t *hit = hs_arena_calloc(c->arena, EX_CHUNK, 1);
        ex_sel *rest = sel_new(c), *t = sel_new(c);
        if (!hit || !rest || !t)
            return hs_err_nomem(c->err, EX_CHUNK);
        memcpy(rest, sel, (size_t)ns * sizeof *sel);
        int nr = ns;
        for (int i = 0; i < n->n_args && nr > 0; i++) {
            int nt;
            HS_TRY(ev_true(c, n->args[i], rest, nr, t, &nt));
            for (int k = 0; k < nt; k++)
                hit[t[k]] = 1;
            int m = 0;
            for (int k = 0; k < nr; k++)
                if (!hit[rest[k]])
                    rest[m++] = rest[k];
            nr = m;
        }
        int m = 0;
        for (int k = 0; k < ns; k++)
            if (hit[sel[k]])
                out[m++] = sel[k];
        *n_out = m;
        return HS_OK;
    }
    ex_vec v;
    HS_TRY(ex_ev(c, n, sel, ns, &v));
    int m = 0;
    for (int k = 0; k < ns; k++) {
        int j = sel[k];
        if (!v.nul[j] && v.v.b[j])
            out[m++] = (ex_sel)j;
    }
    *n_out = m;
    return HS_OK;
}

static hs_status ev_node(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out);

/* A shared value (ex_share): computed when first needed for every row of
 * the chunk, then copied (callers may change the vector they get). */
static hs_status ev_shared(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    ex_share_slot *sl = &c->share[n->share - 1];
    if (!sl->valid) {
        if (ns != c->cn)   /* a subset of the rows: as without sharing */
            return ev_node(c, n, sel, ns, out);
        /* in the chunk's shared arena, which outlives this expression */
        hs_arena *own = c->arena;
        c->arena = c->share_arena;
        hs_status st = ev_node(c, n, sel, ns, &sl->v);
        c->arena = own;
        HS_TRY(st);
        sl->valid = true;
    }
    HS_TRY(ex_vec_new(c, n->type.t, out));
    if (ns == c->cn) {
        memcpy(out->nul, sl->v.nul, (size_t)ns);
        memcpy(out->v.p, sl->v.v.p, (size_t)ns * ex_elem_size(n->type.t));
    } else {
        for (int k = 0; k < ns; k++)
            copy_row(n->type.t, out, &sl->v, sel[k]);
    }
    return HS_OK;
}

hs_status ex_ev(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    if (n->share > 0 && c->share)
        return ev_shared(c, n, sel, ns, out);
    return ev_node(c, n, sel, ns, out);
}

static hs_status ev_node(ex_ctx *c, const ex_node *n, const ex_sel *sel, int ns, ex_vec *out)
{
    switch (n->kind) {
    case EX_CONST: return ev_const(c, n, sel, ns, out);
    case EX_COL: return ev_col(c, n, sel, ns, out);
    case EX_NOT: return ev_not(c, n, sel, ns, out);
    case EX_AND: case EX_OR: return ev_andor(c, n, sel, ns, out);
    case EX_CMP: case EX_DISTINCT: return ev_cmp(c, n, sel, ns, out);
    case EX_IN: return ev_in(c, n, sel, ns, out);
    case EX_IS_NULL: return ev_isnull(c, n, sel, ns, out);
    case EX_BOOLTEST: return ev_booltest(c, n, sel, ns, out);
    case EX_LIKE: return ev_like(c, n, sel, ns, out);
    case EX_ARITH: return ev_arith(c, n, sel, ns, out);
    case EX_NEG: return ev_neg(c, n, sel, ns, out);
    case EX_CAST: return ev_cast(c, n, sel, ns, out);
    case EX_CASE: return ev_case(c, n, sel, ns, out);
    case EX_COALESCE: return ev_coalesce(c, n, sel, ns, out);
    case EX_NULLIF: return ev_nullif(c, n, sel, ns, out);
    case EX_FUNC: return ev_func(c, n, sel, ns, out);
    case EX_BETWEEN: return ev_between(c, n, sel, ns, out);
    }
    return hs_err_set(c->err, HS_INTERNAL, "expression: unknown node kind %d", (int)n->kind);
}

/* ------------------------------------------------------------------ */
/* entry points                                                        */

hs_status ex_fold(const ex_expr *e, const ex_node *n, hs_arena *arena, ex_value *out, hs_error *err)
{
    hs_arena scratch = {0};
    ex_col_cache cc;
    memset(&cc, 0, sizeof cc);
    ex_ctx c = {.e = e, .b = NULL, .base = 0, .arena = &scratch, .cols = &cc, .err = err};
    ex_sel one = 0;
    ex_vec v;
    hs_status st = ex_ev(&c, n, &one, 1, &v);
    memset(out, 0, sizeof *out);
    if (st == HS_OK) {
        out->null = v.nul[0] != 0;
        switch (n->type.t) {
        case EX_T_BOOL: out->i = v.v.b[0]; break;
        case EX_T_INT: case EX_T_DATE: case EX_T_TS: case EX_T_TIME: out->i = v.v.i[0]; break;
        case EX_T_FLOAT: out->f = v.v.f[0]; break;
        case EX_T_DEC: case EX_T_INTERVAL: out->d = v.v.d[0]; break;
        case EX_T_STR: case EX_T_BIN: case EX_T_UNKNOWN:
        case EX_T_VEC: case EX_T_HALFVEC: case EX_T_SPARSEVEC: case EX_T_BIT: case EX_T_ARRAY:
            if (!out->null) {
                /* bytes, not a C string: blobs and bytea hold NULs */
                char *p = hs_arena_alloc(arena, v.v.s[0].n + 1);
                if (!p)
                    st = hs_err_nomem(err, v.v.s[0].n);
                else {
                    if (v.v.s[0].n)
                        memcpy(p, v.v.s[0].p, v.v.s[0].n);
                    p[v.v.s[0].n] = '\0';
                }
                out->s.p = (const uint8_t *)p;
                out->s.n = v.v.s[0].n;
            }
            break;
        default:
            out->null = true;
            break;
        }
    }
    hs_arena_destroy(&scratch);
    return st;
}

static hs_status cols_new(const ex_expr *e, ex_col_cache **cols, hs_error *err)
{
    *cols = hs_calloc((size_t)(e->n_slots > 0 ? e->n_slots : 1), sizeof **cols);
    return *cols ? HS_OK : hs_err_nomem(err, sizeof **cols);
}

hs_status ex_eval_filter(const ex_expr *e, const hs_batch *b, const uint8_t *sel_in, uint8_t *sel_out,
                         int64_t *n_match, hs_error *err)
{
    int64_t n = b->n_rows, m = 0;
    *n_match = 0;
    if (n <= 0)
        return HS_OK;
    if (ex_is_true(e)) {
        for (int64_t i = 0; i < n; i++) {
            sel_out[i] = sel_in ? sel_in[i] != 0 : 1;
            m += sel_out[i];
        }
        *n_match = m;
        return HS_OK;
    }
    hs_arena arena = {0};
    ex_col_cache *cols;
    HS_TRY(cols_new(e, &cols, err));
    ex_ctx c = {.e = e, .b = b, .arena = &arena, .cols = cols, .err = err};
    ex_sel sel[EX_CHUNK];
    hs_status st = HS_OK;
    for (int64_t base = 0; base < n && st == HS_OK; base += EX_CHUNK) {
        int cn = (int)(n - base < EX_CHUNK ? n - base : EX_CHUNK), ns = 0;
        for (int j = 0; j < cn; j++)
            if (!sel_in || sel_in[base + j])
                sel[ns++] = (ex_sel)j;
        uint8_t *dst = sel_out + base;
        if (ns == 0) {
            memset(dst, 0, (size_t)cn);
            continue;
        }
        c.base = base;
        ex_sel hits[EX_CHUNK];
        int nh;
        st = ev_true(&c, e->root, sel, ns, hits, &nh);
        if (st != HS_OK)
            break;
        memset(dst, 0, (size_t)cn);
        for (int k = 0; k < nh; k++)
            dst[hits[k]] = 1;
        m += nh;
        hs_arena_reset(&arena);
    }
    hs_arena_destroy(&arena);
    hs_free(cols);
    if (st == HS_OK)
        *n_match = m;
    return st;
}


/* Fixed-width results whose vector holds the column's values as they are
 * (int64, double, decimal128, 64-bit timestamps and times) or converted
 * in place (int32/16/8, float, date): runs of non-null rows are appended
 * at once. */
static bool append_fast(const ex_ty *t, hs_column *col, const ex_vec *v, int cn, hs_status *st)
{
    int w;
    switch (t->t) {
    case EX_T_INT: w = t->bits == 8 ? 1 : t->bits == 16 ? 2 : t->bits == 32 ? 4 : 8; break;
    case EX_T_FLOAT: w = t->bits == 32 ? 4 : 8; break;
    case EX_T_DEC: case EX_T_INTERVAL: w = 16; break;
    case EX_T_DATE: w = 4; break;
    case EX_T_TS: w = 8; break;
    case EX_T_TIME: w = t->unit <= HS_UNIT_MILLI ? 4 : 8; break;
    default: return false;
    }
    if (col->width != w || col->type == HS_TYPE_BOOL)
        return false;
    union { int8_t i8[EX_CHUNK]; int16_t i16[EX_CHUNK]; int32_t i32[EX_CHUNK]; float f[EX_CHUNK]; } tmp;
    *st = HS_OK;
    for (int j = 0; j < cn && *st == HS_OK;) {
        if (v->nul[j]) {
            int k = j;
            while (k < cn && v->nul[k])
                k++;
            *st = hs_col_append_nulls(col, k - j);
            j = k;
            continue;
        }
        int k = j;
        while (k < cn && !v->nul[k])
            k++;
        int n = k - j;
        const void *src;
        if (t->t == EX_T_DEC || t->t == EX_T_INTERVAL) {
            src = &v->v.d[j];
        } else if (t->t == EX_T_FLOAT && w == 8) {
            src = &v->v.f[j];
        } else if (t->t == EX_T_FLOAT) {
            for (int q = 0; q < n; q++)
                tmp.f[q] = (float)v->v.f[j + q];
            src = tmp.f;
        } else if (w == 8) {
            src = &v->v.i[j];
        } else if (w == 4) {
            for (int q = 0; q < n; q++)
                tmp.i32[q] = (int32_t)v->v.i[j + q];
            src = tmp.i32;
        } else if (w == 2) {
            for (int q = 0; q < n; q++)
                tmp.i16[q] = (int16_t)v->v.i[j + q];
            src = tmp.i16;
        } else {
            for (int q = 0; q < n; q++)
                tmp.i8[q] = (int8_t)v->v.i[j + q];
            src = tmp.i8;
        }
        *st = hs_col_append_fixed_n(col, src, n);
        j = k;
    }
    return true;
}

static hs_status append_rows(const ex_expr *e, hs_column *col, const ex_vec *v, int cn, hs_error *err)
{
    const ex_ty *t = &e->root->type;
    hs_status st = HS_OK;
    if (append_fast(t, col, v, cn, &st))
        cn = 0;   /* done (st says how) */
    for (int j = 0; j < cn && st == HS_OK; j++) {
        if (v->nul[j] || t->t == EX_T_NULL) {
            st = hs_col_append_null(col);
            continue;
        }
        switch (t->t) {
        case EX_T_BOOL: st = hs_col_append_fixed(col, &v->v.b[j]); break;
        case EX_T_INT: {
            int64_t x = v->v.i[j];
            int8_t i8 = (int8_t)x;
            int16_t i16 = (int16_t)x;
            int32_t i32 = (int32_t)x;
            st = hs_col_append_fixed(col, t->bits == 8 ? (void *)&i8 : t->bits == 16 ? (void *)&i16
                                          : t->bits == 32 ? (void *)&i32 : (void *)&x);
            break;
        }
        case EX_T_FLOAT:
            if (t->bits == 32) {
                float f = (float)v->v.f[j];
                st = hs_col_append_fixed(col, &f);
            } else {
                st = hs_col_append_fixed(col, &v->v.f[j]);
            }
            break;
        case EX_T_DEC: st = hs_col_append_fixed(col, &v->v.d[j]); break;
        case EX_T_INTERVAL: st = hs_col_append_fixed(col, &v->v.d[j]); break;
        case EX_T_DATE: {
            int32_t d = (int32_t)v->v.i[j];
            st = hs_col_append_fixed(col, &d);
            break;
        }
        case EX_T_TIME:
            if (t->unit <= HS_UNIT_MILLI) {
                int32_t d = (int32_t)v->v.i[j];
                st = hs_col_append_fixed(col, &d);
            } else {
                st = hs_col_append_fixed(col, &v->v.i[j]);
            }
            break;
        case EX_T_TS: st = hs_col_append_fixed(col, &v->v.i[j]); break;
        case EX_T_VEC: case EX_T_HALFVEC: case EX_T_SPARSEVEC: case EX_T_BIT: case EX_T_ARRAY:
            if (t->t == EX_T_ARRAY && !ex_is_ta(t) && pv_arr_multidim((pv_val){v->v.s[j].p, v->v.s[j].n}))
                return hs_err_set(err, HS_UNSUPPORTED, "multidimensional arrays are not supported");
            st = ex_pv_append(t, col, &v->v.s[j]);
            break;
        case EX_T_STR: case EX_T_UNKNOWN: case EX_T_BIN:
            if (t->uuid && v->v.s[j].n != 16)
                st = hs_col_append_null(col);
            else
                st = hs_col_append_bytes(col, v->v.s[j].p, v->v.s[j].n);
            break;
        default:
            st = hs_col_append_null(col);
            break;
        }
    }
    if (st == HS_NOMEM)
        return hs_err_nomem(err, 0);
    if (st != HS_OK)
        return hs_err_set(err, st, "expression: cannot build the result column");
    return HS_OK;
}

const hs_column *ex_passthrough(const ex_expr *e, const hs_batch *b)
{
    const ex_node *n = e->root;
    if (!b || !n || n->kind != EX_COL || ex_is_pv(n->type.t) || n->type.t == EX_T_OTHER
        || n->type.t == EX_T_NULL)
        return NULL;
    pr_col_ref r;
    bool found = find_col(b, n, &r);
    if (!found || r.n_parents > 0 || !r.col || !r.field || r.col->length < b->n_rows)
        return NULL;
    const hs_field *f = r.field, *t = &e->type_field;
    if (f->type != t->type || r.col->type != t->type || f->n_children != 0 || t->n_children != 0
        || f->ext != t->ext || f->width != t->width)
        return NULL;
    if (t->type == HS_TYPE_DECIMAL128 && f->scale != t->scale)
        return NULL;
    if ((t->type == HS_TYPE_TIMESTAMP || t->type == HS_TYPE_TIME32 || t->type == HS_TYPE_TIME64)
        && f->unit != t->unit)
        return NULL;
    return r.col;
}

hs_status ex_eval(const ex_expr *e, const hs_batch *b, hs_column **out, hs_error *err)
{
    *out = NULL;
    int64_t n = b->n_rows;
    hs_column *col = NULL;
    if (e->root->type.t == EX_T_OTHER && e->root->kind == EX_COL) {
        /* a nested column (expr_bind.c ex_bind_json): a copy of its rows */
        pr_col_ref r;
        if (find_col(b, e->root, &r) && r.n_parents == 0 && r.col && r.col->length >= n)
            return hs_col_slice(r.col, 0, n, out, err);
        HS_TRY(hs_col_create(&e->type_field, n > 0 ? n : 1, &col, err));
        if (hs_col_append_nulls(col, n) != HS_OK) {
            hs_col_free(col);
            return hs_err_nomem(err, 0);
        }
        *out = col;
        return HS_OK;
    }
    HS_TRY(hs_col_create(&e->type_field, n > 0 ? n : 1, &col, err));
    hs_arena arena = {0};
    ex_col_cache *cols;
    hs_status st = cols_new(e, &cols, err);
    if (st != HS_OK) {
        hs_col_free(col);
        return st;
    }
    ex_ctx c = {.e = e, .b = b, .arena = &arena, .cols = cols, .err = err};
    ex_sel sel[EX_CHUNK];
    for (int j = 0; j < EX_CHUNK; j++)
        sel[j] = (ex_sel)j;
    for (int64_t base = 0; base < n && st == HS_OK; base += EX_CHUNK) {
        int cn = (int)(n - base < EX_CHUNK ? n - base : EX_CHUNK);
        c.base = base;
        ex_vec v;
        st = ex_ev(&c, e->root, sel, cn, &v);
        if (st == HS_OK)
            st = append_rows(e, col, &v, cn, err);
        hs_arena_reset(&arena);
    }
    hs_arena_destroy(&arena);
    hs_free(cols);
    if (st != HS_OK) {
        hs_col_free(col);
        return st;
    }
    *out = col;
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* common subexpressions (ex_share, ex_eval_shared)                    */

static bool ty_eq(const ex_ty *a, const ex_ty *b)
{
    return a->t == b->t && a->bits == b->bits && a->unit == b->unit && a->tz == b->tz &&
           a->uuid == b->uuid && a->prec == b->prec && a->scale == b->scale && a->dim == b->dim &&
           a->elem == b->elem;
}

static bool val_eq(const ex_ty *t, const ex_value *a, const ex_value *b)
{
    if (a->null || b->null)
        return a->null == b->null;
    switch (t->t) {
    case EX_T_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case EX_T_DEC: case EX_T_INTERVAL: return a->d == b->d;
    case EX_T_STR: case EX_T_BIN: case EX_T_UNKNOWN:
    case EX_T_VEC: case EX_T_HALFVEC: case EX_T_SPARSEVEC: case EX_T_BIT: case EX_T_ARRAY:
        return a->s.n == b->s.n && (a->s.n == 0 || memcmp(a->s.p, b->s.p, a->s.n) == 0);
    default: return a->i == b->i;
    }
}

/* The same computation: equal trees over the same columns. */
static bool node_eq(const ex_node *a, const ex_node *b)
{
    if (a == b)
        return true;
    if (a->kind != b->kind || !ty_eq(&a->type, &b->type) || a->op != b->op || a->aux != b->aux ||
        a->cmode != b->cmode || a->neg != b->neg || a->ci != b->ci || a->esc != b->esc ||
        a->n_args != b->n_args)
        return false;
    if (a->kind == EX_CONST)
        return val_eq(&a->type, &a->val, &b->val);
    if (a->kind == EX_COL) {
        if (a->field != b->field || a->field_id != b->field_id || a->sub != b->sub ||
            a->path_len != b->path_len)
            return false;
        for (int i = 0; i < a->path_len; i++)
            if (strcmp(a->path[i], b->path[i]) != 0)
                return false;
        return true;
    }
    for (int i = 0; i < a->n_args; i++)
        if (!node_eq(a->args[i], b->args[i]))
            return false;
    return true;
}

/* Whether two evaluations of n may differ on the same row.  None of the
 * bound functions is (random(), clock_timestamp() and the like are
 * rejected by the binder); one that is must be listed here. */
static bool node_volatile(const ex_node *n)
{
    (void)n;
    return false;
}

typedef struct share_ent {
    uint64_t h;
    ex_node *n;
} share_ent;

/* Hashes the tree of n (appending its non-leaf nodes to ents); *vol:
 * something volatile below. */
static uint64_t share_walk(ex_node *n, hs_buf *ents, bool *vol, bool *nomem)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL * (uint64_t)(n->kind + 1);
    h = (h ^ (uint64_t)n->type.t) * 0x100000001b3ULL;
    h = (h ^ (uint64_t)(uint32_t)n->op) * 0x100000001b3ULL;
    if (n->kind == EX_COL)
        h = (h ^ (uint64_t)(uint32_t)n->field_id) * 0x100000001b3ULL;
    if (n->kind == EX_CONST && !n->val.null)
        h = (h ^ (uint64_t)n->val.i ^ (uint64_t)n->val.d) * 0x100000001b3ULL;
    bool v = node_volatile(n);
    for (int i = 0; i < n->n_args; i++) {
        bool cv = false;
        h = (h ^ share_walk(n->args[i], ents, &cv, nomem)) * 0xff51afd7ed558ccdULL;
        v |= cv;
    }
    h ^= h >> 31;
    *vol |= v;
    n->share = 0;
    share_ent se = {h, n};
    if (!v && n->kind != EX_CONST && n->kind != EX_COL && n->type.t != EX_T_OTHER &&
        n->type.t != EX_T_NULL && hs_buf_append(ents, &se, sizeof se) != HS_OK)
        *nomem = true;
    return h;
}

static int share_cmp(const void *a, const void *b)
{
    uint64_t x = ((const share_ent *)a)->h, y = ((const share_ent *)b)->h;
    return x < y ? -1 : x > y;
}

int ex_share(ex_expr *const *exprs, int n)
{
    hs_buf ents = {0};
    bool nomem = false;
    for (int i = 0; i < n; i++) {
        bool vol = false;
        if (exprs[i] && exprs[i]->root)
            (void)share_walk(exprs[i]->root, &ents, &vol, &nomem);
    }
    size_t m = HS_VEC_LEN(&ents, share_ent);
    share_ent *e = (share_ent *)ents.data;
    int shared = 0;
    if (!nomem && m > 1) {
        qsort(e, m, sizeof *e, share_cmp);
        for (size_t i = 0; i < m; i++) {
            if (e[i].n->share)
                continue;
            for (size_t k = i + 1; k < m && e[k].h == e[i].h; k++) {
                if (e[k].n->share || !node_eq(e[i].n, e[k].n))
                    continue;
                if (!e[i].n->share)
                    e[i].n->share = ++shared;
                e[k].n->share = e[i].n->share;
            }
        }
    }
    if (nomem)   /* nothing shared rather than half */
        for (size_t i = 0; i < m; i++)
            e[i].n->share = 0;
    hs_buf_free(&ents);
    return nomem ? 0 : shared;
}

hs_status ex_eval_shared(ex_expr *const *exprs, int n, int n_shared, const hs_batch *b,
                         const bool *skip, hs_column **out, hs_error *err)
{
    int64_t rows = b->n_rows;
    hs_arena arena = {0}, shared = {0};   /* per expression, per chunk */
    ex_ctx *ctx = hs_calloc((size_t)(n > 0 ? n : 1), sizeof *ctx);
    ex_share_slot *share = hs_calloc((size_t)(n_shared > 0 ? n_shared : 1), sizeof *share);
    bool *on = hs_calloc((size_t)(n > 0 ? n : 1), sizeof *on);
    hs_status st = ctx && share && on ? HS_OK : hs_err_nomem(err, 0);
    for (int i = 0; i < n; i++)
        out[i] = NULL;
    for (int i = 0; i < n && st == HS_OK; i++) {
        const ex_expr *e = exprs[i];
        if (skip && skip[i])
            continue;
        if (e->root->type.t == EX_T_OTHER) {   /* a nested column: ex_eval copies it */
            st = ex_eval(e, b, &out[i], err);
            continue;
        }
        on[i] = true;
        st = hs_col_create(&e->type_field, rows > 0 ? rows : 1, &out[i], err);
        if (st == HS_OK)
            st = cols_new(e, &ctx[i].cols, err);
        ctx[i].e = e;
        ctx[i].b = b;
        ctx[i].arena = &arena;
        ctx[i].share_arena = &shared;
        ctx[i].err = err;
        ctx[i].share = share;
    }
    ex_sel sel[EX_CHUNK];
    for (int j = 0; j < EX_CHUNK; j++)
        sel[j] = (ex_sel)j;
    for (int64_t base = 0; base < rows && st == HS_OK; base += EX_CHUNK) {
        int cn = (int)(rows - base < EX_CHUNK ? rows - base : EX_CHUNK);
        for (int k = 0; k < n_shared; k++)
            share[k].valid = false;
        for (int i = 0; i < n && st == HS_OK; i++) {
            if (!on[i])
                continue;
            ctx[i].base = base;
            ctx[i].cn = cn;
            ex_vec v;
            st = ex_ev(&ctx[i], exprs[i]->root, sel, cn, &v);
            if (st == HS_OK)
                st = append_rows(exprs[i], out[i], &v, cn, err);
            hs_arena_reset(&arena);
        }
        hs_arena_reset(&shared);
    }
    hs_arena_destroy(&arena);
    hs_arena_destroy(&shared);
    for (int i = 0; ctx && i < n; i++)
        hs_free(ctx[i].cols);
    hs_free(ctx);
    hs_free(share);
    hs_free(on);
    if (st != HS_OK)
        for (int i = 0; i < n; i++) {
            hs_col_free(out[i]);
            out[i] = NULL;
        }
    return st;
}

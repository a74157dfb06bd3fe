/*
 * sql/plan_window.c - window functions of a SELECT block: from the parse
 * tree's FuncCall ... OVER to the Window operators of exec (xo_window).
 *
 *   pl_resolve_windows       WINDOW w AS (...), OVER w / OVER (w ...) become
 *                            inline definitions (PostgreSQL's
 *                            transformWindowDefinitions rules); agg(x)
 *                            FILTER (WHERE c) OVER w becomes
 *                            agg(CASE WHEN c THEN x END) OVER w
 *   pl_numeric_window_avgs   avg(int / numeric / interval) OVER w rewritten
 *                            as sum(x) OVER w::numeric / count(x) OVER w,
 *                            PostgreSQL's numeric avg
 *   pl_apply_windows         one Window operator per distinct (PARTITION BY,
 *                            ORDER BY), its functions' arguments, frames
 *                            (frame_of: ROWS / GROUPS offsets as constants,
 *                            RANGE offsets as bound columns key -/+ offset,
 *                            range_bounds) and EXCLUDE; each call mapped to
 *                            its column in the nmap
 *   pl_apply_operand_windows the window calls in the operands of x IN / op
 *                            ANY / ALL (subquery), computed before the
 *                            subqueries are planned (pl_apply_windows then
 *                            skips calls already mapped)
 *   pl_collect_windows       the window calls under a node (not in subqueries)
 *
 * lag / lead offsets are constants or expressions without columns, run
 * once: 0 maps the call to its argument, NULL to NULL, a negative one
 * turns lag into lead (and back).  RANGE offsets over a time key compare
 * microseconds of the day (in_range_time_interval).
 *
 * plan_block (plan_select.c) calls them after aggregation and HAVING, before
 * the select list; window calls over several grouping sets were moved to a
 * wrapping query by plan_grouping.c before.
 */
#include "sql/plan_int.h"

#include <errno.h>

static bool is_window_call(const json_t *j)
{
    json_t *b;
    return pl_is_kind(j, "FuncCall", &b) && pl_jget(b, "over");
}

void pl_collect_windows(const json_t *j, json_t *arr, int depth)
{
    pl_collect_calls(j, arr, is_window_call, depth);
}

/* avg(x) OVER w of integers or numerics is numeric in PostgreSQL
 * (numeric_avg: the sum divided by the count as numeric_div does): such a
 * call is rewritten in place into (sum(x) OVER w)::numeric / count(x) OVER
 * w, named avg, before the window functions are planned; avg(interval)
 * OVER w the same without the cast (interval_avg divides the sum by the
 * count); the Window operator's own avg stays double precision for
 * doubles. */
hs_status pl_numeric_window_avgs(planner *p, rel *cur, json_t *j, const nmap *m,
                                     const layer *pre, const int *key_of_col, int depth)
{
    if (depth > 400 || !j)
        return HS_OK;
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            HS_TRY(pl_numeric_window_avgs(p, cur, json_array_get(j, i), m, pre, key_of_col, depth + 1));
        return HS_OK;
    }
    if (!json_is_object(j) || json_object_get(j, "SubLink"))
        return HS_OK;
    json_t *fc = json_object_get(j, "FuncCall");
    const char *fname = fc && json_object_size(j) == 1 ? pl_func_name(fc) : NULL;
    json_t *args = fc ? pl_jget(fc, "args") : NULL;
    if (fname && !strcmp(fname, "avg") && pl_jget(fc, "over") && json_array_size(args) == 1 &&
        !json_is_true(pl_jget(fc, "agg_distinct")) && !pl_jget(fc, "agg_filter")) {
        int col;
        HS_TRY(pl_rel_add_expr_in(p, cur, json_array_get(args, 0), m, pre, key_of_col, &col));
        hs_type t = cur->op->schema.children[col].type;
        bool iv = t == HS_TYPE_INTERVAL;   /* interval_avg: the sum / the count */
        if ((t >= HS_TYPE_INT8 && t <= HS_TYPE_UINT64) || t == HS_TYPE_DECIMAL128 || iv) {
            json_t *sum = json_deep_copy(fc), *cnt = json_deep_copy(fc);
            json_t *num = json_pack("{s:[{s:{s:s}}],s:i,s:i}", "names", "String", "sval", "numeric",
                                    "typemod", -1, "location", -1);
            if (sum)
                json_object_set_new(sum, "funcname", json_pack("[{s:{s:s}}]", "String", "sval", "sum"));
            if (cnt)
                json_object_set_new(cnt, "funcname", json_pack("[{s:{s:s}}]", "String", "sval", "count"));
            json_t *cast = iv ? (json_decref(num), sum ? json_pack("{s:o}", "FuncCall", sum) : NULL)
                   : sum && num ? json_pack("{s:{s:{s:o},s:o,s:i}}", "TypeCast", "arg", "FuncCall",
                                            sum, "typeName", num, "location", -1)
                                : NULL;
            json_t *div = cast && cnt ? pl_mk_op("/", cast, json_pack("{s:o}", "FuncCall", cnt)) : NULL;
            json_t *body = div ? json_object_get(div, "A_Expr") : NULL;
            if (!body) {
                json_decref(div);
                return pl_nomem(p);
            }
            json_object_set_new(body, "hs_name", json_string("avg"));
            if (t == HS_TYPE_INT64 || t == HS_TYPE_UINT64) {
                /* the mean of 64-bit integers rounded at scale 19 (18), as
                 * the aggregate's (plan_select.c): up to 2^63 fits 38 digits */
                json_t *fit = json_pack("{s:{s:O,s:{s:[{s:{s:s}}],s:[o,o],s:i,s:i},s:i}}", "TypeCast",
                                        "arg", div, "typeName", "names", "String", "sval", "numeric",
                                        "typmods", pl_mk_int(38),
                                        pl_mk_int(t == HS_TYPE_INT64 ? 19 : 18), "typemod", -1,
                                        "location", -1, "location", -1);
                if (!fit) {
                    json_decref(div);
                    return pl_nomem(p);
                }
                json_object_clear(j);
                json_object_set(j, "TypeCast", json_object_get(fit, "TypeCast"));
                json_decref(fit);
                json_decref(div);
                return HS_OK;
            }
            json_object_clear(j);
            json_object_set(j, "A_Expr", body);
            json_decref(div);
        }
        return HS_OK;
    }
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
        HS_TRY(pl_numeric_window_avgs(p, cur, v, m, pre, key_of_col, depth + 1));
    return HS_OK;
}

/* PostgreSQL's FRAMEOPTION_* bits (nodes/parsenodes.h) */
#define FO_NONDEFAULT 0x1
#define FO_RANGE 0x2
#define FO_ROWS 0x4
#define FO_GROUPS 0x8
#define FO_START_UNB_PREC 0x20
#define FO_END_UNB_FOLL 0x100
#define FO_START_CURRENT 0x200
#define FO_END_CURRENT 0x400
#define FO_START_OFF_PREC 0x800
#define FO_END_OFF_PREC 0x1000
#define FO_START_OFF_FOLL 0x2000
#define FO_END_OFF_FOLL 0x4000
#define FO_EXCL_CURRENT 0x8000
#define FO_EXCL_GROUP 0x10000
#define FO_EXCL_TIES 0x20000
#define FO_DEFAULTS 1058   /* RANGE UNBOUNDED PRECEDING AND CURRENT ROW */

static json_t *cast_named(json_t *node, const char *type)
{
    return json_pack("{s:{s:o,s:{s:[{s:{s:s}}],s:i,s:i},s:i}}", "TypeCast", "arg", node, "typeName",
                     "names", "String", "sval", type, "typemod", -1, "location", -1, "location", -1);
}

/* PostgreSQL's name of a column type, for the messages of RANGE offsets. */
static const char *pg_type_of(const hs_field *f)
{
    switch (f->type) {
    case HS_TYPE_BOOL: return "boolean";
    case HS_TYPE_INT8: case HS_TYPE_INT16: return "smallint";
    case HS_TYPE_INT32: return "integer";
    case HS_TYPE_INT64: case HS_TYPE_UINT64: case HS_TYPE_UINT32: return "bigint";
    case HS_TYPE_FLOAT32: return "real";
    case HS_TYPE_FLOAT64: return "double precision";
    case HS_TYPE_DECIMAL128: return "numeric";
    case HS_TYPE_DATE32: return "date";
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: return "time without time zone";
    case HS_TYPE_TIMESTAMP: return f->tz ? "timestamp with time zone" : "timestamp without time zone";
    case HS_TYPE_STRING: return "text";
    case HS_TYPE_BINARY: return "bytea";
    case HS_TYPE_INTERVAL: return "interval";
    default: return hs_type_name(f->type);
    }
}

/* A ROWS or GROUPS offset: a non-negative integer constant. */
static hs_status rows_offset(planner *p, const json_t *node, const char *mode, bool start,
                             bool preceding, int64_t *out)
{
    int64_t x = 0;
    bool null = false;
    json_t *b;
    /* 2::bigint, '2' (an unknown literal PostgreSQL reads as bigint) */
    while (pl_is_kind(node, "TypeCast", &b) && pl_jget(b, "arg"))
        node = pl_jget(b, "arg");
    const char *sv = pl_is_kind(node, "A_Const", &b) ? pl_jstrv(pl_jget(b, "sval"), "sval") : NULL;
    const char *fv = pl_is_kind(node, "A_Const", &b) ? pl_jstrv(pl_jget(b, "fval"), "fval") : NULL;
    if (fv) {
        /* a numeric constant: to bigint as numeric_int8 rounds (half away
         * from zero) */
        double d = hs_strtod(fv, NULL);
        if (!(d > -9.2e18 && d < 9.2e18))
            return pl_fail(p, HS_INVALID, "22003", pl_node_loc(node), "bigint out of range");
        x = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
    } else if (sv) {
        char *end;
        errno = 0;
        x = strtoll(sv, &end, 10);
        while (isspace((unsigned char)*end))
            end++;
        if (end == sv || *end || errno)
            return pl_fail(p, HS_INVALID, "22P02", pl_node_loc(node),
                           "invalid input syntax for type bigint: \"%s\"", sv);
    } else {
        /* an expression without columns ($1 arrives as a constant):
         * evaluated once as bigint, as PostgreSQL does at executor start */
        HS_TRY(pl_int_const(p, node, mode, &x, &null));
    }
    if (null)
        return pl_fail(p, HS_INVALID, "22004", pl_node_loc(node), "frame %s offset must not be null",
                       start ? "starting" : "ending");
    if (x < 0)
        return pl_fail(p, HS_INVALID, "22013", pl_node_loc(node),
                       "frame %s offset must not be negative", start ? "starting" : "ending");
    *out = preceding ? -x : x;
    return HS_OK;
}

/* A column of the query (not inside a subquery): PostgreSQL's
 * checkExprIsVarFree for frame offsets. */
static pl_walk_res visit_column(const json_t *j, void *ctx)
{
    (void)ctx;
    if (json_object_get(j, "SubLink"))
        return PL_SKIP;
    return json_object_get(j, "ColumnRef") ? PL_STOP : PL_DESCEND;
}

typedef struct win_ctx {
    rel *cur;
    nmap *m;
    const layer *pre;
    const int *key_of_col;
} win_ctx;

/* extract(field FROM x) */
static json_t *extract_of(const char *field, json_t *x)
{
    return json_pack("{s:{s:[{s:{s:s}},{s:{s:s}}],s:[{s:{s:{s:s},s:i}},o],s:s,s:i}}", "FuncCall",
                     "funcname", "String", "sval", "pg_catalog", "String", "sval", "extract", "args",
                     "A_Const", "sval", "sval", field, "location", -1, x, "funcformat",
                     "COERCE_SQL_SYNTAX", "location", -1);
}

/* The time part of time or interval x in microseconds (bigint):
 * (hour * 3600 + minute * 60) * 1000000 + microseconds (of an interval
 * its months and days are not read, as in_range_time_interval ignores
 * them). Takes x. */
static json_t *time_micros(json_t *x)
{
    if (!x)
        return NULL;
    /* (json_pack and pl_mk_op take their "o" arguments, also on failure) */
    json_t *h = extract_of("hour", json_deep_copy(x)), *m = extract_of("minute", json_deep_copy(x));
    json_t *secs = pl_mk_op("+", pl_mk_op("*", h, pl_mk_int(3600)), pl_mk_op("*", m, pl_mk_int(60)));
    return pl_mk_op("+", pl_mk_op("*", secs, pl_mk_int(1000000)), extract_of("microseconds", x));
}

/* The key of a RANGE frame in type as (a time: its microseconds). Takes key. */
static json_t *as_key(json_t *key, const char *as, const hs_field *kf)
{
    if (kf->type == HS_TYPE_TIME32 || kf->type == HS_TYPE_TIME64)
        return time_micros(key);
    return cast_named(key, as);
}

/* A RANGE offset already cast to its type (interval for a time key: then
 * its time part in microseconds, in_range_time_interval's). Takes off. */
static json_t *as_off(json_t *off, const hs_field *kf)
{
    if (kf->type == HS_TYPE_TIME32 || kf->type == HS_TYPE_TIME64)
        return time_micros(off);
    return off;
}

/* RANGE offset bounds: the columns key -/+ offset (bound) in a type where
 * the arithmetic cannot overflow (integers as numeric, dates as
 * timestamps, reals as double precision), the key in that type, and the
 * offset for the executor's checks (PostgreSQL's in_range support:
 * integers with integer offsets, floats with double precision, numerics
 * with numerics, date/timestamp/timestamptz with intervals, intervals with
 * intervals; other pairs are 0A000 as there). */
static hs_status range_bounds(planner *p, const win_ctx *wc, const json_t *over, const json_t *ord,
                              long long v, xo_win *w)
{
    json_t *sb = pl_jget(json_array_get(ord, 0), "SortBy"), *key = pl_jget(sb, "node");
    bool desc, nf;
    HS_TRY(pl_sort_dir(sb, &desc, &nf));
    int kc;
    HS_TRY(pl_rel_add_expr_in(p, wc->cur, key, wc->m, wc->pre, wc->key_of_col, &kc));
    const hs_field *kf = &wc->cur->op->schema.children[kc];
    const char *as = NULL, *off_as = NULL;
    bool int_key = pl_is_int_type(kf->type);
    if (int_key)
        as = "numeric", off_as = "numeric";
    else if (kf->type == HS_TYPE_FLOAT32 || kf->type == HS_TYPE_FLOAT64)
        as = "float8", off_as = "float8";
    else if (kf->type == HS_TYPE_DECIMAL128)
        as = "numeric", off_as = "numeric";
    else if (kf->type == HS_TYPE_DATE32 || (kf->type == HS_TYPE_TIMESTAMP && !kf->tz))
        as = "timestamp", off_as = "interval";
    else if (kf->type == HS_TYPE_TIMESTAMP)
        as = "timestamptz", off_as = "interval";
    else if (kf->type == HS_TYPE_INTERVAL)
        as = "interval", off_as = "interval";
    else if (kf->type == HS_TYPE_TIME32 || kf->type == HS_TYPE_TIME64)
        as = "int8", off_as = "interval";   /* in microseconds: as_key / as_off */
    else
        return pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(key),
                       "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s",
                       pg_type_of(kf));
    w->range_desc = desc;
    w->range_key = w->range_lo = w->range_hi = w->range_off_lo = w->range_off_hi = -1;
    hs_field bound = {0};
    bool have_bound = false;
    hs_status st = HS_OK;
    for (int end = 0; end < 2 && st == HS_OK; end++) {
        long long prec = end ? FO_END_OFF_PREC : FO_START_OFF_PREC;
        long long foll = end ? FO_END_OFF_FOLL : FO_START_OFF_FOLL;
        if (!(v & (prec | foll)))
            continue;
        json_t *off = pl_jget(over, end ? "endOffset" : "startOffset");
        if (pl_walk(off, visit_column, NULL, 0)) {
            st = pl_fail(p, HS_INVALID, "42P10", pl_node_loc(off),
                         "argument of RANGE must not contain variables");
            break;
        }
        int oc;
        json_t *cb;
        bool unknown = pl_is_kind(off, "A_Const", &cb) && pl_jget(cb, "sval");
        st = pl_rel_add_expr_in(p, wc->cur, off, wc->m, wc->pre, wc->key_of_col, &oc);
        if (st != HS_OK)
            break;
        hs_type ot = wc->cur->op->schema.children[oc].type;
        bool ok = unknown || ot == HS_TYPE_NA;
        if (!ok && int_key)
            ok = pl_is_int_type(ot);
        else if (!ok && (kf->type == HS_TYPE_FLOAT32 || kf->type == HS_TYPE_FLOAT64))
            ok = pl_is_int_type(ot) || ot == HS_TYPE_DECIMAL128 || ot == HS_TYPE_FLOAT32 ||
                 ot == HS_TYPE_FLOAT64;
        else if (!ok && kf->type == HS_TYPE_DECIMAL128)
            ok = pl_is_int_type(ot) || ot == HS_TYPE_DECIMAL128;
        else if (!ok)
            ok = ot == HS_TYPE_INTERVAL;
        if (!ok) {
            st = pl_fail(p, HS_UNSUPPORTED, "0A000", pl_node_loc(off),
                         "RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s "
                         "and offset type %s", pg_type_of(kf),
                         pg_type_of(&wc->cur->op->schema.children[oc]));
            break;
        }
        /* the bound: "preceding" is toward the start of the ORDER BY */
        bool minus = (v & prec) ? !desc : desc;
        json_t *oq = as_off(cast_named(json_deep_copy(off), off_as), kf);
        json_t *kq = as_key(json_deep_copy(key), as, kf);
        json_t *bx = oq && kq ? pl_mk_op(minus ? "-" : "+", kq, oq) : NULL;
        if (bx && !strcmp(as, "float8")) {
            /* in_range_float8_float8: an infinite key and offset whose sum
             * is NaN (inf - inf) put every row but NaN in range: the bound
             * becomes the infinity that admits them */
            bool less = end != desc;
            json_t *nan = cast_named(json_pack("{s:{s:{s:s},s:i}}", "A_Const", "sval", "sval", "NaN",
                                               "location", -1), "float8");
            json_t *inf = cast_named(json_pack("{s:{s:{s:s},s:i}}", "A_Const", "sval", "sval",
                                               less ? "Infinity" : "-Infinity", "location", -1),
                                     "float8");
            json_t *kn = cast_named(json_deep_copy(key), as);
            json_t *c1 = nan ? pl_mk_op("=", json_deep_copy(bx), json_deep_copy(nan)) : NULL;
            json_t *c2 = kn && nan ? pl_mk_op("<>", kn, nan) : NULL;
            json_t *both[2] = {c1, c2};
            json_t *cond = c1 && c2 ? pl_mk_and(both, 2) : NULL;
            json_decref(c1);
            json_decref(c2);
            if (!c2)
                json_decref(nan);   /* not taken by pl_mk_op */
            json_t *cs = NULL;
            if (cond && inf)   /* (json_pack takes the "o" values, also when it fails) */
                cs = json_pack("{s:{s:[{s:{s:o,s:o,s:i}}],s:o,s:i}}", "CaseExpr", "args",
                               "CaseWhen", "expr", cond, "result", inf, "location", -1,
                               "defresult", bx, "location", -1);
            else {
                json_decref(cond);
                json_decref(inf);
                json_decref(bx);
            }
            bx = cs;
        }
        if (have_bound && bx) {   /* (pl_cast_json takes a reference of its own) */
            json_t *c = pl_cast_json(bx, &bound);
            json_decref(bx);
            bx = c;
        }
        json_t *ox = as_off(cast_named(json_deep_copy(off), off_as), kf);
        int bc = -1, occ = -1;
        st = bx && ox ? pl_rel_add_expr_in(p, wc->cur, bx, wc->m, wc->pre, wc->key_of_col, &bc)
                      : pl_nomem(p);
        if (st == HS_OK)
            st = pl_rel_add_expr_in(p, wc->cur, ox, wc->m, wc->pre, wc->key_of_col, &occ);
        json_decref(bx);
        json_decref(ox);
        if (st != HS_OK)
            break;
        if (!have_bound) {
            if (hs_field_copy(&wc->cur->op->schema.children[bc], &bound) != HS_OK) {
                st = pl_nomem(p);
                break;
            }
            have_bound = true;
        }
        if (end)
            w->range_hi = bc, w->range_off_hi = occ, w->hi = 1;
        else
            w->range_lo = bc, w->range_off_lo = occ, w->lo = 1;
    }
    if (st == HS_OK && have_bound) {
        json_t *k0 = as_key(json_deep_copy(key), as, kf);
        json_t *kx = k0 ? pl_cast_json(k0, &bound) : NULL;
        json_decref(k0);
        st = kx ? pl_rel_add_expr_in(p, wc->cur, kx, wc->m, wc->pre, wc->key_of_col, &w->range_key)
                : pl_nomem(p);
        json_decref(kx);
    }
    if (have_bound)
        hs_field_clear(&bound);
    return st;
}

/* The frame of a window function's OVER (PostgreSQL's frameOptions). */
static hs_status frame_of(planner *p, const win_ctx *wc, const json_t *over, int loc, xo_win *w)
{
    json_t *fo = pl_jget(over, "frameOptions");
    json_t *ord = pl_jget(over, "orderClause");
    long long v = json_is_integer(fo) ? json_integer_value(fo) : 0;
    w->frame = XO_FRAME_DEFAULT;
    w->range_key = w->range_lo = w->range_hi = w->range_off_lo = w->range_off_hi = -1;
    if (!(v & FO_NONDEFAULT))
        return HS_OK;
    w->exclude = v & FO_EXCL_CURRENT ? XO_EXCL_CURRENT : v & FO_EXCL_GROUP ? XO_EXCL_GROUP
               : v & FO_EXCL_TIES ? XO_EXCL_TIES : XO_EXCL_NONE;
    if ((v & FO_GROUPS) && json_array_size(ord) == 0)
        return pl_fail(p, HS_INVALID, "42P20", loc, "GROUPS mode requires an ORDER BY clause");
    bool offsets = v & (FO_START_OFF_PREC | FO_START_OFF_FOLL | FO_END_OFF_PREC | FO_END_OFF_FOLL);
    int64_t lo = v & FO_START_UNB_PREC ? INT64_MIN : 0, hi = v & FO_END_UNB_FOLL ? INT64_MAX : 0;
    if (v & FO_RANGE) {
        if (offsets && json_array_size(ord) != 1)
            return pl_fail(p, HS_INVALID, "42P20", loc,
                           "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column");
        w->lo = lo;
        w->hi = hi;
        if (offsets)
            HS_TRY(range_bounds(p, wc, over, ord, v, w));
        if (!offsets && w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == 0)
            w->frame = XO_FRAME_DEFAULT;
        else if (!offsets && w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == INT64_MAX)
            w->frame = XO_FRAME_WHOLE;
        else
            w->frame = XO_FRAME_RANGE;
        return HS_OK;
    }
    if (v & (FO_START_OFF_PREC | FO_START_OFF_FOLL))
        HS_TRY(rows_offset(p, pl_jget(over, "startOffset"), v & FO_GROUPS ? "GROUPS" : "ROWS", true,
                           v & FO_START_OFF_PREC, &lo));
    if (v & (FO_END_OFF_PREC | FO_END_OFF_FOLL))
        HS_TRY(rows_offset(p, pl_jget(over, "endOffset"), v & FO_GROUPS ? "GROUPS" : "ROWS", false,
                           v & FO_END_OFF_PREC, &hi));
    w->lo = lo;
    w->hi = hi;
    if (v & FO_GROUPS)
        w->frame = XO_FRAME_GROUPS;
    else if (w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == 0)
        w->frame = XO_FRAME_ROWS;
    else if (w->exclude == XO_EXCL_NONE && lo == INT64_MIN && hi == INT64_MAX)
        w->frame = XO_FRAME_WHOLE;
    else
        w->frame = XO_FRAME_ROWS_BETWEEN;
    return HS_OK;
}

static bool win_fn(const char *nm, json_t *fc, xo_win_fn *fn)
{
    static const struct { const char *n; xo_win_fn f; } t[] = {
        {"row_number", XO_WIN_ROW_NUMBER}, {"rank", XO_WIN_RANK}, {"dense_rank", XO_WIN_DENSE_RANK},
        {"count", XO_WIN_COUNT}, {"sum", XO_WIN_SUM}, {"avg", XO_WIN_AVG}, {"min", XO_WIN_MIN},
        {"max", XO_WIN_MAX}, {"lag", XO_WIN_LAG}, {"lead", XO_WIN_LEAD},
        {"first_value", XO_WIN_FIRST_VALUE}, {"last_value", XO_WIN_LAST_VALUE},
        {"ntile", XO_WIN_NTILE}, {"percent_rank", XO_WIN_PERCENT_RANK},
        {"cume_dist", XO_WIN_CUME_DIST}, {"nth_value", XO_WIN_NTH_VALUE},
    };
    for (size_t i = 0; nm && i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(nm, t[i].n)) {
            *fn = t[i].f;
            if (*fn == XO_WIN_COUNT && json_is_true(pl_jget(fc, "agg_star")))
                *fn = XO_WIN_COUNT_STAR;
            return true;
        }
    return false;
}

/* ---- named windows ----
 * WINDOW w AS (...) and OVER w / OVER (w ...) become inline definitions
 * before the calls are planned, by PostgreSQL's rules
 * (transformWindowDefinitions): a definition may name an earlier one and
 * then copies its PARTITION BY (it may not give its own), its ORDER BY
 * (it may give its own only where that one has none), and never its frame
 * (the named one may not have one: OVER w takes w's frame, OVER (w)
 * cannot). */

static const json_t *find_window(const json_t *defs, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(defs, i, d) {
        const char *nm = pl_jstrv(d, "name");
        if (nm && !strcmp(nm, name))
            return d;
    }
    return NULL;
}

/* *out: def with its refname resolved against defs (new reference). */
static hs_status merge_window(planner *p, const json_t *defs, const json_t *def, json_t **out)
{
    const char *ref = pl_jstrv(def, "refname");
    int loc = sq_loc(def);
    *out = NULL;
    if (!ref) {
        *out = json_deep_copy(def);
        return *out ? HS_OK : pl_nomem(p);
    }
    const json_t *rw = find_window(defs, ref);
    if (!rw)
        return pl_fail(p, HS_NOT_FOUND, "42704", loc, "window \"%s\" does not exist", ref);
    if (json_array_size(pl_jget(def, "partitionClause")))
        return pl_fail(p, HS_INVALID, "42P20", loc, "cannot override PARTITION BY clause of window \"%s\"", ref);
    if (json_array_size(pl_jget(def, "orderClause")) && json_array_size(pl_jget(rw, "orderClause")))
        return pl_fail(p, HS_INVALID, "42P20", loc, "cannot override ORDER BY clause of window \"%s\"", ref);
    json_t *rfo = pl_jget(rw, "frameOptions");
    if (json_is_integer(rfo) && json_integer_value(rfo) != FO_DEFAULTS)
        return pl_fail(p, HS_INVALID, "42P20", loc, "cannot copy window \"%s\" because it has a frame clause", ref);
    json_t *m = json_deep_copy(def);
    if (!m)
        return pl_nomem(p);
    json_object_del(m, "refname");
    json_t *pc = pl_jget(rw, "partitionClause"), *oc = pl_jget(rw, "orderClause");
    if (pc)
        json_object_set_new(m, "partitionClause", json_deep_copy(pc));
    if (oc && !json_array_size(pl_jget(def, "orderClause")))
        json_object_set_new(m, "orderClause", json_deep_copy(oc));
    *out = m;
    return HS_OK;
}

/* agg(x) FILTER (WHERE c) OVER w is agg(CASE WHEN c THEN x END) OVER w,
 * count(*) FILTER (WHERE c) is count(CASE WHEN c THEN 1 END): rewritten in
 * place (PostgreSQL allows FILTER only on aggregates used as window
 * functions). */
static hs_status window_filter(planner *p, json_t *fc)
{
    json_t *flt = pl_jget(fc, "agg_filter");
    if (!flt)
        return HS_OK;
    static const char *const aggs[] = {"count", "sum", "avg", "min", "max"};
    const char *nm = pl_func_name(fc);
    bool agg = false;
    for (size_t i = 0; nm && i < sizeof aggs / sizeof aggs[0]; i++)
        agg |= !strcmp(nm, aggs[i]);
    json_t *args = pl_jget(fc, "args");
    if (!agg || json_array_size(args) > 1 || (json_array_size(args) == 0 && strcmp(nm, "count")))
        return pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc),
                       "FILTER is not implemented for non-aggregate window functions");
    bool star = json_is_true(pl_jget(fc, "agg_star"));
    json_t *val = star ? pl_mk_int(1) : json_incref(json_array_get(args, 0));
    json_t *cs = val ? json_pack("{s:{s:[{s:{s:O,s:o,s:i}}],s:i}}", "CaseExpr", "args", "CaseWhen",
                                 "expr", flt, "result", val, "location", -1, "location", -1)
                     : NULL;
    if (!cs)
        return pl_nomem(p);
    json_object_set_new(fc, "args", json_pack("[o]", cs));
    json_object_del(fc, "agg_filter");
    json_object_del(fc, "agg_star");
    return HS_OK;
}

hs_status pl_resolve_windows(planner *p, const json_t *sel)
{
    json_t *wcl = pl_jget(sel, "windowClause"), *defs = json_array(), *calls = json_array();
    hs_status st = defs && calls ? HS_OK : pl_nomem(p);
    size_t i;
    json_t *it;
    json_array_foreach(wcl, i, it) {
        json_t *d = pl_jget(it, "WindowDef") ? pl_jget(it, "WindowDef") : it, *mg;
        const char *nm = pl_jstrv(d, "name");
        if (st != HS_OK)
            break;
        if (nm && find_window(defs, nm)) {
            st = pl_fail(p, HS_INVALID, "42P20", sq_loc(d), "window \"%s\" is already defined", nm);
            break;
        }
        if ((st = merge_window(p, defs, d, &mg)) == HS_OK)
            json_array_append_new(defs, mg);
    }
    if (st == HS_OK) {
        pl_collect_windows(pl_jget(sel, "targetList"), calls, 0);
        pl_collect_windows(pl_jget(sel, "sortClause"), calls, 0);
    }
    json_array_foreach(calls, i, it) {
        json_t *fc = pl_jget(it, "FuncCall"), *over = pl_jget(fc, "over"), *res = NULL;
        const char *nm = pl_jstrv(over, "name");
        if (st != HS_OK)
            break;
        if (nm) {
            const json_t *d = find_window(defs, nm);
            if (!d)
                st = pl_fail(p, HS_NOT_FOUND, "42704", sq_loc(over), "window \"%s\" does not exist", nm);
            else if (!(res = json_deep_copy(d)))
                st = pl_nomem(p);
        } else if (pl_jstrv(over, "refname")) {
            st = merge_window(p, defs, over, &res);
        }
        if (res) {
            json_object_del(res, "name");
            json_object_set_new(fc, "over", res);
        }
        if (st == HS_OK)
            st = window_filter(p, fc);
    }
    json_decref(defs);
    json_decref(calls);
    return st;
}

/* Computes the window functions of the select list and ORDER BY over cur
 * (one Window operator per distinct window), mapping each call to its
 * column. */
hs_status pl_apply_windows(planner *p, rel *cur, json_t *const *nodes, int n_nodes, nmap *m,
                               const layer *pre, const int *key_of_col)
{
    json_t *calls = json_array();
    if (!calls)
        return pl_nomem(p);
    for (int i = 0; i < n_nodes; i++)
        pl_collect_windows(nodes[i], calls, 0);
    /* calls computed before (those in the operands of x IN (subquery),
     * pl_apply_operand_windows) are not computed again */
    for (size_t i = json_array_size(calls); i-- > 0;)
        for (int k = 0; k < m->n; k++)
            if (pl_jeq(m->nodes[k], json_array_get(calls, i))) {
                json_array_remove(calls, i);
                break;
            }
    hs_status st = HS_OK;
    size_t n = json_array_size(calls);
    bool *done = hs_calloc(n + 1, sizeof *done);
    xo_win *fns = hs_calloc(n + 1, sizeof *fns);
    const json_t **which = hs_calloc(n + 1, sizeof *which);
    if (!done || !fns || !which)
        st = pl_nomem(p);
    for (size_t i = 0; i < n && st == HS_OK; i++) {
        if (done[i])
            continue;
        json_t *fc0 = pl_jget(json_array_get(calls, i), "FuncCall"), *over = pl_jget(fc0, "over");
        json_t *parts = pl_jget(over, "partitionClause"), *ord = pl_jget(over, "orderClause");
        int np = (int)json_array_size(parts), nk = (int)json_array_size(ord);
        int *pc = hs_calloc((size_t)np + 1, sizeof *pc);
        xo_sort_key *keys = hs_calloc((size_t)nk + 1, sizeof *keys);
        if (!pc || !keys)
            st = pl_nomem(p);
        for (int k = 0; k < np && st == HS_OK; k++)
            st = pl_rel_add_expr_in(p, cur, json_array_get(parts, (size_t)k), m, pre, key_of_col, &pc[k]);
        for (int k = 0; k < nk && st == HS_OK; k++) {
            json_t *sb = pl_jget(json_array_get(ord, (size_t)k), "SortBy");
            bool desc, nf;
            if (pl_sort_dir(sb, &desc, &nf) != HS_OK)
                st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(sb), "ORDER BY ... USING is not supported");
            else
                st = pl_rel_add_expr_in(p, cur, pl_jget(sb, "node"), m, pre, key_of_col, &keys[k].col);
            keys[k].desc = desc;
            keys[k].nulls_first = nf;
        }
        int nf_ = 0;
        for (size_t j = i; j < n && st == HS_OK; j++) {
            json_t *fc = pl_jget(json_array_get(calls, j), "FuncCall"), *ov = pl_jget(fc, "over");
            if (done[j] || !pl_jeq(pl_jget(ov, "partitionClause"), parts) || !pl_jeq(pl_jget(ov, "orderClause"), ord))
                continue;
            xo_win *w = &fns[nf_];
            memset(w, 0, sizeof *w);   /* the slot served the previous window's functions */
            const char *fname = pl_func_name(fc);
            json_t *args = pl_jget(fc, "args");
            size_t na = json_array_size(args);
            if (!win_fn(fname, fc, &w->fn) || json_is_true(pl_jget(fc, "agg_distinct")) ||
                pl_jget(fc, "agg_filter")) {
                st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "window function %s is not supported",
                          fname ? fname : "?");
                break;
            }
            win_ctx wc = {cur, m, pre, key_of_col};
            if ((st = frame_of(p, &wc, ov, sq_loc(fc), w)) != HS_OK)
                break;
            w->name = fname;
            bool needs_arg = w->fn != XO_WIN_ROW_NUMBER && w->fn != XO_WIN_RANK &&
                             w->fn != XO_WIN_DENSE_RANK && w->fn != XO_WIN_COUNT_STAR &&
                             w->fn != XO_WIN_NTILE && w->fn != XO_WIN_PERCENT_RANK &&
                             w->fn != XO_WIN_CUME_DIST;
            bool lagish = w->fn == XO_WIN_LAG || w->fn == XO_WIN_LEAD;
            size_t min_args = w->fn == XO_WIN_NTILE ? 1 : w->fn == XO_WIN_NTH_VALUE ? 2 : needs_arg ? 1 : 0;
            size_t max_args = lagish ? 3 : w->fn == XO_WIN_NTH_VALUE ? 2 : min_args;
            if (na < min_args || na > max_args) {
                st = pl_fail(p, HS_NOT_FOUND, "42883", sq_loc(fc), "function %s with %zu arguments is not supported",
                          fname, na);
                break;
            }
            if (needs_arg)
                st = pl_rel_add_expr_in(p, cur, json_array_get(args, 0), m, pre, key_of_col, &w->arg);
            if (st == HS_OK && needs_arg && w->fn >= XO_WIN_COUNT && w->fn <= XO_WIN_MAX)
                st = pl_pv_agg_check(p, fname, &cur->op->schema.children[w->arg], sq_loc(fc));
            if (st == HS_OK && (w->fn == XO_WIN_NTILE || w->fn == XO_WIN_NTH_VALUE)) {
                int64_t nb;
                bool null;
                st = pl_int_const(p, json_array_get(args, w->fn == XO_WIN_NTILE ? 0 : 1), fname, &nb, &null);
                if (st == HS_OK && (null || nb <= 0))
                    st = pl_fail(p, HS_INVALID, w->fn == XO_WIN_NTILE ? "22014" : "22016", sq_loc(fc),
                              "argument of %s must be greater than zero", fname);
                w->offset = nb;
            } else if (st == HS_OK && lagish && na == 3) {
                /* the default, of the argument's type */
                json_t *cd = pl_cast_json(json_array_get(args, 2), &cur->op->schema.children[w->arg]);
                st = cd ? pl_rel_add_expr_in(p, cur, cd, m, pre, key_of_col, &w->def_col) : pl_nomem(p);
                json_decref(cd);
                w->has_default = true;
            }
            if (st == HS_OK && lagish && na >= 2) {
                int64_t off;
                bool null;
                st = pl_int_const(p, json_array_get(args, 1), "lag/lead offset", &off, &null);
                if (st == HS_OK && !null && off == INT64_MIN)
                    st = pl_fail(p, HS_UNSUPPORTED, "0A000", sq_loc(fc), "lag/lead offset out of range");
                if (st == HS_OK && (null || off == 0)) {
                    /* offset 0 is the current row's value, a NULL offset
                     * NULL (window_lag_with_offset): no Window function */
                    int col = w->arg;
                    if (null) {
                        json_t *n0 = pl_mk_null();
                        json_t *nc = n0 ? pl_cast_json(n0, &cur->op->schema.children[w->arg]) : NULL;
                        st = nc ? pl_rel_add_expr_in(p, cur, nc, m, pre, key_of_col, &col) : pl_nomem(p);
                        json_decref(nc);
                        json_decref(n0);
                    }
                    if (st == HS_OK)
                        st = pl_nmap_add(p, m, json_array_get(calls, j), col);
                    done[j] = true;
                    if (st != HS_OK)
                        break;
                    continue;
                }
                if (st == HS_OK && off < 0) {   /* lag(x, -k) is lead(x, k) */
                    w->fn = w->fn == XO_WIN_LAG ? XO_WIN_LEAD : XO_WIN_LAG;
                    off = -off;
                }
                w->offset = off;
            }
            which[nf_++] = json_array_get(calls, j);
            done[j] = true;
        }
        if (st == HS_OK && nf_ > 0) {
            int base = cur->n;
            xo_op *op;
            st = xo_window(cur->op, np, pc, nk, keys, nf_, fns, &op, p->err);
            cur->op = st == HS_OK ? op : NULL;
            if (st == HS_OK) {
                qcol *nc = hs_realloc(cur->cols, (size_t)(base + nf_ + 1) * sizeof *nc);
                if (!nc)
                    st = pl_nomem(p);
                else
                    cur->cols = nc;
                for (int k = 0; k < nf_ && st == HS_OK; k++) {
                    cur->cols[base + k] = (qcol){NULL, hs_strdup(""), true};
                    cur->n++;
                    st = pl_nmap_add(p, m, which[k], base + k);
                }
            }
        }
        hs_free(pc);
        hs_free(keys);
    }
    hs_free(done);
    hs_free(fns);
    hs_free(which);
    json_decref(calls);
    return st;
}

/* Window calls in the operands of x op ANY / ALL (subquery) under nodes
 * (row_number() OVER w IN (SELECT ...)): computed over cur before the
 * subqueries are planned, so that the operand reads them as columns of m
 * (pl_apply_windows then skips them). */
static pl_walk_res visit_operand_windows(const json_t *j, void *arr)
{
    json_t *sl = json_object_get(j, "SubLink");
    if (!sl)
        return PL_DESCEND;
    json_t *x = json_object_get(sl, "testexpr");
    if (x)
        pl_collect_windows(x, arr, 0);
    return PL_SKIP;
}

hs_status pl_apply_operand_windows(planner *p, rel *cur, json_t *const *nodes, int n_nodes, nmap *m,
                                   const layer *pre, const int *key_of_col)
{
    json_t *calls = json_array();
    if (!calls)
        return pl_nomem(p);
    for (int i = 0; i < n_nodes; i++)
        pl_walk(nodes[i], visit_operand_windows, calls, 0);
    hs_status st = HS_OK;
    size_t n = json_array_size(calls);
    if (n > 0) {
        json_t **a = hs_calloc(n, sizeof *a);
        st = a ? HS_OK : pl_nomem(p);
        for (size_t i = 0; i < n && st == HS_OK; i++)
            a[i] = json_array_get(calls, i);
        /* subqueries in the windows' own arguments first, as for the others */
        if (st == HS_OK)
            st = pl_attach_scalars(p, cur, a, (int)n, m, pre != NULL);
        for (size_t i = 0; i < n && st == HS_OK; i++)
            st = pl_numeric_window_avgs(p, cur, a[i], m, pre, key_of_col, 0);
        if (st == HS_OK)
            st = pl_apply_windows(p, cur, a, (int)n, m, pre, key_of_col);
        hs_free(a);
    }
    json_decref(calls);
    return st;
}

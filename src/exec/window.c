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
 * ROWS BETWEEN frames with offsets slide instead (see compute_sliding).
 * Output: the rows in permutation order, child columns taken, the computed
 * columns sliced, in batches of XO_BATCH_ROWS.
 *
 * Spilling.  With PARTITION BY columns and a memory limit, before a batch
 * is appended the operator estimates what it would hold (the rows, their
 * columns doubling as they grow, the permutation, the sort's scratch and
 * the computed columns); when that could pass the limit, the rows so far
 * and the rest of the input go to XO_SPILL_PARTS partitions by a hash of
 * the partition columns (spill.c), so each window partition lies whole in
 * one of them, and each is then computed by a Window of its own over a
 * reader of its rows (one level deeper, up to XO_SPILL_MAX_LEVEL).  The
 * output is then sorted within each spill partition only.
 */
#include "exec/exec_int.h"
#include "base/hash.h"

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
    int64_t perm_acc;     /* the permutation's bytes, accounted */
    /* spilling (see the top) */
    int level;
    bool spilling;
    xo_spill_parts parts;
    int next_part;
    xo_op *sub;
    int64_t sub_spilled;
} win_op;

static hs_status win_make(xo_op *child, int n_part, const int *part, int n_keys,
                          const xo_sort_key *keys, int n_fns, const xo_win *fns, int level,
                          xo_op **out, hs_error *err);

static const char *win_name(xo_win_fn f)
{
    static const char *names[] = {"row_number", "rank", "dense_rank", "count", "count", "sum",
                                  "avg", "min", "max", "lag", "lead", "first_value", "last_value",
                                  "ntile", "percent_rank", "cume_dist", "nth_value"};
    return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "?";
}

static bool needs_arg(xo_win_fn f)
{
    return (f >= XO_WIN_COUNT && f <= XO_WIN_LAST_VALUE) || f == XO_WIN_NTH_VALUE;
}

/* The result is a row of the argument (taken by index; -1 = NULL). */
static bool picks_row(xo_win_fn f)
{
    return (f >= XO_WIN_MIN && f <= XO_WIN_LAST_VALUE) || f == XO_WIN_NTH_VALUE;
}

static bool same_keys(const win_op *w, const xo_sort_key *keys, int n, int64_t a, int64_t b)
{
    return xo_keys_cmp(keys, n, w->rows.b->cols, a, w->rows.b->cols, b) == 0;
}

static bool is_float(hs_type t)
{
    return t == HS_TYPE_FLOAT16 || t == HS_TYPE_FLOAT32 || t == HS_TYPE_FLOAT64;
}

/* ---- sums of intervals ----
 * PostgreSQL adds intervals part by part (months, days, microseconds;
 * interval_pl) and a window's moving frame subtracts them the same way
 * (interval_mi): the parts are summed wide here and checked when a value
 * is produced (22008 past int32 months/days or int64 microseconds). */

typedef struct iv_sum {
    int64_t months, days;
    __int128 micros;
} iv_sum;

static void iv_acc(iv_sum *a, const hs_column *c, int64_t r, int sign)
{
    hs_interval v;
    memcpy(&v, c->values.data + 16 * r, 16);
    a->months += sign * (int64_t)v.months;
    a->days += sign * (int64_t)v.days;
    a->micros += sign * (__int128)v.micros;
}

static hs_status iv_append(const iv_sum *a, hs_column *col, hs_error *err)
{
    if (a->months < INT32_MIN || a->months > INT32_MAX || a->days < INT32_MIN ||
        a->days > INT32_MAX || a->micros < INT64_MIN || a->micros > INT64_MAX)
        return hs_err_set(err, HS_INVALID, "interval out of range");
    hs_interval v = {(int64_t)a->micros, (int32_t)a->days, (int32_t)a->months};
    return hs_col_append_fixed(col, &v);
}

/* ---- ROWS BETWEEN lo AND hi: a sliding window ----
 * Both frame ends only move forward as the current row does, so the frame
 * is kept as a window [ws, we] that adds rows at the end and removes them
 * at the start: counts and sums add and subtract (integers and decimals
 * exactly in __int128, floats in long double), min/max keep a monotonic
 * deque of positions (the head is the answer), first/last_value read the
 * frame's ends. */

typedef struct slide {
    const win_op *w;
    const xo_win *f;
    const hs_column *arg;
    int64_t cstar, cnt;
    __int128 isum;
    long double fsum;
    iv_sum iv;           /* sum of intervals */
    int64_t *dq;         /* positions (min/max), size of the partition */
    int64_t dh, dt;      /* head, tail (exclusive) */
    hs_error *err;
} slide;

static bool worse_or_equal(slide *sl, int64_t kept, int64_t fresh)
{
    int r = xo_val_cmp(sl->arg, sl->w->perm[kept], sl->arg, sl->w->perm[fresh]);
    return sl->f->fn == XO_WIN_MIN ? r >= 0 : r <= 0;
}

static hs_status slide_add(slide *sl, int64_t k)
{
    sl->cstar++;
    if (!sl->arg)
        return HS_OK;
    int64_t r = sl->w->perm[k];
    if (sl->arg->type == HS_TYPE_NA || !hs_col_is_valid(sl->arg, r))
        return HS_OK;
    sl->cnt++;
    switch (sl->f->fn) {
    case XO_WIN_MIN: case XO_WIN_MAX:
        while (sl->dt > sl->dh && worse_or_equal(sl, sl->dq[sl->dt - 1], k))
            sl->dt--;
        sl->dq[sl->dt++] = k;
        return HS_OK;
    case XO_WIN_SUM: case XO_WIN_AVG:
        if (is_float(sl->arg->type)) {
            sl->fsum += xo_float_at(sl->arg, r);
        } else if (sl->arg->type == HS_TYPE_INTERVAL) {
            iv_acc(&sl->iv, sl->arg, r, 1);
        } else if (sl->arg->type == HS_TYPE_DECIMAL128) {
            __int128 v;
            memcpy(&v, sl->arg->values.data + 16 * r, 16);
            if (__builtin_add_overflow(sl->isum, v, &sl->isum))
                return hs_err_set(sl->err, HS_INVALID, "sum: numeric field overflow");
        } else {
            bool big;
            int64_t v = xo_int_at(sl->arg, r, &big);
            sl->isum += big ? (__int128)(uint64_t)v : (__int128)v;
        }
        return HS_OK;
    default:
        return HS_OK;
    }
}

static void slide_remove(slide *sl, int64_t k)
{
    sl->cstar--;
    if (!sl->arg)
        return;
    int64_t r = sl->w->perm[k];
    if (sl->arg->type == HS_TYPE_NA || !hs_col_is_valid(sl->arg, r))
        return;
    sl->cnt--;
    switch (sl->f->fn) {
    case XO_WIN_MIN: case XO_WIN_MAX:
        if (sl->dt > sl->dh && sl->dq[sl->dh] == k)
            sl->dh++;
        return;
    case XO_WIN_SUM: case XO_WIN_AVG:
        if (is_float(sl->arg->type)) {
            sl->fsum -= xo_float_at(sl->arg, r);
        } else if (sl->arg->type == HS_TYPE_INTERVAL) {
            iv_acc(&sl->iv, sl->arg, r, -1);
        } else if (sl->arg->type == HS_TYPE_DECIMAL128) {
            __int128 v;
            memcpy(&v, sl->arg->values.data + 16 * r, 16);
            sl->isum -= v;
        } else {
            bool big;
            int64_t v = xo_int_at(sl->arg, r, &big);
            sl->isum -= big ? (__int128)(uint64_t)v : (__int128)v;
        }
        return;
    default:
        return;
    }
}

/* Appends the value of the current frame to col (or sets *pick). */
static hs_status slide_value(slide *sl, const hs_field *of, int64_t fs, int64_t fe, hs_column *col,
                             int64_t *pick)
{
    const xo_win *f = sl->f;
    const int64_t *perm = sl->w->perm;
    switch (f->fn) {
    case XO_WIN_COUNT_STAR: return hs_col_append_fixed(col, &sl->cstar);
    case XO_WIN_COUNT: return hs_col_append_fixed(col, &sl->cnt);
    case XO_WIN_MIN: case XO_WIN_MAX:
        *pick = sl->dt > sl->dh ? perm[sl->dq[sl->dh]] : -1;
        return HS_OK;
    case XO_WIN_FIRST_VALUE: *pick = fs <= fe ? perm[fs] : -1; return HS_OK;
    case XO_WIN_LAST_VALUE: *pick = fs <= fe ? perm[fe] : -1; return HS_OK;
    case XO_WIN_NTH_VALUE:
        *pick = fs <= fe && fe - fs >= f->offset - 1 ? perm[fs + f->offset - 1] : -1;
        return HS_OK;
    default: break;
    }
    if (sl->cnt == 0)
        return hs_col_append_null(col);
    if (of->type == HS_TYPE_INTERVAL)
        return iv_append(&sl->iv, col, sl->err);
    if (f->fn == XO_WIN_AVG) {
        double v;
        if (is_float(sl->arg->type)) {
            v = (double)(sl->fsum / (long double)sl->cnt);
        } else {
            long double q = (long double)sl->isum / (long double)sl->cnt;
            for (int k = 0; sl->arg->type == HS_TYPE_DECIMAL128 &&
                            k < sl->w->rows.b->schema.children[f->arg].scale; k++)
                q /= 10;
            v = (double)q;
        }
        return hs_col_append_fixed(col, &v);
    }
    if (of->type == HS_TYPE_FLOAT64) {
        double v = (double)sl->fsum;
        return hs_col_append_fixed(col, &v);
    }
    if (of->type == HS_TYPE_INT64) {
        if (sl->isum > INT64_MAX || sl->isum < INT64_MIN)
            return hs_err_set(sl->err, HS_INVALID, "sum: bigint out of range");
        int64_t v = (int64_t)sl->isum;
        return hs_col_append_fixed(col, &v);
    }
    return hs_col_append_fixed(col, &sl->isum);
}

static hs_status compute_sliding(win_op *w, const xo_win *f, const hs_field *of,
                                 const uint8_t *pnew, hs_column *col, int64_t *pick, hs_error *err)
{
    int64_t n = w->n;
    slide sl = {.w = w, .f = f, .err = err,
                .arg = needs_arg(f->fn) ? w->rows.b->cols[f->arg] : NULL};
    sl.dq = hs_malloc((size_t)(n ? n : 1) * sizeof *sl.dq);
    if (!sl.dq)
        return hs_err_nomem(err, 0);
    hs_status st = HS_OK;
    int64_t ps = 0;
    while (ps < n && st == HS_OK) {
        int64_t pe = ps + 1;
        while (pe < n && !pnew[pe])
            pe++;
        sl.cstar = sl.cnt = 0;
        sl.isum = 0;
        sl.fsum = 0;
        sl.dh = sl.dt = 0;
        int64_t ws = ps, we = ps - 1;   /* rows [ws, we] are in the window */
        for (int64_t p = ps; p < pe && st == HS_OK; p++) {
            int64_t fs = f->lo == INT64_MIN || f->lo < ps - p ? ps : p + f->lo;
            int64_t fe = f->hi == INT64_MAX || f->hi > pe - 1 - p ? pe - 1 : p + f->hi;
            if (fs > pe - 1)
                fs = pe;
            while (we < fe && st == HS_OK) {
                we++;
                if (we >= ws)
                    st = slide_add(&sl, we);
            }
            while (ws < fs) {
                if (ws <= we)
                    slide_remove(&sl, ws);
                ws++;
            }
            if (we < ws - 1)
                we = ws - 1;
            if (st == HS_OK)
                st = slide_value(&sl, of, fs, fe, col, pick ? &pick[p] : NULL);
        }
        ps = pe;
    }
    hs_free(sl.dq);
    if (st == HS_NOMEM)
        (void)hs_err_nomem(err, 0);
    return st;
}

/* ---- RANGE / GROUPS frames and EXCLUDE: frames as segments ----
 * Here a row's frame is [fs, fe] (positions; empty when fs > fe) less its
 * exclusion, so at most three segments of the partition.  The functions
 * read segments in O(1) or O(log m): counts and exact sums (integers,
 * decimals, intervals) by differences of prefix sums over the partition,
 * float sums and min/max by a segment tree (a float sum of a segment
 * never mixes in values from outside it, so an Inf or a 1e300 elsewhere in
 * the partition cannot spoil it), first/last/nth_value by walking the
 * segments.  RANGE offset bounds binary-search the sorted key, GROUPS
 * bounds index the partition's peer groups.  Everything is O(m log m) per
 * partition of m rows, whatever the frame. */

typedef struct fseg {
    int64_t a, b;   /* inclusive positions */
} fseg;

typedef struct framer {
    const win_op *w;
    const xo_win *f;
    const hs_column *arg, *rk, *rlo, *rhi;
    int64_t ps, pe, m;
    int64_t *cnt;       /* m + 1 prefix counts of non-NULL arguments */
    __int128 *isum;     /* m + 1 prefix sums (integers, decimals) */
    iv_sum *iv;         /* m + 1 prefix sums (intervals) */
    long double *ft;    /* 2m: float sums, a segment tree */
    int64_t *mt;        /* 2m: min/max positions (-1 = none), a segment tree */
    int64_t *gid;       /* n: peer group of each position (within its partition) */
    int64_t *gst;       /* n + 1: start of each peer group, then pe */
    int64_t ng;         /* peer groups in the partition */
    int64_t lo_at, lo_prev, hi_at, hi_prev;   /* range_next's cursors */
    hs_error *err;
} framer;

static int64_t better(const framer *fr, int64_t a, int64_t b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    int c = xo_val_cmp(fr->arg, fr->w->perm[a], fr->arg, fr->w->perm[b]);
    return (fr->f->fn == XO_WIN_MIN ? c <= 0 : c >= 0) ? a : b;
}

/* Builds the prefix sums and trees of partition [ps, pe) that f needs. */
static hs_status framer_fill(framer *fr)
{
    const int64_t *perm = fr->w->perm;
    int64_t ps = fr->ps, m = fr->m;
    xo_win_fn fn = fr->f->fn;
    const hs_column *a = fr->arg;
    bool na = !a || a->type == HS_TYPE_NA;
    if (fr->cnt) {
        fr->cnt[0] = 0;
        for (int64_t i = 0; i < m; i++)
            fr->cnt[i + 1] = fr->cnt[i] + (!na && hs_col_is_valid(a, perm[ps + i]));
    }
    if (fr->isum) {
        fr->isum[0] = 0;
        for (int64_t i = 0; i < m; i++) {
            int64_t r = perm[ps + i];
            __int128 v = 0;
            if (!na && hs_col_is_valid(a, r)) {
                if (a->type == HS_TYPE_DECIMAL128) {
                    memcpy(&v, a->values.data + 16 * r, 16);
                } else {
                    bool big;
                    int64_t x = xo_int_at(a, r, &big);
                    v = big ? (__int128)(uint64_t)x : (__int128)x;
                }
            }
            if (__builtin_add_overflow(fr->isum[i], v, &fr->isum[i + 1]))
                return hs_err_set(fr->err, HS_INVALID, "sum: numeric field overflow");
        }
    }
    if (fr->iv) {
        memset(&fr->iv[0], 0, sizeof fr->iv[0]);
        for (int64_t i = 0; i < m; i++) {
            fr->iv[i + 1] = fr->iv[i];
            if (!na && hs_col_is_valid(a, perm[ps + i]))
                iv_acc(&fr->iv[i + 1], a, perm[ps + i], 1);
        }
    }
    if (fr->ft) {
        for (int64_t i = 0; i < m; i++) {
            int64_t r = perm[ps + i];
            fr->ft[m + i] = !na && hs_col_is_valid(a, r) ? (long double)xo_float_at(a, r) : 0;
        }
        for (int64_t i = m - 1; i > 0; i--)
            fr->ft[i] = fr->ft[2 * i] + fr->ft[2 * i + 1];
    }
    if (fr->mt && (fn == XO_WIN_MIN || fn == XO_WIN_MAX)) {
        for (int64_t i = 0; i < m; i++)
            fr->mt[m + i] = !na && hs_col_is_valid(a, perm[ps + i]) ? ps + i : -1;
        for (int64_t i = m - 1; i > 0; i--)
            fr->mt[i] = better(fr, fr->mt[2 * i], fr->mt[2 * i + 1]);
    }
    return HS_OK;
}

static long double ft_query(const framer *fr, int64_t l, int64_t r)
{
    long double s = 0;
    for (l += fr->m - fr->ps, r += fr->m - fr->ps + 1; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            s += fr->ft[l++];
        if (r & 1)
            s += fr->ft[--r];
    }
    return s;
}

static int64_t mt_query(const framer *fr, int64_t l, int64_t r)
{
    int64_t best = -1;
    for (l += fr->m - fr->ps, r += fr->m - fr->ps + 1; l < r; l >>= 1, r >>= 1) {
        if (l & 1)
            best = better(fr, best, fr->mt[l++]);
        if (r & 1)
            best = better(fr, best, fr->mt[--r]);
    }
    return best;
}

/* RANGE offset bounds: the first position of [lo, hi) whose key is not
 * before (start) / the last not after (end) bound row b of column bc. */
static int64_t range_search(const framer *fr, const hs_column *bc, int64_t b, bool start,
                            int64_t lo, int64_t hi)
{
    const int64_t *perm = fr->w->perm;
    bool desc = fr->f->range_desc;
    /* the first position where pred turns true: start: key >= bound
     * (DESC <=); end: key > bound (DESC <), minus one */
    int64_t l = lo, h = hi;
    while (l < h) {
        int64_t mid = l + (h - l) / 2;
        int c = xo_val_cmp(fr->rk, perm[mid], bc, perm[b]);
        if (desc)
            c = -c;
        if (start ? c >= 0 : c > 0)
            h = mid;
        else
            l = mid + 1;
    }
    return start ? l : l - 1;
}

/* range_search, walking forward from the previous row's answer (*at, for
 * bound row *prev) while the bounds only grow in the ORDER BY direction, as
 * they do for a sorted key: O(m) comparisons per partition, not
 * O(m log m); a bound that went back falls back to the binary search. */
static int64_t range_next(const framer *fr, const hs_column *bc, int64_t b, bool start,
                          int64_t lo, int64_t hi, int64_t *at, int64_t *prev)
{
    const int64_t *perm = fr->w->perm;
    bool desc = fr->f->range_desc;
    int c = *prev >= 0 ? xo_val_cmp(bc, perm[b], bc, perm[*prev]) : -1;
    if ((desc ? -c : c) < 0) {
        *at = range_search(fr, bc, b, start, lo, hi);
    } else {
        int64_t q = start ? *at : *at + 1;
        for (; q < hi; q++) {
            int k = xo_val_cmp(fr->rk, perm[q], bc, perm[b]);
            if (desc)
                k = -k;
            if (start ? k >= 0 : k > 0)
                break;
        }
        *at = start ? q : q - 1;
    }
    *prev = b;
    return *at;
}

/* The frame [*fs, *fe] of position p; [nns, nne) holds the partition's
 * non-NULL RANGE keys. */
static void frame_bounds(framer *fr, int64_t p, int64_t nns, int64_t nne, int64_t *fs,
                         int64_t *fe)
{
    const xo_win *f = fr->f;
    int64_t ps = fr->ps, pe = fr->pe, g = fr->gid[p], ng = fr->ng;
    const int64_t *gst = fr->gst;
    int64_t gs = gst[g], ge = gst[g + 1] - 1;
    int64_t lo = f->lo, hi = f->hi;
    if (f->frame == XO_FRAME_ROWS_BETWEEN) {
        *fs = lo == INT64_MIN || lo < ps - p ? ps : lo > pe - 1 - p ? pe : p + lo;
        *fe = hi == INT64_MAX || hi > pe - 1 - p ? pe - 1 : hi < ps - p ? ps - 1 : p + hi;
        return;
    }
    if (f->frame == XO_FRAME_GROUPS) {
        int64_t gi = g;
        *fs = lo == INT64_MIN || lo < -gi ? ps : lo > ng - 1 - gi ? pe : gst[gi + lo];
        *fe = hi == INT64_MAX || hi > ng - 1 - gi ? pe - 1 : hi < -gi ? ps - 1 : gst[gi + hi + 1] - 1;
        return;
    }
    /* RANGE */
    bool null_key = fr->rk && !hs_col_is_valid(fr->rk, fr->w->perm[p]);
    if (lo == INT64_MIN)
        *fs = ps;
    else if (lo == 0 || null_key)
        *fs = gs;
    else
        *fs = range_next(fr, fr->rlo, p, true, nns, nne, &fr->lo_at, &fr->lo_prev);
    if (hi == INT64_MAX)
        *fe = pe - 1;
    else if (hi == 0 || null_key)
        *fe = ge;
    else
        *fe = range_next(fr, fr->rhi, p, false, nns, nne, &fr->hi_at, &fr->hi_prev);
}

/* The segments of p's frame less its exclusion; returns how many. */
static int frame_segs(const framer *fr, int64_t p, int64_t fs, int64_t fe, fseg *sg)
{
    int k = 0;
    if (fs > fe)
        return 0;
    int64_t g = fr->gid[p], xa, xb;
    switch (fr->f->exclude) {
    case XO_EXCL_NONE: sg[0] = (fseg){fs, fe}; return 1;
    case XO_EXCL_CURRENT: xa = xb = p; break;
    default: xa = fr->gst[g]; xb = fr->gst[g + 1] - 1; break;
    }
    int64_t b1 = fe < xa - 1 ? fe : xa - 1;
    if (fs <= b1)
        sg[k++] = (fseg){fs, b1};
    if (fr->f->exclude == XO_EXCL_TIES && fs <= p && p <= fe)
        sg[k++] = (fseg){p, p};
    int64_t a2 = fs > xb + 1 ? fs : xb + 1;
    if (a2 <= fe)
        sg[k++] = (fseg){a2, fe};
    return k;
}

/* The value of f over segments sg into col (or *pick). */
static hs_status frame_value(framer *fr, const hs_field *of, const fseg *sg, int ns,
                             hs_column *col, int64_t *pick)
{
    const xo_win *f = fr->f;
    const int64_t *perm = fr->w->perm;
    int64_t rows = 0, ps = fr->ps;
    for (int i = 0; i < ns; i++)
        rows += sg[i].b - sg[i].a + 1;
    switch (f->fn) {
    case XO_WIN_COUNT_STAR: return hs_col_append_fixed(col, &rows);
    case XO_WIN_FIRST_VALUE: *pick = ns ? perm[sg[0].a] : -1; return HS_OK;
    case XO_WIN_LAST_VALUE: *pick = ns ? perm[sg[ns - 1].b] : -1; return HS_OK;
    case XO_WIN_NTH_VALUE: {
        int64_t k = f->offset - 1;
        *pick = -1;
        for (int i = 0; i < ns; i++) {
            if (k <= sg[i].b - sg[i].a) {
                *pick = perm[sg[i].a + k];
                break;
            }
            k -= sg[i].b - sg[i].a + 1;
        }
        return HS_OK;
    }
    case XO_WIN_MIN: case XO_WIN_MAX: {
        int64_t best = -1;
        for (int i = 0; i < ns; i++)
            best = better(fr, best, mt_query(fr, sg[i].a, sg[i].b));
        *pick = best < 0 ? -1 : perm[best];
        return HS_OK;
    }
    default: break;
    }
    slide sl = {.w = fr->w, .f = f, .arg = fr->arg, .err = fr->err};
    for (int i = 0; i < ns; i++) {
        int64_t a = sg[i].a - ps, b = sg[i].b - ps + 1;
        sl.cnt += fr->cnt[b] - fr->cnt[a];
        if (fr->isum)
            sl.isum += fr->isum[b] - fr->isum[a];
        if (fr->iv) {
            sl.iv.months += fr->iv[b].months - fr->iv[a].months;
            sl.iv.days += fr->iv[b].days - fr->iv[a].days;
            sl.iv.micros += fr->iv[b].micros - fr->iv[a].micros;
        }
        if (fr->ft)
            sl.fsum += ft_query(fr, sg[i].a, sg[i].b);
    }
    return slide_value(&sl, of, 0, -1, col, pick);
}

/* The offset of a RANGE bound must be neither NULL (22004) nor negative
 * or NaN (22013), checked on its first row as PostgreSQL checks it when a
 * partition starts. */
static hs_status check_offset(const win_op *w, int c, bool start, hs_error *err)
{
    if (c < 0 || w->n == 0)
        return HS_OK;
    const hs_column *o = w->rows.b->cols[c];
    if (o->type == HS_TYPE_NA || !hs_col_is_valid(o, 0))
        return hs_err_set(err, HS_INVALID, "frame %s offset must not be null",
                          start ? "starting" : "ending");
    bool neg;
    if (is_float(o->type)) {
        double v = xo_float_at(o, 0);
        neg = v != v || v < 0;
    } else if (o->type == HS_TYPE_INTERVAL) {
        hs_interval v;
        memcpy(&v, o->values.data, 16);
        __int128 span = ((__int128)v.months * 30 + v.days) * 86400000000LL + v.micros;
        neg = span < 0;
    } else if (o->type == HS_TYPE_DECIMAL128) {
        __int128 v;
        memcpy(&v, o->values.data, 16);
        neg = v < 0;
    } else {
        bool big;
        neg = xo_int_at(o, 0, &big) < 0 && !big;
    }
    if (neg)
        return hs_err_set(err, HS_INVALID, "invalid preceding or following size in window function");
    return HS_OK;
}

static hs_status compute_frames(win_op *w, const xo_win *f, const hs_field *of,
                                const uint8_t *pnew, const uint8_t *peer_new, hs_column *col,
                                int64_t *pick, hs_error *err)
{
    int64_t n = w->n;
    hs_column *const *cols = w->rows.b->cols;
    framer fr = {.w = w, .f = f, .err = err,
                 .arg = needs_arg(f->fn) ? cols[f->arg] : NULL,
                 .rk = f->frame == XO_FRAME_RANGE && f->range_key >= 0 ? cols[f->range_key] : NULL,
                 .rlo = f->frame == XO_FRAME_RANGE && f->range_lo >= 0 ? cols[f->range_lo] : NULL,
                 .rhi = f->frame == XO_FRAME_RANGE && f->range_hi >= 0 ? cols[f->range_hi] : NULL};
    if (f->frame == XO_FRAME_RANGE) {
        HS_TRY(check_offset(w, f->range_off_lo, true, err));
        HS_TRY(check_offset(w, f->range_off_hi, false, err));
        if ((f->lo == 1 && !fr.rlo) || (f->hi == 1 && !fr.rhi) || ((f->lo == 1 || f->hi == 1) && !fr.rk))
            return hs_err_set(err, HS_INVALID, "Window: RANGE offset frame without its columns");
    }
    size_t n1 = (size_t)n + 1;
    bool sums = f->fn == XO_WIN_SUM || f->fn == XO_WIN_AVG, fl = sums && is_float(fr.arg->type);
    bool ivl = sums && fr.arg->type == HS_TYPE_INTERVAL;
    bool mm = f->fn == XO_WIN_MIN || f->fn == XO_WIN_MAX;
    /* the arrays below, accounted while they live */
    int64_t acc = (int64_t)n1 * (16 + (f->fn == XO_WIN_COUNT || sums ? 8 : 0) +
                                 (sums && !fl && !ivl ? 16 : 0) + (ivl ? 32 : 0) +
                                 (fl ? 2 * (int64_t)sizeof(long double) : 0) + (mm ? 16 : 0));
    HS_TRY(xo_mem_reserve(w->op.ctx, acc, w->op.name, err));
    fr.gid = hs_malloc(n1 * sizeof *fr.gid);
    fr.gst = hs_malloc((n1 + 1) * sizeof *fr.gst);
    if (f->fn == XO_WIN_COUNT || sums)
        fr.cnt = hs_malloc(n1 * sizeof *fr.cnt);
    if (sums && !fl && !ivl)
        fr.isum = hs_malloc(n1 * sizeof *fr.isum);
    if (ivl)
        fr.iv = hs_malloc(n1 * sizeof *fr.iv);
    if (fl)
        fr.ft = hs_malloc(2 * n1 * sizeof *fr.ft);
    if (mm)
        fr.mt = hs_malloc(2 * n1 * sizeof *fr.mt);
    hs_status st = HS_OK;
    if (!fr.gid || !fr.gst || ((f->fn == XO_WIN_COUNT || sums) && !fr.cnt) ||
        (sums && !fl && !ivl && !fr.isum) || (ivl && !fr.iv) || (fl && !fr.ft) ||
        ((f->fn == XO_WIN_MIN || f->fn == XO_WIN_MAX) && !fr.mt))
        st = hs_err_nomem(err, 0);
    int64_t ps = 0;
    while (ps < n && st == HS_OK) {
        int64_t pe = ps + 1;
        while (pe < n && !pnew[pe])
            pe++;
        fr.ps = ps;
        fr.pe = pe;
        fr.m = pe - ps;
        /* peer groups: gst[0..ng) their starts, then pe (relative to 0,
         * group ids of this partition only) */
        int64_t ng = 0;
        for (int64_t p = ps; p < pe; p++) {
            if (p == ps || peer_new[p])
                fr.gst[ng++] = p;
            fr.gid[p] = ng - 1;
        }
        fr.gst[ng] = pe;
        fr.ng = ng;
        /* the non-NULL keys of a RANGE offset frame: [nns, nne) */
        int64_t nns = ps, nne = pe;
        if (fr.rk) {
            while (nns < pe && !hs_col_is_valid(fr.rk, w->perm[nns]))
                nns++;
            if (nns > ps)
                nne = pe;   /* NULLS FIRST: the NULLs lead */
            else
                while (nne > ps && !hs_col_is_valid(fr.rk, w->perm[nne - 1]))
                    nne--;
        }
        fr.lo_prev = fr.hi_prev = -1;
        fr.lo_at = nns;
        fr.hi_at = nns - 1;
        st = framer_fill(&fr);
        for (int64_t p = ps; p < pe && st == HS_OK; p++) {
            int64_t fs, fe;
            fseg sg[3];
            frame_bounds(&fr, p, nns, nne, &fs, &fe);
            int ns = frame_segs(&fr, p, fs, fe, sg);
            st = frame_value(&fr, of, sg, ns, col, pick ? &pick[p] : NULL);
        }
        ps = pe;
    }
    hs_free(fr.gid);
    hs_free(fr.gst);
    hs_free(fr.cnt);
    hs_free(fr.isum);
    hs_free(fr.iv);
    hs_free(fr.ft);
    hs_free(fr.mt);
    xo_mem_release(w->op.ctx, acc);
    if (st == HS_NOMEM)
        (void)hs_err_nomem(err, 0);
    return st;
}

/* Computes function f into *out (n rows in permutation order). */
static hs_status compute(win_op *w, const xo_win *f, const hs_field *of, const uint8_t *pnew,
                         const uint8_t *peer_new, hs_column **out, hs_error *err)
{
    int64_t n = w->n;
    const int64_t *perm = w->perm;
    hs_column *arg = needs_arg(f->fn) ? w->rows.b->cols[f->arg] : NULL;
    bool picks = picks_row(f->fn);
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
    bool sliding = f->frame == XO_FRAME_ROWS_BETWEEN &&
                   ((f->fn >= XO_WIN_COUNT_STAR && f->fn <= XO_WIN_MAX) ||
                    f->fn == XO_WIN_FIRST_VALUE || f->fn == XO_WIN_LAST_VALUE ||
                    f->fn == XO_WIN_NTH_VALUE);
    bool reads_frame = (f->fn >= XO_WIN_COUNT_STAR && f->fn <= XO_WIN_MAX) ||
                       f->fn == XO_WIN_FIRST_VALUE || f->fn == XO_WIN_LAST_VALUE ||
                       f->fn == XO_WIN_NTH_VALUE;
    if (reads_frame && (f->exclude != XO_EXCL_NONE || f->frame == XO_FRAME_GROUPS ||
                        f->frame == XO_FRAME_RANGE ||
                        (f->frame == XO_FRAME_ROWS_BETWEEN && f->lo > f->hi))) {
        st = compute_frames(w, f, of, pnew, peer_new, col, pick, err);
        ps = n;
    } else if (sliding) {
        st = compute_sliding(w, f, of, pnew, col, pick, err);
        ps = n;
    }
    while (ps < n && st == HS_OK) {
        int64_t pe = ps + 1;
        while (pe < n && !pnew[pe])
            pe++;
        /* running state */
        int64_t consumed = ps, cnt = 0, best = -1, rank = 0, dense = 0;
        __int128 isum = 0;
        double fsum = 0;
        iv_sum iv = {0};
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
            case XO_WIN_NTH_VALUE:
                pick[p] = fend - ps >= f->offset - 1 ? perm[ps + f->offset - 1] : -1;
                continue;
            case XO_WIN_NTILE: {
                int64_t rows = pe - ps, q = p - ps, nb = f->offset;
                int64_t size = rows / nb, rem = rows % nb, v;
                if (q < rem * (size + 1))
                    v = q / (size + 1) + 1;
                else
                    v = (q - rem * (size + 1)) / size + rem + 1;
                st = hs_col_append_fixed(col, &v);
                continue;
            }
            case XO_WIN_PERCENT_RANK: case XO_WIN_CUME_DIST: {
                if (p == ps || peer_new[p])
                    rank = p - ps + 1;
                int64_t last = p;   /* the current row's last peer */
                while (w->n_keys > 0 && last + 1 < pe && !peer_new[last + 1])
                    last++;
                if (w->n_keys == 0)
                    last = pe - 1;
                double rows = (double)(pe - ps), v;
                if (f->fn == XO_WIN_CUME_DIST)
                    v = (double)(last - ps + 1) / rows;
                else
                    v = pe - ps > 1 ? (double)(rank - 1) / (rows - 1) : 0;
                st = hs_col_append_fixed(col, &v);
                continue;
            }
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
                } else if (arg->type == HS_TYPE_INTERVAL) {
                    iv_acc(&iv, arg, r, 1);
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
            if (of->type == HS_TYPE_INTERVAL) {
                st = iv_append(&iv, col, err);
            } else if (f->fn == XO_WIN_AVG) {
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
    if (st == HS_OK && picks && f->has_default &&
        (f->fn == XO_WIN_LAG || f->fn == XO_WIN_LEAD)) {
        /* rows outside the partition read the default column of the current
         * row: take from arg ++ default (a combined copy) */
        hs_column *both = NULL;
        st = hs_col_slice(arg, 0, arg->length, &both, err);
        if (st == HS_OK)
            st = hs_col_append_column(both, w->rows.b->cols[f->def_col], err);
        for (int64_t p = 0; st == HS_OK && p < n; p++)
            if (pick[p] < 0)
                pick[p] = arg->length + perm[p];
        if (st == HS_OK)
            st = hs_col_take_nullable(both, pick, n, out, err);
        hs_col_free(both);
    } else if (st == HS_OK && picks)
        st = hs_col_take_nullable(arg, pick, n, out, err);
    else if (st == HS_OK)
        *out = col, col = NULL;
    if (st == HS_NOMEM)
        (void)hs_err_nomem(err, 0);
    hs_free(pick);
    hs_col_free(col);
    return st;
}

/* ---- spilling (see the top) ---- */

/* Bytes a row costs beyond its values: the permutation, the partition and
 * peer flags, the sort's scratch and the computed values. */
static int64_t row_overhead(const win_op *w)
{
    return 8 + 2 + 88 + 24 * (int64_t)w->n_fns;
}

static bool win_should_spill(const win_op *w, const hs_batch *b)
{
    const xo_ctx *ctx = w->op.ctx;
    if (!ctx || ctx->mem_limit <= 0 || w->n_part == 0 || w->level >= XO_SPILL_MAX_LEVEL)
        return false;
    int64_t bb = xo_batch_bytes(b), grow = bb > w->rows.bytes ? bb : w->rows.bytes;
    int64_t rows = xo_rows_count(&w->rows) + b->n_rows;
    return xo_mem_used(ctx) + grow + rows * row_overhead(w) > ctx->mem_limit;
}

/* Writes b's rows to their partitions (a hash of the partition columns). */
static hs_status spill_rows(win_op *w, const hs_batch *b, hs_error *err)
{
    int64_t n = b->n_rows;
    uint8_t *part = hs_malloc((size_t)(n ? n : 1));
    hs_buf kb = {0};
    hs_status st = part ? HS_OK : hs_err_nomem(err, (size_t)n);
    uint64_t seed = xo_spill_seed(w->level);
    for (int64_t i = 0; i < n && st == HS_OK; i++) {
        hs_buf_reset(&kb);
        for (int c = 0; c < w->n_part && st == HS_OK; c++)
            if (xo_key_append(&kb, b->cols[w->sort[c].col], i) != HS_OK)
                st = hs_err_nomem(err, 0);
        part[i] = (uint8_t)(hs_xxh64(kb.data, kb.len, seed) % XO_SPILL_PARTS);
    }
    if (st == HS_OK)
        st = xo_spill_parts_write(w->op.ctx, &w->parts, b, part, err);
    hs_free(part);
    hs_buf_free(&kb);
    return st;
}

/* Turns to partitions: the rows so far (freed), b and the rest of the
 * input. */
static hs_status spill_all(win_op *w, const hs_batch *b, hs_error *err)
{
    xo_op *op = &w->op;
    w->spilling = true;
    int64_t n = xo_rows_count(&w->rows);
    for (int64_t at = 0; at < n; at += XO_BATCH_ROWS) {
        hs_batch *t;
        HS_TRY(xo_batch_rows(w->rows.b, at, n - at < XO_BATCH_ROWS ? n - at : XO_BATCH_ROWS, &t,
                             err));
        hs_status st = spill_rows(w, t, err);
        hs_batch_free(t);
        HS_TRY(st);
    }
    xo_rows_free(&w->rows, op->ctx);
    HS_TRY(spill_rows(w, b, err));
    for (;;) {
        hs_batch *t;
        HS_TRY(xo_next(op->children[0], &t, err));
        if (!t)
            return HS_OK;
        hs_status st = spill_rows(w, t, err);
        hs_batch_free(t);
        HS_TRY(st);
    }
}

/* After spilling: each partition by a Window of its own. */
static hs_status next_spilled(win_op *w, hs_batch **out, hs_error *err)
{
    xo_op *op = &w->op;
    for (;;) {
        if (w->sub) {
            HS_TRY(xo_next(w->sub, out, err));
            xo_op_held(op, w->sub->mem_peak);
            if (*out)
                return HS_OK;
            win_op *sw = (win_op *)w->sub;
            w->sub_spilled += sw->parts.total + sw->sub_spilled;
            xo_free(w->sub);
            w->sub = NULL;
        }
        if (w->next_part >= XO_SPILL_PARTS) {
            xo_spill_parts_free(&w->parts);
            return HS_OK;
        }
        int p = w->next_part++;
        if (!w->parts.rows[p])
            continue;
        xo_op *r;
        HS_TRY(xo_spill_reader(op->ctx, &w->parts.sp, &op->children[0]->schema,
                               &w->parts.offs[p], &r, err));
        int *pc = hs_malloc((size_t)w->n_part * sizeof *pc);
        if (!pc) {
            xo_free(r);
            return hs_err_nomem(err, 0);
        }
        for (int i = 0; i < w->n_part; i++)
            pc[i] = w->sort[i].col;
        hs_status st = win_make(r, w->n_part, pc, w->n_keys, w->sort + w->n_part, w->n_fns,
                                w->fns, w->level + 1, &w->sub, err);
        hs_free(pc);
        HS_TRY(st);
    }
}

static hs_status win_extra(const xo_op *op, hs_buf *out, hs_error *err)
{
    const win_op *w = (const win_op *)op;
    if (!w->spilling)
        return HS_OK;
    if (hs_buf_printf(out, "spilled: %lld rows to %d partitions (%lld bytes), %lld rows again "
                      "in deeper levels", (long long)w->parts.total, XO_SPILL_PARTS,
                      (long long)w->parts.sp.written, (long long)w->sub_spilled) != HS_OK)
        return hs_err_nomem(err, 0);
    return HS_OK;
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
        if (win_should_spill(w, b)) {
            hs_status st = spill_all(w, b, err);
            hs_batch_free(b);
            return st;
        }
        hs_status st = xo_rows_append(&w->rows, op->ctx, op->name, b, err);
        hs_batch_free(b);
        HS_TRY(st);
        xo_op_held(op, w->rows.bytes);
    }
    int64_t n = w->n = xo_rows_count(&w->rows);
    /* the permutation and flags, reserved before they are made (the sort
     * accounts its own scratch) */
    HS_TRY(xo_mem_reserve(op->ctx, n * 10, op->name, err));
    w->perm_acc = n * 10;
    xo_op_held(op, w->rows.bytes + w->perm_acc);
    w->perm = hs_malloc((size_t)(n ? n : 1) * sizeof *w->perm);
    uint8_t *pnew = hs_calloc((size_t)(n ? n : 1), 1), *peer = hs_calloc((size_t)(n ? n : 1), 1);
    w->computed = hs_calloc((size_t)(w->n_fns ? w->n_fns : 1), sizeof *w->computed);
    hs_status st = (!w->perm || !pnew || !peer || !w->computed) ? hs_err_nomem(err, 0) : HS_OK;
    for (int64_t i = 0; st == HS_OK && i < n; i++)
        w->perm[i] = i;
    if (st == HS_OK)
        st = xo_sort_perm(w->op.ctx, w->rows.b->cols, w->n_part + w->n_keys, w->sort, n, w->perm, err);
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
            xo_op_held(op, w->rows.bytes + w->perm_acc);
            HS_TRY(xo_check_cancel(op->ctx, err));
        }
    }
    hs_free(pnew);
    hs_free(peer);
    xo_mem_release(op->ctx, n * 2);
    w->perm_acc = n * 8;
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
    if (w->spilling)
        return next_spilled(w, out, err);
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
    xo_mem_release(op->ctx, w->perm_acc);
    xo_free(w->sub);
    xo_spill_parts_free(&w->parts);
}

static hs_status win_field(const xo_win *f, const hs_field *arg, hs_field *out, hs_error *err)
{
    const char *name = f->name ? f->name : win_name(f->fn);
    switch (f->fn) {
    case XO_WIN_ROW_NUMBER: case XO_WIN_RANK: case XO_WIN_DENSE_RANK: case XO_WIN_COUNT_STAR:
    case XO_WIN_COUNT: case XO_WIN_NTILE:
        hs_field_init(out, name, HS_TYPE_INT64, false);
        return HS_OK;
    case XO_WIN_PERCENT_RANK: case XO_WIN_CUME_DIST:
        hs_field_init(out, name, HS_TYPE_FLOAT64, false);
        return HS_OK;
    case XO_WIN_SUM: case XO_WIN_AVG:
        if (arg->type == HS_TYPE_INTERVAL && f->fn == XO_WIN_SUM) {
            hs_field_init(out, name, HS_TYPE_INTERVAL, true);   /* avg: sum / count (planner) */
            return HS_OK;
        }
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

/* " ROWS lo..hi", " GROUPS ...", " RANGE ..." and the exclusion, for
 * EXPLAIN (nothing for the default frames). */
static hs_status frame_describe(const xo_win *f, hs_buf *d)
{
    static const char *const excl[] = {"", " EXCLUDE CURRENT ROW", " EXCLUDE GROUP", " EXCLUDE TIES"};
    const char *mode = f->frame == XO_FRAME_ROWS_BETWEEN ? "ROWS" : f->frame == XO_FRAME_GROUPS ? "GROUPS"
                     : f->frame == XO_FRAME_RANGE ? "RANGE" : NULL;
    if (!mode)
        return HS_OK;
    char lo[32], hi[32];
    if (f->lo == INT64_MIN)
        snprintf(lo, sizeof lo, "UNBOUNDED");
    else if (f->frame == XO_FRAME_RANGE)
        snprintf(lo, sizeof lo, f->lo ? "#%d" : "CURRENT", f->range_lo + 1);
    else
        snprintf(lo, sizeof lo, "%lld", (long long)f->lo);
    if (f->hi == INT64_MAX)
        snprintf(hi, sizeof hi, "UNBOUNDED");
    else if (f->frame == XO_FRAME_RANGE)
        snprintf(hi, sizeof hi, f->hi ? "#%d" : "CURRENT", f->range_hi + 1);
    else
        snprintf(hi, sizeof hi, "%lld", (long long)f->hi);
    return hs_buf_printf(d, " %s %s..%s%s", mode, lo, hi,
                         (unsigned)f->exclude < 4 ? excl[f->exclude] : "");
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
        bool with_arg = needs_arg(fns[j].fn);
        if ((fns[j].fn == XO_WIN_NTILE || fns[j].fn == XO_WIN_NTH_VALUE) && fns[j].offset <= 0)
            return hs_err_set(err, HS_INVALID, "argument of %s must be greater than zero",
                              win_name(fns[j].fn));
        if (fns[j].has_default && (fns[j].fn == XO_WIN_LAG || fns[j].fn == XO_WIN_LEAD)) {
            if (fns[j].def_col < 0 || fns[j].def_col >= in->n_children)
                return hs_err_set(err, HS_INVALID, "Window: default column %d out of range",
                                  fns[j].def_col);
            const hs_field *af = &in->children[fns[j].arg < 0 || fns[j].arg >= in->n_children ? 0 : fns[j].arg];
            const hs_field *df = &in->children[fns[j].def_col];
            if (!hs_field_equals(af, df, false, false) &&
                !(af->type == df->type && af->n_children == 0 && af->scale == df->scale &&
                  af->unit == df->unit && af->width == df->width))
                return hs_err_set(err, HS_INVALID, "Window: %s default is %s, the argument %s (cast first)",
                                  win_name(fns[j].fn), hs_type_name(df->type), hs_type_name(af->type));
        }
        if ((fns[j].frame == XO_FRAME_ROWS_BETWEEN || fns[j].frame == XO_FRAME_GROUPS ||
             fns[j].frame == XO_FRAME_RANGE) &&
            (fns[j].lo == INT64_MAX || fns[j].hi == INT64_MIN))
            return hs_err_set(err, HS_INVALID, "Window: a frame cannot start at UNBOUNDED FOLLOWING "
                              "or end at UNBOUNDED PRECEDING");
        if (fns[j].frame == XO_FRAME_RANGE) {
            const int rc[] = {fns[j].range_key, fns[j].range_lo, fns[j].range_hi,
                              fns[j].range_off_lo, fns[j].range_off_hi};
            for (int k = 0; k < 5; k++)
                if (rc[k] >= in->n_children)
                    return hs_err_set(err, HS_INVALID, "Window: RANGE column %d out of range", rc[k]);
            for (int k = 1; k < 3; k++)
                if (rc[k] >= 0 && (rc[0] < 0 || !hs_field_same_type(&in->children[rc[0]],
                                                                  &in->children[rc[k]], true)))
                    return hs_err_set(err, HS_INVALID, "Window: a RANGE bound's type is not its key's");
        }
        if (with_arg && (fns[j].arg < 0 || fns[j].arg >= in->n_children))
            return hs_err_set(err, HS_INVALID, "Window: %s argument column %d out of range",
                              win_name(fns[j].fn), fns[j].arg);
        if (fns[j].name && !(w->fns[j].name = hs_strdup(fns[j].name)))
            return hs_err_nomem(err, 0);
        hs_field f;
        HS_TRY(win_field(&w->fns[j], with_arg ? &in->children[fns[j].arg] : NULL, &f, err));
        if (!f.name || hs_field_add_child(&w->op.schema, &f) != HS_OK) {
            hs_field_clear(&f);
            return hs_err_nomem(err, 0);
        }
        if (hs_buf_printf(d, "%s%s(", j ? ", " : (d->len ? "; functions: " : "functions: "),
                          win_name(fns[j].fn)) != HS_OK ||
            (with_arg && hs_buf_printf(d, "#%d", fns[j].arg + 1) != HS_OK) ||
            hs_buf_printf(d, ")") != HS_OK || frame_describe(&fns[j], d) != HS_OK)
            return hs_err_nomem(err, 0);
    }
    xo_schema_renumber(&w->op.schema);
    return HS_OK;
}

hs_status xo_window(xo_op *child, int n_part, const int *part, int n_keys, const xo_sort_key *keys,
                    int n_fns, const xo_win *fns, xo_op **out, hs_error *err)
{
    return win_make(child, n_part, part, n_keys, keys, n_fns, fns, 0, out, err);
}

static hs_status win_make(xo_op *child, int n_part, const int *part, int n_keys,
                          const xo_sort_key *keys, int n_fns, const xo_win *fns, int level,
                          xo_op **out, hs_error *err)
{
    *out = NULL;
    xo_op *op;
    HS_TRY(xo_op_alloc(sizeof(win_op), child->ctx, "Window", 1, &child, &op, err));
    win_op *w = (win_op *)op;
    op->next = win_next;
    op->destroy = win_destroy;
    op->explain_extra = win_extra;
    w->level = level;
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

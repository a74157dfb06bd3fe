/*
 * parquet/reader_scan.c - the scan of one Parquet file (pq_scan_*): which
 * row groups it visits (statistics, the caller's prune callback), the rows
 * it emits as sorted ranges (all rows, a bitmap or ranges, minus vetoed
 * pages), batches as (skip, take) runs executed by one cursor per projected
 * leaf (reader.c), and the assembly of leaf columns into top-level columns.
 * reader.c's header comment describes how cursors read pages.  A batch's
 * top-level columns are independent (own cursors, windows and pages), so
 * with pq_scan_options.par they are decoded at once on threads the caller
 * lends (decode_batch); each keeps its own error and counters, summed after.
 */
#include "parquet/reader_cur.h"

#include "base/mem.h"

#include <roaring/roaring.h>
#include <stdlib.h>
#include <string.h>

/* ===================================================================== */
/* scan                                                                   */
/* ===================================================================== */

typedef struct pq_run { int64_t skip, take; } pq_run;

struct pq_scan {
    pq_reader *r;
    int n_cols;
    int *cols;                 /* projected top-level columns */
    int n_rgs;
    int *rgs;                  /* row groups to visit */
    int rg_i;                  /* next entry of rgs */
    int64_t *rg_first;         /* first file row of every row group */
    roaring_bitmap_t *rows;    /* copy of the caller's bitmap, or NULL */
    pq_row_range *ranges;      /* copy, or NULL */
    int n_ranges;
    pq_prune_fn prune;
    void *prune_ctx;
    int64_t batch_size;
    hs_field schema;           /* projected STRUCT */
    int n_cur;
    pq_cursor *cur;            /* one per projected leaf, grouped by column */
    int *cur_col;              /* batch column index of each cursor */
    int *col_cur;              /* first cursor of each batch column; n_cols + 1 */
    pq_par_fn par;             /* optional: the columns of a batch at once */
    void *par_ctx;
    bool rg_open;
    int rg;                    /* current row group */
    hs_buf sel;                /* pq_row_range, relative to the row group */
    size_t sel_i;
    int64_t next_row;          /* rows of the row group the cursors consumed */
    hs_buf runs;
    hs_buf granges;            /* the batch's runs as row-group ranges (pq_cur_gather) */
    pq_scan_stats stats;
};

const pq_scan_stats *pq_scan_get_stats(const pq_scan *s) { return &s->stats; }

void pq_scan_close(pq_scan *s)
{
    if (!s)
        return;
    for (int i = 0; s->cur && i < s->n_cur; i++)   /* n_cur counts before cur exists */
        pq_cursor_free(&s->cur[i]);
    hs_free(s->cur);
    hs_free(s->cur_col);
    hs_free(s->col_cur);
    hs_free(s->cols);
    hs_free(s->rgs);
    hs_free(s->rg_first);
    hs_free(s->ranges);
    if (s->rows)
        roaring_bitmap_free(s->rows);
    hs_field_clear(&s->schema);
    hs_buf_free(&s->sel);
    hs_buf_free(&s->runs);
    hs_buf_free(&s->granges);
    hs_free(s);
}

hs_status pq_scan_open(pq_reader *r, const pq_scan_options *opt, pq_scan **out, hs_error *err)
{
    static const pq_scan_options defaults;
    if (!opt)
        opt = &defaults;
    *out = NULL;
    const pq_schema_info *si = &r->ft->schema;
    const pq_file_meta *m = &r->ft->meta;
    pq_scan *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    s->r = r;
    hs_status st = HS_OK;
    s->n_cols = opt->columns ? opt->n_columns : si->n_tops;
    s->n_rgs = opt->row_groups ? opt->n_row_groups : m->n_row_groups;
    s->cols = hs_malloc(sizeof(int) * (size_t)(s->n_cols + 1));
    s->rgs = hs_malloc(sizeof(int) * (size_t)(s->n_rgs + 1));
    s->rg_first = hs_malloc(sizeof(int64_t) * (size_t)(m->n_row_groups + 1));
    if (!s->cols || !s->rgs || !s->rg_first || s->n_cols < 0 || s->n_rgs < 0) {
        st = s->n_cols < 0 || s->n_rgs < 0 ? hs_err_set(err, HS_INVALID, "negative column or row group count")
                                           : hs_err_nomem(err, 64);
        goto fail;
    }
    for (int i = 0; i < s->n_cols; i++) {
        int ci = opt->columns ? opt->columns[i] : i;
        if (ci < 0 || ci >= si->n_tops) {
            st = hs_err_set(err, HS_INVALID, "%s: no column %d (file has %d)", r->fname, ci, si->n_tops);
            goto fail;
        }
        s->cols[i] = ci;
    }
    int64_t acc = 0;
    for (int g = 0; g < m->n_row_groups; g++) {
        s->rg_first[g] = acc;
        acc += m->row_groups[g].num_rows;
    }
    s->rg_first[m->n_row_groups] = acc;
    for (int i = 0; i < s->n_rgs; i++) {
        int g = opt->row_groups ? opt->row_groups[i] : i;
        if (g < 0 || g >= m->n_row_groups) {
            st = hs_err_set(err, HS_INVALID, "%s: no row group %d (file has %d)", r->fname, g,
                            m->n_row_groups);
            goto fail;
        }
        s->rgs[i] = g;
    }
    if (opt->rows && !(s->rows = roaring_bitmap_copy(opt->rows))) {
        st = hs_err_nomem(err, 64);
        goto fail;
    }
    if (opt->ranges && opt->n_ranges > 0) {
        s->ranges = hs_malloc(sizeof(pq_row_range) * (size_t)opt->n_ranges);
        if (!s->ranges) {
            st = hs_err_nomem(err, 64);
            goto fail;
        }
        memcpy(s->ranges, opt->ranges, sizeof(pq_row_range) * (size_t)opt->n_ranges);
        s->n_ranges = opt->n_ranges;
        for (int i = 0; i < s->n_ranges; i++)
            if (s->ranges[i].start > s->ranges[i].end ||
                (i > 0 && s->ranges[i].start < s->ranges[i - 1].end)) {
                st = hs_err_set(err, HS_INVALID, "row ranges must be sorted and disjoint");
                goto fail;
            }
    } else if (opt->ranges) {
        s->n_ranges = 0;
        s->ranges = hs_malloc(sizeof(pq_row_range));  /* empty selection */
        if (!s->ranges) {
            st = hs_err_nomem(err, 64);
            goto fail;
        }
    }
    s->prune = opt->prune;
    s->prune_ctx = opt->prune_ctx;
    s->batch_size = opt->batch_size > 0 ? opt->batch_size : 65536;
    s->par = opt->par;
    s->par_ctx = opt->par_ctx;
    /* projected schema and cursors */
    hs_field_init(&s->schema, si->root.name, HS_TYPE_STRUCT, false);
    for (int i = 0; i < s->n_cols; i++) {
        hs_field ch;
        memset(&ch, 0, sizeof ch);
        const hs_field *src = &si->root.children[s->cols[i]];
        if (opt->verdicts && opt->verdicts[i].fn) {
            const pq_anode *top = &si->tops[s->cols[i]];
            const pq_leaf *lf = top->n_leaves == 1 ? &si->leaves[top->first_leaf] : NULL;
            if (!lf || lf->depth != 1 || lf->max_rep != 0 || lf->conv != PQ_CV_BYTES) {
                st = hs_err_set(err, HS_INVALID, "%s: column '%s' is no flat string or binary "
                                "column (verdict)", r->fname, src->name);
                goto fail;
            }
            hs_field_init(&ch, src->name, HS_TYPE_BOOL, false);
            ch.field_id = src->field_id;
            if (hs_field_add_child(&s->schema, &ch) != HS_OK) {
                hs_field_clear(&ch);
                st = hs_err_nomem(err, 64);
                goto fail;
            }
            s->n_cur += top->n_leaves;
            continue;
        }
        if (hs_field_copy(src, &ch) != HS_OK ||
            hs_field_add_child(&s->schema, &ch) != HS_OK) {
            hs_field_clear(&ch);
            st = hs_err_nomem(err, 64);
            goto fail;
        }
        s->n_cur += si->tops[s->cols[i]].n_leaves;
    }
    s->cur = hs_calloc((size_t)s->n_cur + 1, sizeof *s->cur);
    s->cur_col = hs_calloc((size_t)s->n_cur + 1, sizeof *s->cur_col);
    s->col_cur = hs_calloc((size_t)s->n_cols + 1, sizeof *s->col_cur);
    if (!s->cur || !s->cur_col || !s->col_cur) {
        st = hs_err_nomem(err, 64);
        goto fail;
    }
    int k = 0;
    for (int i = 0; i < s->n_cols; i++) {
        const pq_anode *top = &si->tops[s->cols[i]];
        s->col_cur[i] = k;
        for (int l = top->first_leaf; l < top->first_leaf + top->n_leaves; l++, k++) {
            pq_cursor *c = &s->cur[k];
            c->r = r;
            c->stats = &s->stats;
            c->leaf_index = l;
            c->leaf = &si->leaves[l];
            c->own_from = c->leaf->depth - 1;
            c->gather = (opt->rows || opt->ranges) && c->leaf->depth == 1 && c->leaf->max_rep == 0 &&
                        !pq_read_no_fast_paths;
            c->vd_null = -1;
            if (opt->verdicts && opt->verdicts[i].fn) {
                c->vd = &opt->verdicts[i];
                c->vd_field = &si->root.children[s->cols[i]];
                c->gather = false;   /* verdicts are written by runs (leaf_emit) */
            }
            for (int j = 0; j < c->leaf->depth; j++)
                if (c->leaf->path[j]->first_leaf == l) {
                    c->own_from = j;
                    break;
                }
            s->cur_col[k] = i;
        }
    }
    s->col_cur[s->n_cols] = k;
    *out = s;
    return HS_OK;
fail:
    pq_scan_close(s);
    return st;
}

/* ---------- selection ---------- */

static hs_status sel_push(hs_buf *b, int64_t start, int64_t end)
{
    if (end <= start)
        return HS_OK;
    size_t n = HS_VEC_LEN(b, pq_row_range);
    if (n > 0) {
        pq_row_range *last = &HS_VEC_AT(b, pq_row_range, n - 1);
        if (last->end == start) {
            last->end = end;
            return HS_OK;
        }
    }
    pq_row_range rr = { start, end };
    return hs_buf_append(b, &rr, sizeof rr);
}

/* Rows of [start, end) (file positions) set in the bitmap, as ranges relative to start. */
static hs_status sel_from_bitmap(const roaring_bitmap_t *bm, int64_t start, int64_t end, hs_buf *out)
{
    hs_buf_reset(out);
    if (start >= ((int64_t)1 << 32))
        return HS_OK;
    if (end > ((int64_t)1 << 32))
        end = (int64_t)1 << 32;
    roaring_uint32_iterator_t it;
    roaring_init_iterator(bm, &it);
    if (!roaring_move_uint32_iterator_equalorlarger(&it, (uint32_t)start))
        return HS_OK;
    uint32_t buf[256];
    int64_t rs = -1, re = -1;
    for (;;) {
        uint32_t got = roaring_read_uint32_iterator(&it, buf, 256);
        if (got == 0)
            break;
        for (uint32_t i = 0; i < got; i++) {
            int64_t v = buf[i];
            if (v >= end)
                goto out;
            if (v == re) {
                re++;
            } else {
                if (rs >= 0)
                    HS_TRY(sel_push(out, rs - start, re - start));
                rs = v;
                re = v + 1;
            }
        }
    }
out:
    if (rs >= 0)
        HS_TRY(sel_push(out, rs - start, re - start));
    return HS_OK;
}

/* sel := sel ∩ (ranges shifted by -base, clipped to [0, n)) */
static hs_status sel_intersect(hs_buf *sel, const pq_row_range *rr, int n_rr, int64_t base, hs_buf *tmp)
{
    hs_buf_reset(tmp);
    size_t ns = HS_VEC_LEN(sel, pq_row_range);
    const pq_row_range *a = (const pq_row_range *)sel->data;
    size_t i = 0;
    int j = 0;
    while (i < ns && j < n_rr) {
        int64_t bs = rr[j].start - base, be = rr[j].end - base;
        int64_t lo = a[i].start > bs ? a[i].start : bs;
        int64_t hi = a[i].end < be ? a[i].end : be;
        if (lo < hi)
            HS_TRY(sel_push(tmp, lo, hi));
        if (a[i].end < be)
            i++;
        else
            j++;
    }
    hs_buf t = *sel;
    *sel = *tmp;
    *tmp = t;
    return HS_OK;
}

/* sel := sel minus [start, end) */
static hs_status sel_subtract(hs_buf *sel, int64_t start, int64_t end, hs_buf *tmp)
{
    hs_buf_reset(tmp);
    size_t ns = HS_VEC_LEN(sel, pq_row_range);
    const pq_row_range *a = (const pq_row_range *)sel->data;
    for (size_t i = 0; i < ns; i++) {
        HS_TRY(sel_push(tmp, a[i].start, a[i].end < start ? a[i].end : start));
        HS_TRY(sel_push(tmp, a[i].start > end ? a[i].start : end, a[i].end));
    }
    hs_buf t = *sel;
    *sel = *tmp;
    *tmp = t;
    return HS_OK;
}

static void stats_from_chunk(const pq_column_meta *cm, pq_stats_view *v)
{
    if (!cm->has_statistics)
        return;
    const pq_statistics *st = &cm->statistics;
    if (st->min_value.p && st->max_value.p) {
        v->min = st->min_value;
        v->max = st->max_value;
    } else if (st->min.p && st->max.p && cm->type != PQ_BYTE_ARRAY &&
               cm->type != PQ_FIXED_LEN_BYTE_ARRAY && cm->type != PQ_INT96) {
        v->min = st->min;  /* legacy stats: trustworthy only for signed-order types */
        v->max = st->max;
    }
    v->has_null_count = st->has_null_count;
    v->null_count = st->null_count;
}

/* Object stores: the pages of every column that hold selected rows (and the
 * dictionaries before them), announced together so that they arrive in one
 * round trip rather than one per column (io.h hs_file_will_need). */
#define WILL_NEED_MAX 64
static void will_need_pages(pq_scan *s, const pq_row_range *sr, size_t n_sr)
{
    hs_io_range rr[WILL_NEED_MAX];
    size_t n = 0;
    for (int i = 0; i < s->n_cur && n < WILL_NEED_MAX; i++) {
        const pq_cursor *c = &s->cur[i];
        if (!c->page_mode || !c->oi)
            continue;
        if (c->dict_hi > c->dict_lo)
            rr[n++] = (hs_io_range){ (uint64_t)c->dict_lo, (uint64_t)(c->dict_hi - c->dict_lo) };
        size_t k = 0;
        for (int p = 0; p < c->oi->n_pages && k < n_sr && n < WILL_NEED_MAX; p++) {
            int64_t ps = c->oi->pages[p].first_row_index;
            int64_t pe = p + 1 < c->oi->n_pages ? c->oi->pages[p + 1].first_row_index : c->rg_rows;
            while (k < n_sr && sr[k].end <= ps)
                k++;
            if (k < n_sr && sr[k].start < pe && c->oi->pages[p].offset >= 0 &&
                c->oi->pages[p].compressed_page_size > 0)
                rr[n++] = (hs_io_range){ (uint64_t)c->oi->pages[p].offset,
                                         (uint64_t)c->oi->pages[p].compressed_page_size };
        }
    }
    if (n > 1)
        hs_file_will_need(s->r->f, rr, n);
}

/* Opens row group s->rgs[s->rg_i]; *skipped when it holds no wanted rows. */
static hs_status scan_open_rg(pq_scan *s, bool *skipped, hs_error *err)
{
    pq_reader *r = s->r;
    int rg = s->rgs[s->rg_i++];
    const pq_row_group *g = &r->ft->meta.row_groups[rg];
    int64_t nrows = g->num_rows, first = s->rg_first[rg];
    hs_buf tmp = { 0 };
    hs_status st = HS_OK;
    *skipped = false;
    hs_buf_reset(&s->sel);
    if (s->rows)
        st = sel_from_bitmap(s->rows, first, first + nrows, &s->sel);
    else
        st = sel_push(&s->sel, 0, nrows);
    if (st == HS_OK && s->ranges)
        st = sel_intersect(&s->sel, s->ranges, s->n_ranges, first, &tmp);
    if (st != HS_OK) {
        hs_buf_free(&tmp);
        return hs_err_nomem(err, 64);
    }
    /* row-group and page statistics */
    for (int i = 0; s->prune && i < s->n_cur && s->sel.len > 0; i++) {
        pq_cursor *c = &s->cur[i];
        const pq_column_chunk *cc = &g->columns[c->leaf_index];
        pq_stats_view v;
        memset(&v, 0, sizeof v);
        v.row_group = rg;
        v.page = -1;
        v.leaf = c->leaf_index;
        v.elem = c->leaf->elem;
        v.num_rows = nrows;
        if (cc->has_meta_data)
            stats_from_chunk(&cc->meta_data, &v);
        if (!s->prune(s->prune_ctx, &v)) {
            hs_buf_reset(&s->sel);
            break;
        }
        const pq_column_index *ci;
        const pq_offset_index *oi;
        st = pq_reader_page_index(r, rg, c->leaf_index, &ci, &oi, err);
        if (st != HS_OK)
            break;
        if (!ci || !oi)
            continue;
        for (int p = 0; p < oi->n_pages && s->sel.len > 0; p++) {
            int64_t ps = oi->pages[p].first_row_index;
            int64_t pe = p + 1 < oi->n_pages ? oi->pages[p + 1].first_row_index : nrows;
            memset(&v, 0, sizeof v);
            v.row_group = rg;
            v.page = p;
            v.leaf = c->leaf_index;
            v.elem = c->leaf->elem;
            v.num_rows = pe - ps;
            v.all_null = ci->null_pages ? ci->null_pages[p] : false;
            if (ci->min_values && ci->max_values && !v.all_null) {
                v.min = ci->min_values[p];
                v.max = ci->max_values[p];
            }
            if (ci->has_null_counts && ci->null_counts) {
                v.has_null_count = true;
                v.null_count = ci->null_counts[p];
            }
            if (!s->prune(s->prune_ctx, &v) && (st = sel_subtract(&s->sel, ps, pe, &tmp)) != HS_OK) {
                st = hs_err_nomem(err, 64);
                break;
            }
        }
        if (st != HS_OK)
            break;
    }
    hs_buf_free(&tmp);
    if (st != HS_OK)
        return st;
    if (s->sel.len == 0) {
        s->stats.row_groups_skipped++;
        *skipped = true;
        return HS_OK;
    }
    const pq_row_range *sr = (const pq_row_range *)s->sel.data;
    bool full = HS_VEC_LEN(&s->sel, pq_row_range) == 1 && sr[0].start == 0 && sr[0].end == nrows;
    for (int i = 0; i < s->n_cur; i++) {
        st = pq_cursor_open_rg(&s->cur[i], rg, !full, err);
        if (st != HS_OK)
            return pq_cursor_ctx(&s->cur[i], st, err);
    }
    if (!full)
        will_need_pages(s, sr, HS_VEC_LEN(&s->sel, pq_row_range));
    s->rg = rg;
    s->rg_open = true;
    s->sel_i = 0;
    s->next_row = 0;
    s->stats.row_groups_read++;
    return HS_OK;
}

static void scan_close_rg(pq_scan *s)
{
    for (int i = 0; i < s->n_cur; i++)
        pq_cursor_close_rg(&s->cur[i]);
    s->rg_open = false;
}

/* Checks that the leaves of a column agreed on its structure; drops the
 * offsets of fixed-size lists (used only while assembling). */
static hs_status finish_col(hs_column *col, const pq_anode *an, int64_t expect, int depth,
                            hs_error *err)
{
    if (depth > 2 * PQ_MAX_NESTING + 8)
        return HS_CORRUPT_AT(err, "nesting too deep");
    if (col->length != expect)
        return HS_CORRUPT_AT(err, "column '%s' has %lld slots where %lld were expected (leaf columns disagree)",
                             an->name, (long long)col->length, (long long)expect);
    if (col->type == HS_TYPE_LIST || col->type == HS_TYPE_MAP || col->type == HS_TYPE_FIXED_LIST ||
        col->type == HS_TYPE_STRING || col->type == HS_TYPE_BINARY) {
        if (col->offsets.len < 4 && pq_col_prep(col, false, 0) != HS_OK)
            return hs_err_nomem(err, 64);
    }
    if (an->nullable && col->type != HS_TYPE_NA && col->validity.data == NULL && col->length > 0 &&
        col->null_count > 0)
        return hs_err_set(err, HS_INTERNAL, "nulls without a validity bitmap");
    if (an->kind == PQ_AN_STRUCT) {
        if (col->n_children != an->n_children)
            return hs_err_set(err, HS_INTERNAL, "struct column shape");
        for (int i = 0; i < an->n_children; i++)
            HS_TRY(finish_col(col->children[i], &an->children[i], col->length, depth + 1, err));
    } else if (an->kind == PQ_AN_LIST) {
        if (col->n_children < 1)
            return hs_err_set(err, HS_INTERNAL, "list column shape");
        const int32_t *offs = (const int32_t *)col->offsets.data;
        int64_t child_len = offs[col->length];
        if (col->type == HS_TYPE_FIXED_LIST) {
            for (int64_t i = 0; i < col->length; i++)
                if (offs[i + 1] - offs[i] != an->width)
                    return HS_CORRUPT_AT(err, "fixed_size_list '%s' row has %d elements, expected %d",
                                         an->name, (int)(offs[i + 1] - offs[i]), (int)an->width);
            hs_free_aligned(col->offsets.data);
            col->offsets.data = NULL;
            col->offsets.len = col->offsets.cap = 0;
        }
        HS_TRY(finish_col(col->children[0], &an->children[0], child_len, depth + 1, err));
    }
    return HS_OK;
}

/* Column pointers along a leaf's path inside the batch column `top`. */
static hs_status leaf_cols(const pq_leaf *lf, hs_column *top, hs_column **cols, hs_error *err)
{
    cols[0] = top;
    for (int j = 1; j < lf->depth; j++) {
        int ci = lf->path[j]->child_index;
        if (ci < 0 || ci >= cols[j - 1]->n_children)
            return hs_err_set(err, HS_INTERNAL, "column tree does not match the schema");
        cols[j] = cols[j - 1]->children[ci];
    }
    return HS_OK;
}

static hs_status scan_next(pq_scan *s, hs_batch **out, hs_error *err);

/* One batch, with the guard for mapped bytes: pages of a batch may be read in
 * place from the file's mapping, and a file truncated or rewritten since it
 * was opened would fault (SIGBUS) or show other bytes there.  So, when the
 * file is mapped: its identity is checked before the batch (in scan_next)
 * and after it (one fstat each), and a truncation that lands while the batch
 * runs, whose fault io/mapguard.c turns into zero pages, fails the batch by
 * the mapping's damaged mark.  Either way HS_IO, never a signal, never
 * another version's bytes. */
hs_status pq_scan_next(pq_scan *s, hs_batch **out, hs_error *err)
{
    bool mapped = __atomic_load_n(&s->r->ft->map_state, __ATOMIC_ACQUIRE) > 0;
    if (mapped)
        hs_map_guard_check();
    uint64_t faults = hs_map_fault_count();
    hs_status st = scan_next(s, out, err);
    if (st == HS_CORRUPT) {
        /* bytes that look corrupt because the file shrank or changed under
         * the reader (pread path: "file shrank") are an I/O condition */
        hs_error now = {0};
        if (hs_file_check(s->r->f, &now) != HS_OK) {
            hs_err_clear(err);
            st = hs_err_set(err, HS_IO, "%s", now.msg);
        }
        hs_err_clear(&now);
    }
    if (__atomic_load_n(&s->r->ft->map_state, __ATOMIC_ACQUIRE) <= 0)
        return st;
    hs_status bad = HS_OK;
    if (hs_map_fault_count() != faults && hs_map_damaged(s->r->ft->map)) {
        hs_err_clear(err);
        bad = hs_err_set(err, HS_IO, "%s: file truncated while being read (the mapped "
                         "pages are gone)", s->r->fname);
    } else if (st == HS_OK && *out) {
        bad = hs_file_check(s->r->f, err);
    }
    if (bad != HS_OK) {
        hs_batch_free(*out);
        *out = NULL;
        scan_close_rg(s);
        s->rg_i = s->n_rgs;  /* a failed scan stays failed */
        return bad;
    }
    return st;
}

/* Reads this batch's runs into the leaf columns of cursor i. */
static hs_status decode_cursor(pq_scan *s, int i, hs_batch *b, hs_error *err)
{
    const pq_run *runs = (const pq_run *)s->runs.data;
    size_t n_runs = HS_VEC_LEN(&s->runs, pq_run);
    hs_column *cols[2 * PQ_MAX_NESTING + 8];
    pq_cursor *c = &s->cur[i];
    hs_status st = leaf_cols(c->leaf, b->cols[s->cur_col[i]], cols, err);
    hs_column *lc = st == HS_OK ? cols[c->leaf->depth - 1] : NULL;
    bool bytes = lc && (lc->type == HS_TYPE_STRING || lc->type == HS_TYPE_BINARY);
    if (lc && (c->leaf->depth > 1 || bytes) && c->last_slots > 0) {
        /* nested leaves: their slot count is not the row count, and string
         * bytes are not known up front either, so reserve what the previous
         * batch needed instead of growing by doubling (each doubling copied
         * the bytes so far and faulted in a new buffer) */
        if (pq_cb_reserve(&lc->values, c->last_bytes) != HS_OK ||
            (bytes ? pq_cb_reserve(&lc->offsets, (size_t)(c->last_slots + 1) * 4) : HS_OK) != HS_OK)
            st = hs_err_nomem(err, c->last_bytes);
    }
    if (lc)  /* preallocated by hs_batch_create, still untouched */
        hs_mem_advise_huge(lc->values.data, lc->values.cap);
    if (lc && c->gather)
        st = pq_cur_gather(c, (const pq_row_range *)s->granges.data, n_runs, lc, err);
    for (size_t k = 0; k < n_runs && st == HS_OK && !c->gather; k++) {
        st = pq_cur_skip(c, runs[k].skip, err);
        if (st == HS_OK)
            st = pq_cur_rows(c, runs[k].take, cols, err);
    }
    if (st != HS_OK)
        st = pq_cursor_ctx(c, st, err);
    else if (lc) {
        c->last_slots = lc->length;
        c->last_bytes = lc->values.len;
    }
    return st;
}

/* One batch column's cursors, as a task of s->par: its own error and
 * counters (the cursors count into them while the task runs). */
typedef struct col_task {
    pq_scan *s;
    hs_batch *b;
    hs_status st;
    hs_error err;
    pq_scan_stats stats;
} col_task;

static void decode_column(void *arg, int k)
{
    col_task *t = &((col_task *)arg)[k];
    pq_scan *s = t->s;
    hs_err_clear(&t->err);
    memset(&t->stats, 0, sizeof t->stats);
    t->st = HS_OK;
    for (int i = s->col_cur[k]; i < s->col_cur[k + 1] && t->st == HS_OK; i++) {
        s->cur[i].stats = &t->stats;
        t->st = decode_cursor(s, i, t->b, &t->err);
        s->cur[i].stats = &s->stats;
    }
}

/* Decodes every cursor's part of batch b: the columns at once through
 * s->par (cursors share nothing but the file, the footer and the caches,
 * which take concurrent readers), else one after another.  The first
 * failing column's error wins, so a failure reads the same either way. */
static hs_status decode_batch(pq_scan *s, hs_batch *b, int64_t rows, hs_error *err)
{
    col_task *t = NULL;
    if (s->par && s->n_cols > 1 && rows >= PQ_PAR_MIN_ROWS)
        t = hs_calloc((size_t)s->n_cols, sizeof *t);
    if (!t) {
        hs_status st = HS_OK;
        for (int i = 0; i < s->n_cur && st == HS_OK; i++)
            st = decode_cursor(s, i, b, err);
        return st;
    }
    for (int k = 0; k < s->n_cols; k++) {
        t[k].s = s;
        t[k].b = b;
    }
    s->par(s->par_ctx, s->n_cols, decode_column, t);
    hs_status st = HS_OK;
    for (int k = 0; k < s->n_cols; k++) {
        s->stats.pages_decoded += t[k].stats.pages_decoded;
        s->stats.pages_skipped += t[k].stats.pages_skipped;
        s->stats.pages_in_place += t[k].stats.pages_in_place;
        s->stats.bytes_read += t[k].stats.bytes_read;
        s->stats.row_groups_read += t[k].stats.row_groups_read;
        s->stats.row_groups_skipped += t[k].stats.row_groups_skipped;
        s->stats.rows_emitted += t[k].stats.rows_emitted;
        if (st == HS_OK && t[k].st != HS_OK) {
            st = t[k].st;
            if (err)
                *err = t[k].err;
        }
    }
    hs_free(t);
    return st;
}

static hs_status scan_next(pq_scan *s, hs_batch **out, hs_error *err)
{
    *out = NULL;
    for (;;) {
        if (!s->rg_open) {
            if (s->rg_i >= s->n_rgs)
                return HS_OK;
            bool skipped;
            HS_TRY(scan_open_rg(s, &skipped, err));
            continue;
        }
        size_t n_sel = HS_VEC_LEN(&s->sel, pq_row_range);
        if (s->sel_i >= n_sel) {
            scan_close_rg(s);
            continue;
        }
        break;
    }
    /* pages of this batch may be read in place from the file's mapping:
     * the file's identity is checked first (see pq_scan_next) */
    if (__atomic_load_n(&s->r->ft->map_state, __ATOMIC_ACQUIRE) > 0)
        HS_TRY(hs_file_check(s->r->f, err));
    /* the runs of this batch */
    hs_buf_reset(&s->runs);
    hs_buf_reset(&s->granges);
    const pq_row_range *sel = (const pq_row_range *)s->sel.data;
    size_t n_sel = HS_VEC_LEN(&s->sel, pq_row_range);
    size_t max_runs = n_sel - s->sel_i;   /* one run per range at most, and per row */
    if (max_runs > (size_t)s->batch_size)
        max_runs = (size_t)s->batch_size;
    if (hs_buf_reserve(&s->runs, max_runs * sizeof(pq_run)) != HS_OK ||
        hs_buf_reserve(&s->granges, max_runs * sizeof(pq_row_range)) != HS_OK)
        return hs_err_nomem(err, max_runs * sizeof(pq_run));
    pq_run *rw = (pq_run *)s->runs.data;
    pq_row_range *gw = (pq_row_range *)s->granges.data;
    size_t nr = 0;
    int64_t total = 0, row = s->next_row;
    while (total < s->batch_size && s->sel_i < n_sel) {
        const pq_row_range *rr = &sel[s->sel_i];
        int64_t start = rr->start > row ? rr->start : row;
        int64_t take = rr->end - start;
        if (take > s->batch_size - total)
            take = s->batch_size - total;
        rw[nr].skip = start - row;
        rw[nr].take = take;
        gw[nr].start = start;
        gw[nr].end = start + take;
        nr++;
        total += take;
        row = start + take;
        if (row >= rr->end)
            s->sel_i++;
    }
    s->runs.len = nr * sizeof(pq_run);
    s->granges.len = nr * sizeof(pq_row_range);
    s->next_row = row;
    hs_batch *b = NULL;
    HS_TRY(hs_batch_create(&s->schema, total, &b, err));
    hs_status st = decode_batch(s, b, total, err);
    const pq_schema_info *si = &s->r->ft->schema;
    for (int i = 0; i < s->n_cols && st == HS_OK; i++) {
        st = finish_col(b->cols[i], &si->tops[s->cols[i]], total, 0, err);
        if (st != HS_OK)
            hs_err_prefix(err, "%s: row group %d", s->r->fname, s->rg);
    }
    if (st != HS_OK) {
        hs_batch_free(b);
        scan_close_rg(s);
        s->rg_i = s->n_rgs;  /* a failed scan stays failed */
        return st;
    }
    b->n_rows = total;
    s->stats.rows_emitted += total;
    *out = b;
    return HS_OK;
}

/*
 * index/scalar/inverted.c - the inverted kind: distinct values sorted, each
 * with the rows that hold it.
 *
 * Sections (the file layout around them is in sidx.c):
 *
 *   S1 values   values table of the n_distinct distinct values, strictly
 *               increasing in pr_val_cmp order
 *   S2 offsets  n_distinct + 1 offsets into S3 (u32, u64 when the WIDE
 *               flag is set), first 0, last = S3 length; entry i spans
 *               [off[i], off[i+1]), which is 4 bytes or at least 8
 *   S3 postings entry i, the rows holding value i, in one of three forms:
 *                 4 bytes      the one row (u32 position)
 *                 "HDP1" tag   a delta-packed position list (sidx_int.h)
 *                 otherwise    a portable roaring bitmap (run-optimized)
 *               whichever is smallest.
 *
 * Why two list forms: roaring stores a sparse container (under 4096 rows of
 * a 65536-row chunk) at 16 bits per row, while a value holding one row in k
 * costs about log2(k) bits delta-packed: 7-11 bits for 100-1000 distinct
 * values, about half.  Dense, clustered or sorted postings (bitset or run
 * containers) stay roaring.  One-row postings skip both headers, so a
 * forced inverted index of a unique column costs 8 bytes per row.
 *
 * Lookup: a probe is a span [a, b) of the sorted values found by two
 * binary searches; its postings are decoded (validated) into the
 * accumulator: roaring bitmaps and long delta-packed lists (>= 2048 rows,
 * built into roaring from sorted input) are unioned by one
 * roaring_bitmap_or_many, shorter lists and single rows go in as positions.
 * Open checks the values and offsets tables; postings are checked when a
 * lookup reads them.
 */
#include "index/scalar/sidx_int.h"

#include "base/mem.h"

/* The portable size of a run-optimized roaring bitmap of the ascending
 * positions pos[0..n), computed without building it (CRoaring keeps a
 * container as runs when 2 + 4 * runs beats its array / bitset form). */
static size_t rb_size_estimate(const uint32_t *pos, size_t n)
{
    size_t ncont = 0, body = 0;
    bool any_run = false;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1, runs = 1;
        while (j < n && pos[j] >> 16 == pos[i] >> 16) {
            runs += pos[j] != pos[j - 1] + 1;
            j++;
        }
        size_t card = j - i, plain = card <= 4096 ? 2 * card : 8192, as_runs = 2 + 4 * runs;
        any_run |= as_runs < plain;
        body += as_runs < plain ? as_runs : plain;
        ncont++;
        i = j;
    }
    size_t head = any_run ? 4 + (ncont + 7) / 8 + 4 * ncont + (ncont >= 4 ? 4 * ncont : 0)
                          : 8 + 8 * ncont;
    return head + body;
}

hs_status sidx_inv_write(const sidx_sorted *s, hs_buf *out, size_t file_start,
                         uint64_t sec[SIDX_N_SECTIONS][2], uint32_t *flags, hs_error *err)
{
    hs_buf first = {0}, offs = {0}, blob = {0};
    hs_status st = HS_OK;
    uint64_t value_bytes = 0;
    if (hs_buf_reserve(&first, (size_t)s->n_distinct * 8) != HS_OK ||
        hs_buf_reserve(&offs, (size_t)(s->n_distinct + 1) * 8) != HS_OK ||
        hs_buf_put_u64le(&offs, 0) != HS_OK) {
        st = hs_err_nomem(err, (size_t)s->n_distinct * 16);
        goto done;
    }
    for (int64_t j = 0; j < s->n;) {
        int64_t e = j + 1;
        while (e < s->n && sidx_sorted_same(s, j, e))
            e++;
        value_bytes += sidx_sorted_value_len(s, j);
        st = HS_VEC_PUSH(&first, int64_t, j);
        if (st == HS_OK && e - j == 1) {
            st = hs_buf_put_u32le(&blob, s->pos[j]);
        } else if (st == HS_OK) {
            size_t cnt = (size_t)(e - j);
            if (rb_size_estimate(s->pos + j, cnt) <= sidx_dp_size(s->pos + j, cnt)) {
                roaring_bitmap_t *bm = roaring_bitmap_of_ptr(cnt, s->pos + j);
                st = bm ? sidx_rb_put(bm, &blob) : HS_NOMEM;
                if (bm)
                    roaring_bitmap_free(bm);
            } else {
                st = sidx_dp_put(s->pos + j, cnt, &blob);
            }
        }
        if (st == HS_OK)
            st = hs_buf_put_u64le(&offs, blob.len);
        if (st != HS_OK) {
            st = hs_err_set(err, st, "scalar index: writing the postings of value %lld failed",
                            (long long)HS_VEC_LEN(&first, int64_t));
            goto done;
        }
        j = e;
    }
    bool wide = blob.len > UINT32_MAX || value_bytes > UINT32_MAX;
    *flags = wide ? SIDX_FLAG_WIDE : 0;
    int64_t nd = (int64_t)HS_VEC_LEN(&first, int64_t);
    if (nd != s->n_distinct) {
        st = hs_err_set(err, HS_INTERNAL, "scalar index: %lld runs for %lld distinct values",
                        (long long)nd, (long long)s->n_distinct);
        goto done;
    }
    if ((st = sidx_align8(out, file_start)) != HS_OK)
        goto nomem;
    sec[SIDX_S_VALUES][0] = out->len - file_start;
    if ((st = sidx_put_values(s, (const int64_t *)first.data, nd, wide, out)) != HS_OK)
        goto nomem;
    sec[SIDX_S_VALUES][1] = out->len - file_start - sec[SIDX_S_VALUES][0];
    if ((st = sidx_align8(out, file_start)) != HS_OK)
        goto nomem;
    sec[SIDX_S_OFFSETS][0] = out->len - file_start;
    if ((st = hs_buf_reserve(out, (size_t)(nd + 1) * (wide ? 8 : 4))) != HS_OK)
        goto nomem;
    for (int64_t i = 0; i <= nd; i++) {
        uint64_t o = HS_VEC_AT(&offs, uint64_t, i);
        st = wide ? hs_buf_put_u64le(out, o) : hs_buf_put_u32le(out, (uint32_t)o);
        if (st != HS_OK)
            goto nomem;
    }
    sec[SIDX_S_OFFSETS][1] = out->len - file_start - sec[SIDX_S_OFFSETS][0];
    if ((st = sidx_align8(out, file_start)) != HS_OK)
        goto nomem;
    sec[SIDX_S_DATA][0] = out->len - file_start;
    if ((st = hs_buf_append(out, blob.data, blob.len)) != HS_OK)
        goto nomem;
    sec[SIDX_S_DATA][1] = blob.len;
    goto done;
nomem:
    st = hs_err_nomem(err, blob.len);
done:
    hs_buf_free(&first);
    hs_buf_free(&offs);
    hs_buf_free(&blob);
    return st;
}

hs_status sidx_inv_open(sidx_index *ix, hs_error *err)
{
    bool wide = ix->flags & SIDX_FLAG_WIDE;
    int64_t nd = ix->info.n_distinct;
    HS_TRY(sidx_vals_open(&ix->vals, ix->info.value_kind, ix->scale, nd, wide, true,
                          ix->sec[SIDX_S_VALUES], ix->sec_n[SIDX_S_VALUES], "distinct values", err));
    size_t ow = wide ? 8 : 4;
    const uint8_t *o = ix->sec[SIDX_S_OFFSETS];
    if (ix->sec_n[SIDX_S_OFFSETS] / ow != (uint64_t)nd + 1 || ix->sec_n[SIDX_S_OFFSETS] % ow)
        return HS_CORRUPT_AT(err, "scalar index: postings offsets: %zu bytes for %lld values",
                             ix->sec_n[SIDX_S_OFFSETS], (long long)nd);
    uint64_t prev = sidx_off_get(o, 0, wide);
    if (prev != 0)
        return HS_CORRUPT_AT(err, "scalar index: postings offsets start at %llu",
                             (unsigned long long)prev);
    for (int64_t i = 1; i <= nd; i++) {
        uint64_t x = sidx_off_get(o, i, wide);
        if (x < prev || (x - prev != 4 && x - prev < 8) || x > ix->sec_n[SIDX_S_DATA])
            return HS_CORRUPT_AT(err, "scalar index: postings of value %lld span [%llu, %llu) of "
                                 "%zu bytes", (long long)i - 1, (unsigned long long)prev,
                                 (unsigned long long)x, ix->sec_n[SIDX_S_DATA]);
        prev = x;
    }
    if (prev != ix->sec_n[SIDX_S_DATA])
        return HS_CORRUPT_AT(err, "scalar index: postings end at %llu of %zu bytes",
                             (unsigned long long)prev, ix->sec_n[SIDX_S_DATA]);
    return HS_OK;
}

static void posting_span(const sidx_index *ix, int64_t i, const uint8_t **p, size_t *n)
{
    bool wide = ix->flags & SIDX_FLAG_WIDE;
    uint64_t a = sidx_off_get(ix->sec[SIDX_S_OFFSETS], i, wide);
    uint64_t b = sidx_off_get(ix->sec[SIDX_S_OFFSETS], i + 1, wide);
    *p = ix->sec[SIDX_S_DATA] + a;
    *n = (size_t)(b - a);
}

hs_status sidx_inv_span(const sidx_index *ix, const sidx_probe *pr, int64_t *lo, int64_t *hi,
                        hs_error *err)
{
    int64_t nd = ix->vals.n;
    *lo = sidx_vals_lower(&ix->vals, 0, nd, pr, pr->clo);
    *hi = sidx_vals_lower(&ix->vals, *lo, nd, pr, pr->chi + 1);
    (void)err;
    return HS_OK;
}

hs_status sidx_inv_collect_span(const sidx_index *ix, int64_t a, int64_t b, sidx_acc *acc,
                                hs_error *err)
{
    for (int64_t i = a; i < b; i++) {
        const uint8_t *p;
        size_t n;
        posting_span(ix, i, &p, &n);
        if (n == 4) {
            uint32_t pos = sidx_rd32(p);
            if (pos >= (uint64_t)ix->info.n_rows)
                return HS_CORRUPT_AT(err, "scalar index: value %lld is at row %u of %lld",
                                     (long long)i, pos, (long long)ix->info.n_rows);
            HS_TRY(sidx_acc_add_pos(acc, &pos, 1, err));
            continue;
        }
        if (sidx_is_dp(p, n)) {
            uint32_t *v;
            size_t m;
            HS_TRY(sidx_dp_decode(p, n, (uint64_t)ix->info.n_rows, &v, &m, err));
            hs_status st;
            if (m >= 2048) { /* sorted and long: roaring builds it fast, or_many merges it */
                roaring_bitmap_t *bm = sidx_roaring_of_sorted(v, m);
                st = bm ? sidx_acc_add_bitmap(acc, bm, err) : hs_err_nomem(err, m * 2);
            } else {
                st = sidx_acc_add_pos(acc, v, m, err);
            }
            hs_free(v);
            HS_TRY(st);
            continue;
        }
        roaring_bitmap_t *bm;
        HS_TRY(sidx_rb_load(p, n, (uint64_t)ix->info.n_rows, &bm, NULL, err));
        HS_TRY(sidx_acc_add_bitmap(acc, bm, err));
    }
    return HS_OK;
}

static int64_t posting_card(const sidx_index *ix, int64_t i)
{
    const uint8_t *p;
    size_t n;
    posting_span(ix, i, &p, &n);
    if (n == 4)
        return 1;
    return sidx_is_dp(p, n) ? (int64_t)sidx_rd32(p + 4) : (int64_t)sidx_rb_header_card(p, n);
}

int64_t sidx_inv_span_rows(const sidx_index *ix, int64_t a, int64_t b)
{
    int64_t n = b - a, sum = 0;
    if (n <= 256) {
        for (int64_t i = a; i < b; i++)
            sum += posting_card(ix, i);
        return sum;
    }
    /* long runs: 256 evenly spaced samples, scaled */
    for (int k = 0; k < 256; k++)
        sum += posting_card(ix, a + (int64_t)((double)k * (double)n / 256.0));
    return (int64_t)((double)sum * (double)n / 256.0);
}

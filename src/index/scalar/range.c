/*
 * index/scalar/range.c - the range kind: (value, position) pairs of the
 * non-null rows sorted by value (then position), cut into blocks of B pairs
 * (B in the header, 4096 when we write), with fences that let a lookup
 * touch only the blocks its range overlaps.
 *
 * Sections (the file layout around them is in sidx.c):
 *
 *   S1 fences   values table of 2 * n_blocks values: block b's first and
 *               last value at 2b and 2b + 1 (non-decreasing throughout)
 *   S2 offsets  n_blocks + 1 u64 offsets into S3, first 0, last = S3 length
 *   S3 blocks   block b spans [off[b], off[b+1]):
 *
 *     offset  size  field
 *          0     4  count: B, or the remainder in the last block
 *          4     1  vbits: I64/F64: bits per packed value delta (0..64); else 0
 *          5     1  pbits: bits per packed position (0..32)
 *          6     1  pmode: 0 = positions as (pos - pos_base);
 *                   1 = deltas (pos[i] - pos[i-1] - 1), pos[0] = pos_base
 *          7     1  0
 *          8     4  pos_base: the smallest (pmode 0) or first (pmode 1) position
 *         12     4  0
 *         16     8  key_base: I64/F64: the block's first order key; else 0
 *         24        values:
 *                     I64/F64  count deltas of consecutive order keys
 *                              (key[i] - key[i-1], the first 0), vbits
 *                              each, bit-packed LSB first, + 8 zero bytes
 *                              (none when vbits = 0)
 *                     I128     count * 16 bytes
 *                     BYTES    count + 1 u32 offsets relative to the bytes
 *                              that follow (first 0, non-decreasing), bytes
 *                   positions: count values of pbits, packed the same way
 *
 *   Order keys (sidx_int.h) map int64 and doubles to uint64 preserving
 *   order; a block's keys are sorted, so their deltas are small when the
 *   values are dense (ids, timestamps, dates: a few bits per value).
 *   Positions take log2(n_rows) bits, or a bit or two when the column is
 *   sorted (pmode 1, chosen when the block's positions increase and it is
 *   smaller).
 *
 * Lookup: two binary searches over the fences give the blocks a probe can
 * touch; a block whose first and last values both match is taken whole
 * (positions only), a boundary block is decoded and binary-searched for its
 * matching run (values are sorted inside a block too).  Blocks are
 * validated when read; positions must be < n_rows.
 */
#include "index/scalar/sidx_int.h"

#include "base/mem.h"

#define BLK_HDR 24

static int64_t block_count(const sidx_index *ix, int64_t b)
{
    int64_t nonnull = ix->info.n_rows - ix->info.n_nulls;
    return b < ix->n_blocks - 1 ? ix->block_rows : nonnull - (int64_t)ix->block_rows * b;
}

/* ---- writing ---- */

static hs_status put_block(const sidx_sorted *s, int64_t j0, int64_t cnt, uint64_t *tmp,
                           hs_buf *out, hs_error *err)
{
    uint8_t h[BLK_HDR];
    memset(h, 0, sizeof h);
    const uint32_t *pos = s->pos + j0;
    uint32_t pmin = UINT32_MAX, pmax = 0, dmax = 0;
    bool rising = true;
    for (int64_t i = 0; i < cnt; i++) {
        pmin = pos[i] < pmin ? pos[i] : pmin;
        pmax = pos[i] > pmax ? pos[i] : pmax;
        if (i && pos[i] <= pos[i - 1])
            rising = false;
        else if (i)
            dmax |= pos[i] - pos[i - 1] - 1;
    }
    int pbits = sidx_bits_for(pmax - pmin), vbits = 0, pmode = 0;
    if (rising && sidx_bits_for(dmax) < pbits) {
        pmode = 1;
        pbits = sidx_bits_for(dmax);
    }
    uint64_t key_base = 0;
    if (s->keys) {
        uint64_t dk = 0;
        key_base = s->keys[j0];
        for (int64_t i = 1; i < cnt; i++)
            dk |= s->keys[j0 + i] - s->keys[j0 + i - 1];
        vbits = sidx_bits_for(dk);
    }
    sidx_wr32(h, (uint32_t)cnt);
    h[4] = (uint8_t)vbits;
    h[5] = (uint8_t)pbits;
    h[6] = (uint8_t)pmode;
    sidx_wr32(h + 8, pmode ? pos[0] : pmin);
    sidx_wr64(h + 16, key_base);
    if (hs_buf_append(out, h, sizeof h) != HS_OK)
        return hs_err_nomem(err, sizeof h);
    size_t at;
    if (s->keys) {
        tmp[0] = 0;
        for (int64_t i = 1; i < cnt; i++)
            tmp[i] = s->keys[j0 + i] - s->keys[j0 + i - 1];
        at = out->len;
        if (hs_buf_append_zeros(out, sidx_packed_size((size_t)cnt, vbits)) != HS_OK)
            return hs_err_nomem(err, (size_t)cnt * 8);
        sidx_pack(out->data + at, tmp, (size_t)cnt, vbits);
    } else {
        if (s->vk == TBL_V_BYTES) {
            uint64_t off = 0;
            for (int64_t i = 0; i <= cnt; i++) {
                if (off > UINT32_MAX)
                    return hs_err_set(err, HS_UNSUPPORTED, "scalar index: a range block of more "
                                      "than 4 GiB of values");
                if (hs_buf_put_u32le(out, (uint32_t)off) != HS_OK)
                    return hs_err_nomem(err, 4);
                if (i < cnt)
                    off += sidx_sorted_value_len(s, j0 + i);
            }
        }
        for (int64_t i = 0; i < cnt; i++)
            if (sidx_sorted_put_value(s, j0 + i, out) != HS_OK)
                return hs_err_nomem(err, 16);
    }
    for (int64_t i = 0; i < cnt; i++)
        tmp[i] = pmode ? (i ? pos[i] - pos[i - 1] - 1 : 0) : pos[i] - pmin;
    at = out->len;
    if (hs_buf_append_zeros(out, sidx_packed_size((size_t)cnt, pbits)) != HS_OK)
        return hs_err_nomem(err, (size_t)cnt * 4);
    sidx_pack(out->data + at, tmp, (size_t)cnt, pbits);
    return HS_OK;
}

hs_status sidx_range_write(const sidx_sorted *s, uint32_t block_rows, hs_buf *out,
                           size_t file_start, uint64_t sec[SIDX_N_SECTIONS][2], hs_error *err)
{
    int64_t nb = (s->n + block_rows - 1) / block_rows;
    int64_t *fences = hs_malloc((size_t)(2 * nb + 1) * sizeof *fences);
    uint64_t *tmp = hs_malloc((size_t)block_rows * sizeof *tmp);
    hs_status st = HS_OK;
    if (!fences || !tmp) {
        st = hs_err_nomem(err, (size_t)nb * 16 + block_rows * 8);
        goto done;
    }
    uint64_t fence_bytes = 0;
    for (int64_t b = 0; b < nb; b++) {
        int64_t j0 = b * block_rows, j1 = j0 + block_rows < s->n ? j0 + block_rows : s->n;
        fences[2 * b] = j0;
        fences[2 * b + 1] = j1 - 1;
        fence_bytes += sidx_sorted_value_len(s, j0) + sidx_sorted_value_len(s, j1 - 1);
    }
    if (fence_bytes > UINT32_MAX) {
        st = hs_err_set(err, HS_UNSUPPORTED, "scalar index: range fences of more than 4 GiB");
        goto done;
    }
    if (sidx_align8(out, file_start) != HS_OK)
        goto nomem;
    sec[SIDX_S_VALUES][0] = out->len - file_start;
    if (sidx_put_values(s, fences, 2 * nb, false, out) != HS_OK)
        goto nomem;
    sec[SIDX_S_VALUES][1] = out->len - file_start - sec[SIDX_S_VALUES][0];
    if (sidx_align8(out, file_start) != HS_OK)
        goto nomem;
    size_t offs_at = out->len;
    sec[SIDX_S_OFFSETS][0] = out->len - file_start;
    sec[SIDX_S_OFFSETS][1] = (uint64_t)(nb + 1) * 8;
    if (hs_buf_append_zeros(out, (size_t)(nb + 1) * 8) != HS_OK || sidx_align8(out, file_start))
        goto nomem;
    size_t data_at = out->len;
    sec[SIDX_S_DATA][0] = out->len - file_start;
    for (int64_t b = 0; b < nb; b++) {
        int64_t j0 = b * block_rows, cnt = j0 + block_rows < s->n ? block_rows : s->n - j0;
        if ((st = put_block(s, j0, cnt, tmp, out, err)) != HS_OK)
            goto done;
        sidx_wr64(out->data + offs_at + 8 * (size_t)(b + 1), out->len - data_at);
    }
    sec[SIDX_S_DATA][1] = out->len - data_at;
    goto done;
nomem:
    st = hs_err_nomem(err, (size_t)nb * 16);
done:
    hs_free(fences);
    hs_free(tmp);
    return st;
}

/* ---- reading ---- */

typedef struct rblock {
    int64_t count;
    int vbits, pbits, pmode;
    uint32_t pos_base;
    uint64_t key_base;
    const uint8_t *vals;       /* packed key deltas, I128 values, or BYTES offsets */
    const uint8_t *bytes;      /* BYTES: the value bytes */
    const uint8_t *pos;        /* packed positions */
    const uint64_t *keys;      /* I64/F64 after block_keys: count order keys */
} rblock;

/* Scratch for decoding one block (max_count entries each). */
typedef struct rscratch {
    uint64_t *keys;
    uint64_t *tmp;
    uint32_t *pos;
} rscratch;

static hs_status scratch_new(const sidx_index *ix, rscratch *sc, hs_error *err)
{
    int64_t nonnull = ix->info.n_rows - ix->info.n_nulls;
    size_t m = (size_t)(nonnull < (int64_t)ix->block_rows ? nonnull : (int64_t)ix->block_rows);
    m = m ? m : 1;
    sc->keys = hs_malloc(m * 8);
    sc->tmp = hs_malloc(m * 8);
    sc->pos = hs_malloc(m * 4);
    if (!sc->keys || !sc->tmp || !sc->pos) {
        hs_free(sc->keys);
        hs_free(sc->tmp);
        hs_free(sc->pos);
        return hs_err_nomem(err, m * 20);
    }
    return HS_OK;
}

static void scratch_free(rscratch *sc)
{
    hs_free(sc->keys);
    hs_free(sc->tmp);
    hs_free(sc->pos);
}

hs_status sidx_range_open(sidx_index *ix, hs_error *err)
{
    int64_t nb = ix->n_blocks;
    HS_TRY(sidx_vals_open(&ix->vals, ix->info.value_kind, ix->scale, 2 * nb,
                          ix->flags & SIDX_FLAG_WIDE, false, ix->sec[SIDX_S_VALUES],
                          ix->sec_n[SIDX_S_VALUES], "range fences", err));
    const uint8_t *o = ix->sec[SIDX_S_OFFSETS];
    if (ix->sec_n[SIDX_S_OFFSETS] % 8 || ix->sec_n[SIDX_S_OFFSETS] / 8 != (uint64_t)nb + 1)
        return HS_CORRUPT_AT(err, "scalar index: block offsets: %zu bytes for %lld blocks",
                             ix->sec_n[SIDX_S_OFFSETS], (long long)nb);
    uint64_t prev = sidx_rd64(o);
    if (prev != 0)
        return HS_CORRUPT_AT(err, "scalar index: block offsets start at %llu",
                             (unsigned long long)prev);
    for (int64_t b = 1; b <= nb; b++) {
        uint64_t x = sidx_rd64(o + 8 * b);
        if (x < prev || x - prev < BLK_HDR || x > ix->sec_n[SIDX_S_DATA])
            return HS_CORRUPT_AT(err, "scalar index: block %lld spans [%llu, %llu) of %zu bytes",
                                 (long long)b - 1, (unsigned long long)prev,
                                 (unsigned long long)x, ix->sec_n[SIDX_S_DATA]);
        prev = x;
    }
    if (prev != ix->sec_n[SIDX_S_DATA])
        return HS_CORRUPT_AT(err, "scalar index: blocks end at %llu of %zu bytes",
                             (unsigned long long)prev, ix->sec_n[SIDX_S_DATA]);
    return HS_OK;
}

static hs_status block_open(const sidx_index *ix, int64_t b, rblock *k, hs_error *err)
{
    const uint8_t *o = ix->sec[SIDX_S_OFFSETS];
    uint64_t a = sidx_rd64(o + 8 * b), e = sidx_rd64(o + 8 * (b + 1));
    const uint8_t *p = ix->sec[SIDX_S_DATA] + a;
    size_t len = (size_t)(e - a), need;
    tbl_vkind vk = ix->info.value_kind;
    bool numeric = vk == TBL_V_I64 || vk == TBL_V_F64;
    memset(k, 0, sizeof *k);
    k->count = sidx_rd32(p);
    k->vbits = p[4];
    k->pbits = p[5];
    k->pmode = p[6];
    k->pos_base = sidx_rd32(p + 8);
    k->key_base = sidx_rd64(p + 16);
    if (k->count != block_count(ix, b) || k->vbits > (numeric ? 64 : 0) || k->pbits > 32 ||
        k->pmode > 1 || p[7] || sidx_rd32(p + 12) || (!numeric && k->key_base))
        return HS_CORRUPT_AT(err, "scalar index: block %lld: bad header (count %lld, bits %d/%d)",
                             (long long)b, (long long)k->count, k->vbits, k->pbits);
    size_t cnt = (size_t)k->count, at = BLK_HDR;
    k->vals = p + at;
    if (numeric) {
        need = sidx_packed_size(cnt, k->vbits);
    } else if (vk == TBL_V_I128) {
        need = 16 * cnt;
    } else {
        need = 4 * (cnt + 1);
        if (len - at < need)
            goto short_block;
        uint32_t prev = sidx_rd32(k->vals);
        if (prev != 0)
            goto bad_offsets;
        for (size_t i = 1; i <= cnt; i++) {
            uint32_t x = sidx_rd32(k->vals + 4 * i);
            if (x < prev)
                goto bad_offsets;
            prev = x;
        }
        k->bytes = k->vals + need;
        need += prev;
    }
    if (len - at < need)
        goto short_block;
    at += need;
    k->pos = p + at;
    need = sidx_packed_size(cnt, k->pbits);
    if (len - at != need)
        goto short_block;
    return HS_OK;
short_block:
    return HS_CORRUPT_AT(err, "scalar index: block %lld: %zu bytes do not hold its %lld values",
                         (long long)b, len, (long long)k->count);
bad_offsets:
    return HS_CORRUPT_AT(err, "scalar index: block %lld: value offsets out of order", (long long)b);
}

static void block_value(const sidx_index *ix, const rblock *k, int64_t i, tbl_val *v)
{
    v->kind = ix->info.value_kind;
    switch (v->kind) {
    case TBL_V_I64: v->i = sidx_key_i64(k->keys[i]); break;
    case TBL_V_F64: v->f = sidx_key_f64(k->keys[i]); break;
    case TBL_V_I128:
        memcpy(&v->d, k->vals + 16 * i, 16);
        v->scale = ix->scale;
        break;
    default: {
        uint32_t a = sidx_rd32(k->vals + 4 * i), b = sidx_rd32(k->vals + 4 * (i + 1));
        v->p = k->bytes + a;
        v->n = b - a;
        break;
    }
    }
}

static int64_t block_lower(const sidx_index *ix, const rblock *k, int64_t lo, int64_t hi,
                           const sidx_probe *pr, int t)
{
    tbl_val v;
    memset(&v, 0, sizeof v);
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        block_value(ix, k, mid, &v);
        if (sidx_probe_c(pr, &v) >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* First block b in [0, n_blocks) whose fence (which: 0 first, 1 last value)
 * has c >= t. */
static int64_t fence_lower(const sidx_index *ix, int which, const sidx_probe *pr, int t)
{
    int64_t lo = 0, hi = ix->n_blocks;
    tbl_val v;
    memset(&v, 0, sizeof v);
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        sidx_vals_get(&ix->vals, 2 * mid + which, &v);
        if (sidx_probe_c(pr, &v) >= t)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The run [*lo, *hi) of block b (opened into k) that the probe selects. */
static void block_run(const sidx_index *ix, int64_t b, rblock *k, const sidx_probe *pr,
                      rscratch *sc, int64_t *lo, int64_t *hi)
{
    tbl_val v;
    memset(&v, 0, sizeof v);
    sidx_vals_get(&ix->vals, 2 * b, &v);
    int cmin = sidx_probe_c(pr, &v);
    sidx_vals_get(&ix->vals, 2 * b + 1, &v);
    int cmax = sidx_probe_c(pr, &v);
    if (cmin >= pr->clo && cmax <= pr->chi) {
        *lo = 0;
        *hi = k->count;
        return;
    }
    if (ix->info.value_kind == TBL_V_I64 || ix->info.value_kind == TBL_V_F64) {
        size_t n = (size_t)k->count;
        sidx_unpack(k->vals, n, k->vbits, sc->keys);
        uint64_t cur = k->key_base;
        for (size_t i = 0; i < n; i++)
            sc->keys[i] = cur += sc->keys[i];
        k->keys = sc->keys;
    }
    *lo = block_lower(ix, k, 0, k->count, pr, pr->clo);
    *hi = block_lower(ix, k, *lo, k->count, pr, pr->chi + 1);
}

/* Decodes positions [lo, hi) of block b into sc->pos[lo..hi) (pmode 1
 * decodes from 0); HS_CORRUPT past n_rows. */
static hs_status block_positions(const sidx_index *ix, int64_t b, const rblock *k, rscratch *sc,
                                 size_t lo, size_t hi, hs_error *err)
{
    uint64_t lim = (uint64_t)ix->info.n_rows, cur = k->pos_base;
    if (k->pmode)
        lo = 0;
    for (size_t i = lo; i < hi; i++)
        sc->tmp[i] = sidx_unpack1(k->pos, i, k->pbits);
    for (size_t i = lo; i < hi; i++) {
        if (k->pmode)
            cur = i ? cur + 1 + sc->tmp[i] : cur;
        else
            cur = (uint64_t)k->pos_base + sc->tmp[i];
        if (cur >= lim)
            return HS_CORRUPT_AT(err, "scalar index: block %lld holds row %llu of %llu",
                                 (long long)b, (unsigned long long)cur, (unsigned long long)lim);
        sc->pos[i] = (uint32_t)cur;
    }
    return HS_OK;
}

hs_status sidx_range_collect(const sidx_index *ix, const sidx_probe *pr, sidx_acc *acc,
                             hs_error *err)
{
    int64_t b0 = fence_lower(ix, 1, pr, pr->clo), b1 = fence_lower(ix, 0, pr, pr->chi + 1);
    if (b0 >= b1)
        return HS_OK;
    rscratch sc;
    HS_TRY(scratch_new(ix, &sc, err));
    hs_status st = HS_OK;
    for (int64_t b = b0; b < b1 && st == HS_OK; b++) {
        rblock k;
        int64_t lo, hi;
        st = block_open(ix, b, &k, err);
        if (st != HS_OK)
            break;
        block_run(ix, b, &k, pr, &sc, &lo, &hi);
        if (lo < hi)
            st = block_positions(ix, b, &k, &sc, (size_t)lo, (size_t)hi, err);
        if (st == HS_OK && lo < hi)
            st = sidx_acc_add_pos(acc, sc.pos + lo, (size_t)(hi - lo), err);
    }
    scratch_free(&sc);
    return st;
}

int64_t sidx_range_estimate(const sidx_index *ix, const sidx_probe *pr)
{
    int64_t b0 = fence_lower(ix, 1, pr, pr->clo), b1 = fence_lower(ix, 0, pr, pr->chi + 1);
    int64_t sum = 0;
    rscratch sc;
    if (b0 < b1 && scratch_new(ix, &sc, NULL) != HS_OK)
        return (b1 - b0) * (int64_t)ix->block_rows / 2;
    for (int64_t b = b0; b < b1; b++) {
        rblock k;
        int64_t lo, hi;
        if (b > b0 && b < b1 - 1) { /* inner blocks lie inside the range */
            sum += block_count(ix, b);
            continue;
        }
        if (block_open(ix, b, &k, NULL) != HS_OK) {
            sum += block_count(ix, b) / 2;
            continue;
        }
        block_run(ix, b, &k, pr, &sc, &lo, &hi);
        sum += hi - lo;
    }
    if (b0 < b1)
        scratch_free(&sc);
    return sum;
}

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
 *          7     1  vcodec: 0 = value area stored raw; 1 = zstd (I128/BYTES)
 *          8     4  pos_base: the smallest (pmode 0) or first (pmode 1) position
 *         12     4  vcodec 1: bytes of the raw value area (<= 64 MiB); else 0
 *         16     8  key_base: I64/F64: the block's first order key; else 0
 *         24        value area (raw form):
 *                     I64/F64  count deltas of consecutive order keys
 *                              (key[i] - key[i-1], the first 0), vbits
 *                              each, bit-packed LSB first, + 8 zero bytes
 *                              (none when vbits = 0)
 *                     I128     count * 16 bytes
 *                     BYTES    count + 1 u32 offsets relative to the bytes
 *                              that follow (first 0, non-decreasing), bytes
 *                   positions: count values of pbits, packed the same way;
 *                              they end the block, so the value area is
 *                              what lies between byte 24 and them
 *
 *   Order keys (sidx_int.h) map int64 and doubles to uint64 preserving
 *   order; a block's keys are sorted, so their deltas are small when the
 *   values are dense (ids, timestamps, dates: a few bits per value).
 *   Positions take log2(n_rows) bits, or a bit or two when the column is
 *   sorted (pmode 1, chosen when the block's positions increase and it is
 *   smaller).  Strings and decimals are zstd-compressed per block when that
 *   saves an eighth (sorted strings share prefixes and suffixes).
 *
 * Lookup: two binary searches over the fences give the blocks a probe can
 * touch; a block whose first and last values both match is taken whole
 * (positions only: its values are not even decompressed), a boundary block
 * is decoded and binary-searched for its matching run (values are sorted
 * inside a block too).  Blocks are validated when read; positions must be
 * < n_rows.
 */
#include "index/scalar/sidx_int.h"

#include "base/compress.h"
#include "base/mem.h"
#include "base/memlimit.h"

#include <zstd.h>

#define BLK_HDR 24
#define VRAW_MAX (64u << 20)

static int64_t block_count(const sidx_index *ix, int64_t b)
{
    int64_t nonnull = ix->info.n_rows - ix->info.n_nulls;
    return b < ix->n_blocks - 1 ? ix->block_rows : nonnull - (int64_t)ix->block_rows * b;
}

/* ---- writing ---- */

/* The raw value area of a non-numeric block, appended to v. */
static hs_status put_value_area(const sidx_sorted *s, int64_t j0, int64_t cnt, hs_buf *v,
                                hs_error *err)
{
    if (s->vk == PR_V_BYTES) {
        uint64_t off = 0;
        for (int64_t i = 0; i <= cnt; i++) {
            if (off > UINT32_MAX)
                return hs_err_set(err, HS_UNSUPPORTED, "scalar index: a range block of more "
                                  "than 4 GiB of values");
            if (hs_buf_put_u32le(v, (uint32_t)off) != HS_OK)
                return hs_err_nomem(err, 4);
            if (i < cnt)
                off += sidx_sorted_value_len(s, j0 + i);
        }
    }
    for (int64_t i = 0; i < cnt; i++)
        if (sidx_sorted_put_value(s, j0 + i, v) != HS_OK)
            return hs_err_nomem(err, 16);
    return HS_OK;
}

static hs_status put_block(const sidx_sorted *s, int64_t j0, int64_t cnt, uint64_t *tmp,
                           hs_buf *vraw, hs_buf *out, hs_error *err)
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
    size_t hdr_at = out->len, at;
    if (hs_buf_append(out, h, sizeof h) != HS_OK)
        return hs_err_nomem(err, sizeof h);
    if (s->keys) {
        tmp[0] = 0;
        for (int64_t i = 1; i < cnt; i++)
            tmp[i] = s->keys[j0 + i] - s->keys[j0 + i - 1];
        at = out->len;
        if (hs_buf_append_zeros(out, sidx_packed_size((size_t)cnt, vbits)) != HS_OK)
            return hs_err_nomem(err, (size_t)cnt * 8);
        sidx_pack(out->data + at, tmp, (size_t)cnt, vbits);
    } else {
        hs_buf_reset(vraw);
        HS_TRY(put_value_area(s, j0, cnt, vraw, err));
        at = out->len;
        bool packed = false;
        if (vraw->len >= 64 && vraw->len <= VRAW_MAX) {
            hs_status st = hs_compress(HS_CODEC_ZSTD, 1, vraw->data, vraw->len, out, err);
            if (st != HS_OK)
                return st;
            packed = out->len - at < vraw->len - vraw->len / 8;
            if (!packed)
                out->len = at;
        }
        if (packed) {
            out->data[hdr_at + 7] = 1;
            sidx_wr32(out->data + hdr_at + 12, (uint32_t)vraw->len);
        } else if (hs_buf_append(out, vraw->data, vraw->len) != HS_OK) {
            return hs_err_nomem(err, vraw->len);
        }
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
    hs_buf vraw = {0};
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
        if ((st = put_block(s, j0, cnt, tmp, &vraw, out, err)) != HS_OK)
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
    hs_buf_free(&vraw);
    return st;
}

/* ---- reading ---- */

typedef struct rblock {
    int64_t count;
    int vbits, pbits, pmode, vcodec;
    uint32_t pos_base, vraw;
    uint64_t key_base;
    const uint8_t *area;       /* the value area as stored */
    size_t area_n;
    const uint8_t *pos;        /* packed positions */
    /* after block_values: */
    const uint64_t *keys;      /* I64/F64: count order keys */
    const uint8_t *vals;       /* I128: count * 16 bytes; BYTES: count + 1 offsets */
    const uint8_t *bytes;      /* BYTES: the value bytes */
} rblock;

/* Scratch for decoding blocks (max_count entries each; vbuf grows). */
typedef struct rscratch {
    uint64_t *keys;
    uint32_t *pos;
    uint8_t *vbuf;
    size_t vcap;
    int64_t cached;            /* block whose values are decoded in k, or -1 */
    rblock k;
} rscratch;

static hs_status scratch_new(const sidx_index *ix, rscratch *sc, hs_error *err)
{
    int64_t nonnull = ix->info.n_rows - ix->info.n_nulls;
    size_t m = (size_t)(nonnull < (int64_t)ix->block_rows ? nonnull : (int64_t)ix->block_rows);
    m = m ? m : 1;
    memset(sc, 0, sizeof *sc);
    sc->cached = -1;
    sc->keys = hs_malloc(m * 8);
    sc->pos = hs_malloc(m * 4);
    if (!sc->keys || !sc->pos) {
        hs_free(sc->keys);
        hs_free(sc->pos);
        return hs_err_nomem(err, m * 12);
    }
    return HS_OK;
}

static void scratch_free(rscratch *sc)
{
    hs_free(sc->keys);
    hs_free(sc->pos);
    hs_free(sc->vbuf);
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

/* Parses block b's header and locates its areas (values are decoded by
 * block_values, only when needed). */
static hs_status block_open(const sidx_index *ix, int64_t b, rblock *k, hs_error *err)
{
    const uint8_t *o = ix->sec[SIDX_S_OFFSETS];
    uint64_t a = sidx_rd64(o + 8 * b), e = sidx_rd64(o + 8 * (b + 1));
    const uint8_t *p = ix->sec[SIDX_S_DATA] + a;
    size_t len = (size_t)(e - a);
    pr_vkind vk = ix->info.value_kind;
    bool numeric = vk == PR_V_I64 || vk == PR_V_F64;
    memset(k, 0, sizeof *k);
    k->count = sidx_rd32(p);
    k->vbits = p[4];
    k->pbits = p[5];
    k->pmode = p[6];
    k->vcodec = p[7];
    k->pos_base = sidx_rd32(p + 8);
    k->vraw = sidx_rd32(p + 12);
    k->key_base = sidx_rd64(p + 16);
    if (k->count != block_count(ix, b) || k->vbits > (numeric ? 64 : 0) || k->pbits > 32 ||
        k->pmode > 1 || k->vcodec > (numeric ? 0 : 1) || (k->vcodec ? k->vraw > VRAW_MAX
                                                                     : k->vraw != 0) ||
        (!numeric && k->key_base))
        return HS_CORRUPT_AT(err, "scalar index: block %lld: bad header (count %lld, bits %d/%d, "
                             "codec %d)", (long long)b, (long long)k->count, k->vbits, k->pbits,
                             k->vcodec);
    size_t psize = sidx_packed_size((size_t)k->count, k->pbits);
    if (len - BLK_HDR < psize)
        return HS_CORRUPT_AT(err, "scalar index: block %lld: %zu bytes do not hold %lld positions",
                             (long long)b, len, (long long)k->count);
    k->area = p + BLK_HDR;
    k->area_n = len - BLK_HDR - psize;
    k->pos = k->area + k->area_n;
    if (numeric && k->area_n != sidx_packed_size((size_t)k->count, k->vbits))
        return HS_CORRUPT_AT(err, "scalar index: block %lld: value area of %zu bytes for %lld "
                             "values of %d bits", (long long)b, k->area_n, (long long)k->count,
                             k->vbits);
    return HS_OK;
}

/* Decodes (and for strings, decompresses and checks) block b's values. */
static hs_status block_values(const sidx_index *ix, int64_t b, rblock *k, rscratch *sc,
                              hs_error *err)
{
    size_t n = (size_t)k->count;
    pr_vkind vk = ix->info.value_kind;
    if (vk == PR_V_I64 || vk == PR_V_F64) {
        sidx_unpack(k->area, n, k->vbits, sc->keys);
        uint64_t cur = k->key_base;
        for (size_t i = 0; i < n; i++)
            sc->keys[i] = cur += sc->keys[i];
        k->keys = sc->keys;
        return HS_OK;
    }
    const uint8_t *v = k->area;
    size_t vn = k->area_n;
    if (k->vcodec) {
        /* The claimed size is checked before it is allocated: it must be the
         * size the zstd frame itself records, and within the decode memory
         * limit of the index file (a few bytes claiming 64 MiB allocated it). */
        unsigned long long fsize = ZSTD_getFrameContentSize(v, vn);
        if (fsize != (unsigned long long)k->vraw)
            return HS_CORRUPT_AT(err, "scalar index: block %lld: values claim %u bytes, their "
                                 "zstd frame %s", (long long)b, k->vraw,
                                 fsize == ZSTD_CONTENTSIZE_ERROR ? "is not valid"
                                 : fsize == ZSTD_CONTENTSIZE_UNKNOWN ? "records no size"
                                                                     : "records another size");
        hs_decode_budget budget;
        hs_decode_budget_init(&budget, ix->size);
        HS_TRY(HS_DECODE_CHARGE(&budget, k->vraw, err, "scalar index"));
        if (sc->vcap < k->vraw) {
            uint8_t *nb = hs_realloc(sc->vbuf, k->vraw);
            if (!nb)
                return hs_err_nomem(err, k->vraw);
            sc->vbuf = nb;
            sc->vcap = k->vraw;
        }
        hs_error derr = {0};
        hs_status st = hs_decompress(HS_CODEC_ZSTD, v, vn, sc->vbuf, k->vraw, &derr);
        if (st == HS_NOMEM)
            return hs_err_nomem(err, k->vraw);
        if (st != HS_OK)
            return HS_CORRUPT_AT(err, "scalar index: block %lld: %s", (long long)b, derr.msg);
        v = sc->vbuf;
        vn = k->vraw;
    }
    if (vk == PR_V_I128) {
        if (vn != 16 * n)
            return HS_CORRUPT_AT(err, "scalar index: block %lld: %zu bytes for %zu decimals",
                                 (long long)b, vn, n);
        k->vals = v;
        return HS_OK;
    }
    if (vn / 4 < n + 1)
        return HS_CORRUPT_AT(err, "scalar index: block %lld: %zu bytes cannot hold %zu offsets",
                             (long long)b, vn, n + 1);
    bool ok = sidx_rd32(v) == 0;
    uint32_t prev = 0;
    for (size_t i = 1; ok && i <= n; i++) {
        uint32_t x = sidx_rd32(v + 4 * i);
        ok = x >= prev;
        prev = x;
    }
    if (!ok || prev != vn - 4 * (n + 1))
        return HS_CORRUPT_AT(err, "scalar index: block %lld: value offsets out of order or out "
                             "of bounds", (long long)b);
    k->vals = v;
    k->bytes = v + 4 * (n + 1);
    return HS_OK;
}

static void block_value(const sidx_index *ix, const rblock *k, int64_t i, pr_val *v)
{
    v->kind = ix->info.value_kind;
    switch (v->kind) {
    case PR_V_I64: v->i = sidx_key_i64(k->keys[i]); break;
    case PR_V_F64: v->f = sidx_key_f64(k->keys[i]); break;
    case PR_V_I128:
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
    pr_val v;
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
    pr_val v;
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

/* Global index, in the sorted pair order, of the first pair whose c >= t
 * (n_nonnull when none).  Decodes at most one block's values (cached in sc
 * for the next bound). */
static hs_status range_bound(const sidx_index *ix, const sidx_probe *pr, int t, rscratch *sc,
                             int64_t *out, hs_error *err)
{
    int64_t b = fence_lower(ix, 1, pr, t);
    if (b >= ix->n_blocks) {
        *out = ix->info.n_rows - ix->info.n_nulls;
        return HS_OK;
    }
    pr_val v;
    memset(&v, 0, sizeof v);
    sidx_vals_get(&ix->vals, 2 * b, &v);
    if (sidx_probe_c(pr, &v) >= t) {
        *out = b * (int64_t)ix->block_rows;
        return HS_OK;
    }
    if (sc->cached != b) {
        sc->cached = -1;
        HS_TRY(block_open(ix, b, &sc->k, err));
        HS_TRY(block_values(ix, b, &sc->k, sc, err));
        sc->cached = b;
    }
    *out = b * (int64_t)ix->block_rows + block_lower(ix, &sc->k, 0, sc->k.count, pr, t);
    return HS_OK;
}

/* Decodes positions [lo, hi) of block b into sc->pos[lo..hi) (pmode 1
 * decodes from 0); HS_CORRUPT past n_rows. */
static hs_status block_positions(const sidx_index *ix, int64_t b, const rblock *k, rscratch *sc,
                                 size_t lo, size_t hi, hs_error *err)
{
    uint64_t lim = (uint64_t)ix->info.n_rows, cur = k->pos_base;
    if (!k->pmode) {
        /* one pass, no branch per position: the largest offset is checked
         * once at the end (a lookup of half a file's rows decodes them all:
         * this loop was most of a filtered vector search's preparation) */
        uint64_t most = 0;
        const uint8_t *p = k->pos;
        int bits = k->pbits;
        for (size_t i = lo; i < hi; i++) {
            uint64_t x = sidx_unpack1(p, i, bits);
            most = x > most ? x : most;
            sc->pos[i] = (uint32_t)(cur + x);
        }
        if (lo < hi && cur + most >= lim)
            return HS_CORRUPT_AT(err, "scalar index: block %lld holds row %llu of %llu",
                                 (long long)b, (unsigned long long)(cur + most),
                                 (unsigned long long)lim);
        return HS_OK;
    }
    lo = 0;
    for (size_t i = lo; i < hi; i++) {
        cur = i ? cur + 1 + sidx_unpack1(k->pos, i, k->pbits) : cur;
        if (cur >= lim)
            return HS_CORRUPT_AT(err, "scalar index: block %lld holds row %llu of %llu",
                                 (long long)b, (unsigned long long)cur, (unsigned long long)lim);
        sc->pos[i] = (uint32_t)cur;
    }
    return HS_OK;
}

hs_status sidx_range_span(const sidx_index *ix, const sidx_probe *pr, int64_t *lo, int64_t *hi,
                          hs_error *err)
{
    rscratch sc;
    HS_TRY(scratch_new(ix, &sc, err));
    hs_status st = range_bound(ix, pr, pr->clo, &sc, lo, err);
    if (st == HS_OK)
        st = range_bound(ix, pr, pr->chi + 1, &sc, hi, err);
    scratch_free(&sc);
    if (st == HS_OK && *hi < *lo)
        *hi = *lo; /* only a damaged file gets here */
    return st;
}

/* Sets the bits of positions [lo, hi) of block b in dense (n_rows bits):
 * decoded and set in one pass, no position array in between (a lookup of
 * half a file's rows sets them all: this was most of a filtered vector
 * search's preparation).  Byte-aligned widths read whole words; every
 * position is checked against n_rows before its bit is set. */
static hs_status block_set_bits(const sidx_index *ix, int64_t b, const rblock *k, size_t lo,
                                size_t hi, uint64_t *dense, hs_error *err)
{
    uint64_t lim = (uint64_t)ix->info.n_rows, cur = k->pos_base;
    const uint8_t *p = k->pos;
    int bits = k->pbits;
#define SET_OR_FAIL(v)                                                                   \
    do {                                                                                 \
        uint64_t v_ = (v);                                                               \
        if (v_ >= lim)                                                                   \
            goto bad;                                                                    \
        dense[v_ >> 6] |= 1ull << (v_ & 63);                                             \
    } while (0)
    if (!k->pmode) {
        if (bits == 16) {
            for (size_t i = lo; i < hi; i++)
                SET_OR_FAIL(cur + sidx_rd16(p + 2 * i));
        } else if (bits == 8) {
            for (size_t i = lo; i < hi; i++)
                SET_OR_FAIL(cur + p[i]);
        } else if (bits == 32) {
            for (size_t i = lo; i < hi; i++)
                SET_OR_FAIL(cur + sidx_rd32(p + 4 * i));
        } else {
            for (size_t i = lo; i < hi; i++)
                SET_OR_FAIL(cur + sidx_unpack1(p, i, bits));
        }
        return HS_OK;
    }
    for (size_t i = 0; i < hi; i++) {   /* deltas: decoded from the block's start */
        cur = i ? cur + 1 + sidx_unpack1(p, i, bits) : cur;
        if (cur >= lim)
            goto bad;
        if (i >= lo)
            dense[cur >> 6] |= 1ull << (cur & 63);
    }
    return HS_OK;
#undef SET_OR_FAIL
bad:
    return HS_CORRUPT_AT(err, "scalar index: block %lld holds a row past %llu", (long long)b,
                         (unsigned long long)lim);
}

hs_status sidx_range_collect_span(const sidx_index *ix, int64_t lo, int64_t hi, sidx_acc *acc,
                                  hs_error *err)
{
    if (lo >= hi)
        return HS_OK;
    uint64_t *dense;
    HS_TRY(sidx_acc_dense_for(acc, (uint64_t)(hi - lo), &dense, err));
    if (dense) {
        int64_t B = ix->block_rows;
        for (int64_t b = lo / B; b <= (hi - 1) / B; b++) {
            rblock k;
            HS_TRY(block_open(ix, b, &k, err));
            size_t from = (size_t)(lo > b * B ? lo - b * B : 0);
            size_t to = (size_t)(hi - b * B < k.count ? hi - b * B : k.count);
            if (from < to)
                HS_TRY(block_set_bits(ix, b, &k, from, to, dense, err));
        }
        return HS_OK;
    }
    rscratch sc;
    HS_TRY(scratch_new(ix, &sc, err));
    hs_status st = HS_OK;
    int64_t B = ix->block_rows;
    for (int64_t b = lo / B; b <= (hi - 1) / B && st == HS_OK; b++) {
        rblock k;
        st = block_open(ix, b, &k, err);
        if (st != HS_OK)
            break;
        size_t from = (size_t)(lo > b * B ? lo - b * B : 0);
        size_t to = (size_t)(hi - b * B < k.count ? hi - b * B : k.count);
        st = block_positions(ix, b, &k, &sc, from, to, err);
        if (st == HS_OK && from < to)
            st = sidx_acc_add_pos(acc, sc.pos + from, to - from, err);
    }
    scratch_free(&sc);
    return st;
}

/*
 * base/keyfilter.c - runtime join filters over integer keys (keyfilter.h).
 *
 * Choice of structure at build time: the range [min, max] from one pass;
 * a bitmap of the range when it needs no more than 32 bits a key (or 1M
 * bits), else a split-block bloom filter of 16 bits a key rounded up to a
 * power of two of 32-byte blocks, capped at HS_KEYFILTER_MAX_BYTES.
 *
 * The bloom filter (the layout of Parquet's SBBF): a key's 64-bit hash
 * (a multiply-xorshift mix of the key) picks a block with its high 32 bits
 * and, with its low 32 bits times eight odd salts, one bit in each of the
 * block's eight 32-bit words.  A probe reads one 32-byte block.
 */
#include "base/keyfilter.h"
#include "base/mem.h"

#include <string.h>

static const uint32_t SALT[8] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                 0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};

static inline uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint32_t *block_of(const hs_keyfilter *f, uint64_t h)
{
    uint64_t b = ((h >> 32) * f->n_blocks) >> 32;
    return (uint32_t *)(f->bits + b * 4);
}

static void bloom_add(hs_keyfilter *f, int64_t key)
{
    uint64_t h = mix64((uint64_t)key);
    uint32_t *w = block_of(f, h);
    for (int i = 0; i < 8; i++)
        w[i] |= 1U << (((uint32_t)h * SALT[i]) >> 27);
}

static inline bool bloom_has(const hs_keyfilter *f, int64_t key)
{
    uint64_t h = mix64((uint64_t)key);
    const uint32_t *w = block_of(f, h);
    uint32_t miss = 0;
    for (int i = 0; i < 8; i++)
        miss |= ~w[i] & (1U << (((uint32_t)h * SALT[i]) >> 27));
    return miss == 0;
}

hs_status hs_keyfilter_build(const int64_t *keys, int64_t n, hs_keyfilter **out, hs_error *err)
{
    *out = NULL;
    hs_keyfilter *f = hs_calloc(1, sizeof *f);
    if (!f)
        return hs_err_nomem(err, sizeof *f);
    f->n_keys = n < 0 ? 0 : n;
    if (f->n_keys == 0) {
        *out = f;
        return HS_OK;
    }
    int64_t lo = keys[0], hi = keys[0];
    for (int64_t i = 1; i < n; i++) {
        lo = keys[i] < lo ? keys[i] : lo;
        hi = keys[i] > hi ? keys[i] : hi;
    }
    f->min = lo;
    f->max = hi;
    f->kind = HS_KEYFILTER_RANGE;
    uint64_t range = (uint64_t)hi - (uint64_t)lo;   /* values - 1, no overflow */
    uint64_t cap = (uint64_t)HS_KEYFILTER_MAX_BYTES * 8;
    uint64_t bitmap_bits = (uint64_t)n * 32 > ((uint64_t)1 << 20) ? (uint64_t)n * 32
                                                                   : (uint64_t)1 << 20;
    uint64_t bloom_bits = (uint64_t)n * 16;
    bitmap_bits = bitmap_bits > cap ? cap : bitmap_bits;
    bloom_bits = bloom_bits > cap ? cap : bloom_bits;
    if (range < bitmap_bits) {
        uint64_t words = range / 64 + 1;
        if ((f->bits = hs_calloc(words, sizeof *f->bits))) {
            f->kind = HS_KEYFILTER_BITMAP;
            for (int64_t i = 0; i < n; i++) {
                uint64_t v = (uint64_t)keys[i] - (uint64_t)lo;
                f->bits[v >> 6] |= 1ULL << (v & 63);
            }
        }
    } else {
        uint64_t blocks = 1;
        while (blocks * 256 < bloom_bits)
            blocks <<= 1;
        if ((f->bits = hs_calloc(blocks * 4, sizeof *f->bits))) {
            f->kind = HS_KEYFILTER_BLOOM;
            f->n_blocks = blocks;
            for (int64_t i = 0; i < n; i++)
                bloom_add(f, keys[i]);
        }
    }
    if (!f->bits) {
        hs_free(f);
        return hs_err_nomem(err, (size_t)(bitmap_bits / 8));
    }
    *out = f;
    return HS_OK;
}

void hs_keyfilter_free(hs_keyfilter *f)
{
    if (!f)
        return;
    hs_free(f->bits);
    hs_free(f);
}

static inline bool may_contain(const hs_keyfilter *f, int64_t key)
{
    if (f->kind == HS_KEYFILTER_EMPTY || key < f->min || key > f->max)
        return false;
    if (f->kind == HS_KEYFILTER_BITMAP) {
        uint64_t v = (uint64_t)key - (uint64_t)f->min;
        return (f->bits[v >> 6] >> (v & 63)) & 1;
    }
    if (f->kind == HS_KEYFILTER_BLOOM)
        return bloom_has(f, key);
    return true;
}

bool hs_keyfilter_may_contain(const hs_keyfilter *f, int64_t key) { return may_contain(f, key); }

int64_t hs_keyfilter_apply(const hs_keyfilter *f, const void *values, int width, int64_t n,
                           uint8_t *sel)
{
    int64_t k = 0;
    if (width == 4) {
        const int32_t *v = values;
        for (int64_t i = 0; i < n; i++)
            k += sel[i] = sel[i] && may_contain(f, v[i]);
    } else {
        const int64_t *v = values;
        for (int64_t i = 0; i < n; i++)
            k += sel[i] = sel[i] && may_contain(f, v[i]);
    }
    return k;
}

int64_t hs_keyfilter_bytes(const hs_keyfilter *f)
{
    if (!f || !f->bits)
        return 0;
    if (f->kind == HS_KEYFILTER_BLOOM)
        return (int64_t)f->n_blocks * 32;
    return (int64_t)(((uint64_t)f->max - (uint64_t)f->min) / 64 + 1) * 8;
}

const char *hs_keyfilter_kind_name(const hs_keyfilter *f)
{
    static const char *const names[] = {"empty", "range", "bitmap", "bloom"};
    return f ? names[f->kind] : "none";
}

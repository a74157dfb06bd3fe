/*
 * parquet/encoding.c - Parquet value and level encodings, both directions.
 *
 * Byte formats (all integers little-endian; "uvarint" = ULEB128 of at most 10
 * bytes; "zigzag" = uvarint of (x << 1) ^ (x >> 63)):
 *
 *   PLAIN            fixed types: the values back to back (INT96 12 bytes, FLBA
 *                    type_length bytes); BOOLEAN: bits, LSB first, ceil(n/8) bytes;
 *                    BYTE_ARRAY: per value a u32 length then the bytes.
 *   RLE/bit-packed   a sequence of runs, each starting with a uvarint header h:
 *   hybrid             h = count << 1        RLE run: one value in ceil(bw/8) bytes
 *                      h = groups << 1 | 1   bit-packed run of groups*8 values,
 *                                            groups*bw bytes, LSB first
 *                    The last bit-packed group may be padded past the values the
 *                    page holds; its bytes may even be cut short, as long as the
 *                    values actually requested are present.  bw 0 = all zeros.
 *   levels (v1)      u32 byte length, then the hybrid (bw = bit width of max level);
 *                    v2 pages: the hybrid without the prefix.  Deprecated
 *                    BIT_PACKED levels: MSB-first packing, ceil(n*bw/8) bytes.
 *   dict indices     1 byte bit width (<= 32), then the hybrid.
 *   BOOLEAN RLE      u32 byte length, then the hybrid with bw 1.
 *   DELTA_BINARY_    header: uvarint block size, uvarint miniblocks per block,
 *   PACKED             uvarint total count, zigzag first value; then blocks:
 *                      zigzag min delta, one bit-width byte per miniblock, the
 *                      miniblocks (block/miniblocks values each, bit-packed).
 *                    value[i] = value[i-1] + min delta + packed (wrapping, in the
 *                    type's width).  Miniblocks after the last value may be absent
 *                    and their widths are not checked; the stream ends after the
 *                    (full) miniblock holding the last value.
 *   DELTA_LENGTH_    DELTA_BINARY_PACKED lengths, then the bytes back to back.
 *   BYTE_ARRAY
 *   DELTA_BYTE_      DELTA_BINARY_PACKED prefix lengths, then the suffixes as
 *   ARRAY              DELTA_LENGTH_BYTE_ARRAY; value = previous[0..prefix) + suffix.
 *   BYTE_STREAM_     K streams of n bytes for a K-byte type: stream k holds byte k
 *   SPLIT              of every value.
 *
 * Decoding: every decoder takes (p, len), produces exactly n values or fails
 * with HS_CORRUPT (HS_CORRUPT_AT, message naming the encoding and the byte
 * offset), and never reads outside [p, p + len).  Bit unpacking works on groups
 * of 8 values (bw bytes) with 64-bit loads; one specialised loop per bit width
 * (the switch in unpack_groups_*) so shifts and masks are constants.  A group
 * whose 64-bit loads could cross the end of the data is copied to a zeroed
 * local buffer first.
 *
 * Encoding: the hybrid encoder scans the whole input once, emitting RLE runs
 * for >= 8 repeats (and for a repeat that ends the input on a group boundary)
 * and bit-packed runs of whole groups of 8 otherwise, like parquet-mr/Arrow.
 * DELTA_BINARY_PACKED uses blocks of 128 values in 4 miniblocks of 32 (as
 * parquet-mr); unused miniblocks of the last block have width 0 and no bytes.
 *
 * Ownership: decoders write into caller-owned `out`; byte-array views point
 * into the page (PLAIN, DELTA_LENGTH_BYTE_ARRAY) or into `scratch`, which is
 * reset on entry (DELTA_BYTE_ARRAY, FLBA BYTE_STREAM_SPLIT), so views live until
 * the page buffer or scratch is reused.  Encoders append to caller-owned hs_buf.
 * Assumes a little-endian host (checked at compile time).
 */
#include "parquet/encoding.h"

#include "base/mem.h"

#include <limits.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "parquet/encoding.c assumes a little-endian host"
#endif

#define PQ_ALWAYS_INLINE static inline __attribute__((always_inline))
#define PQ_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Caps on declared sizes that no sane writer exceeds; they keep arithmetic in range. */
#define PQ_MAX_BP_GROUPS (1ULL << 40)          /* groups in one bit-packed run */
#define PQ_MAX_DBP_BLOCK (1ULL << 24)          /* DELTA_BINARY_PACKED block size */
#define PQ_MAX_DBP_TOTAL (1ULL << 40)          /* DELTA_BINARY_PACKED value count */
#define PQ_MAX_EXPANSION ((size_t)1 << 31)     /* DELTA_BYTE_ARRAY decoded bytes */

static const uint8_t pq_empty_bytes[1];        /* target of empty views */

static inline uint64_t ld64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline uint32_t ld32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline void st32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void st64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint64_t mask_bits(int bw) { return bw >= 64 ? ~0ULL : ((1ULL << bw) - 1); }

int pq_bit_width(uint64_t max) { return max ? 64 - __builtin_clzll(max) : 0; }

int pq_ptype_width(pq_ptype type, int32_t type_length)
{
    switch (type) {
    case PQ_BOOLEAN: return 1;
    case PQ_INT32: case PQ_FLOAT: return 4;
    case PQ_INT64: case PQ_DOUBLE: return 8;
    case PQ_INT96: return 12;
    case PQ_FIXED_LEN_BYTE_ARRAY: return type_length;
    case PQ_BYTE_ARRAY: return 0;
    }
    return 0;
}

static const char *enc_name(pq_encoding e)
{
    switch (e) {
    case PQ_ENC_PLAIN: return "PLAIN";
    case PQ_ENC_PLAIN_DICTIONARY: return "PLAIN_DICTIONARY";
    case PQ_ENC_RLE: return "RLE";
    case PQ_ENC_BIT_PACKED: return "BIT_PACKED";
    case PQ_ENC_DELTA_BINARY_PACKED: return "DELTA_BINARY_PACKED";
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY: return "DELTA_LENGTH_BYTE_ARRAY";
    case PQ_ENC_DELTA_BYTE_ARRAY: return "DELTA_BYTE_ARRAY";
    case PQ_ENC_RLE_DICTIONARY: return "RLE_DICTIONARY";
    case PQ_ENC_BYTE_STREAM_SPLIT: return "BYTE_STREAM_SPLIT";
    }
    return "unknown encoding";
}

static const char *type_name(pq_ptype t)
{
    static const char *names[] = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT",
                                  "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
    return (unsigned)t < 8 ? names[t] : "unknown type";
}

/* ------------------------------------------------------------------ varints */

/* Reads a uvarint at *pp (bounded by end); `what` and `base` name the position. */
static hs_status read_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *out,
                              const char *what, const uint8_t *base, hs_error *err)
{
    const uint8_t *p = *pp;
    if (HS_LIKELY(p < end && !(*p & 0x80))) {
        *out = *p;
        *pp = p + 1;
        return HS_OK;
    }
    uint64_t v = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
        if (p >= end)
            return HS_CORRUPT_AT(err, "%s at byte %zu: varint runs past the end of the data",
                                 what, (size_t)(*pp - base));
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return HS_CORRUPT_AT(err, "%s at byte %zu: varint overflows 64 bits", what,
                                 (size_t)(*pp - base));
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            *pp = p;
            return HS_OK;
        }
    }
    return HS_CORRUPT_AT(err, "%s at byte %zu: varint longer than 10 bytes", what,
                         (size_t)(*pp - base));
}

static inline uint64_t zigzag_decode_raw(uint64_t u) { return (u >> 1) ^ (0 - (u & 1)); }
static inline uint64_t zigzag_encode(int64_t x) { return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63); }

static inline size_t put_uvarint(uint8_t *o, uint64_t v)
{
    size_t k = 0;
    while (v >= 0x80) {
        o[k++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    o[k++] = (uint8_t)v;
    return k;
}

/* ------------------------------------------------------------ bit unpacking */

/* Bit widths as case lists for the specialising switches. */
#define PQ_BW_1_8(F) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8)
#define PQ_BW_9_16(F) F(9) F(10) F(11) F(12) F(13) F(14) F(15) F(16)
#define PQ_BW_17_32(F) F(17) F(18) F(19) F(20) F(21) F(22) F(23) F(24) \
    F(25) F(26) F(27) F(28) F(29) F(30) F(31) F(32)
#define PQ_BW_33_64(F) F(33) F(34) F(35) F(36) F(37) F(38) F(39) F(40) F(41) F(42) F(43) \
    F(44) F(45) F(46) F(47) F(48) F(49) F(50) F(51) F(52) F(53) F(54) F(55) F(56) F(57) \
    F(58) F(59) F(60) F(61) F(62) F(63) F(64)

/*
 * For each output type T: unpack8_T unpacks one group of 8 values of width bw
 * (bw bytes, LSB first) from `in`, which must have bw + 8 readable bytes;
 * unpack_run_T unpacks ng consecutive groups, copying any group too close to
 * `end` into a zeroed buffer first (a group cut short by `end` yields zeros for
 * its missing bits); unpack_groups_T dispatches on bw to a specialised copy.
 */
#define PQ_DEFINE_UNPACK(T, SUF)                                                         \
    PQ_ALWAYS_INLINE void unpack8_##SUF(const uint8_t *in, T *out, const int bw)          \
    {                                                                                    \
        _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {                            \
            unsigned bit = (unsigned)(i * bw), sh = bit & 7;                             \
            uint64_t w = ld64(in + (bit >> 3)) >> sh;                                    \
            if (bw + sh > 64)                                                            \
                w |= (uint64_t)in[(bit >> 3) + 8] << (64 - sh);                          \
            out[i] = (T)(w & mask_bits(bw));                                             \
        }                                                                                \
    }                                                                                    \
    PQ_ALWAYS_INLINE void unpack_run_##SUF(const uint8_t *in, const uint8_t *end, T *out, \
                                           int64_t ng, const int bw)                     \
    {                                                                                    \
        int64_t g = 0;                                                                   \
        for (; g < ng && end - in >= bw + 8; g++, in += bw, out += 8)                    \
            unpack8_##SUF(in, out, bw);                                                  \
        for (; g < ng; g++, in += bw, out += 8) {                                        \
            uint8_t tmp[80] = {0};                                                       \
            ptrdiff_t have = end - in;                                                   \
            if (have > 0)                                                                \
                memcpy(tmp, in, (size_t)PQ_MIN(have, (ptrdiff_t)bw));                    \
            unpack8_##SUF(tmp, out, bw);                                                 \
        }                                                                                \
    }

PQ_DEFINE_UNPACK(uint8_t, u8)
PQ_DEFINE_UNPACK(uint16_t, u16)
PQ_DEFINE_UNPACK(uint32_t, u32)
PQ_DEFINE_UNPACK(uint64_t, u64)

#define PQ_CASE_U8(K) case K: unpack_run_u8(in, end, out, ng, K); return;
#define PQ_CASE_U16(K) case K: unpack_run_u16(in, end, out, ng, K); return;
#define PQ_CASE_U32(K) case K: unpack_run_u32(in, end, out, ng, K); return;
#define PQ_CASE_U64(K) case K: unpack_run_u64(in, end, out, ng, K); return;

static void unpack_groups_u8(const uint8_t *in, const uint8_t *end, uint8_t *out, int64_t ng, int bw)
{
    switch (bw) { PQ_BW_1_8(PQ_CASE_U8) default: memset(out, 0, (size_t)ng * 8 * sizeof *out); }
}
static void unpack_groups_u16(const uint8_t *in, const uint8_t *end, uint16_t *out, int64_t ng, int bw)
{
    switch (bw) {
    PQ_BW_1_8(PQ_CASE_U16) PQ_BW_9_16(PQ_CASE_U16)
    default: memset(out, 0, (size_t)ng * 8 * sizeof *out);
    }
}
static void unpack_groups_u32(const uint8_t *in, const uint8_t *end, uint32_t *out, int64_t ng, int bw)
{
    switch (bw) {
    PQ_BW_1_8(PQ_CASE_U32) PQ_BW_9_16(PQ_CASE_U32) PQ_BW_17_32(PQ_CASE_U32)
    default: memset(out, 0, (size_t)ng * 8 * sizeof *out);
    }
}
static void unpack_groups_u64(const uint8_t *in, const uint8_t *end, uint64_t *out, int64_t ng, int bw)
{
    switch (bw) {
    PQ_BW_1_8(PQ_CASE_U64) PQ_BW_9_16(PQ_CASE_U64) PQ_BW_17_32(PQ_CASE_U64)
    PQ_BW_33_64(PQ_CASE_U64)
    default: memset(out, 0, (size_t)ng * 8 * sizeof *out);
    }
}

/*
 * Packing, the inverse: pack8 writes 8 values of width bw as exactly bw bytes
 * (LSB first) with 64-bit stores; pack_groups dispatches on bw so each width
 * gets its own unrolled copy.  Values are masked to bw bits.
 */
PQ_ALWAYS_INLINE uint8_t *pack8(uint8_t *o, const uint64_t *v, const int bw)
{
    uint64_t acc = 0;
    int nb = 0;
    _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
        uint64_t x = v[i] & mask_bits(bw);
        acc |= x << nb;
        if (nb + bw >= 64) {
            st64(o, acc);
            o += 8;
            acc = nb ? x >> (64 - nb) : 0;
            nb = nb + bw - 64;
        } else {
            nb += bw;
        }
    }
    for (; nb > 0; nb -= 8, acc >>= 8)
        *o++ = (uint8_t)acc;
    return o;
}

PQ_ALWAYS_INLINE uint8_t *pack_run(uint8_t *o, const uint64_t *v, int64_t ng, const int bw)
{
    for (int64_t g = 0; g < ng; g++, v += 8)
        o = pack8(o, v, bw);
    return o;
}

#define PQ_CASE_PACK(K) case K: return pack_run(o, v, ng, K);

/* Appends ng groups of 8 values at width bw (0..64) to o; returns the new end. */
static uint8_t *pack_groups(uint8_t *o, const uint64_t *v, int64_t ng, int bw)
{
    switch (bw) {
    PQ_BW_1_8(PQ_CASE_PACK) PQ_BW_9_16(PQ_CASE_PACK) PQ_BW_17_32(PQ_CASE_PACK)
    PQ_BW_33_64(PQ_CASE_PACK)
    default: return o;
    }
}

/*
 * bp_extract_T: values [a, a + k) of a bit-packed region at `base` of which
 * `avail` bytes are present.  Fails (naming `what` and byte offset `pos`) when
 * the bytes of a requested value are missing.  Whole groups go straight into out.
 */
#define PQ_DEFINE_BP_EXTRACT(T, SUF)                                                      \
    static hs_status bp_extract_##SUF(const uint8_t *base, size_t avail, int bw, uint64_t a, \
                                      int64_t k, T *out, const char *what, size_t pos,     \
                                      hs_error *err)                                      \
    {                                                                                     \
        uint64_t need = ((a + (uint64_t)k) * (uint64_t)bw + 7) / 8;                       \
        if (HS_UNLIKELY(need > avail))                                                    \
            return HS_CORRUPT_AT(err,                                                     \
                                 "%s: bit-packed run at byte %zu needs %llu bytes for its " \
                                 "values, only %zu present",                              \
                                 what, pos, (unsigned long long)need, avail);             \
        const uint8_t *end = base + avail;                                                \
        T tmp[8];                                                                         \
        if (a & 7) {                                                                      \
            int64_t j = (int64_t)(a & 7), c = PQ_MIN(k, 8 - j);                           \
            unpack_groups_##SUF(base + (a >> 3) * bw, end, tmp, 1, bw);                   \
            memcpy(out, tmp + j, (size_t)c * sizeof(T));                                  \
            out += c, a += (uint64_t)c, k -= c;                                           \
        }                                                                                 \
        int64_t full = k >> 3;                                                            \
        if (full) {                                                                       \
            unpack_groups_##SUF(base + (a >> 3) * bw, end, out, full, bw);                \
            out += full * 8, a += (uint64_t)full * 8, k -= full * 8;                      \
        }                                                                                 \
        if (k) {                                                                          \
            unpack_groups_##SUF(base + (a >> 3) * bw, end, tmp, 1, bw);                   \
            memcpy(out, tmp, (size_t)k * sizeof(T));                                      \
        }                                                                                 \
        return HS_OK;                                                                     \
    }

PQ_DEFINE_BP_EXTRACT(uint8_t, u8)
PQ_DEFINE_BP_EXTRACT(uint16_t, u16)
PQ_DEFINE_BP_EXTRACT(uint32_t, u32)
PQ_DEFINE_BP_EXTRACT(uint64_t, u64)

/* One byte of bits (LSB first) to 8 bytes of 0/1: table built by the preprocessor. */
#define PQ_E(b) ((uint64_t)((b) & 1) | (uint64_t)((b) >> 1 & 1) << 8 |                    \
                 (uint64_t)((b) >> 2 & 1) << 16 | (uint64_t)((b) >> 3 & 1) << 24 |          \
                 (uint64_t)((b) >> 4 & 1) << 32 | (uint64_t)((b) >> 5 & 1) << 40 |          \
                 (uint64_t)((b) >> 6 & 1) << 48 | (uint64_t)((b) >> 7 & 1) << 56)
#define PQ_E4(n) PQ_E(n), PQ_E(n + 1), PQ_E(n + 2), PQ_E(n + 3)
#define PQ_E16(n) PQ_E4(n), PQ_E4(n + 4), PQ_E4(n + 8), PQ_E4(n + 12)
#define PQ_E64(n) PQ_E16(n), PQ_E16(n + 16), PQ_E16(n + 32), PQ_E16(n + 48)
static const uint64_t pq_bits_to_bytes[256] = {PQ_E64(0), PQ_E64(64), PQ_E64(128), PQ_E64(192)};

/* Expands n bits (LSB first, ceil(n/8) bytes at in) to n bytes of 0/1. */
static void bits_to_bytes(const uint8_t *in, int64_t n, uint8_t *out)
{
    int64_t i, full = n >> 3;
    for (i = 0; i < full; i++)
        memcpy(out + 8 * i, &pq_bits_to_bytes[in[i]], 8);
    if (n & 7) {
        uint8_t tmp[8];
        memcpy(tmp, &pq_bits_to_bytes[in[full]], 8);
        memcpy(out + 8 * full, tmp, (size_t)(n & 7));
    }
}

/* Largest of v[0..n): four-lane vectors (GCC/Clang vector extensions) so -O2 need not vectorise. */
static uint32_t max_u32(const uint32_t *v, int64_t n)
{
    typedef uint32_t v4u __attribute__((vector_size(16)));
    v4u a = {0, 0, 0, 0}, b = a;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        v4u x, y;
        memcpy(&x, v + i, 16);
        memcpy(&y, v + i + 4, 16);
        v4u mx = (v4u)(x > a), my = (v4u)(y > b);
        a = (x & mx) | (a & ~mx);
        b = (y & my) | (b & ~my);
    }
    uint32_t m = 0;
    for (int k = 0; k < 4; k++) {
        m = a[k] > m ? a[k] : m;
        m = b[k] > m ? b[k] : m;
    }
    for (; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

/* --------------------------------------------------- RLE / bit-packed hybrid */

#define PQ_HYBRID "RLE/bit-packed hybrid"

void pq_rle_init(pq_rle_decoder *d, const uint8_t *p, size_t len, int bit_width)
{
    memset(d, 0, sizeof *d);
    d->start = d->p = p;
    d->end = p + len;
    d->bit_width = bit_width;
}

/* Reads the next run header; `missing` is the number of values still wanted. */
static hs_status rle_next_run(pq_rle_decoder *d, int64_t missing, hs_error *err)
{
    size_t pos = (size_t)(d->p - d->start);
    if (d->p >= d->end)
        return HS_CORRUPT_AT(err, PQ_HYBRID ": data ends at byte %zu with %lld values still needed",
                             pos, (long long)missing);
    uint64_t h;
    HS_TRY(read_uvarint(&d->p, d->end, &h, PQ_HYBRID ": run header", d->start, err));
    int bw = d->bit_width;
    if (h & 1) {
        uint64_t groups = h >> 1;
        if (groups > PQ_MAX_BP_GROUPS)
            return HS_CORRUPT_AT(err, PQ_HYBRID ": run at byte %zu declares %llu groups", pos,
                                 (unsigned long long)groups);
        uint64_t bytes = groups * (uint64_t)bw;
        size_t left = (size_t)(d->end - d->p);
        d->bp_p = d->p;
        d->bp_avail = bytes < left ? (size_t)bytes : left;
        d->bp_pos = 0;
        d->bp_left = (int64_t)(groups * 8);
        d->p += d->bp_avail;
    } else {
        int vb = (bw + 7) / 8;
        if (d->end - d->p < vb)
            return HS_CORRUPT_AT(err, PQ_HYBRID ": RLE run at byte %zu: value cut short", pos);
        uint64_t v = 0;
        memcpy(&v, d->p, (size_t)vb);
        d->p += vb;
        if (bw < 64 && (v >> bw) != 0)
            return HS_CORRUPT_AT(err, PQ_HYBRID ": RLE run at byte %zu: value %llu is wider than "
                                 "%d bits", pos, (unsigned long long)v, bw);
        d->rle_value = v;
        d->rle_left = (int64_t)(h >> 1);
    }
    return HS_OK;
}

/* out[0..k) = v for elements of w (1, 2 or 4) bytes, eight bytes per store. */
static inline void rle_fill(void *out, size_t w, uint64_t v, int64_t k)
{
    uint8_t *o = out;
    size_t bytes = (size_t)k * w;
    if (w == 1) {
        memset(o, (int)(uint8_t)v, bytes);
        return;
    }
    uint64_t x = w == 2 ? (v & 0xffff) * 0x0001000100010001ULL : (v & 0xffffffffULL) * 0x0000000100000001ULL;
    size_t i = 0;
    for (; i + 8 <= bytes; i += 8)
        memcpy(o + i, &x, 8);
    if (i < bytes)
        memcpy(o + i, &x, bytes - i);  /* bytes - i is a multiple of w below 8 */
}

#define PQ_DEFINE_RLE_GET(T, SUF, MAXBW)                                                   \
    static hs_status rle_get_##SUF(pq_rle_decoder *d, T *out, int64_t n, hs_error *err)     \
    {                                                                                      \
        if (HS_UNLIKELY(d->bit_width < 0 || d->bit_width > MAXBW))                         \
            return HS_CORRUPT_AT(err, PQ_HYBRID ": bit width %d is outside 0..%d",          \
                                 d->bit_width, MAXBW);                                     \
        if (n < 0)                                                                         \
            return hs_err_set(err, HS_INVALID, PQ_HYBRID ": negative count %lld",          \
                              (long long)n);                                               \
        while (n > 0) {                                                                    \
            if (d->rle_left > 0) {                                                         \
                int64_t k = PQ_MIN(n, d->rle_left);                                        \
                rle_fill(out, sizeof(T), d->rle_value, k);                                 \
                out += k, n -= k, d->rle_left -= k;                                        \
            } else if (d->bp_left > 0) {                                                   \
                int64_t k = PQ_MIN(n, d->bp_left);                                         \
                HS_TRY(bp_extract_##SUF(d->bp_p, d->bp_avail, d->bit_width, d->bp_pos, k,   \
                                        out, PQ_HYBRID, (size_t)(d->bp_p - d->start), err)); \
                out += k, n -= k, d->bp_left -= k, d->bp_pos += (uint64_t)k;               \
            } else {                                                                       \
                HS_TRY(rle_next_run(d, n, err));                                           \
            }                                                                              \
        }                                                                                  \
        return HS_OK;                                                                      \
    }

PQ_DEFINE_RLE_GET(uint8_t, u8, 8)
PQ_DEFINE_RLE_GET(uint16_t, u16, 16)
PQ_DEFINE_RLE_GET(uint32_t, u32, 32)

hs_status pq_rle_skip(pq_rle_decoder *d, int64_t n, hs_error *err)
{
    if (n < 0)
        return hs_err_set(err, HS_INVALID, PQ_HYBRID ": negative count %lld", (long long)n);
    if (HS_UNLIKELY(d->bit_width < 0 || d->bit_width > 32))
        return HS_CORRUPT_AT(err, PQ_HYBRID ": bit width %d is outside 0..32", d->bit_width);
    while (n > 0) {
        if (d->rle_left > 0) {
            int64_t k = PQ_MIN(n, d->rle_left);
            n -= k, d->rle_left -= k;
        } else if (d->bp_left > 0) {
            int64_t k = PQ_MIN(n, d->bp_left);
            n -= k, d->bp_left -= k, d->bp_pos += (uint64_t)k;
        } else {
            HS_TRY(rle_next_run(d, n, err));
        }
    }
    return HS_OK;
}

hs_status pq_rle_get_u32(pq_rle_decoder *d, uint32_t *out, int64_t n, hs_error *err)
{
    return rle_get_u32(d, out, n, err);
}

hs_status pq_rle_get_u16(pq_rle_decoder *d, uint16_t *out, int64_t n, hs_error *err)
{
    return rle_get_u16(d, out, n, err);
}

hs_status pq_rle_get_u8(pq_rle_decoder *d, uint8_t *out, int64_t n, hs_error *err)
{
    return rle_get_u8(d, out, n, err);
}

/* -------------------------------------------------------- hybrid encoding */

static hs_status emit_rle_run(hs_buf *out, uint32_t value, int64_t count, int bw)
{
    HS_TRY(hs_buf_reserve(out, 16));
    uint8_t *o = out->data + out->len;
    o += put_uvarint(o, (uint64_t)count << 1);
    int vb = (bw + 7) / 8;
    for (int i = 0; i < vb; i++)
        *o++ = (uint8_t)(value >> (8 * i));
    out->len = (size_t)(o - out->data);
    return HS_OK;
}

/*
 * The run detector.  Invariant: v[lit .. ) are values not yet emitted.  A run
 * of r equal values starting at s first tops the pending literal v[lit .. s)
 * up to a multiple of 8 (pad values); if >= 8 remain they become an RLE run.
 * Runs are found cheaply: a run of >= 8 contains positions m, m + 4 with m a
 * multiple of 4, so only v[m] == v[m + 4] is tested per 4 values.  A run that
 * ends the input becomes an RLE run when no padding is needed.  Literal values
 * go through a uint64 chunk so one packer serves u8/u16/u32 inputs.
 */
#define PQ_LIT_CHUNK 512
#define PQ_DEFINE_RLE_ENCODE(T, SUF)                                                       \
    static hs_status emit_literals_##SUF(hs_buf *out, const T *v, int64_t l, int bw)        \
    {                                                                                      \
        /* one run header for all l values (readers that skip values pass a    */         \
        /* whole literal span at once); packed PQ_LIT_CHUNK values at a time   */         \
        uint64_t chunk[PQ_LIT_CHUNK];                                                      \
        if (l <= 0)                                                                        \
            return HS_OK;                                                                  \
        int64_t groups = (l + 7) / 8;                                                      \
        HS_TRY(hs_buf_reserve(out, 10 + (size_t)groups * (size_t)bw));                     \
        out->len += (size_t)put_uvarint(out->data + out->len, (uint64_t)groups << 1 | 1);  \
        while (l > 0) {                                                                    \
            int64_t c = PQ_MIN(l, PQ_LIT_CHUNK), g = (c + 7) / 8;                          \
            for (int64_t q = 0; q < c; q++)                                                \
                chunk[q] = v[q];                                                           \
            for (int64_t q = c; q < g * 8; q++)                                            \
                chunk[q] = 0;                                                              \
            uint8_t *o = pack_groups(out->data + out->len, chunk, g, bw);                  \
            out->len = (size_t)(o - out->data);                                            \
            v += c, l -= c;                                                                \
        }                                                                                  \
        return HS_OK;                                                                      \
    }                                                                                      \
    static hs_status rle_encode_##SUF(const T *v, int64_t n, int bw, hs_buf *out)           \
    {                                                                                      \
        int64_t m = 0, lit = 0;                                                            \
        while (m + 4 < n) {                                                                \
            T x = v[m];                                                                    \
            if (HS_LIKELY(v[m + 4] != x) || v[m + 1] != x || v[m + 2] != x ||              \
                v[m + 3] != x) {                                                           \
                m += 4;                                                                    \
                continue;                                                                  \
            }                                                                              \
            int64_t s = m, e = m + 5;                                                      \
            while (s > lit && v[s - 1] == x)                                               \
                s--;                                                                       \
            while (e < n && v[e] == x)                                                     \
                e++;                                                                       \
            int64_t r = e - s, pad = (8 - ((s - lit) & 7)) & 7;                             \
            if (r - pad >= 8 || (e == n && pad == 0)) {                                    \
                HS_TRY(emit_literals_##SUF(out, v + lit, s + pad - lit, bw));              \
                HS_TRY(emit_rle_run(out, (uint32_t)x, r - pad, bw));                       \
                lit = e;                                                                   \
            }                                                                              \
            m = (e + 3) & ~(int64_t)3;                                                     \
        }                                                                                  \
        if (lit < n) { /* a final short run on a group boundary is cheaper as RLE */       \
            T x = v[n - 1];                                                                \
            int64_t s = n - 1;                                                             \
            while (s > lit && v[s - 1] == x)                                               \
                s--;                                                                       \
            if (((s - lit) & 7) == 0) {                                                    \
                HS_TRY(emit_literals_##SUF(out, v + lit, s - lit, bw));                    \
                HS_TRY(emit_rle_run(out, (uint32_t)x, n - s, bw));                         \
                lit = n;                                                                   \
            }                                                                              \
        }                                                                                  \
        return emit_literals_##SUF(out, v + lit, n - lit, bw);                             \
    }

PQ_DEFINE_RLE_ENCODE(uint8_t, u8)
PQ_DEFINE_RLE_ENCODE(uint16_t, u16)
PQ_DEFINE_RLE_ENCODE(uint32_t, u32)

hs_status pq_rle_encode_u32(const uint32_t *v, int64_t n, int bit_width, hs_buf *out)
{
    if (bit_width < 0 || bit_width > 32 || n < 0)
        return HS_INVALID;
    return rle_encode_u32(v, n, bit_width, out);
}

/* ------------------------------------------------------------------ levels */

hs_status pq_levels_decode(pq_encoding encoding, bool prefixed, const uint8_t *p, size_t len,
                           int max_level, int64_t n, uint16_t *out, size_t *used, hs_error *err)
{
    *used = 0;
    if (max_level < 0 || max_level > 65535 || n < 0)
        return hs_err_set(err, HS_INVALID, "levels: max level %d / count %lld out of range",
                          max_level, (long long)n);
    if (max_level == 0) {
        memset(out, 0, (size_t)n * sizeof *out);
        return HS_OK;
    }
    int bw = pq_bit_width((uint64_t)max_level);
    if (encoding == PQ_ENC_BIT_PACKED) {
        /* Deprecated: MSB-first packing, no prefix. */
        uint64_t bytes = ((uint64_t)n * (uint64_t)bw + 7) / 8;
        if (bytes > len)
            return HS_CORRUPT_AT(err, "BIT_PACKED levels: %lld levels of %d bits need %llu bytes, "
                                 "page has %zu", (long long)n, bw, (unsigned long long)bytes, len);
        uint64_t bit = 0;
        for (int64_t i = 0; i < n; i++) {
            unsigned v = 0;
            for (int b = 0; b < bw; b++, bit++)
                v = v << 1 | ((p[bit >> 3] >> (7 - (bit & 7))) & 1);
            out[i] = (uint16_t)v;
        }
        *used = (size_t)bytes;
    } else if (encoding == PQ_ENC_RLE) {
        const uint8_t *q = p;
        size_t qlen = len;
        if (prefixed) {
            if (len < 4)
                return HS_CORRUPT_AT(err, "RLE levels: %zu bytes cannot hold the 4-byte length", len);
            uint32_t l = ld32(p);
            if (l > len - 4)
                return HS_CORRUPT_AT(err, "RLE levels: length %u exceeds the %zu bytes left in the page",
                                     l, len - 4);
            q = p + 4;
            qlen = l;
        }
        pq_rle_decoder d;
        pq_rle_init(&d, q, qlen, bw);
        hs_status s = rle_get_u16(&d, out, n, err);
        if (s != HS_OK) {
            hs_err_prefix(err, "levels");
            return s;
        }
        *used = (size_t)(q - p) + qlen;
    } else {
        return HS_CORRUPT_AT(err, "levels: encoding %s (%d) is not a level encoding",
                             enc_name(encoding), (int)encoding);
    }
    if (max_level < (int)mask_bits(bw)) {
        uint16_t mx = 0;
        for (int64_t i = 0; i < n; i++)
            mx = out[i] > mx ? out[i] : mx;
        if (mx > max_level) {
            int64_t i = 0;
            while (out[i] <= max_level)
                i++;
            return HS_CORRUPT_AT(err, "%s levels: level %u at index %lld exceeds max level %d",
                                 enc_name(encoding), out[i], (long long)i, max_level);
        }
    }
    return HS_OK;
}

bool pq_levels_all_max(pq_encoding encoding, bool prefixed, const uint8_t *p, size_t len,
                       int max_level, int64_t n, size_t *used)
{
    if (encoding != PQ_ENC_RLE || max_level <= 0 || max_level > 65535 || n <= 0)
        return false;
    const uint8_t *q = p;
    size_t qlen = len;
    if (prefixed) {
        if (len < 4 || ld32(p) > len - 4)
            return false;
        q = p + 4;
        qlen = ld32(p);
    }
    const uint8_t *r = q, *end = q + qlen;
    uint64_t h = 0;
    hs_error e;
    if (read_uvarint(&r, end, &h, "", q, &e) != HS_OK || (h & 1) || (h >> 1) < (uint64_t)n)
        return false;
    int vb = (pq_bit_width((uint64_t)max_level) + 7) / 8;
    if (end - r < vb)
        return false;
    uint64_t v = 0;
    memcpy(&v, r, (size_t)vb);
    if (v != (uint64_t)max_level)
        return false;
    *used = (size_t)(q - p) + qlen;
    return true;
}

bool pq_levels_periodic(pq_encoding encoding, bool prefixed, const uint8_t *p, size_t len,
                        int64_t n, int64_t w, size_t *used)
{
    if (encoding != PQ_ENC_RLE || n <= 0 || w <= 0 || n % w != 0)
        return false;
    const uint8_t *q = p;
    size_t qlen = len;
    if (prefixed) {
        if (len < 4 || ld32(p) > len - 4)
            return false;
        q = p + 4;
        qlen = ld32(p);
    }
    const uint8_t *r = q, *end = q + qlen;
    int64_t i = 0, ph = 0;  /* levels checked; i % w */
    hs_error e;
    while (i < n) {
        uint64_t h = 0;
        if (read_uvarint(&r, end, &h, "", q, &e) != HS_OK)
            return false;
        uint64_t cnt = h >> 1;
        if (h & 1) {  /* bit-packed, bit width 1: one byte per group of 8 */
            if (cnt == 0 || cnt > (uint64_t)(end - r))
                return false;
            for (uint64_t g = 0; g < cnt && i < n; g++) {
                int m = n - i < 8 ? (int)(n - i) : 8;
                unsigned want = 0;
                for (int j = 0; j < m; j++) {
                    want |= (unsigned)(ph != 0) << j;
                    ph = ph + 1 == w ? 0 : ph + 1;
                }
                if ((r[g] & ((1u << m) - 1)) != want)
                    return false;
                i += m;
            }
            r += cnt;
        } else {  /* RLE run of one byte value */
            if (cnt == 0 || r >= end || *r > 1)
                return false;
            int64_t k = cnt < (uint64_t)(n - i) ? (int64_t)cnt : n - i;
            if (*r++ == 0) {  /* zeros only where rows start */
                if (w != 1 && (k != 1 || ph != 0))
                    return false;
                ph = w == 1 ? 0 : 1;
            } else {          /* ones only inside a row */
                if (ph == 0 || ph + k > w)
                    return false;
                ph = ph + k == w ? 0 : ph + k;
            }
            i += k;
        }
    }
    *used = (size_t)(q - p) + qlen;
    return true;
}

hs_status pq_levels_encode(const uint16_t *levels, int64_t n, int max_level, bool prefixed,
                           hs_buf *out)
{
    if (max_level < 0 || max_level > 65535 || n < 0)
        return HS_INVALID;
    if (max_level == 0)
        return HS_OK;
    int bw = pq_bit_width((uint64_t)max_level);
    size_t at = out->len;
    if (prefixed)
        HS_TRY(hs_buf_put_u32le(out, 0));
    hs_status s = rle_encode_u16(levels, n, bw, out);
    if (s != HS_OK) {
        out->len = at;
        return s;
    }
    if (prefixed) {
        size_t l = out->len - at - 4;
        if (l > UINT32_MAX) {
            out->len = at;
            return HS_INVALID;
        }
        st32(out->data + at, (uint32_t)l);
    }
    return HS_OK;
}

/* ------------------------------------------------------ dictionary indices */

hs_status pq_dict_indices_decode(const uint8_t *p, size_t len, int64_t n, uint32_t dict_size,
                                 uint32_t *out, hs_error *err)
{
    if (n < 0)
        return hs_err_set(err, HS_INVALID, "dictionary indices: negative count %lld", (long long)n);
    if (n == 0)
        return HS_OK;
    if (len < 1)
        return HS_CORRUPT_AT(err, "dictionary indices: empty data for %lld values", (long long)n);
    int bw = p[0];
    if (bw > 32)
        return HS_CORRUPT_AT(err, "dictionary indices: bit width %d at byte 0 exceeds 32", bw);
    pq_rle_decoder d;
    pq_rle_init(&d, p + 1, len - 1, bw);
    /* decode in chunks and range-check each while it is still in L1 */
    for (int64_t i = 0; i < n; i += 2048) {
        int64_t k = PQ_MIN(n - i, 2048);
        hs_status s = rle_get_u32(&d, out + i, k, err);
        if (s != HS_OK) {
            hs_err_prefix(err, "dictionary indices");
            return s;
        }
        if (HS_UNLIKELY(max_u32(out + i, k) >= dict_size)) {
            int64_t j = 0;
            while (out[i + j] < dict_size)
                j++;
            return HS_CORRUPT_AT(err, "dictionary indices: index %u at value %lld is outside the "
                                 "dictionary of %u entries", out[i + j], (long long)(i + j),
                                 dict_size);
        }
    }
    return HS_OK;
}

hs_status pq_dict_indices_encode(const uint32_t *idx, int64_t n, uint32_t dict_size, hs_buf *out)
{
    if (n < 0)
        return HS_INVALID;
    uint32_t mx = 0;
    for (int64_t i = 0; i < n; i++)
        mx = idx[i] > mx ? idx[i] : mx;
    if (n > 0 && mx >= dict_size)
        return HS_INVALID;
    int bw = dict_size > 1 ? pq_bit_width(dict_size - 1) : 0;
    size_t at = out->len;
    HS_TRY(hs_buf_append_byte(out, (uint8_t)bw));
    hs_status s = rle_encode_u32(idx, n, bw, out);
    if (s != HS_OK)
        out->len = at;
    return s;
}

/* ----------------------------------------------------- DELTA_BINARY_PACKED */

/* Streaming decoder of one DELTA_BINARY_PACKED stream. */
typedef struct dbp_dec {
    const uint8_t *start, *p, *end; /* p: next block header or miniblock */
    const char *what;               /* names the stream in messages */
    int max_bw;                     /* 32 or 64 */
    uint64_t n_mb, mb_size;         /* miniblocks per block, values per miniblock */
    uint64_t total, left;           /* values in the stream, values not yet produced */
    uint64_t first, last, min_delta;
    bool first_done;
    const uint8_t *widths;          /* bit widths of the current block */
    uint64_t mb_index;              /* miniblock within the block; n_mb = before a block */
    const uint8_t *mb_p;            /* the current miniblock's bytes */
    size_t mb_avail;                /* of which present */
    uint64_t mb_pos;                /* values of the miniblock consumed; mb_size = exhausted */
    int mb_bw;
} dbp_dec;

static hs_status dbp_init(dbp_dec *d, const uint8_t *p, size_t len, int max_bw, const char *what,
                          hs_error *err)
{
    memset(d, 0, sizeof *d);
    d->start = d->p = p;
    d->end = p + len;
    d->what = what;
    d->max_bw = max_bw;
    uint64_t block, first_zz;
    HS_TRY(read_uvarint(&d->p, d->end, &block, what, p, err));
    HS_TRY(read_uvarint(&d->p, d->end, &d->n_mb, what, p, err));
    HS_TRY(read_uvarint(&d->p, d->end, &d->total, what, p, err));
    HS_TRY(read_uvarint(&d->p, d->end, &first_zz, what, p, err));
    if (block == 0 || block > PQ_MAX_DBP_BLOCK || d->n_mb == 0 || d->n_mb > block ||
        block % d->n_mb != 0 || (block / d->n_mb) % 8 != 0)
        return HS_CORRUPT_AT(err, "%s: header declares blocks of %llu values in %llu miniblocks",
                             what, (unsigned long long)block, (unsigned long long)d->n_mb);
    if (d->total > PQ_MAX_DBP_TOTAL)
        return HS_CORRUPT_AT(err, "%s: header declares %llu values", what,
                             (unsigned long long)d->total);
    d->mb_size = block / d->n_mb;
    d->first = zigzag_decode_raw(first_zz);
    d->left = d->total;
    d->mb_index = d->n_mb;
    d->mb_pos = d->mb_size;
    return HS_OK;
}

/* Moves to the next miniblock (reading a block header when needed). */
static hs_status dbp_next_miniblock(dbp_dec *d, hs_error *err)
{
    if (d->mb_index + 1 >= d->n_mb) {
        size_t pos = (size_t)(d->p - d->start);
        uint64_t md;
        HS_TRY(read_uvarint(&d->p, d->end, &md, d->what, d->start, err));
        d->min_delta = zigzag_decode_raw(md);
        if ((uint64_t)(d->end - d->p) < d->n_mb)
            return HS_CORRUPT_AT(err, "%s: block at byte %zu: %llu miniblock widths cut short",
                                 d->what, pos, (unsigned long long)d->n_mb);
        d->widths = d->p;
        d->p += d->n_mb;
        d->mb_index = 0;
    } else {
        d->mb_index++;
    }
    int bw = d->widths[d->mb_index];
    if (bw > d->max_bw)
        return HS_CORRUPT_AT(err, "%s: miniblock width %d at byte %zu exceeds %d bits", d->what, bw,
                             (size_t)(d->widths + d->mb_index - d->start), d->max_bw);
    uint64_t bytes = d->mb_size / 8 * (uint64_t)bw;
    size_t left = (size_t)(d->end - d->p);
    d->mb_bw = bw;
    d->mb_p = d->p;
    d->mb_avail = bytes < left ? (size_t)bytes : left;
    d->p += d->mb_avail;
    d->mb_pos = 0;
    return HS_OK;
}

/* Produces the next m (<= left) values, as uint32 (wrapping 32-bit sums). */
static hs_status dbp_next_u32(dbp_dec *d, uint32_t *out, int64_t m, hs_error *err)
{
    if (m > 0 && !d->first_done) {
        d->first_done = true;
        d->last = d->first;
        *out++ = (uint32_t)d->first;
        m--, d->left--;
    }
    uint32_t last = (uint32_t)d->last, tmp[64];
    while (m > 0) {
        if (d->mb_pos == d->mb_size)
            HS_TRY(dbp_next_miniblock(d, err));
        int64_t k = (int64_t)PQ_MIN((uint64_t)m, d->mb_size - d->mb_pos);
        k = PQ_MIN(k, 64);
        HS_TRY(bp_extract_u32(d->mb_p, d->mb_avail, d->mb_bw, d->mb_pos, k, tmp, d->what,
                              (size_t)(d->mb_p - d->start), err));
        uint32_t md = (uint32_t)d->min_delta;
        for (int64_t j = 0; j < k; j++) {
            last += md + tmp[j];
            out[j] = last;
        }
        out += k, m -= k, d->left -= (uint64_t)k, d->mb_pos += (uint64_t)k;
    }
    d->last = last;
    return HS_OK;
}

static hs_status dbp_next_u64(dbp_dec *d, uint64_t *out, int64_t m, hs_error *err)
{
    if (m > 0 && !d->first_done) {
        d->first_done = true;
        d->last = d->first;
        *out++ = d->first;
        m--, d->left--;
    }
    uint64_t last = d->last, tmp[64];
    while (m > 0) {
        if (d->mb_pos == d->mb_size)
            HS_TRY(dbp_next_miniblock(d, err));
        int64_t k = (int64_t)PQ_MIN((uint64_t)m, d->mb_size - d->mb_pos);
        k = PQ_MIN(k, 64);
        HS_TRY(bp_extract_u64(d->mb_p, d->mb_avail, d->mb_bw, d->mb_pos, k, tmp, d->what,
                              (size_t)(d->mb_p - d->start), err));
        uint64_t md = d->min_delta;
        for (int64_t j = 0; j < k; j++) {
            last += md + tmp[j];
            out[j] = last;
        }
        out += k, m -= k, d->left -= (uint64_t)k, d->mb_pos += (uint64_t)k;
    }
    d->last = last;
    return HS_OK;
}

/* Skips the values not yet produced (checking their bytes exist); returns the
 * end of the stream: after the miniblock that holds the last value. */
static hs_status dbp_finish(dbp_dec *d, const uint8_t **stream_end, hs_error *err)
{
    if (d->left > 0 && !d->first_done) {
        d->first_done = true;
        d->left--;
    }
    while (d->left > 0) {
        if (d->mb_pos == d->mb_size)
            HS_TRY(dbp_next_miniblock(d, err));
        uint64_t k = PQ_MIN(d->left, d->mb_size - d->mb_pos);
        uint64_t need = ((d->mb_pos + k) * (uint64_t)d->mb_bw + 7) / 8;
        if (need > d->mb_avail)
            return HS_CORRUPT_AT(err, "%s: miniblock at byte %zu cut short", d->what,
                                 (size_t)(d->mb_p - d->start));
        d->mb_pos += k;
        d->left -= k;
    }
    *stream_end = d->p;
    return HS_OK;
}

/* A byte-array length stream must hold at least the n values of the page. */
static hs_status dbp_check_total(const dbp_dec *d, int64_t n, hs_error *err)
{
    if (d->total < (uint64_t)n)
        return HS_CORRUPT_AT(err, "%s: %llu lengths for %lld values", d->what,
                             (unsigned long long)d->total, (long long)n);
    return HS_OK;
}

/* Decodes the next n lengths (values base.. of a prefix or suffix length
 * stream) into lens, each checked non-negative. */
static hs_status dbp_lengths(dbp_dec *d, int64_t base, int64_t n, uint32_t *lens, hs_error *err)
{
    HS_TRY(dbp_next_u32(d, lens, n, err));
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad |= lens[i];
    if (bad & 0x80000000u) {
        int64_t i = 0;
        while (!(lens[i] & 0x80000000u))
            i++;
        return HS_CORRUPT_AT(err, "%s: negative length %d at value %lld", d->what,
                             (int32_t)lens[i], (long long)(base + i));
    }
    return HS_OK;
}

/* Encoder.  `load` fetches k values from index i as uint64 (int32 sources may
 * be zero- or sign-extended: is32 arithmetic is modulo 2^32). */
typedef void (*dbp_load_fn)(const void *src, int64_t i, int64_t k, uint64_t *dst);

static void load_i32(const void *src, int64_t i, int64_t k, uint64_t *dst)
{
    const uint32_t *s = (const uint32_t *)src + i;
    for (int64_t j = 0; j < k; j++)
        dst[j] = s[j];
}
static void load_i64(const void *src, int64_t i, int64_t k, uint64_t *dst)
{
    memcpy(dst, (const uint64_t *)src + i, (size_t)k * 8);
}
static void load_bytes_len(const void *src, int64_t i, int64_t k, uint64_t *dst)
{
    const pq_bytes *s = (const pq_bytes *)src + i;
    for (int64_t j = 0; j < k; j++)
        dst[j] = s[j].len;
}

#define PQ_DBP_BLOCK 128
#define PQ_DBP_MINIBLOCKS 4
#define PQ_DBP_MB_SIZE (PQ_DBP_BLOCK / PQ_DBP_MINIBLOCKS)

static hs_status dbp_encode(const void *src, dbp_load_fn load, int64_t n, bool is32, hs_buf *out)
{
    uint64_t mask = is32 ? 0xffffffffULL : ~0ULL, vals[PQ_DBP_BLOCK], u[PQ_DBP_BLOCK];
    int64_t dl[PQ_DBP_BLOCK];
    uint64_t first = 0;
    if (n > 0)
        load(src, 0, 1, &first);
    int64_t sfirst = is32 ? (int64_t)(int32_t)(uint32_t)first : (int64_t)first;
    HS_TRY(hs_buf_reserve(out, 40));
    uint8_t *o = out->data + out->len;
    o += put_uvarint(o, PQ_DBP_BLOCK);
    o += put_uvarint(o, PQ_DBP_MINIBLOCKS);
    o += put_uvarint(o, (uint64_t)n);
    o += put_uvarint(o, zigzag_encode(sfirst));
    out->len = (size_t)(o - out->data);
    uint64_t prev = first;
    for (int64_t i = 1; i < n; i += PQ_DBP_BLOCK) {
        int64_t cnt = PQ_MIN(n - i, PQ_DBP_BLOCK), j;
        load(src, i, cnt, vals);
        int64_t mn = INT64_MAX;
        for (j = 0; j < cnt; j++) {
            uint64_t d = (vals[j] - prev) & mask;
            prev = vals[j];
            dl[j] = is32 ? (int64_t)(int32_t)(uint32_t)d : (int64_t)d;
            mn = dl[j] < mn ? dl[j] : mn;
        }
        for (j = 0; j < cnt; j++)
            u[j] = ((uint64_t)dl[j] - (uint64_t)mn) & mask;
        for (; j < PQ_DBP_BLOCK; j++)
            u[j] = 0;
        int n_mb = (int)((cnt + PQ_DBP_MB_SIZE - 1) / PQ_DBP_MB_SIZE), widths[PQ_DBP_MINIBLOCKS];
        size_t bytes = 0;
        for (int b = 0; b < PQ_DBP_MINIBLOCKS; b++) {
            uint64_t all = 0;
            if (b < n_mb)
                for (j = 0; j < PQ_DBP_MB_SIZE; j++)
                    all |= u[b * PQ_DBP_MB_SIZE + j];
            widths[b] = pq_bit_width(all);
            bytes += (size_t)widths[b] * PQ_DBP_MB_SIZE / 8;
        }
        HS_TRY(hs_buf_reserve(out, 10 + PQ_DBP_MINIBLOCKS + bytes + 16));
        o = out->data + out->len;
        o += put_uvarint(o, zigzag_encode(mn));
        for (int b = 0; b < PQ_DBP_MINIBLOCKS; b++)
            *o++ = (uint8_t)widths[b];
        for (int b = 0; b < n_mb; b++)
            o = pack_groups(o, u + b * PQ_DBP_MB_SIZE, PQ_DBP_MB_SIZE / 8, widths[b]);
        out->len = (size_t)(o - out->data);
    }
    return HS_OK;
}

/* ------------------------------------------------------------ value decoders */

static hs_status decode_plain(pq_ptype type, int w, const uint8_t *p, size_t len, int64_t n,
                              void *out, hs_error *err)
{
    if (type == PQ_BOOLEAN) {
        uint64_t bytes = ((uint64_t)n + 7) / 8;
        if (bytes > len)
            return HS_CORRUPT_AT(err, "PLAIN BOOLEAN: %lld values need %llu bytes, page has %zu",
                                 (long long)n, (unsigned long long)bytes, len);
        bits_to_bytes(p, n, out);
        return HS_OK;
    }
    if (type == PQ_BYTE_ARRAY) {
        pq_bytes *v = out;
        const uint8_t *q = p, *end = p + len;
        for (int64_t i = 0; i < n; i++) {
            if (HS_UNLIKELY(end - q < 4))
                return HS_CORRUPT_AT(err, "PLAIN BYTE_ARRAY: value %lld at byte %zu: length cut "
                                     "short", (long long)i, (size_t)(q - p));
            uint32_t l = ld32(q);
            q += 4;
            if (HS_UNLIKELY(l > (size_t)(end - q)))
                return HS_CORRUPT_AT(err, "PLAIN BYTE_ARRAY: value %lld at byte %zu: length %d "
                                     "exceeds the %zu bytes left", (long long)i,
                                     (size_t)(q - 4 - p), (int32_t)l, (size_t)(end - q));
            v[i].p = q;
            v[i].len = l;
            q += l;
        }
        return HS_OK;
    }
    if (n > 0 && (uint64_t)n > len / (uint64_t)w)
        return HS_CORRUPT_AT(err, "PLAIN %s: %lld values of %d bytes exceed the page's %zu bytes",
                             type_name(type), (long long)n, w, len);
    if (type == PQ_FIXED_LEN_BYTE_ARRAY) {
        pq_bytes *v = out;
        for (int64_t i = 0; i < n; i++) {
            v[i].p = p + (size_t)i * (size_t)w;
            v[i].len = (uint32_t)w;
        }
        return HS_OK;
    }
    if (n > 0)
        memcpy(out, p, (size_t)n * (size_t)w);
    return HS_OK;
}

static hs_status decode_dbp(pq_ptype type, const uint8_t *p, size_t len, int64_t n, void *out,
                            hs_error *err)
{
    dbp_dec d;
    bool is32 = type == PQ_INT32;
    HS_TRY(dbp_init(&d, p, len, is32 ? 32 : 64, "DELTA_BINARY_PACKED", err));
    if (d.total < (uint64_t)n)
        return HS_CORRUPT_AT(err, "DELTA_BINARY_PACKED: header holds %llu values, page needs %lld",
                             (unsigned long long)d.total, (long long)n);
    return is32 ? dbp_next_u32(&d, out, n, err) : dbp_next_u64(&d, out, n, err);
}

/* Pass 1 skips the length stream to find where the bytes start; pass 2
 * decodes the lengths (256 at a time, on the stack) and writes each view once. */
static hs_status decode_dlba(const uint8_t *p, size_t len, int64_t n, pq_bytes *v, hs_error *err)
{
    static const char what[] = "DELTA_LENGTH_BYTE_ARRAY lengths";
    dbp_dec d;
    const uint8_t *data, *end = p + len;
    uint32_t lens[256];
    HS_TRY(dbp_init(&d, p, len, 32, what, err));
    HS_TRY(dbp_check_total(&d, n, err));
    HS_TRY(dbp_finish(&d, &data, err));
    HS_TRY(dbp_init(&d, p, len, 32, what, err));
    for (int64_t i = 0; i < n; i += 256) {
        int64_t k = PQ_MIN(n - i, 256);
        HS_TRY(dbp_lengths(&d, i, k, lens, err));
        for (int64_t j = 0; j < k; j++) {
            if (HS_UNLIKELY(lens[j] > (size_t)(end - data)))
                return HS_CORRUPT_AT(err, "DELTA_LENGTH_BYTE_ARRAY: value %lld of %u bytes at byte "
                                     "%zu runs past the end (%zu bytes)", (long long)(i + j),
                                     lens[j], (size_t)(data - p), len);
            v[i + j].p = data;
            v[i + j].len = lens[j];
            data += lens[j];
        }
    }
    return HS_OK;
}

/* Pass 1 skips both length streams to find where each starts; pass 2 decodes
 * them side by side and builds the values in scratch.  Until scratch stops
 * growing, views hold offsets into it; a last pass turns them into pointers.
 * A value with an empty suffix shares its previous value's bytes. */
static hs_status decode_dba(pq_ptype type, int32_t type_length, const uint8_t *p, size_t len,
                            int64_t n, pq_bytes *v, hs_buf *scratch, hs_error *err)
{
    static const char wp[] = "DELTA_BYTE_ARRAY prefix lengths", ws[] = "DELTA_BYTE_ARRAY suffix lengths";
    dbp_dec dp, ds;
    uint32_t pre[256], suf[256];
    const uint8_t *q, *s, *end = p + len;
    HS_TRY(dbp_init(&dp, p, len, 32, wp, err));
    HS_TRY(dbp_check_total(&dp, n, err));
    HS_TRY(dbp_finish(&dp, &q, err));
    HS_TRY(dbp_init(&ds, q, (size_t)(end - q), 32, ws, err));
    HS_TRY(dbp_check_total(&ds, n, err));
    HS_TRY(dbp_finish(&ds, &s, err));
    HS_TRY(dbp_init(&dp, p, len, 32, wp, err));
    HS_TRY(dbp_init(&ds, q, (size_t)(end - q), 32, ws, err));
    hs_buf_reset(scratch);
    size_t prev_off = 0;
    uint64_t prev_len = 0;
    for (int64_t i = 0; i < n; i += 256) {
        int64_t k = PQ_MIN(n - i, 256);
        HS_TRY(dbp_lengths(&dp, i, k, pre, err));
        HS_TRY(dbp_lengths(&ds, i, k, suf, err));
        for (int64_t j = 0; j < k; j++) {
            uint64_t vlen = (uint64_t)pre[j] + suf[j];
            if (HS_UNLIKELY(pre[j] > prev_len))
                return HS_CORRUPT_AT(err, "DELTA_BYTE_ARRAY: value %lld: prefix of %u bytes but "
                                     "the previous value has %llu", (long long)(i + j), pre[j],
                                     (unsigned long long)prev_len);
            if (HS_UNLIKELY(vlen > INT32_MAX))
                return HS_CORRUPT_AT(err, "DELTA_BYTE_ARRAY: value %lld is %llu bytes long",
                                     (long long)(i + j), (unsigned long long)vlen);
            if (HS_UNLIKELY(type == PQ_FIXED_LEN_BYTE_ARRAY && vlen != (uint64_t)type_length))
                return HS_CORRUPT_AT(err, "DELTA_BYTE_ARRAY: value %lld is %llu bytes, column "
                                     "width is %d", (long long)(i + j), (unsigned long long)vlen,
                                     type_length);
            if (suf[j]) {
                if (HS_UNLIKELY(suf[j] > (size_t)(end - s)))
                    return HS_CORRUPT_AT(err, "DELTA_BYTE_ARRAY: suffix of value %lld (%u bytes) "
                                         "at byte %zu runs past the end (%zu bytes)",
                                         (long long)(i + j), suf[j], (size_t)(s - p), len);
                if (HS_UNLIKELY(scratch->len + vlen > PQ_MAX_EXPANSION))
                    return HS_CORRUPT_AT(err, "DELTA_BYTE_ARRAY: page expands past %zu bytes",
                                         PQ_MAX_EXPANSION);
                /* 32 spare bytes let short copies move 16 bytes at a time */
                if (scratch->cap - scratch->len <= vlen + 32 &&
                    hs_buf_reserve(scratch, (size_t)vlen + 32) != HS_OK)
                    return hs_err_nomem(err, scratch->len + (size_t)vlen);
                uint8_t *dst = scratch->data + scratch->len, t[16];
                if (pre[j] <= 16 && suf[j] <= 16 && end - s >= 16) {
                    memcpy(t, scratch->data + prev_off, 16);
                    memcpy(dst, t, 16);
                    memcpy(t, s, 16);
                    memcpy(dst + pre[j], t, 16);
                } else {
                    if (pre[j])
                        memcpy(dst, scratch->data + prev_off, pre[j]);
                    memcpy(dst + pre[j], s, suf[j]);
                }
                s += suf[j];
                prev_off = scratch->len;
                scratch->len += (size_t)vlen;
            }
            v[i + j].p = (const uint8_t *)(uintptr_t)prev_off;
            v[i + j].len = (uint32_t)vlen;
            prev_len = vlen;
        }
    }
    const uint8_t *base = scratch->data ? scratch->data : pq_empty_bytes;
    for (int64_t i = 0; i < n; i++)
        v[i].p = base + (uintptr_t)v[i].p;
    return HS_OK;
}

static hs_status decode_bss(pq_ptype type, int w, const uint8_t *p, size_t len, int64_t n,
                            void *out, hs_buf *scratch, hs_error *err)
{
    if (len % (size_t)w != 0)
        return HS_CORRUPT_AT(err, "BYTE_STREAM_SPLIT %s: %zu bytes is not a multiple of the "
                             "%d-byte value width", type_name(type), len, w);
    size_t stride = len / (size_t)w;
    if ((uint64_t)n > stride)
        return HS_CORRUPT_AT(err, "BYTE_STREAM_SPLIT %s: page holds %zu values, %lld needed",
                             type_name(type), stride, (long long)n);
    uint8_t *o = out;
    if (type == PQ_FIXED_LEN_BYTE_ARRAY) {
        size_t bytes = (size_t)n * (size_t)w;
        hs_buf_reset(scratch);
        if (hs_buf_reserve(scratch, bytes) != HS_OK)
            return hs_err_nomem(err, bytes);
        o = scratch->data;
        scratch->len = bytes;
    }
    size_t nn = (size_t)n;
    if (w == 4) {
        const uint8_t *s0 = p, *s1 = p + stride, *s2 = p + 2 * stride, *s3 = p + 3 * stride;
        for (size_t i = 0; i < nn; i++) {
            uint32_t x = (uint32_t)s0[i] | (uint32_t)s1[i] << 8 | (uint32_t)s2[i] << 16 |
                         (uint32_t)s3[i] << 24;
            st32(o + 4 * i, x);
        }
    } else if (w == 8) {
        const uint8_t *s[8];
        for (int k = 0; k < 8; k++)
            s[k] = p + (size_t)k * stride;
        for (size_t i = 0; i < nn; i++) {
            uint64_t x = (uint64_t)s[0][i] | (uint64_t)s[1][i] << 8 | (uint64_t)s[2][i] << 16 |
                         (uint64_t)s[3][i] << 24 | (uint64_t)s[4][i] << 32 |
                         (uint64_t)s[5][i] << 40 | (uint64_t)s[6][i] << 48 |
                         (uint64_t)s[7][i] << 56;
            st64(o + 8 * i, x);
        }
    } else {
        for (size_t k = 0; k < (size_t)w; k++) {
            const uint8_t *sk = p + k * stride;
            for (size_t i = 0; i < nn; i++)
                o[i * (size_t)w + k] = sk[i];
        }
    }
    if (type == PQ_FIXED_LEN_BYTE_ARRAY) {
        pq_bytes *v = out;
        for (size_t i = 0; i < nn; i++) {
            v[i].p = o + i * (size_t)w;
            v[i].len = (uint32_t)w;
        }
    }
    return HS_OK;
}

static hs_status decode_bool_rle(const uint8_t *p, size_t len, int64_t n, uint8_t *out,
                                 hs_error *err)
{
    if (len < 4)
        return HS_CORRUPT_AT(err, "RLE BOOLEAN: %zu bytes cannot hold the 4-byte length", len);
    uint32_t l = ld32(p);
    if (l > len - 4)
        return HS_CORRUPT_AT(err, "RLE BOOLEAN: length %u exceeds the %zu bytes left", l, len - 4);
    pq_rle_decoder d;
    pq_rle_init(&d, p + 4, l, 1);
    hs_status s = rle_get_u8(&d, out, n, err);
    if (s != HS_OK)
        hs_err_prefix(err, "RLE BOOLEAN");
    return s;
}

hs_status pq_values_decode(pq_encoding enc, pq_ptype type, int32_t type_length, const uint8_t *p,
                           size_t len, int64_t n, void *out, hs_buf *scratch, hs_error *err)
{
    if (n < 0)
        return hs_err_set(err, HS_INVALID, "%s: negative value count %lld", enc_name(enc),
                          (long long)n);
    if ((unsigned)type > PQ_FIXED_LEN_BYTE_ARRAY)
        return HS_CORRUPT_AT(err, "%s: unknown physical type %d", enc_name(enc), (int)type);
    int w = pq_ptype_width(type, type_length);
    if (type == PQ_FIXED_LEN_BYTE_ARRAY && type_length <= 0)
        return HS_CORRUPT_AT(err, "%s: FIXED_LEN_BYTE_ARRAY column of width %d", enc_name(enc),
                             (int)type_length);
    if (!p)
        p = pq_empty_bytes, len = 0;
    switch (enc) {
    case PQ_ENC_PLAIN:
        return decode_plain(type, w, p, len, n, out, err);
    case PQ_ENC_RLE:
        if (type == PQ_BOOLEAN)
            return decode_bool_rle(p, len, n, out, err);
        break;
    case PQ_ENC_DELTA_BINARY_PACKED:
        if (type == PQ_INT32 || type == PQ_INT64)
            return decode_dbp(type, p, len, n, out, err);
        break;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (type == PQ_BYTE_ARRAY)
            return decode_dlba(p, len, n, out, err);
        break;
    case PQ_ENC_DELTA_BYTE_ARRAY:
        if (type == PQ_BYTE_ARRAY || type == PQ_FIXED_LEN_BYTE_ARRAY)
            return decode_dba(type, type_length, p, len, n, out, scratch, err);
        break;
    case PQ_ENC_BYTE_STREAM_SPLIT:
        if (type == PQ_FLOAT || type == PQ_DOUBLE || type == PQ_INT32 || type == PQ_INT64 ||
            type == PQ_FIXED_LEN_BYTE_ARRAY)
            return decode_bss(type, w, p, len, n, out, scratch, err);
        break;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY:
        return hs_err_set(err, HS_INVALID, "%s pages hold dictionary indices: use "
                          "pq_dict_indices_decode", enc_name(enc));
    default:
        return HS_CORRUPT_AT(err, "unknown value encoding %d", (int)enc);
    }
    return HS_CORRUPT_AT(err, "encoding %s is not defined for %s values", enc_name(enc),
                         type_name(type));
}

/* ------------------------------------------------------------ value encoders */

static hs_status encode_plain(pq_ptype type, int w, const void *values, int64_t n, hs_buf *out)
{
    if (type == PQ_BOOLEAN) {
        const uint8_t *v = values;
        size_t bytes = ((size_t)n + 7) / 8;
        HS_TRY(hs_buf_reserve(out, bytes));
        uint8_t *o = out->data + out->len;
        memset(o, 0, bytes);
        for (int64_t i = 0; i < n; i++)
            o[i >> 3] |= (uint8_t)((v[i] != 0) << (i & 7));
        out->len += bytes;
        return HS_OK;
    }
    if (type == PQ_BYTE_ARRAY) { /* reserve per 256 values, so v is read from L1 twice */
        const pq_bytes *v = values;
        for (int64_t i = 0; i < n; i += 256) {
            int64_t k = PQ_MIN(n - i, 256);
            size_t total = 0;
            for (int64_t j = 0; j < k; j++)
                total += 4 + (size_t)v[i + j].len;
            HS_TRY(hs_buf_reserve(out, total));
            uint8_t *o = out->data + out->len;
            for (int64_t j = 0; j < k; j++) {
                uint32_t l = v[i + j].len;
                st32(o, l);
                if (l)
                    memcpy(o + 4, v[i + j].p, l);
                o += 4 + (size_t)l;
            }
            out->len += total;
        }
        return HS_OK;
    }
    size_t bytes = (size_t)n * (size_t)w;
    if (type == PQ_FIXED_LEN_BYTE_ARRAY) {
        const pq_bytes *v = values;
        for (int64_t i = 0; i < n; i++)
            if (v[i].len != (uint32_t)w)
                return HS_INVALID;
        HS_TRY(hs_buf_reserve(out, bytes));
        uint8_t *o = out->data + out->len;
        for (int64_t i = 0; i < n; i++)
            memcpy(o + (size_t)i * (size_t)w, v[i].p, (size_t)w);
        out->len += bytes;
        return HS_OK;
    }
    return hs_buf_append(out, values, bytes);
}

static hs_status encode_dlba(const pq_bytes *v, int64_t n, hs_buf *out)
{
    HS_TRY(dbp_encode(v, load_bytes_len, n, true, out));
    size_t total = 0;
    for (int64_t i = 0; i < n; i++)
        total += v[i].len;
    HS_TRY(hs_buf_reserve(out, total));
    uint8_t *o = out->data + out->len;
    for (int64_t i = 0; i < n; i++) {
        if (v[i].len)
            memcpy(o, v[i].p, v[i].len);
        o += v[i].len;
    }
    out->len += total;
    return HS_OK;
}

static uint32_t common_prefix(const pq_bytes *a, const pq_bytes *b)
{
    uint32_t m = PQ_MIN(a->len, b->len), i = 0;
    while (i + 8 <= m) {
        uint64_t x = ld64(a->p + i) ^ ld64(b->p + i);
        if (x)
            return i + (uint32_t)(__builtin_ctzll(x) >> 3);
        i += 8;
    }
    while (i < m && a->p[i] == b->p[i])
        i++;
    return i;
}

static hs_status encode_dba(const pq_bytes *v, int64_t n, hs_buf *out)
{
    pq_bytes *suffix = hs_malloc((size_t)(n ? n : 1) * (sizeof *suffix + sizeof(uint32_t)));
    if (!suffix)
        return HS_NOMEM;
    uint32_t *pre = (uint32_t *)(suffix + (n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        pre[i] = i ? common_prefix(&v[i - 1], &v[i]) : 0;
        suffix[i].p = v[i].p + pre[i];
        suffix[i].len = v[i].len - pre[i];
    }
    hs_status s = dbp_encode(pre, load_i32, n, true, out);
    if (s == HS_OK)
        s = encode_dlba(suffix, n, out);
    hs_free(suffix);
    return s;
}

static hs_status encode_bss(pq_ptype type, int w, const void *values, int64_t n, hs_buf *out)
{
    size_t nn = (size_t)n, bytes = nn * (size_t)w;
    if (type == PQ_FIXED_LEN_BYTE_ARRAY) {
        const pq_bytes *v = values;
        for (size_t i = 0; i < nn; i++)
            if (v[i].len != (uint32_t)w)
                return HS_INVALID;
        HS_TRY(hs_buf_reserve(out, bytes));
        uint8_t *o = out->data + out->len;
        for (size_t k = 0; k < (size_t)w; k++)
            for (size_t i = 0; i < nn; i++)
                o[k * nn + i] = v[i].p[k];
        out->len += bytes;
        return HS_OK;
    }
    HS_TRY(hs_buf_reserve(out, bytes));
    const uint8_t *s = values;
    uint8_t *o = out->data + out->len;
    if (w == 4) {
        for (size_t i = 0; i < nn; i++) {
            uint32_t x = ld32(s + 4 * i);
            o[i] = (uint8_t)x;
            o[nn + i] = (uint8_t)(x >> 8);
            o[2 * nn + i] = (uint8_t)(x >> 16);
            o[3 * nn + i] = (uint8_t)(x >> 24);
        }
    } else {
        for (size_t i = 0; i < nn; i++) {
            uint64_t x = ld64(s + 8 * i);
            for (size_t k = 0; k < 8; k++)
                o[k * nn + i] = (uint8_t)(x >> (8 * k));
        }
    }
    out->len += bytes;
    return HS_OK;
}

hs_status pq_values_encode(pq_encoding enc, pq_ptype type, int32_t type_length, const void *values,
                           int64_t n, hs_buf *out)
{
    if (n < 0 || (unsigned)type > PQ_FIXED_LEN_BYTE_ARRAY ||
        (type == PQ_FIXED_LEN_BYTE_ARRAY && type_length <= 0))
        return HS_INVALID;
    int w = pq_ptype_width(type, type_length);
    size_t at = out->len;
    hs_status s = HS_INVALID;
    switch (enc) {
    case PQ_ENC_PLAIN:
        s = encode_plain(type, w, values, n, out);
        break;
    case PQ_ENC_RLE:
        if (type == PQ_BOOLEAN) {
            s = hs_buf_put_u32le(out, 0);
            if (s == HS_OK)
                s = rle_encode_u8(values, n, 1, out);
            if (s == HS_OK)
                st32(out->data + at, (uint32_t)(out->len - at - 4));
        }
        break;
    case PQ_ENC_DELTA_BINARY_PACKED:
        if (type == PQ_INT32 || type == PQ_INT64)
            s = dbp_encode(values, type == PQ_INT32 ? load_i32 : load_i64, n, type == PQ_INT32, out);
        break;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
        if (type == PQ_BYTE_ARRAY)
            s = encode_dlba(values, n, out);
        break;
    case PQ_ENC_DELTA_BYTE_ARRAY:
        if (type == PQ_BYTE_ARRAY || type == PQ_FIXED_LEN_BYTE_ARRAY) {
            const pq_bytes *v = values;
            for (int64_t i = 0; type == PQ_FIXED_LEN_BYTE_ARRAY && i < n; i++)
                if (v[i].len != (uint32_t)w)
                    return HS_INVALID;
            s = encode_dba(v, n, out);
        }
        break;
    case PQ_ENC_BYTE_STREAM_SPLIT:
        if (type == PQ_FLOAT || type == PQ_DOUBLE || type == PQ_INT32 || type == PQ_INT64 ||
            type == PQ_FIXED_LEN_BYTE_ARRAY)
            s = encode_bss(type, w, values, n, out);
        break;
    default:
        break;
    }
    if (s != HS_OK)
        out->len = at;
    return s;
}

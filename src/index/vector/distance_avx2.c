/*
 * index/vector/distance_avx2.c - AVX2 + FMA + F16C distance kernels.
 *
 * Every function carries target("avx2,fma,f16c,popcnt"), so this file builds
 * without -march and runs only after distance.c has checked the CPU.
 *
 * float32 kernels: 4 independent 8-lane accumulators over blocks of 32
 * floats (FMA), then at most one block of 16 (accumulators 0, 1), one of 8
 * (accumulator 2), and a masked load (vmaskmovps, which never touches the
 * masked-off bytes) for the last 1-7 floats (accumulator 3): no scalar
 * tail loop.  The 4 accumulators are added pairwise, then the 8 lanes.
 * The "many" kernels run the very same inline body on each row, so their
 * results equal the single-pair kernels bit for bit; they prefetch the row
 * after next.
 *
 * float16: 8 halves -> 8 floats with vcvtph2ps, then the float32 scheme;
 * the last 1-7 halves are copied into a zeroed 8-half buffer (zeros add
 * nothing to any of the sums).
 *
 * int8: 16 bytes sign-extended to 16 int16 (vpmovsxbw), differences in
 * int16 (|a-b| <= 255), products summed pairwise into int32 (vpmaddwd);
 * tails through a zeroed 16-byte buffer.
 *
 * Popcounts: the nibble lookup table of Mula et al. (vpshufb on each nibble,
 * vpsadbw into 64-bit lanes) for blocks of 64 bytes; inputs under 128 bytes
 * and the tail use the scalar 64-bit popcnt kernels.
 */
#include "index/vector/distance_int.h"

#if defined(VD_X86)
#include <immintrin.h>

#define VD_TARGET __attribute__((target("avx2,fma,f16c,popcnt")))
#define VD_INLINE static inline __attribute__((target("avx2,fma,f16c,popcnt"), always_inline))

/* Row i of the sliding window: lanes [0, r) set for r = 1..7 at offset 8 - r. */
static const int32_t tail_mask_tbl[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};

VD_INLINE __m256i tail_mask(size_t r)
{
    return _mm256_loadu_si256((const __m256i *)(tail_mask_tbl + 8 - r));
}

VD_INLINE float hsum_ps(__m256 v)
{
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
    return _mm_cvtss_f32(x);
}

VD_INLINE int32_t hsum_epi32(__m256i v)
{
    __m128i x = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
    x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
    return _mm_cvtsi128_si32(x);
}

VD_INLINE float sum4(__m256 s0, __m256 s1, __m256 s2, __m256 s3)
{
    return hsum_ps(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
}

/* ---- float32 ---------------------------------------------------------- */

/* The block structure shared by l2sq, ip, l1 and norm2: STEP(acc, off) adds
 * the 8 floats at offset off into acc; MSTEP(acc, off, mask) the masked ones. */
#define VD_F32_BLOCKS(STEP, MSTEP)                                                  \
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;                     \
    size_t i = 0;                                                                   \
    for (; i + 32 <= d; i += 32) {                                                  \
        STEP(s0, i);                                                                \
        STEP(s1, i + 8);                                                            \
        STEP(s2, i + 16);                                                           \
        STEP(s3, i + 24);                                                           \
    }                                                                               \
    if (i + 16 <= d) {                                                              \
        STEP(s0, i);                                                                \
        STEP(s1, i + 8);                                                            \
        i += 16;                                                                    \
    }                                                                               \
    if (i + 8 <= d) {                                                               \
        STEP(s2, i);                                                                \
        i += 8;                                                                     \
    }                                                                               \
    if (i < d) {                                                                    \
        __m256i m_ = tail_mask(d - i);                                              \
        MSTEP(s3, i, m_);                                                           \
    }                                                                               \
    return sum4(s0, s1, s2, s3);

#define L2_STEP(acc, off)                                                           \
    do {                                                                            \
        __m256 t_ = _mm256_sub_ps(_mm256_loadu_ps(a + (off)), _mm256_loadu_ps(b + (off))); \
        acc = _mm256_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define L2_MSTEP(acc, off, m)                                                       \
    do {                                                                            \
        __m256 t_ = _mm256_sub_ps(_mm256_maskload_ps(a + (off), m),                 \
                                  _mm256_maskload_ps(b + (off), m));                \
        acc = _mm256_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define IP_STEP(acc, off) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + (off)), _mm256_loadu_ps(b + (off)), acc)
#define IP_MSTEP(acc, off, m)                                                       \
    acc = _mm256_fmadd_ps(_mm256_maskload_ps(a + (off), m), _mm256_maskload_ps(b + (off), m), acc)
#define L1_STEP(acc, off)                                                           \
    acc = _mm256_add_ps(acc, _mm256_andnot_ps(_mm256_set1_ps(-0.0f),                \
                        _mm256_sub_ps(_mm256_loadu_ps(a + (off)), _mm256_loadu_ps(b + (off)))))
#define L1_MSTEP(acc, off, m)                                                       \
    acc = _mm256_add_ps(acc, _mm256_andnot_ps(_mm256_set1_ps(-0.0f),                \
                        _mm256_sub_ps(_mm256_maskload_ps(a + (off), m),             \
                                      _mm256_maskload_ps(b + (off), m))))
#define N2_STEP(acc, off)                                                           \
    do {                                                                            \
        __m256 t_ = _mm256_loadu_ps(a + (off));                                     \
        acc = _mm256_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define N2_MSTEP(acc, off, m)                                                       \
    do {                                                                            \
        __m256 t_ = _mm256_maskload_ps(a + (off), m);                               \
        acc = _mm256_fmadd_ps(t_, t_, acc);                                         \
    } while (0)

VD_INLINE float l2sq_body(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(L2_STEP, L2_MSTEP)
}

VD_INLINE float ip_body(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(IP_STEP, IP_MSTEP)
}

VD_TARGET static float avx2_l2sq_f32(const float *a, const float *b, size_t d)
{
    return l2sq_body(a, b, d);
}

VD_TARGET static float avx2_ip_f32(const float *a, const float *b, size_t d)
{
    return ip_body(a, b, d);
}

VD_TARGET static float avx2_l1_f32(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(L1_STEP, L1_MSTEP)
}

VD_TARGET static float avx2_norm2_f32(const float *a, size_t d)
{
    VD_F32_BLOCKS(N2_STEP, N2_MSTEP)
}

/* Prefetch the first 256 bytes of a row; the hardware prefetcher follows. */
VD_INLINE void prefetch_row(const float *p, size_t d)
{
    const char *c = (const char *)p;
    size_t bytes = d * sizeof(float), off;
    for (off = 0; off < bytes && off < 256; off += 64)
        _mm_prefetch(c + off, _MM_HINT_T0);
}

VD_TARGET static void avx2_l2sq_f32_many(const float *q, const float *x, size_t n, size_t d,
                                         float *out)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (j + 2 < n)
            prefetch_row(x + (j + 2) * d, d);
        out[j] = l2sq_body(q, x + j * d, d);
    }
}

VD_TARGET static void avx2_ip_f32_many(const float *q, const float *x, size_t n, size_t d,
                                       float *out)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (j + 2 < n)
            prefetch_row(x + (j + 2) * d, d);
        out[j] = ip_body(q, x + j * d, d);
    }
}

VD_TARGET static void avx2_ip_norms_f32(const float *a, const float *b, size_t d, float out[3])
{
    __m256 ab0 = _mm256_setzero_ps(), ab1 = ab0, aa0 = ab0, aa1 = ab0, bb0 = ab0, bb1 = ab0;
    size_t i = 0;
    for (; i + 16 <= d; i += 16) {
        __m256 x0 = _mm256_loadu_ps(a + i), y0 = _mm256_loadu_ps(b + i);
        __m256 x1 = _mm256_loadu_ps(a + i + 8), y1 = _mm256_loadu_ps(b + i + 8);
        ab0 = _mm256_fmadd_ps(x0, y0, ab0);
        aa0 = _mm256_fmadd_ps(x0, x0, aa0);
        bb0 = _mm256_fmadd_ps(y0, y0, bb0);
        ab1 = _mm256_fmadd_ps(x1, y1, ab1);
        aa1 = _mm256_fmadd_ps(x1, x1, aa1);
        bb1 = _mm256_fmadd_ps(y1, y1, bb1);
    }
    if (i + 8 <= d) {
        __m256 x0 = _mm256_loadu_ps(a + i), y0 = _mm256_loadu_ps(b + i);
        ab0 = _mm256_fmadd_ps(x0, y0, ab0);
        aa0 = _mm256_fmadd_ps(x0, x0, aa0);
        bb0 = _mm256_fmadd_ps(y0, y0, bb0);
        i += 8;
    }
    if (i < d) {
        __m256i m = tail_mask(d - i);
        __m256 x1 = _mm256_maskload_ps(a + i, m), y1 = _mm256_maskload_ps(b + i, m);
        ab1 = _mm256_fmadd_ps(x1, y1, ab1);
        aa1 = _mm256_fmadd_ps(x1, x1, aa1);
        bb1 = _mm256_fmadd_ps(y1, y1, bb1);
    }
    out[0] = hsum_ps(_mm256_add_ps(ab0, ab1));
    out[1] = hsum_ps(_mm256_add_ps(aa0, aa1));
    out[2] = hsum_ps(_mm256_add_ps(bb0, bb1));
}

/* ---- float16 ---------------------------------------------------------- */

VD_INLINE __m256 load_h(const uint16_t *p)
{
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
}

VD_INLINE __m256 load_h_tail(const uint16_t *p, size_t r)
{
    uint16_t buf[8] = {0};
    memcpy(buf, p, r * sizeof(uint16_t));
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)buf));
}

#define VD_F16_BLOCKS(OP)                                                           \
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;                     \
    size_t i = 0;                                                                   \
    for (; i + 32 <= d; i += 32) {                                                  \
        OP(s0, load_h(a + i), load_h(b + i));                                       \
        OP(s1, load_h(a + i + 8), load_h(b + i + 8));                               \
        OP(s2, load_h(a + i + 16), load_h(b + i + 16));                             \
        OP(s3, load_h(a + i + 24), load_h(b + i + 24));                             \
    }                                                                               \
    for (; i + 8 <= d; i += 8)                                                      \
        OP(s0, load_h(a + i), load_h(b + i));                                       \
    if (i < d)                                                                      \
        OP(s1, load_h_tail(a + i, d - i), load_h_tail(b + i, d - i));               \
    return sum4(s0, s1, s2, s3);

#define H_L2(acc, x, y)                                                             \
    do {                                                                            \
        __m256 t_ = _mm256_sub_ps(x, y);                                            \
        acc = _mm256_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define H_IP(acc, x, y) acc = _mm256_fmadd_ps(x, y, acc)

VD_TARGET static float avx2_l2sq_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    VD_F16_BLOCKS(H_L2)
}

VD_TARGET static float avx2_ip_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    VD_F16_BLOCKS(H_IP)
}

VD_TARGET static void avx2_f16_to_f32(const uint16_t *in, float *out, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, load_h(in + i));
    for (; i < n; i++)
        out[i] = vd_f16_to_f32(in[i]);
}

/* ---- int8 ------------------------------------------------------------- */

VD_INLINE __m256i load_b(const int8_t *p)
{
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
}

VD_INLINE __m256i load_b_tail(const int8_t *p, size_t r)
{
    int8_t buf[16] = {0};
    memcpy(buf, p, r);
    return _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)buf));
}

#define VD_I8_BLOCKS(OP)                                                            \
    __m256i s0 = _mm256_setzero_si256(), s1 = s0;                                   \
    size_t i = 0;                                                                   \
    for (; i + 32 <= d; i += 32) {                                                  \
        OP(s0, load_b(a + i), load_b(b + i));                                       \
        OP(s1, load_b(a + i + 16), load_b(b + i + 16));                             \
    }                                                                               \
    if (i + 16 <= d) {                                                              \
        OP(s0, load_b(a + i), load_b(b + i));                                       \
        i += 16;                                                                    \
    }                                                                               \
    if (i < d)                                                                      \
        OP(s1, load_b_tail(a + i, d - i), load_b_tail(b + i, d - i));               \
    return hsum_epi32(_mm256_add_epi32(s0, s1));

#define B_L2(acc, x, y)                                                             \
    do {                                                                            \
        __m256i t_ = _mm256_sub_epi16(x, y);                                        \
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(t_, t_));                     \
    } while (0)
#define B_IP(acc, x, y) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, y))

VD_TARGET static int32_t avx2_l2sq_i8(const int8_t *a, const int8_t *b, size_t d)
{
    VD_I8_BLOCKS(B_L2)
}

VD_TARGET static int32_t avx2_ip_i8(const int8_t *a, const int8_t *b, size_t d)
{
    VD_I8_BLOCKS(B_IP)
}

/* ---- popcounts -------------------------------------------------------- */

VD_INLINE __m256i popcount_bytes(__m256i v)
{
    const __m256i lut = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
                                         0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low = _mm256_set1_epi8(0x0f);
    __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, low));
    __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
    return _mm256_add_epi8(lo, hi);
}

VD_INLINE uint64_t hsum_epi64(__m256i v)
{
    __m128i x = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return (uint64_t)_mm_cvtsi128_si64(x) + (uint64_t)_mm_extract_epi64(x, 1);
}

/* Two blocks per iteration into byte counters (at most 16 per byte), folded
 * into 64-bit lanes with vpsadbw. */
#define VD_POPCOUNT_AVX2(name, vop, scalar_fn)                                      \
    VD_TARGET uint64_t name(const uint8_t *a, const uint8_t *b, size_t n)           \
    {                                                                               \
        if (n < 128)                                                                \
            return scalar_fn(a, b, n);                                              \
        __m256i acc = _mm256_setzero_si256();                                       \
        size_t i = 0;                                                               \
        for (; i + 64 <= n; i += 64) {                                              \
            __m256i c0 = popcount_bytes(vop(_mm256_loadu_si256((const __m256i *)(a + i)),      \
                                            _mm256_loadu_si256((const __m256i *)(b + i))));    \
            __m256i c1 = popcount_bytes(vop(_mm256_loadu_si256((const __m256i *)(a + i + 32)), \
                                            _mm256_loadu_si256((const __m256i *)(b + i + 32))));\
            acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_add_epi8(c0, c1),    \
                                                        _mm256_setzero_si256()));   \
        }                                                                           \
        return hsum_epi64(acc) + scalar_fn(a + i, b + i, n - i);                    \
    }

VD_POPCOUNT_AVX2(vd_avx2_hamming_bytes, _mm256_xor_si256, vd_popcount_xor)
VD_POPCOUNT_AVX2(vd_avx2_and_count_bytes, _mm256_and_si256, vd_popcount_and)
VD_POPCOUNT_AVX2(vd_avx2_or_count_bytes, _mm256_or_si256, vd_popcount_or)

static const vd_table avx2_table = {
    .level = VD_AVX2,
    .name = "avx2",
    .l2sq_f32 = avx2_l2sq_f32,
    .ip_f32 = avx2_ip_f32,
    .l1_f32 = avx2_l1_f32,
    .norm2_f32 = avx2_norm2_f32,
    .l2sq_f16 = avx2_l2sq_f16,
    .ip_f16 = avx2_ip_f16,
    .l2sq_i8 = avx2_l2sq_i8,
    .ip_i8 = avx2_ip_i8,
    .hamming_bytes = vd_avx2_hamming_bytes,
    .and_count_bytes = vd_avx2_and_count_bytes,
    .or_count_bytes = vd_avx2_or_count_bytes,
    .l2sq_f32_many = avx2_l2sq_f32_many,
    .ip_f32_many = avx2_ip_f32_many,
    .ip_norms_f32 = avx2_ip_norms_f32,
    .f16_to_f32 = avx2_f16_to_f32,
};

const vd_table *vd_avx2_table(void)
{
    return &avx2_table;
}

#else
typedef int vd_avx2_not_built; /* not x86: this file compiles to nothing */
#endif

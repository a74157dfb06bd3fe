/*
 * index/vector/distance_avx512.c - AVX-512 distance kernels (F, BW, VL; the
 * popcounts also VPOPCNTDQ).
 *
 * Every function carries its target attribute, so this file builds without
 * -march; distance.c calls vd_avx512_table only after checking the CPU.
 *
 * float32: 4 independent 16-lane accumulators over blocks of 64 floats
 * (FMA), then at most one block of 32 (accumulators 0, 1), one of 16
 * (accumulator 2), and the last 1-15 floats with a zero-masked load
 * (accumulator 3; masked-off lanes are never read, so no fault past the
 * end).  The "many" kernels run the same inline body per row (bit-identical
 * results) and prefetch the row after next.
 *
 * float16: 16 halves -> 16 floats (vcvtph2ps); tail by zero-masked 16-bit
 * loads.  int8: 32 bytes -> 32 int16 (vpmovsxbw), vpmaddwd into int32;
 * tail by zero-masked byte loads.
 *
 * Popcounts: with VPOPCNTDQ, 64-byte blocks through vpopcntq into 64-bit
 * lanes and a zero-masked load for the last 1-63 bytes; CPUs without it
 * (Skylake-X, Cascade Lake) get the AVX2 nibble-table popcounts.
 *
 * Testing without an AVX-512 CPU: compiled with VD_AVX512_EMULATE defined,
 * the file takes its intrinsics from SIMDe (software emulation, see
 * bench/distance/avx512_emulated.h) so the logic (masks, tails, block
 * order) runs and is checked on any x86 machine.
 */
#include "index/vector/distance_int.h"

#if defined(VD_X86)

#if defined(VD_AVX512_EMULATE)
#include "avx512_emulated.h"
#define VD_TARGET
#define VD_TARGET_POPCNT
#define VD_INLINE static inline
#define vd_avx512_table vd_avx512_emulated_table
#else
#include <immintrin.h>
#define VD_ISA "avx512f,avx512bw,avx512vl,avx2,fma,f16c,popcnt"
#define VD_TARGET __attribute__((target(VD_ISA)))
#define VD_TARGET_POPCNT __attribute__((target(VD_ISA ",avx512vpopcntdq")))
#define VD_INLINE static inline __attribute__((target(VD_ISA), always_inline))
#endif

VD_INLINE __mmask16 mask16(size_t r) /* lanes [0, r), r < 16 */
{
    return (__mmask16)((1u << r) - 1u);
}

/* ---- float32 ---------------------------------------------------------- */

#define VD_F32_BLOCKS(STEP, MSTEP)                                                  \
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;                     \
    size_t i = 0;                                                                   \
    for (; i + 64 <= d; i += 64) {                                                  \
        STEP(s0, i);                                                                \
        STEP(s1, i + 16);                                                           \
        STEP(s2, i + 32);                                                           \
        STEP(s3, i + 48);                                                           \
    }                                                                               \
    if (i + 32 <= d) {                                                              \
        STEP(s0, i);                                                                \
        STEP(s1, i + 16);                                                           \
        i += 32;                                                                    \
    }                                                                               \
    if (i + 16 <= d) {                                                              \
        STEP(s2, i);                                                                \
        i += 16;                                                                    \
    }                                                                               \
    if (i < d) {                                                                    \
        __mmask16 m_ = mask16(d - i);                                               \
        MSTEP(s3, i, m_);                                                           \
    }                                                                               \
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));

#define L2_STEP(acc, off)                                                           \
    do {                                                                            \
        __m512 t_ = _mm512_sub_ps(_mm512_loadu_ps(a + (off)), _mm512_loadu_ps(b + (off))); \
        acc = _mm512_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define L2_MSTEP(acc, off, m)                                                       \
    do {                                                                            \
        __m512 t_ = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + (off)),              \
                                  _mm512_maskz_loadu_ps(m, b + (off)));             \
        acc = _mm512_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define IP_STEP(acc, off) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + (off)), _mm512_loadu_ps(b + (off)), acc)
#define IP_MSTEP(acc, off, m)                                                       \
    acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + (off)), _mm512_maskz_loadu_ps(m, b + (off)), acc)
#define L1_STEP(acc, off)                                                           \
    acc = _mm512_add_ps(acc, _mm512_abs_ps(_mm512_sub_ps(_mm512_loadu_ps(a + (off)), \
                                                         _mm512_loadu_ps(b + (off)))))
#define L1_MSTEP(acc, off, m)                                                       \
    acc = _mm512_add_ps(acc, _mm512_abs_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, a + (off)), \
                                                         _mm512_maskz_loadu_ps(m, b + (off)))))
#define N2_STEP(acc, off)                                                           \
    do {                                                                            \
        __m512 t_ = _mm512_loadu_ps(a + (off));                                     \
        acc = _mm512_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define N2_MSTEP(acc, off, m)                                                       \
    do {                                                                            \
        __m512 t_ = _mm512_maskz_loadu_ps(m, a + (off));                            \
        acc = _mm512_fmadd_ps(t_, t_, acc);                                         \
    } while (0)

VD_INLINE float l2sq_body(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(L2_STEP, L2_MSTEP)
}

VD_INLINE float ip_body(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(IP_STEP, IP_MSTEP)
}

VD_TARGET static float avx512_l2sq_f32(const float *a, const float *b, size_t d)
{
    return l2sq_body(a, b, d);
}

VD_TARGET static float avx512_ip_f32(const float *a, const float *b, size_t d)
{
    return ip_body(a, b, d);
}

VD_TARGET static float avx512_l1_f32(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(L1_STEP, L1_MSTEP)
}

VD_TARGET static float avx512_norm2_f32(const float *a, size_t d)
{
    VD_F32_BLOCKS(N2_STEP, N2_MSTEP)
}

VD_INLINE void prefetch_row(const float *p, size_t d)
{
    const char *c = (const char *)p;
    size_t bytes = d * sizeof(float), off;
    for (off = 0; off < bytes && off < 256; off += 64)
        _mm_prefetch(c + off, _MM_HINT_T0);
}

VD_TARGET static void avx512_l2sq_f32_many(const float *q, const float *x, size_t n, size_t d,
                                           float *out)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (j + 2 < n)
            prefetch_row(x + (j + 2) * d, d);
        out[j] = l2sq_body(q, x + j * d, d);
    }
}

VD_TARGET static void avx512_ip_f32_many(const float *q, const float *x, size_t n, size_t d,
                                         float *out)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (j + 2 < n)
            prefetch_row(x + (j + 2) * d, d);
        out[j] = ip_body(q, x + j * d, d);
    }
}

VD_TARGET static void avx512_ip_norms_f32(const float *a, const float *b, size_t d, float out[3])
{
    __m512 ab0 = _mm512_setzero_ps(), ab1 = ab0, aa0 = ab0, aa1 = ab0, bb0 = ab0, bb1 = ab0;
    size_t i = 0;
    for (; i + 32 <= d; i += 32) {
        __m512 x0 = _mm512_loadu_ps(a + i), y0 = _mm512_loadu_ps(b + i);
        __m512 x1 = _mm512_loadu_ps(a + i + 16), y1 = _mm512_loadu_ps(b + i + 16);
        ab0 = _mm512_fmadd_ps(x0, y0, ab0);
        aa0 = _mm512_fmadd_ps(x0, x0, aa0);
        bb0 = _mm512_fmadd_ps(y0, y0, bb0);
        ab1 = _mm512_fmadd_ps(x1, y1, ab1);
        aa1 = _mm512_fmadd_ps(x1, x1, aa1);
        bb1 = _mm512_fmadd_ps(y1, y1, bb1);
    }
    if (i + 16 <= d) {
        __m512 x0 = _mm512_loadu_ps(a + i), y0 = _mm512_loadu_ps(b + i);
        ab0 = _mm512_fmadd_ps(x0, y0, ab0);
        aa0 = _mm512_fmadd_ps(x0, x0, aa0);
        bb0 = _mm512_fmadd_ps(y0, y0, bb0);
        i += 16;
    }
    if (i < d) {
        __mmask16 m = mask16(d - i);
        __m512 x1 = _mm512_maskz_loadu_ps(m, a + i), y1 = _mm512_maskz_loadu_ps(m, b + i);
        ab1 = _mm512_fmadd_ps(x1, y1, ab1);
        aa1 = _mm512_fmadd_ps(x1, x1, aa1);
        bb1 = _mm512_fmadd_ps(y1, y1, bb1);
    }
    out[0] = _mm512_reduce_add_ps(_mm512_add_ps(ab0, ab1));
    out[1] = _mm512_reduce_add_ps(_mm512_add_ps(aa0, aa1));
    out[2] = _mm512_reduce_add_ps(_mm512_add_ps(bb0, bb1));
}

/* ---- float16 ---------------------------------------------------------- */

VD_INLINE __m512 load_h(const uint16_t *p)
{
    return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
}

VD_INLINE __m512 load_h_tail(const uint16_t *p, size_t r)
{
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask16(r), p));
}

#define VD_F16_BLOCKS(OP)                                                           \
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;                     \
    size_t i = 0;                                                                   \
    for (; i + 64 <= d; i += 64) {                                                  \
        OP(s0, load_h(a + i), load_h(b + i));                                       \
        OP(s1, load_h(a + i + 16), load_h(b + i + 16));                             \
        OP(s2, load_h(a + i + 32), load_h(b + i + 32));                             \
        OP(s3, load_h(a + i + 48), load_h(b + i + 48));                             \
    }                                                                               \
    for (; i + 16 <= d; i += 16)                                                    \
        OP(s0, load_h(a + i), load_h(b + i));                                       \
    if (i < d)                                                                      \
        OP(s1, load_h_tail(a + i, d - i), load_h_tail(b + i, d - i));               \
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));

#define H_L2(acc, x, y)                                                             \
    do {                                                                            \
        __m512 t_ = _mm512_sub_ps(x, y);                                            \
        acc = _mm512_fmadd_ps(t_, t_, acc);                                         \
    } while (0)
#define H_IP(acc, x, y) acc = _mm512_fmadd_ps(x, y, acc)

VD_TARGET static float avx512_l2sq_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    VD_F16_BLOCKS(H_L2)
}

VD_TARGET static float avx512_ip_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    VD_F16_BLOCKS(H_IP)
}

VD_TARGET static void avx512_f16_to_f32(const uint16_t *in, float *out, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i, load_h(in + i));
    if (i < n)
        _mm512_mask_storeu_ps(out + i, mask16(n - i), load_h_tail(in + i, n - i));
}

/* ---- int8 ------------------------------------------------------------- */

VD_INLINE __m512i load_b(const int8_t *p)
{
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)p));
}

VD_INLINE __m512i load_b_tail(const int8_t *p, size_t r) /* r < 32 */
{
    return _mm512_cvtepi8_epi16(_mm256_maskz_loadu_epi8((__mmask32)((1u << r) - 1u), p));
}

#define VD_I8_BLOCKS(OP)                                                            \
    __m512i s0 = _mm512_setzero_si512(), s1 = s0;                                   \
    size_t i = 0;                                                                   \
    for (; i + 64 <= d; i += 64) {                                                  \
        OP(s0, load_b(a + i), load_b(b + i));                                       \
        OP(s1, load_b(a + i + 32), load_b(b + i + 32));                             \
    }                                                                               \
    if (i + 32 <= d) {                                                              \
        OP(s0, load_b(a + i), load_b(b + i));                                       \
        i += 32;                                                                    \
    }                                                                               \
    if (i < d)                                                                      \
        OP(s1, load_b_tail(a + i, d - i), load_b_tail(b + i, d - i));               \
    return _mm512_reduce_add_epi32(_mm512_add_epi32(s0, s1));

#define B_L2(acc, x, y)                                                             \
    do {                                                                            \
        __m512i t_ = _mm512_sub_epi16(x, y);                                        \
        acc = _mm512_add_epi32(acc, _mm512_madd_epi16(t_, t_));                     \
    } while (0)
#define B_IP(acc, x, y) acc = _mm512_add_epi32(acc, _mm512_madd_epi16(x, y))

VD_TARGET static int32_t avx512_l2sq_i8(const int8_t *a, const int8_t *b, size_t d)
{
    VD_I8_BLOCKS(B_L2)
}

VD_TARGET static int32_t avx512_ip_i8(const int8_t *a, const int8_t *b, size_t d)
{
    VD_I8_BLOCKS(B_IP)
}

/* ---- popcounts (VPOPCNTDQ) -------------------------------------------- */

#define VD_POPCOUNT_512(name, vop)                                                  \
    VD_TARGET_POPCNT static uint64_t name(const uint8_t *a, const uint8_t *b, size_t n) \
    {                                                                               \
        __m512i acc = _mm512_setzero_si512();                                       \
        size_t i = 0;                                                               \
        for (; i + 64 <= n; i += 64)                                                \
            acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(                        \
                                            vop(_mm512_loadu_si512(a + i),          \
                                                _mm512_loadu_si512(b + i))));       \
        if (i < n) {                                                                \
            __mmask64 m = (__mmask64)((1ull << (n - i)) - 1u);                      \
            acc = _mm512_add_epi64(acc, _mm512_popcnt_epi64(                        \
                                            vop(_mm512_maskz_loadu_epi8(m, a + i),  \
                                                _mm512_maskz_loadu_epi8(m, b + i)))); \
        }                                                                           \
        return (uint64_t)_mm512_reduce_add_epi64(acc);                              \
    }

VD_POPCOUNT_512(avx512_hamming_bytes, _mm512_xor_si512)
VD_POPCOUNT_512(avx512_and_count_bytes, _mm512_and_si512)
VD_POPCOUNT_512(avx512_or_count_bytes, _mm512_or_si512)

#define VD_AVX512_COMMON                                                            \
    .level = VD_AVX512, .name = "avx512", .l2sq_f32 = avx512_l2sq_f32,              \
    .ip_f32 = avx512_ip_f32, .l1_f32 = avx512_l1_f32, .norm2_f32 = avx512_norm2_f32, \
    .l2sq_f16 = avx512_l2sq_f16, .ip_f16 = avx512_ip_f16, .l2sq_i8 = avx512_l2sq_i8, \
    .ip_i8 = avx512_ip_i8, .l2sq_f32_many = avx512_l2sq_f32_many,                   \
    .ip_f32_many = avx512_ip_f32_many, .ip_norms_f32 = avx512_ip_norms_f32,         \
    .f16_to_f32 = avx512_f16_to_f32

static const vd_table avx512_popcnt_table = {
    VD_AVX512_COMMON,
    .hamming_bytes = avx512_hamming_bytes,
    .and_count_bytes = avx512_and_count_bytes,
    .or_count_bytes = avx512_or_count_bytes,
};

static const vd_table avx512_table = {
    VD_AVX512_COMMON,
    .hamming_bytes = vd_avx2_hamming_bytes,
    .and_count_bytes = vd_avx2_and_count_bytes,
    .or_count_bytes = vd_avx2_or_count_bytes,
};

const vd_table *vd_avx512_table(int with_vpopcntdq)
{
    return with_vpopcntdq ? &avx512_popcnt_table : &avx512_table;
}

#else
typedef int vd_avx512_not_built; /* not x86: this file compiles to nothing */
#endif

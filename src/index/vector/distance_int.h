/*
 * index/vector/distance_int.h - what the files of the distance module share:
 * the per-level tables (one per file, each compiled with its own target
 * attributes) and small scalar helpers used for tails and by the API.
 *
 *   distance.c         scalar kernels, CPU detection, dispatch, ordering
 *   distance_avx2.c    AVX2 + FMA + F16C kernels          (x86-64 only)
 *   distance_avx512.c  AVX-512 F/BW/VL kernels, VPOPCNTDQ popcounts when
 *                      the CPU has them                   (x86-64 only)
 *   distance_neon.c    Advanced SIMD kernels              (aarch64 only)
 *   vector_api.c       the public API of hyperstream/vector.h, batches
 *
 * Nothing here is for other modules: they use distance.h.
 */
#ifndef HS_INDEX_VECTOR_DISTANCE_INT_H
#define HS_INDEX_VECTOR_DISTANCE_INT_H

#include "index/vector/distance.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define VD_X86 1
/* The AVX2 table (static storage); call only when the CPU has AVX2, FMA and F16C. */
const vd_table *vd_avx2_table(void);
/* The AVX-512 table; call only when the CPU has AVX-512 F, BW and VL (and
 * AVX2/FMA/F16C).  with_vpopcntdq selects the VPOPCNTDQ popcounts; without
 * it the popcounts are the AVX2 ones. */
const vd_table *vd_avx512_table(int with_vpopcntdq);
/* AVX2 popcount kernels, shared with the AVX-512 table. */
uint64_t vd_avx2_hamming_bytes(const uint8_t *a, const uint8_t *b, size_t n);
uint64_t vd_avx2_and_count_bytes(const uint8_t *a, const uint8_t *b, size_t n);
uint64_t vd_avx2_or_count_bytes(const uint8_t *a, const uint8_t *b, size_t n);
#endif
#if defined(__aarch64__)
const vd_table *vd_neon_table(void);
#endif
/* The scalar table (always present). */
const vd_table *vd_scalar_table(void);

/* Makes t the table in use (hs_simd_set_level); NULL = the best level. */
void vd_set_kernels(const vd_table *t);
/* Cosine distance from the sums a.b, a.a, b.b: 1 - clamp(ab / sqrt(aa bb),
 * -1, 1), NaN when aa or bb is 0 (pgvector). */
double vd_cosine_from_sums(double ab, double aa, double bb);

/* hs_distance_batch_f32 with the path forced (tests, benchmarks):
 * path 0 = choose, 1 = direct kernels, 2 = BLAS (L2, IP, COSINE only, else
 * HS_INVALID). */
hs_status vd_batch_f32(hs_metric m, const float *q, size_t nq, const float *x, size_t nx,
                       size_t d, float *out, int n_threads, int path, hs_error *err);

/* The scalar table's popcounts (vd_popcount_* below). */
uint64_t vd_scalar_hamming_bytes(const uint8_t *a, const uint8_t *b, size_t n);
uint64_t vd_scalar_and_count_bytes(const uint8_t *a, const uint8_t *b, size_t n);
uint64_t vd_scalar_or_count_bytes(const uint8_t *a, const uint8_t *b, size_t n);

/* Scalar popcounts of a op b over n bytes: 64-bit words (two chains), then
 * bytes.  Inline so the SIMD files use them for tails without a call. */
static inline uint64_t vd_load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

#define VD_POPCOUNT_INLINE(name, OP)                                               \
    static inline uint64_t name(const uint8_t *a, const uint8_t *b, size_t n)      \
    {                                                                              \
        uint64_t c0 = 0, c1 = 0;                                                   \
        size_t i = 0;                                                              \
        for (; i + 16 <= n; i += 16) {                                             \
            c0 += (uint64_t)__builtin_popcountll(vd_load64(a + i) OP vd_load64(b + i)); \
            c1 += (uint64_t)__builtin_popcountll(vd_load64(a + i + 8) OP               \
                                                 vd_load64(b + i + 8));             \
        }                                                                          \
        if (i + 8 <= n) {                                                          \
            c0 += (uint64_t)__builtin_popcountll(vd_load64(a + i) OP vd_load64(b + i)); \
            i += 8;                                                                \
        }                                                                          \
        for (; i < n; i++)                                                         \
            c1 += (uint64_t)__builtin_popcount((unsigned)(a[i] OP b[i]) & 0xffu);   \
        return c0 + c1;                                                            \
    }
VD_POPCOUNT_INLINE(vd_popcount_xor, ^)
VD_POPCOUNT_INLINE(vd_popcount_and, &)
VD_POPCOUNT_INLINE(vd_popcount_or, |)

/* IEEE binary16 bits -> float, exactly (subnormals, infinities, NaN). */
static inline float vd_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    float f;
    if (exp == 0) {
        f = (float)man * 0x1p-24f; /* zero or subnormal: exact */
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

#endif

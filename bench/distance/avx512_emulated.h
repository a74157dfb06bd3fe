/*
 * bench/distance/avx512_emulated.h - AVX-512 intrinsics in software, for
 * checking distance_avx512.c on machines without AVX-512
 * (check_avx512_emulated.sh compiles it with -DVD_AVX512_EMULATE).
 *
 * SIMDe (Debian libsimde-dev) provides most intrinsics under their native
 * names; the few that SIMDe 0.7 lacks are written here lane by lane.  The
 * masked loads read only the lanes whose mask bit is set, like the hardware,
 * so an ASan build of the check catches a mask that reaches past the end.
 */
#ifndef HS_BENCH_AVX512_EMULATED_H
#define HS_BENCH_AVX512_EMULATED_H

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <string.h>

typedef simde__mmask16 __mmask16;
typedef simde__mmask32 __mmask32;
typedef simde__mmask64 __mmask64;

/* SIMDe 0.7.4 aliases _mm512_madd_epi16 with the masked form's arguments. */
#undef _mm512_madd_epi16
#define _mm512_madd_epi16(a, b) simde_mm512_madd_epi16(a, b)

static inline __m512 _mm512_maskz_loadu_ps(__mmask16 k, const void *p)
{
    float lane[16];
    int i;
    for (i = 0; i < 16; i++)
        lane[i] = (k >> i) & 1 ? ((const float *)p)[i] : 0.0f;
    return simde_mm512_loadu_ps(lane);
}

static inline void _mm512_mask_storeu_ps(void *p, __mmask16 k, __m512 v)
{
    float lane[16];
    int i;
    simde_mm512_storeu_ps(lane, v);
    for (i = 0; i < 16; i++)
        if ((k >> i) & 1)
            ((float *)p)[i] = lane[i];
}

static inline __m256i _mm256_maskz_loadu_epi16(__mmask16 k, const void *p)
{
    uint16_t lane[16];
    int i;
    for (i = 0; i < 16; i++)
        lane[i] = (k >> i) & 1 ? ((const uint16_t *)p)[i] : 0;
    return simde_mm256_loadu_si256(lane);
}

static inline __m256i _mm256_maskz_loadu_epi8(__mmask32 k, const void *p)
{
    uint8_t lane[32];
    int i;
    for (i = 0; i < 32; i++)
        lane[i] = (k >> i) & 1 ? ((const uint8_t *)p)[i] : 0;
    return simde_mm256_loadu_si256(lane);
}

static inline __m512i _mm512_maskz_loadu_epi8(__mmask64 k, const void *p)
{
    uint8_t lane[64];
    int i;
    for (i = 0; i < 64; i++)
        lane[i] = (k >> i) & 1 ? ((const uint8_t *)p)[i] : 0;
    return simde_mm512_loadu_si512(lane);
}

/* vcvtph2ps: binary16 -> float, exact */
static inline __m512 _mm512_cvtph_ps(__m256i h)
{
    uint16_t in[16];
    float out[16];
    int i;
    simde_mm256_storeu_si256(in, h);
    for (i = 0; i < 16; i++)
        out[i] = vd_f16_to_f32(in[i]);
    return simde_mm512_loadu_ps(out);
}

/* The reductions: any fixed order will do for the check (the hardware
 * sequences GCC emits add halves pairwise). */
static inline float _mm512_reduce_add_ps(__m512 v)
{
    float lane[16];
    int w, i;
    simde_mm512_storeu_ps(lane, v);
    for (w = 8; w >= 1; w /= 2)
        for (i = 0; i < w; i++)
            lane[i] += lane[i + w];
    return lane[0];
}

static inline int32_t _mm512_reduce_add_epi32(__m512i v)
{
    uint32_t lane[16], s = 0;
    int i;
    simde_mm512_storeu_si512(lane, v);
    for (i = 0; i < 16; i++)
        s += lane[i];
    return (int32_t)s;
}

static inline int64_t _mm512_reduce_add_epi64(__m512i v)
{
    uint64_t lane[8], s = 0;
    int i;
    simde_mm512_storeu_si512(lane, v);
    for (i = 0; i < 8; i++)
        s += lane[i];
    return (int64_t)s;
}

#endif

/*
 * index/vector/distance_neon.c - Advanced SIMD (NEON) distance kernels for
 * aarch64, where NEON is part of the architecture (no run-time check).
 * On other architectures this file compiles to nothing.
 *
 * float32: 4 independent 4-lane accumulators over blocks of 16 floats
 * (vfmaq), then blocks of 4 into accumulator 0, and the last 1-3 floats
 * through a zeroed 4-float buffer into accumulator 1 (NEON has no masked
 * loads; zeros add nothing).  The "many" kernels run the same inline body
 * per row, so they equal the single-pair kernels bit for bit.
 * float16: vcvt_f32_f16 on 4 halves at a time, same scheme.
 * int8: 8 bytes widened to int16 (vsubl / vmull), accumulated into int32
 * lanes with vmlal / vpadal.  Popcounts: vcnt on 16-byte blocks, widened
 * pairwise into 64-bit lanes.
 */
#include "index/vector/distance_int.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define VD_INLINE static inline __attribute__((always_inline))

VD_INLINE float32x4_t load_tail(const float *p, size_t r) /* r < 4 */
{
    float buf[4] = {0, 0, 0, 0};
    memcpy(buf, p, r * sizeof(float));
    return vld1q_f32(buf);
}

#define VD_F32_BLOCKS(OP)                                                           \
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;                     \
    size_t i = 0;                                                                   \
    for (; i + 16 <= d; i += 16) {                                                  \
        OP(s0, vld1q_f32(a + i), vld1q_f32(b + i));                                 \
        OP(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));                         \
        OP(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));                         \
        OP(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));                       \
    }                                                                               \
    for (; i + 4 <= d; i += 4)                                                      \
        OP(s0, vld1q_f32(a + i), vld1q_f32(b + i));                                 \
    if (i < d)                                                                      \
        OP(s1, load_tail(a + i, d - i), load_tail(b + i, d - i));                   \
    return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));

#define F_L2(acc, x, y)                                                             \
    do {                                                                            \
        float32x4_t t_ = vsubq_f32(x, y);                                           \
        acc = vfmaq_f32(acc, t_, t_);                                               \
    } while (0)
#define F_IP(acc, x, y) acc = vfmaq_f32(acc, x, y)
#define F_L1(acc, x, y) acc = vaddq_f32(acc, vabdq_f32(x, y))

VD_INLINE float l2sq_body(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(F_L2)
}

VD_INLINE float ip_body(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(F_IP)
}

static float neon_l2sq_f32(const float *a, const float *b, size_t d)
{
    return l2sq_body(a, b, d);
}

static float neon_ip_f32(const float *a, const float *b, size_t d)
{
    return ip_body(a, b, d);
}

static float neon_l1_f32(const float *a, const float *b, size_t d)
{
    VD_F32_BLOCKS(F_L1)
}

static float neon_norm2_f32(const float *a, size_t d)
{
    return ip_body(a, a, d);
}

static void neon_l2sq_f32_many(const float *q, const float *x, size_t n, size_t d, float *out)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (j + 2 < n)
            __builtin_prefetch(x + (j + 2) * d);
        out[j] = l2sq_body(q, x + j * d, d);
    }
}

static void neon_ip_f32_many(const float *q, const float *x, size_t n, size_t d, float *out)
{
    size_t j;
    for (j = 0; j < n; j++) {
        if (j + 2 < n)
            __builtin_prefetch(x + (j + 2) * d);
        out[j] = ip_body(q, x + j * d, d);
    }
}

static void neon_ip_norms_f32(const float *a, const float *b, size_t d, float out[3])
{
    float32x4_t ab0 = vdupq_n_f32(0), ab1 = ab0, aa0 = ab0, aa1 = ab0, bb0 = ab0, bb1 = ab0;
    size_t i = 0;
    for (; i + 8 <= d; i += 8) {
        float32x4_t x0 = vld1q_f32(a + i), y0 = vld1q_f32(b + i);
        float32x4_t x1 = vld1q_f32(a + i + 4), y1 = vld1q_f32(b + i + 4);
        ab0 = vfmaq_f32(ab0, x0, y0);
        aa0 = vfmaq_f32(aa0, x0, x0);
        bb0 = vfmaq_f32(bb0, y0, y0);
        ab1 = vfmaq_f32(ab1, x1, y1);
        aa1 = vfmaq_f32(aa1, x1, x1);
        bb1 = vfmaq_f32(bb1, y1, y1);
    }
    if (i + 4 <= d) {
        float32x4_t x0 = vld1q_f32(a + i), y0 = vld1q_f32(b + i);
        ab0 = vfmaq_f32(ab0, x0, y0);
        aa0 = vfmaq_f32(aa0, x0, x0);
        bb0 = vfmaq_f32(bb0, y0, y0);
        i += 4;
    }
    if (i < d) {
        float32x4_t x1 = load_tail(a + i, d - i), y1 = load_tail(b + i, d - i);
        ab1 = vfmaq_f32(ab1, x1, y1);
        aa1 = vfmaq_f32(aa1, x1, x1);
        bb1 = vfmaq_f32(bb1, y1, y1);
    }
    out[0] = vaddvq_f32(vaddq_f32(ab0, ab1));
    out[1] = vaddvq_f32(vaddq_f32(aa0, aa1));
    out[2] = vaddvq_f32(vaddq_f32(bb0, bb1));
}

/* ---- float16 ---------------------------------------------------------- */

VD_INLINE float32x4_t load_h(const uint16_t *p)
{
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}

VD_INLINE float32x4_t load_h_tail(const uint16_t *p, size_t r) /* r < 4 */
{
    uint16_t buf[4] = {0, 0, 0, 0};
    memcpy(buf, p, r * sizeof(uint16_t));
    return load_h(buf);
}

#define VD_F16_BLOCKS(OP)                                                           \
    float32x4_t s0 = vdupq_n_f32(0), s1 = s0, s2 = s0, s3 = s0;                     \
    size_t i = 0;                                                                   \
    for (; i + 16 <= d; i += 16) {                                                  \
        OP(s0, load_h(a + i), load_h(b + i));                                       \
        OP(s1, load_h(a + i + 4), load_h(b + i + 4));                               \
        OP(s2, load_h(a + i + 8), load_h(b + i + 8));                               \
        OP(s3, load_h(a + i + 12), load_h(b + i + 12));                             \
    }                                                                               \
    for (; i + 4 <= d; i += 4)                                                      \
        OP(s0, load_h(a + i), load_h(b + i));                                       \
    if (i < d)                                                                      \
        OP(s1, load_h_tail(a + i, d - i), load_h_tail(b + i, d - i));               \
    return vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));

static float neon_l2sq_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    VD_F16_BLOCKS(F_L2)
}

static float neon_ip_f16(const uint16_t *a, const uint16_t *b, size_t d)
{
    VD_F16_BLOCKS(F_IP)
}

static void neon_f16_to_f32(const uint16_t *in, float *out, size_t n)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1q_f32(out + i, load_h(in + i));
    for (; i < n; i++)
        out[i] = vd_f16_to_f32(in[i]);
}

/* ---- int8 ------------------------------------------------------------- */

VD_INLINE int8x8_t load_b_tail(const int8_t *p, size_t r) /* r < 8 */
{
    int8_t buf[8] = {0};
    memcpy(buf, p, r);
    return vld1_s8(buf);
}

VD_INLINE int32x4_t l2_acc(int32x4_t acc, int8x8_t x, int8x8_t y)
{
    int16x8_t t = vsubl_s8(x, y);
    acc = vmlal_s16(acc, vget_low_s16(t), vget_low_s16(t));
    return vmlal_s16(acc, vget_high_s16(t), vget_high_s16(t));
}

VD_INLINE int32x4_t ip_acc(int32x4_t acc, int8x8_t x, int8x8_t y)
{
    return vpadalq_s16(acc, vmull_s8(x, y)); /* |x y| <= 16384 fits int16 */
}

#define VD_I8_BLOCKS(OP)                                                            \
    int32x4_t s0 = vdupq_n_s32(0), s1 = s0;                                         \
    size_t i = 0;                                                                   \
    for (; i + 16 <= d; i += 16) {                                                  \
        s0 = OP(s0, vld1_s8(a + i), vld1_s8(b + i));                                \
        s1 = OP(s1, vld1_s8(a + i + 8), vld1_s8(b + i + 8));                        \
    }                                                                               \
    if (i + 8 <= d) {                                                               \
        s0 = OP(s0, vld1_s8(a + i), vld1_s8(b + i));                                \
        i += 8;                                                                     \
    }                                                                               \
    if (i < d)                                                                      \
        s1 = OP(s1, load_b_tail(a + i, d - i), load_b_tail(b + i, d - i));          \
    return (int32_t)(uint32_t)vaddvq_u32(vreinterpretq_u32_s32(vaddq_s32(s0, s1)));

static int32_t neon_l2sq_i8(const int8_t *a, const int8_t *b, size_t d)
{
    VD_I8_BLOCKS(l2_acc)
}

static int32_t neon_ip_i8(const int8_t *a, const int8_t *b, size_t d)
{
    VD_I8_BLOCKS(ip_acc)
}

/* ---- popcounts -------------------------------------------------------- */

#define VD_POPCOUNT_NEON(name, vop, scalar_fn)                                      \
    static uint64_t name(const uint8_t *a, const uint8_t *b, size_t n)              \
    {                                                                               \
        uint64x2_t acc = vdupq_n_u64(0);                                            \
        size_t i = 0;                                                               \
        for (; i + 16 <= n; i += 16) {                                              \
            uint8x16_t c = vcntq_u8(vop(vld1q_u8(a + i), vld1q_u8(b + i)));         \
            acc = vpadalq_u32(acc, vpaddlq_u16(vpaddlq_u8(c)));                     \
        }                                                                           \
        return vaddvq_u64(acc) + scalar_fn(a + i, b + i, n - i);                    \
    }

VD_POPCOUNT_NEON(neon_hamming_bytes, veorq_u8, vd_popcount_xor)
VD_POPCOUNT_NEON(neon_and_count_bytes, vandq_u8, vd_popcount_and)
VD_POPCOUNT_NEON(neon_or_count_bytes, vorrq_u8, vd_popcount_or)

static const vd_table neon_table = {
    .level = VD_NEON,
    .name = "neon",
    .l2sq_f32 = neon_l2sq_f32,
    .ip_f32 = neon_ip_f32,
    .l1_f32 = neon_l1_f32,
    .norm2_f32 = neon_norm2_f32,
    .l2sq_f16 = neon_l2sq_f16,
    .ip_f16 = neon_ip_f16,
    .l2sq_i8 = neon_l2sq_i8,
    .ip_i8 = neon_ip_i8,
    .hamming_bytes = neon_hamming_bytes,
    .and_count_bytes = neon_and_count_bytes,
    .or_count_bytes = neon_or_count_bytes,
    .l2sq_f32_many = neon_l2sq_f32_many,
    .ip_f32_many = neon_ip_f32_many,
    .ip_norms_f32 = neon_ip_norms_f32,
    .f16_to_f32 = neon_f16_to_f32,
};

const vd_table *vd_neon_table(void)
{
    return &neon_table;
}

#else
typedef int vd_neon_not_built; /* not aarch64: this file compiles to nothing */
#endif

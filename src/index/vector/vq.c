/*
 * index/vector/vq.c - the quantizer front: validation, training sample,
 * dispatch by type, FLAT codes, threaded encoding, and the serialized form
 * of the trained parameters.
 *
 * Training sample: min(n, train_max) rows chosen uniformly by selection
 * sampling from the seed (in row order); they must be finite (HS_INVALID
 * names the row).  TQ8/TQ4/BIN need no data at all (n = 0 gives the Gaussian
 * codebook); PQ needs at least one row.
 *
 * Serialized parameters (vq_save appends, vq_load validates; little-endian):
 *
 *   offset  size         field
 *   ------  -----------  ----------------------------------------------------
 *   0       4            magic "HSVQ"
 *   4       2            version (1)
 *   6       1            type (vq_type)
 *   7       1            metric (0 L2, 1 COSINE, 2 IP)
 *   8       4            d, 1..65536
 *   12      4            code_size (must equal the size derived from the rest)
 *   16      8            seed (regenerates the rotation)
 *   24      4            rotation rounds (TQ8/TQ4/BIN: 1..8, else 0)
 *   28      4            L: codebook levels (TQ8 256, TQ4 16, else 0)
 *   32      4            PQ subspaces m (PQ: 1..d, else 0)
 *   36      4            PQ centroids per subspace k (PQ: 1..256, else 0)
 *   40      4 L          levels, float32, finite, strictly increasing
 *   ..      4 k d        PQ centroids, float32, finite (subspace-major)
 *   end-4   4            CRC-32 of all bytes before it
 *
 * TQ8 thus saves 1,068 bytes whatever d is; PQ saves its codebooks (4 k d).
 * vq_load checks every field and the exact length before allocating, and
 * what the tables it rebuilds take (rotations: 8 rounds d bytes; PQ: 1 KiB
 * per dimension) against the decode memory limit of the blob.  The
 * rotation is rebuilt from the seed (vq_rot_init in vq_tq.c), so changing
 * how it is built changes the format: bump the version then (test_vq pins
 * one rotation).
 */
#include "index/vector/vq_int.h"

#include "base/hash.h"
#include "base/mem.h"
#include "base/memlimit.h"

#include <math.h>

#define VQ_MAGIC "HSVQ"
#define VQ_VERSION 1
#define VQ_HEADER 40
#define VQ_DEFAULT_TRAIN_MAX 65536

int vq_use_avx2(void)
{
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
        return 0;
    vd_level l = vd_kernels()->level;
    return l == VD_AVX2 || l == VD_AVX512;
#else
    return 0;
#endif
}

static const char *type_name(vq_type t)
{
    switch (t) {
    case VQ_FLAT: return "FLAT";
    case VQ_TQ8: return "TQ8";
    case VQ_TQ4: return "TQ4";
    case VQ_PQ: return "PQ";
    case VQ_BIN: return "BIN";
    }
    return "?";
}

static size_t code_size_of(vq_type t, size_t d, int pq_m)
{
    switch (t) {
    case VQ_FLAT: return 4 * d;
    case VQ_TQ8: return 4 + d;
    case VQ_TQ4: return 4 + (d + 1) / 2;
    case VQ_PQ: return (size_t)pq_m;
    case VQ_BIN: return 8 + (d + 7) / 8;
    }
    return 0;
}

static int is_rotated(vq_type t) { return t == VQ_TQ8 || t == VQ_TQ4 || t == VQ_BIN; }

void vq_free(vq *q)
{
    if (!q)
        return;
    vq_rot_free(&q->rot);
    hs_free(q->pq_off);
    hs_free(q->pq_cent);
    hs_free(q->pq_ct);
    hs_free(q);
}

vq_type vq_get_type(const vq *q) { return q->type; }
size_t vq_dim(const vq *q) { return q->d; }
size_t vq_code_size(const vq *q) { return q->code_size; }

/* ---- training ---------------------------------------------------------- */

static hs_status check_metric(hs_metric m, hs_error *err)
{
    if (m != HS_METRIC_L2 && m != HS_METRIC_COSINE && m != HS_METRIC_IP)
        return hs_err_set(err, HS_INVALID, "quantizer: metric %d is not L2, cosine or IP", (int)m);
    return HS_OK;
}

hs_status vq_train(const vq_params *p, const float *x, size_t n, size_t d, vq **out,
                   hs_error *err)
{
    *out = NULL;
    if (!p)
        return hs_err_set(err, HS_INVALID, "quantizer: no parameters");
    if ((unsigned)p->type > VQ_BIN)
        return hs_err_set(err, HS_INVALID, "quantizer: unknown type %d", (int)p->type);
    HS_TRY(check_metric(p->metric, err));
    if (d == 0 || d > VQ_MAX_DIM)
        return hs_err_set(err, HS_INVALID, "quantizer: dimension %zu is not in 1..%u", d,
                          VQ_MAX_DIM);
    if (n > 0 && !x)
        return hs_err_set(err, HS_INVALID, "quantizer: no training vectors");
    if (p->type == VQ_PQ && n == 0)
        return hs_err_set(err, HS_INVALID, "quantizer: PQ needs training vectors");
    if (p->pq_m < 0 || p->train_max < 0)
        return hs_err_set(err, HS_INVALID, "quantizer: negative pq_m %d or train_max %d",
                          p->pq_m, p->train_max);

    vq *q = hs_calloc(1, sizeof *q);
    if (!q)
        return hs_err_nomem(err, sizeof *q);
    q->type = p->type;
    q->metric = p->metric;
    q->d = d;
    q->seed = p->seed ? p->seed : VQ_DEFAULT_SEED;
    q->n_threads = p->n_threads;
    hs_status st = HS_OK;
    if (q->type == VQ_PQ) {
        int m = p->pq_m ? p->pq_m : (int)(d / 4);
        if (m < 1)
            m = 1;
        if ((size_t)m > d)
            m = (int)d;
        st = vq_pq_layout(q, m, err);
    }
    q->code_size = code_size_of(q->type, d, q->pq_m);

    /* the sample: selection sampling, in row order */
    size_t want = p->train_max ? (size_t)p->train_max : VQ_DEFAULT_TRAIN_MAX;
    size_t n_rows = n < want ? n : want;
    size_t *rows = NULL;
    if (st == HS_OK && n_rows > 0 && q->type != VQ_FLAT) {
        rows = hs_malloc(n_rows * sizeof *rows);
        if (!rows)
            st = hs_err_nomem(err, n_rows * sizeof *rows);
        uint64_t rng = q->seed ^ 0x73616d706c65ull; /* "sample" */
        for (size_t i = 0, need = n_rows, k = 0; st == HS_OK && i < n && need > 0; i++)
            if (vq_rand_below(&rng, n - i) < need) {
                rows[k++] = i;
                need--;
            }
        for (size_t i = 0; st == HS_OK && i < n_rows; i++) {
            const float *v = x + rows[i] * d;
            for (size_t j = 0; j < d; j++)
                if (!isfinite(v[j])) {
                    st = hs_err_set(err, HS_INVALID,
                                    "quantizer: training vector %zu has a non-finite value at "
                                    "coordinate %zu", rows[i], j);
                    break;
                }
        }
    }
    if (st == HS_OK) {
        if (is_rotated(q->type))
            st = vq_tq_train(q, x, rows, rows ? n_rows : 0, err);
        else if (q->type == VQ_PQ)
            st = vq_pq_train(q, x, rows, n_rows, err);
    }
    hs_free(rows);
    if (st != HS_OK) {
        hs_err_prefix(err, "%s quantizer", type_name(p->type));
        vq_free(q);
        return st;
    }
    *out = q;
    return HS_OK;
}

/* ---- encoding ---------------------------------------------------------- */

/* Scratch floats one encoder/decoder needs. */
static size_t scratch_floats(const vq *q) { return 3 * q->d + 256 + 8; }

static void encode_range(const vq *q, const float *x, size_t lo, size_t hi, uint8_t *codes,
                         float *tmp)
{
    size_t d = q->d, cs = q->code_size;
    for (size_t i = lo; i < hi; i++) {
        const float *v = x + i * d;
        uint8_t *c = codes + i * cs;
        switch (q->type) {
        case VQ_FLAT: {
            float inv = 1.0f;
            if (q->metric == HS_METRIC_COSINE) {
                double s = 0;
                for (size_t j = 0; j < d; j++)
                    s += (double)v[j] * v[j];
                inv = s > 0 && isfinite(s) ? (float)(1.0 / sqrt(s)) : 0.0f;
            }
            for (size_t j = 0; j < d; j++)
                vq_put_f32(c + 4 * j, v[j] * inv);
            break;
        }
        case VQ_PQ: vq_pq_encode_one(q, v, c, tmp); break;
        default: vq_tq_encode_one(q, v, c, tmp); break;
        }
    }
}

typedef struct enc_task {
    const vq *q;
    const float *x;
    size_t lo, hi;
    uint8_t *codes;
    float *tmp;
} enc_task;

static hs_status enc_run(void *arg, hs_error *err)
{
    enc_task *t = arg;
    encode_range(t->q, t->x, t->lo, t->hi, t->codes, t->tmp);
    (void)err;
    return HS_OK;
}

hs_status vq_encode_checked(const vq *q, const float *x, size_t n, uint8_t *codes, hs_error *err)
{
    if (n == 0)
        return HS_OK;
    size_t nf = scratch_floats(q);
    int threads = q->n_threads;
    if ((double)n * q->d < (1 << 20) || threads == 1 || n < 64) {
        float *tmp = hs_malloc(nf * sizeof *tmp);
        if (!tmp)
            return hs_err_nomem(err, nf * sizeof *tmp);
        encode_range(q, x, 0, n, codes, tmp);
        hs_free(tmp);
        return HS_OK;
    }
    hs_pool *pool = NULL;
    HS_TRY(hs_pool_create(threads < 0 ? 0 : threads, &pool, err));
    size_t n_tasks = (size_t)hs_pool_size(pool) * 4;
    if (n_tasks > n / 16)
        n_tasks = n / 16;
    enc_task *tasks = hs_calloc(n_tasks, sizeof *tasks);
    float *tmp = hs_malloc(n_tasks * nf * sizeof *tmp);
    hs_group *g = NULL;
    hs_status st = tasks && tmp ? hs_group_create(pool, &g, err)
                                : hs_err_nomem(err, n_tasks * nf * sizeof *tmp);
    for (size_t t = 0; st == HS_OK && t < n_tasks; t++) {
        tasks[t] = (enc_task){q, x, n * t / n_tasks, n * (t + 1) / n_tasks, codes, tmp + t * nf};
        if ((st = hs_group_submit(g, enc_run, &tasks[t])) != HS_OK)
            hs_err_set(err, st, "quantizer: cannot submit an encoding task");
    }
    if (g) {
        hs_status w = hs_group_wait(g, err);
        if (st == HS_OK)
            st = w;
    }
    hs_group_destroy(g);
    hs_pool_destroy(pool);
    hs_free(tasks);
    hs_free(tmp);
    return st;
}

void vq_encode(const vq *q, const float *x, size_t n, uint8_t *codes)
{
    if (vq_encode_checked(q, x, n, codes, NULL) != HS_OK)
        memset(codes, 0, n * q->code_size); /* out of memory: see vq_encode_checked */
}

hs_status vq_decode(const vq *q, const uint8_t *codes, size_t n, float *out, hs_error *err)
{
    size_t d = q->d, cs = q->code_size;
    float *tmp = hs_malloc(scratch_floats(q) * sizeof *tmp);
    if (!tmp)
        return hs_err_nomem(err, scratch_floats(q) * sizeof *tmp);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *c = codes + i * cs;
        float *o = out + i * d;
        if (q->type == VQ_FLAT) {
            for (size_t j = 0; j < d; j++)
                o[j] = vq_get_f32(c + 4 * j);
        } else if (q->type == VQ_PQ) {
            vq_pq_decode_one(q, c, o);
        } else {
            vq_tq_decode_one(q, c, o, tmp);
        }
    }
    hs_free(tmp);
    return HS_OK;
}

hs_status vq_rotate(const vq *q, const float *x, size_t n, float *out, hs_error *err)
{
    if (!is_rotated(q->type))
        return hs_err_set(err, HS_INVALID, "%s quantizer has no rotation", type_name(q->type));
    float *tmp = hs_malloc(q->d * sizeof *tmp);
    if (!tmp)
        return hs_err_nomem(err, q->d * sizeof *tmp);
    for (size_t i = 0; i < n; i++)
        vq_rot_apply(&q->rot, x + i * q->d, out + i * q->d, tmp);
    hs_free(tmp);
    return HS_OK;
}

/* ---- queries ----------------------------------------------------------- */

static float flat_dist(const vq_query *qq, const uint8_t *code)
{
    const float *x = (const float *)(const void *)code; /* FLAT codes are 4-byte aligned */
    size_t d = qq->q->d;
    switch (qq->q->metric) {
    case HS_METRIC_COSINE: return 1.0f - qq->vk->ip_f32(qq->qv, x, d);
    case HS_METRIC_IP: return -qq->vk->ip_f32(qq->qv, x, d);
    default: return qq->vk->l2sq_f32(qq->qv, x, d);
    }
}

static hs_status flat_query_new(const vq *q, const float *query, vq_query *qq, hs_error *err)
{
    size_t d = q->d;
    qq->mem = hs_malloc(d * sizeof(float));
    if (!qq->mem)
        return hs_err_nomem(err, d * sizeof(float));
    qq->qv = qq->mem;
    float inv = 1.0f;
    if (q->metric == HS_METRIC_COSINE) {
        double s = 0;
        for (size_t j = 0; j < d; j++)
            s += (double)query[j] * query[j];
        inv = s > 0 && isfinite(s) ? (float)(1.0 / sqrt(s)) : 0.0f;
    }
    for (size_t j = 0; j < d; j++)
        qq->qv[j] = query[j] * inv;
    qq->dist = flat_dist;
    return HS_OK;
}

hs_status vq_query_new(const vq *q, const float *query, vq_query **out, hs_error *err)
{
    *out = NULL;
    if (!q || !query)
        return hs_err_set(err, HS_INVALID, "quantizer: no query");
    vq_query *qq = hs_calloc(1, sizeof *qq);
    if (!qq)
        return hs_err_nomem(err, sizeof *qq);
    qq->q = q;
    qq->vk = vd_kernels();
    hs_status st;
    switch (q->type) {
    case VQ_FLAT: st = flat_query_new(q, query, qq, err); break;
    case VQ_PQ: st = vq_pq_query_new(q, query, qq, err); break;
    default: st = vq_tq_query_new(q, query, qq, err); break;
    }
    if (st != HS_OK) {
        vq_query_free(qq);
        return st;
    }
    *out = qq;
    return HS_OK;
}

void vq_query_free(vq_query *qq)
{
    if (!qq)
        return;
    hs_free(qq->mem);
    hs_free(qq);
}

float vq_query_dist(const vq_query *qq, const uint8_t *code) { return qq->dist(qq, code); }

void vq_query_dist_many(const vq_query *qq, const uint8_t *codes, size_t n, float *out)
{
    size_t cs = qq->q->code_size;
    vq_dist_fn f = qq->dist;
    for (size_t i = 0; i < n; i++) {
        if (i + 2 < n)
            __builtin_prefetch(codes + (i + 2) * cs);
        out[i] = f(qq, codes + i * cs);
    }
}

float vq_code_dist(const vq *q, const uint8_t *a, const uint8_t *b)
{
    if (q->type == VQ_FLAT) {
        const vd_table *vk = vd_kernels();
        const float *x = (const float *)(const void *)a, *y = (const float *)(const void *)b;
        switch (q->metric) {
        case HS_METRIC_COSINE: return 1.0f - vk->ip_f32(x, y, q->d);
        case HS_METRIC_IP: return -vk->ip_f32(x, y, q->d);
        default: return vk->l2sq_f32(x, y, q->d);
        }
    }
    if (q->type == VQ_PQ)
        return vq_pq_code_dist(q, a, b);
    return vq_tq_code_dist(q, a, b);
}

/* ---- serialization ----------------------------------------------------- */

static void put_u16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64(const uint8_t *p) { return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

static void put_floats(uint8_t *p, const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        put_u32(p + 4 * i, u);
    }
}

static float get_float(const uint8_t *p)
{
    uint32_t u = get_u32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

hs_status vq_save(const vq *q, hs_buf *out, hs_error *err)
{
    size_t L = (size_t)q->n_levels, pqf = q->type == VQ_PQ ? (size_t)q->pq_k * q->d : 0;
    size_t total = VQ_HEADER + 4 * L + 4 * pqf + 4;
    size_t start = out->len;
    if (hs_buf_append_zeros(out, total) != HS_OK)
        return hs_err_nomem(err, total);
    uint8_t *p = out->data + start;
    memcpy(p, VQ_MAGIC, 4);
    put_u16(p + 4, VQ_VERSION);
    p[6] = (uint8_t)q->type;
    p[7] = (uint8_t)q->metric;
    put_u32(p + 8, (uint32_t)q->d);
    put_u32(p + 12, (uint32_t)q->code_size);
    put_u64(p + 16, q->seed);
    put_u32(p + 24, is_rotated(q->type) ? (uint32_t)q->rot.rounds : 0);
    put_u32(p + 28, (uint32_t)L);
    put_u32(p + 32, q->type == VQ_PQ ? (uint32_t)q->pq_m : 0);
    put_u32(p + 36, q->type == VQ_PQ ? (uint32_t)q->pq_k : 0);
    put_floats(p + VQ_HEADER, q->level, L);
    if (pqf)
        put_floats(p + VQ_HEADER + 4 * L, q->pq_cent, pqf);
    put_u32(p + total - 4, hs_crc32(0, p, total - 4));
    return HS_OK;
}

hs_status vq_load(const uint8_t *p, size_t n, vq **out, hs_error *err)
{
    *out = NULL;
    if (!p || n < VQ_HEADER + 4)
        return HS_CORRUPT_AT(err, "quantizer: %zu bytes is shorter than the %d-byte header", n,
                             VQ_HEADER + 4);
    if (memcmp(p, VQ_MAGIC, 4) != 0)
        return HS_CORRUPT_AT(err, "quantizer: bad magic");
    unsigned version = p[4] | (unsigned)p[5] << 8;
    if (version != VQ_VERSION)
        return HS_CORRUPT_AT(err, "quantizer: version %u is not %d", version, VQ_VERSION);
    unsigned type = p[6], metric = p[7];
    if (type > VQ_BIN)
        return HS_CORRUPT_AT(err, "quantizer: unknown type %u", type);
    if (metric != HS_METRIC_L2 && metric != HS_METRIC_COSINE && metric != HS_METRIC_IP)
        return HS_CORRUPT_AT(err, "quantizer: unknown metric %u", metric);
    uint32_t d = get_u32(p + 8), cs = get_u32(p + 12), rounds = get_u32(p + 24);
    uint32_t L = get_u32(p + 28), m = get_u32(p + 32), k = get_u32(p + 36);
    if (d == 0 || d > VQ_MAX_DIM)
        return HS_CORRUPT_AT(err, "quantizer: dimension %u is not in 1..%u", d, VQ_MAX_DIM);
    int rot = is_rotated((vq_type)type);
    if (rot ? rounds < 1 || rounds > VQ_MAX_ROUNDS : rounds != 0)
        return HS_CORRUPT_AT(err, "quantizer: %u rotation rounds for type %s", rounds,
                             type_name((vq_type)type));
    uint32_t want_L = type == VQ_TQ8 ? 256 : type == VQ_TQ4 ? 16 : 0;
    if (L != want_L)
        return HS_CORRUPT_AT(err, "quantizer: %u levels for type %s", L, type_name((vq_type)type));
    if (type == VQ_PQ ? m < 1 || m > d || k < 1 || k > 256 : m != 0 || k != 0)
        return HS_CORRUPT_AT(err, "quantizer: PQ m=%u k=%u for type %s and dimension %u", m, k,
                             type_name((vq_type)type), d);
    if (cs != code_size_of((vq_type)type, d, (int)m))
        return HS_CORRUPT_AT(err, "quantizer: code size %u does not match the type", cs);
    uint64_t pqf = type == VQ_PQ ? (uint64_t)k * d : 0;
    uint64_t total = VQ_HEADER + 4ull * L + 4ull * pqf + 4;
    if ((uint64_t)n != total)
        return HS_CORRUPT_AT(err, "quantizer: %zu bytes, the header describes %llu", n,
                             (unsigned long long)total);
    uint32_t crc = hs_crc32(0, p, n - 4);
    if (crc != get_u32(p + n - 4))
        return HS_CORRUPT_AT(err, "quantizer: checksum mismatch");
    const uint8_t *lv = p + VQ_HEADER;
    for (uint32_t i = 0; i < L; i++) {
        float f = get_float(lv + 4 * i);
        if (!isfinite(f) || (i > 0 && !(f > get_float(lv + 4 * (i - 1)))))
            return HS_CORRUPT_AT(err, "quantizer: level %u is not finite and increasing", i);
    }
    const uint8_t *pc = lv + 4 * (size_t)L;
    for (uint64_t i = 0; i < pqf; i++)
        if (!isfinite(get_float(pc + 4 * i)))
            return HS_CORRUPT_AT(err, "quantizer: PQ centroid value %llu is not finite",
                                 (unsigned long long)i);

    /* What the tables take, within the decode memory limit of the blob (a
     * PQ blob of k = 1 expands 256 times into its lookup tables). */
    hs_decode_budget budget;
    hs_decode_budget_init(&budget, n);
    uint64_t need = rot ? 8ull * rounds * d : 4ull * (m + 1) + 4ull * pqf + 4ull * 256 * d;
    HS_TRY(HS_DECODE_CHARGE(&budget, need, err, "quantizer"));

    vq *q = hs_calloc(1, sizeof *q);
    if (!q)
        return hs_err_nomem(err, sizeof *q);
    q->type = (vq_type)type;
    q->metric = (hs_metric)metric;
    q->d = d;
    q->code_size = cs;
    q->seed = get_u64(p + 16);
    q->n_threads = 0;
    hs_status st = HS_OK;
    if (rot) {
        st = vq_rot_init(&q->rot, d, (int)rounds, q->seed, err);
        q->n_levels = (int)L;
        for (uint32_t i = 0; i < L; i++)
            q->level[i] = get_float(lv + 4 * i);
        if (st == HS_OK)
            vq_tq_finish(q);
    } else if (type == VQ_PQ) {
        st = vq_pq_layout(q, (int)m, err);
        q->pq_k = (int)k;
        if (st == HS_OK && !(q->pq_cent = hs_malloc((size_t)pqf * sizeof(float))))
            st = hs_err_nomem(err, (size_t)pqf * sizeof(float));
        for (size_t i = 0; st == HS_OK && i < pqf; i++)
            q->pq_cent[i] = get_float(pc + 4 * i);
        if (st == HS_OK)
            st = vq_pq_finish(q, err);
    }
    if (st != HS_OK) {
        vq_free(q);
        return st;
    }
    *out = q;
    return HS_OK;
}

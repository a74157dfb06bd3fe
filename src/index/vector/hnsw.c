/*
 * index/vector/hnsw.c - HNSW graphs (hnswlib's algorithm) over one data
 * file's vectors, flat or quantized, optionally split into IVF lists, saved
 * as one checksummed image that is searched in place.
 *
 * Slots and graphs
 * ----------------
 * Every row of the file is one slot 0..n-1.  Without IVF there is one graph
 * and slot == row.  With IVF (ivf_lists > 0) the rows are grouped by their
 * nearest k-means centroid; graph g owns the slots [base_g, base_g + n_g)
 * and ids[slot] is the row.  Links inside a graph are graph-local node
 * numbers (slot - base_g), so every graph is an ordinary HNSW graph.
 *
 * Per slot, level-0 links and a payload:
 *
 *   links   4             u32 count of level-0 links (<= M0 = 2M)
 *           4 * M0        u32 links (graph-local node numbers)
 *   payload code_size     VQ_FLAT: d float32 (normalized for COSINE), else
 *                         the vq code (vq_encode); zero padding to a
 *                         multiple of 4
 *
 * Built indexes (and version 1 images) keep both in one level-0 element
 * per slot (hnswlib's data_level0_memory_ layout: links, then payload;
 * elem_size bytes).  Version 2 images keep the links alone in level 0 and
 * the payloads in a section of their own right after the header, so that
 * the head of the image holds every exact vector (flat) or code: a reader
 * that fetches byte ranges (an object store) gets what an exact search over
 * a few allowed rows needs without the graph (hnsw_open_prefix; about half
 * of a flat image at d = 32, M = 16).  The search reads payloads through
 * pay + slot * pay_stride; search_l0_t has an instance per layout, so the
 * interleaved one keeps a single base pointer.  Measured (docs/storage.md,
 * "Cold filtered vector search"): exact search over few rows faster
 * (contiguous vectors), the warm walk on a version 2 image 5-9% slower at
 * d = 32 (links and vector no longer neighbours in memory): so tables on
 * local disk write version 1 (hnsw_save_version; table/vindex.c chooses by
 * the table's location) and only object stores version 2.
 *
 * Levels above 0: a slot with level L owns L blocks of (1 + M) u32 (count,
 * M links), blocks ustart[slot] .. ustart[slot + 1] - 1 of `upper`, level
 * l in block ustart[slot] + l - 1; so the level of a slot is
 * ustart[slot + 1] - ustart[slot] and ustart costs 4 bytes per row (hnswlib
 * keeps a level int and a pointer per element).
 *
 * Image (all integers little-endian; each section starts at a multiple of 64
 * bytes from the image start, zero padding between; offsets are derived from
 * the header, nothing else points anywhere):
 *
 *   offset  size                 field
 *   0       8                    magic "HSHNSWIX"
 *   8       4                    version (2; 1 is still read)
 *   12      4                    header bytes (128)
 *   16      8                    image bytes, checksum included
 *   24      8                    n (rows)
 *   32      4                    d
 *   36      4                    metric (hs_metric: L2, COSINE, IP)
 *   40      4                    quantizer (vq_type)
 *   44      4                    M
 *   48      4                    ef_construction
 *   52      4                    ef_search
 *   56      4                    rerank
 *   60      4                    ivf_lists (0 = no IVF, else = graphs)
 *   64      4                    ivf_nprobe
 *   68      4                    graphs
 *   72      4                    code_size
 *   76      4                    level-0 element bytes (version 1: links and
 *                                payload; version 2: links, 4 + 4 * M0)
 *   80      8                    seed
 *   88      8                    upper blocks
 *   96      8                    vq blob bytes (0 for VQ_FLAT)
 *   104     8                    version 2: xxh64 of the payload section
 *   112     8                    version 2: xxh64 of header bytes 0..112
 *   120     8                    zero (version 1: 104..128 zero)
 *   then sections:   payloads (version 2: n * align4(code_size), by slot) |
 *                    vq blob (vq_save) | IVF centroids (lists * d f32) |
 *                    graph table (graphs * {u32 base, n, entry, max_level}) |
 *                    ids (IVF: n u32) | ustart ((n + 1) u32) |
 *                    upper (blocks * (1 + M) u32) | level 0 (n elements)
 *   last    8                    xxh64 (seed 0) of every byte before it, at
 *                                the first multiple of 8 after level 0
 *
 * hnsw_open checks the checksum (and, version 2, the header's own) and then
 * everything the search relies on:
 * the size of every section, every link < n_g, counts <= M / M0, levels
 * consistent (a link at level l points to a node that has level l, the
 * entry has the graph's top level), graph ranges contiguous, IVF ids a
 * permutation; after that the search reads the borrowed bytes in place.
 * (An image at an address that is not 4-byte aligned is copied once, since
 * its arrays are read as u32 and float; mmaps and malloc'd buffers are not.)
 *
 * Build (hnswlib's addPoint): levels are drawn up front from (seed, row), so
 * the upper blocks are one array.  Node 0 of a graph is inserted first;
 * the rest are taken by worker threads from an atomic counter.  Each node's
 * link lists are guarded by a striped mutex (held only to copy or change one
 * list, never two at once, so no lock order is needed); the entry point and
 * top level by a global mutex, held for a whole insertion only when the new
 * node raises the top level (as hnswlib does).  Graphs under 4096 nodes are
 * built by one thread; with one thread the build is deterministic.  The
 * calling thread inserts too and is the one that calls progress.  Neighbours are chosen by hnswlib's heuristic
 * (getNeighborsByHeuristic2): M at every level for the new node, and a full
 * neighbour list (M, or M0 at level 0) is re-pruned with the same heuristic.
 * A new node's neighbours link back to it only once its own lists exist at
 * every level (binsert says why).
 * The graph is always built on exact vectors (normalized for COSINE), also
 * for quantized indexes, whose codes are then only what search reads.
 *
 * Search: greedy descent through the upper levels, then the level-0 beam
 * search with ef (hnswlib's searchBaseLayerST) on the payload: exact float
 * distances, or vq_query_dist on codes.  With an allow-list the traversal
 * walks the whole graph but only allowed nodes enter the result set, and
 * it stops only once ef allowed nodes are held (or nothing is left to
 * visit).  An allow-list of at most exact_threshold rows is searched
 * exactly instead; a graph search that finds fewer than min(k, allowed)
 * rows is widened (ef and nprobe doubled) and, when nothing is left to
 * widen, replaced by exact search: the answer always has min(k, allowed)
 * rows.  Quantized indexes keep max(k * rerank, ef) candidates (rerank:
 * hnsw_default_rerank, 1 for TQ8 and 4 otherwise, unless set) and rerank
 * them with exact vectors from the caller's fetch callback (ids ascending,
 * so the table layer reads rows in file order).  Distances are the metric's
 * ordering distances; a flat COSINE index compares normalized vectors, so a
 * zero vector is at distance 1 from everything (vd_order_dist_f32 says NaN;
 * exact search and reranking sort NaN last as +inf).
 *
 * Per-query memory: a scratch (visited tags with epochs, the two heaps,
 * buffers) is taken from a pool in the index and returned after the query,
 * so a query allocates nothing once the pool is warm (vq_query_new aside).
 */
#include "index/vector/hnsw.h"

#include "base/hash.h"
#include "base/mem.h"
#include "index/vector/distance.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "hnsw images are little-endian and read in place"
#endif

#define HNSW_VERSION 2u          /* written; version 1 is still read */
#define HNSW_VERSION_1 1u
#define HNSW_HEADER_BYTES 128u
#define HNSW_ALIGN 64u
#define HNSW_MAX_M 256
#define HNSW_MAX_LEVEL 48u
#define HNSW_MAX_DIM 65536u
#define HNSW_MAX_EF (1 << 22)
#define HNSW_MAX_THREADS 256
#define HNSW_FETCH_BATCH 256

static const uint8_t HNSW_MAGIC[8] = { 'H', 'S', 'H', 'N', 'S', 'W', 'I', 'X' };

/* ---- types -------------------------------------------------------------- */

typedef struct hnsw_pair {
    float d;
    uint32_t id;
} hnsw_pair;

typedef struct hnsw_graph {
    uint32_t base;        /* first slot */
    uint32_t n;           /* nodes: slots base .. base + n - 1 */
    uint32_t entry;       /* entry node (graph-local); 0 when n == 0 */
    uint32_t max_level;   /* level of the entry node */
} hnsw_graph;

/* Per-query (or per build thread) working memory, pooled in the index. */
typedef struct hnsw_scratch {
    struct hnsw_scratch *next;
    uint16_t *tags;       /* visited: tags[node] == epoch */
    size_t n_tags;
    uint16_t epoch;
    hnsw_pair *cand;      /* min-heap of candidates to expand */
    size_t cand_cap;
    hnsw_pair *top;       /* max-heap of the best ef found */
    size_t top_cap;
    hnsw_pair *res;       /* max-heap of merged results (row ids) */
    size_t res_cap;
    hnsw_pair *tmp;       /* sorting and neighbour selection */
    size_t tmp_cap;
    uint32_t *ibuf;       /* row ids to fetch */
    size_t ibuf_cap;
    float *fbuf;          /* prepared query, fetched vectors */
    size_t fbuf_cap;
    float *qbuf;          /* the query normalized (COSINE) */
    size_t qbuf_cap;
    uint64_t *bits;       /* the allow-list as a dense bitset of rows (dense_allow) */
    size_t bits_cap;
    uint64_t *vis;        /* visited, a bit a node: the two-hop walk (search_l0_t) */
    size_t vis_cap;
    uint32_t *sel;        /* build: the new node's chosen neighbours, M per level */
    size_t sel_cap;
} hnsw_scratch;

typedef struct hnsw_pool {
    pthread_mutex_t mu;
    hnsw_scratch *free_list;
} hnsw_pool;

struct hnsw_index {
    /* parameters (resolved) */
    size_t n, d;
    hs_metric metric;
    vq_type quant;
    int M, M0, ef_construction, ef_search, rerank, ivf_lists, ivf_nprobe;
    uint64_t seed;
    uint32_t n_graphs;
    size_t code_size, elem_size, payload_off;
    size_t n_upper;
    size_t vq_bytes;
    uint32_t max_graph_n;
    /* arrays: owned after hnsw_build, borrowed from the image after hnsw_open */
    const uint8_t *level0;     /* n * elem_size */
    const uint8_t *pay;        /* payload of slot s at pay + s * pay_stride: inside level0
                                  (built, version 1) or its own section (version 2) */
    size_t pay_stride;
    bool pay_apart;            /* pay is not inside level0 (version 2 image) */
    bool partial;              /* hnsw_open_prefix: header (+ flat payload), no graph */
    const uint32_t *ustart;    /* n + 1 */
    const uint32_t *upper;     /* n_upper * (1 + M) */
    const uint32_t *ids;       /* IVF: slot -> row; NULL = identity */
    const float *cent;         /* IVF: n_graphs * d */
    hnsw_graph *graphs;        /* owned, n_graphs */
    uint32_t *slot_of_row;     /* owned; IVF + VQ_FLAT: row -> slot */
    vq *vq;                    /* owned; NULL for VQ_FLAT */
    /* owned storage behind the arrays above (NULL when borrowed) */
    uint8_t *own_level0;
    uint32_t *own_ustart, *own_upper, *own_ids;
    float *own_cent;
    uint8_t *own_image;        /* aligned copy of a misaligned image */
    hnsw_pool *pool;
};

/* Distance modes: exact float vectors (L2, IP = -ip, COS = 1 - ip on
 * normalized vectors), codes, and the metric's own ordering distance
 * (vd_order_dist_f32, for raw vectors from fetch or from the caller). */
enum { DM_L2 = 0, DM_IP = 1, DM_COS = 2, DM_CODE = 3, DM_ORDER = 4 };

typedef struct hnsw_q {
    int dm;
    const float *q;        /* prepared query (normalized for COSINE) */
    const float *qn;       /* query for IVF centroids (normalized for COSINE) */
    vq_query *qq;          /* DM_CODE */
    const vd_table *k;
    size_t d;
    int64_t ndist;
    bool two_hop;          /* allow-list below 1/4 of the rows: see search_l0_t */
    const uint64_t *bits;  /* the allow-list as a dense bitset of rows, or NULL */
} hnsw_q;

/* ---- small helpers ------------------------------------------------------ */

static inline size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static inline void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint32_t get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static inline uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* hnswlib's level: floor(-ln(U) / ln(M)), U uniform in (0, 1], drawn from
 * (seed, row) so that it does not depend on the insertion order. */
static uint32_t draw_level(uint64_t seed, uint32_t row, double mult)
{
    uint64_t s = seed ^ ((uint64_t)row * 0xd1b54a32d192ed03ull);
    (void)splitmix64(&s);
    double u = ((double)(splitmix64(&s) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    double l = floor(-log(u) * mult);
    return l >= HNSW_MAX_LEVEL ? HNSW_MAX_LEVEL : (uint32_t)l;
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t nc = *cap * 2;
    if (nc < need)
        nc = need;
    if (nc < 64)
        nc = 64;
    void *q = hs_realloc(*p, nc * elem);
    if (!q)
        return false;
    *p = q;
    *cap = nc;
    return true;
}
#define GROW(s, field, capf, need) grow((void **)&(s)->field, &(s)->capf, (need), sizeof(*(s)->field))

static inline void prefetch_bytes(const uint8_t *p, size_t n)
{
    for (size_t o = 0; o < n; o += 64)
        __builtin_prefetch(p + o, 0, 3);
}

static void normalize_into(const vd_table *k, const float *x, size_t d, float *out)
{
    float nn = k->norm2_f32(x, d);
    float inv = nn > 0 ? 1.0f / sqrtf(nn) : 0.0f;
    for (size_t j = 0; j < d; j++)
        out[j] = x[j] * inv;
}

static inline float fdist(const vd_table *k, int dm, const float *a, const float *b, size_t d)
{
    if (dm == DM_L2)
        return k->l2sq_f32(a, b, d);
    float ip = k->ip_f32(a, b, d);
    return dm == DM_IP ? -ip : 1.0f - ip;
}

static int float_dm(hs_metric m)
{
    return m == HS_METRIC_L2 ? DM_L2 : m == HS_METRIC_IP ? DM_IP : DM_COS;
}

/* ---- heaps (max-heap: worst on top; min-heap: best on top) -------------- */

static inline void maxh_sift_down(hnsw_pair *h, size_t n, size_t i, hnsw_pair v)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].d > h[c].d)
            c++;
        if (!(h[c].d > v.d))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}
static inline void maxh_push(hnsw_pair *h, size_t *n, hnsw_pair v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!(h[p].d < v.d))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}
static inline void maxh_pop(hnsw_pair *h, size_t *n)
{
    size_t m = --(*n);
    if (m > 0)
        maxh_sift_down(h, m, 0, h[m]);
}
static inline void minh_push(hnsw_pair *h, size_t *n, hnsw_pair v)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!(h[p].d > v.d))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}
static inline void minh_pop(hnsw_pair *h, size_t *n)
{
    size_t m = --(*n);
    if (m == 0)
        return;
    hnsw_pair v = h[m];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && h[c + 1].d < h[c].d)
            c++;
        if (!(h[c].d < v.d))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}
/* Pops a max-heap into ascending order (h[0] nearest afterwards). */
static void maxh_sort(hnsw_pair *h, size_t n)
{
    while (n > 1) {
        hnsw_pair t = h[0];
        maxh_pop(h, &n);
        h[n] = t;
    }
}

/* Total order with the row id breaking ties (exact search, final answers). */
static inline bool pair_after(hnsw_pair a, hnsw_pair b)
{
    return a.d > b.d || (a.d == b.d && a.id > b.id);
}
static void tk_sift_down(hnsw_pair *h, size_t n, size_t i, hnsw_pair v)
{
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && pair_after(h[c + 1], h[c]))
            c++;
        if (!pair_after(h[c], v))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
}
/* Keeps the k smallest (d, id) in a max-heap h of *n <= k entries. */
static inline void tk_offer(hnsw_pair *h, size_t *n, size_t k, hnsw_pair v)
{
    if (*n < k) {
        size_t i = (*n)++;
        while (i > 0) {
            size_t p = (i - 1) / 2;
            if (!pair_after(v, h[p]))
                break;
            h[i] = h[p];
            i = p;
        }
        h[i] = v;
    } else if (pair_after(h[0], v)) {
        tk_sift_down(h, *n, 0, v);
    }
}
static void tk_sort(hnsw_pair *h, size_t n)
{
    while (n > 1) {
        hnsw_pair t = h[0];
        n--;
        if (n > 0)
            tk_sift_down(h, n, 0, h[n]);
        h[n] = t;
    }
}

/* ---- scratch pool ------------------------------------------------------- */

static void scratch_free(hnsw_scratch *s)
{
    if (!s)
        return;
    hs_free(s->tags);
    hs_free(s->cand);
    hs_free(s->top);
    hs_free(s->res);
    hs_free(s->tmp);
    hs_free(s->ibuf);
    hs_free(s->sel);
    hs_free(s->fbuf);
    hs_free(s->qbuf);
    hs_free(s->bits);
    hs_free(s->vis);
    hs_free(s);
}

static hs_status scratch_get(const hnsw_index *ix, hnsw_scratch **out, hs_error *err)
{
    hnsw_scratch *s;
    pthread_mutex_lock(&ix->pool->mu);
    s = ix->pool->free_list;
    if (s)
        ix->pool->free_list = s->next;
    pthread_mutex_unlock(&ix->pool->mu);
    if (!s) {
        s = hs_calloc(1, sizeof *s);
        if (!s)
            return hs_err_nomem(err, sizeof *s);
    }
    s->next = NULL;
    if (s->n_tags < ix->max_graph_n) {
        hs_free(s->tags);
        s->tags = hs_calloc(ix->max_graph_n, sizeof(uint16_t));
        s->n_tags = s->tags ? ix->max_graph_n : 0;
        s->epoch = 0;
        if (!s->tags) {
            scratch_free(s);
            return hs_err_nomem(err, ix->max_graph_n * sizeof(uint16_t));
        }
    }
    *out = s;
    return HS_OK;
}

static void scratch_put(const hnsw_index *ix, hnsw_scratch *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&ix->pool->mu);
    s->next = ix->pool->free_list;
    ix->pool->free_list = s;
    pthread_mutex_unlock(&ix->pool->mu);
}

static inline uint16_t next_epoch(hnsw_scratch *s)
{
    if (++s->epoch == 0) {
        memset(s->tags, 0, s->n_tags * sizeof(uint16_t));
        s->epoch = 1;
    }
    return s->epoch;
}

/* ---- index lifetime ----------------------------------------------------- */

static hnsw_index *index_new(void)
{
    hnsw_index *ix = hs_calloc(1, sizeof *ix);
    if (!ix)
        return NULL;
    ix->pool = hs_calloc(1, sizeof *ix->pool);
    if (!ix->pool || pthread_mutex_init(&ix->pool->mu, NULL) != 0) {
        hs_free(ix->pool);
        hs_free(ix);
        return NULL;
    }
    return ix;
}

/* Frees the pooled scratches (after a build: one per build thread). */
static void pool_drain(const hnsw_index *ix)
{
    pthread_mutex_lock(&ix->pool->mu);
    hnsw_scratch *s = ix->pool->free_list;
    ix->pool->free_list = NULL;
    pthread_mutex_unlock(&ix->pool->mu);
    while (s) {
        hnsw_scratch *nx = s->next;
        scratch_free(s);
        s = nx;
    }
}

void hnsw_free(hnsw_index *ix)
{
    if (!ix)
        return;
    if (ix->pool) {
        pool_drain(ix);
        pthread_mutex_destroy(&ix->pool->mu);
        hs_free(ix->pool);
    }
    hs_free_aligned(ix->own_level0);
    hs_free(ix->own_ustart);
    hs_free(ix->own_upper);
    hs_free(ix->own_ids);
    hs_free(ix->own_cent);
    hs_free_aligned(ix->own_image);
    hs_free(ix->graphs);
    hs_free(ix->slot_of_row);
    vq_free(ix->vq);
    hs_free(ix);
}

void hnsw_get_info(const hnsw_index *ix, hnsw_info *out)
{
    memset(out, 0, sizeof *out);
    if (!ix)
        return;
    out->n = ix->n;
    out->d = ix->d;
    out->metric = ix->metric;
    out->quant = ix->quant;
    out->M = ix->M;
    out->ef_construction = ix->ef_construction;
    out->ef_search = ix->ef_search;
    out->ivf_lists = ix->ivf_lists;
    size_t m = ix->n * ix->elem_size + (ix->pay_apart ? ix->n * ix->pay_stride : 0) +
               (ix->n + 1) * 4 + ix->n_upper * (size_t)(1 + ix->M) * 4 +
               (size_t)ix->n_graphs * 16 + ix->vq_bytes;
    if (ix->ids)
        m += ix->n * 4;
    if (ix->cent)
        m += (size_t)ix->n_graphs * ix->d * 4;
    if (ix->slot_of_row)
        m += ix->n * 4;
    out->memory_bytes = m;
}

/* Element accessors. */
static inline const uint8_t *elem_at(const hnsw_index *ix, size_t slot)
{
    return ix->level0 + slot * ix->elem_size;
}
static inline const uint8_t *pay_at(const hnsw_index *ix, size_t slot)
{
    return ix->pay + slot * ix->pay_stride;
}
static inline const uint32_t *upper_at(const hnsw_index *ix, size_t slot, uint32_t level)
{
    return ix->upper + (size_t)(ix->ustart[slot] + level - 1) * (size_t)(1 + ix->M);
}
static inline uint32_t row_of(const hnsw_index *ix, size_t slot)
{
    return ix->ids ? ix->ids[slot] : (uint32_t)slot;
}

const float *hnsw_exact_vector(const hnsw_index *ix, uint32_t row)
{
    if (ix->quant != VQ_FLAT || ix->metric == HS_METRIC_COSINE || row >= ix->n)
        return NULL;
    size_t slot = ix->slot_of_row ? ix->slot_of_row[row] : row;
    return (const float *)(const void *)pay_at(ix, slot);
}

/* ---- parameters --------------------------------------------------------- */

/* The rerank factor when none is given: candidates reranked =
 * max(k * rerank, ef), and the walk keeps that many.  8-bit TurboQuant
 * codes order candidates almost as exact distances do, so reranking the
 * walk's own ef candidates (rerank 1, as hnswlib's ef) loses no recall at a
 * given ef and lets a small ef stay small: with 4, k = 10 forced a walk of
 * 40 whatever ef asked, slower than a flat graph at the same recall
 * (issue 12).  Coarser codes (4-bit, PQ, sign bits) keep 4: their order is
 * too rough for the walk's list alone. */
int hnsw_default_rerank(vq_type quant)
{
    return quant == VQ_TQ8 ? 1 : 4;
}

static hs_status resolve_params(const hnsw_params *in, hnsw_params *p, hs_error *err)
{
    static const hnsw_params zero;
    *p = in ? *in : zero;
    if (p->M == 0)
        p->M = 16;
    if (p->M < 2 || p->M > HNSW_MAX_M)
        return hs_err_set(err, HS_INVALID, "hnsw: M = %d is outside [2, %d]", p->M, HNSW_MAX_M);
    if (p->ef_construction == 0)
        p->ef_construction = 200;
    if (p->ef_construction < 1 || p->ef_construction > HNSW_MAX_EF)
        return hs_err_set(err, HS_INVALID, "hnsw: ef_construction = %d is outside [1, %d]",
                          p->ef_construction, HNSW_MAX_EF);
    if (p->ef_search == 0)
        p->ef_search = 64;
    if (p->ef_search < 1 || p->ef_search > HNSW_MAX_EF)
        return hs_err_set(err, HS_INVALID, "hnsw: ef_search = %d is outside [1, %d]",
                          p->ef_search, HNSW_MAX_EF);
    if (p->metric != HS_METRIC_L2 && p->metric != HS_METRIC_COSINE && p->metric != HS_METRIC_IP)
        return hs_err_set(err, HS_INVALID, "hnsw: metric %d is not l2, cosine or ip",
                          (int)p->metric);
    if ((int)p->quant.type < VQ_FLAT || (int)p->quant.type > VQ_BIN)
        return hs_err_set(err, HS_INVALID, "hnsw: unknown quantizer type %d", (int)p->quant.type);
    if (p->rerank == 0)
        p->rerank = hnsw_default_rerank(p->quant.type);
    if (p->rerank < 1 || p->rerank > 10000)
        return hs_err_set(err, HS_INVALID, "hnsw: rerank = %d is outside [1, 10000]", p->rerank);
    if (p->ivf_lists < 0 || p->ivf_lists > (1 << 20))
        return hs_err_set(err, HS_INVALID, "hnsw: ivf_lists = %d is outside [0, %d]",
                          p->ivf_lists, 1 << 20);
    if (p->ivf_nprobe < 0)
        return hs_err_set(err, HS_INVALID, "hnsw: ivf_nprobe = %d is negative", p->ivf_nprobe);
    if (p->n_threads < 0)
        return hs_err_set(err, HS_INVALID, "hnsw: n_threads = %d is negative", p->n_threads);
    if (p->n_threads == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        p->n_threads = c > 0 ? (int)c : 1;
    }
    if (p->n_threads > HNSW_MAX_THREADS)
        p->n_threads = HNSW_MAX_THREADS;
    if (p->seed == 0)
        p->seed = 0x5eed4e5c0ffee123ull;
    return HS_OK;
}

static void set_shape(hnsw_index *ix)
{
    ix->M0 = 2 * ix->M;
    ix->payload_off = 4 + 4 * (size_t)ix->M0;
    ix->elem_size = align_up(ix->payload_off + ix->code_size, 4);
}

/* ==== build =============================================================== */

typedef struct build_ctx {
    hnsw_index *ix;
    const float *xb;          /* build vectors by row (normalized for COSINE) */
    uint8_t *l0;              /* == ix->own_level0 */
    uint32_t *upper;          /* == ix->own_upper */
    const uint32_t *ustart;
    const uint32_t *rows;     /* slot -> row, NULL = identity */
    hnsw_graph *g;
    const vd_table *k;
    int dm;
    size_t d;
    int M, M0, efc;
    pthread_mutex_t *locks;   /* striped node locks; NULL with one thread */
    size_t lock_mask;
    pthread_mutex_t gmu;      /* entry point and top level */
    /* progress, cancellation, failure */
    size_t next, done;        /* atomics */
    int stop;                 /* atomic: nonzero = stop taking nodes */
    hs_status fail;           /* under gmu */
    hs_error fail_err;
    hnsw_progress_fn progress;
    void *progress_ctx;
    int64_t done_base, total;
    size_t last_report, report_every;
    bool cancelled;
} build_ctx;

static inline const float *bvec(const build_ctx *b, uint32_t local)
{
    size_t slot = (size_t)b->g->base + local;
    size_t row = b->rows ? b->rows[slot] : slot;
    return b->xb + row * b->d;
}
static inline uint32_t *blinks(build_ctx *b, uint32_t local, uint32_t level)
{
    size_t slot = (size_t)b->g->base + local;
    if (level == 0)
        return (uint32_t *)(void *)(b->l0 + slot * b->ix->elem_size);
    return b->upper + (size_t)(b->ustart[slot] + level - 1) * (size_t)(1 + b->M);
}
static inline uint32_t blevel(const build_ctx *b, uint32_t local)
{
    size_t slot = (size_t)b->g->base + local;
    return b->ustart[slot + 1] - b->ustart[slot];
}
static inline void nlock(build_ctx *b, uint32_t local)
{
    if (b->locks)
        pthread_mutex_lock(&b->locks[local & b->lock_mask]);
}
static inline void nunlock(build_ctx *b, uint32_t local)
{
    if (b->locks)
        pthread_mutex_unlock(&b->locks[local & b->lock_mask]);
}
static inline float bdist(const build_ctx *b, const float *x, const float *y)
{
    return fdist(b->k, b->dm, x, y, b->d);
}

/* Copies the list of node at level into out (room for M0); returns count. */
static inline uint32_t bcopy_links(build_ctx *b, uint32_t node, uint32_t level, uint32_t *out)
{
    nlock(b, node);
    const uint32_t *ll = blinks(b, node, level);
    uint32_t cnt = ll[0];
    memcpy(out, ll + 1, cnt * sizeof(uint32_t));
    nunlock(b, node);
    return cnt;
}

/* Greedy descent from ep through levels from .. to+1. */
static uint32_t bgreedy(build_ctx *b, const float *qv, uint32_t ep, uint32_t from, uint32_t to)
{
    uint32_t nb[2 * HNSW_MAX_M];
    float curd = bdist(b, qv, bvec(b, ep));
    for (uint32_t level = from; level > to; level--) {
        bool changed = true;
        while (changed) {
            changed = false;
            uint32_t cnt = bcopy_links(b, ep, level, nb);
            for (uint32_t j = 0; j < cnt; j++) {
                float dd = bdist(b, qv, bvec(b, nb[j]));
                if (dd < curd) {
                    curd = dd;
                    ep = nb[j];
                    changed = true;
                }
            }
        }
    }
    return ep;
}

/* hnswlib's searchBaseLayer: the best ef_construction nodes near qv at
 * level, into s->top (max-heap, *n_top entries). */
static hs_status bsearch_layer(build_ctx *b, hnsw_scratch *s, const float *qv, uint32_t ep,
                               uint32_t level, size_t *n_top)
{
    size_t efc = (size_t)b->efc;
    const size_t pf = b->d * sizeof(float) < 4096 ? b->d * sizeof(float) : 4096;
    uint32_t nb[2 * HNSW_MAX_M];
    if (!GROW(s, top, top_cap, efc + 1) || !GROW(s, cand, cand_cap, efc + (size_t)b->M0 + 1))
        return HS_NOMEM;
    uint16_t tag = next_epoch(s);
    uint16_t *tags = s->tags;
    size_t nt = 0, nc = 0;
    float epd = bdist(b, qv, bvec(b, ep));
    s->top[nt++] = (hnsw_pair){ epd, ep };
    s->cand[nc++] = (hnsw_pair){ epd, ep };
    float lower = epd;
    tags[ep] = tag;
    while (nc > 0) {
        hnsw_pair cur = s->cand[0];
        if (cur.d > lower && nt == efc)
            break;
        minh_pop(s->cand, &nc);
        uint32_t cnt = bcopy_links(b, cur.id, level, nb);
        if (!GROW(s, cand, cand_cap, nc + cnt + 1))
            return HS_NOMEM;
        size_t m = 0;
        for (uint32_t j = 0; j < cnt; j++) {  /* unvisited first, then distances */
            uint32_t c = nb[j];
            if (tags[c] == tag)
                continue;
            tags[c] = tag;
            nb[m++] = c;
            __builtin_prefetch(bvec(b, c));
        }
        for (size_t j = 0; j < m; j++) {
            uint32_t c = nb[j];
            if (j + 1 < m)
                prefetch_bytes((const uint8_t *)bvec(b, nb[j + 1]), pf);
            float dd = bdist(b, qv, bvec(b, c));
            if (nt < efc || dd < lower) {
                minh_push(s->cand, &nc, (hnsw_pair){ dd, c });
                if (nt < efc)
                    maxh_push(s->top, &nt, (hnsw_pair){ dd, c });
                else
                    maxh_sift_down(s->top, nt, 0, (hnsw_pair){ dd, c });
                lower = s->top[0].d;
            }
        }
    }
    *n_top = nt;
    return HS_OK;
}

/* hnswlib's getNeighborsByHeuristic2 on c[0..n) sorted ascending: keeps a
 * candidate only when it is nearer to the base than to every kept one.
 * Compacts the kept ones to the front; returns how many (<= m). */
static size_t bheuristic(const build_ctx *b, hnsw_pair *c, size_t n, size_t m)
{
    if (n < m)
        return n;
    size_t out = 0;
    for (size_t i = 0; i < n && out < m; i++) {
        const float *v = bvec(b, c[i].id);
        bool good = true;
        for (size_t j = 0; j < out; j++) {
            if (bdist(b, bvec(b, c[j].id), v) < c[i].d) {
                good = false;
                break;
            }
        }
        if (good)
            c[out++] = c[i];
    }
    return out;
}

static void insertion_sort(hnsw_pair *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        hnsw_pair v = a[i];
        size_t j = i;
        while (j > 0 && pair_after(a[j - 1], v)) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

/* The first half of hnswlib's mutuallyConnectNewElement: cur's own links at
 * level = the heuristic choice among s->top, also copied to sel[0..*nsel);
 * *next_ep = the nearest found (the next level's entry). */
static hs_status bselect(build_ctx *b, hnsw_scratch *s, uint32_t cur, uint32_t level, size_t nt,
                         uint32_t *sel, uint32_t *nsel, uint32_t *next_ep)
{
    if (!GROW(s, tmp, tmp_cap, nt + 1))
        return HS_NOMEM;
    hnsw_pair *c = s->tmp;
    memcpy(c, s->top, nt * sizeof *c);
    maxh_sort(c, nt);
    size_t n = bheuristic(b, c, nt, (size_t)b->M);
    *next_ep = c[0].id;
    for (size_t i = 0; i < n; i++)
        sel[i] = c[i].id;
    *nsel = (uint32_t)n;
    nlock(b, cur);
    uint32_t *mine = blinks(b, cur, level);
    mine[0] = (uint32_t)n;
    memcpy(mine + 1, sel, n * sizeof(uint32_t));
    nunlock(b, cur);
    return HS_OK;
}

/* The second half: each chosen neighbour at level links back to cur
 * (appended, or its full list re-pruned by the heuristic). */
static void blink_back(build_ctx *b, uint32_t cur, uint32_t level, const uint32_t *sel,
                       uint32_t nsel)
{
    size_t cap = level ? (size_t)b->M : (size_t)b->M0;
    hnsw_pair pr[2 * HNSW_MAX_M + 1];
    const float *cv = bvec(b, cur);
    for (uint32_t i = 0; i < nsel; i++) {
        uint32_t nb = sel[i];
        nlock(b, nb);
        uint32_t *ll = blinks(b, nb, level);
        uint32_t cnt = ll[0];
        if (cnt < cap) {
            ll[1 + cnt] = cur;
            ll[0] = cnt + 1;
        } else {
            const float *nv = bvec(b, nb);
            pr[0] = (hnsw_pair){ bdist(b, nv, cv), cur };
            for (uint32_t j = 0; j < cnt; j++)
                pr[1 + j] = (hnsw_pair){ bdist(b, nv, bvec(b, ll[1 + j])), ll[1 + j] };
            insertion_sort(pr, cnt + 1);
            size_t m = bheuristic(b, pr, cnt + 1, cap);
            for (size_t j = 0; j < m; j++)
                ll[1 + j] = pr[j].id;
            ll[0] = (uint32_t)m;
        }
        nunlock(b, nb);
    }
}

/* hnswlib's addPoint for graph-local node cur (not the first), with one
 * change for concurrent builds: cur's own links are chosen at every level
 * first (top down, each level's search entering at the nearest node the
 * level above found) and the neighbours link back to it only after that.
 * hnswlib links back level by level and holds cur's lock for the whole
 * insertion, so a thread that reaches cur through an upper-level back-link
 * waits until cur's lower levels exist; without that wait (our locks are
 * striped and held only to copy one list) such a thread descended into
 * cur's still-empty lower lists and linked its own node to cur alone: on
 * 4-d vectors lying on a few lines, 2 build threads left 0.4% of the nodes
 * unreachable (a search for the node's own vector missed it; hnswlib with
 * 2 threads 0.01%).  Nothing reaches cur before its back-links, so its
 * lists are complete whenever another thread reads them; cur's own search
 * is the same as hnswlib's (it never walks through cur itself). */
static hs_status binsert(build_ctx *b, hnsw_scratch *s, uint32_t cur)
{
    uint32_t level = blevel(b, cur);
    pthread_mutex_lock(&b->gmu);
    uint32_t maxl = b->g->max_level, ep = b->g->entry;
    bool hold = level > maxl;
    if (!hold)
        pthread_mutex_unlock(&b->gmu);
    hs_status st = HS_OK;
    const float *qv = bvec(b, cur);
    if (level < maxl)
        ep = bgreedy(b, qv, ep, maxl, level);
    uint32_t top = level < maxl ? level : maxl;
    size_t per = (size_t)b->M;
    if (!GROW(s, sel, sel_cap, ((size_t)top + 1) * (per + 1)))
        st = HS_NOMEM;
    for (int64_t l = top; st == HS_OK && l >= 0; l--) {
        size_t nt;
        uint32_t *row = s->sel + (size_t)l * (per + 1);
        st = bsearch_layer(b, s, qv, ep, (uint32_t)l, &nt);
        if (st == HS_OK)
            st = bselect(b, s, cur, (uint32_t)l, nt, row + 1, &row[0], &ep);
    }
    if (st == HS_OK)
        for (int64_t l = top; l >= 0; l--) {
            const uint32_t *row = s->sel + (size_t)l * (per + 1);
            blink_back(b, cur, (uint32_t)l, row + 1, row[0]);
        }
    if (hold) {
        if (st == HS_OK) {
            b->g->entry = cur;
            b->g->max_level = level;
        }
        pthread_mutex_unlock(&b->gmu);
    }
    return st;
}

static void build_fail(build_ctx *b, hs_status st, const char *what)
{
    pthread_mutex_lock(&b->gmu);
    if (b->fail == HS_OK) {
        b->fail = st;
        hs_err_set(&b->fail_err, st, "hnsw build: %s", what);
    }
    pthread_mutex_unlock(&b->gmu);
    __atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
}

static void build_loop(build_ctx *b, bool reporter)
{
    hnsw_scratch *s = NULL;
    hs_error e = { 0 };
    if (scratch_get(b->ix, &s, &e) != HS_OK) {
        build_fail(b, HS_NOMEM, "out of memory for a build thread's scratch");
        return;
    }
    for (;;) {
        if (__atomic_load_n(&b->stop, __ATOMIC_RELAXED))
            break;
        size_t i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED);
        if (i >= b->g->n)
            break;
        if (binsert(b, s, (uint32_t)i) != HS_OK) {
            build_fail(b, HS_NOMEM, "out of memory while inserting a node");
            break;
        }
        size_t done = __atomic_add_fetch(&b->done, 1, __ATOMIC_RELAXED);
        if (reporter && b->progress && done - b->last_report >= b->report_every) {
            b->last_report = done;
            if (b->progress(b->progress_ctx, b->done_base + (int64_t)done, b->total)) {
                b->cancelled = true;
                __atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
            }
        }
    }
    scratch_put(b->ix, s);
}

static void *build_thread(void *arg)
{
    build_loop(arg, false);
    return NULL;
}

/* Builds graph g (its slots' payload and levels already set). */
static hs_status build_graph(build_ctx *b, hnsw_graph *g, int n_threads, hs_error *err)
{
    b->g = g;
    g->entry = 0;
    g->max_level = 0;
    if (g->n == 0)
        return HS_OK;
    g->max_level = blevel(b, 0);
    b->next = 1;
    b->done = 1;
    b->last_report = 0;
    b->stop = 0;
    b->fail = HS_OK;
    if (n_threads > 1 && g->n < 4096)
        n_threads = 1;
    pthread_t th[HNSW_MAX_THREADS];
    int started = 0;
    if (n_threads > 1 && b->locks) {
        for (int t = 1; t < n_threads; t++) {
            if (pthread_create(&th[started], NULL, build_thread, b) != 0)
                break;
            started++;
        }
    }
    build_loop(b, true);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    if (b->fail != HS_OK) {
        hs_err_set(err, b->fail, "%s", b->fail_err.msg);
        return b->fail;
    }
    if (b->cancelled)
        return hs_err_set(err, HS_CANCELLED, "hnsw build cancelled after %lld of %lld vectors",
                          (long long)(b->done_base + (int64_t)b->done), (long long)b->total);
    b->done_base += (int64_t)g->n;
    return HS_OK;
}

/* IVF: k-means on a sample, every row assigned to its nearest centroid. */
typedef struct assign_job {
    const float *x, *cent;
    size_t n, d, lists, next;
    uint32_t *assign;
    const vd_table *k;
} assign_job;

static void *assign_thread(void *arg)
{
    assign_job *j = arg;
    for (;;) {
        size_t i0 = __atomic_fetch_add(&j->next, 256, __ATOMIC_RELAXED);
        if (i0 >= j->n)
            break;
        size_t i1 = i0 + 256 < j->n ? i0 + 256 : j->n;
        for (size_t i = i0; i < i1; i++) {
            float best = INFINITY;
            uint32_t bc = 0;
            for (size_t c = 0; c < j->lists; c++) {
                float dd = j->k->l2sq_f32(j->x + i * j->d, j->cent + c * j->d, j->d);
                if (dd < best) {
                    best = dd;
                    bc = (uint32_t)c;
                }
            }
            j->assign[i] = bc;
        }
    }
    return NULL;
}

static hs_status ivf_partition(hnsw_index *ix, const float *xb, int n_threads, uint32_t *assign,
                               hs_error *err)
{
    size_t n = ix->n, d = ix->d, lists = ix->n_graphs;
    size_t max_train = lists * 256 > 65536 ? lists * 256 : 65536;
    float *cent = hs_malloc(lists * d * sizeof(float));
    if (!cent)
        return hs_err_nomem(err, lists * d * sizeof(float));
    ix->own_cent = cent;
    ix->cent = cent;
    if (n <= max_train) {
        HS_TRY(vq_kmeans(xb, n, d, (int)lists, 20, ix->seed, n_threads, cent, assign, err));
        return HS_OK;
    }
    float *sample = hs_malloc(max_train * d * sizeof(float));
    if (!sample)
        return hs_err_nomem(err, max_train * d * sizeof(float));
    for (size_t i = 0; i < max_train; i++)  /* evenly spaced rows */
        memcpy(sample + i * d, xb + (i * n / max_train) * d, d * sizeof(float));
    hs_status st = vq_kmeans(sample, max_train, d, (int)lists, 20, ix->seed, n_threads, cent,
                             NULL, err);
    hs_free(sample);
    HS_TRY(st);
    assign_job j = { xb, cent, n, d, lists, 0, assign, vd_kernels() };
    pthread_t th[HNSW_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < n_threads; t++) {
        if (pthread_create(&th[started], NULL, assign_thread, &j) != 0)
            break;
        started++;
    }
    assign_thread(&j);
    for (int t = 0; t < started; t++)
        pthread_join(th[t], NULL);
    return HS_OK;
}

static hs_status build_all(hnsw_index *ix, const hnsw_params *p, const float *x, const float *xb,
                           hnsw_progress_fn progress, void *progress_ctx, hs_error *err)
{
    size_t n = ix->n, d = ix->d;
    hs_status st = HS_OK;
    /* slots and graphs */
    ix->graphs = hs_calloc(ix->n_graphs, sizeof(hnsw_graph));
    if (!ix->graphs)
        return hs_err_nomem(err, ix->n_graphs * sizeof(hnsw_graph));
    if (ix->ivf_lists > 0) {
        uint32_t *assign = hs_malloc(n * sizeof(uint32_t));
        ix->own_ids = hs_malloc(n * sizeof(uint32_t));
        if (!assign || !ix->own_ids) {
            hs_free(assign);
            return hs_err_nomem(err, n * sizeof(uint32_t));
        }
        st = ivf_partition(ix, xb, p->n_threads, assign, err);
        if (st == HS_OK) {
            for (size_t i = 0; i < n; i++) {
                if (assign[i] >= ix->n_graphs) {
                    st = hs_err_set(err, HS_INTERNAL, "hnsw: k-means assigned row %zu to list %u",
                                    i, assign[i]);
                    break;
                }
                ix->graphs[assign[i]].n++;
            }
        }
        if (st == HS_OK) {
            uint32_t base = 0;
            for (uint32_t g = 0; g < ix->n_graphs; g++) {
                ix->graphs[g].base = base;
                base += ix->graphs[g].n;
            }
            uint32_t *fill = hs_calloc(ix->n_graphs, sizeof(uint32_t));
            if (!fill) {
                st = hs_err_nomem(err, ix->n_graphs * sizeof(uint32_t));
            } else {
                for (size_t i = 0; i < n; i++) {
                    hnsw_graph *g = &ix->graphs[assign[i]];
                    ix->own_ids[g->base + fill[assign[i]]++] = (uint32_t)i;
                }
                hs_free(fill);
            }
        }
        hs_free(assign);
        HS_TRY(st);
        ix->ids = ix->own_ids;
    } else {
        ix->graphs[0].base = 0;
        ix->graphs[0].n = (uint32_t)n;
    }
    ix->max_graph_n = 0;
    for (uint32_t g = 0; g < ix->n_graphs; g++)
        if (ix->graphs[g].n > ix->max_graph_n)
            ix->max_graph_n = ix->graphs[g].n;

    /* levels -> ustart, upper blocks */
    ix->own_ustart = hs_malloc((n + 1) * sizeof(uint32_t));
    if (!ix->own_ustart)
        return hs_err_nomem(err, (n + 1) * sizeof(uint32_t));
    ix->ustart = ix->own_ustart;
    double mult = 1.0 / log((double)ix->M);
    uint64_t blocks = 0;
    for (size_t s = 0; s < n; s++) {
        ix->own_ustart[s] = (uint32_t)blocks;
        blocks += draw_level(ix->seed, row_of(ix, s), mult);
        if (blocks > UINT32_MAX)
            return hs_err_set(err, HS_INVALID, "hnsw: too many upper-level links for %zu rows", n);
    }
    ix->own_ustart[n] = (uint32_t)blocks;
    ix->n_upper = (size_t)blocks;
    size_t ub = ix->n_upper * (size_t)(1 + ix->M) * sizeof(uint32_t);
    ix->own_upper = hs_calloc(ub ? ub : 1, 1);
    if (!ix->own_upper)
        return hs_err_nomem(err, ub);
    ix->upper = ix->own_upper;

    /* level-0 elements with their payload */
    size_t l0b = n * ix->elem_size;
    ix->own_level0 = hs_malloc_aligned(l0b);
    if (!ix->own_level0)
        return hs_err_nomem(err, l0b);
    memset(ix->own_level0, 0, l0b);
    ix->level0 = ix->own_level0;
    ix->pay = ix->own_level0 + ix->payload_off;
    ix->pay_stride = ix->elem_size;
    if (ix->quant == VQ_FLAT) {
        for (size_t s = 0; s < n; s++)
            memcpy(ix->own_level0 + s * ix->elem_size + ix->payload_off,
                   xb + (size_t)row_of(ix, s) * d, d * sizeof(float));
    } else {
        /* encode in chunks of slots (rows gathered for IVF), then place */
        size_t chunk = 1024;
        uint8_t *codes = hs_malloc(chunk * ix->code_size);
        float *rows = ix->ids ? hs_malloc(chunk * d * sizeof(float)) : NULL;
        if (!codes || (ix->ids && !rows)) {
            hs_free(codes);
            hs_free(rows);
            return hs_err_nomem(err, chunk * (ix->code_size + d * sizeof(float)));
        }
        for (size_t s0 = 0; s0 < n; s0 += chunk) {
            size_t m = n - s0 < chunk ? n - s0 : chunk;
            const float *src = x + s0 * d;
            if (ix->ids) {
                for (size_t i = 0; i < m; i++)
                    memcpy(rows + i * d, x + (size_t)ix->ids[s0 + i] * d, d * sizeof(float));
                src = rows;
            }
            vq_encode(ix->vq, src, m, codes);
            for (size_t i = 0; i < m; i++)
                memcpy(ix->own_level0 + (s0 + i) * ix->elem_size + ix->payload_off,
                       codes + i * ix->code_size, ix->code_size);
        }
        hs_free(codes);
        hs_free(rows);
    }
    if (ix->ids && ix->quant == VQ_FLAT) {
        ix->slot_of_row = hs_malloc(n * sizeof(uint32_t));
        if (!ix->slot_of_row)
            return hs_err_nomem(err, n * sizeof(uint32_t));
        for (size_t s = 0; s < n; s++)
            ix->slot_of_row[ix->ids[s]] = (uint32_t)s;
    }

    /* graphs */
    build_ctx b;
    memset(&b, 0, sizeof b);
    b.ix = ix;
    b.xb = xb;
    b.l0 = ix->own_level0;
    b.upper = ix->own_upper;
    b.ustart = ix->ustart;
    b.rows = ix->ids;
    b.k = vd_kernels();
    b.dm = float_dm(ix->metric);
    b.d = d;
    b.M = ix->M;
    b.M0 = ix->M0;
    b.efc = ix->ef_construction;
    b.progress = progress;
    b.progress_ctx = progress_ctx;
    b.total = (int64_t)n;
    b.report_every = n / 100 > 256 ? n / 100 : 256;
    if (pthread_mutex_init(&b.gmu, NULL) != 0)
        return hs_err_set(err, HS_INTERNAL, "hnsw: pthread_mutex_init failed");
    size_t n_locks = 0;
    if (p->n_threads > 1 && ix->max_graph_n >= 4096) {
        n_locks = 1;
        while (n_locks < ix->max_graph_n && n_locks < 65536)
            n_locks <<= 1;
        b.locks = hs_malloc(n_locks * sizeof(pthread_mutex_t));
        if (b.locks) {
            for (size_t i = 0; i < n_locks; i++)
                pthread_mutex_init(&b.locks[i], NULL);
            b.lock_mask = n_locks - 1;
        }
    }
    for (uint32_t g = 0; g < ix->n_graphs && st == HS_OK; g++)
        st = build_graph(&b, &ix->graphs[g], p->n_threads, err);
    if (b.locks) {
        for (size_t i = 0; i < n_locks; i++)
            pthread_mutex_destroy(&b.locks[i]);
        hs_free(b.locks);
    }
    pthread_mutex_destroy(&b.gmu);
    return st;
}

static hs_status measure_vq(hnsw_index *ix, hs_error *err)
{
    if (!ix->vq)
        return HS_OK;
    hs_buf tmp = { 0 };
    hs_status st = vq_save(ix->vq, &tmp, err);
    ix->vq_bytes = tmp.len;
    hs_buf_free(&tmp);
    return st;
}

hs_status hnsw_build(const float *x, size_t n, size_t d, const hnsw_params *params,
                     hnsw_progress_fn progress, void *progress_ctx, hnsw_index **out,
                     hs_error *err)
{
    if (!out)
        return hs_err_set(err, HS_INVALID, "hnsw_build: out is NULL");
    *out = NULL;
    hnsw_params p;
    HS_TRY(resolve_params(params, &p, err));
    if (n == 0 || !x)
        return hs_err_set(err, HS_INVALID, "hnsw_build: no vectors");
    if (d == 0 || d > HNSW_MAX_DIM)
        return hs_err_set(err, HS_INVALID, "hnsw_build: dimension %zu is outside [1, %u]", d,
                          HNSW_MAX_DIM);
    if (n >= UINT32_MAX)
        return hs_err_set(err, HS_INVALID, "hnsw_build: %zu rows is more than a data file holds",
                          n);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < d; j++)
            if (!isfinite(x[i * d + j]))
                return hs_err_set(err, HS_INVALID,
                                  "hnsw_build: row %zu: component %zu is not finite", i, j);

    hnsw_index *ix = index_new();
    if (!ix)
        return hs_err_nomem(err, sizeof *ix);
    ix->n = n;
    ix->d = d;
    ix->metric = p.metric;
    ix->quant = p.quant.type;
    ix->M = p.M;
    ix->ef_construction = p.ef_construction;
    ix->ef_search = p.ef_search;
    ix->rerank = p.rerank;
    ix->seed = p.seed;
    ix->ivf_lists = p.ivf_lists > 0 ? (int)(n < (size_t)p.ivf_lists ? n : (size_t)p.ivf_lists) : 0;
    ix->n_graphs = ix->ivf_lists > 0 ? (uint32_t)ix->ivf_lists : 1;
    ix->ivf_nprobe = ix->ivf_lists > 0
                         ? (p.ivf_nprobe > 0 ? p.ivf_nprobe
                                             : (ix->ivf_lists / 8 > 1 ? ix->ivf_lists / 8 : 1))
                         : 0;
    if (ix->ivf_nprobe > ix->ivf_lists)
        ix->ivf_nprobe = ix->ivf_lists;

    hs_status st = HS_OK;
    float *xn = NULL;
    if (ix->quant != VQ_FLAT) {
        vq_params qp = p.quant;
        qp.metric = p.metric;
        if (qp.seed == 0)
            qp.seed = p.seed;
        if (qp.n_threads == 0)
            qp.n_threads = p.n_threads;
        st = vq_train(&qp, x, n, d, &ix->vq, err);
        if (st == HS_OK && (vq_get_type(ix->vq) != ix->quant || vq_dim(ix->vq) != d))
            st = hs_err_set(err, HS_INTERNAL, "hnsw: trained quantizer has the wrong type or dim");
        if (st == HS_OK) {
            ix->code_size = vq_code_size(ix->vq);
            st = measure_vq(ix, err);
        }
    } else {
        ix->code_size = d * sizeof(float);
    }
    if (st == HS_OK)
        set_shape(ix);
    const float *xb = x;
    if (st == HS_OK && ix->metric == HS_METRIC_COSINE) {
        xn = hs_malloc(n * d * sizeof(float));
        if (!xn) {
            st = hs_err_nomem(err, n * d * sizeof(float));
        } else {
            const vd_table *k = vd_kernels();
            for (size_t i = 0; i < n; i++)
                normalize_into(k, x + i * d, d, xn + i * d);
            xb = xn;
        }
    }
    if (st == HS_OK)
        st = build_all(ix, &p, x, xb, progress, progress_ctx, err);
    hs_free(xn);
    if (st != HS_OK) {
        hnsw_free(ix);
        return st;
    }
    pool_drain(ix);
    *out = ix;
    return HS_OK;
}

/* ==== search ============================================================== */

static inline __attribute__((always_inline)) float qdist(hnsw_q *c, int dm, const uint8_t *pl)
{
    switch (dm) {
    case DM_L2:
        return c->k->l2sq_f32(c->q, (const float *)(const void *)pl, c->d);
    case DM_IP:
        return -c->k->ip_f32(c->q, (const float *)(const void *)pl, c->d);
    case DM_COS:
        return 1.0f - c->k->ip_f32(c->q, (const float *)(const void *)pl, c->d);
    default:
        return vq_query_dist(c->qq, pl);
    }
}

static inline __attribute__((always_inline)) bool allowed_slot(const hnsw_index *ix, const hnsw_q *c,
                                const roaring_bitmap_t *allow, size_t slot)
{
    if (!allow)
        return true;
    uint32_t row = row_of(ix, slot);
    if (c->bits)
        return (c->bits[row >> 6] >> (row & 63)) & 1;
    return roaring_bitmap_contains(allow, row);
}

/* Greedy descent through g's upper levels; returns the level-0 entry. */
static inline __attribute__((always_inline)) uint32_t greedy_upper_t(const hnsw_index *ix,
                                                                      const hnsw_graph *g,
                                                                      hnsw_q *c, float *dist,
                                                                      const int dm)
{
    uint32_t cur = g->entry;
    float curd = qdist(c, dm, pay_at(ix, (size_t)g->base + cur));
    int64_t nd = 1;
    for (uint32_t level = g->max_level; level >= 1; level--) {
        bool changed = true;
        while (changed) {
            changed = false;
            const uint32_t *ul = upper_at(ix, (size_t)g->base + cur, level);
            uint32_t cnt = ul[0];
            for (uint32_t j = 0; j < cnt; j++) {
                uint32_t nb = ul[1 + j];
                if (j + 1 < cnt)
                    __builtin_prefetch(pay_at(ix, (size_t)g->base + ul[2 + j]));
                float dd = qdist(c, dm, pay_at(ix, (size_t)g->base + nb));
                nd++;
                if (dd < curd) {
                    curd = dd;
                    cur = nb;
                    changed = true;
                }
            }
        }
    }
    c->ndist += nd;
    *dist = curd;
    return cur;
}

#define VIS_TEST(x) ((vis[(x) >> 6] >> ((x) & 63)) & 1)
#define VIS_SET(x) (vis[(x) >> 6] |= 1ull << ((x) & 63))

/* hnswlib's searchBaseLayerST: best ef allowed nodes into s->top (max-heap
 * of graph-local ids).  *exhausted: every reachable node was considered. */
static inline __attribute__((always_inline)) hs_status
search_l0_t(const hnsw_index *ix, const hnsw_graph *g, hnsw_q *c, hnsw_scratch *s, uint32_t ep,
            float epd, size_t ef, const roaring_bitmap_t *allow, size_t *n_top, bool *exhausted,
            const int dm, const bool apart)
{
    const size_t es = ix->elem_size, ps = ix->pay_stride, po = ix->payload_off;
    const uint8_t *l0 = ix->level0 + (size_t)g->base * es;
    const uint8_t *pl = ix->pay + (size_t)g->base * ps;
    /* apart (a version 2 image) is a constant of each instance: the payload
     * beside the links (built, version 1) costs no second base pointer */
#define PAYLOAD(id) (apart ? pl + (size_t)(id) * ps : l0 + (size_t)(id) * es + po)
    /* the next neighbour's whole payload is prefetched while this one is
     * measured (up to 4 KiB; the hardware prefetcher follows longer rows) */
    const size_t pf = ix->code_size < 4096 ? ix->code_size : 4096;
    const size_t M0 = (size_t)ix->M0;
    uint16_t tag = next_epoch(s);
    uint16_t *tags = s->tags;
    hnsw_pair *cand = s->cand, *top = s->top;
    size_t nc = 0, nt = 0;
    int64_t nd = 0;
    float lower = INFINITY;
    uint32_t nbuf[4 * HNSW_MAX_M];   /* direct neighbours + two-hop ones (<= 2 M0) */
    /* rows measured per expansion; m (16) instead: wordnet384, 100k rows
     * at 10%, ef 32, recall 0.967 -> 0.92 */
    const size_t hop_cap = M0;
    const size_t links_bytes = 4 * (M0 + 1);

    uint64_t *vis = NULL;
    if (c->two_hop) {
        size_t words = ((size_t)g->n + 63) / 64;
        if (!GROW(s, vis, vis_cap, words))
            return HS_NOMEM;
        vis = s->vis;
        memset(vis, 0, words * sizeof(uint64_t));
        VIS_SET(ep);
    }
    tags[ep] = tag;
    if (allowed_slot(ix, c, allow, (size_t)g->base + ep)) {
        top[nt++] = (hnsw_pair){ epd, ep };
        lower = epd;
    }
    cand[nc++] = (hnsw_pair){ epd, ep };
    *exhausted = true;
    while (nc > 0) {
        hnsw_pair cur = cand[0];
        if (cur.d > lower && nt >= ef) {
            *exhausted = false;
            break;
        }
        minh_pop(cand, &nc);
        if (HS_UNLIKELY(nc + M0 + 1 > s->cand_cap)) {
            if (!GROW(s, cand, cand_cap, nc + M0 + 1))
                return HS_NOMEM;
            cand = s->cand;
        }
        const uint32_t *ll = (const uint32_t *)(const void *)(l0 + (size_t)cur.id * es);
        if (nc > 0)  /* the next candidate's links */
            __builtin_prefetch(l0 + (size_t)cand[0].id * es);
        uint32_t cnt = ll[0];
        size_t m = 0;
        if (!c->two_hop) {
            for (uint32_t j = 0; j < cnt; j++) {
                uint32_t nb = ll[1 + j];
                if (tags[nb] == tag)
                    continue;
                tags[nb] = tag;
                nbuf[m++] = nb;
                __builtin_prefetch(PAYLOAD(nb), 0, 3);
            }
        } else {
            /* a row the filter rejects is not measured: the walk goes
             * through it to its allowed neighbours (two hops, as ACORN-1),
             * at most hop_cap measured per expansion in all.  The allowed
             * direct neighbours come first; the rejected ones' link lists
             * are prefetched together (one miss each, overlapped) and
             * then read in order until hop_cap rows are gathered; those
             * left unread stay unvisited, reachable from a later node.
             * Visited is a bitset here (vis: n / 8 bytes, cleared per
             * search) and the allow bit (c->bits) is tested first: both
             * stay in L1/L2 where the 2-byte tags (200 KB at 100k rows)
             * missed on every rejected row's neighbours. */
            uint32_t rej[2 * HNSW_MAX_M];
            size_t nr = 0;
            const uint64_t *bits = c->bits;
            for (uint32_t j = 0; j < cnt; j++) {
                uint32_t nb = ll[1 + j];
                uint32_t row = row_of(ix, (size_t)g->base + nb);
                if ((bits[row >> 6] >> (row & 63)) & 1) {
                    if (VIS_TEST(nb))
                        continue;
                    VIS_SET(nb);
                    nbuf[m++] = nb;
                    __builtin_prefetch(PAYLOAD(nb), 0, 3);
                } else if (!VIS_TEST(nb)) {
                    rej[nr++] = nb;
                    prefetch_bytes(l0 + (size_t)nb * es, links_bytes);
                }
            }
            for (size_t r = 0; r < nr && m < hop_cap; r++) {
                uint32_t nb = rej[r];
                VIS_SET(nb);
                const uint32_t *l2 = (const uint32_t *)(const void *)(l0 + (size_t)nb * es);
                uint32_t c2 = l2[0];
                for (uint32_t j2 = 0; j2 < c2 && m < hop_cap; j2++) {
                    uint32_t nn = l2[1 + j2];
                    uint32_t row = row_of(ix, (size_t)g->base + nn);
                    if (!((bits[row >> 6] >> (row & 63)) & 1) || VIS_TEST(nn))
                        continue;
                    VIS_SET(nn);
                    nbuf[m++] = nn;
                    __builtin_prefetch(PAYLOAD(nn), 0, 3);
                }
            }
        }
        for (size_t j = 0; j < m; j++) {
            uint32_t nb = nbuf[j];
            if (j + 1 < m)
                prefetch_bytes(PAYLOAD(nbuf[j + 1]), pf);
            float dd = qdist(c, dm, PAYLOAD(nb));
            nd++;
            if (nt < ef || dd < lower) {
                minh_push(cand, &nc, (hnsw_pair){ dd, nb });
                if (allowed_slot(ix, c, allow, (size_t)g->base + nb)) {
                    if (nt < ef)
                        maxh_push(top, &nt, (hnsw_pair){ dd, nb });
                    else
                        maxh_sift_down(top, nt, 0, (hnsw_pair){ dd, nb });
                    lower = top[0].d;
                }
            }
        }
    }
    c->ndist += nd;
    *n_top = nt;
    return HS_OK;
#undef PAYLOAD
}

#define HNSW_DISPATCH(call_t)                       \
    switch (c->dm) {                                \
    case DM_L2: return call_t(DM_L2);               \
    case DM_IP: return call_t(DM_IP);               \
    case DM_COS: return call_t(DM_COS);             \
    default: return call_t(DM_CODE);                \
    }

static hs_status search_l0(const hnsw_index *ix, const hnsw_graph *g, hnsw_q *c,
                           hnsw_scratch *s, uint32_t ep, float epd, size_t ef,
                           const roaring_bitmap_t *allow, size_t *n_top, bool *exhausted)
{
#define CALL_T(DM) search_l0_t(ix, g, c, s, ep, epd, ef, allow, n_top, exhausted, DM, true)
    if (ix->pay_apart)
        HNSW_DISPATCH(CALL_T)
#undef CALL_T
#define CALL_T(DM) search_l0_t(ix, g, c, s, ep, epd, ef, allow, n_top, exhausted, DM, false)
    HNSW_DISPATCH(CALL_T)
#undef CALL_T
}

static uint32_t greedy_upper(const hnsw_index *ix, const hnsw_graph *g, hnsw_q *c, float *dist)
{
#define CALL_T(DM) greedy_upper_t(ix, g, c, dist, DM)
    HNSW_DISPATCH(CALL_T)
#undef CALL_T
}

/* Searches graph g with ef; merges its allowed results (row ids) into the
 * max-heap s->res of at most res_k entries. */
static hs_status graph_search(const hnsw_index *ix, const hnsw_graph *g, hnsw_q *c,
                              hnsw_scratch *s, size_t ef, const roaring_bitmap_t *allow,
                              size_t res_k, size_t *n_res, bool *exhausted, hs_error *err)
{
    *exhausted = true;
    if (g->n == 0)
        return HS_OK;
    if (!GROW(s, top, top_cap, ef + 1) || !GROW(s, cand, cand_cap, ef + (size_t)ix->M0 + 1))
        return hs_err_nomem(err, ef * sizeof(hnsw_pair));
    float epd;
    uint32_t ep = greedy_upper(ix, g, c, &epd);
    size_t nt = 0;
    if (search_l0(ix, g, c, s, ep, epd, ef, allow, &nt, exhausted) != HS_OK)
        return hs_err_nomem(err, s->cand_cap * 2 * sizeof(hnsw_pair));
    for (size_t i = 0; i < nt; i++) {
        hnsw_pair v = { s->top[i].d, row_of(ix, (size_t)g->base + s->top[i].id) };
        if (*n_res < res_k)
            maxh_push(s->res, n_res, v);
        else if (v.d < s->res[0].d)
            maxh_sift_down(s->res, *n_res, 0, v);
    }
    return HS_OK;
}

/* ---- exact search ------------------------------------------------------- */

typedef struct exact_src {
    size_t n, d;
    const uint8_t *base;      /* in-memory vectors: base + stride * slot */
    size_t stride;
    const uint32_t *map;      /* row -> slot (NULL = identity) */
    hnsw_fetch_fn fetch;      /* else vectors come from fetch */
    void *fetch_ctx;
    int dm;                   /* DM_L2/IP/COS on prepared vectors, or DM_ORDER */
    hs_metric metric;
    const float *q;
    const vd_table *k;
} exact_src;

static inline float exact_dist(const exact_src *e, const float *v)
{
    float dd = e->dm == DM_ORDER ? vd_order_dist_f32(e->k, e->metric, e->q, v, e->d)
                                 : fdist(e->k, e->dm, e->q, v, e->d);
    return dd == dd ? dd : INFINITY;  /* NaN (cosine of a zero vector) sorts last */
}

/* Exact top-k over the allowed rows (< n) into heap (room for k), sorted
 * ascending.  ibuf has room for HNSW_FETCH_BATCH ids; fbuf for
 * HNSW_FETCH_BATCH * d floats when fetching. */
static hs_status exact_topk(const exact_src *e, size_t k, const roaring_bitmap_t *allow,
                            hnsw_pair *heap, size_t *n_found, uint32_t *ibuf, float *fbuf,
                            int64_t *n_fetched, int64_t *n_dist, hs_error *err)
{
    size_t nh = 0;
    roaring_uint32_iterator_t it;
    uint32_t next_row = 0;
    if (allow)
        roaring_init_iterator(allow, &it);
    for (;;) {
        size_t m = 0;
        if (allow) {
            m = roaring_read_uint32_iterator(&it, ibuf, HNSW_FETCH_BATCH);
            while (m > 0 && ibuf[m - 1] >= e->n)  /* rows past the file: not ours */
                m--;
        } else {
            while (m < HNSW_FETCH_BATCH && next_row < e->n)
                ibuf[m++] = next_row++;
        }
        if (m == 0)
            break;
        if (e->fetch) {
            hs_status st = e->fetch(e->fetch_ctx, ibuf, m, fbuf, err);
            if (st != HS_OK) {
                hs_err_prefix(err, "hnsw exact search: fetching %zu vectors", m);
                return st;
            }
            if (n_fetched)
                *n_fetched += (int64_t)m;
            for (size_t i = 0; i < m; i++)
                tk_offer(heap, &nh, k, (hnsw_pair){ exact_dist(e, fbuf + i * e->d), ibuf[i] });
        } else {
            for (size_t i = 0; i < m; i++) {
                size_t slot = e->map ? e->map[ibuf[i]] : ibuf[i];
                const float *v = (const float *)(const void *)(e->base + slot * e->stride);
                if (i + 1 < m)
                    __builtin_prefetch(e->base + (e->map ? e->map[ibuf[i + 1]] : ibuf[i + 1]) *
                                                     e->stride);
                tk_offer(heap, &nh, k, (hnsw_pair){ exact_dist(e, v), ibuf[i] });
            }
        }
        if (n_dist)
            *n_dist += (int64_t)m;
        if (allow && m < HNSW_FETCH_BATCH)
            break;  /* iterator drained (or reached rows >= n) */
    }
    tk_sort(heap, nh);
    *n_found = nh;
    return HS_OK;
}

hs_status hnsw_exact_search(const float *x, size_t n, size_t d, hs_metric metric, const float *q,
                            int k, const roaring_bitmap_t *allow, hnsw_fetch_fn fetch,
                            void *fetch_ctx, hnsw_hit *out, int *n_out, hs_error *err)
{
    if (!n_out)
        return hs_err_set(err, HS_INVALID, "hnsw_exact_search: n_out is NULL");
    *n_out = 0;
    if (k < 0)
        return hs_err_set(err, HS_INVALID, "hnsw_exact_search: k = %d is negative", k);
    if (metric != HS_METRIC_L2 && metric != HS_METRIC_COSINE && metric != HS_METRIC_IP &&
        metric != HS_METRIC_L1)
        return hs_err_set(err, HS_INVALID, "hnsw_exact_search: metric %d is not l2, cosine, "
                          "ip or l1", (int)metric);
    if (k == 0 || n == 0)
        return HS_OK;
    if (!q || !out || d == 0)
        return hs_err_set(err, HS_INVALID, "hnsw_exact_search: NULL query/output or d = 0");
    if (!x && !fetch)
        return hs_err_set(err, HS_INVALID, "hnsw_exact_search: neither vectors nor fetch");
    size_t kk = (size_t)k < n ? (size_t)k : n;
    hnsw_pair *heap = hs_malloc(kk * sizeof *heap);
    uint32_t *ibuf = hs_malloc(HNSW_FETCH_BATCH * sizeof *ibuf);
    float *fbuf = x ? NULL : hs_malloc((size_t)HNSW_FETCH_BATCH * d * sizeof(float));
    hs_status st = HS_OK;
    if (!heap || !ibuf || (!x && !fbuf)) {
        st = hs_err_nomem(err, (size_t)HNSW_FETCH_BATCH * d * sizeof(float));
    } else {
        exact_src e = { .n = n, .d = d, .base = (const uint8_t *)x, .stride = d * sizeof(float),
                        .fetch = x ? NULL : fetch, .fetch_ctx = fetch_ctx, .dm = DM_ORDER,
                        .metric = metric, .q = q, .k = vd_kernels() };
        size_t found = 0;
        st = exact_topk(&e, kk, allow, heap, &found, ibuf, fbuf, NULL, NULL, err);
        if (st == HS_OK) {
            for (size_t i = 0; i < found; i++)
                out[i] = (hnsw_hit){ heap[i].id, heap[i].d };
            *n_out = (int)found;
        }
    }
    hs_free(heap);
    hs_free(ibuf);
    hs_free(fbuf);
    return st;
}

/* Exact search inside an index: own vectors (flat) or fetch (quantized). */
static hs_status index_exact(const hnsw_index *ix, hnsw_q *c, const float *q_raw, size_t k,
                             const hnsw_search_opts *o, hnsw_scratch *s, hnsw_hit *out,
                             int *n_out, hnsw_search_stats *stats, hs_error *err)
{
    exact_src e = { .n = ix->n, .d = ix->d, .k = c->k, .metric = ix->metric };
    if (ix->quant == VQ_FLAT) {
        e.base = ix->pay;
        e.stride = ix->pay_stride;
        e.map = ix->slot_of_row;
        e.dm = c->dm;
        e.q = c->q;
    } else if (o->vectors) {
        e.base = (const uint8_t *)(const void *)o->vectors;
        e.stride = ix->d * sizeof(float);
        e.dm = DM_ORDER;
        e.q = q_raw;
    } else {
        e.fetch = o->fetch;
        e.fetch_ctx = o->fetch_ctx;
        e.dm = DM_ORDER;
        e.q = q_raw;
        if (!GROW(s, fbuf, fbuf_cap, (size_t)HNSW_FETCH_BATCH * ix->d))
            return hs_err_nomem(err, (size_t)HNSW_FETCH_BATCH * ix->d * sizeof(float));
    }
    if (!GROW(s, tmp, tmp_cap, k) || !GROW(s, ibuf, ibuf_cap, HNSW_FETCH_BATCH))
        return hs_err_nomem(err, k * sizeof(hnsw_pair));
    size_t found = 0;
    int64_t fetched = 0, nd = 0;
    HS_TRY(exact_topk(&e, k, o->allow, s->tmp, &found, s->ibuf, s->fbuf, &fetched, &nd, err));
    for (size_t i = 0; i < found; i++)
        out[i] = (hnsw_hit){ s->tmp[i].id, s->tmp[i].d };
    *n_out = (int)found;
    if (stats) {
        stats->exact = 1;
        stats->reranked += fetched;
        stats->distances += nd;
    }
    return HS_OK;
}

/* Default for hnsw_search_opts.exact_threshold.  A graph search under an
 * allow-list of selectivity s evaluates about C / s distances (the walk
 * must meet ef allowed rows; C ~ 4 ef measured on fashion-mnist: 2600 at
 * s = 0.1, 7400 at s = 0.02 with ef 64), at random addresses; exact search
 * evaluates s * n in row order.  They cost the same near s * n =
 * sqrt(4 ef n) rows (measured crossover on fashion-mnist, n = 60000, ef 64:
 * 3000-6000 rows, formula 3900).  Quantized indexes must fetch every
 * allowed row for exact search (I/O in the table layer) while their graph
 * walk reads small codes, so they switch only below a floor like Qdrant's
 * full_scan_threshold: max(2000, n / 50) rows.  A flat graph's exact scan
 * streams its own vectors in place and is memory bound, cheaper per row
 * than the walk's random reads: it also takes whatever streams in 6 MiB
 * (2,006 rows of 784-d, 4,096 of 384-d; wordnet384, 30,000 x 384, cosine,
 * ef 32: 3,000 allowed rows took 2.0-2.6 ms by graph, 0.8-0.9 exactly; a
 * rule of n / 8 made fashion-mnist's 10% twice slower).
 *
 * In the two-hop band (two_hop: 1/16 to 1/4 of the rows allowed) the walk
 * measures allowed rows only, so it costs about what an unfiltered walk
 * does whatever s, and the floors above do not apply: the crossover alone
 * (fashion-mnist's first 20,000 rows, ef 10, CPU per query through the
 * table: 2,000 allowed rows 0.28 ms exactly, 0.17 ms by the two-hop walk,
 * unfiltered 0.08; 1,250 rows 0.17 and 0.20). */
static int64_t default_exact_threshold(const hnsw_index *ix, size_t ef, bool two_hop)
{
    double n = (double)ix->n;
    int64_t cross = (int64_t)sqrt(4.0 * (double)ef * n);
    if (two_hop)
        return cross;
    int64_t floor_rows = 2000 > (int64_t)(n / 50) ? 2000 : (int64_t)(n / 50);
    if (ix->quant != VQ_FLAT || ix->d == 0)
        return floor_rows;
    int64_t stream = (int64_t)((6u << 20) / (4 * ix->d));
    if (cross < floor_rows)
        cross = floor_rows;
    return cross > stream ? cross : stream;
}

/* Under an allow-list of 1/16 to 1/4 of the rows the walk does not measure
 * rejected rows but steps through them (search_l0_t): on fashion-mnist at
 * 10% allowed, ef 16, 0.293 -> 0.132 ms CPU a query, recall 1.0 -> 0.979;
 * at 50% measuring them was faster (0.123 vs 0.162); below 1/16 two hops no
 * longer connect the allowed rows (test_hnsw at 1%, graph forced: recall
 * 0.81), and such lists are searched exactly by the table layer anyway. */
static bool two_hop_band(const hnsw_index *ix, uint64_t allowed)
{
    return allowed < (uint64_t)ix->n / 4 && allowed >= (uint64_t)ix->n / 16;
}

/* The walk reads the allow-list as a dense bitset of rows (c->bits) in the
 * two-hop band (up to M0 lookups per rejected neighbour; at 100k rows the
 * bitset is 12.5 KB, L1-resident) and where roaring's lookups cost most:
 * fewer than 4,096 allowed rows per 65,536 (roaring keeps those as sorted
 * arrays, binary searched on every lookup: fashion-mnist's first 20,000
 * rows at 10%, a quarter of the walk's time). */
static bool wants_bits(const hnsw_index *ix, uint64_t allowed)
{
    uint64_t chunks = ((uint64_t)ix->n + 65535) >> 16;
    return two_hop_band(ix, allowed) || allowed < chunks * 4096;
}

static void fill_bits(const hnsw_index *ix, const roaring_bitmap_t *allow, uint64_t *bits)
{
    memset(bits, 0, (ix->n + 63) / 64 * sizeof(uint64_t));
    roaring_uint32_iterator_t it;
    roaring_init_iterator(allow, &it);
    uint32_t buf[256];
    for (;;) {
        uint32_t m = roaring_read_uint32_iterator(&it, buf, 256);
        for (uint32_t i = 0; i < m; i++)
            if (buf[i] < ix->n)
                bits[buf[i] >> 6] |= 1ull << (buf[i] & 63);
        if (m < 256)
            break;
    }
}

hs_status hnsw_allow_bits(const hnsw_index *ix, const roaring_bitmap_t *allow, uint64_t **out,
                          hs_error *err)
{
    *out = NULL;
    if (!ix || !allow || ix->n == 0 ||
        !wants_bits(ix, roaring_bitmap_range_cardinality(allow, 0, ix->n)))
        return HS_OK;
    size_t bytes = (ix->n + 63) / 64 * sizeof(uint64_t);
    uint64_t *bits = hs_malloc(bytes);
    if (!bits)
        return hs_err_nomem(err, bytes);
    fill_bits(ix, allow, bits);
    *out = bits;
    return HS_OK;
}

/* c->bits for the walk: the caller's (allow_bits), else built into the
 * scratch (a pass over the allowed rows and n / 8 bytes zeroed, per
 * search: tq8 on wordnet384, 100k rows at 10%, an eighth of the search). */
static hs_status dense_allow(const hnsw_index *ix, hnsw_q *c, const hnsw_search_opts *o,
                             uint64_t allowed, hnsw_scratch *s, hs_error *err)
{
    if (!wants_bits(ix, allowed))
        return HS_OK;
    if (o->allow_bits) {
        c->bits = o->allow_bits;
        return HS_OK;
    }
    size_t words = (ix->n + 63) / 64;
    if (!GROW(s, bits, bits_cap, words))
        return hs_err_nomem(err, words * sizeof(uint64_t));
    fill_bits(ix, o->allow, s->bits);
    c->bits = s->bits;
    return HS_OK;
}

/* Picks the nprobe lists whose centroids are nearest to the query into
 * s->ibuf (ascending by distance). */
static hs_status ivf_probe(const hnsw_index *ix, hnsw_q *c, size_t nprobe,
                           hnsw_scratch *s, hs_error *err)
{
    size_t L = ix->n_graphs, d = ix->d;
    if (!GROW(s, tmp, tmp_cap, L) || !GROW(s, ibuf, ibuf_cap, L))
        return hs_err_nomem(err, L * sizeof(hnsw_pair));
    const float *qv = c->qn;
    size_t nh = 0;
    for (size_t l = 0; l < L; l++) {
        const float *cv = ix->cent + l * d;
        float dd = ix->metric == HS_METRIC_IP ? -c->k->ip_f32(qv, cv, d)
                                              : c->k->l2sq_f32(qv, cv, d);
        tk_offer(s->tmp, &nh, nprobe, (hnsw_pair){ dd == dd ? dd : INFINITY, (uint32_t)l });
    }
    c->ndist += (int64_t)L;
    tk_sort(s->tmp, nh);
    for (size_t i = 0; i < nh; i++)
        s->ibuf[i] = s->tmp[i].id;
    return HS_OK;
}

/* Reranks the candidates in s->res (row ids, approximate distances) with
 * exact vectors; the best k into out. */
static hs_status rerank(const hnsw_index *ix, hnsw_q *c, const float *q_raw, size_t n_res,
                        size_t k, const hnsw_search_opts *o, hnsw_scratch *s, hnsw_hit *out,
                        int *n_out, hnsw_search_stats *stats, hs_error *err)
{
    if (!GROW(s, ibuf, ibuf_cap, n_res) || !GROW(s, fbuf, fbuf_cap, n_res * ix->d) ||
        !GROW(s, tmp, tmp_cap, k))
        return hs_err_nomem(err, n_res * ix->d * sizeof(float));
    /* ascending row order: the table layer reads rows in file order */
    for (size_t i = 0; i < n_res; i++)
        s->ibuf[i] = s->res[i].id;
    for (size_t i = 1; i < n_res; i++) {
        uint32_t v = s->ibuf[i];
        size_t j = i;
        while (j > 0 && s->ibuf[j - 1] > v) {
            s->ibuf[j] = s->ibuf[j - 1];
            j--;
        }
        s->ibuf[j] = v;
    }
    if (!o->vectors) {
        hs_status st = o->fetch(o->fetch_ctx, s->ibuf, n_res, s->fbuf, err);
        if (st != HS_OK) {
            hs_err_prefix(err, "hnsw rerank: fetching %zu vectors", n_res);
            return st;
        }
    }
    exact_src e = { .d = ix->d, .dm = DM_ORDER, .metric = ix->metric, .q = q_raw, .k = c->k };
    size_t nh = 0;
    for (size_t i = 0; i < n_res; i++) {
        const float *v = o->vectors ? o->vectors + (size_t)s->ibuf[i] * ix->d
                                    : s->fbuf + i * ix->d;
        tk_offer(s->tmp, &nh, k, (hnsw_pair){ exact_dist(&e, v), s->ibuf[i] });
    }
    tk_sort(s->tmp, nh);
    for (size_t i = 0; i < nh; i++)
        out[i] = (hnsw_hit){ s->tmp[i].id, s->tmp[i].d };
    *n_out = (int)nh;
    if (stats) {
        stats->reranked += (int64_t)n_res;
        stats->distances += (int64_t)n_res;
    }
    return HS_OK;
}

static hs_status search_in(const hnsw_index *ix, hnsw_q *c, const float *q_raw,
                           const hnsw_search_opts *o, size_t k, uint64_t allowed,
                           hnsw_scratch *s, hnsw_hit *out, int *n_out, hnsw_search_stats *stats,
                           hs_error *err)
{
    size_t want = k < allowed ? k : (size_t)allowed;
    size_t ef = (size_t)(o->ef > 0 ? o->ef : ix->ef_search);
    if (ef < k)
        ef = k;
    int64_t threshold = o->exact_threshold > 0 ? o->exact_threshold
                                               : default_exact_threshold(ix, ef, c->two_hop);
    if (o->allow && (int64_t)allowed <= threshold)
        return index_exact(ix, c, q_raw, k, o, s, out, n_out, stats, err);
    if (ix->partial)
        return hs_err_set(err, HS_UNSUPPORTED, "hnsw: only the head of this index was read "
                          "(hnsw_open_prefix) and this search (%llu of %zu rows allowed, exact "
                          "up to %lld) needs its graph", (unsigned long long)allowed, ix->n,
                          (long long)threshold);
    if (o->allow)
        HS_TRY(dense_allow(ix, c, o, allowed, s, err));

    bool quant = ix->quant != VQ_FLAT;
    size_t res_k = k;
    if (quant) {
        size_t r = k * (size_t)(o->rerank > 0 ? o->rerank : ix->rerank);
        res_k = r > ef ? r : ef;
        ef = res_k;
    }
    size_t nprobe = 1;
    if (ix->ivf_lists > 0) {
        nprobe = (size_t)(o->nprobe > 0 ? o->nprobe : ix->ivf_nprobe);
        if (nprobe > ix->n_graphs)
            nprobe = ix->n_graphs;
    }
    if (!GROW(s, res, res_cap, res_k + 1))
        return hs_err_nomem(err, res_k * sizeof(hnsw_pair));
    size_t n_res = 0;
    for (;;) {
        n_res = 0;
        bool all_exhausted = true;
        if (ix->ivf_lists > 0) {
            HS_TRY(ivf_probe(ix, c, nprobe, s, err));
            for (size_t i = 0; i < nprobe; i++) {
                bool ex;
                /* ivf_probe leaves the lists in s->ibuf; graph_search does not touch it */
                HS_TRY(graph_search(ix, &ix->graphs[s->ibuf[i]], c, s, ef, o->allow, res_k,
                                    &n_res, &ex, err));
                all_exhausted &= ex;
            }
        } else {
            HS_TRY(graph_search(ix, &ix->graphs[0], c, s, ef, o->allow, res_k, &n_res,
                                &all_exhausted, err));
        }
        if (n_res >= want)
            break;
        bool can_widen = nprobe < ix->n_graphs || (!all_exhausted && ef < ix->max_graph_n);
        if (!can_widen)
            break;
        if (stats)
            stats->widenings++;
        ef = ef * 2 < ix->max_graph_n ? ef * 2 : ix->max_graph_n;
        if (ef < res_k)
            ef = res_k;
        nprobe = nprobe * 2 < ix->n_graphs ? nprobe * 2 : ix->n_graphs;
    }
    if (stats)
        stats->distances += c->ndist;
    c->ndist = 0;
    if (n_res < want)  /* the last resort: never fewer than min(k, allowed) */
        return index_exact(ix, c, q_raw, k, o, s, out, n_out, stats, err);
    if (quant)
        return rerank(ix, c, q_raw, n_res, k, o, s, out, n_out, stats, err);
    maxh_sort(s->res, n_res);
    size_t m = n_res < k ? n_res : k;
    for (size_t i = 0; i < m; i++)
        out[i] = (hnsw_hit){ s->res[i].id, s->res[i].d };
    *n_out = (int)m;
    return HS_OK;
}

hs_status hnsw_search(const hnsw_index *ix, const float *q, const hnsw_search_opts *o,
                      hnsw_hit *out, int *n_out, hnsw_search_stats *stats, hs_error *err)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!n_out)
        return hs_err_set(err, HS_INVALID, "hnsw_search: n_out is NULL");
    *n_out = 0;
    if (!ix || !q || !o)
        return hs_err_set(err, HS_INVALID, "hnsw_search: NULL index, query or options");
    if (o->k < 0 || o->ef < 0 || o->nprobe < 0)
        return hs_err_set(err, HS_INVALID, "hnsw_search: negative k (%d), ef (%d) or nprobe (%d)",
                          o->k, o->ef, o->nprobe);
    if (o->k == 0)
        return HS_OK;
    if (!out)
        return hs_err_set(err, HS_INVALID, "hnsw_search: out is NULL");
    if (ix->quant != VQ_FLAT && !o->fetch)
        return hs_err_set(err, HS_INVALID, "hnsw_search: a quantized index needs a fetch callback");
    for (size_t j = 0; j < ix->d; j++)
        if (!isfinite(q[j]))
            return hs_err_set(err, HS_INVALID, "hnsw_search: query component %zu is not finite", j);
    uint64_t allowed = o->allow ? roaring_bitmap_range_cardinality(o->allow, 0, ix->n) : ix->n;
    size_t k = (size_t)o->k;
    if (k > ix->n)
        k = ix->n;
    if (allowed == 0)
        return HS_OK;

    hnsw_scratch *s;
    HS_TRY(scratch_get(ix, &s, err));
    hnsw_q c = { .k = vd_kernels(), .d = ix->d, .q = q, .qn = q };
    c.two_hop = o->allow && two_hop_band(ix, allowed);
    hs_status st = HS_OK;
    if (ix->metric == HS_METRIC_COSINE) {
        if (!GROW(s, qbuf, qbuf_cap, ix->d)) {
            st = hs_err_nomem(err, ix->d * sizeof(float));
        } else {
            normalize_into(c.k, q, ix->d, s->qbuf);
            c.qn = s->qbuf;
        }
    }
    if (ix->quant == VQ_FLAT) {
        c.dm = float_dm(ix->metric);
        c.q = c.qn;
    } else if (st == HS_OK) {
        c.dm = DM_CODE;
        if (!ix->partial)   /* a partial index searches exactly, never on codes */
            st = vq_query_new(ix->vq, q, &c.qq, err);
    }
    if (st == HS_OK)
        st = search_in(ix, &c, q, o, k, allowed, s, out, n_out, stats, err);
    if (st != HS_OK)
        *n_out = 0;
    vq_query_free(c.qq);
    scratch_put(ix, s);
    return st;
}

/* ==== image =============================================================== */

typedef struct hnsw_layout {
    size_t pay_off, vq_off, cent_off, graphs_off, ids_off, ustart_off, upper_off, l0_off, sum_off, total;
} hnsw_layout;

/* Section offsets from the header fields; false on overflow. */
static bool layout_of(uint64_t n, uint64_t d, uint64_t n_graphs, bool ivf, uint64_t vq_len,
                      uint64_t n_upper, uint64_t M, uint64_t elem_size, uint64_t pay_size,
                      hnsw_layout *L)
{
    uint64_t off = HNSW_HEADER_BYTES, len, t;
#define SECTION(field, bytes_expr)                                              \
    do {                                                                        \
        off = align_up(off, HNSW_ALIGN);                                        \
        L->field = (size_t)off;                                                 \
        len = (bytes_expr);                                                     \
        if (__builtin_add_overflow(off, len, &off) || off > (uint64_t)SIZE_MAX) \
            return false;                                                       \
    } while (0)
    if (n > UINT32_MAX - 1u || d > HNSW_MAX_DIM || n_graphs > (1u << 20) || M > HNSW_MAX_M ||
        vq_len > (uint64_t)1 << 40 || n_upper > UINT32_MAX || elem_size > (uint64_t)1 << 20 ||
        pay_size > (uint64_t)1 << 20)
        return false;
    /* version 2: the payloads first, so that a reader of the image's head
     * gets them in one range (hnsw_open_prefix); version 1: pay_size 0 */
    if (__builtin_mul_overflow(n, pay_size, &t))
        return false;
    SECTION(pay_off, t);
    SECTION(vq_off, vq_len);
    SECTION(cent_off, ivf ? n_graphs * d * 4 : 0);
    SECTION(graphs_off, n_graphs * 16);
    SECTION(ids_off, ivf ? n * 4 : 0);
    SECTION(ustart_off, (n + 1) * 4);
    if (__builtin_mul_overflow(n_upper, (M + 1) * 4, &t))
        return false;
    SECTION(upper_off, t);
    if (__builtin_mul_overflow(n, elem_size, &t))
        return false;
    SECTION(l0_off, t);
#undef SECTION
    off = align_up(off, 8);
    L->sum_off = (size_t)off;
    if (off + 8 > (uint64_t)SIZE_MAX)
        return false;
    L->total = (size_t)off + 8;
    return true;
}

hs_status hnsw_save(const hnsw_index *ix, hs_buf *out, hs_error *err)
{
    return hnsw_save_version(ix, HNSW_VERSION, out, err);
}

hs_status hnsw_save_version(const hnsw_index *ix, unsigned version, hs_buf *out, hs_error *err)
{
    if (!ix || !out)
        return hs_err_set(err, HS_INVALID, "hnsw_save: NULL index or buffer");
    if (version != HNSW_VERSION && version != HNSW_VERSION_1)
        return hs_err_set(err, HS_INVALID, "hnsw_save: no image version %u", version);
    /* version 1 interleaves each row's payload with its links: an index
     * whose payloads lie apart (opened from a version 2 image) is saved as
     * version 2 */
    bool v1 = version == HNSW_VERSION_1 && !ix->pay_apart;
    size_t start = out->len;
    hs_buf vqb = { 0 };
    if (ix->vq)
        HS_TRY(vq_save(ix->vq, &vqb, err));
    bool ivf = ix->ivf_lists > 0;
    hnsw_layout L;
    /* version 2: level 0 keeps the links only, the payloads their own
     * section; version 1: the whole elements, no payload section */
    size_t link_size = v1 ? ix->elem_size : ix->payload_off, pay_size = v1 ? 0 : align_up(ix->code_size, 4);
    if (!layout_of(ix->n, ix->d, ix->n_graphs, ivf, vqb.len, ix->n_upper, (uint64_t)ix->M,
                   link_size, pay_size, &L)) {
        hs_buf_free(&vqb);
        return hs_err_set(err, HS_INTERNAL, "hnsw_save: image size overflows");
    }
    if (hs_buf_append_zeros(out, L.total) != HS_OK) {
        hs_buf_free(&vqb);
        return hs_err_nomem(err, L.total);
    }
    uint8_t *p = out->data + start;
    memcpy(p, HNSW_MAGIC, 8);
    put_u32(p + 8, v1 ? HNSW_VERSION_1 : HNSW_VERSION);
    put_u32(p + 12, HNSW_HEADER_BYTES);
    put_u64(p + 16, L.total);
    put_u64(p + 24, ix->n);
    put_u32(p + 32, (uint32_t)ix->d);
    put_u32(p + 36, (uint32_t)ix->metric);
    put_u32(p + 40, (uint32_t)ix->quant);
    put_u32(p + 44, (uint32_t)ix->M);
    put_u32(p + 48, (uint32_t)ix->ef_construction);
    put_u32(p + 52, (uint32_t)ix->ef_search);
    put_u32(p + 56, (uint32_t)ix->rerank);
    put_u32(p + 60, (uint32_t)ix->ivf_lists);
    put_u32(p + 64, (uint32_t)ix->ivf_nprobe);
    put_u32(p + 68, ix->n_graphs);
    put_u32(p + 72, (uint32_t)ix->code_size);
    put_u32(p + 76, (uint32_t)link_size);
    put_u64(p + 80, ix->seed);
    put_u64(p + 88, ix->n_upper);
    put_u64(p + 96, vqb.len);
    if (vqb.len)
        memcpy(p + L.vq_off, vqb.data, vqb.len);
    hs_buf_free(&vqb);
    if (ivf)
        memcpy(p + L.cent_off, ix->cent, (size_t)ix->n_graphs * ix->d * sizeof(float));
    for (uint32_t g = 0; g < ix->n_graphs; g++) {
        uint8_t *e = p + L.graphs_off + (size_t)g * 16;
        put_u32(e, ix->graphs[g].base);
        put_u32(e + 4, ix->graphs[g].n);
        put_u32(e + 8, ix->graphs[g].entry);
        put_u32(e + 12, ix->graphs[g].max_level);
    }
    if (ivf)
        memcpy(p + L.ids_off, ix->ids, ix->n * sizeof(uint32_t));
    memcpy(p + L.ustart_off, ix->ustart, (ix->n + 1) * sizeof(uint32_t));
    memcpy(p + L.upper_off, ix->upper, ix->n_upper * (size_t)(1 + ix->M) * sizeof(uint32_t));
    for (size_t s = 0; s < ix->n; s++) {
        memcpy(p + L.l0_off + s * link_size, elem_at(ix, s), link_size);
        if (!v1)
            memcpy(p + L.pay_off + s * pay_size, pay_at(ix, s), ix->code_size);
    }
    if (!v1) {
        put_u64(p + 104, hs_xxh64(p + L.pay_off, ix->n * pay_size, 0));
        put_u64(p + 112, hs_xxh64(p, 112, 0));
    }
    put_u64(p + L.sum_off, hs_xxh64(p, L.sum_off, 0));
    return HS_OK;
}

#define CORRUPT(...) HS_CORRUPT_AT(err, "hnsw index: " __VA_ARGS__)

/* Checks the graph table, ids, levels and every link (after the checksum:
 * a checksum can be forged, so this is what keeps the search in bounds). */
static hs_status validate_graphs(hnsw_index *ix, hs_error *err)
{
    size_t n = ix->n, M = (size_t)ix->M, M0 = (size_t)ix->M0;
    uint64_t next_base = 0;
    for (uint32_t g = 0; g < ix->n_graphs; g++) {
        const hnsw_graph *gr = &ix->graphs[g];
        if (gr->base != next_base)
            return CORRUPT("graph %u starts at slot %u, expected %llu", g, gr->base,
                           (unsigned long long)next_base);
        next_base += gr->n;
        if (next_base > n)
            return CORRUPT("graph %u ends past the %zu rows", g, n);
        if (gr->n == 0 ? (gr->entry != 0 || gr->max_level != 0) : gr->entry >= gr->n)
            return CORRUPT("graph %u: entry node %u of %u", g, gr->entry, gr->n);
        if (gr->max_level > HNSW_MAX_LEVEL)
            return CORRUPT("graph %u: top level %u", g, gr->max_level);
        if (gr->n > ix->max_graph_n)
            ix->max_graph_n = gr->n;
    }
    if (next_base != n)
        return CORRUPT("graphs hold %llu rows, the header says %zu",
                       (unsigned long long)next_base, n);
    if (ix->ids) {  /* a permutation of 0..n-1 */
        size_t words = (n + 63) / 64;
        uint64_t *seen = hs_calloc(words ? words : 1, sizeof(uint64_t));
        if (!seen)
            return hs_err_nomem(err, words * 8);
        hs_status st = HS_OK;
        for (size_t s = 0; s < n; s++) {
            uint32_t r = ix->ids[s];
            if (r >= n || (seen[r / 64] >> (r % 64) & 1)) {
                st = CORRUPT("slot %zu holds row %u (out of range or repeated)", s, r);
                break;
            }
            seen[r / 64] |= (uint64_t)1 << (r % 64);
        }
        hs_free(seen);
        HS_TRY(st);
    }
    if (ix->ustart[0] != 0 || ix->ustart[n] != ix->n_upper)
        return CORRUPT("upper-level index runs from %u to %u, expected 0 to %zu", ix->ustart[0],
                       ix->ustart[n], ix->n_upper);
    for (uint32_t g = 0; g < ix->n_graphs; g++) {
        const hnsw_graph *gr = &ix->graphs[g];
        for (size_t i = 0; i < gr->n; i++) {  /* levels first: links check against them */
            size_t s = (size_t)gr->base + i;
            if (ix->ustart[s + 1] < ix->ustart[s] ||
                ix->ustart[s + 1] - ix->ustart[s] > gr->max_level)
                return CORRUPT("slot %zu: level %lld above graph %u's top %u", s,
                               (long long)ix->ustart[s + 1] - (long long)ix->ustart[s], g,
                               gr->max_level);
        }
        if (gr->n > 0) {
            size_t es = (size_t)gr->base + gr->entry;
            if (ix->ustart[es + 1] - ix->ustart[es] != gr->max_level)
                return CORRUPT("graph %u: entry node %u is not on the top level %u", g,
                               gr->entry, gr->max_level);
        }
        for (size_t i = 0; i < gr->n; i++) {
            size_t s = (size_t)gr->base + i;
            const uint32_t *ll = (const uint32_t *)(const void *)elem_at(ix, s);
            if (ll[0] > M0)
                return CORRUPT("slot %zu: %u level-0 links, at most %zu", s, ll[0], M0);
            for (uint32_t j = 0; j < ll[0]; j++)
                if (ll[1 + j] >= gr->n)
                    return CORRUPT("slot %zu: level-0 link %u to node %u of %u", s, j, ll[1 + j],
                                   gr->n);
            uint32_t lv = ix->ustart[s + 1] - ix->ustart[s];
            for (uint32_t l = 1; l <= lv; l++) {
                const uint32_t *ul = upper_at(ix, s, l);
                if (ul[0] > M)
                    return CORRUPT("slot %zu: %u links at level %u, at most %zu", s, ul[0], l, M);
                for (uint32_t j = 0; j < ul[0]; j++) {
                    uint32_t t = ul[1 + j];
                    if (t >= gr->n)
                        return CORRUPT("slot %zu: level-%u link to node %u of %u", s, l, t,
                                       gr->n);
                    size_t ts = (size_t)gr->base + t;
                    if (ix->ustart[ts + 1] - ix->ustart[ts] < l)
                        return CORRUPT("slot %zu: level-%u link to node %u, which has level %u",
                                       s, l, t, ix->ustart[ts + 1] - ix->ustart[ts]);
                }
            }
        }
    }
    return HS_OK;
}

/* The header p[0..128) of an image of `total` bytes: magic, version, the
 * fields and the section layout (*L); ix gets the parameters.  Version 2
 * headers carry their own checksum (bytes 112..120) so that a reader of the
 * image's head alone (hnsw_open_prefix) can trust them. */
static hs_status parse_header(hnsw_index *ix, const uint8_t *p, uint64_t total, uint32_t *version,
                              hnsw_layout *L, hs_error *err)
{
    if (memcmp(p, HNSW_MAGIC, 8) != 0)
        return CORRUPT("bad magic (not an HNSW index image)");
    uint32_t ver = get_u32(p + 8);
    if (ver != HNSW_VERSION && ver != HNSW_VERSION_1)
        return CORRUPT("version %u, this build reads %u and %u", ver, HNSW_VERSION_1,
                       HNSW_VERSION);
    *version = ver;
    if (get_u32(p + 12) != HNSW_HEADER_BYTES)
        return CORRUPT("header of %u bytes, expected %u", get_u32(p + 12), HNSW_HEADER_BYTES);
    if (get_u64(p + 16) != total)
        return CORRUPT("image claims %llu bytes, %llu given (truncated?)",
                       (unsigned long long)get_u64(p + 16), (unsigned long long)total);
    if (ver == HNSW_VERSION && hs_xxh64(p, 112, 0) != get_u64(p + 112))
        return CORRUPT("header checksum mismatch");
    for (size_t o = ver == HNSW_VERSION ? 120 : 104; o < HNSW_HEADER_BYTES; o++)
        if (p[o] != 0)
            return CORRUPT("reserved header byte %zu is %u", o, p[o]);

    uint64_t rows = get_u64(p + 24);
    uint32_t d = get_u32(p + 32), metric = get_u32(p + 36), quant = get_u32(p + 40);
    uint32_t M = get_u32(p + 44), efc = get_u32(p + 48), efs = get_u32(p + 52);
    uint32_t rr = get_u32(p + 56), lists = get_u32(p + 60), nprobe = get_u32(p + 64);
    uint32_t n_graphs = get_u32(p + 68), code_size = get_u32(p + 72), elem_size = get_u32(p + 76);
    uint64_t n_upper = get_u64(p + 88), vq_len = get_u64(p + 96);
    if (rows == 0 || rows > UINT32_MAX - 1u)
        return CORRUPT("%llu rows", (unsigned long long)rows);
    if (d == 0 || d > HNSW_MAX_DIM)
        return CORRUPT("dimension %u", d);
    if (metric != HS_METRIC_L2 && metric != HS_METRIC_COSINE && metric != HS_METRIC_IP)
        return CORRUPT("metric %u", metric);
    if (quant > VQ_BIN)
        return CORRUPT("quantizer type %u", quant);
    if (M < 2 || M > HNSW_MAX_M)
        return CORRUPT("M = %u", M);
    if (efc < 1 || efc > HNSW_MAX_EF || efs < 1 || efs > HNSW_MAX_EF || rr < 1 || rr > 10000)
        return CORRUPT("ef_construction %u, ef_search %u, rerank %u", efc, efs, rr);
    if (lists == 0 ? (n_graphs != 1 || nprobe != 0)
                   : (n_graphs != lists || nprobe < 1 || nprobe > lists || lists > rows))
        return CORRUPT("%u IVF lists, %u graphs, nprobe %u", lists, n_graphs, nprobe);
    if (quant == VQ_FLAT ? (code_size != d * 4 || vq_len != 0) : (vq_len == 0 ||
                                                                  code_size > (1u << 20)))
        return CORRUPT("code size %u, quantizer blob %llu bytes for type %u", code_size,
                       (unsigned long long)vq_len, quant);
    ix->n = (size_t)rows;
    ix->d = d;
    ix->metric = (hs_metric)metric;
    ix->quant = (vq_type)quant;
    ix->M = (int)M;
    ix->ef_construction = (int)efc;
    ix->ef_search = (int)efs;
    ix->rerank = (int)rr;
    ix->ivf_lists = (int)lists;
    ix->ivf_nprobe = (int)nprobe;
    ix->n_graphs = n_graphs;
    ix->seed = get_u64(p + 80);
    ix->code_size = code_size;
    ix->n_upper = (size_t)n_upper;
    set_shape(ix);
    /* version 2: level-0 elements are the links alone, payloads apart */
    size_t want = ver == HNSW_VERSION ? ix->payload_off : ix->elem_size;
    size_t pay_size = ver == HNSW_VERSION ? align_up(code_size, 4) : 0;
    if (elem_size != want)
        return CORRUPT("element size %u, expected %zu", elem_size, want);
    if (!layout_of(rows, d, n_graphs, lists > 0, vq_len, n_upper, M, elem_size, pay_size, L) ||
        L->total != total)
        return CORRUPT("sections need %zu bytes, the image has %llu", L->total,
                       (unsigned long long)total);
    if (ver == HNSW_VERSION) {
        ix->elem_size = elem_size;
        ix->pay_stride = pay_size;
        ix->pay_apart = true;
    } else {
        ix->pay_stride = ix->elem_size;
    }
    return HS_OK;
}

static hs_status open_image(hnsw_index *ix, const uint8_t *p, size_t n, hs_error *err)
{
    if (n < HNSW_HEADER_BYTES + 8)
        return CORRUPT("%zu bytes, shorter than the %u-byte header", n, HNSW_HEADER_BYTES);
    if (memcmp(p, HNSW_MAGIC, 8) == 0 && get_u64(p + 16) == n &&
        hs_xxh64(p, n - 8, 0) != get_u64(p + n - 8))
        return CORRUPT("checksum mismatch over %zu bytes", n - 8);
    uint32_t version = 0;
    hnsw_layout L;
    HS_TRY(parse_header(ix, p, n, &version, &L, err));
    uint32_t quant = (uint32_t)ix->quant, d = (uint32_t)ix->d, code_size = (uint32_t)ix->code_size;
    uint32_t n_graphs = ix->n_graphs, lists = (uint32_t)ix->ivf_lists;
    uint64_t vq_len = get_u64(p + 96);
    if (quant != VQ_FLAT) {
        hs_error qerr = { 0 };
        hs_status st = vq_load(p + L.vq_off, (size_t)vq_len, &ix->vq, &qerr);
        if (st == HS_NOMEM)
            return hs_err_set(err, st, "hnsw index: quantizer: %s", qerr.msg);
        if (st != HS_OK)  /* whatever vq_load says, a bad blob is a corrupt image */
            return CORRUPT("quantizer: %s", qerr.msg);
        if (vq_get_type(ix->vq) != ix->quant || vq_dim(ix->vq) != d ||
            vq_code_size(ix->vq) != code_size)
            return CORRUPT("quantizer (type %d, dim %zu, code %zu bytes) does not match the "
                           "header", (int)vq_get_type(ix->vq), vq_dim(ix->vq),
                           vq_code_size(ix->vq));
        ix->vq_bytes = (size_t)vq_len;
    }
    ix->graphs = hs_malloc((size_t)n_graphs * sizeof(hnsw_graph));
    if (!ix->graphs)
        return hs_err_nomem(err, (size_t)n_graphs * sizeof(hnsw_graph));
    for (uint32_t g = 0; g < n_graphs; g++) {
        const uint8_t *e = p + L.graphs_off + (size_t)g * 16;
        ix->graphs[g] = (hnsw_graph){ get_u32(e), get_u32(e + 4), get_u32(e + 8),
                                      get_u32(e + 12) };
    }
    if (lists > 0) {
        ix->cent = (const float *)(const void *)(p + L.cent_off);
        ix->ids = (const uint32_t *)(const void *)(p + L.ids_off);
    }
    ix->ustart = (const uint32_t *)(const void *)(p + L.ustart_off);
    ix->upper = (const uint32_t *)(const void *)(p + L.upper_off);
    ix->level0 = p + L.l0_off;
    ix->pay = version == HNSW_VERSION ? p + L.pay_off : ix->level0 + ix->payload_off;
    HS_TRY(validate_graphs(ix, err));
    if (ix->ids && ix->quant == VQ_FLAT) {
        ix->slot_of_row = hs_malloc(ix->n * sizeof(uint32_t));
        if (!ix->slot_of_row)
            return hs_err_nomem(err, ix->n * sizeof(uint32_t));
        for (size_t s = 0; s < ix->n; s++)
            ix->slot_of_row[ix->ids[s]] = (uint32_t)s;
    }
    return HS_OK;
}

hs_status hnsw_open(const uint8_t *p, size_t n, hnsw_index **out, hs_error *err)
{
    if (!out)
        return hs_err_set(err, HS_INVALID, "hnsw_open: out is NULL");
    *out = NULL;
    if (!p && n > 0)
        return hs_err_set(err, HS_INVALID, "hnsw_open: NULL image");
    hnsw_index *ix = index_new();
    if (!ix)
        return hs_err_nomem(err, sizeof *ix);
    if (((uintptr_t)p & 3) != 0) {
        /* the arrays are read as u32/f32 in place: a misaligned image (not
         * an mmap, not a malloc'd buffer) is copied once */
        ix->own_image = hs_malloc_aligned(n);
        if (!ix->own_image) {
            hnsw_free(ix);
            return hs_err_nomem(err, n);
        }
        memcpy(ix->own_image, p, n);
        p = ix->own_image;
    }
    hs_status st = open_image(ix, p, n, err);
    if (st != HS_OK) {
        hnsw_free(ix);
        return st;
    }
    *out = ix;
    return HS_OK;
}

/* The head p[0..avail) of a version 2 image: the header (its own checksum)
 * and, for a flat index without IVF lists, the payload section right after
 * it (the exact vectors, checked by the header's payload checksum).  Enough
 * for the exact search of a small allow-list, the only search such an
 * index does (search_in: HS_UNSUPPORTED for any other, so that the caller
 * reads the whole image).  HS_UNSUPPORTED too where the head cannot serve:
 * a version 1 image (payloads inside level 0), IVF, or too few bytes. */
hs_status hnsw_open_prefix(const uint8_t *p, size_t avail, hnsw_index **out, hs_error *err)
{
    if (!out)
        return hs_err_set(err, HS_INVALID, "hnsw_open_prefix: out is NULL");
    *out = NULL;
    if (!p || avail < HNSW_HEADER_BYTES)
        return hs_err_set(err, HS_UNSUPPORTED, "hnsw_open_prefix: %zu bytes hold no header",
                          avail);
    if (((uintptr_t)p & 3) != 0)
        return hs_err_set(err, HS_INVALID, "hnsw_open_prefix: misaligned image");
    if (memcmp(p, HNSW_MAGIC, 8) == 0 && get_u32(p + 8) == HNSW_VERSION_1)
        return hs_err_set(err, HS_UNSUPPORTED, "hnsw index: version 1 keeps its payloads "
                          "inside level 0; read it whole");
    hnsw_index *ix = index_new();
    if (!ix)
        return hs_err_nomem(err, sizeof *ix);
    uint32_t version = 0;
    hnsw_layout L;
    hs_status st = parse_header(ix, p, get_u64(p + 16), &version, &L, err);
    if (st == HS_OK && ix->quant == VQ_FLAT) {
        size_t pay_bytes = ix->n * ix->pay_stride;
        if (ix->ivf_lists > 0)
            st = hs_err_set(err, HS_UNSUPPORTED, "hnsw index: IVF payloads are by list; read "
                            "it whole");
        else if (avail < L.pay_off || avail - L.pay_off < pay_bytes)
            st = hs_err_set(err, HS_UNSUPPORTED, "hnsw index: %zu bytes of the head, the "
                            "payloads end at %zu", avail, L.pay_off + pay_bytes);
        else if (hs_xxh64(p + L.pay_off, pay_bytes, 0) != get_u64(p + 104))
            st = CORRUPT("payload checksum mismatch (%zu bytes at offset %zu)", pay_bytes,
                         L.pay_off);
        for (size_t i = HNSW_HEADER_BYTES; st == HS_OK && i < L.pay_off; i++)
            if (p[i])
                st = CORRUPT("nonzero padding at offset %zu", i);
        ix->pay = p + L.pay_off;
    }
    if (st != HS_OK) {
        hnsw_free(ix);
        return st;
    }
    ix->partial = true;
    *out = ix;
    return HS_OK;
}

/*
 * parquet/pcache.c - bounded page decompression and the process-wide cache
 * of decompressed pages (see pcache.h).
 *
 * Why a cache: a selective read ("take" of a few rows by position, an index
 * lookup's rows) of a compressed column decodes a handful of values out of
 * each page it touches, and decompressing the page costs far more than the
 * values: 10-60 us for a 32-64 KiB zstd page against well under 1 us to
 * gather the rows.  Page-mode reads (reader.c) keep what they decompress
 * here, so repeated or hot takes decompress a page once.  Sequential scans
 * do not use it (they read each page once, and would only evict hot pages).
 *
 * Structure: buckets by key hash (doubled when entries outnumber them
 * twice) and a recency list, newest at the head; lookups, inserts and
 * evictions are O(1).  An entry's cost is its bytes plus the entry itself;
 * inserts evict from the tail until the total fits the budget.  Entries in
 * use (refs > 0) may be evicted: they leave the table and are freed at
 * their last release, so memory in use by running scans can exceed the
 * budget by what those scans hold (one page per cursor).
 */
#include "parquet/pcache.h"
#include "base/fork.h"

#include "base/config.h"

#include "base/hash.h"
#include "base/mem.h"

#include <brotli/decode.h>
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <snappy-c.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ===================================================================== */
/* settings                                                               */
/* ===================================================================== */

/* Default budget: 1/16 of physical memory, within [64 MiB, 1 GiB]: enough
 * to hold the decompressed pages a selective workload keeps touching on a
 * table of a few hundred MB (bench/filter's 10M rows decompress to 339 MB,
 * and a random 0.1% of rows touches nearly all of them); an LRU smaller
 * than a cyclic working set hits nothing. */
static size_t default_budget(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    size_t b = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 16 : 0;
    if (b < ((size_t)64 << 20))
        b = (size_t)64 << 20;
    if (b > ((size_t)1 << 30))
        b = (size_t)1 << 30;
    return b;
}

/* The settings live in base/config (hs_config_set "page_cache_mb",
 * "parquet_max_page_mb", their environment variables read once).  The
 * byte-exact setters below override them until the setting changes again:
 * g_*_seen remembers the setting's value when the override was made. */
static size_t g_budget = SIZE_MAX;      /* atomic; SIZE_MAX: not resolved yet */
static int64_t g_budget_seen = INT64_MIN;
static size_t g_max_page = SIZE_MAX;
static int64_t g_max_page_seen = INT64_MIN;

size_t pq_page_cache_budget(void)
{
    int64_t mb = hs_cfg_get(HS_CFG_PAGE_CACHE_MB);
    if (__atomic_load_n(&g_budget_seen, __ATOMIC_ACQUIRE) != mb) {
        size_t b = mb < 0 ? default_budget() : (size_t)mb << 20;
        __atomic_store_n(&g_budget, b, __ATOMIC_RELAXED);
        __atomic_store_n(&g_budget_seen, mb, __ATOMIC_RELEASE);
        return b;
    }
    return __atomic_load_n(&g_budget, __ATOMIC_RELAXED);
}

size_t pq_max_page_bytes(void)
{
    int64_t mb = hs_cfg_get(HS_CFG_PARQUET_MAX_PAGE_MB);
    if (__atomic_load_n(&g_max_page_seen, __ATOMIC_ACQUIRE) != mb) {
        size_t b = (size_t)mb << 20;
        __atomic_store_n(&g_max_page, b, __ATOMIC_RELAXED);
        __atomic_store_n(&g_max_page_seen, mb, __ATOMIC_RELEASE);
        return b;
    }
    return __atomic_load_n(&g_max_page, __ATOMIC_RELAXED);
}

void pq_set_max_page_bytes(size_t bytes)
{
    int64_t mb = hs_cfg_get(HS_CFG_PARQUET_MAX_PAGE_MB);
    __atomic_store_n(&g_max_page, bytes ? bytes : (size_t)mb << 20, __ATOMIC_RELAXED);
    __atomic_store_n(&g_max_page_seen, mb, __ATOMIC_RELEASE);
}

/* ===================================================================== */
/* bounded decompression                                                  */
/* ===================================================================== */

static hs_status too_big(hs_error *err, size_t unc_len, size_t src_len, const char *codec,
                         unsigned long long bound, const char *how)
{
    return HS_CORRUPT_AT(err, "page claims %zu uncompressed bytes; %zu %s bytes %s %llu", unc_len,
                         src_len, codec, how, bound);
}

/* Brotli has no cheap bound on its output: the buffer grows with what the
 * stream produces, never past unc_len. */
static hs_status brotli_grow(const uint8_t *src, size_t src_len, size_t unc_len, hs_buf *dst,
                             hs_error *err)
{
    BrotliDecoderState *s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
    if (!s)
        return hs_err_nomem(err, sizeof(void *));
    size_t cap = src_len * 16 + ((size_t)64 << 10);
    if (cap > unc_len)
        cap = unc_len;
    size_t avail_in = src_len, done = 0;
    const uint8_t *in = src;
    hs_status st = HS_OK;
    for (;;) {
        if (hs_buf_reserve(dst, cap + 8) != HS_OK) {
            st = hs_err_nomem(err, cap);
            break;
        }
        size_t avail_out = cap - done;
        uint8_t *out = dst->data + done;
        BrotliDecoderResult r = BrotliDecoderDecompressStream(s, &avail_in, &in, &avail_out, &out,
                                                              NULL);
        done = cap - avail_out;
        if (r == BROTLI_DECODER_RESULT_SUCCESS) {
            if (done != unc_len || avail_in != 0)
                st = HS_CORRUPT_AT(err, "brotli: page decompresses to %zu bytes, its header "
                                   "claims %zu", done, unc_len);
            break;
        }
        if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) {
            if (cap >= unc_len) {
                st = HS_CORRUPT_AT(err, "brotli: page decompresses to more than the %zu bytes "
                                   "its header claims", unc_len);
                break;
            }
            cap = cap > unc_len / 4 ? unc_len : cap * 4;
            continue;
        }
        st = HS_CORRUPT_AT(err, "brotli: invalid or truncated data (%zu compressed bytes, "
                           "%zu decompressed so far)", src_len, done);
        break;
    }
    BrotliDecoderDestroyInstance(s);
    if (st == HS_OK)
        dst->len = unc_len;
    return st;
}

hs_status pq_page_decompress(hs_codec c, const uint8_t *src, size_t src_len, size_t unc_len,
                             hs_buf *dst, hs_error *err)
{
    size_t max = pq_max_page_bytes();
    if (unc_len > max)
        return HS_CORRUPT_AT(err, "page claims %zu uncompressed bytes, more than the largest "
                             "page allowed (%zu bytes, HS_PARQUET_MAX_PAGE_MB)", unc_len, max);
    switch (c) {
    case HS_CODEC_ZSTD: {
        unsigned long long n = ZSTD_findDecompressedSize(src, src_len);
        if (n == ZSTD_CONTENTSIZE_ERROR)
            return HS_CORRUPT_AT(err, "zstd: %zu bytes are not zstd frames", src_len);
        if (n != ZSTD_CONTENTSIZE_UNKNOWN) {
            if (n != unc_len)
                return too_big(err, unc_len, src_len, "zstd", n, "declare");
        } else {
            n = ZSTD_decompressBound(src, src_len);
            if (n == ZSTD_CONTENTSIZE_ERROR || unc_len > n)
                return too_big(err, unc_len, src_len, "zstd", n, "hold at most");
        }
        break;
    }
    case HS_CODEC_SNAPPY: {
        size_t n = 0;
        if (snappy_uncompressed_length((const char *)src, src_len, &n) != SNAPPY_OK)
            return HS_CORRUPT_AT(err, "snappy: %zu bytes have no valid length prefix", src_len);
        if (n != unc_len)
            return too_big(err, unc_len, src_len, "snappy", n, "declare");
        if ((unsigned long long)unc_len > (unsigned long long)src_len * 22 + 32)
            return too_big(err, unc_len, src_len, "snappy", (unsigned long long)src_len * 22 + 32,
                           "hold at most");
        break;
    }
    case HS_CODEC_LZ4_RAW:
    case HS_CODEC_LZ4_HADOOP:
        if ((unsigned long long)unc_len > (unsigned long long)src_len * 255 + 64)
            return too_big(err, unc_len, src_len, "lz4", (unsigned long long)src_len * 255 + 64,
                           "hold at most");
        break;
    case HS_CODEC_GZIP:
        if ((unsigned long long)unc_len > (unsigned long long)src_len * 1032 + 64)
            return too_big(err, unc_len, src_len, "gzip", (unsigned long long)src_len * 1032 + 64,
                           "hold at most");
        break;
    case HS_CODEC_BROTLI:
        hs_buf_reset(dst);
        return brotli_grow(src, src_len, unc_len, dst, err);
    default:
        break;   /* hs_decompress names the codec it cannot read */
    }
    hs_buf_reset(dst);
    if (hs_buf_reserve(dst, unc_len + 8) != HS_OK)
        return hs_err_nomem(err, unc_len);
    HS_TRY(hs_decompress(c, src, src_len, dst->data, unc_len, err));
    memset(dst->data + unc_len, 0, 8);
    dst->len = unc_len;
    return HS_OK;
}

/* ===================================================================== */
/* the cache                                                              */
/* ===================================================================== */

struct pq_pc_ref {
    pq_pc_key key;
    uint64_t hash;
    uint8_t *data;           /* len bytes + 8 of padding; owned */
    size_t len, cost;
    int refs;                /* under g_mu */
    bool cached;             /* in the table */
    pq_pc_ref *chain;        /* bucket chain */
    pq_pc_ref *newer, *older;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_mu, HS_FORK_RANK_LEAF)
static pq_pc_ref **g_buckets;
static size_t g_nb;          /* power of two, or 0 */
static size_t g_n, g_bytes;
static pq_pc_ref *g_newest, *g_oldest;
static uint64_t g_hits, g_misses, g_inserts, g_evictions;

static uint64_t key_hash(const pq_pc_key *k)
{
    uint64_t h[8] = { k->id.kind, k->id.dev, k->id.ino, (uint64_t)k->id.mtime_ns,
                      (uint64_t)k->id.ctime_ns, k->id.seq, k->size, k->off };
    uint64_t v = hs_xxh64(h, sizeof h, 0);
    if (k->id.kind == HS_FILE_ID_OBJECT)
        v = hs_xxh64(k->id.version, strnlen(k->id.version, sizeof k->id.version), v);
    return v;
}

static bool key_eq(const pq_pc_key *a, const pq_pc_key *b)
{
    return a->off == b->off && hs_file_id_equal(&a->id, a->size, &b->id, b->size);
}

static void ent_free(pq_pc_ref *r)
{
    hs_free(r->data);
    hs_free(r);
}

/* Takes r out of the table (lock held); unreferenced, it goes to *dead. */
static void drop(pq_pc_ref *r, pq_pc_ref **dead)
{
    pq_pc_ref **pp = &g_buckets[r->hash & (g_nb - 1)];
    while (*pp && *pp != r)
        pp = &(*pp)->chain;
    if (*pp)
        *pp = r->chain;
    if (r->newer)
        r->newer->older = r->older;
    else
        g_newest = r->older;
    if (r->older)
        r->older->newer = r->newer;
    else
        g_oldest = r->newer;
    r->newer = r->older = r->chain = NULL;
    g_n--;
    g_bytes -= r->cost;
    r->cached = false;
    if (r->refs == 0) {
        r->chain = *dead;
        *dead = r;
    }
}

static void free_dead(pq_pc_ref *d)
{
    while (d) {
        pq_pc_ref *next = d->chain;
        ent_free(d);
        d = next;
    }
}

/* Evicts from the oldest end until bytes fit `budget` (lock held). */
static void evict_to(size_t budget, pq_pc_ref **dead)
{
    while (g_oldest && g_bytes > budget) {
        drop(g_oldest, dead);
        g_evictions++;
    }
}

void pq_page_cache_set_budget(size_t bytes)
{
    pq_pc_ref *dead = NULL;
    int64_t mb = hs_cfg_get(HS_CFG_PAGE_CACHE_MB);
    pthread_mutex_lock(&g_mu);
    __atomic_store_n(&g_budget, bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&g_budget_seen, mb, __ATOMIC_RELEASE);
    evict_to(bytes, &dead);
    pthread_mutex_unlock(&g_mu);
    free_dead(dead);
}

static pq_pc_ref *find(const pq_pc_key *key, uint64_t h)
{
    if (!g_nb)
        return NULL;
    for (pq_pc_ref *r = g_buckets[h & (g_nb - 1)]; r; r = r->chain)
        if (r->hash == h && key_eq(&r->key, key))
            return r;
    return NULL;
}

static void to_front(pq_pc_ref *r)
{
    if (g_newest == r)
        return;
    /* unlink */
    if (r->newer)
        r->newer->older = r->older;
    if (r->older)
        r->older->newer = r->newer;
    else
        g_oldest = r->newer;
    /* push at the head */
    r->newer = NULL;
    r->older = g_newest;
    if (g_newest)
        g_newest->newer = r;
    g_newest = r;
    if (!g_oldest)
        g_oldest = r;
}

pq_pc_ref *pq_page_cache_get(const pq_pc_key *key)
{
    if (key->id.kind == HS_FILE_ID_NONE || pq_page_cache_budget() == 0)
        return NULL;
    uint64_t h = key_hash(key);
    pthread_mutex_lock(&g_mu);
    pq_pc_ref *r = find(key, h);
    if (r) {
        r->refs++;
        to_front(r);
        g_hits++;
    } else {
        g_misses++;
    }
    pthread_mutex_unlock(&g_mu);
    return r;
}

const uint8_t *pq_pc_data(const pq_pc_ref *r, size_t *len)
{
    *len = r->len;
    return r->data;
}

/* Doubles the bucket array when entries outnumber buckets twice (lock held);
 * stays as it is when out of memory. */
static void grow(void)
{
    if (g_nb && g_n <= 2 * g_nb)
        return;
    size_t nb = g_nb ? g_nb * 2 : 256;
    pq_pc_ref **b = hs_calloc(nb, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < g_nb; i++) {
        pq_pc_ref *r = g_buckets[i];
        while (r) {
            pq_pc_ref *next = r->chain;
            r->chain = b[r->hash & (nb - 1)];
            b[r->hash & (nb - 1)] = r;
            r = next;
        }
    }
    hs_free(g_buckets);
    g_buckets = b;
    g_nb = nb;
}

static _Thread_local bool tl_no_keep;   /* pq_page_cache_thread_keep(false) */

bool pq_page_cache_thread_keep(bool keep)
{
    bool before = !tl_no_keep;
    tl_no_keep = !keep;
    return before;
}

pq_pc_ref *pq_page_cache_put(const pq_pc_key *key, hs_buf *b)
{
    size_t budget = pq_page_cache_budget();
    size_t cost = b->cap + sizeof(pq_pc_ref);
    if (key->id.kind == HS_FILE_ID_NONE || budget == 0 || cost > budget / 8 || !b->data ||
        tl_no_keep)
        return NULL;
    pq_pc_ref *n = hs_calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->key = *key;
    n->hash = key_hash(key);
    n->len = b->len;
    n->cost = cost;
    n->refs = 1;
    pq_pc_ref *dead = NULL, *got;
    pthread_mutex_lock(&g_mu);
    grow();
    got = g_nb ? find(key, n->hash) : NULL;
    if (got) {
        got->refs++;
        to_front(got);
    } else if (g_nb) {
        n->data = b->data;
        memset(b, 0, sizeof *b);
        n->cached = true;
        n->chain = g_buckets[n->hash & (g_nb - 1)];
        g_buckets[n->hash & (g_nb - 1)] = n;
        n->older = g_newest;
        if (g_newest)
            g_newest->newer = n;
        g_newest = n;
        if (!g_oldest)
            g_oldest = n;
        g_n++;
        g_bytes += cost;
        g_inserts++;
        evict_to(budget, &dead);
        got = n;
        n = NULL;
    }
    pthread_mutex_unlock(&g_mu);
    hs_free(n);
    free_dead(dead);
    return got;
}

void pq_pc_release(pq_pc_ref *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&g_mu);
    bool last = --r->refs == 0 && !r->cached;
    pthread_mutex_unlock(&g_mu);
    if (last)
        ent_free(r);
}

void pq_page_cache_get_stats(pq_page_cache_stats *out)
{
    size_t budget = pq_page_cache_budget();
    pthread_mutex_lock(&g_mu);
    out->hits = g_hits;
    out->misses = g_misses;
    out->inserts = g_inserts;
    out->evictions = g_evictions;
    out->bytes = g_bytes;
    out->entries = g_n;
    out->budget = budget;
    pthread_mutex_unlock(&g_mu);
}

void pq_page_cache_clear(void)
{
    pq_pc_ref *dead = NULL;
    pthread_mutex_lock(&g_mu);
    while (g_oldest)
        drop(g_oldest, &dead);
    hs_free(g_buckets);
    g_buckets = NULL;
    g_nb = 0;
    g_hits = g_misses = g_inserts = g_evictions = 0;
    pthread_mutex_unlock(&g_mu);
    free_dead(dead);
}

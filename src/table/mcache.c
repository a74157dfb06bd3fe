/*
 * table/mcache.c - the decoded-manifest cache (see mcache.h).
 *
 * A hash table of entries under one mutex; decoding happens outside it (two
 * threads missing the same manifest both decode it, the second insert finds
 * the first and keeps that one).  Entries hold the ice_manifest and their
 * cost (the file size times a decode factor plus a per-entry estimate), and
 * are freed when evicted and no longer referenced.
 */
#include "table/mcache.h"

#include "base/hash.h"
#include "base/mem.h"
#include "table/table_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct tbl_mref {
    char *path;
    uint64_t hash;             /* of path */
    uint64_t dev, ino;
    int64_t size, mtime_ns;
    int64_t seq, min_seq, added_snap, first_row_id;
    int flags;                 /* 1: has added_snapshot_id, 2: has first_row_id */
    int32_t spec_id, schema_id;
    ice_manifest *man;
    size_t cost;
    int refs;
    bool cached;
    tbl_mref *chain;           /* bucket chain */
    tbl_mref *newer, *older;   /* recency list */
};

/* Buckets by path hash (grown to keep chains short) and a recency list
 * (newest at the head) for least-recently-used eviction: lookups and
 * evictions stay O(1) on tables of many thousands of manifests. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static tbl_mref **g_buckets;
static size_t g_nb;            /* power of two, or 0 */
static size_t g_n;
static size_t g_bytes;
static tbl_mref *g_newest, *g_oldest;

static size_t mc_limit(void)
{
    const char *e = getenv("HS_MANIFEST_CACHE_MB");
    long mb = e && *e ? atol(e) : 64;
    return mb <= 0 ? 0 : (size_t)mb << 20;
}

static void ent_free(tbl_mref *r)
{
    if (!r)
        return;
    ice_manifest_free(r->man);
    hs_free(r->path);
    hs_free(r);
}

/* lock held */
static void lru_unlink(tbl_mref *r)
{
    if (r->newer)
        r->newer->older = r->older;
    else
        g_newest = r->older;
    if (r->older)
        r->older->newer = r->newer;
    else
        g_oldest = r->newer;
    r->newer = r->older = NULL;
}

/* lock held */
static void lru_push(tbl_mref *r)
{
    r->older = g_newest;
    r->newer = NULL;
    if (g_newest)
        g_newest->newer = r;
    g_newest = r;
    if (!g_oldest)
        g_oldest = r;
}

/* Removes r from the table (lock held); frees it unless referenced. */
static void drop(tbl_mref *r)
{
    tbl_mref **pp = &g_buckets[r->hash & (g_nb - 1)];
    while (*pp && *pp != r)
        pp = &(*pp)->chain;
    if (*pp)
        *pp = r->chain;
    lru_unlink(r);
    g_n--;
    g_bytes -= r->cost;
    r->cached = false;
    if (r->refs == 0)
        ent_free(r);
}

/* lock held */
static void evict(size_t limit)
{
    tbl_mref *r = g_oldest;
    while (g_bytes > limit && r) {
        tbl_mref *next = r->newer;
        if (r->refs == 0)
            drop(r);
        r = next;
    }
}

/* lock held; false when out of memory (the table stays as it was) */
static bool grow(void)
{
    size_t nb = g_nb ? g_nb * 2 : 256;
    tbl_mref **b = hs_calloc(nb, sizeof *b);
    if (!b)
        return false;
    for (size_t i = 0; i < g_nb; i++) {
        tbl_mref *r = g_buckets[i];
        while (r) {
            tbl_mref *next = r->chain;
            r->chain = b[r->hash & (nb - 1)];
            b[r->hash & (nb - 1)] = r;
            r = next;
        }
    }
    hs_free(g_buckets);
    g_buckets = b;
    g_nb = nb;
    return true;
}

static bool same_key(const tbl_mref *a, const tbl_mref *b)
{
    return a->hash == b->hash && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->seq == b->seq && a->min_seq == b->min_seq &&
           a->added_snap == b->added_snap && a->first_row_id == b->first_row_id &&
           a->flags == b->flags && a->spec_id == b->spec_id && a->schema_id == b->schema_id &&
           strcmp(a->path, b->path) == 0;
}

/* lock held: the entry with r's key, or NULL */
static tbl_mref *find(const tbl_mref *key)
{
    if (!g_nb)
        return NULL;
    for (tbl_mref *r = g_buckets[key->hash & (g_nb - 1)]; r; r = r->chain)
        if (same_key(r, key))
            return r;
    return NULL;
}

hs_status tbl_mcache_get(const ice_manifest_file *mf, const ice_partition_spec *spec,
                         const ice_schema *schema, const ice_manifest **out, tbl_mref **ref,
                         hs_error *err)
{
    *out = NULL;
    *ref = NULL;
    const char *path = tbl_local(mf->manifest_path);
    struct stat sb;
    tbl_mref key = {0};
    size_t limit = mc_limit();
    bool have_stat = limit > 0 && stat(path, &sb) == 0;   /* 0 MB: no cache at all */
    if (have_stat) {
        key.path = (char *)path;
        key.hash = hs_xxh64(path, strlen(path), 0);
        key.dev = (uint64_t)sb.st_dev;
        key.ino = (uint64_t)sb.st_ino;
        key.size = (int64_t)sb.st_size;
        key.mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        key.seq = mf->sequence_number;
        key.min_seq = mf->min_sequence_number;
        key.added_snap = mf->has_added_snapshot_id ? mf->added_snapshot_id : 0;
        key.first_row_id = mf->has_first_row_id ? mf->first_row_id : 0;
        key.flags = (mf->has_added_snapshot_id ? 1 : 0) | (mf->has_first_row_id ? 2 : 0);
        key.spec_id = spec ? spec->spec_id : -1;
        key.schema_id = schema ? schema->schema_id : -1;
        pthread_mutex_lock(&g_mu);
        tbl_mref *r = find(&key);
        if (r) {
            r->refs++;
            lru_unlink(r);
            lru_push(r);
            pthread_mutex_unlock(&g_mu);
            *out = r->man;
            *ref = r;
            return HS_OK;
        }
        pthread_mutex_unlock(&g_mu);
    }
    /* decode (a missing file fails here with the reader's message) */
    hs_file *f = NULL;
    HS_TRY(hs_local_open(path, &f, err));
    ice_manifest *man = NULL;
    hs_status st = ice_manifest_read(f, mf, spec, schema, &man, err);
    hs_file_close(f);
    if (st != HS_OK)
        return st;
    tbl_mref *r = hs_calloc(1, sizeof *r);
    if (!r || !(r->path = hs_strdup(path))) {
        hs_free(r);
        ice_manifest_free(man);
        return hs_err_nomem(err, 256);
    }
    char *own_path = r->path;
    *r = key;
    r->path = own_path;
    r->man = man;
    r->refs = 1;
    r->cost = (size_t)(have_stat ? key.size : 0) * 4 + (size_t)man->n_entries * 512 + 1024;
    if (have_stat && r->cost <= limit) {
        pthread_mutex_lock(&g_mu);
        if (!find(r) && (g_n < g_nb * 2 || grow())) {
            r->chain = g_buckets[r->hash & (g_nb - 1)];
            g_buckets[r->hash & (g_nb - 1)] = r;
            lru_push(r);
            g_n++;
            g_bytes += r->cost;
            r->cached = true;
            evict(limit);
        }
        pthread_mutex_unlock(&g_mu);
    }
    *out = r->man;
    *ref = r;
    return HS_OK;
}

void tbl_mcache_release(tbl_mref *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&g_mu);
    bool free_it = --r->refs == 0 && !r->cached;
    pthread_mutex_unlock(&g_mu);
    if (free_it)
        ent_free(r);
}

void tbl_mcache_clear(void)
{
    pthread_mutex_lock(&g_mu);
    tbl_mref *r = g_oldest;
    while (r) {
        tbl_mref *next = r->newer;
        if (r->refs == 0)
            drop(r);
        r = next;
    }
    if (g_n == 0) {
        hs_free(g_buckets);
        g_buckets = NULL;
        g_nb = 0;
    }
    pthread_mutex_unlock(&g_mu);
}

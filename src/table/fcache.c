/*
 * table/fcache.c - caches of objects decoded from immutable files (see
 * fcache.h).
 *
 * Per cache: buckets by path hash (doubled when entries outnumber them twice)
 * and a recency list (newest at the head), so lookups and evictions stay
 * O(1) on tables of many thousands of files.  Entries leave the table when
 * evicted, cleared or found stale (the file changed); an entry out of the
 * table is freed at its last release.  Objects are freed outside the lock.
 */
#include "table/fcache.h"

#include "base/config.h"
#include "base/fork.h"
#include "base/hash.h"
#include "base/mem.h"
#include "io/io.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct tbl_fref {
    char *path;
    uint64_t hash;             /* of path */
    bool have_stat;
    uint64_t dev, ino;
    int64_t size, mtime_ns, ctime_ns;
    int n_key;
    int64_t key[TBL_FCACHE_KEYS];
    void *obj;
    size_t cost;
    int refs;
    bool cached;               /* in the table */
    tbl_fref *chain;           /* bucket chain; the free list once out of the table */
    tbl_fref *newer, *older;   /* recency list */
};

/* First use of c (any thread, any number of times): finds its setting and
 * registers its mutex for fork. */
static void first_use(tbl_fcache *c)
{
    if (__atomic_load_n(&c->setting, __ATOMIC_ACQUIRE) != 0)
        return;
    int k = hs_cfg_find(c->budget_env);
    hs_fork_guard(&c->mu, HS_FORK_RANK_FCACHE);
    __atomic_store_n(&c->setting, k < 0 ? -1 : k + 1, __ATOMIC_RELEASE);
}

/* Bytes the cache may hold now; an atomic load, safe under the lock. */
static size_t budget(const tbl_fcache *c)
{
    int s = __atomic_load_n(&c->setting, __ATOMIC_ACQUIRE);
    long long mb = s > 0 ? (long long)hs_cfg_get((hs_cfg_key)(s - 1))
                         : __atomic_load_n(&c->default_mb, __ATOMIC_RELAXED);
    return mb <= 0 ? 0 : (size_t)mb << 20;
}

void tbl_fcache_set_budget_mb(tbl_fcache *c, long mb)
{
    __atomic_store_n(&c->default_mb, mb, __ATOMIC_RELAXED);
}

static void ent_free(tbl_fcache *c, tbl_fref *r)
{
    if (r->obj)
        c->free_obj(r->obj);
    hs_free(r->path);
    hs_free(r);
}

static void free_list(tbl_fcache *c, tbl_fref *r)
{
    while (r) {
        tbl_fref *next = r->chain;
        ent_free(c, r);
        r = next;
    }
}

/* Takes r out of the table (lock held); unreferenced, it goes to *dead. */
static void drop(tbl_fcache *c, tbl_fref *r, tbl_fref **dead)
{
    tbl_fref **pp = &c->buckets[r->hash & (c->nb - 1)];
    while (*pp && *pp != r)
        pp = &(*pp)->chain;
    if (*pp)
        *pp = r->chain;
    if (r->newer)
        r->newer->older = r->older;
    else
        c->newest = r->older;
    if (r->older)
        r->older->newer = r->newer;
    else
        c->oldest = r->newer;
    r->newer = r->older = r->chain = NULL;
    c->n--;
    c->bytes -= r->cost;
    r->cached = false;
    if (r->refs == 0) {
        r->chain = *dead;
        *dead = r;
    }
}

/* lock held */
static void touch(tbl_fcache *c, tbl_fref *r)
{
    if (c->newest == r)
        return;
    r->newer->older = r->older;   /* r is not the newest: it has a newer one */
    if (r->older)
        r->older->newer = r->newer;
    else
        c->oldest = r->newer;
    r->older = c->newest;
    r->newer = NULL;
    c->newest->newer = r;
    c->newest = r;
}

/* lock held */
static void evict(tbl_fcache *c, size_t limit, tbl_fref **dead)
{
    tbl_fref *r = c->oldest;
    while (c->bytes > limit && r) {
        tbl_fref *next = r->newer;
        if (r->refs == 0)
            drop(c, r, dead);
        r = next;
    }
}

/* lock held; false when out of memory (the table stays as it was) */
static bool grow(tbl_fcache *c)
{
    size_t nb = c->nb ? c->nb * 2 : 256;
    tbl_fref **b = hs_calloc(nb, sizeof *b);
    if (!b)
        return false;
    for (size_t i = 0; i < c->nb; i++) {
        tbl_fref *r = c->buckets[i];
        while (r) {
            tbl_fref *next = r->chain;
            r->chain = b[r->hash & (nb - 1)];
            b[r->hash & (nb - 1)] = r;
            r = next;
        }
    }
    hs_free(c->buckets);
    c->buckets = b;
    c->nb = nb;
    return true;
}

static bool same_file(const tbl_fref *a, const tbl_fref *b)
{
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static bool same_key(const tbl_fref *a, const tbl_fref *b)
{
    return a->n_key == b->n_key &&
           memcmp(a->key, b->key, (size_t)a->n_key * sizeof a->key[0]) == 0;
}

/* The live entry for k's path, identity and key (lock held); entries of the
 * path whose file changed are dropped on the way. */
static tbl_fref *find(tbl_fcache *c, const tbl_fref *k, tbl_fref **dead)
{
    if (!c->nb)
        return NULL;
    tbl_fref *r = c->buckets[k->hash & (c->nb - 1)], *hit = NULL;
    while (r) {
        tbl_fref *next = r->chain;
        if (r->hash == k->hash && strcmp(r->path, k->path) == 0) {
            if (!same_file(r, k))
                drop(c, r, dead);
            else if (!hit && same_key(r, k))
                hit = r;
        }
        r = next;
    }
    return hit;
}

hs_status tbl_fcache_get(tbl_fcache *c, const char *path, const int64_t *key, int n_key,
                         tbl_fcache_load load, void *ctx, void **obj, tbl_fref **ref,
                         hs_error *err)
{
    *obj = NULL;
    *ref = NULL;
    if (n_key < 0 || n_key > TBL_FCACHE_KEYS)
        return hs_err_set(err, HS_INTERNAL, "file cache: %d key words", n_key);
    tbl_fref *r = hs_calloc(1, sizeof *r);
    if (!r || !(r->path = hs_strdup(path))) {
        hs_free(r);
        return hs_err_nomem(err, 256);
    }
    r->hash = hs_xxh64(path, strlen(path), 0);
    r->n_key = n_key;
    if (n_key)
        memcpy(r->key, key, (size_t)n_key * sizeof *key);
    r->size = -1;
    first_use(c);
    size_t limit = budget(c);
    struct stat sb;
    if (hs_io_is_object_uri(path)) {
        /* object stores: name, size and ETag, from io/s3.c's HEAD cache (no
         * request per lookup while it trusts the entry; else the open whose
         * tail GET the loader then reads from the byte cache), so an object
         * replaced under its name is loaded again, as a rewritten local file is */
        uint64_t osz = 0;
        char ver[72] = "";
        if ((r->have_stat = hs_io_object_identity(path, &osz, ver, NULL) == HS_OK)) {
            r->size = (int64_t)osz;
            r->ino = hs_xxh64(ver, strlen(ver), 0);
        }
    } else if ((r->have_stat = stat(path, &sb) == 0)) {
        r->dev = (uint64_t)sb.st_dev;
        r->ino = (uint64_t)sb.st_ino;
        r->size = (int64_t)sb.st_size;
        r->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
        r->ctime_ns = (int64_t)sb.st_ctim.tv_sec * 1000000000 + sb.st_ctim.tv_nsec;
    }
    tbl_fref *dead = NULL;
    if (r->have_stat && limit > 0) {
        pthread_mutex_lock(&c->mu);
        tbl_fref *hit = find(c, r, &dead);
        if (hit) {
            hit->refs++;
            touch(c, hit);
        }
        pthread_mutex_unlock(&c->mu);
        free_list(c, dead);
        dead = NULL;
        if (hit) {
            ent_free(c, r);
            *obj = hit->obj;
            *ref = hit;
            return HS_OK;
        }
    }
    void *o = NULL;
    size_t cost = 0;
    hs_status st = load(ctx, path, r, &o, &cost, err);
    if (st != HS_OK || !o) {
        ent_free(c, r);
        return st;
    }
    r->obj = o;
    r->cost = cost;
    r->refs = 1;
    if (r->have_stat && limit > 0 && cost <= limit) {
        pthread_mutex_lock(&c->mu);
        tbl_fref *twin = find(c, r, &dead);
        if (twin) {   /* another thread loaded it meanwhile: share that one */
            twin->refs++;
            touch(c, twin);
            r->chain = dead;
            dead = r;
            r = twin;
        } else if (c->n < c->nb * 2 || grow(c)) {
            r->chain = c->buckets[r->hash & (c->nb - 1)];
            c->buckets[r->hash & (c->nb - 1)] = r;
            r->older = c->newest;
            if (c->newest)
                c->newest->newer = r;
            c->newest = r;
            if (!c->oldest)
                c->oldest = r;
            c->n++;
            c->bytes += cost;
            r->cached = true;
            evict(c, limit, &dead);
        }
        pthread_mutex_unlock(&c->mu);
        free_list(c, dead);
    }
    *obj = r->obj;
    *ref = r;
    return HS_OK;
}

int64_t tbl_fref_file_size(const tbl_fref *ref) { return ref->size; }

void tbl_fcache_release(tbl_fcache *c, tbl_fref *r)
{
    if (!r)
        return;
    tbl_fref *dead = NULL;
    pthread_mutex_lock(&c->mu);
    if (--r->refs == 0 && !r->cached) {
        dead = r;
    } else if (r->cached && c->bytes > budget(c)) {
        evict(c, budget(c), &dead);   /* what referenced entries kept over the budget */
    }
    pthread_mutex_unlock(&c->mu);
    free_list(c, dead);
}

void tbl_fcache_clear(tbl_fcache *c)
{
    tbl_fref *dead = NULL;
    pthread_mutex_lock(&c->mu);
    evict(c, 0, &dead);
    if (c->n == 0) {
        hs_free(c->buckets);
        c->buckets = NULL;
        c->nb = 0;
    }
    pthread_mutex_unlock(&c->mu);
    free_list(c, dead);
}

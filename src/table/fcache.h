/*
 * table/fcache.h - process-wide caches of objects decoded from immutable
 * files: Iceberg manifests (table/mcache.c), scalar index sidecars and
 * registry versions (table/index_scan.c), vector index images (table/vindex.c).
 *
 * Such files are never rewritten in place, so a warm process decodes each
 * once.  An entry is found by the file's path (hashed) and a few key words
 * the caller gives (what the object was decoded for: a value kind, sequence
 * numbers, ...), and is handed out only while the file's identity (device,
 * inode, size, modification and change times, from stat) is the one it was
 * loaded from: a file replaced or damaged in place is loaded again and its
 * old entry dropped once unreferenced.  Entries are shared read-only,
 * reference-counted while in use, and evicted least recently used when the
 * cache's bytes exceed its budget (in MiB; 0 = no caching: every get loads
 * a private copy): the process-wide setting whose environment variable is
 * budget_env (hyperstream/config.h: "HS_MANIFEST_CACHE_MB" is setting
 * manifest_cache_mb), read at every get and release (an atomic load), so
 * hs_config_set takes effect at once; a cache whose budget_env names no
 * setting (tests) has default_mb, changed by tbl_fcache_set_budget_mb.
 * Each cache's mutex is registered with base/fork.c at first use, so a
 * forked child finds it unlocked and the cache consistent.  Loading
 * happens outside the lock; two threads missing the same file both load it
 * and the second copy is dropped.
 *
 * Each cache is one static tbl_fcache, initialised with TBL_FCACHE_INIT.
 */
#ifndef HS_TABLE_FCACHE_H
#define HS_TABLE_FCACHE_H

#include "base/error.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define TBL_FCACHE_KEYS 6

typedef struct tbl_fref tbl_fref;

typedef struct tbl_fcache {
    const char *budget_env;            /* e.g. "HS_INDEX_CACHE_MB" */
    long default_mb;                   /* when budget_env names no setting */
    void (*free_obj)(void *obj);
    /* private */
    pthread_mutex_t mu;
    tbl_fref **buckets;
    size_t nb, n, bytes;
    tbl_fref *newest, *oldest;
    int setting;                       /* hs_cfg_key + 1; -1: none; 0: not looked up */
} tbl_fcache;

#define TBL_FCACHE_INIT(env, mb, free_fn) \
    { (env), (mb), (free_fn), PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0, NULL, NULL }

/* Decodes the file at `path` for `ctx`: HS_OK with *obj set and *cost its
 * bytes; HS_OK with *obj NULL when the file is unusable (the caller's ctx
 * says why; nothing is cached); another status fails the get.  `ref` is the
 * entry being made (for objects that keep a pointer back to it). */
typedef hs_status (*tbl_fcache_load)(void *ctx, const char *path, tbl_fref *ref, void **obj,
                                     size_t *cost, hs_error *err);

/* The object of local file `path` decoded for key[0..n_key) (n_key <=
 * TBL_FCACHE_KEYS), loaded when needed; *ref is to release with
 * tbl_fcache_release (both NULL when the loader found the file unusable).
 * A file that cannot be stat'ed is loaded uncached (the loader reports). */
HS_MUST_USE hs_status tbl_fcache_get(tbl_fcache *c, const char *path, const int64_t *key,
                                     int n_key, tbl_fcache_load load, void *ctx, void **obj,
                                     tbl_fref **ref, hs_error *err);
/* The size of the file the entry was loaded from (-1 when not stat'ed). */
int64_t tbl_fref_file_size(const tbl_fref *ref);
void tbl_fcache_release(tbl_fcache *c, tbl_fref *ref);   /* accepts NULL */
/* The budget of a cache whose budget_env names no setting (tests). */
void tbl_fcache_set_budget_mb(tbl_fcache *c, long mb);
/* Drops every unreferenced entry (tests balancing allocations). */
void tbl_fcache_clear(tbl_fcache *c);

#endif

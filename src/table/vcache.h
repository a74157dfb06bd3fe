/*
 * table/vcache.h - the process-wide cache of clustered vector sections on
 * object stores, and their background fetch (table/vcache.c).
 *
 * After a clustered search (table/search.c) has read one block per data
 * file, the whole section of each sidecar (from its first block to its end)
 * is fetched in the background, once no query runs (tbl_plan_wait_idle),
 * so that a search of another value reads nothing.  A section is fetched as
 * runs of the same number of whole blocks ("chunks", about a sixteenth of
 * the section, within TBL_VCACHE_CHUNK_MIN..MAX bytes unless one block is
 * larger) by up to TBL_VCACHE_THREADS ranged GETs in parallel, shared by all
 * sections waiting: not one long GET per sidecar.  Chunk k of every section
 * goes before chunk k + 1 of any, so files holding the same values have
 * each value's blocks in at about the same time (a value is then warm in
 * all files, not file after file).  A chunk is usable as soon as it has
 * arrived.  A search that needs a block
 * copies it from its chunk when that has arrived, and otherwise reads the
 * block itself (not waiting for a chunk in flight: measured on a loaded
 * machine, a block's own GET among the chunk GETs in flight came sooner
 * than the whole chunk; docs/storage.md).
 *
 * Bound: at most HS_CLUSTER_CACHE_MB (config key cluster_cache_mb, default
 * 512; 0 = no cache and no background fetch) of section bytes, reserved
 * when a section's fetch starts; the least recently used sections that are
 * not being fetched or read are dropped for a new one, and a section larger
 * than the bound is never fetched.  Entries key on (path, size): sidecars
 * are immutable.  Memory beyond the bound: the chunk table (24 bytes a
 * chunk, at most a few hundred per section) and the paths.
 */
#ifndef HS_TABLE_VCACHE_H
#define HS_TABLE_VCACHE_H

#include "table/vcluster.h"

#include <stdbool.h>
#include <stdint.h>

#define TBL_VCACHE_THREADS 8   /* parallel GETs, process-wide (16: the same throughput
                                  on bench/s3, twice the bytes ahead of a query's GETs) */
#define TBL_VCACHE_CHUNK_MIN ((uint64_t)256 << 10)
#define TBL_VCACHE_CHUNK_MAX ((uint64_t)2 << 20)
#define TBL_VCACHE_SLOTS 256                   /* sections held at most */

/* Copies [off, off + len) of the sidecar (uri, size) into dst when the
 * cache holds it (the chunks holding it have arrived): true.  False when it
 * does not: the caller reads the range itself. */
bool tbl_vcache_read(const char *uri, uint64_t size, uint64_t off, uint64_t len, uint8_t *dst);

/* Starts the background fetch of the sidecar's section (the blocks of the
 * directory, from the first to the sidecar's end) unless it is held or
 * being fetched, or the cache is off. */
void tbl_vcache_warm(const char *uri, uint64_t size, const tbl_vcdir *dir);

typedef struct tbl_vcache_stats {
    uint64_t bytes;           /* reserved by the sections held now */
    uint64_t sections;        /* held now (fetched or being fetched) */
    uint64_t chunks_fetched;  /* chunk GETs that succeeded, since start */
    uint64_t chunks_failed;
    uint64_t hits;            /* reads served (tbl_vcache_read true) */
    uint64_t misses;
    uint64_t evicted;         /* sections dropped for room */
    uint64_t last_fetch_ms;   /* the last section fetch: first chunk start to last end */
} tbl_vcache_stats;

void tbl_vcache_get_stats(tbl_vcache_stats *out);

#endif

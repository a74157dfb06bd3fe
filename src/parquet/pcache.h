/*
 * parquet/pcache.h - decompressed pages: what one page may allocate, and the
 * process-wide cache of decompressed pages that selective reads share.
 * Internal to parquet/ (the settings are plain C functions so that a public
 * settings API can wrap them).
 *
 * Settings (read once from the environment, then only through the setters):
 *
 *   setting                  environment                default   setter
 *   page cache budget        HS_PAGE_CACHE_MB           1/16 of   pq_page_cache_set_budget
 *                                                       RAM, 64 MiB..1 GiB
 *   largest page             HS_PARQUET_MAX_PAGE_MB     1024      pq_set_max_page_bytes
 *
 * A budget of 0 turns the cache off; the setter evicts at once down to the
 * new budget.
 */
#ifndef HS_PARQUET_PCACHE_H
#define HS_PARQUET_PCACHE_H

#include "base/buf.h"
#include "base/compress.h"
#include "base/error.h"
#include "io/io.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- settings ---- */
size_t pq_page_cache_budget(void);
void pq_page_cache_set_budget(size_t bytes);
size_t pq_max_page_bytes(void);
void pq_set_max_page_bytes(size_t bytes);   /* 0 restores the default */

/* ---- bounded decompression ----
 * Decompresses src[0..src_len) (codec c, not NONE), which its page header
 * says holds unc_len bytes, into dst (resized to unc_len; 8 bytes of zero
 * padding follow).  Before reserving anything, unc_len is checked against
 * the largest-page setting and against what src_len can hold in codec c:
 *
 *   codec        bound on unc_len before any allocation
 *   zstd         the frames' declared content sizes (exact), else
 *                ZSTD_decompressBound (blocks x 128 KiB)
 *   snappy       the declared length (exact), at most 22 x src_len + 32
 *   lz4          255 x src_len + 64 (LZ4's largest ratio)
 *   gzip         1032 x src_len + 64 (deflate's largest ratio)
 *   brotli       none cheap: the output buffer grows with what the stream
 *                really produces (x4 steps from 16 x src_len + 64 KiB)
 *
 * A claim past the bound is HS_CORRUPT ("page claims 1073741823 uncompressed
 * bytes; 96 zstd bytes declare 4096"). */
HS_MUST_USE hs_status pq_page_decompress(hs_codec c, const uint8_t *src, size_t src_len,
                                         size_t unc_len, hs_buf *dst, hs_error *err);

/* ---- the cache of decompressed pages ----
 * Entries are the decompressed bytes of one page section, keyed by the
 * file's identity (hs_file_id and size: a file rewritten or replaced never
 * hits) and the file offset of the page; LRU within the budget, refcounted
 * so a reader keeps the bytes it decodes from after eviction.  Thread-safe:
 * one mutex around a hash table and the recency list; decompression happens
 * outside it (two threads missing the same page both decompress, the second
 * insert returns the first's entry). */
typedef struct pq_pc_ref pq_pc_ref;

typedef struct pq_pc_key {
    hs_file_id id;
    uint64_t size;
    uint64_t off;         /* file offset of the page header */
} pq_pc_key;

/* The cached bytes of key (and *len), holding a reference, or NULL. */
pq_pc_ref *pq_page_cache_get(const pq_pc_key *key);
const uint8_t *pq_pc_data(const pq_pc_ref *r, size_t *len);
/* Inserts the bytes in *b (their storage moves into the cache; b is left
 * empty) and returns a reference to the entry for key (the one another
 * thread inserted meanwhile, if any), or NULL when the cache is off, the
 * page is larger than an eighth of the budget or memory is short (b then
 * keeps its bytes). */
pq_pc_ref *pq_page_cache_put(const pq_pc_key *key, hs_buf *b);
void pq_pc_release(pq_pc_ref *r);   /* accepts NULL */
/* Whether this thread's reads leave the pages they decompress in the cache
 * (default yes); returns the setting before.  A rewrite (compaction) reads
 * each page of files it is about to remove once: kept, its pages would only
 * evict hot ones and hold up to the budget (a read with a selection, deletes
 * applied, goes page by page: table/maint_compact.c). */
bool pq_page_cache_thread_keep(bool keep);

typedef struct pq_page_cache_stats {
    uint64_t hits, misses, inserts, evictions;
    size_t bytes, entries, budget;
} pq_page_cache_stats;
void pq_page_cache_get_stats(pq_page_cache_stats *out);
/* Drops every entry not in use (tests; memory pressure); counters reset. */
void pq_page_cache_clear(void);

#endif

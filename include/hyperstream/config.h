/*
 * hyperstream/config.h - process-wide settings and the warning callback.
 *
 * Settings.  Each setting has a key, an environment variable and a built-in
 * default.  The environment is read once, at the first use of any setting
 * (or the first hs_config_* call), and never again: changing the variable
 * later has no effect; hs_config_set does.  A set value takes effect for
 * work started after the call (a scan already running keeps its thread
 * count; a cache shrinks to a lower budget as its entries are released).
 * Keys are matched case-insensitively and may also be given as the
 * variable's name ("HS_MANIFEST_CACHE_MB").
 *
 *   key                env variable           default  meaning
 *   -----------------  ---------------------  -------  --------------------------------
 *   manifest_cache_mb  HS_MANIFEST_CACHE_MB   64       decoded Iceberg manifests, MiB
 *   index_cache_mb     HS_INDEX_CACHE_MB      256      scalar index sidecars and
 *                                                      registries, MiB
 *   vindex_cache_mb    HS_VINDEX_CACHE_MB     1024     vector index images, MiB
 *   dict_cache_mb      HS_DICT_CACHE_MB       128      decoded Parquet dictionaries, MiB
 *   page_cache_mb      HS_PAGE_CACHE_MB       -1       decompressed Parquet pages of
 *                                                      selective reads, MiB; -1 = 1/16
 *                                                      of RAM within 64 MiB..1 GiB
 *   parquet_max_page_mb                                1024     largest page a read may
 *                      HS_PARQUET_MAX_PAGE_MB                  decompress, MiB
 *   decode_limit_mb    HS_DECODE_LIMIT_MB     64       what one decode of untrusted
 *                                                      bytes (Avro, sidecars, images,
 *                                                      metadata) may allocate: this
 *   decode_limit_per_byte                      128      + this many bytes per input
 *                      HS_DECODE_LIMIT_PER_BYTE                byte; past it HS_CORRUPT
 *   mmap               HS_MMAP                1        1: map local files; 0: read them
 *   scan_threads       HS_SCAN_THREADS        0        threads of one scan, 1..64;
 *                                                      0 = the cores, at most 8
 *   search_threads     HS_SEARCH_THREADS      0        threads of one vector search,
 *                                                      1..64; 0 = the cores, at most 8
 *   warm_files         HS_WARM_FILES          64       object stores: a snapshot of at
 *                                                      most this many data files gets,
 *                                                      once the process is idle after a
 *                                                      selective query, the manifests it
 *                                                      skipped and the other files'
 *                                                      footers and filter sidecars
 *                                                      fetched, for the next query; 0 = off
 *   warm_pages_mb      HS_WARM_PAGES_MB       32       object stores: the pages of the
 *                                                      projected columns (not a vector
 *                                                      search's vector) of those files
 *                                                      read ahead too, at most this much
 *                                                      per query; 0 = off
 *   eq_delete_mb       HS_EQ_DELETE_MB        256      the equality-delete key sets one
 *                                                      scan keeps (>= 1); a bigger set
 *                                                      is applied in chunks of this size
 *                                                      (bounded memory, more reads);
 *                                                      also the cache of the positions
 *                                                      they delete, per data file
 *   filter_cache       HS_FILTER_CACHE        1        1: keep the last 64 bound filter
 *                                                      texts process-wide; 0: parse and
 *                                                      bind every filter again
 *   search_filter_cache                        1        1: a table handle keeps its last
 *                      HS_SEARCH_FILTER_CACHE                  filtered search's plan and
 *                                                      allowed rows; 0: off
 *   cluster_cache_mb   HS_CLUSTER_CACHE_MB    512      object stores: the clustered vector
 *                                                      sections fetched in the background
 *                                                      after a clustered search, so that
 *                                                      the next value's search reads
 *                                                      nothing, MiB; 0 = off
 *   buffer_pool_mb     HS_BUFFER_POOL_MB      -1       freed column buffers of 256 KiB
 *                                                      - 64 MiB kept for the next scan
 *                                                      (no page faults), MiB; each is
 *                                                      freed after 5 s unused; -1 = 1/16
 *                                                      of RAM within 64 MiB..1 GiB; 0 = off
 *
 * Text settings (hs_config_set / hs_config_get_str; "" = unset; at most
 * HS_CONFIG_STR_MAX - 1 bytes):
 *
 *   s3_lock_dir        HS_S3_LOCK_DIR         ""       object stores without conditional
 *                                                      writes: directory of the commit
 *                                                      lock files shared by every writer
 *                                                      (docs/storage.md); "" = no lock
 *
 * Cache budgets are >= 0 (0 = no caching); values outside a setting's range
 * are HS_INVALID.  Switches (mmap, filter_cache, search_filter_cache) also
 * take true/false/on/off/yes/no; in the environment any value but "0" is
 * on.  Another environment value that does not parse is reported
 * through the warning handler and the default used.  All functions here are
 * thread-safe.
 *
 * Warnings.  Conditions that do not fail a call but that a user should
 * hear of (an unreadable index registry, a corrupt sidecar that a query
 * skipped) are passed to the warning handler as one line of text without a
 * trailing newline.  There is none by default: warnings are then dropped,
 * since the library never writes to stdout or stderr itself (the
 * hyperstream CLI installs one that prints "hyperstream: warning: " + the
 * message to stderr; the Python package issues HyperStreamWarning).  Install
 * it before the first call of the library to also hear of environment
 * values that do not parse.  The handler may be called from any
 * thread the library runs, concurrently; it must not call back into the
 * library.
 */
#ifndef HYPERSTREAM_CONFIG_H
#define HYPERSTREAM_CONFIG_H

#include "hyperstream/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest text setting, with its NUL. */
#define HS_CONFIG_STR_MAX 4096

/* Sets `key` from text: for an integer setting a decimal integer (switches
 * also take true/false/on/off), for a text setting the text itself.  value
 * NULL restores the value the process started with (the environment's, else
 * the default).  HS_NOT_FOUND for an unknown key, HS_INVALID for a value out
 * of range, not a number, or text of HS_CONFIG_STR_MAX bytes or more. */
HS_API hs_status hs_config_set(const char *key, const char *value, hs_error *err);
/* Integer settings only (HS_INVALID for a text setting). */
HS_API hs_status hs_config_set_int(const char *key, int64_t value, hs_error *err);
/* The current value of integer setting `key` (HS_NOT_FOUND for an unknown
 * key, HS_INVALID for a text setting). */
HS_API hs_status hs_config_get_int(const char *key, int64_t *out, hs_error *err);
/* The current value of any setting as text into buf (n bytes; an integer
 * in decimal; a text setting that is unset gives "").  HS_INVALID, with buf
 * set to "", when the value and its NUL do not fit in n bytes (a buffer of
 * HS_CONFIG_STR_MAX bytes always fits). */
HS_API hs_status hs_config_get_str(const char *key, char *buf, size_t n, hs_error *err);
/* 1 when `key` is a text setting, 0 when it is an integer one, -1 when
 * there is no such key. */
HS_API int hs_config_is_str(const char *key);
/* The i-th key (0 <= i < count; NULL past the end), for listing settings:
 * the integer settings, then the text ones. */
HS_API const char *hs_config_key(int i);

/* Receives one warning (see top).  user is the pointer given to
 * hs_set_warning_handler. */
typedef void (*hs_warning_fn)(void *user, const char *msg);
/* Installs fn (NULL = none: warnings are dropped); the previous handler
 * is no longer called once this returns. */
HS_API void hs_set_warning_handler(hs_warning_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif

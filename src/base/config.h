/*
 * base/config.h - the process-wide settings of hyperstream/config.h as the
 * library reads them, and warnings.
 *
 * hs_cfg_get is an atomic load (after a pthread_once that reads the
 * environment the first time): cheap enough for any path, and safe under
 * any lock.  hs_warn formats one line and passes it to the handler set by
 * hs_set_warning_handler (none by default: then it is dropped; the library
 * never writes to stdout or stderr).
 */
#ifndef HS_BASE_CONFIG_H
#define HS_BASE_CONFIG_H

#include "base/error.h"
#include "hyperstream/config.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum hs_cfg_key {
    HS_CFG_MANIFEST_CACHE_MB,
    HS_CFG_INDEX_CACHE_MB,
    HS_CFG_VINDEX_CACHE_MB,
    HS_CFG_DICT_CACHE_MB,
    HS_CFG_MMAP,
    HS_CFG_SCAN_THREADS,
    HS_CFG_SEARCH_THREADS,
    HS_CFG_PAGE_CACHE_MB,
    HS_CFG_PARQUET_MAX_PAGE_MB,
    HS_CFG_DECODE_LIMIT_MB,
    HS_CFG_DECODE_LIMIT_PER_BYTE,
    HS_CFG_WARM_FILES,
    HS_CFG_WARM_PAGES_MB,
    HS_CFG_EQ_DELETE_MB,
    HS_CFG_FILTER_CACHE,
    HS_CFG_SEARCH_FILTER_CACHE,
    HS_CFG_CLUSTER_CACHE_MB,
    HS_CFG_BUFFER_POOL_MB,
    HS_CFG_N
} hs_cfg_key;

/* Text settings (keys listed after the integer ones). */
typedef enum hs_cfg_str_key {
    HS_CFGS_S3_LOCK_DIR,   /* io/s3 commit locks without conditional writes; "" = none */
    HS_CFGS_N
} hs_cfg_str_key;

int64_t hs_cfg_get(hs_cfg_key k);
/* Copies text setting k into buf (n >= 1; HS_CONFIG_STR_MAX bytes always
 * fit; a smaller buf gets a truncated, NUL-terminated value).  Returns false when
 * the setting is empty.  Takes a leaf mutex: safe under any lock. */
bool hs_cfg_get_str(hs_cfg_str_key k, char *buf, size_t n);
/* The integer key named `name` (key or environment variable name, any
 * case); -1 when there is none (text keys included). */
int hs_cfg_find(const char *name);

void hs_warn(const char *fmt, ...) HS_PRINTF(1, 2);

#endif

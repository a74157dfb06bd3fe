/*
 * io/s3_int.h - what the files of the S3 backend share (internal to io/s3*.c;
 * other modules use io.h, or s3.h for the S3-specific entry points).
 *
 *   file          owns
 *   ------------  -------------------------------------------------------------
 *   s3.c          objects: open (tail GET), ranged reads through the byte cache,
 *                 whole-object reads, stat, delete, PUT / multipart / conditional
 *                 writes, ListObjectsV2 listings
 *   s3_http.c     one signed request with retries (s3_do), the configuration
 *                 snapshot (s3_cfg_now), the connection pool, URIs and URLs
 *   s3_creds.c    configuration and credentials from the environment, the AWS
 *                 shared files and the credential providers (s3_load_config_locked)
 *   s3_cache.c    the byte cache, the HEAD cache, opens in flight, prefetch,
 *                 counters and hs_s3_reset
 *   s3_xml.c      decoders of untrusted bytes: S3's XML answers, INI files
 *   s3_scope.c    settings for a part of the namespace that a catalog vended
 *                 (hs_s3_set_scope), laid over the configuration per request
 *   s3_sign.c     remote signing (Iceberg's S3 signer API): the client's
 *                 requests to a catalog's signer with their cache, and the
 *                 server's SigV4 signing of such requests
 *
 * Locking: one mutex, g_s3_lock, guards the configuration, the pool, both
 * caches, the in-flight table and the counters; it is never held across a
 * request except while the configuration is (re)loaded.
 */
#ifndef HS_IO_S3_INT_H
#define HS_IO_S3_INT_H

#include "io/s3.h"
#include "base/buf.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define S3_BLOCK ((uint64_t)64 << 10)
#define S3_CACHE_MAX_READ ((size_t)1 << 20)
/* A small read that misses fetches at least this much (aligned, within the
 * object): the next small reads near it (the other columns' pages of a row
 * group, the rest of a sidecar) then cost no round trip. */
#define S3_READAHEAD ((uint64_t)256 << 10)
/* hs_file_will_need coalesces ranges whose gap is at most this: a GET
 * costs a first-byte latency (20-50 ms on S3), the bytes between cost
 * ~10 ms a MiB at 100 MB/s, so a gap below latency x bandwidth is cheaper
 * read than asked for again (Arrow's CacheOptions::MakeFromNetworkMetrics
 * sizes its hole limit the same way).  A point lookup's pages of three
 * columns in a row group of 125,000 rows lie up to 0.9 MB apart (the id,
 * category and value chunks: 129 KB, 110 KB, 940 KB): one GET, not two. */
#define S3_COALESCE_GAP ((uint64_t)1 << 20)
/* ... into runs of at most this: ranges of one wave that S3_COALESCE_GAP
 * joins cost one GET even when together they exceed S3_CACHE_MAX_READ (a
 * point lookup's pages of three columns spread over 1.2 MB of a row group
 * of 125,000 rows: one request, not two).  The run is cached in pieces of
 * at most S3_CACHE_MAX_READ on block boundaries, like reads of that size. */
#define S3_NEED_MAX_READ ((uint64_t)4 << 20)
#define S3_MIN_PART ((size_t)5 << 20)
#define S3_MAX_PARTS 10000

/* ---- configuration (s3_creds.c loads it, s3_http.c holds it) ---- */

typedef struct s3_config {
    char region[64];
    char endpoint[512];       /* scheme://host[:port][/path], no trailing '/' */
    bool path_style;
    bool custom_endpoint;
    bool sign;
    bool remote_sign;         /* a scope's s3.remote-signing-enabled: the catalog signs */
    char access_key[256];
    char secret_key[256];
    char *session_token;      /* owned or NULL */
    int max_attempts;
    long connect_timeout_ms;
    long low_speed_s;         /* a transfer slower than 1 B/s for this long fails */
    size_t part_size;
    uint64_t cache_budget;
    bool conditional_writes;
    bool verbose;
    int64_t head_ttl_s;
    int64_t creds_expire;     /* temporary credentials: epoch seconds, 0 = never */
    int64_t creds_refresh_at; /* reload the configuration after this (epoch s; 0 = never) */
    char creds_note[256];     /* why a configured credential provider gave no keys */
} s3_config;

extern pthread_mutex_t g_s3_lock;  /* config, pool, caches, counters */
extern bool g_s3_loaded;           /* g_s3_cfg holds a loaded configuration */
extern s3_config g_s3_cfg;
extern hs_s3_stats g_s3_stats;

/* Fills g_s3_cfg from the environment and the credential providers; g_s3_lock
 * held. */
void s3_load_config_locked(void);
/* A copy of the settings (loaded on first use) without the session token. */
s3_config s3_cfg_now(void);

/* What a request learnt of its scope's credential refresher (s3_scope.c). */
typedef struct s3_scope_ticket {
    hs_io_refresher *refresher;   /* a reference (s3_scope_ticket_done drops it) or NULL */
    uint64_t gen;                 /* its generation when the settings were taken */
    bool due;                     /* the keys expire within the refresh margin */
    bool refreshed;               /* s3_scope_refresh ran the callback for this ticket */
} s3_scope_ticket;

/* Lays the scope of bucket/key (s3_scope.c), if any, over *cfg (a copy
 * taken by s3_http.c: its session_token is owned and may be replaced), and
 * fills *t (may be NULL).  Takes g_s3_lock. */
void s3_scope_apply(const char *bucket, const char *key, s3_config *cfg, s3_scope_ticket *t);
/* Runs t's refresher unless another thread refreshed since t was taken (then
 * the new settings are already in place); the caller applies the scope
 * again.  Never call with g_s3_lock held. */
HS_MUST_USE hs_status s3_scope_refresh(s3_scope_ticket *t, hs_error *err);
void s3_scope_ticket_done(s3_scope_ticket *t);
/* Posts an S3SignRequest (JSON) through t's refresher's signer (io.h's
 * hs_io_refresher_set_signer): *resp = the answer's body, *cacheable = its
 * Cache-Control said private.  HS_UNSUPPORTED when the scope has none. */
HS_MUST_USE hs_status s3_scope_sign(s3_scope_ticket *t, const char *req_json, hs_buf *resp,
                                    bool *cacheable, hs_error *err);

/* ---- remote signing (s3_sign.c) ---- */

/* The headers ("Name: value") and URL for one request, from the signer of
 * t's scope or the signature cache; hdr[0..n_hdr) are the request's own
 * headers, body the DeleteObjects body (else NULL).  Caller frees *out. */
HS_MUST_USE hs_status s3_remote_sign(s3_scope_ticket *t, const char *region, const char *method,
                                     const char *url, const char *const *hdr, size_t n_hdr,
                                     const char *body, hs_s3_signed *out, hs_error *err);
void s3_sign_cache_clear(void);

const char *s3_env(const char *name);          /* NULL when unset or empty */
bool s3_env_true(const char *name, bool dflt);
int64_t s3_env_int(const char *name, int64_t dflt, int64_t lo, int64_t hi);
void s3_copy_str(char *dst, size_t cap, const char *src);   /* truncating */
/* A whole small file (at most 1 MiB); NULL when absent.  Caller frees. */
char *s3_slurp(const char *path, size_t *len);

/* ---- URIs and requests (s3_http.c) ---- */

typedef struct s3_loc {
    char bucket[64];   /* S3 bucket names are 3-63 characters */
    const char *key;   /* borrowed from the URI: may be "" */
} s3_loc;

HS_MUST_USE hs_status s3_parse_uri(const char *uri, s3_loc *loc, hs_error *err);
/* Percent-encodes s onto b (SigV4's rules; '/' kept when keep_slash). */
HS_MUST_USE hs_status s3_url_encode(hs_buf *b, const char *s, bool keep_slash);

typedef struct s3_req {
    const char *method;        /* GET HEAD PUT POST DELETE */
    const char *bucket, *key;
    const char *query;         /* sorted, encoded; NULL = none */
    const char *hdr[4];        /* extra headers; NULL-terminated */
    const uint8_t *body;       /* request body (PUT/POST) */
    size_t body_len;
    /* response */
    long status;
    hs_buf *resp;              /* 2xx body when dst is NULL (may be NULL: discarded) */
    uint8_t *dst;              /* 2xx body into dst[0..dst_cap) */
    size_t dst_cap;
    size_t got;                /* body bytes received into resp/dst */
    hs_buf errbody;            /* non-2xx body (owned, freed by s3_req_done) */
    char etag[72];
    uint64_t content_length;
    bool have_length;
    uint64_t total_size;       /* from Content-Range: bytes a-b/<total> */
    bool have_total;
    int64_t last_modified;     /* Last-Modified, seconds since the epoch; -1 = none */
    int attempts;              /* how many attempts the last s3_do made */
    bool overflow;
} s3_req;

/* Sends r, retrying transient failures.  HS_OK with r->status set for any
 * HTTP answer that is not transient (the caller maps statuses); HS_IO when
 * the attempts ran out. */
HS_MUST_USE hs_status s3_do(s3_req *r, const char *what, hs_error *err);
void s3_req_done(s3_req *r);
/* An error for a non-2xx answer: 404 NOT_FOUND, 412 CONFLICT, else IO with
 * the server's code and message. */
HS_MUST_USE hs_status s3_http_error(s3_req *r, const char *what, hs_error *err);
bool s3_ok2xx(const s3_req *r);
void s3_pool_clear_locked(void);   /* frees the idle handles; g_s3_lock held */

/* ---- caches (s3_cache.c) ---- */

uint64_t s3_fnv(const char *s);
uint64_t s3_cache_budget(void);
/* Copies [off, off+len) of the object ident ("bucket/key\netag", hash h)
 * from one cached extent; true on a hit. */
bool s3_cache_get(const char *ident, uint64_t h, uint64_t off, size_t len, void *dst);
/* Keeps data[0..len) as the extent at off; takes ownership of data. */
void s3_cache_put(const char *ident, uint64_t h, uint64_t off, uint8_t *data, size_t len,
                  uint64_t budget);
/* The HEAD cache: size and ETag of "bucket/key" (hash h) if stored less than
 * ttl seconds ago. */
bool s3_head_get(const char *key, uint64_t h, int64_t ttl, uint64_t *size, char *etag);
void s3_head_put(const char *key, uint64_t h, uint64_t size, const char *etag);
void s3_head_drop(const char *key, uint64_t h);
void s3_head_clear_locked(void);
/* Opens in flight (s3_cache.c explains): >= 0 a slot to leave, -1 waited for
 * another thread's fetch, -2 no slot. */
int s3_inflight_enter(uint64_t h);
void s3_inflight_leave(int slot);
void s3_inflight_after_fork_locked(void);

#endif

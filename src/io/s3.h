/*
 * io/s3.h - the S3 backend of io.h (internal to io/; io.c dispatches
 * s3:// and s3a:// URIs here) and its decoders of untrusted bytes.
 *
 * URIs: s3://bucket/key and s3a://bucket/key (Hadoop's spelling) name the
 * same object.  A "directory" is a key prefix ending in '/': listing
 * uri "s3://b/t/metadata" lists keys under "t/metadata/".
 *
 * Configuration is read from the environment (and the AWS shared files) the
 * first time a request is made, and again after hs_s3_reset(); see
 * docs/storage.md for the variables.  Everything here is thread-safe.
 *
 * The decoders (s3_parse_*) take (bytes, len), never read past len and never
 * need NUL termination; tests/fuzz/fuzz_s3.c drives them.
 */
#ifndef HS_IO_S3_H
#define HS_IO_S3_H

#include "io/io.h"
#include <stddef.h>

/* True for "s3://..." and "s3a://..." (case-sensitive, as Iceberg writes them). */
bool hs_s3_is_uri(const char *uri);

/* HEAD: size and ETag (identity kind HS_FILE_ID_OBJECT, version = ETag). */
HS_MUST_USE hs_status hs_s3_open(const char *uri, hs_file **out, hs_error *err);
/* flags: HS_WFILE_EXCLUSIVE (conditional PUT, HS_CONFLICT when the key
 * exists); HS_WFILE_NO_SYNC is meaningless here and ignored. */
HS_MUST_USE hs_status hs_s3_create(const char *uri, int flags, hs_wfile **out, hs_error *err);
/* The whole object in one GET (no HEAD, no If-Match: for small mutable
 * objects such as version-hint.text); HS_NOT_FOUND when absent. */
HS_MUST_USE hs_status hs_s3_read_all(const char *uri, hs_buf *out, hs_error *err);
/* io.h's hs_io_read_whole, hs_io_read_head and hs_io_identity_cached. */
HS_MUST_USE hs_status hs_s3_read_head(const char *uri, void *dst, uint64_t len, uint64_t size,
                                      hs_error *err);
/* io.h's hs_io_read_range: bytes [off, off + len) of an object of `size`
 * bytes in one ranged GET, without an open before it. */
HS_MUST_USE hs_status hs_s3_read_range(const char *uri, void *dst, uint64_t off, uint64_t len,
                                       uint64_t size, hs_error *err);
HS_MUST_USE hs_status hs_s3_read_whole(const char *uri, void *dst, uint64_t size,
                                       hs_error *err);
bool hs_s3_identity_cached(const char *uri);
/* *exists and, when it exists, *size (either may be NULL). */
HS_MUST_USE hs_status hs_s3_stat(const char *uri, bool *exists, uint64_t *size, hs_error *err);
/* hs_s3_stat plus the object's Last-Modified in ms since the epoch (-1 when
 * the server sent none; seconds resolution). */
HS_MUST_USE hs_status hs_s3_stat_mtime(const char *uri, bool *exists, uint64_t *size,
                                       int64_t *mtime_ms, hs_error *err);
/* DELETE; a missing key is not an error. */
HS_MUST_USE hs_status hs_s3_delete(const char *uri, hs_error *err);
/* ListObjectsV2 under uri + "/".  recursive=false: names of the objects and
 * "subdirectories" directly under it (like readdir); recursive=true: every
 * key below it, relative to it.  Caller frees each name and the array with
 * hs_free.  An empty listing is HS_OK with *n = 0. */
HS_MUST_USE hs_status hs_s3_list(const char *uri, bool recursive, char ***names, size_t *n,
                                 hs_error *err);
/* Every object below uri + "/" (recursive ListObjectsV2) with its size and
 * Last-Modified, names relative to uri (io.h's hs_io_list_entries). */
HS_MUST_USE hs_status hs_s3_list_entries(const char *uri, hs_io_entry **out, size_t *n,
                                         hs_error *err);

/* Opens the objects concurrently (up to 16 requests in flight) so their
 * size, ETag and last 64 KiB land in the caches; errors are left for the
 * caller's own open.  For small objects read next (manifests). */
void hs_s3_prefetch(const char *const *uris, size_t n);
/* The same without waiting: detached threads fetch while the caller goes on;
 * an open of one of these objects meanwhile waits for its fetch instead of
 * sending another GET.  uris are copied. */
void hs_s3_prefetch_async(const char *const *uris, size_t n);
/* io.h's hs_io_background: fn(arg) on a detached thread counted with the
 * asynchronous prefetches (exit and hs_s3_reset wait for it). */
bool hs_s3_background(void (*fn)(void *arg), void *arg);
void hs_s3_background_wait(void);   /* until none of those runs */
/* True while the process exits or a thread waits in hs_s3_reset or
 * hs_s3_background_wait: a background task that waits before its work
 * should give it up. */
bool hs_s3_background_stop(void);

/* Settings for the objects under prefix (an s3:// or s3a:// URI naming a
 * bucket and optionally a key prefix), as an Iceberg catalog vends them for
 * a table: keys[i] = values[i] with Iceberg's FileIO names - s3.endpoint,
 * s3.path-style-access, s3.region / client.region, s3.access-key-id and
 * s3.secret-access-key (together), s3.session-token; other keys are
 * ignored.  They win over the environment for every request under the
 * prefix (the longest matching prefix); the same prefix again replaces its
 * settings.  Kept until hs_s3_clear_scopes (hs_s3_reset keeps them).
 * io/s3_scope.c. */
HS_MUST_USE hs_status hs_s3_set_scope(const char *prefix, const char *const *keys,
                                      const char *const *values, size_t n, hs_error *err);
/* io.h's hs_io_vend_properties for an s3:// location (s3_http.c). */
HS_MUST_USE hs_status hs_s3_vend_properties(const char *uri, char ***keys, char ***values,
                                            size_t *n, hs_error *err);
/* The same with a refresher (io.h's hs_io_set_scope_ex; the scope takes its
 * own reference; NULL = none). */
HS_MUST_USE hs_status hs_s3_set_scope_ex(const char *prefix, const char *const *keys,
                                         const char *const *values, size_t n,
                                         hs_io_refresher *refresher, hs_error *err);
void hs_s3_clear_scopes(void);

/* Remote signing (io/s3_sign.c; Iceberg's S3 signer API).  The server side:
 * answers an S3SignRequest (JSON body[0..len)) with SigV4 headers made with
 * this process's keys, as an S3SignResponse in *out (caller hs_frees);
 * *cacheable = the answer may be reused (GET, HEAD).  allow(arg,
 * "s3://bucket/key-or-prefix") is asked for every object the request
 * touches; a refusal is HS_INVALID with *refused set.  Malformed requests:
 * HS_INVALID; no keys to sign with: HS_UNSUPPORTED. */
typedef bool (*hs_s3_sign_allow_fn)(void *arg, const char *uri);
HS_MUST_USE hs_status hs_s3_sign_remote(const char *body, size_t len, hs_s3_sign_allow_fn allow,
                                        void *arg, char **out, bool *cacheable, bool *refused,
                                        hs_error *err);
/* A signer's answer, decoded: the URL to send to and the headers to add
 * ("Name: v1, v2"; Cache-Control dropped).  HS_CORRUPT when body is not an
 * S3SignResponse with an Authorization header. */
typedef struct hs_s3_signed {
    char *uri;
    char **hdr;
    size_t n;
} hs_s3_signed;
HS_MUST_USE hs_status hs_s3_sign_response_parse(const char *body, size_t len, hs_s3_signed *out,
                                                 hs_error *err);
void hs_s3_signed_free(hs_s3_signed *s);   /* frees the members; accepts NULL */
/* Requests sent to remote signers so far (the signature cache's misses). */
uint64_t hs_s3_sign_requests(void);

/* Counters since the last hs_s3_reset (process-wide), for tests and benchmarks. */
typedef struct hs_s3_stats {
    uint64_t requests;       /* HTTP requests sent, retries included */
    uint64_t gets, heads, puts, lists, deletes, posts;
    uint64_t retries;        /* requests that were retries */
    uint64_t bytes_in;       /* response body bytes */
    uint64_t bytes_out;      /* request body bytes */
    uint64_t cache_hits;     /* read_at calls served from the byte cache */
    uint64_t cache_misses;   /* cacheable read_at calls that went to the store */
    uint64_t cache_bytes;    /* bytes held by the cache now */
    uint64_t head_hits;      /* opens served by the HEAD cache */
    uint64_t connects;       /* new connections the requests opened (the rest reused one) */
} hs_s3_stats;
void hs_s3_get_stats(hs_s3_stats *out);
/* Forgets the configuration (re-read on the next request), the byte cache,
 * the pooled connections and the counters.  For tests that switch endpoints;
 * must not race with requests in flight. */
void hs_s3_reset(void);

/* ---- decoders (exposed for tests and the fuzz target) -------------------- */

/* One page of a ListObjectsV2 result. */
typedef struct s3_list_page {
    char **keys;            /* <Contents><Key>, decoded; owned */
    uint64_t *sizes;        /* <Contents><Size> (0 when absent) */
    int64_t *mtimes_ms;     /* <Contents><LastModified>, ms since the epoch (-1 when
                             * absent or not ISO 8601 UTC) */
    size_t n_keys;
    char **prefixes;        /* <CommonPrefixes><Prefix>, decoded; owned */
    size_t n_prefixes;
    bool truncated;         /* <IsTruncated>true */
    char *next_token;       /* <NextContinuationToken>, or NULL; owned */
} s3_list_page;
HS_MUST_USE hs_status s3_parse_list(const char *xml, size_t len, s3_list_page *out,
                                    hs_error *err);
void s3_list_page_free(s3_list_page *p);
/* ISO 8601 UTC ("2026-12-06T06:22:28.000Z", fraction optional) as ms since
 * the epoch; -1 when s is NULL or not of that shape. */
int64_t s3_parse_iso8601_ms(const char *s);
/* <Error><Code>..</Code><Message>..</Message>: false when the body has no
 * <Error> element.  code and msg are NUL-terminated and truncated to fit. */
bool s3_parse_error(const char *xml, size_t len, char *code, size_t code_cap, char *msg,
                    size_t msg_cap);
/* The text of the first <name>...</name> element (entities decoded) into a
 * new string (caller frees with hs_free); NULL when absent. */
char *s3_xml_text(const char *xml, size_t len, const char *name);
/* The value of `key` in `section` of an AWS shared credentials/config file
 * (INI: [section], key = value, '#' or ';' comments).  In the config file
 * profiles other than "default" are "[profile name]": pass config_style.
 * Returns a new string (caller frees with hs_free) or NULL. */
char *s3_ini_get(const char *text, size_t len, const char *profile, bool config_style,
                 const char *key);

#endif

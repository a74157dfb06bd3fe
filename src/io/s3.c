/*
 * io/s3.c - the S3 backend's objects: open, ranged reads, whole-object reads,
 * stat, delete, writes (PUT, multipart, conditional create) and listings.
 * The request core, credentials, caches and decoders live beside it
 * (s3_int.h lists the files and what each owns).
 *
 *   operation            request                                  status -> result
 *   -------------------  ---------------------------------------  -------------------------
 *   open / stat          GET key, Range: bytes=-65536 (open),     206/200 size+ETag (from
 *                        else HEAD key                            Content-Range), 404 NOT_FOUND
 *   read_at              GET key, Range: bytes=a-b, If-Match: ETag 206 (200 for the whole
 *                                                                 object), 412 -> "changed"
 *   small write / close  PUT key                                  200
 *   exclusive create     PUT key, If-None-Match: *                200, 412 -> HS_CONFLICT
 *   large write          POST ?uploads=, PUT ?partNumber=&uploadId=
 *                        (each part_size bytes), POST ?uploadId=   200 (body checked for
 *                        with the part list; abort: DELETE          <Error>)
 *   delete               DELETE key                               204 (404 too)
 *   list                 GET ?continuation-token=&delimiter=/&    200 (page after page)
 *                        list-type=2&prefix=
 *
 * Retried writes are idempotent except two, which check what happened
 * (always: curl itself resends a request whose reused connection died
 * without an answer, so "first attempt" cannot be told from the outside):
 *   - a conditional PUT that gets 412 may have been applied by an attempt
 *     whose response was lost: the object is read back and, when its bytes
 *     equal ours, the create succeeded (metadata files carry unique snapshot
 *     ids and timestamps, so equal bytes are our write);
 *   - a CompleteMultipartUpload that gets 404 NoSuchUpload: the object is
 *     HEADed and its size compared.
 *
 * Reads: read_at calls of at most 1 MiB are widened to whole 64 KiB blocks
 * (aligned, clipped to the object), read ahead to 256 KiB on a miss, and the
 * fetched extent is kept in the byte cache (s3_cache.c), so a Parquet footer
 * read (8 bytes, then the footer), the page index, column chunks of small
 * files and index sidecars cost one request per block, and a second query
 * reads no bytes again.  Larger reads go to the store directly.
 *
 * Stores without conditional writes (HS_S3_CONDITIONAL_WRITES=0): an
 * exclusive create is a HEAD then a PUT, correct only while every writer of
 * the table holds the commit lock (catalog/fsio.c: setting s3_lock_dir).
 */
#include "io/s3_int.h"
#include "base/mem.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ------------------------------------------------------------------- */

typedef struct s3_file {
    hs_file base;
    s3_loc loc;
    char *uri;      /* owned; loc.key points into it */
    char *ident;    /* cache key; owned */
    uint64_t ident_hash;
    char *hkey;     /* HEAD cache key "bucket/key"; owned */
    uint64_t hkey_hash;
} s3_file;

static hs_status head(const s3_loc *loc, const char *what, s3_req *r, hs_error *err)
{
    memset(r, 0, sizeof *r);
    r->method = "HEAD";
    r->bucket = loc->bucket;
    r->key = loc->key;
    return s3_do(r, what, err);
}

static hs_status get_range(s3_file *sf, uint64_t off, size_t len, void *dst, hs_error *err)
{
    char range[64], ifm[100];
    snprintf(range, sizeof range, "Range: bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    s3_req r = { 0 };
    r.method = "GET";
    r.bucket = sf->loc.bucket;
    r.key = sf->loc.key;
    int nh = 0;
    r.hdr[nh++] = range;
    if (sf->base.id.version[0]) {
        snprintf(ifm, sizeof ifm, "If-Match: %s", sf->base.id.version);
        r.hdr[nh++] = ifm;
    }
    r.dst = dst;
    r.dst_cap = len;
    hs_status st = s3_do(&r, sf->uri, err);
    if (st == HS_OK && r.status == 412) {
        s3_head_drop(sf->hkey, sf->hkey_hash);
        st = hs_err_set(err, HS_IO, "%s: object changed since it was opened (ETag %s)",
                        sf->uri, sf->base.id.version);
    }
    else if (st == HS_OK && !s3_ok2xx(&r))
        st = s3_http_error(&r, sf->uri, err);
    else if (st == HS_OK && r.status == 200 && !(off == 0 && len == sf->base.size))
        st = hs_err_set(err, HS_IO, "%s: the server ignored the Range header", sf->uri);
    else if (st == HS_OK && r.got != len)
        st = hs_err_set(err, HS_IO, "%s: short read: %zu of %zu bytes at offset %" PRIu64,
                        sf->uri, r.got, len, off);
    s3_req_done(&r);
    return st;
}

/* Whether block [a, min(a + S3_BLOCK, size)) of the object is cached; copies
 * the part of it inside [off, off + len) into dst (dst holds [off, off+len)). */
static bool block_cached(const s3_file *sf, uint64_t a, uint64_t off, size_t len, uint8_t *dst)
{
    uint64_t e = a + S3_BLOCK < sf->base.size ? a + S3_BLOCK : sf->base.size;
    uint64_t lo = a > off ? a : off, hi = e < off + len ? e : off + len;
    if (hi <= lo)
        return true;
    return s3_cache_get(sf->ident, sf->ident_hash, lo, (size_t)(hi - lo), dst + (lo - off));
}

static hs_status s3_read_at(hs_file *f, uint64_t off, size_t len, void *dst, hs_error *err)
{
    s3_file *sf = (s3_file *)f;
    uint64_t budget = s3_cache_budget();
    if (budget == 0 || len > S3_CACHE_MAX_READ)
        return get_range(sf, off, len, dst, err);
    if (s3_cache_get(sf->ident, sf->ident_hash, off, len, dst))
        return HS_OK;
    uint64_t a = off / S3_BLOCK * S3_BLOCK;
    uint64_t b = (off + len + S3_BLOCK - 1) / S3_BLOCK * S3_BLOCK;
    if (b > f->size)
        b = f->size;
    /* the range may straddle cached extents (a footer's tail block, an
     * earlier read): serve the cached blocks at both ends, fetch the rest */
    while (a < b && block_cached(sf, a, off, len, dst))
        a += S3_BLOCK;
    while (b > a && block_cached(sf, (b - 1) / S3_BLOCK * S3_BLOCK, off, len, dst))
        b = (b - 1) / S3_BLOCK * S3_BLOCK;
    if (a >= b)
        return HS_OK;
    uint64_t need_a = a, need_b = b;   /* what dst still lacks, within [off, off+len) */
    if (b - a < S3_READAHEAD) {        /* read ahead, but not over cached blocks */
        uint64_t ra = b;
        while (ra - a < S3_READAHEAD && ra < f->size) {
            uint8_t probe;
            if (s3_cache_get(sf->ident, sf->ident_hash, ra, 1, &probe))
                break;
            ra += S3_BLOCK;
        }
        b = ra > f->size ? f->size : ra;
    }
    size_t n = (size_t)(b - a);
    uint8_t *blk = hs_malloc(n);
    if (!blk)
        return get_range(sf, off, len, dst, err);
    hs_status st = get_range(sf, a, n, blk, err);
    if (st != HS_OK) {
        hs_free(blk);
        return st;
    }
    uint64_t lo = need_a > off ? need_a : off;
    uint64_t hi = need_b < off + len ? need_b : off + len;
    if (hi > lo)
        memcpy((uint8_t *)dst + (lo - off), blk + (lo - a), (size_t)(hi - lo));
    s3_cache_put(sf->ident, sf->ident_hash, a, blk, n, budget);
    return HS_OK;
}

static void s3_close(hs_file *f)
{
    s3_file *sf = (s3_file *)f;
    hs_free(sf->uri);
    hs_free(sf->ident);
    hs_free(sf->hkey);
    hs_free(sf);
}

static hs_status s3_restat(hs_file *f, hs_file_id *id, uint64_t *size, hs_error *err)
{
    s3_file *sf = (s3_file *)f;
    char etag[72];
    uint64_t sz;
    /* a cached identity is as good as a HEAD: any change this process made
     * dropped it, and a change by others fails the next GET's If-Match */
    if (s3_head_get(sf->hkey, sf->hkey_hash, s3_cfg_now().head_ttl_s, &sz, etag)) {
        memset(id, 0, sizeof *id);
        id->kind = HS_FILE_ID_OBJECT;
        s3_copy_str(id->version, sizeof id->version, etag);
        *size = sz;
        return HS_OK;
    }
    s3_req r;
    hs_status st = head(&sf->loc, sf->uri, &r, err);
    if (st == HS_OK && !s3_ok2xx(&r))
        st = r.status == 404 ? hs_err_set(err, HS_IO, "%s: object removed since it was opened",
                                          sf->uri)
                             : s3_http_error(&r, sf->uri, err);
    if (st == HS_OK) {
        memset(id, 0, sizeof *id);
        id->kind = HS_FILE_ID_OBJECT;
        s3_copy_str(id->version, sizeof id->version, r.etag);
        *size = r.content_length;
    }
    s3_req_done(&r);
    return st;
}

/* hs_file_will_need: the ranges not cached, sorted and coalesced (gaps up to
 * S3_COALESCE_GAP, runs up to S3_NEED_MAX_READ), each read on its own thread
 * (through s3_read_at, which widens and caches it, or, for a run longer than
 * it caches, by one GET cached in pieces: need_big); returns when all are
 * done. */
typedef struct need_job {
    s3_file *sf;
    hs_io_range *r;
    size_t n;
    _Atomic size_t next;
} need_job;

/* One GET of the blocks around r, cached in pieces of S3_CACHE_MAX_READ
 * (whole blocks, so that a later read finds each block in one piece). */
static void need_big(s3_file *sf, hs_io_range r)
{
    uint64_t a = r.off / S3_BLOCK * S3_BLOCK;
    uint64_t b = (r.off + r.len + S3_BLOCK - 1) / S3_BLOCK * S3_BLOCK;
    if (b > sf->base.size)
        b = sf->base.size;
    uint8_t *buf = hs_malloc((size_t)(b - a));
    hs_error ignored = { 0 };
    if (!buf || get_range(sf, a, (size_t)(b - a), buf, &ignored) != HS_OK) {
        hs_free(buf);   /* the reads that want it report the failure */
        return;
    }
    uint64_t budget = s3_cache_budget();
    for (uint64_t at = a; at < b; at += S3_CACHE_MAX_READ) {
        size_t n = (size_t)(b - at < S3_CACHE_MAX_READ ? b - at : S3_CACHE_MAX_READ);
        uint8_t *piece = hs_malloc(n);
        if (!piece)
            break;
        memcpy(piece, buf + (at - a), n);
        s3_cache_put(sf->ident, sf->ident_hash, at, piece, n, budget);
    }
    hs_free(buf);
}

static void *need_main(void *a)
{
    need_job *j = a;
    for (size_t i; (i = j->next++) < j->n;) {
        if (j->r[i].len > S3_CACHE_MAX_READ) {
            need_big(j->sf, j->r[i]);
            continue;
        }
        uint8_t *tmp = hs_malloc((size_t)j->r[i].len);
        hs_error ignored = { 0 };
        if (tmp)
            (void)s3_read_at(&j->sf->base, j->r[i].off, (size_t)j->r[i].len, tmp, &ignored);
        hs_free(tmp);
    }
    return NULL;
}

static int range_cmp(const void *a, const void *b)
{
    const hs_io_range *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static void s3_will_need(hs_file *f, const hs_io_range *r, size_t n)
{
    s3_file *sf = (s3_file *)f;
    if (s3_cache_budget() == 0 || n == 0)
        return;
    hs_io_range *v = hs_malloc(n * sizeof *v);
    if (!v)
        return;
    size_t m = 0;
    uint8_t probe[1];
    for (size_t i = 0; i < n; i++) {
        if (r[i].len == 0 || r[i].off >= f->size || r[i].len > S3_CACHE_MAX_READ)
            continue;   /* large reads bypass the cache: nothing to warm */
        uint64_t len = r[i].len < f->size - r[i].off ? r[i].len : f->size - r[i].off;
        /* cached already when both ends are (a partial middle is fetched by its read) */
        if (s3_cache_get(sf->ident, sf->ident_hash, r[i].off, 1, probe) &&
            s3_cache_get(sf->ident, sf->ident_hash, r[i].off + len - 1, 1, probe))
            continue;
        v[m++] = (hs_io_range){ r[i].off, len };
    }
    qsort(v, m, sizeof *v, range_cmp);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        if (k > 0) {
            hs_io_range *last = &v[k - 1];
            uint64_t end = last->off + last->len, e2 = v[i].off + v[i].len;
            uint64_t nend = e2 > end ? e2 : end;
            /* close enough: one GET (two would overlap by their read-ahead,
             * or cost a request for a gap that takes ~2 ms to transfer) */
            if (v[i].off <= end + S3_COALESCE_GAP && nend - last->off <= S3_NEED_MAX_READ) {
                last->len = nend - last->off;
                continue;
            }
        }
        v[k++] = v[i];
    }
    if (m <= 1) {   /* one range: the caller's own read costs the same */
        hs_free(v);
        return;
    }
    need_job j = { sf, v, k, 0 };
    pthread_t th[8];
    size_t nt = k < 8 ? k : 8, started = 0;
    for (size_t i = 0; i < nt; i++)
        if (pthread_create(&th[started], NULL, need_main, &j) == 0)
            started++;
    if (started == 0)
        need_main(&j);
    for (size_t i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    hs_free(v);
}

static const hs_file_vtbl s3_vtbl = { s3_read_at, s3_close, NULL, s3_restat, s3_will_need };

/* GET bytes=-S3_BLOCK.  *known = true with *size, etag set (and the tail
 * cached) when the answer tells them; false (HS_OK) to fall back to a HEAD:
 * an empty object (416), a server that ignored the Range on a large object. */
static hs_status open_by_tail(s3_file *sf, uint64_t *size, char *etag, bool *known,
                              hs_error *err)
{
    *known = false;
    uint8_t *blk = hs_malloc(S3_BLOCK);
    if (!blk)
        return HS_OK;
    char range[48];
    snprintf(range, sizeof range, "Range: bytes=-%" PRIu64, S3_BLOCK);
    s3_req r = { 0 };
    r.method = "GET";
    r.bucket = sf->loc.bucket;
    r.key = sf->loc.key;
    r.hdr[0] = range;
    r.dst = blk;
    r.dst_cap = S3_BLOCK;
    hs_error e2 = { 0 };
    hs_status st = s3_do(&r, sf->uri, &e2);
    if (st == HS_OK && r.status == 404) {
        st = hs_err_set(err, HS_NOT_FOUND, "%s: cannot open: no such object", sf->uri);
    } else if (st == HS_OK && s3_ok2xx(&r) && r.etag[0]) {
        uint64_t total = r.status == 206 && r.have_total ? r.total_size
                         : r.status == 200 ? (uint64_t)r.got : UINT64_MAX;
        if (total != UINT64_MAX && r.got <= total && (r.got == total || r.got == S3_BLOCK)) {
            *size = total;
            s3_copy_str(etag, 72, r.etag);
            *known = true;
            s3_head_put(sf->hkey, sf->hkey_hash, total, r.etag);
            size_t n = strlen(sf->hkey) + strlen(r.etag) + 2;
            char *ident = hs_malloc(n);
            if (ident && r.got > 0) {
                snprintf(ident, n, "%s\n%s", sf->hkey, r.etag);
                s3_cache_put(ident, s3_fnv(ident), total - r.got, blk, r.got, s3_cfg_now().cache_budget);
                blk = NULL;   /* the cache owns it */
            }
            hs_free(ident);
        }
    } else if (st != HS_OK && r.status == 0 && !r.overflow) {
        if (err && err->code == HS_OK)
            *err = e2;   /* transport failure after the retries: report it */
    } else {
        st = HS_OK;      /* 416, an ignored Range, a missing ETag: ask with HEAD */
    }
    s3_req_done(&r);
    hs_free(blk);
    return st;
}


hs_status hs_s3_open(const char *uri, hs_file **out, hs_error *err)
{
    *out = NULL;
    s3_file *sf = hs_calloc(1, sizeof *sf);
    if (!sf || !(sf->uri = hs_strdup(uri))) {
        hs_free(sf);
        return hs_err_nomem(err, strlen(uri));
    }
    hs_status st = s3_parse_uri(sf->uri, &sf->loc, err);
    if (st == HS_OK && !sf->loc.key[0])
        st = hs_err_set(err, HS_INVALID, "%s: names a bucket, not an object", uri);
    size_t hn = st == HS_OK ? strlen(sf->loc.bucket) + strlen(sf->loc.key) + 2 : 0;
    if (st == HS_OK && !(sf->hkey = hs_malloc(hn)))
        st = hs_err_nomem(err, hn);
    uint64_t size = 0;
    char etag[72] = "";
    s3_req r = { 0 };
    if (st == HS_OK) {
        snprintf(sf->hkey, hn, "%s/%s", sf->loc.bucket, sf->loc.key);
        sf->hkey_hash = s3_fnv(sf->hkey);
        s3_config cfg = s3_cfg_now();
        bool known = s3_head_get(sf->hkey, sf->hkey_hash, cfg.head_ttl_s, &size, etag);
        if (!known && cfg.cache_budget > 0) {
            /* one GET of the last block instead of a HEAD: size and ETag from
             * its headers, and the tail (a Parquet footer, or all of a small
             * manifest or sidecar) into the byte cache */
            int slot = s3_inflight_enter(sf->hkey_hash);
            if (slot == -1)   /* a prefetch just fetched it */
                known = s3_head_get(sf->hkey, sf->hkey_hash, cfg.head_ttl_s, &size, etag);
            if (!known)
                st = open_by_tail(sf, &size, etag, &known, err);
            s3_inflight_leave(slot);
        }
        if (st == HS_OK && !known) {
            st = head(&sf->loc, uri, &r, err);
            if (st == HS_OK && r.status == 404)
                st = hs_err_set(err, HS_NOT_FOUND, "%s: cannot open: no such object", uri);
            else if (st == HS_OK && !s3_ok2xx(&r))
                st = s3_http_error(&r, uri, err);
            else if (st == HS_OK && !r.have_length)
                st = hs_err_set(err, HS_IO, "%s: HEAD gave no Content-Length", uri);
            if (st == HS_OK) {
                size = r.content_length;
                s3_copy_str(etag, sizeof etag, r.etag);
                if (etag[0])
                    s3_head_put(sf->hkey, sf->hkey_hash, size, etag);
            }
        }
    }
    if (st == HS_OK) {
        sf->base.vt = &s3_vtbl;
        sf->base.size = size;
        sf->base.id.kind = HS_FILE_ID_OBJECT;
        s3_copy_str(sf->base.id.version, sizeof sf->base.id.version, etag);
        sf->base.name = sf->uri;   /* s3_close frees uri; base.name is not freed twice */
        size_t n = hn + strlen(etag) + 2;
        sf->ident = hs_malloc(n);
        if (!sf->ident)
            st = hs_err_nomem(err, n);
        else {
            snprintf(sf->ident, n, "%s\n%s", sf->hkey, etag);
            sf->ident_hash = s3_fnv(sf->ident);
        }
    }
    s3_req_done(&r);
    if (st != HS_OK) {
        hs_free(sf->ident);
        hs_free(sf->hkey);
        hs_free(sf->uri);
        hs_free(sf);
        return st;
    }
    *out = &sf->base;
    return HS_OK;
}

/* This process changed the object: its cached HEAD is stale. */
static void forget_head(const s3_loc *loc)
{
    char key[1100];
    int n = snprintf(key, sizeof key, "%s/%s", loc->bucket, loc->key);
    if (n > 0 && (size_t)n < sizeof key)
        s3_head_drop(key, s3_fnv(key));
}

/* A whole object from the caches without a request: its size and ETag in the
 * HEAD cache (trusted, as for an open) and all of its bytes in one cached
 * extent (the tail block of a small object that was opened: a sidecar,
 * manifest or registry segment).  Objects only ever read with read_all
 * (version-hint.text, metadata JSON) are never in the HEAD cache. */
static bool read_all_cached(const s3_loc *loc, hs_buf *out)
{
    s3_config cfg = s3_cfg_now();
    if (cfg.cache_budget == 0)
        return false;
    char hkey[1100];
    int hn = snprintf(hkey, sizeof hkey, "%s/%s", loc->bucket, loc->key);
    if (hn <= 0 || (size_t)hn >= sizeof hkey)
        return false;
    uint64_t size = 0;
    char etag[72];
    if (!s3_head_get(hkey, s3_fnv(hkey), cfg.head_ttl_s, &size, etag) || size > S3_BLOCK)
        return false;
    char ident[1200];
    int n = snprintf(ident, sizeof ident, "%s\n%s", hkey, etag);
    if (n <= 0 || (size_t)n >= sizeof ident || hs_buf_reserve(out, (size_t)size + 1) != HS_OK)
        return false;
    if (size > 0 && !s3_cache_get(ident, s3_fnv(ident), 0, (size_t)size, out->data))
        return false;
    out->len = (size_t)size;
    return true;
}

hs_status hs_s3_read_all(const char *uri, hs_buf *out, hs_error *err)
{
    hs_buf_reset(out);
    s3_loc loc;
    HS_TRY(s3_parse_uri(uri, &loc, err));
    if (!loc.key[0])
        return hs_err_set(err, HS_INVALID, "%s: names a bucket, not an object", uri);
    if (read_all_cached(&loc, out))
        return HS_OK;
    s3_req r = { 0 };
    r.method = "GET";
    r.bucket = loc.bucket;
    r.key = loc.key;
    r.resp = out;
    hs_status st = s3_do(&r, uri, err);
    if (st == HS_OK && r.status == 404)
        st = hs_err_set(err, HS_NOT_FOUND, "%s: cannot open: no such object", uri);
    else if (st == HS_OK && !s3_ok2xx(&r))
        st = s3_http_error(&r, uri, err);
    s3_req_done(&r);
    return st;
}

bool hs_s3_identity_cached(const char *uri)
{
    s3_loc loc;
    char hkey[1100], etag[72];
    uint64_t size;
    if (s3_parse_uri(uri, &loc, NULL) != HS_OK)
        return false;
    int hn = snprintf(hkey, sizeof hkey, "%s/%s", loc.bucket, loc.key);
    return hn > 0 && (size_t)hn < sizeof hkey &&
           s3_head_get(hkey, s3_fnv(hkey), s3_cfg_now().head_ttl_s, &size, etag);
}

hs_status hs_s3_read_whole(const char *uri, void *dst, uint64_t size, hs_error *err)
{
    return hs_s3_read_head(uri, dst, size, size, err);
}

hs_status hs_s3_read_head(const char *uri, void *dst, uint64_t len, uint64_t size, hs_error *err)
{
    return hs_s3_read_range(uri, dst, 0, len, size, err);
}

hs_status hs_s3_read_range(const char *uri, void *dst, uint64_t off, uint64_t len, uint64_t size,
                           hs_error *err)
{
    s3_loc loc;
    HS_TRY(s3_parse_uri(uri, &loc, err));
    if (!loc.key[0])
        return hs_err_set(err, HS_INVALID, "%s: names a bucket, not an object", uri);
    if (size == 0 || size > (uint64_t)SIZE_MAX / 2 || len == 0 || off > size || len > size - off)
        return hs_err_set(err, HS_INVALID, "%s: read of %" PRIu64 " bytes at %" PRIu64 " of %"
                          PRIu64 " bytes", uri, len, off, size);
    char range[80];
    snprintf(range, sizeof range, "Range: bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
    s3_req r = { 0 };
    r.method = "GET";
    r.bucket = loc.bucket;
    r.key = loc.key;
    r.hdr[0] = range;
    r.dst = dst;
    r.dst_cap = (size_t)len;
    hs_status st = s3_do(&r, uri, err);
    if (st == HS_OK && r.status == 404) {
        st = hs_err_set(err, HS_NOT_FOUND, "%s: cannot open: no such object", uri);
    } else if (st == HS_OK && !s3_ok2xx(&r)) {
        st = s3_http_error(&r, uri, err);
    } else if (st == HS_OK) {
        uint64_t total = r.status == 206 && r.have_total ? r.total_size
                         : r.status == 200 && off == 0 && len == size ? (uint64_t)r.got
                                                                         : UINT64_MAX;
        if (total != size || r.got != len)
            st = hs_err_set(err, HS_CONFLICT, "%s: the object has %s%" PRIu64 " bytes, not "
                            "%" PRIu64, uri, total == UINT64_MAX ? "an unknown number of " : "",
                            total == UINT64_MAX ? (uint64_t)r.got : total, size);
        else if (r.etag[0]) {
            char hkey[1100];
            int hn = snprintf(hkey, sizeof hkey, "%s/%s", loc.bucket, loc.key);
            if (hn > 0 && (size_t)hn < sizeof hkey)
                s3_head_put(hkey, s3_fnv(hkey), size, r.etag);
        }
    }
    s3_req_done(&r);
    return st;
}

hs_status hs_s3_stat(const char *uri, bool *exists, uint64_t *size, hs_error *err)
{
    return hs_s3_stat_mtime(uri, exists, size, NULL, err);
}

hs_status hs_s3_stat_mtime(const char *uri, bool *exists, uint64_t *size, int64_t *mtime_ms,
                           hs_error *err)
{
    if (exists)
        *exists = false;
    if (mtime_ms)
        *mtime_ms = -1;
    s3_loc loc;
    HS_TRY(s3_parse_uri(uri, &loc, err));
    s3_req r;
    hs_status st = head(&loc, uri, &r, err);
    if (st == HS_OK && s3_ok2xx(&r)) {
        if (exists)
            *exists = true;
        if (size)
            *size = r.content_length;
        if (mtime_ms && r.last_modified >= 0)
            *mtime_ms = r.last_modified * 1000;
    } else if (st == HS_OK && r.status != 404) {
        st = s3_http_error(&r, uri, err);
    }
    s3_req_done(&r);
    return st;
}

hs_status hs_s3_delete(const char *uri, hs_error *err)
{
    s3_loc loc;
    HS_TRY(s3_parse_uri(uri, &loc, err));
    s3_req r = { 0 };
    r.method = "DELETE";
    r.bucket = loc.bucket;
    r.key = loc.key;
    hs_status st = s3_do(&r, uri, err);
    if (st == HS_OK && !s3_ok2xx(&r) && r.status != 404)
        st = s3_http_error(&r, uri, err);
    s3_req_done(&r);
    forget_head(&loc);
    return st;
}

/* ---- writing ------------------------------------------------------------------- */

typedef struct s3_wfile {
    hs_wfile base;
    s3_loc loc;
    char *uri;            /* owned; loc.key points into it */
    bool exclusive;
    hs_buf buf;           /* bytes not yet uploaded */
    char *upload_id;      /* multipart upload in progress, or NULL */
    char **etags;         /* ETag of each uploaded part */
    int n_parts;
    uint64_t uploaded;
} s3_wfile;

static void wfree(s3_wfile *w)
{
    for (int i = 0; i < w->n_parts; i++)
        hs_free(w->etags[i]);
    hs_free(w->etags);
    hs_free(w->upload_id);
    hs_buf_free(&w->buf);
    hs_free(w->uri);
    hs_free(w);
}

static hs_status put_object(s3_wfile *w, hs_error *err);

/* Reads the object back after an ambiguous 412 on a retried conditional PUT:
 * true when it holds exactly our bytes. */
static bool holds_our_bytes(s3_wfile *w)
{
    hs_file *f = NULL;
    hs_error e2 = { 0 };
    bool same = false;
    if (hs_s3_open(w->uri, &f, &e2) == HS_OK && f->size == w->buf.len) {
        uint8_t *tmp = hs_malloc(w->buf.len ? w->buf.len : 1);
        s3_file *sf = (s3_file *)f;
        if (tmp && (w->buf.len == 0 || get_range(sf, 0, w->buf.len, tmp, &e2) == HS_OK))
            same = w->buf.len == 0 || memcmp(tmp, w->buf.data, w->buf.len) == 0;
        hs_free(tmp);
    }
    hs_file_close(f);
    return same;
}

static hs_status put_object(s3_wfile *w, hs_error *err)
{
    bool conditional = s3_cfg_now().conditional_writes;
    if (w->exclusive && !conditional) {
        /* lock-based fallback: the caller holds the table's commit lock */
        bool exists = false;
        HS_TRY(hs_s3_stat(w->uri, &exists, NULL, err));
        if (exists)
            return hs_err_set(err, HS_CONFLICT, "%s: already exists", w->uri);
    }
    s3_req r = { 0 };
    r.method = "PUT";
    r.bucket = w->loc.bucket;
    r.key = w->loc.key;
    r.body = w->buf.data;
    r.body_len = w->buf.len;
    if (w->exclusive && conditional)
        r.hdr[0] = "If-None-Match: *";
    hs_status st = s3_do(&r, w->uri, err);
    if (st == HS_OK && r.status == 412 && w->exclusive) {
        /* not only after our own retries: curl itself resends a request
         * whose reused connection died without an answer */
        if (holds_our_bytes(w))
            st = HS_OK;   /* our earlier attempt landed; its answer was lost */
        else
            st = hs_err_set(err, HS_CONFLICT, "%s: already exists (conditional PUT refused)",
                            w->uri);
    } else if (st == HS_OK && r.status == 501 && w->exclusive) {
        st = hs_err_set(err, HS_UNSUPPORTED, "%s: the store does not support conditional "
                        "writes (If-None-Match); set HS_S3_CONDITIONAL_WRITES=0 and "
                        "the setting s3_lock_dir (HS_S3_LOCK_DIR; docs/storage.md)", w->uri);
    } else if (st == HS_OK && !s3_ok2xx(&r)) {
        st = s3_http_error(&r, w->uri, err);
    }
    s3_req_done(&r);
    return st;
}

static hs_status upload_part(s3_wfile *w, const uint8_t *p, size_t n, hs_error *err)
{
    if (w->n_parts >= S3_MAX_PARTS)
        return hs_err_set(err, HS_INVALID, "%s: more than %d parts (raise HS_S3_PART_MB)",
                          w->uri, S3_MAX_PARTS);
    if (!w->upload_id) {
        s3_req r = { 0 };
        hs_buf body = { 0 };
        r.method = "POST";
        r.bucket = w->loc.bucket;
        r.key = w->loc.key;
        r.query = "uploads=";
        r.resp = &body;
        hs_status st = s3_do(&r, w->uri, err);
        if (st == HS_OK && !s3_ok2xx(&r))
            st = s3_http_error(&r, w->uri, err);
        if (st == HS_OK &&
            !(w->upload_id = s3_xml_text((const char *)body.data, body.len, "UploadId")))
            st = hs_err_set(err, HS_IO, "%s: CreateMultipartUpload answered without an "
                            "UploadId", w->uri);
        s3_req_done(&r);
        hs_buf_free(&body);
        HS_TRY(st);
    }
    char **ne = hs_realloc(w->etags, (size_t)(w->n_parts + 1) * sizeof *ne);
    if (!ne)
        return hs_err_nomem(err, 8);
    w->etags = ne;
    hs_buf q = { 0 };
    if (hs_buf_printf(&q, "partNumber=%d&uploadId=", w->n_parts + 1) != HS_OK ||
        s3_url_encode(&q, w->upload_id, false) != HS_OK) {
        hs_buf_free(&q);
        return hs_err_nomem(err, 64);
    }
    s3_req r = { 0 };
    r.method = "PUT";
    r.bucket = w->loc.bucket;
    r.key = w->loc.key;
    r.query = hs_buf_cstr(&q);
    r.body = p;
    r.body_len = n;
    hs_status st = s3_do(&r, w->uri, err);
    if (st == HS_OK && !s3_ok2xx(&r))
        st = s3_http_error(&r, w->uri, err);
    if (st == HS_OK && !r.etag[0])
        st = hs_err_set(err, HS_IO, "%s: UploadPart %d answered without an ETag", w->uri,
                        w->n_parts + 1);
    if (st == HS_OK) {
        if (!(w->etags[w->n_parts] = hs_strdup(r.etag)))
            st = hs_err_nomem(err, 72);
        else
            w->n_parts++;
    }
    s3_req_done(&r);
    hs_buf_free(&q);
    if (st == HS_OK)
        w->uploaded += n;
    return st;
}

static hs_status complete_upload(s3_wfile *w, hs_error *err)
{
    hs_buf body = { 0 }, q = { 0 }, resp = { 0 };
    hs_status st = HS_OK;
    if (hs_buf_puts(&body, "<CompleteMultipartUpload>") != HS_OK)
        st = hs_err_nomem(err, 64);
    for (int i = 0; st == HS_OK && i < w->n_parts; i++) {
        /* ETags are "hex" in quotes: nothing to escape for XML but & and < */
        if (hs_buf_printf(&body, "<Part><PartNumber>%d</PartNumber><ETag>", i + 1) != HS_OK)
            st = hs_err_nomem(err, 64);
        for (const char *c = w->etags[i]; st == HS_OK && *c; c++)
            if ((*c == '&' ? hs_buf_puts(&body, "&amp;")
                 : *c == '<' ? hs_buf_puts(&body, "&lt;") : hs_buf_append_byte(&body, (uint8_t)*c)) != HS_OK)
                st = hs_err_nomem(err, 64);
        if (st == HS_OK && hs_buf_puts(&body, "</ETag></Part>") != HS_OK)
            st = hs_err_nomem(err, 64);
    }
    if (st == HS_OK && (hs_buf_puts(&body, "</CompleteMultipartUpload>") != HS_OK ||
                        hs_buf_puts(&q, "uploadId=") != HS_OK ||
                        s3_url_encode(&q, w->upload_id, false) != HS_OK))
        st = hs_err_nomem(err, 64);
    s3_req r = { 0 };
    if (st == HS_OK) {
        r.method = "POST";
        r.bucket = w->loc.bucket;
        r.key = w->loc.key;
        r.query = hs_buf_cstr(&q);
        r.body = body.data;
        r.body_len = body.len;
        r.resp = &resp;
        st = s3_do(&r, w->uri, err);
    }
    if (st == HS_OK && r.status == 404) {
        /* NoSuchUpload on a resend (ours or curl's): an earlier attempt
         * completed it */
        uint64_t size = 0;
        bool exists = false;
        hs_error e2 = { 0 };
        if (hs_s3_stat(w->uri, &exists, &size, &e2) != HS_OK || !exists || size != w->uploaded)
            st = s3_http_error(&r, w->uri, err);
    } else if (st == HS_OK && !s3_ok2xx(&r)) {
        st = s3_http_error(&r, w->uri, err);
    } else if (st == HS_OK) {
        /* S3 may answer 200 and report the failure in the body */
        char code[64], msg[256];
        if (s3_parse_error((const char *)resp.data, resp.len, code, sizeof code, msg, sizeof msg))
            st = hs_err_set(err, HS_IO, "%s: CompleteMultipartUpload: %s: %s", w->uri, code, msg);
    }
    s3_req_done(&r);
    hs_buf_free(&body);
    hs_buf_free(&q);
    hs_buf_free(&resp);
    return st;
}

static void abort_upload(s3_wfile *w)
{
    if (!w->upload_id)
        return;
    hs_buf q = { 0 };
    if (hs_buf_puts(&q, "uploadId=") == HS_OK && s3_url_encode(&q, w->upload_id, false) == HS_OK) {
        s3_req r = { 0 };
        r.method = "DELETE";
        r.bucket = w->loc.bucket;
        r.key = w->loc.key;
        r.query = hs_buf_cstr(&q);
        hs_error ignored = { 0 };
        (void)!s3_do(&r, w->uri, &ignored);
        s3_req_done(&r);
    }
    hs_buf_free(&q);
}

static hs_status s3_wwrite(hs_wfile *f, const void *p, size_t n, hs_error *err)
{
    s3_wfile *w = (s3_wfile *)f;
    if (hs_buf_append(&w->buf, p, n) != HS_OK)
        return hs_err_nomem(err, n);
    if (w->exclusive)
        return HS_OK;   /* one conditional PUT at close */
    size_t part = s3_cfg_now().part_size;
    if (w->buf.len < part)
        return HS_OK;
    size_t done = 0;
    while (w->buf.len - done >= part) {
        HS_TRY(upload_part(w, w->buf.data + done, part, err));
        done += part;
    }
    memmove(w->buf.data, w->buf.data + done, w->buf.len - done);
    w->buf.len -= done;
    return HS_OK;
}

static hs_status s3_wclose(hs_wfile *f, hs_error *err)
{
    s3_wfile *w = (s3_wfile *)f;
    hs_status st;
    forget_head(&w->loc);
    if (w->upload_id) {
        st = w->buf.len ? upload_part(w, w->buf.data, w->buf.len, err) : HS_OK;
        if (st == HS_OK)
            st = complete_upload(w, err);
        if (st != HS_OK)
            abort_upload(w);
    } else {
        st = put_object(w, err);
    }
    wfree(w);
    return st;
}

static void s3_wabort(hs_wfile *f)
{
    s3_wfile *w = (s3_wfile *)f;
    abort_upload(w);
    wfree(w);
}

static const hs_wfile_vtbl s3_wvtbl = { s3_wwrite, s3_wclose, s3_wabort };

hs_status hs_s3_create(const char *uri, int flags, hs_wfile **out, hs_error *err)
{
    *out = NULL;
    s3_wfile *w = hs_calloc(1, sizeof *w);
    if (!w || !(w->uri = hs_strdup(uri))) {
        hs_free(w);
        return hs_err_nomem(err, strlen(uri));
    }
    hs_status st = s3_parse_uri(w->uri, &w->loc, err);
    if (st == HS_OK && (!w->loc.key[0] || w->loc.key[strlen(w->loc.key) - 1] == '/'))
        st = hs_err_set(err, HS_INVALID, "%s: names no object (empty key or ends with '/')", uri);
    if (st != HS_OK) {
        wfree(w);
        return st;
    }
    w->base.vt = &s3_wvtbl;
    w->base.name = w->uri;   /* freed by wfree, once */
    w->exclusive = (flags & HS_WFILE_EXCLUSIVE) != 0;
    *out = &w->base;
    return HS_OK;
}

/* ---- listing --------------------------------------------------------------------- */

static hs_status push_name(char ***v, size_t *n, size_t *cap, const char *s, size_t len,
                           hs_error *err)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        char **nv = hs_realloc(*v, nc * sizeof *nv);
        if (!nv)
            return hs_err_nomem(err, nc * sizeof *nv);
        *v = nv;
        *cap = nc;
    }
    if (!((*v)[*n] = hs_strndup(s, len)))
        return hs_err_nomem(err, len);
    (*n)++;
    return HS_OK;
}

static hs_status push_entry(hs_io_entry **v, size_t *n, size_t *cap, const char *s,
                            uint64_t size, int64_t mtime_ms, hs_error *err)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        hs_io_entry *nv = hs_realloc(*v, nc * sizeof *nv);
        if (!nv)
            return hs_err_nomem(err, nc * sizeof *nv);
        *v = nv;
        *cap = nc;
    }
    if (!((*v)[*n].name = hs_strdup(s)))
        return hs_err_nomem(err, strlen(s));
    (*v)[*n].size = size;
    (*v)[*n].mtime_ms = mtime_ms;
    (*n)++;
    return HS_OK;
}

/* ListObjectsV2 page after page: names into *names (objects and, unless
 * recursive, common prefixes), or, when entries is not NULL, objects with
 * their size and Last-Modified into *entries. */
static hs_status list_impl(const char *uri, bool recursive, char ***names, hs_io_entry **entries,
                           size_t *n_out, hs_error *err)
{
    if (names)
        *names = NULL;
    if (entries)
        *entries = NULL;
    *n_out = 0;
    hs_io_entry *ev = NULL;
    s3_loc loc;
    HS_TRY(s3_parse_uri(uri, &loc, err));
    hs_buf prefix = { 0 };
    if (hs_buf_puts(&prefix, loc.key) != HS_OK)
        return hs_err_nomem(err, strlen(loc.key));
    if (prefix.len && prefix.data[prefix.len - 1] != '/' &&
        hs_buf_append_byte(&prefix, '/') != HS_OK) {
        hs_buf_free(&prefix);
        return hs_err_nomem(err, 1);
    }
    const char *pfx = hs_buf_cstr(&prefix);
    size_t plen = prefix.len;
    char **v = NULL, *token = NULL;
    size_t n = 0, cap = 0;
    hs_status st = HS_OK;
    hs_buf q = { 0 }, body = { 0 };
    int max_keys = (int)s3_env_int("HS_S3_LIST_MAX_KEYS", 0, 1, 1000);   /* tests: small pages */
    for (int page = 0; st == HS_OK; page++) {
        hs_buf_reset(&q);
        if ((token && (hs_buf_puts(&q, "continuation-token=") != HS_OK ||
                       s3_url_encode(&q, token, false) != HS_OK || hs_buf_puts(&q, "&") != HS_OK)) ||
            (!recursive && hs_buf_puts(&q, "delimiter=%2F&") != HS_OK) ||
            hs_buf_puts(&q, "list-type=2&") != HS_OK ||
            (max_keys && hs_buf_printf(&q, "max-keys=%d&", max_keys) != HS_OK) ||
            hs_buf_puts(&q, "prefix=") != HS_OK || s3_url_encode(&q, pfx, false) != HS_OK) {
            st = hs_err_nomem(err, 64);
            break;
        }
        s3_req r = { 0 };
        r.method = "GET";
        r.bucket = loc.bucket;
        r.key = "";
        r.query = hs_buf_cstr(&q);
        r.resp = &body;
        st = s3_do(&r, uri, err);
        if (st == HS_OK && r.status == 404)
            st = s3_http_error(&r, uri, err);   /* NoSuchBucket */
        else if (st == HS_OK && !s3_ok2xx(&r))
            st = s3_http_error(&r, uri, err);
        s3_req_done(&r);
        s3_list_page pg = { 0 };
        if (st == HS_OK)
            st = s3_parse_list((const char *)body.data, body.len, &pg, err);
        for (size_t i = 0; st == HS_OK && i < pg.n_keys; i++) {
            const char *k = pg.keys[i];
            if (strncmp(k, pfx, plen) != 0 || !k[plen])
                continue;   /* the "directory marker" itself, or outside the prefix */
            st = entries ? push_entry(&ev, &n, &cap, k + plen, pg.sizes[i], pg.mtimes_ms[i], err)
                         : push_name(&v, &n, &cap, k + plen, strlen(k + plen), err);
        }
        for (size_t i = 0; st == HS_OK && !entries && i < pg.n_prefixes; i++) {
            const char *k = pg.prefixes[i];
            size_t kl = strlen(k);
            if (strncmp(k, pfx, plen) != 0 || kl <= plen)
                continue;
            if (k[kl - 1] == '/')
                kl--;
            st = push_name(&v, &n, &cap, k + plen, kl - plen, err);
        }
        bool more = st == HS_OK && pg.truncated && pg.next_token && pg.next_token[0];
        hs_free(token);
        token = more ? pg.next_token : NULL;
        if (more)
            pg.next_token = NULL;
        s3_list_page_free(&pg);
        if (!more)
            break;
        if (page > 1000000) {
            st = hs_err_set(err, HS_IO, "%s: listing does not end", uri);
            break;
        }
    }
    hs_free(token);
    hs_buf_free(&q);
    hs_buf_free(&body);
    hs_buf_free(&prefix);
    if (st != HS_OK) {
        for (size_t i = 0; v && i < n; i++)
            hs_free(v[i]);
        hs_free(v);
        hs_io_entries_free(ev, n);
        return st;
    }
    if (entries)
        *entries = ev;
    else
        *names = v;
    *n_out = n;
    return HS_OK;
}

hs_status hs_s3_list(const char *uri, bool recursive, char ***names, size_t *n, hs_error *err)
{
    return list_impl(uri, recursive, names, NULL, n, err);
}

hs_status hs_s3_list_entries(const char *uri, hs_io_entry **out, size_t *n, hs_error *err)
{
    return list_impl(uri, true, NULL, out, n, err);
}

/*
 * base/compress.c - block codecs for Parquet pages and other blobs.
 *
 *   codec       compress                    decompress                 default level
 *   ---------   -------------------------   ------------------------   -------------
 *   none        copy                        copy (lengths must match)  -
 *   snappy      snappy_compress             length check, uncompress   -
 *   gzip        deflate, gzip header        inflate (gzip or zlib      9 (Arrow's
 *               (windowBits 31, memLevel 9) header), concatenated      kGZipDefault-
 *                                           members                    CompressionLevel)
 *   zstd        ZSTD_compressCCtx           ZSTD_decompressDCtx        1 (Arrow's default,
 *                                           (all frames)               pa.Codec.default_
 *                                                                      compression_level)
 *   lz4_raw     LZ4_compress_default        LZ4_decompress_safe        - (LZ4 "fast" 1)
 *   lz4_hadoop  one Hadoop frame            Hadoop frames, else one    -
 *               (tests / interop)           raw block (see below)
 *   brotli      BrotliEncoderCompress       BrotliDecoderDecompress    8 (Arrow's default)
 *   lzo         HS_UNSUPPORTED              HS_UNSUPPORTED
 *
 * Hadoop LZ4 framing (parquet-mr's LZ4 codec), repeated until the input ends:
 *
 *   offset  size  field
 *   0       4     decompressed size of this block, u32 big-endian
 *   4       4     compressed size of this block, u32 big-endian
 *   8       csize raw LZ4 block
 *
 * Like Arrow (Lz4HadoopCodec), if the input does not parse as such frames that
 * exactly fill the output, it is retried as a single raw LZ4 block, because
 * older parquet-cpp wrote raw blocks under the LZ4 codec id.
 *
 * Decompression contract: exactly dst_len bytes are produced, or HS_CORRUPT
 * with a message naming the codec and both sizes; no decoder writes past
 * dst + dst_len and every input is treated as hostile (snappy's declared
 * length is checked before decoding; lz4/brotli/zstd/zlib are bounded by
 * their safe APIs).
 *
 * zstd contexts are cached per thread (creating one per page costs an
 * allocation of hundreds of KiB).  They are allocated by libzstd itself, not
 * through hs_malloc, because they outlive any one call and would otherwise
 * show up in callers' leak counts; a pthread key destructor frees them when a
 * thread exits, and an atexit handler frees the main thread's.  zlib's state
 * goes through hs_malloc so out-of-memory injection reaches it.
 */
#include "base/compress.h"
#include "base/mem.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <limits.h>
#include <lz4.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#define GZIP_DEFAULT_LEVEL 9
#define ZSTD_DEFAULT_LEVEL 1
#define BROTLI_DEFAULT_LEVEL 8

/* ---- names ------------------------------------------------------------- */

const char *hs_codec_name(hs_codec c)
{
    switch (c) {
    case HS_CODEC_NONE: return "none";
    case HS_CODEC_SNAPPY: return "snappy";
    case HS_CODEC_GZIP: return "gzip";
    case HS_CODEC_LZO: return "lzo";
    case HS_CODEC_BROTLI: return "brotli";
    case HS_CODEC_LZ4_HADOOP: return "lz4_hadoop";
    case HS_CODEC_ZSTD: return "zstd";
    case HS_CODEC_LZ4_RAW: return "lz4_raw";
    }
    return "unknown";
}

hs_status hs_codec_parse(const char *name, hs_codec *out, hs_error *err)
{
    static const struct { const char *name; hs_codec codec; } names[] = {
        { "none", HS_CODEC_NONE },       { "uncompressed", HS_CODEC_NONE },
        { "snappy", HS_CODEC_SNAPPY },   { "gzip", HS_CODEC_GZIP },
        { "zstd", HS_CODEC_ZSTD },       { "lz4_raw", HS_CODEC_LZ4_RAW },
        { "lz4", HS_CODEC_LZ4_RAW },     /* as pyarrow: "lz4" writes LZ4_RAW */
        { "brotli", HS_CODEC_BROTLI },   { "lzo", HS_CODEC_LZO },
        { "lz4_hadoop", HS_CODEC_LZ4_HADOOP },
    };
    if (name) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            if (strcasecmp(name, names[i].name) == 0) {
                *out = names[i].codec;
                return HS_OK;
            }
        }
    }
    return hs_err_set(err, HS_INVALID,
                      "unknown compression codec '%s' (expected none, snappy, gzip, zstd, "
                      "lz4_raw, lz4 or brotli)", name ? name : "(null)");
}

/* ---- per-thread zstd contexts ------------------------------------------ */

typedef struct zstd_tls {
    ZSTD_CCtx *cctx;
    ZSTD_DCtx *dctx;
} zstd_tls;

static pthread_key_t g_zstd_key;
static pthread_once_t g_zstd_once = PTHREAD_ONCE_INIT;
static bool g_zstd_key_ok;

static void zstd_tls_free(void *p)
{
    zstd_tls *t = p;
    if (!t)
        return;
    ZSTD_freeCCtx(t->cctx);
    ZSTD_freeDCtx(t->dctx);
    free(t);
}

static void zstd_atexit(void)
{
    zstd_tls *t = pthread_getspecific(g_zstd_key);
    pthread_setspecific(g_zstd_key, NULL);
    zstd_tls_free(t);
}

static void zstd_key_init(void)
{
    g_zstd_key_ok = pthread_key_create(&g_zstd_key, zstd_tls_free) == 0;
    if (g_zstd_key_ok)
        atexit(zstd_atexit);
}

/* The calling thread's contexts, or NULL (then callers use one-shot APIs). */
static zstd_tls *zstd_tls_get(void)
{
    pthread_once(&g_zstd_once, zstd_key_init);
    if (!g_zstd_key_ok)
        return NULL;
    zstd_tls *t = pthread_getspecific(g_zstd_key);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t)
            return NULL;
        if (pthread_setspecific(g_zstd_key, t) != 0) {
            free(t);
            return NULL;
        }
    }
    return t;
}

/* ---- zlib through the allocation hook ---------------------------------- */

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return hs_calloc(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    hs_free(p);
}

/* ---- compression -------------------------------------------------------- */

static hs_status compress_gzip(int level, const uint8_t *src, size_t src_len, hs_buf *dst,
                               hs_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    zs.zalloc = z_alloc;
    zs.zfree = z_free;
    int rc = deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK)
        return rc == Z_MEM_ERROR ? hs_err_nomem(err, sizeof(z_stream))
                                 : hs_err_set(err, HS_INTERNAL, "gzip: deflateInit2 failed (%d)", rc);
    size_t bound = deflateBound(&zs, (uLong)src_len);
    if (hs_buf_reserve(dst, bound) != HS_OK) {
        deflateEnd(&zs);
        return hs_err_nomem(err, bound);
    }
    size_t in_left = src_len;
    zs.next_in = (Bytef *)src;
    zs.next_out = dst->data + dst->len;
    zs.avail_out = 0;
    size_t out_left = bound;
    do {
        if (zs.avail_in == 0) {
            zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0) {
            zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
            out_left -= zs.avail_out;
        }
        rc = deflate(&zs, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
    } while (rc == Z_OK);
    size_t produced = (size_t)(zs.next_out - (dst->data + dst->len));
    deflateEnd(&zs);
    if (rc != Z_STREAM_END)
        return hs_err_set(err, rc == Z_MEM_ERROR ? HS_NOMEM : HS_INTERNAL,
                          "gzip: deflate failed (%d) on %zu bytes", rc, src_len);
    dst->len += produced;
    return HS_OK;
}

static hs_status compress_zstd(int level, const uint8_t *src, size_t src_len, hs_buf *dst,
                               hs_error *err)
{
    size_t bound = ZSTD_compressBound(src_len);
    if (hs_buf_reserve(dst, bound) != HS_OK)
        return hs_err_nomem(err, bound);
    zstd_tls *t = zstd_tls_get();
    size_t n;
    if (t && !t->cctx)
        t->cctx = ZSTD_createCCtx();
    if (t && t->cctx)
        n = ZSTD_compressCCtx(t->cctx, dst->data + dst->len, bound, src, src_len, level);
    else
        n = ZSTD_compress(dst->data + dst->len, bound, src, src_len, level);
    if (ZSTD_isError(n))
        return hs_err_set(err, HS_INTERNAL, "zstd: compression of %zu bytes failed: %s",
                          src_len, ZSTD_getErrorName(n));
    dst->len += n;
    return HS_OK;
}

static hs_status compress_lz4_block(const uint8_t *src, size_t src_len, uint8_t *out,
                                    size_t out_cap, size_t *out_len, hs_error *err)
{
    if (src_len > LZ4_MAX_INPUT_SIZE)
        return hs_err_set(err, HS_INVALID, "lz4: input of %zu bytes exceeds LZ4's limit of %d",
                          src_len, LZ4_MAX_INPUT_SIZE);
    int n = LZ4_compress_default((const char *)src, (char *)out, (int)src_len,
                                 out_cap > INT_MAX ? INT_MAX : (int)out_cap);
    if (n <= 0)
        return hs_err_set(err, HS_INTERNAL, "lz4: compression of %zu bytes failed", src_len);
    *out_len = (size_t)n;
    return HS_OK;
}

static void put_u32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get_u32be(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

hs_status hs_compress(hs_codec c, int level, const void *src_v, size_t src_len, hs_buf *dst,
                      hs_error *err)
{
    static const uint8_t empty[1];
    const uint8_t *src = src_v ? src_v : empty;
    if (!src_v && src_len)
        return hs_err_set(err, HS_INVALID, "compress: NULL buffer with a non-zero length");
    switch (c) {
    case HS_CODEC_NONE:
        if (hs_buf_append(dst, src, src_len) != HS_OK)
            return hs_err_nomem(err, src_len);
        return HS_OK;
    case HS_CODEC_SNAPPY: {
        size_t bound = snappy_max_compressed_length(src_len);
        if (hs_buf_reserve(dst, bound) != HS_OK)
            return hs_err_nomem(err, bound);
        size_t n = bound;
        if (snappy_compress((const char *)src, src_len, (char *)dst->data + dst->len, &n) !=
            SNAPPY_OK)
            return hs_err_set(err, HS_INTERNAL, "snappy: compression of %zu bytes failed",
                              src_len);
        dst->len += n;
        return HS_OK;
    }
    case HS_CODEC_GZIP:
        return compress_gzip(level > 0 ? (level > 9 ? 9 : level) : GZIP_DEFAULT_LEVEL, src,
                             src_len, dst, err);
    case HS_CODEC_ZSTD:
        return compress_zstd(level > 0 ? level : ZSTD_DEFAULT_LEVEL, src, src_len, dst, err);
    case HS_CODEC_LZ4_RAW: {
        size_t bound = (size_t)LZ4_compressBound(src_len > LZ4_MAX_INPUT_SIZE ? 0 : (int)src_len);
        if (hs_buf_reserve(dst, bound) != HS_OK)
            return hs_err_nomem(err, bound);
        size_t n;
        HS_TRY(compress_lz4_block(src, src_len, dst->data + dst->len, bound, &n, err));
        dst->len += n;
        return HS_OK;
    }
    case HS_CODEC_LZ4_HADOOP: {
        size_t bound = (size_t)LZ4_compressBound(src_len > LZ4_MAX_INPUT_SIZE ? 0 : (int)src_len);
        if (hs_buf_reserve(dst, bound + 8) != HS_OK)
            return hs_err_nomem(err, bound + 8);
        size_t n;
        HS_TRY(compress_lz4_block(src, src_len, dst->data + dst->len + 8, bound, &n, err));
        put_u32be(dst->data + dst->len, (uint32_t)src_len);
        put_u32be(dst->data + dst->len + 4, (uint32_t)n);
        dst->len += 8 + n;
        return HS_OK;
    }
    case HS_CODEC_BROTLI: {
        size_t bound = BrotliEncoderMaxCompressedSize(src_len);
        if (bound == 0)
            bound = src_len + 1024;  /* "too large to say": fall back to a guess */
        if (hs_buf_reserve(dst, bound) != HS_OK)
            return hs_err_nomem(err, bound);
        size_t n = bound;
        int quality = level > 0 ? (level > 11 ? 11 : level) : BROTLI_DEFAULT_LEVEL;
        if (!BrotliEncoderCompress(quality, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, src_len,
                                   src, &n, dst->data + dst->len))
            return hs_err_set(err, HS_INTERNAL, "brotli: compression of %zu bytes failed",
                              src_len);
        dst->len += n;
        return HS_OK;
    }
    case HS_CODEC_LZO:
        return hs_err_set(err, HS_UNSUPPORTED, "lzo: codec not supported");
    }
    return hs_err_set(err, HS_INVALID, "compress: unknown codec id %d", (int)c);
}

/* ---- decompression ------------------------------------------------------ */

static hs_status size_mismatch(hs_error *err, const char *codec, size_t got, size_t want)
{
    return HS_CORRUPT_AT(err, "%s: decompressed %zu bytes, expected %zu", codec, got, want);
}

static hs_status decompress_gzip(const uint8_t *src, size_t src_len, uint8_t *dst,
                                 size_t dst_len, hs_error *err)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    zs.zalloc = z_alloc;
    zs.zfree = z_free;
    /* 15 + 32: accept a gzip or a zlib header. */
    int rc = inflateInit2(&zs, 15 + 32);
    if (rc != Z_OK)
        return rc == Z_MEM_ERROR ? hs_err_nomem(err, sizeof(z_stream))
                                 : hs_err_set(err, HS_INTERNAL, "gzip: inflateInit2 failed (%d)", rc);
    size_t in_left = src_len, out_left = dst_len;
    zs.next_in = (Bytef *)src;
    zs.next_out = dst;
    hs_status st = HS_OK;
    for (;;) {
        if (zs.avail_in == 0 && in_left > 0) {
            zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (zs.avail_out == 0 && out_left > 0) {
            zs.avail_out = out_left > UINT_MAX ? UINT_MAX : (uInt)out_left;
            out_left -= zs.avail_out;
        }
        rc = inflate(&zs, Z_NO_FLUSH);
        size_t produced = (size_t)(zs.next_out - dst);
        bool input_left = zs.avail_in > 0 || in_left > 0;
        if (rc == Z_STREAM_END) {
            /* A member ended.  Output complete: done (trailing padding is
             * ignored, as gzip(1) does).  Otherwise another member follows. */
            if (produced == dst_len)
                break;
            if (!input_left) {
                st = size_mismatch(err, "gzip", produced, dst_len);
                break;
            }
            if (inflateReset(&zs) != Z_OK) {
                st = hs_err_set(err, HS_INTERNAL, "gzip: inflateReset failed");
                break;
            }
            continue;
        }
        if (rc == Z_OK)
            continue;
        if (rc == Z_BUF_ERROR) {
            if ((zs.avail_out == 0 && out_left > 0) || (zs.avail_in == 0 && in_left > 0))
                continue;  /* the next round adds input or output room */
            if (produced == dst_len && input_left)
                st = HS_CORRUPT_AT(err, "gzip: data decompresses to more than the expected %zu bytes",
                                   dst_len);
            else if (produced == dst_len)
                st = HS_CORRUPT_AT(err, "gzip: input truncated: stream ends before its trailer "
                                   "(%zu bytes decompressed)", produced);
            else
                st = HS_CORRUPT_AT(err, "gzip: input truncated: decompressed %zu bytes, expected %zu",
                                   produced, dst_len);
            break;
        }
        if (rc == Z_MEM_ERROR)
            st = hs_err_nomem(err, 32768);
        else
            st = HS_CORRUPT_AT(err, "gzip: invalid compressed data after %zu input bytes: %s",
                               (size_t)(zs.next_in - src), zs.msg ? zs.msg : "inflate error");
        break;
    }
    inflateEnd(&zs);
    return st;
}

static hs_status decompress_zstd(const uint8_t *src, size_t src_len, uint8_t *dst,
                                 size_t dst_len, hs_error *err)
{
    zstd_tls *t = zstd_tls_get();
    size_t n;
    if (t && !t->dctx)
        t->dctx = ZSTD_createDCtx();
    if (t && t->dctx)
        n = ZSTD_decompressDCtx(t->dctx, dst, dst_len, src, src_len);
    else
        n = ZSTD_decompress(dst, dst_len, src, src_len);
    if (ZSTD_isError(n)) {
        if (ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation)
            return hs_err_nomem(err, 0);
        return HS_CORRUPT_AT(err, "zstd: %s (%zu compressed bytes, expected %zu decompressed)",
                             ZSTD_getErrorName(n), src_len, dst_len);
    }
    if (n != dst_len)
        return size_mismatch(err, "zstd", n, dst_len);
    return HS_OK;
}

/* One raw LZ4 block into exactly dst_len bytes; -1 when that fails. */
static int lz4_block(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len)
{
    if (src_len > INT_MAX || dst_len > INT_MAX)
        return -1;
    return LZ4_decompress_safe((const char *)src, (char *)dst, (int)src_len, (int)dst_len);
}

static hs_status decompress_lz4_raw(const uint8_t *src, size_t src_len, uint8_t *dst,
                                    size_t dst_len, hs_error *err)
{
    if (src_len > INT_MAX || dst_len > INT_MAX)
        return HS_CORRUPT_AT(err, "lz4: block of %zu bytes to %zu bytes exceeds LZ4's 2 GiB limit",
                             src_len, dst_len);
    int n = lz4_block(src, src_len, dst, dst_len);
    if (n < 0)
        return HS_CORRUPT_AT(err, "lz4: invalid block (%zu compressed bytes, expected %zu "
                             "decompressed; error at input offset %d)", src_len, dst_len, -n - 1);
    if ((size_t)n != dst_len)
        return size_mismatch(err, "lz4", (size_t)n, dst_len);
    return HS_OK;
}

/* Hadoop frames that consume all input and fill exactly dst_len; false otherwise. */
static bool lz4_hadoop_frames(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_len)
{
    size_t in = 0, out = 0;
    if (src_len < 8)
        return false;
    while (src_len - in >= 8) {
        size_t dsize = get_u32be(src + in), csize = get_u32be(src + in + 4);
        in += 8;
        if (csize > src_len - in || dsize > dst_len - out)
            return false;
        int n = lz4_block(src + in, csize, dst + out, dsize);
        if (n < 0 || (size_t)n != dsize)
            return false;
        in += csize;
        out += dsize;
    }
    return in == src_len && out == dst_len;
}

static hs_status decompress_brotli(const uint8_t *src, size_t src_len, uint8_t *dst,
                                   size_t dst_len, hs_error *err)
{
    size_t n = dst_len;
    BrotliDecoderResult r = BrotliDecoderDecompress(src_len, src, &n, dst);
    if (r != BROTLI_DECODER_RESULT_SUCCESS) {
        if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT)
            return HS_CORRUPT_AT(err, "brotli: data decompresses to more than the expected %zu bytes",
                                 dst_len);
        return HS_CORRUPT_AT(err, "brotli: invalid or truncated data (%zu compressed bytes, "
                             "expected %zu decompressed)", src_len, dst_len);
    }
    if (n != dst_len)
        return size_mismatch(err, "brotli", n, dst_len);
    return HS_OK;
}

hs_status hs_decompress(hs_codec c, const void *src_v, size_t src_len, void *dst_v,
                        size_t dst_len, hs_error *err)
{
    static const uint8_t empty_in[1];
    uint8_t empty_out[1];
    const uint8_t *src = src_v && src_len ? src_v : empty_in;
    uint8_t *dst = dst_v && dst_len ? dst_v : empty_out;
    if ((!src_v && src_len) || (!dst_v && dst_len))
        return hs_err_set(err, HS_INVALID, "decompress: NULL buffer with a non-zero length");
    switch (c) {
    case HS_CODEC_NONE:
        if (src_len != dst_len)
            return HS_CORRUPT_AT(err, "uncompressed: %zu bytes stored, expected %zu", src_len,
                                 dst_len);
        if (dst_len)
            memcpy(dst, src, dst_len);
        return HS_OK;
    case HS_CODEC_SNAPPY: {
        size_t declared;
        if (snappy_uncompressed_length((const char *)src, src_len, &declared) != SNAPPY_OK)
            return HS_CORRUPT_AT(err, "snappy: invalid length header in %zu compressed bytes",
                                 src_len);
        if (declared != dst_len)
            return HS_CORRUPT_AT(err, "snappy: data declares %zu decompressed bytes, expected %zu",
                                 declared, dst_len);
        size_t n = dst_len;
        if (snappy_uncompress((const char *)src, src_len, (char *)dst, &n) != SNAPPY_OK)
            return HS_CORRUPT_AT(err, "snappy: invalid compressed data (%zu bytes, expected %zu "
                                 "decompressed)", src_len, dst_len);
        if (n != dst_len)
            return size_mismatch(err, "snappy", n, dst_len);
        return HS_OK;
    }
    case HS_CODEC_GZIP:
        return decompress_gzip(src, src_len, dst, dst_len, err);
    case HS_CODEC_ZSTD:
        return decompress_zstd(src, src_len, dst, dst_len, err);
    case HS_CODEC_LZ4_RAW:
        return decompress_lz4_raw(src, src_len, dst, dst_len, err);
    case HS_CODEC_LZ4_HADOOP:
        if (lz4_hadoop_frames(src, src_len, dst, dst_len))
            return HS_OK;
        if (decompress_lz4_raw(src, src_len, dst, dst_len, NULL) == HS_OK)
            return HS_OK;
        return HS_CORRUPT_AT(err, "lz4_hadoop: %zu bytes are neither Hadoop LZ4 frames nor a raw "
                             "LZ4 block of %zu decompressed bytes", src_len, dst_len);
    case HS_CODEC_BROTLI:
        return decompress_brotli(src, src_len, dst, dst_len, err);
    case HS_CODEC_LZO:
        return hs_err_set(err, HS_UNSUPPORTED, "lzo: codec not supported");
    }
    return hs_err_set(err, HS_INVALID, "decompress: unknown codec id %d", (int)c);
}

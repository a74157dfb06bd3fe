/*
 * base/compress.h - block compression codecs.
 *
 * The codec ids are our own; parquet/ maps Parquet's CompressionCodec to them.
 * Compression: none, snappy, gzip (zlib, gzip framing), zstd, lz4_raw (the
 * LZ4 block format), lz4_hadoop (write not needed).  Decompression also: brotli,
 * lz4_hadoop (Hadoop's framing: big-endian u32 decompressed size, u32
 * compressed size, block; repeated) with a fallback to raw LZ4 blocks as
 * parquet-mr and Arrow do, and gzip with concatenated members.
 *
 * Decompression needs the exact decompressed size (Parquet page headers carry
 * it); a mismatch is HS_CORRUPT.  Inputs are untrusted: every decoder is given
 * both lengths and never writes past `dst_len`.
 */
#ifndef HS_BASE_COMPRESS_H
#define HS_BASE_COMPRESS_H

#include "base/buf.h"
#include "base/error.h"

typedef enum hs_codec {
    HS_CODEC_NONE = 0,
    HS_CODEC_SNAPPY,
    HS_CODEC_GZIP,
    HS_CODEC_LZO,       /* recognised, always HS_UNSUPPORTED */
    HS_CODEC_BROTLI,    /* decompress only */
    HS_CODEC_LZ4_HADOOP,/* decompress only */
    HS_CODEC_ZSTD,
    HS_CODEC_LZ4_RAW
} hs_codec;

const char *hs_codec_name(hs_codec c);          /* "zstd" */
/* Parses "none|uncompressed|snappy|gzip|zstd|lz4_raw|lz4|brotli" (case-insensitive). */
HS_MUST_USE hs_status hs_codec_parse(const char *name, hs_codec *out, hs_error *err);

/* Appends the compressed form of src to dst.  level <= 0 means the codec's
 * default, chosen to match Arrow's defaults so file sizes compare fairly. */
HS_MUST_USE hs_status hs_compress(hs_codec c, int level, const void *src, size_t src_len,
                                  hs_buf *dst, hs_error *err);
/* Decompresses exactly dst_len bytes into dst (caller-allocated). */
HS_MUST_USE hs_status hs_decompress(hs_codec c, const void *src, size_t src_len,
                                    void *dst, size_t dst_len, hs_error *err);

#endif

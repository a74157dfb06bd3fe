/*
 * base/hash.h - checksums and hashes: CRC-32 (IEEE, zlib's polynomial, as
 * Parquet page checksums and Puffin use), xxhash64 (libxxhash; Parquet bloom
 * filters use seed 0), murmur3 32-bit x86 (Iceberg bucket transform).
 */
#ifndef HS_BASE_HASH_H
#define HS_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

uint32_t hs_crc32(uint32_t crc, const void *p, size_t n); /* start with crc = 0 */
uint64_t hs_xxh64(const void *p, size_t n, uint64_t seed);
uint32_t hs_murmur3_32(const void *p, size_t n, uint32_t seed);

#endif

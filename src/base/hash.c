/*
 * base/hash.c - checksums and hashes.
 *
 *   hs_crc32       CRC-32/IEEE (zlib's crc32; Parquet page CRC, Puffin, gzip)
 *   hs_xxh64       XXH64 from libxxhash (Parquet bloom filters: seed 0)
 *   hs_murmur3_32  MurmurHash3_x86_32 (Iceberg bucket transform; the spec's
 *                  vectors: int 34 hashed as its 8-byte little-endian long ->
 *                  2017239379, "iceberg" -> 1210000089, seed 0)
 *
 * murmur3 reads its input bytewise as little-endian words, so results do not
 * depend on host byte order or alignment.
 */
#include "base/hash.h"

#include <limits.h>
#include <xxhash.h>
#include <zlib.h>

uint32_t hs_crc32(uint32_t crc, const void *p, size_t n)
{
    const Bytef *b = p;
    /* zlib takes uInt lengths: feed it in pieces. */
    while (n > 0) {
        uInt piece = n > (size_t)UINT_MAX ? UINT_MAX : (uInt)n;
        crc = (uint32_t)crc32(crc, b, piece);
        b += piece;
        n -= piece;
    }
    return crc;
}

uint64_t hs_xxh64(const void *p, size_t n, uint64_t seed)
{
    return (uint64_t)XXH64(p, n, (XXH64_hash_t)seed);
}

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

uint32_t hs_murmur3_32(const void *p, size_t n, uint32_t seed)
{
    const uint8_t *data = p;
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h1 = seed;
    size_t nblocks = n / 4;
    for (size_t i = 0; i < nblocks; i++) {
        const uint8_t *b = data + 4 * i;
        uint32_t k1 = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                      (uint32_t)b[3] << 24;
        k1 *= c1;
        k1 = rotl32(k1, 15);
        k1 *= c2;
        h1 ^= k1;
        h1 = rotl32(h1, 13);
        h1 = h1 * 5 + 0xe6546b64u;
    }
    const uint8_t *tail = data + 4 * nblocks;
    uint32_t k1 = 0;
    switch (n & 3) {
    case 3: k1 ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1:
        k1 ^= tail[0];
        k1 *= c1;
        k1 = rotl32(k1, 15);
        k1 *= c2;
        h1 ^= k1;
    }
    h1 ^= (uint32_t)n;
    h1 ^= h1 >> 16;
    h1 *= 0x85ebca6bu;
    h1 ^= h1 >> 13;
    h1 *= 0xc2b2ae35u;
    h1 ^= h1 >> 16;
    return h1;
}

/*
 * base/memlimit.h - the decode memory limit (implemented in mem.c beside the
 * allocation hook).
 *
 * A decoder of bytes from disk or the network (Avro records and containers,
 * Puffin, index sidecars, HNSW and quantizer images, the index registry) may
 * allocate at most
 *
 *     hs_decode_limit(input_len) = floor + per_byte * input_len   (saturating)
 *
 * while it decodes input_len bytes, so that a small hostile file cannot ask
 * for gigabytes.  Decoders keep a hs_decode_budget and charge it before
 * every allocation whose size comes from the input; past the limit they fail
 * with HS_CORRUPT and a message naming the limit (a corrupt index then
 * degrades to a scan like any other).  Defaults: 64 MiB + 128 bytes per
 * input byte: the largest legitimate expansion is Avro's (a 1-byte int
 * becomes a 32-byte value; a manifest's values take 10-15 times its bytes,
 * and an Avro reader counts a compressed file as 32 times its size).  The settings are base/config's "decode_limit_mb" (floor,
 * MiB) and "decode_limit_per_byte" (public: hs_config_set; environment
 * HS_DECODE_LIMIT_MB, HS_DECODE_LIMIT_PER_BYTE, read once);
 * hs_decode_limit_set overrides both with byte-exact values until either
 * setting changes.  Thread-safe. */
#ifndef HS_BASE_MEMLIMIT_H
#define HS_BASE_MEMLIMIT_H

#include "base/error.h"

#include <stdint.h>

void hs_decode_limit_set(uint64_t floor_bytes, uint64_t per_input_byte);
void hs_decode_limit_get(uint64_t *floor_bytes, uint64_t *per_input_byte);
uint64_t hs_decode_limit(uint64_t input_len);

typedef struct hs_decode_budget {
    uint64_t input;  /* input bytes the limit was computed for */
    uint64_t limit;  /* hs_decode_limit(input) */
    uint64_t used;   /* bytes charged so far */
} hs_decode_budget;

void hs_decode_budget_init(hs_decode_budget *b, uint64_t input_len);

/* Charges n bytes; past the limit returns HS_CORRUPT: "<what>: decoding N
 * input bytes needs more than L bytes of memory (the decode memory limit:
 * ...)", recording the caller's source line.  Use HS_DECODE_CHARGE. */
HS_MUST_USE hs_status hs_decode_charge_at(hs_decode_budget *b, uint64_t n, hs_error *err,
                                          const char *what, const char *file, int line);
#define HS_DECODE_CHARGE(b, n, err, what) \
    hs_decode_charge_at((b), (n), (err), (what), __FILE__, __LINE__)

#endif

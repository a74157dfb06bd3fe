/*
 * iceberg/puffin.c - Puffin files and deletion-vector-v1 blobs.
 *
 * Puffin file (Iceberg puffin-spec.md):
 *
 *   offset        bytes  content
 *   0             4      magic "PFA1" (50 46 41 31)
 *   4             ...    blob 0, blob 1, ... (positions given by the footer)
 *   F             4      footer magic "PFA1"
 *   F+4           P      FooterPayload: UTF-8 JSON FileMetadata
 *                          {"blobs":[{"type","fields","snapshot-id",
 *                            "sequence-number","offset","length",
 *                            "compression-codec"?, "properties"?}],
 *                           "properties":{"created-by":...}}
 *   F+4+P         4      P, little-endian signed int32
 *   F+8+P         4      flags; byte 0 bit 0 = payload compressed (we write 0)
 *   F+12+P        4      magic "PFA1"    (file size = F + 16 + P)
 *
 * deletion-vector-v1 blob (uncompressed; compression-codec must be absent):
 *
 *   bytes  content
 *   4      big-endian uint32 L = length of (magic + vector)
 *   4      magic D1 D3 39 64
 *   L-4    vector: 64-bit roaring bitmap, "portable" 64-bit serialization:
 *            8 bytes  little-endian count of 32-bit buckets
 *            per bucket, keys ascending:
 *              4 bytes  little-endian high 32 bits of the positions
 *              CRoaring portable serialization of a 32-bit bitmap
 *   4      big-endian CRC-32 (IEEE) of magic + vector
 *
 * Positions here are < 2^32, so a vector has at most the bucket of key 0.
 * Libroaring 0.2.66 (Debian) has no roaring64 and no validate(); the reader
 * walks the 32-bit portable format itself first (rb_check below: keys and
 * array values strictly ascending, runs in range and disjoint, bitset
 * popcount equal to the declared cardinality), which also tells how many
 * bytes the bitmap uses, then calls roaring_bitmap_portable_deserialize_safe.
 *
 * 32-bit portable format (RoaringFormatSpec), checked by rb_check:
 *   cookie u32 LE: 12346 -> u32 container count follows, no run containers;
 *                  (cookie & 0xFFFF) == 12347 -> count = (cookie >> 16) + 1,
 *                  then a bitset of ceil(count/8) bytes marking run containers
 *   per container: u16 key, u16 cardinality-1
 *   offsets: u32 per container, present for cookie 12346 or count >= 4
 *   containers: run -> u16 n_runs + n_runs * (u16 start, u16 length-1);
 *               cardinality <= 4096 -> sorted u16 array; else 8192-byte bitset
 */
#include "iceberg/puffin.h"

#include "base/hash.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t dv_magic[4] = {0xD1, 0xD3, 0x39, 0x64};

static uint32_t rd_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t rd_u32be(const uint8_t *p)
{
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}
static uint16_t rd_u16le(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr_u32be(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

/* ---- 32-bit portable roaring validation ---- */

#define RB_COOKIE_NORUN 12346u
#define RB_COOKIE_RUN 12347u

static hs_status rb_check(const char *name, const uint8_t *p, size_t len, size_t *used,
                          uint64_t *card_out, hs_error *err)
{
    size_t pos = 0;
    uint32_t count;
    const uint8_t *run_bits = NULL;
    uint64_t total = 0;
    if (len < 4)
        return HS_CORRUPT_AT(err, "%s: roaring bitmap truncated (%zu bytes)", name, len);
    uint32_t cookie = rd_u32le(p);
    pos = 4;
    if (cookie == RB_COOKIE_NORUN) {
        if (len < 8)
            return HS_CORRUPT_AT(err, "%s: roaring bitmap truncated in its header", name);
        count = rd_u32le(p + 4);
        pos = 8;
    } else if ((cookie & 0xFFFF) == RB_COOKIE_RUN) {
        count = (cookie >> 16) + 1;
        size_t nb = (count + 7) / 8;
        if (len - pos < nb)
            return HS_CORRUPT_AT(err, "%s: roaring bitmap truncated in its run flags", name);
        run_bits = p + pos;
        pos += nb;
    } else {
        return HS_CORRUPT_AT(err, "%s: roaring bitmap has unknown cookie %u", name, cookie);
    }
    if (count > 65536)
        return HS_CORRUPT_AT(err, "%s: roaring bitmap claims %u containers", name, count);
    if ((len - pos) / 4 < count)
        return HS_CORRUPT_AT(err, "%s: roaring bitmap truncated in its key table", name);
    const uint8_t *desc = p + pos;
    pos += (size_t)count * 4;
    if (run_bits == NULL || count >= 4) {
        if ((len - pos) / 4 < count)
            return HS_CORRUPT_AT(err, "%s: roaring bitmap truncated in its offsets", name);
        pos += (size_t)count * 4;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t key = rd_u16le(desc + 4 * i);
        uint32_t card = (uint32_t)rd_u16le(desc + 4 * i + 2) + 1;
        if (i > 0 && key <= rd_u16le(desc + 4 * (i - 1)))
            return HS_CORRUPT_AT(err, "%s: roaring container keys not ascending", name);
        bool is_run = run_bits && (run_bits[i / 8] >> (i % 8)) & 1;
        if (is_run) {
            if (len - pos < 2)
                return HS_CORRUPT_AT(err, "%s: roaring run container truncated", name);
            uint32_t n_runs = rd_u16le(p + pos);
            pos += 2;
            if ((len - pos) / 4 < n_runs)
                return HS_CORRUPT_AT(err, "%s: roaring run container truncated", name);
            uint32_t sum = 0;
            int64_t prev_end = -1;
            for (uint32_t r = 0; r < n_runs; r++) {
                uint32_t start = rd_u16le(p + pos + 4 * r);
                uint32_t lm1 = rd_u16le(p + pos + 4 * r + 2);
                if ((int64_t)start <= prev_end || start + lm1 > 65535)
                    return HS_CORRUPT_AT(err, "%s: roaring run container has bad run %u", name, r);
                prev_end = start + lm1;
                sum += lm1 + 1;
            }
            if (sum != card)
                return HS_CORRUPT_AT(err, "%s: roaring run container holds %u values, header says %u",
                                     name, sum, card);
            pos += (size_t)n_runs * 4;
        } else if (card <= 4096) {
            if ((len - pos) / 2 < card)
                return HS_CORRUPT_AT(err, "%s: roaring array container truncated", name);
            for (uint32_t j = 1; j < card; j++)
                if (rd_u16le(p + pos + 2 * j) <= rd_u16le(p + pos + 2 * (j - 1)))
                    return HS_CORRUPT_AT(err, "%s: roaring array container not ascending", name);
            pos += (size_t)card * 2;
        } else {
            if (len - pos < 8192)
                return HS_CORRUPT_AT(err, "%s: roaring bitset container truncated", name);
            uint32_t pop = 0;
            for (int w = 0; w < 1024; w++) {
                uint64_t word;
                memcpy(&word, p + pos + 8 * w, 8);
                pop += (uint32_t)__builtin_popcountll(word);
            }
            if (pop != card)
                return HS_CORRUPT_AT(err, "%s: roaring bitset container holds %u values, header says %u",
                                     name, pop, card);
            pos += 8192;
        }
        total += card;
    }
    *used = pos;
    *card_out = total;
    return HS_OK;
}

/* ---- deletion vector blobs ---- */

/* libroaring 0.2.66's roaring_bitmap_free does not accept NULL. */
static void rb_free(roaring_bitmap_t *r)
{
    if (r)
        roaring_bitmap_free(r);
}

hs_status ice_dv_encode(const roaring_bitmap_t *positions, hs_buf *out, hs_error *err)
{
    if (positions == NULL)
        return hs_err_set(err, HS_INVALID, "deletion vector: NULL bitmap");
    roaring_bitmap_t *copy = roaring_bitmap_copy(positions);
    if (copy == NULL)
        return hs_err_nomem(err, 0);
    roaring_bitmap_run_optimize(copy);
    bool empty = roaring_bitmap_is_empty(copy);
    size_t rb_len = empty ? 0 : roaring_bitmap_portable_size_in_bytes(copy);
    size_t vec_len = 8 + (empty ? 0 : 4 + rb_len);
    if (vec_len + 4 > UINT32_MAX) {
        roaring_bitmap_free(copy);
        return hs_err_set(err, HS_INVALID, "deletion vector: %zu bytes is too large", vec_len);
    }
    size_t start = out->len;
    hs_status s = hs_buf_resize(out, start + 4 + 4 + vec_len + 4);
    if (s != HS_OK) {
        roaring_bitmap_free(copy);
        return hs_err_nomem(err, vec_len);
    }
    uint8_t *p = out->data + start;
    wr_u32be(p, (uint32_t)(4 + vec_len));
    memcpy(p + 4, dv_magic, 4);
    uint8_t *v = p + 8;
    uint64_t n_buckets = empty ? 0 : 1;
    for (int i = 0; i < 8; i++)
        v[i] = (uint8_t)(n_buckets >> (8 * i));
    if (!empty) {
        memset(v + 8, 0, 4); /* high key 0: positions < 2^32 */
        size_t wrote = roaring_bitmap_portable_serialize(copy, (char *)(v + 12));
        if (wrote != rb_len) {
            roaring_bitmap_free(copy);
            out->len = start;
            return hs_err_set(err, HS_INTERNAL, "deletion vector: roaring wrote %zu of %zu bytes",
                              wrote, rb_len);
        }
    }
    roaring_bitmap_free(copy);
    wr_u32be(p + 8 + vec_len, hs_crc32(0, p + 4, 4 + vec_len));
    return HS_OK;
}

hs_status ice_dv_decode(const char *name, const uint8_t *buf, size_t len, roaring_bitmap_t **out,
                        hs_error *err)
{
    *out = NULL;
    if (name == NULL)
        name = "deletion vector";
    if (len < 4 + 4 + 8 + 4)
        return HS_CORRUPT_AT(err, "%s: deletion vector blob of %zu bytes is too short", name, len);
    uint32_t l = rd_u32be(buf);
    if ((size_t)l + 8 != len)
        return HS_CORRUPT_AT(err, "%s: deletion vector length field %u does not match blob length %zu",
                             name, l, len);
    if (memcmp(buf + 4, dv_magic, 4) != 0)
        return HS_CORRUPT_AT(err, "%s: deletion vector magic is not D1 D3 39 64", name);
    uint32_t crc = rd_u32be(buf + 4 + l);
    uint32_t calc = hs_crc32(0, buf + 4, l);
    if (crc != calc)
        return HS_CORRUPT_AT(err, "%s: deletion vector CRC-32 %08x, computed %08x", name, crc, calc);
    const uint8_t *v = buf + 8;
    size_t vlen = l - 4, pos = 8;
    uint64_t n_buckets = 0;
    for (int i = 0; i < 8; i++)
        n_buckets |= (uint64_t)v[i] << (8 * i);
    if (n_buckets > (vlen - 8) / 12)
        return HS_CORRUPT_AT(err, "%s: deletion vector claims %llu bitmaps in %zu bytes", name,
                             (unsigned long long)n_buckets, vlen);
    roaring_bitmap_t *result = NULL;
    int64_t last_key = -1;
    for (uint64_t b = 0; b < n_buckets; b++) {
        if (vlen - pos < 4)
            goto truncated;
        uint32_t key = rd_u32le(v + pos);
        pos += 4;
        if ((int64_t)key <= last_key) {
            rb_free(result);
            return HS_CORRUPT_AT(err, "%s: deletion vector bitmap keys not ascending", name);
        }
        last_key = key;
        size_t used = 0;
        uint64_t card = 0;
        hs_status s = rb_check(name, v + pos, vlen - pos, &used, &card, err);
        if (s != HS_OK) {
            rb_free(result);
            return s;
        }
        if (key != 0 && card > 0) {
            rb_free(result);
            return hs_err_set(err, HS_UNSUPPORTED,
                              "%s: deletion vector deletes row positions >= 2^32", name);
        }
        if (key == 0) {
            result = roaring_bitmap_portable_deserialize_safe((const char *)(v + pos), used);
            if (result == NULL)
                return HS_CORRUPT_AT(err, "%s: deletion vector bitmap does not deserialize", name);
        }
        pos += used;
    }
    if (pos != vlen) {
        rb_free(result);
        return HS_CORRUPT_AT(err, "%s: deletion vector has %zu trailing bytes", name, vlen - pos);
    }
    if (result == NULL) {
        result = roaring_bitmap_create();
        if (result == NULL)
            return hs_err_nomem(err, 64);
    }
    *out = result;
    return HS_OK;
truncated:
    rb_free(result);
    return HS_CORRUPT_AT(err, "%s: deletion vector truncated", name);
}

hs_status ice_dv_read(hs_file *f, int64_t offset, int64_t length, roaring_bitmap_t **out,
                      hs_error *err)
{
    *out = NULL;
    if (offset < 0 || length < 0 || (uint64_t)offset > f->size ||
        (uint64_t)length > f->size - (uint64_t)offset)
        return HS_CORRUPT_AT(err, "%s: deletion vector range [%lld, +%lld) outside file of %llu bytes",
                             f->name, (long long)offset, (long long)length,
                             (unsigned long long)f->size);
    hs_buf b = {0};
    hs_status s = hs_file_read_buf(f, (uint64_t)offset, (size_t)length, &b, err);
    if (s == HS_OK)
        s = ice_dv_decode(f->name, b.data, b.len, out, err);
    hs_buf_free(&b);
    return s;
}

/* ---- Puffin writer ---- */

static hs_status put_blob_json(json_t *blobs, const char *ref, int64_t off, int64_t len,
                               int64_t card)
{
    char cbuf[32];
    snprintf(cbuf, sizeof cbuf, "%lld", (long long)card);
    json_t *props = json_pack("{s:s, s:s}", "referenced-data-file", ref, "cardinality", cbuf);
    json_t *blob = props ? json_pack("{s:s, s:[I], s:I, s:I, s:I, s:I, s:o}", "type",
                                     ICE_BLOB_TYPE_DV, "fields",
                                     (json_int_t)ICE_ROW_POSITION_FIELD_ID, "snapshot-id",
                                     (json_int_t)-1, "sequence-number", (json_int_t)-1, "offset",
                                     (json_int_t)off, "length", (json_int_t)len, "properties", props)
                         : NULL;
    if (blob == NULL || json_array_append_new(blobs, blob) != 0)
        return HS_NOMEM;
    return HS_OK;
}

hs_status ice_puffin_write_dvs(hs_wfile *out, const ice_dv_input *dvs, int n,
                               const char *created_by, ice_blob_loc *locs, hs_error *err)
{
    hs_buf blob = {0};
    hs_status s = HS_OK;
    char *payload = NULL;
    json_t *blobs = json_array();
    if (blobs == NULL)
        return hs_err_nomem(err, 0);
    uint64_t base = out->offset;
    s = hs_wfile_write(out, ICE_PUFFIN_MAGIC, 4, err);
    for (int i = 0; i < n && s == HS_OK; i++) {
        if (dvs[i].referenced_data_file == NULL) {
            s = hs_err_set(err, HS_INVALID, "puffin: deletion vector %d has no data file", i);
            break;
        }
        hs_buf_reset(&blob);
        s = ice_dv_encode(dvs[i].positions, &blob, err);
        if (s != HS_OK)
            break;
        int64_t off = (int64_t)(out->offset - base);
        int64_t card = (int64_t)roaring_bitmap_get_cardinality(dvs[i].positions);
        s = hs_wfile_write(out, blob.data, blob.len, err);
        if (s != HS_OK)
            break;
        if (locs) {
            locs[i].offset = off;
            locs[i].length = (int64_t)blob.len;
            locs[i].cardinality = card;
        }
        if (put_blob_json(blobs, dvs[i].referenced_data_file, off, (int64_t)blob.len, card) != HS_OK)
            s = hs_err_nomem(err, 0);
    }
    if (s == HS_OK) {
        json_t *root = json_pack("{s:O, s:{s:s}}", "blobs", blobs, "properties", "created-by",
                                 created_by ? created_by : "HyperStreamDB");
        payload = root ? hs_json_dumps(root, JSON_COMPACT) : NULL;
        json_decref(root);
        if (payload == NULL)
            s = hs_err_nomem(err, 0);
    }
    if (s == HS_OK) {
        size_t plen = strlen(payload);
        hs_buf_reset(&blob);
        uint8_t tail[8] = {(uint8_t)plen, (uint8_t)(plen >> 8), (uint8_t)(plen >> 16),
                           (uint8_t)(plen >> 24), 0, 0, 0, 0};
        if (hs_buf_append(&blob, ICE_PUFFIN_MAGIC, 4) != HS_OK ||
            hs_buf_append(&blob, payload, plen) != HS_OK ||
            hs_buf_append(&blob, tail, 8) != HS_OK ||
            hs_buf_append(&blob, ICE_PUFFIN_MAGIC, 4) != HS_OK)
            s = hs_err_nomem(err, plen);
        else
            s = hs_wfile_write(out, blob.data, blob.len, err);
    }
    free(payload);
    json_decref(blobs);
    hs_buf_free(&blob);
    return s;
}

/* ---- Puffin footer reader ---- */

static hs_status json_i64(const char *name, json_t *o, const char *key, bool required,
                          int64_t dflt, int64_t *out, hs_error *err)
{
    json_t *v = json_object_get(o, key);
    if (v == NULL || json_is_null(v)) {
        if (required)
            return HS_CORRUPT_AT(err, "%s: puffin blob metadata lacks \"%s\"", name, key);
        *out = dflt;
        return HS_OK;
    }
    if (!json_is_integer(v))
        return HS_CORRUPT_AT(err, "%s: puffin blob \"%s\" is not an integer", name, key);
    *out = (int64_t)json_integer_value(v);
    return HS_OK;
}

static hs_status json_props(const char *name, json_t *o, hs_arena *a, int *n_out,
                            const char ***keys_out, const char ***vals_out, hs_error *err)
{
    *n_out = 0;
    *keys_out = *vals_out = NULL;
    if (o == NULL || json_is_null(o))
        return HS_OK;
    if (!json_is_object(o))
        return HS_CORRUPT_AT(err, "%s: puffin properties are not a JSON object", name);
    size_t n = json_object_size(o);
    const char **k = hs_arena_calloc(a, n + 1, sizeof *k);
    const char **v = hs_arena_calloc(a, n + 1, sizeof *v);
    if (!k || !v)
        return hs_err_nomem(err, n);
    const char *key;
    json_t *val;
    int i = 0;
    json_object_foreach(o, key, val) {
        if (!json_is_string(val))
            return HS_CORRUPT_AT(err, "%s: puffin property \"%s\" is not a string", name, key);
        k[i] = hs_arena_strndup(a, key, strlen(key));
        v[i] = hs_arena_strndup(a, json_string_value(val), json_string_length(val));
        if (!k[i] || !v[i])
            return hs_err_nomem(err, 0);
        i++;
    }
    *n_out = i;
    *keys_out = k;
    *vals_out = v;
    return HS_OK;
}

static hs_status parse_footer(const char *name, json_t *root, uint64_t blob_end, hs_arena *a,
                              ice_puffin_footer *out, hs_error *err)
{
    if (!json_is_object(root))
        return HS_CORRUPT_AT(err, "%s: puffin footer is not a JSON object", name);
    json_t *blobs = json_object_get(root, "blobs");
    if (!json_is_array(blobs))
        return HS_CORRUPT_AT(err, "%s: puffin footer lacks a \"blobs\" array", name);
    size_t n = json_array_size(blobs);
    out->blobs = hs_arena_calloc(a, n + 1, sizeof *out->blobs);
    if (!out->blobs)
        return hs_err_nomem(err, n);
    for (size_t i = 0; i < n; i++) {
        json_t *bj = json_array_get(blobs, i);
        ice_puffin_blob *b = &out->blobs[i];
        if (!json_is_object(bj))
            return HS_CORRUPT_AT(err, "%s: puffin blob %zu is not an object", name, i);
        json_t *t = json_object_get(bj, "type");
        if (!json_is_string(t))
            return HS_CORRUPT_AT(err, "%s: puffin blob %zu has no type", name, i);
        b->type = hs_arena_strndup(a, json_string_value(t), json_string_length(t));
        json_t *fields = json_object_get(bj, "fields");
        if (!json_is_array(fields))
            return HS_CORRUPT_AT(err, "%s: puffin blob %zu has no fields list", name, i);
        b->n_fields = (int)json_array_size(fields);
        b->fields = hs_arena_calloc(a, (size_t)b->n_fields + 1, sizeof *b->fields);
        if (!b->type || !b->fields)
            return hs_err_nomem(err, 0);
        for (int j = 0; j < b->n_fields; j++) {
            json_t *fv = json_array_get(fields, (size_t)j);
            if (!json_is_integer(fv))
                return HS_CORRUPT_AT(err, "%s: puffin blob %zu field %d is not an integer", name, i, j);
            b->fields[j] = (int32_t)json_integer_value(fv);
        }
        HS_TRY(json_i64(name, bj, "snapshot-id", true, 0, &b->snapshot_id, err));
        HS_TRY(json_i64(name, bj, "sequence-number", true, 0, &b->sequence_number, err));
        HS_TRY(json_i64(name, bj, "offset", true, 0, &b->offset, err));
        HS_TRY(json_i64(name, bj, "length", true, 0, &b->length, err));
        if (b->offset < 4 || b->length < 0 || (uint64_t)b->offset > blob_end ||
            (uint64_t)b->length > blob_end - (uint64_t)b->offset)
            return HS_CORRUPT_AT(err, "%s: puffin blob %zu range [%lld, +%lld) outside the blob area",
                                 name, i, (long long)b->offset, (long long)b->length);
        json_t *cc = json_object_get(bj, "compression-codec");
        if (json_is_string(cc)) {
            b->compression_codec = hs_arena_strndup(a, json_string_value(cc), json_string_length(cc));
            if (!b->compression_codec)
                return hs_err_nomem(err, 0);
        } else if (cc != NULL && !json_is_null(cc)) {
            return HS_CORRUPT_AT(err, "%s: puffin blob %zu compression-codec is not a string", name, i);
        }
        HS_TRY(json_props(name, json_object_get(bj, "properties"), a, &b->n_props, &b->prop_keys,
                          &b->prop_values, err));
    }
    out->n_blobs = (int)n;
    return json_props(name, json_object_get(root, "properties"), a, &out->n_props,
                      &out->prop_keys, &out->prop_values, err);
}

hs_status ice_puffin_read_footer(hs_file *f, hs_arena *arena, ice_puffin_footer *out,
                                 hs_error *err)
{
    memset(out, 0, sizeof *out);
    uint8_t head[4], tail[12];
    if (f->size < 4 + 16)
        return HS_CORRUPT_AT(err, "%s: %llu bytes is too short for a Puffin file", f->name,
                             (unsigned long long)f->size);
    HS_TRY(hs_file_read_at(f, 0, 4, head, err));
    HS_TRY(hs_file_read_at(f, f->size - 12, 12, tail, err));
    if (memcmp(head, ICE_PUFFIN_MAGIC, 4) != 0 || memcmp(tail + 8, ICE_PUFFIN_MAGIC, 4) != 0)
        return HS_CORRUPT_AT(err, "%s: not a Puffin file (magic PFA1 missing)", f->name);
    uint32_t plen = rd_u32le(tail);
    uint32_t flags = rd_u32le(tail + 4);
    if (plen > INT32_MAX || (uint64_t)plen + 4 + 16 > f->size)
        return HS_CORRUPT_AT(err, "%s: Puffin footer payload size %u exceeds the file", f->name, plen);
    if (flags & 1)
        return hs_err_set(err, HS_UNSUPPORTED, "%s: compressed Puffin footers are not supported",
                          f->name);
    uint64_t footer_start = f->size - 16 - plen;
    hs_buf b = {0};
    hs_status s = hs_file_read_buf(f, footer_start, (size_t)plen + 4, &b, err);
    if (s == HS_OK && memcmp(b.data, ICE_PUFFIN_MAGIC, 4) != 0)
        s = HS_CORRUPT_AT(err, "%s: Puffin footer magic missing at offset %llu", f->name,
                          (unsigned long long)footer_start);
    if (s == HS_OK) {
        json_error_t je;
        json_t *root = hs_json_loadb((const char *)b.data + 4, plen, JSON_REJECT_DUPLICATES, &je);
        if (root == NULL)
            s = HS_CORRUPT_AT(err, "%s: Puffin footer is not valid JSON: %s", f->name, je.text);
        else
            s = parse_footer(f->name, root, footer_start, arena, out, err);
        json_decref(root);
    }
    hs_buf_free(&b);
    return s;
}

const char *ice_puffin_blob_prop(const ice_puffin_blob *b, const char *key)
{
    for (int i = 0; i < b->n_props; i++)
        if (strcmp(b->prop_keys[i], key) == 0)
            return b->prop_values[i];
    return NULL;
}

/* ---- ctypes helpers ---- */

static char *dump_and_copy(json_t *j, hs_error *err)
{
    char *s = j ? hs_json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    char *r = s ? hs_strdup(s) : NULL;
    free(s);
    if (!r)
        hs_err_nomem(err, 0);
    return r;
}

char *ice_puffin_debug_write(const char *path, const char *json, hs_error *err)
{
    json_error_t je;
    json_t *root = hs_json_loads(json, 0, &je);
    if (!json_is_array(root)) {
        json_decref(root);
        hs_err_set(err, HS_INVALID, "puffin debug: expected a JSON array");
        return NULL;
    }
    size_t n = json_array_size(root);
    ice_dv_input *dvs = hs_calloc(n + 1, sizeof *dvs);
    ice_blob_loc *locs = hs_calloc(n + 1, sizeof *locs);
    hs_status s = dvs && locs ? HS_OK : hs_err_nomem(err, 0);
    for (size_t i = 0; i < n && s == HS_OK; i++) {
        json_t *d = json_array_get(root, i), *pos = json_object_get(d, "positions");
        roaring_bitmap_t *b = roaring_bitmap_create();
        if (!b) {
            s = hs_err_nomem(err, 0);
            break;
        }
        for (size_t k = 0; k < json_array_size(pos); k++)
            roaring_bitmap_add(b, (uint32_t)json_integer_value(json_array_get(pos, k)));
        dvs[i].positions = b;
        dvs[i].referenced_data_file = json_string_value(json_object_get(d, "file"));
    }
    hs_wfile *w = NULL;
    if (s == HS_OK)
        s = hs_io_create(path, 0, &w, err);
    if (s == HS_OK) {
        s = ice_puffin_write_dvs(w, dvs, (int)n, NULL, locs, err);
        if (s == HS_OK)
            s = hs_wfile_close(w, err);
        else
            hs_wfile_abort(w);
    }
    char *out = NULL;
    if (s == HS_OK) {
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < n; i++)
            json_array_append_new(arr, json_pack("{s:I, s:I, s:I}", "offset", (json_int_t)locs[i].offset,
                                                 "length", (json_int_t)locs[i].length, "cardinality",
                                                 (json_int_t)locs[i].cardinality));
        out = dump_and_copy(arr, err);
    }
    for (size_t i = 0; dvs && i < n; i++)
        rb_free((roaring_bitmap_t *)dvs[i].positions);
    hs_free(dvs);
    hs_free(locs);
    json_decref(root);
    return out;
}

static bool collect_pos(uint32_t v, void *ctx)
{
    return json_array_append_new((json_t *)ctx, json_integer(v)) == 0;
}

char *ice_puffin_debug_read(const char *path, int64_t offset, int64_t length, hs_error *err)
{
    hs_file *f;
    if (hs_io_open(path, &f, err) != HS_OK)
        return NULL;
    roaring_bitmap_t *b = NULL;
    hs_status s = ice_dv_read(f, offset, length, &b, err);
    hs_file_close(f);
    if (s != HS_OK)
        return NULL;
    json_t *arr = json_array();
    if (arr)
        roaring_iterate(b, collect_pos, arr);
    roaring_bitmap_free(b);
    return dump_and_copy(arr, err);
}

void ice_puffin_debug_free(char *s) { hs_free(s); }

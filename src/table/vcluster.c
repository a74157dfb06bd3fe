/*
 * table/vcluster.c - the clustered vector section of a vector sidecar and
 * its value directory (interface and purpose: vcluster.h).
 *
 * Where it lies: a sidecar of format version 3 (table/vindex.c) is a
 * version 1/2 sidecar whose header has flag bit 2 set, followed, after the
 * graph image and zero padding to a multiple of 64, by this section:
 *
 *   offset  size      field
 *   0       8         magic "HSVCLSEC"
 *   8       4         version (1)
 *   12      4         blocks
 *   16      4         field id of the cluster column
 *   20      4         included columns
 *   24      8         rows in all blocks
 *   32      32        zero
 *   64      ...       the blocks, in value order (strings as unsigned bytes,
 *                     integers numerically), each at a multiple of 8 from
 *                     the section's start
 *
 * One block (all integers little-endian; every part padded with zeros to a
 * multiple of 8):
 *
 *   0       8         magic "HSVCBLK1"
 *   8       4         rows r (>= 1)
 *   12      4         dimension d (1..65536)
 *   16      4         included columns m (<= 16)
 *   20      4         zero
 *   24      8         xxh64 of the value (bytes; an integer as 8 bytes LE)
 *   32      8         xxh64 (seed: xxh64 of bytes 0..32) of bytes 40..end
 *   40      4r        row positions in the data file, strictly increasing
 *           4dr       the rows' vectors (float32, as the data file holds them)
 *   then per included column:
 *           4         type (hs_type), 4: value width (0 = string/binary)
 *           (r+7)/8   validity bits (1 = valid)
 *           fixed:    r * width bytes
 *           var:      (r + 1) u32 offsets (first 0, nondecreasing), the bytes
 *
 * The directory (registry entry "cluster", index/registry.h):
 *   {"field-id": F, "include": [I1, ...], "values": [[v, off, bytes, rows], ...]}
 * v a JSON string (string/binary cluster columns; the value must be UTF-8)
 * or integer; off from the sidecar's start.  A reader fetches [off,
 * off + bytes) and checks the block against the entry (rows, value hash).
 * Rows whose cluster value or vector is null are in no block.
 *
 * Why the vectors are stored a second time (the graph and the head keep
 * theirs): the design (docs/storage.md) reorders the graph's slots by the
 * cluster value so that one copy serves both; this revision keeps the graph
 * as it is and pays 4d + 4 bytes a row plus the included values.
 */
#include "table/vcluster.h"

#include "base/hash.h"
#include "base/hashmap.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SEC_MAGIC "HSVCLSEC"
#define BLK_MAGIC "HSVCBLK1"
#define SEC_HEADER 64u
#define BLK_HEADER 40u
#define MAX_DIM 65536u

static size_t pad8(size_t x) { return (x + 7) & ~(size_t)7; }
static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ------------------------------------------------------------------ */
/* parameters                                                          */

static bool cluster_type_ok(hs_type t)
{
    switch (t) {
    case HS_TYPE_STRING: case HS_TYPE_BINARY:
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32: case HS_TYPE_DATE32:
        return true;
    default:
        return false;
    }
}

static bool is_var(hs_type t) { return t == HS_TYPE_STRING || t == HS_TYPE_BINARY; }

static bool include_type_ok(const hs_field *f)
{
    if (is_var(f->type))
        return true;
    return !hs_type_is_nested(f->type) && f->type != HS_TYPE_BOOL && f->type != HS_TYPE_NA &&
           hs_type_width(f) > 0;
}

bool tbl_vcl_declared(const char *params_json)
{
    if (!params_json || !strstr(params_json, "cluster"))
        return false;
    json_t *o = hs_json_loads(params_json, 0, NULL);
    bool yes = o && json_is_string(json_object_get(o, "cluster"));
    json_decref(o);
    return yes;
}

hs_status tbl_vcl_check_param(const char *key, json_t *v, hs_error *err)
{
    if (strcmp(key, "cluster") == 0) {
        if (!json_is_string(v) || !*json_string_value(v))
            return hs_err_set(err, HS_INVALID, "vector index parameter \"cluster\" must be a "
                              "column name");
        return HS_OK;
    }
    bool ok = json_is_string(v) || json_is_array(v);
    size_t i;
    json_t *x;
    if (json_is_array(v)) {
        ok = json_array_size(v) <= TBL_VCL_MAX_INCLUDE;
        json_array_foreach(v, i, x) ok = ok && json_is_string(x);
    }
    if (!ok)
        return hs_err_set(err, HS_INVALID, "vector index parameter \"include\" must be a column "
                          "name or a list of at most %d names", TBL_VCL_MAX_INCLUDE);
    return HS_OK;
}

static hs_status resolve_one(const ice_schema *sc, const char *name, int32_t vector_fid,
                             const char *what, const hs_field **out, hs_error *err)
{
    const hs_field *f = NULL;
    for (int i = 0; i < sc->root.n_children && !f; i++)
        if (strcmp(sc->root.children[i].name, name) == 0)
            f = &sc->root.children[i];
    if (!f)
        return hs_err_set(err, HS_INVALID, "vector index %s column \"%s\" is not a top-level "
                          "column of the table", what, name);
    if (f->field_id == vector_fid)
        return hs_err_set(err, HS_INVALID, "vector index %s column \"%s\" is the indexed "
                          "vector column", what, name);
    *out = f;
    return HS_OK;
}

hs_status tbl_vcl_resolve(const char *params_json, const ice_schema *sc, int32_t vector_fid,
                          tbl_vcl_cols *out, bool *found, hs_error *err)
{
    memset(out, 0, sizeof *out);
    *found = false;
    if (!tbl_vcl_declared(params_json))
        return HS_OK;
    json_t *o = hs_json_loads(params_json, 0, NULL);
    if (!o)
        return hs_err_nomem(err, 64);
    hs_status st = resolve_one(sc, json_string_value(json_object_get(o, "cluster")), vector_fid,
                               "cluster", &out->cluster, err);
    if (st == HS_OK && !cluster_type_ok(out->cluster->type))
        st = hs_err_set(err, HS_INVALID, "vector index cluster column \"%s\" is %s (a string, "
                        "binary or integer column is needed)", out->cluster->name,
                        hs_type_name(out->cluster->type));
    json_t *inc = json_object_get(o, "include");
    if (st == HS_OK && inc)
        st = tbl_vcl_check_param("include", inc, err);
    size_t n = json_is_array(inc) ? json_array_size(inc) : inc ? 1 : 0;
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        const char *name = json_string_value(json_is_array(inc) ? json_array_get(inc, i) : inc);
        const hs_field *f = NULL;
        st = resolve_one(sc, name, vector_fid, "included", &f, err);
        if (st == HS_OK && !include_type_ok(f))
            st = hs_err_set(err, HS_INVALID, "vector index included column \"%s\" is %s (fixed-"
                            "width, string or binary columns can be included)", name,
                            hs_type_name(f->type));
        if (st == HS_OK && f == out->cluster)
            st = hs_err_set(err, HS_INVALID, "vector index included column \"%s\" is the "
                            "cluster column (a block's value is known)", name);
        for (int k = 0; st == HS_OK && k < out->n_include; k++)
            if (out->include[k] == f)
                st = hs_err_set(err, HS_INVALID, "vector index included column \"%s\" is "
                                "named twice", name);
        if (st == HS_OK)
            out->include[out->n_include++] = f;
    }
    json_decref(o);
    if (st == HS_OK)
        *found = true;
    else
        memset(out, 0, sizeof *out);
    return st;
}

/* ------------------------------------------------------------------ */
/* building                                                            */

typedef struct vkey {
    bool is_int;
    int64_t i;
    size_t off, n;            /* bytes in keybytes */
} vkey;

typedef struct incbuf {
    hs_buf valid;             /* one byte per row */
    hs_buf vals;              /* fixed: width bytes per row; var: the bytes */
    hs_buf ends;              /* var: u64 end offset of each row in vals */
} incbuf;

struct tbl_vcbuilder {
    tbl_vcl_cols cols;
    int32_t vector_fid;
    int64_t n_rows;
    int dim;
    hs_map keys;              /* key bytes (tag + value) -> key index */
    hs_buf keyv;              /* vkey */
    hs_buf keybytes;
    hs_buf rows_key;          /* u32 key index per kept row */
    hs_buf rows_pos;          /* u32 position per kept row */
    hs_buf vecs;              /* dim floats per kept row */
    incbuf inc[TBL_VCL_MAX_INCLUDE];
};

hs_status tbl_vcbuilder_new(const tbl_vcl_cols *cols, int32_t vector_fid, int64_t n_rows,
                            tbl_vcbuilder **out, hs_error *err)
{
    *out = NULL;
    tbl_vcbuilder *b = hs_calloc(1, sizeof *b);
    if (!b)
        return hs_err_nomem(err, sizeof *b);
    b->cols = *cols;
    b->vector_fid = vector_fid;
    b->n_rows = n_rows;
    *out = b;
    return HS_OK;
}

void tbl_vcbuilder_free(tbl_vcbuilder *b)
{
    if (!b)
        return;
    hs_map_free(&b->keys);
    hs_buf_free(&b->keyv);
    hs_buf_free(&b->keybytes);
    hs_buf_free(&b->rows_key);
    hs_buf_free(&b->rows_pos);
    hs_buf_free(&b->vecs);
    for (int i = 0; i < TBL_VCL_MAX_INCLUDE; i++) {
        hs_buf_free(&b->inc[i].valid);
        hs_buf_free(&b->inc[i].vals);
        hs_buf_free(&b->inc[i].ends);
    }
    hs_free(b);
}

/* The integer of row r of a cluster column of an integer type. */
static int64_t int_at(const hs_column *c, int64_t r)
{
    const uint8_t *v = c->values.data;
    switch (c->type) {
    case HS_TYPE_INT8: return ((const int8_t *)v)[r];
    case HS_TYPE_INT16: return ((const int16_t *)(const void *)v)[r];
    case HS_TYPE_INT32: case HS_TYPE_DATE32: return ((const int32_t *)(const void *)v)[r];
    case HS_TYPE_INT64: return ((const int64_t *)(const void *)v)[r];
    case HS_TYPE_UINT8: return v[r];
    case HS_TYPE_UINT16: return ((const uint16_t *)(const void *)v)[r];
    case HS_TYPE_UINT32: return ((const uint32_t *)(const void *)v)[r];
    default: return 0;
    }
}

/* The key index of row r's cluster value (appending a new key). */
static hs_status key_of(tbl_vcbuilder *b, const hs_column *c, int64_t r, uint32_t *out,
                        hs_error *err)
{
    vkey k = {0};
    uint8_t tmp[9];
    const uint8_t *kp;
    size_t kn;
    hs_buf kb = {0};
    if (is_var(c->type)) {
        const int32_t *o = HS_COL_OFFSETS(c);
        k.n = (size_t)(o[r + 1] - o[r]);
        kp = c->values.data ? c->values.data + o[r] : (const uint8_t *)"";
        if (hs_buf_append(&kb, "s", 1) != HS_OK || hs_buf_append(&kb, kp, k.n) != HS_OK) {
            hs_buf_free(&kb);
            return hs_err_nomem(err, k.n);
        }
        kp = kb.data;
        kn = kb.len;
    } else {
        k.is_int = true;
        k.i = int_at(c, r);
        tmp[0] = 'i';
        memcpy(tmp + 1, &k.i, 8);
        kp = tmp;
        kn = 9;
    }
    uint64_t idx = HS_VEC_LEN(&b->keyv, vkey), got = 0;
    bool found = false;
    hs_status st = hs_map_get_or_put(&b->keys, kp, kn, idx, &got, &found);
    if (st == HS_OK && !found) {
        if (!k.is_int) {
            k.off = b->keybytes.len;
            st = hs_buf_append(&b->keybytes, kp + 1, k.n);
        }
        if (st == HS_OK)
            st = hs_buf_append(&b->keyv, &k, sizeof k);
    }
    hs_buf_free(&kb);
    if (st != HS_OK)
        return hs_err_nomem(err, kn);
    *out = (uint32_t)(found ? got : idx);
    return HS_OK;
}

static const hs_column *col_of(const hs_batch *batch, int32_t fid)
{
    for (int i = 0; i < batch->n_cols && i < batch->schema.n_children; i++)
        if (batch->schema.children[i].field_id == fid)
            return batch->cols[i];
    return NULL;
}

static hs_status add_include(incbuf *ib, const hs_column *c, int64_t r, hs_error *err)
{
    uint8_t valid = c && hs_col_is_valid(c, r) ? 1 : 0;
    hs_status st = hs_buf_append(&ib->valid, &valid, 1);
    if (st == HS_OK && c && is_var(c->type)) {
        if (valid) {
            const int32_t *o = HS_COL_OFFSETS(c);
            if (o[r + 1] > o[r])
                st = hs_buf_append(&ib->vals, c->values.data + o[r], (size_t)(o[r + 1] - o[r]));
        }
        uint64_t end = ib->vals.len;
        if (st == HS_OK)
            st = hs_buf_append(&ib->ends, &end, 8);
    } else if (st == HS_OK && c) {
        size_t w = (size_t)c->width;
        st = valid ? hs_buf_append(&ib->vals, c->values.data + (size_t)r * w, w)
                   : hs_buf_append_zeros(&ib->vals, w);
    }
    return st == HS_OK ? HS_OK : hs_err_nomem(err, 64);
}

hs_status tbl_vcbuilder_add(tbl_vcbuilder *b, const hs_batch *batch, int64_t first_pos,
                            hs_error *err)
{
    const hs_column *vc = col_of(batch, b->vector_fid);
    const hs_column *cc = col_of(batch, b->cols.cluster->field_id);
    if (!vc || !cc)
        return hs_err_set(err, HS_INTERNAL, "clustered vector section: the batch lacks the "
                          "vector or the cluster column");
    if ((vc->type != HS_TYPE_LIST && vc->type != HS_TYPE_FIXED_LIST) || vc->n_children != 1 ||
        vc->children[0]->type != HS_TYPE_FLOAT32 || cc->type != b->cols.cluster->type)
        return HS_CORRUPT_AT(err, "clustered vector section: columns did not read as their "
                             "types");
    const hs_column *ic[TBL_VCL_MAX_INCLUDE] = {0};
    for (int k = 0; k < b->cols.n_include; k++) {
        ic[k] = col_of(batch, b->cols.include[k]->field_id);
        if (ic[k] && ic[k]->type != b->cols.include[k]->type)
            return HS_CORRUPT_AT(err, "clustered vector section: column \"%s\" did not read "
                                 "as %s", b->cols.include[k]->name,
                                 hs_type_name(b->cols.include[k]->type));
    }
    const hs_column *elem = vc->children[0];
    const float *ev = HS_COL_VALUES(elem, float);
    for (int64_t r = 0; r < batch->n_rows; r++) {
        if (!hs_col_is_valid(vc, r) || !hs_col_is_valid(cc, r))
            continue;
        int64_t s, e;
        if (vc->type == HS_TYPE_FIXED_LIST) {
            s = r * vc->width;
            e = s + vc->width;
        } else {
            s = HS_COL_OFFSETS(vc)[r];
            e = HS_COL_OFFSETS(vc)[r + 1];
        }
        if (s < 0 || e < s || e > elem->length || e - s > (int64_t)MAX_DIM || e == s)
            return HS_CORRUPT_AT(err, "clustered vector section: row %" PRId64 ": bad vector "
                                 "offsets", first_pos + r);
        if (b->dim == 0)
            b->dim = (int)(e - s);
        if (e - s != b->dim)
            return hs_err_set(err, HS_INVALID, "row %" PRId64 ": vector of %" PRId64 " elements, "
                              "earlier rows have %d", first_pos + r, e - s, b->dim);
        uint32_t key, pos = (uint32_t)(first_pos + r);
        HS_TRY(key_of(b, cc, r, &key, err));
        if (hs_buf_append(&b->rows_key, &key, 4) != HS_OK ||
            hs_buf_append(&b->rows_pos, &pos, 4) != HS_OK ||
            hs_buf_append(&b->vecs, ev + s, (size_t)b->dim * 4) != HS_OK)
            return hs_err_nomem(err, (size_t)b->dim * 4);
        for (int k = 0; k < b->cols.n_include; k++)
            HS_TRY(add_include(&b->inc[k], ic[k], r, err));
    }
    return HS_OK;
}

/* A key in sort order's terms: its value and where its bytes are. */
typedef struct skey {
    vkey k;
    const uint8_t *bytes;
    uint32_t idx;
} skey;

static int key_cmp(const void *pa, const void *pb)
{
    const skey *a = pa, *b = pb;
    if (a->k.is_int)
        return a->k.i < b->k.i ? -1 : a->k.i > b->k.i;
    size_t n = a->k.n < b->k.n ? a->k.n : b->k.n;
    int c = n ? memcmp(a->bytes, b->bytes, n) : 0;
    return c ? c : a->k.n < b->k.n ? -1 : a->k.n > b->k.n;
}

uint64_t tbl_vcl_key_hash(const tbl_vcl_key *k)
{
    if (k->is_int) {
        uint8_t b[8];
        memcpy(b, &k->i, 8);
        return hs_xxh64(b, 8, 0);
    }
    return hs_xxh64(k->p ? k->p : (const uint8_t *)"", k->n, 0);
}

/* Appends the block of rows idx[0..n) of key k to out. */
static hs_status emit_block(const tbl_vcbuilder *b, const vkey *k, const uint32_t *idx,
                            uint32_t n, hs_buf *out, hs_error *err)
{
    size_t start = out->len;
    uint8_t hdr[BLK_HEADER] = {0};
    memcpy(hdr, BLK_MAGIC, 8);
    put_u32(hdr + 8, n);
    put_u32(hdr + 12, (uint32_t)b->dim);
    put_u32(hdr + 16, (uint32_t)b->cols.n_include);
    tbl_vcl_key tk = {k->is_int, k->i, b->keybytes.data + k->off, k->n};
    put_u64(hdr + 24, tbl_vcl_key_hash(&tk));
    const uint32_t *pos = (const uint32_t *)(const void *)b->rows_pos.data;
    const float *vecs = (const float *)(const void *)b->vecs.data;
    size_t d = (size_t)b->dim;
    hs_status st = hs_buf_append(out, hdr, sizeof hdr);
    for (uint32_t i = 0; st == HS_OK && i < n; i++)
        st = hs_buf_append(out, &pos[idx[i]], 4);
    if (st == HS_OK)
        st = hs_buf_append_zeros(out, pad8(out->len - start) - (out->len - start));
    for (uint32_t i = 0; st == HS_OK && i < n; i++)
        st = hs_buf_append(out, vecs + idx[i] * d, d * 4);
    if (st == HS_OK)
        st = hs_buf_append_zeros(out, pad8(out->len - start) - (out->len - start));
    for (int c = 0; st == HS_OK && c < b->cols.n_include; c++) {
        const hs_field *f = b->cols.include[c];
        const incbuf *ib = &b->inc[c];
        bool var = is_var(f->type);
        uint32_t w = var ? 0 : (uint32_t)hs_type_width(f);
        uint8_t th[8];
        put_u32(th, (uint32_t)f->type);
        put_u32(th + 4, w);
        st = hs_buf_append(out, th, 8);
        size_t vstart = out->len;
        if (st == HS_OK)
            st = hs_buf_append_zeros(out, ((size_t)n + 7) / 8);
        for (uint32_t i = 0; st == HS_OK && i < n; i++)
            if (ib->valid.data[idx[i]])
                out->data[vstart + i / 8] |= (uint8_t)(1u << (i % 8));
        if (st == HS_OK)
            st = hs_buf_append_zeros(out, pad8(out->len - start) - (out->len - start));
        if (st == HS_OK && !var) {
            for (uint32_t i = 0; st == HS_OK && i < n; i++)
                st = hs_buf_append(out, ib->vals.data + (size_t)idx[i] * w, w);
        } else if (st == HS_OK) {
            const uint64_t *ends = (const uint64_t *)(const void *)ib->ends.data;
            uint32_t acc = 0;
            st = hs_buf_append(out, &acc, 4);
            for (uint32_t i = 0; st == HS_OK && i < n; i++) {
                uint64_t s = idx[i] ? ends[idx[i] - 1] : 0, e = ends[idx[i]];
                if ((uint64_t)acc + (e - s) > UINT32_MAX)
                    st = hs_err_set(err, HS_INVALID, "included column \"%s\": more than 4 GiB "
                                    "of values in one block", f->name);
                acc += (uint32_t)(e - s);
                if (st == HS_OK)
                    st = hs_buf_append(out, &acc, 4);
            }
            if (st == HS_OK)
                st = hs_buf_append_zeros(out, pad8(out->len - start) - (out->len - start));
            for (uint32_t i = 0; st == HS_OK && i < n; i++) {
                uint64_t s = idx[i] ? ends[idx[i] - 1] : 0, e = ends[idx[i]];
                if (e > s)
                    st = hs_buf_append(out, ib->vals.data + s, (size_t)(e - s));
            }
        }
        if (st == HS_OK)
            st = hs_buf_append_zeros(out, pad8(out->len - start) - (out->len - start));
    }
    if (st == HS_OK) {
        uint64_t seed = hs_xxh64(out->data + start, 32, 0);
        put_u64(out->data + start + 32,
                hs_xxh64(out->data + start + BLK_HEADER, out->len - start - BLK_HEADER, seed));
    } else if (st == HS_NOMEM) {
        st = hs_err_nomem(err, out->len - start);
    }
    return st;
}

hs_status tbl_vcbuilder_finish(tbl_vcbuilder *b, hs_buf *out, char **dir, hs_error *err)
{
    *dir = NULL;
    size_t n_keys = HS_VEC_LEN(&b->keyv, vkey), n = HS_VEC_LEN(&b->rows_pos, uint32_t);
    if (n == 0 || n_keys == 0)
        return HS_OK;
    const vkey *ks = (const vkey *)b->keyv.data;
    /* JSON carries only UTF-8 strings: otherwise no section */
    json_t *values = json_array();
    json_t *root = json_object();
    json_t *incl = json_array();
    uint32_t *order = hs_malloc(n_keys * 4), *count = hs_calloc(n_keys + 1, 4);
    uint32_t *rows = hs_malloc(n * 4);
    hs_status st = values && root && incl && order && count && rows ? HS_OK
                                                                    : hs_err_nomem(err, n * 4);
    json_t **vj = st == HS_OK ? hs_calloc(n_keys, sizeof *vj) : NULL;
    if (st == HS_OK && !vj)
        st = hs_err_nomem(err, n_keys * 8);
    bool utf8 = true;
    for (size_t i = 0; st == HS_OK && i < n_keys && utf8; i++) {
        vj[i] = ks[i].is_int ? json_integer((json_int_t)ks[i].i)
                             : json_stringn((const char *)b->keybytes.data + ks[i].off, ks[i].n);
        utf8 = vj[i] != NULL;
    }
    if (st == HS_OK && utf8) {
        skey *sk = hs_malloc(n_keys * sizeof *sk);
        if (!sk)
            st = hs_err_nomem(err, n_keys * sizeof *sk);
        for (size_t i = 0; sk && i < n_keys; i++)
            sk[i] = (skey){ks[i], b->keybytes.data + ks[i].off, (uint32_t)i};
        if (sk)
            qsort(sk, n_keys, sizeof *sk, key_cmp);
        for (size_t i = 0; sk && i < n_keys; i++)
            order[i] = sk[i].idx;
        hs_free(sk);
        /* rows grouped by key (counting sort; positions stay increasing) */
        const uint32_t *rk = (const uint32_t *)(const void *)b->rows_key.data;
        for (size_t i = 0; i < n; i++)
            count[rk[i] + 1]++;
        for (size_t i = 0; i < n_keys; i++)
            count[i + 1] += count[i];
        uint32_t *fill = hs_malloc(n_keys * 4);
        if (!fill)
            st = hs_err_nomem(err, n_keys * 4);
        for (size_t i = 0; st == HS_OK && i < n_keys; i++)
            fill[i] = count[i];
        for (size_t i = 0; st == HS_OK && i < n; i++)
            rows[fill[rk[i]]++] = (uint32_t)i;
        hs_free(fill);
        size_t base = out->len;
        if (st == HS_OK && hs_buf_append_zeros(out, ((base + 63) & ~(size_t)63) - base) != HS_OK)
            st = hs_err_nomem(err, 64);
        uint8_t sh[SEC_HEADER] = {0};
        memcpy(sh, SEC_MAGIC, 8);
        put_u32(sh + 8, 1);
        put_u32(sh + 12, (uint32_t)n_keys);
        put_u32(sh + 16, (uint32_t)b->cols.cluster->field_id);
        put_u32(sh + 20, (uint32_t)b->cols.n_include);
        put_u64(sh + 24, (uint64_t)n);
        if (st == HS_OK && hs_buf_append(out, sh, sizeof sh) != HS_OK)
            st = hs_err_nomem(err, 64);
        for (size_t j = 0; st == HS_OK && j < n_keys; j++) {
            uint32_t k = order[j];
            size_t off = out->len;
            st = emit_block(b, &ks[k], rows + count[k], count[k + 1] - count[k], out, err);
            json_t *e = st == HS_OK ? json_array() : NULL;
            if (st == HS_OK && (!e || json_array_append(e, vj[k]) ||
                                json_array_append_new(e, json_integer((json_int_t)off)) ||
                                json_array_append_new(e, json_integer((json_int_t)(out->len - off))) ||
                                json_array_append_new(e, json_integer(count[k + 1] - count[k])) ||
                                json_array_append_new(values, e)))
                st = hs_err_nomem(err, 64);
        }
        for (int i = 0; st == HS_OK && i < b->cols.n_include; i++)
            if (json_array_append_new(incl, json_integer(b->cols.include[i]->field_id)))
                st = hs_err_nomem(err, 64);
        if (st == HS_OK &&
            (json_object_set_new(root, "field-id", json_integer(b->cols.cluster->field_id)) ||
             json_object_set(root, "include", incl) || json_object_set(root, "values", values)))
            st = hs_err_nomem(err, 64);
        if (st == HS_OK && !(*dir = hs_json_dumps(root, JSON_COMPACT)))
            st = hs_err_nomem(err, 64);
        if (st == HS_OK) {   /* json_dumps allocates with malloc: move to hs_malloc */
            char *copy = hs_strdup(*dir);
            free(*dir);
            *dir = copy;
            if (!copy)
                st = hs_err_nomem(err, 64);
        }
        if (st != HS_OK)
            out->len = base;
    }
    for (size_t i = 0; vj && i < n_keys; i++)
        json_decref(vj[i]);
    hs_free(vj);
    hs_free(order);
    hs_free(count);
    hs_free(rows);
    json_decref(values);
    json_decref(incl);
    json_decref(root);
    return st;
}

/* ------------------------------------------------------------------ */
/* the directory                                                       */

void tbl_vcdir_clear(tbl_vcdir *d)
{
    json_decref(d->root);
    memset(d, 0, sizeof *d);
}

hs_status tbl_vcdir_parse(const char *text, tbl_vcdir *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *r = text ? hs_json_loads(text, 0, NULL) : NULL;
    json_t *fid = json_object_get(r, "field-id");
    json_t *inc = json_object_get(r, "include");
    json_t *vals = json_object_get(r, "values");
    if (!json_is_object(r) || !json_is_integer(fid) || !json_is_array(inc) ||
        !json_is_array(vals) || json_array_size(inc) > TBL_VCL_MAX_INCLUDE ||
        json_integer_value(fid) < 0 || json_integer_value(fid) > INT32_MAX) {
        json_decref(r);
        return HS_CORRUPT_AT(err, "cluster directory: malformed");
    }
    out->root = r;
    out->cluster_fid = (int32_t)json_integer_value(fid);
    out->values = vals;
    size_t i;
    json_t *x;
    json_array_foreach(inc, i, x) {
        if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
            tbl_vcdir_clear(out);
            return HS_CORRUPT_AT(err, "cluster directory: included field id %zu malformed", i);
        }
        out->include_fid[out->n_include++] = (int32_t)json_integer_value(x);
    }
    return HS_OK;
}

hs_status tbl_vcdir_find(const tbl_vcdir *d, const tbl_vcl_key *k, int64_t file_size,
                         bool *found, uint64_t *off, uint64_t *len, uint32_t *rows, hs_error *err)
{
    *found = false;
    size_t i;
    json_t *e;
    json_array_foreach(d->values, i, e) {
        json_t *v = json_array_get(e, 0);
        bool match = k->is_int ? json_is_integer(v) && json_integer_value(v) == k->i
                               : json_is_string(v) && json_string_length(v) == k->n &&
                                     (k->n == 0 || memcmp(json_string_value(v), k->p, k->n) == 0);
        if (!match)
            continue;
        json_t *o = json_array_get(e, 1), *l = json_array_get(e, 2), *r = json_array_get(e, 3);
        if (json_array_size(e) != 4 || !json_is_integer(o) || !json_is_integer(l) ||
            !json_is_integer(r) || json_integer_value(o) < 0 ||
            json_integer_value(l) < BLK_HEADER || json_integer_value(r) < 1 ||
            json_integer_value(r) > UINT32_MAX ||
            json_integer_value(o) > file_size - json_integer_value(l))
            return HS_CORRUPT_AT(err, "cluster directory: entry %zu out of shape or past the "
                                 "sidecar's %" PRId64 " bytes", i, file_size);
        *found = true;
        *off = (uint64_t)json_integer_value(o);
        *len = (uint64_t)json_integer_value(l);
        *rows = (uint32_t)json_integer_value(r);
        return HS_OK;
    }
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* decoding a block                                                    */

hs_status tbl_vcblock_decode(const uint8_t *p, size_t n, int64_t n_rows, tbl_vcblock *out,
                             hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (n < BLK_HEADER || memcmp(p, BLK_MAGIC, 8) != 0)
        return HS_CORRUPT_AT(err, "cluster block: bad magic or %zu bytes is too short", n);
    if (((uintptr_t)p & 7) != 0)
        return hs_err_set(err, HS_INTERNAL, "cluster block: not 8-byte aligned");
    uint32_t r = get_u32(p + 8), d = get_u32(p + 12), m = get_u32(p + 16);
    if (r == 0 || d == 0 || d > MAX_DIM || m > TBL_VCL_MAX_INCLUDE || get_u32(p + 20) != 0)
        return HS_CORRUPT_AT(err, "cluster block: header out of range (rows %" PRIu32
                             ", dimension %" PRIu32 ", included %" PRIu32 ")", r, d, m);
    uint64_t seed = hs_xxh64(p, 32, 0);
    if (hs_xxh64(p + BLK_HEADER, n - BLK_HEADER, seed) != get_u64(p + 32))
        return HS_CORRUPT_AT(err, "cluster block: checksum mismatch (%zu bytes)", n);
    /* r < 2^32 and d <= 2^16: the sizes below fit in 64 bits; each is
     * checked against what is left before it is used */
    uint64_t at = BLK_HEADER;
    uint64_t need = pad8(BLK_HEADER + (uint64_t)r * 4);
    if (need > n)
        return HS_CORRUPT_AT(err, "cluster block: %zu bytes cannot hold %" PRIu32 " positions",
                             n, r);
    out->pos = (const uint32_t *)(const void *)(p + at);
    for (uint32_t i = 0; i < r; i++)
        if ((n_rows >= 0 && out->pos[i] >= (uint64_t)n_rows) ||
            (i > 0 && out->pos[i] <= out->pos[i - 1]))
            return HS_CORRUPT_AT(err, "cluster block: position %" PRIu32 " out of order or "
                                 "range", i);
    at = need;
    need = at + pad8((uint64_t)r * d * 4);
    if (need > n)
        return HS_CORRUPT_AT(err, "cluster block: %zu bytes cannot hold %" PRIu32 " vectors of "
                             "%" PRIu32, n, r, d);
    out->vecs = (const float *)(const void *)(p + at);
    at = need;
    for (uint32_t c = 0; c < m; c++) {
        tbl_vcinc *ic = &out->inc[c];
        if (at + 8 > n)
            return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32 " truncated", c);
        uint32_t t = get_u32(p + at), w = get_u32(p + at + 4);
        bool var = t == HS_TYPE_STRING || t == HS_TYPE_BINARY;
        if (t >= HS_TYPE__COUNT || (var ? w != 0 : (w == 0 || w > 64)))
            return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32 " has type %"
                                 PRIu32 " width %" PRIu32, c, t, w);
        ic->type = (hs_type)t;
        ic->width = w;
        at += 8;
        need = at + pad8(((uint64_t)r + 7) / 8);
        if (need > n)
            return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32 " truncated", c);
        ic->validity = p + at;
        at = need;
        if (!var) {
            need = at + pad8((uint64_t)r * w);
            if (need > n)
                return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32
                                     " truncated", c);
            ic->values = p + at;
            at = need;
            continue;
        }
        need = at + pad8(((uint64_t)r + 1) * 4);
        if (need > n)
            return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32 " truncated", c);
        ic->offsets = (const uint32_t *)(const void *)(p + at);
        at = need;
        if (ic->offsets[0] != 0)
            return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32 " offsets "
                                 "start at %" PRIu32, c, ic->offsets[0]);
        for (uint32_t i = 0; i < r; i++)
            if (ic->offsets[i + 1] < ic->offsets[i])
                return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32 " offsets "
                                     "decrease at %" PRIu32, c, i);
        need = at + pad8(ic->offsets[r]);
        if (need > n)
            return HS_CORRUPT_AT(err, "cluster block: included column %" PRIu32 " values "
                                 "truncated", c);
        ic->values = p + at;
        at = need;
    }
    if (at != n)
        return HS_CORRUPT_AT(err, "cluster block: %zu bytes, its parts end at %" PRIu64, n, at);
    out->rows = r;
    out->dim = d;
    out->n_include = (int)m;
    out->key_hash = get_u64(p + 24);
    return HS_OK;
}

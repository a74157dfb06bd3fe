/*
 * table/vindex.c - vector sidecar indexes of data files: parameters, reading
 * a data file's vector column, building the sidecar, opening it.
 *
 * Building (one data file, one column):
 *
 *   Parquet file --pq_scan, only that column--> list<float> batches
 *     -> non-null vectors packed row-major (ids 0..n-1 in file order) and
 *        their file positions
 *     -> hnsw_build (flat or quantized codes, optionally IVF lists)
 *     -> sidecar image = header + position map + hnsw_save image
 *
 * Sidecar file (all integers little-endian):
 *
 *   offset  size      field
 *   0       8         magic "HSVECIDX"
 *   8       4         version: 1, or 2 when flag bit 1 is set, or 3 when
 *                     flag bit 2 is set (either way for bit 1)
 *   12      4         header bytes (64)
 *   16      8         size of the data file it covers, in bytes
 *   24      8         rows of the data file
 *   32      8         n: vectors indexed (non-null rows)
 *   40      4         field id of the column
 *   44      4         dimension (0 when n == 0)
 *   48      4         flags: bit 0 = a position map follows,
 *                     bit 1 = exact vectors follow (version 2 or 3),
 *                     bit 2 = a clustered vector section follows the graph
 *                     (version 3 only; table/vcluster.c)
 *   52      4         metric (hs_metric: L2, COSINE, IP; the graph's)
 *   56      8         xxh64 (seed 0) of bytes [0, 56) and then of the map
 *                     (the map's hash seeded with the first)
 *   64      4 * n     map (flag bit 0): file position of id i, strictly
 *                     increasing, < rows.  Without the flag id == position
 *                     (then n == rows)
 *   ...               zero padding to a multiple of 64
 *   V       4 * d * n exact vectors (flag bit 1): the float32 vector of id i
 *                     at V + 4 * d * i, exactly as the data file holds it
 *   ...     8         xxh64 (seed 0) of the 4 * d * n vector bytes
 *   ...               zero padding to a multiple of 64
 *   ...     to end    the graph image (hnsw.h: its own magic and checksum;
 *                     absent when n == 0); version 3: the graph image ends
 *                     where its header's length says, then zero padding to a
 *                     multiple of 64 and the clustered section to the end
 *                     (read apart by ranged reads of its blocks, never by
 *                     opening the sidecar; vcluster.c)
 *
 * Exact vectors (version 2): quantized kinds search codes and rerank the
 * best max(k * rerank, ef) candidates with exact vectors, and a search
 * returns the vector column of its winners; both read these in place
 * (tbl_vindex_vector) instead of decoding Parquet pages.  A flat index of
 * an L2 or IP metric holds the exact vectors in its graph already
 * (hnsw_exact_vector), so it is written as version 1 without them; so are
 * indexes built with the parameter "exact_vectors": false.  Version 1
 * sidecars of other kinds stay valid: their readers fetch exact vectors
 * from the data file as before.  Cost: 4 * d bytes per vector on disk and,
 * while the sidecar is cached, in memory (docs/search.md measures it).
 *
 * The data file size in the header lets a reader reject a sidecar of
 * another file that reused the name (stale), in addition to the registry
 * entry's check.  Images are opened from 64-byte aligned memory and
 * searched in place.
 *
 * The head: everything before the graph's links, i.e. the header, the map,
 * the exact vectors (version 2) and, with a version 2 graph image, the
 * graph's header and payloads (hnsw.c: flat vectors or codes, right after
 * its header).  That is all an exact search over an allow-list reads, so on
 * an object store tbl_vindex_acquire_head fetches only the head (one ranged
 * GET, sized from the data file's rows and the dimension) of sidecars whose
 * registry entry says it serves ("head": true, from
 * tbl_vindex_image_head_serves when the sidecar is written), and opens it
 * as a partial index (hnsw_open_prefix) checked by its own checksums: the
 * vx header's, the exact vectors', the graph header's and the payloads'.
 * Only tables on object stores write version 2 graph images (vfam_begin):
 * the local walk is 5-9% faster on version 1's interleaved elements, and a
 * local read maps the whole file anyway.
 *
 * Opened images are cached process-wide (tbl_vindex_acquire) in a
 * table/fcache.h cache: entries keyed by path and the file's identity
 * (device, inode, size, mtime, ctime), refcounted, evicted least recently
 * used first beyond HS_VINDEX_CACHE_MB; an entry whose file changed is
 * dropped and freed at its last release.  Opening and validating happen
 * outside the cache's lock.
 */
#include "table/vindex.h"

#include "table/fcache.h"
#include "table/vcluster.h"

#include "base/hash.h"
#include "base/mem.h"
#include "base/numfmt.h"
#include "io/io.h"
#include "parquet/reader.h"
#include "table/table_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define VX_MAGIC "HSVECIDX"
#define VX_VERSION 1u           /* without exact vectors */
#define VX_VERSION_VECTORS 2u   /* with exact vectors (VX_FLAG_VECTORS) */
#define VX_HEADER 64u
#define VX_VERSION_CLUSTER 3u   /* a clustered vector section follows the graph */
#define VX_FLAG_MAP 1u
#define VX_FLAG_VECTORS 2u
#define VX_FLAG_CLUSTER 4u
#define VX_MAX_DIM 65536u
#define VX_BATCH 4096

/* ------------------------------------------------------------------ */
/* kinds and parameters                                                */

static const struct {
    const char *name;
    vq_type quant;
    bool ivf;
} KINDS[] = {
    {"hnsw", VQ_FLAT, false},         {"hnsw_tq8", VQ_TQ8, false},
    {"hnsw_tq4", VQ_TQ4, false},      {"hnsw_pq", VQ_PQ, false},
    {"hnsw_bin", VQ_BIN, false},      {"ivf_hnsw", VQ_FLAT, true},
    {"ivf_hnsw_tq8", VQ_TQ8, true},   {"ivf_hnsw_tq4", VQ_TQ4, true},
    {"ivf_hnsw_pq", VQ_PQ, true},     {"ivf_hnsw_bin", VQ_BIN, true},
};
#define N_KINDS ((int)(sizeof KINDS / sizeof KINDS[0]))

static int kind_index(const char *kind)
{
    for (int i = 0; kind && i < N_KINDS; i++)
        if (strcasecmp(kind, KINDS[i].name) == 0)
            return i;
    return -1;
}

bool tbl_vindex_is_vector_kind(const char *kind) { return kind_index(kind) >= 0; }

/* One integer parameter: a JSON integer in [lo, hi]. */
static hs_status int_param(json_t *v, const char *key, int lo, int hi, int *out, hs_error *err)
{
    if (!json_is_integer(v))
        return hs_err_set(err, HS_INVALID, "vector index parameter \"%s\" must be an integer",
                          key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return hs_err_set(err, HS_INVALID, "vector index parameter \"%s\" = %lld is outside "
                          "[%d, %d]", key, (long long)x, lo, hi);
    *out = (int)x;
    return HS_OK;
}

static hs_status parse_obj(json_t *o, tbl_vindex_spec *s, bool *ivf_set, hs_error *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        hnsw_params *p = &s->hp;
        if (strcmp(key, "type") == 0 || strcmp(key, "kind") == 0)
            continue;  /* handled by the caller */
        if (strcmp(key, "m") == 0 || strcmp(key, "M") == 0 || strcmp(key, "complexity") == 0)
            HS_TRY(int_param(v, key, 2, 256, &p->M, err));
        else if (strcmp(key, "ef_construction") == 0 || strcmp(key, "quality") == 0)
            HS_TRY(int_param(v, key, 1, 1 << 22, &p->ef_construction, err));
        else if (strcmp(key, "ef_search") == 0 || strcmp(key, "ef") == 0)
            HS_TRY(int_param(v, key, 1, 1 << 22, &p->ef_search, err));
        else if (strcmp(key, "pq_m") == 0 || strcmp(key, "compression") == 0)
            HS_TRY(int_param(v, key, 1, 65536, &p->quant.pq_m, err));
        else if (strcmp(key, "ivf_lists") == 0 || strcmp(key, "lists") == 0) {
            HS_TRY(int_param(v, key, 1, 1 << 20, &p->ivf_lists, err));
            *ivf_set = true;
        } else if (strcmp(key, "nprobe") == 0 || strcmp(key, "ivf_nprobe") == 0)
            HS_TRY(int_param(v, key, 1, 1 << 20, &p->ivf_nprobe, err));
        else if (strcmp(key, "rerank") == 0)
            HS_TRY(int_param(v, key, 1, 10000, &p->rerank, err));
        else if (strcmp(key, "cluster") == 0 || strcmp(key, "include") == 0)
            HS_TRY(tbl_vcl_check_param(key, v, err));   /* resolved by table/vcluster.c */
        else if (strcmp(key, "exact_vectors") == 0) {
            if (!json_is_boolean(v))
                return hs_err_set(err, HS_INVALID, "vector index parameter \"exact_vectors\" "
                                  "must be true or false");
            s->no_vectors = !json_is_true(v);
        }
        else if (strcmp(key, "seed") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 0)
                return hs_err_set(err, HS_INVALID, "vector index parameter \"seed\" must be a "
                                  "nonnegative integer");
            p->seed = (uint64_t)json_integer_value(v);
        } else if (strcmp(key, "metric") == 0 || strcmp(key, "distance") == 0) {
            if (!json_is_string(v))
                return hs_err_set(err, HS_INVALID, "vector index parameter \"%s\" must be a "
                                  "string (\"l2\", \"cosine\" or \"ip\")", key);
            hs_metric m;
            HS_TRY(hs_metric_from_name(json_string_value(v), &m, err));
            if (m != HS_METRIC_L2 && m != HS_METRIC_COSINE && m != HS_METRIC_IP)
                return hs_err_set(err, HS_INVALID, "vector index metric \"%s\" is not l2, "
                                  "cosine or ip", json_string_value(v));
            p->metric = m;
        } else {
            return hs_err_set(err, HS_INVALID, "unknown vector index parameter \"%s\" (known: "
                              "m, ef_construction, ef_search, metric, pq_m, ivf_lists, nprobe, "
                              "rerank, seed, exact_vectors, cluster, include, complexity, "
                              "quality, compression)", key);
        }
    }
    return HS_OK;
}

hs_status tbl_vindex_parse(const char *kind, const char *params_json, tbl_vindex_spec *out,
                           hs_error *err)
{
    memset(out, 0, sizeof *out);
    json_t *o = NULL;
    if (params_json && *params_json) {
        json_error_t je;
        o = hs_json_loads(params_json, JSON_REJECT_DUPLICATES, &je);
        if (!o)
            return hs_err_set(err, HS_INVALID, "index parameters: bad JSON at line %d column "
                              "%d: %s", je.line, je.column, je.text);
        if (!json_is_object(o)) {
            json_decref(o);
            return hs_err_set(err, HS_INVALID, "index parameters must be a JSON object");
        }
    }
    const char *type = NULL;
    json_t *tv = o ? json_object_get(o, "type") : NULL;
    if (!tv && o)
        tv = json_object_get(o, "kind");
    if (tv && !json_is_string(tv)) {
        json_decref(o);
        return hs_err_set(err, HS_INVALID, "index parameter \"type\" must be a string");
    }
    if (tv)
        type = json_string_value(tv);
    if (kind && type && strcasecmp(kind, type) != 0 && strcasecmp(kind, "auto") != 0) {
        hs_status st = hs_err_set(err, HS_INVALID, "index kind \"%s\" and parameter type \"%s\" "
                                  "differ", kind, type);
        json_decref(o);
        return st;
    }
    const char *name = type ? type : (kind && strcasecmp(kind, "auto") != 0 ? kind : "hnsw");
    int ki = kind_index(name);
    if (ki < 0) {
        hs_status st = hs_err_set(err, HS_INVALID, "unknown vector index kind \"%s\" (hnsw, "
                                  "hnsw_tq8, hnsw_tq4, hnsw_pq, hnsw_bin, ivf_hnsw, "
                                  "ivf_hnsw_tq8, ivf_hnsw_tq4, ivf_hnsw_pq, ivf_hnsw_bin)", name);
        json_decref(o);
        return st;
    }
    snprintf(out->kind, sizeof out->kind, "%s", KINDS[ki].name);
    out->hp.metric = HS_METRIC_L2;
    out->hp.quant.type = KINDS[ki].quant;
    bool ivf_set = false;
    hs_status st = o ? parse_obj(o, out, &ivf_set, err) : HS_OK;
    json_decref(o);
    HS_TRY(st);
    if (!KINDS[ki].ivf && ivf_set)
        return hs_err_set(err, HS_INVALID, "index kind \"%s\" has no IVF lists (use ivf_%s)",
                          out->kind, out->kind);
    if (!KINDS[ki].ivf)
        out->hp.ivf_lists = 0;
    else if (!ivf_set)
        out->hp.ivf_lists = -1;   /* chosen per file from its row count */
    if (out->hp.quant.type != VQ_PQ && out->hp.quant.pq_m)
        return hs_err_set(err, HS_INVALID, "index kind \"%s\" takes no pq_m / compression",
                          out->kind);
    out->hp.quant.metric = out->hp.metric;
    return HS_OK;
}

hs_status tbl_vindex_params_json(const tbl_vindex_spec *s, hs_buf *out)
{
    const hnsw_params *p = &s->hp;
    HS_TRY(hs_buf_printf(out, "{\"m\":%d,\"ef_construction\":%d,\"ef_search\":%d,"
                         "\"metric\":\"%s\"", p->M ? p->M : 16,
                         p->ef_construction ? p->ef_construction : 200,
                         p->ef_search ? p->ef_search : 64, hs_metric_name(p->metric)));
    if (p->quant.type != VQ_FLAT)
        HS_TRY(hs_buf_printf(out, ",\"rerank\":%d",
                             p->rerank ? p->rerank : hnsw_default_rerank(p->quant.type)));
    if (p->quant.type == VQ_PQ && p->quant.pq_m)
        HS_TRY(hs_buf_printf(out, ",\"pq_m\":%d", p->quant.pq_m));
    if (p->ivf_lists > 0)
        HS_TRY(hs_buf_printf(out, ",\"ivf_lists\":%d", p->ivf_lists));
    if (p->ivf_nprobe > 0)
        HS_TRY(hs_buf_printf(out, ",\"nprobe\":%d", p->ivf_nprobe));
    if (p->seed)
        HS_TRY(hs_buf_printf(out, ",\"seed\":%" PRIu64, p->seed));
    if (s->no_vectors)
        HS_TRY(hs_buf_puts(out, ",\"exact_vectors\":false"));
    return hs_buf_puts(out, "}");
}

/* ------------------------------------------------------------------ */
/* the vector column of one data file                                  */

struct tbl_vcol {
    char *path;               /* owned */
    char *name;               /* column name, owned */
    hs_file *f;
    pq_reader *r;
    int col;                  /* top-level column in the file; -1 = absent */
    int64_t n_rows;
};

void tbl_vcol_close(tbl_vcol *vc)
{
    if (!vc)
        return;
    pq_reader_close(vc->r);
    hs_file_close(vc->f);
    hs_free(vc->path);
    hs_free(vc->name);
    hs_free(vc);
}

int64_t tbl_vcol_num_rows(const tbl_vcol *vc) { return vc->n_rows; }
const char *tbl_vcol_path(const tbl_vcol *vc) { return vc->path; }

static bool file_has_ids(const hs_field *fs)
{
    for (int k = 0; k < fs->n_children; k++)
        if (fs->children[k].field_id >= 0)
            return true;
    return false;
}

hs_status tbl_vcol_open(const char *path, const hs_field *field, tbl_vcol **out, hs_error *err)
{
    *out = NULL;
    if (!tbl_is_float_vector_type(field))
        return hs_err_set(err, HS_INVALID, "column \"%s\" is %s, not a vector column "
                          "(list<float> or fixed_size_list<float>)", field->name,
                          hs_type_name(field->type));
    tbl_vcol *vc = hs_calloc(1, sizeof *vc);
    if (!vc)
        return hs_err_nomem(err, sizeof *vc);
    vc->col = -1;
    vc->path = hs_strdup(path);
    vc->name = hs_strdup(field->name);
    hs_status st = vc->path && vc->name ? HS_OK : hs_err_nomem(err, strlen(path));
    if (st == HS_OK)
        st = hs_io_open(path, &vc->f, err);
    if (st == HS_OK)
        st = pq_reader_open(vc->f, &vc->r, err);
    if (st == HS_OK) {
        const hs_field *fs = pq_reader_schema(vc->r);
        bool ids = file_has_ids(fs);
        for (int k = 0; k < fs->n_children && vc->col < 0; k++)
            if (ids ? fs->children[k].field_id == field->field_id
                    : strcmp(fs->children[k].name, field->name) == 0)
                vc->col = k;
        vc->n_rows = pq_reader_num_rows(vc->r);
        if (vc->col >= 0 && !tbl_is_float_vector_type(&fs->children[vc->col]))
            st = hs_err_set(err, HS_INVALID, "column \"%s\" is stored as %s in this file, not "
                            "as a list of float", field->name,
                            hs_type_name(fs->children[vc->col].type));
        if (vc->n_rows < 0 || vc->n_rows > (int64_t)UINT32_MAX)
            st = HS_CORRUPT_AT(err, "%" PRId64 " rows: more than a data file may hold",
                               vc->n_rows);
    }
    if (st != HS_OK) {
        hs_err_prefix(err, "%s", path);
        tbl_vcol_close(vc);
        return st;
    }
    *out = vc;
    return HS_OK;
}

/* Calls fn for each row of a vector column c (list<float> or
 * fixed_size_list<float>); positions come from the iterator `it` (rows
 * selected) or count up from *next_pos.  path/name name the column in
 * messages. */
static hs_status each_vector(const char *path, const char *name, const hs_column *c,
                             roaring_uint32_iterator_t *it, uint32_t *next_pos, tbl_vrow_fn fn,
                             void *ctx, hs_error *err)
{
    if ((c->type != HS_TYPE_LIST && c->type != HS_TYPE_FIXED_LIST) || c->n_children != 1 ||
        !c->children[0] || c->children[0]->type != HS_TYPE_FLOAT32)
        return HS_CORRUPT_AT(err, "%s: column \"%s\" did not read as a list of float", path,
                             name);
    const hs_column *elem = c->children[0];
    const float *v = HS_COL_VALUES(elem, float);
    for (int64_t r = 0; r < c->length; r++) {
        uint32_t pos;
        if (it) {
            if (!it->has_value)
                return HS_CORRUPT_AT(err, "%s: the reader returned more rows than selected",
                                     path);
            pos = it->current_value;
            roaring_advance_uint32_iterator(it);
        } else {
            pos = (*next_pos)++;
        }
        if (!hs_col_is_valid(c, r)) {
            HS_TRY(fn(ctx, pos, NULL, 0, err));
            continue;
        }
        int64_t start, end;
        if (c->type == HS_TYPE_FIXED_LIST) {
            start = r * c->width;
            end = start + c->width;
        } else {
            start = HS_COL_OFFSETS(c)[r];
            end = HS_COL_OFFSETS(c)[r + 1];
        }
        if (start < 0 || end < start || end > elem->length)
            return HS_CORRUPT_AT(err, "%s: column \"%s\" row %" PRIu32 ": list offsets out of "
                                 "range", path, name, pos);
        if (elem->validity.data && hs_bits_count(elem->validity.data, start, end - start) !=
                                       end - start)
            return hs_err_set(err, HS_INVALID, "%s: column \"%s\" row %" PRIu32 ": the vector "
                              "has a null element", path, name, pos);
        if (end - start > (1 << 20))
            return hs_err_set(err, HS_INVALID, "%s: column \"%s\" row %" PRIu32 ": vector of "
                              "%" PRId64 " elements", path, name, pos, end - start);
        HS_TRY(fn(ctx, pos, v + start, (int)(end - start), err));
    }
    return HS_OK;
}

hs_status tbl_vcol_scan(tbl_vcol *vc, const roaring_bitmap_t *rows, tbl_vrow_fn fn, void *ctx,
                        hs_error *err)
{
    if (vc->col < 0) {
        /* the file predates the column: every row is null */
        if (rows) {
            roaring_uint32_iterator_t it;
            roaring_init_iterator(rows, &it);
            for (; it.has_value && it.current_value < (uint64_t)vc->n_rows;
                 roaring_advance_uint32_iterator(&it))
                HS_TRY(fn(ctx, it.current_value, NULL, 0, err));
        } else {
            for (int64_t i = 0; i < vc->n_rows; i++)
                HS_TRY(fn(ctx, (uint32_t)i, NULL, 0, err));
        }
        return HS_OK;
    }
    roaring_bitmap_t *clipped = NULL;
    if (rows && roaring_bitmap_maximum(rows) >= (uint64_t)vc->n_rows &&
        !roaring_bitmap_is_empty(rows)) {
        clipped = roaring_bitmap_copy(rows);
        if (!clipped)
            return hs_err_nomem(err, 64);
        roaring_bitmap_remove_range(clipped, (uint64_t)vc->n_rows, (uint64_t)UINT32_MAX + 1);
        rows = clipped;
    }
    if (rows && roaring_bitmap_is_empty(rows)) {
        tbl_bitmap_free(clipped);
        return HS_OK;
    }
    pq_scan_options so = {.columns = &vc->col, .n_columns = 1, .rows = rows,
                          .batch_size = VX_BATCH};
    pq_scan *s = NULL;
    hs_status st = pq_scan_open(vc->r, &so, &s, err);
    roaring_uint32_iterator_t it;
    if (rows)
        roaring_init_iterator(rows, &it);
    uint32_t next_pos = 0;
    while (st == HS_OK) {
        hs_batch *b = NULL;
        st = pq_scan_next(s, &b, err);
        if (st != HS_OK) {
            hs_err_prefix(err, "%s", vc->path);
            break;
        }
        if (!b)
            break;
        if (b->n_cols != 1)
            st = HS_CORRUPT_AT(err, "%s: the reader returned %d columns", vc->path, b->n_cols);
        else
            st = each_vector(vc->path, vc->name, b->cols[0], rows ? &it : NULL, &next_pos, fn,
                             ctx, err);
        hs_batch_free(b);
    }
    pq_scan_close(s);
    tbl_bitmap_free(clipped);
    return st;
}

/* ------------------------------------------------------------------ */
/* building                                                            */

struct tbl_vbuilder {
    tbl_vindex_spec spec;
    int32_t field_id;
    char *name;               /* column name (owned) */
    int64_t data_file_size;
    int64_t n_rows;           /* rows of the data file */
    int64_t next_pos;         /* rows added so far */
    int n_threads;            /* 0 = a share of the cores */
    tbl_vprogress_fn progress;
    void *progress_ctx;
    bool graph_v1;            /* write the graph as a version 1 image (tbl_vbuilder_set_local) */
    hs_buf vecs;              /* float, row-major */
    hs_buf pos;               /* uint32 file positions */
    int dim;                  /* learned from the first vector */
};

static _Atomic int g_builds_running;

void tbl_vbuilder_free(tbl_vbuilder *b)
{
    if (!b)
        return;
    hs_free(b->name);
    hs_buf_free(&b->vecs);
    hs_buf_free(&b->pos);
    hs_free(b);
}

hs_status tbl_vbuilder_new(const char *kind, const char *params, const hs_field *f,
                           int64_t data_file_size, int64_t n_rows, tbl_vbuilder **out,
                           hs_error *err)
{
    *out = NULL;
    if (!tbl_is_float_vector_type(f))
        return hs_err_set(err, HS_INVALID, "a %s index needs a vector column (list<float>); "
                          "\"%s\" is %s", kind ? kind : "vector", f->name,
                          hs_type_name(f->type));
    if (n_rows < 0 || n_rows > (int64_t)UINT32_MAX)
        return hs_err_set(err, HS_INVALID, "vector index: %" PRId64 " rows in one data file",
                          n_rows);
    tbl_vbuilder *b = hs_calloc(1, sizeof *b);
    if (!b)
        return hs_err_nomem(err, sizeof *b);
    hs_status st = tbl_vindex_parse(kind, params, &b->spec, err);
    b->field_id = f->field_id;
    b->data_file_size = data_file_size;
    b->n_rows = n_rows;
    if (st == HS_OK && !(b->name = hs_strdup(f->name)))
        st = hs_err_nomem(err, 64);
    if (st != HS_OK) {
        tbl_vbuilder_free(b);
        return st;
    }
    *out = b;
    return HS_OK;
}

void tbl_vbuilder_set_threads(tbl_vbuilder *b, int n_threads)
{
    b->n_threads = n_threads > 0 ? n_threads : 0;
}

void tbl_vbuilder_set_progress(tbl_vbuilder *b, tbl_vprogress_fn fn, void *ctx)
{
    b->progress = fn;
    b->progress_ctx = ctx;
}

static hs_status collect_row(void *ctx, uint32_t pos, const float *v, int dim, hs_error *err)
{
    tbl_vbuilder *b = ctx;
    if (!v)
        return HS_OK;
    if (b->dim == 0)
        b->dim = dim;
    if (dim != b->dim)
        return hs_err_set(err, HS_INVALID, "column \"%s\" row %" PRIu32 ": vector has %d "
                          "dimensions, earlier vectors of the file have %d", b->name, pos, dim,
                          b->dim);
    for (int j = 0; j < dim; j++)
        if (!isfinite(v[j]))
            return hs_err_set(err, HS_INVALID, "column \"%s\" row %" PRIu32 ": vector element "
                              "%d is %s (vectors must be finite)", b->name, pos, j,
                              isnan(v[j]) ? "NaN" : "infinite");
    if (hs_buf_append(&b->vecs, v, (size_t)dim * sizeof(float)) != HS_OK ||
        HS_VEC_PUSH(&b->pos, uint32_t, pos) != HS_OK)
        return hs_err_nomem(err, (size_t)dim * sizeof(float));
    return HS_OK;
}

hs_status tbl_vbuilder_add(tbl_vbuilder *b, const hs_column *c, int64_t first_pos, hs_error *err)
{
    if (first_pos != b->next_pos || c->length > b->n_rows - first_pos)
        return hs_err_set(err, HS_INTERNAL, "vector index: rows %" PRId64 "..%" PRId64 " added "
                          "after %" PRId64 " of %" PRId64, first_pos, first_pos + c->length,
                          b->next_pos, b->n_rows);
    uint32_t next = (uint32_t)first_pos;
    HS_TRY(each_vector("", b->name, c, NULL, &next, collect_row, b, err));
    b->next_pos += c->length;
    return HS_OK;
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static uint64_t header_sum(const uint8_t *hdr, const uint8_t *map, size_t map_bytes)
{
    uint64_t h = hs_xxh64(hdr, 56, 0);
    return map_bytes ? hs_xxh64(map, map_bytes, h) : h;
}

static size_t align64(size_t x) { return (x + 63) & ~(size_t)63; }

/* IVF lists when the kind asks for IVF without a count: about sqrt(n),
 * at most 256, and lists of at least 64 vectors. */
static int default_lists(size_t n)
{
    size_t l = (size_t)sqrt((double)n);
    if (l > 256)
        l = 256;
    if (l > n / 64)
        l = n / 64;
    return l < 1 ? 1 : (int)l;
}

/* Threads for one graph build: the cores shared by the builds running now
 * (add_index builds several files at once). */
static int build_threads(int asked, int running)
{
    if (asked > 0)
        return asked;
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = c > 0 ? (int)c : 1;
    int share = cores / (running > 0 ? running : 1);
    return share < 1 ? 1 : share;
}

hs_status tbl_vbuilder_finish(tbl_vbuilder *b, hs_buf *out, hs_error *err)
{
    if (b->next_pos != b->n_rows)
        return hs_err_set(err, HS_INTERNAL, "vector index: %" PRId64 " of %" PRId64 " rows added",
                          b->next_pos, b->n_rows);
    size_t n = HS_VEC_LEN(&b->pos, uint32_t);
    hnsw_index *ix = NULL;
    hs_status st = HS_OK;
    if (n > 0) {
        hnsw_params hp = b->spec.hp;
        int running = atomic_fetch_add(&g_builds_running, 1) + 1;
        hp.n_threads = build_threads(b->n_threads, running);
        hp.quant.n_threads = hp.n_threads;
        hp.quant.metric = hp.metric;
        if (hp.ivf_lists < 0)
            hp.ivf_lists = default_lists(n);
        if (hp.quant.type == VQ_PQ && hp.quant.pq_m > b->dim)
            hp.quant.pq_m = b->dim;   /* at most one subspace per dimension */
        st = hnsw_build((const float *)b->vecs.data, n, (size_t)b->dim, &hp,
                        (hnsw_progress_fn)b->progress, b->progress_ctx, &ix, err);
        atomic_fetch_sub(&g_builds_running, 1);
        if (st != HS_OK && st != HS_CANCELLED)
            hs_err_prefix(err, "column \"%s\"", b->name);
    }
    bool with_map = n != (size_t)b->n_rows;
    size_t map_bytes = with_map ? n * 4 : 0;
    /* exact vectors where the graph does not hold them (header comment) */
    bool with_vecs = n > 0 && !b->spec.no_vectors &&
                     (b->spec.hp.quant.type != VQ_FLAT || b->spec.hp.metric == HS_METRIC_COSINE);
    size_t vec_bytes = with_vecs ? n * (size_t)b->dim * sizeof(float) : 0;
    size_t start = out->len;
    if (st == HS_OK) {
        uint8_t hdr[VX_HEADER] = {0};
        memcpy(hdr, VX_MAGIC, 8);
        put_u32(hdr + 8, with_vecs ? VX_VERSION_VECTORS : VX_VERSION);
        put_u32(hdr + 12, VX_HEADER);
        put_u64(hdr + 16, (uint64_t)b->data_file_size);
        put_u64(hdr + 24, (uint64_t)b->n_rows);
        put_u64(hdr + 32, (uint64_t)n);
        put_u32(hdr + 40, (uint32_t)b->field_id);
        put_u32(hdr + 44, n ? (uint32_t)b->dim : 0);
        put_u32(hdr + 48, (with_map ? VX_FLAG_MAP : 0) | (with_vecs ? VX_FLAG_VECTORS : 0));
        put_u32(hdr + 52, (uint32_t)b->spec.hp.metric);
        put_u64(hdr + 56, header_sum(hdr, b->pos.data, map_bytes));
        static const uint8_t zeros[64];
        size_t pad = align64(VX_HEADER + map_bytes) - (VX_HEADER + map_bytes);
        if (hs_buf_append(out, hdr, sizeof hdr) != HS_OK ||
            (map_bytes && hs_buf_append(out, b->pos.data, map_bytes) != HS_OK) ||
            hs_buf_append(out, zeros, pad) != HS_OK)
            st = hs_err_nomem(err, map_bytes);
        if (st == HS_OK && with_vecs) {
            uint8_t sum[8];
            put_u64(sum, hs_xxh64(b->vecs.data, vec_bytes, 0));
            pad = align64(vec_bytes + 8) - (vec_bytes + 8);
            if (hs_buf_append(out, b->vecs.data, vec_bytes) != HS_OK ||
                hs_buf_append(out, sum, 8) != HS_OK || hs_buf_append(out, zeros, pad) != HS_OK)
                st = hs_err_nomem(err, vec_bytes);
        }
    }
    if (st == HS_OK && ix)
        st = hnsw_save_version(ix, b->graph_v1 ? 1 : 2, out, err);
    if (st != HS_OK)
        out->len = start;
    hnsw_free(ix);
    return st;
}

hs_status tbl_vindex_mark_clustered(uint8_t *p, size_t n, hs_error *err)
{
    if (n < VX_HEADER || memcmp(p, VX_MAGIC, 8) != 0 || get_u64(p + 32) == 0)
        return hs_err_set(err, HS_INTERNAL, "vector index: no sidecar of vectors to mark");
    uint32_t flags = get_u32(p + 48);
    size_t map_bytes = (flags & VX_FLAG_MAP) ? (size_t)get_u64(p + 32) * 4 : 0;
    if (VX_HEADER + map_bytes > n)
        return hs_err_set(err, HS_INTERNAL, "vector index: sidecar shorter than its map");
    put_u32(p + 8, VX_VERSION_CLUSTER);
    put_u32(p + 48, flags | VX_FLAG_CLUSTER);
    put_u64(p + 56, header_sum(p, p + VX_HEADER, map_bytes));
    return HS_OK;
}

/* ---- the family of vector index kinds (table_int.h tbl_ixkind) ---- */

static bool vfam_handles(const char *kind) { return tbl_vindex_is_vector_kind(kind); }

static hs_status vfam_check(const char *kind, const hs_field *f, const char *params,
                            hs_error *err)
{
    if (!tbl_is_float_vector_type(f))
        return hs_err_set(err, HS_INVALID, "a %s index needs a vector column (list<float> or "
                          "fixed_size_list<float>); \"%s\" is %s", kind, f->name,
                          hs_type_name(f->type));
    tbl_vindex_spec s;
    return tbl_vindex_parse(kind, params, &s, err);
}

void tbl_vbuilder_set_local(tbl_vbuilder *b, bool local) { b->graph_v1 = local; }

static hs_status vfam_begin(const char *kind, const char *params, const hs_field *f,
                            int64_t data_file_size, int64_t n_rows, bool object_store, void **state,
                            hs_error *err)
{
    hs_status st = tbl_vbuilder_new(kind, params, f, data_file_size, n_rows, (tbl_vbuilder **)state,
                                    err);
    /* a local table's graph keeps each row's vector beside its links (the
     * walk's locality); an object store's puts them apart, so that an
     * exact search reads only the head (header comment) */
    if (st == HS_OK)
        tbl_vbuilder_set_local(*state, !object_store);
    return st;
}

static hs_status vfam_add(void *state, const hs_column *c, int64_t first_pos, hs_error *err)
{
    return tbl_vbuilder_add(state, c, first_pos, err);
}

static hs_status vfam_finish(void *state, hs_buf *out, hs_error *err)
{
    return tbl_vbuilder_finish(state, out, err);
}

static void vfam_free(void *state) { tbl_vbuilder_free(state); }

const tbl_ixkind tbl_vector_ixkind = {
    "vector", vfam_handles, vfam_check, vfam_begin, vfam_add, vfam_finish, vfam_free,
};

/* ------------------------------------------------------------------ */
/* opening                                                             */

struct tbl_vindex {
    uint8_t *own;             /* the image when owned (hs_malloc_aligned) */
    const uint32_t *map;      /* NULL = identity */
    const float *vecs;        /* exact vectors (version 2), n * dim; NULL = none */
    hnsw_index *ix;           /* NULL when n == 0 */
    tbl_vindex_info info;
    tbl_fref *ref;            /* the cache entry holding it (tbl_vindex_acquire) */
    bool partial;             /* the head only (tbl_vindex_acquire_head): ix is partial */
};

void tbl_vindex_close(tbl_vindex *vi)
{
    if (!vi)
        return;
    hnsw_free(vi->ix);
    hs_free_aligned(vi->own);
    hs_free(vi);
}

/* Opens p[0..avail) of an image of n bytes: the whole image (avail == n),
 * or its head (avail < n; then the graph is opened by hnsw_open_prefix and
 * HS_UNSUPPORTED says that the head cannot serve: read the whole). */
static hs_status open_image_at(uint8_t *p, size_t n, size_t avail, bool own, tbl_vindex **out,
                               hs_error *err)
{
    *out = NULL;
    tbl_vindex *vi = hs_calloc(1, sizeof *vi);
    if (!vi) {
        if (own)
            hs_free_aligned(p);
        return hs_err_nomem(err, sizeof *vi);
    }
    if (own)
        vi->own = p;
    hs_status st = HS_OK;
    uint32_t version = n >= VX_HEADER ? get_u32(p + 8) : 0;
    if (n < VX_HEADER || memcmp(p, VX_MAGIC, 8) != 0)
        st = HS_CORRUPT_AT(err, "vector index: bad magic or %zu bytes is too short", n);
    else if ((version != VX_VERSION && version != VX_VERSION_VECTORS &&
              version != VX_VERSION_CLUSTER) ||
             get_u32(p + 12) != VX_HEADER)
        st = HS_CORRUPT_AT(err, "vector index: version %" PRIu32 " / header %" PRIu32
                           " unknown", version, get_u32(p + 12));
    uint64_t rows = 0, nv = 0;
    uint32_t flags = 0, dim = 0;
    size_t map_bytes = 0, graph_off = 0, vec_off = 0, vec_bytes = 0;
    if (st == HS_OK) {
        rows = get_u64(p + 24);
        nv = get_u64(p + 32);
        dim = get_u32(p + 44);
        flags = get_u32(p + 48);
        uint32_t known = version == VX_VERSION ? VX_FLAG_MAP
                         : version == VX_VERSION_VECTORS ? VX_FLAG_MAP | VX_FLAG_VECTORS
                         : VX_FLAG_MAP | VX_FLAG_VECTORS | VX_FLAG_CLUSTER;
        if (rows > UINT32_MAX || nv > rows || (flags & ~known) || get_u32(p + 52) > 2 ||
            (!(flags & VX_FLAG_MAP) && nv != rows) || (nv > 0) != (dim > 0) ||
            dim > VX_MAX_DIM || get_u64(p + 16) > (uint64_t)INT64_MAX ||
            (version == VX_VERSION_VECTORS && !(flags & VX_FLAG_VECTORS)) ||
            (version == VX_VERSION_CLUSTER) != ((flags & VX_FLAG_CLUSTER) != 0) ||
            ((flags & VX_FLAG_CLUSTER) && nv == 0) ||
            ((flags & VX_FLAG_VECTORS) && nv == 0))
            st = HS_CORRUPT_AT(err, "vector index: inconsistent header (version %" PRIu32
                               ", rows %" PRIu64 ", vectors %" PRIu64 ", dimension %" PRIu32
                               ", flags %" PRIu32 ")", version, rows, nv, dim, flags);
    }
    if (st == HS_OK) {
        /* rows <= 2^32 and dim <= 2^16: every size below fits in 64 bits */
        map_bytes = (flags & VX_FLAG_MAP) ? (size_t)nv * 4 : 0;
        vec_off = align64(VX_HEADER + map_bytes);
        vec_bytes = (flags & VX_FLAG_VECTORS) ? (size_t)nv * dim * sizeof(float) : 0;
        graph_off = vec_bytes ? align64(vec_off + vec_bytes + 8) : vec_off;
        if (nv == 0 ? n != VX_HEADER : graph_off >= n)
            st = HS_CORRUPT_AT(err, "vector index: %zu bytes cannot hold %" PRIu64 " vectors "
                               "of dimension %" PRIu32, n, nv, dim);
        else if (avail < n && (nv == 0 || avail < graph_off))
            st = hs_err_set(err, HS_UNSUPPORTED, "vector index: its first %zu bytes do not "
                            "reach the graph at %zu", avail, graph_off);
        else if (header_sum(p, p + VX_HEADER, map_bytes) != get_u64(p + 56))
            st = HS_CORRUPT_AT(err, "vector index: header checksum mismatch");
        else if (vec_bytes && hs_xxh64(p + vec_off, vec_bytes, 0) !=
                                  get_u64(p + vec_off + vec_bytes))
            st = HS_CORRUPT_AT(err, "vector index: checksum mismatch in the exact vectors "
                               "(%zu bytes at offset %zu)", vec_bytes, vec_off);
    }
    /* padding is zero, so that no byte of the image goes unchecked */
    for (size_t i = VX_HEADER + map_bytes; st == HS_OK && nv > 0 && i < vec_off; i++)
        if (p[i])
            st = HS_CORRUPT_AT(err, "vector index: nonzero padding at offset %zu", i);
    for (size_t i = vec_off + vec_bytes + 8; st == HS_OK && vec_bytes && i < graph_off; i++)
        if (p[i])
            st = HS_CORRUPT_AT(err, "vector index: nonzero padding at offset %zu", i);
    if (st == HS_OK && vec_bytes)
        vi->vecs = (const float *)(const void *)(p + vec_off);
    if (st == HS_OK && map_bytes) {
        vi->map = (const uint32_t *)(const void *)(p + VX_HEADER);
        for (uint64_t i = 0; i < nv && st == HS_OK; i++)
            if (vi->map[i] >= rows || (i > 0 && vi->map[i] <= vi->map[i - 1]))
                st = HS_CORRUPT_AT(err, "vector index: position map entry %" PRIu64
                                   " out of order", i);
    }
    /* version 3: the graph image ends where its header says (its bytes at
     * offset 16), the clustered section (vcluster.c, read apart) after it */
    size_t graph_len = n - graph_off;
    if (st == HS_OK && (flags & VX_FLAG_CLUSTER) && avail == n) {
        uint64_t gl = graph_off + 24 <= n ? get_u64(p + graph_off + 16) : 0;
        if (gl < 24 || gl > n - graph_off)
            st = HS_CORRUPT_AT(err, "vector index: graph image of %" PRIu64 " bytes in %zu",
                               gl, n - graph_off);
        else
            graph_len = (size_t)gl;
    }
    if (st == HS_OK && nv > 0) {
        st = avail < n ? hnsw_open_prefix(p + graph_off, avail - graph_off, &vi->ix, err)
                       : hnsw_open(p + graph_off, graph_len, &vi->ix, err);
        vi->partial = avail < n;
        if (st == HS_OK) {
            hnsw_info hi;
            hnsw_get_info(vi->ix, &hi);
            if (hi.n != nv || hi.d != dim || (uint32_t)hi.metric != get_u32(p + 52))
                st = HS_CORRUPT_AT(err, "vector index: graph of %zu x %zu (metric %d), header "
                                   "says %" PRIu64 " x %" PRIu32 " (metric %" PRIu32 ")", hi.n,
                                   hi.d, (int)hi.metric, nv, dim, get_u32(p + 52));
            vi->info.quant = hi.quant;
            vi->info.ivf_lists = hi.ivf_lists;
        }
    }
    if (st != HS_OK) {
        tbl_vindex_close(vi);
        return st;
    }
    vi->info.metric = (hs_metric)get_u32(p + 52);
    vi->info.field_id = (int32_t)get_u32(p + 40);
    vi->info.data_file_size = (int64_t)get_u64(p + 16);
    vi->info.n_rows = (int64_t)rows;
    vi->info.n_vectors = (int64_t)nv;
    vi->info.dim = (int)dim;
    *out = vi;
    return HS_OK;
}

hs_status tbl_vindex_open_image(uint8_t *p, size_t n, bool own, tbl_vindex **out, hs_error *err)
{
    return open_image_at(p, n, n, own, out, err);
}

hs_status tbl_vindex_open_head(uint8_t *p, size_t n, size_t avail, tbl_vindex **out,
                               hs_error *err)
{
    *out = NULL;
    if (avail > n)
        return hs_err_set(err, HS_INVALID, "vector index: a head of %zu bytes of %zu", avail, n);
    return open_image_at(p, n, avail, false, out, err);
}

/* Opens the image p[0..n) of the sidecar at path (takes ownership of p, an
 * hs_malloc_aligned buffer) and checks that it covers the data file. */
static hs_status open_owned(const char *path, uint8_t *p, size_t n, int32_t field_id,
                            int64_t data_file_size, tbl_vindex **out, hs_error *err)
{
    tbl_vindex *vi = NULL;
    hs_status st = tbl_vindex_open_image(p, n, true, &vi, err);
    if (st == HS_OK && (vi->info.field_id != field_id ||
                        vi->info.data_file_size != data_file_size)) {
        st = HS_CORRUPT_AT(err, "vector index is stale: it covers field %" PRId32 " of a "
                           "data file of %" PRId64 " bytes, not field %" PRId32 " of %" PRId64
                           " bytes", vi->info.field_id, vi->info.data_file_size, field_id,
                           data_file_size);
        tbl_vindex_close(vi);
        vi = NULL;
    }
    if (st != HS_OK) {
        hs_err_prefix(err, "%s", path);
        return st;
    }
    *out = vi;
    return HS_OK;
}

hs_status tbl_vindex_open_file(const char *path, int32_t field_id, int64_t data_file_size,
                               int64_t file_size, tbl_vindex **out, hs_error *err)
{
    *out = NULL;
    hs_file *f = NULL;
    HS_TRY(hs_io_open(path, &f, err));
    size_t n = (size_t)f->size;
    if (file_size >= 0 && f->size != (uint64_t)file_size) {
        hs_file_close(f);
        return HS_CORRUPT_AT(err, "%s: vector index has %zu bytes, the registry says %" PRId64
                             " (truncated or replaced)", path, n, file_size);
    }
    uint8_t *p = f->size > (uint64_t)SIZE_MAX / 2 ? NULL : hs_malloc_aligned(n ? n : 1);
    hs_status st = p ? hs_file_read_at(f, 0, n, p, err) : hs_err_nomem(err, n);
    hs_file_close(f);
    if (st != HS_OK) {
        hs_free_aligned(p);
        return st;
    }
    return open_owned(path, p, n, field_id, data_file_size, out, err);
}

/* ---- the cache ---- */

static void vc_free(void *obj) { tbl_vindex_close(obj); }

static tbl_fcache g_vc = TBL_FCACHE_INIT("HS_VINDEX_CACHE_MB", 1024, vc_free);

static hs_status check_cover(const tbl_vindex *vi, const char *path, int32_t field_id,
                             int64_t data_file_size, hs_error *err)
{
    if (vi->info.field_id == field_id && vi->info.data_file_size == data_file_size)
        return HS_OK;
    return HS_CORRUPT_AT(err, "%s: vector index is stale: it covers field %" PRId32 " of a data "
                         "file of %" PRId64 " bytes, not field %" PRId32 " of %" PRId64 " bytes",
                         path, vi->info.field_id, vi->info.data_file_size, field_id,
                         data_file_size);
}

typedef struct vc_load_ctx {
    const char *path;         /* as the registry names it, for messages */
    int32_t field_id;
    int64_t data_file_size, file_size;
    uint8_t *pre;             /* the whole sidecar, already read (object stores); owned */
} vc_load_ctx;

static hs_status vc_load(void *ctx, const char *local, tbl_fref *ref, void **obj, size_t *cost,
                         hs_error *err)
{
    (void)local;
    vc_load_ctx *x = ctx;
    tbl_vindex *vi = NULL;
    if (x->pre) {
        uint8_t *p = x->pre;
        x->pre = NULL;   /* open_owned owns it now */
        HS_TRY(open_owned(x->path, p, (size_t)x->file_size, x->field_id, x->data_file_size,
                          &vi, err));
    } else {
        HS_TRY(tbl_vindex_open_file(x->path, x->field_id, x->data_file_size, x->file_size, &vi,
                                    err));
    }
    vi->ref = ref;
    int64_t sz = tbl_fref_file_size(ref);
    if (sz < 0)
        sz = x->file_size;   /* not stat'ed (object stores): the registry's size */
    *cost = (size_t)(sz > 0 ? sz : 0) + sizeof *vi;
    *obj = vi;
    return HS_OK;
}

/* tbl_vindex_acquire with `pre` (owned; NULL: none) the whole sidecar
 * already read. */
static hs_status acquire_whole(const char *path, int32_t field_id, int64_t data_file_size,
                               int64_t file_size, uint8_t *pre, const tbl_vindex **out,
                               hs_error *err)
{
    *out = NULL;
    vc_load_ctx ctx = {path, field_id, data_file_size, file_size, pre};
    /* On an object store, opening a sidecar (for the cache's identity check)
     * costs a GET of its tail before the GET of the whole image: a sidecar
     * not seen before is read whole at once instead, by the size the
     * registry records, which also tells the cache its identity (one round
     * trip, not two).  Any failure here falls back to the usual path, which
     * reports it. */
    if (!ctx.pre && file_size > 0 && file_size < ((int64_t)1 << 40) &&
        hs_io_is_object_uri(path) && !hs_io_identity_cached(path)) {
        hs_error ignored = {0};
        ctx.pre = hs_malloc_aligned((size_t)file_size);
        if (ctx.pre && hs_io_read_whole(path, ctx.pre, (uint64_t)file_size, &ignored) != HS_OK) {
            hs_free_aligned(ctx.pre);
            ctx.pre = NULL;
        }
    }
    void *obj = NULL;
    tbl_fref *ref = NULL;
    hs_status gs = tbl_fcache_get(&g_vc, tbl_local(path), NULL, 0, vc_load, &ctx, &obj, &ref,
                                  err);
    hs_free_aligned(ctx.pre);   /* not taken: the cache held the image already */
    HS_TRY(gs);
    tbl_vindex *vi = obj;
    /* a cached image was opened for the file, maybe for another registry entry */
    hs_status cs = check_cover(vi, path, field_id, data_file_size, err);
    int64_t have = tbl_fref_file_size(ref);
    if (cs == HS_OK && file_size >= 0 && have >= 0 && have != file_size)
        cs = HS_CORRUPT_AT(err, "%s: vector index has %lld bytes, the registry says %" PRId64
                           " (truncated or replaced)", path, (long long)have, file_size);
    if (cs != HS_OK) {
        tbl_fcache_release(&g_vc, ref);
        return cs;
    }
    *out = vi;
    return HS_OK;
}

hs_status tbl_vindex_acquire(const char *path, int32_t field_id, int64_t data_file_size,
                             int64_t file_size, const tbl_vindex **out, hs_error *err)
{
    return acquire_whole(path, field_id, data_file_size, file_size, NULL, out, err);
}

/* ---- the head of a sidecar (object stores, searches that go exact) ---- */

/* Bytes of the head that hold, for `rows` rows of dimension `dim`, the
 * header, the position map and then either the exact vectors (version 2)
 * and the graph's header, or the graph's header and its flat payloads
 * (version 1 with a version 2 graph): 4 bytes a row for the map at most,
 * 4 * dim for the vectors, 256 for the graph's header, padding and
 * checksum. */
uint64_t tbl_vindex_head_bytes(int64_t rows, int dim, int64_t file_size)
{
    uint64_t r = (uint64_t)rows, d = (uint64_t)dim;
    uint64_t want = align64(VX_HEADER + 4 * r) + 256 + r * d * 4;
    return want < (uint64_t)file_size ? want : (uint64_t)file_size;
}

typedef struct vh_load_ctx {
    const char *path;
    int32_t field_id;
    int64_t data_file_size, file_size;
    uint64_t head;            /* bytes of the head */
    uint8_t *pre;             /* the head, already read; owned */
} vh_load_ctx;

/* Opens the head, else reads the rest and opens the whole (the head's bytes
 * are not read twice). */
static hs_status vh_open(vh_load_ctx *x, uint8_t *p, tbl_vindex **out, hs_error *err)
{
    size_t n = (size_t)x->file_size, avail = (size_t)x->head;
    if (avail < n) {
        hs_error why = {0};
        hs_status st = open_image_at(p, n, avail, false, out, &why);
        if (st == HS_OK) {
            tbl_vindex *vi = *out;
            vi->own = p;
            if (vi->info.field_id == x->field_id && vi->info.data_file_size == x->data_file_size)
                return HS_OK;
            st = HS_CORRUPT_AT(err, "%s: vector index is stale: it covers field %" PRId32
                               " of a data file of %" PRId64 " bytes", x->path,
                               vi->info.field_id, vi->info.data_file_size);
            tbl_vindex_close(vi);
            *out = NULL;
            return st;
        }
        if (st != HS_UNSUPPORTED) {
            hs_free_aligned(p);
            if (err)
                *err = why;
            hs_err_prefix(err, "%s", x->path);
            return st;
        }
        /* the head cannot serve: the rest of the image after it */
        uint8_t *all = hs_malloc_aligned(n);
        if (!all) {
            hs_free_aligned(p);
            return hs_err_nomem(err, n);
        }
        memcpy(all, p, avail);
        hs_free_aligned(p);
        p = all;
        hs_file *f = NULL;
        st = hs_io_open(x->path, &f, err);
        if (st == HS_OK && f->size != (uint64_t)n)
            st = HS_CORRUPT_AT(err, "%s: vector index has %" PRIu64 " bytes, the registry says "
                               "%zu (truncated or replaced)", x->path, f->size, n);
        if (st == HS_OK)
            st = hs_file_read_at(f, avail, n - avail, p + avail, err);
        hs_file_close(f);
        if (st != HS_OK) {
            hs_free_aligned(p);
            return st;
        }
    }
    return open_owned(x->path, p, n, x->field_id, x->data_file_size, out, err);
}

static hs_status vh_load(void *ctx, const char *local, tbl_fref *ref, void **obj, size_t *cost,
                         hs_error *err)
{
    (void)local;
    vh_load_ctx *x = ctx;
    uint8_t *p = x->pre;
    x->pre = NULL;
    if (!p) {
        p = hs_malloc_aligned((size_t)x->head);
        if (!p)
            return hs_err_nomem(err, (size_t)x->head);
        hs_status st = hs_io_read_head(x->path, p, x->head, (uint64_t)x->file_size, err);
        if (st != HS_OK) {
            hs_free_aligned(p);
            return st;
        }
    }
    tbl_vindex *vi = NULL;
    HS_TRY(vh_open(x, p, &vi, err));
    vi->ref = ref;
    *cost = (vi->partial ? (size_t)x->head : (size_t)x->file_size) + sizeof *vi;
    *obj = vi;
    return HS_OK;
}

static bool head_args_ok(const char *path, int64_t file_size, int64_t rows, int dim)
{
    return file_size > 0 && file_size < ((int64_t)1 << 40) && rows >= 0 &&
           rows <= (int64_t)UINT32_MAX && dim > 0 && dim <= (int)VX_MAX_DIM &&
           hs_io_is_object_uri(path);
}

/* tbl_vindex_acquire_head with `pre` (owned; NULL: none) its head already
 * read (tbl_vindex_head_bytes of it). */
static hs_status acquire_head(const char *path, int32_t field_id, int64_t data_file_size,
                              int64_t file_size, int64_t rows, int dim, uint8_t *pre,
                              const tbl_vindex **out, hs_error *err)
{
    *out = NULL;
    vh_load_ctx ctx = {path, field_id, data_file_size, file_size,
                       tbl_vindex_head_bytes(rows, dim, file_size), pre};
    /* as tbl_vindex_acquire: a sidecar not seen before is read at once (its
     * head), which tells the cache its identity without a request of its own */
    if (!ctx.pre && !hs_io_identity_cached(path)) {
        hs_error ignored = {0};
        ctx.pre = hs_malloc_aligned((size_t)ctx.head);
        if (ctx.pre && hs_io_read_head(path, ctx.pre, ctx.head, (uint64_t)file_size,
                                       &ignored) != HS_OK) {
            hs_free_aligned(ctx.pre);
            ctx.pre = NULL;
        }
    }
    /* heads and whole images are cached apart (key 1: the head) */
    static const int64_t head_key[1] = {1};
    void *obj = NULL;
    tbl_fref *ref = NULL;
    hs_status gs = tbl_fcache_get(&g_vc, tbl_local(path), head_key, 1, vh_load, &ctx, &obj, &ref,
                                  err);
    hs_free_aligned(ctx.pre);
    HS_TRY(gs);
    tbl_vindex *vi = obj;
    hs_status cs = check_cover(vi, path, field_id, data_file_size, err);
    int64_t have = tbl_fref_file_size(ref);
    if (cs == HS_OK && have >= 0 && have != file_size)
        cs = HS_CORRUPT_AT(err, "%s: vector index has %lld bytes, the registry says %" PRId64
                           " (truncated or replaced)", path, (long long)have, file_size);
    if (cs != HS_OK) {
        tbl_fcache_release(&g_vc, ref);
        return cs;
    }
    *out = vi;
    return HS_OK;
}

hs_status tbl_vindex_acquire_head(const char *path, int32_t field_id, int64_t data_file_size,
                                  int64_t file_size, int64_t rows, int dim,
                                  const tbl_vindex **out, hs_error *err)
{
    if (!head_args_ok(path, file_size, rows, dim))
        return tbl_vindex_acquire(path, field_id, data_file_size, file_size, out, err);
    return acquire_head(path, field_id, data_file_size, file_size, rows, dim, NULL, out, err);
}

hs_status tbl_vindex_acquire_read(const char *path, int32_t field_id, int64_t data_file_size,
                                  int64_t file_size, int64_t rows, int dim, bool head,
                                  uint8_t *pre, uint64_t pre_len, const tbl_vindex **out,
                                  hs_error *err)
{
    if (!pre || !head_args_ok(path, file_size, rows, dim) ||
        pre_len != tbl_vindex_head_bytes(rows, dim, file_size)) {
        hs_free_aligned(pre);
        return head ? tbl_vindex_acquire_head(path, field_id, data_file_size, file_size, rows,
                                              dim, out, err)
                    : tbl_vindex_acquire(path, field_id, data_file_size, file_size, out, err);
    }
    if (head)
        return acquire_head(path, field_id, data_file_size, file_size, rows, dim, pre, out,
                            err);
    /* the whole: the rest after the head (one ranged GET; the head read
     * put the object's size and version in io's HEAD cache, so the open
     * costs none), unless the cache holds the image already */
    uint8_t *all = NULL;
    if (pre_len < (uint64_t)file_size) {
        all = hs_malloc_aligned((size_t)file_size);
        hs_file *f = NULL;
        hs_error why = {0};
        bool ok = all && hs_io_open(path, &f, &why) == HS_OK &&
                  f->size == (uint64_t)file_size &&
                  hs_file_read_at(f, pre_len, (uint64_t)file_size - pre_len, all + pre_len,
                                  &why) == HS_OK;
        hs_file_close(f);
        if (ok) {
            memcpy(all, pre, (size_t)pre_len);
        } else {   /* the usual path reports what failed */
            hs_free_aligned(all);
            all = NULL;
        }
        hs_free_aligned(pre);
    } else {
        all = pre;
    }
    return acquire_whole(path, field_id, data_file_size, file_size, all, out, err);
}

bool tbl_vindex_is_partial(const tbl_vindex *vi) { return vi && vi->partial; }

bool tbl_vindex_image_head_serves(const uint8_t *p, size_t n)
{
    if (n < VX_HEADER || memcmp(p, VX_MAGIC, 8) != 0)
        return false;
    uint64_t nv = get_u64(p + 32);
    uint32_t dim = get_u32(p + 44), flags = get_u32(p + 48);
    if (nv == 0 || nv > UINT32_MAX || dim == 0 || dim > VX_MAX_DIM)
        return false;
    size_t map_bytes = (flags & VX_FLAG_MAP) ? (size_t)nv * 4 : 0;
    size_t vec_off = align64(VX_HEADER + map_bytes);
    size_t vec_bytes = (flags & VX_FLAG_VECTORS) ? (size_t)nv * dim * sizeof(float) : 0;
    size_t graph_off = vec_bytes ? align64(vec_off + vec_bytes + 8) : vec_off;
    /* the graph's header: "HSHNSWIX", version 2 */
    return graph_off + 16 <= n && memcmp(p + graph_off, "HSHNSWIX", 8) == 0 &&
           get_u32(p + graph_off + 8) == 2;
}

void tbl_vindex_release(const tbl_vindex *vi)
{
    if (vi)
        tbl_fcache_release(&g_vc, vi->ref);
}

void tbl_vindex_cache_clear(void) { tbl_fcache_clear(&g_vc); }

void tbl_vindex_get_info(const tbl_vindex *vi, tbl_vindex_info *out) { *out = vi->info; }
const hnsw_index *tbl_vindex_hnsw(const tbl_vindex *vi) { return vi->ix; }

uint32_t tbl_vindex_pos_of(const tbl_vindex *vi, uint32_t id)
{
    return vi->map ? vi->map[id] : id;
}

int64_t tbl_vindex_id_of(const tbl_vindex *vi, uint32_t pos)
{
    uint64_t n = (uint64_t)vi->info.n_vectors;
    if (!vi->map)
        return pos < n ? (int64_t)pos : -1;
    uint64_t lo = 0, hi = n;   /* the map is strictly increasing */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (vi->map[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && vi->map[lo] == pos ? (int64_t)lo : -1;
}

bool tbl_vindex_has_vectors(const tbl_vindex *vi)
{
    return vi->info.n_vectors == 0 || vi->vecs ||
           (vi->ix && hnsw_exact_vector(vi->ix, 0) != NULL);
}

const float *tbl_vindex_vector(const tbl_vindex *vi, uint32_t id)
{
    if (id >= (uint64_t)vi->info.n_vectors)
        return NULL;
    if (vi->vecs)
        return vi->vecs + (size_t)id * (size_t)vi->info.dim;
    return vi->ix ? hnsw_exact_vector(vi->ix, id) : NULL;
}

const float *tbl_vindex_vectors(const tbl_vindex *vi)
{
    return vi->vecs;
}

hs_status tbl_vindex_ids_of(const tbl_vindex *vi, const roaring_bitmap_t *positions,
                            roaring_bitmap_t **out, hs_error *err)
{
    *out = NULL;
    if (!positions)
        return HS_OK;
    roaring_bitmap_t *ids = vi->map ? roaring_bitmap_create() : roaring_bitmap_copy(positions);
    if (!ids)
        return hs_err_nomem(err, 64);
    if (vi->map) {
        /* both sorted: one merge */
        roaring_uint32_iterator_t it;
        roaring_init_iterator(positions, &it);
        uint64_t i = 0, n = (uint64_t)vi->info.n_vectors;
        while (it.has_value && i < n) {
            uint32_t p = it.current_value;
            if (vi->map[i] < p) {
                i++;
            } else if (vi->map[i] > p) {
                roaring_move_uint32_iterator_equalorlarger(&it, vi->map[i]);
            } else {
                roaring_bitmap_add(ids, (uint32_t)i);
                i++;
                roaring_advance_uint32_iterator(&it);
            }
        }
    } else if (vi->info.n_rows < (int64_t)UINT32_MAX + 1) {
        roaring_bitmap_remove_range(ids, (uint64_t)vi->info.n_rows, (uint64_t)UINT32_MAX + 1);
    }
    *out = ids;
    return HS_OK;
}

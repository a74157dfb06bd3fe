/* libFuzzer target: vector sidecar files (table/vindex.h).
 *
 * The first input byte picks a mode; the rest is the payload.
 *   bit 0  recompute the header checksum first (over the header and the
 *          position map it announces) and the exact vectors' checksum
 *          (version 2), so that mutations reach the header, map, vector
 *          and graph checks instead of stopping at a checksum
 *   bit 7  build mode: the payload is float32 vectors (dimension 1 + bits
 *          1-3, a NaN-free copy; every 5th row null); build a sidecar of
 *          them (bit 4: hnsw_tq8, which keeps exact vectors; else hnsw),
 *          open it (must succeed), look every stored vector up (a hit at a
 *          valid position) and read it back exactly (tbl_vindex_vector)
 * Decode mode opens the payload (copied into a 64-byte aligned buffer of
 * the exact size, so ASan sees any over-read), and when it opens, maps a
 * position set to ids, maps every id to its position and back, reads
 * every exact vector it claims to hold, and searches with a fetch
 * callback.  Both modes also open the image's head (tbl_vindex_open_head:
 * decode mode at a length the input's last two bytes pick, build mode at
 * what tbl_vindex_acquire_head reads, which must serve and answer a small
 * allow-list exactly as the whole image does). */
#include "base/hash.h"
#include "base/mem.h"
#include "table/vindex.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static hs_status zero_fetch(void *ctx, const uint32_t *ids, size_t n, float *out, hs_error *err)
{
    (void)ids;
    (void)err;
    size_t d = *(const size_t *)ctx;
    memset(out, 0, n * d * sizeof(float));
    return HS_OK;
}

static void fix_checksum(uint8_t *p, size_t n)
{
    if (n < 64)
        return;
    uint64_t nv, h;
    uint32_t flags;
    memcpy(&nv, p + 32, 8);
    memcpy(&flags, p + 48, 4);
    size_t map = (flags & 1) && nv < (n - 64) / 4 ? (size_t)nv * 4 : 0;
    h = hs_xxh64(p, 56, 0);
    if (map)
        h = hs_xxh64(p + 64, map, h);
    memcpy(p + 56, &h, 8);
    /* version 2: the exact vectors after the map, then their checksum */
    uint32_t dim;
    memcpy(&dim, p + 44, 4);
    size_t off = (64 + map + 63) & ~(size_t)63;
    if ((flags & 2) && dim <= 65536 && nv <= (uint64_t)n && off <= n) {
        uint64_t bytes = nv * dim * 4;
        if (bytes <= n - off && n - off - bytes >= 8) {
            uint64_t v = hs_xxh64(p + off, (size_t)bytes, 0);
            memcpy(p + off + bytes, &v, 8);
        }
    }
}

/* Every id maps to a position and back; every vector it claims is read. */
static void walk_ids(const tbl_vindex *vi, const tbl_vindex_info *info)
{
    bool has = tbl_vindex_has_vectors(vi);
    volatile float sink = 0;
    for (int64_t id = 0; id < info->n_vectors; id++) {
        uint32_t pos = tbl_vindex_pos_of(vi, (uint32_t)id);
        if (pos >= (uint64_t)info->n_rows || tbl_vindex_id_of(vi, pos) != id)
            abort();
        const float *v = tbl_vindex_vector(vi, (uint32_t)id);
        if (has != (v != NULL))
            abort();
        for (int j = 0; v && j < info->dim; j++)
            sink += v[j];
    }
    if (tbl_vindex_vector(vi, (uint32_t)info->n_vectors) != NULL)
        abort();
    (void)sink;
}

static void search_ids(const tbl_vindex *vi, const tbl_vindex_info *ip);

static void decode(const uint8_t *data, size_t size, bool fix)
{
    uint8_t *p = hs_malloc_aligned(size ? size : 1);
    if (!p)
        return;
    memcpy(p, data, size);
    if (fix)
        fix_checksum(p, size);
    /* the head first (borrowed), then the whole (owned) */
    size_t avail = size;
    if (size >= 2)
        avail = size - (((size_t)data[size - 1] << 8 | data[size - 2]) % (size + 1));
    tbl_vindex *vi = NULL;
    hs_status hs = tbl_vindex_open_head(p, size, avail, &vi, NULL);
    if (hs == HS_OK) {
        tbl_vindex_info info;
        tbl_vindex_get_info(vi, &info);
        walk_ids(vi, &info);
        search_ids(vi, &info);
        tbl_vindex_close(vi);
        vi = NULL;
    } else if (hs != HS_CORRUPT && hs != HS_UNSUPPORTED && hs != HS_NOMEM) {
        abort();
    }
    if (tbl_vindex_open_image(p, size, true, &vi, NULL) != HS_OK)
        return;
    tbl_vindex_info info;
    tbl_vindex_get_info(vi, &info);
    walk_ids(vi, &info);
    search_ids(vi, &info);
    tbl_vindex_close(vi);
}

/* A search under every third position as allow-list keeps its contract (a
 * partial index may refuse one that needs the graph). */
static void search_ids(const tbl_vindex *vi, const tbl_vindex_info *ip)
{
    tbl_vindex_info info = *ip;
    roaring_bitmap_t *pos = roaring_bitmap_from_range(0, (uint64_t)info.n_rows + 3, 3);
    roaring_bitmap_t *ids = NULL;
    if (pos && tbl_vindex_ids_of(vi, pos, &ids, NULL) == HS_OK && tbl_vindex_hnsw(vi)) {
        size_t d = (size_t)info.dim;
        float *q = calloc(d ? d : 1, sizeof *q);
        hnsw_hit hits[8];
        int n = 0;
        hnsw_search_opts o = {.k = 8, .allow = ids, .fetch = zero_fetch, .fetch_ctx = &d};
        if (q && hnsw_search(tbl_vindex_hnsw(vi), q, &o, hits, &n, NULL, NULL) == HS_OK)
            for (int i = 0; i < n; i++)
                if (hits[i].id >= (uint64_t)info.n_vectors ||
                    tbl_vindex_pos_of(vi, hits[i].id) >= (uint64_t)info.n_rows)
                    abort();
        free(q);
    }
    if (ids)
        roaring_bitmap_free(ids);
    if (pos)
        roaring_bitmap_free(pos);
}

static void build(const uint8_t *data, size_t size, int dim, bool tq8)
{
    size_t rows = size / ((size_t)dim * 4);
    if (rows == 0 || rows > 2000)
        return;
    hs_field elem, f;
    hs_field_init(&elem, "element", HS_TYPE_FLOAT32, true);
    hs_field_init_list(&f, "v", true, &elem);
    f.field_id = 1;
    hs_column *c = NULL;
    tbl_vbuilder *b = NULL;
    hs_buf out = {0};
    hs_status st = hs_col_create(&f, (int64_t)rows, &c, NULL);
    for (size_t r = 0; st == HS_OK && r < rows; r++) {
        if (r % 5 == 4) {
            st = hs_col_append_null(c);
            continue;
        }
        for (int j = 0; j < dim && st == HS_OK; j++) {
            float x;
            memcpy(&x, data + (r * (size_t)dim + (size_t)j) * 4, 4);
            if (!isfinite(x) || fabsf(x) > 1e6f)
                x = (float)j;
            st = hs_col_append_fixed(c->children[0], &x);
        }
        if (st == HS_OK)
            st = hs_col_list_end(c);
    }
    if (st == HS_OK)
        st = tbl_vbuilder_new(tq8 ? "hnsw_tq8" : "hnsw", "{\"m\":4,\"ef_construction\":16}",
                              &f, 1000, (int64_t)rows, &b, NULL);
    if (st == HS_OK) {
        tbl_vbuilder_set_threads(b, 1);
        st = tbl_vbuilder_add(b, c, 0, NULL);
    }
    if (st == HS_OK && tbl_vbuilder_finish(b, &out, NULL) != HS_OK)
        abort();
    if (st == HS_OK) {
        uint8_t *p = hs_malloc_aligned(out.len);
        tbl_vindex *vi = NULL;
        if (!p)
            abort();
        memcpy(p, out.data, out.len);
        if (tbl_vindex_open_image(p, out.len, true, &vi, NULL) != HS_OK)
            abort();
        const hnsw_index *ix = tbl_vindex_hnsw(vi);
        if (!tbl_vindex_has_vectors(vi))
            abort();
        size_t d = (size_t)dim;
        for (size_t r = 0; ix && r < rows; r++) {
            int64_t id = tbl_vindex_id_of(vi, (uint32_t)r);
            if (r % 5 == 4) {
                if (id != -1)
                    abort();
                continue;
            }
            const float *v = HS_COL_VALUES(c->children[0], float) + HS_COL_OFFSETS(c)[r];
            const float *kept = id >= 0 ? tbl_vindex_vector(vi, (uint32_t)id) : NULL;
            if (!kept || memcmp(kept, v, d * sizeof(float)) != 0)
                abort();
            hnsw_hit hit;
            int n = 0;
            hnsw_search_opts o = {.k = 1, .ef = 400, .fetch = zero_fetch, .fetch_ctx = &d};
            if (hnsw_search(ix, v, &o, &hit, &n, NULL, NULL) != HS_OK || n != 1 ||
                tbl_vindex_pos_of(vi, hit.id) >= rows || tbl_vindex_pos_of(vi, hit.id) % 5 == 4)
                abort();
        }
        /* the head acquire_head reads: serves, and answers as the whole */
        tbl_vindex *hv = NULL;
        uint64_t head = tbl_vindex_head_bytes((int64_t)rows, dim, (int64_t)out.len);
        if (tbl_vindex_open_head(p, out.len, (size_t)head, &hv, NULL) != HS_OK ||
            !tbl_vindex_is_partial(hv) != (head == out.len))
            abort();
        roaring_bitmap_t *few = roaring_bitmap_from_range(0, rows, 7);
        const hnsw_index *hx = tbl_vindex_hnsw(hv);
        for (size_t r = 0; ix && hx && few && r < rows; r += 3) {
            if (r % 5 == 4)
                continue;   /* null */
            const float *v = HS_COL_VALUES(c->children[0], float) + HS_COL_OFFSETS(c)[r];
            hnsw_hit a[4], h[4];
            int na = 0, nh = 0;
            hnsw_search_opts o = {.k = 4, .allow = few, .fetch = zero_fetch, .fetch_ctx = &d,
                                  .vectors = tbl_vindex_vectors(vi)};
            if (hnsw_search(ix, v, &o, a, &na, NULL, NULL) != HS_OK)
                abort();
            o.vectors = tbl_vindex_vectors(hv);
            if (hnsw_search(hx, v, &o, h, &nh, NULL, NULL) != HS_OK || nh != na)
                abort();
            for (int i = 0; i < na; i++)
                if (a[i].id != h[i].id || a[i].dist != h[i].dist)
                    abort();
        }
        if (few)
            roaring_bitmap_free(few);
        tbl_vindex_close(hv);
        tbl_vindex_close(vi);
    }
    hs_buf_free(&out);
    tbl_vbuilder_free(b);
    hs_col_free(c);
    hs_field_clear(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    if (mode & 0x80)
        build(data + 1, size - 1, 1 + ((mode >> 1) & 7), (mode >> 4) & 1);
    else
        decode(data + 1, size - 1, mode & 1);
    tbl_vindex_cache_clear();
    return 0;
}

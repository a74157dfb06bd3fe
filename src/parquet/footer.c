/*
 * parquet/footer.c - the per-file state scans share (see footer.h).
 *
 * Footer: one read of the last 64 KiB, a second read only when the footer is
 * larger; the decoded footer (and the schema mapping of schema_read.c) lives
 * in a process-wide cache of PQ_FOOTER_CACHE_MAX files keyed by the file's
 * identity (hs_file_id with its size: device, inode, size, mtime and ctime
 * for local files; an instance number for memory files; an ETag for object
 * stores), never by name alone, so a file rewritten or replaced under the
 * same name never gets the old file's footer, mapping, page notes or
 * dictionaries; files without an identity are not cached.  Entries are
 * refcounted so a reader keeps its footer alive after eviction.  With each footer: the file's mapping (local files:
 * page-mode reads take pages from it without a copy), the decoded page
 * indexes of its column chunks with notes on pages read in place, and the
 * decoded dictionaries (within HS_DICT_CACHE_MB for the process).  Cursors'
 * byte buffers come from and return to a small process-wide pool.
 * pq_footer_cache_clear drops all of it (and the Avro schema cache of
 * base/avro.c: tests balance hs_mem_live_count with it).
 *
 * Bounds on untrusted input: the footer length inside the file, row groups
 * with as many column chunks as schema leaves, row counts <= 2^40; encrypted
 * footers and chunks are refused.
 */
#include "parquet/footer.h"

#include "base/avro.h"
#include "base/config.h"
#include "base/fork.h"
#include "base/mem.h"
#include "parquet/pcache.h"
#include "parquet/reader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define PQ_FOOTER_TAIL (64 * 1024)
#define PQ_FOOTER_CACHE_MAX 64

void pq_fpidx_free(pq_fpidx *e)
{
    if (!e)
        return;
    hs_arena_destroy(&e->arena);
    hs_free(e->pinfo);
    hs_free(e);
}

static pthread_mutex_t g_cache_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_cache_mu, HS_FORK_RANK_FOOTER)
static pq_footer *g_cache;
static int g_cache_n;

/* Dictionary cache budget: setting dict_cache_mb (default 128; 0 = no cache). */
static pthread_mutex_t g_dict_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_dict_mu, HS_FORK_RANK_LEAF)
static size_t g_dict_bytes;

/* The budget as set now (hs_config_set may change it). */
static size_t dict_limit(void)
{
    int64_t mb = hs_cfg_get(HS_CFG_DICT_CACHE_MB);
    return mb > 0 ? (size_t)mb << 20 : 0;
}

static void dict_free(pq_dict *d)
{
    if (!d)
        return;
    hs_buf_free(&d->vals);
    hs_buf_free(&d->offs);
    hs_buf_free(&d->bytes);
    hs_free(d);
}

static void footer_destroy(pq_footer *f)
{
    if (!f)
        return;
    if (f->dicts) {
        size_t n = (size_t)f->meta.n_row_groups * (size_t)f->schema.n_leaves;
        for (size_t i = 0; i < n; i++)
            dict_free(f->dicts[i]);
        hs_free(f->dicts);
        pthread_mutex_lock(&g_dict_mu);
        g_dict_bytes -= f->dict_mem;
        pthread_mutex_unlock(&g_dict_mu);
    }
    if (f->map_state > 0)
        hs_file_unmap(f->map, f->size);
    if (f->fpidx) {
        size_t n = (size_t)f->meta.n_row_groups * (size_t)f->schema.n_leaves;
        for (size_t i = 0; i < n; i++)
            pq_fpidx_free(f->fpidx[i]);
        hs_free(f->fpidx);
    }
    pq_schema_free(&f->schema);
    hs_arena_destroy(&f->arena);
    hs_free(f->name);
    hs_free(f);
}

/* ===================================================================== */
/* buffer pool                                                            */
/* ===================================================================== */

/* Cursors' byte buffers (column chunk / page bytes, decompressed pages)
 * outlive their scan in a small process-wide pool.  A table scan opens one
 * pq_scan per data file (and phase), and fresh multi-MiB buffers there cost
 * more in page faults and heap trimming than the reads themselves.  Bounded
 * by count, per-buffer and total bytes; pq_footer_cache_clear empties it. */
#define PQ_POOL_N 32
#define PQ_POOL_BUF_MAX ((size_t)16 << 20)
#define PQ_POOL_BYTES ((size_t)64 << 20)

static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
HS_FORK_GUARD(g_pool_mu, HS_FORK_RANK_LEAF)
static hs_buf g_pool[PQ_POOL_N];
static int g_pool_n;
static size_t g_pool_bytes;

/* An empty b gets a pooled buffer: the smallest holding `want` bytes, else
 * the largest (hs_buf_reserve grows it). */
void pq_bufpool_take(hs_buf *b, size_t want)
{
    if (b->data)
        return;
    pthread_mutex_lock(&g_pool_mu);
    int best = -1;
    for (int i = 0; i < g_pool_n; i++) {
        size_t c = g_pool[i].cap, bc = best >= 0 ? g_pool[best].cap : 0;
        if (best < 0 || (c >= want && (bc < want || c < bc)) || (bc < want && c > bc))
            best = i;
    }
    if (best >= 0) {
        *b = g_pool[best];
        g_pool[best] = g_pool[--g_pool_n];
        g_pool_bytes -= b->cap;
        b->len = 0;
    }
    pthread_mutex_unlock(&g_pool_mu);
}

/* Hands b's storage to the pool (or frees it); b is left empty. */
void pq_bufpool_give(hs_buf *b)
{
    if (b->data && b->cap <= PQ_POOL_BUF_MAX) {
        pthread_mutex_lock(&g_pool_mu);
        if (g_pool_n < PQ_POOL_N && g_pool_bytes + b->cap <= PQ_POOL_BYTES) {
            g_pool[g_pool_n++] = *b;
            g_pool_bytes += b->cap;
            memset(b, 0, sizeof *b);
        }
        pthread_mutex_unlock(&g_pool_mu);
    }
    hs_buf_free(b);
}

static void bufpool_clear(void)
{
    hs_buf dead[PQ_POOL_N];
    pthread_mutex_lock(&g_pool_mu);
    int n = g_pool_n;
    memcpy(dead, g_pool, sizeof(hs_buf) * (size_t)n);
    g_pool_n = 0;
    g_pool_bytes = 0;
    pthread_mutex_unlock(&g_pool_mu);
    for (int i = 0; i < n; i++)
        hs_buf_free(&dead[i]);
}

void pq_footer_release(pq_footer *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&g_cache_mu);
    bool last = --f->refs == 0;
    pthread_mutex_unlock(&g_cache_mu);
    if (last)
        footer_destroy(f);
}

void pq_footer_cache_clear(void)
{
    pthread_mutex_lock(&g_cache_mu);
    pq_footer *f = g_cache, *dead = NULL;
    g_cache = NULL;
    g_cache_n = 0;
    while (f) {
        pq_footer *next = f->next;
        if (--f->refs == 0) {
            f->next = dead;
            dead = f;
        }
        f = next;
    }
    pthread_mutex_unlock(&g_cache_mu);
    while (dead) {
        pq_footer *next = dead->next;
        footer_destroy(dead);
        dead = next;
    }
    bufpool_clear();
    pq_page_cache_clear();
    /* the parsed Avro schemas of Iceberg manifests are the other process-wide
     * cache of file metadata below the table layer; tests that balance
     * hs_mem_live_count clear them all here */
    hs_avro_schema_cache_clear();
    hs_mem_pool_trim();   /* and the column buffers kept for reuse (base/mem.c) */
}

static uint32_t rd_u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static hs_status footer_load(hs_file *f, pq_footer **out, hs_error *err)
{
    const char *fname = f->name ? f->name : "";
    uint64_t size = f->size;
    hs_buf tail = { 0 };
    pq_footer *ft = NULL;
    hs_status st;
    if (size < 12)
        return HS_CORRUPT_AT(err, "%s: %llu bytes is too small for a Parquet file", fname,
                             (unsigned long long)size);
    size_t n = size < PQ_FOOTER_TAIL ? (size_t)size : PQ_FOOTER_TAIL;
    st = hs_file_read_buf(f, size - n, n, &tail, err);
    if (st != HS_OK)
        goto done;
    const uint8_t *end = tail.data + n;
    if (memcmp(end - 4, "PARE", 4) == 0) {
        st = hs_err_set(err, HS_UNSUPPORTED, "%s: encrypted Parquet footers are not supported", fname);
        goto done;
    }
    if (memcmp(end - 4, "PAR1", 4) != 0) {
        st = HS_CORRUPT_AT(err, "%s: no PAR1 magic at the end of the file", fname);
        goto done;
    }
    uint32_t flen = rd_u32le(end - 8);
    if ((uint64_t)flen > size - 12) {
        st = HS_CORRUPT_AT(err, "%s: footer length %u exceeds the file size %llu", fname, flen,
                           (unsigned long long)size);
        goto done;
    }
    const uint8_t *fp;
    if ((size_t)flen + 8 <= n) {
        fp = end - 8 - flen;
    } else {
        st = hs_file_read_buf(f, size - 8 - flen, flen, &tail, err);
        if (st != HS_OK)
            goto done;
        fp = tail.data;
    }
    ft = hs_calloc(1, sizeof *ft);
    if (!ft || !(ft->name = hs_strdup(fname))) {
        st = hs_err_nomem(err, sizeof *ft);
        goto done;
    }
    ft->size = size;
    ft->id = f->id;
    ft->refs = 1;
    st = pq_decode_file_meta(fp, flen, &ft->arena, &ft->meta, err);
    if (st != HS_OK) {
        hs_err_prefix(err, "%s", fname);
        goto done;
    }
    if (ft->meta.has_encryption_algorithm) {
        st = hs_err_set(err, HS_UNSUPPORTED, "%s: encrypted Parquet files are not supported", fname);
        goto done;
    }
    st = pq_schema_build(&ft->meta, fname, &ft->schema, err);
    if (st != HS_OK)
        goto done;
    /* structural checks every later access relies on */
    const pq_file_meta *m = &ft->meta;
    if (m->n_row_groups < 0 || (m->n_row_groups > 0 && !m->row_groups)) {
        st = HS_CORRUPT_AT(err, "%s: bad row group list", fname);
        goto done;
    }
    for (int g = 0; g < m->n_row_groups; g++) {
        const pq_row_group *rg = &m->row_groups[g];
        if (rg->n_columns != ft->schema.n_leaves) {
            st = HS_CORRUPT_AT(err, "%s: row group %d has %d column chunks, the schema %d leaves",
                               fname, g, rg->n_columns, ft->schema.n_leaves);
            goto done;
        }
        if (rg->num_rows < 0 || rg->num_rows > ((int64_t)1 << 40)) {
            st = HS_CORRUPT_AT(err, "%s: row group %d claims %lld rows", fname, g,
                               (long long)rg->num_rows);
            goto done;
        }
        for (int c = 0; c < rg->n_columns; c++) {
            const pq_column_chunk *cc = &rg->columns[c];
            if (cc->is_encrypted) {
                st = hs_err_set(err, HS_UNSUPPORTED, "%s: encrypted column chunks are not supported",
                                fname);
                goto done;
            }
        }
    }
    *out = ft;
    ft = NULL;
done:
    hs_buf_free(&tail);
    footer_destroy(ft);
    return st;
}

hs_status pq_footer_get(hs_file *f, pq_footer **out, hs_error *err)
{
    bool cacheable = f->id.kind != HS_FILE_ID_NONE;
    if (cacheable) {
        pthread_mutex_lock(&g_cache_mu);
        for (pq_footer *e = g_cache; e; e = e->next)
            if (hs_file_id_equal(&e->id, e->size, &f->id, f->size)) {
                e->refs++;
                *out = e;
                pthread_mutex_unlock(&g_cache_mu);
                return HS_OK;
            }
        pthread_mutex_unlock(&g_cache_mu);
    }
    pq_footer *ft = NULL;
    HS_TRY(footer_load(f, &ft, err));
    if (cacheable) {
        pq_footer *dead = NULL;
        pthread_mutex_lock(&g_cache_mu);
        ft->refs++;  /* the cache's reference */
        ft->next = g_cache;
        g_cache = ft;
        g_cache_n++;
        if (g_cache_n > PQ_FOOTER_CACHE_MAX) {  /* drop the oldest (the tail) */
            pq_footer **pp = &g_cache;
            while ((*pp)->next)
                pp = &(*pp)->next;
            pq_footer *old = *pp;
            *pp = NULL;
            g_cache_n--;
            if (--old->refs == 0)
                dead = old;
        }
        pthread_mutex_unlock(&g_cache_mu);
        footer_destroy(dead);
    }
    *out = ft;
    return HS_OK;
}


/* The file's bytes through the footer's mapping (made on first use and kept
 * with the cached footer, so repeated selective scans of a file take no page
 * faults), or NULL where the backend has none: then pages are read.
 *
 * Files that change under a mapping: the mapping is made only after
 * hs_file_check found the file as it was opened, and pq_scan_next checks
 * again (one fstat) before and after every batch that may touch mapped
 * bytes, so a file truncated, rewritten or deleted-and-recreated between
 * batches fails the scan with HS_IO instead of faulting.  A truncation
 * racing with the batch that is reading the mapping faults into the SIGBUS
 * guard of io/mapguard.c (zero pages, the mapping marked damaged) and fails
 * that batch with HS_IO.  HS_MMAP=0 reads every page through pread (a shrunk
 * file is then HS_CORRUPT "file shrank"). */
const uint8_t *pq_footer_map(pq_footer *ft, hs_file *f)
{
    int st = __atomic_load_n(&ft->map_state, __ATOMIC_ACQUIRE);
    if (st != 0)
        return st > 0 ? ft->map : NULL;
    pthread_mutex_lock(&g_cache_mu);
    if (ft->map_state == 0) {
        const uint8_t *p = NULL;
        hs_error e = {0};
        if (hs_file_id_equal(&f->id, f->size, &ft->id, ft->size) && hs_file_check(f, &e) == HS_OK &&
            hs_file_map(f, &p, &e) == HS_OK) {
            ft->map = p;
            __atomic_store_n(&ft->map_state, 1, __ATOMIC_RELEASE);
        } else {
            __atomic_store_n(&ft->map_state, -1, __ATOMIC_RELEASE);
        }
        hs_err_clear(&e);
    }
    st = ft->map_state;
    pthread_mutex_unlock(&g_cache_mu);
    return st > 0 ? ft->map : NULL;
}

const pq_fpidx *pq_footer_fpidx(pq_footer *ft, size_t slot)
{
    pq_fpidx **arr = __atomic_load_n(&ft->fpidx, __ATOMIC_ACQUIRE);
    return arr ? __atomic_load_n(&arr[slot], __ATOMIC_ACQUIRE) : NULL;
}

pq_fpidx *pq_footer_fpidx_publish(pq_footer *ft, size_t slot, pq_fpidx *fe)
{
    size_t n_slots = (size_t)ft->meta.n_row_groups * (size_t)ft->schema.n_leaves;
    pq_fpidx *dead = NULL;
    pthread_mutex_lock(&g_cache_mu);
    if (!ft->fpidx)
        __atomic_store_n(&ft->fpidx, hs_calloc(n_slots, sizeof(pq_fpidx *)), __ATOMIC_RELEASE);
    pq_fpidx *have = ft->fpidx ? ft->fpidx[slot] : NULL;
    if (have) {
        dead = fe;
        fe = have;
    } else if (ft->fpidx) {
        __atomic_store_n(&ft->fpidx[slot], fe, __ATOMIC_RELEASE);
    } else {
        fe = NULL;   /* no room to publish: the caller keeps its own */
    }
    pthread_mutex_unlock(&g_cache_mu);
    pq_fpidx_free(dead);
    return fe;
}

void pq_footer_note_page(pq_pinfo *pn, int32_t n, int32_t enc, uint32_t vlen, uint64_t voff)
{
    pthread_mutex_lock(&g_cache_mu);
    if (pn->state == 0) {
        pn->n = n;
        pn->enc = enc;
        pn->vlen = vlen;
        pn->voff = voff;
        __atomic_store_n(&pn->state, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_cache_mu);
}

const pq_dict *pq_footer_dict(pq_footer *ft, size_t slot)
{
    pthread_mutex_lock(&g_dict_mu);
    const pq_dict *d = ft->dicts ? ft->dicts[slot] : NULL;
    pthread_mutex_unlock(&g_dict_mu);
    return d;
}

void pq_footer_dict_adopt(pq_footer *ft, size_t slot, uint32_t n, hs_buf *vals, hs_buf *offs,
                          hs_buf *bytes)
{
    size_t n_slots = (size_t)ft->meta.n_row_groups * (size_t)ft->schema.n_leaves;
    size_t mem = vals->cap + offs->cap + bytes->cap + sizeof(pq_dict);
    pthread_mutex_lock(&g_dict_mu);
    if (slot < n_slots && g_dict_bytes + mem <= dict_limit()) {
        if (!ft->dicts)
            ft->dicts = hs_calloc(n_slots, sizeof *ft->dicts);
        pq_dict *d = ft->dicts && !ft->dicts[slot] ? hs_calloc(1, sizeof *d) : NULL;
        if (d) {
            d->n = n;
            d->vals = *vals;
            d->offs = *offs;
            d->bytes = *bytes;
            d->mem = mem;
            memset(vals, 0, sizeof *vals);
            memset(offs, 0, sizeof *offs);
            memset(bytes, 0, sizeof *bytes);
            ft->dicts[slot] = d;
            ft->dict_mem += mem;
            g_dict_bytes += mem;
        }
    }
    pthread_mutex_unlock(&g_dict_mu);
}

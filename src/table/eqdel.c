/*
 * table/eqdel.c - Iceberg equality delete files (format v2+): which rows of
 * a data file they delete.
 *
 * An equality delete file (content 2) holds rows of the columns named by its
 * equality_ids (or whole rows); a data row is deleted when its values of
 * those columns equal one delete row's, NULL matching NULL (spec, "Equality
 * Delete Files").  plan.c decides which data files a delete file applies to
 * (a strictly lower data sequence number, the same spec and partition
 * unless the delete's spec is unpartitioned, and equality-column statistics
 * that may meet: plan.c's header) and gives each such file a
 * tbl_delete_ref pointing at the plan's tbl_eqdel; tbl_plan_load_deletes
 * calls tbl_eqdel_apply, which turns them into deleted positions, so every
 * reader of deletes (scans, index-assisted reads, vector search, row deltas,
 * compaction) honours them the same way.
 *
 *   step        what
 *   ----------  -------------------------------------------------------------
 *   columns     the equality ids resolved in the plan's schema (else any
 *               schema of the table: a column renamed or dropped since), read
 *               from both files by field id with the table's type, so
 *               promotions (int->long, float->double, decimal widening) and
 *               columns added later (NULL in older files) compare as Java does
 *   key         per row, the columns' values as bytes: 0 = NULL, else 1 and
 *               the value (fixed width as stored, floats with NaN canonical:
 *               Java compares Float/Double with compareTo, so NaN = NaN and
 *               -0.0 != 0.0; strings and binaries length-prefixed)
 *   set         a hash set of one delete file's keys, built once per plan
 *               (the first data file that needs it) and shared by the plan's
 *               threads, while the plan's sets stay within eq_delete_mb
 *               (HS_EQ_DELETE_MB, default 256 MiB, counted as key bytes +
 *               48 bytes a key)
 *   union       the data files of a partition mostly share their list of
 *               applicable delete files: for each distinct list (per
 *               equality-column group) of two or more cached sets, one union
 *               set is built once per plan (within the same budget; over it,
 *               the sets are probed one by one)
 *   probe       the data file's equality columns read once per distinct
 *               equality-id list; each row's key looked up in the union (or
 *               the one set)
 *   positions   what the equality deletes of one data file delete is kept in a
 *               process-wide cache (table/fcache.c; files are immutable): key
 *               the data file and a hash of the list of equality delete files
 *               applying to it, value the bitmap, budget eq_delete_mb too; so
 *               a repeated query (a point lookup, a search) costs a bitmap
 *               copy, not a read of the file's key columns
 *   past budget a delete file whose set does not fit is applied in chunks:
 *               keys loaded up to the budget, the data file probed, the
 *               chunk dropped, the next loaded; memory stays bounded, the
 *               data file is read once more per chunk for each data file it
 *               applies to (slow, never wrong)
 *
 * Nested equality columns (in structs) and non-primitive types are
 * HS_UNSUPPORTED with the file named.
 */
#include "table/fcache.h"
#include "table/table_int.h"

#include "base/config.h"
#include "base/hash.h"
#include "base/hashmap.h"
#include "base/mem.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

enum { EQ_UNLOADED = 0, EQ_CACHED, EQ_CHUNKED };

/* A union of several delete files' sets (same equality columns), made for
 * the data files those files all apply to. */
typedef struct eq_union {
    hs_map keys;
    int64_t bytes;
    bool ok;                      /* built (else over budget: probe each set) */
} eq_union;

/* What the equality delete files of one plan share. */
struct tbl_eqshared {
    _Atomic int64_t budget_used;  /* bytes of cached sets and unions */
    pthread_mutex_t mu;           /* guards unions */
    hs_map by_list;               /* list of tbl_eqdel pointers -> eq_union * */
};

struct tbl_eqdel {
    const char *path;             /* plan arena */
    int64_t record_count, file_size;
    hs_field schema;              /* STRUCT of the equality columns (table types) */
    pthread_mutex_t mu;
    int state;                    /* EQ_*; written under mu */
    hs_map keys;                  /* EQ_CACHED */
    int64_t bytes;                /* what keys count against the budget */
    tbl_eqshared *shared;         /* the plan's */
};

#define KEY_OVERHEAD 48

static int64_t budget_bytes(void) { return hs_cfg_get(HS_CFG_EQ_DELETE_MB) * 1024 * 1024; }

/* ------------------------------------------------------------------ */
/* building                                                            */

static const hs_field *top_field(const ice_schema *s, int32_t id)
{
    for (int i = 0; s && i < s->root.n_children; i++)
        if (s->root.children[i].field_id == id)
            return &s->root.children[i];
    return NULL;
}

static bool key_type_ok(hs_type t)
{
    switch (t) {
    case HS_TYPE_BOOL: case HS_TYPE_INT32: case HS_TYPE_INT64: case HS_TYPE_FLOAT32:
    case HS_TYPE_FLOAT64: case HS_TYPE_DECIMAL128: case HS_TYPE_DATE32: case HS_TYPE_TIME64:
    case HS_TYPE_TIMESTAMP: case HS_TYPE_STRING: case HS_TYPE_BINARY: case HS_TYPE_FIXED_BINARY:
        return true;
    default:
        return false;
    }
}

hs_status tbl_eqshared_new(tbl_eqshared **out, hs_error *err)
{
    *out = hs_calloc(1, sizeof **out);
    if (!*out)
        return hs_err_nomem(err, sizeof **out);
    pthread_mutex_init(&(*out)->mu, NULL);
    return HS_OK;
}

void tbl_eqshared_free(tbl_eqshared *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->by_list.cap; i++)
        if (s->by_list.slots[i].key) {
            eq_union *u = (eq_union *)(uintptr_t)s->by_list.slots[i].value;
            hs_map_free(&u->keys);
            hs_free(u);
        }
    hs_map_free(&s->by_list);
    pthread_mutex_destroy(&s->mu);
    hs_free(s);
}

hs_status tbl_eqdel_new(const ice_table_metadata *meta, const ice_schema *schema,
                        const ice_data_file *df, hs_arena *arena, tbl_eqshared *shared,
                        tbl_eqdel **out, hs_error *err)
{
    *out = NULL;
    if (df->n_equality_ids <= 0)
        return hs_err_set(err, HS_CORRUPT, "equality delete file %s has no equality_ids",
                          df->file_path);
    if (df->file_format && strcmp(df->file_format, "PARQUET") != 0 &&
        strcmp(df->file_format, "parquet") != 0)
        return hs_err_set(err, HS_UNSUPPORTED, "equality delete file %s: format %s is not "
                          "supported (Parquet only)", df->file_path, df->file_format);
    tbl_eqdel *e = hs_calloc(1, sizeof *e);
    if (!e)
        return hs_err_nomem(err, sizeof *e);
    pthread_mutex_init(&e->mu, NULL);
    e->shared = shared;
    e->record_count = df->record_count;
    e->file_size = df->file_size_in_bytes;
    e->path = hs_arena_strndup(arena, df->file_path, strlen(df->file_path));
    hs_field_init(&e->schema, "eq", HS_TYPE_STRUCT, false);
    hs_status st = e->path ? HS_OK : hs_err_nomem(err, 256);
    for (int i = 0; st == HS_OK && i < df->n_equality_ids; i++) {
        int32_t id = df->equality_ids[i];
        const hs_field *f = top_field(schema, id);
        if (!f)   /* renamed into another schema or dropped since: the newest that has it */
            f = top_field(ice_metadata_current_schema(meta), id);
        for (int k = meta->n_schemas - 1; !f && k >= 0; k--)
            f = top_field(&meta->schemas[k], id);
        if (!f) {
            bool nested = schema && ice_schema_find_id(schema, id);
            st = hs_err_set(err, nested ? HS_UNSUPPORTED : HS_CORRUPT, "equality delete file "
                            "%s: equality field id %d %s", df->file_path, (int)id,
                            nested ? "is a nested field (not supported)"
                                   : "is in no schema of the table");
            break;
        }
        if (!key_type_ok(f->type)) {
            st = hs_err_set(err, HS_UNSUPPORTED, "equality delete file %s: equality column %s "
                            "has type %s (nested and other non-primitive types are not "
                            "supported)", df->file_path, f->name, hs_type_name(f->type));
            break;
        }
        hs_field c = {0};
        if (hs_field_copy(f, &c) != HS_OK) {
            st = hs_err_nomem(err, 64);
            break;
        }
        c.nullable = true;
        if (hs_field_add_child(&e->schema, &c) != HS_OK) {
            hs_field_clear(&c);
            st = hs_err_nomem(err, 64);
        }
    }
    if (st != HS_OK) {
        tbl_eqdel_free(e);
        return st;
    }
    *out = e;
    return HS_OK;
}

void tbl_eqdel_free(tbl_eqdel *e)
{
    if (!e)
        return;
    if (e->state == EQ_CACHED)
        e->shared->budget_used -= e->bytes;
    hs_map_free(&e->keys);
    hs_field_clear(&e->schema);
    pthread_mutex_destroy(&e->mu);
    hs_free(e);
}

const char *tbl_eqdel_path(const tbl_eqdel *e) { return e->path; }

/* Same equality columns (ids and types, in order). */
static bool same_columns(const tbl_eqdel *a, const tbl_eqdel *b)
{
    return a == b || hs_field_equals(&a->schema, &b->schema, false, true);
}

/* ------------------------------------------------------------------ */
/* keys                                                                */

static hs_status key_of(const hs_batch *b, int64_t r, hs_buf *k, hs_error *err)
{
    k->len = 0;
    for (int c = 0; c < b->n_cols; c++) {
        const hs_column *col = b->cols[c];
        if (!hs_col_is_valid(col, r)) {
            if (hs_buf_append(k, "", 1) != HS_OK)
                return hs_err_nomem(err, 64);
            continue;
        }
        uint8_t tmp[16];
        const void *p = tmp;
        size_t n = 0;
        uint32_t len32 = 0;
        switch (col->type) {
        case HS_TYPE_BOOL:
            tmp[0] = hs_bit_get(col->values.data, r);
            n = 1;
            break;
        case HS_TYPE_FLOAT32: {
            float f = HS_COL_VALUES(col, float)[r];
            if (isnan(f))
                f = NAN;
            memcpy(tmp, &f, 4);
            n = 4;
            break;
        }
        case HS_TYPE_FLOAT64: {
            double d = HS_COL_VALUES(col, double)[r];
            if (isnan(d))
                d = NAN;
            memcpy(tmp, &d, 8);
            n = 8;
            break;
        }
        case HS_TYPE_STRING:
        case HS_TYPE_BINARY: {
            const int32_t *o = HS_COL_OFFSETS(col);
            p = col->values.data + o[r];
            len32 = (uint32_t)(o[r + 1] - o[r]);
            n = len32;
            break;
        }
        default:   /* fixed width: ints, dates, times, timestamps, decimals, fixed */
            if (col->width <= 0)
                return hs_err_set(err, HS_INTERNAL, "equality key: unexpected column type %s",
                                  hs_type_name(col->type));
            p = col->values.data + (size_t)r * (size_t)col->width;
            n = (size_t)col->width;
            break;
        }
        if (hs_buf_append(k, "\1", 1) != HS_OK ||
            ((col->type == HS_TYPE_STRING || col->type == HS_TYPE_BINARY) &&
             hs_buf_append(k, &len32, sizeof len32) != HS_OK) ||
            (n && hs_buf_append(k, p, n) != HS_OK))
            return hs_err_nomem(err, n + 8);
    }
    return HS_OK;
}

/* A file read as the equality columns, deletes not applied (the delete file
 * itself, or a data file whose positions are counted). */
static hs_status read_cols(const char *path, int64_t rows, int64_t size, const hs_field *schema,
                           tbl_emit_fn emit, void *ctx, hs_error *err)
{
    tbl_plan_file pf = {0};
    pf.path = path;
    pf.record_count = rows;
    pf.file_size = size;
    hs_status st = tbl_read_file(&pf, schema, NULL, 65536, emit, ctx, NULL, NULL, err);
    if (st != HS_OK)
        hs_err_prefix(err, "%s", path);
    return st;
}

/* ------------------------------------------------------------------ */
/* loading one delete file's keys                                      */

typedef struct load_ctx {
    hs_map *keys;
    int64_t limit;          /* bytes; past it: full */
    int64_t bytes;
    hs_buf k;
    /* chunked mode: the probe run when the chunk is full */
    hs_status (*flush)(void *fctx, hs_map *keys, hs_error *err);
    void *fctx;
    bool over;              /* not chunked: the limit was passed */
} load_ctx;

static hs_status load_emit(void *vctx, hs_batch *b, hs_error *err)
{
    load_ctx *l = vctx;
    hs_status st = HS_OK;
    for (int64_t r = 0; st == HS_OK && r < b->n_rows && !l->over; r++) {
        st = key_of(b, r, &l->k, err);
        bool found = false;
        uint64_t v;
        if (st == HS_OK)
            st = hs_map_get_or_put(l->keys, l->k.data, l->k.len, 1, &v, &found);
        if (st != HS_OK || found)
            continue;
        l->bytes += (int64_t)l->k.len + KEY_OVERHEAD;
        if (l->bytes > l->limit) {
            if (!l->flush) {
                l->over = true;
            } else {
                st = l->flush(l->fctx, l->keys, err);
                hs_map_clear(l->keys);
                l->bytes = 0;
            }
        }
    }
    hs_batch_free(b);
    return st;
}

/* Builds e's cached set when it fits the plan's budget (else EQ_CHUNKED). */
static hs_status ensure_loaded(tbl_eqdel *e, hs_error *err)
{
    pthread_mutex_lock(&e->mu);
    hs_status st = HS_OK;
    if (e->state == EQ_UNLOADED) {
        int64_t left = budget_bytes() - e->shared->budget_used;
        hs_map m = {0};
        load_ctx l = {.keys = &m, .limit = left > 0 ? left : 0};
        if (left > 0)
            st = read_cols(e->path, e->record_count, e->file_size, &e->schema, load_emit, &l,
                           err);
        hs_buf_free(&l.k);
        if (st == HS_OK && !l.over && left > 0) {
            e->keys = m;
            e->bytes = l.bytes;
            e->shared->budget_used += l.bytes;
            e->state = EQ_CACHED;
        } else {
            hs_map_free(&m);
            if (st == HS_OK)
                e->state = EQ_CHUNKED;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return st;
}

/* ------------------------------------------------------------------ */
/* probing a data file                                                 */

typedef struct probe_ctx {
    const hs_map *const *sets;
    int n_sets;
    roaring_bitmap_t *bm;
    int64_t pos;
    hs_buf k;
} probe_ctx;

static hs_status probe_emit(void *vctx, hs_batch *b, hs_error *err)
{
    probe_ctx *p = vctx;
    hs_status st = HS_OK;
    for (int64_t r = 0; st == HS_OK && r < b->n_rows; r++) {
        st = key_of(b, r, &p->k, err);
        for (int s = 0; st == HS_OK && s < p->n_sets; s++)
            if (hs_map_get(p->sets[s], p->k.data, p->k.len, NULL)) {
                roaring_bitmap_add(p->bm, (uint32_t)(p->pos + r));
                break;
            }
    }
    p->pos += b->n_rows;
    hs_batch_free(b);
    return st;
}

static hs_status probe(const tbl_plan_file *df, const hs_field *schema, const hs_map *const *sets,
                       int n_sets, roaring_bitmap_t *bm, hs_error *err)
{
    probe_ctx p = {.sets = sets, .n_sets = n_sets, .bm = bm};
    hs_status st = read_cols(df->path, df->record_count, df->file_size, schema, probe_emit, &p,
                             err);
    hs_buf_free(&p.k);
    return st;
}

typedef struct chunk_ctx {
    const tbl_plan_file *df;
    const hs_field *schema;
    roaring_bitmap_t *bm;
} chunk_ctx;

static hs_status chunk_flush(void *vctx, hs_map *keys, hs_error *err)
{
    chunk_ctx *c = vctx;
    const hs_map *sets[1] = {keys};
    return probe(c->df, c->schema, sets, 1, c->bm, err);
}

/* Past the budget: e applied to df in chunks of its keys. */
static hs_status apply_chunked(const tbl_eqdel *e, const tbl_plan_file *df, roaring_bitmap_t *bm,
                               hs_error *err)
{
    hs_map m = {0};
    chunk_ctx c = {df, &e->schema, bm};
    int64_t lim = budget_bytes();
    load_ctx l = {.keys = &m, .limit = lim > 0 ? lim : 1, .flush = chunk_flush, .fctx = &c};
    hs_status st = read_cols(e->path, e->record_count, e->file_size, &e->schema, load_emit, &l,
                             err);
    if (st == HS_OK && m.count > 0)
        st = chunk_flush(&c, &m, err);
    hs_buf_free(&l.k);
    hs_map_free(&m);
    return st;
}

/* The union of cached sets[0..n) (the delete files of one equality-column
 * group that apply to a data file), built once per plan for that list while
 * the budget allows; NULL = probe the sets one by one. */
static hs_status union_of(tbl_eqshared *sh, tbl_eqdel *const *list, const hs_map *const *sets,
                          int n, const hs_map **out, hs_error *err)
{
    *out = NULL;
    pthread_mutex_lock(&sh->mu);
    uint64_t v = 0;
    hs_status st = HS_OK;
    eq_union *u = NULL;
    if (hs_map_get(&sh->by_list, list, (size_t)n * sizeof *list, &v)) {
        u = (eq_union *)(uintptr_t)v;
    } else if ((u = hs_calloc(1, sizeof *u)) == NULL) {
        st = hs_err_nomem(err, sizeof *u);
    } else {
        int64_t left = budget_bytes() - sh->budget_used;
        u->ok = true;
        for (int i = 0; st == HS_OK && u->ok && i < n; i++)
            for (size_t k = 0; st == HS_OK && u->ok && k < sets[i]->cap; k++) {
                const hs_map_slot *sl = &sets[i]->slots[k];
                bool found = false;
                if (!sl->key)
                    continue;
                st = hs_map_get_or_put(&u->keys, sl->key, sl->key_len, 1, &v, &found);
                if (st == HS_OK && !found)
                    u->bytes += (int64_t)sl->key_len + KEY_OVERHEAD;
                u->ok = u->bytes <= left;
            }
        if (st == HS_OK && !u->ok) {   /* keep the verdict, not the keys */
            hs_map_free(&u->keys);
            u->bytes = 0;
        }
        if (st == HS_OK &&
            hs_map_put(&sh->by_list, list, (size_t)n * sizeof *list, (uint64_t)(uintptr_t)u) !=
                HS_OK)
            st = hs_err_nomem(err, 64);
        if (st != HS_OK) {
            hs_map_free(&u->keys);
            hs_free(u);
            u = NULL;
        } else {
            sh->budget_used += u->bytes;
        }
    }
    if (u && u->ok)
        *out = &u->keys;
    pthread_mutex_unlock(&sh->mu);
    return st;
}

static hs_status apply_uncached(const tbl_plan_file *df, roaring_bitmap_t *bm, hs_error *err)
{
    int n = 0;
    for (int i = 0; i < df->n_deletes; i++)
        n += df->deletes[i].eq != NULL;
    if (n == 0)
        return HS_OK;
    tbl_eqdel **todo = hs_calloc((size_t)n, sizeof *todo);
    const hs_map **sets = hs_calloc((size_t)n, sizeof *sets);
    tbl_eqdel **in_sets = hs_calloc((size_t)n, sizeof *in_sets);
    hs_status st = todo && sets && in_sets ? HS_OK : hs_err_nomem(err, (size_t)n * sizeof *todo);
    int m = 0;
    for (int i = 0; st == HS_OK && i < df->n_deletes; i++)
        if (df->deletes[i].eq) {
            todo[m] = df->deletes[i].eq;
            st = ensure_loaded(todo[m++], err);
        }
    /* one pass over the data file per distinct list of equality columns */
    for (int i = 0; st == HS_OK && i < m; i++) {
        if (!todo[i])
            continue;
        tbl_eqdel *lead = todo[i];
        int n_sets = 0;
        for (int j = i; st == HS_OK && j < m; j++) {
            if (!todo[j] || !same_columns(lead, todo[j]))
                continue;
            if (todo[j]->state == EQ_CACHED) {
                in_sets[n_sets] = todo[j];
                sets[n_sets++] = &todo[j]->keys;
            } else
                st = apply_chunked(todo[j], df, bm, err);
            if (j != i)
                todo[j] = NULL;
        }
        const hs_map *u = NULL;
        if (st == HS_OK && n_sets > 1)   /* one lookup a row, not one per delete file */
            st = union_of(lead->shared, in_sets, sets, n_sets, &u, err);
        if (st == HS_OK && u)
            st = probe(df, &lead->schema, &u, 1, bm, err);
        else if (st == HS_OK && n_sets > 0)
            st = probe(df, &lead->schema, sets, n_sets, bm, err);
        todo[i] = NULL;
    }
    hs_free(todo);
    hs_free(sets);
    hs_free(in_sets);
    return st;
}

/* ------------------------------------------------------------------ */
/* the process-wide cache of deleted positions                        */

static void bm_free(void *obj) { roaring_bitmap_free(obj); }

static tbl_fcache g_positions = TBL_FCACHE_INIT("HS_EQ_DELETE_MB", 256, bm_free);

static hs_status positions_load(void *ctx, const char *path, tbl_fref *ref, void **obj,
                                size_t *cost, hs_error *err)
{
    (void)path;
    (void)ref;
    roaring_bitmap_t *bm = roaring_bitmap_create();
    if (!bm)
        return hs_err_nomem(err, 64);
    hs_status st = apply_uncached(ctx, bm, err);
    if (st != HS_OK) {
        roaring_bitmap_free(bm);
        return st;
    }
    roaring_bitmap_run_optimize(bm);
    roaring_bitmap_shrink_to_fit(bm);
    *obj = bm;
    *cost = roaring_bitmap_size_in_bytes(bm) + 256;
    return HS_OK;
}

hs_status tbl_eqdel_apply(const tbl_plan_file *df, roaring_bitmap_t *bm, hs_error *err)
{
    /* key: the list of equality delete files (paths and data sequence
     * numbers are fixed by the snapshot; paths name immutable files) */
    uint64_t h1 = 0, h2 = 0x9e3779b97f4a7c15ULL;
    int64_t n = 0;
    for (int i = 0; i < df->n_deletes; i++) {
        const tbl_delete_ref *d = &df->deletes[i];
        if (!d->eq)
            continue;
        size_t len = strlen(d->path) + 1;
        h1 = hs_xxh64(d->path, len, h1);
        h2 = hs_xxh64(d->path, len, h2 ^ (uint64_t)n);
        n++;
    }
    if (n == 0)
        return HS_OK;
    int64_t key[4] = {(int64_t)h1, (int64_t)h2, n, df->record_count};
    void *obj = NULL;
    tbl_fref *ref = NULL;
    HS_TRY(tbl_fcache_get(&g_positions, tbl_local(df->path), key, 4, positions_load,
                          (void *)df, &obj, &ref, err));
    if (obj)
        roaring_bitmap_or_inplace(bm, obj);
    tbl_fcache_release(&g_positions, ref);   /* an uncached load: freed here */
    return HS_OK;
}

void tbl_eqdel_cache_clear(void) { tbl_fcache_clear(&g_positions); }

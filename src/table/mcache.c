/*
 * table/mcache.c - the decoded-manifest cache (see mcache.h) over
 * table/fcache.c.
 */
#include "table/mcache.h"

#include "table/table_int.h"

static void free_manifest(void *obj) { ice_manifest_free(obj); }

static tbl_fcache g_manifests = TBL_FCACHE_INIT("HS_MANIFEST_CACHE_MB", 64, free_manifest);

typedef struct mload_ctx {
    const ice_manifest_file *mf;
    const ice_partition_spec *spec;
    const ice_schema *schema;
} mload_ctx;

static hs_status mload(void *ctx, const char *path, tbl_fref *ref, void **obj, size_t *cost,
                       hs_error *err)
{
    (void)ref;
    const mload_ctx *m = ctx;
    hs_file *f = NULL;
    HS_TRY(hs_io_open(path, &f, err));
    ice_manifest *man = NULL;
    hs_status st = ice_manifest_read(f, m->mf, m->spec, m->schema, &man, err);
    /* decoded entries take several times the Avro bytes */
    size_t c = (size_t)f->size * 4 + 1024;
    hs_file_close(f);
    if (st != HS_OK)
        return st;
    *obj = man;
    *cost = c + (size_t)man->n_entries * 512;
    return HS_OK;
}

hs_status tbl_mcache_get(const ice_manifest_file *mf, const ice_partition_spec *spec,
                         const ice_schema *schema, const ice_manifest **out, tbl_fref **ref,
                         hs_error *err)
{
    int64_t key[TBL_FCACHE_KEYS] = {
        mf->sequence_number,
        mf->min_sequence_number,
        mf->has_added_snapshot_id ? mf->added_snapshot_id : 0,
        mf->has_first_row_id ? mf->first_row_id : 0,
        (mf->has_added_snapshot_id ? 1 : 0) | (mf->has_first_row_id ? 2 : 0),
        (int64_t)(spec ? spec->spec_id : -1) * ((int64_t)1 << 32) +
            (uint32_t)(schema ? schema->schema_id : -1),
    };
    mload_ctx ctx = {mf, spec, schema};
    void *obj = NULL;
    HS_TRY(tbl_fcache_get(&g_manifests, tbl_local(mf->manifest_path), key, TBL_FCACHE_KEYS,
                          mload, &ctx, &obj, ref, err));
    *out = obj;
    return HS_OK;
}

void tbl_mcache_release(tbl_fref *ref) { tbl_fcache_release(&g_manifests, ref); }

void tbl_mcache_clear(void) { tbl_fcache_clear(&g_manifests); }

/* libFuzzer target: the input is read as an Iceberg manifest, as a manifest
 * list, and (from byte 0) as a deletion-vector-v1 blob and a Puffin file.
 * Nothing may crash, leak or read out of bounds. */
#include "iceberg/manifest.h"
#include "iceberg/puffin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    hs_error err = {0};
    ice_manifest_file mf = {0};
    mf.has_added_snapshot_id = true;
    mf.added_snapshot_id = 1;
    mf.sequence_number = 3;
    mf.has_first_row_id = true;
    mf.first_row_id = 100;

    ice_manifest *m = NULL;
    if (ice_manifest_read_mem("fuzz", data, size, &mf, NULL, NULL, &m, &err) == HS_OK)
        ice_manifest_free(m);
    hs_err_clear(&err);
    ice_manifest_list *l = NULL;
    if (ice_manifest_list_read_mem("fuzz", data, size, &l, &err) == HS_OK)
        ice_manifest_list_free(l);

    hs_err_clear(&err);
    roaring_bitmap_t *bm = NULL;
    if (ice_dv_decode("fuzz", data, size, &bm, &err) == HS_OK)
        roaring_bitmap_free(bm);

    hs_err_clear(&err);
    hs_file *f = NULL;
    if (hs_mem_open("fuzz", data, size, false, &f, &err) == HS_OK) {
        hs_arena arena = {0};
        ice_puffin_footer ft;
        if (ice_puffin_read_footer(f, &arena, &ft, &err) == HS_OK) {
            for (int i = 0; i < ft.n_blobs && i < 8; i++) {
                hs_error e2 = {0};
                if (ice_dv_read(f, ft.blobs[i].offset, ft.blobs[i].length, &bm, &e2) == HS_OK)
                    roaring_bitmap_free(bm);
            }
        }
        hs_arena_destroy(&arena);
        hs_file_close(f);
    }
    return 0;
}

/* libFuzzer target: the input is a write-ahead log segment (table/wal.c;
 * untrusted: read back after a crash, and anyone with write access to the
 * table directory may have written it).  Parse its records; decode each
 * payload against the schema of fuzz_wal.h; a payload that decodes must
 * pass hs_col_validate, encode again, and decode to equal columns. */
#include "fuzz_wal.h"
#include "table/wal.h"

#include <stdlib.h>

static hs_field g_schema;
static int g_ready;

static hs_status on_record(void *ctx, uint64_t seq, const uint8_t *p, size_t n, hs_error *err)
{
    (void)ctx;
    (void)seq;
    hs_batch *b = NULL;
    if (wal_batch_decode(p, n, &g_schema, &b, err) != HS_OK)
        return HS_OK;   /* a bad payload is refused: fine */
    for (int i = 0; i < b->n_cols; i++)
        if (hs_col_validate(b->cols[i], &b->schema.children[i], err) != HS_OK)
            abort();    /* decode let an invalid column through */
    hs_buf again = {0};
    if (wal_batch_encode(b, 1, &again, err) != HS_OK)
        abort();        /* what we decode we can encode */
    hs_batch *c = NULL;
    if (wal_batch_decode(again.data, again.len, &g_schema, &c, err) != HS_OK ||
        c->n_rows != b->n_rows)
        abort();
    for (int i = 0; i < b->n_cols; i++)
        if (!hs_col_equals(b->cols[i], c->cols[i]))
            abort();
    hs_batch_free(c);
    hs_buf_free(&again);
    hs_batch_free(b);
    return HS_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_ready) {
        if (fuzz_wal_schema(&g_schema) != 0)
            abort();
        g_ready = 1;
    }
    wal_seg_header h;
    size_t end = 0;
    uint64_t last = 0;
    bool torn = false;
    hs_error err = {0};
    if (wal_segment_parse(data, size, &h, on_record, NULL, &end, &last, &torn, &err) == HS_OK) {
        if (end > size || (torn != (end != size)) || last + 1 < h.first_seq)
            abort();
    }
    /* the payload decoder alone, on the raw input too */
    on_record(NULL, 0, data, size, &err);
    return 0;
}

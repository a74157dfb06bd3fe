/*
 * table/vector_col.c - vector columns: fixed_size_list<float32, d> in Arrow,
 * stored as Iceberg list<float> (Iceberg has no fixed-size list), with the
 * dimension recorded in the table properties:
 *
 *   hyperstream.vector-dimension.<field-id> = "<d>"
 *
 * Properties survive every engine's commits and renames keep field ids, so
 * the dimension stays attached to its column.  Appends check every row of
 * such a column: a non-null vector must have exactly d elements, no null
 * element, and only finite values; otherwise the append fails naming the
 * column and the row (0-based, counted over the whole append).
 */
#include "base/mem.h"
#include "table/table_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM_PREFIX "hyperstream.vector-dimension."

int tbl_vector_dimension(const ice_table_metadata *m, int32_t field_id)
{
    char key[64];
    snprintf(key, sizeof key, DIM_PREFIX "%" PRId32, field_id);
    const char *v = ice_kv_get(&m->properties, key);
    if (!v)
        return 0;
    char *end;
    long d = strtol(v, &end, 10);
    return (*end == 0 && d > 0 && d <= (1 << 20)) ? (int)d : 0;
}

hs_status tbl_vector_set_dimension(ice_kv *props, int32_t field_id, int dim, hs_error *err)
{
    char key[64], val[16];
    snprintf(key, sizeof key, DIM_PREFIX "%" PRId32, field_id);
    snprintf(val, sizeof val, "%d", dim);
    if (ice_kv_set(props, key, val) != HS_OK)
        return hs_err_nomem(err, 64);
    return HS_OK;
}

bool tbl_is_float_vector_type(const hs_field *f)
{
    return (f->type == HS_TYPE_LIST || f->type == HS_TYPE_FIXED_LIST) && f->n_children == 1 &&
           f->children[0].type == HS_TYPE_FLOAT32;
}

static hs_status check_column(const hs_field *f, const hs_column *c, int dim, int64_t row_base,
                              hs_error *err)
{
    const hs_column *elem = c->children[0];
    const float *v = HS_COL_VALUES(elem, float);
    for (int64_t r = 0; r < c->length; r++) {
        if (!hs_col_is_valid(c, r))
            continue;
        int64_t start, end;
        if (c->type == HS_TYPE_FIXED_LIST) {
            start = r * c->width;
            end = start + c->width;
        } else {
            start = HS_COL_OFFSETS(c)[r];
            end = HS_COL_OFFSETS(c)[r + 1];
        }
        if (end - start != dim)
            return hs_err_set(err, HS_INVALID, "column \"%s\" row %" PRId64 ": vector has %" PRId64
                              " dimensions, the column has %d", f->name, row_base + r,
                              end - start, dim);
        for (int64_t i = start; i < end; i++) {
            if (elem->validity.data && !hs_bit_get(elem->validity.data, i))
                return hs_err_set(err, HS_INVALID, "column \"%s\" row %" PRId64 ": vector "
                                  "element %" PRId64 " is null", f->name, row_base + r,
                                  i - start);
            if (!isfinite(v[i]))
                return hs_err_set(err, HS_INVALID, "column \"%s\" row %" PRId64 ": vector "
                                  "element %" PRId64 " is %s (vectors must be finite)",
                                  f->name, row_base + r, i - start,
                                  isnan(v[i]) ? "NaN" : "infinite");
        }
    }
    return HS_OK;
}

hs_status tbl_vector_check_batch(const ice_table_metadata *m, const hs_batch *b, int64_t row_base,
                                 hs_error *err)
{
    for (int i = 0; i < b->n_cols && i < b->schema.n_children; i++) {
        const hs_field *f = &b->schema.children[i];
        if (!tbl_is_float_vector_type(f) || f->field_id < 0)
            continue;
        int dim = tbl_vector_dimension(m, f->field_id);
        if (dim > 0)
            HS_TRY(check_column(f, b->cols[i], dim, row_base, err));
    }
    return HS_OK;
}

/*
 * tests/fuzz/fuzz_wal.h - the schema fuzz_wal decodes write-ahead log
 * payloads against (shared with gen_seeds_wal.c, which writes the seeds):
 * struct<i: int32, s: string, b: bool not null, l: list<float>,
 * v: fixed_size_list<float not null>[3], st: struct<x: int64, y: binary>>.
 */
#ifndef HS_FUZZ_WAL_H
#define HS_FUZZ_WAL_H

#include "columnar/column.h"

static inline int fuzz_wal_schema(hs_field *schema)
{
    hs_field f, e, s2;
    hs_field_init(schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "i", HS_TYPE_INT32, true);
    if (hs_field_add_child(schema, &f) != HS_OK) return -1;
    hs_field_init(&f, "s", HS_TYPE_STRING, true);
    if (hs_field_add_child(schema, &f) != HS_OK) return -1;
    hs_field_init(&f, "b", HS_TYPE_BOOL, false);
    if (hs_field_add_child(schema, &f) != HS_OK) return -1;
    hs_field_init(&e, "element", HS_TYPE_FLOAT32, true);
    hs_field_init_list(&f, "l", true, &e);
    if (hs_field_add_child(schema, &f) != HS_OK) return -1;
    hs_field_init(&e, "element", HS_TYPE_FLOAT32, false);
    hs_field_init(&f, "v", HS_TYPE_FIXED_LIST, true);
    f.width = 3;
    if (hs_field_add_child(&f, &e) != HS_OK || hs_field_add_child(schema, &f) != HS_OK) return -1;
    hs_field_init(&f, "st", HS_TYPE_STRUCT, true);
    hs_field_init(&s2, "x", HS_TYPE_INT64, true);
    if (hs_field_add_child(&f, &s2) != HS_OK) return -1;
    hs_field_init(&s2, "y", HS_TYPE_BINARY, true);
    if (hs_field_add_child(&f, &s2) != HS_OK || hs_field_add_child(schema, &f) != HS_OK)
        return -1;
    return 0;
}

#endif

/*
 * table/spec_text.c - the text forms of partition specs and sort orders that
 * the public API and the CLI take, and the Arrow -> Iceberg type mapping
 * used when a table is created from an Arrow schema.
 *
 *   spec   := [ term { ',' term } ]
 *   term   := column                      identity
 *           | identity '(' column ')'
 *           | bucket '(' N ',' column ')' | bucket '[' N ']' '(' column ')'
 *           | truncate '(' W ',' column ')' | truncate '[' W ']' '(' column ')'
 *           | year|month|day|hour|void '(' column ')'
 *           [ AS name ]
 *   sort   := [ key { ',' key } ]
 *   key    := term [ ASC | DESC ] [ NULLS FIRST | NULLS LAST ]
 *
 * Columns are dotted names resolved against the schema (case-sensitive
 * first, then case-insensitive).  Null order defaults as Java's: NULLS FIRST
 * for ASC, NULLS LAST for DESC.
 */
#include "table/table_int.h"

#include "base/mem.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct term {
    ice_transform tr;
    const hs_field *source;
    char name[128];   /* AS name, "" = default */
    int sort_dir;     /* -1 unset, 0 asc, 1 desc */
    int nulls;        /* -1 unset, 0 first, 1 last */
} term;

static void skip_ws(const char **p)
{
    while (isspace((unsigned char)**p))
        (*p)++;
}

static size_t word_len(const char *p)
{
    size_t n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.')
        n++;
    return n;
}

static bool take_kw(const char **p, const char *kw)
{
    size_t n = strlen(kw);
    skip_ws(p);
    if (strncasecmp(*p, kw, n) == 0 && !isalnum((unsigned char)(*p)[n]) && (*p)[n] != '_') {
        *p += n;
        return true;
    }
    return false;
}

static hs_status read_column(const char **p, const ice_schema *schema, const char *what,
                             const hs_field **out, hs_error *err)
{
    skip_ws(p);
    char name[256];
    size_t n;
    if (**p == '"' || **p == '`') {
        char q = **p;
        const char *e = strchr(*p + 1, q);
        if (!e)
            return hs_err_set(err, HS_INVALID, "%s: unterminated quoted column name", what);
        n = (size_t)(e - *p - 1);
        if (n >= sizeof name)
            return hs_err_set(err, HS_INVALID, "%s: column name too long", what);
        memcpy(name, *p + 1, n);
        *p = e + 1;
    } else {
        n = word_len(*p);
        if (n == 0 || n >= sizeof name)
            return hs_err_set(err, HS_INVALID, "%s: expected a column name at \"%.20s\"", what, *p);
        memcpy(name, *p, n);
        *p += n;
    }
    name[n] = '\0';
    const hs_field *f = ice_schema_find_name(schema, name, true);
    if (!f)
        f = ice_schema_find_name(schema, name, false);
    if (!f)
        return hs_err_set(err, HS_NOT_FOUND, "%s: no column \"%s\" in the schema", what, name);
    *out = f;
    return HS_OK;
}

static hs_status read_int(const char **p, const char *what, int32_t *out, hs_error *err)
{
    skip_ws(p);
    char *end;
    long v = strtol(*p, &end, 10);
    if (end == *p || v <= 0 || v > 1000000000)
        return hs_err_set(err, HS_INVALID, "%s: expected a positive integer at \"%.20s\"", what, *p);
    *p = end;
    *out = (int32_t)v;
    return HS_OK;
}

static hs_status expect_ch(const char **p, char c, const char *what, hs_error *err)
{
    skip_ws(p);
    if (**p != c)
        return hs_err_set(err, HS_INVALID, "%s: expected '%c' at \"%.20s\"", what, c,
                          **p ? *p : "end");
    (*p)++;
    return HS_OK;
}

static hs_status parse_term(const char **p, const ice_schema *schema, bool sort, const char *what,
                            term *t, hs_error *err)
{
    memset(t, 0, sizeof *t);
    t->sort_dir = t->nulls = -1;
    skip_ws(p);
    size_t n = word_len(*p);
    const char *after = *p + n;
    while (isspace((unsigned char)*after))
        after++;
    static const struct { const char *name; ice_transform_kind kind; bool param; } fns[] = {
        {"identity", ICE_TR_IDENTITY, false}, {"bucket", ICE_TR_BUCKET, true},
        {"truncate", ICE_TR_TRUNCATE, true}, {"year", ICE_TR_YEAR, false},
        {"years", ICE_TR_YEAR, false}, {"month", ICE_TR_MONTH, false},
        {"months", ICE_TR_MONTH, false}, {"day", ICE_TR_DAY, false},
        {"days", ICE_TR_DAY, false}, {"hour", ICE_TR_HOUR, false},
        {"hours", ICE_TR_HOUR, false}, {"void", ICE_TR_VOID, false},
    };
    int fi = -1;
    if (*after == '(' || *after == '[')
        for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
            if (strlen(fns[i].name) == n && strncasecmp(*p, fns[i].name, n) == 0)
                fi = (int)i;
    if (fi < 0) {
        t->tr.kind = ICE_TR_IDENTITY;
        HS_TRY(read_column(p, schema, what, &t->source, err));
    } else {
        t->tr.kind = fns[fi].kind;
        *p = after;
        if (**p == '[') {
            if (!fns[fi].param)
                return hs_err_set(err, HS_INVALID, "%s: %s takes no parameter", what, fns[fi].name);
            (*p)++;
            HS_TRY(read_int(p, what, &t->tr.param, err));
            HS_TRY(expect_ch(p, ']', what, err));
            HS_TRY(expect_ch(p, '(', what, err));
        } else {
            (*p)++;
            if (fns[fi].param) {
                HS_TRY(read_int(p, what, &t->tr.param, err));
                HS_TRY(expect_ch(p, ',', what, err));
            }
        }
        if (fns[fi].param && t->tr.param == 0)
            return hs_err_set(err, HS_INVALID, "%s: %s needs a width, as %s(16, col)", what,
                              fns[fi].name, fns[fi].name);
        HS_TRY(read_column(p, schema, what, &t->source, err));
        HS_TRY(expect_ch(p, ')', what, err));
    }
    if (!ice_transform_can_apply(&t->tr, t->source)) {
        hs_buf b = {0};
        hs_status st = ice_transform_format(&t->tr, &b);
        st = hs_err_set(err, HS_INVALID, "%s: transform %s cannot apply to column \"%s\" of type %s",
                        what, st == HS_OK ? hs_buf_cstr(&b) : "?", t->source->name,
                        hs_type_name(t->source->type));
        hs_buf_free(&b);
        return st;
    }
    if (!sort && take_kw(p, "as")) {
        skip_ws(p);
        size_t m = word_len(*p);
        if (m == 0 || m >= sizeof t->name)
            return hs_err_set(err, HS_INVALID, "%s: expected a name after AS", what);
        memcpy(t->name, *p, m);
        t->name[m] = '\0';
        *p += m;
    }
    if (sort) {
        if (take_kw(p, "asc"))
            t->sort_dir = 0;
        else if (take_kw(p, "desc"))
            t->sort_dir = 1;
        if (take_kw(p, "nulls")) {
            if (take_kw(p, "first"))
                t->nulls = 0;
            else if (take_kw(p, "last"))
                t->nulls = 1;
            else
                return hs_err_set(err, HS_INVALID, "%s: expected FIRST or LAST after NULLS", what);
        }
    }
    return HS_OK;
}

hs_status tbl_parse_spec_text(const char *text, const ice_schema *schema, int32_t spec_id,
                              ice_partition_spec *out, hs_error *err)
{
    memset(out, 0, sizeof *out);
    out->spec_id = spec_id;
    const char *p = text ? text : "";
    skip_ws(&p);
    while (*p) {
        term t;
        hs_status st = parse_term(&p, schema, false, "partition spec", &t, err);
        if (st == HS_OK)
            st = ice_spec_add_field(out, schema, t.source->field_id, &t.tr,
                                    t.name[0] ? t.name : NULL, -1, err);
        if (st == HS_OK) {
            skip_ws(&p);
            if (*p == ',') {
                p++;
                skip_ws(&p);
                if (!*p)
                    st = hs_err_set(err, HS_INVALID, "partition spec: trailing ','");
            } else if (*p) {
                st = hs_err_set(err, HS_INVALID, "partition spec: expected ',' at \"%.20s\"", p);
            }
        }
        if (st != HS_OK) {
            ice_spec_clear(out);
            return st;
        }
    }
    return HS_OK;
}

hs_status tbl_parse_sort_text(const char *text, const ice_schema *schema, ice_sort_order *out,
                              hs_error *err)
{
    memset(out, 0, sizeof *out);
    const char *p = text ? text : "";
    skip_ws(&p);
    while (*p) {
        term t;
        hs_status st = parse_term(&p, schema, true, "sort order", &t, err);
        if (st == HS_OK) {
            ice_sort_direction dir = t.sort_dir == 1 ? ICE_SORT_DESC : ICE_SORT_ASC;
            ice_null_order nulls = t.nulls >= 0 ? (ice_null_order)t.nulls
                                 : dir == ICE_SORT_ASC ? ICE_NULLS_FIRST : ICE_NULLS_LAST;
            st = ice_sort_order_add_field(out, t.source->field_id, &t.tr, dir, nulls);
            if (st == HS_NOMEM)
                hs_err_nomem(err, sizeof(ice_sort_field));
        }
        if (st == HS_OK) {
            skip_ws(&p);
            if (*p == ',') {
                p++;
                skip_ws(&p);
            } else if (*p) {
                st = hs_err_set(err, HS_INVALID, "sort order: expected ',' at \"%.20s\"", p);
            }
        }
        if (st != HS_OK) {
            ice_sort_order_clear(out);
            return st;
        }
    }
    out->order_id = out->n_fields ? 1 : 0;
    return HS_OK;
}

hs_status tbl_icebergify(hs_field *f, int format_version, hs_error *err)
{
    switch (f->type) {
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_UINT8: case HS_TYPE_UINT16:
        f->type = HS_TYPE_INT32;
        break;
    case HS_TYPE_UINT32:
        f->type = HS_TYPE_INT64;
        break;
    case HS_TYPE_FLOAT16:
        f->type = HS_TYPE_FLOAT32;
        break;
    case HS_TYPE_TIME32:
        f->type = HS_TYPE_TIME64;
        f->unit = HS_UNIT_MICRO;
        break;
    case HS_TYPE_TIME64:
        f->unit = HS_UNIT_MICRO;
        break;
    case HS_TYPE_TIMESTAMP:
        if (f->unit != HS_UNIT_NANO || format_version < 3)
            f->unit = HS_UNIT_MICRO;
        if (f->tz) {
            hs_free(f->tz);
            f->tz = hs_strdup("UTC");
            if (!f->tz)
                return hs_err_nomem(err, 4);
        }
        break;
    case HS_TYPE_UINT64:
        return hs_err_set(err, HS_INVALID, "column \"%s\": uint64 has no Iceberg type "
                          "(cast it to int64)", f->name);
    case HS_TYPE_FIXED_LIST:
        f->type = HS_TYPE_LIST;
        f->width = 0;
        break;
    case HS_TYPE_FIXED_BINARY:
    case HS_TYPE_STRING:
    case HS_TYPE_BINARY:
        break;
    case HS_TYPE_NA:
        if (format_version < 3)
            return hs_err_set(err, HS_INVALID, "column \"%s\": null type needs format "
                              "version 3 (unknown)", f->name);
        break;
    default:
        break;
    }
    if (f->ext == HS_EXT_JSON)
        f->ext = HS_EXT_NONE;
    for (int i = 0; i < f->n_children; i++)
        HS_TRY(tbl_icebergify(&f->children[i], format_version, err));
    if (f->type == HS_TYPE_MAP && f->n_children == 1 && f->children[0].n_children == 2)
        f->children[0].children[0].nullable = false;
    return HS_OK;
}

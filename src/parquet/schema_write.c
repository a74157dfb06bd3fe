/*
 * parquet/schema_write.c - hs_field tree -> Parquet SchemaElements, plus one
 * leaf descriptor (writer_int.h) per leaf column.
 *
 * Mapping (physical type, logical type, legacy converted type):
 *
 *   hs type          physical          logical                   converted
 *   BOOL             BOOLEAN           -                         -
 *   INT8/INT16       INT32             INTEGER(8|16, signed)     INT_8|INT_16
 *   UINT8/16/32      INT32             INTEGER(n, unsigned)      UINT_n
 *   INT32 / INT64    INT32 / INT64     -                         -
 *   UINT64           INT64             INTEGER(64, unsigned)     UINT_64
 *   FLOAT16          FLBA(2)           FLOAT16                   -
 *   FLOAT32/64       FLOAT/DOUBLE      -                         -
 *   DECIMAL128(p,s)  INT32 p<=9, INT64 p<=18, else FLBA(minimal width), DECIMAL(p,s), DECIMAL
 *   DATE32           INT32             DATE                      DATE
 *   TIME32 s|ms      INT32 (ms)        TIME(MILLIS, utc)         TIME_MILLIS
 *   TIME64 us|ns     INT64             TIME(MICROS|NANOS, utc)   TIME_MICROS|-
 *   TIMESTAMP        INT64 (s -> ms)   TIMESTAMP(unit, utc=tz!=NULL)  TIMESTAMP_* when utc, ms|us
 *   STRING           BYTE_ARRAY        STRING (JSON if ext JSON) UTF8 (JSON)
 *   BINARY           BYTE_ARRAY        -                         -
 *   FIXED_BINARY     FLBA(w)           UUID when ext UUID, w=16  -
 *   NA               INT32 optional    UNKNOWN                   -
 *
 * Nesting (as Arrow and the spec's backward-compatibility rules write it):
 *   LIST/FIXED_LIST  <r> group name (LIST) { repeated group list { <r> element; } }
 *   MAP              <r> group name (MAP) { repeated group key_value { required key; <r> value; } }
 *   STRUCT           <r> group name { children }
 * field_id is set on every element whose hs_field has field_id >= 0 (list ids
 * on the outer group, element ids on `element`, map key/value ids on key/value).
 */
#include "parquet/writer_int.h"

#include "base/buf.h"
#include "base/mem.h"

#include <stdio.h>
#include <string.h>

typedef struct sctx {
    hs_arena *arena;
    hs_buf elems;    /* pq_schema_element */
    hs_buf leaves;   /* pq_wleaf */
    hs_buf json;     /* fixed-list JSON under construction */
    int n_fixed;
    const char *path[PQ_MAX_DEPTH];
    int depth;
    pq_wleaf cur;    /* node chain under construction */
    hs_error *err;
} sctx;

/* Max decimal precision storable in n bytes (Arrow's table), n = 1..16. */
static const int dec_max_prec[17] = {0, 2, 4, 6, 9, 11, 14, 16, 18, 21, 23, 26, 28, 31, 33, 35, 38};

static int decimal_flba_width(int precision)
{
    for (int n = 1; n <= 16; n++)
        if (precision <= dec_max_prec[n])
            return n;
    return 16;
}

static hs_status push_elem(sctx *c, const pq_schema_element *e)
{
    if (hs_buf_append(&c->elems, e, sizeof *e) != HS_OK)
        return hs_err_nomem(c->err, sizeof *e);
    return HS_OK;
}

static int n_elems(sctx *c) { return (int)(c->elems.len / sizeof(pq_schema_element)); }

static hs_status new_elem(sctx *c, const char *name, pq_repetition rep, int32_t field_id,
                          pq_schema_element *e)
{
    memset(e, 0, sizeof *e);
    e->name = hs_arena_strndup(c->arena, name, strlen(name));
    if (!e->name)
        return hs_err_nomem(c->err, strlen(name));
    e->has_repetition = true;
    e->repetition = rep;
    e->converted_type = PQ_CT_NONE;
    if (field_id >= 0) {
        e->has_field_id = true;
        e->field_id = field_id;
    }
    return HS_OK;
}

static hs_status push_node(sctx *c, pq_node_kind kind, bool nullable, int child, int32_t width)
{
    if (c->cur.n_nodes >= PQ_MAX_DEPTH)
        return hs_err_set(c->err, HS_UNSUPPORTED, "parquet writer: schema nested deeper than %d",
                          PQ_MAX_DEPTH);
    pq_wnode *n = &c->cur.nodes[c->cur.n_nodes++];
    n->kind = kind;
    n->nullable = nullable;
    n->child = child;
    n->width = width;
    n->rep_level = 0;
    return HS_OK;
}

static hs_status path_push(sctx *c, const char *name)
{
    if (c->depth >= PQ_MAX_DEPTH)
        return hs_err_set(c->err, HS_UNSUPPORTED, "parquet writer: schema nested deeper than %d",
                          PQ_MAX_DEPTH);
    c->path[c->depth++] = name;
    return HS_OK;
}

static char *join_path(sctx *c, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += strlen(c->path[i]) + 1;
    char *s = hs_arena_alloc(c->arena, len + 1);
    if (!s)
        return NULL;
    size_t o = 0;
    for (int i = 0; i < n; i++) {
        if (i)
            s[o++] = '.';
        size_t l = strlen(c->path[i]);
        memcpy(s + o, c->path[i], l);
        o += l;
    }
    s[o] = 0;
    return s;
}

/* Fills the physical/logical description of a primitive field. */
static hs_status map_primitive(sctx *c, const hs_field *f, pq_schema_element *e, pq_wleaf *lf)
{
    e->has_type = true;
    lf->vk = PQ_VK_COPY;
    lf->order = PQ_ORD_SIGNED;
    lf->src_width = 0;
    switch (f->type) {
    case HS_TYPE_NA:
        e->type = PQ_INT32;
        e->repetition = PQ_OPTIONAL;
        e->logical.kind = PQ_LT_UNKNOWN;
        lf->vk = PQ_VK_NULL;
        lf->order = PQ_ORD_NONE;
        break;
    case HS_TYPE_BOOL:
        e->type = PQ_BOOLEAN;
        lf->vk = PQ_VK_BOOL;
        lf->order = PQ_ORD_BOOL;
        break;
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_UINT8: case HS_TYPE_UINT16:
    case HS_TYPE_UINT32: {
        static const struct { hs_type t; int bits; bool sgn; pq_vkind vk; pq_converted_type ct; int w; } m[] = {
            {HS_TYPE_INT8, 8, true, PQ_VK_I8, PQ_CT_INT_8, 1},
            {HS_TYPE_INT16, 16, true, PQ_VK_I16, PQ_CT_INT_16, 2},
            {HS_TYPE_UINT8, 8, false, PQ_VK_U8, PQ_CT_UINT_8, 1},
            {HS_TYPE_UINT16, 16, false, PQ_VK_U16, PQ_CT_UINT_16, 2},
            {HS_TYPE_UINT32, 32, false, PQ_VK_COPY, PQ_CT_UINT_32, 4}};
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
            if (m[i].t != f->type)
                continue;
            e->type = PQ_INT32;
            e->logical.kind = PQ_LT_INTEGER;
            e->logical.bit_width = (int8_t)m[i].bits;
            e->logical.is_signed = m[i].sgn;
            e->converted_type = m[i].ct;
            lf->vk = m[i].vk;
            lf->order = m[i].sgn ? PQ_ORD_SIGNED : PQ_ORD_UNSIGNED;
            lf->src_width = m[i].w;
        }
        break;
    }
    case HS_TYPE_INT32:
        e->type = PQ_INT32;
        lf->src_width = 4;
        break;
    case HS_TYPE_INT64:
        e->type = PQ_INT64;
        lf->src_width = 8;
        break;
    case HS_TYPE_UINT64:
        e->type = PQ_INT64;
        e->logical.kind = PQ_LT_INTEGER;
        e->logical.bit_width = 64;
        e->logical.is_signed = false;
        e->converted_type = PQ_CT_UINT_64;
        lf->order = PQ_ORD_UNSIGNED;
        lf->src_width = 8;
        break;
    case HS_TYPE_FLOAT16:
        e->type = PQ_FIXED_LEN_BYTE_ARRAY;
        e->type_length = 2;
        e->logical.kind = PQ_LT_FLOAT16;
        lf->order = PQ_ORD_FLOAT16;
        lf->src_width = 2;
        break;
    case HS_TYPE_FLOAT32:
        e->type = PQ_FLOAT;
        lf->order = PQ_ORD_FLOAT;
        lf->src_width = 4;
        break;
    case HS_TYPE_FLOAT64:
        e->type = PQ_DOUBLE;
        lf->order = PQ_ORD_FLOAT;
        lf->src_width = 8;
        break;
    case HS_TYPE_DECIMAL128:
        if (f->precision < 1 || f->precision > 38 || f->scale < 0 || f->scale > f->precision)
            return hs_err_set(c->err, HS_INVALID, "parquet writer: column %s: bad decimal(%d, %d)",
                              f->name, f->precision, f->scale);
        e->logical.kind = PQ_LT_DECIMAL;
        e->logical.precision = f->precision;
        e->logical.scale = f->scale;
        e->converted_type = PQ_CT_DECIMAL;
        e->precision = f->precision;
        e->scale = f->scale;
        lf->src_width = 16;
        if (f->precision <= 9) {
            e->type = PQ_INT32;
            lf->vk = PQ_VK_DEC32;
        } else if (f->precision <= 18) {
            e->type = PQ_INT64;
            lf->vk = PQ_VK_DEC64;
        } else {
            e->type = PQ_FIXED_LEN_BYTE_ARRAY;
            e->type_length = decimal_flba_width(f->precision);
            lf->vk = PQ_VK_DECFLBA;
            lf->order = PQ_ORD_DECIMAL;
        }
        break;
    case HS_TYPE_DATE32:
        e->type = PQ_INT32;
        e->logical.kind = PQ_LT_DATE;
        e->converted_type = PQ_CT_DATE;
        lf->src_width = 4;
        break;
    case HS_TYPE_TIME32:
        e->type = PQ_INT32;
        e->logical.kind = PQ_LT_TIME;
        e->logical.unit = PQ_TU_MILLIS;
        e->logical.is_adjusted_to_utc = true;
        e->converted_type = PQ_CT_TIME_MILLIS;
        lf->src_width = 4;
        if (f->unit == HS_UNIT_SECOND)
            lf->vk = PQ_VK_MUL1000_32;
        break;
    case HS_TYPE_TIME64:
        e->type = PQ_INT64;
        e->logical.kind = PQ_LT_TIME;
        e->logical.is_adjusted_to_utc = true;
        lf->src_width = 8;
        if (f->unit == HS_UNIT_NANO) {
            e->logical.unit = PQ_TU_NANOS;
        } else {
            e->logical.unit = PQ_TU_MICROS;
            e->converted_type = PQ_CT_TIME_MICROS;
        }
        break;
    case HS_TYPE_TIMESTAMP: {
        bool utc = f->tz != NULL;
        e->type = PQ_INT64;
        e->logical.kind = PQ_LT_TIMESTAMP;
        e->logical.is_adjusted_to_utc = utc;
        lf->src_width = 8;
        switch (f->unit) {
        case HS_UNIT_SECOND:
            lf->vk = PQ_VK_MUL1000_64;
            /* fall through */
        case HS_UNIT_MILLI:
            e->logical.unit = PQ_TU_MILLIS;
            if (utc)
                e->converted_type = PQ_CT_TIMESTAMP_MILLIS;
            break;
        case HS_UNIT_MICRO:
            e->logical.unit = PQ_TU_MICROS;
            if (utc)
                e->converted_type = PQ_CT_TIMESTAMP_MICROS;
            break;
        case HS_UNIT_NANO:
            e->logical.unit = PQ_TU_NANOS;
            break;
        }
        break;
    }
    case HS_TYPE_STRING:
        e->type = PQ_BYTE_ARRAY;
        if (f->ext == HS_EXT_JSON) {
            e->logical.kind = PQ_LT_JSON;
            e->converted_type = PQ_CT_JSON;
        } else {
            e->logical.kind = PQ_LT_STRING;
            e->converted_type = PQ_CT_UTF8;
        }
        lf->vk = PQ_VK_BYTES;
        lf->order = PQ_ORD_BYTES;
        break;
    case HS_TYPE_BINARY:
        e->type = PQ_BYTE_ARRAY;
        if (f->ext == HS_EXT_JSON) {
            e->logical.kind = PQ_LT_JSON;
            e->converted_type = PQ_CT_JSON;
        }
        lf->vk = PQ_VK_BYTES;
        lf->order = PQ_ORD_BYTES;
        break;
    case HS_TYPE_FIXED_BINARY:
        if (f->width <= 0)
            return hs_err_set(c->err, HS_INVALID, "parquet writer: column %s: fixed_binary width %d",
                              f->name, f->width);
        e->type = PQ_FIXED_LEN_BYTE_ARRAY;
        e->type_length = f->width;
        if (f->ext == HS_EXT_UUID && f->width == 16)
            e->logical.kind = PQ_LT_UUID;
        lf->order = PQ_ORD_BYTES;
        lf->src_width = f->width;
        break;
    default:
        return hs_err_set(c->err, HS_UNSUPPORTED, "parquet writer: column %s: type %s",
                          f->name, hs_type_name(f->type));
    }
    lf->ptype = e->type;
    lf->type_length = e->type_length;
    return HS_OK;
}

static hs_status add_field(sctx *c, const hs_field *f, const char *name, bool force_required,
                           int16_t def, int16_t rep);

static hs_status add_leaf(sctx *c, const hs_field *f, const char *name, pq_repetition r,
                          int16_t def, int16_t rep)
{
    pq_schema_element e;
    HS_TRY(new_elem(c, name, r, f->field_id, &e));
    pq_wleaf *lf = &c->cur;
    HS_TRY(map_primitive(c, f, &e, lf));
    if (e.repetition == PQ_OPTIONAL && r == PQ_REQUIRED)
        def++;  /* null type forced optional */
    lf->max_def = def;
    lf->max_rep = rep;
    lf->schema_index = n_elems(c);
    HS_TRY(push_elem(c, &e));
    /* the leaf node: forced-optional NA counts as nullable */
    c->cur.nodes[c->cur.n_nodes - 1].nullable = e.repetition == PQ_OPTIONAL;
    lf->n_path = c->depth;
    lf->path = hs_arena_alloc(c->arena, sizeof(char *) * (c->depth ? c->depth : 1));
    lf->dotted = join_path(c, c->depth);
    if (!lf->path || !lf->dotted)
        return hs_err_nomem(c->err, 64);
    for (int i = 0; i < c->depth; i++)
        lf->path[i] = c->path[i];
    if (hs_buf_append(&c->leaves, lf, sizeof *lf) != HS_OK)
        return hs_err_nomem(c->err, sizeof *lf);
    return HS_OK;
}

/* The arena copy of the name just pushed, so leaf paths stay valid. */
static hs_status path_push_dup(sctx *c, const char *name)
{
    char *s = hs_arena_strndup(c->arena, name, strlen(name));
    if (!s)
        return hs_err_nomem(c->err, strlen(name));
    return path_push(c, s);
}

static hs_status add_list(sctx *c, const hs_field *f, const char *name, pq_repetition r,
                          int16_t def, int16_t rep)
{
    if (f->n_children != 1)
        return hs_err_set(c->err, HS_INVALID, "parquet writer: list %s has %d children", name,
                          f->n_children);
    bool fixed = f->type == HS_TYPE_FIXED_LIST;
    pq_schema_element e;
    HS_TRY(new_elem(c, name, r, f->field_id, &e));
    e.num_children = 1;
    e.converted_type = PQ_CT_LIST;
    e.logical.kind = PQ_LT_LIST;
    HS_TRY(push_elem(c, &e));
    HS_TRY(new_elem(c, "list", PQ_REPEATED, -1, &e));
    e.num_children = 1;
    HS_TRY(push_elem(c, &e));
    HS_TRY(push_node(c, fixed ? PQ_NODE_FIXED : PQ_NODE_LIST, r == PQ_OPTIONAL, 0, f->width));
    c->cur.nodes[c->cur.n_nodes - 1].rep_level = (int16_t)(rep + 1);
    if (fixed) {
        if (f->width <= 0)
            return hs_err_set(c->err, HS_INVALID, "parquet writer: fixed_size_list %s width %d",
                              name, f->width);
        char *dotted = join_path(c, c->depth);
        if (!dotted)
            return hs_err_nomem(c->err, 64);
        hs_status s = hs_buf_puts(&c->json, c->n_fixed++ ? ", \"" : "{\"");
        for (const char *p = dotted; s == HS_OK && *p; p++) {
            unsigned char ch = (unsigned char)*p;
            if (ch == '"' || ch == '\\')
                s = hs_buf_printf(&c->json, "\\%c", ch);
            else if (ch < 0x20)
                s = hs_buf_printf(&c->json, "\\u%04x", ch);
            else
                s = hs_buf_append_byte(&c->json, ch);
        }
        if (s == HS_OK)
            s = hs_buf_printf(&c->json, "\": %d", (int)f->width);
        if (s != HS_OK)
            return hs_err_nomem(c->err, 64);
    }
    int16_t d = (int16_t)(def + (r == PQ_OPTIONAL) + 1);
    HS_TRY(path_push(c, "list"));
    hs_status s = add_field(c, &f->children[0], "element", false, d, (int16_t)(rep + 1));
    c->depth--;
    return s;
}

static hs_status add_map(sctx *c, const hs_field *f, const char *name, pq_repetition r,
                         int16_t def, int16_t rep)
{
    const hs_field *entries = f->n_children == 1 ? &f->children[0] : NULL;
    if (!entries || entries->type != HS_TYPE_STRUCT || entries->n_children != 2)
        return hs_err_set(c->err, HS_INVALID,
                          "parquet writer: map %s must have one struct child of 2 fields", name);
    pq_schema_element e;
    HS_TRY(new_elem(c, name, r, f->field_id, &e));
    e.num_children = 1;
    e.converted_type = PQ_CT_MAP;
    e.logical.kind = PQ_LT_MAP;
    HS_TRY(push_elem(c, &e));
    HS_TRY(new_elem(c, "key_value", PQ_REPEATED, -1, &e));
    e.num_children = 2;
    HS_TRY(push_elem(c, &e));
    HS_TRY(push_node(c, PQ_NODE_MAP, r == PQ_OPTIONAL, 0, 0));
    c->cur.nodes[c->cur.n_nodes - 1].rep_level = (int16_t)(rep + 1);
    int16_t d = (int16_t)(def + (r == PQ_OPTIONAL) + 1);
    HS_TRY(path_push(c, "key_value"));
    static const char *const kv_names[2] = {"key", "value"};
    int saved = c->cur.n_nodes;
    for (int i = 0; i < 2; i++) {
        c->cur.n_nodes = saved;
        /* the entries struct: required, descends into child i */
        hs_status s = push_node(c, PQ_NODE_PLAIN, false, i, 0);
        if (s == HS_OK)
            s = add_field(c, &entries->children[i], kv_names[i], i == 0, d, (int16_t)(rep + 1));
        if (s != HS_OK) {
            c->depth--;
            return s;
        }
    }
    c->depth--;
    return HS_OK;
}

static hs_status add_struct(sctx *c, const hs_field *f, const char *name, pq_repetition r,
                            int16_t def, int16_t rep)
{
    if (f->n_children == 0)
        return hs_err_set(c->err, HS_UNSUPPORTED,
                          "parquet writer: struct %s has no fields (Parquet groups need one)", name);
    pq_schema_element e;
    HS_TRY(new_elem(c, name, r, f->field_id, &e));
    e.num_children = f->n_children;
    HS_TRY(push_elem(c, &e));
    int16_t d = (int16_t)(def + (r == PQ_OPTIONAL));
    int saved = c->cur.n_nodes;
    for (int i = 0; i < f->n_children; i++) {
        c->cur.n_nodes = saved;
        HS_TRY(push_node(c, PQ_NODE_PLAIN, r == PQ_OPTIONAL, i, 0));
        HS_TRY(add_field(c, &f->children[i], f->children[i].name, false, d, rep));
    }
    return HS_OK;
}

/* Adds f (and its subtree) as a child of the current path; the node chain in
 * c->cur holds the nodes above f. */
static hs_status add_field(sctx *c, const hs_field *f, const char *name, bool force_required,
                           int16_t def, int16_t rep)
{
    pq_repetition r = f->nullable && !force_required ? PQ_OPTIONAL : PQ_REQUIRED;
    int saved_nodes = c->cur.n_nodes;
    HS_TRY(path_push_dup(c, name));
    hs_status s;
    switch (f->type) {
    case HS_TYPE_STRUCT:
        s = add_struct(c, f, name, r, def, rep);
        break;
    case HS_TYPE_LIST:
    case HS_TYPE_FIXED_LIST:
        s = add_list(c, f, name, r, def, rep);
        break;
    case HS_TYPE_MAP:
        s = add_map(c, f, name, r, def, rep);
        break;
    default:
        s = push_node(c, PQ_NODE_PLAIN, r == PQ_OPTIONAL, 0, 0);
        if (s == HS_OK)
            s = add_leaf(c, f, name, r, (int16_t)(def + (r == PQ_OPTIONAL)), rep);
        break;
    }
    c->depth--;
    c->cur.n_nodes = saved_nodes;
    return s;
}

hs_status pq_wschema_build(const hs_field *schema, hs_arena *arena, pq_wschema *out,
                           hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (!schema || schema->type != HS_TYPE_STRUCT)
        return hs_err_set(err, HS_INVALID, "parquet writer: schema must be a struct");
    if (schema->n_children == 0)
        return hs_err_set(err, HS_INVALID, "parquet writer: schema has no columns");
    sctx c;
    memset(&c, 0, sizeof c);
    c.arena = arena;
    c.err = err;
    pq_schema_element root;
    memset(&root, 0, sizeof root);
    root.name = "schema";
    root.num_children = schema->n_children;
    root.converted_type = PQ_CT_NONE;
    hs_status s = push_elem(&c, &root);
    for (int i = 0; s == HS_OK && i < schema->n_children; i++) {
        memset(&c.cur, 0, sizeof c.cur);
        c.cur.top = i;
        s = add_field(&c, &schema->children[i], schema->children[i].name, false, 0, 0);
    }
    if (s == HS_OK && c.n_fixed) {
        if (hs_buf_puts(&c.json, "}") != HS_OK) {
            s = hs_err_nomem(err, 64);
        } else {
            out->fixed_list_json = hs_arena_strndup(arena, (const char *)c.json.data, c.json.len);
            if (!out->fixed_list_json)
                s = hs_err_nomem(err, c.json.len);
        }
    }
    if (s == HS_OK) {
        out->n_elems = n_elems(&c);
        out->elems = hs_arena_alloc(arena, c.elems.len);
        if (!out->elems) {
            s = hs_err_nomem(err, c.elems.len);
        } else {
            memcpy(out->elems, c.elems.data, c.elems.len);
            out->n_leaves = (int)(c.leaves.len / sizeof(pq_wleaf));
            out->leaves = (pq_wleaf *)hs_buf_detach(&c.leaves, NULL);
        }
    }
    hs_buf_free(&c.elems);
    hs_buf_free(&c.leaves);
    hs_buf_free(&c.json);
    return s;
}

void pq_wschema_free(pq_wschema *s)
{
    if (!s)
        return;
    hs_free(s->leaves);
    s->leaves = NULL;
    s->n_leaves = 0;
}

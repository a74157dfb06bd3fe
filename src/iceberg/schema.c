/*
 * iceberg/schema.c - Iceberg schemas as hs_field trees: lookups by id and by
 * dotted name, validation, fresh id assignment, the spec's JSON form, and the
 * schema evolution operations (add, drop, rename, move, promote, make optional).
 *
 * JSON (spec Appendix C):
 *
 *   schema     {"type": "struct", "schema-id": 0, "identifier-field-ids": [1],
 *               "fields": [field...]}
 *   field      {"id": 1, "name": "id", "required": true, "type": T,
 *               "doc"?: "...", "initial-default"?: V, "write-default"?: V}
 *   T          "long" | "decimal(9, 2)" | "fixed[16]" | ...
 *              {"type": "struct", "fields": [field...]}
 *              {"type": "list", "element-id": 3, "element": T, "element-required": false}
 *              {"type": "map", "key-id": 4, "key": T, "value-id": 5, "value": T,
 *               "value-required": false}
 *
 * In the hs_field tree: a list's only child is "element" (field_id = element-id);
 * a map's only child is the STRUCT "entries" (no id) whose children are "key"
 * and "value".  doc / initial-default / write-default are kept as JSON text in
 * the meta keys "iceberg.doc", "iceberg.initial-default", "iceberg.write-default".
 *
 * Names: a field's full name joins the names from the root with '.'; list
 * elements add "element", map keys and values "key" / "value" (Java's
 * IndexByName).  Lookups also accept the short form that skips "element" /
 * "value" in front of a nested struct's field.
 *
 * Evolution works on a deep copy of the base schema and never modifies base.
 */
#include "iceberg/model_int.h"

#include "base/mem.h"
#include "base/numfmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define META_DOC "iceberg.doc"
#define META_INIT "iceberg.initial-default"
#define META_WRITE "iceberg.write-default"

/* --------------------------------------------------------------- basics */

void ice_schema_clear(ice_schema *s)
{
    if (!s)
        return;
    hs_field_clear(&s->root);
    hs_free(s->identifier_ids);
    memset(s, 0, sizeof *s);
}

hs_status ice_schema_copy(const ice_schema *src, ice_schema *dst)
{
    ice_schema t;
    memset(&t, 0, sizeof t);
    t.schema_id = src->schema_id;
    if (hs_field_copy(&src->root, &t.root) != HS_OK)
        return HS_NOMEM;
    if (src->n_identifier_ids) {
        t.identifier_ids = hs_malloc(sizeof(int32_t) * (size_t)src->n_identifier_ids);
        if (!t.identifier_ids) {
            hs_field_clear(&t.root);
            return HS_NOMEM;
        }
        memcpy(t.identifier_ids, src->identifier_ids, sizeof(int32_t) * (size_t)src->n_identifier_ids);
        t.n_identifier_ids = src->n_identifier_ids;
    }
    *dst = t;
    return HS_OK;
}

hs_status ice_schema_from_field(const hs_field *root, int32_t schema_id, ice_schema *out,
                                hs_error *err)
{
    if (root->type != HS_TYPE_STRUCT)
        return hs_err_set(err, HS_INVALID, "a schema must be a struct, not %s",
                          hs_type_name(root->type));
    memset(out, 0, sizeof *out);
    if (hs_field_copy(root, &out->root) != HS_OK)
        return hs_err_nomem(err, 0);
    out->schema_id = schema_id;
    return HS_OK;
}

static const hs_field *find_id_in(const hs_field *f, int32_t id)
{
    for (int i = 0; i < f->n_children; i++) {
        const hs_field *c = &f->children[i];
        if (c->field_id == id && !(f->type == HS_TYPE_MAP))
            return c;
        const hs_field *r = find_id_in(c, id);
        if (r)
            return r;
    }
    return NULL;
}

const hs_field *ice_schema_find_id(const ice_schema *s, int32_t id)
{
    if (id < 0)
        return NULL;
    return find_id_in(&s->root, id);
}

static int32_t highest_in(const hs_field *f)
{
    int32_t m = 0;
    for (int i = 0; i < f->n_children; i++) {
        const hs_field *c = &f->children[i];
        if (c->field_id > m)
            m = c->field_id;
        int32_t h = highest_in(c);
        if (h > m)
            m = h;
    }
    return m;
}

int32_t ice_schema_highest_id(const ice_schema *s) { return highest_in(&s->root); }

static bool name_eq(const char *a, size_t alen, const char *b, bool cs)
{
    return strlen(b) == alen && (cs ? strncmp(a, b, alen) == 0 : strncasecmp(a, b, alen) == 0);
}

/* The child of a nested field reached by one path component. */
static hs_field *child_by_name(hs_field *f, const char *name, size_t n, bool cs)
{
    switch (f->type) {
    case HS_TYPE_STRUCT:
        for (int i = 0; i < f->n_children; i++)
            if (name_eq(name, n, f->children[i].name, cs))
                return &f->children[i];
        return NULL;
    case HS_TYPE_LIST:
        if (f->n_children != 1)
            return NULL;
        if (name_eq(name, n, "element", cs))
            return &f->children[0];
        return child_by_name(&f->children[0], name, n, cs); /* short form */
    case HS_TYPE_MAP:
        if (f->n_children != 1 || f->children[0].n_children != 2)
            return NULL;
        if (name_eq(name, n, "key", cs))
            return &f->children[0].children[0];
        if (name_eq(name, n, "value", cs))
            return &f->children[0].children[1];
        return child_by_name(&f->children[0].children[1], name, n, cs);
    default: return NULL;
    }
}

static hs_field *find_name_mut(hs_field *root, const char *dotted, bool cs)
{
    hs_field *f = root;
    const char *p = dotted;
    if (!dotted || !*dotted)
        return NULL;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        f = child_by_name(f, p, n, cs);
        if (!f || !dot)
            return f;
        p = dot + 1;
    }
}

const hs_field *ice_schema_find_name(const ice_schema *s, const char *dotted, bool case_sensitive)
{
    /* an exact top-level name containing dots wins (names may contain '.') */
    for (int i = 0; dotted && i < s->root.n_children; i++)
        if (case_sensitive ? strcmp(s->root.children[i].name, dotted) == 0
                           : strcasecmp(s->root.children[i].name, dotted) == 0)
            return &s->root.children[i];
    return find_name_mut((hs_field *)&s->root, dotted, case_sensitive);
}

/* Appends the path to `id` under f; true when found. */
static bool name_of_in(const hs_field *f, int32_t id, hs_buf *out, hs_status *st)
{
    for (int i = 0; i < f->n_children; i++) {
        const hs_field *c = &f->children[i];
        size_t mark = out->len;
        if (f->type == HS_TYPE_MAP) { /* entries struct: transparent */
            if (name_of_in(c, id, out, st))
                return true;
            continue;
        }
        if (mark > 0 && hs_buf_append_byte(out, '.') != HS_OK)
            *st = HS_NOMEM;
        if (hs_buf_puts(out, c->name) != HS_OK)
            *st = HS_NOMEM;
        if (c->field_id == id || name_of_in(c, id, out, st))
            return true;
        out->len = mark;
    }
    return false;
}

hs_status ice_schema_name_of(const ice_schema *s, int32_t id, hs_buf *out)
{
    hs_buf tmp = {0};
    hs_status st = HS_OK;
    bool found = name_of_in(&s->root, id, &tmp, &st);
    if (found && st == HS_OK)
        st = hs_buf_append(out, tmp.data, tmp.len);
    hs_buf_free(&tmp);
    if (st != HS_OK)
        return st;
    return found ? HS_OK : HS_NOT_FOUND;
}

static bool meta_eq(const hs_field *a, const hs_field *b, const char *key)
{
    const char *x = hs_field_get_meta(a, key), *y = hs_field_get_meta(b, key);
    return (!x && !y) || (x && y && strcmp(x, y) == 0);
}

static bool fields_equal(const hs_field *a, const hs_field *b)
{
    if (a->type != b->type || a->nullable != b->nullable || a->field_id != b->field_id ||
        strcmp(a->name, b->name) != 0 || ice_type_of(a) != ice_type_of(b) ||
        a->n_children != b->n_children)
        return false;
    if (a->type == HS_TYPE_DECIMAL128 && (a->precision != b->precision || a->scale != b->scale))
        return false;
    if (a->type == HS_TYPE_FIXED_BINARY && a->width != b->width)
        return false;
    if (!meta_eq(a, b, META_DOC) || !meta_eq(a, b, META_INIT) || !meta_eq(a, b, META_WRITE))
        return false;
    for (int i = 0; i < a->n_children; i++)
        if (!fields_equal(&a->children[i], &b->children[i]))
            return false;
    return true;
}

bool ice_schema_equals(const ice_schema *a, const ice_schema *b)
{
    if (a->n_identifier_ids != b->n_identifier_ids)
        return false;
    for (int i = 0; i < a->n_identifier_ids; i++)
        if (a->identifier_ids[i] != b->identifier_ids[i])
            return false;
    if (a->root.n_children != b->root.n_children)
        return false;
    for (int i = 0; i < a->root.n_children; i++)
        if (!fields_equal(&a->root.children[i], &b->root.children[i]))
            return false;
    return true;
}

/* ------------------------------------------------------------ validation */

typedef struct id_set {
    hs_buf ids; /* int32_t, unsorted; schemas are small */
} id_set;

static hs_status validate_field(const hs_field *f, int fv, id_set *seen, hs_error *err)
{
    ice_type_id t = ice_type_of(f);
    if (t == ICE_T_INVALID)
        return hs_err_set(err, HS_INVALID, "column %s: type %s is not an Iceberg type", f->name,
                          hs_type_name(f->type));
    if (f->field_id <= 0)
        return hs_err_set(err, HS_INVALID, "column %s: missing field id", f->name);
    for (size_t i = 0; i < HS_VEC_LEN(&seen->ids, int32_t); i++)
        if (HS_VEC_AT(&seen->ids, int32_t, i) == f->field_id)
            return hs_err_set(err, HS_INVALID, "column %s: field id %d is used twice", f->name,
                              (int)f->field_id);
    if (HS_VEC_PUSH(&seen->ids, int32_t, f->field_id) != HS_OK)
        return hs_err_nomem(err, 4);
    if (fv < 3 && (t == ICE_T_TIMESTAMP_NS || t == ICE_T_TIMESTAMPTZ_NS || t == ICE_T_UNKNOWN))
        return hs_err_set(err, HS_INVALID, "column %s: type needs format version 3", f->name);
    if (fv < 3 && (hs_field_get_meta(f, META_INIT) || hs_field_get_meta(f, META_WRITE)))
        return hs_err_set(err, HS_INVALID, "column %s: default values need format version 3",
                          f->name);
    if (t == ICE_T_UNKNOWN && !f->nullable)
        return hs_err_set(err, HS_INVALID, "column %s: unknown type must be optional", f->name);
    switch (t) {
    case ICE_T_STRUCT:
        for (int i = 0; i < f->n_children; i++) {
            for (int j = 0; j < i; j++)
                if (strcmp(f->children[i].name, f->children[j].name) == 0)
                    return hs_err_set(err, HS_INVALID, "struct %s: field name %s is used twice",
                                      f->name, f->children[i].name);
            HS_TRY(validate_field(&f->children[i], fv, seen, err));
        }
        return HS_OK;
    case ICE_T_LIST:
        if (f->n_children != 1)
            return hs_err_set(err, HS_INVALID, "list %s: needs one element field", f->name);
        return validate_field(&f->children[0], fv, seen, err);
    case ICE_T_MAP: {
        const hs_field *e = f->n_children == 1 ? &f->children[0] : NULL;
        if (!e || e->type != HS_TYPE_STRUCT || e->n_children != 2)
            return hs_err_set(err, HS_INVALID, "map %s: needs an entries struct {key, value}",
                              f->name);
        if (e->children[0].nullable)
            return hs_err_set(err, HS_INVALID, "map %s: keys must be required", f->name);
        HS_TRY(validate_field(&e->children[0], fv, seen, err));
        return validate_field(&e->children[1], fv, seen, err);
    }
    default: return HS_OK;
    }
}

hs_status ice_schema_validate(const ice_schema *s, int format_version, hs_error *err)
{
    if (s->root.type != HS_TYPE_STRUCT)
        return hs_err_set(err, HS_INVALID, "schema root must be a struct");
    id_set seen = {{0}};
    hs_status st = HS_OK;
    for (int i = 0; st == HS_OK && i < s->root.n_children; i++) {
        for (int j = 0; j < i; j++)
            if (strcmp(s->root.children[i].name, s->root.children[j].name) == 0) {
                st = hs_err_set(err, HS_INVALID, "schema: column name %s is used twice",
                                s->root.children[i].name);
                break;
            }
        if (st == HS_OK)
            st = validate_field(&s->root.children[i], format_version, &seen, err);
    }
    hs_buf_free(&seen.ids);
    for (int i = 0; st == HS_OK && i < s->n_identifier_ids; i++) {
        const hs_field *f = ice_schema_find_id(s, s->identifier_ids[i]);
        ice_type_id t = f ? ice_type_of(f) : ICE_T_INVALID;
        if (!f)
            st = hs_err_set(err, HS_INVALID, "identifier field id %d is not in the schema",
                            (int)s->identifier_ids[i]);
        else if (!ice_type_is_primitive(t) || t == ICE_T_FLOAT || t == ICE_T_DOUBLE ||
                 t == ICE_T_UNKNOWN)
            st = hs_err_set(err, HS_INVALID, "identifier field %s must be a primitive that is "
                                             "not float or double", f->name);
        else if (f->nullable)
            st = hs_err_set(err, HS_INVALID, "identifier field %s must be required", f->name);
    }
    return st;
}

/* ------------------------------------------------------------- fresh ids */

static hs_status fresh_type(hs_field *f, int32_t *next, hs_buf *map);

static hs_status fresh_assign(hs_field *f, int32_t *next, hs_buf *map)
{
    int32_t old = f->field_id;
    f->field_id = ++*next;
    if (map) {
        HS_TRY(HS_VEC_PUSH(map, int32_t, old));
        HS_TRY(HS_VEC_PUSH(map, int32_t, f->field_id));
    }
    return HS_OK;
}

static hs_status fresh_type(hs_field *f, int32_t *next, hs_buf *map)
{
    switch (f->type) {
    case HS_TYPE_STRUCT:
        for (int i = 0; i < f->n_children; i++)
            HS_TRY(fresh_assign(&f->children[i], next, map));
        for (int i = 0; i < f->n_children; i++)
            HS_TRY(fresh_type(&f->children[i], next, map));
        return HS_OK;
    case HS_TYPE_LIST:
        if (f->n_children == 1) {
            HS_TRY(fresh_assign(&f->children[0], next, map));
            HS_TRY(fresh_type(&f->children[0], next, map));
        }
        return HS_OK;
    case HS_TYPE_MAP:
        if (f->n_children == 1 && f->children[0].n_children == 2) {
            hs_field *e = &f->children[0];
            HS_TRY(fresh_assign(&e->children[0], next, map));
            HS_TRY(fresh_assign(&e->children[1], next, map));
            HS_TRY(fresh_type(&e->children[0], next, map));
            HS_TRY(fresh_type(&e->children[1], next, map));
        }
        return HS_OK;
    default: return HS_OK;
    }
}

hs_status ice_schema_assign_fresh_ids(ice_schema *s, int32_t *next_id, hs_buf *id_map)
{
    hs_buf local = {0};
    hs_buf *map = id_map ? id_map : (s->n_identifier_ids ? &local : NULL);
    size_t start = map ? map->len : 0;
    /* *next_id is the last id used; fresh_assign pre-increments */
    int32_t last = *next_id - 1;
    hs_status st = fresh_type(&s->root, &last, map);
    *next_id = last + 1;
    for (int i = 0; st == HS_OK && i < s->n_identifier_ids; i++) {
        const int32_t *pairs = (const int32_t *)(map->data + start);
        size_t np = (map->len - start) / (2 * sizeof(int32_t));
        for (size_t k = 0; k < np; k++)
            if (pairs[2 * k] == s->identifier_ids[i]) {
                s->identifier_ids[i] = pairs[2 * k + 1];
                break;
            }
    }
    hs_buf_free(&local);
    return st;
}

/* ------------------------------------------------------------------ JSON */

static hs_status type_to_jansson(const hs_field *f, json_t **out, hs_error *err);

static hs_status meta_to_json(const hs_field *f, const char *key, const char *json_key,
                              json_t *o, hs_error *err)
{
    const char *v = hs_field_get_meta(f, key);
    if (!v)
        return HS_OK;
    json_error_t je;
    json_t *j = hs_json_loads(v, JSON_DECODE_ANY, &je);
    if (!j) { /* not JSON text: a plain doc string */
        if (strcmp(key, META_DOC) != 0)
            return hs_err_set(err, HS_INVALID, "column %s: %s is not JSON: %s", f->name, key, je.text);
        j = json_string(v);
    }
    if (!j || json_object_set_new(o, json_key, j))
        return ice_json_nomem(err);
    return HS_OK;
}

static hs_status field_to_jansson(const hs_field *f, json_t **out, hs_error *err)
{
    json_t *type = NULL;
    HS_TRY(type_to_jansson(f, &type, err));
    json_t *o = json_pack("{s:i, s:s, s:b, s:o}", "id", (int)f->field_id, "name", f->name,
                          "required", !f->nullable, "type", type);
    if (!o)
        return ice_json_nomem(err);
    hs_status st = meta_to_json(f, META_DOC, "doc", o, err);
    if (st == HS_OK)
        st = meta_to_json(f, META_INIT, "initial-default", o, err);
    if (st == HS_OK)
        st = meta_to_json(f, META_WRITE, "write-default", o, err);
    if (st != HS_OK) {
        json_decref(o);
        return st;
    }
    *out = o;
    return HS_OK;
}

static hs_status struct_fields_to_jansson(const hs_field *f, json_t **out, hs_error *err)
{
    json_t *arr = json_array();
    if (!arr)
        return ice_json_nomem(err);
    for (int i = 0; i < f->n_children; i++) {
        json_t *c = NULL;
        hs_status st = field_to_jansson(&f->children[i], &c, err);
        if (st == HS_OK && json_array_append_new(arr, c))
            st = ice_json_nomem(err);
        if (st != HS_OK) {
            json_decref(arr);
            return st;
        }
    }
    *out = arr;
    return HS_OK;
}

static hs_status type_to_jansson(const hs_field *f, json_t **out, hs_error *err)
{
    ice_type_id t = ice_type_of(f);
    json_t *o = NULL, *a = NULL, *b = NULL;
    switch (t) {
    case ICE_T_STRUCT:
        HS_TRY(struct_fields_to_jansson(f, &a, err));
        o = json_pack("{s:s, s:o}", "type", "struct", "fields", a);
        break;
    case ICE_T_LIST:
        if (f->n_children != 1)
            return hs_err_set(err, HS_INVALID, "list %s has no element", f->name);
        HS_TRY(type_to_jansson(&f->children[0], &a, err));
        o = json_pack("{s:s, s:i, s:o, s:b}", "type", "list", "element-id",
                      (int)f->children[0].field_id, "element", a, "element-required",
                      !f->children[0].nullable);
        break;
    case ICE_T_MAP: {
        if (f->n_children != 1 || f->children[0].n_children != 2)
            return hs_err_set(err, HS_INVALID, "map %s has no key/value", f->name);
        const hs_field *k = &f->children[0].children[0], *v = &f->children[0].children[1];
        HS_TRY(type_to_jansson(k, &a, err));
        hs_status st = type_to_jansson(v, &b, err);
        if (st != HS_OK) {
            json_decref(a);
            return st;
        }
        o = json_pack("{s:s, s:i, s:o, s:i, s:o, s:b}", "type", "map", "key-id", (int)k->field_id,
                      "key", a, "value-id", (int)v->field_id, "value", b, "value-required",
                      !v->nullable);
        break;
    }
    case ICE_T_INVALID:
        return hs_err_set(err, HS_INVALID, "column %s: type %s is not an Iceberg type", f->name,
                          hs_type_name(f->type));
    default: {
        hs_buf tb = {0};
        if (ice_type_to_string(f, &tb) != HS_OK) {
            hs_buf_free(&tb);
            return ice_json_nomem(err);
        }
        o = json_string(hs_buf_cstr(&tb));
        hs_buf_free(&tb);
        break;
    }
    }
    if (!o)
        return ice_json_nomem(err);
    *out = o;
    return HS_OK;
}

hs_status ice_schema_to_jansson(const ice_schema *s, json_t **out, hs_error *err)
{
    json_t *fields = NULL;
    HS_TRY(struct_fields_to_jansson(&s->root, &fields, err));
    json_t *o = json_pack("{s:s, s:i}", "type", "struct", "schema-id", (int)s->schema_id);
    if (!o) {
        json_decref(fields);
        return ice_json_nomem(err);
    }
    if (s->n_identifier_ids) {
        json_t *ids = json_array();
        for (int i = 0; ids && i < s->n_identifier_ids; i++)
            if (json_array_append_new(ids, json_integer(s->identifier_ids[i]))) {
                json_decref(ids);
                ids = NULL;
            }
        if (!ids || json_object_set_new(o, "identifier-field-ids", ids)) {
            json_decref(fields);
            json_decref(o);
            return ice_json_nomem(err);
        }
    }
    if (json_object_set_new(o, "fields", fields)) {
        json_decref(o);
        return ice_json_nomem(err);
    }
    *out = o;
    return HS_OK;
}

static hs_status type_from_jansson(const json_t *t, hs_field *f, const char *what, hs_error *err);

static hs_status get_int32(const json_t *o, const char *key, const char *what, int32_t *out,
                           hs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return HS_CORRUPT_AT(err, "%s: required field \"%s\" is missing", what, key);
    if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN || json_integer_value(v) > INT32_MAX)
        return HS_CORRUPT_AT(err, "%s: \"%s\" must be a 32-bit integer", what, key);
    *out = (int32_t)json_integer_value(v);
    return HS_OK;
}

static hs_status get_bool(const json_t *o, const char *key, const char *what, bool *out,
                          hs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return HS_CORRUPT_AT(err, "%s: required field \"%s\" is missing", what, key);
    if (!json_is_boolean(v))
        return HS_CORRUPT_AT(err, "%s: \"%s\" must be true or false", what, key);
    *out = json_is_true(v);
    return HS_OK;
}

static hs_status meta_from_json(const json_t *o, const char *json_key, const char *key,
                                hs_field *f, hs_error *err)
{
    const json_t *v = json_object_get(o, json_key);
    if (!v)
        return HS_OK;
    char *text = hs_json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!text)
        return ice_json_nomem(err);
    hs_status st = hs_field_set_meta(f, key, text);
    free(text);
    return st ? hs_err_nomem(err, 0) : HS_OK;
}

/* Parses one struct field object into f (fully built on success, cleared on failure). */
static hs_status field_from_jansson(const json_t *o, hs_field *f, const char *what, hs_error *err)
{
    int32_t id = 0;
    bool required = false;
    const json_t *name = json_object_get(o, "name");
    if (!json_is_object(o))
        return HS_CORRUPT_AT(err, "%s: field must be an object", what);
    if (!json_is_string(name))
        return HS_CORRUPT_AT(err, "%s: required field \"name\" is missing or not a string", what);
    char w[256];
    snprintf(w, sizeof w, "%s.%s", what, json_string_value(name));
    HS_TRY(get_int32(o, "id", w, &id, err));
    HS_TRY(get_bool(o, "required", w, &required, err));
    const json_t *type = json_object_get(o, "type");
    if (!type)
        return HS_CORRUPT_AT(err, "%s: required field \"type\" is missing", w);
    hs_field_init(f, json_string_value(name), HS_TYPE_NA, !required);
    if (!f->name)
        return hs_err_nomem(err, 0);
    f->field_id = id;
    hs_status st = type_from_jansson(type, f, w, err);
    const json_t *doc = json_object_get(o, "doc");
    if (st == HS_OK && doc && !json_is_null(doc))
        st = meta_from_json(o, "doc", META_DOC, f, err);
    if (st == HS_OK)
        st = meta_from_json(o, "initial-default", META_INIT, f, err);
    if (st == HS_OK)
        st = meta_from_json(o, "write-default", META_WRITE, f, err);
    if (st != HS_OK)
        hs_field_clear(f);
    return st;
}

static hs_status struct_from_jansson(const json_t *t, hs_field *f, const char *what, hs_error *err)
{
    const json_t *fields = json_object_get(t, "fields");
    if (!json_is_array(fields))
        return HS_CORRUPT_AT(err, "%s: struct \"fields\" is missing or not an array", what);
    for (size_t i = 0; i < json_array_size(fields); i++) {
        hs_field c;
        HS_TRY(field_from_jansson(json_array_get(fields, i), &c, what, err));
        if (hs_field_add_child(f, &c) != HS_OK)
            return hs_err_nomem(err, 0);
    }
    return HS_OK;
}

static hs_status type_from_jansson(const json_t *t, hs_field *f, const char *what, hs_error *err)
{
    if (json_is_string(t)) {
        hs_status st = ice_type_parse(json_string_value(t), f, err);
        if (st == HS_INVALID) {
            hs_err_clear(err);
            return HS_CORRUPT_AT(err, "%s: unknown type \"%s\"", what, json_string_value(t));
        }
        return st;
    }
    const json_t *kind = json_object_get(t, "type");
    if (!json_is_object(t) || !json_is_string(kind))
        return HS_CORRUPT_AT(err, "%s: type must be a string or an object with \"type\"", what);
    const char *k = json_string_value(kind);
    if (strcmp(k, "struct") == 0) {
        f->type = HS_TYPE_STRUCT;
        return struct_from_jansson(t, f, what, err);
    }
    if (strcmp(k, "list") == 0) {
        int32_t eid = 0;
        bool ereq = false;
        char w[280];
        snprintf(w, sizeof w, "%s.element", what);
        HS_TRY(get_int32(t, "element-id", what, &eid, err));
        HS_TRY(get_bool(t, "element-required", what, &ereq, err));
        const json_t *et = json_object_get(t, "element");
        if (!et)
            return HS_CORRUPT_AT(err, "%s: required field \"element\" is missing", what);
        f->type = HS_TYPE_LIST;
        hs_field e;
        hs_field_init(&e, "element", HS_TYPE_NA, !ereq);
        if (!e.name)
            return hs_err_nomem(err, 0);
        e.field_id = eid;
        hs_status st = type_from_jansson(et, &e, w, err);
        if (st != HS_OK) {
            hs_field_clear(&e);
            return st;
        }
        return hs_field_add_child(f, &e) ? hs_err_nomem(err, 0) : HS_OK;
    }
    if (strcmp(k, "map") == 0) {
        int32_t kid = 0, vid = 0;
        bool vreq = false;
        HS_TRY(get_int32(t, "key-id", what, &kid, err));
        HS_TRY(get_int32(t, "value-id", what, &vid, err));
        HS_TRY(get_bool(t, "value-required", what, &vreq, err));
        const json_t *kt = json_object_get(t, "key"), *vt = json_object_get(t, "value");
        if (!kt || !vt)
            return HS_CORRUPT_AT(err, "%s: map needs \"key\" and \"value\"", what);
        f->type = HS_TYPE_MAP;
        hs_field e, kf, vf;
        hs_field_init(&e, "entries", HS_TYPE_STRUCT, false);
        hs_field_init(&kf, "key", HS_TYPE_NA, false);
        hs_field_init(&vf, "value", HS_TYPE_NA, !vreq);
        kf.field_id = kid;
        vf.field_id = vid;
        if (!e.name || !kf.name || !vf.name) {
            hs_field_clear(&e);
            hs_field_clear(&kf);
            hs_field_clear(&vf);
            return hs_err_nomem(err, 0);
        }
        char w[280];
        snprintf(w, sizeof w, "%s.key", what);
        hs_status st = type_from_jansson(kt, &kf, w, err);
        snprintf(w, sizeof w, "%s.value", what);
        if (st == HS_OK)
            st = type_from_jansson(vt, &vf, w, err);
        if (st != HS_OK) {
            hs_field_clear(&e);
            hs_field_clear(&kf);
            hs_field_clear(&vf);
            return st;
        }
        if (hs_field_add_child(&e, &kf) != HS_OK) {
            hs_field_clear(&e);
            hs_field_clear(&vf);
            return hs_err_nomem(err, 0);
        }
        if (hs_field_add_child(&e, &vf) != HS_OK) {
            hs_field_clear(&e);
            return hs_err_nomem(err, 0);
        }
        return hs_field_add_child(f, &e) ? hs_err_nomem(err, 0) : HS_OK;
    }
    return HS_CORRUPT_AT(err, "%s: unknown nested type \"%s\"", what, k);
}

hs_status ice_schema_from_jansson(const json_t *j, const char *what, ice_schema *out,
                                  hs_error *err)
{
    ice_schema s;
    memset(&s, 0, sizeof s);
    if (!json_is_object(j))
        return HS_CORRUPT_AT(err, "%s: schema must be an object", what);
    const json_t *sid = json_object_get(j, "schema-id");
    if (sid && !json_is_integer(sid))
        return HS_CORRUPT_AT(err, "%s: \"schema-id\" must be an integer", what);
    s.schema_id = sid ? (int32_t)json_integer_value(sid) : 0;
    hs_field_init(&s.root, "table", HS_TYPE_STRUCT, false);
    if (!s.root.name)
        return hs_err_nomem(err, 0);
    hs_status st = struct_from_jansson(j, &s.root, what, err);
    const json_t *ids = json_object_get(j, "identifier-field-ids");
    if (st == HS_OK && ids && !json_is_null(ids)) {
        if (!json_is_array(ids)) {
            st = HS_CORRUPT_AT(err, "%s: \"identifier-field-ids\" must be an array", what);
        } else if (json_array_size(ids)) {
            s.identifier_ids = hs_malloc(sizeof(int32_t) * json_array_size(ids));
            if (!s.identifier_ids)
                st = hs_err_nomem(err, 0);
            for (size_t i = 0; st == HS_OK && i < json_array_size(ids); i++) {
                const json_t *v = json_array_get(ids, i);
                if (!json_is_integer(v))
                    st = HS_CORRUPT_AT(err, "%s: identifier-field-ids[%zu] is not an integer",
                                       what, i);
                else
                    s.identifier_ids[s.n_identifier_ids++] = (int32_t)json_integer_value(v);
            }
        }
    }
    if (st != HS_OK) {
        ice_schema_clear(&s);
        return st;
    }
    *out = s;
    return HS_OK;
}

hs_status ice_schema_to_json(const ice_schema *s, hs_buf *out, hs_error *err)
{
    json_t *j = NULL;
    HS_TRY(ice_schema_to_jansson(s, &j, err));
    hs_status st = ice_json_dump(j, out, false);
    json_decref(j);
    return st ? hs_err_nomem(err, 0) : HS_OK;
}

hs_status ice_schema_parse_json(const char *json, size_t len, ice_schema *out, hs_error *err)
{
    json_error_t je;
    json_t *j = hs_json_loadb(json, len, 0, &je);
    if (!j)
        return HS_CORRUPT_AT(err, "schema JSON: %s (line %d)", je.text, je.line);
    hs_status st = ice_schema_from_jansson(j, "schema", out, err);
    json_decref(j);
    return st;
}

/* ------------------------------------------------------------- evolution */

/* Finds the parent (a STRUCT, or a LIST/MAP entries struct) and index of the
 * field at `path` in a mutable tree. */
static hs_status locate(hs_field *root, const char *path, hs_field **parent, int *index,
                        hs_error *err)
{
    hs_field *f = find_name_mut(root, path, true);
    if (!f)
        return hs_err_set(err, HS_NOT_FOUND, "column %s does not exist", path);
    /* search the tree for the array holding f */
    hs_field *stack[64];
    int sp = 0;
    stack[sp++] = root;
    while (sp > 0) {
        hs_field *p = stack[--sp];
        for (int i = 0; i < p->n_children; i++) {
            if (&p->children[i] == f) {
                *parent = p;
                *index = i;
                return HS_OK;
            }
            if (p->children[i].n_children && sp < 64)
                stack[sp++] = &p->children[i];
        }
    }
    return hs_err_set(err, HS_INTERNAL, "column %s: parent not found", path);
}

static hs_status begin_evolve(const ice_schema *base, ice_schema *out, hs_error *err)
{
    if (ice_schema_copy(base, out) != HS_OK)
        return hs_err_nomem(err, 0);
    out->schema_id = base->schema_id + 1;
    return HS_OK;
}

static hs_status fail_evolve(ice_schema *out, hs_status st)
{
    ice_schema_clear(out);
    return st;
}

static bool is_identifier(const ice_schema *s, int32_t id)
{
    for (int i = 0; i < s->n_identifier_ids; i++)
        if (s->identifier_ids[i] == id)
            return true;
    return false;
}

static bool contains_identifier(const ice_schema *s, const hs_field *f)
{
    if (is_identifier(s, f->field_id))
        return true;
    for (int i = 0; i < f->n_children; i++)
        if (contains_identifier(s, &f->children[i]))
            return true;
    return false;
}

/* The map "entries" struct and list parents are not user structs. */
static bool is_user_struct_parent(const hs_field *root, const hs_field *parent)
{
    if (parent == root)
        return true;
    if (parent->type != HS_TYPE_STRUCT)
        return false;
    /* an entries struct has no field id; every user struct has one */
    return parent->field_id > 0;
}

hs_status ice_schema_add_column(const ice_schema *base, const char *parent_path,
                                const hs_field *field, int32_t *last_column_id,
                                int format_version, ice_schema *out, hs_error *err)
{
    if (!field->nullable && (format_version < 3 || !hs_field_get_meta(field, META_INIT)))
        return hs_err_set(err, HS_INVALID, "cannot add required column %s: %s", field->name,
                          format_version < 3 ? "adding a required column needs format version 3 "
                                               "and an initial default"
                                             : "it has no initial default");
    if (format_version < 3 && hs_field_get_meta(field, META_INIT))
        return hs_err_set(err, HS_INVALID, "column %s: default values need format version 3",
                          field->name);
    HS_TRY(begin_evolve(base, out, err));
    hs_field *parent = &out->root;
    if (parent_path && *parent_path) {
        parent = find_name_mut(&out->root, parent_path, true);
        if (!parent)
            return fail_evolve(out, hs_err_set(err, HS_NOT_FOUND, "column %s does not exist",
                                               parent_path));
        if (parent->type == HS_TYPE_LIST && parent->n_children == 1)
            parent = &parent->children[0];
        else if (parent->type == HS_TYPE_MAP && parent->n_children == 1 &&
                 parent->children[0].n_children == 2)
            parent = &parent->children[0].children[1];
        if (parent->type != HS_TYPE_STRUCT)
            return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot add column %s to %s: it "
                                                                "is not a struct", field->name,
                                               parent_path));
    }
    for (int i = 0; i < parent->n_children; i++)
        if (strcmp(parent->children[i].name, field->name) == 0)
            return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot add column %s: it "
                                                                "already exists", field->name));
    /* wrap the new field in a struct to assign ids in Java's order */
    ice_schema tmp;
    memset(&tmp, 0, sizeof tmp);
    hs_field_init(&tmp.root, "", HS_TYPE_STRUCT, false);
    hs_field c;
    if (hs_field_copy(field, &c) != HS_OK || hs_field_add_child(&tmp.root, &c) != HS_OK) {
        ice_schema_clear(&tmp);
        return fail_evolve(out, hs_err_nomem(err, 0));
    }
    int32_t next = *last_column_id + 1;
    if (ice_schema_assign_fresh_ids(&tmp, &next, NULL) != HS_OK) {
        ice_schema_clear(&tmp);
        return fail_evolve(out, hs_err_nomem(err, 0));
    }
    if (ice_type_of(&tmp.root.children[0]) == ICE_T_INVALID) {
        ice_schema_clear(&tmp);
        return fail_evolve(out, hs_err_set(err, HS_INVALID, "column %s: type %s is not an "
                                                            "Iceberg type", field->name,
                                           hs_type_name(field->type)));
    }
    hs_field moved = tmp.root.children[0];
    tmp.root.n_children = 0;
    ice_schema_clear(&tmp);
    if (hs_field_add_child(parent, &moved) != HS_OK)
        return fail_evolve(out, hs_err_nomem(err, 0));
    hs_status st = ice_schema_validate(out, format_version, err);
    if (st != HS_OK)
        return fail_evolve(out, st);
    *last_column_id = next - 1;
    return HS_OK;
}

hs_status ice_schema_drop_column(const ice_schema *base, const char *path, ice_schema *out,
                                 hs_error *err)
{
    HS_TRY(begin_evolve(base, out, err));
    hs_field *parent;
    int idx;
    hs_status st = locate(&out->root, path, &parent, &idx, err);
    if (st != HS_OK)
        return fail_evolve(out, st);
    if (!is_user_struct_parent(&out->root, parent))
        return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot drop %s: list elements and "
                                                            "map keys/values cannot be dropped",
                                           path));
    hs_field *victim = &parent->children[idx];
    if (contains_identifier(out, victim))
        return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot drop %s: it is (or contains) "
                                                            "an identifier field", path));
    if (parent == &out->root && parent->n_children == 1)
        return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot drop %s: it is the last "
                                                            "column", path));
    hs_field_clear(victim);
    memmove(parent->children + idx, parent->children + idx + 1,
            sizeof(hs_field) * (size_t)(parent->n_children - idx - 1));
    parent->n_children--;
    return HS_OK;
}

hs_status ice_schema_rename_column(const ice_schema *base, const char *path, const char *new_name,
                                   ice_schema *out, hs_error *err)
{
    if (!new_name || !*new_name)
        return hs_err_set(err, HS_INVALID, "cannot rename %s to an empty name", path);
    HS_TRY(begin_evolve(base, out, err));
    hs_field *parent;
    int idx;
    hs_status st = locate(&out->root, path, &parent, &idx, err);
    if (st != HS_OK)
        return fail_evolve(out, st);
    if (!is_user_struct_parent(&out->root, parent))
        return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot rename %s: list elements and "
                                                            "map keys/values have fixed names",
                                           path));
    for (int i = 0; i < parent->n_children; i++)
        if (i != idx && strcmp(parent->children[i].name, new_name) == 0)
            return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot rename %s to %s: a "
                                                                "column of that name exists",
                                               path, new_name));
    char *nm = hs_strdup(new_name);
    if (!nm)
        return fail_evolve(out, hs_err_nomem(err, 0));
    hs_free(parent->children[idx].name);
    parent->children[idx].name = nm;
    return HS_OK;
}

hs_status ice_schema_move_column(const ice_schema *base, const char *path, ice_move_kind kind,
                                 const char *ref_path, ice_schema *out, hs_error *err)
{
    HS_TRY(begin_evolve(base, out, err));
    hs_field *parent, *rparent = NULL;
    int idx, ridx = 0;
    hs_status st = locate(&out->root, path, &parent, &idx, err);
    if (st == HS_OK && kind != ICE_MOVE_FIRST) {
        if (!ref_path)
            st = hs_err_set(err, HS_INVALID, "move %s: a reference column is needed", path);
        else
            st = locate(&out->root, ref_path, &rparent, &ridx, err);
        if (st == HS_OK && rparent != parent)
            st = hs_err_set(err, HS_INVALID, "cannot move %s next to %s: they are not in the same "
                                             "struct", path, ref_path);
        if (st == HS_OK && ridx == idx)
            st = hs_err_set(err, HS_INVALID, "cannot move %s relative to itself", path);
    }
    if (st == HS_OK && !is_user_struct_parent(&out->root, parent))
        st = hs_err_set(err, HS_INVALID, "cannot move %s: it is not a struct field", path);
    if (st != HS_OK)
        return fail_evolve(out, st);
    hs_field moving = parent->children[idx];
    memmove(parent->children + idx, parent->children + idx + 1,
            sizeof(hs_field) * (size_t)(parent->n_children - idx - 1));
    int n = parent->n_children - 1;
    int at = 0;
    if (kind != ICE_MOVE_FIRST) {
        if (ridx > idx)
            ridx--;
        at = kind == ICE_MOVE_BEFORE ? ridx : ridx + 1;
    }
    memmove(parent->children + at + 1, parent->children + at, sizeof(hs_field) * (size_t)(n - at));
    parent->children[at] = moving;
    return HS_OK;
}

hs_status ice_schema_update_column_type(const ice_schema *base, const char *path,
                                        const hs_field *new_type, ice_schema *out, hs_error *err)
{
    const hs_field *f = ice_schema_find_name(base, path, true);
    if (!f)
        return hs_err_set(err, HS_NOT_FOUND, "column %s does not exist", path);
    ice_type_id from = ice_type_of(f), to = ice_type_of(new_type);
    bool ok = from == to && from != ICE_T_DECIMAL && from != ICE_T_FIXED && ice_type_is_primitive(from);
    if (from == ICE_T_INT && to == ICE_T_LONG)
        ok = true;
    if (from == ICE_T_FLOAT && to == ICE_T_DOUBLE)
        ok = true;
    if (from == ICE_T_DECIMAL && to == ICE_T_DECIMAL && new_type->scale == f->scale &&
        new_type->precision >= f->precision && new_type->precision <= 38)
        ok = true;
    if (from == ICE_T_FIXED && to == ICE_T_FIXED && new_type->width == f->width)
        ok = true;
    if (!ok) {
        hs_buf a = {0}, b = {0};
        hs_status s1 = ice_type_to_string(f, &a), s2 = ice_type_to_string(new_type, &b);
        hs_err_set(err, HS_INVALID, "cannot change column %s from %s to %s: Iceberg allows only "
                                    "int->long, float->double and widening decimal precision",
                   path, s1 ? "?" : hs_buf_cstr(&a), s2 ? "?" : hs_buf_cstr(&b));
        hs_buf_free(&a);
        hs_buf_free(&b);
        return HS_INVALID;
    }
    HS_TRY(begin_evolve(base, out, err));
    hs_field *m = find_name_mut(&out->root, path, true);
    if (!m)
        m = (hs_field *)ice_schema_find_name(out, path, true);
    if (ice_field_set_type(m, to, new_type->precision, new_type->scale, new_type->width) != HS_OK)
        return fail_evolve(out, hs_err_nomem(err, 0));
    return HS_OK;
}

hs_status ice_schema_make_optional(const ice_schema *base, const char *path, ice_schema *out,
                                   hs_error *err)
{
    const hs_field *f = ice_schema_find_name(base, path, true);
    if (!f)
        return hs_err_set(err, HS_NOT_FOUND, "column %s does not exist", path);
    if (is_identifier(base, f->field_id))
        return hs_err_set(err, HS_INVALID, "cannot make %s optional: it is an identifier field",
                          path);
    HS_TRY(begin_evolve(base, out, err));
    hs_field *p;
    int i;
    hs_status st = locate(&out->root, path, &p, &i, err);
    if (st != HS_OK)
        return fail_evolve(out, st);
    if (p->type == HS_TYPE_STRUCT && !is_user_struct_parent(&out->root, p) && i == 0)
        return fail_evolve(out, hs_err_set(err, HS_INVALID, "cannot make map key %s optional",
                                           path));
    hs_field *m = &p->children[i];
    m->nullable = true;
    return HS_OK;
}

hs_status ice_schema_set_doc(const ice_schema *base, const char *path, const char *doc,
                             ice_schema *out, hs_error *err)
{
    if (!ice_schema_find_name(base, path, true))
        return hs_err_set(err, HS_NOT_FOUND, "column %s does not exist", path);
    HS_TRY(begin_evolve(base, out, err));
    hs_field *m = (hs_field *)ice_schema_find_name(out, path, true);
    if (doc) {
        json_t *j = json_string(doc);
        char *text = j ? hs_json_dumps(j, JSON_ENCODE_ANY) : NULL;
        json_decref(j);
        hs_status st = text ? hs_field_set_meta(m, META_DOC, text) : HS_NOMEM;
        free(text);
        if (st != HS_OK)
            return fail_evolve(out, hs_err_nomem(err, 0));
        return HS_OK;
    }
    for (int i = 0; i < m->n_meta; i++) {
        if (strcmp(m->meta_keys[i], META_DOC) == 0) {
            hs_free(m->meta_keys[i]);
            hs_free(m->meta_values[i]);
            memmove(m->meta_keys + i, m->meta_keys + i + 1, sizeof(char *) * (size_t)(m->n_meta - i - 1));
            memmove(m->meta_values + i, m->meta_values + i + 1,
                    sizeof(char *) * (size_t)(m->n_meta - i - 1));
            m->n_meta--;
            break;
        }
    }
    return HS_OK;
}

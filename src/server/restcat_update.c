/*
 * server/restcat_update.c - the commit half of the Iceberg REST catalog
 * server: a CommitTableRequest's requirements checked against the current
 * metadata, and its updates applied to a copy of it, on the metadata JSON
 * document (so fields we do not model - statistics, encryption keys, future
 * fields - survive other engines' commits, and so does our index registry
 * pointer, the table property hyperstream.index-registry).
 *
 * The request body is untrusted: every field is type-checked and a bad one
 * is HS_INVALID naming it (the server answers 400).  A failed requirement is
 * HS_CONFLICT (409 CommitFailedException).  The result is validated again by
 * the iceberg model (ice_metadata_parse) before the catalog's compare-and-swap
 * publishes it, so an update sequence that leaves the table inconsistent is a
 * 400, never a written file.
 *
 *   requirement                       checks (base = current metadata)
 *   --------------------------------  -------------------------------------------
 *   assert-create                     the table does not exist (base == NULL)
 *   assert-table-uuid                 base table-uuid == uuid
 *   assert-ref-snapshot-id            refs[ref].snapshot-id == snapshot-id (null:
 *                                     the ref does not exist)
 *   assert-last-assigned-field-id     base last-column-id
 *   assert-current-schema-id          base current-schema-id
 *   assert-last-assigned-partition-id base last-partition-id
 *   assert-default-spec-id            base default-spec-id
 *   assert-default-sort-order-id      base default-sort-order-id
 *
 *   update                            effect (Java's TableMetadata.Builder)
 *   --------------------------------  -------------------------------------------
 *   assign-uuid                       table-uuid (only when absent or equal)
 *   upgrade-format-version            format-version (no downgrade; v3 adds
 *                                     next-row-id 0)
 *   add-schema                        reuses an equal schema's id, else max+1;
 *                                     raises last-column-id
 *   set-current-schema                schema-id (-1 = the last added)
 *   add-spec / set-default-spec       likewise, last-partition-id raised
 *   add-sort-order / set-default-...  likewise (no fields = order 0)
 *   add-snapshot                      new id; v2+: sequence number above the
 *                                     last; v3: first-row-id / next-row-id
 *   set-snapshot-ref                  refs[name]; "main" moves current-snapshot-id
 *                                     and appends to the snapshot-log
 *   remove-snapshot-ref               (main: current-snapshot-id -1)
 *   remove-snapshots                  snapshots and refs to them
 *   set-location, set-properties, remove-properties
 *   set-statistics / remove-statistics, set-partition-statistics /
 *   remove-partition-statistics, remove-partition-specs, remove-schemas
 *
 * Finally last-updated-ms (the added snapshot's timestamp, else now) and the
 * metadata-log entry for the base file (trimmed to
 * write.metadata.previous-versions-max, default 100) are set.
 */
#include "server/restcat.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "iceberg/model.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- typed field access ----------------------------------------------------------- */

static hs_status need(json_t *o, const char *key, int type, const char *what, json_t **out,
                      hs_error *err)
{
    *out = NULL;
    json_t *v = json_object_get(o, key);
    if (!v || json_typeof(v) != type)
        return hs_err_set(err, HS_INVALID, "%s: field \"%s\" missing or not %s", what, key,
                          type == JSON_STRING  ? "a string"
                          : type == JSON_INTEGER ? "an integer"
                          : type == JSON_OBJECT  ? "an object"
                          : type == JSON_ARRAY   ? "an array"
                                                 : "of the right type");
    *out = v;
    return HS_OK;
}

static hs_status need_int(json_t *o, const char *key, const char *what, json_int_t *out,
                          hs_error *err)
{
    json_t *v = NULL;
    *out = 0;
    HS_TRY(need(o, key, JSON_INTEGER, what, &v, err));
    *out = json_integer_value(v);
    return HS_OK;
}

static json_int_t int_or(json_t *o, const char *key, json_int_t dflt)
{
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* The array under key, created when absent (the document is ours to edit). */
static json_t *arr_of(json_t *doc, const char *key)
{
    json_t *a = json_object_get(doc, key);
    if (!json_is_array(a)) {
        a = json_array();
        json_object_set_new(doc, key, a);
    }
    return a;
}

static json_t *obj_of(json_t *doc, const char *key)
{
    json_t *o = json_object_get(doc, key);
    if (!json_is_object(o)) {
        o = json_object();
        json_object_set_new(doc, key, o);
    }
    return o;
}

/* The element of array a whose integer key equals id, or NULL. */
static json_t *find_by_id(json_t *a, const char *key, json_int_t id)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if (int_or(e, key, INT64_MIN) == id)
            return e;
    }
    return NULL;
}

static json_int_t max_id(json_t *a, const char *key, json_int_t dflt)
{
    json_int_t m = dflt;
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        json_int_t v = int_or(e, key, INT64_MIN);
        if (v > m)
            m = v;
    }
    return m;
}

/* ---- requirements ------------------------------------------------------------------ */

static hs_status check_int_req(json_t *base, json_t *req, const char *req_key,
                               const char *base_key, const char *type, hs_error *err)
{
    json_int_t want;
    HS_TRY(need_int(req, req_key, type, &want, err));
    json_int_t have = int_or(base, base_key, INT64_MIN);
    if (have != want)
        return hs_err_set(err, HS_CONFLICT, "Requirement failed: %s: expected %" PRId64
                          ", found %" PRId64, type, (int64_t)want, (int64_t)have);
    return HS_OK;
}

static hs_status check_requirement(json_t *base, json_t *req, hs_error *err)
{
    if (!json_is_object(req))
        return hs_err_set(err, HS_INVALID, "requirements: each element must be an object");
    json_t *tv;
    HS_TRY(need(req, "type", JSON_STRING, "requirement", &tv, err));
    const char *type = json_string_value(tv);
    if (strcmp(type, "assert-create") == 0) {
        if (base)
            return hs_err_set(err, HS_CONFLICT, "Requirement failed: table already exists");
        return HS_OK;
    }
    if (!base)
        return hs_err_set(err, HS_NOT_FOUND, "Requirement failed: the table does not exist");
    if (strcmp(type, "assert-table-uuid") == 0) {
        json_t *u;
        HS_TRY(need(req, "uuid", JSON_STRING, type, &u, err));
        const char *have = json_string_value(json_object_get(base, "table-uuid"));
        if (!have || strcasecmp(have, json_string_value(u)) != 0)
            return hs_err_set(err, HS_CONFLICT, "Requirement failed: UUID does not match: "
                              "expected %s != %s", have ? have : "(none)",
                              json_string_value(u));
        return HS_OK;
    }
    if (strcmp(type, "assert-ref-snapshot-id") == 0) {
        json_t *rv;
        HS_TRY(need(req, "ref", JSON_STRING, type, &rv, err));
        const char *ref = json_string_value(rv);
        json_t *want = json_object_get(req, "snapshot-id");
        if (want && !json_is_null(want) && !json_is_integer(want))
            return hs_err_set(err, HS_INVALID, "%s: snapshot-id must be an integer or null",
                              type);
        json_t *r = json_object_get(json_object_get(base, "refs"), ref);
        json_int_t have = -1;
        if (r)
            have = int_or(r, "snapshot-id", -1);
        else if (strcmp(ref, "main") == 0)   /* v1-style metadata without refs */
            have = int_or(base, "current-snapshot-id", -1);
        bool want_none = !want || json_is_null(want);
        if (want_none ? have >= 0 : have != json_integer_value(want))
            return hs_err_set(err, HS_CONFLICT, want_none
                              ? "Requirement failed: branch or tag %s was created concurrently"
                              : "Requirement failed: branch or tag %s has changed: expected "
                                "id %" PRId64 " != %" PRId64, ref,
                              (int64_t)(want_none ? 0 : json_integer_value(want)), (int64_t)have);
        return HS_OK;
    }
    if (strcmp(type, "assert-last-assigned-field-id") == 0)
        return check_int_req(base, req, "last-assigned-field-id", "last-column-id", type, err);
    if (strcmp(type, "assert-current-schema-id") == 0)
        return check_int_req(base, req, "current-schema-id", "current-schema-id", type, err);
    if (strcmp(type, "assert-last-assigned-partition-id") == 0)
        return check_int_req(base, req, "last-assigned-partition-id", "last-partition-id", type,
                             err);
    if (strcmp(type, "assert-default-spec-id") == 0)
        return check_int_req(base, req, "default-spec-id", "default-spec-id", type, err);
    if (strcmp(type, "assert-default-sort-order-id") == 0)
        return check_int_req(base, req, "default-sort-order-id", "default-sort-order-id", type,
                             err);
    return hs_err_set(err, HS_INVALID, "unknown requirement type \"%s\"", type);
}

/* ---- updates -------------------------------------------------------------------------- */

typedef struct upd_state {
    json_int_t last_schema, last_spec, last_order;   /* ids added by this commit, or INT64_MIN */
    json_int_t added_snapshot_ts;                    /* or -1 */
    json_t *added_snapshots;                         /* ids added by this commit (array) */
} upd_state;

static json_int_t highest_field_id(json_t *t)
{
    json_int_t m = 0;
    if (json_is_object(t)) {
        json_int_t id = int_or(t, "id", 0);
        if (id > m)
            m = id;
        for (const char *k = "element-id"; k; k = NULL) {
            json_int_t e = int_or(t, k, 0);
            if (e > m)
                m = e;
        }
        json_int_t kid = int_or(t, "key-id", 0), vid = int_or(t, "value-id", 0);
        m = kid > m ? kid : m;
        m = vid > m ? vid : m;
        const char *subs[] = { "type", "fields", "element", "key", "value" };
        for (size_t i = 0; i < 5; i++) {
            json_int_t s = highest_field_id(json_object_get(t, subs[i]));
            m = s > m ? s : m;
        }
    } else if (json_is_array(t)) {
        size_t i;
        json_t *e;
        json_array_foreach(t, i, e) {
            json_int_t s = highest_field_id(e);
            m = s > m ? s : m;
        }
    }
    return m;
}

/* Adds obj (a schema, spec or sort order; its id key idkey) to doc[list]:
 * reuses an element with equal `fields`, else id max+1 (orders: 0 when it has no
 * fields and order 0 exists).  *id_out = the id. */
static hs_status add_versioned(json_t *doc, const char *list, const char *idkey, json_t *obj,
                               const char *what, json_int_t *id_out, hs_error *err)
{
    json_t *fields;
    HS_TRY(need(obj, "fields", JSON_ARRAY, what, &fields, err));
    json_t *a = arr_of(doc, list);
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
        if (json_equal(json_object_get(e, "fields"), fields) &&
            json_equal(json_object_get(e, "identifier-field-ids"),
                       json_object_get(obj, "identifier-field-ids"))) {
            *id_out = int_or(e, idkey, 0);
            return HS_OK;
        }
    }
    json_int_t id = max_id(a, idkey, -1) + 1;
    if (strcmp(list, "sort-orders") == 0 && json_array_size(fields) > 0 && id == 0)
        id = 1;
    json_t *c = json_deep_copy(obj);
    if (!c || json_object_set_new(c, idkey, json_integer(id)) != 0 ||
        json_array_append_new(a, c) != 0)
        return hs_err_nomem(err, 64);
    *id_out = id;
    return HS_OK;
}

static hs_status set_current(json_t *doc, const char *list, const char *idkey,
                             const char *cur_key, json_t *u, const char *u_key,
                             json_int_t last_added, const char *what, hs_error *err)
{
    json_int_t id;
    HS_TRY(need_int(u, u_key, what, &id, err));
    if (id == -1) {
        if (last_added == INT64_MIN)
            return hs_err_set(err, HS_INVALID, "%s: -1 (the last added) but nothing was added",
                              what);
        id = last_added;
    }
    if (!find_by_id(json_object_get(doc, list), idkey, id))
        return hs_err_set(err, HS_INVALID, "%s: no %s with id %" PRId64, what, list,
                          (int64_t)id);
    json_object_set_new(doc, cur_key, json_integer(id));
    return HS_OK;
}

static hs_status add_snapshot(json_t *doc, json_t *u, upd_state *us, hs_error *err)
{
    json_t *snap;
    HS_TRY(need(u, "snapshot", JSON_OBJECT, "add-snapshot", &snap, err));
    json_int_t id, ts;
    HS_TRY(need_int(snap, "snapshot-id", "add-snapshot.snapshot", &id, err));
    HS_TRY(need_int(snap, "timestamp-ms", "add-snapshot.snapshot", &ts, err));
    json_t *ml;
    HS_TRY(need(snap, "manifest-list", JSON_STRING, "add-snapshot.snapshot", &ml, err));
    json_t *snaps = arr_of(doc, "snapshots");
    if (find_by_id(snaps, "snapshot-id", id))
        return hs_err_set(err, HS_INVALID, "add-snapshot: snapshot %" PRId64 " already exists",
                          (int64_t)id);
    json_int_t fv = int_or(doc, "format-version", 1);
    json_int_t seq = int_or(snap, "sequence-number", 0);
    json_int_t last_seq = int_or(doc, "last-sequence-number", 0);
    if (fv >= 2 && seq <= last_seq && json_array_size(snaps) > 0)
        return hs_err_set(err, HS_CONFLICT, "add-snapshot: sequence number %" PRId64 " is not "
                          "above the table's last sequence number %" PRId64 " (a concurrent "
                          "commit?)", (int64_t)seq, (int64_t)last_seq);
    json_t *c = json_deep_copy(snap);
    if (!c)
        return hs_err_nomem(err, 64);
    if (fv >= 3) {
        json_int_t next = int_or(doc, "next-row-id", 0);
        json_int_t added = int_or(snap, "added-rows", -1);
        if (added < 0) {
            json_decref(c);
            return hs_err_set(err, HS_INVALID, "add-snapshot: format v3 needs added-rows");
        }
        if (!json_object_get(c, "first-row-id"))
            json_object_set_new(c, "first-row-id", json_integer(next));
        json_object_set_new(doc, "next-row-id",
                            json_integer(int_or(c, "first-row-id", next) + added));
    }
    if (json_array_append_new(snaps, c) != 0)
        return hs_err_nomem(err, 64);
    if (seq > last_seq)
        json_object_set_new(doc, "last-sequence-number", json_integer(seq));
    us->added_snapshot_ts = ts;
    json_array_append_new(us->added_snapshots, json_integer(id));
    return HS_OK;
}

static hs_status set_ref(json_t *doc, json_t *u, upd_state *us, hs_error *err)
{
    json_t *nv, *tv;
    json_int_t id;
    HS_TRY(need(u, "ref-name", JSON_STRING, "set-snapshot-ref", &nv, err));
    HS_TRY(need(u, "type", JSON_STRING, "set-snapshot-ref", &tv, err));
    HS_TRY(need_int(u, "snapshot-id", "set-snapshot-ref", &id, err));
    const char *type = json_string_value(tv), *name = json_string_value(nv);
    if (strcmp(type, "branch") != 0 && strcmp(type, "tag") != 0)
        return hs_err_set(err, HS_INVALID, "set-snapshot-ref: type must be branch or tag");
    json_t *snap = find_by_id(json_object_get(doc, "snapshots"), "snapshot-id", id);
    if (!snap)
        return hs_err_set(err, HS_INVALID, "set-snapshot-ref: no snapshot %" PRId64,
                          (int64_t)id);
    if (strcmp(name, "main") == 0 && strcmp(type, "branch") != 0)
        return hs_err_set(err, HS_INVALID, "set-snapshot-ref: main must be a branch");
    json_t *r = json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)id, "type", type);
    const char *keep[] = { "max-ref-age-ms", "max-snapshot-age-ms", "min-snapshots-to-keep" };
    for (size_t i = 0; r && i < 3; i++) {
        json_t *v = json_object_get(u, keep[i]);
        if (json_is_integer(v))
            json_object_set(r, keep[i], v);
    }
    if (!r || json_object_set_new(obj_of(doc, "refs"), name, r) != 0)
        return hs_err_nomem(err, 64);
    if (strcmp(name, "main") == 0) {
        json_object_set_new(doc, "current-snapshot-id", json_integer(id));
        bool added = false;
        size_t i;
        json_t *e;
        json_array_foreach(us->added_snapshots, i, e) {
            if (json_integer_value(e) == id)
                added = true;
        }
        json_int_t ts = added ? int_or(snap, "timestamp-ms", ice_now_ms()) : ice_now_ms();
        json_array_append_new(arr_of(doc, "snapshot-log"),
                              json_pack("{s:I, s:I}", "timestamp-ms", ts, "snapshot-id", id));
    }
    return HS_OK;
}

static hs_status remove_snapshots(json_t *doc, json_t *u, hs_error *err)
{
    json_t *ids;
    HS_TRY(need(u, "snapshot-ids", JSON_ARRAY, "remove-snapshots", &ids, err));
    json_t *snaps = arr_of(doc, "snapshots"), *refs = obj_of(doc, "refs");
    size_t i;
    json_t *e;
    json_array_foreach(ids, i, e) {
        if (!json_is_integer(e))
            return hs_err_set(err, HS_INVALID, "remove-snapshots: ids must be integers");
        json_int_t id = json_integer_value(e);
        for (size_t k = json_array_size(snaps); k-- > 0;)
            if (int_or(json_array_get(snaps, k), "snapshot-id", INT64_MIN) == id)
                json_array_remove(snaps, k);
        const char *name;
        json_t *r, *tmp;
        json_object_foreach_safe(refs, tmp, name, r) {
            if (int_or(r, "snapshot-id", INT64_MIN) == id) {
                if (strcmp(name, "main") == 0)
                    json_object_set_new(doc, "current-snapshot-id", json_integer(-1));
                json_object_del(refs, name);
            }
        }
        json_t *log = json_object_get(doc, "snapshot-log");
        for (size_t k = json_array_size(log); k-- > 0;)
            if (int_or(json_array_get(log, k), "snapshot-id", INT64_MIN) == id)
                json_array_remove(log, k);
    }
    return HS_OK;
}

/* Removes elements of doc[list] whose idkey is in u[ukey] (not the current one). */
static hs_status remove_ids(json_t *doc, json_t *u, const char *ukey, const char *list,
                            const char *idkey, const char *cur_key, const char *what,
                            hs_error *err)
{
    json_t *ids;
    HS_TRY(need(u, ukey, JSON_ARRAY, what, &ids, err));
    json_t *a = arr_of(doc, list);
    size_t i;
    json_t *e;
    json_array_foreach(ids, i, e) {
        if (!json_is_integer(e))
            return hs_err_set(err, HS_INVALID, "%s: ids must be integers", what);
        if (int_or(doc, cur_key, INT64_MIN) == json_integer_value(e))
            return hs_err_set(err, HS_INVALID, "%s: cannot remove the current one (%" PRId64
                              ")", what, (int64_t)json_integer_value(e));
        for (size_t k = json_array_size(a); k-- > 0;)
            if (int_or(json_array_get(a, k), idkey, INT64_MIN) == json_integer_value(e))
                json_array_remove(a, k);
    }
    return HS_OK;
}

/* set-statistics / set-partition-statistics: replace the entry of the same snapshot. */
static hs_status set_stats(json_t *doc, json_t *u, const char *ukey, const char *list,
                           const char *what, hs_error *err)
{
    json_t *s;
    HS_TRY(need(u, ukey, JSON_OBJECT, what, &s, err));
    json_int_t id;
    HS_TRY(need_int(s, "snapshot-id", what, &id, err));
    json_t *a = arr_of(doc, list);
    for (size_t k = json_array_size(a); k-- > 0;)
        if (int_or(json_array_get(a, k), "snapshot-id", INT64_MIN) == id)
            json_array_remove(a, k);
    return json_array_append(a, s) == 0 ? HS_OK : hs_err_nomem(err, 64);
}

static hs_status remove_stats(json_t *doc, json_t *u, const char *list, const char *what,
                              hs_error *err)
{
    json_int_t id;
    HS_TRY(need_int(u, "snapshot-id", what, &id, err));
    json_t *a = json_object_get(doc, list);
    for (size_t k = json_array_size(a); k-- > 0;)
        if (int_or(json_array_get(a, k), "snapshot-id", INT64_MIN) == id)
            json_array_remove(a, k);
    return HS_OK;
}

static hs_status apply_update(json_t *doc, json_t *u, upd_state *us, hs_error *err)
{
    if (!json_is_object(u))
        return hs_err_set(err, HS_INVALID, "updates: each element must be an object");
    json_t *av;
    HS_TRY(need(u, "action", JSON_STRING, "update", &av, err));
    const char *a = json_string_value(av);
    json_t *v;
    if (strcmp(a, "assign-uuid") == 0) {
        HS_TRY(need(u, "uuid", JSON_STRING, a, &v, err));
        const char *have = json_string_value(json_object_get(doc, "table-uuid"));
        if (have && strcasecmp(have, json_string_value(v)) != 0)
            return hs_err_set(err, HS_INVALID, "assign-uuid: the table already has uuid %s",
                              have);
        json_object_set(doc, "table-uuid", v);
    } else if (strcmp(a, "upgrade-format-version") == 0) {
        json_int_t fv;
        HS_TRY(need_int(u, "format-version", a, &fv, err));
        json_int_t have = int_or(doc, "format-version", 1);
        if (fv < have || fv < 1 || fv > 3)
            return hs_err_set(err, HS_INVALID, "upgrade-format-version: cannot go from v%" PRId64
                              " to v%" PRId64, (int64_t)have, (int64_t)fv);
        if (fv >= 3 && have < 3)
            json_object_set_new(doc, "next-row-id", json_integer(0));
        json_object_set_new(doc, "format-version", json_integer(fv));
    } else if (strcmp(a, "add-schema") == 0) {
        HS_TRY(need(u, "schema", JSON_OBJECT, a, &v, err));
        HS_TRY(add_versioned(doc, "schemas", "schema-id", v, a, &us->last_schema, err));
        json_int_t last = int_or(doc, "last-column-id", 0), hi = highest_field_id(v);
        json_int_t given = int_or(u, "last-column-id", 0);
        hi = given > hi ? given : hi;
        if (hi > last)
            json_object_set_new(doc, "last-column-id", json_integer(hi));
    } else if (strcmp(a, "set-current-schema") == 0) {
        HS_TRY(set_current(doc, "schemas", "schema-id", "current-schema-id", u, "schema-id",
                           us->last_schema, a, err));
    } else if (strcmp(a, "add-spec") == 0) {
        HS_TRY(need(u, "spec", JSON_OBJECT, a, &v, err));
        HS_TRY(add_versioned(doc, "partition-specs", "spec-id", v, a, &us->last_spec, err));
        json_int_t last = int_or(doc, "last-partition-id", 999);
        json_int_t hi = max_id(json_object_get(v, "fields"), "field-id", last);
        json_object_set_new(doc, "last-partition-id", json_integer(hi));
    } else if (strcmp(a, "set-default-spec") == 0) {
        HS_TRY(set_current(doc, "partition-specs", "spec-id", "default-spec-id", u, "spec-id",
                           us->last_spec, a, err));
    } else if (strcmp(a, "add-sort-order") == 0) {
        HS_TRY(need(u, "sort-order", JSON_OBJECT, a, &v, err));
        HS_TRY(add_versioned(doc, "sort-orders", "order-id", v, a, &us->last_order, err));
    } else if (strcmp(a, "set-default-sort-order") == 0) {
        HS_TRY(set_current(doc, "sort-orders", "order-id", "default-sort-order-id", u,
                           "sort-order-id", us->last_order, a, err));
    } else if (strcmp(a, "add-snapshot") == 0) {
        HS_TRY(add_snapshot(doc, u, us, err));
    } else if (strcmp(a, "set-snapshot-ref") == 0) {
        HS_TRY(set_ref(doc, u, us, err));
    } else if (strcmp(a, "remove-snapshot-ref") == 0) {
        HS_TRY(need(u, "ref-name", JSON_STRING, a, &v, err));
        if (strcmp(json_string_value(v), "main") == 0)
            json_object_set_new(doc, "current-snapshot-id", json_integer(-1));
        json_object_del(obj_of(doc, "refs"), json_string_value(v));
    } else if (strcmp(a, "remove-snapshots") == 0) {
        HS_TRY(remove_snapshots(doc, u, err));
    } else if (strcmp(a, "set-location") == 0) {
        HS_TRY(need(u, "location", JSON_STRING, a, &v, err));
        json_object_set(doc, "location", v);
    } else if (strcmp(a, "set-properties") == 0) {
        HS_TRY(need(u, "updates", JSON_OBJECT, a, &v, err));
        json_t *props = obj_of(doc, "properties");
        const char *k;
        json_t *pv;
        json_object_foreach(v, k, pv) {
            if (!json_is_string(pv))
                return hs_err_set(err, HS_INVALID, "set-properties: \"%s\" is not a string", k);
            json_object_set(props, k, pv);
        }
    } else if (strcmp(a, "remove-properties") == 0) {
        HS_TRY(need(u, "removals", JSON_ARRAY, a, &v, err));
        json_t *props = obj_of(doc, "properties");
        size_t i;
        json_t *k;
        json_array_foreach(v, i, k) {
            if (!json_is_string(k))
                return hs_err_set(err, HS_INVALID, "remove-properties: keys must be strings");
            json_object_del(props, json_string_value(k));
        }
    } else if (strcmp(a, "set-statistics") == 0) {
        HS_TRY(set_stats(doc, u, "statistics", "statistics", a, err));
    } else if (strcmp(a, "remove-statistics") == 0) {
        HS_TRY(remove_stats(doc, u, "statistics", a, err));
    } else if (strcmp(a, "set-partition-statistics") == 0) {
        HS_TRY(set_stats(doc, u, "partition-statistics", "partition-statistics", a, err));
    } else if (strcmp(a, "remove-partition-statistics") == 0) {
        HS_TRY(remove_stats(doc, u, "partition-statistics", a, err));
    } else if (strcmp(a, "remove-partition-specs") == 0) {
        HS_TRY(remove_ids(doc, u, "spec-ids", "partition-specs", "spec-id", "default-spec-id",
                          a, err));
    } else if (strcmp(a, "remove-schemas") == 0) {
        HS_TRY(remove_ids(doc, u, "schema-ids", "schemas", "schema-id", "current-schema-id", a,
                          err));
    } else {
        return hs_err_set(err, HS_INVALID, "unsupported update action \"%s\"", a);
    }
    return HS_OK;
}

/* The document a staged create (assert-create) starts from: Java's
 * TableMetadata.buildFromEmpty(). */
static json_t *empty_metadata(void)
{
    return json_pack("{s:i, s:i, s:I, s:i, s:[], s:i, s:[], s:i, s:i, s:{}, s:[], s:i, s:[],"
                     " s:[], s:[], s:{}}",
                     "format-version", 2, "last-sequence-number", 0,
                     "last-updated-ms", (json_int_t)ice_now_ms(),
                     "last-column-id", 0, "schemas", "current-schema-id", -1,
                     "partition-specs", "default-spec-id", -1, "last-partition-id", 999,
                     "properties", "sort-orders", "default-sort-order-id", -1, "snapshots",
                     "snapshot-log", "metadata-log", "refs");
}

hs_status rc_apply_commit(json_t *base, const char *base_location, json_t *req, json_t **out,
                          hs_error *err)
{
    *out = NULL;
    if (!json_is_object(req))
        return hs_err_set(err, HS_INVALID, "commit request: body must be a JSON object");
    json_t *reqs = json_object_get(req, "requirements"), *ups = json_object_get(req, "updates");
    if (reqs && !json_is_array(reqs))
        return hs_err_set(err, HS_INVALID, "commit request: requirements must be an array");
    if (!json_is_array(ups))
        return hs_err_set(err, HS_INVALID, "commit request: updates must be an array");
    bool create = false;
    size_t i;
    json_t *e;
    json_array_foreach(reqs, i, e) {
        HS_TRY(check_requirement(base, e, err));
        if (strcmp(json_string_value(json_object_get(e, "type")), "assert-create") == 0)
            create = true;
    }
    if (!base && !create)
        return hs_err_set(err, HS_NOT_FOUND, "table does not exist");
    json_t *doc = base ? json_deep_copy(base) : empty_metadata();
    upd_state us = { INT64_MIN, INT64_MIN, INT64_MIN, -1, json_array() };
    if (!doc || !us.added_snapshots) {
        json_decref(doc);
        json_decref(us.added_snapshots);
        return hs_err_nomem(err, 64);
    }
    hs_status st = HS_OK;
    json_array_foreach(ups, i, e) {
        st = apply_update(doc, e, &us, err);
        if (st != HS_OK) {
            hs_err_prefix(err, "updates[%zu]: ", i);
            break;
        }
    }
    json_decref(us.added_snapshots);
    if (st == HS_OK) {
        json_int_t now = ice_now_ms();
        json_object_set_new(doc, "last-updated-ms",
                            json_integer(us.added_snapshot_ts > 0 ? us.added_snapshot_ts : now));
        if (base && base_location) {
            json_t *log = arr_of(doc, "metadata-log");
            json_array_append_new(log, json_pack("{s:I, s:s}", "timestamp-ms",
                                                 int_or(base, "last-updated-ms", now),
                                                 "metadata-file", base_location));
            const char *mx = json_string_value(json_object_get(
                json_object_get(doc, "properties"), "write.metadata.previous-versions-max"));
            long keep = mx ? strtol(mx, NULL, 10) : 100;
            if (keep < 1)
                keep = 1;
            while (json_array_size(log) > (size_t)keep)
                json_array_remove(log, 0);
        }
    }
    if (st != HS_OK) {
        json_decref(doc);
        return st;
    }
    *out = doc;
    return HS_OK;
}

hs_status rc_validate_metadata(json_t *doc, hs_buf *text, hs_error *err)
{
    hs_buf_reset(text);
    char *s = hs_json_dumps(doc, JSON_COMPACT);
    if (!s)
        return hs_err_nomem(err, 64);
    hs_status st = hs_buf_puts(text, s);
    free(s);
    if (st != HS_OK)
        return hs_err_nomem(err, 64);
    ice_table_metadata m = { 0 };
    st = ice_metadata_parse((const char *)text->data, text->len, &m, err);
    ice_metadata_free(&m);
    if (st != HS_OK && st != HS_NOMEM && err) {
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        msg[sizeof msg - 1] = 0;
        hs_err_clear(err);
        return hs_err_set(err, HS_INVALID, "the updated metadata is not valid: %s", msg);
    }
    if (st != HS_OK)
        return st == HS_NOMEM ? st : HS_INVALID;
    return HS_OK;
}

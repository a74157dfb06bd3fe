/*
 * iceberg/metadata.c - table metadata (metadata.json): parse, write, deep copy,
 * lookups, and the mutations table operations make (schemas, specs, sort orders,
 * snapshots, refs, properties, format upgrades).
 *
 * Fields written, by format version (spec "Table Metadata Fields"; * = required):
 *
 *   field                   v1        v2        v3
 *   ---------------------   -------   -------   -------
 *   format-version          *         *         *
 *   table-uuid              written   *         *
 *   location                *         *         *
 *   last-sequence-number    -         *         *
 *   last-updated-ms         *         *         *
 *   last-column-id          *         *         *
 *   schema                  * (cur.)  -         -
 *   schemas                 written   *         *
 *   current-schema-id       written   *         *
 *   partition-spec          * (def.)  -         -
 *   partition-specs         written   *         *
 *   default-spec-id         written   *         *
 *   last-partition-id       written   *         *
 *   default-sort-order-id   written   *         *
 *   sort-orders             written   *         *
 *   properties              written   written   written
 *   current-snapshot-id     -1|id     -1|id     null|id
 *   next-row-id             -         -         *
 *   refs, snapshots, statistics, partition-statistics, snapshot-log,
 *   metadata-log            written (statistics only when present)
 *
 * Snapshot objects: snapshot-id*, parent-snapshot-id, sequence-number (v2+),
 * timestamp-ms*, summary* {"operation": ..., counters as strings},
 * manifest-list*, schema-id, and in v3 first-row-id and added-rows.
 *
 * Parsing accepts v1 (schema / partition-spec upgraded in memory, missing ids
 * filled in as Java does), v2 and v3, refuses newer versions with
 * HS_UNSUPPORTED, and reports malformed or missing required fields as
 * HS_CORRUPT naming the field.  "statistics" and "partition-statistics" are
 * kept as raw JSON text and written back untouched.
 *
 * Invariants kept by the mutations: ids unique within each list; the "main"
 * ref and current_snapshot_id agree; last_column_id >= every schema's highest
 * id; last_partition_id >= every partition field id; v3 next_row_id >= every
 * snapshot's first_row_id + added_rows.
 */
#include "iceberg/model_int.h"

#include "base/mem.h"
#include "base/numfmt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- snapshots */

void ice_snapshot_clear(ice_snapshot *s)
{
    if (!s)
        return;
    hs_free(s->manifest_list);
    ice_kv_clear(&s->summary);
    for (int i = 0; i < s->n_v1_manifests; i++)
        hs_free(s->v1_manifests[i]);
    hs_free(s->v1_manifests);
    memset(s, 0, sizeof *s);
}

hs_status ice_snapshot_copy(const ice_snapshot *src, ice_snapshot *dst)
{
    ice_snapshot t = *src;
    t.manifest_list = NULL;
    t.v1_manifests = NULL;
    t.n_v1_manifests = 0;
    memset(&t.summary, 0, sizeof t.summary);
    if (src->manifest_list && !(t.manifest_list = hs_strdup(src->manifest_list)))
        goto nomem;
    if (ice_kv_copy(&src->summary, &t.summary) != HS_OK)
        goto nomem;
    if (src->n_v1_manifests) {
        t.v1_manifests = hs_calloc((size_t)src->n_v1_manifests, sizeof(char *));
        if (!t.v1_manifests)
            goto nomem;
        for (int i = 0; i < src->n_v1_manifests; i++) {
            t.v1_manifests[i] = hs_strdup(src->v1_manifests[i]);
            t.n_v1_manifests = i + 1;
            if (!t.v1_manifests[i])
                goto nomem;
        }
    }
    *dst = t;
    return HS_OK;
nomem:
    ice_snapshot_clear(&t);
    return HS_NOMEM;
}

const char *ice_snapshot_operation(const ice_snapshot *s) { return ice_kv_get(&s->summary, "operation"); }

/* ------------------------------------------------------------------ free */

void ice_metadata_free(ice_table_metadata *m)
{
    if (!m)
        return;
    hs_free(m->location);
    for (int i = 0; i < m->n_schemas; i++)
        ice_schema_clear(&m->schemas[i]);
    hs_free(m->schemas);
    for (int i = 0; i < m->n_specs; i++)
        ice_spec_clear(&m->specs[i]);
    hs_free(m->specs);
    ice_kv_clear(&m->properties);
    for (int i = 0; i < m->n_snapshots; i++)
        ice_snapshot_clear(&m->snapshots[i]);
    hs_free(m->snapshots);
    hs_free(m->snapshot_log);
    for (int i = 0; i < m->n_metadata_log; i++)
        hs_free(m->metadata_log[i].file);
    hs_free(m->metadata_log);
    for (int i = 0; i < m->n_sort_orders; i++)
        ice_sort_order_clear(&m->sort_orders[i]);
    hs_free(m->sort_orders);
    for (int i = 0; i < m->n_refs; i++)
        hs_free(m->refs[i].name);
    hs_free(m->refs);
    hs_free(m->statistics_json);
    hs_free(m->partition_statistics_json);
    memset(m, 0, sizeof *m);
}

/* Grows a counted array by one zeroed element; returns it or NULL. */
static void *grow(void **arr, int *n, size_t elem)
{
    void *a = hs_realloc(*arr, elem * (size_t)(*n + 1));
    if (!a)
        return NULL;
    *arr = a;
    void *e = (char *)a + elem * (size_t)*n;
    memset(e, 0, elem);
    (*n)++;
    return e;
}
#define GROW(arr, n) grow((void **)&(arr), &(n), sizeof *(arr))

/* The parser's form: room for a JSON array's `more` elements at once, then
 * TAKE counts and zeroes the next slot.  (GROW's realloc per element copied
 * the array each time: quadratic in a long snapshot or metadata log.) */
static bool reserve_more(void **arr, int n, size_t more, size_t elem)
{
    if (more > (size_t)INT32_MAX - (size_t)n)
        return false;
    void *a = hs_realloc(*arr, elem * ((size_t)n + more ? (size_t)n + more : 1));
    if (!a)
        return false;
    *arr = a;
    return true;
}
#define RESERVE(arr, n, more) reserve_more((void **)&(arr), (n), (more), sizeof *(arr))
#define TAKE(arr, n) memset(&(arr)[(n)++], 0, sizeof *(arr))

/* -------------------------------------------------------------- parsing */

typedef struct parse_ctx {
    const json_t *root;
    int fv;
    hs_error *err;
} parse_ctx;

static hs_status req_int64(const json_t *o, const char *key, const char *what, int64_t *out,
                           hs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return HS_CORRUPT_AT(err, "%s: required field \"%s\" is missing", what, key);
    if (!json_is_integer(v))
        return HS_CORRUPT_AT(err, "%s: \"%s\" must be an integer", what, key);
    *out = json_integer_value(v);
    return HS_OK;
}

static hs_status opt_int64(const json_t *o, const char *key, const char *what, bool *has,
                           int64_t *out, hs_error *err)
{
    const json_t *v = json_object_get(o, key);
    *has = false;
    if (!v || json_is_null(v))
        return HS_OK;
    if (!json_is_integer(v))
        return HS_CORRUPT_AT(err, "%s: \"%s\" must be an integer", what, key);
    *has = true;
    *out = json_integer_value(v);
    return HS_OK;
}

static hs_status req_int32(const json_t *o, const char *key, const char *what, int32_t *out,
                           hs_error *err)
{
    int64_t v = 0;
    HS_TRY(req_int64(o, key, what, &v, err));
    if (v < INT32_MIN || v > INT32_MAX)
        return HS_CORRUPT_AT(err, "%s: \"%s\" = %lld is out of range", what, key, (long long)v);
    *out = (int32_t)v;
    return HS_OK;
}

static hs_status req_string(const json_t *o, const char *key, const char *what, char **out,
                            hs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return HS_CORRUPT_AT(err, "%s: required field \"%s\" is missing", what, key);
    if (!json_is_string(v))
        return HS_CORRUPT_AT(err, "%s: \"%s\" must be a string", what, key);
    *out = hs_strdup(json_string_value(v));
    return *out ? HS_OK : hs_err_nomem(err, 0);
}

/* String-valued object into kv (numbers and booleans are turned into text). */
static hs_status parse_kv(const json_t *o, const char *what, ice_kv *kv, hs_error *err)
{
    const char *k;
    json_t *v;
    if (!json_is_object(o))
        return HS_CORRUPT_AT(err, "%s must be an object", what);
    /* A JSON object's keys are distinct (jansson keeps the last of
     * duplicates), so a fresh map takes them without ice_kv_set's search. */
    bool fresh = kv->n == 0;
    if (fresh && (!RESERVE(kv->keys, 0, json_object_size(o)) ||
                  !RESERVE(kv->values, 0, json_object_size(o))))
        return hs_err_nomem(err, 0);
    json_object_foreach((json_t *)o, k, v) {
        char *tmp = NULL;
        const char *s;
        if (json_is_string(v)) {
            s = json_string_value(v);
        } else if (json_is_number(v) || json_is_boolean(v)) {
            tmp = hs_json_dumps(v, JSON_ENCODE_ANY);
            s = tmp;
        } else {
            return HS_CORRUPT_AT(err, "%s: value of \"%s\" must be a string", what, k);
        }
        hs_status st = HS_NOMEM;
        if (s && fresh) {
            char *kc = hs_strdup(k), *vc = hs_strdup(s);
            if (kc && vc) {
                kv->keys[kv->n] = kc;
                kv->values[kv->n++] = vc;
                st = HS_OK;
            } else {
                hs_free(kc);
                hs_free(vc);
            }
        } else if (s) {
            st = ice_kv_set(kv, k, s);
        }
        free(tmp);
        if (st != HS_OK)
            return hs_err_nomem(err, 0);
    }
    return HS_OK;
}

static hs_status parse_snapshot(const json_t *o, int fv, const char *what, ice_snapshot *s,
                                hs_error *err)
{
    int64_t v = 0;
    bool has = false;
    if (!json_is_object(o))
        return HS_CORRUPT_AT(err, "%s must be an object", what);
    HS_TRY(req_int64(o, "snapshot-id", what, &s->snapshot_id, err));
    HS_TRY(opt_int64(o, "parent-snapshot-id", what, &s->has_parent, &s->parent_id, err));
    if (fv >= 2)
        HS_TRY(req_int64(o, "sequence-number", what, &s->sequence_number, err));
    else
        HS_TRY(opt_int64(o, "sequence-number", what, &has, &s->sequence_number, err));
    HS_TRY(req_int64(o, "timestamp-ms", what, &s->timestamp_ms, err));
    const json_t *ml = json_object_get(o, "manifest-list");
    if (ml && json_is_string(ml)) {
        HS_TRY(req_string(o, "manifest-list", what, &s->manifest_list, err));
    } else if (ml && !json_is_null(ml)) {
        return HS_CORRUPT_AT(err, "%s: \"manifest-list\" must be a string", what);
    } else if (fv >= 2) {
        return HS_CORRUPT_AT(err, "%s: required field \"manifest-list\" is missing", what);
    } else {
        const json_t *mf = json_object_get(o, "manifests");
        if (!json_is_array(mf))
            return HS_CORRUPT_AT(err, "%s: needs \"manifest-list\" or \"manifests\"", what);
        if (!RESERVE(s->v1_manifests, s->n_v1_manifests, json_array_size(mf)))
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < json_array_size(mf); i++) {
            const json_t *p = json_array_get(mf, i);
            if (!json_is_string(p))
                return HS_CORRUPT_AT(err, "%s: manifests[%zu] must be a string", what, i);
            char **slot = TAKE(s->v1_manifests, s->n_v1_manifests);
            if (!(*slot = hs_strdup(json_string_value(p))))
                return hs_err_nomem(err, 0);
        }
    }
    const json_t *sum = json_object_get(o, "summary");
    if (sum && !json_is_null(sum)) {
        char w[160];
        snprintf(w, sizeof w, "%s: summary", what);
        HS_TRY(parse_kv(sum, w, &s->summary, err));
        if (fv >= 2 && !ice_kv_get(&s->summary, "operation"))
            return HS_CORRUPT_AT(err, "%s: summary has no \"operation\"", what);
    } else if (fv >= 2) {
        return HS_CORRUPT_AT(err, "%s: required field \"summary\" is missing", what);
    }
    HS_TRY(opt_int64(o, "schema-id", what, &s->has_schema_id, &v, err));
    s->schema_id = (int32_t)v;
    HS_TRY(opt_int64(o, "first-row-id", what, &s->has_first_row_id, &s->first_row_id, err));
    HS_TRY(opt_int64(o, "added-rows", what, &s->has_added_rows, &s->added_rows, err));
    return HS_OK;
}

static hs_status parse_ref(const char *name, const json_t *o, ice_ref *r, hs_error *err)
{
    char what[160];
    snprintf(what, sizeof what, "metadata: refs.%s", name);
    if (!json_is_object(o))
        return HS_CORRUPT_AT(err, "%s must be an object", what);
    if (!(r->name = hs_strdup(name)))
        return hs_err_nomem(err, 0);
    HS_TRY(req_int64(o, "snapshot-id", what, &r->snapshot_id, err));
    const json_t *t = json_object_get(o, "type");
    if (!json_is_string(t))
        return HS_CORRUPT_AT(err, "%s: required field \"type\" is missing", what);
    if (strcmp(json_string_value(t), "tag") == 0)
        r->is_tag = true;
    else if (strcmp(json_string_value(t), "branch") != 0)
        return HS_CORRUPT_AT(err, "%s: type \"%s\" is not branch or tag", what, json_string_value(t));
    bool has = false;
    int64_t v = 0;
    r->max_ref_age_ms = r->max_snapshot_age_ms = -1;
    r->min_snapshots_to_keep = -1;
    HS_TRY(opt_int64(o, "max-ref-age-ms", what, &has, &v, err));
    if (has)
        r->max_ref_age_ms = v;
    HS_TRY(opt_int64(o, "max-snapshot-age-ms", what, &has, &v, err));
    if (has)
        r->max_snapshot_age_ms = v;
    HS_TRY(opt_int64(o, "min-snapshots-to-keep", what, &has, &v, err));
    if (has)
        r->min_snapshots_to_keep = (int32_t)v;
    return HS_OK;
}

static hs_status raw_json(const json_t *o, const char *key, char **out, hs_error *err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return HS_OK;
    if (!json_is_array(v))
        return HS_CORRUPT_AT(err, "metadata: \"%s\" must be an array", key);
    char *t = hs_json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!t)
        return hs_err_nomem(err, 0);
    *out = hs_strdup(t);
    free(t);
    return *out ? HS_OK : hs_err_nomem(err, 0);
}

static hs_status parse_body(const json_t *root, ice_table_metadata *m, hs_error *err)
{
    const char *W = "metadata";
    int64_t fv = 0;
    HS_TRY(req_int64(root, "format-version", W, &fv, err));
    if (fv > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_UNSUPPORTED,
                          "table format version %lld is newer than this build supports (%d)",
                          (long long)fv, ICE_MAX_FORMAT_VERSION);
    if (fv < 1)
        return HS_CORRUPT_AT(err, "metadata: format-version %lld is not valid", (long long)fv);
    m->format_version = (int)fv;

    const json_t *uuid = json_object_get(root, "table-uuid");
    if (uuid && json_is_string(uuid)) {
        if (json_string_length(uuid) >= sizeof m->table_uuid)
            return HS_CORRUPT_AT(err, "metadata: table-uuid \"%.60s\" is not a UUID",
                                 json_string_value(uuid));
        strcpy(m->table_uuid, json_string_value(uuid));
    } else if (fv >= 2 || (uuid && !json_is_null(uuid))) {
        return HS_CORRUPT_AT(err, "metadata: required field \"table-uuid\" is missing or not a "
                                  "string");
    }
    HS_TRY(req_string(root, "location", W, &m->location, err));
    if (fv >= 2) {
        HS_TRY(req_int64(root, "last-sequence-number", W, &m->last_sequence_number, err));
    } else {
        bool has = false;
        HS_TRY(opt_int64(root, "last-sequence-number", W, &has, &m->last_sequence_number, err));
    }
    HS_TRY(req_int64(root, "last-updated-ms", W, &m->last_updated_ms, err));
    HS_TRY(req_int32(root, "last-column-id", W, &m->last_column_id, err));

    /* schemas */
    const json_t *schemas = json_object_get(root, "schemas");
    if (schemas && !json_is_null(schemas)) {
        if (!json_is_array(schemas) || json_array_size(schemas) == 0)
            return HS_CORRUPT_AT(err, "metadata: \"schemas\" must be a non-empty array");
        if (!RESERVE(m->schemas, m->n_schemas, json_array_size(schemas)))
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < json_array_size(schemas); i++) {
            char w[64];
            snprintf(w, sizeof w, "metadata: schemas[%zu]", i);
            ice_schema *s = TAKE(m->schemas, m->n_schemas);
            m->n_schemas--; /* count it only once parsed */
            HS_TRY(ice_schema_from_jansson(json_array_get(schemas, i), w, s, err));
            m->n_schemas++;
        }
        if (fv >= 2 || json_object_get(root, "current-schema-id"))
            HS_TRY(req_int32(root, "current-schema-id", W, &m->current_schema_id, err));
        else
            m->current_schema_id = m->schemas[m->n_schemas - 1].schema_id;
    } else {
        if (fv >= 2)
            return HS_CORRUPT_AT(err, "metadata: required field \"schemas\" is missing");
        const json_t *schema = json_object_get(root, "schema");
        if (!schema)
            return HS_CORRUPT_AT(err, "metadata: required field \"schema\" is missing");
        ice_schema *s = GROW(m->schemas, m->n_schemas);
        if (!s)
            return hs_err_nomem(err, 0);
        m->n_schemas--;
        HS_TRY(ice_schema_from_jansson(schema, "metadata: schema", s, err));
        m->n_schemas++;
        m->current_schema_id = s->schema_id;
    }
    if (!ice_metadata_current_schema(m))
        return HS_CORRUPT_AT(err, "metadata: current-schema-id %d names no schema",
                             (int)m->current_schema_id);

    /* partition specs */
    const json_t *specs = json_object_get(root, "partition-specs");
    if (specs && !json_is_null(specs)) {
        if (!json_is_array(specs) || json_array_size(specs) == 0)
            return HS_CORRUPT_AT(err, "metadata: \"partition-specs\" must be a non-empty array");
        if (!RESERVE(m->specs, m->n_specs, json_array_size(specs)))
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < json_array_size(specs); i++) {
            char w[64];
            snprintf(w, sizeof w, "metadata: partition-specs[%zu]", i);
            ice_partition_spec *s = TAKE(m->specs, m->n_specs);
            m->n_specs--;
            HS_TRY(ice_spec_from_jansson(json_array_get(specs, i), 0, w, s, err));
            m->n_specs++;
        }
        if (fv >= 2 || json_object_get(root, "default-spec-id"))
            HS_TRY(req_int32(root, "default-spec-id", W, &m->default_spec_id, err));
        else
            m->default_spec_id = m->specs[m->n_specs - 1].spec_id;
    } else {
        if (fv >= 2)
            return HS_CORRUPT_AT(err, "metadata: required field \"partition-specs\" is missing");
        const json_t *spec = json_object_get(root, "partition-spec");
        if (!spec)
            return HS_CORRUPT_AT(err, "metadata: required field \"partition-spec\" is missing");
        ice_partition_spec *s = GROW(m->specs, m->n_specs);
        if (!s)
            return hs_err_nomem(err, 0);
        m->n_specs--;
        HS_TRY(ice_spec_from_jansson(spec, 0, "metadata: partition-spec", s, err));
        m->n_specs++;
        m->default_spec_id = 0;
    }
    if (!ice_metadata_default_spec(m))
        return HS_CORRUPT_AT(err, "metadata: default-spec-id %d names no partition spec",
                             (int)m->default_spec_id);
    if (fv >= 2 || json_object_get(root, "last-partition-id")) {
        HS_TRY(req_int32(root, "last-partition-id", W, &m->last_partition_id, err));
    } else {
        m->last_partition_id = ICE_UNPARTITIONED_LAST_PARTITION_ID;
        for (int i = 0; i < m->n_specs; i++)
            for (int j = 0; j < m->specs[i].n_fields; j++)
                if (m->specs[i].fields[j].field_id > m->last_partition_id)
                    m->last_partition_id = m->specs[i].fields[j].field_id;
    }

    /* properties */
    const json_t *props = json_object_get(root, "properties");
    if (props && !json_is_null(props))
        HS_TRY(parse_kv(props, "metadata: properties", &m->properties, err));

    /* sort orders */
    const json_t *orders = json_object_get(root, "sort-orders");
    if (orders && !json_is_null(orders)) {
        if (!json_is_array(orders))
            return HS_CORRUPT_AT(err, "metadata: \"sort-orders\" must be an array");
        if (!RESERVE(m->sort_orders, m->n_sort_orders, json_array_size(orders)))
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < json_array_size(orders); i++) {
            char w[64];
            snprintf(w, sizeof w, "metadata: sort-orders[%zu]", i);
            ice_sort_order *o = TAKE(m->sort_orders, m->n_sort_orders);
            m->n_sort_orders--;
            HS_TRY(ice_sort_order_from_jansson(json_array_get(orders, i), w, o, err));
            m->n_sort_orders++;
        }
        HS_TRY(req_int32(root, "default-sort-order-id", W, &m->default_sort_order_id, err));
    } else {
        if (fv >= 2)
            return HS_CORRUPT_AT(err, "metadata: required field \"sort-orders\" is missing");
        if (!GROW(m->sort_orders, m->n_sort_orders)) /* the unsorted order, id 0 */
            return hs_err_nomem(err, 0);
        m->default_sort_order_id = 0;
    }
    if (!ice_metadata_default_sort_order(m))
        return HS_CORRUPT_AT(err, "metadata: default-sort-order-id %d names no sort order",
                             (int)m->default_sort_order_id);

    /* snapshots */
    bool has = false;
    m->current_snapshot_id = ICE_NO_SNAPSHOT;
    HS_TRY(opt_int64(root, "current-snapshot-id", W, &has, &m->current_snapshot_id, err));
    if (!has || m->current_snapshot_id < 0)
        m->current_snapshot_id = ICE_NO_SNAPSHOT;
    const json_t *snaps = json_object_get(root, "snapshots");
    if (snaps && !json_is_null(snaps)) {
        if (!json_is_array(snaps))
            return HS_CORRUPT_AT(err, "metadata: \"snapshots\" must be an array");
        if (!RESERVE(m->snapshots, m->n_snapshots, json_array_size(snaps)))
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < json_array_size(snaps); i++) {
            char w[64];
            snprintf(w, sizeof w, "metadata: snapshots[%zu]", i);
            ice_snapshot *s = TAKE(m->snapshots, m->n_snapshots);
            hs_status st = parse_snapshot(json_array_get(snaps, i), m->format_version, w, s, err);
            if (st != HS_OK)
                return st; /* s is counted, so ice_metadata_free releases its parts */
        }
    }
    if (m->current_snapshot_id != ICE_NO_SNAPSHOT &&
        !ice_metadata_snapshot(m, m->current_snapshot_id))
        return HS_CORRUPT_AT(err, "metadata: current-snapshot-id %lld names no snapshot",
                             (long long)m->current_snapshot_id);

    const json_t *slog = json_object_get(root, "snapshot-log");
    if (slog && !json_is_null(slog)) {
        if (!json_is_array(slog))
            return HS_CORRUPT_AT(err, "metadata: \"snapshot-log\" must be an array");
        if (!RESERVE(m->snapshot_log, m->n_snapshot_log, json_array_size(slog)))
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < json_array_size(slog); i++) {
            char w[64];
            snprintf(w, sizeof w, "metadata: snapshot-log[%zu]", i);
            ice_snapshot_log_entry *e = TAKE(m->snapshot_log, m->n_snapshot_log);
            HS_TRY(req_int64(json_array_get(slog, i), "timestamp-ms", w, &e->timestamp_ms, err));
            HS_TRY(req_int64(json_array_get(slog, i), "snapshot-id", w, &e->snapshot_id, err));
        }
    }
    const json_t *mlog = json_object_get(root, "metadata-log");
    if (mlog && !json_is_null(mlog)) {
        if (!json_is_array(mlog))
            return HS_CORRUPT_AT(err, "metadata: \"metadata-log\" must be an array");
        if (!RESERVE(m->metadata_log, m->n_metadata_log, json_array_size(mlog)))
            return hs_err_nomem(err, 0);
        for (size_t i = 0; i < json_array_size(mlog); i++) {
            char w[64];
            snprintf(w, sizeof w, "metadata: metadata-log[%zu]", i);
            ice_metadata_log_entry *e = TAKE(m->metadata_log, m->n_metadata_log);
            HS_TRY(req_int64(json_array_get(mlog, i), "timestamp-ms", w, &e->timestamp_ms, err));
            HS_TRY(req_string(json_array_get(mlog, i), "metadata-file", w, &e->file, err));
        }
    }

    /* refs; without them, main points at the current snapshot */
    const json_t *refs = json_object_get(root, "refs");
    if (refs && !json_is_null(refs)) {
        const char *k;
        json_t *v;
        if (!json_is_object(refs))
            return HS_CORRUPT_AT(err, "metadata: \"refs\" must be an object");
        if (!RESERVE(m->refs, m->n_refs, json_object_size(refs)))
            return hs_err_nomem(err, 0);
        json_object_foreach((json_t *)refs, k, v) {
            ice_ref *r = TAKE(m->refs, m->n_refs);
            HS_TRY(parse_ref(k, v, r, err));
        }
    }
    if (!ice_metadata_ref(m, "main") && m->current_snapshot_id != ICE_NO_SNAPSHOT) {
        ice_ref *r = GROW(m->refs, m->n_refs);
        if (!r || !(r->name = hs_strdup("main")))
            return hs_err_nomem(err, 0);
        r->snapshot_id = m->current_snapshot_id;
        r->max_ref_age_ms = r->max_snapshot_age_ms = -1;
        r->min_snapshots_to_keep = -1;
    }

    HS_TRY(raw_json(root, "statistics", &m->statistics_json, err));
    HS_TRY(raw_json(root, "partition-statistics", &m->partition_statistics_json, err));

    if (fv >= 3) { /* required by the spec; tolerated when absent (early writers) */
        HS_TRY(opt_int64(root, "next-row-id", W, &has, &m->next_row_id, err));
        if (!has)
            m->next_row_id = 0;
    }
    return HS_OK;
}

hs_status ice_metadata_parse(const char *json, size_t len, ice_table_metadata *out, hs_error *err)
{
    json_error_t je;
    memset(out, 0, sizeof *out);
    json_t *root = hs_json_loadb(json, len, 0, &je);
    if (!root)
        return HS_CORRUPT_AT(err, "metadata: not valid JSON: %s (line %d, column %d)", je.text,
                             je.line, je.column);
    hs_status st;
    if (!json_is_object(root))
        st = HS_CORRUPT_AT(err, "metadata: top level must be a JSON object");
    else
        st = parse_body(root, out, err);
    json_decref(root);
    if (st != HS_OK)
        ice_metadata_free(out);
    return st;
}

/* -------------------------------------------------------------- writing */

static int set(json_t *o, const char *k, json_t *v) { return v ? json_object_set_new(o, k, v) : -1; }

static json_t *kv_to_json(const ice_kv *kv)
{
    json_t *o = json_object();
    for (int i = 0; o && i < kv->n; i++)
        if (set(o, kv->keys[i], json_string(kv->values[i]))) {
            json_decref(o);
            return NULL;
        }
    return o;
}

static json_t *raw_to_json(const char *text)
{
    json_error_t je;
    return hs_json_loads(text, 0, &je);
}

static hs_status build_json(const ice_table_metadata *m, json_t **out, hs_error *err)
{
    int fv = m->format_version;
    json_t *o = json_object(), *j = NULL;
    if (!o)
        return ice_json_nomem(err);
    int bad = set(o, "format-version", json_integer(fv));
    if (m->table_uuid[0] || fv >= 2)
        bad |= set(o, "table-uuid", json_string(m->table_uuid));
    bad |= set(o, "location", json_string(m->location ? m->location : ""));
    if (fv >= 2)
        bad |= set(o, "last-sequence-number", json_integer(m->last_sequence_number));
    bad |= set(o, "last-updated-ms", json_integer(m->last_updated_ms));
    bad |= set(o, "last-column-id", json_integer(m->last_column_id));
    if (bad)
        goto nomem;

    hs_status st = HS_OK;
    if (fv == 1) {
        const ice_schema *cur = ice_metadata_current_schema(m);
        if (!cur)
            st = hs_err_set(err, HS_INVALID, "metadata: current schema %d does not exist",
                            (int)m->current_schema_id);
        if (st == HS_OK)
            st = ice_schema_to_jansson(cur, &j, err);
        if (st == HS_OK && set(o, "schema", j))
            st = ice_json_nomem(err);
    }
    json_t *arr = json_array();
    for (int i = 0; st == HS_OK && arr && i < m->n_schemas; i++) {
        st = ice_schema_to_jansson(&m->schemas[i], &j, err);
        if (st == HS_OK && json_array_append_new(arr, j))
            st = ice_json_nomem(err);
    }
    if (st == HS_OK && (set(o, "schemas", arr) ||
                        set(o, "current-schema-id", json_integer(m->current_schema_id))))
        st = ice_json_nomem(err);
    else if (st != HS_OK)
        json_decref(arr);
    if (st == HS_OK && fv == 1) {
        const ice_partition_spec *ds = ice_metadata_default_spec(m);
        if (!ds)
            st = hs_err_set(err, HS_INVALID, "metadata: default spec %d does not exist",
                            (int)m->default_spec_id);
        if (st == HS_OK)
            st = ice_spec_to_jansson(ds, true, &j, err);
        if (st == HS_OK && set(o, "partition-spec", j))
            st = ice_json_nomem(err);
    }
    if (st == HS_OK) {
        arr = json_array();
        for (int i = 0; st == HS_OK && arr && i < m->n_specs; i++) {
            st = ice_spec_to_jansson(&m->specs[i], false, &j, err);
            if (st == HS_OK && json_array_append_new(arr, j))
                st = ice_json_nomem(err);
        }
        if (st == HS_OK &&
            (set(o, "partition-specs", arr) ||
             set(o, "default-spec-id", json_integer(m->default_spec_id)) ||
             set(o, "last-partition-id", json_integer(m->last_partition_id)) ||
             set(o, "default-sort-order-id", json_integer(m->default_sort_order_id))))
            st = ice_json_nomem(err);
        else if (st != HS_OK)
            json_decref(arr);
    }
    if (st == HS_OK) {
        arr = json_array();
        for (int i = 0; st == HS_OK && arr && i < m->n_sort_orders; i++) {
            st = ice_sort_order_to_jansson(&m->sort_orders[i], &j, err);
            if (st == HS_OK && json_array_append_new(arr, j))
                st = ice_json_nomem(err);
        }
        if (st == HS_OK && set(o, "sort-orders", arr))
            st = ice_json_nomem(err);
        else if (st != HS_OK)
            json_decref(arr);
    }
    if (st != HS_OK) {
        json_decref(o);
        return st;
    }
    bad = set(o, "properties", kv_to_json(&m->properties));
    if (m->current_snapshot_id == ICE_NO_SNAPSHOT)
        bad |= set(o, "current-snapshot-id", fv >= 3 ? json_null() : json_integer(-1));
    else
        bad |= set(o, "current-snapshot-id", json_integer(m->current_snapshot_id));
    if (fv >= 3)
        bad |= set(o, "next-row-id", json_integer(m->next_row_id));
    if (bad)
        goto nomem;
    *out = o;
    return HS_OK;
nomem:
    json_decref(o);
    return ice_json_nomem(err);
}

/* The growing parts of the metadata (refs, snapshots, the logs) are written
 * directly rather than through a jansson tree: with hundreds of snapshots
 * the tree and its dump were most of the CPU time of a small append. */

static bool utf8_valid(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t k = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 9;
        if (k == 9 || i + k >= n + (k == 0))
            return false;
        if (k == 1 && c < 0xC2)
            return false;
        for (size_t j = 1; j <= k; j++)
            if ((p[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

typedef struct jw { hs_buf *b; bool bad; } jw;

static void jw_raw(jw *w, const char *p, size_t n)
{
    if (!w->bad && hs_buf_append(w->b, p, n) != HS_OK)
        w->bad = true;
}

static void jw_lit(jw *w, const char *s) { jw_raw(w, s, strlen(s)); }

static void jw_int(jw *w, int64_t v)
{
    char t[24];
    int n = snprintf(t, sizeof t, "%" PRId64, v);
    jw_raw(w, t, (size_t)n);
}

static void jw_str(jw *w, const char *s)
{
    size_t n = strlen(s);
    if (!utf8_valid((const unsigned char *)s, n)) {
        w->bad = true;
        return;
    }
    jw_raw(w, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        jw_raw(w, s + run, i - run);
        run = i + 1;
        char e[8];
        switch (c) {
        case '"': jw_lit(w, "\\\""); break;
        case '\\': jw_lit(w, "\\\\"); break;
        case '\n': jw_lit(w, "\\n"); break;
        case '\r': jw_lit(w, "\\r"); break;
        case '\t': jw_lit(w, "\\t"); break;
        case '\b': jw_lit(w, "\\b"); break;
        case '\f': jw_lit(w, "\\f"); break;
        default:
            snprintf(e, sizeof e, "\\u%04x", c);
            jw_lit(w, e);
        }
    }
    jw_raw(w, s + run, n - run);
    jw_raw(w, "\"", 1);
}

/* ,"key": */
static void jw_key(jw *w, const char *k)
{
    jw_raw(w, ",", 1);
    jw_str(w, k);
    jw_raw(w, ":", 1);
}

static void jw_kv(jw *w, const ice_kv *kv)
{
    jw_raw(w, "{", 1);
    for (int i = 0; i < kv->n; i++) {
        if (i)
            jw_raw(w, ",", 1);
        jw_str(w, kv->keys[i]);
        jw_raw(w, ":", 1);
        jw_str(w, kv->values[i]);
    }
    jw_raw(w, "}", 1);
}

static void jw_snapshot(jw *w, const ice_snapshot *s, int fv)
{
    jw_lit(w, "{\"snapshot-id\":");
    jw_int(w, s->snapshot_id);
    if (s->has_parent) {
        jw_key(w, "parent-snapshot-id");
        jw_int(w, s->parent_id);
    }
    if (fv >= 2) {
        jw_key(w, "sequence-number");
        jw_int(w, s->sequence_number);
    }
    jw_key(w, "timestamp-ms");
    jw_int(w, s->timestamp_ms);
    jw_key(w, "summary");
    jw_kv(w, &s->summary);
    if (s->manifest_list) {
        jw_key(w, "manifest-list");
        jw_str(w, s->manifest_list);
    } else {
        jw_key(w, "manifests");
        jw_raw(w, "[", 1);
        for (int i = 0; i < s->n_v1_manifests; i++) {
            if (i)
                jw_raw(w, ",", 1);
            jw_str(w, s->v1_manifests[i]);
        }
        jw_raw(w, "]", 1);
    }
    if (s->has_schema_id) {
        jw_key(w, "schema-id");
        jw_int(w, s->schema_id);
    }
    if (fv >= 3 && s->has_first_row_id) {
        jw_key(w, "first-row-id");
        jw_int(w, s->first_row_id);
    }
    if (fv >= 3 && s->has_added_rows) {
        jw_key(w, "added-rows");
        jw_int(w, s->added_rows);
    }
    jw_raw(w, "}", 1);
}

/* Raw JSON text kept in the model (statistics): re-dumped compactly so that
 * the output is one valid document even if the text had odd spacing. */
static void jw_rawjson(jw *w, const char *text)
{
    json_t *j = raw_to_json(text);
    if (!j) {
        w->bad = true;
        return;
    }
    if (ice_json_dump(j, w->b, false) != HS_OK)
        w->bad = true;
    json_decref(j);
}

static void write_tail(jw *w, const ice_table_metadata *m)
{
    int fv = m->format_version;
    jw_key(w, "refs");
    jw_raw(w, "{", 1);
    for (int i = 0; i < m->n_refs; i++) {
        const ice_ref *r = &m->refs[i];
        if (i)
            jw_raw(w, ",", 1);
        jw_str(w, r->name);
        jw_lit(w, ":{\"snapshot-id\":");
        jw_int(w, r->snapshot_id);
        jw_lit(w, r->is_tag ? ",\"type\":\"tag\"" : ",\"type\":\"branch\"");
        if (r->max_ref_age_ms >= 0) {
            jw_key(w, "max-ref-age-ms");
            jw_int(w, r->max_ref_age_ms);
        }
        if (r->max_snapshot_age_ms >= 0) {
            jw_key(w, "max-snapshot-age-ms");
            jw_int(w, r->max_snapshot_age_ms);
        }
        if (r->min_snapshots_to_keep >= 0) {
            jw_key(w, "min-snapshots-to-keep");
            jw_int(w, r->min_snapshots_to_keep);
        }
        jw_raw(w, "}", 1);
    }
    jw_raw(w, "}", 1);
    jw_key(w, "snapshots");
    jw_raw(w, "[", 1);
    for (int i = 0; i < m->n_snapshots; i++) {
        if (i)
            jw_raw(w, ",", 1);
        jw_snapshot(w, &m->snapshots[i], fv);
    }
    jw_raw(w, "]", 1);
    jw_key(w, "statistics");
    if (m->statistics_json)
        jw_rawjson(w, m->statistics_json);
    else
        jw_raw(w, "[]", 2);
    if (m->partition_statistics_json) {
        jw_key(w, "partition-statistics");
        jw_rawjson(w, m->partition_statistics_json);
    }
    jw_key(w, "snapshot-log");
    jw_raw(w, "[", 1);
    for (int i = 0; i < m->n_snapshot_log; i++) {
        jw_lit(w, i ? ",{\"timestamp-ms\":" : "{\"timestamp-ms\":");
        jw_int(w, m->snapshot_log[i].timestamp_ms);
        jw_lit(w, ",\"snapshot-id\":");
        jw_int(w, m->snapshot_log[i].snapshot_id);
        jw_raw(w, "}", 1);
    }
    jw_raw(w, "]", 1);
    jw_key(w, "metadata-log");
    jw_raw(w, "[", 1);
    for (int i = 0; i < m->n_metadata_log; i++) {
        jw_lit(w, i ? ",{\"timestamp-ms\":" : "{\"timestamp-ms\":");
        jw_int(w, m->metadata_log[i].timestamp_ms);
        jw_lit(w, ",\"metadata-file\":");
        jw_str(w, m->metadata_log[i].file ? m->metadata_log[i].file : "");
        jw_raw(w, "}", 1);
    }
    jw_raw(w, "]}", 2);
}

hs_status ice_metadata_to_json(const ice_table_metadata *m, hs_buf *out, hs_error *err)
{
    if (m->format_version < 1 || m->format_version > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_INVALID, "cannot write table format version %d",
                          m->format_version);
    json_t *j = NULL;
    HS_TRY(build_json(m, &j, err));
    size_t start = out->len;
    hs_status st = ice_json_dump(j, out, false);
    json_decref(j);
    if (st != HS_OK)
        return hs_err_nomem(err, 0);
    /* the head object ends with '}': continue it with the tail */
    if (out->len == start || out->data[out->len - 1] != '}') {
        out->len = start;
        return hs_err_set(err, HS_INTERNAL, "metadata JSON head is not an object");
    }
    out->len--;
    jw w = {out, false};
    write_tail(&w, m);
    if (w.bad) {
        out->len = start;
        return hs_err_set(err, HS_INVALID, "metadata: cannot write the snapshots, refs or logs "
                          "as JSON (invalid UTF-8 in a string, or out of memory)");
    }
    return HS_OK;
}

/* ----------------------------------------------------------------- copy */

hs_status ice_metadata_copy(const ice_table_metadata *src, ice_table_metadata *dst, hs_error *err)
{
    ice_table_metadata t = *src;
    /* zero every owned pointer first so that a failure can free a partial copy */
    t.location = NULL;
    t.schemas = NULL;
    t.n_schemas = 0;
    t.specs = NULL;
    t.n_specs = 0;
    memset(&t.properties, 0, sizeof t.properties);
    t.snapshots = NULL;
    t.n_snapshots = 0;
    t.snapshot_log = NULL;
    t.n_snapshot_log = 0;
    t.metadata_log = NULL;
    t.n_metadata_log = 0;
    t.sort_orders = NULL;
    t.n_sort_orders = 0;
    t.refs = NULL;
    t.n_refs = 0;
    t.statistics_json = t.partition_statistics_json = NULL;

    if (src->location && !(t.location = hs_strdup(src->location)))
        goto nomem;
    for (int i = 0; i < src->n_schemas; i++) {
        ice_schema *s = GROW(t.schemas, t.n_schemas);
        if (!s)
            goto nomem;
        if (ice_schema_copy(&src->schemas[i], s) != HS_OK) {
            t.n_schemas--;
            goto nomem;
        }
    }
    for (int i = 0; i < src->n_specs; i++) {
        ice_partition_spec *s = GROW(t.specs, t.n_specs);
        if (!s)
            goto nomem;
        if (ice_spec_copy(&src->specs[i], s) != HS_OK) {
            t.n_specs--;
            goto nomem;
        }
    }
    if (ice_kv_copy(&src->properties, &t.properties) != HS_OK)
        goto nomem;
    for (int i = 0; i < src->n_snapshots; i++) {
        ice_snapshot *s = GROW(t.snapshots, t.n_snapshots);
        if (!s)
            goto nomem;
        if (ice_snapshot_copy(&src->snapshots[i], s) != HS_OK) {
            t.n_snapshots--;
            goto nomem;
        }
    }
    if (src->n_snapshot_log) {
        t.snapshot_log = hs_malloc(sizeof *t.snapshot_log * (size_t)src->n_snapshot_log);
        if (!t.snapshot_log)
            goto nomem;
        memcpy(t.snapshot_log, src->snapshot_log, sizeof *t.snapshot_log * (size_t)src->n_snapshot_log);
        t.n_snapshot_log = src->n_snapshot_log;
    }
    for (int i = 0; i < src->n_metadata_log; i++) {
        ice_metadata_log_entry *e = GROW(t.metadata_log, t.n_metadata_log);
        if (!e)
            goto nomem;
        e->timestamp_ms = src->metadata_log[i].timestamp_ms;
        if (!(e->file = hs_strdup(src->metadata_log[i].file)))
            goto nomem;
    }
    for (int i = 0; i < src->n_sort_orders; i++) {
        ice_sort_order *o = GROW(t.sort_orders, t.n_sort_orders);
        if (!o)
            goto nomem;
        if (ice_sort_order_copy(&src->sort_orders[i], o) != HS_OK) {
            t.n_sort_orders--;
            goto nomem;
        }
    }
    for (int i = 0; i < src->n_refs; i++) {
        ice_ref *r = GROW(t.refs, t.n_refs);
        if (!r)
            goto nomem;
        *r = src->refs[i];
        if (!(r->name = hs_strdup(src->refs[i].name)))
            goto nomem;
    }
    if (src->statistics_json && !(t.statistics_json = hs_strdup(src->statistics_json)))
        goto nomem;
    if (src->partition_statistics_json &&
        !(t.partition_statistics_json = hs_strdup(src->partition_statistics_json)))
        goto nomem;
    *dst = t;
    return HS_OK;
nomem:
    ice_metadata_free(&t);
    return hs_err_nomem(err, 0);
}

/* -------------------------------------------------------------- lookups */

const ice_schema *ice_metadata_schema(const ice_table_metadata *m, int32_t id)
{
    for (int i = 0; i < m->n_schemas; i++)
        if (m->schemas[i].schema_id == id)
            return &m->schemas[i];
    return NULL;
}

const ice_schema *ice_metadata_current_schema(const ice_table_metadata *m)
{
    return ice_metadata_schema(m, m->current_schema_id);
}

const ice_partition_spec *ice_metadata_spec(const ice_table_metadata *m, int32_t id)
{
    for (int i = 0; i < m->n_specs; i++)
        if (m->specs[i].spec_id == id)
            return &m->specs[i];
    return NULL;
}

const ice_partition_spec *ice_metadata_default_spec(const ice_table_metadata *m)
{
    return ice_metadata_spec(m, m->default_spec_id);
}

const ice_sort_order *ice_metadata_sort_order(const ice_table_metadata *m, int32_t id)
{
    for (int i = 0; i < m->n_sort_orders; i++)
        if (m->sort_orders[i].order_id == id)
            return &m->sort_orders[i];
    return NULL;
}

const ice_sort_order *ice_metadata_default_sort_order(const ice_table_metadata *m)
{
    return ice_metadata_sort_order(m, m->default_sort_order_id);
}

const ice_snapshot *ice_metadata_snapshot(const ice_table_metadata *m, int64_t id)
{
    for (int i = 0; i < m->n_snapshots; i++)
        if (m->snapshots[i].snapshot_id == id)
            return &m->snapshots[i];
    return NULL;
}

const ice_snapshot *ice_metadata_current_snapshot(const ice_table_metadata *m)
{
    if (m->current_snapshot_id == ICE_NO_SNAPSHOT)
        return NULL;
    return ice_metadata_snapshot(m, m->current_snapshot_id);
}

const ice_snapshot *ice_metadata_snapshot_as_of(const ice_table_metadata *m, int64_t t_ms)
{
    const ice_snapshot *best = NULL;
    if (m->n_snapshot_log > 0) {
        for (int i = 0; i < m->n_snapshot_log; i++)
            if (m->snapshot_log[i].timestamp_ms <= t_ms) {
                const ice_snapshot *s = ice_metadata_snapshot(m, m->snapshot_log[i].snapshot_id);
                if (s)
                    best = s;
            }
        return best;
    }
    for (int i = 0; i < m->n_snapshots; i++)
        if (m->snapshots[i].timestamp_ms <= t_ms &&
            (!best || m->snapshots[i].timestamp_ms >= best->timestamp_ms))
            best = &m->snapshots[i];
    return best;
}

const ice_ref *ice_metadata_ref(const ice_table_metadata *m, const char *name)
{
    for (int i = 0; i < m->n_refs; i++)
        if (strcmp(m->refs[i].name, name) == 0)
            return &m->refs[i];
    return NULL;
}

const ice_snapshot *ice_metadata_snapshot_by_ref(const ice_table_metadata *m, const char *name)
{
    const ice_ref *r = ice_metadata_ref(m, name);
    return r ? ice_metadata_snapshot(m, r->snapshot_id) : NULL;
}

const ice_schema *ice_metadata_snapshot_schema(const ice_table_metadata *m, const ice_snapshot *s)
{
    const ice_schema *sc = s && s->has_schema_id ? ice_metadata_schema(m, s->schema_id) : NULL;
    return sc ? sc : ice_metadata_current_schema(m);
}

/* ------------------------------------------------------------- creation */

hs_status ice_metadata_new(const char *location, const ice_schema *schema,
                           const ice_partition_spec *spec, const ice_sort_order *order,
                           const ice_kv *props, int format_version, ice_table_metadata *out,
                           hs_error *err)
{
    memset(out, 0, sizeof *out);
    if (format_version < 1 || format_version > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_INVALID, "format version %d is not 1, 2 or 3", format_version);
    ice_table_metadata m;
    memset(&m, 0, sizeof m);
    hs_buf idmap = {0};
    hs_status st = HS_OK;
    m.format_version = format_version;
    ice_uuid_v4(m.table_uuid);
    m.last_updated_ms = ice_now_ms();
    m.current_snapshot_id = ICE_NO_SNAPSHOT;
    if (!(m.location = hs_strdup(location)))
        goto nomem;

    ice_schema *s = GROW(m.schemas, m.n_schemas);
    if (!s)
        goto nomem;
    if (ice_schema_copy(schema, s) != HS_OK) {
        m.n_schemas--;
        goto nomem;
    }
    s->schema_id = 0;
    int32_t next = 1;
    if (ice_schema_assign_fresh_ids(s, &next, &idmap) != HS_OK)
        goto nomem;
    m.last_column_id = next - 1;
    st = ice_schema_validate(s, format_version, err);
    if (st != HS_OK)
        goto fail;
    const int32_t *pairs = (const int32_t *)idmap.data;
    size_t npairs = idmap.len / (2 * sizeof(int32_t));

    ice_partition_spec *ps = GROW(m.specs, m.n_specs);
    if (!ps)
        goto nomem;
    m.last_partition_id = ICE_UNPARTITIONED_LAST_PARTITION_ID;
    for (int i = 0; spec && i < spec->n_fields; i++) {
        const ice_partition_field *f = &spec->fields[i];
        int32_t src = -1;
        for (size_t k = 0; k < npairs; k++)
            if (pairs[2 * k] == f->source_id)
                src = pairs[2 * k + 1];
        if (src < 0) {
            st = hs_err_set(err, HS_INVALID, "partition field %s: source column id %d is not in "
                                             "the schema", f->name ? f->name : "?",
                            (int)f->source_id);
            goto fail;
        }
        st = ice_spec_add_field(ps, s, src, &f->transform, f->name, ++m.last_partition_id, err);
        if (st != HS_OK)
            goto fail;
    }
    st = ice_spec_validate(ps, s, err);
    if (st != HS_OK)
        goto fail;

    ice_sort_order *so = GROW(m.sort_orders, m.n_sort_orders);
    if (!so)
        goto nomem;
    for (int i = 0; order && i < order->n_fields; i++) {
        const ice_sort_field *f = &order->fields[i];
        int32_t src = -1;
        for (size_t k = 0; k < npairs; k++)
            if (pairs[2 * k] == f->source_id)
                src = pairs[2 * k + 1];
        if (src < 0) {
            st = hs_err_set(err, HS_INVALID, "sort field: source column id %d is not in the "
                                             "schema", (int)f->source_id);
            goto fail;
        }
        if (ice_sort_order_add_field(so, src, &f->transform, f->direction, f->null_order) != HS_OK)
            goto nomem;
    }
    so->order_id = so->n_fields ? 1 : 0;
    m.default_sort_order_id = so->order_id;
    if (props && ice_kv_copy(props, &m.properties) != HS_OK)
        goto nomem;
    hs_buf_free(&idmap);
    *out = m;
    return HS_OK;
nomem:
    st = hs_err_nomem(err, 0);
fail:
    hs_buf_free(&idmap);
    ice_metadata_free(&m);
    return st;
}

/* ------------------------------------------------------------ mutations */

hs_status ice_metadata_add_schema(ice_table_metadata *m, const ice_schema *s, bool set_current,
                                  int32_t *id_out, hs_error *err)
{
    int32_t id = -1, max_id = -1;
    for (int i = 0; i < m->n_schemas; i++) {
        if (ice_schema_equals(&m->schemas[i], s))
            id = m->schemas[i].schema_id;
        if (m->schemas[i].schema_id > max_id)
            max_id = m->schemas[i].schema_id;
    }
    if (id < 0) {
        HS_TRY(ice_schema_validate(s, m->format_version, err));
        ice_schema *n = GROW(m->schemas, m->n_schemas);
        if (!n)
            return hs_err_nomem(err, 0);
        if (ice_schema_copy(s, n) != HS_OK) {
            m->n_schemas--;
            return hs_err_nomem(err, 0);
        }
        id = n->schema_id = max_id + 1;
        int32_t h = ice_schema_highest_id(n);
        if (h > m->last_column_id)
            m->last_column_id = h;
    }
    if (set_current)
        m->current_schema_id = id;
    if (id_out)
        *id_out = id;
    m->last_updated_ms = ice_now_ms();
    return HS_OK;
}

hs_status ice_metadata_add_spec(ice_table_metadata *m, const ice_partition_spec *spec,
                                bool set_default, int32_t *id_out, hs_error *err)
{
    const ice_schema *cur = ice_metadata_current_schema(m);
    if (!cur)
        return hs_err_set(err, HS_INVALID, "metadata has no current schema");
    ice_partition_spec n;
    if (ice_spec_copy(spec, &n) != HS_OK)
        return hs_err_nomem(err, 0);
    int32_t last = m->last_partition_id;
    for (int i = 0; i < n.n_fields; i++) {
        ice_partition_field *f = &n.fields[i];
        if (f->field_id >= 0)
            continue;
        for (int s = 0; s < m->n_specs && f->field_id < 0; s++)
            for (int k = 0; k < m->specs[s].n_fields; k++) {
                const ice_partition_field *o = &m->specs[s].fields[k];
                if (o->source_id == f->source_id && ice_transform_equals(&o->transform, &f->transform)) {
                    f->field_id = o->field_id;
                    break;
                }
            }
        if (f->field_id < 0)
            f->field_id = ++last;
    }
    for (int i = 0; i < n.n_fields; i++)
        if (n.fields[i].field_id > last)
            last = n.fields[i].field_id;
    hs_status st = ice_spec_validate(&n, cur, err);
    if (st != HS_OK) {
        ice_spec_clear(&n);
        return st;
    }
    int32_t id = -1, max_id = -1;
    for (int i = 0; i < m->n_specs; i++) {
        if (ice_spec_equals(&m->specs[i], &n))
            id = m->specs[i].spec_id;
        if (m->specs[i].spec_id > max_id)
            max_id = m->specs[i].spec_id;
    }
    if (id < 0) {
        ice_partition_spec *slot = GROW(m->specs, m->n_specs);
        if (!slot) {
            ice_spec_clear(&n);
            return hs_err_nomem(err, 0);
        }
        n.spec_id = id = max_id + 1;
        *slot = n;
        m->last_partition_id = last;
    } else {
        ice_spec_clear(&n);
    }
    if (set_default)
        m->default_spec_id = id;
    if (id_out)
        *id_out = id;
    m->last_updated_ms = ice_now_ms();
    return HS_OK;
}

hs_status ice_metadata_add_sort_order(ice_table_metadata *m, const ice_sort_order *o,
                                      bool set_default, int32_t *id_out, hs_error *err)
{
    const ice_schema *cur = ice_metadata_current_schema(m);
    for (int i = 0; cur && i < o->n_fields; i++) {
        const hs_field *src = ice_schema_find_id(cur, o->fields[i].source_id);
        if (!src)
            return hs_err_set(err, HS_INVALID, "sort field: source column id %d is not in the "
                                               "schema", (int)o->fields[i].source_id);
        if (!ice_transform_can_apply(&o->fields[i].transform, src))
            return ice_transform_result_type(&o->fields[i].transform, src, &(hs_field){0}, err);
    }
    int32_t id = -1, max_id = 0;
    for (int i = 0; i < m->n_sort_orders; i++) {
        if (ice_sort_order_equals(&m->sort_orders[i], o))
            id = m->sort_orders[i].order_id;
        if (m->sort_orders[i].order_id > max_id)
            max_id = m->sort_orders[i].order_id;
    }
    if (id < 0) {
        ice_sort_order *slot = GROW(m->sort_orders, m->n_sort_orders);
        if (!slot)
            return hs_err_nomem(err, 0);
        if (ice_sort_order_copy(o, slot) != HS_OK) {
            m->n_sort_orders--;
            return hs_err_nomem(err, 0);
        }
        id = slot->order_id = o->n_fields ? max_id + 1 : 0;
    }
    if (set_default)
        m->default_sort_order_id = id;
    if (id_out)
        *id_out = id;
    m->last_updated_ms = ice_now_ms();
    return HS_OK;
}

static hs_status log_snapshot(ice_table_metadata *m, int64_t ts, int64_t id, hs_error *err)
{
    ice_snapshot_log_entry *e = GROW(m->snapshot_log, m->n_snapshot_log);
    if (!e)
        return hs_err_nomem(err, 0);
    e->timestamp_ms = ts;
    e->snapshot_id = id;
    return HS_OK;
}

static ice_ref *ref_mut(ice_table_metadata *m, const char *name)
{
    return (ice_ref *)ice_metadata_ref(m, name);
}

static hs_status point_ref(ice_table_metadata *m, const char *name, int64_t id, bool is_tag,
                           int64_t ts, hs_error *err)
{
    ice_ref *r = ref_mut(m, name);
    if (r && r->is_tag != is_tag)
        return hs_err_set(err, HS_INVALID, "ref %s is a %s, not a %s", name,
                          r->is_tag ? "tag" : "branch", is_tag ? "tag" : "branch");
    if (!r) {
        char *nm = hs_strdup(name);
        if (!nm || !(r = GROW(m->refs, m->n_refs))) {
            hs_free(nm);
            return hs_err_nomem(err, 0);
        }
        r->name = nm;
        r->is_tag = is_tag;
        r->max_ref_age_ms = r->max_snapshot_age_ms = -1;
        r->min_snapshots_to_keep = -1;
    }
    r->snapshot_id = id;
    if (!is_tag && strcmp(name, "main") == 0) {
        m->current_snapshot_id = id;
        HS_TRY(log_snapshot(m, ts, id, err));
    }
    return HS_OK;
}

hs_status ice_metadata_add_snapshot(ice_table_metadata *m, const ice_snapshot *snap,
                                    const char *branch, hs_error *err)
{
    if (ice_metadata_snapshot(m, snap->snapshot_id))
        return hs_err_set(err, HS_INVALID, "snapshot %lld already exists",
                          (long long)snap->snapshot_id);
    if (m->format_version >= 2 && snap->sequence_number <= m->last_sequence_number)
        return hs_err_set(err, HS_INVALID, "snapshot %lld: sequence number %lld is not greater "
                                           "than the table's last sequence number %lld",
                          (long long)snap->snapshot_id, (long long)snap->sequence_number,
                          (long long)m->last_sequence_number);
    if (m->format_version >= 3 && snap->has_first_row_id && snap->first_row_id < m->next_row_id)
        return hs_err_set(err, HS_INVALID, "snapshot %lld: first-row-id %lld is below the table's "
                                           "next-row-id %lld", (long long)snap->snapshot_id,
                          (long long)snap->first_row_id, (long long)m->next_row_id);
    const char *b = branch ? branch : "main";
    const ice_ref *r = ice_metadata_ref(m, b);
    if (r && r->is_tag)
        return hs_err_set(err, HS_INVALID, "cannot commit to %s: it is a tag", b);
    ice_snapshot *s = GROW(m->snapshots, m->n_snapshots);
    if (!s)
        return hs_err_nomem(err, 0);
    if (ice_snapshot_copy(snap, s) != HS_OK) {
        m->n_snapshots--;
        return hs_err_nomem(err, 0);
    }
    if (snap->sequence_number > m->last_sequence_number)
        m->last_sequence_number = snap->sequence_number;
    m->last_updated_ms = snap->timestamp_ms;
    if (m->format_version >= 3 && snap->has_first_row_id)
        m->next_row_id = snap->first_row_id + (snap->has_added_rows ? snap->added_rows : 0);
    return point_ref(m, b, snap->snapshot_id, false, snap->timestamp_ms, err);
}

hs_status ice_metadata_set_property(ice_table_metadata *m, const char *key, const char *value,
                                    hs_error *err)
{
    if (ice_kv_set(&m->properties, key, value) != HS_OK)
        return hs_err_nomem(err, 0);
    m->last_updated_ms = ice_now_ms();
    return HS_OK;
}

bool ice_metadata_remove_property(ice_table_metadata *m, const char *key)
{
    bool r = ice_kv_remove(&m->properties, key);
    if (r)
        m->last_updated_ms = ice_now_ms();
    return r;
}

hs_status ice_metadata_set_ref(ice_table_metadata *m, const char *name, int64_t snapshot_id,
                               bool is_tag, hs_error *err)
{
    if (!ice_metadata_snapshot(m, snapshot_id))
        return hs_err_set(err, HS_NOT_FOUND, "snapshot %lld does not exist", (long long)snapshot_id);
    if (is_tag && strcmp(name, "main") == 0)
        return hs_err_set(err, HS_INVALID, "main must be a branch");
    int64_t now = ice_now_ms();
    HS_TRY(point_ref(m, name, snapshot_id, is_tag, now, err));
    m->last_updated_ms = now;
    return HS_OK;
}

bool ice_metadata_remove_ref(ice_table_metadata *m, const char *name)
{
    if (strcmp(name, "main") == 0)
        return false;
    for (int i = 0; i < m->n_refs; i++) {
        if (strcmp(m->refs[i].name, name) == 0) {
            hs_free(m->refs[i].name);
            memmove(m->refs + i, m->refs + i + 1, sizeof *m->refs * (size_t)(m->n_refs - i - 1));
            m->n_refs--;
            m->last_updated_ms = ice_now_ms();
            return true;
        }
    }
    return false;
}

hs_status ice_metadata_rollback(ice_table_metadata *m, int64_t snapshot_id, hs_error *err)
{
    return ice_metadata_set_ref(m, "main", snapshot_id, false, err);
}

hs_status ice_metadata_upgrade(ice_table_metadata *m, int new_version, hs_error *err)
{
    if (new_version > ICE_MAX_FORMAT_VERSION)
        return hs_err_set(err, HS_UNSUPPORTED, "format version %d is newer than this build "
                                               "supports (%d)", new_version, ICE_MAX_FORMAT_VERSION);
    if (new_version < m->format_version)
        return hs_err_set(err, HS_INVALID, "cannot downgrade format version %d to %d",
                          m->format_version, new_version);
    if (new_version == m->format_version)
        return HS_OK;
    if (m->format_version < 3 && new_version >= 3)
        m->next_row_id = 0;
    if (m->format_version < 2 && !m->table_uuid[0])
        ice_uuid_v4(m->table_uuid);
    m->format_version = new_version;
    m->last_updated_ms = ice_now_ms();
    return HS_OK;
}

hs_status ice_metadata_add_metadata_log(ice_table_metadata *m, int64_t timestamp_ms,
                                        const char *file, int max_entries, hs_error *err)
{
    if (max_entries <= 0)
        max_entries = 100;
    char *f = hs_strdup(file);
    ice_metadata_log_entry *e = f ? GROW(m->metadata_log, m->n_metadata_log) : NULL;
    if (!e) {
        hs_free(f);
        return hs_err_nomem(err, 0);
    }
    e->timestamp_ms = timestamp_ms;
    e->file = f;
    int drop = m->n_metadata_log - max_entries;
    if (drop > 0) {
        for (int i = 0; i < drop; i++)
            hs_free(m->metadata_log[i].file);
        memmove(m->metadata_log, m->metadata_log + drop,
                sizeof *m->metadata_log * (size_t)(m->n_metadata_log - drop));
        m->n_metadata_log -= drop;
    }
    return HS_OK;
}

hs_status ice_metadata_remove_snapshots(ice_table_metadata *m, const int64_t *ids, int n,
                                        hs_error *err)
{
    for (int k = 0; k < n; k++)
        if (ids[k] == m->current_snapshot_id)
            return hs_err_set(err, HS_INVALID, "cannot remove the current snapshot %lld",
                              (long long)ids[k]);
    for (int k = 0; k < n; k++) {
        for (int i = 0; i < m->n_snapshots; i++) {
            if (m->snapshots[i].snapshot_id != ids[k])
                continue;
            ice_snapshot_clear(&m->snapshots[i]);
            memmove(m->snapshots + i, m->snapshots + i + 1,
                    sizeof *m->snapshots * (size_t)(m->n_snapshots - i - 1));
            m->n_snapshots--;
            break;
        }
        for (int i = 0; i < m->n_refs;) {
            if (m->refs[i].snapshot_id == ids[k] && strcmp(m->refs[i].name, "main") != 0) {
                hs_free(m->refs[i].name);
                memmove(m->refs + i, m->refs + i + 1, sizeof *m->refs * (size_t)(m->n_refs - i - 1));
                m->n_refs--;
            } else {
                i++;
            }
        }
        int w = 0;
        for (int i = 0; i < m->n_snapshot_log; i++)
            if (m->snapshot_log[i].snapshot_id != ids[k])
                m->snapshot_log[w++] = m->snapshot_log[i];
        m->n_snapshot_log = w;
    }
    m->last_updated_ms = ice_now_ms();
    return HS_OK;
}

/* ------------------------------------------------------ ctypes helpers */

char *ice_metadata_json_roundtrip(const char *json, hs_error *err)
{
    ice_table_metadata m;
    if (ice_metadata_parse(json, strlen(json), &m, err) != HS_OK)
        return NULL;
    hs_buf out = {0};
    hs_status st = ice_metadata_to_json(&m, &out, err);
    ice_metadata_free(&m);
    if (st != HS_OK) {
        hs_buf_free(&out);
        return NULL;
    }
    return (char *)hs_buf_detach(&out, NULL);
}

void ice_debug_free(void *p) { hs_free(p); }

char *ice_debug_new_metadata(const char *location, const char *schema_json, const char *spec_json,
                             const char *sort_json, int format_version, hs_error *err)
{
    ice_schema s;
    ice_partition_spec spec = {0};
    ice_sort_order order = {0};
    ice_table_metadata m;
    hs_buf out = {0};
    memset(&m, 0, sizeof m);
    hs_status st = ice_schema_parse_json(schema_json, strlen(schema_json), &s, err);
    if (st != HS_OK)
        return NULL;
    if (spec_json)
        st = ice_spec_parse_json(spec_json, strlen(spec_json), 0, &spec, err);
    if (st == HS_OK && sort_json)
        st = ice_sort_order_parse_json(sort_json, strlen(sort_json), &order, err);
    if (st == HS_OK)
        st = ice_metadata_new(location, &s, &spec, &order, NULL, format_version, &m, err);
    if (st == HS_OK)
        st = ice_metadata_to_json(&m, &out, err);
    ice_schema_clear(&s);
    ice_spec_clear(&spec);
    ice_sort_order_clear(&order);
    ice_metadata_free(&m);
    if (st != HS_OK) {
        hs_buf_free(&out);
        return NULL;
    }
    return (char *)hs_buf_detach(&out, NULL);
}

static hs_status copy_out(hs_buf *b, char *out, size_t out_len, hs_error *err)
{
    if (b->len + 1 > out_len)
        return hs_err_set(err, HS_INVALID, "result of %zu bytes does not fit", b->len);
    memcpy(out, b->data ? (const char *)b->data : "", b->len);
    out[b->len] = '\0';
    return HS_OK;
}

int ice_debug_transform(const char *transform, const char *type, const char *value_json,
                        char *out, size_t out_len, hs_error *err)
{
    ice_transform t;
    hs_field f;
    ice_value in, res;
    hs_buf b = {0};
    memset(&in, 0, sizeof in);
    memset(&res, 0, sizeof res);
    hs_field_init(&f, "value", HS_TYPE_NA, true);
    hs_status st = ice_transform_parse(transform, &t, err);
    if (st == HS_OK)
        st = ice_type_parse(type, &f, err);
    if (st == HS_OK)
        st = ice_value_from_json(&f, value_json, strlen(value_json), &in, err);
    if (st == HS_OK)
        st = ice_transform_apply(&t, &in, &res, err);
    if (st == HS_OK && ice_value_to_json(&res, &b) != HS_OK)
        st = hs_err_nomem(err, 0);
    if (st == HS_OK)
        st = copy_out(&b, out, out_len, err);
    hs_buf_free(&b);
    ice_value_clear(&in);
    ice_value_clear(&res);
    hs_field_clear(&f);
    return (int)st;
}

int ice_debug_value_to_bytes(const char *type, const char *value_json, char *out_hex,
                             size_t out_len, hs_error *err)
{
    static const char hx[] = "0123456789abcdef";
    hs_field f;
    ice_value v;
    hs_buf b = {0}, h = {0};
    memset(&v, 0, sizeof v);
    hs_field_init(&f, "value", HS_TYPE_NA, true);
    hs_status st = ice_type_parse(type, &f, err);
    if (st == HS_OK)
        st = ice_value_from_json(&f, value_json, strlen(value_json), &v, err);
    if (st == HS_OK && ice_value_to_bytes(&v, &b) != HS_OK)
        st = hs_err_nomem(err, 0);
    for (size_t i = 0; st == HS_OK && i < b.len; i++) {
        char two[2] = {hx[b.data[i] >> 4], hx[b.data[i] & 15]};
        if (hs_buf_append(&h, two, 2) != HS_OK)
            st = hs_err_nomem(err, 0);
    }
    if (st == HS_OK)
        st = copy_out(&h, out_hex, out_len, err);
    hs_buf_free(&b);
    hs_buf_free(&h);
    ice_value_clear(&v);
    hs_field_clear(&f);
    return (int)st;
}

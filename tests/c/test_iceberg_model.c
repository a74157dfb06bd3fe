/*
 * tests/c/test_iceberg_model.c - the Iceberg table model: transforms against the
 * spec's test vectors (Appendix B bucket hashes, truncate examples), the
 * single-value binary form, bound truncation, partition paths, metadata.json
 * parse/write round trips for v1/v2/v3, mutations, schema evolution, bad input
 * and allocation failures.  The Python oracle (test_iceberg_model_oracle.py)
 * checks the same code against pyiceberg.
 */
#include "harness.h"

#include "base/mem.h"
#include "iceberg/model.h"

#include <math.h>
#include <string.h>

static hs_status field_of(const char *type, hs_field *f)
{
    hs_field_init(f, "v", HS_TYPE_NA, true);
    return ice_type_parse(type, f, NULL);
}

/* transform(type, value JSON) -> result JSON, compared with expect */
static void check_tr(const char *tr, const char *type, const char *val, const char *expect)
{
    char out[256];
    hs_error err = {0};
    int s = ice_debug_transform(tr, type, val, out, sizeof out, &err);
    CHECK(s == 0);
    if (s != 0 || strcmp(out, expect) != 0) {
        fprintf(stderr, "  %s(%s %s) = %s (%s), want %s\n", tr, type, val, s ? "error" : out,
                err.msg, expect);
        hs_test_failures++;
    }
}

static int32_t hash_of(const char *type, const char *val)
{
    hs_field f;
    ice_value v = {0};
    int32_t h = 0;
    if (field_of(type, &f) == HS_OK && ice_value_from_json(&f, val, strlen(val), &v, NULL) == HS_OK)
        h = ice_bucket_hash(&v);
    else
        fprintf(stderr, "  cannot parse %s %s\n", type, val);
    ice_value_clear(&v);
    hs_field_clear(&f);
    return h;
}

static void test_bucket_hash_vectors(void)
{
    /* spec Appendix B */
    CHECK(hash_of("int", "34") == 2017239379);
    CHECK(hash_of("long", "34") == 2017239379);
    CHECK(hash_of("decimal(4, 2)", "\"14.20\"") == -500754589);
    CHECK(hash_of("date", "\"2017-11-16\"") == -653330422);
    CHECK(hash_of("time", "\"22:31:08\"") == -662762989);
    CHECK(hash_of("timestamp", "\"2017-11-16T22:31:08\"") == -2047944441);
    CHECK(hash_of("timestamptz", "\"2017-11-16T14:31:08-08:00\"") == -2047944441);
    CHECK(hash_of("timestamp_ns", "\"2017-11-16T22:31:08\"") == -2047944441);
    CHECK(hash_of("timestamptz_ns", "\"2017-11-16T14:31:08-08:00\"") == -2047944441);
    CHECK(hash_of("string", "\"iceberg\"") == 1210000089);
    CHECK(hash_of("uuid", "\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"") == 1488055340);
    CHECK(hash_of("fixed[4]", "\"00010203\"") == -188683207);
    CHECK(hash_of("binary", "\"00010203\"") == -188683207);
    /* bucket = (hash & INT_MAX) % N */
    check_tr("bucket[16]", "int", "34", "3"); /* 2017239379 % 16 */
    check_tr("bucket[100]", "string", "\"iceberg\"", "89");
    check_tr("bucket[7]", "long", "null", "null");
}

static void test_truncate_and_time(void)
{
    /* spec "Truncate Transform Details" */
    check_tr("truncate[10]", "int", "1", "0");
    check_tr("truncate[10]", "int", "-1", "-10");
    check_tr("truncate[10]", "long", "1", "0");
    check_tr("truncate[10]", "long", "-1", "-10");
    check_tr("truncate[50]", "decimal(9, 2)", "\"10.65\"", "\"10.50\"");
    check_tr("truncate[3]", "string", "\"iceberg\"", "\"ice\"");
    /* Java's long arithmetic wraps at the edge; so do we (without UB) */
    check_tr("truncate[17]", "long", "-9223372036854775808", "9223372036854775800");
    check_tr("truncate[3]", "binary", "\"00010203\"", "\"000102\"");
    check_tr("truncate[2]", "string", "\"\xc3\xa9t\xc3\xa9\"", "\"\xc3\xa9t\"");
    check_tr("identity", "string", "\"x\"", "\"x\"");
    check_tr("void", "int", "5", "null");
    /* dates and timestamps: floor toward negative infinity */
    check_tr("year", "date", "\"2017-11-16\"", "47");
    check_tr("month", "date", "\"2017-11-16\"", "574");
    check_tr("day", "date", "\"2017-11-16\"", "\"2017-11-16\"");
    check_tr("year", "date", "\"1969-12-31\"", "-1");
    check_tr("month", "date", "\"1969-12-31\"", "-1");
    check_tr("year", "timestamp", "\"1969-12-31T23:59:59.999999\"", "-1");
    check_tr("month", "timestamp", "\"1969-12-31T23:59:59.999999\"", "-1");
    check_tr("day", "timestamp", "\"1969-12-31T23:59:59.999999\"", "\"1969-12-31\"");
    check_tr("hour", "timestamp", "\"1969-12-31T23:59:59.999999\"", "-1");
    check_tr("hour", "timestamptz", "\"2017-11-16T22:31:08+00:00\"", "419686");
    check_tr("hour", "timestamp_ns", "\"1970-01-01T00:00:00.000000001\"", "0");
    check_tr("day", "timestamp_ns", "\"1969-12-31T23:59:59.999999999\"", "\"1969-12-31\"");
    /* transforms that do not apply */
    char out[64];
    hs_error err = {0};
    CHECK(ice_debug_transform("hour", "date", "\"2017-11-16\"", out, sizeof out, &err) == HS_INVALID);
    CHECK(ice_debug_transform("bucket[4]", "double", "1.5", out, sizeof out, &err) == HS_INVALID);
    CHECK(ice_debug_transform("bucket[0]", "int", "1", out, sizeof out, &err) == HS_INVALID);
}

static void check_bytes(const char *type, const char *val, const char *hex)
{
    char out[128];
    hs_error err = {0};
    int s = ice_debug_value_to_bytes(type, val, out, sizeof out, &err);
    if (s != 0 || strcmp(out, hex) != 0) {
        fprintf(stderr, "  bytes(%s %s) = %s (%s), want %s\n", type, val, s ? "error" : out,
                err.msg, hex);
        hs_test_failures++;
    }
    hs_test_checks++;
    /* and back: from_bytes(to_bytes(v)) == v */
    hs_field f;
    ice_value a = {0}, b = {0};
    hs_buf buf = {0};
    if (field_of(type, &f) == HS_OK && ice_value_from_json(&f, val, strlen(val), &a, NULL) == HS_OK &&
        ice_value_to_bytes(&a, &buf) == HS_OK) {
        CHECK(ice_value_from_bytes(&f, buf.data, buf.len, &b, &err) == HS_OK);
        CHECK(ice_value_equals(&a, &b));
    }
    hs_buf_free(&buf);
    ice_value_clear(&a);
    ice_value_clear(&b);
    hs_field_clear(&f);
}

static void test_single_value_bytes(void)
{
    check_bytes("boolean", "true", "01");
    check_bytes("int", "1", "01000000");
    check_bytes("int", "-2", "feffffff");
    check_bytes("long", "1", "0100000000000000");
    check_bytes("float", "1.0", "0000803f");
    check_bytes("double", "1.0", "000000000000f03f");
    check_bytes("date", "\"1970-01-02\"", "01000000");
    check_bytes("time", "\"00:00:00.000001\"", "0100000000000000");
    check_bytes("timestamp", "\"1970-01-01T00:00:00.000001\"", "0100000000000000");
    check_bytes("string", "\"iceberg\"", "69636562657267");
    check_bytes("uuid", "\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"",
                "f79c3e09677c4bbda4793f349cb785e7");
    check_bytes("fixed[2]", "\"ab01\"", "ab01");
    check_bytes("binary", "\"\"", "");
    check_bytes("decimal(4, 2)", "\"14.20\"", "058c");
    check_bytes("decimal(9, 2)", "\"-0.01\"", "ff");
    check_bytes("decimal(9, 2)", "\"1.28\"", "0080");
    check_bytes("decimal(38, 0)", "\"-129\"", "ff7f");

    /* from_bytes rejects wrong lengths; accepts int bounds for a promoted long */
    hs_field f;
    ice_value v = {0};
    hs_error err = {0};
    REQUIRE(field_of("int", &f) == HS_OK);
    CHECK(ice_value_from_bytes(&f, (const uint8_t *)"\1\0\0", 3, &v, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "3-byte") != NULL);
    hs_field_clear(&f);
    REQUIRE(field_of("long", &f) == HS_OK);
    CHECK(ice_value_from_bytes(&f, (const uint8_t *)"\xfe\xff\xff\xff", 4, &v, NULL) == HS_OK);
    CHECK(v.v.i == -2);
    hs_field_clear(&f);
    REQUIRE(field_of("decimal(9, 2)", &f) == HS_OK);
    CHECK(ice_value_from_bytes(&f, (const uint8_t *)"", 0, &v, NULL) == HS_CORRUPT);
    hs_field_clear(&f);
}

static void set_str(ice_value *v, const char *s)
{
    memset(v, 0, sizeof *v);
    CHECK(ice_value_set_bytes(v, ICE_T_STRING, s, strlen(s)) == HS_OK);
}

static bool val_is(const ice_value *v, const char *s)
{
    return v->len == strlen(s) && memcmp(v->bytes ? v->bytes : (uint8_t *)"", s, v->len) == 0;
}

static void test_bound_truncation(void)
{
    ice_value v, lo = {0}, hi = {0};
    bool ok = false;
    set_str(&v, "abcdefghijklmnopqrstuvwxyz");
    CHECK(ice_value_truncate_lower(&v, 16, &lo) == HS_OK);
    CHECK(val_is(&lo, "abcdefghijklmnop"));
    CHECK(ice_value_truncate_upper(&v, 16, &hi, &ok) == HS_OK && ok);
    CHECK(val_is(&hi, "abcdefghijklmnoq"));
    CHECK(ice_value_compare(&lo, &v) <= 0 && ice_value_compare(&hi, &v) > 0);
    ice_value_clear(&v);
    ice_value_clear(&lo);
    ice_value_clear(&hi);

    /* short strings are kept whole */
    set_str(&v, "short");
    CHECK(ice_value_truncate_upper(&v, 16, &hi, &ok) == HS_OK && ok && val_is(&hi, "short"));
    ice_value_clear(&v);
    ice_value_clear(&hi);

    /* code points, not bytes: 17 x U+00E9 -> 16 of them; upper ends in U+00EA */
    char s[64] = "", e[64] = "";
    for (int i = 0; i < 17; i++)
        strcat(s, "\xc3\xa9");
    for (int i = 0; i < 15; i++)
        strcat(e, "\xc3\xa9");
    set_str(&v, s);
    CHECK(ice_value_truncate_lower(&v, 16, &lo) == HS_OK && lo.len == 32);
    strcat(e, "\xc3\xaa");
    CHECK(ice_value_truncate_upper(&v, 16, &hi, &ok) == HS_OK && ok && val_is(&hi, e));
    ice_value_clear(&v);
    ice_value_clear(&lo);
    ice_value_clear(&hi);

    /* a last code point of U+10FFFF cannot grow: the one before it is incremented */
    set_str(&v, "ab\xf4\x8f\xbf\xbf" "c");
    CHECK(ice_value_truncate_upper(&v, 3, &hi, &ok) == HS_OK && ok && val_is(&hi, "ac"));
    ice_value_clear(&hi);
    ice_value_clear(&v);
    /* U+D7FF + 1 skips the surrogates */
    set_str(&v, "\xed\x9f\xbfxyz");
    CHECK(ice_value_truncate_upper(&v, 1, &hi, &ok) == HS_OK && ok && val_is(&hi, "\xee\x80\x80"));
    ice_value_clear(&hi);
    ice_value_clear(&v);

    /* binary: carry over 0xff; all 0xff has no upper bound */
    memset(&v, 0, sizeof v);
    CHECK(ice_value_set_bytes(&v, ICE_T_BINARY, "\x01\xff\xff\x05", 4) == HS_OK);
    CHECK(ice_value_truncate_upper(&v, 3, &hi, &ok) == HS_OK && ok && val_is(&hi, "\x02"));
    ice_value_clear(&hi);
    CHECK(ice_value_set_bytes(&v, ICE_T_BINARY, "\xff\xff\xff\x05", 4) == HS_OK);
    CHECK(ice_value_truncate_upper(&v, 3, &hi, &ok) == HS_OK && !ok);
    ice_value_clear(&hi);
    ice_value_clear(&v);
}

static void test_compare(void)
{
    ice_value a = {0}, b = {0};
    a.type = b.type = ICE_T_DOUBLE;
    a.v.d = -0.0;
    b.v.d = 0.0;
    CHECK(ice_value_compare(&a, &b) < 0);
    a.v.d = NAN;
    b.v.d = INFINITY;
    CHECK(ice_value_compare(&a, &b) > 0);
    a.v.d = -INFINITY;
    b.v.d = -1e300;
    CHECK(ice_value_compare(&a, &b) < 0);
    /* strings compare as unsigned bytes */
    set_str(&a, "\xc3\xa9");
    set_str(&b, "z");
    CHECK(ice_value_compare(&a, &b) > 0);
    ice_value_clear(&a);
    ice_value_clear(&b);
    CHECK(ice_value_set_decimal(&a, -5, 9, 2) == HS_OK);
    CHECK(ice_value_set_decimal(&b, 3, 9, 2) == HS_OK);
    CHECK(ice_value_compare(&a, &b) < 0);
    ice_value_clear(&a);
    ice_value_clear(&b);
    a.type = ICE_T_INT;
    a.is_null = true;
    b.type = ICE_T_INT;
    b.v.i = INT32_MIN;
    CHECK(ice_value_compare(&a, &b) < 0);
}

/* A schema exercising every type: struct<id long not null, s string, ...> */
static void build_schema(ice_schema *s, int fv)
{
    static const char *types[] = {"boolean", "int", "long", "float", "double", "decimal(9, 2)",
                                  "date", "time", "timestamp", "timestamptz", "string", "uuid",
                                  "fixed[3]", "binary", "timestamp_ns", "timestamptz_ns"};
    int n = fv >= 3 ? 16 : 14;
    memset(s, 0, sizeof *s);
    hs_field_init(&s->root, "table", HS_TYPE_STRUCT, false);
    int32_t id = 100;
    for (int i = 0; i < n; i++) {
        hs_field f;
        char name[16];
        snprintf(name, sizeof name, "c_%d", i);
        hs_field_init(&f, name, HS_TYPE_NA, i != 2);
        REQUIRE(ice_type_parse(types[i], &f, NULL) == HS_OK);
        f.field_id = id++;
        REQUIRE(hs_field_add_child(&s->root, &f) == HS_OK);
    }
    /* list<struct<x int>> */
    hs_field st, x, lst, mp, ent, k, v;
    hs_field_init(&st, "element", HS_TYPE_STRUCT, true);
    st.field_id = id++;
    hs_field_init(&x, "x", HS_TYPE_INT32, true);
    x.field_id = id++;
    REQUIRE(hs_field_set_meta(&x, "iceberg.doc", "\"the x\"") == HS_OK);
    REQUIRE(hs_field_add_child(&st, &x) == HS_OK);
    hs_field_init_list(&lst, "points", true, &st);
    lst.field_id = id++;
    REQUIRE(hs_field_add_child(&s->root, &lst) == HS_OK);
    /* map<string, double> */
    hs_field_init(&mp, "tags", HS_TYPE_MAP, true);
    mp.field_id = id++;
    hs_field_init(&ent, "entries", HS_TYPE_STRUCT, false);
    hs_field_init(&k, "key", HS_TYPE_STRING, false);
    k.field_id = id++;
    hs_field_init(&v, "value", HS_TYPE_FLOAT64, true);
    v.field_id = id++;
    REQUIRE(hs_field_add_child(&ent, &k) == HS_OK);
    REQUIRE(hs_field_add_child(&ent, &v) == HS_OK);
    REQUIRE(hs_field_add_child(&mp, &ent) == HS_OK);
    REQUIRE(hs_field_add_child(&s->root, &mp) == HS_OK);
    s->identifier_ids = hs_malloc(sizeof(int32_t));
    REQUIRE(s->identifier_ids);
    s->identifier_ids[0] = 102; /* c_2: long not null */
    s->n_identifier_ids = 1;
}

static void new_table(ice_table_metadata *m, int fv)
{
    ice_schema s;
    ice_partition_spec spec = {0};
    ice_sort_order order = {0};
    ice_kv props = {0};
    hs_error err = {0};
    ice_transform b16, day, ident;
    build_schema(&s, fv);
    CHECK(ice_transform_parse("bucket[16]", &b16, NULL) == HS_OK);
    CHECK(ice_transform_parse("day", &day, NULL) == HS_OK);
    CHECK(ice_transform_parse("identity", &ident, NULL) == HS_OK);
    CHECK_OK(ice_spec_add_field(&spec, &s, 102, &b16, NULL, -1, &err), &err);
    CHECK_OK(ice_spec_add_field(&spec, &s, 108, &day, NULL, -1, &err), &err);
    CHECK(strcmp(spec.fields[0].name, "c_2_bucket") == 0);
    CHECK(strcmp(spec.fields[1].name, "c_8_day") == 0);
    CHECK(ice_sort_order_add_field(&order, 110, &ident, ICE_SORT_DESC, ICE_NULLS_LAST) == HS_OK);
    CHECK(ice_kv_set(&props, "owner", "tests") == HS_OK);
    CHECK_OK(ice_metadata_new("/tmp/t1", &s, &spec, &order, &props, fv, m, &err), &err);
    ice_schema_clear(&s);
    ice_spec_clear(&spec);
    ice_sort_order_clear(&order);
    ice_kv_clear(&props);
}

static void roundtrip(const ice_table_metadata *m, ice_table_metadata *back, hs_buf *j1)
{
    hs_error err = {0};
    hs_buf j2 = {0};
    CHECK_OK(ice_metadata_to_json(m, j1, &err), &err);
    CHECK_OK(ice_metadata_parse((const char *)j1->data, j1->len, back, &err), &err);
    CHECK_OK(ice_metadata_to_json(back, &j2, &err), &err);
    CHECK(j1->len == j2.len && memcmp(j1->data, j2.data, j1->len) == 0);
    hs_buf_free(&j2);
}

static void test_metadata_new_and_roundtrip(void)
{
    for (int fv = 1; fv <= 3; fv++) {
        ice_table_metadata m, back;
        hs_buf j = {0};
        new_table(&m, fv);
        REQUIRE(m.format_version == fv);
        /* fresh ids from 1 in Java's order: top-level fields first */
        const ice_schema *cs = ice_metadata_current_schema(&m);
        REQUIRE(cs);
        CHECK(cs->schema_id == 0);
        CHECK(cs->root.children[0].field_id == 1);
        int ntop = cs->root.n_children;
        const hs_field *pts = ice_schema_find_name(cs, "points", true);
        REQUIRE(pts);
        CHECK(pts->field_id == ntop - 1);
        CHECK(pts->children[0].field_id == ntop + 1);            /* element */
        /* then depth first: points.element.x before the map's key and value */
        CHECK(ice_schema_find_name(cs, "points.element.x", true)->field_id == ntop + 2);
        CHECK(ice_schema_find_name(cs, "points.x", true)->field_id == ntop + 2);
        CHECK(ice_schema_find_name(cs, "POINTS.X", false)->field_id == ntop + 2);
        CHECK(ice_schema_find_name(cs, "tags.key", true)->field_id == ntop + 3);
        CHECK(ice_schema_find_name(cs, "tags.value", true)->field_id == ntop + 4);
        CHECK(m.last_column_id == ntop + 4);
        CHECK(ice_schema_highest_id(cs) == ntop + 4);
        CHECK(cs->identifier_ids[0] == 3);
        hs_buf nm = {0};
        CHECK(ice_schema_name_of(cs, ntop + 2, &nm) == HS_OK);
        CHECK(strcmp(hs_buf_cstr(&nm), "points.element.x") == 0);
        hs_buf_free(&nm);
        const ice_partition_spec *sp = ice_metadata_default_spec(&m);
        REQUIRE(sp && sp->n_fields == 2);
        CHECK(sp->spec_id == 0 && sp->fields[0].field_id == 1000 && sp->fields[1].field_id == 1001);
        CHECK(sp->fields[0].source_id == 3 && sp->fields[1].source_id == 9);
        CHECK(m.last_partition_id == 1001);
        CHECK(m.default_sort_order_id == 1);
        CHECK(ice_metadata_default_sort_order(&m)->fields[0].source_id == 11);
        CHECK(m.current_snapshot_id == ICE_NO_SNAPSHOT);

        roundtrip(&m, &back, &j);
        const char *txt = hs_buf_cstr(&j);
        CHECK(strstr(txt, fv >= 3 ? "\"current-snapshot-id\":null" : "\"current-snapshot-id\":-1"));
        CHECK((strstr(txt, "\"next-row-id\":0") != NULL) == (fv >= 3));
        CHECK((strstr(txt, "\"last-sequence-number\"") != NULL) == (fv >= 2));
        CHECK((strstr(txt, "\"schema\":{") != NULL) == (fv == 1));
        CHECK(strstr(txt, "\"doc\":\"the x\"") != NULL);
        CHECK(ice_schema_equals(ice_metadata_current_schema(&back), cs));
        CHECK(ice_spec_equals(ice_metadata_default_spec(&back), sp));
        CHECK(strcmp(ice_kv_get(&back.properties, "owner"), "tests") == 0);
        hs_buf_free(&j);
        ice_metadata_free(&back);
        ice_metadata_free(&m);
    }
}

static void make_snapshot(ice_snapshot *s, int64_t id, int64_t parent, int64_t seq, int64_t ts)
{
    memset(s, 0, sizeof *s);
    s->snapshot_id = id;
    s->has_parent = parent > 0;
    s->parent_id = parent;
    s->sequence_number = seq;
    s->timestamp_ms = ts;
    s->manifest_list = hs_strdup("/tmp/t1/metadata/snap.avro");
    CHECK(ice_kv_set(&s->summary, "operation", "append") == HS_OK);
    CHECK(ice_kv_set(&s->summary, "added-records", "10") == HS_OK);
    s->has_schema_id = true;
}

static void test_snapshots_refs_timetravel(void)
{
    ice_table_metadata m, back, cp;
    hs_error err = {0};
    hs_buf j = {0};
    new_table(&m, 2);
    ice_snapshot s;
    make_snapshot(&s, 11, 0, 1, 1000);
    CHECK_OK(ice_metadata_add_snapshot(&m, &s, NULL, &err), &err);
    ice_snapshot_clear(&s);
    make_snapshot(&s, 22, 11, 2, 2000);
    CHECK_OK(ice_metadata_add_snapshot(&m, &s, NULL, &err), &err);
    /* same id again, and a stale sequence number, are refused */
    CHECK(ice_metadata_add_snapshot(&m, &s, NULL, &err) == HS_INVALID);
    ice_snapshot_clear(&s);
    make_snapshot(&s, 33, 22, 2, 3000);
    CHECK(ice_metadata_add_snapshot(&m, &s, NULL, NULL) == HS_INVALID);
    ice_snapshot_clear(&s);
    CHECK(m.current_snapshot_id == 22 && m.last_sequence_number == 2);
    CHECK(m.n_snapshot_log == 2);
    CHECK(ice_metadata_snapshot_by_ref(&m, "main")->snapshot_id == 22);
    CHECK_OK(ice_metadata_set_ref(&m, "v1", 11, true, &err), &err);
    CHECK(ice_metadata_set_ref(&m, "v1", 11, false, NULL) == HS_INVALID);
    CHECK(ice_metadata_set_ref(&m, "nope", 999, true, NULL) == HS_NOT_FOUND);
    CHECK(ice_metadata_snapshot_by_ref(&m, "v1")->snapshot_id == 11);
    CHECK(ice_metadata_snapshot_as_of(&m, 999) == NULL);
    CHECK(ice_metadata_snapshot_as_of(&m, 1500)->snapshot_id == 11);
    CHECK(ice_metadata_snapshot_as_of(&m, 2000)->snapshot_id == 22);
    CHECK_OK(ice_metadata_rollback(&m, 11, &err), &err);
    CHECK(m.current_snapshot_id == 11 && ice_metadata_current_snapshot(&m)->snapshot_id == 11);
    CHECK(ice_metadata_rollback(&m, 5, NULL) == HS_NOT_FOUND);
    CHECK_OK(ice_metadata_set_property(&m, "a", "1", &err), &err);
    CHECK(ice_metadata_remove_property(&m, "owner"));
    CHECK(!ice_metadata_remove_property(&m, "owner"));
    CHECK_OK(ice_metadata_add_metadata_log(&m, 5, "/tmp/t1/metadata/v1.metadata.json", 2, &err), &err);
    CHECK_OK(ice_metadata_add_metadata_log(&m, 6, "/tmp/t1/metadata/v2.metadata.json", 2, &err), &err);
    CHECK_OK(ice_metadata_add_metadata_log(&m, 7, "/tmp/t1/metadata/v3.metadata.json", 2, &err), &err);
    CHECK(m.n_metadata_log == 2 && m.metadata_log[0].timestamp_ms == 6);
    m.statistics_json = hs_strdup("[{\"snapshot-id\":11,\"statistics-path\":\"/x.puffin\","
                                  "\"file-size-in-bytes\":10,\"file-footer-size-in-bytes\":5,"
                                  "\"blob-metadata\":[]}]");

    roundtrip(&m, &back, &j);
    CHECK(strstr(hs_buf_cstr(&j), "\"statistics-path\":\"/x.puffin\"") != NULL);
    CHECK(back.n_refs == 2 && ice_metadata_ref(&back, "v1")->is_tag);
    CHECK(back.n_snapshot_log == 3 && back.snapshot_log[2].snapshot_id == 11);
    CHECK(strcmp(ice_snapshot_operation(ice_metadata_snapshot(&back, 22)), "append") == 0);
    CHECK(ice_metadata_snapshot(&back, 22)->parent_id == 11);

    /* deep copy is independent */
    CHECK_OK(ice_metadata_copy(&back, &cp, &err), &err);
    ice_metadata_free(&back);
    hs_buf j2 = {0};
    CHECK_OK(ice_metadata_to_json(&cp, &j2, &err), &err);
    CHECK(j.len == j2.len && memcmp(j.data, j2.data, j.len) == 0);
    hs_buf_free(&j2);

    /* expire 22 (not current): gone from snapshots and the log */
    int64_t ids[] = {22};
    CHECK_OK(ice_metadata_remove_snapshots(&cp, ids, 1, &err), &err);
    CHECK(!ice_metadata_snapshot(&cp, 22) && cp.n_snapshot_log == 2);
    int64_t cur[] = {11};
    CHECK(ice_metadata_remove_snapshots(&cp, cur, 1, NULL) == HS_INVALID);
    ice_metadata_free(&cp);

    /* upgrade to v3: next-row-id starts at 0; row lineage advances it */
    CHECK(ice_metadata_upgrade(&m, 1, NULL) == HS_INVALID);
    CHECK(ice_metadata_upgrade(&m, 4, NULL) == HS_UNSUPPORTED);
    CHECK_OK(ice_metadata_upgrade(&m, 3, &err), &err);
    CHECK(m.format_version == 3 && m.next_row_id == 0);
    make_snapshot(&s, 44, 11, 3, 4000);
    s.has_first_row_id = s.has_added_rows = true;
    s.first_row_id = 0;
    s.added_rows = 25;
    CHECK_OK(ice_metadata_add_snapshot(&m, &s, NULL, &err), &err);
    ice_snapshot_clear(&s);
    CHECK(m.next_row_id == 25);
    make_snapshot(&s, 55, 44, 4, 5000);
    s.has_first_row_id = true;
    s.first_row_id = 3; /* overlaps assigned ids */
    CHECK(ice_metadata_add_snapshot(&m, &s, NULL, NULL) == HS_INVALID);
    ice_snapshot_clear(&s);
    hs_buf_free(&j);
    roundtrip(&m, &back, &j);
    CHECK(back.next_row_id == 25 && ice_metadata_snapshot(&back, 44)->first_row_id == 0 &&
          ice_metadata_snapshot(&back, 44)->added_rows == 25);
    CHECK(strstr(hs_buf_cstr(&j), "\"first-row-id\":0") != NULL);
    ice_metadata_free(&back);
    hs_buf_free(&j);
    ice_metadata_free(&m);
}

static void test_specs_and_orders(void)
{
    ice_table_metadata m;
    hs_error err = {0};
    new_table(&m, 2);
    const ice_schema *cs = ice_metadata_current_schema(&m);
    ice_partition_spec spec = {0};
    ice_transform b16, tr4, ident;
    CHECK(ice_transform_parse("bucket[16]", &b16, NULL) == HS_OK);
    CHECK(ice_transform_parse("truncate[4]", &tr4, NULL) == HS_OK);
    CHECK(ice_transform_parse("identity", &ident, NULL) == HS_OK);
    /* keep the bucket field (same id), drop day, add truncate */
    CHECK_OK(ice_spec_add_field(&spec, cs, 3, &b16, NULL, -1, &err), &err);
    CHECK_OK(ice_spec_add_field(&spec, cs, 11, &tr4, NULL, -1, &err), &err);
    CHECK(ice_spec_add_field(&spec, cs, 11, &tr4, NULL, -1, NULL) == HS_INVALID); /* dup name */
    CHECK(ice_spec_add_field(&spec, cs, 4, &tr4, "f", -1, NULL) == HS_INVALID);   /* float */
    CHECK(ice_spec_add_field(&spec, cs, 777, &ident, "g", -1, NULL) == HS_NOT_FOUND);
    int32_t id = -1;
    CHECK_OK(ice_metadata_add_spec(&m, &spec, true, &id, &err), &err);
    CHECK(id == 1 && m.default_spec_id == 1);
    const ice_partition_spec *sp = ice_metadata_spec(&m, 1);
    CHECK(sp->fields[0].field_id == 1000 && sp->fields[1].field_id == 1002);
    CHECK(m.last_partition_id == 1002);
    /* the same spec again is reused */
    int32_t id2 = -1;
    CHECK_OK(ice_metadata_add_spec(&m, &spec, true, &id2, &err), &err);
    CHECK(id2 == 1 && m.n_specs == 2);
    ice_spec_clear(&spec);

    /* partition type and path */
    hs_field pt = {0};
    CHECK_OK(ice_spec_partition_type(sp, cs, &pt, &err), &err);
    CHECK(pt.n_children == 2 && pt.children[0].type == HS_TYPE_INT32 &&
          pt.children[0].field_id == 1000 && pt.children[1].type == HS_TYPE_STRING);
    hs_field_clear(&pt);
    ice_value vals[2];
    memset(vals, 0, sizeof vals);
    ice_value_set_int(&vals[0], ICE_T_INT, 7);
    set_str(&vals[1], "a b/c");
    hs_buf path = {0};
    CHECK_OK(ice_spec_partition_path(sp, vals, &path, &err), &err);
    CHECK(strcmp(hs_buf_cstr(&path), "c_2_bucket=7/c_10_trunc=a+b%2Fc") == 0);
    hs_buf_free(&path);
    ice_value_clear(&vals[1]);
    /* human strings of time transforms */
    const ice_partition_spec *sp0 = ice_metadata_spec(&m, 0);
    ice_value_set_int(&vals[0], ICE_T_INT, 3);
    ice_value_set_int(&vals[1], ICE_T_DATE, 19724); /* 2024-01-02 */
    CHECK_OK(ice_spec_partition_path(sp0, vals, &path, &err), &err);
    CHECK(strcmp(hs_buf_cstr(&path), "c_2_bucket=3/c_8_day=2024-01-02") == 0);
    hs_buf_free(&path);
    ice_transform mon, hr, yr;
    CHECK(ice_transform_parse("month", &mon, NULL) == HS_OK);
    CHECK(ice_transform_parse("hour", &hr, NULL) == HS_OK);
    CHECK(ice_transform_parse("year", &yr, NULL) == HS_OK);
    ice_value_set_int(&vals[0], ICE_T_INT, 648);
    CHECK(ice_value_to_human(&mon, &vals[0], &path) == HS_OK);
    CHECK(strcmp(hs_buf_cstr(&path), "2024-01") == 0);
    hs_buf_reset(&path);
    ice_value_set_int(&vals[0], ICE_T_INT, 19724 * 24 + 13);
    CHECK(ice_value_to_human(&hr, &vals[0], &path) == HS_OK);
    CHECK(strcmp(hs_buf_cstr(&path), "2024-01-02-13") == 0);
    hs_buf_reset(&path);
    ice_value_set_int(&vals[0], ICE_T_INT, -1);
    CHECK(ice_value_to_human(&yr, &vals[0], &path) == HS_OK);
    CHECK(strcmp(hs_buf_cstr(&path), "1969") == 0);
    hs_buf_reset(&path);
    vals[0].is_null = true;
    CHECK(ice_value_to_human(&yr, &vals[0], &path) == HS_OK);
    CHECK(strcmp(hs_buf_cstr(&path), "null") == 0);
    hs_buf_free(&path);

    /* sort orders: unsorted is id 0, new orders get the next id */
    ice_sort_order o = {0};
    CHECK_OK(ice_metadata_add_sort_order(&m, &o, false, &id, &err), &err);
    CHECK(id == 0);
    CHECK(ice_sort_order_add_field(&o, 1, &ident, ICE_SORT_ASC, ICE_NULLS_FIRST) == HS_OK);
    CHECK_OK(ice_metadata_add_sort_order(&m, &o, true, &id, &err), &err);
    CHECK(id == 2 && m.default_sort_order_id == 2);
    ice_sort_order_clear(&o);
    CHECK(ice_sort_order_add_field(&o, 999, &ident, ICE_SORT_ASC, ICE_NULLS_FIRST) == HS_OK);
    CHECK(ice_metadata_add_sort_order(&m, &o, true, &id, NULL) == HS_INVALID);
    ice_sort_order_clear(&o);

    /* transforms: parse/format and result types */
    ice_transform t;
    hs_buf b = {0};
    CHECK(ice_transform_parse("bucket[x]", &t, NULL) == HS_INVALID);
    CHECK(ice_transform_parse("zorder", &t, NULL) == HS_OK && t.kind == ICE_TR_UNKNOWN);
    CHECK(ice_transform_format(&t, &b) == HS_OK && strcmp(hs_buf_cstr(&b), "zorder") == 0);
    hs_buf_free(&b);
    ice_metadata_free(&m);
}

static void test_schema_evolution(void)
{
    ice_table_metadata m;
    hs_error err = {0};
    new_table(&m, 2);
    const ice_schema *cs = ice_metadata_current_schema(&m);
    ice_schema s1, s2, s3;
    int32_t last = m.last_column_id;
    hs_field f;
    /* add an optional struct column: ids from last+1, fields first */
    hs_field_init(&f, "extra", HS_TYPE_STRUCT, true);
    hs_field a, b2;
    hs_field_init(&a, "a", HS_TYPE_INT32, true);
    hs_field_init(&b2, "b", HS_TYPE_STRING, true);
    CHECK(hs_field_add_child(&f, &a) == HS_OK && hs_field_add_child(&f, &b2) == HS_OK);
    CHECK_OK(ice_schema_add_column(cs, NULL, &f, &last, 2, &s1, &err), &err);
    CHECK(last == m.last_column_id + 3);
    CHECK(ice_schema_find_name(&s1, "extra.b", true)->field_id == last);
    CHECK(s1.schema_id == cs->schema_id + 1);
    /* required column without a default: refused in v2 and v3 */
    f.nullable = false;
    CHECK(ice_schema_add_column(cs, NULL, &f, &last, 2, &s2, &err) == HS_INVALID);
    hs_err_clear(&err);
    CHECK(ice_schema_add_column(cs, NULL, &f, &last, 3, &s2, NULL) == HS_INVALID);
    hs_field_clear(&f);
    /* add to a nested struct through a list */
    hs_field_init(&f, "y", HS_TYPE_INT64, true);
    CHECK_OK(ice_schema_add_column(&s1, "points", &f, &last, 2, &s2, &err), &err);
    CHECK(ice_schema_find_name(&s2, "points.element.y", true) != NULL);
    CHECK(ice_schema_add_column(&s2, "points", &f, &last, 2, &s3, NULL) == HS_INVALID); /* exists */
    CHECK(ice_schema_add_column(&s2, "c_1", &f, &last, 2, &s3, NULL) == HS_INVALID); /* not struct */
    hs_field_clear(&f);
    ice_schema_clear(&s1);

    /* rename, move, promote, make optional, drop */
    CHECK_OK(ice_schema_rename_column(&s2, "c_0", "flag", &s1, &err), &err);
    CHECK(ice_schema_find_name(&s1, "flag", true)->field_id == 1);
    CHECK(ice_schema_rename_column(&s1, "flag", "c_1", &s3, NULL) == HS_INVALID);
    CHECK(ice_schema_rename_column(&s1, "tags.key", "k", &s3, NULL) == HS_INVALID);
    ice_schema_clear(&s2);
    CHECK_OK(ice_schema_move_column(&s1, "extra", ICE_MOVE_FIRST, NULL, &s2, &err), &err);
    CHECK(strcmp(s2.root.children[0].name, "extra") == 0);
    ice_schema_clear(&s1);
    CHECK_OK(ice_schema_move_column(&s2, "extra", ICE_MOVE_AFTER, "c_3", &s1, &err), &err);
    CHECK(strcmp(s1.root.children[4].name, "extra") == 0);
    CHECK(strcmp(s1.root.children[3].name, "c_3") == 0);
    ice_schema_clear(&s2);
    CHECK_OK(ice_schema_move_column(&s1, "extra.b", ICE_MOVE_BEFORE, "extra.a", &s2, &err), &err);
    CHECK(strcmp(ice_schema_find_name(&s2, "extra", true)->children[0].name, "b") == 0);
    CHECK(ice_schema_move_column(&s2, "extra.b", ICE_MOVE_BEFORE, "c_1", &s3, NULL) == HS_INVALID);
    ice_schema_clear(&s1);
    hs_field nt;
    hs_field_init(&nt, "", HS_TYPE_NA, true);
    CHECK(ice_type_parse("long", &nt, NULL) == HS_OK);
    CHECK_OK(ice_schema_update_column_type(&s2, "c_1", &nt, &s1, &err), &err);
    CHECK(ice_schema_find_name(&s1, "c_1", true)->type == HS_TYPE_INT64);
    CHECK(ice_schema_update_column_type(&s1, "c_2", &nt, &s3, NULL) == HS_OK); /* same type */
    ice_schema_clear(&s3);
    CHECK(ice_type_parse("int", &nt, NULL) == HS_OK);
    CHECK(ice_schema_update_column_type(&s1, "c_1", &nt, &s3, NULL) == HS_INVALID); /* narrow */
    CHECK(ice_type_parse("decimal(12, 2)", &nt, NULL) == HS_OK);
    ice_schema_clear(&s2);
    CHECK_OK(ice_schema_update_column_type(&s1, "c_5", &nt, &s2, &err), &err);
    CHECK(ice_schema_find_name(&s2, "c_5", true)->precision == 12);
    CHECK(ice_type_parse("decimal(12, 3)", &nt, NULL) == HS_OK);
    CHECK(ice_schema_update_column_type(&s2, "c_5", &nt, &s3, NULL) == HS_INVALID); /* scale */
    CHECK(ice_type_parse("double", &nt, NULL) == HS_OK);
    ice_schema_clear(&s1);
    CHECK_OK(ice_schema_update_column_type(&s2, "c_3", &nt, &s1, &err), &err);
    CHECK(ice_schema_update_column_type(&s1, "c_10", &nt, &s3, NULL) == HS_INVALID); /* string */
    hs_field_clear(&nt);
    CHECK(ice_schema_make_optional(&s1, "c_2", &s3, NULL) == HS_INVALID); /* identifier */
    CHECK(ice_schema_make_optional(&s1, "tags.key", &s3, NULL) == HS_INVALID);
    CHECK(ice_schema_drop_column(&s1, "c_2", &s3, NULL) == HS_INVALID); /* identifier */
    CHECK(ice_schema_drop_column(&s1, "points.element", &s3, NULL) == HS_INVALID);
    CHECK(ice_schema_drop_column(&s1, "nope", &s3, NULL) == HS_NOT_FOUND);
    ice_schema_clear(&s2);
    CHECK_OK(ice_schema_drop_column(&s1, "extra.a", &s2, &err), &err);
    CHECK(ice_schema_find_name(&s2, "extra.a", true) == NULL);
    CHECK_OK(ice_schema_set_doc(&s2, "c_4", "four", &s3, &err), &err);
    CHECK(strcmp(hs_field_get_meta(ice_schema_find_name(&s3, "c_4", true), "iceberg.doc"),
                 "\"four\"") == 0);

    /* the evolved schema is added with the next id and becomes current */
    int32_t id = -1;
    CHECK_OK(ice_metadata_add_schema(&m, &s3, true, &id, &err), &err);
    CHECK(id == 1 && m.current_schema_id == 1 && m.last_column_id == last);
    /* adding it again reuses the id */
    CHECK_OK(ice_metadata_add_schema(&m, &s3, true, &id, &err), &err);
    CHECK(id == 1 && m.n_schemas == 2);
    ice_table_metadata back;
    hs_buf j = {0};
    roundtrip(&m, &back, &j);
    CHECK(ice_schema_equals(ice_metadata_current_schema(&back), &s3));
    hs_buf_free(&j);
    ice_metadata_free(&back);
    ice_schema_clear(&s1);
    ice_schema_clear(&s2);
    ice_schema_clear(&s3);
    ice_metadata_free(&m);
}

static void expect_parse_error(const char *json, hs_status code, const char *needle)
{
    ice_table_metadata m;
    hs_error err = {0};
    hs_status s = ice_metadata_parse(json, strlen(json), &m, &err);
    CHECK(s == code);
    if (s != code || !strstr(err.msg, needle)) {
        fprintf(stderr, "  parse -> %d \"%s\", want %d with \"%s\"\n", s, err.msg, code, needle);
        hs_test_failures++;
    }
    if (s == HS_OK)
        ice_metadata_free(&m);
}

static const char *V1_JSON =
    "{\"format-version\":1,\"location\":\"s3://b/t\",\"last-updated-ms\":1,"
    "\"last-column-id\":2,\"schema\":{\"type\":\"struct\",\"fields\":["
    "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
    "{\"id\":2,\"name\":\"ts\",\"required\":false,\"type\":\"timestamptz\"}]},"
    "\"partition-spec\":[{\"name\":\"ts_day\",\"transform\":\"day\",\"source-id\":2}],"
    "\"properties\":{\"k\":\"v\"},\"current-snapshot-id\":5,"
    "\"snapshots\":[{\"snapshot-id\":5,\"timestamp-ms\":7,\"manifests\":[\"/m1.avro\"]}]}";

static void test_parse_v1_and_errors(void)
{
    ice_table_metadata m;
    hs_error err = {0};
    CHECK_OK(ice_metadata_parse(V1_JSON, strlen(V1_JSON), &m, &err), &err);
    CHECK(m.format_version == 1 && m.n_schemas == 1 && m.n_specs == 1);
    CHECK(m.specs[0].fields[0].field_id == 1000 && m.last_partition_id == 1000);
    CHECK(m.n_sort_orders == 1 && m.default_sort_order_id == 0);
    CHECK(ice_metadata_snapshot_by_ref(&m, "main")->snapshot_id == 5);
    CHECK(ice_metadata_current_snapshot(&m)->n_v1_manifests == 1);
    ice_table_metadata back;
    hs_buf j = {0};
    roundtrip(&m, &back, &j);
    ice_metadata_free(&back);
    hs_buf_free(&j);
    ice_metadata_free(&m);

    expect_parse_error("{\"format-version\":4}", HS_UNSUPPORTED,
                       "table format version 4 is newer than this build supports (3)");
    expect_parse_error("{\"format-version\":2", HS_CORRUPT, "not valid JSON");
    expect_parse_error("[]", HS_CORRUPT, "object");
    expect_parse_error("{}", HS_CORRUPT, "\"format-version\"");
    expect_parse_error("{\"format-version\":2,\"table-uuid\":\"x\",\"location\":\"l\","
                       "\"last-sequence-number\":0,\"last-updated-ms\":1}",
                       HS_CORRUPT, "\"last-column-id\"");
    expect_parse_error("{\"format-version\":2,\"table-uuid\":\"x\",\"location\":\"l\","
                       "\"last-sequence-number\":0,\"last-updated-ms\":1,\"last-column-id\":1,"
                       "\"schemas\":[{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"a\","
                       "\"required\":true,\"type\":\"varchar\"}]}]}",
                       HS_CORRUPT, "unknown type \"varchar\"");
    expect_parse_error("{\"format-version\":2,\"table-uuid\":\"x\",\"location\":\"l\","
                       "\"last-sequence-number\":0,\"last-updated-ms\":1,\"last-column-id\":1,"
                       "\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,\"fields\":[]}],"
                       "\"current-schema-id\":3}",
                       HS_CORRUPT, "current-schema-id 3");

    /* every truncation of a valid document fails cleanly (no crash, no leak) */
    ice_table_metadata t;
    new_table(&t, 3);
    ice_snapshot s;
    make_snapshot(&s, 11, 0, 1, 1000);
    s.has_first_row_id = true;
    CHECK(ice_metadata_add_snapshot(&t, &s, NULL, NULL) == HS_OK);
    ice_snapshot_clear(&s);
    CHECK(ice_metadata_to_json(&t, &j, NULL) == HS_OK);
    ice_metadata_free(&t);
    for (size_t n = 0; n < j.len; n += 7) {
        ice_table_metadata x;
        if (ice_metadata_parse((const char *)j.data, n, &x, NULL) == HS_OK)
            ice_metadata_free(&x);
    }
    /* and each single-byte corruption */
    for (size_t i = 0; i < j.len; i += 3) {
        uint8_t saved = j.data[i];
        j.data[i] = (uint8_t)(saved ^ 0x5a);
        ice_table_metadata x;
        if (ice_metadata_parse((const char *)j.data, j.len, &x, NULL) == HS_OK)
            ice_metadata_free(&x);
        j.data[i] = saved;
    }
    hs_buf_free(&j);
}

static void test_oom(void)
{
    ice_table_metadata t;
    new_table(&t, 2);
    ice_snapshot s;
    make_snapshot(&s, 11, 0, 1, 1000);
    CHECK(ice_metadata_add_snapshot(&t, &s, NULL, NULL) == HS_OK);
    ice_snapshot_clear(&s);
    hs_buf j = {0};
    CHECK(ice_metadata_to_json(&t, &j, NULL) == HS_OK);
    int64_t live = hs_mem_live_count();
    int n_ok = 0;
    for (int64_t k = 1; k < 1500; k++) {
        ice_table_metadata x, c;
        hs_buf o = {0};
        hs_mem_fail_after(k);
        hs_status st = ice_metadata_parse((const char *)j.data, j.len, &x, NULL);
        if (st == HS_OK) {
            n_ok++;
            if (ice_metadata_copy(&x, &c, NULL) == HS_OK)
                ice_metadata_free(&c);
            if (ice_metadata_to_json(&x, &o, NULL) == HS_OK && o.len != j.len) {
                fprintf(stderr, "k=%lld\n%s\n", (long long)k, hs_buf_cstr(&j));
                fprintf(stderr, "%s\n", hs_buf_cstr(&o));
                CHECK(o.len == j.len);
            }
            ice_metadata_free(&x);
        } else {
            CHECK(st == HS_NOMEM);
        }
        hs_buf_free(&o);
        hs_mem_fail_after(0);
    }
    CHECK(n_ok > 0);
    CHECK(hs_mem_live_count() == live);
    hs_buf_free(&j);
    ice_metadata_free(&t);
}

int main(void)
{
    HS_RUN(test_bucket_hash_vectors);
    HS_RUN(test_truncate_and_time);
    HS_RUN(test_single_value_bytes);
    HS_RUN(test_bound_truncation);
    HS_RUN(test_compare);
    HS_RUN(test_metadata_new_and_roundtrip);
    HS_RUN(test_snapshots_refs_timetravel);
    HS_RUN(test_specs_and_orders);
    HS_RUN(test_schema_evolution);
    HS_RUN(test_parse_v1_and_errors);
    HS_RUN(test_oom);
    return hs_test_summary();
}

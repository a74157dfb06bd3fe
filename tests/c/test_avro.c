/* Avro schema, binary encoding and container files: round trips, Iceberg
 * attributes (field-id, element-id) kept, and corrupt input rejected. The
 * independent oracle (fastavro) is in tests/python/test_avro_oracle.py. */
#include "base/avro.h"
#include "base/mem.h"
#include "harness.h"

#include <math.h>

static const char *manifest_like_schema =
    "{\"type\":\"record\",\"name\":\"manifest_entry\",\"fields\":["
    "{\"name\":\"status\",\"type\":\"int\",\"field-id\":0},"
    "{\"name\":\"snapshot_id\",\"type\":[\"null\",\"long\"],\"default\":null,\"field-id\":1},"
    "{\"name\":\"data_file\",\"field-id\":2,\"type\":{\"type\":\"record\",\"name\":\"r2\",\"fields\":["
    "  {\"name\":\"file_path\",\"type\":\"string\",\"field-id\":100},"
    "  {\"name\":\"record_count\",\"type\":\"long\",\"field-id\":103},"
    "  {\"name\":\"column_sizes\",\"field-id\":108,\"type\":[\"null\",{\"type\":\"array\","
    "     \"logicalType\":\"map\",\"items\":{\"type\":\"record\",\"name\":\"k117_v118\",\"fields\":["
    "       {\"name\":\"key\",\"type\":\"int\",\"field-id\":117},"
    "       {\"name\":\"value\",\"type\":\"long\",\"field-id\":118}]}}],\"default\":null},"
    "  {\"name\":\"lower\",\"type\":[\"null\",\"bytes\"],\"field-id\":125},"
    "  {\"name\":\"ratio\",\"type\":\"double\"},"
    "  {\"name\":\"kind\",\"type\":{\"type\":\"enum\",\"name\":\"K\",\"symbols\":[\"A\",\"B\"]}},"
    "  {\"name\":\"uuid\",\"type\":[\"null\",{\"type\":\"fixed\",\"name\":\"u16\",\"size\":16}]},"
    "  {\"name\":\"props\",\"type\":{\"type\":\"map\",\"values\":\"string\"}}"
    "]}}]}";

static void test_schema_attributes(void)
{
    hs_arena a = {0};
    hs_error err = {0};
    hs_avro_schema *s;
    CHECK_OK(hs_avro_schema_parse(manifest_like_schema, strlen(manifest_like_schema), &a, &s, &err), &err);
    REQUIRE(s->kind == HS_AVRO_RECORD && s->n == 3);
    CHECK(s->fields[0].field_id == 0);
    CHECK(s->fields[1].field_id == 1);
    CHECK(s->fields[1].default_json && strcmp(s->fields[1].default_json, "null") == 0);
    const hs_avro_schema *df = s->fields[2].type;
    CHECK(hs_avro_field_index_by_id(df, 103) == 1);
    CHECK(hs_avro_field_index(df, "lower") == 3);
    const hs_avro_schema *cs = df->fields[2].type;
    REQUIRE(cs->kind == HS_AVRO_UNION && cs->n == 2);
    CHECK(cs->branches[1]->kind == HS_AVRO_ARRAY);
    CHECK(cs->branches[1]->logical_type && strcmp(cs->branches[1]->logical_type, "map") == 0);
    CHECK(cs->branches[1]->items->fields[0].field_id == 117);
    hs_arena_destroy(&a);
}

static const char *records_jsonl =
    "{\"status\":1,\"snapshot_id\":123456789012345,\"data_file\":{\"file_path\":\"data/a.parquet\","
    "\"record_count\":10,\"column_sizes\":[{\"key\":1,\"value\":100},{\"key\":2,\"value\":-5}],"
    "\"lower\":\"00ff10\",\"ratio\":0.5,\"kind\":\"B\",\"uuid\":\"000102030405060708090a0b0c0d0e0f\","
    "\"props\":{\"x\":\"y\"}}}\n"
    "{\"status\":0,\"snapshot_id\":null,\"data_file\":{\"file_path\":\"\\u00e9t\\u00e9\","
    "\"record_count\":-9223372036854775808,\"column_sizes\":null,\"lower\":null,\"ratio\":\"NaN\","
    "\"kind\":\"A\",\"uuid\":null,\"props\":{}}}\n";

static void test_container_roundtrip(void)
{
    for (int codec = 0; codec < 2; codec++) {
        hs_error err = {0};
        hs_buf file = {0}, json = {0};
        CHECK_OK(hs_avro_from_jsonl(manifest_like_schema, records_jsonl,
                                    codec ? HS_AVRO_CODEC_DEFLATE : HS_AVRO_CODEC_NULL, &file, &err),
                 &err);
        CHECK_OK(hs_avro_to_jsonl(file.data, file.len, &json, &err), &err);
        const char *want =
            "{\"status\":1,\"snapshot_id\":123456789012345,\"data_file\":{\"file_path\":\"data/a.parquet\","
            "\"record_count\":10,\"column_sizes\":[{\"key\":1,\"value\":100},{\"key\":2,\"value\":-5}],"
            "\"lower\":\"00ff10\",\"ratio\":0.5,\"kind\":\"B\",\"uuid\":\"000102030405060708090a0b0c0d0e0f\","
            "\"props\":{\"x\":\"y\"}}}\n"
            "{\"status\":0,\"snapshot_id\":null,\"data_file\":{\"file_path\":\"\xc3\xa9t\xc3\xa9\","
            "\"record_count\":-9223372036854775808,\"column_sizes\":null,\"lower\":null,\"ratio\":\"NaN\","
            "\"kind\":\"A\",\"uuid\":null,\"props\":{}}}\n";
        CHECK(json.len == strlen(want) && memcmp(json.data, want, json.len) == 0);
        if (json.len != strlen(want) || memcmp(json.data, want, json.len) != 0)
            fprintf(stderr, "got: %.*s\n", (int)json.len, (const char *)json.data);
        hs_buf_free(&file);
        hs_buf_free(&json);
    }
}

static void test_header_metadata(void)
{
    hs_error err = {0};
    const char *keys[] = {"format-version", "partition-spec"};
    const char *vals[] = {"2", "[]"};
    hs_avro_writer *w;
    CHECK_OK(hs_avro_writer_open("{\"type\":\"record\",\"name\":\"r\",\"fields\":[{\"name\":\"x\",\"type\":\"long\",\"field-id\":7}]}",
                                 HS_AVRO_CODEC_DEFLATE, keys, vals, 2, &w, &err), &err);
    hs_arena a = {0};
    for (int i = 0; i < 50000; i++) {
        hs_avro_value rec;
        hs_avro_value *items = hs_avro_new_array(&a, HS_AVRO_RECORD, 1, &rec);
        REQUIRE(items);
        items[0] = hs_avro_long((int64_t)i * 1000003);
        CHECK_OK(hs_avro_writer_append(w, &rec, &err), &err);
    }
    hs_buf file = {0};
    CHECK_OK(hs_avro_writer_finish(w, &file, &err), &err);
    hs_avro_reader *r;
    CHECK_OK(hs_avro_reader_open("t.avro", file.data, file.len, &r, &err), &err);
    CHECK(strcmp(hs_avro_reader_meta(r, "format-version", NULL), "2") == 0);
    CHECK(strcmp(hs_avro_reader_meta(r, "avro.codec", NULL), "deflate") == 0);
    CHECK(hs_avro_reader_schema(r)->fields[0].field_id == 7);
    int64_t n = 0;
    bool ok = true;
    for (;;) {
        hs_avro_value v;
        bool done;
        hs_arena_reset(&a);
        CHECK_OK(hs_avro_reader_next(r, &a, &v, &done, &err), &err);
        if (done)
            break;
        ok &= v.u.arr.items[0].u.l == n * 1000003;
        n++;
    }
    CHECK(ok);
    CHECK(n == 50000);
    hs_avro_reader_close(r);
    hs_arena_destroy(&a);
    hs_buf_free(&file);
}

/* Every truncation and many bit flips of a valid file fail cleanly or decode. */
static void test_corrupt_inputs(void)
{
    hs_error err = {0};
    hs_buf file = {0};
    CHECK_OK(hs_avro_from_jsonl(manifest_like_schema, records_jsonl, HS_AVRO_CODEC_DEFLATE, &file, &err), &err);
    int errors = 0;
    for (size_t cut = 0; cut < file.len; cut++) {
        hs_buf json = {0};
        hs_error e = {0};
        if (hs_avro_to_jsonl(file.data, cut, &json, &e) != HS_OK)
            errors++;
        hs_buf_free(&json);
    }
    CHECK(errors >= (int)file.len - 1);
    uint32_t x = 12345;
    uint8_t *copy = hs_malloc(file.len);
    for (int i = 0; i < 3000; i++) {
        memcpy(copy, file.data, file.len);
        for (int k = 0; k < 3; k++) {
            x = x * 1103515245 + 12345;
            copy[(x >> 8) % file.len] ^= (uint8_t)(1u << ((x >> 4) & 7));
        }
        hs_buf json = {0};
        hs_error e = {0};
        if (hs_avro_to_jsonl(copy, file.len, &json, &e) != HS_OK)
            CHECK(e.code != HS_OK && e.msg[0]);
        hs_buf_free(&json);
    }
    hs_free(copy);
    /* a block count that claims far more records than bytes */
    static const uint8_t evil[] = "Obj\x01\x02\x16" "avro.schema" "\x0c" "\"null\"" "\x00"
                                  "0123456789abcdef" "\xfe\xff\xff\xff\x0f\x00" "0123456789abcdef";
    hs_buf json = {0};
    hs_error e = {0};
    CHECK(hs_avro_to_jsonl(evil, sizeof evil - 1, &json, &e) == HS_CORRUPT);
    hs_buf_free(&json);
    hs_buf_free(&file);
}

/* Readers of containers with the same schema text share one parsed schema
 * (process-wide cache); a reader outlives a clear of the cache; a different
 * text is a different entry. */
static void test_schema_cache(void)
{
    hs_error err = {0};
    hs_buf f1 = {0}, f2 = {0};
    CHECK_OK(hs_avro_from_jsonl(manifest_like_schema, records_jsonl, HS_AVRO_CODEC_NULL, &f1, &err),
             &err);
    CHECK_OK(hs_avro_from_jsonl("{\"type\":\"record\",\"name\":\"q\",\"fields\":[{\"name\":\"a\","
                                "\"type\":\"long\",\"field-id\":3}]}", "{\"a\":5}\n",
                                HS_AVRO_CODEC_NULL, &f2, &err), &err);
    hs_avro_schema_cache_clear();
    int64_t live = hs_mem_live_count();
    hs_avro_reader *a = NULL, *b = NULL, *c = NULL;
    CHECK_OK(hs_avro_reader_open("a", f1.data, f1.len, &a, &err), &err);
    CHECK_OK(hs_avro_reader_open("b", f1.data, f1.len, &b, &err), &err);
    CHECK_OK(hs_avro_reader_open("c", f2.data, f2.len, &c, &err), &err);
    CHECK(hs_avro_reader_schema(a) == hs_avro_reader_schema(b));
    CHECK(hs_avro_reader_schema(a) != hs_avro_reader_schema(c));
    hs_avro_schema_cache_clear();   /* open readers keep their schema */
    const hs_avro_schema *sc = hs_avro_reader_schema(c);
    CHECK(sc->kind == HS_AVRO_RECORD && sc->n == 1 && sc->fields[0].field_id == 3);
    hs_arena arena = {0};
    hs_avro_value v;
    bool done = false;
    CHECK_OK(hs_avro_reader_next(c, &arena, &v, &done, &err), &err);
    CHECK(!done && v.u.arr.n == 1 && v.u.arr.items[0].u.l == 5);
    hs_arena_destroy(&arena);
    hs_avro_reader_close(a);
    hs_avro_reader_close(b);
    hs_avro_reader_close(c);
    CHECK(hs_mem_live_count() == live);
    /* out of memory while a schema is cached: fails cleanly, caches nothing */
    for (int64_t k = 1; k < 40; k++) {
        hs_avro_reader *r = NULL;
        hs_error e2 = {0};
        hs_mem_fail_after(k);
        hs_status s = hs_avro_reader_open("a", f1.data, f1.len, &r, &e2);
        hs_mem_fail_after(0);
        hs_avro_reader_close(r);
        hs_avro_schema_cache_clear();
        CHECK(s == HS_OK || s == HS_NOMEM);
        CHECK(hs_mem_live_count() == live);
    }
    hs_buf_free(&f1);
    hs_buf_free(&f2);
}

int main(void)
{
    int64_t live = hs_mem_live_count();
    HS_RUN(test_schema_attributes);
    HS_RUN(test_container_roundtrip);
    HS_RUN(test_header_metadata);
    HS_RUN(test_corrupt_inputs);
    HS_RUN(test_schema_cache);
    hs_avro_schema_cache_clear();   /* the process-wide schema cache is not a leak */
    CHECK(hs_mem_live_count() == live);
    return hs_test_summary();
}

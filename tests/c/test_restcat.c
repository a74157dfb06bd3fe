/*
 * tests/c/test_restcat.c - the Iceberg REST catalog server (server/restcat.c
 * over server/http.c, in this process on a free port) and the REST catalog
 * client (catalog/rest.c through hs_catalog_open_uri), end to end, plus the
 * commit decoder on malformed requests.  What the REST side did is checked
 * through the SQL catalog file the server writes (cat_sql_open), the storage
 * pyiceberg's SqlCatalog reads; tests/python/test_restcat_pyiceberg.py has
 * pyiceberg as the independent client and oracle.
 */
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "io/s3_int.h"
#include "hyperstream/table.h"
#include "server/http.h"
#include "server/restcat.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char g_db[512], g_wh[512], g_url[128];

static const char *SCHEMA =
    "{\"type\":\"struct\",\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":false,"
    "\"type\":\"long\"},{\"id\":2,\"name\":\"s\",\"required\":false,\"type\":\"string\"}]}";

static void setup_paths(void)
{
    snprintf(g_db, sizeof g_db, "%s/restcat-%d.db", hs_test_tmpdir(), (int)getpid());
    snprintf(g_wh, sizeof g_wh, "%s/restcat-wh-%d", hs_test_tmpdir(), (int)getpid());
    unlink(g_db);
}

static void test_client_against_server(void)
{
    setup_paths();
    rc_config cfg = { .sqlite_path = g_db, .warehouse = g_wh, .token = "tok",
                      .client_id = "me", .client_secret = "pw" };
    rc_server *rs = NULL;
    hs_http_server *hs = NULL;
    hs_error err = { 0 };
    CHECK_OK(rc_new(&cfg, &rs, &err), &err);
    hs_http_options ho = { .port = 0, .n_threads = 2 };
    CHECK_OK(hs_http_start(&ho, rc_handle, rs, &hs, &err), &err);
    snprintf(g_url, sizeof g_url, "http://127.0.0.1:%d", hs_http_port(hs));

    /* wrong token: not authorized; OAuth2 client credentials: fine */
    hs_catalog *cat = NULL;
    CHECK(hs_catalog_open_uri(g_url, "{\"token\":\"nope\"}", &cat, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "401") != NULL);
    CHECK_OK(hs_catalog_open_uri(g_url, "{\"credential\":\"me:pw\"}", &cat, &err), &err);

    CHECK_OK(hs_catalog_create_namespace_props(cat, "db", "{\"owner\":\"x\"}", &err), &err);
    CHECK(hs_catalog_create_namespace_props(cat, "db", NULL, &err) == HS_CONFLICT);
    char *s = NULL;
    CHECK_OK(hs_catalog_list_namespaces(cat, NULL, &s, &err), &err);
    CHECK(s && strcmp(s, "[\"db\"]") == 0);
    hs_string_free(s);
    CHECK_OK(hs_catalog_namespace_properties(cat, "db", &s, &err), &err);
    CHECK(s && strstr(s, "\"owner\":\"x\""));
    hs_string_free(s);

    hs_table_create_options opt = HS_TABLE_CREATE_OPTIONS_INIT;
    opt.schema_json = SCHEMA;
    opt.partition_spec = "bucket(4, id)";
    hs_table *t = NULL;
    CHECK_OK(hs_table_create(cat, "db.t", &opt, &t, &err), &err);
    CHECK(hs_table_create(cat, "db.t", &opt, NULL, &err) == HS_CONFLICT);
    const char *keys[] = { "a" }, *vals[] = { "1" };
    CHECK_OK(hs_table_set_properties(t, keys, vals, 1, &err), &err);
    CHECK_OK(hs_table_update_schema(t, "[{\"op\":\"add\",\"name\":\"x\",\"type\":\"double\"}]",
                                    &err), &err);

    /* the server's SQL catalog holds what the client committed */
    cat_catalog *sql = NULL;
    CHECK_OK(cat_sql_open(g_db, "default", g_wh, &sql, &err), &err);
    hs_buf json = { 0 };
    char *loc = NULL;
    CHECK_OK(cat_load_json(sql, "db.t", &json, &loc, &err), &err);
    CHECK(strcmp(loc, hs_table_metadata_location(t)) == 0);
    json_error_t je;
    json_t *doc = json_loads(hs_buf_cstr(&json), 0, &je);
    CHECK(doc && strcmp(json_string_value(json_object_get(json_object_get(doc, "properties"),
                                                          "a")), "1") == 0);
    CHECK(json_array_size(json_object_get(doc, "schemas")) == 2);
    CHECK(json_integer_value(json_object_get(doc, "last-column-id")) == 3);
    char *mine = NULL;
    CHECK_OK(hs_table_metadata_json(t, &mine, &err), &err);
    json_t *mdoc = json_loads(mine, 0, &je);
    CHECK(mdoc && json_equal(json_object_get(doc, "table-uuid"),
                             json_object_get(mdoc, "table-uuid")));
    json_decref(mdoc);
    hs_string_free(mine);
    json_decref(doc);
    hs_buf_free(&json);
    hs_free(loc);

    /* a stale handle's commit conflicts on the server, then rebases */
    hs_table *t2 = NULL;
    CHECK_OK(hs_table_open(cat, "db.t", &t2, &err), &err);
    const char *k2[] = { "b" }, *v2[] = { "2" };
    CHECK_OK(hs_table_set_properties(t, k2, v2, 1, &err), &err);
    const char *k3[] = { "c" }, *v3[] = { "3" };
    CHECK_OK(hs_table_set_properties(t2, k3, v3, 1, &err), &err);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    char *props = NULL;
    CHECK_OK(hs_table_metadata_json(t, &props, &err), &err);
    CHECK(strstr(props, "\"b\":\"2\"") && strstr(props, "\"c\":\"3\""));
    hs_string_free(props);

    /* register: the name points at that very file (the SQL row says so) */
    const char *tloc = hs_table_metadata_location(t);
    CHECK_OK(hs_catalog_register_table(cat, "db.reg", tloc, 0, &err), &err);
    CHECK(hs_catalog_register_table(cat, "db.reg", tloc, 0, &err) == HS_CONFLICT);
    CHECK(hs_catalog_register_table(cat, "nons.reg", tloc, 0, &err) == HS_NOT_FOUND);
    CHECK(hs_catalog_register_table(cat, "db.reg2", "/nonexistent/v1.metadata.json", 0,
                                    &err) == HS_INVALID);
    hs_buf rjson = { 0 };
    char *rloc = NULL;
    CHECK_OK(cat_load_json(sql, "db.reg", &rjson, &rloc, &err), &err);
    CHECK(strcmp(rloc, tloc) == 0);
    hs_free(rloc);
    hs_buf_free(&rjson);
    hs_table *rt = NULL;
    CHECK_OK(hs_table_open(cat, "db.reg", &rt, &err), &err);
    CHECK(strcmp(hs_table_metadata_location(rt), tloc) == 0);
    hs_table_close(rt);
    CHECK_OK(hs_catalog_register_table(cat, "db.reg", tloc, 1, &err), &err);   /* overwrite */
    CHECK_OK(hs_catalog_drop_table(cat, "db.reg", 0, &err), &err);
    /* views: the server has none; the list has the spec's shape */
    CHECK_OK(hs_catalog_list_views(cat, "db", &s, &err), &err);
    CHECK(s && strcmp(s, "[]") == 0);
    hs_string_free(s);
    CHECK(hs_catalog_list_views(cat, "nons", &s, &err) == HS_NOT_FOUND);

    /* lists page (pageToken/pageSize): a client asking for pages of 2 gets
     * every name across them, as the server's SQLite file lists them */
    char nsn[8], tn[16];
    for (int i = 0; i < 5; i++) {
        snprintf(nsn, sizeof nsn, "pg%d", i);
        CHECK_OK(hs_catalog_create_namespace_props(cat, nsn, NULL, &err), &err);
        snprintf(tn, sizeof tn, "db.r%d", i);
        CHECK_OK(hs_catalog_register_table(cat, tn, tloc, 0, &err), &err);
    }
    hs_catalog *paged = NULL;
    CHECK_OK(hs_catalog_open_uri(g_url, "{\"token\":\"tok\",\"rest-page-size\":\"2\"}",
                                 &paged, &err), &err);
    char **want = NULL;
    size_t n_want = 0;
    CHECK_OK(cat_namespace_list(sql, NULL, &want, &n_want, &err), &err);
    CHECK(n_want == 6);
    CHECK_OK(hs_catalog_list_namespaces(paged, NULL, &s, &err), &err);
    json_t *got = json_loads(s, 0, &je);
    CHECK(json_array_size(got) == n_want);
    for (size_t i = 0; i < n_want && i < json_array_size(got); i++)
        CHECK(strcmp(json_string_value(json_array_get(got, i)), want[i]) == 0);
    json_decref(got);
    hs_string_free(s);
    cat_strv_free(want, n_want);
    CHECK_OK(cat_list(sql, "db", &want, &n_want, &err), &err);
    CHECK(n_want == 6);
    CHECK_OK(hs_catalog_list_tables(paged, "db", &s, &err), &err);   /* "db.<name>" */
    got = json_loads(s, 0, &je);
    CHECK(json_array_size(got) == n_want);
    for (size_t i = 0; i < n_want && i < json_array_size(got); i++) {
        const char *g = json_string_value(json_array_get(got, i));
        CHECK(g && strncmp(g, "db.", 3) == 0 && strcmp(g + 3, want[i]) == 0);
    }
    json_decref(got);
    hs_string_free(s);
    cat_strv_free(want, n_want);
    CHECK_OK(hs_catalog_list_views(paged, "db", &s, &err), &err);
    CHECK(s && strcmp(s, "[]") == 0);
    hs_string_free(s);
    hs_catalog_close(paged);
    CHECK(hs_catalog_open_uri(g_url, "{\"token\":\"tok\",\"rest-page-size\":\"0\"}",
                              &paged, &err) == HS_INVALID);
    for (int i = 0; i < 5; i++) {
        snprintf(tn, sizeof tn, "db.r%d", i);
        CHECK_OK(hs_catalog_drop_table(cat, tn, 0, &err), &err);
        snprintf(nsn, sizeof nsn, "pg%d", i);
        CHECK_OK(hs_catalog_drop_namespace(cat, nsn, &err), &err);
    }

    int exists = 0;
    CHECK_OK(hs_catalog_table_exists(cat, "db.t", &exists, &err), &err);
    CHECK(exists == 1);
    CHECK_OK(hs_catalog_rename_table(cat, "db.t", "db.u", &err), &err);
    CHECK_OK(hs_catalog_table_exists(cat, "db.t", &exists, &err), &err);
    CHECK(exists == 0);
    CHECK(hs_catalog_drop_namespace(cat, "db", &err) == HS_INVALID);
    hs_table_close(t);
    hs_table_close(t2);
    CHECK_OK(hs_catalog_drop_table(cat, "db.u", 1, &err), &err);
    CHECK(hs_catalog_drop_table(cat, "db.u", 0, &err) == HS_NOT_FOUND);
    CHECK_OK(hs_catalog_drop_namespace(cat, "db", &err), &err);
    CHECK(hs_catalog_namespace_properties(cat, "db", &s, &err) == HS_NOT_FOUND);

    cat_free(sql);
    hs_catalog_close(cat);
    hs_http_stop(hs);
    rc_free(rs);
    unlink(g_db);
}

/* Malformed commit requests: a clear HS_INVALID, never a crash or a change. */
static void test_commit_decoder(void)
{
    json_error_t je;
    json_t *base = json_loads(
        "{\"format-version\":2,\"table-uuid\":\"u\",\"location\":\"/x\",\"last-sequence-number\""
        ":0,\"last-updated-ms\":1,\"last-column-id\":1,\"current-schema-id\":0,\"schemas\":[{"
        "\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"a\",\"required\":"
        "false,\"type\":\"int\"}]}],\"default-spec-id\":0,\"partition-specs\":[{\"spec-id\":0,"
        "\"fields\":[]}],\"last-partition-id\":999,\"default-sort-order-id\":0,\"sort-orders\":"
        "[{\"order-id\":0,\"fields\":[]}],\"properties\":{},\"snapshots\":[],\"refs\":{}}",
        0, &je);
    REQUIRE(base);
    const char *bad[] = {
        "[]", "{}", "{\"updates\":{}}", "{\"updates\":[1]}", "{\"updates\":[{}]}",
        "{\"updates\":[{\"action\":7}]}", "{\"updates\":[{\"action\":\"x\"}]}",
        "{\"updates\":[{\"action\":\"add-schema\"}]}",
        "{\"updates\":[{\"action\":\"add-schema\",\"schema\":{\"fields\":3}}]}",
        "{\"updates\":[{\"action\":\"set-current-schema\",\"schema-id\":-1}]}",
        "{\"updates\":[{\"action\":\"upgrade-format-version\",\"format-version\":1}]}",
        "{\"updates\":[{\"action\":\"assign-uuid\",\"uuid\":\"other\"}]}",
        "{\"updates\":[{\"action\":\"set-snapshot-ref\",\"ref-name\":\"main\",\"type\":\"tag\","
        "\"snapshot-id\":1}]}",
        "{\"updates\":[{\"action\":\"remove-properties\",\"removals\":[1]}]}",
        "{\"requirements\":[{\"type\":\"nope\"}],\"updates\":[]}",
        "{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
        "\"snapshot-id\":\"x\"}],\"updates\":[]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *req = json_loads(bad[i], 0, &je), *out = NULL;
        hs_error err = { 0 };
        hs_status st = rc_apply_commit(base, "/x/metadata/v1.metadata.json", req, &out, &err);
        CHECK(st == HS_INVALID);
        CHECK(out == NULL);
        CHECK(err.msg[0] != 0);
        json_decref(req);
    }
    /* requirements that fail are conflicts; a good commit validates */
    json_t *req = json_loads("{\"requirements\":[{\"type\":\"assert-current-schema-id\","
                             "\"current-schema-id\":5}],\"updates\":[]}", 0, &je);
    json_t *out = NULL;
    hs_error err = { 0 };
    CHECK(rc_apply_commit(base, "/b", req, &out, &err) == HS_CONFLICT);
    json_decref(req);
    req = json_loads("{\"requirements\":[{\"type\":\"assert-ref-snapshot-id\",\"ref\":\"main\","
                     "\"snapshot-id\":null}],\"updates\":[{\"action\":\"add-schema\","
                     "\"schema\":{\"type\":\"struct\",\"schema-id\":9,\"fields\":[{\"id\":1,"
                     "\"name\":\"a\",\"required\":false,\"type\":\"int\"},{\"id\":2,\"name\":"
                     "\"b\",\"required\":false,\"type\":\"long\"}]}},{\"action\":"
                     "\"set-current-schema\",\"schema-id\":-1}]}", 0, &je);
    CHECK_OK(rc_apply_commit(base, "/b", req, &out, &err), &err);
    hs_buf text = { 0 };
    CHECK_OK(rc_validate_metadata(out, &text, &err), &err);
    CHECK(json_integer_value(json_object_get(out, "current-schema-id")) == 1);
    CHECK(json_integer_value(json_object_get(out, "last-column-id")) == 2);
    CHECK(json_array_size(json_object_get(out, "metadata-log")) == 1);
    hs_buf_free(&text);
    json_decref(out);
    json_decref(req);
    json_decref(base);
}

/* Vended S3 settings: the longest matching scope wins; s3a:// and s3://
 * name the same scope; a prefix matches only at a '/' boundary. */
static void test_io_scopes(void)
{
    hs_error err = { 0 };
    const char *k1[] = { "s3.endpoint", "s3.access-key-id", "s3.secret-access-key" };
    const char *v1[] = { "http://one:1/", "AK1", "SK1" };
    const char *k2[] = { "s3.endpoint", "s3.path-style-access", "client.region" };
    const char *v2[] = { "http://two:2", "false", "eu-west-3" };
    CHECK_OK(hs_io_set_scope("s3://b/wh", k1, v1, 3, &err), &err);
    CHECK_OK(hs_io_set_scope("s3a://b/wh/db/t/", k2, v2, 3, &err), &err);
    CHECK_OK(hs_io_set_scope("/local/dir", k1, v1, 3, &err), &err);   /* no-op */
    const char *bad[] = { "s3.access-key-id" }, *badv[] = { "AK" };
    CHECK(hs_io_set_scope("s3://b/x", bad, badv, 1, &err) == HS_INVALID);
    s3_config c;
    memset(&c, 0, sizeof c);
    s3_copy_str(c.endpoint, sizeof c.endpoint, "http://env:9");
    s3_copy_str(c.region, sizeof c.region, "us-east-1");
    s3_scope_apply("b", "wh/db/t/data/f.parquet", &c, NULL);
    CHECK(strcmp(c.endpoint, "http://two:2") == 0 && !c.path_style);
    CHECK(strcmp(c.region, "eu-west-3") == 0 && !c.access_key[0]);
    memset(&c, 0, sizeof c);
    s3_scope_apply("b", "wh/db/t2/metadata/v1.metadata.json", &c, NULL);
    CHECK(strcmp(c.endpoint, "http://one:1") == 0 && c.path_style && c.sign);
    CHECK(strcmp(c.access_key, "AK1") == 0 && strcmp(c.secret_key, "SK1") == 0);
    memset(&c, 0, sizeof c);
    s3_scope_apply("b", "wh2/x", &c, NULL);   /* "wh" is not a prefix of the path "wh2/x" */
    CHECK(c.endpoint[0] == 0 && !c.sign);
    s3_scope_apply("other", "wh/db/t/x", &c, NULL);
    CHECK(c.endpoint[0] == 0);
    hs_s3_clear_scopes();
    s3_scope_apply("b", "wh/db/t/x", &c, NULL);
    CHECK(c.endpoint[0] == 0);
}

int main(void)
{
    HS_RUN(test_io_scopes);
    HS_RUN(test_commit_decoder);
    HS_RUN(test_client_against_server);
    return hs_test_summary();
}

/* Remote signing of S3 requests (io/s3_sign.c), without a network:
 *
 *   - the signer's SigV4 Authorization against botocore's S3SigV4Auth for the
 *     same requests (keys of the AWS documentation's examples, the clock
 *     fixed at 2013-05-24 through the client's x-amz-date): the expected
 *     values below were computed by botocore 1.43, an independent
 *     implementation; a path with an escape, a query, signed extra headers
 *     and an unsigned Range;
 *   - which objects a request touches: the key, a listing's prefix, each
 *     DeleteObjects key (whose body must hash to x-amz-content-sha256);
 *     the bucket itself and anything the caller refuses are refusals;
 *   - malformed sign requests (HS_INVALID, not refusals), no keys
 *     (HS_UNSUPPORTED);
 *   - the client's decoder of a signer's answer (hs_s3_sign_response_parse);
 *   - the client: a scope with s3.remote-signing-enabled sends each request
 *     to its refresher's signer first (the S3SignRequest it gets), reuses an
 *     answer marked cacheable for the same (method, region, uri) and asks
 *     again otherwise, and fails with the signer's message when it refuses
 *     (the store at 127.0.0.1:9 never answers: only signing is checked).
 */
#include "harness.h"

#include "base/mem.h"
#include "io/s3.h"

#include <stdlib.h>
#include <string.h>

#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static const char *g_allow = "s3://b/t/";   /* what allow_prefix lets through */
static int g_asked;

static bool allow_prefix(void *arg, const char *uri)
{
    (void)arg;
    g_asked++;
    return strncmp(uri, g_allow, strlen(g_allow)) == 0;
}

static void env_keys(bool with_keys)
{
    if (with_keys) {
        setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 1);
        setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 1);
    } else {
        unsetenv("AWS_ACCESS_KEY_ID");
        unsetenv("AWS_SECRET_ACCESS_KEY");
    }
    unsetenv("AWS_SESSION_TOKEN");
    unsetenv("AWS_PROFILE");
    setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/hs-test-credentials", 1);
    setenv("AWS_CONFIG_FILE", "/nonexistent/hs-test-config", 1);
    setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
    setenv("AWS_REGION", "us-east-1", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000", 1);
    hs_s3_reset();
}

/* Signs body; returns the answer's Authorization value (static) or NULL. */
static const char *sign(const char *body, hs_status *st, bool *refused, bool *cacheable)
{
    static char auth[512];
    char *out = NULL;
    hs_error err = { 0 };
    *st = hs_s3_sign_remote(body, strlen(body), allow_prefix, NULL, &out, cacheable, refused,
                            &err);
    auth[0] = 0;
    if (*st != HS_OK) {
        hs_free(out);
        return NULL;
    }
    /* the answer is an S3SignResponse our own client decodes */
    hs_s3_signed s;
    hs_error e2 = { 0 };
    if (hs_s3_sign_response_parse(out, strlen(out), &s, &e2) == HS_OK) {
        for (size_t i = 0; i < s.n; i++)
            if (strncmp(s.hdr[i], "Authorization: ", 15) == 0)
                snprintf(auth, sizeof auth, "%s", s.hdr[i] + 15);
        hs_s3_signed_free(&s);
    }
    hs_free(out);
    return auth;
}

static void test_signatures_match_botocore(void)
{
    env_keys(true);
    hs_status st;
    bool refused, cacheable;
    const char *a = sign("{\"region\":\"us-east-1\",\"method\":\"GET\","
                         "\"uri\":\"http://127.0.0.1:9000/b/t/data/a%20b.parquet\","
                         "\"headers\":{\"x-amz-date\":[\"20130524T000000Z\"],"
                         "\"X-Amz-Content-SHA256\":[\"" SHA_EMPTY "\"],"
                         "\"Range\":[\"bytes=0-99\"],\"User-Agent\":[\"t\"]}}",
                         &st, &refused, &cacheable);
    REQUIRE(st == HS_OK && a);
    CHECK(cacheable);
    CHECK(strcmp(a, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                    "aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, "
                    "Signature=5693b1373a1888d32b424b166b934f33d77f45989091a0eef5f6585c65e285b6")
          == 0);
    a = sign("{\"region\":\"us-east-1\",\"method\":\"PUT\","
             "\"uri\":\"http://127.0.0.1:9000/b/t/data/x.bin?partNumber=2&uploadId=a%2Fb\","
             "\"headers\":{\"x-amz-date\":[\"20130524T000000Z\"],"
             "\"x-amz-content-sha256\":[\"" SHA_EMPTY "\"],"
             "\"Content-Type\":[\"application/octet-stream\"],\"If-None-Match\":[\"*\"]}}",
             &st, &refused, &cacheable);
    REQUIRE(st == HS_OK && a);
    CHECK(!cacheable);
    CHECK(strstr(a, "SignedHeaders=content-type;host;if-none-match;x-amz-content-sha256;"
                    "x-amz-date, Signature=51728625291ff9e13e497fe2e74be6f82529541df817e8dd21"
                    "e66dbc6f4faf3c") != NULL);
    /* a listing: allowed by its prefix */
    g_asked = 0;
    a = sign("{\"region\":\"us-east-1\",\"method\":\"GET\","
             "\"uri\":\"http://127.0.0.1:9000/b?list-type=2&prefix=t%2Fmetadata%2F\","
             "\"headers\":{\"x-amz-date\":[\"20130524T000000Z\"],"
             "\"x-amz-content-sha256\":[\"" SHA_EMPTY "\"]}}",
             &st, &refused, &cacheable);
    REQUIRE(st == HS_OK && a);
    CHECK(g_asked == 1);
    CHECK(strstr(a, "Signature=8ed7a8aa8fd611bfb356be71efb72269cd926e650866391d7e61c182d17bbd7e"
                 ) != NULL);
}

static void test_refusals(void)
{
    env_keys(true);
    hs_status st;
    bool refused, cacheable;
    /* outside the allowed prefix; a listing of another prefix; the bucket */
    const char *bodies[] = {
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{},"
        "\"uri\":\"http://127.0.0.1:9000/b/other/x\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{},"
        "\"uri\":\"http://127.0.0.1:9000/b?list-type=2&prefix=other\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{},"
        "\"uri\":\"http://127.0.0.1:9000/b?list-type=2\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{},"
        "\"uri\":\"http://127.0.0.1:9000/b/\"}",
        /* DeleteObjects: without its body; with a body whose hash is not the header's;
         * with one key outside */
        "{\"region\":\"us-east-1\",\"method\":\"POST\",\"headers\":{},"
        "\"uri\":\"http://127.0.0.1:9000/b/t/x?delete\"}",
        "{\"region\":\"us-east-1\",\"method\":\"POST\",\"headers\":{\"x-amz-content-sha256\":"
        "[\"" SHA_EMPTY "\"]},\"uri\":\"http://127.0.0.1:9000/b/t/x?delete\","
        "\"body\":\"<Delete><Object><Key>t/a</Key></Object></Delete>\"}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        const char *a = sign(bodies[i], &st, &refused, &cacheable);
        CHECK(a == NULL && st == HS_INVALID && refused);
    }
}

static void test_malformed_and_no_keys(void)
{
    env_keys(true);
    hs_status st;
    bool refused, cacheable;
    const char *bad[] = {
        "", "[]", "{\"region\":\"us-east-1\"}",
        "{\"region\":\"us-east-1\",\"method\":\"TRACE\",\"headers\":{},\"uri\":\"http://h/b/t/x\"}",
        "{\"region\":\"a/b\",\"method\":\"GET\",\"headers\":{},\"uri\":\"http://h/b/t/x\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{},\"uri\":\"ftp://h/b/t/x\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{\"a\":\"b\"},"
        "\"uri\":\"http://127.0.0.1:9000/b/t/x\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{\"a\":[\"x\\r\\nEvil: 1\"]},"
        "\"uri\":\"http://127.0.0.1:9000/b/t/x\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{},"
        "\"uri\":\"http://127.0.0.1:9000/b/t/%zz\"}",
        "{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{\"x-amz-date\":[\"yesterday\"]},"
        "\"uri\":\"http://127.0.0.1:9000/b/t/x\"}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *a = sign(bad[i], &st, &refused, &cacheable);
        CHECK(a == NULL && st == HS_INVALID && !refused);
    }
    env_keys(false);
    const char *a = sign("{\"region\":\"us-east-1\",\"method\":\"GET\",\"headers\":{},"
                         "\"uri\":\"http://127.0.0.1:9000/b/t/x\"}", &st, &refused, &cacheable);
    CHECK(a == NULL && st == HS_UNSUPPORTED && !refused);
    env_keys(true);
}

static void test_response_parse(void)
{
    hs_s3_signed s;
    hs_error err = { 0 };
    const char *ok = "{\"uri\":\"http://h:1/b/k\",\"headers\":{\"Authorization\":[\"AWS4 x\"],"
                     "\"Cache-Control\":[\"private\"],\"X-Multi\":[\"a\",\"b\"]}}";
    CHECK_OK(hs_s3_sign_response_parse(ok, strlen(ok), &s, &err), &err);
    CHECK(strcmp(s.uri, "http://h:1/b/k") == 0);
    CHECK(s.n == 2);   /* Cache-Control dropped */
    bool multi = false;
    for (size_t i = 0; i < s.n; i++)
        multi |= strcmp(s.hdr[i], "X-Multi: a, b") == 0;
    CHECK(multi);
    hs_s3_signed_free(&s);
    const char *bad[] = {
        "", "{}", "{\"uri\":5,\"headers\":{}}",
        "{\"uri\":\"http://h/\",\"headers\":{}}",                              /* no Authorization */
        "{\"uri\":\"file:///etc\",\"headers\":{\"Authorization\":[\"x\"]}}",
        "{\"uri\":\"http://h/\",\"headers\":{\"Authorization\":[\"x\\r\\nEvil: 1\"]}}",
        "{\"uri\":\"http://h/\\r\\n\",\"headers\":{\"Authorization\":[\"x\"]}}",
        "{\"uri\":\"http://h/\",\"headers\":{\"Bad Name\":[\"x\"],\"Authorization\":[\"x\"]}}",
        "{\"uri\":\"http://h/\",\"headers\":{\"Authorization\":\"x\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        hs_error e = { 0 };
        CHECK(hs_s3_sign_response_parse(bad[i], strlen(bad[i]), &s, &e) == HS_CORRUPT);
        CHECK(strstr(e.msg, "S3 signer") != NULL);
    }
}

static int g_sign_calls;
static bool g_sign_cacheable, g_sign_refuse;
static char g_last_req[2048];

static hs_status fake_refresh(hs_io_refresher *self, void *arg, hs_error *err)
{
    (void)self;
    (void)arg;
    return hs_err_set(err, HS_UNSUPPORTED, "no refresh here");
}

static hs_status fake_sign(void *arg, const char *request_json, hs_buf *response, bool *cacheable,
                           hs_error *err)
{
    (void)arg;
    g_sign_calls++;
    snprintf(g_last_req, sizeof g_last_req, "%s", request_json);
    if (g_sign_refuse)
        return hs_err_set(err, HS_INVALID, "REST catalog: S3 signer: HTTP 403 "
                          "ForbiddenException: not yours");
    *cacheable = g_sign_cacheable;
    return hs_buf_puts(response, "{\"uri\":\"http://127.0.0.1:9/b/t/x.parquet\","
                                 "\"headers\":{\"Authorization\":[\"AWS4-HMAC-SHA256 fake\"]}}");
}

static void test_client_asks_the_signer_and_caches(void)
{
    env_keys(false);   /* no keys of our own: the signer's only */
    setenv("HS_S3_MAX_ATTEMPTS", "1", 1);
    hs_s3_reset();
    hs_io_refresher *r = hs_io_refresher_new(fake_refresh, NULL, NULL);
    REQUIRE(r);
    hs_io_refresher_set_signer(r, fake_sign);
    const char *k[] = { "s3.remote-signing-enabled", "s3.endpoint", "s3.region" };
    const char *v[] = { "true", "http://127.0.0.1:9", "us-east-1" };
    hs_error err = { 0 };
    CHECK_OK(hs_io_set_scope_ex("s3://b/t", k, v, 3, r, &err), &err);
    hs_io_refresher_release(r);   /* the scope holds its own */
    hs_file *f = NULL;
    uint64_t before = hs_s3_sign_requests();
    /* cacheable: the second open of the same object is not signed again */
    g_sign_calls = 0;
    g_sign_cacheable = true;
    CHECK(hs_s3_open("s3://b/t/x.parquet", &f, &err) == HS_IO);   /* nothing listens */
    CHECK(g_sign_calls == 1);
    CHECK(strstr(g_last_req, "\"method\":\"GET\"") != NULL);
    CHECK(strstr(g_last_req, "\"uri\":\"http://127.0.0.1:9/b/t/x.parquet\"") != NULL);
    CHECK(strstr(g_last_req, "\"region\":\"us-east-1\"") != NULL);
    CHECK(strstr(g_last_req, "x-amz-content-sha256") != NULL);
    CHECK(hs_s3_open("s3://b/t/x.parquet", &f, &err) == HS_IO);
    CHECK(g_sign_calls == 1);
    CHECK(hs_s3_sign_requests() == before + 1);
    /* not cacheable: asked every time */
    g_sign_cacheable = false;
    CHECK(hs_s3_open("s3://b/t/y.parquet", &f, &err) == HS_IO);
    CHECK(hs_s3_open("s3://b/t/y.parquet", &f, &err) == HS_IO);
    CHECK(g_sign_calls == 3);
    /* refused: the signer's message, and nothing sent (no connection error) */
    g_sign_refuse = true;
    hs_error e2 = { 0 };
    CHECK(hs_s3_open("s3://b/t/z.parquet", &f, &e2) == HS_INVALID);
    CHECK(strstr(e2.msg, "S3 signer: HTTP 403 ForbiddenException: not yours") != NULL);
    g_sign_refuse = false;
    /* outside the scope: our own (absent) keys, no signer */
    int calls = g_sign_calls;
    CHECK(hs_s3_open("s3://b/other/x.parquet", &f, &err) == HS_IO);
    CHECK(g_sign_calls == calls);
    hs_s3_clear_scopes();
    unsetenv("HS_S3_MAX_ATTEMPTS");
    hs_s3_reset();
}

int main(void)
{
    HS_RUN(test_signatures_match_botocore);
    HS_RUN(test_refusals);
    HS_RUN(test_malformed_and_no_keys);
    HS_RUN(test_response_parse);
    HS_RUN(test_client_asks_the_signer_and_caches);
    return hs_test_summary();
}

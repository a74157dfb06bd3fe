/* libFuzzer target: one request to the Iceberg REST catalog server
 * (server/restcat.h), whose bodies are untrusted JSON.  The input is
 *
 *   "<METHOD> <PATH>\n<body>"   routed by rc_handle over a SQL catalog in a
 *                               temporary directory (state accumulates, as on
 *                               a real server)
 *   "COMMIT\n<body>"            a CommitTableRequest applied to a fixed table's
 *                               metadata by rc_apply_commit, then validated
 *   "SIGNRESP\n<body>"          an S3 signer's answer, decoded by the client
 *                               (io/s3.h's hs_s3_sign_response_parse)
 *
 * "POST /v1/aws/s3/sign" bodies reach the S3 signer (io/s3_sign.c) with
 * fixed fake keys from the environment (no request leaves the process).
 *
 * The answer must be a status the server documents, with a JSON body (or
 * none for 204); an applied commit that validates must parse again. */
#include "base/numfmt.h"
#include "iceberg/model.h"
#include "io/s3.h"
#include "server/restcat.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static rc_server *g_srv;
static json_t *g_base;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* the signer signs with these; nothing is sent anywhere */
    setenv("AWS_ACCESS_KEY_ID", "AKIDFUZZ", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "fuzz-secret", 1);
    setenv("AWS_REGION", "us-east-1", 1);
    setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1", 1);
    setenv("HS_S3_MAX_ATTEMPTS", "1", 1);
    char dir[] = "/tmp/fuzz_restcat.XXXXXX";
    if (!mkdtemp(dir))
        abort();
    char db[sizeof dir + 16];
    snprintf(db, sizeof db, "%s/cat.db", dir);
    rc_config cfg = { .sqlite_path = db };
    hs_error err = { 0 };
    if (rc_new(&cfg, &g_srv, &err) != HS_OK)
        abort();
    char *m = ice_debug_new_metadata(
        "/tmp/fuzz_restcat_table",
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"required\":"
        "false,\"type\":\"long\"},{\"id\":2,\"name\":\"s\",\"required\":false,\"type\":\"string\"}]}",
        "{\"spec-id\":0,\"fields\":[{\"source-id\":1,\"field-id\":1000,\"name\":\"b\","
        "\"transform\":\"bucket[4]\"}]}",
        NULL, 2, &err);
    json_error_t je;
    g_base = m ? hs_json_loads(m, 0, &je) : NULL;
    ice_debug_free(m);
    if (!g_base)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    if (!in)
        return 0;
    memcpy(in, data, size);
    in[size] = 0;
    char *nl = strchr(in, '\n');
    char *body = nl ? nl + 1 : in + size;
    if (nl)
        *nl = 0;
    if (strcmp(in, "SIGNRESP") == 0) {
        hs_s3_signed sig;
        hs_error err = { 0 };
        if (hs_s3_sign_response_parse(body, size - (size_t)(body - in), &sig, &err) == HS_OK) {
            if (strncmp(sig.uri, "http", 4) != 0)
                abort();
            for (size_t i = 0; i < sig.n; i++)
                if (!strchr(sig.hdr[i], ':') || strpbrk(sig.hdr[i], "\r\n"))
                    abort(); /* one header line each */
            hs_s3_signed_free(&sig);
        }
    } else if (strcmp(in, "COMMIT") == 0) {
        json_error_t je;
        json_t *req = hs_json_loads(body, 0, &je), *out = NULL;
        hs_error err = { 0 };
        if (req && rc_apply_commit(g_base, "/tmp/fuzz_restcat_table/metadata/v1.metadata.json",
                                   req, &out, &err) == HS_OK) {
            hs_buf text = { 0 };
            if (rc_validate_metadata(out, &text, &err) == HS_OK) {
                ice_table_metadata m = { 0 };
                if (ice_metadata_parse((const char *)text.data, text.len, &m, &err) != HS_OK)
                    abort(); /* validated once, must parse again */
                ice_metadata_free(&m);
            }
            hs_buf_free(&text);
        }
        json_decref(out);
        json_decref(req);
    } else {
        char *sp = strchr(in, ' ');
        if (sp) {
            *sp = 0;
            hs_http_request req = { .method = in, .path = sp + 1, .body = body,
                                    .body_len = strlen(body) };
            hs_http_response resp = { .status = 200 };
            rc_handle(g_srv, &req, &resp);
            int s = resp.status;
            if (s != 200 && s != 204 && s != 400 && s != 401 && s != 403 && s != 404 &&
                s != 405 && s != 406 && s != 409 && s != 422 && s != 500 && s != 503)
                abort();
            if (s != 204) {
                json_error_t je;
                json_t *j = hs_json_loadb((const char *)resp.body.data, resp.body.len, 0, &je);
                if (!j)
                    abort(); /* every answer is JSON */
                json_decref(j);
            }
            hs_buf_free(&resp.body);
        }
    }
    free(in);
    return 0;
}

/*
 * server/restcat.h - the Iceberg REST catalog server (the REST Catalog API
 * of Apache Iceberg's open-api/rest-catalog-open-api.yaml), backed by the
 * SQL catalog (catalog/sql.c: a SQLite file in pyiceberg SqlCatalog / Java
 * JdbcCatalog layout), so pyiceberg, Java, Spark and our own REST client
 * (catalog/rest.c) share tables with every tool that opens that file.
 *
 *   restcat.c         routing, auth, namespaces, tables, error responses
 *   restcat_update.c  CommitTableRequest: requirements and updates applied to
 *                     the metadata JSON (compare-and-swap through the catalog)
 *
 * rc_handle answers one request; server/http.c carries it over HTTP and
 * `hyperstream serve` (cli/cmd_serve.c) runs it.  It is thread-safe: each
 * request opens its own SQLite connection.  docs/catalogs.md lists the
 * endpoints and the authentication.
 */
#ifndef HS_SERVER_RESTCAT_H
#define HS_SERVER_RESTCAT_H

#include "base/buf.h"
#include "base/error.h"
#include "server/http.h"

#include <jansson.h>

typedef struct rc_server rc_server;

typedef struct rc_config {
    const char *sqlite_path;    /* the SQL catalog's file (created if absent) */
    const char *catalog_name;   /* its catalog_name; NULL = "default" */
    const char *warehouse;      /* where new tables go; NULL = beside the file */
    /* Bearer token every request must carry (Authorization: Bearer <token>);
     * NULL = no authentication. */
    const char *token;
    /* OAuth2 client credentials accepted by POST /v1/oauth/tokens, which then
     * issues `token`; NULL = that endpoint answers 401. */
    const char *client_id;
    const char *client_secret;
    /* Vend this server's S3 settings (endpoint, region, keys, session token
     * and its expiry: io.h's hs_io_vend_properties) with every table on
     * S3, as "config" and "storage-credentials" of the LoadTableResult and
     * at GET .../tables/{t}/credentials. */
    bool vend_credentials;
    /* Remote signing: vend s3.remote-signing-enabled=true (and pyiceberg's
     * s3.signer=S3V4RestSigner) with the endpoint and region but no keys,
     * so clients have their S3 requests signed at POST /v1/aws/s3/sign.
     * That endpoint answers whenever this server has S3 keys, for objects
     * inside the catalog's tables' directories only. */
    bool remote_signing;
} rc_config;

/* Copies cfg; opens the catalog once to create the schema.  Caller frees
 * with rc_free. */
HS_MUST_USE hs_status rc_new(const rc_config *cfg, rc_server **out, hs_error *err);
void rc_free(rc_server *s);   /* accepts NULL */

/* Answers one request (an hs_http_handler with ctx = the rc_server).
 * req->conn_ may be NULL (tests and fuzzers): then there are no query
 * arguments or headers. */
void rc_handle(void *server, const hs_http_request *req, hs_http_response *resp);

/* restcat_update.c: checks req's requirements against base (NULL when the
 * table does not exist) and applies its updates to a copy, returned in *out
 * (caller decrefs).  HS_INVALID for a malformed request, HS_CONFLICT for a
 * failed requirement, HS_NOT_FOUND when the table is missing and the request
 * does not create it. */
HS_MUST_USE hs_status rc_apply_commit(json_t *base, const char *base_location, json_t *req,
                                      json_t **out, hs_error *err);
/* Serializes doc into text and checks it with the iceberg model
 * (HS_INVALID with the model's message when it is not valid metadata). */
HS_MUST_USE hs_status rc_validate_metadata(json_t *doc, hs_buf *text, hs_error *err);

#endif

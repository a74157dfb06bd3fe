/*
 * server/http.h - a small HTTP/1.1 server layer over libmicrohttpd, shared by
 * the servers of server/ (the Iceberg REST catalog first).
 *
 * A server calls one handler per request, after the whole body arrived
 * (bodies above max_body get 413 without calling it).  The handler fills an
 * hs_http_response (status, body, content type, extra headers); the layer
 * sends it.  Handlers run on libmicrohttpd's worker threads (a pool of
 * n_threads): they must be thread-safe and must not keep pointers into the
 * request after returning.
 *
 * Authentication is the handler's business (hs_http_header gives the
 * Authorization header); the layer only binds the address it is told, and
 * defaults to 127.0.0.1.
 *
 * Ownership: hs_http_stop frees the server (accepts NULL); strings returned
 * by hs_http_query / hs_http_header are borrowed for the handler call.
 */
#ifndef HS_SERVER_HTTP_H
#define HS_SERVER_HTTP_H

#include "base/buf.h"
#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct hs_http_server hs_http_server;

typedef struct hs_http_request {
    const char *method;   /* "GET", "POST", ... */
    const char *path;     /* raw path without the query string (not URL-decoded:
                           * split it, then decode each segment, hs_http_unescape) */
    const char *body;     /* NUL-terminated copy of the body ("" when none) */
    size_t body_len;
    void *conn_;          /* for hs_http_query / hs_http_header */
} hs_http_request;

typedef struct hs_http_response {
    int status;                 /* default 200 */
    hs_buf body;                /* owned by the layer; handlers append */
    const char *content_type;   /* static string; default "application/json" */
    const char *cache_control;  /* static string sent as Cache-Control; NULL = none */
} hs_http_response;

typedef void (*hs_http_handler)(void *ctx, const hs_http_request *req,
                                hs_http_response *resp);

typedef struct hs_http_options {
    const char *host;      /* numeric IPv4 address to bind; NULL = "127.0.0.1" */
    int port;              /* 0 = any free port (see hs_http_port) */
    int n_threads;         /* worker threads; <= 0 = 4 */
    size_t max_body;       /* bytes; 0 = 16 MiB */
} hs_http_options;

/* Starts listening; the handler runs until hs_http_stop. */
HS_MUST_USE hs_status hs_http_start(const hs_http_options *opt, hs_http_handler fn, void *ctx,
                                    hs_http_server **out, hs_error *err);
/* The bound port (useful after port 0). */
int hs_http_port(const hs_http_server *s);
/* Stops accepting, waits for running handlers, frees s (accepts NULL). */
void hs_http_stop(hs_http_server *s);

/* A query-string argument (URL-decoded) or request header; NULL if absent. */
const char *hs_http_query(const hs_http_request *req, const char *key);
const char *hs_http_header(const hs_http_request *req, const char *name);

/* Decodes %XX escapes of s in place (and '+' stays '+': path segments);
 * false when an escape is malformed or decodes to NUL. */
bool hs_http_unescape(char *s);

#endif

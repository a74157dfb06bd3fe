/*
 * server/http.c - the HTTP layer of server/http.h over libmicrohttpd.
 *
 * Request life cycle (libmicrohttpd's access handler is called several times
 * per request):
 *   1st call       allocate a conn_state (the body buffer) in *con_cls
 *   upload calls   append the body chunk; past max_body mark it too large
 *   last call      (*upload_data_size == 0) call the handler, or answer
 *                  413, and queue the response
 *   completed      free the conn_state (MHD_OPTION_NOTIFY_COMPLETED)
 *
 * The path is kept raw (MHD_OPTION_UNESCAPE_CALLBACK is a no-op for it:
 * libmicrohttpd would otherwise turn %2F into '/' before the handler could
 * split segments); query arguments are decoded by libmicrohttpd.
 */
#include "server/http.h"

#include "base/mem.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct hs_http_server {
    struct MHD_Daemon *d;
    hs_http_handler fn;
    void *ctx;
    size_t max_body;
    int port;
};

typedef struct conn_state {
    hs_buf body;
    int too_large;
} conn_state;

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool hs_http_unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '%') {
            int hi = hexval((unsigned char)r[1]), lo = hi < 0 ? -1 : hexval((unsigned char)r[2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return false;
            *w++ = (char)(hi * 16 + lo);
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = 0;
    return true;
}

/* Keeps the path raw (see the header comment); returns its length. */
static size_t no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
    (void)cls;
    (void)c;
    return strlen(s);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    conn_state *cs = *con_cls;
    if (cs) {
        hs_buf_free(&cs->body);
        hs_free(cs);
        *con_cls = NULL;
    }
}

static enum MHD_Result send_resp(struct MHD_Connection *c, int status, const void *body,
                                 size_t len, const char *ctype, const char *cache_control)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    if (cache_control)
        MHD_add_response_header(r, "Cache-Control", cache_control);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result access_cb(void *cls, struct MHD_Connection *c, const char *url,
                                 const char *method, const char *version,
                                 const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    (void)version;
    hs_http_server *s = cls;
    conn_state *cs = *con_cls;
    if (!cs) {
        cs = hs_calloc(1, sizeof *cs);
        if (!cs)
            return MHD_NO;
        *con_cls = cs;
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!cs->too_large) {
            if (cs->body.len + *upload_data_size > s->max_body)
                cs->too_large = 1;
            else if (hs_buf_append(&cs->body, upload_data, *upload_data_size) != HS_OK)
                return MHD_NO;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (cs->too_large) {
        static const char msg[] = "{\"error\":{\"message\":\"request body too large\","
                                  "\"type\":\"BadRequestException\",\"code\":413}}";
        return send_resp(c, 413, msg, sizeof msg - 1, "application/json", NULL);
    }
    if (hs_buf_append_byte(&cs->body, 0) != HS_OK)
        return MHD_NO;
    hs_http_request req = {
        .method = method,
        .path = url,
        .body = (const char *)cs->body.data,
        .body_len = cs->body.len - 1,
        .conn_ = c,
    };
    hs_http_response resp = { .status = 200, .content_type = "application/json" };
    s->fn(s->ctx, &req, &resp);
    enum MHD_Result ret = send_resp(c, resp.status, resp.body.data ? (const void *)resp.body.data : "",
                                    resp.body.len, resp.content_type ? resp.content_type
                                                                     : "application/json",
                                    resp.cache_control);
    hs_buf_free(&resp.body);
    return ret;
}

hs_status hs_http_start(const hs_http_options *opt, hs_http_handler fn, void *ctx,
                        hs_http_server **out, hs_error *err)
{
    *out = NULL;
    const char *host = opt && opt->host ? opt->host : "127.0.0.1";
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)(opt ? opt->port : 0));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return hs_err_set(err, HS_INVALID, "%s: not a numeric IPv4 address to listen on", host);
    if (opt && (opt->port < 0 || opt->port > 65535))
        return hs_err_set(err, HS_INVALID, "port %d out of range", opt->port);
    hs_http_server *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    s->fn = fn;
    s->ctx = ctx;
    s->max_body = opt && opt->max_body ? opt->max_body : (size_t)16 << 20;
    unsigned threads = opt && opt->n_threads > 0 ? (unsigned)opt->n_threads : 4;
    s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_LINUX_ONLY |
                                MHD_USE_ERROR_LOG,
                            0, NULL, NULL, access_cb, s,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                            MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, s,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                            MHD_OPTION_END);
    if (!s->d) {
        hs_free(s);
        return hs_err_set(err, HS_IO, "cannot listen on %s:%d (address in use?)", host,
                          opt ? opt->port : 0);
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : (opt ? opt->port : 0);
    *out = s;
    return HS_OK;
}

int hs_http_port(const hs_http_server *s) { return s->port; }

void hs_http_stop(hs_http_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->d);
    hs_free(s);
}

const char *hs_http_query(const hs_http_request *req, const char *key)
{
    return MHD_lookup_connection_value(req->conn_, MHD_GET_ARGUMENT_KIND, key);
}

const char *hs_http_header(const hs_http_request *req, const char *name)
{
    return MHD_lookup_connection_value(req->conn_, MHD_HEADER_KIND, name);
}

/*
 * cli/cmd_serve.c - `hyperstream serve`: runs the servers of src/server.
 * Today that is the Iceberg REST catalog (server/restcat.h) over the SQL
 * catalog file given by --catalog (docs/catalogs.md):
 *
 *   hyperstream serve [--rest] --catalog FILE.db [--warehouse DIR]
 *                     [--catalog-name NAME] [--host 127.0.0.1] [--port 8181]
 *                     [--token-file F] [--client-id ID --client-secret-file F]
 *                     [--no-auth] [--port-file F] [--threads N] [--vend-credentials]
 *                     [--remote-signing]
 *
 * Authentication: a bearer token from $HYPERSTREAM_REST_TOKEN or
 * --token-file (first line) is required on every request; --client-id with
 * a secret lets OAuth2 clients exchange client credentials for that token at
 * POST /v1/oauth/tokens.  Without a token the server refuses to start unless
 * --no-auth is given.  The default address is loopback only.
 *
 * Runs until SIGINT or SIGTERM, then stops accepting, lets running requests
 * finish and exits 0.  --port-file writes the bound port (useful with
 * --port 0 in tests).
 */
#include "cli.h"

#include "server/http.h"
#include "server/restcat.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *to)
{
    fprintf(to,
            "Usage: hyperstream serve [--rest] --catalog FILE.db [options]\n\n"
            "Serves the Iceberg REST catalog API over a SQL catalog (a SQLite file in\n"
            "pyiceberg SqlCatalog / Java JdbcCatalog layout; created if absent).\n\n"
            "Options:\n"
            "  --catalog FILE.db        the SQL catalog file (required)\n"
            "  --catalog-name NAME      its catalog_name (default \"default\")\n"
            "  --warehouse DIR          where new tables go (default: beside FILE.db)\n"
            "  --host ADDR              IPv4 address to bind (default 127.0.0.1)\n"
            "  --port N                 port (default 8181; 0 = any free port)\n"
            "  --port-file F            write the bound port to F once listening\n"
            "  --threads N              worker threads (default 4)\n"
            "  --token-file F           bearer token clients must send (first line of F);\n"
            "                           default: $HYPERSTREAM_REST_TOKEN\n"
            "  --client-id ID           OAuth2 client id accepted at /v1/oauth/tokens\n"
            "  --client-secret-file F   its secret (first line of F)\n"
            "  --no-auth                serve without authentication (no token set)\n"
            "  --vend-credentials       hand clients this server's S3 settings and keys\n"
            "                           (with their expiry) for tables on S3, and serve\n"
            "                           GET .../tables/{t}/credentials\n"
            "  --remote-signing         hand clients s3.remote-signing-enabled instead of\n"
            "                           keys: they have each S3 request signed at\n"
            "                           POST /v1/aws/s3/sign (served whenever this server\n"
            "                           has S3 keys; objects inside its tables only)\n");
}

/* The first line of a small file, hs_malloc'ed into *out. */
static int read_first_line(const char *path, char **out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return cli_fail("%s: cannot open", path);
    char line[4096];
    char *r = fgets(line, sizeof line, f);
    fclose(f);
    if (!r)
        return cli_fail("%s: empty", path);
    line[strcspn(line, "\r\n")] = 0;
    if (!line[0])
        return cli_fail("%s: empty first line", path);
    *out = strdup(line);
    return *out ? 0 : cli_fail("out of memory");
}

int cmd_serve(int argc, char **argv)
{
    const char *catalog = NULL, *name = NULL, *warehouse = NULL, *host = "127.0.0.1";
    const char *token_file = NULL, *client_id = NULL, *secret_file = NULL, *port_file = NULL;
    int port = 8181, threads = 4, no_auth = 0;
    bool vend = false, remote_signing = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cli_is_help(a)) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--rest") == 0) {
            continue;
        } else if (strcmp(a, "--no-auth") == 0) {
            no_auth = 1;
            continue;
        } else if (strcmp(a, "--vend-credentials") == 0) {
            vend = true;
            continue;
        } else if (strcmp(a, "--remote-signing") == 0) {
            remote_signing = true;
            continue;
        }
        if (!v)
            return cli_usage_error("serve ", "%s needs a value", a);
        if (strcmp(a, "--catalog") == 0)
            catalog = v;
        else if (strcmp(a, "--catalog-name") == 0)
            name = v;
        else if (strcmp(a, "--warehouse") == 0)
            warehouse = v;
        else if (strcmp(a, "--host") == 0)
            host = v;
        else if (strcmp(a, "--port") == 0 || strcmp(a, "--threads") == 0) {
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || n < 0 || n > 65535)
                return cli_usage_error("serve ", "%s: bad number '%s'", a, v);
            if (a[2] == 'p')
                port = (int)n;
            else
                threads = (int)n;
        } else if (strcmp(a, "--port-file") == 0)
            port_file = v;
        else if (strcmp(a, "--token-file") == 0)
            token_file = v;
        else if (strcmp(a, "--client-id") == 0)
            client_id = v;
        else if (strcmp(a, "--client-secret-file") == 0)
            secret_file = v;
        else
            return cli_usage_error("serve ", "unknown option '%s'", a);
        i++;
    }
    if (!catalog)
        return cli_usage_error("serve ", "--catalog FILE.db is required");
    char *token = NULL, *secret = NULL;
    if (token_file) {
        if (read_first_line(token_file, &token))
            return CLI_EXIT_FAIL;
    } else if (getenv("HYPERSTREAM_REST_TOKEN") && *getenv("HYPERSTREAM_REST_TOKEN")) {
        token = strdup(getenv("HYPERSTREAM_REST_TOKEN"));
    }
    if (!token && !no_auth)
        return cli_usage_error("serve ", "no bearer token: set HYPERSTREAM_REST_TOKEN or "
                               "--token-file, or pass --no-auth to serve without "
                               "authentication");
    if (token && no_auth) {
        free(token);
        return cli_usage_error("serve ", "--no-auth conflicts with a configured token");
    }
    if ((client_id != NULL) != (secret_file != NULL)) {
        free(token);
        return cli_usage_error("serve ", "--client-id and --client-secret-file go together");
    }
    if (secret_file && read_first_line(secret_file, &secret)) {
        free(token);
        return CLI_EXIT_FAIL;
    }
    rc_config cfg = { .sqlite_path = catalog, .catalog_name = name, .warehouse = warehouse,
                      .token = token, .client_id = client_id, .client_secret = secret,
                      .vend_credentials = vend, .remote_signing = remote_signing };
    rc_server *rs = NULL;
    hs_http_server *hs = NULL;
    hs_error err = { 0 };
    hs_status st = rc_new(&cfg, &rs, &err);
    /* block the stop signals before the worker threads start: they inherit the mask */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    hs_http_options ho = { .host = host, .port = port, .n_threads = threads };
    if (st == HS_OK)
        st = hs_http_start(&ho, rc_handle, rs, &hs, &err);
    int rc = 0;
    if (st != HS_OK) {
        rc = cli_fail_err(st, &err);
    } else {
        fprintf(stderr, "hyperstream: Iceberg REST catalog on http://%s:%d (catalog %s%s)\n",
                host, hs_http_port(hs), catalog, token ? ", bearer token required" : ", NO auth");
        if (port_file) {
            FILE *f = fopen(port_file, "w");
            if (!f || fprintf(f, "%d\n", hs_http_port(hs)) < 0 || fclose(f) != 0)
                rc = cli_fail("%s: cannot write the port", port_file);
        }
        int sig;
        if (rc == 0)
            sigwait(&set, &sig);
    }
    hs_http_stop(hs);
    rc_free(rs);
    free(token);
    free(secret);
    return rc;
}

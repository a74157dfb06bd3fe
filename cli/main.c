/*
 * cli/main.c - `hyperstream`: dispatches to subcommands.
 *
 *   command              file            what
 *   -------------------  --------------  ------------------------------------
 *   parquet <tool> ...   cmd_parquet.c   schema, meta, cat, convert
 *   table <tool> ...     cmd_table.c     Iceberg tables (docs/tables.md)
 *   sql [WAREHOUSE]      cmd_sql.c       SQL shell and batch runner (docs/cli.md)
 *   serve [--rest] ...   cmd_serve.c     Iceberg REST catalog server (docs/catalogs.md)
 *   demo generate N OUT  cmd_demo.c      sample JSON Lines for `make run`
 *                                        (hidden: not in --help)
 *
 * New subcommands add one row to `commands` below.  Exit codes and the error
 * format are shared by all (cli.h).
 */
#include "cli.h"

#include "hyperstream/config.h"

#include <stdarg.h>
#include <string.h>

#ifndef HS_VERSION
#define HS_VERSION "0.0.0"
#endif

int cli_fail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("hyperstream: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("hyperstream: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'hyperstream %s--help' for usage.\n", cmd ? cmd : "");
    return CLI_EXIT_USAGE;
}

int cli_fail_err(hs_status st, const hs_error *err)
{
    if (err && err->msg[0])
        return cli_fail("%s", err->msg);
    return cli_fail("%s", hs_status_name(st));
}

hs_status cli_flush(hs_buf *b, size_t threshold)
{
    if (b->len <= threshold)
        return HS_OK;
    if (b->len && fwrite(b->data, 1, b->len, stdout) != b->len)
        return HS_IO;
    hs_buf_reset(b);
    return HS_OK;
}

int cli_is_help(const char *s)
{
    return strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0;
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary; /* NULL = hidden */
} commands[] = {
    {"parquet", cmd_parquet, "inspect Parquet files and convert JSON Lines / CSV to Parquet"},
    {"table", cmd_table, "Iceberg tables: create, append, scan, snapshots, evolve, delete"},
    {"sql", cmd_sql, "SQL shell (psql-like) and batch mode: -c SQL, -f FILE"},
    {"serve", cmd_serve, "servers: the Iceberg REST catalog (docs/catalogs.md)"},
    {"demo", cmd_demo, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "Usage: hyperstream <command> [options]\n\nCommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (commands[i].summary)
            fprintf(to, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(to, "\nOptions:\n  -h, --help     show this help\n  --version      print the version\n"
                "\nRun 'hyperstream <command> --help' for a command's options.\n");
}

/* The library never prints: its warnings (a corrupt sidecar skipped, a bad
 * HS_* environment value) come here, installed before anything else runs. */
static void print_warning(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "hyperstream: warning: %s\n", msg);
}

int main(int argc, char **argv)
{
    hs_set_warning_handler(print_warning, NULL);
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (cli_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("hyperstream %s\n", HS_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            int rc = commands[i].run(argc - 1, argv + 1);
            if (fflush(stdout) != 0 && rc == 0)
                rc = cli_fail("writing to stdout failed");
            return rc;
        }
    return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
}

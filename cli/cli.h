/*
 * cli/cli.h - shared pieces of the `hyperstream` program.
 *
 * Conventions of every subcommand (docs/cli.md):
 *   exit 0   success
 *   exit 1   the command failed; one line "hyperstream: <message>" on stderr
 *   exit 2   usage error; "hyperstream: <message>" and a usage hint on stderr
 * Results go to stdout, through cli_out (a large buffer flushed in 1 MiB
 * pieces), so tools can pipe them.
 */
#ifndef HS_CLI_CLI_H
#define HS_CLI_CLI_H

#include "base/buf.h"
#include "base/error.h"

#include <stdio.h>

#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

/* Prints "hyperstream: <message>" to stderr; returns CLI_EXIT_FAIL. */
int cli_fail(const char *fmt, ...) HS_PRINTF(1, 2);
/* Same, plus "Run 'hyperstream <cmd> --help' for usage."; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) HS_PRINTF(2, 3);
/* Prints the error (status name when the message is empty); returns CLI_EXIT_FAIL. */
int cli_fail_err(hs_status st, const hs_error *err);

/* Writes b to stdout when it holds more than `threshold` bytes, then empties it. */
hs_status cli_flush(hs_buf *b, size_t threshold);

/* True when s is "-h" or "--help". */
int cli_is_help(const char *s);

/* Subcommands: argv[0] is the subcommand name. */
int cmd_parquet(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_table(int argc, char **argv);
int cmd_table_search(int argc, char **argv);
int cmd_sql(int argc, char **argv);
int cmd_serve(int argc, char **argv);

#endif

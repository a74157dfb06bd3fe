/*
 * sql/sql_int.h - internals shared by the files of the SQL front end.
 *
 *   session.c   the public API of hyperstream/sql.h: sessions, the table
 *               registry, settings (SET/SHOW/RESET), results, prepared
 *               statements, SQLSTATEs, and the statement dispatcher
 *   plan.c      SELECT: libpg_query JSON -> bound relations -> operator tree
 *               (exec/exec.h), EXPLAIN, CREATE/DROP INDEX
 *   dml.c       INSERT/UPDATE/DELETE/MERGE/COPY/BEGIN/COMMIT/ROLLBACK
 *               (sq_exec_dml is its entry point; MERGE in dml_merge.c,
 *               COPY in dml_copy.c, the rows they share in dml_rows.c:
 *               dml_int.h)
 *
 * A statement runs as: text -> pg_query_parse -> jansson tree ->
 * sq_dispatch on the statement node's kind.  Errors set hs_error as the
 * rest of the library does and, through sq_fail, the session's SQLSTATE and
 * 1-based error position (hs_session_sqlstate/hs_session_error_position).
 * When a callee only set hs_error, the dispatcher derives the SQLSTATE from
 * the status and message (sq_guess_sqlstate) and the position from
 * "at character N" in the message.
 *
 * Ownership: the session owns what it opened (catalog tables looked up by
 * name, the path catalog); registered tables are borrowed.  A result owns
 * its stream until hs_result_stream moves it out.
 */
#ifndef HS_SQL_SQL_INT_H
#define HS_SQL_SQL_INT_H

#include "base/buf.h"
#include "base/error.h"
#include "exec/op.h"
#include "hyperstream/index.h"
#include "hyperstream/sql.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>

typedef struct hs_session sq_session;

typedef struct sq_table_ent {
    char *name;          /* registered name, or "ns.table" / path for opened ones (owned) */
    hs_table *t;
    bool owned;          /* opened by the session (closed with it) */
} sq_table_ent;

#define SQ_TEMP_DIR_MAX 512

typedef struct sq_settings {
    int ef_search;       /* hnsw.ef_search; 0 = the index's own */
    int probes;          /* ivfflat.probes; 0 = the index's own */
    int threads;         /* 0 = hs_config scan_threads (all cores) */
    int64_t memory_limit;/* bytes; 0 = 1/4 of RAM */
    char temp_dir[SQ_TEMP_DIR_MAX]; /* temp_directory (spill files); "" = $TMPDIR or /tmp */
} sq_settings;

/* A time-travel clause cut out of the statement text before parsing
 * (libpg_query does not know SQL:2011's FOR SYSTEM_TIME / SYSTEM_VERSION):
 * it applies to the table named just before offset `off`. */
typedef struct sq_tt {
    int off;                 /* byte offset where the clause was */
    bool version;            /* FOR SYSTEM_VERSION AS OF <snapshot id> */
    int64_t snapshot_id;
    char ts[64];             /* FOR SYSTEM_TIME AS OF '<timestamp>' */
    bool used;               /* a table took it (else the statement fails) */
} sq_tt;
#define SQ_MAX_TT 32

struct hs_session {
    hs_catalog *catalog;     /* borrowed (options) or NULL */
    hs_catalog *path_cat;    /* owned: names are paths; opened on first use */
    bool no_file_access;     /* hs_session_options.no_file_access */
    sq_table_ent *reg;       /* registered tables */
    int n_reg, cap_reg;
    sq_table_ent *opened;    /* tables the session opened by name (owned) */
    int n_opened, cap_opened;
    sq_settings set, defaults;
    atomic_int cancel;
    char sqlstate[6];
    int errpos;              /* 1-based character position, 0 = none */
    char errmsg[HS_ERROR_MSG_MAX];  /* message of the last failed call ("" after success) */
    void *dml;               /* sx-dml's per-session state (open transaction) */
    sq_tt tt[SQ_MAX_TT];     /* time-travel clauses of the running statement */
    int n_tt;
};

struct hs_result {
    char *tag;               /* owned */
    bool has_rows;
    bool stream_taken;
    int64_t rows_affected;
    struct ArrowArrayStream stream;  /* valid while has_rows && !stream_taken */
};

/* ---- errors ---- */

/* Sets err (code, message with "at character N" when loc >= 0, loc a byte
 * offset into text) and the session's SQLSTATE and position.  Returns code. */
hs_status sq_fail(sq_session *s, hs_error *err, hs_status code, const char *sqlstate,
                  const char *text, int loc, const char *fmt, ...) HS_PRINTF(7, 8);
/* Forgets a failure that the caller recovered from (err and the session's
 * SQLSTATE), so a later one reports its own. */
void sq_fail_clear(sq_session *s, hs_error *err);
/* The SQLSTATE PostgreSQL would give for an error the lower layers reported
 * only as a status and message. */
const char *sq_guess_sqlstate(hs_status code, const char *msg);
/* A result stream's get_next failed after its statement returned: sets the
 * session's SQLSTATE (from code and message, position 0) and its last error
 * message (hs_session_error_message), as a failed call would. */
void sq_stream_failed(sq_session *s, hs_status code, const hs_error *err);

/* ---- tables ---- */

/* The table a RangeVar node names: a registered name, a catalog's
 * namespace.table, or a path ("quoted" or schema-qualified with a path
 * catalog).  Borrowed from the session.  HS_NOT_FOUND + 42P01 when none. */
HS_MUST_USE hs_status sq_table_lookup(sq_session *s, const json_t *rangevar, const char *text,
                                      hs_table **out, hs_error *err);

/* HS_OK when the session may touch files by name (path tables, COPY
 * files); else 42501 at loc, naming what (hs_session_options.no_file_access). */
HS_MUST_USE hs_status sq_file_access(sq_session *s, const char *what, const char *text, int loc,
                                     hs_error *err);

/* ---- results ---- */

/* A result without rows: tag (copied), rows affected (-1 = none). */
HS_MUST_USE hs_status sq_result_tag(const char *tag, int64_t rows, hs_result **out, hs_error *err);
/* A result with rows: the stream is moved in (released on failure). */
HS_MUST_USE hs_status sq_result_rows(const char *tag, struct ArrowArrayStream *stream,
                                     hs_result **out, hs_error *err);

/* A result of one text column (SHOW, EXPLAIN): rows[i] NULL = SQL NULL. */
HS_MUST_USE hs_status sq_result_text(const char *tag, const char *colname, int n,
                                     const char *const *rows, hs_result **out, hs_error *err);

/* ---- statements ---- */

/* A statement context: cancellation, threads, memory limit from the
 * session's settings.  Caller frees with sq_ctx_free (or hands it to
 * xo_to_stream's on_close). */
HS_MUST_USE hs_status sq_ctx_new(sq_session *s, xo_ctx **out, hs_error *err);
void sq_ctx_free(void *ctx);  /* accepts NULL; frees the pool and kept schemas too */
/* Makes ctx own schema f (hs_malloc'ed; cleared and freed with ctx), for
 * schemas that expressions of the statement's operators are bound to. */
HS_MUST_USE hs_status sq_ctx_keep(xo_ctx *ctx, hs_field *f, hs_error *err);
/* How many schemas ctx keeps; sq_ctx_keep_release frees those kept after
 * that mark (their operators freed first): an operator that plans a
 * subquery again per row (plan_apply.c) keeps the statement's memory flat. */
int sq_ctx_keep_mark(xo_ctx *ctx);
/* A statement context of one thread sharing parent's cancel flag, memory
 * limit and spill directory, for plans run once per row (plan_apply.c),
 * where a thread pool's start-up would cost more than the rows; caller
 * frees with sq_ctx_free. */
HS_MUST_USE hs_status sq_ctx_new_serial(const xo_ctx *parent, xo_ctx **out, hs_error *err);
void sq_ctx_keep_release(xo_ctx *ctx, int mark);

/* Plans a query (SelectStmt node; text is the whole statement) into an
 * operator tree whose output is the query's result (plan.c).  *out owned
 * by the caller (xo_free). */
HS_MUST_USE hs_status sq_plan_query(sq_session *s, xo_ctx *ctx, const json_t *select,
                                    const char *text, xo_op **out, hs_error *err);

/* Evaluates each of the expressions nodes[0..n) (borrowed parse trees with
 * subqueries, correlated ones reading b's columns: EXISTS, IN, ANY/ALL,
 * scalar, in CASE and the like) per row of b, whose column c is named
 * quals[c].name (quals[c] NULL: unqualified), hidden[c] not visible by
 * name; outs[i] (caller frees) gets b->n_rows values in b's order (plan.c,
 * for UPDATE / DELETE: dml.c). */
HS_MUST_USE hs_status sq_eval_correlated(sq_session *s, const char *text, const hs_batch *b,
                                         const char *const *quals, const bool *hidden,
                                         json_t *const *nodes, int n, hs_column **outs, hs_error *err);

/* SELECT / VALUES / set operations: runs the query into a result. */
HS_MUST_USE hs_status sq_exec_query(sq_session *s, const json_t *select, const char *text,
                                    hs_result **out, hs_error *err);
/* EXPLAIN [ANALYZE] (plan_stmt.c). */
HS_MUST_USE hs_status sq_exec_explain(sq_session *s, const json_t *stmt, const char *text,
                                      hs_result **out, hs_error *err);
/* CREATE INDEX / DROP INDEX (plan_stmt.c). */
HS_MUST_USE hs_status sq_exec_index(sq_session *s, const char *kind, const json_t *stmt,
                                    const char *text, hs_result **out, hs_error *err);

/* DDL (ddl.c): CREATE/DROP/ALTER TABLE, CREATE TABLE AS, CREATE/DROP
 * SCHEMA.  sq_is_ddl says whether a statement node (kind, body) is one. */
bool sq_is_ddl(const char *kind, const json_t *stmt);
HS_MUST_USE hs_status sq_exec_ddl(sq_session *s, const char *kind, const json_t *stmt,
                                  const char *text, hs_result **out, hs_error *err);

/* DML and transaction statements (dml.c, helper sx-dml): InsertStmt,
 * UpdateStmt, DeleteStmt, MergeStmt, CopyStmt, TransactionStmt.  kind is the
 * node's name, stmt its body, text the whole statement.  Errors go through
 * sq_fail (or only hs_error: the dispatcher then derives the SQLSTATE). */
HS_MUST_USE hs_status sq_exec_dml(sq_session *s, const char *kind, const json_t *stmt,
                                  const char *text, hs_result **out, hs_error *err);
/* Whether the session has a BEGIN ... COMMIT block open (dml.c). */
bool sq_txn_open(const sq_session *s);
/* Frees s->dml (rolling back an open transaction); called by
 * hs_session_close.  Accepts s->dml == NULL. */
void sq_dml_session_free(sq_session *s);
/* The rows of t as the session's open transaction sees them, its own
 * uncommitted changes included (dml.c): *out = one batch of the table's
 * columns (field ids 1..n), or NULL when no open transaction wrote t. */
HS_MUST_USE hs_status sq_txn_view(sq_session *s, hs_table *t, hs_batch **out, hs_error *err);

/* ---- JSON helpers ---- */

/* {"Kind": body} -> kind and body; false when j is not such a node. */
bool sq_node(const json_t *j, const char **kind, json_t **body);
/* The "location" field of a node body, or -1. */
int sq_loc(const json_t *body);
/* The string of a {"String": {"sval": ...}} node (NULL when not one). */
const char *sq_str(const json_t *j);

#endif

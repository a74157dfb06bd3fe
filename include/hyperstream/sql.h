/*
 * hyperstream/sql.h - SQL sessions: PostgreSQL 15 grammar with pgvector
 * semantics over HyperStreamDB tables (docs/sql.md has the language).
 *
 * A session holds named tables (registered handles, tables of an attached
 * catalog as namespace.table, path tables as a quoted path), settings
 * (SET/SHOW: hnsw.ef_search, ivfflat.probes, threads, memory_limit,
 * temp_directory: where sorts and aggregates spill past memory_limit)
 * and at most one open transaction.  Statements run
 * through hs_session_execute (one shot) or a prepared statement with typed
 * parameters ($1, $2, ...).  Results leave as an ArrowArrayStream: the rows
 * of a query (SELECT, VALUES, EXPLAIN, SHOW); other statements return no
 * rows, only the command tag ("INSERT 0 5", "DELETE 3", "CREATE INDEX",
 * "SET") that hs_result_tag gives.
 *
 * Errors: every failing call sets hs_error as elsewhere and, in addition,
 * the session's SQLSTATE and error position (hs_session_sqlstate,
 * hs_session_error_position) as PostgreSQL would report them, so the
 * Postgres wire endpoint can answer with the same ErrorResponse fields.
 *
 * Threads: a session is used by one thread at a time, except
 * hs_session_cancel, which any thread may call at any time: the running
 * statement (and the result stream being read) stops with HS_CANCELLED.
 * Tables registered in several sessions may be used from several threads.
 */
#ifndef HYPERSTREAM_SQL_H
#define HYPERSTREAM_SQL_H

#include "hyperstream/arrow_c_abi.h"
#include "hyperstream/common.h"
#include "hyperstream/table.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hs_session hs_session;
typedef struct hs_prepared hs_prepared;
typedef struct hs_result hs_result;

typedef struct hs_session_options {
    size_t struct_size;        /* sizeof(hs_session_options) or 0; see common.h */
    int threads;               /* worker threads for one statement; 0 = hs_config scan_threads */
    int64_t memory_limit;      /* bytes for blocking operators; 0 = 1/4 of RAM */
    /* Catalog whose tables the session sees as namespace.table (borrowed,
     * must outlive the session; NULL = none).  Path tables are always
     * reachable as a quoted path: SELECT * FROM "/data/t". */
    hs_catalog *catalog;
    /* Nonzero: no access to files by name - quoted path tables (in queries
     * and DDL) and COPY to or from files or object URIs fail with SQLSTATE
     * 42501 (insufficient_privilege), as COPY to a file does for a
     * PostgreSQL role without pg_write_server_files.  For sessions of
     * untrusted clients (servers) and fuzz targets; registered tables and
     * the catalog's tables stay reachable.  Appended after 0.1: set
     * struct_size (HS_SESSION_OPTIONS_INIT) to use it. */
    int no_file_access;
} hs_session_options;
#define HS_SESSION_OPTIONS_INIT {sizeof(hs_session_options)}

HS_API hs_status hs_session_open(const hs_session_options *opt, hs_session **out, hs_error *err);
HS_API void hs_session_close(hs_session *s);  /* accepts NULL; rolls back an open transaction */

/* Makes table t visible as `name` (an unqualified identifier, compared as
 * PostgreSQL compares identifiers: unquoted names fold to lower case, so
 * register lower-case names or query them as "Quoted").  t is borrowed: it
 * must stay open until it is unregistered or the session is closed (tables
 * have no reference count; statements that write, such as INSERT, commit
 * through this handle).  Registering an existing name replaces it. */
HS_API hs_status hs_session_register(hs_session *s, const char *name, hs_table *t, hs_error *err);
HS_API hs_status hs_session_unregister(hs_session *s, const char *name, hs_error *err);

/* Session settings by name, as SET/SHOW would see them ("hnsw.ef_search",
 * "ivfflat.probes", "threads", "memory_limit", "temp_directory").
 * hs_session_get_setting writes the value as text into buf (NUL-terminated,
 * truncated to n bytes). */
HS_API hs_status hs_session_set(hs_session *s, const char *name, const char *value, hs_error *err);
HS_API hs_status hs_session_get_setting(hs_session *s, const char *name, char *buf, size_t n,
                                        hs_error *err);

/* Runs one statement (a trailing ';' is allowed; several statements are
 * HS_INVALID).  *out gets a result the caller frees with hs_result_free. */
HS_API hs_status hs_session_execute(hs_session *s, const char *sql, hs_result **out, hs_error *err);

/* Parameters ($n).  Types follow PostgreSQL's names ("integer", "text",
 * "vector(3)", ...); NULL or "" lets the statement decide (unknown). */
HS_API hs_status hs_session_prepare(hs_session *s, const char *sql, int n_param_types,
                                    const char *const *param_types, hs_prepared **out,
                                    hs_error *err);
HS_API int hs_prepared_param_count(const hs_prepared *p);
/* The parameter's resolved type name (borrowed; valid until hs_prepared_free). */
HS_API const char *hs_prepared_param_type(const hs_prepared *p, int i);
/* The result columns a query returns (an empty struct for other statements). */
HS_API hs_status hs_prepared_schema(const hs_prepared *p, struct ArrowSchema *out, hs_error *err);
/* Runs it with parameter values given as text in PostgreSQL's input format
 * (values[i] NULL = SQL NULL). */
HS_API hs_status hs_prepared_execute(hs_prepared *p, int n_values, const char *const *values,
                                     hs_result **out, hs_error *err);
HS_API void hs_prepared_free(hs_prepared *p);  /* accepts NULL */

/* Stops the statement running in s (or the stream being read) with
 * HS_CANCELLED.  Async-signal-safe: may be called from a signal handler. */
HS_API void hs_session_cancel(hs_session *s);

/* SQLSTATE of the last failed call on s ("42P01", ...; "00000" after
 * success), and the 1-based character position in the statement text the
 * error refers to (0 = none). */
HS_API const char *hs_session_sqlstate(const hs_session *s);
HS_API int hs_session_error_position(const hs_session *s);
/* The message of the last failed call on s ("" after success; borrowed
 * until the next call on s).  A result stream whose get_next fails after
 * its statement returned (an error found while the rows stream: division
 * by zero in a later batch, I/O, cancel) sets the session's SQLSTATE and
 * this message too, position 0; the stream's get_last_error has the same
 * message. */
HS_API const char *hs_session_error_message(const hs_session *s);

/* A result: the command tag, and for statements that return rows a stream
 * that can be taken once.  The stream holds what it needs: it may outlive
 * the result and the session's next statements, but not the session. */
HS_API const char *hs_result_tag(const hs_result *r);      /* "SELECT 3", "INSERT 0 1", ... */
HS_API int hs_result_has_rows(const hs_result *r);
HS_API int64_t hs_result_rows_affected(const hs_result *r); /* DML: rows; queries: -1 until drained */
HS_API hs_status hs_result_stream(hs_result *r, struct ArrowArrayStream *out, hs_error *err);
HS_API void hs_result_free(hs_result *r);  /* accepts NULL */

#ifdef __cplusplus
}
#endif
#endif

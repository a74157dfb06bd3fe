/*
 * sql/session.c - SQL sessions (hyperstream/sql.h): the table registry,
 * settings, results, prepared statements, SQLSTATEs and the dispatcher.
 *
 * Statement flow:
 *
 *   text --sq_parse (libpg_query, on a big-stack thread for deep text)-->
 *   JSON --jansson--> exactly one RawStmt --dispatch(kind)-->
 *       SelectStmt                  sq_exec_query (plan.c)
 *       ExplainStmt                 sq_exec_explain (plan_stmt.c)
 *       IndexStmt, DropStmt(index)  sq_exec_index (plan_stmt.c)
 *       Create[TableAs]Stmt, AlterTableStmt, RenameStmt, DropStmt(table),
 *       Create/DropStmt(schema)     sq_exec_ddl (ddl.c)
 *       VariableSetStmt / Show      settings (here)
 *       Insert/Update/Delete/Merge/Copy/TransactionStmt
 *                                   sq_exec_dml (dml.c)
 *       anything else               0A000 feature_not_supported
 *
 * Prepared statements keep the text and the parameter types; executing one
 * parses the text again and replaces every ParamRef node ($n) by
 * CAST('value' AS type) (or NULL), so the planner sees constants and binds
 * them with PostgreSQL's input rules for the declared type.  A parameter
 * without a declared type is an untyped literal ('value'), which takes its
 * type from where it is used, as PostgreSQL's unknown does.
 *
 * SQLSTATE: sq_fail sets it with the position; when an error comes from a
 * lower layer (hs_error only), the dispatcher derives it with
 * sq_guess_sqlstate and takes the position from "at character N".
 */
#include "base/numfmt.h"
#include "sql/sql_int.h"

#include "base/config.h"
#include "base/mem.h"
#include "base/opts.h"
#include "base/threadpool.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"

#include <ctype.h>
#include <pg_query.h>
#include <pthread.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define SQ_MAX_TEXT (64u << 20)

/* ------------------------------------------------------------------ */
/* JSON helpers                                                        */

bool sq_node(const json_t *j, const char **kind, json_t **body)
{
    if (!json_is_object(j) || json_object_size(j) != 1)
        return false;
    void *it = json_object_iter((json_t *)j);
    *kind = json_object_iter_key(it);
    *body = json_object_iter_value(it);
    return json_is_object(*body);
}

int sq_loc(const json_t *body)
{
    json_t *l = json_object_get(body, "location");
    if (!json_is_integer(l))
        return -1;
    json_int_t v = json_integer_value(l);
    return v >= 0 && v <= INT32_MAX ? (int)v : -1;
}

const char *sq_str(const json_t *j)
{
    const char *k;
    json_t *b;
    if (!sq_node(j, &k, &b) || strcmp(k, "String") != 0)
        return NULL;
    json_t *s = json_object_get(b, "sval");
    return json_is_string(s) ? json_string_value(s) : "";
}

/* ------------------------------------------------------------------ */
/* errors                                                              */

static int char_pos(const char *text, int loc)
{
    if (!text || loc < 0)
        return 0;
    size_t len = strlen(text), at = (size_t)loc < len ? (size_t)loc : len;
    int ch = 1;
    for (size_t i = 0; i < at; i++)
        ch += ((unsigned char)text[i] & 0xC0) != 0x80;
    return ch;
}

static void set_state(sq_session *s, const char *state, int pos)
{
    if (!s)
        return;
    snprintf(s->sqlstate, sizeof s->sqlstate, "%s", state);
    s->errpos = pos;
}

hs_status sq_fail(sq_session *s, hs_error *err, hs_status code, const char *sqlstate,
                  const char *text, int loc, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int pos = char_pos(text, loc);
    if (pos > 0)
        hs_err_set(err, code, "%s at character %d", msg, pos);
    else
        hs_err_set(err, code, "%s", msg);
    set_state(s, sqlstate, pos);
    return code;
}

void sq_fail_clear(sq_session *s, hs_error *err)
{
    hs_err_clear(err);
    set_state(s, "00000", 0);
}

const char *sq_guess_sqlstate(hs_status code, const char *msg)
{
    static const struct { const char *needle, *state; } t[] = {
        {"syntax error", "42601"},
        {"which is not a composite type", "42809"},
        {"multiple decimal points", "42601"},
        {"is ambiguous", "42702"},
        {"column \"", "42703"},
        {"unknown column", "42703"},
        {"relation \"", "42P01"},
        {"function ", "42883"},
        {"operator does not exist", "42883"},
        {"division by zero", "22012"},
        {"cannot determine type of empty array", "42P18"},
        {"date field value out of range", "22008"},
        {"requested character", "54000"},
        {"null character not permitted", "54000"},
        {"requested length too large", "54000"},
        {"invalid regular expression option", "22023"},
        {"invalid regular expression", "2201B"},
        {"regular expression failed", "2201B"},
        {"logarithm of", "2201E"},
        {"raised to a", "2201F"},
        {"numeric field overflow", "22003"},
        {"input is out of range", "22003"},
        {"invalid value for parameter", "22023"},
        {"interval field value out of range", "22015"},
        {"interval out of range", "22008"},
        {"initial position must not be null", "22004"},
        {"offset must not be null", "22004"},
        {"invalid preceding or following size", "22013"},
        {"out of range", "22003"},
        {"invalid input syntax for type interval", "22007"},
        {"malformed array literal", "22P02"},
        {"array size exceeds", "54000"},
        {"invalid input syntax", "22P02"},
        {"invalid input", "22P02"},
        {"must be type", "42804"},
        {"cannot be matched", "42804"},
        {"could not determine polymorphic type", "42804"},
        {"cannot cast", "42846"},
        {"must appear in the GROUP BY", "42803"},
        {"aggregate functions are not allowed", "42803"},
        {"more than one row returned", "21000"},
        {"different vector dimensions", "22000"},
        {"number of array dimensions", "54000"},
        {"dimensions", "22000"},
        {"too many", "54000"},
        {"nested too deeply", "54001"},
    };
    if (code == HS_OK)
        return "00000";
    if (code == HS_CANCELLED)
        return "57014";
    if (code == HS_NOMEM)
        return "53200";
    if (code == HS_IO)
        return "58030";
    if (code == HS_CORRUPT)
        return "XX001";
    if (code == HS_INTERNAL)
        return "XX000";
    if (code == HS_CONFLICT)
        return "40001";
    if (code == HS_UNSUPPORTED)
        return "0A000";
    for (size_t i = 0; msg && i < sizeof t / sizeof t[0]; i++)
        if (strstr(msg, t[i].needle) && !(code == HS_NOT_FOUND && !strcmp(t[i].state, "22P02")))
            return t[i].state;
    if (code == HS_NOT_FOUND)
        return "42704";
    return "22023";
}

/* Fills the session's SQLSTATE from err when the callee did not. */
static void settle_error(sq_session *s, hs_status st, const hs_error *err)
{
    if (st == HS_OK) {
        set_state(s, "00000", 0);
        s->errmsg[0] = 0;
        return;
    }
    snprintf(s->errmsg, sizeof s->errmsg, "%s", err && err->msg[0] ? err->msg : hs_status_name(st));
    if (strcmp(s->sqlstate, "00000") != 0)
        return;
    const char *msg = err ? err->msg : NULL;
    int pos = 0;
    const char *at = msg ? strstr(msg, " at character ") : NULL;
    if (at)
        pos = atoi(at + 14);
    set_state(s, sq_guess_sqlstate(st, msg), pos);
}

void sq_stream_failed(sq_session *s, hs_status code, const hs_error *err)
{
    if (!s || code == HS_OK)
        return;
    const char *msg = err && err->msg[0] ? err->msg : hs_status_name(code);
    set_state(s, sq_guess_sqlstate(code, msg), 0);
    snprintf(s->errmsg, sizeof s->errmsg, "%s", msg);
}

/* ------------------------------------------------------------------ */
/* parsing                                                             */

/* An upper bound on how deeply text can nest (see expr_bind.c). */
static size_t nest_bound(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(isalnum(c) || c == '_' || c == ',' || isspace(c) || c == ')' || c == ';' ||
              c == '.' || c >= 0x80))
            count++;
        else if (isalpha(c) && (i == 0 || !isalnum((unsigned char)s[i - 1])))
            count++;
    }
    return count;
}

typedef struct pg_job {
    const char *query;
    PgQueryParseResult r;
} pg_job;

static void *pg_thread(void *arg)
{
    pg_job *j = arg;
    j->r = pg_query_parse(j->query);
    return NULL;
}

#define SQ_DIRECT_NEST 1000
#define SQ_MAX_NEST 200000u

/* The parser truncates identifiers to NAMEDATALEN - 1 = 63 bytes, as
 * PostgreSQL does; a path table ("quoted" in the text, unqualified) is a
 * file path, which may be longer: every such RangeVar gets its whole name
 * back from the text at its location.  Iterative (trees may nest deeply);
 * false when out of memory. */
static bool untruncate_paths(json_t *root, const char *text, size_t len)
{
    size_t n = 0, cap = 64;
    json_t **stack = hs_malloc(cap * sizeof *stack);
    if (!stack)
        return false;
    stack[n++] = root;
    bool ok = true;
    while (n > 0 && ok) {
        json_t *j = stack[--n];
        /* a RangeVar's body: {"RangeVar": {..}} in node lists, bare where
         * the field's type is RangeVar (CreateStmt.relation, ...) */
        json_t *rv = json_is_object(j) ? j : NULL;
        const char *rel = rv ? json_string_value(json_object_get(rv, "relname")) : NULL;
        json_t *jl = rv ? json_object_get(rv, "location") : NULL;
        size_t rl = rel ? strlen(rel) : 0;
        if (rl >= 60 && !json_object_get(rv, "schemaname") && json_is_integer(jl) &&
            json_integer_value(jl) >= 0 && (size_t)json_integer_value(jl) < len &&
            text[json_integer_value(jl)] == '"') {
            /* "..." with "" for a quote, as the scanner reads it */
            const char *p = text + json_integer_value(jl) + 1, *end = text + len;
            char *full = hs_malloc((size_t)(end - p) + 1);
            size_t k = 0;
            while (full && p < end && !(p[0] == '"' && (p + 1 >= end || p[1] != '"'))) {
                full[k++] = *p;
                p += p[0] == '"' ? 2 : 1;
            }
            if (full) {
                full[k] = 0;
                if (p < end && k > rl && memcmp(full, rel, rl) == 0 &&
                    json_object_set_new(rv, "relname", json_string(full)) != 0)
                    ok = false;
                hs_free(full);
            } else {
                ok = false;
            }
        }
        size_t add = json_is_object(j)  ? json_object_size(j)
                     : json_is_array(j) ? json_array_size(j)
                                        : 0;
        if (n + add > cap) {
            size_t nc = (n + add) * 2;
            json_t **ns = hs_realloc(stack, nc * sizeof *ns);
            if (!ns) {
                ok = false;
                break;
            }
            stack = ns;
            cap = nc;
        }
        const char *key;
        json_t *v;
        size_t i;
        if (json_is_object(j)) {
            json_object_foreach(j, key, v)
                if (json_is_object(v) || json_is_array(v))
                    stack[n++] = v;
        } else if (json_is_array(j)) {
            json_array_foreach(j, i, v)
                if (json_is_object(v) || json_is_array(v))
                    stack[n++] = v;
        }
    }
    hs_free(stack);
    return ok;
}

/* libpg_query (15) writes the integer constants 0 and the negative ones
 * (doNegate's) as "ival": {} without their value, so -1, -2 and 0 would be
 * the same node to every comparison of parse trees (sum(a + -1) and
 * sum(a + -2) one aggregate): the value is read back from the text at the
 * constant's location ("-", blanks, digits) and written in. */
static bool fill_ivals(json_t *j, const char *text, size_t len, int depth)
{
    if (depth > 1000 || !j)   /* (deeper constants keep the text reading of their users) */
        return true;
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++)
            if (!fill_ivals(json_array_get(j, i), text, len, depth + 1))
                return false;
        return true;
    }
    if (!json_is_object(j))
        return true;
    json_t *c = json_object_get(j, "A_Const");
    json_t *iv = c ? json_object_get(c, "ival") : NULL;
    json_t *loc = c ? json_object_get(c, "location") : NULL;
    if (iv && json_is_object(iv) && !json_object_get(iv, "ival") && json_is_integer(loc) &&
        json_integer_value(loc) >= 0 && (size_t)json_integer_value(loc) < len) {
        const char *t = text + json_integer_value(loc);
        bool neg = false;
        while (*t == '(' || *t == '-' || isspace((unsigned char)*t)) {
            neg ^= *t == '-';
            t++;
        }
        long long v = 0;
        for (; *t >= '0' && *t <= '9' && v < 100000000000000000LL; t++)
            v = v * 10 + (*t - '0');
        return json_object_set_new(iv, "ival", json_integer(neg ? -v : v)) == 0;
    }
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
        if (!fill_ivals(v, text, len, depth + 1))
            return false;
    return true;
}

/* Parses text into *root (caller json_decref's). */
static hs_status sq_parse(sq_session *s, const char *text, json_t **root, hs_error *err)
{
    *root = NULL;
    size_t len = strlen(text);
    if (len > SQ_MAX_TEXT)
        return sq_fail(s, err, HS_INVALID, "54000", NULL, -1,
                       "statement is %zu bytes, more than the limit of %u", len, SQ_MAX_TEXT);
    size_t bound = nest_bound(text, len);
    if (bound > SQ_MAX_NEST)
        return sq_fail(s, err, HS_INVALID, "54001", NULL, -1,
                       "statement too complex: more than %u operators, words and parentheses",
                       SQ_MAX_NEST);
    pg_job job = {.query = text};
    if (bound <= SQ_DIRECT_NEST) {
        job.r = pg_query_parse(text);
    } else {
        pthread_attr_t attr;
        pthread_t th;
        size_t stack = bound * 512 + (1u << 20);
        if (pthread_attr_init(&attr) != 0)
            return sq_fail(s, err, HS_NOMEM, "53200", NULL, -1, "cannot start the parser thread");
        int rc = pthread_attr_setstacksize(&attr, stack);
        if (rc == 0)
            rc = pthread_create(&th, &attr, pg_thread, &job);
        pthread_attr_destroy(&attr);
        if (rc != 0)
            return sq_fail(s, err, HS_NOMEM, "53200", NULL, -1,
                           "cannot start the parser thread (%zu-byte stack)", stack);
        pthread_join(th, NULL);
    }
    if (job.r.error) {
        int loc = job.r.error->cursorpos > 0 ? job.r.error->cursorpos - 1 : -1;
        const char *msg = job.r.error->message ? job.r.error->message : "syntax error";
        /* the grammar's checks of window frames raise ERRCODE_WINDOWING_ERROR
         * (libpg_query reports no SQLSTATE; they all read "frame ...") */
        hs_status st = sq_fail(s, err, HS_INVALID, strncmp(msg, "frame ", 6) ? "42601" : "42P20",
                               text, loc, "%s", msg);
        pg_query_free_parse_result(job.r);
        return st;
    }
    json_error_t je;
    *root = job.r.parse_tree ? hs_json_loads(job.r.parse_tree, 0, &je) : NULL;
    pg_query_free_parse_result(job.r);
    if (!*root)
        return sq_fail(s, err, HS_INVALID, "54001", NULL, -1, "statement nested too deeply");
    if (!untruncate_paths(*root, text, len) || !fill_ivals(*root, text, len, 0)) {
        json_decref(*root);
        *root = NULL;
        return hs_err_nomem(err, len);
    }
    return HS_OK;
}

/* The one statement of a parse tree: *stmt = {"Kind": body}. */
static hs_status one_stmt(sq_session *s, json_t *root, const char *text, json_t **stmt,
                          hs_error *err)
{
    json_t *stmts = json_object_get(root, "stmts");
    size_t n = json_array_size(stmts);
    if (n == 0)
        return sq_fail(s, err, HS_INVALID, "42601", NULL, -1, "empty statement");
    if (n > 1) {
        json_t *l = json_object_get(json_array_get(stmts, 1), "stmt_location");
        return sq_fail(s, err, HS_INVALID, "42601", text,
                       json_is_integer(l) ? (int)json_integer_value(l) : -1,
                       "cannot run several statements in one call");
    }
    *stmt = json_object_get(json_array_get(stmts, 0), "stmt");
    const char *k;
    json_t *b;
    if (!sq_node(*stmt, &k, &b))
        return sq_fail(s, err, HS_INTERNAL, "XX000", NULL, -1, "malformed parse tree");
    return HS_OK;
}

/* ------------------------------------------------------------------ */
/* sessions and tables                                                 */

static void defaults_of(const hs_session_options *opt, sq_settings *d)
{
    memset(d, 0, sizeof *d);
    d->threads = opt && opt->threads > 0 ? opt->threads : 0;
    d->memory_limit = opt && opt->memory_limit > 0 ? opt->memory_limit : 0;
}

hs_status hs_session_open(const hs_session_options *opt, hs_session **out, hs_error *err)
{
    *out = NULL;
    /* no_file_access was appended after 0.1: a struct_size of 0 means the
     * layout before it (base/opts.h) */
    hs_session_options opt_in_;
    if (opt) {
        HS_TRY(hs_opts_copy(&opt_in_, sizeof opt_in_, offsetof(hs_session_options, no_file_access),
                            opt, "hs_session_options", err));
        opt = &opt_in_;
    }
    hs_session *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    s->catalog = opt ? opt->catalog : NULL;
    s->no_file_access = opt && opt->no_file_access;
    defaults_of(opt, &s->defaults);
    s->set = s->defaults;
    atomic_init(&s->cancel, 0);
    set_state(s, "00000", 0);
    *out = s;
    return HS_OK;
}

static void ents_free(sq_table_ent *a, int n)
{
    for (int i = 0; i < n; i++) {
        if (a[i].owned)
            hs_table_close(a[i].t);
        hs_free(a[i].name);
    }
    hs_free(a);
}

void hs_session_close(hs_session *s)
{
    if (!s)
        return;
    sq_dml_session_free(s);
    ents_free(s->reg, s->n_reg);
    ents_free(s->opened, s->n_opened);
    hs_catalog_close(s->path_cat);
    hs_free(s);
}

static int find_ent(const sq_table_ent *a, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(a[i].name, name))
            return i;
    return -1;
}

static hs_status add_ent(sq_table_ent **a, int *n, int *cap, const char *name, hs_table *t,
                         bool owned, hs_error *err)
{
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        sq_table_ent *na = hs_realloc(*a, (size_t)nc * sizeof *na);
        if (!na)
            return hs_err_nomem(err, (size_t)nc * sizeof *na);
        *a = na;
        *cap = nc;
    }
    char *nm = hs_strdup(name);
    if (!nm)
        return hs_err_nomem(err, strlen(name));
    (*a)[*n] = (sq_table_ent){.name = nm, .t = t, .owned = owned};
    (*n)++;
    return HS_OK;
}

hs_status hs_session_register(hs_session *s, const char *name, hs_table *t, hs_error *err)
{
    if (!s || !name || !*name || !t)
        return hs_err_set(err, HS_INVALID, "hs_session_register: a session, a name and a table are needed");
    int i = find_ent(s->reg, s->n_reg, name);
    if (i >= 0) {
        s->reg[i].t = t;
        return HS_OK;
    }
    return add_ent(&s->reg, &s->n_reg, &s->cap_reg, name, t, false, err);
}

hs_status hs_session_unregister(hs_session *s, const char *name, hs_error *err)
{
    int i = s && name ? find_ent(s->reg, s->n_reg, name) : -1;
    if (i < 0)
        return hs_err_set(err, HS_NOT_FOUND, "no table is registered as \"%s\"", name ? name : "");
    hs_free(s->reg[i].name);
    memmove(&s->reg[i], &s->reg[i + 1], (size_t)(s->n_reg - i - 1) * sizeof *s->reg);
    s->n_reg--;
    return HS_OK;
}

hs_status sq_file_access(sq_session *s, const char *what, const char *text, int loc,
                         hs_error *err)
{
    if (!s->no_file_access)
        return HS_OK;
    return sq_fail(s, err, HS_UNSUPPORTED, "42501", text, loc,
                   "permission denied: %s are not available in this session", what);
}

/* Opens (once per session) the table `ident` of catalog cat. */
static hs_status open_cached(sq_session *s, hs_catalog *cat, const char *key, const char *ident,
                             hs_table **out, hs_error *err)
{
    int i = find_ent(s->opened, s->n_opened, key);
    if (i >= 0) {
        *out = s->opened[i].t;
        return HS_OK;
    }
    hs_table *t;
    HS_TRY(hs_table_open(cat, ident, &t, err));
    hs_status st = add_ent(&s->opened, &s->n_opened, &s->cap_opened, key, t, true, err);
    if (st != HS_OK) {
        hs_table_close(t);
        return st;
    }
    *out = t;
    return HS_OK;
}

hs_status sq_table_lookup(sq_session *s, const json_t *rv, const char *text, hs_table **out,
                          hs_error *err)
{
    *out = NULL;
    json_t *jn = json_object_get(rv, "schemaname");
    json_t *jr = json_object_get(rv, "relname");
    json_t *jc = json_object_get(rv, "catalogname");
    const char *ns = json_is_string(jn) ? json_string_value(jn) : NULL;
    const char *rel = json_is_string(jr) ? json_string_value(jr) : "";
    int loc = sq_loc(rv);
    if (json_is_string(jc))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, loc,
                       "cross-database references are not implemented: %s.%s.%s",
                       json_string_value(jc), ns ? ns : "", rel);
    if (!ns) {
        int i = find_ent(s->reg, s->n_reg, rel);
        if (i >= 0) {
            *out = s->reg[i].t;
            return HS_OK;
        }
        /* a path table: the name itself is a path ("quoted" in the text) */
        if (strchr(rel, '/')) {
            HS_TRY(sq_file_access(s, "path tables", text, loc, err));
            if (!s->path_cat) {
                hs_status st = hs_catalog_open_path(NULL, &s->path_cat, err);
                if (st != HS_OK)
                    return st;
            }
            hs_error e2 = {0};
            if (open_cached(s, s->path_cat, rel, rel, out, &e2) == HS_OK)
                return HS_OK;
            return sq_fail(s, err, HS_NOT_FOUND, "42P01", text, loc,
                           "relation \"%s\" does not exist (%s)", rel, e2.msg);
        }
        return sq_fail(s, err, HS_NOT_FOUND, "42P01", text, loc, "relation \"%s\" does not exist",
                       rel);
    }
    if (!s->catalog)
        return sq_fail(s, err, HS_NOT_FOUND, "42P01", text, loc,
                       "relation \"%s.%s\" does not exist (the session has no catalog)", ns, rel);
    size_t kn = strlen(ns) + strlen(rel) + 2;
    char *key = hs_malloc(kn);
    if (!key)
        return hs_err_nomem(err, kn);
    snprintf(key, kn, "%s.%s", ns, rel);
    hs_error e2 = {0};
    hs_status st = open_cached(s, s->catalog, key, key, out, &e2);
    if (st == HS_NOT_FOUND)
        st = sq_fail(s, err, HS_NOT_FOUND, "42P01", text, loc, "relation \"%s\" does not exist", key);
    else if (st != HS_OK)
        *err = e2;
    hs_free(key);
    return st;
}

/* ------------------------------------------------------------------ */
/* statement contexts                                                  */

typedef struct sq_ctx_box {
    xo_ctx ctx;              /* first: an xo_ctx * is a box */
    hs_pool *pool;
    hs_field **keep;
    int n_keep, cap_keep;
    char spill_dir[SQ_TEMP_DIR_MAX];   /* ctx.spill_dir points here */
} sq_ctx_box;

hs_status sq_ctx_keep(xo_ctx *ctx, hs_field *f, hs_error *err)
{
    sq_ctx_box *b = (sq_ctx_box *)ctx;
    if (b->n_keep == b->cap_keep) {
        int nc = b->cap_keep ? b->cap_keep * 2 : 16;
        hs_field **na = hs_realloc(b->keep, (size_t)nc * sizeof *na);
        if (!na) {
            hs_field_clear(f);
            hs_free(f);
            return hs_err_nomem(err, 0);
        }
        b->keep = na;
        b->cap_keep = nc;
    }
    b->keep[b->n_keep++] = f;
    return HS_OK;
}

int sq_ctx_keep_mark(xo_ctx *ctx) { return ((sq_ctx_box *)ctx)->n_keep; }

void sq_ctx_keep_release(xo_ctx *ctx, int mark)
{
    sq_ctx_box *b = (sq_ctx_box *)ctx;
    while (b->n_keep > mark) {
        hs_field *f = b->keep[--b->n_keep];
        hs_field_clear(f);
        hs_free(f);
    }
}

static int default_threads(void)
{
    int64_t v = 0;
    hs_error e = {0};
    if (hs_config_get_int("scan_threads", &v, &e) == HS_OK && v > 0)
        return (int)v;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n > 64 ? 64 : n) : 1;
}

static int64_t default_mem(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || ps <= 0)
        return (int64_t)1 << 31;
    return (int64_t)pages * ps / 4;
}

hs_status sq_ctx_new(sq_session *s, xo_ctx **out, hs_error *err)
{
    *out = NULL;
    sq_ctx_box *b = hs_calloc(1, sizeof *b);
    if (!b)
        return hs_err_nomem(err, sizeof *b);
    int threads = s->set.threads > 0 ? s->set.threads : default_threads();
    if (threads > 1) {
        hs_status st = hs_pool_create(threads, &b->pool, err);
        if (st != HS_OK) {
            hs_free(b);
            return st;
        }
    }
    b->ctx.cancel = &s->cancel;
    b->ctx.pool = b->pool;
    b->ctx.threads = threads;
    b->ctx.mem_limit = s->set.memory_limit > 0 ? s->set.memory_limit : default_mem();
    if (s->set.temp_dir[0]) {
        memcpy(b->spill_dir, s->set.temp_dir, sizeof b->spill_dir);
        b->ctx.spill_dir = b->spill_dir;
    }
    atomic_init(&b->ctx.mem_used, 0);
    *out = &b->ctx;
    return HS_OK;
}

hs_status sq_ctx_new_serial(const xo_ctx *parent, xo_ctx **out, hs_error *err)
{
    *out = NULL;
    const sq_ctx_box *pb = (const sq_ctx_box *)parent;
    sq_ctx_box *b = hs_calloc(1, sizeof *b);
    if (!b)
        return hs_err_nomem(err, sizeof *b);
    b->ctx.cancel = parent->cancel;
    b->ctx.threads = 1;
    b->ctx.mem_limit = parent->mem_limit;
    if (parent->spill_dir) {
        memcpy(b->spill_dir, pb->spill_dir, sizeof b->spill_dir);
        b->ctx.spill_dir = b->spill_dir;
    }
    atomic_init(&b->ctx.mem_used, 0);
    *out = &b->ctx;
    return HS_OK;
}

void sq_ctx_free(void *ctx)
{
    if (!ctx)
        return;
    sq_ctx_box *b = (sq_ctx_box *)ctx;  /* ctx is the first member */
    hs_pool_destroy(b->pool);
    for (int i = 0; i < b->n_keep; i++) {
        hs_field_clear(b->keep[i]);
        hs_free(b->keep[i]);
    }
    hs_free(b->keep);
    hs_free(b);
}

/* ------------------------------------------------------------------ */
/* results                                                             */

hs_status sq_result_tag(const char *tag, int64_t rows, hs_result **out, hs_error *err)
{
    *out = NULL;
    hs_result *r = hs_calloc(1, sizeof *r);
    if (!r || !(r->tag = hs_strdup(tag))) {
        hs_free(r);
        return hs_err_nomem(err, sizeof *r);
    }
    r->rows_affected = rows;
    *out = r;
    return HS_OK;
}

hs_status sq_result_rows(const char *tag, struct ArrowArrayStream *stream, hs_result **out,
                         hs_error *err)
{
    hs_status st = sq_result_tag(tag, -1, out, err);
    if (st != HS_OK) {
        if (stream->release)
            stream->release(stream);
        return st;
    }
    (*out)->has_rows = true;
    (*out)->stream = *stream;
    stream->release = NULL;
    return HS_OK;
}

const char *hs_result_tag(const hs_result *r) { return r && r->tag ? r->tag : ""; }
int hs_result_has_rows(const hs_result *r) { return r && r->has_rows; }
int64_t hs_result_rows_affected(const hs_result *r) { return r ? r->rows_affected : -1; }

hs_status hs_result_stream(hs_result *r, struct ArrowArrayStream *out, hs_error *err)
{
    if (!r || !r->has_rows)
        return hs_err_set(err, HS_INVALID, "the statement returned no rows");
    if (r->stream_taken)
        return hs_err_set(err, HS_INVALID, "the result's stream was already taken");
    *out = r->stream;
    r->stream.release = NULL;
    r->stream_taken = true;
    return HS_OK;
}

void hs_result_free(hs_result *r)
{
    if (!r)
        return;
    if (r->has_rows && !r->stream_taken && r->stream.release)
        r->stream.release(&r->stream);
    hs_free(r->tag);
    hs_free(r);
}

hs_status sq_result_text(const char *tag, const char *colname, int n, const char *const *rows,
                         hs_result **out, hs_error *err)
{
    hs_field schema, col;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&col, colname, HS_TYPE_STRING, true);
    col.field_id = 1;
    hs_status st = hs_field_add_child(&schema, &col);
    if (st != HS_OK) {
        hs_field_clear(&col);
        hs_field_clear(&schema);
        return hs_err_nomem(err, 0);
    }
    hs_batch *b = NULL;
    st = hs_batch_create(&schema, n, &b, err);
    hs_field_clear(&schema);
    for (int i = 0; st == HS_OK && i < n; i++)
        st = rows[i] ? hs_col_append_bytes(b->cols[0], rows[i], strlen(rows[i]))
                     : hs_col_append_null(b->cols[0]);
    if (st != HS_OK) {
        hs_batch_free(b);
        return st == HS_NOMEM ? hs_err_nomem(err, 0) : st;
    }
    b->n_rows = n;
    struct ArrowArrayStream stream;
    HS_TRY(hs_arrow_export_one_batch(b, &stream, err));
    return sq_result_rows(tag, &stream, out, err);
}

/* ------------------------------------------------------------------ */
/* settings                                                            */

typedef struct setting_def {
    const char *name;
    int kind;      /* 0 int, 1 int64 bytes, 2 text (temp_directory) */
    int64_t lo, hi;
} setting_def;

static const setting_def SETTINGS[] = {
    {"hnsw.ef_search", 0, 1, 1000},
    {"ivfflat.probes", 0, 1, 32768},
    {"threads", 0, 0, 256},
    {"memory_limit", 1, 0, INT64_MAX},
    {"temp_directory", 2, 0, 0},
};

static const setting_def *find_setting(const char *name)
{
    for (size_t i = 0; i < sizeof SETTINGS / sizeof SETTINGS[0]; i++)
        if (!strcasecmp(SETTINGS[i].name, name))
            return &SETTINGS[i];
    return NULL;
}

static int64_t *setting_slot64(sq_settings *st, const char *name, int **slot32)
{
    *slot32 = NULL;
    if (!strcasecmp(name, "hnsw.ef_search"))
        *slot32 = &st->ef_search;
    else if (!strcasecmp(name, "ivfflat.probes"))
        *slot32 = &st->probes;
    else if (!strcasecmp(name, "threads"))
        *slot32 = &st->threads;
    else
        return &st->memory_limit;
    return NULL;
}

/* Parses "123", "64MB", "1GB", "512kB" (PostgreSQL's memory units). */
static bool parse_value(const setting_def *d, const char *v, int64_t *out)
{
    char *end;
    while (isspace((unsigned char)*v))
        v++;
    if (!*v)
        return false;
    long long x = strtoll(v, &end, 10);
    if (end == v)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    int64_t mul = 1;
    if (d->kind == 1 && *end) {
        if (!strcasecmp(end, "B"))
            mul = 1;
        else if (!strcasecmp(end, "kB"))
            mul = 1024;
        else if (!strcasecmp(end, "MB"))
            mul = 1024 * 1024;
        else if (!strcasecmp(end, "GB"))
            mul = 1024LL * 1024 * 1024;
        else if (!strcasecmp(end, "TB"))
            mul = 1024LL * 1024 * 1024 * 1024;
        else
            return false;
        end += strlen(end);
    }
    if (*end)
        return false;
    if (x < 0 || (mul > 1 && x > INT64_MAX / mul))
        return false;
    *out = (int64_t)x * mul;
    return true;
}

static hs_status set_setting(sq_session *s, const char *name, const char *value, bool reset,
                             const char *text, int loc, hs_error *err)
{
    const setting_def *d = find_setting(name);
    if (!d)
        return sq_fail(s, err, HS_NOT_FOUND, "42704", text, loc,
                       "unrecognized configuration parameter \"%s\"", name);
    if (d->kind == 2) {   /* temp_directory: where Sort/HashAggregate spill ('' = default) */
        if (reset || !value) {
            memcpy(s->set.temp_dir, s->defaults.temp_dir, sizeof s->set.temp_dir);
            return HS_OK;
        }
        if (strlen(value) >= sizeof s->set.temp_dir)
            return sq_fail(s, err, HS_INVALID, "22023", text, loc,
                           "invalid value for parameter \"%s\": longer than %d bytes", d->name,
                           (int)sizeof s->set.temp_dir - 1);
        snprintf(s->set.temp_dir, sizeof s->set.temp_dir, "%s", value);
        return HS_OK;
    }
    int *s32, *d32;
    int64_t *s64 = setting_slot64(&s->set, d->name, &s32);
    int64_t *d64 = setting_slot64(&s->defaults, d->name, &d32);
    if (reset || !value) {
        if (s32)
            *s32 = *d32;
        else
            *s64 = *d64;
        return HS_OK;
    }
    int64_t v;
    if (!parse_value(d, value, &v))
        return sq_fail(s, err, HS_INVALID, "22023", text, loc,
                       "invalid value for parameter \"%s\": \"%s\"", d->name, value);
    if (v < d->lo || v > d->hi)
        return sq_fail(s, err, HS_INVALID, "22023", text, loc,
                       "%lld is outside the valid range for parameter \"%s\" (%lld .. %lld)",
                       (long long)v, d->name, (long long)d->lo, (long long)d->hi);
    if (s32)
        *s32 = (int)v;
    else
        *s64 = v;
    return HS_OK;
}

static void setting_text(sq_session *s, const setting_def *d, char *buf, size_t n)
{
    if (d->kind == 2) {
        const char *t = getenv("TMPDIR");
        snprintf(buf, n, "%s", s->set.temp_dir[0] ? s->set.temp_dir : t && *t ? t : "/tmp");
        return;
    }
    int *s32;
    int64_t *s64 = setting_slot64(&s->set, d->name, &s32);
    int64_t v = s32 ? *s32 : *s64;
    if (v == 0 && !strcmp(d->name, "threads"))
        v = default_threads();
    else if (v == 0 && !strcmp(d->name, "memory_limit"))
        v = default_mem();
    else if (v == 0 && !strcmp(d->name, "hnsw.ef_search"))
        v = 40;   /* pgvector's default; the index's own ef_search applies when unset */
    else if (v == 0 && !strcmp(d->name, "ivfflat.probes"))
        v = 1;
    if (d->kind == 1 && v % (1024 * 1024) == 0)
        snprintf(buf, n, "%lldMB", (long long)(v / (1024 * 1024)));
    else if (d->kind == 1 && v % 1024 == 0)
        snprintf(buf, n, "%lldkB", (long long)(v / 1024));
    else
        snprintf(buf, n, "%lld", (long long)v);
}

hs_status hs_session_set(hs_session *s, const char *name, const char *value, hs_error *err)
{
    if (!s || !name)
        return hs_err_set(err, HS_INVALID, "hs_session_set: a session and a name are needed");
    hs_status st = set_setting(s, name, value, false, NULL, -1, err);
    settle_error(s, st, err);
    return st;
}

hs_status hs_session_get_setting(hs_session *s, const char *name, char *buf, size_t n,
                                 hs_error *err)
{
    const setting_def *d = name ? find_setting(name) : NULL;
    if (!s || !d)
        return hs_err_set(err, HS_NOT_FOUND, "unrecognized configuration parameter \"%s\"",
                          name ? name : "");
    setting_text(s, d, buf, n);
    return HS_OK;
}

/* The text of a SET value node (A_Const of a string, integer or float). */
static bool const_text(const json_t *j, char *buf, size_t n)
{
    const char *k;
    json_t *b;
    if (!sq_node(j, &k, &b) || strcmp(k, "A_Const") != 0)
        return false;
    json_t *v;
    if ((v = json_object_get(b, "sval"))) {
        json_t *x = json_object_get(v, "sval");
        snprintf(buf, n, "%s", json_is_string(x) ? json_string_value(x) : "");
        return true;
    }
    if ((v = json_object_get(b, "ival"))) {
        json_t *x = json_object_get(v, "ival");
        snprintf(buf, n, "%lld", json_is_integer(x) ? (long long)json_integer_value(x) : 0LL);
        return true;
    }
    if ((v = json_object_get(b, "fval"))) {
        json_t *x = json_object_get(v, "fval");
        snprintf(buf, n, "%s", json_is_string(x) ? json_string_value(x) : "");
        return true;
    }
    return false;
}

static hs_status exec_set(sq_session *s, json_t *b, const char *text, hs_result **out,
                          hs_error *err)
{
    const char *kind = json_string_value(json_object_get(b, "kind"));
    const char *name = json_string_value(json_object_get(b, "name"));
    int loc = -1;
    kind = kind ? kind : "";
    if (!strcmp(kind, "VAR_RESET_ALL")) {
        s->set = s->defaults;
        return sq_result_tag("RESET", -1, out, err);
    }
    if (!name)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1, "unsupported SET statement");
    if (json_is_true(json_object_get(b, "is_local")))
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1, "SET LOCAL is not supported");
    if (!strcmp(kind, "VAR_RESET") || !strcmp(kind, "VAR_SET_DEFAULT")) {
        HS_TRY(set_setting(s, name, NULL, true, text, loc, err));
        return sq_result_tag(!strcmp(kind, "VAR_RESET") ? "RESET" : "SET", -1, out, err);
    }
    if (strcmp(kind, "VAR_SET_VALUE") != 0)
        return sq_fail(s, err, HS_UNSUPPORTED, "0A000", text, -1, "unsupported SET statement");
    json_t *args = json_object_get(b, "args");
    char val[128];
    if (json_array_size(args) != 1 || !const_text(json_array_get(args, 0), val, sizeof val)) {
        const char *k;
        json_t *ab;
        if (sq_node(json_array_get(args, 0), &k, &ab))
            loc = sq_loc(ab);
        return sq_fail(s, err, HS_INVALID, "22023", text, loc,
                       "parameter \"%s\" takes one value", name);
    }
    const char *k;
    json_t *ab;
    if (sq_node(json_array_get(args, 0), &k, &ab))
        loc = sq_loc(ab);
    HS_TRY(set_setting(s, name, val, false, text, loc, err));
    return sq_result_tag("SET", -1, out, err);
}

static hs_status exec_show(sq_session *s, json_t *b, const char *text, hs_result **out,
                           hs_error *err)
{
    const char *name = json_string_value(json_object_get(b, "name"));
    if (!name)
        name = "";
    if (!strcasecmp(name, "all")) {
        size_t n = sizeof SETTINGS / sizeof SETTINGS[0];
        char vals[8][SQ_TEMP_DIR_MAX], lines[8][SQ_TEMP_DIR_MAX + 64];
        const char *rows[8];
        for (size_t i = 0; i < n; i++) {
            setting_text(s, &SETTINGS[i], vals[i], sizeof vals[i]);
            snprintf(lines[i], sizeof lines[i], "%.40s=%.511s", SETTINGS[i].name, vals[i]);
            rows[i] = lines[i];
        }
        return sq_result_text("SHOW", "setting", (int)n, rows, out, err);
    }
    const setting_def *d = find_setting(name);
    if (!d)
        return sq_fail(s, err, HS_NOT_FOUND, "42704", text, -1,
                       "unrecognized configuration parameter \"%s\"", name);
    char val[SQ_TEMP_DIR_MAX];
    setting_text(s, d, val, sizeof val);
    const char *row = val;
    return sq_result_text("SHOW", d->name, 1, &row, out, err);
}

/* ------------------------------------------------------------------ */
/* dispatch                                                            */

static hs_status dispatch(sq_session *s, json_t *stmt, const char *text, hs_result **out,
                          hs_error *err)
{
    const char *k;
    json_t *b;
    if (!sq_node(stmt, &k, &b))
        return sq_fail(s, err, HS_INTERNAL, "XX000", NULL, -1, "malformed parse tree");
    if (!strcmp(k, "SelectStmt"))
        return sq_exec_query(s, b, text, out, err);
    if (!strcmp(k, "ExplainStmt"))
        return sq_exec_explain(s, b, text, out, err);
    if (!strcmp(k, "VariableSetStmt"))
        return exec_set(s, b, text, out, err);
    if (!strcmp(k, "VariableShowStmt"))
        return exec_show(s, b, text, out, err);
    if (!strcmp(k, "IndexStmt"))
        return sq_exec_index(s, k, b, text, out, err);
    if (sq_is_ddl(k, b))
        return sq_exec_ddl(s, k, b, text, out, err);
    if (!strcmp(k, "DropStmt")) {
        const char *rt = json_string_value(json_object_get(b, "removeType"));
        if (rt && !strcmp(rt, "OBJECT_INDEX"))
            return sq_exec_index(s, k, b, text, out, err);
    }
    if (!strcmp(k, "InsertStmt") || !strcmp(k, "UpdateStmt") || !strcmp(k, "DeleteStmt") ||
        !strcmp(k, "MergeStmt") || !strcmp(k, "CopyStmt") || !strcmp(k, "TransactionStmt"))
        return sq_exec_dml(s, k, b, text, out, err);
    return sq_fail(s, err, HS_UNSUPPORTED, "0A000", NULL, -1, "statement %s is not supported", k);
}

static bool word_at(const char *p, const char *w, const char **end)
{
    size_t n = strlen(w);
    if (strncasecmp(p, w, n) != 0 || isalnum((unsigned char)p[n]) || p[n] == '_')
        return false;
    *end = p + n;
    return true;
}

static const char *skip_ws(const char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    return p;
}

/* Cuts FOR SYSTEM_VERSION AS OF <id> / FOR SYSTEM_TIME AS OF [TIMESTAMP]
 * '<ts>' out of sql (replaced by spaces, so positions stay), recording them
 * in s->tt, and rewrites PARTITIONED BY (in place, same length).  *out is the text to parse (caller frees). */
static hs_status cut_time_travel(sq_session *s, const char *sql, char **out, hs_error *err)
{
    s->n_tt = 0;
    char *t = hs_strdup(sql);
    if (!t)
        return hs_err_nomem(err, strlen(sql));
    for (char *p = t; *p;) {
        if (*p == '\'' || *p == '"') {
            char q = *p++;
            while (*p && !(*p == q && p[1] != q))
                p += *p == q ? 2 : 1;
            if (*p)
                p++;
            continue;
        }
        if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
            continue;
        }
        const char *e;
        bool boundary = p == t || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        /* Spark's CREATE TABLE ... PARTITIONED BY (...): PostgreSQL's
         * PARTITION BY <strategy> (...), same length (ddl.c ignores the
         * strategy) */
        if (boundary && word_at(p, "partitioned", &e)) {
            const char *q = skip_ws(e), *r;
            if (q > e && word_at(q, "by", &r) && *skip_ws(r) == '(' && r - p >= 14) {
                memset(p, ' ', (size_t)(r - p));
                memcpy(p, "PARTITION BY h", 14);
                p = (char *)r;
                continue;
            }
        }
        if (boundary && word_at(p, "for", &e)) {
            const char *q = skip_ws(e), *r;
            bool version = false;
            if (word_at(q, "system_version", &r))
                version = true;
            else if (!word_at(q, "system_time", &r)) {
                p++;
                continue;
            }
            q = skip_ws(r);
            if (!word_at(q, "as", &r) || !word_at(skip_ws(r), "of", &r)) {
                p++;
                continue;
            }
            q = skip_ws(r);
            if (s->n_tt == SQ_MAX_TT) {
                hs_free(t);
                return sq_fail(s, err, HS_UNSUPPORTED, "54000", sql, (int)(p - t),
                               "more than %d time-travel clauses", SQ_MAX_TT);
            }
            sq_tt *tt = &s->tt[s->n_tt];
            memset(tt, 0, sizeof *tt);
            tt->off = (int)(p - t);
            tt->version = version;
            if (version) {
                char *end;
                long long v = strtoll(q, &end, 10);
                if (end == q) {
                    hs_free(t);
                    return sq_fail(s, err, HS_INVALID, "42601", sql, (int)(q - t),
                                   "FOR SYSTEM_VERSION AS OF needs a snapshot id");
                }
                tt->snapshot_id = v;
                r = end;
            } else {
                if (word_at(q, "timestamp", &r))
                    q = skip_ws(r);
                if (*q != '\'') {
                    hs_free(t);
                    return sq_fail(s, err, HS_INVALID, "42601", sql, (int)(q - t),
                                   "FOR SYSTEM_TIME AS OF needs a quoted timestamp");
                }
                const char *c = strchr(q + 1, '\'');
                if (!c || (size_t)(c - q - 1) >= sizeof tt->ts) {
                    hs_free(t);
                    return sq_fail(s, err, HS_INVALID, "22007", sql, (int)(q - t),
                                   "invalid timestamp in FOR SYSTEM_TIME AS OF");
                }
                memcpy(tt->ts, q + 1, (size_t)(c - q - 1));
                r = c + 1;
            }
            memset(p, ' ', (size_t)(r - p));
            s->n_tt++;
            p = (char *)r;
            continue;
        }
        p++;
    }
    *out = t;
    return HS_OK;
}

static hs_status run_text(hs_session *s, const char *sql0, json_t *(*rewrite)(void *, json_t *),
                          void *rw_ctx, hs_result **out, hs_error *err)
{
    json_t *root = NULL, *stmt;
    char *sql = NULL;
    HS_TRY(cut_time_travel(s, sql0, &sql, err));
    hs_status st = sq_parse(s, sql, &root, err);
    if (st == HS_OK)
        st = one_stmt(s, root, sql, &stmt, err);
    if (st == HS_OK && rewrite && !rewrite(rw_ctx, stmt))
        st = hs_err_nomem(err, 0);
    if (st == HS_OK)
        st = dispatch(s, stmt, sql, out, err);
    json_decref(root);
    hs_free(sql);
    s->n_tt = 0;
    return st;
}

hs_status hs_session_execute(hs_session *s, const char *sql, hs_result **out, hs_error *err)
{
    if (out)
        *out = NULL;
    if (!s || !sql || !out)
        return hs_err_set(err, HS_INVALID, "hs_session_execute: a session, text and a result pointer are needed");
    set_state(s, "00000", 0);
    atomic_store(&s->cancel, 0);
    if (err)
        memset(err, 0, sizeof *err);   /* a statement's error is its own */
    hs_status st = run_text(s, sql, NULL, NULL, out, err);
    settle_error(s, st, err);
    return st;
}

void hs_session_cancel(hs_session *s)
{
    if (s)
        atomic_store(&s->cancel, 1);
}

const char *hs_session_sqlstate(const hs_session *s) { return s ? s->sqlstate : "08003"; }
int hs_session_error_position(const hs_session *s) { return s ? s->errpos : 0; }
const char *hs_session_error_message(const hs_session *s) { return s ? s->errmsg : ""; }

/* ------------------------------------------------------------------ */
/* prepared statements                                                 */

struct hs_prepared {
    hs_session *s;       /* borrowed */
    char *text;
    int n_params;
    char **types;        /* n_params; "" = unknown */
    /* execute: the values being substituted */
    int n_values;
    const char *const *values;
    json_t **type_nodes; /* TypeName node of each typed parameter (owned) */
    bool failed;
};

static void count_params(const json_t *j, int *max)
{
    if (json_is_object(j)) {
        const char *key;
        json_t *v;
        json_t *pr = json_object_get(j, "ParamRef");
        if (pr) {
            json_t *n = json_object_get(pr, "number");
            if (json_is_integer(n) && json_integer_value(n) > *max)
                *max = (int)json_integer_value(n);
        }
        json_object_foreach((json_t *)j, key, v)
            count_params(v, max);
    } else if (json_is_array(j)) {
        size_t i;
        json_t *v;
        json_array_foreach(j, i, v)
            count_params(v, max);
    }
}

/* The TypeName node of a type name: parses "SELECT NULL::<type>". */
static hs_status type_node(hs_session *s, const char *type, json_t **out, hs_error *err)
{
    *out = NULL;
    for (const char *p = type; *p; p++)
        if (*p == ';' || *p == '\'' || *p == '-' || *p == '/')
            return sq_fail(s, err, HS_INVALID, "42704", NULL, -1, "type \"%s\" does not exist", type);
    size_t n = strlen(type) + 32;
    char *q = hs_malloc(n);
    if (!q)
        return hs_err_nomem(err, n);
    snprintf(q, n, "SELECT NULL::%s", type);
    json_t *root = NULL;
    hs_error e2 = {0};
    hs_status st = sq_parse(s, q, &root, &e2);
    hs_free(q);
    if (st != HS_OK) {
        set_state(s, "00000", 0);
        return sq_fail(s, err, HS_INVALID, "42704", NULL, -1, "type \"%s\" does not exist", type);
    }
    json_t *sel = json_object_get(json_object_get(json_array_get(json_object_get(root, "stmts"), 0),
                                                  "stmt"), "SelectStmt");
    json_t *tl = json_array_get(json_object_get(sel, "targetList"), 0);
    json_t *val = json_object_get(json_object_get(tl, "ResTarget"), "val");
    json_t *tn = json_object_get(json_object_get(val, "TypeCast"), "typeName");
    if (!tn || json_array_size(json_object_get(json_object_get(sel, "targetList"), 0)) > 1) {
        json_decref(root);
        return sq_fail(s, err, HS_INVALID, "42704", NULL, -1, "type \"%s\" does not exist", type);
    }
    *out = json_incref(tn);
    json_decref(root);
    return HS_OK;
}

static json_t *mk_string_const(const char *v, json_int_t loc)
{
    return json_pack("{s:{s:{s:s},s:I}}", "A_Const", "sval", "sval", v, "location", loc);
}

/* Replaces ParamRef nodes below j (in place). */
static bool subst(hs_prepared *p, json_t *j)
{
    if (json_is_array(j)) {
        for (size_t i = 0; i < json_array_size(j); i++) {
            json_t *v = json_array_get(j, i);
            json_t *pr = json_object_get(v, "ParamRef");
            if (pr) {
                json_t *nn = NULL;
                int num = (int)json_integer_value(json_object_get(pr, "number"));
                json_int_t loc = json_integer_value(json_object_get(pr, "location"));
                if (num < 1 || num > p->n_values)
                    return false;
                const char *val = p->values[num - 1];
                if (!val)
                    nn = json_pack("{s:{s:b,s:I}}", "A_Const", "isnull", 1, "location", loc);
                else if (num <= p->n_params && p->type_nodes[num - 1])
                    nn = json_pack("{s:{s:o,s:O,s:I}}", "TypeCast", "arg", mk_string_const(val, loc),
                                   "typeName", p->type_nodes[num - 1], "location", loc);
                else
                    nn = mk_string_const(val, loc);
                if (!nn || json_array_set_new(j, i, nn) != 0)
                    return false;
            } else if (!subst(p, v)) {
                return false;
            }
        }
    } else if (json_is_object(j)) {
        const char *key;
        json_t *v;
        void *tmp;
        json_object_foreach_safe(j, tmp, key, v) {
            json_t *pr = json_object_get(v, "ParamRef");
            if (pr) {
                json_t *arr = json_array();
                if (!arr || json_array_append(arr, v) != 0) {
                    json_decref(arr);
                    return false;
                }
                bool ok = subst(p, arr);
                if (ok)
                    ok = json_object_set(j, key, json_array_get(arr, 0)) == 0;
                json_decref(arr);
                if (!ok)
                    return false;
            } else if (!subst(p, v)) {
                return false;
            }
        }
    }
    return true;
}

static json_t *subst_rw(void *ctx, json_t *stmt) { return subst(ctx, stmt) ? stmt : NULL; }

void hs_prepared_free(hs_prepared *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n_params; i++) {
        hs_free(p->types[i]);
        json_decref(p->type_nodes[i]);
    }
    hs_free(p->types);
    hs_free(p->type_nodes);
    hs_free(p->text);
    hs_free(p);
}

hs_status hs_session_prepare(hs_session *s, const char *sql, int n_param_types,
                             const char *const *param_types, hs_prepared **out, hs_error *err)
{
    *out = NULL;
    if (!s || !sql || n_param_types < 0 || (n_param_types > 0 && !param_types))
        return hs_err_set(err, HS_INVALID, "hs_session_prepare: a session and text are needed");
    set_state(s, "00000", 0);
    if (err)
        memset(err, 0, sizeof *err);
    json_t *root = NULL, *stmt;
    hs_status st = sq_parse(s, sql, &root, err);
    if (st == HS_OK)
        st = one_stmt(s, root, sql, &stmt, err);
    int max = 0;
    if (st == HS_OK)
        count_params(stmt, &max);
    json_decref(root);
    if (st == HS_OK && max > 65535)
        st = sq_fail(s, err, HS_INVALID, "54000", NULL, -1, "too many parameters ($%d)", max);
    hs_prepared *p = NULL;
    if (st == HS_OK) {
        int n = max > n_param_types ? max : n_param_types;
        p = hs_calloc(1, sizeof *p);
        if (p) {
            p->n_params = n;
            p->s = s;
            p->text = hs_strdup(sql);
            p->types = hs_calloc((size_t)n + 1, sizeof *p->types);
            p->type_nodes = hs_calloc((size_t)n + 1, sizeof *p->type_nodes);
        }
        if (!p || !p->text || !p->types || !p->type_nodes)
            st = hs_err_nomem(err, 0);
        for (int i = 0; st == HS_OK && i < n; i++) {
            const char *t = i < n_param_types && param_types[i] ? param_types[i] : "";
            if (!(p->types[i] = hs_strdup(t)))
                st = hs_err_nomem(err, 0);
            else if (*t)
                st = type_node(s, t, &p->type_nodes[i], err);
        }
    }
    settle_error(s, st, err);
    if (st != HS_OK) {
        if (p && !p->types)
            p->n_params = 0;
        hs_prepared_free(p);
        return st;
    }
    *out = p;
    return HS_OK;
}

int hs_prepared_param_count(const hs_prepared *p) { return p ? p->n_params : 0; }

const char *hs_prepared_param_type(const hs_prepared *p, int i)
{
    if (!p || i < 0 || i >= p->n_params)
        return NULL;
    return *p->types[i] ? p->types[i] : "unknown";
}

hs_status hs_prepared_execute(hs_prepared *p, int n_values, const char *const *values,
                              hs_result **out, hs_error *err)
{
    *out = NULL;
    if (!p)
        return hs_err_set(err, HS_INVALID, "hs_prepared_execute: no statement");
    hs_session *s = p->s;
    set_state(s, "00000", 0);
    atomic_store(&s->cancel, 0);
    if (n_values != p->n_params || (n_values > 0 && !values)) {
        hs_status st = sq_fail(s, err, HS_INVALID, "08P01", NULL, -1,
                               "the statement takes %d parameters, %d were given", p->n_params,
                               n_values);
        return st;
    }
    p->n_values = n_values;
    p->values = values;
    if (err)
        memset(err, 0, sizeof *err);
    hs_status st = run_text(s, p->text, subst_rw, p, out, err);
    p->values = NULL;
    settle_error(s, st, err);
    return st;
}

hs_status hs_prepared_schema(const hs_prepared *p, struct ArrowSchema *out, hs_error *err)
{
    if (!p)
        return hs_err_set(err, HS_INVALID, "hs_prepared_schema: no statement");
    hs_session *s = p->s;
    set_state(s, "00000", 0);
    json_t *root = NULL, *stmt;
    hs_status st = sq_parse(s, p->text, &root, err);
    if (st == HS_OK)
        st = one_stmt(s, root, p->text, &stmt, err);
    const char *k = NULL;
    json_t *b = NULL;
    hs_field empty;
    hs_field_init(&empty, "", HS_TYPE_STRUCT, false);
    if (st == HS_OK && sq_node(stmt, &k, &b) && !strcmp(k, "SelectStmt")) {
        /* plan with NULL parameters to learn the result columns */
        const char **nulls = hs_calloc((size_t)p->n_params + 1, sizeof *nulls);
        hs_prepared *pp = (hs_prepared *)p;
        if (!nulls)
            st = hs_err_nomem(err, 0);
        if (st == HS_OK) {
            pp->n_values = p->n_params;
            pp->values = nulls;
            if (!subst(pp, stmt))
                st = hs_err_nomem(err, 0);
            pp->values = NULL;
        }
        hs_free(nulls);
        xo_ctx *ctx = NULL;
        xo_op *op = NULL;
        if (st == HS_OK)
            st = sq_ctx_new(s, &ctx, err);
        if (st == HS_OK)
            st = sq_plan_query(s, ctx, b, p->text, &op, err);
        if (st == HS_OK)
            st = hs_arrow_export_schema(&op->schema, out, err);
        xo_free(op);
        sq_ctx_free(ctx);
    } else if (st == HS_OK) {
        st = hs_arrow_export_schema(&empty, out, err);
    }
    hs_field_clear(&empty);
    json_decref(root);
    settle_error(s, st, err);
    return st;
}

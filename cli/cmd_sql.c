/*
 * cli/cmd_sql.c - `hyperstream sql`: an SQL shell over a session
 * (include/hyperstream/sql.h), in the manner of psql.
 *
 *   hyperstream sql [--sql CATALOG.db] [--format aligned|csv|jsonl]
 *                   [--threads N] [-c SQL]... [-f FILE]... [WAREHOUSE]
 *
 * Tables: with --sql, the SQLite catalog's tables (namespace.table; new ones
 * under WAREHOUSE); else the path tables found under WAREHOUSE at start,
 * registered by their names (WAREHOUSE/events is `events`); any path table
 * as a quoted path ("/data/t").
 *
 * Modes.
 *   batch        -c and -f run in the order given; the first failing
 *                statement prints its error and the program exits 1.
 *   interactive  no -c/-f: statements from stdin.  On a terminal, lines are
 *                read with libedit (line editing, history kept in
 *                $HS_HISTFILE or ~/.hyperstream_history) behind the prompts
 *                "hyperstream=> " and "hyperstream-> " (continuation).  An
 *                error does not end the session; the exit status is 1 when
 *                any statement failed and stdin was not a terminal.
 *
 * Input is split into statements at ';' outside quotes ('...', "...",
 * $tag$...$tag$, E'..\'..'), comments (--, nested block comments) and
 * parentheses; a statement may span lines.  A line whose first non-blank
 * character is a backslash is a meta-command (psql's, for the ones here):
 *   \q                 quit               \timing [on|off]  statement times
 *   \d                 list the tables    \d NAME           columns, indexes
 *   \i FILE            run a file         \o [FILE]         output to FILE
 *   \pset format F     aligned|csv|jsonl  \? help
 *
 * Output.  Rows: "aligned" (psql's table, "(N rows)" footer), "csv" (a
 * header line, RFC 4180 quoting, NULL as an empty unquoted field) or
 * "jsonl" (columnar/jsonl.h: one lossless JSON object per row).  Values in
 * aligned and CSV output are PostgreSQL's text forms (t/f, Infinity, \x..
 * for bytea, [1,2] for vectors, {..} for arrays).  Statements without rows
 * print their command tag ("INSERT 0 3").  Errors go to stderr as psql
 * prints them: "ERROR:  message", and when the error has a position, the
 * line of the statement it is in and a caret under it.
 *
 * Ctrl-C while a statement runs cancels it (hs_session_cancel from the
 * signal handler); at the prompt it discards the statement being typed.
 */
#include "base/numfmt.h"
#include "cli.h"

#include "base/buf.h"
#include "base/interval.h"
#include "base/mem.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "columnar/jsonl.h"
#include "hyperstream/index.h"
#include "hyperstream/sql.h"
#include "hyperstream/table.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <editline/readline.h>
#include <jansson.h>
#include <sqlite3.h>

static const char sql_usage[] =
    "Usage: hyperstream sql [options] [WAREHOUSE]\n"
    "\n"
    "An SQL shell (PostgreSQL grammar, pgvector operators; docs/sql.md).\n"
    "\n"
    "Options:\n"
    "  --sql CATALOG.db     SQLite catalog (pyiceberg's schema); WAREHOUSE holds new tables\n"
    "  -c SQL               run SQL (repeatable); exit 1 at the first error\n"
    "  -f FILE              run the statements of FILE (repeatable; '-' = stdin)\n"
    "  --format F           output: aligned (default), csv, jsonl\n"
    "  --threads N          worker threads per statement (default: all cores)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Without -c/-f, statements are read from stdin (with line editing on a terminal).\n"
    "Meta-commands: \\q, \\d, \\d NAME, \\timing, \\i FILE, \\o [FILE], \\pset format F, \\?\n";

typedef enum out_format { FMT_ALIGNED, FMT_CSV, FMT_JSONL } out_format;

typedef struct shell {
    hs_session *s;
    hs_catalog *cat;         /* the --sql / WAREHOUSE catalog, or NULL */
    out_format fmt;
    bool timing;
    FILE *out;               /* stdout or \o file */
    int depth;               /* \i nesting */
    bool quit;
    int errors;              /* statements that failed */
    const char *sqlcat;      /* --sql file, or NULL */
    hs_table **tables;       /* WAREHOUSE's path tables, registered (the session borrows them) */
    size_t n_tables;
} shell;

/* ================================================================== */
/* Ctrl-C                                                              */

static hs_session *volatile g_running;   /* the session while a statement runs */
static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    hs_session *s = g_running;
    if (s)
        hs_session_cancel(s);
    g_interrupted = 1;
}

/* ================================================================== */
/* values as PostgreSQL prints them                                    */

static hs_status put_i128(hs_buf *b, __int128 v, int scale)
{
    char digits[64];
    int n = 0;
    bool neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    do {
        digits[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u && n < 60);
    while (n <= scale)
        digits[n++] = '0';
    if (neg)
        HS_TRY(hs_buf_append_byte(b, '-'));
    for (int i = n - 1; i >= 0; i--) {
        HS_TRY(hs_buf_append_byte(b, (uint8_t)digits[i]));
        if (i == scale && scale > 0)
            HS_TRY(hs_buf_append_byte(b, '.'));
    }
    return HS_OK;
}

static hs_status put_double(hs_buf *b, double v)
{
    if (isnan(v))
        return hs_buf_puts(b, "NaN");
    if (isinf(v))
        return hs_buf_puts(b, v > 0 ? "Infinity" : "-Infinity");
    char t[40];
    int n = hs_fmt_double(v, t);
    return hs_buf_append(b, t, (size_t)n);
}

static hs_status put_float(hs_buf *b, float v)
{
    if (isnan(v))
        return hs_buf_puts(b, "NaN");
    if (isinf(v))
        return hs_buf_puts(b, v > 0 ? "Infinity" : "-Infinity");
    char t[40];
    int n = hs_fmt_float(v, t);
    return hs_buf_append(b, t, (size_t)n);
}

static hs_status put_date(hs_buf *b, int64_t days)
{
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(days, &y, &m, &d);
    if (y <= 0)   /* PostgreSQL: 1 BC is year 0 */
        return hs_buf_printf(b, "%04" PRId64 "-%02u-%02u BC", 1 - y, m, d);
    return hs_buf_printf(b, "%04" PRId64 "-%02u-%02u", y, m, d);
}

/* HH:MM:SS[.fraction without trailing zeros] of a time of day in units. */
static hs_status put_time_of_day(hs_buf *b, int64_t v, hs_time_unit unit)
{
    int64_t per = unit == HS_UNIT_SECOND ? 1 : unit == HS_UNIT_MILLI ? 1000
                  : unit == HS_UNIT_MICRO ? 1000000 : 1000000000;
    int digits = unit == HS_UNIT_SECOND ? 0 : unit == HS_UNIT_MILLI ? 3
                 : unit == HS_UNIT_MICRO ? 6 : 9;
    int64_t secs = v / per, frac = v % per;
    HS_TRY(hs_buf_printf(b, "%02d:%02d:%02d", (int)(secs / 3600), (int)(secs / 60 % 60),
                         (int)(secs % 60)));
    if (frac) {
        char f[16];
        snprintf(f, sizeof f, "%0*" PRId64, digits, frac);
        int n = digits;
        while (n > 0 && f[n - 1] == '0')
            n--;
        HS_TRY(hs_buf_append_byte(b, '.'));
        HS_TRY(hs_buf_append(b, f, (size_t)n));
    }
    return HS_OK;
}

static hs_status put_timestamp(hs_buf *b, int64_t v, hs_time_unit unit, bool tz)
{
    int64_t per = unit == HS_UNIT_SECOND ? 1 : unit == HS_UNIT_MILLI ? 1000
                  : unit == HS_UNIT_MICRO ? 1000000 : 1000000000;
    int64_t day = v / (per * 86400), rem = v % (per * 86400);
    if (rem < 0) {
        rem += per * 86400;
        day--;
    }
    int64_t y;
    unsigned m, d;
    hs_civil_from_days(day, &y, &m, &d);
    HS_TRY(hs_buf_printf(b, "%04" PRId64 "-%02u-%02u ", y <= 0 ? 1 - y : y, m, d));
    HS_TRY(put_time_of_day(b, rem, unit));
    if (tz)
        HS_TRY(hs_buf_puts(b, "+00"));
    if (y <= 0)
        HS_TRY(hs_buf_puts(b, " BC"));
    return HS_OK;
}

static bool is_vector_elem(const hs_field *f)
{
    return f->type == HS_TYPE_FLOAT32 || f->type == HS_TYPE_FLOAT16;
}

static hs_status put_value(const hs_field *f, const hs_column *c, int64_t i, hs_buf *b,
                           bool nested);

/* An element inside an array or record: quoted as PostgreSQL's array_out
 * and record_out do when it is empty or holds a special character. */
static hs_status put_nested(const hs_field *f, const hs_column *c, int64_t i, hs_buf *b,
                            bool in_array)
{
    if (!hs_col_is_valid(c, i))
        return in_array ? hs_buf_puts(b, "NULL") : HS_OK;
    hs_buf t = {0};
    hs_status st = put_value(f, c, i, &t, true);
    if (st != HS_OK) {
        hs_buf_free(&t);
        return st;
    }
    bool quote = t.len == 0;
    for (size_t k = 0; k < t.len && !quote; k++) {
        char ch = (char)t.data[k];
        quote = ch == '"' || ch == '\\' || ch == ',' || isspace((unsigned char)ch) ||
                (in_array ? (ch == '{' || ch == '}') : (ch == '(' || ch == ')'));
    }
    if (in_array && t.len == 4 && strncasecmp((const char *)t.data, "NULL", 4) == 0)
        quote = true;
    if (!quote) {
        st = hs_buf_append(b, t.data, t.len);
    } else {
        st = hs_buf_append_byte(b, '"');
        for (size_t k = 0; k < t.len && st == HS_OK; k++) {
            if (t.data[k] == '"' || t.data[k] == '\\')
                st = hs_buf_append_byte(b, '\\');
            if (st == HS_OK)
                st = hs_buf_append_byte(b, t.data[k]);
        }
        if (st == HS_OK)
            st = hs_buf_append_byte(b, '"');
    }
    hs_buf_free(&t);
    return st;
}

/* Row i of c (valid) in PostgreSQL's text output form. */
static hs_status put_value(const hs_field *f, const hs_column *c, int64_t i, hs_buf *b,
                           bool nested)
{
    (void)nested;
    switch (f->type) {
    case HS_TYPE_NA: return HS_OK;
    case HS_TYPE_BOOL:
        return hs_buf_append_byte(b, hs_bit_get(c->values.data, i) ? 't' : 'f');
    case HS_TYPE_INT8: return hs_buf_printf(b, "%d", HS_COL_VALUES(c, int8_t)[i]);
    case HS_TYPE_INT16: return hs_buf_printf(b, "%d", HS_COL_VALUES(c, int16_t)[i]);
    case HS_TYPE_INT32: return hs_buf_printf(b, "%" PRId32, HS_COL_VALUES(c, int32_t)[i]);
    case HS_TYPE_INT64: return hs_buf_printf(b, "%" PRId64, HS_COL_VALUES(c, int64_t)[i]);
    case HS_TYPE_UINT8: return hs_buf_printf(b, "%u", HS_COL_VALUES(c, uint8_t)[i]);
    case HS_TYPE_UINT16: return hs_buf_printf(b, "%u", HS_COL_VALUES(c, uint16_t)[i]);
    case HS_TYPE_UINT32: return hs_buf_printf(b, "%" PRIu32, HS_COL_VALUES(c, uint32_t)[i]);
    case HS_TYPE_UINT64: return hs_buf_printf(b, "%" PRIu64, HS_COL_VALUES(c, uint64_t)[i]);
    case HS_TYPE_FLOAT16: return put_float(b, hs_half_to_float(HS_COL_VALUES(c, uint16_t)[i]));
    case HS_TYPE_FLOAT32: return put_float(b, HS_COL_VALUES(c, float)[i]);
    case HS_TYPE_FLOAT64: return put_double(b, HS_COL_VALUES(c, double)[i]);
    case HS_TYPE_DECIMAL128: {
        __int128 v;
        memcpy(&v, c->values.data + 16 * i, 16);
        return put_i128(b, v, f->scale);
    }
    case HS_TYPE_DATE32: return put_date(b, HS_COL_VALUES(c, int32_t)[i]);
    case HS_TYPE_TIME32: return put_time_of_day(b, HS_COL_VALUES(c, int32_t)[i], f->unit);
    case HS_TYPE_TIME64: return put_time_of_day(b, HS_COL_VALUES(c, int64_t)[i], f->unit);
    case HS_TYPE_TIMESTAMP:
        return put_timestamp(b, HS_COL_VALUES(c, int64_t)[i], f->unit, f->tz != NULL);
    case HS_TYPE_INTERVAL: {
        hs_interval v;
        char txt[128];
        memcpy(&v, c->values.data + 16 * i, 16);
        return hs_buf_append(b, txt, hs_interval_format(v, txt, sizeof txt));
    }
    case HS_TYPE_STRING: {
        const int32_t *o = HS_COL_OFFSETS(c);
        return hs_buf_append(b, c->values.data + o[i], (size_t)(o[i + 1] - o[i]));
    }
    case HS_TYPE_BINARY:
    case HS_TYPE_FIXED_BINARY: {
        const uint8_t *p;
        size_t n;
        if (f->type == HS_TYPE_BINARY) {
            const int32_t *o = HS_COL_OFFSETS(c);
            p = c->values.data + o[i];
            n = (size_t)(o[i + 1] - o[i]);
        } else {
            p = c->values.data + (size_t)f->width * (size_t)i;
            n = (size_t)f->width;
        }
        if (f->ext == HS_EXT_UUID && n == 16)
            return hs_buf_printf(b, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                                    "%02x%02x%02x%02x%02x%02x", p[0], p[1], p[2], p[3], p[4],
                                 p[5], p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13],
                                 p[14], p[15]);
        HS_TRY(hs_buf_puts(b, "\\x"));
        for (size_t k = 0; k < n; k++)
            HS_TRY(hs_buf_printf(b, "%02x", p[k]));
        return HS_OK;
    }
    case HS_TYPE_LIST:
    case HS_TYPE_FIXED_LIST: {
        const hs_field *ef = &f->children[0];
        const hs_column *ec = c->children[0];
        int64_t lo, hi;
        if (f->type == HS_TYPE_LIST) {
            lo = HS_COL_OFFSETS(c)[i];
            hi = HS_COL_OFFSETS(c)[i + 1];
        } else {
            lo = (int64_t)f->width * i;
            hi = lo + f->width;
        }
        bool vec = is_vector_elem(ef);   /* vector / halfvec: pgvector's '[1,2]' */
        HS_TRY(hs_buf_append_byte(b, vec ? '[' : '{'));
        for (int64_t k = lo; k < hi; k++) {
            if (k > lo)
                HS_TRY(hs_buf_append_byte(b, ','));
            HS_TRY(put_nested(ef, ec, k, b, true));
        }
        return hs_buf_append_byte(b, vec ? ']' : '}');
    }
    case HS_TYPE_STRUCT:
        HS_TRY(hs_buf_append_byte(b, '('));
        for (int k = 0; k < f->n_children; k++) {
            if (k)
                HS_TRY(hs_buf_append_byte(b, ','));
            HS_TRY(put_nested(&f->children[k], c->children[k], i, b, false));
        }
        return hs_buf_append_byte(b, ')');
    case HS_TYPE_MAP:
    default: {
        /* maps (no PostgreSQL form): the JSON of docs/jsonl.md */
        return hs_json_append_value(f, c, i, b);
    }
    }
}

static bool right_aligned(const hs_field *f)
{
    switch (f->type) {
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_INT32: case HS_TYPE_INT64:
    case HS_TYPE_UINT8: case HS_TYPE_UINT16: case HS_TYPE_UINT32: case HS_TYPE_UINT64:
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: case HS_TYPE_FLOAT64: case HS_TYPE_DECIMAL128:
        return true;
    default: return false;
    }
}

/* PostgreSQL's name for a column type (for \d). */
static hs_status put_type_name(const hs_field *f, hs_buf *b)
{
    switch (f->type) {
    case HS_TYPE_BOOL: return hs_buf_puts(b, "boolean");
    case HS_TYPE_INT8: case HS_TYPE_INT16: case HS_TYPE_UINT8: return hs_buf_puts(b, "smallint");
    case HS_TYPE_INT32: case HS_TYPE_UINT16: return hs_buf_puts(b, "integer");
    case HS_TYPE_INT64: case HS_TYPE_UINT32: return hs_buf_puts(b, "bigint");
    case HS_TYPE_UINT64: return hs_buf_puts(b, "numeric(20,0)");
    case HS_TYPE_FLOAT16: case HS_TYPE_FLOAT32: return hs_buf_puts(b, "real");
    case HS_TYPE_FLOAT64: return hs_buf_puts(b, "double precision");
    case HS_TYPE_DECIMAL128: return hs_buf_printf(b, "numeric(%d,%d)", f->precision, f->scale);
    case HS_TYPE_DATE32: return hs_buf_puts(b, "date");
    case HS_TYPE_TIME32: case HS_TYPE_TIME64: return hs_buf_puts(b, "time without time zone");
    case HS_TYPE_TIMESTAMP:
        return hs_buf_puts(b, f->tz ? "timestamp with time zone" : "timestamp without time zone");
    case HS_TYPE_STRING: return hs_buf_puts(b, f->ext == HS_EXT_JSON ? "json" : "text");
    case HS_TYPE_BINARY: return hs_buf_puts(b, "bytea");
    case HS_TYPE_INTERVAL: return hs_buf_puts(b, "interval");
    case HS_TYPE_FIXED_BINARY:
        return f->ext == HS_EXT_UUID ? hs_buf_puts(b, "uuid") : hs_buf_puts(b, "bytea");
    case HS_TYPE_FIXED_LIST:
        if (f->children[0].type == HS_TYPE_FLOAT32)
            return hs_buf_printf(b, "vector(%d)", f->width);
        if (f->children[0].type == HS_TYPE_FLOAT16)
            return hs_buf_printf(b, "halfvec(%d)", f->width);
        /* fall through */
    case HS_TYPE_LIST:
        HS_TRY(put_type_name(&f->children[0], b));
        return hs_buf_puts(b, "[]");
    default: return hs_field_format(f, b);
    }
}

/* ================================================================== */
/* output                                                              */

/* All cells of a result as text, for the aligned format (which needs every
 * width before the first line). */
typedef struct grid {
    int n_cols;
    char **names;
    bool *right;
    int64_t n_rows, cap;
    char **cells;        /* n_rows * n_cols; NULL = SQL NULL */
} grid;

static void grid_free(grid *g)
{
    for (int64_t k = 0; k < g->n_rows * g->n_cols; k++)
        hs_free(g->cells[k]);
    for (int k = 0; k < g->n_cols; k++)
        hs_free(g->names[k]);
    hs_free(g->cells);
    hs_free(g->names);
    hs_free(g->right);
    memset(g, 0, sizeof *g);
}

static hs_status grid_add_row(grid *g, char **row)
{
    if (g->n_rows == g->cap) {
        int64_t cap = g->cap ? g->cap * 2 : 64;
        char **c = hs_realloc(g->cells, (size_t)(cap * g->n_cols) * sizeof *c);
        if (!c && g->n_cols)
            return HS_NOMEM;
        g->cells = c;
        g->cap = cap;
    }
    memcpy(g->cells + g->n_rows * g->n_cols, row, (size_t)g->n_cols * sizeof *row);
    g->n_rows++;
    return HS_OK;
}

/* Display width of UTF-8 text: one column per code point (no East Asian
 * wide forms; psql counts those as two). */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

static void put_padded(FILE *out, const char *s, size_t w, bool right, bool last)
{
    size_t n = text_width(s);
    size_t pad = w > n ? w - n : 0;
    if (right)
        fprintf(out, "%*s%s", (int)pad, "", s);
    else if (last)
        fputs(s, out);
    else
        fprintf(out, "%s%*s", s, (int)pad, "");
}

static void print_aligned(FILE *out, const grid *g)
{
    size_t *w = hs_calloc((size_t)g->n_cols + 1, sizeof *w);
    if (!w)
        return;
    for (int k = 0; k < g->n_cols; k++) {
        w[k] = text_width(g->names[k]);
        for (int64_t r = 0; r < g->n_rows; r++) {
            const char *c = g->cells[r * g->n_cols + k];
            size_t n = c ? text_width(c) : 0;
            if (n > w[k])
                w[k] = n;
        }
    }
    for (int k = 0; k < g->n_cols; k++) {   /* header, centered */
        size_t n = text_width(g->names[k]);
        size_t left = (w[k] - n) / 2, right = w[k] - n - left;
        fprintf(out, "%s %*s%s%*s ", k ? "|" : "", (int)left, "", g->names[k], (int)right, "");
    }
    fputc('\n', out);
    for (int k = 0; k < g->n_cols; k++) {
        fputs(k ? "+-" : "-", out);
        for (size_t j = 0; j < w[k]; j++)
            fputc('-', out);
        fputc('-', out);
    }
    fputc('\n', out);
    for (int64_t r = 0; r < g->n_rows; r++) {
        for (int k = 0; k < g->n_cols; k++) {
            const char *c = g->cells[r * g->n_cols + k];
            bool last = k == g->n_cols - 1;
            fputs(k ? " | " : " ", out);
            put_padded(out, c ? c : "", w[k], g->right[k], last);
        }
        fputc('\n', out);
    }
    fprintf(out, "(%" PRId64 " row%s)\n\n", g->n_rows, g->n_rows == 1 ? "" : "s");
    hs_free(w);
}

static void put_csv_field(FILE *out, const char *s)
{
    if (!s)
        return;
    bool quote = !*s || strpbrk(s, ",\"\r\n") != NULL || isspace((unsigned char)s[0]) ||
                 isspace((unsigned char)s[strlen(s) - 1]);
    if (!quote) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

/* Reads the result's stream and prints it in sh->fmt.  HS_CANCELLED etc. */
static hs_status print_rows(shell *sh, hs_result *r, hs_error *err)
{
    struct ArrowArrayStream stream = {0};
    HS_TRY(hs_result_stream(r, &stream, err));
    struct ArrowSchema as;
    hs_field schema = {0};
    grid g = {0};
    hs_buf line = {0};
    hs_status st = HS_OK;
    if (stream.get_schema(&stream, &as) != 0) {
        st = hs_err_set(err, HS_IO, "%s", stream.get_last_error(&stream));
        stream.release(&stream);
        return st;
    }
    st = hs_arrow_import_schema(&as, &schema, err);
    as.release(&as);
    if (st != HS_OK) {
        stream.release(&stream);
        return st;
    }
    g.n_cols = schema.n_children;
    g.names = hs_calloc((size_t)g.n_cols + 1, sizeof *g.names);
    g.right = hs_calloc((size_t)g.n_cols + 1, sizeof *g.right);
    if (!g.names || !g.right) {
        st = hs_err_nomem(err, 0);
        goto done;
    }
    for (int k = 0; k < g.n_cols; k++) {
        g.names[k] = hs_strdup(schema.children[k].name);
        g.right[k] = right_aligned(&schema.children[k]);
        if (!g.names[k]) {
            st = hs_err_nomem(err, 0);
            goto done;
        }
    }
    if (sh->fmt == FMT_CSV) {
        for (int k = 0; k < g.n_cols; k++) {
            if (k)
                fputc(',', sh->out);
            put_csv_field(sh->out, g.names[k]);
        }
        fputc('\n', sh->out);
    }
    char **row = hs_calloc((size_t)g.n_cols + 1, sizeof *row);
    if (!row) {
        st = hs_err_nomem(err, 0);
        goto done;
    }
    for (;;) {
        struct ArrowArray arr;
        int rc = stream.get_next(&stream, &arr);
        if (rc != 0) {
            const char *m = stream.get_last_error(&stream);
            st = hs_err_set(err, rc == ECANCELED ? HS_CANCELLED : rc == ENOMEM ? HS_NOMEM
                                                 : rc == EINVAL ? HS_INVALID : HS_IO,
                            "%s", m && m[0] ? m : strerror(rc));
            break;
        }
        if (!arr.release)
            break;
        hs_batch *b = NULL;
        st = hs_arrow_import_batch(&arr, &schema, &b, err);
        if (st != HS_OK)
            break;
        if (sh->fmt == FMT_JSONL) {
            hs_buf_reset(&line);
            st = hs_batch_write_jsonl(b, 0, b->n_rows, &line);
            if (st == HS_OK && line.len)
                fwrite(line.data, 1, line.len, sh->out);
        }
        for (int64_t i = 0; i < b->n_rows && st == HS_OK && sh->fmt != FMT_JSONL; i++) {
            for (int k = 0; k < g.n_cols; k++) {
                row[k] = NULL;
                if (!hs_col_is_valid(b->cols[k], i))
                    continue;
                hs_buf_reset(&line);
                st = put_value(&schema.children[k], b->cols[k], i, &line, false);
                if (st == HS_OK)
                    st = hs_buf_append_byte(&line, 0);
                if (st != HS_OK)
                    break;
                row[k] = hs_strdup((const char *)line.data);
                if (!row[k]) {
                    st = HS_NOMEM;
                    break;
                }
            }
            if (st == HS_OK && sh->fmt == FMT_CSV) {
                for (int k = 0; k < g.n_cols; k++) {
                    if (k)
                        fputc(',', sh->out);
                    put_csv_field(sh->out, row[k]);
                    hs_free(row[k]);
                }
                fputc('\n', sh->out);
            } else if (st == HS_OK) {
                st = grid_add_row(&g, row);
            }
            if (st != HS_OK) {
                for (int k = 0; k < g.n_cols; k++)
                    hs_free(row[k]);
                st = hs_err_nomem(err, 0);
            }
        }
        hs_batch_free(b);
        if (st != HS_OK)
            break;
    }
    hs_free(row);
    if (st == HS_OK && sh->fmt == FMT_ALIGNED)
        print_aligned(sh->out, &g);
done:
    stream.release(&stream);
    grid_free(&g);
    hs_buf_free(&line);
    hs_field_clear(&schema);
    return st;
}

/* psql's error report: "ERROR:  msg", then, with a position, the line of
 * the statement holding it and a caret under it. */
static void print_error(shell *sh, const char *sql, hs_status st, const hs_error *err)
{
    fflush(sh->out);
    const char *state = hs_session_sqlstate(sh->s);
    const char *msg = err->msg[0] ? err->msg : hs_status_name(st);
    if (st == HS_CANCELLED && (!state || strcmp(state, "57014") != 0))
        msg = "canceling statement due to user request";
    int pos = hs_session_error_position(sh->s);
    /* The library's message may already quote the statement under a first
     * line ending in " at character N"; psql's report gives that as LINE. */
    int len = (int)strcspn(msg, "\n");
    const char *at = NULL;
    for (const char *p = msg; (p = strstr(p, " at character ")) && p < msg + len; p++)
        at = p;
    if (pos > 0 && at && strspn(at + 14, "0123456789") == (size_t)(msg + len - at - 14))
        len = (int)(at - msg);
    fprintf(stderr, "ERROR:  %.*s\n", len, msg);
    if (pos <= 0 || !sql)
        return;
    /* pos counts characters (code points), 1-based */
    const char *p = sql, *line_start = sql;
    int line_no = 1, col = 0, chars = 0;
    for (; *p && chars < pos - 1; p++) {
        if (((unsigned char)*p & 0xC0) == 0x80)
            continue;
        chars++;
        if (*p == '\n') {
            line_no++;
            line_start = p + 1;
            col = 0;
        } else {
            col++;
        }
    }
    const char *line_end = strchr(line_start, '\n');
    len = line_end ? (int)(line_end - line_start) : (int)strlen(line_start);
    char prefix[32];
    int pl = snprintf(prefix, sizeof prefix, "LINE %d: ", line_no);
    fprintf(stderr, "%s%.*s\n%*s^\n", prefix, len, line_start, pl + col, "");
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Runs one statement; 0 or -1 (error printed). */
static int run_statement(shell *sh, const char *sql)
{
    double t0 = now_ms();
    hs_error err = {0};
    hs_result *r = NULL;
    g_interrupted = 0;
    g_running = sh->s;
    hs_status st = hs_session_execute(sh->s, sql, &r, &err);
    if (st == HS_OK) {
        if (hs_result_has_rows(r))
            st = print_rows(sh, r, &err);
        else
            fprintf(sh->out, "%s\n", hs_result_tag(r));
    }
    g_running = NULL;
    hs_result_free(r);
    if (st != HS_OK) {
        print_error(sh, sql, st, &err);
        sh->errors++;
    }
    if (sh->timing) {
        char tb[64];
        hs_snprintf_c(tb, sizeof tb, "Time: %.3f ms\n", now_ms() - t0);
        fputs(tb, sh->out);
    }
    fflush(sh->out);
    return st == HS_OK ? 0 : -1;
}

/* ================================================================== */
/* splitting input into statements                                     */

typedef struct splitter {
    hs_buf text;         /* the statement so far */
    int state;           /* 0 code, 1 '...', 2 "...", 3 $tag$, 4 block comment */
    bool escape_string;  /* E'...': backslash escapes */
    int comment_depth;
    int paren;
    char dollar_tag[64];
} splitter;

enum { SP_CODE, SP_SQUOTE, SP_DQUOTE, SP_DOLLAR, SP_BLOCK };

static bool only_blank(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isspace(p[i]))
            return false;
    return true;
}

/* Feeds one line (without its newline).  Each complete statement is run
 * (through run_statement); returns -1 when one failed and stop_on_error. */
static int split_feed(shell *sh, splitter *sp, const char *line, bool stop_on_error)
{
    size_t n = strlen(line);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = line[i], nx = i + 1 < n ? line[i + 1] : 0;
        if (hs_buf_append_byte(&sp->text, (uint8_t)ch) != HS_OK)
            return -1;
        switch (sp->state) {
        case SP_CODE:
            if (ch == '-' && nx == '-') {   /* line comment: keep the rest verbatim */
                if (hs_buf_append(&sp->text, line + i + 1, n - i - 1) != HS_OK)
                    return -1;
                i = n;
            } else if (ch == '/' && nx == '*') {
                sp->state = SP_BLOCK;
                sp->comment_depth = 1;
                if (hs_buf_append_byte(&sp->text, '*') != HS_OK)
                    return -1;
                i++;
            } else if (ch == '\'') {
                sp->state = SP_SQUOTE;
                sp->escape_string = i > 0 && (line[i - 1] == 'E' || line[i - 1] == 'e') &&
                                    (i < 2 || !(isalnum((unsigned char)line[i - 2]) ||
                                                line[i - 2] == '_'));
            } else if (ch == '"') {
                sp->state = SP_DQUOTE;
            } else if (ch == '$' && (i == 0 || !(isalnum((unsigned char)line[i - 1]) ||
                                                 line[i - 1] == '_'))) {
                size_t j = i + 1;
                while (j < n && (isalnum((unsigned char)line[j]) || line[j] == '_') &&
                       !isdigit((unsigned char)line[i + 1]))
                    j++;
                if (j < n && line[j] == '$' && j - i < sizeof sp->dollar_tag) {
                    memcpy(sp->dollar_tag, line + i, j - i + 1);
                    sp->dollar_tag[j - i + 1] = 0;
                    if (hs_buf_append(&sp->text, line + i + 1, j - i) != HS_OK)
                        return -1;
                    i = j;
                    sp->state = SP_DOLLAR;
                }
            } else if (ch == '(') {
                sp->paren++;
            } else if (ch == ')') {
                if (sp->paren > 0)
                    sp->paren--;
            } else if (ch == ';' && sp->paren == 0) {
                if (hs_buf_append_byte(&sp->text, 0) != HS_OK)
                    return -1;
                char *stmt = (char *)sp->text.data;
                if (!only_blank(sp->text.data, sp->text.len - 2) && !sh->quit) {
                    if (run_statement(sh, stmt) < 0) {
                        rc = -1;
                        if (stop_on_error) {
                            hs_buf_reset(&sp->text);
                            return -1;
                        }
                    }
                }
                hs_buf_reset(&sp->text);
                /* skip blanks after ';' so the next statement starts clean */
                while (i + 1 < n && isspace((unsigned char)line[i + 1]))
                    i++;
            }
            break;
        case SP_SQUOTE:
            if (ch == '\\' && sp->escape_string && nx) {
                if (hs_buf_append_byte(&sp->text, (uint8_t)nx) != HS_OK)
                    return -1;
                i++;
            } else if (ch == '\'') {
                if (nx == '\'') {
                    if (hs_buf_append_byte(&sp->text, '\'') != HS_OK)
                        return -1;
                    i++;
                } else {
                    sp->state = SP_CODE;
                }
            }
            break;
        case SP_DQUOTE:
            if (ch == '"') {
                if (nx == '"') {
                    if (hs_buf_append_byte(&sp->text, '"') != HS_OK)
                        return -1;
                    i++;
                } else {
                    sp->state = SP_CODE;
                }
            }
            break;
        case SP_DOLLAR: {
            size_t tl = strlen(sp->dollar_tag);
            if (ch == '$' && n - i >= tl && memcmp(line + i, sp->dollar_tag, tl) == 0) {
                if (hs_buf_append(&sp->text, line + i + 1, tl - 1) != HS_OK)
                    return -1;
                i += tl - 1;
                sp->state = SP_CODE;
            }
            break;
        }
        case SP_BLOCK:
            if (ch == '*' && nx == '/') {
                if (hs_buf_append_byte(&sp->text, '/') != HS_OK)
                    return -1;
                i++;
                if (--sp->comment_depth == 0)
                    sp->state = SP_CODE;
            } else if (ch == '/' && nx == '*') {
                if (hs_buf_append_byte(&sp->text, '*') != HS_OK)
                    return -1;
                i++;
                sp->comment_depth++;
            }
            break;
        }
    }
    if (sp->text.len && hs_buf_append_byte(&sp->text, '\n') != HS_OK)
        return -1;
    if (only_blank(sp->text.data, sp->text.len))
        hs_buf_reset(&sp->text);
    return rc;
}

/* Input ended: a statement without its ';' still runs (as psql -f does). */
static int split_finish(shell *sh, splitter *sp)
{
    int rc = 0;
    if (sp->text.len && !only_blank(sp->text.data, sp->text.len) && !sh->quit) {
        if (hs_buf_append_byte(&sp->text, 0) != HS_OK)
            return -1;
        rc = run_statement(sh, (const char *)sp->text.data);
    }
    hs_buf_free(&sp->text);
    memset(sp, 0, sizeof *sp);
    return rc;
}

/* ================================================================== */
/* meta-commands                                                        */

static int run_file(shell *sh, const char *path, bool stop_on_error);

static int parse_format(const char *s, out_format *out)
{
    if (strcmp(s, "aligned") == 0)
        *out = FMT_ALIGNED;
    else if (strcmp(s, "csv") == 0)
        *out = FMT_CSV;
    else if (strcmp(s, "jsonl") == 0 || strcmp(s, "json") == 0)
        *out = FMT_JSONL;
    else
        return -1;
    return 0;
}

/* Appends the names hs_catalog_list_tables gives for ns (JSON strings) to
 * arr. */
static hs_status list_into(shell *sh, const char *ns, json_t *arr, hs_error *err)
{
    char *json = NULL;
    HS_TRY(hs_catalog_list_tables(sh->cat, ns, &json, err));
    json_error_t je;
    json_t *got = hs_json_loads(json, 0, &je);
    hs_string_free(json);
    if (!json_is_array(got) || json_array_extend(arr, got) != 0) {
        json_decref(got);
        return hs_err_set(err, HS_INTERNAL, "the table list is not a JSON array");
    }
    json_decref(got);
    return HS_OK;
}

/* The namespaces of the SQL catalog (its iceberg_tables rows): the public
 * API lists the tables of one namespace at a time. */
static hs_status sql_namespaces(const char *db, json_t *out, hs_error *err)
{
    sqlite3 *h = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        hs_status st = hs_err_set(err, HS_IO, "%s: %s", db, h ? sqlite3_errmsg(h) : "cannot open");
        sqlite3_close(h);
        return st;
    }
    sqlite3_stmt *q = NULL;
    hs_status st = HS_OK;
    if (sqlite3_prepare_v2(h, "SELECT DISTINCT table_namespace FROM iceberg_tables "
                              "WHERE catalog_name = 'default' ORDER BY 1", -1, &q, NULL) ==
        SQLITE_OK) {
        while (sqlite3_step(q) == SQLITE_ROW) {
            const unsigned char *ns = sqlite3_column_text(q, 0);
            if (ns && json_array_append_new(out, json_string((const char *)ns)) != 0)
                st = hs_err_nomem(err, 0);
        }
    }
    sqlite3_finalize(q);
    sqlite3_close(h);
    return st;
}

/* \d: the catalog's tables (schema = namespace, name). */
static int meta_list_tables(shell *sh)
{
    if (!sh->cat) {
        fprintf(sh->out, "Did not find any relations (no catalog or warehouse was given; a "
                         "path table is reachable as \"/its/path\").\n");
        return 0;
    }
    hs_error err = {0};
    json_t *arr = json_array(), *nss = json_array();
    hs_status st = arr && nss ? HS_OK : hs_err_nomem(&err, 0);
    if (st == HS_OK && sh->sqlcat) {
        st = sql_namespaces(sh->sqlcat, nss, &err);
        size_t i;
        json_t *v;
        json_array_foreach(nss, i, v) {
            if (st == HS_OK)
                st = list_into(sh, json_string_value(v), arr, &err);
        }
    } else if (st == HS_OK) {
        st = list_into(sh, NULL, arr, &err);
    }
    json_decref(nss);
    if (st != HS_OK) {
        fprintf(stderr, "ERROR:  %s\n", err.msg[0] ? err.msg : hs_status_name(st));
        json_decref(arr);
        return -1;
    }
    grid g = {0};
    g.n_cols = 2;
    g.names = hs_calloc(2, sizeof *g.names);
    g.right = hs_calloc(2, sizeof *g.right);
    int rc = 0;
    if (!g.names || !g.right) {
        rc = -1;
        goto done;
    }
    g.names[0] = hs_strdup("Schema");
    g.names[1] = hs_strdup("Name");
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *full = json_string_value(v);
        if (!full)
            continue;
        const char *dot = strrchr(full, '.');
        char *row[2] = {dot ? hs_strndup(full, (size_t)(dot - full)) : NULL,
                        hs_strdup(dot ? dot + 1 : full)};
        if (grid_add_row(&g, row) != HS_OK) {
            hs_free(row[0]);
            hs_free(row[1]);
            rc = -1;
            goto done;
        }
    }
    fprintf(sh->out, "%*sList of tables\n", 8, "");
    print_aligned(sh->out, &g);
done:
    json_decref(arr);
    grid_free(&g);
    return rc;
}

/* \d NAME: columns (name, type, nullable) and indexes of one table. */
static int meta_describe(shell *sh, const char *name)
{
    char *path = NULL;
    size_t n = strlen(name);
    if (n >= 2 && name[0] == '"' && name[n - 1] == '"')
        name = path = hs_strndup(name + 1, n - 2);
    hs_catalog *pathcat = NULL;
    hs_table *t = NULL;
    hs_error err = {0};
    hs_status st;
    if (strchr(name, '/') || !sh->cat) {
        st = hs_catalog_open_path(NULL, &pathcat, &err);
        if (st == HS_OK)
            st = hs_table_open(pathcat, name, &t, &err);
    } else {
        st = hs_table_open(sh->cat, name, &t, &err);
    }
    struct ArrowSchema as = {0};
    hs_field f = {0};
    if (st == HS_OK)
        st = hs_table_schema(t, &as, &err);
    if (st == HS_OK) {
        st = hs_arrow_import_schema(&as, &f, &err);
        as.release(&as);
    }
    if (st != HS_OK) {
        if (st == HS_NOT_FOUND)
            fprintf(stderr, "Did not find any relation named \"%s\".\n", name);
        else
            fprintf(stderr, "ERROR:  %s\n", err.msg[0] ? err.msg : hs_status_name(st));
        hs_table_close(t);
        hs_catalog_close(pathcat);
        hs_free(path);
        return -1;
    }
    grid g = {0};
    g.n_cols = 3;
    g.names = hs_calloc(3, sizeof *g.names);
    g.right = hs_calloc(3, sizeof *g.right);
    int rc = 0;
    if (g.names && g.right) {
        g.names[0] = hs_strdup("Column");
        g.names[1] = hs_strdup("Type");
        g.names[2] = hs_strdup("Nullable");
        for (int k = 0; k < f.n_children; k++) {
            hs_buf tb = {0};
            char *row[3] = {hs_strdup(f.children[k].name), NULL,
                            hs_strdup(f.children[k].nullable ? "" : "not null")};
            if (put_type_name(&f.children[k], &tb) == HS_OK &&
                hs_buf_append_byte(&tb, 0) == HS_OK)
                row[1] = hs_strdup((const char *)tb.data);
            hs_buf_free(&tb);
            if (grid_add_row(&g, row) != HS_OK) {
                rc = -1;
                break;
            }
        }
        fprintf(sh->out, "Table \"%s\"\n", name);
        print_aligned(sh->out, &g);
    }
    grid_free(&g);
    char *idx = NULL;
    if (hs_table_list_indexes(t, &idx, &err) == HS_OK) {
        json_error_t je;
        json_t *arr = hs_json_loads(idx, 0, &je);
        if (arr && json_array_size(arr)) {
            fprintf(sh->out, "Indexes:\n");
            size_t i;
            json_t *v;
            json_array_foreach(arr, i, v) {
                char *params = hs_json_dumps(json_object_get(v, "params"), JSON_COMPACT);
                fprintf(sh->out, "    %s on (%s) %s, %lld/%lld files indexed\n",
                        json_string_value(json_object_get(v, "kind")),
                        json_string_value(json_object_get(v, "column")),
                        params ? params : "{}",
                        (long long)json_integer_value(json_object_get(v, "files_indexed")),
                        (long long)json_integer_value(json_object_get(v, "files_live")));
                free(params);
            }
            fputc('\n', sh->out);
        }
        json_decref(arr);
        hs_string_free(idx);
    }
    hs_field_clear(&f);
    hs_table_close(t);
    hs_catalog_close(pathcat);
    hs_free(path);
    return rc;
}

static const char meta_help[] =
    "General\n"
    "  \\q                     quit\n"
    "  \\timing [on|off]       show the time of each statement\n"
    "Informational\n"
    "  \\d                     list tables\n"
    "  \\d NAME                describe table (columns, types, indexes)\n"
    "Input/Output\n"
    "  \\i FILE                run the statements of FILE\n"
    "  \\o [FILE]              send results to FILE (none: back to stdout)\n"
    "  \\pset format F         output format: aligned, csv, jsonl\n";

/* One meta-command line (leading blanks skipped, starts with '\'). */
static int run_meta(shell *sh, const char *line)
{
    while (isspace((unsigned char)*line))
        line++;
    line++;   /* the backslash */
    char cmd[32];
    size_t k = 0;
    while (line[k] && !isspace((unsigned char)line[k]) && k < sizeof cmd - 1) {
        cmd[k] = line[k];
        k++;
    }
    cmd[k] = 0;
    const char *arg = line + k;
    while (isspace((unsigned char)*arg))
        arg++;
    char argbuf[4096];
    snprintf(argbuf, sizeof argbuf, "%s", arg);
    size_t al = strlen(argbuf);
    while (al && isspace((unsigned char)argbuf[al - 1]))
        argbuf[--al] = 0;
    if (al && argbuf[al - 1] == ';')   /* "\d t;" as people type it */
        argbuf[--al] = 0;
    if (strcmp(cmd, "q") == 0 || strcmp(cmd, "quit") == 0) {
        sh->quit = true;
        return 0;
    }
    if (strcmp(cmd, "?") == 0) {
        fputs(meta_help, sh->out);
        return 0;
    }
    if (strcmp(cmd, "timing") == 0) {
        if (!al)
            sh->timing = !sh->timing;
        else if (strcmp(argbuf, "on") == 0)
            sh->timing = true;
        else if (strcmp(argbuf, "off") == 0)
            sh->timing = false;
        else {
            fprintf(stderr, "\\timing: expected on or off, got \"%s\"\n", argbuf);
            return -1;
        }
        fprintf(sh->out, "Timing is %s.\n", sh->timing ? "on" : "off");
        return 0;
    }
    if (strcmp(cmd, "d") == 0 || strcmp(cmd, "dt") == 0)
        return al ? meta_describe(sh, argbuf) : meta_list_tables(sh);
    if (strcmp(cmd, "i") == 0) {
        if (!al) {
            fprintf(stderr, "\\i: missing required argument\n");
            return -1;
        }
        return run_file(sh, argbuf, true);
    }
    if (strcmp(cmd, "o") == 0) {
        if (sh->out != stdout)
            fclose(sh->out);
        sh->out = stdout;
        if (al) {
            FILE *f = fopen(argbuf, "w");
            if (!f) {
                fprintf(stderr, "%s: %s\n", argbuf, strerror(errno));
                return -1;
            }
            sh->out = f;
        }
        return 0;
    }
    if (strcmp(cmd, "pset") == 0) {
        const char *v = argbuf;
        if (strncmp(v, "format", 6) == 0 && (v[6] == 0 || isspace((unsigned char)v[6]))) {
            v += 6;
            while (isspace((unsigned char)*v))
                v++;
            if (parse_format(v, &sh->fmt) == 0 || !*v) {
                static const char *const names[] = {"aligned", "csv", "jsonl"};
                fprintf(sh->out, "Output format is %s.\n", names[sh->fmt]);
                return 0;
            }
            fprintf(stderr, "\\pset: allowed formats are aligned, csv, jsonl\n");
            return -1;
        }
        fprintf(stderr, "\\pset: unknown option: %s\n", v);
        return -1;
    }
    fprintf(stderr, "invalid command \\%s\nTry \\? for help.\n", cmd);
    return -1;
}

/* ================================================================== */
/* input loops                                                          */

/* Reads statements and meta-commands from f until EOF or \q. */
static int run_stream(shell *sh, FILE *f, bool stop_on_error)
{
    splitter sp = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (!sh->quit && (n = getline(&line, &cap, f)) >= 0) {
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        const char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        int r;
        if (*p == '\\' && sp.state == SP_CODE)
            r = run_meta(sh, p);
        else
            r = split_feed(sh, &sp, line, stop_on_error);
        if (r < 0) {
            rc = -1;
            if (stop_on_error)
                break;
        }
    }
    free(line);
    if (rc == 0 || !stop_on_error) {
        if (split_finish(sh, &sp) < 0)
            rc = -1;
    } else {
        hs_buf_free(&sp.text);
    }
    return rc;
}

static int run_file(shell *sh, const char *path, bool stop_on_error)
{
    if (strcmp(path, "-") == 0)
        return run_stream(sh, stdin, stop_on_error);
    if (sh->depth >= 16) {
        fprintf(stderr, "%s: \\i nested too deeply\n", path);
        return -1;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return -1;
    }
    sh->depth++;
    int rc = run_stream(sh, f, stop_on_error);
    sh->depth--;
    fclose(f);
    return rc;
}

static char *history_path(void)
{
    const char *e = getenv("HS_HISTFILE");
    if (e && *e)
        return hs_strdup(e);
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    hs_buf b = {0};
    if (hs_buf_printf(&b, "%s/.hyperstream_history", home) != HS_OK ||
        hs_buf_append_byte(&b, 0) != HS_OK) {
        hs_buf_free(&b);
        return NULL;
    }
    return (char *)hs_buf_detach(&b, NULL);
}

/* The terminal: libedit's readline with history. */
static int run_interactive(shell *sh)
{
    char *hist = history_path();
    using_history();
    if (hist)
        (void)read_history(hist);
    printf("hyperstream %s SQL shell. Type \\? for help, \\q to quit.\n\n", HS_VERSION);
    splitter sp = {0};
    while (!sh->quit) {
        g_interrupted = 0;
        char *line = readline(sp.text.len ? "hyperstream-> " : "hyperstream=> ");
        if (g_interrupted) {   /* Ctrl-C at the prompt: drop the statement typed so far */
            g_interrupted = 0;
            hs_buf_free(&sp.text);
            memset(&sp, 0, sizeof sp);
            fputc('\n', stdout);
            free(line);
            continue;
        }
        if (!line) {    /* EOF (Ctrl-D) */
            fputc('\n', stdout);
            break;
        }
        const char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p) {
            add_history(line);
            if (*p == '\\' && sp.state == SP_CODE)
                (void)run_meta(sh, p);
            else
                (void)split_feed(sh, &sp, line, false);
        } else if (sp.text.len) {
            (void)split_feed(sh, &sp, line, false);
        }
        free(line);
    }
    hs_buf_free(&sp.text);
    if (hist) {
        (void)write_history(hist);
        hs_free(hist);
    }
    return 0;
}

/* ================================================================== */
/* the command                                                          */

/* Registers every path table under the warehouse by its name (the names
 * hs_catalog_list_tables gives).  Tables that fail to open are skipped with
 * a warning: the others stay usable. */
static hs_status register_warehouse(shell *sh, hs_error *err)
{
    char *json = NULL;
    HS_TRY(hs_catalog_list_tables(sh->cat, NULL, &json, err));
    json_error_t je;
    json_t *arr = hs_json_loads(json, 0, &je);
    hs_string_free(json);
    if (!json_is_array(arr)) {
        json_decref(arr);
        return hs_err_set(err, HS_INTERNAL, "the table list is not a JSON array");
    }
    sh->tables = hs_calloc(json_array_size(arr) + 1, sizeof *sh->tables);
    if (!sh->tables) {
        json_decref(arr);
        return hs_err_nomem(err, 0);
    }
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        const char *name = json_string_value(v);
        hs_table *t = NULL;
        hs_error e2 = {0};
        if (!name)
            continue;
        hs_status st = hs_table_open(sh->cat, name, &t, &e2);
        if (st == HS_OK)
            st = hs_session_register(sh->s, name, t, &e2);
        if (st != HS_OK) {
            fprintf(stderr, "hyperstream: warning: table %s skipped: %s\n", name,
                    e2.msg[0] ? e2.msg : hs_status_name(st));
            hs_table_close(t);
            continue;
        }
        sh->tables[sh->n_tables++] = t;
    }
    json_decref(arr);
    return HS_OK;
}

typedef struct script { bool is_file; const char *text; } script;

int cmd_sql(int argc, char **argv)
{
    const char *sqlcat = NULL, *warehouse = NULL, *format = NULL;
    int threads = 0;
    script *scripts = hs_calloc((size_t)argc + 1, sizeof *scripts);
    int n_scripts = 0;
    if (!scripts)
        return cli_fail("out of memory");
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            fputs(sql_usage, stdout);
            hs_free(scripts);
            return 0;
        }
        bool takes = strcmp(a, "--sql") == 0 || strcmp(a, "-c") == 0 || strcmp(a, "-f") == 0 ||
                     strcmp(a, "--format") == 0 || strcmp(a, "--threads") == 0;
        if (takes && i + 1 >= argc) {
            hs_free(scripts);
            return cli_usage_error("sql ", "%s needs a value", a);
        }
        if (strcmp(a, "--sql") == 0)
            sqlcat = argv[++i];
        else if (strcmp(a, "-c") == 0)
            scripts[n_scripts++] = (script){false, argv[++i]};
        else if (strcmp(a, "-f") == 0)
            scripts[n_scripts++] = (script){true, argv[++i]};
        else if (strcmp(a, "--format") == 0)
            format = argv[++i];
        else if (strcmp(a, "--threads") == 0) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 4096) {
                hs_free(scripts);
                return cli_usage_error("sql ", "--threads needs a number from 1 to 4096");
            }
            threads = (int)v;
        } else if (a[0] == '-' && a[1]) {
            hs_free(scripts);
            return cli_usage_error("sql ", "unknown option '%s'", a);
        } else if (!warehouse) {
            warehouse = a;
        } else {
            hs_free(scripts);
            return cli_usage_error("sql ", "more than one WAREHOUSE ('%s', '%s')", warehouse, a);
        }
    }
    shell sh = {.out = stdout, .sqlcat = sqlcat};
    if (format && parse_format(format, &sh.fmt) != 0) {
        hs_free(scripts);
        return cli_usage_error("sql ", "--format must be aligned, csv or jsonl, not '%s'", format);
    }
    hs_error err = {0};
    hs_status st = HS_OK;
    if (sqlcat)
        st = hs_catalog_open_sql(sqlcat, NULL, warehouse, &sh.cat, &err);
    else if (warehouse)
        st = hs_catalog_open_path(warehouse, &sh.cat, &err);
    if (st == HS_OK) {
        hs_session_options o = HS_SESSION_OPTIONS_INIT;
        o.threads = threads;
        o.catalog = sh.cat;
        st = hs_session_open(&o, &sh.s, &err);
    }
    if (st == HS_OK && warehouse && !sqlcat)
        st = register_warehouse(&sh, &err);
    if (st != HS_OK) {
        hs_session_close(sh.s);
        for (size_t i = 0; i < sh.n_tables; i++)
            hs_table_close(sh.tables[i]);
        hs_free(sh.tables);
        hs_catalog_close(sh.cat);
        hs_free(scripts);
        return cli_fail_err(st, &err);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    if (n_scripts) {
        for (int i = 0; i < n_scripts && rc == 0 && !sh.quit; i++) {
            if (scripts[i].is_file) {
                rc = run_file(&sh, scripts[i].text, true);
            } else {
                splitter sp = {0};
                /* -c text: statements (and meta-commands) line by line */
                const char *p = scripts[i].text;
                while (*p && rc == 0 && !sh.quit) {
                    const char *e = strchr(p, '\n');
                    size_t len = e ? (size_t)(e - p) : strlen(p);
                    char *line = hs_strndup(p, len);
                    if (!line) {
                        rc = -1;
                        break;
                    }
                    const char *q = line;
                    while (isspace((unsigned char)*q))
                        q++;
                    if (*q == '\\' && sp.state == SP_CODE)
                        rc = run_meta(&sh, q);
                    else
                        rc = split_feed(&sh, &sp, line, true);
                    hs_free(line);
                    p += len + (e ? 1 : 0);
                }
                if (rc == 0)
                    rc = split_finish(&sh, &sp);
                else
                    hs_buf_free(&sp.text);
            }
        }
    } else if (isatty(STDIN_FILENO)) {
        rc = run_interactive(&sh);
    } else {
        rc = run_stream(&sh, stdin, false);
        if (sh.errors)
            rc = -1;
    }
    if (sh.out != stdout)
        fclose(sh.out);
    signal(SIGINT, SIG_DFL);
    hs_session_close(sh.s);
    for (size_t i = 0; i < sh.n_tables; i++)
        hs_table_close(sh.tables[i]);
    hs_free(sh.tables);
    hs_catalog_close(sh.cat);
    hs_free(scripts);
    return rc == 0 ? 0 : CLI_EXIT_FAIL;
}

/*
 * cli/cmd_search.c - `hyperstream table search`: top-k vector search over
 * a table (hs_table_search, hyperstream/index.h), rows printed as JSON
 * Lines nearest first, the distance as the last field.
 *
 *   hyperstream table search TABLE --column C --query Q --k N
 *       [--metric l2|cosine|ip] [--filter EXPR] [--columns a,b]
 *       [--ef N] [--nprobe N] [--distance-column NAME]
 *       [--snapshot ID | --as-of MS | --ref NAME]
 *       [--sql FILE [--catalog-name NAME] [--warehouse DIR]]
 *
 * Q is a JSON array of numbers ("[0.1, 0.2]"), comma-separated numbers
 * ("0.1,0.2"), or @FILE holding either.  Exit codes as every subcommand
 * (cli.h).
 */
#include "cli.h"

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/arrow_c.h"
#include "columnar/jsonl.h"
#include "hyperstream/index.h"
#include "hyperstream/table.h"
#include "io/io.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 256

static const char search_usage[] =
    "Usage: hyperstream table search TABLE --column C --query Q --k N [options]\n"
    "\n"
    "Top-k rows nearest to the query vector, as JSON Lines, nearest first, with\n"
    "the distance as the last field (L2 distance, cosine distance, or the inner\n"
    "product for ip).  Uses the column's vector index where one is built; exact\n"
    "search elsewhere.  Exactly min(k, matching rows) rows.\n"
    "\n"
    "Options:\n"
    "  --column C              the vector column (list<float>)\n"
    "  --query Q               [0.1, 0.2, ...] or 0.1,0.2,... or @FILE\n"
    "  --k N                   rows wanted (> 0)\n"
    "  --metric M              l2 | cosine | ip (default: the index's, else l2)\n"
    "  --filter EXPR           only rows matching EXPR (as `table scan`)\n"
    "  --columns a,b           output columns (default all)\n"
    "  --ef N                  HNSW search breadth (default: the index's)\n"
    "  --nprobe N              IVF lists probed (default: the index's)\n"
    "  --distance-column NAME  name of the distance field (default _distance)\n"
    "  --snapshot ID | --as-of MS | --ref NAME   time travel\n"
    "  --sql FILE [--catalog-name NAME] [--warehouse DIR]   SQLite catalog\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

typedef struct sargs {
    const char *table, *column, *query, *metric, *filter, *columns, *dist, *ref;
    const char *sql, *catalog_name, *warehouse;
    int64_t k, ef, nprobe, snapshot, as_of;
    bool has_snapshot, has_as_of;
} sargs;

static int parse_num(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return cli_usage_error("table search ", "option %s needs a number in [%lld, %lld], "
                               "got '%s'", opt, (long long)lo, (long long)hi, v);
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, sargs *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
        const char **str = NULL;
        int64_t *num = NULL, lo = 0, hi = INT32_MAX;
        if (strcmp(s, "--column") == 0) str = &a->column;
        else if (strcmp(s, "--query") == 0) str = &a->query;
        else if (strcmp(s, "--metric") == 0) str = &a->metric;
        else if (strcmp(s, "--filter") == 0) str = &a->filter;
        else if (strcmp(s, "--columns") == 0) str = &a->columns;
        else if (strcmp(s, "--distance-column") == 0) str = &a->dist;
        else if (strcmp(s, "--ref") == 0) str = &a->ref;
        else if (strcmp(s, "--sql") == 0) str = &a->sql;
        else if (strcmp(s, "--catalog-name") == 0) str = &a->catalog_name;
        else if (strcmp(s, "--warehouse") == 0) str = &a->warehouse;
        else if (strcmp(s, "--k") == 0 || strcmp(s, "-k") == 0) { num = &a->k; lo = 1; }
        else if (strcmp(s, "--ef") == 0) num = &a->ef;
        else if (strcmp(s, "--nprobe") == 0) num = &a->nprobe;
        else if (strcmp(s, "--snapshot") == 0) {
            num = &a->snapshot;
            lo = INT64_MIN;
            hi = INT64_MAX;
            a->has_snapshot = true;
        } else if (strcmp(s, "--as-of") == 0) {
            num = &a->as_of;
            lo = INT64_MIN;
            hi = INT64_MAX;
            a->has_as_of = true;
        } else if (s[0] == '-' && s[1] == '-') {
            return cli_usage_error("table search ", "unknown option '%s'", s);
        } else if (!a->table) {
            a->table = s;
            continue;
        } else {
            return cli_usage_error("table search ", "unexpected argument '%s'", s);
        }
        if (i + 1 >= argc)
            return cli_usage_error("table search ", "option %s needs a value", s);
        if (str) {
            *str = argv[++i];
        } else {
            int rc = parse_num(s, argv[++i], lo, hi, num);
            if (rc)
                return rc;
        }
    }
    if (!a->table)
        return cli_usage_error("table search ", "missing TABLE");
    if (!a->column || !a->query || a->k <= 0)
        return cli_usage_error("table search ", "--column, --query and --k are required");
    return 0;
}

/* Parses "[1, 2.5]" or "1,2.5" (whitespace allowed) into *out (hs_malloc'd). */
static hs_status parse_query(const char *text, float **out, int *dim, hs_error *err)
{
    *out = NULL;
    *dim = 0;
    size_t cap = 16, n = 0;
    float *v = hs_malloc(cap * sizeof *v);
    if (!v)
        return hs_err_nomem(err, cap * sizeof *v);
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    bool bracket = *p == '[';
    if (bracket)
        p++;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (bracket && *p == ']' && n == 0) {
            p++;
            break;
        }
        char *end;
        errno = 0;
        double x = hs_strtod(p, &end);
        if (end == p || errno == ERANGE || !isfinite(x) || fabs(x) > 3.4e38) {
            hs_free(v);
            return hs_err_set(err, HS_INVALID, "--query: element %zu is not a finite number "
                              "(at \"%.20s\")", n, p);
        }
        if (n == cap) {
            float *nv = hs_realloc(v, 2 * cap * sizeof *v);
            if (!nv) {
                hs_free(v);
                return hs_err_nomem(err, 2 * cap * sizeof *v);
            }
            v = nv;
            cap *= 2;
        }
        v[n++] = (float)x;
        p = end;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p == ',') {
            p++;
            continue;
        }
        if (bracket && *p == ']') {
            p++;
            break;
        }
        if (!bracket && *p == '\0')
            break;
        hs_free(v);
        return hs_err_set(err, HS_INVALID, "--query: expected ',' or '%s' after element %zu, "
                          "got \"%.20s\"", bracket ? "]" : "end", n - 1, p);
    }
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p || n == 0 || n > (1u << 20)) {
        hs_free(v);
        return hs_err_set(err, HS_INVALID, "--query: %s", n == 0 ? "no numbers"
                          : *p ? "trailing text after the vector" : "vector too long");
    }
    *out = v;
    *dim = (int)n;
    return HS_OK;
}

static hs_status read_query(const char *arg, float **out, int *dim, hs_error *err)
{
    if (arg[0] != '@')
        return parse_query(arg, out, dim, err);
    hs_buf b = {0};
    hs_status st = hs_local_read_all(arg + 1, &b, err);
    if (st == HS_OK)
        st = hs_buf_append_byte(&b, 0) == HS_OK ? parse_query((const char *)b.data, out, dim, err)
                                                 : hs_err_nomem(err, b.len);
    hs_buf_free(&b);
    return st;
}

static int print_stream(struct ArrowArrayStream *stream)
{
    hs_error err = {0};
    struct ArrowSchema as;
    hs_field f = {0};
    if (stream->get_schema(stream, &as) != 0)
        return cli_fail("%s", "search: no schema");
    hs_status st = hs_arrow_import_schema(&as, &f, &err);
    as.release(&as);
    hs_buf out = {0};
    while (st == HS_OK) {
        struct ArrowArray arr;
        if (stream->get_next(stream, &arr) != 0) {
            st = hs_err_set(&err, HS_IO, "%s", stream->get_last_error(stream));
            break;
        }
        if (!arr.release)
            break;
        hs_batch *b = NULL;
        st = hs_arrow_import_batch(&arr, &f, &b, &err);
        if (st != HS_OK)
            break;
        if (hs_batch_write_jsonl(b, 0, b->n_rows, &out) != HS_OK)
            st = hs_err_nomem(&err, out.len);
        hs_batch_free(b);
        if (st == HS_OK && cli_flush(&out, 1u << 20) != HS_OK)
            st = hs_err_set(&err, HS_IO, "writing to stdout failed");
    }
    if (st == HS_OK && cli_flush(&out, 0) != HS_OK)
        st = hs_err_set(&err, HS_IO, "writing to stdout failed");
    hs_buf_free(&out);
    hs_field_clear(&f);
    return st == HS_OK ? 0 : cli_fail_err(st, &err);
}

int cmd_table_search(int argc, char **argv)
{
    for (int i = 2; i < argc; i++)
        if (cli_is_help(argv[i])) {
            fputs(search_usage, stdout);
            return 0;
        }
    sargs a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc;
    hs_error err = {0};
    float *q = NULL;
    int dim = 0;
    hs_status st = read_query(a.query, &q, &dim, &err);
    if (st != HS_OK)
        return cli_usage_error("table search ", "%s", err.msg);
    char *cols_buf = NULL;
    const char *cols[MAX_COLS];
    hs_scan_options o = {.filter = a.filter, .ref = a.ref};
    o.use_snapshot_id = a.has_snapshot;
    o.snapshot_id = a.snapshot;
    o.use_as_of = a.has_as_of;
    o.as_of_ms = a.as_of;
    if (a.columns) {
        cols_buf = hs_strdup(a.columns);
        int n = 0;
        for (char *p = cols_buf ? strtok(cols_buf, ",") : NULL; p && n < MAX_COLS;
             p = strtok(NULL, ","))
            cols[n++] = p;
        o.columns = cols;
        o.n_columns = n;
    }
    hs_search_options so = {.column = a.column, .query = q, .dim = dim, .k = (int)a.k,
                            .metric = a.metric, .ef_search = (int)a.ef,
                            .nprobe = (int)a.nprobe, .distance_column = a.dist};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    st = a.sql ? hs_catalog_open_sql(a.sql, a.catalog_name, a.warehouse, &cat, &err)
               : hs_catalog_open_path(NULL, &cat, &err);
    if (st == HS_OK)
        st = hs_table_open(cat, a.table, &t, &err);
    struct ArrowArrayStream stream = {0};
    if (st == HS_OK)
        st = hs_table_search(t, &o, &so, &stream, &err);
    rc = st == HS_OK ? print_stream(&stream) : cli_fail_err(st, &err);
    if (stream.release)
        stream.release(&stream);
    hs_table_close(t);
    hs_catalog_close(cat);
    hs_free(cols_buf);
    hs_free(q);
    return rc;
}

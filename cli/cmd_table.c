/*
 * cli/cmd_table.c - `hyperstream table <tool>`: Iceberg tables from the
 * command line, over the public API (hyperstream/table.h).
 *
 *   tool        does                                      API
 *   ----------  ----------------------------------------  ------------------------------
 *   create      new table from a schema or a sample file  hs_table_create
 *   append      Parquet / JSON Lines / CSV files          hs_table_append
 *   scan        rows as JSON Lines (as `parquet cat`)     hs_table_scan
 *   files       the planned data files, JSON              hs_scan_plan + hs_scan_files_json
 *   snapshots   snapshots with summaries, JSON            hs_table_snapshots
 *   history     snapshot log, JSON                        hs_table_history
 *   rollback    make an ancestor snapshot current         hs_table_rollback_to_snapshot
 *   tag         create a tag                              hs_table_create_tag
 *   schema      print / evolve the schema                 hs_table_metadata_json / update_schema
 *   spec        replace the partition spec                hs_table_update_spec
 *   sort        replace the sort order                    hs_table_replace_sort_order
 *   properties  print / set / remove properties           hs_table_properties / set / remove
 *   upgrade     raise the format version                  hs_table_upgrade_format_version
 *   delete      delete rows matching a filter             hs_table_delete
 *   overwrite   replace rows matching a filter            hs_table_overwrite
 *   explain     run a scan, report pruning and index use  hs_table_explain
 *   index       add | drop | list | orphans | refresh:    hs_table_add_index / drop_index /
 *               sidecar indexes (hyperstream/index.h)     list_indexes / remove_orphan_indexes /
 *                                                         refresh_indexes
 *   expire      expire snapshots, delete their files      hs_table_expire_snapshots
 *   remove-orphans  delete unreferenced files             hs_table_remove_orphan_files
 *   rewrite-manifests  merge small manifests              hs_table_rewrite_manifests
 *   rewrite-position-deletes  merge position delete       hs_table_rewrite_position_delete_files
 *               files, drop dangling deletes (v3: fold
 *               them into deletion vectors)
 *   compact     bin-pack small data files, apply deletes  hs_table_compact
 *   cherrypick  apply a snapshot onto main                hs_table_cherrypick_snapshot
 *   ingest      JSON Lines on stdin through the table's    hs_stream_open / write / close
 *               append stream (write-ahead log); one
 *               acknowledgement line per record
 *   register    point a SQL or REST catalog's name at an  hs_catalog_register_table
 *               existing metadata file
 *   views       the views of a namespace, JSON            hs_catalog_list_views
 *
 * TABLE is a directory (a path table) unless --sql FILE names a SQLite
 * catalog (pyiceberg SqlCatalog layout) or --catalog URI any catalog
 * (hs_catalog_open_uri: sqlite:, http(s):// REST, a directory), with
 * --catalog-option K=V for its options (token, credential, warehouse, ...),
 * where TABLE is "namespace.name".
 */
#include "cli.h"

#include <unistd.h>

typedef struct bar_state { bool shown, ended; int64_t total; char what[32]; } bar_state;
static int progress_bar(void *ctx, const char *what, int64_t done, int64_t total);

#include "base/mem.h"
#include "base/numfmt.h"
#include "columnar/arrow_c.h"
#include "columnar/ingest.h"
#include "columnar/jsonl.h"
#include "hyperstream/index.h"
#include "hyperstream/parquet.h"
#include "hyperstream/stream.h"
#include "hyperstream/table.h"
#include "io/io.h"
#include "expr/pred.h"

#include <jansson.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_AT (1u << 20)
#define MAX_LIST 64

static const char table_usage[] =
    "Usage: hyperstream table <tool> TABLE [options]\n"
    "\n"
    "TABLE is a table directory, or \"namespace.name\" with --sql.\n"
    "\n"
    "Tools:\n"
    "  create TABLE (--schema FILE.json | --like DATA_FILE) [--partition SPEC]\n"
    "               [--sort ORDER] [--format-version 2|3] [--property K=V]...\n"
    "  append TABLE FILE... [--format parquet|jsonl|csv]\n"
    "  scan TABLE [--snapshot ID | --as-of TIME | --ref NAME] [--columns a,b]\n"
    "             [--filter EXPR] [--limit N] [--row-lineage] [--stats]\n"
    "  explain TABLE [scan options]        run the scan; JSON report of pruning and index use\n"
    "  index add TABLE COLUMN [--kind inverted|range|auto|hnsw|hnsw_tq8|hnsw_tq4|hnsw_pq|ivf_hnsw]\n"
    "            [--params JSON] [--threads N]\n"
    "  search TABLE --column C --query '[..]' --k N [--metric l2|cosine|ip] [--filter EXPR]\n"
    "             [--columns a,b] [--ef N]   nearest rows (see hyperstream table search --help)\n"
    "  index drop TABLE COLUMN [--kind K]\n"
    "  index list TABLE\n"
    "  index orphans TABLE [--older-than-ms MS]   delete unreferenced sidecar files\n"
    "  index refresh TABLE [--threads N]   index files other engines added since add_index\n"
    "  files TABLE [--filter EXPR] [--snapshot ID]\n"
    "  snapshots TABLE | history TABLE | refs TABLE\n"
    "  rollback TABLE SNAPSHOT_ID\n"
    "  tag TABLE NAME [SNAPSHOT_ID]\n"
    "  schema TABLE [--update CHANGES]      CHANGES: JSON text or @file\n"
    "  spec TABLE SPEC | sort TABLE ORDER\n"
    "  properties TABLE [--set K=V]... [--remove K]...\n"
    "  upgrade TABLE [--format-version 3]\n"
    "  delete TABLE --filter EXPR\n"
    "  overwrite TABLE FILE --filter EXPR\n"
    "Maintenance (JSON result on stdout; --dry-run lists without changing anything):\n"
    "  expire TABLE [--older-than TIME] [--retain-last N] [--snapshot ID] [--keep-files]\n"
    "  remove-orphans TABLE [--older-than TIME]   default: files older than 3 days\n"
    "  rewrite-manifests TABLE [--target-size BYTES]\n"
    "  rewrite-position-deletes TABLE [--target-size BYTES] [--min-files N] [--all]\n"
    "          merge each partition's position delete files (at least N, default 2, or\n"
    "          every partition's with --all) and drop deletes of data files no longer\n"
    "          live; on v3 tables fold them into deletion vectors\n"
    "  compact TABLE [--target-size BYTES] [--min-files N] [--filter EXPR] [--zorder a,b]\n"
    "          [--delete-file-threshold N] [--delete-ratio-threshold R] [--size-tiered]\n"
    "          [--partial-progress [--max-commits N]]\n"
    "          files with deletes are rewritten whatever their size when they have N\n"
    "          delete files or R (0 < R <= 1) of their rows deleted (Iceberg's\n"
    "          rewrite_data_files options; defaults: the table properties\n"
    "          hyperstream.compact.delete-*, else 2^31-1 and 0.3); --size-tiered\n"
    "          leaves a small file bigger than the partition's other small files\n"
    "          together and counts files of 3/4 of the target as full-size (what\n"
    "          stream maintenance does); --partial-progress commits file groups as\n"
    "          they finish, in at most N snapshots (default 10), so a failure or\n"
    "          cancel keeps the groups committed before it\n"
    "  cherrypick TABLE SNAPSHOT_ID\n"
    "Streaming ingest:\n"
    "  ingest TABLE [--batch-rows N] [--fsync batch|interval|none] [--wal-dir DIR]\n"
    "         JSON Lines on stdin -> the table's write-ahead log; prints one line\n"
    "         {\"seq\":S,\"rows\":R,\"acked_rows\":T} per durable record (a record is\n"
    "         N lines, default 1000, or fewer when stdin has nothing more yet); at\n"
    "         EOF flushes and prints {\"acked_rows\":T,\"snapshot_id\":ID}.  Empty\n"
    "         stdin only recovers a crashed stream's rows (docs/streaming.md); --wal-dir:\n"
    "         a local directory for the log (default <table>/wal; s3:// tables: the\n"
    "         user's cache, ~/.cache/hyperstream/wal/...)\n"
    "\n"
    "Catalog options (any tool):\n"
    "  --sql FILE              SQLite catalog (pyiceberg SqlCatalog / JDBC layout)\n"
    "  --catalog-name NAME     catalog_name in the SQLite file (default \"default\")\n"
    "  --warehouse DIR         where new tables of a SQL catalog go\n"
    "  --catalog URI           any catalog: sqlite:///f.db, http(s)://host:port (Iceberg\n"
    "                          REST), a directory (docs/catalogs.md)\n"
    "  --catalog-option K=V    an option of --catalog (token, credential, warehouse,\n"
    "                          prefix, header.NAME, s3.*); repeatable\n"
    "Catalog tools (need --sql or --catalog):\n"
    "  register TABLE METADATA_LOCATION [--overwrite]   point TABLE at an existing\n"
    "          metadata file (Iceberg's registerTable; nothing is copied)\n"
    "  views NAMESPACE         the namespace's views, JSON array\n"
    "\n"
    "SPEC: \"bucket(16, id), day(ts), truncate(4, name), category\"\n"
    "ORDER: \"id DESC NULLS LAST, ts\"\n"
    "EXPR: \"id > 5 AND (cat = 'a' OR cat IN ('b', 'c')) AND v IS NOT NULL\"\n"
    "      (SQL WHERE syntax: BETWEEN, LIKE, arithmetic, functions, ...)\n"
    "TIME: milliseconds since the epoch, or 2024-01-02T03:04:05[.fff][Z]\n"
    "\n"
    "Exit status: 0 success, 1 failure, 2 usage error.\n";

typedef struct targs {
    const char *tool;
    const char *table;
    const char *pos[MAX_LIST];   /* further positional arguments */
    int n_pos;
    const char *sql, *catalog_name, *warehouse;
    const char *catalog;                        /* --catalog URI */
    const char *catalog_opts[MAX_LIST];         /* --catalog-option K=V */
    int n_catalog_opts;
    int overwrite;                              /* register --overwrite */
    const char *schema, *like, *partition, *sort, *format, *filter, *columns, *ref, *update;
    const char *as_of;
    const char *snapshot;
    const char *kind, *params;      /* index add / drop */
    int threads;                    /* index add */
    int64_t older_than_ms;          /* index orphans */
    int stats;                      /* scan: index counters on stderr */
    const char *set[MAX_LIST], *remove[MAX_LIST];
    int n_set, n_remove;
    const char *props[MAX_LIST];
    int n_props;
    int format_version;
    int64_t limit;
    int row_lineage;
    const char *older_than;         /* maintenance */
    int64_t retain_last, target_size, min_files;
    int dry_run, keep_files;
    const char *fsync, *batch_rows;  /* ingest */
    const char *wal_dir;             /* ingest --wal-dir */
    const char *zorder;             /* compact */
    int64_t delete_files;           /* compact: --delete-file-threshold */
    double delete_ratio;            /* compact: --delete-ratio-threshold */
    int size_tiered;
    int all;                        /* rewrite-position-deletes --all */
    int partial_progress;           /* compact */
    int64_t max_commits;
} targs;

static int parse_args(int argc, char **argv, targs *a)
{
    memset(a, 0, sizeof *a);
    a->limit = -1;
    a->tool = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i];
#define VAL(opt, field)                                                          \
    if (strcmp(s, opt) == 0) {                                                   \
        if (i + 1 >= argc)                                                       \
            return cli_usage_error("table ", "option %s needs a value", opt);    \
        a->field = argv[++i];                                                    \
        continue;                                                                \
    }
        VAL("--sql", sql)
        VAL("--catalog-name", catalog_name)
        VAL("--catalog", catalog)
        VAL("--warehouse", warehouse)
        VAL("--schema", schema)
        VAL("--like", like)
        VAL("--partition", partition)
        VAL("--sort", sort)
        VAL("--format", format)
        VAL("--filter", filter)
        VAL("--columns", columns)
        VAL("--ref", ref)
        VAL("--update", update)
        VAL("--as-of", as_of)
        VAL("--snapshot", snapshot)
        VAL("--kind", kind)
        VAL("--params", params)
        VAL("--older-than", older_than)
        VAL("--fsync", fsync)
        VAL("--batch-rows", batch_rows)
        VAL("--wal-dir", wal_dir)
        VAL("--zorder", zorder)
#undef VAL
        if (strcmp(s, "--retain-last") == 0 || strcmp(s, "--target-size") == 0 ||
            strcmp(s, "--min-files") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 0 || argv[i][0] == '\0' || v > (1LL << 50))
                return cli_usage_error("table ", "option %s needs a number, got '%s'", s, argv[i]);
            *(s[2] == 'r' ? &a->retain_last : s[2] == 't' ? &a->target_size : &a->min_files) = v;
            continue;
        }
        if (strcmp(s, "--delete-file-threshold") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 1 || argv[i][0] == '\0' || v > INT32_MAX)
                return cli_usage_error("table ", "option %s needs a number from 1 to %d, got "
                                       "'%s'", s, INT32_MAX, argv[i]);
            a->delete_files = v;
            continue;
        }
        if (strcmp(s, "--delete-ratio-threshold") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            char *end;
            double v = hs_strtod(argv[++i], &end);
            if (*end || argv[i][0] == '\0' || !(v > 0 && v <= 1))
                return cli_usage_error("table ", "option %s needs a fraction in (0, 1], got "
                                       "'%s'", s, argv[i]);
            a->delete_ratio = v;
            continue;
        }
        if (strcmp(s, "--size-tiered") == 0) {
            a->size_tiered = 1;
            continue;
        }
        if (strcmp(s, "--all") == 0) {
            a->all = 1;
            continue;
        }
        if (strcmp(s, "--partial-progress") == 0) {
            a->partial_progress = 1;
            continue;
        }
        if (strcmp(s, "--max-commits") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 1 || argv[i][0] == '\0' || v > 1000000)
                return cli_usage_error("table ", "option %s needs a number from 1 to 1000000, "
                                       "got '%s'", s, argv[i]);
            a->max_commits = v;
            continue;
        }
        if (strcmp(s, "--dry-run") == 0 || strcmp(s, "--keep-files") == 0) {
            *(s[2] == 'd' ? &a->dry_run : &a->keep_files) = 1;
            continue;
        }
        if (strcmp(s, "--threads") == 0 || strcmp(s, "--older-than-ms") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 0 || argv[i][0] == '\0')
                return cli_usage_error("table ", "option %s needs a number, got '%s'", s, argv[i]);
            if (s[2] == 't')
                a->threads = v > 1024 ? 1024 : (int)v;
            else
                a->older_than_ms = v;
            continue;
        }
        if (strcmp(s, "--stats") == 0) {
            a->stats = 1;
            continue;
        }
        if (strcmp(s, "--format-version") == 0 || strcmp(s, "--limit") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 0)
                return cli_usage_error("table ", "option %s needs a number, got '%s'", s, argv[i]);
            if (s[2] == 'f')
                a->format_version = (int)v;
            else
                a->limit = v;
            continue;
        }
        if (strcmp(s, "--set") == 0 || strcmp(s, "--remove") == 0 || strcmp(s, "--property") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            const char **arr = s[2] == 's' ? a->set : s[2] == 'r' ? a->remove : a->props;
            int *n = s[2] == 's' ? &a->n_set : s[2] == 'r' ? &a->n_remove : &a->n_props;
            if (*n >= MAX_LIST)
                return cli_usage_error("table ", "too many %s options", s);
            arr[(*n)++] = argv[++i];
            continue;
        }
        if (strcmp(s, "--catalog-option") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("table ", "option %s needs a value", s);
            if (!strchr(argv[i + 1], '='))
                return cli_usage_error("table ", "--catalog-option needs K=V, got '%s'",
                                       argv[i + 1]);
            if (a->n_catalog_opts >= MAX_LIST)
                return cli_usage_error("table ", "too many %s options", s);
            a->catalog_opts[a->n_catalog_opts++] = argv[++i];
            continue;
        }
        if (strcmp(s, "--overwrite") == 0) {
            a->overwrite = 1;
            continue;
        }
        if (strcmp(s, "--row-lineage") == 0) {
            a->row_lineage = 1;
            continue;
        }
        if (s[0] == '-' && s[1] == '-')
            return cli_usage_error("table ", "unknown option '%s'", s);
        if (!a->table)
            a->table = s;
        else if (a->n_pos < MAX_LIST)
            a->pos[a->n_pos++] = s;
        else
            return cli_usage_error("table ", "too many arguments");
    }
    if (!a->table)
        return cli_usage_error("table ", "%s: missing TABLE", a->tool);
    return 0;
}

static hs_status open_catalog(const targs *a, hs_catalog **cat, hs_error *err)
{
    if (a->sql && a->catalog)
        return hs_err_set(err, HS_INVALID, "--sql and --catalog exclude each other");
    if (a->sql)
        return hs_catalog_open_sql(a->sql, a->catalog_name, a->warehouse, cat, err);
    if (!a->catalog)
        return hs_catalog_open_path(NULL, cat, err);
    json_t *o = json_object();
    for (int i = 0; o && i < a->n_catalog_opts; i++) {
        const char *kv = a->catalog_opts[i], *eq = strchr(kv, '=');
        char *k = hs_strndup(kv, (size_t)(eq - kv));
        if (!k || json_object_set_new(o, k, json_string(eq + 1)) != 0) {
            hs_free(k);
            json_decref(o);
            return hs_err_set(err, HS_INVALID, "--catalog-option %s: not UTF-8 text", kv);
        }
        hs_free(k);
    }
    if (o && a->catalog_name && !json_object_get(o, "name"))
        json_object_set_new(o, "name", json_string(a->catalog_name));
    if (o && a->warehouse && !json_object_get(o, "warehouse"))
        json_object_set_new(o, "warehouse", json_string(a->warehouse));
    char *text = o ? hs_json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text)
        return hs_err_nomem(err, 256);
    hs_status st = hs_catalog_open_uri(a->catalog, text, cat, err);
    free(text);
    return st;
}

static int print_json(hs_status st, char *s, const hs_error *err);

/* register / views: catalog operations, no table handle. */
static int tool_catalog(const targs *a, hs_catalog *cat)
{
    hs_error err = {0};
    hs_status st;
    if (!a->sql && !a->catalog)
        return cli_usage_error("table ", "%s needs --sql FILE or --catalog URI", a->tool);
    if (strcmp(a->tool, "register") == 0) {
        if (a->n_pos != 1)
            return cli_usage_error("table ", "register needs TABLE METADATA_LOCATION");
        st = hs_catalog_register_table(cat, a->table, a->pos[0], a->overwrite, &err);
        if (st != HS_OK)
            return cli_fail_err(st, &err);
        printf("{\"registered\":\"%s\"}\n", a->table);
        return 0;
    }
    if (a->n_pos != 0)
        return cli_usage_error("table ", "views needs NAMESPACE only");
    char *s = NULL;
    st = hs_catalog_list_views(cat, a->table, &s, &err);
    return print_json(st, s, &err);
}

/* ---- input files as streams ---- */

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

typedef struct ingest_src {
    hs_file *f;
    hs_ingest *ig;
} ingest_src;

static hs_status ingest_next(void *ctx, hs_batch **out, hs_error *err)
{
    ingest_src *s = ctx;
    return hs_ingest_next(s->ig, out, err);
}

static void ingest_close(void *ctx)
{
    ingest_src *s = ctx;
    hs_ingest_close(s->ig);
    hs_file_close(s->f);
    hs_free(s);
}

/* Opens a data file as a stream; `schema` (may be NULL) types JSON/CSV. */
static hs_status open_input(const char *path, const char *format, const hs_field *schema,
                            struct ArrowArrayStream *out, hs_error *err)
{
    bool parquet = format ? strcmp(format, "parquet") == 0 : ends_with(path, ".parquet");
    if (parquet)
        return hs_parquet_read(path, NULL, 0, 0, out, err);
    bool csv = format ? strcmp(format, "csv") == 0 : ends_with(path, ".csv");
    if (format && !csv && strcmp(format, "jsonl") != 0)
        return hs_err_set(err, HS_INVALID, "unknown --format '%s' (parquet, jsonl, csv)", format);
    ingest_src *s = hs_calloc(1, sizeof *s);
    if (!s)
        return hs_err_nomem(err, sizeof *s);
    hs_status st = hs_local_open(path, &s->f, err);
    hs_ingest_options o = {.format = csv ? HS_INGEST_CSV : HS_INGEST_JSONL, .schema = schema};
    if (st == HS_OK)
        st = hs_ingest_open(s->f, &o, &s->ig, err);
    hs_batch_source src = {.next = ingest_next, .close = ingest_close, .ctx = s};
    if (st == HS_OK && hs_field_copy(hs_ingest_schema(s->ig), &src.schema) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st != HS_OK) {
        ingest_close(s);
        return st;
    }
    return hs_arrow_export_stream(&src, out, err);
}

/* The table's schema as an hs_field with Arrow types (for typed ingest). */
static hs_status table_field(hs_table *t, hs_field *out, hs_error *err)
{
    struct ArrowSchema as;
    HS_TRY(hs_table_schema(t, &as, err));
    hs_status st = hs_arrow_import_schema(&as, out, err);
    as.release(&as);
    return st;
}

/* ---- tools ---- */

static char *read_text_arg(const char *v, hs_error *err)
{
    if (v[0] != '@')
        return hs_strdup(v);
    hs_buf b = {0};
    if (hs_local_read_all(v + 1, &b, err) != HS_OK || hs_buf_append_byte(&b, 0) != HS_OK) {
        hs_buf_free(&b);
        return NULL;
    }
    size_t n;
    return (char *)hs_buf_detach(&b, &n);
}

static int tool_create(const targs *a, hs_catalog *cat)
{
    hs_error err = {0};
    hs_table_create_options o = {.partition_spec = a->partition, .sort_order = a->sort,
                                 .format_version = a->format_version};
    char *keys[MAX_LIST], *vals[MAX_LIST];
    int n = 0;
    for (int i = 0; i < a->n_props; i++) {
        const char *eq = strchr(a->props[i], '=');
        if (!eq)
            return cli_usage_error("table ", "--property needs K=V, got '%s'", a->props[i]);
        keys[n] = hs_strndup(a->props[i], (size_t)(eq - a->props[i]));
        vals[n] = hs_strdup(eq + 1);
        n++;
    }
    o.property_keys = (const char *const *)keys;
    o.property_values = (const char *const *)vals;
    o.n_properties = n;
    struct ArrowSchema as = {0};
    char *json = NULL;
    hs_status st = HS_OK;
    if (a->schema) {
        hs_buf b = {0};
        st = hs_local_read_all(a->schema, &b, &err);
        if (st == HS_OK && hs_buf_append_byte(&b, 0) == HS_OK) {
            json = (char *)b.data;
            if (strstr(json, "\"type\"") && strstr(json, "\"struct\"")) {
                o.schema_json = json;  /* Iceberg schema JSON */
            } else {
                hs_field f = {0};
                st = hs_schema_parse_json(json, b.len - 1, &f, &err);
                if (st == HS_OK)
                    st = hs_arrow_export_schema(&f, &as, &err);
                hs_field_clear(&f);
                o.arrow_schema = &as;
            }
        } else {
            hs_buf_free(&b);
        }
    } else if (a->like) {
        struct ArrowArrayStream s;
        st = open_input(a->like, a->format, NULL, &s, &err);
        if (st == HS_OK) {
            if (s.get_schema(&s, &as) != 0)
                st = hs_err_set(&err, HS_IO, "%s: %s", a->like, s.get_last_error(&s));
            s.release(&s);
            o.arrow_schema = &as;
        }
    } else {
        return cli_usage_error("table ", "create needs --schema FILE or --like DATA_FILE");
    }
    if (st == HS_OK)
        st = hs_table_create(cat, a->table, &o, NULL, &err);
    if (as.release)
        as.release(&as);
    hs_free(json);
    for (int i = 0; i < n; i++) {
        hs_free(keys[i]);
        hs_free(vals[i]);
    }
    return st == HS_OK ? 0 : cli_fail_err(st, &err);
}

static int print_json(hs_status st, char *s, const hs_error *err)
{
    if (st != HS_OK)
        return cli_fail_err(st, err);
    fputs(s, stdout);
    fputc('\n', stdout);
    hs_string_free(s);
    return 0;
}

static void print_index_stats(const hs_scan *sc)
{
    hs_index_stats x = HS_INDEX_STATS_INIT;
    hs_scan_get_index_stats(sc, &x);
    fprintf(stderr, "{\"files_planned\":%lld,\"files_pruned_by_index\":%lld,"
            "\"files_indexed\":%lld,\"index_lookups\":%lld,\"index_files_skipped\":%lld,"
            "\"row_groups_read\":%lld,\"row_groups_skipped\":%lld,\"pages_decoded\":%lld,"
            "\"pages_skipped\":%lld,\"rows_decoded\":%lld,\"rows_selected_by_index\":%lld,"
            "\"rows_emitted\":%lld}\n",
            (long long)x.files_planned, (long long)x.files_pruned_by_index,
            (long long)x.files_indexed, (long long)x.index_lookups,
            (long long)x.index_files_skipped, (long long)x.row_groups_read,
            (long long)x.row_groups_skipped, (long long)x.pages_decoded,
            (long long)x.pages_skipped, (long long)x.rows_decoded,
            (long long)x.rows_selected_by_index, (long long)x.rows_emitted);
}

/* Scan-like tools: 0 = scan, 1 = files, 2 = explain. */
static int tool_scan(const targs *a, hs_table *t, int mode)
{
    hs_error err = {0};
    hs_scan_options o = {.filter = a->filter, .ref = a->ref, .include_row_lineage = a->row_lineage};
    if (a->snapshot) {
        char *end;
        o.use_snapshot_id = 1;
        o.snapshot_id = strtoll(a->snapshot, &end, 10);
        if (*end)
            return cli_usage_error("table ", "--snapshot needs a snapshot id, got '%s'", a->snapshot);
    }
    if (a->as_of) {
        char *end;
        o.use_as_of = 1;
        o.as_of_ms = strtoll(a->as_of, &end, 10);
        if (*end && !pr_parse_timestamp(a->as_of, strlen(a->as_of), HS_UNIT_MILLI, &o.as_of_ms))
            return cli_usage_error("table ", "--as-of needs milliseconds or a timestamp, got '%s'",
                                   a->as_of);
    }
    char *cols_buf = NULL;
    const char *cols[MAX_LIST];
    if (a->columns) {
        cols_buf = hs_strdup(a->columns);
        int n = 0;
        for (char *p = strtok(cols_buf, ","); p && n < MAX_LIST; p = strtok(NULL, ","))
            cols[n++] = p;
        o.columns = cols;
        o.n_columns = n;
    }
    hs_status st;
    if (mode == 2) {
        char *s = NULL;
        st = hs_table_explain(t, &o, &s, &err);
        hs_free(cols_buf);
        return print_json(st, s, &err);
    }
    hs_scan *sc = NULL;
    st = hs_scan_plan(t, &o, &sc, &err);
    if (st != HS_OK) {
        hs_free(cols_buf);
        return cli_fail_err(st, &err);
    }
    if (mode == 1) {
        char *s = NULL;
        st = hs_scan_files_json(sc, &s, &err);
        hs_scan_free(sc);
        hs_free(cols_buf);
        return print_json(st, s, &err);
    }
    /* the stream owns sc from here; sc stays valid until the stream is released */
    struct ArrowArrayStream stream;
    st = hs_scan_stream(sc, &stream, &err);
    hs_free(cols_buf);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    struct ArrowSchema as;
    hs_field f = {0};
    if (stream.get_schema(&stream, &as) != 0) {
        stream.release(&stream);
        return cli_fail("%s", "scan: no schema");
    }
    st = hs_arrow_import_schema(&as, &f, &err);
    as.release(&as);
    hs_buf out = {0};
    int64_t left = a->limit;
    while (st == HS_OK && left != 0) {
        struct ArrowArray arr;
        if (stream.get_next(&stream, &arr) != 0) {
            st = hs_err_set(&err, HS_IO, "%s", stream.get_last_error(&stream));
            break;
        }
        if (!arr.release)
            break;
        hs_batch *b = NULL;
        st = hs_arrow_import_batch(&arr, &f, &b, &err);
        if (st != HS_OK)
            break;
        int64_t n = b->n_rows;
        if (left >= 0 && n > left)
            n = left;
        if (hs_batch_write_jsonl(b, 0, n, &out) != HS_OK)
            st = hs_err_nomem(&err, out.len);
        if (left >= 0)
            left -= n;
        hs_batch_free(b);
        if (st == HS_OK && cli_flush(&out, FLUSH_AT) != HS_OK)
            st = hs_err_set(&err, HS_IO, "writing to stdout failed");
    }
    if (st == HS_OK && cli_flush(&out, 0) != HS_OK)
        st = hs_err_set(&err, HS_IO, "writing to stdout failed");
    hs_buf_free(&out);
    hs_field_clear(&f);
    if (st == HS_OK && a->stats)
        print_index_stats(sc);
    stream.release(&stream);
    return st == HS_OK ? 0 : cli_fail_err(st, &err);
}

static int tool_append(const targs *a, hs_table *t, bool overwrite)
{
    if (a->n_pos == 0)
        return cli_usage_error("table ", "%s needs at least one input FILE", a->tool);
    if (overwrite && !a->filter)
        return cli_usage_error("table ", "overwrite needs --filter EXPR");
    hs_error err = {0};
    hs_field schema = {0};
    hs_status st = table_field(t, &schema, &err);
    for (int i = 0; i < a->n_pos && st == HS_OK; i++) {
        struct ArrowArrayStream s;
        st = open_input(a->pos[i], a->format, &schema, &s, &err);
        if (st == HS_OK)
            st = overwrite ? hs_table_overwrite(t, &s, a->filter, &err)
                           : hs_table_append(t, &s, &err);
        if (st != HS_OK)
            hs_err_prefix(&err, "%s", a->pos[i]);
    }
    hs_field_clear(&schema);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    printf("{\"snapshot_id\":%lld}\n", (long long)hs_table_current_snapshot_id(t));
    return 0;
}

/* ingest: one record of JSON Lines text (chunk) through the stream. */
static hs_status ingest_chunk(hs_stream *s, const hs_buf *chunk, const hs_field *schema,
                              int64_t *seq, hs_error *err)
{
    ingest_src *src = hs_calloc(1, sizeof *src);
    if (!src)
        return hs_err_nomem(err, sizeof *src);
    hs_status st = hs_mem_open("stdin", chunk->data, chunk->len, false, &src->f, err);
    hs_ingest_options o = {.format = HS_INGEST_JSONL, .schema = schema, .name = "stdin"};
    if (st == HS_OK)
        st = hs_ingest_open(src->f, &o, &src->ig, err);
    hs_batch_source bs = {.next = ingest_next, .close = ingest_close, .ctx = src};
    if (st == HS_OK && hs_field_copy(hs_ingest_schema(src->ig), &bs.schema) != HS_OK)
        st = hs_err_nomem(err, 64);
    if (st != HS_OK) {
        ingest_close(src);
        return st;
    }
    struct ArrowArrayStream in;
    HS_TRY(hs_arrow_export_stream(&bs, &in, err));
    return hs_stream_write(s, &in, seq, err);
}

static bool stdin_has_more(void)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

static int tool_ingest(const targs *a, hs_table *t)
{
    hs_stream_options o = HS_STREAM_OPTIONS_INIT;
    o.wal_dir = a->wal_dir;
    int64_t batch_rows = 1000;
    if (a->batch_rows) {
        char *end;
        batch_rows = strtoll(a->batch_rows, &end, 10);
        if (*end || batch_rows < 1)
            return cli_usage_error("table ", "--batch-rows needs a positive number, got '%s'",
                                   a->batch_rows);
    }
    if (a->fsync) {
        if (strcmp(a->fsync, "batch") == 0)
            o.fsync_policy = HS_WAL_FSYNC_BATCH;
        else if (strcmp(a->fsync, "interval") == 0)
            o.fsync_policy = HS_WAL_FSYNC_INTERVAL;
        else if (strcmp(a->fsync, "none") == 0)
            o.fsync_policy = HS_WAL_FSYNC_NONE;
        else
            return cli_usage_error("table ", "--fsync needs batch, interval or none");
    }
    hs_error err = {0};
    hs_field schema = {0};
    hs_status st = table_field(t, &schema, &err);
    hs_stream *s = NULL;
    if (st == HS_OK)
        st = hs_stream_open(t, &o, &s, &err);
    if (st != HS_OK) {
        hs_field_clear(&schema);
        return cli_fail_err(st, &err);
    }
    hs_buf chunk = {0};
    int64_t lines = 0, acked = 0, line_no = 0;
    char *line = NULL;
    size_t cap = 0;
    for (;;) {
        ssize_t n = getline(&line, &cap, stdin);
        bool eof = n < 0;
        if (!eof) {
            line_no++;
            size_t k = (size_t)n;
            while (k && (line[k - 1] == '\n' || line[k - 1] == '\r' || line[k - 1] == ' '))
                k--;
            if (k) {
                if (hs_buf_append(&chunk, line, k) != HS_OK ||
                    hs_buf_append_byte(&chunk, '\n') != HS_OK) {
                    st = hs_err_nomem(&err, chunk.len);
                    break;
                }
                lines++;
            }
        }
        if (lines && (eof || lines >= batch_rows || !stdin_has_more())) {
            int64_t seq = 0;
            st = ingest_chunk(s, &chunk, &schema, &seq, &err);
            if (st != HS_OK) {
                hs_err_prefix(&err, "stdin lines %lld..%lld", (long long)(line_no - lines + 1),
                              (long long)line_no);
                break;
            }
            acked += lines;
            printf("{\"seq\":%lld,\"rows\":%lld,\"acked_rows\":%lld}\n", (long long)seq,
                   (long long)lines, (long long)acked);
            fflush(stdout);
            hs_buf_reset(&chunk);
            lines = 0;
        }
        if (eof)
            break;
    }
    free(line);
    hs_buf_free(&chunk);
    hs_field_clear(&schema);
    hs_error cerr = {0};
    hs_status cst = hs_stream_close(s, &cerr);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    if (cst != HS_OK)
        return cli_fail_err(cst, &cerr);
    hs_error rerr = {0};
    if (hs_table_refresh(t, &rerr) != HS_OK)
        return cli_fail_err(rerr.code, &rerr);
    printf("{\"acked_rows\":%lld,\"snapshot_id\":%lld}\n", (long long)acked,
           (long long)hs_table_current_snapshot_id(t));
    return 0;
}

static int tool_properties(const targs *a, hs_table *t)
{
    hs_error err = {0};
    hs_status st = HS_OK;
    if (a->n_set) {
        char *keys[MAX_LIST], *vals[MAX_LIST];
        int n = 0;
        for (int i = 0; i < a->n_set; i++) {
            const char *eq = strchr(a->set[i], '=');
            if (!eq) {
                for (int k = 0; k < n; k++) {
                    hs_free(keys[k]);
                    hs_free(vals[k]);
                }
                return cli_usage_error("table ", "--set needs K=V, got '%s'", a->set[i]);
            }
            keys[n] = hs_strndup(a->set[i], (size_t)(eq - a->set[i]));
            vals[n] = hs_strdup(eq + 1);
            n++;
        }
        st = hs_table_set_properties(t, (const char *const *)keys, (const char *const *)vals, n,
                                     &err);
        for (int k = 0; k < n; k++) {
            hs_free(keys[k]);
            hs_free(vals[k]);
        }
    }
    if (st == HS_OK && a->n_remove)
        st = hs_table_remove_properties(t, a->remove, a->n_remove, &err);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    char *s = NULL;
    st = hs_table_properties(t, &s, &err);
    return print_json(st, s, &err);
}

static int tool_schema(const targs *a, hs_table *t)
{
    hs_error err = {0};
    hs_status st = HS_OK;
    if (a->update) {
        char *changes = read_text_arg(a->update, &err);
        if (!changes)
            return cli_fail_err(HS_IO, &err);
        st = hs_table_update_schema(t, changes, &err);
        hs_free(changes);
        if (st != HS_OK)
            return cli_fail_err(st, &err);
    }
    struct ArrowSchema as;
    hs_field f = {0};
    st = hs_table_schema(t, &as, &err);
    if (st == HS_OK) {
        st = hs_arrow_import_schema(&as, &f, &err);
        as.release(&as);
    }
    hs_buf b = {0};
    if (st == HS_OK && hs_field_format(&f, &b) != HS_OK)
        st = hs_err_nomem(&err, 64);
    if (st == HS_OK)
        printf("%s\n", hs_buf_cstr(&b));
    hs_buf_free(&b);
    hs_field_clear(&f);
    return st == HS_OK ? 0 : cli_fail_err(st, &err);
}

/* index add | drop | list | orphans; a->tool is the action. */
static int tool_index(const targs *a, hs_table *t)
{
    hs_error err = {0};
    hs_status st;
    const char *act = a->tool;
    if (strcmp(act, "list") == 0) {
        char *s = NULL;
        st = hs_table_list_indexes(t, &s, &err);
        return print_json(st, s, &err);
    }
    if (strcmp(act, "orphans") == 0) {
        int64_t n = 0;
        st = hs_table_remove_orphan_indexes(t, a->older_than_ms, &n, &err);
        if (st != HS_OK)
            return cli_fail_err(st, &err);
        printf("{\"removed\":%lld}\n", (long long)n);
        return 0;
    }
    if (strcmp(act, "refresh") == 0) {
        hs_index_options o = {.struct_size = sizeof o, .n_threads = a->threads};
        bar_state bar = {0};
        if (isatty(STDERR_FILENO)) {
            o.progress = progress_bar;
            o.progress_ctx = &bar;
        }
        int64_t n = 0;
        st = hs_table_refresh_indexes(t, &o, &n, &err);
        if (bar.shown && !bar.ended && st != HS_OK)
            fputc('\n', stderr);
        if (st != HS_OK)
            return cli_fail_err(st, &err);
        printf("{\"entries_added\":%lld}\n", (long long)n);
        return 0;
    }
    if (a->n_pos != 1)
        return cli_usage_error("table ", "index %s needs TABLE COLUMN", act);
    if (strcmp(act, "add") == 0) {
        hs_index_options o = {.kind = a->kind, .params_json = a->params,
                              .n_threads = a->threads};
        bar_state bar = {0};
        if (isatty(STDERR_FILENO)) {
            o.progress = progress_bar;
            o.progress_ctx = &bar;
        }
        st = hs_table_add_index(t, a->pos[0], &o, &err);
        if (bar.shown && !bar.ended) {
            if (st == HS_OK)
                progress_bar(&bar, bar.what, bar.total, bar.total);
            else
                fputc('\n', stderr);
        }
    } else {
        st = hs_table_drop_index(t, a->pos[0], a->kind, &err);
    }
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    char *s = NULL;
    st = hs_table_list_indexes(t, &s, &err);
    return print_json(st, s, &err);
}

static int parse_id(const char *s, int64_t *out)
{
    char *end;
    *out = strtoll(s, &end, 10);
    return *s && !*end;
}

/* A progress bar on stderr for index builds (only on a terminal). */
static int progress_bar(void *ctx, const char *what, int64_t done, int64_t total)
{
    bar_state *b = ctx;
    b->shown = true;
    b->total = total;
    b->ended = total > 0 && done >= total;
    snprintf(b->what, sizeof b->what, "%s", what ? what : "");
    int width = 40;
    int fill = total > 0 ? (int)(done * width / total) : 0;
    if (fill > width)
        fill = width;
    fprintf(stderr, "\r%-14.14s [%.*s%*s] %lld/%lld", what ? what : "", fill,
            "########################################", width - fill, "", (long long)done,
            (long long)total);
    if (total > 0 && done >= total)
        fputc('\n', stderr);
    fflush(stderr);
    return 0;
}


/* expire, remove-orphans, rewrite-manifests, rewrite-position-deletes, compact */
static int tool_maint(const targs *a, hs_table *t)
{
    hs_error err = {0};
    hs_status st;
    char *out = NULL;
    int64_t older = 0;
    if (a->older_than) {
        char *end;
        older = strtoll(a->older_than, &end, 10);
        if ((*end || !*a->older_than) &&
            !pr_parse_timestamp(a->older_than, strlen(a->older_than), HS_UNIT_MILLI, &older))
            return cli_usage_error("table ", "--older-than needs milliseconds or a timestamp, "
                                   "got '%s'", a->older_than);
    }
    if (strcmp(a->tool, "expire") == 0) {
        hs_expire_options o = HS_EXPIRE_OPTIONS_INIT;
        int64_t id = 0;
        if (a->snapshot && !parse_id(a->snapshot, &id))
            return cli_usage_error("table ", "--snapshot needs a snapshot id, got '%s'",
                                   a->snapshot);
        o.use_older_than = a->older_than != NULL;
        o.older_than_ms = older;
        o.retain_last = (int)(a->retain_last > 1000000 ? 1000000 : a->retain_last);
        o.snapshot_ids = a->snapshot ? &id : NULL;
        o.n_snapshot_ids = a->snapshot ? 1 : 0;
        o.dry_run = a->dry_run;
        o.keep_files = a->keep_files;
        st = hs_table_expire_snapshots(t, &o, &out, &err);
    } else if (strcmp(a->tool, "remove-orphans") == 0) {
        hs_orphan_options o = HS_ORPHAN_OPTIONS_INIT;
        o.use_older_than = a->older_than != NULL;
        o.older_than_ms = older;
        o.dry_run = a->dry_run;
        st = hs_table_remove_orphan_files(t, &o, &out, &err);
    } else if (strcmp(a->tool, "rewrite-manifests") == 0) {
        hs_rewrite_manifests_options o = HS_REWRITE_MANIFESTS_OPTIONS_INIT;
        o.target_size_bytes = a->target_size;
        o.dry_run = a->dry_run;
        st = hs_table_rewrite_manifests(t, &o, &out, &err);
    } else if (strcmp(a->tool, "rewrite-position-deletes") == 0) {
        hs_rewrite_deletes_options o = HS_REWRITE_DELETES_OPTIONS_INIT;
        o.target_file_size_bytes = a->target_size;
        o.min_input_files = (int)(a->min_files > 1000000 ? 1000000 : a->min_files);
        o.rewrite_all = a->all;
        o.dry_run = a->dry_run;
        st = hs_table_rewrite_position_delete_files(t, &o, &out, &err);
    } else {
        hs_compact_options o = HS_COMPACT_OPTIONS_INIT;
        o.target_file_size_bytes = a->target_size;
        o.min_input_files = (int)(a->min_files > 1000000 ? 1000000 : a->min_files);
        o.filter = a->filter;
        o.zorder_by = a->zorder;
        o.delete_file_threshold = (int)a->delete_files;
        o.delete_ratio_threshold = a->delete_ratio;
        o.size_tiered = a->size_tiered;
        o.partial_progress = a->partial_progress;
        o.max_commits = (int)a->max_commits;
        o.dry_run = a->dry_run;
        bar_state bar = {0};
        if (isatty(STDERR_FILENO)) {
            o.progress = progress_bar;
            o.progress_ctx = &bar;
        }
        st = hs_table_compact(t, &o, &out, &err);
        if (bar.shown && !bar.ended)
            fputc('\n', stderr);
    }
    return print_json(st, out, &err);
}

int cmd_table(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "search") == 0)
        return cmd_table_search(argc, argv);
    if (argc < 2 || cli_is_help(argv[1])) {
        fputs(table_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : 0;
    }
    static const char *const tools[] = {"create", "append", "scan", "files", "snapshots", "history",
                                        "refs", "rollback", "tag", "schema", "spec", "sort",
                                        "properties", "upgrade", "delete", "overwrite", "explain",
                                        "index", "expire", "remove-orphans", "rewrite-manifests",
                                        "rewrite-position-deletes", "compact", "cherrypick",
                                        "ingest", "register", "views"};
    bool known = false;
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        known |= strcmp(argv[1], tools[i]) == 0;
    if (!known)
        return cli_usage_error("table ", "unknown tool '%s'", argv[1]);
    for (int i = 2; i < argc; i++)
        if (cli_is_help(argv[i])) {
            fputs(table_usage, stdout);
            return 0;
        }
    targs a;
    bool index = strcmp(argv[1], "index") == 0;
    if (index) {
        static const char *const acts[] = {"add", "drop", "list", "orphans", "refresh"};
        bool ok = false;
        for (size_t i = 0; argc > 2 && i < sizeof acts / sizeof acts[0]; i++)
            ok |= strcmp(argv[2], acts[i]) == 0;
        if (!ok)
            return cli_usage_error("table ", "index needs add, drop, list, orphans or refresh");
    }
    int rc = index ? parse_args(argc - 1, argv + 1, &a) : parse_args(argc, argv, &a);
    if (rc)
        return rc;
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_status st = open_catalog(&a, &cat, &err);
    if (st != HS_OK)
        return cli_fail_err(st, &err);
    if (strcmp(a.tool, "create") == 0) {
        rc = tool_create(&a, cat);
        hs_catalog_close(cat);
        return rc;
    }
    if (strcmp(a.tool, "register") == 0 || strcmp(a.tool, "views") == 0) {
        rc = tool_catalog(&a, cat);
        hs_catalog_close(cat);
        return rc;
    }
    hs_table *t = NULL;
    st = hs_table_open(cat, a.table, &t, &err);
    if (st != HS_OK) {
        hs_catalog_close(cat);
        return cli_fail_err(st, &err);
    }
    char *s = NULL;
    int64_t id = -1;
    const char *tool = a.tool;
    if (index)
        rc = tool_index(&a, t);
    else if (strcmp(tool, "append") == 0)
        rc = tool_append(&a, t, false);
    else if (strcmp(tool, "overwrite") == 0)
        rc = tool_append(&a, t, true);
    else if (strcmp(tool, "ingest") == 0)
        rc = tool_ingest(&a, t);
    else if (strcmp(tool, "scan") == 0)
        rc = tool_scan(&a, t, 0);
    else if (strcmp(tool, "files") == 0)
        rc = tool_scan(&a, t, 1);
    else if (strcmp(tool, "explain") == 0)
        rc = tool_scan(&a, t, 2);
    else if (strcmp(tool, "snapshots") == 0) {
        st = hs_table_snapshots(t, &s, &err);
        rc = print_json(st, s, &err);
    }
    else if (strcmp(tool, "history") == 0) {
        st = hs_table_history(t, &s, &err);
        rc = print_json(st, s, &err);
    }
    else if (strcmp(tool, "refs") == 0) {
        st = hs_table_refs(t, &s, &err);
        rc = print_json(st, s, &err);
    }
    else if (strcmp(tool, "expire") == 0 || strcmp(tool, "remove-orphans") == 0 ||
             strcmp(tool, "rewrite-manifests") == 0 ||
             strcmp(tool, "rewrite-position-deletes") == 0 || strcmp(tool, "compact") == 0)
        rc = tool_maint(&a, t);
    else if (strcmp(tool, "cherrypick") == 0) {
        if (a.n_pos != 1 || !parse_id(a.pos[0], &id))
            rc = cli_usage_error("table ", "cherrypick needs SNAPSHOT_ID");
        else if ((st = hs_table_cherrypick_snapshot(t, id, &err)) != HS_OK)
            rc = cli_fail_err(st, &err);
    }
    else if (strcmp(tool, "rollback") == 0) {
        if (a.n_pos != 1 || !parse_id(a.pos[0], &id))
            rc = cli_usage_error("table ", "rollback needs SNAPSHOT_ID");
        else if ((st = hs_table_rollback_to_snapshot(t, id, &err)) != HS_OK)
            rc = cli_fail_err(st, &err);
    } else if (strcmp(tool, "tag") == 0) {
        if (a.n_pos < 1 || (a.n_pos == 2 && !parse_id(a.pos[1], &id)) || a.n_pos > 2)
            rc = cli_usage_error("table ", "tag needs NAME [SNAPSHOT_ID]");
        else if ((st = hs_table_create_tag(t, a.pos[0], id, &err)) != HS_OK)
            rc = cli_fail_err(st, &err);
    } else if (strcmp(tool, "schema") == 0)
        rc = tool_schema(&a, t);
    else if (strcmp(tool, "spec") == 0 || strcmp(tool, "sort") == 0) {
        if (a.n_pos != 1)
            rc = cli_usage_error("table ", "%s needs one argument", tool);
        else if ((st = tool[1] == 'p' ? hs_table_update_spec(t, a.pos[0], &err)
                                      : hs_table_replace_sort_order(t, a.pos[0], &err)) != HS_OK)
            rc = cli_fail_err(st, &err);
    } else if (strcmp(tool, "properties") == 0)
        rc = tool_properties(&a, t);
    else if (strcmp(tool, "upgrade") == 0) {
        if ((st = hs_table_upgrade_format_version(t, a.format_version ? a.format_version : 3,
                                                  &err)) != HS_OK)
            rc = cli_fail_err(st, &err);
    } else if (strcmp(tool, "delete") == 0) {
        int64_t n = 0;
        if (!a.filter)
            rc = cli_usage_error("table ", "delete needs --filter EXPR");
        else if ((st = hs_table_delete(t, a.filter, &n, &err)) != HS_OK)
            rc = cli_fail_err(st, &err);
        else
            printf("{\"deleted\":%lld}\n", (long long)n);
    }
    hs_table_close(t);
    hs_catalog_close(cat);
    return rc;
}

/*
 * tests/c/test_table_faults.c - issue 3 acceptance tests 3, 4 and 5 through
 * the public table API (hyperstream/table.h):
 *
 *   test                      what it checks
 *   ------------------------  ---------------------------------------------------
 *   concurrent_appends_path   4 forked processes x N appends (3 rows each, unique
 *   concurrent_appends_sql    ids) into one table: all 4*N snapshots present, one
 *                             ancestry chain of appends, every row exactly once
 *   overwrite_conflict_*      two forked writers released together overwrite
 *                             from the same base: one wins, the other gets
 *                             HS_CONFLICT naming the concurrent overwrite (or,
 *                             when they happened to serialize, both commit
 *                             validly); the loser's retry then succeeds; a
 *                             stale handle's delete is re-planned, not refused.
 *   crash_*                   cat_set_io_fault(k) for k = 1.. until the operation
 *                             passes without reaching the fault: append,
 *                             overwrite, delete (v2 position deletes, v3 deletion
 *                             vectors), schema change.  After each failure the
 *                             reopened table reads exactly the old or the new
 *                             state (full scans against row sets computed here),
 *                             and a further append succeeds.
 *   crash_*_s3                the crash loops on a table in S3 (a server from
 *                             tests/s3/s3server.py, which ctest starts)
 *   bad_*                     truncated / garbage / missing metadata JSON,
 *                             manifest list and manifest: the error names the
 *                             file and the problem; format-version 4 refused.
 *
 * The expected rows are computed by the test from what it wrote, never read
 * back from our own output.  N (appends per process) is 50 as the issue asks
 * (20 in ASan builds unless HS_FAULTS_APPENDS says otherwise, see
 * n_appends); runtimes are printed.  HS_FAULTS_ONLY=<substring> runs a subset.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#define _DEFAULT_SOURCE 1  /* usleep */
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "columnar/arrow_c.h"
#include "columnar/column.h"
#include "hyperstream/table.h"
#include "io/io.h"

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_PROCS 4
#define ROWS_PER_APPEND 3
#define MAX_APPENDS 200

/* Appends per writer process: 50 as issue 3 asks (4 x 50 = 200 commits).
 * Under AddressSanitizer on the shared 2-core CI machine 200 commits take
 * ~45 s (path) + ~55 s (SQL), so ASan builds default to 20 per process;
 * HS_FAULTS_APPENDS=50 runs the full size there too. */
#if defined(__SANITIZE_ADDRESS__)
#define DEFAULT_APPENDS 20
#else
#define DEFAULT_APPENDS 50
#endif
static int n_appends(void)
{
    const char *e = getenv("HS_FAULTS_APPENDS");
    int n = e ? atoi(e) : DEFAULT_APPENDS;
    return n < 1 ? 1 : n > MAX_APPENDS ? MAX_APPENDS : n;
}

/* ---- input ---- */

/* rows with the given ids: id (long, required), name = "n<id>" (string) */
static hs_batch *make_ids_named(const int64_t *ids, int64_t n, const char *name_col)
{
    hs_field schema, f;
    hs_field_init(&schema, "", HS_TYPE_STRUCT, false);
    hs_field_init(&f, "id", HS_TYPE_INT64, false);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_field_init(&f, name_col, HS_TYPE_STRING, true);
    if (hs_field_add_child(&schema, &f) != HS_OK) return NULL;
    hs_batch *b = NULL;
    hs_status st = hs_batch_create(&schema, n, &b, NULL);
    hs_field_clear(&schema);
    if (st != HS_OK)
        return NULL;
    char buf[32];
    for (int64_t i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof buf, "n%lld", (long long)ids[i]);
        if (hs_col_append_fixed(b->cols[0], &ids[i]) != HS_OK ||
            hs_col_append_bytes(b->cols[1], buf, (size_t)len) != HS_OK) {
            hs_batch_free(b);
            return NULL;
        }
    }
    b->n_rows = n;
    return b;
}

static hs_batch *make_ids(const int64_t *ids, int64_t n)
{
    return make_ids_named(ids, n, "name");
}

static hs_batch *make_range(int64_t start, int64_t n)
{
    int64_t ids[256];
    if (n > 256)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        ids[i] = start + i;
    return make_ids(ids, n);
}

typedef struct one_src { hs_batch *b; } one_src;

static hs_status one_next(void *ctx, hs_batch **out, hs_error *err)
{
    (void)err;
    one_src *s = ctx;
    *out = s->b;
    s->b = NULL;
    return HS_OK;
}

static void one_close(void *ctx)
{
    one_src *s = ctx;
    hs_batch_free(s->b);
    hs_free(s);
}

/* Moves b into a stream (b is freed by the stream, also on failure here). */
static int stream_of(hs_batch *b, struct ArrowArrayStream *out)
{
    if (!b)
        return -1;
    one_src *s = hs_calloc(1, sizeof *s);
    if (!s) {
        hs_batch_free(b);
        return -1;
    }
    s->b = b;
    hs_batch_source src = {.next = one_next, .close = one_close, .ctx = s};
    if (hs_field_copy(&b->schema, &src.schema) != HS_OK) {
        one_close(s);
        return -1;
    }
    return hs_arrow_export_stream(&src, out, NULL) == HS_OK ? 0 : -1;
}

static hs_status append_batch(hs_table *t, hs_batch *b, hs_error *err)
{
    struct ArrowArrayStream s;
    if (stream_of(b, &s) != 0)
        return hs_err_set(err, HS_NOMEM, "building the input stream");
    return hs_table_append(t, &s, err);
}

static hs_status append_range(hs_table *t, int64_t start, int64_t n, hs_error *err)
{
    return append_batch(t, make_range(start, n), err);
}

/* ---- reading ---- */

typedef struct rows {
    int64_t n, cap;
    int64_t *ids;
    int bad_names;          /* rows whose name (or renamed label) is not "n<id>" */
    int n_cols;
    char cols[8][32];
} rows;

static void rows_free(rows *r)
{
    hs_free(r->ids);
    memset(r, 0, sizeof *r);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Full scan of the table's current snapshot into r (ids sorted). */
static hs_status scan_rows(hs_table *t, rows *r, hs_error *err)
{
    memset(r, 0, sizeof *r);
    struct ArrowArrayStream s;
    HS_TRY(hs_table_scan(t, NULL, &s, err));
    struct ArrowSchema sch;
    if (s.get_schema(&s, &sch) != 0) {
        s.release(&s);
        return hs_err_set(err, HS_INTERNAL, "get_schema failed");
    }
    hs_field f = {0};
    hs_status st = hs_arrow_import_schema(&sch, &f, err);
    sch.release(&sch);
    int id_col = -1, name_col = -1;
    r->n_cols = f.n_children;
    for (int i = 0; i < f.n_children && i < 8; i++) {
        snprintf(r->cols[i], sizeof r->cols[i], "%s", f.children[i].name);
        if (strcmp(f.children[i].name, "id") == 0)
            id_col = i;
        if (strcmp(f.children[i].name, "name") == 0 || strcmp(f.children[i].name, "label") == 0)
            name_col = i;
    }
    if (st == HS_OK && id_col < 0)
        st = hs_err_set(err, HS_INTERNAL, "scan has no id column");
    while (st == HS_OK) {
        struct ArrowArray a;
        if (s.get_next(&s, &a) != 0) {
            const char *m = s.get_last_error(&s);
            st = hs_err_set(err, HS_IO, "%s", m ? m : "get_next failed");
            break;
        }
        if (!a.release)
            break;
        hs_batch *b = NULL;
        st = hs_arrow_import_batch(&a, &f, &b, err);
        if (st != HS_OK)
            break;
        for (int64_t i = 0; i < b->n_rows; i++) {
            if (r->n == r->cap) {
                int64_t nc = r->cap ? r->cap * 2 : 256;
                int64_t *p = hs_realloc(r->ids, (size_t)nc * sizeof *p);
                if (!p) {
                    st = hs_err_nomem(err, (size_t)nc * sizeof *p);
                    break;
                }
                r->ids = p;
                r->cap = nc;
            }
            int64_t id = HS_COL_VALUES(b->cols[id_col], int64_t)[i];
            r->ids[r->n++] = id;
            if (name_col >= 0) {
                char want[32];
                int wl = snprintf(want, sizeof want, "n%lld", (long long)id);
                const hs_column *c = b->cols[name_col];
                const int32_t *off = HS_COL_OFFSETS(c);
                size_t len = hs_col_is_valid(c, i) ? (size_t)(off[i + 1] - off[i]) : 0;
                const uint8_t *p = hs_col_is_valid(c, i) ? c->values.data + off[i] : NULL;
                if (!p || len != (size_t)wl || memcmp(p, want, len) != 0)
                    r->bad_names++;
            }
        }
        hs_batch_free(b);
    }
    hs_field_clear(&f);
    s.release(&s);
    if (r->ids)
        qsort(r->ids, (size_t)r->n, sizeof *r->ids, cmp_i64);
    return st;
}

/* r holds exactly the ids in want (any order in want; want is sorted here). */
static bool rows_equal(const rows *r, int64_t *want, int64_t n)
{
    qsort(want, (size_t)n, sizeof *want, cmp_i64);
    if (r->n != n || r->bad_names)
        return false;
    for (int64_t i = 0; i < n; i++)
        if (r->ids[i] != want[i])
            return false;
    return true;
}

/* ---- scratch ---- */

static const char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/faults-%s-%d", hs_test_tmpdir(), name, (int)getpid());
    return buf[k];
}

static hs_status create_table(hs_catalog *cat, const char *name, int fv, bool fast_retry,
                              hs_table **out, hs_error *err)
{
    hs_batch *b = make_range(0, 0);
    struct ArrowSchema as;
    if (!b)
        return hs_err_set(err, HS_NOMEM, "schema batch");
    hs_status st = hs_arrow_export_schema(&b->schema, &as, err);
    hs_batch_free(b);
    HS_TRY(st);
    /* Many writers on 2 cores: allow many quick retries. */
    const char *keys[] = {"commit.retry.num-retries", "commit.retry.min-wait-ms",
                          "commit.retry.max-wait-ms"};
    const char *vals[] = {"1000", "1", "20"};
    hs_table_create_options o = {.arrow_schema = &as, .format_version = fv,
                                 .property_keys = keys, .property_values = vals,
                                 .n_properties = fast_retry ? 3 : 0};
    st = hs_table_create(cat, name, &o, out, err);
    as.release(&as);
    return st;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* 3. concurrency                                                       */

static hs_status open_catalog(bool sql, const char *where, hs_catalog **out, hs_error *err)
{
    if (!sql)
        return hs_catalog_open_path(where, out, err);
    char db[700];
    snprintf(db, sizeof db, "%s/catalog.db", where);
    return hs_catalog_open_sql(db, "default", where, out, err);
}

/* One writer process: its own catalog handle (SQLite connections must not
 * cross fork()), n_appends() appends of ids proc*100000 + i*10 + j. */
static int child_writer(bool sql, const char *where, const char *name, int proc)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    int rc = 0;
    if (open_catalog(sql, where, &cat, &err) != HS_OK || hs_table_open(cat, name, &t, &err) != HS_OK) {
        fprintf(stderr, "writer %d: open: %s\n", proc, err.msg);
        rc = 2;
    }
    for (int i = 0; rc == 0 && i < n_appends(); i++) {
        int64_t ids[ROWS_PER_APPEND];
        for (int j = 0; j < ROWS_PER_APPEND; j++)
            ids[j] = (int64_t)proc * 100000 + i * 10 + j;
        if (append_batch(t, make_ids(ids, ROWS_PER_APPEND), &err) != HS_OK) {
            fprintf(stderr, "writer %d append %d: %s\n", proc, i, err.msg);
            rc = 3;
        }
    }
    hs_table_close(t);
    hs_catalog_close(cat);
    return rc;
}

static void concurrent_appends(bool sql)
{
    double t0 = now_s();
    hs_error err = {0};
    const char *where = tmp_path(sql ? "conc-sql" : "conc-path");
    char wh[600];
    snprintf(wh, sizeof wh, "%s", where);
    mkdir(wh, 0777);
    const char *name = sql ? "ns.events" : "events";
    hs_catalog *cat = NULL;
    CHECK_OK(open_catalog(sql, wh, &cat, &err), &err);
    if (sql)
        CHECK_OK(hs_catalog_create_namespace(cat, "ns", &err), &err);
    hs_table *t = NULL;
    CHECK_OK(create_table(cat, name, 2, true, &t, &err), &err);
    hs_table_close(t);
    t = NULL;
    hs_catalog_close(cat); /* no SQLite connection across fork() */
    cat = NULL;

    fflush(NULL);
    pid_t pids[N_PROCS];
    for (int p = 0; p < N_PROCS; p++) {
        pids[p] = fork();
        if (pids[p] == 0)
            _exit(child_writer(sql, wh, name, p));
    }
    for (int p = 0; p < N_PROCS; p++) {
        int status = 0;
        CHECK(pids[p] > 0 && waitpid(pids[p], &status, 0) == pids[p]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }

    CHECK_OK(open_catalog(sql, wh, &cat, &err), &err);
    CHECK_OK(hs_table_open(cat, name, &t, &err), &err);
    /* every commit is in the history, as one chain of appends */
    int n = hs_snapshot_count(t);
    CHECK(n == N_PROCS * n_appends());
    int64_t total_added = 0, seq_max = 0;
    bool all_append = true;
    for (int i = 0; i < n; i++) {
        hs_snapshot_info si = HS_SNAPSHOT_INFO_INIT;
        if (hs_snapshot_get(t, i, &si, &err) != HS_OK) {
            CHECK(0);
            break;
        }
        all_append &= strcmp(si.operation, "append") == 0;
        total_added += si.added_records;
        if (si.sequence_number > seq_max)
            seq_max = si.sequence_number;
    }
    CHECK(all_append);
    CHECK(total_added == (int64_t)N_PROCS * n_appends() * ROWS_PER_APPEND);
    CHECK(seq_max == N_PROCS * n_appends());
    char *hist = NULL;
    CHECK_OK(hs_table_history(t, &hist, &err), &err);
    int ancestors = 0;
    for (const char *p = hist; p && (p = strstr(p, "\"is_current_ancestor\":true")); p++)
        ancestors++;
    CHECK(ancestors == N_PROCS * n_appends());
    hs_string_free(hist);
    /* every row exactly once */
    rows r;
    CHECK_OK(scan_rows(t, &r, &err), &err);
    int64_t *want = hs_malloc(sizeof(int64_t) * N_PROCS * MAX_APPENDS * ROWS_PER_APPEND);
    int64_t k = 0;
    for (int p = 0; p < N_PROCS; p++)
        for (int i = 0; i < n_appends(); i++)
            for (int j = 0; j < ROWS_PER_APPEND; j++)
                want[k++] = (int64_t)p * 100000 + i * 10 + j;
    CHECK(rows_equal(&r, want, k));
    hs_free(want);
    rows_free(&r);
    hs_table_close(t);
    hs_catalog_close(cat);
    fprintf(stderr, "  %s: %d processes x %d appends in %.1f s\n", sql ? "sql" : "path", N_PROCS,
            n_appends(), now_s() - t0);
}

static void test_concurrent_appends_path(void) { concurrent_appends(false); }
static void test_concurrent_appends_sql(void) { concurrent_appends(true); }

/* Two writers overwrite from the same base.  Overwrites refresh and plan on
 * the current snapshot when called, so a real race needs two processes
 * released together (a pipe barrier after both opened the table): each
 * replaces every row by its own two rows.  Either both commit one after the
 * other (the second planned after the first committed: valid, it wins), or
 * one commits and the other, planned on the same base, gets HS_CONFLICT
 * naming the concurrent overwrite.  Rounds repeat until a conflict was seen;
 * the loser then refreshes and retries validly. */
static int64_t race_id(int round, int who, int j) { return 1000 + round * 100 + who * 10 + j; }

static int race_child(bool sql, const char *wh, const char *name, int round, int who, int fd)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    int rc = 0;
    if (open_catalog(sql, wh, &cat, &err) != HS_OK || hs_table_open(cat, name, &t, &err) != HS_OK)
        rc = 2;
    char go;
    if (read(fd, &go, 1) != 1)
        rc = 2;
    if (rc == 0) {
        int64_t ids[2] = {race_id(round, who, 0), race_id(round, who, 1)};
        struct ArrowArrayStream s;
        if (stream_of(make_ids(ids, 2), &s) != 0) {
            rc = 2;
        } else {
            hs_status st = hs_table_overwrite(t, &s, NULL, &err);
            if (st == HS_CONFLICT && strstr(err.msg, "concurrent"))
                rc = 10;
            else if (st != HS_OK) {
                fprintf(stderr, "race writer %d: %s: %s\n", who, hs_status_name(st), err.msg);
                rc = 3;
            }
        }
    }
    hs_table_close(t);
    hs_catalog_close(cat);
    return rc;
}

static void overwrite_conflict(bool sql)
{
    hs_error err = {0};
    const char *where = tmp_path(sql ? "ow-sql" : "ow-path");
    char wh[600];
    snprintf(wh, sizeof wh, "%s", where);
    mkdir(wh, 0777);
    const char *name = sql ? "ns.ow" : "ow";
    hs_catalog *cat = NULL;
    CHECK_OK(open_catalog(sql, wh, &cat, &err), &err);
    if (sql)
        CHECK_OK(hs_catalog_create_namespace(cat, "ns", &err), &err);
    hs_table *t = NULL;
    CHECK_OK(create_table(cat, name, 2, false, &t, &err), &err);
    CHECK_OK(append_range(t, 0, 20, &err), &err);
    hs_table_close(t);
    t = NULL;
    hs_catalog_close(cat);
    cat = NULL;

    int conflicts = 0, both = 0, round;
    int loser = -1, loser_round = -1;
    for (round = 0; round < 12 && conflicts == 0; round++) {
        int pfd[2];
        REQUIRE(pipe(pfd) == 0);
        fflush(NULL);
        pid_t pid[2];
        for (int w = 0; w < 2; w++) {
            pid[w] = fork();
            if (pid[w] == 0) {
                close(pfd[1]);
                _exit(race_child(sql, wh, name, round, w, pfd[0]));
            }
        }
        close(pfd[0]);
        usleep(200000); /* let both open the table */
        CHECK(write(pfd[1], "gg", 2) == 2);
        close(pfd[1]);
        int code[2];
        for (int w = 0; w < 2; w++) {
            int status = 0;
            CHECK(pid[w] > 0 && waitpid(pid[w], &status, 0) == pid[w]);
            code[w] = WIFEXITED(status) ? WEXITSTATUS(status) : 99;
            CHECK(code[w] == 0 || code[w] == 10);
        }
        CHECK(code[0] == 0 || code[1] == 0); /* one always wins */
        /* the table holds exactly the rows of the writer that committed last */
        CHECK_OK(open_catalog(sql, wh, &cat, &err), &err);
        CHECK_OK(hs_table_open(cat, name, &t, &err), &err);
        rows r;
        CHECK_OK(scan_rows(t, &r, &err), &err);
        int winner = r.n == 2 ? (int)((r.ids[0] / 10) % 10) : -1;
        CHECK(winner == 0 || winner == 1);
        if (winner == 0 || winner == 1) {
            int64_t want[2] = {race_id(round, winner, 0), race_id(round, winner, 1)};
            CHECK(rows_equal(&r, want, 2));
            CHECK(code[winner] == 0);
        }
        rows_free(&r);
        if (code[0] == 10 || code[1] == 10) {
            conflicts++;
            loser = code[0] == 10 ? 0 : 1;
            loser_round = round;
        } else {
            both++;
        }
        if (conflicts == 0) {
            hs_table_close(t);
            t = NULL;
            hs_catalog_close(cat);
            cat = NULL;
        }
    }
    fprintf(stderr, "  %s: %d rounds, %d serialized, %d conflict(s)\n", sql ? "sql" : "path",
            round, both, conflicts);
    CHECK(conflicts > 0);
    if (!t || loser < 0)
        goto out;
    /* the loser's valid retry: refresh (the API does it), overwrite again */
    int64_t ids[2] = {race_id(loser_round, loser, 0), race_id(loser_round, loser, 1)};
    struct ArrowArrayStream s;
    REQUIRE(stream_of(make_ids(ids, 2), &s) == 0);
    int n_before = hs_snapshot_count(t);
    CHECK_OK(hs_table_overwrite(t, &s, NULL, &err), &err);
    CHECK(hs_snapshot_count(t) == n_before + 1);
    rows r;
    CHECK_OK(scan_rows(t, &r, &err), &err);
    CHECK(rows_equal(&r, ids, 2));
    rows_free(&r);
    /* A stale handle is not a conflict: overwrite and delete refresh and plan
     * on the current snapshot. */
    hs_table *stale = NULL;
    CHECK_OK(hs_table_open(cat, name, &stale, &err), &err);
    CHECK_OK(append_range(t, 0, 10, &err), &err);
    int64_t nd = 0;
    CHECK_OK(hs_table_delete(stale, "id < 5", &nd, &err), &err);
    CHECK(nd == 5);
    CHECK_OK(scan_rows(stale, &r, &err), &err);
    int64_t want[8] = {ids[0], ids[1], 5, 6, 7, 8, 9};
    CHECK(rows_equal(&r, want, 7));
    rows_free(&r);
    hs_table_close(stale);

    /* An overwrite racing appends is rebased and retried automatically (the
     * API's other outcome): a child makes 8 appends (ids >= 5000, outside
     * the filter) while this process overwrites "id < 8"; every appended row
     * survives and the overwrite's effect is exact, whatever the timing. */
    int pfd[2];
    REQUIRE(pipe(pfd) == 0);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[1]);
        hs_error e2 = {0};
        hs_catalog *c2 = NULL;
        hs_table *t2 = NULL;
        int rc = open_catalog(sql, wh, &c2, &e2) == HS_OK && hs_table_open(c2, name, &t2, &e2) == HS_OK
                     ? 0 : 2;
        char go;
        if (read(pfd[0], &go, 1) != 1)
            rc = 2;
        for (int i = 0; rc == 0 && i < 8; i++) {
            int64_t a[2] = {5000 + i * 10, 5001 + i * 10};
            if (append_batch(t2, make_ids(a, 2), &e2) != HS_OK) {
                fprintf(stderr, "racing append %d: %s\n", i, e2.msg);
                rc = 3;
            }
        }
        hs_table_close(t2);
        hs_catalog_close(c2);
        _exit(rc);
    }
    close(pfd[0]);
    usleep(100000);
    CHECK(write(pfd[1], "g", 1) == 1);
    close(pfd[1]);
    REQUIRE(stream_of(make_range(700, 2), &s) == 0);
    hs_status ost = hs_table_overwrite(t, &s, "id < 8", &err);
    CHECK(ost == HS_OK);
    if (ost != HS_OK)
        fprintf(stderr, "  overwrite racing appends: %s\n", err.msg);
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_OK(hs_table_refresh(t, &err), &err);
    CHECK_OK(scan_rows(t, &r, &err), &err);
    int64_t want2[32];
    int n2 = 0;
    want2[n2++] = ids[0];
    want2[n2++] = ids[1];
    want2[n2++] = 8;
    want2[n2++] = 9;
    want2[n2++] = 700;
    want2[n2++] = 701;
    for (int i = 0; i < 8; i++) {
        want2[n2++] = 5000 + i * 10;
        want2[n2++] = 5001 + i * 10;
    }
    CHECK(rows_equal(&r, want2, n2));
    rows_free(&r);
out:
    hs_table_close(t);
    hs_catalog_close(cat);
}

static void test_overwrite_conflict_path(void) { overwrite_conflict(false); }
static void test_overwrite_conflict_sql(void) { overwrite_conflict(true); }

/* ------------------------------------------------------------------ */
/* 4. crash consistency                                                 */

enum crash_op { OP_APPEND, OP_OVERWRITE, OP_DELETE, OP_SCHEMA };

/* Base state: ids 0..19 (one file) and 20..29 (another). */
static void base_ids(int64_t *out, int *n)
{
    *n = 0;
    for (int i = 0; i < 30; i++)
        out[(*n)++] = i;
}

/* The state after the operation. */
static void new_ids(enum crash_op op, int64_t *out, int *n)
{
    *n = 0;
    for (int i = 0; i < 30; i++) {
        if (op == OP_OVERWRITE && i >= 10 && i < 20)
            continue;
        if (op == OP_DELETE && (i < 5 || i == 25))
            continue;
        out[(*n)++] = i;
    }
    if (op == OP_APPEND)
        for (int i = 50; i < 54; i++)
            out[(*n)++] = i;
    if (op == OP_OVERWRITE)
        for (int i = 60; i < 63; i++)
            out[(*n)++] = i;
}

static hs_status run_op(hs_table *t, enum crash_op op, hs_error *err)
{
    struct ArrowArrayStream s;
    switch (op) {
    case OP_APPEND:
        return append_range(t, 50, 4, err);
    case OP_OVERWRITE:
        if (stream_of(make_range(60, 3), &s) != 0)
            return hs_err_set(err, HS_NOMEM, "stream");
        return hs_table_overwrite(t, &s, "id >= 10 AND id < 20", err);
    case OP_DELETE: {
        int64_t n = 0;
        hs_status st = hs_table_delete(t, "id < 5 OR id = 25", &n, err);
        if (st == HS_OK && n != 6)
            st = hs_err_set(err, HS_INTERNAL, "deleted %lld rows, expected 6", (long long)n);
        return st;
    }
    case OP_SCHEMA:
        return hs_table_update_schema(t, "[{\"op\":\"add\",\"name\":\"extra\",\"type\":\"long\"},"
                                         "{\"op\":\"rename\",\"name\":\"name\",\"to\":\"label\"}]",
                                      err);
    }
    return HS_INTERNAL;
}

/* Which state does the table read?  0 = old, 1 = new, -1 = neither. */
static int classify(hs_table *t, enum crash_op op, hs_error *err)
{
    rows r;
    if (scan_rows(t, &r, err) != HS_OK) {
        fprintf(stderr, "  scan after fault: %s\n", err->msg);
        rows_free(&r);
        return -1;
    }
    int64_t want[64];
    int n;
    int res = -1;
    if (op == OP_SCHEMA) {
        base_ids(want, &n);
        bool ids_ok = rows_equal(&r, want, n);
        bool old_cols = r.n_cols == 2 && !strcmp(r.cols[0], "id") && !strcmp(r.cols[1], "name");
        bool new_cols = r.n_cols == 3 && !strcmp(r.cols[0], "id") && !strcmp(r.cols[1], "label") &&
                        !strcmp(r.cols[2], "extra");
        res = !ids_ok ? -1 : old_cols ? 0 : new_cols ? 1 : -1;
    } else {
        base_ids(want, &n);
        if (r.n_cols == 2 && rows_equal(&r, want, n))
            res = 0;
        new_ids(op, want, &n);
        if (res < 0 && r.n_cols == 2 && rows_equal(&r, want, n))
            res = 1;
    }
    rows_free(&r);
    return res;
}

/* Files under a table directory, and of those the temporary ones. */
static int64_t g_nfiles, g_ntmp;
static int count_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)ftw;
    if (flag == FTW_F) {
        g_nfiles++;
        if (strstr(p, ".tmp"))
            g_ntmp++;
    }
    return 0;
}

static int64_t count_files(const char *loc, int64_t *tmp)
{
    if (strncmp(loc, "file://", 7) == 0)
        loc += 7;
    g_nfiles = g_ntmp = 0;
    (void)nftw(loc, count_one, 16, FTW_PHYS);
    if (tmp)
        *tmp = g_ntmp;
    return g_nfiles;
}

static int64_t g_orphans, g_tmp_left;

/* Table "<tag>-<k>" in its own warehouse: the base state, then the operation
 * with fault point k failing.  Returns 1 when the operation completed without
 * reaching fault point k (the loop ends), 0 otherwise; counts into *n_old /
 * *n_new the state read after a failure. */
static int crash_step(bool sql, const char *wh, enum crash_op op, int fv, int k, int *n_old,
                      int *n_new)
{
    hs_error err = {0};
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    char name[64];
    snprintf(name, sizeof name, sql ? "ns.t%d" : "t%d", k);
    int done = 0;
    if (open_catalog(sql, wh, &cat, &err) != HS_OK || create_table(cat, name, fv, false, &t, &err) ||
        append_range(t, 0, 20, &err) != HS_OK || append_range(t, 20, 10, &err) != HS_OK) {
        fprintf(stderr, "  setup k=%d: %s\n", k, err.msg);
        CHECK(0);
        goto out;
    }
    char loc[700];
    snprintf(loc, sizeof loc, "%s", hs_table_location(t));
    int64_t files_before = count_files(loc, NULL);
    cat_set_io_fault(k);
    hs_err_clear(&err);
    hs_status st = run_op(t, op, &err);
    int64_t reached = cat_io_fault_count();
    cat_set_io_fault(0);
    CHECK(st == HS_OK || st == HS_IO);   /* the injected fault, reported as such */
    if (st != HS_OK && st != HS_IO)
        fprintf(stderr, "  op %d k=%d: status %d: %s\n", (int)op, k, (int)st, err.msg);
    if (st == HS_OK && reached < k)
        done = 1;
    if (st != HS_OK)
        CHECK(strstr(err.msg, "injected fault") != NULL);
    /* reopen: exactly the old or the new state */
    hs_table_close(t);
    t = NULL;
    hs_err_clear(&err);
    if (hs_table_open(cat, name, &t, &err) != HS_OK) {
        fprintf(stderr, "  reopen k=%d: %s\n", k, err.msg);
        CHECK(0);
        goto out;
    }
    int state = classify(t, op, &err);
    CHECK(state >= 0);
    if (state < 0)
        fprintf(stderr, "  op %d fv %d k=%d: neither old nor new state (status %d: %s)\n", (int)op,
                fv, k, (int)st, err.msg);
    if (st == HS_OK)
        CHECK(state == 1); /* success must be visible */
    if (st != HS_OK && state == 0) {
        (*n_old)++;
        int64_t tmp = 0;
        g_orphans += count_files(loc, &tmp) - files_before;  /* left by the failed op */
        g_tmp_left += tmp;
    }
    if (st != HS_OK && state == 1)
        (*n_new)++;
    /* and the table still takes writes */
    hs_err_clear(&err);
    int64_t more[2] = {1000, 1001};
    if (append_batch(t, make_ids_named(more, 2, op == OP_SCHEMA && state == 1 ? "label" : "name"),
                     &err) != HS_OK) {
        fprintf(stderr, "  append after fault k=%d: %s\n", k, err.msg);
        CHECK(0);
    } else {
        rows r;
        if (scan_rows(t, &r, &err) == HS_OK) {
            CHECK(r.n >= 2 && r.ids[r.n - 2] == 1000 && r.ids[r.n - 1] == 1001);
        } else {
            CHECK(0);
        }
        rows_free(&r);
    }
out:
    cat_set_io_fault(0);
    hs_table_close(t);
    hs_catalog_close(cat);
    return done;
}

static void crash_loop_in(const char *wh, bool sql, enum crash_op op, int fv, const char *tag);

static void crash_loop(bool sql, enum crash_op op, int fv, const char *tag)
{
    const char *where = tmp_path(tag);
    char wh[600];
    snprintf(wh, sizeof wh, "%s", where);
    mkdir(wh, 0777);
    crash_loop_in(wh, sql, op, fv, tag);
}

static void crash_loop_in(const char *wh, bool sql, enum crash_op op, int fv, const char *tag)
{
    double t0 = now_s();
    if (sql) {
        hs_error err = {0};
        hs_catalog *cat = NULL;
        CHECK_OK(open_catalog(true, wh, &cat, &err), &err);
        CHECK_OK(hs_catalog_create_namespace(cat, "ns", &err), &err);
        hs_catalog_close(cat);
    }
    int n_old = 0, n_new = 0, k;
    g_orphans = g_tmp_left = 0;
    int failures_before = hs_test_failures;
    for (k = 1; k <= 400; k++) {
        if (crash_step(sql, wh, op, fv, k, &n_old, &n_new))
            break;
        if (hs_test_failures > failures_before + 10)
            break; /* keep the log readable */
    }
    CHECK(k <= 400);
    CHECK(n_old > 0); /* early faults must leave the old state */
    /* no half-written temporary file survives a failed operation (orphaned
     * complete files are allowed: unreferenced, for maintenance to remove) */
    CHECK(g_tmp_left == 0);
    fprintf(stderr, "  %s: %d fault points, %d failures read old, %d read new, %lld orphan "
            "files in all, %.1f s\n", tag, k - 1, n_old, n_new, (long long)g_orphans,
            now_s() - t0);
}

static void test_crash_append_path(void) { crash_loop(false, OP_APPEND, 2, "crash-append"); }
static void test_crash_overwrite_path(void) { crash_loop(false, OP_OVERWRITE, 2, "crash-ow"); }
static void test_crash_delete_v2_path(void) { crash_loop(false, OP_DELETE, 2, "crash-del2"); }
static void test_crash_delete_v3_path(void) { crash_loop(false, OP_DELETE, 3, "crash-del3"); }
static void test_crash_schema_path(void) { crash_loop(false, OP_SCHEMA, 2, "crash-schema"); }
static void test_crash_append_sql(void) { crash_loop(true, OP_APPEND, 2, "crash-append-sql"); }
static void test_crash_delete_v3_sql(void) { crash_loop(true, OP_DELETE, 3, "crash-del3-sql"); }
static void test_crash_schema_sql(void) { crash_loop(true, OP_SCHEMA, 3, "crash-schema-sql"); }

/* ------------------------------------------------------------------ */
/* 5. bad input                                                         */

static int read_file(const char *path, char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc((size_t)n + 1);
    *len = fread(*data, 1, (size_t)n, f);
    (*data)[*len] = 0;
    fclose(f);
    return 0;
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(data, 1, len, f);
    fclose(f);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The one metadata-dir file whose name starts with prefix and ends with
 * suffix (excluding `not_prefix`); out gets its full path. */
static int find_meta_file(const char *mdir, const char *prefix, const char *suffix,
                          const char *not_prefix, char *out, size_t cap)
{
    DIR *d = opendir(mdir);
    if (!d)
        return -1;
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t nl = strlen(e->d_name), sl = strlen(suffix);
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0 || nl < sl ||
            strcmp(e->d_name + nl - sl, suffix) != 0)
            continue;
        if (not_prefix && strncmp(e->d_name, not_prefix, strlen(not_prefix)) == 0)
            continue;
        snprintf(out, cap, "%s/%s", mdir, e->d_name);
        found++;
    }
    closedir(d);
    return found == 1 ? 0 : -1;
}

/* Open and fully scan; returns the first failing status, message in err. */
static hs_status open_and_scan(hs_catalog *cat, const char *name, hs_error *err)
{
    hs_table *t = NULL;
    HS_TRY(hs_table_open(cat, name, &t, err));
    rows r;
    hs_status st = scan_rows(t, &r, err);
    rows_free(&r);
    hs_table_close(t);
    return st;
}

typedef enum { CORRUPT_TRUNCATE, CORRUPT_GARBAGE, CORRUPT_MISSING, CORRUPT_TAIL } corruption;
static const char *const CORRUPT_NAME[] = {"truncated", "garbage", "missing", "tail-truncated"};

/* Corrupts `path`, expects open+scan to fail with a message naming the file
 * and containing one of the `what` substrings (NULL-terminated), restores. */
static void expect_bad(hs_catalog *cat, const char *name, const char *path, corruption how,
                       const char *const *what)
{
    char *orig = NULL;
    size_t len = 0;
    REQUIRE(read_file(path, &orig, &len) == 0);
    if (how == CORRUPT_TRUNCATE) {
        write_file(path, orig, len / 2);
    } else if (how == CORRUPT_TAIL) {
        write_file(path, orig, len > 12 ? len - 12 : 0);  /* header intact, last block cut */
    } else if (how == CORRUPT_GARBAGE) {
        char *g = malloc(len);
        for (size_t i = 0; i < len; i++)
            g[i] = (char)(0x5a ^ (i * 131));
        write_file(path, g, len);
        free(g);
    } else {
        remove(path);
    }
    hs_error err = {0};
    hs_status st = open_and_scan(cat, name, &err);
    CHECK(st != HS_OK);
    bool names_file = strstr(err.msg, base_name(path)) != NULL;
    bool says_what = false;
    for (int i = 0; what[i]; i++)
        says_what |= strstr(err.msg, what[i]) != NULL;
    CHECK(names_file);
    CHECK(says_what);
    if (!names_file || !says_what || getenv("HS_TEST_VERBOSE"))
        fprintf(stderr, "  %s %s -> %s: %s\n", CORRUPT_NAME[how], base_name(path),
                hs_status_name(st), err.msg);
    write_file(path, orig, len);
    free(orig);
    /* restored: readable again */
    hs_err_clear(&err);
    CHECK(open_and_scan(cat, name, &err) == HS_OK);
}

static void test_bad_files(void)
{
    hs_error err = {0};
    const char *where = tmp_path("bad");
    char wh[600];
    snprintf(wh, sizeof wh, "%s", where);
    hs_catalog *cat = NULL;
    CHECK_OK(hs_catalog_open_path(wh, &cat, &err), &err);
    hs_table *t = NULL;
    CHECK_OK(create_table(cat, "b", 2, false, &t, &err), &err);
    CHECK_OK(append_range(t, 0, 10, &err), &err);
    char meta[1024], list[1024], manifest[1024], mdir[800];
    snprintf(meta, sizeof meta, "%s", hs_table_metadata_location(t));
    if (strncmp(meta, "file://", 7) == 0)
        memmove(meta, meta + 7, strlen(meta + 7) + 1);
    hs_table_close(t);
    snprintf(mdir, sizeof mdir, "%s/b/metadata", wh);
    REQUIRE(find_meta_file(mdir, "snap-", ".avro", NULL, list, sizeof list) == 0);
    REQUIRE(find_meta_file(mdir, "", "-m0.avro", "snap-", manifest, sizeof manifest) == 0);

    static const char *const META_TRUNC[] = {"JSON", "json", "parse", "truncated", "end of", NULL};
    static const char *const META_MISSING[] = {"No such file", "not found", "missing", "does not exist", NULL};
    static const char *const AVRO_BAD[] = {"Avro", "avro", "magic", "truncated", "corrupt", "header",
                                           "end of", NULL};
    expect_bad(cat, "b", meta, CORRUPT_TRUNCATE, META_TRUNC);
    expect_bad(cat, "b", meta, CORRUPT_GARBAGE, META_TRUNC);
    expect_bad(cat, "b", meta, CORRUPT_MISSING, META_MISSING);
    expect_bad(cat, "b", list, CORRUPT_TRUNCATE, AVRO_BAD);
    expect_bad(cat, "b", list, CORRUPT_GARBAGE, AVRO_BAD);
    expect_bad(cat, "b", list, CORRUPT_MISSING, META_MISSING);
    expect_bad(cat, "b", manifest, CORRUPT_TRUNCATE, AVRO_BAD);
    expect_bad(cat, "b", manifest, CORRUPT_GARBAGE, AVRO_BAD);
    expect_bad(cat, "b", manifest, CORRUPT_MISSING, META_MISSING);
    expect_bad(cat, "b", list, CORRUPT_TAIL, AVRO_BAD);
    expect_bad(cat, "b", manifest, CORRUPT_TAIL, AVRO_BAD);

    /* valid JSON without a required field: the field is named */
    {
        char *m = NULL;
        size_t ml = 0;
        REQUIRE(read_file(meta, &m, &ml) == 0);
        char *f = strstr(m, "\"last-column-id\"");
        REQUIRE(f);
        char *copy = malloc(ml + 1);
        memcpy(copy, m, ml + 1);
        copy[f - m + 6] = 'X'; /* "last-Xolumn-id" */
        write_file(meta, copy, ml);
        hs_table *bt = NULL;
        hs_err_clear(&err);
        hs_status bst = hs_table_open(cat, "b", &bt, &err);
        CHECK(bst == HS_CORRUPT);
        CHECK(strstr(err.msg, base_name(meta)) != NULL);
        CHECK(strstr(err.msg, "last-column-id") != NULL);
        if (bst != HS_CORRUPT || getenv("HS_TEST_VERBOSE"))
            fprintf(stderr, "  no last-column-id: %s: %s\n", hs_status_name(bst), err.msg);
        hs_table_close(bt);
        /* a current-snapshot-id that no snapshot has */
        memcpy(copy, m, ml + 1);
        f = strstr(copy, "\"current-snapshot-id\"");
        REQUIRE(f);
        f = strchr(f, ':');
        REQUIRE(f);
        while (*++f == ' ')
            ;
        while (f[1] >= '0' && f[1] <= '9')
            f++; /* the last digit: changing it cannot overflow int64 */
        REQUIRE(*f >= '0' && *f <= '9');
        *f = *f == '9' ? '0' : (char)(*f + 1);
        write_file(meta, copy, ml);
        hs_err_clear(&err);
        bst = open_and_scan(cat, "b", &err);
        CHECK(bst == HS_CORRUPT);
        bool named = strstr(err.msg, "current-snapshot-id") != NULL;
        CHECK(named);
        if (bst != HS_CORRUPT || !named || getenv("HS_TEST_VERBOSE"))
            fprintf(stderr, "  unknown current-snapshot-id: %s: %s\n", hs_status_name(bst), err.msg);
        write_file(meta, m, ml);
        free(copy);
        free(m);
    }

    /* hs_table_open_metadata of a missing file */
    {
        char miss[1100];
        snprintf(miss, sizeof miss, "%s/v99.metadata.json", mdir);
        hs_table *mt = NULL;
        hs_err_clear(&err);
        CHECK(hs_table_open_metadata(miss, &mt, &err) == HS_NOT_FOUND);
        CHECK(strstr(err.msg, "v99.metadata.json") != NULL);
        hs_table_close(mt);
    }

    /* the same metadata file through hs_table_open_metadata */
    char *orig = NULL;
    size_t len = 0;
    REQUIRE(read_file(meta, &orig, &len) == 0);
    write_file(meta, orig, len / 3);
    hs_table *st_t = NULL;
    hs_err_clear(&err);
    CHECK(hs_table_open_metadata(meta, &st_t, &err) != HS_OK);
    CHECK(strstr(err.msg, base_name(meta)) != NULL);
    if (!strstr(err.msg, base_name(meta)))
        fprintf(stderr, "  open_metadata truncated: %s\n", err.msg);

    /* format-version 4: refused with a clear message */
    char *p = strstr(orig, "\"format-version\"");
    REQUIRE(p);
    p = strchr(p, ':');
    REQUIRE(p);
    while (*++p == ' ')
        ;
    REQUIRE(*p == '2');
    *p = '4';
    write_file(meta, orig, len);
    hs_err_clear(&err);
    hs_status st = hs_table_open(cat, "b", &t, &err);
    CHECK(st == HS_UNSUPPORTED);
    CHECK(strstr(err.msg, "format version 4") != NULL || strstr(err.msg, "format-version 4") != NULL);
    CHECK(strstr(err.msg, "newer") != NULL);
    if (st != HS_UNSUPPORTED || getenv("HS_TEST_VERBOSE"))
        fprintf(stderr, "  format-version 4: %s: %s\n", hs_status_name(st), err.msg);
    hs_err_clear(&err);
    CHECK(hs_table_open_metadata(meta, &st_t, &err) == HS_UNSUPPORTED);
    CHECK(strstr(err.msg, "4") != NULL);
    *p = '2';
    write_file(meta, orig, len);
    free(orig);
    hs_err_clear(&err);
    CHECK(open_and_scan(cat, "b", &err) == HS_OK);
    hs_catalog_close(cat);
}

/* hyperstream.commit.fsync=true: the k-th fsync of an append (a data file,
 * manifest, manifest list or metadata file, or the directory of one) fails
 * for k = 1.. until the append gets through.  Every failed fsync fails the
 * append (HS_IO naming the fsync), the table reads the old rows, and the
 * append's files are gone. */
static void test_fsync_fault_append(void)
{
    hs_error err = {0};
    const char *where = tmp_path("fsync");
    char wh[600];
    snprintf(wh, sizeof wh, "%s", where);
    mkdir(wh, 0777);
    hs_catalog *cat = NULL;
    hs_table *t = NULL;
    CHECK_OK(open_catalog(false, wh, &cat, &err), &err);
    CHECK_OK(create_table(cat, "t", 2, false, &t, &err), &err);
    const char *k1[] = {"hyperstream.commit.fsync"}, *v1[] = {"true"};
    CHECK_OK(hs_table_set_properties(t, k1, v1, 1, &err), &err);
    CHECK_OK(append_range(t, 0, 20, &err), &err);
    char loc[700];
    snprintf(loc, sizeof loc, "%s", hs_table_location(t));
    int failures = 0, k;
    for (k = 1; k < 40; k++) {
        int64_t files_before = count_files(loc, NULL);
        hs_io_set_sync_fault(k);
        hs_status st = append_range(t, 100, 10, &err);
        hs_io_set_sync_fault(0);
        rows r;
        hs_table *chk = NULL;
        REQUIRE(hs_table_open(cat, "t", &chk, &err) == HS_OK);
        REQUIRE(scan_rows(chk, &r, &err) == HS_OK);
        hs_table_close(chk);
        if (st == HS_OK) {
            CHECK(r.n == 30);
            rows_free(&r);
            break;
        }
        failures++;
        CHECK(st == HS_IO && strstr(err.msg, "fsync") != NULL);
        if (st != HS_IO)
            fprintf(stderr, "  k=%d: %s\n", k, err.msg);
        hs_err_clear(&err);
        CHECK(r.n == 20);
        rows_free(&r);
        int64_t tmp = 0;
        CHECK(count_files(loc, &tmp) == files_before && tmp == 0);
    }
    /* a file and a directory sync each for the data file, manifest,
     * manifest list and metadata file */
    CHECK(failures == 8);
    fprintf(stderr, "  fsync faults: %d appends failed before one passed\n", failures);
    hs_table_close(t);
    hs_catalog_close(cat);
}

/* HS_FAULTS_ONLY=<substring> runs only the matching tests (debugging). */
#define RUN(fn)                                                                          \
    do {                                                                                 \
        const char *only_ = getenv("HS_FAULTS_ONLY");                                    \
        if (!only_ || strstr(#fn, only_))                                                \
            HS_RUN(fn);                                                                  \
    } while (0)

/* SQL catalog: the row's metadata_location names a missing or corrupt file. */
static void test_bad_files_sql(void)
{
    hs_error err = {0};
    const char *where = tmp_path("bad-sql");
    char wh[600];
    snprintf(wh, sizeof wh, "%s", where);
    mkdir(wh, 0777);
    hs_catalog *cat = NULL;
    CHECK_OK(open_catalog(true, wh, &cat, &err), &err);
    CHECK_OK(hs_catalog_create_namespace(cat, "ns", &err), &err);
    hs_table *t = NULL;
    CHECK_OK(create_table(cat, "ns.b", 3, false, &t, &err), &err);
    CHECK_OK(append_range(t, 0, 5, &err), &err);
    char meta[1024];
    snprintf(meta, sizeof meta, "%s", hs_table_metadata_location(t));
    if (strncmp(meta, "file://", 7) == 0)
        memmove(meta, meta + 7, strlen(meta + 7) + 1);
    hs_table_close(t);
    static const char *const META_BAD[] = {"JSON", NULL};
    static const char *const META_MISSING[] = {"No such file", "not found", "missing", NULL};
    expect_bad(cat, "ns.b", meta, CORRUPT_TRUNCATE, META_BAD);
    expect_bad(cat, "ns.b", meta, CORRUPT_MISSING, META_MISSING);
    hs_catalog_close(cat);
}

/* The same crash loops on a path table in S3 (tests/s3/s3server.py starts the
 * server for ctest and exports HS_TEST_S3_ENDPOINT): every I/O step of an
 * append, overwrite and v3 delete on S3 (PUTs, the conditional PUT of the
 * metadata, the hint) fails once; the table then reads the old or the new
 * state.  Skipped without a server, failed without one under CI=true. */
static void crash_loop_s3(enum crash_op op, int fv, const char *tag)
{
    const char *ep = getenv("HS_TEST_S3_ENDPOINT"), *bucket = getenv("HS_TEST_S3_BUCKET");
    if (!ep || !*ep || !bucket || !*bucket) {
        const char *ci = getenv("CI");
        if (ci && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0)) {
            CHECK(!"HS_TEST_S3_ENDPOINT is not set under CI=true");
            return;
        }
        SKIP("no S3 server (ctest runs this test through tests/s3/s3server.py)");
    }
    char wh[600];
    snprintf(wh, sizeof wh, "s3://%s/faults-%s-%d", bucket, tag, (int)getpid());
    crash_loop_in(wh, false, op, fv, tag);
}

static void test_crash_append_s3(void) { crash_loop_s3(OP_APPEND, 2, "crash-append-s3"); }
static void test_crash_overwrite_s3(void) { crash_loop_s3(OP_OVERWRITE, 2, "crash-ow-s3"); }
static void test_crash_delete_v3_s3(void) { crash_loop_s3(OP_DELETE, 3, "crash-del3-s3"); }

int main(void)
{
    RUN(test_bad_files);
    RUN(test_bad_files_sql);
    RUN(test_overwrite_conflict_path);
    RUN(test_overwrite_conflict_sql);
    RUN(test_fsync_fault_append);
    RUN(test_crash_append_path);
    RUN(test_crash_overwrite_path);
    RUN(test_crash_delete_v2_path);
    RUN(test_crash_delete_v3_path);
    RUN(test_crash_schema_path);
    RUN(test_crash_append_sql);
    RUN(test_crash_delete_v3_sql);
    RUN(test_crash_schema_sql);
    RUN(test_concurrent_appends_path);
    RUN(test_concurrent_appends_sql);
    RUN(test_crash_append_s3);
    RUN(test_crash_overwrite_s3);
    RUN(test_crash_delete_v3_s3);
    return hs_test_summary();
}

/*
 * tests/c/test_catalog.c - path tables and the SQLite catalog: version-hint
 * rules, create/load/commit, compare-and-swap conflicts, fault injection at
 * every I/O step of a commit, and forked writers committing through the retry
 * loop.  The metadata documents are hand-written minimal v2 metadata.json, so
 * these tests exercise the catalog alone (the oracle test in
 * tests/python/test_catalog_oracle.py checks pyiceberg reads what we write).
 */
#include "harness.h"

#include "base/mem.h"
#include "catalog/catalog.h"
#include "iceberg/model.h"
#include "io/io.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------ */

static char g_dir[1024];

/* A fresh scratch directory <tmp>/<name>-<pid>. */
static const char *scratch(const char *name)
{
    snprintf(g_dir, sizeof g_dir, "%s/cat-%s-%d", hs_test_tmpdir(), name, (int)getpid());
    hs_error e = { 0 };
    (void)!cat_io_remove_tree(g_dir, &e);
    mkdir(g_dir, 0755);
    return g_dir;
}

/* Minimal valid v2 metadata with location loc and property "n" = n. */
static char *meta_json(const char *loc, int n, const char *extra_props)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    fprintf(f,
            "{\"format-version\":2,\"table-uuid\":\"9c12d441-03fe-4693-9a96-a0705ddf69c1\","
            "\"location\":\"%s\",\"last-sequence-number\":0,\"last-updated-ms\":%d,"
            "\"last-column-id\":1,\"schemas\":[{\"type\":\"struct\",\"schema-id\":0,"
            "\"fields\":[{\"id\":1,\"name\":\"x\",\"required\":false,\"type\":\"long\"}]}],"
            "\"current-schema-id\":0,\"partition-specs\":[{\"spec-id\":0,\"fields\":[]}],"
            "\"default-spec-id\":0,\"last-partition-id\":999,"
            "\"properties\":{\"n\":\"%d\"%s%s},"
            "\"sort-orders\":[{\"order-id\":0,\"fields\":[]}],\"default-sort-order-id\":0,"
            "\"current-snapshot-id\":-1,\"snapshots\":[],\"snapshot-log\":[],"
            "\"metadata-log\":[],\"refs\":{}}",
            loc, 1000 + n, n, extra_props ? "," : "", extra_props ? extra_props : "");
    fclose(f);
    return s;
}

static int prop_n(const hs_buf *json)
{
    json_t *root = json_loadb((const char *)json->data, json->len, 0, NULL);
    json_t *v = json_object_get(json_object_get(root, "properties"), "n");
    int n = json_is_string(v) ? atoi(json_string_value(v)) : -1;
    json_decref(root);
    return n;
}

static char *read_text(const char *path)
{
    hs_buf b = { 0 };
    hs_error e = { 0 };
    if (cat_io_read_all(path, &b, &e) != HS_OK) {
        hs_buf_free(&b);
        return NULL;
    }
    return (char *)hs_buf_detach(&b, NULL);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Loads ident and returns property n (-1 on failure). */
static int load_n(cat_catalog *c, const char *ident, char **loc)
{
    hs_buf b = { 0 };
    hs_error e = { 0 };
    int n = -1;
    if (cat_load_json(c, ident, &b, loc, &e) == HS_OK)
        n = prop_n(&b);
    else
        fprintf(stderr, "  load %s: %s\n", ident, e.msg);
    hs_buf_free(&b);
    return n;
}

/* ---- path tables ---------------------------------------------------------------- */

static void test_path_create_load_commit(void)
{
    const char *root = scratch("path1");
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_path_open(root, &c, &err), &err);
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/t1", root);
    char *m1 = meta_json(tdir, 1, NULL);
    char *loc = NULL;
    CHECK_OK(cat_create_json(c, "t1", m1, strlen(m1), &loc, &err), &err);
    CHECK(loc && ends_with(loc, "/t1/metadata/v1.metadata.json"));
    char hint[1300];
    snprintf(hint, sizeof hint, "%s/metadata/version-hint.text", tdir);
    char *h = read_text(hint);
    CHECK(h && strcmp(h, "1") == 0);   /* no trailing newline */
    hs_free(h);

    /* Creating again conflicts. */
    CHECK(cat_create_json(c, "t1", m1, strlen(m1), NULL, &err) == HS_CONFLICT);
    hs_err_clear(&err);

    hs_buf b = { 0 };
    char *l2 = NULL;
    CHECK_OK(cat_load_json(c, "t1", &b, &l2, &err), &err);
    CHECK(b.len == strlen(m1) && memcmp(b.data, m1, b.len) == 0);
    CHECK(l2 && strcmp(l2, loc) == 0);

    char *m2 = meta_json(tdir, 2, NULL);
    char *l3 = NULL;
    CHECK_OK(cat_commit_json(c, "t1", l2, m2, strlen(m2), &l3, &err), &err);
    CHECK(l3 && ends_with(l3, "/t1/metadata/v2.metadata.json"));
    h = read_text(hint);
    CHECK(h && strcmp(h, "2") == 0);
    hs_free(h);
    CHECK(load_n(c, "t1", NULL) == 2);

    /* Absolute paths and file:// URIs name the same table. */
    char uri[1300];
    snprintf(uri, sizeof uri, "file://%s", tdir);
    CHECK(load_n(c, uri, NULL) == 2);
    CHECK(load_n(c, tdir, NULL) == 2);

    /* Listing the root finds t1 (and not a plain directory). */
    char other[1300];
    snprintf(other, sizeof other, "%s/not-a-table", root);
    mkdir(other, 0755);
    char **names = NULL;
    size_t n = 0;
    CHECK_OK(cat_list(c, NULL, &names, &n, &err), &err);
    CHECK(n == 1 && strcmp(names[0], "t1") == 0);
    cat_strv_free(names, n);

    bool ex = false;
    CHECK_OK(cat_exists(c, "t1", &ex, &err), &err);
    CHECK(ex);
    CHECK_OK(cat_exists(c, "nope", &ex, &err), &err);
    CHECK(!ex);
    CHECK(cat_load_json(c, "nope", &b, NULL, &err) == HS_NOT_FOUND);
    CHECK(strstr(err.msg, "nope") != NULL);
    hs_err_clear(&err);

    /* Drop without purge removes the metadata files, keeps the directory. */
    CHECK_OK(cat_drop(c, "t1", false, &err), &err);
    CHECK_OK(cat_exists(c, "t1", &ex, &err), &err);
    CHECK(!ex);
    struct stat st;
    CHECK(stat(tdir, &st) == 0);
    CHECK(cat_rename(c, "t1", "t2", &err) == HS_UNSUPPORTED);
    hs_err_clear(&err);

    hs_buf_free(&b);
    hs_free(loc);
    hs_free(l2);
    hs_free(l3);
    free(m1);
    free(m2);
    cat_free(c);
}

static void test_path_conflict(void)
{
    const char *root = scratch("path2");
    hs_error err = { 0 };
    cat_catalog *a, *b;
    CHECK_OK(cat_path_open(root, &a, &err), &err);
    CHECK_OK(cat_path_open(root, &b, &err), &err);
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/t", root);
    char *m1 = meta_json(tdir, 1, NULL), *ma = meta_json(tdir, 10, NULL),
         *mb = meta_json(tdir, 20, NULL);
    CHECK_OK(cat_create_json(a, "t", m1, strlen(m1), NULL, &err), &err);
    char *base_a = NULL, *base_b = NULL;
    CHECK(load_n(a, "t", &base_a) == 1);
    CHECK(load_n(b, "t", &base_b) == 1);
    CHECK_OK(cat_commit_json(a, "t", base_a, ma, strlen(ma), NULL, &err), &err);
    hs_status s = cat_commit_json(b, "t", base_b, mb, strlen(mb), NULL, &err);
    CHECK(s == HS_CONFLICT);
    CHECK(strstr(err.msg, "concurrent commit") != NULL);
    hs_err_clear(&err);
    CHECK(load_n(b, "t", NULL) == 10);

    /* A base that is not this table's metadata file is refused. */
    CHECK(cat_commit_json(a, "t", "/elsewhere/v2.metadata.json", mb, strlen(mb), NULL, &err) ==
          HS_INVALID);
    hs_err_clear(&err);

    hs_free(base_a);
    hs_free(base_b);
    free(m1);
    free(ma);
    free(mb);
    cat_free(a);
    cat_free(b);
}

static void test_path_hint_rules(void)
{
    const char *root = scratch("path3");
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_path_open(root, &c, &err), &err);
    char tdir[1200], md[1300], hint[1400], f[1400];
    snprintf(tdir, sizeof tdir, "%s/t", root);
    snprintf(md, sizeof md, "%s/metadata", tdir);
    snprintf(hint, sizeof hint, "%s/version-hint.text", md);
    char *m1 = meta_json(tdir, 1, NULL);
    CHECK_OK(cat_create_json(c, "t", m1, strlen(m1), NULL, &err), &err);
    for (int v = 2; v <= 3; v++) {
        char *m = meta_json(tdir, v, NULL);
        snprintf(f, sizeof f, "%s/v%d.metadata.json", md, v);
        write_text(f, m);
        free(m);
    }
    /* Stale hint (1): probe upward to v3. */
    CHECK(load_n(c, "t", NULL) == 3);
    /* Missing hint: scan finds v3. */
    unlink(hint);
    CHECK(load_n(c, "t", NULL) == 3);
    /* Garbage and out-of-range hints: scan. */
    write_text(hint, "abc");
    CHECK(load_n(c, "t", NULL) == 3);
    write_text(hint, "99");
    CHECK(load_n(c, "t", NULL) == 3);
    write_text(hint, "");
    CHECK(load_n(c, "t", NULL) == 3);
    /* pyiceberg also reads a file name in the hint. */
    write_text(hint, "v2.metadata.json");
    CHECK(load_n(c, "t", NULL) == 3);
    /* Java-style trailing newline is tolerated. */
    write_text(hint, "2\n");
    char *loc = NULL;
    CHECK(load_n(c, "t", &loc) == 3);
    CHECK(loc && ends_with(loc, "v3.metadata.json"));
    /* Leftover temporary files and other names are ignored. */
    snprintf(f, sizeof f, "%s/v4.metadata.json.tmp-0123456789abcdef", md);
    write_text(f, "{half");
    snprintf(f, sizeof f, "%s/v5.metadata.jsonx", md);
    write_text(f, "{}");
    CHECK(load_n(c, "t", NULL) == 3);
    /* Commit from v3 writes v4 and the hint. */
    char *m4 = meta_json(tdir, 4, NULL);
    CHECK_OK(cat_commit_json(c, "t", loc, m4, strlen(m4), NULL, &err), &err);
    char *h = read_text(hint);
    CHECK(h && strcmp(h, "4") == 0);
    hs_free(h);
    CHECK(load_n(c, "t", NULL) == 4);

    /* An empty current metadata file is corrupt and named. */
    snprintf(f, sizeof f, "%s/v5.metadata.json", md);
    write_text(f, "");
    hs_buf b = { 0 };
    CHECK(cat_load_json(c, "t", &b, NULL, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "v5.metadata.json") != NULL);
    hs_err_clear(&err);
    hs_buf_free(&b);

    /* A directory without metadata is not a table. */
    CHECK(cat_load_json(c, root, &b, NULL, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    hs_buf_free(&b);

    hs_free(loc);
    free(m1);
    free(m4);
    cat_free(c);
}

/* Every v*.metadata.json in dir must be one of the complete documents. */
static bool metadata_files_complete(const char *md, const char *a, const char *b)
{
    char **names = NULL;
    size_t n = 0;
    hs_error e = { 0 };
    if (cat_io_list_dir(md, &names, &n, &e) != HS_OK)
        return false;
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        if (!ends_with(names[i], ".metadata.json"))
            continue;
        char p[2400];
        snprintf(p, sizeof p, "%s/%s", md, names[i]);
        char *t = read_text(p);
        if (!t || (strcmp(t, a) != 0 && strcmp(t, b) != 0)) {
            fprintf(stderr, "  incomplete metadata file %s\n", p);
            ok = false;
        }
        hs_free(t);
    }
    cat_strv_free(names, n);
    return ok;
}

static void test_path_fault_every_step(void)
{
    const char *root = scratch("path4");
    hs_error err = { 0 };
    int steps = 0, failures = 0;
    for (int64_t k = 1; k < 100; k++) {
        char tdir[1200], md[1300];
        snprintf(tdir, sizeof tdir, "%s/t%lld", root, (long long)k);
        snprintf(md, sizeof md, "%s/metadata", tdir);
        cat_catalog *c;
        CHECK_OK(cat_path_open(NULL, &c, &err), &err);
        char *m1 = meta_json(tdir, 1, NULL), *m2 = meta_json(tdir, 2, NULL);
        CHECK_OK(cat_create_json(c, tdir, m1, strlen(m1), NULL, &err), &err);
        char *base = NULL;
        CHECK(load_n(c, tdir, &base) == 1);
        cat_set_io_fault(k);
        hs_status s = cat_commit_json(c, tdir, base, m2, strlen(m2), NULL, &err);
        int64_t passed = cat_io_fault_count();
        cat_set_io_fault(0);
        int n = load_n(c, tdir, NULL);
        if (s == HS_OK) {
            CHECK(n == 2);
        } else {
            failures++;
            CHECK(s == HS_IO);
            CHECK(strstr(err.msg, "injected fault") != NULL);
            CHECK(n == 1);
        }
        hs_err_clear(&err);
        CHECK(metadata_files_complete(md, m1, m2));
        /* The table stays committable after any failure. */
        char *cur = NULL;
        int now = load_n(c, tdir, &cur);
        char *m3 = meta_json(tdir, 3, NULL);
        CHECK_OK(cat_commit_json(c, tdir, cur, m3, strlen(m3), NULL, &err), &err);
        CHECK(load_n(c, tdir, NULL) == 3);
        (void)now;
        free(m1);
        free(m2);
        free(m3);
        hs_free(base);
        hs_free(cur);
        cat_free(c);
        steps = (int)k;
        if (passed < k)   /* the commit finished before reaching step k */
            break;
    }
    CHECK(failures >= 4);   /* base exists, create, write, close (link) */
    CHECK(steps < 99);
    fprintf(stderr, "  path commit: %d fault positions tried, %d failed\n", steps, failures);
}

/* Creating a table fails at every step cleanly: afterwards it either does not
 * exist (and can be created) or exists at exactly its first metadata. */
static void test_create_fault_every_step(void)
{
    const char *dir = scratch("createfault");
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    hs_error err = { 0 };
    cat_catalog *cats[2];
    CHECK_OK(cat_path_open(dir, &cats[0], &err), &err);
    CHECK_OK(cat_sql_open(db, "default", NULL, &cats[1], &err), &err);
    CHECK_OK(cat_namespace_create(cats[1], "ns", NULL, NULL, 0, &err), &err);
    for (int which = 0; which < 2; which++) {
        cat_catalog *c = cats[which];
        int k, failures = 0;
        for (k = 1; k < 50; k++) {
            char ident[64];
            snprintf(ident, sizeof ident, which ? "ns.c%d" : "c%d", k);
            char *loc = NULL;
            CHECK_OK(cat_default_location(c, ident, &loc, &err), &err);
            char *m1 = meta_json(loc, 1, NULL);
            cat_set_io_fault(k);
            hs_status s = cat_create_json(c, ident, m1, strlen(m1), NULL, &err);
            int64_t passed = cat_io_fault_count();
            cat_set_io_fault(0);
            hs_err_clear(&err);
            bool ex = false;
            CHECK_OK(cat_exists(c, ident, &ex, &err), &err);
            if (s == HS_OK) {
                CHECK(ex && load_n(c, ident, NULL) == 1);
            } else {
                failures++;
                if (ex) /* path: v1 was published before the hint step failed */
                    CHECK(load_n(c, ident, NULL) == 1);
                else
                    CHECK_OK(cat_create_json(c, ident, m1, strlen(m1), NULL, &err), &err);
            }
            free(m1);
            hs_free(loc);
            if (passed < k)
                break;
        }
        CHECK(failures >= 3);
    }
    cat_free(cats[0]);
    cat_free(cats[1]);
}

/* ---- SQL catalog ------------------------------------------------------------------- */

static void test_sql_crud(void)
{
    const char *dir = scratch("sql1");
    char db[1200], wh[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    snprintf(wh, sizeof wh, "%s/warehouse", dir);
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_sql_open(db, "default", wh, &c, &err), &err);

    /* Namespaces. */
    CHECK(cat_namespace_drop(c, "db", &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    CHECK_OK(cat_namespace_create(c, "db", NULL, NULL, 0, &err), &err);
    CHECK(cat_namespace_create(c, "db", NULL, NULL, 0, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    const char *k[] = { "owner", "location" };
    char nsloc[1300];
    snprintf(nsloc, sizeof nsloc, "%s/elsewhere/", dir);
    const char *v[] = { "me", nsloc };
    CHECK_OK(cat_namespace_create(c, "a.b", k, v, 1, &err), &err);
    char **names = NULL, **vals = NULL;
    size_t n = 0;
    CHECK_OK(cat_namespace_list(c, NULL, &names, &n, &err), &err);
    CHECK(n == 2 && strcmp(names[0], "a") == 0 && strcmp(names[1], "db") == 0);
    cat_strv_free(names, n);
    CHECK_OK(cat_namespace_list(c, "a", &names, &n, &err), &err);
    CHECK(n == 1 && strcmp(names[0], "a.b") == 0);
    cat_strv_free(names, n);
    CHECK_OK(cat_namespace_properties(c, "db", &names, &vals, &n, &err), &err);
    CHECK(n == 1 && strcmp(names[0], "exists") == 0 && strcmp(vals[0], "true") == 0);
    cat_strv_free(names, n);
    cat_strv_free(vals, n);
    const char *rm[] = { "owner" };
    CHECK_OK(cat_namespace_update(c, "a.b", k, v, 2, rm, 1, &err), &err);
    CHECK_OK(cat_namespace_properties(c, "a.b", &names, &vals, &n, &err), &err);
    CHECK(n == 2 && strcmp(names[0], "location") == 0 && strcmp(names[1], "owner") == 0);
    cat_strv_free(names, n);
    cat_strv_free(vals, n);

    /* Tables. */
    char *loc = NULL;
    CHECK_OK(cat_default_location(c, "db.t1", &loc, &err), &err);
    char want[1300];
    snprintf(want, sizeof want, "%s/db/t1", wh);
    CHECK(loc && strcmp(loc, want) == 0);
    char *l2 = NULL;
    CHECK_OK(cat_default_location(c, "a.b.t", &l2, &err), &err);
    snprintf(want, sizeof want, "%s/elsewhere/t", dir);
    CHECK(l2 && strcmp(l2, want) == 0);
    hs_free(l2);

    char *m1 = meta_json(loc, 1, NULL);
    CHECK(cat_create_json(c, "nons.t1", m1, strlen(m1), NULL, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    CHECK(cat_create_json(c, "t1", m1, strlen(m1), NULL, &err) == HS_INVALID);
    hs_err_clear(&err);
    char *mloc = NULL;
    CHECK_OK(cat_create_json(c, "db.t1", m1, strlen(m1), &mloc, &err), &err);
    CHECK(mloc && strstr(mloc, "/db/t1/metadata/00000-") && ends_with(mloc, ".metadata.json"));
    CHECK(mloc && strlen(strrchr(mloc, '/') + 1) == strlen("00000-") + 36 +
                                                      strlen(".metadata.json"));
    CHECK(cat_create_json(c, "db.t1", m1, strlen(m1), NULL, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    CHECK(load_n(c, "db.t1", NULL) == 1);
    CHECK(cat_namespace_drop(c, "db", &err) == HS_INVALID);
    hs_err_clear(&err);

    CHECK_OK(cat_list(c, "db", &names, &n, &err), &err);
    CHECK(n == 1 && strcmp(names[0], "t1") == 0);
    cat_strv_free(names, n);
    CHECK(cat_list(c, "zz", &names, &n, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);

    /* Rename across namespaces; target namespace must exist. */
    CHECK(cat_rename(c, "db.t1", "nons.t1", &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    CHECK_OK(cat_rename(c, "db.t1", "a.b.renamed", &err), &err);
    CHECK(load_n(c, "a.b.renamed", NULL) == 1);
    bool ex = true;
    CHECK_OK(cat_exists(c, "db.t1", &ex, &err), &err);
    CHECK(!ex);
    CHECK(cat_rename(c, "db.t1", "a.b.x", &err) == HS_NOT_FOUND);
    hs_err_clear(&err);

    /* Drop (with purge: the table directory goes). */
    CHECK_OK(cat_drop(c, "a.b.renamed", true, &err), &err);
    struct stat st;
    CHECK(stat(loc, &st) != 0);
    CHECK(cat_drop(c, "a.b.renamed", false, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    CHECK_OK(cat_namespace_drop(c, "db", &err), &err);
    CHECK_OK(cat_namespace_list(c, NULL, &names, &n, &err), &err);
    CHECK(n == 1 && strcmp(names[0], "a") == 0);
    cat_strv_free(names, n);

    /* Path catalogs have no namespaces. */
    cat_catalog *p;
    CHECK_OK(cat_path_open(dir, &p, &err), &err);
    CHECK(cat_namespace_create(p, "x", NULL, NULL, 0, &err) == HS_UNSUPPORTED);
    hs_err_clear(&err);
    cat_free(p);

    hs_free(loc);
    hs_free(mloc);
    free(m1);
    cat_free(c);
}

static void test_sql_cas(void)
{
    const char *dir = scratch("sql2");
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    hs_error err = { 0 };
    cat_catalog *a, *b;
    CHECK_OK(cat_sql_open(db, "default", NULL, &a, &err), &err);
    CHECK_OK(cat_sql_open(db, "default", NULL, &b, &err), &err);
    CHECK_OK(cat_namespace_create(a, "ns", NULL, NULL, 0, &err), &err);
    char *loc = NULL;
    CHECK_OK(cat_default_location(a, "ns.t", &loc, &err), &err);
    char want[1300];
    snprintf(want, sizeof want, "%s/ns/t", dir);   /* warehouse defaults to the db's dir */
    CHECK(loc && strcmp(loc, want) == 0);
    char *m1 = meta_json(loc, 1, NULL), *ma = meta_json(loc, 10, NULL),
         *mb = meta_json(loc, 20, NULL);
    CHECK_OK(cat_create_json(a, "ns.t", m1, strlen(m1), NULL, &err), &err);
    char *base_a = NULL, *base_b = NULL, *new_a = NULL;
    CHECK(load_n(a, "ns.t", &base_a) == 1);
    CHECK(load_n(b, "ns.t", &base_b) == 1);
    CHECK_OK(cat_commit_json(a, "ns.t", base_a, ma, strlen(ma), &new_a, &err), &err);
    CHECK(new_a && strstr(new_a, "/metadata/00001-") != NULL);
    CHECK(cat_commit_json(b, "ns.t", base_b, mb, strlen(mb), NULL, &err) == HS_CONFLICT);
    CHECK(strstr(err.msg, "concurrent commit") != NULL);
    hs_err_clear(&err);
    CHECK(load_n(b, "ns.t", NULL) == 10);
    /* The loser's metadata file was removed: only 00000 and 00001 remain. */
    char md[1400];
    snprintf(md, sizeof md, "%s/metadata", loc);
    char **names = NULL;
    size_t n = 0;
    CHECK_OK(cat_io_list_dir(md, &names, &n, &err), &err);
    CHECK(n == 2);
    cat_strv_free(names, n);

    /* Another catalog name in the same file does not see the table. */
    cat_catalog *other;
    CHECK_OK(cat_sql_open(db, "other", NULL, &other, &err), &err);
    bool ex = true;
    CHECK_OK(cat_exists(other, "ns.t", &ex, &err), &err);
    CHECK(!ex);
    cat_free(other);

    /* A corrupt database file is reported as such. */
    char bad[1300];
    snprintf(bad, sizeof bad, "%s/bad.db", dir);
    write_text(bad, "this is not a sqlite database, not at all, not even close to one....");
    cat_catalog *bc = NULL;
    CHECK(cat_sql_open(bad, "default", NULL, &bc, &err) == HS_CORRUPT);
    CHECK(bc == NULL);
    hs_err_clear(&err);

    hs_free(loc);
    hs_free(base_a);
    hs_free(base_b);
    hs_free(new_a);
    free(m1);
    free(ma);
    free(mb);
    cat_free(a);
    cat_free(b);
}

static void test_sql_fault_every_step(void)
{
    const char *dir = scratch("sql3");
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_sql_open(db, "default", NULL, &c, &err), &err);
    CHECK_OK(cat_namespace_create(c, "ns", NULL, NULL, 0, &err), &err);
    int failures = 0, k;
    for (k = 1; k < 50; k++) {
        char ident[64];
        snprintf(ident, sizeof ident, "ns.t%d", k);
        char *loc = NULL;
        CHECK_OK(cat_default_location(c, ident, &loc, &err), &err);
        char *m1 = meta_json(loc, 1, NULL), *m2 = meta_json(loc, 2, NULL);
        CHECK_OK(cat_create_json(c, ident, m1, strlen(m1), NULL, &err), &err);
        char *base = NULL;
        CHECK(load_n(c, ident, &base) == 1);
        cat_set_io_fault(k);
        hs_status s = cat_commit_json(c, ident, base, m2, strlen(m2), NULL, &err);
        int64_t passed = cat_io_fault_count();
        cat_set_io_fault(0);
        int n = load_n(c, ident, NULL);
        if (s == HS_OK) {
            CHECK(n == 2);
        } else {
            failures++;
            CHECK(n == 1);
        }
        hs_err_clear(&err);
        char md[1400];
        snprintf(md, sizeof md, "%s/metadata", loc);
        CHECK(metadata_files_complete(md, m1, m2));
        free(m1);
        free(m2);
        hs_free(loc);
        hs_free(base);
        if (passed < k)
            break;
    }
    CHECK(failures >= 3);
    fprintf(stderr, "  sql commit: %d fault positions tried, %d failed\n", k, failures);
    cat_free(c);
}

/* ---- retry loop -------------------------------------------------------------------- */

typedef struct append_ctx {
    const char *token;   /* appended to property "log" */
    cat_catalog *racer;  /* when set: commits a competing change inside the callback */
    const char *ident;
    int calls;
    bool refuse;         /* answer HS_CONFLICT (the change cannot be rebased) */
} append_ctx;

static hs_status append_cb(void *vctx, const char *base_json, size_t base_len,
                           const char *base_location, hs_buf *new_json, hs_error *err)
{
    append_ctx *a = vctx;
    a->calls++;
    if (a->refuse)
        return hs_err_set(err, HS_CONFLICT, "overwrite of a file that was deleted");
    json_t *root = json_loadb(base_json, base_len, 0, NULL);
    if (!root)
        return hs_err_set(err, HS_CORRUPT, "bad base");
    json_t *props = json_object_get(root, "properties");
    json_t *log = json_object_get(props, "log");
    char buf[16384];
    snprintf(buf, sizeof buf, "%s%s%s", json_is_string(log) ? json_string_value(log) : "",
             json_is_string(log) ? "," : "", a->token);
    json_object_set_new(props, "log", json_string(buf));
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    hs_status st = hs_buf_puts(new_json, text);
    free(text);
    if (st == HS_OK && a->racer) {
        /* Someone else commits first, every time. */
        hs_buf cur = { 0 };
        char *loc = NULL;
        hs_error e2 = { 0 };
        if (cat_load_json(a->racer, a->ident, &cur, &loc, &e2) == HS_OK)
            (void)!cat_commit_json(a->racer, a->ident, loc, (const char *)cur.data, cur.len,
                                   NULL, &e2);
        hs_buf_free(&cur);
        hs_free(loc);
    }
    return st;
}

static void test_retry_gives_up_and_refuses(void)
{
    const char *root = scratch("retry");
    hs_error err = { 0 };
    cat_catalog *c, *racer;
    CHECK_OK(cat_path_open(root, &c, &err), &err);
    CHECK_OK(cat_path_open(root, &racer, &err), &err);
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/t", root);
    char *m1 = meta_json(tdir, 1, "\"commit.retry.num-retries\":\"3\","
                                  "\"commit.retry.min-wait-ms\":\"1\","
                                  "\"commit.retry.max-wait-ms\":\"4\"");
    CHECK_OK(cat_create_json(c, "t", m1, strlen(m1), NULL, &err), &err);

    append_ctx a = { "x", racer, "t", 0, false };
    int attempts = 0;
    hs_status s = cat_commit_json_with_retry(c, "t", append_cb, &a, NULL, &attempts, &err);
    CHECK(s == HS_CONFLICT);
    CHECK(attempts == 4 && a.calls == 4);
    CHECK(strstr(err.msg, "gave up after 4 attempts") != NULL);
    hs_err_clear(&err);

    append_ctx r = { "y", NULL, "t", 0, true };
    s = cat_commit_json_with_retry(c, "t", append_cb, &r, NULL, &attempts, &err);
    CHECK(s == HS_CONFLICT && r.calls == 1);
    CHECK(strstr(err.msg, "cannot be applied") != NULL);
    CHECK(strstr(err.msg, "deleted") != NULL);
    hs_err_clear(&err);

    append_ctx ok = { "z", NULL, "t", 0, false };
    char *nl = NULL;
    CHECK_OK(cat_commit_json_with_retry(c, "t", append_cb, &ok, &nl, &attempts, &err), &err);
    CHECK(attempts == 1 && nl && ends_with(nl, "v6.metadata.json"));
    hs_free(nl);

    cat_retry_policy p;
    cat_retry_policy_from_json("{}", 2, &p);
    CHECK(p.num_retries == 10 && p.min_wait_ms == 100 && p.max_wait_ms == 60000);
    free(m1);
    cat_free(c);
    cat_free(racer);
}

/* ---- identity: drop, recreate, races ------------------------------------------------- */

/* meta_json with table-uuid replaced by uuid (36 characters). */
static char *meta_json_uuid(const char *loc, int n, const char *uuid, const char *extra)
{
    char *s = meta_json(loc, n, extra);
    char *p = strstr(s, "9c12d441-03fe-4693-9a96-a0705ddf69c1");
    if (p)
        memcpy(p, uuid, 36);
    return s;
}

#define UUID_A "aaaaaaaa-0000-4000-8000-000000000001"
#define UUID_B "bbbbbbbb-0000-4000-8000-000000000002"

static hs_status set_prop_cb(void *vctx, const ice_table_metadata *base, const char *loc,
                             ice_table_metadata *next, hs_error *err)
{
    int *calls = vctx;
    ++*calls;
    HS_TRY(ice_metadata_copy(base, next, err));
    return ice_metadata_set_property(next, "written-by", "old-handle", err);
}

/* A writer that loaded table A, then the table was dropped and created again
 * (B) at the same path or name: its commit must not land on B, neither
 * directly (path tables: same v<N> name as its base) nor by rebasing onto B
 * in the retry loop. */
static void recreate_case(cat_catalog *c, const char *ident, const char *loc, bool path)
{
    hs_error err = { 0 };
    char *ma = meta_json_uuid(loc, 1, UUID_A, "\"commit.retry.min-wait-ms\":\"1\"");
    char *mb = meta_json_uuid(loc, 7, UUID_B, "\"commit.retry.min-wait-ms\":\"1\"");
    char *ma2 = meta_json_uuid(loc, 2, UUID_A, NULL);
    CHECK_OK(cat_create_json(c, ident, ma, strlen(ma), NULL, &err), &err);
    ice_table_metadata held = { 0 };
    char *held_loc = NULL;
    CHECK_OK(cat_load(c, ident, &held, &held_loc, &err), &err);
    CHECK_OK(cat_drop(c, ident, false, &err), &err);
    CHECK_OK(cat_create_json(c, ident, mb, strlen(mb), NULL, &err), &err);

    /* 1. plain commit on the stale base */
    hs_status s = cat_commit_json(c, ident, held_loc, ma2, strlen(ma2), NULL, &err);
    CHECK(s == HS_CONFLICT);
    if (path)
        CHECK(strstr(err.msg, "dropped and created again") != NULL);
    hs_err_clear(&err);
    CHECK(load_n(c, ident, NULL) == 7);

    /* 2. the retry loop with the held (cached) base: refuses, no rebase on B */
    int calls = 0;
    s = cat_commit_with_retry_ex(c, ident, &held, held_loc, set_prop_cb, &calls, NULL, NULL,
                                 NULL, &err);
    CHECK(s == HS_CONFLICT);
    CHECK(strstr(err.msg, "dropped and created again") != NULL);
    hs_err_clear(&err);
    ice_table_metadata now = { 0 };
    char *now_loc = NULL;
    CHECK_OK(cat_load(c, ident, &now, &now_loc, &err), &err);
    CHECK(strcmp(now.table_uuid, UUID_B) == 0);
    CHECK(ice_kv_get(&now.properties, "written-by") == NULL);
    CHECK(ice_kv_get(&now.properties, "n") && strcmp(ice_kv_get(&now.properties, "n"), "7") == 0);

    /* 3. B's own writers still commit */
    calls = 0;
    CHECK_OK(cat_commit_with_retry_ex(c, ident, &now, now_loc, set_prop_cb, &calls, NULL, NULL,
                                      NULL, &err), &err);
    ice_metadata_free(&now);
    hs_free(now_loc);
    ice_metadata_free(&held);
    hs_free(held_loc);
    free(ma);
    free(mb);
    free(ma2);
}

static void test_path_recreate_same_path(void)
{
    const char *root = scratch("recreate");
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_path_open(root, &c, &err), &err);
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/t", root);
    recreate_case(c, "t", tdir, true);
    /* a drop without purge removes metadata/ entirely, keeps the directory */
    char md[1300];
    snprintf(md, sizeof md, "%s/data", tdir);
    mkdir(md, 0755);
    CHECK_OK(cat_drop(c, "t", false, &err), &err);
    struct stat st;
    snprintf(md, sizeof md, "%s/metadata", tdir);
    CHECK(stat(md, &st) != 0);
    snprintf(md, sizeof md, "%s/data", tdir);
    CHECK(stat(md, &st) == 0);
    CHECK(cat_drop(c, "t", false, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    cat_free(c);
}

static void test_sql_recreate_same_name(void)
{
    const char *dir = scratch("sqlrecreate");
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_sql_open(db, "default", NULL, &c, &err), &err);
    CHECK_OK(cat_namespace_create(c, "ns", NULL, NULL, 0, &err), &err);
    char *loc = NULL;
    CHECK_OK(cat_default_location(c, "ns.t", &loc, &err), &err);
    recreate_case(c, "ns.t", loc, false);
    hs_free(loc);
    cat_free(c);
}

/* A drop (another process) that runs between a commit's checks and its
 * atomic step: the commit lock makes the drop wait for the commit, so the
 * table ends dropped - never resurrected at v<N+1> without its history. */
typedef struct drop_race {
    pid_t parent, child;
    const char *root;
    const char *step;   /* fault-point name that triggers the drop */
    bool fired;
} drop_race;

static void drop_in_child(const char *what, void *vctx)
{
    drop_race *r = vctx;
    if (getpid() != r->parent || r->fired || !strstr(what, r->step))
        return;
    r->fired = true;
    r->child = fork();
    if (r->child == 0) {
        /* the inherited descriptors include the parent's commit lock (flock
         * belongs to the open file description): a separate process would
         * not have it */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        cat_set_io_hook(NULL, NULL);
        cat_catalog *c2;
        hs_error e = { 0 };
        int rc = cat_path_open(r->root, &c2, &e) == HS_OK && cat_drop(c2, "t", false, &e) == HS_OK
                     ? 0 : 1;
        _exit(rc);
    }
    /* Let the drop run (it finishes at once without the lock, or waits for
     * it): up to 2 s, only the upper limit of the race window. */
    for (int i = 0; i < 200; i++) {
        int status;
        if (waitpid(r->child, &status, WNOHANG) != 0) {
            r->child = -status - 1;   /* reaped: remember the status */
            return;
        }
        usleep(10000);
    }
}

static void test_path_drop_races_commit(void)
{
    const char *root = scratch("droprace");
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_path_open(root, &c, &err), &err);
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/t", root);
    char *m1 = meta_json(tdir, 1, NULL), *m2 = meta_json(tdir, 2, NULL);
    CHECK_OK(cat_create_json(c, "t", m1, strlen(m1), NULL, &err), &err);
    char *base = NULL;
    CHECK(load_n(c, "t", &base) == 1);
    drop_race r = { getpid(), 0, root, "v2.metadata.json", false };
    cat_set_io_hook(drop_in_child, &r);
    hs_status s = cat_commit_json(c, "t", base, m2, strlen(m2), NULL, &err);
    cat_set_io_hook(NULL, NULL);
    REQUIRE(r.fired);
    int status = 0;
    if (r.child > 0)
        waitpid(r.child, &status, 0);
    else
        status = -(r.child + 1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);   /* the drop succeeded */
    /* Commit first then drop (OK), or the drop first and the commit failed:
     * either way the table is gone afterwards, with no v<N> left. */
    CHECK(s == HS_OK || s == HS_NOT_FOUND);
    hs_err_clear(&err);
    bool ex = true;
    CHECK_OK(cat_exists(c, "t", &ex, &err), &err);
    CHECK(!ex);
    hs_free(base);
    free(m1);
    free(m2);
    cat_free(c);
}

/* hyperstream.commit.fsync=true: every fsync of a commit (the new metadata
 * file, its directory) that fails fails the commit, and the table stays at
 * its base; io.c's sync fault counts the fsyncs. */
static void test_fsync_failure_fails_commit(void)
{
    const char *root = scratch("fsync");
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_path_open(root, &c, &err), &err);
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/t", root);
    const char *props = "\"hyperstream.commit.fsync\":\"true\"";
    char *m1 = meta_json(tdir, 1, props);
    CHECK_OK(cat_create_json(c, "t", m1, strlen(m1), NULL, &err), &err);
    int failed = 0;
    for (int k = 1; k < 20; k++) {
        char *base = NULL;
        int n = load_n(c, "t", &base);
        char *mn = meta_json(tdir, n + 1, props);
        hs_io_set_sync_fault(k);
        hs_status s = cat_commit_json(c, "t", base, mn, strlen(mn), NULL, &err);
        hs_io_set_sync_fault(0);
        free(mn);
        hs_free(base);
        if (s == HS_OK) {
            CHECK(load_n(c, "t", NULL) == n + 1);
            break;
        }
        failed++;
        CHECK(s == HS_IO);
        CHECK(strstr(err.msg, "fsync") != NULL);
        hs_err_clear(&err);
        /* still at the base, and no v<N+1> file left behind */
        CHECK(load_n(c, "t", NULL) == n);
        char vnext[1300];
        snprintf(vnext, sizeof vnext, "%s/metadata/v%d.metadata.json", tdir, n + 1);
        struct stat st;
        CHECK(stat(vnext, &st) != 0);
    }
    CHECK(failed == 2);   /* the file's fsync and the directory's */
    free(m1);
    cat_free(c);
}

/* SQLITE_BUSY past the busy timeout is a conflict the commit loop retries,
 * not an I/O error. */
typedef struct busy_holder {
    sqlite3 *db;
    int hold_ms;
} busy_holder;

static void *release_later(void *v)
{
    busy_holder *h = v;
    usleep((useconds_t)h->hold_ms * 1000);
    sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
    return NULL;
}

static void test_sql_busy_is_conflict(void)
{
    const char *dir = scratch("sqlbusy");
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_sql_open(db, "default", NULL, &c, &err), &err);
    CHECK_OK(cat_namespace_create(c, "ns", NULL, NULL, 0, &err), &err);
    char *loc = NULL;
    CHECK_OK(cat_default_location(c, "ns.t", &loc, &err), &err);
    char *m1 = meta_json(loc, 1, "\"commit.retry.num-retries\":\"1000\","
                                 "\"commit.retry.min-wait-ms\":\"5\","
                                 "\"commit.retry.max-wait-ms\":\"20\"");
    CHECK_OK(cat_create_json(c, "ns.t", m1, strlen(m1), NULL, &err), &err);
    char *base = NULL;
    CHECK(load_n(c, "ns.t", &base) == 1);
    cat_sql_set_busy_timeout(c, 10);

    sqlite3 *other = NULL;
    REQUIRE(sqlite3_open(db, &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL) == SQLITE_OK);
    char *m2 = meta_json(loc, 2, NULL);
    hs_status s = cat_commit_json(c, "ns.t", base, m2, strlen(m2), NULL, &err);
    CHECK(s == HS_CONFLICT);
    CHECK(strstr(err.msg, "locked") != NULL);
    hs_err_clear(&err);
    /* a create that meets the lock is a conflict too, not "already exists" */
    char *m3 = meta_json(loc, 3, NULL);
    CHECK(cat_create_json(c, "ns.t2", m3, strlen(m3), NULL, &err) == HS_CONFLICT);
    CHECK(strstr(err.msg, "locked") != NULL && strstr(err.msg, "already exists") == NULL);
    hs_err_clear(&err);
    free(m3);

    /* the loop waits it out: the lock is released after 150 ms */
    busy_holder h = { other, 150 };
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, release_later, &h) == 0);
    append_ctx a = { "busy", NULL, "ns.t", 0, false };
    int attempts = 0;
    s = cat_commit_json_with_retry(c, "ns.t", append_cb, &a, NULL, &attempts, &err);
    pthread_join(th, NULL);
    CHECK(s == HS_OK);
    if (s != HS_OK)
        fprintf(stderr, "  %s\n", err.msg);
    hs_err_clear(&err);
    CHECK(attempts >= 1);
    sqlite3_close(other);
    hs_free(base);
    hs_free(loc);
    free(m1);
    free(m2);
    cat_free(c);
}

/* ---- model wrappers --------------------------------------------------------------------- */

typedef struct model_ctx {
    const char *token;   /* appended to property "log" */
    int calls;
} model_ctx;

static hs_status model_append_cb(void *vctx, const ice_table_metadata *base,
                                 const char *base_location, ice_table_metadata *next,
                                 hs_error *err)
{
    model_ctx *m = vctx;
    m->calls++;
    HS_TRY(ice_metadata_copy(base, next, err));
    const char *log = ice_kv_get(&next->properties, "log");
    char buf[16384];
    snprintf(buf, sizeof buf, "%s%s%s", log ? log : "", log ? "," : "", m->token);
    return ice_metadata_set_property(next, "log", buf, err);
}

static void model_flow(cat_catalog *c, const char *ident)
{
    hs_error err = { 0 };
    char *loc = NULL;
    CHECK_OK(cat_default_location(c, ident, &loc, &err), &err);
    char *j = meta_json(loc, 1, NULL);
    ice_table_metadata m = { 0 };
    CHECK_OK(ice_metadata_parse(j, strlen(j), &m, &err), &err);
    char *l1 = NULL, *l2 = NULL, *l3 = NULL, *cur = NULL;
    CHECK_OK(cat_create(c, ident, &m, &l1, &err), &err);
    ice_metadata_free(&m);

    CHECK_OK(cat_load(c, ident, &m, &cur, &err), &err);
    CHECK(cur && l1 && strcmp(cur, l1) == 0);
    const char *n = ice_kv_get(&m.properties, "n");
    CHECK(n && strcmp(n, "1") == 0);
    CHECK(m.last_updated_ms == 1001);

    /* Retry helper with a model callback: the metadata log gains the base. */
    model_ctx mc = { "a", 0 };
    int attempts = 0;
    CHECK_OK(cat_commit_with_retry(c, ident, model_append_cb, &mc, &l2, &attempts, &err), &err);
    CHECK(attempts == 1 && mc.calls == 1);
    ice_table_metadata m2 = { 0 };
    char *cur2 = NULL;
    CHECK_OK(cat_load(c, ident, &m2, &cur2, &err), &err);
    CHECK(cur2 && l2 && strcmp(cur2, l2) == 0);
    const char *lg = ice_kv_get(&m2.properties, "log");
    CHECK(lg && strcmp(lg, "a") == 0);
    CHECK(m2.n_metadata_log == 1 && strcmp(m2.metadata_log[0].file, l1) == 0 &&
          m2.metadata_log[0].timestamp_ms == 1001);

    /* cat_commit from the current base adds its entry too; a stale base conflicts. */
    CHECK_OK(ice_metadata_set_property(&m2, "n", "3", &err), &err);
    CHECK_OK(cat_commit(c, ident, cur2, &m2, &l3, &err), &err);
    ice_table_metadata m3 = { 0 };
    CHECK_OK(cat_load(c, ident, &m3, NULL, &err), &err);
    CHECK(m3.n_metadata_log == 2 && strcmp(m3.metadata_log[1].file, l2) == 0);
    CHECK(cat_commit(c, ident, cur2, &m2, NULL, &err) == HS_CONFLICT);
    hs_err_clear(&err);

    ice_metadata_free(&m);
    ice_metadata_free(&m2);
    ice_metadata_free(&m3);
    hs_free(l1);
    hs_free(l2);
    hs_free(l3);
    hs_free(cur);
    hs_free(cur2);
    hs_free(loc);
    free(j);
}

static void test_model_wrappers(void)
{
    const char *dir = scratch("model");
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    hs_error err = { 0 };
    cat_catalog *p, *s;
    CHECK_OK(cat_path_open(dir, &p, &err), &err);
    CHECK_OK(cat_sql_open(db, "default", NULL, &s, &err), &err);
    CHECK_OK(cat_namespace_create(s, "ns", NULL, NULL, 0, &err), &err);
    model_flow(p, "pt");
    model_flow(s, "ns.st");

    /* Bad metadata: errors name the file and what is wrong. */
    char tdir[1200], f[1300];
    snprintf(tdir, sizeof tdir, "%s/pt", dir);
    snprintf(f, sizeof f, "%s/metadata/v4.metadata.json", tdir);
    write_text(f, "{\"format-version\": 2, \"location\": ");
    ice_table_metadata m = { 0 };
    hs_status st = cat_load(p, "pt", &m, NULL, &err);
    CHECK(st == HS_CORRUPT);
    CHECK(strstr(err.msg, "v4.metadata.json") != NULL);
    hs_err_clear(&err);
    char *v5 = meta_json(tdir, 5, NULL);
    char *fv = strstr(v5, "\"format-version\":2");
    REQUIRE(fv);
    fv[strlen("\"format-version\":")] = '4';
    snprintf(f, sizeof f, "%s/metadata/v5.metadata.json", tdir);
    write_text(f, v5);
    st = cat_load(p, "pt", &m, NULL, &err);
    CHECK(st == HS_UNSUPPORTED);
    CHECK(strstr(err.msg, "v5.metadata.json") != NULL && strstr(err.msg, "version") != NULL);
    hs_err_clear(&err);
    free(v5);
    cat_free(p);
    cat_free(s);
}

/* ---- concurrency: forked writers ------------------------------------------------------- */

#define N_PROCS 4
#define N_COMMITS 50

/* Path writers go through the model retry loop, SQL writers through the JSON one. */
static int child_writer(bool sql, const char *where, const char *ident, int proc)
{
    hs_error err = { 0 };
    cat_catalog *c;
    hs_status s = sql ? cat_sql_open(where, "default", NULL, &c, &err)
                      : cat_path_open(where, &c, &err);
    if (s != HS_OK) {
        fprintf(stderr, "child %d: open: %s\n", proc, err.msg);
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < N_COMMITS && rc == 0; i++) {
        char token[32];
        snprintf(token, sizeof token, "p%dc%d", proc, i);
        append_ctx a = { token, NULL, ident, 0, false };
        model_ctx m = { token, 0 };
        hs_status cs = sql ? cat_commit_json_with_retry(c, ident, append_cb, &a, NULL, NULL, &err)
                           : cat_commit_with_retry(c, ident, model_append_cb, &m, NULL, NULL,
                                                   &err);
        if (cs != HS_OK) {
            fprintf(stderr, "child %d commit %d: %s\n", proc, i, err.msg);
            rc = 1;
        }
    }
    cat_free(c);
    return rc;
}

static void check_all_commits(cat_catalog *c, const char *ident)
{
    hs_buf b = { 0 };
    hs_error err = { 0 };
    CHECK_OK(cat_load_json(c, ident, &b, NULL, &err), &err);
    json_t *root = json_loadb((const char *)b.data, b.len, 0, NULL);
    json_t *log = json_object_get(json_object_get(root, "properties"), "log");
    REQUIRE(json_is_string(log));
    const char *s = json_string_value(log);
    int seen[N_PROCS][N_COMMITS] = { { 0 } };
    int total = 0, bad = 0;
    for (const char *p = s; *p;) {
        int pr, ci, used = 0;
        if (sscanf(p, "p%dc%d%n", &pr, &ci, &used) == 2 && pr >= 0 && pr < N_PROCS && ci >= 0 &&
            ci < N_COMMITS) {
            seen[pr][ci]++;
            total++;
        } else {
            bad++;
            break;
        }
        p += used;
        if (*p == ',')
            p++;
    }
    CHECK(bad == 0);
    CHECK(total == N_PROCS * N_COMMITS);
    for (int i = 0; i < N_PROCS; i++)
        for (int j = 0; j < N_COMMITS; j++)
            CHECK(seen[i][j] == 1);
    /* Each writer's commits appear in its own order. */
    json_decref(root);
    hs_buf_free(&b);
}

static void run_writers(bool sql, const char *where, const char *ident)
{
    pid_t pids[N_PROCS];
    for (int i = 0; i < N_PROCS; i++) {
        pids[i] = fork();
        if (pids[i] == 0)
            _exit(child_writer(sql, where, ident, i));
    }
    for (int i = 0; i < N_PROCS; i++) {
        int status = 0;
        CHECK(pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i]);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

static const char *FAST_RETRY = "\"commit.retry.num-retries\":\"1000\","
                                "\"commit.retry.min-wait-ms\":\"1\","
                                "\"commit.retry.max-wait-ms\":\"20\"";

static void test_concurrent_path_commits(void)
{
    const char *root = scratch("conc-path");
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_path_open(root, &c, &err), &err);
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/t", root);
    char *m1 = meta_json(tdir, 1, FAST_RETRY);
    CHECK_OK(cat_create_json(c, "t", m1, strlen(m1), NULL, &err), &err);
    char rootcopy[1024];
    snprintf(rootcopy, sizeof rootcopy, "%s", root);
    run_writers(false, rootcopy, "t");
    check_all_commits(c, "t");
    char *loc = NULL;
    load_n(c, "t", &loc);
    CHECK(loc && ends_with(loc, "/v201.metadata.json"));
    hs_free(loc);
    free(m1);
    cat_free(c);
}

static void test_concurrent_sql_commits(void)
{
    const char *dir = scratch("conc-sql");
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_sql_open(db, "default", NULL, &c, &err), &err);
    CHECK_OK(cat_namespace_create(c, "ns", NULL, NULL, 0, &err), &err);
    char *loc = NULL;
    CHECK_OK(cat_default_location(c, "ns.t", &loc, &err), &err);
    char *m1 = meta_json(loc, 1, FAST_RETRY);
    CHECK_OK(cat_create_json(c, "ns.t", m1, strlen(m1), NULL, &err), &err);
    run_writers(true, db, "ns.t");
    check_all_commits(c, "ns.t");
    char *ml = NULL;
    load_n(c, "ns.t", &ml);
    CHECK(ml && strstr(ml, "/metadata/00200-") != NULL);
    hs_free(ml);
    hs_free(loc);
    free(m1);
    cat_free(c);
}

/* register points the row at the given file; views are rows of type VIEW;
 * path catalogs refuse register and have no views. */
static void test_sql_register_and_views(void)
{
    const char *dir = scratch("sqlreg");
    char db[1200], wh[1200], file[1300], tloc[1300];
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    snprintf(wh, sizeof wh, "%s/warehouse", dir);
    snprintf(tloc, sizeof tloc, "%s/ext", dir);
    snprintf(file, sizeof file, "%s/ext/00007-x.metadata.json", dir);
    mkdir(tloc, 0755);
    char *m = meta_json(tloc, 7, NULL);
    write_text(file, m);
    free(m);
    hs_error err = { 0 };
    cat_catalog *c;
    CHECK_OK(cat_sql_open(db, "default", wh, &c, &err), &err);
    CHECK(cat_register(c, "db.t", file, false, &err) == HS_NOT_FOUND);   /* no namespace */
    hs_err_clear(&err);
    CHECK_OK(cat_namespace_create(c, "db", NULL, NULL, 0, &err), &err);
    CHECK_OK(cat_register(c, "db.t", file, false, &err), &err);
    char *loc = NULL;
    CHECK(load_n(c, "db.t", &loc) == 7 && strcmp(loc, file) == 0);   /* that very file */
    hs_free(loc);
    CHECK(cat_register(c, "db.t", file, false, &err) == HS_CONFLICT);
    hs_err_clear(&err);
    char bad[1300];
    snprintf(bad, sizeof bad, "%s/ext/nope.metadata.json", dir);
    CHECK(cat_register(c, "db.u", bad, false, &err) == HS_INVALID);
    hs_err_clear(&err);
    write_text(bad, "{\"not\": \"metadata\"}");
    CHECK(cat_register(c, "db.u", bad, false, &err) == HS_INVALID);
    CHECK(strstr(err.msg, "not Iceberg table metadata") != NULL);
    hs_err_clear(&err);
    /* overwrite swaps the pointer; a commit then continues from it */
    char file2[1300];
    snprintf(file2, sizeof file2, "%s/ext/00008-y.metadata.json", dir);
    m = meta_json(tloc, 8, NULL);
    write_text(file2, m);
    free(m);
    CHECK_OK(cat_register(c, "db.t", file2, true, &err), &err);
    CHECK(load_n(c, "db.t", &loc) == 8 && strcmp(loc, file2) == 0);
    hs_free(loc);

    char **names = NULL;
    size_t n = 9;
    CHECK_OK(cat_list_views(c, "db", &names, &n, &err), &err);
    CHECK(n == 0);
    cat_strv_free(names, n);
    sqlite3 *h = NULL;
    REQUIRE(sqlite3_open(db, &h) == SQLITE_OK);
    REQUIRE(sqlite3_exec(h, "INSERT INTO iceberg_tables (catalog_name, table_namespace, "
                            "table_name, metadata_location, iceberg_type) VALUES ('default', "
                            "'db', 'v2', '/x', 'VIEW'), ('default', 'db', 'v1', '/y', 'VIEW'), "
                            "('other', 'db', 'v3', '/z', 'VIEW')", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK_OK(cat_list_views(c, "db", &names, &n, &err), &err);
    CHECK(n == 2 && strcmp(names[0], "v1") == 0 && strcmp(names[1], "v2") == 0);
    cat_strv_free(names, n);
    CHECK_OK(cat_list(c, "db", &names, &n, &err), &err);   /* views are not tables */
    CHECK(n == 1 && strcmp(names[0], "t") == 0);
    cat_strv_free(names, n);
    CHECK(cat_list_views(c, "nope", &names, &n, &err) == HS_NOT_FOUND);
    hs_err_clear(&err);
    cat_free(c);

    cat_catalog *p;
    CHECK_OK(cat_path_open(dir, &p, &err), &err);
    CHECK(cat_register(p, "ext", file, false, &err) == HS_UNSUPPORTED);
    hs_err_clear(&err);
    CHECK_OK(cat_list_views(p, "", &names, &n, &err), &err);
    CHECK(n == 0);
    cat_strv_free(names, n);
    cat_free(p);
}

int main(void)
{
    HS_RUN(test_sql_register_and_views);
    HS_RUN(test_path_create_load_commit);
    HS_RUN(test_path_conflict);
    HS_RUN(test_path_hint_rules);
    HS_RUN(test_path_fault_every_step);
    HS_RUN(test_create_fault_every_step);
    HS_RUN(test_sql_crud);
    HS_RUN(test_sql_cas);
    HS_RUN(test_sql_fault_every_step);
    HS_RUN(test_retry_gives_up_and_refuses);
    HS_RUN(test_path_recreate_same_path);
    HS_RUN(test_sql_recreate_same_name);
    HS_RUN(test_path_drop_races_commit);
    HS_RUN(test_fsync_failure_fails_commit);
    HS_RUN(test_sql_busy_is_conflict);
    HS_RUN(test_model_wrappers);
    HS_RUN(test_concurrent_path_commits);
    HS_RUN(test_concurrent_sql_commits);
    return hs_test_summary();
}

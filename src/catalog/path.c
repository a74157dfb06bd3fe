/*
 * catalog/path.c - path tables: a directory (or file:// URI) is a table.
 *
 *   <table>/metadata/v1.metadata.json       first version (cat_create)
 *   <table>/metadata/v<N>.metadata.json     one file per commit, never rewritten
 *   <table>/metadata/version-hint.text      "<N>": decimal digits, no newline
 *
 * Finding the current version (find_current):
 *   1. read version-hint.text; if it holds only digits (pyiceberg uses it only
 *      when str.isnumeric(); we also skip surrounding whitespace, as Java
 *      does, and accept "v<N>.metadata.json", which pyiceberg also reads)
 *      and v<N>.metadata.json exists, probe v<N+1>, v<N+2>, ... and take
 *      the last one present (the hint may be stale: it is rewritten after the
 *      commit point, best effort);
 *   2. otherwise (hint missing, garbage, or naming a missing file) list
 *      metadata/ and take the highest v<N>.metadata.json.
 *   No metadata file at all: HS_NOT_FOUND.
 *
 * Commit from base v<N> (cat_commit_json), steps 1-3 under the commit lock
 * (metadata/.hs-commit.lock, flock; create and drop take it too, so a drop
 * never removes the base between step 1 and the link):
 *   1. check the base is v<N>.metadata.json of this table, exists, and has
 *      the table-uuid of the new metadata (else the table was dropped and
 *      created again: HS_CONFLICT, never a v<N+1> on another table's v<N>);
 *   2. create v<N+1>.metadata.json exclusively (io.c: write under a temporary
 *      name, then link(); EEXIST -> HS_CONFLICT: someone committed since the
 *      base was loaded).  This link is the commit point;
 *   3. rewrite version-hint.text (temporary file + rename, without fsync:
 *      it is advisory), best effort: a failure here does not fail the
 *      commit, readers probe upward and treat a garbage hint as absent.
 * Versions are created only as N+1 of an existing N, so they are contiguous
 * and "v<N+1> absent" means "v<N> is current".
 *
 * Temporary files ("v5.metadata.json.tmp-<hex>") left by a crash are ignored
 * by readers (only exact v<digits>.metadata.json names count).
 */
#include "catalog/catalog_int.h"
#include "base/mem.h"
#include "base/numfmt.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/stat.h>

typedef struct path_catalog {
    cat_catalog base;
    char *root;   /* owned, NULL = none */
} path_catalog;

/* Parses "v<digits>.metadata.json" -> version; false for anything else. */
static bool parse_version_name(const char *name, int64_t *version)
{
    if (name[0] != 'v' || !isdigit((unsigned char)name[1]))
        return false;
    int64_t v = 0;
    const char *p = name + 1;
    int digits = 0;
    while (isdigit((unsigned char)*p)) {
        if (++digits > 18)
            return false;
        v = v * 10 + (*p - '0');
        p++;
    }
    if (strcmp(p, ".metadata.json") != 0)
        return false;
    *version = v;
    return true;
}

/* The table directory for ident (caller frees). */
static hs_status resolve(path_catalog *pc, const char *ident, char **dir, hs_error *err)
{
    *dir = NULL;
    const char *p = cat_local_path(ident);
    bool object = hs_io_is_object_uri(p);
    if (!object && strstr(p, "://"))
        return hs_err_set(err, HS_UNSUPPORTED, "%s: path tables are local paths, file://, "
                          "s3:// or s3a:// URIs", ident);
    char *d = (!object && p[0] != '/' && pc->root) ? cat_path_join(pc->root, p) : hs_strdup(p);
    if (!d)
        return hs_err_nomem(err, strlen(p));
    size_t n = strlen(d);
    while (n > 1 && d[n - 1] == '/')
        d[--n] = 0;
    *dir = d;
    return HS_OK;
}

static char *version_path(const char *dir, int64_t v)
{
    return cat_sprintf("%s/metadata/v%" PRId64 ".metadata.json", dir, v);
}

static hs_status version_exists(const char *dir, int64_t v, bool *exists, hs_error *err)
{
    char *p = version_path(dir, v);
    if (!p)
        return hs_err_nomem(err, strlen(dir));
    hs_status st = cat_io_exists(p, exists, err);
    hs_free(p);
    return st;
}

/* Reads the hint: *version = N, or -1 when missing or not a number. */
static hs_status read_hint(const char *dir, int64_t *version, hs_error *err)
{
    *version = -1;
    char *p = cat_sprintf("%s/metadata/version-hint.text", dir);
    if (!p)
        return hs_err_nomem(err, strlen(dir));
    hs_buf b = { 0 };
    hs_error e2 = { 0 };
    hs_status st = cat_io_read_all(p, &b, &e2);
    hs_free(p);
    if (st == HS_NOT_FOUND) {
        hs_buf_free(&b);
        return HS_OK;
    }
    if (st != HS_OK) {
        hs_buf_free(&b);
        if (err && err->code == HS_OK)
            *err = e2;
        return st;
    }
    size_t i = 0, n = b.len;
    while (i < n && isspace(b.data[i]))
        i++;
    while (n > i && isspace(b.data[n - 1]))
        n--;
    /* pyiceberg also accepts "v<N>.metadata.json" (and Java writes only the
     * number): strip the decorations around N. */
    static const char sfx[] = ".metadata.json";
    if (n - i > sizeof sfx - 1 && memcmp(b.data + n - (sizeof sfx - 1), sfx, sizeof sfx - 1) == 0)
        n -= sizeof sfx - 1;
    if (n - i > 1 && b.data[i] == 'v')
        i++;
    int64_t v = 0;
    bool ok = n > i && n - i <= 18;
    for (size_t k = i; ok && k < n; k++) {
        if (!isdigit(b.data[k]))
            ok = false;
        else
            v = v * 10 + (b.data[k] - '0');
    }
    hs_buf_free(&b);
    if (ok)
        *version = v;
    return HS_OK;
}

/* Highest v<N>.metadata.json in <dir>/metadata, or HS_NOT_FOUND. */
static hs_status scan_versions(const char *dir, int64_t *version, hs_error *err)
{
    char *md = cat_sprintf("%s/metadata", dir);
    if (!md)
        return hs_err_nomem(err, strlen(dir));
    char **names = NULL;
    size_t n = 0;
    hs_status st = cat_io_list_dir(md, &names, &n, err);
    if (st == HS_NOT_FOUND) {
        hs_err_clear(err);
        st = hs_err_set(err, HS_NOT_FOUND, "%s: not a table (no metadata directory)", dir);
    }
    int64_t best = -1;
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        int64_t v;
        if (parse_version_name(names[i], &v) && v > best)
            best = v;
    }
    cat_strv_free(names, n);
    hs_free(md);
    if (st == HS_OK && best < 0)
        st = hs_err_set(err, HS_NOT_FOUND, "%s: not a table (no v<N>.metadata.json in "
                        "metadata/)", dir);
    *version = best;
    return st;
}

static hs_status find_current(const char *dir, int64_t *version, hs_error *err)
{
    int64_t v;
    HS_TRY(read_hint(dir, &v, err));
    bool exists = false;
    if (v >= 0)
        HS_TRY(version_exists(dir, v, &exists, err));
    /* Fix (test_table_faults, missing metadata): a hint naming v<N> while
     * v<N> is absent but v<N-1> is present means the current metadata file
     * was deleted (versions are contiguous and the hint is only written after
     * v<N> was linked).  Falling back to the listing would silently read the
     * older v<N-1> and let the next commit re-create v<N> over lost history,
     * so report it as Java's HadoopTableOperations does.  Hints far out of
     * range or garbage still fall back to the listing. */
    if (v > 1 && !exists) {
        bool prev = false;
        HS_TRY(version_exists(dir, v - 1, &prev, err));
        if (prev)
            return hs_err_set(err, HS_CORRUPT, "%s/metadata/v%" PRId64 ".metadata.json: missing, "
                              "but version-hint.text names version %" PRId64 " as current (the "
                              "current metadata file was deleted?)", dir, v, v);
    }
    if (!exists)
        return scan_versions(dir, version, err);
    for (;;) {
        bool next;
        HS_TRY(version_exists(dir, v + 1, &next, err));
        if (!next)
            break;
        v++;
    }
    *version = v;
    return HS_OK;
}

/* ---- vtable --------------------------------------------------------------------- */

static hs_status p_default_location(cat_catalog *c, const char *ident, char **location,
                                    hs_error *err)
{
    return resolve((path_catalog *)c, ident, location, err);
}

/* Object stores: after the hint names v<N>, v<N> is read while v<N+1> is
 * probed on another thread: one round trip instead of three (HEAD v<N>, HEAD
 * v<N+1>, GET v<N>) when the hint is current.  *done = false (HS_OK) leaves
 * every other case (no hint, v<N> missing, more than a few newer versions)
 * to find_current.  The fault points of both steps come first, in order, so
 * an injected fault fails the load whichever thread it would have hit. */
typedef struct probe_arg {
    const char *uri;
    bool exists;
    hs_status st;
    hs_error err;
} probe_arg;

static void *probe_main(void *a)
{
    probe_arg *p = a;
    p->st = hs_io_stat(p->uri, &p->exists, NULL, &p->err);
    return NULL;
}

static hs_status load_object_fast(const char *dir, hs_buf *json, char **mloc, bool *done,
                                  hs_error *err)
{
    *done = false;
    int64_t v;
    HS_TRY(read_hint(dir, &v, err));
    for (int tries = 0; v >= 1 && tries < 4; tries++, v++) {
        char *cur = version_path(dir, v), *next = version_path(dir, v + 1);
        hs_status st = cur && next ? HS_OK : hs_err_nomem(err, strlen(dir));
        if (st == HS_OK)
            st = cat_io_fault_point(cur, err);
        if (st == HS_OK)
            st = cat_io_fault_point(next, err);
        probe_arg pa = {.uri = next};
        pthread_t th;
        bool threaded = st == HS_OK && pthread_create(&th, NULL, probe_main, &pa) == 0;
        if (st == HS_OK && !threaded)
            probe_main(&pa);
        hs_status rs = st == HS_OK ? hs_io_read_all(cur, json, err) : st;
        if (threaded)
            pthread_join(th, NULL);
        if (rs == HS_OK && pa.st != HS_OK) {
            rs = pa.st;
            if (err && err->code == HS_OK)
                *err = pa.err;
        }
        if (rs == HS_OK && !pa.exists) {
            if (hs_buf_reserve(json, 1) != HS_OK)
                rs = hs_err_nomem(err, json->len + 1);
            else
                json->data[json->len] = 0;   /* as cat_io_read_all: a NUL after the bytes */
            if (rs == HS_OK && json->len == 0)
                rs = HS_CORRUPT_AT(err, "%s: metadata file is empty", cur);
            if (rs == HS_OK) {
                *mloc = cur;
                *done = true;
                hs_free(next);
                return HS_OK;
            }
        }
        hs_free(cur);
        hs_free(next);
        if (rs == HS_NOT_FOUND) {   /* v<N> missing: find_current tells why */
            hs_err_clear(err);
            hs_buf_reset(json);
            return HS_OK;
        }
        if (rs != HS_OK)
            return rs;
        hs_buf_reset(json);   /* v<N+1> exists: one version further */
    }
    return HS_OK;
}

static hs_status p_load(cat_catalog *c, const char *ident, hs_buf *json, char **mloc,
                        hs_error *err)
{
    char *dir;
    HS_TRY(resolve((path_catalog *)c, ident, &dir, err));
    if (hs_io_is_object_uri(dir)) {
        bool done = false;
        hs_status fs = load_object_fast(dir, json, mloc, &done, err);
        if (fs != HS_OK || done) {
            if (fs == HS_NOT_FOUND)
                hs_err_prefix(err, "%s", ident);
            hs_free(dir);
            return fs;
        }
    }
    int64_t v;
    hs_status st = find_current(dir, &v, err);
    char *p = NULL;
    if (st == HS_OK && !(p = version_path(dir, v)))
        st = hs_err_nomem(err, strlen(dir));
    if (st == HS_OK) {
        st = cat_io_read_all(p, json, err);
        if (st == HS_OK && json->len == 0)
            st = HS_CORRUPT_AT(err, "%s: metadata file is empty", p);
        if (st == HS_NOT_FOUND)  /* removed between listing and reading */
            hs_err_prefix(err, "%s", ident);
    }
    hs_free(dir);
    if (st == HS_OK)
        *mloc = p;
    else
        hs_free(p);
    return st;
}

static hs_status p_current_location(cat_catalog *c, const char *ident, char **mloc,
                                    hs_error *err)
{
    char *dir;
    HS_TRY(resolve((path_catalog *)c, ident, &dir, err));
    int64_t v;
    hs_status st = find_current(dir, &v, err);
    char *p = NULL;
    if (st == HS_OK && !(p = version_path(dir, v)))
        st = hs_err_nomem(err, strlen(dir));
    hs_free(dir);
    *mloc = p;
    return st;
}

/* The hs_wfile flags of a metadata file: exclusive, and no fsync unless the
 * table property hyperstream.commit.fsync is "true" (docs/tables.md).  The
 * JSON is parsed only when the key occurs in it at all. */
static int meta_flags(const char *json, size_t len)
{
    static const char key[] = "hyperstream.commit.fsync";
    const size_t klen = sizeof key - 1;
    bool present = false;
    for (size_t i = 0; !present && i + klen <= len; i++)
        present = json[i] == 'h' && memcmp(json + i, key, klen) == 0;
    if (!present)
        return HS_WFILE_EXCLUSIVE | HS_WFILE_NO_SYNC;
    json_t *root = hs_json_loadb(json, len, 0, NULL);
    json_t *props = json_is_object(root) ? json_object_get(root, "properties") : NULL;
    json_t *fs = json_is_object(props) ? json_object_get(props, key) : NULL;
    bool sync = json_is_string(fs) && strcasecmp(json_string_value(fs), "true") == 0;
    json_decref(root);
    return HS_WFILE_EXCLUSIVE | (sync ? 0 : HS_WFILE_NO_SYNC);
}

static void write_hint(const char *dir, int64_t v)
{
    char *p = cat_sprintf("%s/metadata/version-hint.text", dir);
    char num[24];
    int n = snprintf(num, sizeof num, "%" PRId64, v);
    hs_error ignored = { 0 };
    if (p)
        (void)!cat_io_write_all_ex(p, HS_WFILE_NO_SYNC, num, (size_t)n, &ignored);
    hs_free(p);
}

/* Locks <dir>/metadata; a missing directory means no table (HS_NOT_FOUND
 * with what_missing's wording). */
static hs_status lock_table(const char *dir, const char *what_missing, int *fd, hs_error *err)
{
    char *md = cat_sprintf("%s/metadata", dir);
    if (!md)
        return hs_err_nomem(err, strlen(dir));
    hs_error e2 = { 0 };
    hs_status st = cat_io_lock(md, fd, &e2);
    hs_free(md);
    if (st == HS_NOT_FOUND)
        return hs_err_set(err, HS_NOT_FOUND, "%s: %s", dir, what_missing);
    if (st != HS_OK && err && err->code == HS_OK)
        *err = e2;
    return st;
}

static hs_status p_create(cat_catalog *c, const char *ident, const char *json, size_t len,
                          char **mloc, hs_error *err)
{
    char *dir;
    HS_TRY(resolve((path_catalog *)c, ident, &dir, err));
    char *md = cat_sprintf("%s/metadata", dir);
    char *p = version_path(dir, 1);
    hs_status st = (md && p) ? HS_OK : hs_err_nomem(err, strlen(dir));
    int lock = -1;
    if (st == HS_OK)
        st = cat_io_mkdirs(md, err);
    if (st == HS_OK)
        st = lock_table(dir, "metadata directory removed while creating the table", &lock, err);
    if (st == HS_OK) {
        int64_t v;
        hs_error probe = { 0 };
        hs_status fs = find_current(dir, &v, &probe);
        if (fs == HS_OK)
            st = hs_err_set(err, HS_CONFLICT, "%s: table already exists (at v%" PRId64 ")",
                            dir, v);
        else if (fs != HS_NOT_FOUND) {
            st = fs;
            if (err && err->code == HS_OK)
                *err = probe;
        }
    }
    if (st == HS_OK) {
        st = cat_io_write_all_ex(p, meta_flags(json, len), json, len, err);
        if (st == HS_CONFLICT) {
            hs_err_clear(err);
            st = hs_err_set(err, HS_CONFLICT, "%s: table already exists (created concurrently)",
                            dir);
        }
    }
    if (st == HS_OK)
        write_hint(dir, 1);
    cat_io_unlock(lock);
    hs_free(md);
    hs_free(dir);
    if (st == HS_OK)
        *mloc = p;
    else
        hs_free(p);
    return st;
}

/* Under the commit lock: the base file must exist and belong to the same
 * table as the new metadata (equal table-uuid; a document without one is not
 * checked).  A different uuid means the table was dropped and created again
 * at this path since the writer loaded its base. */
static hs_status check_base(const char *dir, const char *base, const char *json, size_t len,
                            hs_error *err)
{
    hs_buf b = { 0 };
    hs_error e2 = { 0 };
    hs_status st = cat_io_read_all(cat_local_path(base), &b, &e2);
    if (st == HS_NOT_FOUND) {
        hs_buf_free(&b);
        return hs_err_set(err, HS_NOT_FOUND, "%s: base metadata %s does not exist (the table "
                          "was dropped?)", dir, base);
    }
    if (st != HS_OK) {
        hs_buf_free(&b);
        if (err && err->code == HS_OK)
            *err = e2;
        return st;
    }
    char have[64], want[64];
    if (cat_json_table_uuid((const char *)b.data, b.len, have) &&
        cat_json_table_uuid(json, len, want) && strcasecmp(have, want) != 0)
        st = hs_err_set(err, HS_CONFLICT, "%s: the table was dropped and created again "
                        "(table-uuid %s, the commit was for table-uuid %s): not committed",
                        dir, have, want);
    hs_buf_free(&b);
    return st;
}

static hs_status p_commit(cat_catalog *c, const char *ident, const char *base, const char *json,
                          size_t len, char **new_location, hs_error *err)
{
    char *dir;
    HS_TRY(resolve((path_catalog *)c, ident, &dir, err));
    hs_status st = HS_OK;
    char *next = NULL;
    int lock = -1;
    /* The base must be <dir>/metadata/v<N>.metadata.json. */
    const char *bp = cat_local_path(base);
    const char *slash = strrchr(bp, '/');
    const char *bname = slash ? slash + 1 : bp;
    size_t dlen = strlen(dir);
    int64_t v = -1;
    if (!parse_version_name(bname, &v))
        st = hs_err_set(err, HS_INVALID, "%s: base metadata %s is not named v<N>.metadata.json",
                        dir, base);
    else if (!slash || (size_t)(slash - bp) != dlen + 9 || strncmp(bp, dir, dlen) != 0 ||
             strncmp(bp + dlen, "/metadata", 9) != 0)
        st = hs_err_set(err, HS_INVALID, "%s: base metadata %s is not in this table's "
                        "metadata directory", dir, base);
    /* Checks and link under the lock that drop and create also take: the
     * base cannot vanish (drop) or change identity (drop + create) between
     * the check and the link. */
    if (st == HS_OK)
        st = lock_table(dir, "the table was dropped (no metadata directory)", &lock, err);
    if (st == HS_OK)
        st = check_base(dir, base, json, len, err);
    if (st == HS_OK && !(next = version_path(dir, v + 1)))
        st = hs_err_nomem(err, dlen);
    if (st == HS_OK) {
        st = cat_io_write_all_ex(next, meta_flags(json, len), json, len, err);
        if (st == HS_CONFLICT) {
            hs_err_clear(err);
            st = hs_err_set(err, HS_CONFLICT, "%s: concurrent commit: v%" PRId64
                            ".metadata.json already exists, base v%" PRId64 " is stale",
                            dir, v + 1, v);
        }
    }
    if (st == HS_OK)   /* committed: the hint is only a hint */
        write_hint(dir, v + 1);
    cat_io_unlock(lock);
    hs_free(dir);
    if (st == HS_OK)
        *new_location = next;
    else
        hs_free(next);
    return st;
}

/* Drop (both forms, under the commit lock):
 *   purge=false  hint, then v<N> files from the oldest up (a stop half way
 *                leaves the table loadable at its current version, never at
 *                an older one), then the rest of metadata/ (manifests,
 *                manifest lists, the lock); data/ and index/ stay
 *   purge=true   the whole table directory */
static hs_status p_drop(cat_catalog *c, const char *ident, bool purge, hs_error *err)
{
    char *dir;
    HS_TRY(resolve((path_catalog *)c, ident, &dir, err));
    int lock = -1;
    int64_t v;
    hs_status st = lock_table(dir, "not a table (no metadata directory)", &lock, err);
    if (st == HS_OK)
        st = find_current(dir, &v, err);
    if (st == HS_OK && purge) {
        st = cat_io_remove_tree(dir, err);
    } else if (st == HS_OK) {
        char *hint = cat_sprintf("%s/metadata/version-hint.text", dir);
        st = hint ? cat_io_unlink(hint, err) : hs_err_nomem(err, strlen(dir));
        hs_free(hint);
        for (int64_t x = 0; st == HS_OK && x <= v; x++) {
            char *f = version_path(dir, x);
            st = f ? cat_io_unlink(f, err) : hs_err_nomem(err, strlen(dir));
            hs_free(f);
        }
        char *md = st == HS_OK ? cat_sprintf("%s/metadata", dir) : NULL;
        if (st == HS_OK)
            st = md ? cat_io_remove_tree(md, err) : hs_err_nomem(err, strlen(dir));
        hs_free(md);
    }
    cat_io_unlock(lock);
    hs_free(dir);
    return st;
}

static hs_status p_rename(cat_catalog *c, const char *from, const char *to, hs_error *err)
{
    return hs_err_set(err, HS_UNSUPPORTED, "%s: path tables cannot be renamed (the directory "
                      "is the table and its metadata records its location)", from);
}

static hs_status p_exists(cat_catalog *c, const char *ident, bool *exists, hs_error *err)
{
    char *dir;
    HS_TRY(resolve((path_catalog *)c, ident, &dir, err));
    int64_t v;
    hs_error e2 = { 0 };
    hs_status st = find_current(dir, &v, &e2);
    hs_free(dir);
    if (st == HS_OK)
        *exists = true;
    if (st == HS_NOT_FOUND)
        return HS_OK;
    if (st != HS_OK && err && err->code == HS_OK)
        *err = e2;
    return st;
}

static hs_status p_list(cat_catalog *c, const char *ns, char ***out, size_t *n_out,
                        hs_error *err)
{
    path_catalog *pc = (path_catalog *)c;
    char *dir;
    if (!*ns) {
        if (!pc->root)
            return hs_err_set(err, HS_INVALID, "listing tables needs a root directory or a "
                              "namespace directory");
        dir = hs_strdup(pc->root);
        if (!dir)
            return hs_err_nomem(err, strlen(pc->root));
    } else {
        HS_TRY(resolve(pc, ns, &dir, err));
    }
    char **names = NULL;
    size_t n = 0, kept = 0;
    hs_status st = cat_io_list_dir(dir, &names, &n, err);
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        char *t = cat_path_join(dir, names[i]);
        int64_t v;
        hs_error e2 = { 0 };
        hs_status fs = t ? find_current(t, &v, &e2) : hs_err_nomem(err, 0);
        hs_free(t);
        if (fs == HS_OK) {
            char *keep = names[i];
            names[i] = NULL;
            names[kept++] = keep;
        } else if (fs != HS_NOT_FOUND) {
            st = fs;
            if (err && err->code == HS_OK)
                *err = e2;
        }
    }
    for (size_t i = kept; i < n; i++)
        hs_free(names[i]);
    hs_free(dir);
    if (st != HS_OK) {
        cat_strv_free(names, kept);
        return st;
    }
    cat_strv_sort(names, kept);
    *out = names;
    *n_out = kept;
    return HS_OK;
}

static hs_status p_ns_unsupported(cat_catalog *c, hs_error *err)
{
    return hs_err_set(err, HS_UNSUPPORTED, "path catalogs have no namespaces (directories "
                      "serve as namespaces)");
}

static hs_status p_ns_create(cat_catalog *c, const char *ns, const char *const *keys,
                             const char *const *values, size_t n, hs_error *err)
{
    return p_ns_unsupported(c, err);
}

static hs_status p_ns_list(cat_catalog *c, const char *parent, char ***names, size_t *n,
                           hs_error *err)
{
    return p_ns_unsupported(c, err);
}

static hs_status p_ns_drop(cat_catalog *c, const char *ns, hs_error *err)
{
    return p_ns_unsupported(c, err);
}

static hs_status p_ns_properties(cat_catalog *c, const char *ns, char ***keys, char ***values,
                                 size_t *n, hs_error *err)
{
    return p_ns_unsupported(c, err);
}

static hs_status p_ns_update(cat_catalog *c, const char *ns, const char *const *set_keys,
                             const char *const *set_values, size_t n_set,
                             const char *const *remove_keys, size_t n_remove, hs_error *err)
{
    return p_ns_unsupported(c, err);
}

static hs_status p_register(cat_catalog *c, const char *ident, const char *mloc, bool overwrite,
                            hs_error *err)
{
    (void)c;
    (void)overwrite;
    return hs_err_set(err, HS_UNSUPPORTED, "%s: a path table is its directory and cannot be "
                      "registered: open %s with hs_table_open_metadata (Python: "
                      "hdb.Table(metadata_location)), or register it in a SQL or REST catalog",
                      ident, mloc);
}

static hs_status p_list_views(cat_catalog *c, const char *ns, char ***names, size_t *n,
                              hs_error *err)
{
    (void)c;
    (void)ns;
    *names = hs_calloc(1, sizeof **names);
    *n = 0;
    return *names ? HS_OK : hs_err_nomem(err, sizeof **names);
}

static void p_free(cat_catalog *c)
{
    path_catalog *pc = (path_catalog *)c;
    hs_free(pc->root);
    hs_free(pc);
}

static const cat_vtbl path_vtbl = {
    p_default_location, p_load, p_current_location, p_create, p_commit, p_drop, p_rename, p_list, p_exists,
    p_ns_create, p_ns_list, p_ns_drop, p_ns_properties, p_ns_update, p_register, p_list_views,
    p_free,
};

hs_status cat_path_open(const char *root, cat_catalog **out, hs_error *err)
{
    *out = NULL;
    path_catalog *pc = hs_calloc(1, sizeof *pc);
    if (!pc)
        return hs_err_nomem(err, sizeof *pc);
    pc->base.vt = &path_vtbl;
    pc->base.kind = CAT_PATH;
    if (root && *root) {
        const char *r = cat_local_path(root);
        if (strstr(r, "://") && !hs_io_is_object_uri(r)) {
            hs_free(pc);
            return hs_err_set(err, HS_UNSUPPORTED, "%s: path-catalog roots are local paths, "
                              "file://, s3:// or s3a:// URIs", root);
        }
        if (!(pc->root = hs_strdup(r))) {
            hs_free(pc);
            return hs_err_nomem(err, strlen(r));
        }
    }
    *out = &pc->base;
    return HS_OK;
}

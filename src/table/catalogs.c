/*
 * table/catalogs.c - the catalog half of the public API beyond opening a
 * path or SQL catalog (table.c): opening a catalog from a URI, namespaces,
 * table existence, and finding a table's current metadata file from its
 * location when it has no version-hint.text.
 *
 *   URI (hs_catalog_open_uri)            catalog
 *   -----------------------------------  -----------------------------------
 *   sqlite:///rel.db, sqlite:////abs.db  SQL catalog (SQLAlchemy's spelling,
 *   sqlite:/abs.db                        as pyiceberg's SqlCatalog takes it)
 *   http://host:port[/p], https://...    REST catalog (catalog/rest.c)
 *   /dir, dir, file:///dir               path catalog rooted at dir
 *
 * Options are a JSON object of strings (NULL or "{}" for none): "name" (SQL
 * catalog_name, default "default"; REST: ignored), "warehouse", and for
 * REST "token", "credential" ("client_id:client_secret"), "scope",
 * "oauth2-server-uri", "prefix".
 *
 * Registering points a SQL or REST catalog at an existing metadata file
 * (catalog.h's cat_register); views are listed, not opened.
 *
 * Namespaces of path catalogs are directories under the root that are not
 * tables; they have no properties ({}), and dropping one removes the empty
 * directory.  SQL (and REST) catalogs keep namespaces as the catalog does.
 *
 * hs_table_find_metadata: a table directory written by an engine that keeps
 * its pointer in a catalog (pyiceberg's SqlCatalog, Java's JdbcCatalog,
 * REST catalogs) has metadata/<NNNNN>-<uuid>.metadata.json files and no
 * version-hint.text.  Without the catalog the best guess is the newest file:
 * the highest NNNNN (then v<N>), ties broken by the larger
 * "last-updated-ms".  Callers open it read-only (hs_table_open_metadata).
 */
#include "table/table_int.h"

#include "base/mem.h"
#include "base/numfmt.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- small string helpers ------------------------------------------------- */

/* "<a>/<b>" (hs_malloc'ed; NULL on out-of-memory). */
static char *join2(const char *a, const char *sep, const char *b)
{
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *s = hs_malloc(la + ls + lb + 1);
    if (s) {
        memcpy(s, a, la);
        memcpy(s + la, sep, ls);
        memcpy(s + la + ls, b, lb + 1);
    }
    return s;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- strings -> JSON ------------------------------------------------------ */

static hs_status dump_json(json_t *j, char **out, hs_error *err)
{
    *out = NULL;
    if (!j)
        return hs_err_nomem(err, 64);
    char *s = hs_json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(j);
    if (!s)
        return hs_err_nomem(err, 64);
    *out = hs_strdup(s);
    free(s);
    return *out ? HS_OK : hs_err_nomem(err, 64);
}

static hs_status strv_to_json(char **v, size_t n, char **out, hs_error *err)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, json_string(v[i])) != 0) {
            json_decref(a);
            a = NULL;
        }
    return dump_json(a, out, err);
}

/* ---- opening from a URI ---------------------------------------------------- */

static const char *opt_str(json_t *opts, const char *key)
{
    json_t *v = opts ? json_object_get(opts, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

hs_status hs_catalog_open_uri(const char *uri, const char *options_json, hs_catalog **out,
                              hs_error *err)
{
    *out = NULL;
    if (!uri || !*uri)
        return hs_err_set(err, HS_INVALID, "hs_catalog_open_uri: no catalog URI given");
    json_t *opts = NULL;
    if (options_json && *options_json) {
        json_error_t je;
        opts = hs_json_loads(options_json, 0, &je);
        if (!json_is_object(opts)) {
            json_decref(opts);
            return hs_err_set(err, HS_INVALID, "catalog options: not a JSON object (%s)",
                              je.text);
        }
        const char *k;
        json_t *v;
        json_object_foreach(opts, k, v) {
            if (!json_is_string(v)) {
                json_decref(opts);
                return hs_err_set(err, HS_INVALID, "catalog option \"%s\": not a string", k);
            }
        }
    }
    hs_status st;
    const char *warehouse = opt_str(opts, "warehouse");
    if (strncmp(uri, "sqlite:", 7) == 0) {
        /* SQLAlchemy: sqlite:///x.db is the relative path x.db, sqlite:////x.db
         * the absolute /x.db; we also take sqlite:/x.db and sqlite:x.db. */
        const char *p = uri + 7;
        if (strncmp(p, "///", 3) == 0)
            p += 3;
        if (!*p || strcmp(p, ":memory:") == 0)
            st = hs_err_set(err, HS_INVALID, "%s: a SQL catalog needs a SQLite file (an "
                            "in-memory database would vanish with the handle)", uri);
        else
            st = hs_catalog_open_sql(p, opt_str(opts, "name"), warehouse, out, err);
    } else if (strncmp(uri, "http://", 7) == 0 || strncmp(uri, "https://", 8) == 0) {
        hs_catalog *c = hs_calloc(1, sizeof *c);
        st = c ? cat_rest_open(uri, options_json, &c->cat, err) : hs_err_nomem(err, sizeof *c);
        if (st == HS_OK)
            *out = c;
        else
            hs_free(c);
    } else if (strstr(cat_local_path(uri), "://")) {
        st = hs_err_set(err, HS_UNSUPPORTED, "%s: unknown catalog URI scheme (sqlite:, "
                        "http(s):// for REST, or a directory of path tables)", uri);
    } else {
        st = hs_catalog_open_path(uri, out, err);
    }
    json_decref(opts);
    return st;
}

/* ---- namespaces -------------------------------------------------------------- */

/* The directory of namespace ns ("" = the root) of a path catalog. */
static hs_status path_ns_dir(hs_catalog *c, const char *ns, char **dir, hs_error *err)
{
    return cat_default_location(c->cat, (ns && *ns) ? ns : ".", dir, err);
}

static hs_status path_ns_list(hs_catalog *c, const char *parent, char ***out, size_t *n_out,
                              hs_error *err)
{
    char *dir = NULL;
    HS_TRY(path_ns_dir(c, parent, &dir, err));
    char **names = NULL;
    size_t n = 0, kept = 0;
    hs_status st = cat_io_list_dir(tbl_local(dir), &names, &n, err);
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        char *p = join2(tbl_local(dir), "/", names[i]);
        struct stat sb;
        bool keep = false;
        if (!p) {
            st = hs_err_nomem(err, strlen(dir));
        } else if (names[i][0] != '.' && stat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            bool is_table = false;
            st = cat_exists(c->cat, p, &is_table, err);
            keep = st == HS_OK && !is_table;
        }
        hs_free(p);
        if (keep && parent && *parent) {
            char *full = join2(parent, ".", names[i]);
            if (!full)
                st = hs_err_nomem(err, strlen(names[i]));
            hs_free(names[i]);
            names[i] = full;
        }
        if (keep && st == HS_OK) {
            char *k = names[i];   /* kept < = i: compact in place */
            names[i] = NULL;
            names[kept++] = k;
        } else {
            hs_free(names[i]);
            names[i] = NULL;
        }
    }
    hs_free(dir);
    if (st != HS_OK) {
        cat_strv_free(names, n);   /* kept ones in front, the rest NULL or unvisited */
        return st == HS_NOT_FOUND && parent && *parent
                   ? hs_err_set(err, HS_NOT_FOUND, "namespace %s does not exist", parent)
                   : st;
    }
    qsort(names, kept, sizeof *names, cmp_str);
    *out = names;
    *n_out = kept;
    return HS_OK;
}

/* "a.b" -> "a/b" for path catalogs (namespaces are nested directories). */
static char *path_ns_ident(const char *ns)
{
    char *s = hs_strdup(ns);
    for (char *p = s; p && *p; p++)
        if (*p == '.')
            *p = '/';
    return s;
}

hs_status hs_catalog_list_namespaces(hs_catalog *c, const char *parent, char **out,
                                     hs_error *err)
{
    *out = NULL;
    char **names = NULL;
    size_t n = 0;
    if (cat_get_kind(c->cat) == CAT_PATH) {
        char *p = parent ? path_ns_ident(parent) : NULL;
        if (parent && !p)
            return hs_err_nomem(err, strlen(parent));
        hs_status st = path_ns_list(c, p, &names, &n, err);
        hs_free(p);
        HS_TRY(st);
        for (size_t i = 0; i < n; i++)   /* back to dotted names */
            for (char *q = names[i]; *q; q++)
                if (*q == '/')
                    *q = '.';
    } else {
        HS_TRY(cat_namespace_list(c->cat, parent, &names, &n, err));
    }
    hs_status st = strv_to_json(names, n, out, err);
    cat_strv_free(names, n);
    return st;
}

hs_status hs_catalog_create_namespace_props(hs_catalog *c, const char *ns,
                                            const char *properties_json, hs_error *err)
{
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace name");
    json_t *props = NULL;
    if (properties_json && *properties_json) {
        json_error_t je;
        props = hs_json_loads(properties_json, 0, &je);
        if (!json_is_object(props)) {
            json_decref(props);
            return hs_err_set(err, HS_INVALID, "namespace properties: not a JSON object");
        }
    }
    size_t n = props ? json_object_size(props) : 0;
    if (cat_get_kind(c->cat) == CAT_PATH) {
        json_decref(props);
        if (n)
            return hs_err_set(err, HS_UNSUPPORTED, "namespaces of a path catalog are "
                              "directories and have no properties");
        char *p = path_ns_ident(ns), *dir = NULL;
        hs_status st = p ? path_ns_dir(c, p, &dir, err) : hs_err_nomem(err, strlen(ns));
        struct stat sb;
        if (st == HS_OK && stat(tbl_local(dir), &sb) == 0)
            st = hs_err_set(err, HS_CONFLICT, "namespace %s already exists", ns);
        if (st == HS_OK)
            st = cat_io_mkdirs(tbl_local(dir), err);
        hs_free(p);
        hs_free(dir);
        return st;
    }
    const char **keys = n ? hs_calloc(n, sizeof *keys) : NULL;
    const char **vals = n ? hs_calloc(n, sizeof *vals) : NULL;
    hs_status st = (n && (!keys || !vals)) ? hs_err_nomem(err, n * sizeof *keys) : HS_OK;
    size_t i = 0;
    const char *k;
    json_t *v;
    if (st == HS_OK && props)
        json_object_foreach(props, k, v) {
            if (!json_is_string(v)) {
                st = hs_err_set(err, HS_INVALID, "namespace property \"%s\": not a string", k);
                break;
            }
            keys[i] = k;
            vals[i++] = json_string_value(v);
        }
    if (st == HS_OK)
        st = cat_namespace_create(c->cat, ns, keys, vals, n, err);
    hs_free(keys);
    hs_free(vals);
    json_decref(props);
    return st;
}

hs_status hs_catalog_drop_namespace(hs_catalog *c, const char *ns, hs_error *err)
{
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace name");
    if (cat_get_kind(c->cat) != CAT_PATH)
        return cat_namespace_drop(c->cat, ns, err);
    char *p = path_ns_ident(ns), *dir = NULL;
    hs_status st = p ? path_ns_dir(c, p, &dir, err) : hs_err_nomem(err, strlen(ns));
    bool is_table = false;
    if (st == HS_OK)
        st = cat_exists(c->cat, p, &is_table, err);
    if (st == HS_OK && is_table)
        st = hs_err_set(err, HS_INVALID, "%s is a table, not a namespace", ns);
    if (st == HS_OK && rmdir(tbl_local(dir)) != 0) {
        if (errno == ENOENT)
            st = hs_err_set(err, HS_NOT_FOUND, "namespace %s does not exist", ns);
        else if (errno == ENOTEMPTY || errno == EEXIST)
            st = hs_err_set(err, HS_INVALID, "namespace %s is not empty", ns);
        else
            st = hs_err_set(err, HS_IO, "%s: rmdir: %s", dir, strerror(errno));
    }
    hs_free(p);
    hs_free(dir);
    return st;
}

hs_status hs_catalog_namespace_properties(hs_catalog *c, const char *ns, char **out,
                                          hs_error *err)
{
    *out = NULL;
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace name");
    if (cat_get_kind(c->cat) == CAT_PATH) {
        char *p = path_ns_ident(ns), *dir = NULL;
        hs_status st = p ? path_ns_dir(c, p, &dir, err) : hs_err_nomem(err, strlen(ns));
        struct stat sb;
        if (st == HS_OK && (stat(tbl_local(dir), &sb) != 0 || !S_ISDIR(sb.st_mode)))
            st = hs_err_set(err, HS_NOT_FOUND, "namespace %s does not exist", ns);
        hs_free(p);
        hs_free(dir);
        HS_TRY(st);
        return dump_json(json_object(), out, err);
    }
    char **keys = NULL, **vals = NULL;
    size_t n = 0;
    HS_TRY(cat_namespace_properties(c->cat, ns, &keys, &vals, &n, err));
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        if (json_object_set_new(o, keys[i], json_string(vals[i])) != 0) {
            json_decref(o);
            o = NULL;
        }
    cat_strv_free(keys, n);
    cat_strv_free(vals, n);
    return dump_json(o, out, err);
}

hs_status hs_catalog_update_namespace_properties(hs_catalog *c, const char *ns,
                                                 const char *set_json,
                                                 const char *remove_json, hs_error *err)
{
    if (!ns || !*ns)
        return hs_err_set(err, HS_INVALID, "empty namespace name");
    json_error_t je;
    json_t *set = set_json && *set_json ? hs_json_loads(set_json, 0, &je) : json_object();
    json_t *rm = remove_json && *remove_json ? hs_json_loads(remove_json, 0, &je) : json_array();
    hs_status st = HS_OK;
    if (!json_is_object(set) || !json_is_array(rm))
        st = hs_err_set(err, HS_INVALID, "namespace property update: want an object of "
                        "strings to set and an array of keys to remove");
    size_t ns_set = st == HS_OK ? json_object_size(set) : 0;
    size_t n_rm = st == HS_OK ? json_array_size(rm) : 0;
    const char **sk = hs_calloc(ns_set + 1, sizeof *sk), **sv = hs_calloc(ns_set + 1, sizeof *sv);
    const char **rk = hs_calloc(n_rm + 1, sizeof *rk);
    if (st == HS_OK && (!sk || !sv || !rk))
        st = hs_err_nomem(err, 64);
    size_t i = 0;
    const char *k;
    json_t *v;
    if (st == HS_OK)
        json_object_foreach(set, k, v) {
            if (!json_is_string(v)) {
                st = hs_err_set(err, HS_INVALID, "namespace property \"%s\": not a string", k);
                break;
            }
            sk[i] = k;
            sv[i++] = json_string_value(v);
        }
    for (i = 0; st == HS_OK && i < n_rm; i++) {
        rk[i] = json_string_value(json_array_get(rm, i));
        if (!rk[i])
            st = hs_err_set(err, HS_INVALID, "namespace properties to remove: not a string");
    }
    if (st == HS_OK)
        st = cat_namespace_update(c->cat, ns, sk, sv, ns_set, rk, n_rm, err);
    hs_free(sk);
    hs_free(sv);
    hs_free(rk);
    json_decref(set);
    json_decref(rm);
    return st;
}

hs_status hs_catalog_table_exists(hs_catalog *c, const char *name, int *exists, hs_error *err)
{
    *exists = 0;
    bool e = false;
    HS_TRY(cat_exists(c->cat, name, &e, err));
    *exists = e;
    return HS_OK;
}

hs_status hs_catalog_register_table(hs_catalog *c, const char *name,
                                    const char *metadata_location, int overwrite, hs_error *err)
{
    return cat_register(c->cat, name, metadata_location, overwrite != 0, err);
}

hs_status hs_catalog_list_views(hs_catalog *c, const char *ns, char **out, hs_error *err)
{
    *out = NULL;
    char **names = NULL;
    size_t n = 0;
    HS_TRY(cat_list_views(c->cat, ns, &names, &n, err));
    json_t *arr = json_array();
    hs_status st = arr ? HS_OK : hs_err_nomem(err, 64);
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        char *full = ns && *ns ? join2(ns, ".", names[i]) : hs_strdup(names[i]);
        if (!full || json_array_append_new(arr, json_string(full)) != 0)
            st = hs_err_nomem(err, 64);
        hs_free(full);
    }
    cat_strv_free(names, n);
    if (st == HS_OK)
        st = dump_json(arr, out, err);
    else
        json_decref(arr);
    return st;
}

/* ---- a table's newest metadata file without a catalog ------------------------ */

/* The version number a metadata file name carries: NNNNN-<uuid>.metadata.json
 * (pyiceberg, Java's catalogs) or v<N>.metadata.json (path tables); -1 for
 * other names.  Compressed metadata (.gz.metadata.json) is not taken. */
static long long metadata_name_version(const char *name)
{
    size_t len = strlen(name);
    static const char sfx[] = ".metadata.json";
    if (len <= sizeof sfx - 1 || strcmp(name + len - (sizeof sfx - 1), sfx) != 0)
        return -1;
    const char *p = name[0] == 'v' ? name + 1 : name;
    if (!isdigit((unsigned char)*p))
        return -1;
    long long v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > 100000000000LL)
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (name[0] == 'v' ? *p != '.' : *p != '-')
        return -1;
    return v;
}

static long long last_updated_ms(const char *path)
{
    hs_buf b = { 0 };
    hs_error e = { 0 };
    long long ms = -1;
    if (hs_io_read_all(path, &b, &e) == HS_OK) {
        json_error_t je;
        json_t *j = hs_json_loads(hs_buf_cstr(&b), 0, &je);
        json_t *v = j ? json_object_get(j, "last-updated-ms") : NULL;
        if (json_is_integer(v))
            ms = (long long)json_integer_value(v);
        json_decref(j);
    }
    hs_buf_free(&b);
    return ms;
}

hs_status hs_table_find_metadata(const char *location, char **out, hs_error *err)
{
    *out = NULL;
    const char *loc = tbl_local(location);
    char *md = join2(loc, "/", "metadata");
    if (!md)
        return hs_err_nomem(err, strlen(loc));
    char **names = NULL;
    size_t n = 0;
    hs_status st = cat_io_list_dir(md, &names, &n, err);
    if (st == HS_NOT_FOUND) {
        hs_err_clear(err);
        st = hs_err_set(err, HS_NOT_FOUND, "%s: not a table (no metadata/ directory)", location);
    }
    long long best_v = -1, best_ms = -1;
    char *best = NULL;
    for (size_t i = 0; st == HS_OK && i < n; i++) {
        long long v = metadata_name_version(names[i]);
        if (v < 0 || v < best_v)
            continue;
        char *p = join2(md, "/", names[i]);
        if (!p) {
            st = hs_err_nomem(err, strlen(md));
            break;
        }
        long long ms = last_updated_ms(p);
        if (v > best_v || ms > best_ms) {
            hs_free(best);
            best = p;
            best_v = v;
            best_ms = ms;
        } else {
            hs_free(p);
        }
    }
    cat_strv_free(names, n);
    hs_free(md);
    if (st == HS_OK && !best)
        st = hs_err_set(err, HS_NOT_FOUND, "%s: not a table (no metadata file in metadata/)",
                        location);
    if (st != HS_OK) {
        hs_free(best);
        return st;
    }
    *out = best;
    return HS_OK;
}

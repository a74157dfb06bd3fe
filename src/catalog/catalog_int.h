/*
 * catalog/catalog_int.h - the vtable behind cat_catalog, shared by
 * catalog.c (dispatch, retry loop, model wrappers), path.c and sql.c.
 *
 * Each implementation embeds struct cat_catalog as its first member and
 * fills every slot (unsupported operations return HS_UNSUPPORTED with a
 * message).  The generic entry points in catalog.c validate arguments, so
 * implementations see non-NULL identifiers.
 */
#ifndef HS_CATALOG_CATALOG_INT_H
#define HS_CATALOG_CATALOG_INT_H

#include "catalog/catalog.h"

typedef struct cat_vtbl {
    hs_status (*default_location)(cat_catalog *c, const char *ident, char **location,
                                  hs_error *err);
    hs_status (*load)(cat_catalog *c, const char *ident, hs_buf *json, char **mloc,
                      hs_error *err);
    /* The current metadata location only (no file read). */
    hs_status (*current_location)(cat_catalog *c, const char *ident, char **mloc,
                                  hs_error *err);
    hs_status (*create)(cat_catalog *c, const char *ident, const char *json, size_t len,
                        char **mloc, hs_error *err);
    hs_status (*commit)(cat_catalog *c, const char *ident, const char *base, const char *json,
                        size_t len, char **new_location, hs_error *err);
    hs_status (*drop)(cat_catalog *c, const char *ident, bool purge, hs_error *err);
    hs_status (*rename)(cat_catalog *c, const char *from, const char *to, hs_error *err);
    hs_status (*list)(cat_catalog *c, const char *ns, char ***names, size_t *n, hs_error *err);
    hs_status (*exists)(cat_catalog *c, const char *ident, bool *exists, hs_error *err);
    hs_status (*ns_create)(cat_catalog *c, const char *ns, const char *const *keys,
                           const char *const *values, size_t n, hs_error *err);
    hs_status (*ns_list)(cat_catalog *c, const char *parent, char ***names, size_t *n,
                         hs_error *err);
    hs_status (*ns_drop)(cat_catalog *c, const char *ns, hs_error *err);
    hs_status (*ns_properties)(cat_catalog *c, const char *ns, char ***keys, char ***values,
                               size_t *n, hs_error *err);
    hs_status (*ns_update)(cat_catalog *c, const char *ns, const char *const *set_keys,
                           const char *const *set_values, size_t n_set,
                           const char *const *remove_keys, size_t n_remove, hs_error *err);
    /* Points ident at an existing metadata file (catalog.h's cat_register). */
    hs_status (*register_table)(cat_catalog *c, const char *ident, const char *mloc,
                                bool overwrite, hs_error *err);
    hs_status (*list_views)(cat_catalog *c, const char *ns, char ***names, size_t *n,
                            hs_error *err);
    void (*free)(cat_catalog *c);
} cat_vtbl;

struct cat_catalog {
    const cat_vtbl *vt;
    cat_kind kind;
};

/* Helpers shared by the implementations (catalog.c). */

/* The string value of a top-level key of a metadata JSON document, copied
 * (caller frees with hs_free).  HS_INVALID naming the key when absent. */
HS_MUST_USE hs_status cat_json_get_string(const char *json, size_t len, const char *key,
                                          char **out, hs_error *err);
/* The "table-uuid" of a metadata JSON document into out (NUL-terminated);
 * false when the document has none (format v1 allows that) or it is not a
 * short string.  Scans for the key and parses only that value when it occurs
 * once; parses the whole document otherwise. */
bool cat_json_table_uuid(const char *json, size_t len, char out[64]);
/* HS_OK when metadata_location is a readable JSON object with
 * "format-version" and "location" (register's check); HS_INVALID naming the
 * file otherwise, HS_IO when it cannot be read. */
HS_MUST_USE hs_status cat_check_metadata_file(const char *metadata_location, hs_error *err);
/* "<a>/<b>" without doubling the slash; NULL on out-of-memory. */
char *cat_path_join(const char *a, const char *b);
/* hs_malloc'ed printf; NULL on out-of-memory. */
char *cat_sprintf(const char *fmt, ...) HS_PRINTF(1, 2);
/* Sorts a string array in place (strcmp order). */
void cat_strv_sort(char **v, size_t n);

#endif

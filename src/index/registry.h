/*
 * index/registry.h - the index registry of a table: which indexes are
 * declared, and which sidecar index file covers which data file.
 *
 * A registry version is one immutable JSON file
 *
 *   <table>/index/registry/<uuid>.json
 *
 * named by the table property "hyperstream.index-registry" (its path
 * relative to the table location).  Table properties survive every engine's
 * commits, so the pointer stays with the table; a registry change is a
 * metadata commit that writes a new version and moves the property (see
 * table/index.c for the commit and merge rules).
 *
 *   {
 *     "format-version": 1,
 *     "declared": [ {"column": "cat", "field-id": 4, "kind": "inverted",
 *                    "params": {}} ],
 *     "entries":  [ {"data-file": "/wh/t/data/00000-0-<uuid>.parquet",
 *                    "data-file-size": 81234, "field-id": 4, "kind": "inverted",
 *                    "index-file": "index/00000-0-<uuid>.4.inverted",
 *                    "index-file-size": 5120, "checksum": "xxh64:89ab..."} ]
 *   }
 *
 *   key              meaning
 *   ---------------  ----------------------------------------------------------
 *   declared         one per (field id, kind): later writes build these for
 *                    every data file they add; params is the JSON object the
 *                    user gave (kind-specific)
 *   data-file        the data file's path exactly as the manifest has it
 *   data-file-size   its size: an entry is used only when path AND size match
 *                    a data file live in the snapshot being read
 *   kind             the declared kind (an "auto" index records "auto"; the
 *                    sidecar itself says what it resolved to)
 *   index-file       the sidecar: relative to the table location, or absolute
 *   checksum         xxh64 of the whole sidecar file (hex), for tools; readers
 *                    rely on the sidecar's own trailer checksum and its size
 *
 * Unknown keys are ignored (forward compatible); a registry whose
 * format-version is newer than ours is HS_UNSUPPORTED.  Entries are unique
 * by (data-file, field-id, kind): adding one replaces the old.
 *
 * Sidecar names: <table>/index/<data-file-stem>.<field-id>.<kind>, where the
 * stem is the data file's name without ".parquet"; a name that is taken gets
 * "-<8 hex>" after the stem (files are created exclusively).
 *
 * Ownership: an ix_registry owns every string in it; ix_registry_clear frees
 * them and leaves an empty registry.  Not thread-safe for writes; readers
 * may share one registry after ix_registry_build_index.
 */
#ifndef HS_INDEX_REGISTRY_H
#define HS_INDEX_REGISTRY_H

#include "base/buf.h"
#include "base/error.h"
#include "base/hashmap.h"
#include <stdbool.h>
#include <stdint.h>

#define IX_REGISTRY_PROPERTY "hyperstream.index-registry"
#define IX_REGISTRY_FORMAT_VERSION 1

typedef struct ix_decl {
    char *column;            /* dotted name as declared (owned) */
    int32_t field_id;
    char *kind;              /* declared kind name (owned) */
    char *params;            /* JSON object text (owned), "{}" when none */
} ix_decl;

typedef struct ix_entry {
    char *data_file;         /* owned */
    int64_t data_file_size;
    int32_t field_id;
    char *kind;              /* owned */
    char *index_file;        /* owned; relative to the table location or absolute */
    int64_t index_file_size;
    uint64_t checksum;       /* xxh64 of the sidecar */
} ix_entry;

typedef struct ix_registry {
    int n_decls, cap_decls;
    ix_decl *decls;
    int n_entries, cap_entries;
    ix_entry *entries;
    /* lookup by data file (ix_registry_build_index): first entry index per
     * path in `by_file` (value + 1), then next[] chains entries of one path */
    hs_map by_file;
    int *next;
    bool indexed;
} ix_registry;

void ix_registry_clear(ix_registry *r);   /* frees contents; r stays usable (empty) */

/* Parses a registry version (untrusted bytes).  *out must be zeroed; on
 * failure it is left empty.  HS_CORRUPT naming `name` for malformed JSON or
 * missing/mistyped required keys. */
HS_MUST_USE hs_status ix_registry_parse(const char *name, const char *json, size_t len,
                                        ix_registry *out, hs_error *err);
/* Serializes r (compact JSON) into out (appended). */
HS_MUST_USE hs_status ix_registry_to_json(const ix_registry *r, hs_buf *out, hs_error *err);
/* Deep copy; *dst zeroed. */
HS_MUST_USE hs_status ix_registry_copy(const ix_registry *src, ix_registry *dst, hs_error *err);

/* Loads the version named by property value `rel` (NULL = none: an empty
 * registry) under table location `location`.  *out zeroed. */
HS_MUST_USE hs_status ix_registry_load(const char *location, const char *rel, ix_registry *out,
                                       hs_error *err);
/* Writes r as a new version <location>/index/registry/<uuid>.json (io.h
 * HS_WFILE_* flags; exclusive create is added).  *rel_out (caller frees
 * with hs_free) gets the path relative to the location, for the property. */
HS_MUST_USE hs_status ix_registry_write(const char *location, const ix_registry *r, int wflags,
                                        char **rel_out, hs_error *err);

/* ---- declarations ---- */

/* Index of the declaration (field_id, kind), or -1. kind NULL: the first on field_id. */
int ix_registry_find_decl(const ix_registry *r, int32_t field_id, const char *kind);
/* Adds a declaration (strings copied) unless (field_id, kind) is declared. */
HS_MUST_USE hs_status ix_registry_add_decl(ix_registry *r, const char *column, int32_t field_id,
                                           const char *kind, const char *params, hs_error *err);
/* Removes declarations on field_id (kind NULL = all kinds) and their
 * entries; returns the number of declarations removed. */
int ix_registry_remove_decls(ix_registry *r, int32_t field_id, const char *kind);

/* ---- entries ---- */

/* Adds a copy of e, replacing an entry with the same (data_file, field_id, kind). */
HS_MUST_USE hs_status ix_registry_add_entry(ix_registry *r, const ix_entry *e, hs_error *err);
/* The entry (data_file, field_id, kind) or NULL (linear; see the index below for scans). */
const ix_entry *ix_registry_find_entry(const ix_registry *r, const char *data_file,
                                       int32_t field_id, const char *kind);
/* Drops the entries for which keep(ctx, e) is false; returns how many. */
int ix_registry_retain(ix_registry *r, bool (*keep)(void *ctx, const ix_entry *e), void *ctx);

/* Builds the by-file lookup (call after the last change; changes drop it). */
HS_MUST_USE hs_status ix_registry_build_index(ix_registry *r, hs_error *err);
/* First entry of data_file (index into r->entries) or -1; then ix_registry_next. */
int ix_registry_first(const ix_registry *r, const char *data_file);
static inline int ix_registry_next(const ix_registry *r, int i) { return r->next[i]; }

/* ---- paths ---- */

/* location + "/" + rel (rel absolute or a URI: rel itself), into out. */
HS_MUST_USE hs_status ix_resolve_path(const char *location, const char *rel, hs_buf *out);
/* "index/<stem>.<field_id>.<kind>" (suffix NULL) or "index/<stem>-<suffix>.<field_id>.<kind>". */
HS_MUST_USE hs_status ix_sidecar_rel(const char *data_file, int32_t field_id, const char *kind,
                                     const char *suffix, hs_buf *out);

#endif

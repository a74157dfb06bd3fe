/*
 * index/registry.h - the index registry of a table: which indexes are
 * declared, and which sidecar index file covers which data file.
 *
 * The table property "hyperstream.index-registry" names the registry's
 * current ROOT (its path relative to the table location).  Table properties
 * survive every engine's commits and are per metadata version, so each
 * metadata version keeps the registry it had; a registry change is a
 * metadata commit that writes new files and moves the property (see
 * table/index.c for the commit and merge rules).  Every file is immutable,
 * written once with an exclusive create under a fresh UUID name.
 *
 * Format 2 (incremental: an append writes one small segment and a small
 * root, whatever the number of files already indexed):
 *
 *   file                                 holds
 *   -----------------------------------  ------------------------------------------
 *   index/registry/<uuid>.json   (root)  format-version 2, "declared", and
 *                                        "segments": the segment files, oldest
 *                                        first, each {"path", "entries",
 *                                        "removed", "bytes"}
 *   index/registry/seg-<uuid>.json       format-version 2, "segment": true,
 *                (segment)               "removed": data-file paths whose entries
 *                                        in EARLIER segments are dropped, then
 *                                        "entries" (same objects as format 1)
 *
 *   {"format-version": 2,
 *    "declared": [ {"column": "cat", "field-id": 4, "kind": "inverted", "params": {}} ],
 *    "segments": [ {"path": "index/registry/seg-<uuid>.json", "entries": 120,
 *                   "removed": 0, "bytes": 30911} ]}
 *   {"format-version": 2, "segment": true, "removed": ["/wh/t/data/old.parquet"],
 *    "entries": [ {"data-file": ..., ...} ]}
 *
 * The registry a root stands for is its declarations plus its segments
 * applied oldest first: a segment's tombstones remove earlier entries of
 * those data files, then its entries are added (an entry replaces an
 * earlier one with the same (data-file, field-id, kind)).  Appends add one
 * segment (their entries, and tombstones for the files they remove); when
 * IX_SEG_FANIN trailing segments of one size level (level = floor(log8
 * items)) pile up they are merged into one (a run that starts at the oldest
 * segment also drops its tombstones), up to IX_SEG_MERGE_MAX_LEVEL; more
 * than IX_SEG_MAX segments fold into one.  Declaring, dropping and pruning
 * rewrite the registry as one segment.  Each entry is rewritten about
 * log8(entries) times over its life, so an append's cost does not grow
 * with the table.
 *
 * Format 1 (one file, written by earlier versions; still read, and turned
 * into a first segment by the next write):
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
 *   head             optional, true: a vector sidecar whose head (header, map,
 *                    exact vectors) serves an exact search without its graph,
 *                    so an object-store reader may fetch only that range
 *   cluster          optional, vector sidecars of an index declared with a
 *                    cluster column (table/vcluster.h): {"field-id": cluster
 *                    column, "include": [field ids], "values": [[value,
 *                    offset, bytes, rows], ...]}: where in the sidecar the
 *                    block of each value of the cluster column lies, so that
 *                    a filtered search reads one range per file without
 *                    reading the sidecar's head first.  Kept as text; its
 *                    reader validates it (a malformed one is not used).
 *   segments.path    a segment, relative to the table location (never absolute)
 *   segments.inline  optional: the segment's contents (the same object as its
 *                    file), when every segment of the root fits in
 *                    IX_INLINE_MAX bytes together: a reader of a small
 *                    registry then needs no second request.  The segment
 *                    files are written all the same (older readers, orphan
 *                    removal); a reader uses the inline copy only when its
 *                    entry and tombstone counts are the root's, else the file.
 *   manifests        optional, roots only: per data manifest of the snapshot
 *                    the root was written with, {"path", "length", "snapshot",
 *                    "bounds": [[field-id, lower-hex, upper-hex], ...]}: the
 *                    smallest lower and largest upper bound of each listed
 *                    column over the manifest's live data files (Iceberg's
 *                    single-value binary form, as the manifest has them), so
 *                    that an object-store planner skips manifests that cannot
 *                    hold a match without fetching them (table/plan.c).  Keyed
 *                    by the manifest's path, length and added snapshot id:
 *                    manifests are immutable, so a summary stays true for its
 *                    manifest whatever commits follow; a manifest without one
 *                    (written by another engine, or after this root) is read.
 *                    Only non-float primitive columns whose bounds every live
 *                    file has (at most IX_MSUM_FIELDS, declared-index columns
 *                    first), at most IX_MSUM_MAX manifests.  Malformed
 *                    summaries are ignored (all manifests are then read).
 *   manifests.files  optional, with "seq" (the manifest's sequence number in
 *                    the manifest list): the manifest's live data files, each
 *                    {"path", "size", "records", "entry" (its index in the
 *                    manifest), "seq", "fseq" (data and file sequence numbers,
 *                    resolved), "first-row-id" (v3, when known), "bounds" (as
 *                    above, the summary's columns the file has)}: a planner on
 *                    an object store then plans from them without reading the
 *                    manifest (table/plan.c), when "seq" is the list's.  Only
 *                    unpartitioned manifests, and only while the root's "files"
 *                    stay within IX_MFILES_MAX bytes (oldest manifests first).
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
#define IX_REGISTRY_FORMAT_VERSION 2
#define IX_SEG_FANIN 8              /* trailing segments of one level merged at once */
#define IX_SEG_MERGE_MAX_LEVEL 4    /* appends merge runs of levels below this (< 8^4 items) */
#define IX_SEG_MAX 64               /* more segments than this: fold them all into one */
#define IX_INLINE_MAX 32768        /* segments' bytes a root carries inline at most */
#define IX_MSUM_MAX 512             /* manifest summaries a root holds at most */
#define IX_MSUM_FIELDS 16           /* columns per manifest summary at most */
#define IX_MSUM_BOUND_MAX 64        /* bounds longer than this are not kept */
#define IX_MFILES_MAX 24576         /* bytes of "files" (all manifests) a root carries at most */

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
    bool head;               /* "head": true: the sidecar's head alone serves an exact
                                search (vector sidecars, table/vindex.h
                                tbl_vindex_acquire_head); written only when true */
    char *cluster;           /* "cluster": the value directory of a clustered vector
                                section (table/vcluster.h), compact JSON object text
                                (owned), or NULL */
} ix_entry;

/* One segment of a format-2 root. */
typedef struct ix_segment {
    char *path;              /* relative to the table location (owned) */
    int64_t n_entries;       /* entries it holds */
    int64_t n_removed;       /* tombstones it holds */
    int64_t bytes;           /* its file size */
    char *inline_json;       /* its text when the root carries it ("inline"; owned), or NULL */
} ix_segment;

/* The contents of one segment file. */
typedef struct ix_segdata {
    int n_entries, cap_entries;
    ix_entry *entries;       /* owned */
    int n_removed, cap_removed;
    char **removed;          /* data-file paths (owned) */
} ix_segdata;

/* One column's bounds in a manifest summary (owned bytes). */
typedef struct ix_mbound {
    int32_t field_id;
    uint32_t lower_len, upper_len;
    uint8_t *lower, *upper;
} ix_mbound;

/* One live data file of a summarised manifest (root key "files"): what a
 * scan plan takes from its manifest entry, sequence numbers resolved. */
typedef struct ix_mfile {
    char *path;              /* as the manifest has it (owned) */
    int64_t size, records;
    int64_t entry;           /* index of its entry in the manifest */
    int64_t data_seq, file_seq;
    bool has_first_row_id;
    int64_t first_row_id;
    int n_bounds;
    ix_mbound *bounds;       /* the summary's columns that the file has bounds of (owned) */
} ix_mfile;

/* A data manifest's summary (root key "manifests", format above). */
typedef struct ix_msum {
    char *path;              /* as the manifest list has it (owned) */
    int64_t length;          /* manifest_length */
    int64_t snapshot;        /* added_snapshot_id */
    int n_bounds;
    ix_mbound *bounds;       /* (owned) */
    /* optional ("files", with "seq"): the manifest's live data files, so that
     * a planner needs not read it (has_files false when absent) */
    bool has_files;
    int64_t seq;             /* the manifest list's sequence_number for it */
    int n_files;
    ix_mfile *files;         /* (owned) */
} ix_msum;

typedef struct ix_registry {
    int format_version;      /* of the version loaded: 1, 2, or 0 (none) */
    int n_segments;          /* format 2: the root's segments, oldest first */
    ix_segment *segments;    /* (owned) */
    int n_decls, cap_decls;
    ix_decl *decls;
    int n_entries, cap_entries;
    ix_entry *entries;
    /* lookup by data file (ix_registry_build_index): first entry index per
     * path in `by_file` (value + 1), then next[] chains entries of one path */
    hs_map by_file;
    int *next;
    bool indexed;
    int n_msums;             /* roots: manifest summaries (written by the writers of */
    ix_msum *msums;          /* roots, as they are here; owned) */
} ix_registry;

void ix_registry_clear(ix_registry *r);   /* frees contents; r stays usable (empty) */
void ix_registry_clear_entries(ix_registry *r);   /* frees the entries only */

/* Parses a registry version (untrusted bytes): a format-1 file (decls and
 * entries) or a format-2 root (decls and segments; no entries until
 * ix_registry_load_segments).  *out must be zeroed; on failure it is left
 * empty.  HS_CORRUPT naming `name` for malformed JSON or missing/mistyped
 * required keys. */
HS_MUST_USE hs_status ix_registry_parse(const char *name, const char *json, size_t len,
                                        ix_registry *out, hs_error *err);
/* Serializes r as a format-1 file (compact JSON: decls and entries) into
 * out (appended); tools and tests use it, writers write format 2. */
HS_MUST_USE hs_status ix_registry_to_json(const ix_registry *r, hs_buf *out, hs_error *err);
/* Deep copy; *dst zeroed. */
HS_MUST_USE hs_status ix_registry_copy(const ix_registry *src, ix_registry *dst, hs_error *err);

/* ---- segments ---- */

void ix_segdata_clear(ix_segdata *s);
/* Parses a segment file (untrusted bytes); *out zeroed.  HS_CORRUPT naming
 * `name` as ix_registry_parse does. */
HS_MUST_USE hs_status ix_segment_parse(const char *name, const char *json, size_t len,
                                       ix_segdata *out, hs_error *err);
/* Serializes s as a segment file (compact JSON) into out (appended). */
HS_MUST_USE hs_status ix_segment_to_json(const ix_segdata *s, hs_buf *out, hs_error *err);
/* Applies segs[0..n) (oldest first) as one: the entries that survive, and
 * (unless drop_removed) every tombstone, into *out (zeroed).  What a merge
 * of those segments writes. */
HS_MUST_USE hs_status ix_segments_compose(const ix_segdata *segs, int n, bool drop_removed,
                                          ix_segdata *out, hs_error *err);

/* ---- files ---- */

/* Loads the version named by property value `rel` (NULL = none: an empty
 * registry) under table location `location`: a format-1 file, or a root
 * and every segment it lists (entries composed).  *out zeroed.  A segment
 * that is missing is HS_NOT_FOUND, one that is damaged HS_CORRUPT. */
HS_MUST_USE hs_status ix_registry_load(const char *location, const char *rel, ix_registry *out,
                                       hs_error *err);
/* Only the root (declarations and segments; a format-1 file whole). */
HS_MUST_USE hs_status ix_registry_load_root(const char *location, const char *rel,
                                            ix_registry *out, hs_error *err);
/* Reads and parses one segment of a root (its size must be the root's
 * record); *out zeroed.  HS_NOT_FOUND when the file is missing. */
HS_MUST_USE hs_status ix_segment_load(const char *location, const ix_segment *sg,
                                      ix_segdata *out, hs_error *err);
/* For a registry parsed from a format-2 root: reads its segments and sets
 * its entries to their composition (replacing any entries it had). */
HS_MUST_USE hs_status ix_registry_load_segments(const char *location, ix_registry *r,
                                                hs_error *err);
/* The same, but a segment that cannot be read or parsed is left out (its
 * entries are lost, not the rest): *n_skipped counts them and *why (may be
 * NULL) gets the first one's message.  Fails only for HS_NOMEM.  Writers
 * and scans use it: entries are checked against the files they cover
 * anyway, and a refresh rebuilds what a lost segment listed. */
HS_MUST_USE hs_status ix_registry_load_segments_lenient(const char *location, ix_registry *r,
                                                        int *n_skipped, hs_error *why,
                                                        hs_error *err);
/* Writes r whole as a new version: its entries as one segment and a root
 * (io.h HS_WFILE_* flags; exclusive create is added).  *rel_out (caller
 * frees with hs_free) gets the root's path relative to the location, for
 * the property.  Every file written (root included) is pushed onto
 * `created` (char *, caller frees; may be NULL) so that a commit that
 * fails can remove them; on failure this call removes its own files. */
HS_MUST_USE hs_status ix_registry_write(const char *location, const ix_registry *r, int wflags,
                                        char **rel_out, hs_buf *created, hs_error *err);
/* Writes a new version that is `root` (as loaded by ix_registry_load_root;
 * its declarations are written as they are in it now) plus one segment
 * holding `add` entries and tombstones for `removed` data files, then
 * merges segments by the policy above.  A format-1 root's entries become
 * the first segment.  Reads only segments it merges.  Outputs as
 * ix_registry_write. */
HS_MUST_USE hs_status ix_registry_write_delta(const char *location, const ix_registry *root,
                                              const ix_entry *add, int n_add,
                                              const char *const *removed, int n_removed,
                                              int wflags, char **rel_out, hs_buf *created,
                                              hs_error *err);
/* ---- manifest summaries ---- */

void ix_msums_free(ix_msum *a, int n);
void ix_msums_free_one(ix_msum *m);   /* frees its contents; *m zeroed */
/* Deep copy of one summary into *dst (zeroed). */
HS_MUST_USE hs_status ix_msum_copy(const ix_msum *src, ix_msum *dst, hs_error *err);
/* The summary of the manifest (path, length, snapshot), or NULL. */
const ix_msum *ix_registry_find_msum(const ix_registry *r, const char *path, int64_t length,
                                     int64_t snapshot);
/* Replaces r's summaries by a[0..n) (taken: the caller no longer owns them). */
void ix_registry_set_msums(ix_registry *r, ix_msum *a, int n);

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
/* Appends a copy of e without looking for one with its key (the caller
 * knows there is none). */
HS_MUST_USE hs_status ix_registry_append_entry(ix_registry *r, const ix_entry *e, hs_error *err);
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

/*
 * table/mcache.h - a process-wide cache of decoded Iceberg manifests.
 *
 * Manifests are immutable files named by a fresh UUID, and every scan of a
 * snapshot plans through the same ones, so a warm process (a server, a
 * Python session) decodes each manifest once: planning a table of N
 * manifests then costs N stat() calls and the pruning itself, not N opens
 * and Avro decodes.  An entry is keyed by the manifest's path, the file's
 * identity (device, inode, size, modification time: a file replaced or
 * damaged in place is read again), the manifest-list fields that drive
 * inheritance (sequence numbers, adding snapshot, first row id) and the
 * spec and schema ids that typed its partition values.  Entries are shared
 * read-only, reference-counted while a plan uses them, and evicted least
 * recently used beyond HS_MANIFEST_CACHE_MB (default 64; 0 = no cache).
 */
#ifndef HS_TABLE_MCACHE_H
#define HS_TABLE_MCACHE_H

#include "iceberg/manifest.h"

typedef struct tbl_mref tbl_mref;

/* The decoded manifest mf points to (read through ice_manifest_read with
 * mf, spec and schema as given) and a reference to release with
 * tbl_mcache_release.  Errors as ice_manifest_read's (nothing cached). */
HS_MUST_USE hs_status tbl_mcache_get(const ice_manifest_file *mf, const ice_partition_spec *spec,
                                     const ice_schema *schema, const ice_manifest **out,
                                     tbl_mref **ref, hs_error *err);
void tbl_mcache_release(tbl_mref *ref);   /* accepts NULL */
/* Drops every unreferenced entry (tests balancing allocations, memory pressure). */
void tbl_mcache_clear(void);

#endif

/*
 * table/mcache.h - the process-wide cache of decoded Iceberg manifests.
 *
 * Manifests are immutable files named by a fresh UUID, and every scan of a
 * snapshot plans through the same ones, so a warm process (a server, a
 * Python session) decodes each manifest once: planning a table of N
 * manifests then costs N stat() calls and the pruning itself, not N opens
 * and Avro decodes.  A table/fcache.h cache: entries are keyed by the
 * manifest's path and file identity plus the manifest-list fields that drive
 * inheritance (sequence numbers, adding snapshot, first row id) and the spec
 * and schema ids that typed its partition values; budget
 * HS_MANIFEST_CACHE_MB (default 64; 0 = no cache).
 */
#ifndef HS_TABLE_MCACHE_H
#define HS_TABLE_MCACHE_H

#include "iceberg/manifest.h"
#include "table/fcache.h"

/* The decoded manifest mf points to (read through ice_manifest_read with
 * mf, spec and schema as given) and a reference to release with
 * tbl_mcache_release.  Errors as ice_manifest_read's (nothing cached). */
HS_MUST_USE hs_status tbl_mcache_get(const ice_manifest_file *mf, const ice_partition_spec *spec,
                                     const ice_schema *schema, const ice_manifest **out,
                                     tbl_fref **ref, hs_error *err);
void tbl_mcache_release(tbl_fref *ref);   /* accepts NULL */
/* Drops every unreferenced entry (tests balancing allocations). */
void tbl_mcache_clear(void);

#endif

/*
 * hyperstream/common.h - status codes and the caller-owned error struct shared
 * by every public HyperStreamDB API.
 *
 * Every fallible function returns an hs_status (0 = HS_OK) and, where it takes
 * an `hs_error *err`, fills it with a message naming what was wrong with what
 * ("data/ab12.parquet: page header at offset 4096 claims 9 GiB").  The error
 * struct is owned by the caller, needs no freeing, and may be NULL when the
 * caller only wants the code.  The library never aborts and never longjmps.
 */
#ifndef HYPERSTREAM_COMMON_H
#define HYPERSTREAM_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* HS_API marks the functions of the public API.  The shared library is
 * linked with a version script generated from the HS_API declarations of
 * these headers (see CMakeLists.txt), so it exports exactly them; the
 * attribute also keeps them exported in builds that use
 * -fvisibility=hidden. */
#ifndef HS_API
#if defined(__GNUC__) || defined(__clang__)
#define HS_API __attribute__((visibility("default")))
#else
#define HS_API
#endif
#endif

#include "hyperstream/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hs_status {
    HS_OK = 0,
    HS_IO,           /* an operating-system or object-store call failed */
    HS_CORRUPT,      /* bytes on disk or on the wire violate their format */
    HS_INVALID,      /* the caller passed something invalid */
    HS_NOMEM,        /* an allocation failed */
    HS_CONFLICT,     /* a concurrent commit won the race */
    HS_NOT_FOUND,    /* a named file, table, column or key does not exist */
    HS_UNSUPPORTED,  /* valid, but not implemented by this build */
    HS_INTERNAL,     /* a broken invariant inside the library (a bug) */
    HS_CANCELLED,    /* the caller cancelled (progress callback, interrupt) */
    HS_BUSY          /* a bounded resource stayed full past its timeout (append
                      * stream memory budget), or another writer holds it */
} hs_status;

#define HS_ERROR_MSG_MAX 512

typedef struct hs_error {
    hs_status code;
    char msg[HS_ERROR_MSG_MAX];
    const char *src_file; /* for HS_CORRUPT: the check in our source that fired */
    int src_line;
} hs_error;

/* Option structs.  Every public options struct starts with
 *     size_t struct_size;
 * set to sizeof(the struct) by its HS_..._INIT macro (or 0, which means the
 * struct's first layout, release 0.1).  Fields are only ever appended, so a
 * program compiled against older headers keeps working with a newer
 * library (the fields it does not know read as 0 = default), and a newer
 * program that sets a field an older library does not know gets
 * HS_INVALID instead of a silent default.  Declare them as
 *     hs_scan_options o = HS_SCAN_OPTIONS_INIT;   then set fields,
 * or zero them ({0}) and leave struct_size 0.
 *
 * Output structs.  The structs the library fills (hs_scan_stats,
 * hs_index_stats, hs_stream_stats, hs_parquet_scan_stats, hs_snapshot_info)
 * start with `size_t struct_size` too, which the CALLER sets before the
 * call: to sizeof(the struct) with the HS_..._INIT macro, or 0 for the
 * struct's first layout (release 0.1).  The library writes only the first
 * struct_size bytes (never past the caller's struct, whatever fields later
 * releases append), leaves bytes past its own layout untouched, and sets
 * struct_size to the number of bytes it filled.  A struct_size from 1 to
 * sizeof(size_t)-1 gets nothing written (HS_INVALID where the function
 * returns a status).  Declare them as
 *     hs_scan_stats st = HS_SCAN_STATS_INIT;   hs_scan_get_stats(s, &st);
 * hs_error is not versioned: its layout is fixed for every release. */

/* Static string such as "HS_CORRUPT". */
HS_API const char *hs_status_name(hs_status s);

#ifdef __cplusplus
}
#endif
#endif

/*
 * base/opts.h - reading the public option structs whatever version of the
 * headers the caller was compiled with.
 *
 * Every public option struct starts with `size_t struct_size`: the size of
 * the struct as the caller's headers declare it, or 0, which means the
 * layout the struct had when struct_size was introduced (release 0.1: the
 * current layout).  Fields are only ever appended, so:
 *
 *   caller's size   what the library does
 *   -------------   -------------------------------------------------------
 *   0               reads the 0.1 layout (callers that zero-initialize)
 *   < ours          copies the caller's bytes, zero (= default) for the rest
 *   == ours         copies
 *   > ours          copies ours, and requires the bytes it does not know to
 *                   be zero (a newer caller that set a newer field gets
 *                   HS_INVALID naming the struct, not a silent default)
 *   > ours + 4096   HS_INVALID without reading past ours (garbage, not a
 *                   newer layout)
 *
 * HS_OPTS_IN(opt, type, err) rebinds the parameter `opt` (a const pointer,
 * may be NULL) to a normalized local copy, returning the error otherwise.
 * When a field is appended to a struct, its 0.1 size stays the offset of
 * the first appended field: that struct's entry point calls hs_opts_copy
 * with offsetof(type, that field) instead of HS_OPTS_IN, and the header says
 * "appended after 0.1" (hs_search_options.rerank, hs_compact_options.
 * zorder_by, hs_session_options.no_file_access; test_api's
 * test_struct_size checks each).
 *
 * Output structs (hs_scan_stats, hs_index_stats, hs_stream_stats,
 * hs_parquet_scan_stats, hs_snapshot_info: the structs the library fills)
 * start with `size_t struct_size` too, set by the caller, and the library
 * writes only what fits in the caller's struct:
 *
 *   caller's size   what the library writes
 *   -------------   -------------------------------------------------------
 *   0               the 0.1 layout (a zero-initialized caller's struct)
 *   < 8 (not 0)     nothing (HS_INVALID where the function returns a status)
 *   <= ours         the caller's first struct_size bytes of ours
 *   > ours          ours; the caller's bytes past it are not touched
 *
 * and then stores the number of bytes it filled in struct_size (a newer
 * caller learns which fields an older library filled).  Every writer of an
 * output struct fills a local copy of the whole struct and publishes it
 * with HS_OUT(type, out, local, v0_1 size); an output struct that gains fields
 * passes the offset of the first appended field as its v0_1 size, as
 * above (hs_snapshot_info.added_files_size).
 */
#ifndef HS_BASE_OPTS_H
#define HS_BASE_OPTS_H

#include "base/error.h"

#include <string.h>

#define HS_OPTS_V0_1(type) sizeof(type)

static inline hs_status hs_opts_copy(void *dst, size_t dst_size, size_t v0_1_size, const void *src,
                                     const char *what, hs_error *err)
{
    size_t n;
    memcpy(&n, src, sizeof n);
    if (n == 0)
        n = v0_1_size;
    if (n < sizeof(size_t))
        return hs_err_set(err, HS_INVALID, "%s: struct_size %zu is too small", what, n);
    if (n > dst_size + 4096)   /* uninitialized, not a newer header: do not read that far */
        return hs_err_set(err, HS_INVALID, "%s: struct_size %zu is not the size of any version "
                          "of it (this library's: %zu)", what, n, dst_size);
    memset(dst, 0, dst_size);
    if (n > dst_size) {
        const unsigned char *extra = (const unsigned char *)src + dst_size;
        for (size_t i = 0; i < n - dst_size; i++)
            if (extra[i])
                return hs_err_set(err, HS_INVALID,
                                  "%s: the caller's struct (%zu bytes) sets a field at byte %zu "
                                  "that this library (%zu bytes, version %s) does not know",
                                  what, n, dst_size + i, dst_size, HS_VERSION_STRING);
        n = dst_size;
    }
    memcpy(dst, src, n);
    memcpy(dst, &dst_size, sizeof dst_size);
    return HS_OK;
}

#define HS_OPTS_IN(opt, type, err)                                                          \
    type opt##_in_;                                                                         \
    if (opt) {                                                                              \
        HS_TRY(hs_opts_copy(&opt##_in_, sizeof opt##_in_, HS_OPTS_V0_1(type), opt, #type,   \
                            err));                                                          \
        opt = &opt##_in_;                                                                   \
    }

/* Copies the first bytes of src (a whole output struct of src_size bytes)
 * into the caller's struct dst, as much as dst's struct_size says fits
 * (see the top).  dst may be NULL (nothing is written). */
static inline hs_status hs_out_copy(void *dst, const void *src, size_t src_size,
                                    size_t v0_1_size, const char *what, hs_error *err)
{
    if (!dst)
        return HS_OK;
    size_t n;
    memcpy(&n, dst, sizeof n);
    if (n == 0)
        n = v0_1_size;
    if (n < sizeof(size_t))
        return hs_err_set(err, HS_INVALID, "%s: struct_size %zu is too small", what, n);
    if (n > src_size)
        n = src_size;
    memcpy((unsigned char *)dst + sizeof n, (const unsigned char *)src + sizeof n,
           n - sizeof n);
    memcpy(dst, &n, sizeof n);
    return HS_OK;
}

#define HS_OUT(type, dst, src, v0_1_size, err)                                         \
    ((void)sizeof(char[sizeof(src) == sizeof(type) ? 1 : -1]),                         \
     hs_out_copy((dst), &(src), sizeof(type), (v0_1_size), #type, (err)))

#endif

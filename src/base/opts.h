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

#endif

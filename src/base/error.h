/*
 * base/error.h - setting and propagating errors inside the library.
 *
 * Functions that can fail return hs_status and are marked HS_MUST_USE.  The
 * first failure fills the caller's hs_error (which may be NULL); callers up
 * the stack propagate with HS_TRY and may prepend context with hs_err_prefix
 * ("footer: " + "column 3: " + message).  Every corruption check goes through
 * HS_CORRUPT_AT so the error records the source line of the check that fired
 * (like SQLite's SQLITE_CORRUPT_BKPT), which makes fuzzer reports precise.
 */
#ifndef HS_BASE_ERROR_H
#define HS_BASE_ERROR_H

#include "hyperstream/common.h"
#include <stdarg.h>
#include <stdbool.h>

#define HS_MUST_USE __attribute__((warn_unused_result))
#define HS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define HS_LIKELY(x) __builtin_expect(!!(x), 1)
#define HS_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define HS_TRY(expr)                              \
    do {                                          \
        hs_status hs_try_s_ = (expr);             \
        if (HS_UNLIKELY(hs_try_s_ != HS_OK))      \
            return hs_try_s_;                     \
    } while (0)

/* Fill err (if non-NULL and not already holding an error) and return code. */
hs_status hs_err_set(hs_error *err, hs_status code, const char *fmt, ...) HS_PRINTF(3, 4);
hs_status hs_err_vset(hs_error *err, hs_status code, const char *fmt, va_list ap);
/* Same for HS_CORRUPT, recording the source location of the failed check. */
hs_status hs_err_corrupt_at(hs_error *err, const char *file, int line, const char *fmt, ...)
    HS_PRINTF(4, 5);
#define HS_CORRUPT_AT(err, ...) hs_err_corrupt_at((err), __FILE__, __LINE__, __VA_ARGS__)
/* Prepend "<prefix>: " to the message already in err (no-op when err is NULL or OK). */
void hs_err_prefix(hs_error *err, const char *fmt, ...) HS_PRINTF(2, 3);
/* Reset to HS_OK with an empty message. */
void hs_err_clear(hs_error *err);
/* Shorthand for out-of-memory. */
hs_status hs_err_nomem(hs_error *err, size_t bytes);

#endif

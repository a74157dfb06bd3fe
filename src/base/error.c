/*
 * base/error.c - status names and the caller-owned error struct.
 *
 * Invariants:
 *   - err may be NULL everywhere: then only the status code travels.
 *   - The first failure wins: hs_err_set on an err whose code is already
 *     non-OK leaves it untouched (the root cause is what the user needs;
 *     callers above it add context with hs_err_prefix instead).
 *   - msg is always NUL-terminated and truncated to HS_ERROR_MSG_MAX - 1.
 *   - src_file/src_line are set only by hs_err_corrupt_at (HS_CORRUPT_AT) and
 *     cleared by every other setter.
 */
#include "base/error.h"

#include <stdio.h>
#include <string.h>

const char *hs_status_name(hs_status s)
{
    switch (s) {
    case HS_OK: return "HS_OK";
    case HS_IO: return "HS_IO";
    case HS_CORRUPT: return "HS_CORRUPT";
    case HS_INVALID: return "HS_INVALID";
    case HS_NOMEM: return "HS_NOMEM";
    case HS_CONFLICT: return "HS_CONFLICT";
    case HS_NOT_FOUND: return "HS_NOT_FOUND";
    case HS_UNSUPPORTED: return "HS_UNSUPPORTED";
    case HS_INTERNAL: return "HS_INTERNAL";
    case HS_CANCELLED: return "HS_CANCELLED";
    case HS_BUSY: return "HS_BUSY";
    }
    return "HS_UNKNOWN";
}

hs_status hs_err_vset(hs_error *err, hs_status code, const char *fmt, va_list ap)
{
    if (!err || err->code != HS_OK || code == HS_OK)
        return code;
    err->code = code;
    err->src_file = NULL;
    err->src_line = 0;
    if (fmt)
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    else
        err->msg[0] = '\0';
    return code;
}

hs_status hs_err_set(hs_error *err, hs_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hs_err_vset(err, code, fmt, ap);
    va_end(ap);
    return code;
}

hs_status hs_err_corrupt_at(hs_error *err, const char *file, int line, const char *fmt, ...)
{
    if (!err || err->code != HS_OK)
        return HS_CORRUPT;
    va_list ap;
    va_start(ap, fmt);
    hs_err_vset(err, HS_CORRUPT, fmt, ap);
    va_end(ap);
    err->src_file = file;
    err->src_line = line;
    return HS_CORRUPT;
}

void hs_err_prefix(hs_error *err, const char *fmt, ...)
{
    if (!err || err->code == HS_OK)
        return;
    char prefix[HS_ERROR_MSG_MAX];
    char old[HS_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t n_old = strnlen(err->msg, sizeof err->msg - 1);
    memcpy(old, err->msg, n_old);
    /* "<prefix>: <old>", truncated to the buffer, always NUL-terminated. */
    size_t cap = sizeof err->msg - 1, pos = 0;
    size_t n_prefix = strlen(prefix);
    if (n_prefix > cap)
        n_prefix = cap;
    memcpy(err->msg, prefix, n_prefix);
    pos = n_prefix;
    for (const char *sep = ": "; *sep && pos < cap; sep++)
        err->msg[pos++] = *sep;
    size_t n_copy = n_old < cap - pos ? n_old : cap - pos;
    memcpy(err->msg + pos, old, n_copy);
    pos += n_copy;
    err->msg[pos] = '\0';
}

void hs_err_clear(hs_error *err)
{
    if (!err)
        return;
    err->code = HS_OK;
    err->msg[0] = '\0';
    err->src_file = NULL;
    err->src_line = 0;
}

hs_status hs_err_nomem(hs_error *err, size_t bytes)
{
    return hs_err_set(err, HS_NOMEM, "out of memory allocating %zu bytes", bytes);
}

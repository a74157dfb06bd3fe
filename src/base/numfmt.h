/*
 * base/numfmt.h - number <-> text conversions that ignore the process locale.
 *
 * Every number the library reads from text (filter literals, JSON Lines,
 * partition paths, expression text, CLI arguments) or writes as text that is
 * read again (metadata JSON, partition paths, JSON Lines, explain output)
 * goes through these functions, never through strtod/strtof/printf("%g")
 * directly: those follow LC_NUMERIC, so a host program that calls
 * setlocale(LC_ALL, "") under de_DE.UTF-8 would make "1.5" parse as 1 and
 * 1.5 print as "1,5".  The functions behave exactly as their libc
 * counterparts do in the "C" locale (same rounding, same accepted syntax,
 * same errno), whatever the process or thread locale is.
 *
 * JSON: jansson converts reals with strtod/snprintf and patches the locale's
 * decimal point in and out, which works for one-byte points (',') but not
 * for multibyte ones (ps_AF's U+066B: parsing any real then fails an assert
 * and aborts the process).  The hs_json_* wrappers below run jansson's
 * parser and encoder in the "C" locale; the library calls jansson's text
 * functions only through them.
 *
 * Thread safety: all functions are safe to call from any thread at any time;
 * none touches the process locale.  Integer conversions (strtol, "%d") do
 * not depend on the locale and need nothing from here.
 */
#ifndef HS_BASE_NUMFMT_H
#define HS_BASE_NUMFMT_H

#include "base/error.h"
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>

/* strtod / strtof in the "C" locale ('.' is the decimal point). */
double hs_strtod(const char *s, char **end);
float hs_strtof(const char *s, char **end);

/* snprintf / vsnprintf in the "C" locale: same return value (the length the
 * full text needs, negative on an encoding error), same truncation. */
int hs_snprintf_c(char *dst, size_t cap, const char *fmt, ...) HS_PRINTF(3, 4);
int hs_vsnprintf_c(char *dst, size_t cap, const char *fmt, va_list ap);

/* jansson's json_loads / json_loadb / json_dumps / json_dump_callback in the
 * "C" locale (same arguments, results and ownership). */
json_t *hs_json_loads(const char *text, size_t flags, json_error_t *error);
json_t *hs_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *error);
char *hs_json_dumps(const json_t *json, size_t flags);
int hs_json_dump_callback(const json_t *json, json_dump_callback_t callback, void *data,
                          size_t flags);

#endif

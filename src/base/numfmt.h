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
 * Thread safety: all functions are safe to call from any thread at any time;
 * none touches the process locale.  Integer conversions (strtol, "%d") do
 * not depend on the locale and need nothing from here.
 */
#ifndef HS_BASE_NUMFMT_H
#define HS_BASE_NUMFMT_H

#include "base/error.h"
#include <stdarg.h>
#include <stddef.h>

/* strtod / strtof in the "C" locale ('.' is the decimal point). */
double hs_strtod(const char *s, char **end);
float hs_strtof(const char *s, char **end);

/* snprintf / vsnprintf in the "C" locale: same return value (the length the
 * full text needs, negative on an encoding error), same truncation. */
int hs_snprintf_c(char *dst, size_t cap, const char *fmt, ...) HS_PRINTF(3, 4);
int hs_vsnprintf_c(char *dst, size_t cap, const char *fmt, va_list ap);

#endif

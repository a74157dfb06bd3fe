/*
 * base/numfmt.c - locale-independent strtod/strtof/snprintf (see numfmt.h).
 *
 * Design: one "C" locale object, made once (pthread_once) with newlocale()
 * and never freed.  Parsing uses strtod_l/strtof_l with it: no state is
 * touched, so parsing costs what strtod costs.  libc has no snprintf_l, so
 * formatting switches the calling thread (only) to the "C" locale with
 * uselocale(), formats, and switches back to whatever the thread had
 * (LC_GLOBAL_LOCALE or the host's own per-thread locale).  uselocale() only
 * stores a few thread-local pointers, so the pair costs a few nanoseconds;
 * nothing that runs between the two calls can observe the switch.
 *
 * The jansson wrappers use the same switch around the whole parse or dump.
 * A callback of json_dump_callback therefore runs in the "C" locale too;
 * the library's callbacks only append bytes.
 *
 * newlocale(LC_ALL_MASK, "C", 0) returns a static object in glibc and musl,
 * so it cannot fail there.  Should it fail on another libc, the functions
 * fall back to the plain libc calls (the behaviour before this module).
 */
#define _GNU_SOURCE /* strtod_l, strtof_l (glibc declares them only then) */
#include "base/numfmt.h"

#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static locale_t get_c_locale(void)
{
    pthread_once(&c_locale_once, c_locale_init);
    return c_locale;
}

/* Switches the calling thread to the "C" locale; returns what leave_c()
 * restores, (locale_t)0 when the C locale could not be made (then the
 * caller's locale stays). */
static locale_t enter_c(void)
{
    locale_t c = get_c_locale();
    return c ? uselocale(c) : (locale_t)0;
}

static void leave_c(locale_t old)
{
    if (old)
        uselocale(old);
}

double hs_strtod(const char *s, char **end)
{
    locale_t c = get_c_locale();
    return c ? strtod_l(s, end, c) : strtod(s, end);
}

float hs_strtof(const char *s, char **end)
{
    locale_t c = get_c_locale();
    return c ? strtof_l(s, end, c) : strtof(s, end);
}

int hs_vsnprintf_c(char *dst, size_t cap, const char *fmt, va_list ap)
{
    locale_t old = enter_c();
    int n = vsnprintf(dst, cap, fmt, ap);
    leave_c(old);
    return n;
}

int hs_snprintf_c(char *dst, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = hs_vsnprintf_c(dst, cap, fmt, ap);
    va_end(ap);
    return n;
}

json_t *hs_json_loads(const char *text, size_t flags, json_error_t *error)
{
    locale_t old = enter_c();
    json_t *j = json_loads(text, flags, error);
    leave_c(old);
    return j;
}

json_t *hs_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *error)
{
    locale_t old = enter_c();
    json_t *j = json_loadb(buf, len, flags, error);
    leave_c(old);
    return j;
}

char *hs_json_dumps(const json_t *json, size_t flags)
{
    locale_t old = enter_c();
    char *s = json_dumps(json, flags);
    leave_c(old);
    return s;
}

int hs_json_dump_callback(const json_t *json, json_dump_callback_t callback, void *data,
                          size_t flags)
{
    locale_t old = enter_c();
    int rc = json_dump_callback(json, callback, data, flags);
    leave_c(old);
    return rc;
}

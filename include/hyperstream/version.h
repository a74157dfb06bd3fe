/*
 * hyperstream/version.h - the version of the HyperStreamDB C API.
 *
 * The macros give the version of the headers a program was compiled with;
 * hs_version() gives the version of the library it runs against (they
 * differ when a program built against one release loads another's shared
 * library).  Both equal pyproject.toml's [project] version: CMake refuses
 * to configure when they disagree.
 */
#ifndef HYPERSTREAM_VERSION_H
#define HYPERSTREAM_VERSION_H

#include "hyperstream/common.h"   /* HS_API (common.h includes this header too) */

#define HS_VERSION_MAJOR 0
#define HS_VERSION_MINOR 1
#define HS_VERSION_PATCH 0
#define HS_VERSION_STRING "0.1.0"
/* One comparable number: HS_VERSION_NUMBER >= HS_MAKE_VERSION(0, 2, 0). */
#define HS_MAKE_VERSION(major, minor, patch) ((major) * 1000000 + (minor) * 1000 + (patch))
#define HS_VERSION_NUMBER HS_MAKE_VERSION(HS_VERSION_MAJOR, HS_VERSION_MINOR, HS_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, "MAJOR.MINOR.PATCH" (static string). */
HS_API const char *hs_version(void);
/* The library's HS_VERSION_NUMBER. */
HS_API int hs_version_number(void);

#ifdef __cplusplus
}
#endif
#endif

/*
 * base/version.c - hs_version (see hyperstream/version.h): the version this
 * library was built as, compiled from the same header the callers see.
 */
#include "hyperstream/common.h"

const char *hs_version(void) { return HS_VERSION_STRING; }

int hs_version_number(void) { return HS_VERSION_NUMBER; }

/*
 * tests/c/harness.h - the minimal unit-test harness for C tests.
 *
 * A test file defines test functions and a main that calls HS_RUN(test_x)
 * for each and returns hs_test_summary().  CHECK records a failure with file
 * and line and continues; REQUIRE returns from the test function.
 * Tests that need ../shared/testdata call hs_testdata_dir(), which returns
 * NULL when it is absent: then they print "SKIP" and count as skipped.
 */
#ifndef HS_TEST_HARNESS_H
#define HS_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperstream/common.h"

extern int hs_test_failures;
extern int hs_test_checks;
extern const char *hs_test_current;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        hs_test_checks++;                                                               \
        if (!(cond)) {                                                                  \
            hs_test_failures++;                                                         \
            fprintf(stderr, "%s:%d: %s: CHECK failed: %s\n", __FILE__, __LINE__,        \
                    hs_test_current, #cond);                                            \
        }                                                                               \
    } while (0)
#define REQUIRE(cond)                                                                   \
    do {                                                                                \
        hs_test_checks++;                                                               \
        if (!(cond)) {                                                                  \
            hs_test_failures++;                                                         \
            fprintf(stderr, "%s:%d: %s: REQUIRE failed: %s\n", __FILE__, __LINE__,      \
                    hs_test_current, #cond);                                            \
            return;                                                                     \
        }                                                                               \
    } while (0)
/* For hs_status-returning calls: prints the error message on failure. */
#define CHECK_OK(call, errp)                                                            \
    do {                                                                                \
        hs_test_checks++;                                                               \
        int s_ = (int)(call);                                                           \
        if (s_ != 0) {                                                                  \
            hs_test_failures++;                                                         \
            fprintf(stderr, "%s:%d: %s: %s returned %d: %s\n", __FILE__, __LINE__,      \
                    hs_test_current, #call, s_, hs_test_errmsg(errp));             \
            return;                                                                     \
        }                                                                               \
    } while (0)

#define HS_RUN(fn)                                                                      \
    do {                                                                                \
        hs_test_current = #fn;                                                          \
        int before_ = hs_test_failures;                                                 \
        fn();                                                                           \
        fprintf(stderr, "%s %s\n", hs_test_failures == before_ ? "ok  " : "FAIL", #fn); \
    } while (0)

int hs_test_summary(void);
/* The message of an error struct, "" for NULL (a function so that passing &err does not warn). */
const char *hs_test_errmsg(const hs_error *e);
/* ../shared/testdata (from $HS_TESTDATA), or NULL when absent. */
const char *hs_testdata_dir(void);
/* A scratch directory for this test binary (created), from $HS_TMP or /tmp. */
const char *hs_test_tmpdir(void);

#endif

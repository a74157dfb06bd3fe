/*
 * tests/c/harness.h - the minimal unit-test harness for C tests.
 *
 * A test file defines test functions and a main that calls HS_RUN(test_x)
 * for each and returns hs_test_summary().  CHECK records a failure with file
 * and line and continues; REQUIRE returns from the test function.
 *
 * Skips: a test that cannot run here calls SKIP("why") (prints "SKIP <test>:
 * why", counts one skip, returns from the test function).  Tests that need
 * ../shared/testdata call hs_testdata_dir(), which returns NULL when it is
 * absent, then SKIP.  SKIP_UNLESS_CI is for a missing oracle or a part of
 * this project that should be there: it skips locally, and under CI=true it
 * is a failure (a run that lost its oracle must not pass).
 *
 * hs_test_summary prints "<checks> checks, <failures> failures, <skips>
 * skipped" and returns main's exit status: 1 when a check failed or when the
 * program made no check and skipped nothing (a test that checked nothing
 * proves nothing), HS_TEST_ALL_SKIPPED (77, ctest's SKIP_RETURN_CODE, see
 * CMakeLists.txt) when every test skipped, else 0.
 */
#ifndef HS_TEST_HARNESS_H
#define HS_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hyperstream/common.h"

#define HS_TEST_ALL_SKIPPED 77

extern int hs_test_failures;
extern int hs_test_checks;
extern int hs_test_skips;
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

/* Records a skip of the current test (with the reason) and returns from it. */
#define SKIP(why)                                                                       \
    do {                                                                                \
        hs_test_skip(why);                                                              \
        return;                                                                         \
    } while (0)
/* A skip locally, a failure when the environment says CI=true. */
#define SKIP_UNLESS_CI(why)                                                             \
    do {                                                                                \
        hs_test_skip_unless_ci(__FILE__, __LINE__, why);                                \
        return;                                                                         \
    } while (0)

#define HS_RUN(fn)                                                                      \
    do {                                                                                \
        hs_test_current = #fn;                                                          \
        int before_ = hs_test_failures;                                                 \
        fn();                                                                           \
        fprintf(stderr, "%s %s\n", hs_test_failures == before_ ? "ok  " : "FAIL", #fn); \
    } while (0)

int hs_test_summary(void);
/* Counts and prints a skip of the current test ("SKIP <test>: why"). */
void hs_test_skip(const char *why);
/* hs_test_skip, or under CI=true a failure naming file and line. */
void hs_test_skip_unless_ci(const char *file, int line, const char *why);
/* 1 when the environment variable CI is "true" or "1" (what CI services set). */
int hs_test_in_ci(void);
/* The message of an error struct, "" for NULL (a function so that passing &err does not warn). */
const char *hs_test_errmsg(const hs_error *e);
/* ../shared/testdata (from $HS_TESTDATA), or NULL when absent. */
const char *hs_testdata_dir(void);
/* A scratch directory for this test binary (created), from $HS_TMP or /tmp. */
const char *hs_test_tmpdir(void);

#endif

/*
 * tests/c/harness.h - the minimal unit-test harness for C tests.
 *
 * A test file defines test functions and a main that calls HS_RUN(test_x)
 * for each and returns hs_test_summary().  CHECK records a failure with file
 * and line and continues; REQUIRE returns from the test function.
 *
 * Skips: a test that cannot run here calls SKIP("why") (prints "SKIP <test>:
 * why", counts one skip, returns from the test function).  Only what may be
 * absent anywhere skips: ../shared/testdata (hs_testdata_dir() returns NULL
 * when it is absent), a CPU feature.  A missing part of this project is a
 * failure, never a skip.
 *
 * A test function that made no check and did not skip fails: a test that
 * checked nothing proves nothing.  hs_test_summary prints "<checks> checks,
 * <failures> failures, <skips> skipped" and returns main's exit status: 1
 * when something failed, HS_TEST_ALL_SKIPPED (77, ctest's SKIP_RETURN_CODE,
 * see CMakeLists.txt) when nothing was checked because every test skipped,
 * else 0.
 */
#ifndef HS_TEST_HARNESS_H
#define HS_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <stdint.h>
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

/* Runs one test function: "ok" or "FAIL" with its name; a function that
 * made no check and did not skip fails ("made no checks"). */
#define HS_RUN(fn)                                                                      \
    do {                                                                                \
        hs_test_begin(#fn);                                                             \
        fn();                                                                           \
        hs_test_end();                                                                  \
    } while (0)

void hs_test_begin(const char *name);
void hs_test_end(void);
int hs_test_summary(void);
/* Counts and prints a skip of the current test ("SKIP <test>: why"). */
void hs_test_skip(const char *why);
/* The message of an error struct, "" for NULL (a function so that passing &err does not warn). */
const char *hs_test_errmsg(const hs_error *e);
/* ../shared/testdata (from $HS_TESTDATA), or NULL when absent. */
const char *hs_testdata_dir(void);
/* A scratch directory for this test binary (created), from $HS_TMP or /tmp. */
const char *hs_test_tmpdir(void);
/* The test matrix switch: HS_TEST_STORAGE=s3 puts the tables of the table,
 * index and vector tests on the S3 server that tests/s3/s3server.py started
 * (HS_TEST_S3_BUCKET; the ctest entries of those tests run through it when
 * the switch is set).  hs_test_on_s3() says whether it is set;
 * hs_test_table_root() is where this binary's tables live: hs_test_tmpdir()
 * locally, s3://<bucket>/<test>-<pid>-<time> on S3 (exits with a message when
 * the switch is set without a server).  Tests that are local by nature (they
 * damage files in place, mmap, permissions) SKIP_ON_S3("why"). */
int hs_test_on_s3(void);
/* hs_mem_live_count() after dropping the S3 layer's process-wide caches
 * (byte, HEAD; as tests clear the footer and index caches before counting),
 * so leak checks mean the same on both sides of the storage matrix. */
int64_t hs_test_live_count(void);
const char *hs_test_table_root(void);
/* Files under the table root's storage, local or S3 alike (through io.h):
 * whether a file or object exists; how many files or objects below dir (any
 * depth) have `part` in their name ("" for all); a whole file written (0 on
 * success). */
bool hs_test_exists(const char *uri);
int hs_test_count_files(const char *dir, const char *part);
int hs_test_write_file(const char *uri, const void *data, size_t len);
#define SKIP_ON_S3(why)                                                                 \
    do {                                                                                \
        if (hs_test_on_s3())                                                            \
            SKIP("local storage only: " why);                                           \
    } while (0)

/* A counting allocator for memory-bound tests: hs_test_count_allocs()
 * installs it as the library's allocation hook (call it first in main,
 * before any allocation, so that every block carries its size header);
 * then the live bytes, the peak since hs_test_alloc_set_peak and the
 * number of allocations so far are read with the functions below. */
void hs_test_count_allocs(void);
int64_t hs_test_alloc_live(void);
int64_t hs_test_alloc_peak(void);
void hs_test_alloc_set_peak(int64_t v);
int64_t hs_test_alloc_count(void);

#endif

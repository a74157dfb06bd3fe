#include "harness.h"
#include "base/mem.h"
#include "io/s3.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int hs_test_failures;
int hs_test_checks;
int hs_test_skips;
const char *hs_test_current = "";

int hs_test_summary(void)
{
    fprintf(stderr, "%d checks, %d failures, %d skipped\n", hs_test_checks, hs_test_failures,
            hs_test_skips);
    if (hs_test_failures)
        return 1;
    if (hs_test_checks == 0 && hs_test_skips == 0) {
        fprintf(stderr, "FAIL: this test program made no checks\n");
        return 1;
    }
    return hs_test_checks == 0 ? HS_TEST_ALL_SKIPPED : 0;
}

static int run_failures, run_checks, run_skips;   /* at hs_test_begin */

void hs_test_begin(const char *name)
{
    hs_test_current = name;
    run_failures = hs_test_failures;
    run_checks = hs_test_checks;
    run_skips = hs_test_skips;
}

void hs_test_end(void)
{
    if (hs_test_checks == run_checks && hs_test_skips == run_skips) {
        hs_test_failures++;
        fprintf(stderr, "%s: made no checks\n", hs_test_current);
    }
    fprintf(stderr, "%s %s\n", hs_test_failures == run_failures ? "ok  " : "FAIL", hs_test_current);
}

void hs_test_skip(const char *why)
{
    hs_test_skips++;
    fprintf(stderr, "SKIP %s: %s\n", hs_test_current, why);
}

const char *hs_testdata_dir(void)
{
    static char path[4096];
    const char *d = getenv("HS_TESTDATA");
    struct stat st;
    if (!d || !*d)
        d = "../shared/testdata";
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
        return NULL;
    snprintf(path, sizeof path, "%s", d);
    return path;
}

const char *hs_test_tmpdir(void)
{
    static char path[4096];
    if (!path[0]) {
        const char *d = getenv("HS_TMP");
        snprintf(path, sizeof path, "%s/hs-test-%d", d && *d ? d : "/tmp", (int)getpid());
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", d && *d ? d : "/tmp");
        mkdir(parent, 0755);
        mkdir(path, 0755);
    }
    return path;
}

int hs_test_on_s3(void)
{
    const char *v = getenv("HS_TEST_STORAGE");
    if (!v || !*v || strcmp(v, "local") == 0)
        return 0;
    if (strcmp(v, "s3") != 0) {
        fprintf(stderr, "HS_TEST_STORAGE=%s: expected local or s3\n", v);
        exit(2);
    }
    return 1;
}

int64_t hs_test_live_count(void)
{
    hs_s3_reset();
    return hs_mem_live_count();
}

const char *hs_test_table_root(void)
{
    static char path[4096];
    if (path[0])
        return path;
    if (!hs_test_on_s3()) {
        snprintf(path, sizeof path, "%s", hs_test_tmpdir());
        return path;
    }
    const char *bucket = getenv("HS_TEST_S3_BUCKET");
    if (!bucket || !*bucket) {
        fprintf(stderr, "HS_TEST_STORAGE=s3 without a server: run the test through "
                        "tests/s3/s3server.py run -- <test> (ctest does)\n");
        exit(2);
    }
    snprintf(path, sizeof path, "s3://%s/hs-test-%d-%ld", bucket, (int)getpid(),
             (long)time(NULL));
    return path;
}

const char *hs_test_errmsg(const hs_error *e)
{
    return e ? e->msg : "";
}

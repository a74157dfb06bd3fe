#include "harness.h"

#include <sys/stat.h>
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

int hs_test_in_ci(void)
{
    const char *ci = getenv("CI");
    return ci && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0);
}

void hs_test_skip(const char *why)
{
    hs_test_skips++;
    fprintf(stderr, "SKIP %s: %s\n", hs_test_current, why);
}

void hs_test_skip_unless_ci(const char *file, int line, const char *why)
{
    if (!hs_test_in_ci()) {
        hs_test_skip(why);
        return;
    }
    hs_test_failures++;
    fprintf(stderr, "%s:%d: %s: required under CI=true: %s\n", file, line, hs_test_current,
            why);
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

const char *hs_test_errmsg(const hs_error *e)
{
    return e ? e->msg : "";
}

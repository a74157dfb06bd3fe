#include "harness.h"

#include <sys/stat.h>
#include <unistd.h>

int hs_test_failures;
int hs_test_checks;
const char *hs_test_current = "";

int hs_test_summary(void)
{
    fprintf(stderr, "%d checks, %d failures\n", hs_test_checks, hs_test_failures);
    return hs_test_failures ? 1 : 0;
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

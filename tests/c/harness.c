#include "harness.h"
#include "base/mem.h"
#include "io/io.h"
#include "io/s3.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
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
        char parent[2048];
        snprintf(parent, sizeof parent, "%s", d && *d ? d : "/tmp");
        mkdir(parent, 0755);
        /* a fresh directory each run: a pid-named one can be a left-over of
         * an earlier run with the same pid, whose tables then "exist" */
        snprintf(path, sizeof path, "%s/hs-test-%d-XXXXXX", parent, (int)getpid());
        if (!mkdtemp(path)) {
            fprintf(stderr, "cannot create a directory under %s\n", parent);
            exit(2);
        }
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

bool hs_test_exists(const char *uri)
{
    hs_error err = {0};
    bool exists = false;
    uint64_t size = 0;
    return hs_io_stat(uri, &exists, &size, &err) == HS_OK && exists;
}

int hs_test_count_files(const char *dir, const char *part)
{
    int n = 0;
    if (hs_io_is_object_uri(dir)) {
        hs_error err = {0};
        char **names = NULL;
        size_t n_names = 0;
        if (hs_io_list(dir, true, &names, &n_names, &err) != HS_OK)
            return -1;
        for (size_t i = 0; i < n_names; i++) {
            const char *base = strrchr(names[i], '/');
            n += strstr(base ? base + 1 : names[i], part) != NULL;
            hs_free(names[i]);
        }
        hs_free(names);
        return n;
    }
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "find '%s' -type f -name '*%s*' 2>/dev/null | wc -l",
             hs_io_local_path(dir), part);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    if (fscanf(p, "%d", &n) != 1)
        n = -1;
    pclose(p);
    return n;
}

int hs_test_write_file(const char *uri, const void *data, size_t len)
{
    hs_error err = {0};
    hs_wfile *w = NULL;
    if (hs_io_create(uri, 0, &w, &err) != HS_OK)
        return -1;
    if (hs_wfile_write(w, data, len, &err) != HS_OK) {
        hs_wfile_abort(w);
        return -1;
    }
    return hs_wfile_close(w, &err) == HS_OK ? 0 : -1;
}

/* ---- counting allocator (harness.h): every block carries its size in a
 * 16-byte header (keeps malloc's alignment); atomic: the library's threads
 * allocate too ---- */

#define CA_HDR 16
static _Atomic int64_t ca_live, ca_peak, ca_count;

static void ca_note(int64_t delta)
{
    int64_t now = atomic_fetch_add(&ca_live, delta) + delta;
    int64_t p = atomic_load(&ca_peak);
    while (now > p && !atomic_compare_exchange_weak(&ca_peak, &p, now)) {
    }
}

static void *ca_malloc(size_t n, void *ctx)
{
    (void)ctx;
    uint8_t *p = malloc(n + CA_HDR);
    if (!p)
        return NULL;
    memcpy(p, &n, sizeof n);
    ca_note((int64_t)n);
    atomic_fetch_add(&ca_count, 1);
    return p + CA_HDR;
}

static void ca_free(void *q, void *ctx)
{
    (void)ctx;
    if (!q)
        return;
    uint8_t *p = (uint8_t *)q - CA_HDR;
    size_t n;
    memcpy(&n, p, sizeof n);
    ca_note(-(int64_t)n);
    free(p);
}

static void *ca_realloc(void *q, size_t n, void *ctx)
{
    if (!q)
        return ca_malloc(n, ctx);
    uint8_t *p = (uint8_t *)q - CA_HDR;
    size_t old;
    memcpy(&old, p, sizeof old);
    uint8_t *r = realloc(p, n + CA_HDR);
    if (!r)
        return NULL;
    memcpy(r, &n, sizeof n);
    ca_note((int64_t)n - (int64_t)old);
    return r + CA_HDR;
}

void hs_test_count_allocs(void)
{
    static const hs_alloc_hook hook = {ca_malloc, ca_realloc, ca_free, NULL};
    hs_set_alloc_hook(&hook);
}

int64_t hs_test_alloc_live(void) { return atomic_load(&ca_live); }
int64_t hs_test_alloc_peak(void) { return atomic_load(&ca_peak); }
void hs_test_alloc_set_peak(int64_t v) { atomic_store(&ca_peak, v); }
int64_t hs_test_alloc_count(void) { return atomic_load(&ca_count); }

/*
 * tests/c/test_fcache.c - table/fcache.c, the cache of objects decoded from
 * immutable files (manifests, index sidecars, vector index images).
 *
 * Oracle: counters kept by the test's own loader and free function (loads,
 * frees, objects alive) and a model of what must be shared: the same path
 * and key share one object while the file is unchanged; another key, a
 * rewritten file, a zero budget or an unusable file never do; every load is
 * freed exactly once by the end (also under eviction, many thousands of
 * entries and four threads); the bytes kept stay within the budget apart
 * from referenced entries.
 */
#include "harness.h"

#include "base/mem.h"
#include "table/fcache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct obj {
    int file;        /* which test file */
    int64_t key;
    int gen;         /* the file's content generation when loaded */
} obj;

static int g_loads, g_frees;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_gen[64];   /* content generation written into each file */

static void free_obj(void *o)
{
    pthread_mutex_lock(&g_mu);
    g_frees++;
    pthread_mutex_unlock(&g_mu);
    hs_free(o);
}

static tbl_fcache g_c = TBL_FCACHE_INIT("HS_TEST_FCACHE_MB", 1, free_obj);

typedef struct lctx {
    int file;
    int64_t key;
    size_t cost;
    int unusable;    /* 1: *obj NULL, 2: error */
} lctx;

static hs_status load(void *ctx, const char *path, tbl_fref *ref, void **out, size_t *cost,
                      hs_error *err)
{
    (void)ref;
    lctx *x = ctx;
    if (x->unusable == 2)
        return hs_err_set(err, HS_CORRUPT, "%s: bad", path);
    if (x->unusable == 1)
        return HS_OK;
    FILE *f = fopen(path, "rb");
    int gen = -1;
    if (!f || fscanf(f, "%d", &gen) != 1)
        gen = -1;
    if (f)
        fclose(f);
    obj *o = hs_calloc(1, sizeof *o);
    if (!o)
        return hs_err_nomem(err, sizeof *o);
    o->file = x->file;
    o->key = x->key;
    o->gen = gen;
    pthread_mutex_lock(&g_mu);
    g_loads++;
    pthread_mutex_unlock(&g_mu);
    *out = o;
    *cost = x->cost;
    return HS_OK;
}

static char g_paths[64][512];

static void write_file(int i, int gen)
{
    FILE *f = fopen(g_paths[i], "wb");
    REQUIRE(f);
    fprintf(f, "%d\n", gen);
    for (int k = 0; k < gen % 7; k++)   /* sizes differ between generations */
        fputc('x', f);
    fclose(f);
    g_gen[i] = gen;
}

static obj *get(int file, int64_t key, size_t cost, tbl_fref **ref)
{
    lctx x = {file, key, cost, 0};
    void *o = NULL;
    hs_error err = {0};
    if (tbl_fcache_get(&g_c, g_paths[file], &key, 1, load, &x, &o, ref, &err) != HS_OK) {
        fprintf(stderr, "tbl_fcache_get: %s\n", err.msg);
        return NULL;   /* the callers' REQUIRE / the threads' count report it */
    }
    return o;
}

static void test_sharing(void)
{
    tbl_fcache_set_budget_mb(&g_c, 1);
    int l0 = g_loads;
    tbl_fref *r1, *r2, *r3;
    obj *a = get(0, 7, 100, &r1), *b = get(0, 7, 100, &r2), *c = get(0, 8, 100, &r3);
    REQUIRE(a && b && c);
    CHECK(a == b && a != c);
    CHECK(g_loads - l0 == 2);
    CHECK(a->gen == g_gen[0] && tbl_fref_file_size(r1) > 0);
    tbl_fcache_release(&g_c, r1);
    tbl_fcache_release(&g_c, r2);
    tbl_fcache_release(&g_c, r3);
    /* the file rewritten in place: loaded again; the old object stays valid
     * for its holder until released */
    tbl_fref *old;
    obj *o = get(0, 7, 100, &old);
    usleep(15000);
    write_file(0, g_gen[0] + 1);
    tbl_fref *nr;
    obj *n = get(0, 7, 100, &nr);
    CHECK(n != o && n->gen == g_gen[0] && o->gen == g_gen[0] - 1);
    tbl_fcache_release(&g_c, old);
    tbl_fcache_release(&g_c, nr);
    /* unusable and failing loads: nothing cached, nothing handed out */
    lctx x = {1, 1, 10, 1};
    void *p = NULL;
    tbl_fref *r = NULL;
    hs_error err = {0};
    CHECK_OK(tbl_fcache_get(&g_c, g_paths[1], NULL, 0, load, &x, &p, &r, &err), &err);
    CHECK(!p && !r);
    x.unusable = 2;
    CHECK(tbl_fcache_get(&g_c, g_paths[1], NULL, 0, load, &x, &p, &r, &err) == HS_CORRUPT);
    CHECK(!p && !r);
    /* a missing file is loaded uncached (the loader reports) */
    char missing[600];
    snprintf(missing, sizeof missing, "%s.missing", g_paths[1]);
    x.unusable = 0;
    int64_t k = 3;
    hs_err_clear(&err);
    CHECK_OK(tbl_fcache_get(&g_c, missing, &k, 1, load, &x, &p, &r, &err), &err);
    CHECK(p && r && ((obj *)p)->gen == -1 && tbl_fref_file_size(r) == -1);
    tbl_fcache_release(&g_c, r);
    tbl_fcache_clear(&g_c);
    CHECK(g_loads == g_frees);
}

static void test_budget(void)
{
    /* budget 0: every get loads a private copy, freed at release */
    tbl_fcache_set_budget_mb(&g_c, 0);
    int l0 = g_loads, f0 = g_frees;
    tbl_fref *r1, *r2;
    obj *a = get(2, 1, 10, &r1), *b = get(2, 1, 10, &r2);
    CHECK(a != b && g_loads - l0 == 2);
    tbl_fcache_release(&g_c, r1);
    tbl_fcache_release(&g_c, r2);
    CHECK(g_frees - f0 == 2);
    /* 1 MiB and 300 KiB objects: at most three stay cached */
    tbl_fcache_set_budget_mb(&g_c, 1);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 16; i++) {
            tbl_fref *r;
            REQUIRE(get(i, 5, 300 << 10, &r));
            tbl_fcache_release(&g_c, r);
            CHECK(g_loads - g_frees <= 3);
        }
    /* an object larger than the budget is handed out, never kept */
    tbl_fref *big;
    l0 = g_loads;
    REQUIRE(get(20, 1, 2 << 20, &big));
    tbl_fcache_release(&g_c, big);
    REQUIRE(get(20, 1, 2 << 20, &big));
    tbl_fcache_release(&g_c, big);
    CHECK(g_loads - l0 == 2);
    /* referenced entries are not evicted; they leave at their release */
    tbl_fref *held[8];
    for (int i = 0; i < 8; i++)
        REQUIRE(get(30 + i, 9, 300 << 10, &held[i]));
    CHECK(g_loads - g_frees >= 8);
    for (int i = 0; i < 8; i++)
        tbl_fcache_release(&g_c, held[i]);
    CHECK(g_loads - g_frees <= 3);
    tbl_fcache_set_budget_mb(&g_c, 1);
    tbl_fcache_clear(&g_c);
    CHECK(g_loads == g_frees);
}

/* thousands of entries (the buckets grow) answer from the cache */
static void test_many(void)
{
    tbl_fcache_set_budget_mb(&g_c, 64);
    int l0 = g_loads;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t k = 0; k < 5000; k++) {
            tbl_fref *r;
            obj *o = get((int)(k % 40), k, 64, &r);
            REQUIRE(o);
            CHECK(o->key == k && o->file == (int)(k % 40));
            tbl_fcache_release(&g_c, r);
        }
    CHECK(g_loads - l0 == 5000);
    tbl_fcache_set_budget_mb(&g_c, 1);
    tbl_fcache_clear(&g_c);
    CHECK(g_loads == g_frees);
}

static int g_bad;   /* wrong objects seen by the threads */

static void *th_main(void *p)
{
    uint64_t s = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull + 1;
    tbl_fref *held[4] = {0};
    for (int i = 0; i < 3000; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        int file = (int)(s % 24), slot = (int)((s >> 8) % 4);
        int64_t key = (int64_t)((s >> 16) % 3);
        tbl_fcache_release(&g_c, held[slot]);
        obj *o = get(file, key, 100 << 10, &held[slot]);
        if (!o || o->file != file || o->key != key) {
            __atomic_add_fetch(&g_bad, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    for (int k = 0; k < 4; k++)
        tbl_fcache_release(&g_c, held[k]);
    return NULL;
}

static void test_threads(void)
{
    tbl_fcache_set_budget_mb(&g_c, 1);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        REQUIRE(pthread_create(&th[i], NULL, th_main, (void *)(uintptr_t)(i + 1)) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(g_bad == 0);
    tbl_fcache_set_budget_mb(&g_c, 1);
    tbl_fcache_clear(&g_c);
    CHECK(g_loads == g_frees);
}

int main(void)
{
    for (int i = 0; i < 64; i++) {
        snprintf(g_paths[i], sizeof g_paths[i], "%s/fcache-%d-%d", hs_test_tmpdir(), (int)getpid(),
                 i);
        write_file(i, 1);
    }
    int64_t live = hs_mem_live_count();
    HS_RUN(test_sharing);
    HS_RUN(test_budget);
    HS_RUN(test_many);
    HS_RUN(test_threads);
    CHECK(hs_mem_live_count() == live);
    for (int i = 0; i < 64; i++)
        unlink(g_paths[i]);
    return hs_test_summary();
}

/*
 * tests/c/test_keyfilter.c - base/keyfilter: every key added is kept (no
 * false negatives) for each structure (empty, bitmap of a dense range,
 * bloom of spread keys, extreme values); keys outside the range are
 * dropped; the bloom filter's false-positive rate stays near its design
 * (16 bits a key: well under 1%); apply() on int32 and int64 arrays
 * honours the incoming selection.
 */
#include "harness.h"

#include "base/keyfilter.h"

static uint64_t rng = 88172645463325252ULL;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_empty(void)
{
    hs_keyfilter *f = NULL;
    hs_error err;
    CHECK_OK(hs_keyfilter_build(NULL, 0, &f, &err), &err);
    REQUIRE(f);
    CHECK(f->kind == HS_KEYFILTER_EMPTY);
    CHECK(!hs_keyfilter_may_contain(f, 0));
    CHECK(!hs_keyfilter_may_contain(f, INT64_MIN));
    int64_t v[3] = {0, 1, -1};
    uint8_t sel[3] = {1, 1, 1};
    CHECK(hs_keyfilter_apply(f, v, 8, 3, sel) == 0);
    CHECK(sel[0] == 0 && sel[1] == 0 && sel[2] == 0);
    hs_keyfilter_free(f);
    hs_keyfilter_free(NULL);
}

static void test_bitmap(void)
{
    /* every third key of 1..300000, with repeats: a dense range */
    enum { N = 100000 };
    int64_t *k = malloc(N * 2 * sizeof *k);
    REQUIRE(k);
    for (int i = 0; i < N; i++)
        k[i] = k[N + i] = 1 + 3 * (int64_t)i;
    hs_keyfilter *f = NULL;
    hs_error err;
    CHECK_OK(hs_keyfilter_build(k, 2 * N, &f, &err), &err);
    REQUIRE(f);
    CHECK(f->kind == HS_KEYFILTER_BITMAP);
    CHECK(f->min == 1 && f->max == 1 + 3 * (int64_t)(N - 1));
    int64_t missing = 0, false_pos = 0;
    for (int i = 0; i < N; i++) {
        missing += !hs_keyfilter_may_contain(f, k[i]);
        false_pos += hs_keyfilter_may_contain(f, k[i] + 1);
    }
    CHECK(missing == 0);
    CHECK(false_pos == 0);   /* a bitmap is exact */
    CHECK(!hs_keyfilter_may_contain(f, 0));
    CHECK(!hs_keyfilter_may_contain(f, f->max + 3));
    CHECK(!hs_keyfilter_may_contain(f, INT64_MAX));
    CHECK(strcmp(hs_keyfilter_kind_name(f), "bitmap") == 0);
    hs_keyfilter_free(f);
    free(k);
}

static void test_bloom(void)
{
    enum { N = 200000 };
    int64_t *k = malloc(N * sizeof *k);
    REQUIRE(k);
    for (int i = 0; i < N; i++)
        k[i] = (int64_t)(next_rand() >> 1) - ((int64_t)1 << 61);   /* spread, both signs */
    k[0] = INT64_MIN;
    k[1] = INT64_MAX;
    hs_keyfilter *f = NULL;
    hs_error err;
    CHECK_OK(hs_keyfilter_build(k, N, &f, &err), &err);
    REQUIRE(f);
    CHECK(f->kind == HS_KEYFILTER_BLOOM);
    CHECK(f->min == INT64_MIN && f->max == INT64_MAX);
    int64_t missing = 0;
    for (int i = 0; i < N; i++)
        missing += !hs_keyfilter_may_contain(f, k[i]);
    CHECK(missing == 0);
    /* probes of other keys: false positives near 16 bits a key's rate */
    int64_t fp = 0, probes = 1000000;
    for (int64_t i = 0; i < probes; i++)
        fp += hs_keyfilter_may_contain(f, (int64_t)next_rand());
    CHECK(fp * 100 < probes);   /* < 1% */
    CHECK(hs_keyfilter_bytes(f) <= (int64_t)N * 4 && hs_keyfilter_bytes(f) >= (int64_t)N * 2);
    hs_keyfilter_free(f);
    free(k);
}

static void test_apply(void)
{
    int64_t keys[] = {5, 7, -2, 1000000007};
    hs_keyfilter *f = NULL;
    hs_error err;
    CHECK_OK(hs_keyfilter_build(keys, 4, &f, &err), &err);
    REQUIRE(f);
    int32_t v32[] = {5, 6, 7, -2, 1000000007, 5};
    uint8_t sel[6] = {1, 1, 1, 1, 1, 0};   /* the last row is not selected */
    CHECK(hs_keyfilter_apply(f, v32, 4, 6, sel) == 4);
    CHECK(sel[0] && !sel[1] && sel[2] && sel[3] && sel[4] && !sel[5]);
    int64_t v64[] = {1000000007, 1000000008, -2, INT64_MIN};
    uint8_t sel2[4] = {1, 1, 1, 1};
    CHECK(hs_keyfilter_apply(f, v64, 8, 4, sel2) == 2);
    CHECK(sel2[0] && !sel2[1] && sel2[2] && !sel2[3]);
    hs_keyfilter_free(f);
    /* one key */
    int64_t one = -9;
    CHECK_OK(hs_keyfilter_build(&one, 1, &f, &err), &err);
    REQUIRE(f);
    CHECK(hs_keyfilter_may_contain(f, -9) && !hs_keyfilter_may_contain(f, -8) &&
          !hs_keyfilter_may_contain(f, -10));
    hs_keyfilter_free(f);
}

int main(void)
{
    HS_RUN(test_empty);
    HS_RUN(test_bitmap);
    HS_RUN(test_bloom);
    HS_RUN(test_apply);
    return hs_test_summary();
}

/* tests/c/test_registry.c - the incremental index registry (index/registry.h,
 * format 2: a root listing immutable segments).
 *
 *   test_segments_vs_model   random appends / replacements / removals through
 *                            ix_registry_write_delta, the composed registry
 *                            checked after every step against a brute-force
 *                            model; the segment count stays bounded
 *   test_format1_compat      a format-1 file (earlier versions) reads, and the
 *                            next write turns its entries into a first segment
 *   test_bad_files           damaged roots and segments: clear errors
 *   test_append_cost         bytes written and time of one append at 10, 1,000
 *                            and 10,000 registered files (100,000 with
 *                            HS_LONG_TESTS=1), format 1 (the whole file
 *                            rewritten, as before) against format 2; prints
 *                            the numbers, and checks that a format-2 append
 *                            costs about the same at every size
 */
#include "harness.h"

#include "base/buf.h"
#include "base/mem.h"
#include "index/registry.h"
#include "io/io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char g_loc[600];

static const char *new_location(const char *name)
{
    snprintf(g_loc, sizeof g_loc, "%s/%s-%d", hs_test_tmpdir(), name, (int)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_loc);
    if (system(cmd) != 0)
        return NULL;
    return mkdir(g_loc, 0755) == 0 ? g_loc : NULL;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int64_t file_size(const char *loc, const char *rel)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", loc, rel);
    struct stat s;
    return stat(p, &s) == 0 ? (int64_t)s.st_size : -1;
}

/* ---- the brute-force model: (data file, field id) -> index file ---- */

#define MODEL_MAX 20000
typedef struct mentry {
    char data_file[64];
    int32_t field_id;
    char index_file[64];
    bool live;
} mentry;
static mentry model[MODEL_MAX];
static int n_model;

static mentry *model_find(const char *df, int32_t fid)
{
    for (int i = 0; i < n_model; i++)
        if (model[i].live && model[i].field_id == fid && strcmp(model[i].data_file, df) == 0)
            return &model[i];
    return NULL;
}

static int model_live(void)
{
    int n = 0;
    for (int i = 0; i < n_model; i++)
        n += model[i].live;
    return n;
}

static ix_entry mk_entry(const char *df, int32_t fid, const char *ixf)
{
    ix_entry e = {0};
    e.data_file = (char *)df;
    e.data_file_size = 1000 + fid;
    e.field_id = fid;
    e.kind = (char *)"inverted";
    e.index_file = (char *)ixf;
    e.index_file_size = 77;
    e.checksum = 0x0123456789abcdefull;
    return e;
}

/* The composed registry equals the model, entry for entry. */
static bool registry_matches_model(const ix_registry *r)
{
    if (r->n_entries != model_live())
        return false;
    for (int i = 0; i < r->n_entries; i++) {
        const ix_entry *e = &r->entries[i];
        const mentry *m = model_find(e->data_file, e->field_id);
        if (!m || strcmp(m->index_file, e->index_file) != 0 || strcmp(e->kind, "inverted") != 0)
            return false;
    }
    return true;
}

static void test_segments_vs_model(void)
{
    const char *loc = new_location("model");
    REQUIRE(loc);
    hs_error err = {0};
    ix_registry root = {0};
    CHECK_OK(ix_registry_add_decl(&root, "c", 1, "inverted", "{}", &err), &err);
    CHECK_OK(ix_registry_add_decl(&root, "d", 2, "inverted", "{}", &err), &err);
    n_model = 0;
    int next_file = 0, max_segments = 0, merges_seen = 0;
    char *rel = NULL;
    for (int step = 0; step < 400; step++) {
        ix_entry add[64];
        char names[64][2][64];
        const char *removed[8];
        char rnames[8][64];
        int n_add = 0, n_removed = 0;
        int op = (int)(rnd() % 10);
        if (op < 6 || n_model == 0) {          /* an append of 1..8 new files, 2 indexes */
            int k = 1 + (int)(rnd() % 8);
            for (int i = 0; i < k && n_model < MODEL_MAX - 2; i++, next_file++) {
                for (int32_t fid = 1; fid <= 2; fid++) {
                    snprintf(names[n_add][0], 64, "/wh/t/data/f%06d.parquet", next_file);
                    snprintf(names[n_add][1], 64, "index/f%06d.%d.inverted", next_file, fid);
                    add[n_add] = mk_entry(names[n_add][0], fid, names[n_add][1]);
                    mentry *m = &model[n_model++];
                    memcpy(m->data_file, names[n_add][0], sizeof m->data_file);
                    memcpy(m->index_file, names[n_add][1], sizeof m->index_file);
                    m->field_id = fid;
                    m->live = true;
                    n_add++;
                }
            }
        } else if (op < 8) {                   /* rebuilt sidecars replace entries */
            for (int i = 0; i < 3; i++) {
                mentry *m = &model[rnd() % (uint64_t)n_model];
                if (!m->live)
                    continue;
                snprintf(m->index_file, sizeof m->index_file, "index/r%d-%d.inverted", step, i);
                memcpy(names[n_add][0], m->data_file, 64);
                memcpy(names[n_add][1], m->index_file, 64);
                add[n_add] = mk_entry(names[n_add][0], m->field_id, names[n_add][1]);
                n_add++;
            }
        } else {                               /* an overwrite removes files */
            for (int i = 0; i < 2; i++) {
                mentry *m = &model[rnd() % (uint64_t)n_model];
                memcpy(rnames[n_removed], m->data_file, 64);
                removed[n_removed] = rnames[n_removed];
                n_removed++;
                for (int k = 0; k < n_model; k++)
                    if (strcmp(model[k].data_file, m->data_file) == 0)
                        model[k].live = false;
            }
        }
        hs_buf created = {0};
        char *nrel = NULL;
        hs_status st = ix_registry_write_delta(loc, &root, add, n_add, removed, n_removed, 0,
                                               &nrel, &created, &err);
        CHECK_OK(st, &err);
        size_t n_created = HS_VEC_LEN(&created, char *);
        for (size_t i = 0; i < n_created; i++)
            hs_free(HS_VEC_AT(&created, char *, i));
        hs_buf_free(&created);
        if (n_created > 2)
            merges_seen++;
        hs_free(rel);
        rel = nrel;
        /* the next write starts from the root only, as appends do */
        ix_registry_clear(&root);
        CHECK_OK(ix_registry_load_root(loc, rel, &root, &err), &err);
        CHECK(root.format_version == 2 && root.n_decls == 2 && root.n_entries == 0);
        if (root.n_segments > max_segments)
            max_segments = root.n_segments;
        ix_registry full = {0};
        CHECK_OK(ix_registry_load(loc, rel, &full, &err), &err);
        bool same = registry_matches_model(&full);
        CHECK(same);
        if (!same) {
            fprintf(stderr, "step %d: %d entries, model %d\n", step, full.n_entries,
                    model_live());
            ix_registry_clear(&full);
            break;
        }
        ix_registry_clear(&full);
    }
    printf("model: %d files, %d live entries, at most %d segments, %d appends merged\n",
           next_file, model_live(), max_segments, merges_seen);
    CHECK(merges_seen > 0);
    CHECK(max_segments <= IX_SEG_FANIN * IX_SEG_MERGE_MAX_LEVEL);
    hs_free(rel);
    ix_registry_clear(&root);
}

static void test_format1_compat(void)
{
    const char *loc = new_location("v1");
    REQUIRE(loc);
    hs_error err = {0};
    ix_registry r = {0};
    CHECK_OK(ix_registry_add_decl(&r, "c", 1, "range", "{}", &err), &err);
    char df[10][64], ixf[10][64];
    for (int i = 0; i < 10; i++) {
        snprintf(df[i], 64, "/wh/t/data/old%d.parquet", i);
        snprintf(ixf[i], 64, "index/old%d.1.range", i);
        ix_entry e = mk_entry(df[i], 1, ixf[i]);
        CHECK_OK(ix_registry_add_entry(&r, &e, &err), &err);
    }
    /* a format-1 file, as earlier versions wrote it */
    hs_buf json = {0};
    CHECK_OK(ix_registry_to_json(&r, &json, &err), &err);
    CHECK(strstr(hs_buf_cstr(&json), "\"format-version\":1") != NULL);
    char path[800];
    snprintf(path, sizeof path, "%s/index", loc);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/index/registry", loc);
    CHECK(mkdir(path, 0755) == 0);
    snprintf(path, sizeof path, "%s/index/registry/old.json", loc);
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    CHECK(fwrite(json.data, 1, json.len, f) == json.len);
    fclose(f);
    hs_buf_free(&json);
    ix_registry_clear(&r);

    ix_registry v1 = {0};
    CHECK_OK(ix_registry_load(loc, "index/registry/old.json", &v1, &err), &err);
    CHECK(v1.format_version == 1 && v1.n_entries == 10 && v1.n_decls == 1 && v1.n_segments == 0);
    ix_registry_clear(&v1);
    /* the root-only load of a format-1 file is the whole file */
    CHECK_OK(ix_registry_load_root(loc, "index/registry/old.json", &v1, &err), &err);
    CHECK(v1.n_entries == 10);
    /* an append on it: its entries become the first segment, ours the second */
    ix_entry e = mk_entry("/wh/t/data/new.parquet", 1, "index/new.1.range");
    const char *gone[] = {df[3]};
    char *rel = NULL;
    CHECK_OK(ix_registry_write_delta(loc, &v1, &e, 1, gone, 1, 0, &rel, NULL, &err), &err);
    ix_registry_clear(&v1);
    ix_registry v2 = {0};
    CHECK_OK(ix_registry_load(loc, rel, &v2, &err), &err);
    CHECK(v2.format_version == 2 && v2.n_segments == 2 && v2.n_entries == 10);
    CHECK(ix_registry_find_entry(&v2, df[3], 1, "inverted") == NULL);
    CHECK(ix_registry_find_entry(&v2, df[4], 1, "inverted") != NULL);
    CHECK(ix_registry_find_entry(&v2, "/wh/t/data/new.parquet", 1, "inverted") != NULL);
    ix_registry_clear(&v2);
    hs_free(rel);
}

static hs_status write_text(const char *loc, const char *rel, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", loc, rel);
    FILE *f = fopen(p, "wb");
    if (!f)
        return HS_IO;
    fputs(text, f);
    fclose(f);
    return HS_OK;
}

static void test_bad_files(void)
{
    const char *loc = new_location("bad");
    REQUIRE(loc);
    hs_error err = {0};
    ix_registry r = {0};
    CHECK_OK(ix_registry_add_decl(&r, "c", 1, "inverted", "{}", &err), &err);
    ix_entry e = mk_entry("/wh/t/data/a.parquet", 1, "index/a.1.inverted");
    CHECK_OK(ix_registry_add_entry(&r, &e, &err), &err);
    char *rel = NULL;
    hs_buf created = {0};
    CHECK_OK(ix_registry_write(loc, &r, 0, &rel, &created, &err), &err);
    CHECK(HS_VEC_LEN(&created, char *) == 2);   /* one segment and the root */
    const char *seg = HS_VEC_AT(&created, char *, 0);
    ix_registry_clear(&r);
    CHECK_OK(ix_registry_load(loc, rel, &r, &err), &err);
    CHECK(r.n_entries == 1 && r.n_segments == 1 && strcmp(r.segments[0].path, seg) == 0);
    ix_registry_clear(&r);

    struct { const char *root; hs_status want; const char *says; } roots[] = {
        {"{\"format-version\":2,\"declared\":[],\"segments\":[{\"path\":\"../x.json\","
         "\"entries\":0,\"removed\":0,\"bytes\":1}]}", HS_CORRUPT, "\"path\""},
        {"{\"format-version\":2,\"declared\":[],\"segments\":[{\"path\":\"/etc/passwd\","
         "\"entries\":0,\"removed\":0,\"bytes\":1}]}", HS_CORRUPT, "\"path\""},
        {"{\"format-version\":2,\"declared\":[],\"segments\":[{\"path\":"
         "\"index/registry/a/b.json\",\"entries\":0,\"removed\":0,\"bytes\":1}]}", HS_CORRUPT,
         "\"path\""},
        {"{\"format-version\":2,\"declared\":[],\"segments\":[{\"path\":"
         "\"index/registry/none.json\",\"entries\":0,\"removed\":0,\"bytes\":-1}]}", HS_CORRUPT,
         "\"bytes\""},
        {"{\"format-version\":2,\"declared\":[]}", HS_CORRUPT, "segments"},
        {"{\"format-version\":3,\"declared\":[],\"segments\":[]}", HS_UNSUPPORTED, "newer"},
        {"{\"format-version\":2,\"segment\":true,\"entries\":[]}", HS_CORRUPT, "a segment"},
        {"{\"format-version\":2,\"declared\":[],\"segments\":[{\"path\":"
         "\"index/registry/none.json\",\"entries\":0,\"removed\":0,\"bytes\":5}]}", HS_NOT_FOUND,
         "none.json"},
    };
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        CHECK(write_text(loc, "index/registry/r.json", roots[i].root) == HS_OK);
        hs_err_clear(&err);
        hs_status st = ix_registry_load(loc, "index/registry/r.json", &r, &err);
        CHECK(st == roots[i].want);
        CHECK(strstr(err.msg, roots[i].says) != NULL);
        if (st != roots[i].want || !strstr(err.msg, roots[i].says))
            fprintf(stderr, "root %zu: status %d: %s\n", i, (int)st, err.msg);
        CHECK(r.n_entries == 0 && r.n_segments == 0);
        ix_registry_clear(&r);
    }
    /* a segment whose size is not the root's record (truncated, appended to) */
    char root[1200];
    snprintf(root, sizeof root, "{\"format-version\":2,\"declared\":[],\"segments\":[{\"path\":"
             "\"%s\",\"entries\":1,\"removed\":0,\"bytes\":%lld}]}", seg,
             (long long)file_size(loc, seg) + 1);
    CHECK(write_text(loc, "index/registry/r.json", root) == HS_OK);
    hs_err_clear(&err);
    CHECK(ix_registry_load(loc, "index/registry/r.json", &r, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "the root says") != NULL);
    /* a root named as a segment, a segment parsed as a root */
    snprintf(root, sizeof root, "{\"format-version\":2,\"declared\":[],\"segments\":[{\"path\":"
             "\"%s\",\"entries\":0,\"removed\":0,\"bytes\":%lld}]}", rel,
             (long long)file_size(loc, rel));
    CHECK(write_text(loc, "index/registry/r.json", root) == HS_OK);
    hs_err_clear(&err);
    CHECK(ix_registry_load(loc, "index/registry/r.json", &r, &err) == HS_CORRUPT);
    CHECK(strstr(err.msg, "not a segment") != NULL);
    hs_err_clear(&err);
    CHECK(ix_registry_load(loc, seg, &r, &err) == HS_CORRUPT);
    for (size_t i = 0; i < HS_VEC_LEN(&created, char *); i++)
        hs_free(HS_VEC_AT(&created, char *, i));
    hs_buf_free(&created);
    hs_free(rel);
}

/* One append's cost on a registry of n files (one index), files written
 * without fsync (the default; hyperstream.commit.fsync adds one per file):
 * format 1 (read the whole file, rewrite it with one more entry: what
 * every append did before) and format 2 (read the root, write a segment and a root; merges
 * included, averaged over `reps` appends). */
static void append_cost(int n, int reps1, int reps2, double *f1_bytes, double *f1_ms,
                        double *f2_bytes, double *f2_ms, int *f2_segments)
{
    char name[64];
    snprintf(name, sizeof name, "cost%d", n);
    const char *loc = new_location(name);
    hs_error err = {0};
    ix_registry r = {0};
    if (!loc || ix_registry_add_decl(&r, "c", 1, "inverted", "{}", &err) != HS_OK)
        return;
    char df[128], ixf[128];
    for (int i = 0; i < n; i++) {
        snprintf(df, sizeof df, "/wh/t/data/%08d-0-3f1c2a1e-8e9b-4c11-a1f0-%012d.parquet", i, i);
        snprintf(ixf, sizeof ixf, "index/%08d-0-3f1c2a1e.1.inverted", i);
        ix_entry e = mk_entry(df, 1, ixf);
        if (ix_registry_append_entry(&r, &e, &err) != HS_OK)   /* keys are unique */
            return;
    }
    /* format 1: the old path, one full rewrite per append */
    hs_buf json = {0};
    if (ix_registry_to_json(&r, &json, &err) != HS_OK)
        return;
    char p[1200];
    snprintf(p, sizeof p, "%s/index", loc);
    (void)mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/index/registry", loc);
    (void)mkdir(p, 0755);
    CHECK(write_text(loc, "index/registry/v1.json", hs_buf_cstr(&json)) == HS_OK);
    hs_buf_free(&json);
    char *v1rel = hs_strdup("index/registry/v1.json");
    double t0 = now_s(), bytes1 = 0;
    for (int k = 0; k < reps1; k++) {
        ix_registry cur = {0};
        hs_buf out = {0};
        if (ix_registry_load(loc, v1rel, &cur, &err) != HS_OK)
            break;
        snprintf(df, sizeof df, "/wh/t/data/new-%d.parquet", k);
        ix_entry e = mk_entry(df, 1, "index/new.1.inverted");
        if (ix_registry_add_entry(&cur, &e, &err) == HS_OK &&
            ix_registry_to_json(&cur, &out, &err) == HS_OK) {
            char rel[64];
            snprintf(rel, sizeof rel, "index/registry/v1-%d.json", k);
            CHECK(write_text(loc, rel, hs_buf_cstr(&out)) == HS_OK);
            bytes1 += (double)out.len;
            hs_free(v1rel);
            v1rel = hs_strdup(rel);
        }
        hs_buf_free(&out);
        ix_registry_clear(&cur);
    }
    *f1_ms = (now_s() - t0) * 1000 / reps1;
    *f1_bytes = bytes1 / reps1;
    hs_free(v1rel);
    /* format 2: the registry written whole once (as add_index does), then appends */
    char *rel = NULL;
    if (ix_registry_write(loc, &r, HS_WFILE_NO_SYNC, &rel, NULL, &err) != HS_OK)
        return;
    ix_registry_clear(&r);
    double bytes2 = 0;
    t0 = now_s();
    for (int k = 0; k < reps2; k++) {
        ix_registry root = {0};
        hs_buf created = {0};
        char *nrel = NULL;
        if (ix_registry_load_root(loc, rel, &root, &err) != HS_OK)
            break;
        snprintf(df, sizeof df, "/wh/t/data/new-%d.parquet", k);
        ix_entry e = mk_entry(df, 1, "index/new.1.inverted");
        hs_status st = ix_registry_write_delta(loc, &root, &e, 1, NULL, 0, HS_WFILE_NO_SYNC,
                                               &nrel, &created, &err);
        CHECK(st == HS_OK);
        for (size_t i = 0; i < HS_VEC_LEN(&created, char *); i++) {
            bytes2 += (double)file_size(loc, HS_VEC_AT(&created, char *, i));
            hs_free(HS_VEC_AT(&created, char *, i));
        }
        hs_buf_free(&created);
        ix_registry_clear(&root);
        if (st != HS_OK)
            break;
        hs_free(rel);
        rel = nrel;
    }
    *f2_ms = (now_s() - t0) * 1000 / reps2;
    *f2_bytes = bytes2 / reps2;
    ix_registry full = {0};
    CHECK(ix_registry_load(loc, rel, &full, &err) == HS_OK);
    CHECK(full.n_entries == n + reps2);
    *f2_segments = full.n_segments;
    ix_registry_clear(&full);
    hs_free(rel);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", loc);
    CHECK(system(cmd) == 0);
}

static void test_append_cost(void)
{
    const char *lng = getenv("HS_LONG_TESTS");
    bool long_form = lng && strcmp(lng, "1") == 0;
    int sizes[] = {10, 1000, long_form ? 100000 : 10000};
    double f2_at[3] = {0};
    printf("\nregistered  format-1 append            format-2 append (mean of 512, merges "
           "included)\n");
    for (int i = 0; i < 3; i++) {
        int reps1 = sizes[i] >= 10000 ? 4 : 32;
        double b1 = 0, m1 = 0, b2 = 0, m2 = 0;
        int segs = 0;
        /* format 2 over 512 appends: its merges amortize */
        append_cost(sizes[i], reps1, 512, &b1, &m1, &b2, &m2, &segs);
        f2_at[i] = b2;
        printf("%10d  %10.0f B %9.3f ms     %10.0f B %9.3f ms  (%d segments after)\n",
               sizes[i], b1, m1, b2, m2, segs);
        CHECK(b2 > 0 && b1 > 0);
    }
    fflush(stdout);
    /* format 2: about the same at every size (the first segment, written
     * whole, takes no part in appends' merges) */
    CHECK(f2_at[2] < 2 * f2_at[0]);
}

static int count_dir(const char *loc)
{
    char cmd[800];
    snprintf(cmd, sizeof cmd, "ls '%s/index/registry' 2>/dev/null | wc -l", loc);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

/* Out of memory at every allocation of an append that merges, and of a
 * load: HS_NOMEM or success, nothing leaked, and a failed write leaves no
 * file behind. */
static void test_oom(void)
{
    const char *loc = new_location("oom");
    REQUIRE(loc);
    hs_error err = {0};
    ix_registry root = {0};
    CHECK_OK(ix_registry_add_decl(&root, "c", 1, "inverted", "{}", &err), &err);
    char *rel = NULL;
    char df[64], ixf[64];
    for (int i = 0; i < IX_SEG_FANIN - 1; i++) {   /* the next append merges */
        snprintf(df, sizeof df, "/wh/t/data/f%d.parquet", i);
        snprintf(ixf, sizeof ixf, "index/f%d.1.inverted", i);
        ix_entry e = mk_entry(df, 1, ixf);
        char *nrel = NULL;
        CHECK_OK(ix_registry_write_delta(loc, &root, &e, 1, NULL, 0, HS_WFILE_NO_SYNC, &nrel,
                                         NULL, &err), &err);
        hs_free(rel);
        rel = nrel;
        ix_registry_clear(&root);
        CHECK_OK(ix_registry_load_root(loc, rel, &root, &err), &err);
    }
    const char *gone[] = {"/wh/t/data/f2.parquet"};
    ix_entry e = mk_entry("/wh/t/data/last.parquet", 1, "index/last.1.inverted");
    int failures = 0;
    bool done = false;
    for (int64_t k = 1; k < 20000 && !done; k++) {
        int files0 = count_dir(loc);
        int64_t live = hs_mem_live_count();
        char *nrel = NULL;
        hs_error e2 = {0};
        hs_mem_fail_after(k);
        hs_status st = ix_registry_write_delta(loc, &root, &e, 1, gone, 1, HS_WFILE_NO_SYNC,
                                               &nrel, NULL, &e2);
        ix_registry full = {0};
        hs_status ls = st == HS_OK ? ix_registry_load(loc, nrel, &full, &e2) : HS_OK;
        hs_mem_fail_after(0);
        CHECK(st == HS_OK || st == HS_NOMEM);
        CHECK(ls == HS_OK || ls == HS_NOMEM);
        if (st != HS_OK) {
            failures++;
            CHECK(count_dir(loc) == files0);   /* what it wrote is gone */
            CHECK(hs_mem_live_count() == live);
            continue;
        }
        if (ls == HS_OK) {
            done = true;
            CHECK(full.n_entries == IX_SEG_FANIN - 1);   /* 7 - f2 + last */
            CHECK(full.n_segments == 1);                 /* the merge happened */
        }
        ix_registry_clear(&full);
        hs_free(nrel);
        CHECK(hs_mem_live_count() == live);
    }
    CHECK(done && failures > 10);
    hs_free(rel);
    ix_registry_clear(&root);
}

/* The root's optional keys: manifest summaries written and read back byte
 * for byte (oracle: the bytes given), malformed ones ignored without
 * failing the root; segments carried inline serve a root whose segment
 * file is gone, and a copy whose counts differ from the root's is not used
 * (the file is read). */
static void test_root_extras(void)
{
    const char *loc = new_location("extras");
    REQUIRE(loc);
    hs_error err = {0};
    ix_registry r = {0};
    CHECK_OK(ix_registry_add_decl(&r, "c", 1, "inverted", "{}", &err), &err);
    ix_entry e = mk_entry("/wh/t/data/a.parquet", 1, "index/a.1.inverted");
    CHECK_OK(ix_registry_add_entry(&r, &e, &err), &err);
    uint8_t lo[8] = {1, 0, 0, 0, 0, 0, 0, 0}, hi[3] = {0xff, 0x00, 0x7f};
    ix_mbound b = {7, sizeof lo, sizeof hi, lo, hi};
    ix_msum m = {(char *)"s3://b/t/metadata/m0.avro", 4321, -5, 1, &b};
    /* with its files (manifests[].files): two, the second without bounds */
    ix_mfile mfs[2] = {{(char *)"s3://b/t/data/a.parquet", 900, 25, 0, 3, 4, true, 77, 1, &b},
                       {(char *)"s3://b/t/data/b.parquet", 800, 5, 2, 3, 3, false, 0, 0, NULL}};
    m.has_files = true;
    m.seq = 3;
    m.n_files = 2;
    m.files = mfs;
    ix_msum *ms = hs_calloc(1, sizeof *ms);
    REQUIRE(ms);
    CHECK_OK(ix_msum_copy(&m, ms, &err), &err);
    ix_registry_set_msums(&r, ms, 1);
    char *rel = NULL;
    hs_buf created = {0};
    CHECK_OK(ix_registry_write(loc, &r, 0, &rel, &created, &err), &err);
    const char *seg = HS_VEC_AT(&created, char *, 0);
    ix_registry_clear(&r);
    ix_registry root = {0};
    CHECK_OK(ix_registry_load_root(loc, rel, &root, &err), &err);
    CHECK(root.n_msums == 1);
    const ix_msum *got = ix_registry_find_msum(&root, m.path, 4321, -5);
    CHECK(got && got->n_bounds == 1 && got->bounds[0].field_id == 7 &&
          got->bounds[0].lower_len == 8 && memcmp(got->bounds[0].lower, lo, 8) == 0 &&
          got->bounds[0].upper_len == 3 && memcmp(got->bounds[0].upper, hi, 3) == 0);
    CHECK(got && got->has_files && got->seq == 3 && got->n_files == 2);
    if (got && got->n_files == 2) {
        const ix_mfile *f0 = &got->files[0], *f1 = &got->files[1];
        CHECK(strcmp(f0->path, mfs[0].path) == 0 && f0->size == 900 && f0->records == 25 &&
              f0->entry == 0 && f0->data_seq == 3 && f0->file_seq == 4 &&
              f0->has_first_row_id && f0->first_row_id == 77 && f0->n_bounds == 1 &&
              f0->bounds[0].field_id == 7 && memcmp(f0->bounds[0].upper, hi, 3) == 0);
        CHECK(strcmp(f1->path, mfs[1].path) == 0 && f1->entry == 2 && !f1->has_first_row_id &&
              f1->n_bounds == 0);
    }
    CHECK(!ix_registry_find_msum(&root, m.path, 4322, -5));   /* another length */
    CHECK(!ix_registry_find_msum(&root, m.path, 4321, 9));    /* another snapshot */
    CHECK(root.n_segments == 1 && root.segments[0].inline_json);
    /* the segment file gone: the inline copy serves */
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", loc, seg);
    CHECK(unlink(p) == 0);
    CHECK_OK(ix_registry_load_segments(loc, &root, &err), &err);
    CHECK(root.n_entries == 1 && strcmp(root.entries[0].data_file, e.data_file) == 0);
    ix_registry_clear(&root);
    /* malformed summaries are dropped; an inline copy that does not match
     * the root's counts is not used (the file, missing here, is read) */
    char text[2048];
    snprintf(text, sizeof text,
             "{\"format-version\": 2, \"declared\": [], \"segments\": [{\"path\": \"%s\", "
             "\"entries\": 2, \"removed\": 0, \"bytes\": 10, \"inline\": {\"format-version\": 2, "
             "\"segment\": true, \"removed\": [], \"entries\": []}}], \"manifests\": [{\"path\": "
             "\"m\", \"length\": 1, \"snapshot\": 1, \"bounds\": [[1, \"0g\", \"00\"]]}]}", seg);
    /* (a summary whose files are malformed is dropped too: below) */
    CHECK(write_text(loc, "index/registry/x.json", text) == HS_OK);
    CHECK_OK(ix_registry_load_root(loc, "index/registry/x.json", &root, &err), &err);
    CHECK(root.n_msums == 0 && root.n_segments == 1);
    hs_error e2 = {0};
    CHECK(ix_registry_load_segments(loc, &root, &e2) == HS_NOT_FOUND);
    ix_registry_clear(&root);
    /* files without "seq", or a file without "entry": the summary is dropped
     * (a planner then reads the manifest) */
    const char *bad_files[] = {
        "{\"format-version\": 2, \"segments\": [], \"manifests\": [{\"path\": \"m\", "
        "\"length\": 1, \"snapshot\": 1, \"bounds\": [], \"files\": []}]}",
        "{\"format-version\": 2, \"segments\": [], \"manifests\": [{\"path\": \"m\", "
        "\"length\": 1, \"snapshot\": 1, \"bounds\": [], \"seq\": 1, \"files\": [{\"path\": "
        "\"d\", \"size\": 1, \"records\": 1, \"seq\": 1, \"fseq\": 1, \"bounds\": []}]}]}"};
    for (int k = 0; k < 2; k++) {
        CHECK(write_text(loc, "index/registry/y.json", bad_files[k]) == HS_OK);
        CHECK_OK(ix_registry_load_root(loc, "index/registry/y.json", &root, &err), &err);
        CHECK(root.n_msums == 0);
        ix_registry_clear(&root);
    }
    for (size_t i = 0; i < HS_VEC_LEN(&created, char *); i++)
        hs_free(HS_VEC_AT(&created, char *, i));
    hs_buf_free(&created);
    hs_free(rel);
}

int main(void)
{
    HS_RUN(test_segments_vs_model);
    HS_RUN(test_format1_compat);
    HS_RUN(test_bad_files);
    HS_RUN(test_oom);
    HS_RUN(test_root_extras);
    HS_RUN(test_append_cost);
    return hs_test_summary();
}

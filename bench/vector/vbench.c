/*
 * bench/vector/vbench.c - our HNSW index on one data set: build time, index
 * memory, and recall@k / QPS for a sweep of ef, single query at a time.
 *
 *   vbench BASE.f32 N D QUERIES.f32 NQ GT.i32 K QUANT M EFC THREADS EF[,EF...] [RERANK]
 *          [LISTS NPROBE]
 *
 * BASE and QUERIES are raw little-endian float32 row-major; GT holds NQ * K
 * int32 row ids (the true nearest first; computed by bench.py with numpy).
 * QUANT is flat, tq8, tq4, pq or bin.  Quantized indexes rerank with exact
 * vectors that the fetch callback copies from BASE in memory (what the
 * table layer does from a cached column chunk; reading Parquet costs more).
 * VBENCH_SAVE=path saves the built image; VBENCH_LOAD=path searches a saved
 * image instead of building one.  VBENCH_METRIC=cosine|ip changes the metric.
 * Prints one JSON object per line: {"build_s":..., "memory_bytes":...},
 * then {"ef":..., "recall":..., "qps":..., "dist_per_query":...} per ef.
 * Times are CPU times (build: the process, all build threads together;
 * queries: the searching thread).
 */
#include "index/vector/hnsw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CPU time, not wall time: the bench machine is shared, and CPU time of the
 * one searching thread is what a query costs (bench.py times the peers the
 * same way with time.process_time). */
static double cpu_now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
#define now() cpu_now(CLOCK_PROCESS_CPUTIME_ID)
#define thread_now() cpu_now(CLOCK_THREAD_CPUTIME_ID)

static void *load(const char *path, size_t bytes)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    void *p = malloc(bytes);
    if (!p || fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "%s: short read (want %zu bytes)\n", path, bytes);
        exit(2);
    }
    fclose(f);
    return p;
}

typedef struct fetch_ctx {
    const float *x;
    size_t d;
} fetch_ctx;

static hs_status fetch(void *ctx, const uint32_t *ids, size_t n, float *out, hs_error *err)
{
    (void)err;
    fetch_ctx *f = ctx;
    for (size_t i = 0; i < n; i++)
        memcpy(out + i * f->d, f->x + (size_t)ids[i] * f->d, f->d * sizeof(float));
    return HS_OK;
}

int main(int argc, char **argv)
{
    if (argc < 13) {
        fprintf(stderr, "usage: vbench BASE N D QUERIES NQ GT K QUANT M EFC THREADS EFS "
                        "[RERANK] [LISTS NPROBE]\n");
        return 2;
    }
    size_t n = strtoull(argv[2], NULL, 10), d = strtoull(argv[3], NULL, 10);
    size_t nq = strtoull(argv[5], NULL, 10);
    int k = atoi(argv[7]);
    float *x = load(argv[1], n * d * sizeof(float));
    float *q = load(argv[4], nq * d * sizeof(float));
    int32_t *gt = load(argv[6], nq * (size_t)k * sizeof(int32_t));
    hnsw_params p;
    memset(&p, 0, sizeof p);
    p.metric = HS_METRIC_L2;
    const char *qn = argv[8];
    p.quant.type = !strcmp(qn, "tq8") ? VQ_TQ8 : !strcmp(qn, "tq4") ? VQ_TQ4
                 : !strcmp(qn, "pq") ? VQ_PQ : !strcmp(qn, "bin") ? VQ_BIN : VQ_FLAT;
    p.M = atoi(argv[9]);
    p.ef_construction = atoi(argv[10]);
    p.n_threads = atoi(argv[11]);
    p.quant.n_threads = p.n_threads;
    if (argc > 13)
        p.rerank = atoi(argv[13]);
    if (argc > 15) {
        p.ivf_lists = atoi(argv[14]);
        p.ivf_nprobe = atoi(argv[15]);
    }
    if (getenv("VBENCH_METRIC") && !strcmp(getenv("VBENCH_METRIC"), "cosine"))
        p.metric = HS_METRIC_COSINE;
    if (getenv("VBENCH_METRIC") && !strcmp(getenv("VBENCH_METRIC"), "ip"))
        p.metric = HS_METRIC_IP;

    hnsw_index *ix = NULL;
    hs_error err = { 0 };
    double t0 = now();
    const char *load_path = getenv("VBENCH_LOAD"), *save_path = getenv("VBENCH_SAVE");
    uint8_t *image = NULL;
    if (load_path) {  /* search a saved image instead of building (experiments) */
        FILE *f = fopen(load_path, "rb");
        if (!f) {
            perror(load_path);
            return 2;
        }
        fseek(f, 0, SEEK_END);
        size_t len = (size_t)ftell(f);
        fclose(f);
        image = load(load_path, len);
        if (hnsw_open(image, len, &ix, &err) != HS_OK) {
            fprintf(stderr, "open: %s\n", err.msg);
            return 1;
        }
    } else if (hnsw_build(x, n, d, &p, NULL, NULL, &ix, &err) != HS_OK) {
        fprintf(stderr, "build: %s\n", err.msg);
        return 1;
    }
    double build_s = now() - t0;
    if (save_path && !load_path) {
        hs_buf img = { 0 };
        FILE *f = fopen(save_path, "wb");
        if (!f || hnsw_save(ix, &img, &err) != HS_OK || fwrite(img.data, 1, img.len, f) != img.len) {
            fprintf(stderr, "save %s failed: %s\n", save_path, err.msg);
            return 1;
        }
        fclose(f);
        hs_buf_free(&img);
    }
    hnsw_info info;
    hnsw_get_info(ix, &info);
    printf("{\"build_s\": %.3f, \"memory_bytes\": %zu}\n", build_s, info.memory_bytes);
    fflush(stdout);

    /* VBENCH_ALLOW=file: sorted u32 row ids, the allow-list of every query
     * (GT must then be the filtered truth); VBENCH_EXACT_THRESHOLD=rows. */
    roaring_bitmap_t *allow = NULL;
    if (getenv("VBENCH_ALLOW")) {
        FILE *f = fopen(getenv("VBENCH_ALLOW"), "rb");
        if (!f) {
            perror(getenv("VBENCH_ALLOW"));
            return 2;
        }
        fseek(f, 0, SEEK_END);
        size_t na = (size_t)ftell(f) / 4;
        fclose(f);
        uint32_t *ids = load(getenv("VBENCH_ALLOW"), na * 4);
        allow = roaring_bitmap_of_ptr(na, ids);
        free(ids);
    }
    int64_t exact_threshold = getenv("VBENCH_EXACT_THRESHOLD")
                                  ? atoll(getenv("VBENCH_EXACT_THRESHOLD")) : 0;
    fetch_ctx fc = { x, d };
    hnsw_hit *hits = malloc((size_t)k * sizeof *hits);
    char *efs = argv[12];
    for (char *tok = strtok(efs, ","); tok; tok = strtok(NULL, ",")) {
        int ef = atoi(tok);
        hnsw_search_opts o = { .k = k, .ef = ef, .fetch = fetch, .fetch_ctx = &fc,
                               .allow = allow, .exact_threshold = exact_threshold };
        /* warm-up pass (pool, caches), then the timed pass */
        for (size_t i = 0; i < nq && i < 200; i++) {
            int got;
            if (hnsw_search(ix, q + i * d, &o, hits, &got, NULL, &err) != HS_OK) {
                fprintf(stderr, "search: %s\n", err.msg);
                return 1;
            }
        }
        /* best of VBENCH_REPEAT timed passes (default 1): the least disturbed */
        int repeat = getenv("VBENCH_REPEAT") ? atoi(getenv("VBENCH_REPEAT")) : 1;
        long hit = 0, valid = 0;  /* GT rows < 0 pad filtered truths shorter than k */
        for (size_t i = 0; i < nq * (size_t)k; i++)
            valid += gt[i] >= 0;
        int64_t dist = 0, exact = 0;
        double dt = 1e300;
        for (int r = 0; r < (repeat > 0 ? repeat : 1); r++) {
            hit = 0;
            dist = 0;
            exact = 0;
            double t1 = thread_now();
            for (size_t i = 0; i < nq; i++) {
                int got;
                hnsw_search_stats st;
                if (hnsw_search(ix, q + i * d, &o, hits, &got, &st, &err) != HS_OK) {
                    fprintf(stderr, "search: %s\n", err.msg);
                    return 1;
                }
                dist += st.distances;
                exact += st.exact;
                for (int a = 0; a < got; a++)
                    for (int b = 0; b < k; b++)
                        if (gt[i * (size_t)k + b] >= 0 &&
                            (int32_t)hits[a].id == gt[i * (size_t)k + b]) {
                            hit++;
                            break;
                        }
            }
            double t = thread_now() - t1;
            if (t < dt)
                dt = t;
        }
        printf("{\"ef\": %d, \"recall\": %.4f, \"qps\": %.1f, \"dist_per_query\": %.1f, "
               "\"exact\": %.3f}\n", ef, valid ? (double)hit / (double)valid : 1.0, nq / dt,
               (double)dist / nq, (double)exact / nq);
        fflush(stdout);
    }
    free(hits);
    hnsw_free(ix);
    if (allow)  /* CRoaring 0.2 does not accept NULL */
        roaring_bitmap_free(allow);
    free(image);
    free(x);
    free(q);
    free(gt);
    return 0;
}

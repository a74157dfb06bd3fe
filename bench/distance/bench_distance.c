/*
 * bench/distance/bench_distance.c - nanoseconds per distance of the float32
 * kernels at every level this CPU has, and the batch paths (direct kernels
 * vs OpenBLAS sgemm).  Not a test: prints a table.
 *
 * Pair kernels: one query against a ring of 64 vectors (in L1/L2 cache, like
 * the neighbour lists of an HNSW hop), called through the table's function
 * pointer as the search does; best of 5 runs of about 0.2 s each.
 * bench/distance/hnswlib_ref.cc measures hnswlib's kernels the same way.
 *
 *   bench/distance/run.sh            (builds both, prints both tables)
 */
#include "index/vector/distance_int.h"
#include "hyperstream/vector.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *rand_floats(size_t n, unsigned seed)
{
    float *v = malloc(n * sizeof(float));
    size_t i;
    srand(seed);
    for (i = 0; i < n; i++)
        v[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return v;
}

static volatile float sink;

typedef float (*pair_fn)(const float *, const float *, size_t);

static double ns_per_pair(pair_fn fn, const float *q, const float *x, size_t d)
{
    double best = 1e30;
    int run;
    size_t reps = (size_t)(2e8 / (double)(d + 16)) / RING + 1, r, j;
    for (run = 0; run < 5; run++) {
        float acc = 0;
        double t0 = now_s();
        for (r = 0; r < reps; r++)
            for (j = 0; j < RING; j++)
                acc += fn(q, x + j * d, d);
        double ns = (now_s() - t0) * 1e9 / (double)(reps * RING);
        sink = acc;
        if (ns < best)
            best = ns;
    }
    return best;
}

typedef void (*many_fn)(const float *, const float *, size_t, size_t, float *);

static double ns_per_many(many_fn fn, const float *q, const float *x, size_t n, size_t d)
{
    double best = 1e30;
    int run;
    float *out = malloc(n * sizeof(float));
    size_t reps = (size_t)(2e8 / ((double)d * (double)n)) + 1, r;
    for (run = 0; run < 5; run++) {
        double t0 = now_s();
        for (r = 0; r < reps; r++)
            fn(q, x, n, d, out);
        double ns = (now_s() - t0) * 1e9 / (double)(reps * n);
        sink = out[n / 2];
        if (ns < best)
            best = ns;
    }
    free(out);
    return best;
}

static double batch_ms(hs_metric m, const float *q, size_t nq, const float *x, size_t nx,
                       size_t d, float *out, int threads, int path)
{
    double best = 1e30;
    int run;
    for (run = 0; run < 3; run++) {
        hs_error err = {0};
        double t0 = now_s();
        if (vd_batch_f32(m, q, nq, x, nx, d, out, threads, path, &err) != HS_OK) {
            fprintf(stderr, "batch failed: %s\n", err.msg);
            return NAN;
        }
        double ms = (now_s() - t0) * 1e3;
        if (ms < best)
            best = ms;
    }
    return best;
}

int main(int argc, char **argv)
{
    static const size_t dims[] = {128, 384, 784, 960};
    int l, di;
    int skip_batch = argc > 1 && strcmp(argv[1], "--pairs") == 0;
    printf("ns per distance (one query vs a ring of %d vectors, best of 5)\n", RING);
    printf("%-8s %-14s %8s %8s %8s %8s\n", "level", "kernel", "d=128", "d=384", "d=784",
           "d=960");
    for (l = VD_SCALAR; l <= VD_NEON; l++) {
        const vd_table *k = vd_kernels_level((vd_level)l);
        if (!k)
            continue;
        const char *names[4] = {"l2sq_f32", "ip_f32", "l2sq_f32_many", "ip_f32_many"};
        int f;
        for (f = 0; f < 4; f++) {
            printf("%-8s %-14s", k->name, names[f]);
            for (di = 0; di < 4; di++) {
                size_t d = dims[di];
                float *q = rand_floats(d, 1), *x = rand_floats(RING * d, 2);
                double ns = f == 0   ? ns_per_pair(k->l2sq_f32, q, x, d)
                            : f == 1 ? ns_per_pair(k->ip_f32, q, x, d)
                            : f == 2 ? ns_per_many(k->l2sq_f32_many, q, x, RING, d)
                                     : ns_per_many(k->ip_f32_many, q, x, RING, d);
                printf(" %8.1f", ns);
                free(q);
                free(x);
            }
            printf("\n");
        }
    }
    if (skip_batch)
        return 0;

    printf("\nbatch L2 (ms, best of 3): direct kernels vs OpenBLAS sgemm\n");
    printf("%6s %7s %5s %8s %12s %12s %12s %12s\n", "nq", "nx", "d", "Mmadd", "direct t=1",
           "blas t=1", "direct t=2", "blas t=2");
    static const size_t shapes[][3] = {{1, 10000, 128}, {8, 2000, 128},  {16, 4096, 64},
                                       {32, 4096, 128}, {100, 10000, 128}, {100, 10000, 784},
                                       {1000, 1000, 96}, {8, 10000, 960}};
    size_t si;
    for (si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        size_t nq = shapes[si][0], nx = shapes[si][1], d = shapes[si][2];
        float *q = rand_floats(nq * d, 3), *x = rand_floats(nx * d, 4);
        float *out = malloc(nq * nx * sizeof(float));
        printf("%6zu %7zu %5zu %8.1f %12.2f %12.2f %12.2f %12.2f\n", nq, nx, d,
               (double)nq * nx * d / 1e6, batch_ms(HS_METRIC_L2, q, nq, x, nx, d, out, 1, 1),
               batch_ms(HS_METRIC_L2, q, nq, x, nx, d, out, 1, 2),
               batch_ms(HS_METRIC_L2, q, nq, x, nx, d, out, 2, 1),
               batch_ms(HS_METRIC_L2, q, nq, x, nx, d, out, 2, 2));
        free(q);
        free(x);
        free(out);
    }
    return 0;
}

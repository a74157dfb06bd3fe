/*
 * bench/parquet/hs_bench.c - times full scans through the public Parquet C API.
 *
 *   hs_bench read FILE [REPEAT]
 *
 * Reads every column of FILE with hs_parquet_read (default batch size),
 * pulling each batch through the Arrow C stream and releasing it at once, as
 * a streaming consumer would.  Prints one line of JSON:
 *   {"rows": N, "batches": B, "best_s": S, "best_cpu_s": C, "all_s": [..]}
 * with the best wall time and the best process CPU time of REPEAT runs
 * (default 3).  Single-threaded, so CPU time is the robust number on a busy
 * machine.
 * Built by bench/parquet/run.sh against the static library.
 */
#include "hyperstream/parquet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int scan(const char *path, long long *rows, long long *batches)
{
    struct ArrowArrayStream st;
    hs_error err;
    memset(&err, 0, sizeof err);
    if (hs_parquet_read(path, NULL, 0, 0, &st, &err) != HS_OK) {
        fprintf(stderr, "hs_bench: %s\n", err.msg);
        return -1;
    }
    *rows = *batches = 0;
    for (;;) {
        struct ArrowArray a;
        memset(&a, 0, sizeof a);
        if (st.get_next(&st, &a) != 0) {
            fprintf(stderr, "hs_bench: %s: %s\n", path, st.get_last_error(&st));
            st.release(&st);
            return -1;
        }
        if (!a.release)
            break;
        *rows += a.length;
        (*batches)++;
        a.release(&a);
    }
    st.release(&st);
    return 0;
}

int main(int argc, char **argv)
{
    int repeat = 3, i;
    double best = 1e300, best_cpu = 1e300, all[64];
    long long rows = 0, batches = 0;
    if (argc < 3 || strcmp(argv[1], "read") != 0) {
        fprintf(stderr, "usage: hs_bench read FILE [REPEAT]\n");
        return 2;
    }
    if (argc > 3)
        repeat = atoi(argv[3]);
    if (repeat < 1 || repeat > 64)
        repeat = 3;
    for (i = 0; i < repeat; i++) {
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (scan(argv[2], &rows, &batches) != 0)
            return 1;
        double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        all[i] = clock_s(CLOCK_MONOTONIC) - t0;
        if (all[i] < best)
            best = all[i];
        if (cpu < best_cpu)
            best_cpu = cpu;
    }
    printf("{\"rows\": %lld, \"batches\": %lld, \"best_s\": %.6f, \"best_cpu_s\": %.6f, "
           "\"all_s\": [", rows, batches, best, best_cpu);
    for (i = 0; i < repeat; i++)
        printf("%s%.6f", i ? ", " : "", all[i]);
    printf("]}\n");
    return 0;
}

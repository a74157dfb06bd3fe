// bench/distance/hnswlib_ref.cc - hnswlib's own L2 and inner-product kernels
// (hnswlib/space_l2.h, space_ip.h, header-only), timed exactly like
// bench_distance.c times ours: one query against a ring of 64 vectors,
// called through the distance function pointer, best of 5.  Built with
// -O3 -march=native so hnswlib picks its best kernel (AVX / AVX-512) as a
// pip install on this machine would.  Needs the hnswlib headers: run.sh
// passes -I to a checkout ($HNSWLIB_DIR).
#include "hnswlib/hnswlib.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static volatile float sink;

static double ns_per_pair(hnswlib::DISTFUNC<float> fn, void *param, const float *q,
                          const float *x, size_t d) {
    const size_t ring = 64;
    size_t reps = (size_t)(2e8 / (double)(d + 16)) / ring + 1;
    double best = 1e30;
    for (int run = 0; run < 5; run++) {
        float acc = 0;
        auto t0 = std::chrono::steady_clock::now();
        for (size_t r = 0; r < reps; r++)
            for (size_t j = 0; j < ring; j++)
                acc += fn(q, x + j * d, param);
        auto t1 = std::chrono::steady_clock::now();
        double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / (reps * ring);
        sink = acc;
        if (ns < best)
            best = ns;
    }
    return best;
}

int main() {
    const size_t dims[] = {128, 384, 784, 960};
    std::printf("hnswlib kernels, ns per distance (ring of 64, best of 5)\n");
    std::printf("%-8s %-14s %8s %8s %8s %8s\n", "hnswlib", "kernel", "d=128", "d=384", "d=784",
                "d=960");
    for (int f = 0; f < 2; f++) {
        std::printf("%-8s %-14s", "hnswlib", f == 0 ? "L2Sqr" : "InnerProductDistance");
        for (size_t d : dims) {
            std::vector<float> q(d), x(64 * d);
            srand(1);
            for (auto &v : q) v = (float)rand() / RAND_MAX - 0.5f;
            for (auto &v : x) v = (float)rand() / RAND_MAX - 0.5f;
            double ns;
            if (f == 0) {
                hnswlib::L2Space s(d);
                ns = ns_per_pair(s.get_dist_func(), s.get_dist_func_param(), q.data(), x.data(), d);
            } else {
                hnswlib::InnerProductSpace s(d);
                ns = ns_per_pair(s.get_dist_func(), s.get_dist_func_param(), q.data(), x.data(), d);
            }
            std::printf(" %8.1f", ns);
        }
        std::printf("\n");
    }
    return 0;
}

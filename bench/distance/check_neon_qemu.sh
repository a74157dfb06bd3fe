#!/usr/bin/env bash
# Runs tests/c/test_distance.c for aarch64 under qemu-user, so the NEON
# kernels (distance_neon.c) are checked on an x86 machine.  Needs Debian's
# gcc-aarch64-linux-gnu and qemu-user; prints SKIP and exits 0 without them.
# OpenBLAS is replaced by a naive cblas_sgemm (only what vector_api.c calls),
# which is enough to check the batch code around it.
#
#   bench/distance/check_neon_qemu.sh [build-dir]   (default /tmp/hs-neon-qemu)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/hs-neon-qemu}
CC=aarch64-linux-gnu-gcc
if ! command -v $CC >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
    echo "SKIP: needs gcc-aarch64-linux-gnu and qemu-user"
    exit 0
fi
mkdir -p "$out/inc"
cat > "$out/inc/cblas.h" <<'H'
enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };
void cblas_sgemm(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                 int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc);
void openblas_set_num_threads(int n);
H
cat > "$out/cblas_stub.c" <<'C'
#include "cblas.h"
/* C = alpha A B^T + beta C, row-major: the one form vector_api.c uses. */
void cblas_sgemm(enum CBLAS_ORDER o, enum CBLAS_TRANSPOSE ta, enum CBLAS_TRANSPOSE tb, int m,
                 int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
                 float beta, float *c, int ldc)
{
    (void)o; (void)ta; (void)tb;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float s = 0;
            for (int l = 0; l < k; l++)
                s += a[i * lda + l] * b[j * ldb + l];
            /* beta == 0: C is not read (it may hold garbage), as in BLAS */
            c[i * ldc + j] = alpha * s + (beta == 0 ? 0 : beta * c[i * ldc + j]);
        }
}
void openblas_set_num_threads(int n) { (void)n; }
C
FLAGS="-std=gnu11 -O2 -g -Iinclude -Isrc -Itests/c -I$out/inc -Wall -Wextra -Werror
       -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers"
$CC $FLAGS -static -o "$out/test_distance_neon" tests/c/test_distance.c tests/c/harness.c \
    src/base/error.c src/base/mem.c src/base/threadpool.c src/index/vector/distance.c \
    src/index/vector/distance_avx2.c src/index/vector/distance_avx512.c \
    src/index/vector/distance_neon.c src/index/vector/vector_api.c "$out/cblas_stub.c" \
    -lpthread -lm
qemu-aarch64 "$out/test_distance_neon"

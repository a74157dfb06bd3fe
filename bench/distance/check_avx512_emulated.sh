#!/usr/bin/env bash
# Runs tests/c/test_distance.c with the AVX-512 kernels emulated in software
# (SIMDe), on any x86-64 machine, under ASan + UBSan: the masks, tails and
# block order of distance_avx512.c are checked even where no CPU has
# AVX-512.  Needs Debian's libsimde-dev (apt-get install libsimde-dev);
# prints SKIP and exits 0 without it.
#
#   bench/distance/check_avx512_emulated.sh [build-dir]   (default /tmp/hs-avx512-emu)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/hs-avx512-emu}
if [ ! -f /usr/include/simde/x86/avx512.h ]; then
    echo "SKIP: SIMDe headers absent (apt-get install libsimde-dev)"
    exit 0
fi
mkdir -p "$out"
CC=${CC:-gcc}
FLAGS="-std=gnu11 -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
       -fno-sanitize-recover=undefined -march=x86-64-v2 -Iinclude -Isrc -Itests/c
       -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers"
srcs="src/base/error.c src/base/mem.c src/base/threadpool.c src/index/vector/distance.c
      src/index/vector/distance_avx2.c src/index/vector/distance_avx512.c
      src/index/vector/vector_api.c tests/c/harness.c"
objs=""
for f in $srcs; do
    o="$out/$(basename "$f" .c).o"
    $CC $FLAGS -c "$f" -o "$o"
    objs="$objs $o"
done
# The emulated copy of the AVX-512 file (its table is vd_avx512_emulated_table).
$CC $FLAGS -Ibench/distance -DVD_AVX512_EMULATE -Werror \
    -c src/index/vector/distance_avx512.c -o "$out/avx512_emulated.o"
$CC $FLAGS -DHS_TEST_EMULATED_AVX512 -c tests/c/test_distance.c -o "$out/test_distance.o"
$CC $FLAGS -o "$out/test_distance_emulated" "$out/test_distance.o" "$out/avx512_emulated.o" \
    $objs $(pkg-config --libs openblas) -lpthread -lm
ASAN_OPTIONS=detect_leaks=1 "$out/test_distance_emulated"

#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each, seeded from the
# Parquet test corpus when it is present.  A crash fails the run.
set -euo pipefail
build=${1:-build-fuzz}; secs=${2:-20}
corpus_src=../shared/testdata/parquet-testing/data
for f in "$build"/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  work="$build/corpus-$name"; mkdir -p "$work"
  seeds=""
  if [ -d "$corpus_src" ] && [ -d "tests/fuzz/seeds-$name" ]; then seeds="tests/fuzz/seeds-$name"; fi
  [ -d "$corpus_src" ] && [ "$name" = fuzz_parquet_file ] && seeds="$corpus_src"
  echo "fuzz: $name for ${secs}s"
  ASAN_OPTIONS=detect_leaks=1 "$f" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=0 "$work" $seeds 2>"$build/$name.log" || { tail -50 "$build/$name.log"; exit 1; }
done

#!/usr/bin/env bash
# Runs every libFuzzer target in BUILD_DIR for SECONDS each (one at a time, in
# process), seeded from its committed corpus tests/fuzz/seeds-<target>
# (which never needs ../shared) plus, for fuzz_parquet_file, the Apache
# parquet-testing corpus when ../shared has it.  A crash fails the run.
#   scripts/run-fuzzers.sh [BUILD_DIR] [SECONDS] [TARGET...]
# `make fuzz` runs each for FUZZ_SECONDS (20), `make fuzz-long` for
# FUZZ_LONG_SECONDS (1800).  Found inputs accumulate in BUILD_DIR/corpus-<target>.
set -euo pipefail
build=${1:-build-fuzz}; secs=${2:-20}; shift $(( $# < 2 ? $# : 2 ))
only=" $* "
corpus_src=../shared/testdata/parquet-testing/data
for f in "$build"/fuzz_*; do
  [ -x "$f" ] || continue
  name=$(basename "$f")
  [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
  work="$build/corpus-$name"; mkdir -p "$work"
  seeds=()
  [ -d "tests/fuzz/seeds-$name" ] && seeds+=("tests/fuzz/seeds-$name")
  [ -d "$corpus_src" ] && [ "$name" = fuzz_parquet_file ] && seeds+=("$corpus_src")
  if [ ${#seeds[@]} -eq 0 ]; then echo "fuzz: $name has no seed corpus (tests/fuzz/seeds-$name)"; exit 1; fi
  echo "fuzz: $name for ${secs}s"
  ASAN_OPTIONS=detect_leaks=1 "$f" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -timeout=30 \
      -print_final_stats=1 "$work" "${seeds[@]}" >"$build/$name.log" 2>&1 \
      || { tail -50 "$build/$name.log"; exit 1; }
  grep -E "^stat::number_of_executed_units|^#[0-9]+ *DONE" "$build/$name.log" | tail -1 || true
done

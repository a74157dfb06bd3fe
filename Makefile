# HyperStreamDB - top-level entry points.
#   make run    build, then run the main end-to-end job on the embedded local default
#   make test   build and pass all tests (C unit tests, the same under ASan+UBSan,
#               Python oracle tests, short fuzz runs); with CI=true in the
#               environment (.ci/run exports it) a missing oracle fails, not skips
#   make test-s3  the table, index, vector and Python table tests with their tables on
#               SeaweedFS and on moto (quick form; HS_S3_MATRIX=full for all,
#               HS_S3_SERVER=seaweedfs|moto|both; part of make test)
#   make bench  benchmarks against peers (not part of the tests)
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
FUZZ_LONG_SECONDS ?= 1800
PY = .venv/bin/python

.PHONY: all bootstrap build build-asan build-fuzz run seaweedfs test test-c test-asan test-python test-s3 fuzz fuzz-long bench clean

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHS_WERROR=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: bootstrap
	@cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHS_SANITIZE=ON -DHS_WERROR=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)

build-fuzz: bootstrap
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHS_SANITIZE=ON -DHS_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)

run: build
	@scripts/demo.sh $(BUILD)

test-c: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: build-asan
	@cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS)

test-python: build
	@scripts/java-harness.sh
	@scripts/spark-harness.sh
	@scripts/duckdb-harness.sh
	@CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip install -q --no-build-isolation --no-deps .
	@HS_BUILD=$(BUILD) $(PY) -m pytest -q tests/python

# The storage matrix on S3 (HS_TEST_STORAGE=s3: the tests start the S3 server and keep
# their tables there; docs/testing.md "The storage matrix").  One leg per server:
# SeaweedFS (the main target; scripts/install-seaweedfs.sh builds `weed` once into
# ~/.cache/hyperstream) and moto's server mode.  HS_S3_SERVER=seaweedfs|moto|both picks
# the legs (default both).  `make test` runs the quick form (a few minutes a leg on 2
# cores); HS_S3_MATRIX=full runs every suite that supports the matrix.
HS_S3_SERVER ?= both
S3_SERVERS = $(if $(filter both,$(HS_S3_SERVER)),seaweedfs moto,$(HS_S3_SERVER))
S3_C_QUICK = ^test_table$$|^test_table_index$$
S3_C_FULL = ^test_table$$|^test_table_index$$|^test_table_search$$|^test_table_maint$$|^test_rowdelta$$|^test_s3$$|^test_table_faults$$|^test_vcache$$
S3_PY_QUICK = tests/python/test_pkg_table.py tests/python/test_pkg_search.py \
	tests/python/test_index_pyiceberg.py tests/python/test_index_differential.py \
	tests/python/test_table_zorder.py tests/python/test_rowdelta_pyiceberg.py \
	tests/python/test_pkg_catalog.py
S3_PY_FULL = $(S3_PY_QUICK) tests/python/test_table_search.py tests/python/test_table_pyiceberg.py \
	tests/python/test_s3_table.py tests/python/test_s3_orphans.py tests/python/test_s3_requests.py \
	tests/python/test_index_and_groups.py tests/python/test_index_counters.py \
	tests/python/test_index_refresh.py tests/python/test_api_lists.py \
	tests/python/test_filter_fastparse.py tests/python/test_table_defaults.py \
	tests/python/test_table_embeddings.py tests/python/test_table_v3_overwrite.py \
	tests/python/test_vindex_layout.py tests/python/test_pkg_progress.py \
	tests/python/test_table_maint.py tests/python/test_table_maint_deletes.py \
	tests/python/test_table_maint_carry.py tests/python/test_table_maint_eqdelete.py
S3_FULL = $(filter full,$(HS_S3_MATRIX))
test-s3: build
	@CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip install -q --no-build-isolation --no-deps .
	@for s in $(S3_SERVERS); do \
	  if [ $$s = seaweedfs ] && ! scripts/install-seaweedfs.sh >/dev/null; then \
	    case "$${CI:-}" in true|1) exit 1;; esac; \
	    echo "== SeaweedFS could not be installed: its leg is skipped (fails under CI=true)"; \
	    continue; \
	  fi; \
	  echo "== the storage matrix on $$s"; \
	  (cd $(BUILD) && HS_TEST_STORAGE=s3 HS_S3_SERVER=$$s ctest --output-on-failure -j $(JOBS) \
	    -R '$(if $(S3_FULL),$(S3_C_FULL),$(S3_C_QUICK))') || exit 1; \
	  HS_BUILD=$(BUILD) HS_TEST_STORAGE=s3 HS_S3_SERVER=$$s $(PY) -m pytest -q \
	    $(if $(S3_FULL),$(S3_PY_FULL),$(S3_PY_QUICK)) || exit 1; \
	done

fuzz: build-fuzz
	@scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Each target for FUZZ_LONG_SECONDS (default 30 minutes; about 7 hours for all).
fuzz-long: build-fuzz
	@scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_LONG_SECONDS)

# SeaweedFS first, so that every S3 test of the run (test_s3, test_table_faults, the
# Python S3 tests) uses it; moto where it cannot be installed (an error under CI=true).
seaweedfs:
	@scripts/install-seaweedfs.sh >/dev/null || case "$${CI:-}" in true|1) exit 1;; \
	  *) echo "SeaweedFS could not be installed: the S3 tests use moto";; esac

test: seaweedfs test-c test-asan test-python test-s3 fuzz

bench: build
	@bench/parquet/run.sh $(BUILD)
	@bench/commit/run.sh $(BUILD)
	@bench/filter/run.sh $(BUILD)
	@bench/vector/run.sh $(BUILD)
	@bench/distance/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

# HyperStreamDB - top-level entry points.
#   make run    build, then run the main end-to-end job on the embedded local default
#   make test   build and pass all tests (C unit tests, the same under ASan+UBSan,
#               Python oracle tests, short fuzz runs); with CI=true in the
#               environment (.ci/run exports it) a missing oracle fails, not skips
#   make bench  benchmarks against peers (not part of the tests)
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 20
FUZZ_LONG_SECONDS ?= 1800
PY = .venv/bin/python

.PHONY: all bootstrap build build-asan build-fuzz run test test-c test-asan test-python fuzz fuzz-long bench clean

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
	@CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) $(PY) -m pip install -q --no-build-isolation --no-deps .
	@HS_BUILD=$(BUILD) $(PY) -m pytest -q tests/python

fuzz: build-fuzz
	@scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

# Each target for FUZZ_LONG_SECONDS (default 30 minutes; about 7 hours for all).
fuzz-long: build-fuzz
	@scripts/run-fuzzers.sh $(FUZZ_BUILD) $(FUZZ_LONG_SECONDS)

test: test-c test-asan test-python fuzz

bench: build
	@bench/parquet/run.sh $(BUILD)
	@bench/commit/run.sh $(BUILD)
	@bench/filter/run.sh $(BUILD)
	@bench/vector/run.sh $(BUILD)
	@bench/distance/run.sh

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)

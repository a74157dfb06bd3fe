#!/usr/bin/env bash
# Installs what HyperStreamDB needs on a fresh Debian machine, idempotently:
# the -dev packages of DESIGN.md's dependency list, clang (libFuzzer), and a
# Python virtual environment (.venv) holding the test oracles.  Fast when
# everything is present: it only checks and returns.
set -euo pipefail
cd "$(dirname "$0")/.."

# (dataset-fashion-mnist: the real images of tests/python/test_hnsw_recall.py)
DEBS="build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
      libzstd-dev libsnappy-dev liblz4-dev zlib1g-dev libbrotli-dev libroaring-dev
      libjansson-dev libxxhash-dev libsqlite3-dev libpg-query-dev libopenblas-dev libedit-dev
      python3-venv python3-dev locales libmicrohttpd-dev libcurl4-openssl-dev libssl-dev
      dataset-fashion-mnist"
missing=""
for p in $DEBS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "bootstrap: installing Debian packages:$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# Locales for the locale tests (tests/c/test_locale.c, tests/python/test_locale.py):
# de_DE.UTF-8 (decimal comma) and ps_AF.UTF-8 (a two-byte decimal point, U+066B),
# compiled once from the locales package's sources.
for loc in de_DE ps_AF; do
  if ! locale -a 2>/dev/null | grep -qix "$loc\.utf-\?8"; then
    echo "bootstrap: generating the $loc.UTF-8 locale"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO localedef -i "$loc" -f UTF-8 "$loc.UTF-8"
  fi
done

PY_REQ=scripts/requirements-test.txt
stamp=.venv/.hs-req-$(sha1sum "$PY_REQ" | cut -c1-12)
if [ ! -f "$stamp" ]; then
  echo "bootstrap: preparing .venv with the test oracles"
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip >/dev/null
  .venv/bin/pip install -q -r "$PY_REQ"
  rm -f .venv/.hs-req-*
  touch "$stamp"
fi
# The hyperstreamdb Python package (pip builds it with scikit-build-core in build-py/;
# make test-python reinstalls it incrementally).  Best effort: a failure here is retried there.
.venv/bin/python -c "import hyperstreamdb" 2>/dev/null || CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" .venv/bin/pip install -q --no-build-isolation --no-deps . || echo "bootstrap: could not install the hyperstreamdb package yet (make test-python retries)"

# Java 17+ and Maven for the Java Iceberg interop harness (tests/interop/java,
# built by scripts/java-harness.sh).  Skipped when both are on PATH.
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
  echo "bootstrap: installing Java and Maven (default-jdk-headless maven)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq default-jdk-headless maven >/dev/null
fi

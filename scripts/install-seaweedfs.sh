#!/usr/bin/env bash
# Installs SeaweedFS's `weed` binary (the main S3-compatible server the S3
# tests run against; tests/s3/s3server.py starts it) into a cache outside the
# repository, once:
#     ${HS_TOOLS_BIN:-~/.cache/hyperstream/bin}/weed
# Prints the binary's path on success; a no-op when the pinned version is there.
#
# Go: SeaweedFS 4.53's go.mod wants Go >= 1.26.6.  A `go` that new on PATH is
# used as is.  Otherwise (none, or Debian bookworm's golang-go 1.19) the script
# installs Debian's golang-go when there is no go at all, and has it download
# the official toolchain as the module golang.org/toolchain from the Go module
# proxy (`go mod download` checks it against the checksum database, as Go's
# own toolchain switching does) into ~/.cache/hyperstream/go-<version>.
#
# weed: built from the Go module proxy at a pinned version (SeaweedFS tags are
# not semver, so the proxy serves it under a pseudo-version of the commit).
# Plain `go install ...weed@version` refuses modules whose go.mod has replace
# directives (SeaweedFS's has), so the module is downloaded with
# `go mod download` and built as the main module in a scratch copy.
#
# Cost, measured on the 2-core CI machine while other builds ran (load ~16):
# 22 minutes of wall clock cold (about 14 of them downloading ~2 GB of
# modules), 8 CPU-minutes; nothing on later runs.  `make test-s3` calls this;
# HS_S3_SERVER=moto skips it.  Without network or Go it exits 1 (the caller
# decides whether that fails the run).
set -euo pipefail
WEED_VERSION="${HS_WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"   # SeaweedFS 4.53
GO_MIN="${HS_GO_MIN:-1.26.6}"
GO_TOOLCHAIN="${HS_GO_TOOLCHAIN:-1.26.8}"
CACHE="${HS_TOOLS_CACHE:-$HOME/.cache/hyperstream}"
BIN="${HS_TOOLS_BIN:-$CACHE/bin}"
stamp="$BIN/weed.version"
if [ -x "$BIN/weed" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$WEED_VERSION" ]; then
  echo "$BIN/weed"; exit 0
fi

# "1.26.8" from "go version go1.26.8 linux/amd64"; sort -V compares versions.
go_version() { "$1" version 2>/dev/null | sed -n 's/^go version go\([0-9.]*\).*/\1/p'; }
new_enough() { [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$GO_MIN" "$1" | sort -V | head -1)" = "$GO_MIN" ]; }

find_go() {
  local go
  go=$(command -v go 2>/dev/null || true)
  if [ -n "$go" ] && new_enough "$(go_version "$go")" && [ "${HS_GO_FROM_PROXY:-0}" != 1 ]; then
    echo "$go"; return
  fi
  local dir="$CACHE/go-$GO_TOOLCHAIN"
  if [ -x "$dir/bin/go" ] && new_enough "$(go_version "$dir/bin/go")"; then
    echo "$dir/bin/go"; return
  fi
  if [ -z "$go" ]; then
    echo "install-seaweedfs: no go; installing Debian's golang-go to fetch Go $GO_TOOLCHAIN" >&2
    local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq golang-go >/dev/null
    go=$(command -v go)
  fi
  echo "install-seaweedfs: $go is Go $(go_version "$go"); fetching Go $GO_TOOLCHAIN from the module proxy" >&2
  local arch
  case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;; *) arch=$(uname -m) ;; esac
  local mod="golang.org/toolchain@v0.0.1-go$GO_TOOLCHAIN.linux-$arch" src
  src=$(cd /tmp && GOTOOLCHAIN=local GOFLAGS=-mod=mod "$go" mod download -json "$mod" |
        sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] && [ -d "$src" ] || { echo "install-seaweedfs: cannot download $mod" >&2; return 1; }
  rm -rf "$dir.tmp" && mkdir -p "$CACHE" && cp -r "$src" "$dir.tmp" && chmod -R u+w "$dir.tmp"
  # module zips keep no file modes: the programs get theirs back (as Go's
  # own toolchain switching does)
  chmod +x "$dir.tmp"/bin/* "$dir.tmp"/pkg/tool/*/*
  rm -rf "$dir" && mv "$dir.tmp" "$dir"
  echo "$dir/bin/go"
}

GO=$(find_go) || exit 1
export GOTOOLCHAIN=local
mkdir -p "$BIN"
mod="github.com/seaweedfs/seaweedfs@$WEED_VERSION"
dir=$(cd /tmp && GOFLAGS=-mod=mod "$GO" mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || { echo "install-seaweedfs: cannot download $mod" >&2; exit 1; }
work=$(mktemp -d); trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$dir"/. "$work"/ && chmod -R u+w "$work"
# -p: parallel compile jobs (the CI machine has few cores); CGO off: a static binary.
start=$(date +%s)
(cd "$work" && CGO_ENABLED=0 nice -n "${HS_NICE:-10}" "$GO" build -p "${HS_GO_JOBS:-2}" -trimpath \
  -ldflags="-s -w" -o "$BIN/weed.tmp" ./weed) >&2
mv "$BIN/weed.tmp" "$BIN/weed"
echo "$WEED_VERSION" > "$stamp"
echo "install-seaweedfs: built $BIN/weed ($(( $(date +%s) - start )) s to compile)" >&2
echo "$BIN/weed"

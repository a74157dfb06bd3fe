#!/usr/bin/env bash
# Installs SeaweedFS's `weed` binary (the S3-compatible server the S3 tests run
# against) into a cache outside the repository, once:
#     ${HS_TOOLS_BIN:-~/.cache/hyperstream/bin}/weed
# Built from the Go module proxy at a pinned version (SeaweedFS tags are not
# semver, so the proxy serves it under a pseudo-version of the commit).  Plain
# `go install ...weed@version` refuses modules whose go.mod has replace
# directives (SeaweedFS's has), so the module is downloaded with
# `go mod download` and built as the main module in a scratch copy.
# Prints the binary's path on success.  Needs Go >= 1.24.
set -euo pipefail
WEED_VERSION="${HS_WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
BIN="${HS_TOOLS_BIN:-$HOME/.cache/hyperstream/bin}"
stamp="$BIN/weed.version"
if [ -x "$BIN/weed" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$WEED_VERSION" ]; then
  echo "$BIN/weed"; exit 0
fi
command -v go >/dev/null || { echo "install-seaweedfs: go not found (apt-get install golang or https://go.dev/dl)" >&2; exit 1; }
mkdir -p "$BIN"
# -p: parallel compile jobs (the CI machine has few cores); CGO off: a static binary.
mod="github.com/seaweedfs/seaweedfs@$WEED_VERSION"
dir=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$mod" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || { echo "install-seaweedfs: cannot download $mod" >&2; exit 1; }
work=$(mktemp -d); trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
cp -r "$dir"/. "$work"/ && chmod -R u+w "$work"
# -p: parallel compile jobs (the CI machine has few cores); CGO off: a static binary.
(cd "$work" && CGO_ENABLED=0 nice -n "${HS_NICE:-10}" go build -p "${HS_GO_JOBS:-2}" -trimpath \
  -ldflags="-s -w" -o "$BIN/weed.tmp" ./weed) >&2
mv "$BIN/weed.tmp" "$BIN/weed"
echo "$WEED_VERSION" > "$stamp"
echo "$BIN/weed"

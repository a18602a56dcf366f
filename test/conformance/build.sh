#!/usr/bin/env bash
# Builds the conformance program (this folder: a Go module on upstream's github.com/actions/scaleset)
# into
#   ${ARO_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/conformance}/<source hash>-<os>-<arch>/aro-conformance
# and prints that file on the last line of stdout; progress goes to stderr. The folder is named after
# a hash of go.mod, go.sum and the *.go files (test/harness/conformance-program.ts derives the same
# name), so a finished build is reused at once and an edited program is rebuilt.
#
# Like the control-plane build, it is an install step: the first run downloads the module and its few
# dependencies from the Go module proxy (seconds to a minute); CI runs it outside any test timeout.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export LC_ALL=C
command -v go >/dev/null 2>&1 || { echo "[conformance build] the Go toolchain (go) is required to build the conformance program" >&2; exit 1; }

hash=$(cd "$here" && cat go.mod go.sum $(ls *.go | sort) | sha256sum | cut -c1-16)
os=$(go env GOOS); arch=$(go env GOARCH)
cache_root=${ARO_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/conformance}
out=$cache_root/$hash-$os-$arch
if [ -x "$out/aro-conformance" ]; then
  echo "$out/aro-conformance"
  exit 0
fi

step() { echo "[conformance build] $(date +%H:%M:%S) $*" >&2; }
mkdir -p "$cache_root"
# Two jest workers or a CI step and a test run may ask at once; the second waits and reuses the first's.
if command -v flock >/dev/null; then
  exec 9>"$cache_root/.build.lock"
  if ! flock -n 9; then
    step "another build is running; waiting for it"
    flock 9
  fi
  if [ -x "$out/aro-conformance" ]; then
    echo "$out/aro-conformance"
    exit 0
  fi
fi
tmp=$(mktemp -d "$cache_root/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step "downloading github.com/actions/scaleset and its dependencies (first time only)"
(cd "$here" && go mod download) >&2
step "building aro-conformance"
(cd "$here" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$tmp/aro-conformance" .) >&2

rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
step "done: $out/aro-conformance"
echo "$out/aro-conformance"

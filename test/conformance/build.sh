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
. "$here/../harness/go/build-cache.sh"
export LC_ALL=C
command -v go >/dev/null 2>&1 || { echo "[conformance build] the Go toolchain (go) is required to build the conformance program" >&2; exit 1; }

hash=$(cd "$here" && cat go.mod go.sum $(ls *.go | sort) | sha256sum | cut -c1-16)
os=$(go env GOOS); arch=$(go env GOARCH)
cache_root=${ARO_CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/conformance}
out=$cache_root/$hash-$os-$arch
# A finished build is the program itself (no `.complete` marker: conformance-program.ts looks for it).
build_complete() { [ -x "$build_out/aro-conformance" ]; }
build_begin "conformance build" "$cache_root" "$out" "$out/aro-conformance"

step "downloading github.com/actions/scaleset and its dependencies (first time only)"
(cd "$here" && go mod download) >&2
step "building aro-conformance"
(cd "$here" && CGO_ENABLED=0 go build -mod=readonly -trimpath -o "$build_tmp/aro-conformance" .) >&2

build_publish

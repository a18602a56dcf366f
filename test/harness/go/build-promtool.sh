#!/usr/bin/env bash
# Builds promtool from its Go module (github.com/prometheus/prometheus, pinned in
# test/harness/go/promtool/go.mod) into
#   ${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}/promtool-<version>-<os>-<arch>/promtool
# (the cache helm and the control-plane binaries live in) and prints that file on the last line of
# stdout. The chart's alert rules are unit-tested with `promtool test rules`
# (test/integration/charts/alerts.test.ts). Only the first run pays for the build (several minutes on
# two cores); a folder with a `.complete` marker is reused as it is.
#
# Reused, locked and renamed into place as build-helm.sh is, by build-cache.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/build-cache.sh"
module=$here/promtool
version=$(awk '$1 == "require" && $2 == "github.com/prometheus/prometheus" { print $3 }' "$module/go.mod")
[ -n "$version" ] || { echo "no github.com/prometheus/prometheus requirement in $module/go.mod" >&2; exit 1; }

os=$(go env GOOS); arch=$(go env GOARCH)
cache_root=${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}
out=$cache_root/promtool-${version#v}-$os-$arch
build_begin "promtool build" "$cache_root" "$out" "$out/promtool" -promtool

export CGO_ENABLED=0 GOFLAGS=-mod=mod
# `-p 1`: the machine is shared and has two cores; one package at a time keeps the build from starving
# the test control planes that run beside it. `remove_all_sd` leaves out Prometheus' service-discovery
# plugins (the AWS, Azure, GCE, ... SDKs: most of the build); rule checks and rule unit tests use none.
step "building promtool $version (the first build downloads and compiles several hundred packages)"
(cd "$module" && go build -p "${ARO_GO_BUILD_PARALLELISM:-1}" -trimpath -tags netgo,remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" -o "$build_tmp/promtool" github.com/prometheus/prometheus/cmd/promtool) >&2

{
  echo "promtool=$version"
  echo "go=$(go env GOVERSION)"
  (cd "$build_tmp" && sha256sum promtool)
} > "$build_tmp/.complete"

build_publish

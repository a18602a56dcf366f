#!/usr/bin/env bash
# Builds helm from its Go module (helm.sh/helm/v4, pinned in test/harness/go/helm/go.mod) into
#   ${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}/helm-<version>-<os>-<arch>/helm
# (the cache the control-plane binaries live in) and prints that file on the last line of stdout.
# A folder that already holds a `.complete` marker is reused as it is: only the first run pays for
# the build (a few minutes on two cores, most of it compiling client-go; later runs: 0 s).
#
# Reused, locked and renamed into place as build.sh is, by build-cache.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/build-cache.sh"
module=$here/helm
version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v4" { print $3 }' "$module/go.mod")
[ -n "$version" ] || { echo "no helm.sh/helm/v4 requirement in $module/go.mod" >&2; exit 1; }

os=$(go env GOOS); arch=$(go env GOARCH)
cache_root=${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}
out=$cache_root/helm-${version#v}-$os-$arch
build_begin "helm build" "$cache_root" "$out" "$out/helm" -helm

ldflags="-s -w \
 -X helm.sh/helm/v4/internal/version.version=$version \
 -X helm.sh/helm/v4/internal/version.gitTreeState=clean"

export CGO_ENABLED=0 GOFLAGS=-mod=mod
# `-p 1`: the machine is shared and has two cores; one package at a time keeps the build from starving
# the test control planes that run beside it.
step "building helm $version (the first build downloads and compiles ~900 packages)"
(cd "$module" && go build -p "${ARO_GO_BUILD_PARALLELISM:-1}" -trimpath -ldflags "$ldflags" -o "$build_tmp/helm" helm.sh/helm/v4/cmd/helm) >&2

{
  echo "helm=$version"
  echo "go=$(go env GOVERSION)"
  (cd "$build_tmp" && sha256sum helm)
} > "$build_tmp/.complete"

build_publish

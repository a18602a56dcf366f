#!/usr/bin/env bash
# Builds helm from its Go module (helm.sh/helm/v4, pinned in test/harness/go/helm/go.mod) into
#   ${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}/helm-<version>-<os>-<arch>/helm
# (the cache the control-plane binaries live in) and prints that file on the last line of stdout.
# A folder that already holds a `.complete` marker is reused as it is: only the first run pays for
# the build (a few minutes on two cores, most of it compiling client-go; later runs: 0 s).
#
# Same shape as build.sh: a temporary sibling folder renamed into place once the binary is there, and a
# lock so that two test runs that both miss it do not compile it side by side.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
module=$here/helm
version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v4" { print $3 }' "$module/go.mod")
[ -n "$version" ] || { echo "no helm.sh/helm/v4 requirement in $module/go.mod" >&2; exit 1; }

os=$(go env GOOS); arch=$(go env GOARCH)
cache_root=${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}
out=$cache_root/helm-${version#v}-$os-$arch
if [ -f "$out/.complete" ]; then
  echo "$out/helm"
  exit 0
fi

mkdir -p "$cache_root"
if command -v flock >/dev/null; then
  exec 9>"$cache_root/.build-helm.lock"
  if ! flock -n 9; then
    echo "[helm build] $(date +%H:%M:%S) another helm build is running; waiting for it" >&2
    flock 9
  fi
  if [ -f "$out/.complete" ]; then
    echo "$out/helm"
    exit 0
  fi
fi
tmp=$(mktemp -d "$cache_root/.build-helm-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step() { echo "[helm build] $(date +%H:%M:%S) $*" >&2; }
ldflags="-s -w \
 -X helm.sh/helm/v4/internal/version.version=$version \
 -X helm.sh/helm/v4/internal/version.gitTreeState=clean"

export CGO_ENABLED=0 GOFLAGS=-mod=mod
# `-p 1`: the machine is shared and has two cores; one package at a time keeps the build from starving
# the test control planes that run beside it.
step "building helm $version (the first build downloads and compiles ~900 packages)"
(cd "$module" && go build -p "${ARO_GO_BUILD_PARALLELISM:-1}" -trimpath -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v4/cmd/helm) >&2

{
  echo "helm=$version"
  echo "go=$(go env GOVERSION)"
  (cd "$tmp" && sha256sum helm)
} > "$tmp/.complete"

rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
step "done: $out/helm"
echo "$out/helm"

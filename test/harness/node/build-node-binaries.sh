#!/usr/bin/env bash
# Builds the kubelet and kube-scheduler of the real node (test/harness/node) from their Go module at the
# control plane's version (test/harness/go/versions.env) into
#   ${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}/node-<kube>-<os>-<arch>/
# and prints that folder on the last line of stdout. A folder holding a `.complete` marker is reused as it
# is: only the first run pays (a few minutes once the control plane's build has warmed Go's build cache:
# only ~100 of the kubelet's packages are not already compiled for kube-apiserver and kcm).
#
# The module in ./go is the control plane's go.mod plus these two commands (generated with `go mod tidy`
# after copying test/harness/go/kube/go.mod), so both share module versions and the build cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
go_dir=$here/../go
. "$go_dir/versions.env"
. "$go_dir/build-cache.sh"

os=$(go env GOOS); arch=$(go env GOARCH)
cache_root=${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}
out=$cache_root/node-${KUBE_VERSION#v}-$os-$arch
build_begin "node build" "$cache_root" "$out" "$out" -node

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

export CGO_ENABLED=0 GOFLAGS=-mod=mod
for cmd in kubelet kube-scheduler; do
  began=$(date +%s)
  step "building $cmd $KUBE_VERSION"
  (cd "$here/go" && go build -p "${ARO_GO_BUILD_PARALLELISM:-2}" -trimpath -tags providerless -ldflags "$ldflags" -o "$build_tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd") >&2
  step "$cmd built in $(( $(date +%s) - began )) s"
done

{
  echo "kube=$KUBE_VERSION"
  echo "go=$(go env GOVERSION)"
  (cd "$build_tmp" && sha256sum kubelet kube-scheduler)
} > "$build_tmp/.complete"

build_publish

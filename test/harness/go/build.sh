#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and etcd from their Go modules into
#   ${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}/<kube>-<etcd>-<os>-<arch>/
# and prints that folder on the last line of stdout. A folder that already holds a `.complete` marker
# is reused as it is, so only the first run pays for the build (minutes on two cores; later runs: 0 s).
#
# The reuse, the lock and the rename into place are build-cache.sh's.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
. "$here/build-cache.sh"

os=$(go env GOOS); arch=$(go env GOARCH)
cache_root=${ARO_ENVTEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aro/envtest}
out=$cache_root/${KUBE_VERSION#v}-etcd-${ETCD_VERSION#v}-$os-$arch
build_begin "control-plane build" "$cache_root" "$out" "$out"

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z"

export CGO_ENABLED=0 GOFLAGS=-mod=mod

# One binary per `go build`, two packages at a time: the kube-apiserver link alone peaks at a few GiB,
# and a 2-core machine gains nothing from more parallelism.
for cmd in kube-apiserver kube-controller-manager; do
  step "building $cmd $KUBE_VERSION (the first build downloads and compiles ~2000 packages)"
  (cd "$here/kube" && go build -p 2 -trimpath -tags providerless -ldflags "$ldflags" -o "$build_tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd") >&2
done
step "building etcd $ETCD_VERSION"
(cd "$here/etcd" && go build -p 2 -trimpath -ldflags "-s -w" -o "$build_tmp/etcd" go.etcd.io/etcd/server/v3) >&2

{
  echo "kube=$KUBE_VERSION"
  echo "etcd=$ETCD_VERSION"
  echo "go=$(go env GOVERSION)"
  (cd "$build_tmp" && sha256sum kube-apiserver kube-controller-manager etcd)
} > "$build_tmp/.complete"

build_publish

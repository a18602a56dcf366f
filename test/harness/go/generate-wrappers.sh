#!/usr/bin/env bash
# Regenerates the wrapper Go modules that build the test control plane from source.
#
# k8s.io/kubernetes requires every staging module at the fake version v0.0.0 and maps it to
# ./staging/src/... with a replace directive, so neither `go install` nor a plain `require` of it can
# resolve. A wrapper module requires it and replaces each staging module with its published
# v0.<minor>.<patch> tag. The replace list is read from the pinned release's own go.mod (every
# `k8s.io/<x> v0.0.0` requirement), never typed by hand, because new staging modules appear between
# minors (1.36 added k8s.io/streaming and k8s.io/cri-streaming).
#
# Run it only to move to another release; the generated go.mod and go.sum are committed so that a
# build is reproducible and checksum-verified.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"

staging=${KUBE_VERSION#v1.}   # 36.3
staging=v0.$staging            # v0.36.3

gen_kube() {
  local dir=$here/kube
  rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
  go mod init aro.invalid/envtest-kube >/dev/null 2>&1
  go mod edit -go="$GO_DIRECTIVE" -require="k8s.io/kubernetes@$KUBE_VERSION"
  local kkmod
  kkmod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  local mods
  mods=$(grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ v0\.0\.0([[:space:]]|$)' "$kkmod" | awk '{print $1}' | sort -u)
  [ -n "$mods" ] || { echo "no staging modules found in $kkmod" >&2; exit 1; }
  for m in $mods; do go mod edit -replace="$m=$m@$staging"; done
  cat > tools.go <<'GO'
//go:build tools

// Package tools pins the control-plane commands this module builds, so that `go mod tidy` keeps
// their dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
GO
  go mod tidy
  echo "kube wrapper: $(echo "$mods" | wc -l) staging replaces at $staging"
}

gen_etcd() {
  local dir=$here/etcd
  rm -rf "$dir" && mkdir -p "$dir" && cd "$dir"
  go mod init aro.invalid/envtest-etcd >/dev/null 2>&1
  go mod edit -go="$GO_DIRECTIVE" -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  cat > tools.go <<'GO'
//go:build tools

// Package tools pins the etcd server command this module builds.
package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  go mod tidy
  echo "etcd wrapper at $ETCD_VERSION"
}

gen_kube
gen_etcd

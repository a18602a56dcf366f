//go:build tools

// Package tools pins the node commands this module builds (the kubelet and kube-scheduler), so that
// `go mod tidy` keeps their dependencies. Its go.mod is the control plane's (test/harness/go/kube), so
// both build from the same module versions and share the Go build cache.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)

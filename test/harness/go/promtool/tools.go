//go:build tools

// Package tools pins the promtool command this module builds, so that `go mod tidy` keeps its
// dependencies.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"

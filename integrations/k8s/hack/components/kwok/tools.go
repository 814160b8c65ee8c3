//go:build tools

// Package tools pins kwok's controller command in this module, so that go.sum holds what
// it needs.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"

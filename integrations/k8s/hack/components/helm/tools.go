//go:build tools

// Package tools pins helm's command in this module, so that go.sum holds what it needs.
package tools

import _ "helm.sh/helm/v3/cmd/helm"

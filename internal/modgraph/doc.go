// Package modgraph holds the test that keeps the library module's
// dependency graph small: a service that imports payonce gets every module
// the library's go.mod requires, directly or not, in its own module graph,
// so the integrations' and the command's dependencies (River, Prometheus,
// the OpenTelemetry SDK and exporters, golang.org/x/term) live in their own
// modules (riverpayonce, cmd/payonce) and must never come back here.
//
// The package has no non-test code.
package modgraph

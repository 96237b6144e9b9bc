// Package telemetrytest holds the tests that read payonce's metrics and
// spans back through the OpenTelemetry SDK (a meter provider on a manual
// reader, a tracer provider on a span recorder), as an application that
// registers the SDK would see them.
//
// They live in the payonce command's module, not beside the root package,
// because the library module must not depend on the OpenTelemetry SDK: the
// library uses only the OpenTelemetry API, and a test in the library
// module that imports the SDK would put it, and everything it requires, in
// the module graph of every service that imports payonce. The command's
// module already requires the SDK for its Prometheus exporter.
//
// The package has no non-test code.
package telemetrytest

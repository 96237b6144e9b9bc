package payonce

import (
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// recordingTracerProvider stands for an application's SDK provider: any
// TracerProvider that is neither the no-op one nor the unset global. The
// root package's tests use the OpenTelemetry API only.
type recordingTracerProvider struct{ embedded.TracerProvider }

func (recordingTracerProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return tracenoop.NewTracerProvider().Tracer(name, opts...)
}

// This test binary never registers a global provider, so
// otel.GetTracerProvider is the unset delegate.
func TestUnsetGlobalDetected(t *testing.T) {
	if !isUnsetGlobal(otel.GetTracerProvider()) {
		t.Fatalf("the global delegate %T is not recognised: every call would start spans nobody records", otel.GetTracerProvider())
	}
	if isUnsetGlobal(recordingTracerProvider{}) || isUnsetGlobal(&recordingTracerProvider{}) || isUnsetGlobal(tracenoop.NewTracerProvider()) {
		t.Fatal("a registered provider taken for the unset global")
	}
	tel, err := newTelemetry(nil, nil, "stripe")
	if err != nil {
		t.Fatal(err)
	}
	if tel.tracing() {
		t.Fatal("spans started with no provider registered")
	}
	tel, _ = newTelemetry(nil, tracenoop.NewTracerProvider(), "stripe")
	if tel.tracing() {
		t.Fatal("spans started on a no-op provider")
	}
	tel, _ = newTelemetry(nil, recordingTracerProvider{}, "stripe")
	if !tel.tracing() {
		t.Fatal("no spans on an application's provider")
	}
}

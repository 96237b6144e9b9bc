package payonce

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
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

// With the default (unset) global providers, instrumenting a call costs no
// allocation: the hot path of Charge must not pay for telemetry nobody
// collects.
func TestTelemetryFreeWhenUnset(t *testing.T) {
	tel, err := newTelemetry(nil, nil, "stripe")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	out := Outcome{Class: ledger.OutcomeMaybeSent}
	fail := errors.New("x")
	allocs := testing.AllocsPerRun(100, func() {
		cctx, call := tel.startCall(ctx, KindCharge, now)
		actx, att := tel.startAttempt(cctx, "charge", 1)
		att.sent(actx, out.Class)
		tel.resend(actx, "charge", time.Hour)
		tel.moved(actx, "charge", ledger.StatusInFlight, ledger.StatusUnknown, "")
		att.end(out, "timeout")
		lctx, look := tel.startLookup(cctx, "charge")
		look.end(lctx, LookupResult{State: LookupSucceeded}, nil, actRecordSucceeded)
		tel.moved(cctx, "charge", ledger.StatusUnknown, ledger.StatusManualReview, ReasonWindowPassed)
		tel.breakerChanged("open")
		tel.webhook(cctx, semconv.WebhookResultRecorded, ledger.WebhookReport{})
		call.end(cctx, now, Result{Status: ResultUnknown}, fail)
	})
	if allocs != 0 {
		t.Fatalf("instrumenting one call allocates %v times with no provider registered", allocs)
	}
}

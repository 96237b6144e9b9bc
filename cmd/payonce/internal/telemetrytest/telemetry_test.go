package telemetrytest_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/semconv"
)

// otelKit is an SDK meter provider on a manual reader and an SDK tracer
// provider on a span recorder: what an application would register, read
// back by the test.
type otelKit struct {
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newOtelKit(t *testing.T) *otelKit {
	t.Helper()
	k := &otelKit{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	k.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(k.reader))
	k.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(k.spans))
	t.Cleanup(func() { _ = k.mp.Shutdown(context.Background()); _ = k.tp.Shutdown(context.Background()) })
	return k
}

// config makes a client report to the kit.
func (k *otelKit) config(c *payonce.Config) {
	c.MeterProvider, c.TracerProvider = k.mp, k.tp
}

func (k *otelKit) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, k.reader.Collect(context.Background(), &rm))
	return rm
}

// point is one data point, reduced to what the tests compare.
type point struct {
	attrs attribute.Set
	value float64 // sum or gauge value; count for a histogram
}

// points returns the data points of metric name, checking its scope.
func points(t *testing.T, rm metricdata.ResourceMetrics, name string) []point {
	t.Helper()
	var out []point
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			require.Equal(t, semconv.ScopeName, sm.Scope.Name)
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{p.Attributes, float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out = append(out, point{p.Attributes, float64(p.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{p.Attributes, p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out = append(out, point{p.Attributes, float64(p.Count)})
				}
			default:
				t.Fatalf("%s: unexpected data %T", name, m.Data)
			}
		}
	}
	return out
}

// value sums the points of name whose attributes include want ("key=value"
// pairs).
func value(t *testing.T, rm metricdata.ResourceMetrics, name string, want ...string) float64 {
	t.Helper()
	var sum float64
next:
	for _, p := range points(t, rm, name) {
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			got, ok := p.attrs.Value(attribute.Key(k))
			if !ok || got.Emit() != v {
				continue next
			}
		}
		sum += p.value
	}
	return sum
}

// checkAttributes checks that every attribute of every point is a known
// low-cardinality key and that no value holds an identifier or amount.
func checkAttributes(t *testing.T, rm metricdata.ResourceMetrics, forbidden ...string) {
	t.Helper()
	allowed := []attribute.Key{semconv.AttrProvider, semconv.AttrKind, semconv.AttrResult, semconv.AttrOutcome,
		semconv.AttrAnswer, semconv.AttrDecision, semconv.AttrFrom, semconv.AttrTo, semconv.AttrStatus, semconv.AttrReason,
		semconv.AttrState, semconv.AttrWhat, semconv.AttrDisposition, semconv.AttrClass}
	names := semconv.MetricNames()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			require.Contains(t, names, m.Name, "every metric is listed in MetricNames")
			for _, p := range points(t, rm, m.Name) {
				for _, kv := range p.attrs.ToSlice() {
					require.Contains(t, allowed, kv.Key, "%s has attribute %s", m.Name, kv.Key)
					for _, f := range forbidden {
						require.NotContains(t, kv.Value.Emit(), f, "%s.%s", m.Name, kv.Key)
					}
				}
			}
		}
	}
}

func spanNamed(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attrOf(s sdktrace.ReadOnlySpan, k attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

func TestMetricNamesListed(t *testing.T) {
	names := semconv.MetricNames()
	require.Len(t, names, 16)
	for _, n := range names {
		require.True(t, strings.HasPrefix(n, "payonce."), n)
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	require.Len(t, slices.Compact(sorted), len(names), "no name twice")
	names[0] = "changed"
	require.Equal(t, semconv.MetricCallDuration, semconv.MetricNames()[0], "a copy")
}

// chargedWithKit charges order (19.99 USD) through a client reporting to a
// fresh otelKit.
func chargedWithKit(t *testing.T, order string) (*otelKit, *bundle, payonce.Result) {
	t.Helper()
	k := newOtelKit(t)
	b := setup(t, setupOpts{config: k.config})
	res, err := b.client.Charge(b.ctx, charge(order, 1999))
	require.NoError(t, err)
	return k, b, res
}

func TestTelemetryChargeSucceeds(t *testing.T) {
	t.Parallel()
	k, _, res := chargedWithKit(t, "order-otel-ok")

	rm := k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricCallDuration, "payonce.provider=stripe", "payonce.kind=charge", "payonce.result=succeeded"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricAttempts, "payonce.outcome=success"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricAttempts), "one attempt in all")
	require.Equal(t, 1.0, value(t, rm, semconv.MetricTransitions, "payonce.from=new", "payonce.to=in_flight"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricTransitions, "payonce.from=in_flight", "payonce.to=succeeded"))
	require.Zero(t, value(t, rm, semconv.MetricLookups))
	require.Zero(t, value(t, rm, semconv.MetricResendWindowRemaining), "a first attempt is no resend")
	checkAttributes(t, rm, res.OperationID, res.Key, res.ProviderRef, "order-otel-ok", "1999")

	spans := k.spans.Ended()
	call := spanNamed(t, spans, "payonce.charge")
	require.Len(t, call, 1)
	require.Equal(t, codes.Unset, call[0].Status().Code)
	require.Equal(t, "succeeded", attrOf(call[0], semconv.AttrResult))
	att := spanNamed(t, spans, "payonce.attempt")
	require.Len(t, att, 1)
	require.Equal(t, call[0].SpanContext().SpanID(), att[0].Parent().SpanID(), "the attempt is the call's child")
	require.Equal(t, "1", attrOf(att[0], semconv.AttrAttempt))
	require.Equal(t, "success", attrOf(att[0], semconv.AttrOutcome))
	require.Equal(t, trace.SpanKindClient, att[0].SpanKind())
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			for _, f := range []string{res.OperationID, res.Key, res.ProviderRef, "1999"} {
				require.NotContains(t, kv.Value.Emit(), f, "span %s attribute %s", s.Name(), kv.Key)
			}
		}
	}
}

// A decline is the call's result, not its failure: no error status.
func TestTelemetryDeclineIsNoSpanError(t *testing.T) {
	t.Parallel()
	k := newOtelKit(t)
	b := setup(t, setupOpts{config: k.config})
	p := charge("order-otel-decline", 1999)
	p.PaymentMethod = "pm_card_chargeDeclined"
	_, err := b.client.Charge(b.ctx, p)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	rm := k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricCallDuration, "payonce.result=failed"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricAttempts, "payonce.outcome=refused"))
	for _, s := range k.spans.Ended() {
		require.Equal(t, codes.Unset, s.Status().Code, s.Name())
	}

	// Arguments refused before anything is recorded fail the call's span.
	_, err = b.client.Charge(b.ctx, charge("order-otel-invalid", -1))
	require.ErrorIs(t, err, payonce.ErrInvalid)
	rm = k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricCallDuration, "payonce.result=invalid"))
	calls := spanNamed(t, k.spans.Ended(), "payonce.charge")
	require.Len(t, calls, 2)
	require.Equal(t, codes.Error, calls[1].Status().Code)
	require.Equal(t, "invalid", attrOf(calls[1], semconv.AttrErrorType))
}

// An attempt that times out after the provider processed it is looked up
// and settled within the call: the attempt's span failed, the call did not.
func TestTelemetryTimeoutThenLookupSettles(t *testing.T) {
	t.Parallel()
	k := newOtelKit(t)
	b := setup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{HangFor: 10 * time.Second}}, config: func(c *payonce.Config) {
		k.config(c)
		c.AttemptTimeout = 300 * time.Millisecond
	}})
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultHangAfterProcessing)
	res, err := b.client.Charge(b.ctx, charge("order-otel-timeout", 1500))
	require.NoError(t, err)
	require.Equal(t, 1, b.chargesOf(t, res.OperationID))

	rm := k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricAttempts, "payonce.outcome=maybe_sent"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricAttempts), "never sent again")
	require.Equal(t, 1.0, value(t, rm, semconv.MetricLookups, "payonce.lookup.answer=succeeded", "payonce.decision=record_succeeded"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricTransitions, "payonce.from=in_flight", "payonce.to=unknown"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricTransitions, "payonce.from=unknown", "payonce.to=succeeded"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricCallDuration, "payonce.result=succeeded"))
	checkAttributes(t, rm, res.OperationID, res.Key, res.ProviderRef, "order-otel-timeout", "1500")

	spans := k.spans.Ended()
	call := spanNamed(t, spans, "payonce.charge")
	require.Len(t, call, 1)
	require.Equal(t, codes.Unset, call[0].Status().Code, "the call settled: no failure")
	att := spanNamed(t, spans, "payonce.attempt")
	require.Len(t, att, 1)
	require.Equal(t, codes.Error, att[0].Status().Code)
	require.Equal(t, "maybe_sent", attrOf(att[0], semconv.AttrErrorType))
	require.True(t, slices.ContainsFunc(att[0].Events(), func(e sdktrace.Event) bool { return e.Name == "exception" }), "the error is recorded")
	look := spanNamed(t, spans, "payonce.lookup")
	require.Len(t, look, 1)
	require.Equal(t, call[0].SpanContext().SpanID(), look[0].Parent().SpanID())
	require.Equal(t, "succeeded", attrOf(look[0], semconv.AttrAnswer))
	require.Equal(t, "record_succeeded", attrOf(look[0], semconv.AttrDecision))
	require.Equal(t, codes.Unset, look[0].Status().Code)
}

// An answer lost while lookups keep failing, past the key window: the
// reconciler sends the operation to review, and says so in its metrics.
func TestTelemetryReview(t *testing.T) {
	t.Parallel()
	k := newOtelKit(t)
	b := setup(t, setupOpts{config: k.config})
	res := chargeLostWhileLookupsFail(t, b, charge("order-otel-review", 2500), 100)
	rm := k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricCallDuration, "payonce.result=unknown"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricLookups, "payonce.lookup.answer=error", "payonce.decision=check_later"))
	for _, s := range spanNamed(t, k.spans.Ended(), "payonce.charge") {
		require.Equal(t, codes.Unset, s.Status().Code, "an unknown outcome is a result of the call")
	}
	look := spanNamed(t, k.spans.Ended(), "payonce.lookup")
	require.Len(t, look, 1)
	require.Equal(t, codes.Error, look[0].Status().Code, "the lookup itself failed")

	b.clock.Advance(25 * time.Hour)
	r := newReconciler(t, b, func(c *payonce.ReconcilerConfig) {
		c.MeterProvider, c.TracerProvider, c.StatsInterval = k.mp, k.tp, -1
	})
	rep, err := r.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Claimed)
	op, _ := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusManualReview, op.Status)
	require.Equal(t, payonce.ReasonWindowPassed, op.ReviewReason)

	rm = k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricReviews, "payonce.reason="+string(ledger.ReviewCodeWindowPassed), "payonce.kind=charge"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricTransitions, "payonce.from=unknown", "payonce.to=manual_review"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricLookups, "payonce.lookup.answer=error", "payonce.decision=review"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricReconcileOperations, "payonce.what=claimed", "payonce.provider=stripe"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricReconcileOperations, "payonce.what=settled"), "terminal for automation, as ReconcileReport.Settled counts it")
	require.Equal(t, 1.0, value(t, rm, semconv.MetricReconcilePassDuration, "payonce.provider=stripe", "payonce.result=ok"))
	checkAttributes(t, rm, res.OperationID, res.Key, "order-otel-review", "2500")

	pass := spanNamed(t, k.spans.Ended(), "payonce.reconcile")
	require.Len(t, pass, 1)
	looks := spanNamed(t, k.spans.Ended(), "payonce.lookup")
	require.Len(t, looks, 2)
	require.Equal(t, pass[0].SpanContext().SpanID(), looks[1].Parent().SpanID(), "the pass's lookups are its children")
}

func TestTelemetryWebhooks(t *testing.T) {
	t.Parallel()
	k, b, res := chargedWithKit(t, "order-otel-webhook")

	ev := payonce.WebhookEvent{ID: "evt_otel_1", Type: "charge.refunded", Targets: []payonce.WebhookTarget{{
		Kind: payonce.KindCharge, OperationID: res.OperationID, ProviderRef: res.ProviderRef,
		State: payonce.LookupSucceeded, Reversal: true,
	}}}
	rep, err := b.client.RecordWebhook(b.ctx, ev)
	require.NoError(t, err)
	require.Equal(t, ledger.WebhookContradiction, rep.Outcomes[0].Disposition)
	_, err = b.client.RecordWebhook(b.ctx, ev)
	require.NoError(t, err)
	_, err = b.client.RecordWebhook(b.ctx, payonce.WebhookEvent{ID: "evt_otel_2", Type: "customer.updated"})
	require.NoError(t, err)

	h, err := b.client.WebhookHandler(payonce.WebhookOptions{})
	require.NoError(t, err)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/webhooks", strings.NewReader(`{"id":"evt_forged"}`)))
	require.Equal(t, http.StatusBadRequest, w.Code)

	rm := k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricWebhooks, "payonce.result=recorded", "payonce.webhook.disposition=contradiction"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricWebhooks, "payonce.result=duplicate", "payonce.webhook.disposition=contradiction"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricWebhooks, "payonce.result=recorded", "payonce.webhook.disposition=none"), "an event about nothing payonce sent")
	require.Equal(t, 1.0, value(t, rm, semconv.MetricWebhooks, "payonce.result="+semconv.WebhookResultInvalid, "payonce.webhook.disposition=none"))
	require.Equal(t, 4.0, value(t, rm, semconv.MetricWebhooks))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricTransitions, "payonce.from=succeeded", "payonce.to=manual_review"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricReviews, "payonce.reason="+string(ledger.ReviewCodeWebhookContradiction)))
	checkAttributes(t, rm, res.OperationID, res.Key, res.ProviderRef, "evt_otel", "order-otel-webhook")

	// A ledger that fails: the event is not recorded, and counted unavailable.
	k2 := newOtelKit(t)
	c, err := payonce.New(payonce.Config{Provider: b.psp, Store: failingWebhooks{b.store}, MeterProvider: k2.mp, TracerProvider: k2.tp})
	require.NoError(t, err)
	_, err = c.RecordWebhook(b.ctx, payonce.WebhookEvent{ID: "evt_otel_3", Type: "charge.succeeded"})
	require.Error(t, err)
	require.Equal(t, 1.0, value(t, k2.collect(t), semconv.MetricWebhooks, "payonce.result=unavailable"))
}

type failingWebhooks struct{ ledger.Store }

func (failingWebhooks) RecordWebhook(context.Context, ledger.RecordWebhookParams) (ledger.WebhookReport, error) {
	return ledger.WebhookReport{}, errors.New("ledger down")
}

// The trace context reaches the provider's request through the context the
// adapter builds it with: a propagating transport (what otelhttp's does)
// sends the attempt's span as the traceparent.
func TestTelemetryTraceReachesProvider(t *testing.T) {
	t.Parallel()
	k := newOtelKit(t)
	var mu sync.Mutex
	var seen []string
	var target *url.URL
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("traceparent"))
		mu.Unlock()
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	b := setupLazyBase(t, proxy.URL, func(c *payonce.Config) {
		k.config(c)
		c.HTTPClient = &http.Client{Transport: propagatingTransport{http.DefaultTransport}}
	}, &target)

	_, err := b.client.Charge(b.ctx, charge("order-otel-trace", 1999))
	require.NoError(t, err)
	att := spanNamed(t, k.spans.Ended(), "payonce.attempt")
	require.Len(t, att, 1)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 1)
	want := "00-" + att[0].SpanContext().TraceID().String() + "-" + att[0].SpanContext().SpanID().String() + "-01"
	require.Equal(t, want, seen[0], "the provider sees the attempt's span as parent")
}

// setupLazyBase is setup with the adapter pointed at base, and *target set
// to the fake's address once it runs.
func setupLazyBase(t *testing.T, base string, config func(*payonce.Config), target **url.URL) *bundle {
	t.Helper()
	b := setup(t, setupOpts{baseURL: base, config: config})
	u, err := url.Parse(b.fake.URL())
	require.NoError(t, err)
	*target = u
	return b
}

// propagatingTransport injects the W3C trace context of the request's
// context, as otelhttp.NewTransport does.
type propagatingTransport struct{ base http.RoundTripper }

func (p propagatingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	propagation.TraceContext{}.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return p.base.RoundTrip(r)
}

// fakeStats is a StatsSource that counts its reads.
type fakeStats struct {
	mu    sync.Mutex
	reads int
	st    ledger.Stats
	err   error
}

func (f *fakeStats) Stats(ctx context.Context, p ledger.StatsParams) (ledger.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if p.IncludeSettled {
		return ledger.Stats{}, errors.New("a scrape must not count the settled history")
	}
	if _, ok := ctx.Deadline(); !ok {
		return ledger.Stats{}, errors.New("a read without a deadline")
	}
	return f.st, f.err
}

func TestLedgerMetrics(t *testing.T) {
	t.Parallel()
	k := newOtelKit(t)
	clock := mocks.NewManualClock(t0)
	src := &fakeStats{st: ledger.Stats{
		Open: []ledger.StatusCount{{Provider: "stripe", Kind: "charge", Status: ledger.StatusUnknown, Count: 3},
			{Provider: "stripe", Kind: "charge", Status: ledger.StatusManualReview, Count: 4}},
		Oldest: []ledger.OldestOpen{{Provider: "stripe", Kind: "charge", Status: ledger.StatusUnknown, Since: t0.Add(-90 * time.Second), OperationID: "op-secret-id"},
			{Provider: "stripe", Kind: "charge", Status: ledger.StatusManualReview, Since: t0.Add(-time.Hour), OperationID: "op-other-id"}},
		Reviews: []ledger.ReasonCount{{Provider: "stripe", Kind: "charge", Code: ledger.ReviewCodeWindowPassed, Reason: payonce.ReasonWindowPassed, Count: 1},
			{Provider: "stripe", Kind: "charge", Code: ledger.ReviewCodeWebhookContradiction, Reason: ledger.ReasonWebhookContradiction + ": charge.refunded", Count: 1},
			{Provider: "stripe", Kind: "charge", Code: ledger.ReviewCodeWebhookContradiction,
				Reason: ledger.ReasonWebhookContradiction + ": charge.dispute.created", Count: 2}},
	}}
	reg, err := payonce.RegisterLedgerMetrics(src, payonce.LedgerMetricsConfig{MeterProvider: k.mp, Now: clock.Now})
	require.NoError(t, err)

	rm := k.collect(t)
	require.Equal(t, 3.0, value(t, rm, semconv.MetricOperationsOpen, "payonce.provider=stripe", "payonce.kind=charge", "payonce.status=unknown"))
	require.Equal(t, 4.0, value(t, rm, semconv.MetricOperationsOpen, "payonce.status=manual_review"))
	require.Equal(t, 90.0, value(t, rm, semconv.MetricOperationsOldestAge, "payonce.status=unknown"))
	require.Equal(t, 3600.0, value(t, rm, semconv.MetricOperationsOldestAge, "payonce.status=manual_review"))
	require.Equal(t, 3.0, value(t, rm, semconv.MetricOperationsInReview, "payonce.reason="+string(ledger.ReviewCodeWebhookContradiction)), "reasons summed by code")
	require.Equal(t, 1.0, value(t, rm, semconv.MetricOperationsInReview, "payonce.reason="+string(ledger.ReviewCodeWindowPassed)))
	checkAttributes(t, rm, "op-", "charge.refunded", "dispute")

	// Within the interval a scrape reports the last read, with ages moving.
	clock.Advance(10 * time.Second)
	rm = k.collect(t)
	require.Equal(t, 1, src.reads, "cached")
	require.Equal(t, 100.0, value(t, rm, semconv.MetricOperationsOldestAge, "payonce.status=unknown"))
	clock.Advance(5 * time.Second)
	src.mu.Lock()
	src.st.Open[0].Count = 5
	src.mu.Unlock()
	rm = k.collect(t)
	require.Equal(t, 2, src.reads, "read again after 15s")
	require.Equal(t, 5.0, value(t, rm, semconv.MetricOperationsOpen, "payonce.status=unknown"))

	// A failing ledger reports nothing, and is not asked again at once.
	src.mu.Lock()
	src.err = errors.New("ledger down")
	src.mu.Unlock()
	clock.Advance(15 * time.Second)
	var failed metricdata.ResourceMetrics
	require.ErrorContains(t, k.reader.Collect(context.Background(), &failed), "ledger down", "the SDK hears of the failure")
	require.Empty(t, points(t, failed, semconv.MetricOperationsOpen))
	require.Error(t, k.reader.Collect(context.Background(), &failed))
	require.Equal(t, 3, src.reads, "the failure is cached too")

	require.NoError(t, reg.Unregister())
	clock.Advance(time.Minute)
	require.Empty(t, points(t, k.collect(t), semconv.MetricOperationsOpen))
	require.Equal(t, 3, src.reads, "unregistered: not read")

	_, err = payonce.RegisterLedgerMetrics(nil, payonce.LedgerMetricsConfig{})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	_, err = payonce.RegisterLedgerMetrics(src, payonce.LedgerMetricsConfig{Interval: -1})
	require.ErrorIs(t, err, payonce.ErrInvalid)
}

// The reconciler reports the ledger gauges from the real ledger, unless
// told not to (StatsInterval -1); Close stops it.
func TestReconcilerLedgerGauges(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	chargeLostWhileLookupsFail(t, b, charge("order-otel-gauge", 2500), 100)
	k := newOtelKit(t)
	r := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.MeterProvider = k.mp })
	rm := k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricOperationsOpen, "payonce.provider=stripe", "payonce.kind=charge", "payonce.status=unknown"))
	require.Equal(t, 1, len(points(t, rm, semconv.MetricOperationsOldestAge)))
	require.NoError(t, r.Close())
	require.Empty(t, points(t, k.collect(t), semconv.MetricOperationsOpen))

	k2 := newOtelKit(t)
	newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.MeterProvider, c.StatsInterval = k2.mp, -1 })
	require.Empty(t, points(t, k2.collect(t), semconv.MetricOperationsOpen))

	_, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, StatsInterval: -2})
	require.ErrorIs(t, err, payonce.ErrInvalid)
}

// The breaker's state changes are counted by the state entered.
func TestTelemetryBreakerStateChanges(t *testing.T) {
	t.Parallel()
	k := newOtelKit(t)
	b := setup(t, setupOpts{config: func(c *payonce.Config) {
		k.config(c)
		c.Breaker = payonce.BreakerSettings{ConsecutiveFailures: 1, OpenFor: time.Hour}
		c.Retry.MaxAttempts = 1
		c.Retry.LookupRetries = -1
	}})
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayBefore502)
	for i := range 2 {
		_, err := b.client.Charge(b.ctx, charge("order-otel-breaker-"+strconv.Itoa(i), 1999))
		require.Error(t, err)
		if i == 1 {
			require.ErrorIs(t, err, payonce.ErrProviderUnavailable, "the open breaker refused the second")
		}
	}
	rm := k.collect(t)
	require.Equal(t, 1.0, value(t, rm, semconv.MetricBreakerStateChanges, "payonce.provider=stripe", "payonce.breaker.state=open"))
	require.Zero(t, value(t, rm, semconv.MetricAttempts, "payonce.outcome=not_sent"), "an open breaker journals no attempt")
}

// TestWebhookUnreadableCounted: unreadable events have their own result on
// payonce.webhooks, so that an operator can alert on them.
func TestWebhookUnreadableCounted(t *testing.T) {
	t.Parallel()
	k, b, res := chargedWithKit(t, "order-otel-unreadable")
	ev := payonce.WebhookEvent{ID: "psp_1:AUTHORISATION:maybe", Type: "AUTHORISATION", Unreadable: "success is \"maybe\""}
	for range 2 {
		_, err := b.client.RecordWebhook(b.ctx, ev)
		require.NoError(t, err)
	}
	// Refused by the ledger as read (an id with a NUL byte): recorded as
	// unreadable under an id derived from it.
	rep, err := b.client.RecordWebhook(b.ctx, payonce.WebhookEvent{ID: "evt_\x00", Type: "charge.refunded",
		Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: res.OperationID, State: payonce.LookupFailed, Reversal: true}}})
	require.NoError(t, err)
	require.Equal(t, ledger.WebhookUnreadable, rep.Outcomes[0].Disposition)
	list, err := b.store.ListWebhooks(b.ctx, ledger.InboxFilter{Disposition: ledger.WebhookUnreadable})
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "psp_1:AUTHORISATION:maybe", list[0].ID, "same received time: by event id")
	require.True(t, strings.HasPrefix(list[1].ID, "sha256:"), list[1].ID)
	require.Contains(t, list[1].Unreadable, "Event.ID")
	op, _, err := b.store.Get(b.ctx, res.OperationID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, op.Status, "what the ledger could not store settles nothing")

	rm := k.collect(t)
	require.Equal(t, 2.0, value(t, rm, semconv.MetricWebhooks, "payonce.result="+semconv.WebhookResultRecordedUnreadable, "payonce.webhook.disposition=unreadable"))
	require.Equal(t, 1.0, value(t, rm, semconv.MetricWebhooks, "payonce.result="+semconv.WebhookResultDuplicate, "payonce.webhook.disposition=unreadable"))
}

package payonce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// OpenTelemetry instrumentation, following OpenTelemetry's rules for
// instrumentation libraries: payonce depends on the OTel API only, takes
// its providers from Config (the globals when nil), names its scope by its
// import path, and records nothing that otelhttp (on Config.HTTPClient's
// transport) or otelpgx (on the ledger's pool) already records: no HTTP or
// SQL metrics or spans of its own. Every instrument lives here; call sites
// are one line each.
//
// Attributes are low-cardinality enums only: provider, kind, outcome,
// status, reason codes. Operation ids, keys, references, amounts and
// anything a provider sent back are never attributes: they would make a
// series per payment, and some of them identify a customer's payment.

// spanPrefix starts the name of every span payonce starts.
const spanPrefix = "payonce."

// reasonUnreadable starts the review reason of an operation whose stored
// request this version cannot read.
const reasonUnreadable = "stored request unreadable"

// telemetry holds one Client's or Reconciler's instruments and tracer,
// built by newTelemetry. On no-op providers (the default globals before the
// application registers any) it records nothing and starts no spans.
type telemetry struct {
	tracer trace.Tracer
	// spansOff is set for a no-op TracerProvider: its spans record nothing,
	// and starting one puts a non-recording span in the context in place
	// of the caller's own, so that the transition events (moved) would no
	// longer reach the caller's span.
	spansOff bool
	// unsetGlobal, when set, is OpenTelemetry's global TracerProvider as it
	// was at New: the delegate that hands out non-recording spans until the
	// application registers a provider. Spans are started only once
	// otel.GetTracerProvider() returns something else (the tracer then
	// forwards to it).
	unsetGlobal trace.TracerProvider
	provider    attribute.KeyValue

	callDuration    metric.Float64Histogram
	attempts        metric.Int64Counter
	lookups         metric.Int64Counter
	transitions     metric.Int64Counter
	reviews         metric.Int64Counter
	resendRemaining metric.Float64Histogram
	breakerChanges  metric.Int64Counter
	passDuration    metric.Float64Histogram
	reconcileOps    metric.Int64Counter
	webhooks        metric.Int64Counter
	auditRuns       metric.Int64Counter
	auditDiffs      metric.Int64Counter
}

// newTelemetry builds the instruments from mp and tp (the globals when
// nil). provider is the provider's name, or "" for a Reconciler.
func newTelemetry(mp metric.MeterProvider, tp trace.TracerProvider, provider string) (*telemetry, error) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	t := &telemetry{tracer: tp.Tracer(semconv.ScopeName), provider: semconv.AttrProvider.String(provider)}
	switch {
	case isNoopTracerProvider(tp):
		t.spansOff = true
	case isUnsetGlobal(tp):
		t.unsetGlobal = tp
	}
	m := mp.Meter(semconv.ScopeName)
	var err error
	hist := func(name, unit, desc string, bounds ...float64) metric.Float64Histogram {
		h, e := m.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(bounds...))
		err = firstErr(err, e)
		return h
	}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, e := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		err = firstErr(err, e)
		return c
	}
	// Call and pass durations span a zero-latency fake to a call that
	// waits out retries and Retry-After: milliseconds to minutes.
	durations := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	t.callDuration = hist(semconv.MetricCallDuration, "s", "Duration of a Charge, Capture, Cancel or Refund call, by the status it reported.", durations...)
	t.attempts = counter(semconv.MetricAttempts, "{attempt}", "Attempts sent (or refused before sending), by outcome class.")
	t.lookups = counter(semconv.MetricLookups, "{lookup}", "Status lookups, by what the provider answered and what was decided.")
	t.transitions = counter(semconv.MetricTransitions, "{transition}", "Status changes of operations recorded in the ledger.")
	t.reviews = counter(semconv.MetricReviews, "{operation}", "Operations sent to manual review, by reason code.")
	// A key window is hours (Stripe 24 h): resolution near its end matters.
	t.resendRemaining = hist(semconv.MetricResendWindowRemaining, "s", "Time left of the key window (less the safety margin) when a resend was sent.",
		60, 300, 900, 1800, 3600, 7200, 14400, 28800, 43200, 86400, 172800, 604800)
	t.breakerChanges = counter(semconv.MetricBreakerStateChanges, "{change}", "Circuit breaker state changes, by the state entered.")
	t.passDuration = hist(semconv.MetricReconcilePassDuration, "s", "Duration of one reconciler pass over one provider's due operations.", durations...)
	t.reconcileOps = counter(semconv.MetricReconcileOperations, "{operation}", "Operations a reconciler claimed, settled, skipped or failed on.")
	t.webhooks = counter(semconv.MetricWebhooks, "{event}", "Webhook events and rejected deliveries, by result and disposition.")
	t.auditRuns = counter(semconv.MetricAuditRuns, "{audit}", "Audits of the ledger against a provider's records, by result.")
	t.auditDiffs = counter(semconv.MetricAuditDifferences, "{difference}", "Differences audits found between the ledger and a provider, by class.")
	if err != nil {
		return nil, invalid("Config.MeterProvider", "creating payonce's instruments failed: %v", err)
	}
	return t, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func isNoopTracerProvider(tp trace.TracerProvider) bool {
	switch tp.(type) {
	case tracenoop.TracerProvider, *tracenoop.TracerProvider:
		return true
	}
	return false
}

// isUnsetGlobal reports whether tp is OpenTelemetry's global delegate,
// which otel.GetTracerProvider returns until the application registers a
// provider. It lives in otel's internal/global package; once a provider is
// registered, otel.GetTracerProvider returns that provider instead.
func isUnsetGlobal(tp trace.TracerProvider) bool {
	rt := reflect.TypeOf(tp)
	if rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	return rt.PkgPath() == "go.opentelemetry.io/otel/internal/global"
}

// tracing reports whether spans are worth starting.
func (t *telemetry) tracing() bool {
	if t.spansOff {
		return false
	}
	return t.unsetGlobal == nil || otel.GetTracerProvider() != t.unsetGlobal
}

// start starts a span when tracing is on; otherwise it returns ctx and a
// nil span, which every method of the span helpers below accepts.
func (t *telemetry) start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	if !t.tracing() {
		return ctx, nil
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(kind))
}

// add and record guard every measurement with Enabled, so that building
// its attribute set costs nothing when no SDK is registered.
func (t *telemetry) add(ctx context.Context, c metric.Int64Counter, attrs ...attribute.KeyValue) {
	if !c.Enabled(ctx) {
		return
	}
	c.Add(ctx, 1, metric.WithAttributes(attrs...))
}

func (t *telemetry) record(ctx context.Context, h metric.Float64Histogram, v float64, attrs ...attribute.KeyValue) {
	if !h.Enabled(ctx) {
		return
	}
	h.Record(ctx, v, metric.WithAttributes(attrs...))
}

// failSpan marks a span failed: the error recorded, status Error, and
// error.type set to errType.
func failSpan(s trace.Span, err error, errType string) {
	if s == nil || !s.IsRecording() {
		return
	}
	s.RecordError(err)
	s.SetStatus(codes.Error, err.Error())
	s.SetAttributes(semconv.AttrErrorType.String(errType))
}

// callSpan is one Charge, Capture, Cancel or Refund in flight.
type callSpan struct {
	t     *telemetry
	span  trace.Span
	kind  Kind
	start time.Time
}

// startCall starts the span of one call ("payonce.charge", ...).
func (t *telemetry) startCall(ctx context.Context, kind Kind, now time.Time) (context.Context, callSpan) {
	ctx, s := t.start(ctx, callSpanName(kind), trace.SpanKindInternal)
	if s != nil && s.IsRecording() {
		s.SetAttributes(t.provider, semconv.AttrKind.String(string(kind)))
	}
	return ctx, callSpan{t: t, span: s, kind: kind, start: now}
}

func callSpanName(kind Kind) string {
	switch kind {
	case KindCharge:
		return "payonce.charge"
	case KindCapture:
		return "payonce.capture"
	case KindCancel:
		return "payonce.cancel"
	case KindRefund:
		return "payonce.refund"
	}
	return spanPrefix + "call"
}

// callResult is the value of AttrResult for a call: the status it
// reported, "invalid" for arguments refused before anything was recorded,
// "error" for a failure to record (the ledger, a fingerprint mismatch).
func callResult(res Result, err error) (result string, failed bool) {
	switch {
	case err == nil:
		return string(res.Status), false
	case errors.Is(err, ErrInvalid):
		return "invalid", true
	case res.Status == "" || errors.As(err, new(*recordError)):
		// Nothing recorded (the journal write failed, or the request does
		// not match the recorded one), or an outcome left unrecorded.
		return "error", true
	}
	return string(res.Status), false
}

// end ends the call: its duration by result, and its span, failed only
// when the call failed to act. A decline, an unknown outcome or a review is
// the result of a call that worked, not a failure of it.
func (c callSpan) end(ctx context.Context, now time.Time, res Result, err error) {
	result, failed := callResult(res, err)
	c.t.record(ctx, c.t.callDuration, now.Sub(c.start).Seconds(), c.t.provider, semconv.AttrKind.String(string(c.kind)), semconv.AttrResult.String(result))
	if c.span == nil {
		return
	}
	if c.span.IsRecording() {
		c.span.SetAttributes(semconv.AttrResult.String(result), semconv.AttrReplayed.Bool(res.Replayed))
		if failed {
			failSpan(c.span, err, result)
		}
	}
	c.span.End()
}

// attemptSpan is one journaled attempt being sent.
type attemptSpan struct {
	t    *telemetry
	span trace.Span
	kind string
}

// startAttempt starts the span of attempt number n of an operation of kind.
func (t *telemetry) startAttempt(ctx context.Context, kind string, n int) (context.Context, attemptSpan) {
	ctx, s := t.start(ctx, spanPrefix+"attempt", trace.SpanKindClient)
	if s != nil && s.IsRecording() {
		s.SetAttributes(t.provider, semconv.AttrKind.String(kind), semconv.AttrAttempt.Int(n))
	}
	return ctx, attemptSpan{t: t, span: s, kind: kind}
}

// sent counts an attempt by outcome class.
func (a attemptSpan) sent(ctx context.Context, class ledger.OutcomeClass) {
	a.t.add(ctx, a.t.attempts, a.t.provider, semconv.AttrKind.String(a.kind), semconv.AttrOutcome.String(string(class)))
}

// resend records, for a resend about to leave (an earlier attempt may have
// reached the provider), how much of the key window, less the safety
// margin, is left: how close resends come to the point where only a person
// may decide.
func (t *telemetry) resend(ctx context.Context, kind string, remaining time.Duration) {
	t.record(ctx, t.resendRemaining, remaining.Seconds(), t.provider, semconv.AttrKind.String(kind))
}

// end ends the attempt's span; a second call does nothing. An attempt
// that succeeded or was refused (a decline is an answer) is not failed; one
// whose outcome is unknown, that never left or that the provider rejected
// for its key is.
func (a *attemptSpan) end(out Outcome, errText string) {
	if a.span == nil {
		return
	}
	if a.span.IsRecording() {
		a.span.SetAttributes(semconv.AttrOutcome.String(string(out.Class)), semconv.AttrReplayed.Bool(out.Replayed))
		if out.Class != ledger.OutcomeSuccess && out.Class != ledger.OutcomeRefused {
			failSpan(a.span, errors.New(errText), string(out.Class))
		}
	}
	a.span.End()
	a.span = nil
}

// lookupSpan is one status lookup and the decision that follows it.
type lookupSpan struct {
	t    *telemetry
	span trace.Span
	kind string
}

func (t *telemetry) startLookup(ctx context.Context, kind string) (context.Context, lookupSpan) {
	ctx, s := t.start(ctx, spanPrefix+"lookup", trace.SpanKindClient)
	if s != nil && s.IsRecording() {
		s.SetAttributes(t.provider, semconv.AttrKind.String(kind))
	}
	return ctx, lookupSpan{t: t, span: s, kind: kind}
}

// lookupAnswer is the value of AttrAnswer: the state found, "contradiction"
// for an object that is not the operation's, "error" for a failed lookup.
func lookupAnswer(lr LookupResult, lerr error) string {
	switch {
	case lerr != nil:
		return "error"
	case lr.Contradiction != "":
		return "contradiction"
	case lr.State == "":
		return "none"
	}
	return string(lr.State)
}

// end counts the lookup by answer and decision and ends its span. A
// failed lookup fails the span; what it found, whatever it was, does not.
func (l lookupSpan) end(ctx context.Context, lr LookupResult, lerr error, decision action) {
	answer := lookupAnswer(lr, lerr)
	l.t.add(ctx, l.t.lookups, l.t.provider, semconv.AttrKind.String(l.kind), semconv.AttrAnswer.String(answer), semconv.AttrDecision.String(string(decision)))
	if l.span == nil {
		return
	}
	if l.span.IsRecording() {
		l.span.SetAttributes(semconv.AttrAnswer.String(answer), semconv.AttrDecision.String(string(decision)))
		if lerr != nil {
			failSpan(l.span, lerr, "lookup_failed")
		}
	}
	l.span.End()
}

// moved counts a status change recorded in the ledger and, when it sends
// the operation to review, the review by reason code. from == to counts
// nothing.
func (t *telemetry) moved(ctx context.Context, kind string, from, to ledger.Status, code ledger.ReviewCode) {
	if from == to || to == "" {
		return
	}
	if from == "" {
		from = "new"
	}
	t.add(ctx, t.transitions, t.provider, semconv.AttrKind.String(kind), semconv.AttrFrom.String(string(from)), semconv.AttrTo.String(string(to)))
	if to == ledger.StatusManualReview {
		t.add(ctx, t.reviews, t.provider, semconv.AttrKind.String(kind), semconv.AttrReason.String(string(cmp.Or(code, ledger.ReviewCodeOther))))
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		s.AddEvent("payonce.transition", trace.WithAttributes(semconv.AttrFrom.String(string(from)), semconv.AttrTo.String(string(to))))
	}
}

// breakerChanged counts a circuit breaker entering state to.
func (t *telemetry) breakerChanged(to string) {
	t.add(context.Background(), t.breakerChanges, t.provider, semconv.AttrState.String(to))
}

// webhookDispositionNone is the disposition of a rejected delivery and of
// an event about nothing payonce sent.
const webhookDispositionNone = "none"

// webhook counts one webhook event (result recorded, duplicate or
// unavailable, with the disposition of its first target) or one rejected
// delivery (disposition "none").
func (t *telemetry) webhook(ctx context.Context, result string, rep ledger.WebhookReport) {
	disp := webhookDispositionNone
	if len(rep.Outcomes) > 0 {
		disp = string(rep.Outcomes[0].Disposition)
	}
	t.add(ctx, t.webhooks, t.provider, semconv.AttrResult.String(result), semconv.AttrDisposition.String(disp))
}

// passSpan is one reconciler pass over one provider.
type passSpan struct {
	t        *telemetry
	span     trace.Span
	provider attribute.KeyValue
	start    time.Time
}

func (t *telemetry) startPass(ctx context.Context, provider string, now time.Time) (context.Context, passSpan) {
	p := semconv.AttrProvider.String(provider)
	ctx, s := t.start(ctx, spanPrefix+"reconcile", trace.SpanKindInternal)
	if s != nil && s.IsRecording() {
		s.SetAttributes(p)
	}
	return ctx, passSpan{t: t, span: s, provider: p, start: now}
}

// end records the pass's duration and what it did with the operations it
// claimed; err is a failure to claim.
func (p passSpan) end(ctx context.Context, now time.Time, claimed, settled, skipped, failed int, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	p.t.record(ctx, p.t.passDuration, now.Sub(p.start).Seconds(), p.provider, semconv.AttrResult.String(result))
	for _, w := range []struct {
		what string
		n    int
	}{{"claimed", claimed}, {"settled", settled}, {"skipped", skipped}, {"failed", failed}} {
		if w.n > 0 && p.t.reconcileOps.Enabled(ctx) {
			p.t.reconcileOps.Add(ctx, int64(w.n), metric.WithAttributes(p.provider, semconv.AttrWhat.String(w.what)))
		}
	}
	if p.span == nil {
		return
	}
	if p.span.IsRecording() {
		p.span.SetAttributes(attribute.Int("payonce.claimed", claimed), attribute.Int("payonce.settled", settled),
			attribute.Int("payonce.skipped", skipped), attribute.Int("payonce.failed", failed))
		if err != nil {
			failSpan(p.span, err, "claim_failed")
		}
	}
	p.span.End()
}

// StatsSource is what the ledger gauges read: a ledger.Store (its Stats
// method).
type StatsSource interface {
	Stats(ctx context.Context, p ledger.StatsParams) (ledger.Stats, error)
}

// LedgerMetricsConfig configures RegisterLedgerMetrics. Zero fields take the
// defaults named on each.
type LedgerMetricsConfig struct {
	// MeterProvider receives the gauges. Defaults to otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Interval is the least time between two reads of the ledger: a scrape
	// within it reports the previous read. Defaults to 15 s. Stats counts
	// every open operation, and many scrapers (or a short scrape interval)
	// must not turn that into load on the ledger.
	Interval time.Duration
	// Timeout bounds one read of the ledger. Defaults to 5 s: a scrape that
	// waits on a slow ledger is itself dropped by the collector.
	Timeout time.Duration
	// Now is the clock, for the cache and the ages. Defaults to time.Now.
	Now func() time.Time
}

// RegisterLedgerMetrics reports what the ledger holds, read from
// src.Stats when metrics are collected (at most once per Interval):
//
//	payonce.operations.open        gauge {operation}, by provider, kind, status
//	payonce.operations.oldest_age  gauge s, age of the oldest open operation, by provider, kind, status
//	payonce.operations.in_review   gauge {operation}, by provider, kind, reason code
//
// The ledger is shared, so these are the same numbers wherever they are
// read: register them once per ledger and process, not once per Client. A
// Reconciler registers them unless ReconcilerConfig.StatsInterval is -1;
// call this in a service that runs no Reconciler. Several replicas report
// the same values: aggregate them with max, not sum. Unregister the
// returned registration when done with src.
func RegisterLedgerMetrics(src StatsSource, cfg LedgerMetricsConfig) (metric.Registration, error) {
	if src == nil {
		return nil, invalid("src", "required: the ledger store to read")
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.Interval == 0 {
		cfg.Interval = 15 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.Interval < 0:
		return nil, invalid("LedgerMetricsConfig.Interval", "must be > 0 (0 for the default 15s), got %v", cfg.Interval)
	case cfg.Timeout < 0:
		return nil, invalid("LedgerMetricsConfig.Timeout", "must be > 0 (0 for the default 5s), got %v", cfg.Timeout)
	}
	m := cfg.MeterProvider.Meter(semconv.ScopeName)
	open, err1 := m.Int64ObservableGauge(semconv.MetricOperationsOpen, metric.WithUnit("{operation}"),
		metric.WithDescription("Operations not settled (pending, in flight, unknown, in review), by provider, kind and status."))
	oldest, err2 := m.Float64ObservableGauge(semconv.MetricOperationsOldestAge, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest open operation (in review: since it entered review), by provider, kind and status."))
	review, err3 := m.Int64ObservableGauge(semconv.MetricOperationsInReview, metric.WithUnit("{operation}"),
		metric.WithDescription("Operations in manual review, by provider, kind and reason code."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, invalid("LedgerMetricsConfig.MeterProvider", "creating the ledger gauges failed: %v", err)
	}
	c := &statsCache{src: src, cfg: cfg}
	return m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		st, now, err := c.read(ctx)
		if err != nil {
			return err
		}
		for _, sc := range st.Open {
			o.ObserveInt64(open, sc.Count, metric.WithAttributes(semconv.AttrProvider.String(sc.Provider), semconv.AttrKind.String(sc.Kind), semconv.AttrStatus.String(string(sc.Status))))
		}
		for _, old := range st.Oldest {
			o.ObserveFloat64(oldest, max(0, now.Sub(old.Since).Seconds()), metric.WithAttributes(semconv.AttrProvider.String(old.Provider), semconv.AttrKind.String(old.Kind), semconv.AttrStatus.String(string(old.Status))))
		}
		// Reasons are sentences, some with a provider's detail: one series
		// per review code, summed.
		type reviewKey struct{ provider, kind, code string }
		byCode := map[reviewKey]int64{}
		var order []reviewKey
		for _, rc := range st.Reviews {
			k := reviewKey{rc.Provider, rc.Kind, string(cmp.Or(rc.Code, ledger.ReviewCodeOther))}
			if _, seen := byCode[k]; !seen {
				order = append(order, k)
			}
			byCode[k] += rc.Count
		}
		for _, k := range order {
			o.ObserveInt64(review, byCode[k], metric.WithAttributes(semconv.AttrProvider.String(k.provider), semconv.AttrKind.String(k.kind), semconv.AttrReason.String(k.code)))
		}
		return nil
	}, open, oldest, review)
}

// statsCache reads the ledger's Stats at most once per Interval.
type statsCache struct {
	src StatsSource
	cfg LedgerMetricsConfig

	mu  sync.Mutex
	at  time.Time // of the last read, successful or not
	st  ledger.Stats
	err error
}

// read returns the ledger's Stats, from the cache when the last read is
// younger than Interval (a failed read too: a failing ledger is not asked
// again at every scrape), and the time to count ages from.
func (c *statsCache) read(ctx context.Context) (ledger.Stats, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if !c.at.IsZero() && now.Sub(c.at) < c.cfg.Interval {
		return c.st, now, c.err
	}
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	st, err := c.src.Stats(rctx, ledger.StatsParams{})
	c.at, c.st, c.err = now, st, err
	if err != nil {
		c.st = ledger.Stats{}
		c.err = fmt.Errorf("payonce: reading the ledger's stats for metrics: %w", err)
	}
	return c.st, now, c.err
}

// Hooks are in-process callbacks on what happened to an operation, for a
// Client (Config.Hooks) or a Reconciler (ReconcilerConfig.Hooks). They are
// best-effort: they run in this process only, after the ledger committed
// the change, and a crash, a deploy or a timed-out hook loses the
// notification while the ledger keeps the fact. They are not a durable
// feed: anything that must see every settled operation (fulfilment,
// accounting) reads the ledger's feed, which survives restarts and is
// shared by every replica.
//
// A hook runs on the goroutine that recorded the change, after the lease
// on the operation was given up, for at most Timeout: the call (or the
// reconciler's worker) waits that long and then goes on, cancelling the
// hook's context, while a hook that ignores the cancellation runs on in
// its own goroutine. Keep hooks short: hand the Result to a channel or a
// queue. A panicking hook is recovered and logged at Error; the ledger is
// unaffected. A hook must not call the Client for the same operation (the
// call would only replay the recorded result).
type Hooks struct {
	// OnSettled is called when an operation reaches succeeded or failed.
	OnSettled func(ctx context.Context, res Result)
	// OnReview is called when an operation enters manual_review; the
	// result's ReviewCode says why (compare it), ReviewReason says it for a
	// person.
	OnReview func(ctx context.Context, res Result)
	// OnPass is called by a Reconciler after every pass (RunOnce, and each
	// pass of Run) with its report, also when claiming failed (the report
	// so far). It gets its own copy of the report. A Client never calls it:
	// one Hooks value may serve both Config.Hooks and ReconcilerConfig.Hooks.
	OnPass func(rep ReconcileReport)
	// Timeout is how long a hook may hold up the goroutine that calls it.
	// Defaults to 1 s.
	Timeout time.Duration
}

// withDefaults fills the defaults of h and validates it; field names it in
// errors ("Config.Hooks").
func (h Hooks) withDefaults(field string) (Hooks, error) {
	if h.Timeout == 0 {
		h.Timeout = time.Second
	}
	if h.Timeout < 0 {
		return h, invalid(field+".Timeout", "must be > 0 (0 for the default 1s), got %v", h.Timeout)
	}
	return h, nil
}

// fire calls the hook that fits op's change from status from, if any: op
// is the operation as the ledger recorded it.
func (h Hooks) fire(ctx context.Context, log *slog.Logger, from ledger.Status, op ledger.Operation) {
	if op.Status == from {
		return
	}
	switch {
	case op.Status == ledger.StatusSucceeded || op.Status == ledger.StatusFailed:
		if h.OnSettled != nil {
			runHook(ctx, log, h.Timeout, "OnSettled", op.ID, func(ctx context.Context) { h.OnSettled(ctx, ResultOf(op)) })
		}
	case op.Status == ledger.StatusManualReview:
		if h.OnReview != nil {
			runHook(ctx, log, h.Timeout, "OnReview", op.ID, func(ctx context.Context) { h.OnReview(ctx, ResultOf(op)) })
		}
	}
}

// runHook runs fn for at most timeout, recovering a panic. fn's context
// keeps ctx's values (the span) but not its cancellation: a caller that has
// just given up must not cut the notification of what its call recorded.
// When the timeout passes, runHook stops waiting and cancels fn's context:
// the money path never waits on a hook for longer.
func runHook(ctx context.Context, log *slog.Logger, timeout time.Duration, name, opID string, fn func(context.Context)) {
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				// A bug in the hook, not a fault of the payment: the ledger
				// has the change, and nothing else depends on the hook.
				log.Error("payonce: hook panicked", "hook", name, semconv.LogKeyOperation, opID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		fn(hctx)
	}()
	select {
	case <-done:
	case <-hctx.Done():
		log.Warn("payonce: hook still running after its timeout; no longer waiting for it", "hook", name, semconv.LogKeyOperation, opID, "timeout", timeout)
	}
}

// auditDifference counts one difference an audit found.
func (t *telemetry) auditDifference(ctx context.Context, class ledger.FindingClass) {
	t.add(ctx, t.auditDiffs, t.provider, semconv.AttrClass.String(string(class)))
}

// audited counts one audit by its result.
func (t *telemetry) audited(ctx context.Context, rep AuditReport, err error) {
	result := semconv.AuditResultConsistent
	switch {
	case err != nil:
		result = semconv.AuditResultError
	case rep.Differs():
		result = semconv.AuditResultDiffers
	}
	t.add(ctx, t.auditRuns, t.provider, semconv.AttrResult.String(result))
}

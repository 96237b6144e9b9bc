package payonce

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// ReconcilerConfig configures a Reconciler. Zero fields take the defaults
// named on each.
type ReconcilerConfig struct {
	// Store is the ledger to drain. Required; the clients should use it too.
	Store ledger.Store
	// Clients settle operations, one per provider (by Provider().Name()).
	// Required. Operations of other providers are left alone.
	Clients []*Client
	// BatchSize is how many due operations one RunOnce claims per provider.
	// It bounds memory. Defaults to 100.
	BatchSize int
	// Concurrency is how many operations are settled at once. Defaults to 4.
	Concurrency int
	// RatePerSecond limits operations settled per second per provider
	// (provider name -> rate); a provider absent from the map is unlimited.
	RatePerSecond map[string]float64
	// Interval is how long Run waits when nothing is due. Defaults to 10 s.
	Interval time.Duration
	// Owner names this reconciler in leases, for people (e.g.
	// "orders-reconciler"). Defaults to host/pid/reconciler. Like
	// Config.Owner it is a label: every pass leases under Owner, a random
	// part drawn once per Reconciler and a pass number, so replicas with the
	// same Owner, and passes of one Reconciler running at once, never share
	// a lease.
	Owner string
	// Logger defaults to discarding.
	Logger *slog.Logger
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// TombstoneRetention is how long Cleanup keeps the tombstone of a
	// deleted operation, counted from when it finished. Zero, the default,
	// keeps tombstones forever: a tombstone is what answers a late
	// duplicate call with the recorded outcome, and once it is gone such a
	// call is a new operation, sent under a key the provider forgot. When
	// set, it must be at least the retention Cleanup is given.
	TombstoneRetention time.Duration
	// MeterProvider receives the reconciler's own metrics (pass durations,
	// operations claimed, settled, skipped) and the ledger gauges.
	// Defaults to otel.GetMeterProvider(). What happens to each operation
	// (attempts, lookups, transitions) is recorded by the Client that
	// settles it, on that Client's Config.MeterProvider and TracerProvider.
	MeterProvider metric.MeterProvider
	// TracerProvider receives one span per pass and provider
	// ("payonce.reconcile"), parent of the attempts and lookups of that
	// pass. Defaults to otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// StatsInterval is how often, at most, the reconciler reads the
	// ledger's Stats for the ledger gauges (payonce.operations.*;
	// RegisterLedgerMetrics). Defaults to 15 s; -1 reports no ledger
	// gauges (another reconciler, or RegisterLedgerMetrics, does).
	StatsInterval time.Duration
	// Hooks are in-process callbacks on what the reconciler's passes do:
	// OnSettled and OnReview for the operations a pass settled or sent to
	// review, OnPass after every pass. Best-effort, after the ledger
	// commit, bounded by Hooks.Timeout (see Hooks). The Clients' own
	// Config.Hooks fire for the same operations too: set one or the other.
	Hooks Hooks
	// Audit schedules audits of the reconciler's providers against their
	// own records (Client.Audit); the zero value schedules none.
	Audit AuditSchedule
}

// AuditSchedule makes a Reconciler audit its providers: every Every, the
// first RunOnce at or after the due time audits, for each client whose
// provider can be audited without a downloaded report (an AuditLister that
// does not need AuditQuery.Report, or AuditInfo.ByLookup), the period
// [now-Delay-Window, now-Delay) by the reconciler's clock (an audit that
// runs late starts its period Window before it was due, so that periods
// meet), and records its findings. A caller that drives RunOnce itself (a job queue's job) has
// the audit run inside that RunOnce, after the pass, counted in its report
// (Audits, AuditDifferences, errors). Run audits in a goroutine of its
// own beside the passes instead, checking every Interval whether an audit
// is due, and logs each: an audit reads as fast as the provider's rate
// limits let it (a day of a million Stripe PaymentIntents is 10,000 pages,
// about 17 minutes at DefaultAuditRate), and reconciliation must not wait
// that long to settle what is unknown. An audit's error is logged (and,
// within RunOnce, counted in the report's errors); it never stops
// reconciliation, and the next audit comes Every later (a period missed is
// not audited again: run Client.Audit for it).
//
// Every replica's reconciler with an AuditSchedule audits the same
// periods: findings are upserts (the same difference found again is one
// finding, its Times counted up), so that is harmless but costs the
// provider's read limits once per replica. Give the schedule to one
// replica only to avoid it.
type AuditSchedule struct {
	// Every is how often to audit; zero: never.
	Every time.Duration
	// Window is the length of each audited period; defaults to Every, so
	// that consecutive periods meet.
	Window time.Duration
	// Delay is how far the period ends before now: long enough for the
	// provider to have settled and indexed what the period created (and
	// for the reconciler to have settled the ledger's side), e.g. an hour.
	Delay time.Duration
}

// Reconciler drives unfinished operations to a terminal state in the
// background: it sends pending ones, looks up unknown ones and those whose
// worker died, follows the decision table, and keeps looking up (read-only)
// operations in review whose outcome is unknown, resolving them with an audit
// entry when the provider gives a definitive answer. Any number of
// reconcilers on any number of replicas may share one PostgreSQL ledger: the
// ledger's leases make sure no operation is handled twice at once.
type Reconciler struct {
	cfg       ReconcilerConfig
	ownerBase string
	passes    atomic.Uint64
	clients   map[string]*Client
	limiters  map[string]*rate.Limiter
	order     []string
	tel       *telemetry
	// stats is the ledger gauges' registration; nil when not reported.
	stats metric.Registration
	// auditMu guards nextAudit, when the next scheduled audit is due
	// (zero: at the first pass).
	auditMu   sync.Mutex
	nextAudit time.Time
}

// ReconcileReport says what one RunOnce did. Its JSON form uses the
// snake_case names of its tags and leaves Errors out (an error has no JSON
// form); error_count says how many there were.
type ReconcileReport struct {
	// Claimed counts operations claimed, Settled those that reached a
	// terminal state, Skipped those left for later (lease too short).
	Claimed int `json:"claimed"`
	Settled int `json:"settled"`
	Skipped int `json:"skipped"`
	// Released counts operations claimed and never started because ctx
	// ended, whose leases were given up: due again at once.
	Released int `json:"released"`
	// Transitions counts status changes, keyed "from->to".
	Transitions map[string]int `json:"transitions"`
	// Errors holds the first errors met (at most 20); ErrorCount counts all.
	Errors     []error `json:"-"`
	ErrorCount int     `json:"error_count"`
	// Audits counts the scheduled audits the pass ran (AuditSchedule) and
	// AuditDifferences the differences they found: RunOnce's only (Run
	// audits beside its passes and logs them).
	Audits           int `json:"audits"`
	AuditDifferences int `json:"audit_differences"`
}

// NewReconciler builds a Reconciler from cfg.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	if cfg.Store == nil {
		return nil, invalid("ReconcilerConfig.Store", "required: the ledger the clients write to")
	}
	if len(cfg.Clients) == 0 {
		return nil, invalid("ReconcilerConfig.Clients", "required: at least one client (one per provider)")
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 100
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	if cfg.Interval == 0 {
		cfg.Interval = 10 * time.Second
	}
	if cfg.Owner == "" {
		cfg.Owner = defaultOwner() + "/reconciler"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hooks, err := cfg.Hooks.withDefaults("ReconcilerConfig.Hooks")
	if err != nil {
		return nil, err
	}
	cfg.Hooks = hooks
	switch {
	case cfg.BatchSize < 1 || cfg.BatchSize > ledger.MaxLimit:
		return nil, invalid("ReconcilerConfig.BatchSize", "must be between 1 and %d, got %d", ledger.MaxLimit, cfg.BatchSize)
	case cfg.Concurrency < 1 || cfg.Concurrency > 1024:
		return nil, invalid("ReconcilerConfig.Concurrency", "must be between 1 and 1024, got %d", cfg.Concurrency)
	case cfg.Interval < 0:
		return nil, invalid("ReconcilerConfig.Interval", "must be > 0, got %v", cfg.Interval)
	case cfg.TombstoneRetention < 0:
		return nil, invalid("ReconcilerConfig.TombstoneRetention", "must be >= 0 (0 keeps tombstones forever), got %v", cfg.TombstoneRetention)
	case len(cfg.Owner) > 200:
		return nil, invalid("ReconcilerConfig.Owner", "at most 200 bytes, got %d", len(cfg.Owner))
	case cfg.Audit.Every < 0 || cfg.Audit.Window < 0 || cfg.Audit.Delay < 0:
		return nil, invalid("ReconcilerConfig.Audit", "durations must be >= 0, got every %v, window %v, delay %v", cfg.Audit.Every, cfg.Audit.Window, cfg.Audit.Delay)
	case cfg.Audit.Every == 0 && (cfg.Audit.Window != 0 || cfg.Audit.Delay != 0):
		return nil, invalid("ReconcilerConfig.Audit", "Window and Delay need Every (how often to audit)")
	case cfg.StatsInterval < 0 && cfg.StatsInterval != off:
		return nil, invalid("ReconcilerConfig.StatsInterval", "must be > 0, or -1 to report no ledger gauges, got %v", cfg.StatsInterval)
	}
	if cfg.Audit.Window == 0 {
		cfg.Audit.Window = cfg.Audit.Every
	}
	tel, err := newTelemetry(cfg.MeterProvider, cfg.TracerProvider, "")
	if err != nil {
		return nil, err
	}
	r := &Reconciler{tel: tel, cfg: cfg, ownerBase: cfg.Owner + "/" + randomTag(), clients: map[string]*Client{}, limiters: map[string]*rate.Limiter{}}
	for i, c := range cfg.Clients {
		if c == nil {
			return nil, invalid(fmt.Sprintf("ReconcilerConfig.Clients[%d]", i), "is nil")
		}
		name := c.cfg.Provider.Name()
		if _, dup := r.clients[name]; dup {
			return nil, invalid(fmt.Sprintf("ReconcilerConfig.Clients[%d]", i), "a second client for provider %q", name)
		}
		r.clients[name] = c
		r.order = append(r.order, name)
	}
	for name, rps := range cfg.RatePerSecond {
		if _, ok := r.clients[name]; !ok {
			return nil, invalid("ReconcilerConfig.RatePerSecond", "names provider %q, which has no client", name)
		}
		if rps <= 0 {
			return nil, invalid("ReconcilerConfig.RatePerSecond", "rate for %q must be > 0, got %v", name, rps)
		}
		r.limiters[name] = rate.NewLimiter(rate.Limit(rps), max(1, int(rps)))
	}
	if cfg.StatsInterval != off {
		r.stats, err = RegisterLedgerMetrics(cfg.Store, LedgerMetricsConfig{MeterProvider: cfg.MeterProvider, Interval: cfg.StatsInterval, Now: cfg.Now})
		if err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Close stops reporting the ledger gauges. The reconciler remains usable.
func (r *Reconciler) Close() error {
	if r.stats == nil {
		return nil
	}
	err := r.stats.Unregister()
	r.stats = nil
	return err
}

// RunOnce claims one batch of due operations per provider and settles them.
// It returns when the batch is done; the error is set only when claiming
// failed, or ctx ended before every provider was claimed for (errors
// settling single operations are in the report). When ctx ends mid-batch,
// the operations already being settled finish as their context allows (an
// attempt cut short is recorded maybe-sent, and looked up later), and the
// leases of those claimed but not started are given up, so that another
// reconciler can take them at once.
func (r *Reconciler) RunOnce(ctx context.Context) (rep ReconcileReport, err error) {
	return r.runOnce(ctx, true)
}

// runOnce is RunOnce; audit: run the scheduled audits when due, after the
// pass (Run audits in a goroutine of its own instead).
func (r *Reconciler) runOnce(ctx context.Context, audit bool) (rep ReconcileReport, err error) {
	rep = ReconcileReport{Transitions: map[string]int{}}
	if r.cfg.Hooks.OnPass != nil {
		defer func() { r.onPass(ctx, rep) }()
	}
	// One owner per pass: a lease held by this owner is this pass's own, and
	// checkNoLiveLease lets an owner re-take its own lease. Two passes sharing
	// one owner (Run beside a manual RunOnce, or one Reconciler used from
	// two goroutines) would both claim, and both send, the same operation.
	owner := r.ownerBase + "#" + strconv.FormatUint(r.passes.Add(1), 10)
	for _, name := range r.order {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		if err := r.runProvider(ctx, name, owner, &rep); err != nil {
			return rep, err
		}
	}
	if audit {
		r.audit(ctx, &rep)
	}
	return rep, nil
}

// auditLoop runs the scheduled audits beside Run's passes until ctx ends:
// every Interval it audits what is due (audit claims each period once,
// whoever asks). What it finds is logged by audit; its errors never reach
// a pass's report.
func (r *Reconciler) auditLoop(ctx context.Context) {
	for {
		var rep ReconcileReport
		r.audit(ctx, &rep)
		if sleep(ctx, r.cfg.Interval) != nil {
			return
		}
	}
}

// audit runs the scheduled audits when they are due (AuditSchedule).
func (r *Reconciler) audit(ctx context.Context, rep *ReconcileReport) {
	s := r.cfg.Audit
	if s.Every == 0 {
		return
	}
	now := r.cfg.Now()
	r.auditMu.Lock()
	if now.Before(r.nextAudit) {
		r.auditMu.Unlock()
		return
	}
	// Claimed before the audits run: a pass running beside this one does
	// not audit the same period again.
	// An audit runs when a pass (or Run's audit loop) comes to it, a little
	// after it was due: its period starts Window before when it was due,
	// or the lateness would be a gap no audit reads (an operation created
	// in it lies outside both neighbours, which leave it to each other).
	// Later than Every is a reconciler that was stopped: missed periods are
	// not audited again.
	late := now.Sub(r.nextAudit)
	if r.nextAudit.IsZero() || late < 0 || late > s.Every {
		late = 0
	}
	r.nextAudit = now.Add(s.Every)
	r.auditMu.Unlock()
	for _, name := range r.order {
		c := r.clients[name]
		if !scheduledAuditable(c) || ctx.Err() != nil {
			continue
		}
		// A provider whose listing lags (AuditInfo.Lag) is audited that
		// much further back: its recent objects are not listed yet.
		to := now.Add(-max(s.Delay, c.cfg.Provider.(Auditor).AuditInfo().Settled()))
		p := AuditParams{From: to.Add(-s.Window - late), To: to}
		ar, err := c.Audit(ctx, p)
		rep.Audits++
		n := 0
		for _, k := range ar.Counts {
			n += k
		}
		rep.AuditDifferences += n
		if err != nil {
			r.cfg.Logger.Warn("payonce: scheduled audit failed", "provider", name, "from", p.From, "to", p.To, "error", err)
			rep.ErrorCount++
			if len(rep.Errors) < 20 {
				rep.Errors = append(rep.Errors, fmt.Errorf("audit of %s: %w", name, err))
			}
			continue
		}
		level := slog.LevelInfo
		if n > 0 {
			level = slog.LevelWarn
		}
		r.cfg.Logger.Log(ctx, level, "payonce: scheduled audit", "provider", name, "from", p.From, "to", p.To,
			"objects", ar.Objects, "operations", ar.Operations, "differences", n, "unattributed", ar.Unattributed)
	}
}

// scheduledAuditable reports whether c's provider can be audited without
// a person: it lists its objects without a downloaded report, or it is
// audited by lookups.
func scheduledAuditable(c *Client) bool {
	a, ok := c.cfg.Provider.(Auditor)
	if !ok {
		return false
	}
	info := a.AuditInfo()
	if info.ByLookup {
		return true
	}
	_, lists := a.(AuditLister)
	return lists && !info.NeedsReport
}

// onPass hands a copy of rep to the OnPass hook: a hook that outlives its
// timeout must not share the maps the caller of RunOnce gets.
func (r *Reconciler) onPass(ctx context.Context, rep ReconcileReport) {
	rep.Transitions = maps.Clone(rep.Transitions)
	rep.Errors = slices.Clone(rep.Errors)
	runHook(ctx, r.cfg.Logger, r.cfg.Hooks.Timeout, "OnPass", "", func(context.Context) { r.cfg.Hooks.OnPass(rep) })
}

// Run calls RunOnce until ctx ends: at once again while batches come back
// full, after Interval otherwise. Scheduled audits (ReconcilerConfig.Audit)
// run in a goroutine of their own beside the passes, so that a long audit
// does not hold reconciliation up; Run returns once both have stopped.
//
// Cancelling ctx, or its deadline passing, is how a caller stops Run, so
// both are a normal stop and Run then returns nil: whatever the cause
// (context.Canceled, context.DeadlineExceeded, or the cause given to
// context.WithCancelCause, such as a signal). A pass that fails, the ledger
// being down for one, is logged at Warn and tried again after Interval; it
// is never returned, because waiting is the remedy. In this version Run
// returns nil whenever it returns; the error is kept for a stop that is not
// normal.
//
// On stopping, Run gives up the leases of the operations its last pass had
// claimed but not started (RunOnce), so that a deploy does not leave them
// waiting for their leases to end. Stop Run after the service's own calls
// have drained (the package documentation's "Lifecycle" section).
func (r *Reconciler) Run(ctx context.Context) error {
	if r.cfg.Audit.Every > 0 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.auditLoop(ctx)
		}()
		defer func() { <-done }()
	}
	for {
		rep, err := r.runOnce(ctx, false)
		switch {
		case ctx.Err() != nil:
			// Stopping: a claim cut short by the stop is no failure.
			r.logPass(rep)
			return nil
		case err != nil:
			// Warn, not Error: a ledger that is briefly unavailable is a
			// fault the design expects, and the next pass retries.
			r.cfg.Logger.Warn("payonce: reconcile pass failed; retrying after the interval", "error", err, "interval", r.cfg.Interval)
		default:
			r.logPass(rep)
		}
		wait := r.cfg.Interval
		if err == nil && rep.Claimed >= r.cfg.BatchSize {
			wait = 0
		}
		if sleep(ctx, wait) != nil {
			return nil
		}
	}
}

// logPass logs a pass at Info only when it changed something (an
// operation changed status) or met errors: a reconciler runs a pass every
// Interval, and a line for each pass that found nothing to do, or whose
// lookups only found the same unknown again, would bury the lines that
// matter. A pass that claimed operations and changed nothing is logged at
// Debug; one that claimed nothing is not logged.
func (r *Reconciler) logPass(rep ReconcileReport) {
	changed := 0
	for _, n := range rep.Transitions {
		changed += n
	}
	level := slog.LevelDebug
	switch {
	case changed > 0 || rep.ErrorCount > 0:
		level = slog.LevelInfo
	case rep.Claimed == 0 && rep.Released == 0:
		return
	}
	r.cfg.Logger.Log(context.Background(), level, "payonce: reconcile pass", "claimed", rep.Claimed, "settled", rep.Settled,
		"changed", changed, "skipped", rep.Skipped, "released", rep.Released, "errors", rep.ErrorCount)
}

func (r *Reconciler) runProvider(ctx context.Context, name, owner string, total *ReconcileReport) (err error) {
	// Counted per provider and pass, so that what a pass did is recorded
	// even when a later provider's claim fails.
	rep := &ReconcileReport{Transitions: total.Transitions}
	ctx, pass := r.tel.startPass(ctx, name, r.cfg.Now())
	defer func() {
		pass.end(ctx, r.cfg.Now(), rep.Claimed, rep.Settled, rep.Skipped, rep.ErrorCount, err)
		total.Claimed += rep.Claimed
		total.Settled += rep.Settled
		total.Skipped += rep.Skipped
		total.Released += rep.Released
		total.ErrorCount += rep.ErrorCount
		total.Errors = append(total.Errors, rep.Errors[:min(len(rep.Errors), 20-len(total.Errors))]...)
	}()
	c := r.clients[name]
	now := r.cfg.Now()
	ops, err := r.cfg.Store.ClaimDue(ctx, ledger.ClaimDueParams{
		Owner: owner, Now: now, LeaseUntil: now.Add(c.cfg.LeaseDuration), Limit: r.cfg.BatchSize,
		Provider: name, IncludeReview: true,
	})
	if err != nil {
		return fmt.Errorf("payonce: claiming due operations of %s: %w", name, err)
	}
	rep.Claimed += len(ops)
	var mu sync.Mutex
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	var unstarted []ledger.Operation
	for i, op := range ops {
		if !r.takeTurn(ctx, name, sem) {
			// Stopping: nothing more of this batch is started.
			unstarted = ops[i:]
			break
		}
		// Checked after waiting for a slot and the rate limiter, since the
		// batch's lease runs while the operation waits: a lease about to end
		// would let another worker take the operation mid-settlement. Leave
		// it; it becomes due again when the lease ends.
		if r.cfg.Now().Add(2 * c.cfg.AttemptTimeout).After(op.LeaseExpiresAt) {
			<-sem
			mu.Lock()
			rep.Skipped++
			mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			from := op.Status
			got, err := c.settle(ctx, op, owner)
			// After the commit, with the lease given up, and outside mu:
			// a slow hook holds up this worker only.
			r.cfg.Hooks.fire(ctx, r.cfg.Logger, from, got)
			mu.Lock()
			defer mu.Unlock()
			if got.Status != from {
				rep.Transitions[string(from)+"->"+string(got.Status)]++
			}
			if got.Status.Terminal() && got.Status != from {
				rep.Settled++
			}
			if err != nil {
				rep.ErrorCount++
				if len(rep.Errors) < 20 {
					rep.Errors = append(rep.Errors, fmt.Errorf("operation %s: %w", op.ID, err))
				}
			}
		}()
	}
	wg.Wait()
	rep.Released = r.releaseUnstarted(ctx, owner, unstarted)
	return nil
}

// takeTurn waits until the next operation of provider name may start (its
// rate, a free slot in sem) and takes the slot. It reports false, holding
// no slot, once ctx has ended: a stopping pass starts nothing more.
func (r *Reconciler) takeTurn(ctx context.Context, name string, sem chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	if lim := r.limiters[name]; lim != nil {
		if lim.Wait(ctx) != nil {
			return false
		}
	}
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	if ctx.Err() != nil {
		// Both were ready and select chose the slot.
		<-sem
		return false
	}
	return true
}

// releaseTimeout bounds giving up the leases of a stopping pass.
const releaseTimeout = 5 * time.Second

// releaseUnstarted gives up the leases of operations a pass claimed and
// never started, due again at once: left alone they would wait for their
// leases to end (LeaseDuration, 95 s by default) after every deploy. Each
// goes back unchanged in status, so nothing about what may have been sent
// changes: a pending one was never sent, and an unknown one is still looked
// up before anything is sent again.
//
// ctx has usually ended by now, so the writes get a fresh context of their
// own, short so that a ledger that hangs does not hold up the shutdown. A
// release that fails costs only time: the lease still ends by itself. It
// returns how many leases it gave up.
func (r *Reconciler) releaseUnstarted(ctx context.Context, owner string, ops []ledger.Operation) (released int) {
	if len(ops) == 0 {
		return 0
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	now := r.cfg.Now()
	for _, op := range ops {
		fp := ledger.FinishParams{ID: op.ID, Owner: owner, Now: now, From: op.Status, To: op.Status, NextCheckAt: now}
		if op.Status == ledger.StatusManualReview {
			// Still in review, still wanting its read-only lookups.
			fp.ReviewCode, fp.ReviewReason = op.ReviewCode, op.ReviewReason
		}
		if _, err := r.cfg.Store.Finish(rctx, fp); err != nil {
			r.cfg.Logger.Warn("payonce: giving up a claimed operation's lease failed; it is due again when the lease ends",
				semconv.LogKeyOperation, op.ID, "lease_until", op.LeaseExpiresAt, "error", err)
			if rctx.Err() != nil {
				return released
			}
			continue
		}
		released++
	}
	r.cfg.Logger.Debug("payonce: gave up the leases of claimed operations not started", "released", released, "claimed_not_started", len(ops))
	return released
}

// CleanupReport says what Cleanup did.
type CleanupReport struct {
	ledger.CleanupReport
	// OldestAge is how long ago the oldest remaining succeeded or failed
	// operation finished; zero when none is left. A value that keeps
	// growing past the retention means cleanup stopped working.
	OldestAge time.Duration
}

// Cleanup deletes succeeded and failed operations older than retention,
// batched, each leaving a tombstone that answers late calls with its
// recorded outcome (kept per ReconcilerConfig.TombstoneRetention). It refuses a retention shorter than the longest key TTL of the
// reconciler's providers (rule 6), never touches operations that are not
// final, and reports the age of the oldest remaining final operation.
// Webhook inbox entries are kept for the longest Config.InboxRetention of
// the reconciler's Clients (New refuses one shorter than its provider's
// webhook redelivery window, naming it), and the ledger refuses it when it
// is shorter than the longest redelivery window of their providers (rule
// 7).
func (r *Reconciler) Cleanup(ctx context.Context, retention time.Duration, batchSize int) (CleanupReport, error) {
	var ttl, inbox, redelivery time.Duration
	for _, c := range r.clients {
		_, longest := c.info.KeyTTLRange()
		ttl = max(ttl, longest) // the longest window any kind's key is kept
		inbox = max(inbox, c.cfg.InboxRetention)
		redelivery = max(redelivery, c.info.WebhookRedelivery)
	}
	now := r.cfg.Now()
	rep, err := r.cfg.Store.Cleanup(ctx, ledger.CleanupParams{Now: now, Retention: retention, KeyTTL: ttl, BatchSize: batchSize,
		TombstoneRetention: r.cfg.TombstoneRetention, InboxRetention: inbox, WebhookRedelivery: redelivery})
	out := CleanupReport{CleanupReport: rep}
	if !rep.OldestFinishedAt.IsZero() {
		out.OldestAge = now.Sub(rep.OldestFinishedAt)
	}
	return out, err
}

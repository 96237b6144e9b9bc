package riverpayonce_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/riverpayonce"
)

// listingProvider is the env's Stripe adapter made auditable: it lists
// objects, whatever the period, and remembers the periods it was asked.
type listingProvider struct {
	payonce.Provider
	mu      *sync.Mutex
	queries *[]payonce.AuditQuery
	objects []payonce.AuditObject
	// name, when set, replaces the adapter's name; needsReport makes it a
	// provider audited only from a downloaded report (as Adyen is).
	name        string
	needsReport bool
}

func (p listingProvider) Name() string {
	if p.name != "" {
		return p.name
	}
	return p.Provider.Name()
}

func (p listingProvider) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{Directions: "provider → ledger: test objects", NeedsReport: p.needsReport}
}

func (p listingProvider) ListObjects(ctx context.Context, hc payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	p.mu.Lock()
	*p.queries = append(*p.queries, q)
	p.mu.Unlock()
	for _, o := range p.objects {
		if err := yield(o); err != nil {
			return err
		}
	}
	return nil
}

// auditEnv is a River client working audit jobs of an auditable Stripe
// client, on the env's manual clock.
type auditEnv struct {
	*pgEnv
	mu      sync.Mutex
	queries []payonce.AuditQuery
	rc      *river.Client[pgx.Tx]
	events  <-chan *river.Event
}

func newAuditEnv(t *testing.T, periodic ...*river.PeriodicJob) *auditEnv {
	t.Helper()
	a := &auditEnv{pgEnv: newPGEnv(t, providertest.Options{})}
	p := listingProvider{Provider: a.psp.Provider, mu: &a.mu, queries: &a.queries, objects: []payonce.AuditObject{{
		Ref: "pi_audit", OperationID: "op-the-ledger-never-saw", Kind: payonce.KindCharge, State: payonce.AuditSucceeded,
		Status: "succeeded", Amount: 700, Currency: "USD", Created: a.clock.Now().Add(-30 * time.Minute)}}}
	client, err := payonce.New(providertest.ClientConfig(p, a.store, a.clock.Now))
	require.NoError(t, err)
	reportOnly, err := payonce.New(providertest.ClientConfig(listingProvider{Provider: a.psp.Provider, mu: &a.mu, queries: &a.queries,
		name: "reportonly", needsReport: true}, a.store, a.clock.Now))
	require.NoError(t, err)
	w, err := riverpayonce.NewAuditWorker(riverpayonce.AuditWorkerConfig{Clients: []*payonce.Client{client, reportOnly}, Now: a.clock.Now})
	require.NoError(t, err)
	cfg := &river.Config{Schema: a.riverSchema, Workers: river.NewWorkers(), PeriodicJobs: periodic,
		Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2}}, FetchCooldown: 20 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond, TestOnly: true}
	require.NoError(t, river.AddWorkerSafely(cfg.Workers, w))
	a.rc, err = river.NewClient(riverpgxv5.New(a.pool), cfg)
	require.NoError(t, err)
	events, cancel := a.rc.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled)
	t.Cleanup(cancel)
	a.events = events
	require.NoError(t, a.rc.Start(a.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, a.rc.Stop(ctx))
	})
	return a
}

func (a *auditEnv) nextAudit(t *testing.T) *river.Event {
	t.Helper()
	for {
		select {
		case ev := <-a.events:
			if ev.Job.Kind == riverpayonce.AuditKind {
				return ev
			}
		case <-a.ctx.Done():
			t.Fatal("no audit job finished")
		}
	}
}

// An audit job audits [now-Delay-Window, now-Delay) of its provider's
// client and records what differs as findings; differences do not fail
// it. A provider without a client cancels the job (a retry cannot help).
//
// It needs the audit engine (Client.Audit) and the ledger's findings.
func TestAuditJob(t *testing.T) {
	t.Parallel()
	a := newAuditEnv(t)
	now := a.clock.Now()
	_, err := a.rc.Insert(a.ctx, riverpayonce.AuditArgs{Provider: "stripe", Window: time.Hour, Delay: 10 * time.Minute}, nil)
	require.NoError(t, err)
	ev := a.nextAudit(t)
	require.Equal(t, river.EventKindJobCompleted, ev.Kind, "%+v", ev.Job.Errors)
	var out riverpayonce.AuditSummary
	require.NoError(t, json.Unmarshal(ev.Job.Output(), &out))
	require.True(t, out.Differs)
	require.Equal(t, 1, out.Counts[string(ledger.FindingUnknownToLedger)])
	require.True(t, now.Add(-70*time.Minute).Equal(out.From), "%s", out.From)
	require.True(t, now.Add(-10*time.Minute).Equal(out.To), "%s", out.To)
	a.mu.Lock()
	require.Len(t, a.queries, 1)
	q := a.queries[0]
	a.mu.Unlock()
	require.False(t, q.From.After(now.Add(-70*time.Minute)), "the listing covers the period (widened by the margin)")
	require.False(t, q.To.Before(now.Add(-10*time.Minute)))

	fs, err := a.store.ListFindings(a.ctx, ledger.FindingFilter{Open: true})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, "op-the-ledger-never-saw", fs[0].OperationID)
	require.Equal(t, "pi_audit", fs[0].ProviderRef)

	_, err = a.rc.Insert(a.ctx, riverpayonce.AuditArgs{Provider: "paypal", Window: time.Hour}, nil)
	require.NoError(t, err)
	ev = a.nextAudit(t)
	require.Equal(t, river.EventKindJobCancelled, ev.Kind)
	require.Contains(t, ev.Job.Errors[len(ev.Job.Errors)-1].Error, `"paypal"`)

	_, err = a.rc.Insert(a.ctx, riverpayonce.AuditArgs{Provider: "stripe"}, nil)
	require.NoError(t, err)
	ev = a.nextAudit(t)
	require.Equal(t, river.EventKindJobCancelled, ev.Kind)
	require.Contains(t, ev.Job.Errors[len(ev.Job.Errors)-1].Error, "Window must be > 0")

	// A provider audited only from a downloaded report: no retry can help.
	_, err = a.rc.Insert(a.ctx, riverpayonce.AuditArgs{Provider: "reportonly", Window: time.Hour}, nil)
	require.NoError(t, err)
	ev = a.nextAudit(t)
	require.Equal(t, river.EventKindJobCancelled, ev.Kind)
	require.Contains(t, ev.Job.Errors[len(ev.Job.Errors)-1].Error, "--report FILE")
	a.mu.Lock()
	require.Len(t, a.queries, 1, "the report-only provider was never asked to list")
	a.mu.Unlock()
}

// The periodic audit job runs every interval; the same difference found
// again is the same finding, found once more.
func TestAuditPeriodicJob(t *testing.T) {
	t.Parallel()
	pj, err := riverpayonce.AuditPeriodicJob(riverpayonce.AuditArgs{Provider: "stripe", Window: time.Hour}, time.Second)
	require.NoError(t, err)
	a := newAuditEnv(t, pj)
	for range 2 {
		ev := a.nextAudit(t)
		require.Equal(t, river.EventKindJobCompleted, ev.Kind, "%+v", ev.Job.Errors)
	}
	fs, err := a.store.ListFindings(a.ctx, ledger.FindingFilter{})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, 2, fs[0].Times)
}

func TestAuditConfigRefused(t *testing.T) {
	t.Parallel()
	_, err := riverpayonce.NewAuditWorker(riverpayonce.AuditWorkerConfig{})
	testkit.RequireInvalid(t, err, "AuditWorkerConfig.Clients")
	_, err = riverpayonce.NewAuditWorker(riverpayonce.AuditWorkerConfig{Clients: []*payonce.Client{nil}})
	testkit.RequireInvalid(t, err, "AuditWorkerConfig.Clients[0]")
	for _, c := range []struct {
		args     riverpayonce.AuditArgs
		interval time.Duration
		field    string
	}{
		{riverpayonce.AuditArgs{Window: time.Hour}, time.Hour, "args.Provider"},
		{riverpayonce.AuditArgs{Provider: "stripe"}, time.Hour, "args.Window"},
		{riverpayonce.AuditArgs{Provider: "stripe", Window: time.Hour, Delay: -time.Second}, time.Hour, "args.Delay"},
		{riverpayonce.AuditArgs{Provider: "stripe", Window: time.Hour}, 0, "interval"},
		// A window shorter than the interval would leave periods unaudited.
		{riverpayonce.AuditArgs{Provider: "stripe", Window: 23 * time.Hour}, 24 * time.Hour, "args.Window"},
	} {
		_, err := riverpayonce.AuditPeriodicJob(c.args, c.interval)
		testkit.RequireInvalid(t, err, c.field)
	}
}

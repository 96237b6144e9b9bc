package payonce_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
)

// lookupPoster is an adapter audited by lookups whose Lookup has a bug:
// it sends a POST (as a charge would).
type lookupPoster struct {
	*stripe.Provider
	base string
}

func (lookupPoster) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{ByLookup: true, Directions: "ledger → provider: each settled operation looked up"}
}

func (p lookupPoster) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.base+chargePath, nil)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return payonce.LookupResult{}, err
	}
	resp.Body.Close()
	return payonce.LookupResult{State: payonce.LookupNotFound}, nil
}

// TestAuditByLookupRefusesNonGET: a by-lookup audit's lookups take the
// audit's read-only doer too, so an adapter's Lookup that sends a POST is
// refused before it leaves, as a lister's would be.
func TestAuditByLookupRefusesNonGET(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, func(sp *stripe.Provider, base string) payonce.Provider { return lookupPoster{sp, base} })
		f.charge(t, "order-a", 1000)
		f.rec.take()
		_, err := f.client.Audit(f.ctx, f.period)
		require.ErrorContains(t, err, "only GET")
		require.Empty(t, f.rec.take(), "nothing reached the provider")
	})
}

// TestAuditObjectsWithUnstorableText: the provider's metadata and ids are
// anyone's text. An object naming an "operation" that no ledger can hold
// (a NUL byte, invalid UTF-8) is unknown to the ledger, and a ref or
// status with such bytes is recorded cleaned: neither fails the audit nor
// the recording of every other finding of its batch.
func TestAuditObjectsWithUnstorableText(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		bad := objectOf(a, 999)
		bad.Ref, bad.Status = "pi_\x00bad", "succ\xffeeded"
		f.psp.set([]payonce.AuditObject{
			objectOf(a, 1000),
			bad,
			{Ref: "pi_nul", OperationID: "op\x00nul", State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt},
			{Ref: "pi_utf", OperationID: "op\xff", State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt},
		})
		rep := f.audit(t, func(p *payonce.AuditParams) { p.DryRun = false })
		require.Equal(t, map[ledger.FindingClass]int{ledger.FindingDuplicated: 1, ledger.FindingContradicted: 1, ledger.FindingUnknownToLedger: 2},
			classes(rep), "%+v", rep.Differences)
		require.Len(t, f.store.all(), 4)
		// The real store accepts them.
		require.NoError(t, f.store.Store.RecordFindings(f.ctx, f.store.all(), f.clock.Now()))
	})
}

// blockingLister is an auditPSP whose listing waits until released (an
// audit paced through a large period).
type blockingLister struct {
	*auditPSP
	started chan struct{}
	release chan struct{}
}

func (b *blockingLister) ListObjects(ctx context.Context, hc payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	select {
	case b.started <- struct{}{}:
	default:
	}
	select {
	case <-b.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return b.auditPSP.ListObjects(ctx, hc, q, yield)
}

// TestReconcilerRunAuditsBesidePasses: under Run, a scheduled audit that
// takes long does not hold up the passes; stopping Run stops the audit
// and Run returns after it.
func TestReconcilerRunAuditsBesidePasses(t *testing.T) {
	var bl *blockingLister
	f := newAuditFixture(t, false, func(sp *stripe.Provider, base string) payonce.Provider {
		bl = &blockingLister{auditPSP: &auditPSP{Provider: sp, base: base, info: payonce.AuditInfo{ListedKinds: []payonce.Kind{payonce.KindCharge}}},
			started: make(chan struct{}, 1), release: make(chan struct{})}
		return bl
	})
	passes := make(chan payonce.ReconcileReport, 100)
	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client},
		Now: f.clock.Now, StatsInterval: -1, Interval: time.Millisecond,
		Hooks: payonce.Hooks{OnPass: func(rep payonce.ReconcileReport) { passes <- rep }},
		Audit: payonce.AuditSchedule{Every: time.Hour}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	timeout := time.After(20 * time.Second)
	select {
	case <-bl.started:
	case <-timeout:
		t.Fatal("no audit started")
	}
	// The audit is held; passes go on.
	for range 3 {
		select {
		case rep := <-passes:
			require.Zero(t, rep.Audits, "Run's passes do not audit")
		case <-timeout:
			t.Fatal("no pass while the audit runs: the audit holds reconciliation up")
		}
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-timeout:
		t.Fatal("Run did not return")
	}
}

// TestAuditUnattributedListedAfterDifferences: the objects an account
// holds from elsewhere, read before any comparison, share MaxListed with
// the differences but never take a difference's place in the list.
func TestAuditUnattributedListedAfterDifferences(t *testing.T) {
	f := newAuditFixture(t, false, nil)
	a := f.charge(t, "order-a", 1000)
	b := f.charge(t, "order-b", 2000)
	stray := func(ref string) payonce.AuditObject {
		return payonce.AuditObject{Ref: ref, State: payonce.AuditSucceeded, Amount: 5, Currency: "USD", Created: a.CreatedAt}
	}
	f.psp.set([]payonce.AuditObject{stray("pi_d1"), stray("pi_d2"), stray("pi_d3"), objectOf(a, 1000)}) // b missing
	rep := f.audit(t, func(p *payonce.AuditParams) { p.ListUnattributed, p.MaxListed = true, 2 })
	require.Equal(t, 3, rep.Unattributed)
	require.Len(t, rep.Differences, 2)
	require.Equal(t, ledger.FindingMissingAtProvider, rep.Differences[0].Class)
	require.Equal(t, b.ID, rep.Differences[0].OperationID)
	require.Empty(t, rep.Differences[1].Class)
	require.True(t, rep.Truncated)

	// Room for all: nothing truncated.
	rep = f.audit(t, func(p *payonce.AuditParams) { p.ListUnattributed, p.MaxListed = true, 4 })
	require.Len(t, rep.Differences, 4)
	require.False(t, rep.Truncated)
	require.Equal(t, ledger.FindingMissingAtProvider, rep.Differences[0].Class)
}

// TestAuditRecordsManyFindingsInTheRealLedger: more differences than one
// batch, several per operation (a duplicate, two contradicted objects, a
// status difference) and objects with the same text after cleaning, are
// recorded by the real store, which refuses a batch larger than
// ledger.MaxFindingsPerCall or holding one difference twice; found again,
// each counts twice.
func TestAuditRecordsManyFindingsInTheRealLedger(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		store := f.store.Store
		cfg := providertest.ClientConfig(f.psp, store, f.clock.Now)
		client, err := payonce.New(cfg)
		require.NoError(t, err)
		res, err := client.Charge(f.ctx, charge("order-a", 1000))
		require.NoError(t, err)
		a, _, err := store.Get(f.ctx, res.OperationID)
		require.NoError(t, err)
		objs := []payonce.AuditObject{objectOf(a, 1000), objectOf(a, 7), objectOf(a, 8)}
		objs[1].Ref, objs[2].Ref = "pi_x\x00", "pi_x\xff" // one ref once cleaned
		for i := range 1100 {
			objs = append(objs, payonce.AuditObject{Ref: fmt.Sprintf("pi_u%d", i), OperationID: fmt.Sprintf("op-unknown-%04d", i),
				State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt})
		}
		f.psp.set(objs)
		p := f.period
		p.TempDir = t.TempDir()
		rep, err := client.Audit(f.ctx, p)
		require.NoError(t, err)
		require.Equal(t, 1100, rep.Counts[ledger.FindingUnknownToLedger])
		require.Equal(t, 1, rep.Counts[ledger.FindingDuplicated])
		require.Equal(t, 1, rep.Counts[ledger.FindingContradicted], "%+v", rep.Differences[:2])
		_, err = client.Audit(f.ctx, p)
		require.NoError(t, err)
		var all []ledger.Finding
		for after := int64(0); ; {
			page, err := store.ListFindings(f.ctx, ledger.FindingFilter{AfterID: after, Limit: 1000})
			require.NoError(t, err)
			all = append(all, page...)
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].ID
		}
		require.Len(t, all, 1102)
		for _, fd := range all {
			require.Equal(t, 2, fd.Times, "%+v", fd)
		}
	})
}

// TestReconcilerScheduledAuditsLeaveNoGap: an audit that runs late (the
// pass came after it was due) starts its period where the last one ended,
// so that the periods meet; after a stop longer than Every, missed periods
// are not audited again.
func TestReconcilerScheduledAuditsLeaveNoGap(t *testing.T) {
	f := newAuditFixture(t, false, nil)
	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client},
		Now: f.clock.Now, StatsInterval: -1, Audit: payonce.AuditSchedule{Every: time.Hour}})
	require.NoError(t, err)
	margin := f.psp.info.Margin
	period := func() (time.Time, time.Time) {
		q := f.psp.queries[len(f.psp.queries)-1]
		return q.From.Add(margin), q.To.Add(-margin)
	}
	_, err = r.RunOnce(f.ctx)
	require.NoError(t, err)
	from, to := period()
	require.Equal(t, t0.Add(-time.Hour), from)
	require.Equal(t, t0, to)

	f.clock.Advance(time.Hour + 30*time.Second) // the pass came 30 s late
	rep, err := r.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Audits)
	from, to = period()
	require.Equal(t, t0, from, "the period starts where the last ended")
	require.Equal(t, t0.Add(time.Hour+30*time.Second), to)

	f.clock.Advance(5 * time.Hour) // stopped for hours
	_, err = r.RunOnce(f.ctx)
	require.NoError(t, err)
	from, to = period()
	require.Equal(t, to.Add(-time.Hour), from, "one Window after a long stop")
}

// TestReconcilerScheduledAuditsKeepAShorterWindow: a Window shorter than
// Every (audit one hour a day) stays that long, however late the audit.
func TestReconcilerScheduledAuditsKeepAShorterWindow(t *testing.T) {
	f := newAuditFixture(t, false, nil)
	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client},
		Now: f.clock.Now, StatsInterval: -1, Audit: payonce.AuditSchedule{Every: 24 * time.Hour, Window: time.Hour}})
	require.NoError(t, err)
	_, err = r.RunOnce(f.ctx)
	require.NoError(t, err)
	f.clock.Advance(24*time.Hour + time.Minute)
	_, err = r.RunOnce(f.ctx)
	require.NoError(t, err)
	q := f.psp.queries[len(f.psp.queries)-1]
	require.Equal(t, time.Hour+time.Minute, q.To.Sub(q.From)-2*f.psp.info.Margin, "Window, and the minute it ran late")
}

// Operation ids and refs longer than a finding holds (a provider's
// metadata is anyone's text) are recorded shortened, each still its own
// finding: the audit is not refused by the ledger, every run.
func TestAuditObjectsWithLongIDs(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		long := strings.Repeat("o", 3000)
		f.psp.set([]payonce.AuditObject{
			objectOf(a, 1000),
			{Ref: "pi_long1", OperationID: long + "1", State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt},
			{Ref: "pi_long2", OperationID: long + "2", State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt},
			{Ref: "pi_" + long, OperationID: "op-unknown", State: payonce.AuditSucceeded, Amount: 1, Currency: "USD", Created: a.CreatedAt},
		})
		rep := f.audit(t, func(p *payonce.AuditParams) { p.DryRun = false })
		require.Equal(t, map[ledger.FindingClass]int{ledger.FindingUnknownToLedger: 3}, classes(rep), "%+v", rep.Differences)
		fs := f.store.all()
		require.Len(t, fs, 3)
		seen := map[string]bool{}
		for _, nf := range fs {
			require.LessOrEqual(t, len(nf.OperationID), ledger.MaxFindingRefBytes)
			require.LessOrEqual(t, len(nf.ProviderRef), ledger.MaxFindingRefBytes)
			seen[nf.OperationID] = true
		}
		require.Len(t, seen, 3, "ids that share a start stay distinct")
		// The real store accepts them.
		require.NoError(t, f.store.Store.RecordFindings(f.ctx, fs, f.clock.Now()))
	})
}

// A provider whose listing lags (AuditInfo.Lag: PayPal's transaction search
// shows a payment up to 3 hours late) is not audited over a period its
// listing may not hold yet: Client.Audit refuses it, saying when the
// period may end, and scheduled audits reach that far back whatever their
// Delay.
func TestAuditOfALaggingListing(t *testing.T) {
	f := newAuditFixture(t, false, nil)
	f.psp.info.Lag = 3 * time.Hour
	settled := 3*time.Hour + f.psp.info.Margin
	require.Equal(t, settled, f.psp.info.Settled())

	p := payonce.AuditParams{From: t0.Add(-5 * time.Hour), To: t0.Add(-3 * time.Hour), DryRun: true, TempDir: t.TempDir()}
	_, err := f.client.Audit(f.ctx, p)
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "listing may lag 3h0m0s behind")
	require.ErrorContains(t, err, t0.Add(-settled).UTC().Format(time.RFC3339), "says when the period may end")
	require.Empty(t, f.psp.queries, "nothing listed")
	p.To = t0.Add(-settled)
	_, err = f.client.Audit(f.ctx, p)
	require.NoError(t, err)

	r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client},
		Now: f.clock.Now, StatsInterval: -1, Audit: payonce.AuditSchedule{Every: time.Hour, Window: time.Hour, Delay: time.Minute}})
	require.NoError(t, err)
	rep, err := r.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Zero(t, rep.ErrorCount, "%v", rep.Errors)
	q := f.psp.queries[len(f.psp.queries)-1]
	require.Equal(t, t0.Add(-settled+f.psp.info.Margin), q.To, "the period ends Lag + Margin ago, not Delay ago")
}

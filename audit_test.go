package payonce_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/semconv"
)

// auditPSP is the Stripe adapter made auditable for these tests: its
// ListObjects reads one page of the fake through the doer it is given (so
// that the request takes the client's read path) and yields the objects
// the test put in it that were created in the query's period.
type auditPSP struct {
	*stripe.Provider
	base string
	info payonce.AuditInfo

	mu      sync.Mutex
	objs    []payonce.AuditObject
	queries []payonce.AuditQuery
	listErr error
	// method, when set, is sent instead of GET (a lister with a bug).
	method string
	// all yields every object, whatever the query's period (a lister
	// with a bug).
	all bool
}

func (p *auditPSP) AuditInfo() payonce.AuditInfo { return p.info }

func (p *auditPSP) ListObjects(ctx context.Context, hc payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	p.mu.Lock()
	p.queries = append(p.queries, q)
	objs, listErr, method := slices.Clone(p.objs), p.listErr, p.method
	p.mu.Unlock()
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base+"/v1/payment_intents?limit=100", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	for _, o := range objs {
		if !p.all && (o.Created.Before(q.From) || !o.Created.Before(q.To)) {
			continue
		}
		if err := yield(o); err != nil {
			return err
		}
	}
	return listErr
}

func (p *auditPSP) set(objs []payonce.AuditObject) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.objs = objs
}

// lookupOnly is the Stripe adapter audited by lookups (as Checkout.com).
type lookupOnly struct{ *stripe.Provider }

func (lookupOnly) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{ByLookup: true, Directions: "ledger → provider: each settled operation looked up"}
}

// methodRecorder records the method and path of every request a client sends.
type methodRecorder struct {
	mu   sync.Mutex
	seen []string
	next http.RoundTripper
}

func (m *methodRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	m.mu.Lock()
	m.seen = append(m.seen, r.Method+" "+r.URL.Path)
	m.mu.Unlock()
	return m.next.RoundTrip(r)
}

func (m *methodRecorder) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.seen
	m.seen = nil
	return out
}

// findingsRecorder is a store whose RecordFindings is kept in memory, for
// the tests that count what an audit records.
type findingsRecorder struct {
	ledger.Store
	mu    sync.Mutex
	calls [][]ledger.NewFinding
}

func (s *findingsRecorder) RecordFindings(ctx context.Context, fs []ledger.NewFinding, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, slices.Clone(fs))
	return nil
}

func (s *findingsRecorder) all() []ledger.NewFinding {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ledger.NewFinding
	for _, c := range s.calls {
		out = append(out, c...)
	}
	return out
}

// auditFixture is a client on an auditable Stripe adapter over a fake.
type auditFixture struct {
	ctx    context.Context
	clock  *mocks.ManualClock
	fake   *mocks.Stripe
	store  *findingsRecorder
	psp    *auditPSP
	client *payonce.Client
	rec    *methodRecorder
	period payonce.AuditParams
}

func newAuditFixture(t *testing.T, pg bool, psp func(*stripe.Provider, string) payonce.Provider) *auditFixture {
	t.Helper()
	clock := mocks.NewManualClock(t0)
	var fo mocks.StripeOptions
	fo.Clock = clock.Now
	fake := mocks.NewStripe(fo)
	t.Cleanup(fake.Close)
	sp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: fake.APIKey(), BaseURL: fake.URL(), Now: clock.Now})
	require.NoError(t, err)
	ap := &auditPSP{Provider: sp, base: fake.URL(), info: payonce.AuditInfo{ListedKinds: []payonce.Kind{payonce.KindCharge, payonce.KindRefund},
		Margin: 10 * time.Minute, Directions: "test: both directions"}}
	var p payonce.Provider = ap
	if psp != nil {
		p = psp(sp, fake.URL())
	}
	store := &findingsRecorder{Store: newStore(t, pg)}
	cfg := providertest.ClientConfig(p, store, clock.Now)
	rec := &methodRecorder{next: &http.Transport{DisableKeepAlives: true}}
	cfg.HTTPClient = &http.Client{Transport: rec}
	client, err := payonce.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &auditFixture{ctx: ctx, clock: clock, fake: fake, store: store, psp: ap, client: client, rec: rec,
		period: payonce.AuditParams{From: t0.Add(-time.Hour), To: t0.Add(time.Hour), TempDir: t.TempDir()}}
}

// charge charges order and returns the operation as the ledger holds it.
func (f *auditFixture) charge(t *testing.T, order string, amount int64) ledger.Operation {
	t.Helper()
	res, err := f.client.Charge(f.ctx, charge(order, amount))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	op, _, err := f.store.Get(f.ctx, res.OperationID)
	require.NoError(t, err)
	return op
}

// objectOf is op's object as the provider would list it.
func objectOf(op ledger.Operation, amount int64) payonce.AuditObject {
	return payonce.AuditObject{Ref: op.ProviderRef, OperationID: op.ID, Key: op.Key, Kind: payonce.Kind(op.Kind),
		State: payonce.AuditSucceeded, Status: "succeeded", Amount: amount, Currency: "USD", Created: op.CreatedAt}
}

// audit runs the fixture's audit (a dry run unless record) and checks it
// sent only GETs.
func (f *auditFixture) audit(t *testing.T, mod func(*payonce.AuditParams)) payonce.AuditReport {
	t.Helper()
	p := f.period
	p.DryRun = true
	if mod != nil {
		mod(&p)
	}
	f.rec.take()
	rep, err := f.client.Audit(f.ctx, p)
	require.NoError(t, err)
	sent := f.rec.take()
	require.NotEmpty(t, sent, "the lister read through the client's doer")
	for _, s := range sent {
		require.Regexp(t, `^GET `, s, "an audit sends only GETs")
	}
	return rep
}

func classes(rep payonce.AuditReport) map[ledger.FindingClass]int {
	out := map[ledger.FindingClass]int{}
	for c, n := range rep.Counts {
		if n > 0 {
			out[c] = n
		}
	}
	return out
}

func TestAuditConsistentLedgerReportsNothing(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a, b := f.charge(t, "order-a", 1000), f.charge(t, "order-b", 2500)
		f.psp.set([]payonce.AuditObject{objectOf(a, 1000), objectOf(b, 2500)})
		before, err := f.store.List(f.ctx, ledger.ListFilter{})
		require.NoError(t, err)
		posts := f.fake.Truth().Requests["POST "+chargePath]

		rep := f.audit(t, func(p *payonce.AuditParams) { p.DryRun = false })
		require.False(t, rep.Differs(), "%+v", rep.Differences)
		require.Empty(t, rep.Differences)
		require.Equal(t, 2, rep.Objects)
		require.Equal(t, 2, rep.Operations)
		require.Equal(t, "stripe", rep.Provider)
		require.Equal(t, "test: both directions", rep.Directions)
		require.Empty(t, f.store.all(), "nothing to record")
		// The provider was listed over the period widened by the margin.
		require.Equal(t, f.period.From.Add(-10*time.Minute), f.psp.queries[0].From)
		require.Equal(t, f.period.To.Add(10*time.Minute), f.psp.queries[0].To)

		after, err := f.store.List(f.ctx, ledger.ListFilter{})
		require.NoError(t, err)
		require.Equal(t, before, after, "an audit changes no operation")
		require.Equal(t, posts, f.fake.Truth().Requests["POST "+chargePath], "an audit sends nothing that moves money")
	})
}

func TestAuditFindsEachClassAndOnlyIt(t *testing.T) {
	type objs func(a, b ledger.Operation) []payonce.AuditObject
	base := func(a, b ledger.Operation) []payonce.AuditObject {
		return []payonce.AuditObject{objectOf(a, 1000), objectOf(b, 2500)}
	}
	with := func(f func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject) objs {
		return func(a, b ledger.Operation) []payonce.AuditObject { return f(a, b, base(a, b)) }
	}
	cases := []struct {
		name string
		objs objs
		want map[ledger.FindingClass]int
		op   func(a, b ledger.Operation) string // the operation named, "" for none
	}{
		{"unknown to ledger", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			return append(os, payonce.AuditObject{Ref: "pi_ghost", OperationID: "0190-ghost", State: payonce.AuditSucceeded,
				Kind: payonce.KindCharge, Amount: 700, Currency: "USD", Created: t0})
		}), map[ledger.FindingClass]int{ledger.FindingUnknownToLedger: 1}, func(a, b ledger.Operation) string { return "0190-ghost" }},
		{"unknown but failed: nothing moved", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			return append(os, payonce.AuditObject{Ref: "pi_ghost", OperationID: "0190-ghost", State: payonce.AuditFailed, Created: t0})
		}), map[ledger.FindingClass]int{}, nil},
		{"duplicated", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			d := objectOf(a, 1000)
			d.Ref = "pi_second"
			return append(os, d)
		}), map[ledger.FindingClass]int{ledger.FindingDuplicated: 1}, func(a, b ledger.Operation) string { return a.ID }},
		{"another amount", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			os[1].Amount = 2600
			return os
		}), map[ledger.FindingClass]int{ledger.FindingContradicted: 1}, func(a, b ledger.Operation) string { return b.ID }},
		{"another currency", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			os[1].Currency = "EUR"
			return os
		}), map[ledger.FindingClass]int{ledger.FindingContradicted: 1}, func(a, b ledger.Operation) string { return b.ID }},
		{"currency in lower case is the same", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			os[1].Currency = "usd"
			return os
		}), map[ledger.FindingClass]int{}, nil},
		{"another key", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			os[0].Key = "not-a-key-of-this-operation"
			return os
		}), map[ledger.FindingClass]int{ledger.FindingContradicted: 1}, func(a, b ledger.Operation) string { return a.ID }},
		{"provider failed, ledger succeeded", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			os[0].State, os[0].Status = payonce.AuditFailed, "requires_payment_method"
			return os
		}), map[ledger.FindingClass]int{ledger.FindingStatusDiffers: 1}, func(a, b ledger.Operation) string { return a.ID }},
		{"canceled with no cancel recorded", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			os[0].State, os[0].Status = payonce.AuditCanceled, "canceled"
			return os
		}), map[ledger.FindingClass]int{ledger.FindingStatusDiffers: 1}, func(a, b ledger.Operation) string { return a.ID }},
		{"missing at provider", func(a, b ledger.Operation) []payonce.AuditObject {
			return []payonce.AuditObject{objectOf(a, 1000)}
		}, map[ledger.FindingClass]int{ledger.FindingMissingAtProvider: 1}, func(a, b ledger.Operation) string { return b.ID }},
		{"object of an operation outside the period, itself outside", with(func(a, b ledger.Operation, os []payonce.AuditObject) []payonce.AuditObject {
			return os // b is moved out below
		}), map[ledger.FindingClass]int{}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testkit.EachStore(t, func(t *testing.T, pg bool) {
				f := newAuditFixture(t, pg, nil)
				a, b := f.charge(t, "order-a", 1000), f.charge(t, "order-b", 2500)
				os := tc.objs(a, b)
				p := f.period
				if tc.name == "object of an operation outside the period, itself outside" {
					// b's operation and object lie before From, its object
					// within the margin: the earlier period's audit judges it.
					f.clock.Advance(time.Hour + 5*time.Minute)
					p.From, p.To = b.CreatedAt.Add(time.Minute), b.CreatedAt.Add(time.Hour)
					os = os[1:]
					os[0].Created = b.CreatedAt.Add(10 * time.Second)
				}
				f.psp.set(os)
				rep := f.audit(t, func(q *payonce.AuditParams) { q.From, q.To = p.From, p.To })
				require.Equal(t, tc.want, classes(rep), "%+v", rep.Differences)
				require.Len(t, rep.Differences, len(slices.Collect(func(yield func(int) bool) {
					for _, n := range tc.want {
						for i := range n {
							if !yield(i) {
								return
							}
						}
					}
				})))
				if tc.op != nil {
					require.Equal(t, tc.op(a, b), rep.Differences[0].OperationID)
					require.NotEmpty(t, rep.Differences[0].Detail)
				}
			})
		})
	}
}

func TestAuditCanceledWithRecordedCancelIsNoDifference(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		p := charge("order-c", 1000)
		p.CaptureManual = true
		res, err := f.client.Charge(f.ctx, p)
		require.NoError(t, err)
		cres, err := f.client.Cancel(f.ctx, payonce.CancelParams{OrderID: "order-c"})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, cres.Status)
		op, _, err := f.store.Get(f.ctx, res.OperationID)
		require.NoError(t, err)
		o := objectOf(op, 1000)
		o.State, o.Status = payonce.AuditCanceled, "canceled"
		f.psp.set([]payonce.AuditObject{o})
		rep := f.audit(t, nil)
		require.False(t, rep.Differs(), "%+v", rep.Differences)
	})
}

func TestAuditTombstoneCountsAsRecord(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		f.clock.Advance(72 * time.Hour)
		r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client}, Now: f.clock.Now, StatsInterval: -1})
		require.NoError(t, err)
		_, err = r.Cleanup(f.ctx, 48*time.Hour, 100)
		require.NoError(t, err)
		got, _, err := f.store.Get(f.ctx, a.ID)
		require.NoError(t, err)
		require.True(t, got.Tombstone)

		f.psp.set([]payonce.AuditObject{objectOf(a, 1000)})
		rep := f.audit(t, nil)
		require.False(t, rep.Differs(), "a tombstone is a record: %+v", rep.Differences)
		require.Zero(t, rep.Operations, "List shows no tombstone")

		// Compared against the tombstone's final status.
		o := objectOf(a, 1000)
		o.State = payonce.AuditReversed
		f.psp.set([]payonce.AuditObject{o})
		rep = f.audit(t, nil)
		require.Equal(t, map[ledger.FindingClass]int{ledger.FindingStatusDiffers: 1}, classes(rep), "%+v", rep.Differences)
		require.Equal(t, ledger.StatusSucceeded, rep.Differences[0].LedgerStatus)
	})
}

func TestAuditUnattributed(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		stray := payonce.AuditObject{Ref: "pi_dashboard", State: payonce.AuditSucceeded, Amount: 5, Currency: "USD", Created: t0}
		f.psp.set([]payonce.AuditObject{objectOf(a, 1000), stray, stray})
		rep := f.audit(t, func(p *payonce.AuditParams) { p.DryRun = false })
		require.Equal(t, 2, rep.Unattributed)
		require.Equal(t, 3, rep.Objects)
		require.False(t, rep.Differs())
		require.Empty(t, rep.Differences, "listed only on request")
		require.Empty(t, f.store.all(), "unattributed objects are not recorded")

		// An object outside the listed period is left to its own period.
		f.psp.all = true
		old := stray
		old.Created = t0.Add(-48 * time.Hour)
		f.psp.set([]payonce.AuditObject{objectOf(a, 1000), stray, stray, old})
		rep = f.audit(t, func(p *payonce.AuditParams) { p.ListUnattributed = true })
		require.Equal(t, 3, rep.Objects)
		require.Len(t, rep.Differences, 2)
		require.Empty(t, rep.Differences[0].Class)
		require.Equal(t, "pi_dashboard", rep.Differences[0].ProviderRef)
		require.False(t, rep.Differs(), "not counted as a class")
	})
}

func TestAuditRecordsFindingsUnlessDryRun(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		f.charge(t, "order-b", 2500)
		f.psp.set([]payonce.AuditObject{objectOf(a, 999)})

		var seen []payonce.AuditDifference
		rep := f.audit(t, func(p *payonce.AuditParams) {
			p.OnDifference = func(d payonce.AuditDifference) { seen = append(seen, d) }
		})
		require.Len(t, seen, 2)
		require.Empty(t, f.store.all(), "a dry run records nothing")
		require.Equal(t, map[ledger.FindingClass]int{ledger.FindingContradicted: 1, ledger.FindingMissingAtProvider: 1}, classes(rep))

		rep = f.audit(t, func(p *payonce.AuditParams) { p.DryRun, p.MaxListed = false, 1 })
		require.True(t, rep.Truncated)
		require.Len(t, rep.Differences, 1)
		got := f.store.all()
		require.Len(t, got, 2, "every difference is recorded, listed or not")
		for _, nf := range got {
			require.Equal(t, "stripe", nf.Provider)
			require.True(t, nf.PeriodFrom.Equal(f.period.From))
			require.True(t, nf.PeriodTo.Equal(f.period.To))
			require.NotEmpty(t, nf.Detail)
			require.NotEmpty(t, nf.OperationID)
		}
	})
}

func TestAuditBadParams(t *testing.T) {
	f := newAuditFixture(t, false, nil)
	for _, tc := range []struct {
		field string
		mod   func(*payonce.AuditParams)
	}{
		{"AuditParams.From", func(p *payonce.AuditParams) { p.From = time.Time{} }},
		{"AuditParams.To", func(p *payonce.AuditParams) { p.To = time.Time{} }},
		{"AuditParams.To", func(p *payonce.AuditParams) { p.To = p.From }},
		{"AuditParams.To", func(p *payonce.AuditParams) { p.From, p.To = p.To, p.From }},
		{"AuditParams.MaxListed", func(p *payonce.AuditParams) { p.MaxListed = -1 }},
		// A report for a provider audited from its API would be ignored.
		{"AuditParams.Report", func(p *payonce.AuditParams) { p.Report = strings.NewReader("csv") }},
	} {
		p := f.period
		tc.mod(&p)
		_, err := f.client.Audit(f.ctx, p)
		testkit.RequireInvalid(t, err, tc.field)
	}
	f.psp.info.NeedsReport = true
	_, err := f.client.Audit(f.ctx, f.period)
	testkit.RequireInvalid(t, err, "AuditParams.Report")
	require.Empty(t, f.psp.queries, "nothing listed on bad parameters")
}

func TestAuditNotAuditable(t *testing.T) {
	// The Stripe adapter is an Auditor: behind a wrapper that has only
	// Provider's methods, it is not.
	f := newAuditFixture(t, false, func(sp *stripe.Provider, _ string) payonce.Provider { return struct{ payonce.Provider }{sp} })
	_, err := f.client.Audit(f.ctx, payonce.AuditParams{From: t0.Add(-time.Hour), To: t0})
	require.ErrorIs(t, err, payonce.ErrNotAuditable)
}

func TestAuditRefusesNonGETAndStopsOnListingErrors(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		posts := f.fake.Truth().Requests["POST "+chargePath]
		f.psp.method = http.MethodPost
		p := f.period
		_, err := f.client.Audit(f.ctx, p)
		require.ErrorContains(t, err, "only GET")
		require.Equal(t, posts, f.fake.Truth().Requests["POST "+chargePath])

		// A listing that fails halfway is not compared: b's operation
		// would look missing.
		f.psp.method = ""
		f.psp.listErr = errors.New("page 2: HTTP 500")
		f.psp.set([]payonce.AuditObject{objectOf(a, 1000)})
		rep, err := f.client.Audit(f.ctx, p)
		require.ErrorContains(t, err, "page 2")
		require.False(t, rep.Differs())
		require.Empty(t, f.store.all())
	})
}

func TestAuditByLookup(t *testing.T) {
	// Lookups-only audit: a consistent ledger, every request a GET.
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, func(sp *stripe.Provider, _ string) payonce.Provider { return lookupOnly{sp} })
		f.charge(t, "order-a", 1000)
		f.charge(t, "order-b", 2000)
		rep := f.audit(t, func(p *payonce.AuditParams) { p.DryRun = false })
		require.False(t, rep.Differs(), "%+v", rep.Differences)
		require.Equal(t, 2, rep.Operations)

		// A lookup that keeps failing stops the audit: an operation it
		// could not check is no evidence of consistency.
		f.fake.Script(mocks.Match{Method: "GET"}, slices.Repeat([]mocks.FaultKind{mocks.FaultGatewayBefore502}, 20)...)
		_, err := f.client.Audit(f.ctx, f.period)
		require.ErrorContains(t, err, "looking up")
		for _, s := range f.rec.take() {
			require.Regexp(t, `^GET `, s)
		}
	})
}

func TestReconcilerScheduledAudit(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		f.psp.set(nil) // a is missing at the provider
		_, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client},
			Audit: payonce.AuditSchedule{Every: -time.Hour}})
		testkit.RequireInvalid(t, err, "ReconcilerConfig.Audit")
		_, err = payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client},
			Audit: payonce.AuditSchedule{Window: time.Hour}})
		testkit.RequireInvalid(t, err, "ReconcilerConfig.Audit")

		r, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: f.store, Clients: []*payonce.Client{f.client},
			Now: f.clock.Now, StatsInterval: -1, Audit: payonce.AuditSchedule{Every: time.Hour, Window: 2 * time.Hour, Delay: 30 * time.Minute}})
		require.NoError(t, err)
		// At t0 the period [t0-2h30, t0-30m) holds nothing of a (created at t0).
		rep, err := r.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Audits)
		require.Zero(t, rep.AuditDifferences)
		require.Equal(t, t0.Add(-150*time.Minute), f.psp.queries[0].From.Add(10*time.Minute))

		// Not due again before Every.
		f.clock.Advance(59 * time.Minute)
		rep, err = r.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Zero(t, rep.Audits)

		// Due: [t0-1h31, t0+29m) holds a.
		f.clock.Advance(time.Minute)
		rep, err = r.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Audits)
		require.Equal(t, 1, rep.AuditDifferences)
		got := f.store.all()
		require.Len(t, got, 1)
		require.Equal(t, a.ID, got[0].OperationID)
		require.Equal(t, ledger.FindingMissingAtProvider, got[0].Class)

		// An audit that fails is counted, and reconciliation goes on.
		f.clock.Advance(time.Hour)
		f.psp.listErr = errors.New("provider down")
		rep, err = r.RunOnce(f.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Audits)
		require.Equal(t, 1, rep.ErrorCount)
		require.ErrorContains(t, rep.Errors[0], "provider down")
	})
}

// countingMeter records the Int64Counter adds of the instruments it makes.
type countingMeter struct {
	noop.Meter
	mu   sync.Mutex
	adds map[string][]attribute.Set
}

// countingProvider hands out its countingMeter.
type countingProvider struct {
	noop.MeterProvider
	m *countingMeter
}

func (p countingProvider) Meter(string, ...metric.MeterOption) metric.Meter { return p.m }

func (m *countingMeter) Int64Counter(name string, _ ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return countingCounter{m: m, name: name}, nil
}

type countingCounter struct {
	noop.Int64Counter
	m    *countingMeter
	name string
}

func (c countingCounter) Enabled(context.Context) bool { return true }

func (c countingCounter) Add(_ context.Context, _ int64, opts ...metric.AddOption) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	c.m.adds[c.name] = append(c.m.adds[c.name], metric.NewAddConfig(opts).Attributes())
}

func TestAuditMetrics(t *testing.T) {
	m := &countingMeter{adds: map[string][]attribute.Set{}}
	f := newAuditFixture(t, false, nil)
	cfg := providertest.ClientConfig(f.psp, f.store, f.clock.Now)
	cfg.MeterProvider = countingProvider{m: m}
	client, err := payonce.New(cfg)
	require.NoError(t, err)
	a := f.charge(t, "order-a", 1000)
	o := objectOf(a, 1000)
	o.Currency = "EUR"
	f.psp.set([]payonce.AuditObject{o})
	p := f.period
	p.DryRun = true
	_, err = client.Audit(f.ctx, p)
	require.NoError(t, err)
	diffs := m.adds[semconv.MetricAuditDifferences]
	require.Len(t, diffs, 1)
	class, _ := diffs[0].Value(semconv.AttrClass)
	require.Equal(t, string(ledger.FindingContradicted), class.AsString())
	prov, _ := diffs[0].Value(semconv.AttrProvider)
	require.Equal(t, "stripe", prov.AsString())
	runs := m.adds[semconv.MetricAuditRuns]
	require.Len(t, runs, 1)
	res, _ := runs[0].Value(semconv.AttrResult)
	require.Equal(t, semconv.AuditResultDiffers, res.AsString())
}

func TestAuditRecordsFindingsInTheLedger(t *testing.T) {
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		f := newAuditFixture(t, pg, nil)
		a := f.charge(t, "order-a", 1000)
		b := f.charge(t, "order-b", 2500)
		o := objectOf(a, 1000)
		o.Currency = "EUR"
		f.psp.set([]payonce.AuditObject{o})
		// The real store underneath the recorder: findings in the ledger.
		client, err := payonce.New(providertest.ClientConfig(f.psp, f.store.Store, f.clock.Now))
		require.NoError(t, err)
		p := f.period

		p.DryRun = true
		_, err = client.Audit(f.ctx, p)
		require.NoError(t, err)
		got, err := f.store.Store.ListFindings(f.ctx, ledger.FindingFilter{Provider: "stripe"})
		require.NoError(t, err)
		require.Empty(t, got, "a dry run records nothing")

		p.DryRun = false
		for range 2 {
			rep, err := client.Audit(f.ctx, p)
			require.NoError(t, err)
			require.Equal(t, map[ledger.FindingClass]int{ledger.FindingContradicted: 1, ledger.FindingMissingAtProvider: 1}, classes(rep))
		}
		got, err = f.store.Store.ListFindings(f.ctx, ledger.FindingFilter{Provider: "stripe"})
		require.NoError(t, err)
		require.Len(t, got, 2, "found twice, recorded once each")
		byClass := map[ledger.FindingClass]ledger.Finding{}
		for _, fd := range got {
			byClass[fd.Class] = fd
			require.Equal(t, 2, fd.Times)
			require.True(t, fd.PeriodFrom.Equal(p.From), "%v", fd.PeriodFrom)
			require.True(t, fd.PeriodTo.Equal(p.To), "%v", fd.PeriodTo)
		}
		require.Equal(t, a.ID, byClass[ledger.FindingContradicted].OperationID)
		require.Equal(t, a.ProviderRef, byClass[ledger.FindingContradicted].ProviderRef)
		require.Equal(t, b.ID, byClass[ledger.FindingMissingAtProvider].OperationID)
		// The audit changed no operation.
		for _, op := range []ledger.Operation{a, b} {
			now, _, err := f.store.Get(f.ctx, op.ID)
			require.NoError(t, err)
			require.Equal(t, op.Status, now.Status)
			require.Equal(t, op.UpdatedAt, now.UpdatedAt)
		}
	})
}

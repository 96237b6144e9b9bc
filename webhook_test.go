package payonce_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
)

// hookPSP is the Stripe adapter with a stand-in webhook parser and,
// optionally, lookups that always fail: the handler's contract is tested
// apart from any provider's signature scheme (each adapter tests its own).
type hookPSP struct {
	payonce.Provider
	parse      func(r *http.Request, body []byte) ([]payonce.WebhookEvent, error)
	lookupDown bool
	// noAbsence makes the adapter behave as Adyen's: its lookup answers
	// only "not found", and it declares that this proves nothing.
	noAbsence bool
}

func (p *hookPSP) Info() payonce.ProviderInfo {
	info := p.Provider.Info()
	if p.noAbsence {
		info.LookupProvesAbsence = false
	}
	return info
}

func (p *hookPSP) ParseWebhook(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	return p.parse(r, body)
}

func (p *hookPSP) Lookup(ctx context.Context, hc payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	if p.lookupDown {
		return payonce.LookupResult{}, errors.New("lookups are down")
	}
	if p.noAbsence {
		return payonce.LookupResult{State: payonce.LookupNotFound}, nil
	}
	return p.Provider.Lookup(ctx, hc, q)
}

// hookBundle is a client whose adapter is a hookPSP, and its handler served
// on a real HTTP server. The stand-in parser reads the body as
// "<event id> <type> <operation id> <state> [reversal] [ref=<provider ref>]"
// (the object's reference is pi_hook unless ref= names another).
type hookBundle struct {
	*bundle
	psp *hookPSP
	srv *httptest.Server
}

func setupHooks(t *testing.T, pg bool, o setupOpts, lookupDown bool) *hookBundle {
	t.Helper()
	b := setup(t, o)
	b.store = newStore(t, pg)
	psp := &hookPSP{Provider: b.psp, lookupDown: lookupDown, parse: parseStandIn}
	cfg := providertest.ClientConfig(psp, b.store, b.clock.Now)
	if o.config != nil {
		o.config(&cfg)
	}
	client, err := payonce.New(cfg)
	require.NoError(t, err)
	b.client = client
	h, err := client.WebhookHandler(payonce.WebhookOptions{})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &hookBundle{bundle: b, psp: psp, srv: srv}
}

func parseStandIn(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	switch r.Header.Get("X-Test") {
	case "forged":
		return nil, fmt.Errorf("%w: signature does not match", payonce.ErrWebhookUnauthenticated)
	case "credentials":
		return nil, fmt.Errorf("%w: wrong password", payonce.ErrWebhookCredentials)
	case "address":
		return nil, fmt.Errorf("%w: 203.0.113.9", payonce.ErrWebhookForbidden)
	}
	f := strings.Fields(string(body))
	if len(f) < 4 {
		return nil, fmt.Errorf("%w: want 4 fields", payonce.ErrWebhookMalformed)
	}
	t := payonce.WebhookTarget{Kind: payonce.KindCharge, OperationID: f[2], ProviderRef: "pi_hook",
		State: payonce.LookupState(f[3]), Code: "code_" + f[3]}
	for _, extra := range f[4:] {
		if ref, ok := strings.CutPrefix(extra, "ref="); ok {
			t.ProviderRef = ref
		}
		t.Reversal = t.Reversal || extra == "reversal"
	}
	events := []payonce.WebhookEvent{{ID: f[0], Type: f[1], Targets: []payonce.WebhookTarget{t}}}
	switch r.Header.Get("X-Test") {
	case "unreadable":
		// A batch whose second item verified but could not be read.
		events = append(events, payonce.WebhookEvent{ID: f[0] + "-bad", Type: f[1],
			Unreadable: "item 1: amount.value is not an integer in minor units"})
	case "unstorable":
		// A verified event the ledger cannot store as the adapter read it.
		events[0].Targets[0].Currency = "EU\x00R"
	}
	return events, nil
}

func (hb *hookBundle) post(t *testing.T, header, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(hb.ctx, http.MethodPost, hb.srv.URL, strings.NewReader(body))
	require.NoError(t, err)
	if header != "" {
		req.Header.Set("X-Test", header)
	}
	resp, err := hb.srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

func (hb *hookBundle) inbox(t *testing.T) []ledger.InboxEntry {
	t.Helper()
	got, err := hb.store.ListWebhooks(hb.ctx, ledger.InboxFilter{})
	require.NoError(t, err)
	return got
}

// TestWebhookSettlesLostAnswer: the answer to the charge was lost and every
// lookup fails; the provider's signed event alone settles the operation,
// with an audit entry naming it, and a replay of it changes nothing.
func TestWebhookSettlesLostAnswer(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		hb := setupHooks(t, pg, setupOpts{config: func(c *payonce.Config) { c.AttemptTimeout = 300 * time.Millisecond }}, true)
		hb.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultDropAfterProcessing)
		res, err := hb.client.Charge(hb.ctx, charge("order-hook", 1500))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		resp := hb.post(t, "", "evt_1 payment_intent.succeeded "+res.OperationID+" succeeded")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		op, _, err := hb.store.Get(hb.ctx, res.OperationID)
		require.NoError(t, err)
		require.Equal(t, ledger.StatusSucceeded, op.Status)
		require.Equal(t, "pi_hook", op.ProviderRef)
		evs, err := hb.store.Events(hb.ctx, res.OperationID)
		require.NoError(t, err)
		last := evs[len(evs)-1]
		require.Equal(t, ledger.EventWebhook, last.Kind)
		require.Contains(t, last.Detail, `"event_id":"evt_1"`)

		// A replay (same event id) is acknowledged and changes nothing, even
		// if its content was altered to say otherwise.
		resp = hb.post(t, "", "evt_1 payment_intent.payment_failed "+res.OperationID+" failed")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		again, _, err := hb.store.Get(hb.ctx, res.OperationID)
		require.NoError(t, err)
		require.Equal(t, op, again)
		require.Len(t, hb.inbox(t), 1)

		// The caller's repeat is answered from the ledger, nothing sent.
		res2, err := hb.client.Charge(hb.ctx, charge("order-hook", 1500))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res2.Status)
		require.Equal(t, 1, postsOf(hb.bundle))
	})
}

// TestWebhookRejects: what does not verify or parse is refused with the
// status the provider (and an operator) can act on, and nothing is recorded.
func TestWebhookRejects(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{}, false)
	for _, c := range []struct {
		header, body string
		status       int
	}{
		{"forged", "evt_x payment_intent.succeeded op succeeded", http.StatusBadRequest},
		{"credentials", "evt_x payment_intent.succeeded op succeeded", http.StatusUnauthorized},
		{"address", "evt_x payment_intent.succeeded op succeeded", http.StatusForbidden},
		{"", "not an event", http.StatusBadRequest},
		{"", strings.Repeat("x", payonce.MaxWebhookBytes+1), http.StatusRequestEntityTooLarge},
	} {
		resp := hb.post(t, c.header, c.body)
		require.Equal(t, c.status, resp.StatusCode, "%s %.20q", c.header, c.body)
	}
	resp, err := hb.srv.Client().Get(hb.srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Empty(t, hb.inbox(t))
}

// failingStore is a ledger whose webhook writes fail, as when the database
// is unreachable.
type failingStore struct {
	ledger.Store
	fail atomic.Bool
}

func (s *failingStore) RecordWebhook(ctx context.Context, p ledger.RecordWebhookParams) (ledger.WebhookReport, error) {
	if s.fail.Load() {
		return ledger.WebhookReport{}, errors.New("connection refused")
	}
	return s.Store.RecordWebhook(ctx, p)
}

// TestWebhookLedgerDown: an event the ledger could not record is answered
// 503, so the provider delivers it again; the redelivery settles it.
func TestWebhookLedgerDown(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	store := &failingStore{Store: b.store}
	psp := &hookPSP{Provider: b.psp, parse: parseStandIn}
	client, err := payonce.New(providertest.ClientConfig(psp, store, b.clock.Now))
	require.NoError(t, err)
	op, err := client.PrepareCharge(b.ctx, charge("order-down", 700))
	require.NoError(t, err)
	_, _, err = store.CreateOrGet(b.ctx, op, b.clock.Now())
	require.NoError(t, err)
	h, err := client.WebhookHandler(payonce.WebhookOptions{})
	require.NoError(t, err)

	body := "evt_d payment_intent.payment_failed " + op.ID + " failed"
	store.fail.Store(true)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	got, _, err := store.Get(b.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got.Status)

	store.fail.Store(false)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body)))
	require.Equal(t, http.StatusOK, rec.Code)
	got, _, err = store.Get(b.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusFailed, got.Status)
	require.Equal(t, "pi_hook", got.ProviderRef)
	require.Contains(t, string(got.Result), "code_failed", "the event's code is the recorded result")
	require.True(t, got.NextCheckAt.IsZero(), "settled: no background work left")
	require.Empty(t, got.LeaseOwner)
	require.Zero(t, got.Attempts, "an event never causes a request to be sent")
	require.Zero(t, postsOf(b))
}

// TestWebhookBeforeAnswer: the provider's event arrives while the charge's
// answer is still on its way. The event settles the operation; the call,
// whose answer then finds the lease gone, reports the settled result
// instead of "in progress", and nothing is sent twice.
func TestWebhookBeforeAnswer(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{SlowFor: 1500 * time.Millisecond}}}, false)
	hb.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultSlow)
	p := charge("order-race", 900)
	op, err := hb.client.PrepareCharge(hb.ctx, p)
	require.NoError(t, err)
	type answer struct {
		res payonce.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := hb.client.Charge(hb.ctx, p)
		done <- answer{res, err}
	}()
	require.Eventually(t, func() bool {
		got, _, err := hb.store.Get(hb.ctx, op.ID)
		return err == nil && got.Status == ledger.StatusInFlight
	}, 5*time.Second, 5*time.Millisecond)
	resp := hb.post(t, "", "evt_r payment_intent.succeeded "+op.ID+" succeeded")
	require.Equal(t, http.StatusOK, resp.StatusCode)

	a := <-done
	require.NoError(t, a.err)
	require.Equal(t, payonce.ResultSucceeded, a.res.Status)
	require.Equal(t, 1, postsOf(hb.bundle))
	_, atts, err := hb.store.Get(hb.ctx, op.ID)
	require.NoError(t, err)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome, "the attempt is closed by the event")
}

// TestWebhookContradiction: a settled charge that the provider later
// reverses goes where an operator sees it; the ledger never silently
// disagrees, and an older success arriving late does not undo that.
func TestWebhookContradiction(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{}, false)
	res, err := hb.client.Charge(hb.ctx, charge("order-rev", 1200))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_c1 charge.dispute.created "+res.OperationID+" failed reversal ref="+res.ProviderRef).StatusCode)
	got, err := hb.client.Charge(hb.ctx, charge("order-rev", 1200))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, payonce.ResultManualReview, got.Status)
	require.Equal(t, ledger.ReviewCodeWebhookContradiction, got.ReviewCode, got.ReviewReason)

	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_c0 payment_intent.succeeded "+res.OperationID+" succeeded ref="+res.ProviderRef).StatusCode)
	op, _, err := hb.store.Get(hb.ctx, res.OperationID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusManualReview, op.Status, "an older success does not settle a contradiction")
	list, err := hb.store.ListWebhooks(hb.ctx, ledger.InboxFilter{Disposition: ledger.WebhookContradiction})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "evt_c1", list[0].ID)
}

// TestWebhookSecondObject: an event about a second object carrying the
// operation's id is never a confirmation of the first: its success means
// two charges at the provider, so the operation goes to review as
// duplicated and a call reports it.
func TestWebhookSecondObject(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{}, false)
	res, err := hb.client.Charge(hb.ctx, charge("order-second", 1200))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_s1 payment_intent.succeeded "+res.OperationID+" succeeded ref="+res.ProviderRef).StatusCode)
	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_s2 payment_intent.succeeded "+res.OperationID+" succeeded ref=pi_second").StatusCode)
	got, err := hb.client.Charge(hb.ctx, charge("order-second", 1200))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, ledger.ReviewCodeDuplicated, got.ReviewCode, got.ReviewReason)
	list, err := hb.store.ListWebhooks(hb.ctx, ledger.InboxFilter{Disposition: ledger.WebhookDuplicate})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "evt_s2", list[0].ID)
}

// TestWebhookUnmatched: an event for an object payonce did not create is
// acknowledged and kept in the inbox, not applied.
func TestWebhookUnmatched(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{}, false)
	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_u payment_intent.succeeded someone-elses succeeded").StatusCode)
	list, err := hb.store.ListWebhooks(hb.ctx, ledger.InboxFilter{Disposition: ledger.WebhookUnmatched})
	require.NoError(t, err)
	require.Len(t, list, 1)
}

// TestWebhookHandlerNeedsParser: a client whose adapter receives no
// webhooks has no handler, and says why.
func TestWebhookHandlerNeedsParser(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	type plain struct{ payonce.Provider }
	client, err := payonce.New(providertest.ClientConfig(plain{b.psp}, b.store, b.clock.Now))
	require.NoError(t, err)
	_, err = client.WebhookHandler(payonce.WebhookOptions{})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "WebhookParser")
	_, err = b.client.WebhookHandler(payonce.WebhookOptions{MaxConcurrent: -1})
	require.ErrorIs(t, err, payonce.ErrInvalid)
}

// TestWebhookUnreadableAcknowledged: a delivery with an event that
// verified but could not be read is answered 200 once everything in it is
// recorded: the readable event is applied, the unreadable one is recorded
// (with its reason, listed for an operator) and applied to nothing, and a
// redelivery is a duplicate. Refusing it would make a provider that
// redelivers in order (Adyen) hold every later event behind it.
func TestWebhookUnreadableAcknowledged(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		hb := setupHooks(t, pg, setupOpts{config: func(c *payonce.Config) { c.AttemptTimeout = 300 * time.Millisecond }}, true)
		hb.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultDropAfterProcessing)
		res, err := hb.client.Charge(hb.ctx, charge("order-unreadable", 1500))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		body := "evt_b payment_intent.succeeded " + res.OperationID + " succeeded"
		require.Equal(t, http.StatusOK, hb.post(t, "unreadable", body).StatusCode)
		op, _, err := hb.store.Get(hb.ctx, res.OperationID)
		require.NoError(t, err)
		require.Equal(t, ledger.StatusSucceeded, op.Status, "the readable event of the batch is applied")

		bad, err := hb.store.ListWebhooks(hb.ctx, ledger.InboxFilter{Disposition: ledger.WebhookUnreadable})
		require.NoError(t, err)
		require.Len(t, bad, 1)
		require.Equal(t, "evt_b-bad", bad[0].ID)
		require.Equal(t, "item 1: amount.value is not an integer in minor units", bad[0].Unreadable)
		require.Empty(t, bad[0].Targets)
		require.Equal(t, []ledger.WebhookOutcome{{Target: ledger.UnreadableTarget, Disposition: ledger.WebhookUnreadable}}, bad[0].Outcomes)

		// The provider's redelivery is acknowledged and changes nothing.
		require.Equal(t, http.StatusOK, hb.post(t, "unreadable", body).StatusCode)
		require.Len(t, hb.inbox(t), 2)
		again, _, err := hb.store.Get(hb.ctx, res.OperationID)
		require.NoError(t, err)
		require.Equal(t, op, again)
	})
}

// TestWebhookUnstorableRecordedUnreadable: a verified event that the
// ledger refuses as it was read (a value no store can keep) is recorded as
// unreadable and acknowledged, not answered 503 on every redelivery.
func TestWebhookUnstorableRecordedUnreadable(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{}, false)
	res, err := hb.client.Charge(hb.ctx, charge("order-unstorable", 800))
	require.NoError(t, err)
	before, _, err := hb.store.Get(hb.ctx, res.OperationID)
	require.NoError(t, err)
	for range 2 {
		resp := hb.post(t, "unstorable", "evt_n payment_intent.payment_failed "+res.OperationID+" failed")
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	got := hb.inbox(t)
	require.Len(t, got, 1, "recorded once")
	require.Equal(t, "evt_n", got[0].ID, "under the event's own id: a redelivery is a duplicate")
	require.Equal(t, "payment_intent.payment_failed", got[0].Type)
	require.Contains(t, got[0].Unreadable, "Currency")
	require.Equal(t, ledger.WebhookUnreadable, got[0].Outcomes[0].Disposition)
	after, _, err := hb.store.Get(hb.ctx, res.OperationID)
	require.NoError(t, err)
	require.Equal(t, before, after, "an unreadable event changes nothing")
}

// TestWebhookSlowBodyHoldsNoSlot: connections that send their headers and
// then their body slowly, or never, hold no delivery slot, on a default
// http.Server (no timeouts of its own): genuine deliveries are answered
// 200 while they hang, and each of them is answered 408 once Timeout has
// passed.
func TestWebhookSlowBodyHoldsNoSlot(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	psp := &hookPSP{Provider: b.psp, parse: parseStandIn}
	client, err := payonce.New(providertest.ClientConfig(psp, b.store, b.clock.Now))
	require.NoError(t, err)
	const timeout = 2 * time.Second
	h, err := client.WebhookHandler(payonce.WebhookOptions{MaxConcurrent: 2, Timeout: timeout})
	require.NoError(t, err)
	var entered atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	// Four slow clients, twice the slots: two stall after a few bytes of
	// their body, two trickle a byte every 100 ms.
	type slow struct {
		conn  net.Conn
		start time.Time
	}
	var slows []slow
	for i := range 4 {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: payonce\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\nevt_slow%d ", i)
		require.NoError(t, err)
		slows = append(slows, slow{conn, time.Now()})
		if i%2 == 1 {
			go func() {
				for {
					time.Sleep(100 * time.Millisecond)
					if _, err := conn.Write([]byte("x")); err != nil {
						return
					}
				}
			}()
		}
	}
	require.Eventually(t, func() bool { return entered.Load() == 4 }, 5*time.Second, 5*time.Millisecond,
		"the slow requests reached the handler")
	time.Sleep(50 * time.Millisecond) // they are reading their bodies

	for i := range 3 {
		start := time.Now()
		req, err := http.NewRequestWithContext(b.ctx, http.MethodPost, srv.URL, strings.NewReader(fmt.Sprintf("evt_ok%d payment_intent.succeeded op-none succeeded", i)))
		require.NoError(t, err)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "delivery %d while slow clients hang", i)
		took := time.Since(start)
		require.Less(t, took, timeout, "answered without waiting for a slot")
		t.Logf("genuine delivery %d answered 200 in %s while 4 slow clients hang", i, took.Round(time.Millisecond))
	}
	got, err := b.store.ListWebhooks(b.ctx, ledger.InboxFilter{})
	require.NoError(t, err)
	require.Len(t, got, 3, "the genuine deliveries are recorded")

	for i, s := range slows {
		require.NoError(t, s.conn.SetReadDeadline(time.Now().Add(2*timeout)))
		resp, err := http.ReadResponse(bufio.NewReader(s.conn), nil)
		require.NoError(t, err, "slow client %d is answered", i)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "slow client %d", i)
		waited := time.Since(s.start)
		require.GreaterOrEqual(t, waited, timeout-100*time.Millisecond, "slow client %d", i)
		require.Less(t, waited, timeout+time.Second, "slow client %d is cut at Timeout", i)
		t.Logf("slow client %d answered 408 after %s", i, waited.Round(time.Millisecond))
	}
}

package providertest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
	"github.com/payonce/payonce/mocks"
)

// The webhook scenarios: what the provider tells, received by the client's
// WebhookHandler on a real HTTP server from the fake's signed deliveries,
// recorded in the ledger's inbox and applied by its rules.

const (
	// webhookMaxAttempts and webhookRetryAfter: a delivery the receiver
	// holds back is retried every few milliseconds until it is let
	// through; the sender gives up only on a run that went wrong.
	webhookMaxAttempts = 2000
	webhookRetryAfter  = 10 * time.Millisecond
	// webhookFlushFor bounds a wait for the fake's deliveries.
	webhookFlushFor = time.Minute
)

// post sends d again over HTTP, byte for byte: a replay.
func (r *Receiver) post(b *bench, d Delivery) int {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.ctx, http.MethodPost, r.URL(), bytes.NewReader(d.Body))
	require.NoError(b.t, err)
	req.Header = d.Header.Clone()
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}).Do(req)
	require.NoError(b.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// ---- forgeries every signed provider is tested with ----

// dropHeader removes the header that authenticates a delivery.
func dropHeader(name string) Forgery {
	return Forgery{Name: "no " + name + " header", Status: http.StatusBadRequest, Forge: func(d *Delivery) { d.Header.Del(name) }}
}

// changedBody changes the body after it was signed (still valid JSON).
func changedBody() Forgery {
	return Forgery{Name: "body changed after signing", Status: http.StatusBadRequest, Forge: func(d *Delivery) {
		d.Body = append(d.Body, '\n')
	}}
}

// fromAddress sends the delivery from addr ("ip:port").
func fromAddress(addr string) Forgery {
	return Forgery{Name: "from " + addr, Status: http.StatusForbidden, Forge: func(d *Delivery) { d.RemoteAddr = addr }}
}

// hmacHex is the hex HMAC-SHA256 of the parts, keyed with key.
func hmacHex(key string, parts ...[]byte) string {
	mac := hmac.New(sha256.New, []byte(key))
	for _, p := range parts {
		mac.Write(p)
	}
	return hex.EncodeToString(mac.Sum(nil))
}

// ---- bench helpers ----

// requireNoRequest checks that the fake got no request since it counted
// before (b.requests()). Where the adapter reads an event's object to
// verify it (Env.WebhookReads), deliveries make GETs: only POSTs count.
func (b *bench) requireNoRequest(before map[string]int, msg string) {
	b.t.Helper()
	after := b.requests()
	if b.env.WebhookReads {
		for _, m := range []map[string]int{before, after} {
			for route := range m {
				if !strings.HasPrefix(route, "POST ") {
					delete(m, route)
				}
			}
		}
	}
	require.Equal(b.t, before, after, msg)
}

// webhooksOn skips a webhook scenario for an adapter that receives none.
func (b *bench) webhooksOn() {
	b.t.Helper()
	if _, ok := b.env.Provider.(payonce.WebhookParser); !ok {
		b.t.Skipf("%s's adapter does not implement payonce.WebhookParser", b.env.Provider.Name())
	}
}

// flush waits until the fake delivered everything it queued; none may
// have been given up on.
func (b *bench) flush() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, webhookFlushFor)
	defer cancel()
	require.NoError(b.t, b.env.Fake.FlushWebhooks(ctx))
	require.Zero(b.t, b.env.Fake.WebhookStats().GaveUp, "the receiver answered every delivery in the end")
}

// waitHeld waits until every event the fake queued has arrived at the
// receiver and was held back, and returns them.
func (b *bench) waitHeld() []Delivery {
	b.t.Helper()
	b.waitFor("the fake's webhooks to arrive", func() bool {
		return len(b.hooks.Held()) >= b.env.Fake.WebhookStats().Queued
	})
	held := b.hooks.Held()
	require.NotEmpty(b.t, held, "the fake sent no webhook")
	return held
}

func (b *bench) inbox(f ledger.InboxFilter) []ledger.InboxEntry {
	b.t.Helper()
	f.Limit = 1000
	got, err := b.store.ListWebhooks(b.ctx, f)
	require.NoError(b.t, err)
	return got
}

// webhookAudit returns the EventWebhook entries of operation id.
func (b *bench) webhookAudit(id string) []ledger.WebhookDetail {
	b.t.Helper()
	evs, err := b.store.Events(b.ctx, id)
	require.NoError(b.t, err)
	var out []ledger.WebhookDetail
	for _, e := range evs {
		if e.Kind != ledger.EventWebhook {
			continue
		}
		var d ledger.WebhookDetail
		require.NoError(b.t, json.Unmarshal([]byte(e.Detail), &d), e.Detail)
		require.Equal(b.t, ledgerdriver.WebhookActor(b.env.Provider.Name()), e.Actor)
		out = append(out, d)
	}
	return out
}

// dispositions lists what the audit entries of id say the events did.
func (b *bench) dispositions(id string) []ledger.WebhookDisposition {
	var out []ledger.WebhookDisposition
	for _, d := range b.webhookAudit(id) {
		out = append(out, d.Disposition)
	}
	return out
}

// reconcile runs the reconciler once at the current time: it settles what
// is due, read-only for operations in review.
func (b *bench) reconcile() {
	b.t.Helper()
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, Now: b.clock.Now})
	require.NoError(b.t, err)
	_, err = rec.RunOnce(b.ctx)
	require.NoError(b.t, err)
}

// lostCharge charges with its answer dropped and every lookup failing, so
// that the call ends with the outcome unknown: only the webhook can tell.
// The receiver holds the webhooks back meanwhile (it must already be
// holding), so that none settles the operation before the call returns.
func (b *bench) lostCharge(order string, amount int64) payonce.Result {
	b.t.Helper()
	_, res, err := b.chargeBlind(mocks.FaultDropAfterProcessing, order, amount)
	require.ErrorIs(b.t, err, payonce.ErrOutcomeUnknown, "the answer was lost and the lookup cannot answer")
	require.Equal(b.t, 1, b.charges(res.OperationID), "the charge was made")
	op, _ := b.get(res.OperationID)
	require.Equal(b.t, ledger.StatusUnknown, op.Status)
	return res
}

// settledByWebhook checks that the events delivered so far settled
// operation id to want without a request that moves money.
//
// A charge's events carry its operation id, so where the provider signs
// them they settle it by themselves: an audit entry names the event, which
// is in the inbox. An event that names only the payment (a capture or
// refund whose answer was lost: the ledger holds no provider reference for
// it yet) never settles by itself, since the payment may have other
// captures or refunds; nor does an unsigned notice (Env.WebhooksLookupOnly).
// Those make the operation due for a lookup now, which the reconciler
// makes at once and which settles it.
func (b *bench) settledByWebhook(id string, want ledger.Status) ledger.Operation {
	b.t.Helper()
	posts := b.allPosts()
	op, atts := b.get(id)
	if !b.env.WebhooksLookupOnly && (op.Kind == string(payonce.KindCharge) || op.Status == want) {
		require.Equal(b.t, want, op.Status, "the webhook settles it: %s", Describe(op, atts))
		var by *ledger.WebhookDetail
		for _, d := range b.webhookAudit(id) {
			if d.Disposition == ledger.WebhookSettled {
				by = &d
			}
		}
		require.NotNil(b.t, by, "an audit entry names the event that settled it")
		require.NotEmpty(b.t, by.EventID)
		require.True(b.t, slices.ContainsFunc(b.inbox(ledger.InboxFilter{OperationID: id}), func(e ledger.InboxEntry) bool { return e.ID == by.EventID }),
			"the event %s that settled it is in the inbox", by.EventID)
		return op
	}
	disps := b.dispositions(id)
	require.True(b.t, slices.Contains(disps, ledger.WebhookNudged) || slices.Contains(disps, ledger.WebhookAmbiguous),
		"the event made the operation due for a lookup: %v, %s", disps, Describe(op, atts))
	require.NotContains(b.t, disps, ledger.WebhookSettled, "a notice is never trusted by itself")
	require.False(b.t, op.NextCheckAt.After(b.clock.Now()), "due for a lookup now")
	require.NotEqual(b.t, want, op.Status)
	b.env.Fake.ClearScripts()
	b.reconcile()
	op, atts = b.get(id)
	require.Equal(b.t, want, op.Status, "the lookup the event prompted settles it: %s", Describe(op, atts))
	require.Equal(b.t, posts, b.allPosts(), "settled by a lookup: nothing sent")
	return op
}

// ---- scenarios ----

// testWebhookForged: deliveries that do not verify (a signature of another
// secret, a changed body, wrong credentials, a source the provider does not
// send from) are refused with the documented status; nothing is recorded
// and the operation they speak of does not move. The genuine deliveries
// then settle it.
func testWebhookForged(t *testing.T, s *suite) {
	b := newBench(t, s, setup{config: noBreaker, webhooks: func(*mocks.WebhookDelivery) {}})
	b.webhooksOn()
	require.NotEmpty(t, b.env.WebhookForgeries, "Env.WebhookForgeries: list the deliveries %s's adapter must refuse", b.env.Provider.Name())
	b.hooks.Hold()
	res := b.lostCharge("order-forged", 1700)
	held := b.waitHeld()
	before, beforeAtts := b.get(res.OperationID)
	requests := b.requests()

	for _, f := range b.env.WebhookForgeries {
		for _, d := range held {
			forged := d.clone()
			f.Forge(&forged)
			require.Equal(t, f.Status, b.hooks.Direct(forged), "%s: %s", f.Name, forged.Body)
		}
	}
	require.Empty(t, b.inbox(ledger.InboxFilter{}), "a refused delivery records nothing")
	op, atts := b.get(res.OperationID)
	require.Equal(t, before, op, "a refused delivery changes nothing")
	require.Equal(t, beforeAtts, atts)
	require.Empty(t, b.webhookAudit(res.OperationID))
	b.requireNoRequest(requests, "a refused delivery causes no request")

	// The same deliveries, genuine, are accepted: what was refused was the
	// forgery, not the event.
	b.hooks.Release()
	b.flush()
	b.settledByWebhook(res.OperationID, ledger.StatusSucceeded)
	require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge))
}

// testWebhookReplay: every event is delivered twice, and then each
// delivery is posted again byte for byte. Each is acknowledged, recorded
// once, and changes nothing after the first.
func testWebhookReplay(t *testing.T, s *suite) {
	b := newBench(t, s, setup{config: noBreaker, webhooks: func(d *mocks.WebhookDelivery) { d.DuplicateRate = 1 }})
	b.webhooksOn()
	b.hooks.Hold()
	res := b.lostCharge("order-replay", 1800)
	b.hooks.Release()
	b.flush()
	st := b.env.Fake.WebhookStats()
	require.Equal(t, st.Queued, st.Duplicated, "DuplicateRate 1: every event twice")
	require.Equal(t, st.Queued+st.Duplicated, st.Delivered, "every delivery acknowledged")
	require.Len(t, b.inbox(ledger.InboxFilter{}), st.Queued, "each event recorded once")
	op := b.settledByWebhook(res.OperationID, ledger.StatusSucceeded)
	audit := b.webhookAudit(res.OperationID)
	_, atts := b.get(res.OperationID)
	requests := b.requests()

	accepted := b.hooks.Accepted()
	require.GreaterOrEqual(t, len(accepted), st.Delivered)
	for _, d := range accepted {
		require.Equal(t, http.StatusOK, b.hooks.post(b, d), "a replay is acknowledged")
	}
	require.Len(t, b.inbox(ledger.InboxFilter{}), st.Queued, "a replay is a duplicate: recorded once")
	again, againAtts := b.get(res.OperationID)
	require.Equal(t, op, again, "a replay changes nothing")
	require.Equal(t, atts, againAtts)
	require.Equal(t, audit, b.webhookAudit(res.OperationID), "a duplicate writes no audit entry")
	b.requireNoRequest(requests, "a replay causes no request")

	rep, err := b.client.Charge(b.ctx, b.charge("order-replay", 1800))
	require.NoError(t, err)
	require.True(t, rep.Replayed, "answered from the ledger")
	require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge))
	require.Equal(t, 1, b.charges(res.OperationID))
}

// testWebhookOutOfOrder: the events of an authorization and its capture
// arrive newest first. The capture's event settles the capture; the
// authorization's, older and weaker, never moves anything back.
func testWebhookOutOfOrder(t *testing.T, s *suite) {
	b := newBench(t, s, setup{config: noBreaker, webhooks: func(*mocks.WebhookDelivery) {}})
	b.webhooksOn()
	if !b.env.TwoStage {
		t.Skipf("%s: no capture (Env.TwoStage is false)", b.env.Provider.Name())
	}
	const order = "order-out-of-order"
	b.hooks.Hold()
	p := b.charge(order, 2600)
	p.CaptureManual = true
	auth, err := b.client.Charge(b.ctx, p)
	require.NoError(t, err)
	b.waitHeld()
	authEvents := len(b.hooks.Held())

	b.env.Fake.Script(b.env.Capture, mocks.FaultDropAfterProcessing)
	b.failLookups()
	capture := payonce.CaptureParams{OrderID: order, Amount: 2600, Currency: b.env.Currency}
	c, err := b.client.Capture(b.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the capture's answer was lost and the lookup cannot answer")
	held := b.waitHeld()
	require.Greater(t, len(held), authEvents, "the capture has an event")
	if b.env.WebhookReads {
		// The events are read back from the provider: its lookups work
		// again (the capture's call has returned).
		b.env.Fake.ClearScripts()
	}

	// Newest first. Once the capture is settled, no later delivery moves
	// it, nor the authorization.
	settled := false
	for i := len(held) - 1; i >= 0; i-- {
		require.Equal(t, http.StatusOK, b.hooks.Direct(held[i]))
		op, atts := b.get(c.OperationID)
		if settled {
			require.Equal(t, ledger.StatusSucceeded, op.Status, "an older event moved the capture back: %s", Describe(op, atts))
		}
		settled = op.Status == ledger.StatusSucceeded
		a, _ := b.get(auth.OperationID)
		require.Equal(t, ledger.StatusSucceeded, a.Status, "the authorization stays settled")
	}
	b.settledByWebhook(c.OperationID, ledger.StatusSucceeded)
	b.hooks.Release()
	b.flush() // the fake's own retries: duplicates now
	for _, id := range []string{auth.OperationID, c.OperationID} {
		require.NotContains(t, b.dispositions(id), ledger.WebhookContradiction)
		op, _ := b.get(id)
		require.Equal(t, ledger.StatusSucceeded, op.Status)
	}
	require.Equal(t, int64(2600), b.payment(auth.ProviderRef).AmountCaptured)
	require.Equal(t, 1, b.posts(b.env.Capture), "captured once")
}

// testWebhookBeforeAnswer: the provider's event arrives before the call's
// answer. Signed events settle the operation in flight (its attempt closed
// as maybe_sent, an audit entry naming the event) and the call reports the
// settled result; an unsigned notice is only noted while the call runs,
// and prompts the lookup that settles it once the answer is lost. Nothing
// is ever sent twice.
func testWebhookBeforeAnswer(t *testing.T, s *suite) {
	t.Run("answer_hangs", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{webhooks: func(*mocks.WebhookDelivery) {}})
		b.webhooksOn()
		b.skipRepeatIsLookup("the same-key repeat learns a hanging charge's outcome at once, before its event; answer_lost has the event settle it")
		b.env.Fake.Script(b.env.Charge, mocks.FaultHangAfterProcessing)
		p := b.charge("order-event-first", 1900)
		id := b.opID(payonce.KindCharge, p.OrderID)
		type answer struct {
			res payonce.Result
			err error
		}
		done := make(chan answer, 1)
		go func() {
			res, err := b.client.Charge(b.ctx, p)
			done <- answer{res, err}
		}()
		b.waitFor("the event to be recorded", func() bool {
			return len(b.inbox(ledger.InboxFilter{OperationID: id})) > 0
		})
		if !b.env.WebhooksLookupOnly {
			b.waitFor("the event to settle the operation", func() bool {
				op, _, err := b.store.Get(b.ctx, id)
				return err == nil && op.Status == ledger.StatusSucceeded
			})
		}
		b.env.Fake.Release() // the answer arrives, late
		a := <-done
		require.NoError(t, a.err)
		require.Equal(t, payonce.ResultSucceeded, a.res.Status)
		require.Equal(t, 1, b.posts(b.env.Charge), "never sent twice")
		require.Equal(t, 1, b.charges(id))
		op, atts := b.get(id)
		require.Len(t, atts, 1, Describe(op, atts))
		disps := b.dispositions(id)
		if b.env.WebhooksLookupOnly {
			require.Contains(t, disps, ledger.WebhookNoted, "a notice about an operation in flight is only noted")
			require.NotContains(t, disps, ledger.WebhookSettled)
			return
		}
		require.Contains(t, disps, ledger.WebhookSettled, Describe(op, atts))
		require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome, "the attempt is closed by the event")
		require.Contains(t, atts[0].Error, "webhook")
	})

	t.Run("answer_lost", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{config: noBreaker, webhooks: func(*mocks.WebhookDelivery) {}})
		b.webhooksOn()
		b.hooks.Hold()
		res := b.lostCharge("order-event-only", 2100)
		b.hooks.Release()
		b.flush()
		op := b.settledByWebhook(res.OperationID, ledger.StatusSucceeded)
		require.Equal(t, b.truth().Payments[0].ID, op.ProviderRef)
		again, err := b.client.Charge(b.ctx, b.charge("order-event-only", 2100))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, again.Status)
		require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge), "no resend: the event told")
	})
}

// testWebhookInReview: the outcome was unknown when the key window
// passed, so the operation is in review with lookups still going; the
// provider's event settles it (a resolution names the event) where events
// are signed, or prompts the lookup that does.
func testWebhookInReview(t *testing.T, s *suite) {
	b := newBench(t, s, setup{config: noBreaker, webhooks: func(*mocks.WebhookDelivery) {}})
	b.webhooksOn()
	b.hooks.Hold()
	p, _, err := b.chargeBlind(mocks.FaultGatewayAfter502, "order-review-event", 2200)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	b.waitHeld()
	res, _ := b.reviewPastWindow(p, "the window passed with the outcome unknown")
	op, _ := b.get(res.OperationID)
	require.False(t, op.NextCheckAt.IsZero(), "this review still wants lookups")

	// The fake's retries, signed anew now, get through.
	b.hooks.Release()
	b.flush()
	op = b.settledByWebhook(res.OperationID, ledger.StatusSucceeded)
	if !b.env.WebhooksLookupOnly {
		require.NotNil(t, op.Resolution, "settled from review: a resolution says by what")
		require.Equal(t, ledgerdriver.WebhookActor(b.env.Provider.Name()), op.Resolution.Actor)
		require.Contains(t, op.Resolution.Note, "settled by webhook")
	}
	require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge), "nothing posted outside the key window")
	again, err := b.client.Charge(b.ctx, p)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, again.Status)
	require.Equal(t, 1, b.charges(res.OperationID))
}

// testWebhookContradiction: the provider undoes an operation it reported
// as succeeded (Env.Reversal). The operation goes to review with the event
// as its reason, where an operator sees it; no lookup settles it again and
// nothing is sent.
func testWebhookContradiction(t *testing.T, s *suite) {
	const order = "order-reversed"
	b := newBench(t, s, setup{webhooks: func(*mocks.WebhookDelivery) {}})
	b.webhooksOn()
	rev := b.env.Reversal
	require.NotNil(t, rev, "Env.Reversal is nil: say how %s's fake undoes a settled operation, or list %s in Env.Skip with the reason",
		b.env.Provider.Name(), ScenarioWebhookContradiction)
	var call func() (payonce.Result, error)
	var m mocks.Match
	switch rev.Kind {
	case payonce.KindRefund:
		_, err := b.client.Charge(b.ctx, b.charge(order, 4000))
		require.NoError(t, err)
		b.flush()
		m = b.env.Refund
		call = func() (payonce.Result, error) { return b.client.Refund(b.ctx, b.refund(order, 1, 4000)) }
	case payonce.KindCapture:
		p := b.charge(order, 4000)
		p.CaptureManual = true
		_, err := b.client.Charge(b.ctx, p)
		require.NoError(t, err)
		b.flush()
		m = b.env.Capture
		call = func() (payonce.Result, error) {
			return b.client.Capture(b.ctx, payonce.CaptureParams{OrderID: order, Amount: 4000, Currency: b.env.Currency})
		}
	default:
		t.Fatalf("Env.Reversal.Kind is %q; use payonce.KindCapture or payonce.KindRefund", rev.Kind)
	}
	res, err := b.act(m, call)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	b.flush()
	posts := b.allPosts()

	require.NoError(t, rev.Reverse(res.ProviderRef))
	b.flush()
	op, atts := b.get(res.OperationID)
	require.Equal(t, ledger.StatusManualReview, op.Status, Describe(op, atts))
	require.Equal(t, ledger.ReviewCodeWebhookContradiction, op.ReviewCode, op.ReviewReason)
	require.Contains(t, op.ReviewReason, rev.EventType, "the reason names the event")
	require.True(t, op.NextCheckAt.IsZero(), "an operator decides: no lookup would settle it again")
	list := b.inbox(ledger.InboxFilter{Disposition: ledger.WebhookContradiction, OperationID: res.OperationID})
	require.NotEmpty(t, list, "the inbox lists the contradiction")
	require.Equal(t, rev.EventType, list[0].Type)

	got, err := call()
	require.ErrorIs(t, err, payonce.ErrManualReview, "the caller sees the review")
	require.Equal(t, op.ReviewReason, got.ReviewReason)
	b.clock.Advance(time.Hour)
	b.reconcile()
	again, _ := b.get(res.OperationID)
	require.Equal(t, ledger.StatusManualReview, again.Status, "the reconciler leaves it to the operator")
	require.Equal(t, op.ReviewReason, again.ReviewReason)
	require.Equal(t, posts, b.allPosts(), "nothing sent")
}

// testWebhookUnmatched: events about a payment payonce did not make (sent
// by another system under an operation id this ledger does not hold) are
// acknowledged and kept as unmatched; nothing is created or changed.
func testWebhookUnmatched(t *testing.T, s *suite) {
	b := newBench(t, s, setup{webhooks: func(*mocks.WebhookDelivery) {}})
	b.webhooksOn()
	elsewhere := b.opID(payonce.KindCharge, "order-elsewhere")
	out := b.send(payonce.SendRequest{OperationID: elsewhere, Key: "key-of-another-system",
		Request: payonce.Request{Kind: payonce.KindCharge, Amount: 1100, Currency: b.env.Currency,
			References: []string{"order-elsewhere"}, PaymentMethod: b.env.GoodMethod, Customer: b.env.Customer}})
	require.Equal(t, ledger.OutcomeSuccess, out.Class)
	b.flush()
	st := b.env.Fake.WebhookStats()
	require.Equal(t, st.Queued, st.Delivered, "every event acknowledged")
	all := b.inbox(ledger.InboxFilter{})
	require.Len(t, all, st.Queued, "every event kept")
	for _, e := range all {
		for _, o := range e.Outcomes {
			require.Equal(t, ledger.WebhookUnmatched, o.Disposition, "event %s %s", e.ID, e.Type)
			require.Empty(t, o.OperationID)
		}
	}
	require.NotEmpty(t, b.inbox(ledger.InboxFilter{Disposition: ledger.WebhookUnmatched}))
	ops, err := b.store.List(b.ctx, ledger.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, ops, "an event creates no operation")
	require.Equal(t, 1, b.allPosts(), "the other system's request only")
}

// testWebhookDeliveryFaults: deliveries duplicated, failed and reordered
// while charges and refunds lose their answers and the lookups fail. The
// events settle every operation (or prompt the lookups that do): no money
// moved twice, one provider object per operation, no resend.
func testWebhookDeliveryFaults(t *testing.T, s *suite) {
	const n = 6
	b := newBench(t, s, setup{config: noBreaker, webhooks: func(d *mocks.WebhookDelivery) {
		d.DuplicateRate, d.FailRate, d.ReorderRate = 0.3, 0.3, 0.3
	}})
	b.webhooksOn()
	expect := map[string]Expected{}
	lose := func(m mocks.Match, call func() (payonce.Result, error), e Expected) string {
		b.env.Fake.Script(m, mocks.FaultDropAfterProcessing)
		b.failLookups()
		res, err := call()
		if err != nil {
			// The event may have come first and settled it; otherwise the
			// outcome is unknown.
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		}
		b.env.Fake.ClearScripts()
		expect[res.OperationID] = e
		return res.OperationID
	}
	// Events that name the operation settle it; the others (a notice, an
	// event naming only the payment) made it due for a lookup, which the
	// reconciler makes. An event that came while the call was still in
	// flight may have found nothing to make due (the call's own failed
	// lookup set the next check): the next background lookup settles it.
	settleAll := func(kind payonce.Kind) {
		b.flush()
		b.env.Fake.ClearScripts()
		for id, e := range expect {
			op, atts := b.get(id)
			if e.Kind == kind && e.Kind == payonce.KindCharge && !b.env.WebhooksLookupOnly {
				require.Equal(t, ledger.StatusSucceeded, op.Status, "a signed event naming the charge settles it: %s", Describe(op, atts))
			}
		}
		b.reconcile()
		for id, e := range expect {
			if e.Kind != kind {
				continue
			}
			op, atts := b.get(id)
			if op.Status != ledger.StatusSucceeded {
				// The inbox keeps what each event did; an operation in flight
				// that only the payment matched gets no audit entry.
				require.NotEmpty(t, b.inbox(ledger.InboxFilter{OperationID: id}), "an event reached %s: %s\nstats %+v, inbox:%s",
					e.Order, Describe(op, atts), b.env.Fake.WebhookStats(), describeInbox(b.inbox(ledger.InboxFilter{})))
				if at := op.NextCheckAt.Add(time.Second); at.After(b.clock.Now()) {
					b.clock.Set(at)
				}
				b.reconcile()
				op, atts = b.get(id)
			}
			require.Equal(t, ledger.StatusSucceeded, op.Status, Describe(op, atts))
		}
	}
	for i := range n {
		order := "order-faults-" + string(rune('a'+i))
		e := Expected{Kind: payonce.KindCharge, Order: order, Amount: int64(1000 + i)}
		lose(b.env.Charge, func() (payonce.Result, error) { return b.client.Charge(b.ctx, b.charge(order, e.Amount)) }, e)
	}
	settleAll(payonce.KindCharge)
	for i := range n {
		order := "order-faults-" + string(rune('a'+i))
		e := Expected{Kind: payonce.KindRefund, Order: order, Amount: int64(1000 + i)}
		lose(b.env.Refund, func() (payonce.Result, error) { return b.client.Refund(b.ctx, b.refund(order, 1, e.Amount)) }, e)
	}
	settleAll(payonce.KindRefund)

	truth := b.truth()
	require.Empty(t, truth.Duplicates(metaOperation), "no operation charged twice")
	for id, e := range expect {
		switch e.Kind {
		case payonce.KindCharge:
			require.Equal(t, 1, b.charges(id), "one payment for charge %s", e.Order)
		case payonce.KindRefund:
			require.Len(t, b.refundsOf(id), 1, "one refund for refund %s", e.Order)
		}
	}
	var chargeIDs []string
	for id, e := range expect {
		if e.Kind == payonce.KindCharge {
			chargeIDs = append(chargeIDs, id)
		}
	}
	require.Equal(t, b.sentCharges(chargeIDs...), b.posts(b.env.Charge), "no charge sent twice")
	require.Equal(t, n, b.posts(b.env.Refund), "no refund sent twice")
	st := b.env.Fake.WebhookStats()
	require.Equal(t, st.Queued+st.Duplicated, st.Delivered, "every delivery acknowledged in the end: %+v", st)
	CheckLedger(t, b.ctx, Check{Store: b.store, Truth: truth, Expect: expect, Margin: time.Minute,
		PaymentOperation: b.env.PaymentOperation, RefundOperation: b.env.RefundOperation})
}

// describeInbox renders inbox entries for failure messages.
func describeInbox(entries []ledger.InboxEntry) string {
	var s strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&s, "\n  %s %s", e.ID, e.Type)
		for i, t := range e.Targets {
			fmt.Fprintf(&s, " [%s op=%s ref=%s pay=%s %s]", t.Kind, t.OperationID, t.ProviderRef, t.PaymentRef, t.Effect)
			if i < len(e.Outcomes) {
				fmt.Fprintf(&s, "->%s %s", e.Outcomes[i].Disposition, e.Outcomes[i].OperationID)
			}
		}
	}
	return s.String()
}

package providertest

import (
	"bytes"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// The scenarios about which object an event is about. An event decides
// only about the key generation and the object it names
// (ledgerdriver.ObjectOf): by the key the object carries where the adapter reads
// it (WebhookTarget.Key), else by the provider reference the ledger
// recorded for the current generation or for an earlier one (the
// PreviousProviderRef of a resend). Both scenarios hold either way.

// heldDelivery is a delivery the receiver held back, with its events as
// the adapter reads them.
type heldDelivery struct {
	Delivery
	Events []payonce.WebhookEvent
}

// ids are the identities of d's events.
func (d heldDelivery) ids() []string {
	out := make([]string, 0, len(d.Events))
	for _, e := range d.Events {
		out = append(out, e.ID)
	}
	return out
}

// about returns what d says about the object ref of kind k: the target
// that names it, and false when none does.
func (d heldDelivery) about(k payonce.Kind, ref string) (payonce.WebhookTarget, bool) {
	for _, e := range d.Events {
		for _, t := range e.Targets {
			if t.Kind == k && t.ProviderRef == ref {
				return t, true
			}
		}
	}
	return payonce.WebhookTarget{}, false
}

// readHeld returns the deliveries held back so far, each read with the
// adapter's ParseWebhook as the client's handler reads it (verified: a
// held delivery is a genuine one).
//
// Where the provider signs a timestamp (Stripe), a copy signed before the
// clock last moved no longer verifies; the fake signs every retry anew,
// so readHeld waits for copies that do.
func (b *bench) readHeld() []heldDelivery {
	b.t.Helper()
	parser := b.env.Provider.(payonce.WebhookParser)
	deadline := time.Now().Add(webhookFlushFor)
	for {
		var out []heldDelivery
		var stale error
		for _, d := range b.hooks.Held() {
			req := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(d.Body))
			req.Header = d.Header.Clone()
			req.RemoteAddr = d.RemoteAddr
			evs, err := parser.ParseWebhook(req, d.Body)
			if err != nil {
				stale = err
				break
			}
			out = append(out, heldDelivery{Delivery: d, Events: evs})
		}
		if stale == nil {
			return out
		}
		require.True(b.t, time.Now().Before(deadline), "a held delivery is genuine, yet does not verify: %v", stale)
		time.Sleep(webhookRetryAfter)
	}
}

// waitHeldSince waits until every event the fake queued after it had
// queued queuedBefore has arrived at the (holding) receiver. Everything
// queued before was delivered already (the caller flushed, then held).
func (b *bench) waitHeldSince(queuedBefore int) {
	b.t.Helper()
	b.waitFor("the fake's webhooks to arrive", func() bool {
		return len(b.hooks.Held()) >= b.env.Fake.WebhookStats().Queued-queuedBefore
	})
}

// disposition is what the inbox says event eventID did to operation id;
// the test fails when the inbox holds no such outcome.
func (b *bench) disposition(eventID, id string) ledger.WebhookDisposition {
	b.t.Helper()
	for _, e := range b.inbox(ledger.InboxFilter{OperationID: id}) {
		if e.ID != eventID {
			continue
		}
		for _, o := range e.Outcomes {
			if o.OperationID == id {
				return o.Disposition
			}
		}
	}
	b.t.Fatalf("the inbox holds no outcome of event %s on %s:%s", eventID, id, describeInbox(b.inbox(ledger.InboxFilter{})))
	return ""
}

// requireDuplicated checks that operation id is in review because the
// provider holds a second object that moved money: reason duplicated,
// no lookup that could settle it on one of the objects, the caller's
// next call (again) reports the review, and no resend under a new key
// is allowed (it would move money a third time).
func (b *bench) requireDuplicated(id string, again func() (payonce.Result, error)) ledger.Operation {
	b.t.Helper()
	op, atts := b.get(id)
	require.Equal(b.t, ledger.StatusManualReview, op.Status, Describe(op, atts))
	require.Equal(b.t, ledger.ReviewCodeDuplicated, op.ReviewCode, "review reason %q", op.ReviewReason)
	require.True(b.t, op.NextCheckAt.IsZero(), "an operator compares the objects: no lookup settles it on one of them")
	posts := b.allPosts()
	res, err := again()
	require.ErrorIs(b.t, err, payonce.ErrManualReview, "the caller sees the review")
	require.Equal(b.t, payonce.ResultManualReview, res.Status)
	require.Equal(b.t, op.ReviewReason, res.ReviewReason)
	_, err = b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: id, Outcome: ledger.ResolveResend,
		Actor: "operator", Note: "resend"})
	require.ErrorIs(b.t, err, payonce.ErrResendRefused, "money moved twice already: a new key would move it a third time")
	require.Equal(b.t, posts, b.allPosts(), "nothing sent")
	return op
}

// reversible makes the operation Env.Reversal undoes: its charge (an
// authorization, for a capture), settled and its events delivered, and
// the call that makes the capture or refund itself, with the endpoint
// that call posts to.
func (b *bench) reversible(order string, amount int64) (mocks.Match, func() (payonce.Result, error)) {
	b.t.Helper()
	rev := b.env.Reversal
	p := b.charge(order, amount)
	switch rev.Kind {
	case payonce.KindRefund:
		_, err := b.client.Charge(b.ctx, p)
		require.NoError(b.t, err)
		b.flush()
		return b.env.Refund, func() (payonce.Result, error) { return b.client.Refund(b.ctx, b.refund(order, 1, amount)) }
	case payonce.KindCapture:
		p.CaptureManual = true
		_, err := b.client.Charge(b.ctx, p)
		require.NoError(b.t, err)
		b.flush()
		return b.env.Capture, func() (payonce.Result, error) {
			return b.client.Capture(b.ctx, payonce.CaptureParams{OrderID: order, Amount: amount, Currency: b.env.Currency})
		}
	}
	b.t.Fatalf("Env.Reversal.Kind is %q; use payonce.KindCapture or payonce.KindRefund", rev.Kind)
	return mocks.Match{}, nil
}

// testWebhookEarlierGeneration: an event about an earlier key
// generation's object never settles the current generation.
//
// A capture or refund (Env.Reversal.Kind) is made under generation 0 and
// the provider undoes it later; the events about it are held back by the
// receiver. The operation gets to review in one of two ways:
//
//   - reversed: its answer settled it, and the reversal event contradicts
//     that (ledger.ReasonWebhookContradiction);
//   - answer_lost: its answer was lost and the lookups failed until the
//     key window passed (payonce.ReasonWindowPassed); the ledger never
//     recorded generation 0's object.
//
// The provider refused generation 0 in the end, so the operator's resend
// under a new key is allowed (Client.Resolve); generation 1 is pending.
// Then the held events about generation 0's object arrive late. A failure
// (or a processing notice) of that object says nothing of generation 1's,
// which was never sent: it is recorded (other_object), or, where the
// ledger cannot tell the object's generation (no key in the event, no
// reference recorded), it only makes the operation due for a lookup that
// sees every generation (nudged); the operation stays pending either way.
// The reconciler sends generation 1, which settles on its own object.
// Generation 0's success events, delivered last, are older than its
// failure (a refund or capture that failed does not succeed again): they
// are recorded and change nothing, never a confirmation of generation 1.
// Nothing is captured or refunded beyond the operation.
//
// A provider whose capture or refund outcome arrives only by webhook
// (Env.WebhookOnly) needs generation 0's success event to settle it, and
// the reversal event is its only other event: nothing of generation 0 is
// left to arrive late there, and "reversed" checks the resend and
// generation 1's own settlement; "answer_lost" is skipped (its resend
// needs the refusal of generation 0 on record, which is the event held
// back).
func testWebhookEarlierGeneration(t *testing.T, s *suite) {
	t.Run("reversed", func(t *testing.T) {
		t.Parallel()
		earlierGeneration(t, s, false)
	})
	t.Run("answer_lost", func(t *testing.T) {
		t.Parallel()
		earlierGeneration(t, s, true)
	})
}

// earlierGeneration is testWebhookEarlierGeneration, with generation 0's
// answer lost or not.
func earlierGeneration(t *testing.T, s *suite, lost bool) {
	const order, amount = "order-earlier-generation", 4000
	b := newBench(t, s, setup{config: noBreaker, webhooks: func(*mocks.WebhookDelivery) {}})
	b.webhooksOn()
	rev := b.env.Reversal
	require.NotNil(t, rev, "Env.Reversal is nil: say how %s's fake undoes a settled operation, or list %s in Env.Skip with the reason",
		b.env.Provider.Name(), ScenarioWebhookEarlierGeneration)
	if lost {
		b.skipWebhookOnly("a resend under a new key needs generation 0's refusal on record, which is the event held back here; \"reversed\" covers the resend")
	}
	m, call := b.reversible(order, amount)

	// Generation 0. Its events are held back from here on (where its
	// outcome can be known without them), to be delivered late.
	queued := b.env.Fake.WebhookStats().Queued
	var id, ref0 string
	switch {
	case lost:
		b.hooks.Hold()
		b.env.Fake.Script(m, mocks.FaultDropAfterProcessing)
		b.failLookups()
		res, err := call()
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the answer was lost and the lookup cannot answer")
		id = res.OperationID
		// The ledger does not know the object; its event names it.
		b.waitHeldSince(queued)
		charge, _ := b.get(b.opID(payonce.KindCharge, order))
		for _, d := range b.readHeld() {
			for _, e := range d.Events {
				for _, tg := range e.Targets {
					if tg.Kind == rev.Kind && tg.State == payonce.LookupSucceeded && (tg.OperationID == id || tg.PaymentRef == charge.ProviderRef) {
						ref0 = tg.ProviderRef
					}
				}
			}
		}
		require.NotEmpty(t, ref0, "an event of the fake names the %s it made", rev.Kind)
	default:
		if !b.env.WebhookOnly {
			b.hooks.Hold()
		}
		res, err := b.act(m, call)
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		id, ref0 = res.OperationID, res.ProviderRef
		require.NotEmpty(t, ref0)
		if b.env.WebhookOnly {
			b.flush()
			queued = b.env.Fake.WebhookStats().Queued
			b.hooks.Hold()
		}
	}

	// The provider undoes it. The events about generation 0's object are
	// held; the operation gets to review.
	require.NoError(t, rev.Reverse(ref0))
	b.waitHeldSince(queued)
	gen0 := map[string]bool{} // the held events' ids
	for _, d := range b.readHeld() {
		for _, e := range d.ids() {
			gen0[e] = true
		}
	}
	delivered := map[string]bool{}
	if lost {
		b.pastWindow()
		posts := b.allPosts()
		res, err := call()
		require.ErrorIs(t, err, payonce.ErrManualReview, "the window passed with the outcome unknown")
		require.Equal(t, payonce.ReasonWindowPassed, res.ReviewReason)
		require.Equal(t, posts, b.allPosts(), "rule 5: no POST outside the key window")
		b.env.Fake.ClearScripts()
	} else {
		held := b.readHeld()
		i := slices.IndexFunc(held, func(d heldDelivery) bool {
			_, named := d.about(rev.Kind, ref0)
			return named && slices.ContainsFunc(d.Events, func(e payonce.WebhookEvent) bool { return e.Type == rev.EventType })
		})
		require.GreaterOrEqual(t, i, 0, "the fake sent %s about %s", rev.EventType, ref0)
		require.Equal(t, http.StatusOK, b.hooks.Direct(held[i].Delivery))
		for _, e := range held[i].ids() {
			delivered[e] = true
		}
		op, atts := b.get(id)
		require.Equal(t, ledger.StatusManualReview, op.Status, Describe(op, atts))
		require.Equal(t, ledger.ReviewCodeWebhookContradiction, op.ReviewCode, op.ReviewReason)
	}

	// The provider refused generation 0 in the end: the operator may
	// resend under a new key.
	op, err := b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: id, Outcome: ledger.ResolveResend,
		Actor: "operator", Note: "the provider undid it; send it again"})
	require.NoError(t, err, "generation 0 was undone by the provider (%s): a resend is allowed", rev.EventType)
	require.Equal(t, ledger.StatusPending, op.Status)
	require.Equal(t, 1, op.Generation)
	posts := b.posts(m)

	// Generation 0's failures and processing notices arrive late: they
	// are recorded on the operation and settle nothing.
	var late int
	keep := map[string]bool{} // generation 0's successes, kept back
	for _, d := range b.readHeld() {
		tg, named := d.about(rev.Kind, ref0)
		if !named || !slices.ContainsFunc(d.ids(), func(e string) bool { return gen0[e] && !delivered[e] }) {
			continue
		}
		if tg.State == payonce.LookupSucceeded {
			for _, e := range d.ids() {
				keep[e] = true
			}
			continue
		}
		late++
		require.Equal(t, http.StatusOK, b.hooks.Direct(d.Delivery))
		for _, e := range d.ids() {
			delivered[e] = true
			got := b.disposition(e, id)
			if lost && (tg.Key == "" || tg.OperationID == "") {
				// Generation 0's reference was never recorded, and the
				// event does not name the operation and the object's key:
				// the ledger cannot tell the object's generation, and the
				// lookup it prompts (which sees every generation) decides.
				require.Contains(t, []ledger.WebhookDisposition{ledger.WebhookOtherObject, ledger.WebhookNudged}, got,
					"event %s is about generation 0's object %s, not generation 1's", e, ref0)
			} else {
				require.Equal(t, ledger.WebhookOtherObject, got, "event %s is about generation 0's object %s, not generation 1's", e, ref0)
			}
		}
		op, atts := b.get(id)
		require.Equal(t, ledger.StatusPending, op.Status, "an earlier generation's failure settles nothing: %s", Describe(op, atts))
		require.Equal(t, 1, op.Generation)
		require.Empty(t, op.ProviderRef, "generation 1 has no object yet")
	}
	switch {
	case lost:
		require.Positive(t, late, "the reversal of %s arrived late", ref0)
	case late+len(keep) == 0:
		require.True(t, b.env.WebhookOnly, "the fake sent no event about %s but the reversal", ref0)
	}
	require.Equal(t, posts, b.posts(m), "an event never sends anything")

	// The reconciler sends generation 1; it settles on its own object,
	// by its answer, a lookup or its own events (delivered here).
	skip := maps.Clone(keep)
	maps.Copy(skip, delivered)
	op = b.settleResent(id, skip, queued)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.Equal(t, 1, op.Generation)
	require.NotEmpty(t, op.ProviderRef)
	require.NotEqual(t, ref0, op.ProviderRef, "generation 1 settled on its own object")
	require.Equal(t, posts+1, b.posts(m), "generation 1 sent once")

	// Generation 0's successes arrive last, by the fake's own retries.
	// That object failed in the end (the reversal is the provider's last
	// word on it: a refund or capture that failed does not succeed
	// again), so they are older events arriving late: recorded, never a
	// confirmation of generation 1, never a settlement. (An earlier
	// generation's success with no failure of it on record is a
	// duplicate: the ledger's own tests and WebhookSecondObject.)
	b.hooks.Release()
	b.flush()
	for e := range keep {
		require.Contains(t, []ledger.WebhookDisposition{ledger.WebhookOtherObject, ledger.WebhookNoted}, b.disposition(e, id),
			"event %s reports generation 0's failed object %s succeeded, late", e, ref0)
	}
	final, atts := b.get(id)
	require.Equal(t, ledger.StatusSucceeded, final.Status, Describe(final, atts))
	require.Equal(t, op.ProviderRef, final.ProviderRef, "generation 1's own object stays the operation's")

	// At the provider: generation 0's object moved nothing in the end,
	// generation 1's moved the amount once.
	switch rev.Kind {
	case payonce.KindRefund:
		var succeeded []string
		for _, r := range b.refundsOf(id) {
			if r.ID == ref0 {
				require.NotEqual(t, "succeeded", r.Status, "generation 0's refund was undone")
			}
			if r.Status == "succeeded" {
				succeeded = append(succeeded, r.ID)
			}
		}
		require.Equal(t, []string{op.ProviderRef}, succeeded, "refunded once, by generation 1's refund")
		// The bench's end check counts refund objects per operation;
		// generation 0's failed refund moved no money (checked above).
		refundOp := b.env.RefundOperation
		b.env.RefundOperation = func(r mocks.TruthRefund) string {
			if r.ID == ref0 {
				return ""
			}
			return refundOp(r)
		}
	case payonce.KindCapture:
		charge, _ := b.get(b.opID(payonce.KindCharge, order))
		require.Equal(t, int64(amount), b.payment(charge.ProviderRef).AmountCaptured, "captured once")
	}
}

// settleResent brings operation id, pending under a new key generation,
// to its outcome as production does: the reconciler sends it, and its
// answer, a lookup, or its own events settle it. Its events are the
// receiver's held deliveries that arrived since the fake had queued
// queuedBefore, except those in skip (delivered already, or kept back by
// the caller); they are handed to the client's handler here.
func (b *bench) settleResent(id string, skip map[string]bool, queuedBefore int) ledger.Operation {
	b.t.Helper()
	for range 4 {
		b.reconcile()
		if op, _ := b.get(id); op.Status.Terminal() {
			return op
		}
		b.waitHeldSince(queuedBefore)
		for _, d := range b.readHeld() {
			if slices.ContainsFunc(d.ids(), func(e string) bool { return skip[e] }) {
				continue
			}
			require.Equal(b.t, http.StatusOK, b.hooks.Direct(d.Delivery))
			for _, e := range d.ids() {
				skip[e] = true
			}
		}
		op, _ := b.get(id)
		if op.Status.Terminal() {
			return op
		}
		if at := op.NextCheckAt.Add(time.Second); at.After(b.clock.Now()) {
			b.clock.Set(at)
		}
	}
	op, atts := b.get(id)
	b.t.Fatalf("operation %s did not settle: %s", id, Describe(op, atts))
	return op
}

// testWebhookSecondObject: an event about a second object carrying the
// operation's id is never a confirmation. The operation's charge is made
// (settled, or with its outcome still unknown); then another payment is
// created at the provider under the same operation id with another key
// (a second system, a resend outside payonce). Its events put the
// operation in review as duplicated (disposition duplicate); where events
// only prompt a lookup (Env.WebhooksLookupOnly), the lookup of an
// operation not settled yet finds two objects and does the same. The
// caller's next call reports the review and no resend is allowed. A
// notice (never trusted) about a second payment of an operation already
// settled is recorded on it and changes nothing: nothing looks a settled
// operation up again.
func testWebhookSecondObject(t *testing.T, s *suite) {
	// second creates the other payment under operation id's request and
	// returns its provider reference.
	second := func(b *bench, id string) string {
		b.t.Helper()
		op, _ := b.get(id)
		req, err := payonce.ParseRequest(op.Request)
		require.NoError(b.t, err)
		out := b.send(payonce.SendRequest{OperationID: id, Key: "key-of-another-system", Request: req})
		require.Equal(b.t, ledger.OutcomeSuccess, out.Class, "the provider made the second payment")
		require.NotEmpty(b.t, out.ProviderRef)
		return out.ProviderRef
	}
	// settle checks the end state (recorded: the operation's own object
	// was recorded before the second one's events arrived) and excludes the second payment, which
	// the scenario made itself, from the bench's end check of the money
	// payonce moved.
	settle := func(b *bench, id string, p payonce.ChargeParams, ref string, recorded bool) {
		b.t.Helper()
		if b.env.WebhooksLookupOnly {
			disps := b.dispositions(id)
			require.NotContains(b.t, disps, ledger.WebhookSettled, "a notice is never trusted by itself")
		} else {
			// Where the operation's own object was not recorded yet, and
			// the events carry no key, the first of the two payments'
			// events to arrive is the operation's object as far as the
			// ledger can tell; the other one's is the duplicate.
			dups := b.inbox(ledger.InboxFilter{Disposition: ledger.WebhookDuplicate, OperationID: id})
			require.NotEmpty(b.t, dups, "the inbox lists the event about the second payment as a duplicate:%s",
				describeInbox(b.inbox(ledger.InboxFilter{})))
			if recorded {
				// The operation's object was recorded: the duplicate is the
				// second payment's event.
				require.True(b.t, slices.ContainsFunc(dups, func(e ledger.InboxEntry) bool {
					return slices.ContainsFunc(e.Targets, func(t ledger.WebhookTarget) bool { return t.ProviderRef == ref })
				}), "the duplicate is the event about %s:%s", ref, describeInbox(dups))
			}
		}
		op := b.requireDuplicated(id, func() (payonce.Result, error) { return b.client.Charge(b.ctx, p) })
		require.NotEqual(b.t, ledger.StatusSucceeded, op.Status, "never confirmed")
		require.Equal(b.t, b.sentCharges(id)+1, b.posts(b.env.Charge), "payonce's charge and the other system's")
		require.Equal(b.t, 2, b.charges(id), "the provider holds two payments for the operation")
		paymentOp := b.env.PaymentOperation
		b.env.PaymentOperation = func(tp mocks.TruthPayment) string {
			if tp.ID == ref {
				return ""
			}
			return paymentOp(tp)
		}
	}

	t.Run("after_settlement", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{webhooks: func(*mocks.WebhookDelivery) {}})
		b.webhooksOn()
		p := b.charge("order-second-object", 2300)
		res, err := b.client.Charge(b.ctx, p)
		require.NoError(t, err)
		b.flush()
		op, atts := b.get(res.OperationID)
		require.Equal(t, ledger.StatusSucceeded, op.Status, Describe(op, atts))
		ref := second(b, res.OperationID)
		b.flush()
		if b.env.WebhooksLookupOnly {
			// An unsigned notice is never trusted by itself, and a settled
			// operation is never looked up again: the notice about the
			// second payment is recorded on the operation, which it leaves
			// as it is; finding such a payment is an audit against the
			// provider's records, not a webhook's job.
			b.reconcile()
			op, atts := b.get(res.OperationID)
			require.Equal(t, ledger.StatusSucceeded, op.Status, Describe(op, atts))
			require.Equal(t, res.ProviderRef, op.ProviderRef, "never recorded as the second payment")
			require.Contains(t, b.dispositions(res.OperationID), ledger.WebhookNoted, "the notice is on the operation's record")
			require.Equal(t, 2, b.posts(b.env.Charge), "payonce's charge and the other system's; nothing more")
			paymentOp := b.env.PaymentOperation
			b.env.PaymentOperation = func(tp mocks.TruthPayment) string {
				if tp.ID == ref {
					return ""
				}
				return paymentOp(tp)
			}
			return
		}
		settle(b, res.OperationID, p, ref, true)
	})

	t.Run("before_settlement", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{config: noBreaker, webhooks: func(*mocks.WebhookDelivery) {}})
		b.webhooksOn()
		b.hooks.Hold()
		res := b.lostCharge("order-second-object-lost", 2400)
		ref := second(b, res.OperationID)
		b.env.Fake.ClearScripts()
		b.hooks.Release()
		b.flush()
		if op, _ := b.get(res.OperationID); !op.Status.Terminal() {
			// Notices (or events naming only the payment) made it due for
			// a lookup; the lookup sees both payments.
			if at := op.NextCheckAt.Add(time.Second); at.After(b.clock.Now()) {
				b.clock.Set(at)
			}
			b.reconcile()
		}
		settle(b, res.OperationID, b.charge("order-second-object-lost", 2400), ref, false)
	})
}

package providertest

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// Run runs the provider conformance suite: every scenario below as a
// parallel subtest, each through a real payonce.Client with a fresh SQLite
// ledger, against the environment newEnv builds for it (a fresh fake and the
// adapter pointed at it, configured from the Options). See the package
// documentation for the scenarios and how to write newEnv.
func Run(t *testing.T, newEnv func(t *testing.T, o Options) *Env) {
	t.Helper()
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t, &suite{newEnv: newEnv, name: sc.name})
		})
	}
}

type scenario struct {
	name string
	run  func(t *testing.T, s *suite)
}

// Scenario names: the names of Run's subtests, and the keys of Env.Skip.
const (
	ScenarioSuccessAndReplay = "SuccessAndReplay"
	ScenarioAnswerDropped    = "AnswerDropped"
	ScenarioHangPastTimeout  = "HangPastTimeout"
	ScenarioGatewayBefore    = "Gateway502BeforeProcessing"
	ScenarioGatewayAfter     = "Gateway502AfterProcessing"
	ScenarioStoredErrors     = "StoredErrors"
	ScenarioKeyInUse         = "KeyInUse"
	ScenarioKeyMismatch      = "KeyMismatch"
	ScenarioDecline          = "Decline"
	ScenarioRefunds          = "Refunds"
	ScenarioCaptureAndCancel = "CaptureAndCancel"
	ScenarioLookupLag        = "LookupLag"
	ScenarioKeyWindowPassed  = "KeyWindowPassed"
	ScenarioSoak             = "Soak"

	ScenarioWebhookForged         = "WebhookForged"
	ScenarioWebhookReplay         = "WebhookReplay"
	ScenarioWebhookOutOfOrder     = "WebhookOutOfOrder"
	ScenarioWebhookBeforeAnswer   = "WebhookBeforeAnswer"
	ScenarioWebhookInReview       = "WebhookInReview"
	ScenarioWebhookContradiction  = "WebhookContradiction"
	ScenarioWebhookUnmatched      = "WebhookUnmatched"
	ScenarioWebhookDeliveryFaults = "WebhookDeliveryFaults"

	ScenarioWebhookEarlierGeneration = "WebhookEarlierGeneration"
	ScenarioWebhookSecondObject      = "WebhookSecondObject"
)

// lookupFaults is more failing lookup requests than one call makes.
const lookupFaults = 40

func scenarios() []scenario {
	return []scenario{
		{ScenarioSuccessAndReplay, testSuccessAndReplay},
		{ScenarioAnswerDropped, func(t *testing.T, s *suite) { testLostAnswer(t, s, mocks.FaultDropAfterProcessing) }},
		{ScenarioHangPastTimeout, func(t *testing.T, s *suite) { testLostAnswer(t, s, mocks.FaultHangAfterProcessing) }},
		{ScenarioGatewayBefore, testGatewayBefore},
		{ScenarioGatewayAfter, func(t *testing.T, s *suite) { testLostAnswer(t, s, mocks.FaultGatewayAfter502) }},
		{ScenarioStoredErrors, testStoredErrors},
		{ScenarioKeyInUse, testKeyInUse},
		{ScenarioKeyMismatch, testKeyMismatch},
		{ScenarioDecline, testDecline},
		{ScenarioRefunds, testRefunds},
		{ScenarioCaptureAndCancel, testCaptureAndCancel},
		{ScenarioLookupLag, testLookupLag},
		{ScenarioKeyWindowPassed, testKeyWindowPassed},
		{ScenarioSoak, testSoak},
		{ScenarioWebhookForged, testWebhookForged},
		{ScenarioWebhookReplay, testWebhookReplay},
		{ScenarioWebhookOutOfOrder, testWebhookOutOfOrder},
		{ScenarioWebhookBeforeAnswer, testWebhookBeforeAnswer},
		{ScenarioWebhookInReview, testWebhookInReview},
		{ScenarioWebhookContradiction, testWebhookContradiction},
		{ScenarioWebhookUnmatched, testWebhookUnmatched},
		{ScenarioWebhookDeliveryFaults, testWebhookDeliveryFaults},
		{ScenarioWebhookStripeOlderRefundEvents, testWebhookStripeOlderRefundEvents},
		{ScenarioWebhookEarlierGeneration, testWebhookEarlierGeneration},
		{ScenarioWebhookSecondObject, testWebhookSecondObject},
	}
}

// noBreaker keeps the circuit breaker closed through scripted runs of
// failing lookups: it would stay open for OpenFor on the real clock.
func noBreaker(c *payonce.Config) { c.Breaker.ConsecutiveFailures = 1000 }

// testSuccessAndReplay: a charge succeeds with one request; calling again
// with the same identity answers from the ledger without any request.
func testSuccessAndReplay(t *testing.T, s *suite) {
	b := newBench(t, s, setup{})
	res, err := b.client.Charge(b.ctx, b.charge("order-ok", 1999))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.NotEmpty(t, res.ProviderRef)
	require.False(t, res.Replayed)
	require.Equal(t, 1, res.Attempts)
	p := b.payment(res.ProviderRef)
	require.True(t, p.Authorized)
	require.Equal(t, int64(1999), p.AmountCaptured)
	require.Equal(t, res.OperationID, b.env.PaymentOperation(p), "the payment names its operation")
	require.Equal(t, b.env.WireKey(res.Key), p.IdempotencyKey, "the request carried the operation's key")
	require.Equal(t, 1, b.charges(res.OperationID))
	require.Equal(t, 1, b.posts(b.env.Charge))

	requests := b.requests()
	again, err := b.client.Charge(b.ctx, b.charge("order-ok", 1999))
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, res.ProviderRef, again.ProviderRef)
	require.Equal(t, requests, b.requests(), "a settled operation is answered from the ledger: no request at all")

	op, atts := b.get(res.OperationID)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	require.Len(t, atts, 1)
	if b.env.WebhookOnly && atts[0].Outcome == ledger.OutcomeMaybeSent {
		// The provider's webhook settled the operation before the answer
		// was recorded, and closed the attempt.
		require.Contains(t, atts[0].Error, "superseded by webhook", Describe(op, atts))
	} else {
		require.Equal(t, ledger.OutcomeSuccess, atts[0].Outcome)
	}
	require.Equal(t, start, op.WindowStart)
	require.Equal(t, start.Add(b.opts.KeyTTL), op.KeyExpiresAt)
}

// testLostAnswer: the charge is made, but its answer never arrives whole
// (the connection drops, the answer hangs past the client's timeout, a
// proxy answers 502). The lookup finds the payment: one charge, one POST.
func testLostAnswer(t *testing.T, s *suite, f mocks.FaultKind) {
	b := newBench(t, s, setup{})
	b.env.Fake.Script(b.env.Charge, f)
	began := time.Now()
	res, err := b.found(b.env.Charge, func() (payonce.Result, error) { return b.client.Charge(b.ctx, b.charge("order-"+f.String(), 2500)) })
	require.NoError(t, err, "the lookup finds the payment")
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	if f == mocks.FaultHangAfterProcessing {
		require.Less(t, time.Since(began), b.opts.HangFor, "the client gave up on the hanging answer")
	}
	require.Equal(t, 1, b.charges(res.OperationID), "charged exactly once")
	require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge), "found by lookup: never sent again")
	require.Equal(t, 1, b.truth().Faults[f])
	p := b.payment(res.ProviderRef)
	require.Equal(t, int64(2500), p.AmountCaptured)
	op, atts := b.get(res.OperationID)
	b.requireFoundAttempts(op, atts)
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
}

// testGatewayBefore: a proxy answers 502 before the provider saw anything.
// "Not found" counts only after the lookup lag; then the same key is sent
// again and the charge is made once.
func testGatewayBefore(t *testing.T, s *suite) {
	b := newBench(t, s, setup{})
	p, res, err := b.chargeAfter(mocks.FaultGatewayBefore502, "order-gw-before", 1500)
	if b.env.RepeatIsLookup {
		// Nothing to look up: the same-key repeat is the lookup, at once.
		b.requireRepeated(res, err, http.StatusBadGateway)
		return
	}
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "not found proves nothing before the lookup lag")
	require.Equal(t, payonce.ResultUnknown, res.Status)
	require.Zero(t, b.charges(res.OperationID))
	require.Equal(t, 1, b.posts(b.env.Charge))
	op, _ := b.get(res.OperationID)
	require.Equal(t, start, op.WindowStart, "a 502 may come after the provider saw the request: the window is open")

	b.pastLag()
	res, err = b.client.Charge(b.ctx, p)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, 1, b.charges(res.OperationID))
	require.Equal(t, 2, b.posts(b.env.Charge))
	op, atts := b.get(res.OperationID)
	require.Len(t, atts, 2, Describe(op, atts))
	require.Equal(t, http.StatusBadGateway, atts[0].HTTPStatus)
	require.Equal(t, atts[0].Key, atts[1].Key, "a resend carries the same key")
	require.Equal(t, start, op.WindowStart, "the window starts at the first attempt that may have reached the provider")
}

// testStoredErrors: the provider's own 500s, and what its idempotency layer
// keeps under the key after them (Env.StoredErrors).
func testStoredErrors(t *testing.T, s *suite) {
	// A 500 before anything was processed.
	t.Run("stored_500", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{})
		p, res, err := b.chargeAfter(mocks.FaultStored500, "order-stored-500", 1500)
		if b.env.RepeatIsLookup && b.env.StoredErrors != StoredErrorsReplayed {
			// The 500 is not kept under the key: the same-key repeat (the
			// lookup) is processed, once.
			b.requireRepeated(res, err, http.StatusInternalServerError)
			return
		}
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "not found proves nothing before the lookup lag")
		require.Zero(t, b.charges(res.OperationID))
		b.clock.Advance(b.opts.LookupLag / 2)
		_, err = b.client.Charge(b.ctx, p)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "still inside the lookup lag")
		require.Equal(t, 1, b.posts(b.env.Charge))

		b.pastLag()
		res, err = b.client.Charge(b.ctx, p)
		if b.env.StoredErrors != StoredErrorsReplayed {
			// The 500 was not kept: the resend with the same key is
			// processed, once.
			require.NoError(t, err, "%s does not replay a 500: the same-key resend is processed", b.env.Provider.Name())
			require.Equal(t, 1, b.charges(res.OperationID))
			op, atts := b.get(res.OperationID)
			require.Len(t, atts, 2, Describe(op, atts))
			require.Equal(t, atts[0].Key, atts[1].Key, "a resend carries the same key")
			require.Equal(t, start, op.WindowStart)
			return
		}
		// The 500 is replayed to every resend with the key: the outcome
		// stays unknown inside the window, and after it the operation goes
		// to review without another POST.
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the stored 500 is replayed for the same key")
		// Each resend got the stored 500; an adapter that knows the first
		// 500 is final for the key (Adyen: no Transient-Error: true) sends
		// none.
		require.Equal(t, b.posts(b.env.Charge)-1, b.truth().Replays)
		require.Zero(t, b.charges(res.OperationID))

		res, _ = b.reviewPastWindow(p, "the stored 500 is replayed up to the end of the window")
		require.Zero(t, b.charges(res.OperationID))
		op, _ := b.get(res.OperationID)
		require.False(t, op.NextCheckAt.IsZero(), "review keeps read-only lookups going")
	})

	// The payment is made, then the provider fails with its own 500.
	t.Run("processed_500", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{})
		b.env.Fake.Script(b.env.Charge, mocks.FaultProcessed500)
		res, err := b.found(b.env.Charge, func() (payonce.Result, error) { return b.client.Charge(b.ctx, b.charge("order-processed-500", 2500)) })
		require.NoError(t, err, "the lookup finds the payment")
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.Equal(t, 1, b.charges(res.OperationID))
		require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge), "found by lookup: never sent again")
		require.Equal(t, 1, b.truth().Faults[mocks.FaultProcessed500])
		op, atts := b.get(res.OperationID)
		b.requireFoundAttempts(op, atts)
		require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
		if b.env.WebhookOnly && atts[0].HTTPStatus == 0 {
			// The webhook settled it before the 500 was recorded.
			require.Contains(t, atts[0].Error, "superseded by webhook", Describe(op, atts))
		} else {
			require.Equal(t, http.StatusInternalServerError, atts[0].HTTPStatus)
		}

		// What a same-key repeat gets, which is why the client looks up
		// before it resends.
		switch b.env.StoredErrors {
		case StoredErrorsReplayed:
			out := b.repeat(res.OperationID)
			require.Equal(t, ledger.OutcomeMaybeSent, out.Class, "a repeat gets the stored 500 again")
			require.Equal(t, http.StatusInternalServerError, out.HTTPStatus)
			require.Equal(t, 1, b.charges(res.OperationID))
		case StoredErrorsRealOutcome:
			out := b.repeat(res.OperationID)
			require.Equal(t, ledger.OutcomeSuccess, out.Class, "a repeat learns the real outcome")
			require.Equal(t, res.ProviderRef, out.ProviderRef)
			require.Equal(t, 1, b.charges(res.OperationID))
		case StoredErrorsForgotten:
			t.Logf("%s forgets the key after a 5xx: a same-key repeat would be a second payment; only the lookup before any resend prevents it (not repeated here)",
				b.env.Provider.Name())
		}
	})

	// The payment is made, then a 500; the lookups fail for a while. The
	// client must not resend while it cannot tell: after a forgotten 500
	// that would be a second payment.
	t.Run("processed_500_lookup_fails_first", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{config: noBreaker})
		b.skipWebhookOnly("its webhook settles the payment, as processed_500 shows")
		p, res, err := b.chargeBlind(mocks.FaultProcessed500, "order-processed-500-lookup", 2500)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the lookup failed: check later")
		require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge), "no resend while the lookup cannot answer")
		op, _ := b.get(res.OperationID)
		require.Equal(t, ledger.StatusUnknown, op.Status)
		require.Empty(t, op.LeaseOwner, "the lease is released for background work")

		b.env.Fake.ClearScripts()
		b.pastLag()
		res, err = b.afterRepeatPacing(res.OperationID, func() (payonce.Result, error) { return b.client.Charge(b.ctx, p) })
		require.NoError(t, err)
		require.Equal(t, 1, b.charges(res.OperationID))
		require.Equal(t, b.sentCharges(res.OperationID), b.posts(b.env.Charge))
	})
}

func repeated(f mocks.FaultKind, n int) []mocks.FaultKind {
	out := make([]mocks.FaultKind, n)
	for i := range out {
		out[i] = f
	}
	return out
}

// testKeyInUse: the first request with the key is still running at the
// provider (slow) when the client resends; the provider says so in its own
// way (Env.KeyInUseStatus). The operation settles with one charge once the
// first request finishes.
func testKeyInUse(t *testing.T, s *suite) {
	// The slow request ends when the test releases it.
	b := newBench(t, s, setup{opts: func(o *Options) { o.SlowFor = 10 * time.Minute }})
	p, res, err := b.chargeAfter(mocks.FaultSlow, "order-key-in-use", 3100)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the attempt timed out and nothing is visible yet")
	id := res.OperationID
	require.Zero(t, b.charges(id))

	if !b.env.RepeatIsLookup {
		b.pastLag()
		res, err = b.client.Charge(b.ctx, p)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the provider is still running the first request")
	}
	// Where the same-key repeat is the lookup, the first call made it
	// already, and met the first request running.
	op, atts := b.get(id)
	if !b.env.RepeatIsLookup {
		require.Len(t, atts, 2, Describe(op, atts))
	}
	require.GreaterOrEqual(t, len(atts), 2, Describe(op, atts))
	last := atts[len(atts)-1]
	require.Equal(t, ledger.OutcomeKeyInUse, last.Outcome, Describe(op, atts))
	require.Equal(t, b.env.KeyInUseStatus, last.HTTPStatus, "the provider's own key-in-use answer")
	require.Equal(t, atts[0].Key, last.Key)
	require.GreaterOrEqual(t, b.truth().KeyInUse, 1)
	require.Zero(t, b.charges(id))

	b.env.Fake.Release() // the first request now runs
	b.waitFor("the slow request to be processed", func() bool { return b.charges(id) == 1 })
	b.awaitWebhooks()
	posts := b.posts(b.env.Charge)
	res, err = b.afterRepeatPacing(id, func() (payonce.Result, error) { return b.client.Charge(b.ctx, p) })
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, 1, b.charges(id))
	if b.env.RepeatIsLookup {
		posts = b.sentCharges(id) // the same-key repeat that learnt it
	}
	require.Equal(t, posts, b.posts(b.env.Charge), "found by lookup")
	require.Equal(t, int64(3100), b.payment(res.ProviderRef).AmountCaptured)
}

// testKeyMismatch: the provider already holds the operation's key with
// another request; it says so and the operation goes to review.
func testKeyMismatch(t *testing.T, s *suite) {
	const mismatchOrder, otherOrder = "order-mismatch", "order-someone-else"
	b := newBench(t, s, setup{})
	if !b.env.ReportsKeyMismatch {
		t.Skipf("%s does not report a key reused with another request as a mismatch (Env.ReportsKeyMismatch is false)", b.env.Provider.Name())
	}
	id := b.opID(payonce.KindCharge, mismatchOrder)
	// Someone else sent another payment under this operation's key.
	foreign := payonce.Request{Kind: payonce.KindCharge, Amount: 999, Currency: b.env.Currency,
		References: []string{otherOrder}, PaymentMethod: b.env.GoodMethod, Customer: b.env.Customer}
	out := b.send(payonce.SendRequest{OperationID: b.opID(payonce.KindCharge, otherOrder), Key: id, Request: foreign})
	require.Equal(t, ledger.OutcomeSuccess, out.Class)

	res, err := b.client.Charge(b.ctx, b.charge(mismatchOrder, 1500))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, payonce.ResultManualReview, res.Status)
	require.Equal(t, payonce.ReasonKeyMismatch, res.ReviewReason)
	require.Equal(t, 1, b.truth().KeyMismatch)
	require.Zero(t, b.charges(id))
	require.Equal(t, 2, b.allPosts(), "the foreign request and ours; no resend")
	_, atts := b.get(id)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeKeyMismatch, atts[0].Outcome)
}

// testDecline: a decline is final, with the provider's codes, and replayed
// from the ledger.
func testDecline(t *testing.T, s *suite) {
	const declinedOrder = "order-declined"
	b := newBench(t, s, setup{})
	p := b.charge(declinedOrder, 1500)
	p.PaymentMethod = b.env.DeclinedMethod
	// The call's own answer is what carries the provider's decline codes;
	// an event that settles the operation first (Adyen's AUTHORISATION
	// with success false, sent as soon as the payment is refused) carries
	// no refusal code, and the call then reports the failure the ledger
	// recorded. Webhooks wait until the call has answered: this scenario
	// checks the answer, WebhookBeforeAnswer the event.
	b.hooks.Hold()
	res, err := b.client.Charge(b.ctx, p)
	b.hooks.Release()
	require.ErrorIs(t, err, payonce.ErrDeclined)
	var de *payonce.DeclinedError
	require.True(t, errors.As(err, &de), "%T", err)
	require.Equal(t, b.env.Provider.Name(), de.Provider)
	for _, f := range []struct{ name, want, got string }{
		{"Code", b.env.DeclineErrorCode, de.Code},
		{"DeclineCode", b.env.DeclineCode, de.DeclineCode},
		{"Message", b.env.DeclineMessage, de.Message},
	} {
		if f.want != "" {
			require.Equal(t, f.want, f.got, "DeclinedError.%s", f.name)
		} else {
			require.NotEmpty(t, f.got, "DeclinedError.%s: the provider's words", f.name)
		}
	}
	require.NotEmpty(t, de.ProviderRef, "the declined payment is named")
	require.Equal(t, payonce.ResultFailed, res.Status)
	require.Equal(t, de.DeclineCode, res.DeclineCode)
	require.Zero(t, b.charges(res.OperationID))

	requests := b.requests()
	again, err := b.client.Charge(b.ctx, p)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.True(t, again.Replayed)
	require.Equal(t, payonce.ResultFailed, again.Status)
	require.Equal(t, de.Code, again.Code)
	require.Equal(t, de.DeclineCode, again.DeclineCode)
	require.Equal(t, requests, b.requests(), "a decline is replayed from the ledger")
	op, _ := b.get(res.OperationID)
	require.Equal(t, ledger.StatusFailed, op.Status)
}

// testRefunds: partial refunds of one charge (one with its answer lost), an
// over-refund payonce refuses from the ledger, the same one sent with
// PaymentRef (nothing read) that the provider refuses and the ledger records
// as failed, and the rest refunded exactly.
func testRefunds(t *testing.T, s *suite) {
	const order = "order-refunds"
	b := newBench(t, s, setup{})
	ch, err := b.client.Charge(b.ctx, b.charge(order, 10000))
	require.NoError(t, err)
	refund := func(seq int, amount int64) func() (payonce.Result, error) {
		return func() (payonce.Result, error) { return b.client.Refund(b.ctx, b.refund(order, seq, amount)) }
	}

	r1, err := b.act(b.env.Refund, refund(1, 3000))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r1.Status)
	require.NotEmpty(t, r1.ProviderRef)
	requests := b.requests()
	again, err := refund(1, 3000)()
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, requests, b.requests(), "a settled refund is answered from the ledger")

	// The answer of refund #2 is lost; the lookup finds the refund.
	b.env.Fake.Script(b.env.Refund, mocks.FaultDropAfterProcessing)
	r2, err := b.found(b.env.Refund, refund(2, 2000))
	require.NoError(t, err, "the lookup finds the refund")
	require.Equal(t, payonce.ResultSucceeded, r2.Status)
	require.Equal(t, 2, b.posts(b.env.Refund), "found by lookup: never sent again")

	// More than what remains (5000), without PaymentRef: payonce refuses it
	// from the ledger before anything is recorded or sent.
	_, err = refund(3, 6000)()
	require.ErrorIs(t, err, payonce.ErrInvalid, "an over-refund is refused before it is sent")
	require.Equal(t, 2, b.posts(b.env.Refund), "a refused over-refund sends nothing")

	// With PaymentRef nothing is read: the provider refuses it, the ledger
	// records it as failed and replays it.
	overRefund := func() (payonce.Result, error) {
		p := b.refund(order, 3, 6000)
		p.PaymentRef = ch.ProviderRef
		return b.client.Refund(b.ctx, p)
	}
	r3, err := b.found(b.env.Refund, overRefund)
	require.ErrorIs(t, err, payonce.ErrDeclined, "an over-refund is the provider's refusal")
	require.Equal(t, payonce.ResultFailed, r3.Status)
	op, _ := b.get(r3.OperationID)
	require.Equal(t, ledger.StatusFailed, op.Status)
	posts := b.posts(b.env.Refund)
	_, err = overRefund()
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, posts, b.posts(b.env.Refund))

	r4, err := b.act(b.env.Refund, refund(4, 5000))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r4.Status)

	require.Equal(t, 4, b.posts(b.env.Refund), "one POST per refund")
	p := b.payment(ch.ProviderRef)
	require.Equal(t, int64(10000), p.AmountCaptured)
	require.Equal(t, int64(10000), p.AmountRefunded)
	for _, r := range []payonce.Result{r1, r2, r4} {
		got := b.refundsOf(r.OperationID)
		require.Len(t, got, 1, "refund %s", r.OperationID)
		require.Equal(t, r.ProviderRef, got[0].ID)
		require.Equal(t, ch.ProviderRef, got[0].PaymentID)
		require.Equal(t, "succeeded", got[0].Status)
	}
	if b.env.WebhookOnly {
		// Accepted ("received"), then reported failed by webhook: the
		// provider holds a failed refund, which moved nothing.
		for _, r := range b.refundsOf(r3.OperationID) {
			require.Equal(t, "failed", r.Status, "the refused over-refund moved nothing")
		}
	} else {
		require.Empty(t, b.refundsOf(r3.OperationID), "the refused over-refund moved nothing")
	}
}

// testCaptureAndCancel: captures and cancels of authorizations, each plain
// and with its answer lost after it took effect; a cancel after a capture
// and a capture after a cancel are refused.
func testCaptureAndCancel(t *testing.T, s *suite) {
	b := newBench(t, s, setup{})
	if !b.env.TwoStage {
		t.Skipf("%s: no capture and cancel (Env.TwoStage is false)", b.env.Provider.Name())
	}
	authorized := map[string]int64{}
	authorize := func(order string, amount int64) string {
		t.Helper()
		authorized[order] = amount
		p := b.charge(order, amount)
		p.CaptureManual = true
		res, err := b.client.Charge(b.ctx, p)
		require.NoError(t, err)
		pay := b.payment(res.ProviderRef)
		require.True(t, pay.Authorized)
		require.Zero(t, pay.AmountCaptured, "authorized only")
		return res.ProviderRef
	}
	capture := func(order string, amount int64) func() (payonce.Result, error) {
		if amount == 0 && b.env.NoFullCapture {
			amount = authorized[order]
		}
		return func() (payonce.Result, error) {
			return b.client.Capture(b.ctx, payonce.CaptureParams{OrderID: order, Amount: amount, Currency: b.env.Currency})
		}
	}
	cancel := func(order string) func() (payonce.Result, error) {
		return func() (payonce.Result, error) { return b.client.Cancel(b.ctx, payonce.CancelParams{OrderID: order}) }
	}

	// A partial capture, plain; a cancel after it is refused.
	a := authorize("order-capture", 5000)
	c, err := b.act(b.env.Capture, capture("order-capture", 4000))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, c.Status)
	require.Equal(t, int64(4000), b.payment(a).AmountCaptured)
	requests := b.requests()
	again, err := capture("order-capture", 4000)()
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, requests, b.requests())
	_, err = b.found(b.env.Cancel, cancel("order-capture"))
	require.ErrorIs(t, err, payonce.ErrDeclined, "a captured payment cannot be canceled")

	// A full capture answered 500 after it was made: found by lookup.
	lost := authorize("order-capture-500", 700)
	b.env.Fake.Script(b.env.Capture, mocks.FaultProcessed500)
	c, err = b.found(b.env.Capture, capture("order-capture-500", 0))
	require.NoError(t, err, "the lookup finds the capture")
	require.Equal(t, payonce.ResultSucceeded, c.Status)
	require.Equal(t, int64(700), b.payment(lost).AmountCaptured)
	require.Equal(t, 2, b.posts(b.env.Capture), "found by lookup: never sent again")

	// A cancel, plain; a capture after it is refused.
	held := authorize("order-cancel", 800)
	x, err := b.act(b.env.Cancel, cancel("order-cancel"))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, x.Status)
	_, err = b.found(b.env.Capture, capture("order-cancel", 0))
	require.ErrorIs(t, err, payonce.ErrDeclined, "a canceled authorization cannot be captured")
	require.Zero(t, b.payment(held).AmountCaptured)

	// A cancel whose answer is dropped: found by lookup.
	dropped := authorize("order-cancel-drop", 900)
	b.env.Fake.Script(b.env.Cancel, mocks.FaultDropAfterProcessing)
	x, err = b.found(b.env.Cancel, cancel("order-cancel-drop"))
	require.NoError(t, err, "the lookup finds the cancel")
	require.Equal(t, payonce.ResultSucceeded, x.Status)
	require.Zero(t, b.payment(dropped).AmountCaptured)
	require.Equal(t, 3, b.posts(b.env.Cancel), "one refused, two made; no resend")
	require.Equal(t, 3, b.posts(b.env.Capture), "two made, one refused; no resend")
	require.Equal(t, int64(4700), b.truth().TotalCharged(b.env.Currency))
}

// testLookupLag: a "not found" inside the lookup lag does not lead to a
// resend; after the lag it does. Where the fake's search really lags
// (Env.FakeLag), a payment that exists but is not visible yet is never
// charged again.
func testLookupLag(t *testing.T, s *suite) {
	t.Run("nothing_processed", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{})
		b.env.Fake.Script(b.env.Charge, mocks.FaultGatewayBefore502)
		p := b.charge("order-lag", 1200)
		for _, d := range []time.Duration{0, b.opts.LookupLag / 2, b.opts.LookupLag/2 - time.Second} {
			b.clock.Advance(d)
			_, err := b.client.Charge(b.ctx, p)
			require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "%v after the attempt: inside the lag", b.clock.Now().Sub(start))
			require.Equal(t, 1, b.posts(b.env.Charge), "a not-found inside the lag proves nothing: no resend")
		}
		b.clock.Advance(2 * time.Second)
		res, err := b.client.Charge(b.ctx, p)
		require.NoError(t, err, "past the lag: resent with the same key")
		require.Equal(t, 2, b.posts(b.env.Charge))
		require.Equal(t, 1, b.charges(res.OperationID))
	})

	t.Run("payment_not_visible_yet", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{opts: func(o *Options) { o.FakeLag = o.LookupLag / 2 }})
		if !b.env.FakeLag {
			t.Skipf("%s: the fake's lookups do not lag (Env.FakeLag is false)", b.env.Provider.Name())
		}
		p, res, err := b.chargeAfter(mocks.FaultDropAfterProcessing, "order-invisible", 1300)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the payment is not visible yet")
		require.Equal(t, 1, b.charges(res.OperationID))
		b.clock.Advance(b.opts.FakeLag / 2)
		_, err = b.client.Charge(b.ctx, p)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		require.Equal(t, 1, b.posts(b.env.Charge), "no resend inside the lag")
		b.clock.Advance(b.opts.FakeLag)
		res, err = b.client.Charge(b.ctx, p)
		require.NoError(t, err, "visible now")
		require.Equal(t, 1, b.posts(b.env.Charge))
		require.Equal(t, 1, b.charges(res.OperationID))
	})
}

// testKeyWindowPassed: the outcome is still unknown when the key window
// passes. The operation goes to review and nothing is posted again, whether
// the lookup says "not found" or cannot answer; the reconciler's read-only
// lookups settle it once the provider answers.
func testKeyWindowPassed(t *testing.T, s *suite) {
	t.Run("not_found", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{config: noBreaker})
		lost := b.chargeAfter
		if b.env.RepeatIsLookup {
			// The repeats (the lookup) fail too, or the first call
			// would learn the outcome.
			lost = b.chargeBlind
		}
		p, _, err := lost(mocks.FaultGatewayBefore502, "order-window", 1500)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		res, posts := b.reviewPastWindow(p, "the window passed and nothing was found")
		require.Zero(t, b.charges(res.OperationID))
		op, _ := b.get(res.OperationID)
		require.False(t, op.NextCheckAt.IsZero(), "review keeps read-only lookups going")

		_, err = b.client.Charge(b.ctx, p)
		require.ErrorIs(t, err, payonce.ErrManualReview)
		require.Equal(t, posts, b.allPosts())
	})

	t.Run("lookup_fails", func(t *testing.T) {
		t.Parallel()
		b := newBench(t, s, setup{config: noBreaker})
		b.skipWebhookOnly("its webhook settles the charge before the window passes; WebhookInReview covers an event settling a review")
		p, res, err := b.chargeBlind(mocks.FaultGatewayAfter502, "order-window-lookup", 1500)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		id := res.OperationID
		require.Equal(t, 1, b.charges(id))

		_, posts := b.reviewPastWindow(p, "the window passed and the lookup cannot answer")

		// The provider answers again: the reconciler's read-only lookup
		// settles the review with the payment.
		b.env.Fake.ClearScripts()
		op, _ := b.get(id)
		b.clock.Set(op.NextCheckAt.Add(time.Second))
		rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, Now: b.clock.Now})
		require.NoError(t, err)
		_, err = rec.RunOnce(b.ctx)
		require.NoError(t, err)
		op, atts := b.get(id)
		require.Equal(t, ledger.StatusSucceeded, op.Status, Describe(op, atts))
		require.Equal(t, b.truth().Payments[0].ID, op.ProviderRef)
		require.Equal(t, posts, b.allPosts())
		require.Equal(t, 1, b.charges(id))
	})
}

// requireFoundAttempts checks the attempts of a charge whose answer was
// lost and which a lookup found: the one attempt, or, where the same-key
// repeat is the lookup (Env.RepeatIsLookup), the first and the repeat that
// learnt the outcome, with the same key.
func (b *bench) requireFoundAttempts(op ledger.Operation, atts []ledger.Attempt) {
	b.t.Helper()
	if !b.env.RepeatIsLookup {
		require.Len(b.t, atts, 1, Describe(op, atts))
		return
	}
	require.GreaterOrEqual(b.t, len(atts), 2, Describe(op, atts))
	last := atts[len(atts)-1]
	require.Equal(b.t, ledger.OutcomeSuccess, last.Outcome, "the same-key repeat learnt the outcome: %s", Describe(op, atts))
	for _, a := range atts {
		require.Equal(b.t, op.Key, a.Key, "a repeat carries the same key")
	}
}

// requireRepeated checks a charge whose first attempt got status from
// before the provider processed it, where the same-key repeat is the
// lookup (Env.RepeatIsLookup): the first call repeated it at once, with
// the same key, and the repeat charged once.
func (b *bench) requireRepeated(res payonce.Result, err error, status int) {
	b.t.Helper()
	require.NoError(b.t, err, "the same-key repeat is processed")
	require.Equal(b.t, payonce.ResultSucceeded, res.Status)
	require.Equal(b.t, 1, b.charges(res.OperationID))
	op, atts := b.get(res.OperationID)
	require.Len(b.t, atts, 2, Describe(op, atts))
	require.Equal(b.t, status, atts[0].HTTPStatus)
	require.Equal(b.t, atts[0].Key, atts[1].Key, "a repeat carries the same key")
	require.Equal(b.t, 2, b.posts(b.env.Charge))
	require.Equal(b.t, start, op.WindowStart, "the window starts at the first attempt that may have reached the provider")
}

// afterRepeatPacing makes call, which settles operation id. Where the
// same-key repeat is the lookup (Env.RepeatIsLookup), the client paces the
// repeats of one operation with growing intervals, which after several
// failed repeats outlast the lookup lag other providers wait for: while the
// call reports the outcome unknown, the clock moves to the operation's next
// check and the call is made again (a few times at most).
func (b *bench) afterRepeatPacing(id string, call func() (payonce.Result, error)) (payonce.Result, error) {
	b.t.Helper()
	res, err := call()
	for range 3 {
		if !b.env.RepeatIsLookup || !errors.Is(err, payonce.ErrOutcomeUnknown) {
			break
		}
		if op, _ := b.get(id); op.NextCheckAt.After(b.clock.Now()) {
			b.clock.Set(op.NextCheckAt.Add(time.Second))
		}
		res, err = call()
	}
	return res, err
}

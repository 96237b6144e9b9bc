// Package providertest is the conformance suite every provider adapter must
// pass, together with its fake. Each scenario drives a real payonce.Client
// (SQLite ledger in t.TempDir, keep-alives off so that a dropped answer is
// seen as one) against a fresh fake, injects the faults that make payments
// hard, and checks the fake's truth: whatever happened, no operation was
// charged or refunded twice and no payment was refunded beyond what it
// captured. That check runs at the end of every scenario.
//
// An adapter gets the whole suite with one test function. It builds, for
// each subtest, a fresh fake from the Options and the adapter pointed at it,
// and describes the provider's behaviour as data:
//
//	func TestProviderSuite(t *testing.T) {
//		t.Parallel()
//		providertest.Run(t, func(t *testing.T, o providertest.Options) *providertest.Env {
//			fake := mocks.NewStripe(mocks.StripeOptions{
//				Clock: o.Clock.Now, KeyTTL: o.KeyTTL, SearchLag: o.FakeLag, Seed: o.Seed,
//				FaultRates: o.FaultRates, FaultGETs: o.FaultGETs,
//				HangFor: o.HangFor, SlowFor: o.SlowFor, RetryAfter: o.RetryAfter,
//			})
//			t.Cleanup(fake.Close)
//			psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(),
//				KeyTTL: o.KeyTTL, SearchLag: o.LookupLag, Now: o.Clock.Now})
//			require.NoError(t, err)
//			return &providertest.Env{
//				Provider: psp, Fake: fake,
//				Charge:  mocks.Match{Method: "POST", Path: "/v1/payment_intents"},
//				Capture: mocks.Match{Method: "POST", Path: "/v1/payment_intents/{id}/capture"},
//				Cancel:  mocks.Match{Method: "POST", Path: "/v1/payment_intents/{id}/cancel"},
//				Refund:  mocks.Match{Method: "POST", Path: "/v1/refunds"},
//				GoodMethod: "pm_card_visa", DeclinedMethod: "pm_card_chargeDeclinedInsufficientFunds",
//				StoredErrors:       providertest.StoredErrorsReplayed,
//				KeyInUseStatus:     http.StatusConflict,
//				ReportsKeyMismatch: true,
//				TwoStage:           true,
//				FakeLag:            true,
//			}
//		})
//	}
//
// The function must apply every Option: the shared manual clock to the fake
// and to the adapter's Now, KeyTTL to both (the suite checks the adapter's
// Info), LookupLag to the adapter's lag for lookups by operation id, and the
// fault options to the fake. The suite moves the clock; nothing sleeps for
// a key window or a lag.
//
// # Scenarios
//
// Each is a parallel subtest of Run, named by the Scenario constants:
//
//   - SuccessAndReplay: one request, the payment names its operation and
//     carries its key; the replay makes no request at all.
//   - AnswerDropped, HangPastTimeout, Gateway502AfterProcessing: the charge
//     is made but its answer is lost; the lookup finds it: one charge, one
//     POST.
//   - Gateway502BeforeProcessing: nothing was made; "not found" counts only
//     after the lookup lag, then the same key is resent: one charge.
//   - StoredErrors: a 500 before processing, then Env.StoredErrors decides:
//     replayed (Stripe) keeps the outcome unknown and sends the operation
//     to review after the key window with no POST outside it; otherwise the
//     same-key resend is processed once. A 500 after processing is found by
//     the lookup, never resent (a resend would be a second payment where
//     the provider forgets the key, Checkout.com), also while the lookups
//     fail for a while; a direct same-key repeat confirms the declared rule.
//   - KeyInUse: the first request is still running when the client resends;
//     the provider's own answer (Env.KeyInUseStatus) is recorded as
//     key_in_use and the operation settles with one charge.
//   - KeyMismatch: the key already holds another request; the operation
//     goes to review with payonce.ReasonKeyMismatch. Skipped where the
//     provider cannot say so (Env.ReportsKeyMismatch false: Checkout.com).
//   - Decline: failed with the provider's codes, replayed from the ledger.
//   - Refunds: partial refunds, one with its answer lost; an over-refund
//     refused by the provider and recorded failed; the rest refunded exactly.
//   - CaptureAndCancel (Env.TwoStage): captures and cancels, plain and with
//     the answer lost; cancel after capture and capture after cancel are
//     refused. Env.AcceptsActions declares providers that accept actions
//     and finish them later (Checkout.com's 202).
//   - LookupLag: a "not found" inside the lag never leads to a resend; where
//     the fake's search really lags (Env.FakeLag), a payment not visible yet
//     is not charged again.
//   - KeyWindowPassed: the outcome is unknown when the key window passes:
//     review and no POST, whether the lookup says "not found" or fails; the
//     reconciler's read-only lookup settles the review later.
//   - Soak: 300 charges and 100 refunds with a fifth of the requests that
//     move money meeting a fault of every kind mocks knows, settled by
//     calling again with the same identity while the clock moves past
//     leases and lags, then past the key windows, and by the reconciler's
//     read-only lookups of what went to review. Checks: no operation
//     charged or refunded twice, no refund beyond its charge, every
//     operation succeeded, failed or in review, the ledger in agreement with
//     the fake, no attempt sent after its key window. With -short it runs
//     120 charges and 40 refunds.
//
// The webhook scenarios run every adapter that implements
// payonce.WebhookParser against its fake's signed deliveries (Options.Webhooks,
// delivered to a loopback receiver serving the client's WebhookHandler; the
// environment adds the provider's credentials and configures its adapter to
// verify them):
//
//   - WebhookForged: Env.WebhookForgeries (another secret, a changed body,
//     wrong credentials, a source not allowed) are refused with 400, 401 or
//     403; nothing is recorded and the operation does not move.
//   - WebhookReplay: every event delivered twice, then each delivery posted
//     again byte for byte: acknowledged, recorded once, nothing changed.
//   - WebhookOutOfOrder (Env.TwoStage): a capture's event before its
//     authorization's; the older one never moves anything back.
//   - WebhookBeforeAnswer: the event arrives while the answer hangs (it
//     settles the operation in flight, the call reports the settled
//     result) or after the answer was lost and the lookups failed (it
//     settles it, an audit entry naming the event); nothing sent twice.
//   - WebhookInReview: an operation in review because the key window passed
//     is settled by the event, with a resolution naming it.
//   - WebhookContradiction: Env.Reversal undoes a settled operation; it
//     goes to review with ledger.ReasonWebhookContradiction and the event's
//     type, and no lookup settles it again. Providers without such an
//     event list it in Env.Skip (YooKassa).
//   - WebhookUnmatched: events about a payment payonce did not make are
//     acknowledged and kept as unmatched; no operation is created.
//   - WebhookDeliveryFaults: deliveries duplicated, failed and reordered
//     while answers are lost: every operation settled, one provider object
//     each, no duplicates (Truth.Duplicates), no resend, CheckLedger.
//   - WebhookEarlierGeneration: Env.Reversal undoes a capture or refund
//     made under key generation 0, which gets to review (by the reversal
//     event, or with its answer lost past the key window) while its events
//     are held back; the operator's resend (Client.Resolve) is allowed and
//     generation 1 is pending. Generation 0's late failure settles nothing
//     (other_object, or nudged where the ledger cannot tell the
//     generation); the reconciler sends generation 1, which settles on its
//     own object; generation 0's late success, older than its failure, is
//     recorded and changes nothing, never a confirmation. Providers
//     without a Reversal list it in Env.Skip (YooKassa).
//   - WebhookSecondObject: a second payment made at the provider under the
//     operation's id with another key (after the charge settled, or while
//     its outcome is unknown): its event, or the lookup a notice prompts,
//     puts the operation in review as duplicated; the caller's next call
//     reports it and no resend is allowed. A notice (YooKassa) about a
//     second payment of a settled charge is recorded and changes nothing.
//   - WebhookStripeOlderRefundEvents (Stripe): on endpoints older than API
//     version 2024-10-28 a refund that fails after it succeeded arrives as
//     charge.refund.updated and sends the operation to review.
//
// Where events are not signed (Env.WebhooksLookupOnly, YooKassa) an event
// must only make the operation due for a lookup ("nudged"), and the lookup
// settles it; so must an event that names only the payment (a capture or
// refund whose answer was lost). A provider without a status lookup
// (Env.WebhookOnly, Adyen) gets webhooks in every scenario, and where the
// suite expects a lookup to find what a lost answer did, the webhook tells
// instead; the two subtests about lookups that fail are skipped for it.
//
// Where a charge has nothing to be looked up by until its request answered
// with the provider's id, and the provider answers a same-key repeat with
// the first request's latest status (Env.RepeatIsLookup, PayPal's Orders),
// the repeat is the charge's lookup, made at once: the scenarios expect it
// where they expect a lookup to find a lost charge (one POST per attempt the
// ledger journaled, one payment), make the repeats fail where they make the
// lookups fail, and the client's pacing of repeats is waited out by moving
// the clock to the operation's next check.
//
// Where the adapter verifies an event by reading its object from the
// provider (Env.WebhookReads, PayPal), deliveries make GETs: the webhook
// scenarios count only POSTs after a delivery, and let lookups work again
// before they hand held deliveries over.
//
// The soak also runs alone, at another size and on another ledger: Soak
// with a SoakConfig (the root package runs it with StripeEnv on
// PostgreSQL). Its checks of the ledger against the fake's truth are
// CheckLedger, which other process-level tests share.
//
// The environments of the adapters in this repository are StripeEnv,
// YooKassaEnv, CheckoutEnv, AdyenEnv and PayPalEnv (PayPalEnvConfig for
// webhooks verified by PayPal's API, or an Orders window that differs
// from the Payments one). Requests that move no money and look nothing up
// (PayPal's token call, webhook certificate and verification call) are
// named in Env.Auxiliary and left out of the counts of what was sent and
// requested; a scenario's subtest an adapter cannot run is listed in
// Env.Skip as "Scenario/subtest".
//
// A scenario an adapter cannot run at all is listed in Env.Skip with the
// reason. Run one scenario with, for example,
//
//	go test -race -run 'TestProviderSuite/KeyInUse' ./providers/stripe/
package providertest

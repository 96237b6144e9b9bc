package payonce_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/providertest"
)

// A provider whose lookup cannot prove that nothing exists (Adyen has no
// status API) gets a resend under a new key only on the provider's own
// refusal of every earlier key generation: a "not found" there is no
// evidence, and a charge it authorised whose answer and webhook were lost
// would be charged again.
func TestResolveResendNeedsARefusalWhenTheLookupProvesNothing(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{}, false)
	hb.psp.noAbsence = true
	client, err := payonce.New(clientConfigOf(hb))
	require.NoError(t, err)

	op := inReview(t, hb.bundle, charge("order-no-proof", 1500), "", ledger.ReviewCodeWindowPassed, payonce.ReasonWindowPassed)
	hb.clock.Advance(2 * time.Minute)
	resend := payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend, Actor: "alice", Note: "nothing in the dashboard"}
	_, err = client.Resolve(hb.ctx, resend)
	require.ErrorIs(t, err, payonce.ErrResendRefused)
	require.ErrorContains(t, err, "no refusal on record")
	require.ErrorContains(t, err, "resolve as failed")
	got, _, err := hb.store.Get(hb.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusManualReview, got.Status, "a refused resolution changes nothing")

	// The provider's refusal of generation 0's object arrives: it is the
	// evidence a resend needs.
	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_declined payment_intent.payment_failed "+op.ID+" failed ref=psp_declined").StatusCode)
	got, err = client.Resolve(hb.ctx, resend)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got.Status)
	require.Equal(t, 1, got.Generation)
	require.NotNil(t, got.Resolution)
	require.True(t, got.Resolution.At.Equal(hb.clock.Now()), "Resolve stamps the client's clock, not the machine's: %s", got.Resolution.At)
}

// A chargeback (or any event showing that money moved) on record never
// makes an operation eligible for a resend under a new key, whatever the
// lookup says.
func TestResolveResendRefusedAfterAChargeback(t *testing.T) {
	t.Parallel()
	for _, noAbsence := range []bool{false, true} {
		hb := setupHooks(t, false, setupOpts{}, false)
		hb.psp.noAbsence = noAbsence
		client, err := payonce.New(clientConfigOf(hb))
		require.NoError(t, err)
		res, err := client.Charge(hb.ctx, charge("order-chargeback", 1200))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, hb.post(t, "", "evt_cb charge.dispute.created "+res.OperationID+" failed reversal ref="+res.ProviderRef).StatusCode)
		_, err = client.Resolve(hb.ctx, payonce.ResolveParams{OperationID: res.OperationID, Outcome: ledger.ResolveResend, Actor: "a", Note: "n"})
		require.ErrorIs(t, err, payonce.ErrResendRefused)
		require.ErrorContains(t, err, "evt_cb")
		require.ErrorContains(t, err, "money moved")
	}
}

// clientConfigOf is the configuration of another client of hb's adapter
// and ledger (one built after a change to hb.psp's declarations).
func clientConfigOf(hb *hookBundle) payonce.Config {
	return providertest.ClientConfig(hb.psp, hb.store, hb.clock.Now)
}

// The operator resent a charge whose generation-0 answer was lost (no
// reference recorded; the lookup found nothing). Before generation 1 is
// sent, Stripe delivers payment_intent.succeeded for generation 0's
// PaymentIntent: the customer was charged under the old key. The event
// must stop generation 1 (review as duplicated); making it due to be sent
// now charges the customer twice.
func TestLateEarlierSuccessStopsAPendingResend(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		hb := setupHooks(t, pg, setupOpts{}, false)
		op := inReview(t, hb.bundle, charge("order-late-gen0", 1500), "", ledger.ReviewCodeWindowPassed, payonce.ReasonWindowPassed)
		got, err := payonce.Resolve(hb.ctx, hb.store, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend,
			Actor: "alice", Note: "nothing found at the provider", Now: hb.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, ledger.StatusPending, got.Status)
		require.Equal(t, 1, got.Generation)

		require.Equal(t, http.StatusOK, hb.post(t, "", "evt_late payment_intent.succeeded "+op.ID+" succeeded ref=pi_gen0").StatusCode)
		got, _, err = hb.store.Get(hb.ctx, op.ID)
		require.NoError(t, err)
		require.Equal(t, ledger.StatusManualReview, got.Status, "generation 1 must not be sent: generation 0 already charged")
		require.Equal(t, ledger.ReviewCodeDuplicated, got.ReviewCode, got.ReviewReason)
	})
}

// A charge in review for an operator whose PaymentIntent was reported
// processing and then failed (a bank debit that bounced, a card that
// failed after 3-D Secure): no money moved, the lookup agrees, and a
// resend under a new key is the operator's normal way to charge the order.
// A failure after processing is not a chargeback: only a success followed
// by a reversal is.
func TestResolveResendAllowedAfterProcessingThenFailed(t *testing.T) {
	t.Parallel()
	hb := setupHooks(t, false, setupOpts{}, false)
	op := inReview(t, hb.bundle, charge("order-processing-failed", 1500), "", ledger.ReviewCodeKeyMismatch, payonce.ReasonKeyMismatch)
	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_proc payment_intent.processing "+op.ID+" processing ref=pi_bounced").StatusCode)
	require.Equal(t, http.StatusOK, hb.post(t, "", "evt_fail payment_intent.payment_failed "+op.ID+" failed ref=pi_bounced").StatusCode)
	hb.clock.Advance(2 * time.Minute) // past the search lag
	got, err := hb.client.Resolve(hb.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend, Actor: "alice", Note: "the debit bounced"})
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got.Status)
	require.Equal(t, 1, got.Generation)
}

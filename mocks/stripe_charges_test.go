package mocks_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func (r *result) charge(t *testing.T) mocks.StripeCharge {
	t.Helper()
	return decode[mocks.StripeCharge](t, r, http.StatusOK)
}

// Every confirmation creates a Charge that GET /v1/charges/{id} returns,
// as at Stripe: it is what tells an authorized-then-canceled PaymentIntent
// from one canceled before any authorization (the PaymentIntent alone shows
// amount_capturable 0 and amount_received 0 in both cases).
func TestChargesFollowTheirPaymentIntent(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	chargeOf := func(pi mocks.StripePaymentIntent) mocks.StripeCharge {
		return b.c.get("/v1/charges/" + pi.LatestCharge).charge(t)
	}
	refund := func(form url.Values) { b.c.post("/v1/refunds", form, "").refund(t) }

	// chargeState is a charge's money: its status, whether it is paid,
	// captured and refunded in full, and the amounts captured and refunded.
	type chargeState struct {
		status                         string
		paid, captured, refunded       bool
		amountCaptured, amountRefunded int64
	}
	requireCharge := func(pi mocks.StripePaymentIntent, want chargeState) mocks.StripeCharge {
		t.Helper()
		ch := chargeOf(pi)
		require.Equal(t, want, chargeState{ch.Status, ch.Paid, ch.Captured, ch.Refunded, ch.AmountCaptured, ch.AmountRefunded})
		return ch
	}

	// Captured at once.
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "").pi(t)
	ch := requireCharge(pi, chargeState{"succeeded", true, true, false, 1500, 0})
	require.Equal(t, "charge", ch.Object)
	require.Equal(t, pi.ID, ch.PaymentIntent)
	require.Equal(t, "usd", ch.Currency)

	// Refunded in part, then in full.
	refund(refundForm(pi.ID, "500"))
	requireCharge(pi, chargeState{"succeeded", true, true, false, 1500, 500})
	refund(refundForm(pi.ID, ""))
	requireCharge(pi, chargeState{"succeeded", true, true, true, 1500, 1500})

	// Authorized, then canceled: the charge stays paid, uncaptured, and is
	// refunded in full.
	form := manual(charge("2000", "pm_card_visa"))
	auth := b.c.post("/v1/payment_intents", form, "").pi(t)
	requireCharge(auth, chargeState{"succeeded", true, false, false, 0, 0})
	canceled := b.c.post("/v1/payment_intents/"+auth.ID+"/cancel", url.Values{"cancellation_reason": {"abandoned"}}, "").pi(t)
	require.Equal(t, "canceled", canceled.Status)
	require.Zero(t, canceled.AmountCapturable)
	require.Zero(t, canceled.AmountReceived)
	require.Equal(t, auth.LatestCharge, canceled.LatestCharge)
	requireCharge(canceled, chargeState{"succeeded", true, false, true, 0, 2000})

	// Authorized, then captured in part, then refunded in full.
	auth = b.c.post("/v1/payment_intents", form, "").pi(t)
	b.c.post("/v1/payment_intents/"+auth.ID+"/capture", url.Values{"amount_to_capture": {"1200"}}, "").pi(t)
	requireCharge(auth, chargeState{"succeeded", true, true, false, 1200, 0})
	refund(refundForm(auth.ID, ""))
	requireCharge(auth, chargeState{"succeeded", true, true, true, 1200, 1200})

	// Declined, then canceled: the charge failed and was never paid.
	r := b.c.post("/v1/payment_intents", charge("900", "pm_card_chargeDeclined"), "")
	e := r.err(t, http.StatusPaymentRequired)
	declined := e.PaymentIntent
	require.NotNil(t, declined)
	canceled = b.c.post("/v1/payment_intents/"+declined.ID+"/cancel", nil, "").pi(t)
	require.Equal(t, "canceled", canceled.Status)
	ch = requireCharge(canceled, chargeState{"failed", false, false, false, 0, 0})
	require.Equal(t, "card_declined", ch.FailureCode)
	raw := b.c.get("/v1/charges/" + canceled.LatestCharge).raw(t)
	require.Contains(t, raw, "failure_code")

	// Canceled before any confirmation: no charge at all.
	created := b.c.post("/v1/payment_intents", url.Values{"amount": {"700"}, "currency": {"usd"}}, "").pi(t)
	canceled = b.c.post("/v1/payment_intents/"+created.ID+"/cancel", nil, "").pi(t)
	require.Empty(t, canceled.LatestCharge)
	require.Nil(t, b.c.get("/v1/payment_intents/" + created.ID).raw(t)["latest_charge"])

	e = b.c.get("/v1/charges/ch_missing").err(t, http.StatusNotFound)
	require.Equal(t, "resource_missing", e.Code)
}

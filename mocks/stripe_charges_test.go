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

	// Captured at once.
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "").pi(t)
	ch := chargeOf(pi)
	require.Equal(t, "charge", ch.Object)
	require.Equal(t, pi.ID, ch.PaymentIntent)
	require.Equal(t, "succeeded", ch.Status)
	require.True(t, ch.Paid)
	require.True(t, ch.Captured)
	require.Equal(t, int64(1500), ch.AmountCaptured)
	require.Equal(t, "usd", ch.Currency)

	// Refunded in part, then in full.
	refund(url.Values{"payment_intent": {pi.ID}, "amount": {"500"}})
	ch = chargeOf(pi)
	require.Equal(t, int64(500), ch.AmountRefunded)
	require.False(t, ch.Refunded)
	refund(url.Values{"payment_intent": {pi.ID}})
	ch = chargeOf(pi)
	require.Equal(t, int64(1500), ch.AmountRefunded)
	require.True(t, ch.Refunded)

	// Authorized, then canceled: the charge stays paid, uncaptured, and is
	// refunded in full.
	form := manual(charge("2000", "pm_card_visa"))
	auth := b.c.post("/v1/payment_intents", form, "").pi(t)
	ch = chargeOf(auth)
	require.True(t, ch.Paid)
	require.False(t, ch.Captured)
	require.Equal(t, "succeeded", ch.Status)
	canceled := b.c.post("/v1/payment_intents/"+auth.ID+"/cancel", url.Values{"cancellation_reason": {"abandoned"}}, "").pi(t)
	require.Equal(t, "canceled", canceled.Status)
	require.Zero(t, canceled.AmountCapturable)
	require.Zero(t, canceled.AmountReceived)
	require.Equal(t, auth.LatestCharge, canceled.LatestCharge)
	ch = chargeOf(canceled)
	require.True(t, ch.Paid)
	require.False(t, ch.Captured)
	require.True(t, ch.Refunded)
	require.Equal(t, int64(2000), ch.AmountRefunded)

	// Authorized, then captured in part, then refunded in full.
	auth = b.c.post("/v1/payment_intents", form, "").pi(t)
	b.c.post("/v1/payment_intents/"+auth.ID+"/capture", url.Values{"amount_to_capture": {"1200"}}, "").pi(t)
	ch = chargeOf(auth)
	require.True(t, ch.Paid)
	require.True(t, ch.Captured)
	require.Equal(t, int64(1200), ch.AmountCaptured)
	require.False(t, ch.Refunded)
	refund(url.Values{"payment_intent": {auth.ID}})
	ch = chargeOf(auth)
	require.Equal(t, int64(1200), ch.AmountRefunded)
	require.True(t, ch.Refunded)

	// Declined, then canceled: the charge failed and was never paid.
	r := b.c.post("/v1/payment_intents", charge("900", "pm_card_chargeDeclined"), "")
	e := r.err(t, http.StatusPaymentRequired)
	declined := e.PaymentIntent
	require.NotNil(t, declined)
	canceled = b.c.post("/v1/payment_intents/"+declined.ID+"/cancel", nil, "").pi(t)
	require.Equal(t, "canceled", canceled.Status)
	ch = chargeOf(canceled)
	require.Equal(t, "failed", ch.Status)
	require.False(t, ch.Paid)
	require.False(t, ch.Captured)
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

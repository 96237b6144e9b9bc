package mocks_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// An injected PaymentIntent is listed and read like any other, made by no
// request, and marked Injected in Truth, whose per-reference counts leave
// it out: a duplicate made out of band is not one the clients made.
func TestStripeInjectPaymentIntent(t *testing.T) {
	t.Parallel()
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	mine := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa", "payonce_op", "op-1"), "k1").pi(t)
	flush(t, b.f)
	hooks := len(events[mocks.StripeEvent](t, rec))
	requests := b.f.Truth().Requests

	created := b.clock.Now().Add(-time.Hour).Truncate(time.Second)
	dup, err := b.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 2500, Currency: "USD",
		Metadata: map[string]string{"payonce_op": "op-1", "payonce_key": "k-old"}, Created: created})
	require.NoError(t, err)
	bare, err := b.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 700, Currency: "eur"})
	require.NoError(t, err)

	got := b.c.get("/v1/payment_intents/" + dup).pi(t)
	require.Equal(t, "succeeded", got.Status)
	require.Equal(t, int64(2500), got.Amount)
	require.Equal(t, int64(2500), got.AmountReceived)
	require.Equal(t, "usd", got.Currency, "Stripe renders currencies lower case")
	require.Equal(t, created.Unix(), got.Created)
	require.Equal(t, "op-1", got.Metadata["payonce_op"])
	ch := decode[mocks.StripeCharge](t, b.c.get("/v1/charges/"+got.LatestCharge), http.StatusOK)
	require.True(t, ch.Paid)
	require.True(t, ch.Captured)

	var l mocks.StripeIntentList
	require.NoError(t, json.Unmarshal(b.c.get("/v1/payment_intents?limit=100").body, &l))
	require.Equal(t, []string{bare, mine.ID, dup}, piIDs(l.Data), "newest first, by created")

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 3)
	injected := map[string]bool{}
	for _, p := range truth.Payments {
		injected[p.ID] = p.Injected
	}
	require.Equal(t, map[string]bool{mine.ID: false, dup: true, bare: true}, injected)
	require.Equal(t, map[string]int{"op-1": 1}, truth.ChargesBy("payonce_op"), "the injected duplicate is not the clients'")
	require.Empty(t, truth.Duplicates("payonce_op"))
	require.Equal(t, int64(1500), truth.TotalCharged("usd"))
	// The requests the test made to read them, and nothing else.
	require.Equal(t, requests["POST /v1/payment_intents"], truth.Requests["POST /v1/payment_intents"])
	flush(t, b.f)
	require.Len(t, events[mocks.StripeEvent](t, rec), hooks, "no webhook for an object made out of band")
}

// Every status an injected PaymentIntent can have, as Stripe shows it.
func TestStripeInjectPaymentIntentStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	for _, tc := range []struct {
		spec                 mocks.StripeIntentSpec
		capturable, received int64
		charge               string // the latest charge's status, "" for none
		paid                 bool
	}{
		{spec: mocks.StripeIntentSpec{Status: "requires_capture"}, capturable: 100, charge: "succeeded", paid: true},
		{spec: mocks.StripeIntentSpec{Status: "processing"}},
		{spec: mocks.StripeIntentSpec{Status: "requires_payment_method"}, charge: "failed"},
		{spec: mocks.StripeIntentSpec{Status: "requires_action"}},
		{spec: mocks.StripeIntentSpec{Status: "requires_confirmation"}},
		{spec: mocks.StripeIntentSpec{Status: "canceled"}},
		{spec: mocks.StripeIntentSpec{Status: "canceled", Authorized: true, CancellationReason: "automatic"}, charge: "succeeded", paid: true},
	} {
		tc.spec.Amount, tc.spec.Currency = 100, "usd"
		id, err := b.f.InjectPaymentIntent(tc.spec)
		require.NoError(t, err)
		pi := b.c.get("/v1/payment_intents/" + id).pi(t)
		require.Equal(t, tc.spec.Status, pi.Status)
		require.Equal(t, tc.capturable, pi.AmountCapturable, tc.spec.Status)
		require.Equal(t, tc.received, pi.AmountReceived, tc.spec.Status)
		if tc.charge == "" {
			require.Empty(t, pi.LatestCharge, tc.spec.Status)
		} else {
			ch := decode[mocks.StripeCharge](t, b.c.get("/v1/charges/"+pi.LatestCharge), http.StatusOK)
			require.Equal(t, tc.charge, ch.Status)
			require.Equal(t, tc.paid, ch.Paid)
		}
		if tc.spec.Status == "canceled" {
			require.Equal(t, orDefault(tc.spec.CancellationReason, "requested_by_customer"), pi.CancellationReason)
		}
		if tc.spec.Status == "requires_payment_method" {
			require.NotNil(t, pi.LastPaymentError)
			require.Equal(t, "card_declined", pi.LastPaymentError.Code)
		}
	}
	truth := b.f.Truth()
	require.Empty(t, truth.ChargesBy("payonce_op"))

	for _, bad := range []struct {
		spec mocks.StripeIntentSpec
		want string
	}{
		{mocks.StripeIntentSpec{Currency: "usd"}, "Amount 0 is not positive"},
		{mocks.StripeIntentSpec{Amount: 1, Currency: "dollars"}, `Currency "dollars"`},
		{mocks.StripeIntentSpec{Amount: 1, Currency: "usd", Status: "paid"}, `Status "paid"`},
		{mocks.StripeIntentSpec{Amount: 1, Currency: "usd", Status: "canceled", CancellationReason: "bored"}, `CancellationReason "bored"`},
	} {
		_, err := b.f.InjectPaymentIntent(bad.spec)
		require.ErrorContains(t, err, bad.want)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// An injected refund counts against what remains to refund, is listed
// with its PaymentIntent, and is marked Injected.
func TestStripeInjectRefund(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa", "payonce_op", "op-1"), "k1").pi(t)
	id, err := b.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: pi.ID, Amount: 1000})
	require.NoError(t, err)
	re := b.c.get("/v1/refunds/" + id).refund(t)
	require.Equal(t, "succeeded", re.Status)
	require.Equal(t, pi.ID, re.PaymentIntent)
	require.Empty(t, re.Metadata)
	failed, err := b.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: pi.ID, Amount: 5000, Status: "failed"})
	require.NoError(t, err, "a failed refund takes nothing")

	e := b.c.post("/v1/refunds", refundForm(pi.ID, "600"), "k2").err(t, http.StatusBadRequest)
	require.Equal(t, "amount_too_large", e.Code, "500 remain after the injected refund")
	b.c.post("/v1/refunds", refundForm(pi.ID, "500", "payonce_op", "op-2"), "k3").refund(t)

	var l mocks.StripeRefundList
	require.NoError(t, json.Unmarshal(b.c.get("/v1/refunds?payment_intent="+pi.ID).body, &l))
	require.Len(t, l.Data, 3)
	truth := b.f.Truth()
	require.Len(t, truth.Refunds, 3)
	require.True(t, truth.Refunds[0].Injected)
	require.Equal(t, failed, truth.Refunds[1].ID)
	require.True(t, truth.Refunds[1].Injected)
	require.False(t, truth.Refunds[2].Injected)
	require.Equal(t, int64(500), truth.TotalRefunded("usd"), "only the clients' refunds")
	require.Equal(t, map[string]int{"op-2": 1}, truth.RefundsBy("payonce_op"))

	_, err = b.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: pi.ID})
	require.ErrorContains(t, err, "more than the 0 that remains")
	_, err = b.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: "pi_nope"})
	require.ErrorContains(t, err, "no succeeded PaymentIntent")
	_, err = b.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: pi.ID, Status: "weird"})
	require.ErrorContains(t, err, `Status "weird"`)
	_, err = b.f.InjectRefund(mocks.StripeRefundSpec{PaymentIntent: pi.ID, Amount: -1})
	require.ErrorContains(t, err, "negative")
}

// FailRefundSilently fails a refund as FailRefund does, and no webhook
// tells of it.
func TestStripeFailRefundSilently(t *testing.T) {
	t.Parallel()
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1").pi(t)
	re := b.c.post("/v1/refunds", refundForm(pi.ID, ""), "k2").refund(t)
	flush(t, b.f)
	before := len(events[mocks.StripeEvent](t, rec))

	require.ErrorContains(t, b.f.FailRefundSilently(re.ID, "bad_luck"), "not a Stripe refund failure_reason")
	require.NoError(t, b.f.FailRefundSilently(re.ID, "lost_or_stolen_card"))
	flush(t, b.f)
	require.Len(t, events[mocks.StripeEvent](t, rec), before, "the failure is not announced")
	got := b.c.get("/v1/refunds/" + re.ID).refund(t)
	require.Equal(t, "failed", got.Status)
	require.Equal(t, "lost_or_stolen_card", got.FailureReason)
	require.Zero(t, b.f.Truth().Payments[0].AmountRefunded)
}

// ExpireAuthorization cancels an authorization as Stripe does when it
// expires: reason automatic, the hold released, payment_intent.canceled.
func TestStripeExpireAuthorization(t *testing.T) {
	t.Parallel()
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	form := charge("1500", "pm_card_visa")
	form.Set("capture_method", "manual")
	pi := b.c.post("/v1/payment_intents", form, "k1").pi(t)
	require.Equal(t, "requires_capture", pi.Status)
	flush(t, b.f)
	before := len(events[mocks.StripeEvent](t, rec))

	require.NoError(t, b.f.ExpireAuthorization(pi.ID))
	got := b.c.get("/v1/payment_intents/" + pi.ID).pi(t)
	require.Equal(t, "canceled", got.Status)
	require.Equal(t, "automatic", got.CancellationReason)
	require.Zero(t, got.AmountCapturable)
	ch := decode[mocks.StripeCharge](t, b.c.get("/v1/charges/"+got.LatestCharge), http.StatusOK)
	require.True(t, ch.Paid, "it was authorized")
	require.True(t, ch.Refunded, "and the hold released")
	flush(t, b.f)
	evs := events[mocks.StripeEvent](t, rec)[before:]
	require.Len(t, evs, 1)
	require.Equal(t, "payment_intent.canceled", evs[0].Type)
	require.Empty(t, evs[0].Request.ID, "nobody's request caused it")

	require.ErrorContains(t, b.f.ExpireAuthorization(pi.ID), "has status canceled")
	require.ErrorContains(t, b.f.ExpireAuthorization("pi_nope"), `no PaymentIntent "pi_nope"`)
}

// GET /v1/refunds filters by created and pages like the PaymentIntents
// list (https://docs.stripe.com/api/refunds/list): newest first, limit
// 1..100, starting_after while has_more.
func TestListRefundsPagesAWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	pi := b.c.post("/v1/payment_intents", charge("100000", "pm_card_visa"), "").pi(t)
	refund := func(i int) string {
		return b.c.post("/v1/refunds", refundForm(pi.ID, "1"), "k"+strconv.Itoa(i)).refund(t).ID
	}
	before := refund(0)
	b.clock.Advance(time.Minute)
	from := b.clock.Now().Unix()
	var in []string
	for i := range 150 {
		in = append(in, refund(i+1))
		if i%3 == 2 {
			b.clock.Advance(time.Second)
		}
	}
	to := b.clock.Now().Unix() + 1
	b.clock.Advance(time.Minute)
	after := refund(1000)

	q := url.Values{"created[gte]": {strconv.FormatInt(from, 10)}, "created[lt]": {strconv.FormatInt(to, 10)}, "limit": {"100"}}
	var got []string
	pages := 0
	for {
		var l mocks.StripeRefundList
		r := b.c.get("/v1/refunds?" + q.Encode())
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		require.NoError(t, json.Unmarshal(r.body, &l))
		pages++
		for _, re := range l.Data {
			got = append(got, re.ID)
		}
		if !l.HasMore {
			break
		}
		q.Set("starting_after", l.Data[len(l.Data)-1].ID)
	}
	require.Equal(t, 2, pages)
	require.Len(t, got, len(in))
	for i, id := range got {
		require.Equal(t, in[len(in)-1-i], id, "newest first")
	}
	require.NotContains(t, got, before)
	require.NotContains(t, got, after)

	for _, lim := range []string{"0", "101", "x"} {
		e := b.c.get("/v1/refunds?limit="+lim).err(t, http.StatusBadRequest)
		require.Equal(t, "limit", e.Param, lim)
	}
	e := b.c.get("/v1/refunds?created[lt]=later").err(t, http.StatusBadRequest)
	require.Equal(t, "created[lt]", e.Param)
	e = b.c.get("/v1/refunds?starting_after="+in[0]+"&ending_before="+in[1]).err(t, http.StatusBadRequest)
	require.Equal(t, "parameters_exclusive", e.Code)
}

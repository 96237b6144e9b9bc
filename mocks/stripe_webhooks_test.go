package mocks_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

const testWhsec = "whsec_test_0123456789abcdef"

// stripeHooks starts a Stripe fake whose webhooks go to a receiver that
// verifies their signatures, with d's faults.
func stripeHooks(t *testing.T, d mocks.WebhookDelivery) (*bundle, *hookReceiver) {
	t.Helper()
	rec := newHookReceiver(t, stripeVerifier(testWhsec))
	d.URL, d.Secret = rec.URL(), testWhsec
	if d.RetryAfter == 0 {
		d.RetryAfter = time.Millisecond
	}
	return setup(t, mocks.StripeOptions{Webhooks: d}), rec
}

// byType groups events by type.
func byType(evs []mocks.StripeEvent) map[string][]mocks.StripeEvent {
	m := map[string][]mocks.StripeEvent{}
	for _, e := range evs {
		m[e.Type] = append(m[e.Type], e)
	}
	return m
}

// sameJSON asserts that two JSON documents are equal, whatever their
// spacing.
func sameJSON(t *testing.T, want, got []byte) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &g))
	require.Equal(t, w, g)
}

func TestStripeWebhooksEveryChangeUnderFaults(t *testing.T) {
	b, rec := stripeHooks(t, mocks.WebhookDelivery{FailRate: 0.5, MaxAttempts: 40})
	paid := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa", "order", "o-1"), "k-paid").pi(t)
	auth := b.c.post("/v1/payment_intents", manual(charge("2000", "pm_card_visa")), "k-auth").pi(t)
	captured := b.c.post("/v1/payment_intents/"+auth.ID+"/capture", url.Values{}, "k-cap").pi(t)
	voidable := b.c.post("/v1/payment_intents", manual(charge("700", "pm_card_visa")), "k-void").pi(t)
	canceled := b.c.post("/v1/payment_intents/"+voidable.ID+"/cancel", url.Values{}, "k-cancel").pi(t)
	declined := b.c.post("/v1/payment_intents", charge("900", "pm_card_chargeDeclined"), "k-decl")
	require.Equal(t, http.StatusPaymentRequired, declined.status)
	re := b.c.post("/v1/refunds", refundForm(paid.ID, "500"), "k-re").refund(t)
	// A replayed answer changes nothing, so it emits nothing.
	b.c.post("/v1/refunds", refundForm(paid.ID, "500"), "k-re")
	flush(t, b.f)

	st := b.f.WebhookStats()
	require.Equal(t, 8, st.Queued)
	require.Equal(t, 8, st.Delivered)
	require.Zero(t, st.GaveUp)
	require.Positive(t, st.Failed, "half the attempts fail; every event still arrives")
	require.Zero(t, rec.rejects(), "every delivery is signed with the endpoint secret")

	evs := events[mocks.StripeEvent](t, rec)
	types := byType(evs)
	require.Len(t, types["payment_intent.succeeded"], 2)
	require.Len(t, types["payment_intent.amount_capturable_updated"], 2)
	require.Len(t, types["payment_intent.canceled"], 1)
	require.Len(t, types["payment_intent.payment_failed"], 1)
	require.Len(t, types["charge.refunded"], 1)
	require.Len(t, types["refund.created"], 1)

	for _, e := range evs {
		require.Regexp(t, `^evt_[0-9A-Za-z]{24}$`, e.ID)
		require.Equal(t, "event", e.Object)
		require.Equal(t, mocks.StripeAPIVersion, e.APIVersion)
		require.Equal(t, epoch.Unix(), e.Created)
		require.False(t, e.Livemode)
		require.Regexp(t, `^req_`, e.Request.ID)
	}
	// data.object is the object as GET answers it.
	sameJSON(t, b.c.get("/v1/refunds/"+re.ID).body, types["refund.created"][0].Data.Object)
	sameJSON(t, b.c.get("/v1/payment_intents/"+canceled.ID).body, types["payment_intent.canceled"][0].Data.Object)
	require.Equal(t, "k-cancel", types["payment_intent.canceled"][0].Request.IdempotencyKey)
	var succeeded []string
	for _, e := range types["payment_intent.succeeded"] {
		var pi mocks.StripePaymentIntent
		require.NoError(t, json.Unmarshal(e.Data.Object, &pi))
		require.Equal(t, "succeeded", pi.Status)
		succeeded = append(succeeded, pi.ID)
	}
	require.ElementsMatch(t, []string{paid.ID, captured.ID}, succeeded)
	var failed mocks.StripePaymentIntent
	require.NoError(t, json.Unmarshal(types["payment_intent.payment_failed"][0].Data.Object, &failed))
	require.Equal(t, "requires_payment_method", failed.Status)
	require.Equal(t, "card_declined", failed.LastPaymentError.Code)
}

func TestStripeWebhooksDuplicatesKeepTheEventID(t *testing.T) {
	b, rec := stripeHooks(t, mocks.WebhookDelivery{DuplicateRate: 1})
	b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1")
	flush(t, b.f)
	evs := events[mocks.StripeEvent](t, rec)
	require.Len(t, evs, 2)
	require.Equal(t, evs[0].ID, evs[1].ID, "a duplicate is the same event, delivered again")
	require.Equal(t, mocks.WebhookStats{Queued: 1, Delivered: 2, Duplicated: 1}, b.f.WebhookStats())
}

func TestStripeWebhooksOutOfOrder(t *testing.T) {
	b, rec := stripeHooks(t, mocks.WebhookDelivery{ReorderRate: 1, RetryAfter: 200 * time.Millisecond})
	pi := b.c.post("/v1/payment_intents", manual(charge("2000", "pm_card_visa")), "k1").pi(t)
	b.c.post("/v1/payment_intents/"+pi.ID+"/capture", url.Values{}, "k2")
	flush(t, b.f)
	evs := events[mocks.StripeEvent](t, rec)
	require.Len(t, evs, 2)
	require.Equal(t, "payment_intent.succeeded", evs[0].Type, "the capture's event overtakes the authorization's")
	require.Equal(t, "payment_intent.amount_capturable_updated", evs[1].Type)
}

func TestStripeFailRefund(t *testing.T) {
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1").pi(t)
	re := b.c.post("/v1/refunds", refundForm(pi.ID, ""), "k2").refund(t)
	flush(t, b.f)
	before := len(events[mocks.StripeEvent](t, rec))

	require.ErrorContains(t, b.f.FailRefund(re.ID, "bad_luck"), "not a Stripe refund failure_reason")
	require.ErrorContains(t, b.f.FailRefund("re_missing", "unknown"), `no refund "re_missing"`)
	require.NoError(t, b.f.FailRefund(re.ID, "lost_or_stolen_card"))
	require.ErrorContains(t, b.f.FailRefund(re.ID, "unknown"), "has status failed")
	flush(t, b.f)

	got := b.c.get("/v1/refunds/" + re.ID).refund(t)
	require.Equal(t, "failed", got.Status)
	require.Equal(t, "lost_or_stolen_card", got.FailureReason)
	require.Regexp(t, `^txn_`, got.FailureBalanceTransaction)
	ch := decode[mocks.StripeCharge](t, b.c.get("/v1/charges/"+pi.LatestCharge), http.StatusOK)
	require.Zero(t, ch.AmountRefunded, "the failed amount is unrefunded again")
	require.False(t, ch.Refunded)
	truth := b.f.Truth()
	require.Equal(t, "failed", truth.Refunds[0].Status)
	require.Zero(t, truth.Payments[0].AmountRefunded)

	evs := events[mocks.StripeEvent](t, rec)[before:]
	require.Len(t, evs, 2)
	require.Equal(t, "refund.updated", evs[0].Type)
	require.Equal(t, "succeeded", evs[0].Data.PreviousAttributes["status"])
	require.Equal(t, "refund.failed", evs[1].Type)
	require.Empty(t, evs[1].Request.ID, "nobody's request caused it")
	sameJSON(t, b.c.get("/v1/refunds/"+re.ID).body, evs[1].Data.Object)
	// Another refund can now be made of the returned amount.
	b.c.post("/v1/refunds", refundForm(pi.ID, ""), "k3").refund(t)
}

// TestStripeWebhooksParseWithTheAdapter feeds the fake's deliveries to the
// Stripe adapter's ParseWebhook: the events verify and say what happened,
// including a refund that failed after it succeeded.
func TestStripeWebhooksParseWithTheAdapter(t *testing.T) {
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	p, err := stripe.New(stripe.Config{APIKey: b.f.APIKey(), BaseURL: b.f.URL(), WebhookSecret: testWhsec, Now: b.clock.Now})
	require.NoError(t, err)
	form := charge("1500", "pm_card_visa", "payonce_op", "op-1", "payonce_kind", "charge")
	pi := b.c.post("/v1/payment_intents", form, "k1").pi(t)
	re := b.c.post("/v1/refunds", refundForm(pi.ID, ""), "k2").refund(t)
	require.NoError(t, b.f.FailRefund(re.ID, "expired_or_canceled_card"))
	flush(t, b.f)

	rec.mu.Lock()
	bodies, headers := rec.bodies, rec.headers
	rec.mu.Unlock()
	var parsed []payonce.WebhookEvent
	for i, body := range bodies {
		r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(body))
		r.Header = headers[i]
		evs, err := p.ParseWebhook(r, body)
		require.NoError(t, err, string(body))
		parsed = append(parsed, evs...)
	}
	var charged, reversed bool
	for _, ev := range parsed {
		for _, tg := range ev.Targets {
			if ev.Type == "payment_intent.succeeded" && tg.Kind == payonce.KindCharge {
				charged = tg.OperationID == "op-1" && tg.State == payonce.LookupSucceeded && tg.ProviderRef == pi.ID
			}
			if ev.Type == "refund.failed" && tg.Kind == payonce.KindRefund {
				reversed = tg.Reversal && tg.ProviderRef == re.ID
			}
		}
	}
	require.True(t, charged, "payment_intent.succeeded settles the charge: %+v", parsed)
	require.True(t, reversed, "refund.failed reverses the refund: %+v", parsed)

	// A body changed on the way no longer verifies.
	forged := bytes.Replace(bodies[0], []byte(`"livemode": false`), []byte(`"livemode": true`), 1)
	r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(forged))
	r.Header = headers[0]
	_, err = p.ParseWebhook(r, forged)
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
}

func TestStripeWebhookOptions(t *testing.T) {
	require.ErrorContains(t, mocks.StripeOptions{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/"}}.Validate(),
		"StripeOptions.Webhooks.Secret is not an endpoint signing secret")
	require.ErrorContains(t, mocks.StripeOptions{Webhooks: mocks.WebhookDelivery{URL: "https://hooks.example.com/", Secret: testWhsec}}.Validate(),
		"StripeOptions.Webhooks.URL has host \"hooks.example.com\", which is not a loopback address")
	// Without webhooks the fake emits nothing and flushing is immediate.
	b := setup(t, mocks.StripeOptions{})
	b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1")
	flush(t, b.f)
	require.Equal(t, mocks.WebhookStats{}, b.f.WebhookStats())
}

func TestStripeCloseStopsWebhooks(t *testing.T) {
	rec := newHookReceiver(t, func(*http.Request, []byte) bool { return false }) // refuses all: retried
	f := mocks.NewStripe(mocks.StripeOptions{Webhooks: mocks.WebhookDelivery{URL: rec.URL(), Secret: testWhsec,
		RetryAfter: 10 * time.Millisecond, MaxAttempts: 1000}})
	c := newClient(t, f, f.Client())
	c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1")
	require.Eventually(t, func() bool { return rec.rejects() > 0 }, 2*time.Second, time.Millisecond)
	f.Close() // returns once the sender's goroutine is gone
	st := f.WebhookStats()
	require.Equal(t, 1, st.Dropped)
	n := rec.rejects()
	time.Sleep(50 * time.Millisecond)
	require.Equal(t, n, rec.rejects(), "nothing is delivered after Close")
}

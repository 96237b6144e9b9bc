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
	return setup(t, mocks.StripeOptions{Options: mocks.Options{Webhooks: d}}), rec
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
	require.ErrorContains(t, mocks.StripeOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/"}}}.Validate(),
		"StripeOptions.Webhooks.Secret is not an endpoint signing secret")
	require.ErrorContains(t, mocks.StripeOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "https://hooks.example.com/", Secret: testWhsec}}}.Validate(),
		"StripeOptions.Webhooks.URL has host \"hooks.example.com\", which is not a loopback address")
	// Without webhooks the fake emits nothing and flushing is immediate.
	b := setup(t, mocks.StripeOptions{})
	b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1")
	flush(t, b.f)
	require.Equal(t, mocks.WebhookStats{}, b.f.WebhookStats())
}

func TestStripeCloseStopsWebhooks(t *testing.T) {
	rec := newHookReceiver(t, func(*http.Request, []byte) bool { return false }) // refuses all: retried
	f := mocks.NewStripe(mocks.StripeOptions{
		Options: mocks.Options{
			Webhooks: mocks.WebhookDelivery{URL: rec.URL(), Secret: testWhsec,
				RetryAfter: 10 * time.Millisecond, MaxAttempts: 1000},
		},
	})
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

// rawObject is an event's object as a map, to see which members
// a version renders.
func rawObject(t *testing.T, e mocks.StripeEvent) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(e.Data.Object, &m))
	return m
}

// An endpoint of an API version before 2024-10-28 hears of a card refund
// only through its charge: charge.refunded when it is made, and
// charge.refund.updated (the Refund) when it fails after it succeeded;
// no refund.* event at all.
func TestStripeWebhooksBeforeRefundEvents(t *testing.T) {
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	require.NoError(t, b.f.SetWebhookAPIVersion("2024-06-20"))
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa", "payonce_op", "op-1"), "k1").pi(t)
	re := b.c.post("/v1/refunds", refundForm(pi.ID, "", "payonce_op", "op-r"), "k2").refund(t)
	flush(t, b.f)
	require.NoError(t, b.f.FailRefund(re.ID, "expired_or_canceled_card"))
	flush(t, b.f)

	evs := events[mocks.StripeEvent](t, rec)
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
		require.Equal(t, "2024-06-20", e.APIVersion)
	}
	require.Equal(t, []string{"payment_intent.succeeded", "charge.refunded", "charge.refund.updated"}, types)
	ch := rawObject(t, evs[1])
	require.NotContains(t, ch, "refunds", "from 2022-11-15 a Charge does not embed its refunds")
	require.Equal(t, map[string]any{"payonce_op": "op-1"}, ch["metadata"], "the charge carries the PaymentIntent's metadata")
	upd := evs[2]
	sameJSON(t, b.c.get("/v1/refunds/"+re.ID).body, upd.Data.Object)
	require.Equal(t, "succeeded", upd.Data.PreviousAttributes["status"])
	require.Empty(t, upd.Request.ID, "nobody's request caused it")
	require.Equal(t, "op-r", decodeRefund(t, upd).Metadata["payonce_op"])

	// Upgraded to 2024-10-28: the next refund's events are refund.*.
	require.NoError(t, b.f.SetWebhookAPIVersion("2024-10-28.acacia"))
	re2 := b.c.post("/v1/refunds", refundForm(pi.ID, "", "payonce_op", "op-r2"), "k3").refund(t)
	require.NoError(t, b.f.FailRefund(re2.ID, "unknown"))
	flush(t, b.f)
	types = nil
	for _, e := range events[mocks.StripeEvent](t, rec)[len(evs):] {
		types = append(types, e.Type)
		require.Equal(t, "2024-10-28.acacia", e.APIVersion)
	}
	require.Equal(t, []string{"charge.refunded", "refund.created", "refund.updated", "refund.failed"}, types)
}

func decodeRefund(t *testing.T, e mocks.StripeEvent) mocks.StripeRefund {
	t.Helper()
	var re mocks.StripeRefund
	require.NoError(t, json.Unmarshal(e.Data.Object, &re))
	return re
}

// Before 2022-11-15 an event's Charge embeds its refunds and its
// PaymentIntent its charges (newest first), without latest_charge.
func TestStripeWebhooksEmbeddedLists(t *testing.T) {
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	require.NoError(t, b.f.SetWebhookAPIVersion("2020-08-27"))
	pi := b.c.post("/v1/payment_intents", manual(charge("1500", "pm_card_visa")), "k1").pi(t)
	b.c.post("/v1/payment_intents/"+pi.ID+"/capture", url.Values{}, "k2")
	first := b.c.post("/v1/refunds", refundForm(pi.ID, "500"), "k3").refund(t)
	second := b.c.post("/v1/refunds", refundForm(pi.ID, "400"), "k4").refund(t)
	declined := b.c.post("/v1/payment_intents", charge("900", "pm_card_chargeDeclined"), "k5")
	require.Equal(t, http.StatusPaymentRequired, declined.status)
	flush(t, b.f)

	types := byType(events[mocks.StripeEvent](t, rec))
	require.Empty(t, types["refund.created"])
	require.Len(t, types["charge.refunded"], 2)
	ch := rawObject(t, types["charge.refunded"][1])
	refunds := ch["refunds"].(map[string]any)
	require.Equal(t, "list", refunds["object"])
	require.Equal(t, false, refunds["has_more"])
	var ids []string
	for _, r := range refunds["data"].([]any) {
		ids = append(ids, r.(map[string]any)["id"].(string))
	}
	require.Equal(t, []string{second.ID, first.ID}, ids, "newest first")

	succeeded := rawObject(t, types["payment_intent.succeeded"][0])
	require.NotContains(t, succeeded, "latest_charge")
	charges := succeeded["charges"].(map[string]any)
	data := charges["data"].([]any)
	require.Len(t, data, 1)
	require.Equal(t, pi.LatestCharge, data[0].(map[string]any)["id"])
	require.Equal(t, true, data[0].(map[string]any)["captured"])
	failed := rawObject(t, types["payment_intent.payment_failed"][0])
	require.Len(t, failed["charges"].(map[string]any)["data"], 1, "a declined charge is listed too")
	// The API's own answers keep the fake's version.
	got := b.c.get("/v1/payment_intents/" + pi.ID).raw(t)
	require.Contains(t, got, "latest_charge")
	require.NotContains(t, got, "charges")
}

func TestStripeWebhookAPIVersionOption(t *testing.T) {
	for _, v := range []string{"2024-06-20", "2024-10-28.acacia", "2020-03-02"} {
		require.NoError(t, mocks.StripeOptions{WebhookAPIVersion: v}.Validate(), v)
	}
	for _, v := range []string{"2024-6-20", "2024-13-01", "acacia", "2024-10-28.", "2024-10-28.Acacia", "2024-10-28 ", "latest"} {
		require.ErrorContains(t, mocks.StripeOptions{WebhookAPIVersion: v}.Validate(),
			"StripeOptions.WebhookAPIVersion", v)
		require.ErrorContains(t, setup(t, mocks.StripeOptions{}).f.SetWebhookAPIVersion(v), `such as "2024-06-20"`, v)
	}
	// Set at construction, as SetWebhookAPIVersion does later.
	rec := newHookReceiver(t, stripeVerifier(testWhsec))
	b := setup(t, mocks.StripeOptions{
		Options: mocks.Options{
			Webhooks: mocks.WebhookDelivery{URL: rec.URL(), Secret: testWhsec, RetryAfter: time.Millisecond},
		},
		WebhookAPIVersion: "2023-10-16",
	})
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1").pi(t)
	b.c.post("/v1/refunds", refundForm(pi.ID, ""), "k2")
	flush(t, b.f)
	types := byType(events[mocks.StripeEvent](t, rec))
	require.Len(t, types["charge.refunded"], 1)
	require.Empty(t, types["refund.created"])
	require.Equal(t, "2023-10-16", types["charge.refunded"][0].APIVersion)
}

// The fake's deliveries, parsed by the adapter, carry each object's key,
// amount and currency; on an endpoint before 2024-10-28 the refund's
// failure arrives as charge.refund.updated and reverses it.
func TestStripeWebhooksTargetsOnEveryVersion(t *testing.T) {
	for _, version := range []string{mocks.StripeAPIVersion, "2024-06-20", "2020-08-27"} {
		t.Run(version, func(t *testing.T) {
			b, rec := stripeHooks(t, mocks.WebhookDelivery{})
			require.NoError(t, b.f.SetWebhookAPIVersion(version))
			p, err := stripe.New(stripe.Config{APIKey: b.f.APIKey(), BaseURL: b.f.URL(), WebhookSecret: testWhsec, Now: b.clock.Now})
			require.NoError(t, err)
			pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa",
				"payonce_op", "op-1", "payonce_kind", "charge", "payonce_key", "key-c"), "key-c").pi(t)
			re := b.c.post("/v1/refunds", refundForm(pi.ID, "600",
				"payonce_op", "op-r", "payonce_kind", "refund", "payonce_key", "key-r"), "key-r").refund(t)
			require.NoError(t, b.f.FailRefund(re.ID, "lost_or_stolen_card"))
			flush(t, b.f)

			rec.mu.Lock()
			bodies, headers := rec.bodies, rec.headers
			rec.mu.Unlock()
			var refundTargets []payonce.WebhookTarget
			var chargeTarget *payonce.WebhookTarget
			last := ""
			for i, body := range bodies {
				r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(body))
				r.Header = headers[i]
				evs, err := p.ParseWebhook(r, body)
				require.NoError(t, err, string(body))
				for _, ev := range evs {
					for _, tg := range ev.Targets {
						switch tg.Kind {
						case payonce.KindCharge:
							chargeTarget = &tg
						case payonce.KindRefund:
							refundTargets = append(refundTargets, tg)
							last = ev.Type
						}
					}
				}
			}
			require.NotNil(t, chargeTarget)
			require.Equal(t, payonce.WebhookTarget{Kind: payonce.KindCharge, OperationID: "op-1", ProviderRef: pi.ID,
				Key: "key-c", Amount: 1500, Currency: "USD", State: payonce.LookupSucceeded}, *chargeTarget)
			require.NotEmpty(t, refundTargets)
			for _, tg := range refundTargets {
				require.Equal(t, "key-r", tg.Key)
				require.Equal(t, int64(600), tg.Amount)
				require.Equal(t, "USD", tg.Currency)
				require.Equal(t, re.ID, tg.ProviderRef)
			}
			fail := refundTargets[len(refundTargets)-1]
			require.Equal(t, payonce.LookupFailed, fail.State)
			require.True(t, fail.Reversal, "a refund that failed after it succeeded is a reversal")
			require.Equal(t, "lost_or_stolen_card", fail.Code)
			switch version {
			case mocks.StripeAPIVersion:
				require.Equal(t, "refund.failed", last)
			default:
				require.Equal(t, "charge.refund.updated", last)
			}
			if version == "2024-06-20" {
				require.Len(t, refundTargets, 1, "charge.refunded names no refund between 2022-11-15 and 2024-10-28")
			}
		})
	}
}

package mocks_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func TestCreateIntentAutomaticSucceeds(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	form := charge("1500", "pm_card_visa", "order", "o-1")
	form.Set("currency", "USD")
	form.Set("description", "two shirts")
	r := b.c.post("/v1/payment_intents", form, "k1")

	pi := r.pi(t)
	require.True(t, strings.HasPrefix(pi.ID, "pi_"), pi.ID)
	require.Equal(t, "payment_intent", pi.Object)
	require.Equal(t, "succeeded", pi.Status)
	require.Equal(t, int64(1500), pi.Amount)
	require.Equal(t, int64(1500), pi.AmountReceived)
	require.Equal(t, int64(0), pi.AmountCapturable)
	require.Equal(t, "usd", pi.Currency)
	require.Equal(t, "automatic", pi.CaptureMethod)
	require.Equal(t, "two shirts", pi.Description)
	require.Equal(t, map[string]string{"order": "o-1"}, pi.Metadata)
	require.True(t, strings.HasPrefix(pi.LatestCharge, "ch_"), pi.LatestCharge)
	require.True(t, strings.HasPrefix(pi.PaymentMethod, "pm_"), pi.PaymentMethod)
	require.NotEqual(t, "pm_card_visa", pi.PaymentMethod)
	require.Equal(t, epoch.Unix(), pi.Created)

	require.True(t, strings.HasPrefix(r.header.Get("Request-Id"), "req_"))
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	require.Equal(t, mocks.StripeAPIVersion, r.header.Get("Stripe-Version"))
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.Equal(t, r.header.Get("Request-Id"), r.header.Get("Original-Request"))

	raw := r.raw(t)
	require.Nil(t, raw["customer"])
	require.Nil(t, raw["last_payment_error"])
	require.Nil(t, raw["canceled_at"])
	require.Contains(t, raw, "customer")
	require.Equal(t, false, raw["livemode"])

	got := b.c.get("/v1/payment_intents/" + pi.ID).pi(t)
	require.Equal(t, pi, got)

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 1)
	p := truth.Payments[0]
	require.Equal(t, pi.ID, p.ID)
	require.True(t, p.Authorized)
	require.Equal(t, int64(1500), p.AmountCaptured)
	require.Equal(t, "k1", p.IdempotencyKey)
	require.Equal(t, epoch, p.Created)
}

func TestCreateIntentManualCapture(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	form := manual(charge("2000", "pm_card_mastercard"))
	pi := b.c.post("/v1/payment_intents", form, "").pi(t)
	require.Equal(t, "requires_capture", pi.Status)
	require.Equal(t, int64(2000), pi.AmountCapturable)
	require.Equal(t, int64(0), pi.AmountReceived)
	require.Equal(t, int64(0), b.f.Truth().TotalCharged("usd"))
	require.Equal(t, map[string]int{}, b.f.Truth().ChargesBy("order"))

	e := b.c.post("/v1/payment_intents/"+pi.ID+"/capture", url.Values{"amount_to_capture": {"2500"}}, "").err(t, 400)
	require.Equal(t, "amount_too_large", e.Code)
	require.Equal(t, "amount_to_capture", e.Param)

	captured := b.c.post("/v1/payment_intents/"+pi.ID+"/capture",
		url.Values{"amount_to_capture": {"1200"}, "metadata[step]": {"captured"}}, "").pi(t)
	require.Equal(t, "succeeded", captured.Status)
	require.Equal(t, int64(1200), captured.AmountReceived)
	require.Equal(t, int64(0), captured.AmountCapturable)
	require.Equal(t, "captured", captured.Metadata["step"])
	require.Equal(t, int64(1200), b.f.Truth().TotalCharged("USD"))

	e = b.c.post("/v1/payment_intents/"+pi.ID+"/capture", nil, "").err(t, 400)
	require.Equal(t, "invalid_request_error", e.Type)
	require.Equal(t, "payment_intent_unexpected_state", e.Code)
	require.Contains(t, e.Message, "has a status of succeeded")
	require.NotNil(t, e.PaymentIntent)
	require.Equal(t, pi.ID, e.PaymentIntent.ID)

	e = b.c.post("/v1/payment_intents/pi_missing/capture", nil, "").err(t, 404)
	require.Equal(t, "resource_missing", e.Code)
}

func TestCreateIntentDeclines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pm, code, decline string
	}{
		{"pm_card_chargeDeclined", "card_declined", "generic_decline"},
		{"pm_card_chargeDeclinedInsufficientFunds", "card_declined", "insufficient_funds"},
		{"pm_card_chargeDeclinedLostCard", "card_declined", "lost_card"},
		{"pm_card_chargeDeclinedStolenCard", "card_declined", "stolen_card"},
		{"pm_card_chargeDeclinedFraudulent", "card_declined", "fraudulent"},
		{"pm_card_chargeDeclinedExpiredCard", "expired_card", "expired_card"},
		{"pm_card_chargeDeclinedIncorrectCvc", "incorrect_cvc", "incorrect_cvc"},
		{"pm_card_chargeDeclinedProcessingError", "processing_error", "processing_error"},
	}
	b := setup(t, mocks.StripeOptions{})
	for _, tc := range cases {
		t.Run(tc.pm, func(t *testing.T) {
			r := b.c.post("/v1/payment_intents", charge("700", tc.pm, "order", tc.pm), "key-"+tc.pm)
			e := r.err(t, http.StatusPaymentRequired)
			require.Equal(t, "card_error", e.Type)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, tc.decline, e.DeclineCode)
			require.NotEmpty(t, e.Message)
			require.True(t, strings.HasPrefix(e.Charge, "ch_"))
			require.Contains(t, e.RequestLogURL, r.header.Get("Request-Id"))
			require.NotNil(t, e.PaymentIntent)
			require.Equal(t, "requires_payment_method", e.PaymentIntent.Status)
			require.NotNil(t, e.PaymentIntent.LastPaymentError)
			require.Equal(t, tc.decline, e.PaymentIntent.LastPaymentError.DeclineCode)

			// The PaymentIntent exists and says why it failed.
			pi := b.c.get("/v1/payment_intents/" + e.PaymentIntent.ID).pi(t)
			require.Equal(t, "requires_payment_method", pi.Status)
			require.Equal(t, tc.code, pi.LastPaymentError.Code)
			p, ok := b.f.Truth().Payment(pi.ID)
			require.True(t, ok)
			require.False(t, p.Authorized)
		})
	}
	require.Empty(t, b.f.Truth().ChargesBy("order"))
	require.Len(t, b.f.Truth().PaymentsBy("order"), len(cases))
}

func TestCreateIntentValidation(t *testing.T) {
	t.Parallel()
	good := func() url.Values { return charge("1000", "pm_card_visa") }
	cases := []struct {
		name   string
		edit   func(v url.Values)
		code   string
		param  string
		status int
	}{
		{"missing amount", func(v url.Values) { v.Del("amount") }, "parameter_missing", "amount", 400},
		{"zero amount", func(v url.Values) { v.Set("amount", "0") }, "parameter_invalid_integer", "amount", 400},
		{"negative amount", func(v url.Values) { v.Set("amount", "-5") }, "parameter_invalid_integer", "amount", 400},
		{"not an integer", func(v url.Values) { v.Set("amount", "12.50") }, "parameter_invalid_integer", "amount", 400},
		{"too large", func(v url.Values) { v.Set("amount", "100000000") }, "amount_too_large", "amount", 400},
		{"missing currency", func(v url.Values) { v.Del("currency") }, "parameter_missing", "currency", 400},
		{"unknown currency", func(v url.Values) { v.Set("currency", "xyz") }, "", "currency", 400},
		{"bad capture method", func(v url.Values) { v.Set("capture_method", "later") }, "", "capture_method", 400},
		{"bad confirm", func(v url.Values) { v.Set("confirm", "yes") }, "", "confirm", 400},
		{"unknown parameter", func(v url.Values) { v.Set("amout", "1") }, "parameter_unknown", "amout", 400},
		{"unknown payment method", func(v url.Values) { v.Set("payment_method", "pm_nope") }, "resource_missing", "payment_method", 400},
		{"confirm without method", func(v url.Values) { v.Del("payment_method") }, "parameter_missing", "payment_method", 400},
		{"metadata key too long", func(v url.Values) { v.Set("metadata["+strings.Repeat("k", 41)+"]", "v") }, "", "metadata[" + strings.Repeat("k", 41) + "]", 400},
		{"metadata value too long", func(v url.Values) { v.Set("metadata[k]", strings.Repeat("v", 501)) }, "", "metadata[k]", 400},
	}
	b := setup(t, mocks.StripeOptions{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := good()
			tc.edit(v)
			key := "validation-" + tc.name
			e := b.c.post("/v1/payment_intents", v, key).err(t, tc.status)
			require.Equal(t, "invalid_request_error", e.Type)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, tc.param, e.Param)
			require.NotEmpty(t, e.Message)
			// A request that failed validation never began executing: its
			// key is not stored, so the corrected request may use it.
			r := b.c.post("/v1/payment_intents", good(), key)
			require.Equal(t, "succeeded", r.pi(t).Status)
			require.Empty(t, r.header.Get("Idempotent-Replayed"))
		})
	}
	require.Len(t, b.f.Truth().Payments, len(cases))
}

func TestCreateThenConfirm(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	pi := b.c.post("/v1/payment_intents", url.Values{"amount": {"900"}, "currency": {"eur"}}, "").pi(t)
	require.Equal(t, "requires_payment_method", pi.Status)
	require.Empty(t, pi.LatestCharge)

	e := b.c.post("/v1/payment_intents/"+pi.ID+"/confirm", url.Values{"payment_method": {"pm_card_chargeDeclined"}}, "").err(t, 402)
	require.Equal(t, "generic_decline", e.DeclineCode)

	ok := b.c.post("/v1/payment_intents/"+pi.ID+"/confirm", url.Values{"payment_method": {"pm_card_visa"}}, "").pi(t)
	require.Equal(t, "succeeded", ok.Status)
	require.Nil(t, ok.LastPaymentError)

	e = b.c.post("/v1/payment_intents/"+pi.ID+"/confirm", url.Values{"payment_method": {"pm_card_visa"}}, "").err(t, 400)
	require.Equal(t, "payment_intent_unexpected_state", e.Code)

	// A PaymentMethod id the fake issued behaves like the test method.
	again := b.c.post("/v1/payment_intents", charge("100", ok.PaymentMethod), "").pi(t)
	require.Equal(t, "succeeded", again.Status)
	require.Equal(t, ok.PaymentMethod, again.PaymentMethod)

	action := b.c.post("/v1/payment_intents", charge("100", "pm_card_authenticationRequired"), "").pi(t)
	require.Equal(t, "requires_action", action.Status)
	require.Equal(t, "use_stripe_sdk", action.NextAction["type"])
	require.Equal(t, int64(900), b.f.Truth().TotalCharged("eur"))
	require.Equal(t, int64(100), b.f.Truth().TotalCharged("usd"))
}

func TestGetIntentNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	e := b.c.get("/v1/payment_intents/pi_unknown").err(t, 404)
	require.Equal(t, "invalid_request_error", e.Type)
	require.Equal(t, "resource_missing", e.Code)
	require.Equal(t, "No such payment_intent: 'pi_unknown'", e.Message)
}

func TestCancelIntent(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	form := manual(charge("500", "pm_card_visa"))
	held := b.c.post("/v1/payment_intents", form, "").pi(t)

	e := b.c.post("/v1/payment_intents/"+held.ID+"/cancel", url.Values{"cancellation_reason": {"bored"}}, "").err(t, 400)
	require.Equal(t, "cancellation_reason", e.Param)

	b.clock.Advance(time.Minute)
	canceled := b.c.post("/v1/payment_intents/"+held.ID+"/cancel", url.Values{"cancellation_reason": {"requested_by_customer"}}, "").pi(t)
	require.Equal(t, "canceled", canceled.Status)
	require.Equal(t, "requested_by_customer", canceled.CancellationReason)
	require.Equal(t, epoch.Add(time.Minute).Unix(), canceled.CanceledAt)
	require.Equal(t, int64(0), canceled.AmountCapturable)

	e = b.c.post("/v1/payment_intents/"+held.ID+"/cancel", nil, "").err(t, 400)
	require.Equal(t, "payment_intent_unexpected_state", e.Code)

	paid := b.c.post("/v1/payment_intents", charge("500", "pm_card_visa"), "").pi(t)
	e = b.c.post("/v1/payment_intents/"+paid.ID+"/cancel", nil, "").err(t, 400)
	require.Equal(t, "payment_intent_unexpected_state", e.Code)
	require.Equal(t, "You cannot cancel this PaymentIntent because it has a status of succeeded. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.", e.Message)
	require.Equal(t, "succeeded", e.PaymentIntent.Status)

	truth := b.f.Truth()
	p, _ := truth.Payment(held.ID)
	require.True(t, p.Authorized, "an authorization that was released still counts as a charge attempt that reached the card")
	require.Equal(t, "canceled", p.Status)
	require.Equal(t, int64(500), truth.TotalCharged("usd"))
}

func TestListIntents(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	var ids []string
	for i := range 3 {
		ids = append(ids, b.c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "").pi(t).ID)
		if i < 2 {
			b.clock.Advance(time.Second)
		}
	}
	var l mocks.StripeIntentList
	r := b.c.get("/v1/payment_intents?limit=2")
	require.Equal(t, 200, r.status)
	require.NoError(t, json.Unmarshal(r.body, &l))
	require.Equal(t, "list", l.Object)
	require.Equal(t, "/v1/payment_intents", l.URL)
	require.True(t, l.HasMore)
	require.Equal(t, []string{ids[2], ids[1]}, piIDs(l.Data))

	l = mocks.StripeIntentList{}
	require.NoError(t, json.Unmarshal(b.c.get("/v1/payment_intents?limit=2&starting_after="+ids[1]).body, &l))
	require.False(t, l.HasMore)
	require.Equal(t, []string{ids[0]}, piIDs(l.Data))

	l = mocks.StripeIntentList{}
	q := url.Values{"created[gte]": {strconv.FormatInt(epoch.Unix()+1, 10)}}
	require.NoError(t, json.Unmarshal(b.c.get("/v1/payment_intents?"+q.Encode()).body, &l))
	require.Equal(t, []string{ids[2], ids[1]}, piIDs(l.Data))

	e := b.c.get("/v1/payment_intents?limit=101").err(t, 400)
	require.Equal(t, "limit", e.Param)
	e = b.c.get("/v1/payment_intents?colour=red").err(t, 400)
	require.Equal(t, "parameter_unknown", e.Code)
}

func TestRefunds(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	pi := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "o-9"), "").pi(t)

	re := b.c.post("/v1/refunds", refundForm(pi.ID, "300", "op", "r1"), "rk1").refund(t)
	require.True(t, strings.HasPrefix(re.ID, "re_"), re.ID)
	require.Equal(t, "refund", re.Object)
	require.Equal(t, int64(300), re.Amount)
	require.Equal(t, "usd", re.Currency)
	require.Equal(t, pi.ID, re.PaymentIntent)
	require.Equal(t, pi.LatestCharge, re.Charge)
	require.Equal(t, "succeeded", re.Status)
	require.Equal(t, map[string]string{"op": "r1"}, re.Metadata)

	e := b.c.post("/v1/refunds", refundForm(pi.ID, "800"), "").err(t, 400)
	require.Equal(t, "invalid_request_error", e.Type)
	require.Equal(t, "amount_too_large", e.Code)
	require.Equal(t, "amount", e.Param)
	require.Equal(t, "Refund amount ($8.00) is greater than unrefunded amount on charge ($7.00)", e.Message)

	// Without an amount, whatever remains is refunded; by charge works too.
	rest := b.c.post("/v1/refunds", url.Values{"charge": {pi.LatestCharge}}, "").refund(t)
	require.Equal(t, int64(700), rest.Amount)

	e = b.c.post("/v1/refunds", refundForm(pi.ID, ""), "").err(t, 400)
	require.Equal(t, "charge_already_refunded", e.Code)

	require.Equal(t, re, b.c.get("/v1/refunds/"+re.ID).refund(t))
	e = b.c.get("/v1/refunds/re_missing").err(t, 404)
	require.Equal(t, "resource_missing", e.Code)

	var l mocks.StripeRefundList
	require.NoError(t, json.Unmarshal(b.c.get("/v1/refunds?payment_intent="+pi.ID).body, &l))
	require.Equal(t, "list", l.Object)
	require.Len(t, l.Data, 2)
	require.Equal(t, rest.ID, l.Data[0].ID, "newest first")

	e = b.c.post("/v1/refunds", refundForm("pi_missing", ""), "").err(t, 404)
	require.Equal(t, "resource_missing", e.Code)
	e = b.c.post("/v1/refunds", url.Values{}, "").err(t, 400)
	require.Equal(t, "parameter_missing", e.Code)
	e = b.c.post("/v1/refunds", refundForm(pi.ID, "0"), "").err(t, 400)
	require.Equal(t, "amount", e.Param)

	form := manual(charge("1000", "pm_card_visa"))
	held := b.c.post("/v1/payment_intents", form, "").pi(t)
	e = b.c.post("/v1/refunds", refundForm(held.ID, ""), "").err(t, 400)
	require.Contains(t, e.Message, "does not have a successful charge to refund")

	truth := b.f.Truth()
	require.Equal(t, int64(1000), truth.TotalRefunded("usd"))
	require.Equal(t, map[string]int{"r1": 1}, truth.RefundsBy("op"))
	p, _ := truth.Payment(pi.ID)
	require.Equal(t, int64(1000), p.AmountRefunded)
	require.Equal(t, "rk1", truth.Refunds[0].IdempotencyKey)
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	f := mocks.NewStripe(mocks.StripeOptions{APIKeys: []string{"sk_test_abcdefghijklmnop1234"}})
	t.Cleanup(f.Close)
	require.Equal(t, "sk_test_abcdefghijklmnop1234", f.APIKey())

	c := newClient(t, f, f.Client())
	c.key = ""
	r := c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "a1")
	e := r.err(t, 401)
	require.Equal(t, "invalid_request_error", e.Type)
	require.Contains(t, e.Message, "You did not provide an API key")
	require.True(t, strings.HasPrefix(r.header.Get("Request-Id"), "req_"))
	require.NotEmpty(t, r.header.Get("Www-Authenticate"))

	c.key = "sk_test_wrongwrongwrong9876"
	r = c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "a1")
	e = r.err(t, 401)
	require.Contains(t, e.Message, "Invalid API Key provided: sk_test_")
	require.Contains(t, e.Message, "9876")
	require.NotContains(t, string(r.body), "wrongwrongwrong", "the key is redacted")
	require.Empty(t, f.Truth().Payments)

	// HTTP Basic with the key as user name works, as at Stripe.
	req, err := http.NewRequest(http.MethodGet, f.URL()+"/v1/payment_intents", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(f.APIKey()+":")))
	resp, err := f.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)

	// The rejected key's idempotency key was not stored.
	c.key = f.APIKey()
	r = c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "a1")
	require.Equal(t, "succeeded", r.pi(t).Status)
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
}

func TestUnknownRoute(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	e := b.c.get("/v1/customers/cus_1").err(t, 404)
	require.Contains(t, e.Message, "Unrecognized request URL (GET: /v1/customers/cus_1)")
	e = b.c.post("/v1/payment_intents/pi_1", url.Values{"amount": {"1"}}, "").err(t, 404)
	require.Contains(t, e.Message, "Unrecognized request URL")
	require.Equal(t, 2, b.f.Truth().Requests["unknown"])
}

func TestNewStripeHandlerMounted(t *testing.T) {
	t.Parallel()
	h := mocks.NewStripeHandler(mocks.StripeOptions{Options: mocks.Options{Seed: 7}})
	defer h.Release()
	mux := http.NewServeMux()
	mux.Handle("/stripe/", http.StripPrefix("/stripe", h))
	req, err := http.NewRequest(http.MethodPost, "/stripe/v1/payment_intents", strings.NewReader(charge("100", "pm_card_visa").Encode()))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.APIKey())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code, rec.Body.String())
	require.Len(t, h.Truth().Payments, 1)
	require.True(t, strings.HasPrefix(h.APIKey(), "sk_test_"))
}

func piIDs(pis []mocks.StripePaymentIntent) []string {
	out := make([]string, 0, len(pis))
	for _, p := range pis {
		out = append(out, p.ID)
	}
	return out
}

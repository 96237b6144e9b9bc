package stripe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/stripe"
)

// lookupQuery looks up chargeReq's operation as kind: a charge of 1999, a
// refund of 100, a capture of the whole authorization, a cancel.
func lookupQuery(kind payonce.Kind, paymentRef, providerRef string) payonce.LookupQuery {
	r := chargeReq()
	switch kind {
	case payonce.KindCharge:
		paymentRef = ""
	case payonce.KindRefund:
		r = withKind(r, kind, 100, paymentRef)
	default:
		r = withKind(r, kind, 0, paymentRef)
	}
	return payonce.LookupQuery{OperationID: r.OperationID, Key: r.Key, Request: r.Request, ProviderRef: providerRef}
}

func piJSON(id, status string, amountReceived int64, lpe string) string {
	var e any
	if lpe != "" {
		e = json.RawMessage(lpe)
	}
	return piObj(id, status, "amount_received", amountReceived, "last_payment_error", e)
}

func searchJSON(hasMore bool, pis ...string) string {
	return fmt.Sprintf(`{"object":"search_result","url":"/v1/payment_intents/search","has_more":%t,"data":[%s]}`, hasMore, strings.Join(pis, ","))
}

func refundJSON(id, op, status, reason string) string {
	var r any
	if reason != "" {
		r = reason
	}
	return refundObj(id, status, "failure_reason", r,
		"metadata", map[string]string{stripe.MetaOperation: op, stripe.MetaKey: opKey})
}

func refundList(hasMore bool, refunds ...string) string {
	return fmt.Sprintf(`{"object":"list","url":"/v1/refunds","has_more":%t,"data":[%s]}`, hasMore, strings.Join(refunds, ","))
}

const declined = `{"type":"card_error","code":"card_declined","decline_code":"do_not_honor","message":"Your card was declined."}`

// getOK registers a GET answer and checks the request's headers.
func getOK(t *testing.T, b bundle, u string, status int, body string) {
	t.Helper()
	wire.ServeGET(b.MT, u, func() *http.Response { return respond(status, body, "Request-Id", "req_lookup") })
}

func TestLookupChargeByID(t *testing.T) {
	t.Parallel()
	serve := func(t *testing.T, body string) (payonce.Provider, payonce.HTTPDoer, *httpmock.MockTransport) {
		b := setup(t)
		getOK(t, b, base+"/v1/payment_intents/pi_1", 200, body)
		return b.P, b.HC, b.MT
	}
	testkit.RequireReadByID(t, serve, lookupQuery(payonce.KindCharge, "", "pi_1"), []testkit.ReadCase{
		{Name: "succeeded", Body: piJSON("pi_1", "succeeded", 1999, ""), State: payonce.LookupSucceeded},
		{Name: "requires_capture", Body: piJSON("pi_1", "requires_capture", 0, ""), State: payonce.LookupSucceeded},
		{Name: "processing", Body: piJSON("pi_1", "processing", 0, ""), State: payonce.LookupProcessing},
		{Name: "requires_payment_method", Body: piJSON("pi_1", "requires_payment_method", 0, declined), State: payonce.LookupFailed, Code: "card_declined", Decline: "do_not_honor"},
		{Name: "requires_payment_method bare", Body: piJSON("pi_1", "requires_payment_method", 0, ""), State: payonce.LookupFailed, Code: "requires_payment_method"},
		{Name: "canceled", Body: piJSON("pi_1", "canceled", 0, ""), State: payonce.LookupFailed, Code: "canceled"},
		{Name: "canceled after decline", Body: piJSON("pi_1", "canceled", 0, declined), State: payonce.LookupFailed, Code: "card_declined", Decline: "do_not_honor"},
		{Name: "requires_action", Body: piJSON("pi_1", "requires_action", 0, ""), State: payonce.LookupFailed, Code: "requires_action"},
		{Name: "requires_confirmation", Body: piJSON("pi_1", "requires_confirmation", 0, ""), State: payonce.LookupFailed, Code: "requires_confirmation"},
	}, 1)
}

func TestLookupChargeByIDNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	getOK(t, b, base+"/v1/payment_intents/pi_gone", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent: 'pi_gone'","param":"intent"}}`)
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pi_gone"))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupResult{State: payonce.LookupNotFound}, res)
}

func TestLookupChargeSearch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		body  string
		state payonce.LookupState
		refs  []string
	}{
		{name: "none", body: searchJSON(false), state: payonce.LookupNotFound},
		{name: "one succeeded", body: searchJSON(false, piJSON("pi_1", "succeeded", 1999, "")), state: payonce.LookupSucceeded, refs: []string{"pi_1"}},
		{name: "one processing", body: searchJSON(false, piJSON("pi_1", "processing", 0, "")), state: payonce.LookupProcessing, refs: []string{"pi_1"}},
		{name: "one failed", body: searchJSON(false, piJSON("pi_1", "requires_payment_method", 0, declined)), state: payonce.LookupFailed, refs: []string{"pi_1"}},
		{name: "two", body: searchJSON(false, piJSON("pi_1", "succeeded", 1999, ""), piJSON("pi_2", "succeeded", 1999, "")), state: payonce.LookupMultiple, refs: []string{"pi_1", "pi_2"}},
		{name: "one and more", body: searchJSON(true, piJSON("pi_1", "succeeded", 1999, "")), state: payonce.LookupMultiple, refs: []string{"pi_1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *stripe.Config) { c.SearchLag = 3 * time.Minute })
			var gotQuery url.Values
			b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/search", func(req *http.Request) (*http.Response, error) {
				gotQuery = req.URL.Query()
				return respond(200, tc.body), nil
			})
			// Every hit is read again by id; here it says the same.
			var found struct {
				Data []json.RawMessage `json:"data"`
			}
			require.NoError(t, json.Unmarshal([]byte(tc.body), &found))
			for _, hit := range found.Data {
				var h struct{ ID string }
				require.NoError(t, json.Unmarshal(hit, &h))
				getOK(t, b, base+"/v1/payment_intents/"+h.ID, 200, string(hit))
			}
			q := lookupQuery(payonce.KindCharge, "", "")
			res, err := b.P.Lookup(context.Background(), b.HC, q)
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State)
			require.Equal(t, tc.refs, res.Refs)
			if len(tc.refs) > 0 {
				require.Equal(t, tc.refs[0], res.ProviderRef)
			}
			require.Equal(t, 3*time.Minute, res.Lag, "search is eventually consistent")
			require.Equal(t, "metadata['payonce_op']:'"+q.OperationID+"'", gotQuery.Get("query"))
			require.Equal(t, "10", gotQuery.Get("limit"))
		})
	}
}

func TestLookupSearchEscaping(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var raw, got string
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/search", func(req *http.Request) (*http.Response, error) {
		raw = req.URL.RawQuery
		got = req.URL.Query().Get("query")
		return respond(200, searchJSON(false)), nil
	})
	q := lookupQuery(payonce.KindCharge, "", "")
	q.OperationID = `x' OR status:'succeeded\&limit=1`
	_, err := b.P.Lookup(context.Background(), b.HC, q)
	require.NoError(t, err)
	require.Equal(t, `metadata['payonce_op']:'x\' OR status:\'succeeded\\&limit=1'`, got)
	require.NotContains(t, raw, "&limit=1&", "the value is URL-encoded, not spliced into the query string")
	vals, _ := url.ParseQuery(raw)
	require.Equal(t, []string{"10"}, vals["limit"])
}

// A capture or cancel is read from its PaymentIntent by id.
func TestLookupCaptureCancel(t *testing.T) {
	t.Parallel()
	capture, cancel := lookupQuery(payonce.KindCapture, "pi_1", ""), lookupQuery(payonce.KindCancel, "pi_1", "")
	testkit.RequireStates(t, func(t *testing.T, body string) (payonce.Provider, payonce.HTTPDoer) {
		b := setup(t)
		getOK(t, b, base+"/v1/payment_intents/pi_1", 200, body)
		return b.P, b.HC
	}, []testkit.StateCase{
		{Name: "capture succeeded", Q: capture, Body: piJSON("pi_1", "succeeded", 1999, ""), State: payonce.LookupSucceeded},
		{Name: "capture succeeded nothing received", Q: capture, Body: piJSON("pi_1", "succeeded", 0, ""), Err: true},
		{Name: "capture processing", Q: capture, Body: piJSON("pi_1", "processing", 0, ""), State: payonce.LookupProcessing},
		{Name: "capture requires_capture", Q: capture, Body: piJSON("pi_1", "requires_capture", 0, ""), State: payonce.LookupNotFound},
		{Name: "capture canceled", Q: capture, Body: piJSON("pi_1", "canceled", 0, ""), State: payonce.LookupFailed, Code: "payment_intent_unexpected_state"},
		{Name: "capture requires_payment_method", Q: capture, Body: piJSON("pi_1", "requires_payment_method", 0, ""), State: payonce.LookupFailed, Code: "payment_intent_unexpected_state"},
		{Name: "capture unknown", Q: capture, Body: piJSON("pi_1", "brand_new", 0, ""), Err: true},
		{Name: "cancel canceled", Q: cancel, Body: piJSON("pi_1", "canceled", 0, ""), State: payonce.LookupSucceeded},
		{Name: "cancel succeeded", Q: cancel, Body: piJSON("pi_1", "succeeded", 1999, ""), State: payonce.LookupFailed, Code: "payment_intent_unexpected_state"},
		{Name: "cancel requires_capture", Q: cancel, Body: piJSON("pi_1", "requires_capture", 0, ""), State: payonce.LookupNotFound},
		{Name: "cancel requires_payment_method", Q: cancel, Body: piJSON("pi_1", "requires_payment_method", 0, ""), State: payonce.LookupNotFound},
		{Name: "cancel processing", Q: cancel, Body: piJSON("pi_1", "processing", 0, ""), State: payonce.LookupNotFound},
	})
}

func TestLookupCaptureCancelFallbackAndMissing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	getOK(t, b, base+"/v1/payment_intents/pi_ref", 200, piJSON("pi_ref", "canceled", 0, ""))
	getOK(t, b, base+"/v1/payment_intents/pi_gone", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent"}}`)
	testkit.RequireActionFallback(t, b.P, b.HC, lookupQuery, "pi_ref", "pi_gone")
}

func TestLookupRefund(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	other := refundJSON("re_other", "another-op", "succeeded", "")
	for _, tc := range []struct {
		name  string
		body  string
		state payonce.LookupState
		refs  []string
		code  string
	}{
		{name: "none", body: refundList(false), state: payonce.LookupNotFound},
		{name: "only others", body: refundList(false, other, `{"id":"re_manual","object":"refund","status":"succeeded","metadata":{}}`), state: payonce.LookupNotFound},
		{name: "succeeded", body: refundList(false, other, refundJSON("re_1", op, "succeeded", "")), state: payonce.LookupSucceeded, refs: []string{"re_1"}},
		{name: "pending", body: refundList(false, refundJSON("re_1", op, "pending", "")), state: payonce.LookupProcessing, refs: []string{"re_1"}},
		{name: "requires_action", body: refundList(false, refundJSON("re_1", op, "requires_action", "")), state: payonce.LookupProcessing, refs: []string{"re_1"}},
		{name: "failed", body: refundList(false, refundJSON("re_1", op, "failed", "lost_or_stolen_card")), state: payonce.LookupFailed, refs: []string{"re_1"}, code: "lost_or_stolen_card"},
		{name: "canceled", body: refundList(false, refundJSON("re_1", op, "canceled", "")), state: payonce.LookupFailed, refs: []string{"re_1"}, code: "refund_canceled"},
		{name: "two", body: refundList(false, refundJSON("re_1", op, "succeeded", ""), other, refundJSON("re_2", op, "succeeded", "")), state: payonce.LookupMultiple, refs: []string{"re_1", "re_2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var gotQuery url.Values
			b.MT.RegisterResponder(http.MethodGet, base+"/v1/refunds", func(req *http.Request) (*http.Response, error) {
				gotQuery = req.URL.Query()
				return respond(200, tc.body), nil
			})
			// The recorded refund, when the list does not show it, is read
			// by id: here Stripe does not know it.
			getOK(t, b, base+"/v1/refunds/re_1", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such refund: 're_1'"}}`)
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "pi_1", "re_1"))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State)
			require.Equal(t, tc.refs, res.Refs)
			require.Equal(t, tc.code, res.Code)
			require.Zero(t, res.Lag, "lists are consistent")
			require.Equal(t, url.Values{"payment_intent": {"pi_1"}, "limit": {"100"}}, gotQuery)
		})
	}
}

func TestLookupRefundPaginates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	op := chargeReq().OperationID
	page1 := make([]string, 100)
	for i := range page1 {
		page1[i] = refundJSON(fmt.Sprintf("re_a%03d", i), "other", "succeeded", "")
	}
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/refunds", func(req *http.Request) (*http.Response, error) {
		switch req.URL.Query().Get("starting_after") {
		case "":
			return respond(200, refundList(true, page1...)), nil
		case "re_a099":
			return respond(200, refundList(false, refundJSON("re_mine", op, "succeeded", ""))), nil
		}
		return respond(400, `{"error":{"type":"invalid_request_error"}}`), nil
	})
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "pi_1", ""))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupSucceeded, res.State)
	require.Equal(t, "re_mine", res.ProviderRef)
	require.Equal(t, 2, b.MT.GetTotalCallCount())
}

func TestLookupRefundNeedsRefs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "", "re_1"))
	require.ErrorContains(t, err, "PaymentRef")
	q := lookupQuery(payonce.KindRefund, "pi_1", "")
	q.OperationID = ""
	_, err = b.P.Lookup(context.Background(), b.HC, q)
	require.ErrorContains(t, err, "OperationID")
	q = lookupQuery(payonce.KindCharge, "", "")
	q.OperationID = ""
	_, err = b.P.Lookup(context.Background(), b.HC, q)
	require.ErrorContains(t, err, "OperationID")
	_, err = b.P.Lookup(context.Background(), nil, lookupQuery(payonce.KindCharge, "", "pi_1"))
	require.Error(t, err)
	_, err = b.P.Lookup(context.Background(), b.HC, lookupQuery("payout", "", "pi_1"))
	require.Error(t, err)
	require.Zero(t, b.MT.GetTotalCallCount())
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	huge := `{"object":"search_result","data":[],"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	serve := func(t *testing.T, tc testkit.LookupErrorCase) (payonce.Provider, payonce.HTTPDoer) {
		b := setup(t)
		b.MT.RegisterResponder(http.MethodGet, base+tc.URL, httpmock.NewStringResponder(tc.Status, tc.Body).HeaderSet(http.Header{"Request-Id": {"req_x"}}))
		return b.P, b.HC
	}
	testkit.RequireLookupErrors(t, serve, []testkit.LookupErrorCase{
		{Name: "500 by id", Q: lookupQuery(payonce.KindCharge, "", "pi_1"), URL: "/v1/payment_intents/pi_1", Status: 500, Body: `{"error":{"type":"api_error","message":"boom"}}`, Temporary: true},
		{Name: "429 search", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v1/payment_intents/search", Status: 429, Body: `{"error":{"type":"invalid_request_error","code":"rate_limit"}}`, Temporary: true},
		{Name: "503 refunds", Q: lookupQuery(payonce.KindRefund, "pi_1", ""), URL: "/v1/refunds", Status: 503, Temporary: true},
		{Name: "401", Q: lookupQuery(payonce.KindCapture, "pi_1", ""), URL: "/v1/payment_intents/pi_1", Status: 401, Body: `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided: sk_test_****wxyz"}}`},
		{Name: "404 on search", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v1/payment_intents/search", Status: 404, Body: `{"error":{"type":"invalid_request_error","code":"resource_missing"}}`},
		{Name: "404 not from Stripe", Q: lookupQuery(payonce.KindCharge, "", "pi_1"), URL: "/v1/payment_intents/pi_1", Status: 404, Body: `<html>Not Found</html>`},
		{Name: "malformed PI", Q: lookupQuery(payonce.KindCharge, "", "pi_1"), URL: "/v1/payment_intents/pi_1", Status: 200, Body: `{"id":"pi_1",`, Temporary: true},
		{Name: "wrong object", Q: lookupQuery(payonce.KindCancel, "pi_1", ""), URL: "/v1/payment_intents/pi_1", Status: 200, Body: `{"id":"re_1","object":"refund","status":"succeeded"}`, Temporary: true},
		{Name: "PI without id", Q: lookupQuery(payonce.KindCancel, "pi_1", ""), URL: "/v1/payment_intents/pi_1", Status: 200, Body: `{"object":"payment_intent","status":"canceled"}`, Temporary: true},
		{Name: "unknown charge status", Q: lookupQuery(payonce.KindCharge, "", "pi_1"), URL: "/v1/payment_intents/pi_1", Status: 200, Body: piJSON("pi_1", "brand_new", 0, "")},
		{Name: "search wrong object", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v1/payment_intents/search", Status: 200, Body: `{"object":"list","data":[]}`, Temporary: true},
		{Name: "search bad item", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v1/payment_intents/search", Status: 200, Body: searchJSON(false, `{"object":"payment_intent"}`), Temporary: true},
		{Name: "search empty but more", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v1/payment_intents/search", Status: 200, Body: searchJSON(true), Temporary: true},
		{Name: "search oversized", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v1/payment_intents/search", Status: 200, Body: huge, Temporary: true},
		{Name: "refund list wrong object", Q: lookupQuery(payonce.KindRefund, "pi_1", ""), URL: "/v1/refunds", Status: 200, Body: searchJSON(false), Temporary: true},
		{Name: "refund bad item", Q: lookupQuery(payonce.KindRefund, "pi_1", ""), URL: "/v1/refunds", Status: 200, Body: refundList(false, `{"id":"re_1","object":"charge"}`), Temporary: true},
		{Name: "refund unknown status", Q: lookupQuery(payonce.KindRefund, "pi_1", ""), URL: "/v1/refunds", Status: 200, Body: refundList(false, refundJSON("re_1", chargeReq().OperationID, "weird", ""))},
		{Name: "refund empty but more", Q: lookupQuery(payonce.KindRefund, "pi_1", ""), URL: "/v1/refunds", Status: 200, Body: refundList(true), Temporary: true},
	}, func(t *testing.T, ae *stripe.APIError) { require.Equal(t, "req_x", ae.RequestID) }, testKey, "Bearer")
}

func TestLookupTransportErrorAndBodyClosed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testkit.RequireLookupTransport(t, b.P, lookupQuery(payonce.KindCharge, "", "pi_1"),
		lookupQuery(payonce.KindCapture, "pi_1", ""), piJSON("pi_1", "succeeded", 1, ""))
}

func TestLookupStripeVersion(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *stripe.Config) { c.APIVersion = "2024-06-20" })
	var version string
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/pi_1", func(req *http.Request) (*http.Response, error) {
		version = req.Header.Get("Stripe-Version")
		return respond(200, piJSON("pi_1", "succeeded", 1, "")), nil
	})
	_, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pi_1"))
	require.NoError(t, err)
	require.Equal(t, "2024-06-20", version)
}

// An unknown status is quoted in the lookup's error; it comes from Stripe's
// answer, so it is scrubbed like every other provider text: no key, bounded.
func TestLookupUnknownStatusIsScrubbed(t *testing.T) {
	t.Parallel()
	status := "weird " + testKey + " sk_live_" + strings.Repeat("Z", 40) + " " + strings.Repeat("x", 3000)
	id := "pi_" + testKey
	for _, tc := range []struct {
		name string
		q    payonce.LookupQuery
		u    string
		body string
	}{
		{name: "charge", q: lookupQuery(payonce.KindCharge, "", "pi_1"), u: "/v1/payment_intents/pi_1", body: piJSON(id, status, 0, "")},
		{name: "capture", q: lookupQuery(payonce.KindCapture, "pi_1", ""), u: "/v1/payment_intents/pi_1", body: piJSON(id, status, 0, "")},
		{name: "capture succeeded without amount", q: lookupQuery(payonce.KindCapture, "pi_1", ""), u: "/v1/payment_intents/pi_1", body: piJSON(id, "succeeded", 0, "")},
		{name: "cancel", q: lookupQuery(payonce.KindCancel, "pi_1", ""), u: "/v1/payment_intents/pi_1", body: piJSON(id, status, 0, "")},
		{name: "refund", q: lookupQuery(payonce.KindRefund, "pi_1", ""), u: "/v1/refunds", body: refundList(false, refundJSON("re_"+testKey, chargeReq().OperationID, status, ""))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.MT.RegisterResponder(http.MethodGet, base+tc.u, httpmock.NewStringResponder(200, tc.body))
			_, err := b.P.Lookup(context.Background(), b.HC, tc.q)
			require.Error(t, err)
			require.NotContains(t, err.Error(), testKey)
			require.NotContains(t, err.Error(), "sk_live_ZZZZ")
			require.Contains(t, err.Error(), "[REDACTED]")
			require.Less(t, len(err.Error()), 2500, "the quoted status is bounded")
		})
	}
}

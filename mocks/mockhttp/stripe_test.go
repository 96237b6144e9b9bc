package mockhttp_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks/mockhttp"
)

func TestHTTPMockResponders(t *testing.T) {
	t.Parallel()
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("POST", "https://api.stripe.com/v1/payment_intents",
		mockhttp.StripeErrorResponder(402, "card_error", "card_declined", "insufficient_funds", "Your card has insufficient funds."))
	mt.RegisterResponder("GET", "https://api.stripe.com/v1/payment_intents/pi_1",
		mockhttp.StripePaymentIntentResponder(mockhttp.StripePaymentIntent{ID: "pi_1", Amount: 500, Currency: "usd", Status: "succeeded"}).
			HeaderSet(http.Header{"Idempotent-Replayed": {"true"}}))
	mt.RegisterResponder("GET", "https://api.stripe.com/v1/payment_intents/search",
		mockhttp.StripeSearchResponder(mockhttp.StripePaymentIntent{ID: "pi_2", Status: "requires_capture"}))
	mt.RegisterResponder("GET", "https://api.stripe.com/v1/refunds",
		mockhttp.StripeListResponder("/v1/refunds", mockhttp.StripeRefund{ID: "re_1", Amount: 100, Status: "succeeded"}))
	mt.RegisterResponder("POST", "https://api.stripe.com/v1/refunds",
		mockhttp.StripeRefundResponder(mockhttp.StripeRefund{ID: "re_2", Amount: 100, Status: "succeeded"}))
	mt.RegisterResponder("GET", "https://api.stripe.com/v1/payment_intents",
		mockhttp.StripeErrorResponder(429, "invalid_request_error", "rate_limit", "", "Too many requests."))
	hc := &http.Client{Transport: mt}

	get := func(method, url string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, url, strings.NewReader(""))
		require.NoError(t, err)
		resp, err := hc.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}

	resp, body := get("POST", "https://api.stripe.com/v1/payment_intents")
	require.Equal(t, 402, resp.StatusCode)
	require.Equal(t, "req_httpmock_1", resp.Header.Get("Request-Id"))
	var e struct {
		Error map[string]string `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e))
	require.Equal(t, map[string]string{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds",
		"message": "Your card has insufficient funds.", "doc_url": "https://stripe.com/docs/error-codes/card-declined"}, e.Error)
	resp, _ = get("POST", "https://api.stripe.com/v1/payment_intents")
	require.Equal(t, "req_httpmock_2", resp.Header.Get("Request-Id"))

	resp, body = get("GET", "https://api.stripe.com/v1/payment_intents/pi_1")
	require.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	var raw map[string]any
	require.NoError(t, json.Unmarshal(body, &raw))
	require.Equal(t, "payment_intent", raw["object"])
	require.Nil(t, raw["latest_charge"])
	require.Equal(t, map[string]any{}, raw["metadata"])

	_, body = get("GET", "https://api.stripe.com/v1/payment_intents/search")
	var sr struct {
		Object string                         `json:"object"`
		Data   []mockhttp.StripePaymentIntent `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &sr))
	require.Equal(t, "search_result", sr.Object)
	require.Equal(t, "pi_2", sr.Data[0].ID)

	_, body = get("GET", "https://api.stripe.com/v1/refunds")
	var l struct {
		Object string                  `json:"object"`
		Data   []mockhttp.StripeRefund `json:"data"`
	}
	require.NoError(t, json.Unmarshal(body, &l))
	require.Equal(t, "list", l.Object)
	require.Equal(t, "re_1", l.Data[0].ID)

	_, body = get("POST", "https://api.stripe.com/v1/refunds")
	require.Contains(t, string(body), `"object": "refund"`)

	resp, _ = get("GET", "https://api.stripe.com/v1/payment_intents")
	require.Equal(t, 429, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))
}

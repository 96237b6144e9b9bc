package mockhttp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/jarcoal/httpmock"

	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/mocks/internal/stripewire"
)

// These helpers build github.com/jarcoal/httpmock responders that answer in
// Stripe's wire format, for unit tests of request shapes and error parsing
// that do not need the full fake. Every answer carries a Request-Id header
// (req_httpmock_1, _2, ... per responder); add others with the responder's
// HeaderSet, e.g. .HeaderSet(http.Header{"Idempotent-Replayed": {"true"}}).

// StripePaymentIntent is a PaymentIntent as Stripe's API v1 renders it,
// in the shape the fake Stripe of package mocks answers with: the fields
// payonce reads, named as Stripe's JSON names them
// (https://docs.stripe.com/api/payment_intents/object). Its MarshalJSON
// renders empty nullable fields as null and fills in Stripe's defaults
// ("object": "payment_intent", "metadata": {}), so a fixture needs only
// the fields a test is about.
type StripePaymentIntent = stripewire.PaymentIntent

// StripeRefund is a Refund as Stripe's API v1 renders it, in the fake
// Stripe's shape (https://docs.stripe.com/api/refunds/object), with
// Stripe's nulls and defaults filled in when rendered.
type StripeRefund = stripewire.Refund

// StripeErrorResponder answers status with Stripe's error body
// {"error": {"type": typ, "code": code, "decline_code": declineCode,
// "message": message}}; empty code and declineCode are left out. For a 429
// it also sets Retry-After: 1.
func StripeErrorResponder(status int, typ, code, declineCode, message string) httpmock.Responder {
	e := stripewire.Error{Type: typ, Code: code, DeclineCode: declineCode, Message: message}
	if code != "" {
		e.DocURL = "https://stripe.com/docs/error-codes/" + strings.ReplaceAll(code, "_", "-")
	}
	r := stripeJSONResponder(status, stripewire.ErrorBody{Error: e})
	if status == http.StatusTooManyRequests {
		r = r.HeaderSet(http.Header{"Retry-After": {"1"}})
	}
	return r
}

// StripePaymentIntentResponder answers 200 with pi rendered as Stripe does
// (object, nulls and metadata filled in).
func StripePaymentIntentResponder(pi StripePaymentIntent) httpmock.Responder {
	return stripeJSONResponder(http.StatusOK, pi)
}

// StripeRefundResponder answers 200 with re rendered as Stripe does.
func StripeRefundResponder(re StripeRefund) httpmock.Responder {
	return stripeJSONResponder(http.StatusOK, re)
}

// StripeSearchResponder answers 200 with a PaymentIntent search result
// holding pis and has_more false.
func StripeSearchResponder(pis ...StripePaymentIntent) httpmock.Responder {
	return stripeJSONResponder(http.StatusOK, stripewire.SearchResult[StripePaymentIntent]{
		Object: "search_result", Data: pis, URL: "/v1/payment_intents/search"})
}

// StripeListResponder answers 200 with Stripe's list envelope for url
// (e.g. "/v1/refunds") holding items and has_more false.
func StripeListResponder[T any](url string, items ...T) httpmock.Responder {
	if items == nil {
		items = []T{}
	}
	return stripeJSONResponder(http.StatusOK, stripewire.List[T]{Object: "list", Data: items, URL: url})
}

func stripeJSONResponder(status int, v any) httpmock.Responder {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot render %T: %v", v, err))
	}
	var n atomic.Int64
	return func(req *http.Request) (*http.Response, error) {
		resp := httpmock.NewBytesResponse(status, body)
		resp.Header.Set("Content-Type", "application/json")
		resp.Header.Set("Request-Id", fmt.Sprintf("req_httpmock_%d", n.Add(1)))
		resp.Header.Set("Stripe-Version", mocks.StripeAPIVersion)
		resp.Request = req
		return resp, nil
	}
}

package mocks_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

type ppBundle = fakeBundle[*mocks.PayPal]

func ppSetup(t *testing.T, opts mocks.PayPalOptions) *ppBundle {
	t.Helper()
	return startFake(t, &opts.Clock, func() *mocks.PayPal { return mocks.NewPayPal(opts) }, ppClient)
}

// ppClient is a PayPal client of f: a Bearer token fetched once, and
// Prefer: return=representation as the adapter sends it.
func ppClient(t *testing.T, f *mocks.PayPal, hc *http.Client) *client {
	tok := ppFetchToken(t, f, hc)
	return &client{t: t, base: f.URL(), keyHeader: "PayPal-Request-Id", hc: hc, auth: func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Prefer", "return=representation")
	}}
}

// ppTokenRequest is POST /v1/oauth2/token with Basic id:secret.
func ppTokenRequest(t *testing.T, f *mocks.PayPal, hc *http.Client, id, secret, form string) *result {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.URL()+"/v1/oauth2/token", strings.NewReader(form))
	require.NoError(t, err)
	req.SetBasicAuth(id, secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r, err := send(hc, req)
	require.NoError(t, err)
	return r
}

func ppFetchToken(t *testing.T, f *mocks.PayPal, hc *http.Client) string {
	t.Helper()
	r := ppTokenRequest(t, f, hc, f.ClientID(), f.ClientSecret(), "grant_type=client_credentials")
	return decode[mocks.PayPalToken](t, r, http.StatusOK).AccessToken
}

// ppOrderBody is a single-step order paid with method ("card:<vault>" or
// "paypal:<vault>"; "" for none).
func ppOrderBody(intent, value, currency, customID, invoiceID, method string) map[string]any {
	b := map[string]any{"intent": intent, "purchase_units": []map[string]any{{
		"amount": map[string]string{"currency_code": currency, "value": value}, "custom_id": customID, "invoice_id": invoiceID,
	}}}
	if src, vault, ok := strings.Cut(method, ":"); ok {
		b["payment_source"] = map[string]any{src: map[string]any{"vault_id": vault}}
	}
	return b
}

func ppIssue(t *testing.T, r *result, status int, name, issue string) mocks.PayPalError {
	t.Helper()
	e := decode[mocks.PayPalError](t, r, status)
	require.Equal(t, name, e.Name)
	require.NotEmpty(t, e.DebugID)
	if issue != "" {
		require.NotEmpty(t, e.Details, string(r.body))
		require.Equal(t, issue, e.Details[0].Issue)
	}
	return e
}

const ppOrders = "/v2/checkout/orders"

// ppLongToken outlives the clock moves of the window tests.
const ppLongToken = 24 * 365 * time.Hour

var ppCreate = mocks.Match{Method: "POST", Path: ppOrders}

func TestPayPalToken(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{TokenTTL: time.Hour})
	hc := b.f.Client()
	e := decode[mocks.PayPalOAuthError](t, ppTokenRequest(t, b.f, hc, b.f.ClientID(), "wrong", "grant_type=client_credentials"), 401)
	require.Equal(t, "invalid_client", e.Error)
	e = decode[mocks.PayPalOAuthError](t, ppTokenRequest(t, b.f, hc, b.f.ClientID(), b.f.ClientSecret(), "grant_type=password"), 400)
	require.Equal(t, "unsupported_grant_type", e.Error)
	tok := decode[mocks.PayPalToken](t, ppTokenRequest(t, b.f, hc, b.f.ClientID(), b.f.ClientSecret(), "grant_type=client_credentials"), 200)
	require.Equal(t, "Bearer", tok.TokenType)
	require.Equal(t, int64(3600), tok.ExpiresIn)
	require.NotEmpty(t, tok.AccessToken)

	get := func(auth string) *result {
		req, err := http.NewRequest(http.MethodGet, b.f.URL()+ppOrders+"/NOPE", nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		r, err := send(hc, req)
		require.NoError(t, err)
		return r
	}
	ppIssue(t, get(""), 401, "AUTHENTICATION_FAILURE", "")
	require.Equal(t, "invalid_token", decode[mocks.PayPalOAuthError](t, get("Bearer nope"), 401).Error)
	ppIssue(t, get("Bearer "+tok.AccessToken), 404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID")

	// The token lives TokenTTL on the fake's clock.
	b.clock.Advance(time.Hour - time.Second)
	require.Equal(t, 404, get("Bearer "+tok.AccessToken).status)
	b.clock.Advance(time.Second)
	require.Equal(t, "invalid_token", decode[mocks.PayPalOAuthError](t, get("Bearer "+tok.AccessToken), 401).Error)
	// Expired, every route refuses it, POSTs included, and nothing runs.
	r := b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "op", "k", mocks.PayPalVaultApproved), "k")
	require.Equal(t, 401, r.status)
	require.Empty(t, b.f.Truth().Payments)

	fresh := ppFetchToken(t, b.f, hc)
	require.Equal(t, 404, get("Bearer "+fresh).status)
	b.f.ExpireTokens()
	require.Equal(t, 401, get("Bearer "+fresh).status)
}

func TestPayPalOrderCaptured(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	r := b.c.post(ppOrders, ppOrderBody("CAPTURE", "19.99", "USD", "op-1", "key-1", mocks.PayPalVaultApproved), "key-1")
	o := decode[mocks.PayPalOrder](t, r, 201)
	require.Regexp(t, `^[0-9A-Z]{17}$`, o.ID)
	require.Equal(t, "COMPLETED", o.Status)
	require.NotEmpty(t, r.header.Get("Paypal-Debug-Id"))
	u := o.PurchaseUnits[0]
	require.Equal(t, "op-1", u.CustomID)
	require.Equal(t, "key-1", u.InvoiceID)
	require.Len(t, u.Payments.Captures, 1)
	c := u.Payments.Captures[0]
	require.Equal(t, "COMPLETED", c.Status)
	require.Equal(t, "19.99", c.Amount.Value)
	require.Equal(t, "op-1", c.CustomID)
	require.Equal(t, "0000", c.ProcessorResponse.ResponseCode)
	require.Equal(t, o.ID, c.SupplementaryData.RelatedIDs.OrderID)

	require.Equal(t, o.ID, decode[mocks.PayPalOrder](t, b.c.get(ppOrders+"/"+o.ID), 200).ID)
	got := decode[mocks.PayPalCapture](t, b.c.get("/v2/payments/captures/"+c.ID), 200)
	require.Equal(t, c.ID, got.ID)
	ppIssue(t, b.c.get("/v2/payments/captures/NOPE"), 404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID")
	ppIssue(t, b.c.get("/v2/payments/authorizations/NOPE"), 404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID")
	ppIssue(t, b.c.get("/v2/payments/refunds/NOPE"), 404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID")

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"op-1": 1}, truth.ChargesByReference())
	require.Equal(t, map[string]int{"key-1": 1}, truth.ChargesBy("invoice_id"))
	require.Equal(t, int64(1999), truth.TotalCharged("USD"))
	p := truth.Payments[0]
	require.Equal(t, c.ID, p.ID)
	require.Equal(t, "key-1", p.IdempotencyKey)
	require.Equal(t, map[string]string{"custom_id": "op-1", "invoice_id": "key-1", "order_id": o.ID}, p.Metadata)

	// Without Prefer: return=representation, PayPal's minimal answer: id,
	// status, links.
	minimal := *b.c
	minimal.auth = func(r *http.Request) { b.c.auth(r); r.Header.Del("Prefer") }
	m := decode[map[string]any](t, minimal.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "op-2", "key-2", mocks.PayPalVaultApproved), "key-2"), 201)
	require.Len(t, m, 3)
	require.Equal(t, "COMPLETED", m["status"])
}

func TestPayPalCurrencies(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1500", "JPY", "jp", "jp", mocks.PayPalWalletApproved), "jp"), 201)
	require.Equal(t, "1500", o.PurchaseUnits[0].Payments.Captures[0].Amount.Value)
	require.Equal(t, int64(1500), b.f.Truth().TotalCharged("JPY"))
	require.Equal(t, "paypal", firstKey(o.PaymentSource))
	for _, tc := range []struct{ value, currency, issue string }{
		{"15.5", "JPY", "DECIMALS_NOT_SUPPORTED"},
		{"1.001", "USD", "DECIMAL_PRECISION"},
		{"0.00", "USD", "CANNOT_BE_ZERO_OR_NEGATIVE"},
		{"-1.00", "USD", "CANNOT_BE_ZERO_OR_NEGATIVE"},
		{"1,00", "USD", "INVALID_PARAMETER_SYNTAX"},
		{"1.00", "XXX", "CURRENCY_NOT_SUPPORTED"},
	} {
		r := b.c.post(ppOrders, ppOrderBody("CAPTURE", tc.value, tc.currency, "x", "x", mocks.PayPalVaultApproved), "bad-"+tc.value)
		ppIssue(t, r, 400, "INVALID_REQUEST", tc.issue)
	}
	// A request refused by validation leaves its key free.
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "x", "x", mocks.PayPalVaultApproved), "bad-1.001"), 201)
}

func firstKey[V any](m map[string]V) string {
	for k := range m {
		return k
	}
	return ""
}

func TestPayPalOrderValidation(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	ppIssue(t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "a", "a", mocks.PayPalVaultApproved), ""), 400, "INVALID_REQUEST", "PAYPAL_REQUEST_ID_REQUIRED")
	ppIssue(t, b.c.post(ppOrders, ppOrderBody("SALE", "1.00", "USD", "a", "a", mocks.PayPalVaultApproved), "k"), 400, "INVALID_REQUEST", "INVALID_PARAMETER_VALUE")
	ppIssue(t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "a", "a", "card:nope"), "k"), 422, "UNPROCESSABLE_ENTITY", "PAYMENT_SOURCE_CANNOT_BE_USED")
	ppIssue(t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "a", "a", mocks.PayPalVaultApproved), strings.Repeat("k", 109)), 400, "INVALID_REQUEST", "INVALID_STRING_MAX_LENGTH")
	ppIssue(t, b.c.post(ppOrders, map[string]any{"intent": "CAPTURE", "bogus": 1}, "k"), 400, "INVALID_REQUEST", "INVALID_PARAMETER_SYNTAX")
	ppIssue(t, b.c.post(ppOrders, "{", "k"), 400, "INVALID_REQUEST", "MALFORMED_REQUEST_JSON")
	ppIssue(t, b.c.post("/v2/nope", map[string]any{}, "k"), 404, "RESOURCE_NOT_FOUND", "")
	require.Empty(t, b.f.Truth().Payments)

	// Without a payment source: CREATED, for the payer to approve; no key needed.
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "a", "a", ""), ""), 201)
	require.Equal(t, "CREATED", o.Status)
	require.Equal(t, "approve", o.Links[1].Rel)
	ppIssue(t, b.c.post(ppOrders+"/"+o.ID+"/capture", map[string]any{}, "c"), 422, "UNPROCESSABLE_ENTITY", "ORDER_NOT_APPROVED")
}

func TestPayPalDeclinesAndPending(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "5.00", "USD", "dec", "dec", mocks.PayPalVaultDeclined), "dec"), 201)
	c := o.PurchaseUnits[0].Payments.Captures[0]
	require.Equal(t, "DECLINED", c.Status)
	require.Equal(t, "5120", c.ProcessorResponse.ResponseCode)
	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("AUTHORIZE", "5.00", "USD", "deca", "deca", mocks.PayPalVaultDeclined), "deca"), 201)
	require.Equal(t, "DENIED", o.PurchaseUnits[0].Payments.Authorizations[0].Status)
	ppIssue(t, b.c.post("/v2/payments/authorizations/"+o.PurchaseUnits[0].Payments.Authorizations[0].ID+"/capture", map[string]any{}, "c-deca"),
		422, "UNPROCESSABLE_ENTITY", "AUTHORIZATION_DENIED")

	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "5.00", "USD", "3ds", "3ds", mocks.PayPalVaultPayerAction), "3ds"), 201)
	require.Equal(t, "PAYER_ACTION_REQUIRED", o.Status)
	require.Nil(t, o.PurchaseUnits[0].Payments)
	require.Equal(t, "payer-action", o.Links[1].Rel)

	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "5.00", "USD", "pend", "pend", mocks.PayPalVaultPending), "pend"), 201)
	c = o.PurchaseUnits[0].Payments.Captures[0]
	require.Equal(t, "PENDING", c.Status)
	require.Equal(t, "PENDING_REVIEW", c.StatusDetails.Reason)
	ppIssue(t, b.c.post("/v2/payments/captures/"+c.ID+"/refund", map[string]any{}, "r-pend"), 422, "UNPROCESSABLE_ENTITY", "REFUND_NOT_ALLOWED")
	require.Equal(t, int64(0), b.f.Truth().TotalCharged("USD"))
	require.NoError(t, b.f.CompletePending(c.ID))
	require.Equal(t, "COMPLETED", decode[mocks.PayPalCapture](t, b.c.get("/v2/payments/captures/"+c.ID), 200).Status)
	require.Equal(t, int64(500), b.f.Truth().TotalCharged("USD"))
	require.Error(t, b.f.CompletePending(c.ID))

	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "5.00", "USD", "deny", "deny", mocks.PayPalVaultPending), "deny"), 201)
	require.NoError(t, b.f.DenyPending(o.PurchaseUnits[0].Payments.Captures[0].ID))

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"pend": 1}, truth.ChargesByReference(), "declines, denials and payer actions charge nothing")
	require.Equal(t, map[string]int{"dec": 1, "deca": 1, "3ds": 1, "pend": 1, "deny": 1}, truth.PaymentsBy("custom_id"))
}

func TestPayPalAuthorizeCaptureVoid(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("AUTHORIZE", "10.00", "USD", "auth", "auth", mocks.PayPalVaultApproved), "auth"), 201)
	a := o.PurchaseUnits[0].Payments.Authorizations[0]
	require.Equal(t, "CREATED", a.Status)
	require.NotEmpty(t, a.ExpirationTime)
	authPath := "/v2/payments/authorizations/" + a.ID

	ppIssue(t, b.c.post(authPath+"/capture", map[string]any{"amount": map[string]string{"currency_code": "EUR", "value": "1.00"}}, "c0"),
		422, "UNPROCESSABLE_ENTITY", "AUTH_CAPTURE_CURRENCY_MISMATCH")
	ppIssue(t, b.c.post(authPath+"/capture", map[string]any{"amount": map[string]string{"currency_code": "USD", "value": "10.01"}}, "c1"),
		422, "UNPROCESSABLE_ENTITY", "MAX_CAPTURE_AMOUNT_EXCEEDED")
	c1 := decode[mocks.PayPalCapture](t, b.c.post(authPath+"/capture", map[string]any{"amount": map[string]string{"currency_code": "USD", "value": "4.00"},
		"invoice_id": "cap-1", "final_capture": false}, "c2"), 201)
	require.Equal(t, "COMPLETED", c1.Status)
	require.Equal(t, "auth", c1.CustomID, "a capture carries its authorization's custom_id")
	require.Equal(t, a.ID, c1.SupplementaryData.RelatedIDs.AuthorizationID)
	require.Equal(t, "PARTIALLY_CAPTURED", decode[mocks.PayPalAuthorization](t, b.c.get(authPath), 200).Status)
	ppIssue(t, b.c.post(authPath+"/void", nil, "v0"), 422, "UNPROCESSABLE_ENTITY", "PREVIOUSLY_CAPTURED")
	c2 := decode[mocks.PayPalCapture](t, b.c.post(authPath+"/capture", map[string]any{"invoice_id": "cap-2"}, "c3"), 201)
	require.Equal(t, "6.00", c2.Amount.Value, "the rest")
	require.Equal(t, "CAPTURED", decode[mocks.PayPalAuthorization](t, b.c.get(authPath), 200).Status)
	ppIssue(t, b.c.post(authPath+"/capture", map[string]any{}, "c4"), 422, "UNPROCESSABLE_ENTITY", "AUTHORIZATION_ALREADY_CAPTURED")

	truth := b.f.Truth()
	require.Equal(t, int64(1000), truth.TotalCharged("USD"))
	require.Equal(t, map[string]int{"auth": 1}, truth.ChargesByReference(), "one authorization, however many captures")

	// Void: 200 with the authorization under return=representation, 204
	// under return=minimal.
	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("AUTHORIZE", "3.00", "USD", "v", "v", mocks.PayPalVaultApproved), "v"), 201)
	vp := "/v2/payments/authorizations/" + o.PurchaseUnits[0].Payments.Authorizations[0].ID
	require.Equal(t, "VOIDED", decode[mocks.PayPalAuthorization](t, b.c.post(vp+"/void", nil, "v1"), 200).Status)
	require.Equal(t, "VOIDED", decode[mocks.PayPalOrder](t, b.c.get(ppOrders+"/"+o.ID), 200).Status)
	ppIssue(t, b.c.post(vp+"/void", nil, "v2"), 422, "UNPROCESSABLE_ENTITY", "PREVIOUSLY_VOIDED")
	ppIssue(t, b.c.post(vp+"/capture", map[string]any{}, "v3"), 422, "UNPROCESSABLE_ENTITY", "AUTHORIZATION_VOIDED")

	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("AUTHORIZE", "3.00", "USD", "m", "m", mocks.PayPalVaultApproved), "m"), 201)
	minimal := *b.c
	minimal.auth = func(r *http.Request) { b.c.auth(r); r.Header.Del("Prefer") }
	r := minimal.post("/v2/payments/authorizations/"+o.PurchaseUnits[0].Payments.Authorizations[0].ID+"/void", nil, "m1")
	require.Equal(t, http.StatusNoContent, r.status)
	require.Empty(t, r.body)
	require.Equal(t, http.StatusNoContent, minimal.post("/v2/payments/authorizations/"+o.PurchaseUnits[0].Payments.Authorizations[0].ID+"/void", nil, "m1").status,
		"a repeat of the void answers as the void did")
}

func TestPayPalRefunds(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "op-k", mocks.PayPalVaultApproved), "op-k"), 201)
	cp := "/v2/payments/captures/" + o.PurchaseUnits[0].Payments.Captures[0].ID
	money := func(v string) map[string]string { return map[string]string{"currency_code": "USD", "value": v} }

	r1 := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", map[string]any{"amount": money("3.00"), "custom_id": "rop-1", "invoice_id": "rk-1"}, "rk-1"), 201)
	require.Equal(t, "COMPLETED", r1.Status)
	require.Equal(t, "rop-1", r1.CustomID)
	require.Equal(t, "PARTIALLY_REFUNDED", decode[mocks.PayPalCapture](t, b.c.get(cp), 200).Status)
	e := ppIssue(t, b.c.post(cp+"/refund", map[string]any{"amount": money("7.01"), "custom_id": "rop-2"}, "rk-2"), 422, "UNPROCESSABLE_ENTITY", "REFUND_AMOUNT_EXCEEDED")
	require.Contains(t, e.Details[0].Description, "not yet been refunded")
	ppIssue(t, b.c.post(cp+"/refund", map[string]any{"amount": map[string]string{"currency_code": "EUR", "value": "1.00"}}, "rk-3"),
		422, "UNPROCESSABLE_ENTITY", "REFUND_CAPTURE_CURRENCY_MISMATCH")
	r2 := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", map[string]any{"custom_id": "rop-4"}, "rk-4"), 201)
	require.Equal(t, "7.00", r2.Amount.Value, "the rest")
	require.Equal(t, "REFUNDED", decode[mocks.PayPalCapture](t, b.c.get(cp), 200).Status)
	ppIssue(t, b.c.post(cp+"/refund", map[string]any{}, "rk-5"), 422, "UNPROCESSABLE_ENTITY", "CAPTURE_FULLY_REFUNDED")
	require.Equal(t, r1.ID, decode[mocks.PayPalRefund](t, b.c.get("/v2/payments/refunds/"+r1.ID), 200).ID)

	truth := b.f.Truth()
	require.Equal(t, int64(1000), truth.TotalRefunded("USD"))
	require.Equal(t, map[string]int{"rop-1": 1, "rop-4": 1}, truth.RefundsByReference())
	require.Equal(t, int64(1000), truth.Payments[0].AmountRefunded)

	// Refunds of the refund-declined vault fail.
	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "2.00", "USD", "rd", "rd", mocks.PayPalVaultRefundDeclined), "rd"), 201)
	cp = "/v2/payments/captures/" + o.PurchaseUnits[0].Payments.Captures[0].ID
	require.Equal(t, "FAILED", decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", map[string]any{"custom_id": "rd-1"}, "rd-1"), 201).Status)
	require.Equal(t, "COMPLETED", decode[mocks.PayPalCapture](t, b.c.get(cp), 200).Status)
	require.Equal(t, int64(1000), b.f.Truth().TotalRefunded("USD"))
}

// A repeat of a PayPal-Request-Id answers the LATEST status of what the
// first request made, whatever the repeat's body: 200 instead of 201 on
// Orders.
func TestPayPalReplayLatestStatus(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	first := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "K", mocks.PayPalVaultApproved), "K"), 201)
	cp := "/v2/payments/captures/" + first.PurchaseUnits[0].Payments.Captures[0].ID
	rf := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", map[string]any{"amount": map[string]string{"currency_code": "USD", "value": "4.00"}}, "R"), 201)

	again := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "99.00", "EUR", "other", "other", mocks.PayPalVaultDeclined), "K"), 200)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, "PARTIALLY_REFUNDED", again.PurchaseUnits[0].Payments.Captures[0].Status, "the latest status, not the first answer")

	// Payments: the refund's latest status, the first answer's status code.
	require.NoError(t, b.f.FailRefund(rf.ID))
	rep := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", map[string]any{"custom_id": "x"}, "R"), 201)
	require.Equal(t, rf.ID, rep.ID)
	require.Equal(t, "FAILED", rep.Status)

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 1)
	require.Len(t, truth.Refunds, 1)
	require.Equal(t, 2, truth.KeyMismatch, "other bodies: counted as mismatches, answered as repeats")
}

// Orders keep a request id OrdersKeyTTL (6 h), Payments PaymentsKeyTTL
// (45 days); the duplicate-invoice guard still refuses a second order with
// the same invoice_id after the Orders window.
func TestPayPalKeyWindows(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{TokenTTL: ppLongToken})
	body := ppOrderBody("CAPTURE", "10.00", "USD", "op", "K", mocks.PayPalVaultApproved)
	first := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, body, "K"), 201)
	cp := "/v2/payments/captures/" + first.PurchaseUnits[0].Payments.Captures[0].ID
	refund := map[string]any{"amount": map[string]string{"currency_code": "USD", "value": "1.00"}}
	rf := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", refund, "R"), 201)

	b.clock.Advance(mocks.PayPalOrdersKeyTTL - time.Second)
	require.Equal(t, first.ID, decode[mocks.PayPalOrder](t, b.c.post(ppOrders, body, "K"), 200).ID)
	b.clock.Advance(time.Second)
	ppIssue(t, b.c.post(ppOrders, body, "K"), 422, "UNPROCESSABLE_ENTITY", "DUPLICATE_INVOICE_ID")
	// The refusal is kept under the key like any answer.
	ppIssue(t, b.c.post(ppOrders, body, "K"), 422, "UNPROCESSABLE_ENTITY", "DUPLICATE_INVOICE_ID")

	b.clock.Advance(mocks.PayPalPaymentsKeyTTL - mocks.PayPalOrdersKeyTTL - time.Second)
	require.Equal(t, rf.ID, decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", refund, "R"), 201).ID)
	b.clock.Advance(time.Second)
	require.NotEqual(t, rf.ID, decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", refund, "R"), 201).ID, "a new refund once the window passed")

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"op": 1}, truth.ChargesByReference())
	require.Len(t, truth.Refunds, 2)
}

func TestPayPalDuplicateInvoiceOff(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{AllowDuplicateInvoice: true, OrdersKeyTTL: time.Hour, TokenTTL: ppLongToken})
	body := ppOrderBody("CAPTURE", "10.00", "USD", "op", "K", mocks.PayPalVaultApproved)
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, body, "K"), 201)
	b.clock.Advance(time.Hour)
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, body, "K"), 201)
	require.Equal(t, []string{"op"}, b.f.Truth().Duplicates("custom_id"), "without the guard a resend after the window charges twice")

	b2 := ppSetup(t, mocks.PayPalOptions{})
	decode[mocks.PayPalOrder](t, b2.c.post(ppOrders, body, "K1"), 201)
	ppIssue(t, b2.c.post(ppOrders, body, "K2"), 422, "UNPROCESSABLE_ENTITY", "DUPLICATE_INVOICE_ID")
	// A declined capture does not use its invoice_id.
	decl := ppOrderBody("CAPTURE", "10.00", "USD", "d", "D", mocks.PayPalVaultDeclined)
	decode[mocks.PayPalOrder](t, b2.c.post(ppOrders, decl, "D1"), 201)
	decode[mocks.PayPalOrder](t, b2.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "d", "D", mocks.PayPalVaultApproved), "D2"), 201)
}

func TestPayPalKeyInUse(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{Options: mocks.Options{SlowFor: time.Minute}})
	body := ppOrderBody("CAPTURE", "10.00", "USD", "op", "K", mocks.PayPalVaultApproved)
	b.f.Script(ppCreate, mocks.FaultSlow)
	done := holdKey(t, b.f, b.c, ppOrders, body, "K")
	ppIssue(t, b.c.post(ppOrders, body, "K"), 409, "RESOURCE_CONFLICT", "PREVIOUS_REQUEST_IN_PROGRESS")
	// Another body under the same id while the first runs: 409 as well.
	ppIssue(t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "x", "x", mocks.PayPalVaultApproved), "K"), 409, "RESOURCE_CONFLICT", "PREVIOUS_REQUEST_IN_PROGRESS")
	b.f.Release()
	require.Equal(t, 201, (<-done).status)
	require.Equal(t, 200, b.c.post(ppOrders, body, "K").status)
	truth := b.f.Truth()
	require.Equal(t, 1, truth.KeyInUse)
	require.Equal(t, 1, truth.KeyMismatch)
	require.Equal(t, map[string]int{"op": 1}, truth.ChargesByReference())
}

func TestPayPalFaults(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{Options: mocks.Options{HangFor: 5 * time.Millisecond}})
	body := ppOrderBody("CAPTURE", "10.00", "USD", "p500", "p500", mocks.PayPalVaultApproved)
	// Processed, then a 500: the key keeps the real outcome.
	b.f.Script(ppCreate, mocks.FaultProcessed500)
	ppIssue(t, b.c.post(ppOrders, body, "p500"), 500, "INTERNAL_SERVER_ERROR", "")
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, body, "p500"), 200)
	require.Equal(t, "COMPLETED", o.Status)
	// A 500 before processing is not kept: the retry is processed.
	body = ppOrderBody("CAPTURE", "10.00", "USD", "s500", "s500", mocks.PayPalVaultApproved)
	b.f.Script(ppCreate, mocks.FaultStored500)
	require.Equal(t, 500, b.c.post(ppOrders, body, "s500").status)
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, body, "s500"), 201)
	// 429 with Retry-After, nothing processed.
	b.f.Script(ppCreate, mocks.FaultRateLimit429)
	r := b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "rl", "rl", mocks.PayPalVaultApproved), "rl")
	ppIssue(t, r, 429, "RATE_LIMIT_REACHED", "")
	require.Equal(t, "1", r.header.Get("Retry-After"))
	// The token endpoint meets faults like any route.
	b.f.Script(mocks.Match{Path: "/v1/oauth2/token"}, mocks.FaultGatewayBefore502)
	require.Equal(t, 502, ppTokenRequest(t, b.f, b.f.Client(), b.f.ClientID(), b.f.ClientSecret(), "grant_type=client_credentials").status)

	// Processed, then a proxy's 502 or a held answer: a repeat learns the order.
	for _, f := range []mocks.FaultKind{mocks.FaultGatewayAfter502, mocks.FaultHangAfterProcessing} {
		key := f.String()
		body := ppOrderBody("CAPTURE", "10.00", "USD", key, key, mocks.PayPalVaultApproved)
		b.f.Script(ppCreate, f)
		first := b.c.post(ppOrders, body, key)
		require.Contains(t, []int{201, 502}, first.status)
		require.Equal(t, "COMPLETED", decode[mocks.PayPalOrder](t, b.c.post(ppOrders, body, key), 200).Status)
	}

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"p500": 1, "s500": 1, "gateway_after_502": 1, "hang_after_processing": 1}, truth.ChargesByReference())
	require.Equal(t, 1, truth.Faults[mocks.FaultProcessed500])
}

func TestPayPalApprovedOrders(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	id := b.f.ApproveOrder("CAPTURE", 2500, "USD")
	require.Equal(t, "APPROVED", decode[mocks.PayPalOrder](t, b.c.get(ppOrders+"/"+id), 200).Status)
	ppIssue(t, b.c.post(ppOrders+"/"+id+"/authorize", map[string]any{}, "a1"), 422, "UNPROCESSABLE_ENTITY", "ACTION_DOES_NOT_MATCH_INTENT")
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders+"/"+id+"/capture", map[string]any{}, "c1"), 201)
	require.Equal(t, "COMPLETED", o.Status)
	require.Equal(t, "25.00", o.PurchaseUnits[0].Payments.Captures[0].Amount.Value)
	require.Equal(t, 200, b.c.post(ppOrders+"/"+id+"/capture", map[string]any{}, "c1").status, "a repeat: 200, the latest status")
	ppIssue(t, b.c.post(ppOrders+"/"+id+"/capture", map[string]any{}, "c2"), 422, "UNPROCESSABLE_ENTITY", "ORDER_ALREADY_CAPTURED")
	ppIssue(t, b.c.post(ppOrders+"/NOPE/capture", map[string]any{}, "c3"), 404, "RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID")

	aid := b.f.ApproveOrderWith(mocks.PayPalOrderSpec{Intent: "AUTHORIZE", Amount: 700, Currency: "EUR", CustomID: "op-a", InvoiceID: "inv-a"})
	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders+"/"+aid+"/authorize", map[string]any{}, "a2"), 201)
	require.Equal(t, "CREATED", o.PurchaseUnits[0].Payments.Authorizations[0].Status)
	ppIssue(t, b.c.post(ppOrders+"/"+aid+"/authorize", map[string]any{}, "a3"), 422, "UNPROCESSABLE_ENTITY", "ORDER_ALREADY_AUTHORIZED")

	truth := b.f.Truth()
	p, ok := truth.Payment(o.PurchaseUnits[0].Payments.Authorizations[0].ID)
	require.True(t, ok)
	require.Equal(t, "a2", p.IdempotencyKey, "the request that made the payment object")
	require.Equal(t, "op-a", p.Reference)
	require.Len(t, truth.ChargesBy("order_id"), 2)
	require.Panics(t, func() { b.f.ApproveOrder("SALE", 1, "USD") })
}

func TestPayPalOutOfBand(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "K2", mocks.PayPalVaultApproved), "K2"), 201)
	// An earlier key generation's order got through after all.
	_, dup, err := b.f.InjectPayment(mocks.PayPalPaymentSpec{Amount: 1000, Currency: "USD", CustomID: "op", InvoiceID: "K1", RequestID: "K1"})
	require.NoError(t, err)
	// Another integration's payment.
	_, other, err := b.f.InjectPayment(mocks.PayPalPaymentSpec{Intent: "AUTHORIZE", Amount: 300, Currency: "USD", CustomID: "op"})
	require.NoError(t, err)
	require.Equal(t, "CREATED", decode[mocks.PayPalAuthorization](t, b.c.get("/v2/payments/authorizations/"+other), 200).Status)
	_, _, err = b.f.InjectPayment(mocks.PayPalPaymentSpec{Amount: 0, Currency: "USD"})
	require.Error(t, err)

	truth := b.f.Truth()
	require.Equal(t, []string{"op"}, truth.Duplicates("custom_id"))
	require.Equal(t, map[string]int{"op": 2}, truth.ChargesByReference(), "the injected payment without a request id is left out")

	rev, err := b.f.ReverseCapture(dup)
	require.NoError(t, err)
	require.Equal(t, "REFUNDED", decode[mocks.PayPalCapture](t, b.c.get("/v2/payments/captures/"+dup), 200).Status)
	require.Equal(t, "Payment reversed", decode[mocks.PayPalRefund](t, b.c.get("/v2/payments/refunds/"+rev), 200).NoteToPayer)
	_, err = b.f.ReverseCapture(dup)
	require.Error(t, err)
	require.Error(t, b.f.FailRefund("NOPE"))
	require.Zero(t, b.f.Truth().TotalRefunded("USD"), "a reversal is no client's refund")
}

func TestPayPalOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    mocks.PayPalOptions
		want string
	}{
		{"zero", mocks.PayPalOptions{}, ""},
		{"windows", mocks.PayPalOptions{OrdersKeyTTL: 72 * time.Hour, PaymentsKeyTTL: time.Hour}, ""},
		{"KeyTTL and OrdersKeyTTL", mocks.PayPalOptions{Options: mocks.Options{KeyTTL: time.Hour}, OrdersKeyTTL: time.Hour}, "KeyTTL sets both"},
		{"OrdersKeyTTL over 72h", mocks.PayPalOptions{OrdersKeyTTL: 73 * time.Hour}, "at most 72h"},
		{"negative OrdersKeyTTL", mocks.PayPalOptions{OrdersKeyTTL: -1}, "OrdersKeyTTL"},
		{"negative PaymentsKeyTTL", mocks.PayPalOptions{PaymentsKeyTTL: -1}, "PaymentsKeyTTL"},
		{"negative TokenTTL", mocks.PayPalOptions{TokenTTL: -1}, "TokenTTL"},
		{"negative SearchLag", mocks.PayPalOptions{SearchLag: -1}, "SearchLag"},
		{"webhook secret", mocks.PayPalOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://127.0.0.1:1/", Secret: "s"}}}, "certificate"},
		{"webhook off loopback", mocks.PayPalOptions{Options: mocks.Options{Webhooks: mocks.WebhookDelivery{URL: "http://example.com/"}}}, "loopback"},
		{"client id", mocks.PayPalOptions{ClientID: "a:b"}, "ClientID"},
	} {
		err := tc.o.Validate()
		if tc.want == "" {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorContains(t, err, tc.want, tc.name)
		}
	}
	require.Panics(t, func() { mocks.NewPayPal(mocks.PayPalOptions{TokenTTL: -1}) })
}

// With KeyTTL set, both windows are KeyTTL.
func TestPayPalKeyTTLBothWindows(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{Options: mocks.Options{KeyTTL: time.Minute}, TokenTTL: ppLongToken})
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "", mocks.PayPalVaultApproved), "K"), 201)
	cp := "/v2/payments/captures/" + o.PurchaseUnits[0].Payments.Captures[0].ID
	one := map[string]any{"amount": map[string]string{"currency_code": "USD", "value": "1.00"}}
	rf := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", one, "R"), 201)
	b.clock.Advance(time.Minute)
	require.NotEqual(t, o.ID, decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "", mocks.PayPalVaultApproved), "K"), 201).ID)
	require.NotEqual(t, rf.ID, decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", one, "R"), 201).ID)
}

// PayPal writes HUF and TWD without decimals while ISO 4217 (and payonce's
// ledger) counts 2 for them: the fake keeps ISO minor units, so Truth
// agrees with the ledger, and speaks PayPal's exponent on the wire. JPY has
// 0 decimals in both.
func TestPayPalMinorUnitsISO(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	money := func(v, cur string) map[string]string { return map[string]string{"currency_code": cur, "value": v} }

	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1500", "HUF", "huf", "huf", mocks.PayPalVaultApproved), "huf"), 201)
	c := o.PurchaseUnits[0].Payments.Captures[0]
	require.Equal(t, "1500", c.Amount.Value, "PayPal's forints: no decimals on the wire")
	require.Equal(t, "1500", o.PurchaseUnits[0].Amount.Value)
	rf := decode[mocks.PayPalRefund](t, b.c.post("/v2/payments/captures/"+c.ID+"/refund", map[string]any{"amount": money("400", "HUF"), "custom_id": "r-huf"}, "r-huf"), 201)
	require.Equal(t, "400", rf.Amount.Value)
	ppIssue(t, b.c.post("/v2/payments/captures/"+c.ID+"/refund", map[string]any{"amount": money("1101", "HUF")}, "r-huf-2"),
		422, "UNPROCESSABLE_ENTITY", "REFUND_AMOUNT_EXCEEDED")
	ppIssue(t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1500.00", "HUF", "x", "x", mocks.PayPalVaultApproved), "x"),
		400, "INVALID_REQUEST", "DECIMALS_NOT_SUPPORTED")

	a := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("AUTHORIZE", "10", "TWD", "twd", "twd", mocks.PayPalVaultApproved), "twd"), 201).
		PurchaseUnits[0].Payments.Authorizations[0]
	require.Equal(t, "10", a.Amount.Value)
	require.Equal(t, "4", decode[mocks.PayPalCapture](t, b.c.post("/v2/payments/authorizations/"+a.ID+"/capture",
		map[string]any{"amount": money("4", "TWD"), "final_capture": true}, "twd-c"), 201).Amount.Value)

	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1500", "JPY", "jpy", "jpy", mocks.PayPalVaultApproved), "jpy"), 201)

	_, injected, err := b.f.InjectPayment(mocks.PayPalPaymentSpec{Amount: 250000, Currency: "HUF", CustomID: "inj"})
	require.NoError(t, err)
	require.Equal(t, "2500", decode[mocks.PayPalCapture](t, b.c.get("/v2/payments/captures/"+injected), 200).Amount.Value)
	_, _, err = b.f.InjectPayment(mocks.PayPalPaymentSpec{Amount: 1050, Currency: "TWD"})
	require.ErrorContains(t, err, "multiple of 100")
	approved := b.f.ApproveOrder("CAPTURE", 30000, "HUF")
	require.Equal(t, "300", decode[mocks.PayPalOrder](t, b.c.get(ppOrders+"/"+approved), 200).PurchaseUnits[0].Amount.Value)
	require.PanicsWithValue(t, "mocks: ApproveOrder: amount 30050 HUF (ISO minor units) has decimals PayPal does not take for HUF: use a multiple of 100",
		func() { b.f.ApproveOrder("CAPTURE", 30050, "HUF") })

	truth := b.f.Truth()
	require.Equal(t, int64(150000), truth.TotalCharged("HUF"), "ISO minor units, as the ledger counts (the injected one aside)")
	require.Equal(t, int64(40000), truth.TotalRefunded("HUF"))
	require.Equal(t, int64(1500), truth.TotalCharged("JPY"))
	for _, p := range truth.Payments {
		switch p.Reference {
		case "huf":
			require.Equal(t, int64(150000), p.Amount)
			require.Equal(t, int64(150000), p.AmountCaptured)
			require.Equal(t, int64(40000), p.AmountRefunded)
		case "twd":
			require.Equal(t, int64(1000), p.Amount)
			require.Equal(t, int64(400), p.AmountCaptured)
		case "jpy":
			require.Equal(t, int64(1500), p.Amount)
		case "inj":
			require.Equal(t, int64(250000), p.AmountCaptured)
		}
	}
	require.Equal(t, int64(40000), truth.Refunds[0].Amount)
}

// GET /v2/checkout/orders/{id} lists the purchase unit's refunds beside its
// captures (payment_collection: authorizations, captures, refunds), each as
// GET /v2/payments/refunds/{id} renders it, reversals included.
func TestPayPalOrderListsRefunds(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{})
	money := func(v string) map[string]string { return map[string]string{"currency_code": "USD", "value": v} }

	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op", "K", mocks.PayPalVaultApproved), "K"), 201)
	require.Empty(t, o.PurchaseUnits[0].Payments.Refunds)
	cp := "/v2/payments/captures/" + o.PurchaseUnits[0].Payments.Captures[0].ID
	r1 := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", map[string]any{"amount": money("3.00"), "custom_id": "rop-1", "invoice_id": "rk-1"}, "rk-1"), 201)
	r2 := decode[mocks.PayPalRefund](t, b.c.post(cp+"/refund", map[string]any{"amount": money("2.00"), "custom_id": "rop-2", "invoice_id": "rk-2"}, "rk-2"), 201)
	rev, err := b.f.ReverseCapture(o.PurchaseUnits[0].Payments.Captures[0].ID)
	require.NoError(t, err)

	got := decode[mocks.PayPalOrder](t, b.c.get(ppOrders+"/"+o.ID), 200).PurchaseUnits[0].Payments.Refunds
	require.Len(t, got, 3)
	require.Equal(t, decode[mocks.PayPalRefund](t, b.c.get("/v2/payments/refunds/"+r1.ID), 200), got[0], "the same object as its own GET")
	require.Equal(t, r2.ID, got[1].ID)
	require.Equal(t, "rk-2", got[1].InvoiceID)
	require.Equal(t, "rop-2", got[1].CustomID)
	require.Equal(t, "COMPLETED", got[1].Status)
	require.Equal(t, "2.00", got[1].Amount.Value)
	require.Equal(t, rev, got[2].ID, "the reversal last: it came last")
	require.Equal(t, "5.00", got[2].Amount.Value)

	// An authorization's captures: the refunds of each.
	o = decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("AUTHORIZE", "10.00", "USD", "au", "AK", mocks.PayPalVaultApproved), "AK"), 201)
	ap := "/v2/payments/authorizations/" + o.PurchaseUnits[0].Payments.Authorizations[0].ID
	c1 := decode[mocks.PayPalCapture](t, b.c.post(ap+"/capture", map[string]any{"amount": money("4.00"), "final_capture": false}, "c1"), 201)
	c2 := decode[mocks.PayPalCapture](t, b.c.post(ap+"/capture", map[string]any{}, "c2"), 201)
	ra := decode[mocks.PayPalRefund](t, b.c.post("/v2/payments/captures/"+c2.ID+"/refund", map[string]any{"invoice_id": "ra"}, "ra"), 201)
	rb := decode[mocks.PayPalRefund](t, b.c.post("/v2/payments/captures/"+c1.ID+"/refund", map[string]any{"invoice_id": "rb"}, "rb"), 201)
	u := decode[mocks.PayPalOrder](t, b.c.get(ppOrders+"/"+o.ID), 200).PurchaseUnits[0]
	require.Len(t, u.Payments.Captures, 2)
	require.Len(t, u.Payments.Refunds, 2)
	require.Equal(t, []string{ra.ID, rb.ID}, []string{u.Payments.Refunds[0].ID, u.Payments.Refunds[1].ID}, "oldest first")
	require.Equal(t, "6.00", u.Payments.Refunds[0].Amount.Value)
}

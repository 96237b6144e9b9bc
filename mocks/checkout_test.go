package mocks_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func ckoPayment(amount int64, source, ref string, capture bool) map[string]any {
	return map[string]any{"source": map[string]string{"type": "id", "id": source}, "amount": amount,
		"currency": "USD", "reference": ref, "capture": capture, "metadata": map[string]string{"payonce_op": ref}}
}

var ckoCreate = mocks.Match{Method: "POST", Path: "/payments"}

func TestCheckoutPaymentCaptured(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{})
	r := b.c.post("/payments", ckoPayment(1999, mocks.CheckoutSourceApproved, "op-1", true), "k1")
	p := decode[mocks.CheckoutPayment](t, r, 201)
	require.Regexp(t, `^pay_[a-z2-7]{26}$`, p.ID)
	require.True(t, p.Approved)
	require.Equal(t, "Captured", p.Status)
	require.Equal(t, "10000", p.ResponseCode)
	require.Equal(t, "op-1", p.Reference)
	require.NotEmpty(t, r.header.Get("Cko-Request-Id"))

	got := decode[mocks.CheckoutPayment](t, b.c.get("/payments/"+p.ID), 200)
	require.Equal(t, int64(1999), got.Balances.TotalCaptured)
	require.Equal(t, map[string]string{"payonce_op": "op-1"}, got.Metadata)

	acts := decode[[]mocks.CheckoutAction](t, b.c.get("/payments/"+p.ID+"/actions"), 200)
	require.Len(t, acts, 2)
	require.Equal(t, "Capture", acts[0].Type, "newest first")
	require.Equal(t, "Authorization", acts[1].Type)

	l := decode[mocks.CheckoutPaymentList](t, b.c.get("/payments?reference=op-1"), 200)
	require.Equal(t, 1, l.TotalCount)
	require.Equal(t, p.ID, l.Data[0].ID)
	require.Zero(t, decode[mocks.CheckoutPaymentList](t, b.c.get("/payments?reference=op-2"), 200).TotalCount)
	decode[mocks.CheckoutError](t, b.c.get("/payments"), 422)
	require.Equal(t, 404, b.c.get("/payments/pay_nope").status)

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"op-1": 1}, truth.ChargesByReference())
	require.Equal(t, map[string]int{"op-1": 1}, truth.ChargesBy("payonce_op"))
	require.Equal(t, int64(1999), truth.TotalCharged("usd"))
	require.Equal(t, "k1", truth.Payments[0].IdempotencyKey)
}

func TestCheckoutAuthorizeCaptureVoidRefund(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{})
	p := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(1000, mocks.CheckoutSourceApproved, "a", false), "a"), 201)
	require.Equal(t, "Authorized", p.Status)

	decode[mocks.CheckoutError](t, b.c.post("/payments/"+p.ID+"/refunds", map[string]any{"reference": "r0"}, "r0"), 403)
	e := decode[mocks.CheckoutError](t, b.c.post("/payments/"+p.ID+"/captures", map[string]any{"amount": 1001}, "c0"), 422)
	require.Equal(t, []string{"capture_amount_exceeds_balance"}, e.ErrorCodes)
	acc := decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+p.ID+"/captures", map[string]any{"amount": 800, "reference": "cap-1"}, "c1"), 202)
	require.Regexp(t, `^act_`, acc.ActionID)
	require.Equal(t, "cap-1", acc.Reference)
	got := decode[mocks.CheckoutPayment](t, b.c.get("/payments/"+p.ID), 200)
	require.Equal(t, "Partially Captured", got.Status)
	decode[mocks.CheckoutError](t, b.c.post("/payments/"+p.ID+"/voids", map[string]any{}, "v0"), 403)

	decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+p.ID+"/refunds", map[string]any{"amount": 300, "reference": "ref-1"}, "r1"), 202)
	e = decode[mocks.CheckoutError](t, b.c.post("/payments/"+p.ID+"/refunds", map[string]any{"amount": 501, "reference": "ref-2"}, "r2"), 422)
	require.Equal(t, []string{"refund_amount_exceeds_balance"}, e.ErrorCodes)
	decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+p.ID+"/refunds", map[string]any{"reference": "ref-3"}, "r3"), 202)
	got = decode[mocks.CheckoutPayment](t, b.c.get("/payments/"+p.ID), 200)
	require.Equal(t, "Refunded", got.Status)
	acts := decode[[]mocks.CheckoutAction](t, b.c.get("/payments/"+p.ID+"/actions"), 200)
	require.Equal(t, "Refund", acts[0].Type)
	require.Equal(t, int64(500), acts[0].Amount, "the rest")
	require.Equal(t, "ref-3", acts[0].Reference)

	truth := b.f.Truth()
	require.Equal(t, int64(800), truth.TotalRefunded("USD"))
	require.Equal(t, map[string]int{"ref-1": 1, "ref-3": 1}, truth.RefundsByReference())

	v := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(700, mocks.CheckoutSourceApproved, "v", false), "v"), 201)
	decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+v.ID+"/voids", map[string]any{"reference": "void-1"}, "v1"), 202)
	require.Equal(t, "Voided", decode[mocks.CheckoutPayment](t, b.c.get("/payments/"+v.ID), 200).Status)
	require.Equal(t, 404, b.c.post("/payments/pay_nope/voids", nil, "v2").status)

	rd := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(700, mocks.CheckoutSourceRefundDeclined, "rd", true), "rd"), 201)
	decode[mocks.CheckoutActionAccepted](t, b.c.post("/payments/"+rd.ID+"/refunds", map[string]any{"reference": "rd-1"}, "rd1"), 202)
	acts = decode[[]mocks.CheckoutAction](t, b.c.get("/payments/"+rd.ID+"/actions"), 200)
	require.False(t, acts[0].Approved)
	require.Equal(t, "20005", acts[0].ResponseCode)
	require.Equal(t, int64(800), b.f.Truth().TotalRefunded("USD"), "a declined refund moves nothing")
}

func TestCheckoutDeclinesAndPending(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{})
	for _, tc := range []struct{ src, code string }{
		{mocks.CheckoutSourceDoNotHonour, "20005"},
		{mocks.CheckoutSourceInsufficientFunds, "20051"},
		{mocks.CheckoutSourceExpiredCard, "20054"},
	} {
		p := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(100, tc.src, tc.src, true), tc.src), 201)
		require.False(t, p.Approved)
		require.Equal(t, "Declined", p.Status)
		require.Equal(t, tc.code, p.ResponseCode)
		require.NotEmpty(t, p.ResponseSummary)
	}
	tok := ckoPayment(100, "", "tok", true)
	tok["source"] = map[string]string{"type": "token", "token": "tok_test_insufficient_funds"}
	require.Equal(t, "20051", decode[mocks.CheckoutPayment](t, b.c.post("/payments", tok, "tok"), 201).ResponseCode)

	p := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(100, mocks.CheckoutSource3DS, "3ds", true), "3ds"), 202)
	require.Equal(t, "Pending", p.Status)
	require.Contains(t, p.Links, "redirect")
	require.Empty(t, b.f.Truth().ChargesByReference())
	require.Len(t, b.f.Truth().Payments, 5)
}

func TestCheckoutValidationIsNotCached(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{})
	bad := ckoPayment(0, mocks.CheckoutSourceApproved, "v", true)
	bad["currency"] = "usd"
	e := decode[mocks.CheckoutError](t, b.c.post("/payments", bad, "k"), 422)
	require.Equal(t, "request_invalid", e.ErrorType)
	require.ElementsMatch(t, []string{"amount_invalid", "currency_invalid"}, e.ErrorCodes)
	require.NotEmpty(t, e.RequestID)
	for _, body := range []any{
		map[string]any{"amount": 1, "currency": "USD"},
		ckoPayment(1, "src_unknown", "v", true),
		ckoPayment(1, "card_123", "v", true),
		`{"amount": 1, "nope": true}`,
		`{`,
	} {
		decode[mocks.CheckoutError](t, b.c.post("/payments", body, "x"), 422)
	}
	// A 4xx is not cached: the same key with a corrected request is processed.
	p := decode[mocks.CheckoutPayment](t, b.c.post("/payments", ckoPayment(5, mocks.CheckoutSourceApproved, "v", true), "k"), 201)
	require.True(t, p.Approved)
}

func TestCheckoutIdempotencyReplaysOnly2xx(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{})
	body := ckoPayment(100, mocks.CheckoutSourceApproved, "op", true)
	first := b.c.post("/payments", body, "k")
	again := b.c.post("/payments", body, "k")
	require.Equal(t, 201, again.status)
	require.Equal(t, first.body, again.body)
	require.NotEqual(t, first.header.Get("Cko-Request-Id"), again.header.Get("Cko-Request-Id"))

	// A decline is a 201: cached too.
	d := ckoPayment(100, mocks.CheckoutSourceDoNotHonour, "d", true)
	require.Equal(t, b.c.post("/payments", d, "d").body, b.c.post("/payments", d, "d").body)

	// Another request under a stored key (undocumented at Checkout.com):
	// the fake replays the stored answer, as "subsequent requests with the
	// same key return the same status and body" says (see
	// TestCheckoutSameKeyOtherRequestReplays).
	other := b.c.post("/payments", ckoPayment(101, mocks.CheckoutSourceApproved, "op", true), "k")
	require.Equal(t, 201, other.status)
	require.Equal(t, first.body, other.body)

	// After the key's 24 hours, a resend is a new payment.
	b.clock.Advance(mocks.CheckoutKeyTTL)
	require.Equal(t, 201, b.c.post("/payments", body, "k").status)
	require.Equal(t, map[string]int{"op": 2}, b.f.Truth().ChargesByReference())
	require.Equal(t, 2, b.f.Truth().Replays)
}

// Checkout.com documents no error for a key reused with another request;
// its documented rule is that a repeat of a key whose request succeeded
// gets the same status and body. The fake must not invent a refusal: it
// replays, creates nothing, and answers 409 while the first still runs.
func TestCheckoutSameKeyOtherRequestReplays(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond}})
	first := b.c.post("/payments", ckoPayment(1000, mocks.CheckoutSourceApproved, "order-a", true), "shared")
	p := decode[mocks.CheckoutPayment](t, first, 201)

	// Another amount and reference under the same key.
	again := b.c.post("/payments", ckoPayment(2500, mocks.CheckoutSourceApproved, "order-b", true), "shared")
	require.Equal(t, 201, again.status)
	require.Equal(t, first.body, again.body, "the first request's answer, not a new payment")
	require.Equal(t, p.ID, decode[mocks.CheckoutPayment](t, again, 201).ID)
	// Another endpoint under the same key.
	refund := b.c.post("/payments/"+p.ID+"/refunds", map[string]any{"amount": 10, "reference": "r"}, "shared")
	require.Equal(t, 201, refund.status)
	require.Equal(t, first.body, refund.body)

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"order-a": 1}, truth.ChargesByReference())
	require.Empty(t, truth.Refunds)
	require.Equal(t, 2, truth.KeyMismatch)

	// While the first request under a key runs, another request with it
	// gets the documented 409.
	b.f.Script(ckoCreate, mocks.FaultSlow)
	done := holdKey(t, b.f, b.c, "/payments", ckoPayment(100, mocks.CheckoutSourceApproved, "slow", true), "slow")
	e := decode[mocks.CheckoutError](t, b.c.post("/payments", ckoPayment(999, mocks.CheckoutSourceApproved, "other", true), "slow"), 409)
	require.Equal(t, "request_in_progress", e.ErrorType)
	<-done

	// A key whose request failed is not stored: another request with it is
	// processed as new (documented: "if the original request could not be
	// processed, an idempotent result will not be saved").
	require.Equal(t, 422, b.c.post("/payments", ckoPayment(0, mocks.CheckoutSourceApproved, "bad", true), "free").status)
	require.Equal(t, 201, b.c.post("/payments", ckoPayment(700, mocks.CheckoutSourceApproved, "good", true), "free").status)
}

// TestCheckoutBlindResendAfter5xxChargesTwice shows why a Checkout.com
// client must look the payment up before resending after a 5xx: the 5xx is
// not cached under the key, so a resend with the same key is processed as a
// new payment and the card is charged twice.
func TestCheckoutBlindResendAfter5xxChargesTwice(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{})
	body := ckoPayment(2500, mocks.CheckoutSourceApproved, "order-77", true)

	b.f.Script(ckoCreate, mocks.FaultProcessed500)
	r := b.c.post("/payments", body, "same-key")
	require.Equal(t, 500, r.status)
	require.Equal(t, map[string]int{"order-77": 1}, b.f.Truth().ChargesByReference(), "the payment was made before the 500")

	// The blind resend, same key, same body:
	p := decode[mocks.CheckoutPayment](t, b.c.post("/payments", body, "same-key"), 201)
	require.True(t, p.Approved)
	truth := b.f.Truth()
	require.Equal(t, map[string]int{"order-77": 2}, truth.ChargesByReference(), "charged twice")
	require.Equal(t, []string{"order-77"}, truth.Duplicates("payonce_op"))
	require.Equal(t, int64(5000), truth.TotalCharged("USD"))
	require.Zero(t, truth.Replays)

	// What a client should do instead: look up by reference.
	l := decode[mocks.CheckoutPaymentList](t, b.c.get("/payments?reference=order-77"), 200)
	require.Equal(t, 2, l.TotalCount)
}

// By contrast a proxy 502 in front of Checkout.com hides a 2xx that was
// cached: the resend replays it.
func TestCheckoutGatewayAfter502Replays(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{})
	body := ckoPayment(2500, mocks.CheckoutSourceApproved, "order-78", true)
	b.f.Script(ckoCreate, mocks.FaultGatewayAfter502)
	require.Equal(t, 502, b.c.post("/payments", body, "gw").status)
	require.Equal(t, 201, b.c.post("/payments", body, "gw").status)
	require.Equal(t, map[string]int{"order-78": 1}, b.f.Truth().ChargesByReference())
	require.Equal(t, 1, b.f.Truth().Replays)

	// A stored 500 (nothing processed) is not cached either: the resend
	// processes the payment once.
	b.f.Script(ckoCreate, mocks.FaultStored500)
	body = ckoPayment(2500, mocks.CheckoutSourceApproved, "order-79", true)
	require.Equal(t, 500, b.c.post("/payments", body, "s5").status)
	require.Equal(t, 201, b.c.post("/payments", body, "s5").status)
	require.Equal(t, map[string]int{"order-78": 1, "order-79": 1}, b.f.Truth().ChargesByReference())
}

func TestCheckoutConflictWhileProcessing(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond}})
	b.f.Script(ckoCreate, mocks.FaultSlow)
	body := ckoPayment(100, mocks.CheckoutSourceApproved, "slow", true)
	done := holdKey(t, b.f, b.c, "/payments", body, "slow")
	e := decode[mocks.CheckoutError](t, b.c.post("/payments", body, "slow"), 409)
	require.Equal(t, "request_in_progress", e.ErrorType)
	<-done
	require.Equal(t, 1, b.f.Truth().KeyInUse)
	require.Len(t, b.f.Truth().Payments, 1)
}

// With KeyInUseStatus 429 the fake answers a key still in flight as
// Checkout.com's idempotency pages and API reference describe it (429,
// error_codes duplicate_request), and a rate-limited request as before (429
// too_many_requests): a client can tell the two apart only by the body.
func TestCheckoutKeyInUse429(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{Options: mocks.Options{SlowFor: 300 * time.Millisecond}, KeyInUseStatus: http.StatusTooManyRequests})
	b.f.Script(ckoCreate, mocks.FaultSlow)
	body := ckoPayment(100, mocks.CheckoutSourceApproved, "slow", true)
	done := holdKey(t, b.f, b.c, "/payments", body, "slow")
	e := decode[mocks.CheckoutError](t, b.c.post("/payments", body, "slow"), 429)
	require.Equal(t, "request_invalid", e.ErrorType)
	require.Equal(t, []string{"duplicate_request"}, e.ErrorCodes)
	// Another request under the key in flight gets the same answer.
	e = decode[mocks.CheckoutError](t, b.c.post("/payments", ckoPayment(999, mocks.CheckoutSourceApproved, "other", true), "slow"), 429)
	require.Equal(t, []string{"duplicate_request"}, e.ErrorCodes)
	require.Equal(t, 201, (<-done).status)
	truth := b.f.Truth()
	require.Equal(t, 1, truth.KeyInUse)
	require.Equal(t, 1, truth.KeyMismatch)
	require.Len(t, truth.Payments, 1)

	b.f.Script(ckoCreate, mocks.FaultRateLimit429)
	e = decode[mocks.CheckoutError](t, b.c.post("/payments", ckoPayment(1, mocks.CheckoutSourceApproved, "rl", true), "rl"), 429)
	require.Equal(t, "too_many_requests", e.ErrorType)
	require.Empty(t, e.ErrorCodes)

	require.NoError(t, mocks.CheckoutOptions{KeyInUseStatus: http.StatusConflict}.Validate())
	err := mocks.CheckoutOptions{KeyInUseStatus: http.StatusAccepted}.Validate()
	require.ErrorContains(t, err, "CheckoutOptions.KeyInUseStatus is 202")
	require.Panics(t, func() { mocks.NewCheckoutHandler(mocks.CheckoutOptions{KeyInUseStatus: 500}) })
}

func TestCheckoutAuthAndRateLimit(t *testing.T) {
	t.Parallel()
	b := ckoSetup(t, mocks.CheckoutOptions{Options: mocks.Options{RetryAfter: 1500 * time.Millisecond}, SecretKey: "sk_sbox_fakekeyforpayoncetests"})
	for _, auth := range []func(*http.Request){
		nil,
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer sk_sbox_wrong") },
		func(r *http.Request) { r.SetBasicAuth(b.f.SecretKey(), "") },
	} {
		c := *b.c
		c.auth = auth
		r := c.get("/payments?reference=x")
		require.Equal(t, 401, r.status)
		require.Empty(t, r.body)
	}
	c := *b.c
	c.auth = func(r *http.Request) { r.Header.Set("Authorization", b.f.SecretKey()) }
	require.Equal(t, 200, c.get("/payments?reference=x").status, "the bare key works too")

	b.f.Script(ckoCreate, mocks.FaultRateLimit429)
	r := b.c.post("/payments", ckoPayment(1, mocks.CheckoutSourceApproved, "rl", true), "rl")
	require.Equal(t, 429, r.status)
	require.Equal(t, "2", r.header.Get("Retry-After"))
	require.Empty(t, b.f.Truth().Payments)
	require.Equal(t, 201, b.c.post("/payments", ckoPayment(1, mocks.CheckoutSourceApproved, "rl", true), "rl").status)
}

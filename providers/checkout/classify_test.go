package checkout_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

func payJSON(id, status string, approved bool, code, summary string) string {
	a := "false"
	if approved {
		a = "true"
	}
	return `{"id":"` + id + `","action_id":"act_1","amount":1999,"currency":"USD","approved":` + a + `,"status":"` + status +
		`","response_code":"` + code + `","response_summary":"` + summary + `","reference":"` + chargeReq().OperationID + `"}`
}

func ckoErr(typ string, codes ...string) string {
	return `{"request_id":"req_body_1","error_type":"` + typ + `","error_codes":["` + strings.Join(codes, `","`) + `"]}`
}

func TestClassify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := chargeReq()
	capture := withKind(charge, payonce.KindCapture, 0, "pay_1")
	cancel := withKind(charge, payonce.KindCancel, 0, "pay_1")
	refundR := withKind(charge, payonce.KindRefund, 100, "pay_1")
	accepted := `{"action_id":"act_9","reference":"` + charge.OperationID + `","_links":{"payment":{"href":"x"}}}`
	huge := `{"id":"pay_1","status":"Captured","approved":true,"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	httpDate := testNow.Add(30 * time.Second).Format(http.TimeFormat)

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// payments
		{Name: "captured", R: charge, Status: 201, Hdr: []string{"Cko-Request-Id", "rq1"}, Body: payJSON("pay_1", "Captured", true, "10000", "Approved"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pay_1", RequestID: "rq1"}},
		{Name: "authorized", R: charge, Status: 201, Body: payJSON("pay_1", "Authorized", true, "10000", "Approved"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pay_1"}},
		{Name: "partially captured", R: charge, Status: 201, Body: payJSON("pay_1", "Partially Captured", true, "10000", "Approved"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pay_1"}},
		{Name: "pending 3ds", R: charge, Status: 202, Body: `{"id":"pay_1","status":"Pending","reference":"` + charge.OperationID + `","_links":{"redirect":{"href":"x"}}}`, Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "pay_1"}},
		{Name: "declined", R: charge, Status: 201, Body: payJSON("pay_1", "Declined", false, "20051", "Insufficient Funds"), Want: want{Class: ledger.OutcomeRefused, Ref: "pay_1", Code: "declined", Decline: "20051", Msg: "Insufficient Funds"}},
		{Name: "declined no summary", R: charge, Status: 201, Body: `{"id":"pay_1","status":"Declined","approved":false}`, Want: want{Class: ledger.OutcomeRefused, Ref: "pay_1", Code: "declined", Msg: "Declined"}},
		{Name: "canceled unapproved", R: charge, Status: 201, Body: payJSON("pay_1", "Canceled", false, "", ""), Want: want{Class: ledger.OutcomeRefused, Ref: "pay_1", Code: "declined"}},
		{Name: "approved but declined status", R: charge, Status: 201, Body: payJSON("pay_1", "Declined", true, "20005", "x"), Want: want{Class: ledger.OutcomeRefused, Ref: "pay_1", Decline: "20005"}},
		{Name: "authorized but not approved", R: charge, Status: 201, Body: payJSON("pay_1", "Authorized", false, "", ""), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "pay_1"}},
		{Name: "authorized no approved field", R: charge, Status: 201, Body: `{"id":"pay_1","status":"Authorized"}`, Want: want{Class: ledger.OutcomeMaybeSent, Ref: "pay_1"}},
		{Name: "card verified", R: charge, Status: 201, Body: payJSON("pay_1", "Card Verified", true, "10000", ""), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "pay_1", Msg: "Card Verified"}},
		{Name: "unknown status", R: charge, Status: 201, Body: payJSON("pay_1", "Brand New", true, "", ""), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "pay_1"}},
		{Name: "malformed", R: charge, Status: 201, Body: `{"id":"pay_1",`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}},
		{Name: "empty", R: charge, Status: 201, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "no id", R: charge, Status: 201, Body: `{"status":"Captured","approved":true}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}},
		{Name: "error in 2xx", R: charge, Status: 200, Body: ckoErr("request_invalid", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "oversized", R: charge, Status: 201, Body: huge, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}},

		// actions: accepted, not done
		{Name: "capture accepted", R: capture, Status: 202, Body: accepted, Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "act_9"}},
		{Name: "void accepted", R: cancel, Status: 202, Body: accepted, Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "act_9"}},
		{Name: "refund accepted", R: refundR, Status: 202, Body: accepted, Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "act_9"}},
		{Name: "refund no action id", R: refundR, Status: 202, Body: `{"reference":"op"}`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "capture html", R: capture, Status: 202, Body: `<html/>`, Want: want{Class: ledger.OutcomeMaybeSent}},

		// 4xx
		{Name: "409 in progress", R: charge, Status: 409, Hdr: []string{"Retry-After", "3"}, Body: ckoErr("request_in_progress"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "request_in_progress", RetryAfter: 3 * time.Second, RequestID: "req_body_1"}},
		{Name: "409 no body", R: refundR, Status: 409, Want: want{Class: ledger.OutcomeKeyInUse}},
		{Name: "422", R: charge, Status: 422, Hdr: []string{"Cko-Request-Id", "rq2"}, Body: ckoErr("request_invalid", "amount_invalid", "currency_invalid"), Want: want{Class: ledger.OutcomeRefused, Code: "request_invalid", Msg: "amount_invalid, currency_invalid", RequestID: "rq2"}},
		{Name: "422 over-refund", R: refundR, Status: 422, Body: ckoErr("request_invalid", "refund_amount_exceeds_balance"), Want: want{Class: ledger.OutcomeRefused, Msg: "refund_amount_exceeds_balance"}},
		{Name: "400", R: charge, Status: 400, Want: want{Class: ledger.OutcomeRefused}},
		{Name: "401 empty", R: charge, Status: 401, Want: want{Class: ledger.OutcomeRefused}},
		{Name: "403 not allowed", R: capture, Status: 403, Body: ckoErr("action_not_allowed", "capture_not_allowed"), Want: want{Class: ledger.OutcomeRefused, Code: "action_not_allowed"}},
		{Name: "404", R: cancel, Status: 404, Want: want{Class: ledger.OutcomeRefused}},

		// 429: the key in flight, as Checkout.com's idempotency pages and API
		// reference describe it (error_codes duplicate_request), is
		// key_in_use; a 429 that does not say so is maybe_sent (a rate
		// limit, or a key in flight: either way never not_sent).
		{Name: "429 duplicate request", R: charge, Status: 429, Hdr: []string{"Retry-After", "30"}, Body: ckoErr("request_invalid", "duplicate_request"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "request_invalid", Msg: "duplicate_request", RetryAfter: 30 * time.Second, RequestID: "req_body_1"}},
		{Name: "429 duplicate request on refund", R: refundR, Status: 429, Body: ckoErr("request_invalid", "Duplicate_Request "), Want: want{Class: ledger.OutcomeKeyInUse}},
		{Name: "429 naming the key", R: capture, Status: 429, Body: ckoErr("idempotency_key_in_use"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "idempotency_key_in_use"}},
		{Name: "422 duplicate request", R: charge, Status: 422, Body: ckoErr("request_invalid", "duplicate_request"), Want: want{Class: ledger.OutcomeKeyInUse}},
		{Name: "429 other codes", R: charge, Status: 429, Body: ckoErr("request_invalid", "duplicate_request_id"), Want: want{Class: ledger.OutcomeMaybeSent, Code: "request_invalid"}},
		{Name: "429 no body", R: charge, Status: 429, Want: want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests"}},
		{Name: "400 naming the key", R: charge, Status: 400, Body: ckoErr("idempotency_key_reused"), Want: want{Class: ledger.OutcomeKeyMismatch}},

		// 429, 5xx, others
		{Name: "429 seconds", R: charge, Status: 429, Hdr: []string{"Retry-After", "2"}, Body: ckoErr("too_many_requests"), Want: want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 2 * time.Second}},
		{Name: "429 date", R: charge, Status: 429, Hdr: []string{"Retry-After", httpDate}, Want: want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 30 * time.Second}},
		{Name: "429 junk header", R: charge, Status: 429, Hdr: []string{"Retry-After", "soon"}, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "429 huge header", R: charge, Status: 429, Hdr: []string{"Retry-After", "99999999999"}, Want: want{Class: ledger.OutcomeMaybeSent, RetryAfter: 24 * time.Hour}},
		{Name: "500", R: charge, Status: 500, Body: ckoErr("internal_server_error"), Want: want{Class: ledger.OutcomeMaybeSent, Code: "internal_server_error"}},
		{Name: "500 on refund", R: refundR, Status: 500, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "502", R: charge, Status: 502, Body: `<html>Bad Gateway</html>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "503", R: capture, Status: 503, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "418", R: charge, Status: 418, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "301", R: charge, Status: 301, Want: want{Class: ledger.OutcomeMaybeSent}},
	}, testkit.ClassifyChecks{Each: func(t *testing.T, o payonce.Outcome) {
		require.NotEqual(t, ledger.OutcomeNotSent, o.Class, "nothing that may have reached Checkout.com is not_sent")
	}})
}

func TestClassifyScrubsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.P.Classify(chargeReq(), 422, http.Header{}, []byte(ckoErr("request_invalid", "key "+testKey+" and sk_test_0b1c2d3e-aaaa")))
	testkit.RequireScrubbed(t, o.Message, testKey, "sk_test_0b1c2d3e")
	o = b.P.Classify(chargeReq(), 201, http.Header{}, []byte(payJSON("pay_1", "Declined", false, testKey, testKey)))
	require.NotContains(t, o.Message, testKey)
	require.NotContains(t, o.DeclineCode, testKey)
}

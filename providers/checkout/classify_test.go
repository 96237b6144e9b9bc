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
	capture, cancel, refundR := testkit.Actions(withKind, charge, "pay_1", 0, 100)
	accepted := `{"action_id":"act_9","reference":"` + charge.OperationID + `","_links":{"payment":{"href":"x"}}}`
	huge := `{"id":"pay_1","status":"Captured","approved":true,"pad":"` + strings.Repeat("x", 1<<20) + `"}`
	httpDate := testNow.Add(30 * time.Second).Format(http.TimeFormat)

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// payments
		testkit.Classified("captured", charge, 201, []string{"Cko-Request-Id", "rq1"}, payJSON("pay_1", "Captured", true, "10000", "Approved"), want{Class: ledger.OutcomeSuccess, Ref: "pay_1", RequestID: "rq1"}),
		testkit.Classified("authorized", charge, 201, nil, payJSON("pay_1", "Authorized", true, "10000", "Approved"), want{Class: ledger.OutcomeSuccess, Ref: "pay_1"}),
		testkit.Classified("partially captured", charge, 201, nil, payJSON("pay_1", "Partially Captured", true, "10000", "Approved"), want{Class: ledger.OutcomeSuccess, Ref: "pay_1"}),
		testkit.Classified("pending 3ds", charge, 202, nil, `{"id":"pay_1","status":"Pending","reference":"`+charge.OperationID+`","_links":{"redirect":{"href":"x"}}}`, want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "pay_1"}),
		testkit.Classified("declined", charge, 201, nil, payJSON("pay_1", "Declined", false, "20051", "Insufficient Funds"),
			want{Class: ledger.OutcomeRefused, Ref: "pay_1", Code: "declined", Decline: "20051", Msg: "Insufficient Funds"}),
		testkit.Classified("declined no summary", charge, 201, nil, `{"id":"pay_1","status":"Declined","approved":false}`, want{Class: ledger.OutcomeRefused, Ref: "pay_1", Code: "declined", Msg: "Declined"}),
		testkit.Classified("canceled unapproved", charge, 201, nil, payJSON("pay_1", "Canceled", false, "", ""), want{Class: ledger.OutcomeRefused, Ref: "pay_1", Code: "declined"}),
		testkit.Classified("approved but declined status", charge, 201, nil, payJSON("pay_1", "Declined", true, "20005", "x"), want{Class: ledger.OutcomeRefused, Ref: "pay_1", Decline: "20005"}),
		testkit.Classified("authorized but not approved", charge, 201, nil, payJSON("pay_1", "Authorized", false, "", ""), want{Class: ledger.OutcomeMaybeSent, Ref: "pay_1"}),
		testkit.Classified("authorized no approved field", charge, 201, nil, `{"id":"pay_1","status":"Authorized"}`, want{Class: ledger.OutcomeMaybeSent, Ref: "pay_1"}),
		testkit.Classified("card verified", charge, 201, nil, payJSON("pay_1", "Card Verified", true, "10000", ""), want{Class: ledger.OutcomeKeyMismatch, Ref: "pay_1", Msg: "Card Verified"}),
		testkit.Classified("unknown status", charge, 201, nil, payJSON("pay_1", "Brand New", true, "", ""), want{Class: ledger.OutcomeMaybeSent, Ref: "pay_1"}),
		testkit.Classified("malformed", charge, 201, nil, `{"id":"pay_1",`, want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}),
		testkit.Classified("empty", charge, 201, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("no id", charge, 201, nil, `{"status":"Captured","approved":true}`, want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}),
		testkit.Classified("error in 2xx", charge, 200, nil, ckoErr("request_invalid", "x"), want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("oversized", charge, 201, nil, huge, want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}),

		// actions: accepted, not done
		testkit.Classified("capture accepted", capture, 202, nil, accepted, want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "act_9"}),
		testkit.Classified("void accepted", cancel, 202, nil, accepted, want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "act_9"}),
		testkit.Classified("refund accepted", refundR, 202, nil, accepted, want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "act_9"}),
		testkit.Classified("refund no action id", refundR, 202, nil, `{"reference":"op"}`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("capture html", capture, 202, nil, `<html/>`, want{Class: ledger.OutcomeMaybeSent}),

		// 4xx
		testkit.Classified("409 in progress", charge, 409, []string{"Retry-After", "3"}, ckoErr("request_in_progress"), want{Class: ledger.OutcomeKeyInUse, Code: "request_in_progress", RetryAfter: 3 * time.Second, RequestID: "req_body_1"}),
		testkit.Classified("409 no body", refundR, 409, nil, ``, want{Class: ledger.OutcomeKeyInUse}),
		testkit.Classified("422", charge, 422, []string{"Cko-Request-Id", "rq2"}, ckoErr("request_invalid", "amount_invalid", "currency_invalid"),
			want{Class: ledger.OutcomeRefused, Code: "request_invalid", Msg: "amount_invalid, currency_invalid", RequestID: "rq2"}),
		testkit.Classified("422 over-refund", refundR, 422, nil, ckoErr("request_invalid", "refund_amount_exceeds_balance"), want{Class: ledger.OutcomeRefused, Msg: "refund_amount_exceeds_balance"}),
		testkit.Classified("400", charge, 400, nil, ``, want{Class: ledger.OutcomeRefused}),
		testkit.Classified("401 empty", charge, 401, nil, ``, want{Class: ledger.OutcomeRefused}),
		testkit.Classified("403 not allowed", capture, 403, nil, ckoErr("action_not_allowed", "capture_not_allowed"), want{Class: ledger.OutcomeRefused, Code: "action_not_allowed"}),
		testkit.Classified("404", cancel, 404, nil, ``, want{Class: ledger.OutcomeRefused}),

		// 429: the key in flight, as Checkout.com's idempotency pages and API
		// reference describe it (error_codes duplicate_request), is
		// key_in_use; a 429 that does not say so is maybe_sent (a rate
		// limit, or a key in flight: either way never not_sent).
		testkit.Classified("429 duplicate request", charge, 429, []string{"Retry-After", "30"}, ckoErr("request_invalid", "duplicate_request"),
			want{Class: ledger.OutcomeKeyInUse, Code: "request_invalid", Msg: "duplicate_request", RetryAfter: 30 * time.Second, RequestID: "req_body_1"}),
		testkit.Classified("429 duplicate request on refund", refundR, 429, nil, ckoErr("request_invalid", "Duplicate_Request "), want{Class: ledger.OutcomeKeyInUse}),
		testkit.Classified("429 naming the key", capture, 429, nil, ckoErr("idempotency_key_in_use"), want{Class: ledger.OutcomeKeyInUse, Code: "idempotency_key_in_use"}),
		testkit.Classified("422 duplicate request", charge, 422, nil, ckoErr("request_invalid", "duplicate_request"), want{Class: ledger.OutcomeKeyInUse}),
		testkit.Classified("429 other codes", charge, 429, nil, ckoErr("request_invalid", "duplicate_request_id"), want{Class: ledger.OutcomeMaybeSent, Code: "request_invalid"}),
		testkit.Classified("429 no body", charge, 429, nil, ``, want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests"}),
		testkit.Classified("400 naming the key", charge, 400, nil, ckoErr("idempotency_key_reused"), want{Class: ledger.OutcomeKeyMismatch}),

		// 429, 5xx, others
		testkit.Classified("429 seconds", charge, 429, []string{"Retry-After", "2"}, ckoErr("too_many_requests"), want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 2 * time.Second}),
		testkit.Classified("429 date", charge, 429, []string{"Retry-After", httpDate}, ``, want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 30 * time.Second}),
		testkit.Classified("429 junk header", charge, 429, []string{"Retry-After", "soon"}, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("429 huge header", charge, 429, []string{"Retry-After", "99999999999"}, ``, want{Class: ledger.OutcomeMaybeSent, RetryAfter: 24 * time.Hour}),
		testkit.Classified("500", charge, 500, nil, ckoErr("internal_server_error"), want{Class: ledger.OutcomeMaybeSent, Code: "internal_server_error"}),
		testkit.Classified("500 on refund", refundR, 500, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("502", charge, 502, nil, `<html>Bad Gateway</html>`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("503", capture, 503, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("418", charge, 418, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("301", charge, 301, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
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

package checkout_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

	type want struct {
		class      ledger.OutcomeClass
		processing bool
		ref        string
		code       string
		decline    string
		msg        string
		retryAfter time.Duration
		requestID  string
	}
	for _, tc := range []struct {
		name   string
		r      payonce.SendRequest
		status int
		hdr    []string
		body   string
		want   want
	}{
		// payments
		{"captured", charge, 201, []string{"Cko-Request-Id", "rq1"}, payJSON("pay_1", "Captured", true, "10000", "Approved"), want{class: ledger.OutcomeSuccess, ref: "pay_1", requestID: "rq1"}},
		{"authorized", charge, 201, nil, payJSON("pay_1", "Authorized", true, "10000", "Approved"), want{class: ledger.OutcomeSuccess, ref: "pay_1"}},
		{"partially captured", charge, 201, nil, payJSON("pay_1", "Partially Captured", true, "10000", "Approved"), want{class: ledger.OutcomeSuccess, ref: "pay_1"}},
		{"pending 3ds", charge, 202, nil, `{"id":"pay_1","status":"Pending","reference":"` + charge.OperationID + `","_links":{"redirect":{"href":"x"}}}`, want{class: ledger.OutcomeSuccess, processing: true, ref: "pay_1"}},
		{"declined", charge, 201, nil, payJSON("pay_1", "Declined", false, "20051", "Insufficient Funds"),
			want{class: ledger.OutcomeRefused, ref: "pay_1", code: "declined", decline: "20051", msg: "Insufficient Funds"}},
		{"declined no summary", charge, 201, nil, `{"id":"pay_1","status":"Declined","approved":false}`, want{class: ledger.OutcomeRefused, ref: "pay_1", code: "declined", msg: "Declined"}},
		{"canceled unapproved", charge, 201, nil, payJSON("pay_1", "Canceled", false, "", ""), want{class: ledger.OutcomeRefused, ref: "pay_1", code: "declined"}},
		{"approved but declined status", charge, 201, nil, payJSON("pay_1", "Declined", true, "20005", "x"), want{class: ledger.OutcomeRefused, ref: "pay_1", decline: "20005"}},
		{"authorized but not approved", charge, 201, nil, payJSON("pay_1", "Authorized", false, "", ""), want{class: ledger.OutcomeMaybeSent, ref: "pay_1"}},
		{"authorized no approved field", charge, 201, nil, `{"id":"pay_1","status":"Authorized"}`, want{class: ledger.OutcomeMaybeSent, ref: "pay_1"}},
		{"card verified", charge, 201, nil, payJSON("pay_1", "Card Verified", true, "10000", ""), want{class: ledger.OutcomeKeyMismatch, ref: "pay_1", msg: "Card Verified"}},
		{"unknown status", charge, 201, nil, payJSON("pay_1", "Brand New", true, "", ""), want{class: ledger.OutcomeMaybeSent, ref: "pay_1"}},
		{"malformed", charge, 201, nil, `{"id":"pay_1",`, want{class: ledger.OutcomeMaybeSent, msg: "unreadable"}},
		{"empty", charge, 201, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"no id", charge, 201, nil, `{"status":"Captured","approved":true}`, want{class: ledger.OutcomeMaybeSent, msg: "no id"}},
		{"error in 2xx", charge, 200, nil, ckoErr("request_invalid", "x"), want{class: ledger.OutcomeMaybeSent}},
		{"oversized", charge, 201, nil, huge, want{class: ledger.OutcomeMaybeSent, msg: "bytes"}},

		// actions: accepted, not done
		{"capture accepted", capture, 202, nil, accepted, want{class: ledger.OutcomeSuccess, processing: true, ref: "act_9"}},
		{"void accepted", cancel, 202, nil, accepted, want{class: ledger.OutcomeSuccess, processing: true, ref: "act_9"}},
		{"refund accepted", refundR, 202, nil, accepted, want{class: ledger.OutcomeSuccess, processing: true, ref: "act_9"}},
		{"refund no action id", refundR, 202, nil, `{"reference":"op"}`, want{class: ledger.OutcomeMaybeSent}},
		{"capture html", capture, 202, nil, `<html/>`, want{class: ledger.OutcomeMaybeSent}},

		// 4xx
		{"409 in progress", charge, 409, []string{"Retry-After", "3"}, ckoErr("request_in_progress"), want{class: ledger.OutcomeKeyInUse, code: "request_in_progress", retryAfter: 3 * time.Second, requestID: "req_body_1"}},
		{"409 no body", refundR, 409, nil, ``, want{class: ledger.OutcomeKeyInUse}},
		{"422", charge, 422, []string{"Cko-Request-Id", "rq2"}, ckoErr("request_invalid", "amount_invalid", "currency_invalid"),
			want{class: ledger.OutcomeRefused, code: "request_invalid", msg: "amount_invalid, currency_invalid", requestID: "rq2"}},
		{"422 over-refund", refundR, 422, nil, ckoErr("request_invalid", "refund_amount_exceeds_balance"), want{class: ledger.OutcomeRefused, msg: "refund_amount_exceeds_balance"}},
		{"400", charge, 400, nil, ``, want{class: ledger.OutcomeRefused}},
		{"401 empty", charge, 401, nil, ``, want{class: ledger.OutcomeRefused}},
		{"403 not allowed", capture, 403, nil, ckoErr("action_not_allowed", "capture_not_allowed"), want{class: ledger.OutcomeRefused, code: "action_not_allowed"}},
		{"404", cancel, 404, nil, ``, want{class: ledger.OutcomeRefused}},

		// 429, 5xx, others
		{"429 seconds", charge, 429, []string{"Retry-After", "2"}, ckoErr("too_many_requests"), want{class: ledger.OutcomeMaybeSent, code: "too_many_requests", retryAfter: 2 * time.Second}},
		{"429 date", charge, 429, []string{"Retry-After", httpDate}, ``, want{class: ledger.OutcomeMaybeSent, code: "too_many_requests", retryAfter: 30 * time.Second}},
		{"429 junk header", charge, 429, []string{"Retry-After", "soon"}, ``, want{class: ledger.OutcomeMaybeSent}},
		{"429 huge header", charge, 429, []string{"Retry-After", "99999999999"}, ``, want{class: ledger.OutcomeMaybeSent, retryAfter: 24 * time.Hour}},
		{"500", charge, 500, nil, ckoErr("internal_server_error"), want{class: ledger.OutcomeMaybeSent, code: "internal_server_error"}},
		{"500 on refund", refundR, 500, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"502", charge, 502, nil, `<html>Bad Gateway</html>`, want{class: ledger.OutcomeMaybeSent}},
		{"503", capture, 503, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"418", charge, 418, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"301", charge, 301, nil, ``, want{class: ledger.OutcomeMaybeSent}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := b.p.Classify(tc.r, tc.status, testkit.Header(tc.hdr...), []byte(tc.body))
			require.Equal(t, tc.want.class, o.Class)
			require.Equal(t, tc.want.processing, o.Processing, "Processing")
			require.Equal(t, tc.want.ref, o.ProviderRef, "ProviderRef")
			require.Equal(t, tc.status, o.HTTPStatus)
			require.Equal(t, tc.want.retryAfter, o.RetryAfter, "RetryAfter")
			if tc.want.code != "" {
				require.Equal(t, tc.want.code, o.Code)
			}
			if tc.want.requestID != "" {
				require.Equal(t, tc.want.requestID, o.RequestID)
			}
			require.Equal(t, tc.want.decline, o.DeclineCode)
			if tc.want.msg != "" {
				require.Contains(t, o.Message, tc.want.msg)
			}
			require.NotEqual(t, ledger.OutcomeNotSent, o.Class, "nothing that may have reached Checkout.com is not_sent")
			require.LessOrEqual(t, len(o.Message), 1100)
			require.True(t, utf8.ValidString(o.Message))
		})
	}
}

func TestClassifyScrubsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.p.Classify(chargeReq(), 422, http.Header{}, []byte(ckoErr("request_invalid", "key "+testKey+" and sk_test_0b1c2d3e-aaaa")))
	require.NotContains(t, o.Message, testKey)
	require.NotContains(t, o.Message, "sk_test_0b1c2d3e")
	require.Contains(t, o.Message, "[REDACTED]")
	o = b.p.Classify(chargeReq(), 201, http.Header{}, []byte(payJSON("pay_1", "Declined", false, testKey, testKey)))
	require.NotContains(t, o.Message, testKey)
	require.NotContains(t, o.DeclineCode, testKey)
}

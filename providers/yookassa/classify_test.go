package yookassa_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

func pm(id, status, cancel string) string {
	s := `{"id":"` + id + `","status":"` + status + `","paid":false,"amount":{"value":"1200.00","currency":"RUB"},"metadata":{}`
	if cancel != "" {
		s += `,"cancellation_details":` + cancel
	}
	return s + "}"
}

func ykErr(code, desc, param string) string {
	return `{"type":"error","id":"ab5a11cd-13cc-4e33-af8b-75a74e18dd09","code":"` + code + `","description":"` + desc + `","parameter":"` + param + `"}`
}

func TestClassify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := chargeReq()
	capture := withKind(charge, payonce.KindCapture, 0, "p1")
	cancel := withKind(charge, payonce.KindCancel, 0, "p1")
	refundR := withKind(charge, payonce.KindRefund, 100, "p1")
	declined := `{"party":"payment_network","reason":"insufficient_funds"}`
	huge := `{"id":"p1","status":"succeeded","pad":"` + strings.Repeat("x", 1<<20) + `"}`

	type want struct {
		class      ledger.OutcomeClass
		processing bool
		ref        string
		code       string
		decline    string
		msg        string // substring
		retryAfter time.Duration
		requestID  string
	}
	for _, tc := range []struct {
		name   string
		r      payonce.SendRequest
		status int
		body   string
		want   want
	}{
		// 200 charge
		{"charge succeeded", charge, 200, pm("p1", "succeeded", ""), want{class: ledger.OutcomeSuccess, ref: "p1"}},
		{"charge waiting_for_capture", charge, 200, pm("p1", "waiting_for_capture", ""), want{class: ledger.OutcomeSuccess, ref: "p1"}},
		{"charge pending", charge, 200, pm("p1", "pending", ""), want{class: ledger.OutcomeSuccess, processing: true, ref: "p1"}},
		{"charge declined", charge, 200, pm("p1", "canceled", declined), want{class: ledger.OutcomeRefused, ref: "p1", code: "canceled", decline: "insufficient_funds", msg: "payment_network"}},
		{"charge canceled bare", charge, 200, pm("p1", "canceled", ""), want{class: ledger.OutcomeRefused, ref: "p1", code: "canceled"}},
		{"charge unknown status", charge, 200, pm("p1", "brand_new", ""), want{class: ledger.OutcomeMaybeSent, ref: "p1", msg: "brand_new"}},
		{"charge malformed", charge, 200, `{"id":"p1","status":`, want{class: ledger.OutcomeMaybeSent, msg: "unreadable"}},
		{"charge empty", charge, 200, ``, want{class: ledger.OutcomeMaybeSent}},
		{"charge null", charge, 200, `null`, want{class: ledger.OutcomeMaybeSent}},
		{"charge html", charge, 200, `<html>ok</html>`, want{class: ledger.OutcomeMaybeSent}},
		{"charge no id", charge, 200, `{"status":"succeeded"}`, want{class: ledger.OutcomeMaybeSent, msg: "no id"}},
		{"charge no status", charge, 200, `{"id":"p1"}`, want{class: ledger.OutcomeMaybeSent, msg: "status"}},
		{"charge error object in 200", charge, 200, ykErr("invalid_request", "x", ""), want{class: ledger.OutcomeMaybeSent}},
		{"charge list in 200", charge, 200, `{"type":"list","items":[]}`, want{class: ledger.OutcomeMaybeSent}},
		{"charge 201", charge, 201, pm("p1", "succeeded", ""), want{class: ledger.OutcomeSuccess, ref: "p1"}},
		{"charge oversized", charge, 200, huge, want{class: ledger.OutcomeMaybeSent, msg: "bytes"}},

		// 200 capture / cancel
		{"capture succeeded", capture, 200, pm("p1", "succeeded", ""), want{class: ledger.OutcomeSuccess, ref: "p1"}},
		{"capture still waiting", capture, 200, pm("p1", "waiting_for_capture", ""), want{class: ledger.OutcomeMaybeSent, ref: "p1"}},
		{"capture canceled", capture, 200, pm("p1", "canceled", `{"party":"yoo_money","reason":"expired_on_capture"}`), want{class: ledger.OutcomeRefused, ref: "p1", code: "canceled", decline: "expired_on_capture"}},
		{"capture malformed", capture, 200, `{`, want{class: ledger.OutcomeMaybeSent}},
		{"cancel canceled", cancel, 200, pm("p1", "canceled", `{"party":"merchant","reason":"canceled_by_merchant"}`), want{class: ledger.OutcomeSuccess, ref: "p1"}},
		{"cancel of a captured payment", cancel, 200, pm("p1", "succeeded", ""), want{class: ledger.OutcomeRefused, ref: "p1", code: "unexpected_status"}},
		{"cancel still waiting", cancel, 200, pm("p1", "waiting_for_capture", ""), want{class: ledger.OutcomeMaybeSent, ref: "p1"}},

		// 200 refund
		{"refund succeeded", refundR, 200, `{"id":"r1","payment_id":"p1","status":"succeeded","amount":{"value":"1.00","currency":"RUB"}}`, want{class: ledger.OutcomeSuccess, ref: "r1"}},
		{"refund pending", refundR, 200, `{"id":"r1","payment_id":"p1","status":"pending","amount":{"value":"1.00","currency":"RUB"}}`, want{class: ledger.OutcomeSuccess, processing: true, ref: "r1"}},
		{"refund canceled", refundR, 200, `{"id":"r1","payment_id":"p1","status":"canceled","amount":{"value":"1.00","currency":"RUB"},"cancellation_details":{"party":"payment_network","reason":"general_decline"}}`,
			want{class: ledger.OutcomeRefused, ref: "r1", code: "refund_canceled", decline: "general_decline"}},
		{"refund without amount", refundR, 200, `{"id":"r1","payment_id":"p1","status":"succeeded"}`, want{class: ledger.OutcomeMaybeSent, ref: "r1", msg: "refund r1"}},
		{"refund unknown status", refundR, 200, `{"id":"r1","payment_id":"p1","status":"weird"}`, want{class: ledger.OutcomeMaybeSent, ref: "r1"}},
		{"refund is a payment", refundR, 200, pm("p1", "succeeded", ""), want{class: ledger.OutcomeMaybeSent, msg: "payment_id"}},
		{"refund no id", refundR, 200, `{"payment_id":"p1","status":"succeeded"}`, want{class: ledger.OutcomeMaybeSent}},

		// 202 still processing
		{"202 processing", charge, 202, `{"type":"processing","description":"Request accepted","retry_after":1800}`,
			want{class: ledger.OutcomeKeyInUse, retryAfter: 1800 * time.Millisecond, code: "processing"}},
		{"202 fractional", charge, 202, `{"type":"processing","retry_after":2.5}`, want{class: ledger.OutcomeKeyInUse, retryAfter: 2500 * time.Microsecond}},
		{"202 no body", refundR, 202, ``, want{class: ledger.OutcomeKeyInUse}},
		{"202 huge", charge, 202, `{"type":"processing","retry_after":1e15}`, want{class: ledger.OutcomeKeyInUse, retryAfter: 24 * time.Hour}},
		{"202 negative", charge, 202, `{"type":"processing","retry_after":-5}`, want{class: ledger.OutcomeKeyInUse}},

		// 400 / 401 / 403 / 404
		{"400 key duplicated", charge, 400, ykErr("invalid_request", "Idempotence key duplicated", "Idempotence-Key"),
			want{class: ledger.OutcomeKeyMismatch, code: "invalid_request", msg: "duplicated", requestID: "ab5a11cd-13cc-4e33-af8b-75a74e18dd09"}},
		{"400 key duplicated other words", capture, 400, ykErr("invalid_request", "Idempotence key was duplicated with another request", "Idempotence-Key"), want{class: ledger.OutcomeKeyMismatch}},
		{"400 key missing", charge, 400, ykErr("invalid_request", "Idempotence-Key header is required", "Idempotence-Key"), want{class: ledger.OutcomeRefused}},
		{"400 invalid", charge, 400, ykErr("invalid_request", "Amount is invalid", "amount.value"), want{class: ledger.OutcomeRefused, code: "invalid_request", msg: "parameter amount.value"}},
		{"400 over-refund", refundR, 400, ykErr("invalid_request", "Refund amount is greater than the amount left", "amount.value"), want{class: ledger.OutcomeRefused}},
		{"400 not_supported", charge, 400, ykErr("not_supported", "not supported", ""), want{class: ledger.OutcomeRefused, code: "not_supported"}},
		{"400 no body", charge, 400, ``, want{class: ledger.OutcomeRefused}},
		{"401", charge, 401, ykErr("invalid_credentials", "Authentication by given credentials failed", ""), want{class: ledger.OutcomeRefused, code: "invalid_credentials"}},
		{"403", charge, 403, ykErr("forbidden", "Forbidden", ""), want{class: ledger.OutcomeRefused}},
		{"404", capture, 404, ykErr("not_found", "Payment not found", ""), want{class: ledger.OutcomeRefused, code: "not_found"}},

		// 429, 5xx, others: maybe sent
		{"429", charge, 429, `{"type":"error","id":"e1","code":"too_many_requests","description":"Too many requests","retry_after":3000}`,
			want{class: ledger.OutcomeMaybeSent, code: "too_many_requests", retryAfter: 3 * time.Second}},
		{"429 no body", charge, 429, ``, want{class: ledger.OutcomeMaybeSent, code: "too_many_requests"}},
		{"500", charge, 500, ykErr("internal_server_error", "Internal server error", ""), want{class: ledger.OutcomeMaybeSent, code: "internal_server_error"}},
		{"502 html", charge, 502, `<html>Bad Gateway</html>`, want{class: ledger.OutcomeMaybeSent}},
		{"503", refundR, 503, ``, want{class: ledger.OutcomeMaybeSent}},
		{"504", capture, 504, ``, want{class: ledger.OutcomeMaybeSent}},
		{"409", charge, 409, ``, want{class: ledger.OutcomeMaybeSent}},
		{"418", charge, 418, ``, want{class: ledger.OutcomeMaybeSent}},
		{"302", charge, 302, ``, want{class: ledger.OutcomeMaybeSent}},
		{"long message", charge, 400, ykErr("invalid_request", strings.Repeat("é", 3000), ""), want{class: ledger.OutcomeRefused, msg: "..."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := b.p.Classify(tc.r, tc.status, http.Header{}, []byte(tc.body))
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
			require.False(t, o.Replayed, "YooKassa does not mark replays")
			require.LessOrEqual(t, len(o.Message), 1100)
			require.True(t, utf8.ValidString(o.Message))
		})
	}
}

func TestClassifyScrubsCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := ykErr("invalid_credentials", "Bad credentials for shop "+testShopID+" key "+testSecret+" and live_abcdefghijklmnopqrstuvwxyz0123", "")
	o := b.p.Classify(chargeReq(), 401, http.Header{}, []byte(body))
	require.Equal(t, ledger.OutcomeRefused, o.Class)
	require.NotContains(t, o.Message, testSecret)
	require.NotContains(t, o.Message, testShopID)
	require.NotContains(t, o.Message, "live_abcdefghijklmnopqrstuvwxyz0123")
	require.Contains(t, o.Message, "[REDACTED]")
}

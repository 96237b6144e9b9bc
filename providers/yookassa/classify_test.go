package yookassa_test

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

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// 200 charge
		{Name: "charge succeeded", R: charge, Status: 200, Body: pm("p1", "succeeded", ""), Want: want{Class: ledger.OutcomeSuccess, Ref: "p1"}},
		{Name: "charge waiting_for_capture", R: charge, Status: 200, Body: pm("p1", "waiting_for_capture", ""), Want: want{Class: ledger.OutcomeSuccess, Ref: "p1"}},
		{Name: "charge pending", R: charge, Status: 200, Body: pm("p1", "pending", ""), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "p1"}},
		{Name: "charge declined", R: charge, Status: 200, Body: pm("p1", "canceled", declined), Want: want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "canceled", Decline: "insufficient_funds", Msg: "payment_network"}},
		{Name: "charge canceled bare", R: charge, Status: 200, Body: pm("p1", "canceled", ""), Want: want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "canceled"}},
		{Name: "charge unknown status", R: charge, Status: 200, Body: pm("p1", "brand_new", ""), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "p1", Msg: "brand_new"}},
		{Name: "charge malformed", R: charge, Status: 200, Body: `{"id":"p1","status":`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}},
		{Name: "charge empty", R: charge, Status: 200, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge null", R: charge, Status: 200, Body: `null`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge html", R: charge, Status: 200, Body: `<html>ok</html>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge no id", R: charge, Status: 200, Body: `{"status":"succeeded"}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}},
		{Name: "charge no status", R: charge, Status: 200, Body: `{"id":"p1"}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "status"}},
		{Name: "charge error object in 200", R: charge, Status: 200, Body: ykErr("invalid_request", "x", ""), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge list in 200", R: charge, Status: 200, Body: `{"type":"list","items":[]}`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge 201", R: charge, Status: 201, Body: pm("p1", "succeeded", ""), Want: want{Class: ledger.OutcomeSuccess, Ref: "p1"}},
		{Name: "charge oversized", R: charge, Status: 200, Body: huge, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}},

		// 200 capture / cancel
		{Name: "capture succeeded", R: capture, Status: 200, Body: pm("p1", "succeeded", ""), Want: want{Class: ledger.OutcomeSuccess, Ref: "p1"}},
		{Name: "capture still waiting", R: capture, Status: 200, Body: pm("p1", "waiting_for_capture", ""), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "p1"}},
		{Name: "capture canceled", R: capture, Status: 200, Body: pm("p1", "canceled", `{"party":"yoo_money","reason":"expired_on_capture"}`), Want: want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "canceled", Decline: "expired_on_capture"}},
		{Name: "capture malformed", R: capture, Status: 200, Body: `{`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "cancel canceled", R: cancel, Status: 200, Body: pm("p1", "canceled", `{"party":"merchant","reason":"canceled_by_merchant"}`), Want: want{Class: ledger.OutcomeSuccess, Ref: "p1"}},
		{Name: "cancel of a captured payment", R: cancel, Status: 200, Body: pm("p1", "succeeded", ""), Want: want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "unexpected_status"}},
		{Name: "cancel still waiting", R: cancel, Status: 200, Body: pm("p1", "waiting_for_capture", ""), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "p1"}},

		// 200 refund
		{Name: "refund succeeded", R: refundR, Status: 200, Body: `{"id":"r1","payment_id":"p1","status":"succeeded","amount":{"value":"1.00","currency":"RUB"}}`, Want: want{Class: ledger.OutcomeSuccess, Ref: "r1"}},
		{Name: "refund pending", R: refundR, Status: 200, Body: `{"id":"r1","payment_id":"p1","status":"pending","amount":{"value":"1.00","currency":"RUB"}}`, Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "r1"}},
		{Name: "refund canceled", R: refundR, Status: 200, Body: `{"id":"r1","payment_id":"p1","status":"canceled","amount":{"value":"1.00","currency":"RUB"},"cancellation_details":{"party":"payment_network","reason":"general_decline"}}`, Want: want{Class: ledger.OutcomeRefused, Ref: "r1", Code: "refund_canceled", Decline: "general_decline"}},
		{Name: "refund without amount", R: refundR, Status: 200, Body: `{"id":"r1","payment_id":"p1","status":"succeeded"}`, Want: want{Class: ledger.OutcomeMaybeSent, Ref: "r1", Msg: "refund r1"}},
		{Name: "refund unknown status", R: refundR, Status: 200, Body: `{"id":"r1","payment_id":"p1","status":"weird"}`, Want: want{Class: ledger.OutcomeMaybeSent, Ref: "r1"}},
		{Name: "refund is a payment", R: refundR, Status: 200, Body: pm("p1", "succeeded", ""), Want: want{Class: ledger.OutcomeMaybeSent, Msg: "payment_id"}},
		{Name: "refund no id", R: refundR, Status: 200, Body: `{"payment_id":"p1","status":"succeeded"}`, Want: want{Class: ledger.OutcomeMaybeSent}},

		// 202 still processing
		{Name: "202 processing", R: charge, Status: 202, Body: `{"type":"processing","description":"Request accepted","retry_after":1800}`, Want: want{Class: ledger.OutcomeKeyInUse, RetryAfter: 1800 * time.Millisecond, Code: "processing"}},
		{Name: "202 fractional", R: charge, Status: 202, Body: `{"type":"processing","retry_after":2.5}`, Want: want{Class: ledger.OutcomeKeyInUse, RetryAfter: 2500 * time.Microsecond}},
		{Name: "202 no body", R: refundR, Status: 202, Want: want{Class: ledger.OutcomeKeyInUse}},
		{Name: "202 huge", R: charge, Status: 202, Body: `{"type":"processing","retry_after":1e15}`, Want: want{Class: ledger.OutcomeKeyInUse, RetryAfter: 24 * time.Hour}},
		{Name: "202 negative", R: charge, Status: 202, Body: `{"type":"processing","retry_after":-5}`, Want: want{Class: ledger.OutcomeKeyInUse}},

		// 400 / 401 / 403 / 404
		{Name: "400 key duplicated", R: charge, Status: 400, Body: ykErr("invalid_request", "Idempotence key duplicated", "Idempotence-Key"), Want: want{Class: ledger.OutcomeKeyMismatch, Code: "invalid_request", Msg: "duplicated", RequestID: "ab5a11cd-13cc-4e33-af8b-75a74e18dd09"}},
		{Name: "400 key duplicated other words", R: capture, Status: 400, Body: ykErr("invalid_request", "Idempotence key was duplicated with another request", "Idempotence-Key"), Want: want{Class: ledger.OutcomeKeyMismatch}},
		{Name: "400 key missing", R: charge, Status: 400, Body: ykErr("invalid_request", "Idempotence-Key header is required", "Idempotence-Key"), Want: want{Class: ledger.OutcomeRefused}},
		{Name: "400 invalid", R: charge, Status: 400, Body: ykErr("invalid_request", "Amount is invalid", "amount.value"), Want: want{Class: ledger.OutcomeRefused, Code: "invalid_request", Msg: "parameter amount.value"}},
		{Name: "400 over-refund", R: refundR, Status: 400, Body: ykErr("invalid_request", "Refund amount is greater than the amount left", "amount.value"), Want: want{Class: ledger.OutcomeRefused}},
		{Name: "400 not_supported", R: charge, Status: 400, Body: ykErr("not_supported", "not supported", ""), Want: want{Class: ledger.OutcomeRefused, Code: "not_supported"}},
		{Name: "400 no body", R: charge, Status: 400, Want: want{Class: ledger.OutcomeRefused}},
		{Name: "401", R: charge, Status: 401, Body: ykErr("invalid_credentials", "Authentication by given credentials failed", ""), Want: want{Class: ledger.OutcomeRefused, Code: "invalid_credentials"}},
		{Name: "403", R: charge, Status: 403, Body: ykErr("forbidden", "Forbidden", ""), Want: want{Class: ledger.OutcomeRefused}},
		{Name: "404", R: capture, Status: 404, Body: ykErr("not_found", "Payment not found", ""), Want: want{Class: ledger.OutcomeRefused, Code: "not_found"}},

		// 429, 5xx, others: maybe sent
		{Name: "429", R: charge, Status: 429, Body: `{"type":"error","id":"e1","code":"too_many_requests","description":"Too many requests","retry_after":3000}`, Want: want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 3 * time.Second}},
		{Name: "429 no body", R: charge, Status: 429, Want: want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests"}},
		{Name: "500", R: charge, Status: 500, Body: ykErr("internal_server_error", "Internal server error", ""), Want: want{Class: ledger.OutcomeMaybeSent, Code: "internal_server_error"}},
		{Name: "502 html", R: charge, Status: 502, Body: `<html>Bad Gateway</html>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "503", R: refundR, Status: 503, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "504", R: capture, Status: 504, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "409", R: charge, Status: 409, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "418", R: charge, Status: 418, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "302", R: charge, Status: 302, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "long message", R: charge, Status: 400, Body: ykErr("invalid_request", strings.Repeat("é", 3000), ""), Want: want{Class: ledger.OutcomeRefused, Msg: "..."}},
	}, testkit.ClassifyChecks{})
}

func TestClassifyScrubsCredentials(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := ykErr("invalid_credentials", "Bad credentials for shop "+testShopID+" key "+testSecret+" and live_abcdefghijklmnopqrstuvwxyz0123", "")
	o := b.P.Classify(chargeReq(), 401, http.Header{}, []byte(body))
	require.Equal(t, ledger.OutcomeRefused, o.Class)
	testkit.RequireScrubbed(t, o.Message, testSecret, testShopID, "live_abcdefghijklmnopqrstuvwxyz0123")
}

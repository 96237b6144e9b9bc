package yookassa_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
	capture, cancel, refundR := testkit.Actions(withKind, charge, "p1", 0, 100)
	declined := `{"party":"payment_network","reason":"insufficient_funds"}`
	huge := `{"id":"p1","status":"succeeded","pad":"` + strings.Repeat("x", 1<<20) + `"}`

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// 200 charge
		testkit.Classified("charge succeeded", charge, 200, nil, pm("p1", "succeeded", ""), want{Class: ledger.OutcomeSuccess, Ref: "p1"}),
		testkit.Classified("charge waiting_for_capture", charge, 200, nil, pm("p1", "waiting_for_capture", ""), want{Class: ledger.OutcomeSuccess, Ref: "p1"}),
		testkit.Classified("charge pending", charge, 200, nil, pm("p1", "pending", ""), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "p1"}),
		testkit.Classified("charge declined", charge, 200, nil, pm("p1", "canceled", declined), want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "canceled", Decline: "insufficient_funds", Msg: "payment_network"}),
		testkit.Classified("charge canceled bare", charge, 200, nil, pm("p1", "canceled", ""), want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "canceled"}),
		testkit.Classified("charge unknown status", charge, 200, nil, pm("p1", "brand_new", ""), want{Class: ledger.OutcomeMaybeSent, Ref: "p1", Msg: "brand_new"}),
		testkit.Classified("charge malformed", charge, 200, nil, `{"id":"p1","status":`, want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}),
		testkit.Classified("charge empty", charge, 200, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge null", charge, 200, nil, `null`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge html", charge, 200, nil, `<html>ok</html>`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge no id", charge, 200, nil, `{"status":"succeeded"}`, want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}),
		testkit.Classified("charge no status", charge, 200, nil, `{"id":"p1"}`, want{Class: ledger.OutcomeMaybeSent, Msg: "status"}),
		testkit.Classified("charge error object in 200", charge, 200, nil, ykErr("invalid_request", "x", ""), want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge list in 200", charge, 200, nil, `{"type":"list","items":[]}`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge 201", charge, 201, nil, pm("p1", "succeeded", ""), want{Class: ledger.OutcomeSuccess, Ref: "p1"}),
		testkit.Classified("charge oversized", charge, 200, nil, huge, want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}),

		// 200 capture / cancel
		testkit.Classified("capture succeeded", capture, 200, nil, pm("p1", "succeeded", ""), want{Class: ledger.OutcomeSuccess, Ref: "p1"}),
		testkit.Classified("capture still waiting", capture, 200, nil, pm("p1", "waiting_for_capture", ""), want{Class: ledger.OutcomeMaybeSent, Ref: "p1"}),
		testkit.Classified("capture canceled", capture, 200, nil, pm("p1", "canceled", `{"party":"yoo_money","reason":"expired_on_capture"}`), want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "canceled", Decline: "expired_on_capture"}),
		testkit.Classified("capture malformed", capture, 200, nil, `{`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("cancel canceled", cancel, 200, nil, pm("p1", "canceled", `{"party":"merchant","reason":"canceled_by_merchant"}`), want{Class: ledger.OutcomeSuccess, Ref: "p1"}),
		testkit.Classified("cancel of a captured payment", cancel, 200, nil, pm("p1", "succeeded", ""), want{Class: ledger.OutcomeRefused, Ref: "p1", Code: "unexpected_status"}),
		testkit.Classified("cancel still waiting", cancel, 200, nil, pm("p1", "waiting_for_capture", ""), want{Class: ledger.OutcomeMaybeSent, Ref: "p1"}),

		// 200 refund
		testkit.Classified("refund succeeded", refundR, 200, nil, `{"id":"r1","payment_id":"p1","status":"succeeded","amount":{"value":"1.00","currency":"RUB"}}`, want{Class: ledger.OutcomeSuccess, Ref: "r1"}),
		testkit.Classified("refund pending", refundR, 200, nil, `{"id":"r1","payment_id":"p1","status":"pending","amount":{"value":"1.00","currency":"RUB"}}`, want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "r1"}),
		testkit.Classified("refund canceled", refundR, 200, nil, `{"id":"r1","payment_id":"p1","status":"canceled","amount":{"value":"1.00","currency":"RUB"},"cancellation_details":{"party":"payment_network","reason":"general_decline"}}`,
			want{Class: ledger.OutcomeRefused, Ref: "r1", Code: "refund_canceled", Decline: "general_decline"}),
		testkit.Classified("refund without amount", refundR, 200, nil, `{"id":"r1","payment_id":"p1","status":"succeeded"}`, want{Class: ledger.OutcomeMaybeSent, Ref: "r1", Msg: "refund r1"}),
		testkit.Classified("refund unknown status", refundR, 200, nil, `{"id":"r1","payment_id":"p1","status":"weird"}`, want{Class: ledger.OutcomeMaybeSent, Ref: "r1"}),
		testkit.Classified("refund is a payment", refundR, 200, nil, pm("p1", "succeeded", ""), want{Class: ledger.OutcomeMaybeSent, Msg: "payment_id"}),
		testkit.Classified("refund no id", refundR, 200, nil, `{"payment_id":"p1","status":"succeeded"}`, want{Class: ledger.OutcomeMaybeSent}),

		// 202 still processing
		testkit.Classified("202 processing", charge, 202, nil, `{"type":"processing","description":"Request accepted","retry_after":1800}`,
			want{Class: ledger.OutcomeKeyInUse, RetryAfter: 1800 * time.Millisecond, Code: "processing"}),
		testkit.Classified("202 fractional", charge, 202, nil, `{"type":"processing","retry_after":2.5}`, want{Class: ledger.OutcomeKeyInUse, RetryAfter: 2500 * time.Microsecond}),
		testkit.Classified("202 no body", refundR, 202, nil, ``, want{Class: ledger.OutcomeKeyInUse}),
		testkit.Classified("202 huge", charge, 202, nil, `{"type":"processing","retry_after":1e15}`, want{Class: ledger.OutcomeKeyInUse, RetryAfter: 24 * time.Hour}),
		testkit.Classified("202 negative", charge, 202, nil, `{"type":"processing","retry_after":-5}`, want{Class: ledger.OutcomeKeyInUse}),

		// 400 / 401 / 403 / 404
		testkit.Classified("400 key duplicated", charge, 400, nil, ykErr("invalid_request", "Idempotence key duplicated", "Idempotence-Key"),
			want{Class: ledger.OutcomeKeyMismatch, Code: "invalid_request", Msg: "duplicated", RequestID: "ab5a11cd-13cc-4e33-af8b-75a74e18dd09"}),
		testkit.Classified("400 key duplicated other words", capture, 400, nil, ykErr("invalid_request", "Idempotence key was duplicated with another request", "Idempotence-Key"), want{Class: ledger.OutcomeKeyMismatch}),
		testkit.Classified("400 key missing", charge, 400, nil, ykErr("invalid_request", "Idempotence-Key header is required", "Idempotence-Key"), want{Class: ledger.OutcomeRefused}),
		testkit.Classified("400 invalid", charge, 400, nil, ykErr("invalid_request", "Amount is invalid", "amount.value"), want{Class: ledger.OutcomeRefused, Code: "invalid_request", Msg: "parameter amount.value"}),
		testkit.Classified("400 over-refund", refundR, 400, nil, ykErr("invalid_request", "Refund amount is greater than the amount left", "amount.value"), want{Class: ledger.OutcomeRefused}),
		testkit.Classified("400 not_supported", charge, 400, nil, ykErr("not_supported", "not supported", ""), want{Class: ledger.OutcomeRefused, Code: "not_supported"}),
		testkit.Classified("400 no body", charge, 400, nil, ``, want{Class: ledger.OutcomeRefused}),
		testkit.Classified("401", charge, 401, nil, ykErr("invalid_credentials", "Authentication by given credentials failed", ""), want{Class: ledger.OutcomeRefused, Code: "invalid_credentials"}),
		testkit.Classified("403", charge, 403, nil, ykErr("forbidden", "Forbidden", ""), want{Class: ledger.OutcomeRefused}),
		testkit.Classified("404", capture, 404, nil, ykErr("not_found", "Payment not found", ""), want{Class: ledger.OutcomeRefused, Code: "not_found"}),

		// 429, 5xx, others: maybe sent
		testkit.Classified("429", charge, 429, nil, `{"type":"error","id":"e1","code":"too_many_requests","description":"Too many requests","retry_after":3000}`,
			want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 3 * time.Second}),
		testkit.Classified("429 no body", charge, 429, nil, ``, want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests"}),
		testkit.Classified("500", charge, 500, nil, ykErr("internal_server_error", "Internal server error", ""), want{Class: ledger.OutcomeMaybeSent, Code: "internal_server_error"}),
		testkit.Classified("502 html", charge, 502, nil, `<html>Bad Gateway</html>`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("503", refundR, 503, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("504", capture, 504, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("409", charge, 409, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("418", charge, 418, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("302", charge, 302, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("long message", charge, 400, nil, ykErr("invalid_request", strings.Repeat("é", 3000), ""), want{Class: ledger.OutcomeRefused, Msg: "..."}),
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

package stripe_test

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

// pi is the PaymentIntent of chargeReq's charge in status; a succeeded
// one received the whole amount.
func pi(id, status string) string {
	if status == "succeeded" {
		return piObj(id, status, "amount_received", 1999)
	}
	return piObj(id, status)
}

func stripeErr(typ, code, msg string, extra string) string {
	s := `{"error":{"type":"` + typ + `","code":"` + code + `","message":"` + msg + `"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}}"
}

func TestClassify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := chargeReq()
	capture := withKind(charge, payonce.KindCapture, 0, "pi_1")
	cancel := withKind(charge, payonce.KindCancel, 0, "pi_1")
	refundR := withKind(charge, payonce.KindRefund, 100, "pi_1")
	huge := `{"id":"pi_1","object":"payment_intent","status":"succeeded","pad":"` + strings.Repeat("x", 1<<20) + `"}`
	httpDate := testNow.Add(30 * time.Second).Format(http.TimeFormat)

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// 2xx charge
		{Name: "charge succeeded", R: charge, Status: 200, Hdr: []string{"Request-Id", "req_1"}, Body: pi("pi_1", "succeeded"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pi_1", RequestID: "req_1"}},
		{Name: "charge requires_capture", R: charge, Status: 200, Body: pi("pi_1", "requires_capture"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}},
		{Name: "charge processing", R: charge, Status: 200, Body: pi("pi_1", "processing"), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "pi_1"}},
		{Name: "charge requires_action", R: charge, Status: 200, Body: pi("pi_1", "requires_action"), Want: want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "requires_action"}},
		{Name: "charge requires_confirmation", R: charge, Status: 200, Body: pi("pi_1", "requires_confirmation"), Want: want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "requires_confirmation"}},
		{Name: "charge canceled", R: charge, Status: 200, Body: pi("pi_1", "canceled"), Want: want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "canceled"}},
		{Name: "charge requires_payment_method", R: charge, Status: 200, Body: piObj("pi_1", "requires_payment_method", "last_payment_error", map[string]string{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "message": "Your card has insufficient funds."}), Want: want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "card_declined", Decline: "insufficient_funds", Msg: "insufficient funds"}},
		{Name: "charge replayed", R: charge, Status: 201, Hdr: []string{"Idempotent-Replayed", "true"}, Body: pi("pi_1", "succeeded"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pi_1", Replayed: true}},
		{Name: "charge replayed false", R: charge, Status: 200, Hdr: []string{"Idempotent-Replayed", "false"}, Body: pi("pi_1", "succeeded"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}},
		{Name: "charge unknown status", R: charge, Status: 200, Body: pi("pi_1", "requires_something_new"), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "pi_1", Msg: "requires_something_new"}},
		{Name: "charge malformed", R: charge, Status: 200, Body: `{"id":"pi_1","object":"payment_in`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}},
		{Name: "charge empty body", R: charge, Status: 200, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge null body", R: charge, Status: 200, Body: `null`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge html body", R: charge, Status: 200, Body: `<html>ok</html>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge wrong types", R: charge, Status: 200, Body: `{"id":5,"object":"payment_intent"}`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge no id", R: charge, Status: 200, Body: `{"object":"payment_intent","status":"succeeded"}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}},
		{Name: "charge wrong object", R: charge, Status: 200, Body: refundObj("re_1", "succeeded"), Want: want{Class: ledger.OutcomeMaybeSent, Msg: "refund"}},
		{Name: "charge error object in 200", R: charge, Status: 200, Body: stripeErr("api_error", "", "x", ""), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "charge oversized", R: charge, Status: 200, Body: huge, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}},

		// 2xx capture / cancel
		{Name: "capture succeeded", R: capture, Status: 200, Body: pi("pi_1", "succeeded"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}},
		{Name: "capture processing", R: capture, Status: 200, Body: pi("pi_1", "processing"), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "pi_1"}},
		{Name: "capture still requires_capture", R: capture, Status: 200, Body: pi("pi_1", "requires_capture"), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "pi_1"}},
		{Name: "capture malformed", R: capture, Status: 200, Body: `{`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "cancel canceled", R: cancel, Status: 200, Body: pi("pi_1", "canceled"), Want: want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}},
		{Name: "cancel not canceled", R: cancel, Status: 200, Body: pi("pi_1", "succeeded"), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "pi_1"}},

		// 2xx refund
		{Name: "refund succeeded", R: refundR, Status: 200, Body: refundObj("re_1", "succeeded"), Want: want{Class: ledger.OutcomeSuccess, Ref: "re_1"}},
		{Name: "refund pending", R: refundR, Status: 200, Body: refundObj("re_1", "pending"), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "re_1"}},
		{Name: "refund requires_action", R: refundR, Status: 200, Body: refundObj("re_1", "requires_action"), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "re_1"}},
		{Name: "refund failed", R: refundR, Status: 200, Body: refundObj("re_1", "failed", "failure_reason", "expired_or_canceled_card"), Want: want{Class: ledger.OutcomeRefused, Ref: "re_1", Code: "expired_or_canceled_card"}},
		{Name: "refund canceled", R: refundR, Status: 200, Body: refundObj("re_1", "canceled"), Want: want{Class: ledger.OutcomeRefused, Ref: "re_1", Code: "refund_canceled"}},
		{Name: "refund unknown status", R: refundR, Status: 200, Body: refundObj("re_1", "weird"), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "re_1"}},
		{Name: "refund wrong object", R: refundR, Status: 200, Body: pi("pi_1", "succeeded"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "refund no id", R: refundR, Status: 200, Body: `{"object":"refund","status":"succeeded"}`, Want: want{Class: ledger.OutcomeMaybeSent}},

		// 402
		{Name: "402 card_error", R: charge, Status: 402, Hdr: []string{"Request-Id", "req_2"}, Body: stripeErr("card_error", "card_declined", "Your card was declined.", `"decline_code":"generic_decline","payment_intent":{"id":"pi_9","object":"payment_intent","status":"requires_payment_method"}`), Want: want{Class: ledger.OutcomeRefused, Ref: "pi_9", Code: "card_declined", Decline: "generic_decline", Msg: "declined", RequestID: "req_2"}},
		{Name: "402 without pi", R: charge, Status: 402, Body: stripeErr("card_error", "expired_card", "Your card has expired.", ""), Want: want{Class: ledger.OutcomeRefused, Code: "expired_card"}},

		// 400 / 401 / 403 / 404
		{Name: "400 idempotency_error", R: charge, Status: 400, Body: stripeErr("idempotency_error", "", "Keys for idempotent requests can only be used with the same parameters they were first used with.", ""), Want: want{Class: ledger.OutcomeKeyMismatch, Msg: "same parameters"}},
		{Name: "400 invalid_request", R: charge, Status: 400, Body: stripeErr("invalid_request_error", "parameter_missing", "Missing required param: amount.", `"param":"amount"`), Want: want{Class: ledger.OutcomeRefused, Code: "parameter_missing"}},
		{Name: "400 unexpected state", R: capture, Status: 400, Body: stripeErr("invalid_request_error", "payment_intent_unexpected_state", "This PaymentIntent could not be captured.", ""), Want: want{Class: ledger.OutcomeRefused, Code: "payment_intent_unexpected_state"}},
		{Name: "400 no body", R: charge, Status: 400, Want: want{Class: ledger.OutcomeRefused}},
		{Name: "401", R: charge, Status: 401, Body: stripeErr("invalid_request_error", "", "Invalid API Key provided: sk_test_****************************wxyz", ""), Want: want{Class: ledger.OutcomeRefused, Msg: "Invalid API Key"}},
		{Name: "403", R: charge, Status: 403, Body: stripeErr("invalid_request_error", "", "The provided key does not have the required permissions.", ""), Want: want{Class: ledger.OutcomeRefused}},
		{Name: "404", R: capture, Status: 404, Body: stripeErr("invalid_request_error", "resource_missing", "No such payment_intent: 'pi_1'", ""), Want: want{Class: ledger.OutcomeRefused, Code: "resource_missing"}},

		// 409
		{Name: "409 key in use", R: charge, Status: 409, Body: stripeErr("idempotency_error", "idempotency_key_in_use", "There is currently another in-progress request using this Idempotent Key.", ""), Want: want{Class: ledger.OutcomeKeyInUse, Code: "idempotency_key_in_use"}},
		{Name: "key in use under 400", R: charge, Status: 400, Body: stripeErr("invalid_request_error", "idempotency_key_in_use", "in progress", ""), Want: want{Class: ledger.OutcomeKeyInUse}},
		{Name: "409 other", R: charge, Status: 409, Body: stripeErr("invalid_request_error", "resource_already_exists", "conflict", ""), Want: want{Class: ledger.OutcomeMaybeSent, Code: "resource_already_exists"}},
		{Name: "409 no body", R: charge, Status: 409, Want: want{Class: ledger.OutcomeMaybeSent}},

		// 429
		{Name: "429 seconds", R: charge, Status: 429, Hdr: []string{"Retry-After", "5"}, Body: stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit", RetryAfter: 5 * time.Second}},
		{Name: "429 date", R: charge, Status: 429, Hdr: []string{"Retry-After", httpDate}, Body: stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit", RetryAfter: 30 * time.Second}},
		{Name: "429 past date", R: charge, Status: 429, Hdr: []string{"Retry-After", testNow.Add(-time.Minute).Format(http.TimeFormat)}, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 lock_timeout", R: capture, Status: 429, Hdr: []string{"Retry-After", "2"}, Body: stripeErr("invalid_request_error", "lock_timeout", "This object cannot be accessed right now.", ""), Want: want{Class: ledger.OutcomeMaybeSent, Code: "lock_timeout", RetryAfter: 2 * time.Second}},
		{Name: "429 lock_timeout on a charge", R: charge, Status: 429, Body: stripeErr("invalid_request_error", "lock_timeout", "This object cannot be accessed right now.", ""), Want: want{Class: ledger.OutcomeMaybeSent, Code: "lock_timeout"}},
		{Name: "429 unknown code", R: refundR, Status: 429, Body: stripeErr("invalid_request_error", "something_new", "Slow down.", ""), Want: want{Class: ledger.OutcomeMaybeSent, Code: "something_new"}},
		{Name: "429 rate_limit without Retry-After", R: refundR, Status: 429, Body: stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 error without code", R: charge, Status: 429, Body: stripeErr("invalid_request_error", "", "Too many requests.", ""), Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 html", R: charge, Status: 429, Body: `<html>Too Many Requests</html>`, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 no body no header", R: charge, Status: 429, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 malformed header", R: charge, Status: 429, Hdr: []string{"Retry-After", "soon"}, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 negative header", R: charge, Status: 429, Hdr: []string{"Retry-After", "-3"}, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 fractional header", R: charge, Status: 429, Hdr: []string{"Retry-After", "1.5"}, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},
		{Name: "429 huge header", R: charge, Status: 429, Hdr: []string{"Retry-After", "99999999999999999"}, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit", RetryAfter: 24 * time.Hour}},
		{Name: "429 overflow header", R: charge, Status: 429, Hdr: []string{"Retry-After", "999999999999999999999999"}, Want: want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}},

		// 5xx and others
		{Name: "500 api_error", R: charge, Status: 500, Hdr: []string{"Request-Id", "req_5", "Idempotent-Replayed", "true"}, Body: stripeErr("api_error", "", "An unknown error occurred", ""), Want: want{Class: ledger.OutcomeMaybeSent, RequestID: "req_5", Replayed: true, Msg: "unknown error"}},
		{Name: "502 html", R: charge, Status: 502, Body: `<html>Bad Gateway</html>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "503", R: charge, Status: 503, Hdr: []string{"Retry-After", "10"}, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "504", R: refundR, Status: 504, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "418", R: charge, Status: 418, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "302", R: charge, Status: 302, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "long message", R: charge, Status: 400, Body: stripeErr("invalid_request_error", "x", strings.Repeat("é", 3000), ""), Want: want{Class: ledger.OutcomeRefused, Msg: "..."}},
		{Name: "oversized error body", R: charge, Status: 402, Body: `{"error":{"type":"card_error","message":"` + strings.Repeat("x", 1<<20) + `"}}`, Want: want{Class: ledger.OutcomeRefused}},
	}, testkit.ClassifyChecks{ExactRequestID: true})
}

func TestClassifyScrubsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := stripeErr("invalid_request_error", "", "Invalid API Key provided: "+testKey+" and rk_live_abc123 and sk_live_****1234", "")
	o := b.P.Classify(chargeReq(), 401, http.Header{}, []byte(body))
	require.Equal(t, ledger.OutcomeRefused, o.Class)
	testkit.RequireScrubbed(t, o.Message, testKey, "rk_live_abc123", "1234")
}

func TestClassifyMessageStaysValidUTF8(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.P.Classify(chargeReq(), 400, http.Header{}, []byte(stripeErr("invalid_request_error", "x", strings.Repeat("é", 3000), "")))
	require.True(t, utf8.ValidString(o.Message))
	require.LessOrEqual(t, len(o.Message), 1003)
	require.True(t, strings.HasSuffix(o.Message, "..."))
}

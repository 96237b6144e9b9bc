package stripe_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

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
	capture, cancel, refundR := testkit.Actions(withKind, charge, "pi_1", 0, 100)
	huge := `{"id":"pi_1","object":"payment_intent","status":"succeeded","pad":"` + strings.Repeat("x", 1<<20) + `"}`
	httpDate := testNow.Add(30 * time.Second).Format(http.TimeFormat)

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// 2xx charge
		testkit.Classified("charge succeeded", charge, 200, []string{"Request-Id", "req_1"}, pi("pi_1", "succeeded"), want{Class: ledger.OutcomeSuccess, Ref: "pi_1", RequestID: "req_1"}),
		testkit.Classified("charge requires_capture", charge, 200, nil, pi("pi_1", "requires_capture"), want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}),
		testkit.Classified("charge processing", charge, 200, nil, pi("pi_1", "processing"), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "pi_1"}),
		testkit.Classified("charge requires_action", charge, 200, nil, pi("pi_1", "requires_action"), want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "requires_action"}),
		testkit.Classified("charge requires_confirmation", charge, 200, nil, pi("pi_1", "requires_confirmation"), want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "requires_confirmation"}),
		testkit.Classified("charge canceled", charge, 200, nil, pi("pi_1", "canceled"), want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "canceled"}),
		testkit.Classified("charge requires_payment_method", charge, 200, nil,
			piObj("pi_1", "requires_payment_method", "last_payment_error", map[string]string{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "message": "Your card has insufficient funds."}),
			want{Class: ledger.OutcomeRefused, Ref: "pi_1", Code: "card_declined", Decline: "insufficient_funds", Msg: "insufficient funds"}),
		testkit.Classified("charge replayed", charge, 201, []string{"Idempotent-Replayed", "true"}, pi("pi_1", "succeeded"), want{Class: ledger.OutcomeSuccess, Ref: "pi_1", Replayed: true}),
		testkit.Classified("charge replayed false", charge, 200, []string{"Idempotent-Replayed", "false"}, pi("pi_1", "succeeded"), want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}),
		testkit.Classified("charge unknown status", charge, 200, nil, pi("pi_1", "requires_something_new"), want{Class: ledger.OutcomeMaybeSent, Ref: "pi_1", Msg: "requires_something_new"}),
		testkit.Classified("charge malformed", charge, 200, nil, `{"id":"pi_1","object":"payment_in`, want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}),
		testkit.Classified("charge empty body", charge, 200, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge null body", charge, 200, nil, `null`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge html body", charge, 200, nil, `<html>ok</html>`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge wrong types", charge, 200, nil, `{"id":5,"object":"payment_intent"}`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge no id", charge, 200, nil, `{"object":"payment_intent","status":"succeeded"}`, want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}),
		testkit.Classified("charge wrong object", charge, 200, nil, refundObj("re_1", "succeeded"), want{Class: ledger.OutcomeMaybeSent, Msg: "refund"}),
		testkit.Classified("charge error object in 200", charge, 200, nil, stripeErr("api_error", "", "x", ""), want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("charge oversized", charge, 200, nil, huge, want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}),

		// 2xx capture / cancel
		testkit.Classified("capture succeeded", capture, 200, nil, pi("pi_1", "succeeded"), want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}),
		testkit.Classified("capture processing", capture, 200, nil, pi("pi_1", "processing"), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "pi_1"}),
		testkit.Classified("capture still requires_capture", capture, 200, nil, pi("pi_1", "requires_capture"), want{Class: ledger.OutcomeMaybeSent, Ref: "pi_1"}),
		testkit.Classified("capture malformed", capture, 200, nil, `{`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("cancel canceled", cancel, 200, nil, pi("pi_1", "canceled"), want{Class: ledger.OutcomeSuccess, Ref: "pi_1"}),
		testkit.Classified("cancel not canceled", cancel, 200, nil, pi("pi_1", "succeeded"), want{Class: ledger.OutcomeMaybeSent, Ref: "pi_1"}),

		// 2xx refund
		testkit.Classified("refund succeeded", refundR, 200, nil, refundObj("re_1", "succeeded"), want{Class: ledger.OutcomeSuccess, Ref: "re_1"}),
		testkit.Classified("refund pending", refundR, 200, nil, refundObj("re_1", "pending"), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "re_1"}),
		testkit.Classified("refund requires_action", refundR, 200, nil, refundObj("re_1", "requires_action"), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "re_1"}),
		testkit.Classified("refund failed", refundR, 200, nil, refundObj("re_1", "failed", "failure_reason", "expired_or_canceled_card"), want{Class: ledger.OutcomeRefused, Ref: "re_1", Code: "expired_or_canceled_card"}),
		testkit.Classified("refund canceled", refundR, 200, nil, refundObj("re_1", "canceled"), want{Class: ledger.OutcomeRefused, Ref: "re_1", Code: "refund_canceled"}),
		testkit.Classified("refund unknown status", refundR, 200, nil, refundObj("re_1", "weird"), want{Class: ledger.OutcomeMaybeSent, Ref: "re_1"}),
		testkit.Classified("refund wrong object", refundR, 200, nil, pi("pi_1", "succeeded"), want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("refund no id", refundR, 200, nil, `{"object":"refund","status":"succeeded"}`, want{Class: ledger.OutcomeMaybeSent}),

		// 402
		testkit.Classified("402 card_error", charge, 402, []string{"Request-Id", "req_2"},
			stripeErr("card_error", "card_declined", "Your card was declined.", `"decline_code":"generic_decline","payment_intent":{"id":"pi_9","object":"payment_intent","status":"requires_payment_method"}`),
			want{Class: ledger.OutcomeRefused, Ref: "pi_9", Code: "card_declined", Decline: "generic_decline", Msg: "declined", RequestID: "req_2"}),
		testkit.Classified("402 without pi", charge, 402, nil, stripeErr("card_error", "expired_card", "Your card has expired.", ""), want{Class: ledger.OutcomeRefused, Code: "expired_card"}),

		// 400 / 401 / 403 / 404
		testkit.Classified("400 idempotency_error", charge, 400, nil, stripeErr("idempotency_error", "", "Keys for idempotent requests can only be used with the same parameters they were first used with.", ""),
			want{Class: ledger.OutcomeKeyMismatch, Msg: "same parameters"}),
		testkit.Classified("400 invalid_request", charge, 400, nil, stripeErr("invalid_request_error", "parameter_missing", "Missing required param: amount.", `"param":"amount"`), want{Class: ledger.OutcomeRefused, Code: "parameter_missing"}),
		testkit.Classified("400 unexpected state", capture, 400, nil, stripeErr("invalid_request_error", "payment_intent_unexpected_state", "This PaymentIntent could not be captured.", ""), want{Class: ledger.OutcomeRefused, Code: "payment_intent_unexpected_state"}),
		testkit.Classified("400 no body", charge, 400, nil, ``, want{Class: ledger.OutcomeRefused}),
		testkit.Classified("401", charge, 401, nil, stripeErr("invalid_request_error", "", "Invalid API Key provided: sk_test_****************************wxyz", ""), want{Class: ledger.OutcomeRefused, Msg: "Invalid API Key"}),
		testkit.Classified("403", charge, 403, nil, stripeErr("invalid_request_error", "", "The provided key does not have the required permissions.", ""), want{Class: ledger.OutcomeRefused}),
		testkit.Classified("404", capture, 404, nil, stripeErr("invalid_request_error", "resource_missing", "No such payment_intent: 'pi_1'", ""), want{Class: ledger.OutcomeRefused, Code: "resource_missing"}),

		// 409
		testkit.Classified("409 key in use", charge, 409, nil, stripeErr("idempotency_error", "idempotency_key_in_use", "There is currently another in-progress request using this Idempotent Key.", ""), want{Class: ledger.OutcomeKeyInUse, Code: "idempotency_key_in_use"}),
		testkit.Classified("key in use under 400", charge, 400, nil, stripeErr("invalid_request_error", "idempotency_key_in_use", "in progress", ""), want{Class: ledger.OutcomeKeyInUse}),
		testkit.Classified("409 other", charge, 409, nil, stripeErr("invalid_request_error", "resource_already_exists", "conflict", ""), want{Class: ledger.OutcomeMaybeSent, Code: "resource_already_exists"}),
		testkit.Classified("409 no body", charge, 409, nil, ``, want{Class: ledger.OutcomeMaybeSent}),

		// 429
		testkit.Classified("429 seconds", charge, 429, []string{"Retry-After", "5"}, stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), want{Class: ledger.OutcomeNotSent, Code: "rate_limit", RetryAfter: 5 * time.Second}),
		testkit.Classified("429 date", charge, 429, []string{"Retry-After", httpDate}, stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), want{Class: ledger.OutcomeNotSent, Code: "rate_limit", RetryAfter: 30 * time.Second}),
		testkit.Classified("429 past date", charge, 429, []string{"Retry-After", testNow.Add(-time.Minute).Format(http.TimeFormat)}, ``, want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 lock_timeout", capture, 429, []string{"Retry-After", "2"}, stripeErr("invalid_request_error", "lock_timeout", "This object cannot be accessed right now.", ""), want{Class: ledger.OutcomeMaybeSent, Code: "lock_timeout", RetryAfter: 2 * time.Second}),
		testkit.Classified("429 lock_timeout on a charge", charge, 429, nil, stripeErr("invalid_request_error", "lock_timeout", "This object cannot be accessed right now.", ""), want{Class: ledger.OutcomeMaybeSent, Code: "lock_timeout"}),
		testkit.Classified("429 unknown code", refundR, 429, nil, stripeErr("invalid_request_error", "something_new", "Slow down.", ""), want{Class: ledger.OutcomeMaybeSent, Code: "something_new"}),
		testkit.Classified("429 rate_limit without Retry-After", refundR, 429, nil, stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 error without code", charge, 429, nil, stripeErr("invalid_request_error", "", "Too many requests.", ""), want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 html", charge, 429, nil, `<html>Too Many Requests</html>`, want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 no body no header", charge, 429, nil, ``, want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 malformed header", charge, 429, []string{"Retry-After", "soon"}, ``, want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 negative header", charge, 429, []string{"Retry-After", "-3"}, ``, want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 fractional header", charge, 429, []string{"Retry-After", "1.5"}, ``, want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),
		testkit.Classified("429 huge header", charge, 429, []string{"Retry-After", "99999999999999999"}, ``, want{Class: ledger.OutcomeNotSent, Code: "rate_limit", RetryAfter: 24 * time.Hour}),
		testkit.Classified("429 overflow header", charge, 429, []string{"Retry-After", "999999999999999999999999"}, ``, want{Class: ledger.OutcomeNotSent, Code: "rate_limit"}),

		// 5xx and others
		testkit.Classified("500 api_error", charge, 500, []string{"Request-Id", "req_5", "Idempotent-Replayed", "true"}, stripeErr("api_error", "", "An unknown error occurred", ""), want{Class: ledger.OutcomeMaybeSent, RequestID: "req_5", Replayed: true, Msg: "unknown error"}),
		testkit.Classified("502 html", charge, 502, nil, `<html>Bad Gateway</html>`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("503", charge, 503, []string{"Retry-After", "10"}, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("504", refundR, 504, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("418", charge, 418, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("302", charge, 302, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("long message", charge, 400, nil, stripeErr("invalid_request_error", "x", strings.Repeat("é", 3000), ""), want{Class: ledger.OutcomeRefused, Msg: "..."}),
		testkit.Classified("oversized error body", charge, 402, nil, `{"error":{"type":"card_error","message":"`+strings.Repeat("x", 1<<20)+`"}}`, want{Class: ledger.OutcomeRefused}),
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

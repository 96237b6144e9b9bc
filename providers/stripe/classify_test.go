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

	type want struct {
		class      ledger.OutcomeClass
		processing bool
		ref        string
		code       string
		decline    string
		msg        string // substring
		retryAfter time.Duration
		replayed   bool
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
		// 2xx charge
		{"charge succeeded", charge, 200, []string{"Request-Id", "req_1"}, pi("pi_1", "succeeded"), want{class: ledger.OutcomeSuccess, ref: "pi_1", requestID: "req_1"}},
		{"charge requires_capture", charge, 200, nil, pi("pi_1", "requires_capture"), want{class: ledger.OutcomeSuccess, ref: "pi_1"}},
		{"charge processing", charge, 200, nil, pi("pi_1", "processing"), want{class: ledger.OutcomeSuccess, processing: true, ref: "pi_1"}},
		{"charge requires_action", charge, 200, nil, pi("pi_1", "requires_action"), want{class: ledger.OutcomeRefused, ref: "pi_1", code: "requires_action"}},
		{"charge requires_confirmation", charge, 200, nil, pi("pi_1", "requires_confirmation"), want{class: ledger.OutcomeRefused, ref: "pi_1", code: "requires_confirmation"}},
		{"charge canceled", charge, 200, nil, pi("pi_1", "canceled"), want{class: ledger.OutcomeRefused, ref: "pi_1", code: "canceled"}},
		{"charge requires_payment_method", charge, 200, nil,
			piObj("pi_1", "requires_payment_method", "last_payment_error", map[string]string{"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds", "message": "Your card has insufficient funds."}),
			want{class: ledger.OutcomeRefused, ref: "pi_1", code: "card_declined", decline: "insufficient_funds", msg: "insufficient funds"}},
		{"charge replayed", charge, 201, []string{"Idempotent-Replayed", "true"}, pi("pi_1", "succeeded"), want{class: ledger.OutcomeSuccess, ref: "pi_1", replayed: true}},
		{"charge replayed false", charge, 200, []string{"Idempotent-Replayed", "false"}, pi("pi_1", "succeeded"), want{class: ledger.OutcomeSuccess, ref: "pi_1"}},
		{"charge unknown status", charge, 200, nil, pi("pi_1", "requires_something_new"), want{class: ledger.OutcomeMaybeSent, ref: "pi_1", msg: "requires_something_new"}},
		{"charge malformed", charge, 200, nil, `{"id":"pi_1","object":"payment_in`, want{class: ledger.OutcomeMaybeSent, msg: "unreadable"}},
		{"charge empty body", charge, 200, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"charge null body", charge, 200, nil, `null`, want{class: ledger.OutcomeMaybeSent}},
		{"charge html body", charge, 200, nil, `<html>ok</html>`, want{class: ledger.OutcomeMaybeSent}},
		{"charge wrong types", charge, 200, nil, `{"id":5,"object":"payment_intent"}`, want{class: ledger.OutcomeMaybeSent}},
		{"charge no id", charge, 200, nil, `{"object":"payment_intent","status":"succeeded"}`, want{class: ledger.OutcomeMaybeSent, msg: "no id"}},
		{"charge wrong object", charge, 200, nil, refundObj("re_1", "succeeded"), want{class: ledger.OutcomeMaybeSent, msg: "refund"}},
		{"charge error object in 200", charge, 200, nil, stripeErr("api_error", "", "x", ""), want{class: ledger.OutcomeMaybeSent}},
		{"charge oversized", charge, 200, nil, huge, want{class: ledger.OutcomeMaybeSent, msg: "bytes"}},

		// 2xx capture / cancel
		{"capture succeeded", capture, 200, nil, pi("pi_1", "succeeded"), want{class: ledger.OutcomeSuccess, ref: "pi_1"}},
		{"capture processing", capture, 200, nil, pi("pi_1", "processing"), want{class: ledger.OutcomeSuccess, processing: true, ref: "pi_1"}},
		{"capture still requires_capture", capture, 200, nil, pi("pi_1", "requires_capture"), want{class: ledger.OutcomeMaybeSent, ref: "pi_1"}},
		{"capture malformed", capture, 200, nil, `{`, want{class: ledger.OutcomeMaybeSent}},
		{"cancel canceled", cancel, 200, nil, pi("pi_1", "canceled"), want{class: ledger.OutcomeSuccess, ref: "pi_1"}},
		{"cancel not canceled", cancel, 200, nil, pi("pi_1", "succeeded"), want{class: ledger.OutcomeMaybeSent, ref: "pi_1"}},

		// 2xx refund
		{"refund succeeded", refundR, 200, nil, refundObj("re_1", "succeeded"), want{class: ledger.OutcomeSuccess, ref: "re_1"}},
		{"refund pending", refundR, 200, nil, refundObj("re_1", "pending"), want{class: ledger.OutcomeSuccess, processing: true, ref: "re_1"}},
		{"refund requires_action", refundR, 200, nil, refundObj("re_1", "requires_action"), want{class: ledger.OutcomeSuccess, processing: true, ref: "re_1"}},
		{"refund failed", refundR, 200, nil, refundObj("re_1", "failed", "failure_reason", "expired_or_canceled_card"), want{class: ledger.OutcomeRefused, ref: "re_1", code: "expired_or_canceled_card"}},
		{"refund canceled", refundR, 200, nil, refundObj("re_1", "canceled"), want{class: ledger.OutcomeRefused, ref: "re_1", code: "refund_canceled"}},
		{"refund unknown status", refundR, 200, nil, refundObj("re_1", "weird"), want{class: ledger.OutcomeMaybeSent, ref: "re_1"}},
		{"refund wrong object", refundR, 200, nil, pi("pi_1", "succeeded"), want{class: ledger.OutcomeMaybeSent}},
		{"refund no id", refundR, 200, nil, `{"object":"refund","status":"succeeded"}`, want{class: ledger.OutcomeMaybeSent}},

		// 402
		{"402 card_error", charge, 402, []string{"Request-Id", "req_2"},
			stripeErr("card_error", "card_declined", "Your card was declined.", `"decline_code":"generic_decline","payment_intent":{"id":"pi_9","object":"payment_intent","status":"requires_payment_method"}`),
			want{class: ledger.OutcomeRefused, ref: "pi_9", code: "card_declined", decline: "generic_decline", msg: "declined", requestID: "req_2"}},
		{"402 without pi", charge, 402, nil, stripeErr("card_error", "expired_card", "Your card has expired.", ""), want{class: ledger.OutcomeRefused, code: "expired_card"}},

		// 400 / 401 / 403 / 404
		{"400 idempotency_error", charge, 400, nil, stripeErr("idempotency_error", "", "Keys for idempotent requests can only be used with the same parameters they were first used with.", ""),
			want{class: ledger.OutcomeKeyMismatch, msg: "same parameters"}},
		{"400 invalid_request", charge, 400, nil, stripeErr("invalid_request_error", "parameter_missing", "Missing required param: amount.", `"param":"amount"`), want{class: ledger.OutcomeRefused, code: "parameter_missing"}},
		{"400 unexpected state", capture, 400, nil, stripeErr("invalid_request_error", "payment_intent_unexpected_state", "This PaymentIntent could not be captured.", ""), want{class: ledger.OutcomeRefused, code: "payment_intent_unexpected_state"}},
		{"400 no body", charge, 400, nil, ``, want{class: ledger.OutcomeRefused}},
		{"401", charge, 401, nil, stripeErr("invalid_request_error", "", "Invalid API Key provided: sk_test_****************************wxyz", ""), want{class: ledger.OutcomeRefused, msg: "Invalid API Key"}},
		{"403", charge, 403, nil, stripeErr("invalid_request_error", "", "The provided key does not have the required permissions.", ""), want{class: ledger.OutcomeRefused}},
		{"404", capture, 404, nil, stripeErr("invalid_request_error", "resource_missing", "No such payment_intent: 'pi_1'", ""), want{class: ledger.OutcomeRefused, code: "resource_missing"}},

		// 409
		{"409 key in use", charge, 409, nil, stripeErr("idempotency_error", "idempotency_key_in_use", "There is currently another in-progress request using this Idempotent Key.", ""), want{class: ledger.OutcomeKeyInUse, code: "idempotency_key_in_use"}},
		{"key in use under 400", charge, 400, nil, stripeErr("invalid_request_error", "idempotency_key_in_use", "in progress", ""), want{class: ledger.OutcomeKeyInUse}},
		{"409 other", charge, 409, nil, stripeErr("invalid_request_error", "resource_already_exists", "conflict", ""), want{class: ledger.OutcomeMaybeSent, code: "resource_already_exists"}},
		{"409 no body", charge, 409, nil, ``, want{class: ledger.OutcomeMaybeSent}},

		// 429
		{"429 seconds", charge, 429, []string{"Retry-After", "5"}, stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), want{class: ledger.OutcomeNotSent, code: "rate_limit", retryAfter: 5 * time.Second}},
		{"429 date", charge, 429, []string{"Retry-After", httpDate}, stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), want{class: ledger.OutcomeNotSent, code: "rate_limit", retryAfter: 30 * time.Second}},
		{"429 past date", charge, 429, []string{"Retry-After", testNow.Add(-time.Minute).Format(http.TimeFormat)}, ``, want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 lock_timeout", capture, 429, []string{"Retry-After", "2"}, stripeErr("invalid_request_error", "lock_timeout", "This object cannot be accessed right now.", ""), want{class: ledger.OutcomeMaybeSent, code: "lock_timeout", retryAfter: 2 * time.Second}},
		{"429 lock_timeout on a charge", charge, 429, nil, stripeErr("invalid_request_error", "lock_timeout", "This object cannot be accessed right now.", ""), want{class: ledger.OutcomeMaybeSent, code: "lock_timeout"}},
		{"429 unknown code", refundR, 429, nil, stripeErr("invalid_request_error", "something_new", "Slow down.", ""), want{class: ledger.OutcomeMaybeSent, code: "something_new"}},
		{"429 rate_limit without Retry-After", refundR, 429, nil, stripeErr("invalid_request_error", "rate_limit", "Too many requests.", ""), want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 error without code", charge, 429, nil, stripeErr("invalid_request_error", "", "Too many requests.", ""), want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 html", charge, 429, nil, `<html>Too Many Requests</html>`, want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 no body no header", charge, 429, nil, ``, want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 malformed header", charge, 429, []string{"Retry-After", "soon"}, ``, want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 negative header", charge, 429, []string{"Retry-After", "-3"}, ``, want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 fractional header", charge, 429, []string{"Retry-After", "1.5"}, ``, want{class: ledger.OutcomeNotSent, code: "rate_limit"}},
		{"429 huge header", charge, 429, []string{"Retry-After", "99999999999999999"}, ``, want{class: ledger.OutcomeNotSent, code: "rate_limit", retryAfter: 24 * time.Hour}},
		{"429 overflow header", charge, 429, []string{"Retry-After", "999999999999999999999999"}, ``, want{class: ledger.OutcomeNotSent, code: "rate_limit"}},

		// 5xx and others
		{"500 api_error", charge, 500, []string{"Request-Id", "req_5", "Idempotent-Replayed", "true"}, stripeErr("api_error", "", "An unknown error occurred", ""), want{class: ledger.OutcomeMaybeSent, requestID: "req_5", replayed: true, msg: "unknown error"}},
		{"502 html", charge, 502, nil, `<html>Bad Gateway</html>`, want{class: ledger.OutcomeMaybeSent}},
		{"503", charge, 503, []string{"Retry-After", "10"}, ``, want{class: ledger.OutcomeMaybeSent}},
		{"504", refundR, 504, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"418", charge, 418, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"302", charge, 302, nil, ``, want{class: ledger.OutcomeMaybeSent}},
		{"long message", charge, 400, nil, stripeErr("invalid_request_error", "x", strings.Repeat("é", 3000), ""), want{class: ledger.OutcomeRefused, msg: "..."}},
		{"oversized error body", charge, 402, nil, `{"error":{"type":"card_error","message":"` + strings.Repeat("x", 1<<20) + `"}}`, want{class: ledger.OutcomeRefused}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := b.p.Classify(tc.r, tc.status, testkit.Header(tc.hdr...), []byte(tc.body))
			require.Equal(t, tc.want.class, o.Class)
			require.Equal(t, tc.want.processing, o.Processing, "Processing")
			require.Equal(t, tc.want.ref, o.ProviderRef, "ProviderRef")
			require.Equal(t, tc.status, o.HTTPStatus)
			require.Equal(t, tc.want.requestID, o.RequestID)
			require.Equal(t, tc.want.replayed, o.Replayed, "Replayed")
			require.Equal(t, tc.want.retryAfter, o.RetryAfter, "RetryAfter")
			if tc.want.code != "" {
				require.Equal(t, tc.want.code, o.Code)
			}
			require.Equal(t, tc.want.decline, o.DeclineCode)
			if tc.want.msg != "" {
				require.Contains(t, o.Message, tc.want.msg)
			}
			require.LessOrEqual(t, len(o.Message), 1100)
		})
	}
}

func TestClassifyScrubsKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := stripeErr("invalid_request_error", "", "Invalid API Key provided: "+testKey+" and rk_live_abc123 and sk_live_****1234", "")
	o := b.p.Classify(chargeReq(), 401, http.Header{}, []byte(body))
	require.Equal(t, ledger.OutcomeRefused, o.Class)
	require.NotContains(t, o.Message, testKey)
	require.NotContains(t, o.Message, "rk_live_abc123")
	require.NotContains(t, o.Message, "1234")
	require.Contains(t, o.Message, "[REDACTED]")
}

func TestClassifyMessageStaysValidUTF8(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.p.Classify(chargeReq(), 400, http.Header{}, []byte(stripeErr("invalid_request_error", "x", strings.Repeat("é", 3000), "")))
	require.True(t, utf8.ValidString(o.Message))
	require.LessOrEqual(t, len(o.Message), 1003)
	require.True(t, strings.HasSuffix(o.Message, "..."))
}

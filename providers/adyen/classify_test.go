package adyen_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

func payJSON(psp, result, reason, code string) string {
	return `{"pspReference":"` + psp + `","resultCode":"` + result + `","merchantReference":"` + chargeReq().OperationID +
		`","amount":{"currency":"EUR","value":1999},"refusalReason":"` + reason + `","refusalReasonCode":"` + code + `"}`
}

func modJSON(psp, payment string, value int64) string {
	amt := ""
	if value > 0 {
		amt = `"amount":{"currency":"EUR","value":` + strconv.FormatInt(value, 10) + `},`
	}
	return `{"merchantAccount":"` + merchant + `",` + amt + `"paymentPspReference":"` + payment + `","pspReference":"` + psp +
		`","reference":"` + chargeReq().OperationID + `","status":"received"}`
}

func adyenErr(status int, code, typ, msg string) string {
	return `{"status":` + strconv.Itoa(status) + `,"errorCode":"` + code + `","message":"` + msg + `","errorType":"` + typ + `","pspReference":"ERRPSP1"}`
}

func TestClassify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := chargeReq()
	capture, cancel, refund := testkit.Actions(withKind, charge, "PAY1", 1999, 500)
	cancel.Request.Currency = ""
	huge := `{"pspReference":"P","resultCode":"Authorised","pad":"` + strings.Repeat("x", 1<<20) + `"}`

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// payments
		testkit.Classified("authorised", charge, 200, nil, payJSON("PAY1", "Authorised", "", ""), want{Class: ledger.OutcomeSuccess, Ref: "PAY1"}),
		testkit.Classified("refused", charge, 200, nil, payJSON("PAY1", "Refused", "Not enough balance", "12"),
			want{Class: ledger.OutcomeRefused, Ref: "PAY1", Code: "refused", Decline: "12", Msg: "Not enough balance"}),
		testkit.Classified("cancelled", charge, 200, nil, payJSON("PAY1", "Cancelled", "", ""), want{Class: ledger.OutcomeRefused, Ref: "PAY1", Code: "cancelled"}),
		testkit.Classified("error is final", charge, 200, nil, payJSON("PAY1", "Error", "Acquirer Error", "4"), want{Class: ledger.OutcomeRefused, Ref: "PAY1", Code: "error", Decline: "4"}),
		testkit.Classified("pending", charge, 200, nil, payJSON("PAY1", "Pending", "", ""), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "PAY1"}),
		testkit.Classified("received", charge, 200, nil, payJSON("PAY1", "Received", "", ""), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "PAY1"}),
		testkit.Classified("redirect", charge, 200, nil, `{"resultCode":"RedirectShopper","action":{"type":"redirect"}}`, want{Class: ledger.OutcomeRefused, Code: "shopper_action_required", Msg: "non-interactive"}),
		testkit.Classified("challenge", charge, 200, nil, `{"resultCode":"ChallengeShopper","action":{"type":"threeDS2"}}`, want{Class: ledger.OutcomeRefused, Code: "shopper_action_required"}),
		testkit.Classified("identify", charge, 200, nil, `{"resultCode":"IdentifyShopper"}`, want{Class: ledger.OutcomeRefused, Code: "shopper_action_required"}),
		testkit.Classified("partially authorised", charge, 200, nil, `{"pspReference":"PAY1","resultCode":"PartiallyAuthorised","merchantReference":"`+charge.OperationID+`","amount":{"currency":"EUR","value":1000}}`,
			want{Class: ledger.OutcomeKeyMismatch, Ref: "PAY1", Msg: "amount 1000"}),
		testkit.Classified("another reference", charge, 200, nil, `{"pspReference":"PAY9","resultCode":"Authorised","merchantReference":"other-op"}`, want{Class: ledger.OutcomeKeyMismatch, Ref: "PAY9", Msg: "operation id"}),
		testkit.Classified("another currency", charge, 200, nil, `{"pspReference":"PAY9","resultCode":"Authorised","amount":{"currency":"USD","value":1999}}`, want{Class: ledger.OutcomeKeyMismatch, Ref: "PAY9", Msg: "currency"}),
		testkit.Classified("unknown result", charge, 200, nil, payJSON("PAY1", "AuthenticationFinished", "", ""), want{Class: ledger.OutcomeMaybeSent, Ref: "PAY1"}),
		testkit.Classified("no result code", charge, 200, nil, `{"pspReference":"PAY1"}`, want{Class: ledger.OutcomeMaybeSent, Msg: "resultCode"}),
		testkit.Classified("malformed", charge, 200, nil, `{"pspReference":`, want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}),
		testkit.Classified("empty", charge, 200, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("error body in 200", charge, 200, nil, adyenErr(200, "000", "internal", "x"), want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("oversized", charge, 200, nil, huge, want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}),

		// modifications: received, not done
		testkit.Classified("capture received", capture, 201, nil, modJSON("CAP1", "PAY1", 1999), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "CAP1"}),
		testkit.Classified("cancel received", cancel, 201, nil, modJSON("CAN1", "PAY1", 0), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "CAN1"}),
		testkit.Classified("refund received", refund, 201, nil, modJSON("REF1", "PAY1", 500), want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "REF1"}),
		testkit.Classified("refund of another amount", refund, 201, nil, modJSON("REF1", "PAY1", 700), want{Class: ledger.OutcomeKeyMismatch, Ref: "REF1", Msg: "amount 700"}),
		testkit.Classified("refund of another payment", refund, 201, nil, modJSON("REF1", "PAY2", 500), want{Class: ledger.OutcomeKeyMismatch, Ref: "REF1", Msg: "PAY2"}),
		testkit.Classified("capture of another merchant account", capture, 201, nil, strings.Replace(modJSON("CAP1", "PAY1", 1999), merchant, "PayonceOtherMerchant", 1),
			want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP1", Msg: `merchant account "PayonceOtherMerchant"`}),
		testkit.Classified("cancel of another merchant account", cancel, 201, nil, strings.Replace(modJSON("CAN1", "PAY1", 0), merchant, "PayonceOtherMerchant", 1),
			want{Class: ledger.OutcomeKeyMismatch, Ref: "CAN1", Msg: "merchant account"}),
		testkit.Classified("modification naming no merchant account", refund, 201, nil, strings.Replace(modJSON("REF1", "PAY1", 500), `"merchantAccount":"`+merchant+`",`, "", 1),
			want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "REF1"}),
		testkit.Classified("modification without status", capture, 201, nil, `{"pspReference":"CAP1"}`, want{Class: ledger.OutcomeMaybeSent, Msg: "received"}),
		testkit.Classified("modification without psp", capture, 201, nil, `{"status":"received"}`, want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}),
		testkit.Classified("payment where modification expected", refund, 200, nil, payJSON("PAY1", "Authorised", "", ""), want{Class: ledger.OutcomeMaybeSent}),

		// errors
		testkit.Classified("409 704", charge, 409, []string{"Retry-After", "3"}, adyenErr(409, "704", "validation", "request already processed or in progress"),
			want{Class: ledger.OutcomeKeyInUse, Code: "704", RetryAfter: 3 * time.Second, RequestID: "ERRPSP1"}),
		testkit.Classified("409 704 transient", charge, 409, []string{"Transient-Error", "true"}, adyenErr(409, "704", "validation", "request already processed or in progress"),
			want{Class: ledger.OutcomeKeyInUse, Code: "704"}),
		testkit.Classified("422 704", refund, 422, nil, adyenErr(422, "704", "validation", "request already processed or in progress"), want{Class: ledger.OutcomeKeyInUse, Code: "704"}),
		testkit.Classified("422 704 transient", charge, 422, []string{"Transient-Error", "true"}, adyenErr(422, "704", "validation", "request already processed or in progress"),
			want{Class: ledger.OutcomeKeyInUse, Code: "704"}),
		testkit.Classified("500 704", capture, 500, []string{"Transient-Error", "true"}, adyenErr(500, "704", "validation", "request already processed or in progress"),
			want{Class: ledger.OutcomeKeyInUse, Code: "704"}),
		testkit.Classified("409 no body", capture, 409, nil, ``, want{Class: ledger.OutcomeKeyInUse, Code: "704"}),
		testkit.Classified("idempotency key reused", charge, 422, nil, adyenErr(422, "999", "validation", "Idempotency key used with a different request"), want{Class: ledger.OutcomeKeyMismatch}),
		testkit.Classified("422 validation", charge, 422, nil, adyenErr(422, "101", "validation", "Invalid card number"), want{Class: ledger.OutcomeRefused, Code: "101", Msg: "validation: Invalid card number"}),
		testkit.Classified("422 over-refund", refund, 422, nil, adyenErr(422, "137", "validation", "Invalid amount specified"), want{Class: ledger.OutcomeRefused, Code: "137"}),
		testkit.Classified("401", charge, 401, nil, adyenErr(401, "000", "security", "HTTP Status Response - Unauthorized"), want{Class: ledger.OutcomeRefused, Code: "000"}),
		testkit.Classified("403", charge, 403, nil, adyenErr(403, "010", "security", "Not allowed"), want{Class: ledger.OutcomeRefused, Code: "010"}),
		testkit.Classified("400 empty", charge, 400, nil, ``, want{Class: ledger.OutcomeRefused}),
		testkit.Classified("404", cancel, 404, nil, `<html>Not Found</html>`, want{Class: ledger.OutcomeRefused}),
		testkit.Classified("429", charge, 429, []string{"Retry-After", "2"}, ``, want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 2 * time.Second}),
		// Adyen's own 5xx: final for the key unless marked transient.
		testkit.Classified("500", charge, 500, nil, adyenErr(500, "905", "configuration", "Payment details are not supported"),
			want{Class: ledger.OutcomeMaybeSent, Code: "905", Replayed: true, Msg: "final"}),
		testkit.Classified("500 transient false", refund, 500, []string{"Transient-Error", "false"}, adyenErr(500, "000", "internal", "An internal error occurred"),
			want{Class: ledger.OutcomeMaybeSent, Replayed: true, Msg: "not transient"}),
		testkit.Classified("500 transient", charge, 500, []string{"Transient-Error", "true"}, adyenErr(500, "000", "internal", "timeout"),
			want{Class: ledger.OutcomeMaybeSent, Msg: "the same key may be sent again"}),
		testkit.Classified("503 transient, any case", capture, 503, []string{"Transient-Error", " TRUE "}, adyenErr(503, "00_503", "internal", "Service temporarily unavailable"),
			want{Class: ledger.OutcomeMaybeSent, Msg: "transient"}),
		// Not Adyen's answer (a proxy's, an empty body): it says nothing
		// about the key.
		testkit.Classified("500 without body", charge, 500, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("502", charge, 502, nil, `<html>Bad Gateway</html>`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("503", capture, 503, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("504 html", refund, 504, nil, `<html>Gateway Timeout</html>`, want{Class: ledger.OutcomeMaybeSent}),
		testkit.Classified("301", charge, 301, nil, ``, want{Class: ledger.OutcomeMaybeSent}),
	}, testkit.ClassifyChecks{Each: func(t *testing.T, o payonce.Outcome) {
		require.NotEqual(t, ledger.OutcomeNotSent, o.Class, "nothing that may have reached Adyen is not_sent")
		if o.Replayed {
			require.Equal(t, ledger.OutcomeMaybeSent, o.Class, "only a non-transient 5xx is final for the key")
			require.GreaterOrEqual(t, o.HTTPStatus, 500)
		}
	}})
}

func TestClassifyScrubs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	o := b.P.Classify(chargeReq(), 422, http.Header{}, []byte(adyenErr(422, "101", "validation", "key "+testKey+" and AQEabcdefghijklmnopqrstuvwxyz0123")))
	testkit.RequireScrubbed(t, o.Message, testKey, "AQEabcdefghijklmnop")
	o = b.P.Classify(chargeReq(), 200, http.Header{}, []byte(payJSON("PAY1", "Refused", testKey, testKey)))
	require.NotContains(t, o.Message, testKey)
	require.NotContains(t, o.DeclineCode, testKey)
}

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
	capture := withKind(charge, payonce.KindCapture, 1999, "PAY1")
	cancel := withKind(charge, payonce.KindCancel, 0, "PAY1")
	refund := withKind(charge, payonce.KindRefund, 500, "PAY1")
	cancel.Request.Currency = ""
	huge := `{"pspReference":"P","resultCode":"Authorised","pad":"` + strings.Repeat("x", 1<<20) + `"}`

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// payments
		{Name: "authorised", R: charge, Status: 200, Body: payJSON("PAY1", "Authorised", "", ""), Want: want{Class: ledger.OutcomeSuccess, Ref: "PAY1"}},
		{Name: "refused", R: charge, Status: 200, Body: payJSON("PAY1", "Refused", "Not enough balance", "12"), Want: want{Class: ledger.OutcomeRefused, Ref: "PAY1", Code: "refused", Decline: "12", Msg: "Not enough balance"}},
		{Name: "cancelled", R: charge, Status: 200, Body: payJSON("PAY1", "Cancelled", "", ""), Want: want{Class: ledger.OutcomeRefused, Ref: "PAY1", Code: "cancelled"}},
		{Name: "error is final", R: charge, Status: 200, Body: payJSON("PAY1", "Error", "Acquirer Error", "4"), Want: want{Class: ledger.OutcomeRefused, Ref: "PAY1", Code: "error", Decline: "4"}},
		{Name: "pending", R: charge, Status: 200, Body: payJSON("PAY1", "Pending", "", ""), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "PAY1"}},
		{Name: "received", R: charge, Status: 200, Body: payJSON("PAY1", "Received", "", ""), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "PAY1"}},
		{Name: "redirect", R: charge, Status: 200, Body: `{"resultCode":"RedirectShopper","action":{"type":"redirect"}}`, Want: want{Class: ledger.OutcomeRefused, Code: "shopper_action_required", Msg: "non-interactive"}},
		{Name: "challenge", R: charge, Status: 200, Body: `{"resultCode":"ChallengeShopper","action":{"type":"threeDS2"}}`, Want: want{Class: ledger.OutcomeRefused, Code: "shopper_action_required"}},
		{Name: "identify", R: charge, Status: 200, Body: `{"resultCode":"IdentifyShopper"}`, Want: want{Class: ledger.OutcomeRefused, Code: "shopper_action_required"}},
		{Name: "partially authorised", R: charge, Status: 200, Body: `{"pspReference":"PAY1","resultCode":"PartiallyAuthorised","merchantReference":"` + charge.OperationID + `","amount":{"currency":"EUR","value":1000}}`, Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "PAY1", Msg: "amount 1000"}},
		{Name: "another reference", R: charge, Status: 200, Body: `{"pspReference":"PAY9","resultCode":"Authorised","merchantReference":"other-op"}`, Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "PAY9", Msg: "operation id"}},
		{Name: "another currency", R: charge, Status: 200, Body: `{"pspReference":"PAY9","resultCode":"Authorised","amount":{"currency":"USD","value":1999}}`, Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "PAY9", Msg: "currency"}},
		{Name: "unknown result", R: charge, Status: 200, Body: payJSON("PAY1", "AuthenticationFinished", "", ""), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "PAY1"}},
		{Name: "no result code", R: charge, Status: 200, Body: `{"pspReference":"PAY1"}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "resultCode"}},
		{Name: "malformed", R: charge, Status: 200, Body: `{"pspReference":`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}},
		{Name: "empty", R: charge, Status: 200, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "error body in 200", R: charge, Status: 200, Body: adyenErr(200, "000", "internal", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "oversized", R: charge, Status: 200, Body: huge, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "bytes"}},

		// modifications: received, not done
		{Name: "capture received", R: capture, Status: 201, Body: modJSON("CAP1", "PAY1", 1999), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "CAP1"}},
		{Name: "cancel received", R: cancel, Status: 201, Body: modJSON("CAN1", "PAY1", 0), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "CAN1"}},
		{Name: "refund received", R: refund, Status: 201, Body: modJSON("REF1", "PAY1", 500), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "REF1"}},
		{Name: "refund of another amount", R: refund, Status: 201, Body: modJSON("REF1", "PAY1", 700), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "REF1", Msg: "amount 700"}},
		{Name: "refund of another payment", R: refund, Status: 201, Body: modJSON("REF1", "PAY2", 500), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "REF1", Msg: "PAY2"}},
		{Name: "capture of another merchant account", R: capture, Status: 201, Body: strings.Replace(modJSON("CAP1", "PAY1", 1999), merchant, "PayonceOtherMerchant", 1), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP1", Msg: `merchant account "PayonceOtherMerchant"`}},
		{Name: "cancel of another merchant account", R: cancel, Status: 201, Body: strings.Replace(modJSON("CAN1", "PAY1", 0), merchant, "PayonceOtherMerchant", 1), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAN1", Msg: "merchant account"}},
		{Name: "modification naming no merchant account", R: refund, Status: 201, Body: strings.Replace(modJSON("REF1", "PAY1", 500), `"merchantAccount":"`+merchant+`",`, "", 1), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "REF1"}},
		{Name: "modification without status", R: capture, Status: 201, Body: `{"pspReference":"CAP1"}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "received"}},
		{Name: "modification without psp", R: capture, Status: 201, Body: `{"status":"received"}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "no id"}},
		{Name: "payment where modification expected", R: refund, Status: 200, Body: payJSON("PAY1", "Authorised", "", ""), Want: want{Class: ledger.OutcomeMaybeSent}},

		// errors
		{Name: "409 704", R: charge, Status: 409, Hdr: []string{"Retry-After", "3"}, Body: adyenErr(409, "704", "validation", "request already processed or in progress"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "704", RetryAfter: 3 * time.Second, RequestID: "ERRPSP1"}},
		{Name: "409 704 transient", R: charge, Status: 409, Hdr: []string{"Transient-Error", "true"}, Body: adyenErr(409, "704", "validation", "request already processed or in progress"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "704"}},
		{Name: "422 704", R: refund, Status: 422, Body: adyenErr(422, "704", "validation", "request already processed or in progress"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "704"}},
		{Name: "422 704 transient", R: charge, Status: 422, Hdr: []string{"Transient-Error", "true"}, Body: adyenErr(422, "704", "validation", "request already processed or in progress"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "704"}},
		{Name: "500 704", R: capture, Status: 500, Hdr: []string{"Transient-Error", "true"}, Body: adyenErr(500, "704", "validation", "request already processed or in progress"), Want: want{Class: ledger.OutcomeKeyInUse, Code: "704"}},
		{Name: "409 no body", R: capture, Status: 409, Want: want{Class: ledger.OutcomeKeyInUse, Code: "704"}},
		{Name: "idempotency key reused", R: charge, Status: 422, Body: adyenErr(422, "999", "validation", "Idempotency key used with a different request"), Want: want{Class: ledger.OutcomeKeyMismatch}},
		{Name: "422 validation", R: charge, Status: 422, Body: adyenErr(422, "101", "validation", "Invalid card number"), Want: want{Class: ledger.OutcomeRefused, Code: "101", Msg: "validation: Invalid card number"}},
		{Name: "422 over-refund", R: refund, Status: 422, Body: adyenErr(422, "137", "validation", "Invalid amount specified"), Want: want{Class: ledger.OutcomeRefused, Code: "137"}},
		{Name: "401", R: charge, Status: 401, Body: adyenErr(401, "000", "security", "HTTP Status Response - Unauthorized"), Want: want{Class: ledger.OutcomeRefused, Code: "000"}},
		{Name: "403", R: charge, Status: 403, Body: adyenErr(403, "010", "security", "Not allowed"), Want: want{Class: ledger.OutcomeRefused, Code: "010"}},
		{Name: "400 empty", R: charge, Status: 400, Want: want{Class: ledger.OutcomeRefused}},
		{Name: "404", R: cancel, Status: 404, Body: `<html>Not Found</html>`, Want: want{Class: ledger.OutcomeRefused}},
		{Name: "429", R: charge, Status: 429, Hdr: []string{"Retry-After", "2"}, Want: want{Class: ledger.OutcomeMaybeSent, Code: "too_many_requests", RetryAfter: 2 * time.Second}},
		// Adyen's own 5xx: final for the key unless marked transient.
		{Name: "500", R: charge, Status: 500, Body: adyenErr(500, "905", "configuration", "Payment details are not supported"), Want: want{Class: ledger.OutcomeMaybeSent, Code: "905", Replayed: true, Msg: "final"}},
		{Name: "500 transient false", R: refund, Status: 500, Hdr: []string{"Transient-Error", "false"}, Body: adyenErr(500, "000", "internal", "An internal error occurred"), Want: want{Class: ledger.OutcomeMaybeSent, Replayed: true, Msg: "not transient"}},
		{Name: "500 transient", R: charge, Status: 500, Hdr: []string{"Transient-Error", "true"}, Body: adyenErr(500, "000", "internal", "timeout"), Want: want{Class: ledger.OutcomeMaybeSent, Msg: "the same key may be sent again"}},
		{Name: "503 transient, any case", R: capture, Status: 503, Hdr: []string{"Transient-Error", " TRUE "}, Body: adyenErr(503, "00_503", "internal", "Service temporarily unavailable"), Want: want{Class: ledger.OutcomeMaybeSent, Msg: "transient"}},
		// Not Adyen's answer (a proxy's, an empty body): it says nothing
		// about the key.
		{Name: "500 without body", R: charge, Status: 500, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "502", R: charge, Status: 502, Body: `<html>Bad Gateway</html>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "503", R: capture, Status: 503, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "504 html", R: refund, Status: 504, Body: `<html>Gateway Timeout</html>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "301", R: charge, Status: 301, Want: want{Class: ledger.OutcomeMaybeSent}},
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

package paypal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

// laterGen is r sent under key generation 1 (an operator approved a
// resend after review).
func laterGen(r payonce.SendRequest) payonce.SendRequest {
	r.Key = r.OperationID + ".1"
	return r
}

func TestClassify(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := vaultCharge()
	manual := vaultCharge()
	manual.Request.CaptureManual = true
	acting := orderCharge()
	capture := withKind(charge, payonce.KindCapture, 1999, "AUTH-1")
	captureAll := withKind(charge, payonce.KindCapture, 0, "AUTH-1")
	cancel := withKind(charge, payonce.KindCancel, 0, "AUTH-1")
	refund := withKind(charge, payonce.KindRefund, 500, "CAP-1")
	other := "11111111-2222-5333-8444-555555555555"

	caps := func(status, extra string) string {
		return `{"captures":[{"id":"CAP-1","status":"` + status + `","amount":{"currency_code":"USD","value":"19.99"},"custom_id":"` + opID + `"` + extra + `}]}`
	}
	auths := func(status string) string {
		return `{"authorizations":[{"id":"AUTH-1","status":"` + status + `","amount":{"currency_code":"USD","value":"19.99"},"custom_id":"` + opID + `"}]}`
	}
	ord := func(status, payments string) string {
		return orderJSON("ORD-1", status, "CAPTURE", opID, opID, payments)
	}
	aord := func(status, payments string) string {
		return orderJSON("ORD-1", status, "AUTHORIZE", opID, opID, payments)
	}
	refundJSON := func(status, value, custom string) string {
		return `{"id":"REF-1","status":"` + status + `","amount":{"currency_code":"USD","value":"` + value + `"},"custom_id":"` + custom + `","invoice_id":"` + opID + `"}`
	}
	authJSON := func(id, status string) string {
		return `{"id":"` + id + `","status":"` + status + `","amount":{"currency_code":"USD","value":"19.99"},"custom_id":"` + opID + `"}`
	}

	type want = testkit.ClassifyWant
	testkit.RequireClassify(t, b.P, []testkit.ClassifyCase{
		// charge with a saved method, intent CAPTURE
		{Name: "captured", R: charge, Status: 201, Hdr: []string{"Paypal-Debug-Id", "dbg1"}, Body: ord("COMPLETED", caps("COMPLETED", "")), Want: want{Class: ledger.OutcomeSuccess, Ref: "CAP-1", RequestID: "dbg1"}},
		{Name: "repeat: since refunded", R: charge, Status: 200, Body: ord("COMPLETED", caps("REFUNDED", "")), Want: want{Class: ledger.OutcomeSuccess, Ref: "CAP-1"}},
		{Name: "repeat: since partly refunded", R: charge, Status: 200, Body: ord("COMPLETED", caps("PARTIALLY_REFUNDED", "")), Want: want{Class: ledger.OutcomeSuccess, Ref: "CAP-1"}},
		{Name: "capture pending", R: charge, Status: 201, Body: ord("COMPLETED", caps("PENDING", `,"status_details":{"reason":"UNILATERAL"}`)), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "CAP-1"}},
		{Name: "capture declined", R: charge, Status: 201, Body: ord("COMPLETED", caps("DECLINED", `,"processor_response":{"response_code":"5120","avs_code":"G"}`)),
			Want: want{Class: ledger.OutcomeRefused, Ref: "CAP-1", Code: "DECLINED", Decline: "5120", Msg: "DECLINED"}},
		{Name: "capture failed", R: charge, Status: 201, Body: ord("COMPLETED", caps("FAILED", "")), Want: want{Class: ledger.OutcomeRefused, Ref: "CAP-1", Code: "FAILED"}},
		{Name: "3-D Secure", R: charge, Status: 200, Body: ord("PAYER_ACTION_REQUIRED", ""), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "ORD-1"}},
		{Name: "created", R: charge, Status: 201, Body: ord("CREATED", ""), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "ORD-1"}},
		{Name: "saved", R: charge, Status: 201, Body: ord("SAVED", ""), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "ORD-1"}},
		{Name: "approved", R: charge, Status: 201, Body: ord("APPROVED", ""), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "ORD-1"}},
		{Name: "order voided", R: charge, Status: 201, Body: ord("VOIDED", ""), Want: want{Class: ledger.OutcomeRefused, Ref: "ORD-1", Code: "VOIDED"}},
		{Name: "completed without capture", R: charge, Status: 201, Body: ord("COMPLETED", `{"captures":[]}`), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "ORD-1", Msg: "holds no capture"}},
		{Name: "unknown order status", R: charge, Status: 201, Body: ord("ARCHIVED", ""), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "ORD-1", Msg: "ARCHIVED"}},
		{Name: "unknown capture status", R: charge, Status: 201, Body: ord("COMPLETED", caps("REVERSED", "")), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "CAP-1", Msg: "REVERSED"}},
		{Name: "another operation's order", R: charge, Status: 200, Body: orderJSON("ORD-1", "COMPLETED", "CAPTURE", other, other, caps("COMPLETED", "")),
			Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP-1", Msg: "operation id"}},
		{Name: "another amount", R: withKind(charge, payonce.KindCharge, 2000, ""), Status: 201, Body: ord("COMPLETED", caps("COMPLETED", "")),
			Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP-1", Msg: "amount 1999, not 2000"}},
		{Name: "another currency", R: charge, Status: 201, Body: strings.ReplaceAll(ord("COMPLETED", caps("COMPLETED", "")), "USD", "EUR"),
			Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP-1", Msg: "currency"}},
		{Name: "another intent", R: charge, Status: 201, Body: aord("COMPLETED", auths("CREATED")), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "AUTH-1", Msg: "intent AUTHORIZE"}},
		{Name: "malformed", R: charge, Status: 201, Body: `{"id":"ORD-1",`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "unreadable"}},
		{Name: "empty", R: charge, Status: 201, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "minimal answer", R: charge, Status: 201, Body: `{"id":"ORD-1","links":[]}`, Want: want{Class: ledger.OutcomeMaybeSent, Msg: "no status"}},
		{Name: "error in 2xx", R: charge, Status: 200, Body: ppErr("UNPROCESSABLE_ENTITY", "INSTRUMENT_DECLINED", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},

		// charge with a saved method, intent AUTHORIZE
		{Name: "authorized", R: manual, Status: 201, Body: aord("COMPLETED", auths("CREATED")), Want: want{Class: ledger.OutcomeSuccess, Ref: "AUTH-1"}},
		{Name: "repeat: since captured", R: manual, Status: 200, Body: aord("COMPLETED", auths("CAPTURED")), Want: want{Class: ledger.OutcomeSuccess, Ref: "AUTH-1"}},
		{Name: "repeat: since partly captured", R: manual, Status: 200, Body: aord("COMPLETED", auths("PARTIALLY_CAPTURED")), Want: want{Class: ledger.OutcomeSuccess, Ref: "AUTH-1"}},
		{Name: "repeat: since voided", R: manual, Status: 200, Body: aord("COMPLETED", auths("VOIDED")), Want: want{Class: ledger.OutcomeSuccess, Ref: "AUTH-1"}},
		{Name: "authorization pending", R: manual, Status: 201, Body: aord("COMPLETED", auths("PENDING")), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "AUTH-1"}},
		{Name: "authorization denied", R: manual, Status: 201, Body: aord("COMPLETED", auths("DENIED")), Want: want{Class: ledger.OutcomeRefused, Ref: "AUTH-1", Code: "DENIED"}},
		// The order VOIDED around a payment: the payment decides (an
		// authorization released later is a charge that succeeded).
		{Name: "repeat: order voided around a voided authorization", R: manual, Status: 200, Body: aord("VOIDED", auths("VOIDED")), Want: want{Class: ledger.OutcomeSuccess, Ref: "AUTH-1"}},
		{Name: "order voided around a denied authorization", R: manual, Status: 200, Body: aord("VOIDED", auths("DENIED")), Want: want{Class: ledger.OutcomeRefused, Ref: "AUTH-1", Code: "DENIED"}},
		{Name: "order voided around a declined capture", R: charge, Status: 200, Body: ord("VOIDED", caps("DECLINED", "")), Want: want{Class: ledger.OutcomeRefused, Ref: "CAP-1", Code: "DECLINED"}},

		// charge of an order the payer approved: its custom_id is the merchant's
		{Name: "approved order captured", R: acting, Status: 201, Body: orderJSON("5O190127TN364715T", "COMPLETED", "CAPTURE", "merchant-ref", "INV-7", caps("COMPLETED", "")),
			Want: want{Class: ledger.OutcomeSuccess, Ref: "CAP-1"}},
		{Name: "another order", R: acting, Status: 201, Body: orderJSON("OTHER", "COMPLETED", "CAPTURE", "", "", caps("COMPLETED", "")),
			Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP-1", Msg: `order "OTHER"`}},
		{Name: "approved order not captured", R: acting, Status: 200, Body: orderJSON("5O190127TN364715T", "APPROVED", "CAPTURE", "", "", ""),
			Want: want{Class: ledger.OutcomeMaybeSent, Ref: "5O190127TN364715T"}},

		// capture of an authorization
		{Name: "capture completed", R: capture, Status: 201, Body: capJSON("CAP-2", "COMPLETED", "19.99", opID, opID), Want: want{Class: ledger.OutcomeSuccess, Ref: "CAP-2"}},
		{Name: "capture carries the charge's custom_id", R: captureAll, Status: 201, Body: capJSON("CAP-2", "COMPLETED", "19.99", other, opID), Want: want{Class: ledger.OutcomeSuccess, Ref: "CAP-2"}},
		{Name: "capture repeat: refunded", R: capture, Status: 200, Body: capJSON("CAP-2", "REFUNDED", "19.99", opID, opID), Want: want{Class: ledger.OutcomeSuccess, Ref: "CAP-2"}},
		{Name: "capture pending", R: capture, Status: 201, Body: capJSON("CAP-2", "PENDING", "19.99", opID, opID), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "CAP-2"}},
		{Name: "capture declined", R: capture, Status: 201, Body: capJSON("CAP-2", "DECLINED", "19.99", opID, opID), Want: want{Class: ledger.OutcomeRefused, Ref: "CAP-2", Code: "DECLINED"}},
		{Name: "capture of another amount", R: capture, Status: 201, Body: capJSON("CAP-2", "COMPLETED", "5.00", opID, opID), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP-2", Msg: "amount 500"}},
		{Name: "capture of another key", R: capture, Status: 201, Body: capJSON("CAP-2", "COMPLETED", "19.99", opID, other), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "CAP-2", Msg: "invoice_id"}},

		// void of an authorization
		{Name: "voided", R: cancel, Status: 200, Body: authJSON("AUTH-1", "VOIDED"), Want: want{Class: ledger.OutcomeSuccess, Ref: "AUTH-1"}},
		{Name: "voided, minimal", R: cancel, Status: 204, Want: want{Class: ledger.OutcomeSuccess, Ref: "AUTH-1"}},
		{Name: "void not done", R: cancel, Status: 200, Body: authJSON("AUTH-1", "CREATED"), Want: want{Class: ledger.OutcomeMaybeSent, Ref: "AUTH-1"}},
		{Name: "another authorization voided", R: cancel, Status: 200, Body: authJSON("AUTH-9", "VOIDED"), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "AUTH-9"}},

		// refund of a capture
		{Name: "refunded", R: refund, Status: 201, Body: refundJSON("COMPLETED", "5.00", opID), Want: want{Class: ledger.OutcomeSuccess, Ref: "REF-1"}},
		{Name: "refund pending", R: refund, Status: 201, Body: refundJSON("PENDING", "5.00", opID), Want: want{Class: ledger.OutcomeSuccess, Processing: true, Ref: "REF-1"}},
		{Name: "refund cancelled", R: refund, Status: 201, Body: refundJSON("CANCELLED", "5.00", opID), Want: want{Class: ledger.OutcomeRefused, Ref: "REF-1", Code: "CANCELLED"}},
		{Name: "refund failed", R: refund, Status: 201, Body: refundJSON("FAILED", "5.00", opID), Want: want{Class: ledger.OutcomeRefused, Ref: "REF-1", Code: "FAILED"}},
		{Name: "another operation's refund", R: refund, Status: 200, Body: refundJSON("COMPLETED", "5.00", other), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "REF-1", Msg: "operation id"}},
		{Name: "refund of another amount", R: refund, Status: 201, Body: refundJSON("COMPLETED", "6.00", opID), Want: want{Class: ledger.OutcomeKeyMismatch, Ref: "REF-1"}},

		// errors
		{Name: "401", R: charge, Status: 401, Body: `{"error":"invalid_token","error_description":"Token signature verification failed"}`, Want: want{Class: ledger.OutcomeNotSent, Code: "invalid_token"}},
		{Name: "409 in progress", R: refund, Status: 409, Hdr: []string{"Retry-After", "2"}, Body: ppErr("RESOURCE_CONFLICT", "PREVIOUS_REQUEST_IN_PROGRESS", "A previous request on this resource is in progress."),
			Want: want{Class: ledger.OutcomeKeyInUse, Code: "PREVIOUS_REQUEST_IN_PROGRESS", RetryAfter: 2 * time.Second, RequestID: "b1c2d3"}},
		{Name: "409 no body", R: cancel, Status: 409, Want: want{Class: ledger.OutcomeKeyInUse}},
		{Name: "duplicate invoice", R: charge, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "DUPLICATE_INVOICE_ID", "Duplicate Invoice ID detected."),
			Want: want{Class: ledger.OutcomeMaybeSent, Code: "DUPLICATE_INVOICE_ID"}},
		// Another request did it (PayPal answers a repeat of this
		// request's own id with its result): review, never claimed. These
		// three were maybe_sent before the lead's rule 1.
		{Name: "order already captured", R: acting, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "ORDER_ALREADY_CAPTURED", "Order already captured."),
			Want: want{Class: ledger.OutcomeKeyMismatch, Code: "ORDER_ALREADY_CAPTURED", Msg: "order 5O190127TN364715T was captured by another request: not recorded as this operation's payment"}},
		{Name: "order already authorized", R: acting, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "ORDER_ALREADY_AUTHORIZED", "Order already authorized."),
			Want: want{Class: ledger.OutcomeKeyMismatch, Code: "ORDER_ALREADY_AUTHORIZED", Msg: "order 5O190127TN364715T was authorized by another request"}},
		{Name: "authorization already captured", R: capture, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "AUTHORIZATION_ALREADY_CAPTURED", "x"),
			Want: want{Class: ledger.OutcomeKeyMismatch, Code: "AUTHORIZATION_ALREADY_CAPTURED", Msg: "authorization AUTH-1 was captured by another request"}},
		{Name: "order already captured, later generation", R: laterGen(acting), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "ORDER_ALREADY_CAPTURED", "x"),
			Want: want{Class: ledger.OutcomeKeyMismatch, Code: "ORDER_ALREADY_CAPTURED", Msg: "earlier key generation"}},
		{Name: "authorization already captured, later generation", R: laterGen(capture), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "AUTHORIZATION_ALREADY_CAPTURED", "x"),
			Want: want{Class: ledger.OutcomeKeyMismatch, Code: "AUTHORIZATION_ALREADY_CAPTURED", Msg: "earlier key generation"}},
		{Name: "order already captured, vault charge", R: charge, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "ORDER_ALREADY_CAPTURED", "x"),
			Want: want{Class: ledger.OutcomeMaybeSent, Code: "ORDER_ALREADY_CAPTURED"}},
		{Name: "previously voided", R: cancel, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "PREVIOUSLY_VOIDED", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "duplicate refund", R: refund, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "DUPLICATE_REFUND", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "request id reused", R: charge, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "PAYPAL_REQUEST_ID_PREVIOUSLY_USED", "x"), Want: want{Class: ledger.OutcomeKeyMismatch}},
		{Name: "instrument declined", R: charge, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "INSTRUMENT_DECLINED", "The instrument presented was either declined by the processor or bank."),
			Want: want{Class: ledger.OutcomeRefused, Code: "INSTRUMENT_DECLINED", Decline: "INSTRUMENT_DECLINED", Msg: "declined by the processor"}},
		{Name: "transaction refused", R: charge, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "TRANSACTION_REFUSED", "x"), Want: want{Class: ledger.OutcomeRefused, Decline: "TRANSACTION_REFUSED"}},
		{Name: "not approved", R: acting, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "ORDER_NOT_APPROVED", "x"), Want: want{Class: ledger.OutcomeRefused, Code: "ORDER_NOT_APPROVED"}},
		{Name: "refund over the capture", R: refund, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "REFUND_AMOUNT_EXCEEDED", "x"), Want: want{Class: ledger.OutcomeRefused, Code: "REFUND_AMOUNT_EXCEEDED"}},
		// Nothing left to refund or capture: refused under generation 0
		// (nothing of this operation took it), maybe_sent under a later
		// generation (an earlier one may have).
		{Name: "capture fully refunded", R: refund, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "CAPTURE_FULLY_REFUNDED", "x"), Want: want{Class: ledger.OutcomeRefused, Code: "CAPTURE_FULLY_REFUNDED"}},
		{Name: "capture fully refunded, later generation", R: laterGen(refund), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "CAPTURE_FULLY_REFUNDED", "x"), Want: want{Class: ledger.OutcomeMaybeSent, Code: "CAPTURE_FULLY_REFUNDED"}},
		{Name: "captured amount fully refunded, later generation", R: laterGen(refund), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "CAPTURED_AMOUNT_FULLY_REFUNDED", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "refund over the capture, later generation", R: laterGen(refund), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "REFUND_AMOUNT_EXCEEDED", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "refund count, later generation", R: laterGen(refund), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "MAX_NUMBER_OF_REFUNDS_EXCEEDED", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "capture over the authorization", R: capture, Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "MAX_CAPTURE_AMOUNT_EXCEEDED", "x"), Want: want{Class: ledger.OutcomeRefused, Code: "MAX_CAPTURE_AMOUNT_EXCEEDED"}},
		{Name: "capture over the authorization, later generation", R: laterGen(capture), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "MAX_CAPTURE_AMOUNT_EXCEEDED", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "capture count, later generation", R: laterGen(capture), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "MAX_CAPTURE_COUNT_EXCEEDED", "x"), Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "refund issue to a capture, later generation", R: laterGen(capture), Status: 422, Body: ppErr("UNPROCESSABLE_ENTITY", "CAPTURE_FULLY_REFUNDED", "x"), Want: want{Class: ledger.OutcomeRefused}},
		{Name: "400", R: charge, Status: 400, Body: ppErr("INVALID_REQUEST", "INVALID_PARAMETER_VALUE", "x"), Want: want{Class: ledger.OutcomeRefused, Code: "INVALID_PARAMETER_VALUE"}},
		{Name: "403", R: capture, Status: 403, Body: `{"name":"NOT_AUTHORIZED","message":"Authorization failed due to insufficient permissions.","debug_id":"d"}`, Want: want{Class: ledger.OutcomeRefused, Code: "NOT_AUTHORIZED"}},
		{Name: "404", R: refund, Status: 404, Body: ppErr("RESOURCE_NOT_FOUND", "INVALID_RESOURCE_ID", "x"), Want: want{Class: ledger.OutcomeRefused}},
		{Name: "429 rate limit", R: charge, Status: 429, Hdr: []string{"Retry-After", "7"}, Body: `{"name":"RATE_LIMIT_REACHED","message":"Too many requests.","debug_id":"d"}`,
			Want: want{Class: ledger.OutcomeNotSent, Code: "RATE_LIMIT_REACHED", RetryAfter: 7 * time.Second}},
		{Name: "429 from a proxy", R: charge, Status: 429, Body: `<html>slow down</html>`, Want: want{Class: ledger.OutcomeMaybeSent, Code: "RATE_LIMIT_REACHED"}},
		{Name: "500", R: charge, Status: 500, Body: `{"name":"INTERNAL_SERVER_ERROR","message":"An internal server error occurred.","debug_id":"d"}`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "502 html", R: refund, Status: 502, Body: `<html/>`, Want: want{Class: ledger.OutcomeMaybeSent}},
		{Name: "503", R: capture, Status: 503, Want: want{Class: ledger.OutcomeMaybeSent}},
	}, testkit.ClassifyChecks{Each: func(t *testing.T, o payonce.Outcome) {
		require.False(t, o.Replayed, "PayPal documents no replay marker")
		if o.Class != ledger.OutcomeKeyMismatch {
			require.Empty(t, o.Contradiction)
		} else if o.HTTPStatus < 300 {
			require.NotEmpty(t, o.Contradiction)
		}
	}})
}

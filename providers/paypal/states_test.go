package paypal_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
)

// Every status of every PayPal object (PayPal-TypeScript-Server-SDK,
// src/models/*Status.ts) for every kind that reads it, through Classify
// (the object as the answer to a send, a same-request-id repeat included)
// and through Lookup (the object read by id): both read the one states
// table, so they must agree.
func TestStatesAgree(t *testing.T) {
	t.Parallel()
	type agree = testkit.Agreement
	ok := agree{Class: ledger.OutcomeSuccess, State: payonce.LookupSucceeded}
	processing := agree{Class: ledger.OutcomeSuccess, Processing: true, State: payonce.LookupProcessing}
	failed := func(code string) agree {
		return agree{Class: ledger.OutcomeRefused, State: payonce.LookupFailed, Code: code}
	}
	notYet := agree{Class: ledger.OutcomeMaybeSent, State: payonce.LookupNotFound}

	manual := vaultCharge()
	manual.Request.CaptureManual = true
	capture := withKind(vaultCharge(), payonce.KindCapture, 0, "AUTH-1")
	cancel := withKind(vaultCharge(), payonce.KindCancel, 0, "AUTH-1")
	refund := withKind(vaultCharge(), payonce.KindRefund, 1999, "CAP-1")

	pay := func(id, status string) string {
		return fmt.Sprintf(`{"id":%q,"status":%q,"amount":{"currency_code":"USD","value":"19.99"},"custom_id":%q,"invoice_id":%q}`, id, status, opID, opID)
	}
	type tc struct {
		name   string
		r      payonce.SendRequest
		answer string // the 2xx answer's body
		path   string // where Lookup reads the object
		object string // the object Lookup reads
		want   agree
	}
	var cases []tc
	// Capture statuses: the payment inside a charge's order, and a capture.
	for status, want := range map[string]agree{
		"COMPLETED": ok, "PARTIALLY_REFUNDED": ok, "REFUNDED": ok, "PENDING": processing,
		"DECLINED": failed("DECLINED"), "FAILED": failed("FAILED"),
	} {
		c := pay("CAP-1", status)
		cases = append(cases,
			tc{"charge, capture " + status, vaultCharge(), orderJSON("ORD-1", "COMPLETED", "CAPTURE", opID, opID, `{"captures":[`+c+`]}`), "/v2/payments/captures/CAP-1", c, want},
			tc{"capture, capture " + status, capture, c, "/v2/payments/captures/CAP-1", c, want})
	}
	// Authorization statuses: the payment inside an AUTHORIZE charge's
	// order, and the authorization a cancel voids.
	for status, want := range map[string][2]agree{
		"CREATED":            {ok, notYet},
		"PENDING":            {processing, notYet},
		"CAPTURED":           {ok, failed("CAPTURED")},
		"PARTIALLY_CAPTURED": {ok, notYet},
		"DENIED":             {failed("DENIED"), failed("DENIED")},
		"VOIDED":             {ok, ok},
	} {
		a := pay("AUTH-1", status)
		cases = append(cases,
			tc{"authorize charge, authorization " + status, manual, orderJSON("ORD-1", "COMPLETED", "AUTHORIZE", opID, opID, `{"authorizations":[`+a+`]}`), "/v2/payments/authorizations/AUTH-1", a, want[0]},
			tc{"cancel, authorization " + status, cancel, a, "/v2/payments/authorizations/AUTH-1", a, want[1]})
	}
	// Refund statuses.
	for status, want := range map[string]agree{
		"COMPLETED": ok, "PENDING": processing, "CANCELLED": failed("CANCELLED"), "FAILED": failed("FAILED"),
	} {
		rf := pay("REF-1", status)
		cases = append(cases, tc{"refund " + status, refund, rf, "/v2/payments/refunds/REF-1", rf, want})
	}
	// Order statuses before the order holds a payment (a charge with a
	// saved method: the order waits for the payer), read back by its id.
	for status, want := range map[string]agree{
		"CREATED": processing, "SAVED": processing, "APPROVED": processing, "PAYER_ACTION_REQUIRED": processing,
		"VOIDED": failed("VOIDED"),
	} {
		o := orderJSON("ORD-1", status, "CAPTURE", opID, opID, "")
		cases = append(cases, tc{"charge, order " + status, vaultCharge(), o, "/v2/checkout/orders/ORD-1", o, want})
	}
	// Statuses the table does not know: maybe_sent, and the lookup fails.
	unknown := agree{Class: ledger.OutcomeMaybeSent}
	cases = append(cases,
		tc{"capture REVERSED", capture, pay("CAP-1", "REVERSED"), "/v2/payments/captures/CAP-1", pay("CAP-1", "REVERSED"), unknown},
		tc{"refund UNKNOWN", refund, pay("REF-1", "UNKNOWN"), "/v2/payments/refunds/REF-1", pay("REF-1", "UNKNOWN"), unknown})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			o := b.P.Classify(c.r, 200, nil, []byte(c.answer))
			wire.ServeGET(b.MT, base+c.path, func() *http.Response { return respond(200, c.object) })
			serve(b, nil) // anything else: PayPal's 404
			ref := ""
			switch c.r.Request.Kind {
			case payonce.KindCharge, payonce.KindRefund:
				// The ledger knows the id the answer gave.
				ref = o.ProviderRef
				if c.r.Request.Kind == payonce.KindCharge && ref == "" {
					ref = "ORD-1"
				}
			case payonce.KindCapture:
				ref = "CAP-1"
			}
			res, err := b.P.Lookup(context.Background(), b.HC, query(c.r, ref))
			testkit.RequireAgree(t, c.want, o, res, err, testkit.AgreeChecks{SameMessage: true, MaybeSentNotFound: true})
		})
	}
}

package paypal_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// Event bodies in PayPal's shapes (the samples quoted in lat9/paypalr,
// includes/modules/payment/paypal/PayPalRestful/Webhooks/Events/, and on
// nopcommerce.com/boards/topic/92555): an event envelope around a
// capture, refund, authorization or order.

func ppEvent(id, typ, resourceType, resource string) string {
	return fmt.Sprintf(`{"id":%q,"event_version":"1.0","create_time":"2026-12-05T00:59:58.123Z","resource_type":%q,"resource_version":"2.0",`+
		`"event_type":%q,"summary":"s","resource":%s,"links":[]}`, id, resourceType, typ, resource)
}

const (
	opCharge = "0b6f3e1c-2c4d-5e6f-8a9b-0c1d2e3f4a5b"
	keyChg   = "0b6f3e1c-2c4d-5e6f-8a9b-0c1d2e3f4a5b"
	opRefund = "9a8b7c6d-2c4d-5e6f-8a9b-0c1d2e3f4a5b"
	keyRef   = "9a8b7c6d-2c4d-5e6f-8a9b-0c1d2e3f4a5b.1"
)

// orderCapture is a capture made by capturing order 5O190127TN364715T.
func orderCapture(status string) string {
	return `{"id":"3C679366HH908993F","status":"` + status + `","amount":{"currency_code":"USD","value":"10.00"},` +
		`"custom_id":"` + opCharge + `","invoice_id":"` + keyChg + `","final_capture":true,` +
		`"supplementary_data":{"related_ids":{"order_id":"5O190127TN364715T"}},` +
		`"links":[{"href":"https://api.paypal.com/v2/payments/captures/3C679366HH908993F","rel":"self","method":"GET"},` +
		`{"href":"https://api.paypal.com/v2/checkout/orders/5O190127TN364715T","rel":"up","method":"GET"}]}`
}

// authCapture is a capture of authorization 0VF52814937998046 (no
// supplementary_data: the "up" link names the authorization). Its
// custom_id is its order's (the charge's).
func authCapture(status string) string {
	return `{"id":"7TK53561MB803214S","status":"` + status + `","amount":{"currency_code":"USD","value":"7.00"},` +
		`"custom_id":"` + opCharge + `","invoice_id":"capture-key-1","final_capture":true,` +
		`"links":[{"href":"https://api.paypal.com/v2/payments/captures/7TK53561MB803214S","rel":"self","method":"GET"},` +
		`{"href":"https://api.paypal.com/v2/payments/authorizations/0VF52814937998046","rel":"up","method":"GET"}]}`
}

func authorization(status string) string {
	return `{"id":"0VF52814937998046","status":"` + status + `","amount":{"currency_code":"USD","value":"10.00"},` +
		`"custom_id":"` + opCharge + `","invoice_id":"` + keyChg + `","expiration_time":"2027-01-03T00:00:00Z",` +
		`"supplementary_data":{"related_ids":{"order_id":"5O190127TN364715T"}},` +
		`"links":[{"href":"https://api.paypal.com/v2/payments/authorizations/0VF52814937998046","rel":"self","method":"GET"}]}`
}

func refund(status, custom, invoice string) string {
	return `{"id":"1JU08902781691411","status":"` + status + `","amount":{"currency_code":"USD","value":"2.50"},` +
		`"custom_id":"` + custom + `","invoice_id":"` + invoice + `",` +
		`"links":[{"href":"https://api.paypal.com/v2/payments/refunds/1JU08902781691411","rel":"self","method":"GET"},` +
		`{"href":"https://api.paypal.com/v2/payments/captures/3C679366HH908993F","rel":"up","method":"GET"}]}`
}

// reversal is PayPal's sample PAYMENT.CAPTURE.REVERSED resource: a refund
// PayPal made, whose "up" is the reversed capture.
const reversal = `{"amount":{"currency_code":"USD","value":"2.51"},"update_time":"2018-08-15T14:30:10-07:00",` +
	`"create_time":"2018-08-15T14:30:10-07:00","links":[{"href":"https://api.paypal.com/v2/payments/refunds/09E71677NS257044M","rel":"self","method":"GET"},` +
	`{"href":"https://api.paypal.com/v2/payments/captures/4L335234718889942","rel":"up","method":"GET"}],` +
	`"id":"09E71677NS257044M","note_to_payer":"Payment reversed","status":"COMPLETED"}`

func completedOrder(intent, payments string) string {
	return `{"id":"5O190127TN364715T","status":"COMPLETED","intent":"` + intent + `","purchase_units":[{"reference_id":"default",` +
		`"amount":{"currency_code":"USD","value":"10.00"},"custom_id":"` + opCharge + `","invoice_id":"` + keyChg + `","payments":` + payments + `}]}`
}

// chargeTargets is what an event of payonce's own generation-0 order says
// of its charge: by operation id and key with the payment's id (refs[0]),
// then by each reference.
func chargeTargets(state payonce.LookupState, amount int64, refs ...string) []payonce.WebhookTarget {
	ts := []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: opCharge, Key: keyChg, ProviderRef: refs[0], Amount: amount,
		Currency: "USD", State: state}}
	for _, r := range refs {
		ts = append(ts, payonce.WebhookTarget{Kind: payonce.KindCharge, ProviderRef: r, Amount: amount, Currency: "USD", State: state})
	}
	return ts
}

// noMessages drops the messages, which the cases do not pin.
func noMessages(ts []payonce.WebhookTarget) []payonce.WebhookTarget {
	if len(ts) == 0 {
		return nil
	}
	out := make([]payonce.WebhookTarget, len(ts))
	for i, t := range ts {
		t.Message = ""
		out[i] = t
	}
	return out
}

func TestWebhookEventTargets(t *testing.T) {
	for _, tc := range []struct {
		name, typ, rtype, resource string
		want                       []payonce.WebhookTarget
	}{
		{"order capture completed", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("COMPLETED"),
			chargeTargets(payonce.LookupSucceeded, 1000, "3C679366HH908993F", "5O190127TN364715T")},
		{"order capture pending", "PAYMENT.CAPTURE.PENDING", "capture", orderCapture("PENDING"),
			chargeTargets(payonce.LookupProcessing, 1000, "3C679366HH908993F", "5O190127TN364715T")},
		{"order capture declined", "PAYMENT.CAPTURE.DECLINED", "capture", orderCapture("DECLINED"), func() []payonce.WebhookTarget {
			ts := chargeTargets(payonce.LookupFailed, 1000, "3C679366HH908993F", "5O190127TN364715T")
			for i := range ts {
				ts[i].Code = "DECLINED"
			}
			return ts
		}()},
		// The event type is in the body, which proves nothing: a status
		// the table does not know (DENIED is no capture status) changes
		// nothing, whatever the type says.
		{"capture denied with a status the table does not know", "PAYMENT.CAPTURE.DENIED", "capture", orderCapture("DENIED"),
			chargeTargets(payonce.LookupProcessing, 1000, "3C679366HH908993F", "5O190127TN364715T")},
		{"completed with a status the table does not know changes nothing", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("SOMETHING_NEW"),
			chargeTargets(payonce.LookupProcessing, 1000, "3C679366HH908993F", "5O190127TN364715T")},
		{"authorization capture completed", "PAYMENT.CAPTURE.COMPLETED", "capture", authCapture("COMPLETED"), []payonce.WebhookTarget{
			{Kind: payonce.KindCapture, ProviderRef: "7TK53561MB803214S", PaymentRef: "0VF52814937998046", Key: "capture-key-1",
				Amount: 700, Currency: "USD", State: payonce.LookupSucceeded},
			{Kind: payonce.KindCharge, ProviderRef: "0VF52814937998046", Currency: "USD", State: payonce.LookupSucceeded}}},
		{"authorization capture declined: the authorization stands", "PAYMENT.CAPTURE.DECLINED", "capture", authCapture("DECLINED"), []payonce.WebhookTarget{
			{Kind: payonce.KindCapture, ProviderRef: "7TK53561MB803214S", PaymentRef: "0VF52814937998046", Key: "capture-key-1",
				Amount: 700, Currency: "USD", State: payonce.LookupFailed, Code: "DECLINED"}}},
		{"refund completed", "PAYMENT.CAPTURE.REFUNDED", "refund", refund("COMPLETED", opRefund, keyRef), []payonce.WebhookTarget{
			{Kind: payonce.KindRefund, OperationID: opRefund, Key: keyRef, ProviderRef: "1JU08902781691411", PaymentRef: "3C679366HH908993F",
				Amount: 250, Currency: "USD", State: payonce.LookupSucceeded}}},
		{"refund made elsewhere names no operation or payment", "PAYMENT.CAPTURE.REFUNDED", "refund", refund("COMPLETED", "", ""), []payonce.WebhookTarget{
			{Kind: payonce.KindRefund, ProviderRef: "1JU08902781691411", Amount: 250, Currency: "USD", State: payonce.LookupSucceeded}}},
		{"refund as a capture", "PAYMENT.CAPTURE.REFUNDED", "capture", orderCapture("REFUNDED"),
			chargeTargets(payonce.LookupSucceeded, 1000, "3C679366HH908993F", "5O190127TN364715T")},
		{"reversal", "PAYMENT.CAPTURE.REVERSED", "refund", reversal, []payonce.WebhookTarget{
			{Kind: payonce.KindCharge, ProviderRef: "4L335234718889942", Currency: "USD", State: payonce.LookupFailed, Reversal: true, Code: "REVERSED"},
			{Kind: payonce.KindCapture, ProviderRef: "4L335234718889942", Currency: "USD", State: payonce.LookupFailed, Reversal: true, Code: "REVERSED"}}},
		{"authorization created", "PAYMENT.AUTHORIZATION.CREATED", "authorization", authorization("CREATED"),
			chargeTargets(payonce.LookupSucceeded, 1000, "0VF52814937998046", "5O190127TN364715T")},
		{"authorization pending", "PAYMENT.AUTHORIZATION.CREATED", "authorization", authorization("PENDING"),
			chargeTargets(payonce.LookupProcessing, 1000, "0VF52814937998046", "5O190127TN364715T")},
		{"authorization voided", "PAYMENT.AUTHORIZATION.VOIDED", "authorization", authorization("VOIDED"), append(
			chargeTargets(payonce.LookupSucceeded, 1000, "0VF52814937998046", "5O190127TN364715T"),
			payonce.WebhookTarget{Kind: payonce.KindCapture, PaymentRef: "0VF52814937998046", Currency: "USD", State: payonce.LookupFailed, Code: "VOIDED"},
			payonce.WebhookTarget{Kind: payonce.KindCancel, ProviderRef: "0VF52814937998046", PaymentRef: "0VF52814937998046", Currency: "USD",
				State: payonce.LookupSucceeded})},
		{"order completed, captured", "CHECKOUT.ORDER.COMPLETED", "checkout-order",
			completedOrder("CAPTURE", `{"captures":[`+orderCapture("COMPLETED")+`]}`),
			chargeTargets(payonce.LookupSucceeded, 1000, "3C679366HH908993F", "5O190127TN364715T")},
		{"order completed, authorized", "CHECKOUT.ORDER.COMPLETED", "checkout-order",
			completedOrder("AUTHORIZE", `{"authorizations":[`+authorization("CREATED")+`]}`),
			chargeTargets(payonce.LookupSucceeded, 1000, "0VF52814937998046", "5O190127TN364715T")},
		{"order completed, capture declined", "CHECKOUT.ORDER.COMPLETED", "checkout-order",
			completedOrder("CAPTURE", `{"captures":[`+orderCapture("DECLINED")+`]}`), func() []payonce.WebhookTarget {
				ts := chargeTargets(payonce.LookupFailed, 1000, "3C679366HH908993F", "5O190127TN364715T")
				for i := range ts {
					ts[i].Code = "DECLINED"
				}
				return ts
			}()},
		{"another type", "CUSTOMER.DISPUTE.CREATED", "dispute", `{"dispute_id":"PP-D-1"}`, nil},
		{"approved order: nothing happened yet", "CHECKOUT.ORDER.APPROVED", "checkout-order", completedOrder("CAPTURE", `null`), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWebhookFixture(t, nil)
			f.api.holds(tc.rtype, tc.resource)
			evs, err := f.parse(f.signed(ppEvent("WH-2WR32451HC0233532-67976317FL4543714", tc.typ, tc.rtype, tc.resource)))
			require.NoError(t, err)
			require.Len(t, evs, 1)
			require.Equal(t, "WH-2WR32451HC0233532-67976317FL4543714", evs[0].ID)
			require.Equal(t, tc.typ, evs[0].Type)
			require.Empty(t, evs[0].Unreadable)
			require.Equal(t, tc.want, noMessages(evs[0].Targets))
		})
	}
}

// A reversal says why: its message names the capture.
func TestWebhookReversalMessage(t *testing.T) {
	f := newWebhookFixture(t, nil)
	f.api.holds("refund", reversal)
	evs, err := f.parse(f.signed(ppEvent("WH-R", "PAYMENT.CAPTURE.REVERSED", "refund", reversal)))
	require.NoError(t, err)
	require.Contains(t, evs[0].Targets[0].Message, "capture 4L335234718889942 reversed by PayPal")
}

// A verified event the adapter cannot read is recorded as unreadable
// (acknowledged, for an operator), never refused over and over.
func TestWebhookUnreadableEvents(t *testing.T) {
	for _, tc := range []struct{ name, typ, rtype, resource, want string }{
		{"amount not a number", "PAYMENT.CAPTURE.COMPLETED", "capture", strings.Replace(orderCapture("COMPLETED"), `"10.00"`, `"ten"`, 1), "not a decimal number"},
		{"no resource", "PAYMENT.CAPTURE.COMPLETED", "capture", `null`, "not a payment object"},
		{"resource id not a string", "PAYMENT.AUTHORIZATION.VOIDED", "authorization", `{"id":7}`, "not a payment object"},
		{"reversal names no capture", "PAYMENT.CAPTURE.REVERSED", "refund", `{"id":"R1","status":"COMPLETED"}`, "names no capture"},
		{"reversal not completed", "PAYMENT.CAPTURE.REVERSED", "refund", strings.Replace(reversal, `"COMPLETED"`, `"PENDING"`, 1), "does not show money pulled back"},
		{"reversed capture not refunded", "PAYMENT.CAPTURE.REVERSED", "capture", orderCapture("COMPLETED"), "does not show money pulled back"},
		{"order without id", "CHECKOUT.ORDER.COMPLETED", "checkout-order", `{"status":"COMPLETED"}`, "not an order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWebhookFixture(t, nil)
			f.api.holds(tc.rtype, tc.resource)
			evs, err := f.parse(f.signed(ppEvent("WH-U", tc.typ, tc.rtype, tc.resource)))
			require.NoError(t, err)
			require.Len(t, evs, 1)
			require.Contains(t, evs[0].Unreadable, tc.want)
			require.Empty(t, evs[0].Targets)
		})
	}
}

// A signed body that is not an event is malformed (400, nothing recorded).
func TestWebhookMalformedBodies(t *testing.T) {
	for _, body := range []string{``, `[`, `[]`, `{"event_type":"PAYMENT.CAPTURE.COMPLETED"}`, `{"id":"WH-1"}`, `{"id":"WH-\u0000","event_type":"X"}`} {
		f := newWebhookFixture(t, nil)
		evs, err := f.parse(f.signed(body))
		require.Nil(t, evs, body)
		require.True(t, errors.Is(err, payonce.ErrWebhookMalformed), "%q: %v", body, err)
	}
}

// An order: charge's order carries the merchant's custom_id and
// invoice_id: unless both are payonce's form (lower-case UUIDs version 5:
// an operation id and a key of some generation) the charge is named by id
// and key WITHOUT a reference, so that a target whose id is not payonce's
// never falls back to an operation of payonce's by reference. payonce's
// own ids carry the payment's id at every generation (a resend's charge
// settled by webhook records its authorization or capture; the ledger
// tells the generation by the key).
func TestWebhookChargeIDsCarryTheRefOnlyWhenPayonces(t *testing.T) {
	const keyGen1 = "6c1d7f2a-9b8e-5d4c-a3b2-1f0e9d8c7b6a"
	for _, tc := range []struct {
		name, custom, invoice, ref string
	}{
		{"merchant's ids", "29b0b044-fbfe-4325-952e-20000d4a6caf", "INV-1001", ""},
		{"merchant's equal ids, not a UUID v5", "order-1001", "order-1001", ""},
		{"merchant's equal UUID v4", "29b0b044-fbfe-4325-952e-20000d4a6caf", "29b0b044-fbfe-4325-952e-20000d4a6caf", ""},
		{"payonce's id, merchant's invoice", opCharge, "INV-1001", ""},
		{"payonce's ids in upper case", strings.ToUpper(opCharge), strings.ToUpper(keyGen1), ""},
		{"payonce's later generation", opCharge, keyGen1, "3C679366HH908993F"},
		{"payonce's generation 0", opCharge, keyChg, "3C679366HH908993F"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newWebhookFixture(t, nil)
			res := strings.NewReplacer(`"custom_id":"`+opCharge+`"`, `"custom_id":"`+tc.custom+`"`,
				`"invoice_id":"`+keyChg+`"`, `"invoice_id":"`+tc.invoice+`"`).Replace(orderCapture("COMPLETED"))
			f.api.holds("capture", res)
			evs, err := f.parse(f.signed(ppEvent("WH-M", "PAYMENT.CAPTURE.COMPLETED", "capture", res)))
			require.NoError(t, err)
			require.Equal(t, []payonce.WebhookTarget{
				{Kind: payonce.KindCharge, OperationID: tc.custom, Key: tc.invoice, ProviderRef: tc.ref, Amount: 1000, Currency: "USD", State: payonce.LookupSucceeded},
				{Kind: payonce.KindCharge, ProviderRef: "3C679366HH908993F", Amount: 1000, Currency: "USD", State: payonce.LookupSucceeded},
				{Kind: payonce.KindCharge, ProviderRef: "5O190127TN364715T", Amount: 1000, Currency: "USD", State: payonce.LookupSucceeded},
			}, noMessages(evs[0].Targets))
		})
	}
}

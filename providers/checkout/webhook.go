package checkout

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

var _ payonce.WebhookParser = (*Provider)(nil)

// Webhook event types the adapter reads. The names are Checkout.com's
// payment event types (the event lists of test/webhooks_test.go and
// test/workflows_test.go in github.com/checkout/checkout-sdk-go;
// https://www.checkout.com/docs/developer-resources/webhooks/webhook-event-types).
const (
	evtApproved        = "payment_approved"
	evtDeclined        = "payment_declined"
	evtPending         = "payment_pending"
	evtCanceled        = "payment_canceled"
	evtExpired         = "payment_expired"
	evtCaptured        = "payment_captured"
	evtCaptureDeclined = "payment_capture_declined"
	evtCapturePending  = "payment_capture_pending"
	evtVoided          = "payment_voided"
	evtVoidDeclined    = "payment_void_declined"
	evtRefunded        = "payment_refunded"
	evtRefundDeclined  = "payment_refund_declined"
	evtRefundPending   = "payment_refund_pending"

	// signatureHeader carries the hex HMAC-SHA256 of the raw body, keyed
	// with the webhook's signature key ("We generate the HMAC by hashing
	// the contents of the webhook notification using the key you provide
	// in your workflow's webhook action, and then send it in the
	// hex-encoded (Base16) Cko-Signature header",
	// https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver).
	signatureHeader = "Cko-Signature"
)

// webhookEvent is a Checkout.com webhook notification. Older notifications
// carry created_on, workflow ones timestamp
// (https://www.checkout.com/docs/developer-resources/webhooks/webhook-event-types/payment_captured).
// data is the payment: id (pay_...), action_id (the action the event is
// about), reference, amount, currency, response_code/summary, metadata. On
// an action's event (payment_captured, payment_refunded, ...) the
// reference and metadata are the payment's (Checkout.com's examples show
// the payment request's reference and metadata there:
// https://www.checkout.com/docs/workflows/webhook-event-types/payment_refunded),
// and amount is the action's: Checkout.com's own WooCommerce plugin reads
// payment_captured's and payment_refunded's data.amount as the amount
// captured or refunded, to tell a partial capture or refund
// (checkout/checkout-woocommerce-plugin,
// includes/class-wc-gateway-checkout-com-webhook.php).
type webhookEvent struct {
	ID        string       `json:"id"`
	Type      string       `json:"type"`
	CreatedOn string       `json:"created_on"`
	Timestamp string       `json:"timestamp"`
	Data      *webhookData `json:"data"`
}

type webhookData struct {
	ID        string `json:"id"`
	ActionID  string `json:"action_id"`
	Reference string `json:"reference"`
	// Amount is read only on the payment events the adapter maps (see
	// amount): other event types may carry other shapes.
	Amount          json.RawMessage `json:"amount"`
	Currency        string          `json:"currency"`
	ResponseCode    string          `json:"response_code"`
	ResponseSummary string          `json:"response_summary"`
	Metadata        map[string]any  `json:"metadata"`
}

// ParseWebhook verifies a delivery and reads its event
// (payonce.WebhookParser): the Authorization header must be
// Config.WebhookAuthorization when that is set (else
// payonce.ErrWebhookCredentials, 401), and Cko-Signature the hex
// HMAC-SHA256 of the raw body keyed with Config.WebhookSecret.
//
// The event's id (evt_...) is its identity. data.id is the payment
// (pay_...); for an action's event (capture, void, refund) data.action_id
// is the action (act_...), which is what the adapter records as the
// operation's ProviderRef (Classify records it), so a target matches by it, and
// by the payment (PaymentRef) when the answer was lost. What each type
// says, by the same rules as a lookup (chargeState, actionState in
// states.go):
//
//	payment_approved            charge succeeded
//	payment_declined            charge failed (response_code as the decline code)
//	payment_pending             charge processing
//	payment_canceled, _expired  charge: a lookup only (whether it was authorized first is not in the event)
//	payment_captured            capture succeeded; the charge succeeded
//	payment_capture_declined    capture failed, a reversal (it may follow a capture reported accepted)
//	payment_capture_pending     capture processing
//	payment_voided              cancel succeeded
//	payment_void_declined       cancel failed
//	payment_refunded            refund succeeded
//	payment_refund_declined     refund failed
//	payment_refund_pending      refund processing
//	anything else               no targets (recorded, acknowledged)
//
// The operation id comes from the metadata payonce writes (payonce_op)
// when its payonce_kind is the target's kind. For a payment's own events
// the reference (payonce sends the operation id as the reference) counts
// too, unless the metadata names another kind. For an action's events it
// does not: Checkout.com's examples show the payment's reference and
// metadata there, and a charge's operation id must not be taken for the
// capture's or refund's.
//
// Each target also carries what the lookup checks the object against
// (adapterkit.Belongs), as far as the event carries it:
//
//	charge (payment events)   Key: payonce_key when payonce_kind is charge;
//	                          Amount, Currency: data.amount, data.currency
//	charge (payment_captured) Key, Currency as above; no Amount (data.amount
//	                          is the capture's, not the payment's)
//	capture, refund           Amount: data.amount (the action's); Key only
//	                          from metadata whose payonce_kind is the
//	                          action's (the events carry the payment's
//	                          metadata, so usually none); no Currency
//	                          (the lookup compares none for actions)
//	cancel                    Key as for the actions; no Amount (a void
//	                          releases whatever was authorized) or Currency
//
// A data.amount that is not a non-negative integer, and a payonce_key
// holding a NUL byte, make a payment event Malformed: nothing that cannot
// be recorded is handed on.
func (p *Provider) ParseWebhook(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	if p.webhookSecret == "" {
		return nil, adapterkit.Unauthenticated(p.Name(), "no signature key is configured; set checkout.Config.WebhookSecret to the webhook's signature key")
	}
	if p.webhookAuth != "" {
		// Compared in constant time: the header is a shared secret.
		if got := r.Header.Get("Authorization"); got == "" || !adapterkit.EqualSecret(got, string(p.webhookAuth)) {
			return nil, adapterkit.Credentials(p.Name(), "the Authorization header is missing or is not checkout.Config.WebhookAuthorization")
		}
	}
	sig := r.Header.Get(signatureHeader)
	if sig == "" {
		return nil, adapterkit.Unauthenticated(p.Name(), "no %s header", signatureHeader)
	}
	// Over the raw body, as Checkout.com asks: a body decoded and encoded
	// again may differ in a byte and fail.
	if !adapterkit.EqualHex(adapterkit.HMACSHA256([]byte(p.webhookSecret), body), sig) {
		return nil, adapterkit.Unauthenticated(p.Name(), "%s does not match the body (wrong WebhookSecret, or the body was changed)", signatureHeader)
	}
	var e webhookEvent
	if err := adapterkit.DecodeWebhook(p.Name(), body, &e); err != nil {
		return nil, err
	}
	ev := payonce.WebhookEvent{ID: e.ID, Type: e.Type, OccurredAt: occurredAt(e)}
	if ev.ID != "" && ev.Type != "" {
		targets, err := p.eventTargets(e)
		if err != nil {
			return nil, err
		}
		ev.Targets = targets
	}
	return adapterkit.OneEvent(p.Name(), ev, p.scrub)
}

// occurredAt is created_on, or else timestamp; zero when neither parses.
func occurredAt(e webhookEvent) time.Time {
	for _, s := range []string{e.CreatedOn, e.Timestamp} {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// eventTargets maps the event by its type (see ParseWebhook).
func (p *Provider) eventTargets(e webhookEvent) ([]payonce.WebhookTarget, error) {
	var (
		approved, declined = true, false
		kind               payonce.Kind
		act                *bool // nil: pending
	)
	switch e.Type {
	case evtApproved, evtDeclined, evtPending, evtCanceled, evtExpired:
		kind = payonce.KindCharge
	case evtCaptured:
		kind, act = payonce.KindCapture, &approved
	case evtCaptureDeclined:
		kind, act = payonce.KindCapture, &declined
	case evtCapturePending:
		kind = payonce.KindCapture
	case evtVoided:
		kind, act = payonce.KindCancel, &approved
	case evtVoidDeclined:
		kind, act = payonce.KindCancel, &declined
	case evtRefunded:
		kind, act = payonce.KindRefund, &approved
	case evtRefundDeclined:
		kind, act = payonce.KindRefund, &declined
	case evtRefundPending:
		kind = payonce.KindRefund
	default:
		return nil, nil
	}
	d := e.Data
	if d == nil || d.ID == "" {
		return nil, adapterkit.Malformed(p.Name(), "event %s (%s) has no data.id (the payment)", p.scrub(e.ID), p.scrub(e.Type))
	}
	amt, err := d.amount()
	if err == nil && (strings.IndexByte(metaString(d.Metadata, MetaKey), 0) >= 0 || strings.IndexByte(d.Currency, 0) >= 0) {
		err = errors.New("payonce_key or currency holds a NUL byte")
	}
	if err != nil {
		return nil, adapterkit.Malformed(p.Name(), "event %s (%s): %s", p.scrub(e.ID), p.scrub(e.Type), err)
	}

	if kind == payonce.KindCharge {
		t := payonce.WebhookTarget{Kind: kind, OperationID: paymentOp(d), ProviderRef: d.ID,
			Key: ownKey(d.Metadata, kind), Amount: amt, Currency: d.Currency}
		var st adapterkit.State
		switch e.Type {
		case evtApproved:
			st = p.chargeState(payment{ID: d.ID, Status: statusAuthorized, Approved: &approved})
		case evtDeclined:
			st = p.chargeState(payment{ID: d.ID, Status: statusDeclined, Approved: &declined,
				ResponseCode: d.ResponseCode, ResponseSummary: d.ResponseSummary})
		case evtPending:
			st = p.chargeState(payment{ID: d.ID, Status: statusPending})
		default: // canceled, expired
			// Succeeded if it was authorized first, failed if not
			// (chargeState); the event does not say which, so it only
			// makes the operation due for a lookup, which asks the actions.
			t.LookupOnly = true
			t.State = payonce.LookupProcessing
			t.Message = "checkout: payment " + e.Type[len("payment_"):] + "; a lookup decides whether it was authorized first"
			return []payonce.WebhookTarget{t}, nil
		}
		setState(&t, st)
		return []payonce.WebhookTarget{t}, nil
	}

	t := payonce.WebhookTarget{Kind: kind, OperationID: actionOp(d, kind), ProviderRef: d.ActionID, PaymentRef: d.ID,
		Key: ownKey(d.Metadata, kind)}
	if kind != payonce.KindCancel {
		t.Amount = amt
	}
	a := action{ID: d.ActionID, Type: actionType(kind), Approved: act, ResponseCode: d.ResponseCode, ResponseSummary: d.ResponseSummary}
	setState(&t, p.actionState(a))
	ts := []payonce.WebhookTarget{t}
	switch e.Type {
	case evtCaptureDeclined:
		// A capture answered 202 is recorded as accepted (processing) or
		// success; its decline arrives later and undoes that.
		ts[0].Reversal = true
	case evtCaptured:
		// A captured payment was authorized: the charge succeeded.
		ch := payonce.WebhookTarget{Kind: payonce.KindCharge, OperationID: ownOp(d.Metadata, payonce.KindCharge), ProviderRef: d.ID,
			Key: ownKey(d.Metadata, payonce.KindCharge), Currency: d.Currency}
		setState(&ch, p.chargeState(payment{ID: d.ID, Status: statusCaptured, Approved: &approved}))
		ts = append(ts, ch)
	}
	return ts, nil
}

// setState copies a State (already scrubbed) into t; a state that does
// not decide is processing (adapterkit.WebhookState).
func setState(t *payonce.WebhookTarget, st adapterkit.State) {
	t.State = adapterkit.WebhookState(st)
	if t.State == payonce.LookupFailed {
		t.Code, t.DeclineCode = st.Code, st.Decline
	}
	t.Message = st.Message
}

// metaString is a metadata value as text (Checkout.com metadata values may
// be numbers or booleans).
func metaString(md map[string]any, k string) string {
	v, ok := md[k]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// ownOp is payonce_op when payonce_kind is k: metadata payonce wrote on an
// object it created for an operation of kind k.
func ownOp(md map[string]any, k payonce.Kind) string {
	if metaString(md, MetaKind) != string(k) {
		return ""
	}
	return metaString(md, MetaOperation)
}

// ownKey is payonce_key when payonce_kind is k: the idempotency key of the
// attempt that created the object, on metadata payonce wrote for an
// operation of kind k (request.go).
func ownKey(md map[string]any, k payonce.Kind) string {
	if metaString(md, MetaKind) != string(k) {
		return ""
	}
	return metaString(md, MetaKey)
}

// amount is data.amount in minor units: 0 when absent or null ("not
// given"), an error when it is not a non-negative integer (Checkout.com
// amounts are integers in minor units).
func (d *webhookData) amount() (int64, error) {
	raw := bytes.TrimSpace(d.Amount)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("data.amount is not a non-negative integer (minor units)")
	}
	return n, nil
}

// paymentOp is the charge's operation id on a payment's own event: its
// payonce_op, else its reference (which payonce sets to the operation id),
// unless the metadata says the payment is another kind's object.
func paymentOp(d *webhookData) string {
	if op := ownOp(d.Metadata, payonce.KindCharge); op != "" {
		return op
	}
	if k := metaString(d.Metadata, MetaKind); k != "" && k != string(payonce.KindCharge) {
		return ""
	}
	return d.Reference
}

// actionOp is an action's operation id: only the metadata payonce wrote on
// the action itself (its payonce_kind is the action's kind), never the
// reference, which may be the payment's (see ParseWebhook).
func actionOp(d *webhookData, k payonce.Kind) string { return ownOp(d.Metadata, k) }

package mocks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"
)

// Checkout.com events the fake emits (payment event types,
// https://www.checkout.com/docs/developer-resources/webhooks/webhook-event-types;
// the event lists of test/webhooks_test.go in
// github.com/checkout/checkout-sdk-go):
//
//	payment_approved          a payment was authorized
//	payment_declined          a payment was declined
//	payment_pending           a payment waits (3-D Secure)
//	payment_captured          a capture (at once with capture true, or POST .../captures)
//	payment_capture_declined  DeclineCapture: an accepted capture was declined
//	payment_voided            a void
//	payment_refunded          a refund was approved
//	payment_refund_declined   a refund was declined
const (
	ckoEvtApproved        = "payment_approved"
	ckoEvtDeclined        = "payment_declined"
	ckoEvtPending         = "payment_pending"
	ckoEvtCaptured        = "payment_captured"
	ckoEvtCaptureDeclined = "payment_capture_declined"
	ckoEvtVoided          = "payment_voided"
	ckoEvtRefunded        = "payment_refunded"
	ckoEvtRefundDeclined  = "payment_refund_declined"
	// ckoSignatureHeader carries the hex HMAC-SHA256 of the raw body keyed
	// with the webhook's signature key
	// (https://www.checkout.com/docs/developer-resources/webhooks/manage-webhooks/set-up-your-webhook-receiver).
	ckoSignatureHeader = "Cko-Signature"
	// The answer of a declined capture in DeclineCapture, as in
	// Checkout.com's payment_capture_declined example
	// (https://www.checkout.com/docs/workflows/webhook-event-types/payment_capture_declined).
	ckoCaptureDeclinedCode    = "20006"
	ckoCaptureDeclinedSummary = "Error / Invalid Request Parameters"
	ckoActionCapture          = "Capture"
)

// checkoutEvent is a Checkout.com webhook notification in the shape of its
// webhook examples (id, type, created_on, data, _links;
// https://www.checkout.com/docs/reporting-and-insights/webhooks/webhook-examples/payment_captured).
type checkoutEvent struct {
	ID        string                  `json:"id"`
	Type      string                  `json:"type"`
	CreatedOn string                  `json:"created_on"`
	Data      checkoutEventData       `json:"data"`
	Links     map[string]checkoutLink `json:"_links"`
}

// checkoutEventData is the payment an event is about: its id, amount,
// currency, reference and metadata (the metadata payonce writes, payonce_op,
// payonce_key and payonce_kind, included), as in Checkout.com's examples
// (https://www.checkout.com/docs/workflows/webhook-event-types/payment_captured,
// .../payment_refunded). For an action's event (capture, void, refund)
// ActionID, Amount, ProcessedOn and the response are the action's (Checkout.com's
// own WooCommerce plugin reads payment_captured's and payment_refunded's
// amount as the amount captured or refunded:
// checkout/checkout-woocommerce-plugin,
// includes/class-wc-gateway-checkout-com-webhook.php); Reference, Currency
// and Metadata are the payment's.
type checkoutEventData struct {
	ID              string            `json:"id"`
	ActionID        string            `json:"action_id,omitempty"`
	Reference       string            `json:"reference,omitempty"`
	Amount          int64             `json:"amount"`
	Currency        string            `json:"currency"`
	ProcessedOn     string            `json:"processed_on,omitempty"`
	ResponseCode    string            `json:"response_code,omitempty"`
	ResponseSummary string            `json:"response_summary,omitempty"`
	Balances        *checkoutBalances `json:"balances,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
}

// ckoSignWebhook returns the signing of every delivery: Cko-Signature, the
// hex HMAC-SHA256 of the raw body keyed with the signature key.
func ckoSignWebhook(secret string) func(body []byte, h http.Header) {
	return func(body []byte, h http.Header) {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		h.Set(ckoSignatureHeader, hex.EncodeToString(mac.Sum(nil)))
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
}

// emitLocked queues the event typ about p, and about act when it is an
// action's event (nil for a payment's own event). h.mu must be held.
func (h *CheckoutHandler) emitLocked(now time.Time, typ string, p *ckoPayment, act *checkoutAction) {
	if !h.webhooksOn() {
		return
	}
	id := ckoID(h.eventIDs, "evt_")
	d := checkoutEventData{
		ID: p.p.ID, Reference: p.p.Reference, Amount: p.p.Amount, Currency: p.p.Currency,
		ProcessedOn: p.p.ProcessedOn, ResponseCode: p.p.ResponseCode, ResponseSummary: p.p.ResponseSummary,
		ActionID: p.p.ActionID, Metadata: maps.Clone(p.p.Metadata),
	}
	if act != nil {
		d.ActionID, d.Amount, d.ProcessedOn = act.ID, act.Amount, act.ProcessedOn
		d.ResponseCode, d.ResponseSummary = act.ResponseCode, act.ResponseSummary
	}
	if b := p.p.Balances; b != nil && p.p.Status != "Pending" && p.p.Status != "Declined" {
		snapshot := *b
		d.Balances = &snapshot
	}
	ev := checkoutEvent{
		ID: id, Type: typ, CreatedOn: ckoTime(now), Data: d,
		Links: map[string]checkoutLink{
			"self":    {Href: "https://api.sandbox.checkout.com/events/" + id},
			"payment": {Href: "https://api.sandbox.checkout.com/payments/" + p.p.ID},
		},
	}
	body, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot render a Checkout.com event: %v", err))
	}
	h.emitWebhook(body)
}

// emitActionLocked queues the event of the action just appended to p (the
// last of p.actions): its type follows the action's type and approval.
// h.mu must be held.
func (h *CheckoutHandler) emitActionLocked(now time.Time, p *ckoPayment) {
	act := p.actions[len(p.actions)-1]
	var typ string
	switch {
	case act.Type == ckoActionCapture && act.Approved:
		typ = ckoEvtCaptured
	case act.Type == ckoActionCapture:
		typ = ckoEvtCaptureDeclined
	case act.Type == "Void":
		typ = ckoEvtVoided
	case act.Type == "Refund" && act.Approved:
		typ = ckoEvtRefunded
	case act.Type == "Refund":
		typ = ckoEvtRefundDeclined
	default:
		return
	}
	h.emitLocked(now, typ, p, &act)
}

// DeclineCapture makes the accepted capture actionID (act_...) declined,
// as Checkout.com can: a capture is answered 202 Accepted and processed
// afterwards, and its outcome may be payment_capture_declined
// (https://www.checkout.com/docs/workflows/webhook-event-types/payment_capture_declined).
// The action becomes unapproved (response 20006), the payment returns to
// Authorized with the amount capturable and voidable again, and
// payment_capture_declined is emitted. It fails for an action that is not
// an approved capture, or whose payment was refunded since.
func (h *CheckoutHandler) DeclineCapture(actionID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range h.paymentList {
		for i := range p.actions {
			a := &p.actions[i]
			if a.ID != actionID {
				continue
			}
			if a.Type != ckoActionCapture || !a.Approved {
				return fmt.Errorf("mocks: DeclineCapture: action %s is a %s (approved %v); pass the act_ id of an approved capture", actionID, a.Type, a.Approved)
			}
			b := p.p.Balances
			if b.TotalRefunded > 0 {
				return fmt.Errorf("mocks: DeclineCapture: payment %s was refunded since the capture; decline the capture before refunding", p.p.ID)
			}
			a.Approved = false
			a.ResponseCode, a.ResponseSummary = ckoCaptureDeclinedCode, ckoCaptureDeclinedSummary
			b.TotalCaptured -= a.Amount
			b.AvailableToRefund = b.TotalCaptured
			b.AvailableToCapture = b.TotalAuthorized - b.TotalCaptured
			b.AvailableToVoid = b.AvailableToCapture
			p.p.Status = "Authorized"
			if b.TotalCaptured > 0 {
				p.p.Status = "Partially Captured"
			}
			p.p.Links = h.links(p.p.ID, "capture", "void")
			act := *a
			h.emitLocked(h.core.now(), ckoEvtCaptureDeclined, p, &act)
			return nil
		}
	}
	return fmt.Errorf("mocks: DeclineCapture: no action %q; pass the act_ id a capture answered", actionID)
}

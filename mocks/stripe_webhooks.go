package mocks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

// Stripe events the fake emits (EventType constants in event.go of
// github.com/stripe/stripe-go; https://docs.stripe.com/api/events/types):
//
//	payment_intent.succeeded                  a confirmation or capture took the money
//	payment_intent.amount_capturable_updated  a manual-capture confirmation authorized it
//	payment_intent.payment_failed             a confirmation was declined
//	payment_intent.canceled                   a cancel
//	charge.refunded, refund.created           a refund
//	refund.updated, refund.failed             FailRefund: a refund failed after it succeeded
//	charge.refund.updated                     FailRefund, on an endpoint of an API version
//	                                          before 2024-10-28 (SetWebhookAPIVersion)
//
// The fake has no flow that leaves a PaymentIntent processing (its test
// cards answer at once), so it never emits payment_intent.processing.
const (
	stripeEvtIntentSucceeded   = "payment_intent.succeeded"
	stripeEvtIntentCapturable  = "payment_intent.amount_capturable_updated"
	stripeEvtIntentFailed      = "payment_intent.payment_failed"
	stripeEvtIntentCanceled    = "payment_intent.canceled"
	stripeEvtChargeRefunded    = "charge.refunded"
	stripeEvtRefundCreated     = "refund.created"
	stripeEvtRefundUpdated     = "refund.updated"
	stripeEvtRefundFailed      = "refund.failed"
	stripeEvtChargeRefundUpd   = "charge.refund.updated"
	stripeSignatureHeader      = "Stripe-Signature"
	stripeWebhookPendingCount  = 1
	stripeEventIDLength        = 24
	stripeFailureTxnIDLength   = 24
	stripeRefundStatusFailed   = "failed"
	stripeRefundStatusPending  = "pending"
	stripeRefundStatusSucceded = "succeeded"
)

// stripeRefundFailureReasons are the failure_reason values FailRefund
// accepts: the values Stripe documents for Refund.failure_reason
// (stripe-go refund.go, Refund.FailureReason).
var stripeRefundFailureReasons = []string{
	"lost_or_stolen_card", "expired_or_canceled_card", "charge_for_pending_refund_disputed",
	"insufficient_funds", "declined", "merchant_request", "unknown",
}

// stripeEvent is a Stripe Event as a webhook delivers it
// (https://docs.stripe.com/api/events/object; stripe-go event.go, Event):
// Data.Object is the object the event is about, rendered exactly as the
// fake's GET of it answers at the moment of the change.
type stripeEvent struct {
	ID              string              `json:"id"`
	Object          string              `json:"object"`
	APIVersion      string              `json:"api_version"`
	Created         int64               `json:"created"`
	Data            stripeEventData     `json:"data"`
	Livemode        bool                `json:"livemode"`
	PendingWebhooks int64               `json:"pending_webhooks"`
	Request         *stripeEventRequest `json:"request"`
	Type            string              `json:"type"`
}

// stripeEventData is an event's data: the object, and for *.updated
// events the attributes it had before.
type stripeEventData struct {
	Object             json.RawMessage `json:"object"`
	PreviousAttributes map[string]any  `json:"previous_attributes,omitempty"`
}

// stripeEventRequest names the API request that caused an event; both
// fields are null for an event nobody's request caused (a refund failing
// later).
type stripeEventRequest struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotency_key"`
}

// MarshalJSON renders the empty fields as null, as Stripe does.
func (r stripeEventRequest) MarshalJSON() ([]byte, error) {
	return stripewire.MarshalWithNulls(r, "id", "idempotency_key")
}

// The API versions whose changes to events the fake renders.
const (
	// stripeVersionRefundEvents: refund.created, .updated and .failed
	// "now apply to all types of refunds ... Previously, these events were
	// only sent for refunds without a corresponding charge"
	// (https://docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update).
	// Before it a card refund's changes are sent as charge.refund.updated,
	// whose object is the Refund (https://docs.stripe.com/api/refunds,
	// Events; stripe-go event.go, EventTypeChargeRefundUpdated).
	stripeVersionRefundEvents = "2024-10-28"
	// stripeVersionNoEmbeddedLists: "The Charge object no longer
	// auto-expands refunds by default"
	// (https://docs.stripe.com/changelog/2022-11-15/deprecates-charges-auto-expand),
	// and the PaymentIntent's charges list gives way to latest_charge
	// (https://docs.stripe.com/changelog/2022-11-15/removes-charges-attribute-paymentintent;
	// stripe-go 74.0.0: "Removed Charges field on PaymentIntent and
	// replace it with LatestCharge").
	stripeVersionNoEmbeddedLists = "2022-11-15"
)

// checkStripeAPIVersion reports whether v is a Stripe API version: a date
// (2024-06-20), optionally followed by a release name (2024-10-28.acacia).
func checkStripeAPIVersion(field, v string) error {
	date, name, dotted := strings.Cut(v, ".")
	_, err := time.Parse(time.DateOnly, date)
	if err != nil || dotted && (name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz") != "") {
		return fmt.Errorf("mocks: %s %q is not a Stripe API version; use a date such as \"2024-06-20\" or a release such as \"2024-10-28.acacia\"", field, v)
	}
	return nil
}

// stripeVersionBefore reports whether API version v is older than the
// version released on date (YYYY-MM-DD); v is a checked version.
func stripeVersionBefore(v, date string) bool { return v[:len(time.DateOnly)] < date }

// SetWebhookAPIVersion sets the API version of the fake's webhook
// endpoint, as when an endpoint is upgraded or rolled back
// (https://docs.stripe.com/webhooks/versioning): events queued after the
// call render as version v does where versions differ about refunds:
//
//   - before 2024-10-28 a card refund (every refund the fake makes has a
//     charge) emits charge.refunded but no refund.created, and a refund
//     failing after it succeeded (FailRefund) emits charge.refund.updated
//     (the Refund, with previous_attributes status "succeeded") instead of
//     refund.updated and refund.failed;
//   - before 2022-11-15 the Charge of charge.refunded embeds its refunds
//     (a list), and an event's PaymentIntent embeds its charges (a list)
//     instead of latest_charge.
//
// Every event's api_version is v. The fake's API answers keep
// StripeAPIVersion. An error says how to spell a version.
func (s *StripeHandler) SetWebhookAPIVersion(v string) error {
	if err := checkStripeAPIVersion("SetWebhookAPIVersion: version", v); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookVersion = v
	return nil
}

// refundEventsLocked reports whether the endpoint's version sends
// refund.* events for refunds with a charge. s.mu must be held.
func (s *StripeHandler) refundEventsLocked() bool {
	return !stripeVersionBefore(s.webhookVersion, stripeVersionRefundEvents)
}

// renderLocked is obj as an event of the endpoint's version carries it.
// s.mu must be held.
func (s *StripeHandler) renderLocked(obj any) json.RawMessage {
	raw := mustMarshal(obj)
	if !stripeVersionBefore(s.webhookVersion, stripeVersionNoEmbeddedLists) {
		return raw
	}
	switch o := obj.(type) {
	case stripewire.PaymentIntent:
		var charges []stripewire.Charge
		if in := s.intents[o.ID]; in != nil {
			for i := len(in.chargeIDs) - 1; i >= 0; i-- { // newest first
				if ch := s.chargeObjs[in.chargeIDs[i]]; ch != nil {
					charges = append(charges, *ch)
				}
			}
		}
		return withMembers(raw, "latest_charge", "charges", stripeSublist(charges, "/v1/charges?payment_intent="+o.ID))
	case stripewire.Charge:
		var refunds []stripewire.Refund
		for i := len(s.refundOrder) - 1; i >= 0; i-- { // newest first
			if re := s.refundOrder[i]; re.re.Charge == o.ID {
				refunds = append(refunds, re.re)
			}
		}
		return withMembers(raw, "", "refunds", stripeSublist(refunds, "/v1/charges/"+o.ID+"/refunds"))
	}
	return raw
}

// stripeSublist is a list embedded in an object, as API versions before
// 2022-11-15 render one: every item, has_more false.
func stripeSublist[T any](items []T, url string) stripewire.List[T] {
	if items == nil {
		items = []T{}
	}
	return stripewire.List[T]{Object: "list", Data: items, URL: url}
}

// withMembers is the JSON object raw without its member drop (none when
// "") and with its member add set to v.
func withMembers(raw json.RawMessage, drop, add string, v any) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(fmt.Sprintf("mocks: a Stripe object is not a JSON object: %v", err))
	}
	if drop != "" {
		delete(m, drop)
	}
	m[add] = mustMarshal(v)
	return mustMarshal(m)
}

// signWebhook returns the signing of every delivery attempt: Stripe's v1
// scheme, "Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret,
// "<t>.<body>")>" (https://docs.stripe.com/webhooks#verify-manually;
// stripe-go webhook/client.go, ComputeSignature and generateHeader). t is
// the fake's clock at the attempt, so a retry carries a new timestamp, as
// at Stripe.
func (s *StripeHandler) signWebhook(secret string) func(body []byte, h http.Header) {
	return func(body []byte, h http.Header) {
		t := strconv.FormatInt(s.core.now().Unix(), 10)
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(t + "."))
		mac.Write(body)
		h.Set(stripeSignatureHeader, "t="+t+",v1="+hex.EncodeToString(mac.Sum(nil)))
		h.Set("Content-Type", "application/json; charset=utf-8")
	}
}

// emitLocked queues the event typ about obj, caused by the request c (nil
// for none), created at now. s.mu must be held, so that events queue in
// the order the changes were made.
func (s *StripeHandler) emitLocked(c *call, now time.Time, typ string, obj any, previous map[string]any) {
	if !s.webhooksOn() {
		return
	}
	raw := s.renderLocked(obj)
	ev := stripeEvent{
		ID:              s.eventID("evt_", stripeEventIDLength),
		Object:          "event",
		APIVersion:      s.webhookVersion,
		Created:         now.Unix(),
		Data:            stripeEventData{Object: raw, PreviousAttributes: previous},
		PendingWebhooks: stripeWebhookPendingCount,
		Request:         &stripeEventRequest{},
		Type:            typ,
	}
	if c != nil {
		ev.Request.ID = c.requestID
		if c.method == http.MethodPost {
			ev.Request.IdempotencyKey = c.key
		}
	}
	body, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot render a Stripe event: %v", err))
	}
	s.emitWebhook(body)
}

// emitIntentLocked queues the event typ about the intent's current state.
func (s *StripeHandler) emitIntentLocked(c *call, in *stripeIntent, typ string) {
	s.emitLocked(c, c.now, typ, in.pi, nil)
}

// FailRefund makes the refund id fail after it succeeded, as a card refund
// can at Stripe days later (the card was closed, lost or stolen;
// https://docs.stripe.com/refunds#failed-refunds): its status becomes
// failed with failure_reason reason and a failure_balance_transaction, the amount counts as unrefunded again on
// its charge and PaymentIntent, and refund.updated then refund.failed are
// emitted; an endpoint of an API version before 2024-10-28 gets
// charge.refund.updated instead (SetWebhookAPIVersion). Only a succeeded
// or pending refund can fail. reason is one of the values Stripe documents
// for a refund's failure_reason: lost_or_stolen_card,
// expired_or_canceled_card, charge_for_pending_refund_disputed,
// insufficient_funds, declined, merchant_request or unknown; another
// reason, or an id that is no such refund, is an error.
func (s *StripeHandler) FailRefund(id, reason string) error {
	return s.failRefund(id, reason, true)
}

// failRefund is FailRefund; announce emits its events.
func (s *StripeHandler) failRefund(id, reason string, announce bool) error {
	if !slices.Contains(stripeRefundFailureReasons, reason) {
		return fmt.Errorf("mocks: FailRefund reason %q is not a Stripe refund failure_reason; use one of %v", reason, stripeRefundFailureReasons)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	re := s.refunds[id]
	if re == nil {
		return fmt.Errorf("mocks: FailRefund: no refund %q; pass the re_ id the fake answered", id)
	}
	prev := re.re.Status
	if prev != stripeRefundStatusSucceded && prev != stripeRefundStatusPending {
		return fmt.Errorf("mocks: FailRefund: refund %s has status %s; only a succeeded or pending refund can fail", id, prev)
	}
	re.re.Status = stripeRefundStatusFailed
	re.re.FailureReason = reason
	re.re.FailureBalanceTransaction = s.core.ids.next("txn_", stripeFailureTxnIDLength)
	if in := s.intents[re.re.PaymentIntent]; in != nil {
		in.refunded -= re.re.Amount
	}
	if ch := s.chargeObjs[re.re.Charge]; ch != nil {
		ch.AmountRefunded -= re.re.Amount
		ch.Refunded = ch.AmountRefunded >= ch.AmountCaptured
	}
	now := s.core.now()
	previous := map[string]any{"status": prev, "failure_reason": nil, "failure_balance_transaction": nil}
	switch {
	case !announce:
		return nil
	case !s.refundEventsLocked():
		// An older endpoint hears of a card refund's change only through
		// its charge (a recorded delivery of API version 2020-03-02:
		// zulip/zulip, zerver/webhooks/stripe/fixtures/refund_event.json).
		s.emitLocked(nil, now, stripeEvtChargeRefundUpd, re.re, previous)
		return nil
	}
	s.emitLocked(nil, now, stripeEvtRefundUpdated, re.re, previous)
	s.emitLocked(nil, now, stripeEvtRefundFailed, re.re, nil)
	return nil
}

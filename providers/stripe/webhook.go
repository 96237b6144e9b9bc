package stripe

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

var _ payonce.WebhookParser = (*Provider)(nil)

// Event types the adapter reads (EventType constants in event.go of
// github.com/stripe/stripe-go; https://docs.stripe.com/api/events/types).
const (
	evtIntentSucceeded          = "payment_intent.succeeded"
	evtIntentPaymentFailed      = "payment_intent.payment_failed"
	evtIntentCanceled           = "payment_intent.canceled"
	evtIntentProcessing         = "payment_intent.processing"
	evtIntentCapturableUpdated  = "payment_intent.amount_capturable_updated"
	evtRefundCreated            = "refund.created"
	evtRefundUpdated            = "refund.updated"
	evtRefundFailed             = "refund.failed"
	evtChargeRefunded           = "charge.refunded"
	evtChargeRefundUpdated      = "charge.refund.updated"
	evtChargeDisputeCreated     = "charge.dispute.created"
	objEvent                    = "event"
	objDispute                  = "dispute"
	signatureHeader             = "Stripe-Signature"
	signatureScheme             = "v1"
	codeDispute                 = "dispute"
	captureMethodManual         = "manual"
	maxSignatureHeaderBytes     = 8 << 10
	maxSignaturesInHeader       = 16
	webhookSecretMissingProblem = "no signing secret is configured; set stripe.Config.WebhookSecret to the endpoint's signing secret (whsec_...)"
)

// event is a Stripe Event (https://docs.stripe.com/api/events/object):
// only what the adapter reads.
type event struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
	Data    struct {
		Object json.RawMessage `json:"object"`
		// PreviousAttributes is "Object containing the names of the
		// updated attributes and their values prior to the event (only
		// included in events of type *.updated)" (Stripe's OpenAPI spec,
		// NotificationEventData.previous_attributes): of those, the adapter
		// reads a refund's previous status (previousStatus). It is decoded only for the events that need
		// it, so that another object's attributes can never make an event
		// unreadable.
		PreviousAttributes json.RawMessage `json:"previous_attributes"`
	} `json:"data"`
}

// webhookCharge is the Charge of charge.refunded, with its refunds: API
// versions before 2022-11-15 embed them as a list (stripe-go charge.go,
// Charge.Refunds); later ones leave them out unless expanded, and from
// 2024-10-28 each refund arrives as its own refund.* event (ParseWebhook).
type webhookCharge struct {
	charge
	Refunds *listOf[refund] `json:"refunds"`
}

// dispute is a Dispute (stripe-go dispute.go: id, object, payment_intent,
// reason, status; https://docs.stripe.com/api/disputes/object). The
// audit lists them (audit.go) and reads created too; a webhook's amount
// and currency are not read (a dispute's amount is its own, not the
// charge's).
type dispute struct {
	ID            string     `json:"id"`
	Object        string     `json:"object"`
	Reason        string     `json:"reason"`
	Status        string     `json:"status"`
	PaymentIntent expandable `json:"payment_intent"`
	// Created is when Stripe created it (Unix seconds): when the issuer
	// opened the inquiry or the chargeback.
	Created int64 `json:"created"`
}

// ParseWebhook verifies a delivery's Stripe-Signature and reads its event
// (payonce.WebhookParser).
//
// Verification follows Stripe (https://docs.stripe.com/webhooks#verify-manually)
// and stripe-go's webhook.ValidatePayload (webhook/client.go): the header is
// "t=<unix seconds>,v1=<hex>[,v1=<hex>...]"; the signature is the hex
// HMAC-SHA256, keyed with the endpoint secret, of "<t>.<raw body>"; any
// one v1 may match (Stripe sends several while a secret is being rolled),
// other schemes (v0) are ignored; a timestamp older than
// Config.WebhookTolerance is refused, so that a captured delivery cannot
// be replayed later. A timestamp in the future is accepted, as stripe-go
// does (it checks only time.Since(t) > tolerance): only Stripe can sign
// one, and the event id makes a second delivery a duplicate anyway.
//
// The event's id (evt_...) is its identity. What each type says:
//
//   - payment_intent.succeeded, .payment_failed, .canceled, .processing,
//     .amount_capturable_updated: the PaymentIntent, read by the same
//     rules as a lookup (chargeVerdict, captureVerdict, cancelVerdict):
//     a charge target (payonce_op when payonce_kind is
//     charge; ProviderRef the pi_ id), and capture and cancel targets
//     (PaymentRef the pi_ id) when the PaymentIntent's state decides them.
//   - refund.created, .updated, .failed, charge.refund.updated, and
//     charge.refunded's embedded refunds: a refund target per Refund
//     (refundVerdict). A refund that failed on refund.failed, failed
//     with a failure_reason, or failed on an update whose
//     previous_attributes say it had succeeded, is a Reversal: Stripe
//     refunds can fail after they succeeded (failure_reason
//     expired_or_canceled_card, lost_or_stolen_card, unknown, ...:
//     stripe-go refund.go, RefundFailureReason).
//   - charge.dispute.created: a Reversal of the charge (Code "dispute").
//   - anything else: an event with no targets (recorded, acknowledged).
//
// Which of these an endpoint receives depends on its API version. Before
// 2024-10-28.acacia, refund.created, .updated and .failed were "only sent
// for refunds without a corresponding charge"
// (https://docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update):
// a card refund is announced by charge.refunded and its later changes,
// a failure included, by charge.refund.updated, whose object is the
// Refund ("Occurs whenever a refund is updated on selected payment
// methods", https://docs.stripe.com/api/refunds; stripe-go event.go,
// EventTypeChargeRefundUpdated; a recorded delivery of API version
// 2020-03-02 in zulip/zulip, zerver/webhooks/stripe/fixtures/refund_event.json,
// carries status failed, failure_reason expired_or_canceled_card and
// previous_attributes status succeeded). Before 2022-11-15, charge.refunded's
// Charge embeds its refunds
// (https://docs.stripe.com/changelog/2022-11-15/deprecates-charges-auto-expand);
// from then until 2024-10-28 it carries none, and names no refund the
// adapter could settle: the refund's own answer, or its lookup, does.
//
// Every target carries the object's own Amount and Currency (the currency
// in upper case, as payonce's requests spell ISO 4217 codes; Stripe
// writes them in lower case), the fields the lookups check with
// adapterkit.Belongs, and the Key (payonce_key) of an object payonce
// created for the target's operation:
//
//	charge    the PaymentIntent's key, amount and currency
//	refund    the Refund's key, amount and currency
//	capture   amount_received of a captured PaymentIntent (0 when the
//	          capture failed: the lookup checks no amount then), currency;
//	          no key: the PaymentIntent carries the charge's
//	cancel    currency only (the lookup checks no amount), no key
//	dispute   none: a dispute's amount is its own, not the charge's
func (p *Provider) ParseWebhook(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	if p.webhookSecret == "" {
		return nil, adapterkit.Unauthenticated(p.Name(), webhookSecretMissingProblem)
	}
	if err := p.verifySignature(r.Header.Get(signatureHeader), body); err != nil {
		return nil, err
	}
	var e event
	if err := adapterkit.DecodeWebhook(p.Name(), body, &e); err != nil {
		return nil, err
	}
	switch {
	case e.ID == "":
		return nil, adapterkit.Malformed(p.Name(), "event has no id")
	case e.Type == "":
		return nil, adapterkit.Malformed(p.Name(), "event has no type")
	case e.Object != "" && e.Object != objEvent:
		// A thin event (v2 event notification) or another object: the
		// adapter reads only v1 snapshot events.
		return nil, adapterkit.Malformed(p.Name(), "body is a %q, not an event", e.Object)
	}
	ev := payonce.WebhookEvent{ID: e.ID, Type: e.Type}
	if e.Created > 0 {
		ev.OccurredAt = time.Unix(e.Created, 0).UTC()
	}
	targets, err := p.eventTargets(e)
	if err != nil {
		return nil, adapterkit.Malformed(p.Name(), "event %s (%s): %s", p.scrub(e.ID), p.scrub(e.Type), p.scrub(err.Error()))
	}
	ev.Targets = targets
	return adapterkit.OneEvent(p.Name(), ev, p.scrub)
}

// verifySignature checks the Stripe-Signature header against body. Its
// errors say what is wrong, never the signature or the secret.
func (p *Provider) verifySignature(header string, body []byte) error {
	if header == "" {
		return adapterkit.Unauthenticated(p.Name(), "no %s header", signatureHeader)
	}
	if len(header) > maxSignatureHeaderBytes {
		return adapterkit.Unauthenticated(p.Name(), "%s header is %d bytes", signatureHeader, len(header))
	}
	var (
		ts     string
		tsSeen bool
		sigs   []string
	)
	for _, pair := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return adapterkit.Unauthenticated(p.Name(), "%s header is not t=...,v1=...", signatureHeader)
		}
		switch k {
		case "t":
			if tsSeen {
				return adapterkit.Unauthenticated(p.Name(), "%s header has more than one timestamp", signatureHeader)
			}
			ts, tsSeen = v, true
		case signatureScheme:
			if len(sigs) == maxSignaturesInHeader {
				return adapterkit.Unauthenticated(p.Name(), "%s header has more than %d signatures", signatureHeader, maxSignaturesInHeader)
			}
			sigs = append(sigs, v)
		}
		// Other schemes (v0, test-mode extras) are ignored, as stripe-go does.
	}
	if !tsSeen || ts == "" || strings.Trim(ts, "0123456789") != "" {
		return adapterkit.Unauthenticated(p.Name(), "%s header has no valid timestamp t", signatureHeader)
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return adapterkit.Unauthenticated(p.Name(), "%s header has no valid timestamp t", signatureHeader)
	}
	if len(sigs) == 0 {
		return adapterkit.Unauthenticated(p.Name(), "%s header has no %s signature", signatureHeader, signatureScheme)
	}
	// The timestamp is signed as stripe-go formats it (%d of the parsed
	// seconds, webhook.ComputeSignature), so that "t=0123" cannot sign
	// differently from "t=123".
	mac := adapterkit.HMACSHA256([]byte(p.webhookSecret), []byte(strconv.FormatInt(unix, 10)), []byte("."), body)
	matched := false
	for _, sig := range sigs {
		// Every candidate is compared, in constant time: which one matched
		// (or how nearly) must not show in the timing.
		if adapterkit.EqualHex(mac, sig) {
			matched = true
		}
	}
	if !matched {
		return adapterkit.Unauthenticated(p.Name(), "no %s signature matches the body (wrong WebhookSecret, or the body was changed)", signatureScheme)
	}
	// Checked after the signature, so that an unsigned request learns
	// nothing about the clock; a signed one older than the tolerance is a
	// replay (or a clock that is off).
	if age := p.now().Sub(time.Unix(unix, 0)); age > p.webhookTolerance {
		return adapterkit.Unauthenticated(p.Name(), "signature timestamp is %s old, more than the tolerance %s (a replay, or this host's clock is off)",
			age.Round(time.Second), p.webhookTolerance)
	}
	return nil
}

// eventTargets reads the event's object into targets; an error says why
// the object is not what the event type carries.
func (p *Provider) eventTargets(e event) ([]payonce.WebhookTarget, error) {
	obj := []byte(e.Data.Object)
	switch e.Type {
	case evtIntentSucceeded, evtIntentPaymentFailed, evtIntentCanceled, evtIntentProcessing, evtIntentCapturableUpdated:
		pi, err := decodePaymentIntent(obj)
		if err != nil {
			return nil, err
		}
		var extra struct {
			CaptureMethod string `json:"capture_method"`
		}
		_ = json.Unmarshal(obj, &extra) // decodePaymentIntent parsed it already
		return intentTargets(pi, extra.CaptureMethod), nil
	case evtRefundCreated, evtRefundUpdated, evtRefundFailed, evtChargeRefundUpdated:
		// charge.refund.updated carries the Refund, as refund.updated does:
		// it is how endpoints on API versions before 2024-10-28 learn that
		// a card refund failed after it succeeded (see ParseWebhook).
		rf, err := decodeRefund(obj)
		if err != nil {
			return nil, err
		}
		prev, err := previousStatus(e.Data.PreviousAttributes)
		if err != nil {
			return nil, err
		}
		failedAfter := e.Type == evtRefundFailed || prev == refundSucceeded
		return []payonce.WebhookTarget{refundTarget(rf, failedAfter, "")}, nil
	case evtChargeRefunded:
		ch, err := decodeObject[webhookCharge](obj, objCharge)
		if err != nil {
			return nil, err
		}
		var ts []payonce.WebhookTarget
		if ch.Refunds != nil {
			for _, rf := range ch.Refunds.Data {
				if err := checkObject(rf, objRefund); err != nil {
					return nil, err
				}
				ts = append(ts, refundTarget(rf, false, ch.PaymentIntent.ID))
			}
		}
		return ts, nil
	case evtChargeDisputeCreated:
		d, err := decodeObject[dispute](obj, objDispute)
		if err != nil {
			return nil, err
		}
		if d.PaymentIntent.ID == "" {
			// A dispute of a charge without a PaymentIntent: not one payonce
			// created (it creates every charge as a PaymentIntent).
			return nil, nil
		}
		return []payonce.WebhookTarget{{Kind: payonce.KindCharge, ProviderRef: d.PaymentIntent.ID, State: payonce.LookupFailed,
			Reversal: true, Code: codeDispute,
			Message: "stripe: dispute " + d.ID + " opened (reason " + d.Reason + ", status " + d.Status + ")"}}, nil
	}
	return nil, nil
}

// previousStatus is the status in an event's previous_attributes; "" when
// the event has none or the status did not change.
func previousStatus(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var prev struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(raw, &prev); err != nil {
		return "", fmt.Errorf("previous_attributes: %w", err)
	}
	return prev.Status, nil
}

// ownOp is the operation id payonce wrote on an object it created for an
// operation of kind k: payonce_op, when payonce_kind is k. An object
// created for another kind (or by someone else) names no operation of k.
func ownOp(md metadata, k payonce.Kind) string {
	if md.get(MetaKind) != string(k) {
		return ""
	}
	return md.get(MetaOperation)
}

// ownKey is the idempotency key payonce wrote on an object it created for
// an operation of kind k (payonce_key, beside payonce_op); "" for an object
// that names no operation of k, whose key would name no generation.
func ownKey(md metadata, k payonce.Kind) string {
	if ownOp(md, k) == "" {
		return ""
	}
	return md.get(MetaKey)
}

// upperCurrency is a Stripe currency (lower case) as payonce's requests
// spell an ISO 4217 code: in upper case, so that a comparison with the
// operation's currency needs no case folding.
func upperCurrency(c string) string {
	switch c {
	case "usd":
		return "USD"
	case "eur":
		return "EUR"
	case "gbp":
		return "GBP"
	}
	return strings.ToUpper(c)
}

// verdictTarget is a target of kind k saying what v says. A verdict that
// does not decide (not found yet, unknown status, a charge that must be
// read first) is processing: an event changes nothing it does not
// understand; the operation's lookups decide.
func verdictTarget(k payonce.Kind, v verdict) payonce.WebhookTarget {
	t := payonce.WebhookTarget{Kind: k, State: v.state, Code: v.code, DeclineCode: v.decline, Message: v.message}
	if !v.settles() {
		t.State = payonce.LookupProcessing
		t.Code, t.DeclineCode = "", ""
		switch {
		case v.unknown != "":
			t.Message = "stripe: " + v.unknown
		case v.state == payonce.LookupNotFound:
			t.Message = ""
		}
	}
	return t
}

// settles reports a verdict that decides the operation.
func (v verdict) settles() bool {
	return v.unknown == "" && v.needCharge == "" && (v.state == payonce.LookupSucceeded || v.state == payonce.LookupFailed)
}

// intentTargets is what a PaymentIntent in an event says: about the charge
// that created it, always; about a capture or cancel of it, only when its
// state decides them (captureVerdict, cancelVerdict), so that every
// payment_intent event does not name captures and cancels that do not
// exist. A capture is named only for a PaymentIntent with manual capture
// (capture_method "manual"; absent counts as maybe): an automatic one has
// no capture operation.
func intentTargets(pi paymentIntent, captureMethod string) []payonce.WebhookTarget {
	currency := upperCurrency(pi.Currency)
	charge := verdictTarget(payonce.KindCharge, chargeVerdict(pi, nil))
	charge.OperationID, charge.ProviderRef = ownOp(pi.Metadata, payonce.KindCharge), pi.ID
	// The charge created the PaymentIntent: its key, and the amount and
	// currency chargeBelongs checks.
	charge.Key, charge.Amount, charge.Currency = ownKey(pi.Metadata, payonce.KindCharge), pi.Amount, currency
	ts := []payonce.WebhookTarget{charge}
	if cv := captureVerdict(pi); cv.settles() && (captureMethod == "" || captureMethod == captureMethodManual) {
		t := verdictTarget(payonce.KindCapture, cv)
		// A capture's ProviderRef is the PaymentIntent it captured (lookups
		// and Classify record the pi_ id), and so is its PaymentRef. Its
		// amount is what actedOnBelongs checks: amount_received of a
		// captured PaymentIntent, none of one the capture failed on. The
		// PaymentIntent's key is the charge's, not the capture's: no Key.
		t.ProviderRef, t.PaymentRef, t.Currency = pi.ID, pi.ID, currency
		if pi.Status == piSucceeded {
			t.Amount = pi.AmountReceived
		}
		ts = append(ts, t)
	}
	if cv := cancelVerdict(pi); cv.settles() {
		t := verdictTarget(payonce.KindCancel, cv)
		// actedOnBelongs checks a cancel's currency only.
		t.ProviderRef, t.PaymentRef, t.Currency = pi.ID, pi.ID, currency
		ts = append(ts, t)
	}
	return ts
}

// refundTarget is what a Refund says about the refund operation that
// created it. failedAfter is true when the event says the refund had
// succeeded before: refund.failed, or an update whose previous status was
// succeeded. pi is the PaymentIntent to use when the refund does not name
// one (a refund embedded in its charge).
//
// PaymentRef is set only for a refund payonce created (payonce_op with
// payonce_kind refund): a payment can have several refunds, and a refund
// made elsewhere (the Dashboard) must not be matched by its payment alone
// to a refund operation of payonce's whose answer was lost.
func refundTarget(rf refund, failedAfter bool, pi string) payonce.WebhookTarget {
	v := refundVerdict(rf)
	t := verdictTarget(payonce.KindRefund, v)
	// The Refund's own amount and currency, as refundBelongs checks them.
	t.ProviderRef, t.Amount, t.Currency = rf.ID, rf.Amount, upperCurrency(rf.Currency)
	if op := ownOp(rf.Metadata, payonce.KindRefund); op != "" {
		t.OperationID, t.Key = op, rf.Metadata.get(MetaKey)
		t.PaymentRef = rf.PaymentIntent.ID
		if t.PaymentRef == "" {
			t.PaymentRef = pi
		}
	}
	if t.State == payonce.LookupFailed {
		if rf.FailureReason != "" {
			t.Message = "stripe: refund " + rf.Status + " (" + rf.FailureReason + ")"
		}
		// A refund can fail after it succeeded (Stripe sends refund.failed,
		// or charge.refund.updated on older API versions; failure_reason
		// says why): that undoes a success, so it is a reversal. A refund
		// that never succeeded is failed either way.
		t.Reversal = failedAfter || (rf.Status == refundFailed && rf.FailureReason != "")
	}
	return t
}

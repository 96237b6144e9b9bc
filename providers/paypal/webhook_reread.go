package paypal

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Why an event's body is not evidence, and what is.
//
// PayPal signs "transmissionId|transmissionTime|webhookId|crc32(body)": the
// body only through its CRC32, which anyone can match (four chosen bytes
// anywhere in the body give any CRC32). Whoever holds one genuine delivery
// (its headers and body: a proxy's log, a mirror of the traffic) can send
// another body with the same CRC32 under the same signed transmission,
// and it verifies offline, for as long as MaxWebhookTransmissionAge
// admits the transmission time. Such a body could turn
// PAYMENT.CAPTURE.COMPLETED into DENIED for a charge payonce has not
// settled: recorded failed while the money moved, the service would
// charge again. Whether VerifyAPI compares more than the CRC32 is not
// documented.
//
// So the inbound side decides only on what PayPal's API says: after a
// delivery verifies (either mode), the object the event names is read by
// its id, with the adapter's access token, and the targets are built from
// the object as read (status, custom_id, invoice_id, amount, currency,
// related ids and links) through the one states table. The body only names
// which object to read, and gives the event's id and type:
//
//	GET /v2/payments/captures/{id}        https://developer.paypal.com/docs/api/payments/v2/#captures_get
//	GET /v2/payments/authorizations/{id}  https://developer.paypal.com/docs/api/payments/v2/#authorizations_get
//	GET /v2/payments/refunds/{id}         https://developer.paypal.com/docs/api/payments/v2/#refunds_get
//	GET /v2/checkout/orders/{id}          https://developer.paypal.com/docs/api/orders/v2/#orders_get
//
// (also https://developer.paypal.com/sdk/payment/v2/captures-get and
// .../refunds-get; paypal/PayPal-TypeScript-Server-SDK
// doc/controllers/payments.md "Get Captured Payment", "Get Authorized
// Payment", "Get Refund", doc/controllers/orders.md "Get Order"). Their
// answers are the SDK's CapturedPayment, AuthorizationWithAdditionalData,
// Refund and Order (src/models/*.ts), which carry every field the targets
// are built from: status, status_details, amount, custom_id, invoice_id,
// supplementary_data.related_ids and the HATEOAS links ("up": the
// authorization or order of a capture, the capture of a refund). One GET
// per delivery of a type
// the adapter reads, none for the others; the token is the cached one
// (auth.go). What a forged body can still do: name another genuine object
// of the same account (its read state then applies, which is true), or
// take an event id before the genuine delivery does (that delivery is then
// a duplicate in the inbox; reconciliation still settles the operation).

// payPalID is the form of the ids the adapter reads by: PayPal's order id
// pattern, ^[A-Z0-9]+$ of length 1 to 36 (paypal/PayPal-TypeScript-Server-SDK
// doc/controllers/orders.md, "Get Order": id Constraints). PayPal documents
// no pattern for payment ids ("The PayPal-generated ID", ^[\S\s]*$ on
// https://developer.paypal.com/sdk/payment/v2/captures-get); every one it
// publishes (3C679366HH908993F, 0VF52814937998046, ...) is 17 of the same
// characters, so the same rule applies. Why a rule at all: the id comes
// from a body anyone holding a delivery can forge, and it goes into a URL
// path; an id such as "../../v1/..." or "X?y" must never make the adapter
// send a request to a path an attacker chose.
var payPalID = regexp.MustCompile(`^[A-Z0-9]{1,36}$`)

// eventResourceID is the id of the object the event names, checked for
// PayPal's form before anything is read. A resource without a string id
// is unreadable (a shape the adapter does not know); an id not in PayPal's
// form is refused (Malformed): PayPal never sends one, so the body was
// made by someone else, and refusing it records nothing under its event
// id.
func (p *Provider) eventResourceID(e webhookEvent, what string) (string, error) {
	var r struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(e.Resource, &r); err != nil || r.ID == "" {
		return "", &unreadableEvent{why: "paypal: event " + e.EventType + ": resource is not " + what + " with an id"}
	}
	if !payPalID.MatchString(r.ID) {
		return "", adapterkit.Malformed(p.Name(), "event %s names resource id %q, which is not a PayPal id (1 to 36 of A-Z and 0-9); nothing was read",
			truncateText(e.ID, 60), truncateText(r.ID, 60))
	}
	return r.ID, nil
}

// rereadClient is Config.HTTPClient without redirects: the reads go to
// BaseURL and nowhere else, whatever an answer says.
func (p *Provider) rereadClient() *http.Client {
	hc := *p.webhookHTTPClient()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &hc
}

// rereadFailed is the error of a read that got no usable answer (network,
// timeout, 429, 5xx, a 401 twice, any status but PayPal's own 404): the
// event is not applied and the delivery is refused, so PayPal delivers it
// again (it retries any non-2xx for 3 days:
// https://developer.paypal.com/api/rest/webhooks/rest/). It wraps
// payonce.ErrProviderUnavailable: PayPal could not be asked, and payonce's
// WebhookHandler answers 503 (with Retry-After), not a forgery's 400.
func (p *Provider) rereadFailed(e webhookEvent, path string, err error) error {
	return fmt.Errorf("paypal: webhook: event %s: cannot read %s from PayPal to check what the event says (%s); "+
		"nothing applied, PayPal will deliver it again: %w", truncateText(e.ID, 60), path, truncateText(p.scrub(err.Error()), 300), payonce.ErrProviderUnavailable)
}

// readPayment reads the authorization, capture or refund (object) the
// event names, by its id. PayPal's 404 makes the event unreadable
// (recorded, it changes nothing); every other failure is rereadFailed.
func (p *Provider) readPayment(ctx context.Context, e webhookEvent, object string) (webhookPayment, error) {
	id, err := p.eventResourceID(e, "a payment object")
	if err != nil {
		return webhookPayment{}, err
	}
	path := paymentPaths[object] + url.PathEscape(id)
	var w webhookPayment
	found, err := p.get(ctx, p.rereadClient(), path, &w)
	switch {
	case err != nil:
		return webhookPayment{}, p.rereadFailed(e, path, err)
	case !found:
		return webhookPayment{}, &unreadableEvent{why: fmt.Sprintf("paypal: event %s: PayPal has no %s %s (GET %s answered 404); nothing applied",
			e.EventType, object, id, path)}
	case w.ID != id || w.Status == "":
		return webhookPayment{}, p.rereadFailed(e, path, fmt.Errorf("the answer is not %s %s with a status", object, id))
	}
	return w, nil
}

// readOrder reads the order the event names, by its id (as readPayment).
func (p *Provider) readOrder(ctx context.Context, e webhookEvent) (order, error) {
	id, err := p.eventResourceID(e, "an order")
	if err != nil {
		return order{}, err
	}
	path := ordersPathSeg + url.PathEscape(id)
	var o order
	found, err := p.get(ctx, p.rereadClient(), path, &o)
	switch {
	case err != nil:
		return order{}, p.rereadFailed(e, path, err)
	case !found:
		return order{}, &unreadableEvent{why: fmt.Sprintf("paypal: event %s: PayPal has no order %s (GET %s answered 404); nothing applied", e.EventType, id, path)}
	case o.ID != id || o.Status == "":
		return order{}, p.rereadFailed(e, path, fmt.Errorf("the answer is not order %s with a status", id))
	}
	return o, nil
}

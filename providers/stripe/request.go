package stripe

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Metadata keys the adapter writes on every PaymentIntent and Refund it
// creates. Caller metadata may not use the "payonce_" prefix.
const (
	// MetaOperation holds the operation id; lookups find objects by it.
	MetaOperation = "payonce_op"
	// MetaKey holds the idempotency key of the attempt that created the object.
	MetaKey = "payonce_key"
	// MetaKind holds the operation kind ("charge", "refund").
	MetaKind = "payonce_kind"
	// MetaReferences holds the operation's references as a JSON array (cut
	// to Stripe's 500-byte value limit, ending with "...+N" for the N
	// references left out).
	MetaReferences = "payonce_refs"
)

// Stripe's metadata limits: 50 keys, keys up to 40 characters without
// square brackets, values up to 500 characters.
const (
	stripeMaxMetadataKeys  = 50
	stripeMaxMetadataValue = 500
)

// NewRequest builds the form-encoded POST of one attempt:
//
//   - charge:  POST /v1/payment_intents (created and confirmed at once)
//   - capture: POST /v1/payment_intents/{PaymentRef}/capture
//   - cancel:  POST /v1/payment_intents/{PaymentRef}/cancel
//   - refund:  POST /v1/refunds
//
// Every request carries r.Key in the Idempotency-Key header and the API key
// as a Bearer token. The body's form keys are sorted, so every attempt of an
// operation sends the same bytes. An error (nothing to send) is a
// *payonce.ValidationError naming the field.
func (p *Provider) NewRequest(ctx context.Context, r payonce.SendRequest) (*http.Request, error) {
	if err := adapterkit.CheckKey("stripe ", r.Key, MaxKeyLength, "is empty; every Stripe POST carries the operation's idempotency key",
		"is %d bytes; Stripe accepts at most %d"); err != nil {
		return nil, err
	}
	req := r.Request
	var path string
	form := url.Values{}
	switch req.Kind {
	case payonce.KindCharge:
		if r.OperationID == "" {
			return nil, invalidSend("OperationID", "is empty; it is written to the PaymentIntent's metadata so that a lookup can find it")
		}
		path = chargePath
		form.Set("amount", strconv.FormatInt(req.Amount, 10))
		form.Set("currency", strings.ToLower(req.Currency))
		form.Set("confirm", "true")
		if req.CaptureManual {
			form.Set("capture_method", "manual")
		} else {
			form.Set("capture_method", "automatic")
		}
		// A server-side create-and-confirm has nobody to redirect. Since API
		// 2023-08-16 a PaymentIntent enables the Dashboard's payment methods
		// by default, and confirming one without return_url fails ("A
		// return_url must be specified ... set automatic_payment_methods
		// [allow_redirects] to never"). So payonce enables automatic payment
		// methods explicitly (the same on every API version) and refuses
		// redirect-based ones: a payment method that needs a redirect is
		// refused by Stripe (400) instead of leaving a PaymentIntent that
		// waits for a customer who will never come back.
		//
		// off_session is deliberately NOT sent. off_session=true declares a
		// merchant-initiated payment, which needs the customer's prior
		// consent and a payment method saved for off-session use; payonce
		// cannot know that, and a false claim gets declines (or breaks card
		// network rules). Without it, a card that asks for authentication
		// leaves the PaymentIntent in requires_action, which Classify
		// refuses: payonce never hands out the client secret, so nobody can
		// complete the action and no money can move.
		form.Set("automatic_payment_methods[enabled]", "true")
		form.Set("automatic_payment_methods[allow_redirects]", "never")
		setIf(form, "payment_method", req.PaymentMethod)
		setIf(form, "customer", req.Customer)
		setIf(form, "description", req.Description)
		if err := setMetadata(form, r); err != nil {
			return nil, err
		}
	case payonce.KindCapture:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a capture needs the PaymentIntent id (pi_...) of the authorized charge")
		}
		path = "/v1/payment_intents/" + url.PathEscape(req.PaymentRef) + "/capture"
		if req.Amount > 0 {
			form.Set("amount_to_capture", strconv.FormatInt(req.Amount, 10))
		}
	case payonce.KindCancel:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a cancel needs the PaymentIntent id (pi_...) to cancel")
		}
		path = "/v1/payment_intents/" + url.PathEscape(req.PaymentRef) + "/cancel"
	case payonce.KindRefund:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a refund needs the PaymentIntent id (pi_...) of the charge to refund")
		}
		if r.OperationID == "" {
			return nil, invalidSend("OperationID", "is empty; it is written to the Refund's metadata so that a lookup can find it")
		}
		path = "/v1/refunds"
		form.Set("payment_intent", req.PaymentRef)
		if req.Amount > 0 {
			form.Set("amount", strconv.FormatInt(req.Amount, 10))
		}
		if err := setMetadata(form, r); err != nil {
			return nil, err
		}
	default:
		return nil, invalidSend("Request.Kind", "is %q; the Stripe adapter sends charge, capture, cancel and refund", string(req.Kind))
	}

	body := []byte(form.Encode()) // sorted by key: the same bytes on every attempt
	const contentType = "application/x-www-form-urlencoded"
	return adapterkit.Post(ctx, "stripe", req.Kind, p.baseURL+path, body, p.setHeaders, contentType, "Idempotency-Key", r.Key)
}

// chargePath is the path of a charge: PaymentIntents are created (and
// confirmed) there.
const chargePath = "/v1/payment_intents"

// authorization is the Authorization header's value: the API key as a
// Bearer token.
func (p *Provider) authorization() adapterkit.Secret {
	return adapterkit.Secret("Bearer " + string(p.apiKey))
}

func invalidSend(field, format string, args ...any) error {
	return adapterkit.Invalid("stripe ", field, format, args...)
}

// setIf sets k to v unless v is empty.
func setIf(form url.Values, k, v string) {
	if v != "" {
		form.Set(k, v)
	}
}

// setMetadata writes the caller's metadata and payonce's own keys. The
// caller's keys are checked against Stripe's rules that the root package
// cannot know: the "payonce_" prefix is reserved, keys may not hold square
// brackets (they would change the form's structure), and the caller may use
// at most 50 - 4 keys since payonce adds four.
func setMetadata(form url.Values, r payonce.SendRequest) error {
	md := r.Request.Metadata
	if err := adapterkit.CheckMetadata("stripe ", md, adapterkit.MetadataLimits{Provider: "Stripe", Keys: stripeMaxMetadataKeys}); err != nil {
		return err
	}
	for k, v := range md {
		if strings.ContainsAny(k, "[]") {
			return invalidSend("Request.Metadata", "key %q contains a square bracket, which Stripe does not allow in metadata keys", k)
		}
		form.Set("metadata["+k+"]", v)
	}
	// payonce's own keys (adapterkit.Metadata), set after the caller's.
	form.Set("metadata["+adapterkit.MetaOperation+"]", r.OperationID)
	form.Set("metadata["+adapterkit.MetaKey+"]", r.Key)
	form.Set("metadata["+adapterkit.MetaKind+"]", string(r.Request.Kind))
	form.Set("metadata["+adapterkit.MetaReferences+"]", adapterkit.References(r.Request.References, stripeMaxMetadataValue, adapterkit.Bytes))
	return nil
}

// setHeaders writes the headers of every request but the key and the
// content type: the API key, Accept and, when set, Stripe-Version.
func (p *Provider) setHeaders(h http.Header) {
	h.Set("Authorization", string(p.authorization()))
	h.Set("Accept", "application/json")
	if p.apiVersion != "" {
		h.Set("Stripe-Version", p.apiVersion)
	}
}

package stripe

import (
	"encoding/json"
	"fmt"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The JSON shapes below hold only the fields the adapter reads; Stripe
// sends many more, which encoding/json ignores.

// PaymentIntent statuses (https://docs.stripe.com/payments/paymentintents/lifecycle).
const (
	piRequiresPaymentMethod = "requires_payment_method"
	piRequiresConfirmation  = "requires_confirmation"
	piRequiresAction        = "requires_action"
	piProcessing            = "processing"
	piRequiresCapture       = "requires_capture"
	piCanceled              = "canceled"
	piSucceeded             = "succeeded"
)

// Refund statuses.
const (
	refundPending        = "pending"
	refundRequiresAction = "requires_action"
	refundSucceeded      = "succeeded"
	refundFailed         = "failed"
	refundCanceled       = "canceled"
)

// Charge statuses (https://docs.stripe.com/api/charges/object#charge_object-status):
// "The status of the payment is either succeeded, pending, or failed."
const (
	chargeSucceeded = "succeeded"
	chargePending   = "pending"
	chargeFailed    = "failed"
)

// Object types.
const (
	objPaymentIntent = "payment_intent"
	objRefund        = "refund"
	objCharge        = "charge"
	objList          = "list"
	objSearchResult  = "search_result"
)

// Error types and codes the classification depends on.
const (
	errTypeIdempotency      = "idempotency_error"
	codeIdempotencyKeyInUse = "idempotency_key_in_use"
	codeRateLimit           = "rate_limit"
	codeLockTimeout         = "lock_timeout"
	codeResourceMissing     = "resource_missing"
	codeUnexpectedState     = "payment_intent_unexpected_state"
)

type paymentIntent struct {
	ID               string   `json:"id"`
	Object           string   `json:"object"`
	Status           string   `json:"status"`
	Amount           int64    `json:"amount"`
	AmountCapturable int64    `json:"amount_capturable"`
	AmountReceived   int64    `json:"amount_received"`
	Currency         string   `json:"currency"`
	Metadata         metadata `json:"metadata"`
	// Created is when Stripe created it (Unix seconds); the audit's
	// period is over it.
	Created          int64         `json:"created"`
	LastPaymentError *apiErrorBody `json:"last_payment_error"`
	// CancellationReason is informational only: Stripe's reasons
	// ("duplicate", "fraudulent", "requested_by_customer", "abandoned",
	// "automatic", "expired", "failed_invoice", "void_invoice") do not say
	// whether the PaymentIntent was authorized before it was canceled.
	CancellationReason string `json:"cancellation_reason"`
	// LatestCharge is "ID of the latest Charge object created by this
	// PaymentIntent. This property is null until PaymentIntent confirmation
	// is attempted" (API reference, PaymentIntent object; the full Charge
	// when expanded). API versions before 2022-11-15 have no latest_charge
	// but embed the PaymentIntent's charges as a list in Charges instead
	// (stripe-go 74.0.0: "Removed Charges field on PaymentIntent and
	// replace it with LatestCharge").
	LatestCharge expandable      `json:"latest_charge"`
	Charges      *listOf[charge] `json:"charges"`
}

// charge is a Charge (https://docs.stripe.com/api/charges/object), read
// only to learn whether a canceled PaymentIntent had been authorized.
type charge struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	// Paid is "true if the charge succeeded, or was successfully
	// authorized for later capture".
	Paid bool `json:"paid"`
	// Captured: "If the charge was created without capturing, this Boolean
	// represents whether it is still uncaptured or has since been
	// captured."
	Captured       bool       `json:"captured"`
	Status         string     `json:"status"`
	Amount         int64      `json:"amount"`
	AmountCaptured int64      `json:"amount_captured"`
	Currency       string     `json:"currency"`
	PaymentIntent  expandable `json:"payment_intent"`
}

type refund struct {
	ID            string     `json:"id"`
	Object        string     `json:"object"`
	Status        string     `json:"status"`
	Amount        int64      `json:"amount"`
	Currency      string     `json:"currency"`
	FailureReason string     `json:"failure_reason"`
	Metadata      metadata   `json:"metadata"`
	PaymentIntent expandable `json:"payment_intent"`
	// Created is when Stripe created it (Unix seconds).
	Created int64 `json:"created"`
}

// expandable is a field that Stripe renders as an object's id, or as the
// object itself when the request expanded it
// (https://docs.stripe.com/api/expanding_objects); null leaves it empty.
type expandable struct {
	ID string
	// Object is the expanded object's JSON; nil when Stripe sent an id.
	Object json.RawMessage
}

// UnmarshalJSON reads an id string, an expanded object or null.
func (e *expandable) UnmarshalJSON(b []byte) error {
	*e = expandable{}
	switch {
	case string(b) == "null":
		return nil
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &e.ID)
	}
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	e.ID, e.Object = o.ID, append(json.RawMessage(nil), b...)
	return nil
}

type listOf[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
}

type errorEnvelope struct {
	Error *apiErrorBody `json:"error"`
}

// apiErrorBody is Stripe's error object, also used for a PaymentIntent's
// last_payment_error.
type apiErrorBody struct {
	Type          string `json:"type"`
	Code          string `json:"code"`
	DeclineCode   string `json:"decline_code"`
	Message       string `json:"message"`
	Param         string `json:"param"`
	PaymentIntent *struct {
		ID string `json:"id"`
	} `json:"payment_intent"`
}

// object is a Stripe object the adapter reads by id or from a webhook.
type object interface {
	paymentIntent | refund | charge | webhookCharge | dispute
	objectType() string
	objectID() string
}

func (pi paymentIntent) objectType() string { return pi.Object }
func (pi paymentIntent) objectID() string   { return pi.ID }
func (rf refund) objectType() string        { return rf.Object }
func (rf refund) objectID() string          { return rf.ID }
func (ch charge) objectType() string        { return ch.Object }
func (ch charge) objectID() string          { return ch.ID }
func (d dispute) objectType() string        { return d.Object }
func (d dispute) objectID() string          { return d.ID }

// decodeObject parses an object and checks it (checkObject).
func decodeObject[T object](body []byte, want string) (T, error) {
	var v T
	if err := adapterkit.DecodeJSON(body, &v); err != nil {
		return v, err
	}
	return v, checkObject(v, want)
}

// checkObject checks that v is an object of type want with an id.
func checkObject[T object](v T, want string) error {
	switch {
	case v.objectType() != want:
		return fmt.Errorf("object is %q, want %q", v.objectType(), want)
	case v.objectID() == "":
		return adapterkit.ErrNoID
	}
	return nil
}

func decodePaymentIntent(body []byte) (paymentIntent, error) {
	return decodeObject[paymentIntent](body, objPaymentIntent)
}

func decodeRefund(body []byte) (refund, error) { return decodeObject[refund](body, objRefund) }

func decodeCharge(body []byte) (charge, error) { return decodeObject[charge](body, objCharge) }

// readError reads Stripe's error JSON into o; error.payment_intent names
// the PaymentIntent of a decline.
func (p *Provider) readError(o *payonce.Outcome, body []byte) *apiErrorBody {
	e := decodeError(body)
	if e == nil {
		return nil
	}
	o.Code, o.DeclineCode, o.Message = e.Code, e.DeclineCode, p.scrub(e.Message)
	if e.PaymentIntent != nil {
		o.ProviderRef = e.PaymentIntent.ID
	}
	return e
}

// decodeError parses an error answer; nil when the body holds no error
// object (an HTML page from a proxy, an empty body, ...).
func decodeError(body []byte) *apiErrorBody {
	env := adapterkit.DecodeError(body, func(e *errorEnvelope) bool { return e.Error != nil })
	if env == nil {
		return nil
	}
	return env.Error
}

// metadata is what the adapter reads of an object's metadata: payonce's
// own keys (MetaOperation, MetaKey, MetaKind). It decodes as a
// map[string]string: null is no metadata, a member whose value is null is
// "", the last of repeated keys wins, keys are compared exactly, and a
// value of another JSON type is an error. A caller's keys are never read
// back.
type metadata struct{ op, key, kind string }

// get is md[k] of the map the metadata decodes to, for payonce's own keys;
// "" for any other.
func (md metadata) get(k string) string {
	switch k {
	case MetaOperation:
		return md.op
	case MetaKey:
		return md.key
	case MetaKind:
		return md.kind
	}
	return ""
}

// UnmarshalJSON decodes b into a map[string]string and keeps payonce's keys.
func (md *metadata) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		*md = metadata{}
		return err
	}
	*md = metadata{op: m[MetaOperation], key: m[MetaKey], kind: m[MetaKind]}
	return nil
}

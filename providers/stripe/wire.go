package stripe

import (
	"encoding/json"
	"errors"
	"fmt"

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
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Status           string            `json:"status"`
	Amount           int64             `json:"amount"`
	AmountCapturable int64             `json:"amount_capturable"`
	AmountReceived   int64             `json:"amount_received"`
	Currency         string            `json:"currency"`
	Metadata         map[string]string `json:"metadata"`
	LastPaymentError *apiErrorBody     `json:"last_payment_error"`
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
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Status        string            `json:"status"`
	Amount        int64             `json:"amount"`
	Currency      string            `json:"currency"`
	FailureReason string            `json:"failure_reason"`
	Metadata      map[string]string `json:"metadata"`
	PaymentIntent expandable        `json:"payment_intent"`
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

var errNoID = errors.New("object has no id")

// decodePaymentIntent parses a PaymentIntent and checks that it is one.
func decodePaymentIntent(body []byte) (paymentIntent, error) {
	var pi paymentIntent
	if err := adapterkit.DecodeJSON(body, &pi); err != nil {
		return pi, err
	}
	if pi.Object != objPaymentIntent {
		return pi, fmt.Errorf("object is %q, want %q", pi.Object, objPaymentIntent)
	}
	if pi.ID == "" {
		return pi, errNoID
	}
	return pi, nil
}

// decodeRefund parses a Refund and checks that it is one.
func decodeRefund(body []byte) (refund, error) {
	var rf refund
	if err := adapterkit.DecodeJSON(body, &rf); err != nil {
		return rf, err
	}
	if rf.Object != objRefund {
		return rf, fmt.Errorf("object is %q, want %q", rf.Object, objRefund)
	}
	if rf.ID == "" {
		return rf, errNoID
	}
	return rf, nil
}

// decodeCharge parses a Charge and checks that it is one.
func decodeCharge(body []byte) (charge, error) {
	var ch charge
	if err := adapterkit.DecodeJSON(body, &ch); err != nil {
		return ch, err
	}
	if ch.Object != objCharge {
		return ch, fmt.Errorf("object is %q, want %q", ch.Object, objCharge)
	}
	if ch.ID == "" {
		return ch, errNoID
	}
	return ch, nil
}

// decodeError parses an error answer; nil when the body holds no error
// object (an HTML page from a proxy, an empty body, ...).
func decodeError(body []byte) *apiErrorBody {
	if len(body) == 0 || len(body) > adapterkit.MaxBodyBytes {
		return nil
	}
	var env errorEnvelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return env.Error
}

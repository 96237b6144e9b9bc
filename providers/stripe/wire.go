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

// Object types.
const (
	objPaymentIntent = "payment_intent"
	objRefund        = "refund"
	objList          = "list"
	objSearchResult  = "search_result"
)

// Error types and codes the classification depends on.
const (
	errTypeIdempotency      = "idempotency_error"
	codeIdempotencyKeyInUse = "idempotency_key_in_use"
	codeRateLimit           = "rate_limit"
	codeResourceMissing     = "resource_missing"
	codeUnexpectedState     = "payment_intent_unexpected_state"
)

type paymentIntent struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Status           string            `json:"status"`
	Amount           int64             `json:"amount"`
	AmountReceived   int64             `json:"amount_received"`
	Currency         string            `json:"currency"`
	Metadata         map[string]string `json:"metadata"`
	LastPaymentError *apiErrorBody     `json:"last_payment_error"`
}

type refund struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Status        string            `json:"status"`
	Amount        int64             `json:"amount"`
	FailureReason string            `json:"failure_reason"`
	Metadata      map[string]string `json:"metadata"`
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

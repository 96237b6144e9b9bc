// Package stripewire holds Stripe's API v1 objects as the fake Stripe of
// package mocks renders them: PaymentIntents, Refunds, Charges, error
// bodies and the list and search envelopes, with Stripe's nulls and
// defaults. It is written once here so that the fake (package mocks) and
// the httpmock responders (package mocks/mockhttp) answer in the same
// shape; users name these types through mockhttp.
package stripewire

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
)

// PaymentIntent is a PaymentIntent as Stripe's API v1 renders it (the
// fields payonce reads). Empty nullable fields are rendered as JSON null, as
// Stripe does. Field names follow Stripe's JSON names; see
// https://docs.stripe.com/api/payment_intents/object.
type PaymentIntent struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	AmountCapturable   int64             `json:"amount_capturable"`
	AmountReceived     int64             `json:"amount_received"`
	CanceledAt         int64             `json:"canceled_at"`
	CancellationReason string            `json:"cancellation_reason"`
	CaptureMethod      string            `json:"capture_method"`
	ClientSecret       string            `json:"client_secret"`
	ConfirmationMethod string            `json:"confirmation_method"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	Customer           string            `json:"customer"`
	Description        string            `json:"description"`
	LastPaymentError   *Error            `json:"last_payment_error"`
	LatestCharge       string            `json:"latest_charge"`
	Livemode           bool              `json:"livemode"`
	Metadata           map[string]string `json:"metadata"`
	NextAction         map[string]any    `json:"next_action"`
	PaymentMethod      string            `json:"payment_method"`
	PaymentMethodTypes []string          `json:"payment_method_types"`
	Status             string            `json:"status"`
}

// MarshalJSON renders the PaymentIntent with Stripe's nulls and defaults
// ("object": "payment_intent", "metadata": {}).
func (p PaymentIntent) MarshalJSON() ([]byte, error) {
	p.Object = orDefault(p.Object, "payment_intent")
	p.CaptureMethod = orDefault(p.CaptureMethod, "automatic")
	p.ConfirmationMethod = orDefault(p.ConfirmationMethod, "automatic")
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	if p.PaymentMethodTypes == nil {
		p.PaymentMethodTypes = []string{"card"}
	}
	return MarshalWithNulls(p, "canceled_at", "cancellation_reason", "client_secret", "customer",
		"description", "latest_charge", "payment_method")
}

// Refund is a Refund as Stripe's API v1 renders it; field names follow
// Stripe's JSON names (https://docs.stripe.com/api/refunds/object).
type Refund struct {
	ID                 string `json:"id"`
	Object             string `json:"object"`
	Amount             int64  `json:"amount"`
	BalanceTransaction string `json:"balance_transaction"`
	Charge             string `json:"charge"`
	Created            int64  `json:"created"`
	Currency           string `json:"currency"`
	// FailureBalanceTransaction and FailureReason are set once a refund
	// failed: the balance transaction that reverses the refund's, and why
	// (lost_or_stolen_card, expired_or_canceled_card, unknown, ...;
	// stripe-go refund.go, Refund.FailureReason).
	FailureBalanceTransaction string            `json:"failure_balance_transaction"`
	FailureReason             string            `json:"failure_reason"`
	Metadata                  map[string]string `json:"metadata"`
	PaymentIntent             string            `json:"payment_intent"`
	Reason                    string            `json:"reason"`
	Status                    string            `json:"status"`
}

// MarshalJSON renders the Refund with Stripe's nulls and defaults.
func (r Refund) MarshalJSON() ([]byte, error) {
	r.Object = orDefault(r.Object, "refund")
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	return MarshalWithNulls(r, "balance_transaction", "charge", "failure_balance_transaction", "failure_reason",
		"payment_intent", "reason")
}

// Charge is a Charge as Stripe's API v1 renders it (the fields
// payonce reads); field names follow Stripe's JSON names
// (https://docs.stripe.com/api/charges/object). Every confirmation of a
// PaymentIntent creates one: paid is "true if the charge succeeded, or was
// successfully authorized for later capture", captured tells an
// authorization from a capture, and a PaymentIntent's latest_charge names
// the latest one.
type Charge struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	Amount         int64  `json:"amount"`
	AmountCaptured int64  `json:"amount_captured"`
	AmountRefunded int64  `json:"amount_refunded"`
	Captured       bool   `json:"captured"`
	Created        int64  `json:"created"`
	Currency       string `json:"currency"`
	FailureCode    string `json:"failure_code"`
	FailureMessage string `json:"failure_message"`
	// Metadata is the PaymentIntent's, copied when the charge was made:
	// "When a PaymentIntent is confirmed, Stripe copies its metadata ...
	// to the charge created by the PaymentIntent. This is a one-time
	// operation" (https://support.stripe.com/questions/how-metadata-works-with-related-objects).
	Metadata      map[string]string `json:"metadata"`
	Paid          bool              `json:"paid"`
	PaymentIntent string            `json:"payment_intent"`
	PaymentMethod string            `json:"payment_method"`
	Refunded      bool              `json:"refunded"`
	Status        string            `json:"status"`
}

// MarshalJSON renders the Charge with Stripe's nulls and defaults
// ("object": "charge", "metadata": {}).
func (ch Charge) MarshalJSON() ([]byte, error) {
	ch.Object = orDefault(ch.Object, "charge")
	if ch.Metadata == nil {
		ch.Metadata = map[string]string{}
	}
	return MarshalWithNulls(ch, "failure_code", "failure_message", "payment_intent", "payment_method")
}

// Dispute is a Dispute as Stripe's API v1 renders it (the fields payonce
// reads, and those that say what the dispute did); field names follow
// Stripe's JSON names (https://docs.stripe.com/api/disputes/object).
// Charge and PaymentIntent hold an id, or the object itself when the
// request expanded it (https://docs.stripe.com/api/expanding_objects).
type Dispute struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Amount int64  `json:"amount"`
	// BalanceTransactions is "List of zero, one, or two balance
	// transactions that show funds withdrawn and reinstated"; the fake
	// keeps no balance and renders it empty.
	BalanceTransactions []any             `json:"balance_transactions"`
	Charge              any               `json:"charge"`
	Created             int64             `json:"created"`
	Currency            string            `json:"currency"`
	IsChargeRefundable  bool              `json:"is_charge_refundable"`
	Livemode            bool              `json:"livemode"`
	Metadata            map[string]string `json:"metadata"`
	PaymentIntent       any               `json:"payment_intent"`
	Reason              string            `json:"reason"`
	Status              string            `json:"status"`
}

// MarshalJSON renders the Dispute with Stripe's nulls and defaults
// ("object": "dispute", "metadata": {}, "balance_transactions": []).
func (d Dispute) MarshalJSON() ([]byte, error) {
	d.Object = orDefault(d.Object, "dispute")
	if d.Metadata == nil {
		d.Metadata = map[string]string{}
	}
	if d.BalanceTransactions == nil {
		d.BalanceTransactions = []any{}
	}
	return MarshalWithNulls(d, "payment_intent")
}

// Error is the object under "error" in Stripe's error answers, and
// the shape of a PaymentIntent's last_payment_error. Type is one of
// api_error, card_error, idempotency_error or invalid_request_error.
type Error struct {
	Type          string         `json:"type"`
	Code          string         `json:"code,omitempty"`
	DeclineCode   string         `json:"decline_code,omitempty"`
	Message       string         `json:"message,omitempty"`
	Param         string         `json:"param,omitempty"`
	Charge        string         `json:"charge,omitempty"`
	DocURL        string         `json:"doc_url,omitempty"`
	RequestLogURL string         `json:"request_log_url,omitempty"`
	PaymentIntent *PaymentIntent `json:"payment_intent,omitempty"`
}

// ErrorBody is the whole body of a Stripe error answer:
// {"error": {...}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// List is Stripe's list envelope ({"object": "list", "data": [...],
// "has_more": ..., "url": ...}).
type List[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
	URL     string `json:"url"`
}

// SearchResult is Stripe's search envelope
// ({"object": "search_result", ...}); NextPage is "" on the last page.
type SearchResult[T any] struct {
	Object   string `json:"object"`
	Data     []T    `json:"data"`
	HasMore  bool   `json:"has_more"`
	NextPage string `json:"next_page"`
	URL      string `json:"url"`
}

// MarshalJSON renders next_page as null on the last page.
func (s SearchResult[T]) MarshalJSON() ([]byte, error) {
	s.Object = orDefault(s.Object, "search_result")
	if s.Data == nil {
		s.Data = []T{}
	}
	return MarshalWithNulls(s, "next_page")
}

// MarshalWithNulls renders v, a struct whose fields all carry a json name
// tag, as encoding/json does, fields in order, except that the fields
// named in nulls render as null while they hold their zero value: Stripe
// says null for an unset nullable field, where Go's zero value would say ""
// or 0. It is what a MarshalJSON method calls instead of a mirror struct of
// pointers, so that each object's shape is written once.
func MarshalWithNulls(v any, nulls ...string) ([]byte, error) {
	rv := reflect.ValueOf(v)
	b := []byte{'{'}
	for i := range rv.NumField() {
		name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
		if i > 0 {
			b = append(b, ',')
		}
		key, _ := json.Marshal(name) // a string always marshals
		b = append(append(b, key...), ':')
		f := rv.Field(i)
		if f.IsZero() && slices.Contains(nulls, name) {
			b = append(b, "null"...)
			continue
		}
		val, err := json.Marshal(f.Interface())
		if err != nil {
			return nil, err
		}
		b = append(b, val...)
	}
	return append(b, '}'), nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

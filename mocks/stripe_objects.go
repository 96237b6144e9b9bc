package mocks

import "encoding/json"

// StripePaymentIntent is a PaymentIntent as Stripe's API v1 renders it (the
// fields payonce reads). Empty nullable fields are rendered as JSON null, as
// Stripe does. It is exported so tests can decode the fake's answers and
// build httpmock fixtures. Field names follow Stripe's JSON names; see
// https://docs.stripe.com/api/payment_intents/object.
type StripePaymentIntent struct {
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
	LastPaymentError   *StripeError      `json:"last_payment_error"`
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
func (p StripePaymentIntent) MarshalJSON() ([]byte, error) {
	type wire struct {
		ID                 string            `json:"id"`
		Object             string            `json:"object"`
		Amount             int64             `json:"amount"`
		AmountCapturable   int64             `json:"amount_capturable"`
		AmountReceived     int64             `json:"amount_received"`
		CanceledAt         *int64            `json:"canceled_at"`
		CancellationReason *string           `json:"cancellation_reason"`
		CaptureMethod      string            `json:"capture_method"`
		ClientSecret       *string           `json:"client_secret"`
		ConfirmationMethod string            `json:"confirmation_method"`
		Created            int64             `json:"created"`
		Currency           string            `json:"currency"`
		Customer           *string           `json:"customer"`
		Description        *string           `json:"description"`
		LastPaymentError   *StripeError      `json:"last_payment_error"`
		LatestCharge       *string           `json:"latest_charge"`
		Livemode           bool              `json:"livemode"`
		Metadata           map[string]string `json:"metadata"`
		NextAction         map[string]any    `json:"next_action"`
		PaymentMethod      *string           `json:"payment_method"`
		PaymentMethodTypes []string          `json:"payment_method_types"`
		Status             string            `json:"status"`
	}
	w := wire{
		ID: p.ID, Object: orDefault(p.Object, "payment_intent"),
		Amount: p.Amount, AmountCapturable: p.AmountCapturable, AmountReceived: p.AmountReceived,
		CanceledAt: nullInt(p.CanceledAt), CancellationReason: nullString(p.CancellationReason),
		CaptureMethod: orDefault(p.CaptureMethod, "automatic"), ClientSecret: nullString(p.ClientSecret),
		ConfirmationMethod: orDefault(p.ConfirmationMethod, "automatic"), Created: p.Created,
		Currency: p.Currency, Customer: nullString(p.Customer), Description: nullString(p.Description),
		LastPaymentError: p.LastPaymentError, LatestCharge: nullString(p.LatestCharge), Livemode: p.Livemode,
		Metadata: p.Metadata, NextAction: p.NextAction, PaymentMethod: nullString(p.PaymentMethod),
		PaymentMethodTypes: p.PaymentMethodTypes, Status: p.Status,
	}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	if w.PaymentMethodTypes == nil {
		w.PaymentMethodTypes = []string{"card"}
	}
	return json.Marshal(w)
}

// StripeRefund is a Refund as Stripe's API v1 renders it; field names follow
// Stripe's JSON names (https://docs.stripe.com/api/refunds/object).
type StripeRefund struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Amount             int64             `json:"amount"`
	BalanceTransaction string            `json:"balance_transaction"`
	Charge             string            `json:"charge"`
	Created            int64             `json:"created"`
	Currency           string            `json:"currency"`
	Metadata           map[string]string `json:"metadata"`
	PaymentIntent      string            `json:"payment_intent"`
	Reason             string            `json:"reason"`
	Status             string            `json:"status"`
}

// MarshalJSON renders the Refund with Stripe's nulls and defaults.
func (r StripeRefund) MarshalJSON() ([]byte, error) {
	type wire struct {
		ID                 string            `json:"id"`
		Object             string            `json:"object"`
		Amount             int64             `json:"amount"`
		BalanceTransaction *string           `json:"balance_transaction"`
		Charge             *string           `json:"charge"`
		Created            int64             `json:"created"`
		Currency           string            `json:"currency"`
		Metadata           map[string]string `json:"metadata"`
		PaymentIntent      *string           `json:"payment_intent"`
		Reason             *string           `json:"reason"`
		Status             string            `json:"status"`
	}
	w := wire{
		ID: r.ID, Object: orDefault(r.Object, "refund"), Amount: r.Amount,
		BalanceTransaction: nullString(r.BalanceTransaction), Charge: nullString(r.Charge),
		Created: r.Created, Currency: r.Currency, Metadata: r.Metadata,
		PaymentIntent: nullString(r.PaymentIntent), Reason: nullString(r.Reason), Status: r.Status,
	}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	return json.Marshal(w)
}

// StripeCharge is a Charge as Stripe's API v1 renders it (the fields
// payonce reads); field names follow Stripe's JSON names
// (https://docs.stripe.com/api/charges/object). Every confirmation of a
// PaymentIntent creates one: paid is "true if the charge succeeded, or was
// successfully authorized for later capture", captured tells an
// authorization from a capture, and a PaymentIntent's latest_charge names
// the latest one.
type StripeCharge struct {
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
	Paid           bool   `json:"paid"`
	PaymentIntent  string `json:"payment_intent"`
	PaymentMethod  string `json:"payment_method"`
	Refunded       bool   `json:"refunded"`
	Status         string `json:"status"`
}

// MarshalJSON renders the Charge with Stripe's nulls and defaults
// ("object": "charge").
func (ch StripeCharge) MarshalJSON() ([]byte, error) {
	type wire struct {
		ID             string  `json:"id"`
		Object         string  `json:"object"`
		Amount         int64   `json:"amount"`
		AmountCaptured int64   `json:"amount_captured"`
		AmountRefunded int64   `json:"amount_refunded"`
		Captured       bool    `json:"captured"`
		Created        int64   `json:"created"`
		Currency       string  `json:"currency"`
		FailureCode    *string `json:"failure_code"`
		FailureMessage *string `json:"failure_message"`
		Paid           bool    `json:"paid"`
		PaymentIntent  *string `json:"payment_intent"`
		PaymentMethod  *string `json:"payment_method"`
		Refunded       bool    `json:"refunded"`
		Status         string  `json:"status"`
	}
	return json.Marshal(wire{
		ID: ch.ID, Object: orDefault(ch.Object, "charge"), Amount: ch.Amount,
		AmountCaptured: ch.AmountCaptured, AmountRefunded: ch.AmountRefunded, Captured: ch.Captured,
		Created: ch.Created, Currency: ch.Currency, FailureCode: nullString(ch.FailureCode),
		FailureMessage: nullString(ch.FailureMessage), Paid: ch.Paid, PaymentIntent: nullString(ch.PaymentIntent),
		PaymentMethod: nullString(ch.PaymentMethod), Refunded: ch.Refunded, Status: ch.Status,
	})
}

// StripeError is the object under "error" in Stripe's error answers, and
// the shape of a PaymentIntent's last_payment_error. Type is one of
// api_error, card_error, idempotency_error or invalid_request_error.
type StripeError struct {
	Type          string               `json:"type"`
	Code          string               `json:"code,omitempty"`
	DeclineCode   string               `json:"decline_code,omitempty"`
	Message       string               `json:"message,omitempty"`
	Param         string               `json:"param,omitempty"`
	Charge        string               `json:"charge,omitempty"`
	DocURL        string               `json:"doc_url,omitempty"`
	RequestLogURL string               `json:"request_log_url,omitempty"`
	PaymentIntent *StripePaymentIntent `json:"payment_intent,omitempty"`
}

// StripeErrorBody is the whole body of a Stripe error answer:
// {"error": {...}}.
type StripeErrorBody struct {
	Error StripeError `json:"error"`
}

// StripeList is Stripe's list envelope ({"object": "list", "data": [...],
// "has_more": ..., "url": ...}).
type StripeList[T any] struct {
	Object  string `json:"object"`
	Data    []T    `json:"data"`
	HasMore bool   `json:"has_more"`
	URL     string `json:"url"`
}

// StripeSearchResult is Stripe's search envelope
// ({"object": "search_result", ...}); NextPage is "" on the last page.
type StripeSearchResult[T any] struct {
	Object   string `json:"object"`
	Data     []T    `json:"data"`
	HasMore  bool   `json:"has_more"`
	NextPage string `json:"next_page"`
	URL      string `json:"url"`
}

// MarshalJSON renders next_page as null on the last page.
func (s StripeSearchResult[T]) MarshalJSON() ([]byte, error) {
	type wire struct {
		Object   string  `json:"object"`
		Data     []T     `json:"data"`
		HasMore  bool    `json:"has_more"`
		NextPage *string `json:"next_page"`
		URL      string  `json:"url"`
	}
	w := wire{Object: orDefault(s.Object, "search_result"), Data: s.Data, HasMore: s.HasMore,
		NextPage: nullString(s.NextPage), URL: s.URL}
	if w.Data == nil {
		w.Data = []T{}
	}
	return json.Marshal(w)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

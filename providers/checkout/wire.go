package checkout

import (
	"errors"
	"fmt"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The JSON shapes below hold only the fields the adapter reads.

// Payment statuses.
const (
	statusPending           = "Pending"
	statusAuthorized        = "Authorized"
	statusCardVerified      = "Card Verified"
	statusCaptured          = "Captured"
	statusPartiallyCaptured = "Partially Captured"
	statusPartiallyRefunded = "Partially Refunded"
	statusRefunded          = "Refunded"
	statusVoided            = "Voided"
	statusDeclined          = "Declined"
	statusCanceled          = "Canceled"
	statusExpired           = "Expired"
	statusPaid              = "Paid"
	statusRetryScheduled    = "Retry Scheduled"
)

// Action types of GET /payments/{id}/actions.
const (
	actionAuthorization = "Authorization"
	actionCapture       = "Capture"
	actionVoid          = "Void"
	actionRefund        = "Refund"
)

// Codes the adapter puts in Outcomes and LookupResults.
const (
	codeDeclined         = "declined"
	codeActionDeclined   = "action_declined"
	codeRateLimited      = "too_many_requests"
	codeDuplicateRequest = "duplicate_request"
	codeUnexpectedStatus = "unexpected_status"
)

// payment is the answer to POST /payments and GET /payments/{id}.
type payment struct {
	ID              string         `json:"id"`
	ActionID        string         `json:"action_id"`
	Amount          *int64         `json:"amount"`
	Currency        string         `json:"currency"`
	Approved        *bool          `json:"approved"`
	Status          string         `json:"status"`
	ResponseCode    string         `json:"response_code"`
	ResponseSummary string         `json:"response_summary"`
	Reference       string         `json:"reference"`
	Metadata        map[string]any `json:"metadata"`
	ErrorType       string         `json:"error_type"`
}

func (p payment) approved() bool { return p.Approved != nil && *p.Approved }

// accepted is the 202 answer to a capture, void or refund. ID and Status
// are not part of it: they are read to recognise a payment answered in its
// place.
type accepted struct {
	ActionID  string `json:"action_id"`
	Reference string `json:"reference"`
	ErrorType string `json:"error_type"`
	ID        string `json:"id"`
	Status    string `json:"status"`
}

// action is one entry of GET /payments/{id}/actions.
type action struct {
	ID              string         `json:"id"`
	Type            string         `json:"type"`
	Amount          *int64         `json:"amount"`
	Approved        *bool          `json:"approved"`
	ResponseCode    string         `json:"response_code"`
	ResponseSummary string         `json:"response_summary"`
	Reference       string         `json:"reference"`
	Metadata        map[string]any `json:"metadata"`
}

type paymentList struct {
	Limit      int       `json:"limit"`
	Skip       int       `json:"skip"`
	TotalCount *int      `json:"total_count"`
	Data       []payment `json:"data"`
}

// apiError is Checkout.com's error body.
type apiError struct {
	RequestID  string   `json:"request_id"`
	ErrorType  string   `json:"error_type"`
	ErrorCodes []string `json:"error_codes"`
}

func (e *apiError) message() string { return strings.Join(e.ErrorCodes, ", ") }

// duplicateRequest reports the error code Checkout.com's API reference gives
// a 429 for a request whose idempotency key's first request is still being
// processed: "duplicate_request" (see answers).
func (e *apiError) duplicateRequest() bool {
	for _, c := range e.ErrorCodes {
		if strings.EqualFold(strings.TrimSpace(c), codeDuplicateRequest) {
			return true
		}
	}
	return false
}

// namesIdempotencyKey reports an error about the idempotency key. Checkout.com
// documents none; Classify reads one as key_mismatch, not as a refusal.
func (e *apiError) namesIdempotencyKey() bool {
	if strings.Contains(strings.ToLower(e.ErrorType), "idempotency") {
		return true
	}
	for _, c := range e.ErrorCodes {
		if strings.Contains(strings.ToLower(c), "idempotency") {
			return true
		}
	}
	return false
}

func decodePayment(body []byte) (payment, error) {
	var p payment
	if err := adapterkit.DecodeJSON(body, &p); err != nil {
		return p, err
	}
	switch {
	case p.ErrorType != "":
		return p, fmt.Errorf("body is an error (%q), not a payment", p.ErrorType)
	case p.ID == "":
		return p, adapterkit.ErrNoID
	case p.Status == "":
		return p, errors.New("payment has no status")
	}
	return p, nil
}

func decodeAccepted(body []byte) (accepted, error) {
	var a accepted
	if err := adapterkit.DecodeJSON(body, &a); err != nil {
		return a, err
	}
	switch {
	case a.ErrorType != "":
		return a, fmt.Errorf("body is an error (%q), not an accepted action", a.ErrorType)
	case a.ID != "" || a.Status != "":
		// A payment, not an accepted action: the caller reports it.
		return a, nil
	case a.ActionID == "":
		return a, errors.New("answer has no action_id")
	}
	return a, nil
}

// readError reads Checkout.com's error JSON into o: error_type is the
// code, error_codes the message, request_id the request id when the
// Cko-Request-Id header is missing.
func (p *Provider) readError(o *payonce.Outcome, body []byte) *apiError {
	e := decodeError(body)
	if e == nil {
		return nil
	}
	o.Code, o.Message = p.scrub(e.ErrorType), p.scrub(e.message())
	if o.RequestID == "" {
		o.RequestID = e.RequestID
	}
	return e
}

// decodeError parses an error answer; nil when the body holds none
// (Checkout.com sends empty bodies for 401 and 404).
func decodeError(body []byte) *apiError {
	return adapterkit.DecodeError(body, func(e *apiError) bool { return e.ErrorType != "" || len(e.ErrorCodes) > 0 })
}

package payonce

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/payonce/payonce/ledger"
)

// Sentinel errors returned by Client calls; test them with errors.Is.
// ErrInvalid, ErrInProgress, ErrFingerprintMismatch and ErrNotFound are the
// ledger's own sentinels (the same values, not copies), so that one
// errors.Is covers an error from either layer: from a Client call, from a
// ledger.Store, or from a store's CreateOrGetTx in your own transaction.
// HTTPStatus maps them to the status codes of a typical API.
var (
	// ErrOutcomeUnknown: a request may have reached the provider and its
	// outcome is not known yet. Do not retry with other identifiers and do not
	// tell the customer it failed: the operation is recorded and background
	// reconciliation will settle it (calling again with the same identity is
	// safe and returns the settled result once known).
	ErrOutcomeUnknown = errors.New("payonce: outcome unknown; reconciliation will settle it")
	// ErrInProgress: another worker holds the operation's lease right now
	// (another call for the same operation, or a Reconciler); this call sent
	// nothing, and the holder settles the operation. It is
	// ledger.ErrInProgress.
	ErrInProgress = ledger.ErrInProgress
	// ErrManualReview: the operation needs an operator; automation will send
	// nothing more for it.
	ErrManualReview = errors.New("payonce: operation is in manual review")
	// ErrFingerprintMismatch: the same identity was used with a different
	// request (amount, currency, ...). A caller bug; nothing was sent. It is
	// ledger.ErrFingerprintMismatch.
	ErrFingerprintMismatch = ledger.ErrFingerprintMismatch
	// ErrProviderUnavailable: nothing was sent (breaker open, connection
	// refused, rate limited before processing). The operation is recorded as
	// pending: background reconciliation sends it later, or call again.
	ErrProviderUnavailable = errors.New("payonce: provider unavailable; nothing was sent")
	// ErrDeclined is matched by every *DeclinedError.
	ErrDeclined = errors.New("payonce: refused by the provider")
	// ErrResendRefused is returned by Client.Resolve when an operator asks
	// for a resend that the provider's own records forbid: an object of an
	// earlier key generation succeeded or is still processing, the review
	// reason is "duplicated", or the provider could not be asked. Its
	// message says why.
	ErrResendRefused = errors.New("payonce: resend refused")
	// ErrInvalid is matched (errors.Is) by every *ValidationError, this
	// package's and the ledger's: an argument was missing or out of range
	// and nothing was recorded or sent. It is ledger.ErrInvalid, so one test
	// covers both.
	ErrInvalid = ledger.ErrInvalid
	// ErrNotFound: the ledger has no record of the operation asked about
	// (Client.Status), or of the charge a capture, cancel or refund acts on
	// (that error is also a *ValidationError of PaymentRef: pass the
	// provider's payment id, or charge first). It is ledger.ErrNotFound.
	ErrNotFound = ledger.ErrNotFound
	// ErrNotSettled: a capture, cancel or refund was asked for an order
	// whose charge is recorded but not settled yet (pending, in flight,
	// unknown or in manual review), and no PaymentRef was given. Nothing was
	// recorded or sent: call again once Client.Status reports the charge
	// succeeded. Acting on a payment whose outcome is unknown would have the
	// provider refuse it, and the refusal would be recorded as the final
	// result of that refund number.
	ErrNotSettled = errors.New("payonce: the order's charge has not settled yet")
)

// ValidationError names the argument that is wrong and what is allowed. It
// is ledger.ValidationError: the root package and the ledger report invalid
// arguments with one type.
type ValidationError = ledger.ValidationError

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// DeclinedError is a definitive refusal by the provider: a card decline, a
// validation or authentication error. The operation is recorded as failed.
//
// Its JSON form uses the snake_case names of its tags, leaving out what the
// provider did not send.
type DeclinedError struct {
	// Provider is the provider's name (Provider.Name).
	Provider string `json:"provider"`
	// Code, DeclineCode and Message are what the provider said, as it
	// sent them.
	Code        string `json:"code,omitempty"`
	DeclineCode string `json:"decline_code,omitempty"`
	Message     string `json:"message,omitempty"`
	// ProviderRef is the provider's id of the refused object, if any.
	ProviderRef string `json:"provider_ref,omitempty"`
	// HTTPStatus is the status of the provider's answer; zero when not
	// known (a refusal read from a status lookup, for one).
	HTTPStatus int `json:"http_status,omitempty"`
	// RequestID is the provider's id of the request that was refused.
	RequestID string `json:"request_id,omitempty"`
}

// Error names the provider and what it said: its code, decline code and
// message, when given.
func (e *DeclinedError) Error() string {
	s := "payonce: " + e.Provider + " refused the operation"
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.DeclineCode != "" {
		s += " (" + e.DeclineCode + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is makes errors.Is(err, ErrDeclined) true.
func (e *DeclinedError) Is(target error) bool { return target == ErrDeclined }

// recordError is a ledger write that failed while an operation was being
// driven. The operation's outcome is unknown to the caller (errors.Is
// ErrOutcomeUnknown); the lease will expire and background work will look
// it up. Unlike a plain ErrOutcomeUnknown, it is a failure to act.
type recordError struct {
	what string
	err  error
}

func (e *recordError) Error() string {
	return "payonce: outcome unknown: recording " + e.what + " failed: " + e.err.Error()
}

func (e *recordError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrOutcomeUnknown) true.
func (e *recordError) Is(target error) bool { return target == ErrOutcomeUnknown }

// HTTPStatus is the HTTP status a typical JSON API answers a Charge,
// Capture, Cancel or Refund with, given the call's error (nil: 200 OK). The
// first row that matches (errors.Is) wins:
//
//	nil                         200 OK                    succeeded
//	ErrNotFound                 404 Not Found             no such order (or charge) in the ledger
//	ErrInvalid                  400 Bad Request           the *ValidationError names the field; nothing recorded
//	ErrFingerprintMismatch      422 Unprocessable Content the same identity with another request; nothing sent
//	ErrInProgress               409 Conflict              another request for it is being processed; retry later
//	ErrNotSettled               409 Conflict              the order's charge has not settled; retry once it has
//	ErrResendRefused            409 Conflict              the provider's records forbid a resend
//	ErrDeclined                 402 Payment Required      final refusal; 502 when the provider refused our credentials (401, 403)
//	ErrOutcomeUnknown           202 Accepted              recorded; reconciliation settles it: poll Client.Status
//	ErrProviderUnavailable      202 Accepted              recorded as pending; background work sends it
//	ErrManualReview             202 Accepted              recorded; an operator settles it
//	anything else               500 Internal Server Error the ledger or the context failed
//
// 202 is honest only while a Reconciler runs: it promises the client that
// the operation will settle without its help. 409 and 422 follow the IETF
// Idempotency-Key draft (draft-ietf-httpapi-idempotency-key-header,
// "Error Scenarios": a retry while the first request is processed is 409, a
// key reused with another payload is 422), and Stripe answers a concurrent
// request with the same key 409 too. ErrDeclined is 402 as in Stripe's own
// API ("Request Failed": valid parameters, refused), except that a
// provider's 401 or 403 says that this service's credentials are wrong,
// which is not the customer's doing. A status endpoint built on
// Client.Status answers 200 with the Result for every recorded operation,
// whatever its status, and 404 for ErrNotFound.
//
// 409 for ErrInProgress is for a second request arriving while the first
// is processed. A handler that recorded the operation itself (CreateOrGetTx
// in its own transaction) and then calls Charge gets ErrInProgress when a
// Reconciler claimed the operation first: nothing was sent by the call, the
// Reconciler settles it, and that handler's own request was accepted, so it
// answers 202 rather than HTTPStatus's 409.
func HTTPStatus(err error) int {
	var d *DeclinedError
	switch {
	case err == nil:
		return http.StatusOK
	// ErrNotFound before ErrInvalid: a capture or refund of an order with
	// no charge is both, and "no such order" is what the client must hear.
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrFingerprintMismatch):
		return http.StatusUnprocessableEntity
	case errors.Is(err, ErrInProgress), errors.Is(err, ErrNotSettled), errors.Is(err, ErrResendRefused):
		return http.StatusConflict
	case errors.As(err, &d) && (d.HTTPStatus == http.StatusUnauthorized || d.HTTPStatus == http.StatusForbidden):
		return http.StatusBadGateway
	case errors.Is(err, ErrDeclined):
		return http.StatusPaymentRequired
	case errors.Is(err, ErrOutcomeUnknown), errors.Is(err, ErrProviderUnavailable), errors.Is(err, ErrManualReview):
		return http.StatusAccepted
	}
	return http.StatusInternalServerError
}

package payonce

import (
	"errors"
	"fmt"

	"github.com/payonce/payonce/ledger"
)

// Sentinel errors returned by Client calls; test them with errors.Is.
// ErrInvalid, ErrInProgress and ErrFingerprintMismatch are the ledger's own
// sentinels, so that one errors.Is covers an error from either layer.
var (
	// ErrOutcomeUnknown: a request may have reached the provider and its
	// outcome is not known yet. Do not retry with other identifiers and do not
	// tell the customer it failed: the operation is recorded and background
	// reconciliation will settle it (calling again with the same identity is
	// safe and returns the settled result once known).
	ErrOutcomeUnknown = errors.New("payonce: outcome unknown; reconciliation will settle it")
	// ErrInProgress: another worker holds the operation's lease right now.
	// It is ledger.ErrInProgress.
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
type DeclinedError struct {
	Provider    string
	Code        string
	DeclineCode string
	Message     string
	ProviderRef string
	HTTPStatus  int
	RequestID   string
}

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

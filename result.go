package payonce

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/payonce/payonce/ledger"
)

// ResultStatus is the status a call reports. It is the ledger's status
// (ledger.Status) of the operation, under one name that differs, and comes
// with the error every call and Client.Status return for it:
//
//	ledger.Status   ResultStatus    error                         meaning
//	pending         pending         ErrProviderUnavailable        recorded, nothing sent yet; background work sends it
//	in_flight       in_progress     ErrInProgress                 a worker holds the lease and is sending an attempt
//	unknown         unknown         ErrOutcomeUnknown             an attempt may have reached the provider; reconciliation settles it
//	succeeded       succeeded       nil                           the provider confirmed it (final)
//	failed          failed          *DeclinedError (ErrDeclined)  the provider refused it (final)
//	manual_review   manual_review   ErrManualReview               an operator decides; automation sends nothing more
//
// in_flight is reported as in_progress because a caller cannot tell an
// attempt on the wire from any other work under another worker's lease: a
// call that finds the lease held reports in_progress (ErrInProgress)
// whatever the ledger's status. A status the ledger does not know is
// reported as unknown (ErrOutcomeUnknown), never as settled. ResultOf does
// the mapping.
type ResultStatus string

// The statuses a call reports; the table on ResultStatus gives the error
// that comes with each. Their values never change.
const (
	// ResultSucceeded: the provider confirmed the operation. Final.
	ResultSucceeded ResultStatus = "succeeded"
	// ResultFailed: the provider refused the operation. Final.
	ResultFailed ResultStatus = "failed"
	// ResultPending: recorded, nothing sent yet; background work sends it.
	ResultPending ResultStatus = "pending"
	// ResultUnknown: an attempt may have reached the provider;
	// reconciliation settles it.
	ResultUnknown ResultStatus = "unknown"
	// ResultInProgress: another worker holds the operation's lease.
	ResultInProgress ResultStatus = "in_progress"
	// ResultManualReview: an operator decides; automation sends nothing
	// more for it.
	ResultManualReview ResultStatus = "manual_review"
)

// Result is what a call reports about its operation. Its JSON form (for a
// handler that answers with it) uses the snake_case names of its tags; an
// empty provider_ref, code, decline_code, message or review_reason is left
// out, as it means the provider or the ledger said nothing of it. The
// names are part of the API: they change only with a major version.
type Result struct {
	// OperationID is the operation's id in the ledger
	// (Identity.OperationID): the same for every call with the same
	// business identity, across key generations.
	OperationID string `json:"operation_id"`
	// Key is the idempotency key sent to the provider (Identity.Key).
	Key string `json:"key"`
	// Provider is the provider's name (Provider.Name).
	Provider string `json:"provider"`
	// Kind is the kind of money movement: charge, capture, cancel, refund.
	Kind Kind `json:"kind"`
	// Status is where the operation stands; see ResultStatus for the error
	// that comes with each.
	Status ResultStatus `json:"status"`
	// ProviderRef is the provider's id of the object the operation created
	// or acted on, once known.
	ProviderRef string `json:"provider_ref,omitempty"`
	// Code, DeclineCode and Message are what the provider said of a
	// decline or an error, as it sent them.
	Code        string `json:"code,omitempty"`
	DeclineCode string `json:"decline_code,omitempty"`
	Message     string `json:"message,omitempty"`
	// Attempts is the number of attempts recorded for the operation so far.
	Attempts int `json:"attempts"`
	// Replayed reports that the result came from the ledger without calling
	// the provider (the operation had already finished).
	Replayed bool `json:"replayed"`
	// ReviewCode and ReviewReason say why an operation in manual review is
	// there: the code to compare, the sentence to show (as the ledger's
	// Operation records them).
	ReviewCode   ledger.ReviewCode `json:"review_code,omitempty"`
	ReviewReason string            `json:"review_reason,omitempty"`
}

// storedResult is the normalized result kept in the ledger (the Result
// column of every operation and tombstone). It is read back by every later
// release, and a replayed call answers from it: its JSON names MUST NEVER
// CHANGE. A new field must be omitempty, so that stored results keep
// their meaning.
type storedResult struct {
	ProviderRef string `json:"provider_ref,omitempty"`
	Code        string `json:"code,omitempty"`
	DeclineCode string `json:"decline_code,omitempty"`
	Message     string `json:"message,omitempty"`
	HTTPStatus  int    `json:"http_status,omitempty"`
	RequestID   string `json:"request_id,omitempty"`
	Replayed    bool   `json:"replayed,omitempty"`
}

func encodeResult(o Outcome) []byte {
	b, _ := json.Marshal(storedOf(o))
	return b
}

// storedOf is the stored result of an outcome, as encodeResult encodes it.
func storedOf(o Outcome) storedResult {
	return storedResult{
		ProviderRef: o.ProviderRef, Code: o.Code, DeclineCode: o.DeclineCode, Message: truncate(o.Message, 1000),
		HTTPStatus: o.HTTPStatus, RequestID: o.RequestID, Replayed: o.Replayed,
	}
}

func decodeResult(b []byte) storedResult {
	var s storedResult
	_ = json.Unmarshal(b, &s) // an unreadable result only loses details
	return s
}

// ResultOf reports a ledger record as the Result a call returns for it,
// with the status mapping documented on ResultStatus. It reads nothing but
// op: use it on operations from a ledger.Store (Get, a store's
// CreateOrGetTx, ListReview...). Replayed is false; Client.Status sets it.
func ResultOf(op ledger.Operation) Result {
	s := decodeResult(op.Result)
	r := Result{
		OperationID: op.ID, Key: op.Key, Provider: op.Provider, Kind: Kind(op.Kind),
		ProviderRef: op.ProviderRef, Code: s.Code, DeclineCode: s.DeclineCode, Message: s.Message,
		Attempts: op.Attempts, ReviewCode: op.ReviewCode, ReviewReason: op.ReviewReason,
	}
	switch op.Status {
	case ledger.StatusSucceeded:
		r.Status = ResultSucceeded
	case ledger.StatusFailed:
		r.Status = ResultFailed
	case ledger.StatusPending:
		r.Status = ResultPending
	case ledger.StatusManualReview:
		r.Status = ResultManualReview
	case ledger.StatusInFlight:
		r.Status = ResultInProgress
	default:
		r.Status = ResultUnknown
	}
	return r
}

// errorOf is the error a call returns for an operation in its status.
func errorOf(op ledger.Operation, provider string) error {
	switch op.Status {
	case ledger.StatusSucceeded:
		return nil
	case ledger.StatusFailed:
		s := decodeResult(op.Result)
		return &DeclinedError{Provider: provider, Code: s.Code, DeclineCode: s.DeclineCode, Message: s.Message,
			ProviderRef: op.ProviderRef, HTTPStatus: s.HTTPStatus, RequestID: s.RequestID}
	case ledger.StatusManualReview:
		return fmt.Errorf("%w: %s", ErrManualReview, op.ReviewReason)
	case ledger.StatusPending:
		return ErrProviderUnavailable
	case ledger.StatusInFlight:
		return ErrInProgress
	}
	return ErrOutcomeUnknown
}

// truncate shortens s to at most n bytes without splitting a character, and
// replaces invalid UTF-8, so that the ledger always accepts the text.
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

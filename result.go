package payonce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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
	s := storedOf(o)
	if b, ok := s.appendPlain(); ok {
		return b
	}
	b, _ := json.Marshal(s)
	return b
}

// appendPlain is json.Marshal(s) written out by hand, in one allocation
// and without reflection, for the usual result whose strings are all
// printable ASCII that JSON leaves as it is (no quote, backslash or the
// HTML characters <, > and & that Marshal escapes); ok is false for any
// other, which encodeResult leaves to Marshal. The bytes are the same:
// fields in declaration order, empty ones left out (omitempty).
func (s storedResult) appendPlain() (b []byte, ok bool) {
	fields := [...]struct{ name, v string }{
		{`"provider_ref":"`, s.ProviderRef}, {`"code":"`, s.Code}, {`"decline_code":"`, s.DeclineCode},
		{`"message":"`, s.Message}, {`"request_id":"`, s.RequestID},
	}
	n := len(`{}`) + len(`,"http_status":`) + 20 + len(`,"replayed":true`)
	for _, f := range fields {
		if !plainJSON(f.v) {
			return nil, false
		}
		n += len(f.name) + len(f.v) + 2
	}
	b = make([]byte, 0, n)
	b = append(b, '{')
	add := func(name, v string) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, name...)
		b = append(b, v...)
		b = append(b, '"')
	}
	for _, f := range fields[:4] {
		if f.v != "" {
			add(f.name, f.v)
		}
	}
	if s.HTTPStatus != 0 {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"http_status":`...)
		b = strconv.AppendInt(b, int64(s.HTTPStatus), 10)
	}
	if s.RequestID != "" {
		add(fields[4].name, s.RequestID)
	}
	if s.Replayed {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, `"replayed":true`...)
	}
	return append(b, '}'), true
}

// plainJSON reports whether json.Marshal writes s as it is between quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// storedOf is the stored result of an outcome, as encodeResult encodes it.
func storedOf(o Outcome) storedResult {
	return storedResult{
		ProviderRef: o.ProviderRef, Code: o.Code, DeclineCode: o.DeclineCode, Message: truncate(o.Message, 1000),
		HTTPStatus: o.HTTPStatus, RequestID: o.RequestID, Replayed: o.Replayed,
	}
}

// roundTrips reports whether decodeResult(encodeResult(...)) of s gives s
// back. It does when every string is valid UTF-8: JSON encoding replaces
// invalid bytes, and is otherwise undone exactly by decoding.
func (s storedResult) roundTrips() bool {
	return utf8.ValidString(s.ProviderRef) && utf8.ValidString(s.Code) && utf8.ValidString(s.DeclineCode) &&
		utf8.ValidString(s.Message) && utf8.ValidString(s.RequestID)
}

// knownResult is an encoded result with its decoding, so that a result the
// client has just written need not be decoded again to be reported.
type knownResult struct {
	raw []byte
	s   storedResult
}

// resultOfKnown is ResultOf(op), without decoding op.Result when k holds
// the same bytes (decoding is a function of the bytes alone).
func resultOfKnown(op ledger.Operation, k *knownResult) Result {
	if k != nil && k.raw != nil && bytes.Equal(op.Result, k.raw) {
		return resultWith(op, k.s)
	}
	return ResultOf(op)
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
	return resultWith(op, decodeResult(op.Result))
}

// resultWith is ResultOf with op.Result already decoded into s.
func resultWith(op ledger.Operation, s storedResult) Result {
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

package adapterkit

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// Success reports a 2xx status: an answer read by its object, never
// not_sent (docs/ADAPTERS.md, Classification rule 1).
func Success(status int) bool { return status >= 200 && status < 300 }

// Unreadable is the classification of a 2xx answer the adapter cannot
// read (empty, truncated, HTML, another object, an unknown status):
// maybe_sent, since the provider did answer 2xx and something may have
// happened. what says what was seen; it must already be scrubbed.
func Unreadable(provider string, o payonce.Outcome, what string) payonce.Outcome {
	o.Class = ledger.OutcomeMaybeSent
	o.Message = provider + ": unreadable 2xx answer: " + what
	return o
}

// UnknownKind is what Unreadable says of an answer to a request of a
// kind the adapter does not send.
func UnknownKind(k payonce.Kind) string {
	return "answer to an unknown kind " + strconv.Quote(string(k))
}

// Contradicted is the classification of a 2xx answer whose object belongs
// to another request (Belongs): class (maybe_sent or key_mismatch, as the
// adapter documents) with Contradiction set to why, which must already be
// scrubbed, and message. The client sends the operation to review and
// never records it succeeded or failed on that object.
func Contradicted(o payonce.Outcome, class ledger.OutcomeClass, why, message string) payonce.Outcome {
	o.Class = class
	o.Contradiction = why
	o.Message = message
	return o
}

// Answer reads the answer to one attempt as every adapter does: a 2xx by
// the object it names (Success: never not_sent), anything else by its
// error body (Error decodes it, nil when the body holds none, and copies
// its code, message and request id into o, scrubbed) and the adapter's
// table (ClassifyError). An adapter's Classify is its Answer's Classify.
type Answer[E any] struct {
	// RequestID names the header that carries the provider's request id;
	// "" when it sends none.
	RequestID string
	// Replayed reports an answer replayed from the provider's idempotency
	// store; nil when the provider documents no marker (Outcome.Replayed
	// is then never set).
	Replayed func(status int, header http.Header) bool
	Success  func(r payonce.SendRequest, o payonce.Outcome, body []byte) payonce.Outcome
	Error    func(o *payonce.Outcome, body []byte) *E
	Table    []Rule[E]
}

// Classify reads the answer with status, header and body to r.
func (a Answer[E]) Classify(r payonce.SendRequest, status int, header http.Header, body []byte) payonce.Outcome {
	o := payonce.Outcome{HTTPStatus: status}
	if a.RequestID != "" {
		o.RequestID = header.Get(a.RequestID)
	}
	if a.Replayed != nil {
		o.Replayed = a.Replayed(status, header)
	}
	if Success(status) {
		return a.Success(r, o, body)
	}
	e := a.Error(&o, body)
	return ClassifyError(o, status, header, e, a.Table)
}

// Rule is one row of an adapter's classification table for answers that
// are not 2xx: when When holds for the answer's status and its decoded
// error body e (nil when the body held none), the answer is Class, and
// Then, if set, adds what the row says besides (a RetryAfter, a default
// Code). The table is the adapter's: it states its provider's documented
// answers, each row with the reason for its class.
type Rule[E any] struct {
	When  func(status int, e *E) bool
	Class ledger.OutcomeClass
	Then  func(o *payonce.Outcome, header http.Header, e *E)
}

// ClassifyError classifies o, an answer with status and decoded error
// body e, by the first rule of table that holds. When none does, the
// answer is maybe_sent: 5xx (503 included) and anything not understood,
// since a proxy or the provider may have passed the request on before
// failing, and a wrong maybe_sent costs one lookup while a wrong not_sent
// or refused can move money twice or lose it (docs/ADAPTERS.md,
// Classification rules 3 and 4).
func ClassifyError[E any](o payonce.Outcome, status int, header http.Header, e *E, table []Rule[E]) payonce.Outcome {
	o.Class = ledger.OutcomeMaybeSent
	for _, r := range table {
		if r.When(status, e) {
			o.Class = r.Class
			if r.Then != nil {
				r.Then(&o, header, e)
			}
			break
		}
	}
	return o
}

// RetryAfterHeader is a Rule.Then that sets the Outcome's RetryAfter from
// the answer's Retry-After header (RetryAfter, with now).
func RetryAfterHeader[E any](now func() time.Time) func(*payonce.Outcome, http.Header, *E) {
	return func(o *payonce.Outcome, header http.Header, _ *E) {
		o.RetryAfter = RetryAfter(header.Get("Retry-After"), now)
	}
}

// RateLimited is the row for 429 that adapters whose provider does not
// document that its rate limiting runs before the request is processed (and
// before its key is stored) share: maybe_sent, since not_sent could let the
// next attempt go out without a lookup after a request that moved money
// (docs/ADAPTERS.md, rule 2). The answer's Code defaults to code, and wait
// sets its RetryAfter. Each adapter states its provider's words beside the
// row.
func RateLimited[E any](code string, wait func(*payonce.Outcome, http.Header, *E)) Rule[E] {
	return Rule[E]{When: Status[E](http.StatusTooManyRequests), Class: ledger.OutcomeMaybeSent,
		Then: func(o *payonce.Outcome, header http.Header, e *E) {
			if o.Code == "" {
				o.Code = code
			}
			wait(o, header, e)
		}}
}

// Status is a Rule.When that holds for the statuses given.
func Status[E any](statuses ...int) func(int, *E) bool {
	return func(status int, _ *E) bool { return slices.Contains(statuses, status) }
}

// Refusal is a Rule.When for the statuses every adapter reads as a
// definitive refusal: 400, 401, 403 and 404 (bad parameters or state, bad
// credentials, no permission, no such object; resending the same bytes
// gets the same answer), and any of also that the adapter adds.
func Refusal[E any](also ...int) func(int, *E) bool {
	return Status[E](append([]int{400, 401, 403, 404}, also...)...)
}

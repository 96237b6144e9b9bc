package ledger

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Status is the state of an operation. The states and the legal moves between
// them are drawn in docs/ARCHITECTURE.md.
type Status string

const (
	// StatusPending: recorded, nothing sent (or every attempt so far provably
	// never left). Safe to send at any time.
	StatusPending Status = "pending"
	// StatusInFlight: a worker holds the lease and an attempt is being sent.
	StatusInFlight Status = "in_flight"
	// StatusUnknown ("maybe sent"): an attempt may have reached the provider.
	// No new request before a status lookup.
	StatusUnknown Status = "unknown"
	// StatusSucceeded is terminal: the provider confirmed the operation.
	StatusSucceeded Status = "succeeded"
	// StatusFailed is terminal: the provider refused the operation for good.
	StatusFailed Status = "failed"
	// StatusManualReview is terminal for automation: no more requests are sent;
	// an operator resolves it.
	StatusManualReview Status = "manual_review"
)

// Statuses lists every status in a stable order.
var Statuses = []Status{StatusPending, StatusInFlight, StatusUnknown, StatusSucceeded, StatusFailed, StatusManualReview}

// Terminal reports whether automation is done with an operation in this
// status: succeeded, failed or manual_review.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusManualReview
}

// Final reports whether the status is succeeded or failed: finished for good,
// eligible for retention cleanup.
func (s Status) Final() bool { return s == StatusSucceeded || s == StatusFailed }

// Outcome classes an attempt can end with. They decide the operation's next
// state; see payonce.Outcome in the root package.
type OutcomeClass string

const (
	// OutcomeSuccess: the provider confirmed the request (2xx with a readable body).
	OutcomeSuccess OutcomeClass = "success"
	// OutcomeRefused: a definitive refusal (decline, validation, auth). Never retried.
	OutcomeRefused OutcomeClass = "refused"
	// OutcomeNotSent: proven never to have been processed (dial error, 429 or
	// 503 before processing, breaker open). Does not open the key window.
	OutcomeNotSent OutcomeClass = "not_sent"
	// OutcomeMaybeSent: the request may have been processed (timeout, reset
	// after writing, 5xx, unreadable 2xx body).
	OutcomeMaybeSent OutcomeClass = "maybe_sent"
	// OutcomeKeyInUse: the provider is still processing a request with this key (409).
	OutcomeKeyInUse OutcomeClass = "key_in_use"
	// OutcomeKeyMismatch: the provider holds the key with other parameters:
	// the ledger and the provider disagree.
	OutcomeKeyMismatch OutcomeClass = "key_mismatch"
)

// OutcomeClasses lists every outcome class in a stable order.
var OutcomeClasses = []OutcomeClass{OutcomeSuccess, OutcomeRefused, OutcomeNotSent, OutcomeMaybeSent, OutcomeKeyInUse, OutcomeKeyMismatch}

// MayHaveReached reports whether an attempt that ended with this class may
// have been processed by the provider, which opens (or keeps open) the key
// window. Only not_sent proves the opposite.
func (c OutcomeClass) MayHaveReached() bool { return c != OutcomeNotSent }

// ResolutionOutcome is what an operator decided for an operation in review.
type ResolutionOutcome string

const (
	// ResolveSucceeded: the operator confirmed the money moved (with the
	// provider reference).
	ResolveSucceeded ResolutionOutcome = "succeeded"
	// ResolveFailed: the operator confirmed the money did not move.
	ResolveFailed ResolutionOutcome = "failed"
	// ResolveResend: the operator asserts the provider has no record; the
	// operation goes back to pending under a new key generation.
	ResolveResend ResolutionOutcome = "resend"
)

// Operation is one intended money movement as the ledger records it.
//
// Times are UTC with microsecond precision; a zero time.Time means "not set".
type Operation struct {
	// ID is the stable identifier of the operation: the key of its identity
	// at generation 0. It never changes, even when an operator approves a
	// resend under a new key generation.
	ID string
	// Key is the idempotency key the operation currently sends: the key of its
	// identity at Generation.
	Key string
	// Provider, Kind and References are the operation's identity.
	Provider   string
	Kind       string
	References []string
	// Generation is 0 unless an operator resolved a review with a resend.
	Generation int
	// Fingerprint is the hex SHA-256 of Request. Same ID with another
	// fingerprint is refused with ErrFingerprintMismatch.
	Fingerprint string
	// Request is the canonical request (JSON), kept so that a background job
	// can send the operation without the original caller.
	Request []byte

	Status Status
	// ProviderRef is the provider's identifier of the object the operation
	// created or acted on (e.g. a PaymentIntent id), once known.
	ProviderRef string
	// PaymentRef is the provider's id of the payment a capture, cancel or
	// refund acts on, as recorded at creation (NewOperation.PaymentRef).
	PaymentRef string
	// Result is the normalized result (JSON) written with the last transition.
	Result []byte
	// Attempts counts the attempts started so far.
	Attempts int

	// KeyTTL is how long the provider remembers the key.
	KeyTTL time.Duration
	// WindowStart is the start of the first attempt under the current Key
	// that may have reached the provider; zero while none may have. A resend
	// under a new key generation starts a new window.
	WindowStart time.Time
	// KeyExpiresAt is WindowStart + KeyTTL; zero when WindowStart is zero.
	KeyExpiresAt time.Time

	// LeaseOwner and LeaseExpiresAt name the worker allowed to act on the
	// operation and until when. Empty / zero when nobody holds it. A lease is
	// live while Now is before LeaseExpiresAt.
	LeaseOwner     string
	LeaseExpiresAt time.Time
	// NextCheckAt is when background work should next look at the operation
	// (send a pending one, look up an unknown one, take over an expired
	// lease). Zero when no background work is due (final states).
	NextCheckAt time.Time

	// ReviewCode says why the operation went to manual review, as one of
	// ReviewCodes: what programs compare and count.
	ReviewCode ReviewCode
	// ReviewReason says it for a person: a sentence, often with the
	// provider's detail.
	ReviewReason string
	// ReviewAt is when the operation last entered manual review; zero if it
	// never did. ReviewCode, ReviewReason and ReviewAt are kept as history
	// after an operator resolves the review.
	ReviewAt time.Time
	// Resolution is the operator's decision, once an operation in review was
	// resolved; nil otherwise.
	Resolution *Resolution

	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time

	// Tombstone reports that the operation was removed by Cleanup; only its
	// tombstone is left: no request, attempts or events. Its identity,
	// fingerprint, final status, provider reference, result, key TTL and
	// creation and finish times are kept (UpdatedAt is when the tombstone
	// was written), so that a late duplicate call is answered with the
	// recorded outcome instead of being sent again.
	Tombstone bool
}

// ReviewCode says, in one word, why an operation went to manual review. It
// is stored in its own column beside the human reason (Operation.ReviewCode
// and ReviewReason), so that programs compare codes, never the text: the
// resend refusal, the webhook rules and the telemetry's reason label all
// read it. The values are stable: they are metric label values.
type ReviewCode string

const (
	// ReviewCodeWindowPassed: the key window passed with the outcome
	// unknown; a resend would be a new charge. Lookups may continue.
	ReviewCodeWindowPassed ReviewCode = "window_passed"
	// ReviewCodeDuplicated: the provider holds more than one object that
	// moved money for the operation. A resend is never allowed.
	ReviewCodeDuplicated ReviewCode = "duplicated"
	// ReviewCodeProcessing: the provider kept processing for longer than the
	// configured age.
	ReviewCodeProcessing ReviewCode = "processing"
	// ReviewCodeKeyMismatch: the provider holds the key with other
	// parameters.
	ReviewCodeKeyMismatch ReviewCode = "key_mismatch"
	// ReviewCodeContradicted: a provider answer, lookup or event does not
	// belong to the operation (another operation id, amount or currency).
	ReviewCodeContradicted ReviewCode = "contradicted"
	// ReviewCodeWebhookContradiction: a provider event contradicted a
	// settled outcome. Lookups do not settle it again: only an operator.
	ReviewCodeWebhookContradiction ReviewCode = "webhook_contradiction"
	// ReviewCodeRequestUnreadable: this version cannot read the stored
	// request.
	ReviewCodeRequestUnreadable ReviewCode = "request_unreadable"
	// ReviewCodeStoredError: the provider replayed a stored error for the
	// operation's current key, and lookups that prove absence, made after
	// the lookup's lag, found nothing more than once. Nothing has moved as
	// far as the provider shows yet, but a stored 5xx is not always final:
	// Stripe treats it as indeterminate and may still roll the payment
	// forward (docs.stripe.com/error-low-level, Server errors), so read-only
	// lookups go on. Before resolving it failed (and charging again under
	// a new operation), check the provider's dashboard or wait for its
	// reconciliation; only an adapter that declares its stored errors
	// final (ProviderInfo.StoredErrorsFinal) lets the Config.FailStoredErrors
	// policy record it failed.
	ReviewCodeStoredError ReviewCode = "stored_error"
	// ReviewCodeOther: any other reason (an operator's or a caller's own).
	ReviewCodeOther ReviewCode = "other"
)

// ReviewCodes lists every review code in a stable order.
var ReviewCodes = []ReviewCode{ReviewCodeWindowPassed, ReviewCodeDuplicated, ReviewCodeProcessing, ReviewCodeKeyMismatch,
	ReviewCodeContradicted, ReviewCodeWebhookContradiction, ReviewCodeRequestUnreadable, ReviewCodeStoredError, ReviewCodeOther}

// Resolution is an operator's decision on an operation in review, kept as an
// audit record.
type Resolution struct {
	Actor   string
	Note    string
	Outcome ResolutionOutcome
	At      time.Time
}

// Attempt is one request sent (or about to be sent) for an operation.
type Attempt struct {
	OperationID string
	// Number counts from 1 within the operation.
	Number int
	// Key is the idempotency key the attempt carried.
	Key       string
	StartedAt time.Time
	// FinishedAt is zero while the outcome is not recorded (in flight, or the
	// process died).
	FinishedAt time.Time
	// MayHaveReached is true from the moment the attempt is recorded until an
	// outcome proves the request never reached the provider.
	MayHaveReached bool
	// Outcome is empty until the outcome is recorded.
	Outcome           OutcomeClass
	HTTPStatus        int
	ProviderRequestID string
	// Error is the error text, with secrets already scrubbed by the caller.
	Error string
	// Replayed reports that the provider replayed a stored answer for the
	// attempt's key (e.g. Stripe's Idempotent-Replayed: true) instead of
	// processing the request.
	Replayed bool
}

// EventKind is the kind of an audit entry.
type EventKind string

const (
	// EventLookup records a status lookup and what it found.
	EventLookup EventKind = "lookup"
	// EventResolution records a settlement of an operation in review, by an
	// operator (Resolve) or by background work from a definitive provider
	// answer (Finish with a Resolution).
	EventResolution EventKind = "resolution"
	// EventNote records anything else worth keeping (e.g. a lease taken over).
	EventNote EventKind = "note"
	// EventWebhook records a provider event applied to the operation and
	// what it did (WebhookDetail, as JSON).
	EventWebhook EventKind = "webhook"
)

// NewEvent is an audit entry a caller records with a transition.
type NewEvent struct {
	Kind EventKind
	// Actor names who acted: an operator, or a worker (defaults to the lease
	// owner when empty).
	Actor string
	// Detail is free text or JSON, at most MaxTextBytes; secrets scrubbed.
	Detail string
}

// Event is an audit entry of an operation, kept as long as the operation.
type Event struct {
	OperationID string
	// Seq orders the events of one operation from 1.
	Seq    int
	At     time.Time
	Kind   EventKind
	Actor  string
	Detail string
}

// ResolutionDetail is the Detail of an EventResolution entry, as JSON: the
// outcome and the note, plus the provider reference, or the new key and
// generation (and the provider reference the operation had before the
// resend, which the new generation does not keep), when the call set them.
// Decode an entry's Detail into it to read one.
type ResolutionDetail struct {
	Outcome             ResolutionOutcome `json:"outcome"`
	Note                string            `json:"note"`
	ProviderRef         string            `json:"provider_ref,omitempty"`
	NewKey              string            `json:"new_key,omitempty"`
	NewGeneration       int               `json:"new_generation,omitempty"`
	PreviousProviderRef string            `json:"previous_provider_ref,omitempty"`
}

// String is the JSON text recorded as the entry's Detail.
func (d ResolutionDetail) String() string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a note reads as the operator wrote it
	if err := enc.Encode(d); err != nil {
		// Strings (valid UTF-8, checked by the store before it writes) and an int: Encode
		// cannot fail; keep the essentials anyway.
		return fmt.Sprintf("outcome %s: %s", d.Outcome, d.Note)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

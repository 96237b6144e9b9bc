package payonce

import (
	"context"
	"net/http"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Provider is the adapter for one payment provider (PSP): the shape of its
// requests, where its idempotency key goes, how long it remembers a key, how
// its answers are classified and how to ask it what became of an operation.
// Adapters live in providers/...; the root package never imports one.
//
// The client owns the HTTP layer (retries of requests that provably never
// left, the circuit breaker, the per-attempt timeout, the 1 MiB body limit)
// and the classification of transport errors; an adapter only builds requests
// and reads answers.
type Provider interface {
	// Name is the provider's name as used in identities, e.g. "stripe". It
	// must satisfy the Identity.Provider rules.
	Name() string

	// Info states the provider's idempotency facts.
	Info() ProviderInfo

	// NewRequest builds the HTTP request of one attempt of an operation. It
	// must carry r.Key in the provider's key carrier (header or body field),
	// unchanged, on every attempt: the key is what makes a resend safe. It is
	// called again for every attempt; the request must be the same each time.
	NewRequest(ctx context.Context, r SendRequest) (*http.Request, error)

	// Classify reads the provider's answer to one attempt (status, headers
	// and the body, already read, at most 1 MiB). It never sees transport
	// errors: those are classified by the client. A 2xx answer whose body
	// cannot be understood must be classified maybe_sent.
	Classify(r SendRequest, status int, header http.Header, body []byte) Outcome

	// Lookup asks the provider, read-only, what became of an operation. It
	// must never create, capture, cancel or refund anything. hc sends the
	// lookup's requests (with the client's retries of safe reads, breaker and
	// timeouts). An error means the lookup itself failed (the answer is not
	// known); a provider that has no record answers LookupNotFound.
	Lookup(ctx context.Context, hc HTTPDoer, q LookupQuery) (LookupResult, error)
}

// HTTPDoer sends one HTTP request. *http.Client satisfies it.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// ProviderInfo states a provider's idempotency facts.
type ProviderInfo struct {
	// KeyTTL is how long the provider remembers an idempotency key (e.g.
	// Stripe: 24 h). After it, a request with the same key is a new request.
	// It is the window of every kind KindKeyTTL does not name.
	KeyTTL time.Duration
	// KindKeyTTL overrides KeyTTL for the kinds whose endpoints keep keys
	// for another time (PayPal: an order's PayPal-Request-Id for 6 h, a
	// Payments v2 call's for 45 days). Each operation records the window
	// of its kind when it is created (KeyTTLFor) and every window and
	// review rule uses that recorded window: a resend is judged by how
	// long the endpoint it goes to remembers the key, never by another
	// endpoint's longer memory.
	KindKeyTTL map[Kind]time.Duration
	// MaxKeyLength is the longest key the provider accepts; keys are 36
	// characters, so it must be at least 36.
	MaxKeyLength int
	// LookupProvesAbsence declares what the adapter's Lookup can prove: true
	// when its LookupNotFound (once LookupResult.Lag has passed since the
	// last attempt) is evidence that no object exists under any of the
	// operation's keys; false when "not found" proves nothing (Adyen has no
	// status API). The zero value is the safe one: without proof of
	// absence, Client.Resolve allows a resend under a new key only on a
	// recorded refusal of every earlier key generation.
	LookupProvesAbsence bool
	// StoredErrorsFinal declares that an error the provider stores under a
	// key and replays means that nothing was done for the key and nothing
	// will be done for it later. Only then may Config.FailStoredErrors
	// record an operation failed on lookups that found nothing: a wrong
	// "failed" lets the service charge again. The zero value is the safe
	// one, and no built-in adapter sets it: Stripe documents a stored 500
	// as indeterminate and may roll the charge forward during an incident's
	// remediation, after any lookup made minutes later
	// (https://docs.stripe.com/error-low-level, Server errors);
	// Checkout.com and YooKassa never mark a replay; Adyen's lookup proves
	// nothing.
	StoredErrorsFinal bool
	// RefundsCapture declares that a refund acts on the capture's object,
	// not on the charge's: PayPal refunds a capture id
	// (POST /v2/payments/captures/{id}/refund) while a manual-capture
	// charge's reference is its authorization's. Then a refund of such a
	// charge made without RefundParams.PaymentRef goes to the reference of
	// the order's succeeded capture (Refundable.PaymentRef says which).
	RefundsCapture bool
	// WebhookRedelivery is the longest time the provider documents
	// redelivering an event it could not deliver; zero when it does not
	// push events. The inbox must keep events at least that long, or a
	// redelivery would apply again (ledger.CleanupParams.InboxRetention).
	WebhookRedelivery time.Duration
}

// KeyTTLFor is the key window of an operation of kind k: KindKeyTTL[k],
// or KeyTTL.
func (i ProviderInfo) KeyTTLFor(k Kind) time.Duration {
	if d, ok := i.KindKeyTTL[k]; ok {
		return d
	}
	return i.KeyTTL
}

// KeyTTLRange is the shortest and the longest key window the provider
// declares, over KeyTTL and every KindKeyTTL.
func (i ProviderInfo) KeyTTLRange() (shortest, longest time.Duration) {
	shortest, longest = i.KeyTTL, i.KeyTTL
	for _, d := range i.KindKeyTTL {
		shortest, longest = min(shortest, d), max(longest, d)
	}
	return shortest, longest
}

// SendRequest is one attempt of an operation, as given to an adapter.
type SendRequest struct {
	// OperationID is the operation's stable id (its key at generation 0);
	// adapters put it in the provider's metadata so that a lookup can find
	// the object by it.
	OperationID string
	// Key is the idempotency key this attempt carries.
	Key string
	// Request is the canonical request of the operation. For capture, cancel
	// and refund, Request.PaymentRef holds the provider's id of the payment.
	Request Request
}

// Outcome is the classified answer to one attempt.
type Outcome struct {
	// Class decides the operation's next state (ledger.OutcomeClass).
	Class ledger.OutcomeClass
	// Processing is set with OutcomeSuccess when the provider accepted the
	// request but has not finished it (e.g. a PaymentIntent "processing"):
	// the operation stays unknown and is looked up later.
	Processing bool
	// ProviderRef is the provider's id of the object the request created or
	// acted on, when the answer names one (declines too).
	ProviderRef string
	// HTTPStatus and RequestID come from the answer.
	HTTPStatus int
	RequestID  string
	// Code, DeclineCode and Message are the provider's error details, for
	// refusals and errors. Message must hold no secret.
	Code        string
	DeclineCode string
	Message     string
	// RetryAfter is how long the provider asked the client to wait (a
	// Retry-After header, a retry_after field); zero when it did not say.
	RetryAfter time.Duration
	// Replayed reports that the answer is the key's stored, final answer:
	// a replay (Stripe: Idempotent-Replayed: true), or an error the
	// provider documents as stored for the key (Adyen: an error without
	// Transient-Error: true). Such an answer that is not a success is final
	// for the key: every resend under it gets the same answer, so the
	// client stops resending and settles the operation by lookups and
	// webhooks only.
	Replayed bool
	// Contradiction, when non-empty, says why a 2xx answer does not belong
	// to this request (another operation id, amount or currency). The
	// operation goes to review (ReasonContradicted); it is never recorded
	// as succeeded or failed on such an answer.
	Contradiction string
}

// RequestAuthorizer is implemented by adapters whose credentials are
// obtained at run time rather than configured (PayPal's OAuth2 access
// token, fetched with the client credentials and cached until it
// expires). The client calls AuthorizeRequest on every attempt's request,
// after NewRequest and before sending it; hc sends the credential's own
// requests (the token call) with the client's retries of safe reads,
// breaker and timeouts. An error means the request was not sent: the
// attempt is recorded not sent and may be resent. Lookups and audit
// listings get hc and authorize their own requests.
//
// NewRequest stays free of network calls because the client also calls it
// to validate a request before anything is recorded.
type RequestAuthorizer interface {
	AuthorizeRequest(ctx context.Context, hc HTTPDoer, req *http.Request) error
}

// ReplayDetector is implemented by adapters whose provider marks an answer
// replayed from its idempotency store. The client's circuit breaker does not
// count a replayed 5xx against the provider's health: it is the stored
// answer of an earlier request, not a new failure.
type ReplayDetector interface {
	// Replayed reports whether the answer with status and header is the
	// provider's replay of an earlier request's stored answer.
	Replayed(status int, header http.Header) bool
}

// LookupState is what a status lookup found.
type LookupState string

const (
	// LookupSucceeded: exactly one object, and the operation took effect.
	LookupSucceeded LookupState = "succeeded"
	// LookupFailed: exactly one object, and the operation definitively failed.
	LookupFailed LookupState = "failed"
	// LookupProcessing: the provider is still working on it.
	LookupProcessing LookupState = "processing"
	// LookupNotFound: the provider has no record of the operation.
	LookupNotFound LookupState = "not_found"
	// LookupMultiple: more than one object for one operation: money already
	// moved more than once (alert).
	LookupMultiple LookupState = "multiple"
)

// LookupQuery says what to look up.
type LookupQuery struct {
	// OperationID is payonce's id of the operation, as the adapter wrote
	// it on the provider's object (metadata, reference).
	OperationID string
	// Key is the idempotency key of the current generation.
	Key string
	// Request is the operation's request, as recorded: what a found object
	// must match (amount, currency, kind).
	Request Request
	// ProviderRef is the provider's id of the object, when the ledger knows it.
	ProviderRef string
	// Since is the start of the first attempt that may have reached the
	// provider; lookups that list by creation time may start there (minus a
	// margin for clock skew).
	Since time.Time
	// Generation is the operation's current key generation (0 unless an
	// operator approved a resend under a new key); Key is its key.
	Generation int
	// EarlierKeys are the keys of the earlier generations, oldest first,
	// and EarlierRefs the provider references recorded under them. A lookup
	// must see every generation's objects: an object created under an
	// earlier key that succeeded means the operation succeeded, and two
	// that succeeded mean it is duplicated. An earlier generation's object
	// that failed does not answer for the current key.
	EarlierKeys []string
	EarlierRefs []string
	// Audit is set when the lookup is an audit's (AuditInfo.ByLookup): it
	// must find every object of the operation, searching by the operation
	// id even when the ledger knows its object, so that a second object
	// made outside payonce under the same reference is seen (duplicated).
	// A reconciliation lookup leaves it false and may read only the known
	// object.
	Audit bool
}

// LookupResult is what a status lookup found.
type LookupResult struct {
	// State is what the provider reports of the operation.
	State LookupState
	// ProviderRef is the id of the object found (the first, for Multiple).
	ProviderRef string
	// Refs lists every object found for the operation.
	Refs []string
	// Code, DeclineCode and Message are the provider's details of a
	// failure, when it gives them. Message must hold no secret.
	Code        string
	DeclineCode string
	Message     string
	// Lag is how far behind the lookup method may be (an eventually
	// consistent search); zero for a consistent read. A LookupNotFound counts
	// only once Lag has passed since the end of the last attempt.
	Lag time.Duration
	// Contradiction, when non-empty, says why the object found does not
	// belong to this operation (another operation id, amount or currency
	// than requested). The operation goes to review (ReasonContradicted).
	Contradiction string
}

package ledger

import (
	"encoding/json"
	"time"
)

// Webhooks: the inbox of provider events. An event is recorded once,
// insert-or-nothing on (Provider, ID), in the same transaction that applies
// it to the operations it names (Store.RecordWebhook), so that a redelivered
// or replayed event changes nothing and a crash between "recorded" and
// "applied" cannot happen. The rules of what an event does are
// ledgerdriver.ApplyWebhook, the one copy every store uses.

// WebhookEffect is what a provider event says about one operation.
type WebhookEffect string

const (
	// EffectSucceeded: the operation took effect at the provider.
	EffectSucceeded WebhookEffect = "succeeded"
	// EffectFailed: the operation definitively failed.
	EffectFailed WebhookEffect = "failed"
	// EffectProcessing: the provider is still working on it. Changes
	// nothing; it is recorded for the audit trail.
	EffectProcessing WebhookEffect = "processing"
	// EffectReversed: an outcome the provider had reported as a success was
	// undone later (a refund that failed after it succeeded, a failed
	// capture, a reversed refund, a chargeback). On an operation that is not
	// settled yet it means failed; on a succeeded one it is a contradiction.
	EffectReversed WebhookEffect = "reversed"
	// EffectLookup: an unauthenticated notice (YooKassa signs nothing): it is
	// never trusted by itself, it only makes the operation due for a status
	// lookup now.
	EffectLookup WebhookEffect = "lookup"
)

// WebhookEffects lists every effect in a stable order.
var WebhookEffects = []WebhookEffect{EffectSucceeded, EffectFailed, EffectProcessing, EffectReversed, EffectLookup}

// WebhookDisposition is what recording an event did to one operation.
type WebhookDisposition string

const (
	// WebhookSettled: the event moved the operation to succeeded or failed.
	WebhookSettled WebhookDisposition = "settled"
	// WebhookConfirmed: the operation was already in the state the event
	// reports.
	WebhookConfirmed WebhookDisposition = "confirmed"
	// WebhookStale: the event is older or weaker than what the ledger holds
	// (processing after succeeded): ignored.
	WebhookStale WebhookDisposition = "stale"
	// WebhookContradiction: the event contradicts a settled outcome. The
	// operation went to manual_review with the event as its reason (one
	// Cleanup removed was reopened from its tombstone): an operator must
	// look.
	WebhookContradiction WebhookDisposition = "contradiction"
	// WebhookNoted: recorded on the operation, nothing changed (processing
	// on an operation not settled yet).
	WebhookNoted WebhookDisposition = "noted"
	// WebhookNudged: the operation is due for a status lookup now.
	WebhookNudged WebhookDisposition = "nudged"
	// WebhookUnmatched: no operation of payonce's is the event's object
	// (created elsewhere, or already cleaned up with no tombstone).
	WebhookUnmatched WebhookDisposition = "unmatched"
	// WebhookAmbiguous: several operations may be the event's object (only
	// the payment was named): none is settled by it; each unsettled one is
	// made due for a lookup.
	WebhookAmbiguous WebhookDisposition = "ambiguous"
	// WebhookTombstoned: the operation was cleaned up; its tombstone is not
	// changed.
	WebhookTombstoned WebhookDisposition = "tombstoned"
	// WebhookOtherObject: the event is about an object that is not the
	// current key generation's (an earlier generation's, or another one
	// carrying the operation's id) and reports no success: it is recorded
	// on the operation and changes nothing, since it says nothing about
	// the current generation's object.
	WebhookOtherObject WebhookDisposition = "other_object"
	// WebhookDuplicate: an object that is not the current generation's
	// succeeded (an earlier generation's, or a second object): money may
	// have moved twice. The operation went to manual_review with
	// ReasonDuplicated.
	WebhookDuplicate WebhookDisposition = "duplicate"
	// WebhookUnreadable: the event verified but the adapter could not read
	// it (WebhookEvent.Unreadable says why). It changed nothing; it is
	// recorded, so that its redelivery is a duplicate, and listed for an
	// operator, who reads it in the provider's dashboard. Its outcome's
	// Target is UnreadableTarget.
	WebhookUnreadable WebhookDisposition = "unreadable"
)

// WebhookDispositions lists every disposition in a stable order.
var WebhookDispositions = []WebhookDisposition{WebhookSettled, WebhookConfirmed, WebhookStale,
	WebhookContradiction, WebhookNoted, WebhookNudged, WebhookUnmatched, WebhookAmbiguous, WebhookTombstoned,
	WebhookOtherObject, WebhookDuplicate, WebhookUnreadable}

// WebhookTarget is what an event says about one object, and how to find the
// operation behind it.
//
// The store looks the operation up by OperationID when it is set (the
// provider echoes payonce's operation id in metadata or a reference), else
// by (Provider, Kind, ProviderRef) among the operations' recorded provider
// references, else by (Provider, Kind, PaymentRef) among the operations'
// payment references. A match by id must have the same Provider and Kind.
type WebhookTarget struct {
	// Kind is the kind of operation the target speaks of (charge, capture,
	// cancel, refund). Required.
	Kind string
	// OperationID is payonce's operation id, when the object carries it.
	OperationID string
	// ProviderRef is the provider's id of the object (a PaymentIntent, a
	// refund, a modification's pspReference).
	ProviderRef string
	// PaymentRef is the provider's id of the payment the object belongs to,
	// for capture, cancel and refund targets.
	PaymentRef string
	// Key is the idempotency key the object carries (payonce writes it on
	// every object it creates); empty when the provider does not echo it.
	// It names the key generation the event is about.
	Key string
	// Amount (minor units) and Currency are the object's, when the event
	// carries them; zero and empty mean "not given". An object whose
	// amount or currency is not the operation's is a contradiction.
	Amount   int64
	Currency string
	// Effect is what the event says. Required.
	Effect WebhookEffect
	// Result is the normalized result to record when the effect settles the
	// operation (the caller's format, as FinishParams.Result).
	Result []byte
	// Detail is a short description for the audit entry and a review
	// reason: the provider's code and message, secrets scrubbed.
	Detail string
}

// WebhookEvent is one provider event, verified by the caller.
type WebhookEvent struct {
	// Provider is the provider's name. Required.
	Provider string
	// ID is the event's identity at the provider: its event id (Stripe and
	// Checkout.com evt_...), or an identity derived from the event where
	// the provider gives none (documented by each adapter). Required; at
	// most MaxWebhookIDBytes.
	ID string
	// Type is the provider's event type (payment_intent.succeeded,
	// REFUND_FAILED...). Required.
	Type string
	// OccurredAt is when the provider says the event happened; zero when it
	// does not say.
	OccurredAt time.Time
	// Targets are the objects the event speaks of; none for an event that
	// only informs (it is still recorded, so a redelivery is a duplicate).
	Targets []WebhookTarget
	// Unreadable, when set, says why an event that verified could not be
	// read (a field missing or out of range; at most MaxTextBytes, no
	// secrets). Such an event has no Targets: it is recorded with one
	// outcome, WebhookUnreadable, and changes no operation. Why record it
	// at all: a provider that retries a refused delivery in order (Adyen's
	// per-endpoint queue, for up to 30 days) would hold every later event
	// behind it; recorded, it is acknowledged once and an operator sees it
	// in the inbox.
	Unreadable string
}

// UnreadableTarget is the Target of the one outcome of an unreadable
// event: it names no target of the event, which has none.
const UnreadableTarget = -1

// MaxWebhookIDBytes bounds WebhookEvent.ID.
const MaxWebhookIDBytes = 512

// MaxWebhookTargets bounds WebhookEvent.Targets.
const MaxWebhookTargets = 16

// DefaultInboxRetention is how long Cleanup keeps inbox entries when
// CleanupParams.InboxRetention is zero: the longest redelivery a provider
// documents (Adyen retries for up to 30 days) plus a day. An entry deleted
// while the provider may still redeliver its event would let the
// redelivery apply again.
const DefaultInboxRetention = 31 * 24 * time.Hour

// RecordWebhookParams are the arguments of Store.RecordWebhook.
type RecordWebhookParams struct {
	Event WebhookEvent
	Now   time.Time // required
}

// WebhookOutcome is what an event did to one target.
type WebhookOutcome struct {
	// Target is the target's index in the event's Targets
	// (UnreadableTarget for the outcome of an unreadable event).
	Target int `json:"target"`
	// OperationID is the operation found; empty when none was.
	OperationID string             `json:"operation_id,omitempty"`
	Disposition WebhookDisposition `json:"disposition"`
	// From and To are the operation's status before and after; equal when
	// nothing changed.
	From Status `json:"from,omitempty"`
	To   Status `json:"to,omitempty"`
}

// WebhookReport is what Store.RecordWebhook did.
type WebhookReport struct {
	// Duplicate reports that the event was already in the inbox: nothing
	// changed, Outcomes is what the first delivery did.
	Duplicate bool
	// Outcomes holds one entry per target, in order; more than one for an
	// ambiguous target (one per operation nudged).
	Outcomes []WebhookOutcome
}

// InboxEntry is a recorded event.
type InboxEntry struct {
	Provider   string
	ID         string
	Type       string
	OccurredAt time.Time
	ReceivedAt time.Time
	Targets    []WebhookTarget
	Outcomes   []WebhookOutcome
	// Unreadable is why the event could not be read (WebhookEvent.Unreadable);
	// empty for an event that was read.
	Unreadable string
}

// InboxFilter selects inbox entries for ListWebhooks. Zero fields do not
// filter.
type InboxFilter struct {
	Provider string
	// Disposition keeps entries with at least one outcome of this
	// disposition (e.g. contradiction, unmatched, unreadable).
	Disposition WebhookDisposition
	// OperationID keeps entries with an outcome on this operation.
	OperationID string
	// Limit defaults to 100; at most 10000.
	Limit int
}

// WebhookDetail is the JSON detail of an EventWebhook audit entry.
type WebhookDetail struct {
	Provider    string             `json:"provider"`
	EventID     string             `json:"event_id"`
	Type        string             `json:"type"`
	Effect      WebhookEffect      `json:"effect"`
	Disposition WebhookDisposition `json:"disposition"`
	ProviderRef string             `json:"provider_ref,omitempty"`
	// Key is the idempotency key the event's object carries, when the
	// provider echoes it; Object is which of the operation's objects the
	// event was about when it was applied (ledgerdriver.ObjectOf). Together they tell
	// which key generation an event speaks for (Client.Resolve reads them
	// as evidence).
	Key    string        `json:"key,omitempty"`
	Object WebhookObject `json:"object,omitempty"`
	Detail string        `json:"detail,omitempty"`
}

// String is the detail as stored.
func (d WebhookDetail) String() string {
	b, _ := json.Marshal(d)
	return string(b)
}

// ReasonWebhookContradiction starts the review reason of an operation that an
// event contradicted after it was settled (ReviewCodeWebhookContradiction). Background lookups do not settle
// such an operation again: only an operator does, because the lookup that
// settled it is what the provider now says was wrong.
const ReasonWebhookContradiction = "provider reported a change after settlement"

// ReasonDuplicated starts the review reason of an operation for which the
// provider holds more than one object that moved money (a lookup found
// two, or an event named a second object or an earlier key generation's
// that succeeded: ReviewCodeDuplicated). A resend under a new key is never allowed for it.
const ReasonDuplicated = "provider holds more than one object for this operation"

// ReasonContradicted starts the review reason of an operation whose
// provider answer, lookup or event does not belong to it (another
// operation id, amount or currency: ReviewCodeContradicted).
const ReasonContradicted = "provider answer contradicts the ledger"

// WebhookObject says which of an operation's objects an event is about.
type WebhookObject string

const (
	// ObjectCurrent: the current key generation's object: the event names
	// its key, or the object the ledger recorded, or (at generation 0,
	// before any object is recorded) an object carrying the operation's
	// id, of which there can be only one under its key.
	ObjectCurrent WebhookObject = "current"
	// ObjectEarlier: an object created under an earlier key generation
	// (its key, or the reference recorded under it, before an operator's
	// resend).
	ObjectEarlier WebhookObject = "earlier"
	// ObjectOther: an object that carries the operation's id but is neither
	// the recorded one nor created under any key the operation sent: a
	// second object for one operation.
	ObjectOther WebhookObject = "other"
	// ObjectUnplaced: the generation cannot be told: the event names no key
	// and no object the ledger knows, and the operation was resent under a
	// new key, so the object may be any generation's.
	ObjectUnplaced WebhookObject = "unplaced"
)

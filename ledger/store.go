package ledger

import (
	"context"
	"time"
)

// Store is the durable record of operations and attempts. Every
// implementation passes the conformance suite in package ledgertest.
//
// Every method takes the current time from its parameters (an injected
// clock), never from the system clock, so tests can move leases and key
// windows without sleeping. Everything recorded uses that time; the one use
// of the real clock is measuring (monotonically) how long a call that grants
// a lease took, so that a lease is never granted already lapsed (see
// Begin). Every method but Cleanup is atomic: when it
// returns an error, the ledger is as it was before the call. Cleanup commits
// batch by batch; when it stops early it reports the batches it committed.
type Store interface {
	// Begin is the fast path of a synchronous call, in one transaction:
	// create the operation as pending if its ID is new (or return the
	// existing one), refuse a different fingerprint, take the lease, and,
	// when the operation is pending and StartAttempt is set, record the start
	// of the next attempt (status in_flight). See BeginParams and BeginResult.
	//
	// An ID that Cleanup removed is not new: Begin returns its tombstone
	// (Operation.Tombstone, with the final status) unclaimed, with no
	// attempt and no error, exactly like a terminal operation, and creates
	// nothing; a different fingerprint returns ErrFingerprintMismatch.
	//
	// The lease is never granted already lapsed: when the call took so long
	// (waiting on a lock) that Now plus the real time it took is not before
	// LeaseUntil, it changes nothing and returns an error wrapping
	// ErrLeaseLost.
	Begin(ctx context.Context, p BeginParams) (BeginResult, error)

	// CreateOrGet records the operation as pending (due at once for
	// background work) if its ID is new, or returns the existing one
	// unchanged. created reports which. An existing ID with another
	// fingerprint returns ErrFingerprintMismatch and changes nothing. An ID
	// that Cleanup removed returns its tombstone (Operation.Tombstone) with
	// created false, and creates nothing; the fingerprint is checked against
	// the tombstone's. A zero now is refused with ErrInvalid.
	CreateOrGet(ctx context.Context, op NewOperation, now time.Time) (got Operation, created bool, err error)

	// Claim takes the lease on one operation: a compare-and-set that exactly
	// one of any number of concurrent claimers wins. It succeeds when nobody
	// holds a live lease (or the caller already does) and the operation is not
	// terminal. An in_flight operation whose lease has expired becomes
	// unknown (its attempt may have been sent), never pending. Errors:
	// ErrInProgress (someone else holds a live lease), ErrTerminal,
	// ErrNotFound (also for a tombstone), ErrLeaseLost (the lease would have
	// lapsed before it was granted, as in Begin).
	Claim(ctx context.Context, p ClaimParams) (Operation, error)

	// StartAttempt durably records the start of the next attempt; the caller
	// sends the request only after it returns. The caller must hold the lease
	// and the operation must be pending or unknown. The operation becomes
	// in_flight, its attempt count grows by one, the lease is extended to
	// LeaseUntil, and the key window opens (WindowStart = Now) if it was not
	// open. Errors: ErrLeaseLost (also when the extended lease would have
	// lapsed before the call commits, as in Begin), ErrStateConflict,
	// ErrNotFound.
	StartAttempt(ctx context.Context, p StartAttemptParams) (Operation, Attempt, error)

	// Finish records a transition, and the outcome of the current attempt
	// when Attempt is set, in one transaction, only if the caller still holds
	// the lease and the status is still From. A worker whose lease expired
	// and was taken by another gets ErrLeaseLost and changes nothing.
	// Errors: ErrLeaseLost, ErrStateConflict, ErrNotFound.
	//
	// A store may make Finish durable lazily (visible at once, flushed with
	// the next durable commit): a Finish lost in a database crash leaves the
	// operation as its last durable write did, under a lease that expires,
	// and the decision table recovers the outcome by a status lookup. Every
	// other writing method is durable when it returns: above all the attempt
	// journal (Begin, StartAttempt), which rule 2 depends on.
	Finish(ctx context.Context, p FinishParams) (Operation, error)

	// ClaimDue leases up to Limit operations whose NextCheckAt is due (at or
	// before Now), oldest due first: pending ones to send, unknown ones to
	// look up, in_flight ones whose lease expired (these become unknown), and,
	// with IncludeReview, manual_review ones that still want read-only
	// lookups. Operations under a live lease are never returned, nor are
	// tombstones. Concurrent callers (in any number of processes) never
	// receive the same operation. When the call took so long that the
	// leases would have lapsed before they were granted, the whole batch is
	// rolled back and the error wraps ErrLeaseLost.
	ClaimDue(ctx context.Context, p ClaimDueParams) ([]Operation, error)

	// Events returns the audit entries of one operation in order (empty when
	// there are none, and for a tombstone: its events went with it), or
	// ErrNotFound.
	Events(ctx context.Context, id string) ([]Event, error)

	// Get returns one operation with its attempts in order, or ErrNotFound
	// (ErrInvalid for an empty id). For an ID that Cleanup removed it
	// returns the tombstone (Operation.Tombstone set) and no attempts.
	Get(ctx context.Context, id string) (Operation, []Attempt, error)

	// List returns operations matching the filter, ordered by ID, for
	// operators' tools. Tombstones are not listed.
	List(ctx context.Context, f ListFilter) ([]Operation, error)

	// ListReview returns operations in manual_review matching the filter,
	// oldest first. Tombstones are not listed.
	ListReview(ctx context.Context, f ReviewFilter) ([]Operation, error)

	// Resolve records an operator's decision on an operation in
	// manual_review: succeeded (with a provider reference), failed, or resend
	// (back to pending under NewKey and NewGeneration), with an
	// EventResolution audit entry naming the actor. Errors: ErrNotInReview
	// when the operation is not in manual_review, ErrNotFound, validation
	// errors naming the field.
	Resolve(ctx context.Context, p ResolveParams) (Operation, error)

	// Cleanup deletes succeeded and failed operations (with their attempts
	// and events) that finished before Now - Retention and whose key window
	// has closed, in transactions of at most BatchSize operations. It never
	// deletes pending, in_flight, unknown or manual_review operations. A
	// Retention shorter than KeyTTL is refused with ErrRetentionTooShort.
	//
	// Cleanup does not forget that an operation existed: each deleted
	// operation leaves a tombstone (its identity, fingerprint, final status,
	// provider reference, result, amount and currency, key TTL, creation and
	// finish times), written in the transaction of the delete. A late
	// duplicate call (Begin, CreateOrGet) finds it and gets the recorded
	// outcome, where a new operation would be sent again under a key the
	// provider has forgotten: a second charge. Tombstones are kept forever
	// unless TombstoneRetention is set; see CleanupParams. Feed entries are
	// not deleted with their operations: they are kept FeedRetention. Inbox
	// entries are kept InboxRetention, which must not be shorter than
	// WebhookRedelivery. Audit findings are never deleted: they are the
	// audits' history (see Finding).
	Cleanup(ctx context.Context, p CleanupParams) (CleanupReport, error)

	// RecordWebhook records a verified provider event in the inbox, once,
	// and applies it to the operations it names, in one durable
	// transaction: insert-or-nothing on (Event.Provider, Event.ID); when the
	// event is new, each target's operation is found (see WebhookTarget),
	// locked, changed as ledgerdriver.ApplyWebhook says and given its EventWebhook
	// entry, and the outcomes are stored with the entry. An event already
	// recorded changes nothing and returns Duplicate with the first
	// delivery's outcomes: redeliveries and replays are harmless. A target
	// that finds several operations (only its payment matched) settles
	// none: each unsettled one is made due for a lookup (WebhookAmbiguous).
	// An event that contradicts a tombstone reopens its operation in review:
	// the tombstone is replaced by the operation, in the same transaction.
	// Concurrent deliveries of one event record it exactly once. Errors:
	// validation errors naming the field; anything else means nothing was
	// recorded (the caller answers 5xx so the provider delivers again).
	RecordWebhook(ctx context.Context, p RecordWebhookParams) (WebhookReport, error)

	// ListWebhooks returns inbox entries matching the filter, newest first.
	ListWebhooks(ctx context.Context, f InboxFilter) ([]InboxEntry, error)

	// Stats summarizes the ledger for dashboards and operators (see Stats):
	// the open operations (pending, in_flight, unknown, manual_review)
	// counted by provider, kind and status, the oldest of each with its ID,
	// and the review reasons, all from one snapshot. It is read-only: it
	// writes nothing and takes no lock a writer waits for (nor waits for
	// one), so it may run every few seconds while payments flow. Its cost is
	// bounded by the number of open operations, which an index keeps apart
	// from the settled history, unless p.IncludeSettled also counts the
	// succeeded and failed ones: that reads every settled row. Tombstones
	// are not counted. A context that ends returns an error wrapping
	// ctx.Err().
	Stats(ctx context.Context, p StatsParams) (Stats, error)

	// Feed returns up to p.Limit entries of the settlement feed after
	// p.After, in cursor order (see FeedEntry and the package's section
	// "The settlement feed"): every operation's creation, and each change of status into
	// succeeded, failed or manual_review or out of manual_review, written in
	// the transaction of the change. An entry is returned only once no
	// transaction still running can commit one before it, so a reader that
	// stores the last Cursor and passes it back never skips an entry; and
	// only once it is durable with everything committed before it, so that
	// no crash of the database can take back an entry a reader was given.
	// To make a page durable, Feed writes once (the store's durable mark)
	// when the page holds entries no Feed returned before; otherwise it
	// writes nothing. Errors: validation errors naming the field (a
	// negative or too large Limit, an unknown status, a cursor that is
	// malformed or beyond the end of the feed); a page that could not be
	// made durable is an error, with no entries.
	Feed(ctx context.Context, p FeedParams) ([]FeedEntry, error)

	// findingStore keeps the differences audits found (see Finding).
	findingStore

	// Migrate brings the store's schema up to date. It is safe to call from
	// several processes at once and is a no-op when the schema is current.
	Migrate(ctx context.Context) error
}

// NewOperation is what a caller records for a new operation.
type NewOperation struct {
	ID          string   // required: the key of the identity at generation 0
	Key         string   // required: the key at Generation (equal to ID at 0)
	Provider    string   // required
	Kind        string   // required
	References  []string // required, each non-empty
	Generation  int      // >= 0
	Fingerprint string   // required
	Request     []byte   // required: canonical request JSON
	// KeyTTL is how long the provider remembers the key. Required, > 0.
	KeyTTL time.Duration
	// PaymentRef is the provider's id of the payment a capture, cancel or
	// refund acts on (empty for a charge): a webhook that names only the
	// payment finds the operation by it.
	PaymentRef string
}

// BeginParams are the arguments of Store.Begin.
type BeginParams struct {
	Op    NewOperation
	Owner string    // required: the lease owner (a process/worker id)
	Now   time.Time // required
	// LeaseUntil is when the lease ends unless renewed; must be after Now.
	LeaseUntil time.Time
	// StartAttempt asks Begin to record the start of the next attempt when
	// the operation is pending after the claim.
	StartAttempt bool
}

// BeginResult is what Store.Begin found and did.
type BeginResult struct {
	Op Operation
	// Created reports that the operation was new.
	Created bool
	// Claimed reports that the caller now holds the lease. False when the
	// operation is terminal (Op holds the recorded result).
	Claimed bool
	// Attempt is the started attempt when one was recorded (the caller may
	// send now); nil otherwise. An operation that was unknown is claimed but
	// no attempt is started: the caller must look up its status first.
	Attempt *Attempt
}

// ClaimParams are the arguments of Store.Claim.
type ClaimParams struct {
	ID         string
	Owner      string
	Now        time.Time
	LeaseUntil time.Time // must be after Now
}

// StartAttemptParams are the arguments of Store.StartAttempt.
type StartAttemptParams struct {
	ID         string
	Owner      string
	Now        time.Time
	LeaseUntil time.Time // must be after Now
	// Events are recorded in the same transaction (e.g. the lookup that
	// allowed this resend).
	Events []NewEvent
}

// AttemptOutcome is the recorded outcome of an attempt.
type AttemptOutcome struct {
	// Number is the attempt being finished; it must be the latest attempt and
	// not yet finished.
	Number            int
	Class             OutcomeClass // required
	HTTPStatus        int
	ProviderRequestID string
	Error             string // secrets already scrubbed
	// Replayed: the provider replayed a stored answer for the attempt's key.
	Replayed bool
}

// FinishParams are the arguments of Store.Finish.
type FinishParams struct {
	ID    string
	Owner string
	Now   time.Time
	// From is the status the caller expects the operation to be in.
	From Status
	// To is the new status. Legal moves (ledgerdriver.CheckTransition): from in_flight
	// (Attempt required) to pending, unknown, succeeded, failed or
	// manual_review; from pending to pending, failed or manual_review; from
	// unknown to unknown, succeeded, failed or manual_review; from
	// manual_review to manual_review, succeeded or failed (never back to
	// sending). Only StartAttempt enters in_flight.
	To Status
	// Attempt, when set, records the outcome of the current attempt. An
	// attempt finished as not_sent no longer counts for the key window; if no
	// other attempt under the current key may have reached the provider, the
	// window closes again.
	Attempt *AttemptOutcome
	// ProviderRef, when non-empty, replaces the recorded provider reference.
	ProviderRef string
	// Result, when non-nil, replaces the recorded normalized result.
	Result []byte
	// NextCheckAt is when background work should next look at the operation.
	// Required for pending and unknown (zero means now); with manual_review a
	// non-zero value asks for further read-only lookups; ignored for
	// succeeded and failed.
	NextCheckAt time.Time
	// ReviewCode and ReviewReason are required when To is manual_review:
	// the code (one of ReviewCodes) and the sentence for a person. They
	// replace the operation's; an unknown code is refused.
	ReviewCode   ReviewCode
	ReviewReason string
	// Resolution, when set, is recorded with the transition, and as an
	// EventResolution audit entry: used when background work settles an
	// operation in review from a definitive provider answer (Actor names the
	// job).
	Resolution *Resolution
	// Events are recorded in the same transaction (e.g. the lookup behind
	// this transition).
	Events []NewEvent
	// KeepLease keeps the caller's lease (e.g. to look up and resend within
	// the same call) instead of releasing it. Ignored for terminal statuses.
	KeepLease bool
}

// ClaimDueParams are the arguments of Store.ClaimDue.
type ClaimDueParams struct {
	Owner      string
	Now        time.Time
	LeaseUntil time.Time // must be after Now
	Limit      int       // 1..10000
	// Provider, when non-empty, claims only that provider's operations.
	Provider string
	// IncludeReview also claims manual_review operations whose NextCheckAt is
	// due (read-only lookups; never a request that moves money).
	IncludeReview bool
}

// ListFilter selects operations for List. Zero fields do not filter.
type ListFilter struct {
	Status   Status
	Provider string
	Kind     string
	// AfterID returns operations whose ID sorts after it (keyset paging).
	AfterID string
	// ProviderRef keeps the operations whose recorded provider reference
	// is exactly this (a search by the provider's id of a payment, refund
	// or modification). Several operations may share one (a capture
	// recorded under its payment's id).
	ProviderRef string
	// Key keeps the operation whose current idempotency key is exactly
	// this, whatever its generation (an earlier generation's key finds
	// nothing: a resend replaced it).
	Key string
	// CreatedFrom and CreatedBefore, when set, keep the operations created
	// in [CreatedFrom, CreatedBefore) (an audit's period). Either may be set
	// alone; with both, CreatedBefore must be after CreatedFrom. No index
	// holds the creation time (it would cost every insert): the list still
	// walks the operations in ID order, so a page costs about Limit divided
	// by the share of operations in the range, and paging through a range
	// reads the table once.
	CreatedFrom   time.Time
	CreatedBefore time.Time
	// Limit defaults to 100; at most 10000.
	Limit int
}

// ReviewFilter selects operations in review. Zero fields do not filter.
type ReviewFilter struct {
	Provider string
	Kind     string
	// Code keeps operations whose review code is Code.
	Code ReviewCode
	// Reason matches the review reason exactly.
	Reason string
	// EnteredBefore keeps operations that entered review before this time.
	EnteredBefore time.Time
	// AfterReviewAt and AfterID, when AfterID is non-empty, return only
	// operations that come after (AfterReviewAt, AfterID) in the queue's
	// order (ReviewAt, then ID): keyset pagination, where the next page
	// starts after the last operation of the previous one (its ReviewAt
	// and ID). Unlike an offset, a page stays correct while operations
	// enter and leave review between pages, and a deep page costs what the
	// first one does. One without the other is refused.
	AfterReviewAt time.Time
	AfterID       string
	// Limit defaults to 100; at most 10000.
	Limit int
}

// ResolveParams are the arguments of Store.Resolve.
type ResolveParams struct {
	ID      string
	Actor   string // required
	Note    string // required
	Outcome ResolutionOutcome
	// ProviderRef is required with ResolveSucceeded.
	ProviderRef string
	// NewKey and NewGeneration are required with ResolveResend: the key of
	// the identity at the next generation (NewGeneration = Generation + 1).
	NewKey        string
	NewGeneration int
	// CheckEvents asks the store to refuse with ErrStateConflict when the
	// operation has more audit entries than EventsSeen, the number the
	// caller read before it decided (Client.Resolve reads them as the
	// evidence a resend needs), by the time it holds the row: an event
	// recorded in between (a webhook saying money moved) is never decided
	// past; the caller reads again and decides again.
	CheckEvents bool
	EventsSeen  int
	Now         time.Time
}

// CleanupParams are the arguments of Store.Cleanup.
type CleanupParams struct {
	Now time.Time
	// Retention is how long finished operations are kept. Must be at least
	// KeyTTL: a row must outlive the provider's memory of its key.
	Retention time.Duration
	// KeyTTL is the longest key TTL of the providers in use. Required, > 0.
	KeyTTL time.Duration
	// BatchSize is the number of operations deleted per transaction;
	// defaults to 1000; at most 100000.
	BatchSize int
	// TombstoneRetention is how long the tombstones of deleted operations
	// are kept, counted from the operation's finish time. Zero (the
	// default) keeps them forever; a positive value deletes tombstones
	// whose operation finished more than TombstoneRetention before Now. It
	// must not be shorter than Retention. A caller whose duplicates may
	// arrive at any time (a retried job queue, a replayed event log) should
	// keep them forever: a duplicate that finds no tombstone is sent again.
	TombstoneRetention time.Duration
	// InboxRetention is how long webhook inbox entries are kept, counted
	// from when they were received. Zero means DefaultInboxRetention (31
	// days). It must outlast the provider's redelivery (Adyen: 30 days,
	// Stripe: 3 days, Checkout.com: about 30 hours): an entry deleted while
	// its event may still be delivered would let the redelivery apply again.
	InboxRetention time.Duration
	// WebhookRedelivery is the longest time any provider in use redelivers
	// an event (payonce.ProviderInfo.WebhookRedelivery); zero when none
	// pushes events. An InboxRetention shorter than it is refused.
	WebhookRedelivery time.Duration
	// FeedRetention is how long settlement feed entries are kept, counted
	// from their At. Zero means DefaultFeedRetention (31 days); negative is
	// refused. Entries are purged from the oldest end of the feed only: a
	// newer entry ahead of an old one keeps the old one longer, never the
	// other way round. It must outlast the longest time a feed consumer may
	// be down: a consumer whose next entries were purged never learns of
	// them.
	FeedRetention time.Duration
}

// CleanupReport says what Cleanup did, so that a cleanup that stopped
// working is visible.
type CleanupReport struct {
	Deleted int
	Batches int
	// OldestFinishedAt is the finish time of the oldest succeeded or failed
	// operation left; zero when none is left.
	OldestFinishedAt time.Time
	// Tombstoned counts the tombstones this call wrote (one per deleted
	// operation).
	Tombstoned int
	// TombstonesPurged counts the tombstones this call deleted
	// (TombstoneRetention).
	TombstonesPurged int
	// Tombstones is the number of tombstones left after the call.
	Tombstones int
	// InboxPurged counts the webhook inbox entries this call deleted.
	InboxPurged int
	// FeedPurged counts the settlement feed entries this call deleted.
	FeedPurged int
}

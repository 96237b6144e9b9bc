package ledger

import "time"

// Stats is a read-only summary of the ledger for dashboards and the CLI
// (`payonce stats`): how much work is open, how old the oldest of it is, and
// why operations wait for a person. Store.Stats computes it without locks
// and without writing; its cost is bounded by the number of open operations
// (pending, in flight, unknown, in review), never by the settled history,
// unless StatsParams.IncludeSettled asks for the settled counts too. Every
// count comes from one snapshot: an operation that changes status while
// Stats runs is counted once, before or after the change. Tombstones (what
// Cleanup left of deleted operations) are not counted.
//
// Statuses are ordered as in Statuses (pending, in_flight, unknown,
// succeeded, failed, manual_review), providers, kinds and reasons by byte
// order. Open, Oldest and Reviews are empty, never nil.
type Stats struct {
	// Open counts the operations that are not settled, one entry per
	// (provider, kind, status) that has any, ordered by provider, kind and
	// status. Status is one of StatusPending, StatusInFlight, StatusUnknown
	// and StatusManualReview.
	Open []StatusCount
	// Settled counts succeeded and failed operations the same way (tombstones
	// excluded). Nil unless StatsParams.IncludeSettled (then empty, not nil,
	// when there are none): counting them reads every settled row, which a
	// scrape every few seconds must not do.
	Settled []StatusCount
	// Oldest is, for each (provider, kind, open status) in Open, the
	// creation time of its oldest operation (for StatusManualReview: the
	// earliest ReviewAt, when it entered review), ordered as Open. Of
	// several operations with that time, the one with the smallest ID.
	Oldest []OldestOpen
	// Reviews counts the operations in manual review by provider, kind,
	// ReviewCode and ReviewReason, ordered by provider, kind, code and
	// reason.
	Reviews []ReasonCount
	// Consumers are the named feed consumers (ledgerpg.NewConsumer,
	// ledgersqlite.NewConsumer), ordered by name: where each one's cursor
	// is and how far behind the feed it is. Read by a second statement
	// (not the snapshot of the counts above), at the cost of one index
	// lookup in the feed per consumer. Empty, never nil.
	Consumers []ConsumerLag
	// Inbox counts the webhook inbox entries received at or after
	// StatsParams.InboxSince, by provider and disposition (see
	// InboxCount), ordered by provider, then disposition (the row of all
	// entries, Disposition "", first). Read by a separate statement,
	// bounded by the entries received since then (the inbox's received-at
	// index). Nil when InboxSince is zero; otherwise empty, not nil, when
	// nothing was received.
	Inbox []InboxCount
	// Findings counts the open audit findings by provider and class
	// (acknowledged ones are not counted), ordered by provider, then class
	// in the order of FindingClasses. Read by a separate statement (not the
	// snapshot of the operation counts), from an index that holds only the
	// open findings. Empty, never nil.
	Findings []FindingCount
}

// InboxCount is what the webhook inbox holds of one provider's events
// received since StatsParams.InboxSince, for one disposition.
//
// The row with Disposition "" counts every recorded entry (each distinct
// event the store recorded once, including events without targets, which
// have no outcome). The other rows count by the disposition of the
// entries' outcomes (ledger.WebhookDispositions): Entries is how many
// entries have at least one outcome of that disposition, Outcomes how
// many outcomes of it there are (an event with several targets, or an
// ambiguous target nudging several operations, has several). For the
// console's overview: recorded is the "" row, unmatched
// WebhookUnmatched, unreadable WebhookUnreadable, contradictions
// WebhookContradiction.
//
// What is not stored, so not counted: redeliveries of an event already in
// the inbox. RecordWebhook finds the entry and writes nothing
// (WebhookReport.Duplicate), so how often a provider delivered an event is
// not known to the ledger. WebhookDuplicate is something else: an event
// saying a second object succeeded (money may have moved twice), not a
// second delivery. Events refused before RecordWebhook (a bad signature,
// an unknown provider) are not stored either, nor are entries Cleanup
// already purged (CleanupParams.InboxRetention).
type InboxCount struct {
	Provider string
	// Disposition is the outcomes' disposition, or "" for the row of all
	// entries.
	Disposition WebhookDisposition
	// Entries counts inbox entries (events): all of them in the "" row,
	// those with an outcome of Disposition otherwise.
	Entries int64
	// Outcomes counts outcomes: all of them in the "" row, those of
	// Disposition otherwise.
	Outcomes int64
}

// StatusCount is how many operations of one provider and kind have Status.
type StatusCount struct {
	Provider string
	Kind     string
	Status   Status
	Count    int64
}

// OldestOpen is the oldest open operation of one provider, kind and status.
type OldestOpen struct {
	Provider string
	Kind     string
	Status   Status
	// Since is CreatedAt of the oldest operation with Status, or for
	// StatusManualReview the earliest ReviewAt.
	Since time.Time
	// OperationID names that operation, for an operator to look at.
	OperationID string
}

// ReasonCount is how many operations in manual review of one provider and
// kind have Code and Reason.
type ReasonCount struct {
	Provider string
	Kind     string
	Code     ReviewCode
	Reason   string
	Count    int64
}

// StatsParams selects what Store.Stats computes.
type StatsParams struct {
	// IncludeSettled also counts succeeded and failed operations
	// (Stats.Settled): a scan of the settled history, for the CLI, not for
	// a metrics scrape.
	IncludeSettled bool
	// InboxSince, when not zero, also counts the webhook inbox entries
	// received at or after it (Stats.Inbox). Zero: no inbox counts, and
	// Stats reads no inbox row.
	InboxSince time.Time
}

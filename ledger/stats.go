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
}

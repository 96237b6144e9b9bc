package ledger

import "time"

// FeedCursor is a position in the feed: opaque text, to be stored as it is
// and passed back as FeedParams.After. The zero value is the start of the
// feed. A cursor belongs to the ledger (database, schema) it came from.
type FeedCursor string

// FeedEntry is one status change of an operation.
type FeedEntry struct {
	// Cursor is this entry's position: pass it as FeedParams.After to read
	// the entries after it.
	Cursor      FeedCursor
	OperationID string
	// Key and Generation are the operation's key at the time of the change.
	Key        string
	Generation int
	Provider   string
	Kind       string
	References []string
	// From is the status before the change; empty when the entry records
	// the creation of the operation (To is then pending).
	From Status
	// To is the status after the change.
	To Status
	// ProviderRef is the provider's reference recorded with the change
	// (empty until known).
	ProviderRef string
	// ReviewCode and ReviewReason are set when To is manual_review.
	ReviewCode   ReviewCode
	ReviewReason string
	// At is the time of the change (the caller's injected clock: the
	// operation's UpdatedAt after it).
	At time.Time
}

// Limits of FeedParams.Limit.
const (
	DefaultFeedLimit = 100
	MaxFeedLimit     = 10000
)

// DefaultFeedRetention is how long Cleanup keeps feed entries when
// CleanupParams.FeedRetention is zero.
const DefaultFeedRetention = 31 * 24 * time.Hour

// FeedParams are the arguments of Store.Feed.
type FeedParams struct {
	// After is the cursor of the last entry the caller has processed; the
	// zero cursor reads from the start. A cursor the store did not hand out
	// (malformed, or beyond the end of the feed: another ledger's) is
	// refused with a ValidationError on After.
	After FeedCursor
	// Limit is the most entries returned: 0 means DefaultFeedLimit; at most
	// MaxFeedLimit.
	Limit int
	// Provider, when non-empty, returns only that provider's entries.
	Provider string
	// Statuses, when non-empty, returns only entries whose To is one of them
	// (e.g. succeeded and failed for a service that only settles orders).
	// Filtered entries are skipped, not held back: the cursor of the last
	// returned entry is past them. A consumer that shows an order's state
	// must not filter: manual_review -> pending (an operator's resend) is
	// an entry too (see "The settlement feed" in the package doc).
	Statuses []Status
}

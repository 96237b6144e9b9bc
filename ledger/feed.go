package ledger

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The settlement feed: a durable, ordered, cursor-based list of the status
// changes of operations, so that a service learns every settlement made in
// the background (by ClaimDue workers, webhooks, operators) exactly once,
// across crashes. The consumer's loop is the processed-event pattern:
//
//	entries, _ := store.Feed(ctx, ledger.FeedParams{After: cursor, Limit: 100})
//	for _, e := range entries {
//		// in the consumer's own transaction: mark the order paid (or
//		// failed) for e, and store e.Cursor as its new cursor.
//	}
//
// A crash between reading and committing reads the same entries again; a
// crash after the commit resumes after them. Nothing is skipped and nothing
// is applied twice, because the cursor commits with what it stands for.
//
// What is recorded: one entry when an operation is created (From is empty,
// To is pending, also when Begin starts its first attempt in the same
// transaction), one for every change of status into succeeded, failed or
// manual_review, and one for every change out of manual_review (an
// operator's resend back to pending). The churn of sending (pending,
// in_flight, unknown and back) is not recorded: it is the hot path, and no
// consumer acts on it. So the common life of an operation costs two feed
// rows: its creation and its settlement. An update that keeps the status
// (manual_review to manual_review) records nothing.
//
// Entries are written by the database in the transaction of the change
// itself (a trigger on the operations table, so that no writing path can
// forget one): a change that commits has its entry, a change that rolls
// back has none, and a crash can neither lose nor duplicate one.
//
// Order: entries come in cursor order, and a cursor never goes back. An
// entry committed after a reader passed its position is never skipped:
// each store returns only entries whose position no later commit can
// precede (see each store's Feed). The order is not strictly commit order
// nor creation order, but two entries of one operation are always in the
// order they were made, also when the changes were made by transactions
// that waited for each other (a webhook waiting for the Finish that
// settled its operation first).
//
// Durability: Feed returns an entry only once it is durable, with
// everything committed before it (PostgreSQL: flushed to the write-ahead
// log; SQLite: the WAL file synced), also when the change itself was
// committed lazily (Finish, see each store's DurableOutcomes). A crash of
// the database server, the operating system or the machine can therefore
// neither take back an entry a consumer was given nor make the store
// write later entries before a cursor it handed out. This costs a small
// write and one flush per page that returns entries no Feed returned
// before, nothing per change.
//
// A ledger upgraded to the feed's schema starts with an empty feed: what
// happened before the upgrade has no entries; the changes made after it
// have.
//
// Retention: Cleanup deletes feed entries older than
// CleanupParams.FeedRetention (default DefaultFeedRetention), counted from
// their At. Entries outlive the operations they name: an operation deleted
// by Cleanup keeps its entries until then. A consumer must read the feed
// more often than that.

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
	// ReviewReason is set when To is manual_review.
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
	// returned entry is past them.
	Statuses []Status
}

// Validate checks FeedParams (not the cursor's position, which only the
// store can judge).
func (p FeedParams) Validate() error {
	if p.Limit < 0 || p.Limit > MaxFeedLimit {
		return invalid("Limit", "must be between 0 (default %d) and %d, got %d", DefaultFeedLimit, MaxFeedLimit, p.Limit)
	}
	for i, s := range p.Statuses {
		if _, err := ParseStatus(string(s)); err != nil {
			return invalid(fmt.Sprintf("Statuses[%d]", i), "%v", err)
		}
	}
	if _, _, err := p.After.Parse(); err != nil {
		return err
	}
	return nil
}

// EffectiveLimit is Limit, or DefaultFeedLimit when it is zero.
func (p FeedParams) EffectiveLimit() int { return orDefault(p.Limit, DefaultFeedLimit) }

// StatusNames is Statuses as strings, for a store's statement (empty, not
// nil, when unset).
func (p FeedParams) StatusNames() []string {
	out := make([]string, len(p.Statuses))
	for i, s := range p.Statuses {
		out[i] = string(s)
	}
	return out
}

// MakeFeedCursor builds the cursor of a store's position: epoch orders
// first (PostgreSQL: the entry's position, at least the writing
// transaction's id; SQLite: 0), then seq.
// For the stores; consumers treat cursors as opaque.
func MakeFeedCursor(epoch, seq int64) FeedCursor {
	return FeedCursor(strconv.FormatInt(epoch, 10) + "." + strconv.FormatInt(seq, 10))
}

// Parse returns the epoch and seq of a cursor made by MakeFeedCursor (0, 0
// for the zero cursor), or a ValidationError on After.
func (c FeedCursor) Parse() (epoch, seq int64, err error) {
	if c == "" {
		return 0, 0, nil
	}
	e, s, ok := strings.Cut(string(c), ".")
	epoch, err1 := strconv.ParseInt(e, 10, 64)
	seq, err2 := strconv.ParseInt(s, 10, 64)
	if !ok || err1 != nil || err2 != nil || epoch < 0 || seq < 0 {
		return 0, 0, invalid("After", "%q is not a feed cursor: pass back a FeedEntry.Cursor as it was returned (or empty to start)", string(c))
	}
	return epoch, seq, nil
}

// FeedCursorBeyondEnd is the error of a cursor past the end of the feed: it
// was not handed out by this ledger.
func FeedCursorBeyondEnd(c FeedCursor) error {
	return invalid("After", "cursor %q is beyond the end of the feed: it comes from another ledger (database or schema), or the ledger was restored from an older backup", string(c))
}

// EffectiveFeedRetention is FeedRetention, or DefaultFeedRetention when it
// is zero.
func (p CleanupParams) EffectiveFeedRetention() time.Duration {
	if p.FeedRetention == 0 {
		return DefaultFeedRetention
	}
	return p.FeedRetention
}

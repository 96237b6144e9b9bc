// What the SQL stores (ledgerpg and ledgersqlite) share for the settlement
// feed (ledger.Store.Feed): the flow of a read (validate, check the cursor
// against the end of the feed, read a page, make what it read durable
// before handing it out) and the turning of a stored row into a
// ledger.FeedEntry. What each store says to its
// database, and how it keeps the feed gap-safe and durable, stays in the
// store.

package sqlstore

import (
	"fmt"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// FeedRow is one stored feed row as a store read it: Entry holds every field
// but Cursor, From and To, which Entry() fills from the rest.
type FeedRow struct {
	Epoch, Seq int64
	From, To   string // From is empty for a creation
	ReviewCode string // empty unless To is manual_review
	Entry      ledger.FeedEntry
}

// Dest returns the scan destinations of the row's operation columns, in
// the order both stores select them: operation_id, key, generation,
// provider, kind, then (after refs, which each store decodes its own way)
// from_status, to_status, provider_ref, review_code, review_reason.
func (r *FeedRow) Dest() (head, tail []any) {
	e := &r.Entry
	return []any{&e.OperationID, &e.Key, &e.Generation, &e.Provider, &e.Kind},
		[]any{&r.From, &r.To, &e.ProviderRef, &r.ReviewCode, &e.ReviewReason}
}

// FeedEntry turns r into a FeedEntry; a status the ledger does not know is
// reported as ledger.ErrCorrupt naming the row.
func (r FeedRow) FeedEntry() (ledger.FeedEntry, error) {
	e := r.Entry
	to, err := ledgerdriver.ParseStatus(r.To)
	if err != nil {
		return ledger.FeedEntry{}, ledgerdriver.Corrupt(e.OperationID, fmt.Sprintf("feed[%d].to_status", r.Seq), err)
	}
	var from ledger.Status
	if r.From != "" {
		if from, err = ledgerdriver.ParseStatus(r.From); err != nil {
			return ledger.FeedEntry{}, ledgerdriver.Corrupt(e.OperationID, fmt.Sprintf("feed[%d].from_status", r.Seq), err)
		}
	}
	if r.ReviewCode != "" {
		if e.ReviewCode, err = ledgerdriver.ParseReviewCode(r.ReviewCode); err != nil {
			return ledger.FeedEntry{}, ledgerdriver.Corrupt(e.OperationID, fmt.Sprintf("feed[%d].review_code", r.Seq), err)
		}
	}
	e.Cursor, e.From, e.To = ledgerdriver.MakeFeedCursor(r.Epoch, r.Seq), from, to
	return e, nil
}

// FeedSteps are one store's statements for a Feed read. Each returns its
// errors unwrapped; ReadFeed wraps them with wrap.
type FeedSteps struct {
	// Beyond reports whether the position (epoch, seq) is past anything the
	// store can have handed out.
	Beyond func(epoch, seq int64) (bool, error)
	// Page reads up to limit rows after (epoch, seq) in feed order, of the
	// provider (when not empty) and with To in statuses (when not empty).
	Page func(epoch, seq int64, limit int, provider string, statuses []string) ([]FeedRow, error)
	// Durable runs after a Page that read rows, before they are handed
	// out: once it returns nil, no crash of the database (PostgreSQL: of
	// its server; SQLite: of the machine) can take back any of them, nor
	// anything committed before them. last is the page's last row.
	Durable func(last FeedRow) error
}

// ReadFeed runs ledger.Store.Feed: validation errors are returned as they are,
// store errors wrapped by wrap. The result is empty, never nil.
func ReadFeed(p ledger.FeedParams, steps FeedSteps, wrap func(error) error) ([]ledger.FeedEntry, error) {
	if err := ledgerdriver.ValidateFeed(p); err != nil {
		return nil, err
	}
	epoch, seq, err := ledgerdriver.ParseFeedCursor(p.After)
	if err != nil {
		return nil, err
	}
	if p.After != "" {
		// A cursor of another ledger would silently skip or repeat entries
		// here; past the end of this feed, it can be told and refused.
		beyond, err := steps.Beyond(epoch, seq)
		if err != nil {
			return nil, wrap(err)
		}
		if beyond {
			return nil, ledgerdriver.FeedCursorBeyondEnd(p.After)
		}
	}
	rows, err := steps.Page(epoch, seq, ledgerdriver.FeedLimit(p), p.Provider, ledgerdriver.FeedStatusNames(p))
	if err != nil {
		return nil, wrap(err)
	}
	if len(rows) > 0 {
		// An entry handed out is acted on (an order is marked paid) and its
		// cursor stored. Were a crash to take it back, the consumer would
		// hold a settlement the ledger no longer has, and the store could
		// number what it writes next at or below that cursor, where the
		// consumer never reads: so nothing leaves before it is durable.
		if err := steps.Durable(rows[len(rows)-1]); err != nil {
			return nil, wrap(err)
		}
	}
	out := make([]ledger.FeedEntry, 0, len(rows))
	for _, r := range rows {
		e, err := r.FeedEntry()
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, e)
	}
	return out, nil
}

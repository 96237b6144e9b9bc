package ledgerdriver

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce/ledger"
)

// ValidateFeed checks FeedParams (not the cursor's position, which only the
// store can judge).
func ValidateFeed(p ledger.FeedParams) error {
	if p.Limit < 0 || p.Limit > ledger.MaxFeedLimit {
		return invalid("Limit", "must be between 0 (default %d) and %d, got %d", ledger.DefaultFeedLimit, ledger.MaxFeedLimit, p.Limit)
	}
	for i, s := range p.Statuses {
		if _, err := ParseStatus(string(s)); err != nil {
			return invalid(fmt.Sprintf("Statuses[%d]", i), "%v", err)
		}
	}
	if _, _, err := ParseFeedCursor(p.After); err != nil {
		return err
	}
	return nil
}

// FeedLimit is p.Limit, or ledger.DefaultFeedLimit when it is zero.
func FeedLimit(p ledger.FeedParams) int { return orDefault(p.Limit, ledger.DefaultFeedLimit) }

// FeedStatusNames is p.Statuses as strings, for a store's statement (empty, not
// nil, when unset).
func FeedStatusNames(p ledger.FeedParams) []string {
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
func MakeFeedCursor(epoch, seq int64) ledger.FeedCursor {
	return ledger.FeedCursor(strconv.FormatInt(epoch, 10) + "." + strconv.FormatInt(seq, 10))
}

// ParseFeedCursor returns the epoch and seq of a cursor made by
// MakeFeedCursor (0, 0 for the zero cursor), or a ledger.ValidationError on
// After.
func ParseFeedCursor(c ledger.FeedCursor) (epoch, seq int64, err error) {
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
func FeedCursorBeyondEnd(c ledger.FeedCursor) error {
	return invalid("After", "cursor %q is beyond the end of the feed: it comes from another ledger (database or schema), or the ledger was restored from an older backup", string(c))
}

// FeedRetention is p.FeedRetention, or ledger.DefaultFeedRetention when
// it is zero.
func FeedRetention(p ledger.CleanupParams) time.Duration {
	if p.FeedRetention == 0 {
		return ledger.DefaultFeedRetention
	}
	return p.FeedRetention
}

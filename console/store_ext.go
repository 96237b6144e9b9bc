package console

import (
	"context"
	"time"

	"github.com/payonce/payonce/ledger"
)

// The store calls that use the console's additions to the ledger: keyset
// pagination of the review queue, search by provider reference and key,
// and the webhook inbox counts.

// inboxRow is one line of the overview's webhook inbox table.
type inboxRow struct {
	Provider string
	Outcome  string
	Entries  int64
	Outcomes int64
}

// stats is Store.Stats with the inbox counts since since.
func (h *handler) stats(ctx context.Context, since time.Time) (ledger.Stats, []inboxRow, error) {
	s, err := h.cfg.Store.Stats(ctx, ledger.StatsParams{InboxSince: since})
	if err != nil {
		return s, nil, err
	}
	rows := make([]inboxRow, 0, len(s.Inbox))
	for _, c := range s.Inbox {
		label := string(c.Disposition)
		if label == "" {
			label = "recorded (every entry)"
		}
		rows = append(rows, inboxRow{Provider: c.Provider, Outcome: label, Entries: c.Entries, Outcomes: c.Outcomes})
	}
	return s, rows, nil
}

// listReview is one page of the queue after (afterAt, afterID) in its
// order (ReviewAt, then ID), oldest first: a keyset page, which costs what
// the first page costs however deep it is, and stays right while
// operations enter and leave review between pages.
func (h *handler) listReview(ctx context.Context, f ledger.ReviewFilter, afterAt time.Time, afterID string, limit int) ([]ledger.Operation, error) {
	f.AfterReviewAt, f.AfterID, f.Limit = afterAt, afterID, limit
	return h.cfg.Store.ListReview(ctx, f)
}

// findByRefOrKey lists the operations whose provider reference or current
// key is q (each an exact, indexed match).
func (h *handler) findByRefOrKey(ctx context.Context, q string) ([]ledger.Operation, error) {
	byRef, err := h.cfg.Store.List(ctx, ledger.ListFilter{ProviderRef: q, Limit: 100})
	if err != nil {
		return nil, err
	}
	byKey, err := h.cfg.Store.List(ctx, ledger.ListFilter{Key: q, Limit: 1})
	if err != nil {
		return nil, err
	}
	return append(byRef, byKey...), nil
}

package ledgerpg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Events implements ledger.Store: the audit entries of one operation by
// seq, read in one statement with the operation's existence. An operation
// without events, and a tombstone, have an empty (non-nil) list.
func (s *Store) Events(ctx context.Context, id string) ([]ledger.Event, error) {
	if id == "" {
		return nil, &ledger.ValidationError{Field: "ID", Problem: "must not be empty"}
	}
	rows, err := s.pool.Query(ctx, s.q.eventsOf, id)
	if err != nil {
		return nil, translate("events", err)
	}
	defer rows.Close()
	var (
		found bool
		out   = []ledger.Event{}
	)
	for rows.Next() {
		found = true
		var (
			seq                 pgtype.Int4
			at                  pgtype.Timestamptz
			kind, actor, detail pgtype.Text
		)
		if err := rows.Scan(&seq, &at, &kind, &actor, &detail); err != nil {
			return nil, translate("events", err)
		}
		if !seq.Valid {
			continue // the operation has no events: the LEFT JOIN's empty side
		}
		k, err := ledgerdriver.ParseEventKind(kind.String)
		if err != nil {
			return nil, translate("events", ledgerdriver.Corrupt(id, fmt.Sprintf("events[%d].kind", seq.Int32), err))
		}
		out = append(out, ledger.Event{
			OperationID: id,
			Seq:         int(seq.Int32),
			At:          timeOf(at),
			Kind:        k,
			Actor:       actor.String,
			Detail:      detail.String,
		})
	}
	if err := rows.Err(); err != nil {
		return nil, translate("events", err)
	}
	if !found {
		// A tombstone's events went with its operation.
		var tombstoned bool
		if err := s.pool.QueryRow(ctx, s.q.tombstoneExists, id).Scan(&tombstoned); err != nil {
			return nil, translate("events", err)
		}
		if tombstoned {
			return out, nil
		}
		return nil, fmt.Errorf("ledgerpg: events: %w: %q", ledger.ErrNotFound, id)
	}
	return out, nil
}

// queueEvents adds the insert of evs, numbered after the operation's last
// event and stamped at, to b, if there are any. The caller holds the row
// lock of operation id.
func queueEvents(b *pgx.Batch, q *queries, id string, at time.Time, evs []ledger.NewEvent) {
	if len(evs) == 0 {
		return
	}
	kinds, actors, details := make([]string, len(evs)), make([]string, len(evs)), make([]string, len(evs))
	for i, e := range evs {
		kinds[i], actors[i], details[i] = string(e.Kind), e.Actor, e.Detail
	}
	b.Queue(q.insertEvents, id, at, kinds, actors, details)
}

package ledgersqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Events returns the audit entries of one operation ordered by seq (an
// empty, non-nil list when it has none, and for a tombstone), read in one
// statement with the operation's existence, or an error wrapping
// ledger.ErrNotFound.
func (s *Store) Events(ctx context.Context, id string) ([]ledger.Event, error) {
	if id == "" {
		return nil, fail("events", &ledger.ValidationError{Field: "ID", Problem: "must not be empty"})
	}
	var out []ledger.Event
	err := s.read(ctx, func(c *sql.Conn) error {
		out = []ledger.Event{}
		rows, err := c.QueryContext(ctx, `SELECT e.seq, e.at, e.kind, e.actor, e.detail
			FROM payonce_operations o LEFT JOIN payonce_events e ON e.operation_id = o.id
			WHERE o.id = ? ORDER BY e.seq`, id)
		if err != nil {
			return err
		}
		defer rows.Close()
		found := false
		for rows.Next() {
			found = true
			var (
				seq, at             sql.NullInt64
				kind, actor, detail sql.NullString
			)
			if err := rows.Scan(&seq, &at, &kind, &actor, &detail); err != nil {
				return err
			}
			if !seq.Valid {
				continue // no events: the LEFT JOIN's empty side
			}
			k, err := ledgerdriver.ParseEventKind(kind.String)
			if err != nil {
				return ledgerdriver.Corrupt(id, fmt.Sprintf("events[%d].kind", seq.Int64), err)
			}
			out = append(out, ledger.Event{
				OperationID: id,
				Seq:         int(seq.Int64),
				At:          fromMicros(at),
				Kind:        k,
				Actor:       actor.String,
				Detail:      detail.String,
			})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			// A tombstone's events went with its operation.
			if _, tombstoned, err := getTombstone(ctx, c, id); err != nil || tombstoned {
				return err
			}
			return fmt.Errorf("operation %q: %w", id, ledger.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, fail("events", err)
	}
	return out, nil
}

// insertEvents records evs for operation id at now, numbered after its last
// event. It runs inside the write transaction of the change the events
// document, which holds SQLite's write lock: nobody else numbers events
// meanwhile.
func insertEvents(ctx context.Context, c querier, id string, now time.Time, evs []ledger.NewEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var last int64
	if err := c.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM payonce_events WHERE operation_id = ?`, id).Scan(&last); err != nil {
		return err
	}
	for i, e := range evs {
		if _, err := c.ExecContext(ctx, `INSERT INTO payonce_events (operation_id, seq, at, kind, actor, detail)
			VALUES (?, ?, ?, ?, ?, ?)`, id, last+int64(i)+1, micros(now), string(e.Kind), e.Actor, text(e.Detail)); err != nil {
			return err
		}
	}
	return nil
}

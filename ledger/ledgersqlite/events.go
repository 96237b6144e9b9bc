package ledgersqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Events returns the audit entries of one operation ordered by seq (an
// empty, non-nil list when it has none), read in one statement with the
// operation's existence, or an error wrapping ledger.ErrNotFound.
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
			k, err := ledger.ParseEventKind(kind.String)
			if err != nil {
				return ledger.Corrupt(id, fmt.Sprintf("events[%d].kind", seq.Int64), err)
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
			return fmt.Errorf("operation %q: %w", id, ledger.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return nil, fail("events", err)
	}
	return out, nil
}

// newEvent is one audit entry a call records.
type newEvent struct {
	kind          ledger.EventKind
	actor, detail string
}

// callerEvents are the events a caller passed, each one's actor defaulting
// to the lease owner.
func callerEvents(evs []ledger.NewEvent, owner string) []newEvent {
	out := make([]newEvent, 0, len(evs)+1)
	for _, e := range evs {
		actor := e.Actor
		if actor == "" {
			actor = owner
		}
		out = append(out, newEvent{kind: e.Kind, actor: actor, detail: e.Detail})
	}
	return out
}

// insertEvents records evs for operation id at now, numbered after its last
// event. It runs inside the write transaction of the change the events
// document, which holds SQLite's write lock: nobody else numbers events
// meanwhile.
func insertEvents(ctx context.Context, c querier, id string, now time.Time, evs []newEvent) error {
	if len(evs) == 0 {
		return nil
	}
	var last int64
	if err := c.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM payonce_events WHERE operation_id = ?`, id).Scan(&last); err != nil {
		return err
	}
	for i, e := range evs {
		if _, err := c.ExecContext(ctx, `INSERT INTO payonce_events (operation_id, seq, at, kind, actor, detail)
			VALUES (?, ?, ?, ?, ?, ?)`, id, last+int64(i)+1, micros(now), string(e.kind), e.actor, text(e.detail)); err != nil {
			return err
		}
	}
	return nil
}

// resolutionDetail is the Detail of the EventResolution entry that Resolve,
// and Finish with a Resolution, record: a JSON object with the outcome and
// the note, plus the provider reference or the new key and generation when
// the call set them. ledgerpg writes the same.
type resolutionDetail struct {
	Outcome       ledger.ResolutionOutcome `json:"outcome"`
	Note          string                   `json:"note"`
	ProviderRef   string                   `json:"provider_ref,omitempty"`
	NewKey        string                   `json:"new_key,omitempty"`
	NewGeneration int                      `json:"new_generation,omitempty"`
}

// resolveDetail is the Detail of the entry Resolve records for p.
func resolveDetail(p ledger.ResolveParams) string {
	d := resolutionDetail{Outcome: p.Outcome, Note: p.Note}
	if p.Outcome == ledger.ResolveResend {
		d.NewKey, d.NewGeneration = p.NewKey, p.NewGeneration
	} else {
		d.ProviderRef = p.ProviderRef // recorded on the operation when set
	}
	return d.String()
}

func (d resolutionDetail) String() string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // a note reads as the operator wrote it
	if err := enc.Encode(d); err != nil {
		// Strings (valid UTF-8, checked by Validate) and an int: Encode
		// cannot fail; keep the essentials anyway.
		return fmt.Sprintf("outcome %s: %s", d.Outcome, d.Note)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

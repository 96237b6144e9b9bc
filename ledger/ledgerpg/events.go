package ledgerpg

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
)

// Events implements ledger.Store: the audit entries of one operation by
// seq, read in one statement with the operation's existence. An operation
// without events has an empty (non-nil) list.
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
		k, err := ledger.ParseEventKind(kind.String)
		if err != nil {
			return nil, translate("events", ledger.Corrupt(id, fmt.Sprintf("events[%d].kind", seq.Int32), err))
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
		return nil, fmt.Errorf("ledgerpg: events: %w: %q", ledger.ErrNotFound, id)
	}
	return out, nil
}

// newEvents are the audit entries one call records, in order, as the
// columns of queries.insertEvents, all stamped at the call's Now.
type newEvents struct {
	at                     time.Time
	kinds, actors, details []string
}

// callerEvents are the events a caller passed, each one's actor defaulting
// to the lease owner.
func callerEvents(evs []ledger.NewEvent, owner string, now time.Time) newEvents {
	out := newEvents{at: now}
	for _, e := range evs {
		actor := e.Actor
		if actor == "" {
			actor = owner
		}
		out.add(e.Kind, actor, e.Detail)
	}
	return out
}

func (e *newEvents) add(kind ledger.EventKind, actor, detail string) {
	e.kinds = append(e.kinds, string(kind))
	e.actors = append(e.actors, actor)
	e.details = append(e.details, detail)
}

// queue adds the insert of the events to b, if there are any. The caller
// holds the row lock of operation id.
func (e newEvents) queue(b *pgx.Batch, q *queries, id string) {
	if len(e.kinds) > 0 {
		b.Queue(q.insertEvents, id, e.at, e.kinds, e.actors, e.details)
	}
}

// resolutionDetail is the Detail of the EventResolution entry that Resolve,
// and Finish with a Resolution, record: a JSON object with the outcome and
// the note, plus the provider reference or the new key and generation when
// the call set them. ledgersqlite writes the same.
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

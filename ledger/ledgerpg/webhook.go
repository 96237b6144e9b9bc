package ledgerpg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// RecordWebhook implements ledger.Store: the inbox entry, the changes the
// event makes (ledgerdriver.ApplyWebhook), their audit entries and the outcomes
// commit in one durable transaction, with the operations it changes locked
// (SELECT ... FOR UPDATE) from their read to the commit. An event already
// recorded changes nothing and returns Duplicate with the first delivery's
// outcomes; a concurrent delivery of the same event waits for the first to
// commit and then reports a duplicate (see queries.insertWebhook).
// An unreadable event (Event.Unreadable) is recorded the same way, once,
// with one outcome, ledger.WebhookUnreadable, and changes no operation.
//
// Why never the lazy commit Finish may use: the provider is told the event
// was received once this returns, and it does not deliver it again; a
// commit lost in a crash would lose the event for good, where a lost Finish
// is recovered by a status lookup.
func (s *Store) RecordWebhook(ctx context.Context, p ledger.RecordWebhookParams) (ledger.WebhookReport, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateRecordWebhook(p); err != nil {
		return ledger.WebhookReport{}, err
	}
	targets, err := sqlstore.EncodeInbox(p.Event)
	if err != nil {
		return ledger.WebhookReport{}, translate("record webhook", err)
	}
	e := p.Event
	var rep ledger.WebhookReport
	err = s.durable(ctx, "record webhook", func(tx pgx.Tx) error {
		var err error
		rep, err = sqlstore.RecordEvent(p, sqlstore.WebhookSteps{
			Insert: func() (bool, error) {
				tag, err := tx.Exec(ctx, s.q.insertWebhook, e.Provider, e.ID, e.Type, nullTime(ledgerdriver.UTC(e.OccurredAt)), ledgerdriver.UTC(p.Now), targets)
				return tag.RowsAffected() == 1, err
			},
			Outcomes: func() ([]ledger.WebhookOutcome, error) {
				return s.outcomesOf(ctx, tx, e.Provider, e.ID)
			},
			ByID: func(id, provider, kind string) (ledger.Operation, bool, error) {
				op, err := scanOp(tx.QueryRow(ctx, s.q.lockOpOfKind, id, provider, kind))
				if errors.Is(err, pgx.ErrNoRows) {
					return ledger.Operation{}, false, nil
				}
				return op, err == nil, err
			},
			Tombstone: func(id string) (ledgerdriver.Tombstone, bool, error) {
				// A later statement than the lock: a Cleanup the lock
				// waited for has its tombstone committed with its delete.
				var ts tombstoneScan
				err := tx.QueryRow(ctx, s.q.selectTombstone, id).Scan(ts.dest()...)
				if errors.Is(err, pgx.ErrNoRows) {
					return ledgerdriver.Tombstone{}, false, nil
				}
				if err != nil {
					return ledgerdriver.Tombstone{}, false, err
				}
				return ts.tombstone()
			},
			TombstonesByRef: func(provider, kind, ref string) ([]string, error) {
				rows, err := tx.Query(ctx, s.q.tombstonesByRef, provider, kind, ref)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, pgx.RowTo[string])
			},
			ByRef: func(byPayment bool, provider, kind, ref string) ([]ledger.Operation, error) {
				query := s.q.lockByProviderRef
				if byPayment {
					query = s.q.lockByPaymentRef
				}
				rows, err := tx.Query(ctx, query, provider, kind, ref)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, rowToOp)
			},
			LatestAttempt: func(id string) (*ledger.Attempt, error) {
				a, err := scanAttempt(tx.QueryRow(ctx, s.q.latestAttempt, id))
				if errors.Is(err, pgx.ErrNoRows) {
					return nil, nil
				}
				return a, err
			},
			Earlier: func(id, current string) ([][2]string, error) {
				rows, err := tx.Query(ctx, s.q.earlier, id, current)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
					var p [2]string
					return p, row.Scan(&p[0], &p[1])
				})
			},
			Write: func(ch ledgerdriver.Change, now time.Time) error {
				b := &pgx.Batch{}
				b.Queue(s.q.save, saveArgs(ch.Op)...)
				if a := ch.Attempt; a != nil {
					b.Queue(s.q.finishAttempt, a.OperationID, a.Number, a.FinishedAt, a.MayHaveReached, string(a.Outcome),
						nullInt(a.HTTPStatus), nullText(a.ProviderRequestID), nullText(a.Error), a.Replayed)
				}
				queueEvents(b, &s.q, ch.Op.ID, now, ch.Events)
				return tx.SendBatch(ctx, b).Close()
			},
			SaveOutcomes: func(outs []ledger.WebhookOutcome) error {
				n := len(outs)
				targets, opIDs, disps, froms, tos := make([]int32, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
				for i, o := range outs {
					targets[i], opIDs[i], disps[i], froms[i], tos[i] = int32(o.Target), o.OperationID, string(o.Disposition), string(o.From), string(o.To)
				}
				_, err := tx.Exec(ctx, s.q.insertOutcomes, e.Provider, e.ID, targets, opIDs, disps, froms, tos)
				return err
			},
			Reopen: func(tomb ledger.Operation, ch ledgerdriver.Change, now time.Time) error {
				return s.reopen(ctx, tx, tomb, ch, now)
			},
		})
		return err
	})
	if err != nil {
		return ledger.WebhookReport{}, translate("record webhook", err)
	}
	return rep, nil
}

// reopen is RecordWebhook's Reopen step (sqlstore.WebhookSteps) in one
// round trip: the tombstone's delete, the operation's insert in the
// tombstone's final status, the undo of the feed's creation entry, then
// the update into review and its audit entries, whose trigger writes the
// feed's entry from the final status into manual_review.
//
// The delete comes first and is checked: a tombstone some other
// transaction reopened meanwhile is gone once this delete's wait for it
// ends, and the insert then finds that transaction's row. The whole
// transaction is then rolled back (the error), and the provider's
// redelivery finds the live operation.
func (s *Store) reopen(ctx context.Context, tx pgx.Tx, tomb ledger.Operation, ch ledgerdriver.Change, now time.Time) error {
	row := ch.Op
	row.Status = tomb.Status
	var deleted, inserted, dropped int64
	b := &pgx.Batch{}
	b.Queue(s.q.deleteTombstone, tomb.ID).Exec(func(tag pgconn.CommandTag) error {
		deleted = tag.RowsAffected()
		return nil
	})
	b.Queue(s.q.insertOp, opArgs(row)...).Exec(func(tag pgconn.CommandTag) error {
		inserted = tag.RowsAffected()
		return nil
	})
	b.Queue(s.q.dropCreatedEntry, tomb.ID).Exec(func(tag pgconn.CommandTag) error {
		dropped = tag.RowsAffected()
		return nil
	})
	b.Queue(s.q.save, saveArgs(ch.Op)...)
	queueEvents(b, &s.q, ch.Op.ID, now, ch.Events)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if deleted != 1 || inserted != 1 {
		return fmt.Errorf("reopening operation %q: its tombstone was replaced by another transaction meanwhile (deleted %d tombstones, inserted %d operations); nothing was recorded: record the event again",
			tomb.ID, deleted, inserted)
	}
	if dropped != 1 {
		// The reopened operation is not new: a creation entry left in the
		// feed would tell consumers it was (and pending again).
		return fmt.Errorf("reopening operation %q: took back %d creation entries of the feed, not 1; nothing was recorded", tomb.ID, dropped)
	}
	return nil
}

// outcomesOf reads the stored outcomes of one event in order.
func (s *Store) outcomesOf(ctx context.Context, tx pgx.Tx, provider, eventID string) ([]ledger.WebhookOutcome, error) {
	rows, err := tx.Query(ctx, s.q.webhookOutcomes, provider, eventID)
	if err != nil {
		return nil, err
	}
	// Appended to nil, not collected: none is nil, as ledgersqlite reads it
	// and as a first delivery without targets reports.
	return pgx.AppendRows([]ledger.WebhookOutcome(nil), rows, func(row pgx.CollectableRow) (ledger.WebhookOutcome, error) {
		return sqlstore.ScanOutcome(row, provider, eventID)
	})
}

// ListWebhooks implements ledger.Store: inbox entries newest received
// first (then by provider and event id), each with its targets and
// outcomes, read in one statement.
func (s *Store) ListWebhooks(ctx context.Context, f ledger.InboxFilter) ([]ledger.InboxEntry, error) {
	if err := ledgerdriver.ValidateInbox(f); err != nil {
		return nil, err
	}
	var w where
	sqlstore.InboxConds(f, s.q.outcomes, w.add)
	w.args = append(w.args, sqlstore.InboxLimit(f))
	sql := fmt.Sprintf("%s%s ORDER BY w.received_at DESC, w.provider, w.event_id LIMIT $%d", s.q.listWebhooks, w.String(), len(w.args))
	rows, err := s.pool.Query(ctx, sql, w.args...)
	if err != nil {
		return nil, translate("list webhooks", err)
	}
	out, err := pgx.CollectRows(rows, scanInboxEntry)
	if err != nil {
		return nil, translate("list webhooks", err)
	}
	return out, nil
}

// scanInboxEntry reads one row of ListWebhooks' statement.
func scanInboxEntry(row pgx.CollectableRow) (ledger.InboxEntry, error) {
	var (
		e                 ledger.InboxEntry
		occurred          pgtype.Timestamptz
		received          time.Time
		targets, outcomes string
	)
	if err := row.Scan(&e.Provider, &e.ID, &e.Type, &occurred, &received, &targets, &outcomes); err != nil {
		return e, err
	}
	e.OccurredAt, e.ReceivedAt = timeOf(occurred), received.UTC()
	err := sqlstore.DecodeInbox(&e, targets, outcomes)
	return e, err
}

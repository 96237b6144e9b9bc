package ledgersqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// RecordWebhook records a verified provider event in the inbox once and
// applies it to the operations it names (ledgerdriver.ApplyWebhook), in one
// durable write transaction: the inbox row, the operations' changes, their
// audit entries and the outcomes commit together or not at all. An event
// already recorded changes nothing and returns Duplicate with the first
// delivery's outcomes. Concurrent deliveries (in any process) take turns on
// SQLite's write lock: the first records the event, the others find it.
// An unreadable event (Event.Unreadable) is recorded the same way, once,
// with one outcome, ledger.WebhookUnreadable, and changes no operation.
//
// Why never the lazy path of Finish: the provider is told the event was
// received once this returns, and it does not deliver it again; a commit
// lost to a power cut would lose the event for good, where a lost Finish is
// recovered by a status lookup.
func (s *Store) RecordWebhook(ctx context.Context, p ledger.RecordWebhookParams) (ledger.WebhookReport, error) {
	// Once this has committed, nudge this process's feed consumers.
	defer s.feedSignal.Notify()
	if err := ledgerdriver.ValidateRecordWebhook(p); err != nil {
		return ledger.WebhookReport{}, fail("record webhook", err)
	}
	targets, err := sqlstore.EncodeInbox(p.Event)
	if err != nil {
		return ledger.WebhookReport{}, fail("record webhook", err)
	}
	e := p.Event
	var rep ledger.WebhookReport
	err = s.write(ctx, func(c *sql.Conn) error {
		var err error
		rep, err = sqlstore.RecordEvent(p, sqlstore.WebhookSteps{
			Insert: func() (bool, error) {
				res, err := c.ExecContext(ctx, `INSERT INTO payonce_webhooks
					(provider, event_id, type, occurred_at, received_at, targets) VALUES (?, ?, ?, ?, ?, ?)
					ON CONFLICT (provider, event_id) DO NOTHING`,
					e.Provider, e.ID, e.Type, micros(e.OccurredAt), micros(p.Now), targets)
				if err != nil {
					return false, err
				}
				n, err := res.RowsAffected()
				return n == 1, err
			},
			Outcomes: func() ([]ledger.WebhookOutcome, error) {
				return outcomesOf(ctx, c, e.Provider, e.ID)
			},
			ByID: func(id, provider, kind string) (ledger.Operation, bool, error) {
				op, err := scanOp(c.QueryRowContext(ctx, `SELECT `+opColumns+` FROM payonce_operations
					WHERE id = ? AND provider = ? AND kind = ?`, id, provider, kind))
				if errors.Is(err, sql.ErrNoRows) {
					return ledger.Operation{}, false, nil
				}
				return op, err == nil, err
			},
			Tombstone: func(id string) (ledgerdriver.Tombstone, bool, error) {
				return getTombstone(ctx, c, id)
			},
			TombstonesByRef: func(provider, kind, ref string) ([]string, error) {
				// provider_ref = ? implies NOT NULL: the partial index of
				// migrations/009_tombstone_refs.up.sql.
				return collect(ctx, c, func(r scanner) (string, error) {
					var id string
					return id, r.Scan(&id)
				}, `SELECT id FROM payonce_tombstones WHERE provider = ? AND kind = ? AND provider_ref = ? ORDER BY id LIMIT 2`, provider, kind, ref)
			},
			ByRef: func(byPayment bool, provider, kind, ref string) ([]ledger.Operation, error) {
				// Literal column names, so that each query matches its
				// partial index (migrations/004_webhooks.up.sql).
				query := `SELECT ` + opColumns + ` FROM payonce_operations
					WHERE provider = ? AND kind = ? AND provider_ref = ? ORDER BY id`
				if byPayment {
					query = `SELECT ` + opColumns + ` FROM payonce_operations
					WHERE provider = ? AND kind = ? AND payment_ref = ? ORDER BY id`
				}
				return queryOps(ctx, c, query, provider, kind, ref)
			},
			LatestAttempt: func(id string) (*ledger.Attempt, error) {
				a, err := scanAttempt(c.QueryRowContext(ctx, `SELECT `+attemptColumns+`
					FROM payonce_attempts WHERE operation_id = ? ORDER BY number DESC LIMIT 1`, id))
				if errors.Is(err, sql.ErrNoRows) {
					return nil, nil
				}
				if err != nil {
					return nil, err
				}
				return &a, nil
			},
			Earlier: func(id, current string) ([][2]string, error) {
				return collect(ctx, c, func(r scanner) ([2]string, error) {
					var p [2]string
					return p, r.Scan(&p[0], &p[1])
				}, earlierQuery, id, current)
			},
			Write: func(ch ledgerdriver.Change, now time.Time) error {
				if err := saveOp(ctx, c, &ch.Op); err != nil {
					return err
				}
				if ch.Attempt != nil {
					if err := finishAttempt(ctx, c, *ch.Attempt); err != nil {
						return err
					}
				}
				return insertEvents(ctx, c, ch.Op.ID, now, ch.Events)
			},
			SaveOutcomes: func(outs []ledger.WebhookOutcome) error {
				for i, o := range outs {
					if _, err := c.ExecContext(ctx, `INSERT INTO payonce_webhook_outcomes
						(provider, event_id, seq, target, operation_id, disposition, from_status, to_status)
						VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
						e.Provider, e.ID, i, o.Target, text(o.OperationID), string(o.Disposition),
						text(string(o.From)), text(string(o.To))); err != nil {
						return err
					}
				}
				return nil
			},
			Reopen: func(tomb ledger.Operation, ch ledgerdriver.Change, now time.Time) error {
				return reopen(ctx, c, tomb, ch, now)
			},
		})
		return err
	})
	if err != nil {
		return ledger.WebhookReport{}, fail("record webhook", err)
	}
	return rep, nil
}

// reopen is RecordWebhook's Reopen step (sqlstore.WebhookSteps), in the
// write transaction on c: the tombstone's delete, the operation's insert in
// the tombstone's final status, the undo of the feed's creation entry that
// insert wrote, then the update into review and its audit entries, whose
// trigger writes the feed's entry from the final status into
// manual_review. SQLite has one writer at a time, so the newest feed row
// is the insert's; its number is not handed out again (AUTOINCREMENT),
// and no reader can have seen it.
func reopen(ctx context.Context, c *sql.Conn, tomb ledger.Operation, ch ledgerdriver.Change, now time.Time) error {
	res, err := c.ExecContext(ctx, `DELETE FROM payonce_tombstones WHERE id = ?`, tomb.ID)
	if err := wroteOne(res, err); err != nil {
		return fmt.Errorf("reopening operation %q: deleting its tombstone: %w", tomb.ID, err)
	}
	row := ch.Op
	row.Status = tomb.Status
	inserted, err := insertOp(ctx, c, row)
	if err != nil {
		return err
	}
	if !inserted {
		return fmt.Errorf("reopening operation %q: its ID already has an operation row beside its tombstone", tomb.ID)
	}
	res, err = c.ExecContext(ctx, `DELETE FROM payonce_feed
		WHERE seq = (SELECT max(seq) FROM payonce_feed) AND operation_id = ? AND from_status IS NULL`, tomb.ID)
	if err := wroteOne(res, err); err != nil {
		return fmt.Errorf("reopening operation %q: taking back the feed's creation entry: %w", tomb.ID, err)
	}
	if err := saveOp(ctx, c, &ch.Op); err != nil {
		return err
	}
	return insertEvents(ctx, c, ch.Op.ID, now, ch.Events)
}

// outcomesOf reads the stored outcomes of one event in order.
func outcomesOf(ctx context.Context, q querier, provider, eventID string) ([]ledger.WebhookOutcome, error) {
	return collect(ctx, q, func(sc scanner) (ledger.WebhookOutcome, error) {
		return sqlstore.ScanOutcome(sc, provider, eventID)
	}, `SELECT target, operation_id, disposition, from_status, to_status
		FROM payonce_webhook_outcomes WHERE provider = ? AND event_id = ? ORDER BY seq`, provider, eventID)
}

// ListWebhooks returns inbox entries matching f, newest received first
// (then by provider and event id), at most f.Limit (default
// ledger.DefaultListLimit), each with its targets and outcomes, read in
// one statement.
func (s *Store) ListWebhooks(ctx context.Context, f ledger.InboxFilter) ([]ledger.InboxEntry, error) {
	if err := ledgerdriver.ValidateInbox(f); err != nil {
		return nil, fail("list webhooks", err)
	}
	var w where
	sqlstore.InboxConds(f, "payonce_webhook_outcomes", w.add)
	query := `SELECT w.provider, w.event_id, w.type, w.occurred_at, w.received_at, w.targets,
		(SELECT json_group_array(json_object('target', o.target, 'operation_id', o.operation_id,
			'disposition', o.disposition, 'from_status', o.from_status, 'to_status', o.to_status) ORDER BY o.seq)
		 FROM payonce_webhook_outcomes o WHERE o.provider = w.provider AND o.event_id = w.event_id)
		FROM payonce_webhooks w` + w.String() + `
		ORDER BY w.received_at DESC, w.provider, w.event_id LIMIT ?`
	args := append(w.args, sqlstore.InboxLimit(f))
	var out []ledger.InboxEntry
	err := s.read(ctx, func(c *sql.Conn) error {
		var err error
		out, err = collect(ctx, c, scanInboxEntry, query, args...)
		return err
	})
	if err != nil {
		return nil, fail("list webhooks", err)
	}
	if out == nil {
		out = []ledger.InboxEntry{} // none: an empty list, not nil
	}
	return out, nil
}

// scanInboxEntry reads one row of ListWebhooks' statement.
func scanInboxEntry(sc scanner) (ledger.InboxEntry, error) {
	var (
		e                  ledger.InboxEntry
		occurred, received sql.NullInt64
		targets, outcomes  string
	)
	if err := sc.Scan(&e.Provider, &e.ID, &e.Type, &occurred, &received, &targets, &outcomes); err != nil {
		return e, err
	}
	e.OccurredAt, e.ReceivedAt = fromMicros(occurred), fromMicros(received)
	err := sqlstore.DecodeInbox(&e, targets, outcomes)
	return e, err
}

// purgeInbox deletes, in the write transaction on c, up to batch inbox
// entries received before cutoff, oldest first, with their outcomes, and
// returns how many entries it deleted. The outcomes are deleted explicitly:
// with New the caller's connections may not enforce foreign keys.
func purgeInbox(ctx context.Context, c *sql.Conn, cutoff time.Time, batch int) (int, error) {
	// The same ordered selection in both statements (one write
	// transaction, so nothing changes in between): the outcomes of exactly
	// the entries deleted.
	const doomed = `SELECT provider, event_id FROM payonce_webhooks
		WHERE received_at < ? ORDER BY received_at, provider, event_id LIMIT ?`
	if _, err := c.ExecContext(ctx, `DELETE FROM payonce_webhook_outcomes
		WHERE (provider, event_id) IN (`+doomed+`)`, micros(cutoff), batch); err != nil {
		return 0, err
	}
	res, err := c.ExecContext(ctx, `DELETE FROM payonce_webhooks
		WHERE (provider, event_id) IN (`+doomed+`)`, micros(cutoff), batch)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// earlierQuery reads what an operation recorded under its earlier key
// generations (sqlstore.EarlierQuery).
var earlierQuery = sqlstore.EarlierQuery(func(n int) string { return "?" + strconv.Itoa(n) }, "payonce_attempts", "payonce_events")

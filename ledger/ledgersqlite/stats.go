package ledgersqlite

import (
	"context"
	"database/sql"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
)

// The statements of Stats, built once (see sqlstore.StatsStatement).
var (
	statsQuery        = sqlstore.StatsStatement("payonce_operations", false)
	statsSettledQuery = sqlstore.StatsStatement("payonce_operations", true)
)

// Stats implements ledger.Store with one statement (see sqlstore.StatsStatement)
// on a read connection: in autocommit, one snapshot. Under WAL a reader
// neither waits for the writer nor holds it up, and Stats never queues for
// the Store's write lock.
func (s *Store) Stats(ctx context.Context, p ledger.StatsParams) (ledger.Stats, error) {
	query := statsQuery
	if p.IncludeSettled {
		query = statsSettledQuery
	}
	var got []sqlstore.StatsRow
	err := s.read(ctx, func(c *sql.Conn) error {
		var err error
		got, err = collect(ctx, c, scanStatsRow, query)
		return err
	})
	if err != nil {
		return ledger.Stats{}, fail("stats", err)
	}
	st, err := sqlstore.AssembleStats(got, p.IncludeSettled)
	if err != nil {
		return ledger.Stats{}, fail("stats", err)
	}
	err = s.read(ctx, func(c *sql.Conn) error {
		var err error
		st.Consumers, err = collect(ctx, c, scanConsumerLag, consumerLagsQuery)
		return err
	})
	if err != nil {
		return ledger.Stats{}, fail("stats", err)
	}
	if st.Consumers == nil {
		st.Consumers = []ledger.ConsumerLag{}
	}
	if st.Findings, err = s.findingCounts(ctx); err != nil {
		return ledger.Stats{}, fail("stats", err)
	}
	if !p.InboxSince.IsZero() {
		var got []sqlstore.InboxRow
		err = s.read(ctx, func(c *sql.Conn) error {
			var err error
			since := micros(p.InboxSince)
			got, err = collect(ctx, c, scanInboxRow, inboxStatsQuery, since, since)
			return err
		})
		if err != nil {
			return ledger.Stats{}, fail("stats", err)
		}
		if st.Inbox, err = sqlstore.AssembleInbox(got); err != nil {
			return ledger.Stats{}, fail("stats", err)
		}
	}
	return st, nil
}

// inboxStatsQuery is Stats.Inbox's statement (sqlstore.InboxStatsStatement).
// INDEXED BY: without statistics (no ANALYZE) SQLite prefers walking the
// whole primary key, which yields the entries grouped by provider, to
// seeking in the received-at index; that would read the whole inbox on
// every overview page. The index is the one Cleanup and ListWebhooks use
// (migration 004).
var inboxStatsQuery = sqlstore.InboxStatsStatement("payonce_webhooks w INDEXED BY payonce_webhooks_received", "payonce_webhook_outcomes")

// scanInboxRow reads one row of inboxStatsQuery.
func scanInboxRow(sc scanner) (sqlstore.InboxRow, error) {
	var r sqlstore.InboxRow
	err := sc.Scan(&r.Provider, &r.Disposition, &r.Entries, &r.Outcomes)
	return r, err
}

// consumerLagsQuery reads the feed consumers (migration 011) and, for
// each, At of the first feed entry after its cursor (the seq after the
// cursor's '.'; the empty cursor reads as 0): one lookup in the feed's primary key per
// consumer.
const consumerLagsQuery = `SELECT c.name, c.cursor, c.cursor_at, c.updated_at,
		(SELECT f.at FROM payonce_feed f
		 WHERE f.seq > CAST(substr(c.cursor, instr(c.cursor, '.') + 1) AS INTEGER)
		 ORDER BY f.seq LIMIT 1)
	FROM payonce_feed_consumers c ORDER BY c.name`

// scanConsumerLag reads one row of consumerLagsQuery.
func scanConsumerLag(sc scanner) (ledger.ConsumerLag, error) {
	var (
		c                   ledger.ConsumerLag
		cursorAt, upd, next sql.NullInt64
	)
	err := sc.Scan(&c.Name, &c.Cursor, &cursorAt, &upd, &next)
	c.CursorAt, c.UpdatedAt, c.Behind = fromMicros(cursorAt), fromMicros(upd), fromMicros(next)
	return c, err
}

// scanStatsRow reads one row of Stats' statement.
func scanStatsRow(sc scanner) (sqlstore.StatsRow, error) {
	var (
		r     sqlstore.StatsRow
		since sql.NullInt64
		id    sql.NullString
	)
	if err := sc.Scan(append(r.Dest(), &since, &id)...); err != nil {
		return r, err
	}
	r.Since, r.ID = fromMicros(since), id.String
	return r, nil
}

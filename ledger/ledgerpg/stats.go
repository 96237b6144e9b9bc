package ledgerpg

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// Stats implements ledger.Store with one statement (see sqlstore.StatsStatement):
// one snapshot under READ COMMITTED, no transaction, no row locks. Its
// table lock (ACCESS SHARE) conflicts with no write, only with DDL.
func (s *Store) Stats(ctx context.Context, p ledger.StatsParams) (ledger.Stats, error) {
	query := s.q.stats
	if p.IncludeSettled {
		query = s.q.statsSettled
	}
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return ledger.Stats{}, translate("stats", err)
	}
	got, err := pgx.CollectRows(rows, scanStatsRow)
	if err != nil {
		return ledger.Stats{}, translate("stats", err)
	}
	st, err := sqlstore.AssembleStats(got, p.IncludeSettled)
	if err != nil {
		return ledger.Stats{}, translate("stats", err)
	}
	st.Consumers, err = s.consumerLags(ctx)
	if err != nil {
		return ledger.Stats{}, translate("stats", err)
	}
	if st.Findings, err = s.findingCounts(ctx); err != nil {
		return ledger.Stats{}, translate("stats", err)
	}
	if !p.InboxSince.IsZero() {
		st.Inbox, err = s.inboxCounts(ctx, p.InboxSince)
	}
	return st, translate("stats", err)
}

// inboxCounts reads Stats.Inbox (see sqlstore.InboxStatsStatement): the
// inbox entries received at or after since, a range of the received-at
// index.
func (s *Store) inboxCounts(ctx context.Context, since time.Time) ([]ledger.InboxCount, error) {
	since = ledgerdriver.UTC(since)
	rows, err := s.pool.Query(ctx, pgPlaceholders(sqlstore.InboxStatsStatement(s.q.webhooks+" w", s.q.outcomes)), since, since)
	if err != nil {
		return nil, err
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sqlstore.InboxRow, error) {
		var r sqlstore.InboxRow
		err := row.Scan(&r.Provider, &r.Disposition, &r.Entries, &r.Outcomes)
		return r, err
	})
	if err != nil {
		return nil, err
	}
	return sqlstore.AssembleInbox(got)
}

// consumerLags reads the feed consumers (migration 011) and, for each, At
// of the first feed entry after its cursor: one lookup in the feed's
// primary key (pos, seq) per consumer. It reads what is committed, without
// Feed's gap rule: an entry of a transaction that commits later may still
// come before the one it finds, so Behind may be later than the truth for
// as long as such a transaction runs.
func (s *Store) consumerLags(ctx context.Context) ([]ledger.ConsumerLag, error) {
	rows, err := s.pool.Query(ctx, `SELECT c.name, c.cursor, c.cursor_at, c.updated_at, f.at
		FROM `+pgx.Identifier{s.schema, "payonce_feed_consumers"}.Sanitize()+` c
		LEFT JOIN LATERAL (
			SELECT at FROM `+s.q.feed+` f
			WHERE (f.pos, f.seq) > (CASE WHEN c.cursor = '' THEN '0' ELSE split_part(c.cursor, '.', 1) END::xid8,
			                        CASE WHEN c.cursor = '' THEN 0 ELSE split_part(c.cursor, '.', 2)::bigint END)
			ORDER BY f.pos, f.seq LIMIT 1
		) f ON true
		ORDER BY c.name`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.ConsumerLag, error) {
		var (
			c                   ledger.ConsumerLag
			cursorAt, upd, next pgtype.Timestamptz
		)
		err := row.Scan(&c.Name, &c.Cursor, &cursorAt, &upd, &next)
		c.CursorAt, c.UpdatedAt, c.Behind = timeOf(cursorAt), timeOf(upd), timeOf(next)
		return c, err
	})
	if out == nil {
		out = []ledger.ConsumerLag{}
	}
	return out, err
}

// scanStatsRow reads one row of Stats' statement.
func scanStatsRow(row pgx.CollectableRow) (sqlstore.StatsRow, error) {
	var (
		r     sqlstore.StatsRow
		since pgtype.Timestamptz
		id    pgtype.Text
	)
	if err := row.Scan(append(r.Dest(), &since, &id)...); err != nil {
		return r, err
	}
	r.Since, r.ID = timeOf(since), id.String
	return r, nil
}

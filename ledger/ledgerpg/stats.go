package ledgerpg

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/sqlstore"
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
	return st, translate("stats", err)
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

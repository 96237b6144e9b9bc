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
	return st, nil
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

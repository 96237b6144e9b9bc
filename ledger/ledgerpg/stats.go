package ledgerpg

import (
	"context"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/internal/statsql"
)

// Stats implements ledger.Store with one statement (see package statsql):
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
	defer rows.Close()
	var got []statsql.Row
	for rows.Next() {
		var (
			r     statsql.Row
			since pgtype.Timestamptz
			id    pgtype.Text
		)
		if err := rows.Scan(&r.Part, &r.Status, &r.Provider, &r.Kind, &r.Reason, &r.Count, &since, &id); err != nil {
			return ledger.Stats{}, translate("stats", err)
		}
		r.Since, r.ID = timeOf(since), id.String
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		return ledger.Stats{}, translate("stats", err)
	}
	st, err := statsql.Assemble(got, p.IncludeSettled)
	return st, translate("stats", err)
}

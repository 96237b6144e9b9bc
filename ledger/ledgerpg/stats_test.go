package ledgerpg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// Every branch of Stats' statement without IncludeSettled can be served by
// a partial index (the open-work index, the review index): with sequential
// scans priced out, the plan has none. A predicate that no longer matches
// its index word for word would leave a Seq Scan here.
func TestStatsUsesIndexes(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	plan := explain(t, pool, s, false, "SET LOCAL enable_seqscan = off")
	require.Contains(t, plan, "payonce_operations_open_idx")
	require.Contains(t, plan, "payonce_operations_review_idx")
	require.NotContains(t, plan, "Seq Scan", "Stats without IncludeSettled reads no settled row:\n%s", plan)
}

// explain returns the plan of Stats' statement on s, after the session
// settings of set (SET LOCAL, in the EXPLAIN's transaction), with options.
func explain(t testing.TB, pool *pgxpool.Pool, s *ledgerpg.Store, includeSettled bool, set string, options ...string) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if set != "" {
			if _, err := tx.Exec(ctx, set); err != nil {
				return err
			}
		}
		opts := "COSTS OFF"
		if len(options) > 0 {
			opts = strings.Join(options, ", ")
		}
		rows, err := tx.Query(ctx, "EXPLAIN ("+opts+") "+ledgerpg.StatsSQL(s, includeSettled))
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// BenchmarkStats1M measures Stats on a ledger of ledgertest.StatsBenchRows
// operations, 99% of them settled, filled by one INSERT ... SELECT from
// generate_series in a schema of its own (see seededStore), and logs the
// plans with their timings. Like every benchmark it runs only with -bench,
// and seededStore skips it in -short mode.
func BenchmarkStats1M(b *testing.B) {
	s, pool := seededStore(b, ledgertest.StatsBenchRows, `(id, key, provider, kind, refs, generation, fingerprint, request,
			status, attempts, key_ttl_ms, lease_owner, lease_expires_at, next_check_at, review_reason, review_at,
			created_at, updated_at, finished_at)
		SELECT id, id, provider, kind, ARRAY['order', id], 0, 'fp', '{"amount":1000,"currency":"EUR"}',
			status, CASE status WHEN 'pending' THEN 0 ELSE 1 END, 86400000,
			CASE status WHEN 'in_flight' THEN 'w' END,
			CASE status WHEN 'in_flight' THEN created + interval '1 minute' END,
			CASE WHEN status IN ('pending', 'in_flight', 'unknown') THEN created END,
			reason, CASE status WHEN 'manual_review' THEN created + interval '1 second' END,
			created, created, CASE WHEN status IN ('succeeded', 'failed') THEN created + interval '1 second' END
		FROM (SELECT 'op-' || lpad(i::text, 9, '0') AS id, `+ledgertest.StatsBenchProvider+` AS provider,
				`+ledgertest.StatsBenchKind+` AS kind, `+ledgertest.StatsBenchStatus+` AS status,
				`+ledgertest.StatsBenchReason+` AS reason, $1::timestamptz + i * interval '1 millisecond' AS created
			FROM generate_series(1, $2::int) AS i) AS g`, t0, ledgertest.StatsBenchRows)
	for _, settled := range []bool{false, true} {
		b.Logf("EXPLAIN ANALYZE of Stats (IncludeSettled %v):\n%s", settled,
			explain(b, pool, s, settled, "", "ANALYZE", "BUFFERS", "COSTS OFF"))
	}
	ledgertest.BenchStats(b, s, ledgertest.StatsBenchRows)
}

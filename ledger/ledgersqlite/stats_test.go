package ledgersqlite_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// Every branch of Stats' statement without IncludeSettled reads the
// operations table through a partial index (the open-work index, the review
// index), never by a full scan. A predicate that no longer matches its
// index word for word would show as a SCAN without an index here.
func TestStatsUsesIndexes(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	openAt(t, path)
	plan := queryPlan(t, rawDB(t, path), false)
	require.Contains(t, plan, "USING COVERING INDEX payonce_operations_open")
	require.Contains(t, plan, "USING INDEX payonce_operations_review")
	for line := range strings.Lines(plan) {
		// "SCAN g" reads a grouped subquery's rows, not the table.
		step := strings.Fields(line)
		if (step[0] == "SCAN" || step[0] == "SEARCH") && step[1] != "g" {
			require.Contains(t, line, "INDEX", "Stats without IncludeSettled reads no settled row:\n%s", plan)
		}
	}
}

// queryPlan is EXPLAIN QUERY PLAN of Stats' statement, one step a line.
func queryPlan(t testing.TB, db *sql.DB, includeSettled bool) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN " + ledgersqlite.StatsSQL(includeSettled))
	require.NoError(t, err)
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		b.WriteString(detail + "\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}

// BenchmarkStats1M measures Stats on a ledger of ledgertest.StatsBenchRows
// operations, 99% of them settled, filled by one INSERT ... SELECT from a
// recursive CTE, and logs the query plans. Seeding takes a while, so it is
// skipped in -short mode; like every benchmark it runs only with -bench.
func BenchmarkStats1M(b *testing.B) {
	if testing.Short() {
		b.Skip("seeds a large ledger; not in -short mode")
	}
	path := dbPath(b)
	s := openAt(b, path)
	raw := rawDB(b, path)
	start := time.Now()
	_, err := raw.Exec(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
		INSERT INTO payonce_operations (id, key, provider, kind, refs, generation, fingerprint, request,
			status, attempts, key_ttl_ms, lease_owner, lease_expires_at, next_check_at, review_reason, review_at,
			created_at, updated_at, finished_at)
		SELECT id, id, provider, kind, json_array('order', id), 0, 'fp', '{"amount":1000,"currency":"EUR"}',
			status, CASE status WHEN 'pending' THEN 0 ELSE 1 END, 86400000,
			CASE status WHEN 'in_flight' THEN 'w' END,
			CASE status WHEN 'in_flight' THEN created + 60000000 END,
			CASE WHEN status IN ('pending', 'in_flight', 'unknown') THEN created END,
			reason, CASE status WHEN 'manual_review' THEN created + 1000000 END,
			created, created, CASE WHEN status IN ('succeeded', 'failed') THEN created + 1000000 END
		FROM (SELECT printf('op-%09d', i) AS id, `+ledgertest.StatsBenchProvider+` AS provider,
				`+ledgertest.StatsBenchKind+` AS kind, `+ledgertest.StatsBenchStatus+` AS status,
				`+ledgertest.StatsBenchReason+` AS reason, ? + i * 1000 AS created
			FROM seq)`, ledgertest.StatsBenchRows, t0.UnixMicro())
	require.NoError(b, err)
	b.Logf("seeded %d operations in %v", ledgertest.StatsBenchRows, time.Since(start).Round(time.Millisecond))
	for _, settled := range []bool{false, true} {
		b.Logf("EXPLAIN QUERY PLAN of Stats (IncludeSettled %v):\n%s", settled, queryPlan(b, raw, settled))
	}
	ledgertest.BenchStats(b, s, ledgertest.StatsBenchRows)
}

package ledgersqlite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// sqlPlan is EXPLAIN QUERY PLAN of q with args on s, one step a line.
func sqlPlan(t *testing.T, s *ledgersqlite.Store, q string, args ...any) string {
	t.Helper()
	rows, err := ledgersqlite.DB(s).Query("EXPLAIN QUERY PLAN "+q, args...)
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

// The console's reads seek in their index, as on PostgreSQL
// (ledgerpg.TestConsoleReadPlans): the review queue's pages read the review
// index in its order from the cursor (no temporary B-tree for the ORDER
// BY, no scan of the table), the provider reference's probes and search
// use its index, the key its unique index, the inbox counts the
// received-at index.
func TestConsoleReadPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	for i, p := range []string{"stripe", "adyen"} {
		op := newOp("op-" + p)
		op.Provider = p
		_, err := s.Begin(ctx, begin(op, "w", t0, true))
		require.NoError(t, err)
		_, err = s.Finish(ctx, succeed(op.ID, "w", t0.Add(time.Duration(i+1)*time.Second), 1))
		require.NoError(t, err)
	}
	cursor := ledger.ReviewFilter{AfterReviewAt: t0, AfterID: "op-1"}
	for _, f := range []ledger.ReviewFilter{
		{},
		cursor,
		{Provider: "adyen", Code: ledger.ReviewCodeDuplicated, AfterReviewAt: t0, AfterID: "op-1"},
		{Kind: "refund", Reason: "x", EnteredBefore: t0.Add(time.Hour), AfterReviewAt: t0, AfterID: "op-1"},
	} {
		q, args := ledgersqlite.ReviewSQL(f)
		plan := sqlPlan(t, s, q, args...)
		require.Contains(t, plan, "USING INDEX payonce_operations_review", "%+v:\n%s", f, plan)
		require.NotContains(t, plan, "TEMP B-TREE", "%+v reads the queue in the index's order:\n%s", f, plan)
		if f.AfterID != "" {
			require.Contains(t, plan, "(review_at,id)>(?,?)", "%+v seeks to the cursor:\n%s", f, plan)
		}
	}

	for _, c := range []struct {
		f     ledger.ListFilter
		index string
	}{
		{ledger.ListFilter{ProviderRef: "pi_op-adyen"}, "payonce_operations_provider_ref"},
		{ledger.ListFilter{ProviderRef: "pi_op-adyen", Provider: "adyen", Status: ledger.StatusSucceeded}, "payonce_operations_provider_ref"},
		{ledger.ListFilter{Key: "op-adyen"}, "sqlite_autoindex_payonce_operations_2"},
	} {
		q, args, ok, err := ledgersqlite.ListSQL(ctx, s, c.f)
		require.NoError(t, err)
		require.True(t, ok)
		plan := sqlPlan(t, s, q, args...)
		require.Contains(t, plan, c.index, "%+v:\n%s", c.f, plan)
		require.NotContains(t, plan, "SCAN payonce_operations", "%+v:\n%s", c.f, plan)
		ops, err := s.List(ctx, c.f)
		require.NoError(t, err)
		require.Len(t, ops, 1)
	}
	// A probe for the next (provider, kind) reads one entry of the index.
	plan := sqlPlan(t, s, `SELECT provider, kind FROM payonce_operations WHERE provider_ref IS NOT NULL
		AND (provider, kind) > (?, ?) ORDER BY provider, kind LIMIT 1`, "adyen", "charge")
	require.Contains(t, plan, "SEARCH payonce_operations USING COVERING INDEX payonce_operations_provider_ref ((provider,kind)>(?,?))", plan)

	plan = sqlPlan(t, s, ledgersqlite.InboxStatsSQL, t0.UnixMicro(), t0.UnixMicro())
	require.Contains(t, plan, "payonce_webhooks_received", plan)
	require.NotContains(t, plan, "SCAN w\n", plan)
}

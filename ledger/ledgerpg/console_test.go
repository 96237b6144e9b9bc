package ledgerpg_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

// opsRecorder is a pgx tracer keeping the statements that read the
// operations or the inbox, with their arguments, to EXPLAIN them as run.
type opsRecorder struct {
	mu   sync.Mutex
	seen []recorded
}

type recorded struct {
	sql  string
	args []any
}

func (r *opsRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.HasPrefix(d.SQL, "EXPLAIN") && (strings.Contains(d.SQL, "payonce_operations") || strings.Contains(d.SQL, "payonce_webhooks")) {
		r.mu.Lock()
		r.seen = append(r.seen, recorded{d.SQL, d.Args})
		r.mu.Unlock()
	}
	return ctx
}

func (r *opsRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements recorded since the last take.
func (r *opsRecorder) take() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.seen
	r.seen = nil
	return out
}

// consoleFixture is a ledger populated by testkit.PopulatePG in schema,
// with a recorder on its pool.
type consoleFixture struct {
	s    *ledgerpg.Store
	pool *pgxpool.Pool // traced
	rec  *opsRecorder
}

func newConsoleFixture(tb testing.TB, schema string, n, reviewEvery int) consoleFixture {
	tb.Helper()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testkit.URL(tb))
	require.NoError(tb, err)
	rec := &opsRecorder{}
	cfg.ConnConfig.Tracer = rec
	cfg.MaxConns = 4
	pool := testkit.NewPoolConfig(tb, cfg)
	if schema == "" {
		schema = testkit.NewSchema(tb, pool)
	} else {
		_, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
		require.NoError(tb, err)
	}
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(tb, err)
	require.NoError(tb, s.Migrate(ctx))
	start := time.Now()
	require.NoError(tb, testkit.PopulatePG(ctx, pool, schema, n, reviewEvery))
	tb.Logf("schema %s: %d operations ready in %v", schema, n, time.Since(start).Round(time.Millisecond))
	rec.take()
	return consoleFixture{s: s, pool: pool, rec: rec}
}

// reviewCursor is the position of the depth-th operation (from 1) of the
// review queue matching provider and code ("" for any), or of the middle
// one when fewer match, read once with an OFFSET for the setup.
func (f consoleFixture) reviewCursor(tb testing.TB, provider string, code ledger.ReviewCode, depth int) (time.Time, string) {
	tb.Helper()
	var (
		at      time.Time
		id      string
		matches int
	)
	const where = ` WHERE status = 'manual_review' AND ($1 = '' OR provider = $1) AND ($2 = '' OR review_code = $2)`
	ops := pgx.Identifier{f.s.Schema(), "payonce_operations"}.Sanitize()
	ctx := context.Background()
	require.NoError(tb, f.pool.QueryRow(ctx, `SELECT count(*) FROM `+ops+where, provider, string(code)).Scan(&matches))
	if depth > matches-ledger.DefaultListLimit {
		depth = matches / 2
	}
	err := f.pool.QueryRow(ctx, `SELECT review_at, id FROM `+ops+where+` ORDER BY review_at, id OFFSET $3 LIMIT 1`,
		provider, string(code), depth-1).Scan(&at, &id)
	require.NoError(tb, err)
	tb.Logf("review cursor %q %q: %d deep of %d", provider, code, depth, matches)
	return at, id
}

// consoleCall is one read the console makes.
type consoleCall struct {
	name string
	// index is the index its plan must use.
	index string
	run   func(ctx context.Context) (int, error)
}

func consoleCalls(tb testing.TB, f consoleFixture, n int) []consoleCall {
	deepAt, deepID := f.reviewCursor(tb, "", "", 10_000)
	fAt, fID := f.reviewCursor(tb, "adyen", ledger.ReviewCodeDuplicated, 10_000)
	list := func(f2 ledger.ListFilter) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			ops, err := f.s.List(ctx, f2)
			return len(ops), err
		}
	}
	review := func(f2 ledger.ReviewFilter) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			ops, err := f.s.ListReview(ctx, f2)
			return len(ops), err
		}
	}
	mid := n/2 + 1 // not in review: its provider is PopulateProviders[(mid/7)%4]
	stats := func(back time.Duration) func(ctx context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			st, err := f.s.Stats(ctx, ledger.StatsParams{InboxSince: testkit.PopulateBase.Add(time.Duration(n)*time.Second - back)})
			return len(st.Inbox), err
		}
	}
	return []consoleCall{
		{"ReviewFirstPage", "payonce_operations_review_idx", review(ledger.ReviewFilter{})},
		{"ReviewDeepPage", "payonce_operations_review_idx", review(ledger.ReviewFilter{AfterReviewAt: deepAt, AfterID: deepID})},
		{"ReviewProviderCodeFirstPage", "payonce_operations_review_idx",
			review(ledger.ReviewFilter{Provider: "adyen", Code: ledger.ReviewCodeDuplicated})},
		{"ReviewProviderCodeDeepPage", "payonce_operations_review_idx",
			review(ledger.ReviewFilter{Provider: "adyen", Code: ledger.ReviewCodeDuplicated, AfterReviewAt: fAt, AfterID: fID})},
		{"ReviewKindDeepPage", "payonce_operations_review_idx",
			review(ledger.ReviewFilter{Kind: "refund", AfterReviewAt: deepAt, AfterID: deepID})},
		{"ListByProviderRef", "payonce_operations_provider_ref_idx", list(ledger.ListFilter{ProviderRef: fmt.Sprintf("ref-%d", mid)})},
		{"ListByProviderRefAndProvider", "payonce_operations_provider_ref_idx",
			list(ledger.ListFilter{ProviderRef: fmt.Sprintf("ref-%d", mid), Provider: testkit.PopulateProviders[(mid/7)%4]})},
		{"ListByKey", "payonce_operations_key_key", list(ledger.ListFilter{Key: fmt.Sprintf("bench-%09d", mid)})},
		// The inbox of the last hour (720 entries), and of the last day
		// (17,280): a window that holds most of a small inbox is read by
		// a scan of it, which the planner prices lower.
		{"StatsInboxHour", "payonce_webhooks_received_idx", stats(time.Hour)},
		{"StatsInboxDay", "", stats(24 * time.Hour)},
		// The same Stats without the inbox, to tell the inbox's share.
		{"StatsNoInbox", "", func(ctx context.Context) (int, error) {
			st, err := f.s.Stats(ctx, ledger.StatsParams{})
			return len(st.Reviews), err
		}},
	}
}

// explainRecorded returns the plans of the statements rec recorded.
func explainRecorded(tb testing.TB, pool *pgxpool.Pool, rec []recorded, options string) string {
	tb.Helper()
	var plans []string
	for _, r := range rec {
		rows, err := pool.Query(context.Background(), "EXPLAIN ("+options+") "+r.sql, r.args...)
		require.NoError(tb, err, "EXPLAIN %s", r.sql)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(tb, err)
		plans = append(plans, r.sql+"\n"+strings.Join(lines, "\n"))
	}
	return strings.Join(plans, "\n\n")
}

// The console's reads seek in their index: the review queue's pages, first
// or 10,000 deep, with or without filters, read the review index in its
// order (no sort of the queue, no scan of the table); a search by provider
// reference or key reads its index; the inbox counts read the entries
// received since InboxSince through the received-at index.
func TestConsoleReadPlans(t *testing.T) {
	if testing.Short() {
		t.Skip("populates 200,000 operations")
	}
	t.Parallel()
	const n, reviewEvery = 200_000, 5
	f := newConsoleFixture(t, "", n, reviewEvery)
	ctx := context.Background()
	calls := consoleCalls(t, f, n)
	f.rec.take()
	for _, c := range calls {
		got, err := c.run(ctx)
		require.NoError(t, err, c.name)
		require.Positive(t, got, "%s finds something", c.name)
		rec := f.rec.take()
		if strings.HasPrefix(c.name, "Stats") {
			// Only the inbox's statement: the rest of Stats has tests of
			// its own (stats_test.go).
			rec = slices.DeleteFunc(rec, func(r recorded) bool { return !strings.Contains(r.sql, "payonce_webhooks") })
			if c.name != "StatsNoInbox" {
				require.Len(t, rec, 1)
			} else {
				require.Empty(t, rec, "no InboxSince: no inbox statement")
			}
		}
		if c.index == "" {
			continue
		}
		plan := explainRecorded(t, f.pool, rec, "COSTS OFF")
		require.Contains(t, plan, c.index, "%s:\n%s", c.name, plan)
		if strings.HasPrefix(c.name, "Stats") {
			// The entries through the index; their outcomes by the
			// planner's choice (a hash of a small table or a lookup in
			// its primary key per entry).
			require.NotContains(t, plan, "Seq Scan on payonce_webhooks", "%s:\n%s", c.name, plan)
		} else {
			require.NotContains(t, plan, "Seq Scan", "%s:\n%s", c.name, plan)
		}
		if strings.HasPrefix(c.name, "Review") {
			require.NotContains(t, plan, "Sort", "%s reads the queue in the index's order:\n%s", c.name, plan)
		}
		if strings.Contains(c.name, "Deep") {
			require.Contains(t, plan, "Index Cond: (ROW(review_at, id) > ROW(", "%s seeks to the cursor:\n%s", c.name, plan)
		}
		t.Logf("%s:\n%s", c.name, plan)
	}
}

// benchConsole1M runs the console's reads on a ledger of 1,000,000
// operations (25,000 of them in review, half of those adyen's with code duplicated: a filtered page 10,000 deep exists) in the schema
// payonce_bench_console_1m, which it keeps: a later run reuses it
// (testkit.PopulatePG). Only with PAYONCE_BENCH_1M=1, since the first run
// populates for a while; drop the schema to start over.
func benchConsole1M(b *testing.B, prefix string) {
	if os.Getenv("PAYONCE_BENCH_1M") != "1" {
		b.Skip("set PAYONCE_BENCH_1M=1: populates (once) a schema of 1,000,000 operations")
	}
	const n, reviewEvery = 1_000_000, 40
	f := newConsoleFixture(b, "payonce_bench_console_1m", n, reviewEvery)
	ctx := context.Background()
	calls := consoleCalls(b, f, n)
	f.rec.take()
	for _, c := range calls {
		if !strings.HasPrefix(c.name, prefix) {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			got, err := c.run(ctx)
			require.NoError(b, err)
			require.Positive(b, got)
			b.Logf("%s:\n%s", c.name, explainRecorded(b, f.pool, f.rec.take(), "ANALYZE, BUFFERS, COSTS OFF"))
			for b.Loop() {
				if _, err := c.run(ctx); err != nil {
					b.Fatal(err)
				}
			}
			f.rec.take()
		})
	}
}

// BenchmarkReview1M: ListReview's first page and a page 10,000 deep by
// keyset, with and without a Provider+Code filter.
func BenchmarkReview1M(b *testing.B) { benchConsole1M(b, "Review") }

// BenchmarkSearch1M: List by provider reference and by key.
func BenchmarkSearch1M(b *testing.B) { benchConsole1M(b, "List") }

// BenchmarkStatsInbox1M: Stats with InboxSince a day back (17,280 inbox
// entries of 100,000).
func BenchmarkStatsInbox1M(b *testing.B) { benchConsole1M(b, "Stats") }

package ledgerpg_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// BenchmarkFastPath runs the suite's fast-path benchmark (Begin with
// StartAttempt on a new ID, then Finish as succeeded) and reports what each
// operation costs the database: commits/op and roundtrips/op are counted by a
// tracer on the pool (see txCounter), not assumed.
func BenchmarkFastPath(b *testing.B) {
	s, counter := countingStore(b)
	ledgertest.BenchFastPath(b, s)
	b.ReportMetric(float64(counter.commits.Load())/float64(b.N), "commits/op")
	b.ReportMetric(float64(counter.roundTrips.Load())/float64(b.N), "roundtrips/op")
}

// BenchmarkClaim10k measures Claim and ClaimDue(Limit 1) latency with
// 10,000 operations in the ledger.
func BenchmarkClaim10k(b *testing.B) { benchmarkClaim(b, 10_000) }

// BenchmarkClaim1M is BenchmarkClaim10k with 1,000,000 operations; seeding
// takes a while, so it is skipped in -short mode.
func BenchmarkClaim1M(b *testing.B) { benchmarkClaim(b, 1_000_000) }

// benchmarkClaim seeds rows pending operations once (this function body runs
// once; the sub-benchmarks run with growing b.N) and then measures one
// Claim, and one ClaimDue with Limit 1, at a time.
func benchmarkClaim(b *testing.B, rows int) {
	if testing.Short() {
		b.Skip("seeds a large ledger; not in -short mode")
	}
	ctx := context.Background()
	s, pool := newStore(b)
	ops := table(s.Schema(), "payonce_operations")
	start := time.Now()
	_, err := pool.Exec(ctx, `INSERT INTO `+ops+` (id, key, provider, kind, refs, generation, fingerprint, request,
			status, attempts, key_ttl_ms, next_check_at, created_at, updated_at)
		SELECT 'op-' || lpad(i::text, 9, '0'), 'op-' || lpad(i::text, 9, '0'), 'stripe', 'charge',
			ARRAY['order', i::text], 0, 'fp', '{"amount":1000,"currency":"EUR"}',
			'pending', 0, 86400000, $1::timestamptz + i * interval '1 microsecond', $1, $1
		FROM generate_series(1, $2::int) AS i`, t0, rows)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, "ANALYZE "+ops)
	require.NoError(b, err)
	b.Logf("seeded %d operations in %v", rows, time.Since(start).Round(time.Millisecond))

	// One clock for both sub-benchmarks and all their runs, moving 1ms per
	// call: every lease taken has expired by the next call, so every call
	// succeeds and does the same work.
	clock := t0.Add(time.Hour)
	tick := func() time.Time {
		clock = clock.Add(time.Millisecond)
		return clock
	}
	calls := 0
	b.Run("Claim", func(b *testing.B) {
		for b.Loop() {
			calls++
			id := fmt.Sprintf("op-%09d", 1+(calls*7919)%rows) // spread over the table
			now := tick()
			_, err := s.Claim(ctx, ledger.ClaimParams{ID: id, Owner: fmt.Sprintf("w-%d", calls), Now: now, LeaseUntil: now.Add(time.Millisecond)})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ClaimDueLimit1", func(b *testing.B) {
		for b.Loop() {
			calls++
			now := tick()
			got, err := s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: fmt.Sprintf("w-%d", calls), Now: now, LeaseUntil: now.Add(time.Millisecond), Limit: 1})
			if err != nil || len(got) != 1 {
				b.Fatalf("claim due: %v (%d operations)", err, len(got))
			}
		}
	})
}

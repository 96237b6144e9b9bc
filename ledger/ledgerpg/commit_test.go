package ledgerpg_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// A lazily durable Finish (synchronous_commit off) must not leak into the
// transactions that follow on its connection: the attempt journal that
// rule 2 depends on is always committed durably.
func TestLazyFinishDoesNotLeak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := storeWith(t, maxConns(1)) // the Finish and the checks share one connection

	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	op := newOp("op-lazy")
	br, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = s.Finish(ctx, ledger.FinishParams{ID: op.ID, Owner: "w", Now: now, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeSuccess}})
	require.NoError(t, err)

	var setting string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&setting))
	require.Equal(t, "on", setting, "SET LOCAL ends with the Finish transaction")
	got, _, err := s.Get(ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, got.Status, "a lazy commit is visible at once")
}

// The attempt journal (and every write but the lazily durable Finish) is
// durable whatever the session's, role's or database's synchronous_commit
// default is. Here every connection of the pool starts with
// synchronous_commit off (as an ALTER ROLE ... SET synchronous_commit = off
// would make it), and a probe reads the setting inside each write
// transaction just before its COMMIT.
func TestJournalIsDurableWhateverTheDefault(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sessionDefault string
		want           string // in the durable writes
	}{
		{"off", "on"},
		{"local", "on"},
		{"remote_write", "on"},
		{"on", "on"},
		{"remote_apply", "remote_apply"}, // stronger than on: kept
	} {
		t.Run(c.sessionDefault, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, pool := storeWith(t, onConnect("SET synchronous_commit = "+c.sessionDefault))
			schema := s.Schema()
			var (
				mu   sync.Mutex
				seen = map[string][]string{}
			)
			probe := func(method, value string) {
				mu.Lock()
				defer mu.Unlock()
				seen[method] = append(seen[method], value)
			}
			ledgerpg.SetProbe(s, "SELECT current_setting('synchronous_commit')", probe)
			durableOutcomes, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema, DurableOutcomes: true})
			require.NoError(t, err)
			ledgerpg.SetProbe(durableOutcomes, "SELECT current_setting('synchronous_commit')", func(method, value string) { probe("durable "+method, value) })

			lease := func(now time.Time) time.Time { return now.Add(time.Minute) }
			_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-new"), Owner: "w", Now: t0, LeaseUntil: lease(t0), StartAttempt: true}) // one trip
			require.NoError(t, err)
			_, _, err = s.CreateOrGet(ctx, newOp("op-queued"), t0)
			require.NoError(t, err)
			_, err = s.Begin(ctx, ledger.BeginParams{Op: newOp("op-queued"), Owner: "w", Now: t0, LeaseUntil: lease(t0)}) // existing
			require.NoError(t, err)
			_, _, err = s.StartAttempt(ctx, ledger.StartAttemptParams{ID: "op-queued", Owner: "w", Now: t0, LeaseUntil: lease(t0)})
			require.NoError(t, err)
			_, err = s.Finish(ctx, ledger.FinishParams{ID: "op-queued", Owner: "w", Now: t0, From: ledger.StatusInFlight, To: ledger.StatusManualReview,
				ReviewCode: ledger.ReviewCodeOther, ReviewReason: "r", Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent}})
			require.NoError(t, err)
			_, err = s.Resolve(ctx, ledger.ResolveParams{ID: "op-queued", Actor: "a", Note: "n", Outcome: ledger.ResolveResend, NewKey: "op-queued-g1", NewGeneration: 1, Now: t0})
			require.NoError(t, err)
			_, err = s.Claim(ctx, ledger.ClaimParams{ID: "op-queued", Owner: "w", Now: t0, LeaseUntil: lease(t0)})
			require.NoError(t, err)
			now := t0.Add(time.Hour)
			_, err = s.ClaimDue(ctx, ledger.ClaimDueParams{Owner: "r", Now: now, LeaseUntil: lease(now), Limit: 10})
			require.NoError(t, err)
			_, err = durableOutcomes.Finish(ctx, ledger.FinishParams{ID: "op-new", Owner: "r", Now: now, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1"})
			require.NoError(t, err)
			_, err = s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(30 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour})
			require.NoError(t, err)

			mu.Lock()
			defer mu.Unlock()
			for _, method := range []string{"begin", "create", "start attempt", "resolve", "claim", "claim due", "cleanup", "durable finish"} {
				require.NotEmpty(t, seen[method], "no write transaction of %s was probed", method)
				for _, v := range seen[method] {
					require.Equal(t, c.want, v, "synchronous_commit inside %s", method)
				}
			}
			require.Len(t, seen["begin"], 3, "the one-trip path of both Begins, then the existing-operation path of the second")
			require.Equal(t, []string{"off"}, seen["finish"], "the lazily durable Finish is the exception")

			// Everything was local to the transactions: the session keeps its
			// own setting.
			var after string
			require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&after))
			require.Equal(t, c.sessionDefault, after)
		})
	}
}

// A server running with fsync off makes no commit durable: Migrate says so,
// once per Store, in its logger.
func TestFsyncOffIsWarnedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, schema := freshSchema(t)
	var logs bytes.Buffer
	s, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	require.Empty(t, logs.String(), "the test server runs with fsync on")

	ledgerpg.SetFsyncQuery(s, "SELECT 'off'")
	require.NoError(t, s.Migrate(ctx))
	require.NoError(t, s.Migrate(ctx))
	require.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), logs.String())
	require.Contains(t, logs.String(), "fsync=off")

	// Without a logger, nothing is printed and nothing fails.
	quiet, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	ledgerpg.SetFsyncQuery(quiet, "SELECT 'off'")
	require.NoError(t, quiet.Migrate(ctx))
}

// Events travel in the batches the calls already send: recording them costs
// no round trip and no commit.
func TestEventsCostNoRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, counter := countingStore(t)
	cost := func(call func()) (roundTrips, commits int64) {
		r, c := counter.roundTrips.Load(), counter.commits.Load()
		call()
		return counter.roundTrips.Load() - r, counter.commits.Load() - c
	}
	flow := func(id string, evs []ledger.NewEvent) (start, finish [2]int64) {
		_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp(id), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
		start[0], start[1] = cost(func() {
			_, _, err := s.StartAttempt(ctx, ledger.StartAttemptParams{ID: id, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), Events: evs})
			require.NoError(t, err)
		})
		finish[0], finish[1] = cost(func() {
			_, err := s.Finish(ctx, ledger.FinishParams{
				ID: id, Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
				Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess}, Events: evs,
			})
			require.NoError(t, err)
		})
		return start, finish
	}
	plainStart, plainFinish := flow("op-plain", nil)
	evs := []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: "a"}, {Kind: ledger.EventNote, Detail: "b"}}
	evStart, evFinish := flow("op-events", evs)
	require.Equal(t, plainStart, evStart, "StartAttempt (round trips, commits)")
	require.Equal(t, plainFinish, evFinish, "Finish (round trips, commits)")
	got, err := s.Events(ctx, "op-events")
	require.NoError(t, err)
	require.Len(t, got, 4)
}

// The fast path costs two commits and two round trips: Begin (a single
// statement for a new operation) and Finish (a single statement on the
// store's copy of the row, revision.go).
func TestFastPathCommitsTwice(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, counter := countingStore(t)

	res, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-1"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	require.NotNil(t, res.Attempt)
	require.Equal(t, int64(1), counter.commits.Load(), "Begin")
	require.Equal(t, int64(1), counter.roundTrips.Load(), "Begin of a new operation is one statement")

	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeSuccess, HTTPStatus: 200}, ProviderRef: "pi_1",
	})
	require.NoError(t, err)
	require.Equal(t, int64(2), counter.commits.Load(), "Begin + Finish")
	require.Equal(t, int64(2), counter.roundTrips.Load(), "Begin + Finish: one statement each")
}

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
	ctx := context.Background()
	s, _ := seededStore(b, rows, `(id, key, provider, kind, refs, generation, fingerprint, request,
			status, attempts, key_ttl_ms, next_check_at, created_at, updated_at)
		SELECT 'op-' || lpad(i::text, 9, '0'), 'op-' || lpad(i::text, 9, '0'), 'stripe', 'charge',
			ARRAY['order', i::text], 0, 'fp', '{"amount":1000,"currency":"EUR"}',
			'pending', 0, 86400000, $1::timestamptz + i * interval '1 microsecond', $1, $1
		FROM generate_series(1, $2::int) AS i`, t0, rows)

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

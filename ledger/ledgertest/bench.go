package ledgertest

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/payonce/payonce/ledger"
)

// BenchFastPath measures the synchronous fast path of one payment: Begin with
// StartAttempt on a new operation, then Finish to succeeded. Each iteration
// uses a new ID, so s may be shared by several benchmark runs.
func BenchFastPath(b *testing.B, s ledger.Store) {
	ctx := b.Context()
	// Benchmarks run several times against the same store: a random prefix
	// keeps IDs new across runs.
	prefix := "bench-" + rand.Text()[:10]
	result := []byte(`{"status":"succeeded"}`)
	i := 0
	for b.Loop() {
		i++
		op := NewOp(fmt.Sprintf("%s-%09d", prefix, i))
		now := base.Add(time.Duration(i) * time.Millisecond)
		res, err := s.Begin(ctx, beginParams(op, ownerA, now, true))
		if err != nil {
			b.Fatalf("Begin: %v", err)
		}
		if res.Attempt == nil {
			b.Fatalf("Begin started no attempt: %+v", res)
		}
		_, err = s.Finish(ctx, ledger.FinishParams{
			ID: op.ID, Owner: ownerA, Now: now.Add(time.Microsecond), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
			Attempt:     &ledger.AttemptOutcome{Number: res.Attempt.Number, Class: ledger.OutcomeSuccess, HTTPStatus: 200, ProviderRequestID: "req_bench"},
			ProviderRef: "pi_" + op.ID, Result: result,
		})
		if err != nil {
			b.Fatalf("Finish: %v", err)
		}
	}
}

// The ledger BenchStats measures: StatsBenchRows operations numbered i = 1
// to StatsBenchRows, which a store's benchmark writes with its own bulk SQL
// (generate_series, a recursive CTE), not one Begin at a time. These are
// the columns' SQL expressions of i, the same in PostgreSQL and SQLite;
// times are the store's: operation i is created at t0 + i ms, and a
// settled one finishes (a reviewed one enters review) a second later.
//
// 99% of the operations are settled (1 in 25 of them failed), 1% are open
// (every hundredth), spread over 3 providers, 2 kinds and the 4 open
// statuses, with 7 review reasons: the ledger of a service that has run
// for a while, where Stats must cost what the open work costs.
const (
	StatsBenchRows     = 1_000_000
	StatsBenchProvider = `CASE i % 3 WHEN 0 THEN 'stripe' WHEN 1 THEN 'adyen' ELSE 'checkout' END`
	StatsBenchKind     = `CASE (i / 7) % 2 WHEN 0 THEN 'charge' ELSE 'refund' END`
	StatsBenchStatus   = `CASE WHEN i % 100 <> 0 THEN CASE WHEN i % 25 = 1 THEN 'failed' ELSE 'succeeded' END
		ELSE CASE (i / 100) % 4 WHEN 0 THEN 'pending' WHEN 1 THEN 'in_flight' WHEN 2 THEN 'unknown' ELSE 'manual_review' END END`
	StatsBenchReason = `CASE WHEN i % 100 = 0 AND (i / 100) % 4 = 3 THEN 'reason-' || (i % 7) END`
)

// BenchStats measures Stats on a ledger filled as StatsBenchRows describes
// with rows operations, without and with IncludeSettled (ms/op reported),
// after checking once that each counts what the fill wrote.
func BenchStats(b *testing.B, s ledger.Store, rows int) {
	ctx := b.Context()
	open := int64(rows / 100)
	for _, c := range []struct {
		name    string
		settled bool
	}{{"Open", false}, {"IncludeSettled", true}} {
		b.Run(c.name, func(b *testing.B) {
			st, err := s.Stats(ctx, ledger.StatsParams{IncludeSettled: c.settled})
			if err != nil {
				b.Fatalf("Stats: %v", err)
			}
			var gotOpen, gotSettled, gotReviews int64
			for _, n := range st.Open {
				gotOpen += n.Count
			}
			for _, n := range st.Settled {
				gotSettled += n.Count
			}
			for _, n := range st.Reviews {
				gotReviews += n.Count
			}
			wantSettled := int64(0)
			if c.settled {
				wantSettled = int64(rows) - open
			}
			if gotOpen != open || gotSettled != wantSettled || gotReviews != open/4 || len(st.Oldest) != len(st.Open) {
				b.Fatalf("Stats counted %d open (want %d), %d settled (want %d), %d in review (want %d), %d oldest for %d groups",
					gotOpen, open, gotSettled, wantSettled, gotReviews, open/4, len(st.Oldest), len(st.Open))
			}
			for b.Loop() {
				if _, err := s.Stats(ctx, ledger.StatsParams{IncludeSettled: c.settled}); err != nil {
					b.Fatalf("Stats: %v", err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}

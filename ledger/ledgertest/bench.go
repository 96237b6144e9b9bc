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

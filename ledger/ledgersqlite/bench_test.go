package ledgersqlite_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// BenchmarkFastPath measures one successful synchronous operation: Begin
// (create, lease, start attempt) then Finish (succeeded), with
// synchronous=FULL. commits/op counts the COMMITs the store issued.
func BenchmarkFastPath(b *testing.B) {
	s := openStore(b)
	ctx := b.Context()
	before := ledgersqlite.Commits(s)
	n := 0
	for b.Loop() {
		id := fmt.Sprintf("op-%09d", n)
		now := t0.Add(time.Duration(n) * time.Millisecond)
		n++
		res, err := s.Begin(ctx, begin(newOp(id), "w", now, true))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Finish(ctx, succeed(id, "w", now, res.Attempt.Number)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ledgersqlite.Commits(s)-before)/float64(n), "commits/op")
}

// BenchmarkFastPathParallel runs the fast path from many goroutines on one
// store: writes queue inside the store, so throughput is bounded by one
// writer (and one fsync per commit).
func BenchmarkFastPathParallel(b *testing.B) {
	s := openStore(b)
	ctx := b.Context()
	before := ledgersqlite.Commits(s)
	var seq, ops atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		owner := fmt.Sprintf("w-%d", seq.Add(1))
		for pb.Next() {
			n := ops.Add(1)
			id := fmt.Sprintf("op-%09d", n)
			now := t0.Add(time.Duration(n) * time.Millisecond)
			res, err := s.Begin(ctx, begin(newOp(id), owner, now, true))
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := s.Finish(ctx, succeed(id, owner, now, res.Attempt.Number)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(ledgersqlite.Commits(s)-before)/float64(ops.Load()), "commits/op")
}

package payonce_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
)

// synthLister streams, generated on the fly and newest first (as a
// provider's list is), the objects that match the operations
// testkit.PopulatePG wrote: nothing of them is held in memory.
type synthLister struct {
	*stripe.Provider
	n, reviewEvery int
}

func (synthLister) AuditInfo() payonce.AuditInfo {
	return payonce.AuditInfo{ListedKinds: []payonce.Kind{payonce.KindCharge, payonce.KindRefund}, Margin: time.Minute}
}

func (s synthLister) ListObjects(ctx context.Context, _ payonce.HTTPDoer, q payonce.AuditQuery, yield func(payonce.AuditObject) error) error {
	for i := s.n; i >= 1; i-- {
		created := testkit.PopulateBase.Add(time.Duration(i) * time.Second)
		if created.Before(q.From) || !created.Before(q.To) {
			continue
		}
		id := fmt.Sprintf("bench-%09d", i)
		state := payonce.AuditSucceeded
		// PopulatePG: every reviewEvery-th in review, every 50th of the
		// others failed. An operation in review whose object failed is
		// no difference.
		if i%s.reviewEvery == 0 || i%50 == 0 {
			state = payonce.AuditFailed
		}
		o := payonce.AuditObject{Ref: fmt.Sprintf("ref-%d", i), OperationID: id, Key: id,
			Kind: payonce.Kind(testkit.PopulateKinds[(i/3)%4]), State: state, Status: string(state),
			Amount: 1000, Currency: "EUR", Created: created}
		if err := yield(o); err != nil {
			return err
		}
	}
	return nil
}

// allProviders lists every provider's operations as the audited one's:
// PopulatePG spreads its operations over four providers, and the benchmark
// audits all of them in one run.
type allProviders struct{ ledger.Store }

func (s allProviders) List(ctx context.Context, f ledger.ListFilter) ([]ledger.Operation, error) {
	f.Provider = ""
	return s.Store.List(ctx, f)
}

// heapPeak samples the live heap every 10 ms until stop is called, and
// returns the largest value seen.
func heapPeak() (stop func() uint64) {
	var (
		peak uint64
		wg   sync.WaitGroup
	)
	done := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() {
		metrics.Read(sample)
		peak = max(peak, sample[0].Value.Uint64())
	}
	wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				read()
				return
			case <-t.C:
				read()
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// BenchmarkAudit1M audits a PostgreSQL ledger of 1,000,000 operations
// (testkit.PopulatePG, schema payonce_bench_audit_1m, kept for later runs)
// against a synthetic provider listing a matching object for each, and
// reports the peak live heap, the wall time and operations per second.
// Only with PAYONCE_BENCH_1M=1: the first run populates for a while; drop
// the schema to start over.
func BenchmarkAudit1M(b *testing.B) {
	if os.Getenv("PAYONCE_BENCH_1M") != "1" {
		b.Skip("set PAYONCE_BENCH_1M=1: populates (once) a schema of 1,000,000 operations")
	}
	const n, reviewEvery, schema = 1_000_000, 40, "payonce_bench_audit_1m"
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(testkit.URL(b))
	require.NoError(b, err)
	cfg.MaxConns = 4
	pool := testkit.NewPoolConfig(b, cfg)
	_, err = pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	require.NoError(b, err)
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(b, err)
	require.NoError(b, store.Migrate(ctx))
	start := time.Now()
	require.NoError(b, testkit.PopulatePG(ctx, pool, schema, n, reviewEvery))
	b.Logf("schema %s: %d operations ready in %v", schema, n, time.Since(start).Round(time.Millisecond))

	sp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: "sk_test_bench", BaseURL: "http://127.0.0.1:1"})
	require.NoError(b, err)
	client, err := payonce.New(providertest.ClientConfig(synthLister{Provider: sp, n: n, reviewEvery: reviewEvery}, allProviders{store}, time.Now))
	require.NoError(b, err)
	p := payonce.AuditParams{From: testkit.PopulateBase, To: testkit.PopulateBase.Add((n + 1) * time.Second), DryRun: true, TempDir: b.TempDir()}
	for b.Loop() {
		runtime.GC()
		stop := heapPeak()
		began := time.Now()
		rep, err := client.Audit(ctx, p)
		wall := time.Since(began)
		peak := stop()
		require.NoError(b, err)
		require.Equal(b, n, rep.Operations)
		require.Equal(b, n, rep.Objects)
		require.False(b, rep.Differs(), "%v %+v", rep.Counts, rep.Differences[:min(5, len(rep.Differences))])
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(n)/wall.Seconds(), "ops/s")
	}
}

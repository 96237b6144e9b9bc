package main

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/childproc"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// httpTransport is the transport of every Charge and raw POST: the pooled
// transport the Client uses by default (go-cleanhttp), keep-alives on, with
// an idle connection kept for every concurrent caller. The stock
// MaxIdleConnsPerHost is GOMAXPROCS+1: with 32 callers on a small machine
// most connections would be closed after one request.
func httpTransport(clients int) *http.Transport {
	tr := cleanhttp.DefaultPooledTransport()
	tr.MaxIdleConnsPerHost = max(64, 2*clients)
	return tr
}

// newFake starts an in-process fake Stripe (zero latency, no faults) and
// its adapter.
func newFake() (*mocks.Stripe, *stripe.Provider, error) {
	fake := mocks.NewStripe(mocks.StripeOptions{})
	psp, err := stripe.New(stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL()})
	if err != nil {
		fake.Close()
		return nil, nil, err
	}
	return fake, psp, nil
}

// chargeParams is the charge every workload makes, for a new order each time.
func chargeParams(order string) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa"}
}

// runPrefix keeps the orders of one run apart from any other run's.
func runPrefix(kind string) string { return kind + "-" + rand.Text()[:10] + "-" }

// chargeWorkload is payonce.Client.Charge on a new order each time; every
// call must succeed with one attempt.
func chargeWorkload(name string, client *payonce.Client) *workload {
	prefix := runPrefix(name)
	return newWorkload(name, func(ctx context.Context, i int) (time.Duration, error) {
		order := prefix + strconv.Itoa(i)
		t := time.Now()
		res, err := client.Charge(ctx, chargeParams(order))
		d := time.Since(t)
		if err != nil {
			return d, err
		}
		if res.Status != payonce.ResultSucceeded || res.Attempts != 1 {
			return d, fmt.Errorf("charge %s: status %s after %d attempts", order, res.Status, res.Attempts)
		}
		return d, nil
	})
}

// rawWorkload sends what Charge sends for one attempt with plain net/http
// and no ledger: the adapter builds the request (same body and headers,
// Idempotency-Key included), an http.Client on the same transport settings
// sends it, and the answer's id and status are decoded, as any integration
// does. The key is derived before the clock starts: a raw integration
// brings its own.
func rawWorkload(psp *stripe.Provider, clients int) *workload {
	prefix := runPrefix("raw")
	hc := &http.Client{Transport: httpTransport(clients)}
	return newWorkload("raw POST", func(ctx context.Context, i int) (time.Duration, error) {
		order := prefix + strconv.Itoa(i)
		key, err := chargeKey(psp, order)
		if err != nil {
			return 0, err
		}
		t := time.Now()
		_, err = postCharge(ctx, psp, hc, order, key)
		return time.Since(t), err
	})
}

// commitWorkload is one durable commit on PostgreSQL as a Go service sees
// it: an autocommit one-row insert-or-nothing through pgx on one
// connection, the Go twin of the pgbench ceiling script.
func commitWorkload(conn *pgx.Conn, schema string) *workload {
	sql := "INSERT INTO " + pgx.Identifier{schema, "bench_ceiling"}.Sanitize() + " (id) VALUES ($1) ON CONFLICT DO NOTHING"
	return newWorkload("PostgreSQL commit", func(ctx context.Context, _ int) (time.Duration, error) {
		id := mrand.Int64N(9_000_000_000_000_000_000) + 1
		t := time.Now()
		_, err := conn.Exec(ctx, sql, id)
		return time.Since(t), err
	})
}

// timedStore is a ledger store that times Begin and Finish, the two
// commits of a successful operation.
type timedStore struct {
	ledger.Store
	begin, finish phaseTime
}

type phaseTime struct{ n, ns atomic.Int64 }

func (p *phaseTime) add(d time.Duration) { p.n.Add(1); p.ns.Add(int64(d)) }

func (p *phaseTime) snapshot() (int64, time.Duration) {
	return p.n.Load(), time.Duration(p.ns.Load())
}

func (s *timedStore) Begin(ctx context.Context, p ledger.BeginParams) (ledger.BeginResult, error) {
	t := time.Now()
	r, err := s.Store.Begin(ctx, p)
	s.begin.add(time.Since(t))
	return r, err
}

func (s *timedStore) Finish(ctx context.Context, p ledger.FinishParams) (ledger.Operation, error) {
	t := time.Now()
	r, err := s.Store.Finish(ctx, p)
	s.finish.add(time.Since(t))
	return r, err
}

// roundTrips counts PostgreSQL round trips: every statement sent alone
// (BEGIN and COMMIT included) and every batch.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.n.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// chargeEnv is a Client on a fresh ledger, instrumented.
type chargeEnv struct {
	client *payonce.Client
	store  *timedStore
	rt     *roundTrips   // nil for SQLite
	admin  *pgxpool.Pool // nil for SQLite
	app    string        // application_name of the pool's connections
	schema string        // the ledger's schema; empty for SQLite
	close  func()
}

func newClient(psp *stripe.Provider, store ledger.Store, clients int) (*payonce.Client, error) {
	return payonce.New(payonce.Config{
		Provider: psp, Store: store,
		HTTPClient: &http.Client{Transport: httpTransport(clients)},
	})
}

// newPGChargeEnv opens a ledger in a new schema on a pool of clients+2
// connections, all opened before it returns.
func (b *bench) newPGChargeEnv(ctx context.Context, psp *stripe.Provider, clients int) (*chargeEnv, error) {
	schema, err := b.newSchema(ctx, "charge")
	if err != nil {
		return nil, err
	}
	rt := &roundTrips{}
	app := b.appName(fmt.Sprintf("charge-c%d", clients))
	minConns := int32(clients + 2)
	pool, store, err := childproc.OpenLedger(ctx, b.pgURL, schema, func(cfg *pgxpool.Config) {
		cfg.MaxConns = minConns
		cfg.MinConns = minConns
		cfg.ConnConfig.Tracer = rt
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	})
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	ts := &timedStore{Store: store}
	client, err := newClient(psp, ts, clients)
	if err != nil {
		pool.Close()
		return nil, err
	}
	// Wait for MinConns: connection set-up is not what is measured.
	for deadline := time.Now().Add(10 * time.Second); pool.Stat().TotalConns() < minConns && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return &chargeEnv{client: client, store: ts, rt: rt, admin: b.admin, app: app, schema: schema, close: pool.Close}, nil
}

// newSQLiteChargeEnv opens a ledger in a new SQLite file under dir with the
// store's defaults (synchronous FULL, lazily durable outcomes).
func newSQLiteChargeEnv(ctx context.Context, psp *stripe.Provider, dir string) (*chargeEnv, error) {
	store, err := ledgersqlite.Open(filepath.Join(dir, "ledger.db"), ledgersqlite.Config{})
	if err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx); err != nil {
		_ = store.Close()
		return nil, err
	}
	ts := &timedStore{Store: store}
	client, err := newClient(psp, ts, 1)
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	return &chargeEnv{client: client, store: ts, close: func() { _ = store.Close() }}, nil
}

// instrumented measures a workload and adds what it cost the ledger and
// the machine, over the measured periods only: mean Begin and Finish time,
// PostgreSQL round trips, the CPU time of the PostgreSQL backends serving
// it and of this process, per operation. store, rt and app are optional.
type instrumented struct {
	w     *workload
	store *timedStore
	rt    *roundTrips
	admin *pgxpool.Pool
	app   string // application_name of the workload's connections

	beginN, finishN int64
	beginT, finishT time.Duration
	rtN, ops        int64
	pgCPU           time.Duration
	pgCPUOK         bool
	walOf           walMeter // nil: WAL not measured
	wal             int64
	walOK           bool
}

func instrument(w *workload, env *chargeEnv, wal *walCounter) *instrumented {
	return &instrumented{w: w, store: env.store, rt: env.rt, admin: env.admin, app: env.app, walOf: wal.meter(env.schema)}
}

func (in *instrumented) measure(ctx context.Context, c int, d time.Duration) error {
	var bn0, fn0, rt0 int64
	var bt0, ft0 time.Duration
	if in.store != nil {
		bn0, bt0 = in.store.begin.snapshot()
		fn0, ft0 = in.store.finish.snapshot()
	}
	if in.rt != nil {
		rt0 = in.rt.n.Load()
	}
	var cpu *backendCPU
	var lsn string
	var lsnOK bool
	if in.walOf != nil {
		lsn, lsnOK = walLSN(ctx, in.admin)
	}
	if in.app != "" {
		cpu = startBackendCPU(ctx, in.admin, in.app, 0)
	}
	before := len(in.w.lat)
	err := in.w.measure(ctx, c, d)
	// The backends' CPU stops here, before the WAL is read back (which can
	// take a while on a busy server): a workload with background work of
	// its own, River's, would otherwise be charged for that wait too.
	if cpu != nil {
		t, ok := cpu.finish(ctx)
		in.pgCPU += t
		in.pgCPUOK = ok && (in.pgCPUOK || in.ops == 0)
	}
	if in.walOf != nil {
		var n int64
		ok := lsnOK
		if ok {
			n, ok = in.walOf(ctx, lsn)
		}
		in.wal += n
		in.walOK = ok && (in.walOK || in.ops == 0)
	}
	if in.store != nil {
		bn1, bt1 := in.store.begin.snapshot()
		fn1, ft1 := in.store.finish.snapshot()
		in.beginN += bn1 - bn0
		in.beginT += bt1 - bt0
		in.finishN += fn1 - fn0
		in.finishT += ft1 - ft0
	}
	if in.rt != nil {
		in.rtN += in.rt.n.Load() - rt0
	}
	in.ops += int64(len(in.w.lat) - before)
	return err
}

func (in *instrumented) result(c int) loadResult {
	r := in.w.result(c)
	if in.beginN > 0 {
		r.BeginMeanMS = ms(in.beginT / time.Duration(in.beginN))
	}
	if in.finishN > 0 {
		r.FinishMeanMS = ms(in.finishT / time.Duration(in.finishN))
	}
	if in.ops > 0 {
		if in.rt != nil {
			r.RoundTripsPerOp = float64(in.rtN) / float64(in.ops)
		}
		if in.pgCPUOK {
			r.PGCPUPerOpUS = float64(in.pgCPU.Microseconds()) / float64(in.ops)
		}
		r.SelfCPUPerOpUS = float64(in.w.cpu.self.Microseconds()) / float64(in.ops)
		if in.walOK {
			r.WALBytesPerOp = float64(in.wal) / float64(in.ops)
		}
	}
	return r
}

// checkPayments verifies that the fake created exactly want payments, one
// per operation.
func checkPayments(fake *mocks.Stripe, want int) error {
	truth := fake.Truth()
	byOp := truth.ChargesBy(stripe.MetaOperation)
	if len(truth.Payments) != want || len(byOp) != want {
		return fmt.Errorf("the fake holds %d payments for %d operations, want %d each", len(truth.Payments), len(byOp), want)
	}
	for id, n := range byOp {
		if n != 1 {
			return fmt.Errorf("operation %s charged %d times", id, n)
		}
	}
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/stripe"
)

// Two peers of payonce's Charge, measured the same way in the same run:
//
//   - the River peer: what a payments team builds with River. The order's
//     transaction inserts the order row and a charge job (InsertTx, same
//     transaction); a River worker POSTs the charge with an idempotency key
//     derived from the order id, and River marks the job completed.
//   - the journal peer: a hand-rolled idempotency journal with plain pgx
//     (the rocket-rides shape). One row per key, inserted IN_PROGRESS and
//     committed durably before the POST, updated to DONE with the response
//     in a lazily durable commit after it.
//
// Both send the raw POST's request (the adapter's, Idempotency-Key included)
// to the same fake Stripe.

// chargeKey is the idempotency key of an order's charge: the id payonce
// derives for it, so that the fake's truth counts charges per operation for
// every workload alike.
func chargeKey(psp *stripe.Provider, order string) (string, error) {
	return payonce.Identity{Provider: psp.Name(), Kind: payonce.KindCharge, References: []string{order}}.OperationID()
}

// postCharge sends the charge request of order with key and returns the
// answer's body once the payment succeeded.
func postCharge(ctx context.Context, psp *stripe.Provider, hc *http.Client, order, key string) ([]byte, error) {
	p := chargeParams(order)
	req, err := psp.NewRequest(ctx, payonce.SendRequest{OperationID: key, Key: key, Request: payonce.Request{
		Kind: payonce.KindCharge, Amount: p.Amount, Currency: p.Currency, References: []string{order},
		PaymentMethod: p.PaymentMethod,
	}})
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, payonce.MaxBodyBytes+1))
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var pi struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(body, &pi); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || pi.Status != "succeeded" || pi.ID == "" {
		return nil, fmt.Errorf("POST %s: HTTP %d, status %q", order, resp.StatusCode, pi.Status)
	}
	return body, nil
}

// walLSN reads the server's WAL insert position (not pg_current_wal_lsn,
// the write position, which lags behind what lazily durable commits have
// written).
func walLSN(ctx context.Context, admin *pgxpool.Pool) (string, bool) {
	var lsn string
	if err := admin.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn); err != nil {
		return "", false
	}
	return lsn, true
}

// walCounter measures the WAL written into one schema's relations since
// an LSN: every record that touches one of them (its tables, indexes,
// sequences and TOAST) and every other record of the same transactions,
// their commit records included, read back with pg_walinspect. Other
// databases' and other runs' writes are left out: the server's WAL is
// shared with whatever else runs on it. Without pg_walinspect (fn empty)
// it falls back to the whole server's WAL between the two positions.
//
// A server that writes much WAL recycles segments within seconds of a
// checkpoint, before they could be read back: a temporary physical
// replication slot, on a connection of the counter's own, keeps them from
// the first measurement on. It is advanced past each measurement once read,
// so it holds no more WAL than a measurement writes, and PostgreSQL drops
// it when its connection ends, however this process ends.
type walCounter struct {
	admin *pgxpool.Pool
	fn    string // pg_get_wal_records_info, schema-qualified; empty without pg_walinspect

	mu   sync.Mutex
	slot *pgx.Conn // holds the slot; nil without one
	name string    // the slot's name
}

// walRecordsSQL sums the records of the schema ($3) between $1 and $2.
const walRecordsSQL = `WITH rel AS (
	SELECT pg_relation_filenode(c.oid)::text AS node FROM pg_class c
	WHERE c.relnamespace = $3::regnamespace
	   OR c.oid IN (SELECT t.reltoastrelid FROM pg_class t WHERE t.relnamespace = $3::regnamespace)
	   OR c.oid IN (SELECT i.indexrelid FROM pg_index i JOIN pg_class t ON t.reltoastrelid = i.indrelid WHERE t.relnamespace = $3::regnamespace)
), w AS (
	SELECT start_lsn, xid::text AS xid, record_length, block_ref FROM %s($1::pg_lsn, $2::pg_lsn)
), hit AS (
	SELECT DISTINCT w.start_lsn, w.xid FROM w,
		LATERAL regexp_matches(w.block_ref, 'rel \d+/' || (SELECT oid FROM pg_database WHERE datname = current_database())::text || '/(\d+)', 'g') m
	WHERE m[1] IN (SELECT node FROM rel)
)
SELECT coalesce(sum(record_length), 0)::bigint FROM w
WHERE start_lsn IN (SELECT start_lsn FROM hit) OR (xid <> '0' AND xid IN (SELECT xid FROM hit WHERE xid <> '0'))`

// newWALCounter uses pg_walinspect where it is installed, or installs it
// in a schema of this run's (dropped with it) where it is not.
func (b *bench) newWALCounter(ctx context.Context) *walCounter {
	w := &walCounter{admin: b.admin}
	var schema string
	err := b.admin.QueryRow(ctx, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_walinspect'").Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		if schema, err = b.newSchema(ctx, "walinspect"); err == nil {
			_, err = b.admin.Exec(ctx, "CREATE EXTENSION pg_walinspect SCHEMA "+pgx.Identifier{schema}.Sanitize())
		}
	}
	if err != nil {
		logf("warning: pg_walinspect unavailable (%v): WAL per op is the whole server's", err)
		return w
	}
	w.fn = pgx.Identifier{schema, "pg_get_wal_records_info"}.Sanitize()
	conn, err := pgx.Connect(ctx, b.pgURL)
	if err == nil {
		w.name = "payonce_bench_" + b.run
		if _, err = conn.Exec(ctx, "SELECT pg_create_physical_replication_slot($1, true, true)", w.name); err != nil {
			_ = conn.Close(ctx)
		}
	}
	if err != nil {
		logf("warning: no replication slot to keep the WAL until it is read (%v): WAL per op may be missing on a busy server", err)
		return w
	}
	w.slot = conn
	return w
}

// close drops the slot (ending its connection drops it).
func (w *walCounter) close() {
	if w == nil || w.slot == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = w.slot.Close(ctx)
}

// since returns the WAL bytes written into schema since from.
func (w *walCounter) since(ctx context.Context, schema, from string) (int64, bool) {
	to, ok := walLSN(ctx, w.admin)
	if !ok {
		return 0, false
	}
	var n int64
	if w.fn == "" {
		err := w.admin.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint", to, from).Scan(&n)
		return n, err == nil
	}
	// pg_walinspect reads only flushed WAL, and the run's last commits may
	// be lazily durable: a durable commit that writes a record (a
	// transactional logical message, in no relation) flushes past them. A
	// commit that writes nothing but its xid would not wait for a flush.
	if _, err := w.admin.Exec(ctx, "SELECT pg_logical_emit_message(true, 'payonce-bench', '')"); err != nil {
		logf("flushing WAL: %v", err)
		return 0, false
	}
	if err := w.admin.QueryRow(ctx, fmt.Sprintf(walRecordsSQL, w.fn), from, to, schema).Scan(&n); err != nil {
		logf("reading WAL of %s: %v", schema, err)
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.slot != nil {
		if _, err := w.slot.Exec(ctx, "SELECT pg_replication_slot_advance($1, $2::pg_lsn)", w.name, to); err != nil {
			logf("advancing the WAL slot: %v", err)
		}
	}
	return n, true
}

// walMeter returns the WAL bytes one workload's schema received since an
// LSN; false when they could not be read.
type walMeter func(ctx context.Context, from string) (int64, bool)

// meter returns the walMeter of schema; nil without a counter.
func (w *walCounter) meter(schema string) walMeter {
	if w == nil || schema == "" {
		return nil
	}
	return func(ctx context.Context, from string) (int64, bool) { return w.since(ctx, schema, from) }
}

// peerPool opens a pool of conns connections named app, counted by rt, all
// opened before it returns.
func (b *bench) peerPool(ctx context.Context, app string, conns int32, rt *roundTrips) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(b.pgURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = conns, conns
	cfg.ConnConfig.Tracer = rt
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	// Durable unless a transaction says otherwise, whatever the role's or
	// database's default: the journal's first commit must be.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "on"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); pool.Stat().TotalConns() < conns && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	return pool, nil
}

// ---- the journal peer ----

// journalDDL is the journal: the key as primary key and one unique index,
// on order_id, since the journal holds only charges and an order is charged
// once (a journal of several kinds would make it (order_id, kind)).
const journalDDL = `CREATE TABLE %s (
	idempotency_key text PRIMARY KEY,
	order_id text NOT NULL UNIQUE,
	status text NOT NULL,
	request text NOT NULL,
	response text,
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
)`

type journalPeer struct {
	pool   *pgxpool.Pool
	rt     *roundTrips
	app    string
	schema string
	table  string // sanitized
	psp    *stripe.Provider
	hc     *http.Client
	insert string
	read   string
	finish string
}

func (b *bench) newJournalPeer(ctx context.Context, psp *stripe.Provider, clients int) (*journalPeer, error) {
	schema, err := b.newSchema(ctx, "journal")
	if err != nil {
		return nil, err
	}
	table := pgx.Identifier{schema, "journal"}.Sanitize()
	if _, err := b.admin.Exec(ctx, fmt.Sprintf(journalDDL, table)); err != nil {
		return nil, err
	}
	rt := &roundTrips{}
	app := b.appName(fmt.Sprintf("journal-c%d", clients))
	pool, err := b.peerPool(ctx, app, int32(clients+2), rt)
	if err != nil {
		return nil, err
	}
	return &journalPeer{
		pool: pool, rt: rt, app: app, schema: schema, table: table, psp: psp,
		hc:     &http.Client{Transport: httpTransport(clients)},
		insert: "INSERT INTO " + table + " (idempotency_key, order_id, status, request) VALUES ($1, $2, 'IN_PROGRESS', $3) ON CONFLICT DO NOTHING RETURNING true",
		read:   "SELECT order_id, status, coalesce(response, '') FROM " + table + " WHERE idempotency_key = $1",
		finish: "UPDATE " + table + " SET status = 'DONE', response = $2, updated_at = now() WHERE idempotency_key = $1 AND status = 'IN_PROGRESS'",
	}, nil
}

// errOrderTaken: the order already has a journal row under another key.
var errOrderTaken = errors.New("the order is journaled under another idempotency key")

// charge charges order once, through the journal: the row is committed
// durably before the POST, so a crash after the send leaves a row that
// says the charge may have happened; the retry finds it and re-sends with
// the same key, and the provider's idempotency returns the first result.
func (j *journalPeer) charge(ctx context.Context, order string) ([]byte, error) {
	key, err := chargeKey(j.psp, order)
	if err != nil {
		return nil, err
	}
	p := chargeParams(order)
	request := `{"order_id":` + strconv.Quote(order) + `,"amount":` + strconv.FormatInt(p.Amount, 10) +
		`,"currency":` + strconv.Quote(p.Currency) + `,"payment_method":` + strconv.Quote(p.PaymentMethod) + `}`
	// One durable autocommit statement: the row exists before the send.
	var inserted bool
	err = j.pool.QueryRow(ctx, j.insert, key, order, request).Scan(&inserted)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// A retry (or a concurrent call) with this key or order: read what
		// is there.
		var gotOrder, status, response string
		switch err := j.pool.QueryRow(ctx, j.read, key).Scan(&gotOrder, &status, &response); {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, fmt.Errorf("%s: %w", order, errOrderTaken)
		case err != nil:
			return nil, err
		case gotOrder != order:
			return nil, fmt.Errorf("key %s belongs to order %s, not %s", key, gotOrder, order)
		case status == "DONE":
			return []byte(response), nil
		}
		// IN_PROGRESS: the first call may or may not have reached the
		// provider; sending again with the same key is what settles it.
	case err != nil:
		return nil, err
	}
	body, err := postCharge(ctx, j.psp, j.hc, order, key)
	if err != nil {
		return nil, err
	}
	// Lazily durable: losing this commit in a crash leaves IN_PROGRESS,
	// which the retry above resolves by re-sending with the same key. One
	// round trip: pgx sends the batch as one pipeline.
	bt := &pgx.Batch{}
	bt.Queue("BEGIN")
	bt.Queue("SET LOCAL synchronous_commit TO OFF")
	bt.Queue(j.finish, key, string(body))
	bt.Queue("COMMIT")
	if err := j.pool.SendBatch(ctx, bt).Close(); err != nil {
		return nil, err
	}
	return body, nil
}

func journalWorkload(j *journalPeer) *workload {
	prefix := runPrefix("journal")
	return newWorkload("journal", func(ctx context.Context, i int) (time.Duration, error) {
		order := prefix + strconv.Itoa(i)
		t := time.Now()
		_, err := j.charge(ctx, order)
		return time.Since(t), err
	})
}

func (j *journalPeer) instrument(admin *pgxpool.Pool, wal *walCounter) *instrumented {
	return &instrumented{w: journalWorkload(j), rt: j.rt, admin: admin, app: j.app, walOf: wal.meter(j.schema)}
}

// ---- the River peer ----

// chargeArgs is the River job of one order's charge.
type chargeArgs struct {
	OrderID string `json:"order_id"`
}

func (chargeArgs) Kind() string { return "charge" }

// chargeWorker POSTs the charge with the key derived from the order id: a
// retried job sends the same key, and the provider answers with the first
// result.
type chargeWorker struct {
	river.WorkerDefaults[chargeArgs]
	psp *stripe.Provider
	hc  *http.Client
}

func (w *chargeWorker) Work(ctx context.Context, job *river.Job[chargeArgs]) error {
	key, err := chargeKey(w.psp, job.Args.OrderID)
	if err != nil {
		return err
	}
	_, err = postCharge(ctx, w.psp, w.hc, job.Args.OrderID, key)
	return err
}

type riverPeer struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	rt     *roundTrips
	app    string
	schema string
	orders string // sanitized
	insert string

	completed atomic.Int64
	failed    atomic.Int64
	track     atomic.Bool // wake the waiters of single jobs (c=1)
	// slots, during throughput, holds a token per pending job: a caller
	// puts one before inserting, a completion takes one.
	slots   atomic.Pointer[chan struct{}]
	mu      sync.Mutex
	waiters map[int64]chan struct{}
	unsub   func()
	done    chan struct{}
}

// newRiverPeer migrates River's tables into a new schema, creates the
// orders table beside them and starts a River client with workers =
// clients. Settings: Schema (River's tables in the bench schema),
// Queues (the default queue, MaxWorkers = the callers), Workers, and a
// Logger at warning level (the bench's stderr is its progress report);
// everything else is River's default: FetchCooldown 100 ms,
// FetchPollInterval 1 s, the batch completer, unless
// --river-fetch-cooldown sets FetchCooldown.
func (b *bench) newRiverPeer(ctx context.Context, psp *stripe.Provider, clients int) (*riverPeer, error) {
	schema, err := b.newSchema(ctx, "river")
	if err != nil {
		return nil, err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(b.admin), &rivermigrate.Config{Schema: schema})
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("migrating River: %w", err)
	}
	orders := pgx.Identifier{schema, "orders"}.Sanitize()
	if _, err := b.admin.Exec(ctx, "CREATE TABLE "+orders+
		" (id text PRIMARY KEY, amount bigint NOT NULL, currency text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"); err != nil {
		return nil, err
	}
	rt := &roundTrips{}
	app := b.appName(fmt.Sprintf("river-c%d", clients))
	// The callers' transactions, plus River's: the notifier's LISTEN, the
	// producer's fetches, the completer, the elector and maintenance.
	pool, err := b.peerPool(ctx, app, int32(clients+5), rt)
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &chargeWorker{psp: psp, hc: &http.Client{Transport: httpTransport(clients)}}); err != nil {
		pool.Close()
		return nil, err
	}
	cfg := &river.Config{
		Schema:  schema,
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: clients}},
		Workers: workers,
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if fc := b.o.riverFetch; fc > 0 {
		cfg.FetchCooldown = fc
		cfg.FetchPollInterval = max(fc, river.FetchPollIntervalDefault)
	}
	rc, err := river.NewClient(riverpgxv5.New(pool), cfg)
	if err != nil {
		pool.Close()
		return nil, err
	}
	p := &riverPeer{
		pool: pool, client: rc, rt: rt, app: app, schema: schema, orders: orders,
		insert:  "INSERT INTO " + orders + " (id, amount, currency) VALUES ($1, $2, $3)",
		waiters: map[int64]chan struct{}{}, done: make(chan struct{}),
	}
	// The subscription's buffer holds every event of a run: a full buffer
	// drops events, and a dropped completion would be a job never counted.
	events, unsub := rc.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: 1 << 20,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed},
	})
	p.unsub = unsub
	go p.dispatch(events)
	if err := rc.Start(ctx); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// dispatch counts completed jobs and wakes their waiters.
func (p *riverPeer) dispatch(events <-chan *river.Event) {
	defer close(p.done)
	for ev := range events {
		if ev.Kind != river.EventKindJobCompleted {
			if p.failed.Add(1) == 1 {
				logf("River peer: job %d %s: %v", ev.Job.ID, ev.Kind, ev.Job.Errors)
			}
			continue
		}
		p.completed.Add(1)
		if slots := p.slots.Load(); slots != nil {
			select {
			case <-*slots:
			default:
			}
		}
		if p.track.Load() {
			close(p.waiter(ev.Job.ID))
		}
	}
}

// waiter returns the channel closed when job id completes; whichever of
// the dispatcher and the caller comes first creates it.
func (p *riverPeer) waiter(id int64) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch, ok := p.waiters[id]
	if !ok {
		ch = make(chan struct{})
		p.waiters[id] = ch
	}
	return ch
}

func (p *riverPeer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.client.Stop(ctx); err != nil {
		logf("stopping River: %v", err)
	}
	p.unsub()
	<-p.done
	p.pool.Close()
}

// order is the order's transaction: the order row and its charge job,
// committed together.
func (p *riverPeer) order(ctx context.Context, order string) (int64, error) {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	cp := chargeParams(order)
	if _, err := tx.Exec(ctx, p.insert, order, cp.Amount, cp.Currency); err != nil {
		return 0, err
	}
	res, err := p.client.InsertTx(ctx, tx, chargeArgs{OrderID: order}, nil)
	if err != nil {
		return 0, err
	}
	return res.Job.ID, tx.Commit(ctx)
}

// latencyWorkload is one order at a time, each timed from the start of
// its transaction until River reports its job completed (the completion
// event, sent once the completer has marked the row completed).
//
// Each order arrives at a random moment of River's completer period
// (riverCompleterPeriod), untimed, as a service's orders do. Started
// right after the previous one's completion event, which follows a
// completer flush, every order would wait for almost a whole period
// (p50 ≈ p99 ≈ 250 ms), and the 250 ms turns of the c=1 measurement keep
// that phase from one turn to the next. The pause leaves the wall time
// per job, and so the CPU per job, as it was: the later an order arrives
// in the period, the sooner its flush comes.
func (p *riverPeer) latencyWorkload() *workload {
	prefix := runPrefix("river")
	return newWorkload("River", func(ctx context.Context, i int) (time.Duration, error) {
		order := prefix + strconv.Itoa(i)
		select {
		case <-time.After(mrand.N(riverCompleterPeriod)):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		t := time.Now()
		id, err := p.order(ctx, order)
		if err != nil {
			return time.Since(t), err
		}
		ch := p.waiter(id)
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			return time.Since(t), fmt.Errorf("job %d of order %s not completed after 30 s (%d jobs failed)", id, order, p.failed.Load())
		case <-ctx.Done():
			return time.Since(t), ctx.Err()
		}
		d := time.Since(t)
		p.mu.Lock()
		delete(p.waiters, id)
		p.mu.Unlock()
		return d, nil
	})
}

func (p *riverPeer) instrument(admin *pgxpool.Pool, wal *walCounter) *instrumented {
	p.track.Store(true)
	return &instrumented{w: p.latencyWorkload(), rt: p.rt, admin: admin, app: p.app, walOf: wal.meter(p.schema)}
}

// throughput has c callers run order transactions while River's workers
// drain them, with at most backlogPerCaller × c jobs inserted and not yet
// completed: callers of a payments service insert as fast as orders come,
// and an unbounded queue would have no steady state to measure. Once a
// warm-up's jobs have completed, the measured period starts; the rate is
// the jobs completed within it, per second, and the CPU, round trips and
// WAL within it are divided by those jobs. As many jobs are pending at its
// start as at its end (the bound, when the callers outrun the workers), so
// what the period spent on inserting and on working is for the same
// number of jobs.
func (p *riverPeer) throughput(ctx context.Context, admin *pgxpool.Pool, walOf walMeter, c int, d time.Duration) (loadResult, int, error) {
	p.track.Store(false)
	prefix := runPrefix("river")
	slots := make(chan struct{}, backlogPerCaller*c)
	p.slots.Store(&slots)
	defer p.slots.Store(nil)
	var (
		seq      atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	base := p.completed.Load()
	for range c {
		wg.Go(func() {
			for {
				select {
				case slots <- struct{}{}:
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
				i := seq.Add(1) - 1
				if _, err := p.order(ctx, prefix+strconv.FormatInt(i, 10)); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("River peer: order %d: %w", i, err)
					}
					errMu.Unlock()
					return
				}
			}
		})
	}
	stopCallers := func() error {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
		errMu.Lock()
		defer errMu.Unlock()
		return firstErr
	}
	fail := func(err error) (loadResult, int, error) {
		if serr := stopCallers(); serr != nil {
			err = serr
		}
		return loadResult{}, int(seq.Load()), err
	}
	if err := p.until(ctx, base+int64(max(200, 4*c)), time.Minute); err != nil {
		return fail(err)
	}

	rt0, done0, ins0 := p.rt.n.Load(), p.completed.Load(), seq.Load()
	lsn, walOK := walLSN(ctx, admin)
	walOK = walOK && walOf != nil
	cpu := startBackendCPU(ctx, admin, p.app, 0)
	start := markCPU()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	end := markCPU()
	rt1, done1, ins1 := p.rt.n.Load(), p.completed.Load(), seq.Load()
	pgCPU, pgOK := cpu.finish(ctx)
	var wal int64
	if walOK {
		wal, walOK = walOf(ctx, lsn)
	}
	if err := stopCallers(); err != nil {
		return loadResult{}, int(seq.Load()), err
	}
	if err := ctx.Err(); err != nil {
		return loadResult{}, int(seq.Load()), err
	}
	// Every job inserted must complete, for the fake's count.
	if err := p.until(ctx, base+seq.Load(), 2*time.Minute); err != nil {
		return loadResult{}, int(seq.Load()), err
	}
	jobs := done1 - done0
	secs := end.wall.Sub(start.wall).Seconds()
	r := loadResult{Name: "River", Clients: c, Ops: int(jobs), Seconds: secs, CPU: end.since(start), Inserted: int(ins1 - ins0)}
	if jobs > 0 {
		r.OpsPerSec = float64(jobs) / secs
		r.RoundTripsPerOp = float64(rt1-rt0) / float64(jobs)
		if pgOK {
			r.PGCPUPerOpUS = float64(pgCPU.Microseconds()) / float64(jobs)
		}
		r.SelfCPUPerOpUS = float64((end.self - start.self).Microseconds()) / float64(jobs)
		if walOK {
			r.WALBytesPerOp = float64(wal) / float64(jobs)
		}
	}
	return r, int(seq.Load()), nil
}

// riverCompleterPeriod is how often River's batch completer persists
// completions while fewer than 100 wait (every fifth tick of 50 ms).
const riverCompleterPeriod = 250 * time.Millisecond

// backlogPerCaller bounds the River peer's pending jobs per caller: with
// River's defaults a queue of MaxWorkers = c workers runs at most c jobs
// per FetchCooldown (100 ms), and completions are persisted every 250 ms
// when fewer than 100 wait, so 25 × c pending jobs (2.5 s of work at that
// rate) never leave the workers waiting for an insert.
const backlogPerCaller = 25

// until waits for the count of completed jobs to reach n.
func (p *riverPeer) until(ctx context.Context, n int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for p.completed.Load() < n {
		if f := p.failed.Load(); f > 0 {
			return fmt.Errorf("River peer: %d jobs failed", f)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("River peer: %d of %d jobs completed after %v", p.completed.Load(), n, limit)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}

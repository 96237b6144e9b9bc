// Command bench measures what payonce's safety costs against the physical
// limit of the machine it runs on, and prints one table: metric, value,
// goal, met.
//
//  1. The ceiling: pgbench runs one-row insert-or-nothing transactions
//     (one durable commit each) against the same PostgreSQL at each
//     concurrency level. An operation needs two commits, so the ceiling is
//     half of pgbench's tps.
//  2. payonce Client.Charge on a PostgreSQL ledger at the same levels, for
//     the same duration, against a zero-latency fake Stripe in this process:
//     ops/s and the ratio to the ceiling (goal >= 0.7).
//  3. The latency Charge adds at concurrency 1 over a raw net/http POST of
//     the same request to the same fake, at p50 and p99, against one
//     PostgreSQL commit (goal <= 2.5 commits) and on SQLite (goal <= 0.3 ms).
//     The raw POST, the commit loop and both Charges are measured in turns
//     of 250 ms, so that a change in the machine's background load touches
//     them alike.
//  4. The CPU floor at each level: two pgbench commits (server + client
//     CPU per commit) plus one raw POST at the same concurrency (its own
//     run after Charge's, against the same fake), all measured in the
//     run, and Charge's CPU per operation over it (goal <= 2.0 at
//     concurrency above 1).
//  5. The reconciler's drain rate for a backlog of pending operations on
//     PostgreSQL with 1 and 4 reconcilers, and their peak memory.
//  6. With --feed, a settlement-feed consumer reading the ledger beside
//     Charge at each level above 1: what the feed's durability (a small
//     write and a WAL flush per page with new entries) costs beside it.
//  7. Two peers at every level, against the same fake and PostgreSQL
//     (peers.go; --peers=false skips them): a River job inserted in the
//     order's transaction and worked by a River worker, and a hand-rolled
//     idempotency journal on plain pgx; Charge's CPU per op over theirs
//     (goals <= 0.8 River's, <= 1.3 the journal's, at 32 callers).
//  8. WAL bytes per operation of pgbench's commit, Charge and the peers,
//     read back with pg_walinspect for the run's own schemas.
//
// Run it with cmd/payonce/bench/run.sh, or from the repository root:
//
//	go run ./cmd/payonce/bench --duration 10s --concurrency 1,8,32 --backlog 20000
//
// It needs a PostgreSQL it may create and drop schemas in (--pg, default
// postgres://postgres@127.0.0.1:5432/test) and pgbench. Everything it
// creates is in schemas named payonce_bench_*, dropped at the end.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// options are the command's flags.
type options struct {
	duration    time.Duration
	concurrency []int
	backlog     int
	reconcilers []int
	pgURL       string
	pgbench     string
	json        bool
	pair        bool
	feed        bool
	peers       bool
	riverFetch  time.Duration
	cpuProfile  string
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long each pgbench run, each Charge measurement and each raw POST run lasts (pgbench rounds it to whole seconds)")
	conc := fs.String("concurrency", "1,8,32", "comma-separated numbers of concurrent callers (pgbench clients)")
	fs.IntVar(&o.backlog, "backlog", 20_000, "pending operations in the drain backlog (100000 for the full size)")
	recs := fs.String("reconcilers", "1,4", "comma-separated numbers of reconcilers draining the backlog (0 skips the drain)")
	fs.StringVar(&o.pgURL, "pg", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL URL; schemas payonce_bench_* are created there and dropped")
	fs.StringVar(&o.pgbench, "pgbench", "pgbench", "the pgbench binary")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON instead of the table")
	fs.BoolVar(&o.pair, "pair", false, "also run pgbench with payonce's commit pair (one durable commit, one with synchronous_commit off) per transaction")
	fs.BoolVar(&o.feed, "feed", false, "while Charge runs on PostgreSQL at each level above 1, also read the ledger's settlement feed as a consumer would (pages of 100, on a connection of its own)")
	fs.BoolVar(&o.peers, "peers", true, "also measure two peers at every level, against the same fake and PostgreSQL: a River job inserted in the order's transaction and worked by a River worker, and a hand-rolled idempotency journal on plain pgx (--peers=false skips them)")
	fs.DurationVar(&o.riverFetch, "river-fetch-cooldown", 0, "the River peer's FetchCooldown (0: River's default, 100 ms, which caps a queue at MaxWorkers jobs per 100 ms); FetchPollInterval is raised to it when shorter")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process during the pgbench and Charge runs (it idles while pgbench runs; the drain is left out) to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.concurrency, err = intList(*conc, 1); err != nil {
		return o, fmt.Errorf("--concurrency: %w", err)
	}
	if o.reconcilers, err = intList(*recs, 0); err != nil {
		return o, fmt.Errorf("--reconcilers: %w", err)
	}
	o.reconcilers = slices.DeleteFunc(o.reconcilers, func(n int) bool { return n == 0 })
	switch {
	case o.duration < time.Second:
		return o, fmt.Errorf("--duration must be at least 1s, got %v", o.duration)
	case o.riverFetch != 0 && o.riverFetch < time.Millisecond:
		return o, fmt.Errorf("--river-fetch-cooldown must be 0 (River's default) or at least 1ms, got %v", o.riverFetch)
	case o.backlog < 1:
		return o, fmt.Errorf("--backlog must be at least 1, got %d", o.backlog)
	}
	return o, nil
}

// intList parses "1,8,32" into sorted distinct numbers >= least.
func intList(s string, least int) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least || n > 1000 {
			return nil, fmt.Errorf("%q: want comma-separated whole numbers from %d to 1000", f, least)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func main() {
	if os.Getenv(fakeChildEnv) == "1" {
		os.Exit(fakeChildMain())
	}
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if o.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	rep.print(os.Stdout)
}

// bench holds what the runs share.
type bench struct {
	o       options
	pgURL   string
	admin   *pgxpool.Pool // schemas, the backlog's COPY
	run     string        // random part of this run's schema names
	schemas []string
	wal     *walCounter
}

// newSchema creates an empty schema named payonce_bench_<run>_<what><n>,
// dropped by dropSchemas.
func (b *bench) newSchema(ctx context.Context, what string) (string, error) {
	name := fmt.Sprintf("payonce_bench_%s_%s%d", b.run, what, len(b.schemas)+1)
	if _, err := b.admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("creating schema %s: %w", name, err)
	}
	b.schemas = append(b.schemas, name)
	return name, nil
}

func (b *bench) dropSchemas() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range b.schemas {
		if _, err := b.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE"); err != nil {
			logf("dropping schema %s: %v", s, err)
		}
	}
	b.schemas = nil
}

// appName is the application_name of one phase's PostgreSQL connections,
// by which the backends serving it are found.
func (b *bench) appName(what string) string { return "payonce-bench-" + b.run + "-" + what }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

// run takes every measurement and returns the report.
func run(ctx context.Context, o options) (*report, error) {
	pgbenchPath, pgbenchVersion, err := checkPGBench(o.pgbench)
	if err != nil {
		return nil, err
	}
	rep := &report{Options: reportOptions{
		Duration: o.duration.String(), Concurrency: o.concurrency, Backlog: o.backlog, Reconcilers: o.reconcilers, Pair: o.pair,
		Feed: o.feed, Peers: o.peers, RiverFetchCooldown: o.riverFetch.String(),
	}}
	rep.Machine.CPU, rep.Machine.Cores, rep.Machine.Go = cpuModel(), runtime.NumCPU(), runtime.Version()
	rep.Machine.PGBench = pgbenchVersion
	rep.Machine.LoadAtStart, rep.Machine.Load1AtStart = loadAvg()
	if rep.Machine.Load1AtStart > float64(rep.Machine.Cores) {
		logf("warning: load average %s on %d cores: other work is running, figures will be low and noisy", rep.Machine.LoadAtStart, rep.Machine.Cores)
	}

	admin, err := pgxpool.New(ctx, o.pgURL)
	if err != nil {
		return nil, fmt.Errorf("--pg: %w", err)
	}
	defer admin.Close()
	conn, err := admin.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", redactURL(o.pgURL), err)
	}
	rep.Machine.Postgres, rep.Machine.PGSettings, err = pgInfo(ctx, conn.Conn())
	conn.Release()
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, pgURL: o.pgURL, admin: admin, run: strings.ToLower(rand.Text()[:8])}
	defer b.dropSchemas()

	tmp, err := os.MkdirTemp("", "payonce-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	// The ceiling's table, in a schema of its own.
	ceilSchema, err := b.newSchema(ctx, "ceiling")
	if err != nil {
		return nil, err
	}
	ceilTable := pgx.Identifier{ceilSchema, "bench_ceiling"}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE TABLE "+ceilTable+" (id bigint PRIMARY KEY, v integer NOT NULL DEFAULT 0)"); err != nil {
		return nil, err
	}
	b.wal = b.newWALCounter(ctx)
	defer b.wal.close()
	pb := &pgbench{bin: pgbenchPath, url: o.pgURL, schema: ceilSchema, dir: tmp, admin: admin, app: b.appName("pgbench"), walOf: b.wal.meter(ceilSchema)}

	if o.cpuProfile != "" {
		// This process is idle while pgbench runs; the drain comes after.
		prof, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		defer prof.Close()
		if err := pprof.StartCPUProfile(prof); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile() // stopped before the drain too; stopping twice is harmless
	}

	// Concurrency levels in order, pgbench first at each; the latency
	// trio runs at concurrency 1 (first, or after the others when 1 is
	// not among the levels).
	latencyDone := false
	for _, c := range o.concurrency {
		if _, err := admin.Exec(ctx, "TRUNCATE "+ceilTable); err != nil {
			return nil, err
		}
		logf("pgbench: one-row commits, %d clients, %v", c, o.duration)
		r, err := pb.run(ctx, "ceiling", ceilingScript, c, o.duration)
		if err != nil {
			return nil, err
		}
		rep.Ceiling = append(rep.Ceiling, r)
		logf("  %.0f tps, latency average %.3f ms", r.TPS, r.LatencyMS)
		if o.pair {
			logf("pgbench: durable + lazy commit pairs, %d clients, %v", c, o.duration)
			r, err := pb.run(ctx, "pair", pairScript, c, o.duration)
			if err != nil {
				return nil, err
			}
			rep.Pair = append(rep.Pair, r)
			logf("  %.0f pairs/s", r.TPS)
		}
		if c == 1 {
			err = b.latency(ctx, rep, ceilSchema, tmp)
			latencyDone = true
		} else {
			err = b.throughput(ctx, rep, c)
		}
		if err != nil {
			return nil, err
		}
	}
	if !latencyDone {
		if err := b.latency(ctx, rep, ceilSchema, tmp); err != nil {
			return nil, err
		}
	}
	pprof.StopCPUProfile()

	for _, n := range o.reconcilers {
		logf("drain: %d pending operations, %d reconciler(s)", o.backlog, n)
		r, err := b.drain(ctx, o.backlog, n)
		if err != nil {
			return nil, fmt.Errorf("drain with %d reconcilers: %w", n, err)
		}
		rep.Drain = append(rep.Drain, r)
		logf("  %.0f ops/s, peak heap %.1f MB, peak RSS %.1f MB", r.OpsPerSec, r.PeakHeapMB, r.PeakRSSMB)
	}

	rep.Machine.LoadAtEnd, rep.Machine.Load1AtEnd = loadAvg()
	rep.build()
	return rep, nil
}

// latency measures, in turns at concurrency 1, a raw POST, one PostgreSQL
// commit, and Charge on PostgreSQL and on SQLite, all against one fake.
func (b *bench) latency(ctx context.Context, rep *report, ceilSchema, tmp string) error {
	d := b.o.duration
	logf("latency at concurrency 1: raw POST, one commit, Charge on PostgreSQL and SQLite%s, %v each in 250 ms turns", ifThen(b.o.peers, ", the journal and River peers"), d)
	fake, psp, err := newFake()
	if err != nil {
		return err
	}
	defer fake.Close()
	pgEnv, err := b.newPGChargeEnv(ctx, psp, 1)
	if err != nil {
		return err
	}
	defer pgEnv.close()
	sqliteEnv, err := newSQLiteChargeEnv(ctx, psp, tmp)
	if err != nil {
		return err
	}
	defer sqliteEnv.close()
	ccfg, err := pgx.ParseConfig(b.pgURL)
	if err != nil {
		return err
	}
	commitApp := b.appName("commit")
	ccfg.RuntimeParams["application_name"] = commitApp
	conn, err := pgx.ConnectConfig(ctx, ccfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())

	raw := &instrumented{w: rawWorkload(psp, 1)}
	commit := &instrumented{w: commitWorkload(conn, ceilSchema), admin: b.admin, app: commitApp, walOf: b.wal.meter(ceilSchema)}
	pg := instrument(chargeWorkload("Charge PostgreSQL", pgEnv.client), pgEnv, b.wal)
	sq := instrument(chargeWorkload("Charge SQLite", sqliteEnv.client), sqliteEnv, nil)
	all := []*instrumented{raw, commit, pg, sq}
	var journal, riv *instrumented
	if b.o.peers {
		jp, err := b.newJournalPeer(ctx, psp, 1)
		if err != nil {
			return err
		}
		defer jp.pool.Close()
		rp, err := b.newRiverPeer(ctx, psp, 1)
		if err != nil {
			return err
		}
		defer rp.close()
		journal, riv = jp.instrument(b.admin, b.wal), rp.instrument(b.admin, b.wal)
		all = append(all, journal, riv)
	}
	turns := make([]measurer, len(all))
	for i, in := range all {
		// A River operation at c=1 waits for River's fetch and completer
		// ticks (150-250 ms): fewer of them warm it up.
		n := 200
		if in == riv {
			n = 20
		}
		if err := in.w.warm(ctx, 1, n); err != nil {
			return err
		}
		turns[i] = in
	}
	if err := interleave(ctx, turns, d, 250*time.Millisecond); err != nil {
		return err
	}
	paid := raw.w.started() + pg.w.started() + sq.w.started()
	if b.o.peers {
		paid += journal.w.started() + riv.w.started()
	}
	if err := checkPayments(fake, paid); err != nil {
		return err
	}
	rep.Raw, rep.Commit = raw.result(1), commit.result(1)
	rep.SQLite = sq.result(1)
	rep.Charge = append(rep.Charge, pg.result(1))
	shown := []loadResult{rep.Raw, rep.Commit, rep.Charge[len(rep.Charge)-1], rep.SQLite}
	if b.o.peers {
		rep.Journal = append(rep.Journal, journal.result(1))
		rep.River = append(rep.River, riv.result(1))
		shown = append(shown, rep.Journal[len(rep.Journal)-1], rep.River[len(rep.River)-1])
	}
	for _, r := range shown {
		logf("  %-18s %7.0f ops/s  p50 %.3f ms  p99 %.3f ms", r.Name, r.OpsPerSec, r.P50MS, r.P99MS)
	}
	return nil
}

// throughput measures Charge on PostgreSQL with c callers for the duration,
// then a raw POST with c callers for as long against the same fake: the
// client side of the CPU floor at that level (see report.floor).
func (b *bench) throughput(ctx context.Context, rep *report, c int) error {
	logf("Charge on PostgreSQL: %d callers, %v", c, b.o.duration)
	fake, psp, err := newFake()
	if err != nil {
		return err
	}
	defer fake.Close()
	env, err := b.newPGChargeEnv(ctx, psp, c)
	if err != nil {
		return err
	}
	defer env.close()
	in := instrument(chargeWorkload("Charge PostgreSQL", env.client), env, b.wal)
	if err := in.w.warm(ctx, c, max(200, 4*c)); err != nil {
		return err
	}
	var feed *feedConsumer
	if b.o.feed {
		if feed, err = b.startFeed(ctx, env.schema, c); err != nil {
			return err
		}
	}
	err = in.measure(ctx, c, b.o.duration)
	if feed != nil {
		fr, ferr := feed.stop(ctx, c)
		if err == nil {
			err = ferr
		}
		rep.Feed = append(rep.Feed, fr)
		logf("  feed consumer: %d entries in %d pages", fr.Entries, fr.Pages)
	}
	if err != nil {
		return err
	}
	r := in.result(c)
	rep.Charge = append(rep.Charge, r)
	logf("  %.0f ops/s  p50 %.3f ms  p99 %.3f ms", r.OpsPerSec, r.P50MS, r.P99MS)

	logf("raw POST: %d callers, %v", c, b.o.duration)
	raw := &instrumented{w: rawWorkload(psp, c)}
	if err := raw.w.warm(ctx, c, max(200, 4*c)); err != nil {
		return err
	}
	if err := raw.measure(ctx, c, b.o.duration); err != nil {
		return err
	}
	if err := checkPayments(fake, in.w.started()+raw.w.started()); err != nil {
		return err
	}
	rr := raw.result(c)
	rep.RawAt = append(rep.RawAt, rr)
	logf("  %.0f ops/s  p50 %.3f ms  p99 %.3f ms  CPU %.0f µs per POST", rr.OpsPerSec, rr.P50MS, rr.P99MS, rr.SelfCPUPerOpUS)
	if !b.o.peers {
		return nil
	}
	// The peers' pools open after Charge's has closed: at 32 callers
	// two pools at once would take a third of max_connections.
	env.close()
	return b.peersAt(ctx, rep, c, fake, psp, in.w.started()+raw.w.started())
}

// peersAt measures the journal peer, then the River peer, with c callers
// for the duration against the fake Charge used (paid: the payments it
// holds already).
func (b *bench) peersAt(ctx context.Context, rep *report, c int, fake *mocks.Stripe, psp *stripe.Provider, paid int) error {
	logf("journal peer: %d callers, %v", c, b.o.duration)
	jp, err := b.newJournalPeer(ctx, psp, c)
	if err != nil {
		return err
	}
	jin := jp.instrument(b.admin, b.wal)
	err = jin.w.warm(ctx, c, max(200, 4*c))
	if err == nil {
		err = jin.measure(ctx, c, b.o.duration)
	}
	jp.pool.Close()
	if err != nil {
		return err
	}
	jr := jin.result(c)
	rep.Journal = append(rep.Journal, jr)
	logf("  %.0f ops/s  p50 %.3f ms  p99 %.3f ms", jr.OpsPerSec, jr.P50MS, jr.P99MS)
	paid += jin.w.started()

	logf("River peer: %d callers inserting orders, %d workers, %v", c, c, b.o.duration)
	rp, err := b.newRiverPeer(ctx, psp, c)
	if err != nil {
		return err
	}
	rr, jobs, err := rp.throughput(ctx, b.admin, b.wal.meter(rp.schema), c, b.o.duration)
	rp.close()
	if err != nil {
		return err
	}
	rep.River = append(rep.River, rr)
	logf("  %.0f jobs/s completed, %d inserted", rr.OpsPerSec, rr.Inserted)
	return checkPayments(fake, paid+jobs)
}

// redactURL drops the password from a connection URL for messages.
func redactURL(u string) string {
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		return "the --pg URL"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

package ledgerpg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// costVariants are schema changes BenchmarkChargeCost can measure a Charge
// under, applied to a migrated and seeded scratch schema ({{s}} is its
// quoted name) before the measured Charges run: each drops one thing, to
// price it, or tries a cheaper form of it. "full" is the schema as
// migrated. None of them is meant for a real ledger: most drop what a
// guarantee or a query needs (see the migrations).
var costVariants = map[string]string{
	"full":              ``,
	"no_feed":           `DROP TRIGGER payonce_feed_created ON {{s}}.payonce_operations; DROP TRIGGER payonce_feed_changed ON {{s}}.payonce_operations`,
	"no_reviewcode":     `DROP TRIGGER payonce_review_code_created ON {{s}}.payonce_operations; DROP TRIGGER payonce_review_code_changed ON {{s}}.payonce_operations`,
	"no_fk":             `ALTER TABLE {{s}}.payonce_attempts DROP CONSTRAINT payonce_attempts_operation_id_fkey; ALTER TABLE {{s}}.payonce_events DROP CONSTRAINT payonce_events_operation_id_fkey`,
	"no_reviewcode_upd": `DROP TRIGGER payonce_review_code_changed ON {{s}}.payonce_operations`,
	"ff90":              `ALTER TABLE {{s}}.payonce_operations SET (fillfactor = 90)`,
	"no_key":            `ALTER TABLE {{s}}.payonce_operations DROP CONSTRAINT payonce_operations_key_key`,
	"no_due":            `DROP INDEX {{s}}.payonce_operations_due_idx`,
	"no_cleanup":        `DROP INDEX {{s}}.payonce_operations_cleanup_idx`,
	"no_review":         `DROP INDEX {{s}}.payonce_operations_review_idx`,
	"no_open":           `DROP INDEX {{s}}.payonce_operations_open_idx`,
	"no_provref":        `DROP INDEX {{s}}.payonce_operations_provider_ref_idx`,
	"no_payref":         `DROP INDEX {{s}}.payonce_operations_payment_ref_idx`,
	"no_feedpk":         `ALTER TABLE {{s}}.payonce_feed DROP CONSTRAINT payonce_feed_pkey`,
	"no_secondary": `DROP INDEX {{s}}.payonce_operations_due_idx, {{s}}.payonce_operations_cleanup_idx, {{s}}.payonce_operations_review_idx,
		{{s}}.payonce_operations_open_idx, {{s}}.payonce_operations_provider_ref_idx, {{s}}.payonce_operations_payment_ref_idx;
		ALTER TABLE {{s}}.payonce_operations DROP CONSTRAINT payonce_operations_key_key`,
	"bare": `DROP INDEX {{s}}.payonce_operations_due_idx, {{s}}.payonce_operations_cleanup_idx, {{s}}.payonce_operations_review_idx,
		{{s}}.payonce_operations_open_idx, {{s}}.payonce_operations_provider_ref_idx, {{s}}.payonce_operations_payment_ref_idx;
		ALTER TABLE {{s}}.payonce_operations DROP CONSTRAINT payonce_operations_key_key;
		DROP TRIGGER payonce_feed_created ON {{s}}.payonce_operations; DROP TRIGGER payonce_feed_changed ON {{s}}.payonce_operations;
		DROP TRIGGER payonce_review_code_created ON {{s}}.payonce_operations; DROP TRIGGER payonce_review_code_changed ON {{s}}.payonce_operations;
		ALTER TABLE {{s}}.payonce_attempts DROP CONSTRAINT payonce_attempts_operation_id_fkey; ALTER TABLE {{s}}.payonce_events DROP CONSTRAINT payonce_events_operation_id_fkey`,
}

// BenchmarkChargeCost prices a Charge's rows, indexes and triggers on
// PostgreSQL. For each variant (costVariants, or a file of SQL such as a
// candidate migration; PAYONCE_PGCOST_VARIANTS, a comma-separated list,
// default "full") a scratch schema is migrated and seeded with
// PAYONCE_PGCOST_ROWS (default 100,000) settled charges, each with its
// attempt and feed entry, so that the indexes have a realistic depth; the
// variant is applied, and 200 Charges warm the caches. Each store has a
// pool of one connection. A Charge is Begin with its attempt, then Finish
// as succeeded (as ledgertest.BenchFastPath).
//
// Each iteration of the benchmark is one round: every variant, in an order
// shuffled per round, runs a block of PAYONCE_PGCOST_BLOCK (default 250)
// Charges, and the CPU time its backend spent on them is read from
// /proc/PID/schedstat (nanoseconds; the server must run on this host).
// Variants alternate in short blocks so that load from elsewhere falls on
// all of them alike; each variant's cost is reported as the median over
// the rounds, and its difference from the first variant as the median of
// the per-round differences (a paired estimate), with the spread of those
// differences (interquartile range) as the noise. Run with -benchtime Nx
// (N rounds).
//
// The WAL of the measured Charges is read back with pg_walinspect (created
// in the database if missing): the records that touch a schema's relations
// and the commit records of their transactions, so that other sessions'
// writes do not count. It is logged per relation and record type (-v),
// which also shows whether Finish's updates are HOT. With
// PAYONCE_PGCOST_EXPLAIN=1 the plans of one Charge's statements per
// variant (auto_explain: ANALYZE, BUFFERS, WAL, nested statements, so
// trigger bodies too) are logged as well. With PAYONCE_PGCOST_KIND=refund
// each "Charge" is a refund instead (kind refund, with the reference of the
// payment it refunds).
func BenchmarkChargeCost(b *testing.B) {
	ctx := context.Background()
	names := strings.Split(os.Getenv("PAYONCE_PGCOST_VARIANTS"), ",")
	if names[0] == "" {
		names = []string{"full"}
	}
	rows, block := envInt(b, "PAYONCE_PGCOST_ROWS", 100_000), envInt(b, "PAYONCE_PGCOST_BLOCK", 250)
	admin := testkit.NewPool(b)
	_, err := admin.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect")
	require.NoError(b, err)
	var vs []*costRun
	for _, name := range names {
		sql, ok := costVariants[name]
		if !ok {
			if f, err := os.ReadFile(name); err == nil { // a file of SQL, e.g. a candidate migration
				sql, ok = string(f), true
			}
		}
		if !ok {
			b.Fatalf("unknown variant %q", name)
		}
		vs = append(vs, newCostRun(b, admin, shortName(name), sql, rows))
	}
	// A temporary replication slot keeps the WAL of a round until it has
	// been read (a checkpoint may otherwise recycle it first); it goes
	// with its session, which ends with the benchmark.
	slotConn, err := pgx.Connect(ctx, testkit.URL(b))
	require.NoError(b, err)
	defer slotConn.Close(ctx)
	slot := "pgcost_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, err = slotConn.Exec(ctx, "SELECT pg_create_physical_replication_slot($1, true, true)", slot)
	require.NoError(b, err)
	rng := rand.New(rand.NewPCG(1, 2))
	rounds := 0
	wal := walTally{}
	for b.Loop() {
		rounds++
		var startLSN string
		require.NoError(b, admin.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&startLSN))
		for _, i := range rng.Perm(len(vs)) {
			v := vs[i]
			cpu0 := schedNS(b, v.pid)
			for range block {
				v.charge(b)
			}
			v.cpu = append(v.cpu, float64(schedNS(b, v.pid)-cpu0)/1e3/float64(block))
			v.n += block
		}
		// The WAL a Charge writes does not depend on the load: the first
		// round's is read back (reading every round's would mean reading
		// all the WAL the server writes meanwhile, for everyone), and the
		// slot is dropped.
		if rounds == 1 {
			b.StopTimer()
			wal.add(b, admin, vs, startLSN)
			_, err := slotConn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot)
			require.NoError(b, err)
			b.StartTimer()
		}
	}

	lines := []string{fmt.Sprintf("backend CPU per Charge, µs (%d rounds of %d Charges per variant): median [min, max]; difference from %s: median of per-round differences (IQR)", rounds, block, vs[0].name)}
	for _, v := range vs {
		diffs := make([]float64, len(v.cpu))
		for r := range v.cpu {
			diffs[r] = v.cpu[r] - vs[0].cpu[r]
		}
		med, lo, hi := quantiles(v.cpu)
		dMed, dQ1, dQ3 := median(diffs), quantile(diffs, 0.25), quantile(diffs, 0.75)
		lines = append(lines, fmt.Sprintf("  %-24s %6.1f [%6.1f, %6.1f]   %+6.1f (%+6.1f .. %+6.1f)", v.name, med, lo, hi, dMed, dQ1, dQ3))
		b.ReportMetric(med, v.name+"-µs/charge")
		if v != vs[0] {
			b.ReportMetric(dMed, v.name+"-Δµs/charge")
		}
	}
	b.Log(strings.Join(lines, "\n"))

	for _, v := range vs {
		wal, fpi := wal.log(b, v)
		b.ReportMetric(wal, v.name+"-walB/charge")
		if fpi > 0 {
			b.ReportMetric(fpi, v.name+"-fpiB/charge")
		}
	}
	for _, v := range vs {
		logStatements(b, admin, v)
		logHOT(b, admin, v)
	}
}

// logHOT logs how many updates of the operations and attempts tables were
// HOT, as the statistics collector counts them (warm-up included; a
// backend reports at most once a second, so the last second may be
// missing).
func logHOT(b *testing.B, admin *pgxpool.Pool, v *costRun) {
	rows, err := admin.Query(context.Background(), `SELECT relname::text, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
		WHERE schemaname = $1 AND relname IN ('payonce_operations', 'payonce_attempts') ORDER BY relname`, v.schema)
	require.NoError(b, err)
	defer rows.Close()
	for rows.Next() {
		var (
			rel      string
			upd, hot int64
		)
		require.NoError(b, rows.Scan(&rel, &upd, &hot))
		b.Logf("%s: %s: %d updates, %d of them HOT", v.name, rel, upd, hot)
	}
	require.NoError(b, rows.Err())
}

// costRun is one variant's store, on a scratch schema and a pool of one
// connection, and what was measured on it.
type costRun struct {
	name, schema string
	s            *ledgerpg.Store
	pool         *pgxpool.Pool
	pid          int
	prefix       string
	i, n         int
	walN         int       // Charges whose WAL was read
	refund       bool      // PAYONCE_PGCOST_KIND=refund: refunds instead of charges
	cpu          []float64 // µs per Charge, one per block
}

func newCostRun(b *testing.B, admin *pgxpool.Pool, name, variant string, rows int) *costRun {
	ctx := context.Background()
	v := &costRun{name: name, prefix: "cost-" + strconv.FormatInt(time.Now().UnixNano(), 36), refund: os.Getenv("PAYONCE_PGCOST_KIND") == "refund"}
	var notices []string
	cfg, err := pgxpool.ParseConfig(testkit.URL(b))
	require.NoError(b, err)
	cfg.MaxConns, cfg.MinConns = 1, 1
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices = append(notices, n.Message) }
	v.pool = testkit.NewPoolConfig(b, cfg)
	v.schema = "pgcost_" + name + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, err = admin.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{v.schema}.Sanitize())
	require.NoError(b, err)
	testkit.DropOnCleanup(b, admin.Config().ConnConfig, "schema "+v.schema, "DROP SCHEMA IF EXISTS "+pgx.Identifier{v.schema}.Sanitize()+" CASCADE")
	v.s, err = ledgerpg.New(v.pool, ledgerpg.Config{Schema: v.schema})
	require.NoError(b, err)
	require.NoError(b, v.s.Migrate(ctx))
	seedSettled(b, admin, v.schema, rows)
	if variant != "" {
		_, err := admin.Exec(ctx, strings.ReplaceAll(variant, "{{s}}", pgx.Identifier{v.schema}.Sanitize()))
		require.NoError(b, err)
	}
	for range 200 {
		v.charge(b)
	}
	if os.Getenv("PAYONCE_PGCOST_EXPLAIN") == "1" {
		_, err := v.pool.Exec(ctx, `LOAD 'auto_explain'; SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on;
			SET auto_explain.log_buffers = on; SET auto_explain.log_wal = on; SET auto_explain.log_nested_statements = on;
			SET auto_explain.log_level = notice`)
		require.NoError(b, err)
		notices = nil
		v.charge(b)
		_, err = v.pool.Exec(ctx, `SET auto_explain.log_min_duration = -1`)
		require.NoError(b, err)
		b.Logf("%s: plans of one Charge:\n%s", name, strings.Join(notices, "\n"))
	}
	require.NoError(b, v.pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&v.pid))
	return v
}

// charge runs one Charge: Begin with its first attempt, Finish as
// succeeded with a provider reference.
func (v *costRun) charge(b *testing.B) {
	ctx := context.Background()
	v.i++
	op := ledgertest.NewOp(fmt.Sprintf("%s-%09d", v.prefix, v.i))
	if v.refund {
		// A refund of an earlier payment: found by that payment's
		// reference too (the payment_ref index).
		op.Kind, op.PaymentRef = "refund", fmt.Sprintf("pi_seed-%09d", 1+v.i%1000)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(v.i) * time.Millisecond)
	res, err := v.s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: now, LeaseUntil: now.Add(5 * time.Minute), StartAttempt: true})
	if err != nil || res.Attempt == nil {
		b.Fatalf("%s: Begin: %v (%+v)", v.name, err, res)
	}
	_, err = v.s.Finish(ctx, ledger.FinishParams{
		ID: op.ID, Owner: "w", Now: now.Add(time.Microsecond), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt:     &ledger.AttemptOutcome{Number: res.Attempt.Number, Class: ledger.OutcomeSuccess, HTTPStatus: 200, ProviderRequestID: "req_bench"},
		ProviderRef: "pi_" + op.ID, Result: []byte(`{"status":"succeeded"}`),
	})
	if err != nil {
		b.Fatalf("%s: Finish: %v", v.name, err)
	}
}

// walTally sums the WAL records the variants' Charges wrote, by schema,
// relation, resource manager and record type.
type walTally map[[4]string]*[3]int64 // count, bytes, full-page image bytes

// add reads the WAL from startLSN to now with pg_walinspect: the records
// that touch the variants' schemas, and the commit records of their
// transactions, so that other sessions' writes do not count.
func (t walTally) add(b *testing.B, admin *pgxpool.Pool, vs []*costRun, startLSN string) {
	ctx := context.Background()
	var endLSN string
	require.NoError(b, admin.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&endLSN))
	// pg_walinspect reads only flushed WAL, and Finish is lazily durable.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var flushed bool
		require.NoError(b, admin.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn", endLSN).Scan(&flushed))
		if flushed {
			break
		}
	}
	schemas := make([]string, len(vs))
	for i, v := range vs {
		schemas[i] = v.schema
	}
	rows, err := admin.Query(ctx, `WITH r AS (
			SELECT w.xid, w.resource_manager AS rm, w.record_type AS rt, w.record_length AS len, w.fpi_length AS fpi,
				(regexp_match(w.block_ref, 'rel \d+/(\d+)/(\d+)'))[1]::oid AS db,
				(regexp_match(w.block_ref, 'rel \d+/(\d+)/(\d+)'))[2]::oid AS fnode
			FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) w
		), ours AS (
			SELECT r.*, ns.nspname::text AS schema, c.relname::text AS rel FROM r
			JOIN pg_class c ON c.relfilenode = r.fnode
			JOIN pg_namespace ns ON ns.oid = c.relnamespace AND ns.nspname = ANY($3::text[])
			WHERE r.db = (SELECT oid FROM pg_database WHERE datname = current_database())
		), xids AS (
			SELECT DISTINCT xid, schema FROM ours WHERE xid <> 0
		)
		SELECT schema, rel, rm, rt, count(*), sum(len), sum(fpi) FROM ours GROUP BY 1, 2, 3, 4
		UNION ALL
		SELECT x.schema, '(commit)', r.rm, r.rt, count(*), sum(r.len), sum(r.fpi) FROM r JOIN xids x ON x.xid = r.xid
		WHERE r.fnode IS NULL AND r.rm = 'Transaction'
		GROUP BY 1, 2, 3, 4`, startLSN, endLSN, schemas)
	require.NoError(b, err)
	defer rows.Close()
	for rows.Next() {
		var (
			k [4]string
			c [3]int64
		)
		require.NoError(b, rows.Scan(&k[0], &k[1], &k[2], &k[3], &c[0], &c[1], &c[2]))
		if t[k] == nil {
			t[k] = &[3]int64{}
		}
		for i := range c {
			t[k][i] += c[i]
		}
	}
	require.NoError(b, rows.Err())
	for _, v := range vs {
		v.walN = v.n
	}
}

// log logs the WAL v's measured Charges wrote, per relation and record
// type, and returns the bytes per Charge, and the full-page images among
// them.
func (t walTally) log(b *testing.B, v *costRun) (perCharge, fpiPerCharge float64) {
	n := float64(v.walN)
	var (
		total, fpi int64
		keys       [][4]string
	)
	perRel := map[string]int64{}
	for k, c := range t {
		if k[0] != v.schema {
			continue
		}
		keys = append(keys, k)
		total += c[1]
		fpi += c[2]
		perRel[k[1]] += c[1]
	}
	sort.Slice(keys, func(i, j int) bool { return t[keys[i]][1] > t[keys[j]][1] })
	lines := []string{fmt.Sprintf("%s: WAL per Charge (%d Charges): records, bytes (of which full-page images)", v.name, v.walN)}
	for _, k := range keys {
		c := t[k]
		lines = append(lines, fmt.Sprintf("  %-40s %-12s %-16s %6.2f rec %7.1f B (FPI %6.1f B)",
			k[1], k[2], k[3], float64(c[0])/n, float64(c[1])/n, float64(c[2])/n))
	}
	rels := make([]string, 0, len(perRel))
	for r := range perRel {
		rels = append(rels, r)
	}
	sort.Slice(rels, func(i, j int) bool { return perRel[rels[i]] > perRel[rels[j]] })
	lines = append(lines, "  by relation:")
	for _, r := range rels {
		lines = append(lines, fmt.Sprintf("    %-40s %7.1f B", r, float64(perRel[r])/n))
	}
	lines = append(lines, fmt.Sprintf("  total %.1f B, of which full-page images %.1f B", float64(total)/n, float64(fpi)/n))
	b.Log(strings.Join(lines, "\n"))
	return float64(total) / n, float64(fpi) / n
}

// shortName is a variant's name: a file's base name without .up.sql.
func shortName(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSuffix(name, ".up.sql")
}

func quantiles(xs []float64) (med, lo, hi float64) {
	return median(xs), quantile(xs, 0), quantile(xs, 1)
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// logStatements logs what pg_stat_statements recorded for the schema's
// statements (warm-up included), when the extension is loaded.
func logStatements(b *testing.B, admin *pgxpool.Pool, v *costRun) {
	schema := v.schema
	ctx := context.Background()
	var loaded bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements')
		AND current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%'`).Scan(&loaded); err != nil || !loaded {
		b.Log("pg_stat_statements not loaded: no per-statement figures")
		return
	}
	rows, err := admin.Query(ctx, `SELECT calls, mean_exec_time * 1000, shared_blks_hit::float8 / calls, shared_blks_read::float8 / calls,
			shared_blks_dirtied::float8 / calls, shared_blks_written::float8 / calls,
			wal_records::float8 / calls, wal_fpi::float8 / calls, wal_bytes::float8 / calls, left(regexp_replace(query, '\s+', ' ', 'g'), 160)
		FROM pg_stat_statements WHERE query LIKE '%' || $1 || '%' AND calls >= 100 ORDER BY calls DESC, total_exec_time DESC`, schema)
	require.NoError(b, err)
	defer rows.Close()
	lines := []string{v.name + ": pg_stat_statements, per call: calls, mean exec µs, shared blocks hit/read/dirtied/written, WAL records/FPI/bytes, statement"}
	for rows.Next() {
		var (
			calls                                       int64
			mean, hit, read, dirtied, written, rec, fpi float64
			bytes                                       float64
			query                                       string
		)
		require.NoError(b, rows.Scan(&calls, &mean, &hit, &read, &dirtied, &written, &rec, &fpi, &bytes, &query))
		query = strings.ReplaceAll(query, pgx.Identifier{schema}.Sanitize()+".", "")
		lines = append(lines, fmt.Sprintf("  %6d %7.1f µs  blks %5.1f/%4.2f/%4.2f/%4.2f  wal %4.2f rec %4.3f fpi %6.1f B  %s",
			calls, mean, hit, read, dirtied, written, rec, fpi, bytes, query))
	}
	require.NoError(b, rows.Err())
	b.Log(strings.Join(lines, "\n"))
}

// seedSettled fills schema with rows settled charges, as many Charges
// would have left them: the operation (succeeded, with a provider
// reference), its attempt, and the feed entries the triggers write; then
// vacuums and analyzes, as autovacuum would.
func seedSettled(b *testing.B, admin *pgxpool.Pool, schema string, rows int) {
	ctx := context.Background()
	ops, atts := table(schema, "payonce_operations"), table(schema, "payonce_attempts")
	start := time.Now()
	_, err := admin.Exec(ctx, `INSERT INTO `+ops+` (id, key, provider, kind, refs, generation, fingerprint, request,
			status, provider_ref, result, attempts, key_ttl_ms, window_start, key_expires_at, created_at, updated_at, finished_at)
		SELECT 'seed-' || lpad(i::text, 9, '0'), 'seed-' || lpad(i::text, 9, '0'), 'stripe', 'charge',
			ARRAY['order', 'seed-' || lpad(i::text, 9, '0')], 0, 'fp-' || i, '{"amount":1000,"currency":"EUR","order":"seed-' || i || '"}',
			'succeeded', 'pi_seed-' || lpad(i::text, 9, '0'), '{"status":"succeeded"}', 1, 86400000,
			$1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms' + interval '1 day',
			$1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms'
		FROM generate_series(1, $2::int) AS i`, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), rows)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, `INSERT INTO `+atts+` (operation_id, number, key, started_at, finished_at, may_have_reached, outcome, http_status, provider_request_id)
		SELECT id, 1, key, created_at, finished_at, true, 'success', 200, 'req_seed' FROM `+ops)
	require.NoError(b, err)
	_, err = admin.Exec(ctx, "VACUUM (ANALYZE) "+ops+", "+atts+", "+table(schema, "payonce_feed"))
	require.NoError(b, err)
	b.Logf("seeded %d settled charges in %v", rows, time.Since(start).Round(time.Millisecond))
}

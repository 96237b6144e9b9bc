package ledgerpg_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

// TestRetentionMeasure measures the retention of a large ledger two ways
// and what each costs the database:
//
//   - today's Cleanup (batched DELETE ... RETURNING, attempts by ON DELETE
//     CASCADE, one tombstone row per deleted operation), through the
//     store's API, followed by the VACUUM it leaves to do;
//   - a prototype (not the store): the same rows in tables partitioned by
//     month of created_at, a global table of names guarding the uniqueness
//     that a partitioned table cannot (every unique constraint of a
//     partitioned table must include the partition key), compact
//     tombstones written from each expired partition, which is then
//     detached and dropped;
//
// and the cost the name table adds to Begin's insert, and to reading an
// operation by id.
//
// It fills 1,000,000 operations (PAYONCE_RETENTION_BENCH_ROWS to change;
// PAYONCE_RETENTION_BENCH_BATCH sets Cleanup's BatchSize,
// PAYONCE_RETENTION_BENCH_BEGINS the number of Begin inserts per variant)
// and takes minutes, so it runs only with PAYONCE_RETENTION_BENCH=1, e.g.
//
//	PAYONCE_RETENTION_BENCH=1 PAYONCE_TEST_DATABASE_URL=postgres://... \
//	  go test ./ledger/ledgerpg -run TestRetentionMeasure -v -timeout 60m
//
// WAL is read as pg_current_wal_lsn differences (server-wide: other
// sessions writing at the same time inflate it) and, when the
// pg_stat_statements view is installed, as the wal_bytes of this test's
// statements (which name its schema). Backend CPU is read from
// /proc/<pid>/stat of the backends serving the store's pool: it needs the
// server on this host.
func TestRetentionMeasure(t *testing.T) {
	if os.Getenv("PAYONCE_RETENTION_BENCH") != "1" {
		t.Skip("measures retention on a large ledger; set PAYONCE_RETENTION_BENCH=1 to run")
	}
	rows := 1_000_000
	if v := os.Getenv("PAYONCE_RETENTION_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		rows = n
	}
	beginOps := 1000
	if v := os.Getenv("PAYONCE_RETENTION_BENCH_BEGINS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		beginOps = n
	}
	batch := 0
	if v := os.Getenv("PAYONCE_RETENTION_BENCH_BATCH"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		batch = n
	}
	ctx := context.Background()
	m := newRetentionMeter(t)
	r := &retentionBench{t: t, m: m, ctx: ctx, rows: rows, batch: batch}
	r.seed()
	r.measureCleanup()
	r.measurePartitioned()
	r.measureBegin(beginOps)
	r.measureLookup(5 * beginOps)
	m.logStatements(ctx)
}

// logStatements logs what pg_stat_statements counted for each statement
// of this test's schema that wrote WAL, the most first: which part of a
// step wrote it (Cleanup's delete against its tombstone inserts).
func (m *retentionMeter) logStatements(ctx context.Context) {
	if !m.pgss {
		return
	}
	rows, err := m.admin.Query(ctx, `SELECT calls, rows, wal_bytes::float8, total_exec_time,
			regexp_replace(left(regexp_replace(query, '\s+', ' ', 'g'), 110), '"[a-z0-9_]+"\.', '', 'g')
		FROM pg_stat_statements WHERE strpos(query, $1) > 0 AND wal_bytes > 0 ORDER BY wal_bytes DESC LIMIT 16`, m.schema)
	require.NoError(m.t, err)
	defer rows.Close()
	for rows.Next() {
		var (
			calls, n int64
			wal, ms  float64
			q        string
		)
		require.NoError(m.t, rows.Scan(&calls, &n, &wal, &ms, &q))
		per := float64(max(n, 1))
		m.t.Logf("STATEMENT calls %d rows %d: WAL %.0f B/row, %.1f µs/row: %s", calls, n, wal/per, ms*1000/per, q)
	}
	require.NoError(m.t, rows.Err())
}

// The ledger spans months Jan-Oct 2026 evenly; retention removes what
// finished before June: about half of it, the months Jan-May.
var (
	retentionFrom   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	retentionSpan   = 300 * 24 * time.Hour
	retentionCutoff = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	retentionMonths = 11 // Jan-Nov: November takes the Begin measurement's rows
)

// cleanupNow is Cleanup's Now: retention 48h, so finishedBefore is the
// cutoff.
var cleanupNow = retentionCutoff.Add(48 * time.Hour)

// retentionMeter reads what the server spent: WAL position, the CPU time of
// the backends serving one application_name, relation sizes.
type retentionMeter struct {
	t      *testing.T
	app    string
	pool   *pgxpool.Pool // the store's and the prototype's: application_name app
	admin  *pgxpool.Pool // measuring only
	schema string
	pgss   bool
}

func newRetentionMeter(t *testing.T) *retentionMeter {
	app := "payonce_retention_" + strings.ToLower(strconv.FormatInt(time.Now().UnixNano()%1e9, 36))
	cfg, err := pgxpool.ParseConfig(testkit.URL(t))
	require.NoError(t, err)
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool := testkit.NewPoolConfig(t, cfg)
	acfg, err := pgxpool.ParseConfig(testkit.URL(t))
	require.NoError(t, err)
	acfg.MaxConns = 1
	admin := testkit.NewPoolConfig(t, acfg)
	m := &retentionMeter{t: t, app: app, pool: pool, admin: admin, schema: testkit.NewSchema(t, pool)}
	var ok bool
	require.NoError(t, admin.QueryRow(context.Background(), "SELECT to_regclass('pg_stat_statements') IS NOT NULL").Scan(&ok))
	m.pgss = ok
	return m
}

func (m *retentionMeter) tbl(name string) string { return table(m.schema, name) }

// mark is a point to measure from.
type mark struct {
	at      time.Time
	lsn     string
	ticks   map[int32]uint64
	pgssWAL float64
}

func (m *retentionMeter) mark(ctx context.Context) mark {
	mk := mark{at: time.Now(), ticks: m.backendTicks(ctx)}
	require.NoError(m.t, m.admin.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&mk.lsn))
	mk.pgssWAL = m.statementsWAL(ctx)
	return mk
}

// statementsWAL is the WAL of the statements naming this schema, as
// pg_stat_statements counts it (a top-level statement includes what its
// triggers and cascades wrote), or -1 without pg_stat_statements.
func (m *retentionMeter) statementsWAL(ctx context.Context) float64 {
	if !m.pgss {
		return -1
	}
	var wal float64
	if err := m.admin.QueryRow(ctx, "SELECT coalesce(sum(wal_bytes), 0)::float8 FROM pg_stat_statements WHERE strpos(query, $1) > 0", m.schema).Scan(&wal); err != nil {
		m.t.Logf("pg_stat_statements: %v", err)
		return -1
	}
	return wal
}

// backendTicks is utime+stime (clock ticks) of every backend of m.app.
func (m *retentionMeter) backendTicks(ctx context.Context) map[int32]uint64 {
	rows, err := m.admin.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", m.app)
	require.NoError(m.t, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(m.t, err)
	out := map[int32]uint64{}
	for _, pid := range pids {
		if v, ok := procTicks(pid); ok {
			out[pid] = v
		}
	}
	return out
}

// procTicks reads utime+stime of pid from /proc/<pid>/stat (fields 14 and
// 15, counted after the parenthesised command name).
func procTicks(pid int32) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	return u + s, err1 == nil && err2 == nil
}

// spent is what the server spent since a mark.
type spent struct {
	wall       time.Duration
	wal        float64 // bytes, server-wide
	pgssWAL    float64 // bytes, this schema's statements; -1 if unknown
	backendCPU time.Duration
	cpuKnown   bool
}

func (m *retentionMeter) since(ctx context.Context, from mark) spent {
	to := m.mark(ctx)
	s := spent{wall: to.at.Sub(from.at), pgssWAL: -1}
	require.NoError(m.t, m.admin.QueryRow(ctx, "SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8", to.lsn, from.lsn).Scan(&s.wal))
	if from.pgssWAL >= 0 && to.pgssWAL >= 0 {
		s.pgssWAL = to.pgssWAL - from.pgssWAL
	}
	var ticks uint64
	for pid, v := range to.ticks {
		ticks += v - from.ticks[pid] // a backend started since counts from 0
		s.cpuKnown = true
	}
	s.backendCPU = time.Duration(ticks) * 10 * time.Millisecond // USER_HZ = 100
	return s
}

// per formats s divided over n operations.
func (s spent) per(n int) string {
	if n == 0 {
		return "nothing done"
	}
	f := float64(n)
	out := fmt.Sprintf("%d ops in %v: %.0f ops/s; WAL %.0f B/op (server-wide)", n, s.wall.Round(time.Millisecond), f/s.wall.Seconds(), s.wal/f)
	if s.pgssWAL >= 0 {
		out += fmt.Sprintf(", %.0f B/op (pg_stat_statements)", s.pgssWAL/f)
	}
	if s.cpuKnown {
		out += fmt.Sprintf("; backend CPU %v (%.1f µs/op)", s.backendCPU, float64(s.backendCPU.Microseconds())/f)
	}
	return out
}

// relSize is the heap and index bytes of a table, its partitions included.
type relSize struct{ heap, index int64 }

func (m *retentionMeter) size(ctx context.Context, name string) relSize {
	var r relSize
	require.NoError(m.t, m.admin.QueryRow(ctx, `SELECT coalesce(sum(pg_relation_size(relid)), 0)::bigint,
		coalesce(sum(pg_indexes_size(relid)), 0)::bigint
		FROM (SELECT relid FROM pg_partition_tree($1::regclass) UNION SELECT $1::regclass) AS t`, m.tbl(name)).Scan(&r.heap, &r.index))
	return r
}

func (r relSize) String() string {
	return fmt.Sprintf("heap %s + indexes %s", mb(r.heap), mb(r.index))
}

func mb(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

// deadTuples waits (up to 15s) for the cumulative statistics to show the
// dead tuples of table, at least want.
func (m *retentionMeter) deadTuples(ctx context.Context, name string, want int64) (live, dead int64) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, _ = m.admin.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		require.NoError(m.t, m.admin.QueryRow(ctx, `SELECT coalesce(sum(n_live_tup), 0)::bigint, coalesce(sum(n_dead_tup), 0)::bigint
			FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`, m.schema, name).Scan(&live, &dead))
		if dead >= want || time.Now().After(deadline) {
			return live, dead
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (m *retentionMeter) exec(ctx context.Context, sql string, args ...any) {
	m.t.Helper()
	_, err := m.pool.Exec(ctx, strings.ReplaceAll(sql, "{{s}}", pgx.Identifier{m.schema}.Sanitize()), args...)
	require.NoError(m.t, err, sql)
}

func (m *retentionMeter) count(ctx context.Context, sql string, args ...any) int64 {
	m.t.Helper()
	var n int64
	require.NoError(m.t, m.pool.QueryRow(ctx, strings.ReplaceAll(sql, "{{s}}", pgx.Identifier{m.schema}.Sanitize()), args...).Scan(&n), sql)
	return n
}

// checkpoint starts a measurement from a checkpoint, so that both ways pay
// the full-page images of the first change to each page alike.
func (m *retentionMeter) checkpoint(ctx context.Context) {
	_, err := m.admin.Exec(ctx, "CHECKPOINT")
	require.NoError(m.t, err)
}

type retentionBench struct {
	t     *testing.T
	m     *retentionMeter
	ctx   context.Context
	rows  int
	batch int
	store *ledgerpg.Store
}

func (r *retentionBench) logf(format string, args ...any) { r.t.Logf(format, args...) }

// seed fills the store's tables as Begin and Finish leave a settled
// operation (one attempt; no audit events, no feed entries: the triggers
// are off while seeding), then copies the same rows into the prototype.
func (r *retentionBench) seed() {
	ctx, m := r.ctx, r.m
	r.store = migratedStore(r.t, m.pool, m.schema)
	start := time.Now()
	conn, err := m.pool.Acquire(ctx)
	require.NoError(r.t, err)
	defer conn.Release()
	q := func(sql string, args ...any) {
		_, err := conn.Exec(ctx, strings.ReplaceAll(sql, "{{s}}", pgx.Identifier{m.schema}.Sanitize()), args...)
		require.NoError(r.t, err, sql)
	}
	// No triggers (feed, review code) and no foreign key checks while seeding.
	q("SET session_replication_role = replica")
	// The realistic shapes: ids and keys are hashes (random in the index),
	// fingerprints sha256 hex, a request of ~230 bytes, a result of ~130.
	q(`INSERT INTO {{s}}.payonce_operations (id, key, provider, kind, refs, generation, fingerprint, request, status,
			provider_ref, result, attempts, key_ttl_ms, window_start, key_expires_at, created_at, updated_at, finished_at)
		SELECT id, id, 'stripe', 'charge', ARRAY['order', 'ord_' || i], 0, fp, request, status,
			pref, '{"id":"' || pref || '","object":"payment_intent","status":"' || status || '","amount":' || (1000 + i % 50000) || ',"currency":"eur","latest_charge":"ch_' || substr(md5('ch' || i), 1, 24) || '"}',
			1, 86400000, created, created + interval '1 day', created, created + interval '2 seconds', created + interval '2 seconds'
		FROM (SELECT i, 'op_' || md5(i::text) AS id, md5('fp' || i) || md5('fq' || i) AS fp,
				'{"amount":' || (1000 + i % 50000) || ',"currency":"EUR","customer":"cus_' || substr(md5('c' || (i % 100000)), 1, 14)
					|| '","description":"order ord_' || i || '","metadata":{"order":"ord_' || i || '"},"payment_method":"pm_' || substr(md5('pm' || i), 1, 24)
					|| '","capture_method":"automatic","confirm":true}' AS request,
				CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'succeeded' END AS status,
				'pi_' || substr(md5('pi' || i), 1, 24) AS pref,
				$1::timestamptz + (i - 1) * ($3::interval / $2::int) AS created
			FROM generate_series(1, $2::int) AS i) AS g`, retentionFrom, r.rows, retentionSpan)
	q(`INSERT INTO {{s}}.payonce_attempts (operation_id, number, key, started_at, finished_at, may_have_reached,
			outcome, http_status, provider_request_id, replayed)
		SELECT id, 1, key, created_at, finished_at, true, CASE status WHEN 'succeeded' THEN 'success' ELSE 'refused' END,
			CASE status WHEN 'succeeded' THEN 200 ELSE 402 END, 'req_' || substr(md5(id), 1, 14), false
		FROM {{s}}.payonce_operations`)
	r.logf("seeded %d operations and attempts in %v", r.rows, time.Since(start).Round(time.Millisecond))

	// The prototype: the same columns, partitioned by month of created_at.
	// No unique index on key: the name table guards it (see below).
	start = time.Now()
	q(`CREATE TABLE {{s}}.proto_ops (LIKE {{s}}.payonce_operations INCLUDING DEFAULTS) PARTITION BY RANGE (created_at)`)
	q(`ALTER TABLE {{s}}.proto_ops ADD PRIMARY KEY (id, created_at)`)
	q(`CREATE INDEX ON {{s}}.proto_ops (finished_at) WHERE status IN ('succeeded', 'failed')`)
	q(`CREATE INDEX ON {{s}}.proto_ops (next_check_at, id) WHERE next_check_at IS NOT NULL`)
	q(`CREATE INDEX ON {{s}}.proto_ops (review_at, id) WHERE status = 'manual_review'`)
	q(`CREATE INDEX ON {{s}}.proto_ops (provider, kind, provider_ref) WHERE provider_ref IS NOT NULL`)
	q(`CREATE INDEX ON {{s}}.proto_ops (provider, kind, payment_ref) WHERE payment_ref IS NOT NULL`)
	// Attempts carry their operation's created_at, the partition key; no
	// foreign key (its partition goes with the operation's).
	q(`CREATE TABLE {{s}}.proto_attempts (LIKE {{s}}.payonce_attempts INCLUDING DEFAULTS, op_created_at timestamptz NOT NULL)
		PARTITION BY RANGE (op_created_at)`)
	q(`ALTER TABLE {{s}}.proto_attempts ADD PRIMARY KEY (operation_id, number, op_created_at)`)
	for i := range retentionMonths {
		from, to := retentionFrom.AddDate(0, i, 0), retentionFrom.AddDate(0, i+1, 0)
		q(fmt.Sprintf(`CREATE TABLE {{s}}.proto_ops_%s PARTITION OF {{s}}.proto_ops FOR VALUES FROM ('%s') TO ('%s')`,
			from.Format("200601"), from.Format(time.RFC3339), to.Format(time.RFC3339)))
		q(fmt.Sprintf(`CREATE TABLE {{s}}.proto_attempts_%s PARTITION OF {{s}}.proto_attempts FOR VALUES FROM ('%s') TO ('%s')`,
			from.Format("200601"), from.Format(time.RFC3339), to.Format(time.RFC3339)))
	}
	// The name table: every operation's id (its generation-0 key) and
	// every later generation's key, once. Its primary key is the global
	// uniqueness the partitioned table cannot have (Begin conflicts here),
	// and created_at finds the partition of a name's operation.
	q(`CREATE TABLE {{s}}.proto_names (name text COLLATE "C" PRIMARY KEY, created_at timestamptz NOT NULL)`)
	// Compact tombstones: what Tombstone.Operation returns, no more.
	q(`CREATE TABLE {{s}}.proto_tombstones (
		id            text        COLLATE "C" PRIMARY KEY,
		key           text        COLLATE "C",      -- NULL at generation 0 (the key is the id)
		provider      text        NOT NULL,
		kind          text        NOT NULL,
		refs          text[]      NOT NULL,
		generation    integer     NOT NULL,
		fingerprint   bytea       NOT NULL,         -- sha256, 32 bytes instead of 64 hex
		succeeded     boolean     NOT NULL,         -- the status: succeeded or failed
		provider_ref  text,
		result        text,
		amount        bigint      NOT NULL,
		currency      text        NOT NULL,
		key_ttl_ms    bigint      NOT NULL,
		created_at    timestamptz NOT NULL,
		finished_at   timestamptz NOT NULL,
		tombstoned_at timestamptz NOT NULL)`)
	q(`CREATE INDEX ON {{s}}.proto_tombstones (finished_at)`)
	q(`CREATE INDEX ON {{s}}.proto_tombstones (provider, kind, provider_ref) WHERE provider_ref IS NOT NULL`)
	q(`INSERT INTO {{s}}.proto_ops SELECT * FROM {{s}}.payonce_operations`)
	q(`INSERT INTO {{s}}.proto_attempts SELECT a.*, o.created_at FROM {{s}}.payonce_attempts a JOIN {{s}}.payonce_operations o ON o.id = a.operation_id`)
	q(`INSERT INTO {{s}}.proto_names SELECT id, created_at FROM {{s}}.payonce_operations`)
	q("RESET session_replication_role")
	// Begin's insert into the partitioned table writes the feed as today's does.
	q(`CREATE TRIGGER proto_feed_created AFTER INSERT ON {{s}}.proto_ops FOR EACH ROW EXECUTE FUNCTION {{s}}.payonce_feed_record()`)
	for _, tb := range []string{"payonce_operations", "payonce_attempts", "payonce_tombstones", "proto_names", "proto_tombstones"} {
		// Measured VACUUM instead of autovacuum at a random moment.
		q(`ALTER TABLE {{s}}.` + tb + ` SET (autovacuum_enabled = false)`)
	}
	for i := range retentionMonths {
		p := retentionFrom.AddDate(0, i, 0).Format("200601")
		q(`ALTER TABLE {{s}}.proto_ops_` + p + ` SET (autovacuum_enabled = false)`)
		q(`ALTER TABLE {{s}}.proto_attempts_` + p + ` SET (autovacuum_enabled = false)`)
	}
	q(`VACUUM (ANALYZE) {{s}}.payonce_operations, {{s}}.payonce_attempts, {{s}}.proto_ops, {{s}}.proto_attempts, {{s}}.proto_names`)
	r.logf("prototype copied and everything vacuumed in %v", time.Since(start).Round(time.Millisecond))
	r.logf("sizes: operations %v; attempts %v; prototype operations %v, attempts %v, names %v",
		m.size(ctx, "payonce_operations"), m.size(ctx, "payonce_attempts"),
		m.size(ctx, "proto_ops"), m.size(ctx, "proto_attempts"), m.size(ctx, "proto_names"))
}

// measureCleanup runs today's Cleanup through the store's API, then the
// VACUUM it leaves to do.
func (r *retentionBench) measureCleanup() {
	ctx, m := r.ctx, r.m
	s := r.store
	due := m.count(ctx, `SELECT count(*) FROM {{s}}.payonce_operations WHERE finished_at < $1`, retentionCutoff)
	opsBefore, attBefore := m.size(ctx, "payonce_operations"), m.size(ctx, "payonce_attempts")
	{
		batch := r.batch // 0: the default batch size (1000)
		m.checkpoint(ctx)
		from := m.mark(ctx)
		rep, err := s.Cleanup(ctx, ledger.CleanupParams{Now: cleanupNow, Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour,
			BatchSize: batch, FeedRetention: 3650 * 24 * time.Hour})
		require.NoError(r.t, err)
		sp := m.since(ctx, from)
		require.EqualValues(r.t, due, rep.Deleted)
		r.logf("TODAY Cleanup (batch %d, %d batches): %s", batch, rep.Batches, sp.per(rep.Deleted))
	}
	_, opsDead := m.deadTuples(ctx, "payonce_operations", due)
	_, attDead := m.deadTuples(ctx, "payonce_attempts", due)
	r.logf("TODAY after Cleanup: operations %v (before %v), n_dead_tup %d; attempts %v (before %v), n_dead_tup %d",
		m.size(ctx, "payonce_operations"), opsBefore, opsDead, m.size(ctx, "payonce_attempts"), attBefore, attDead)
	tomb := m.size(ctx, "payonce_tombstones")
	n := m.count(ctx, `SELECT count(*) FROM {{s}}.payonce_tombstones`)
	r.logf("TODAY tombstones: %d rows, %v: %.0f B/op (heap %.0f + indexes %.0f)", n, tomb,
		float64(tomb.heap+tomb.index)/float64(n), float64(tomb.heap)/float64(n), float64(tomb.index)/float64(n))
	// The dead rows are not gone until VACUUM; with autovacuum on, it
	// runs after Cleanup and costs this.
	from := m.mark(ctx)
	m.exec(ctx, `VACUUM {{s}}.payonce_operations, {{s}}.payonce_attempts`)
	sp := m.since(ctx, from)
	r.logf("TODAY VACUUM after Cleanup (per deleted op): %s", sp.per(int(due)))
	r.logf("TODAY after VACUUM: operations %v, attempts %v (free space reused by new rows, not returned)",
		m.size(ctx, "payonce_operations"), m.size(ctx, "payonce_attempts"))
}

// measurePartitioned runs the prototype's retention: for each month
// entirely before the cutoff, check that every operation in it is
// finished, past retention and past its key window; write its compact
// tombstones; then detach and drop its partitions.
func (r *retentionBench) measurePartitioned() {
	ctx, m := r.ctx, r.m
	m.checkpoint(ctx)
	from := m.mark(ctx)
	var (
		removed                     int64
		checkT, tombT, dropT, lockT time.Duration
		checkSp, tombSp, dropSp     spent
		checkN                      int
	)
	for i := range retentionMonths {
		lo, hi := retentionFrom.AddDate(0, i, 0), retentionFrom.AddDate(0, i+1, 0)
		if hi.After(retentionCutoff) {
			break
		}
		p := lo.Format("200601")
		mk := m.mark(ctx)
		// Rule 6 for a whole partition: one operation still open, or
		// whose key the provider may still hold, keeps it.
		open := m.count(ctx, `SELECT count(*) FROM {{s}}.proto_ops_`+p+` WHERE status NOT IN ('succeeded', 'failed')
			OR finished_at IS NULL OR finished_at >= $1 OR key_expires_at > $2`, retentionCutoff, cleanupNow)
		require.Zero(r.t, open)
		sp := m.since(ctx, mk)
		checkT += sp.wall
		checkSp = addSpent(checkSp, sp)
		checkN++

		mk = m.mark(ctx)
		st := time.Now()
		// Committed before the detach: for a moment an id has both its
		// live row and a tombstone saying the same (readers prefer the
		// row); never neither.
		m.exec(ctx, `INSERT INTO {{s}}.proto_tombstones
			SELECT id, CASE WHEN generation = 0 THEN NULL ELSE key END, provider, kind, refs, generation, decode(fingerprint, 'hex'),
				status = 'succeeded', provider_ref, result,
				coalesce((request::jsonb ->> 'amount')::bigint, 0), coalesce(request::jsonb ->> 'currency', ''),
				key_ttl_ms, created_at, finished_at, $1
			FROM {{s}}.proto_ops_`+p, cleanupNow)
		tombT += time.Since(st)
		tombSp = addSpent(tombSp, m.since(ctx, mk))

		mk = m.mark(ctx)
		st = time.Now()
		n := m.count(ctx, `SELECT count(*) FROM {{s}}.proto_ops_`+p)
		removed += n
		// DETACH (not CONCURRENTLY) takes an ACCESS EXCLUSIVE lock on the
		// parent: Begin waits for this transaction, so it holds only the
		// detaches; the drops follow outside it.
		tx, err := m.pool.Begin(ctx)
		require.NoError(r.t, err)
		l0 := time.Now()
		for _, stmt := range []string{
			`ALTER TABLE {{s}}.proto_attempts DETACH PARTITION {{s}}.proto_attempts_` + p,
			`ALTER TABLE {{s}}.proto_ops DETACH PARTITION {{s}}.proto_ops_` + p,
		} {
			_, err := tx.Exec(ctx, strings.ReplaceAll(stmt, "{{s}}", pgx.Identifier{m.schema}.Sanitize()))
			require.NoError(r.t, err)
		}
		require.NoError(r.t, tx.Commit(ctx))
		lockT += time.Since(l0)
		m.exec(ctx, `DROP TABLE {{s}}.proto_attempts_`+p+`, {{s}}.proto_ops_`+p)
		dropT += time.Since(st)
		dropSp = addSpent(dropSp, m.since(ctx, mk))
	}
	sp := m.since(ctx, from)
	r.logf("PARTITIONED retention, all steps: %s", sp.per(int(removed)))
	r.logf("PARTITIONED   check (%d partitions scanned): %v; %s", checkN, checkT.Round(time.Millisecond), checkSp.per(int(removed)))
	r.logf("PARTITIONED   compact tombstones: %v; %s", tombT.Round(time.Millisecond), tombSp.per(int(removed)))
	r.logf("PARTITIONED   detach+drop: %v (parent locked %v in all); %s", dropT.Round(time.Millisecond), lockT.Round(time.Millisecond), dropSp.per(int(removed)))
	tomb, names := m.size(ctx, "proto_tombstones"), m.size(ctx, "proto_names")
	nt := m.count(ctx, `SELECT count(*) FROM {{s}}.proto_tombstones`)
	nn := m.count(ctx, `SELECT count(*) FROM {{s}}.proto_names`)
	r.logf("PARTITIONED compact tombstones: %d rows, %v: %.0f B/op (heap %.0f + indexes %.0f); names %d rows, %v: %.0f B/name kept",
		nt, tomb, float64(tomb.heap+tomb.index)/float64(nt), float64(tomb.heap)/float64(nt), float64(tomb.index)/float64(nt),
		nn, names, float64(names.heap+names.index)/float64(nn))
	r.logf("PARTITIONED after: operations %v, attempts %v (no dead rows, nothing to vacuum)",
		m.size(ctx, "proto_ops"), m.size(ctx, "proto_attempts"))
}

func addSpent(a, b spent) spent {
	a.wall += b.wall
	a.wal += b.wal
	if b.pgssWAL >= 0 {
		if a.pgssWAL < 0 {
			a.pgssWAL = 0
		}
		a.pgssWAL += b.pgssWAL
	} else {
		a.pgssWAL = -1
	}
	a.backendCPU += b.backendCPU
	a.cpuKnown = a.cpuKnown || b.cpuKnown
	return a
}

// measureBegin compares Begin's insert (the operation, its first attempt,
// its feed entry by trigger; one round trip, one durable commit) today,
// today plus a name row, and on the partitioned tables with the name row,
// n operations each, interleaved in rounds so that load on the shared
// server falls on all three alike.
func (r *retentionBench) measureBegin(n int) {
	ctx, m := r.ctx, r.m
	sch := pgx.Identifier{m.schema}.Sanitize()
	opInsert := func(ops, attempts, extraCol string) string {
		return strings.ReplaceAll(`WITH op AS (
			INSERT INTO {{s}}.`+ops+` (id, key, provider, kind, refs, generation, fingerprint, request, status, attempts,
				key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at, next_check_at, created_at, updated_at)
			VALUES ($1, $1, 'stripe', 'charge', $2, 0, $3, $4, 'in_flight', 1, 86400000, $5::timestamptz, $5::timestamptz + interval '1 day',
				'w', $5::timestamptz + interval '1 minute', $5::timestamptz + interval '1 minute', $5::timestamptz, $5::timestamptz)
			ON CONFLICT DO NOTHING RETURNING id, created_at),
			attempt AS (INSERT INTO {{s}}.`+attempts+` (operation_id, number, key, started_at, may_have_reached`+extraCol+`)
				SELECT id, 1, id, $5::timestamptz, true`+strings.ReplaceAll(extraCol, "op_created_at", "created_at")+` FROM op)
			SELECT count(*) FROM op`, "{{s}}", sch)
	}
	nameInsert := `INSERT INTO ` + sch + `.proto_names (name, created_at) VALUES ($1, $2)`
	type variant struct {
		name  string
		names bool
		sql   string
		sp    spent
		done  int
	}
	variants := []*variant{
		{name: "today's insert", sql: opInsert("payonce_operations", "payonce_attempts", "")},
		{name: "today's insert + name row", names: true, sql: opInsert("payonce_operations", "payonce_attempts", "")},
		{name: "partitioned insert + name row", names: true, sql: opInsert("proto_ops", "proto_attempts", ", op_created_at")},
	}
	conn, err := m.pool.Acquire(ctx)
	require.NoError(r.t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "SET synchronous_commit = on")
	require.NoError(r.t, err)
	seq := 0
	base := retentionFrom.AddDate(0, retentionMonths-1, 0) // November: the newest partition
	const rounds = 4
	for range rounds {
		for _, v := range variants {
			mk := m.mark(ctx)
			for range n / rounds {
				seq++
				id := fmt.Sprintf("op_new_%032d", seq)
				at := base.Add(time.Duration(seq) * time.Millisecond)
				b := &pgx.Batch{}
				if v.names {
					b.Queue(nameInsert, id, at)
				}
				b.Queue(v.sql, id, []string{"order", "ord_new_" + strconv.Itoa(seq)}, fmt.Sprintf("%064x", seq),
					`{"amount":1000,"currency":"EUR","customer":"cus_0123456789abcd","description":"order ord_new_`+strconv.Itoa(seq)+`","payment_method":"pm_card_visa"}`, at)
				require.NoError(r.t, conn.SendBatch(ctx, b).Close())
				v.done++
			}
			v.sp = addSpent(v.sp, m.since(ctx, mk))
		}
	}
	for _, v := range variants {
		r.logf("BEGIN %-30s %s; %.0f µs/op wall", v.name+":", v.sp.per(v.done), float64(v.sp.wall.Microseconds())/float64(v.done))
	}
}

// measureLookup compares reading one operation by id (what Get, Claim,
// Finish and every id-addressed statement do): today's primary key; the
// partitioned table by id alone (every partition's index is probed: the
// id does not say which partition); and through the name table, whose
// created_at lets the executor prune to one partition.
func (r *retentionBench) measureLookup(n int) {
	ctx, m := r.ctx, r.m
	sch := pgx.Identifier{m.schema}.Sanitize()
	rows, err := m.pool.Query(ctx, `SELECT id FROM `+sch+`.payonce_operations ORDER BY md5(id || 'x') LIMIT $1`, n)
	require.NoError(r.t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(r.t, err)
	require.NotEmpty(r.t, ids)
	queries := []struct{ name, sql string }{
		{"today (primary key)", `SELECT * FROM ` + sch + `.payonce_operations WHERE id = $1`},
		{"partitioned, by id alone", `SELECT * FROM ` + sch + `.proto_ops WHERE id = $1`},
		{"partitioned, via the name table", `SELECT * FROM ` + sch + `.proto_ops
			WHERE id = $1 AND created_at = (SELECT created_at FROM ` + sch + `.proto_names WHERE name = $1)`},
	}
	conn, err := m.pool.Acquire(ctx)
	require.NoError(r.t, err)
	defer conn.Release()
	for _, mode := range []string{"auto", "force_generic_plan"} {
		// force_generic_plan: one plan of every partition, pruned at run
		// time, instead of planning every partition on every call.
		_, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode)
		require.NoError(r.t, err)
		r.measureLookups(conn, mode, queries, ids)
	}
}

func (r *retentionBench) measureLookups(conn *pgxpool.Conn, mode string, queries []struct{ name, sql string }, ids []string) {
	ctx, m := r.ctx, r.m
	for _, q := range queries {
		var plan strings.Builder
		prows, err := conn.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) "+q.sql, ids[0])
		require.NoError(r.t, err)
		lines, err := pgx.CollectRows(prows, pgx.RowTo[string])
		require.NoError(r.t, err)
		for _, l := range lines {
			plan.WriteString("\n\t" + l)
		}
		// Warm: every id once, so that all three read from shared buffers.
		for _, id := range ids {
			_, err := conn.Exec(ctx, q.sql, id)
			require.NoError(r.t, err)
		}
		mk := m.mark(ctx)
		for _, id := range ids {
			_, err := conn.Exec(ctx, q.sql, id)
			require.NoError(r.t, err)
		}
		sp := m.since(ctx, mk)
		if mode != "auto" {
			plan.Reset() // the same plans
		}
		r.logf("LOOKUP %s %-32s %s; %.1f µs/op wall%s", mode, q.name+":", sp.per(len(ids)), float64(sp.wall.Microseconds())/float64(len(ids)), plan.String())
	}
}

package ledgerpg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
	"github.com/payonce/payonce/ledger/ledgertest"
)

// This file is a measured prototype, not part of the store: a one-table
// schema for PostgreSQL (the operation row carries its attempts and its
// latest feed entry; no attempts table, no feed table, no trigger) priced
// against the store as migrated and against a hand-rolled journal (one
// table, primary key and one unique index). It runs only with
// PAYONCE_ONETABLE_PROTO=1 and PAYONCE_TEST_DATABASE_URL, against a
// server on this host (the backends' CPU is read from /proc).
//
//	PAYONCE_ONETABLE_PROTO=1 PAYONCE_TEST_DATABASE_URL=... \
//	  go test ./ledger/ledgerpg/ -run OneTableProto -count 1 -v -timeout 30m
//
// Knobs: PAYONCE_ONETABLE_VARIANTS (comma-separated, default every
// variant), PAYONCE_ONETABLE_ROUNDS (default 8), PAYONCE_ONETABLE_OPS (ops
// per block at concurrency 1, default 300; at concurrency 8 each worker
// runs a third of it), PAYONCE_ONETABLE_ROWS (settled rows seeded in each
// schema, default 50,000), PAYONCE_ONETABLE_CONC (default "1,8").

// otSchema is the one-table schema. {{s}} is the quoted schema name.
//
// The operation row is the store's, plus:
//
//   - attempt_log: the attempt history (rule 2's journal), a JSON array of
//     {n, key, started_at, finished_at, may_have_reached, outcome,
//     http_status, provider_request_id, error, replayed}, one element per
//     attempt. Begin (and StartAttempt, a resend) append one in the
//     statement that commits durably before the send; Finish completes the
//     last one in its conditional update. Inline (no TOAST) while the row
//     stays under ~2 kB: a few attempts.
//   - feed_pos, feed_seq, feed_from, feed_to, feed_at: the row's latest
//     feed entry. Every write that makes a feed entry today (creation; a
//     change into succeeded, failed or manual_review, or out of
//     manual_review) sets them in the same statement; other writes leave
//     them alone. feed_pos = greatest(the writer's transaction id, the
//     row's previous feed_pos): at least the writer's id, so Feed's rule
//     "only positions below the snapshot's xmin" stays gap-safe exactly as
//     in migration 008; and never below the row's previous position, so
//     one operation's entries never go backwards. That replaces migration
//     008's "highest completed id" term, which the feed table needed
//     because its trigger could not see the operation's previous entry;
//     here the previous entry is on the row. feed_seq comes from a
//     sequence (CACHE 1), drawn in the statement after the row lock (an
//     UPDATE that waited re-evaluates its SET list on the row version it
//     locked), so it breaks ties in the order the entries were made.
//   - The CHECK ties the row's status to its latest entry (a final or
//     review status is its entry's To; an open one was entered through a
//     "pending" entry): a writing path that forgets the feed columns on a
//     transition the feed records is refused. It replaces the trigger's
//     "no path can forget" for every transition but one: a path that sets
//     feed_to and forgets feed_pos (a code bug the CHECK cannot see: it
//     has no OLD).
//
// Indexes, each with the read it serves and what a Charge pays:
//
//   - primary key (id) and unique (key): Begin, CreateOrGet, the createdGuard
//     check; one key, one operation. Both take an entry on Begin and, the
//     update not being HOT, again on Finish.
//   - due (next_check_at, id) INCLUDE (status, provider, kind, created_at)
//     WHERE next_check_at IS NOT NULL: ClaimDue, and Stats' open counts from
//     the same index (index-only scan; every pending, in_flight and unknown
//     row has a next_check_at), which replaces migration 005's open index.
//     Begin pays one entry; Finish none (a final row has no next_check_at).
//   - review (review_at, id) WHERE status = 'manual_review': ListReview.
//     Nothing on a Charge.
//   - provider_ref, payment_ref (provider, kind, ref) WHERE ref IS NOT NULL:
//     webhooks. Finish pays one provider_ref entry; a charge none for
//     payment_ref.
//   - feed (feed_pos, feed_seq): Feed, Stats' consumer lag, and Cleanup
//     (oldest settled first, never past the oldest named consumer's
//     cursor), which replaces the cleanup index. One entry on Begin and one
//     on Finish.
//
// Tombstones, two forms (both measured):
//
//   - a table of their own, as today (ot_tombstones), with the five feed
//     columns added so that entries outlive the row as the feed's
//     retention promises (Feed then reads operations UNION ALL tombstones
//     in (feed_pos, feed_seq) order). Begin then needs the store's
//     createdGuard as a second statement (a later snapshot, to see a
//     Cleanup its insert waited for): BEGIN, insert, guard, COMMIT.
//   - in the row ("proto1" variants): Cleanup turns the settled row into
//     its tombstone (tombstoned_at set; request, attempt_log and the like
//     emptied) instead of deleting it, and a later purge deletes it. The ID
//     (and the key) stay taken in the primary key and the key index, so an
//     insert of a cleaned-up ID conflicts like any existing ID and reads
//     the tombstone: no guard statement is needed, and Begin is one
//     autocommit statement whose RETURNING checks the lease after any wait
//     and sets synchronous_commit, as the journal's. The feed entry stays
//     in the feed index with its row: no UNION.
//
// payonce_events stays a table of its own (rare: resolutions, webhooks,
// operator notes); Finish touches it only when it has events to write.
// Tombstones as today, plus the five feed columns (so that entries outlive
// the row, as the feed's retention promises): Feed reads
// operations UNION ALL tombstones in (feed_pos, feed_seq) order.
const otSchema = `
CREATE SEQUENCE {{s}}.ot_feed_seq;
CREATE TABLE {{s}}.ot_operations (
    id                 text        COLLATE "C" NOT NULL,
    key                text        COLLATE "C" NOT NULL,
    provider           text        NOT NULL,
    kind               text        NOT NULL,
    refs               text[]      NOT NULL,
    generation         integer     NOT NULL DEFAULT 0,
    fingerprint        text        NOT NULL,
    request            text        NOT NULL,
    status             text        NOT NULL,
    provider_ref       text,
    payment_ref        text,
    result             text,
    attempts           integer     NOT NULL DEFAULT 0,
    attempt_log        jsonb       NOT NULL DEFAULT '[]',
    key_ttl_ms         bigint      NOT NULL,
    window_start       timestamptz,
    key_expires_at     timestamptz,
    lease_owner        text,
    lease_expires_at   timestamptz,
    next_check_at      timestamptz,
    review_code        text,
    review_reason      text,
    review_at          timestamptz,
    resolved_by        text,
    resolution_note    text,
    resolution_outcome text,
    resolved_at        timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    finished_at        timestamptz,
    tombstoned_at      timestamptz,
    {{feedcols}}
    CONSTRAINT ot_operations_pkey PRIMARY KEY (id),
    CONSTRAINT ot_operations_key_key UNIQUE (key)
);
CREATE TABLE {{s}}.ot_tombstones (
    id            text        COLLATE "C" NOT NULL PRIMARY KEY,
    key           text        COLLATE "C" NOT NULL,
    status        text        NOT NULL,
    finished_at   timestamptz NOT NULL
);
{{indexes}}
`

// otFeedCols are the feed's columns and the CHECK that keeps the row's
// status and its latest entry together.
const otFeedCols = `
    feed_pos  xid8        NOT NULL,
    feed_seq  bigint      NOT NULL,
    feed_from text,
    feed_to   text        NOT NULL,
    feed_at   timestamptz NOT NULL,
    CONSTRAINT ot_operations_feed_check CHECK (CASE WHEN status IN ('succeeded', 'failed', 'manual_review')
        THEN feed_to = status ELSE feed_to = 'pending' END),`

// The contract-keeping feed of the proto1_2slot variant: the creation
// entry in slots of its own, set once by the insert (feed0_*), the first
// recorded change after it in the feed_* slot (set once, by the Finish that
// settles, or sends to review, an operation), and every later recorded
// change (out of review, into review after a settlement: rare) inserted
// into a side table by the statement that makes it, at a position above
// the row's previous entries (feed_side_pos keeps the highest). Feed reads
// the three (and nothing else: tombstones in the row keep their slots) in
// (pos, seq) order, a merge of three index scans. No entry is collapsed:
// the feed keeps one entry per transition, as documented.
const otFeed2Cols = `
    feed0_pos     xid8        NOT NULL,
    feed0_seq     bigint      NOT NULL,
    feed_pos      xid8,
    feed_seq      bigint,
    feed_from     text,
    feed_to       text,
    feed_at       timestamptz,
    feed_side_pos xid8,
    CONSTRAINT ot_operations_feed_check CHECK (status NOT IN ('succeeded', 'failed', 'manual_review') OR feed_to IS NOT NULL),`

const otFeed2Index = `
CREATE INDEX ot_operations_feed0_idx ON {{s}}.ot_operations (feed0_pos, feed0_seq);
CREATE INDEX ot_operations_feed_idx ON {{s}}.ot_operations (feed_pos, feed_seq) WHERE feed_pos IS NOT NULL;
CREATE TABLE {{s}}.ot_feed (
    pos          xid8        NOT NULL,
    seq          bigint      NOT NULL,
    operation_id text        COLLATE "C" NOT NULL,
    from_status  text,
    to_status    text        NOT NULL,
    at           timestamptz NOT NULL,
    PRIMARY KEY (pos, seq)
);`

const otSecondary = `
CREATE INDEX ot_operations_due_idx ON {{s}}.ot_operations (next_check_at, id)
    INCLUDE (status, provider, kind, created_at) WHERE next_check_at IS NOT NULL;
CREATE INDEX ot_operations_review_idx ON {{s}}.ot_operations (review_at, id) WHERE status = 'manual_review';
CREATE INDEX ot_operations_provider_ref_idx ON {{s}}.ot_operations (provider, kind, provider_ref) WHERE provider_ref IS NOT NULL;
CREATE INDEX ot_operations_payment_ref_idx ON {{s}}.ot_operations (provider, kind, payment_ref) WHERE payment_ref IS NOT NULL;`

const otFeedIndex = `
CREATE INDEX ot_operations_feed_idx ON {{s}}.ot_operations (feed_pos, feed_seq);`

// The prototype's statements. Begin is the store's one trip: BEGIN, the
// insert (the first attempt in attempt_log), the store's createdGuard
// (tombstone and lease check; synchronous_commit at least on), COMMIT.
// Finish is the store's one statement (finishFast): a conditional update
// on the row version Begin returned, the lease owner, the status and the
// attempt number, completing the last attempt, setting the feed entry,
// with synchronous_commit off for its implicit transaction.
const (
	otInsert = `INSERT INTO {{s}}.ot_operations (id, key, provider, kind, refs, generation, fingerprint, request,
		status, attempts, attempt_log, key_ttl_ms, window_start, key_expires_at, lease_owner, lease_expires_at,
		next_check_at, created_at, updated_at, payment_ref{{feedinscols}})
	VALUES ($1, $2, $3, $4, $5, 0, $6, $7, 'in_flight', 1,
		jsonb_build_array(jsonb_build_object('n', 1, 'key', $2::text, 'started_at', $9::timestamptz, 'may_have_reached', true)),
		$8, $9, $10, $11, $12, $12, $9, $9, $13{{feedinsvals}})
	ON CONFLICT DO NOTHING
	RETURNING xmin::text::bigint`
	// The one-statement Begin of the proto1 variants: the lease check runs
	// in RETURNING, after the insert (and any wait for a conflicting
	// writer), against the time the implicit transaction has been open;
	// $14 is the lease's remaining time in microseconds when the trip was
	// sent (as createdGuard's $2).
	otReturning1 = `RETURNING xmin::text::bigint, set_config('synchronous_commit',
		CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true),
		1 / (CASE WHEN clock_timestamp() >= transaction_timestamp() + $14::bigint * interval '1 microsecond' THEN 0 ELSE 1 END)`
	otFeedInsCols = `, feed_pos, feed_seq, feed_from, feed_to, feed_at`
	// Every operation is created pending in the feed, as today.
	otFeedInsVals = `, pg_current_xact_id(), nextval('{{s}}.ot_feed_seq'), NULL, 'pending', $9`

	otGuard = `SELECT set_config('synchronous_commit',
		CASE current_setting('synchronous_commit') WHEN 'remote_apply' THEN 'remote_apply' ELSE 'on' END, true),
		1 / (CASE WHEN (clock_timestamp() >= transaction_timestamp() + $2::bigint * interval '1 microsecond'
		                OR EXISTS (SELECT 1 FROM {{s}}.ot_tombstones t WHERE t.id = $1))
		           AND EXISTS (SELECT 1 FROM {{s}}.ot_operations o
		                       WHERE o.id = $1 AND o.xmin::text::bigint = txid_current_if_assigned() % 4294967296)
		          THEN 0 ELSE 1 END)`

	// $5 is the new status; the store knows in Go whether the change is a
	// feed entry (here: in_flight -> succeeded is) and sends the statement
	// with or without the feed's SET items.
	otFinish = `WITH op AS (
		UPDATE {{s}}.ot_operations SET status = $5, provider_ref = $6, result = $7,
			lease_owner = NULL, lease_expires_at = NULL, next_check_at = NULL, updated_at = $8, finished_at = $8,
			attempt_log = jsonb_set(attempt_log, ARRAY[(jsonb_array_length(attempt_log) - 1)::text],
				(attempt_log -> -1) || jsonb_build_object('finished_at', $8::timestamptz, 'may_have_reached', true,
					'outcome', 'success', 'http_status', $9::int, 'provider_request_id', $10::text, 'replayed', false))
			{{feedset}}
		WHERE id = $1 AND xmin::text::bigint = $2 AND lease_owner = $3 AND status = 'in_flight'
		  AND (attempt_log -> -1 ->> 'n')::int = $4
		RETURNING xmin::text::bigint AS v)
	SELECT (SELECT v FROM op), set_config('synchronous_commit', 'off', true)`
	// status on the right-hand side is the row's status before the update.
	otFeedSet = `, feed_pos = greatest(pg_current_xact_id(), feed_pos), feed_seq = nextval('{{s}}.ot_feed_seq'),
			feed_from = status, feed_to = $5, feed_at = $8`

	// Feed's page on the one table (the tombstones' half of the UNION ALL
	// is left out of the prototype): the gap rule of today's feedQueries,
	// on the row's columns.
	otFeedPage = `SELECT feed_pos::text AS pos_text, feed_seq, id, coalesce(feed_from, ''), feed_to
		FROM {{s}}.ot_operations
		WHERE (feed_pos, feed_seq) > ($1::text::xid8, $2::bigint)
		  AND feed_pos < pg_snapshot_xmin(pg_current_snapshot())
		ORDER BY feed_pos, feed_seq
		LIMIT $3`
)

// The journal baseline: the bench's journal peer (cmd/payonce/bench,
// peers.go), the key as primary key and one unique index.
const (
	otJournalDDL = `CREATE TABLE {{s}}.journal (
	idempotency_key text PRIMARY KEY,
	order_id text NOT NULL UNIQUE,
	status text NOT NULL,
	request text NOT NULL,
	response text,
	created_at timestamptz NOT NULL DEFAULT now(),
	updated_at timestamptz NOT NULL DEFAULT now()
)`
	otJournalInsert = `INSERT INTO {{s}}.journal (idempotency_key, order_id, status, request) VALUES ($1, $2, 'IN_PROGRESS', $3) ON CONFLICT DO NOTHING RETURNING true`
	otJournalFinish = `UPDATE {{s}}.journal SET status = 'DONE', response = $2, updated_at = now() WHERE idempotency_key = $1 AND status = 'IN_PROGRESS'`
)

// otKind is what a variant runs.
type otKind int

const (
	otStore   otKind = iota // ledgerpg.Store as migrated
	otProto                 // the one-table prototype
	otJournal               // the journal baseline
)

// otVariant is one schema under measurement.
type otVariant struct {
	name    string
	kind    otKind
	feed    bool // prototype: feed columns, CHECK and index
	second  bool // prototype: due, review, provider_ref, payment_ref indexes
	oneStmt bool // prototype: tombstones in the row, Begin in one statement
	noLog   bool // prototype: no attempt history (what guarantee (a) costs)
	twoSlot bool // prototype: the contract-keeping feed (otFeed2Cols)
	schema  string
	quoted  string
	insert  string
	guard   string
	finish  string
	n       atomic.Int64 // ops run, for unique IDs
	cpu     map[int][]float64
	wal     map[int][]float64
}

// otVariants are the variants the test knows, in report order.
func otVariants() []*otVariant {
	return []*otVariant{
		{name: "store", kind: otStore},
		// All the guarantees: attempts in the row, the feed in the row,
		// every read's index.
		{name: "proto", kind: otProto, feed: true, second: true},
		// Without the feed (columns, CHECK, index): what the in-row feed costs.
		{name: "proto_nofeed", kind: otProto, second: true},
		// Primary key and key only: Finish can be HOT (no indexed column
		// changes). What the reads' indexes and the feed cost together.
		{name: "proto_min", kind: otProto},
		// proto with tombstones in the row: Begin is one statement.
		{name: "proto1", kind: otProto, feed: true, second: true, oneStmt: true},
		{name: "proto1_min", kind: otProto, oneStmt: true},
		// proto1 without the attempt history: what the jsonb log costs.
		{name: "proto1_nolog", kind: otProto, feed: true, second: true, oneStmt: true, noLog: true},
		// proto1_min without the attempt history: the wider row alone.
		{name: "proto1_bare", kind: otProto, oneStmt: true, noLog: true},
		// proto1 with the feed that collapses nothing.
		{name: "proto1_2slot", kind: otProto, feed: true, second: true, oneStmt: true, twoSlot: true},
		{name: "journal", kind: otJournal},
	}
}

// TestOneTableProto measures backend CPU, WAL and HOT updates per
// Begin+Finish pair for the store, the one-table prototype and the journal
// (see the top of this file), in interleaved rounds.
func TestOneTableProto(t *testing.T) {
	if os.Getenv("PAYONCE_ONETABLE_PROTO") != "1" {
		t.Skip("a measurement, not a test: set PAYONCE_ONETABLE_PROTO=1 (and PAYONCE_TEST_DATABASE_URL)")
	}
	ctx := context.Background()
	admin := testkit.NewPool(t)
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("needs /proc/PID/schedstat")
	}
	_, err := admin.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	require.NoError(t, err)

	t.Run("feed", func(t *testing.T) { otFeedSemantics(t, admin) })

	rounds := envInt(t, "PAYONCE_ONETABLE_ROUNDS", 8)
	ops := envInt(t, "PAYONCE_ONETABLE_OPS", 300)
	rows := envInt(t, "PAYONCE_ONETABLE_ROWS", 50_000)
	concs := []int{1, 8}
	if c := os.Getenv("PAYONCE_ONETABLE_CONC"); c != "" {
		concs = nil
		for _, f := range strings.Split(c, ",") {
			n, err := strconv.Atoi(f)
			require.NoError(t, err)
			concs = append(concs, n)
		}
	}
	var vs []*otVariant
	want := os.Getenv("PAYONCE_ONETABLE_VARIANTS")
	for _, v := range otVariants() {
		if want == "" || strings.Contains(","+want+",", ","+v.name+",") {
			vs = append(vs, v)
		}
	}
	require.NotEmpty(t, vs)
	for _, v := range vs {
		otSetup(t, admin, v, rows)
	}
	hot0 := otHOT(t, admin, vs)

	rng := rand.New(rand.NewPCG(7, 31))
	for _, c := range concs {
		perWorker := ops
		if c > 1 {
			perWorker = max(ops/3, 10)
		}
		for range rounds {
			for _, i := range rng.Perm(len(vs)) {
				v := vs[i]
				cpu, wal, fpi := otBlock(t, admin, v, c, perWorker)
				if v.cpu == nil {
					v.cpu, v.wal = map[int][]float64{}, map[int][]float64{}
				}
				v.cpu[c] = append(v.cpu[c], cpu)
				if !fpi {
					v.wal[c] = append(v.wal[c], wal)
				}
			}
		}
		var journal *otVariant
		for _, v := range vs {
			if v.kind == otJournal {
				journal = v
			}
		}
		lines := []string{fmt.Sprintf("concurrency %d, %d rounds of %d ops per variant: backend CPU µs/op median [min, max] (IQR); ratio to the journal: median of per-round ratios (IQR); WAL B/op (pg_stat_statements, without commit records; blocks without full-page images) median [min, max] (blocks)",
			c, rounds, c*perWorker)}
		for _, v := range vs {
			med, lo, hi := quantile(v.cpu[c], 0.5), quantile(v.cpu[c], 0), quantile(v.cpu[c], 1)
			q1, q3 := quantile(v.cpu[c], 0.25), quantile(v.cpu[c], 0.75)
			ratio := ""
			if journal != nil {
				rs := make([]float64, len(v.cpu[c]))
				for r := range rs {
					rs[r] = v.cpu[c][r] / journal.cpu[c][r]
				}
				ratio = fmt.Sprintf("%.2f× (%.2f .. %.2f)", quantile(rs, 0.5), quantile(rs, 0.25), quantile(rs, 0.75))
			}
			lines = append(lines, fmt.Sprintf("  %-13s %6.1f [%6.1f, %6.1f] (%6.1f .. %6.1f)  %-22s  WAL %7.1f [%7.1f, %7.1f] (%d)",
				v.name, med, lo, hi, q1, q3, ratio, quantile(v.wal[c], 0.5), quantile(v.wal[c], 0), quantile(v.wal[c], 1), len(v.wal[c])))
		}
		t.Log(strings.Join(lines, "\n"))
	}

	// Backends report their table statistics when they exit (each block
	// closes its pool); give the last ones a moment.
	time.Sleep(1500 * time.Millisecond)
	hot1 := otHOT(t, admin, vs)
	lines := []string{"updates during the measured blocks (warm-up included), HOT share (pg_stat_user_tables):"}
	keys := make([]string, 0, len(hot1))
	for k := range hot1 {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		upd, hot := hot1[k][0]-hot0[k][0], hot1[k][1]-hot0[k][1]
		share := 0.0
		if upd > 0 {
			share = 100 * float64(hot) / float64(upd)
		}
		lines = append(lines, fmt.Sprintf("  %-34s %7d updates, %7d HOT (%5.1f %%)", k, upd, hot, share))
	}
	t.Log(strings.Join(lines, "\n"))
	for _, v := range vs {
		otStatements(t, admin, v)
	}
}

// otSetup creates v's scratch schema (dropped when the test ends), seeds
// it with rows settled operations, as Charges would have left them, and
// vacuums it.
func otSetup(t *testing.T, admin *pgxpool.Pool, v *otVariant, rows int) {
	ctx := context.Background()
	v.schema = "onetable_" + v.name + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	v.quoted = pgx.Identifier{v.schema}.Sanitize()
	_, err := admin.Exec(ctx, "CREATE SCHEMA "+v.quoted)
	require.NoError(t, err)
	testkit.DropOnCleanup(t, admin.Config().ConnConfig, "schema "+v.schema, "DROP SCHEMA IF EXISTS "+v.quoted+" CASCADE")
	sub := func(sql string) string { return strings.ReplaceAll(sql, "{{s}}", v.quoted) }
	start := time.Now()
	seedAt := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	switch v.kind {
	case otStore:
		s, err := ledgerpg.New(admin, ledgerpg.Config{Schema: v.schema})
		require.NoError(t, err)
		require.NoError(t, s.Migrate(ctx))
		ops, atts := table(v.schema, "payonce_operations"), table(v.schema, "payonce_attempts")
		_, err = admin.Exec(ctx, `INSERT INTO `+ops+` (id, key, provider, kind, refs, generation, fingerprint, request,
				status, provider_ref, result, attempts, key_ttl_ms, window_start, key_expires_at, created_at, updated_at, finished_at)
			SELECT 'seed-' || lpad(i::text, 9, '0'), 'seed-' || lpad(i::text, 9, '0'), 'stripe', 'charge',
				ARRAY['order', 'seed-' || lpad(i::text, 9, '0')], 0, 'fp-' || i, '{"amount":1000,"currency":"EUR","order":"seed-' || i || '"}',
				'succeeded', 'pi_seed-' || lpad(i::text, 9, '0'), '{"status":"succeeded"}', 1, 86400000,
				$1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms' + interval '1 day',
				$1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms'
			FROM generate_series(1, $2::int) AS i`, seedAt, rows)
		require.NoError(t, err)
		_, err = admin.Exec(ctx, `INSERT INTO `+atts+` (operation_id, number, key, started_at, finished_at, may_have_reached, outcome, http_status, provider_request_id)
			SELECT id, 1, key, created_at, finished_at, true, 'success', 200, 'req_seed' FROM `+ops)
		require.NoError(t, err)
		_, err = admin.Exec(ctx, "VACUUM (ANALYZE) "+ops+", "+atts+", "+table(v.schema, "payonce_feed"))
		require.NoError(t, err)
	case otProto:
		ddl := otSchema
		idx := ""
		if v.second {
			idx += otSecondary
		}
		cols, insCols, insVals, set := "", "", "", ""
		switch {
		case v.feed && v.twoSlot:
			idx += otFeed2Index
			cols, insCols, insVals = otFeed2Cols, `, feed0_pos, feed0_seq`, `, pg_current_xact_id(), nextval('{{s}}.ot_feed_seq')`
			// The first change after the creation: the store knows it is
			// one (its copy of the row has no feed_to yet).
			set = `, feed_pos = greatest(pg_current_xact_id(), feed0_pos), feed_seq = nextval('{{s}}.ot_feed_seq'),
			feed_from = status, feed_to = $5, feed_at = $8`
		case v.feed:
			idx += otFeedIndex
			cols, insCols, insVals, set = otFeedCols, otFeedInsCols, otFeedInsVals, otFeedSet
		}
		ddl = strings.NewReplacer("{{feedcols}}", cols, "{{indexes}}", idx).Replace(ddl)
		_, err := admin.Exec(ctx, sub(ddl))
		require.NoError(t, err)
		v.insert = sub(strings.NewReplacer("{{feedinscols}}", insCols, "{{feedinsvals}}", insVals).Replace(otInsert))
		v.finish = sub(strings.ReplaceAll(otFinish, "{{feedset}}", set))
		v.guard = sub(otGuard)
		if v.oneStmt {
			v.insert = strings.Replace(v.insert, "RETURNING xmin::text::bigint", sub(otReturning1), 1)
		}
		if v.noLog {
			// The attempt number stays a parameter, unused.
			v.insert = strings.Replace(v.insert,
				`jsonb_build_array(jsonb_build_object('n', 1, 'key', $2::text, 'started_at', $9::timestamptz, 'may_have_reached', true))`,
				`'[]'`, 1)
			v.finish = regexp.MustCompile(`(?s)attempt_log = jsonb_set\(.*?'replayed', false\)\)`).ReplaceAllString(v.finish, "attempt_log = attempt_log")
			v.finish = strings.Replace(v.finish, "AND (attempt_log -> -1 ->> 'n')::int = $4", "AND $4::int > 0 AND $9::int > 0 AND $10::text <> ''", 1)
		}
		seedCols, seedVals := "", ""
		switch {
		case v.feed && v.twoSlot:
			seedCols = ", feed0_pos, feed0_seq, feed_pos, feed_seq, feed_from, feed_to, feed_at"
			seedVals = ", pg_current_xact_id(), nextval('{{s}}.ot_feed_seq'), pg_current_xact_id(), nextval('{{s}}.ot_feed_seq'), 'in_flight', 'succeeded', $1::timestamptz + i * interval '1 ms'"
		case v.feed:
			seedCols = ", feed_pos, feed_seq, feed_from, feed_to, feed_at"
			seedVals = ", pg_current_xact_id(), nextval('{{s}}.ot_feed_seq'), 'in_flight', 'succeeded', $1::timestamptz + i * interval '1 ms'"
		}
		_, err = admin.Exec(ctx, sub(`INSERT INTO {{s}}.ot_operations (id, key, provider, kind, refs, generation, fingerprint, request,
				status, provider_ref, result, attempts, attempt_log, key_ttl_ms, window_start, key_expires_at, created_at, updated_at, finished_at`+seedCols+`)
			SELECT 'seed-' || lpad(i::text, 9, '0'), 'seed-' || lpad(i::text, 9, '0'), 'stripe', 'charge',
				ARRAY['order', 'seed-' || lpad(i::text, 9, '0')], 0, 'fp-' || i, '{"amount":1000,"currency":"EUR","order":"seed-' || i || '"}',
				'succeeded', 'pi_seed-' || lpad(i::text, 9, '0'), '{"status":"succeeded"}', 1,
				jsonb_build_array(jsonb_build_object('n', 1, 'key', 'seed-' || lpad(i::text, 9, '0'), 'started_at', $1::timestamptz + i * interval '1 ms',
					'finished_at', $1::timestamptz + i * interval '1 ms', 'may_have_reached', true, 'outcome', 'success',
					'http_status', 200, 'provider_request_id', 'req_seed', 'replayed', false)),
				86400000, $1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms' + interval '1 day',
				$1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms', $1::timestamptz + i * interval '1 ms'`+seedVals+`
			FROM generate_series(1, $2::int) AS i`), seedAt, rows)
		require.NoError(t, err)
		_, err = admin.Exec(ctx, sub("VACUUM (ANALYZE) {{s}}.ot_operations"))
		require.NoError(t, err)
	case otJournal:
		_, err := admin.Exec(ctx, sub(otJournalDDL))
		require.NoError(t, err)
		v.insert, v.finish = sub(otJournalInsert), sub(otJournalFinish)
		_, err = admin.Exec(ctx, sub(`INSERT INTO {{s}}.journal (idempotency_key, order_id, status, request, response, created_at, updated_at)
			SELECT 'seed-' || lpad(i::text, 9, '0'), 'order-seed-' || i, 'DONE', '{"amount":1000,"currency":"EUR","order":"seed-' || i || '"}',
				'{"id":"pi_seed-' || i || '","status":"succeeded"}', $1::timestamptz, $1::timestamptz
			FROM generate_series(1, $2::int) AS i`), seedAt, rows)
		require.NoError(t, err)
		_, err = admin.Exec(ctx, sub("VACUUM (ANALYZE) {{s}}.journal"))
		require.NoError(t, err)
	}
	t.Logf("%s: schema %s seeded with %d settled operations in %v", v.name, v.schema, rows, time.Since(start).Round(time.Millisecond))
}

// otBlock runs c workers of n Begin+Finish pairs each on a fresh pool of c
// connections (application_name unique to the block) and returns the
// backends' CPU per pair, in µs, from /proc/PID/schedstat (nanoseconds),
// and the WAL per pair that pg_stat_statements attributes to the
// statements naming v's schema (the statements' own WAL, triggers'
// included; not the commit records, about 2 × 34 B per pair for every
// variant alike), and whether that WAL holds full-page images. Each connection first runs 3 pairs (statement cache,
// catalog caches), which are not counted.
func otBlock(t *testing.T, admin *pgxpool.Pool, v *otVariant, c, n int) (cpuPerOp, walPerOp float64, fpi bool) {
	ctx := context.Background()
	app := "onetable-" + v.name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg, err := pgxpool.ParseConfig(testkit.URL(t))
	require.NoError(t, err)
	cfg.MaxConns, cfg.MinConns = int32(c), 0
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	defer pool.Close()
	var store *ledgerpg.Store
	if v.kind == otStore {
		store, err = ledgerpg.New(pool, ledgerpg.Config{Schema: v.schema})
		require.NoError(t, err)
	}
	run := func(count int) error {
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			first error
		)
		for range c {
			wg.Go(func() {
				for range count {
					if err := otCharge(ctx, v, pool, store); err != nil {
						mu.Lock()
						if first == nil {
							first = err
						}
						mu.Unlock()
						return
					}
				}
			})
		}
		wg.Wait()
		return first
	}
	// Every connection of the pool up and warm before the first mark.
	conns := make([]*pgxpool.Conn, c)
	for i := range conns {
		conns[i], err = pool.Acquire(ctx)
		require.NoError(t, err)
	}
	for _, conn := range conns {
		conn.Release()
	}
	require.NoError(t, run(3))
	var pids []int
	rows, err := admin.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	require.NoError(t, err)
	pids32, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	for _, p := range pids32 {
		pids = append(pids, int(p))
	}
	require.Len(t, pids, c, "backends of %s", app)
	wal0, fpi0 := otWAL(t, admin, v)
	cpu0 := otSched(t, pids)
	require.NoError(t, run(n))
	cpu1 := otSched(t, pids)
	wal1, fpi1 := otWAL(t, admin, v)
	ops := float64(c * n)
	return float64(cpu1-cpu0) / 1e3 / ops, float64(wal1-wal0) / ops, fpi1 > fpi0
}

// otCharge runs one Begin+Finish pair of v: for the store, through the
// ledger.Store API as ledgertest.BenchFastPath does; for the prototype and
// the journal, their statements in the same round trips.
func otCharge(ctx context.Context, v *otVariant, pool *pgxpool.Pool, store *ledgerpg.Store) error {
	i := v.n.Add(1)
	id := fmt.Sprintf("ot-%s-%09d", v.name, i)
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	switch v.kind {
	case otStore:
		op := ledgertest.NewOp(id)
		res, err := store.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: now, LeaseUntil: now.Add(5 * time.Minute), StartAttempt: true})
		if err != nil {
			return err
		}
		if res.Attempt == nil {
			return fmt.Errorf("begin %s started no attempt", id)
		}
		_, err = store.Finish(ctx, ledger.FinishParams{
			ID: op.ID, Owner: "w", Now: now.Add(time.Microsecond), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
			Attempt:     &ledger.AttemptOutcome{Number: res.Attempt.Number, Class: ledger.OutcomeSuccess, HTTPStatus: 200, ProviderRequestID: "req_bench"},
			ProviderRef: "pi_" + op.ID, Result: []byte(`{"status":"succeeded"}`),
		})
		return err
	case otProto:
		op := ledgertest.NewOp(id)
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		var (
			xmin        int64
			setting     string
			ok          int
			lease       = now.Add(5 * time.Minute)
			keyExpires  = now.Add(op.KeyTTL)
			remainingUS = (5 * time.Minute).Microseconds() // the lease's time left when the trip is sent
		)
		if v.oneStmt {
			err := conn.QueryRow(ctx, v.insert, op.ID, op.Key, op.Provider, op.Kind, op.References, op.Fingerprint, string(op.Request),
				op.KeyTTL.Milliseconds(), now, keyExpires, "w", lease, nil, remainingUS).Scan(&xmin, &setting, &ok)
			if err != nil {
				return fmt.Errorf("begin %s: %w", id, err)
			}
		} else {
			b := &pgx.Batch{}
			b.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
			b.Queue(v.insert, op.ID, op.Key, op.Provider, op.Kind, op.References, op.Fingerprint, string(op.Request),
				op.KeyTTL.Milliseconds(), now, keyExpires, "w", lease, nil).QueryRow(func(row pgx.Row) error { return row.Scan(&xmin) })
			b.Queue(v.guard, op.ID, remainingUS).QueryRow(func(row pgx.Row) error { return row.Scan(&setting, &ok) })
			b.Queue("COMMIT")
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return fmt.Errorf("begin %s: %w", id, err)
			}
		}
		var version *int64
		err = conn.QueryRow(ctx, v.finish, op.ID, xmin, "w", 1, "succeeded", "pi_"+op.ID, `{"status":"succeeded"}`,
			now.Add(time.Microsecond), 200, "req_bench").Scan(&version, &setting)
		if err != nil {
			return fmt.Errorf("finish %s: %w", id, err)
		}
		if version == nil {
			return fmt.Errorf("finish %s wrote nothing", id)
		}
		return nil
	default:
		request := `{"order_id":"` + id + `","amount":1000,"currency":"EUR","payment_method":"pm_card_visa"}`
		var inserted bool
		if err := pool.QueryRow(ctx, v.insert, "key-"+id, id, request).Scan(&inserted); err != nil {
			return fmt.Errorf("journal insert %s: %w", id, err)
		}
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue("SET LOCAL synchronous_commit TO OFF")
		b.Queue(v.finish, "key-"+id, `{"id":"pi_`+id+`","object":"payment_intent","amount":1000,"currency":"eur","status":"succeeded"}`)
		b.Queue("COMMIT")
		return pool.SendBatch(ctx, b).Close()
	}
}

// otSched sums the CPU time of pids, in nanoseconds (the first field of
// /proc/PID/schedstat; /proc/PID/stat's utime+stime in 10 ms ticks is too
// coarse for blocks of a fraction of a second).
func otSched(t *testing.T, pids []int) int64 {
	var sum int64
	for _, pid := range pids {
		sum += schedNS(t, pid)
	}
	return sum
}

// otWAL is the WAL pg_stat_statements attributes to the statements that
// name v's schema.
// The second result counts full-page images (written for the first change
// of a page after a checkpoint; other sessions' WAL makes checkpoints come
// at any time, so blocks with and without them alternate).
func otWAL(t *testing.T, admin *pgxpool.Pool, v *otVariant) (bytes, fpi int64) {
	require.NoError(t, admin.QueryRow(context.Background(),
		`SELECT coalesce(sum(wal_bytes), 0)::bigint, coalesce(sum(wal_fpi), 0)::bigint FROM pg_stat_statements WHERE query LIKE '%' || $1 || '%'`,
		v.schema).Scan(&bytes, &fpi))
	return bytes, fpi
}

// otHOT returns, per table of the variants' schemas, updates and HOT
// updates so far.
func otHOT(t *testing.T, admin *pgxpool.Pool, vs []*otVariant) map[string][2]int64 {
	out := map[string][2]int64{}
	for _, v := range vs {
		rows, err := admin.Query(context.Background(), `SELECT relname::text, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE schemaname = $1 AND relname IN ('payonce_operations', 'payonce_attempts', 'ot_operations', 'journal')`, v.schema)
		require.NoError(t, err)
		for rows.Next() {
			var (
				rel      string
				upd, hot int64
			)
			require.NoError(t, rows.Scan(&rel, &upd, &hot))
			out[v.name+"."+rel] = [2]int64{upd, hot}
		}
		require.NoError(t, rows.Err())
	}
	return out
}

// otStatements logs, per statement naming v's schema, what
// pg_stat_statements recorded (warm-up included): calls, mean execution
// time and WAL per call.
func otStatements(t *testing.T, admin *pgxpool.Pool, v *otVariant) {
	rows, err := admin.Query(context.Background(), `SELECT calls, mean_exec_time * 1000, wal_records::float8 / calls, wal_bytes::float8 / calls,
			left(regexp_replace(query, '\s+', ' ', 'g'), 140)
		FROM pg_stat_statements WHERE query LIKE '%' || $1 || '%' AND calls >= 100 ORDER BY calls DESC, total_exec_time DESC`, v.schema)
	require.NoError(t, err)
	defer rows.Close()
	lines := []string{v.name + ": pg_stat_statements per call: calls, mean exec µs, WAL records, WAL bytes, statement"}
	for rows.Next() {
		var (
			calls            int64
			mean, rec, bytes float64
			query            string
		)
		require.NoError(t, rows.Scan(&calls, &mean, &rec, &bytes, &query))
		lines = append(lines, fmt.Sprintf("  %7d %7.1f µs %5.2f rec %7.1f B  %s", calls, mean, rec, bytes, strings.ReplaceAll(query, v.quoted+".", "")))
	}
	require.NoError(t, rows.Err())
	t.Log(strings.Join(lines, "\n"))
}

// otFeedSemantics checks the prototype's feed on a schema of its own: gap
// safety against a transaction that commits late, an operation's entries
// never going backwards, what collapses, and the CHECK refusing a
// transition written without its entry.
func otFeedSemantics(t *testing.T, admin *pgxpool.Pool) {
	ctx := context.Background()
	v := &otVariant{name: "feedcheck", kind: otProto, feed: true, second: true}
	otSetup(t, admin, v, 0)
	page := strings.ReplaceAll(otFeedPage, "{{s}}", v.quoted)
	type entry struct{ pos, id, from, to string }
	read := func(after string) []entry {
		pos, seq := "0", int64(0)
		if after != "" {
			p, s, _ := strings.Cut(after, ".")
			pos = p
			var err error
			seq, err = strconv.ParseInt(s, 10, 64)
			require.NoError(t, err)
		}
		rows, err := admin.Query(ctx, page, pos, seq, 100)
		require.NoError(t, err)
		var out []entry
		for rows.Next() {
			var (
				e entry
				s int64
			)
			require.NoError(t, rows.Scan(&e.pos, &s, &e.id, &e.from, &e.to))
			e.pos += "." + strconv.FormatInt(s, 10)
			out = append(out, e)
		}
		require.NoError(t, rows.Err())
		return out
	}
	// readN reads until n entries are out: a transaction left open
	// elsewhere in the cluster (other sessions share this server) holds
	// the feed back until it ends, here as in the store.
	readN := func(after string, n int) []entry {
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := read(after)
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	lease := time.Now().Add(time.Hour)
	begin := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}, id string) int64 {
		op := ledgertest.NewOp(id)
		var xmin int64
		require.NoError(t, q.QueryRow(ctx, v.insert, op.ID, op.Key, op.Provider, op.Kind, op.References, op.Fingerprint, string(op.Request),
			op.KeyTTL.Milliseconds(), t0, t0.Add(op.KeyTTL), "w", lease, nil).Scan(&xmin))
		return xmin
	}
	finish := func(id string, xmin int64, owner string) bool {
		var (
			version *int64
			setting string
		)
		require.NoError(t, admin.QueryRow(ctx, v.finish, id, xmin, owner, 1, "succeeded", "pi_"+id, `{}`, t0, 200, "req").Scan(&version, &setting))
		return version != nil
	}

	// A begins first and commits last; B commits in between.
	txA, err := admin.Begin(ctx)
	require.NoError(t, err)
	xminA := begin(txA, "op-a")
	xminB := begin(admin, "op-b")
	require.Empty(t, read(""), "B sorts after A's position, which is at or above every reader's xmin until A ends")
	require.NoError(t, txA.Commit(ctx))
	got := readN("", 2)
	require.Len(t, got, 2)
	require.Equal(t, []string{"op-a", "op-b"}, []string{got[0].id, got[1].id})
	require.Equal(t, "pending", got[0].to)
	cursor := got[1].pos

	// The lease: another owner's Finish writes nothing.
	require.False(t, finish("op-a", xminA, "intruder"))
	require.True(t, finish("op-a", xminA, "w"))
	got = readN(cursor, 1)
	require.Len(t, got, 1, "A's settlement comes after the cursor that passed its creation")
	require.Equal(t, entry{pos: got[0].pos, id: "op-a", from: "in_flight", to: "succeeded"}, got[0])
	cursor = got[0].pos

	// Created and settled between two reads: one entry, the settlement (the
	// creation entry is collapsed into it).
	require.True(t, finish("op-b", xminB, "w"))
	xminC := begin(admin, "op-c")
	require.True(t, finish("op-c", xminC, "w"))
	got = readN(cursor, 2)
	require.Len(t, got, 2)
	require.Equal(t, "op-b", got[0].id)
	require.Equal(t, entry{pos: got[1].pos, id: "op-c", from: "in_flight", to: "succeeded"}, got[1], "no pending entry for op-c")

	// A transition the feed records, written without its entry, is refused.
	_, err = admin.Exec(ctx, strings.ReplaceAll(`UPDATE {{s}}.ot_operations SET status = 'manual_review' WHERE id = 'op-c'`, "{{s}}", v.quoted))
	require.ErrorContains(t, err, "ot_operations_feed_check")
	// A change that is not an entry (a lease taken, in_flight -> unknown)
	// keeps the row's position.
	begin(admin, "op-d")
	before := readN(got[1].pos, 1)
	require.Len(t, before, 1)
	_, err = admin.Exec(ctx, strings.ReplaceAll(`UPDATE {{s}}.ot_operations SET status = 'unknown', lease_owner = 'r' WHERE id = 'op-d'`, "{{s}}", v.quoted))
	require.NoError(t, err)
	after := readN(got[1].pos, 1)
	require.Len(t, after, 1)
	require.Equal(t, before[0].pos, after[0].pos)
}

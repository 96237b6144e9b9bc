package ledgerpg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

// feedUntil reads the feed after after until it returns at least n
// entries: other tests' open transactions (xids are cluster-wide) may hold
// entries back for a while.
func feedUntil(t *testing.T, s ledger.Store, after ledger.FeedCursor, n int) []ledger.FeedEntry {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := s.Feed(t.Context(), ledger.FeedParams{After: after, Limit: ledger.MaxFeedLimit})
		require.NoError(t, err)
		if len(got) >= n || time.Now().After(deadline) {
			require.Len(t, got, n)
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// feedProbe is what the probe saw just before the COMMIT of a Feed.
type feedProbe struct {
	sync string // synchronous_commit
	pid  int
	xid  int64 // the transaction's id; 0 when it has none
}

// probeFeeds makes s report, for every Feed, its transaction's
// synchronous_commit, backend and id just before its COMMIT, to fn.
func probeFeeds(s *ledgerpg.Store, t *testing.T, fn func(feedProbe)) {
	ledgerpg.SetProbe(s, `SELECT concat_ws(' ', current_setting('synchronous_commit'), pg_backend_pid(),
			coalesce(pg_current_xact_id_if_assigned()::text, '0'))`, func(method, v string) {
		if method != "feed" {
			return
		}
		f := strings.Fields(v)
		require.Len(t, f, 3, "probe %q", v)
		pid, err := strconv.Atoi(f[1])
		require.NoError(t, err)
		xid, err := strconv.ParseInt(f[2], 10, 64)
		require.NoError(t, err)
		fn(feedProbe{sync: f[0], pid: pid, xid: xid})
	})
}

// Feed hands out entries only once they are durable: a lazily committed
// Finish is visible before its commit is flushed, and a crash of the
// server would take it back and hand its transaction id out again. So a
// Feed that returns new entries raises the feed's durable mark in its
// transaction (a write: PostgreSQL flushes no commit that wrote no WAL)
// and commits with synchronous_commit on, whatever the session's default,
// and returns nothing when that commit fails. A page read before, or an
// empty one, writes nothing and waits for no flush. (That the flush
// really keeps the entries across a crash of the server is
// TestFeedSurvivesServerCrash in internal/crashsuite.)
func TestFeedCommitsDurablyBeforeHandingOut(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := storeWith(t, onConnect("SET synchronous_commit = off"))
	op := newOp("op-lazy")
	br, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = s.Finish(ctx, ledger.FinishParams{ID: op.ID, Owner: "w", Now: t0, From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeSuccess}}) // lazily durable
	require.NoError(t, err)
	mark := func() string {
		var m string
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce((SELECT pos::text || '.' || seq FROM `+
			table(s.Schema(), "payonce_feed_durable")+`), '')`).Scan(&m))
		return m
	}

	// A COMMIT that fails (here: the server ends the session just before
	// it) hands out nothing. Reads that find nothing new yet (other tests'
	// transactions can hold entries back) write nothing and are let be.
	var failed error
	for deadline := time.Now().Add(30 * time.Second); failed == nil && time.Now().Before(deadline); {
		probeFeeds(s, t, func(p feedProbe) {
			if p.xid == 0 {
				return
			}
			var gone bool
			require.NoError(t, pool.QueryRow(context.Background(), "SELECT pg_terminate_backend($1, 5000)", p.pid).Scan(&gone))
			require.True(t, gone)
		})
		var got []ledger.FeedEntry
		got, failed = s.Feed(ctx, ledger.FeedParams{})
		if failed != nil {
			require.Nil(t, got, "no entry without its durable commit")
		}
	}
	require.Error(t, failed, "Feed wrote in its transaction before handing out entries")
	require.Empty(t, mark(), "the failed commit raised nothing")

	var probes []feedProbe
	probeFeeds(s, t, func(p feedProbe) { probes = append(probes, p) })
	entries := feedUntil(t, s, "", 2)
	require.Equal(t, ledger.StatusSucceeded, entries[1].To)
	require.NotEmpty(t, probes, "Feed reads in a transaction it commits")
	last := probes[len(probes)-1]
	require.Equal(t, "on", last.sync, "the Feed that returned new entries commits durably")
	require.NotZero(t, last.xid, "having written, so that its COMMIT waits for the flush")
	for _, e := range entries {
		pos, _, err := ledgerdriver.ParseFeedCursor(e.Cursor)
		require.NoError(t, err)
		require.Greater(t, last.xid, pos, "its id was taken after the read: above every position it returned")
	}
	require.Equal(t, string(entries[1].Cursor), mark())

	probes = nil
	again, err := s.Feed(ctx, ledger.FeedParams{})
	require.NoError(t, err)
	require.Equal(t, entries, again)
	empty, err := s.Feed(ctx, ledger.FeedParams{After: entries[1].Cursor})
	require.NoError(t, err)
	require.Empty(t, empty)
	require.Len(t, probes, 2)
	for _, p := range probes {
		require.Zero(t, p.xid, "a page read before, or an empty one, writes nothing")
	}
}

// One operation's entries are in the order the ledger made them, also when
// a webhook takes its transaction id (at its inbox insert) before it locks
// the operation, and a Finish settles the operation in between. A test
// trigger makes the webhook wait just after its inbox insert, on an
// advisory lock the test holds.
func TestFeedOrderWhenWebhookWaitsAfterItsInboxRow(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	key := rand.Int32N(1 << 30) // advisory locks are database-wide: one of this test's own
	_, err := pool.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_advisory_xact_lock(%[3]d, 0); RETURN NULL; END $$;
		CREATE TRIGGER pause AFTER INSERT ON %[2]s FOR EACH ROW EXECUTE FUNCTION %[1]s()`,
		table(s.Schema(), "pause"), table(s.Schema(), "payonce_webhooks"), key))
	require.NoError(t, err)
	hold, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer hold.Rollback(context.Background()) //nolint:errcheck // rolled back below
	_, err = hold.Exec(ctx, "SELECT pg_advisory_xact_lock($1, 0)", key)
	require.NoError(t, err)

	op := newOp("op-1")
	br, err := s.Begin(ctx, ledger.BeginParams{Op: op, Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	recorded := make(chan error, 1)
	go func() {
		_, err := s.RecordWebhook(ctx, ledger.RecordWebhookParams{Now: t0.Add(2 * time.Second), Event: ledger.WebhookEvent{
			Provider: "stripe", ID: "evt_1", Type: "charge.dispute.created", Targets: []ledger.WebhookTarget{
				{Kind: "charge", OperationID: op.ID, Key: op.Key, Effect: ledger.EffectReversed, Detail: "fraudulent"}}}})
		recorded <- err
	}()
	for waits, deadline := false, time.Now().Add(10*time.Second); !waits; time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the webhook waits after its inbox insert")
		require.NoError(t, pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'advisory' AND classid = $1 AND objid = 0 AND objsubid = 2 AND NOT granted)`, key).Scan(&waits))
	}
	_, err = s.Finish(ctx, ledger.FinishParams{ID: op.ID, Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight,
		To: ledger.StatusSucceeded, Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeSuccess}})
	require.NoError(t, err)
	require.NoError(t, hold.Rollback(ctx))
	require.NoError(t, <-recorded)

	got, _, err := s.Get(ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusManualReview, got.Status)
	var steps []string
	for _, e := range feedUntil(t, s, "", 3) {
		steps = append(steps, fmt.Sprintf("%s>%s", e.From, e.To))
	}
	require.Equal(t, []string{">pending", "in_flight>succeeded", "succeeded>manual_review"}, steps)
}

// A cursor handed out by a version 6 schema (ordered by transaction id)
// keeps its place after migration 008 (ordered by position): the entries
// after it are exactly those not yet read, old and new.
func TestFeedCursorKeptAcrossVersion8(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool, schema := schemaAtVersion(t, 6)
	old, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(t, err)
	ledgerpg.KeepMigrationsUpTo(old, 6)
	// A version 6 read: the columns and the order of that version.
	readV6 := func(after ledger.FeedCursor) []string {
		epoch, seq, err := ledgerdriver.ParseFeedCursor(after)
		require.NoError(t, err)
		rows, err := pool.Query(ctx, `SELECT operation_id FROM `+table(schema, "payonce_feed")+`
			WHERE (txid, seq) > ($1::text::xid8, $2) AND txid < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY txid, seq`,
			strconv.FormatInt(epoch, 10), seq)
		require.NoError(t, err)
		var ids []string
		for rows.Next() {
			var id string
			require.NoError(t, rows.Scan(&id))
			ids = append(ids, id)
		}
		require.NoError(t, rows.Err())
		return ids
	}
	// Written as a version 6 build did (this build's writes name columns of
	// later versions).
	insertRawOps(t, pool, schema, []ledger.Operation{ledgerdriver.ApplyCreate(newOp("op-1"), t0), ledgerdriver.ApplyCreate(newOp("op-2"), t0)})
	for deadline := time.Now().Add(30 * time.Second); len(readV6("")) < 2; time.Sleep(5 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "both entries readable")
	}
	var pos, seq int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT txid::text::bigint, seq FROM `+table(schema, "payonce_feed")+` WHERE operation_id = 'op-1'`).Scan(&pos, &seq))
	cursor := ledgerdriver.MakeFeedCursor(pos, seq) // what a version 6 Feed handed out for op-1

	s := upgradeFrom(t, pool, schema, 6, "feed_position_durable")
	_, _, err = s.CreateOrGet(ctx, newOp("op-3"), t0)
	require.NoError(t, err)
	var ids []string
	for _, e := range feedUntil(t, s, cursor, 2) {
		ids = append(ids, e.OperationID)
	}
	require.Equal(t, []string{"op-2", "op-3"}, ids)
	all := feedUntil(t, s, "", 3)
	require.Equal(t, cursor, all[0].Cursor, "an old entry keeps its cursor")
}

// Feed pages in position order as numbers, not as text: positions are
// transaction ids, and a page whose positions cross a power of ten (9999
// to 10000) sorted as text would put 10000 first, move a consumer's cursor
// backwards, and let a cut page skip entries for good. The positions are
// set by hand below the snapshot's xmin, as ids of long-finished
// transactions would be.
func TestFeedOrdersPositionsAsNumbers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	ids := []string{"op-9", "op-10", "op-100"}
	for _, id := range ids {
		_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp(id), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute)})
		require.NoError(t, err)
	}
	for i, id := range ids {
		pos := []int{9, 10, 100}[i]
		_, err := pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET pos = $1::text::xid8 WHERE operation_id = $2`,
			table(s.Schema(), "payonce_feed")), strconv.Itoa(pos), id)
		require.NoError(t, err)
	}
	var order []string
	for _, e := range feedUntil(t, s, "", 3) {
		order = append(order, e.OperationID)
	}
	require.Equal(t, ids, order, "one page in position order")

	var cursor ledger.FeedCursor
	order = order[:0]
	for range ids {
		page, err := s.Feed(ctx, ledger.FeedParams{After: cursor, Limit: 1})
		require.NoError(t, err)
		require.Len(t, page, 1)
		order, cursor = append(order, page[0].OperationID), page[0].Cursor
	}
	require.Equal(t, ids, order, "pages of one in position order")
}

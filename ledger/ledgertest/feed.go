package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// feedAll reads the whole feed after after with pages of limit, checking
// that every page is at most limit long and that no cursor repeats.
func feedAll(t *testing.T, s ledger.Store, after ledger.FeedCursor, limit int) []ledger.FeedEntry {
	t.Helper()
	var out []ledger.FeedEntry
	seen := map[ledger.FeedCursor]bool{}
	for range 10000 {
		page, err := s.Feed(t.Context(), ledger.FeedParams{After: after, Limit: limit})
		require.NoError(t, err)
		require.NotNil(t, page, "an empty page is empty, not nil")
		require.LessOrEqual(t, len(page), limit)
		if len(page) == 0 {
			return out
		}
		for _, e := range page {
			require.False(t, seen[e.Cursor], "cursor %q returned twice", e.Cursor)
			seen[e.Cursor] = true
		}
		out = append(out, page...)
		after = page[len(page)-1].Cursor
	}
	t.Fatal("the feed never ends")
	return nil
}

// feedWait is feedAll once it returns at least n entries. A store may hold
// entries back while older transactions run (PostgreSQL: anywhere in the
// cluster, such as other tests' open transactions), so an entry just
// committed is not necessarily readable at once; it must become readable
// once those end.
func feedWait(t *testing.T, s ledger.Store, after ledger.FeedCursor, limit, n int) []ledger.FeedEntry {
	t.Helper()
	deadline := time.Now().Add(feedPatience)
	for {
		all := feedAll(t, s, after, limit)
		if len(all) >= n || time.Now().After(deadline) {
			require.Len(t, all, n, "entries readable within %v", feedPatience)
			return all
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// feedPatience bounds how long feedWait waits for entries held back by
// transactions that other subtests keep open (for a few seconds at most).
const feedPatience = 30 * time.Second

// feedStep is what a test expects of one entry.
type feedStep struct {
	id       string
	from, to ledger.Status
}

func stepsOf(entries []ledger.FeedEntry) []feedStep {
	out := make([]feedStep, len(entries))
	for i, e := range entries {
		out[i] = feedStep{e.OperationID, e.From, e.To}
	}
	return out
}

func testFeedEmpty(t *testing.T, h *Harness) {
	got, err := h.Store.Feed(t.Context(), ledger.FeedParams{})
	require.NoError(t, err)
	require.NotNil(t, got)
	require.Empty(t, got)
	// Work that only sends (no creation is new, nothing settles) adds
	// nothing either: a claim of nothing, a read.
	require.Empty(t, mustClaimDue(t, h.Store, ledger.ClaimDueParams{Owner: ownerA, Now: base, LeaseUntil: at(time.Minute), Limit: 10}))
	require.Empty(t, feedAll(t, h.Store, "", 10))
}

// testFeedTransitions drives a mix of operations through their lives and
// checks the feed records exactly the creations and the changes into and
// out of the terminal statuses, in the order they were made, with their
// fields.
func testFeedTransitions(t *testing.T, h *Harness) {
	s := h.Store
	// a: Begin with an attempt (created in_flight), then succeeded.
	a := NewOp("op-a")
	mustStart(t, s, a, ownerA, at(1*time.Second))
	mustFinish(t, s, ledger.FinishParams{ID: a.ID, Owner: ownerA, Now: at(2 * time.Second), From: ledger.StatusInFlight,
		To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_a"})
	// b: created pending, retried (pending to pending), then failed.
	b := newOpFor("op-b", "adyen", "refund")
	mustBegin(t, s, beginParams(b, ownerA, at(3*time.Second), false))
	mustFinish(t, s, ledger.FinishParams{ID: b.ID, Owner: ownerA, Now: at(4 * time.Second), From: ledger.StatusPending,
		To: ledger.StatusPending, NextCheckAt: at(time.Minute), KeepLease: true})
	mustFinish(t, s, ledger.FinishParams{ID: b.ID, Owner: ownerA, Now: at(5 * time.Second), From: ledger.StatusPending,
		To: ledger.StatusFailed})
	// c: in_flight, unknown (not recorded), manual_review, resent by an
	// operator (back to pending under generation 1).
	c := NewOp("op-c")
	mustStart(t, s, c, ownerA, at(6*time.Second))
	mustFinish(t, s, ledger.FinishParams{ID: c.ID, Owner: ownerA, Now: at(7 * time.Second), From: ledger.StatusInFlight,
		To: ledger.StatusUnknown, Attempt: attemptOutcome(1, ledger.StatusUnknown), KeepLease: true, NextCheckAt: at(time.Minute)})
	mustFinish(t, s, ledger.FinishParams{ID: c.ID, Owner: ownerA, Now: at(8 * time.Second), From: ledger.StatusUnknown,
		To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: "lookup contradicts the attempt"})
	_, err := s.Resolve(t.Context(), ledger.ResolveParams{ID: c.ID, Actor: "ops", Note: "provider has no record",
		Outcome: ledger.ResolveResend, NewKey: "op-c/1", NewGeneration: 1, Now: at(9 * time.Second)})
	require.NoError(t, err)
	// A failed call records nothing: another owner's Finish.
	_, err = s.Finish(t.Context(), ledger.FinishParams{ID: a.ID, Owner: ownerB, Now: at(10 * time.Second), From: ledger.StatusSucceeded, To: ledger.StatusFailed})
	require.Error(t, err)

	all := feedWait(t, s, "", 100, 7)
	require.Equal(t, []feedStep{
		{"op-a", "", ledger.StatusPending}, // created and started at once: one entry
		{"op-a", ledger.StatusInFlight, ledger.StatusSucceeded},
		{"op-b", "", ledger.StatusPending},
		{"op-b", ledger.StatusPending, ledger.StatusFailed},
		{"op-c", "", ledger.StatusPending},
		{"op-c", ledger.StatusUnknown, ledger.StatusManualReview},
		{"op-c", ledger.StatusManualReview, ledger.StatusPending},
	}, stepsOf(all))
	for i, want := range []time.Time{at(1 * time.Second), at(2 * time.Second), at(3 * time.Second), at(5 * time.Second), at(6 * time.Second), at(8 * time.Second), at(9 * time.Second)} {
		requireTime(t, want, all[i].At, "At")
	}
	require.Equal(t, "pi_a", all[1].ProviderRef)
	require.Empty(t, all[0].ProviderRef)
	require.Equal(t, "adyen", all[3].Provider)
	require.Equal(t, "refund", all[3].Kind)
	require.Equal(t, []string{"order", "op-b"}, all[3].References)
	require.Equal(t, "lookup contradicts the attempt", all[5].ReviewReason)
	require.Empty(t, all[6].ReviewReason)
	require.Equal(t, ledger.ReviewCodeContradicted, all[5].ReviewCode, "the entry carries the code beside the reason")
	require.Empty(t, all[6].ReviewCode)
	require.Equal(t, "op-c", all[5].Key)
	require.Equal(t, 0, all[5].Generation)
	require.Equal(t, "op-c/1", all[6].Key, "the resend's entry names the new key")
	require.Equal(t, 1, all[6].Generation)

	// Filters skip entries, and the cursor of a filtered page resumes
	// after what it skipped.
	settled, err := s.Feed(t.Context(), ledger.FeedParams{Statuses: []ledger.Status{ledger.StatusSucceeded, ledger.StatusFailed}})
	require.NoError(t, err)
	require.Equal(t, []feedStep{{"op-a", ledger.StatusInFlight, ledger.StatusSucceeded}, {"op-b", ledger.StatusPending, ledger.StatusFailed}}, stepsOf(settled))
	require.Equal(t, all[1].Cursor, settled[0].Cursor)
	adyen, err := s.Feed(t.Context(), ledger.FeedParams{Provider: "adyen", After: all[2].Cursor})
	require.NoError(t, err)
	require.Equal(t, []feedStep{{"op-b", ledger.StatusPending, ledger.StatusFailed}}, stepsOf(adyen))
	none, err := s.Feed(t.Context(), ledger.FeedParams{Provider: "adyen", Statuses: []ledger.Status{ledger.StatusSucceeded}})
	require.NoError(t, err)
	require.Empty(t, none)
}

// testFeedPaging reads the feed in pages of every size from 1 to past the
// end and gets the same entries each time, none twice, none missing; a
// cursor at the end waits for what comes next.
func testFeedPaging(t *testing.T, h *Harness) {
	s := h.Store
	const n = 23
	for i, id := range numberedIDs("op-page", n) {
		mustCreate(t, s, NewOp(id), at(time.Duration(i)*time.Second))
	}
	whole := feedWait(t, s, "", ledger.MaxFeedLimit, n)
	require.Len(t, whole, n)
	for i, id := range numberedIDs("op-page", n) {
		require.Equal(t, id, whole[i].OperationID, "entry %d", i)
	}
	for _, limit := range []int{1, 2, 5, 7, n - 1, n, n + 1} {
		require.Equal(t, whole, feedAll(t, s, "", limit), "pages of %d", limit)
	}
	def, err := s.Feed(t.Context(), ledger.FeedParams{})
	require.NoError(t, err)
	require.Equal(t, whole, def, "Limit 0 reads DefaultFeedLimit")
	// From the middle: exactly the rest.
	require.Equal(t, whole[10:], feedAll(t, s, whole[9].Cursor, 4))

	end := whole[n-1].Cursor
	require.Empty(t, feedAll(t, s, end, 10))
	mustCreate(t, s, NewOp("op-later"), at(time.Hour))
	later := feedWait(t, s, end, 10, 1)
	require.Equal(t, []feedStep{{"op-later", "", ledger.StatusPending}}, stepsOf(later))
}

func testFeedInvalid(t *testing.T, h *Harness) {
	s := h.Store
	mustCreate(t, s, NewOp("op-1"), base)
	entries := feedWait(t, s, "", 10, 1)
	require.Len(t, entries, 1)
	epoch, seq, err := ledgerdriver.ParseFeedCursor(entries[0].Cursor)
	require.NoError(t, err)

	for _, c := range []struct {
		name  string
		p     ledger.FeedParams
		field string
	}{
		{"NegativeLimit", ledger.FeedParams{Limit: -1}, "Limit"},
		{"LimitTooLarge", ledger.FeedParams{Limit: ledger.MaxFeedLimit + 1}, "Limit"},
		{"UnknownStatus", ledger.FeedParams{Statuses: []ledger.Status{ledger.StatusSucceeded, "paid"}}, "Statuses[1]"},
		{"MalformedCursor", ledger.FeedParams{After: "not-a-cursor"}, "After"},
		{"NegativeCursor", ledger.FeedParams{After: "-1.5"}, "After"},
		{"CursorPastTheSequence", ledger.FeedParams{After: ledgerdriver.MakeFeedCursor(epoch, seq+1000)}, "After"},
		{"CursorOfAnotherEpoch", ledger.FeedParams{After: ledgerdriver.MakeFeedCursor(epoch+1<<40, seq)}, "After"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := s.Feed(t.Context(), c.p)
			require.ErrorIs(t, err, ledger.ErrInvalid)
			var ve *ledger.ValidationError
			require.ErrorAs(t, err, &ve)
			require.Equal(t, c.field, ve.Field)
			require.Nil(t, got)
		})
	}
	_, err = s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(time.Hour), Retention: keyTTL, KeyTTL: keyTTL, FeedRetention: -time.Second})
	var ve *ledger.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "FeedRetention", ve.Field)
	require.Len(t, feedAll(t, s, "", 10), 1, "a refused Cleanup purges nothing")
}

// testFeedCleanup: entries outlive the operations Cleanup deletes, are
// purged after FeedRetention from the oldest end only, and the late
// duplicates that find a tombstone add none.
func testFeedCleanup(t *testing.T, h *Harness) {
	s := h.Store
	finished(t, s, shortTTL("op-old"), ledger.StatusSucceeded, at(time.Minute))
	rep, err := s.Cleanup(t.Context(), ledger.CleanupParams{Now: at(72 * time.Hour), Retention: 48 * time.Hour, KeyTTL: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted)
	require.Zero(t, rep.FeedPurged)
	kept := feedWait(t, s, "", 10, 2)
	require.Equal(t, []feedStep{{"op-old", "", ledger.StatusPending}, {"op-old", ledger.StatusInFlight, ledger.StatusSucceeded}}, stepsOf(kept),
		"the entries outlive the deleted operation")

	// Late duplicates answered by the tombstone create nothing, so they
	// add no entry (their insert is undone with its entry).
	res := mustBegin(t, s, beginParams(shortTTL("op-old"), ownerA, at(73*time.Hour), true))
	require.True(t, res.Op.Tombstone)
	got, created, err := s.CreateOrGet(t.Context(), shortTTL("op-old"), at(73*time.Hour))
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, got.Tombstone)
	// An entry made later but dated earlier (a clock set back) sits after
	// a young one: the purge stops at the young one. (Readable, they also
	// show that the duplicates above added nothing before them.)
	mustCreate(t, s, NewOp("op-young"), at(40*24*time.Hour))
	mustCreate(t, s, NewOp("op-behind"), at(2*time.Minute))
	require.Equal(t, append(stepsOf(kept), feedStep{"op-young", "", ledger.StatusPending}, feedStep{"op-behind", "", ledger.StatusPending}),
		stepsOf(feedWait(t, s, "", 10, 4)))
	p := ledger.CleanupParams{Now: at(41 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: time.Hour, BatchSize: 1}
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 2, rep.FeedPurged, "the two old entries of op-old, one per batch")
	require.Equal(t, []feedStep{{"op-young", "", ledger.StatusPending}, {"op-behind", "", ledger.StatusPending}}, stepsOf(feedAll(t, s, "", 10)))
	// A cursor into the purged part still reads the rest.
	require.Len(t, feedAll(t, s, kept[0].Cursor, 10), 2)

	p.FeedRetention = 24 * time.Hour * 365
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Zero(t, rep.FeedPurged, "a longer retention keeps everything")
	p.Now, p.FeedRetention = at(50*24*time.Hour), 0
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Zero(t, rep.FeedPurged, "op-young is younger than the default retention and holds op-behind back")
	p.Now = at(72 * 24 * time.Hour)
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 2, rep.FeedPurged)
	require.Empty(t, feedAll(t, s, "", 10))
	// Purged to empty, the last cursor is still this feed's.
	_, err = s.Feed(t.Context(), ledger.FeedParams{After: kept[1].Cursor})
	require.NoError(t, err)
}

// testFeedTxCommit: an operation a caller records in its own transaction
// appears in the feed only once that transaction commits, and never when
// it rolls back.
func testFeedTxCommit(t *testing.T, h *TxHarness) {
	ctx, s := t.Context(), h.Store
	tx := h.Begin(t)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	_, created, err := tx.CreateOrGet(ctx, NewOp("op-1"), base)
	require.NoError(t, err)
	require.True(t, created)
	require.Empty(t, feedAll(t, s, "", 10), "not before the commit")
	require.NoError(t, tx.Commit(ctx))
	require.Equal(t, []feedStep{{"op-1", "", ledger.StatusPending}}, stepsOf(feedWait(t, s, "", 10, 1)))

	tx = h.Begin(t)
	_, _, err = tx.CreateOrGet(ctx, NewOp("op-2"), base)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	mustCreate(t, s, NewOp("op-3"), base)
	require.Equal(t, []feedStep{{"op-1", "", ledger.StatusPending}, {"op-3", "", ledger.StatusPending}}, stepsOf(feedWait(t, s, "", 10, 2)),
		"a rollback leaves no entry")
}

// feedReader reads the feed as a consumer does: from its cursor on, and
// remembers every entry it was given.
type feedReader struct {
	cursor ledger.FeedCursor
	got    []string
}

// read reads once from the cursor on.
func (r *feedReader) read(t *testing.T, s ledger.Store) {
	t.Helper()
	for _, e := range feedAll(t, s, r.cursor, 10) {
		r.got = append(r.got, e.OperationID)
		r.cursor = e.Cursor
	}
}

// readUntil reads until it holds n entries in all, or feedPatience passed.
func (r *feedReader) readUntil(t *testing.T, s ledger.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(feedPatience)
	for r.read(t, s); len(r.got) < n && time.Now().Before(deadline); r.read(t, s) {
		time.Sleep(5 * time.Millisecond)
	}
}

// testFeedNotSkipped: an entry written by a transaction that is still open
// while a later one commits is not skipped by a reader that reads in
// between. Two orders of the writes: the open transaction's entry numbered
// before the committed one (a reader ordering by number alone passes it),
// and also its transaction begun after the committed one's (a reader
// ordering by number only the entries of transactions older than every
// open one passes it too). The reader in between may get the committed
// entry or nothing yet; in the end it must hold both, once each.
func testFeedNotSkipped(t *testing.T, h *TxHarness) {
	if !h.WritesRunBesideTx {
		t.Skip("the store's writes wait for the caller's transaction: no entry can commit while an earlier one is open")
	}
	ctx, s := t.Context(), h.Store
	var r feedReader

	// The open transaction's entry numbered first.
	tx := h.Begin(t)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	_, _, err := tx.CreateOrGet(ctx, NewOp("op-early"), base)
	require.NoError(t, err)
	mustCreate(t, s, NewOp("op-late"), base) // commits, numbered after op-early
	r.read(t, s)
	require.NotContains(t, r.got, "op-early", "not before its commit")
	require.NoError(t, tx.Commit(ctx))
	r.readUntil(t, s, 2)
	require.ElementsMatch(t, []string{"op-early", "op-late"}, r.got, "each entry exactly once")

	// The open transaction began writing after the committed one, and its
	// entry is numbered first.
	open, done := h.Begin(t), h.Begin(t)
	defer open.Rollback(ctx)                                   //nolint:errcheck // committed below
	defer done.Rollback(ctx)                                   //nolint:errcheck // committed below
	require.NoError(t, done.InsertOrder(ctx, "order-done", 1)) // done's transaction id is taken first
	require.NoError(t, open.InsertOrder(ctx, "order-open", 2))
	_, _, err = open.CreateOrGet(ctx, NewOp("op-open"), base)
	require.NoError(t, err)
	_, _, err = done.CreateOrGet(ctx, NewOp("op-done"), base) // numbered after op-open
	require.NoError(t, err)
	require.NoError(t, done.Commit(ctx))
	r.read(t, s)
	require.NoError(t, open.Commit(ctx))
	r.readUntil(t, s, 4)
	require.ElementsMatch(t, []string{"op-done", "op-open"}, r.got[2:], "each entry exactly once")
}

// testFeedOperationOrder: one operation's entries are in the order the
// ledger made them, also when the transaction that made the later change
// began writing first. A webhook about two operations waits for the first
// (held by another transaction, after the webhook wrote its inbox row)
// while a Finish settles the second; the webhook then contradicts that
// settlement. The ledger holds manual_review, so the feed must read
// pending, succeeded, manual_review, and not the webhook's change first.
//
// Without HoldOperation (SQLite) no change of another operation can
// commit while a write waits, so the calls run one after the other.
func testFeedOperationOrder(t *testing.T, h *Harness) {
	s := h.Store
	held := NewOp("op-held")
	mustCreate(t, s, held, at(0))
	x := NewOp("op-x")
	_, att := mustStart(t, s, x, ownerA, at(time.Second))
	finish := func() {
		mustFinish(t, s, ledger.FinishParams{ID: x.ID, Owner: ownerA, Now: at(2 * time.Second), From: ledger.StatusInFlight,
			To: ledger.StatusSucceeded, Attempt: attemptOutcome(att.Number, ledger.StatusSucceeded), ProviderRef: "pi_x"})
	}
	e := evt("evt_dispute", "charge.dispute.created", byID(held.ID, ledger.EffectProcessing),
		ledger.WebhookTarget{Kind: "charge", OperationID: x.ID, Key: x.Key, Effect: ledger.EffectReversed, Detail: "fraudulent"})

	if h.HoldOperation == nil {
		finish()
		mustRecord(t, s, e, at(3*time.Second))
	} else {
		waiting, release := h.HoldOperation(t, held.ID)
		recorded := make(chan error, 1)
		go func() {
			_, err := s.RecordWebhook(t.Context(), ledger.RecordWebhookParams{Event: e, Now: at(3 * time.Second)})
			recorded <- err
		}()
		deadline := time.Now().Add(feedPatience)
		for !waiting() {
			if time.Now().After(deadline) {
				release()
				t.Fatal("the webhook never waited for the held operation")
			}
			time.Sleep(5 * time.Millisecond)
		}
		finish() // commits while the webhook, begun earlier, waits
		release()
		require.NoError(t, <-recorded)
	}

	got, _ := mustGet(t, s, x.ID)
	require.Equal(t, ledger.StatusManualReview, got.Status, "the webhook's contradiction came last")
	var ofX []ledger.FeedEntry
	for _, entry := range feedWait(t, s, "", 100, 4) {
		if entry.OperationID == x.ID {
			ofX = append(ofX, entry)
		}
	}
	require.Equal(t, []feedStep{
		{x.ID, "", ledger.StatusPending},
		{x.ID, ledger.StatusInFlight, ledger.StatusSucceeded},
		{x.ID, ledger.StatusSucceeded, ledger.StatusManualReview},
	}, stepsOf(ofX), "the entries of one operation, in the order the ledger made them")
}

package ledgertest

// What the operator console reads: the review queue by keyset pages, the
// search by provider reference and by key, and the inbox counts of Stats.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// Keyset pages of ListReview walk the queue in its order (ReviewAt, then
// ID) once, ties across a page boundary included, with and without
// filters; an operation entering review behind the cursor shows on a later
// page, one entering before it does not.
func testListReviewKeyset(t *testing.T, h *Harness) {
	s := h.Store
	type row struct {
		id, provider, kind, reason string
		at                         time.Time
	}
	var rows []row
	providers := []string{"stripe", "adyen", "checkout"}
	reasons := []string{"window passed", "duplicate", "something else"}
	for i := range 23 {
		r := row{
			// Recorded out of ID order; several share one ReviewAt.
			id:       fmt.Sprintf("rv-%02d", (i*7)%23),
			provider: providers[i%3],
			kind:     []string{"charge", "refund"}[i%2],
			reason:   reasons[(i/2)%3],
			at:       at(time.Duration(i/4) * time.Minute),
		}
		reviewFor(t, s, newOpFor(r.id, r.provider, r.kind), r.reason, base.Add(-time.Hour), r.at)
		rows = append(rows, r)
	}
	// Not in review: never listed.
	reach(t, s, newOpFor("rv-settled", "stripe", "charge"), ownerA, ledger.StatusSucceeded)
	slices.SortFunc(rows, func(a, b row) int { return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.id, b.id)) })

	expect := func(f ledger.ReviewFilter) []string {
		var out []string
		for _, r := range rows {
			if (f.Provider == "" || r.provider == f.Provider) && (f.Kind == "" || r.kind == f.Kind) &&
				(f.Code == "" || reviewCodeOf(r.reason) == f.Code) {
				out = append(out, r.id)
			}
		}
		return out
	}
	walk := func(f ledger.ReviewFilter) []string {
		var out []string
		for page := 0; ; page++ {
			require.Less(t, page, 30, "paging ends")
			ops, err := s.ListReview(t.Context(), f)
			require.NoError(t, err, "ListReview %+v", f)
			require.LessOrEqual(t, len(ops), f.Limit)
			if len(ops) == 0 {
				return out
			}
			for _, op := range ops {
				require.Equal(t, ledger.StatusManualReview, op.Status)
				out = append(out, op.ID)
			}
			last := ops[len(ops)-1]
			f.AfterReviewAt, f.AfterID = last.ReviewAt, last.ID
		}
	}
	for _, f := range []ledger.ReviewFilter{
		{Limit: 1},
		{Limit: 3},
		{Limit: 4},
		{Limit: 100},
		{Provider: "adyen", Limit: 2},
		{Provider: "stripe", Code: ledger.ReviewCodeWindowPassed, Limit: 1},
		{Kind: "refund", Code: ledger.ReviewCodeDuplicated, Limit: 2},
		{Provider: "nobody", Limit: 2},
	} {
		require.Equal(t, expect(f), walk(f), "keyset pages of %+v", f)
	}

	// A page after a given operation: exactly what follows it, a tie on
	// ReviewAt broken by ID.
	all := expect(ledger.ReviewFilter{})
	for i, r := range rows {
		ops, err := s.ListReview(t.Context(), ledger.ReviewFilter{AfterReviewAt: r.at, AfterID: r.id, Limit: 5})
		require.NoError(t, err)
		want := all[i+1 : min(i+6, len(all))]
		if len(want) == 0 {
			require.Empty(t, ops, "after the last one")
			continue
		}
		require.Equal(t, want, ids(ops), "after %s", r.id)
	}
	// The cursor is a position, not an operation: it need not exist.
	ops, err := s.ListReview(t.Context(), ledger.ReviewFilter{AfterReviewAt: rows[5].at, AfterID: rows[5].id + "~", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, all[6:8], ids(ops))

	// Between two pages, one operation enters review before the cursor and
	// one after it: the next page holds the later one only.
	first, err := s.ListReview(t.Context(), ledger.ReviewFilter{Limit: 10})
	require.NoError(t, err)
	last := first[len(first)-1]
	reviewFor(t, s, newOpFor("rv-early", "stripe", "charge"), "duplicate", base.Add(-time.Hour), at(-time.Minute))
	reviewFor(t, s, newOpFor("rv-late", "stripe", "charge"), "duplicate", base.Add(-time.Hour), at(time.Hour))
	rest := walk(ledger.ReviewFilter{AfterReviewAt: last.ReviewAt, AfterID: last.ID, Limit: 7})
	require.Equal(t, append(slices.Clone(all[10:]), "rv-late"), rest)

	// The keyset is a pair: half of it is refused, naming the missing field.
	for _, c := range []struct {
		f     ledger.ReviewFilter
		field string
	}{
		{ledger.ReviewFilter{AfterID: "rv-01"}, "AfterReviewAt"},
		{ledger.ReviewFilter{AfterID: "rv-01", Provider: "stripe", Limit: 5}, "AfterReviewAt"},
		{ledger.ReviewFilter{AfterReviewAt: at(time.Minute)}, "AfterID"},
		{ledger.ReviewFilter{AfterReviewAt: at(time.Minute), AfterID: "rv-01", Limit: -1}, "Limit"},
	} {
		_, err := s.ListReview(t.Context(), c.f)
		require.ErrorIs(t, err, ledger.ErrInvalid, "%+v", c.f)
		var ve *ledger.ValidationError
		require.True(t, errors.As(err, &ve), "%+v: a *ledger.ValidationError: %v", c.f, err)
		require.Equal(t, c.field, ve.Field, "%+v", c.f)
	}
}

// List finds operations by their recorded provider reference (several may
// share one, across providers and kinds) and by their current key, alone
// and with the other filters.
func testListProviderRefAndKey(t *testing.T, h *Harness) {
	s := h.Store
	settle := func(op ledger.NewOperation, ref string) {
		mustStart(t, s, op, ownerA, base)
		mustFinish(t, s, ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight,
			To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: ref})
	}
	// Recorded in reverse ID order.
	settle(newOpFor("op-5", "stripe", "refund"), "re_1")
	settle(newOpFor("op-4", "adyen", "capture"), "shared")
	settle(newOpFor("op-3", "stripe", "capture"), "shared")
	settle(newOpFor("op-2", "stripe", "charge"), "shared")
	settle(newOpFor("op-1", "adyen", "charge"), "psp_1")
	unknownWithRef(t, s, newOpFor("op-0", "checkout", "charge"), "pay_0")
	mustCreate(t, s, newOpFor("op-9", "stripe", "charge"), base) // no reference yet

	for _, c := range []struct {
		f    ledger.ListFilter
		want []string
	}{
		{ledger.ListFilter{ProviderRef: "shared"}, []string{"op-2", "op-3", "op-4"}},
		{ledger.ListFilter{ProviderRef: "shared", Provider: "stripe"}, []string{"op-2", "op-3"}},
		{ledger.ListFilter{ProviderRef: "shared", Kind: "capture"}, []string{"op-3", "op-4"}},
		{ledger.ListFilter{ProviderRef: "shared", Provider: "adyen", Kind: "capture"}, []string{"op-4"}},
		{ledger.ListFilter{ProviderRef: "shared", AfterID: "op-2", Limit: 1}, []string{"op-3"}},
		{ledger.ListFilter{ProviderRef: "shared", Status: ledger.StatusSucceeded}, []string{"op-2", "op-3", "op-4"}},
		{ledger.ListFilter{ProviderRef: "shared", Status: ledger.StatusUnknown}, nil},
		{ledger.ListFilter{ProviderRef: "shared", Provider: "checkout"}, nil},
		{ledger.ListFilter{ProviderRef: "pay_0"}, []string{"op-0"}},
		{ledger.ListFilter{ProviderRef: "re_1"}, []string{"op-5"}},
		{ledger.ListFilter{ProviderRef: "RE_1"}, nil},
		{ledger.ListFilter{ProviderRef: "re_"}, nil},
		{ledger.ListFilter{ProviderRef: "pi_missing"}, nil},
		{ledger.ListFilter{Key: "op-3"}, []string{"op-3"}},
		{ledger.ListFilter{Key: "op-9"}, []string{"op-9"}},
		{ledger.ListFilter{Key: "op-3", Provider: "adyen"}, nil},
		{ledger.ListFilter{Key: "op-3", ProviderRef: "shared"}, []string{"op-3"}},
		{ledger.ListFilter{Key: "op-3", ProviderRef: "re_1"}, nil},
		{ledger.ListFilter{Key: "op-"}, nil},
		{ledger.ListFilter{Key: "missing"}, nil},
	} {
		ops, err := s.List(t.Context(), c.f)
		require.NoError(t, err, "List %+v", c.f)
		if c.want == nil {
			require.Empty(t, ops, "List %+v", c.f)
			continue
		}
		require.Equal(t, c.want, ids(ops), "List %+v", c.f)
		for _, op := range ops {
			requireStored(t, s, op)
		}
	}

	// Key is the current key: after a resend, the earlier generation's key
	// finds nothing and the new one finds the operation.
	op := newOpFor("op-r", "stripe", "charge")
	toReviewWith(t, s, op, "pi_r", []byte(`{"status":"requires_payment_method"}`))
	mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend,
		NewKey: op.ID + "-g1", NewGeneration: 1, Now: at(time.Hour)})
	ops, err := s.List(t.Context(), ledger.ListFilter{Key: op.ID})
	require.NoError(t, err)
	require.Empty(t, ops, "an earlier generation's key")
	ops, err = s.List(t.Context(), ledger.ListFilter{Key: op.ID + "-g1"})
	require.NoError(t, err)
	require.Equal(t, []string{op.ID}, ids(ops))

	// The other fields are checked as ever.
	_, err = s.List(t.Context(), ledger.ListFilter{ProviderRef: "shared", Status: "settled"})
	require.ErrorIs(t, err, ledger.ErrInvalid, "the other fields are still checked")
	_, err = s.List(t.Context(), ledger.ListFilter{ProviderRef: "shared", Limit: ledger.MaxLimit + 1})
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

// In an empty ledger a search by reference finds nothing, not an error.
func testListProviderRefEmpty(t *testing.T, h *Harness) {
	for _, f := range []ledger.ListFilter{{ProviderRef: "pi_1"}, {Key: "k"}, {ProviderRef: "pi_1", Provider: "stripe", Kind: "charge"}} {
		ops, err := h.Store.List(t.Context(), f)
		require.NoError(t, err, "List %+v", f)
		require.Empty(t, ops, "List %+v", f)
	}
	_, err := h.Store.List(t.Context(), ledger.ListFilter{Key: "k", Status: "settled"})
	require.ErrorIs(t, err, ledger.ErrInvalid)
}

func statsInbox(t *testing.T, s ledger.Store, since time.Time) []ledger.InboxCount {
	t.Helper()
	st, err := s.Stats(t.Context(), ledger.StatsParams{InboxSince: since})
	require.NoError(t, err, "Stats (InboxSince %v)", since)
	return st.Inbox
}

// Stats.Inbox counts the entries received since InboxSince by provider and
// disposition: each event once however often it was delivered, events
// without targets in the row of all entries only, an event with several
// outcomes of one disposition once in Entries.
func testStatsInbox(t *testing.T, h *Harness) {
	s := h.Store
	require.Nil(t, mustStats(t, s, false).Inbox, "no InboxSince: no inbox counts")
	require.Equal(t, []ledger.InboxCount{}, statsInbox(t, s, at(time.Minute)), "nothing received: empty, not nil")

	since := at(time.Hour)
	settled := NewOp("op-settle")
	reach(t, s, settled, ownerA, ledger.StatusUnknown)
	contra := NewOp("op-contra")
	reach(t, s, contra, ownerA, ledger.StatusSucceeded)

	// Before since: not counted.
	mustRecordNew(t, s, evt("evt_old", "payment_intent.succeeded",
		ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_elsewhere", Effect: ledger.EffectSucceeded}), since.Add(-time.Microsecond),
		ledger.WebhookOutcome{Target: 0, Disposition: ledger.WebhookUnmatched})
	// At since: counted. Three unmatched targets in one event.
	mustRecordNew(t, s, evt("evt_unmatched", "payment_intent.succeeded",
		ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_x", Effect: ledger.EffectSucceeded},
		byID("op-missing", ledger.EffectSucceeded),
		ledger.WebhookTarget{Kind: "refund", ProviderRef: "re_x", Effect: ledger.EffectSucceeded}), since,
		ledger.WebhookOutcome{Target: 0, Disposition: ledger.WebhookUnmatched},
		ledger.WebhookOutcome{Target: 1, Disposition: ledger.WebhookUnmatched},
		ledger.WebhookOutcome{Target: 2, Disposition: ledger.WebhookUnmatched})
	// Settled, then delivered twice more: one entry.
	e := evt("evt_settle", "payment_intent.succeeded", byID(settled.ID, ledger.EffectSucceeded))
	mustRecordNew(t, s, e, since.Add(time.Second), outcome(0, settled.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded))
	require.True(t, mustRecord(t, s, e, since.Add(2*time.Second)).Duplicate)
	require.True(t, mustRecord(t, s, e, since.Add(3*time.Second)).Duplicate)
	// An event that only informs: no outcome.
	mustRecordNew(t, s, evt("evt_info", "account.updated"), since.Add(time.Second))
	// A contradiction, with a second target unmatched.
	mustRecordNew(t, s, evt("evt_dispute", "charge.dispute.created",
		ledger.WebhookTarget{Kind: "charge", OperationID: contra.ID, Effect: ledger.EffectReversed, Detail: "fraudulent"},
		ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_y", Effect: ledger.EffectReversed}), since.Add(time.Minute),
		outcome(0, contra.ID, ledger.WebhookContradiction, ledger.StatusSucceeded, ledger.StatusManualReview),
		ledger.WebhookOutcome{Target: 1, Disposition: ledger.WebhookUnmatched})
	// Another provider: one unreadable event.
	mustRecordNew(t, s, unreadableEvent("unreadable:1", "amount is not an integer"), since.Add(time.Hour), unreadableOutcome)

	want := []ledger.InboxCount{
		{Provider: "adyen", Entries: 1, Outcomes: 1},
		{Provider: "adyen", Disposition: ledger.WebhookUnreadable, Entries: 1, Outcomes: 1},
		{Provider: "stripe", Entries: 4, Outcomes: 6},
		{Provider: "stripe", Disposition: ledger.WebhookContradiction, Entries: 1, Outcomes: 1},
		{Provider: "stripe", Disposition: ledger.WebhookSettled, Entries: 1, Outcomes: 1},
		{Provider: "stripe", Disposition: ledger.WebhookUnmatched, Entries: 2, Outcomes: 4},
	}
	require.Equal(t, want, statsInbox(t, s, since))

	// Later: only what came after.
	require.Equal(t, []ledger.InboxCount{
		{Provider: "adyen", Entries: 1, Outcomes: 1},
		{Provider: "adyen", Disposition: ledger.WebhookUnreadable, Entries: 1, Outcomes: 1},
		{Provider: "stripe", Entries: 1, Outcomes: 2},
		{Provider: "stripe", Disposition: ledger.WebhookContradiction, Entries: 1, Outcomes: 1},
		{Provider: "stripe", Disposition: ledger.WebhookUnmatched, Entries: 1, Outcomes: 1},
	}, statsInbox(t, s, since.Add(time.Second+time.Microsecond)))
	require.Equal(t, []ledger.InboxCount{}, statsInbox(t, s, since.Add(2*time.Hour)), "nothing since")

	// The other counts are the same with and without InboxSince.
	st, err := s.Stats(t.Context(), ledger.StatsParams{InboxSince: since})
	require.NoError(t, err)
	st.Inbox = nil
	require.Equal(t, mustStats(t, s, false), st)
}

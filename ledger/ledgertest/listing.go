package ledgertest

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

func testList(t *testing.T, h *Harness) {
	s := h.Store
	type row struct {
		id, provider, kind string
		status             ledger.Status
	}
	var rows []row
	// Recorded in reverse ID order, so that insertion order is not ID order.
	for i := 11; i >= 0; i-- {
		r := row{id: fmt.Sprintf("op-%02d", i), provider: []string{"stripe", "adyen"}[i%2], kind: []string{"charge", "refund", "capture"}[i%3], status: ledger.StatusPending}
		op := newOpFor(r.id, r.provider, r.kind)
		if i%4 == 0 {
			r.status = ledger.StatusSucceeded
			mustStart(t, s, op, ownerA, base)
			mustFinish(t, s, ledger.FinishParams{ID: r.id, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded)})
		} else {
			mustCreate(t, s, op, base)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.id, b.id) })

	expect := func(f ledger.ListFilter) []string {
		var out []string
		for _, r := range rows {
			if (f.Status == "" || r.status == f.Status) && (f.Provider == "" || r.provider == f.Provider) &&
				(f.Kind == "" || r.kind == f.Kind) && r.id > f.AfterID && len(out) < ledgerdriver.ListLimit(f) {
				out = append(out, r.id)
			}
		}
		return out
	}
	for _, f := range []ledger.ListFilter{
		{},
		{Status: ledger.StatusPending},
		{Status: ledger.StatusSucceeded},
		{Status: ledger.StatusManualReview},
		{Provider: "adyen"},
		{Kind: "refund"},
		{Provider: "stripe", Kind: "charge"},
		{Status: ledger.StatusSucceeded, Provider: "stripe"},
		{Limit: 5},
		{AfterID: "op-05"},
		{AfterID: "op-05", Limit: 3, Provider: "stripe"},
		{AfterID: "op-11"},
		{Provider: "nobody"},
	} {
		ops, err := s.List(t.Context(), f)
		require.NoError(t, err, "List %+v", f)
		require.Equal(t, expect(f), ids(ops), "List %+v", f)
		for _, op := range ops {
			requireStored(t, s, op)
		}
	}

	// Keyset paging walks everything once, in order.
	var paged []string
	after := ""
	for {
		ops, err := s.List(t.Context(), ledger.ListFilter{AfterID: after, Limit: 5})
		require.NoError(t, err)
		require.LessOrEqual(t, len(ops), 5)
		if len(ops) == 0 {
			break
		}
		paged = append(paged, ids(ops)...)
		after = ops[len(ops)-1].ID
	}
	require.Equal(t, expect(ledger.ListFilter{}), paged)
}

func testListDefaultLimit(t *testing.T, h *Harness) {
	s := h.Store
	const total = ledger.DefaultListLimit + 5
	var all []string
	for i := range total {
		id := fmt.Sprintf("op-%03d", i)
		all = append(all, id)
		mustCreate(t, s, NewOp(id), base)
	}

	ops, err := s.List(t.Context(), ledger.ListFilter{})
	require.NoError(t, err)
	require.Equal(t, all[:ledger.DefaultListLimit], ids(ops), "Limit defaults to %d", ledger.DefaultListLimit)

	ops, err = s.List(t.Context(), ledger.ListFilter{Limit: total})
	require.NoError(t, err)
	require.Equal(t, all, ids(ops))

	ops, err = s.List(t.Context(), ledger.ListFilter{AfterID: all[ledger.DefaultListLimit-1]})
	require.NoError(t, err)
	require.Equal(t, all[ledger.DefaultListLimit:], ids(ops))
}

func testListReview(t *testing.T, h *Harness) {
	s := h.Store
	toReview := func(id, provider, kind, reason string, when time.Time) {
		op := newOpFor(id, provider, kind)
		mustBegin(t, s, beginParams(op, ownerA, when.Add(-time.Second), false))
		mustFinish(t, s, ledger.FinishParams{ID: id, Owner: ownerA, Now: when, From: ledger.StatusPending, To: ledger.StatusManualReview,
			ReviewCode: reviewCodeOf(reason), ReviewReason: reason})
	}
	// rv-3 enters before rv-2 at the same instant: ties are broken by ID.
	toReview("rv-3", "stripe", "refund", "window passed", at(time.Minute))
	toReview("rv-2", "adyen", "refund", "duplicate", at(time.Minute))
	toReview("rv-4", "stripe", "charge", "duplicate", at(2*time.Minute))
	toReview("rv-1", "stripe", "charge", "window passed", at(3*time.Minute))
	// Resolved: no longer in review.
	toReview("rv-5", "stripe", "charge", "window passed", at(30*time.Second))
	_, err := s.Resolve(t.Context(), ledger.ResolveParams{ID: "rv-5", Actor: "alice", Note: "refunded by hand", Outcome: ledger.ResolveFailed, Now: at(4 * time.Minute)})
	require.NoError(t, err)
	// Not in review at all.
	mustCreate(t, s, NewOp("rv-6"), base)
	reach(t, s, newOpFor("rv-7", "psp-rv-7", "charge"), ownerA, ledger.StatusSucceeded)

	for _, c := range []struct {
		f    ledger.ReviewFilter
		want []string
	}{
		{ledger.ReviewFilter{}, []string{"rv-2", "rv-3", "rv-4", "rv-1"}},
		{ledger.ReviewFilter{Provider: "stripe"}, []string{"rv-3", "rv-4", "rv-1"}},
		{ledger.ReviewFilter{Kind: "refund"}, []string{"rv-2", "rv-3"}},
		{ledger.ReviewFilter{Reason: "duplicate"}, []string{"rv-2", "rv-4"}},
		{ledger.ReviewFilter{Code: ledger.ReviewCodeDuplicated}, []string{"rv-2", "rv-4"}},
		{ledger.ReviewFilter{Provider: "stripe", Code: ledger.ReviewCodeWindowPassed}, []string{"rv-3", "rv-1"}},
		{ledger.ReviewFilter{Code: ledger.ReviewCodeProcessing}, nil},
		{ledger.ReviewFilter{EnteredBefore: at(2 * time.Minute)}, []string{"rv-2", "rv-3"}},
		{ledger.ReviewFilter{EnteredBefore: at(2*time.Minute + time.Second)}, []string{"rv-2", "rv-3", "rv-4"}},
		{ledger.ReviewFilter{Provider: "stripe", Reason: "window passed"}, []string{"rv-3", "rv-1"}},
		{ledger.ReviewFilter{Provider: "stripe", Kind: "charge", Reason: "duplicate", EnteredBefore: at(time.Hour)}, []string{"rv-4"}},
		{ledger.ReviewFilter{Limit: 2}, []string{"rv-2", "rv-3"}},
		{ledger.ReviewFilter{Provider: "nobody"}, nil},
	} {
		ops, err := s.ListReview(t.Context(), c.f)
		require.NoError(t, err, "ListReview %+v", c.f)
		if c.want == nil {
			require.Empty(t, ops, "ListReview %+v", c.f)
			continue
		}
		require.Equal(t, c.want, ids(ops), "ListReview %+v", c.f)
		for _, op := range ops {
			require.Equal(t, ledger.StatusManualReview, op.Status)
			requireStored(t, s, op)
		}
	}
	_, err = s.ListReview(t.Context(), ledger.ReviewFilter{Code: "window-passed"})
	require.ErrorIs(t, err, ledger.ErrInvalid, "an unknown review code is refused")
}

package ledgertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// RequireUpgradedFromVersion1 checks a store just migrated from schema
// version 1, where a version 1 build (the store's test writes its rows with
// raw SQL) left two operations: op1 (ID "op-1", key "op-1") sent once at t0
// and waiting for a lookup, status unknown, one attempt finished maybe_sent
// with error "timeout" at t0+1s, window from t0, key expiring at t0+24h,
// lease of "w" and next check at t0+1m, updated at t0+1s; and op2 ("op-2")
// only recorded at t0, pending. The upgraded store must read them with
// their data intact (the attempt not replayed), record events for them, and
// finish and clean them up with tombstones.
func RequireUpgradedFromVersion1(t *testing.T, s ledger.Store, op1 ledger.NewOperation, t0 time.Time) {
	t.Helper()
	ctx := t.Context()
	got, gotAtts, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.Operation{
		ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", References: op1.References, Fingerprint: op1.Fingerprint,
		Request: op1.Request, Status: ledger.StatusUnknown, Attempts: 1, KeyTTL: 24 * time.Hour,
		WindowStart: t0, KeyExpiresAt: t0.Add(24 * time.Hour), LeaseOwner: "w", LeaseExpiresAt: t0.Add(time.Minute), NextCheckAt: t0.Add(time.Minute),
		CreatedAt: t0, UpdatedAt: t0.Add(time.Second),
	}, got)
	require.Equal(t, []ledger.Attempt{{
		OperationID: "op-1", Number: 1, Key: "op-1", StartedAt: t0, FinishedAt: t0.Add(time.Second), MayHaveReached: true,
		Outcome: ledger.OutcomeMaybeSent, Error: "timeout",
	}}, gotAtts, "an attempt of version 1 was not replayed")
	got2, _, err := s.Get(ctx, "op-2")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusPending, got2.Status)
	require.Empty(t, mustEvents(t, s, "op-1"))

	_, err = s.Finish(ctx, ledger.FinishParams{
		ID: "op-1", Owner: "w", Now: t0.Add(time.Minute), From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1",
		Events: []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: `{"status":"succeeded"}`}},
	})
	require.NoError(t, err)
	require.Equal(t, []ledger.Event{{OperationID: "op-1", Seq: 1, At: t0.Add(time.Minute), Kind: ledger.EventLookup, Actor: "w", Detail: `{"status":"succeeded"}`}},
		mustEvents(t, s, "op-1"))

	rep, err := s.Cleanup(ctx, ledger.CleanupParams{Now: t0.Add(30 * 24 * time.Hour), Retention: 48 * time.Hour, KeyTTL: 24 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, 1, rep.Tombstoned)
	tomb, _, err := s.Get(ctx, "op-1")
	require.NoError(t, err)
	require.True(t, tomb.Tombstone)
	require.Equal(t, "pi_1", tomb.ProviderRef)
}

// Version4Operations are the operations a version 4 build left in the
// ledger, for a store's upgrade test to write with raw SQL, every field
// shown in its column (NULL for a zero or empty one): op-1, a stripe
// charge sent once and waiting for a lookup (unknown, leased to "w" until
// t0+1m); op-2, a stripe refund of payment pi_0 recorded at t0+1s
// (pending); op-3, a stripe charge in manual_review since t0+2s ("amount
// mismatch"); op-4, a stripe charge that succeeded at t0+1s.
func Version4Operations(t0 time.Time) []ledger.Operation {
	row := func(op ledger.NewOperation, status ledger.Status, created time.Time) ledger.Operation {
		return ledger.Operation{
			ID: op.ID, Key: op.Key, Provider: op.Provider, Kind: op.Kind, References: op.References, Fingerprint: op.Fingerprint,
			Request: op.Request, PaymentRef: op.PaymentRef, Status: status, KeyTTL: op.KeyTTL, CreatedAt: created, UpdatedAt: created,
		}
	}
	refund := newOpFor("op-2", "stripe", "refund")
	refund.PaymentRef = "pi_0"
	op1 := row(NewOp("op-1"), ledger.StatusUnknown, t0)
	op1.Attempts, op1.WindowStart, op1.KeyExpiresAt = 1, t0, t0.Add(keyTTL)
	op1.LeaseOwner, op1.LeaseExpiresAt, op1.NextCheckAt, op1.UpdatedAt = "w", t0.Add(time.Minute), t0.Add(time.Minute), t0.Add(time.Second)
	op2 := row(refund, ledger.StatusPending, t0.Add(time.Second))
	op2.NextCheckAt = op2.CreatedAt
	op3 := row(NewOp("op-3"), ledger.StatusManualReview, t0)
	op3.ReviewReason, op3.ReviewAt, op3.UpdatedAt = "amount mismatch", t0.Add(2*time.Second), t0.Add(2*time.Second)
	op4 := row(NewOp("op-4"), ledger.StatusSucceeded, t0)
	op4.Attempts, op4.WindowStart, op4.KeyExpiresAt = 1, t0, t0.Add(keyTTL)
	op4.ProviderRef, op4.FinishedAt, op4.UpdatedAt = "pi_4", t0.Add(time.Second), t0.Add(time.Second)
	return []ledger.Operation{op1, op2, op3, op4}
}

// RequireUpgradedFromVersion4 checks a store just migrated from schema
// version 4 that held Version4Operations(t0): it reads them as they were,
// Stats counts them (the open-work index of version 5 was built over the
// rows already there), and the writes that follow keep Stats right.
func RequireUpgradedFromVersion4(t *testing.T, s ledger.Store, t0 time.Time) {
	t.Helper()
	for _, want := range Version4Operations(t0) {
		if want.ReviewReason != "" {
			want.ReviewCode = ledger.ReviewCodeOther // migration 010, from a reason of no known prefix
		}
		got, _ := mustGet(t, s, want.ID)
		require.Equal(t, canon(want), canon(got), "operation %s of version 4", want.ID)
	}
	charge := func(st ledger.Status, n int64) ledger.StatusCount {
		return ledger.StatusCount{Provider: "stripe", Kind: "charge", Status: st, Count: n}
	}
	// want is the ledger's Stats with one open charge besides the one in
	// review (count and oldest) and succeeded charges.
	want := func(open ledger.StatusCount, since time.Time, id string, succeeded int64) ledger.Stats {
		return ledger.Stats{
			Open: []ledger.StatusCount{open, charge(ledger.StatusManualReview, 1),
				{Provider: "stripe", Kind: "refund", Status: ledger.StatusPending, Count: 1}},
			Oldest: []ledger.OldestOpen{
				{Provider: "stripe", Kind: "charge", Status: open.Status, Since: since, OperationID: id},
				{Provider: "stripe", Kind: "charge", Status: ledger.StatusManualReview, Since: t0.Add(2 * time.Second), OperationID: "op-3"},
				{Provider: "stripe", Kind: "refund", Status: ledger.StatusPending, Since: t0.Add(time.Second), OperationID: "op-2"},
			},
			Reviews:   []ledger.ReasonCount{{Provider: "stripe", Kind: "charge", Code: ledger.ReviewCodeOther, Reason: "amount mismatch", Count: 1}},
			Consumers: []ledger.ConsumerLag{}, Findings: []ledger.FindingCount{},
			Settled: []ledger.StatusCount{charge(ledger.StatusSucceeded, succeeded)},
		}
	}
	require.Equal(t, want(charge(ledger.StatusUnknown, 1), t0, "op-1", 1), mustStats(t, s, true))

	now := t0.Add(30 * time.Second)
	mustFinish(t, s, ledger.FinishParams{ID: "op-1", Owner: "w", Now: now, From: ledger.StatusUnknown, To: ledger.StatusSucceeded, ProviderRef: "pi_1"})
	mustCreate(t, s, NewOp("op-5"), now)
	require.Equal(t, want(charge(ledger.StatusPending, 1), now, "op-5", 2), mustStats(t, s, true))

	// The settlement feed (version 6) starts at the upgrade: what happened
	// before has no entries, what happens after has.
	require.Equal(t, []feedStep{{"op-1", ledger.StatusUnknown, ledger.StatusSucceeded}, {"op-5", "", ledger.StatusPending}},
		stepsOf(feedWait(t, s, "", 10, 2)))
}

// Version9Operations are the operations a version 9 build left in the
// ledger, for a store's upgrade test to write with raw SQL (as
// Version4Operations): charges in manual_review since t0+1s, each with a
// reason that build wrote, and what migration 010 must make of it as
// ReviewCode; rv-settled, a charge that succeeded after a review (its
// reason kept as history); rv-none, a pending charge with no reason.
func Version9Operations(t0 time.Time) []ledger.Operation {
	reasons := []struct {
		reason string
		code   ledger.ReviewCode
	}{
		{"key window passed with the outcome unknown", ledger.ReviewCodeWindowPassed},
		{ledger.ReasonDuplicated + ": an earlier key generation's object succeeded, pi_9", ledger.ReviewCodeDuplicated},
		{"provider still processing after the configured age", ledger.ReviewCodeProcessing},
		{"provider holds this key with other parameters", ledger.ReviewCodeKeyMismatch},
		{ledger.ReasonContradicted + ": the event's object has amount 999, not 1000", ledger.ReviewCodeContradicted},
		{ledger.ReasonWebhookContradiction + ": charge.dispute.created (fraudulent)", ledger.ReviewCodeWebhookContradiction},
		{"stored request unreadable: json: cannot unmarshal", ledger.ReviewCodeRequestUnreadable},
		{"amount mismatch", ledger.ReviewCodeOther},
		// Only a prefix of the texts that carry a detail counts: the fixed
		// texts must match whole.
		{"key window passed with the outcome unknown, said the operator", ledger.ReviewCodeOther},
	}
	var ops []ledger.Operation
	for i, r := range reasons {
		n := NewOp(fmt.Sprintf("rv-%d", i))
		ops = append(ops, ledger.Operation{
			ID: n.ID, Key: n.Key, Provider: n.Provider, Kind: n.Kind, References: n.References, Fingerprint: n.Fingerprint,
			Request: n.Request, Status: ledger.StatusManualReview, KeyTTL: n.KeyTTL, ReviewCode: r.code, ReviewReason: r.reason,
			ReviewAt: t0.Add(time.Second), CreatedAt: t0, UpdatedAt: t0.Add(time.Second),
		})
	}
	settled, none := NewOp("rv-settled"), NewOp("rv-none")
	ops = append(ops, ledger.Operation{
		ID: settled.ID, Key: settled.Key, Provider: settled.Provider, Kind: settled.Kind, References: settled.References,
		Fingerprint: settled.Fingerprint, Request: settled.Request, Status: ledger.StatusSucceeded, KeyTTL: settled.KeyTTL,
		ProviderRef: "pi_s", ReviewCode: ledger.ReviewCodeDuplicated, ReviewReason: ledger.ReasonDuplicated + ": two objects",
		ReviewAt: t0.Add(time.Second), CreatedAt: t0, UpdatedAt: t0.Add(2 * time.Second), FinishedAt: t0.Add(2 * time.Second),
	}, ledger.Operation{
		ID: none.ID, Key: none.Key, Provider: none.Provider, Kind: none.Kind, References: none.References, Fingerprint: none.Fingerprint,
		Request: none.Request, Status: ledger.StatusPending, KeyTTL: none.KeyTTL, NextCheckAt: t0, CreatedAt: t0, UpdatedAt: t0,
	})
	return ops
}

// RequireUpgradedFromVersion9 checks a store just migrated from schema
// version 9 that held Version9Operations(t0), written without their
// ReviewCode (version 9 had no such column): each reads back with the code
// migration 010 gave it from its reason, ListReview filters by it, Stats
// counts by it, and the feed entries the version 9 triggers wrote carry it
// too.
func RequireUpgradedFromVersion9(t *testing.T, s ledger.Store, t0 time.Time) {
	t.Helper()
	ops := Version9Operations(t0)
	codeOf := map[string]ledger.ReviewCode{}
	for _, want := range ops {
		got, _ := mustGet(t, s, want.ID)
		require.Equal(t, canon(want), canon(got), "operation %s of version 9 (reason %q)", want.ID, want.ReviewReason)
		codeOf[want.ID] = want.ReviewCode
	}
	dup, err := s.ListReview(t.Context(), ledger.ReviewFilter{Code: ledger.ReviewCodeDuplicated})
	require.NoError(t, err)
	require.Equal(t, []string{"rv-1"}, ids(dup), "ListReview by code: the settled one is not in review")
	other, err := s.ListReview(t.Context(), ledger.ReviewFilter{Code: ledger.ReviewCodeOther})
	require.NoError(t, err)
	require.Equal(t, []string{"rv-7", "rv-8"}, ids(other))
	for _, rc := range mustStats(t, s, false).Reviews {
		require.NotEmpty(t, rc.Code, "Stats counts reason %q by its code", rc.Reason)
	}
	// The version 9 triggers wrote an entry for each insert (its creation,
	// pending, with the reason of an operation inserted in review); each
	// with a reason now carries its code.
	entries := feedWait(t, s, "", 100, len(ops))
	for _, e := range entries {
		if e.ReviewReason != "" {
			require.Equal(t, codeOf[e.OperationID], e.ReviewCode, "feed entry of %s", e.OperationID)
		} else {
			require.Empty(t, e.ReviewCode)
		}
	}
}

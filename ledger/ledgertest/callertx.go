package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// CallerTx is a transaction the application opened on the store's database,
// which the store's CreateOrGetTx joins (its parameter type differs between
// stores, so the store's test adapts it).
type CallerTx interface {
	// CreateOrGet calls the store's CreateOrGetTx in this transaction.
	CreateOrGet(ctx context.Context, n ledger.NewOperation, now time.Time) (ledger.Operation, bool, error)
	// InsertOrder writes a row of the application's business table, orders.
	InsertOrder(ctx context.Context, id string, amount int) error
	// RequireUsable fails t when the transaction can no longer run
	// statements (a store's own check beyond InsertOrder working, e.g. that
	// PostgreSQL did not abort it).
	RequireUsable(t *testing.T)
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// TxHarness is what a store with CreateOrGetTx gives RunCreateOrGetTx for one
// subtest.
type TxHarness struct {
	// Store is a fresh, migrated, empty store.
	Store ledger.Store
	// Begin begins a transaction of the application's on Store's database,
	// where an orders(id, amount) table exists.
	Begin func(t *testing.T) CallerTx
	// CreateOrGetNilTx calls the store's CreateOrGetTx with a nil
	// transaction.
	CreateOrGetNilTx func(ctx context.Context, n ledger.NewOperation, now time.Time) error
	// Orders counts the committed rows of orders.
	Orders func(t *testing.T) int
	// Operations counts the rows of payonce_operations, read directly.
	Operations func(t *testing.T) int
	// WritesRunBesideTx is true when the store's own writes run while the
	// caller's transaction is open (PostgreSQL's row locks), false when they
	// wait for it to end (SQLite's one write lock per file).
	WritesRunBesideTx bool
}

// RunCreateOrGetTx runs the suite of CreateOrGetTx, the call that records an
// operation in the application's own transaction. Subtests run in parallel,
// each with the harness newHarness returns.
func RunCreateOrGetTx(t *testing.T, newHarness func(t *testing.T) *TxHarness) {
	t.Helper()
	for _, c := range []struct {
		name string
		run  func(t *testing.T, h *TxHarness)
	}{
		{"CommitRecordsDueOperation", testTxCommit},
		{"RollbackRecordsNothing", testTxRollback},
		{"MismatchLeavesTxUsable", testTxMismatch},
		{"TombstoneAnswers", testTxTombstone},
		{"RecordsPaymentRef", testTxPaymentRef},
		{"FeedAfterCommit", testFeedTxCommit},
		{"FeedNotSkippedPastOpenTx", testFeedNotSkipped},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newHarness(t))
		})
	}
}

func testTxCommit(t *testing.T, h *TxHarness) {
	ctx, s := t.Context(), h.Store
	tx := h.Begin(t)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	require.NoError(t, tx.InsertOrder(ctx, "order-1", 1000))
	got, created, err := tx.CreateOrGet(ctx, NewOp("op-1"), base)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, ledger.StatusPending, got.Status)
	require.Equal(t, base, got.NextCheckAt, "due at once for background work")

	// Invisible to others (and not waited for) before the commit.
	_, _, err = s.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	if h.WritesRunBesideTx {
		require.Empty(t, mustClaimDue(t, s, ledger.ClaimDueParams{Owner: "reconciler", Now: base, LeaseUntil: at(time.Minute), Limit: 10}))
	}

	// In the same transaction, the operation is found again.
	again, created, err := tx.CreateOrGet(ctx, NewOp("op-1"), at(time.Second))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, got, again)
	require.NoError(t, tx.Commit(ctx))

	stored, atts := mustGet(t, s, "op-1")
	require.Equal(t, got, stored)
	require.Empty(t, atts)
	require.Equal(t, 1, h.Orders(t))
	due := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: "reconciler", Now: base, LeaseUntil: at(time.Minute), Limit: 10})
	require.Len(t, due, 1)
	require.Equal(t, "op-1", due[0].ID)
}

func testTxRollback(t *testing.T, h *TxHarness) {
	ctx, s := t.Context(), h.Store
	tx := h.Begin(t)
	require.NoError(t, tx.InsertOrder(ctx, "order-1", 1000))
	_, created, err := tx.CreateOrGet(ctx, NewOp("op-1"), base)
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, tx.Rollback(ctx))

	_, _, err = s.Get(ctx, "op-1")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.Zero(t, h.Orders(t))
	due := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: "reconciler", Now: at(time.Hour), LeaseUntil: at(2 * time.Hour), Limit: 10})
	require.Empty(t, due, "nothing to send")
	_, created, err = s.CreateOrGet(ctx, NewOp("op-1"), base)
	require.NoError(t, err)
	require.True(t, created, "the ID was never recorded")
}

// A mismatch is found after statements that cannot fail on it: the
// database does not abort the caller's transaction, which goes on and
// commits.
func testTxMismatch(t *testing.T, h *TxHarness) {
	ctx, s := t.Context(), h.Store
	op := NewOp("op-1")
	mustCreate(t, s, op, base)
	before, _ := mustGet(t, s, op.ID)

	tx := h.Begin(t)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	require.NoError(t, tx.InsertOrder(ctx, "order-1", 1000))
	_, _, err := tx.CreateOrGet(ctx, OtherRequest(op), base)
	require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
	keyTaken := NewOp("op-2")
	keyTaken.Generation, keyTaken.Key = 1, op.Key
	_, _, err = tx.CreateOrGet(ctx, keyTaken, base)
	require.ErrorIs(t, err, ledger.ErrKeyConflict)
	for _, bad := range []func() error{
		func() error { return h.CreateOrGetNilTx(ctx, NewOp("op-3"), base) },
		func() error { _, _, err := tx.CreateOrGet(ctx, NewOp("op-3"), time.Time{}); return err },
		func() error { _, _, err := tx.CreateOrGet(ctx, ledger.NewOperation{ID: "op-3"}, base); return err },
	} {
		require.ErrorIs(t, bad(), ledger.ErrInvalid)
	}
	tx.RequireUsable(t)

	require.NoError(t, tx.InsertOrder(ctx, "order-2", 2000))
	got, created, err := tx.CreateOrGet(ctx, op, at(time.Second))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, before, got)
	_, created, err = tx.CreateOrGet(ctx, NewOp("op-3"), base)
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, tx.Commit(ctx))

	require.Equal(t, 2, h.Orders(t))
	after, _ := mustGet(t, s, op.ID)
	require.Equal(t, before, after, "the recorded operation is unchanged")
	_, _, err = s.Get(ctx, "op-2")
	require.ErrorIs(t, err, ledger.ErrNotFound)
	mustGet(t, s, "op-3")
}

// An ID Cleanup removed gets its tombstone, nothing is written, and the
// transaction stays usable.
func testTxTombstone(t *testing.T, h *TxHarness) {
	ctx, s := t.Context(), h.Store
	op := NewOp("op-1")
	_, a := mustStart(t, s, op, ownerA, base)
	mustFinish(t, s, ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: at(time.Minute), From: ledger.StatusInFlight, To: ledger.StatusSucceeded,
		Attempt: &ledger.AttemptOutcome{Number: a.Number, Class: ledger.OutcomeSuccess}, ProviderRef: "pi_op-1", Result: []byte(`{"status":"succeeded"}`)})
	cleanedAt := at(30 * 24 * time.Hour)
	_, err := s.Cleanup(ctx, ledger.CleanupParams{Now: cleanedAt, Retention: 48 * time.Hour, KeyTTL: keyTTL})
	require.NoError(t, err)

	tx := h.Begin(t)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	got, created, err := tx.CreateOrGet(ctx, op, cleanedAt.Add(time.Hour))
	require.NoError(t, err)
	require.False(t, created)
	require.True(t, got.Tombstone)
	require.Equal(t, "pi_op-1", got.ProviderRef)
	_, _, err = tx.CreateOrGet(ctx, OtherRequest(op), cleanedAt.Add(time.Hour))
	require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
	tx.RequireUsable(t)
	require.NoError(t, tx.InsertOrder(ctx, "order-1", 1000), "the transaction is usable")
	require.NoError(t, tx.Commit(ctx))

	require.Zero(t, h.Operations(t), "nothing was recreated")
	require.Equal(t, 1, h.Orders(t))
}

// The payment reference of an operation recorded in the caller's
// transaction is kept, so that a webhook naming only the payment finds it.
func testTxPaymentRef(t *testing.T, h *TxHarness) {
	ctx, s := t.Context(), h.Store
	op := refundOf("op-refund", "pi_1")
	tx := h.Begin(t)
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	got, created, err := tx.CreateOrGet(ctx, op, base)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, "pi_1", got.PaymentRef)
	require.NoError(t, tx.Commit(ctx))
	stored, _ := mustGet(t, s, op.ID)
	require.Equal(t, "pi_1", stored.PaymentRef)
	mustRecordNew(t, s, evt("evt_1", "refund.updated", ledger.WebhookTarget{Kind: "refund", PaymentRef: "pi_1", Effect: ledger.EffectSucceeded}),
		at(time.Minute), outcome(0, op.ID, ledger.WebhookNudged, ledger.StatusPending, ledger.StatusPending))
}

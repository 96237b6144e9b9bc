package payonce_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	notFoundAndInvalid := fmt.Errorf("%w (%w)", &payonce.ValidationError{Field: "PaymentRef", Problem: "x"}, payonce.ErrNotFound)
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 200},
		{"not found", fmt.Errorf("wrapped: %w", ledger.ErrNotFound), 404},
		{"not found and invalid", notFoundAndInvalid, 404},
		{"invalid", &payonce.ValidationError{Field: "Amount", Problem: "x"}, 400},
		{"ledger invalid", fmt.Errorf("ledger: %w", ledger.ErrInvalid), 400},
		{"fingerprint", fmt.Errorf("x: %w", ledger.ErrFingerprintMismatch), 422},
		{"in progress", payonce.ErrInProgress, 409},
		{"not settled", fmt.Errorf("%w: the charge is unknown", payonce.ErrNotSettled), 409},
		{"resend refused", payonce.ErrResendRefused, 409},
		{"declined", &payonce.DeclinedError{Provider: "stripe", Code: "card_declined", HTTPStatus: 402}, 402},
		{"declined, no status", &payonce.DeclinedError{Provider: "stripe"}, 402},
		{"our credentials", fmt.Errorf("x: %w", &payonce.DeclinedError{Provider: "stripe", HTTPStatus: 401}), 502},
		{"forbidden", &payonce.DeclinedError{Provider: "stripe", HTTPStatus: 403}, 502},
		{"unknown", payonce.ErrOutcomeUnknown, 202},
		{"unavailable", payonce.ErrProviderUnavailable, 202},
		{"review", fmt.Errorf("%w: duplicated", payonce.ErrManualReview), 202},
		{"ledger down", errors.New("payonce: recording the operation failed, nothing was sent: connection refused"), 500},
		{"deadline", context.DeadlineExceeded, 500},
		{"store conflict", ledger.ErrStateConflict, 500},
	} {
		require.Equal(t, c.want, payonce.HTTPStatus(c.err), c.name)
	}
}

// The root package's sentinels are the ledger's, so an error from a store
// used directly (CreateOrGetTx in the caller's transaction) matches them.
func TestSentinelsAreTheLedgers(t *testing.T) {
	t.Parallel()
	for _, p := range [][2]error{
		{payonce.ErrFingerprintMismatch, ledger.ErrFingerprintMismatch},
		{payonce.ErrInProgress, ledger.ErrInProgress},
		{payonce.ErrInvalid, ledger.ErrInvalid},
		{payonce.ErrNotFound, ledger.ErrNotFound},
	} {
		require.Same(t, p[1], p[0])
	}
	var ve error = &ledger.ValidationError{Field: "f", Problem: "p"}
	require.ErrorIs(t, ve, payonce.ErrInvalid)
}

// callerTxStore is a store's CreateOrGetTx in a transaction the test opens,
// as an application records an operation with its own rows.
type callerTxStore func(ctx context.Context, op ledger.NewOperation, now time.Time) error

// checkCreateOrGetTxErrors records a charge in a caller's transaction, then
// the same order with another amount and an operation with no time: the
// errors match payonce's sentinels and map to their HTTP statuses.
func checkCreateOrGetTxErrors(t *testing.T, b *bundle, createTx callerTxStore) {
	t.Helper()
	op, err := b.client.PrepareCharge(b.ctx, charge("order-tx", 1200))
	require.NoError(t, err)
	require.NoError(t, createTx(b.ctx, op, t0))

	other, err := b.client.PrepareCharge(b.ctx, charge("order-tx", 1300))
	require.NoError(t, err)
	err = createTx(b.ctx, other, t0)
	require.ErrorIs(t, err, payonce.ErrFingerprintMismatch)
	require.Equal(t, 422, payonce.HTTPStatus(err))

	err = createTx(b.ctx, op, time.Time{})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.Equal(t, 400, payonce.HTTPStatus(err))

	// The same errors through the client.
	_, err = b.client.Charge(b.ctx, charge("order-tx", 1300))
	require.ErrorIs(t, err, payonce.ErrFingerprintMismatch)
}

func TestCreateOrGetTxErrorsMatchPostgres(t *testing.T) {
	t.Parallel()
	b, pool, store := setupPGPool(t, setupOpts{})
	checkCreateOrGetTxErrors(t, b, func(ctx context.Context, op ledger.NewOperation, now time.Time) error {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		if _, _, err := store.CreateOrGetTx(ctx, tx, op, now); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
}

func TestCreateOrGetTxErrorsMatchSQLite(t *testing.T) {
	t.Parallel()
	u := url.URL{Scheme: "file", Path: filepath.Join(t.TempDir(), "ledger.db"),
		RawQuery: "_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)"}
	db, err := sql.Open("sqlite", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	store, err := ledgersqlite.New(db, ledgersqlite.Config{})
	require.NoError(t, err)
	require.NoError(t, store.Migrate(context.Background()))
	b := setupOn(t, setupOpts{}, store)
	checkCreateOrGetTxErrors(t, b, func(ctx context.Context, op ledger.NewOperation, now time.Time) error {
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		if _, _, err := store.CreateOrGetTx(ctx, tx, op, now); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// Record in the transaction, then charge: when a reconciler claimed the
// recorded operation first, the call returns ErrInProgress and sends
// nothing. HTTPStatus answers 409 for it, as for a second request arriving
// while the first is processed; the handler that recorded the operation
// itself knows its request was accepted and answers 202 (HTTPStatus's doc
// and the README say so).
func TestRecordThenChargeFindsTheReconcilerFirst(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		p := charge("order-record-then-charge", 700)
		op, err := b.client.PrepareCharge(b.ctx, p)
		require.NoError(t, err)
		_, err = b.client.Enqueue(b.ctx, op) // as CreateOrGetTx records it in the caller's transaction
		require.NoError(t, err)
		now := b.clock.Now()
		claimed, err := b.store.ClaimDue(b.ctx, ledger.ClaimDueParams{Owner: "a-reconciler", Now: now,
			LeaseUntil: now.Add(time.Minute), Limit: 10})
		require.NoError(t, err)
		require.Len(t, claimed, 1, "an operation recorded this way is due at once")

		res, err := b.client.Charge(b.ctx, p)
		require.ErrorIs(t, err, payonce.ErrInProgress)
		require.Equal(t, payonce.ResultInProgress, res.Status)
		require.Equal(t, op.ID, res.OperationID)
		require.Equal(t, 409, payonce.HTTPStatus(err))
		require.Zero(t, requestsTo(b), "the call sent nothing: the reconciler holds the operation")
	})
}

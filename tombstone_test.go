package payonce_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// TestContradictionAfterCleanupReachesReview: a charge settled and cleaned
// up long ago is charged back. The provider's event reopens it in review
// (not only an inbox entry and a log line while the ledger says
// succeeded): a late duplicate call reports the review, the operator can
// resolve it, but never resend it, since Cleanup deleted its request.
func TestContradictionAfterCleanupReachesReview(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		first := chargedAndCleanedUp(t, b, "order-chargeback", 4200)
		r := newReconciler(t, b, nil)

		ev := payonce.WebhookEvent{ID: "evt_cb", Type: "charge.dispute.created", OccurredAt: b.clock.Now(), Targets: []payonce.WebhookTarget{{
			Kind: payonce.KindCharge, OperationID: first.OperationID, ProviderRef: first.ProviderRef,
			State: payonce.LookupSucceeded, Reversal: true, Code: "fraudulent"}}}
		wrep, err := b.client.RecordWebhook(b.ctx, ev)
		require.NoError(t, err)
		require.Equal(t, []ledger.WebhookOutcome{{OperationID: first.OperationID, Disposition: ledger.WebhookContradiction,
			From: ledger.StatusSucceeded, To: ledger.StatusManualReview}}, wrep.Outcomes)

		posts := postsOf(b)
		again, err := b.client.Charge(b.ctx, charge("order-chargeback", 4200))
		require.ErrorIs(t, err, payonce.ErrManualReview, "a late duplicate call sees the review")
		require.Equal(t, ledger.ReviewCodeWebhookContradiction, again.ReviewCode, again.ReviewReason)
		require.Equal(t, posts, postsOf(b), "nothing is sent")

		resend := payonce.ResolveParams{OperationID: first.OperationID, Outcome: ledger.ResolveResend, Actor: "alice", Note: "try again"}
		_, err = b.client.Resolve(b.ctx, resend)
		require.ErrorIs(t, err, payonce.ErrResendRefused)
		require.ErrorContains(t, err, "no request to send")
		require.ErrorContains(t, err, "resolve as succeeded or failed")
		_, err = payonce.Resolve(b.ctx, b.store, resend)
		require.ErrorIs(t, err, payonce.ErrResendRefused)
		require.Equal(t, posts, postsOf(b))

		op, err := b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: first.OperationID, Outcome: ledger.ResolveSucceeded,
			Actor: "alice", Note: "dispute lost, money kept by the bank: the charge stands", ProviderRef: first.ProviderRef, Now: b.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, ledger.StatusSucceeded, op.Status)

		b.clock.Advance(31 * 24 * time.Hour)
		rep, err := r.Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Tombstoned, "Cleanup makes a tombstone again")
		got, _, err := b.store.Get(b.ctx, first.OperationID)
		require.NoError(t, err)
		require.True(t, got.Tombstone)
	})
}

// chargedAndCleanedUp charges order and lets Cleanup turn the settled
// charge into a tombstone a month later.
func chargedAndCleanedUp(t *testing.T, b *bundle, order string, amount int64) payonce.Result {
	t.Helper()
	first, err := b.client.Charge(b.ctx, charge(order, amount))
	require.NoError(t, err)
	require.NotEmpty(t, first.ProviderRef)
	b.clock.Advance(31 * 24 * time.Hour)
	rep, err := newReconciler(t, b, nil).Cleanup(b.ctx, 30*24*time.Hour, 100)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Tombstoned)
	return first
}

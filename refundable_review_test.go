package payonce_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
)

// A refund in another currency than the charge's is refused before it is
// sent: Stripe's refund carries no currency (the adapter sends amount and
// payment_intent), so 1000 "EUR" would move 1000 of the charge's USD
// cents and only the answer's check would notice, after the money moved.
func TestRefundInAnotherCurrencyIsRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, err := b.client.Charge(b.ctx, charge("order-cur", 5000))
	require.NoError(t, err)
	posts := refundPosts(b)
	p := refund("order-cur", 1, 1000)
	p.Currency = "EUR"
	_, err = b.client.Refund(b.ctx, p)
	ve := testkit.RequireInvalid(t, err, "Currency")
	require.Contains(t, ve.Problem, "USD")
	_, err = b.client.PrepareRefund(b.ctx, p)
	testkit.RequireInvalid(t, err, "Currency")
	require.Equal(t, posts, refundPosts(b), "nothing sent")
	_, err = b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-cur", RefundSeq: 1})
	require.ErrorIs(t, err, payonce.ErrNotFound, "nothing recorded")

	// The charge's currency is still accepted, and a refund of the rest
	// (no Amount, no Currency) too.
	_, err = b.client.Refund(b.ctx, refund("order-cur", 1, 1000))
	require.NoError(t, err)
	_, err = b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-cur", RefundSeq: 2})
	require.NoError(t, err)
}

// A manual-capture charge whose capture has not settled (recorded,
// pending) is not "nothing captured, 400": Refundable documents
// ErrNotSettled for it, and a refund asked meanwhile must be told to come
// back, not that it asks for too much.
func TestRefundWhileCaptureUnsettledIsNotSettled(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	auth := charge("order-cap", 5000)
	auth.CaptureManual = true
	_, err := b.client.Charge(b.ctx, auth)
	require.NoError(t, err)
	op, err := b.client.PrepareCapture(b.ctx, payonce.CaptureParams{OrderID: "order-cap"})
	require.NoError(t, err)
	_, err = b.client.Enqueue(b.ctx, op)
	require.NoError(t, err)

	_, err = b.client.Refundable(b.ctx, "order-cap")
	require.ErrorIs(t, err, payonce.ErrNotSettled)
	_, err = b.client.Refund(b.ctx, refund("order-cap", 1, 100))
	require.ErrorIs(t, err, payonce.ErrNotSettled)
	require.NotErrorIs(t, err, payonce.ErrInvalid)
}

// A repeat of a recorded refund with another amount is the fingerprint's
// business, never the amount check's, whether or not it is the last one.
func TestRefundRepeatWithOtherAmountIsFingerprintMismatch(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, err := b.client.Charge(b.ctx, charge("order-fp", 5000))
	require.NoError(t, err)
	_, err = b.client.Refund(b.ctx, refund("order-fp", 1, 1000))
	require.NoError(t, err)
	_, err = b.client.Refund(b.ctx, refund("order-fp", 2, 4000))
	require.NoError(t, err)
	for _, seq := range []int{1, 2} {
		_, err = b.client.Refund(b.ctx, refund("order-fp", seq, 4500))
		require.ErrorIs(t, err, payonce.ErrFingerprintMismatch, "refund %d", seq)
		_, err = b.client.Refund(b.ctx, refund("order-fp", seq, 0))
		require.ErrorIs(t, err, payonce.ErrFingerprintMismatch, "refund %d", seq)
	}
	got, err := b.client.Refundable(b.ctx, "order-fp")
	require.NoError(t, err)
	require.Equal(t, 3, got.NextSeq)
	require.Zero(t, got.Remaining)
}

package stripe_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

// TestAuditCaptureCancelRefundCombos: manual-capture charges captured in
// full or in part, canceled, and refunded in part, in full without an
// amount, audit clean: a capture and a cancel act on the charge's
// PaymentIntent (recorded under its id) and are neither missing at Stripe
// nor a status or amount difference.
func TestAuditCaptureCancelRefundCombos(t *testing.T) {
	t.Parallel()
	e := newAuditEnv(t)
	charge := func(order string, amount int64) payonce.Result {
		t.Helper()
		r, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "USD", PaymentMethod: "pm_card_visa", CaptureManual: true})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, r.Status)
		e.clock.Advance(time.Second)
		return r
	}
	ok := func(r payonce.Result, err error) {
		t.Helper()
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, r.Status)
		e.clock.Advance(time.Second)
	}
	charge("order-full", 1000)
	ok(e.client.Capture(e.ctx, payonce.CaptureParams{OrderID: "order-full"}))
	ok(e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-full", RefundSeq: 1}))

	charge("order-part", 2000)
	ok(e.client.Capture(e.ctx, payonce.CaptureParams{OrderID: "order-part", Amount: 1500, Currency: "USD"}))
	ok(e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-part", RefundSeq: 1, Amount: 500, Currency: "USD"}))
	ok(e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-part", RefundSeq: 2}))

	charge("order-cancel", 3000)
	ok(e.client.Cancel(e.ctx, payonce.CancelParams{OrderID: "order-cancel"}))

	charge("order-held", 4000)

	rep := e.audit(t)
	require.False(t, rep.Differs(), "%+v", rep.Differences)
	require.Equal(t, 0, rep.Unattributed)
	require.Equal(t, 5+4, rep.Objects, "5 PaymentIntents, 4 Refunds")
}

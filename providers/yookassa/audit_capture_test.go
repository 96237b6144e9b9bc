package yookassa_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/yookassa"
)

// TestE2EAuditPartialCapture: YooKassa shows a partially captured payment
// with the captured amount, not the authorized one. A charge of 10,000
// captured for 6,000 through payonce is no difference; the same payment
// showing 6,000 with no capture recorded (or a capture of another amount)
// is contradicted.
func TestE2EAuditPartialCapture(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := mocks.NewManualClock(start)
	env := providertest.YooKassaEnv(t, providertest.Options{Clock: clock})
	fake := env.Fake.(*mocks.YooKassa)
	w := &waits{}
	yookassa.SetWait(env.Provider.(*yookassa.Provider), w.wait)
	client, _ := testkit.NewClient(t, env.Provider, clock.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)

	charge := func(order string, amount int64) payonce.Result {
		t.Helper()
		p := rub(order, amount)
		p.CaptureManual = true
		r, err := client.Charge(ctx, p)
		require.NoError(t, err)
		clock.Advance(time.Minute)
		return r
	}
	charge("order-partial", 10000)
	_, err := client.Capture(ctx, payonce.CaptureParams{OrderID: "order-partial", Amount: 6000, Currency: "RUB"})
	require.NoError(t, err)
	charge("order-full", 20000)
	_, err = client.Capture(ctx, payonce.CaptureParams{OrderID: "order-full"})
	require.NoError(t, err)
	// A partial capture followed by a partial refund: the payment still
	// shows the captured amount.
	charge("order-partial-refunded", 30000)
	_, err = client.Capture(ctx, payonce.CaptureParams{OrderID: "order-partial-refunded", Amount: 25000, Currency: "RUB"})
	require.NoError(t, err)
	_, err = client.Refund(ctx, payonce.RefundParams{OrderID: "order-partial-refunded", RefundSeq: 1, Amount: 5000, Currency: "RUB"})
	require.NoError(t, err)
	clock.Advance(time.Minute)

	audit := func() payonce.AuditReport {
		t.Helper()
		rep, err := client.Audit(ctx, payonce.AuditParams{From: start, To: clock.Now().Add(time.Hour), DryRun: true})
		require.NoError(t, err)
		return rep
	}
	rep := audit()
	require.False(t, rep.Differs(), "%+v", rep.Differences)
	require.Equal(t, 4, rep.Objects, "3 payments, 1 refund")

	// A payment of the same operation showing less than asked, without a
	// capture of that amount in the ledger, is still contradicted: the
	// rule accepts the amount a recorded capture took, nothing else.
	held := charge("order-held", 40000)
	_, err = fake.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 39000, Currency: "RUB", Status: "succeeded", Created: clock.Now(),
		Metadata: map[string]string{yookassa.MetaOperation: held.OperationID, yookassa.MetaKey: held.OperationID, yookassa.MetaKind: "charge"}})
	require.NoError(t, err)
	rep = audit()
	require.Equal(t, 1, rep.Counts[ledger.FindingContradicted], "%+v", rep.Differences)
	require.Equal(t, 1, rep.Counts[ledger.FindingDuplicated], "%+v", rep.Differences)
	require.Equal(t, 2, total(rep.Counts), "%+v", rep.Differences)
}

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

// TestE2EAudit drives Client.Audit against the fake YooKassa: payonce's own
// charges, captures, cancels and refunds audit clean; then each difference
// made out of band at YooKassa is found, as its class and only it.
func TestE2EAudit(t *testing.T) {
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

	step := func() { clock.Advance(time.Minute) }
	charge := func(order string, amount int64, manual bool) payonce.Result {
		t.Helper()
		p := rub(order, amount)
		p.CaptureManual = manual
		r, err := client.Charge(ctx, p)
		require.NoError(t, err)
		step()
		return r
	}
	paid := charge("order-paid", 120000, false)
	captured := charge("order-captured", 50000, true)
	_, err := client.Capture(ctx, payonce.CaptureParams{OrderID: "order-captured"})
	require.NoError(t, err)
	charge("order-canceled", 30000, true)
	_, err = client.Cancel(ctx, payonce.CancelParams{OrderID: "order-canceled"})
	require.NoError(t, err)
	held := charge("order-held", 40000, true)
	declined := rub("order-declined", 1000)
	declined.PaymentMethod = mocks.YooKassaMethodInsufficientFunds
	_, err = client.Charge(ctx, declined)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	refund, err := client.Refund(ctx, payonce.RefundParams{OrderID: "order-paid", RefundSeq: 1, Amount: 20000, Currency: "RUB"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, refund.Status)
	// A refund that waits at YooKassa: the ledger does not know yet.
	slow := rub("order-slow", 10000)
	slow.PaymentMethod = mocks.YooKassaMethodRefundPending
	_, err = client.Charge(ctx, slow)
	require.NoError(t, err)
	pendingRefund, err := client.Refund(ctx, payonce.RefundParams{OrderID: "order-slow", RefundSeq: 1, Amount: 10000, Currency: "RUB"})
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, payonce.ResultUnknown, pendingRefund.Status)
	step()

	to := clock.Now().Add(time.Hour)
	audit := func() payonce.AuditReport {
		t.Helper()
		before := fake.Truth().Requests
		rep, err := client.Audit(ctx, payonce.AuditParams{From: start, To: to, DryRun: true})
		require.NoError(t, err)
		for route, n := range fake.Truth().Requests {
			if n != before[route] {
				require.Contains(t, []string{"GET /v3/payments", "GET /v3/refunds"}, route, "the audit sent %s", route)
			}
		}
		return rep
	}
	only := func(rep payonce.AuditReport, class ledger.FindingClass, opID string) {
		t.Helper()
		require.Equal(t, map[ledger.FindingClass]int{class: 1}, nonZero(rep.Counts), "%+v", rep.Differences)
		require.Len(t, rep.Differences, 1)
		require.Equal(t, class, rep.Differences[0].Class)
		require.Equal(t, opID, rep.Differences[0].OperationID)
	}

	// Clean: everything payonce did is as the ledger says. The payment
	// made in the Merchant Profile (no metadata) is counted, not a
	// difference.
	_, err = fake.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 99900, Currency: "RUB", Created: clock.Now()})
	require.NoError(t, err)
	rep := audit()
	require.False(t, rep.Differs(), "%+v", rep.Differences)
	require.Equal(t, 1, rep.Unattributed)
	require.Equal(t, 9, rep.Objects, "7 payments (one unattributed), 2 refunds")

	// The pending refund ends canceled and no notification comes: the
	// ledger still waits for it (unknown), which the reconciler settles;
	// not the audit's to judge.
	truth := fake.Truth()
	var pendingID string
	for _, r := range truth.Refunds {
		if r.Status == "pending" {
			pendingID = r.ID
		}
	}
	require.NotEmpty(t, pendingID)
	require.NoError(t, fake.CancelRefund(pendingID))
	require.False(t, audit().Differs())

	// YooKassa releases the authorization payonce neither captured nor
	// canceled: the ledger's charge succeeded, the hold is gone.
	require.NoError(t, fake.ExpireAuthorization(held.ProviderRef))
	only(audit(), ledger.FindingStatusDiffers, held.OperationID)
	require.Equal(t, payonce.AuditCanceled, audit().Differences[0].ProviderState)

	// Each further difference adds its own class and nothing else: the
	// counts before it are the base.
	base := audit().Counts

	// A payment naming an operation the ledger never recorded.
	_, err = fake.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 5000, Currency: "RUB", Created: clock.Now(),
		Metadata: map[string]string{yookassa.MetaOperation: "op-nobody-sent", yookassa.MetaKind: "charge"}})
	require.NoError(t, err)
	rep = audit()
	require.Equal(t, 1, rep.Counts[ledger.FindingUnknownToLedger]-base[ledger.FindingUnknownToLedger])
	require.Equal(t, total(base)+1, total(rep.Counts))

	// A second payment of the paid order's operation, same amount and key:
	// money taken twice.
	_, err = fake.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 120000, Currency: "RUB", Created: clock.Now(),
		Metadata: map[string]string{yookassa.MetaOperation: paid.OperationID, yookassa.MetaKey: paid.OperationID, yookassa.MetaKind: "charge"}})
	require.NoError(t, err)
	rep2 := audit()
	require.Equal(t, 1, rep2.Counts[ledger.FindingDuplicated])
	require.Equal(t, total(rep.Counts)+1, total(rep2.Counts), "%+v", rep2.Differences)

	// A declined payment naming the captured order's operation with another
	// amount: it moved nothing, but it is not what the operation asked.
	_, err = fake.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 50001, Currency: "RUB", Status: "canceled", Created: clock.Now(),
		Metadata: map[string]string{yookassa.MetaOperation: captured.OperationID, yookassa.MetaKey: captured.OperationID}})
	require.NoError(t, err)
	rep3 := audit()
	require.Equal(t, 1, rep3.Counts[ledger.FindingContradicted])
	require.Equal(t, total(rep2.Counts)+1, total(rep3.Counts), "%+v", rep3.Differences)

	// A refund of the refund operation's payment, with its marker and
	// another amount: a second refund that took effect, and not the amount
	// asked for.
	_, err = fake.InjectRefund(paid.ProviderRef, 100, yookassa.RefundMarker+refund.OperationID)
	require.NoError(t, err)
	rep4 := audit()
	require.Equal(t, 2, rep4.Counts[ledger.FindingDuplicated])
	require.Equal(t, 2, rep4.Counts[ledger.FindingContradicted])
	require.Equal(t, total(rep3.Counts)+2, total(rep4.Counts), "%+v", rep4.Differences)

	// Recorded, not dry: the findings are in the ledger.
	rep5, err := client.Audit(ctx, payonce.AuditParams{From: start, To: to})
	require.NoError(t, err)
	require.Equal(t, rep4.Counts, rep5.Counts)
}

func nonZero(m map[ledger.FindingClass]int) map[ledger.FindingClass]int {
	out := map[ledger.FindingClass]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func total(m map[ledger.FindingClass]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

package paypal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// TestE2EAudit drives Client.Audit against the fake PayPal's transaction
// search (lagged 3 hours, as PayPal's): payonce's own charges, captures,
// cancels and refunds audit clean; then an order made out of band, a
// duplicate under an earlier request id and a refund that fails later are
// each found, as their class and only they.
func TestE2EAudit(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := mocks.NewManualClock(start)
	fake := mocks.NewPayPal(mocks.PayPalOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(fake.Close)
	p, err := paypal.New(paypal.Config{ClientID: fake.ClientID(), ClientSecret: fake.ClientSecret(), BaseURL: fake.URL(),
		Now: clock.Now, AuditInterval: time.Nanosecond})
	require.NoError(t, err)
	client, _ := testkit.NewClient(t, p, clock.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)

	step := func() { clock.Advance(time.Minute) }
	charge := func(order, method string, amount int64, manual bool) payonce.Result {
		t.Helper()
		r, err := client.Charge(ctx, payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "USD",
			PaymentMethod: method, CaptureManual: manual})
		require.NoError(t, err)
		step()
		return r
	}
	paid := charge("order-paid", mocks.PayPalVaultApproved, 12000, false)
	wallet := charge("order-wallet", mocks.PayPalWalletApproved, 3000, false)
	charge("order-captured", mocks.PayPalVaultApproved, 5000, true)
	_, err = client.Capture(ctx, payonce.CaptureParams{OrderID: "order-captured"})
	require.NoError(t, err)
	step()
	charge("order-canceled", mocks.PayPalVaultApproved, 3000, true)
	_, err = client.Cancel(ctx, payonce.CancelParams{OrderID: "order-canceled"})
	require.NoError(t, err)
	step()
	_, err = client.Charge(ctx, payonce.ChargeParams{OrderID: "order-declined", Amount: 1000, Currency: "USD",
		PaymentMethod: mocks.PayPalVaultDeclined})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	step()
	refund, err := client.Refund(ctx, payonce.RefundParams{OrderID: "order-paid", RefundSeq: 1, Amount: 2000, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, refund.Status)
	step()

	period := [2]time.Time{start, start.Add(time.Hour)}
	audit := func(from, to time.Time) payonce.AuditReport {
		t.Helper()
		before := fake.Truth().Requests
		rep, err := client.Audit(ctx, payonce.AuditParams{From: from, To: to, DryRun: true})
		require.NoError(t, err)
		for route, n := range fake.Truth().Requests {
			if n != before[route] {
				require.Contains(t, []string{"GET /v1/reporting/transactions", "POST /v1/oauth2/token"}, route, "the audit sent %s", route)
			}
		}
		return rep
	}

	// Inside the search's 3 h lag (with the 10 min margin) the audit is
	// refused, not reported clean.
	clock.Set(start.Add(4 * time.Hour))
	_, err = client.Audit(ctx, payonce.AuditParams{From: period[0], To: period[1], DryRun: true})
	require.ErrorContains(t, err, "listing may lag 3h0m0s behind (plus a 10m0s margin)", "refused by the client before anything is listed (AuditInfo.Lag)")

	// Clean: everything payonce did is as the ledger says.
	clock.Set(start.Add(5 * time.Hour))
	rep := audit(period[0], period[1])
	require.False(t, rep.Differs(), "%+v", rep.Differences)
	require.Equal(t, 0, rep.Unattributed)
	require.Equal(t, 5, rep.Objects, "3 captures (one of an authorization), a void and a refund: %+v", rep)

	// An order made out of band, naming an operation the ledger never
	// recorded.
	nobody, err := payonce.Identity{Provider: "paypal", Kind: payonce.KindCharge, References: []string{"order-nobody"}}.OperationID()
	require.NoError(t, err)
	_, _, err = fake.InjectPayment(mocks.PayPalPaymentSpec{Amount: 700, Currency: "USD", CustomID: nobody, InvoiceID: nobody,
		Created: start.Add(30 * time.Minute)})
	require.NoError(t, err)
	rep = audit(period[0], period[1])
	require.Equal(t, map[ledger.FindingClass]int{ledger.FindingUnknownToLedger: 1}, auditNonZero(rep.Counts), "%+v", rep.Differences)
	require.Equal(t, nobody, rep.Differences[0].OperationID)

	// A second order for the paid charge's operation under an earlier
	// request id (an earlier key generation that went through after all).
	earlier, err := payonce.Identity{Provider: "paypal", Kind: payonce.KindCharge, References: []string{"order-paid"}, Generation: 1}.Key()
	require.NoError(t, err)
	_, _, err = fake.InjectPayment(mocks.PayPalPaymentSpec{Amount: 12000, Currency: "USD", CustomID: paid.OperationID,
		InvoiceID: earlier, RequestID: earlier, Created: start.Add(31 * time.Minute)})
	require.NoError(t, err)
	rep = audit(period[0], period[1])
	require.Equal(t, map[ledger.FindingClass]int{ledger.FindingUnknownToLedger: 1, ledger.FindingDuplicated: 1},
		auditNonZero(rep.Counts), "%+v", rep.Differences)

	// The refund fails days later (here: now), with no webhook: the money
	// came back. The audit of the period of its failure finds it, once
	// PayPal's search shows it.
	failedAt := clock.Now()
	require.NoError(t, fake.FailRefund(refund.ProviderRef))
	clock.Set(failedAt.Add(5 * time.Hour))
	rep = audit(failedAt.Add(-time.Hour), failedAt.Add(time.Hour))
	require.Equal(t, map[ledger.FindingClass]int{ledger.FindingStatusDiffers: 1}, auditNonZero(rep.Counts), "%+v", rep.Differences)
	require.Equal(t, refund.OperationID, rep.Differences[0].OperationID)
	require.Equal(t, payonce.AuditReversed, rep.Differences[0].ProviderState)

	// PayPal reverses the wallet charge's capture after settlement (a
	// payer's dispute): the ledger still says succeeded.
	reversedAt := clock.Now()
	_, err = fake.ReverseCapture(wallet.ProviderRef)
	require.NoError(t, err)
	clock.Set(reversedAt.Add(5 * time.Hour))
	rep = audit(reversedAt.Add(-time.Hour), reversedAt.Add(time.Hour))
	require.Equal(t, map[ledger.FindingClass]int{ledger.FindingStatusDiffers: 1}, auditNonZero(rep.Counts), "%+v", rep.Differences)
	require.Equal(t, wallet.OperationID, rep.Differences[0].OperationID)
	require.Equal(t, payonce.AuditReversed, rep.Differences[0].ProviderState)

	// Recorded, not dry: the findings are in the ledger.
	rep2, err := client.Audit(ctx, payonce.AuditParams{From: period[0], To: period[1]})
	require.NoError(t, err)
	require.Equal(t, 2, auditTotal(rep2.Counts))
}

func auditNonZero(m map[ledger.FindingClass]int) map[ledger.FindingClass]int {
	out := map[ledger.FindingClass]int{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

func auditTotal(m map[ledger.FindingClass]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestListObjectsPagesTheFake lists more rows than one page holds from the
// fake PayPal: every row once, in pages of 500, GETs only.
func TestListObjectsPagesTheFake(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	clock := mocks.NewManualClock(start)
	fake := mocks.NewPayPal(mocks.PayPalOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(fake.Close)
	p, err := paypal.New(paypal.Config{ClientID: fake.ClientID(), ClientSecret: fake.ClientSecret(), BaseURL: fake.URL(),
		Now: clock.Now, AuditInterval: time.Nanosecond})
	require.NoError(t, err)
	const n = 1001
	for i := range n {
		_, _, err := fake.InjectPayment(mocks.PayPalPaymentSpec{Amount: int64(100 + i), Currency: "EUR",
			CustomID: fmt.Sprintf("shop-order-%d", i), Created: start.Add(time.Duration(i) * time.Second)})
		require.NoError(t, err)
	}
	clock.Set(start.Add(5 * time.Hour))
	seen := map[string]payonce.AuditObject{}
	err = p.ListObjects(context.Background(), fake.Client(), payonce.AuditQuery{From: start, To: start.Add(time.Hour)},
		func(o payonce.AuditObject) error {
			if _, dup := seen[o.Ref]; dup {
				return fmt.Errorf("%s yielded twice", o.Ref)
			}
			seen[o.Ref] = o
			return nil
		})
	require.NoError(t, err)
	require.Len(t, seen, n)
	for _, o := range seen {
		require.Empty(t, o.OperationID, "a shop's own custom_id is not a payonce operation id")
		require.Equal(t, payonce.AuditSucceeded, o.State)
		require.Equal(t, "EUR", o.Currency)
	}
	tr := fake.Truth()
	require.Equal(t, 3, tr.Requests["GET /v1/reporting/transactions"], "%v", tr.Requests)
	for route := range tr.Requests {
		require.Contains(t, []string{"GET /v1/reporting/transactions", "POST /v1/oauth2/token"}, route)
	}
}

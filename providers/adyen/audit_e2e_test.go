package adyen_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// TestAuditSettlementReportEndToEnd: a real payonce.Client on a SQLite
// ledger and the fake Adyen. payonce charges, captures and refunds; the
// fake's settlement report of the period holds no difference. Then, out
// of band: a payment under a payonce-shaped reference no operation has
// (unknown_to_ledger), a payment under a reference of the merchant's own
// (unattributed: counted, not a difference), a refund returned and a
// chargeback (status_differs each): the audit finds each and only them.
func TestAuditSettlementReportEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	from := e.clock.Now()
	auto, err := e.client.Charge(e.ctx, eur("order-a", 1999, false))
	require.NoError(t, err)
	manual, err := e.client.Charge(e.ctx, eur("order-b", 1000, true))
	require.NoError(t, err)
	capture := payonce.CaptureParams{OrderID: "order-b", Amount: 1000, Currency: "EUR", PaymentRef: manual.ProviderRef}
	_, err = e.client.Capture(e.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	refund := payonce.RefundParams{OrderID: "order-a", RefundSeq: 1, Amount: 400, Currency: "EUR", PaymentRef: auto.ProviderRef}
	_, err = e.client.Refund(e.ctx, refund)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	e.deliver(t)
	_, err = e.client.Capture(e.ctx, capture)
	require.NoError(t, err)
	ref, err := e.client.Refund(e.ctx, refund)
	require.NoError(t, err)
	e.clock.Advance(time.Minute)
	to := e.clock.Now()

	audit := func() payonce.AuditReport {
		t.Helper()
		var report bytes.Buffer
		require.NoError(t, e.fake.SettlementDetailsReport(&report, from.Add(-time.Hour), to.Add(time.Hour)))
		posts := e.fake.Truth().Requests
		rep, err := e.client.Audit(e.ctx, payonce.AuditParams{From: from, To: to, Report: &report, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, posts, e.fake.Truth().Requests, "an audit sends nothing to Adyen")
		return rep
	}
	rep := audit()
	require.False(t, rep.Differs(), "%+v", rep.Differences)
	require.Equal(t, 3, rep.Objects, "the charge settled at once, the capture and the refund")
	require.Zero(t, rep.Unattributed)

	// A nil report is refused, saying what to pass.
	_, err = e.client.Audit(e.ctx, payonce.AuditParams{From: from, To: to, DryRun: true})
	require.ErrorContains(t, err, "Report")

	// Out of band, inside the period.
	e.clock.Set(from.Add(30 * time.Second))
	orphanOp := "6a1f2b3c-4d5e-5f60-8a7b-8c9d0e1f2a3b" // the form of a payonce operation id; the ledger has none
	orphan := e.fake.InjectPayment(orphanOp, 5000, "EUR")
	e.fake.InjectPayment("order-from-the-customer-area", 2500, "EUR")
	require.NoError(t, e.fake.ReverseRefund(ref.ProviderRef))
	e.clock.Advance(time.Second)
	require.NoError(t, e.fake.Chargeback(auto.ProviderRef))

	rep = audit()
	got := map[string]payonce.AuditDifference{}
	for _, d := range rep.Differences {
		got[d.OperationID] = d
	}
	require.Len(t, got, 3, "%+v", rep.Differences)
	require.Equal(t, ledger.FindingUnknownToLedger, got[orphanOp].Class)
	require.Equal(t, orphan, got[orphanOp].ProviderRef)
	require.Equal(t, ledger.FindingStatusDiffers, got[ref.OperationID].Class)
	require.Equal(t, payonce.AuditReversed, got[ref.OperationID].ProviderState)
	// The charge's Settled and Chargeback rows are one payment, charged
	// back: not two objects that took effect.
	require.Equal(t, ledger.FindingStatusDiffers, got[auto.OperationID].Class)
	require.Equal(t, payonce.AuditReversed, got[auto.OperationID].ProviderState)
	require.Equal(t, 1, rep.Unattributed, "the payment under the merchant's own reference")
}

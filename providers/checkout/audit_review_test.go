package checkout_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/providertest"
)

// TestAuditByLookupCapturesVoidsRefunds: the audit by lookup (searching by
// reference: LookupQuery.Audit) over what payonce does every day: a
// partial capture then a refund of what remains (no amount), a
// manual-capture charge voided, a partial refund then a full one of an
// automatic charge, and a refund Checkout.com refused. The payment's
// Capture, Void and Refund actions share neither the charge's reference
// nor each other's: none is a second payment (duplicated), none another
// status or amount. A clean period reports nothing.
func TestAuditByLookupCapturesVoidsRefunds(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.CheckoutEnv)
	from := e.Clock.Now()

	partial := usd("order-partial", 1000)
	partial.CaptureManual = true
	pch, err := e.Client.Charge(e.Ctx, partial)
	require.NoError(t, err)
	capt, err := settle(t, e.Client.Capture, e.Ctx, payonce.CaptureParams{OrderID: "order-partial", Amount: 600, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, capt.Status)
	rest, err := settle(t, e.Client.Refund, e.Ctx, payonce.RefundParams{OrderID: "order-partial", RefundSeq: 1, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, rest.Status)

	voided := usd("order-void", 700)
	voided.CaptureManual = true
	vch, err := e.Client.Charge(e.Ctx, voided)
	require.NoError(t, err)
	void, err := settle(t, e.Client.Cancel, e.Ctx, payonce.CancelParams{OrderID: "order-void"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, void.Status)

	auto, err := e.Client.Charge(e.Ctx, usd("order-auto", 1000))
	require.NoError(t, err)
	r1, err := settle(t, e.Client.Refund, e.Ctx, payonce.RefundParams{OrderID: "order-auto", RefundSeq: 1, Amount: 250, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r1.Status)
	over, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-auto", RefundSeq: 2, Amount: 900, Currency: "USD", PaymentRef: auto.ProviderRef})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, over.Status)
	r3, err := settle(t, e.Client.Refund, e.Ctx, payonce.RefundParams{OrderID: "order-auto", RefundSeq: 3, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r3.Status)

	truth := e.Fake.Truth()
	for ref, status := range map[string]string{pch.ProviderRef: "Refunded", vch.ProviderRef: "Voided", auto.ProviderRef: "Refunded"} {
		p, ok := truth.Payment(ref)
		require.True(t, ok)
		require.Equal(t, status, p.Status, ref)
	}
	e.Clock.Advance(time.Hour) // past SettleLag: a "not found" would count
	rep, err := e.Client.Audit(e.Ctx, payonce.AuditParams{From: from, To: e.Clock.Now(), DryRun: true})
	require.NoError(t, err)
	require.False(t, rep.Differs(), "%+v", rep.Differences)
	require.Equal(t, 9, rep.Operations, "three charges, a capture, a void, four refunds (one refused)")
	require.Equal(t, map[ledger.FindingClass]int{}, nonZero(rep.Counts))
}

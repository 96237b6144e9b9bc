package crashsuite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// The suite's final audit (auditFake), fast: a fake Stripe in this process
// and a PostgreSQL ledger. A clean run (charges, a decline, a refund)
// reports no difference; a PaymentIntent injected out of band with
// payonce's metadata of an operation the ledger never had is a violation
// of kind "audit: unknown_to_ledger", counted in the summary; and an
// audit that cannot list is an error, not a clean result.
func TestAuditFakeCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, store := testkit.NewPGLedger(t, ctx)
	fake := mocks.NewStripe(mocks.StripeOptions{})
	t.Cleanup(fake.Close)
	from := time.Now().Add(-time.Minute)

	client, err := auditClient(stripeCrash(), store, fake.URL(), fake.APIKey())
	require.NoError(t, err)
	for i := range 3 {
		order := fmt.Sprintf("audit-check-%d", i)
		_, err := client.Charge(ctx, payonce.ChargeParams{OrderID: order, Amount: 1000 + int64(i), Currency: "USD", PaymentMethod: "pm_card_visa"})
		require.NoError(t, err)
	}
	_, err = client.Refund(ctx, payonce.RefundParams{OrderID: "audit-check-0", RefundSeq: 1, Amount: 500, Currency: "USD"})
	require.NoError(t, err)
	_, err = client.Charge(ctx, payonce.ChargeParams{OrderID: "audit-check-declined", Amount: 700, Currency: "USD", PaymentMethod: "pm_card_chargeDeclined"})
	require.ErrorIs(t, err, payonce.ErrDeclined)

	var clean violations
	sum, err := auditFake(ctx, stripeCrash(), store, fake.URL(), fake.APIKey(), from, time.Now().Add(time.Minute), &clean)
	require.NoError(t, err)
	require.Empty(t, clean.order, "%v", clean.byKind)
	require.True(t, sum.ran)
	require.Equal(t, 5, sum.operations)
	require.Equal(t, 5, sum.objects, "4 PaymentIntents and a refund")
	require.Zero(t, sum.differ)
	require.Contains(t, sum.line(), "audit{objects=5 operations=5 unattributed=0 differences=0 {contradicted=0 duplicated=0 missing_at_provider=0 status_differs=0 unknown_to_ledger=0}}")

	orphanOp := "00000000-0000-5000-8000-00000000c0de"
	orphan, err := fake.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 4200, Currency: "usd", Metadata: map[string]string{
		stripe.MetaOperation: orphanOp, stripe.MetaKey: orphanOp, stripe.MetaKind: string(payonce.KindCharge)}})
	require.NoError(t, err)
	var bad violations
	sum, err = auditFake(ctx, stripeCrash(), store, fake.URL(), fake.APIKey(), from, time.Now().Add(time.Minute), &bad)
	require.NoError(t, err)
	require.Equal(t, []string{"audit: unknown_to_ledger"}, bad.order)
	require.Len(t, bad.byKind["audit: unknown_to_ledger"], 1)
	require.Contains(t, bad.byKind["audit: unknown_to_ledger"][0], orphanOp)
	require.Contains(t, bad.byKind["audit: unknown_to_ledger"][0], orphan)
	require.Equal(t, 1, sum.differ)
	require.Equal(t, 1, sum.counts[ledger.FindingUnknownToLedger])
	require.Contains(t, sum.line(), "differences=1 {")
	require.Contains(t, sum.line(), " unknown_to_ledger=1}")
	// Recorded in the ledger, as "payonce audit findings" would list it.
	fs, err := store.ListFindings(ctx, ledger.FindingFilter{Class: ledger.FindingUnknownToLedger})
	require.NoError(t, err)
	require.Len(t, fs, 1)
	require.Equal(t, orphan, fs[0].ProviderRef)

	// The wrong credentials: the listing fails, and so does the check.
	var none violations
	sum, err = auditFake(ctx, stripeCrash(), store, fake.URL(), "sk_test_wrong", from, time.Now().Add(time.Minute), &none)
	require.Error(t, err)
	require.False(t, sum.ran)
	require.Empty(t, none.order)
	require.Equal(t, "audit{not_run}", sum.line())
	require.True(t, strings.HasPrefix(err.Error(), "auditing the fake: "), "%v", err)
}

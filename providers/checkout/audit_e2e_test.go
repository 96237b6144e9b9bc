package checkout_test

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
)

// outOfBand makes a payment on the fake as another system would: its own
// idempotency key, the given reference (a payonce operation id) and amount.
func outOfBand(t *testing.T, e *testkit.E2E, reference string, amount int64) {
	t.Helper()
	ck := e.Fake.(*mocks.Checkout)
	body := fmt.Sprintf(`{"source":{"type":"id","id":%q},"amount":%d,"currency":"USD","reference":%q}`, mocks.CheckoutSourceApproved, amount, reference)
	req, err := http.NewRequestWithContext(e.Ctx, http.MethodPost, ck.URL()+"/payments", bytes.NewBufferString(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ck.SecretKey())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cko-Idempotency-Key", fmt.Sprintf("out-of-band-%s-%d", reference, amount))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
}

// classes counts an audit's differences by class, and by operation.
func classes(rep payonce.AuditReport) map[string]ledger.FindingClass {
	out := map[string]ledger.FindingClass{}
	for _, d := range rep.Differences {
		out[d.OperationID] = d.Class
	}
	return out
}

// TestAuditByLookupEndToEnd: a real payonce.Client on a SQLite ledger and
// the fake Checkout.com. A clean period has no difference; then, out of
// band, a second payment under a charge's reference (duplicated), a
// capture declined after it was accepted (status differs) and, under the
// reference of a charge payonce saw declined, a payment of another amount
// (contradicted): the audit finds each of them, and only them, without a
// single POST.
func TestAuditByLookupEndToEnd(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.CheckoutEnv)
	ck := e.Fake.(*mocks.Checkout)
	from := e.Clock.Now()

	dup, err := e.Client.Charge(e.Ctx, usd("order-dup", 1000))
	require.NoError(t, err)
	auth := usd("order-cap", 2000)
	auth.CaptureManual = true
	ch, err := e.Client.Charge(e.Ctx, auth)
	require.NoError(t, err)
	capture, err := settle(t, e.Client.Capture, e.Ctx, payonce.CaptureParams{OrderID: "order-cap", Amount: 2000, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, capture.Status)
	refund, err := settle(t, e.Client.Refund, e.Ctx, payonce.RefundParams{OrderID: "order-dup", RefundSeq: 1, Amount: 300, Currency: "USD"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, refund.Status)
	declined := usd("order-declined", 500)
	declined.PaymentMethod = mocks.CheckoutSourceInsufficientFunds
	dec, err := e.Client.Charge(e.Ctx, declined)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	e.Clock.Advance(time.Hour) // past SettleLag: a "not found" would count
	to := e.Clock.Now()

	audit := func() payonce.AuditReport {
		t.Helper()
		posts := e.Posts("/payments") + e.Posts("/payments/{id}/captures") + e.Posts("/payments/{id}/refunds") + e.Posts("/payments/{id}/voids")
		rep, err := e.Client.Audit(e.Ctx, payonce.AuditParams{From: from, To: to, DryRun: true})
		require.NoError(t, err)
		require.Equal(t, posts, e.Posts("/payments")+e.Posts("/payments/{id}/captures")+e.Posts("/payments/{id}/refunds")+e.Posts("/payments/{id}/voids"),
			"an audit sends no POST")
		require.Equal(t, "ledger → provider: each operation of the period by its reference (GET /payments?reference= and the payment's actions); provider → ledger not covered: Checkout.com lists no payments by date", rep.Directions)
		return rep
	}
	rep := audit()
	require.False(t, rep.Differs(), "a clean period: %+v", rep.Differences)
	require.Equal(t, 5, rep.Operations, "two charges, a capture, a refund and the declined charge")

	// Out of band.
	outOfBand(t, e, dup.OperationID, 1000)
	acts := ck.Truth()
	var captureAction string
	for _, p := range acts.Payments {
		if p.ID == ch.ProviderRef {
			captureAction = capture.ProviderRef
		}
	}
	require.NotEmpty(t, captureAction)
	require.NoError(t, ck.DeclineCapture(captureAction))
	outOfBand(t, e, dec.OperationID, 777)

	rep = audit()
	require.Equal(t, map[string]ledger.FindingClass{
		dup.OperationID:     ledger.FindingDuplicated,
		capture.OperationID: ledger.FindingStatusDiffers,
		dec.OperationID:     ledger.FindingContradicted,
	}, classes(rep), "%+v", rep.Differences)
	require.Equal(t, map[ledger.FindingClass]int{ledger.FindingDuplicated: 1, ledger.FindingStatusDiffers: 1, ledger.FindingContradicted: 1},
		nonZero(rep.Counts))
	// Recorded (not a dry run), the three are the open findings, once
	// each, however often the audit runs.
	for range 2 {
		_, err = e.Client.Audit(e.Ctx, payonce.AuditParams{From: from, To: to})
		require.NoError(t, err)
	}
	findings, err := e.Store.ListFindings(e.Ctx, ledger.FindingFilter{Provider: "checkout", Open: true})
	require.NoError(t, err)
	recorded := map[string]ledger.FindingClass{}
	for _, f := range findings {
		recorded[f.OperationID] = f.Class
		require.Equal(t, 2, f.Times)
	}
	require.Equal(t, classes(rep), recorded)
	// The ledger is untouched: the capture is still succeeded there.
	op, _, err := e.Store.Get(e.Ctx, capture.OperationID)
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
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

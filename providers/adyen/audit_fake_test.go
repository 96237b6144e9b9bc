package adyen_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
)

// TestAuditReadsTheFakesReport: payonce charges, captures and refunds on
// the fake; the fake writes its Settlement details report in Adyen's
// format, and the adapter reads back exactly the settled objects, each
// naming the ledger operation that made it, with its amount in the minor
// units payonce sent; a payment made outside payonce, a chargeback and a
// refund reversed (injected, no webhook) read as what they are.
func TestAuditReadsTheFakesReport(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	start := e.clock.Now()

	auto, err := e.client.Charge(e.ctx, eur("order-a", 1999, false))
	require.NoError(t, err)
	e.clock.Advance(time.Minute)
	manual, err := e.client.Charge(e.ctx, eur("order-b", 1000, true))
	require.NoError(t, err)
	e.clock.Advance(time.Minute)
	capture := payonce.CaptureParams{OrderID: "order-b", Amount: 1000, Currency: "EUR", PaymentRef: manual.ProviderRef}
	_, err = e.client.Capture(e.ctx, capture)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	e.clock.Advance(time.Minute)
	refund := payonce.RefundParams{OrderID: "order-a", RefundSeq: 1, Amount: 400, Currency: "EUR", PaymentRef: auto.ProviderRef}
	_, err = e.client.Refund(e.ctx, refund)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	declined := eur("order-c", 700, false)
	declined.PaymentMethod = mocks.AdyenMethodRefused
	_, err = e.client.Charge(e.ctx, declined)
	require.Error(t, err)
	e.deliver(t)
	cap, err := e.client.Capture(e.ctx, capture)
	require.NoError(t, err)
	ref, err := e.client.Refund(e.ctx, refund)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, ref.Status)

	e.clock.Advance(time.Hour)
	foreign := e.fake.InjectPayment("order-from-the-customer-area", 2500, "EUR")
	require.NoError(t, e.fake.Chargeback(manual.ProviderRef))
	require.NoError(t, e.fake.ReverseRefund(ref.ProviderRef))
	require.Error(t, e.fake.Chargeback("NOSUCHPAYMENT000"))
	require.Error(t, e.fake.ReverseRefund(auto.ProviderRef), "a payment is not a refund")
	end := e.clock.Now().Add(time.Second)

	var report bytes.Buffer
	require.NoError(t, e.fake.SettlementDetailsReport(&report, start, end))
	p := provider(t)
	var got []payonce.AuditObject
	require.NoError(t, p.ListObjects(e.ctx, nil, payonce.AuditQuery{From: start, To: end, Report: bytes.NewReader(report.Bytes())},
		func(o payonce.AuditObject) error { got = append(got, o); return nil }))

	captured := start.Add(2 * time.Minute)
	later := start.Add(3*time.Minute + time.Hour)
	want := []payonce.AuditObject{
		{Ref: auto.ProviderRef, OperationID: auto.OperationID, Kind: payonce.KindCharge, State: payonce.AuditSucceeded, Status: "Settled", Amount: 1999, Currency: "EUR", Created: start},
		{Ref: cap.ProviderRef, OperationID: cap.OperationID, Kind: payonce.KindCapture, State: payonce.AuditSucceeded, Status: "Settled", Amount: 1000, Currency: "EUR", Created: captured, PaymentRef: manual.ProviderRef},
		{Ref: ref.ProviderRef, OperationID: ref.OperationID, Kind: payonce.KindRefund, State: payonce.AuditSucceeded, Status: "Refunded", Amount: 400, Currency: "EUR", Created: captured.Add(time.Minute), PaymentRef: auto.ProviderRef},
		{Ref: foreign, OperationID: "", Kind: payonce.KindCharge, State: payonce.AuditSucceeded, Status: "Settled", Amount: 2500, Currency: "EUR", Created: later},
		{Ref: manual.ProviderRef, OperationID: manual.OperationID, Kind: payonce.KindCharge, State: payonce.AuditReversed, Status: "Chargeback", Amount: 1000, Currency: "EUR", Created: later},
		{Ref: ref.ProviderRef, OperationID: ref.OperationID, Kind: payonce.KindRefund, State: payonce.AuditReversed, Status: "RefundedReversed", Amount: 400, Currency: "EUR", Created: later, PaymentRef: auto.ProviderRef},
	}
	sameObjects(t, want, got)

	// Every object payonce made names an operation the ledger holds, of
	// the same kind.
	for _, o := range got[:3] {
		op, _, err := e.store.Get(e.ctx, o.OperationID)
		require.NoError(t, err, o.OperationID)
		require.Equal(t, string(o.Kind), op.Kind)
	}

	// The period is [from, to): a report of the first minute holds only
	// the first charge.
	report.Reset()
	require.NoError(t, e.fake.SettlementDetailsReport(&report, start, start.Add(time.Minute)))
	got = got[:0]
	require.NoError(t, p.ListObjects(e.ctx, nil, payonce.AuditQuery{From: start, To: start.Add(time.Minute), Report: &report},
		func(o payonce.AuditObject) error { got = append(got, o); return nil }))
	sameObjects(t, want[:1], got)
}

package mocks_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func ppSearchPath(start, end time.Time, extra ...string) string {
	q := url.Values{"start_date": {start.UTC().Format(time.RFC3339)}, "end_date": {end.UTC().Format(time.RFC3339)}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return "/v1/reporting/transactions?" + q.Encode()
}

// Transactions appear only SearchLag (3 h by default) after they happen,
// in pages.
func TestPayPalSearchLagAndPages(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{TokenTTL: ppLongToken})
	o := decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "10.00", "USD", "op-1", "K1", mocks.PayPalVaultApproved), "K1"), 201)
	capID := o.PurchaseUnits[0].Payments.Captures[0].ID
	rf := decode[mocks.PayPalRefund](t, b.c.post("/v2/payments/captures/"+capID+"/refund",
		map[string]any{"amount": map[string]string{"currency_code": "USD", "value": "2.50"}, "custom_id": "rop", "invoice_id": "RK"}, "RK"), 201)
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "1.00", "USD", "dec", "D", mocks.PayPalVaultDeclined), "D"), 201)
	b.clock.Advance(time.Minute)
	decode[mocks.PayPalOrder](t, b.c.post(ppOrders, ppOrderBody("CAPTURE", "3.00", "USD", "op-2", "K2", mocks.PayPalVaultApproved), "K2"), 201)

	from, to := epoch.Add(-time.Hour), epoch.Add(24*time.Hour)
	s := decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(from, to)), 200)
	require.Zero(t, s.TotalItems, "nothing before the lag has passed")
	require.Empty(t, s.TransactionDetails)

	b.clock.Advance(mocks.PayPalSearchLag - time.Minute)
	s = decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(from, to)), 200)
	require.Equal(t, 2, s.TotalItems, "the capture and the refund, not the declined capture nor the later capture")
	c := s.TransactionDetails[0].TransactionInfo
	require.Equal(t, capID, c.TransactionID)
	require.Equal(t, "T0006", c.TransactionEventCode)
	require.Equal(t, "op-1", c.CustomField)
	require.Equal(t, "K1", c.InvoiceID)
	require.Equal(t, "10.00", c.TransactionAmount.Value)
	require.Equal(t, "S", c.TransactionStatus)
	r := s.TransactionDetails[1].TransactionInfo
	require.Equal(t, rf.ID, r.TransactionID)
	require.Equal(t, capID, r.PayPalReferenceID)
	require.Equal(t, "T1107", r.TransactionEventCode)
	require.Equal(t, "-2.50", r.TransactionAmount.Value)
	require.Equal(t, "rop", r.CustomField)

	b.clock.Advance(time.Minute)
	s = decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(from, to, "page_size", "1", "page", "2", "fields", "all")), 200)
	require.Equal(t, 3, s.TotalItems)
	require.Equal(t, 3, s.TotalPages)
	require.Equal(t, 2, s.Page)
	require.Len(t, s.TransactionDetails, 1)
	require.Equal(t, rf.ID, s.TransactionDetails[0].TransactionInfo.TransactionID)
	require.Equal(t, "next", s.Links[1].Rel)
	s = decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(from, to, "page_size", "1", "page", "4")), 200)
	require.Empty(t, s.TransactionDetails)
	s = decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(from, to, "transaction_id", capID)), 200)
	require.Equal(t, 1, s.TotalItems)
	s = decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(epoch.Add(time.Second), to)), 200)
	require.Equal(t, 1, s.TotalItems, "the date range applies")

	for _, path := range []string{
		ppSearchPath(from, from.Add(31*24*time.Hour+time.Second)),
		ppSearchPath(to, from),
		"/v1/reporting/transactions?end_date=" + url.QueryEscape(to.Format(time.RFC3339)),
		ppSearchPath(from, to, "page_size", "501"),
		ppSearchPath(from, to, "page", "0"),
		ppSearchPath(from, to, "fields", "everything"),
	} {
		ppIssue(t, b.c.get(path), 400, "INVALID_REQUEST", "INVALID_PARAMETER_VALUE")
	}
	decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(from, from.Add(31*24*time.Hour))), 200)
}

func TestPayPalSearchShowsOutOfBand(t *testing.T) {
	t.Parallel()
	b := ppSetup(t, mocks.PayPalOptions{SearchLag: time.Nanosecond})
	_, id, err := b.f.InjectPayment(mocks.PayPalPaymentSpec{Amount: 500, Currency: "USD", CustomID: "op", InvoiceID: "K0", RequestID: "K0",
		Created: epoch.Add(-time.Hour)})
	require.NoError(t, err)
	rev, err := b.f.ReverseCapture(id)
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	s := decode[mocks.PayPalSearch](t, b.c.get(ppSearchPath(epoch.Add(-2*time.Hour), epoch.Add(time.Hour))), 200)
	require.Equal(t, 2, s.TotalItems)
	require.Equal(t, id, s.TransactionDetails[0].TransactionInfo.TransactionID)
	require.Equal(t, rev, s.TransactionDetails[1].TransactionInfo.TransactionID)
	require.Equal(t, "T1106", s.TransactionDetails[1].TransactionInfo.TransactionEventCode)
}

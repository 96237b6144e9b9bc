package yookassa_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/yookassa"
)

// The end-to-end tests drive payonce.Client against the fake YooKassa, with
// a SQLite ledger and one manual clock shared by the fake and the client.
// The scenarios every adapter must pass (replay, lost answers, 500s, key in
// use, key reused, declines, refunds, capture and cancel, lags, the key
// window, the soak) are the provider suite's, run by
// TestProviderSuite; the tests here are YooKassa's own.

// TestProviderSuite runs the provider conformance suite against the fake
// (providertest.YooKassaEnv).
func TestProviderSuite(t *testing.T) {
	t.Parallel()
	providertest.Run(t, providertest.YooKassaEnv)
}

func rub(order string, amount int64) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "RUB", PaymentMethod: mocks.YooKassaMethodSucceeds}
}

// YooKassa's own refund rules. Partial refunds, a refund whose answer is
// lost and an over-refund are the provider suite's Refunds scenario.
func TestE2ERefundSpecifics(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, providertest.YooKassaEnv)
	ch, err := e.Client.Charge(e.Ctx, rub("order-r", 100000))
	require.NoError(t, err)

	// Refunds carry no metadata: the operation id goes in the description,
	// which is what a lookup matches.
	r1, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 1, Amount: 30000, Currency: "RUB"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r1.Status)
	truth := e.Fake.Truth()
	require.Len(t, truth.Refunds, 1)
	require.Equal(t, yookassa.RefundMarker+r1.OperationID, truth.Refunds[0].Description)

	// More than what is left: payonce refuses it from the ledger; with
	// PaymentRef (nothing read) YooKassa's invalid_request.
	_, err = e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 2, Amount: 80000, Currency: "RUB"})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	r2, err := e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 2, Amount: 80000, Currency: "RUB", PaymentRef: ch.ProviderRef})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, r2.Status)
	require.Equal(t, "invalid_request", r2.Code)

	// YooKassa has no "refund what remains": the call is refused before
	// anything is recorded.
	_, err = e.Client.Refund(e.Ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 3, Currency: "RUB"})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	id3, err := payonce.Identity{Provider: "yookassa", Kind: payonce.KindRefund, References: []string{"order-r", "3"}}.OperationID()
	require.NoError(t, err)
	_, _, err = e.Store.Get(e.Ctx, id3)
	require.ErrorIs(t, err, ledger.ErrNotFound)
	require.Equal(t, 2, e.Posts("/v3/refunds"))
	require.Equal(t, int64(30000), e.Fake.Truth().TotalRefunded("RUB"))
}

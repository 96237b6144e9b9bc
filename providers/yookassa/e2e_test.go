package yookassa_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/yookassa"
)

// The end-to-end tests drive payonce.Client against the fake YooKassa, with
// a SQLite ledger and one manual clock shared by the fake and the client.

var e2eStart = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const paymentsPath = "/v3/payments"

type e2e struct {
	fake   *mocks.YooKassa
	clock  *mocks.ManualClock
	store  ledger.Store
	client *payonce.Client
	ctx    context.Context
}

func e2eSetup(t *testing.T, fo mocks.YooKassaOptions) *e2e {
	t.Helper()
	clock := mocks.NewManualClock(e2eStart)
	fo.Clock = clock.Now
	fake := mocks.NewYooKassa(fo)
	t.Cleanup(fake.Close)
	psp, err := yookassa.New(yookassa.Config{ShopID: fake.ShopID(), SecretKey: fake.SecretKey(), BaseURL: fake.URL(), Now: clock.Now})
	require.NoError(t, err)
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(context.Background()))
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store, Now: clock.Now,
		// Keep-alives off: a dropped answer must reach the client as a
		// dropped answer.
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: 2 * time.Second,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &e2e{fake: fake, clock: clock, store: store, client: client, ctx: ctx}
}

func rub(order string, amount int64) payonce.ChargeParams {
	return payonce.ChargeParams{OrderID: order, Amount: amount, Currency: "RUB", PaymentMethod: mocks.YooKassaMethodSucceeds}
}

func (e *e2e) posts(path string) int { return e.fake.Truth().Requests["POST "+path] }

func (e *e2e) charges(op string) int { return e.fake.Truth().ChargesBy(yookassa.MetaOperation)[op] }

func (e *e2e) attempts(t *testing.T, id string) (ledger.Operation, []ledger.Attempt) {
	t.Helper()
	op, atts, err := e.store.Get(e.ctx, id)
	require.NoError(t, err)
	return op, atts
}

func TestE2EChargeAndReplay(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.YooKassaOptions{})
	res, err := e.client.Charge(e.ctx, rub("order-1", 120000))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	p, ok := e.fake.Truth().Payment(res.ProviderRef)
	require.True(t, ok)
	require.Equal(t, "succeeded", p.Status)
	require.Equal(t, int64(120000), p.AmountCaptured)
	require.Equal(t, res.OperationID, p.Metadata[yookassa.MetaOperation])
	require.Equal(t, res.Key, p.IdempotencyKey)

	again, err := e.client.Charge(e.ctx, rub("order-1", 120000))
	require.NoError(t, err)
	require.True(t, again.Replayed)
	require.Equal(t, res.ProviderRef, again.ProviderRef)
	require.Equal(t, 1, e.posts(paymentsPath), "a settled operation is answered from the ledger")
	require.Equal(t, 1, e.charges(res.OperationID))
}

func TestE2EDecline(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.YooKassaOptions{})
	params := rub("order-declined", 5000)
	params.PaymentMethod = mocks.YooKassaMethodInsufficientFunds
	res, err := e.client.Charge(e.ctx, params)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	var de *payonce.DeclinedError
	require.True(t, errors.As(err, &de))
	require.Equal(t, "canceled", de.Code)
	require.Equal(t, "insufficient_funds", de.DeclineCode)
	require.NotEmpty(t, de.ProviderRef)
	require.Equal(t, payonce.ResultFailed, res.Status)

	res, err = e.client.Charge(e.ctx, params)
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.True(t, res.Replayed)
	require.Equal(t, 1, e.posts(paymentsPath))
	require.Zero(t, e.charges(res.OperationID))
}

// Answers lost after the money moved: the lookup (payments list matched on
// payonce_op) finds the payment; nothing is sent again.
func TestE2EAnswerLostAfterProcessing(t *testing.T) {
	t.Parallel()
	for _, f := range []mocks.FaultKind{mocks.FaultDropAfterProcessing, mocks.FaultProcessed500, mocks.FaultGatewayAfter502} {
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			e := e2eSetup(t, mocks.YooKassaOptions{})
			e.fake.Script(mocks.Match{Method: "POST", Path: paymentsPath}, f)
			res, err := e.client.Charge(e.ctx, rub("order-"+f.String(), 99900))
			require.NoError(t, err)
			require.Equal(t, payonce.ResultSucceeded, res.Status)
			require.Equal(t, 1, e.charges(res.OperationID))
			require.Equal(t, 1, e.posts(paymentsPath), "found by lookup: never sent again")
			_, atts := e.attempts(t, res.OperationID)
			require.Len(t, atts, 1)
			require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
			require.Equal(t, 1, e.fake.Truth().Faults[f])
		})
	}
}

// A 500 before anything happened: the list says "not found", which counts
// only once the list lag has passed; then the same key is resent and the
// payment is made once.
func TestE2EStored500ResentWithSameKey(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.YooKassaOptions{})
	e.fake.Script(mocks.Match{Method: "POST", Path: paymentsPath}, mocks.FaultStored500)
	res, err := e.client.Charge(e.ctx, rub("order-500", 1000))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "not found proves nothing before the list lag")
	require.Zero(t, e.charges(res.OperationID))

	e.clock.Advance(2 * time.Minute)
	res, err = e.client.Charge(e.ctx, rub("order-500", 1000))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, 1, e.charges(res.OperationID))
	op, atts := e.attempts(t, res.OperationID)
	require.Len(t, atts, 2)
	require.Equal(t, atts[0].Key, atts[1].Key, "a resend carries the same key")
	require.Equal(t, e2eStart, op.WindowStart)
}

// Someone used the operation's key with another body: YooKassa answers
// "Idempotence key duplicated" and the operation goes to review.
func TestE2EKeyDuplicated(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.YooKassaOptions{})
	id, err := payonce.Identity{Provider: "yookassa", Kind: payonce.KindCharge, References: []string{"order-mm"}}.OperationID()
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, e.fake.URL()+paymentsPath, bytes.NewReader([]byte(
		`{"amount":{"value":"1.00","currency":"RUB"},"capture":true,"payment_method_id":"`+mocks.YooKassaMethodSucceeds+`"}`)))
	require.NoError(t, err)
	req.SetBasicAuth(e.fake.ShopID(), e.fake.SecretKey())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotence-Key", id)
	resp, err := e.fake.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()

	res, err := e.client.Charge(e.ctx, rub("order-mm", 1500))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, payonce.ReasonKeyMismatch, res.ReviewReason)
	require.Equal(t, 1, e.fake.Truth().KeyMismatch)
}

func TestE2ERefundAndOverRefund(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.YooKassaOptions{})
	ch, err := e.client.Charge(e.ctx, rub("order-r", 100000))
	require.NoError(t, err)

	r1, err := e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 1, Amount: 30000, Currency: "RUB"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r1.Status)

	// A refund whose answer is lost is found in the payment's refunds by
	// the operation id in its description.
	e.fake.Script(mocks.Match{Method: "POST", Path: "/v3/refunds"}, mocks.FaultDropAfterProcessing)
	r2, err := e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 2, Amount: 20000, Currency: "RUB"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, r2.Status)

	// More than what is left: refused, nothing moves.
	r3, err := e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 3, Amount: 60000, Currency: "RUB"})
	require.ErrorIs(t, err, payonce.ErrDeclined)
	require.Equal(t, payonce.ResultFailed, r3.Status)
	require.Equal(t, "invalid_request", r3.Code)

	// YooKassa has no "refund what remains": the call is refused before
	// anything is recorded.
	_, err = e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-r", RefundSeq: 4, Currency: "RUB"})
	require.ErrorIs(t, err, payonce.ErrInvalid)

	truth := e.fake.Truth()
	require.Len(t, truth.Refunds, 2)
	require.Equal(t, int64(50000), truth.TotalRefunded("RUB"))
	require.Equal(t, 3, e.posts("/v3/refunds"))
	p, _ := truth.Payment(ch.ProviderRef)
	require.Equal(t, int64(50000), p.AmountRefunded)
	require.Equal(t, "payonce_op:"+r2.OperationID, truth.Refunds[1].Description)
}

func TestE2ETwoStage(t *testing.T) {
	t.Parallel()
	e := e2eSetup(t, mocks.YooKassaOptions{})
	auth := rub("order-2s", 50000)
	auth.CaptureManual = true
	_, err := e.client.Charge(e.ctx, auth)
	require.NoError(t, err)
	require.Zero(t, e.fake.Truth().TotalCharged("RUB"))

	e.fake.Script(mocks.Match{Method: "POST", Path: "/v3/payments/{id}/capture"}, mocks.FaultProcessed500)
	c, err := e.client.Capture(e.ctx, payonce.CaptureParams{OrderID: "order-2s", Amount: 40000, Currency: "RUB"})
	require.NoError(t, err, "the lookup reads the payment as captured")
	require.Equal(t, payonce.ResultSucceeded, c.Status)
	require.Equal(t, int64(40000), e.fake.Truth().TotalCharged("RUB"))

	held := rub("order-cancel", 7000)
	held.CaptureManual = true
	_, err = e.client.Charge(e.ctx, held)
	require.NoError(t, err)
	x, err := e.client.Cancel(e.ctx, payonce.CancelParams{OrderID: "order-cancel"})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, x.Status)
	require.Equal(t, int64(40000), e.fake.Truth().TotalCharged("RUB"))
}

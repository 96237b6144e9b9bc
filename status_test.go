package payonce_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
)

// requestsTo counts every request the fake has answered.
func requestsTo(b *bundle) int {
	n := 0
	for _, c := range b.fake.Truth().Requests {
		n += c
	}
	return n
}

// Status answers by business id with what a replayed call returns, and
// never asks the provider.
func TestStatusByBusinessID(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		q := payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order-st"}
		_, err := b.client.Status(b.ctx, q)
		require.ErrorIs(t, err, payonce.ErrNotFound)
		require.ErrorIs(t, err, ledger.ErrNotFound)
		require.NotErrorIs(t, err, payonce.ErrInvalid)
		require.Equal(t, 404, payonce.HTTPStatus(err))

		first, err := b.client.Charge(b.ctx, charge("order-st", 2500))
		require.NoError(t, err)
		replay, err := b.client.Charge(b.ctx, charge("order-st", 2500))
		require.NoError(t, err)
		require.True(t, replay.Replayed)

		before := requestsTo(b)
		got, err := b.client.Status(b.ctx, q)
		require.NoError(t, err)
		require.Equal(t, replay, got, "Status is the replayed call's Result")
		require.Equal(t, first.OperationID, got.OperationID)
		require.Equal(t, payonce.ResultSucceeded, got.Status)
		require.NotEmpty(t, got.ProviderRef)
		require.Equal(t, before, requestsTo(b), "Status must not call the provider")

		_, err = b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-st", RefundSeq: 1, Amount: 500, Currency: "USD"})
		require.NoError(t, err)
		before = requestsTo(b)
		rf, err := b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-st", RefundSeq: 1})
		require.NoError(t, err)
		require.Equal(t, payonce.KindRefund, rf.Kind)
		require.Equal(t, payonce.ResultSucceeded, rf.Status)
		_, err = b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-st", RefundSeq: 2})
		require.ErrorIs(t, err, payonce.ErrNotFound)
		_, err = b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindCapture, OrderID: "order-st"})
		require.ErrorIs(t, err, payonce.ErrNotFound)
		require.Equal(t, before, requestsTo(b), "Status must not call the provider")
	})
}

func TestStatusRefusesBadQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, c := range []struct {
		name  string
		q     payonce.StatusQuery
		field string
	}{
		{"no kind", payonce.StatusQuery{OrderID: "o"}, "Kind"},
		{"wrong kind", payonce.StatusQuery{Kind: "Charge", OrderID: "o"}, "Kind"},
		{"no order", payonce.StatusQuery{Kind: payonce.KindCharge}, "OrderID"},
		{"refund without number", payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "o"}, "RefundSeq"},
		{"charge with a number", payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "o", RefundSeq: 1}, "RefundSeq"},
	} {
		_, err := b.client.Status(b.ctx, c.q)
		require.ErrorIs(t, err, payonce.ErrInvalid, c.name)
		var ve *payonce.ValidationError
		require.ErrorAs(t, err, &ve, c.name)
		require.Equal(t, c.field, ve.Field, c.name)
		require.Equal(t, 400, payonce.HTTPStatus(err), c.name)
	}
}

// oneOpStore answers Get with one operation, whatever the id: enough for
// Status, which reads nothing else.
type oneOpStore struct {
	ledger.Store
	op ledger.Operation
}

func (s *oneOpStore) Get(context.Context, string) (ledger.Operation, []ledger.Attempt, error) {
	return s.op, nil, nil
}

// The table on ResultStatus, for every status the ledger has (and one it
// does not know): the Result status and the error of Status and ResultOf.
func TestStatusCoversEveryLedgerStatus(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	want := map[ledger.Status]struct {
		status payonce.ResultStatus
		err    error
		http   int
	}{
		ledger.StatusPending:      {payonce.ResultPending, payonce.ErrProviderUnavailable, 202},
		ledger.StatusInFlight:     {payonce.ResultInProgress, payonce.ErrInProgress, 409},
		ledger.StatusUnknown:      {payonce.ResultUnknown, payonce.ErrOutcomeUnknown, 202},
		ledger.StatusSucceeded:    {payonce.ResultSucceeded, nil, 200},
		ledger.StatusFailed:       {payonce.ResultFailed, payonce.ErrDeclined, 402},
		ledger.StatusManualReview: {payonce.ResultManualReview, payonce.ErrManualReview, 202},
		"bogus":                   {payonce.ResultUnknown, payonce.ErrOutcomeUnknown, 202},
	}
	seen := map[payonce.ResultStatus]bool{}
	for _, st := range append(ledger.Statuses, "bogus") {
		w, ok := want[st]
		require.True(t, ok, "ledger status %q is missing from the table on ResultStatus", st)
		op := ledger.Operation{ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", Status: st, ProviderRef: "pi_1",
			Result: []byte(`{"code":"card_declined","http_status":402}`), Attempts: 1}
		if st == ledger.StatusInFlight {
			op.LeaseOwner, op.LeaseExpiresAt = "worker", b.clock.Now().Add(time.Minute)
		}
		store := &oneOpStore{op: op}
		client, err := payonce.New(providertest.ClientConfig(b.psp, store, b.clock.Now))
		require.NoError(t, err)
		res, err := client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "o"})
		require.Equal(t, w.status, res.Status, st)
		require.Equal(t, w.status, payonce.ResultOf(op).Status, st)
		require.True(t, res.Replayed)
		if w.err == nil {
			require.NoError(t, err, st)
		} else {
			require.ErrorIs(t, err, w.err, st)
		}
		require.Equal(t, w.http, payonce.HTTPStatus(err), st)
		if st != "bogus" {
			require.False(t, seen[w.status], "two ledger statuses map to %s", w.status)
			seen[w.status] = true
		}
	}
	require.Len(t, seen, len(ledger.Statuses))
}

// An operation in flight whose lease has lapsed has nobody sending it any
// more (the worker died): its attempt may have reached the provider, so
// Status reports it unknown, as the reconciler will treat it, not in
// progress.
func TestStatusOfALapsedLeaseIsUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	op := ledger.Operation{ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", Status: ledger.StatusInFlight,
		LeaseOwner: "dead-worker", LeaseExpiresAt: b.clock.Now().Add(time.Second), Attempts: 1}
	client, err := payonce.New(providertest.ClientConfig(b.psp, &oneOpStore{op: op}, b.clock.Now))
	require.NoError(t, err)
	q := payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "o"}
	res, err := client.Status(b.ctx, q)
	require.ErrorIs(t, err, payonce.ErrInProgress, "the lease is still live")
	require.Equal(t, payonce.ResultInProgress, res.Status)

	b.clock.Advance(time.Second)
	res, err = client.Status(b.ctx, q)
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the lease has lapsed: nobody is sending it")
	require.Equal(t, payonce.ResultUnknown, res.Status)
}

// A capture, cancel or refund of a charge whose outcome is unknown is
// ErrNotSettled, records nothing, and succeeds once the charge settled; an
// order with no charge is ErrNotFound (and a PaymentRef validation error).
func TestActOnUnsettledCharge(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		chargeLostWhileLookupsFail(t, b, charge("order-unsettled", 3000), 3)
		calls := map[string]func() error{
			"refund": func() error {
				_, err := b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-unsettled", RefundSeq: 1, Amount: 100, Currency: "USD"})
				return err
			},
			"capture": func() error {
				_, err := b.client.Capture(b.ctx, payonce.CaptureParams{OrderID: "order-unsettled"})
				return err
			},
			"cancel": func() error {
				_, err := b.client.Cancel(b.ctx, payonce.CancelParams{OrderID: "order-unsettled"})
				return err
			},
			"prepare refund": func() error {
				_, err := b.client.PrepareRefund(b.ctx, payonce.RefundParams{OrderID: "order-unsettled", RefundSeq: 1, Currency: "USD"})
				return err
			},
		}
		for name, call := range calls {
			err := call()
			require.ErrorIs(t, err, payonce.ErrNotSettled, name)
			require.NotErrorIs(t, err, payonce.ErrNotFound, name)
			require.NotErrorIs(t, err, payonce.ErrInvalid, name)
			require.Contains(t, err.Error(), `order "order-unsettled" is unknown`, name)
			require.Equal(t, 409, payonce.HTTPStatus(err), name)
		}
		_, err := b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindRefund, OrderID: "order-unsettled", RefundSeq: 1})
		require.ErrorIs(t, err, payonce.ErrNotFound, "nothing recorded for the refused refund")

		_, err = b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-none", RefundSeq: 1, Currency: "USD"})
		require.ErrorIs(t, err, payonce.ErrNotFound)
		require.ErrorIs(t, err, payonce.ErrInvalid)
		require.NotErrorIs(t, err, payonce.ErrNotSettled)
		require.Contains(t, err.Error(), "PaymentRef")
		require.Equal(t, 404, payonce.HTTPStatus(err))

		b.clock.Advance(2 * time.Minute) // past the first scheduled check
		drain(t, b, newReconciler(t, b, nil), time.Minute)
		st, err := b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order-unsettled"})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, st.Status)
		rf, err := b.client.Refund(b.ctx, payonce.RefundParams{OrderID: "order-unsettled", RefundSeq: 1, Amount: 100, Currency: "USD"})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, rf.Status)
	})
}

func TestRequestPathPreset(t *testing.T) {
	t.Parallel()
	cfg := payonce.RequestPath(payonce.Config{AttemptTimeout: time.Minute, Owner: "api",
		Retry: payonce.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Millisecond, MaxRetryAfter: time.Minute, LookupRetries: 4}})
	require.Equal(t, 2*time.Second, cfg.AttemptTimeout)
	require.Equal(t, 1, cfg.Retry.MaxAttempts)
	require.Equal(t, time.Duration(-1), cfg.Retry.MaxRetryAfter)
	require.Equal(t, -1, cfg.Retry.LookupRetries)
	require.Equal(t, time.Millisecond, cfg.Retry.BaseDelay, "other fields are kept")
	require.Equal(t, "api", cfg.Owner)
}

// A Charge in the request path against a provider that hangs returns
// within its bound (one 2 s attempt, one lookup) with ErrOutcomeUnknown,
// and the Reconciler settles it afterwards: one charge.
func TestRequestPathBoundsHangingCharge(t *testing.T) {
	t.Parallel()
	const hang = 25 * time.Second
	eachSetup(t, setupOpts{
		fake: mocks.StripeOptions{Options: mocks.Options{HangFor: hang}},
		config: func(c *payonce.Config) {
			c.AttemptTimeout = 20 * time.Second // what RequestPath must override
			*c = payonce.RequestPath(*c)
		},
	}, func(t *testing.T, b *bundle) {
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultHangAfterProcessing)
		b.fake.Script(mocks.Match{Method: "GET"}, mocks.FaultHangAfterProcessing)
		start := time.Now()
		res, err := b.client.Charge(b.ctx, charge("order-hang", 4100))
		elapsed := time.Since(start)
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		require.Equal(t, 202, payonce.HTTPStatus(err))
		// Generous: the bound is ~4 s (two 2 s timeouts); without the
		// preset the call would wait out the 25 s hang.
		require.Less(t, elapsed, 12*time.Second)
		op, atts := attemptsOf(t, b, res.OperationID)
		require.Len(t, atts, 1, "one attempt in the request path")
		require.Equal(t, ledger.StatusUnknown, op.Status)

		b.clock.Advance(2 * time.Minute) // past the first scheduled check
		drain(t, b, newReconciler(t, b, nil), time.Minute)
		st, err := b.client.Status(b.ctx, payonce.StatusQuery{Kind: payonce.KindCharge, OrderID: "order-hang"})
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, st.Status)
		require.Equal(t, 1, b.chargesOf(t, res.OperationID))
	})
}

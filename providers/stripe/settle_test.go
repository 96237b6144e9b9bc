package stripe_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// settleLostAnswer charges through a real Client against the fake Stripe
// (its search SearchLag behind, as Stripe documents it may be), loses the
// answer, then drives the clock one second at a time, running the
// Reconciler each second, and returns the driven time until the charge is
// settled.
func settleLostAnswer(t *testing.T, cfg func(*stripe.Config)) time.Duration {
	t.Helper()
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Clock: clock.Now}, SearchLag: time.Minute})
	t.Cleanup(fake.Close)
	c := stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), Now: clock.Now}
	if cfg != nil {
		cfg(&c)
	}
	psp, err := stripe.New(c)
	require.NoError(t, err)
	client, store := testkit.NewClient(t, psp, clock.Now)
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: store, Clients: []*payonce.Client{client}, Now: clock.Now, Owner: "settle-test"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	fake.Script(mocks.Match{Method: http.MethodPost, Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing)
	lost := clock.Now()
	res, err := client.Charge(ctx, payonce.ChargeParams{OrderID: "order-lost", Amount: 1200, Currency: "USD", PaymentMethod: "pm_card_visa"})
	if err == nil {
		// The lookup the call itself makes after the lost answer found it.
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.Len(t, fake.Truth().Payments, 1, "charged once")
		require.Equal(t, 1, fake.Truth().Requests["POST /v1/payment_intents"], "found, not resent")
		return clock.Now().Sub(lost)
	}
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "the answer was lost")
	for clock.Now().Sub(lost) < 10*time.Minute {
		clock.Advance(time.Second)
		_, err := rec.RunOnce(ctx)
		require.NoError(t, err)
		op, _, err := store.Get(ctx, res.OperationID)
		require.NoError(t, err)
		if op.Status == ledger.StatusSucceeded {
			require.Len(t, fake.Truth().Payments, 1, "charged once")
			require.Equal(t, 1, fake.Truth().Requests["POST /v1/payment_intents"], "found, not resent")
			return clock.Now().Sub(lost)
		}
	}
	t.Fatal("not settled in 10 minutes of driven time")
	return 0
}

// A lost answer settles at the first lookup when the window is listed (the
// one the Charge call itself makes after losing the answer: 0 s of driven
// time), and only after the search has caught up (SearchLag) and the next
// check when it is searched for. The numbers are in the notes.
func TestLostAnswerSettlesByList(t *testing.T) {
	t.Parallel()
	searched := settleLostAnswer(t, func(c *stripe.Config) { c.ListDisabled = true })
	listed := settleLostAnswer(t, nil)
	t.Logf("lost answer settled after %v of driven time by search (SearchLag 1m), %v by list", searched, listed)
	require.GreaterOrEqual(t, searched, time.Minute, "the search shows it only after its lag")
	require.Less(t, listed, searched)
	require.Zero(t, listed, "the Charge call's own lookup finds it")
}

// A PaymentIntent created slightly before Since by Stripe's clock (this
// host's clock runs ahead) is still listed: the window starts LookupMargin
// earlier. Without the margin it would be missed; the list is the one
// answer here (no search fallback could hide it: search is disabled).
func TestLookupChargeListClockSkew(t *testing.T) {
	t.Parallel()
	clock := mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	fake := mocks.NewStripe(mocks.StripeOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(fake.Close)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	r := chargeReq()
	r.Request.Currency = "USD"
	o, _ := testkit.Send(t, mustNew(t, stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), Now: clock.Now}), hc, r)
	require.Equal(t, ledger.OutcomeSuccess, o.Class)

	// This host's clock is 90 s ahead of Stripe's: it dated the attempt
	// 90 s after Stripe's created.
	hostNow := func() time.Time { return clock.Now().Add(90 * time.Second) }
	q := payonce.LookupQuery{OperationID: r.OperationID, Key: r.Key, Request: r.Request, Since: hostNow()}
	clock.Advance(5 * time.Second)
	for _, tc := range []struct {
		margin time.Duration
		want   payonce.LookupState
	}{
		{margin: 2 * time.Minute, want: payonce.LookupSucceeded},
		{margin: time.Minute, want: payonce.LookupNotFound}, // the margin is smaller than the skew: shows why it exists
	} {
		p := mustNew(t, stripe.Config{APIKey: fake.APIKey(), BaseURL: fake.URL(), Now: hostNow, LookupMargin: tc.margin, SearchDisabled: true})
		res, err := p.Lookup(context.Background(), hc, q)
		require.NoError(t, err)
		require.Equal(t, tc.want, res.State, "margin %v", tc.margin)
		require.Zero(t, res.Lag)
	}
}

func mustNew(t *testing.T, c stripe.Config) *stripe.Provider {
	t.Helper()
	p, err := stripe.New(c)
	require.NoError(t, err)
	return p
}

package stripe_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// fakeBundle is the adapter pointed at a fresh fake Stripe.
type fakeBundle struct {
	f  *mocks.Stripe
	P  *stripe.Provider
	HC *http.Client
}

func withFake(t *testing.T) fakeBundle {
	t.Helper()
	f := mocks.NewStripe(mocks.StripeOptions{})
	t.Cleanup(f.Close)
	p, err := stripe.New(stripe.Config{APIKey: f.APIKey(), BaseURL: f.URL()})
	require.NoError(t, err)
	return fakeBundle{f: f, P: p, HC: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}

// send builds the attempt's request with the adapter, sends it and
// classifies the answer.
func (b fakeBundle) send(t *testing.T, r payonce.SendRequest) (payonce.Outcome, *http.Response) {
	t.Helper()
	return testkit.Send(t, b.P, b.HC, r)
}

var _ payonce.ReplayDetector = (*stripe.Provider)(nil)

func TestReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		header []string
		want   bool
	}{
		{header: []string{"Idempotent-Replayed", "true"}, want: true},
		{header: []string{"Idempotent-Replayed", "True"}, want: true},
		{header: []string{"Idempotent-Replayed", " true "}, want: true},
		{header: []string{"Idempotent-Replayed", "false"}},
		{header: []string{"Idempotent-Replayed", ""}},
		{header: nil},
	} {
		h := http.Header{}
		if tc.header != nil {
			h.Set(tc.header[0], tc.header[1])
		}
		for _, status := range []int{200, 402, 500, 503} {
			require.Equal(t, tc.want, b.P.Replayed(status, h), "%v %d", tc.header, status)
			o := b.P.Classify(chargeReq(), status, h, []byte(`{"error":{"type":"api_error","message":"x"}}`))
			require.Equal(t, tc.want, o.Replayed, "Classify uses Replayed")
		}
	}
}

// Stripe saves the first executed answer for a key, a 500 included, and
// replays it: the resend is answered with the same 500, marked replayed.
// Both are maybe_sent (a 500 is indeterminate); the replay says that the
// key's answer is final, so the client stops resending and looks up.
func TestReplayedStored500(t *testing.T) {
	t.Parallel()
	for _, fault := range []mocks.FaultKind{mocks.FaultStored500, mocks.FaultProcessed500} {
		t.Run(fault.String(), func(t *testing.T) {
			t.Parallel()
			b := withFake(t)
			b.f.Script(mocks.Match{Method: "POST", Path: "/v1/payment_intents"}, fault)
			r := chargeReq()
			r.Request.Currency = "USD"

			first, resp := b.send(t, r)
			require.Equal(t, http.StatusInternalServerError, first.HTTPStatus)
			require.Equal(t, ledger.OutcomeMaybeSent, first.Class)
			require.False(t, first.Replayed)
			require.False(t, b.P.Replayed(resp.StatusCode, resp.Header))

			again, resp := b.send(t, r)
			require.Equal(t, http.StatusInternalServerError, again.HTTPStatus)
			require.Equal(t, ledger.OutcomeMaybeSent, again.Class)
			require.True(t, again.Replayed)
			require.True(t, b.P.Replayed(resp.StatusCode, resp.Header))
			require.NotEqual(t, first.RequestID, again.RequestID)
		})
	}
}

// Against the fake, end to end: a charge authorized and then canceled is
// found succeeded (the authorization was released), one declined and then
// canceled is found failed, one canceled before it was confirmed failed.
func TestLookupCanceledChargesOnTheFake(t *testing.T) {
	t.Parallel()
	b := withFake(t)
	ctx := context.Background()
	charge := func(order, method string, manual bool) payonce.SendRequest {
		r := chargeReq()
		r.OperationID, r.Key = order, order
		r.Request.Currency, r.Request.PaymentMethod, r.Request.CaptureManual = "USD", method, manual
		return r
	}
	cancel := func(pi string) {
		t.Helper()
		r := chargeReq()
		r.Key = "cancel-" + pi
		r.Request = payonce.Request{Kind: payonce.KindCancel, PaymentRef: pi}
		o, _ := b.send(t, r)
		require.Equal(t, ledger.OutcomeSuccess, o.Class, o.Message)
	}

	auth := charge("op-authorized", "pm_card_visa", true)
	o, _ := b.send(t, auth)
	require.Equal(t, ledger.OutcomeSuccess, o.Class)
	cancel(o.ProviderRef)
	res, err := b.P.Lookup(ctx, b.HC, payonce.LookupQuery{OperationID: auth.OperationID, Key: auth.Key, Request: auth.Request, ProviderRef: o.ProviderRef})
	require.NoError(t, err)
	require.Equal(t, payonce.LookupSucceeded, res.State, "authorized, then released: the charge succeeded")
	require.Empty(t, res.Contradiction)

	declined := charge("op-declined", "pm_card_chargeDeclined", true)
	o, _ = b.send(t, declined)
	require.Equal(t, ledger.OutcomeRefused, o.Class)
	cancel(o.ProviderRef)
	res, err = b.P.Lookup(ctx, b.HC, payonce.LookupQuery{OperationID: declined.OperationID, Key: declined.Key, Request: declined.Request, ProviderRef: o.ProviderRef})
	require.NoError(t, err)
	require.Equal(t, payonce.LookupFailed, res.State, "never authorized")

	// Created without confirming (by hand, as payonce always confirms),
	// then canceled: no charge at all.
	hr, err := http.NewRequest(http.MethodPost, b.f.URL()+"/v1/payment_intents", strings.NewReader(url.Values{
		"amount": {"1999"}, "currency": {"usd"}, "metadata[payonce_op]": {"op-unconfirmed"}}.Encode()))
	require.NoError(t, err)
	hr.Header.Set("Authorization", "Bearer "+b.f.APIKey())
	hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := b.HC.Do(hr)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	unconfirmed := charge("op-unconfirmed", "", false)
	o = b.P.Classify(unconfirmed, resp.StatusCode, resp.Header, body)
	require.Equal(t, ledger.OutcomeRefused, o.Class, "requires_payment_method: it did not pay")
	cancel(o.ProviderRef)
	res, err = b.P.Lookup(ctx, b.HC, payonce.LookupQuery{OperationID: unconfirmed.OperationID, Key: unconfirmed.Key, Request: unconfirmed.Request, ProviderRef: o.ProviderRef})
	require.NoError(t, err)
	require.Equal(t, payonce.LookupFailed, res.State)
	require.Equal(t, "canceled", res.Code)
}

package payonce_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/mocks/mockhttp"
	"github.com/payonce/payonce/providers/stripe"
)

// mockBundle is a client whose HTTP goes to httpmock responders: for answers
// a real server would rarely give (garbage, huge bodies) and exact sequences.
type mockBundle struct {
	mt     *httpmock.MockTransport
	clock  *mocks.ManualClock
	store  ledger.Store
	client *payonce.Client
	ctx    context.Context
}

const mockBase = "https://api.stripe.test"

func setupMock(t *testing.T) *mockBundle {
	t.Helper()
	mt := httpmock.NewMockTransport()
	clock := mocks.NewManualClock(t0)
	psp, err := stripe.New(stripe.Config{ListDisabled: true, APIKey: "sk_test_mock", BaseURL: mockBase, Now: clock.Now})
	require.NoError(t, err)
	store := newStore(t, false)
	client, err := payonce.New(payonce.Config{Provider: psp, Store: store, Now: clock.Now,
		HTTPClient: &http.Client{Transport: mt}, Retry: payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return &mockBundle{mt: mt, clock: clock, store: store, client: client, ctx: ctx}
}

// succeededPI is the PaymentIntent the charge of order created, as Stripe
// returns it: with payonce's metadata, so that it belongs to the operation.
func succeededPI(id, order string) mockhttp.StripePaymentIntent {
	op, _ := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{order}}.OperationID()
	return mockhttp.StripePaymentIntent{ID: id, Object: "payment_intent", Amount: 500, AmountReceived: 500, Currency: "usd", Status: "succeeded",
		Metadata: map[string]string{stripe.MetaOperation: op, stripe.MetaKey: op, stripe.MetaKind: "charge"}}
}

// Answers the client cannot read are "maybe sent": looked up, never a panic
// and never a blind resend.
func TestUnreadableAnswersAreMaybeSent(t *testing.T) {
	t.Parallel()
	bodies := map[string]httpmock.Responder{
		"garbage 200":         httpmock.NewStringResponder(200, "<html>ok</html>"),
		"truncated json":      httpmock.NewStringResponder(200, `{"id":"pi_1","object":"payment_int`),
		"oversized body":      httpmock.NewBytesResponder(200, []byte(`{"id":"pi_1","x":"`+strings.Repeat("a", 2<<20)+`"}`)),
		"proxy 504":           httpmock.NewStringResponder(504, "gateway timeout"),
		"idempotency in use":  mockhttp.StripeErrorResponder(409, "invalid_request_error", "idempotency_key_in_use", "", "in use"),
		"empty 500":           httpmock.NewStringResponder(500, ""),
		"transport timeout":   httpmock.NewErrorResponder(context.DeadlineExceeded),
		"reset after writing": httpmock.NewErrorResponder(&netResetError{}),
	}
	for name, resp := range bodies {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupMock(t)
			b.mt.RegisterResponder("POST", mockBase+"/v1/payment_intents", resp)
			found := succeededPI("pi_found", "order-"+name)
			b.mt.RegisterResponder("GET", mockBase+"/v1/payment_intents/search", mockhttp.StripeSearchResponder(found))
			b.mt.RegisterResponder("GET", mockBase+"/v1/payment_intents/pi_found", httpmock.NewJsonResponderOrPanic(200, found))
			res, err := b.client.Charge(b.ctx, charge("order-"+name, 500))
			require.NoError(t, err)
			require.Equal(t, payonce.ResultSucceeded, res.Status)
			require.Equal(t, "pi_found", res.ProviderRef)
			counts := b.mt.GetCallCountInfo()
			require.Equal(t, 1, counts["POST "+mockBase+"/v1/payment_intents"], "found by lookup: no resend")
			_, atts, err := b.store.Get(b.ctx, res.OperationID)
			require.NoError(t, err)
			require.Contains(t, []ledger.OutcomeClass{ledger.OutcomeMaybeSent, ledger.OutcomeKeyInUse}, atts[0].Outcome)
			require.True(t, atts[0].MayHaveReached)
		})
	}
}

type netResetError struct{}

func (*netResetError) Error() string   { return "read: connection reset by peer" }
func (*netResetError) Timeout() bool   { return false }
func (*netResetError) Temporary() bool { return false }

// The request carries the derived key in Stripe's header and the same bytes
// on every attempt.
func TestRequestShapeAcrossAttempts(t *testing.T) {
	t.Parallel()
	b := setupMock(t)
	var keys, bodies []string
	b.mt.RegisterResponder("POST", mockBase+"/v1/payment_intents", func(r *http.Request) (*http.Response, error) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		buf := new(strings.Builder)
		_, _ = bufCopy(buf, r)
		bodies = append(bodies, buf.String())
		if len(keys) == 1 {
			return httpmock.NewStringResponse(502, "bad gateway"), nil
		}
		return httpmock.NewJsonResponse(200, succeededPI("pi_2", "order-shape"))
	})
	b.mt.RegisterResponder("GET", mockBase+"/v1/payment_intents/search", mockhttp.StripeSearchResponder())
	_, err := b.client.Charge(b.ctx, charge("order-shape", 500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown, "not found within the search lag: no resend yet")
	b.clock.Advance(2 * time.Minute)
	res, err := b.client.Charge(b.ctx, charge("order-shape", 500))
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, res.Key, keys[0])
	require.Equal(t, keys[0], keys[1])
	require.Equal(t, bodies[0], bodies[1])
	require.Contains(t, bodies[0], "metadata%5Bpayonce_op%5D="+res.OperationID)
}

func bufCopy(dst *strings.Builder, r *http.Request) (int64, error) {
	if r.Body == nil {
		return 0, nil
	}
	defer r.Body.Close()
	b := make([]byte, 32<<10)
	var n int64
	for {
		m, err := r.Body.Read(b)
		dst.Write(b[:m])
		n += int64(m)
		if err != nil {
			return n, nil
		}
	}
}

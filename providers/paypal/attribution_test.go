package paypal_test

// Attribution of an approved order's payment (PaymentMethod order:<id>):
// two payonce operations may name the same approved order, and nothing in
// the order says whose request captured it. Exactly one of them is ever
// recorded succeeded; the other goes to review.

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// authorized counts the payments PayPal made (captured or authorized),
// whatever happened to them later.
func authorized(f *mocks.PayPal) int {
	n := 0
	for _, p := range f.Truth().Payments {
		if p.Authorized {
			n++
		}
	}
	return n
}

// outcomes counts the results by status.
func outcomes(rs ...payonce.Result) map[payonce.ResultStatus]int {
	n := map[payonce.ResultStatus]int{}
	for _, r := range rs {
		n[r.Status]++
	}
	return n
}

// Two operations capture (authorize) one approved order: PayPal does it
// once and answers the second 422 ORDER_ALREADY_CAPTURED
// (ORDER_ALREADY_AUTHORIZED): the second goes to review, with a message
// that says why, and stays there on a repeat of the call.
func TestE2ETwoOperationsOneApprovedOrder(t *testing.T) {
	t.Parallel()
	for _, intent := range []string{"CAPTURE", "AUTHORIZE"} {
		t.Run(intent, func(t *testing.T) {
			t.Parallel()
			e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
			fake := ppFake(e)
			orderID := fake.ApproveOrder(intent, 2500, "USD")
			params := func(shopOrder string) payonce.ChargeParams {
				p := usd(shopOrder, 2500, paypal.MethodOrder+orderID)
				p.CaptureManual = intent == "AUTHORIZE"
				return p
			}
			first, err := e.Client.Charge(e.Ctx, params("shop-1"))
			require.NoError(t, err)
			second, err := e.Client.Charge(e.Ctx, params("shop-2"))
			require.ErrorIs(t, err, payonce.ErrManualReview)
			require.Equal(t, map[payonce.ResultStatus]int{payonce.ResultSucceeded: 1, payonce.ResultManualReview: 1}, outcomes(first, second))
			require.Empty(t, second.ProviderRef, "the first operation's payment is not claimed")
			done := map[string]string{"CAPTURE": "captured", "AUTHORIZE": "authorized"}[intent]
			require.Contains(t, second.Message, "order "+orderID+" was "+done+" by another request: not recorded as this operation's payment")
			require.Equal(t, 1, authorized(fake), "PayPal made one payment")

			// The call again: still in review, nothing sent.
			posts := e.Posts("/v2/checkout/orders/{id}/" + map[string]string{"CAPTURE": "capture", "AUTHORIZE": "authorize"}[intent])
			again, err := e.Client.Charge(e.Ctx, params("shop-2"))
			require.ErrorIs(t, err, payonce.ErrManualReview)
			require.Equal(t, payonce.ResultManualReview, again.Status)
			require.Equal(t, posts, e.Posts("/v2/checkout/orders/{id}/"+map[string]string{"CAPTURE": "capture", "AUTHORIZE": "authorize"}[intent]))
		})
	}
}

// The first operation's capture never reached PayPal (a proxy's 502, no
// id recorded); the second captures the order. The first operation's
// lookup finds the order COMPLETED with the second's capture: it does not
// claim it (not found, which proves nothing), the client resends under the
// first operation's own PayPal-Request-Id, PayPal answers 422
// ORDER_ALREADY_CAPTURED, and the first goes to review. One succeeded,
// never two.
func TestE2EUnsentOperationDoesNotClaimAnotherCapture(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	orderID := fake.ApproveOrder("CAPTURE", 2500, "USD")
	capture := mocks.Match{Method: http.MethodPost, Path: "/v2/checkout/orders/{id}/capture"}
	for range 20 {
		fake.Script(capture, mocks.FaultGatewayBefore502)
	}
	a, err := e.Client.Charge(e.Ctx, usd("shop-a", 2500, paypal.MethodOrder+orderID))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Empty(t, a.ProviderRef)
	require.Zero(t, authorized(fake), "nothing reached PayPal")
	fake.ClearScripts()

	b, err := e.Client.Charge(e.Ctx, usd("shop-b", 2500, paypal.MethodOrder+orderID))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, b.Status)

	// Inside the 6 h Orders window, after the client's resend pacing.
	e.Clock.Advance(2 * time.Hour)
	a, err = e.Client.Charge(e.Ctx, usd("shop-a", 2500, paypal.MethodOrder+orderID))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, map[payonce.ResultStatus]int{payonce.ResultSucceeded: 1, payonce.ResultManualReview: 1}, outcomes(a, b))
	require.NotEqual(t, b.ProviderRef, a.ProviderRef)
	require.Contains(t, a.Message, "captured by another request")
	require.Equal(t, 1, authorized(fake))
	atts := attempts(t, e, a.OperationID)
	last := atts[len(atts)-1]
	require.Equal(t, http.StatusUnprocessableEntity, last.HTTPStatus)
	require.Equal(t, atts[0].Key, last.Key, "the resend is under the operation's own request id")
}

// The first operation's capture went through and its answer was lost (no
// id recorded). Its lookup does not claim the capture it finds in the
// order; the resend under its own PayPal-Request-Id gets PayPal's 200 with
// its own capture: succeeded. The second operation naming the order goes
// to review.
func TestE2ELostCaptureOfApprovedOrderResolvedByRepeat(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	orderID := fake.ApproveOrder("CAPTURE", 2500, "USD")
	fake.Script(mocks.Match{Method: http.MethodPost, Path: "/v2/checkout/orders/{id}/capture"}, mocks.FaultDropAfterProcessing)
	a, err := e.Client.Charge(e.Ctx, usd("shop-a", 2500, paypal.MethodOrder+orderID))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, a.Status)
	p, ok := fake.Truth().Payment(a.ProviderRef)
	require.True(t, ok, "the capture id PayPal's 200 to the repeat gave")
	require.True(t, p.Authorized)
	require.Equal(t, 1, authorized(fake))
	atts := attempts(t, e, a.OperationID)
	require.Len(t, atts, 2)
	require.Equal(t, http.StatusOK, atts[1].HTTPStatus, "a repeat answers 200 with the latest status")

	b, err := e.Client.Charge(e.Ctx, usd("shop-b", 2500, paypal.MethodOrder+orderID))
	require.ErrorIs(t, err, payonce.ErrManualReview)
	require.Equal(t, map[payonce.ResultStatus]int{payonce.ResultSucceeded: 1, payonce.ResultManualReview: 1}, outcomes(a, b))
	require.Equal(t, 1, authorized(fake))
}

package paypal_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/paypal"
)

// The body names the object; PayPal's API says what it is. A delivery
// whose body says DECLINED for a capture PayPal holds COMPLETED settles
// the charge as succeeded, never failed.
func TestWebhookRereadStatusAsReadWins(t *testing.T) {
	for _, typ := range []string{"PAYMENT.CAPTURE.DECLINED", "PAYMENT.CAPTURE.DENIED", "PAYMENT.CAPTURE.PENDING"} {
		t.Run(typ, func(t *testing.T) {
			f := newWebhookFixture(t, nil)
			f.api.holds("capture", orderCapture("COMPLETED"))
			body := strings.NewReplacer(`"10.00"`, `"99.00"`, `"custom_id":"`+opCharge, `"custom_id":"someone-else`).Replace(orderCapture("DECLINED"))
			evs, err := f.parse(f.signed(ppEvent("WH-F", typ, "capture", body)))
			require.NoError(t, err)
			require.Equal(t, chargeTargets(payonce.LookupSucceeded, 1000, "3C679366HH908993F", "5O190127TN364715T"), noMessages(evs[0].Targets),
				"status, amount and custom_id are the capture's as read")
			require.Equal(t, []string{"GET /v2/payments/captures/3C679366HH908993F"}, f.api.gets(), "one GET per delivery")
		})
	}
}

// An authorization and an order are read too; a forged VOIDED over a
// CREATED authorization voids nothing.
func TestWebhookRereadAuthorizationAndOrder(t *testing.T) {
	f := newWebhookFixture(t, nil)
	f.api.holds("authorization", authorization("CREATED"))
	evs, err := f.parse(f.signed(ppEvent("WH-A", "PAYMENT.AUTHORIZATION.VOIDED", "authorization", authorization("VOIDED"))))
	require.NoError(t, err)
	require.Equal(t, chargeTargets(payonce.LookupSucceeded, 1000, "0VF52814937998046", "5O190127TN364715T"), noMessages(evs[0].Targets),
		"no cancel succeeded, no capture failed: the authorization is CREATED at PayPal")

	f.api.holds("checkout-order", completedOrder("CAPTURE", `{"captures":[`+orderCapture("PENDING")+`]}`))
	evs, err = f.parse(f.signed(ppEvent("WH-O", "CHECKOUT.ORDER.COMPLETED", "checkout-order",
		completedOrder("CAPTURE", `{"captures":[`+orderCapture("DECLINED")+`]}`))))
	require.NoError(t, err)
	require.Equal(t, chargeTargets(payonce.LookupProcessing, 1000, "3C679366HH908993F", "5O190127TN364715T"), noMessages(evs[0].Targets))
	require.Equal(t, []string{"GET /v2/payments/authorizations/0VF52814937998046", "GET /v2/checkout/orders/5O190127TN364715T"}, f.api.gets())
}

// A reversal is applied only when PayPal holds the refund COMPLETED, and
// the capture it reverses is the one the refund as read names.
func TestWebhookRereadReversalCaptureFromTheRefundAsRead(t *testing.T) {
	f := newWebhookFixture(t, nil)
	f.api.holds("refund", reversal)
	forged := strings.Replace(reversal, "/v2/payments/captures/4L335234718889942", "/v2/payments/captures/3C679366HH908993F", 1)
	evs, err := f.parse(f.signed(ppEvent("WH-R", "PAYMENT.CAPTURE.REVERSED", "refund", forged)))
	require.NoError(t, err)
	require.Len(t, evs[0].Targets, 2)
	for _, tg := range evs[0].Targets {
		require.Equal(t, "4L335234718889942", tg.ProviderRef)
		require.True(t, tg.Reversal)
	}
	require.Equal(t, []string{"GET /v2/payments/refunds/09E71677NS257044M"}, f.api.gets())
}

// An id PayPal does not hold: the event is recorded as unreadable and
// changes nothing.
func TestWebhookRereadUnknownIDIsUnreadable(t *testing.T) {
	f := newWebhookFixture(t, nil)
	evs, err := f.parse(f.signed(ppEvent("WH-N", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("COMPLETED"))))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Empty(t, evs[0].Targets)
	require.Contains(t, evs[0].Unreadable, "PayPal has no capture 3C679366HH908993F")
	require.Equal(t, []string{"GET /v2/payments/captures/3C679366HH908993F"}, f.api.gets())
}

// An id that is not PayPal's form never reaches a URL: refused
// (malformed) before any request, the token's included.
func TestWebhookRereadRefusesIDsNotPayPals(t *testing.T) {
	for _, id := range []string{"../../v1/oauth2/token", "..", "3C679366HH908993F/refund", "3C679366HH908993F?x=1", "3C679366HH908993F#x",
		"%2E%2E%2Fv1", "3c679366hh908993f", "3C679366 HH908993F", "3C679366HH908993F\n", strings.Repeat("A", 37), "ÄÖ", `3C\u002f..`} {
		for _, typ := range []struct{ typ, rtype string }{{"PAYMENT.CAPTURE.COMPLETED", "capture"}, {"PAYMENT.CAPTURE.REVERSED", "refund"},
			{"PAYMENT.AUTHORIZATION.CREATED", "authorization"}, {"CHECKOUT.ORDER.COMPLETED", "checkout-order"}} {
			f := newWebhookFixture(t, nil)
			res := `{"id":"` + strings.ReplaceAll(id, "\n", `\n`) + `","status":"COMPLETED"}`
			evs, err := f.parse(f.signed(ppEvent("WH-P", typ.typ, typ.rtype, res)))
			require.Nil(t, evs, "%s %q", typ.typ, id)
			require.ErrorIs(t, err, payonce.ErrWebhookMalformed, "%s %q", typ.typ, id)
			require.Contains(t, err.Error(), "not a PayPal id")
			require.Zero(t, f.api.requests.Load(), "%s %q: a request was sent: %v", typ.typ, id, f.api.paths)
		}
	}
}

// PayPal cannot be asked (down, 429, 5xx, a 401 twice): the delivery is
// refused with an error wrapping payonce.ErrProviderUnavailable, nothing
// is returned to record, and PayPal delivers it again.
func TestWebhookRereadFailureRefusesTheDelivery(t *testing.T) {
	for _, status := range []int{http.StatusServiceUnavailable, http.StatusInternalServerError, http.StatusTooManyRequests, http.StatusBadGateway, http.StatusForbidden} {
		f := newWebhookFixture(t, nil)
		f.api.holds("capture", orderCapture("COMPLETED"))
		f.api.setFail(status)
		evs, err := f.parse(f.signed(ppEvent("WH-D", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("COMPLETED"))))
		require.Nil(t, evs, "%d", status)
		require.ErrorIs(t, err, payonce.ErrProviderUnavailable, "%d", status)
		require.NotErrorIs(t, err, payonce.ErrWebhookMalformed)
		require.NotErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
		require.Contains(t, err.Error(), "PayPal will deliver it again")
		require.NotContains(t, err.Error(), "client-secret")
	}

	// Nothing listening.
	f := newWebhookFixture(t, nil)
	f.api.Close()
	evs, err := f.parse(f.signed(ppEvent("WH-D", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("COMPLETED"))))
	require.Nil(t, evs)
	require.ErrorIs(t, err, payonce.ErrProviderUnavailable)
}

// The read goes to BaseURL only: a redirect is not followed.
func TestWebhookRereadFollowsNoRedirect(t *testing.T) {
	var elsewhere int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere++ }))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/oauth2/token" {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"A21AAredirect","token_type":"Bearer","expires_in":32400}`))
			return
		}
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer redirecting.Close()
	f := newWebhookFixture(t, func(c *paypal.Config) { c.BaseURL = redirecting.URL })
	_, err := f.parse(f.signed(ppEvent("WH-X", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("COMPLETED"))))
	require.ErrorIs(t, err, payonce.ErrProviderUnavailable)
	require.Zero(t, elsewhere)
}

// The cost: one GET per delivery of a type the adapter reads, none for
// the others, and one token for all of them.
func TestWebhookRereadCost(t *testing.T) {
	f := newWebhookFixture(t, nil)
	f.api.holds("capture", orderCapture("COMPLETED"))
	f.api.holds("refund", refund("COMPLETED", opRefund, keyRef))
	for range 3 {
		_, err := f.parse(f.signed(ppEvent("WH-C", "PAYMENT.CAPTURE.COMPLETED", "capture", orderCapture("COMPLETED"))))
		require.NoError(t, err)
		_, err = f.parse(f.signed(ppEvent("WH-F", "PAYMENT.CAPTURE.REFUNDED", "refund", refund("COMPLETED", opRefund, keyRef))))
		require.NoError(t, err)
		_, err = f.parse(f.signed(pingEvent))
		require.NoError(t, err)
	}
	require.Len(t, f.api.gets(), 6)
	require.Equal(t, int64(1), f.api.tokens.Load())
}

package mocks_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// Stripe saves "the status code and body of the first request made with a
// given idempotency key after endpoint execution begins. Retries with the
// same key return the saved response, including 500 errors", and a replay
// carries Idempotent-Replayed: true. The fake must mark every replayed
// answer, whatever its status, and no first answer: the adapter's Replayed
// (and the client's breaker, which does not count a replayed 5xx) read it.
func TestReplayedHeaderOnEveryStoredAnswer(t *testing.T) {
	t.Parallel()
	capture := mocks.Match{Method: "POST", Path: "/v1/payment_intents/{id}/capture"}
	for _, tc := range []struct {
		name   string
		fault  mocks.FaultKind
		match  mocks.Match
		path   func(b *bundle) string
		form   url.Values
		status int
	}{
		{"200", mocks.FaultNone, createPI, nil, charge("1000", "pm_card_visa"), http.StatusOK},
		{"402 decline", mocks.FaultNone, createPI, nil, charge("1000", "pm_card_chargeDeclined"), http.StatusPaymentRequired},
		{"400 wrong state", mocks.FaultNone, capture, func(b *bundle) string {
			return "/v1/payment_intents/" + b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "").pi(b.c.t).ID + "/capture"
		}, url.Values{}, http.StatusBadRequest},
		{"404 no such intent", mocks.FaultNone, capture, func(*bundle) string { return "/v1/payment_intents/pi_missing/capture" }, url.Values{}, http.StatusNotFound},
		{"stored 500", mocks.FaultStored500, createPI, nil, charge("1000", "pm_card_visa"), http.StatusInternalServerError},
		{"processed 500", mocks.FaultProcessed500, createPI, nil, charge("1000", "pm_card_visa"), http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, mocks.StripeOptions{})
			path := "/v1/payment_intents"
			if tc.path != nil {
				path = tc.path(b)
			}
			if tc.fault != mocks.FaultNone {
				b.f.Script(tc.match, tc.fault)
			}
			first := b.c.post(path, tc.form, "replay-"+tc.name)
			require.Equal(t, tc.status, first.status, string(first.body))
			require.Empty(t, first.header.Values("Idempotent-Replayed"), "a first answer is not a replay")

			for range 2 {
				again := b.c.post(path, tc.form, "replay-"+tc.name)
				require.Equal(t, tc.status, again.status)
				require.Equal(t, []string{"true"}, again.header.Values("Idempotent-Replayed"))
				require.Equal(t, first.body, again.body, "the stored body, unchanged")
				require.NotEqual(t, first.header.Get("Request-Id"), again.header.Get("Request-Id"), "a new request id per delivery")
			}
			require.LessOrEqual(t, len(b.f.Truth().Payments), 2, "a replay does nothing")
		})
	}
}

// Answers that are not stored are never marked replayed: a 429 (the
// limiters run before the idempotency layer), a validation error (the
// endpoint never began executing), a 409 for a key still in use.
func TestReplayedHeaderNeverOnUnstoredAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	b.f.Script(createPI, mocks.FaultRateLimit429, mocks.FaultRateLimit429)
	for range 2 {
		r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "unstored")
		require.Equal(t, http.StatusTooManyRequests, r.status)
		require.Empty(t, r.header.Values("Idempotent-Replayed"))
	}
	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "unstored")
	require.Equal(t, http.StatusOK, r.status)
	require.Empty(t, r.header.Values("Idempotent-Replayed"), "the first executed answer")

	bad := url.Values{"amount": {"-5"}, "currency": {"usd"}}
	for range 2 {
		r := b.c.post("/v1/payment_intents", bad, "invalid")
		require.Equal(t, http.StatusBadRequest, r.status)
		require.Empty(t, r.header.Values("Idempotent-Replayed"), "validation failures are not saved")
	}
}

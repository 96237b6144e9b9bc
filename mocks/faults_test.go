package mocks_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

var createPI = mocks.Match{Method: "POST", Path: "/v1/payment_intents"}

func TestFaultDropAfterProcessing(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	c := noKeepAlive(t, b.f)
	b.f.Script(createPI, mocks.FaultDropAfterProcessing)

	_, err := c.do(context.Background(), http.MethodPost, "/v1/payment_intents", charge("1000", "pm_card_visa", "order", "d"), "drop-1")
	require.Error(t, err, "the client never hears back")

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"d": 1}, truth.ChargesBy("order"), "but the card was charged")
	require.Equal(t, 1, truth.Faults[mocks.FaultDropAfterProcessing])

	// A resend with the same key learns the outcome without a second charge.
	r := c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "d"), "drop-1")
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Equal(t, truth.Payments[0].ID, r.pi(t).ID)
	require.Len(t, b.f.Truth().Payments, 1)
}

// Go's http.Transport resends a request that carries an Idempotency-Key
// when a reused keep-alive connection fails before any answer: the caller
// then sees the replayed answer, not the drop.
func TestFaultDropAfterProcessingTransportRetry(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	b.c.get("/v1/payment_intents") // open a keep-alive connection
	b.f.Script(createPI, mocks.FaultDropAfterProcessing)

	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "drop-2")
	require.Equal(t, 200, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Equal(t, 2, b.f.Truth().Requests["POST /v1/payment_intents"])
	require.Len(t, b.f.Truth().Payments, 1)
}

func TestFaultHangAfterProcessing(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{Options: mocks.Options{HangFor: time.Minute}})
	b.f.Script(createPI, mocks.FaultHangAfterProcessing)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := b.c.do(ctx, http.MethodPost, "/v1/payment_intents", charge("1000", "pm_card_visa"), "hang-1")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Len(t, b.f.Truth().Payments, 1, "processed before the hang")

	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "hang-1")
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Len(t, b.f.Truth().Payments, 1)
}

// A hang ends after HangFor and a slow answer comes after SlowFor: either
// way the payment succeeds and the fault is counted.
func TestFaultDelays(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault mocks.FaultKind
		opts  mocks.StripeOptions
		delay time.Duration
	}{
		{mocks.FaultHangAfterProcessing, mocks.StripeOptions{Options: mocks.Options{HangFor: 20 * time.Millisecond}}, 20 * time.Millisecond},
		{mocks.FaultSlow, mocks.StripeOptions{Options: mocks.Options{SlowFor: 30 * time.Millisecond}}, 30 * time.Millisecond},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t, tc.opts)
			b.f.Script(createPI, tc.fault)
			start := time.Now()
			r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "")
			require.GreaterOrEqual(t, time.Since(start), tc.delay)
			require.Equal(t, "succeeded", r.pi(t).Status)
			require.Equal(t, 1, b.f.Truth().Faults[tc.fault])
		})
	}
}

// A proxy's 502 says nothing of the request: before it reached the
// provider nothing happened and nothing is stored under the key; after, the
// payment was made and a repeat replays it.
func TestFaultGateway502(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fault    mocks.FaultKind
		key      string
		payments int    // made by the first request
		replayed string // Idempotent-Replayed of the repeat
	}{
		{mocks.FaultGatewayBefore502, "gw-1", 0, ""},
		{mocks.FaultGatewayAfter502, "gw-2", 1, "true"},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			t.Parallel()
			b := setup(t, mocks.StripeOptions{})
			b.f.Script(createPI, tc.fault)
			r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), tc.key)
			require.Equal(t, http.StatusBadGateway, r.status)
			require.True(t, strings.HasPrefix(r.header.Get("Content-Type"), "text/html"))
			require.NotEmpty(t, r.header.Get("Request-Id"))
			require.Len(t, b.f.Truth().Payments, tc.payments)

			r = b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), tc.key)
			require.Equal(t, tc.replayed, r.header.Get("Idempotent-Replayed"))
			require.Equal(t, "succeeded", r.pi(t).Status)
			require.Len(t, b.f.Truth().Payments, 1)
		})
	}
}

func TestFaultRateLimit429(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{Options: mocks.Options{RetryAfter: 1500 * time.Millisecond}})
	b.f.Script(createPI, mocks.FaultRateLimit429)
	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "rl-1")
	e := r.err(t, http.StatusTooManyRequests)
	require.Equal(t, "rate_limit", e.Code)
	require.Equal(t, "invalid_request_error", e.Type)
	require.Equal(t, "2", r.header.Get("Retry-After"))
	require.Empty(t, b.f.Truth().Payments)

	r = b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "rl-1")
	require.Empty(t, r.header.Get("Idempotent-Replayed"), "429s are answered before the idempotency layer")
	require.Equal(t, "succeeded", r.pi(t).Status)
}

func TestFaultStored500(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	b.f.Script(createPI, mocks.FaultStored500)
	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "s500")
	e := r.err(t, http.StatusInternalServerError)
	require.Equal(t, "api_error", e.Type)
	require.Empty(t, b.f.Truth().Payments, "nothing processed")

	again := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "s500")
	require.Equal(t, http.StatusInternalServerError, again.status)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"), "Stripe replays 500s too")
	require.Equal(t, r.body, again.body)
	require.Empty(t, b.f.Truth().Payments)

	// Another key is another request; the stored 500 lasts until the key
	// expires.
	require.Equal(t, "succeeded", b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "other").pi(t).Status)
	b.clock.Advance(mocks.StripeKeyTTL)
	r = b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "s500")
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.Equal(t, "succeeded", r.pi(t).Status)
}

func TestFaultStored500OnReplayDoesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "k").pi(t)
	b.f.Script(createPI, mocks.FaultStored500)
	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "k")
	require.Equal(t, 200, r.status)
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Zero(t, b.f.Truth().Faults[mocks.FaultStored500])
	require.Zero(t, b.f.PendingFaults())
}

func TestFaultsOnGET(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	pi := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "").pi(t)

	// A match without a method only applies to POSTs.
	b.f.Script(mocks.Match{Path: "/v1/payment_intents/{id}"}, mocks.FaultStored500)
	require.Equal(t, 200, b.c.get("/v1/payment_intents/"+pi.ID).status)
	require.Equal(t, 1, b.f.PendingFaults())
	b.f.ClearScripts()

	b.f.Script(mocks.Match{Method: "GET", Path: "/v1/payment_intents/{id}"},
		mocks.FaultStored500, mocks.FaultGatewayBefore502, mocks.FaultNone, mocks.FaultRateLimit429)
	require.Equal(t, 500, b.c.get("/v1/payment_intents/"+pi.ID).status)
	require.Equal(t, 502, b.c.get("/v1/payment_intents/"+pi.ID).status)
	require.Equal(t, 200, b.c.get("/v1/payment_intents/"+pi.ID).status)
	require.Equal(t, 429, b.c.get("/v1/payment_intents/"+pi.ID).status)
	require.Equal(t, 200, b.c.get("/v1/payment_intents/"+pi.ID).status, "script consumed")

	b.f.Script(mocks.Match{Method: "GET", Path: "/v1/payment_intents/search"}, mocks.FaultGatewayAfter502)
	require.Equal(t, 502, b.c.get(searchPath("status:'succeeded'")).status)
}

func TestFaultScriptMatching(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	form := manual(charge("1000", "pm_card_visa"))
	held := b.c.post("/v1/payment_intents", form, "").pi(t)

	b.f.Script(mocks.Match{IdempotencyKey: "target"}, mocks.FaultGatewayBefore502)
	b.f.Script(mocks.Match{Path: "/v1/payment_intents/{id}/capture"}, mocks.FaultGatewayAfter502)
	require.Equal(t, 200, b.c.post("/v1/payment_intents", charge("1", "pm_card_visa"), "not-target").status)
	require.Equal(t, 502, b.c.post("/v1/payment_intents", charge("1", "pm_card_visa"), "target").status)
	require.Equal(t, 502, b.c.post("/v1/payment_intents/"+held.ID+"/capture", nil, "cap").status)
	p, _ := b.f.Truth().Payment(held.ID)
	require.Equal(t, "succeeded", p.Status, "captured behind the 502")
	require.Zero(t, b.f.PendingFaults())
}

func TestFaultRatesAreSeeded(t *testing.T) {
	t.Parallel()
	run := func(seed int64) []int {
		b := setup(t, mocks.StripeOptions{
			Options: mocks.Options{
				Seed: seed, FaultRates: map[mocks.FaultKind]float64{
					mocks.FaultGatewayBefore502: 0.3, mocks.FaultRateLimit429: 0.2},
			},
		})
		var statuses []int
		for range 40 {
			statuses = append(statuses, b.c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "").status)
			statuses = append(statuses, b.c.get("/v1/payment_intents").status)
		}
		truth := b.f.Truth()
		require.Equal(t, truth.Faults[mocks.FaultGatewayBefore502]+truth.Faults[mocks.FaultRateLimit429]+len(truth.Payments), 40,
			"GETs are spared unless FaultGETs is set")
		return statuses
	}
	a, a2, other := run(42), run(42), run(43)
	require.Equal(t, a, a2)
	require.NotEqual(t, a, other)
	require.Contains(t, a, 502)
	require.Contains(t, a, 429)
}

func TestFaultRatesOnGETs(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{Options: mocks.Options{FaultGETs: true, FaultRates: map[mocks.FaultKind]float64{mocks.FaultStored500: 1}}})
	require.Equal(t, 500, b.c.get("/v1/payment_intents").status)
	require.Equal(t, 500, b.c.get("/v1/payment_intents").status)
	require.Equal(t, 2, b.f.Truth().Faults[mocks.FaultStored500])
}

func TestFaultKindString(t *testing.T) {
	t.Parallel()
	require.Equal(t, "drop_after_processing", mocks.FaultDropAfterProcessing.String())
	require.Equal(t, "stored_500", mocks.FaultStored500.String())
	require.Equal(t, "FaultKind(99)", mocks.FaultKind(99).String())
}

func TestReleaseEndsHeldRequests(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{Options: mocks.Options{HangFor: time.Hour}})
	b.f.Script(createPI, mocks.FaultHangAfterProcessing)
	done := b.c.postAsync("/v1/payment_intents", charge("1000", "pm_card_visa"), "")
	require.Eventually(t, func() bool { return len(b.f.Truth().Payments) == 1 }, 5*time.Second, time.Millisecond)
	b.f.Close()
	select {
	case r := <-done:
		require.Equal(t, 200, r.status, "a released request is answered")
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not release the held request")
	}
}

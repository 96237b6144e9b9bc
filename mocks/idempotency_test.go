package mocks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func TestIdempotencyReplay(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	first := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "1"), "order-1")
	require.Equal(t, 200, first.status)

	second := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "1"), "order-1")
	require.Equal(t, 200, second.status)
	require.Equal(t, "true", second.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, second.body, "a replay is byte for byte the first answer")
	require.NotEqual(t, first.header.Get("Request-Id"), second.header.Get("Request-Id"))
	require.Equal(t, first.header.Get("Request-Id"), second.header.Get("Original-Request"))

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 1)
	require.Equal(t, 1, truth.Replays)
	require.Equal(t, 2, truth.Requests["POST /v1/payment_intents"])

	// Parameter order does not make another request.
	reordered := url.Values{"payment_method": {"pm_card_visa"}, "confirm": {"true"}, "metadata[order]": {"1"},
		"currency": {"usd"}, "amount": {"1000"}}
	require.Equal(t, "true", b.c.post("/v1/payment_intents", reordered, "order-1").header.Get("Idempotent-Replayed"))
}

func TestIdempotencyReplaysDeclinesAndStateErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	first := b.c.post("/v1/payment_intents", charge("1000", "pm_card_chargeDeclined"), "d-1")
	first.err(t, 402)
	again := b.c.post("/v1/payment_intents", charge("1000", "pm_card_chargeDeclined"), "d-1")
	require.Equal(t, 402, again.status)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, again.body)

	paid := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "").pi(t)
	c1 := b.c.post("/v1/payment_intents/"+paid.ID+"/cancel", nil, "cancel-1")
	c1.err(t, 400)
	c2 := b.c.post("/v1/payment_intents/"+paid.ID+"/cancel", nil, "cancel-1")
	require.Equal(t, "true", c2.header.Get("Idempotent-Replayed"))
	require.Len(t, b.f.Truth().Payments, 2)
}

func TestIdempotencyMismatch(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "k").pi(t)

	e := b.c.post("/v1/payment_intents", charge("1001", "pm_card_visa"), "k").err(t, 400)
	require.Equal(t, "idempotency_error", e.Type)
	require.Contains(t, e.Message, "Keys for idempotent requests can only be used with the same parameters")

	pi := b.f.Truth().Payments[0]
	e = b.c.post("/v1/payment_intents/"+pi.ID+"/cancel", nil, "k").err(t, 400)
	require.Equal(t, "idempotency_error", e.Type, "another path with the same key")

	// The mismatches changed nothing and did not replace the stored answer.
	require.Len(t, b.f.Truth().Payments, 1)
	require.Equal(t, 2, b.f.Truth().KeyMismatch)
	require.Equal(t, "true", b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "k").header.Get("Idempotent-Replayed"))
}

func TestIdempotencyScopedPerAPIKey(t *testing.T) {
	t.Parallel()
	f := mocks.NewStripe(mocks.StripeOptions{APIKeys: []string{"sk_test_account_one_0001", "sk_test_account_two_0002"}})
	t.Cleanup(f.Close)
	one := newClient(t, f, f.Client())
	two := newClient(t, f, f.Client())
	two.key = "sk_test_account_two_0002"
	one.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "same").pi(t)
	r := two.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "same")
	r.pi(t)
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.Len(t, f.Truth().Payments, 2)
}

func TestIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{Options: mocks.Options{SlowFor: time.Minute}})
	b.f.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultSlow)

	done := b.c.postAsync("/v1/payment_intents", charge("1000", "pm_card_visa"), "busy")
	require.Eventually(t, func() bool { return b.f.Truth().Faults[mocks.FaultSlow] == 1 },
		5*time.Second, time.Millisecond, "the first request holds the key")

	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "busy")
	e := r.err(t, http.StatusConflict)
	require.Equal(t, "idempotency_key_in_use", e.Code)
	require.Equal(t, "true", r.header.Get("Stripe-Should-Retry"))
	require.Empty(t, b.f.Truth().Payments, "the first request has not been processed yet")

	b.f.Release()
	first := <-done
	require.Equal(t, 200, first.status)
	again := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "busy")
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.body, again.body)

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 1)
	require.Equal(t, 1, truth.KeyInUse)
}

func TestIdempotencyConcurrentSameKey(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	const n = 20
	var answers []<-chan *result
	for range n {
		answers = append(answers, b.c.postAsync("/v1/payment_intents", charge("1000", "pm_card_visa"), "race"))
	}
	counts := map[int]int{}
	for _, answer := range answers {
		counts[(<-answer).status]++
	}
	require.Equal(t, n, counts[200]+counts[409], counts)
	truth := b.f.Truth()
	require.Len(t, truth.Payments, 1, "exactly one request was processed")
	require.Equal(t, counts[409], truth.KeyInUse)
	require.Equal(t, counts[200]-1, truth.Replays)
}

func TestIdempotencyKeyTTL(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{Options: mocks.Options{KeyTTL: 24 * time.Hour}})
	first := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "7"), "order-7").pi(t)

	b.clock.Advance(24*time.Hour - time.Second)
	r := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "7"), "order-7")
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.Equal(t, first.ID, r.pi(t).ID)

	// Once the key is forgotten, the same request is a new charge: this is
	// why resending after the window is dangerous.
	b.clock.Advance(time.Second)
	r = b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "7"), "order-7")
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.NotEqual(t, first.ID, r.pi(t).ID)

	truth := b.f.Truth()
	require.Equal(t, map[string]int{"7": 2}, truth.ChargesBy("order"))
	require.Equal(t, []string{"7"}, truth.Duplicates("order"))

	// The window of the new request runs from its own first use.
	b.clock.Advance(23 * time.Hour)
	require.Equal(t, "true", b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "7"), "order-7").header.Get("Idempotent-Replayed"))
}

func TestIdempotencyIgnoredOnGET(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	pi := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa"), "g").pi(t)
	r, err := b.c.do(context.Background(), http.MethodGet, "/v1/payment_intents/"+pi.ID, nil, "g")
	require.NoError(t, err)
	require.Equal(t, 200, r.status)
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.Equal(t, 0, b.f.Truth().KeyMismatch)
}

// Truth counts what the fake really did: payments and refunds by
// reference, charges made twice under two keys, totals, requests, faults
// and the idempotency layer's decisions.
func TestTruthCounts(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	p1 := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "payonce_op", "op-1"), "k1").pi(t)
	b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "payonce_op", "op-1"), "k1") // replay
	// The same reference under another key: a real duplicate charge.
	b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "payonce_op", "op-1"), "k1-other").pi(t)
	b.c.post("/v1/payment_intents", charge("500", "pm_card_chargeDeclined", "payonce_op", "op-2"), "k2").err(t, 402)
	form := charge("700", "pm_card_visa", "payonce_op", "op-3")
	form.Set("currency", "eur")
	b.c.post("/v1/payment_intents", form, "k3").pi(t)
	b.c.post("/v1/payment_intents", charge("1", "pm_card_visa"), "").pi(t)
	b.c.post("/v1/refunds", refundForm(p1.ID, "250", "payonce_op", "ref-1"), "r1").refund(t)
	b.c.post("/v1/payment_intents", charge("1001", "pm_card_visa", "payonce_op", "op-1"), "k1").err(t, 400)
	b.f.Script(createPI, mocks.FaultGatewayBefore502, mocks.FaultRateLimit429)
	b.c.post("/v1/payment_intents", charge("1", "pm_card_visa"), "")
	b.c.post("/v1/payment_intents", charge("1", "pm_card_visa"), "")
	b.c.get("/v1/payment_intents/" + p1.ID)

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 5)
	require.Equal(t, map[string]int{"op-1": 2, "op-3": 1}, truth.ChargesBy("payonce_op"))
	require.Equal(t, map[string]int{"op-1": 2, "op-2": 1, "op-3": 1}, truth.PaymentsBy("payonce_op"))
	require.Equal(t, []string{"op-1"}, truth.Duplicates("payonce_op"))
	require.Equal(t, map[string]int{"ref-1": 1}, truth.RefundsBy("payonce_op"))
	require.Equal(t, int64(2001), truth.TotalCharged("usd"))
	require.Equal(t, int64(700), truth.TotalCharged("EUR"))
	require.Equal(t, int64(250), truth.TotalRefunded("usd"))
	require.Equal(t, int64(0), truth.TotalRefunded("eur"))
	require.Equal(t, map[string]int{
		"POST /v1/payment_intents":     9,
		"POST /v1/refunds":             1,
		"GET /v1/payment_intents/{id}": 1,
	}, truth.Requests)
	require.Equal(t, map[mocks.FaultKind]int{mocks.FaultGatewayBefore502: 1, mocks.FaultRateLimit429: 1}, truth.Faults)
	require.Equal(t, 1, truth.Replays)
	require.Equal(t, 1, truth.KeyMismatch)
	require.Equal(t, 0, truth.KeyInUse)

	p, ok := truth.Payment(p1.ID)
	require.True(t, ok)
	require.Equal(t, int64(250), p.AmountRefunded)
	_, ok = truth.Payment("pi_nope")
	require.False(t, ok)

	// The snapshot is a copy.
	truth.Payments[0].Metadata["payonce_op"] = "changed"
	require.Equal(t, "op-1", b.f.Truth().Payments[0].Metadata["payonce_op"])
}

// Fifty clients charge and refund their own orders through random faults,
// retrying with the same key until they hear an answer: every order ends up
// charged once and refunded once.
func TestConcurrentClientsUnderFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{
		Options: mocks.Options{
			Seed:    11,
			HangFor: 300 * time.Millisecond,
			SlowFor: 5 * time.Millisecond,
			FaultRates: map[mocks.FaultKind]float64{
				mocks.FaultDropAfterProcessing: 0.05,
				mocks.FaultHangAfterProcessing: 0.03,
				mocks.FaultGatewayBefore502:    0.05,
				mocks.FaultGatewayAfter502:     0.05,
				mocks.FaultRateLimit429:        0.05,
				mocks.FaultSlow:                0.05,
			},
		},
	})
	const clients = 50
	shared := b.f.Client()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			hc := shared
			if i%2 == 1 {
				hc = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			}
			c := newClient(t, b.f, hc)
			op := fmt.Sprintf("op-%d", i)
			pi, err := untilAnswered(c, "/v1/payment_intents", charge("1000", "pm_card_visa", "payonce_op", op), "charge-"+op)
			if err != nil {
				errs <- err
				return
			}
			id := pi.raw(t)["id"].(string)
			_, err = untilAnswered(c, "/v1/refunds", refundForm(id, "500", "payonce_op", "refund-"+op), "refund-"+op)
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	truth := b.f.Truth()
	require.Empty(t, truth.Duplicates("payonce_op"))
	charges := truth.ChargesBy("payonce_op")
	require.Len(t, charges, clients)
	for op, n := range charges {
		require.Equal(t, 1, n, op)
	}
	for op, n := range truth.RefundsBy("payonce_op") {
		require.Equal(t, 1, n, op)
	}
	require.Len(t, truth.Refunds, clients)
	require.Equal(t, int64(clients*1000), truth.TotalCharged("usd"))
	require.Equal(t, int64(clients*500), truth.TotalRefunded("usd"))
	injected := 0
	for _, n := range truth.Faults {
		injected += n
	}
	require.Positive(t, injected)
	t.Logf("faults injected: %v; replays %d; keys in use %d", truth.Faults, truth.Replays, truth.KeyInUse)
}

// untilAnswered resends a POST with the same key until it gets a 200.
func untilAnswered(c *client, path string, form url.Values, key string) (*result, error) {
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		r, err := c.do(ctx, http.MethodPost, path, form, key)
		cancel()
		switch {
		case err != nil:
			// Maybe sent: resend with the same key.
		case r.status == http.StatusOK:
			return r, nil
		case r.status == http.StatusConflict, r.status == http.StatusTooManyRequests, r.status == http.StatusBadGateway:
			time.Sleep(2 * time.Millisecond)
		default:
			return nil, fmt.Errorf("%s %s: unexpected %d: %s", path, key, r.status, r.body)
		}
	}
	return nil, errors.New(path + " " + key + ": no answer after 200 attempts")
}

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

// Fifty clients charge and refund their own orders through random faults,
// retrying with the same key until they hear an answer: every order ends up
// charged once and refunded once.
func TestConcurrentClientsUnderFaults(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{
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
			_, err = untilAnswered(c, "/v1/refunds", url.Values{"payment_intent": {id}, "amount": {"500"},
				"metadata[payonce_op]": {"refund-" + op}}, "refund-"+op)
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

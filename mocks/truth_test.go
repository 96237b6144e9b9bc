package mocks_test

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

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
	b.c.post("/v1/refunds", url.Values{"payment_intent": {p1.ID}, "amount": {"250"}, "metadata[payonce_op]": {"ref-1"}}, "r1").refund(t)
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

func TestSeededIDsRepeat(t *testing.T) {
	t.Parallel()
	ids := func() []string {
		b := setup(t, mocks.StripeOptions{Seed: 5})
		var out []string
		for range 3 {
			r := b.c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "")
			out = append(out, r.pi(t).ID, r.header.Get("Request-Id"))
		}
		return append(out, b.f.APIKey())
	}
	require.Equal(t, ids(), ids())
}

package mocks_test

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

func search(t *testing.T, b *bundle, query string, extra ...string) mocks.StripeIntentSearch {
	t.Helper()
	q := url.Values{"query": {query}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	r := b.c.get("/v1/payment_intents/search?" + q.Encode())
	require.Equal(t, 200, r.status, string(r.body))
	var res mocks.StripeIntentSearch
	require.NoError(t, json.Unmarshal(r.body, &res))
	require.Equal(t, "search_result", res.Object)
	require.Equal(t, "/v1/payment_intents/search", res.URL)
	return res
}

func TestSearchLag(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{SearchLag: 30 * time.Second})
	pi := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "payonce_op", "op-1"), "").pi(t)

	res := search(t, b, "metadata['payonce_op']:'op-1'")
	require.Empty(t, res.Data, "not searchable yet")
	require.False(t, res.HasMore)
	r := b.c.get(searchPath("metadata['payonce_op']:'op-1'"))
	require.Nil(t, r.raw(t)["next_page"])

	// Retrieval and lists are not delayed.
	require.Equal(t, pi.ID, b.c.get("/v1/payment_intents/"+pi.ID).pi(t).ID)

	b.clock.Advance(29 * time.Second)
	require.Empty(t, search(t, b, "metadata['payonce_op']:'op-1'").Data)
	b.clock.Advance(time.Second)
	res = search(t, b, "metadata['payonce_op']:'op-1'")
	require.Equal(t, []string{pi.ID}, piIDs(res.Data))
}

func TestSearchQueries(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	a := b.c.post("/v1/payment_intents", charge("1000", "pm_card_visa", "order", "a", "shop", "x"), "").pi(t)
	b.clock.Advance(time.Second)
	form := charge("2500", "pm_card_chargeDeclined", "order", "b", "shop", "x")
	b.c.post("/v1/payment_intents", form, "").err(t, 402)
	bID := b.f.Truth().Payments[1].ID
	b.clock.Advance(time.Second)
	form = charge("4000", "pm_card_visa", "order", "c")
	form.Set("currency", "eur")
	form.Set("customer", "cus_123")
	c := b.c.post("/v1/payment_intents", form, "").pi(t)

	cases := []struct {
		query string
		want  []string
	}{
		{`metadata['order']:'a'`, []string{a.ID}},
		{`metadata["order"]:"b"`, []string{bID}},
		{`metadata['shop']:'x'`, []string{bID, a.ID}},
		{`metadata['shop']:'x' AND status:'succeeded'`, []string{a.ID}},
		{`metadata['order']:'a' OR metadata['order']:'c'`, []string{c.ID, a.ID}},
		{`-metadata['shop']:'x'`, []string{c.ID}},
		{`metadata['shop']:null`, []string{c.ID}},
		{`currency:'eur'`, []string{c.ID}},
		{`customer:'cus_123'`, []string{c.ID}},
		{`amount>1000`, []string{c.ID, bID}},
		{`amount>=1000 AND amount<4000`, []string{bID, a.ID}},
		{`amount:2500`, []string{bID}},
		{`status:'requires_payment_method'`, []string{bID}},
		{`metadata['order']:'zzz'`, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			require.Equal(t, tc.want, piIDs(search(t, b, tc.query).Data))
		})
	}

	// Pagination with next_page.
	first := search(t, b, "amount>0", "limit", "2")
	require.True(t, first.HasMore)
	require.NotEmpty(t, first.NextPage)
	require.Equal(t, []string{c.ID, bID}, piIDs(first.Data))
	second := search(t, b, "amount>0", "limit", "2", "page", first.NextPage)
	require.False(t, second.HasMore)
	require.Equal(t, []string{a.ID}, piIDs(second.Data))

	for _, bad := range []string{"", "metadata:'x'", "status>'a'", "description:'x'", "amount:'x'",
		"status:'a' AND currency:'b' OR amount:1", "status:'unterminated", "status:'a' status:'b'"} {
		r := b.c.get(searchPath(bad))
		e := r.err(t, 400)
		require.Equal(t, "invalid_request_error", e.Type, bad)
		require.Equal(t, "query", e.Param, bad)
	}
}

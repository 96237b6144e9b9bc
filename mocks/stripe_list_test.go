package mocks_test

import (
	"encoding/json"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// GET /v1/payment_intents as Stripe documents it
// (https://docs.stripe.com/api/payment_intents/list,
// https://docs.stripe.com/api/pagination): newest first, created
// filters, limit 1..100, starting_after while has_more, and a cursor Stripe
// does not know is an error, not an empty page.
func TestListIntentsPagesAWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	// 5 before the window, 205 in it (one a second), 3 after it.
	var before, in, after []string
	mk := func() string { return b.c.post("/v1/payment_intents", charge("100", "pm_card_visa"), "").pi(t).ID }
	for range 5 {
		before = append(before, mk())
	}
	b.clock.Advance(time.Minute)
	from := b.clock.Now().Unix()
	for i := range 205 {
		in = append(in, mk())
		if i%2 == 1 {
			b.clock.Advance(time.Second) // two per second: ties are ordered too
		}
	}
	to := b.clock.Now().Unix()
	b.clock.Advance(time.Minute)
	for range 3 {
		after = append(after, mk())
	}

	list := func(q url.Values) mocks.StripeIntentList {
		t.Helper()
		var l mocks.StripeIntentList
		r := b.c.get("/v1/payment_intents?" + q.Encode())
		require.Equal(t, 200, r.status, string(r.body))
		require.NoError(t, json.Unmarshal(r.body, &l))
		return l
	}
	window := func() url.Values {
		return url.Values{"created[gte]": {strconv.FormatInt(from, 10)}, "created[lte]": {strconv.FormatInt(to, 10)}, "limit": {"100"}}
	}
	var got []string
	q := window()
	pages := 0
	for {
		l := list(q)
		pages++
		got = append(got, piIDs(l.Data)...)
		if !l.HasMore {
			break
		}
		require.Len(t, l.Data, 100, "a page with more after it is full")
		q.Set("starting_after", l.Data[len(l.Data)-1].ID)
	}
	require.Equal(t, 3, pages)
	want := make([]string, 0, len(in))
	for i := len(in) - 1; i >= 0; i-- {
		want = append(want, in[i])
	}
	require.Equal(t, want, got, "every PaymentIntent of the window once, newest first")

	// gt / lt exclude the ends; gte / lte include them.
	q = url.Values{"created[gt]": {strconv.FormatInt(from, 10)}, "created[lt]": {strconv.FormatInt(to, 10)}, "limit": {"100"}}
	l := list(q)
	for _, pi := range l.Data {
		require.Greater(t, pi.Created, from)
		require.Less(t, pi.Created, to)
	}
	q = url.Values{"created[lt]": {strconv.FormatInt(from, 10)}}
	require.Equal(t, []string{before[4], before[3], before[2], before[1], before[0]}, piIDs(list(q).Data))
	q = url.Values{"created[gt]": {strconv.FormatInt(to, 10)}}
	require.Equal(t, []string{after[2], after[1], after[0]}, piIDs(list(q).Data))

	// A cursor outside the filtered window still places the page: the
	// objects after it in the newest-first order.
	q = window()
	q.Set("starting_after", after[0])
	require.Equal(t, want[:100], piIDs(list(q).Data))
	q.Set("starting_after", in[0])
	l = list(q)
	require.Empty(t, l.Data)
	require.False(t, l.HasMore)

	// Default limit 10.
	l = list(url.Values{})
	require.Len(t, l.Data, 10)
	require.True(t, l.HasMore)

	// Errors: limit out of 1..100, an unknown cursor, both cursors.
	for _, lim := range []string{"0", "101", "-1", "x"} {
		e := b.c.get("/v1/payment_intents?limit="+lim).err(t, 400)
		require.Equal(t, "limit", e.Param, lim)
		require.Equal(t, "invalid_request_error", e.Type)
	}
	e := b.c.get("/v1/payment_intents?limit=101").err(t, 400)
	require.Equal(t, "This value must be less than or equal to 100.", e.Message)
	e = b.c.get("/v1/payment_intents?starting_after=pi_unknown").err(t, 400)
	require.Equal(t, "resource_missing", e.Code)
	require.Equal(t, "starting_after", e.Param)
	require.Equal(t, "No such payment_intent: 'pi_unknown'", e.Message)
	e = b.c.get("/v1/payment_intents?ending_before=pi_unknown").err(t, 400)
	require.Equal(t, "ending_before", e.Param)
	e = b.c.get("/v1/payment_intents?starting_after="+in[0]+"&ending_before="+in[1]).err(t, 400)
	require.Equal(t, "parameters_exclusive", e.Code)
	e = b.c.get("/v1/payment_intents?created[gte]=soon").err(t, 400)
	require.Equal(t, "created[gte]", e.Param)

	// ending_before: the page just newer than the cursor.
	l = list(url.Values{"ending_before": {in[0]}, "limit": {"2"}})
	require.Equal(t, []string{in[2], in[1]}, piIDs(l.Data))
	require.True(t, l.HasMore)
}

// Lists are not delayed: a PaymentIntent is listed at once, while the
// search shows it only after SearchLag.
func TestListIntentsNotDelayed(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{SearchLag: time.Minute})
	pi := b.c.post("/v1/payment_intents", charge("100", "pm_card_visa", "payonce_op", "op-1"), "").pi(t)
	var l mocks.StripeIntentList
	require.NoError(t, json.Unmarshal(b.c.get("/v1/payment_intents?limit=100").body, &l))
	require.Equal(t, []string{pi.ID}, piIDs(l.Data))
	var s mocks.StripeIntentList
	q := url.Values{"query": {"metadata['payonce_op']:'op-1'"}}
	require.NoError(t, json.Unmarshal(b.c.get("/v1/payment_intents/search?"+q.Encode()).body, &s))
	require.Empty(t, s.Data, "the search lags")
}

// The refunds list pages the same way; an unknown cursor is an error.
func TestListRefundsUnknownCursor(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	e := b.c.get("/v1/refunds?starting_after=re_unknown").err(t, 400)
	require.Equal(t, "resource_missing", e.Code)
	require.Equal(t, "starting_after", e.Param)
}

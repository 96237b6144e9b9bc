package mocks_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// disputeList is GET /v1/disputes's answer; payment_intent and charge
// stay raw: an id, or the object when expanded.
type disputeList struct {
	Object  string `json:"object"`
	URL     string `json:"url"`
	HasMore bool   `json:"has_more"`
	Data    []struct {
		ID                  string          `json:"id"`
		Object              string          `json:"object"`
		Amount              int64           `json:"amount"`
		Currency            string          `json:"currency"`
		Created             int64           `json:"created"`
		Status              string          `json:"status"`
		Reason              string          `json:"reason"`
		IsChargeRefundable  bool            `json:"is_charge_refundable"`
		BalanceTransactions []any           `json:"balance_transactions"`
		PaymentIntent       json.RawMessage `json:"payment_intent"`
		Charge              json.RawMessage `json:"charge"`
	} `json:"data"`
}

// listDisputes is the fake's answer to GET /v1/disputes with query q.
func listDisputes(t *testing.T, b *bundle, q url.Values) disputeList {
	t.Helper()
	return decode[disputeList](t, b.c.get("/v1/disputes?"+q.Encode()), http.StatusOK)
}

// InjectDispute disputes a succeeded PaymentIntent's charge with no
// request and no webhook; the fake's Truth is unchanged by it (no charge,
// no refund); bad specs are refused, saying what is wrong.
func TestStripeInjectDispute(t *testing.T) {
	t.Parallel()
	b, rec := stripeHooks(t, mocks.WebhookDelivery{})
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa", "payonce_op", "op-1"), "k1").pi(t)
	held := b.c.post("/v1/payment_intents", manual(charge("900", "pm_card_visa")), "k2").pi(t)
	flush(t, b.f)
	sent := len(events[mocks.StripeEvent](t, rec))
	before := b.f.Truth()

	id, err := b.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: pi.ID})
	require.NoError(t, err)
	require.Regexp(t, `^du_\w+$`, id)
	flush(t, b.f)
	require.Len(t, events[mocks.StripeEvent](t, rec), sent, "no charge.dispute.created")
	after := b.f.Truth()
	require.Equal(t, before.Payments, after.Payments, "a dispute is no charge and no refund of the fake")
	require.Equal(t, before.Refunds, after.Refunds)
	require.Equal(t, before.Requests, after.Requests, "no request")
	require.Equal(t, map[string]int{"op-1": 1}, after.ChargesBy("payonce_op"))
	require.Zero(t, after.TotalRefunded("usd"))
	require.Equal(t, "succeeded", b.c.get("/v1/payment_intents/"+pi.ID).pi(t).Status, "a disputed PaymentIntent stays succeeded")

	l := listDisputes(t, b, url.Values{})
	require.Equal(t, "list", l.Object)
	require.Equal(t, "/v1/disputes", l.URL)
	require.Len(t, l.Data, 1)
	d := l.Data[0]
	require.Equal(t, id, d.ID)
	require.Equal(t, "dispute", d.Object)
	require.Equal(t, "needs_response", d.Status, "the default: a chargeback")
	require.Equal(t, "fraudulent", d.Reason)
	require.Equal(t, int64(1500), d.Amount, "the charge's amount")
	require.Equal(t, "usd", d.Currency)
	require.Equal(t, epoch.Unix(), d.Created)
	require.False(t, d.IsChargeRefundable)
	require.NotNil(t, d.BalanceTransactions)
	require.JSONEq(t, strconv.Quote(pi.ID), string(d.PaymentIntent))
	require.JSONEq(t, strconv.Quote(pi.LatestCharge), string(d.Charge))

	for _, tc := range []struct {
		spec mocks.StripeDisputeSpec
		want string
	}{
		{mocks.StripeDisputeSpec{PaymentIntent: pi.ID}, "disputed already"},
		{mocks.StripeDisputeSpec{PaymentIntent: held.ID}, "no succeeded PaymentIntent"},
		{mocks.StripeDisputeSpec{PaymentIntent: "pi_nope"}, "no succeeded PaymentIntent"},
		{mocks.StripeDisputeSpec{PaymentIntent: pi.ID, Status: "open"}, `Status "open"`},
		{mocks.StripeDisputeSpec{PaymentIntent: pi.ID, Reason: "bored"}, `Reason "bored"`},
		{mocks.StripeDisputeSpec{PaymentIntent: pi.ID, Amount: -1}, "negative"},
	} {
		_, err := b.f.InjectDispute(tc.spec)
		require.ErrorContains(t, err, tc.want)
	}
	other := b.c.post("/v1/payment_intents", charge("300", "pm_card_visa"), "k3").pi(t)
	_, err = b.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: other.ID, Amount: 301})
	require.ErrorContains(t, err, "more than the 300")
	require.Len(t, listDisputes(t, b, url.Values{}).Data, 1, "nothing made by a refused spec")
}

// SetDisputeStatus moves a dispute through its lifecycle, out of band; a
// final status does not move.
func TestStripeSetDisputeStatus(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	pi := b.c.post("/v1/payment_intents", charge("1500", "pm_card_visa"), "k1").pi(t)
	id, err := b.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: pi.ID, Status: "warning_needs_response", Reason: "product_not_received"})
	require.NoError(t, err)
	status := func() (string, bool) {
		d := listDisputes(t, b, url.Values{}).Data[0]
		return d.Status, d.IsChargeRefundable
	}
	s, refundable := status()
	require.Equal(t, "warning_needs_response", s)
	require.True(t, refundable, "an inquiry's payment can still be refunded")
	for _, next := range []string{"needs_response", "under_review", "lost"} {
		require.NoError(t, b.f.SetDisputeStatus(id, next))
		s, refundable = status()
		require.Equal(t, next, s)
		require.False(t, refundable)
	}
	require.ErrorContains(t, b.f.SetDisputeStatus(id, "won"), "lost, which is final")
	require.ErrorContains(t, b.f.SetDisputeStatus("du_nope", "won"), `no dispute "du_nope"`)
	require.ErrorContains(t, b.f.SetDisputeStatus(id, "closed"), `status "closed"`)
	s, _ = status()
	require.Equal(t, "lost", s)
}

// GET /v1/disputes as Stripe documents it
// (https://docs.stripe.com/api/disputes/list): newest first, created
// filters, payment_intent and charge filters, limit 1..100, starting_after
// while has_more (the fake's list paging, shared with its other lists),
// and expand[]=data.payment_intent or data.charge.
func TestListDisputesPagesAWindow(t *testing.T) {
	t.Parallel()
	b := setup(t, mocks.StripeOptions{})
	dispute := func(created time.Time, md ...string) (piID, duID string) {
		t.Helper()
		pi, err := b.f.InjectPaymentIntent(mocks.StripeIntentSpec{Amount: 100, Currency: "usd", Created: epoch})
		require.NoError(t, err)
		if len(md) > 0 {
			pi = b.c.post("/v1/payment_intents", charge("100", "pm_card_visa", md...), "").pi(t).ID
		}
		du, err := b.f.InjectDispute(mocks.StripeDisputeSpec{PaymentIntent: pi, Status: "lost", Created: created})
		require.NoError(t, err)
		return pi, du
	}
	from := epoch.Add(time.Hour)
	_, before := dispute(from.Add(-time.Second))
	var in []string
	for i := range 150 {
		_, du := dispute(from.Add(time.Duration(i/2) * time.Second)) // two per second: ties are ordered too
		in = append(in, du)
	}
	to := from.Add(75 * time.Second)
	_, after := dispute(to)
	window := url.Values{"created[gte]": {strconv.FormatInt(from.Unix(), 10)}, "created[lt]": {strconv.FormatInt(to.Unix(), 10)}, "limit": {"100"}}

	var got []string
	q := url.Values{}
	for k, v := range window {
		q[k] = v
	}
	pages := 0
	for {
		l := listDisputes(t, b, q)
		pages++
		for _, d := range l.Data {
			got = append(got, d.ID)
		}
		if !l.HasMore {
			break
		}
		require.Len(t, l.Data, 100)
		q.Set("starting_after", l.Data[len(l.Data)-1].ID)
	}
	require.Equal(t, 2, pages)
	require.Len(t, got, len(in))
	for i, id := range got {
		require.Equal(t, in[len(in)-1-i], id, "newest first")
	}
	require.NotContains(t, got, before)
	require.NotContains(t, got, after)

	// Filters, and the expansions: the PaymentIntent with its metadata,
	// the charge.
	pi, du := dispute(to.Add(time.Hour), "payonce_op", "op-x")
	l := listDisputes(t, b, url.Values{"payment_intent": {pi}, "expand[]": {"data.payment_intent", "data.charge"}})
	require.Len(t, l.Data, 1)
	require.Equal(t, du, l.Data[0].ID)
	var exp struct {
		ID       string            `json:"id"`
		Object   string            `json:"object"`
		Status   string            `json:"status"`
		Metadata map[string]string `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(l.Data[0].PaymentIntent, &exp))
	require.Equal(t, pi, exp.ID)
	require.Equal(t, "payment_intent", exp.Object)
	require.Equal(t, "succeeded", exp.Status)
	require.Equal(t, "op-x", exp.Metadata["payonce_op"])
	var ch struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	require.NoError(t, json.Unmarshal(l.Data[0].Charge, &ch))
	require.Equal(t, "charge", ch.Object)
	byCharge := listDisputes(t, b, url.Values{"charge": {ch.ID}})
	require.Len(t, byCharge.Data, 1)
	require.Equal(t, du, byCharge.Data[0].ID)
	require.Empty(t, listDisputes(t, b, url.Values{"payment_intent": {"pi_other"}}).Data)

	// Bad requests: an expansion the list does not offer, a cursor of no
	// dispute, limits, unknown parameters.
	e := b.c.get("/v1/disputes?expand[]=data.customer").err(t, http.StatusBadRequest)
	require.Contains(t, e.Message, "cannot be expanded (data.customer)")
	e = b.c.get("/v1/disputes?starting_after=du_nope").err(t, http.StatusBadRequest)
	require.Equal(t, "resource_missing", e.Code)
	require.Equal(t, "starting_after", e.Param)
	for _, lim := range []string{"0", "101"} {
		e = b.c.get("/v1/disputes?limit="+lim).err(t, http.StatusBadRequest)
		require.Equal(t, "limit", e.Param)
	}
	e = b.c.get("/v1/disputes?status=lost").err(t, http.StatusBadRequest)
	require.Equal(t, "parameter_unknown", e.Code, "Stripe's list has no status filter")
	require.Equal(t, 1, nonGET(b.f.Truth()), "one POST: the charge with metadata; the rest GETs and out of band")
}

// nonGET counts the requests the fake saw that were not GETs.
func nonGET(tr mocks.Truth) int {
	n := 0
	for route, c := range tr.Requests {
		if len(route) < 4 || route[:4] != "GET " {
			n += c
		}
	}
	return n
}

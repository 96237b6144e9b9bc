package mocks_test

import (
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

// ykListAll pages through a list with limit and the filter, returning the
// ids newest first and the number of pages.
func ykListAll(t *testing.T, b *ykBundle, path, filter string, limit int) (ids []string, pages int) {
	t.Helper()
	cursor := ""
	for ; ; pages++ {
		require.Less(t, pages, 100)
		q := fmt.Sprintf("%s?limit=%d%s", path, limit, filter)
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		var next string
		if path == "/v3/refunds" {
			l := decode[mocks.YooKassaRefundList](t, b.c.get(q), 200)
			for _, r := range l.Items {
				ids = append(ids, r.ID)
			}
			next = l.NextCursor
		} else {
			l := decode[mocks.YooKassaPaymentList](t, b.c.get(q), 200)
			for _, p := range l.Items {
				ids = append(ids, p.ID)
			}
			next = l.NextCursor
		}
		if next == "" {
			return ids, pages + 1
		}
		cursor = next
	}
}

func ykAt(t time.Time) string { return url.QueryEscape(t.Format("2006-01-02T15:04:05.000Z")) }

// The created_at filters of both lists, at their edges, and paging across
// more than 100 objects.
func TestYooKassaListCreatedRange(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})
	var pays []string // oldest first, one a second from epoch
	for i := range 130 {
		id, err := b.f.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 100000, Currency: "RUB", Created: epoch.Add(time.Duration(i) * time.Second)})
		require.NoError(t, err)
		pays = append(pays, id)
	}
	var refunds []string
	for i := range 120 {
		b.clock.Set(epoch.Add(time.Duration(i) * time.Second))
		id, err := b.f.InjectRefund(pays[0], 10, fmt.Sprintf("payonce_op:op-%d", i))
		require.NoError(t, err)
		refunds = append(refunds, id)
	}
	newestFirst := func(ids []string) []string {
		out := make([]string, 0, len(ids))
		for i := len(ids) - 1; i >= 0; i-- {
			out = append(out, ids[i])
		}
		return out
	}
	from, to := epoch.Add(5*time.Second), epoch.Add(110*time.Second)
	for _, c := range []struct {
		filter string
		lo, hi int // the objects [lo, hi) of the oldest-first list
	}{
		{"&created_at.gte=" + ykAt(from) + "&created_at.lt=" + ykAt(to), 5, 110},
		{"&created_at.gt=" + ykAt(from) + "&created_at.lte=" + ykAt(to), 6, 111},
		{"&created_at.gte=" + ykAt(from), 5, -1},
		{"&created_at.lt=" + ykAt(to), 0, 110},
	} {
		for _, l := range []struct {
			path string
			all  []string
		}{{"/v3/payments", pays}, {"/v3/refunds", refunds}} {
			hi := c.hi
			if hi < 0 {
				hi = len(l.all)
			}
			got, pages := ykListAll(t, b, l.path, c.filter, 100)
			require.Equal(t, newestFirst(l.all[c.lo:hi]), got, "%s%s", l.path, c.filter)
			require.Equal(t, (hi-c.lo+99)/100, pages)
		}
	}
	// Paging at the default limit (10) gives the same objects.
	got, pages := ykListAll(t, b, "/v3/payments", "&created_at.gte="+ykAt(from)+"&created_at.lt="+ykAt(to), 10)
	require.Equal(t, newestFirst(pays[5:110]), got)
	require.Equal(t, 11, pages)
	// A payment created while a listing is under way is newer than the
	// cursor: it is not in the pages that follow, and nothing repeats.
	l := decode[mocks.YooKassaPaymentList](t, b.c.get("/v3/payments?limit=100"), 200)
	_, err := b.f.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 100, Currency: "RUB", Created: epoch.Add(time.Hour)})
	require.NoError(t, err)
	l2 := decode[mocks.YooKassaPaymentList](t, b.c.get("/v3/payments?limit=100&cursor="+l.NextCursor), 200)
	require.Len(t, append(l.Items, l2.Items...), 130)
	require.Empty(t, l2.NextCursor)

	for _, bad := range []string{"limit=-1", "limit=x", "created_at.lt=2026-03-01", "created_at.gte=" + url.QueryEscape("2026-03-01 12:00:00")} {
		for _, path := range []string{"/v3/payments?", "/v3/refunds?"} {
			e := decode[mocks.YooKassaError](t, b.c.get(path+bad), 400)
			require.Equal(t, "invalid_request", e.Code, bad)
			require.NotEmpty(t, e.Parameter, bad)
		}
	}
}

// Out-of-band changes: what each does to the objects, the notifications
// and Truth.
func TestYooKassaOutOfBand(t *testing.T) {
	t.Parallel()
	b := ykSetup(t, mocks.YooKassaOptions{})

	// A payment no client sent, with metadata or none.
	id, err := b.f.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 50000, Currency: "RUB", Metadata: map[string]string{"payonce_op": "op-1"}})
	require.NoError(t, err)
	bare, err := b.f.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 7000, Currency: "RUB", Status: "canceled"})
	require.NoError(t, err)
	p := decode[mocks.YooKassaPayment](t, b.c.get("/v3/payments/"+id), 200)
	require.Equal(t, "succeeded", p.Status)
	require.Equal(t, "500.00", p.Amount.Value)
	require.Equal(t, "op-1", p.Metadata["payonce_op"])
	require.Equal(t, epoch.Format("2006-01-02T15:04:05.000Z"), p.CreatedAt)
	p = decode[mocks.YooKassaPayment](t, b.c.get("/v3/payments/"+bare), 200)
	require.Equal(t, "canceled", p.Status)
	require.Empty(t, p.Metadata)

	// A refund no client sent, on an existing payment.
	rid, err := b.f.InjectRefund(id, 20000, "payonce_op:op-9")
	require.NoError(t, err)
	r := decode[mocks.YooKassaRefund](t, b.c.get("/v3/refunds/"+rid), 200)
	require.Equal(t, "succeeded", r.Status)
	require.Equal(t, "200.00", r.Amount.Value)

	// A payment whose refunds stay pending, one that ends canceled.
	pending := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("100.00", "RUB", mocks.YooKassaMethodRefundPending, true), "kp"), 200)
	pr := decode[mocks.YooKassaRefund](t, b.c.post("/v3/refunds", map[string]any{"payment_id": pending.ID,
		"amount": map[string]string{"value": "60.00", "currency": "RUB"}, "description": "payonce_op:op-r"}, "kr"), 200)
	require.Equal(t, "pending", pr.Status)
	// What a pending refund holds is no longer refundable.
	e := decode[mocks.YooKassaError](t, b.c.post("/v3/refunds", map[string]any{"payment_id": pending.ID,
		"amount": map[string]string{"value": "50.00", "currency": "RUB"}}, "kr2"), 400)
	require.Equal(t, "amount.value", e.Parameter)
	require.Equal(t, int64(20000), b.f.Truth().TotalRefunded("RUB"), "a pending refund gave nothing back yet")
	require.NoError(t, b.f.CancelRefund(pr.ID))
	pr = decode[mocks.YooKassaRefund](t, b.c.get("/v3/refunds/"+pr.ID), 200)
	require.Equal(t, "canceled", pr.Status)
	require.Equal(t, "general_decline", pr.CancellationDetails.Reason)
	require.Error(t, b.f.CancelRefund(pr.ID), "a canceled refund is final")
	require.Error(t, b.f.SucceedRefund(pr.ID))
	// Released: the whole payment is refundable again.
	pr2 := decode[mocks.YooKassaRefund](t, b.c.post("/v3/refunds", map[string]any{"payment_id": pending.ID,
		"amount": map[string]string{"value": "100.00", "currency": "RUB"}}, "kr3"), 200)
	require.NoError(t, b.f.SucceedRefund(pr2.ID))

	// An authorization YooKassa releases when its capture period ends.
	held := decode[mocks.YooKassaPayment](t, b.c.post("/v3/payments", ykPayment("30.00", "RUB", mocks.YooKassaMethodSucceeds, false), "kh"), 200)
	require.NoError(t, b.f.ExpireAuthorization(held.ID))
	held = decode[mocks.YooKassaPayment](t, b.c.get("/v3/payments/"+held.ID), 200)
	require.Equal(t, "canceled", held.Status)
	require.Equal(t, &mocks.YooKassaCancellationDetails{Party: "yoo_money", Reason: "expired_on_capture"}, held.CancellationDetails)
	require.Error(t, b.f.ExpireAuthorization(held.ID))

	truth := b.f.Truth()
	require.Len(t, truth.Payments, 4)
	require.Len(t, truth.Refunds, 3)
	tp, _ := truth.Payment(id)
	require.Equal(t, mocks.TruthPayment{ID: id, Status: "succeeded", Amount: 50000, Currency: "RUB", Authorized: true,
		AmountCaptured: 50000, AmountRefunded: 20000, Metadata: map[string]string{"payonce_op": "op-1"}, Created: epoch}, tp)
	tp, _ = truth.Payment(bare)
	require.False(t, tp.Authorized)
	tp, _ = truth.Payment(pending.ID)
	require.Equal(t, int64(10000), tp.AmountRefunded, "only the refund that succeeded")
	tp, _ = truth.Payment(held.ID)
	require.True(t, tp.Authorized)
	require.Zero(t, tp.AmountCaptured)
	require.Equal(t, int64(30000), truth.TotalRefunded("RUB"))
	// Nothing out of band was a request.
	require.Equal(t, 3, truth.Requests["POST /v3/refunds"])

	// Bad inputs say what is wrong and change nothing.
	for _, s := range []mocks.YooKassaPaymentSpec{{Currency: "RUB"}, {Amount: 1, Currency: "rub"}, {Amount: 1, Currency: "RUB", Status: "refunded"}} {
		_, err := b.f.InjectPayment(s)
		require.Error(t, err, "%+v", s)
	}
	for _, c := range []struct {
		payment string
		amount  int64
	}{{"nope", 1}, {bare, 1}, {id, 0}, {id, 30001}} {
		_, err := b.f.InjectRefund(c.payment, c.amount, "")
		require.Error(t, err, "%+v", c)
	}
	require.Error(t, b.f.CancelRefund("nope"))
	require.Error(t, b.f.CancelRefund(rid), "a succeeded refund does not end canceled")
	require.Len(t, b.f.Truth().Payments, 4)
	require.Len(t, b.f.Truth().Refunds, 3)
}

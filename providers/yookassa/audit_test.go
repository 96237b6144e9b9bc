package yookassa_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/yookassa"
)

// waits records what the adapter waited for instead of sleeping.
type waits struct {
	mu sync.Mutex
	ds []time.Duration
}

func (w *waits) wait(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ds = append(w.ds, d)
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.ds...)
}

// auditFake starts the fake YooKassa on clock and an adapter pointed at it,
// whose waits are recorded.
func auditFake(t *testing.T, clock *mocks.ManualClock, opts mocks.YooKassaOptions) (*mocks.YooKassa, *yookassa.Provider, *waits) {
	t.Helper()
	opts.Clock = clock.Now
	f := mocks.NewYooKassa(opts)
	t.Cleanup(f.Close)
	p, err := yookassa.New(yookassa.Config{ShopID: f.ShopID(), SecretKey: f.SecretKey(), BaseURL: f.URL(), Now: clock.Now})
	require.NoError(t, err)
	w := &waits{}
	yookassa.SetWait(p, w.wait)
	return f, p, w
}

func listAll(t *testing.T, p *yookassa.Provider, hc payonce.HTTPDoer, q payonce.AuditQuery) (map[string]payonce.AuditObject, error) {
	t.Helper()
	got := map[string]payonce.AuditObject{}
	err := p.ListObjects(context.Background(), hc, q, func(o payonce.AuditObject) error {
		if _, dup := got[o.Ref]; dup {
			return fmt.Errorf("object %s listed twice", o.Ref)
		}
		got[o.Ref] = o
		return nil
	})
	return got, err
}

func TestAuditInfo(t *testing.T) {
	t.Parallel()
	p, err := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, LookupMargin: 3 * time.Minute})
	require.NoError(t, err)
	info := p.AuditInfo()
	require.Equal(t, []payonce.Kind{payonce.KindCharge, payonce.KindRefund}, info.ListedKinds)
	require.False(t, info.ByLookup)
	require.Equal(t, 3*time.Minute, info.Margin)
	require.Contains(t, info.Directions, "GET /v3/payments")
	require.Contains(t, info.Directions, "GET /v3/refunds")
	_, err = yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, AuditInterval: -time.Second})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "AuditInterval")
}

// More than a page of payments and of refunds, with objects at the edges of
// the period: at From is in, at To is out.
func TestListObjectsAgainstFake(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	to := from.Add(time.Hour)
	clock := mocks.NewManualClock(from.Add(-2 * time.Hour))
	f, p, w := auditFake(t, clock, mocks.YooKassaOptions{})

	inject := func(created time.Time, md map[string]string) string {
		id, err := f.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 150050, Currency: "RUB", Metadata: md, Created: created})
		require.NoError(t, err)
		return id
	}
	meta := func(op, key string) map[string]string {
		return map[string]string{yookassa.MetaOperation: op, yookassa.MetaKey: key, yookassa.MetaKind: "charge", "order_id": op}
	}
	// The refunded payment is older than the period: its refunds are in it.
	big := inject(from.Add(-time.Hour), meta("op-big", "op-big"))
	inject(from.Add(-time.Millisecond), meta("op-before", "op-before"))
	inject(to, meta("op-at-to", "op-at-to"))
	want := map[string]bool{}
	atFrom := inject(from, meta("op-at-from", "key-2"))
	want[atFrom] = true
	want[inject(to.Add(-time.Millisecond), nil)] = true
	var bare string
	for i := range 110 {
		var md map[string]string
		if i%2 == 0 {
			md = meta(fmt.Sprintf("op-%d", i), fmt.Sprintf("op-%d", i))
		}
		id := inject(from.Add(time.Duration(i+1)*10*time.Second), md)
		if md == nil {
			bare = id
		}
		want[id] = true
	}

	refundAt := func(at time.Time, desc string) string {
		clock.Set(at)
		id, err := f.InjectRefund(big, 10, desc)
		require.NoError(t, err)
		return id
	}
	refundAt(from.Add(-time.Millisecond), yookassa.RefundMarker+"opr-before")
	refundAt(to, yookassa.RefundMarker+"opr-at-to")
	marked := refundAt(from, "gift "+yookassa.RefundMarker+"opr-0 "+yookassa.RefundKeyMarker+"key-7")
	want[marked] = true
	gen0 := refundAt(from.Add(time.Second), yookassa.RefundMarker+"opr-1")
	want[gen0] = true
	unmarked := refundAt(from.Add(2*time.Second), "")
	want[unmarked] = true
	for i := range 100 {
		want[refundAt(from.Add(time.Duration(i+3)*20*time.Second), fmt.Sprintf("%sopr-x%d", yookassa.RefundMarker, i))] = true
	}

	before := f.Truth().Requests
	got, err := listAll(t, p, f.Client(), payonce.AuditQuery{From: from, To: to})
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for ref := range want {
		require.Contains(t, got, ref)
	}

	o := got[atFrom]
	require.Equal(t, payonce.AuditObject{Ref: atFrom, OperationID: "op-at-from", Key: "key-2", Kind: payonce.KindCharge,
		State: payonce.AuditSucceeded, Status: "succeeded", Amount: 150050, Currency: "RUB", Created: from}, o)
	// No payonce metadata: a charge of no operation.
	require.Equal(t, payonce.AuditObject{Ref: bare, Kind: payonce.KindCharge, State: payonce.AuditSucceeded, Status: "succeeded",
		Amount: 150050, Currency: "RUB", Created: got[bare].Created}, got[bare])
	// Refunds: the operation and key from the description, as Lookup reads
	// them; the payment they act on.
	require.Equal(t, payonce.AuditObject{Ref: marked, OperationID: "opr-0", Key: "key-7", Kind: payonce.KindRefund,
		State: payonce.AuditSucceeded, Status: "succeeded", Amount: 10, Currency: "RUB", Created: from, PaymentRef: big}, got[marked])
	require.Equal(t, "opr-1", got[gen0].OperationID)
	require.Equal(t, "opr-1", got[gen0].Key, "generation 0: the key is the operation id")
	require.Equal(t, payonce.AuditObject{Ref: unmarked, Kind: payonce.KindRefund, State: payonce.AuditSucceeded, Status: "succeeded",
		Amount: 10, Currency: "RUB", Created: from.Add(2 * time.Second), PaymentRef: big}, got[unmarked])

	// 112 payments and 103 refunds: two pages each, GETs only, and a
	// paced pause before every request but the first.
	after := f.Truth().Requests
	for route, n := range after {
		if n != before[route] {
			require.True(t, strings.HasPrefix(route, "GET "), "the audit sent %s", route)
		}
	}
	require.Equal(t, 2, after["GET /v3/payments"]-before["GET /v3/payments"])
	require.Equal(t, 2, after["GET /v3/refunds"]-before["GET /v3/refunds"])
	require.Equal(t, []time.Duration{yookassa.DefaultAuditInterval, yookassa.DefaultAuditInterval, yookassa.DefaultAuditInterval}, w.all())
}

// listServer answers GET /v3/payments and /v3/refunds with one page each
// and records every request.
type listServer struct {
	mu       sync.Mutex
	reqs     []*http.Request
	payments string
	refunds  string
}

func (s *listServer) start(t *testing.T) (*yookassa.Provider, *http.Client, *waits) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		items := map[string]string{"/v3/payments": s.payments, "/v3/refunds": s.refunds}[r.URL.Path]
		s.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(rw, `{"type":"list","items":[`+items+`]}`)
	}))
	t.Cleanup(srv.Close)
	p, err := yookassa.New(yookassa.Config{ShopID: testShopID, SecretKey: testSecret, BaseURL: srv.URL})
	require.NoError(t, err)
	w := &waits{}
	yookassa.SetWait(p, w.wait)
	return p, srv.Client(), w
}

func ykPaymentJSON(id, status, reason string) string {
	cd := ""
	if reason != "" {
		cd = `,"cancellation_details":{"party":"payment_network","reason":"` + reason + `"}`
	}
	return `{"id":"` + id + `","status":"` + status + `","paid":false,"amount":{"value":"10.5","currency":"RUB"},` +
		`"created_at":"2026-03-01T12:30:00.123Z","metadata":{"payonce_op":"op-` + id + `","payonce_key":"k-` + id + `","payonce_kind":"charge"}` + cd + `}`
}

func ykRefundJSON(id, status string) string {
	return `{"id":"` + id + `","payment_id":"pay-1","status":"` + status + `","amount":{"value":"3.00","currency":"RUB"},` +
		`"created_at":"2026-03-01T12:30:00.123Z","description":"payonce_op:op-` + id + `"}`
}

// The states table: the status (and reason) of each object, and what the
// audit makes of it; and the request each list is read with.
func TestListObjectsStates(t *testing.T) {
	t.Parallel()
	payments := []struct {
		id, status, reason string
		want               payonce.AuditState
	}{
		{"p-succeeded", "succeeded", "", payonce.AuditSucceeded},
		{"p-held", "waiting_for_capture", "", payonce.AuditSucceeded},
		{"p-pending", "pending", "", payonce.AuditProcessing},
		{"p-declined", "canceled", "insufficient_funds", payonce.AuditFailed},
		{"p-unconfirmed", "canceled", "expired_on_confirmation", payonce.AuditFailed},
		{"p-canceled", "canceled", "canceled_by_merchant", payonce.AuditCanceled},
		{"p-expired", "canceled", "expired_on_capture", payonce.AuditCanceled},
		{"p-no-details", "canceled", "", payonce.AuditFailed},
	}
	refunds := []struct {
		id, status string
		want       payonce.AuditState
	}{
		{"r-succeeded", "succeeded", payonce.AuditSucceeded},
		{"r-pending", "pending", payonce.AuditProcessing},
		{"r-canceled", "canceled", payonce.AuditFailed},
	}
	s := &listServer{}
	var items []string
	for _, c := range payments {
		items = append(items, ykPaymentJSON(c.id, c.status, c.reason))
	}
	s.payments = strings.Join(items, ",")
	items = nil
	for _, c := range refunds {
		items = append(items, ykRefundJSON(c.id, c.status))
	}
	s.refunds = strings.Join(items, ",")
	p, hc, w := s.start(t)

	// To has a sub-millisecond part: created_at.lt is rounded up.
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	to := time.Date(2026, 3, 1, 13, 0, 0, 500, time.UTC)
	got, err := listAll(t, p, hc, payonce.AuditQuery{From: from, To: to})
	require.NoError(t, err)
	created := time.Date(2026, 3, 1, 12, 30, 0, 123e6, time.UTC)
	for _, c := range payments {
		require.Equal(t, payonce.AuditObject{Ref: c.id, OperationID: "op-" + c.id, Key: "k-" + c.id, Kind: payonce.KindCharge,
			State: c.want, Status: c.status, Amount: 1050, Currency: "RUB", Created: created}, got[c.id], c.id)
	}
	for _, c := range refunds {
		require.Equal(t, payonce.AuditObject{Ref: c.id, OperationID: "op-" + c.id, Key: "op-" + c.id, Kind: payonce.KindRefund,
			State: c.want, Status: c.status, Amount: 300, Currency: "RUB", Created: created, PaymentRef: "pay-1"}, got[c.id], c.id)
	}
	require.Len(t, got, len(payments)+len(refunds))

	require.Len(t, s.reqs, 2)
	for i, path := range []string{"/v3/payments", "/v3/refunds"} {
		r := s.reqs[i]
		require.Equal(t, http.MethodGet, r.Method)
		require.Equal(t, path, r.URL.Path)
		require.Equal(t, "100", r.URL.Query().Get("limit"))
		require.Equal(t, "2026-03-01T12:00:00.000Z", r.URL.Query().Get("created_at.gte"))
		require.Equal(t, "2026-03-01T13:00:00.001Z", r.URL.Query().Get("created_at.lt"))
		require.Empty(t, r.URL.Query().Get("cursor"))
		require.Equal(t, wire.Authorization, r.Header.Get("Authorization"))
	}
	require.Equal(t, []time.Duration{yookassa.DefaultAuditInterval}, w.all(), "one page each: one pause, between the lists")
}

func TestListObjectsBadInputs(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q := payonce.AuditQuery{From: from, To: from.Add(time.Hour)}
	s := &listServer{payments: ykPaymentJSON("p1", "succeeded", "") + "," + ykPaymentJSON("p2", "succeeded", "")}
	p, hc, _ := s.start(t)

	for _, bad := range []payonce.AuditQuery{{}, {From: from}, {To: from}, {From: from, To: from}, {From: from.Add(time.Second), To: from},
		{From: from, To: from.Add(time.Hour), Report: strings.NewReader("csv")}} {
		_, err := listAll(t, p, hc, bad)
		require.Error(t, err, "%+v", bad)
	}
	require.Empty(t, s.reqs, "a bad query sends nothing")

	// An error from yield stops the listing and is returned as it is.
	stop := errors.New("stop here")
	n := 0
	err := p.ListObjects(context.Background(), hc, q, func(payonce.AuditObject) error { n++; return stop })
	require.Same(t, stop, err)
	require.Equal(t, 1, n)
	require.Len(t, s.reqs, 1, "the refunds are not read")

	// What the audit cannot read is an error, never a guess.
	for name, item := range map[string]string{
		"unknown status": ykPaymentJSON("p3", "on_hold", ""),
		"bad amount":     strings.Replace(ykPaymentJSON("p4", "succeeded", ""), `"10.5"`, `"10.555"`, 1),
		"bad currency":   strings.Replace(ykPaymentJSON("p5", "succeeded", ""), `"RUB"`, `"rub"`, 1),
		"bad created_at": strings.Replace(ykPaymentJSON("p6", "succeeded", ""), `2026-03-01T12:30:00.123Z`, `yesterday`, 1),
		"no id":          strings.Replace(ykPaymentJSON("", "succeeded", ""), `"id":"",`, ``, 1),
		"an error item":  `{"type":"error","id":"x"}`,
	} {
		s := &listServer{payments: item}
		p, hc, _ := s.start(t)
		_, err := listAll(t, p, hc, q)
		var apiErr *yookassa.APIError
		require.ErrorAs(t, err, &apiErr, name)
		require.NotContains(t, err.Error(), testSecret)
	}
	s = &listServer{payments: ykPaymentJSON("p7", "succeeded", ""), refunds: ykRefundJSON("r1", "reversed")}
	p, hc, _ = s.start(t)
	_, err = listAll(t, p, hc, q)
	require.ErrorContains(t, err, "refund r1")
}

// YooKassa signals a rate limit with HTTP 429 too_many_requests
// (https://yookassa.ru/developers/using-api/response-handling/http-codes);
// the fake adds retry_after (milliseconds). The audit waits it out and asks
// for the page again, a bounded number of times.
func TestListObjectsRateLimited(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := mocks.NewManualClock(from)
	f, p, w := auditFake(t, clock, mocks.YooKassaOptions{Options: mocks.Options{RetryAfter: 3 * time.Second}})
	id, err := f.InjectPayment(mocks.YooKassaPaymentSpec{Amount: 100, Currency: "RUB", Created: from.Add(time.Minute)})
	require.NoError(t, err)
	q := payonce.AuditQuery{From: from, To: from.Add(time.Hour)}

	f.Script(mocks.Match{Method: http.MethodGet, Path: "/v3/payments"}, mocks.FaultRateLimit429)
	got, err := listAll(t, p, f.Client(), q)
	require.NoError(t, err)
	require.Contains(t, got, id)
	require.Equal(t, []time.Duration{3 * time.Second, yookassa.DefaultAuditInterval}, w.all())
	require.Equal(t, 2, f.Truth().Requests["GET /v3/payments"])

	// Rate limited for good: the 429 after the last wait is the error.
	faults := make([]mocks.FaultKind, 10)
	for i := range faults {
		faults[i] = mocks.FaultRateLimit429
	}
	f.Script(mocks.Match{Method: http.MethodGet, Path: "/v3/refunds"}, faults...)
	_, err = listAll(t, p, f.Client(), q)
	var apiErr *yookassa.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, http.StatusTooManyRequests, apiErr.HTTPStatus)
	require.Equal(t, "too_many_requests", apiErr.Code)
	require.Len(t, w.all(), 2+1+5, "the pause before the refunds, five waits, then the error")
	require.Equal(t, 10-6, f.PendingFaults())

	// A wait cut short by the context ends the listing.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.ClearScripts()
	f.Script(mocks.Match{Method: http.MethodGet, Path: "/v3/payments"}, mocks.FaultRateLimit429)
	err = p.ListObjects(ctx, f.Client(), q, func(payonce.AuditObject) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
}

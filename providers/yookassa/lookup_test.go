package yookassa_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/yookassa"
)

var since = testNow.Add(-time.Hour)

func lookupQuery(kind payonce.Kind, paymentRef, providerRef string) payonce.LookupQuery {
	r := chargeReq()
	r = withKind(r, kind, r.Request.Amount, paymentRef)
	return payonce.LookupQuery{OperationID: r.OperationID, Key: r.Key, Request: r.Request, ProviderRef: providerRef, Since: since}
}

func pmOp(id, status, op string) string {
	return fmt.Sprintf(`{"id":%q,"status":%q,"amount":{"value":"1200.00","currency":"RUB"},"metadata":{"payonce_op":%q}}`, id, status, op)
}

// pmGen is a payment of op created under key, for amount (YooKassa's
// decimal string), with an optional cancellation.
func pmGen(id, status, op, key, value, cancel string) string {
	s := fmt.Sprintf(`{"id":%q,"status":%q,"amount":{"value":%q,"currency":"RUB"},"metadata":{"payonce_op":%q,"payonce_key":%q}`, id, status, value, op, key)
	if cancel != "" {
		s += `,"cancellation_details":` + cancel
	}
	return s + "}"
}

// serveObjects answers GET base+prefix/{id} with objs[id] (YooKassa's 404
// not_found for the others) and counts the reads.
func serveObjects(b bundle, prefix string, objs map[string]string, reads map[string]int) {
	testkit.ServeByID(b.MT, base+prefix, objs, reads, respond, func() *http.Response {
		return respond(404, `{"type":"error","id":"e404","code":"not_found","description":"not found"}`)
	})
}

var objectsOf = testkit.ByID

func ykList(next string, items ...string) string {
	s := `{"type":"list","items":[` + strings.Join(items, ",") + `]`
	if next != "" {
		s += `,"next_cursor":"` + next + `"`
	}
	return s + "}"
}

func refundJSON(id, status, desc string) string {
	return fmt.Sprintf(`{"id":%q,"payment_id":"p1","status":%q,"amount":{"value":"1200.00","currency":"RUB"},"description":%q}`, id, status, desc)
}

// getOK registers a GET answer and checks the request's headers.
func getOK(t *testing.T, b bundle, u string, status int, body string) {
	t.Helper()
	wire.ServeGET(b.MT, u, func() *http.Response { return respond(status, body) })
}

func TestLookupChargeByID(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	serve := func(t *testing.T, body string) (payonce.Provider, payonce.HTTPDoer, *httpmock.MockTransport) {
		b := setup(t)
		getOK(t, b, base+"/v3/payments/p1", 200, body)
		return b.P, b.HC, b.MT
	}
	testkit.RequireReadByID(t, serve, lookupQuery(payonce.KindCharge, "", "p1"), []testkit.ReadCase{
		{Name: "succeeded", Body: pmOp("p1", "succeeded", op), State: payonce.LookupSucceeded},
		{Name: "waiting_for_capture", Body: pmOp("p1", "waiting_for_capture", op), State: payonce.LookupSucceeded},
		{Name: "pending", Body: pmOp("p1", "pending", op), State: payonce.LookupProcessing},
		{Name: "declined", Body: pm("p1", "canceled", `{"party":"payment_network","reason":"card_expired"}`), State: payonce.LookupFailed, Code: "canceled", Decline: "card_expired"},
		{Name: "canceled bare", Body: pm("p1", "canceled", ""), State: payonce.LookupFailed, Code: "canceled"},
		{Name: "canceled by merchant after authorization", Body: pm("p1", "canceled", `{"party":"merchant","reason":"canceled_by_merchant"}`), State: payonce.LookupSucceeded},
		{Name: "expired on capture", Body: pm("p1", "canceled", `{"party":"yoo_money","reason":"expired_on_capture"}`), State: payonce.LookupSucceeded},
	}, 1)
}

func TestLookupChargeByIDNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	getOK(t, b, base+"/v3/payments/gone", 404, `{"type":"error","id":"e1","code":"not_found","description":"Payment not found"}`)
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "gone"))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupResult{State: payonce.LookupNotFound}, res)

	getOK(t, b, base+"/v3/payments/proxy", 404, `<html>Not Found</html>`)
	_, err = b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "proxy"))
	require.Error(t, err, "a 404 that is not YooKassa's proves nothing")
}

func TestLookupChargeSearch(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	for _, tc := range []struct {
		name    string
		pages   []string
		objects []string // what GET /v3/payments/{id} answers
		state   payonce.LookupState
		refs    []string
	}{
		{name: "none", pages: []string{ykList("")}, state: payonce.LookupNotFound},
		{name: "others only", pages: []string{ykList("", pmOp("p9", "succeeded", "other"), `{"id":"p8","status":"succeeded","amount":{"value":"1.00","currency":"RUB"}}`)}, state: payonce.LookupNotFound},
		{name: "one succeeded", pages: []string{ykList("", pmOp("p9", "succeeded", "other"), pmOp("p1", "succeeded", op))}, objects: []string{pmOp("p1", "succeeded", op)}, state: payonce.LookupSucceeded, refs: []string{"p1"}},
		{name: "one pending", pages: []string{ykList("", pmOp("p1", "pending", op))}, objects: []string{pmOp("p1", "pending", op)}, state: payonce.LookupProcessing, refs: []string{"p1"}},
		{name: "one declined", pages: []string{ykList("", pmOp("p1", "canceled", op))}, objects: []string{pmOp("p1", "canceled", op)}, state: payonce.LookupFailed, refs: []string{"p1"}},
		{name: "on the second page", pages: []string{ykList("c2", pmOp("p9", "succeeded", "other")), ykList("", pmOp("p1", "succeeded", op))}, objects: []string{pmOp("p1", "succeeded", op)}, state: payonce.LookupSucceeded, refs: []string{"p1"}},
		{name: "two across pages", pages: []string{ykList("c2", pmOp("p2", "succeeded", op)), ykList("", pmOp("p1", "succeeded", op))}, objects: []string{pmOp("p2", "succeeded", op), pmOp("p1", "succeeded", op)}, state: payonce.LookupMultiple, refs: []string{"p2", "p1"}},
		// The list is not trusted for status: the read by id decides.
		{name: "listed succeeded, read pending", pages: []string{ykList("", pmOp("p1", "succeeded", op))}, objects: []string{pmOp("p1", "pending", op)}, state: payonce.LookupProcessing, refs: []string{"p1"}},
		{name: "listed pending, read declined", pages: []string{ykList("", pmOp("p1", "pending", op))}, objects: []string{pmOp("p1", "canceled", op)}, state: payonce.LookupFailed, refs: []string{"p1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *yookassa.Config) { c.ListLag = 3 * time.Minute; c.LookupMargin = 5 * time.Minute })
			var queries []url.Values
			b.MT.RegisterResponder(http.MethodGet, base+"/v3/payments", func(req *http.Request) (*http.Response, error) {
				queries = append(queries, req.URL.Query())
				return respond(200, tc.pages[len(queries)-1]), nil
			})
			reads := map[string]int{}
			serveObjects(b, "/v3/payments", objectsOf(tc.objects...), reads)
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", ""))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State)
			require.Equal(t, tc.refs, res.Refs)
			if len(tc.refs) > 0 {
				require.Equal(t, tc.refs[0], res.ProviderRef)
			}
			require.Equal(t, 3*time.Minute, res.Lag, "lists may lag")
			require.Len(t, queries, len(tc.pages))
			for _, id := range tc.refs {
				require.Equal(t, 1, reads[id], "every hit is read again by id")
			}
			for i, q := range queries {
				require.Equal(t, "2026-03-01T10:55:00.000Z", q.Get("created_at.gte"), "Since minus the margin")
				require.Equal(t, "100", q.Get("limit"))
				if i == 0 {
					require.Empty(t, q.Get("cursor"))
				} else {
					require.Equal(t, "c2", q.Get("cursor"))
				}
			}
		})
	}
}

func TestLookupChargeSearchNeedsSinceAndOperation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := lookupQuery(payonce.KindCharge, "", "")
	q.Since = time.Time{}
	_, err := b.P.Lookup(context.Background(), b.HC, q)
	require.ErrorContains(t, err, "Since")
	q = lookupQuery(payonce.KindCharge, "", "")
	q.OperationID = ""
	_, err = b.P.Lookup(context.Background(), b.HC, q)
	require.ErrorContains(t, err, "OperationID")
	require.Zero(t, b.MT.GetTotalCallCount())
}

func TestLookupCaptureCancel(t *testing.T) {
	t.Parallel()
	capture, cancel := lookupQuery(payonce.KindCapture, "p1", ""), lookupQuery(payonce.KindCancel, "p1", "")
	testkit.RequireStates(t, func(t *testing.T, body string) (payonce.Provider, payonce.HTTPDoer) {
		b := setup(t)
		getOK(t, b, base+"/v3/payments/p1", 200, body)
		return b.P, b.HC
	}, []testkit.StateCase{
		{Name: "capture succeeded", Q: capture, Body: pm("p1", "succeeded", ""), State: payonce.LookupSucceeded},
		{Name: "capture waiting", Q: capture, Body: pm("p1", "waiting_for_capture", ""), State: payonce.LookupNotFound},
		{Name: "capture pending", Q: capture, Body: pm("p1", "pending", ""), State: payonce.LookupNotFound},
		{Name: "capture canceled", Q: capture, Body: pm("p1", "canceled", `{"party":"yoo_money","reason":"expired_on_capture"}`), State: payonce.LookupFailed, Code: "canceled"},
		{Name: "cancel canceled", Q: cancel, Body: pm("p1", "canceled", `{"party":"merchant","reason":"canceled_by_merchant"}`), State: payonce.LookupSucceeded},
		{Name: "cancel succeeded", Q: cancel, Body: pm("p1", "succeeded", ""), State: payonce.LookupFailed, Code: "unexpected_status"},
		{Name: "cancel waiting", Q: cancel, Body: pm("p1", "waiting_for_capture", ""), State: payonce.LookupNotFound},
	})
	b := setup(t)
	getOK(t, b, base+"/v3/payments/ref", 200, pm("ref", "canceled", ""))
	getOK(t, b, base+"/v3/payments/gone", 404, `{"type":"error","code":"not_found"}`)
	testkit.RequireActionFallback(t, b.P, b.HC, lookupQuery, "ref", "gone")
}

func TestLookupRefund(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	mine := func(id, status string) string { return refundJSON(id, status, "payonce_op:"+op) }
	for _, tc := range []struct {
		name  string
		pages []string
		state payonce.LookupState
		refs  []string
		decl  string
	}{
		{name: "none", pages: []string{ykList("")}, state: payonce.LookupNotFound},
		{name: "others", pages: []string{ykList("", refundJSON("r9", "succeeded", "payonce_op:"+op+"0"), refundJSON("r8", "succeeded", "manual refund"))}, state: payonce.LookupNotFound},
		{name: "succeeded", pages: []string{ykList("", refundJSON("r9", "succeeded", "x"), mine("r1", "succeeded"))}, state: payonce.LookupSucceeded, refs: []string{"r1"}},
		{name: "with caller text", pages: []string{ykList("", refundJSON("r1", "succeeded", "Returned goods payonce_op:"+op))}, state: payonce.LookupSucceeded, refs: []string{"r1"}},
		{name: "by metadata", pages: []string{ykList("", `{"id":"r1","payment_id":"p1","status":"succeeded","amount":{"value":"1200.00","currency":"RUB"},"metadata":{"payonce_op":"`+op+`"}}`)}, state: payonce.LookupSucceeded, refs: []string{"r1"}},
		{name: "pending", pages: []string{ykList("", mine("r1", "pending"))}, state: payonce.LookupProcessing, refs: []string{"r1"}},
		{name: "canceled", pages: []string{ykList("", `{"id":"r1","payment_id":"p1","status":"canceled","amount":{"value":"1200.00","currency":"RUB"},"description":"payonce_op:`+op+`","cancellation_details":{"party":"payment_network","reason":"general_decline"}}`)}, state: payonce.LookupFailed, refs: []string{"r1"}, decl: "general_decline"},
		{name: "second page", pages: []string{ykList("c2", refundJSON("r9", "succeeded", "x")), ykList("", mine("r1", "succeeded"))}, state: payonce.LookupSucceeded, refs: []string{"r1"}},
		{name: "two", pages: []string{ykList("", mine("r2", "succeeded"), mine("r1", "succeeded"))}, state: payonce.LookupMultiple, refs: []string{"r2", "r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var queries []url.Values
			b.MT.RegisterResponder(http.MethodGet, base+"/v3/refunds", func(req *http.Request) (*http.Response, error) {
				queries = append(queries, req.URL.Query())
				return respond(200, tc.pages[len(queries)-1]), nil
			})
			var items []string
			for _, pg := range tc.pages {
				var l struct{ Items []json.RawMessage }
				require.NoError(t, json.Unmarshal([]byte(pg), &l))
				for _, it := range l.Items {
					items = append(items, string(it))
				}
			}
			reads := map[string]int{}
			serveObjects(b, "/v3/refunds", objectsOf(items...), reads)
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "p1", ""))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State)
			require.Equal(t, tc.refs, res.Refs)
			require.Equal(t, tc.decl, res.DeclineCode)
			require.Equal(t, time.Minute, res.Lag)
			for _, q := range queries {
				require.Equal(t, "p1", q.Get("payment_id"))
			}
			for _, id := range tc.refs {
				require.Equal(t, 1, reads[id], "every hit is read again by id")
			}
		})
	}
	b := setup(t)
	_, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "", ""))
	require.ErrorContains(t, err, "PaymentRef")
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	huge := ykList("", `{"id":"x","pad":"`+strings.Repeat("x", 1<<20)+`"}`)
	echo := `{"type":"error","id":"e1","code":"invalid_credentials","description":"shop ` + testShopID + ` key ` + testSecret + `"}`
	serve := func(t *testing.T, tc testkit.LookupErrorCase) (payonce.Provider, payonce.HTTPDoer) {
		b := setup(t)
		b.MT.RegisterResponder(http.MethodGet, base+tc.URL, httpmock.NewStringResponder(tc.Status, tc.Body))
		return b.P, b.HC
	}
	testkit.RequireLookupErrors[*yookassa.APIError](t, serve, []testkit.LookupErrorCase{
		{Name: "500 by id", Q: lookupQuery(payonce.KindCharge, "", "p1"), URL: "/v3/payments/p1", Status: 500, Body: `{"type":"error","code":"internal_server_error"}`, Temporary: true},
		{Name: "429 list", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v3/payments", Status: 429, Body: `{"type":"error","code":"too_many_requests"}`, Temporary: true},
		{Name: "503 refunds", Q: lookupQuery(payonce.KindRefund, "p1", ""), URL: "/v3/refunds", Status: 503, Temporary: true},
		{Name: "401", Q: lookupQuery(payonce.KindCapture, "p1", ""), URL: "/v3/payments/p1", Status: 401, Body: echo},
		{Name: "malformed payment", Q: lookupQuery(payonce.KindCharge, "", "p1"), URL: "/v3/payments/p1", Status: 200, Body: `{"id":"p1",`, Temporary: true},
		{Name: "error object in 200", Q: lookupQuery(payonce.KindCancel, "p1", ""), URL: "/v3/payments/p1", Status: 200, Body: `{"type":"error","code":"x"}`, Temporary: true},
		{Name: "unknown status", Q: lookupQuery(payonce.KindCharge, "", "p1"), URL: "/v3/payments/p1", Status: 200, Body: pm("p1", "brand_new", "")},
		{Name: "list wrong type", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v3/payments", Status: 200, Body: `{"type":"payment","items":[]}`, Temporary: true},
		{Name: "list bad item", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v3/payments", Status: 200, Body: ykList("", `{"status":"succeeded"}`), Temporary: true},
		{Name: "list no progress", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v3/payments", Status: 200, Body: ykList("c1"), Temporary: true},
		{Name: "list oversized", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/v3/payments", Status: 200, Body: huge, Temporary: true},
		{Name: "refund bad item", Q: lookupQuery(payonce.KindRefund, "p1", ""), URL: "/v3/refunds", Status: 200, Body: ykList("", `{"type":"error"}`), Temporary: true},
	}, nil, testSecret, testShopID)
}

func TestLookupRefundUnknownStatusIsAnError(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rf := refundJSON("r1", "weird", "payonce_op:"+chargeReq().OperationID)
	getOK(t, b, base+"/v3/refunds", 200, ykList("", refundJSON("r1", "succeeded", "payonce_op:"+chargeReq().OperationID)))
	serveObjects(b, "/v3/refunds", objectsOf(rf), nil)
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "p1", ""))
	require.ErrorContains(t, err, "weird", "the status read by id counts, not the list's")
	require.Equal(t, payonce.LookupResult{}, res)
	var ae *yookassa.APIError
	require.False(t, errors.As(err, &ae), "not a temporary failure: %v", err)
}

func TestLookupTooManyPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	n := 0
	b.MT.RegisterResponder(http.MethodGet, base+"/v3/payments", func(*http.Request) (*http.Response, error) {
		n++
		return respond(200, ykList(fmt.Sprintf("c%d", n), pmOp("p", "succeeded", "other"))), nil
	})
	_, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", ""))
	require.ErrorContains(t, err, "by hand")
	require.Equal(t, 100, n)
}

func TestLookupTransportErrorAndBodyClosed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testkit.RequireLookupTransport(t, b.P, lookupQuery(payonce.KindCharge, "", "p1"),
		lookupQuery(payonce.KindCapture, "p1", ""), pm("p1", "succeeded", ""))
	_, err := b.P.Lookup(context.Background(), nil, lookupQuery(payonce.KindCharge, "", "p1"))
	require.Error(t, err)
	_, err = b.P.Lookup(context.Background(), b.HC, payonce.LookupQuery{Request: payonce.Request{Kind: "payout"}})
	require.ErrorContains(t, err, "unknown kind")
}

package checkout_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/checkout"
)

func lookupQuery(kind payonce.Kind, paymentRef, providerRef string) payonce.LookupQuery {
	r := chargeReq()
	r = withKind(r, kind, r.Request.Amount, paymentRef)
	return payonce.LookupQuery{OperationID: r.OperationID, Key: r.Key, Request: r.Request, ProviderRef: providerRef, Since: testNow}
}

func getPay(id, status string, approved bool, ref string) string {
	return fmt.Sprintf(`{"id":%q,"status":%q,"approved":%t,"amount":1999,"currency":"USD","reference":%q,"metadata":{}}`, id, status, approved, ref)
}

func list(total int, items ...string) string {
	return fmt.Sprintf(`{"limit":100,"skip":0,"total_count":%d,"data":[%s]}`, total, strings.Join(items, ","))
}

func act(id, typ string, approved any, ref, code string) string {
	a := "null"
	if approved != nil {
		a = fmt.Sprint(approved)
	}
	return fmt.Sprintf(`{"id":%q,"type":%q,"amount":1999,"approved":%s,"reference":%q,"response_code":%q,"response_summary":"summary %s"}`, id, typ, a, ref, code, code)
}

// getOK registers a GET answer and checks the request's headers.
func getOK(t *testing.T, b bundle, u string, status int, body string) {
	t.Helper()
	wire.ServeGET(b.MT, u, func() *http.Response { return respond(status, body) })
}

func TestLookupChargeByID(t *testing.T) {
	t.Parallel()
	serve := func(t *testing.T, body string) (payonce.Provider, payonce.HTTPDoer, *httpmock.MockTransport) {
		b := setup(t)
		getOK(t, b, base+"/payments/pay_1", 200, body)
		getOK(t, b, base+"/payments/pay_1/actions", 200, `[]`)
		return b.P, b.HC, b.MT
	}
	testkit.RequireReadByID(t, serve, lookupQuery(payonce.KindCharge, "", "pay_1"), []testkit.ReadCase{
		{Name: "captured", Body: getPay("pay_1", "Captured", true, chargeReq().OperationID), State: payonce.LookupSucceeded},
		{Name: "authorized", Body: getPay("pay_1", "Authorized", true, chargeReq().OperationID), State: payonce.LookupSucceeded},
		{Name: "voided after approval", Body: getPay("pay_1", "Voided", true, chargeReq().OperationID), State: payonce.LookupSucceeded},
		{Name: "refunded", Body: getPay("pay_1", "Refunded", true, chargeReq().OperationID), State: payonce.LookupSucceeded},
		{Name: "expired after approval", Body: getPay("pay_1", "Expired", true, chargeReq().OperationID), State: payonce.LookupSucceeded},
		{Name: "pending", Body: getPay("pay_1", "Pending", false, chargeReq().OperationID), State: payonce.LookupProcessing},
		{Name: "expired unapproved", Body: getPay("pay_1", "Expired", false, chargeReq().OperationID), State: payonce.LookupFailed, Code: "declined"},
	}, 0)
}

func TestLookupChargeDeclinedReadsTheCode(t *testing.T) {
	t.Parallel()
	b := setup(t)
	getOK(t, b, base+"/payments/pay_1", 200, getPay("pay_1", "Declined", false, chargeReq().OperationID))
	getOK(t, b, base+"/payments/pay_1/actions", 200, "["+act("act_1", "Authorization", false, "op", "20051")+"]")
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pay_1"))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupFailed, res.State)
	require.Equal(t, "declined", res.Code)
	require.Equal(t, "20051", res.DeclineCode)
	require.Equal(t, "summary 20051", res.Message)

	// The actions cannot be read: the decline is still certain.
	b2 := setup(t)
	getOK(t, b2, base+"/payments/pay_1", 200, getPay("pay_1", "Declined", false, chargeReq().OperationID))
	getOK(t, b2, base+"/payments/pay_1/actions", 500, ``)
	res, err = b2.P.Lookup(context.Background(), b2.HC, lookupQuery(payonce.KindCharge, "", "pay_1"))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupFailed, res.State)
	require.Empty(t, res.DeclineCode)
}

func TestLookupChargeByIDNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	getOK(t, b, base+"/payments/pay_gone", 404, ``)
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pay_gone"))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupResult{State: payonce.LookupNotFound}, res)

	// A 404 that is not Checkout.com's proves nothing.
	b.MT.RegisterResponder(http.MethodGet, base+"/payments/pay_proxy", func(*http.Request) (*http.Response, error) {
		r := respond(404, `<html>Not Found</html>`)
		return r, nil
	})
	_, err = b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pay_proxy"))
	require.Error(t, err)
	b.MT.RegisterResponder(http.MethodGet, base+"/payments/pay_noheader", func(*http.Request) (*http.Response, error) {
		r := respond(404, ``)
		r.Header.Del("Cko-Request-Id")
		return r, nil
	})
	_, err = b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", "pay_noheader"))
	require.Error(t, err)
}

// serveByID answers GET base+/payments/{id} with objs[id] (Checkout.com's
// 404 for the others) and an empty actions list, and counts the reads.
func serveByID(b bundle, objs map[string]string, reads map[string]int) {
	b.MT.RegisterRegexpResponder(http.MethodGet, regexp.MustCompile(`^`+regexp.QuoteMeta(base)+`/payments/[^/?]+/actions$`),
		func(*http.Request) (*http.Response, error) { return respond(200, `[]`), nil })
	testkit.ServeByID(b.MT, base+"/payments", objs, reads, respond, func() *http.Response { return respond(404, ``) })
}

var byID = testkit.ByID

func TestLookupChargeByReference(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	for _, tc := range []struct {
		name    string
		pages   []string
		objects []string // what GET /payments/{id} answers
		state   payonce.LookupState
		ref     string
		refs    []string
	}{
		{name: "none", pages: []string{list(0)}, state: payonce.LookupNotFound},
		{name: "one", pages: []string{list(1, getPay("pay_1", "Captured", true, op))}, objects: []string{getPay("pay_1", "Captured", true, op)}, state: payonce.LookupSucceeded, ref: "pay_1", refs: []string{"pay_1"}},
		{name: "one pending", pages: []string{list(1, getPay("pay_1", "Pending", false, op))}, objects: []string{getPay("pay_1", "Pending", false, op)}, state: payonce.LookupProcessing, ref: "pay_1", refs: []string{"pay_1"}},
		{name: "other reference ignored", pages: []string{list(1, getPay("pay_9", "Captured", true, op+"-x"))}, state: payonce.LookupNotFound},
		{name: "two: charged twice", pages: []string{list(2, getPay("pay_2", "Captured", true, op), getPay("pay_1", "Captured", true, op))},
			objects: []string{getPay("pay_2", "Captured", true, op), getPay("pay_1", "Captured", true, op)}, state: payonce.LookupMultiple, ref: "pay_2", refs: []string{"pay_2", "pay_1"}},
		{name: "second page: one declined, one captured", pages: []string{list(2, getPay("pay_2", "Declined", false, op)), `{"limit":100,"skip":1,"total_count":2,"data":[` + getPay("pay_1", "Captured", true, op) + `]}`},
			objects: []string{getPay("pay_2", "Declined", false, op), getPay("pay_1", "Captured", true, op)}, state: payonce.LookupSucceeded, ref: "pay_1", refs: []string{"pay_2", "pay_1"}},
		// The list is not trusted for status: the read by id decides.
		{name: "listed captured, read declined", pages: []string{list(1, getPay("pay_1", "Captured", true, op))}, objects: []string{getPay("pay_1", "Declined", false, op)}, state: payonce.LookupFailed, ref: "pay_1", refs: []string{"pay_1"}},
		{name: "listed pending, read authorized", pages: []string{list(1, getPay("pay_1", "Pending", false, op))}, objects: []string{getPay("pay_1", "Authorized", true, op)}, state: payonce.LookupSucceeded, ref: "pay_1", refs: []string{"pay_1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(c *checkout.Config) { c.SettleLag = 90 * time.Second })
			var queries []url.Values
			b.MT.RegisterResponder(http.MethodGet, base+"/payments", func(req *http.Request) (*http.Response, error) {
				queries = append(queries, req.URL.Query())
				return respond(200, tc.pages[len(queries)-1]), nil
			})
			reads := map[string]int{}
			serveByID(b, byID(tc.objects...), reads)
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindCharge, "", ""))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State)
			require.Equal(t, tc.ref, res.ProviderRef)
			require.Equal(t, tc.refs, res.Refs)
			require.Equal(t, 90*time.Second, res.Lag, "a not found waits for the settle lag")
			require.Len(t, queries, len(tc.pages))
			require.Equal(t, op, queries[0].Get("reference"))
			require.Equal(t, "100", queries[0].Get("limit"))
			require.Equal(t, "0", queries[0].Get("skip"))
			if len(queries) > 1 {
				require.Equal(t, "1", queries[1].Get("skip"))
			}
			for _, id := range tc.refs {
				require.Equal(t, 1, reads[id], "every hit is read again by id")
			}
		})
	}
}

func TestLookupActions(t *testing.T) {
	t.Parallel()
	op := chargeReq().OperationID
	for _, tc := range []struct {
		name    string
		kind    payonce.Kind
		ref     string // ProviderRef
		actions []string
		state   payonce.LookupState
		refs    []string
		decline string
	}{
		{name: "capture none", kind: payonce.KindCapture, actions: []string{act("act_a", "Authorization", true, "charge-op", "10000")}, state: payonce.LookupNotFound},
		{name: "capture approved", kind: payonce.KindCapture, actions: []string{act("act_c", "Capture", true, op, "10000"), act("act_a", "Authorization", true, "charge-op", "10000")}, state: payonce.LookupSucceeded, refs: []string{"act_c"}},
		{name: "auto capture of the charge is not ours", kind: payonce.KindCapture, actions: []string{act("act_c", "Capture", true, "charge-op", "10000")}, state: payonce.LookupNotFound},
		{name: "capture by action id", kind: payonce.KindCapture, ref: "act_c", actions: []string{act("act_c", "Capture", true, "", "10000")}, state: payonce.LookupSucceeded, refs: []string{"act_c"}},
		{name: "void approved", kind: payonce.KindCancel, actions: []string{act("act_v", "Void", true, op, "10000")}, state: payonce.LookupSucceeded, refs: []string{"act_v"}},
		{name: "void with our reference but a refund", kind: payonce.KindCancel, actions: []string{act("act_r", "Refund", true, op, "10000")}, state: payonce.LookupNotFound},
		{name: "refund declined", kind: payonce.KindRefund, actions: []string{act("act_r", "Refund", false, op, "20005")}, state: payonce.LookupFailed, refs: []string{"act_r"}, decline: "20005"},
		{name: "refund undecided", kind: payonce.KindRefund, actions: []string{act("act_r", "Refund", nil, op, "")}, state: payonce.LookupProcessing, refs: []string{"act_r"}},
		{name: "refund twice", kind: payonce.KindRefund, actions: []string{act("act_r2", "Refund", true, op, "10000"), act("act_r1", "Refund", true, op, "10000")}, state: payonce.LookupMultiple, refs: []string{"act_r2", "act_r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			getOK(t, b, base+"/payments/pay_1/actions", 200, "["+strings.Join(tc.actions, ",")+"]")
			res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(tc.kind, "pay_1", tc.ref))
			require.NoError(t, err)
			require.Equal(t, tc.state, res.State)
			require.Equal(t, tc.refs, res.Refs)
			require.Equal(t, tc.decline, res.DeclineCode)
			require.Equal(t, 2*time.Minute, res.Lag)
		})
	}
	b := setup(t)
	getOK(t, b, base+"/payments/pay_gone/actions", 404, ``)
	res, err := b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "pay_gone", ""))
	require.NoError(t, err)
	require.Equal(t, payonce.LookupNotFound, res.State)
	_, err = b.P.Lookup(context.Background(), b.HC, lookupQuery(payonce.KindRefund, "", ""))
	require.ErrorContains(t, err, "PaymentRef")
}

func TestLookupErrors(t *testing.T) {
	t.Parallel()
	echo := `{"request_id":"r","error_type":"` + testKey + `","error_codes":["` + testKey + `"]}`
	serve := func(t *testing.T, tc testkit.LookupErrorCase) (payonce.Provider, payonce.HTTPDoer) {
		b := setup(t)
		getOK(t, b, base+tc.URL, tc.Status, tc.Body)
		return b.P, b.HC
	}
	testkit.RequireLookupErrors[*checkout.APIError](t, serve, []testkit.LookupErrorCase{
		{Name: "500 by id", Q: lookupQuery(payonce.KindCharge, "", "pay_1"), URL: "/payments/pay_1", Status: 500, Temporary: true},
		{Name: "429 list", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/payments", Status: 429, Temporary: true},
		{Name: "401", Q: lookupQuery(payonce.KindCharge, "", "pay_1"), URL: "/payments/pay_1", Status: 401, Body: echo},
		{Name: "422 list", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/payments", Status: 422, Body: echo},
		{Name: "malformed payment", Q: lookupQuery(payonce.KindCharge, "", "pay_1"), URL: "/payments/pay_1", Status: 200, Body: `{"id":`, Temporary: true},
		{Name: "list without total", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/payments", Status: 200, Body: `{"data":[]}`, Temporary: true},
		{Name: "list item without id", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/payments", Status: 200, Body: list(1, `{"status":"Captured"}`), Temporary: true},
		{Name: "list short", Q: lookupQuery(payonce.KindCharge, "", ""), URL: "/payments", Status: 200, Body: list(5), Temporary: true},
		{Name: "actions not a list", Q: lookupQuery(payonce.KindCapture, "pay_1", ""), URL: "/payments/pay_1/actions", Status: 200, Body: `{"actions":[]}`, Temporary: true},
		{Name: "actions null", Q: lookupQuery(payonce.KindCapture, "pay_1", ""), URL: "/payments/pay_1/actions", Status: 200, Body: `null`, Temporary: true},
		{Name: "action without type", Q: lookupQuery(payonce.KindCapture, "pay_1", ""), URL: "/payments/pay_1/actions", Status: 200, Body: `[{"id":"act_1"}]`, Temporary: true},
		{Name: "actions 503", Q: lookupQuery(payonce.KindRefund, "pay_1", ""), URL: "/payments/pay_1/actions", Status: 503, Temporary: true},
	}, nil, testKey)
}

func TestLookupTransportErrorAndBodyClosed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	testkit.RequireLookupTransport(t, b.P, lookupQuery(payonce.KindCharge, "", "pay_1"),
		lookupQuery(payonce.KindRefund, "pay_1", ""), `[]`)
	_, err := b.P.Lookup(context.Background(), nil, lookupQuery(payonce.KindCharge, "", "pay_1"))
	require.Error(t, err)
	_, err = b.P.Lookup(context.Background(), b.HC, payonce.LookupQuery{Request: payonce.Request{Kind: "payout"}})
	require.ErrorContains(t, err, "unknown kind")
}

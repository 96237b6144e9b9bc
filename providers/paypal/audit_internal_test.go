package paypal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
)

const auditTestBase = "https://paypal.test"

// auditNow is the tests' clock: a day after the periods they list, so that
// the search lag has passed.
var auditNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// Operation ids of the form payonce writes (lower-case UUID version 5).
const (
	opA = "6f1c2a4e-3b5d-5e7f-8a9b-0c1d2e3f4a5b"
	opB = "7a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d"
)

// searchServer serves GET /v1/reporting/transactions from answer, and
// records every request.
type searchServer struct {
	mu       sync.Mutex
	requests []*http.Request
	answer   func(n int, q url.Values) (int, http.Header, any)
}

func (s *searchServer) transport(t *testing.T) *httpmock.MockTransport {
	t.Helper()
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder(http.MethodGet, auditTestBase+searchPath, func(req *http.Request) (*http.Response, error) {
		s.mu.Lock()
		s.requests = append(s.requests, req)
		n := len(s.requests)
		s.mu.Unlock()
		status, header, body := s.answer(n, req.URL.Query())
		resp, err := httpmock.NewJsonResponse(status, body)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			resp.Header[k] = v
		}
		return resp, nil
	})
	return mt
}

func (s *searchServer) queries() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	var qs []url.Values
	for _, r := range s.requests {
		qs = append(qs, r.URL.Query())
	}
	return qs
}

// sleeps records the lister's waits instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ds = append(s.ds, d)
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

type auditRig struct {
	srv    *searchServer
	mt     *httpmock.MockTransport
	sleeps *sleeps
	lister *auditLister
	// tokens hands out test-token-1, test-token-2, ...; dropped records
	// the generations the lister invalidated.
	mu      sync.Mutex
	gen     uint64
	dropped []uint64
}

func newAuditRig(t *testing.T, answer func(n int, q url.Values) (int, http.Header, any)) *auditRig {
	t.Helper()
	p, err := New(Config{ClientID: "client", ClientSecret: "secret", BaseURL: auditTestBase,
		Now: func() time.Time { return auditNow }, AuditInterval: 250 * time.Millisecond})
	require.NoError(t, err)
	srv := &searchServer{answer: answer}
	sl := &sleeps{}
	mt := srv.transport(t)
	hc := &http.Client{Transport: mt}
	rig := &auditRig{srv: srv, mt: mt, sleeps: sl}
	rig.lister = &auditLister{p: p, hc: hc, reads: hc, sleep: sl.sleep,
		token: func(context.Context) (token, error) {
			rig.mu.Lock()
			defer rig.mu.Unlock()
			if rig.gen == 0 || len(rig.dropped) > 0 && rig.dropped[len(rig.dropped)-1] == rig.gen {
				rig.gen++
			}
			return token{value: fmt.Sprintf("test-token-%d", rig.gen), gen: rig.gen}, nil
		},
		invalidate: func(gen uint64) {
			rig.mu.Lock()
			defer rig.mu.Unlock()
			rig.dropped = append(rig.dropped, gen)
		}}
	return rig
}

func (r *auditRig) list(t *testing.T, from, to time.Time) ([]payonce.AuditObject, error) {
	t.Helper()
	var got []payonce.AuditObject
	err := r.lister.list(context.Background(), payonce.AuditQuery{From: from, To: to}, func(o payonce.AuditObject) error {
		got = append(got, o)
		return nil
	})
	return got, err
}

// row is one transaction_details item.
func row(id, code, status, value, custom, ref string, at time.Time) map[string]any {
	info := map[string]any{
		"transaction_id": id, "transaction_event_code": code, "transaction_status": status,
		"transaction_initiation_date": at.UTC().Format("2006-01-02T15:04:05-0700"),
		"transaction_amount":          map[string]string{"currency_code": "USD", "value": value},
	}
	if custom != "" {
		info["custom_field"] = custom
	}
	if ref != "" {
		info["paypal_reference_id"] = ref
	}
	return map[string]any{"transaction_info": info}
}

func page(n, total int, rows ...map[string]any) map[string]any {
	if rows == nil {
		rows = []map[string]any{}
	}
	return map[string]any{"transaction_details": rows, "page": n, "total_pages": total, "total_items": len(rows)}
}

var (
	dayStart = time.Date(2026, 11, 10, 0, 0, 0, 0, time.UTC)
	dayEnd   = dayStart.Add(24 * time.Hour)
)

func TestListObjectsRequestShapeAndPaging(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(n int, q url.Values) (int, http.Header, any) {
		switch q.Get("page") {
		case "1":
			return 200, nil, page(1, 3, row("CAP1", "T0006", "S", "10.00", opA, "", dayStart.Add(time.Hour)))
		case "2":
			return 200, nil, page(2, 3, row("REF1", "T1107", "S", "-4.00", opB, "CAP1", dayStart.Add(2*time.Hour)))
		default:
			return 200, nil, page(3, 3, row("CAP9", "T0006", "S", "1.00", "", "", dayStart.Add(3*time.Hour)))
		}
	})
	got, err := rig.list(t, dayStart, dayEnd)
	require.NoError(t, err)
	require.Equal(t, []payonce.AuditObject{
		{Ref: "CAP1", OperationID: opA, Kind: payonce.KindCharge, State: payonce.AuditSucceeded, Status: "T0006 S",
			Amount: 1000, Currency: "USD", Created: dayStart.Add(time.Hour)},
		{Ref: "REF1", OperationID: opB, Kind: payonce.KindRefund, State: payonce.AuditSucceeded, Status: "T1107 S",
			Amount: 400, Currency: "USD", Created: dayStart.Add(2 * time.Hour), PaymentRef: "CAP1"},
		{Ref: "CAP9", Kind: payonce.KindCharge, State: payonce.AuditSucceeded, Status: "T0006 S",
			Amount: 100, Currency: "USD", Created: dayStart.Add(3 * time.Hour)},
	}, got)

	rig.srv.mu.Lock()
	reqs := rig.srv.requests
	rig.srv.mu.Unlock()
	require.Len(t, reqs, 3)
	for i, req := range reqs {
		require.Equal(t, http.MethodGet, req.Method)
		require.Equal(t, "Bearer test-token-1", req.Header.Get("Authorization"))
		require.Equal(t, url.Values{
			"start_date": {"2026-11-10T00:00:00Z"}, "end_date": {"2026-11-11T00:00:00Z"},
			"fields": {"transaction_info"}, "balance_affecting_records_only": {"Y"},
			"page_size": {"500"}, "page": {fmt.Sprint(i + 1)},
		}, req.URL.Query())
	}
	// Paced: the manual clock does not move, so each request after the
	// first waits the whole interval.
	require.Equal(t, []time.Duration{250 * time.Millisecond, 250 * time.Millisecond}, rig.sleeps.all())
}

func TestListObjectsSplitsLongPeriods(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) { return 200, nil, page(1, 1) })
	from := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(70 * 24 * time.Hour)
	_, err := rig.list(t, from, to)
	require.NoError(t, err)
	var windows [][2]string
	for _, q := range rig.srv.queries() {
		windows = append(windows, [2]string{q.Get("start_date"), q.Get("end_date")})
	}
	require.Equal(t, [][2]string{
		{"2026-08-01T00:00:00Z", "2026-09-01T00:00:00Z"},
		{"2026-09-01T00:00:00Z", "2026-10-02T00:00:00Z"},
		{"2026-10-02T00:00:00Z", "2026-10-10T00:00:00Z"},
	}, windows, "windows of at most 31 days, end to end")
}

func TestListObjectsRoundsToSecondsAndFiltersTheWindow(t *testing.T) {
	t.Parallel()
	from := dayStart.Add(500 * time.Millisecond)
	to := dayEnd.Add(-500 * time.Millisecond)
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 200, nil, page(1, 1,
			row("EARLY", "T0006", "S", "1.00", opA, "", dayStart),
			row("IN", "T0006", "S", "1.00", opA, "", dayStart.Add(time.Hour)),
			row("LATE", "T0006", "S", "1.00", opA, "", dayEnd.Add(-time.Second/2).Truncate(time.Second)))
	})
	got, err := rig.list(t, from, to)
	require.NoError(t, err)
	q := rig.srv.queries()[0]
	require.Equal(t, "2026-11-10T00:00:00Z", q.Get("start_date"))
	require.Equal(t, "2026-11-11T00:00:00Z", q.Get("end_date"))
	// LATE is at 23:59:59, inside [from, to); EARLY at 00:00:00 is before from.
	require.Len(t, got, 2)
	require.Equal(t, "IN", got[0].Ref)
	require.Equal(t, "LATE", got[1].Ref)
}

func TestListObjectsSplitsWhenTheResultIsTooLarge(t *testing.T) {
	t.Parallel()
	tooLarge := map[string]any{"name": "RESULTSET_TOO_LARGE", "message": "Result set size is greater than the maximum limit.",
		"debug_id": "d1", "total_items": 12000, "maximum_items": 10000}
	rig := newAuditRig(t, func(_ int, q url.Values) (int, http.Header, any) {
		if q.Get("start_date") == "2026-11-10T00:00:00Z" && q.Get("end_date") == "2026-11-11T00:00:00Z" {
			return 400, nil, tooLarge
		}
		start, _ := time.Parse(time.RFC3339, q.Get("start_date"))
		return 200, nil, page(1, 1, row("T-"+q.Get("start_date"), "T0006", "S", "1.00", opA, "", start.Add(time.Minute)))
	})
	got, err := rig.list(t, dayStart, dayEnd)
	require.NoError(t, err)
	require.Len(t, got, 2, "each half listed once")
	var windows [][2]string
	for _, q := range rig.srv.queries() {
		windows = append(windows, [2]string{q.Get("start_date"), q.Get("end_date")})
	}
	require.Equal(t, [][2]string{
		{"2026-11-10T00:00:00Z", "2026-11-11T00:00:00Z"},
		{"2026-11-10T00:00:00Z", "2026-11-10T12:00:00Z"},
		{"2026-11-10T12:00:00Z", "2026-11-11T00:00:00Z"},
	}, windows)
}

func TestListObjectsTooLargeEverywhereStops(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 400, nil, map[string]any{"name": "RESULTSET_TOO_LARGE", "debug_id": "d"}
	})
	_, err := rig.list(t, dayStart, dayStart.Add(3*time.Second))
	require.ErrorContains(t, err, "RESULTSET_TOO_LARGE")
	require.ErrorContains(t, err, "cannot be split further")
}

func TestListObjectsWaitsOutRateLimits(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(n int, _ url.Values) (int, http.Header, any) {
		switch n {
		case 1:
			return 429, http.Header{"Retry-After": {"7"}}, map[string]any{"name": "RATE_LIMIT_REACHED", "debug_id": "x"}
		case 2:
			return 429, nil, map[string]any{"name": "RATE_LIMIT_REACHED", "debug_id": "y"}
		}
		return 200, nil, page(1, 1, row("CAP1", "T0006", "S", "5.00", opA, "", dayStart.Add(time.Hour)))
	})
	got, err := rig.list(t, dayStart, dayEnd)
	require.NoError(t, err)
	require.Len(t, got, 1)
	// Retry-After 7 s; then, without one, twice the last wait; each ask
	// again is paced too (the clock does not move).
	require.Equal(t, []time.Duration{7 * time.Second, 250 * time.Millisecond, 14 * time.Second, 250 * time.Millisecond},
		rig.sleeps.all())
}

func TestListObjectsGivesUpOnPersistentRateLimits(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 429, nil, map[string]any{"name": "RATE_LIMIT_REACHED", "debug_id": "z"}
	})
	_, err := rig.list(t, dayStart, dayEnd)
	require.ErrorContains(t, err, "HTTP 429")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.True(t, apiErr.Temporary())
	require.Len(t, rig.srv.queries(), auditRetries+1)
}

func TestListObjectsReportsOtherErrors(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 403, nil, map[string]any{"name": "NOT_AUTHORIZED", "message": "Authorization failed due to insufficient permissions.", "debug_id": "dbg42"}
	})
	_, err := rig.list(t, dayStart, dayEnd)
	require.ErrorContains(t, err, "HTTP 403")
	require.ErrorContains(t, err, "NOT_AUTHORIZED")
	require.ErrorContains(t, err, "dbg42")
	require.NotContains(t, err.Error(), "test-token")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 403, apiErr.HTTPStatus)
}

func TestListObjectsRefreshesTheTokenOnceOn401(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(n int, _ url.Values) (int, http.Header, any) {
		if n == 1 {
			return 401, nil, map[string]any{"error": "invalid_token", "error_description": "Token signature verification failed"}
		}
		return 200, nil, page(1, 1, row("CAP1", "T0006", "S", "5.00", opA, "", dayStart.Add(time.Hour)))
	})
	got, err := rig.list(t, dayStart, dayEnd)
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, []uint64{1}, rig.dropped, "the rejected token is dropped")
	rig.srv.mu.Lock()
	defer rig.srv.mu.Unlock()
	require.Equal(t, "Bearer test-token-2", rig.srv.requests[1].Header.Get("Authorization"))

	// Rejected again with the new token: an error, not a loop.
	rig2 := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 401, nil, map[string]any{"error": "invalid_token"}
	})
	_, err = rig2.list(t, dayStart, dayEnd)
	require.ErrorContains(t, err, "HTTP 401")
	require.Len(t, rig2.srv.queries(), 2)
}

func TestListObjectsRefusesWhatPayPalHasNotPublished(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) { return 200, nil, page(1, 1) })
	// Ends 2 h before now: inside the 3 h lag. Refused before any request.
	_, err := rig.list(t, auditNow.Add(-26*time.Hour), auditNow.Add(-2*time.Hour))
	require.ErrorContains(t, err, "transaction search may be up to 3h0m0s behind")
	require.Empty(t, rig.srv.queries())
	// Exactly the lag: allowed.
	_, err = rig.list(t, auditNow.Add(-27*time.Hour), auditNow.Add(-SearchLag))
	require.NoError(t, err)
}

func TestListObjectsRefusesAWindowPayPalHasNotRefreshed(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		p := page(1, 1, row("CAP1", "T0006", "S", "5.00", opA, "", dayStart.Add(time.Hour)))
		p["last_refreshed_datetime"] = dayStart.Add(20 * time.Hour).Format("2006-01-02T15:04:05-0700")
		return 200, nil, p
	})
	_, err := rig.list(t, dayStart, dayEnd)
	require.ErrorContains(t, err, "complete up to 2026-11-10T20:00:00Z only")
}

func TestListObjectsRefusesBadQueries(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) { return 200, nil, page(1, 1) })
	_, err := rig.list(t, dayEnd, dayStart)
	require.ErrorContains(t, err, "From must be before To")
	err = rig.lister.list(context.Background(), payonce.AuditQuery{From: dayStart, To: dayEnd, Report: http.NoBody},
		func(payonce.AuditObject) error { return nil })
	require.ErrorContains(t, err, "AuditQuery.Report is not read")
}

func TestListObjectsCountsBadRowsWithoutStopping(t *testing.T) {
	t.Parallel()
	at := dayStart.Add(time.Hour)
	bad := row("BADDATE", "T0006", "S", "1.00", opA, "", at)
	bad["transaction_info"].(map[string]any)["transaction_initiation_date"] = "yesterday"
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 200, nil, page(1, 1,
			row("UNKNOWN", "T7777", "S", "1.00", opA, "", at),
			row("AMOUNT", "T0006", "S", "1.0.0", opA, "", at),
			row("FRACTION", "T0006", "S", "1.001", opA, "", at),
			row("NEGPAY", "T0006", "S", "-1.00", opA, "", at),
			row("STATUS", "T0006", "Q", "1.00", opA, "", at),
			row("NOREF", "T1201", "S", "-1.00", opA, "", at),
			bad,
			row("FEE", "T0106", "S", "-0.30", opA, "", at),
			row("CONVERSION", "T0200", "S", "-9.00", opA, "", at),
			row("GOOD", "T0006", "S", "2.00", opA, "", at))
	})
	got, err := rig.list(t, dayStart, dayEnd)
	require.NoError(t, err)
	byRef := map[string]payonce.AuditObject{}
	for _, o := range got {
		byRef[o.Ref] = o
	}
	require.NotContains(t, byRef, "FEE", "fees are no operation's object")
	require.NotContains(t, byRef, "CONVERSION")
	require.Equal(t, payonce.AuditSucceeded, byRef["GOOD"].State)
	require.Equal(t, opA, byRef["GOOD"].OperationID)
	for ref, why := range map[string]string{
		"UNKNOWN": `event code "T7777"`, "AMOUNT": `amount "1.0.0"`, "FRACTION": `amount "1.001"`,
		"NEGPAY": "a payment with amount -1.00", "STATUS": `transaction_status "Q"`, "NOREF": "no paypal_reference_id",
		"BADDATE": `"yesterday" is not a time`,
	} {
		o, ok := byRef[ref]
		require.True(t, ok, ref)
		require.Empty(t, o.OperationID, "%s is counted unattributed, not guessed", ref)
		require.Empty(t, o.State, ref)
		require.Contains(t, o.Status, "unreadable", ref)
		require.Contains(t, o.Status, why, ref)
		require.Contains(t, o.Status, "custom_field "+opA, "the operation stays findable: %s", ref)
	}
	require.Len(t, got, 8)
}

func TestSearchObjectStates(t *testing.T) {
	t.Parallel()
	at := dayStart.Add(time.Hour)
	cases := []struct {
		name        string
		r           map[string]any
		none        bool
		ref         string
		kind        payonce.Kind
		state       payonce.AuditState
		amount      int64
		paymentRef  string
		createdPlus time.Duration
	}{
		{name: "payment completed", r: row("C", "T0006", "S", "10.00", opA, "", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditSucceeded, amount: 1000},
		{name: "payment pending", r: row("C", "T0006", "P", "10.00", opA, "", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditProcessing, amount: 1000},
		{name: "payment denied", r: row("C", "T0006", "D", "10.00", opA, "", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditFailed, amount: 1000},
		{name: "payment refunded", r: row("C", "T0006", "V", "10.00", opA, "", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditSucceeded, amount: 1000},
		{name: "payment partly refunded", r: row("C", "T0006", "F", "10.00", opA, "", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditSucceeded, amount: 1000},
		{name: "pre-approved payment", r: row("C", "T0003", "S", "10.00", opA, "", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditSucceeded, amount: 1000},
		{name: "authorization", r: row("A", "T1300", "S", "10.00", opA, "", at), none: true},
		{name: "capture of an authorization", r: row("C", "T0006", "S", "10.00", opA, "A", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditSucceeded, amount: 1000},
		{name: "void", r: row("V", "T1302", "S", "10.00", opA, "A", at), ref: "A", kind: payonce.KindCharge, state: payonce.AuditCanceled, amount: 1000, createdPlus: time.Nanosecond},
		{name: "refund", r: row("R", "T1107", "S", "-4.00", opB, "C", at), ref: "R", kind: payonce.KindRefund, state: payonce.AuditSucceeded, amount: 400, paymentRef: "C"},
		{name: "refund pending", r: row("R", "T1107", "P", "-4.00", opB, "C", at), ref: "R", kind: payonce.KindRefund, state: payonce.AuditProcessing, amount: 400, paymentRef: "C"},
		{name: "refund failed", r: row("R", "T1107", "D", "-4.00", opB, "C", at), ref: "R", kind: payonce.KindRefund, state: payonce.AuditFailed, amount: 400, paymentRef: "C"},
		{name: "refund reversed", r: row("R", "T1107", "V", "-4.00", opB, "C", at), ref: "R", kind: payonce.KindRefund, state: payonce.AuditReversed, amount: 400, paymentRef: "C"},
		{name: "refund returned", r: row("RR", "T1107", "V", "4.00", opB, "R", at), ref: "R", kind: payonce.KindRefund, state: payonce.AuditReversed, amount: 400, createdPlus: time.Nanosecond},
		{name: "refund returned, settled", r: row("RR", "T1107", "S", "4.00", opB, "R", at), ref: "R", kind: payonce.KindRefund, state: payonce.AuditReversed, amount: 400, createdPlus: time.Nanosecond},
		{name: "refund return denied", r: row("RR", "T1107", "D", "4.00", opB, "R", at), none: true},
		{name: "chargeback", r: row("CB", "T1201", "S", "-10.00", opA, "C", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditReversed, amount: 1000, createdPlus: time.Nanosecond},
		{name: "reversal by PayPal", r: row("RV", "T1106", "P", "-10.00", opA, "C", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditReversed, amount: 1000, createdPlus: time.Nanosecond},
		{name: "chargeback reversed", r: row("CR", "T1202", "S", "10.00", opA, "C", at), ref: "C", kind: payonce.KindCharge, state: payonce.AuditSucceeded, amount: 1000, createdPlus: time.Nanosecond},
		{name: "reversal denied", r: row("RV", "T1106", "D", "-10.00", opA, "C", at), none: true},
		{name: "fee", r: row("F", "T0106", "S", "-1.00", opA, "C", at), none: true},
		{name: "hold", r: row("H", "T1503", "S", "-1.00", opA, "C", at), none: true},
		{name: "reauthorization", r: row("RA", "T1301", "S", "10.00", opA, "A", at), none: true},
	}
	for _, c := range cases {
		var r searchRow
		b, err := json.Marshal(c.r["transaction_info"])
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &r))
		got, _ := searchObjects(r)
		if c.none {
			require.Empty(t, got, c.name)
			continue
		}
		require.Len(t, got, 1, c.name)
		o := got[0]
		require.Equal(t, c.ref, o.Ref, c.name)
		require.Equal(t, c.kind, o.Kind, c.name)
		require.Equal(t, c.state, o.State, c.name)
		require.Equal(t, c.amount, o.Amount, c.name)
		require.Equal(t, "USD", o.Currency, c.name)
		require.Equal(t, c.paymentRef, o.PaymentRef, c.name)
		require.Equal(t, at.Add(c.createdPlus), o.Created, c.name)
		require.Empty(t, o.Key, "invoice_id is not read as the operation's key: %s", c.name)
		require.NotEmpty(t, o.OperationID, c.name)
	}
}

func TestOperationIDIsOnlyPayonces(t *testing.T) {
	t.Parallel()
	require.Equal(t, opA, operationID(opA))
	for _, s := range []string{"", "order-1234", "6F1C2A4E-3B5D-5E7F-8A9B-0C1D2E3F4A5B", "6f1c2a4e-3b5d-4e7f-8a9b-0c1d2e3f4a5b",
		"{6f1c2a4e-3b5d-5e7f-8a9b-0c1d2e3f4a5b}", "urn:uuid:6f1c2a4e-3b5d-5e7f-8a9b-0c1d2e3f4a5b"} {
		require.Empty(t, operationID(s), s)
	}
	id, err := payonce.Identity{Provider: "paypal", Kind: payonce.KindCharge, References: []string{"order-1"}}.OperationID()
	require.NoError(t, err)
	require.Equal(t, id, operationID(id), "an id payonce makes is read as one")
}

func TestSearchAmount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value, cur string
		want       int64
		bad        bool
	}{
		{value: "10.00", cur: "USD", want: 1000},
		{value: "-4.5", cur: "eur", want: -450},
		{value: "7", cur: "GBP", want: 700},
		{value: "1500", cur: "JPY", want: 1500},
		{value: "1500.00", cur: "JPY", want: 1500},
		{value: "1500.50", cur: "JPY", bad: true},
		{value: "10", cur: "HUF", want: 1000},
		{value: "-10", cur: "TWD", want: -1000},
		{value: "1.001", cur: "USD", bad: true},
		{value: "1.010", cur: "USD", want: 101},
		{value: "", cur: "USD", bad: true},
		{value: "1.", cur: "USD", bad: true},
		{value: ".5", cur: "USD", bad: true},
		{value: "1e3", cur: "USD", bad: true},
		{value: "+1.00", cur: "USD", bad: true},
		{value: "1.00", cur: "US", bad: true},
		{value: "1.00", cur: "XYZ", bad: true},
		{value: "--1.00", cur: "USD", bad: true},
		{value: "99999999999999999999.00", cur: "USD", bad: true},
	} {
		got, cur, err := searchAmount(searchMoney{Currency: c.cur, Value: c.value})
		if c.bad {
			require.Error(t, err, "%s %s", c.value, c.cur)
			continue
		}
		require.NoError(t, err, "%s %s", c.value, c.cur)
		require.Equal(t, c.want, got, "%s %s", c.value, c.cur)
		require.Len(t, cur, 3)
	}
}

func TestParseSearchTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2014, 7, 11, 4, 3, 52, 0, time.UTC)
	for _, s := range []string{"2014-07-11T04:03:52+0000", "2014-07-11T04:03:52Z", "2014-07-11T06:03:52+02:00", "2014-07-11T06:03:52+0200"} {
		got, err := parseSearchTime(s)
		require.NoError(t, err, s)
		require.Equal(t, want, got, s)
	}
	_, err := parseSearchTime("2014-07-11")
	require.Error(t, err)
}

func TestAuditInfo(t *testing.T) {
	t.Parallel()
	p, err := New(Config{ClientID: "client", ClientSecret: "secret"})
	require.NoError(t, err)
	info := p.AuditInfo()
	require.Equal(t, []payonce.Kind{payonce.KindRefund}, info.ListedKinds)
	require.False(t, info.ByLookup)
	require.False(t, info.NeedsReport)
	require.Equal(t, DefaultAuditMargin, info.Margin)
	require.Contains(t, info.Directions, "GET /v1/reporting/transactions")
}

func TestListObjectsReadsTheReversedPaymentWhenTheRowNamesNoOperation(t *testing.T) {
	t.Parallel()
	at := dayStart.Add(time.Hour)
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 200, nil, page(1, 1,
			row("CB1", "T1201", "S", "-10.00", "", "CAP1", at),
			row("CB2", "T1201", "S", "-10.00", "", "GONE", at),
			row("CB3", "T1201", "S", "-10.00", "not-payonce", "CAP3", at))
	})
	rig.mt.RegisterResponder(http.MethodPost, auditTestBase+"/v1/oauth2/token", func(req *http.Request) (*http.Response, error) {
		user, pass, ok := req.BasicAuth()
		if !ok || user != "client" || pass != "secret" {
			return httpmock.NewJsonResponse(401, map[string]string{"error": "invalid_client"})
		}
		return httpmock.NewJsonResponse(200, map[string]any{"access_token": "A21AAread", "token_type": "Bearer", "expires_in": 32400})
	})
	var reads []string
	rig.mt.RegisterRegexpResponder(http.MethodGet, regexp.MustCompile(`/v2/payments/captures/`), func(req *http.Request) (*http.Response, error) {
		reads = append(reads, req.URL.Path+" "+req.Header.Get("Authorization"))
		if strings.HasSuffix(req.URL.Path, "/CAP1") {
			return httpmock.NewJsonResponse(200, map[string]any{"id": "CAP1", "status": "REFUNDED", "custom_id": opA,
				"amount": map[string]string{"currency_code": "USD", "value": "10.00"}})
		}
		return httpmock.NewJsonResponse(404, map[string]any{"name": "RESOURCE_NOT_FOUND", "message": "The specified resource does not exist.",
			"details": []map[string]string{{"issue": "INVALID_RESOURCE_ID"}}, "debug_id": "nf"})
	})
	got, err := rig.list(t, dayStart, dayEnd)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, "CAP1", got[0].Ref)
	require.Equal(t, opA, got[0].OperationID, "named by the reversed capture's custom_id")
	require.Equal(t, payonce.AuditReversed, got[0].State)
	require.Equal(t, "GONE", got[1].Ref)
	require.Empty(t, got[1].OperationID)
	require.Contains(t, got[1].Status, "is not found")
	require.Empty(t, got[2].OperationID, "a custom_field that is not payonce's is not read further")
	require.Equal(t, []string{"/v2/payments/captures/CAP1 Bearer A21AAread", "/v2/payments/captures/GONE Bearer A21AAread"}, reads)
}

func TestListObjectsStopsOnYieldsError(t *testing.T) {
	t.Parallel()
	rig := newAuditRig(t, func(int, url.Values) (int, http.Header, any) {
		return 200, nil, page(1, 2, row("CAP1", "T0006", "S", "5.00", opA, "", dayStart.Add(time.Hour)),
			row("CAP2", "T0006", "S", "5.00", opA, "", dayStart.Add(time.Hour)))
	})
	stop := errors.New("stop here")
	n := 0
	err := rig.lister.list(context.Background(), payonce.AuditQuery{From: dayStart, To: dayEnd}, func(payonce.AuditObject) error {
		n++
		return stop
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)
	require.Len(t, rig.srv.queries(), 1, "no page asked after yield's error")
}

package adapterkit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

func TestObjects(t *testing.T) {
	t.Parallel()
	store := map[string]payonce.LookupState{"a": payonce.LookupSucceeded, "b": payonce.LookupFailed}
	var reads []string
	newObjs := func() adapterkit.Objects[string] {
		return adapterkit.Objects[string]{Provider: "x",
			Get: func(id string) (string, bool, error) {
				reads = append(reads, id)
				_, ok := store[id]
				return id, ok, nil
			},
			Missing: func(id string) error { return errors.New("missing " + id) },
			Match: func(id string) (adapterkit.Match, error) {
				return adapterkit.Match{Result: payonce.LookupResult{State: store[id], ProviderRef: id, Refs: []string{id}}}, nil
			},
		}
	}

	// Ledger ids that do not exist are no object; empty and repeated ids
	// are read once at most.
	o := newObjs()
	require.NoError(t, o.Read(false, "", "gone", "a", "a"))
	require.Equal(t, []string{"gone", "a"}, reads)
	res := o.Result(time.Minute)
	require.Equal(t, payonce.LookupSucceeded, res.State)
	require.Equal(t, time.Minute, res.Lag, "the lag is set on every answer")

	// A listed id the read by id does not find is an error, never "not found".
	o = newObjs()
	require.EqualError(t, o.ReadAll([]string{"gone"}, []string{"gone"}), "missing gone")
	o = newObjs()
	require.EqualError(t, o.Read(true, "gone"), "missing gone")

	// 0 objects: not found; 2 that succeeded: multiple.
	require.Equal(t, payonce.LookupResult{State: payonce.LookupNotFound}, (&adapterkit.Objects[string]{}).Result(0))
	store["c"] = payonce.LookupSucceeded
	o = newObjs()
	require.NoError(t, o.Add("a", "a"))
	require.NoError(t, o.Add("c", "c"))
	require.Equal(t, payonce.LookupMultiple, o.Result(0).State)

	// Charge: no search when the ledger knows the object of a never
	// resent operation; an error when it must search without an operation
	// id.
	searched := false
	search := func() ([]string, error) { searched = true; return []string{"b"}, nil }
	o = newObjs()
	res, err := o.Charge(payonce.LookupQuery{OperationID: "op", ProviderRef: "a"}, search, time.Minute)
	require.NoError(t, err)
	require.False(t, searched)
	require.Zero(t, res.Lag, "reads by id only: Lag 0")
	o = newObjs()
	res, err = o.Charge(payonce.LookupQuery{OperationID: "op", ProviderRef: "a", Generation: 1}, search, time.Minute)
	require.NoError(t, err)
	require.True(t, searched)
	require.Equal(t, time.Minute, res.Lag)
	_, err = o.Charge(payonce.LookupQuery{}, search, 0)
	require.ErrorContains(t, err, "x: lookup charge: OperationID is empty")
}

func TestLookups(t *testing.T) {
	t.Parallel()
	l := adapterkit.Lookups{Provider: "x", Charge: func(context.Context, payonce.HTTPDoer, payonce.LookupQuery) (payonce.LookupResult, error) {
		return payonce.LookupResult{State: payonce.LookupSucceeded}, nil
	}}
	_, err := l.Lookup(context.Background(), nil, payonce.LookupQuery{})
	require.EqualError(t, err, "x: lookup: nil HTTPDoer")
	_, err = l.Lookup(context.Background(), http.DefaultClient, payonce.LookupQuery{Request: payonce.Request{Kind: payonce.KindRefund}})
	require.EqualError(t, err, `x: lookup: unknown kind "refund"`)
	res, err := l.Lookup(context.Background(), http.DefaultClient, payonce.LookupQuery{Request: payonce.Request{Kind: payonce.KindCharge}})
	require.NoError(t, err)
	require.Equal(t, payonce.LookupSucceeded, res.State)
}

func TestClassifyError(t *testing.T) {
	t.Parallel()
	type body struct{ Code string }
	table := []adapterkit.Rule[body]{
		{When: func(_ int, e *body) bool { return e != nil && e.Code == "busy" }, Class: ledger.OutcomeKeyInUse},
		{When: adapterkit.Refusal[body](422), Class: ledger.OutcomeRefused},
		{When: adapterkit.Status[body](429), Class: ledger.OutcomeMaybeSent,
			Then: adapterkit.RetryAfterHeader[body](time.Now)},
	}
	for _, tc := range []struct {
		status int
		e      *body
		want   ledger.OutcomeClass
	}{
		{409, &body{"busy"}, ledger.OutcomeKeyInUse},
		{400, nil, ledger.OutcomeRefused},
		{404, &body{"other"}, ledger.OutcomeRefused},
		{422, nil, ledger.OutcomeRefused},
		{429, nil, ledger.OutcomeMaybeSent},
		{500, nil, ledger.OutcomeMaybeSent},
		{503, nil, ledger.OutcomeMaybeSent},
		{418, nil, ledger.OutcomeMaybeSent},
	} {
		o := adapterkit.ClassifyError(payonce.Outcome{}, tc.status, http.Header{"Retry-After": {"7"}}, tc.e, table)
		require.Equal(t, tc.want, o.Class, tc.status)
		if tc.status == 429 {
			require.Equal(t, 7*time.Second, o.RetryAfter)
		}
	}
}

func TestRequestHelpers(t *testing.T) {
	t.Parallel()
	ttl, err := adapterkit.DurationOrDefault("x.Config.", "KeyTTL", 0, time.Hour, "")
	require.NoError(t, err)
	lag, err := adapterkit.DurationOrDefault("x.Config.", "Lag", time.Second, time.Minute, "")
	require.NoError(t, err)
	require.Equal(t, time.Hour, ttl)
	require.Equal(t, time.Second, lag)
	_, err = adapterkit.DurationOrDefault("x.Config.", "Lag", -1, time.Minute, "!")
	var ve *payonce.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "x.Config.Lag", ve.Field)
	require.Equal(t, "is negative (-1ns); leave it 0 for the default 1m0s!", ve.Problem)

	keyProblem := func(key string) string {
		err := adapterkit.CheckKey("x ", key, 3, "empty", "%d > %d")
		if err == nil {
			return ""
		}
		require.ErrorAs(t, err, &ve)
		require.Equal(t, "x Key", ve.Field)
		return ve.Problem
	}
	require.Equal(t, "empty", keyProblem(""))
	require.Equal(t, "4 > 3", keyProblem("abcd"))
	require.Contains(t, keyProblem("a b"), "printable ASCII")
	require.Empty(t, keyProblem("abc"))

	hr, err := adapterkit.PostJSON(context.Background(), "x", payonce.KindCharge, "http://127.0.0.1/p", map[string]string{"b": "<", "a": "1"},
		func(h http.Header) { h.Set("Authorization", "Bearer k") }, "Idem-Key", "key1")
	require.NoError(t, err)
	require.Equal(t, http.MethodPost, hr.Method)
	require.Equal(t, "application/json", hr.Header.Get("Content-Type"))
	require.Equal(t, "key1", hr.Header.Get("Idem-Key"))
	require.Equal(t, "Bearer k", hr.Header.Get("Authorization"))
	require.EqualValues(t, len(`{"a":"1","b":"<"}`), hr.ContentLength)
}

// doer answers every request with status and body.
type doer struct {
	status int
	body   string
}

func (d doer) Do(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: d.status, Header: http.Header{"Request-Id": {"req_1"}},
		Body: io.NopCloser(strings.NewReader(d.body)), Request: r}, nil
}

func TestGet(t *testing.T) {
	t.Parallel()
	get := func(d doer) (int, []byte, error) {
		status, _, body, err := adapterkit.Get(context.Background(), d, "x", "http://127.0.0.1:1", "/v1/o", nil, func(h http.Header) { h.Set("Accept", "application/json") })
		return status, body, err
	}
	status, body, err := get(doer{200, `{"id":"o_1"}`})
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.Equal(t, `{"id":"o_1"}`, string(body))

	// An error answer is a Failure holding its status, header and body.
	_, _, err = get(doer{404, `{"error":"missing"}`})
	var f *adapterkit.Failure
	require.ErrorAs(t, err, &f)
	require.Equal(t, adapterkit.Failure{Method: "GET", Path: "/v1/o", HTTPStatus: 404, Header: http.Header{"Request-Id": {"req_1"}}, Body: []byte(`{"error":"missing"}`)}, *f)

	// An answer too large to read keeps no body; a 2xx one is unusable
	// (status 0).
	big := strings.Repeat("x", adapterkit.MaxBodyBytes+1)
	for status, want := range map[int]int{200: 0, 500: 500} {
		_, _, err = get(doer{status, big})
		require.ErrorAs(t, err, &f)
		require.Equal(t, want, f.HTTPStatus)
		require.Nil(t, f.Body)
		require.Equal(t, fmt.Sprintf("answer is larger than %d bytes", adapterkit.MaxBodyBytes), f.Message)
	}

	// A 2xx body that does not decode is Unusable.
	var v struct{ ID string }
	_, err = adapterkit.GetJSON(context.Background(), doer{200, `<html>`}, "x", "http://127.0.0.1:1", "/v1/o", nil, func(http.Header) {}, &v)
	require.ErrorAs(t, err, &f)
	require.Equal(t, 0, f.HTTPStatus)
	require.Contains(t, f.Message, "unusable answer: body is not the expected JSON")
}

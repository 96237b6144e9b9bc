package paypal_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/providers/paypal"
)

// tokenBundle is an adapter on a driven clock whose token endpoint hands
// out A21AAtoken-1, -2, ... valid for life, counting the fetches.
type tokenBundle struct {
	bundle
	clock   *clock
	fetches *atomic.Int32
}

func setupTokens(t *testing.T, life int) tokenBundle {
	t.Helper()
	c := &clock{t: testNow}
	b := testkit.Setup(t, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret, Now: c.Now})
	var n atomic.Int32
	b.MT.RegisterResponder(http.MethodPost, base+"/v1/oauth2/token", func(req *http.Request) (*http.Response, error) {
		testkit.RequireBasicAuth(t, req, testClientID, testSecret)
		require.NoError(t, req.ParseForm())
		require.Equal(t, "client_credentials", req.PostForm.Get("grant_type"))
		k := n.Add(1)
		return respond(200, fmt.Sprintf(`{"access_token":"A21AAtoken-%d","token_type":"Bearer","expires_in":%d}`, k, life)), nil
	})
	return tokenBundle{bundle: b, clock: c, fetches: &n}
}

func bearer(t *testing.T, b tokenBundle, r payonce.SendRequest) string {
	t.Helper()
	hr, err := b.P.NewRequest(context.Background(), r)
	require.NoError(t, err)
	require.NoError(t, b.P.AuthorizeRequest(context.Background(), b.HC, hr))
	return hr.Header.Get("Authorization")
}

func TestTokenCachedUntilExpiryMinusMargin(t *testing.T) {
	t.Parallel()
	b := setupTokens(t, 32400) // 9 h, PayPal's usual
	require.Equal(t, "Bearer A21AAtoken-1", bearer(t, b, vaultCharge()))
	require.Equal(t, "Bearer A21AAtoken-1", bearer(t, b, orderCharge()))
	b.clock.Advance(9*time.Hour - paypal.TokenMargin - time.Second)
	require.Equal(t, "Bearer A21AAtoken-1", bearer(t, b, vaultCharge()), "still inside expiry minus the margin")
	require.EqualValues(t, 1, b.fetches.Load())
	b.clock.Advance(time.Second)
	require.Equal(t, "Bearer A21AAtoken-2", bearer(t, b, vaultCharge()), "refreshed at expiry minus the margin")
	require.EqualValues(t, 2, b.fetches.Load())

	// A short-lived token is kept for half its life.
	s := setupTokens(t, 60)
	bearer(t, s, vaultCharge())
	s.clock.Advance(29 * time.Second)
	bearer(t, s, vaultCharge())
	require.EqualValues(t, 1, s.fetches.Load())
	s.clock.Advance(time.Second)
	bearer(t, s, vaultCharge())
	require.EqualValues(t, 2, s.fetches.Load())

	// Without expires_in, a token serves the request that fetched it only.
	z := setupTokens(t, 0)
	bearer(t, z, vaultCharge())
	bearer(t, z, vaultCharge())
	require.EqualValues(t, 2, z.fetches.Load())
}

func TestTokenOneFetchAtATime(t *testing.T) {
	t.Parallel()
	c := &clock{t: testNow}
	b := testkit.Setup(t, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret, Now: c.Now})
	release := make(chan struct{})
	var n atomic.Int32
	b.MT.RegisterResponder(http.MethodPost, base+"/v1/oauth2/token", func(*http.Request) (*http.Response, error) {
		n.Add(1)
		<-release
		return respond(200, `{"access_token":"A21AAshared","token_type":"Bearer","expires_in":32400}`), nil
	})
	var wg sync.WaitGroup
	got := make([]string, 8)
	for i := range got {
		wg.Go(func() {
			hr, err := b.P.NewRequest(context.Background(), vaultCharge())
			require.NoError(t, err)
			require.NoError(t, b.P.AuthorizeRequest(context.Background(), b.HC, hr))
			got[i] = hr.Header.Get("Authorization")
		})
	}
	// Let the waiters pile up on the one fetch, then answer it.
	require.Eventually(t, func() bool { return n.Load() == 1 }, 5*time.Second, time.Millisecond)
	close(release)
	wg.Wait()
	require.EqualValues(t, 1, n.Load(), "one fetch served every request")
	for _, h := range got {
		require.Equal(t, "Bearer A21AAshared", h)
	}
}

// A waiter gives up when its own context ends; the fetch it started goes
// on for the others.
func TestTokenWaiterHonoursItsContext(t *testing.T) {
	t.Parallel()
	b := testkit.Setup(t, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret})
	release := make(chan struct{})
	var n atomic.Int32
	b.MT.RegisterResponder(http.MethodPost, base+"/v1/oauth2/token", func(*http.Request) (*http.Response, error) {
		n.Add(1)
		<-release
		return respond(200, `{"access_token":"A21AAlate","token_type":"Bearer","expires_in":32400}`), nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	first, err := b.P.NewRequest(context.Background(), vaultCharge())
	require.NoError(t, err)
	done := make(chan error)
	go func() { done <- b.P.AuthorizeRequest(ctx, b.HC, first) }()
	require.Eventually(t, func() bool { return n.Load() == 1 }, 5*time.Second, time.Millisecond)
	second, err := b.P.NewRequest(context.Background(), orderCharge())
	require.NoError(t, err)
	waited := make(chan error)
	go func() { waited <- b.P.AuthorizeRequest(context.Background(), b.HC, second) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Empty(t, first.Header.Get("Authorization"))
	close(release)
	require.NoError(t, <-waited, "the fetch went on for the other waiter")
	require.Equal(t, "Bearer A21AAlate", second.Header.Get("Authorization"))
	require.EqualValues(t, 1, n.Load())
}

// A 401 drops the token only if it is the one the rejected attempt used:
// an attempt signed with an older token says nothing about the new one.
func TestTokenInvalidatedOn401OnlyIfUsed(t *testing.T) {
	t.Parallel()
	b := setupTokens(t, 32400)
	first, second := vaultCharge(), orderCharge()
	second.Key = "22222222-2222-5222-8222-222222222222"
	require.Equal(t, "Bearer A21AAtoken-1", bearer(t, b, first))

	// PayPal revokes token-1: the attempt is not sent, and the next attempt
	// fetches token-2.
	o := b.P.Classify(first, 401, nil, []byte(`{"error":"invalid_token","error_description":"Access Token not found in cache"}`))
	require.Equal(t, "not_sent", string(o.Class))
	require.Equal(t, "Bearer A21AAtoken-2", bearer(t, b, second))

	// A late 401 to an attempt that used token-1 keeps token-2.
	require.Equal(t, "Bearer A21AAtoken-2", bearer(t, b, first))
	b.P.Classify(first, 401, nil, nil) // first's entry now names token-2: drops it
	require.Equal(t, "Bearer A21AAtoken-3", bearer(t, b, first))
	b.P.Classify(second, 401, nil, nil) // second used token-2, already gone
	require.Equal(t, "Bearer A21AAtoken-3", bearer(t, b, vaultCharge()))
	require.EqualValues(t, 3, b.fetches.Load())

	// Other answers keep the token.
	b.P.Classify(first, 422, nil, []byte(ppErr("UNPROCESSABLE_ENTITY", "INSTRUMENT_DECLINED", "x")))
	b.P.Classify(first, 500, nil, nil)
	require.Equal(t, "Bearer A21AAtoken-3", bearer(t, b, first))
	require.EqualValues(t, 3, b.fetches.Load())
}

// A lookup authorizes its own GETs, and a 401 refreshes the token once.
func TestLookupAuthorizesAndRefreshesOnce(t *testing.T) {
	t.Parallel()
	b := setupTokens(t, 32400)
	var seen []string
	b.MT.RegisterResponder(http.MethodGet, base+"/v2/payments/captures/CAP-1", func(req *http.Request) (*http.Response, error) {
		seen = append(seen, req.Header.Get("Authorization"))
		if req.Header.Get("Authorization") == "Bearer A21AAtoken-1" {
			return respond(401, `{"error":"invalid_token","error_description":"Token signature verification failed"}`), nil
		}
		return respond(200, capJSON("CAP-1", "COMPLETED", "19.99", opID, opID)), nil
	})
	q := payonce.LookupQuery{OperationID: opID, Key: opID, Request: vaultCharge().Request, ProviderRef: "CAP-1"}
	res, err := b.P.Lookup(context.Background(), b.HC, q)
	require.NoError(t, err)
	require.Equal(t, payonce.LookupSucceeded, res.State)
	require.Equal(t, []string{"Bearer A21AAtoken-1", "Bearer A21AAtoken-2"}, seen)

	// Two 401s in a row: the lookup fails (not "not found").
	b.MT.RegisterResponder(http.MethodGet, base+"/v2/payments/captures/CAP-1", func(*http.Request) (*http.Response, error) {
		return respond(401, `{"error":"invalid_token"}`), nil
	})
	_, err = b.P.Lookup(context.Background(), b.HC, q)
	var ae *paypal.APIError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 401, ae.HTTPStatus)
	require.False(t, ae.Temporary())
}

func TestTokenErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		status     int
		want       string
	}{
		{"bad credentials", `{"error":"invalid_client","error_description":"Client Authentication failed"}`, 401, "HTTP 401 (debug id f1a2b3c4d5e6): invalid_client: Client Authentication failed"},
		{"server error", ``, 503, "HTTP 503"},
		{"not JSON", `<html/>`, 200, "not a token"},
		{"no token", `{"token_type":"Bearer","expires_in":100}`, 200, "no usable access_token"},
		{"token with space", `{"access_token":"A21AA x","token_type":"Bearer","expires_in":100}`, 200, "no usable access_token"},
		{"not bearer", `{"access_token":"A21AAxyzxyzxyz","token_type":"MAC","expires_in":100}`, 200, "not Bearer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := testkit.Setup(t, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret})
			b.MT.RegisterResponder(http.MethodPost, base+"/v1/oauth2/token", func(*http.Request) (*http.Response, error) { return respond(tc.status, tc.body), nil })
			hr, err := b.P.NewRequest(context.Background(), vaultCharge())
			require.NoError(t, err)
			err = b.P.AuthorizeRequest(context.Background(), b.HC, hr)
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, hr.Header.Get("Authorization"), "an attempt without a token is not sent")
			_, err = b.P.Lookup(context.Background(), b.HC, payonce.LookupQuery{OperationID: opID, Key: opID, Request: vaultCharge().Request, ProviderRef: "C"})
			require.ErrorContains(t, err, tc.want, "a lookup without a token fails")
		})
	}
	b := setup(t)
	hr, err := b.P.NewRequest(context.Background(), vaultCharge())
	require.NoError(t, err)
	require.ErrorContains(t, b.P.AuthorizeRequest(context.Background(), nil, hr), "nil HTTPDoer")
}

// An audit's lookup gets a doer that refuses anything but GET (payonce's
// auditDoer): the token is fetched through Config.HTTPClient instead.
func TestAuditLookupFetchesTokenThroughHTTPClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := testkit.New(t, paypal.New, paypal.Config{ClientID: testClientID, ClientSecret: testSecret, HTTPClient: b.HC})
	b.MT.RegisterResponder(http.MethodGet, base+"/v2/payments/captures/CAP-1", func(req *http.Request) (*http.Response, error) {
		require.Equal(t, "Bearer "+testToken, req.Header.Get("Authorization"))
		return respond(200, capJSON("CAP-1", "COMPLETED", "19.99", opID, opID)), nil
	})
	getOnly := testkit.DoerFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			return nil, fmt.Errorf("an audit sends only GET and HEAD requests, refused %s", req.Method)
		}
		return b.HC.Do(req)
	})
	q := payonce.LookupQuery{OperationID: opID, Key: opID, Request: vaultCharge().Request, ProviderRef: "CAP-1"}
	_, err := p.Lookup(context.Background(), getOnly, q)
	require.ErrorContains(t, err, "refused POST", "a reconciliation lookup fetches its token through hc")
	q.Audit = true
	res, err := p.Lookup(context.Background(), getOnly, q)
	require.NoError(t, err)
	require.Equal(t, payonce.LookupSucceeded, res.State)
}

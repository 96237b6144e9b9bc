package mocks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/mocks"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// bundle is one test's fake, clock and client.
type bundle struct {
	f     *mocks.Stripe
	clock *mocks.ManualClock
	c     *client
}

// setup starts a fake on a manual clock; opts.Clock is overridden.
func setup(t *testing.T, opts mocks.StripeOptions) *bundle {
	t.Helper()
	clock := mocks.NewManualClock(epoch)
	opts.Clock = clock.Now
	f := mocks.NewStripe(opts)
	t.Cleanup(f.Close)
	return &bundle{f: f, clock: clock, c: newClient(t, f, f.Client())}
}

// client is a bare Stripe client: the tests exercise the wire, not an SDK.
type client struct {
	t    *testing.T
	base string
	key  string
	hc   *http.Client
}

func newClient(t *testing.T, f *mocks.Stripe, hc *http.Client) *client {
	return &client{t: t, base: f.URL(), key: f.APIKey(), hc: hc}
}

// noKeepAlive returns a client whose connections are never reused, so that
// a dropped connection reaches the caller instead of being retried by the
// Transport.
func noKeepAlive(t *testing.T, f *mocks.Stripe) *client {
	return newClient(t, f, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}})
}

type result struct {
	status int
	header http.Header
	body   []byte
}

func (c *client) do(ctx context.Context, method, path string, form url.Values, idemKey string) (*result, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	require.NoError(c.t, err)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	return send(c.hc, req)
}

// send sends req through hc and reads the whole answer.
func send(hc *http.Client, req *http.Request) (*result, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &result{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func (c *client) post(path string, form url.Values, idemKey string) *result {
	c.t.Helper()
	r, err := c.do(context.Background(), http.MethodPost, path, form, idemKey)
	require.NoError(c.t, err)
	return r
}

func (c *client) get(path string) *result {
	c.t.Helper()
	r, err := c.do(context.Background(), http.MethodGet, path, nil, "")
	require.NoError(c.t, err)
	return r
}

func (r *result) pi(t *testing.T) mocks.StripePaymentIntent {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var pi mocks.StripePaymentIntent
	require.NoError(t, json.Unmarshal(r.body, &pi))
	return pi
}

func (r *result) refund(t *testing.T) mocks.StripeRefund {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, string(r.body))
	var re mocks.StripeRefund
	require.NoError(t, json.Unmarshal(r.body, &re))
	return re
}

func (r *result) err(t *testing.T, status int) mocks.StripeError {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	var e mocks.StripeErrorBody
	require.NoError(t, json.Unmarshal(r.body, &e))
	return e.Error
}

// raw decodes the body generically, to check nulls and field names.
func (r *result) raw(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m))
	return m
}

// charge is the form of a confirmed card PaymentIntent.
func charge(amount, pm string, md ...string) url.Values {
	v := url.Values{"amount": {amount}, "currency": {"usd"}, "confirm": {"true"}, "payment_method": {pm}}
	for i := 0; i+1 < len(md); i += 2 {
		v.Set("metadata["+md[i]+"]", md[i+1])
	}
	return v
}

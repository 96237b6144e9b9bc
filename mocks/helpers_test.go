package mocks_test

import (
	"bytes"
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

// fakeBundle is one test's fake, clock and client.
type fakeBundle[F any] struct {
	f     F
	clock *mocks.ManualClock
	c     *client
}

// The bundles of the three fakes.
type (
	bundle    = fakeBundle[*mocks.Stripe]
	ykBundle  = fakeBundle[*mocks.YooKassa]
	ckoBundle = fakeBundle[*mocks.Checkout]
)

// startFake starts the fake that start makes on a manual clock at epoch
// (it sets *clockOption, the options' Clock, first), closes it when the test
// ends, and talks to it with clientFor's client.
func startFake[F interface {
	Client() *http.Client
	Close()
}](t *testing.T, clockOption *func() time.Time, start func() F, clientFor func(*testing.T, F, *http.Client) *client) *fakeBundle[F] {
	t.Helper()
	clock := mocks.NewManualClock(epoch)
	*clockOption = clock.Now
	f := start()
	t.Cleanup(f.Close)
	return &fakeBundle[F]{f: f, clock: clock, c: clientFor(t, f, f.Client())}
}

// setup, ykSetup and ckoSetup start a Stripe, YooKassa or Checkout.com fake
// on a manual clock; opts.Clock is overridden.
func setup(t *testing.T, opts mocks.StripeOptions) *bundle {
	t.Helper()
	return startFake(t, &opts.Clock, func() *mocks.Stripe { return mocks.NewStripe(opts) }, newClient)
}

func ykSetup(t *testing.T, opts mocks.YooKassaOptions) *ykBundle {
	t.Helper()
	return startFake(t, &opts.Clock, func() *mocks.YooKassa { return mocks.NewYooKassa(opts) }, ykClient)
}

func ckoSetup(t *testing.T, opts mocks.CheckoutOptions) *ckoBundle {
	t.Helper()
	return startFake(t, &opts.Clock, func() *mocks.Checkout { return mocks.NewCheckout(opts) }, ckoClient)
}

// client is a bare client of a fake: the tests exercise the wire, not an
// SDK. Stripe's sends key as a Bearer token and form bodies; the JSON
// fakes' (YooKassa, Checkout.com) set their credentials with auth and send
// JSON bodies.
type client struct {
	t         *testing.T
	base      string
	key       string              // Stripe API key, "" for none
	auth      func(*http.Request) // credentials of the JSON fakes
	keyHeader string              // the idempotency key header
	hc        *http.Client
}

// newClient is a Stripe client of f.
func newClient(t *testing.T, f *mocks.Stripe, hc *http.Client) *client {
	return &client{t: t, base: f.URL(), key: f.APIKey(), keyHeader: "Idempotency-Key", hc: hc}
}

// ykClient is a YooKassa client of f: HTTP Basic auth with the shop id
// and the secret key.
func ykClient(t *testing.T, f *mocks.YooKassa, hc *http.Client) *client {
	return &client{t: t, base: f.URL(), keyHeader: "Idempotence-Key", hc: hc,
		auth: func(r *http.Request) { r.SetBasicAuth(f.ShopID(), f.SecretKey()) }}
}

// ckoClient is a Checkout.com client of f: the secret key as a Bearer
// token.
func ckoClient(t *testing.T, f *mocks.Checkout, hc *http.Client) *client {
	return &client{t: t, base: f.URL(), keyHeader: "Cko-Idempotency-Key", hc: hc,
		auth: func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+f.SecretKey()) }}
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

// do sends method path with body and the idempotency key, if any. A
// url.Values body is sent as a form (none if it is nil), a string as it
// is, anything else but nil marshalled to JSON.
func (c *client) do(ctx context.Context, method, path string, body any, key string) (*result, error) {
	var rd io.Reader
	contentType := "application/json"
	switch b := body.(type) {
	case nil:
	case url.Values:
		if b != nil {
			rd, contentType = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
		}
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		require.NoError(c.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	require.NoError(c.t, err)
	switch {
	case c.auth != nil:
		c.auth(req)
	case c.key != "":
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set(c.keyHeader, key)
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

func (c *client) post(path string, body any, key string) *result {
	c.t.Helper()
	r, err := c.do(context.Background(), http.MethodPost, path, body, key)
	require.NoError(c.t, err)
	return r
}

// postAsync sends a POST in the background, as post does, and delivers its
// answer on the returned channel. A request that got no answer is
// delivered as status -1: a goroutine may not fail the test.
func (c *client) postAsync(path string, body any, key string) <-chan *result {
	done := make(chan *result, 1)
	go func() {
		r, err := c.do(context.Background(), http.MethodPost, path, body, key)
		if err != nil {
			r = &result{status: -1}
		}
		done <- r
	}()
	return done
}

// holdKey sends a POST that meets a scripted FaultSlow (postAsync) and
// returns once f has consumed the fault and the request holds its key.
func holdKey(t *testing.T, f interface{ PendingFaults() int }, c *client, path string, body any, key string) <-chan *result {
	done := c.postAsync(path, body, key)
	require.Eventually(t, func() bool { return f.PendingFaults() == 0 }, 2*time.Second, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	return done
}

func (c *client) get(path string) *result {
	c.t.Helper()
	r, err := c.do(context.Background(), http.MethodGet, path, nil, "")
	require.NoError(c.t, err)
	return r
}

// decode decodes the body into v after checking the status.
func decode[T any](t *testing.T, r *result, status int) T {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v), string(r.body))
	return v
}

// searchPath is the path of a PaymentIntent search for query.
func searchPath(query string) string {
	return "/v1/payment_intents/search?query=" + url.QueryEscape(query)
}

// refundForm is the form of a Refund of the PaymentIntent pi: amount ""
// refunds what is left.
func refundForm(pi, amount string, md ...string) url.Values {
	v := url.Values{"payment_intent": {pi}}
	if amount != "" {
		v.Set("amount", amount)
	}
	for i := 0; i+1 < len(md); i += 2 {
		v.Set("metadata["+md[i]+"]", md[i+1])
	}
	return v
}

func (r *result) pi(t *testing.T) mocks.StripePaymentIntent {
	t.Helper()
	return decode[mocks.StripePaymentIntent](t, r, http.StatusOK)
}

func (r *result) refund(t *testing.T) mocks.StripeRefund {
	t.Helper()
	return decode[mocks.StripeRefund](t, r, http.StatusOK)
}

func (r *result) err(t *testing.T, status int) mocks.StripeError {
	t.Helper()
	return decode[mocks.StripeErrorBody](t, r, status).Error
}

// raw decodes the body generically, to check nulls and field names.
func (r *result) raw(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m))
	return m
}

// manual makes form a PaymentIntent captured later (capture_method manual).
func manual(form url.Values) url.Values {
	form.Set("capture_method", "manual")
	return form
}

// charge is the form of a confirmed card PaymentIntent.
func charge(amount, pm string, md ...string) url.Values {
	v := url.Values{"amount": {amount}, "currency": {"usd"}, "confirm": {"true"}, "payment_method": {pm}}
	for i := 0; i+1 < len(md); i += 2 {
		v.Set("metadata["+md[i]+"]", md[i+1])
	}
	return v
}

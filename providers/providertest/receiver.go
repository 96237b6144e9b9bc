package providertest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
)

// Receiver is a webhook endpoint for tests: a handler (the client's
// WebhookHandler) behind a loopback httptest server, which keeps what
// arrives (templates for replays and forgeries) and can hold deliveries
// back, as a network or an outage would. A held delivery is answered 503,
// so that the fake's sender retries it (see Delivery) until Release lets
// it through; without holding, a webhook could reach the ledger in the
// middle of the call whose outcome it reports, and a test could not say
// what the client knew when. It is safe for concurrent use.
type Receiver struct {
	srv *httptest.Server

	mu       sync.Mutex
	handler  http.Handler // nil until the client is built: 503
	holding  bool
	held     []Delivery // held back, latest attempt of each body, in order of arrival
	accepted []Delivery // answered 2xx by the handler, in order
}

// StartReceiver starts a Receiver, closed when t ends. Until Serve sets
// its handler, it holds every delivery back.
func StartReceiver(t testing.TB) *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serveHTTP))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the endpoint the fake delivers to.
func (r *Receiver) URL() string { return r.srv.URL + "/webhooks" }

// Delivery is what a fake's Options.Webhooks needs to deliver to r:
// its URL, and retries soon and often enough that a delivery held back
// gets through soon after Release, and is never given up within a test.
func (r *Receiver) Delivery() mocks.WebhookDelivery {
	return mocks.WebhookDelivery{URL: r.URL(), MaxAttempts: webhookMaxAttempts, RetryAfter: webhookRetryAfter}
}

// Serve sets the handler deliveries are passed to.
func (r *Receiver) Serve(h http.Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handler = h
}

func (r *Receiver) serveHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, payonce.MaxWebhookBytes+1))
	if err != nil {
		http.Error(w, "could not read the body", http.StatusBadRequest)
		return
	}
	d := Delivery{Body: body, Header: req.Header.Clone(), RemoteAddr: req.RemoteAddr}
	r.mu.Lock()
	h := r.handler
	if r.holding || h == nil {
		if i := slices.IndexFunc(r.held, func(x Delivery) bool { return bytes.Equal(x.Body, body) }); i >= 0 {
			r.held[i] = d // a retry: signed anew
		} else {
			r.held = append(r.held, d)
		}
		r.mu.Unlock()
		http.Error(w, "held back", http.StatusServiceUnavailable)
		return
	}
	r.mu.Unlock()
	status := deliver(h, d)
	w.WriteHeader(status)
	if status/100 == 2 {
		r.mu.Lock()
		r.accepted = append(r.accepted, d)
		r.mu.Unlock()
	}
}

// deliver hands d to h as a request from d.RemoteAddr and returns h's
// status.
func deliver(h http.Handler, d Delivery) int {
	req := httptest.NewRequest(http.MethodPost, "/webhooks", bytes.NewReader(d.Body))
	req.Header = d.Header.Clone()
	req.RemoteAddr = d.RemoteAddr
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// Hold makes the receiver hold every delivery back until Release.
func (r *Receiver) Hold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holding = true
}

// Release lets deliveries through again; held ones arrive when the
// sender retries them.
func (r *Receiver) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.holding = false
}

// Held returns the deliveries held back so far (the latest attempt of each
// body), in order of arrival.
func (r *Receiver) Held() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.held)
}

// Accepted returns the deliveries the handler answered 2xx, in order.
func (r *Receiver) Accepted() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accepted)
}

// Direct hands d straight to the handler (bypassing holding), as a
// delivery from d.RemoteAddr, and returns its status.
func (r *Receiver) Direct(d Delivery) int {
	r.mu.Lock()
	h := r.handler
	r.mu.Unlock()
	return deliver(h, d)
}

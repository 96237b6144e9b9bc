package mocks

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/currency"
)

// This file is what every fake builds on top of the core: the handler half
// (routes, scripts, release, truth), the server half (an httptest.Server
// and its Close), the options every fake has, and JSON rendering. A
// provider's own files keep its options, its state and its wire format.

// fakeHandler is embedded in StripeHandler, YooKassaHandler and
// CheckoutHandler: its exported methods are theirs.
type fakeHandler struct {
	core *core
	mux  *http.ServeMux
	// records writes the provider's payments and refunds into a Truth,
	// under the provider's own lock.
	records func(*Truth)
	// webhooks delivers the fake's events (nil until startWebhooks, which
	// acts like a sender that sends nothing); eventIDs names them.
	webhooks *webhookSender
	eventIDs *idSource
}

// route is one route of a fake: a ServeMux pattern and its endpoint.
type route struct {
	pattern string
	ep      endpoint
}

// serve routes requests to routes, and every other request to unknown.
func (h *fakeHandler) serve(routes []route, unknown endpoint) {
	h.mux = http.NewServeMux()
	for _, r := range routes {
		h.mux.Handle(r.pattern, h.core.handle(r.pattern, r.ep))
	}
	h.mux.Handle("/", h.core.handle("", unknown))
}

// ServeHTTP serves the fake provider's API routes.
func (h *fakeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Script queues faults for the requests that match m: each matching request
// consumes the next fault, in order. Scripts are tried in the order they
// were added, before any random fault.
func (h *fakeHandler) Script(m Match, faults ...FaultKind) { h.core.faults.script(m, faults) }

// ClearScripts drops every scripted fault not yet consumed.
func (h *fakeHandler) ClearScripts() { h.core.faults.clearScripts() }

// PendingFaults returns how many scripted faults are still queued.
func (h *fakeHandler) PendingFaults() int { return h.core.faults.pending() }

// Release ends every hang and slow delay at once, current and future: held
// requests are answered immediately. The handler keeps serving; call it
// before shutting down a server the handler is mounted on.
func (h *fakeHandler) Release() { h.core.close() }

// Truth returns a snapshot of what the fake actually did.
func (h *fakeHandler) Truth() Truth {
	var t Truth
	h.records(&t)
	h.core.counters.fill(&t)
	t.Faults = h.core.faults.counts()
	return t
}

// fakeServer is embedded in Stripe, YooKassa and Checkout: the fake's
// handler served by an httptest.Server on 127.0.0.1.
type fakeServer struct {
	srv          *httptest.Server
	release      func()
	stopWebhooks func()
	closeOnce    sync.Once
}

// listen serves h on a new httptest.Server; Close releases h first and
// stops its webhooks last.
func (s *fakeServer) listen(h interface {
	http.Handler
	Release()
	StopWebhooks()
}) {
	s.srv = httptest.NewServer(h)
	s.release = h.Release
	s.stopWebhooks = h.StopWebhooks
}

// URL returns the server's base URL, e.g. "http://127.0.0.1:41234".
func (s *fakeServer) URL() string { return s.srv.URL }

// Client returns an HTTP client for the server. Its Transport keeps
// connections alive; see FaultDropAfterProcessing for what that implies.
func (s *fakeServer) Client() *http.Client { return s.srv.Client() }

// Close releases held requests (they are answered), waits for requests in
// progress, shuts the server down, then stops the webhook sender: queued
// deliveries are dropped (call FlushWebhooks first to deliver them), and
// Close returns once the sender's goroutine has exited. Calling it again
// does nothing.
func (s *fakeServer) Close() {
	s.closeOnce.Do(func() {
		s.release()
		s.srv.Close()
		// After the server: requests in progress may still emit events.
		s.stopWebhooks()
	})
}

// Options is what every fake takes, whichever provider it plays: its
// clock, how long it keeps idempotency keys, the faults it injects at
// random and how long they last, its logger and its webhook delivery.
// StripeOptions, YooKassaOptions, CheckoutOptions and AdyenOptions embed
// it and add the provider's credentials and quirks. The zero value is
// ready to use; every field documents its default.
type Options struct {
	// Clock is the fake's notion of now: object timestamps, key expiry,
	// Stripe's search lag and the timestamps of Stripe's webhook
	// signatures are read from it. Defaults to time.Now; pass
	// (*ManualClock).Now to cross windows without sleeping.
	Clock func() time.Time
	// KeyTTL is how long the fake remembers an idempotency key from its
	// first request; a repeat after that is a new request. Defaults to
	// the provider's documented period: 24h for Stripe, YooKassa and
	// Checkout.com, 31 days for Adyen; PayPal's windows differ per API
	// (PayPalOptions.OrdersKeyTTL and PaymentsKeyTTL), and KeyTTL, when
	// set, is both.
	KeyTTL time.Duration
	// Seed seeds identifiers, default credentials and random faults: the
	// same seed and the same request order give the same ids, keys and
	// faults. Defaults to 0.
	Seed int64
	// FaultRates gives each fault kind a probability per request (their
	// sum must not exceed 1). Random faults apply to POSTs only unless
	// FaultGETs is set; scripted faults (Script) take precedence.
	// Defaults to none.
	FaultRates map[FaultKind]float64
	// FaultGETs lets FaultRates apply to GET requests too (failing
	// lookups).
	FaultGETs bool
	// HangFor is how long FaultHangAfterProcessing holds an answer, unless
	// the client goes away first. Defaults to 30s.
	HangFor time.Duration
	// SlowFor is the delay of FaultSlow. Defaults to 500ms.
	SlowFor time.Duration
	// RetryAfter is the wait FaultRateLimit429 asks for (Retry-After,
	// rounded up to whole seconds; YooKassa's retry_after in
	// milliseconds), and YooKassa's retry_after of the 202 answered to a
	// repeat while the first request runs. Defaults to 1s.
	RetryAfter time.Duration
	// Logger receives one record per request (Debug; Info when a fault
	// was injected). Keys, credentials and headers are never logged.
	// Defaults to discarding.
	Logger *slog.Logger
	// Webhooks delivers the provider's own events whenever a payment or
	// refund changes; each provider's options type says which events and
	// how they are signed. Defaults to none.
	Webhooks WebhookDelivery
}

// coreConfig is the provider-neutral configuration o gives the core of
// the fake called name, whose options type is typ (for error messages).
func (o Options) coreConfig(name, typ string) coreConfig {
	return coreConfig{name, typ, o.Clock, o.KeyTTL, o.Seed, o.FaultRates, o.FaultGETs, o.HangFor, o.SlowFor, o.RetryAfter, o.Logger}
}

// Defaults of the options every fake has.
const (
	defaultHangFor    = 30 * time.Second
	defaultSlowFor    = 500 * time.Millisecond
	defaultRetryAfter = time.Second
)

// withDefaults fills the zero fields every fake's options share: clock,
// hang and slow delays, Retry-After. The key TTL's default is the
// provider's and is set by the caller.
func (cfg coreConfig) withDefaults() coreConfig {
	if cfg.clock == nil {
		cfg.clock = time.Now
	}
	if cfg.hangFor == 0 {
		cfg.hangFor = defaultHangFor
	}
	if cfg.slowFor == 0 {
		cfg.slowFor = defaultSlowFor
	}
	if cfg.retryAfter == 0 {
		cfg.retryAfter = defaultRetryAfter
	}
	return cfg
}

// check is the provider-neutral half of every options type's Validate: it
// reports the first negative duration of the options whose core
// configuration is cfg (KeyTTL, then own, the type's own durations, then the
// fault delays), or the first unusable fault rate, or else the first
// unusable field of their Webhooks, wh.
func (cfg coreConfig) check(wh WebhookDelivery, own ...namedDuration) error {
	ds := append([]namedDuration{{"KeyTTL", cfg.keyTTL}}, own...)
	ds = append(ds, namedDuration{"HangFor", cfg.hangFor}, namedDuration{"SlowFor", cfg.slowFor},
		namedDuration{"RetryAfter", cfg.retryAfter})
	for _, d := range ds {
		if d.d < 0 {
			return fmt.Errorf("mocks: %s.%s is %v; use 0 for the default or a positive duration", cfg.typ, d.name, d.d)
		}
	}
	if err := validateFaultRates(cfg.faultRates); err != nil {
		return err
	}
	return wh.check(cfg.typ + ".Webhooks")
}

// namedDuration is a duration option and its field name.
type namedDuration struct {
	name string
	d    time.Duration
}

// renderJSON renders v as the providers do (indented JSON ending in a
// newline) under header, which names the Content-Type.
func renderJSON(status int, header http.Header, v any) *response {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot render %T: %v", v, err))
	}
	return &response{status: status, header: header, body: append(body, '\n')}
}

// mustMarshal renders v as compact JSON, e.g. the object a webhook event
// carries. The fakes render only their own types, so a failure is a bug.
func mustMarshal(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot render %T: %v", v, err))
	}
	return raw
}

// decodeStrict decodes a JSON body into v, refusing unknown fields; an
// empty body leaves v as it is.
func decodeStrict(body []byte, v any) error {
	if len(body) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// validCurrency reports whether code is an ISO 4217 code in upper case
// (from golang.org/x/text/currency), as the JSON APIs write currencies.
func validCurrency(code string) bool {
	u, err := currency.ParseISO(code)
	return err == nil && u.String() == code
}

package mocks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// This file is how every fake delivers webhooks, as the providers do: at
// least once, possibly late, twice, or out of order, and again after a
// failed attempt. It is provider-neutral; each fake renders its own events
// and signs them its own way.
//
// The sender, used by every fake:
//
//	s := newWebhookSender(d, seed, sign) // d validated; d.URL "" gives a sender that sends nothing
//	s.send(body)                         // enqueue one event; never blocks
//	s.flush(ctx)                         // wait until every queued delivery got a 2xx or gave up
//	s.stats()                            // counts (WebhookStats)
//	s.close()                            // stop; queued deliveries are dropped; waits for the worker
//
// sign(body, h) is called before every attempt (a retry is signed anew,
// with a fresh timestamp where the provider signs one) and sets the
// provider's headers on h: signature, Content-Type, User-Agent. Basic auth
// (Username/Password) and a fixed Authorization header are set by the
// sender. Every method is safe for concurrent use and on a nil sender.
//
// A fake wires it up through its fakeHandler: startWebhooks(d, sign) once
// after setUp, emitWebhook(body) under the fake's lock whenever an object
// changes (so the queue keeps the order in which things happened), and
// eventID for event identifiers that do not disturb the fake's other ids.
// The handler's FlushWebhooks, WebhookStats and StopWebhooks are then the
// fake's, and the server's Close stops the sender.
//
// One worker goroutine delivers, one delivery at a time, in the order the
// deliveries fall due; randomness comes from the seed (one stream for the
// decisions made on send, one per delivery for its attempts), so that a
// seed replays the same faults. Delays and backoff are real time: the
// deliveries are real HTTP requests to a real receiver.

// Defaults of WebhookDelivery.
const (
	// defaultWebhookMaxAttempts is how many times a delivery is attempted
	// before the sender gives up on it. Checkout.com resends up to 8 times;
	// Stripe and Adyen try for days, which a test cannot wait for.
	defaultWebhookMaxAttempts = 8
	// defaultWebhookRetryAfter is the wait after the first failed attempt;
	// it doubles after each further one, up to webhookBackoffCap times
	// itself.
	defaultWebhookRetryAfter = 50 * time.Millisecond
)

const (
	// webhookBackoffCap caps the backoff at this many RetryAfters.
	webhookBackoffCap = 16
	// webhookHoldFactor: a delivery held back for reordering waits for a
	// later one to be delivered, but at most this many RetryAfters past
	// its due time, so that the last event of a run is not held forever.
	webhookHoldFactor = 8
	// webhookTimeout bounds one attempt when the sender makes its own
	// client (a receiver that hangs is a failed attempt, as at a provider).
	webhookTimeout = 5 * time.Second
	// webhookReadLimit is how much of a receiver's answer is read (and
	// discarded) so that the connection can be reused.
	webhookReadLimit = 64 << 10
)

// WebhookDelivery configures how a fake delivers webhooks. The zero value
// delivers none. Validate says what is wrong with one.
type WebhookDelivery struct {
	// URL is where events are POSTed, e.g. an httptest.Server's URL plus a
	// path. It must be http or https on a loopback address (127.0.0.0/8,
	// ::1 or localhost): a fake never sends traffic anywhere else. Empty
	// means no webhooks.
	URL string
	// Secret is the signing secret in the provider's format: Stripe's
	// endpoint secret (whsec_...), Checkout.com's signature key, Adyen's
	// hex HMAC key. YooKassa signs nothing and takes none.
	Secret string
	// Username and Password are HTTP Basic credentials sent with every
	// delivery, for providers that send them (Adyen). Set both or neither.
	Username, Password string
	// Authorization is a header value sent verbatim as Authorization with
	// every delivery (Checkout.com's configurable authorization header).
	// It cannot be combined with Username.
	Authorization string
	// Delay is how long after the event a delivery is first attempted.
	// Defaults to 0: at once.
	Delay time.Duration
	// DuplicateRate is the probability (0..1) that an event is delivered
	// twice, as two separate deliveries of the same body.
	DuplicateRate float64
	// FailRate is the probability (0..1) that an attempt fails on the
	// way (it is not sent), so that the sender retries it.
	FailRate float64
	// ReorderRate is the probability (0..1) that an event is held back
	// until the next event has been delivered, so that the later one
	// arrives first. The event after a held one is never held itself.
	ReorderRate float64
	// MaxAttempts is how many attempts a delivery gets before the sender
	// gives up (WebhookStats.GaveUp). Defaults to 8: Checkout.com resends
	// up to 8 times; Stripe and Adyen try for days, which a test cannot
	// wait for.
	MaxAttempts int
	// RetryAfter is the wait after the first failed attempt, doubling
	// after each further failure up to 16 times RetryAfter. Defaults to
	// 50ms.
	RetryAfter time.Duration
	// Client sends the deliveries. Redirects are never followed (a 3xx is
	// a failed attempt, as at the providers). Defaults to a client with a
	// 5s timeout, no proxy and no keep-alive.
	Client *http.Client
}

// Validate reports the first field that cannot work, saying how to fix it.
func (d WebhookDelivery) Validate() error { return d.check("WebhookDelivery") }

// enabled reports whether d delivers anything.
func (d WebhookDelivery) enabled() bool { return d.URL != "" }

// check is Validate with the field path of the options that hold d, e.g.
// "StripeOptions.Webhooks".
func (d WebhookDelivery) check(name string) error {
	if d.URL != "" {
		if err := checkLoopbackURL(d.URL); err != nil {
			return fmt.Errorf("mocks: %s.URL %w", name, err)
		}
	}
	if (d.Username == "") != (d.Password == "") {
		return fmt.Errorf("mocks: %s.Username and Password go together; set both or neither", name)
	}
	if d.Authorization != "" && d.Username != "" {
		return fmt.Errorf("mocks: %s.Authorization and Username both set the Authorization header; set one", name)
	}
	for _, r := range []struct {
		name string
		p    float64
	}{{"DuplicateRate", d.DuplicateRate}, {"FailRate", d.FailRate}, {"ReorderRate", d.ReorderRate}} {
		if math.IsNaN(r.p) || r.p < 0 || r.p > 1 {
			return fmt.Errorf("mocks: %s.%s is %v; use a probability between 0 and 1", name, r.name, r.p)
		}
	}
	if d.Delay < 0 {
		return fmt.Errorf("mocks: %s.Delay is %v; use 0 (at once) or a positive duration", name, d.Delay)
	}
	if d.RetryAfter < 0 {
		return fmt.Errorf("mocks: %s.RetryAfter is %v; use 0 for the default (%v) or a positive duration", name, d.RetryAfter, defaultWebhookRetryAfter)
	}
	if d.MaxAttempts < 0 {
		return fmt.Errorf("mocks: %s.MaxAttempts is %d; use 0 for the default (%d) or a positive count", name, d.MaxAttempts, defaultWebhookMaxAttempts)
	}
	return nil
}

// checkLoopbackURL refuses a URL that is not http(s) to a loopback host:
// the project never sends traffic anywhere but loopback, and a fake's
// webhooks carry test events that must not leave the machine.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("is not a URL (%v); use e.g. http://127.0.0.1:8080/webhooks", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("has scheme %q; use http:// or https:// to a loopback address", u.Scheme)
	}
	if u.User != nil {
		return errors.New("carries credentials; put them in Username and Password instead")
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("has no host; use e.g. http://127.0.0.1:8080/webhooks")
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("has host %q, which is not a loopback address; fakes deliver only to 127.0.0.0/8, ::1 or localhost", host)
}

// WebhookStats counts what a fake's webhook sender did. When nothing gave
// up and nothing was dropped, Delivered is Queued + Duplicated.
type WebhookStats struct {
	// Queued is how many events the fake emitted.
	Queued int
	// Delivered is how many deliveries a receiver answered with a 2xx
	// (duplicates included).
	Delivered int
	// Duplicated is how many events were delivered a second time
	// (DuplicateRate).
	Duplicated int
	// Failed is how many attempts failed: dropped on the way (FailRate),
	// refused by the receiver (not 2xx) or lost in transport.
	Failed int
	// GaveUp is how many deliveries used MaxAttempts without a 2xx.
	GaveUp int
	// Dropped is how many deliveries were still queued when the fake
	// closed.
	Dropped int
}

// webhookSender delivers one fake's webhooks; see the top of this file.
type webhookSender struct {
	d      WebhookDelivery // defaults filled
	client *http.Client
	own    *http.Transport // the transport the sender made, closed by close
	sign   func(body []byte, h http.Header)
	seed   int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	rng     *rand.Rand // decisions made on send
	queue   []*webhookItem
	seq     uint64
	waiting *webhookItem  // a held item whose overtaker is not yet queued
	idle    chan struct{} // closed while nothing is pending
	wake    chan struct{} // tells the worker the queue changed
	st      WebhookStats
	closed  bool
}

// webhookItem is one delivery of one event.
type webhookItem struct {
	seq       uint64
	body      []byte
	due       time.Time
	held      bool      // reordered: waits for a later delivery
	holdUntil time.Time // when a held item is let go anyway
	attempts  int
	rng       *rand.Rand // this delivery's attempt decisions (worker only)
}

// newWebhookSender returns a sender for d (which must validate: a wrong
// option is a bug in the test, so it panics), with randomness from seed
// and sign setting the provider's headers on each attempt. With d.URL
// empty the sender sends nothing.
func newWebhookSender(d WebhookDelivery, seed int64, sign func(body []byte, h http.Header)) *webhookSender {
	if err := d.Validate(); err != nil {
		panic(err)
	}
	s := &webhookSender{d: d, sign: sign, seed: seed, idle: make(chan struct{})}
	close(s.idle)
	if !d.enabled() {
		return s
	}
	if s.d.MaxAttempts == 0 {
		s.d.MaxAttempts = defaultWebhookMaxAttempts
	}
	if s.d.RetryAfter == 0 {
		s.d.RetryAfter = defaultWebhookRetryAfter
	}
	if d.Client != nil {
		c := *d.Client
		s.client = &c
	} else {
		// No proxy: deliveries go to the loopback URL itself. No
		// keep-alive: a connection lives for one attempt, so none outlives
		// close (a connection returns to the idle pool asynchronously,
		// after CloseIdleConnections may already have run).
		s.own = &http.Transport{Proxy: nil, DisableKeepAlives: true}
		s.client = &http.Client{Timeout: webhookTimeout, Transport: s.own}
	}
	// A redirect could lead off loopback; providers treat a 3xx as a
	// failed delivery anyway.
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s.rng = rand.New(rand.NewPCG(uint64(seed), 0x77eb5e7d3b1a0c49))
	s.wake = make(chan struct{}, 1)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.run()
	return s
}

// enabled reports whether the sender delivers anything, so that a fake can
// skip rendering events nobody receives.
func (s *webhookSender) enabled() bool { return s != nil && s.d.enabled() }

// send enqueues one event. It never blocks on delivery; after close it
// does nothing.
func (s *webhookSender) send(body []byte) {
	if !s.enabled() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.st.Queued++
	due := time.Now().Add(s.d.Delay)
	it := s.newItemLocked(body, due)
	switch {
	case s.waiting != nil:
		// This event is the one that overtakes the held one.
		s.waiting = nil
	case s.d.ReorderRate > 0 && s.rng.Float64() < s.d.ReorderRate:
		it.held = true
		it.holdUntil = due.Add(webhookHoldFactor * s.d.RetryAfter)
		s.waiting = it
	}
	if s.d.DuplicateRate > 0 && s.rng.Float64() < s.d.DuplicateRate {
		s.st.Duplicated++
		s.newItemLocked(body, due)
	}
	s.notify()
}

// newItemLocked queues a delivery of body due at due. mu must be held.
func (s *webhookSender) newItemLocked(body []byte, due time.Time) *webhookItem {
	s.seq++
	it := &webhookItem{
		seq:  s.seq,
		body: append([]byte(nil), body...),
		due:  due,
		rng:  rand.New(rand.NewPCG(uint64(s.seed), s.seq*0x9e3779b97f4a7c15+1)),
	}
	if len(s.queue) == 0 {
		s.idle = make(chan struct{})
	}
	s.queue = append(s.queue, it)
	return it
}

// notify wakes the worker without blocking.
func (s *webhookSender) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the worker: it attempts the next due delivery, or sleeps until
// one falls due, the queue changes or the sender closes.
func (s *webhookSender) run() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for s.ctx.Err() == nil {
		s.mu.Lock()
		it, wait := s.nextLocked(time.Now())
		s.mu.Unlock()
		if it != nil {
			s.attempt(it)
			continue
		}
		var tc <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			tc = timer.C
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-tc:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// nextLocked returns the delivery to attempt now (the earliest due, not
// held), or how long to wait for one (-1: until the queue changes). A held
// delivery past its holdUntil is let go. mu must be held.
func (s *webhookSender) nextLocked(now time.Time) (*webhookItem, time.Duration) {
	var best *webhookItem
	var next time.Time
	for _, it := range s.queue {
		if it.held && !now.Before(it.holdUntil) {
			it.held = false
			if s.waiting == it {
				s.waiting = nil
			}
		}
		at := it.due
		if it.held {
			at = it.holdUntil
		} else if !now.Before(it.due) && (best == nil || it.due.Before(best.due) || (it.due.Equal(best.due) && it.seq < best.seq)) {
			best = it
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if best != nil {
		return best, 0
	}
	if next.IsZero() {
		return nil, -1
	}
	return nil, max(next.Sub(now), time.Millisecond)
}

// attempt makes one attempt of it and records its outcome.
func (s *webhookSender) attempt(it *webhookItem) {
	it.attempts++
	ok := false
	if s.d.FailRate == 0 || it.rng.Float64() >= s.d.FailRate {
		ok = s.post(it.body)
	}
	if s.ctx.Err() != nil {
		return // closing: the item is dropped with the rest of the queue
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok {
		s.st.Delivered++
		s.doneLocked(it)
		return
	}
	s.st.Failed++
	if it.attempts >= s.d.MaxAttempts {
		s.st.GaveUp++
		s.doneLocked(it)
		return
	}
	backoff := s.d.RetryAfter << min(it.attempts-1, 30)
	it.due = time.Now().Add(min(backoff, webhookBackoffCap*s.d.RetryAfter))
}

// doneLocked removes a finished delivery. Held deliveries queued before it
// have now been overtaken and are let go. mu must be held.
func (s *webhookSender) doneLocked(it *webhookItem) {
	kept := s.queue[:0]
	for _, q := range s.queue {
		if q == it {
			continue
		}
		if q.held && q.seq < it.seq {
			q.held = false
			if s.waiting == q {
				s.waiting = nil
			}
		}
		kept = append(kept, q)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	if len(s.queue) == 0 {
		close(s.idle)
	}
}

// post sends body once and reports whether the receiver answered 2xx.
func (s *webhookSender) post(body []byte) bool {
	req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.d.URL, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	if s.sign != nil {
		s.sign(body, req.Header)
	}
	switch {
	case s.d.Username != "":
		req.SetBasicAuth(s.d.Username, s.d.Password)
	case s.d.Authorization != "":
		req.Header.Set("Authorization", s.d.Authorization)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, webhookReadLimit))
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// stats returns the counts so far.
func (s *webhookSender) stats() WebhookStats {
	if s == nil {
		return WebhookStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// flush waits until every queued delivery got a 2xx or gave up, or ctx
// ends. It fails when the sender was closed with deliveries left.
func (s *webhookSender) flush(ctx context.Context) error {
	if !s.enabled() {
		return nil
	}
	for {
		s.mu.Lock()
		idle, dropped, left := s.idle, s.st.Dropped, len(s.queue)
		s.mu.Unlock()
		if left == 0 {
			if dropped > 0 {
				return fmt.Errorf("mocks: webhooks stopped with %d deliveries not done", dropped)
			}
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return fmt.Errorf("mocks: %d webhook deliveries still queued: %w", left, ctx.Err())
		}
	}
}

// close stops the sender: an attempt in flight is aborted, queued
// deliveries are dropped (WebhookStats.Dropped), and it returns once the
// worker has exited. Calling it again does nothing.
func (s *webhookSender) close() {
	if !s.enabled() {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	if s.own != nil {
		// Its kept-alive connections' goroutines end with them.
		s.own.CloseIdleConnections()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.queue); n > 0 {
		s.st.Dropped += n
		clear(s.queue)
		s.queue = nil
		close(s.idle)
	}
}

// ---- the fakes' side ----

// startWebhooks makes h deliver its events as d says, signed by sign.
// Event ids come from a source of their own, so that turning webhooks on
// does not change the ids of a seeded fake's other objects.
func (h *fakeHandler) startWebhooks(d WebhookDelivery, sign func(body []byte, hd http.Header)) {
	h.webhooks = newWebhookSender(d, h.core.cfg.seed, sign)
	h.eventIDs = newIDSource(h.core.cfg.seed ^ 0x3c6ef372fe94f82b)
}

// webhooksOn reports whether anyone receives h's events.
func (h *fakeHandler) webhooksOn() bool { return h.webhooks.enabled() }

// emitWebhook queues one rendered event. Call it under the fake's lock,
// where the change it reports is made, so that events queue in the order
// the changes happened.
func (h *fakeHandler) emitWebhook(body []byte) { h.webhooks.send(body) }

// eventID returns a new event identifier: prefix and n characters.
func (h *fakeHandler) eventID(prefix string, n int) string { return h.eventIDs.next(prefix, n) }

// FlushWebhooks waits until every webhook queued so far was delivered (a
// 2xx from the receiver) or given up on, or ctx ends. Without webhooks
// configured it returns nil at once.
func (h *fakeHandler) FlushWebhooks(ctx context.Context) error { return h.webhooks.flush(ctx) }

// WebhookStats returns what the webhook sender did so far.
func (h *fakeHandler) WebhookStats() WebhookStats { return h.webhooks.stats() }

// StopWebhooks stops delivering webhooks: an attempt in flight is
// aborted, queued deliveries are dropped, and it returns once the sender
// has stopped. A fake's Close calls it; call it yourself when the handler
// is mounted on a server of your own. Call FlushWebhooks first to deliver
// what is queued.
func (h *fakeHandler) StopWebhooks() { h.webhooks.close() }

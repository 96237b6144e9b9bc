package mocks

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// response is one answer as a fake stores and replays it: status, headers
// that belong to the answer (not per-delivery ones like Request-Id) and body.
type response struct {
	status int
	header http.Header
	body   []byte
	// latest, when set, renders the answer anew for a repeat of the key:
	// providers that answer a repeat with the latest status of what the
	// first request made (PayPal) set it; nil replays the answer as it was.
	latest func() *response
}

// current is the answer a repeat of the key receives: r re-rendered by
// latest when it has one, r itself otherwise.
func (r *response) current() *response {
	if r != nil && r.latest != nil {
		return r.latest()
	}
	return r
}

// idemPolicy is a provider's idempotency contract.
type idemPolicy struct {
	// ttl is how long a key is remembered, from its first request.
	ttl time.Duration
	// keep reports whether an executed answer is stored under its key; nil
	// stores every answer (Stripe). Checkout.com, for one, keeps only 2xx.
	keep func(status int) bool
	// keepRealAfter500 decides what FaultProcessed500 leaves under the key:
	// false keeps the 500 the client received (subject to keep), true keeps
	// the endpoint's real answer, so that a repeat with the same key learns
	// the outcome (YooKassa: "500 means unknown: repeat with the same key").
	keepRealAfter500 bool
	// forget reports an executed answer the provider does not keep under
	// its key although keep would, so that a request with the key runs
	// anew; nil forgets none. Adyen forgets an error it marks
	// Transient-Error: true.
	forget func(r *response) bool
	// ttlFor, when set, gives the key window of the request c that first
	// uses a key, for providers whose endpoints keep keys for different
	// periods (PayPal: Orders 6 hours, Payments 45 days); nil gives every
	// key ttl. ttl should then be the shortest window (sweeps run every
	// quarter of it).
	ttlFor func(c *call) time.Duration
}

type idemID struct{ scope, key string }

type idemEntry struct {
	fingerprint string
	first       time.Time
	ttl         time.Duration
	done        bool
	resp        *response
}

// idemDecision is what the idempotency layer says about an incoming request.
type idemDecision int

const (
	idemProceed  idemDecision = iota // key reserved (or no key): run the endpoint
	idemReplay                       // same key, same request, finished: replay
	idemMismatch                     // same key, another request
	idemInUse                        // same key, same request, still running
)

// idemStore remembers keys and answers for one fake, measured on the fake's
// clock. Keys are scoped (per API key / account).
type idemStore struct {
	mu        sync.Mutex
	policy    idemPolicy
	entries   map[idemID]*idemEntry
	lastSweep time.Time
}

func newIdemStore(p idemPolicy) *idemStore {
	return &idemStore{policy: p, entries: make(map[idemID]*idemEntry)}
}

// fingerprint identifies "the same request": method, path, query and the
// form parameters in canonical order.
func fingerprint(method, path string, query, form url.Values) string {
	h := sha256.New()
	h.Write([]byte(method + " " + path + "?" + query.Encode() + "\n" + form.Encode()))
	return hex.EncodeToString(h.Sum(nil))
}

// callFingerprint is fingerprint for a call: for a JSON body its canonical
// form is covered too (form-encoded calls keep fingerprint's value).
func callFingerprint(c *call) string {
	fp := fingerprint(c.method, c.path, c.query, c.form)
	if c.canon == "" {
		return fp
	}
	h := sha256.New()
	h.Write([]byte(fp + "\n" + c.canon))
	return hex.EncodeToString(h.Sum(nil))
}

func (s *idemStore) expired(e *idemEntry, now time.Time) bool {
	return e.done && !now.Before(e.first.Add(e.ttl))
}

// begin looks the key up and, when the request may run, reserves the key
// for ttl. The returned response is set for idemReplay.
func (s *idemStore) begin(id idemID, fp string, now time.Time, ttl time.Duration) (idemDecision, *response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweepLocked(now)
	if e, ok := s.entries[id]; ok {
		if s.expired(e, now) {
			delete(s.entries, id)
		} else {
			switch {
			case e.fingerprint != fp:
				return idemMismatch, nil
			case !e.done:
				return idemInUse, nil
			default:
				return idemReplay, e.resp
			}
		}
	}
	s.entries[id] = &idemEntry{fingerprint: fp, first: now, ttl: ttl}
	return idemProceed, nil
}

// finish stores an executed answer under a reserved key (or forgets the key
// when the policy does not keep such answers).
func (s *idemStore) finish(id idemID, r *response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return
	}
	if (s.policy.keep != nil && !s.policy.keep(r.status)) || (s.policy.forget != nil && s.policy.forget(r)) {
		delete(s.entries, id)
		return
	}
	e.done = true
	e.resp = r
}

// abandon forgets a reserved key whose request never began executing
// (validation failed), so that a corrected retry may use it.
func (s *idemStore) abandon(id idemID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[id]; ok && !e.done {
		delete(s.entries, id)
	}
}

// answered returns the finished answer stored under id, or nil while the
// key's first request is still running (or the key was just freed).
func (s *idemStore) answered(id idemID) *response {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[id]; ok && e.done {
		return e.resp
	}
	return nil
}

// replayFirst is the keyMismatch answer of providers that document no error
// for a key reused with another request, only that the key returns the
// first request's answer (Checkout.com, Adyen; see their keyMismatch): the
// stored answer, whatever the new request, or inUse's answer while the
// first request still runs.
func (k *core) replayFirst(c *call, inUse func(*call) *response) *response {
	if stored := k.idem.answered(idemID{scope: c.scope, key: c.key}); stored != nil {
		return stored.current()
	}
	return inUse(c)
}

// ttl is the key window of the request c (idemPolicy.ttlFor).
func (s *idemStore) ttlOf(c *call) time.Duration {
	if s.policy.ttlFor != nil {
		return s.policy.ttlFor(c)
	}
	return s.policy.ttl
}

// sweepLocked drops expired keys at most once per quarter TTL of clock time.
func (s *idemStore) sweepLocked(now time.Time) {
	if now.Sub(s.lastSweep) < s.policy.ttl/4 && !now.Before(s.lastSweep) {
		return
	}
	s.lastSweep = now
	for id, e := range s.entries {
		if s.expired(e, now) {
			delete(s.entries, id)
		}
	}
}

// size returns the number of remembered keys, expired ones included until
// swept.
func (s *idemStore) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

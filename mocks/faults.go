package mocks

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// FaultKind names one way the path between a client and a provider can fail.
// Each kind says whether the request was processed (money may have moved) and
// whether its answer was stored under the idempotency key.
type FaultKind int

// The fault kinds a fake can inject. "Processed" means the endpoint ran and
// its answer is stored under the request's idempotency key, exactly as if
// the client had received it.
const (
	// FaultNone passes the request through untouched. Scripts use it to let
	// one matching request through before a fault.
	FaultNone FaultKind = iota
	// FaultDropAfterProcessing processes the request, then closes the
	// connection without writing an answer. Beware: Go's http.Transport
	// silently resends a request carrying an Idempotency-Key header once when
	// a reused keep-alive connection fails this way, so the caller may see the
	// replayed answer instead of an error; disable keep-alives to observe the
	// drop itself.
	FaultDropAfterProcessing
	// FaultHangAfterProcessing processes the request, then holds the answer
	// for HangFor or until the client goes away, whichever comes first.
	FaultHangAfterProcessing
	// FaultGatewayBefore502 answers 502 from a "proxy" in front of the
	// provider: nothing processed, nothing stored.
	FaultGatewayBefore502
	// FaultGatewayAfter502 processes the request and stores the real answer
	// under the key, but the client receives a proxy's 502.
	FaultGatewayAfter502
	// FaultRateLimit429 answers the provider's 429 with Retry-After before
	// the idempotency layer: nothing processed, nothing stored.
	FaultRateLimit429
	// FaultSlow delays the request by SlowFor after its idempotency key is
	// taken and before it is processed; it is then processed and answered
	// normally. A same-key repeat during the delay meets the key in use.
	FaultSlow
	// FaultStored500 makes the endpoint fail with the provider's 500 after
	// execution began: nothing processed, but the 500 is stored under the key
	// and replayed for it until the key expires. On a request whose key
	// already holds an answer it does nothing.
	FaultStored500
	// FaultProcessed500 processes the request (money may move), then the
	// provider fails and answers its own 500. What the key keeps is the
	// provider's rule: Stripe stores the 500 and replays it; Checkout.com
	// stores only 2xx answers, so a resend with the same key is processed
	// anew (a second charge); YooKassa keeps the real outcome, which a repeat
	// with the same key then returns. A request that fails validation is
	// answered normally.
	FaultProcessed500
	faultKindCount
)

var faultNames = [...]string{
	FaultNone:                "none",
	FaultDropAfterProcessing: "drop_after_processing",
	FaultHangAfterProcessing: "hang_after_processing",
	FaultGatewayBefore502:    "gateway_before_502",
	FaultGatewayAfter502:     "gateway_after_502",
	FaultRateLimit429:        "rate_limit_429",
	FaultSlow:                "slow",
	FaultStored500:           "stored_500",
	FaultProcessed500:        "processed_500",
}

// String returns the fault's snake_case name, e.g. "drop_after_processing".
func (k FaultKind) String() string {
	if k >= 0 && k < faultKindCount {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// processes reports whether a request that meets this fault still runs the
// endpoint (so money may move).
func (k FaultKind) processes() bool {
	switch k {
	case FaultGatewayBefore502, FaultRateLimit429, FaultStored500:
		return false
	}
	return true
}

// Match selects the requests a scripted fault applies to. Empty fields match
// anything. With an empty Method a script matches POST requests only; set
// Method to "GET" to make lookups fail.
type Match struct {
	// Method is the HTTP method, e.g. "POST" or "GET".
	Method string
	// Path is either the request's exact path ("/v1/payment_intents") or
	// the route pattern's path ("/v1/payment_intents/{id}/capture").
	Path string
	// IdempotencyKey, when set, matches only requests carrying this key.
	IdempotencyKey string
}

// faultRequest is what fault selection looks at.
type faultRequest struct {
	method, path, routePath, key string
}

func (m Match) matches(fr faultRequest) bool {
	if m.Method == "" {
		if fr.method != http.MethodPost {
			return false
		}
	} else if !strings.EqualFold(m.Method, fr.method) {
		return false
	}
	if m.Path != "" && m.Path != fr.path && m.Path != fr.routePath {
		return false
	}
	if m.IdempotencyKey != "" && m.IdempotencyKey != fr.key {
		return false
	}
	return true
}

type scriptedFaults struct {
	match Match
	queue []FaultKind
}

// faultPlan decides which fault, if any, a request meets: first the scripts,
// in the order they were added, then the seeded random rates.
type faultPlan struct {
	mu       sync.Mutex
	scripts  []*scriptedFaults
	rates    []kindRate
	rng      *rand.Rand
	onGETs   bool
	injected [faultKindCount]int
}

type kindRate struct {
	kind FaultKind
	rate float64
}

func validateFaultRates(rates map[FaultKind]float64) error {
	var sum float64
	for k, r := range rates {
		if k <= FaultNone || k >= faultKindCount {
			return fmt.Errorf("mocks: FaultRates has unknown fault kind %d", int(k))
		}
		if r < 0 || r > 1 {
			return fmt.Errorf("mocks: FaultRates[%s] = %v, want a probability in [0, 1]", k, r)
		}
		sum += r
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("mocks: FaultRates add up to %v, want at most 1 (one fault per request)", sum)
	}
	return nil
}

func newFaultPlan(seed int64, rates map[FaultKind]float64, onGETs bool) *faultPlan {
	p := &faultPlan{
		rng:    rand.New(rand.NewPCG(uint64(seed), 0x7f4a7c159e3779b9)),
		onGETs: onGETs,
	}
	for k, r := range rates {
		if r > 0 {
			p.rates = append(p.rates, kindRate{k, r})
		}
	}
	sort.Slice(p.rates, func(i, j int) bool { return p.rates[i].kind < p.rates[j].kind })
	return p
}

func (p *faultPlan) script(m Match, kinds []FaultKind) {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := append([]FaultKind(nil), kinds...)
	p.scripts = append(p.scripts, &scriptedFaults{match: m, queue: q})
}

func (p *faultPlan) clearScripts() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.scripts = nil
}

func (p *faultPlan) pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.scripts {
		n += len(s.queue)
	}
	return n
}

// pick consumes the fault for one request.
func (p *faultPlan) pick(fr faultRequest) FaultKind {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.scripts {
		if len(s.queue) > 0 && s.match.matches(fr) {
			k := s.queue[0]
			s.queue = s.queue[1:]
			return k
		}
	}
	if len(p.rates) == 0 {
		return FaultNone
	}
	if fr.method != http.MethodPost && !(p.onGETs && fr.method == http.MethodGet) {
		return FaultNone
	}
	x := p.rng.Float64()
	for _, kr := range p.rates {
		if x < kr.rate {
			return kr.kind
		}
		x -= kr.rate
	}
	return FaultNone
}

func (p *faultPlan) record(k FaultKind) {
	if k == FaultNone {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.injected[k]++
}

func (p *faultPlan) counts() map[FaultKind]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[FaultKind]int)
	for k, n := range p.injected {
		if n > 0 {
			m[FaultKind(k)] = n
		}
	}
	return m
}

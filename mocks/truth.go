package mocks

import (
	"sort"
	"strings"
	"sync"
	"time"
)

// Truth is what a fake provider actually did, independent of what any client
// heard: every payment and refund it created, and counters of the requests
// and faults it saw. Tests use it to prove that no fault moved money twice.
type Truth struct {
	// Payments holds every payment the fake created, declined ones
	// included, oldest first.
	Payments []TruthPayment
	// Refunds holds every refund the fake created, oldest first.
	Refunds []TruthRefund
	// Requests counts requests per route, e.g. "POST /v1/payment_intents";
	// requests that matched no route count under "unknown".
	Requests map[string]int
	// Faults counts the faults actually injected, per kind.
	Faults map[FaultKind]int
	// Replays counts answers replayed from the idempotency store.
	Replays int
	// KeyInUse counts same-key requests refused because the first was still
	// running.
	KeyInUse int
	// KeyMismatch counts same-key requests refused because their parameters,
	// method or path differed from the first.
	KeyMismatch int
}

// TruthPayment is one payment as the provider holds it. Amounts are in minor
// units; Status is the provider's own status string.
type TruthPayment struct {
	// ID is the provider's payment id, e.g. "pi_...".
	ID string
	// Status is the provider's current status, e.g. "succeeded".
	Status string
	// Amount is the amount asked for.
	Amount int64
	// Currency is the provider's currency code, e.g. "usd".
	Currency string
	// Authorized is true once the payment method was successfully charged or
	// authorized (money moved or is held), whatever happened afterwards.
	Authorized bool
	// AmountCaptured is the money actually taken.
	AmountCaptured int64
	// AmountRefunded is the money given back by refunds.
	AmountRefunded int64
	// Metadata is the payment's metadata (a copy).
	Metadata map[string]string
	// Reference is the payment's own reference field, for providers that
	// have one (Checkout.com's reference); "" otherwise.
	Reference string
	// IdempotencyKey is the key of the request that created the payment, if
	// any.
	IdempotencyKey string
	// Created is the creation time on the fake's clock.
	Created time.Time
	// Injected marks a payment made out of band (e.g.
	// StripeHandler.InjectPaymentIntent), by no request of a client: the
	// per-reference counts (ChargesBy, PaymentsBy, Duplicates,
	// ChargesByReference) and TotalCharged leave it out, so that they
	// still say what the clients' requests did.
	Injected bool
}

// TruthRefund is one refund as the provider holds it.
type TruthRefund struct {
	// ID is the provider's refund id, e.g. "re_...".
	ID string
	// PaymentID is the refunded payment's id.
	PaymentID string
	// Status is the provider's refund status, e.g. "succeeded".
	Status string
	// Amount is the refunded amount in minor units.
	Amount int64
	// Currency is the provider's currency code.
	Currency string
	// Metadata is the refund's own metadata (a copy).
	Metadata map[string]string
	// Reference is the refund's own reference field, for providers that
	// have one (Checkout.com's action reference); "" otherwise.
	Reference string
	// Description is the refund's description, for providers whose refunds
	// carry one but no metadata (YooKassa); "" otherwise.
	Description string
	// IdempotencyKey is the key of the request that created the refund.
	IdempotencyKey string
	// Created is the creation time on the fake's clock.
	Created time.Time
	// Injected marks a refund made out of band (StripeHandler.InjectRefund):
	// RefundsBy, RefundsByReference and TotalRefunded leave it out.
	Injected bool
}

// ChargesBy counts authorized payments per value of the metadata key k
// (payments without k are left out). Any count above 1 is a reference that
// was charged twice.
func (t Truth) ChargesBy(k string) map[string]int {
	return countBy(t.Payments, k, func(p TruthPayment) (map[string]string, bool) { return p.Metadata, p.Authorized && !p.Injected })
}

// PaymentsBy counts payments per value of the metadata key k, declined and
// canceled ones included.
func (t Truth) PaymentsBy(k string) map[string]int {
	return countBy(t.Payments, k, func(p TruthPayment) (map[string]string, bool) { return p.Metadata, !p.Injected })
}

// RefundsBy counts refunds per value of the refund's metadata key k.
func (t Truth) RefundsBy(k string) map[string]int {
	return countBy(t.Refunds, k, func(r TruthRefund) (map[string]string, bool) { return r.Metadata, !r.Injected })
}

// countBy counts items per value of their metadata key k, leaving out the
// items without k and those that metadata does not count.
func countBy[T any](items []T, k string, metadata func(T) (md map[string]string, counts bool)) map[string]int {
	m := make(map[string]int)
	for _, it := range items {
		if md, counts := metadata(it); counts {
			if v, ok := md[k]; ok {
				m[v]++
			}
		}
	}
	return m
}

// ChargesByReference counts authorized payments per Reference (payments
// without one are left out), for providers whose payments carry a reference
// of their own (Checkout.com). Any count above 1 was charged twice.
func (t Truth) ChargesByReference() map[string]int {
	m := make(map[string]int)
	for _, p := range t.Payments {
		if p.Reference != "" && p.Authorized && !p.Injected {
			m[p.Reference]++
		}
	}
	return m
}

// RefundsByReference counts refunds per Reference (refunds without one are
// left out).
func (t Truth) RefundsByReference() map[string]int {
	m := make(map[string]int)
	for _, r := range t.Refunds {
		if r.Reference != "" && !r.Injected {
			m[r.Reference]++
		}
	}
	return m
}

// Duplicates returns, sorted, the values of metadata key k that were charged
// (authorized) more than once. Empty means no reference was charged twice.
func (t Truth) Duplicates(k string) []string {
	var out []string
	for v, n := range t.ChargesBy(k) {
		if n > 1 {
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// TotalCharged is the money captured in currency (case-insensitive), in
// minor units, before refunds.
func (t Truth) TotalCharged(currency string) int64 {
	var n int64
	for _, p := range t.Payments {
		if strings.EqualFold(p.Currency, currency) && !p.Injected {
			n += p.AmountCaptured
		}
	}
	return n
}

// TotalRefunded is the money refunded in currency (case-insensitive), in
// minor units.
func (t Truth) TotalRefunded(currency string) int64 {
	var n int64
	for _, r := range t.Refunds {
		if strings.EqualFold(r.Currency, currency) && r.Status == "succeeded" && !r.Injected {
			n += r.Amount
		}
	}
	return n
}

// Payment returns the payment with the given provider id.
func (t Truth) Payment(id string) (TruthPayment, bool) {
	for _, p := range t.Payments {
		if p.ID == id {
			return p, true
		}
	}
	return TruthPayment{}, false
}

// counters are the request-level statistics every fake keeps.
type counters struct {
	mu          sync.Mutex
	requests    map[string]int
	replays     int
	keyInUse    int
	keyMismatch int
}

func newCounters() *counters {
	return &counters{requests: make(map[string]int)}
}

func (c *counters) request(route string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[route]++
}

func (c *counters) idem(d idemDecision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch d {
	case idemReplay:
		c.replays++
	case idemInUse:
		c.keyInUse++
	case idemMismatch:
		c.keyMismatch++
	}
}

// fill copies the counters into t.
func (c *counters) fill(t *Truth) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Requests = make(map[string]int, len(c.requests))
	for k, v := range c.requests {
		t.Requests[k] = v
	}
	t.Replays = c.replays
	t.KeyInUse = c.keyInUse
	t.KeyMismatch = c.keyMismatch
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

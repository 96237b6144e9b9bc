package crashsuite

import (
	"cmp"
	"fmt"
	"math/rand/v2"

	"github.com/payonce/payonce"
)

// workConfig determines the whole work list: every process derives the same
// list from it, so a restarted worker calls again with the same identities
// and the same requests.
type workConfig struct {
	// Provider is the provider's name (part of every operation id);
	// empty is stripe.
	Provider string `json:"provider"`
	Seed     int64  `json:"seed"`
	Orders   int    `json:"orders"`
	Workers  int    `json:"workers"`
	// DeclineEvery makes every DeclineEvery-th order a card that declines.
	DeclineEvery int `json:"decline_every"`
	// RefundShare is the share of the other orders that are refunded once
	// charged (RefundSeq 1), and OverShare the share of those refunds that
	// ask for more than the charge (the provider must refuse them).
	RefundShare float64 `json:"refund_share"`
	OverShare   float64 `json:"over_share"`
}

// job is one order of the work list: its charge and, maybe, its refund.
type job struct {
	Index    int
	Order    string
	Amount   int64
	Decline  bool
	ChargeID string
	// Refund is set for orders refunded once their charge succeeded.
	Refund       bool
	RefundAmount int64
	// RefundOver: RefundAmount is above Amount, so the provider refuses it.
	RefundOver bool
	RefundID   string
	// RefundSkipped is set by the driver when a worker printed
	// markerRefundSkipped for RefundID: the refund was never asked for.
	RefundSkipped bool
}

const currency = "USD"

// jobs returns the work list, in order.
func (w workConfig) jobs() ([]job, error) {
	out := make([]job, w.Orders)
	for i := range out {
		// One generator per order: the list does not depend on the order in
		// which it is generated.
		rng := rand.New(rand.NewPCG(uint64(w.Seed), uint64(i)))
		j := job{
			Index:  i,
			Order:  fmt.Sprintf("crash-%d-%06d", w.Seed, i),
			Amount: 500 + rng.Int64N(99_500),
		}
		j.Decline = w.DeclineEvery > 0 && i%w.DeclineEvery == w.DeclineEvery/2
		if !j.Decline && rng.Float64() < w.RefundShare {
			j.Refund = true
			if rng.Float64() < w.OverShare {
				j.RefundOver = true
				j.RefundAmount = j.Amount + 1 + rng.Int64N(500)
			} else {
				j.RefundAmount = max(1, j.Amount*(10+rng.Int64N(81))/100)
			}
		}
		var err error
		if j.ChargeID, err = providerOpID(w.Provider, payonce.KindCharge, j.Order); err != nil {
			return nil, err
		}
		if j.RefundID, err = providerOpID(w.Provider, payonce.KindRefund, j.Order, "1"); err != nil {
			return nil, err
		}
		out[i] = j
	}
	return out, nil
}

// share returns the jobs of worker index.
func (w workConfig) share(all []job, index int) []job {
	var out []job
	for _, j := range all {
		if j.Index%w.Workers == index {
			out = append(out, j)
		}
	}
	return out
}

// opID is the id of a Stripe operation (the crash tests' and the
// regression tests' provider).
func opID(kind payonce.Kind, refs ...string) (string, error) {
	return providerOpID("stripe", kind, refs...)
}

// providerOpID is the id of an operation of provider ("" is stripe).
func providerOpID(provider string, kind payonce.Kind, refs ...string) (string, error) {
	return payonce.Identity{Provider: cmp.Or(provider, "stripe"), Kind: kind, References: refs}.OperationID()
}

// charge is the job's charge with Stripe's test cards.
func (j job) charge() payonce.ChargeParams { return j.chargeWith(stripeCrash()) }

// chargeWith is the job's charge with p's payment methods.
func (j job) chargeWith(p crashProvider) payonce.ChargeParams {
	pm := p.good
	if j.Decline {
		pm = p.declined
	}
	return payonce.ChargeParams{OrderID: j.Order, Amount: j.Amount, Currency: currency, PaymentMethod: pm,
		Description: "crashsuite order " + j.Order}
}

func (j job) refund() payonce.RefundParams {
	return payonce.RefundParams{OrderID: j.Order, RefundSeq: 1, Amount: j.RefundAmount, Currency: currency}
}

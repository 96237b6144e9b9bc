package providertest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// The checks of a ledger against what a fake provider really did, shared
// by the soak and the root package's proof that reconcilers in separate
// processes settle a backlog once.

// Expected is what a test knows about one operation it recorded.
type Expected struct {
	Kind   payonce.Kind
	Order  string
	Amount int64
	// Decline marks a charge made with a payment method the provider
	// declines.
	Decline bool
}

// Check is what CheckLedger compares.
type Check struct {
	// Store is the ledger. It holds exactly the operations of Expect.
	Store ledger.Store
	// Truth is what the fake did.
	Truth mocks.Truth
	// Expect is every operation the test recorded, by operation id. Each
	// order is charged once and refunded at most as often as Expect says.
	Expect map[string]Expected
	// Margin is rule 5's: every attempt that may have reached the provider
	// started more than Margin before its key expired.
	Margin time.Duration
	// PaymentOperation and RefundOperation are Env's; nil takes Env's
	// defaults (metadata payonce_op, then Reference, then the refund's
	// description).
	PaymentOperation func(mocks.TruthPayment) string
	RefundOperation  func(mocks.TruthRefund) string
	// NoLookupWithoutRef is Env.RepeatIsLookup: the adapter's lookup
	// cannot find an object whose id was never recorded (PayPal's orders),
	// so a charge whose same-key repeats all failed until its key window
	// passed stays in review with its payment made: the rule ("outside the
	// window, review, never a new POST"), not a lost payment. Such a
	// payment is accepted when its operation is in review with code
	// window_passed and recorded no reference; an operator resolves it.
	NoLookupWithoutRef bool
}

// Checked is one operation as CheckLedger read it.
type Checked struct {
	Op       ledger.Operation
	Attempts []ledger.Attempt
	Expected Expected
}

// CheckLedger checks the ledger against the fake's truth and returns what
// it read, for a caller's further checks:
//
//   - no money moved twice: no operation charged or refunded twice, no
//     payment refunded beyond what it captured or more often than its
//     order's refunds;
//   - money moved only for an operation the ledger says succeeded with
//     that very payment or refund;
//   - one ledger row per expected operation, each terminal, a succeeded
//     one with its provider reference, one in review with a reason;
//   - a succeeded charge names an authorized payment of its operation and
//     amount, and was no decline; a failed charge was a decline and has
//     no authorized payment;
//   - a succeeded refund names its refund, of its order's charge and its
//     amount; a failed refund has no refund object at the provider;
//   - one key per operation, and every attempt that may have reached the
//     provider started inside its key window, Margin to spare (rule 5).
func CheckLedger(t *testing.T, ctx context.Context, c Check) []Checked {
	t.Helper()
	if c.PaymentOperation == nil {
		c.PaymentOperation = defaultPaymentOperation
	}
	if c.RefundOperation == nil {
		c.RefundOperation = defaultRefundOperation
	}
	truth := c.Truth
	require.Empty(t, moneyProblems(c.PaymentOperation, c.RefundOperation, truth), "money moved more than once")

	ops, err := c.Store.List(ctx, ledger.ListFilter{Limit: 10000})
	require.NoError(t, err)
	require.Len(t, ops, len(c.Expect), "one ledger row per operation")
	byID := make(map[string]ledger.Operation, len(ops))
	for _, op := range ops {
		byID[op.ID] = op
	}
	refundsPerOrder := map[string]int{}
	for _, e := range c.Expect {
		if e.Kind == payonce.KindRefund {
			refundsPerOrder[e.Order]++
		}
	}
	refundsOfPayment := map[string]int{}
	refundOf := map[string]mocks.TruthRefund{}
	for _, r := range truth.Refunds {
		refundsOfPayment[r.PaymentID]++
		refundOf[c.RefundOperation(r)] = r
		if r.Status != "succeeded" {
			continue
		}
		op, ok := byID[c.RefundOperation(r)]
		require.True(t, ok, "refund %s belongs to no operation", r.ID)
		require.Equal(t, ledger.StatusSucceeded, op.Status, "refund %s made, but its operation is %s (%s)", r.ID, op.Status, op.ReviewReason)
		require.Equal(t, r.ID, op.ProviderRef)
	}
	for _, p := range truth.Payments {
		order := c.Expect[c.PaymentOperation(p)].Order
		require.LessOrEqual(t, refundsOfPayment[p.ID], refundsPerOrder[order], "payment %s refunded more often than its order", p.ID)
		if !p.Authorized {
			continue
		}
		op, ok := byID[c.PaymentOperation(p)]
		require.True(t, ok, "payment %s belongs to no operation", p.ID)
		if c.NoLookupWithoutRef && op.Status == ledger.StatusManualReview && op.ReviewCode == ledger.ReviewCodeWindowPassed && op.ProviderRef == "" {
			continue // nothing could find it: review is the rule (NoLookupWithoutRef)
		}
		require.Equal(t, ledger.StatusSucceeded, op.Status, "payment %s authorized, but its operation is %s (%s)", p.ID, op.Status, op.ReviewReason)
		require.Equal(t, p.ID, op.ProviderRef)
	}
	chargeRef := map[string]string{} // order -> payment id
	for id, e := range c.Expect {
		if e.Kind == payonce.KindCharge && byID[id].Status == ledger.StatusSucceeded {
			chargeRef[e.Order] = byID[id].ProviderRef
		}
	}

	out := make([]Checked, 0, len(ops))
	var pastWindow []string
	for id, e := range c.Expect {
		op, ok := byID[id]
		require.True(t, ok, "operation %s (%s %s) not in the ledger", id, e.Kind, e.Order)
		_, atts, err := c.Store.Get(ctx, id)
		require.NoError(t, err)
		require.True(t, op.Status.Terminal(), "operation %s is %s: %s", id, op.Status, Describe(op, atts))
		switch op.Status {
		case ledger.StatusSucceeded:
			require.NotEmpty(t, op.ProviderRef, "operation %s succeeded without a provider reference", id)
		case ledger.StatusManualReview:
			require.NotEmpty(t, op.ReviewReason, "operation %s in review without a reason", id)
		}
		switch e.Kind {
		case payonce.KindCharge:
			checkCharge(t, c, op, e)
		case payonce.KindRefund:
			r, made := refundOf[id]
			switch op.Status {
			case ledger.StatusSucceeded:
				require.True(t, made, "refund %s: the fake holds no refund for it", e.Order)
				require.Equal(t, op.ProviderRef, r.ID)
				require.Equal(t, chargeRef[e.Order], r.PaymentID, "refund %s is of its order's charge", e.Order)
				require.Equal(t, e.Amount, r.Amount)
			case ledger.StatusFailed:
				require.False(t, made, "failed refund %s exists at the provider", e.Order)
			}
		}
		require.Len(t, atts, op.Attempts)
		for _, a := range atts {
			require.Equal(t, op.Key, a.Key, "one key per operation")
			if !a.MayHaveReached {
				continue
			}
			require.False(t, a.StartedAt.Before(op.WindowStart), "attempt %d of %s started before its window", a.Number, op.ID)
			if !a.StartedAt.Before(op.KeyExpiresAt.Add(-c.Margin)) {
				pastWindow = append(pastWindow, fmt.Sprintf("attempt %d: %s", a.Number, Describe(op, atts)))
			}
		}
		out = append(out, Checked{Op: op, Attempts: atts, Expected: e})
	}
	require.Empty(t, pastWindow, "rule 5: attempts that may still have been in flight when the provider forgot the key")
	return out
}

// checkCharge checks a charge's ledger row against its payment.
func checkCharge(t *testing.T, c Check, op ledger.Operation, e Expected) {
	t.Helper()
	switch op.Status {
	case ledger.StatusSucceeded:
		require.False(t, e.Decline, "declined order %s succeeded", e.Order)
		p, ok := c.Truth.Payment(op.ProviderRef)
		require.True(t, ok, "charge %s: ledger ref %s is no payment", e.Order, op.ProviderRef)
		require.Equal(t, op.ID, c.PaymentOperation(p))
		require.True(t, p.Authorized)
		require.Equal(t, e.Amount, p.AmountCaptured)
	case ledger.StatusFailed:
		require.True(t, e.Decline, "charge %s failed but was not a decline: %s", e.Order, op.Result)
		for _, p := range c.Truth.Payments {
			require.False(t, p.Authorized && c.PaymentOperation(p) == op.ID, "failed charge %s has an authorized payment", e.Order)
		}
	}
}

// Describe renders an operation and its attempts for failure messages.
func Describe(op ledger.Operation, atts []ledger.Attempt) string {
	var s strings.Builder
	fmt.Fprintf(&s, "operation %s %s %v: %s, window %s..%s, ref %q, review %q", op.ID, op.Kind, op.References, op.Status,
		op.WindowStart.Format(time.RFC3339), op.KeyExpiresAt.Format(time.RFC3339), op.ProviderRef, op.ReviewReason)
	for _, a := range atts {
		fmt.Fprintf(&s, "\n  attempt %d at %s: %s http %d may_have_reached=%v %s", a.Number, a.StartedAt.Format(time.RFC3339),
			a.Outcome, a.HTTPStatus, a.MayHaveReached, a.Error)
	}
	return s.String()
}

// moneyProblems lists what the fake's truth shows moved money twice: an
// operation with two authorized payments or two refunds, a payment refunded
// beyond what it captured.
func moneyProblems(paymentOp func(mocks.TruthPayment) string, refundOp func(mocks.TruthRefund) string, truth mocks.Truth) []string {
	var out []string
	charges := map[string][]string{}
	for _, p := range truth.Payments {
		if op := paymentOp(p); op != "" && p.Authorized {
			charges[op] = append(charges[op], p.ID)
		}
	}
	refunds := map[string][]string{}
	refunded := map[string]int64{}
	for _, r := range truth.Refunds {
		if op := refundOp(r); op != "" {
			refunds[op] = append(refunds[op], r.ID)
		}
		if r.Status == "succeeded" {
			refunded[r.PaymentID] += r.Amount
		}
	}
	for op, ids := range charges {
		if len(ids) > 1 {
			out = append(out, fmt.Sprintf("operation %s charged %d times: %v", op, len(ids), ids))
		}
	}
	for op, ids := range refunds {
		if len(ids) > 1 {
			out = append(out, fmt.Sprintf("operation %s refunded %d times: %v", op, len(ids), ids))
		}
	}
	for _, p := range truth.Payments {
		if p.AmountRefunded > p.AmountCaptured || refunded[p.ID] > p.AmountCaptured {
			out = append(out, fmt.Sprintf("payment %s captured %d, refunded %d (refunds add up to %d)", p.ID, p.AmountCaptured, p.AmountRefunded, refunded[p.ID]))
		}
	}
	sort.Strings(out)
	return out
}

package payonce_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// soakFaultRates injects a fault into 20 % of the requests that move money,
// mixed over every fault kind the fake knows.
func soakFaultRates() map[mocks.FaultKind]float64 {
	return map[mocks.FaultKind]float64{
		mocks.FaultDropAfterProcessing: 0.03,
		mocks.FaultHangAfterProcessing: 0.03,
		mocks.FaultGatewayBefore502:    0.03,
		mocks.FaultGatewayAfter502:     0.03,
		mocks.FaultRateLimit429:        0.02,
		mocks.FaultSlow:                0.03,
		mocks.FaultStored500:           0.03,
	}
}

const (
	soakConcurrency = 16
	// soakAttemptTimeout is short, and the fake's hangs are longer.
	soakAttemptTimeout = 300 * time.Millisecond
	soakHangFor        = time.Second
	// soakEarlyRounds settle inside the key windows (clock +2 min each:
	// past leases, the search lag and the check interval); later rounds
	// jump past the key windows, so what is still unknown goes to review.
	soakEarlyRounds = 4
	// soakMaxRounds and soakSettleFor bound the settling.
	soakMaxRounds = 100
	soakSettleFor = 30 * time.Second
)

type soakSize struct{ charges, refunds, declines int }

// soakOp is one operation of the soak and what its latest call said.
type soakOp struct {
	kind    payonce.Kind
	order   string
	amount  int64
	decline bool
	id      string
	res     payonce.Result
	err     error
	calls   int
}

// TestSoak charges and refunds through a fake Stripe that fails a fifth of
// the requests in every way it knows, then settles every operation the way
// a caller without the background reconciler does (calling again with the
// same identity as the clock moves), and checks that no reference was
// charged twice, no refund exceeds its charge, and every operation ended
// succeeded, failed or in manual review in agreement with the provider.
func TestSoak(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		size := soakSize{charges: 2000, refunds: 500, declines: 20}
		if testing.Short() {
			size = soakSize{charges: 400, refunds: 100, declines: 8}
		}
		runSoak(t, true, size)
	})
	t.Run("sqlite", func(t *testing.T) {
		size := soakSize{charges: 300, refunds: 100, declines: 6}
		if testing.Short() {
			size = soakSize{charges: 150, refunds: 50, declines: 4}
		}
		runSoak(t, false, size)
	})
}

func runSoak(t *testing.T, pg bool, size soakSize) {
	start := time.Now()
	b := setup(t, setupOpts{
		postgres: pg,
		fake: mocks.StripeOptions{
			Seed:       7,
			SearchLag:  10 * time.Second,
			HangFor:    soakHangFor,
			SlowFor:    100 * time.Millisecond,
			FaultRates: soakFaultRates(),
		},
		config: func(c *payonce.Config) {
			c.AttemptTimeout = soakAttemptTimeout
			c.Retry = payonce.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
			// A breaker that opens on a run of faults and recovers within
			// the test's time (gobreaker runs on the real clock).
			c.Breaker = payonce.BreakerSettings{ConsecutiveFailures: 8, OpenFor: 50 * time.Millisecond}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Phase 1: every charge once; a worker whose charge succeeded refunds
	// it at once until the refund quota is reached, so charges and refunds
	// run side by side.
	charges := make([]*soakOp, size.charges)
	every := size.charges / size.declines
	for i := range charges {
		op := &soakOp{kind: payonce.KindCharge, order: fmt.Sprintf("soak-%05d", i), amount: int64(1000 + i), decline: i%every == every/2}
		id, err := soakOpID(op)
		require.NoError(t, err)
		op.id = id
		charges[i] = op
	}
	var (
		mu       sync.Mutex
		refunds  []*soakOp
		reserved atomic.Int64
	)
	soakRun(ctx, charges, func(op *soakOp) {
		soakCall(ctx, b.client, op)
		if op.res.Status != payonce.ResultSucceeded || reserved.Add(1) > int64(size.refunds) {
			return
		}
		r := &soakOp{kind: payonce.KindRefund, order: op.order, amount: op.amount}
		r.id, r.err = soakOpID(r)
		mu.Lock()
		refunds = append(refunds, r)
		mu.Unlock()
		if r.err == nil {
			soakCall(ctx, b.client, r)
		}
	})
	require.Len(t, refunds, size.refunds, "enough charges succeeded at once to refund")
	all := append(append([]*soakOp(nil), charges...), refunds...)
	firstCall := soakCount(all)

	// Phase 2: settle. Call again with the same identity whatever is not
	// yet terminal, moving the shared clock between rounds. The breaker
	// runs on the real clock: once only a few operations are left, a round
	// takes less than the breaker stays open, so late rounds pause briefly.
	rounds := 0
	deadline := time.Now().Add(soakSettleFor)
	for {
		open := soakOpen(all)
		if len(open) == 0 {
			break
		}
		if rounds >= soakMaxRounds || time.Now().After(deadline) {
			msg := soakDescribe(open, 5)
			for _, o := range open[:min(3, len(open))] {
				if op, atts, err := b.store.Get(ctx, o.id); err == nil {
					msg += "\n" + soakAttempts(op, atts)
				}
			}
			require.FailNow(t, fmt.Sprintf("still open after %d rounds", rounds), msg)
		}
		rounds++
		if rounds <= soakEarlyRounds {
			b.clock.Advance(2 * time.Minute)
		} else {
			b.clock.Advance(25 * time.Hour)
			time.Sleep(10 * time.Millisecond)
		}
		soakRun(ctx, open, func(op *soakOp) { soakCall(ctx, b.client, op) })
	}
	var unexpected []*soakOp
	for _, op := range all {
		if op.err != nil && !errors.Is(op.err, payonce.ErrDeclined) && !errors.Is(op.err, payonce.ErrManualReview) {
			unexpected = append(unexpected, op)
		}
	}
	require.Empty(t, unexpected, "calls ended with unexpected errors: %s", soakDescribe(unexpected, 10))

	// The ledger.
	ops, err := b.store.List(ctx, ledger.ListFilter{Limit: 10000})
	require.NoError(t, err)
	require.Len(t, ops, len(all), "one ledger row per operation")
	byID := make(map[string]ledger.Operation, len(ops))
	for _, op := range ops {
		byID[op.ID] = op
	}
	// What the fake really did.
	truth := b.fake.Truth()
	require.Empty(t, truth.Duplicates(stripe.MetaOperation), "references charged twice")
	chargesBy := truth.ChargesBy(stripe.MetaOperation)
	for id, n := range chargesBy {
		require.LessOrEqual(t, n, 1, "operation %s charged %d times", id, n)
	}
	refundsBy := truth.RefundsBy(stripe.MetaOperation)
	refundsOf := map[string]int{}
	for _, r := range truth.Refunds {
		refundsOf[r.PaymentID]++
	}
	for _, p := range truth.Payments {
		require.LessOrEqual(t, p.AmountRefunded, p.AmountCaptured, "payment %s refunded beyond its charge", p.ID)
		require.LessOrEqual(t, refundsOf[p.ID], 1, "payment %s refunded more than once (one RefundSeq per order)", p.ID)
		if !p.Authorized {
			continue
		}
		// No money moved for an operation the ledger does not say
		// succeeded with this very payment.
		op, ok := byID[p.Metadata[stripe.MetaOperation]]
		require.True(t, ok, "payment %s belongs to no operation", p.ID)
		require.Equal(t, ledger.StatusSucceeded, op.Status, "payment %s authorized, but its operation is %s (%s)", p.ID, op.Status, op.ReviewReason)
		require.Equal(t, p.ID, op.ProviderRef)
	}
	for _, r := range truth.Refunds {
		if r.Status != "succeeded" {
			continue
		}
		op, ok := byID[r.Metadata[stripe.MetaOperation]]
		require.True(t, ok, "refund %s belongs to no operation", r.ID)
		require.Equal(t, ledger.StatusSucceeded, op.Status, "refund %s made, but its operation is %s (%s)", r.ID, op.Status, op.ReviewReason)
		require.Equal(t, r.ID, op.ProviderRef)
	}

	chargeRef := map[string]string{} // order -> PaymentIntent
	margin := max(time.Minute, stripe.DefaultKeyTTL/100) + soakAttemptTimeout
	var pastWindow []string
	outcomes := map[string]int{} // attempts per outcome class
	for _, o := range all {
		op, ok := byID[o.id]
		require.True(t, ok, "operation %s (%s %s) not in the ledger", o.id, o.kind, o.order)
		require.True(t, op.Status.Terminal(), "operation %s (%s %s) is %s", o.id, o.kind, o.order, op.Status)
		require.Equal(t, string(op.Status), string(o.res.Status), "the last call reported the ledger's status")
		switch op.Status {
		case ledger.StatusSucceeded:
			require.NotEmpty(t, op.ProviderRef)
		case ledger.StatusManualReview:
			require.NotEmpty(t, op.ReviewReason, "operation %s in review without a reason", op.ID)
		}
		switch o.kind {
		case payonce.KindCharge:
			switch op.Status {
			case ledger.StatusSucceeded:
				require.False(t, o.decline, "declined order %s succeeded", o.order)
				p, ok := truth.Payment(op.ProviderRef)
				require.True(t, ok, "charge %s: ledger ref %s is no payment", o.order, op.ProviderRef)
				require.Equal(t, op.ID, p.Metadata[stripe.MetaOperation])
				require.True(t, p.Authorized)
				require.Equal(t, o.amount, p.AmountCaptured)
				chargeRef[o.order] = p.ID
			case ledger.StatusFailed:
				require.True(t, o.decline, "charge %s failed but was not a decline: %s", o.order, op.Result)
				require.Zero(t, chargesBy[op.ID], "failed charge %s has an authorized payment", o.order)
			}
		case payonce.KindRefund:
			require.LessOrEqual(t, refundsBy[op.ID], 1)
			if op.Status == ledger.StatusSucceeded {
				found := false
				for _, r := range truth.Refunds {
					if r.ID == op.ProviderRef {
						found = true
						require.Equal(t, op.ID, r.Metadata[stripe.MetaOperation])
						require.Equal(t, chargeRef[o.order], r.PaymentID, "refund %s is of its order's charge", o.order)
						require.Equal(t, o.amount, r.Amount)
					}
				}
				require.True(t, found, "refund %s: ledger ref %s is no refund", o.order, op.ProviderRef)
			}
		}
		// Rule 5: every attempt that may have reached the provider
		// started inside the key window, with the margin to spare.
		_, atts, err := b.store.Get(ctx, op.ID)
		require.NoError(t, err)
		require.Len(t, atts, op.Attempts)
		for _, a := range atts {
			outcomes[string(a.Outcome)]++
			require.Equal(t, op.Key, a.Key, "one key per operation")
			if !a.MayHaveReached {
				continue
			}
			require.False(t, a.StartedAt.Before(op.WindowStart), "attempt %d of %s started before its window", a.Number, op.ID)
			if !a.StartedAt.Before(op.KeyExpiresAt.Add(-margin)) {
				// Collected rather than fatal, so that the other checks
				// still run: see TestSoakFindingNotSentResendBypassesWindow.
				pastWindow = append(pastWindow, fmt.Sprintf("attempt %d started at %s, key expires %s\n%s",
					a.Number, a.StartedAt.Format(time.RFC3339), op.KeyExpiresAt.Format(time.RFC3339), soakAttempts(op, atts)))
			}
		}
	}
	if len(pastWindow) > 0 {
		t.Errorf("rule 5: %d attempts were sent after their key window had passed (see TestNotSentResendStaysUnknown); first:\n%s",
			len(pastWindow), pastWindow[0])
	}

	final := soakCount(all)
	var faults []string
	total := 0
	for k, n := range truth.Faults {
		faults = append(faults, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(faults)
	posts := truth.Requests["POST /v1/payment_intents"] + truth.Requests["POST /v1/refunds"]
	var classes []string
	for c, n := range outcomes {
		if c == "" {
			c = "unfinished"
		}
		classes = append(classes, fmt.Sprintf("%s=%d", c, n))
	}
	sort.Strings(classes)
	t.Logf("soak %s: %d charges, %d refunds in %s (%d settle rounds); first call %s; final %s; faults %d [%s]; attempts [%s]; POSTs %d, replays %d, key in use %d; duplicates %d; attempts past their key window %d",
		map[bool]string{true: "postgres", false: "sqlite"}[pg], size.charges, size.refunds, time.Since(start).Round(time.Millisecond), rounds,
		firstCall, final, total, strings.Join(faults, " "), strings.Join(classes, " "), posts, truth.Replays, truth.KeyInUse, len(truth.Duplicates(stripe.MetaOperation)), len(pastWindow))
}

func soakOpID(op *soakOp) (string, error) {
	refs := []string{op.order}
	if op.kind == payonce.KindRefund {
		refs = append(refs, "1")
	}
	return payonce.Identity{Provider: "stripe", Kind: op.kind, References: refs}.OperationID()
}

// soakCall makes one call for op with its identity and records the answer.
func soakCall(ctx context.Context, c *payonce.Client, op *soakOp) {
	op.calls++
	switch op.kind {
	case payonce.KindCharge:
		p := charge(op.order, op.amount)
		if op.decline {
			p.PaymentMethod = "pm_card_chargeDeclined"
		}
		op.res, op.err = c.Charge(ctx, p)
	case payonce.KindRefund:
		op.res, op.err = c.Refund(ctx, payonce.RefundParams{OrderID: op.order, RefundSeq: 1, Amount: op.amount, Currency: "USD"})
	}
}

// soakRun runs fn on every op with soakConcurrency workers.
func soakRun(ctx context.Context, ops []*soakOp, fn func(*soakOp)) {
	jobs := make(chan *soakOp)
	var wg sync.WaitGroup
	for range soakConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range jobs {
				fn(op)
			}
		}()
	}
	for _, op := range ops {
		if ctx.Err() != nil {
			break
		}
		jobs <- op
	}
	close(jobs)
	wg.Wait()
}

// soakOpen returns the operations whose last call left them unsettled, or
// ended with an error that is not an answer.
func soakOpen(ops []*soakOp) []*soakOp {
	var open []*soakOp
	for _, op := range ops {
		switch op.res.Status {
		case payonce.ResultSucceeded, payonce.ResultFailed, payonce.ResultManualReview:
		default:
			open = append(open, op)
		}
	}
	return open
}

// soakCount renders the statuses of ops per kind, e.g.
// "charge{succeeded=1790 unknown=120} refund{...}".
func soakCount(ops []*soakOp) string {
	counts := map[payonce.Kind]map[payonce.ResultStatus]int{}
	for _, op := range ops {
		if counts[op.kind] == nil {
			counts[op.kind] = map[payonce.ResultStatus]int{}
		}
		counts[op.kind][op.res.Status]++
	}
	var parts []string
	for _, k := range []payonce.Kind{payonce.KindCharge, payonce.KindRefund} {
		var s []string
		for st, n := range counts[k] {
			name := string(st)
			if name == "" {
				name = "none"
			}
			s = append(s, name+"="+strconv.Itoa(n))
		}
		sort.Strings(s)
		parts = append(parts, string(k)+"{"+strings.Join(s, " ")+"}")
	}
	return strings.Join(parts, " ")
}

func soakDescribe(ops []*soakOp, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d operations", len(ops))
	for i, op := range ops {
		if i == n {
			b.WriteString("\n  ...")
			break
		}
		fmt.Fprintf(&b, "\n  %s %s (%s): status %q after %d calls, error %v", op.kind, op.order, op.id, op.res.Status, op.calls, op.err)
	}
	return b.String()
}

// soakAttempts renders an operation and its attempts for a failure message.
func soakAttempts(op ledger.Operation, atts []ledger.Attempt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "operation %s %s %v: %s, window %s..%s, ref %q, review %q", op.ID, op.Kind, op.References, op.Status,
		op.WindowStart.Format(time.RFC3339), op.KeyExpiresAt.Format(time.RFC3339), op.ProviderRef, op.ReviewReason)
	for _, a := range atts {
		fmt.Fprintf(&b, "\n  attempt %d at %s: %s http %d may_have_reached=%v %s", a.Number, a.StartedAt.Format(time.RFC3339), a.Outcome, a.HTTPStatus, a.MayHaveReached, a.Error)
	}
	return b.String()
}

// TestNotSentResendStaysUnknown is the regression test of a defect the soak
// found: an operation that is unknown (an earlier attempt may have reached
// the provider) is resent after a lookup, the resend is refused before
// processing (429, breaker open, connection refused: not_sent), and the
// operation was recorded as pending. A pending operation is "safe to send at
// any time", so the next call sent it with no lookup and no key-window check,
// even a day later, when the provider had forgotten the key: a second charge.
// Unknown never returns to pending.
func TestNotSentResendStaysUnknown(t *testing.T) {
	t.Parallel()
	// A 429 asking for 1 s ends the call at once (MaxRetryAfter 1 ms): the
	// operation is left to the next call as the resend's outcome made it.
	shortRetryAfter := func(c *payonce.Config) { c.Retry.MaxRetryAfter = time.Millisecond }

	t.Run("post after the key window", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{config: shortRetryAfter})
		b.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultStored500, mocks.FaultRateLimit429)
		p := charge("order-window", 1500)
		id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{p.OrderID}}.OperationID()
		require.NoError(t, err)

		_, err = b.client.Charge(b.ctx, p) // 500: maybe sent
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		b.clock.Advance(2 * time.Minute)
		_, err = b.client.Charge(b.ctx, p) // lookup: not found; resend: 429
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		op, _, err := b.store.Get(b.ctx, id)
		require.NoError(t, err)
		require.Equal(t, t0, op.WindowStart, "attempt 1 may have reached Stripe: the window stays open")
		require.Equal(t, ledger.StatusUnknown, op.Status,
			"an operation whose first attempt may have reached the provider never goes back to pending")

		b.clock.Advance(25 * time.Hour) // past Stripe's 24 h key memory
		posts := b.fake.Truth().Requests["POST /v1/payment_intents"]
		res, err := b.client.Charge(b.ctx, p)
		require.Equal(t, posts, b.fake.Truth().Requests["POST /v1/payment_intents"], "rule 5: no POST outside the key window")
		require.ErrorIs(t, err, payonce.ErrManualReview)
		require.Equal(t, payonce.ReasonWindowPassed, res.ReviewReason)
	})

	t.Run("double charge", func(t *testing.T) {
		t.Parallel()
		// Stripe's search runs behind by more than the adapter's default
		// one minute, as Stripe says it may during incidents.
		b := setup(t, setupOpts{config: shortRetryAfter, fake: mocks.StripeOptions{SearchLag: 30 * time.Minute}})
		b.fake.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing, mocks.FaultRateLimit429)
		p := charge("order-twice", 2500)
		id, err := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{p.OrderID}}.OperationID()
		require.NoError(t, err)

		_, err = b.client.Charge(b.ctx, p) // charged; the answer is lost
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		require.Equal(t, 1, b.chargesOf(t, id))
		b.clock.Advance(2 * time.Minute)
		_, err = b.client.Charge(b.ctx, p) // search: not yet; resend (same key, safe): 429
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)

		b.clock.Advance(25 * time.Hour)
		res, err := b.client.Charge(b.ctx, p)
		// A lookup (search has long caught up) finds the first
		// PaymentIntent; a POST with the forgotten key would charge again.
		require.Equal(t, 1, b.chargesOf(t, id), "order charged twice; Stripe holds %v", b.fake.Truth().Payments)
		require.NoError(t, err)
		require.Equal(t, b.fake.Truth().Payments[0].ID, res.ProviderRef)
	})
}

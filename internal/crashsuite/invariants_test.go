package crashsuite

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// ledgerView is the whole ledger: every operation with its attempts.
type ledgerView struct {
	ops  map[string]ledger.Operation
	atts map[string][]ledger.Attempt
}

func readLedger(ctx context.Context, store ledger.Store) (ledgerView, error) {
	v := ledgerView{ops: map[string]ledger.Operation{}, atts: map[string][]ledger.Attempt{}}
	var ids []string
	after := ""
	for {
		var ops []ledger.Operation
		// The driver's connections may predate the database restart.
		err := retry(ctx, 30*time.Second, func() (err error) {
			ops, err = store.List(ctx, ledger.ListFilter{AfterID: after, Limit: ledger.MaxLimit})
			return err
		})
		if err != nil {
			return v, err
		}
		for _, op := range ops {
			v.ops[op.ID] = op
			ids = append(ids, op.ID)
		}
		if len(ops) < ledger.MaxLimit {
			break
		}
		after = ops[len(ops)-1].ID
	}
	var mu sync.Mutex
	var firstErr error
	ch := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ch {
				var op ledger.Operation
				var atts []ledger.Attempt
				err := retry(ctx, 30*time.Second, func() (err error) {
					op, atts, err = store.Get(ctx, id)
					return err
				})
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				v.ops[id], v.atts[id] = op, atts
				mu.Unlock()
			}
		}()
	}
	for _, id := range ids {
		ch <- id
	}
	close(ch)
	wg.Wait()
	return v, firstErr
}

// violations collects broken invariants by kind, so that every check runs
// and the report names each kind once with examples.
type violations struct {
	byKind map[string][]string
	order  []string
}

func (v *violations) add(kind, format string, args ...any) {
	if v.byKind == nil {
		v.byKind = map[string][]string{}
	}
	if _, ok := v.byKind[kind]; !ok {
		v.order = append(v.order, kind)
	}
	v.byKind[kind] = append(v.byKind[kind], fmt.Sprintf(format, args...))
}

func (v *violations) report(t *testing.T) {
	t.Helper()
	for _, k := range v.order {
		ex := v.byKind[k]
		t.Errorf("INVARIANT BROKEN: %s: %d cases; first:\n  %s", k, len(ex), strings.Join(ex[:min(5, len(ex))], "\n  "))
	}
}

// summary is what the final line reports.
type summary struct {
	ops, charges, refunds int
	status                map[ledger.Status]int
	attempts, unfinished  int
	outcomes              map[string]int
	faults                map[string]int
	faultTotal            int
	duplicates            int
	refundsOverCharge     int
	overRefused           int
	reviews               map[string]int // current reviews per reason
	settledFromReview     int
	requests, replays     int
	keyInUse              int
	broken                int
	// maxAttempts is the most attempts one operation made, maxAttemptsOp
	// names it (the lowest id among those), attemptsPerOp counts the
	// operations per bucket of attempts made (see attemptBucket).
	maxAttempts   int
	maxAttemptsOp string
	attemptsPerOp map[string]int
}

// maxAttemptsPerOp bounds the attempts one operation may make in a run: a
// resend loop that does not stop (a replayed stored error resent again and
// again, resends without growing intervals) breaks it. Generous: a handful
// of attempts per call, a few calls (kills, restarts, the outage) and the
// reconcilers' resends inside the 18 s window.
const maxAttemptsPerOp = 12

// attemptBucket names the range of attempts n falls in.
func attemptBucket(n int) string {
	switch {
	case n <= 0:
		return "0"
	case n <= 2:
		return fmt.Sprint(n)
	case n <= 5:
		return "3-5"
	}
	return "6+"
}

// addAttempts counts op's attempts in the maximum and the distribution.
func (s *summary) addAttempts(op ledger.Operation) {
	if s.attemptsPerOp == nil {
		s.attemptsPerOp = map[string]int{}
	}
	s.attemptsPerOp[attemptBucket(op.Attempts)]++
	name := fmt.Sprintf("%s %s %s", op.Kind, strings.Join(op.References, "/"), op.ID)
	if s.maxAttemptsOp == "" || op.Attempts > s.maxAttempts || op.Attempts == s.maxAttempts && name < s.maxAttemptsOp {
		s.maxAttempts, s.maxAttemptsOp = op.Attempts, name
	}
}

// reviewReasonWindow lists the reasons that are only legal once the key
// window has passed.
var reviewReasonWindow = map[string]bool{
	payonce.ReasonWindowPassed: true,
	payonce.ReasonProcessing:   true,
}

// reviewReasonShort names review reasons in the summary.
func reviewReasonShort(r string) string {
	switch r {
	case payonce.ReasonWindowPassed:
		return "window_passed"
	case payonce.ReasonDuplicated:
		return "duplicated"
	case payonce.ReasonProcessing:
		return "processing"
	case payonce.ReasonKeyMismatch:
		return "key_mismatch"
	case payonce.ReasonContradicted:
		return "contradicted"
	}
	return strings.ReplaceAll(r, " ", "_")
}

// check verifies the invariants against the fake's truth and the ledger,
// reports every broken one as a test error, and returns the summary.
func check(t *testing.T, jobs []job, truth mocks.Truth, v ledgerView) summary {
	t.Helper()
	var bad violations
	s := summary{status: map[ledger.Status]int{}, outcomes: map[string]int{}, faults: map[string]int{}, reviews: map[string]int{}}
	for k, n := range truth.Faults {
		s.faults[k.String()] = n
		s.faultTotal += n
	}
	for route, n := range truth.Requests {
		if route != "unknown" {
			s.requests += n
		}
	}
	s.replays, s.keyInUse = truth.Replays, truth.KeyInUse

	// What the provider holds, per operation and per PaymentIntent.
	pis := map[string]mocks.TruthPayment{}
	pisOf := map[string][]mocks.TruthPayment{}
	refundsOf := map[string][]mocks.TruthRefund{}   // by operation
	refundsOfPI := map[string][]mocks.TruthRefund{} // by PaymentIntent
	for _, p := range truth.Payments {
		pis[p.ID] = p
		if id := p.Metadata[stripe.MetaOperation]; id != "" {
			pisOf[id] = append(pisOf[id], p)
		} else {
			bad.add("object without operation", "PaymentIntent %s has no %s metadata", p.ID, stripe.MetaOperation)
		}
	}
	for _, r := range truth.Refunds {
		refundsOfPI[r.PaymentID] = append(refundsOfPI[r.PaymentID], r)
		if id := r.Metadata[stripe.MetaOperation]; id != "" {
			refundsOf[id] = append(refundsOf[id], r)
		} else {
			bad.add("object without operation", "refund %s has no %s metadata", r.ID, stripe.MetaOperation)
		}
	}

	// 1. No reference charged twice; at most one object per operation.
	dups := truth.Duplicates(stripe.MetaOperation)
	s.duplicates = len(dups)
	for _, id := range dups {
		bad.add("reference charged twice", "operation %s: %d authorized PaymentIntents", id, truth.ChargesBy(stripe.MetaOperation)[id])
	}
	for id, ps := range pisOf {
		if len(ps) > 1 {
			bad.add("more than one PaymentIntent per operation", "operation %s: %d PaymentIntents (%s, %s, ...)", id, len(ps), ps[0].ID, ps[1].ID)
		}
	}
	for id, rs := range refundsOf {
		if len(rs) > 1 {
			bad.add("more than one refund per operation", "operation %s: %d refunds", id, len(rs))
		}
	}
	// 2. No refund beyond its charge.
	for _, p := range truth.Payments {
		var sum int64
		for _, r := range refundsOfPI[p.ID] {
			if r.Status == "succeeded" {
				sum += r.Amount
			}
		}
		if p.AmountRefunded > p.AmountCaptured || sum > p.AmountCaptured {
			s.refundsOverCharge++
			bad.add("refund beyond its charge", "PaymentIntent %s: captured %d, refunded %d (refund objects: %d)", p.ID, p.AmountCaptured, p.AmountRefunded, sum)
		}
	}
	if truth.KeyMismatch > 0 {
		bad.add("key reused with other parameters", "the fake refused %d requests whose key it holds with other parameters", truth.KeyMismatch)
	}

	// 3. The work list is in the ledger.
	byCharge := map[string]job{}
	byRefund := map[string]job{}
	for _, j := range jobs {
		byCharge[j.ChargeID], byRefund[j.RefundID] = j, j
		if _, ok := v.ops[j.ChargeID]; !ok {
			bad.add("charge missing from the ledger", "order %s (%s)", j.Order, j.ChargeID)
		}
		op, ok := v.ops[j.RefundID]
		charge := v.ops[j.ChargeID]
		switch {
		case ok && !j.Refund:
			bad.add("refund not in the work list", "order %s has refund %s", j.Order, op.ID)
		case ok && charge.Status != ledger.StatusSucceeded:
			bad.add("refund of a charge that did not succeed", "order %s: refund %s is %s, charge %s", j.Order, op.ID, op.Status, charge.Status)
		case !ok && j.Refund && charge.Status == ledger.StatusSucceeded && charge.ReviewAt.IsZero():
			bad.add("refund missing from the ledger", "order %s: charge %s succeeded, refund %s not recorded", j.Order, charge.ID, j.RefundID)
		}
	}

	// 4. Every operation is terminal and agrees with the provider.
	for id, op := range v.ops {
		s.ops++
		s.status[op.Status]++
		s.attempts += op.Attempts
		s.addAttempts(op)
		if op.Attempts > maxAttemptsPerOp {
			bad.add(fmt.Sprintf("more than %d attempts for one operation", maxAttemptsPerOp), "%d attempts: %s", op.Attempts, describeOp(op, v.atts[id]))
		}
		j, isCharge := byCharge[id]
		jr, isRefund := byRefund[id]
		switch {
		case isCharge:
			s.charges++
		case isRefund:
			s.refunds++
			j = jr
		default:
			bad.add("operation not in the work list", "%s %s %v", op.ID, op.Kind, op.References)
			continue
		}
		if !op.Status.Terminal() {
			bad.add("operation not terminal", "%s", describeOp(op, v.atts[id]))
		}
		if op.Resolution != nil && op.Resolution.Actor == "payonce-reconciler" {
			s.settledFromReview++
		}
		if op.Status == ledger.StatusManualReview {
			s.reviews[reviewReasonShort(op.ReviewReason)]++
		}
		ps, rs := pisOf[id], refundsOf[id]
		if isCharge {
			authorized := 0
			for _, p := range ps {
				if p.Authorized {
					authorized++
				}
			}
			switch op.Status {
			case ledger.StatusSucceeded:
				p, ok := pis[op.ProviderRef]
				switch {
				case j.Decline:
					bad.add("declined card charged", "%s", describeOp(op, v.atts[id]))
				case !ok:
					bad.add("succeeded charge without its PaymentIntent", "ref %q: %s", op.ProviderRef, describeOp(op, v.atts[id]))
				case p.Metadata[stripe.MetaOperation] != id || !p.Authorized || p.AmountCaptured != j.Amount:
					bad.add("succeeded charge disagrees with its PaymentIntent", "%+v\n%s", p, describeOp(op, v.atts[id]))
				}
			case ledger.StatusFailed:
				if authorized > 0 {
					bad.add("failed charge has money moved", "%s", describeOp(op, v.atts[id]))
				}
				if !j.Decline {
					bad.add("charge failed without a decline", "%s result %s", describeOp(op, v.atts[id]), op.Result)
				}
			}
			for _, p := range ps {
				if p.Authorized && !(op.Status == ledger.StatusSucceeded && op.ProviderRef == p.ID) && op.Status != ledger.StatusManualReview {
					bad.add("money moved, ledger disagrees", "PaymentIntent %s authorized; %s", p.ID, describeOp(op, v.atts[id]))
				}
				if !p.Authorized && op.Status == ledger.StatusSucceeded {
					bad.add("ledger succeeded, PaymentIntent not authorized", "PaymentIntent %s; %s", p.ID, describeOp(op, v.atts[id]))
				}
			}
		} else {
			charge := v.ops[j.ChargeID]
			switch op.Status {
			case ledger.StatusSucceeded:
				var r *mocks.TruthRefund
				for i := range rs {
					if rs[i].ID == op.ProviderRef {
						r = &rs[i]
					}
				}
				switch {
				case j.RefundOver:
					bad.add("refund over the charge succeeded", "%s", describeOp(op, v.atts[id]))
				case r == nil:
					bad.add("succeeded refund without its refund object", "ref %q: %s", op.ProviderRef, describeOp(op, v.atts[id]))
				case r.Status != "succeeded" || r.Amount != j.RefundAmount || r.PaymentID != charge.ProviderRef:
					bad.add("succeeded refund disagrees with its refund object", "%+v charge %s\n%s", *r, charge.ProviderRef, describeOp(op, v.atts[id]))
				}
			case ledger.StatusFailed:
				if len(rs) > 0 {
					bad.add("failed refund has a refund object", "%s", describeOp(op, v.atts[id]))
				}
				if j.RefundOver {
					s.overRefused++
				} else {
					bad.add("partial refund failed", "%s result %s", describeOp(op, v.atts[id]), op.Result)
				}
			}
			for _, r := range rs {
				if !(op.Status == ledger.StatusSucceeded && op.ProviderRef == r.ID) && op.Status != ledger.StatusManualReview {
					bad.add("money moved, ledger disagrees", "refund %s; %s", r.ID, describeOp(op, v.atts[id]))
				}
			}
		}

		// 5. Review only when the key window has passed with the outcome
		// unknown, or for a reason that says why.
		if op.ReviewReason != "" || op.Status == ledger.StatusManualReview {
			switch {
			case op.ReviewAt.IsZero():
				bad.add("review without a time", "%s", describeOp(op, v.atts[id]))
			case reviewReasonWindow[op.ReviewReason]:
				if op.WindowStart.IsZero() || op.ReviewAt.Before(op.KeyExpiresAt.Add(-safetyMargin)) {
					bad.add("review while the key window was open", "%s", describeOp(op, v.atts[id]))
				}
			case op.ReviewReason == payonce.ReasonDuplicated || op.ReviewReason == payonce.ReasonKeyMismatch || op.ReviewReason == payonce.ReasonContradicted:
				// Legal at any time; reported separately in the summary.
				bad.add("review: "+reviewReasonShort(op.ReviewReason), "%s", describeOp(op, v.atts[id]))
			default:
				bad.add("review for an unknown reason", "%q: %s", op.ReviewReason, describeOp(op, v.atts[id]))
			}
		}

		// 6. Every attempt that may have reached the provider started inside
		// the key window, margin to spare; one key per operation.
		atts := v.atts[id]
		if len(atts) != op.Attempts {
			bad.add("attempt count", "%d recorded, %d counted: %s", len(atts), op.Attempts, describeOp(op, atts))
		}
		for _, a := range atts {
			s.outcomes[outcomeName(a)]++
			if a.FinishedAt.IsZero() {
				s.unfinished++
			}
			if a.Key != op.Key || op.Key != op.ID {
				bad.add("attempt with another key", "attempt %d: %s", a.Number, describeOp(op, atts))
			}
			if !a.MayHaveReached {
				continue
			}
			if a.StartedAt.Before(op.WindowStart) || !a.StartedAt.Before(op.KeyExpiresAt.Add(-safetyMargin)) {
				bad.add("attempt outside its key window", "attempt %d at %s: %s", a.Number, a.StartedAt.Format(tsFormat), describeOp(op, atts))
			}
		}

		// 7. The provider processed every request of the operation while it
		// still remembered the key from the first attempt: created after the
		// window opened and before the key's TTL ran out, with the key.
		objs := make([]struct {
			id, key string
			at      time.Time
		}, 0, len(ps)+len(rs))
		for _, p := range ps {
			objs = append(objs, struct {
				id, key string
				at      time.Time
			}{p.ID, p.IdempotencyKey, p.Created})
		}
		for _, r := range rs {
			objs = append(objs, struct {
				id, key string
				at      time.Time
			}{r.ID, r.IdempotencyKey, r.Created})
		}
		for _, o := range objs {
			switch {
			case o.key != op.Key:
				bad.add("object created with another key", "%s key %q: %s", o.id, o.key, describeOp(op, atts))
			case op.WindowStart.IsZero() || o.at.Before(op.WindowStart.Add(-time.Millisecond)):
				// Seen when an attempt the provider processed is recorded
				// not_sent: see TestRegressionTransportResendMasksProcessedAttempt.
				bad.add("object created before its key window opened (an attempt recorded not_sent reached the provider?)",
					"%s at %s: %s", o.id, o.at.Format(tsFormat), describeOp(op, atts))
			case !o.at.Before(op.WindowStart.Add(op.KeyTTL)):
				bad.add("object created after the key TTL", "%s at %s: %s", o.id, o.at.Format(tsFormat), describeOp(op, atts))
			}
		}
	}
	for kind, ex := range bad.byKind {
		if !strings.HasPrefix(kind, "review: ") {
			s.broken += len(ex)
		}
	}
	// Reviews for duplicated or key-mismatch reasons are reported, not
	// failures by themselves: what they describe is checked above.
	var real violations
	for _, k := range bad.order {
		if strings.HasPrefix(k, "review: ") {
			t.Logf("%s: %d operations, e.g. %s", k, len(bad.byKind[k]), bad.byKind[k][0])
			continue
		}
		for _, e := range bad.byKind[k] {
			real.add(k, "%s", e)
		}
	}
	real.report(t)
	return s
}

const tsFormat = "15:04:05.000000"

func outcomeName(a ledger.Attempt) string {
	if a.FinishedAt.IsZero() {
		return "unfinished"
	}
	return string(a.Outcome)
}

// describeOp renders an operation and its attempts for a failure message.
func describeOp(op ledger.Operation, atts []ledger.Attempt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %v: %s ref %q window %s..%s review %q at %s", op.ID, op.Kind, op.References, op.Status, op.ProviderRef,
		op.WindowStart.Format(tsFormat), op.KeyExpiresAt.Format(tsFormat), op.ReviewReason, op.ReviewAt.Format(tsFormat))
	if op.Resolution != nil {
		fmt.Fprintf(&b, " resolved by %s: %s", op.Resolution.Actor, op.Resolution.Outcome)
	}
	for _, a := range atts {
		fmt.Fprintf(&b, "\n    attempt %d at %s: %s http %d reached=%v %s", a.Number, a.StartedAt.Format(tsFormat), outcomeName(a), a.HTTPStatus, a.MayHaveReached, a.Error)
	}
	return b.String()
}

// line is the one-line summary of a run.
func (s summary) line(size string, seed int64, st suiteStats, took time.Duration) string {
	kv := func(m map[string]int) string {
		var parts []string
		for k, n := range m {
			parts = append(parts, fmt.Sprintf("%s=%d", k, n))
		}
		sort.Strings(parts)
		return "{" + strings.Join(parts, " ") + "}"
	}
	status := map[string]int{}
	for k, n := range s.status {
		status[string(k)] = n
	}
	return fmt.Sprintf("crashsuite %s seed=%d: ops=%d (charges=%d refunds=%d) status%s attempts=%d%s "+
		"max_attempts=%d (%s; bound %d) attempts_per_op%s unfinished=%d "+
		"kills=%d (working=%d) restarts=%d pg_restarts=%d faults=%d%s requests=%d replays=%d key_in_use=%d "+
		"duplicates=%d refunds_over_charge=%d over_refunds_refused=%d reviews%s settled_from_review=%d review_with_object=%d "+
		"call_retries=%d ledger_error_logs=%d broken=%d work=%s settle=%s duration=%s",
		size, seed, s.ops, s.charges, s.refunds, kv(status), s.attempts, kv(s.outcomes),
		s.maxAttempts, s.maxAttemptsOp, maxAttemptsPerOp, kv(s.attemptsPerOp), s.unfinished,
		st.kills, st.killsWorking, st.restarts, st.pgRestarts, s.faultTotal, kv(s.faults), s.requests, s.replays, s.keyInUse,
		s.duplicates, s.refundsOverCharge, s.overRefused, kv(s.reviews), s.settledFromReview, st.reviewsLeftWithObject,
		st.callRetries, st.ledgerErrors, s.broken, st.workPhase.Round(time.Second), st.settlePhase.Round(time.Second), took.Round(time.Second))
}

package crashsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// ledgerView is the whole ledger: every operation with its attempts, and
// the webhooks' part (readWebhooks): the inbox and the operations' webhook
// audit entries.
type ledgerView struct {
	ops  map[string]ledger.Operation
	atts map[string][]ledger.Attempt
	// events holds the EventWebhook entries only, by operation.
	events map[string][]ledger.Event
	inbox  []ledger.InboxEntry
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

// readWebhooks reads into v, from the tables of the ledger in schema, the
// whole webhook inbox, each entry with its outcomes in order, and every
// EventWebhook audit entry. The tables rather than Store.ListWebhooks and
// Store.Events: a list reads at most ledger.MaxLimit entries and the long
// run records more, and one statement reads the audit entries of every
// operation. A second row of one event, which the primary key on
// (provider, event id) forbids, would be a second entry here.
func readWebhooks(ctx context.Context, pool *pgxpool.Pool, schema string, v *ledgerView) error {
	webhooks := pgx.Identifier{schema, "payonce_webhooks"}.Sanitize()
	outcomes := pgx.Identifier{schema, "payonce_webhook_outcomes"}.Sanitize()
	events := pgx.Identifier{schema, "payonce_events"}.Sanitize()
	return retry(ctx, 30*time.Second, func() error {
		v.events = map[string][]ledger.Event{}
		rows, err := pool.Query(ctx, `SELECT operation_id, seq, at, actor, coalesce(detail, '') FROM `+events+
			` WHERE kind = $1 ORDER BY operation_id, seq`, string(ledger.EventWebhook))
		if err != nil {
			return err
		}
		evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.Event, error) {
			e := ledger.Event{Kind: ledger.EventWebhook}
			err := row.Scan(&e.OperationID, &e.Seq, &e.At, &e.Actor, &e.Detail)
			return e, err
		})
		if err != nil {
			return err
		}
		for _, e := range evs {
			v.events[e.OperationID] = append(v.events[e.OperationID], e)
		}

		var out []ledger.InboxEntry
		rows, err = pool.Query(ctx, `SELECT provider, event_id, type, received_at FROM `+webhooks+` ORDER BY provider, event_id`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ledger.InboxEntry, error) {
			var e ledger.InboxEntry
			err := row.Scan(&e.Provider, &e.ID, &e.Type, &e.ReceivedAt)
			return e, err
		})
		if err != nil {
			return err
		}
		at := map[[2]string]int{}
		for i, e := range out {
			at[[2]string{e.Provider, e.ID}] = i
		}
		rows, err = pool.Query(ctx, `SELECT provider, event_id, target, coalesce(operation_id, ''), disposition,
			coalesce(from_status, ''), coalesce(to_status, '') FROM `+outcomes+` ORDER BY provider, event_id, seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var provider, id, disp, from, to string
			var o ledger.WebhookOutcome
			if err := rows.Scan(&provider, &id, &o.Target, &o.OperationID, &disp, &from, &to); err != nil {
				return err
			}
			o.Disposition, o.From, o.To = ledger.WebhookDisposition(disp), ledger.Status(from), ledger.Status(to)
			i, ok := at[[2]string{provider, id}]
			if !ok {
				return fmt.Errorf("outcome of event %s/%s, which is not in the inbox", provider, id)
			}
			out[i].Outcomes = append(out[i].Outcomes, o)
		}
		v.inbox = out
		return rows.Err()
	})
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
	webhooks      webhookSummary
	storedErrors  storedErrors
	// audit is the final audit of the fake (auditFake).
	audit auditSummary
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
	if strings.HasPrefix(r, payonce.ReasonStoredError+": ") {
		return "stored_error" // the reason carries the evidence after it
	}
	return strings.ReplaceAll(r, " ", "_")
}

// check verifies the invariants against the fake's truth and the ledger,
// reports every broken one as a test error, and returns the summary.
func check(t *testing.T, prov crashProvider, jobs []job, truth mocks.Truth, v ledgerView, wh webhookInput) summary {
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
		if id := prov.paymentOp(p); id != "" {
			pisOf[id] = append(pisOf[id], p)
		} else {
			bad.add("object without operation", "payment %s names no operation", p.ID)
		}
	}
	for _, r := range truth.Refunds {
		refundsOfPI[r.PaymentID] = append(refundsOfPI[r.PaymentID], r)
		if id := prov.refundOp(r); id != "" {
			refundsOf[id] = append(refundsOf[id], r)
		} else {
			bad.add("object without operation", "refund %s names no operation", r.ID)
		}
	}

	// 1. No reference charged twice; at most one object per operation.
	dups := prov.duplicates(truth)
	s.duplicates = len(dups)
	for id, n := range dups {
		bad.add("reference charged twice", "operation %s: %d authorized payments", id, n)
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
		case !ok && j.Refund && !j.RefundSkipped && charge.Status == ledger.StatusSucceeded && charge.ReviewAt.IsZero():
			// A charge that succeeded only after the worker stopped waiting
			// for it (RefundSkipped) had its refund never asked for: its
			// absence is no loss.
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
				case prov.paymentOp(p) != id || !p.Authorized || p.AmountCaptured != j.Amount:
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
			case op.ReviewCode == ledger.ReviewCodeStoredError:
				// Legal inside the window: the key's answer is a replayed
				// error and lookups past the lag found nothing.
				if why := s.storedErrors.add(op, v.atts[id], movedMoney(pisOf[id], refundsOf[id])); why != "" {
					bad.add(why, "%s", describeOp(op, v.atts[id]))
				}
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
	s.webhooks = checkWebhooks(&bad, v, wh)
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
		"%s call_retries=%d refunds_skipped%s ledger_error_logs=%d %s %s broken=%d work=%s settle=%s duration=%s",
		size, seed, s.ops, s.charges, s.refunds, kv(status), s.attempts, kv(s.outcomes),
		s.maxAttempts, s.maxAttemptsOp, maxAttemptsPerOp, kv(s.attemptsPerOp), s.unfinished,
		st.kills, st.killsWorking, st.restarts, st.pgRestarts, s.faultTotal, kv(s.faults), s.requests, s.replays, s.keyInUse,
		s.duplicates, s.refundsOverCharge, s.overRefused, kv(s.reviews), s.settledFromReview, st.reviewsLeftWithObject,
		s.storedErrors.text(), st.callRetries, kv(st.refundsSkipped), st.ledgerErrors, s.webhooks.line(st, kv), s.audit.line(), s.broken, st.workPhase.Round(time.Second), st.settlePhase.Round(time.Second), took.Round(time.Second))
}

// webhookInput is what the driver gathered about the webhooks besides the
// ledger: the fake's observations, the front's counts, what the receivers
// printed per event, and when PostgreSQL was down.
type webhookInput struct {
	observed             fakeObserved
	front                frontStats
	receivers            map[string]*receiverEvents
	outageFrom, outageTo time.Time
	// verifiesAtProvider: the adapter's verification asks the provider
	// (crashProvider.verifiesAtProvider), so a genuine delivery is refused
	// (400) while the provider fails; the sender delivers it again.
	verifiesAtProvider bool
}

// webhookSummary is the webhooks' part of the summary line.
type webhookSummary struct {
	// The sender's side (mocks.WebhookStats and its attempts on the wire).
	queued, senderDuplicates, attempts, acknowledged, failed, gaveUp int
	// Answers the sender got: 5xx (during the outage), none at all.
	status5xx, outage5xx, unanswered int
	// The receivers' side: events recorded, duplicates acknowledged,
	// forged deliveries sent and rejected.
	recorded, duplicates, forged, rejected int
	dispositions                           map[string]int
	settledByWebhook, settledByCall        int
	// maxPosts is the most POSTs the fake received for one operation.
	maxPosts int
	// refusedVerifying counts genuine deliveries refused 400 while the
	// verification could not reach the provider (webhookInput.verifiesAtProvider).
	refusedVerifying int
}

func (w webhookSummary) line(st suiteStats, kv func(map[string]int) string) string {
	return fmt.Sprintf("webhooks{queued=%d sender_duplicates=%d attempts=%d acknowledged=%d failed=%d gave_up=%d 5xx=%d outage_5xx=%d no_answer=%d} "+
		"receivers{recorded=%d duplicates=%d forged=%d rejected=%d} dispositions%s settled_by_webhook=%d settled_by_call_or_lookup=%d "+
		"max_posts_per_op=%d receiver_kills=%d (after_commit=%d) refused_while_verifying=%d",
		w.queued, w.senderDuplicates, w.attempts, w.acknowledged, w.failed, w.gaveUp, w.status5xx, w.outage5xx, w.unanswered,
		w.recorded, w.duplicates, w.forged, w.rejected, kv(w.dispositions), w.settledByWebhook, w.settledByCall,
		w.maxPosts, st.kills, st.killsAfterCommit, w.refusedVerifying)
}

// maxPostsPerAttempt bounds the POSTs the fake may see per attempt the
// ledger journaled: one transmission, plus the ones net/http makes by
// itself on reused connections that failed before any answer. It resends
// requests carrying an Idempotency-Key header, once per such connection,
// with no limit of its own (net/http's Transport.roundTrip loop), so two
// dropped connections in a row give three POSTs; all carry the attempt's
// key, and the attempt is never recorded not_sent (see
// TestRegressionTransportResendMasksProcessedAttempt). Four leaves room for
// three such failures in a row; the money itself is held by the other
// invariants (one object per operation, no duplicates).
const maxPostsPerAttempt = 4

// webhookClockGrace: see "attempt after a webhook settled the operation".
const webhookClockGrace = time.Second

// checkWebhooks verifies the receiving half, exactly once: every event the
// fake counts as delivered is in the inbox once and was applied once; a
// redelivery (the fake's duplicates, retries after a lost reply, the
// redelivery after a kill between commit and reply) is acknowledged as a
// duplicate and changes nothing; no event moved a settled operation; a
// forged delivery is refused; and nothing was sent because of an event.
func checkWebhooks(bad *violations, v ledgerView, in webhookInput) webhookSummary {
	obs := in.observed
	w := webhookSummary{dispositions: map[string]int{},
		queued: obs.Webhooks.Queued, senderDuplicates: obs.Webhooks.Duplicated, acknowledged: obs.Webhooks.Delivered,
		failed: obs.Webhooks.Failed, gaveUp: obs.Webhooks.GaveUp + obs.Webhooks.Dropped,
		forged: in.front.forged, rejected: in.front.forgedRejected}
	if w.gaveUp > 0 {
		bad.add("webhook never delivered", "the sender gave up on %d deliveries and dropped %d", obs.Webhooks.GaveUp, obs.Webhooks.Dropped)
	}

	// The inbox: one entry per event, none forged.
	inbox := map[string]ledger.InboxEntry{}
	for _, e := range v.inbox {
		if _, seen := inbox[e.ID]; seen {
			bad.add("event recorded twice in the inbox", "%s %s", e.Provider, e.ID)
		}
		inbox[e.ID] = e
		if strings.HasSuffix(e.ID, forgedSuffix) {
			bad.add("forged event recorded", "%s %s", e.ID, e.Type)
		}
	}
	for _, id := range in.front.forgedAccepted {
		bad.add("forged delivery acknowledged", "%s", id)
	}

	// What the sender counts as delivered is in the inbox, and every event
	// it emitted was delivered (each has an id of its own).
	acked := map[string]time.Time{} // event id -> its last 2xx
	twoXX := 0
	for _, d := range obs.Deliveries {
		w.attempts++
		switch {
		case d.ok():
			twoXX++
			acked[d.EventID] = d.At
		case d.Status == 0:
			w.unanswered++
		case d.Status >= 500:
			w.status5xx++
			if !d.At.Before(in.outageFrom) && !d.At.After(in.outageTo) {
				w.outage5xx++
			}
		case in.verifiesAtProvider && d.Status == 400:
			// The verification read the provider, which failed (the
			// fake's faults): payonce answers 400, and the event, delivered
			// again, must still be acknowledged (checked below).
			w.refusedVerifying++
		default:
			bad.add("genuine webhook refused", "event %s (%s): %d", d.EventID, d.Type, d.Status)
		}
	}
	if twoXX != obs.Webhooks.Delivered {
		bad.add("webhook counts disagree", "the sender counts %d deliveries, its transport saw %d 2xx", obs.Webhooks.Delivered, twoXX)
	}
	if len(acked) != obs.Webhooks.Queued && w.gaveUp == 0 {
		bad.add("webhook counts disagree", "%d events emitted, %d acknowledged", obs.Webhooks.Queued, len(acked))
	}
	for id := range acked {
		if _, ok := inbox[id]; !ok {
			bad.add("acknowledged webhook not in the inbox", "%s", id)
		}
	}
	for id, e := range inbox {
		if _, ok := acked[id]; !ok {
			bad.add("inbox holds an event never acknowledged", "%s %s", id, e.Type)
		}
	}

	// Receivers: at most one "recorded" per event over every incarnation;
	// every recorded event is in the inbox.
	for id, r := range in.receivers {
		w.recorded += r.recorded
		w.duplicates += r.duplicates
		if r.recorded > 1 {
			bad.add("event applied twice (recorded as new by receivers more than once)", "%s: %d times", id, r.recorded)
		}
		if _, ok := inbox[id]; !ok {
			bad.add("event a receiver recorded is not in the inbox", "%s", id)
		}
	}

	// Each event applied once per operation: one audit entry per (event,
	// operation), matching an outcome in the inbox.
	type application struct {
		n  int
		at time.Time
	}
	applied := map[[2]string]*application{}
	for opID, evs := range v.events {
		for _, e := range evs {
			if e.Kind != ledger.EventWebhook {
				continue
			}
			var d ledger.WebhookDetail
			if err := json.Unmarshal([]byte(e.Detail), &d); err != nil {
				bad.add("webhook audit entry unreadable", "operation %s event %d: %v", opID, e.Seq, err)
				continue
			}
			k := [2]string{d.EventID, opID}
			if applied[k] == nil {
				applied[k] = &application{at: e.At}
			}
			applied[k].n++
		}
	}
	for k, a := range applied {
		if a.n > 1 {
			bad.add("event applied twice to one operation", "event %s on %s: %d audit entries", k[0], k[1], a.n)
		}
		if _, ok := inbox[k[0]]; !ok {
			bad.add("webhook audit entry without its inbox entry", "event %s on %s", k[0], k[1])
		}
	}

	// No event moved an operation back; nothing in this run reverses an
	// outcome (no refund fails later, no dispute), so a contradiction is
	// the ledger disagreeing with the provider.
	type settlement struct {
		eventID string
		to      ledger.Status
	}
	settledBy := map[string]settlement{}
	for _, e := range v.inbox {
		for _, o := range e.Outcomes {
			w.dispositions[string(o.Disposition)]++
			if o.OperationID != "" && (applied[[2]string{e.ID, o.OperationID}] == nil) {
				bad.add("inbox outcome without its audit entry", "event %s on %s: %s", e.ID, o.OperationID, o.Disposition)
			}
			if o.From.Final() && o.To != o.From {
				bad.add("event moved a settled operation", "event %s (%s) on %s: %s -> %s", e.ID, e.Type, o.OperationID, o.From, o.To)
			}
			switch o.Disposition {
			case ledger.WebhookContradiction:
				bad.add("webhook contradicted the ledger", "event %s (%s) on %s: %s", e.ID, e.Type, o.OperationID, o.From)
			case ledger.WebhookSettled:
				if prev, ok := settledBy[o.OperationID]; ok {
					bad.add("operation settled by two events", "%s: %s by %s, %s by %s", o.OperationID, prev.to, prev.eventID, o.To, e.ID)
				}
				settledBy[o.OperationID] = settlement{eventID: e.ID, to: o.To}
			}
		}
	}
	for id, op := range v.ops {
		if !op.Status.Final() {
			continue
		}
		by, byWebhook := settledBy[id]
		if !byWebhook {
			w.settledByCall++
			continue
		}
		w.settledByWebhook++
		if op.Status != by.to {
			bad.add("operation left the status a webhook settled it in", "%s: settled %s by %s, now %s", describeOp(op, v.atts[id]), by.to, by.eventID, op.Status)
		}
		// An event never makes anything send: no attempt of an operation
		// starts after an event settled it. The grace covers the one race
		// that is no violation: the receiver reads its clock before it
		// locks the operation, and an attempt may start and commit in
		// between (it is then closed as maybe_sent by the event).
		if a := applied[[2]string{by.eventID, id}]; a != nil {
			for _, att := range v.atts[id] {
				if att.StartedAt.After(a.at.Add(webhookClockGrace)) {
					bad.add("attempt after a webhook settled the operation", "attempt %d at %s, settled at %s: %s",
						att.Number, att.StartedAt.Format(tsFormat), a.at.Format(tsFormat), describeOp(op, v.atts[id]))
				}
			}
		}
	}

	// A kill between commit and reply: the event is in the inbox, recorded
	// once, and its redelivery was acknowledged as a duplicate.
	for _, h := range in.front.held {
		r := in.receivers[h.eventID]
		switch last, ok := acked[h.eventID]; {
		case !ok || !last.After(h.at):
			bad.add("event whose reply was lost in a kill not delivered again", "%s (receiver of worker %d)", h.eventID, h.worker)
		case r == nil || r.duplicates == 0:
			bad.add("redelivery after a kill between commit and reply not a duplicate", "%s (receiver of worker %d): %+v", h.eventID, h.worker, r)
		}
	}

	// Nothing sent outside the attempts the ledger journaled: per key, the
	// POSTs the fake received stay within maxPostsPerAttempt per attempt
	// (so also within maxAttemptsPerOp), and every POST carries the key of
	// an operation.
	byKey := map[string]ledger.Operation{}
	for _, op := range v.ops {
		byKey[op.Key] = op
	}
	for key, n := range obs.PostsByKey {
		w.maxPosts = max(w.maxPosts, n)
		op, ok := byKey[key]
		if !ok {
			bad.add("POST with the key of no operation", "key %q: %d POSTs", key, n)
			continue
		}
		if n > maxPostsPerAttempt*op.Attempts {
			bad.add("more POSTs than the attempts allow", "%d POSTs for %d attempts: %s", n, op.Attempts, describeOp(op, v.atts[op.ID]))
		}
	}
	return w
}

// markSkippedRefunds marks the jobs whose refund a worker printed as
// skipped (markerRefundSkipped) in lines, and counts them by the charge's
// status then.
func markSkippedRefunds(lines []string, jobs []job, st *suiteStats) {
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != markerRefundSkipped {
			continue
		}
		for i := range jobs {
			if jobs[i].RefundID == f[1] {
				jobs[i].RefundSkipped = true
			}
		}
		if st.refundsSkipped == nil {
			st.refundsSkipped = map[string]int{}
		}
		st.refundsSkipped[f[2]]++
	}
}

package crashsuite

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// movedMoney reports whether the provider moved money for an operation: an
// authorized PaymentIntent or a succeeded refund.
func movedMoney(pis []mocks.TruthPayment, refunds []mocks.TruthRefund) bool {
	for _, p := range pis {
		if p.Authorized {
			return true
		}
	}
	for _, r := range refunds {
		if r.Status == "succeeded" {
			return true
		}
	}
	return false
}

// storedErrors is what the run shows of operations sent to review for a
// replayed stored error (ledger.ReviewCodeStoredError): how long each took
// to get there from its first attempt, and how many of them the provider
// nonetheless holds money for (the lookups' evidence was wrong: still
// safe, since a person decides, but worth seeing).
type storedErrors struct {
	took       []time.Duration
	withObject int
}

// add checks the review of op for a stored error and counts
// it: the key it holds must have been answered by a replayed error, and the
// review must come after that answer. It returns the violation, "" if none.
func (s *storedErrors) add(op ledger.Operation, atts []ledger.Attempt, moved bool) string {
	var replayEnd time.Time
	for _, a := range atts {
		if a.Key == op.Key && a.Replayed && a.Outcome != ledger.OutcomeSuccess && a.Outcome != ledger.OutcomeNotSent && !a.FinishedAt.IsZero() {
			replayEnd = a.FinishedAt
		}
	}
	switch {
	case replayEnd.IsZero():
		return "review for a stored error without a replayed error under the operation's key"
	case op.ReviewAt.Before(replayEnd):
		return "review for a stored error before the replay"
	}
	if len(atts) > 0 {
		s.took = append(s.took, op.ReviewAt.Sub(atts[0].StartedAt))
	}
	if moved {
		s.withObject++
	}
	return ""
}

// text is the summary's part: "stored_errors=N (p50 X max Y with_object=Z)".
func (s storedErrors) text() string {
	if len(s.took) == 0 {
		return fmt.Sprintf("stored_errors=0 (with_object=%d)", s.withObject)
	}
	d := slices.Clone(s.took)
	slices.Sort(d)
	return fmt.Sprintf("stored_errors=%d (review after p50 %s max %s; with_object=%d)",
		len(d), d[(len(d)-1)/2].Round(time.Millisecond), d[len(d)-1].Round(time.Millisecond), s.withObject)
}

func TestStoredErrorsSummary(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	att := func(key string, replayed bool, start, end time.Duration) ledger.Attempt {
		return ledger.Attempt{Key: key, Replayed: replayed, Outcome: ledger.OutcomeMaybeSent, StartedAt: t0.Add(start), FinishedAt: t0.Add(end)}
	}
	op := ledger.Operation{Key: "k1", ReviewAt: t0.Add(90 * time.Second)}
	var s storedErrors
	if got := s.text(); got != "stored_errors=0 (with_object=0)" {
		t.Fatalf("empty: %q", got)
	}
	if why := s.add(op, []ledger.Attempt{att("k1", false, 0, time.Second)}, false); why == "" {
		t.Error("a review for a stored error without a replay must be a violation")
	}
	if why := s.add(op, []ledger.Attempt{att("k0", true, 0, time.Second)}, false); why == "" {
		t.Error("a replay under an earlier generation's key does not answer for the current one")
	}
	if why := s.add(op, []ledger.Attempt{att("k1", true, 0, 2*time.Minute)}, false); why == "" {
		t.Error("a review before the replay must be a violation")
	}
	if why := s.add(op, []ledger.Attempt{att("k1", false, 0, time.Second), att("k1", true, 30*time.Second, 31*time.Second)}, true); why != "" {
		t.Errorf("legal review refused: %s", why)
	}
	op.ReviewAt = t0.Add(3 * time.Minute)
	if why := s.add(op, []ledger.Attempt{att("k1", true, 0, time.Second)}, false); why != "" {
		t.Errorf("legal review refused: %s", why)
	}
	if got, want := s.text(), "stored_errors=2 (review after p50 1m30s max 3m0s; with_object=1)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

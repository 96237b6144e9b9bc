package payonce

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// TestDecideSend covers every row of decideSend's table: the status an
// answer to a send leads to.
func TestDecideSend(t *testing.T) {
	t.Parallel()
	const contra = "amount 5, not 10"
	rows := []struct {
		name       string
		out        Outcome
		windowOpen bool // an earlier attempt may have reached the provider
		want       sendDecision
	}{
		{"contradicts, success", Outcome{Class: ledger.OutcomeSuccess, Contradiction: contra}, false,
			sendDecision{To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: ReasonContradicted, Release: true, Note: "answer contradicts the request: " + contra}},
		{"contradicts, success processing", Outcome{Class: ledger.OutcomeSuccess, Processing: true, Contradiction: contra}, true,
			sendDecision{To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: ReasonContradicted, Release: true, Note: "answer contradicts the request: " + contra}},
		{"contradicts, refused", Outcome{Class: ledger.OutcomeRefused, Contradiction: contra}, false,
			sendDecision{To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: ReasonContradicted, Release: true, Note: "answer contradicts the request: " + contra}},
		{"contradicts, maybe sent", Outcome{Class: ledger.OutcomeMaybeSent, Contradiction: contra}, false,
			sendDecision{To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: ReasonContradicted, Release: true, Note: "answer contradicts the request: " + contra}},
		{"contradicts, not sent: nothing to contradict", Outcome{Class: ledger.OutcomeNotSent, Contradiction: contra}, false,
			sendDecision{To: ledger.StatusPending}},
		{"success", Outcome{Class: ledger.OutcomeSuccess}, false, sendDecision{To: ledger.StatusSucceeded}},
		{"success, window open before", Outcome{Class: ledger.OutcomeSuccess}, true, sendDecision{To: ledger.StatusSucceeded}},
		{"success, still processing", Outcome{Class: ledger.OutcomeSuccess, Processing: true}, false,
			sendDecision{To: ledger.StatusUnknown, Release: true, CheckLater: true}},
		{"refused", Outcome{Class: ledger.OutcomeRefused}, false, sendDecision{To: ledger.StatusFailed}},
		{"refused, replayed", Outcome{Class: ledger.OutcomeRefused, Replayed: true}, true, sendDecision{To: ledger.StatusFailed}},
		{"not sent, nothing out before", Outcome{Class: ledger.OutcomeNotSent}, false, sendDecision{To: ledger.StatusPending}},
		{"not sent, an earlier attempt out", Outcome{Class: ledger.OutcomeNotSent}, true, sendDecision{To: ledger.StatusUnknown}},
		{"key mismatch", Outcome{Class: ledger.OutcomeKeyMismatch}, false,
			sendDecision{To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeKeyMismatch, ReviewReason: ReasonKeyMismatch}},
		{"maybe sent", Outcome{Class: ledger.OutcomeMaybeSent}, false, sendDecision{To: ledger.StatusUnknown}},
		{"maybe sent, window open before", Outcome{Class: ledger.OutcomeMaybeSent}, true, sendDecision{To: ledger.StatusUnknown}},
		{"key in use", Outcome{Class: ledger.OutcomeKeyInUse}, false, sendDecision{To: ledger.StatusUnknown}},
		{"unknown class: the safe side", Outcome{Class: "weird"}, false, sendDecision{To: ledger.StatusUnknown}},
	}
	for _, r := range rows {
		require.Equal(t, r.want, decideSend(r.out, r.windowOpen), r.name)
	}
}

// TestDecide covers every row of the decision table in docs/ARCHITECTURE.md,
// inside and outside the key window.
func TestDecide(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ttl := 24 * time.Hour
	margin := 2 * time.Minute
	op := ledger.Operation{Status: ledger.StatusUnknown, WindowStart: start, KeyExpiresAt: start.Add(ttl), KeyTTL: ttl}
	inside := start.Add(time.Hour)
	// Just inside the margin counts as passed: a resend started then could
	// land after the provider forgot the key.
	atMargin := start.Add(ttl - margin)
	outside := start.Add(ttl + time.Hour)
	lookupErr := errors.New("lookup: 503")
	check := 30 * time.Second

	type row struct {
		name       string
		now        time.Time
		lookup     LookupResult
		err        error
		lastAt     time.Time
		op         *ledger.Operation
		want       action
		reason     string
		keepsCheck bool      // NextCheckAt set
		answered   bool      // KeyAnswered
		notBefore  time.Time // ResendNotBefore
		nextAt     time.Time // expected NextCheckAt, when set
		// reviewAfter is ProcessingReviewAfter; zero means 72 h.
		reviewAfter time.Duration
	}
	rows := []row{
		{name: "succeeded inside", now: inside, lookup: LookupResult{State: LookupSucceeded}, want: actRecordSucceeded},
		{name: "succeeded outside", now: outside, lookup: LookupResult{State: LookupSucceeded}, want: actRecordSucceeded},
		{name: "failed inside", now: inside, lookup: LookupResult{State: LookupFailed}, want: actRecordFailed},
		{name: "failed outside", now: outside, lookup: LookupResult{State: LookupFailed}, want: actRecordFailed},
		{name: "processing inside", now: inside, lookup: LookupResult{State: LookupProcessing}, want: actCheckLater, keepsCheck: true},
		{name: "processing outside, young", now: outside, lookup: LookupResult{State: LookupProcessing}, want: actCheckLater, keepsCheck: true},
		{name: "processing outside, old", now: start.Add(73 * time.Hour), lookup: LookupResult{State: LookupProcessing}, want: actReview, reason: ReasonProcessing, keepsCheck: true},
		{name: "processing outside, old, review for age off", now: start.Add(1000 * time.Hour), lookup: LookupResult{State: LookupProcessing}, reviewAfter: off, want: actCheckLater, keepsCheck: true},
		{name: "multiple inside", now: inside, lookup: LookupResult{State: LookupMultiple}, want: actReview, reason: ReasonDuplicated},
		{name: "multiple outside", now: outside, lookup: LookupResult{State: LookupMultiple}, want: actReview, reason: ReasonDuplicated},
		{name: "not found inside", now: inside, lookup: LookupResult{State: LookupNotFound}, want: actResend},
		{name: "not found at margin", now: atMargin, lookup: LookupResult{State: LookupNotFound}, want: actReview, reason: ReasonWindowPassed, keepsCheck: true},
		{name: "not found outside", now: outside, lookup: LookupResult{State: LookupNotFound}, want: actReview, reason: ReasonWindowPassed, keepsCheck: true},
		{name: "not found within lag", now: inside, lastAt: inside.Add(-10 * time.Second), lookup: LookupResult{State: LookupNotFound, Lag: time.Minute}, want: actCheckLater, keepsCheck: true},
		{name: "not found after lag", now: inside, lastAt: inside.Add(-2 * time.Minute), lookup: LookupResult{State: LookupNotFound, Lag: time.Minute}, want: actResend},
		{name: "not found within lag outside", now: outside, lastAt: outside.Add(-10 * time.Second), lookup: LookupResult{State: LookupNotFound, Lag: time.Minute}, want: actCheckLater, keepsCheck: true},
		{name: "lookup failed inside", now: inside, err: lookupErr, want: actCheckLater, keepsCheck: true},
		{name: "lookup failed outside", now: outside, err: lookupErr, want: actReview, reason: ReasonWindowPassed, keepsCheck: true},
		{name: "window never opened", now: outside, op: &ledger.Operation{Status: ledger.StatusUnknown}, lookup: LookupResult{State: LookupNotFound}, want: actResend},
		{name: "unrecognised state", now: inside, lookup: LookupResult{State: "weird"}, want: actCheckLater, keepsCheck: true},
		{name: "contradiction inside", now: inside, lookup: LookupResult{State: LookupSucceeded, Contradiction: "amount 5, not 10"}, want: actReview, reason: ReasonContradicted},
		{name: "contradiction outside", now: outside, lookup: LookupResult{State: LookupFailed, Contradiction: "currency"}, want: actReview, reason: ReasonContradicted},
		{name: "not found, key answered by a replay", now: inside, answered: true, lookup: LookupResult{State: LookupNotFound}, want: actCheckLater, keepsCheck: true},
		{name: "not found, key answered, outside", now: outside, answered: true, lookup: LookupResult{State: LookupNotFound}, want: actReview, reason: ReasonWindowPassed, keepsCheck: true},
		{name: "succeeded, key answered", now: inside, answered: true, lookup: LookupResult{State: LookupSucceeded}, want: actRecordSucceeded},
		{name: "not found before the resend pacing", now: inside, notBefore: inside.Add(time.Minute), lookup: LookupResult{State: LookupNotFound}, want: actCheckLater, keepsCheck: true},
		{name: "resend pacing past the window waits for its close", now: inside, notBefore: outside, lookup: LookupResult{State: LookupNotFound}, want: actCheckLater, keepsCheck: true, nextAt: start.Add(ttl - margin)},
		{name: "not found after the resend pacing", now: inside, notBefore: inside, lookup: LookupResult{State: LookupNotFound}, want: actResend},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			o := op
			if r.op != nil {
				o = *r.op
			}
			lastAt := r.lastAt
			if lastAt.IsZero() {
				lastAt = start
			}
			reviewAfter := r.reviewAfter
			if reviewAfter == 0 {
				reviewAfter = 72 * time.Hour
			}
			d := decide(decideInput{
				Op: o, LastAttemptAt: lastAt, Lookup: r.lookup, LookupErr: r.err, Now: r.now,
				Margin: margin, CheckAfter: check, ProcessingReviewAfter: reviewAfter,
				KeyAnswered: r.answered, ResendNotBefore: r.notBefore,
			})
			require.Equal(t, r.want, d.Action)
			if r.reason != "" {
				require.Equal(t, r.reason, d.Reason)
				code := map[string]ledger.ReviewCode{ReasonProcessing: ledger.ReviewCodeProcessing, ReasonDuplicated: ledger.ReviewCodeDuplicated,
					ReasonWindowPassed: ledger.ReviewCodeWindowPassed, ReasonContradicted: ledger.ReviewCodeContradicted}[r.reason]
				require.Equal(t, code, d.Code, "the review code beside the reason")
			}
			require.Equal(t, r.keepsCheck, !d.NextCheckAt.IsZero(), "NextCheckAt = %v", d.NextCheckAt)
			if r.keepsCheck {
				require.True(t, d.NextCheckAt.After(r.now), "next check must be in the future")
			}
			if !r.nextAt.IsZero() {
				require.Equal(t, r.nextAt, d.NextCheckAt)
			}
			if r.want != actResend {
				require.Equal(t, map[action]ledger.Status{actRecordSucceeded: ledger.StatusSucceeded, actRecordFailed: ledger.StatusFailed,
					actReview: ledger.StatusManualReview, actCheckLater: ledger.StatusUnknown}[r.want], d.status(), "the status recorded")
			}
		})
	}
}

func TestInsideWindow(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	op := ledger.Operation{WindowStart: start, KeyExpiresAt: start.Add(time.Hour)}
	require.True(t, insideWindow(op, start, time.Minute))
	require.True(t, insideWindow(op, start.Add(58*time.Minute), time.Minute))
	require.False(t, insideWindow(op, start.Add(59*time.Minute), time.Minute))
	require.False(t, insideWindow(op, start.Add(2*time.Hour), 0))
	require.True(t, insideWindow(ledger.Operation{}, start.Add(100*time.Hour), time.Minute), "no window open: nothing can have been sent")
}

// TestDecideInReview covers every row of the table for operations in
// review: a lookup settles only a definitive answer, never sends, and stops
// looking only where a later lookup cannot change the answer.
func TestDecideInReview(t *testing.T) {
	cases := []struct {
		name string
		lr   LookupResult
		lerr error
		want reviewDecision
	}{
		{"lookup failed", LookupResult{State: LookupSucceeded}, errors.New("timeout"), reviewDecision{}},
		{"contradiction wins over success", LookupResult{State: LookupSucceeded, Contradiction: "amount 500, want 1000"}, nil,
			reviewDecision{ReviewCode: ledger.ReviewCodeContradicted, ReviewReason: ReasonContradicted, StopChecking: true}},
		{"succeeded", LookupResult{State: LookupSucceeded, ProviderRef: "pi_1"}, nil, reviewDecision{Settle: ledger.ResolveSucceeded}},
		{"failed", LookupResult{State: LookupFailed, ProviderRef: "pi_1"}, nil, reviewDecision{Settle: ledger.ResolveFailed}},
		{"multiple", LookupResult{State: LookupMultiple}, nil, reviewDecision{ReviewCode: ledger.ReviewCodeDuplicated, ReviewReason: ReasonDuplicated, StopChecking: true}},
		{"not found", LookupResult{State: LookupNotFound}, nil, reviewDecision{}},
		{"processing", LookupResult{State: LookupProcessing}, nil, reviewDecision{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, decideInReview(tc.lr, tc.lerr))
		})
	}
}

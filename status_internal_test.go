package payonce

import (
	"errors"
	"strings"
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
		// proves is ProvesAbsence, ev the recorded stored-error evidence,
		// failStored the FailStoredErrors policy; code the expected code
		// beside a failure.
		proves     bool
		ev         storedErrorEvidence
		failStored bool
		// storedFinal is StoredErrorsFinal (review rev3).
		storedFinal bool
		code        ledger.ReviewCode
	}
	// A stored error replayed at lastStored; the search lags a minute.
	lastStored := inside.Add(-10 * time.Minute)
	lag := LookupResult{State: LookupNotFound, Lag: time.Minute}
	oneEarlier := storedErrorEvidence{HTTPStatus: 500, Error: "HTTP 500: stored", NotFound: 1, First: inside.Add(-5 * time.Minute), Last: inside.Add(-5 * time.Minute)}
	sameInstant := storedErrorEvidence{HTTPStatus: 500, NotFound: 1, First: inside, Last: inside}
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

		// A replayed stored error and lookups that prove absence.
		{name: "stored error, first lookup past the lag", now: inside, lastAt: lastStored, answered: true, proves: true, lookup: lag, want: actCheckLater, keepsCheck: true},
		{name: "stored error, second lookup past the lag", now: inside, lastAt: lastStored, answered: true, proves: true, ev: oneEarlier, lookup: lag, want: actReview, reason: ReasonStoredError, keepsCheck: true},
		{name: "stored error, second lookup, fail policy", now: inside, lastAt: lastStored, answered: true, proves: true, ev: oneEarlier, failStored: true, storedFinal: true, lookup: lag, want: actRecordFailed, reason: ReasonNothingMoved, code: ledger.ReviewCodeStoredError},
		// Review rev3: a provider whose stored errors are not final (Stripe:
		// a stored 500 is indeterminate and may be rolled forward later)
		// goes to review even with the policy.
		{name: "stored error, second lookup, fail policy, stored errors not final", now: inside, lastAt: lastStored, answered: true, proves: true, ev: oneEarlier, failStored: true, lookup: lag, want: actReview, reason: ReasonStoredError, keepsCheck: true},
		{name: "stored error, second lookup inside the lag", now: inside, lastAt: inside.Add(-30 * time.Second), answered: true, proves: true, ev: oneEarlier, failStored: true, lookup: lag, want: actCheckLater, keepsCheck: true},
		{name: "stored error, two lookups at one instant", now: inside, lastAt: lastStored, answered: true, proves: true, ev: sameInstant, failStored: true, lookup: lag, want: actCheckLater, keepsCheck: true},
		{name: "stored error, lookup proves no absence", now: inside, lastAt: lastStored, answered: true, ev: oneEarlier, failStored: true, lookup: lag, want: actCheckLater, keepsCheck: true},
		{name: "stored error, lookup proves no absence, outside", now: outside, lastAt: lastStored, answered: true, ev: oneEarlier, failStored: true, lookup: lag, want: actReview, reason: ReasonWindowPassed, keepsCheck: true},
		{name: "stored error, evidence complete outside", now: outside, lastAt: lastStored, answered: true, proves: true, ev: oneEarlier, lookup: lag, want: actReview, reason: ReasonStoredError, keepsCheck: true},
		{name: "stored error, lookup failed", now: inside, lastAt: lastStored, answered: true, proves: true, ev: oneEarlier, failStored: true, err: lookupErr, want: actCheckLater, keepsCheck: true},
		{name: "stored error, processing", now: inside, lastAt: lastStored, answered: true, proves: true, ev: oneEarlier, failStored: true, lookup: LookupResult{State: LookupProcessing}, want: actCheckLater, keepsCheck: true},
		{name: "stored error, succeeded", now: inside, lastAt: lastStored, answered: true, proves: true, ev: oneEarlier, failStored: true, lookup: LookupResult{State: LookupSucceeded}, want: actRecordSucceeded},
		{name: "key not answered: the policy never applies", now: inside, lastAt: lastStored, proves: true, ev: oneEarlier, failStored: true, lookup: lag, want: actResend},
		{name: "key not answered, outside: window passed", now: outside, lastAt: lastStored, proves: true, ev: oneEarlier, failStored: true, lookup: lag, want: actReview, reason: ReasonWindowPassed, keepsCheck: true},
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
				ProvesAbsence: r.proves, StoredError: r.ev, FailStoredErrors: r.failStored,
				StoredErrorsFinal: r.storedFinal,
			})
			require.Equal(t, r.want, d.Action)
			if r.reason != "" {
				require.True(t, d.Reason == r.reason || strings.HasPrefix(d.Reason, r.reason+": "), "reason %q", d.Reason)
				code := map[string]ledger.ReviewCode{ReasonProcessing: ledger.ReviewCodeProcessing, ReasonDuplicated: ledger.ReviewCodeDuplicated,
					ReasonWindowPassed: ledger.ReviewCodeWindowPassed, ReasonContradicted: ledger.ReviewCodeContradicted,
					ReasonStoredError: ledger.ReviewCodeStoredError, ReasonNothingMoved: ledger.ReviewCodeStoredError}[r.reason]
				require.Equal(t, code, d.Code, "the review code beside the reason")
			}
			if r.reason == ReasonStoredError || r.reason == ReasonNothingMoved {
				// The evidence: both lookups, first and last, the stored answer.
				require.Contains(t, d.Reason, "2 lookups found nothing from "+r.ev.First.Format(time.RFC3339)+" to "+r.now.Format(time.RFC3339))
				require.Contains(t, d.Reason, "stored answer HTTP 500: HTTP 500: stored")
			}
			if r.code != "" {
				require.Equal(t, r.code, d.Code)
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

// TestParseLookupEvent reads back every shape lookupEvent writes.
func TestParseLookupEvent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lr    LookupResult
		lerr  error
		state LookupState
		lag   time.Duration
		ok    bool
	}{
		{lr: LookupResult{State: LookupNotFound}, state: LookupNotFound, ok: true},
		{lr: LookupResult{State: LookupNotFound, Lag: 90 * time.Second}, state: LookupNotFound, lag: 90 * time.Second, ok: true},
		{lr: LookupResult{State: LookupNotFound, Code: "odd lag=0s", Lag: time.Hour}, state: LookupNotFound, lag: time.Hour, ok: true},
		{lr: LookupResult{State: LookupFailed, ProviderRef: "pi_1", Code: "card_declined", Lag: time.Minute}, state: LookupFailed, lag: time.Minute, ok: true},
		{lr: LookupResult{State: LookupMultiple, ProviderRef: "pi_1", Refs: []string{"pi_1", "pi_2"}}, state: LookupMultiple, ok: true},
		{lr: LookupResult{State: LookupNotFound, Lag: time.Minute, Contradiction: "amount lag=0s"}, state: "contradicted", ok: true},
		{lerr: errors.New("state=not_found"), ok: false},
	}
	for _, tc := range cases {
		e := lookupEvent(tc.lr, tc.lerr)
		state, lag, ok := parseLookupEvent(e.Detail)
		require.Equal(t, tc.ok, ok, e.Detail)
		require.Equal(t, tc.state, state, e.Detail)
		require.Equal(t, tc.lag, lag, e.Detail)
	}
	_, _, ok := parseLookupEvent("state=not_found lag=soon")
	require.False(t, ok, "an unreadable lag proves nothing")
	_, _, ok = parseLookupEvent("state=")
	require.False(t, ok)
}

// TestStoredErrorHistory: which recorded lookups count as evidence after a
// stored error.
func TestStoredErrorHistory(t *testing.T) {
	t.Parallel()
	end := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration, lr LookupResult, lerr error) ledger.Event {
		e := lookupEvent(lr, lerr)
		return ledger.Event{Kind: e.Kind, Detail: e.Detail, At: end.Add(d)}
	}
	nf := LookupResult{State: LookupNotFound, Lag: time.Minute}
	base := storedErrorEvidence{HTTPStatus: 500, Error: "stored"}

	t.Run("before the attempt, inside the lag, failed: none counts", func(t *testing.T) {
		t.Parallel()
		ev := storedErrorHistory(base, []ledger.Event{
			at(-time.Hour, nf, nil), // an earlier generation, or before the replay
			at(30*time.Second, nf, nil),
			at(2*time.Minute, LookupResult{}, errors.New("503")),
			{Kind: ledger.EventNote, Detail: "state=not_found", At: end.Add(3 * time.Minute)},
		}, end)
		require.Zero(t, ev.NotFound)
		require.Equal(t, 500, ev.HTTPStatus, "the stored answer is kept")
	})
	t.Run("past the lag", func(t *testing.T) {
		t.Parallel()
		ev := storedErrorHistory(base, []ledger.Event{at(time.Minute, nf, nil), at(2*time.Minute, LookupResult{}, errors.New("503")), at(3*time.Minute, nf, nil)}, end)
		require.Equal(t, 2, ev.NotFound)
		require.Equal(t, end.Add(time.Minute), ev.First)
		require.Equal(t, end.Add(3*time.Minute), ev.Last)
	})
	t.Run("an object seen restarts the count", func(t *testing.T) {
		t.Parallel()
		ev := storedErrorHistory(base, []ledger.Event{at(2*time.Minute, nf, nil), at(3*time.Minute, LookupResult{State: LookupProcessing}, nil), at(4*time.Minute, nf, nil)}, end)
		require.Equal(t, 1, ev.NotFound)
		require.Equal(t, end.Add(4*time.Minute), ev.First)
	})
	t.Run("each lookup's own lag", func(t *testing.T) {
		t.Parallel()
		ev := storedErrorHistory(base, []ledger.Event{at(5*time.Minute, LookupResult{State: LookupNotFound, Lag: 10 * time.Minute}, nil), at(11*time.Minute, LookupResult{State: LookupNotFound, Lag: 10 * time.Minute}, nil)}, end)
		require.Equal(t, 1, ev.NotFound)
	})
}

package ledgerdriver_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// The Apply functions are pure: every case builds an operation by hand,
// applies one call and checks the result field by field.

var (
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now   = t0.Add(time.Hour)
	until = now.Add(5 * time.Minute)
)

const (
	owner  = "worker-a"
	other  = "worker-b"
	keyTTL = 24 * time.Hour
)

func newOp() ledger.NewOperation {
	return ledger.NewOperation{
		ID:          "op-1",
		Key:         "op-1",
		Provider:    "stripe",
		Kind:        "charge",
		References:  []string{"order", "42"},
		Fingerprint: "fp-1",
		Request:     []byte(`{"amount":1000}`),
		KeyTTL:      keyTTL,
	}
}

// stored is op-1 as a store would read it back in status st: one attempt
// started at t0 under its key (except when pending), leased by owner until
// after now (except when final).
func stored(st ledger.Status) ledger.Operation {
	op := ledgerdriver.ApplyCreate(newOp(), t0)
	op.Status = st
	op.UpdatedAt = t0.Add(time.Second)
	if st != ledger.StatusPending {
		op.Attempts = 1
		op.WindowStart = t0
		op.KeyExpiresAt = t0.Add(keyTTL)
	}
	switch st {
	case ledger.StatusSucceeded, ledger.StatusFailed:
		op.NextCheckAt = time.Time{}
		op.FinishedAt = t0.Add(time.Second)
	default:
		op.LeaseOwner, op.LeaseExpiresAt = owner, now.Add(time.Minute)
		op.NextCheckAt = op.LeaseExpiresAt
	}
	if st == ledger.StatusManualReview {
		op.ReviewReason, op.ReviewAt = "window passed", t0.Add(time.Second)
	}
	return op
}

func with(op ledger.Operation, change func(*ledger.Operation)) ledger.Operation {
	change(&op)
	return op
}

// attempt1 is the recorded, unfinished attempt of stored(in_flight).
func attempt1() *ledger.Attempt {
	return &ledger.Attempt{OperationID: "op-1", Number: 1, Key: "op-1", StartedAt: t0, MayHaveReached: true}
}

func requireNoLease(t *testing.T, op ledger.Operation) {
	t.Helper()
	require.Empty(t, op.LeaseOwner)
	require.True(t, op.LeaseExpiresAt.IsZero(), "LeaseExpiresAt %v", op.LeaseExpiresAt)
}

func requireLease(t *testing.T, op ledger.Operation, who string, until time.Time) {
	t.Helper()
	require.Equal(t, who, op.LeaseOwner)
	require.Equal(t, until, op.LeaseExpiresAt)
	require.Equal(t, until, op.NextCheckAt, "due again when the lease ends")
}

func TestApplyCreate(t *testing.T) {
	n := newOp()
	// A local, nanosecond time: stored as UTC microseconds.
	at := time.Date(2026, 3, 1, 13, 0, 0, 123456789, time.FixedZone("CET", 3600))
	got := ledgerdriver.ApplyCreate(n, at)
	want := ledger.Operation{
		ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", References: []string{"order", "42"},
		Fingerprint: "fp-1", Request: []byte(`{"amount":1000}`), Status: ledger.StatusPending, KeyTTL: keyTTL,
		NextCheckAt: ledgerdriver.UTC(at), CreatedAt: ledgerdriver.UTC(at), UpdatedAt: ledgerdriver.UTC(at),
	}
	require.Equal(t, want, got)
	require.Equal(t, time.UTC, got.CreatedAt.Location())
	require.Equal(t, 123456000, got.CreatedAt.Nanosecond())

	// The record does not share the caller's slices.
	n.References[0], n.Request[0] = "changed", 'X'
	require.Equal(t, []string{"order", "42"}, got.References)
	require.Equal(t, `{"amount":1000}`, string(got.Request))
}

func TestCheckFingerprint(t *testing.T) {
	op := stored(ledger.StatusPending)
	require.NoError(t, ledgerdriver.CheckFingerprint(op, "fp-1"))
	err := ledgerdriver.CheckFingerprint(op, "fp-2")
	require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
	require.ErrorContains(t, err, "fp-2")
}

func TestValidateCreate(t *testing.T) {
	require.NoError(t, ledgerdriver.ValidateCreate(newOp(), now))
	err := ledgerdriver.ValidateCreate(newOp(), time.Time{})
	var ve *ledger.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "now", ve.Field)
	bad := newOp()
	bad.Fingerprint = ""
	require.ErrorIs(t, ledgerdriver.ValidateCreate(bad, now), ledger.ErrInvalid)
}

func TestApplyBegin(t *testing.T) {
	begin := func(start bool) ledger.BeginParams {
		return ledger.BeginParams{Op: newOp(), Owner: owner, Now: now, LeaseUntil: until, StartAttempt: start}
	}
	claimed := func(t *testing.T, before ledger.Operation, res ledger.BeginResult, status ledger.Status) {
		t.Helper()
		require.True(t, res.Claimed)
		require.False(t, res.Created, "the store sets Created")
		require.Equal(t, status, res.Op.Status)
		requireLease(t, res.Op, owner, until)
		require.Equal(t, now, res.Op.UpdatedAt)
		require.Equal(t, before.Attempts+btoi(res.Attempt != nil), res.Op.Attempts)
	}
	// claims is the check of a Begin that succeeds and claims the operation
	// into status, then runs then (when not nil) for what else a case checks.
	claims := func(status ledger.Status, then func(t *testing.T, before ledger.Operation, res ledger.BeginResult)) func(t *testing.T, before ledger.Operation, res ledger.BeginResult, err error) {
		return func(t *testing.T, before ledger.Operation, res ledger.BeginResult, err error) {
			require.NoError(t, err)
			claimed(t, before, res, status)
			if then != nil {
				then(t, before, res)
			}
		}
	}
	// The same call with another request: refused before anything else,
	// with nothing returned.
	otherFingerprint := begin(true)
	otherFingerprint.Op.Fingerprint = "fp-other"
	refusedMismatch := func(t *testing.T, _ ledger.Operation, res ledger.BeginResult, err error) {
		require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
		require.Equal(t, ledger.BeginResult{}, res)
	}
	for _, c := range []struct {
		name  string
		op    ledger.Operation
		p     ledger.BeginParams
		check func(t *testing.T, before ledger.Operation, res ledger.BeginResult, err error)
	}{
		{"new operation, no attempt asked", ledgerdriver.ApplyCreate(newOp(), now), begin(false),
			claims(ledger.StatusPending, func(t *testing.T, before ledger.Operation, res ledger.BeginResult) {
				require.Nil(t, res.Attempt)
				require.True(t, res.Op.WindowStart.IsZero(), "nothing sent: the window stays closed")
			})},
		{"new operation, attempt started", ledgerdriver.ApplyCreate(newOp(), now), begin(true),
			claims(ledger.StatusInFlight, func(t *testing.T, before ledger.Operation, res ledger.BeginResult) {
				require.Equal(t, &ledger.Attempt{OperationID: "op-1", Number: 1, Key: "op-1", StartedAt: now, MayHaveReached: true}, res.Attempt)
				require.Equal(t, now, res.Op.WindowStart, "the window opens at the first attempt")
				require.Equal(t, now.Add(keyTTL), res.Op.KeyExpiresAt)
			})},
		{"fingerprint mismatch", stored(ledger.StatusPending), otherFingerprint, refusedMismatch},
		{"fingerprint checked before the terminal replay", stored(ledger.StatusSucceeded), otherFingerprint, refusedMismatch},
		{"live lease of another owner", with(stored(ledger.StatusPending), func(op *ledger.Operation) { op.LeaseOwner = other }), begin(true),
			func(t *testing.T, before ledger.Operation, res ledger.BeginResult, err error) {
				require.ErrorIs(t, err, ledger.ErrInProgress)
				require.Equal(t, ledger.BeginResult{Op: before}, res, "the operation as recorded: who holds it")
			}},
		{"lease of another owner ending now", with(stored(ledger.StatusPending), func(op *ledger.Operation) {
			op.LeaseOwner, op.LeaseExpiresAt = other, now
		}), begin(true),
			func(t *testing.T, before ledger.Operation, res ledger.BeginResult, err error) {
				require.NoError(t, err, "a lease is live only before its expiry")
				claimed(t, before, res, ledger.StatusInFlight)
			}},
		{"expired lease of another owner", with(stored(ledger.StatusPending), func(op *ledger.Operation) {
			op.LeaseOwner, op.LeaseExpiresAt = other, now.Add(-time.Second)
		}), begin(false),
			claims(ledger.StatusPending, nil)},
		{"own live lease (reentrant)", stored(ledger.StatusPending), begin(true),
			claims(ledger.StatusInFlight, func(t *testing.T, before ledger.Operation, res ledger.BeginResult) {
				require.Equal(t, 1, res.Attempt.Number)
			})},
		{"own in_flight becomes unknown, no attempt", stored(ledger.StatusInFlight), begin(true),
			claims(ledger.StatusUnknown, func(t *testing.T, before ledger.Operation, res ledger.BeginResult) {
				require.Nil(t, res.Attempt, "the attempt may have been sent: look it up first")
				require.Equal(t, before.WindowStart, res.Op.WindowStart)
			})},
		{"expired in_flight of another owner becomes unknown", with(stored(ledger.StatusInFlight), func(op *ledger.Operation) {
			op.LeaseOwner, op.LeaseExpiresAt = other, now.Add(-time.Second)
		}), begin(true),
			claims(ledger.StatusUnknown, func(t *testing.T, before ledger.Operation, res ledger.BeginResult) {
				require.Nil(t, res.Attempt)
			})},
		{"unknown is claimed without an attempt", stored(ledger.StatusUnknown), begin(true),
			claims(ledger.StatusUnknown, func(t *testing.T, before ledger.Operation, res ledger.BeginResult) {
				require.Nil(t, res.Attempt)
			})},
		{"pending with an open window keeps it", with(stored(ledger.StatusPending), func(op *ledger.Operation) {
			op.Attempts, op.WindowStart, op.KeyExpiresAt = 1, t0, t0.Add(keyTTL)
		}), begin(true),
			claims(ledger.StatusInFlight, func(t *testing.T, before ledger.Operation, res ledger.BeginResult) {
				require.Equal(t, 2, res.Attempt.Number)
				require.Equal(t, t0, res.Op.WindowStart, "the window opened at the first attempt that may have reached")
				require.Equal(t, t0.Add(keyTTL), res.Op.KeyExpiresAt)
			})},
		{"the ledger's key wins after a resend", with(stored(ledger.StatusPending), func(op *ledger.Operation) {
			op.Key, op.Generation, op.Attempts = "op-1-g1", 1, 1
		}), begin(true),
			func(t *testing.T, before ledger.Operation, res ledger.BeginResult, err error) {
				require.NoError(t, err)
				require.Equal(t, "op-1-g1", res.Attempt.Key)
				require.Equal(t, "op-1-g1", res.Op.Key)
				require.Equal(t, 1, res.Op.Generation)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.op
			res, err := ledgerdriver.ApplyBegin(c.op, c.p)
			c.check(t, before, res, err)
			require.Equal(t, before, c.op, "the operation passed in is not modified")
		})
	}

	// Terminal operations answer with the recorded result, whoever holds a
	// lease on them (a manual_review one may be under read-only lookups).
	for _, st := range []ledger.Status{ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview} {
		t.Run("terminal "+string(st), func(t *testing.T) {
			op := stored(st)
			if st == ledger.StatusManualReview {
				op.LeaseOwner = other
			}
			res, err := ledgerdriver.ApplyBegin(op, begin(true))
			require.NoError(t, err)
			require.Equal(t, ledger.BeginResult{Op: op}, res, "not claimed, nothing to write")
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestApplyClaim(t *testing.T) {
	p := ledger.ClaimParams{ID: "op-1", Owner: owner, Now: now, LeaseUntil: until}
	for _, c := range []struct {
		name    string
		op      ledger.Operation
		want    error
		wantNow ledger.Status // status after a successful claim
	}{
		{"pending", stored(ledger.StatusPending), nil, ledger.StatusPending},
		{"unknown", stored(ledger.StatusUnknown), nil, ledger.StatusUnknown},
		{"own in_flight becomes unknown", stored(ledger.StatusInFlight), nil, ledger.StatusUnknown},
		{"succeeded", stored(ledger.StatusSucceeded), ledger.ErrTerminal, ""},
		{"failed", stored(ledger.StatusFailed), ledger.ErrTerminal, ""},
		{"manual_review", stored(ledger.StatusManualReview), ledger.ErrTerminal, ""},
		{"no lease", with(stored(ledger.StatusPending), func(op *ledger.Operation) { op.LeaseOwner, op.LeaseExpiresAt = "", time.Time{} }), nil, ledger.StatusPending},
		{"live lease of another owner", with(stored(ledger.StatusPending), func(op *ledger.Operation) { op.LeaseOwner = other }), ledger.ErrInProgress, ""},
		{"live in_flight of another owner", with(stored(ledger.StatusInFlight), func(op *ledger.Operation) { op.LeaseOwner = other }), ledger.ErrInProgress, ""},
		{"lease of another owner ending now", with(stored(ledger.StatusPending), func(op *ledger.Operation) { op.LeaseOwner, op.LeaseExpiresAt = other, now }), nil, ledger.StatusPending},
		{"expired in_flight of another owner becomes unknown", with(stored(ledger.StatusInFlight), func(op *ledger.Operation) {
			op.LeaseOwner, op.LeaseExpiresAt = other, now.Add(-time.Second)
		}), nil, ledger.StatusUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.op
			got, _ := applyChecked(t, c.op, c.want, func(op ledger.Operation) (ledger.Operation, error) { return ledgerdriver.ApplyClaim(op, p) })
			if c.want != nil {
				return
			}
			require.Equal(t, c.wantNow, got.Status)
			requireLease(t, got, owner, until)
			require.Equal(t, now, got.UpdatedAt)
			// Nothing else changes.
			got.Status, got.LeaseOwner, got.LeaseExpiresAt, got.NextCheckAt, got.UpdatedAt = before.Status, before.LeaseOwner, before.LeaseExpiresAt, before.NextCheckAt, before.UpdatedAt
			require.Equal(t, before, got)
		})
	}
}

func TestApplyStartAttempt(t *testing.T) {
	p := ledger.StartAttemptParams{ID: "op-1", Owner: owner, Now: now, LeaseUntil: until}
	for _, c := range []struct {
		name string
		op   ledger.Operation
		want error
	}{
		{"pending", stored(ledger.StatusPending), nil},
		{"unknown", stored(ledger.StatusUnknown), nil},
		{"own expired lease nobody took", with(stored(ledger.StatusPending), func(op *ledger.Operation) { op.LeaseExpiresAt = now.Add(-time.Hour) }), nil},
		{"lease of another owner", with(stored(ledger.StatusPending), func(op *ledger.Operation) { op.LeaseOwner = other }), ledger.ErrLeaseLost},
		{"expired lease of another owner", with(stored(ledger.StatusPending), func(op *ledger.Operation) {
			op.LeaseOwner, op.LeaseExpiresAt = other, now.Add(-time.Hour)
		}), ledger.ErrLeaseLost},
		{"no lease", with(stored(ledger.StatusPending), func(op *ledger.Operation) { op.LeaseOwner, op.LeaseExpiresAt = "", time.Time{} }), ledger.ErrLeaseLost},
		{"in_flight", stored(ledger.StatusInFlight), ledger.ErrStateConflict},
		{"manual_review", stored(ledger.StatusManualReview), ledger.ErrStateConflict},
		{"succeeded", with(stored(ledger.StatusSucceeded), func(op *ledger.Operation) { op.LeaseOwner = owner }), ledger.ErrStateConflict},
		{"failed", with(stored(ledger.StatusFailed), func(op *ledger.Operation) { op.LeaseOwner = owner }), ledger.ErrStateConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.op
			ch, _ := applyChecked(t, c.op, c.want, func(op ledger.Operation) (ledgerdriver.Change, error) { return ledgerdriver.ApplyStartAttempt(op, p) })
			if c.want != nil {
				return
			}
			require.Equal(t, ledger.StatusInFlight, ch.Op.Status)
			require.Equal(t, before.Attempts+1, ch.Op.Attempts)
			require.Equal(t, &ledger.Attempt{OperationID: "op-1", Number: before.Attempts + 1, Key: before.Key, StartedAt: now, MayHaveReached: true}, ch.Attempt)
			requireLease(t, ch.Op, owner, until)
			if before.WindowStart.IsZero() {
				require.Equal(t, now, ch.Op.WindowStart, "the window opens at the first attempt that may reach the provider")
			} else {
				require.Equal(t, before.WindowStart, ch.Op.WindowStart, "an open window stays where it opened")
			}
			require.Equal(t, ch.Op.WindowStart.Add(keyTTL), ch.Op.KeyExpiresAt)
			require.Empty(t, ch.Events)
		})
	}

	t.Run("events default to the lease owner", func(t *testing.T) {
		p := p
		p.Events = []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: `{"found":false}`}, {Kind: ledger.EventNote, Actor: "scheduler", Detail: "resend"}}
		ch, err := ledgerdriver.ApplyStartAttempt(stored(ledger.StatusUnknown), p)
		require.NoError(t, err)
		require.Equal(t, []ledger.NewEvent{
			{Kind: ledger.EventLookup, Actor: owner, Detail: `{"found":false}`},
			{Kind: ledger.EventNote, Actor: "scheduler", Detail: "resend"},
		}, ch.Events)
		require.Empty(t, p.Events[0].Actor, "the caller's events are not modified")
	})
	t.Run("times are UTC microseconds", func(t *testing.T) {
		p := p
		p.Now = now.In(time.FixedZone("X", -7200)).Add(999)
		p.LeaseUntil = until.In(time.FixedZone("X", -7200)).Add(999)
		ch, err := ledgerdriver.ApplyStartAttempt(stored(ledger.StatusPending), p)
		require.NoError(t, err)
		require.Equal(t, now, ch.Op.WindowStart)
		require.Equal(t, now, ch.Attempt.StartedAt)
		require.Equal(t, until, ch.Op.LeaseExpiresAt)
	})
}

// finishFrom is the Finish call that moves stored(from) to to, with what
// Validate requires.
func finishFrom(from, to ledger.Status) ledger.FinishParams {
	p := ledger.FinishParams{ID: "op-1", Owner: owner, Now: now, From: from, To: to}
	if from == ledger.StatusInFlight {
		p.Attempt = &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeMaybeSent}
		if to == ledger.StatusPending {
			// The only attempt proven never to have left: back to pending.
			p.Attempt.Class = ledger.OutcomeNotSent
		}
	}
	if to == ledger.StatusManualReview {
		p.ReviewReason = "lookup inconclusive"
	}
	return p
}

func TestApplyFinishTransitions(t *testing.T) {
	for _, from := range ledger.Statuses {
		for _, to := range ledger.Statuses {
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
				op := stored(from)
				op.LeaseOwner = owner // final states too: the lease is not what refuses them
				p := finishFrom(from, to)
				ch, err := ledgerdriver.ApplyFinish(op, p, attempt1(), time.Time{})
				if ledgerdriver.CheckTransition(from, to) != nil {
					require.ErrorIs(t, err, ledger.ErrStateConflict)
					require.Equal(t, ledgerdriver.Change{}, ch)
					return
				}
				require.NoError(t, err)
				require.Equal(t, to, ch.Op.Status)
				require.Equal(t, now, ch.Op.UpdatedAt)
				requireNoLease(t, ch.Op)
				require.Equal(t, op.Attempts, ch.Op.Attempts, "only StartAttempt counts attempts")
				require.Equal(t, from == ledger.StatusInFlight, ch.Attempt != nil)
			})
		}
	}
	// Exactly the moves the Store documents.
	legal := map[ledger.Status][]ledger.Status{
		ledger.StatusInFlight:     {ledger.StatusPending, ledger.StatusUnknown, ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview},
		ledger.StatusPending:      {ledger.StatusPending, ledger.StatusFailed, ledger.StatusManualReview},
		ledger.StatusUnknown:      {ledger.StatusUnknown, ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview},
		ledger.StatusManualReview: {ledger.StatusManualReview, ledger.StatusSucceeded, ledger.StatusFailed},
	}
	for _, from := range ledger.Statuses {
		for _, to := range ledger.Statuses {
			want := false
			for _, l := range legal[from] {
				want = want || l == to
			}
			require.Equal(t, want, ledgerdriver.CheckTransition(from, to) == nil, "%s -> %s", from, to)
		}
	}
}

func TestApplyFinishPreconditions(t *testing.T) {
	inFlight := stored(ledger.StatusInFlight)
	finished := attempt1()
	finished.FinishedAt, finished.Outcome = t0.Add(time.Second), ledger.OutcomeMaybeSent
	for _, c := range []struct {
		name     string
		op       ledger.Operation
		p        ledger.FinishParams
		recorded *ledger.Attempt
		want     error
	}{
		{"lease taken by another owner", with(inFlight, func(op *ledger.Operation) { op.LeaseOwner = other }), finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded), attempt1(), ledger.ErrLeaseLost},
		{"no lease", with(inFlight, func(op *ledger.Operation) { op.LeaseOwner, op.LeaseExpiresAt = "", time.Time{} }), finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded), attempt1(), ledger.ErrLeaseLost},
		{"status is not From", stored(ledger.StatusUnknown), finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded), attempt1(), ledger.ErrStateConflict},
		{"From is stale though the move would be legal", stored(ledger.StatusPending), finishFrom(ledger.StatusUnknown, ledger.StatusFailed), nil, ledger.ErrStateConflict},
		{"earlier attempt", with(inFlight, func(op *ledger.Operation) { op.Attempts = 2 }), finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded), attempt1(), ledger.ErrStateConflict},
		{"later attempt", inFlight, func() ledger.FinishParams {
			p := finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded)
			p.Attempt.Number = 2
			return p
		}(), nil, ledger.ErrStateConflict},
		{"latest attempt counted but not recorded", inFlight, finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded), nil, ledger.ErrCorrupt},
		{"attempt already finished", inFlight, finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded), finished, ledger.ErrStateConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			applyChecked(t, c.op, c.want, func(op ledger.Operation) (ledgerdriver.Change, error) {
				return ledgerdriver.ApplyFinish(op, c.p, c.recorded, time.Time{})
			})
		})
	}
	t.Run("own expired lease nobody took", func(t *testing.T) {
		op := with(inFlight, func(op *ledger.Operation) { op.LeaseExpiresAt = now.Add(-time.Hour) })
		_, err := ledgerdriver.ApplyFinish(op, finishFrom(ledger.StatusInFlight, ledger.StatusSucceeded), attempt1(), time.Time{})
		require.NoError(t, err)
	})
}

func TestApplyFinishAttempt(t *testing.T) {
	for _, replayed := range []bool{false, true} {
		t.Run(fmt.Sprintf("replayed=%v", replayed), func(t *testing.T) {
			p := finishFrom(ledger.StatusInFlight, ledger.StatusFailed)
			p.Attempt = &ledger.AttemptOutcome{Number: 1, Class: ledger.OutcomeRefused, HTTPStatus: 402, ProviderRequestID: "req_1", Error: "card_declined", Replayed: replayed}
			rec := attempt1()
			ch, err := ledgerdriver.ApplyFinish(stored(ledger.StatusInFlight), p, rec, time.Time{})
			require.NoError(t, err)
			require.Equal(t, &ledger.Attempt{
				OperationID: "op-1", Number: 1, Key: "op-1", StartedAt: t0, FinishedAt: now, MayHaveReached: true,
				Outcome: ledger.OutcomeRefused, HTTPStatus: 402, ProviderRequestID: "req_1", Error: "card_declined", Replayed: replayed,
			}, ch.Attempt)
			require.Equal(t, attempt1(), rec, "the recorded attempt passed in is not modified")
		})
	}
}

// The key window recomputation when an attempt finishes: only not_sent
// moves it, to where the other attempts under the current key put it.
func TestApplyFinishKeyWindow(t *testing.T) {
	second := t0.Add(time.Minute)
	// Two attempts under the key: the window opened at the first one (t0).
	twoAttempts := with(stored(ledger.StatusInFlight), func(op *ledger.Operation) { op.Attempts = 2 })
	rec2 := &ledger.Attempt{OperationID: "op-1", Number: 2, Key: "op-1", StartedAt: second, MayHaveReached: true}
	for _, class := range ledger.OutcomeClasses {
		for _, c := range []struct {
			name   string
			others time.Time // the earliest other attempt under the key that may have reached
			want   time.Time // WindowStart when class is not_sent
		}{
			{"no other attempt", time.Time{}, time.Time{}},
			{"another attempt may have reached", t0, t0},
			{"another attempt, local time", t0.In(time.FixedZone("X", 3600)).Add(500), t0},
		} {
			t.Run(string(class)+"/"+c.name, func(t *testing.T) {
				p := finishFrom(ledger.StatusInFlight, ledger.StatusUnknown)
				p.Attempt = &ledger.AttemptOutcome{Number: 2, Class: class}
				ch, err := ledgerdriver.ApplyFinish(twoAttempts, p, rec2, c.others)
				require.NoError(t, err)
				require.Equal(t, class.MayHaveReached(), ch.Attempt.MayHaveReached)
				if class.MayHaveReached() {
					require.Equal(t, t0, ch.Op.WindowStart, "an attempt that may have reached keeps the window")
					require.Equal(t, t0.Add(keyTTL), ch.Op.KeyExpiresAt)
					return
				}
				require.Equal(t, c.want, ch.Op.WindowStart)
				if c.want.IsZero() {
					require.True(t, ch.Op.KeyExpiresAt.IsZero(), "a closed window has no expiry")
				} else {
					require.Equal(t, c.want.Add(keyTTL), ch.Op.KeyExpiresAt)
				}
			})
		}
	}
	t.Run("ignored without an attempt", func(t *testing.T) {
		ch, err := ledgerdriver.ApplyFinish(stored(ledger.StatusUnknown), finishFrom(ledger.StatusUnknown, ledger.StatusUnknown), nil, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Equal(t, t0, ch.Op.WindowStart)
		require.Nil(t, ch.Attempt)
	})
}

func TestApplyFinishNextCheckAt(t *testing.T) {
	later := now.Add(10 * time.Minute)
	for _, c := range []struct {
		from, to ledger.Status
		next     time.Time
		want     time.Time
	}{
		{ledger.StatusInFlight, ledger.StatusPending, time.Time{}, now},
		{ledger.StatusInFlight, ledger.StatusPending, later, later},
		{ledger.StatusInFlight, ledger.StatusUnknown, time.Time{}, now},
		{ledger.StatusUnknown, ledger.StatusUnknown, later, later},
		{ledger.StatusInFlight, ledger.StatusManualReview, time.Time{}, time.Time{}},
		{ledger.StatusUnknown, ledger.StatusManualReview, later, later},
		{ledger.StatusInFlight, ledger.StatusSucceeded, later, time.Time{}},
		{ledger.StatusUnknown, ledger.StatusFailed, later, time.Time{}},
		{ledger.StatusManualReview, ledger.StatusSucceeded, later, time.Time{}},
	} {
		t.Run(fmt.Sprintf("%s_to_%s_next_%v", c.from, c.to, !c.next.IsZero()), func(t *testing.T) {
			op := stored(c.from)
			p := finishFrom(c.from, c.to)
			p.NextCheckAt = c.next
			ch, err := ledgerdriver.ApplyFinish(op, p, attempt1(), time.Time{})
			require.NoError(t, err)
			require.Equal(t, c.want, ch.Op.NextCheckAt)
			if c.to.Final() {
				require.Equal(t, now, ch.Op.FinishedAt)
			} else {
				require.True(t, ch.Op.FinishedAt.IsZero())
			}
		})
	}
}

func TestApplyFinishReview(t *testing.T) {
	entered := t0.Add(time.Second)
	for _, c := range []struct {
		name       string
		op         ledger.Operation
		p          ledger.FinishParams
		wantAt     time.Time
		wantReason string
	}{
		{"entering review", stored(ledger.StatusInFlight), finishFrom(ledger.StatusInFlight, ledger.StatusManualReview), now, "lookup inconclusive"},
		{"entering review again after a resend", with(stored(ledger.StatusUnknown), func(op *ledger.Operation) {
			op.ReviewReason, op.ReviewAt = "earlier review", t0
		}), finishFrom(ledger.StatusUnknown, ledger.StatusManualReview), now, "lookup inconclusive"},
		{"staying in review keeps when it entered", stored(ledger.StatusManualReview), finishFrom(ledger.StatusManualReview, ledger.StatusManualReview), entered, "lookup inconclusive"},
		{"staying in review without a recorded entry", with(stored(ledger.StatusManualReview), func(op *ledger.Operation) { op.ReviewAt = time.Time{} }),
			finishFrom(ledger.StatusManualReview, ledger.StatusManualReview), now, "lookup inconclusive"},
		{"leaving review keeps its history", stored(ledger.StatusManualReview), finishFrom(ledger.StatusManualReview, ledger.StatusSucceeded), entered, "window passed"},
		{"failing keeps an earlier review's history", with(stored(ledger.StatusUnknown), func(op *ledger.Operation) {
			op.ReviewReason, op.ReviewAt = "earlier review", t0
		}), finishFrom(ledger.StatusUnknown, ledger.StatusFailed), t0, "earlier review"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, err := ledgerdriver.ApplyFinish(c.op, c.p, attempt1(), time.Time{})
			require.NoError(t, err)
			require.Equal(t, c.wantAt, ch.Op.ReviewAt)
			require.Equal(t, c.wantReason, ch.Op.ReviewReason)
		})
	}
}

func TestApplyFinishLease(t *testing.T) {
	for _, to := range []ledger.Status{ledger.StatusPending, ledger.StatusUnknown, ledger.StatusManualReview, ledger.StatusSucceeded, ledger.StatusFailed} {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s_keep_%v", to, keep), func(t *testing.T) {
				op := stored(ledger.StatusInFlight)
				p := finishFrom(ledger.StatusInFlight, to)
				p.KeepLease = keep
				ch, err := ledgerdriver.ApplyFinish(op, p, attempt1(), time.Time{})
				require.NoError(t, err)
				if keep && !to.Terminal() {
					require.Equal(t, owner, ch.Op.LeaseOwner)
					require.Equal(t, op.LeaseExpiresAt, ch.Op.LeaseExpiresAt)
					return
				}
				requireNoLease(t, ch.Op)
			})
		}
	}
}

func TestApplyFinishRecordsResult(t *testing.T) {
	op := with(stored(ledger.StatusUnknown), func(op *ledger.Operation) {
		op.ProviderRef, op.Result = "pi_old", []byte(`{"old":true}`)
	})
	t.Run("empty values keep what is recorded", func(t *testing.T) {
		ch, err := ledgerdriver.ApplyFinish(op, finishFrom(ledger.StatusUnknown, ledger.StatusUnknown), nil, time.Time{})
		require.NoError(t, err)
		require.Equal(t, "pi_old", ch.Op.ProviderRef)
		require.Equal(t, `{"old":true}`, string(ch.Op.Result))
		require.Nil(t, ch.Op.Resolution)
		require.Empty(t, ch.Events)
	})
	t.Run("set values replace it", func(t *testing.T) {
		p := finishFrom(ledger.StatusUnknown, ledger.StatusSucceeded)
		p.ProviderRef, p.Result = "pi_new", []byte(`{"new":true}`)
		ch, err := ledgerdriver.ApplyFinish(op, p, nil, time.Time{})
		require.NoError(t, err)
		require.Equal(t, "pi_new", ch.Op.ProviderRef)
		require.Equal(t, `{"new":true}`, string(ch.Op.Result))
		p.Result[1] = 'X'
		require.Equal(t, `{"new":true}`, string(ch.Op.Result), "the result does not share the caller's slice")
		require.Equal(t, `{"old":true}`, string(op.Result), "the operation passed in is not modified")
	})
}

func TestApplyFinishEvents(t *testing.T) {
	op := stored(ledger.StatusManualReview)
	p := finishFrom(ledger.StatusManualReview, ledger.StatusSucceeded)
	p.ProviderRef = "pi_found"
	p.Events = []ledger.NewEvent{{Kind: ledger.EventLookup, Detail: `{"status":"succeeded"}`}, {Kind: ledger.EventNote, Actor: "scheduler"}}
	p.Resolution = &ledger.Resolution{Actor: "reconciler", Note: `found <after> the window & "late"`, Outcome: ledger.ResolveSucceeded}

	ch, err := ledgerdriver.ApplyFinish(op, p, nil, time.Time{})
	require.NoError(t, err)
	require.Equal(t, &ledger.Resolution{Actor: "reconciler", Note: p.Resolution.Note, Outcome: ledger.ResolveSucceeded, At: now}, ch.Op.Resolution, "At defaults to Now")
	require.Equal(t, []ledger.NewEvent{
		{Kind: ledger.EventLookup, Actor: owner, Detail: `{"status":"succeeded"}`},
		{Kind: ledger.EventNote, Actor: "scheduler"},
		{Kind: ledger.EventResolution, Actor: "reconciler", Detail: `{"outcome":"succeeded","note":"found <after> the window & \"late\"","provider_ref":"pi_found"}`},
	}, ch.Events, "the caller's events, then the resolution")

	p.Resolution.At = t0.In(time.FixedZone("X", 3600)).Add(1)
	ch, err = ledgerdriver.ApplyFinish(op, p, nil, time.Time{})
	require.NoError(t, err)
	require.Equal(t, t0, ch.Op.Resolution.At, "a given At is kept, as UTC microseconds")
}

func TestApplyResolveNotInReview(t *testing.T) {
	for _, st := range []ledger.Status{ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown, ledger.StatusSucceeded, ledger.StatusFailed} {
		for _, outcome := range []ledger.ResolutionOutcome{ledger.ResolveSucceeded, ledger.ResolveFailed, ledger.ResolveResend} {
			t.Run(string(st)+"/"+string(outcome), func(t *testing.T) {
				p := ledger.ResolveParams{ID: "op-1", Actor: "alice", Note: "n", Outcome: outcome, ProviderRef: "pi_x", NewKey: "op-1-g1", NewGeneration: 1, Now: now}
				ch, err := ledgerdriver.ApplyResolve(stored(st), p)
				require.ErrorIs(t, err, ledger.ErrNotInReview)
				require.Equal(t, ledgerdriver.Change{}, ch)
			})
		}
	}
}

func TestApplyResolve(t *testing.T) {
	// In review under a lease for read-only lookups, with a provider reference seen earlier.
	review := with(stored(ledger.StatusManualReview), func(op *ledger.Operation) { op.ProviderRef = "pi_seen" })
	for _, c := range []struct {
		name       string
		p          ledger.ResolveParams
		wantStatus ledger.Status
		wantRef    string
		wantDetail string
	}{
		{"succeeded", ledger.ResolveParams{Outcome: ledger.ResolveSucceeded, ProviderRef: "pi_manual"}, ledger.StatusSucceeded, "pi_manual",
			`{"outcome":"succeeded","note":"checked the dashboard","provider_ref":"pi_manual"}`},
		{"failed", ledger.ResolveParams{Outcome: ledger.ResolveFailed}, ledger.StatusFailed, "pi_seen",
			`{"outcome":"failed","note":"checked the dashboard"}`},
		{"failed with a reference", ledger.ResolveParams{Outcome: ledger.ResolveFailed, ProviderRef: "pi_declined"}, ledger.StatusFailed, "pi_declined",
			`{"outcome":"failed","note":"checked the dashboard","provider_ref":"pi_declined"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			p.ID, p.Actor, p.Note, p.Now = "op-1", "alice", "checked the dashboard", now
			before := review
			ch, err := ledgerdriver.ApplyResolve(review, p)
			require.NoError(t, err)
			require.Equal(t, before, review, "the operation passed in is not modified")
			op := ch.Op
			require.Equal(t, c.wantStatus, op.Status)
			require.Equal(t, c.wantRef, op.ProviderRef)
			require.Equal(t, now, op.FinishedAt)
			require.True(t, op.NextCheckAt.IsZero(), "final: no background work")
			require.Equal(t, review.Key, op.Key)
			require.Equal(t, review.Generation, op.Generation)
			require.Equal(t, review.WindowStart, op.WindowStart)
			require.Equal(t, review.ReviewReason, op.ReviewReason, "the review stays as history")
			require.Equal(t, review.ReviewAt, op.ReviewAt, "the review stays as history")
			require.Equal(t, &ledger.Resolution{Actor: "alice", Note: "checked the dashboard", Outcome: p.Outcome, At: now}, op.Resolution)
			requireNoLease(t, op)
			require.Equal(t, now, op.UpdatedAt)
			require.Nil(t, ch.Attempt)
			require.Equal(t, []ledger.NewEvent{{Kind: ledger.EventResolution, Actor: "alice", Detail: c.wantDetail}}, ch.Events)
		})
	}
}

func TestApplyResolveResend(t *testing.T) {
	resend := func(gen int, key string) ledger.ResolveParams {
		return ledger.ResolveParams{ID: "op-1", Actor: "alice", Note: "never arrived", Outcome: ledger.ResolveResend, NewKey: key, NewGeneration: gen, Now: now}
	}
	atGen1 := with(stored(ledger.StatusManualReview), func(op *ledger.Operation) { op.Key, op.Generation, op.Attempts = "op-1-g1", 1, 2 })
	// What a lookup attached while the operation was in review: the object
	// the operator judged not to be this operation's outcome.
	seen := with(stored(ledger.StatusManualReview), func(op *ledger.Operation) {
		op.ProviderRef, op.Result = "pi_seen", []byte(`{"status":"requires_payment_method"}`)
	})
	for _, c := range []struct {
		name  string
		op    ledger.Operation
		p     ledger.ResolveParams
		want  error
		field string // of the ValidationError
	}{
		{"next generation", stored(ledger.StatusManualReview), resend(1, "op-1-g1"), nil, ""},
		{"next generation after a reference was seen", seen, resend(1, "op-1-g1"), nil, ""},
		{"next generation from 1", atGen1, resend(2, "op-1-g2"), nil, ""},
		{"skipping a generation", stored(ledger.StatusManualReview), resend(2, "op-1-g2"), ledger.ErrStateConflict, ""},
		{"repeating the generation", atGen1, resend(1, "op-1-g1b"), ledger.ErrStateConflict, ""},
		{"going back a generation", with(atGen1, func(op *ledger.Operation) { op.Generation = 3 }), resend(2, "op-1-g2"), ledger.ErrStateConflict, ""},
		{"the current key again", stored(ledger.StatusManualReview), resend(1, "op-1"), ledger.ErrInvalid, "NewKey"},
		{"the current key again at generation 1", atGen1, resend(2, "op-1-g1"), ledger.ErrInvalid, "NewKey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := c.op
			ch, err := applyChecked(t, c.op, c.want, func(op ledger.Operation) (ledgerdriver.Change, error) { return ledgerdriver.ApplyResolve(op, c.p) })
			if c.want != nil {
				if c.field != "" {
					var ve *ledger.ValidationError
					require.ErrorAs(t, err, &ve)
					require.Equal(t, c.field, ve.Field)
				}
				return
			}
			op := ch.Op
			require.Equal(t, "op-1", op.ID, "the ID never changes")
			require.Equal(t, c.p.NewKey, op.Key)
			require.Equal(t, c.p.NewGeneration, op.Generation)
			require.Equal(t, ledger.StatusPending, op.Status)
			require.Equal(t, before.Attempts, op.Attempts, "past attempts are kept")
			require.True(t, op.WindowStart.IsZero(), "the new key has never been sent: its window is closed")
			require.True(t, op.KeyExpiresAt.IsZero())
			require.Equal(t, now, op.NextCheckAt, "due at once for background work")
			require.True(t, op.FinishedAt.IsZero())
			require.Empty(t, op.ProviderRef, "the new generation does not inherit the previous one's reference")
			require.Nil(t, op.Result, "nor its result")
			require.Equal(t, before.ReviewReason, op.ReviewReason, "the review stays as history")
			require.Equal(t, before.ReviewAt, op.ReviewAt, "the review stays as history")
			require.Equal(t, &ledger.Resolution{Actor: "alice", Note: "never arrived", Outcome: ledger.ResolveResend, At: now}, op.Resolution)
			requireNoLease(t, op)
			want := fmt.Sprintf(`{"outcome":"resend","note":"never arrived","new_key":%q,"new_generation":%d}`, c.p.NewKey, c.p.NewGeneration)
			if before.ProviderRef != "" {
				// The reference the new generation drops stays in the audit trail.
				want = fmt.Sprintf(`{"outcome":"resend","note":"never arrived","new_key":%q,"new_generation":%d,"previous_provider_ref":%q}`,
					c.p.NewKey, c.p.NewGeneration, before.ProviderRef)
			}
			require.Equal(t, []ledger.NewEvent{{Kind: ledger.EventResolution, Actor: "alice", Detail: want}}, ch.Events)
		})
	}
	t.Run("a resend's provider reference is not recorded", func(t *testing.T) {
		p := resend(1, "op-1-g1")
		p.ProviderRef = "pi_ignored"
		ch, err := ledgerdriver.ApplyResolve(stored(ledger.StatusManualReview), p)
		require.NoError(t, err)
		require.Empty(t, ch.Op.ProviderRef)
		require.NotContains(t, ch.Events[0].Detail, "pi_ignored")
	})
}

func TestResolutionDetail(t *testing.T) {
	for _, c := range []struct {
		d    ledger.ResolutionDetail
		want string
	}{
		{ledger.ResolutionDetail{Outcome: ledger.ResolveFailed, Note: "n"}, `{"outcome":"failed","note":"n"}`},
		{ledger.ResolutionDetail{Outcome: ledger.ResolveSucceeded, Note: "a <b> & c", ProviderRef: "pi_1"}, `{"outcome":"succeeded","note":"a <b> & c","provider_ref":"pi_1"}`},
		{ledger.ResolutionDetail{Outcome: ledger.ResolveResend, Note: "résumé ✓", NewKey: "k-g2", NewGeneration: 2}, `{"outcome":"resend","note":"résumé ✓","new_key":"k-g2","new_generation":2}`},
		{ledger.ResolutionDetail{Outcome: ledger.ResolveResend, Note: "n", NewKey: "k-g1", NewGeneration: 1, PreviousProviderRef: "pi_old"},
			`{"outcome":"resend","note":"n","new_key":"k-g1","new_generation":1,"previous_provider_ref":"pi_old"}`},
	} {
		require.Equal(t, c.want, c.d.String())
		var back ledger.ResolutionDetail
		require.NoError(t, json.Unmarshal([]byte(c.d.String()), &back))
		require.Equal(t, c.d, back, "a Detail decodes back into ResolutionDetail")
	}
}

// Pending means nothing can have been sent. An in_flight operation goes back
// there only when its attempt is proven never to have left and no other
// attempt under its key may have reached the provider.
func TestApplyFinishPendingNeedsAClosedWindow(t *testing.T) {
	twoAttempts := with(stored(ledger.StatusInFlight), func(op *ledger.Operation) { op.Attempts = 2 })
	rec2 := &ledger.Attempt{OperationID: "op-1", Number: 2, Key: "op-1", StartedAt: t0.Add(time.Minute), MayHaveReached: true}
	p := finishFrom(ledger.StatusInFlight, ledger.StatusPending)
	p.Attempt = &ledger.AttemptOutcome{Number: 2, Class: ledger.OutcomeNotSent}

	ch, err := ledgerdriver.ApplyFinish(twoAttempts, p, rec2, time.Time{})
	require.NoError(t, err, "no other attempt may have reached: pending")
	require.Equal(t, ledger.StatusPending, ch.Op.Status)
	require.True(t, ch.Op.WindowStart.IsZero())

	_, err = ledgerdriver.ApplyFinish(twoAttempts, p, rec2, t0)
	require.ErrorIs(t, err, ledger.ErrStateConflict, "attempt 1 may have reached the provider: unknown, not pending")

	for _, class := range ledger.OutcomeClasses {
		if class == ledger.OutcomeNotSent {
			continue
		}
		p.Attempt.Class = class
		_, err := ledgerdriver.ApplyFinish(twoAttempts, p, rec2, time.Time{})
		require.ErrorIs(t, err, ledger.ErrStateConflict, "a %s attempt may have reached the provider", class)
	}
}

// A lease is granted only if it has not already lapsed when the call that
// grants it is about to commit: Now (the caller's clock, read before the
// call) plus the real time the call took must be before LeaseUntil.
func TestCheckLeaseGranted(t *testing.T) {
	lease := 300 * time.Millisecond
	for _, c := range []struct {
		name   string
		waited time.Duration
		ok     bool
	}{
		{"no wait", 0, true},
		{"a short wait", 10 * time.Millisecond, true},
		{"just inside", lease - time.Microsecond, true},
		{"exactly the lease: lapsed at commit", lease, false},
		{"longer than the lease", 2*time.Minute + time.Second + 400*time.Microsecond, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := ledgerdriver.CheckLeaseGranted(`operation "op-1"`, now, now.Add(lease), c.waited)
			if c.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ledger.ErrLeaseLost)
			require.ErrorContains(t, err, `operation "op-1": the lease would have lapsed before it was granted: the write waited `+c.waited.Round(time.Millisecond).String())
		})
	}
}

func TestRequestAmount(t *testing.T) {
	for _, c := range []struct {
		request  string
		amount   int64
		currency string
	}{
		{`{"amount":1000,"currency":"EUR","order":"42"}`, 1000, "EUR"},
		{`{"currency":"usd","amount":-5}`, -5, "usd"},
		{`{"amount":9223372036854775807}`, 9223372036854775807, ""},
		{`{"currency":"JPY"}`, 0, "JPY"},
		{`{"amount":"1000","currency":"EUR"}`, 0, "EUR"},
		{`{"amount":10.5,"currency":978}`, 0, ""},
		{`{"amount":1e3}`, 0, ""},
		{`{"amount":99999999999999999999}`, 0, ""},
		{`{"amount":null,"currency":null}`, 0, ""},
		{`[1000,"EUR"]`, 0, ""},
		{`not json`, 0, ""},
		{``, 0, ""},
	} {
		t.Run(c.request, func(t *testing.T) {
			amount, currency := ledgerdriver.RequestAmount([]byte(c.request))
			require.Equal(t, c.amount, amount)
			require.Equal(t, c.currency, currency)
		})
	}
}

func TestTombstone(t *testing.T) {
	op := with(stored(ledger.StatusSucceeded), func(op *ledger.Operation) {
		op.Request = []byte(`{"amount":1000,"currency":"EUR"}`)
		op.ProviderRef, op.Result = "pi_1", []byte(`{"status":"succeeded"}`)
		op.Resolution = &ledger.Resolution{Actor: "alice", Note: "n", Outcome: ledger.ResolveSucceeded, At: t0}
	})
	at := now.Add(30 * 24 * time.Hour)
	tomb := ledgerdriver.TombstoneOf(op, at.In(time.FixedZone("CET", 3600)).Add(123))
	require.Equal(t, ledgerdriver.Tombstone{
		ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", References: []string{"order", "42"}, Fingerprint: "fp-1",
		Status: ledger.StatusSucceeded, ProviderRef: "pi_1", Result: []byte(`{"status":"succeeded"}`), Amount: 1000, Currency: "EUR",
		KeyTTL: keyTTL, CreatedAt: t0, FinishedAt: t0.Add(time.Second), TombstonedAt: at,
	}, tomb)
	op.Result[0], op.References[0] = 'X', "changed"
	require.Equal(t, `{"status":"succeeded"}`, string(tomb.Result), "the tombstone does not share the operation's slices")
	require.Equal(t, []string{"order", "42"}, tomb.References)

	require.Equal(t, ledger.Operation{
		ID: "op-1", Key: "op-1", Provider: "stripe", Kind: "charge", References: []string{"order", "42"}, Fingerprint: "fp-1",
		Status: ledger.StatusSucceeded, ProviderRef: "pi_1", Result: []byte(`{"status":"succeeded"}`), KeyTTL: keyTTL,
		CreatedAt: t0, UpdatedAt: at, FinishedAt: t0.Add(time.Second), Tombstone: true,
	}, tomb.Operation(), "no request, attempts, lease, window or background work")

	// A late Begin on the tombstone gets it back unclaimed, like any
	// terminal operation; another request is refused.
	begin := ledger.BeginParams{Op: newOp(), Owner: owner, Now: at, LeaseUntil: at.Add(time.Minute), StartAttempt: true}
	res, err := ledgerdriver.ApplyBegin(tomb.Operation(), begin)
	require.NoError(t, err)
	require.Equal(t, ledger.BeginResult{Op: tomb.Operation()}, res)
	begin.Op.Fingerprint = "fp-other"
	_, err = ledgerdriver.ApplyBegin(tomb.Operation(), begin)
	require.ErrorIs(t, err, ledger.ErrFingerprintMismatch)
}

// applyChecked runs apply on op and checks that op is not modified and that
// apply refused with want, returning the zero value, or, when want is nil,
// succeeded.
func applyChecked[T any](t *testing.T, op ledger.Operation, want error, apply func(ledger.Operation) (T, error)) (T, error) {
	t.Helper()
	before := op
	got, err := apply(op)
	require.Equal(t, before, op, "the operation passed in is not modified")
	if want == nil {
		require.NoError(t, err)
		return got, nil
	}
	require.ErrorIs(t, err, want)
	var zero T
	require.Equal(t, zero, got)
	return got, err
}

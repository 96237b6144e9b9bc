package ledgertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// transitionParams builds the Finish call that moves an operation brought to
// from by reach to to, with every optional field set so that the store's
// handling of each can be checked.
func transitionParams(hd held, from, to ledger.Status) ledger.FinishParams {
	now := hd.now.Add(time.Second)
	p := ledger.FinishParams{
		ID: hd.id, Owner: hd.owner, Now: now, From: from, To: to,
		// Set for every target: final statuses must ignore it.
		NextCheckAt: now.Add(10 * time.Minute),
	}
	if from == ledger.StatusInFlight {
		p.Attempt = attemptOutcome(1, to)
	}
	if to == ledger.StatusManualReview {
		p.ReviewCode, p.ReviewReason = ledger.ReviewCodeWindowPassed, "window passed, outcome unknown"
	}
	if to == ledger.StatusSucceeded {
		p.ProviderRef = "pi_" + hd.id
		p.Result = []byte(`{"status":"succeeded"}`)
	}
	return p
}

func transitionOp(from, to ledger.Status) ledger.NewOperation {
	id := fmt.Sprintf("op-%s-to-%s", from, to)
	return newOpFor(id, "psp-"+id, "charge")
}

// eachTransition runs check, in a parallel subtest named from_to_to, for
// every move that CheckTransition accepts (legal) or refuses (!legal), on an
// operation of its own brought to from by reach and held by ownerA.
func eachTransition(t *testing.T, s ledger.Store, legal bool, check func(t *testing.T, from, to ledger.Status, op ledger.NewOperation, hd held)) {
	for _, from := range ledger.Statuses {
		for _, to := range ledger.Statuses {
			if (ledgerdriver.CheckTransition(from, to) == nil) != legal {
				continue
			}
			t.Run(fmt.Sprintf("%s_to_%s", from, to), func(t *testing.T) {
				t.Parallel()
				op := transitionOp(from, to)
				check(t, from, to, op, reach(t, s, op, ownerA, from))
			})
		}
	}
}

func testLegalTransitions(t *testing.T, h *Harness) {
	s := h.Store
	eachTransition(t, s, true, func(t *testing.T, from, to ledger.Status, op ledger.NewOperation, hd held) {
		before, _ := mustGet(t, s, op.ID)
		p := transitionParams(hd, from, to)

		got := mustFinish(t, s, p)
		requireNoLease(t, got)
		require.Equal(t, before.Attempts, got.Attempts)
		switch {
		case to.Final():
			requireTime(t, p.Now, got.FinishedAt, "FinishedAt")
			requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt of a final operation")
		default:
			requireTime(t, time.Time{}, got.FinishedAt, "FinishedAt")
			requireTime(t, p.NextCheckAt, got.NextCheckAt, "NextCheckAt")
		}
		if to == ledger.StatusManualReview {
			require.Equal(t, p.ReviewReason, got.ReviewReason)
			enteredAt := p.Now
			if from == ledger.StatusManualReview {
				enteredAt = before.ReviewAt
			}
			requireTime(t, enteredAt, got.ReviewAt, "ReviewAt")
		}
		if to == ledger.StatusSucceeded {
			require.Equal(t, p.ProviderRef, got.ProviderRef)
			require.JSONEq(t, string(p.Result), string(got.Result))
		}
		requireStored(t, s, got)

		_, atts := mustGet(t, s, op.ID)
		if from == ledger.StatusInFlight {
			require.Len(t, atts, 1)
			a := atts[0]
			requireTime(t, p.Now, a.FinishedAt, "Attempt.FinishedAt")
			require.Equal(t, p.Attempt.Class, a.Outcome)
			require.Equal(t, p.Attempt.HTTPStatus, a.HTTPStatus)
			require.Equal(t, p.Attempt.ProviderRequestID, a.ProviderRequestID)
			require.Equal(t, p.Attempt.Error, a.Error)
			require.Equal(t, p.Attempt.Class.MayHaveReached(), a.MayHaveReached)
		}
	})
}

func testIllegalTransitions(t *testing.T, h *Harness) {
	s := h.Store
	eachTransition(t, s, false, func(t *testing.T, from, to ledger.Status, op ledger.NewOperation, hd held) {
		before, beforeAtts := mustGet(t, s, op.ID)

		_, err := s.Finish(t.Context(), transitionParams(hd, from, to))
		require.ErrorIs(t, err, ledger.ErrStateConflict)
		requireUnchanged(t, s, before, beforeAtts)
	})
}

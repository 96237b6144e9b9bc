package ledgerpg_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// During a rolling deploy a build of version 9 keeps writing to a schema
// that version 10 migrated: it sets the review reason and knows nothing of
// the code. Such a row must still carry the code its reason names: the
// resend refusal of a duplicated operation compares the code, and a
// duplicated operation read back without one could be resent under a new
// key (a third movement of money).
func TestReviewCodeOfAnOlderBuildsWrite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, pool := newStore(t)
	ops := table(s.Schema(), "payonce_operations")
	const dup = ledger.ReasonDuplicated + ": ch_2 succeeded"

	// 1. An older build's Finish to manual_review: no review_code in its UPDATE.
	_, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-old"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE `+ops+` SET status = 'manual_review', review_reason = $2, review_at = $3, updated_at = $3,
		lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`, "op-old", dup, t0.Add(time.Second))
	require.NoError(t, err)
	op, _, err := s.Get(ctx, "op-old")
	require.NoError(t, err)
	require.Equal(t, ledger.ReviewCodeDuplicated, op.ReviewCode, op.ReviewReason)
	feed := feedUntil(t, s, "", 2)
	require.Equal(t, ledger.StatusManualReview, feed[1].To)
	require.Equal(t, ledger.ReviewCodeDuplicated, feed[1].ReviewCode, "the feed entry of the older build's move")
	rev, err := s.ListReview(ctx, ledger.ReviewFilter{Code: ledger.ReviewCodeDuplicated})
	require.NoError(t, err)
	require.Len(t, rev, 1)

	// 2. An operation this build sent to review as processing (re-checked in
	// the background); the older build's re-check finds a second object and
	// rewrites the reason only. The stored code must follow the reason.
	res, err := s.Begin(ctx, ledger.BeginParams{Op: newOp("op-mixed"), Owner: "w", Now: t0, LeaseUntil: t0.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	_, err = s.Finish(ctx, ledger.FinishParams{ID: "op-mixed", Owner: "w", Now: t0.Add(time.Second), From: ledger.StatusInFlight,
		To: ledger.StatusManualReview, ReviewCode: ledger.ReviewCodeProcessing, ReviewReason: "provider still processing after the configured age",
		NextCheckAt: t0.Add(time.Hour), Attempt: &ledger.AttemptOutcome{Number: res.Attempt.Number, Class: ledger.OutcomeMaybeSent}})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE `+ops+` SET review_reason = $2, review_at = $3, updated_at = $3, next_check_at = NULL WHERE id = $1`,
		"op-mixed", dup, t0.Add(2*time.Hour))
	require.NoError(t, err)
	op, _, err = s.Get(ctx, "op-mixed")
	require.NoError(t, err)
	require.Equal(t, ledger.ReviewCodeDuplicated, op.ReviewCode, op.ReviewReason)

	// 3. This build keeps a code it chose when it changes only the reason
	// to a text of its own ("other" by its words): an operator's note
	// never weakens a stored code.
	_, err = pool.Exec(ctx, `UPDATE `+ops+` SET review_reason = 'checked with the bank, waiting for the refund' WHERE id = $1`, "op-mixed")
	require.NoError(t, err)
	op, _, err = s.Get(ctx, "op-mixed")
	require.NoError(t, err)
	require.Equal(t, ledger.ReviewCodeDuplicated, op.ReviewCode, op.ReviewReason)
}

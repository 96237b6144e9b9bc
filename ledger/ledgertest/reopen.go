package ledgertest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// A provider event that contradicts the outcome of an operation Cleanup
// removed (a refund that fails weeks after it succeeded) reopens the
// operation in review: the tombstone is replaced by the operation it
// recorded, in manual_review waiting for an operator, so that the review
// queue, Stats, the feed and Resolve see it as any contradiction. Left on
// the tombstone, it was seen only in the inbox and a log line while the
// ledger said "succeeded", and the customer was never refunded.

// cleanedRefund records a stripe refund that settles as to, has Cleanup
// remove it, and returns it as Get read it before the Cleanup, with the
// feed's cursor after everything written so far.
func cleanedRefund(t *testing.T, s ledger.Store, id string, to ledger.Status) (ledger.Operation, ledger.FeedCursor) {
	t.Helper()
	op := shortTTL(id)
	op.Kind = "refund"
	was := settled(t, s, op, to)
	rep, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)
	require.Equal(t, 1, rep.Deleted)
	entries := feedWait(t, s, "", 100, 2)
	got, _ := mustGet(t, s, id)
	require.True(t, got.Tombstone)
	return was, entries[len(entries)-1].Cursor
}

// refundTarget is a target naming refund id by its operation id.
func refundTarget(id string, effect ledger.WebhookEffect, detail string) ledger.WebhookTarget {
	return ledger.WebhookTarget{Kind: "refund", OperationID: id, Effect: effect, Detail: detail}
}

func testReopenRefundFailedAfterCleanup(t *testing.T, h *Harness) {
	s := h.Store
	was, cursor := cleanedRefund(t, s, "op-refund", ledger.StatusSucceeded)
	now := cleanedAt.Add(time.Hour)
	e := evt("evt_rf", "refund.failed", refundTarget(was.ID, ledger.EffectReversed, "expired_or_canceled_card"))
	mustRecordNew(t, s, e, now, outcome(0, was.ID, ledger.WebhookContradiction, ledger.StatusSucceeded, ledger.StatusManualReview))

	// The operation as the tombstone kept it, in review waiting for an
	// operator: no request (Cleanup deleted it), no attempt, nothing due.
	got, atts := mustGet(t, s, was.ID)
	require.False(t, got.Tombstone, "the tombstone is replaced by the operation")
	require.Empty(t, atts)
	require.Empty(t, got.Request, "the request was deleted by Cleanup")
	require.Equal(t, ledger.ReviewCodeWebhookContradiction, got.ReviewCode, "reason %q", got.ReviewReason)
	require.Contains(t, got.ReviewReason, "refund.failed")
	require.Contains(t, got.ReviewReason, "expired_or_canceled_card")
	want := was
	want.Request, want.Attempts, want.WindowStart, want.KeyExpiresAt = got.Request, 0, time.Time{}, time.Time{}
	want.Status, want.ReviewCode, want.ReviewReason = ledger.StatusManualReview, ledger.ReviewCodeWebhookContradiction, got.ReviewReason
	want.ReviewAt, want.UpdatedAt = now, now
	require.Equal(t, canon(want), canon(got), "identity, key, fingerprint, reference, result, key TTL and times as recorded")
	requireNoLease(t, got)
	requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt: only an operator settles it")

	// The audit trail starts again with the event and a note saying why
	// nothing earlier is there.
	evs := mustEvents(t, s, was.ID)
	require.Len(t, evs, 2)
	_, details := webhookEvents(t, s, was.ID)
	require.Equal(t, []ledger.WebhookDetail{{Provider: "stripe", EventID: "evt_rf", Type: "refund.failed", Effect: ledger.EffectReversed,
		Disposition: ledger.WebhookContradiction, Object: ledger.ObjectCurrent, Detail: "expired_or_canceled_card"}}, details)
	require.Equal(t, ledger.EventNote, evs[1].Kind)
	require.Equal(t, ledgerdriver.WebhookActor("stripe"), evs[1].Actor)
	require.Contains(t, evs[1].Detail, "reopened from the tombstone Cleanup wrote at "+cleanedAt.Format(time.RFC3339))

	// An operator sees it where every review is: the queue, the gauges and
	// the feed (the change from succeeded into review, no new creation).
	review, err := s.ListReview(t.Context(), ledger.ReviewFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{was.ID}, ids(review))
	st := mustStats(t, s, false)
	require.Equal(t, []ledger.StatusCount{{Provider: "stripe", Kind: "refund", Status: ledger.StatusManualReview, Count: 1}}, st.Open)
	require.Equal(t, []ledger.ReasonCount{{Provider: "stripe", Kind: "refund", Code: ledger.ReviewCodeWebhookContradiction,
		Reason: got.ReviewReason, Count: 1}}, st.Reviews)
	entries := feedWait(t, s, cursor, 100, 1)
	require.Equal(t, []feedStep{{was.ID, ledger.StatusSucceeded, ledger.StatusManualReview}}, stepsOf(entries))
	require.Equal(t, got.ReviewReason, entries[0].ReviewReason)
	require.Equal(t, ledger.ReviewCodeWebhookContradiction, entries[0].ReviewCode)
	require.Equal(t, was.Key, entries[0].Key)
	require.Equal(t, was.ProviderRef, entries[0].ProviderRef)
	requireTime(t, now, entries[0].At, "the entry's At")
	late := now.Add(30 * 24 * time.Hour)
	require.Empty(t, mustClaimDue(t, s, ledger.ClaimDueParams{Owner: ownerB, Now: late, LeaseUntil: late.Add(leaseFor), Limit: 10, IncludeReview: true}),
		"no background work: a lookup would repeat the answer the provider now says was wrong")

	// A late duplicate call gets the review status and creates nothing; a
	// redelivery changes nothing; a second contradiction is noted.
	before, beforeAtts := mustGet(t, s, was.ID)
	op := shortTTL(was.ID)
	op.Kind = "refund"
	for _, start := range []bool{true, false} {
		res := mustBegin(t, s, beginParams(op, ownerB, now, start))
		require.False(t, res.Created)
		require.False(t, res.Claimed, "nothing may be sent")
		require.Nil(t, res.Attempt)
		require.Equal(t, ledger.StatusManualReview, res.Op.Status)
	}
	byCreate, created, err := s.CreateOrGet(t.Context(), op, now)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, ledger.StatusManualReview, byCreate.Status)
	_, err = s.Begin(t.Context(), beginParams(OtherRequest(op), ownerB, now, true))
	require.ErrorIs(t, err, ledger.ErrFingerprintMismatch, "the fingerprint is kept")
	rep := mustRecord(t, s, e, now.Add(time.Minute))
	require.True(t, rep.Duplicate)
	requireUnchanged(t, s, before, beforeAtts)
	mustRecordNew(t, s, evt("evt_rf2", "refund.updated", refundTarget(was.ID, ledger.EffectFailed, "")), now.Add(time.Minute),
		outcome(0, was.ID, ledger.WebhookNoted, ledger.StatusManualReview, ledger.StatusManualReview))

	// It can never be sent again: a resend has no request to send.
	beforeResend, beforeAtts := mustGet(t, s, was.ID)
	_, err = s.Resolve(t.Context(), ledger.ResolveParams{ID: was.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend,
		NewKey: was.Key + "-g1", NewGeneration: 1, Now: now.Add(2 * time.Minute)})
	require.ErrorIs(t, err, ledger.ErrStateConflict)
	require.ErrorContains(t, err, "no request")
	requireUnchanged(t, s, beforeResend, beforeAtts)

	// The operator refunds by hand and resolves it; Cleanup then removes it
	// again, leaving a tombstone of the resolved outcome.
	resolvedAt := now.Add(time.Hour)
	p := ledger.ResolveParams{ID: was.ID, Actor: "alice", Note: "refunded by bank transfer", Outcome: ledger.ResolveFailed, Now: resolvedAt}
	resolved := mustResolve(t, s, p)
	requireResolution(t, p, resolved)
	require.Equal(t, ledger.StatusFailed, resolved.Status)
	requireTime(t, resolvedAt, resolved.FinishedAt, "FinishedAt: the resolution")
	require.Equal(t, []feedStep{{was.ID, ledger.StatusSucceeded, ledger.StatusManualReview}, {was.ID, ledger.StatusManualReview, ledger.StatusFailed}},
		stepsOf(feedWait(t, s, cursor, 100, 2)))
	recleaned := resolvedAt.Add(72 * time.Hour)
	cr, err := s.Cleanup(t.Context(), cleanupAt(recleaned))
	require.NoError(t, err)
	require.Equal(t, 1, cr.Deleted)
	final, _ := mustGet(t, s, was.ID)
	require.True(t, final.Tombstone)
	require.Equal(t, ledger.StatusFailed, final.Status)
	require.Equal(t, was.ProviderRef, final.ProviderRef)
	requireNothingLive(t, s, recleaned)
}

// A failed operation the provider later reports succeeded (money moved
// that the ledger says did not) is reopened likewise; an event that agrees
// with a tombstone, or only informs, leaves it as it is.
func testReopenOnlyOnContradiction(t *testing.T, h *Harness) {
	s := h.Store
	was, _ := cleanedRefund(t, s, "op-refund-ko", ledger.StatusFailed)
	now := cleanedAt.Add(time.Hour)
	for i, c := range []struct {
		effect ledger.WebhookEffect
		disp   ledger.WebhookDisposition
	}{
		{ledger.EffectFailed, ledger.WebhookTombstoned},
		{ledger.EffectReversed, ledger.WebhookTombstoned},
		{ledger.EffectProcessing, ledger.WebhookTombstoned},
		{ledger.EffectLookup, ledger.WebhookTombstoned},
	} {
		tomb, _ := mustGet(t, s, was.ID)
		mustRecordNew(t, s, evt("evt_same_"+string(rune('a'+i)), "refund.updated", refundTarget(was.ID, c.effect, "")), now,
			outcome(0, was.ID, c.disp, ledger.StatusFailed, ledger.StatusFailed))
		after, _ := mustGet(t, s, was.ID)
		require.Equal(t, tomb, after, "%s leaves the tombstone as it is", c.effect)
	}
	mustRecordNew(t, s, evt("evt_ok", "refund.updated", refundTarget(was.ID, ledger.EffectSucceeded, "")), now,
		outcome(0, was.ID, ledger.WebhookContradiction, ledger.StatusFailed, ledger.StatusManualReview))
	got, _ := mustGet(t, s, was.ID)
	require.False(t, got.Tombstone)
	require.Equal(t, ledger.StatusManualReview, got.Status)
	require.Equal(t, was.Result, got.Result, "the recorded result stays for the operator")
	review, err := s.ListReview(t.Context(), ledger.ReviewFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{was.ID}, ids(review))
}

// Concurrent deliveries of different events contradicting one tombstone,
// beside late duplicate calls, in one process or several: exactly one
// event reopens the operation, every other is noted on it (a delivery the
// store refused while another reopened it is delivered again, as a
// provider does), and no call ever finds both a row and a tombstone, nor
// creates anything.
func testReopenConcurrent(t *testing.T, h *Harness) { reopenConcurrent(t, storesOf(t, h, false)) }
func testReopenConcurrentTwoStores(t *testing.T, h *Harness) {
	reopenConcurrent(t, storesOf(t, h, true))
}

func reopenConcurrent(t *testing.T, stores []ledger.Store) {
	s := stores[0]
	was, _ := cleanedRefund(t, s, "op-refund-race", ledger.StatusSucceeded)
	op := shortTTL(was.ID)
	op.Kind = "refund"
	now := cleanedAt.Add(time.Hour)
	const events = claimers / 2
	var redelivered atomic.Int32
	type result struct {
		rep   ledger.WebhookReport
		begin ledger.BeginResult
	}
	results, errs := together(claimers, func(i int) (result, error) {
		st := stores[i%len(stores)]
		if i%2 == 1 {
			res, err := st.Begin(t.Context(), beginParams(op, racerOwner(i), now, true))
			return result{begin: res}, err
		}
		e := evt(fmt.Sprintf("evt_race_%02d", i), "refund.failed", refundTarget(was.ID, ledger.EffectReversed, ""))
		var err error
		for try := range 20 {
			var rep ledger.WebhookReport
			if rep, err = st.RecordWebhook(t.Context(), ledger.RecordWebhookParams{Event: e, Now: now}); err == nil {
				if try > 0 {
					redelivered.Add(1)
				}
				return result{rep: rep}, nil
			}
		}
		return result{}, err
	})
	t.Logf("%d of %d events were refused once while another reopened the operation, and delivered again", redelivered.Load(), events)
	reopenedBy := 0
	for i, err := range errs {
		require.NoError(t, err, "call %d", i)
		r := results[i]
		if i%2 == 1 {
			require.False(t, r.begin.Created, "call %d creates nothing", i)
			require.False(t, r.begin.Claimed, "call %d may send nothing", i)
			require.Contains(t, []ledger.Status{ledger.StatusSucceeded, ledger.StatusManualReview}, r.begin.Op.Status)
			require.Equal(t, r.begin.Op.Status == ledger.StatusSucceeded, r.begin.Op.Tombstone,
				"call %d: the tombstone before the reopen, the operation in review after it", i)
			continue
		}
		require.False(t, r.rep.Duplicate)
		require.Len(t, r.rep.Outcomes, 1)
		switch o := r.rep.Outcomes[0]; o.Disposition {
		case ledger.WebhookContradiction:
			reopenedBy++
			require.Equal(t, outcome(0, was.ID, ledger.WebhookContradiction, ledger.StatusSucceeded, ledger.StatusManualReview), o)
		default:
			require.Equal(t, outcome(0, was.ID, ledger.WebhookNoted, ledger.StatusManualReview, ledger.StatusManualReview), o, "event %d", i)
		}
	}
	require.Equal(t, 1, reopenedBy, "exactly one event reopens the operation")
	got, atts := mustGet(t, s, was.ID)
	require.False(t, got.Tombstone)
	require.Equal(t, ledger.StatusManualReview, got.Status)
	require.Empty(t, atts)
	evs, _ := webhookEvents(t, s, was.ID)
	require.Len(t, evs, events, "every event is on the operation's record")
	require.Len(t, mustListWebhooks(t, s, ledger.InboxFilter{}), events)
}

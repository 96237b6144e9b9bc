package ledgertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// The webhook inbox (Store.RecordWebhook, ListWebhooks): a provider event is
// recorded once, by its (provider, event id), in the transaction that applies
// it to the operations it names by ledgerdriver.ApplyWebhook's rules; a redelivery
// or a replay changes nothing, and Cleanup keeps entries as long as the
// provider may deliver them again.

// evt is an event of NewOp's provider (stripe) with targets.
func evt(id, typ string, targets ...ledger.WebhookTarget) ledger.WebhookEvent {
	return ledger.WebhookEvent{Provider: "stripe", ID: id, Type: typ, OccurredAt: at(-time.Hour), Targets: targets}
}

// byID is a target naming operation id, a charge, with effect.
func byID(id string, effect ledger.WebhookEffect) ledger.WebhookTarget {
	return ledger.WebhookTarget{Kind: "charge", OperationID: id, Effect: effect}
}

func mustRecord(t *testing.T, s ledger.Store, e ledger.WebhookEvent, now time.Time) ledger.WebhookReport {
	t.Helper()
	rep, err := s.RecordWebhook(t.Context(), ledger.RecordWebhookParams{Event: e, Now: now})
	require.NoError(t, err, "RecordWebhook %s", e.ID)
	return rep
}

// mustRecordNew records e and requires that it was new, with outcomes want.
func mustRecordNew(t *testing.T, s ledger.Store, e ledger.WebhookEvent, now time.Time, want ...ledger.WebhookOutcome) {
	t.Helper()
	rep := mustRecord(t, s, e, now)
	require.False(t, rep.Duplicate, "%s is recorded for the first time", e.ID)
	require.Equal(t, want, rep.Outcomes, "outcomes of %s", e.ID)
}

func outcome(target int, id string, d ledger.WebhookDisposition, from, to ledger.Status) ledger.WebhookOutcome {
	return ledger.WebhookOutcome{Target: target, OperationID: id, Disposition: d, From: from, To: to}
}

func mustListWebhooks(t *testing.T, s ledger.Store, f ledger.InboxFilter) []ledger.InboxEntry {
	t.Helper()
	got, err := s.ListWebhooks(t.Context(), f)
	require.NoError(t, err, "ListWebhooks %+v", f)
	return got
}

func entryIDs(es []ledger.InboxEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Provider+"/"+e.ID)
	}
	return out
}

// webhookEvents returns the EventWebhook entries of operation id, with their
// details decoded.
func webhookEvents(t *testing.T, s ledger.Store, id string) ([]ledger.Event, []ledger.WebhookDetail) {
	t.Helper()
	var (
		evs     []ledger.Event
		details []ledger.WebhookDetail
	)
	for _, e := range mustEvents(t, s, id) {
		if e.Kind != ledger.EventWebhook {
			continue
		}
		var d ledger.WebhookDetail
		require.NoError(t, json.Unmarshal([]byte(e.Detail), &d), "the Detail of a webhook entry is a WebhookDetail: %q", e.Detail)
		evs, details = append(evs, e), append(details, d)
	}
	return evs, details
}

// unknownWithRef records op and leaves it unknown (leased by ownerA) with a
// provider reference, as an answer lost after the provider named the object.
func unknownWithRef(t *testing.T, s ledger.Store, op ledger.NewOperation, ref string) {
	t.Helper()
	mustStart(t, s, op, ownerA, base)
	mustFinish(t, s, ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: at(time.Second), From: ledger.StatusInFlight, To: ledger.StatusUnknown,
		Attempt: attemptOutcome(1, ledger.StatusUnknown), ProviderRef: ref, NextCheckAt: at(time.Minute), KeepLease: true})
}

func refundOf(id, paymentRef string) ledger.NewOperation {
	op := newOpFor(id, "stripe", "refund")
	op.PaymentRef = paymentRef
	return op
}

// A redelivered event, and a replay with other content under the same
// identity, change nothing and report the first delivery's outcomes.
func testWebhookDedup(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	hd := reach(t, s, op, ownerA, ledger.StatusUnknown)
	now := hd.now.Add(time.Second)
	e := evt("evt_1", "payment_intent.succeeded", byID(op.ID, ledger.EffectSucceeded))
	mustRecordNew(t, s, e, now, outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded))
	before := snapshot(t, s)
	first := mustListWebhooks(t, s, ledger.InboxFilter{})

	replay := e
	replay.Type = "payment_intent.payment_failed"
	replay.Targets = []ledger.WebhookTarget{byID(op.ID, ledger.EffectFailed), byID("op-other", ledger.EffectSucceeded)}
	for i, again := range []ledger.WebhookEvent{e, e, replay} {
		rep := mustRecord(t, s, again, now.Add(time.Duration(i+1)*time.Hour))
		require.True(t, rep.Duplicate, "delivery %d", i+2)
		require.Equal(t, []ledger.WebhookOutcome{outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded)}, rep.Outcomes)
	}
	require.Equal(t, before, snapshot(t, s), "a duplicate changes nothing")
	require.Equal(t, first, mustListWebhooks(t, s, ledger.InboxFilter{}), "the inbox keeps the first delivery")
	evs, _ := webhookEvents(t, s, op.ID)
	require.Len(t, evs, 1, "the event applied once")

	// The identity is the provider's and the event's: the same id from
	// another provider is another event.
	other := e
	other.Provider = "checkout"
	mustRecordNew(t, s, other, now, ledger.WebhookOutcome{Target: 0, Disposition: ledger.WebhookUnmatched})
}

// An operation whose answer was lost is settled by the provider's event
// alone, with an audit entry naming the event.
func testWebhookSettleUnknown(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	hd := reach(t, s, op, ownerA, ledger.StatusUnknown)
	before, beforeAtts := mustGet(t, s, op.ID)
	require.Equal(t, ownerA, before.LeaseOwner)
	now := hd.now.Add(time.Second)
	result := []byte(`{"status": "succeeded",  "amount":1000}`)
	target := ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, ProviderRef: "pi_hook", Effect: ledger.EffectSucceeded,
		Result: result, Detail: "amount_received=1000"}
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", target), now,
		outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded))

	got, atts := mustGet(t, s, op.ID)
	require.Equal(t, ledger.StatusSucceeded, got.Status)
	require.Equal(t, "pi_hook", got.ProviderRef)
	require.Equal(t, string(result), string(got.Result), "the result is kept byte for byte")
	requireTime(t, now, got.FinishedAt, "FinishedAt")
	requireTime(t, now, got.UpdatedAt, "UpdatedAt")
	requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt of a settled operation")
	requireNoLease(t, got)
	require.Equal(t, beforeAtts, atts, "the finished attempt is kept as it was")

	evs, details := webhookEvents(t, s, op.ID)
	require.Len(t, evs, 1)
	require.Len(t, mustEvents(t, s, op.ID), 1, "one audit entry")
	requireTime(t, now, evs[0].At, "At of the webhook entry")
	require.Equal(t, ledgerdriver.WebhookActor("stripe"), evs[0].Actor)
	require.Equal(t, ledger.WebhookDetail{Provider: "stripe", EventID: "evt_1", Type: "payment_intent.succeeded", Effect: ledger.EffectSucceeded,
		Disposition: ledger.WebhookSettled, ProviderRef: "pi_hook", Object: ledger.ObjectCurrent, Detail: "amount_received=1000"}, details[0])
}

// An event that arrives while the attempt is in flight settles the
// operation; the attempt is finished as maybe sent, and the lease holder's
// own answer, when it comes, changes nothing.
func testWebhookSettleInFlight(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	_, att := mustStart(t, s, op, ownerA, base)
	now := at(time.Minute)
	mustRecordNew(t, s, evt("evt_1", "payment_intent.payment_failed", ledger.WebhookTarget{Kind: "charge", OperationID: op.ID,
		Effect: ledger.EffectFailed, Result: []byte(`{"status":"failed"}`), Detail: "card_declined"}), now,
		outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusInFlight, ledger.StatusFailed))

	got, atts := mustGet(t, s, op.ID)
	require.Equal(t, ledger.StatusFailed, got.Status)
	requireNoLease(t, got)
	requireTime(t, now, got.FinishedAt, "FinishedAt")
	require.Len(t, atts, 1)
	require.Equal(t, att.Number, atts[0].Number)
	requireTime(t, now, atts[0].FinishedAt, "FinishedAt of the attempt")
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
	require.True(t, atts[0].MayHaveReached)

	before := snapshot(t, s)
	_, err := s.Finish(t.Context(), ledger.FinishParams{ID: op.ID, Owner: ownerA, Now: at(2 * time.Minute), From: ledger.StatusInFlight,
		To: ledger.StatusSucceeded, Attempt: attemptOutcome(1, ledger.StatusSucceeded), ProviderRef: "pi_late"})
	require.True(t, errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateConflict),
		"the former lease holder's answer is refused: %v", err)
	require.Equal(t, before, snapshot(t, s))
}

// processing never moves an operation: noted on one not settled yet, stale
// on a settled one. One event with two targets.
func testWebhookProcessing(t *testing.T, h *Harness) {
	s := h.Store
	open, done := NewOp("op-open"), NewOp("op-done")
	reach(t, s, open, ownerA, ledger.StatusUnknown)
	reach(t, s, done, ownerA, ledger.StatusSucceeded)
	beforeOpen, openAtts := mustGet(t, s, open.ID)
	beforeDone, doneAtts := mustGet(t, s, done.ID)
	mustRecordNew(t, s, evt("evt_1", "payment_intent.processing", byID(open.ID, ledger.EffectProcessing), byID(done.ID, ledger.EffectProcessing)), at(time.Hour),
		outcome(0, open.ID, ledger.WebhookNoted, ledger.StatusUnknown, ledger.StatusUnknown),
		outcome(1, done.ID, ledger.WebhookStale, ledger.StatusSucceeded, ledger.StatusSucceeded))
	requireUnchanged(t, s, beforeOpen, openAtts)
	requireUnchanged(t, s, beforeDone, doneAtts)
	for id, d := range map[string]ledger.WebhookDisposition{open.ID: ledger.WebhookNoted, done.ID: ledger.WebhookStale} {
		_, details := webhookEvents(t, s, id)
		require.Len(t, details, 1, "the event is on the record of %s", id)
		require.Equal(t, d, details[0].Disposition)
	}
}

// A refund reported reversed after it succeeded goes where an operator sees
// it, and no lookup settles it again; a later event agreeing with the old
// outcome is only noted.
func testWebhookContradictsSucceeded(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	reach(t, s, op, ownerA, ledger.StatusSucceeded)
	now := at(time.Hour)
	mustRecordNew(t, s, evt("evt_1", "charge.dispute.created", ledger.WebhookTarget{Kind: "charge", OperationID: op.ID,
		Effect: ledger.EffectReversed, Detail: "fraudulent"}), now,
		outcome(0, op.ID, ledger.WebhookContradiction, ledger.StatusSucceeded, ledger.StatusManualReview))

	got, _ := mustGet(t, s, op.ID)
	require.Equal(t, ledger.StatusManualReview, got.Status)
	require.Equal(t, ledger.ReviewCodeWebhookContradiction, got.ReviewCode, "reason %q", got.ReviewReason)
	require.Contains(t, got.ReviewReason, "charge.dispute.created")
	require.Contains(t, got.ReviewReason, "fraudulent")
	requireTime(t, now, got.ReviewAt, "ReviewAt")
	requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt: waits for an operator")
	require.Equal(t, "pi_"+op.ID, got.ProviderRef, "what the ledger held is kept for the operator")
	review, err := s.ListReview(t.Context(), ledger.ReviewFilter{})
	require.NoError(t, err)
	require.Equal(t, []string{op.ID}, ids(review))
	late := at(30 * 24 * time.Hour)
	require.Empty(t, mustClaimDue(t, s, ledger.ClaimDueParams{Owner: ownerB, Now: late, LeaseUntil: late.Add(leaseFor), Limit: 10, IncludeReview: true}))

	before, atts := mustGet(t, s, op.ID)
	mustRecordNew(t, s, evt("evt_2", "payment_intent.succeeded", byID(op.ID, ledger.EffectSucceeded)), now.Add(time.Minute),
		outcome(0, op.ID, ledger.WebhookNoted, ledger.StatusManualReview, ledger.StatusManualReview))
	requireUnchanged(t, s, before, atts)
	_, details := webhookEvents(t, s, op.ID)
	require.Len(t, details, 2)
}

func testWebhookContradictsFailed(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	reach(t, s, op, ownerA, ledger.StatusFailed)
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", byID(op.ID, ledger.EffectSucceeded)), at(time.Hour),
		outcome(0, op.ID, ledger.WebhookContradiction, ledger.StatusFailed, ledger.StatusManualReview))
	got, _ := mustGet(t, s, op.ID)
	require.Equal(t, ledger.StatusManualReview, got.Status)
	require.Equal(t, ledger.ReviewCodeWebhookContradiction, got.ReviewCode, got.ReviewReason)
	requireTime(t, time.Time{}, got.NextCheckAt, "NextCheckAt")
}

// A review that still wants lookups is settled by a settling event, with a
// resolution naming it, as a definitive lookup would.
func testWebhookSettlesReview(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	hd := reach(t, s, op, ownerA, ledger.StatusManualReview)
	before, _ := mustGet(t, s, op.ID)
	require.False(t, before.NextCheckAt.IsZero(), "the review wants lookups")
	now := hd.now.Add(time.Second)
	target := ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, ProviderRef: "pi_r", Effect: ledger.EffectSucceeded}
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", target), now,
		outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusManualReview, ledger.StatusSucceeded))

	got, _ := mustGet(t, s, op.ID)
	require.Equal(t, ledger.StatusSucceeded, got.Status)
	require.Equal(t, "pi_r", got.ProviderRef)
	requireNoLease(t, got)
	require.NotNil(t, got.Resolution)
	require.Equal(t, ledgerdriver.WebhookActor("stripe"), got.Resolution.Actor)
	require.Equal(t, ledger.ResolveSucceeded, got.Resolution.Outcome)
	require.Contains(t, got.Resolution.Note, "evt_1")
	requireTime(t, now, got.Resolution.At, "Resolution.At")
	detail := ledger.WebhookDetail{Provider: "stripe", EventID: "evt_1", Type: "payment_intent.succeeded", Effect: ledger.EffectSucceeded,
		Disposition: ledger.WebhookSettled, ProviderRef: "pi_r", Object: ledger.ObjectCurrent}
	requireEvents(t, s, op.ID,
		event(op.ID, 1, now, ledger.EventWebhook, ledgerdriver.WebhookActor("stripe"), detail.String()),
		resolutionEvent(op.ID, 2, now, ledgerdriver.WebhookActor("stripe"), map[string]any{"outcome": "succeeded", "provider_ref": "pi_r"}))
}

// A review that waits for an operator is not settled by an event: the event
// is one more fact for the operator.
func testWebhookNotesOperatorReview(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	toReview(t, s, op)
	before, atts := mustGet(t, s, op.ID)
	require.True(t, before.NextCheckAt.IsZero())
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", byID(op.ID, ledger.EffectSucceeded)), at(time.Hour),
		outcome(0, op.ID, ledger.WebhookNoted, ledger.StatusManualReview, ledger.StatusManualReview))
	requireUnchanged(t, s, before, atts)
	evs, _ := webhookEvents(t, s, op.ID)
	require.Len(t, evs, 1)
}

// An unauthenticated notice only makes the operation due for a lookup now.
func testWebhookLookupNudges(t *testing.T, h *Harness) {
	s := h.Store
	pending, unknown, done := NewOp("op-pending"), NewOp("op-unknown"), NewOp("op-done")
	reach(t, s, pending, ownerA, ledger.StatusPending)
	reach(t, s, unknown, ownerA, ledger.StatusUnknown)
	reach(t, s, done, ownerA, ledger.StatusSucceeded)
	beforeDone, doneAtts := mustGet(t, s, done.ID)
	now := at(30 * time.Second)
	mustRecordNew(t, s, evt("evt_1", "payment.succeeded", byID(pending.ID, ledger.EffectLookup), byID(unknown.ID, ledger.EffectLookup),
		byID(done.ID, ledger.EffectLookup)), now,
		outcome(0, pending.ID, ledger.WebhookNudged, ledger.StatusPending, ledger.StatusPending),
		outcome(1, unknown.ID, ledger.WebhookNudged, ledger.StatusUnknown, ledger.StatusUnknown),
		outcome(2, done.ID, ledger.WebhookNoted, ledger.StatusSucceeded, ledger.StatusSucceeded))
	for _, id := range []string{pending.ID, unknown.ID} {
		got, _ := mustGet(t, s, id)
		requireTime(t, now, got.NextCheckAt, "NextCheckAt of "+id)
		require.Equal(t, ownerA, got.LeaseOwner, "a nudge takes no lease away")
	}
	requireUnchanged(t, s, beforeDone, doneAtts)
}

// Events that do not carry payonce's operation id find the operation by the
// provider's reference of the object, only among the provider's operations
// of the target's kind.
func testWebhookMatchProviderRef(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	unknownWithRef(t, s, op, "pi_known")
	unknownWithRef(t, s, newOpFor("op-other-psp", "checkout", "charge"), "pi_known")
	unknownWithRef(t, s, newOpFor("op-refund", "stripe", "refund"), "pi_known")
	target := ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_known", Effect: ledger.EffectSucceeded}
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", target), at(time.Minute),
		outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded))
	for _, id := range []string{"op-other-psp", "op-refund"} {
		got, _ := mustGet(t, s, id)
		require.Equal(t, ledger.StatusUnknown, got.Status, "%s is another provider's or another kind", id)
	}
}

// An event that names one object several ways (PayPal's: by the operation
// id it carries, by the payment's id, by the order's) decides the operation
// once: the first target that finds it is applied, the others that find it
// too are noted and change nothing, and the operation gets one audit entry.
func testWebhookOneOperationOnce(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	unknownWithRef(t, s, op, "pi_known")
	byOp := ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, ProviderRef: "pi_known", Effect: ledger.EffectSucceeded}
	byRef := ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_known", Effect: ledger.EffectSucceeded}
	lookup := ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_known", Effect: ledger.EffectLookup}
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", byOp, byRef, lookup), at(time.Minute),
		outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded),
		outcome(1, op.ID, ledger.WebhookNoted, ledger.StatusSucceeded, ledger.StatusSucceeded),
		outcome(2, op.ID, ledger.WebhookNoted, ledger.StatusSucceeded, ledger.StatusSucceeded))
	evs, _ := webhookEvents(t, s, op.ID)
	require.Len(t, evs, 1, "one audit entry for one event")

	// Unless a later target escalates: a second object that succeeded,
	// named after the first target confirmed the operation, still sends it
	// to review (money may have moved twice).
	dup := NewOp("op-dup")
	reach(t, s, dup, ownerA, ledger.StatusSucceeded)
	confirm := ledger.WebhookTarget{Kind: "charge", OperationID: dup.ID, ProviderRef: "pi_" + dup.ID, Effect: ledger.EffectSucceeded}
	second := ledger.WebhookTarget{Kind: "charge", OperationID: dup.ID, ProviderRef: "pi_second", Effect: ledger.EffectSucceeded}
	mustRecordNew(t, s, evt("evt_2", "payment_intent.succeeded", confirm, second), at(time.Hour),
		outcome(0, dup.ID, ledger.WebhookConfirmed, ledger.StatusSucceeded, ledger.StatusSucceeded),
		outcome(1, dup.ID, ledger.WebhookDuplicate, ledger.StatusSucceeded, ledger.StatusManualReview))
	got, _ := mustGet(t, s, dup.ID)
	require.Equal(t, ledger.ReviewCodeDuplicated, got.ReviewCode, got.ReviewReason)
}

// An event naming only the payment finds a capture, cancel or refund by the
// payment reference recorded at creation (Begin or CreateOrGet), but never
// settles it: a payment may have refunds or captures made outside payonce,
// so the operation is only made due for a lookup of its own object.
func testWebhookMatchPaymentRef(t *testing.T, h *Harness) {
	s := h.Store
	refund := refundOf("op-refund", "pi_1")
	got := mustCreate(t, s, refund, base)
	require.Equal(t, "pi_1", got.PaymentRef)
	stored, _ := mustGet(t, s, refund.ID)
	require.Equal(t, "pi_1", stored.PaymentRef, "the payment reference is recorded")
	capture := newOpFor("op-capture", "stripe", "capture")
	capture.PaymentRef = "pi_2"
	began, _ := mustStart(t, s, capture, ownerA, base)
	require.Equal(t, "pi_2", began.PaymentRef)
	stored, _ = mustGet(t, s, capture.ID)
	require.Equal(t, "pi_2", stored.PaymentRef)

	now := at(time.Minute)
	target := ledger.WebhookTarget{Kind: "refund", ProviderRef: "re_1", PaymentRef: "pi_1", Effect: ledger.EffectSucceeded}
	mustRecordNew(t, s, evt("evt_1", "charge.refund.updated", target), now,
		outcome(0, refund.ID, ledger.WebhookNudged, ledger.StatusPending, ledger.StatusPending))
	stored, _ = mustGet(t, s, refund.ID)
	require.Empty(t, stored.ProviderRef, "a payment-only match records nothing of the object")
	requireTime(t, now, stored.NextCheckAt, "NextCheckAt of the nudged refund")
	// The capture is found by its payment too, not by the refund's; in
	// flight, its sender is already on it.
	mustRecordNew(t, s, evt("evt_2", "charge.captured", ledger.WebhookTarget{Kind: "capture", PaymentRef: "pi_2", Effect: ledger.EffectSucceeded}), now,
		outcome(0, capture.ID, ledger.WebhookNoted, ledger.StatusInFlight, ledger.StatusInFlight))
}

// An id that names an operation of another kind (the payment's id echoed on
// its refund) does not match: the references are tried next.
func testWebhookIDOfAnotherKind(t *testing.T, h *Harness) {
	s := h.Store
	charge := NewOp("op-1")
	reach(t, s, charge, ownerA, ledger.StatusSucceeded)
	beforeCharge, chargeAtts := mustGet(t, s, charge.ID)
	refund := refundOf("op-refund", beforeCharge.ProviderRef)
	mustCreate(t, s, refund, base)
	target := ledger.WebhookTarget{Kind: "refund", OperationID: charge.ID, PaymentRef: beforeCharge.ProviderRef, Effect: ledger.EffectFailed}
	mustRecordNew(t, s, evt("evt_1", "refund.failed", target), at(time.Minute),
		outcome(0, refund.ID, ledger.WebhookNudged, ledger.StatusPending, ledger.StatusPending))
	requireUnchanged(t, s, beforeCharge, chargeAtts)
}

// Several operations behind one payment: none is settled on a guess; each
// unsettled one is made due for a lookup.
func testWebhookAmbiguous(t *testing.T, h *Harness) {
	s := h.Store
	r1, r2, r3 := refundOf("op-r1", "pi_1"), refundOf("op-r2", "pi_1"), refundOf("op-r3", "pi_1")
	mustCreate(t, s, r1, base)
	reach(t, s, r2, ownerA, ledger.StatusUnknown)
	reach(t, s, r3, ownerA, ledger.StatusSucceeded)
	before3, atts3 := mustGet(t, s, r3.ID)
	now := at(30 * time.Second)
	target := ledger.WebhookTarget{Kind: "refund", PaymentRef: "pi_1", Effect: ledger.EffectSucceeded}
	mustRecordNew(t, s, evt("evt_1", "charge.refunded", target), now,
		outcome(0, r1.ID, ledger.WebhookAmbiguous, ledger.StatusPending, ledger.StatusPending),
		outcome(0, r2.ID, ledger.WebhookAmbiguous, ledger.StatusUnknown, ledger.StatusUnknown),
		outcome(0, r3.ID, ledger.WebhookAmbiguous, ledger.StatusSucceeded, ledger.StatusSucceeded))
	for _, id := range []string{r1.ID, r2.ID} {
		got, _ := mustGet(t, s, id)
		require.False(t, got.Status.Final(), "%s is not settled on a guess", id)
		requireTime(t, now, got.NextCheckAt, "NextCheckAt of "+id)
		_, details := webhookEvents(t, s, id)
		require.Len(t, details, 1)
		require.Equal(t, ledger.WebhookNudged, details[0].Disposition)
		require.Equal(t, ledger.EffectLookup, details[0].Effect)
	}
	requireUnchanged(t, s, before3, atts3)
	evs, _ := webhookEvents(t, s, r3.ID)
	require.Empty(t, evs)
}

// Events for objects payonce did not create are recorded and counted, not
// applied.
func testWebhookUnmatched(t *testing.T, h *Harness) {
	s := h.Store
	reach(t, s, NewOp("op-1"), ownerA, ledger.StatusUnknown)
	before := snapshot(t, s)
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded",
		ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_elsewhere", Effect: ledger.EffectSucceeded},
		byID("op-missing", ledger.EffectSucceeded),
		ledger.WebhookTarget{Kind: "refund", OperationID: "op-1", Effect: ledger.EffectSucceeded}), at(time.Minute),
		ledger.WebhookOutcome{Target: 0, Disposition: ledger.WebhookUnmatched},
		ledger.WebhookOutcome{Target: 1, Disposition: ledger.WebhookUnmatched},
		ledger.WebhookOutcome{Target: 2, Disposition: ledger.WebhookUnmatched})
	require.Equal(t, before, snapshot(t, s))
	// An event that only informs is recorded too: its redelivery is a
	// duplicate.
	mustRecordNew(t, s, evt("evt_2", "account.updated"), at(time.Minute))
	rep := mustRecord(t, s, evt("evt_2", "account.updated"), at(time.Hour))
	require.True(t, rep.Duplicate)
	require.Empty(t, rep.Outcomes)
	require.Equal(t, []string{"stripe/evt_1"}, entryIDs(mustListWebhooks(t, s, ledger.InboxFilter{Disposition: ledger.WebhookUnmatched})),
		"an event without targets has no outcome")
}

// An event for an operation Cleanup removed finds its tombstone and, unless
// it contradicts the recorded outcome (reopen.go), changes nothing.
func testWebhookTombstone(t *testing.T, h *Harness) {
	s := h.Store
	was := settled(t, s, shortTTL("op-1"), ledger.StatusSucceeded)
	_, err := s.Cleanup(t.Context(), cleanupAt(cleanedAt))
	require.NoError(t, err)
	tomb, _ := mustGet(t, s, was.ID)
	require.True(t, tomb.Tombstone)
	now := cleanedAt.Add(time.Hour)
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", byID(was.ID, ledger.EffectSucceeded)), now,
		outcome(0, was.ID, ledger.WebhookTombstoned, ledger.StatusSucceeded, ledger.StatusSucceeded))
	mustRecordNew(t, s, evt("evt_3", "refund.failed", ledger.WebhookTarget{Kind: "refund", OperationID: was.ID, Effect: ledger.EffectFailed}), now,
		ledger.WebhookOutcome{Target: 0, Disposition: ledger.WebhookUnmatched})
	after, atts := mustGet(t, s, was.ID)
	require.Equal(t, tomb, after, "a tombstone is never changed")
	require.Empty(t, atts)
	require.Empty(t, mustEvents(t, s, was.ID))
}

// validWebhook is a valid RecordWebhookParams; each call builds its own
// targets, so that an edit never reaches another call's.
func validWebhook() ledger.RecordWebhookParams {
	return ledger.RecordWebhookParams{Now: at(invNow), Event: ledger.WebhookEvent{Provider: "stripe", ID: "evt_valid", Type: "payment_intent.succeeded",
		Targets: []ledger.WebhookTarget{{Kind: "charge", OperationID: invDue, Effect: ledger.EffectSucceeded, Result: []byte(`{"ok":true}`)}}}}
}

func testWebhookInvalid(t *testing.T, h *Harness) {
	s := h.Store
	before := seedInvalid(t, s)
	tooMany := make([]ledger.WebhookTarget, ledger.MaxWebhookTargets+1)
	for i := range tooMany {
		tooMany[i] = byID(invDue, ledger.EffectLookup)
	}
	target := func(p *ledger.RecordWebhookParams) *ledger.WebhookTarget { return &p.Event.Targets[0] }
	for _, c := range []struct {
		name, field string
		edit        func(p *ledger.RecordWebhookParams)
	}{
		{"zero Now", "Now", func(p *ledger.RecordWebhookParams) { p.Now = time.Time{} }},
		{"empty Provider", "Event.Provider", func(p *ledger.RecordWebhookParams) { p.Event.Provider = "" }},
		{"Provider not UTF-8", "Event.Provider", func(p *ledger.RecordWebhookParams) { p.Event.Provider = "str\xffpe" }},
		{"empty ID", "Event.ID", func(p *ledger.RecordWebhookParams) { p.Event.ID = "" }},
		{"oversized ID", "Event.ID", func(p *ledger.RecordWebhookParams) { p.Event.ID = strings.Repeat("e", ledger.MaxWebhookIDBytes+1) }},
		{"ID with a NUL byte", "Event.ID", func(p *ledger.RecordWebhookParams) { p.Event.ID = "evt_\x00" }},
		{"empty Type", "Event.Type", func(p *ledger.RecordWebhookParams) { p.Event.Type = "" }},
		{"Type not UTF-8", "Event.Type", func(p *ledger.RecordWebhookParams) { p.Event.Type = "\xff" }},
		{"too many targets", "Event.Targets", func(p *ledger.RecordWebhookParams) { p.Event.Targets = tooMany }},
		{"target without Kind", "Event.Targets[0].Kind", func(p *ledger.RecordWebhookParams) { target(p).Kind = "" }},
		{"Kind with a NUL byte", "Event.Targets[0].Kind", func(p *ledger.RecordWebhookParams) { target(p).Kind = "charge\x00" }},
		{"empty Effect", "Event.Targets[0].Effect", func(p *ledger.RecordWebhookParams) { target(p).Effect = "" }},
		{"unknown Effect", "Event.Targets[0].Effect", func(p *ledger.RecordWebhookParams) { target(p).Effect = "refunded" }},
		{"target naming nothing", "Event.Targets[0].OperationID", func(p *ledger.RecordWebhookParams) { target(p).OperationID = "" }},
		{"OperationID not UTF-8", "Event.Targets[0].OperationID", func(p *ledger.RecordWebhookParams) { target(p).OperationID = "op-\xff" }},
		{"ProviderRef not UTF-8", "Event.Targets[0].ProviderRef", func(p *ledger.RecordWebhookParams) { target(p).ProviderRef = "pi_\xff" }},
		{"PaymentRef with a NUL byte", "Event.Targets[0].PaymentRef", func(p *ledger.RecordWebhookParams) { target(p).PaymentRef = "pi_\x00" }},
		{"oversized Detail", "Event.Targets[0].Detail", func(p *ledger.RecordWebhookParams) { target(p).Detail = strings.Repeat("d", ledger.MaxTextBytes+1) }},
		{"Detail not UTF-8", "Event.Targets[0].Detail", func(p *ledger.RecordWebhookParams) { target(p).Detail = "\xff" }},
		{"Result not JSON", "Event.Targets[0].Result", func(p *ledger.RecordWebhookParams) { target(p).Result = []byte(`{"ok":`) }},
		{"empty Result", "Event.Targets[0].Result", func(p *ledger.RecordWebhookParams) { target(p).Result = []byte{} }},
		{"second target invalid", "Event.Targets[1].Kind", func(p *ledger.RecordWebhookParams) {
			p.Event.Targets = append(p.Event.Targets, ledger.WebhookTarget{OperationID: invDue, Effect: ledger.EffectSucceeded})
		}},
	} {
		p := validWebhook()
		c.edit(&p)
		_, err := s.RecordWebhook(t.Context(), p)
		requireInvalid(t, s, before, c.name, err)
		var ve *ledger.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, c.field, ve.Field, "%s: the error names the field", c.name)
		require.Empty(t, mustListWebhooks(t, s, ledger.InboxFilter{}), "%s: nothing recorded", c.name)
	}
	rep := mustRecord(t, s, validWebhook().Event, at(invNow))
	require.Equal(t, []ledger.WebhookOutcome{outcome(0, invDue, ledger.WebhookSettled, ledger.StatusPending, ledger.StatusSucceeded)}, rep.Outcomes,
		"the valid call")
}

func testWebhookInvalidFilter(t *testing.T, h *Harness) {
	s := h.Store
	for _, c := range []struct {
		name, field string
		f           ledger.InboxFilter
	}{
		{"unknown Disposition", "Disposition", ledger.InboxFilter{Disposition: "lost"}},
		{"negative Limit", "Limit", ledger.InboxFilter{Limit: -1}},
		{"Limit above MaxLimit", "Limit", ledger.InboxFilter{Limit: ledger.MaxLimit + 1}},
	} {
		_, err := s.ListWebhooks(t.Context(), c.f)
		require.ErrorIs(t, err, ledger.ErrInvalid, c.name)
		var ve *ledger.ValidationError
		require.ErrorAs(t, err, &ve, c.name)
		require.Equal(t, c.field, ve.Field, c.name)
	}
}

// Any number of concurrent deliveries of one event (in one process or
// several) record and apply it exactly once; the others report a
// duplicate, not an error.
func testWebhookConcurrent(t *testing.T, h *Harness) { webhookConcurrent(t, storesOf(t, h, false)) }
func testWebhookConcurrentTwoStores(t *testing.T, h *Harness) {
	webhookConcurrent(t, storesOf(t, h, true))
}

func webhookConcurrent(t *testing.T, stores []ledger.Store) {
	s := stores[0]
	op := NewOp("op-race")
	hd := reach(t, s, op, ownerA, ledger.StatusUnknown)
	e := evt("evt_race", "payment_intent.succeeded", byID(op.ID, ledger.EffectSucceeded))
	reps, errs := together(claimers, func(i int) (ledger.WebhookReport, error) {
		return stores[i%len(stores)].RecordWebhook(t.Context(), ledger.RecordWebhookParams{Event: e, Now: hd.now.Add(time.Duration(i) * time.Millisecond)})
	})
	fresh := 0
	for i, err := range errs {
		require.NoError(t, err, "delivery %d: a duplicate is no error", i)
		if !reps[i].Duplicate {
			fresh++
		}
		require.Equal(t, []ledger.WebhookOutcome{outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded)}, reps[i].Outcomes,
			"delivery %d reports what the one that applied it did", i)
	}
	require.Equal(t, 1, fresh, "exactly one delivery records the event")
	evs, _ := webhookEvents(t, s, op.ID)
	require.Len(t, evs, 1, "applied once")
	require.Len(t, mustListWebhooks(t, s, ledger.InboxFilter{}), 1)
}

func testWebhookList(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	reach(t, s, op, ownerA, ledger.StatusUnknown)
	result := []byte(` {"status" : "succeeded"} `)
	settle := ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, ProviderRef: "pi_1", PaymentRef: "pay_1", Effect: ledger.EffectSucceeded,
		Result: result, Detail: "ok"}
	e1 := evt("evt_a", "payment_intent.created", ledger.WebhookTarget{Kind: "charge", ProviderRef: "pi_x", Effect: ledger.EffectProcessing})
	e1.OccurredAt = time.Time{}
	e2 := evt("evt_b", "payment_intent.succeeded", settle)
	e3 := evt("evt_c", "payment_intent.succeeded", byID(op.ID, ledger.EffectSucceeded)) // same time as e2: by event id
	e4 := ledger.WebhookEvent{Provider: "adyen", ID: "psp_1:AUTHORISATION:true", Type: "AUTHORISATION",
		Targets: []ledger.WebhookTarget{{Kind: "charge", ProviderRef: "psp_1", Effect: ledger.EffectSucceeded}}}
	mustRecord(t, s, e1, at(time.Minute))
	mustRecord(t, s, e2, at(2*time.Minute))
	mustRecord(t, s, e3, at(2*time.Minute))
	mustRecord(t, s, e4, at(3*time.Minute))

	all := mustListWebhooks(t, s, ledger.InboxFilter{})
	require.Equal(t, []string{"adyen/psp_1:AUTHORISATION:true", "stripe/evt_b", "stripe/evt_c", "stripe/evt_a"}, entryIDs(all), "newest first")
	got := all[1]
	require.Equal(t, "payment_intent.succeeded", got.Type)
	requireTime(t, e2.OccurredAt, got.OccurredAt, "OccurredAt")
	requireTime(t, at(2*time.Minute), got.ReceivedAt, "ReceivedAt")
	require.Len(t, got.Targets, 1)
	require.Equal(t, string(result), string(got.Targets[0].Result), "the target's result byte for byte")
	got.Targets[0].Result = nil
	settle.Result = nil
	require.Equal(t, settle, got.Targets[0])
	require.Equal(t, []ledger.WebhookOutcome{outcome(0, op.ID, ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded)}, got.Outcomes)
	requireTime(t, time.Time{}, all[3].OccurredAt, "OccurredAt not given")
	require.Equal(t, []ledger.WebhookOutcome{{Target: 0, Disposition: ledger.WebhookUnmatched}}, all[3].Outcomes)

	for _, c := range []struct {
		f    ledger.InboxFilter
		want []string
	}{
		{ledger.InboxFilter{Provider: "stripe"}, []string{"stripe/evt_b", "stripe/evt_c", "stripe/evt_a"}},
		{ledger.InboxFilter{Provider: "checkout"}, nil},
		{ledger.InboxFilter{Disposition: ledger.WebhookUnmatched}, []string{"adyen/psp_1:AUTHORISATION:true", "stripe/evt_a"}},
		{ledger.InboxFilter{Disposition: ledger.WebhookConfirmed}, []string{"stripe/evt_c"}},
		{ledger.InboxFilter{Disposition: ledger.WebhookUnmatched, Provider: "stripe"}, []string{"stripe/evt_a"}},
		{ledger.InboxFilter{OperationID: op.ID}, []string{"stripe/evt_b", "stripe/evt_c"}},
		{ledger.InboxFilter{OperationID: op.ID, Disposition: ledger.WebhookSettled}, []string{"stripe/evt_b"}},
		{ledger.InboxFilter{OperationID: "op-none"}, nil},
		{ledger.InboxFilter{Limit: 2}, []string{"adyen/psp_1:AUTHORISATION:true", "stripe/evt_b"}},
	} {
		require.Equal(t, c.want, entryIDs(mustListWebhooks(t, s, c.f)), "%+v", c.f)
	}
}

func testWebhookListDefaultLimit(t *testing.T, h *Harness) {
	s := h.Store
	for i := range ledger.DefaultListLimit + 1 {
		mustRecord(t, s, evt(fmt.Sprintf("evt_%03d", i), "account.updated"), at(time.Duration(i)*time.Second))
	}
	got := mustListWebhooks(t, s, ledger.InboxFilter{})
	require.Len(t, got, ledger.DefaultListLimit)
	require.Equal(t, fmt.Sprintf("evt_%03d", ledger.DefaultListLimit), got[0].ID, "newest first")
	require.Len(t, mustListWebhooks(t, s, ledger.InboxFilter{Limit: ledger.MaxLimit}), ledger.DefaultListLimit+1)
}

// Cleanup keeps inbox entries as long as the provider may deliver their
// events again, then deletes them in batches.
func testWebhookCleanup(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-1")
	reach(t, s, op, ownerA, ledger.StatusUnknown)
	for i := range 3 {
		mustRecord(t, s, evt(fmt.Sprintf("evt_old_%d", i), "payment_intent.processing", byID(op.ID, ledger.EffectProcessing)), at(time.Duration(i)*time.Minute))
	}
	recentAt := at(20 * 24 * time.Hour)
	mustRecord(t, s, evt("evt_recent", "payment_intent.processing", byID(op.ID, ledger.EffectProcessing)), recentAt)

	// Just inside the default retention: nothing goes.
	p := cleanupAt(at(ledger.DefaultInboxRetention))
	rep, err := s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Zero(t, rep.InboxPurged)

	p = cleanupAt(at(ledger.DefaultInboxRetention + 3*time.Minute))
	p.BatchSize = 2
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 3, rep.InboxPurged, "in batches of 2")
	left := mustListWebhooks(t, s, ledger.InboxFilter{})
	require.Equal(t, []string{"stripe/evt_recent"}, entryIDs(left))
	require.Equal(t, []ledger.WebhookOutcome{outcome(0, op.ID, ledger.WebhookNoted, ledger.StatusUnknown, ledger.StatusUnknown)}, left[0].Outcomes)
	require.Equal(t, []string{"stripe/evt_recent"}, entryIDs(mustListWebhooks(t, s, ledger.InboxFilter{OperationID: op.ID})),
		"the outcomes went with their entries")

	before := mustListWebhooks(t, s, ledger.InboxFilter{})
	p = cleanupAt(recentAt.Add(2 * time.Hour))
	p.InboxRetention = -time.Hour
	_, err = s.Cleanup(t.Context(), p)
	require.ErrorIs(t, err, ledger.ErrInvalid)
	require.ErrorContains(t, err, "InboxRetention")
	require.Equal(t, before, mustListWebhooks(t, s, ledger.InboxFilter{}), "a refused cleanup deletes nothing")

	p.InboxRetention = time.Hour
	rep, err = s.Cleanup(t.Context(), p)
	require.NoError(t, err)
	require.Equal(t, 1, rep.InboxPurged, "a shorter retention is the caller's choice")
	require.Empty(t, mustListWebhooks(t, s, ledger.InboxFilter{}))
}

// RequireUpgradedFromVersion3 checks a store just migrated from schema
// version 3, where a version 3 build left the operation op1 of
// RequireUpgradedFromVersion1 (ID "op-1", unknown, leased to "w" until
// t0+1m, one attempt finished maybe_sent) and the tombstone of a succeeded
// charge "op-old" of stripe. The upgraded store must read them as they
// were, settle op-1 from a webhook, reopen op-old in review from its
// tombstone on a contradicting event, and record and match payment
// references of new operations.
func RequireUpgradedFromVersion3(t *testing.T, s ledger.Store, op1 ledger.NewOperation, t0 time.Time) {
	t.Helper()
	got, atts, err := s.Get(t.Context(), "op-1")
	require.NoError(t, err)
	require.Equal(t, ledger.StatusUnknown, got.Status)
	require.Equal(t, op1.Fingerprint, got.Fingerprint)
	require.Empty(t, got.PaymentRef, "operations of version 3 have no payment reference")
	require.Len(t, atts, 1)
	old, _, err := s.Get(t.Context(), "op-old")
	require.NoError(t, err)
	require.True(t, old.Tombstone)
	require.Empty(t, mustListWebhooks(t, s, ledger.InboxFilter{}))

	now := t0.Add(2 * time.Minute)
	mustRecordNew(t, s, evt("evt_1", "payment_intent.succeeded", ledger.WebhookTarget{Kind: "charge", OperationID: "op-1", ProviderRef: "pi_1",
		Effect: ledger.EffectSucceeded}), now, outcome(0, "op-1", ledger.WebhookSettled, ledger.StatusUnknown, ledger.StatusSucceeded))
	mustRecordNew(t, s, evt("evt_2", "charge.dispute.created", byID("op-old", ledger.EffectReversed)), now,
		outcome(0, "op-old", ledger.WebhookContradiction, ledger.StatusSucceeded, ledger.StatusManualReview))
	reopened, _, err := s.Get(t.Context(), "op-old")
	require.NoError(t, err)
	require.False(t, reopened.Tombstone)
	require.Equal(t, ledger.StatusManualReview, reopened.Status)
	refund := refundOf("op-refund", "pi_1")
	created := mustCreate(t, s, refund, now)
	require.Equal(t, "pi_1", created.PaymentRef)
	mustRecordNew(t, s, evt("evt_3", "refund.updated", ledger.WebhookTarget{Kind: "refund", PaymentRef: "pi_1", Effect: ledger.EffectFailed}), now,
		outcome(0, refund.ID, ledger.WebhookNudged, ledger.StatusPending, ledger.StatusPending))
	require.Equal(t, []string{"stripe/evt_1", "stripe/evt_2", "stripe/evt_3"}, entryIDs(mustListWebhooks(t, s, ledger.InboxFilter{})))
}

// An event applies to the key generation whose key or recorded object it
// names. A refund succeeded under generation 0, a late failure put it in
// review and an operator resent it under generation 1: the late events of
// generation 0's object (by key, or by the reference it recorded) never
// settle generation 1, whether it waits or is in flight. (That object's
// success after its recorded failure is stale; a success of an earlier
// object with no failure on record is a duplicate: testWebhookSecondObject
// and ApplyWebhook's table.)
func testWebhookGenerations(t *testing.T, h *Harness) {
	s := h.Store
	op := refundOf("op-gen", "pi_paid")
	reach(t, s, op, ownerA, ledger.StatusSucceeded)
	gen0 := ledger.WebhookTarget{Kind: "refund", OperationID: op.ID, ProviderRef: "pi_" + op.ID, Key: op.Key}
	failed := gen0
	failed.Effect = ledger.EffectReversed
	mustRecordNew(t, s, evt("evt_1", "refund.failed", failed), at(time.Hour),
		outcome(0, op.ID, ledger.WebhookContradiction, ledger.StatusSucceeded, ledger.StatusManualReview))
	mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "resend", Outcome: ledger.ResolveResend,
		NewKey: op.ID + "-g1", NewGeneration: 1, Now: at(2 * time.Hour)})

	// Generation 1 waits: generation 0's failure, by key or by reference,
	// is recorded and changes nothing.
	before, atts := mustGet(t, s, op.ID)
	require.Equal(t, ledger.StatusPending, before.Status)
	byRef := failed
	byRef.Key = ""
	byRef.Effect = ledger.EffectFailed
	mustRecordNew(t, s, evt("evt_2", "refund.updated", failed, byRef), at(3*time.Hour),
		outcome(0, op.ID, ledger.WebhookOtherObject, ledger.StatusPending, ledger.StatusPending),
		outcome(1, op.ID, ledger.WebhookNoted, ledger.StatusPending, ledger.StatusPending)) // one event, one decision
	after, afterAtts := mustGet(t, s, op.ID)
	require.Equal(t, before.Status, after.Status)
	require.Equal(t, before.NextCheckAt, after.NextCheckAt)
	require.Equal(t, atts, afterAtts)
	_, details := webhookEvents(t, s, op.ID)
	require.Equal(t, ledger.ObjectEarlier, details[len(details)-1].Object, "recorded as an earlier generation's")

	// Generation 1 in flight: its own answer is not discarded.
	now := at(4 * time.Hour)
	claimed := mustClaimDue(t, s, ledger.ClaimDueParams{Owner: ownerB, Now: now, LeaseUntil: now.Add(leaseFor), Limit: 10, Provider: op.Provider})
	require.Equal(t, []string{op.ID}, ids(claimed))
	_, a := mustStartAttempt(t, s, op.ID, ownerB, now)
	require.Equal(t, op.ID+"-g1", a.Key)
	mustRecordNew(t, s, evt("evt_3", "charge.refund.updated", failed), now.Add(time.Second),
		outcome(0, op.ID, ledger.WebhookOtherObject, ledger.StatusInFlight, ledger.StatusInFlight))
	_, inflight := mustGet(t, s, op.ID)
	require.True(t, inflight[len(inflight)-1].FinishedAt.IsZero(), "generation 1's attempt is still the caller's")

	// Generation 0's refund reported succeeded, late: its failure is on
	// record and a refund that failed does not succeed again, so this is an
	// older event; it changes nothing.
	ok := gen0
	ok.Effect = ledger.EffectSucceeded
	mustRecordNew(t, s, evt("evt_4", "refund.updated", ok), now.Add(2*time.Second),
		outcome(0, op.ID, ledger.WebhookOtherObject, ledger.StatusInFlight, ledger.StatusInFlight))
	got, _ := mustGet(t, s, op.ID)
	require.Empty(t, got.ProviderRef, "generation 0's object is never recorded as generation 1's")
}

// A second object carrying the operation's id is never a confirmation: its
// success sends the operation to review as duplicated; its failure is
// recorded and changes nothing. An object whose amount is not the
// operation's is a contradiction, never a settlement.
func testWebhookSecondObject(t *testing.T, h *Harness) {
	s := h.Store
	op := NewOp("op-second")
	reach(t, s, op, ownerA, ledger.StatusSucceeded)
	second := ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, ProviderRef: "pi_second", Effect: ledger.EffectFailed}
	mustRecordNew(t, s, evt("evt_1", "payment_intent.payment_failed", second), at(time.Hour),
		outcome(0, op.ID, ledger.WebhookOtherObject, ledger.StatusSucceeded, ledger.StatusSucceeded))
	second.Effect = ledger.EffectSucceeded
	mustRecordNew(t, s, evt("evt_2", "payment_intent.succeeded", second), at(time.Hour),
		outcome(0, op.ID, ledger.WebhookDuplicate, ledger.StatusSucceeded, ledger.StatusManualReview))
	got, _ := mustGet(t, s, op.ID)
	require.Equal(t, ledger.ReviewCodeDuplicated, got.ReviewCode, got.ReviewReason)
	require.Contains(t, got.ReviewReason, "pi_second")
	require.Equal(t, "pi_"+op.ID, got.ProviderRef)

	other := NewOp("op-amount")
	unknownWithRef(t, s, other, "pi_amount")
	mustRecordNew(t, s, evt("evt_3", "payment_intent.succeeded", ledger.WebhookTarget{Kind: "charge", OperationID: other.ID,
		ProviderRef: "pi_amount", Amount: 999, Currency: "eur", Effect: ledger.EffectSucceeded}), at(time.Hour),
		outcome(0, other.ID, ledger.WebhookContradiction, ledger.StatusUnknown, ledger.StatusManualReview))
	got, _ = mustGet(t, s, other.ID)
	require.Equal(t, ledger.ReviewCodeContradicted, got.ReviewCode, got.ReviewReason)
	require.Contains(t, got.ReviewReason, "amount 999, not 1000")
}

// Stripe does not deliver events in order. A refund succeeded, then failed
// (refund.failed: the money went back to the merchant), an operator resent
// it under generation 1, and only then does an older event of generation
// 0's refund arrive, still saying "succeeded" (a charge.refunded or
// refund.updated sent before the failure, delivered late or retried). The
// ledger already holds that object's failure: the old snapshot is stale,
// not a second movement of money. Sending the operation to review as
// duplicated stops the customer's refund for good, since a duplicated
// operation can never be resent.
func testWebhookStaleEarlierSuccess(t *testing.T, h *Harness) {
	s := h.Store
	op := newOpFor("op-stale-gen0", "stripe", "refund")
	reach(t, s, op, ownerA, ledger.StatusSucceeded)
	gen0 := ledger.WebhookTarget{Kind: "refund", OperationID: op.ID, ProviderRef: "pi_" + op.ID, Effect: ledger.EffectReversed}
	mustRecordNew(t, s, evt("evt_1", "refund.failed", gen0), at(time.Hour),
		outcome(0, op.ID, ledger.WebhookContradiction, ledger.StatusSucceeded, ledger.StatusManualReview))
	mustResolve(t, s, ledger.ResolveParams{ID: op.ID, Actor: "alice", Note: "refund failed; send it again", Outcome: ledger.ResolveResend,
		NewKey: op.ID + "-g1", NewGeneration: 1, Now: at(2 * time.Hour)})

	old := gen0
	old.Effect = ledger.EffectSucceeded
	rep := mustRecord(t, s, evt("evt_0", "charge.refunded", old), at(3*time.Hour))
	got, _ := mustGet(t, s, op.ID)
	require.Equal(t, ledger.StatusPending, got.Status,
		"a stale success of an object whose failure is on record must not stop generation 1 (%v, reason %q)", rep.Outcomes, got.ReviewReason)
}

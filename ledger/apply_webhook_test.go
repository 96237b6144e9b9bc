package ledger_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
)

// opIn is an operation in status st as a store reads it: leased to owner
// (except when final), due at t0 unless final.
func opIn(st ledger.Status) ledger.Operation {
	op := ledger.ApplyCreate(newOp(), t0)
	op.Status = st
	op.LeaseOwner, op.LeaseExpiresAt = owner, until
	switch st {
	case ledger.StatusSucceeded, ledger.StatusFailed:
		op.LeaseOwner, op.LeaseExpiresAt = "", time.Time{}
		op.NextCheckAt = time.Time{}
		op.FinishedAt = t0
		if st == ledger.StatusSucceeded {
			op.ProviderRef = "pi_1"
		}
	case ledger.StatusManualReview:
		op.ReviewReason, op.ReviewAt = "window passed, outcome unknown", t0
	}
	return op
}

// operatorReview is an operation in review that waits for an operator.
func operatorReview() ledger.Operation {
	op := opIn(ledger.StatusManualReview)
	op.NextCheckAt = time.Time{}
	return op
}

// contradictedReview is an operation a webhook contradicted: in review,
// with a lookup date set by hand (as a bad write would), still waiting for
// an operator because of its reason.
func contradictedReview() ledger.Operation {
	op := opIn(ledger.StatusManualReview)
	op.ReviewReason = ledger.ReasonWebhookContradiction + ": refund.failed"
	return op
}

// ofKind is op as an operation of kind (a capture, cancel or refund).
func ofKind(op ledger.Operation, kind string) ledger.Operation {
	op.Kind = kind
	return op
}

func tombstoneIn(st ledger.Status) ledger.Operation {
	op := opIn(st)
	return ledger.TombstoneOf(op, t0).Operation()
}

// TestApplyWebhook has one row per rule of ApplyWebhook's doc comment, in
// its order, for every status a rule speaks of.
func TestApplyWebhook(t *testing.T) {
	t.Parallel()
	const (
		pending, inFlight, unknown = ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown
		succeeded, failed, review  = ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview
	)
	type row struct {
		name   string
		op     ledger.Operation
		effect ledger.WebhookEffect
		disp   ledger.WebhookDisposition
		to     ledger.Status
	}
	rows := []row{
		// A tombstone is changed only by a contradiction, which reopens
		// the operation in review.
		{"tombstone agrees", tombstoneIn(succeeded), ledger.EffectSucceeded, ledger.WebhookTombstoned, succeeded},
		{"tombstone succeeded reversed", tombstoneIn(succeeded), ledger.EffectReversed, ledger.WebhookContradiction, review},
		{"tombstone succeeded failed", tombstoneIn(succeeded), ledger.EffectFailed, ledger.WebhookContradiction, review},
		{"tombstone failed succeeded", tombstoneIn(failed), ledger.EffectSucceeded, ledger.WebhookContradiction, review},
		{"tombstone processing", tombstoneIn(failed), ledger.EffectProcessing, ledger.WebhookTombstoned, failed},
		// lookup: never trusted by itself.
		{"lookup pending", opIn(pending), ledger.EffectLookup, ledger.WebhookNudged, pending},
		{"lookup unknown", opIn(unknown), ledger.EffectLookup, ledger.WebhookNudged, unknown},
		{"lookup review wanting lookups", opIn(review), ledger.EffectLookup, ledger.WebhookNudged, review},
		{"lookup review for an operator", operatorReview(), ledger.EffectLookup, ledger.WebhookNoted, review},
		{"lookup in flight", opIn(inFlight), ledger.EffectLookup, ledger.WebhookNoted, inFlight},
		{"lookup succeeded", opIn(succeeded), ledger.EffectLookup, ledger.WebhookNoted, succeeded},
		{"lookup failed", opIn(failed), ledger.EffectLookup, ledger.WebhookNoted, failed},
		// processing never moves an operation.
		{"processing pending", opIn(pending), ledger.EffectProcessing, ledger.WebhookNoted, pending},
		{"processing in flight", opIn(inFlight), ledger.EffectProcessing, ledger.WebhookNoted, inFlight},
		{"processing unknown", opIn(unknown), ledger.EffectProcessing, ledger.WebhookNoted, unknown},
		{"processing review", opIn(review), ledger.EffectProcessing, ledger.WebhookNoted, review},
		{"processing succeeded", opIn(succeeded), ledger.EffectProcessing, ledger.WebhookStale, succeeded},
		{"processing failed", opIn(failed), ledger.EffectProcessing, ledger.WebhookStale, failed},
		// Settled operations: agreement confirms, disagreement contradicts.
		{"succeeded succeeded", opIn(succeeded), ledger.EffectSucceeded, ledger.WebhookConfirmed, succeeded},
		{"failed failed", opIn(failed), ledger.EffectFailed, ledger.WebhookConfirmed, failed},
		{"failed reversed", opIn(failed), ledger.EffectReversed, ledger.WebhookConfirmed, failed},
		{"succeeded failed", opIn(succeeded), ledger.EffectFailed, ledger.WebhookContradiction, review},
		{"succeeded reversed", opIn(succeeded), ledger.EffectReversed, ledger.WebhookContradiction, review},
		{"failed succeeded", opIn(failed), ledger.EffectSucceeded, ledger.WebhookContradiction, review},
		// Not settled yet: the provider's account settles it.
		{"pending succeeded", opIn(pending), ledger.EffectSucceeded, ledger.WebhookSettled, succeeded},
		{"pending failed", opIn(pending), ledger.EffectFailed, ledger.WebhookSettled, failed},
		{"unknown succeeded", opIn(unknown), ledger.EffectSucceeded, ledger.WebhookSettled, succeeded},
		{"unknown refund reversed", ofKind(opIn(unknown), "refund"), ledger.EffectReversed, ledger.WebhookSettled, failed},
		{"pending capture reversed", ofKind(opIn(pending), "capture"), ledger.EffectReversed, ledger.WebhookSettled, failed},
		// ...except a charge charged back before it was settled: an operator
		// decides.
		{"unknown charge reversed", opIn(unknown), ledger.EffectReversed, ledger.WebhookContradiction, review},
		{"in flight charge reversed", opIn(inFlight), ledger.EffectReversed, ledger.WebhookContradiction, review},
		{"in flight succeeded", opIn(inFlight), ledger.EffectSucceeded, ledger.WebhookSettled, succeeded},
		{"in flight failed", opIn(inFlight), ledger.EffectFailed, ledger.WebhookSettled, failed},
		// Review: settled when it still wants lookups, noted when it waits
		// for an operator.
		{"review wanting lookups succeeded", opIn(review), ledger.EffectSucceeded, ledger.WebhookSettled, succeeded},
		{"review wanting lookups refund reversed", ofKind(opIn(review), "refund"), ledger.EffectReversed, ledger.WebhookSettled, failed},
		{"review wanting lookups charge reversed", opIn(review), ledger.EffectReversed, ledger.WebhookNoted, review},
		{"review for an operator succeeded", operatorReview(), ledger.EffectSucceeded, ledger.WebhookNoted, review},
		{"review after a contradiction", contradictedReview(), ledger.EffectSucceeded, ledger.WebhookNoted, review},
	}
	e := ledger.WebhookEvent{Provider: "stripe", ID: "evt_1", Type: "payment_intent.succeeded"}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			target := ledger.WebhookTarget{Kind: r.op.Kind, OperationID: r.op.ID, ProviderRef: "pi_hook", Effect: r.effect,
				Result: []byte(`{"status":"x"}`), Detail: "code=1"}
			var recorded *ledger.Attempt
			if r.op.Status == inFlight && !r.op.Tombstone {
				recorded = &ledger.Attempt{OperationID: r.op.ID, Number: 1, Key: r.op.Key, StartedAt: t0, MayHaveReached: true}
			}
			ch, disp := ledger.ApplyWebhook(r.op, e, target, recorded, now)
			require.Equal(t, r.disp, disp)
			require.Equal(t, r.to, ch.Op.Status)

			// A tombstone is returned as it is, with nothing to write,
			// unless it is reopened: then it is the live operation, with no
			// request, and a note after the event's entry.
			if r.op.Tombstone && disp == ledger.WebhookTombstoned {
				require.Equal(t, r.op, ch.Op)
				require.Nil(t, ch.Attempt)
				require.Empty(t, ch.Events)
				return
			}
			if r.op.Tombstone {
				require.False(t, ch.Op.Tombstone)
				require.Nil(t, ch.Op.Request)
				require.Len(t, ch.Events, 2)
				require.Equal(t, ledger.EventNote, ch.Events[1].Kind)
				require.Contains(t, ch.Events[1].Detail, "reopened from the tombstone")
			}
			// Every other disposition is on the operation's record.
			require.NotEmpty(t, ch.Events)
			require.Equal(t, ledger.EventWebhook, ch.Events[0].Kind)
			require.Equal(t, "webhook:stripe", ch.Events[0].Actor)
			var d ledger.WebhookDetail
			require.NoError(t, json.Unmarshal([]byte(ch.Events[0].Detail), &d))
			require.Equal(t, ledger.WebhookDetail{Provider: "stripe", EventID: "evt_1", Type: e.Type, Effect: r.effect, Disposition: disp,
				ProviderRef: "pi_hook", Detail: "code=1"}, d)

			switch disp {
			case ledger.WebhookNoted, ledger.WebhookStale, ledger.WebhookConfirmed:
				require.Equal(t, r.op, ch.Op, "nothing changes")
				require.Nil(t, ch.Attempt)
				require.Len(t, ch.Events, 1)
			case ledger.WebhookNudged:
				want := r.op
				want.NextCheckAt, want.UpdatedAt = now, now
				require.Equal(t, want, ch.Op, "only due now")
				require.Nil(t, ch.Attempt)
			case ledger.WebhookContradiction:
				require.True(t, strings.HasPrefix(ch.Op.ReviewReason, ledger.ReasonWebhookContradiction))
				require.Contains(t, ch.Op.ReviewReason, e.Type)
				require.Contains(t, ch.Op.ReviewReason, "code=1")
				require.Equal(t, now, ch.Op.ReviewAt)
				require.True(t, ch.Op.NextCheckAt.IsZero(), "waits for an operator")
				require.Empty(t, ch.Op.LeaseOwner)
				require.Equal(t, r.op.ProviderRef, ch.Op.ProviderRef, "what the ledger held is kept")
				require.Equal(t, r.op.Result, ch.Op.Result)
			case ledger.WebhookSettled:
				require.Equal(t, "pi_hook", ch.Op.ProviderRef)
				require.Equal(t, `{"status":"x"}`, string(ch.Op.Result))
				require.Equal(t, now, ch.Op.FinishedAt)
				require.True(t, ch.Op.NextCheckAt.IsZero())
				require.Empty(t, ch.Op.LeaseOwner)
				require.True(t, ch.Op.LeaseExpiresAt.IsZero())
				if r.op.Status == inFlight {
					require.NotNil(t, ch.Attempt, "the attempt in flight is finished")
					require.Equal(t, ledger.OutcomeMaybeSent, ch.Attempt.Outcome)
					require.Equal(t, now, ch.Attempt.FinishedAt)
					require.True(t, ch.Attempt.MayHaveReached)
					require.Contains(t, ch.Attempt.Error, "evt_1")
				} else {
					require.Nil(t, ch.Attempt)
				}
				if r.op.Status == review {
					require.NotNil(t, ch.Op.Resolution)
					require.Equal(t, "webhook:stripe", ch.Op.Resolution.Actor)
					require.Equal(t, ledger.ResolutionOutcome(r.to), ch.Op.Resolution.Outcome)
					require.Len(t, ch.Events, 2)
					require.Equal(t, ledger.EventResolution, ch.Events[1].Kind)
				} else {
					require.Nil(t, ch.Op.Resolution)
					require.Len(t, ch.Events, 1)
				}
			default:
				t.Fatalf("unexpected disposition %s", disp)
			}
		})
	}
}

// An attempt already finished (its answer recorded before the event) is not
// touched; a long provider message never makes the event unrecordable.
func TestApplyWebhookEdges(t *testing.T) {
	t.Parallel()
	op := opIn(ledger.StatusInFlight)
	done := &ledger.Attempt{OperationID: op.ID, Number: 1, StartedAt: t0, FinishedAt: t0, Outcome: ledger.OutcomeMaybeSent, MayHaveReached: true}
	e := ledger.WebhookEvent{Provider: "stripe", ID: "evt_1", Type: "t"}
	ch, disp := ledger.ApplyWebhook(op, e, ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, Effect: ledger.EffectSucceeded}, done, now)
	require.Equal(t, ledger.WebhookSettled, disp)
	require.Nil(t, ch.Attempt)

	long := strings.Repeat("é", ledger.MaxTextBytes)
	ch, disp = ledger.ApplyWebhook(opIn(ledger.StatusSucceeded), e,
		ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, Effect: ledger.EffectReversed, Detail: long}, nil, now)
	require.Equal(t, ledger.WebhookContradiction, disp)
	require.LessOrEqual(t, len(ch.Op.ReviewReason), ledger.MaxTextBytes)
	require.True(t, utf8.ValidString(ch.Op.ReviewReason), "cut on a rune boundary")
	require.LessOrEqual(t, len(ch.Events[0].Detail), ledger.MaxTextBytes)
	require.True(t, utf8.ValidString(ch.Events[0].Detail))
}

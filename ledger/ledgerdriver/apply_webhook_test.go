package ledgerdriver_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerdriver"
)

// opIn is an operation in status st as a store reads it: leased to owner
// (except when final), due at t0 unless final.
func opIn(st ledger.Status) ledger.Operation {
	op := ledgerdriver.ApplyCreate(newOp(), t0)
	op.Status = st
	op.LeaseOwner, op.LeaseExpiresAt = owner, until
	switch st {
	case ledger.StatusSucceeded, ledger.StatusFailed:
		op.LeaseOwner, op.LeaseExpiresAt = "", time.Time{}
		op.NextCheckAt = time.Time{}
		op.FinishedAt = t0
		if st == ledger.StatusSucceeded {
			// The object the table's events name: an event about another
			// object is TestApplyWebhookObjects'.
			op.ProviderRef = "pi_hook"
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
	op.ReviewCode = ledger.ReviewCodeWebhookContradiction
	op.ReviewReason = ledger.ReasonWebhookContradiction + ": refund.failed"
	return op
}

// codeOfReason is the review code ApplyWebhook records with each reason it
// starts with these texts.
var codeOfReason = map[string]ledger.ReviewCode{
	ledger.ReasonDuplicated:           ledger.ReviewCodeDuplicated,
	ledger.ReasonContradicted:         ledger.ReviewCodeContradicted,
	ledger.ReasonWebhookContradiction: ledger.ReviewCodeWebhookContradiction,
}

// ofKind is op as an operation of kind (a capture, cancel or refund).
func ofKind(op ledger.Operation, kind string) ledger.Operation {
	op.Kind = kind
	return op
}

func tombstoneIn(st ledger.Status) ledger.Operation {
	op := opIn(st)
	return ledgerdriver.TombstoneOf(op, t0).Operation()
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
			ch, disp := ledgerdriver.ApplyWebhook(r.op, ledgerdriver.Generations{}, e, target, recorded, now)
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
				ProviderRef: "pi_hook", Object: ledger.ObjectCurrent, Detail: "code=1"}, d)

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
				require.Equal(t, ledger.ReviewCodeWebhookContradiction, ch.Op.ReviewCode, ch.Op.ReviewReason)
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
	ch, disp := ledgerdriver.ApplyWebhook(op, ledgerdriver.Generations{}, e, ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, Effect: ledger.EffectSucceeded}, done, now)
	require.Equal(t, ledger.WebhookSettled, disp)
	require.Nil(t, ch.Attempt)

	long := strings.Repeat("é", ledger.MaxTextBytes)
	ch, disp = ledgerdriver.ApplyWebhook(opIn(ledger.StatusSucceeded), ledgerdriver.Generations{}, e,
		ledger.WebhookTarget{Kind: "charge", OperationID: op.ID, Effect: ledger.EffectReversed, Detail: long}, nil, now)
	require.Equal(t, ledger.WebhookContradiction, disp)
	require.LessOrEqual(t, len(ch.Op.ReviewReason), ledger.MaxTextBytes)
	require.True(t, utf8.ValidString(ch.Op.ReviewReason), "cut on a rune boundary")
	require.LessOrEqual(t, len(ch.Events[0].Detail), ledger.MaxTextBytes)
	require.True(t, utf8.ValidString(ch.Events[0].Detail))
}

// sent is op with an attempt under its current key that may have reached
// the provider (its key window open).
func sent(op ledger.Operation) ledger.Operation {
	op.WindowStart, op.KeyExpiresAt = t0, t0.Add(keyTTL)
	return op
}

// resent is op at key generation 1 (key "k-g1") after an operator's
// resend: generation 0 sent "op-1" and recorded re_0.
func resent(op ledger.Operation) ledger.Operation {
	op.Generation, op.Key, op.ProviderRef = 1, "k-g1", ""
	return op
}

// TestApplyWebhookObjects: an event decides only about the object it
// names. An earlier key generation's object, or a second object carrying
// the operation's id, never settles or confirms the current generation;
// its success sends the operation to review as duplicated. An object that
// does not belong to the operation (amount, currency, operation id) is a
// contradiction.
func TestApplyWebhookObjects(t *testing.T) {
	t.Parallel()
	const (
		pending, inFlight, unknown = ledger.StatusPending, ledger.StatusInFlight, ledger.StatusUnknown
		succeeded, failed, review  = ledger.StatusSucceeded, ledger.StatusFailed, ledger.StatusManualReview
	)
	gens := ledgerdriver.Generations{Keys: []string{"op-1"}, Refs: []string{"re_0"}}
	refund := func(st ledger.Status) ledger.Operation { return ofKind(opIn(st), "refund") }
	capture := ofKind(opIn(pending), "capture")
	capture.PaymentRef = "pi_pay"
	withRef := func(op ledger.Operation, ref string) ledger.Operation { op.ProviderRef = ref; return op }
	eur := func(op ledger.Operation) ledger.Operation {
		op.Request = []byte(`{"amount":1000,"currency":"EUR"}`)
		return op
	}
	type row struct {
		name   string
		op     ledger.Operation
		gens   ledgerdriver.Generations
		target ledger.WebhookTarget
		obj    ledger.WebhookObject
		disp   ledger.WebhookDisposition
		to     ledger.Status
		reason string
	}
	rows := []row{
		// The key names the generation.
		{"earlier key failed, never-sent generation 1", resent(refund(pending)), gens,
			ledger.WebhookTarget{Key: "op-1", ProviderRef: "re_0", Effect: ledger.EffectFailed}, ledger.ObjectEarlier, ledger.WebhookOtherObject, pending, ""},
		{"earlier key reversed, generation 1 in flight", resent(refund(inFlight)), gens,
			ledger.WebhookTarget{Key: "op-1", ProviderRef: "re_0", Effect: ledger.EffectReversed}, ledger.ObjectEarlier, ledger.WebhookOtherObject, inFlight, ""},
		{"earlier charge charged back while generation 1 is pending", resent(opIn(pending)), ledgerdriver.Generations{Keys: []string{"op-1"}, Refs: []string{"pi_0"}},
			ledger.WebhookTarget{ProviderRef: "pi_0", Effect: ledger.EffectReversed}, ledger.ObjectEarlier, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		{"second charge charged back", opIn(succeeded), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_2", Effect: ledger.EffectReversed}, ledger.ObjectOther, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		{"earlier key processing", resent(refund(unknown)), gens,
			ledger.WebhookTarget{Key: "op-1", Effect: ledger.EffectProcessing}, ledger.ObjectEarlier, ledger.WebhookOtherObject, unknown, ""},
		{"earlier key succeeded while generation 1 is pending", resent(refund(pending)), gens,
			ledger.WebhookTarget{Key: "op-1", ProviderRef: "re_0", Effect: ledger.EffectSucceeded}, ledger.ObjectEarlier, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		{"earlier key succeeded after generation 1 succeeded", withRef(resent(refund(succeeded)), "re_1"), gens,
			ledger.WebhookTarget{Key: "op-1", ProviderRef: "re_0", Effect: ledger.EffectSucceeded}, ledger.ObjectEarlier, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		{"current key failed settles generation 1", resent(refund(unknown)), gens,
			ledger.WebhookTarget{Key: "k-g1", ProviderRef: "re_1", Effect: ledger.EffectFailed}, ledger.ObjectCurrent, ledger.WebhookSettled, failed, ""},
		{"a key never sent succeeded", resent(refund(unknown)), gens,
			ledger.WebhookTarget{Key: "k-other", ProviderRef: "re_9", Effect: ledger.EffectSucceeded}, ledger.ObjectOther, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		// Without a key, the recorded objects name the generation.
		{"earlier reference failed", resent(refund(pending)), gens,
			ledger.WebhookTarget{ProviderRef: "re_0", Effect: ledger.EffectFailed}, ledger.ObjectEarlier, ledger.WebhookOtherObject, pending, ""},
		{"current reference succeeded", withRef(resent(refund(unknown)), "re_1"), gens,
			ledger.WebhookTarget{ProviderRef: "re_1", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookSettled, succeeded, ""},
		{"unknown object while the resend is unsent: not its own", resent(refund(pending)), gens,
			ledger.WebhookTarget{ProviderRef: "re_9", Effect: ledger.EffectFailed}, ledger.ObjectOther, ledger.WebhookOtherObject, pending, ""},
		{"unknown object after a resend was sent: a lookup decides", sent(resent(refund(unknown))), gens,
			ledger.WebhookTarget{ProviderRef: "re_9", Effect: ledger.EffectFailed}, ledger.ObjectUnplaced, ledger.WebhookNudged, unknown, ""},
		{"unknown object after a resend, in flight, failed: noted", sent(resent(refund(inFlight))), gens,
			ledger.WebhookTarget{ProviderRef: "re_9", Effect: ledger.EffectFailed}, ledger.ObjectUnplaced, ledger.WebhookNoted, inFlight, ""},
		{"unknown object after a resend, in flight, succeeded: review", sent(resent(refund(inFlight))), gens,
			ledger.WebhookTarget{ProviderRef: "re_9", Effect: ledger.EffectSucceeded}, ledger.ObjectUnplaced, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		{"earlier refund's stale success after its failure", resent(refund(pending)), ledgerdriver.Generations{Keys: []string{"op-1"}, Refs: []string{"re_0"},
			Failed: []ledger.WebhookDetail{{ProviderRef: "re_0", Effect: ledger.EffectReversed}}},
			ledger.WebhookTarget{ProviderRef: "re_0", Effect: ledger.EffectSucceeded}, ledger.ObjectEarlier, ledger.WebhookOtherObject, pending, ""},
		{"earlier charge's success after its failure is a duplicate", resent(opIn(pending)), ledgerdriver.Generations{Keys: []string{"op-1"}, Refs: []string{"pi_0"},
			Failed: []ledger.WebhookDetail{{ProviderRef: "pi_0", Effect: ledger.EffectFailed}}},
			ledger.WebhookTarget{ProviderRef: "pi_0", Effect: ledger.EffectSucceeded}, ledger.ObjectEarlier, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		// A second object at generation 0.
		{"second object succeeded after the first", opIn(succeeded), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_2", Effect: ledger.EffectSucceeded}, ledger.ObjectOther, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		{"second object under the same key", opIn(succeeded), ledgerdriver.Generations{},
			ledger.WebhookTarget{Key: "op-1", ProviderRef: "pi_2", Effect: ledger.EffectSucceeded}, ledger.ObjectOther, ledger.WebhookDuplicate, review, ledger.ReasonDuplicated},
		{"second object failed", opIn(succeeded), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_2", Effect: ledger.EffectFailed}, ledger.ObjectOther, ledger.WebhookOtherObject, succeeded, ""},
		{"an object named while in review for an operator", operatorReview(), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_2", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookNoted, review, ""},
		{"first object named at generation 0", opIn(unknown), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_1", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookSettled, succeeded, ""},
		// A capture names the payment it acts on, whose key is its charge's.
		{"capture of the payment", capture, ledgerdriver.Generations{},
			ledger.WebhookTarget{Key: "charge-key", ProviderRef: "pi_pay", PaymentRef: "pi_pay", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookSettled, succeeded, ""},
		{"capture of the payment after a resend", resent(capture), ledgerdriver.Generations{Keys: []string{"op-1"}, Refs: []string{"pi_pay"}},
			ledger.WebhookTarget{Key: "charge-key", ProviderRef: "pi_pay", PaymentRef: "pi_pay", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookSettled, succeeded, ""},
		{"capture of another payment", capture, ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_else", PaymentRef: "pi_else", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookContradiction, review, ledger.ReasonContradicted},
		// The object must belong to the operation.
		{"another amount", eur(opIn(unknown)), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_1", Amount: 500, Currency: "eur", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookContradiction, review, ledger.ReasonContradicted},
		{"another currency", eur(opIn(unknown)), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_1", Amount: 1000, Currency: "usd", Effect: ledger.EffectFailed}, ledger.ObjectCurrent, ledger.WebhookContradiction, review, ledger.ReasonContradicted},
		{"another operation id", eur(opIn(unknown)), ledgerdriver.Generations{},
			ledger.WebhookTarget{OperationID: "op-2", ProviderRef: "pi_1", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookContradiction, review, ledger.ReasonContradicted},
		{"another amount after success", withRef(eur(opIn(succeeded)), "pi_1"), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_1", Amount: 999, Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookContradiction, review, ledger.ReasonContradicted},
		{"same amount and currency", eur(opIn(unknown)), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_1", Amount: 1000, Currency: "eur", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookSettled, succeeded, ""},
		{"no amount in the event", eur(opIn(unknown)), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_1", Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookSettled, succeeded, ""},
		{"another amount, review for an operator", eur(operatorReview()), ledgerdriver.Generations{},
			ledger.WebhookTarget{ProviderRef: "pi_1", Amount: 1, Effect: ledger.EffectSucceeded}, ledger.ObjectCurrent, ledger.WebhookNoted, review, ""},
	}
	e := ledger.WebhookEvent{Provider: "stripe", ID: "evt_1", Type: "refund.updated"}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			target := r.target
			target.Kind = r.op.Kind
			if target.OperationID == "" {
				target.OperationID = r.op.ID
			}
			require.Equal(t, r.obj, ledgerdriver.ObjectOf(r.op, r.gens, target))
			var recorded *ledger.Attempt
			if r.op.Status == inFlight {
				recorded = &ledger.Attempt{OperationID: r.op.ID, Number: 2, Key: r.op.Key, StartedAt: t0, MayHaveReached: true}
			}
			ch, disp := ledgerdriver.ApplyWebhook(r.op, r.gens, e, target, recorded, now)
			require.Equal(t, r.disp, disp)
			require.Equal(t, r.to, ch.Op.Status)
			var d ledger.WebhookDetail
			require.NoError(t, json.Unmarshal([]byte(ch.Events[0].Detail), &d))
			require.Equal(t, r.obj, d.Object, "the event is recorded with the object it was about")
			require.Equal(t, target.Key, d.Key)
			switch disp {
			case ledger.WebhookOtherObject, ledger.WebhookNoted:
				require.Equal(t, r.op, ch.Op, "the current generation is unchanged")
				require.Nil(t, ch.Attempt)
			case ledger.WebhookDuplicate, ledger.WebhookContradiction:
				require.Equal(t, codeOfReason[r.reason], ch.Op.ReviewCode, ch.Op.ReviewReason)
				require.Contains(t, ch.Op.ReviewReason, r.reason)
				require.True(t, ch.Op.NextCheckAt.IsZero(), "waits for an operator")
				require.Equal(t, r.op.ProviderRef, ch.Op.ProviderRef, "never recorded as the operation's object")
				require.Equal(t, r.op.Result, ch.Op.Result)
				if r.op.Status == inFlight {
					require.NotNil(t, ch.Attempt)
					require.Equal(t, ledger.OutcomeMaybeSent, ch.Attempt.Outcome)
				}
			}
		})
	}
}

func TestPreviousRefs(t *testing.T) {
	t.Parallel()
	d := func(ref string) string {
		return ledger.ResolutionDetail{Outcome: ledger.ResolveResend, Note: "n", PreviousProviderRef: ref}.String()
	}
	require.Equal(t, []string{"re_0", "re_1"}, ledgerdriver.PreviousRefs([]string{d("re_0"), d(""), "not json", d("re_1"), d("re_0")}))
	require.Nil(t, ledgerdriver.PreviousRefs(nil))
}

// An earlier key generation whose reference the ledger never recorded
// (its answer was lost; the operator resent after a lookup found nothing)
// has its object succeed late, while the new generation is still pending.
// Nothing was ever sent under the new key (a pending operation has no
// open window), so the object cannot be the new generation's: money moved
// under an earlier key, and sending the new generation would move it a
// second time. The event must stop the resend (review as duplicated), not
// make the pending generation due to be sent now.
func TestApplyWebhookUnplacedSuccessBeforeTheNewKeyIsSent(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"charge", "refund"} {
		op := resent(ofKind(opIn(ledger.StatusPending), kind))
		require.True(t, op.WindowStart.IsZero(), "nothing was sent under the new key")
		// Generation 0 sent its key; no reference was recorded under it.
		gens := ledgerdriver.Generations{Keys: []string{"op-1"}}
		target := ledger.WebhookTarget{Kind: kind, OperationID: op.ID, ProviderRef: "obj_gen0", Effect: ledger.EffectSucceeded}
		e := ledger.WebhookEvent{Provider: "stripe", ID: "evt_late", Type: "late.succeeded"}
		ch, disp := ledgerdriver.ApplyWebhook(op, gens, e, target, nil, now)
		require.Equal(t, ledger.WebhookDuplicate, disp, "%s: an earlier object's success while the new key is unsent", kind)
		require.Equal(t, ledger.StatusManualReview, ch.Op.Status, kind)
		require.Equal(t, ledger.ReviewCodeDuplicated, ch.Op.ReviewCode, ch.Op.ReviewReason)
		require.True(t, ch.Op.NextCheckAt.IsZero(), "%s: the new generation must not be sent", kind)
	}
}

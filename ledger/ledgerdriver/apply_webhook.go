package ledgerdriver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payonce/payonce/ledger"
)

// ApplyWebhook is what target t of event e does to op, read under the
// store's lock (op may be a tombstone). earlier is what the ledger knows of
// op's earlier key generations (EarlierGenerations; empty at generation
// 0). recorded is op's latest attempt as stored when op is in_flight, nil
// otherwise. The Change holds the new operation, the attempt it finished
// (in_flight only) and the audit entries; a disposition that changes
// nothing still returns op unchanged with its EventWebhook entry (none for
// a tombstone). The store writes the Change, then the inbox entry with the
// disposition, in one transaction; on a tombstone only an event that puts
// the operation in review changes anything: the Change is then the
// operation reopened in review, which the store writes in place of the
// tombstone (see reopened).
//
// The rules, in the order they are checked:
//   - An event never causes a request to be sent: at most it settles an
//     operation, puts it in review, or makes it due for a status lookup.
//   - EffectLookup (an unauthenticated notice) is never trusted by itself:
//     a pending or unknown operation, or one in review that still wants
//     lookups, becomes due now (nudged); anything else is noted.
//   - An event decides only about the object it names (ObjectOf): the
//     current key generation's, an earlier generation's, or another
//     object carrying the operation's id. An earlier generation's object
//     never settles the current one: its failure or processing is only
//     recorded on the operation (WebhookOtherObject); its success, or the
//     success of another object, means money moved under a second object,
//     so the operation goes to review as duplicated (WebhookDuplicate),
//     never to "confirmed". An event whose generation cannot be told (no
//     key, no recorded object, the operation was resent) only makes the
//     operation due for a lookup, which sees every generation.
//   - An object of the current generation that does not belong to the
//     operation (another operation id, amount or currency: the check
//     adapters apply to answers and lookups) is a contradiction: review,
//     never a settlement.
//   - EffectProcessing never moves an operation: noted on one not settled
//     yet, stale on a settled one (an older event arriving late).
//   - On a succeeded or failed operation an event that agrees is confirmed;
//     one that disagrees (failed or reversed after succeeded, succeeded
//     after failed) is a contradiction: the operation goes to manual_review
//     with the event as its reason, and no lookup settles it again, so the
//     ledger never silently disagrees with the provider.
//   - On a pending, in_flight or unknown operation, succeeded settles it
//     succeeded; failed and reversed settle it failed (a capture or refund
//     that failed after it succeeded has not moved money), except a charge
//     reversed (charged back) before it was settled: that goes to review. The provider's own
//     account is the truth, whatever the ledger thought was sent; an
//     attempt in flight is finished as maybe_sent (its answer, when it
//     arrives, finds the operation settled).
//   - On an operation in review that still wants lookups (NextCheckAt set:
//     the outcome was unknown when the key window passed, or processing
//     lasted too long), a settling event settles it with a resolution
//     naming the event, as a definitive lookup would. A review that waits
//     for an operator (more than one object, a contradiction) is only
//     noted: the event is one more fact for the operator.
func ApplyWebhook(op ledger.Operation, earlier Generations, e ledger.WebhookEvent, t ledger.WebhookTarget, recorded *ledger.Attempt, now time.Time) (Change, ledger.WebhookDisposition) {
	now = UTC(now)
	if op.Tombstone {
		// An event that would put the live operation in review (a
		// contradiction) reopens the one Cleanup removed in review (see
		// reopened); any other leaves the tombstone as it is.
		ch, disp := ApplyWebhook(reopened(op), Generations{}, e, t, nil, now)
		if ch.Op.Status != ledger.StatusManualReview {
			return Change{Op: op}, ledger.WebhookTombstoned
		}
		ch.Events = append(ch.Events, reopenNote(op, WebhookActor(e.Provider)))
		return ch, disp
	}
	obj := ObjectOf(op, earlier, t)
	disp, settleTo := webhookRule(op, t.Effect)
	var code ledger.ReviewCode
	var why string
	if t.Effect != ledger.EffectLookup {
		disp, settleTo, code, why = objectRule(op, earlier, obj, t, disp, settleTo)
	}
	ch := Change{Op: op}
	switch disp {
	case ledger.WebhookNudged:
		ch.Op.NextCheckAt = now
		ch.Op.UpdatedAt = now
	case ledger.WebhookContradiction, ledger.WebhookDuplicate:
		if why == "" {
			code, why = ledger.ReviewCodeWebhookContradiction, ledger.ReasonWebhookContradiction+": "+e.Type+reasonDetail(t.Detail)
		}
		ch.Attempt = closeAttempt(op, recorded, e, now)
		ch.Op.Status = ledger.StatusManualReview
		ch.Op.ReviewCode = code
		ch.Op.ReviewReason = truncateText(why)
		ch.Op.ReviewAt = now
		// Wait for an operator: a lookup would only repeat the answer the
		// provider now says was wrong, or settle on one of two objects.
		ch.Op.NextCheckAt = time.Time{}
		ch.Op.LeaseOwner, ch.Op.LeaseExpiresAt = "", time.Time{}
		ch.Op.UpdatedAt = now
	case ledger.WebhookSettled:
		ch.Attempt = closeAttempt(op, recorded, e, now)
		ch.Op.Status = settleTo
		if t.ProviderRef != "" {
			ch.Op.ProviderRef = t.ProviderRef
		}
		if t.Result != nil {
			ch.Op.Result = bytes.Clone(t.Result)
		}
		ch.Op.NextCheckAt = time.Time{}
		ch.Op.FinishedAt = now
		ch.Op.LeaseOwner, ch.Op.LeaseExpiresAt = "", time.Time{}
		ch.Op.UpdatedAt = now
	}
	actor := WebhookActor(e.Provider)
	// The detail is cut before it is encoded, so that the entry stays
	// valid JSON whatever the provider's message: ids and types are
	// bounded by Validate, and 2 KiB of message is plenty for a person.
	d := ledger.WebhookDetail{Provider: e.Provider, EventID: e.ID, Type: e.Type, Effect: t.Effect,
		Disposition: disp, ProviderRef: t.ProviderRef, Key: t.Key, Object: obj, Detail: truncateTo(t.Detail, 2<<10)}
	ch.Events = []ledger.NewEvent{{Kind: ledger.EventWebhook, Actor: actor, Detail: d.String()}}
	if disp == ledger.WebhookSettled && op.Status == ledger.StatusManualReview {
		outcome := ledger.ResolveSucceeded
		if settleTo == ledger.StatusFailed {
			outcome = ledger.ResolveFailed
		}
		note := "settled by webhook " + e.Type + " " + e.ID
		ch.Op.Resolution = &ledger.Resolution{Actor: actor, Note: note, Outcome: outcome, At: now}
		rd := ledger.ResolutionDetail{Outcome: outcome, Note: note, ProviderRef: ch.Op.ProviderRef}
		ch.Events = append(ch.Events, ledger.NewEvent{Kind: ledger.EventResolution, Actor: actor, Detail: rd.String()})
	}
	return ch, disp
}

// Generations is what the ledger knows of an operation's earlier key
// generations: what an object created under one of them is recognised by.
type Generations struct {
	// Keys are the keys attempts carried under earlier generations (an
	// object can exist only under a key that was sent).
	Keys []string
	// Refs are the provider references recorded under earlier generations
	// (ResolutionDetail.PreviousProviderRef of each resend).
	Refs []string
	// Failed are the objects whose failure an event recorded on the
	// operation reported (FailedObjects): a refund, capture or cancel that
	// failed does not succeed again, so a later success of one is stale.
	Failed []ledger.WebhookDetail
}

// failedObject reports whether g records a failure of the object t names:
// by its reference when both have one, else by its key.
func (g Generations) failedObject(t ledger.WebhookTarget) bool {
	for _, d := range g.Failed {
		switch {
		case t.ProviderRef != "" && d.ProviderRef != "":
			if t.ProviderRef == d.ProviderRef {
				return true
			}
		case t.Key != "" && t.Key == d.Key:
			return true
		}
	}
	return false
}

// FailedObjects reads, from the details of an operation's EventWebhook
// entries, those that reported an object failed (or a success undone).
func FailedObjects(webhookDetails []string) []ledger.WebhookDetail {
	var out []ledger.WebhookDetail
	for _, text := range webhookDetails {
		var d ledger.WebhookDetail
		if json.Unmarshal([]byte(text), &d) == nil && (d.Effect == ledger.EffectFailed || d.Effect == ledger.EffectReversed) {
			out = append(out, d)
		}
	}
	return out
}

// ObjectOf says which of op's objects target t names. The key decides
// when the event carries one: payonce writes the attempt's key on every
// object it creates, and two objects under one key are impossible inside
// the provider's key window. Without a key, the provider reference
// decides: the recorded object, an earlier generation's, or another one.
//
// A target whose object is the payment it acts on (ProviderRef equal to
// PaymentRef: a capture or cancel of a PaymentIntent) is about that
// payment for every generation; the key the payment carries is its
// charge's, not the operation's, and is not read.
func ObjectOf(op ledger.Operation, earlier Generations, t ledger.WebhookTarget) ledger.WebhookObject {
	if t.PaymentRef != "" && t.ProviderRef == t.PaymentRef {
		// No generation creates an object of its own: the payment's state
		// is the one answer for all of them (a payment is captured or
		// cancelled once). That it is this operation's payment is
		// webhookMismatch's check.
		return ledger.ObjectCurrent
	}
	key := t.Key
	switch {
	case key != "" && key == op.Key:
		if t.ProviderRef != "" && op.ProviderRef != "" && t.ProviderRef != op.ProviderRef {
			// A second object under the current key: created after the
			// provider forgot the key, by a resend outside payonce.
			return ledger.ObjectOther
		}
		return ledger.ObjectCurrent
	case key != "" && slices.Contains(earlier.Keys, key):
		return ledger.ObjectEarlier
	case key != "":
		return ledger.ObjectOther
	case t.ProviderRef != "" && t.ProviderRef == op.ProviderRef:
		return ledger.ObjectCurrent
	case t.ProviderRef != "" && slices.Contains(earlier.Refs, t.ProviderRef):
		return ledger.ObjectEarlier
	case t.ProviderRef != "" && op.ProviderRef != "":
		return ledger.ObjectOther
	case op.Generation == 0:
		return ledger.ObjectCurrent
	case op.WindowStart.IsZero():
		// Nothing under the current key may have reached the provider (a
		// resend not sent yet), so the object cannot be the current
		// generation's: it is an earlier one's, or another.
		return ledger.ObjectOther
	}
	return ledger.ObjectUnplaced
}

// objectRule refines the table's disposition (disp, settleTo) by the
// object the event is about, and gives the review code and says why when it
// sends the operation to review. Only an object of the current generation that belongs to the
// operation keeps the table's answer.
func objectRule(op ledger.Operation, earlier Generations, obj ledger.WebhookObject, t ledger.WebhookTarget, disp ledger.WebhookDisposition, settleTo ledger.Status) (ledger.WebhookDisposition, ledger.Status, ledger.ReviewCode, string) {
	waiting := op.Status == ledger.StatusManualReview && op.NextCheckAt.IsZero()
	switch obj {
	case ledger.ObjectCurrent:
		why := webhookMismatch(op, t)
		if why == "" {
			return disp, settleTo, "", ""
		}
		if waiting {
			// An operator decides already; the event is one more fact.
			return ledger.WebhookNoted, "", "", ""
		}
		return ledger.WebhookContradiction, "", ledger.ReviewCodeContradicted, ledger.ReasonContradicted + ": " + why
	case ledger.ObjectUnplaced:
		if t.Effect == ledger.EffectSucceeded && !waiting {
			// Money moved under this operation, under a key that cannot
			// be told: this generation's own, or an earlier one's while
			// this one is being sent too. Settling on it could hide a
			// second movement; an operator compares the objects.
			return ledger.WebhookDuplicate, "", ledger.ReviewCodeDuplicated, ledger.ReasonDuplicated + ": an object whose key generation cannot be told succeeded, " +
				orNone(t.ProviderRef) + "; it may be this generation's own or an earlier one's: compare the provider's objects"
		}
		// Which generation's object this is cannot be told: a lookup, which
		// sees every generation (adapterkit.Combine), decides.
		lookup, _ := webhookRule(op, ledger.EffectLookup)
		return lookup, "", "", ""
	}
	// An earlier generation's object, or another object with the
	// operation's id. Its failure says nothing about the current
	// generation's object (settling on it would record "failed" for a
	// refund that was never sent, or discard the answer of one in flight).
	// A charge reversed (charged back, disputed) had moved money before it
	// was pulled back: for another object, that is a second movement as
	// much as its success.
	moved := t.Effect == ledger.EffectSucceeded || (t.Effect == ledger.EffectReversed && op.Kind == "charge")
	if !moved {
		return ledger.WebhookOtherObject, "", "", ""
	}
	if op.Kind != "charge" && earlier.failedObject(t) {
		// A refund, capture or cancel whose failure is on record never
		// succeeds again (its failure is final at the provider): this
		// success is an older event arriving late, not a second movement.
		return ledger.WebhookOtherObject, "", "", ""
	}
	// It moved money. A later generation exists (or the recorded object is
	// another one), so the operation may have moved money twice: never
	// "confirmed", never settled on it; an operator compares both objects.
	what := "an earlier key generation's object"
	if obj == ledger.ObjectOther {
		what = "another object carrying the operation's id"
	}
	if t.Effect == ledger.EffectReversed {
		return ledger.WebhookDuplicate, "", ledger.ReviewCodeDuplicated, ledger.ReasonDuplicated + ": " + what + " was charged back, " + orNone(t.ProviderRef) + ": it had moved money"
	}
	return ledger.WebhookDuplicate, "", ledger.ReviewCodeDuplicated, ledger.ReasonDuplicated + ": " + what + " succeeded, " + orNone(t.ProviderRef)
}

func orNone(ref string) string {
	if ref == "" {
		return "(no reference)"
	}
	return ref
}

// webhookMismatch says why the object t names does not belong to op
// (another operation id, payment, amount or currency than op's request), or "" when
// it belongs: the check adapters apply to every answer and lookup
// (adapterkit.Belongs), applied to events. An amount of 0 or an empty
// currency, in the request or in the event, is not checked (a full capture
// or refund fixes no amount; an event may not carry it).
func webhookMismatch(op ledger.Operation, t ledger.WebhookTarget) string {
	var why []string
	if t.OperationID != "" && t.OperationID != op.ID {
		why = append(why, fmt.Sprintf("operation id %q, not %q", t.OperationID, op.ID))
	}
	if op.PaymentRef != "" && t.PaymentRef != "" && t.PaymentRef != op.PaymentRef {
		why = append(why, fmt.Sprintf("payment %q, not %q", t.PaymentRef, op.PaymentRef))
	}
	amount, currency := RequestAmount(op.Request)
	if amount > 0 && t.Amount > 0 && t.Amount != amount {
		why = append(why, fmt.Sprintf("amount %d, not %d", t.Amount, amount))
	}
	if currency != "" && t.Currency != "" && !strings.EqualFold(currency, t.Currency) {
		why = append(why, fmt.Sprintf("currency %q, not %q", t.Currency, currency))
	}
	if len(why) == 0 {
		return ""
	}
	return "the event's object has " + strings.Join(why, ", ")
}

// PreviousRefs reads the provider references that earlier key generations
// recorded (PreviousProviderRef) from the details of an operation's
// EventResolution entries, in order, without repeats.
func PreviousRefs(resolutionDetails []string) []string {
	var refs []string
	for _, text := range resolutionDetails {
		var d ledger.ResolutionDetail
		if json.Unmarshal([]byte(text), &d) == nil && d.PreviousProviderRef != "" && !slices.Contains(refs, d.PreviousProviderRef) {
			refs = append(refs, d.PreviousProviderRef)
		}
	}
	return refs
}

// webhookRule is the table of ApplyWebhook: the disposition of effect on
// op, and the status a settling disposition moves it to.
func webhookRule(op ledger.Operation, effect ledger.WebhookEffect) (ledger.WebhookDisposition, ledger.Status) {
	settleTo := ledger.StatusSucceeded
	if effect == ledger.EffectFailed || effect == ledger.EffectReversed {
		settleTo = ledger.StatusFailed
	}
	switch effect {
	case ledger.EffectLookup:
		if op.Status == ledger.StatusPending || op.Status == ledger.StatusUnknown ||
			(op.Status == ledger.StatusManualReview && !op.NextCheckAt.IsZero()) {
			return ledger.WebhookNudged, ""
		}
		return ledger.WebhookNoted, ""
	case ledger.EffectProcessing:
		if op.Status.Final() {
			return ledger.WebhookStale, ""
		}
		return ledger.WebhookNoted, ""
	}
	switch op.Status {
	case ledger.StatusSucceeded, ledger.StatusFailed:
		if contradicts(op.Status, effect) {
			return ledger.WebhookContradiction, ""
		}
		return ledger.WebhookConfirmed, ""
	case ledger.StatusManualReview:
		if op.NextCheckAt.IsZero() || op.ReviewCode == ledger.ReviewCodeWebhookContradiction ||
			(effect == ledger.EffectReversed && op.Kind == "charge") {
			return ledger.WebhookNoted, ""
		}
		return ledger.WebhookSettled, settleTo
	default: // pending, in_flight, unknown
		if effect == ledger.EffectReversed && op.Kind == "charge" {
			// A charge reversed before the ledger settled it (a chargeback
			// on a charge whose answer was lost): the money moved and was
			// pulled back, which is neither succeeded nor failed. An
			// operator decides.
			return ledger.WebhookContradiction, ""
		}
		return ledger.WebhookSettled, settleTo
	}
}

// contradicts reports whether effect disagrees with a final status.
func contradicts(s ledger.Status, effect ledger.WebhookEffect) bool {
	switch s {
	case ledger.StatusSucceeded:
		return effect == ledger.EffectFailed || effect == ledger.EffectReversed
	case ledger.StatusFailed:
		return effect == ledger.EffectSucceeded
	}
	return false
}

func reasonDetail(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

// closeAttempt is op's attempt in flight, finished as maybe_sent because
// an event settled (or contradicted) the operation before the attempt's
// answer was recorded: the provider has the request, so it reached it. Nil
// when op is not in flight.
func closeAttempt(op ledger.Operation, recorded *ledger.Attempt, e ledger.WebhookEvent, now time.Time) *ledger.Attempt {
	if op.Status != ledger.StatusInFlight || recorded == nil || !recorded.FinishedAt.IsZero() {
		return nil
	}
	a := *recorded
	a.FinishedAt = now
	a.MayHaveReached = true
	a.Outcome = ledger.OutcomeMaybeSent
	a.Error = "answer superseded by webhook " + e.ID
	return &a
}

// truncateText cuts s to MaxTextBytes on a rune boundary, so that a long
// provider message never makes the whole event unrecordable.
func truncateText(s string) string { return truncateTo(s, ledger.MaxTextBytes) }

// truncateTo cuts s to at most n bytes on a rune boundary.
func truncateTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

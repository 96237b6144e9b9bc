package ledger

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"
)

// ApplyWebhook is what target t of event e does to op, read under the
// store's lock (op may be a tombstone). recorded is op's latest attempt as
// stored when op is in_flight, nil otherwise. The Change holds the new
// operation, the attempt it finished (in_flight only) and the audit
// entries; a disposition that changes nothing still returns op unchanged
// with its EventWebhook entry (none for a tombstone). The store writes the
// Change, then the inbox entry with the disposition, in one transaction;
// on a tombstone only an event that puts the operation in review changes
// anything: the Change is then the operation reopened in review, which the
// store writes in place of the tombstone (see reopened).
//
// The rules, in the order they are checked:
//   - An event never causes a request to be sent: at most it settles an
//     operation, puts it in review, or makes it due for a status lookup.
//   - EffectLookup (an unauthenticated notice) is never trusted by itself:
//     a pending or unknown operation, or one in review that still wants
//     lookups, becomes due now (nudged); anything else is noted.
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
func ApplyWebhook(op Operation, e WebhookEvent, t WebhookTarget, recorded *Attempt, now time.Time) (Change, WebhookDisposition) {
	now = UTC(now)
	if op.Tombstone {
		// An event that would put the live operation in review (a
		// contradiction) reopens the one Cleanup removed in review (see
		// reopened); any other leaves the tombstone as it is.
		ch, disp := ApplyWebhook(reopened(op), e, t, nil, now)
		if ch.Op.Status != StatusManualReview {
			return Change{Op: op}, WebhookTombstoned
		}
		ch.Events = append(ch.Events, reopenNote(op, WebhookActor(e.Provider)))
		return ch, disp
	}
	disp, settleTo := webhookRule(op, t.Effect)
	ch := Change{Op: op}
	switch disp {
	case WebhookNudged:
		ch.Op.NextCheckAt = now
		ch.Op.UpdatedAt = now
	case WebhookContradiction:
		ch.Attempt = closeAttempt(op, recorded, e, now)
		ch.Op.Status = StatusManualReview
		ch.Op.ReviewReason = truncateText(ReasonWebhookContradiction + ": " + e.Type + reasonDetail(t.Detail))
		ch.Op.ReviewAt = now
		// Wait for an operator: a lookup would only repeat the answer the
		// provider now says was wrong.
		ch.Op.NextCheckAt = time.Time{}
		ch.Op.LeaseOwner, ch.Op.LeaseExpiresAt = "", time.Time{}
		ch.Op.UpdatedAt = now
	case WebhookSettled:
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
	d := WebhookDetail{Provider: e.Provider, EventID: e.ID, Type: e.Type, Effect: t.Effect,
		Disposition: disp, ProviderRef: t.ProviderRef, Detail: truncateTo(t.Detail, 2<<10)}
	ch.Events = []NewEvent{{Kind: EventWebhook, Actor: actor, Detail: d.String()}}
	if disp == WebhookSettled && op.Status == StatusManualReview {
		outcome := ResolveSucceeded
		if settleTo == StatusFailed {
			outcome = ResolveFailed
		}
		note := "settled by webhook " + e.Type + " " + e.ID
		ch.Op.Resolution = &Resolution{Actor: actor, Note: note, Outcome: outcome, At: now}
		rd := ResolutionDetail{Outcome: outcome, Note: note, ProviderRef: ch.Op.ProviderRef}
		ch.Events = append(ch.Events, NewEvent{Kind: EventResolution, Actor: actor, Detail: rd.String()})
	}
	return ch, disp
}

// webhookRule is the table of ApplyWebhook: the disposition of effect on
// op, and the status a settling disposition moves it to.
func webhookRule(op Operation, effect WebhookEffect) (WebhookDisposition, Status) {
	settleTo := StatusSucceeded
	if effect == EffectFailed || effect == EffectReversed {
		settleTo = StatusFailed
	}
	switch effect {
	case EffectLookup:
		if op.Status == StatusPending || op.Status == StatusUnknown ||
			(op.Status == StatusManualReview && !op.NextCheckAt.IsZero()) {
			return WebhookNudged, ""
		}
		return WebhookNoted, ""
	case EffectProcessing:
		if op.Status.Final() {
			return WebhookStale, ""
		}
		return WebhookNoted, ""
	}
	switch op.Status {
	case StatusSucceeded, StatusFailed:
		if contradicts(op.Status, effect) {
			return WebhookContradiction, ""
		}
		return WebhookConfirmed, ""
	case StatusManualReview:
		if op.NextCheckAt.IsZero() || strings.HasPrefix(op.ReviewReason, ReasonWebhookContradiction) ||
			(effect == EffectReversed && op.Kind == "charge") {
			return WebhookNoted, ""
		}
		return WebhookSettled, settleTo
	default: // pending, in_flight, unknown
		if effect == EffectReversed && op.Kind == "charge" {
			// A charge reversed before the ledger settled it (a chargeback
			// on a charge whose answer was lost): the money moved and was
			// pulled back, which is neither succeeded nor failed. An
			// operator decides.
			return WebhookContradiction, ""
		}
		return WebhookSettled, settleTo
	}
}

// contradicts reports whether effect disagrees with a final status.
func contradicts(s Status, effect WebhookEffect) bool {
	switch s {
	case StatusSucceeded:
		return effect == EffectFailed || effect == EffectReversed
	case StatusFailed:
		return effect == EffectSucceeded
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
func closeAttempt(op Operation, recorded *Attempt, e WebhookEvent, now time.Time) *Attempt {
	if op.Status != StatusInFlight || recorded == nil || !recorded.FinishedAt.IsZero() {
		return nil
	}
	a := *recorded
	a.FinishedAt = now
	a.MayHaveReached = true
	a.Outcome = OutcomeMaybeSent
	a.Error = "answer superseded by webhook " + e.ID
	return &a
}

// truncateText cuts s to MaxTextBytes on a rune boundary, so that a long
// provider message never makes the whole event unrecordable.
func truncateText(s string) string { return truncateTo(s, MaxTextBytes) }

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

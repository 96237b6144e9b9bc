package ledgerdriver

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payonce/payonce/ledger"
)

// checkStored refuses text no store can keep byte for byte: invalid UTF-8
// or a NUL byte (PostgreSQL text accepts neither).
func checkStored(field, s string) error {
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return invalid(field, "must not contain a NUL byte")
	}
	return nil
}

func checkAllStored(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if err := checkStored(fields[i], fields[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// ValidateOperation checks a NewOperation before anything is written.
func ValidateOperation(op ledger.NewOperation) error {
	switch {
	case op.ID == "":
		return invalid("ID", "must not be empty")
	case op.Key == "":
		return invalid("Key", "must not be empty")
	case op.Provider == "":
		return invalid("Provider", "must not be empty")
	case op.Kind == "":
		return invalid("Kind", "must not be empty")
	case len(op.References) == 0:
		return invalid("References", "need at least one reference part")
	case op.Generation < 0:
		return invalid("Generation", "must be >= 0, got %d", op.Generation)
	case op.Generation == 0 && op.Key != op.ID:
		return invalid("Key", "must equal ID at generation 0")
	case op.Fingerprint == "":
		return invalid("Fingerprint", "must not be empty")
	case len(op.Request) == 0:
		return invalid("Request", "must not be empty (the canonical request JSON)")
	case len(op.Request) > ledger.MaxRequestBytes:
		return invalid("Request", "is %d bytes; at most %d", len(op.Request), ledger.MaxRequestBytes)
	case op.KeyTTL < time.Second:
		// Stores keep the TTL in milliseconds; a key window shorter than a
		// second is no real provider's and would round towards zero.
		return invalid("KeyTTL", "must be at least 1s (the provider's key TTL), got %v", op.KeyTTL)
	}
	for i, r := range op.References {
		// The field's name is built only for an error: this runs on every
		// Begin.
		if r == "" {
			return invalid(fmt.Sprintf("References[%d]", i), "must not be empty")
		}
		if err := checkStored("", r); err != nil {
			return checkStored(fmt.Sprintf("References[%d]", i), r)
		}
	}
	return checkAllStored("ID", op.ID, "Key", op.Key, "Provider", op.Provider, "Kind", op.Kind,
		"Fingerprint", op.Fingerprint, "Request", string(op.Request), "PaymentRef", op.PaymentRef)
}

// ValidateCreate checks the arguments of Store.CreateOrGet (and of a store's
// variant in the caller's transaction): the operation, and a set now.
func ValidateCreate(op ledger.NewOperation, now time.Time) error {
	if err := ValidateOperation(op); err != nil {
		return err
	}
	if now.IsZero() {
		return invalid("now", "must be set")
	}
	return nil
}

func checkLease(owner string, now, until time.Time) error {
	switch {
	case owner == "":
		return invalid("Owner", "must not be empty")
	case len(owner) > 256:
		return invalid("Owner", "is %d bytes; at most 256", len(owner))
	case now.IsZero():
		return invalid("Now", "must be set")
	case !until.After(now):
		return invalid("LeaseUntil", "must be after Now (got %v, now %v)", until, now)
	}
	return nil
}

// ValidateBegin checks BeginParams.
func ValidateBegin(p ledger.BeginParams) error {
	if err := ValidateOperation(p.Op); err != nil {
		return err
	}
	return checkLease(p.Owner, p.Now, p.LeaseUntil)
}

// ValidateClaim checks ClaimParams.
func ValidateClaim(p ledger.ClaimParams) error {
	if p.ID == "" {
		return invalid("ID", "must not be empty")
	}
	return checkLease(p.Owner, p.Now, p.LeaseUntil)
}

// ValidateStartAttempt checks StartAttemptParams.
func ValidateStartAttempt(p ledger.StartAttemptParams) error {
	if p.ID == "" {
		return invalid("ID", "must not be empty")
	}
	if err := checkEvents(p.Events); err != nil {
		return err
	}
	return checkLease(p.Owner, p.Now, p.LeaseUntil)
}

// ValidateFinish checks FinishParams, including that From -> To is a legal move.
func ValidateFinish(p ledger.FinishParams) error {
	switch {
	case p.ID == "":
		return invalid("ID", "must not be empty")
	case p.Owner == "":
		return invalid("Owner", "must not be empty")
	case len(p.Owner) > 256:
		return invalid("Owner", "is %d bytes; at most 256", len(p.Owner))
	case p.Now.IsZero():
		return invalid("Now", "must be set")
	case len(p.ReviewReason) > ledger.MaxTextBytes:
		return invalid("ReviewReason", "is %d bytes; at most %d", len(p.ReviewReason), ledger.MaxTextBytes)
	case p.To == ledger.StatusManualReview && p.ReviewReason == "":
		return invalid("ReviewReason", "required when moving to manual_review")
	case p.To == ledger.StatusManualReview && p.ReviewCode == "":
		return invalid("ReviewCode", "required when moving to manual_review (one of ledger.ReviewCodes)")
	}
	if p.ReviewCode != "" {
		if _, err := ParseReviewCode(string(p.ReviewCode)); err != nil {
			return invalid("ReviewCode", "%v", err)
		}
	}
	if _, err := ParseStatus(string(p.From)); err != nil {
		return invalid("From", "%v", err)
	}
	if _, err := ParseStatus(string(p.To)); err != nil {
		return invalid("To", "%v", err)
	}
	if p.From == ledger.StatusInFlight && p.Attempt == nil {
		return invalid("Attempt", "required when finishing an in_flight operation")
	}
	if p.From != ledger.StatusInFlight && p.Attempt != nil {
		return invalid("Attempt", "only an in_flight operation has an attempt to finish (From is %s)", p.From)
	}
	if a := p.Attempt; a != nil {
		if a.Number < 1 {
			return invalid("Attempt.Number", "must be >= 1, got %d", a.Number)
		}
		if _, err := ParseOutcomeClass(string(a.Class)); err != nil {
			return invalid("Attempt.Class", "%v", err)
		}
		if len(a.Error) > ledger.MaxTextBytes {
			return invalid("Attempt.Error", "is %d bytes; at most %d", len(a.Error), ledger.MaxTextBytes)
		}
	}
	if err := checkAllStored("ProviderRef", p.ProviderRef, "Result", string(p.Result), "ReviewReason", p.ReviewReason); err != nil {
		return err
	}
	if err := checkEvents(p.Events); err != nil {
		return err
	}
	if a := p.Attempt; a != nil {
		if err := checkAllStored("Attempt.Error", a.Error, "Attempt.ProviderRequestID", a.ProviderRequestID); err != nil {
			return err
		}
	}
	if r := p.Resolution; r != nil {
		if err := checkResolutionText(r.Actor, r.Note); err != nil {
			return err
		}
		if _, err := ParseResolutionOutcome(string(r.Outcome)); err != nil {
			return invalid("Resolution.Outcome", "%v", err)
		}
	}
	return CheckTransition(p.From, p.To)
}

// CheckTransition reports whether Finish may move an operation from one
// status to another. It returns an error wrapping ErrStateConflict otherwise.
//
// Why these moves and no others: only StartAttempt may enter in_flight (an
// attempt is journaled before it is sent); an unknown operation may not go
// back to pending (it may have been sent: only a lookup or an operator
// settles it); manual_review never goes back to sending (outside the key
// window a resend would be a new charge); succeeded and failed are final.
func CheckTransition(from, to ledger.Status) error {
	ok := false
	switch from {
	case ledger.StatusInFlight:
		ok = to != ledger.StatusInFlight
	case ledger.StatusPending:
		ok = to == ledger.StatusPending || to == ledger.StatusFailed || to == ledger.StatusManualReview
	case ledger.StatusUnknown:
		ok = to == ledger.StatusUnknown || to == ledger.StatusSucceeded || to == ledger.StatusFailed || to == ledger.StatusManualReview
	case ledger.StatusManualReview:
		ok = to == ledger.StatusManualReview || to == ledger.StatusSucceeded || to == ledger.StatusFailed
	}
	if !ok {
		return fmt.Errorf("%w: %s -> %s is not a legal transition", ledger.ErrStateConflict, from, to)
	}
	return nil
}

// ValidateClaimDue checks ClaimDueParams.
func ValidateClaimDue(p ledger.ClaimDueParams) error {
	if p.Limit < 1 || p.Limit > ledger.MaxLimit {
		return invalid("Limit", "must be between 1 and %d, got %d", ledger.MaxLimit, p.Limit)
	}
	return checkLease(p.Owner, p.Now, p.LeaseUntil)
}

func checkListLimit(limit int) error {
	if limit < 0 || limit > ledger.MaxLimit {
		return invalid("Limit", "must be between 0 (default %d) and %d, got %d", ledger.DefaultListLimit, ledger.MaxLimit, limit)
	}
	return nil
}

// ValidateList checks a ListFilter.
func ValidateList(f ledger.ListFilter) error {
	if f.Status != "" {
		if _, err := ParseStatus(string(f.Status)); err != nil {
			return invalid("Status", "%v", err)
		}
	}
	// Either bound may be set alone; both set must leave a range: an empty
	// one is a caller's mistake (bounds swapped), not a question whose
	// answer is "nothing".
	if !f.CreatedFrom.IsZero() && !f.CreatedBefore.IsZero() && !f.CreatedBefore.After(f.CreatedFrom) {
		return invalid("CreatedBefore", "must be after CreatedFrom (got %v, CreatedFrom %v): the range [CreatedFrom, CreatedBefore) is empty",
			f.CreatedBefore, f.CreatedFrom)
	}
	return checkListLimit(f.Limit)
}

// ListLimit is f.Limit, or ledger.DefaultListLimit when it is zero.
func ListLimit(f ledger.ListFilter) int { return orDefault(f.Limit, ledger.DefaultListLimit) }

// ValidateReviewFilter checks a ReviewFilter.
func ValidateReviewFilter(f ledger.ReviewFilter) error {
	if f.Code != "" {
		if _, err := ParseReviewCode(string(f.Code)); err != nil {
			return invalid("Code", "%v", err)
		}
	}
	// The keyset is a pair: an ID without its ReviewAt would start the page
	// at the queue's beginning (or its end) instead of after that
	// operation, silently showing the wrong page.
	if f.AfterID != "" && f.AfterReviewAt.IsZero() {
		return invalid("AfterReviewAt", "must be set with AfterID: the ReviewAt of the last operation of the previous page")
	}
	if f.AfterID == "" && !f.AfterReviewAt.IsZero() {
		return invalid("AfterID", "must be set with AfterReviewAt: the ID of the last operation of the previous page")
	}
	return checkListLimit(f.Limit)
}

// ReviewLimit is f.Limit, or ledger.DefaultListLimit when it is zero.
func ReviewLimit(f ledger.ReviewFilter) int { return orDefault(f.Limit, ledger.DefaultListLimit) }

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func checkResolutionText(actor, note string) error {
	switch {
	case actor == "":
		return invalid("Actor", "required: who resolves the review")
	case note == "":
		return invalid("Note", "required: why the review is resolved this way")
	case len(actor) > 256:
		return invalid("Actor", "is %d bytes; at most 256", len(actor))
	case len(note) > ledger.MaxTextBytes:
		return invalid("Note", "is %d bytes; at most %d", len(note), ledger.MaxTextBytes)
	}
	return checkAllStored("Actor", actor, "Note", note)
}

// ValidateResolve checks ResolveParams.
func ValidateResolve(p ledger.ResolveParams) error {
	if p.ID == "" {
		return invalid("ID", "must not be empty")
	}
	if err := checkResolutionText(p.Actor, p.Note); err != nil {
		return err
	}
	if p.Now.IsZero() {
		return invalid("Now", "must be set")
	}
	if _, err := ParseResolutionOutcome(string(p.Outcome)); err != nil {
		return invalid("Outcome", "%v", err)
	}
	if err := checkAllStored("ProviderRef", p.ProviderRef, "NewKey", p.NewKey); err != nil {
		return err
	}
	if p.EventsSeen < 0 {
		return invalid("EventsSeen", "is %d; pass the number of audit entries read", p.EventsSeen)
	}
	switch p.Outcome {
	case ledger.ResolveSucceeded:
		if p.ProviderRef == "" {
			return invalid("ProviderRef", "required when resolving as succeeded: the provider's id of the object")
		}
	case ledger.ResolveResend:
		if p.NewKey == "" {
			return invalid("NewKey", "required when resolving with resend: the key of the next generation")
		}
		if p.NewGeneration < 1 {
			return invalid("NewGeneration", "must be >= 1 when resolving with resend, got %d", p.NewGeneration)
		}
	}
	return nil
}

// ValidateCleanup checks CleanupParams. A retention shorter than the key TTL wraps
// ErrRetentionTooShort.
func ValidateCleanup(p ledger.CleanupParams) error {
	switch {
	case p.Now.IsZero():
		return invalid("Now", "must be set")
	case p.KeyTTL <= 0:
		return invalid("KeyTTL", "must be > 0: the longest key TTL of the providers in use")
	case p.BatchSize < 0 || p.BatchSize > ledger.MaxCleanupBatch:
		return invalid("BatchSize", "must be between 0 (default %d) and %d, got %d", ledger.DefaultCleanupBatch, ledger.MaxCleanupBatch, p.BatchSize)
	case p.Retention < p.KeyTTL:
		// Rule 6: a row deleted while the provider still remembers its key
		// would let a late retry look new to the ledger and be sent again.
		return fmt.Errorf("%w: retention %v < key TTL %v; keep finished operations at least as long as the provider remembers their keys", ledger.ErrRetentionTooShort, p.Retention, p.KeyTTL)
	case p.FeedRetention < 0:
		return invalid("FeedRetention", "must be >= 0 (0 means %v), got %v", ledger.DefaultFeedRetention, p.FeedRetention)
	case p.TombstoneRetention < 0:
		return invalid("TombstoneRetention", "must be >= 0 (0 keeps tombstones forever), got %v", p.TombstoneRetention)
	case p.TombstoneRetention > 0 && p.TombstoneRetention < p.Retention:
		// A tombstone is what answers a late duplicate once its operation
		// is gone; purging it before its operation could even be deleted
		// would make the tombstone pointless.
		return invalid("TombstoneRetention", "%v must not be shorter than Retention %v (or 0 to keep tombstones forever)", p.TombstoneRetention, p.Retention)
	case p.InboxRetention < 0:
		return invalid("InboxRetention", "must be >= 0 (0 means %v), got %v", ledger.DefaultInboxRetention, p.InboxRetention)
	case p.WebhookRedelivery < 0:
		return invalid("WebhookRedelivery", "must be >= 0 (the longest redelivery of the providers in use; 0 when none pushes events), got %v", p.WebhookRedelivery)
	case InboxRetention(p) < p.WebhookRedelivery:
		// An event's inbox entry is what makes its redelivery a duplicate.
		// Checkout.com and Adyen sign no timestamp, so a delivery whose
		// entry is gone verifies and applies again, whether the provider
		// or someone who captured it sends it.
		return invalid("InboxRetention", "%v is shorter than the providers' webhook redelivery window %v: an event delivered again after its inbox entry is deleted would apply again; keep entries at least %v",
			InboxRetention(p), p.WebhookRedelivery, p.WebhookRedelivery)
	}
	return nil
}

// InboxRetention is p.InboxRetention, or ledger.DefaultInboxRetention
// when it is zero.
func InboxRetention(p ledger.CleanupParams) time.Duration {
	if p.InboxRetention == 0 {
		return ledger.DefaultInboxRetention
	}
	return p.InboxRetention
}

// CleanupBatchSize is p.BatchSize, or ledger.DefaultCleanupBatch when it
// is zero.
func CleanupBatchSize(p ledger.CleanupParams) int {
	return orDefault(p.BatchSize, ledger.DefaultCleanupBatch)
}

// UTC normalizes a time the way every store keeps it: UTC, truncated to the
// microsecond (PostgreSQL's precision). The zero time stays zero.
func UTC(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

func checkEvents(evs []ledger.NewEvent) error {
	if len(evs) > ledger.MaxEventsPerCall {
		return invalid("Events", "at most %d per call, got %d", ledger.MaxEventsPerCall, len(evs))
	}
	for i, e := range evs {
		if err := checkEvent(e); err != nil {
			// The field's name is built only for an error: this runs on
			// every write.
			var v *ledger.ValidationError
			if errors.As(err, &v) {
				v.Field = fmt.Sprintf("Events[%d].%s", i, v.Field)
			}
			return err
		}
	}
	return nil
}

// checkEvent is checkEvents for one event, naming its fields without the
// index.
func checkEvent(e ledger.NewEvent) error {
	if _, err := ParseEventKind(string(e.Kind)); err != nil {
		return invalid("Kind", "%v", err)
	}
	if len(e.Detail) > ledger.MaxTextBytes {
		return invalid("Detail", "is %d bytes; at most %d", len(e.Detail), ledger.MaxTextBytes)
	}
	if len(e.Actor) > 256 {
		return invalid("Actor", "is %d bytes; at most 256", len(e.Actor))
	}
	return checkAllStored("Actor", e.Actor, "Detail", e.Detail)
}

// CheckEventsSeen refuses a resolution decided on fewer audit entries than
// operation id has now (ResolveParams.CheckEvents, EventsSeen). A store
// calls it holding the operation's row, which every writer of its events
// holds too.
func CheckEventsSeen(id string, expect, now int) error {
	if now > expect {
		return fmt.Errorf("%w: %d audit entries were recorded on operation %s after the %d the decision was made on (a provider event arrived); read it again and decide again",
			ledger.ErrStateConflict, now-expect, id, expect)
	}
	return nil
}

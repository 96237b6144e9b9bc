package payonce

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce/ledger"
)

// ResolveParams are an operator's decision on an operation in review.
type ResolveParams struct {
	// OperationID is the operation to resolve. Required.
	OperationID string
	// Outcome: succeeded (the money moved: give ProviderRef), failed (it did
	// not), or resend (the operator asserts the provider has no record; the
	// operation is sent again under a new key generation).
	Outcome ledger.ResolutionOutcome
	// Actor and Note are required and kept as an audit entry.
	Actor string
	Note  string
	// ProviderRef is the provider's id of the object; required with succeeded.
	ProviderRef string
	// Now defaults to time.Now.
	Now time.Time
}

// Resolve records an operator's decision on an operation in manual review.
// A resend moves the operation to the next key generation: a new key that
// the provider has never seen, which is why only a person may ask for it,
// after checking that the provider has no record under the old key. This
// function cannot ask the provider: it refuses a resend only when the
// review reason is "duplicated". Client.Resolve also looks the operation
// up across every key generation first; operators' tools should use it.
func Resolve(ctx context.Context, store ledger.Store, p ResolveParams) (ledger.Operation, error) {
	return resolve(ctx, store, p, nil)
}

// resolve is Resolve; seen, when set, holds the audit entries the decision
// was made on: the store refuses if more were recorded since
// (ledger.ResolveParams.CheckEvents).
func resolve(ctx context.Context, store ledger.Store, p ResolveParams, seen []ledger.Event) (ledger.Operation, error) {
	if p.OperationID == "" {
		return ledger.Operation{}, invalid("OperationID", "required: the id shown by `payonce review list`")
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	lp := ledger.ResolveParams{ID: p.OperationID, Actor: p.Actor, Note: p.Note, Outcome: p.Outcome,
		ProviderRef: p.ProviderRef, Now: p.Now, CheckEvents: seen != nil, EventsSeen: len(seen)}
	if p.Outcome == ledger.ResolveResend {
		op, _, err := store.Get(ctx, p.OperationID)
		if err != nil {
			return ledger.Operation{}, fmt.Errorf("payonce: resolving %s: %w", p.OperationID, err)
		}
		if why := noResend(op); why != "" {
			return op, fmt.Errorf("%w: %s", ErrResendRefused, why)
		}
		if op.ReviewCode == ledger.ReviewCodeDuplicated {
			// Money already moved more than once: a new key would add a
			// third movement, never undo the second.
			return op, fmt.Errorf("%w: operation %s is in review because %s; refund the extra payment at the provider and resolve as succeeded instead",
				ErrResendRefused, op.ID, ReasonDuplicated)
		}
		id := Identity{Provider: op.Provider, Kind: Kind(op.Kind), References: op.References, Generation: op.Generation + 1}
		key, err := id.Key()
		if err != nil {
			return ledger.Operation{}, fmt.Errorf("payonce: resolving %s: the recorded identity is invalid: %w", p.OperationID, err)
		}
		lp.NewKey, lp.NewGeneration = key, id.Generation
	}
	op, err := store.Resolve(ctx, lp)
	if err != nil {
		return op, fmt.Errorf("payonce: resolving %s: %w", p.OperationID, err)
	}
	return op, nil
}

// Resolve is the package-level Resolve for an operation of this client's
// provider (Now defaults to Config.Now). Before a resend it looks the
// operation up at the provider, across every key generation, and refuses
// (ErrResendRefused, with the reason) while an earlier object succeeded or
// is still processing, when the provider holds more than one object or one
// that contradicts the operation, or when the lookup fails: a new key is
// safe only when the provider positively says that no earlier one moved
// money. It also refuses when a recorded event shows that money moved (a
// success, a chargeback or dispute, an object still processing), and, for
// a provider whose lookup cannot prove absence
// (ProviderInfo.LookupProvesAbsence false: Adyen), unless every earlier key
// generation that may have reached the provider was refused by it (a
// declined answer, or a failure event of its object).
func (c *Client) Resolve(ctx context.Context, p ResolveParams) (ledger.Operation, error) {
	if p.Now.IsZero() {
		// The client's clock, not the machine's: tests and services that
		// drive time drive the resolution's time too.
		p.Now = c.cfg.Now()
	}
	if p.Outcome != ledger.ResolveResend || p.OperationID == "" {
		return Resolve(ctx, c.cfg.Store, p)
	}
	op, atts, err := c.cfg.Store.Get(ctx, p.OperationID)
	if err != nil {
		return ledger.Operation{}, fmt.Errorf("payonce: resolving %s: %w", p.OperationID, err)
	}
	if op.Provider != c.cfg.Provider.Name() {
		return op, invalid("OperationID", "operation %s is a %s operation; this client calls %s", op.ID, op.Provider, c.cfg.Provider.Name())
	}
	if op.Status != ledger.StatusManualReview || op.ReviewCode == ledger.ReviewCodeDuplicated || noResend(op) != "" {
		// The store's ErrNotInReview, or Resolve's refusal, says it.
		return Resolve(ctx, c.cfg.Store, p)
	}
	req, err := ParseRequest(op.Request)
	if err != nil {
		return op, fmt.Errorf("%w: the stored request of %s cannot be read (%v); the provider cannot be asked", ErrResendRefused, op.ID, err)
	}
	evs, err := c.cfg.Store.Events(ctx, op.ID)
	if err != nil {
		return op, fmt.Errorf("%w: reading the history of %s: %v", ErrResendRefused, op.ID, err)
	}
	// What the provider told by webhook counts first, whatever a lookup
	// says: a lookup may not see an object an event named (Adyen has no
	// lookup at all), and a chargeback or a success on record is proof
	// that money moved.
	if why := movedByEvents(op.Kind, evs); why != "" {
		return op, fmt.Errorf("%w for operation %s: %s", ErrResendRefused, op.ID, why)
	}
	q, err := c.lookupQuery(ctx, op, req, atts)
	if err != nil {
		return op, fmt.Errorf("%w: %v", ErrResendRefused, err)
	}
	lr, lerr := c.lookup(ctx, q)
	if why := resendRefusal(lr, lerr); why != "" {
		return op, fmt.Errorf("%w for operation %s: %s", ErrResendRefused, op.ID, why)
	}
	if !c.info.LookupProvesAbsence {
		// The lookup's "not found" proves nothing here: only the provider's
		// own refusal of every earlier key generation does.
		keys := append(slices.Clone(q.EarlierKeys), op.Key)
		if why := missingRefusal(c.cfg.Provider.Name(), op, keys, atts, evs); why != "" {
			return op, fmt.Errorf("%w for operation %s: %s", ErrResendRefused, op.ID, why)
		}
		return resolve(ctx, c.cfg.Store, p, evs)
	}
	if end := c.lastAttemptEnd(atts); lr.State == LookupNotFound && lr.Lag > 0 && !end.IsZero() {
		// An eventually consistent search may not show the latest
		// attempt's object yet.
		if ready := end.Add(lr.Lag); c.cfg.Now().Before(ready) {
			return op, fmt.Errorf("%w for operation %s: the provider's search may lag up to %v behind the latest attempt; try again after %s",
				ErrResendRefused, op.ID, lr.Lag, ready.Format(time.RFC3339))
		}
	}
	return resolve(ctx, c.cfg.Store, p, evs)
}

// movedByEvents says which recorded provider event shows that money moved
// (or may still move) for the operation, on any of its objects and key
// generations, or "" when none does. Each object is judged by everything
// recorded of it: a charge that succeeded moved money even if it was
// charged back later (a reversal of a charge is itself proof); a refund,
// capture or cancel that failed after it succeeded did not move money in
// the end; an object reported processing may still move money unless a
// later failure or success of it is on record.
func movedByEvents(kind string, evs []ledger.Event) string {
	type state struct {
		succeeded, processing, failed bool
		moved                         string // the event that showed money moved
		pending                       string // the event that showed it processing
	}
	charge := kind == string(KindCharge)
	objects := map[string]*state{}
	var order []string
	for _, e := range evs {
		if e.Kind != ledger.EventWebhook {
			continue
		}
		var d ledger.WebhookDetail
		if json.Unmarshal([]byte(e.Detail), &d) != nil {
			return "the webhook entry " + strconv.Itoa(e.Seq) + " of the history cannot be read; check the provider's records by hand"
		}
		id := d.ProviderRef + "|" + d.Key
		st := objects[id]
		if st == nil {
			st = &state{}
			objects[id] = st
			order = append(order, id)
		}
		name := d.Type + " " + d.EventID
		switch d.Effect {
		case ledger.EffectSucceeded:
			st.succeeded = true
			if st.moved == "" {
				st.moved = name
			}
		case ledger.EffectReversed:
			if charge {
				// A chargeback or dispute: the charge had moved money.
				st.succeeded = true
				if st.moved == "" {
					st.moved = name
				}
			}
			st.failed = true
		case ledger.EffectFailed:
			st.failed = true
		case ledger.EffectProcessing:
			st.processing = true
			if st.pending == "" {
				st.pending = name
			}
		}
	}
	for _, id := range order {
		st := objects[id]
		ref, _, _ := strings.Cut(id, "|")
		switch {
		case st.succeeded && (charge || !st.failed):
			return fmt.Sprintf("the provider reported object %q by event %s: money moved; resolve as succeeded with that reference, or refund it, instead", ref, st.moved)
		case st.processing && !st.succeeded && !st.failed:
			return fmt.Sprintf("the provider reported object %q processing by event %s: money may still move; wait for its outcome", ref, st.pending)
		}
	}
	return ""
}

// missingRefusal says which key generation has no recorded refusal, or ""
// when every one that may have reached the provider was refused by it: for
// a provider whose lookup cannot prove that nothing exists (Adyen), the
// only evidence that no earlier key moved money. keys[g] is generation g's
// key. A generation proves nothing moved when none of its attempts may
// have reached the provider, when the provider refused one of its attempts
// outright (OutcomeRefused: its answer is stored for the key), or when an
// event reported its object failed: an event naming the generation's key,
// or one applied to the generation that was current when it arrived
// (ledger.ObjectCurrent; generations change only by a resend resolution,
// in the history's order).
func missingRefusal(provider string, op ledger.Operation, keys []string, atts []ledger.Attempt, evs []ledger.Event) string {
	refusedKey, refusedGen := map[string]bool{}, map[int]bool{}
	gen := 0
	for _, e := range evs {
		if e.Kind == ledger.EventResolution {
			var d ledger.ResolutionDetail
			if json.Unmarshal([]byte(e.Detail), &d) == nil && d.Outcome == ledger.ResolveResend {
				gen = d.NewGeneration
			}
			continue
		}
		var d ledger.WebhookDetail
		if e.Kind != ledger.EventWebhook || json.Unmarshal([]byte(e.Detail), &d) != nil {
			continue
		}
		// A refund, capture or cancel that failed after it succeeded did
		// not move money; a charge reversed did (movedByEvents refuses it).
		failed := d.Effect == ledger.EffectFailed || (d.Effect == ledger.EffectReversed && op.Kind != string(KindCharge))
		switch {
		case !failed || d.Object == ledger.ObjectOther || d.Object == ledger.ObjectUnplaced:
			// Another object's failure says nothing of the generation's own.
		case d.Key != "":
			refusedKey[d.Key] = true
		case d.Object == ledger.ObjectCurrent:
			refusedGen[gen] = true
		}
	}
	for g, key := range keys {
		reached, refused := false, refusedKey[key] || refusedGen[g]
		for _, a := range atts {
			if a.Key != key {
				continue
			}
			reached = reached || a.MayHaveReached
			refused = refused || a.Outcome == ledger.OutcomeRefused
		}
		if reached && !refused {
			return fmt.Sprintf("%s's lookup cannot prove that nothing moved, and key generation %d (key %s) has no refusal on record "+
				"(a declined answer, or a failure event of its object); check the provider's dashboard, then resolve as failed with a note, "+
				"or as succeeded with the reference", provider, g, key)
		}
	}
	return ""
}

// noResend says why op, in review, can never be sent again, or "". An
// operation reopened from its tombstone (a provider event contradicted its
// outcome after Cleanup, ledgerdriver.ApplyWebhook) has no request: Cleanup
// deleted it, and a resend would have nothing to send, or worse, whatever
// an empty request decodes to.
func noResend(op ledger.Operation) string {
	if op.Status == ledger.StatusManualReview && len(op.Request) == 0 {
		return fmt.Sprintf("operation %s has no request to send: Cleanup deleted it, and the operation was reopened for review "+
			"when the provider contradicted its recorded outcome (%s); check the provider's dashboard and resolve as succeeded or failed instead",
			op.ID, op.ReviewReason)
	}
	return ""
}

// resendRefusal says why a lookup forbids a resend under a new key, or ""
// when the provider positively reports that nothing moved money.
func resendRefusal(lr LookupResult, lerr error) string {
	switch {
	case lerr != nil:
		return "the provider could not be asked whether an earlier key moved money (" + truncate(lerr.Error(), 300) + "); try again later"
	case lr.Contradiction != "":
		return "the provider holds an object that contradicts the operation (" + lr.Contradiction + "); resolve it by hand"
	}
	switch lr.State {
	case LookupSucceeded:
		return fmt.Sprintf("the provider reports object %s succeeded: the money moved; resolve as succeeded with that reference", lr.ProviderRef)
	case LookupProcessing:
		return fmt.Sprintf("the provider is still processing object %s: wait for its outcome", lr.ProviderRef)
	case LookupMultiple:
		return fmt.Sprintf("the provider holds more than one object for the operation (%v): money already moved more than once", lr.Refs)
	case LookupFailed, LookupNotFound:
		return ""
	}
	return fmt.Sprintf("the lookup answered %q, which payonce does not know", lr.State)
}

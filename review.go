package payonce

import (
	"context"
	"fmt"
	"time"

	"github.com/payonce/payonce/ledger"
)

// ResolveParams are an operator's decision on an operation in review.
type ResolveParams struct {
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
	if p.OperationID == "" {
		return ledger.Operation{}, invalid("OperationID", "required: the id shown by `payonce review list`")
	}
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	lp := ledger.ResolveParams{ID: p.OperationID, Actor: p.Actor, Note: p.Note, Outcome: p.Outcome,
		ProviderRef: p.ProviderRef, Now: p.Now}
	if p.Outcome == ledger.ResolveResend {
		op, _, err := store.Get(ctx, p.OperationID)
		if err != nil {
			return ledger.Operation{}, fmt.Errorf("payonce: resolving %s: %w", p.OperationID, err)
		}
		if why := noResend(op); why != "" {
			return op, fmt.Errorf("%w: %s", ErrResendRefused, why)
		}
		if op.ReviewReason == ReasonDuplicated {
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
// provider. Before a resend it looks the operation up at the provider,
// across every key generation, and refuses (ErrResendRefused, with the
// reason) while an earlier object succeeded or is still processing, when
// the provider holds more than one object or one that contradicts the
// operation, or when the lookup fails: a new key is safe only when the
// provider positively says that no earlier one moved money.
func (c *Client) Resolve(ctx context.Context, p ResolveParams) (ledger.Operation, error) {
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
	if op.Status != ledger.StatusManualReview || op.ReviewReason == ReasonDuplicated || noResend(op) != "" {
		// The store's ErrNotInReview, or Resolve's refusal, says it.
		return Resolve(ctx, c.cfg.Store, p)
	}
	req, err := ParseRequest(op.Request)
	if err != nil {
		return op, fmt.Errorf("%w: the stored request of %s cannot be read (%v); the provider cannot be asked", ErrResendRefused, op.ID, err)
	}
	q, err := c.lookupQuery(ctx, op, req, atts)
	if err != nil {
		return op, fmt.Errorf("%w: %v", ErrResendRefused, err)
	}
	lr, lerr := c.lookup(ctx, q)
	if why := resendRefusal(lr, lerr); why != "" {
		return op, fmt.Errorf("%w for operation %s: %s", ErrResendRefused, op.ID, why)
	}
	if end := c.lastAttemptEnd(atts); lr.State == LookupNotFound && lr.Lag > 0 && !end.IsZero() {
		// An eventually consistent search may not show the latest
		// attempt's object yet.
		if ready := end.Add(lr.Lag); c.cfg.Now().Before(ready) {
			return op, fmt.Errorf("%w for operation %s: the provider's search may lag up to %v behind the latest attempt; try again after %s",
				ErrResendRefused, op.ID, lr.Lag, ready.Format(time.RFC3339))
		}
	}
	return Resolve(ctx, c.cfg.Store, p)
}

// noResend says why op, in review, can never be sent again, or "". An
// operation reopened from its tombstone (a provider event contradicted its
// outcome after Cleanup, ledger.ApplyWebhook) has no request: Cleanup
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

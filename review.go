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
// after checking that the provider has no record under the old key.
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

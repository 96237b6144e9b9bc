package ledgerdriver

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Tombstone is what Cleanup keeps of an operation it deletes: enough to
// answer a late duplicate call with the recorded outcome. Without it, a call
// with the same ID months later (a retried job, a replayed message) would
// record a new operation and send it under a key the provider has
// forgotten: a second charge. Stores write it with TombstoneOf in the
// transaction that deletes the operation, and return it as an Operation
// (Tombstone.Operation) from Begin, CreateOrGet and Get. A provider event
// that contradicts it (a refund that failed after Cleanup) turns it back
// into an operation in review (see reopened).
type Tombstone struct {
	ID          string
	Key         string
	Provider    string
	Kind        string
	References  []string
	Generation  int
	Fingerprint string
	// Status is the final status: succeeded or failed.
	Status      ledger.Status
	ProviderRef string
	Result      []byte
	// Amount and Currency are read, best effort, from the canonical request
	// (RequestAmount), for operators: the request itself is not kept.
	Amount   int64
	Currency string
	KeyTTL   time.Duration

	CreatedAt    time.Time
	FinishedAt   time.Time
	TombstonedAt time.Time
}

// TombstoneOf is the tombstone of op, a final operation Cleanup deletes at
// now.
func TombstoneOf(op ledger.Operation, now time.Time) Tombstone {
	amount, currency := RequestAmount(op.Request)
	return Tombstone{
		ID:           op.ID,
		Key:          op.Key,
		Provider:     op.Provider,
		Kind:         op.Kind,
		References:   slices.Clone(op.References),
		Generation:   op.Generation,
		Fingerprint:  op.Fingerprint,
		Status:       op.Status,
		ProviderRef:  op.ProviderRef,
		Result:       bytes.Clone(op.Result),
		Amount:       amount,
		Currency:     currency,
		KeyTTL:       op.KeyTTL,
		CreatedAt:    UTC(op.CreatedAt),
		FinishedAt:   UTC(op.FinishedAt),
		TombstonedAt: UTC(now),
	}
}

// Operation is the tombstone as the Store methods return it: Tombstone set,
// the final status, reference and result as recorded, no request, no
// attempts, no lease and no background work due. UpdatedAt is when the
// tombstone was written.
func (t Tombstone) Operation() ledger.Operation {
	return ledger.Operation{
		ID:          t.ID,
		Key:         t.Key,
		Provider:    t.Provider,
		Kind:        t.Kind,
		References:  slices.Clone(t.References),
		Generation:  t.Generation,
		Fingerprint: t.Fingerprint,
		Status:      t.Status,
		ProviderRef: t.ProviderRef,
		Result:      bytes.Clone(t.Result),
		KeyTTL:      t.KeyTTL,
		CreatedAt:   UTC(t.CreatedAt),
		UpdatedAt:   UTC(t.TombstonedAt),
		FinishedAt:  UTC(t.FinishedAt),
		Tombstone:   true,
	}
}

// reopened is the tombstone op (Tombstone.Operation) as the live operation
// that a provider event contradicting it reopens. Why reopen rather than
// note the event on the tombstone: a settled outcome the provider now
// contradicts (a refund that failed, a chargeback) must reach an operator
// the way every contradiction does: the review queue, ListReview, the
// review gauges of Stats and the feed's entry into manual_review, which
// all read the operations table. The store deletes the tombstone and
// inserts this operation in one transaction, so that an ID never has both
// (a late duplicate call is answered with the review status).
//
// It keeps what the tombstone kept: identity, key and generation,
// fingerprint, final status, provider reference, result, key TTL and
// times. Cleanup deleted the request and the attempts: with no request the
// operation can never be sent again (Resolve refuses a resend), and with
// no attempt and no due time no background work touches it. The rules then
// treat it as the live operation it was (ApplyWebhook), which leaves it in
// review waiting for an operator.
func reopened(op ledger.Operation) ledger.Operation {
	op.Tombstone = false
	op.Request = nil
	op.Attempts = 0
	op.LeaseOwner, op.LeaseExpiresAt, op.NextCheckAt = "", time.Time{}, time.Time{}
	return op
}

// reopenNote is the audit entry that says why an operation in review has
// no request, attempts or earlier entries: its tombstone (written at
// op.UpdatedAt, see Tombstone.Operation) was reopened.
func reopenNote(op ledger.Operation, actor string) ledger.NewEvent {
	return ledger.NewEvent{Kind: ledger.EventNote, Actor: actor, Detail: "reopened from the tombstone Cleanup wrote at " +
		UTC(op.UpdatedAt).Format(time.RFC3339) + ": the request, attempts and earlier entries were deleted then; " +
		"it cannot be sent again, so resolve it as succeeded or failed after checking the provider's dashboard"}
}

// RequestAmount reads the fields "amount" (an integer) and "currency" (a
// string) of a canonical request, best effort: a field that is absent, of
// another type, or in a request that is not a JSON object reads as 0 or "".
func RequestAmount(request []byte) (amount int64, currency string) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(request, &fields) != nil {
		return 0, ""
	}
	if raw, ok := fields["amount"]; ok && json.Unmarshal(raw, &amount) != nil {
		amount = 0
	}
	if raw, ok := fields["currency"]; ok && json.Unmarshal(raw, &currency) != nil {
		currency = ""
	}
	return amount, currency
}

package ledger

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"
)

// Tombstone is what Cleanup keeps of an operation it deletes: enough to
// answer a late duplicate call with the recorded outcome. Without it, a call
// with the same ID months later (a retried job, a replayed message) would
// record a new operation and send it under a key the provider has
// forgotten: a second charge. Stores write it with TombstoneOf in the
// transaction that deletes the operation, and return it as an Operation
// (Tombstone.Operation) from Begin, CreateOrGet and Get.
type Tombstone struct {
	ID          string
	Key         string
	Provider    string
	Kind        string
	References  []string
	Generation  int
	Fingerprint string
	// Status is the final status: succeeded or failed.
	Status      Status
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
func TombstoneOf(op Operation, now time.Time) Tombstone {
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
func (t Tombstone) Operation() Operation {
	return Operation{
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

package ledger

import (
	"errors"
	"fmt"
)

// Sentinel errors every Store returns (wrapped, with details); callers test
// them with errors.Is. Driver errors never cross the Store interface.
var (
	// ErrNotFound: no operation with that ID (for AckFinding: no audit
	// finding with that ID).
	ErrNotFound = errors.New("ledger: operation not found")
	// ErrFingerprintMismatch: the ID exists with another request fingerprint:
	// the same business identity was used for a different request. A caller
	// bug; nothing was changed and nothing may be sent. payonce's
	// ErrFingerprintMismatch is this error, so its text serves both layers.
	ErrFingerprintMismatch = errors.New("payonce: same operation identity with a different request (fingerprint mismatch); nothing was sent")
	// ErrInProgress: another worker holds a live lease on the operation.
	// payonce's ErrInProgress is this error.
	ErrInProgress = errors.New("payonce: operation in progress under another worker's lease")
	// ErrTerminal: the operation is succeeded, failed or in manual review;
	// automation may not act on it.
	ErrTerminal = errors.New("ledger: operation is terminal")
	// ErrLeaseLost: the caller no longer holds the lease (it expired and was
	// taken, or was never held). Nothing was changed.
	ErrLeaseLost = errors.New("ledger: lease not held by this owner")
	// ErrStateConflict: the operation is not in the status the caller
	// expected, or the transition is not allowed. Nothing was changed.
	ErrStateConflict = errors.New("ledger: operation is not in the expected state")
	// ErrNotInReview: Resolve on an operation that is not in manual_review.
	ErrNotInReview = errors.New("ledger: operation is not in manual review")
	// ErrRetentionTooShort: Cleanup with a retention shorter than the key TTL.
	ErrRetentionTooShort = errors.New("ledger: retention shorter than the provider's key TTL")
	// ErrKeyConflict: another operation already uses this idempotency key.
	ErrKeyConflict = errors.New("ledger: idempotency key already used by another operation")
	// ErrCorrupt: a stored value cannot be read back (e.g. an unknown status
	// written by hand). The row is left as it is for an operator to inspect.
	ErrCorrupt = errors.New("ledger: stored record is corrupt")
	// ErrInvalid: a parameter is missing or out of range; the error is a
	// *ValidationError naming the field.
	ErrInvalid = errors.New("ledger: invalid argument")
)

// ValidationError names the parameter that is wrong and what is allowed.
// payonce.ValidationError is this type: the ledger, the client and the
// adapters report invalid arguments alike, as "payonce: invalid Field:
// Problem".
type ValidationError struct {
	Field   string
	Problem string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("payonce: invalid %s: %s", e.Field, e.Problem)
}

// Is makes errors.Is(err, ErrInvalid) true for every ValidationError.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

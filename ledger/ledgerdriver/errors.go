package ledgerdriver

import (
	"fmt"

	"github.com/payonce/payonce/ledger"
)

func invalid(field, format string, args ...any) error {
	return &ledger.ValidationError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Corrupt returns an error wrapping ErrCorrupt that names the operation and
// the unreadable value. Stores use it when scanning rows.
func Corrupt(id, field string, err error) error {
	return fmt.Errorf("%w: operation %q field %s: %v", ledger.ErrCorrupt, id, field, err)
}

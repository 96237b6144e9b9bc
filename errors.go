package payonce

import (
	"fmt"

	"github.com/payonce/payonce/ledger"
)

// ErrInvalid is matched (errors.Is) by every *ValidationError, this
// package's and the ledger's: an argument was missing or out of range and
// nothing was recorded or sent. It is ledger.ErrInvalid, so one test covers
// both.
var ErrInvalid = ledger.ErrInvalid

// ValidationError names the argument that is wrong and what is allowed.
type ValidationError struct {
	Field   string
	Problem string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("payonce: invalid %s: %s", e.Field, e.Problem)
}

// Is makes errors.Is(err, ErrInvalid) true for every ValidationError.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

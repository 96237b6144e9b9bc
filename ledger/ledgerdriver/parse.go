package ledgerdriver

import (
	"fmt"
	"strings"

	"github.com/payonce/payonce/ledger"
)

// ParseStatus turns a stored or user-supplied string into a Status. An
// unrecognised value returns an error naming the allowed values.
func ParseStatus(s string) (ledger.Status, error) { return parseEnum("status", s, ledger.Statuses...) }

// ParseOutcomeClass turns a string into an OutcomeClass, or returns an error
// naming the allowed values.
func ParseOutcomeClass(s string) (ledger.OutcomeClass, error) {
	return parseEnum("outcome class", s, ledger.OutcomeClasses...)
}

// ParseResolutionOutcome turns a string into a ResolutionOutcome, or returns
// an error naming the allowed values.
func ParseResolutionOutcome(s string) (ledger.ResolutionOutcome, error) {
	return parseEnum("resolution outcome", s, ledger.ResolveSucceeded, ledger.ResolveFailed, ledger.ResolveResend)
}

// ParseEventKind turns a string into an EventKind, or returns an error naming
// the allowed values.
func ParseEventKind(s string) (ledger.EventKind, error) {
	return parseEnum("event kind", s, ledger.EventLookup, ledger.EventResolution, ledger.EventNote, ledger.EventWebhook)
}

// ParseReviewCode turns a stored or user-supplied string into a
// ledger.ReviewCode, or returns an error naming the allowed values.
func ParseReviewCode(s string) (ledger.ReviewCode, error) {
	return parseEnum("review code", s, ledger.ReviewCodes...)
}

// parseEnum returns the value of allowed that s spells, or an error naming
// what s should be and the allowed values in order.
func parseEnum[T ~string](what, s string, allowed ...T) (T, error) {
	for _, v := range allowed {
		if string(v) == s {
			return v, nil
		}
	}
	names := make([]string, len(allowed))
	for i, v := range allowed {
		names[i] = string(v)
	}
	return "", fmt.Errorf("ledger: unknown %s %q (allowed: %s)", what, s, strings.Join(names, ", "))
}

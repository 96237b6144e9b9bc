package yookassa

import (
	"context"
	"time"
)

// FormatAmount and ParseAmount expose the money conversion to the tests.
func FormatAmount(minor int64, code string) (value, cur string, err error) {
	a, err := formatAmount(minor, code)
	return a.Value, a.Currency, err
}

func ParseAmount(value, code string) (int64, error) {
	return parseAmount(amount{Value: value, Currency: code})
}

// SetWait replaces how the adapter waits (the audit's pacing and its waits
// after a 429), so that tests record the waits instead of sleeping.
func SetWait(p *Provider, wait func(ctx context.Context, d time.Duration) error) { p.wait = wait }

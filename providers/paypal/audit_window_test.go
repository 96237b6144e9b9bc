package paypal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// A period over 31 days is listed in 31-day windows, and bounds that are
// not whole seconds (a scheduled audit's From/To carry the clock's
// nanoseconds) must not make a window over 31 days once start_date is
// rounded down and end_date up: PayPal refuses that ("The maximum
// supported range is 31 days",
// https://developer.paypal.com/docs/api/transaction-search/v1/).
func TestAuditLongPeriodWithFractionalBounds(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 9, 1, 12, 0, 0, 500_000_000, time.UTC)
	clock := mocks.NewManualClock(start)
	fake := mocks.NewPayPal(mocks.PayPalOptions{Options: mocks.Options{Clock: clock.Now}})
	t.Cleanup(fake.Close)
	p, err := paypal.New(paypal.Config{ClientID: fake.ClientID(), ClientSecret: fake.ClientSecret(), BaseURL: fake.URL(),
		Now: clock.Now, AuditInterval: time.Nanosecond})
	require.NoError(t, err)
	to := start.Add(40 * 24 * time.Hour)
	clock.Set(to.Add(5 * time.Hour))
	err = p.ListObjects(context.Background(), fake.Client(), payonce.AuditQuery{From: start, To: to},
		func(payonce.AuditObject) error { return nil })
	require.NoError(t, err, "a 40-day period from %s must list in windows PayPal accepts", start.Format(time.RFC3339Nano))
}

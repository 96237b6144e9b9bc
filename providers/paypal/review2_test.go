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

// Adversarial review (pprev2). The body of a delivery is signed only
// through its CRC32 (ParseWebhook's own comment), so its event_type is no
// evidence: a captured PAYMENT.CAPTURE.REFUNDED delivery of payonce's own
// refund can be re-sent under its genuine headers as
// PAYMENT.CAPTURE.REVERSED with a body of the same CRC32. The re-read
// then finds the refund COMPLETED (payonce's own, custom_id = the refund
// operation's id) and the adapter turns it into a Reversal of the charge
// and the capture it refunded: the settled charge goes to review as a
// contradiction although PayPal reversed nothing. What PayPal holds does
// not tell a reversal from our refund; only the event type does, and the
// type is unverified. (f.signed signs the chosen body: the fixture's
// stand-in for a CRC32 collision under genuine headers.)
func TestReview2ForgedReversedTypeOverOurOwnRefund(t *testing.T) {
	f := newWebhookFixture(t, nil)
	f.api.holds("refund", refund("COMPLETED", opRefund, keyRef))
	evs, err := f.parse(f.signed(ppEvent("WH-FORGED", "PAYMENT.CAPTURE.REVERSED", "refund", refund("COMPLETED", opRefund, keyRef))))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	for _, tg := range evs[0].Targets {
		require.False(t, tg.Reversal, "a refund payonce made (custom_id %s) read back COMPLETED is not a reversal by PayPal; "+
			"only the unverified event type says so: target %+v", opRefund, tg)
	}
}

// The same with resource_type "capture": a capture REFUNDED by payonce's
// own refund reads as "money pulled back" for a forged REVERSED type.
func TestReview2ForgedReversedTypeOverRefundedCapture(t *testing.T) {
	f := newWebhookFixture(t, nil)
	f.api.holds("capture", orderCapture("REFUNDED"))
	evs, err := f.parse(f.signed(ppEvent("WH-FORGED2", "PAYMENT.CAPTURE.REVERSED", "capture", orderCapture("REFUNDED"))))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	for _, tg := range evs[0].Targets {
		require.False(t, tg.Reversal, "a capture REFUNDED (by any refund) does not show PayPal reversed it: target %+v", tg)
	}
}

// An audit period longer than 31 days is split into windows of exactly
// MaxSearchWindow, then each window's start_date is rounded down and its
// end_date up to the second (audit.go pages). A period whose bounds are
// not whole seconds (a scheduled audit's From/To carry the clock's
// nanoseconds) therefore asks PayPal for 31 days and up to 2 s, which
// PayPal refuses ("The maximum supported range is 31 days",
// https://developer.paypal.com/docs/api/transaction-search/v1/; the fake
// answers 400 "Date range is greater than 31 days"): every such audit
// fails.
func TestReview2AuditLongPeriodWithFractionalBounds(t *testing.T) {
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

package paypal_test

import (
	"testing"

	"github.com/stretchr/testify/require"
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

package paypal_test

import (
	"context"
	"strings"
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

// A charge at key generation 1 (an operator-approved resend: custom_id is
// the operation id, invoice_id the generation-1 key, another UUID v5)
// whose answer was lost is settled by PAYMENT.AUTHORIZATION.CREATED. The
// only target that can reach the operation (by OperationID; the others
// name the authorization and the order, which it never recorded) carries
// no ProviderRef (chargeTargets: the payment's id only when
// ownGenerationZero), and the ledger settles it with none
// (ledger/ledgerdriver/apply_webhook.go: ProviderRef copied only when
// set; ObjectOf reads key == op.Key as the current object). The charge is
// then succeeded with no authorization id: the service cannot capture it
// through payonce (capture needs PaymentRef), and the authorization
// expires. The ledger's key check (ByID, then Key == the current key)
// already proves the object is this generation's, so the payment's id can
// ride along whenever both ids are payonce's form (lower-case UUID v5).
func TestReview2LaterGenerationChargeSettledByWebhookKeepsItsRef(t *testing.T) {
	const keyGen1 = "3f2a1b4c-7d8e-5f60-9a1b-2c3d4e5f6a7b"
	gen1 := func(status string) string {
		return strings.Replace(authorization(status), `"invoice_id":"`+keyChg+`"`, `"invoice_id":"`+keyGen1+`"`, 1)
	}
	f := newWebhookFixture(t, nil)
	f.api.holds("authorization", gen1("CREATED"))
	evs, err := f.parse(f.signed(ppEvent("WH-G1", "PAYMENT.AUTHORIZATION.CREATED", "authorization", gen1("CREATED"))))
	require.NoError(t, err)
	require.Len(t, evs, 1)
	var byID *payonce.WebhookTarget
	for i, tg := range evs[0].Targets {
		if tg.OperationID == opCharge {
			byID = &evs[0].Targets[i]
		}
	}
	require.NotNil(t, byID, "a target names the operation by its id: %+v", evs[0].Targets)
	require.Equal(t, keyGen1, byID.Key)
	require.Equal(t, "0VF52814937998046", byID.ProviderRef,
		"the target that settles the generation-1 charge must carry the authorization's id, or the charge is recorded succeeded with no ref")
}

// PayPal's transaction search lags up to 3 h (SearchLag), and payonce has
// AuditInfo.Lag for exactly that: Client.Audit refuses a period that ends
// too recently, and scheduled audits (ReconcilerConfig.Audit,
// riverpayonce) keep their periods Lag + Margin in the past whatever
// their Delay (AuditInfo.Settled). The adapter leaves Lag zero, so a
// scheduled audit with a shorter Delay lists a period ListObjects refuses:
// every scheduled PayPal audit fails, and chargebacks the webhooks missed
// go unseen.
func TestReview2AuditInfoDeclaresTheSearchLag(t *testing.T) {
	p, err := paypal.New(paypal.Config{ClientID: "id", ClientSecret: "secret"})
	require.NoError(t, err)
	info := p.AuditInfo()
	require.Equal(t, paypal.SearchLag, info.Lag)
	require.GreaterOrEqual(t, info.Settled(), paypal.SearchLag+info.Margin)
}

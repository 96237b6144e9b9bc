package paypal_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
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
	} // Decision (ppwh3): payonce's own refund is read as what it is, the
	// refund operation's own state (here: succeeded), never a reversal.
	require.Equal(t, []payonce.WebhookTarget{{Kind: payonce.KindRefund, OperationID: opRefund, Key: keyRef,
		ProviderRef: "1JU08902781691411", PaymentRef: "3C679366HH908993F", Amount: 250, Currency: "USD", State: payonce.LookupSucceeded}},
		noMessages(evs[0].Targets))
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
	} // Decision (ppwh3): at most a nudge, a status lookup of the charge and
	// the capture that took this capture's money.
	require.Equal(t, []payonce.WebhookTarget{
		{Kind: payonce.KindCharge, ProviderRef: "3C679366HH908993F", LookupOnly: true},
		{Kind: payonce.KindCapture, ProviderRef: "3C679366HH908993F", LookupOnly: true},
	}, noMessages(evs[0].Targets))
}

// A charge at key generation 1 (an operator-approved resend: custom_id is
// the operation id, invoice_id the generation-1 key, another UUID v5)
// whose answer was lost is settled by PAYMENT.AUTHORIZATION.CREATED. The
// only target that can reach the operation (by OperationID; the others
// name the authorization and the order, which it never recorded) carries
// no ProviderRef (chargeTargets used to attach the payment's id only at
// generation 0), and the ledger settles it with none
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

// End to end (the fake, payonce's WebhookHandler, the ledger): payonce
// refunds a settled charge; whoever holds the genuine
// PAYMENT.CAPTURE.REFUNDED delivery sends a body of the same CRC32 typed
// PAYMENT.CAPTURE.REVERSED (resource_type refund and capture). The charge
// stays succeeded (no review), the refund stays succeeded: payonce's own
// refund read back is the refund's state, and a refunded capture at most
// nudges.
func TestReview2E2EForgedReversedTypeOverOurOwnRefund(t *testing.T) {
	e := newPPE2E(t, nil)
	ch, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-rev2-1", Amount: 1000, Currency: "USD", PaymentMethod: mocks.PayPalVaultApproved})
	require.NoError(t, err)
	rf, err := e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-rev2-1", RefundSeq: 1, Amount: 400, Currency: "USD", PaymentRef: ch.ProviderRef})
	require.NoError(t, err)
	ds := e.deliveries(t)
	for _, d := range ds {
		require.Equal(t, http.StatusOK, post(e.handler, d))
	}
	require.Equal(t, ledger.StatusSucceeded, e.status(t, ch.OperationID))
	require.Equal(t, ledger.StatusSucceeded, e.status(t, rf.OperationID))

	genuine := byType(t, ds, "PAYMENT.CAPTURE.REFUNDED")
	asRefund := forge(t, genuine, func(ev map[string]any) { ev["event_type"] = "PAYMENT.CAPTURE.REVERSED" })
	require.Equal(t, http.StatusOK, post(e.handler, asRefund), "the forged body verifies: it has the genuine CRC32")
	_, rep := e.lastReport()
	for _, o := range rep.Outcomes {
		require.NotEqual(t, ch.OperationID, o.OperationID, "the charge is not named by payonce's own refund: %+v", rep.Outcomes)
	}
	require.Equal(t, ledger.StatusSucceeded, e.status(t, ch.OperationID), "payonce's own refund is no reversal of the charge")
	require.Equal(t, ledger.StatusSucceeded, e.status(t, rf.OperationID))

	asCapture := forge(t, genuine, func(ev map[string]any) {
		ev["event_type"] = "PAYMENT.CAPTURE.REVERSED"
		ev["resource_type"] = "capture"
		resource(ev)["id"] = ch.ProviderRef
	})
	require.Equal(t, http.StatusOK, post(e.handler, asCapture))
	require.Equal(t, ledger.StatusSucceeded, e.status(t, ch.OperationID), "a PARTIALLY_REFUNDED capture is no reversal")
}

package paypal_test

// Adversarial review of the PayPal adapter (branch pprev1): each test here
// names a defect found in review; see /work/notes/pprev1.md.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// Two payonce operations (two orders of the service, e.g. a double submit
// of one checkout) name the same approved PayPal order. PayPal captures it
// once; the second capture answers 422 ORDER_ALREADY_CAPTURED. The second
// operation moved no money, yet the adapter reads the 422 as "exists",
// looks the order up, finds it COMPLETED and records the second operation
// succeeded with the first one's capture: the ledger holds two paid orders
// for one payment.
func TestReviewOrderMethodChargedByTwoOperations(t *testing.T) {
	t.Parallel()
	e := testkit.NewE2E(t, e2eEnv(mocks.PayPalOptions{}))
	fake := ppFake(e)
	orderID := fake.ApproveOrder("CAPTURE", 2500, "USD")
	first, err := e.Client.Charge(e.Ctx, usd("shop-order-1", 2500, paypal.MethodOrder+orderID))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, first.Status)

	second, _ := e.Client.Charge(e.Ctx, usd("shop-order-2", 2500, paypal.MethodOrder+orderID))
	require.Equal(t, int64(2500), fake.Truth().TotalCharged("USD"), "PayPal captured once")
	require.NotEqual(t, payonce.ResultSucceeded, second.Status,
		"the second operation captured nothing (PayPal: ORDER_ALREADY_CAPTURED under another request id), yet it is recorded succeeded with ref %s (the first's: %s)",
		second.ProviderRef, first.ProviderRef)
}

// An authorization the charge made and that was released later (voided)
// leaves the charge succeeded: the states table says so
// (objAuthorization VOIDED → charge succeeded, "authorized and later
// released ... still succeeded"). PayPal's order status VOIDED is "All
// purchase units in the order are voided", which is what an AUTHORIZE
// order shows once its only authorization is voided. orderState reads an
// order VOIDED as the charge failed without looking at the payment inside,
// so the same-request-id repeat (which answers the LATEST status) and the
// lookup by order id record an authorized charge as declined.
func TestReviewVoidedOrderHoldingAuthorizationIsNotADecline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	manual := vaultCharge()
	manual.Request.CaptureManual = true
	auths := `{"authorizations":[{"id":"AUTH-1","status":"VOIDED","amount":{"currency_code":"USD","value":"19.99"},"custom_id":"` + opID + `","invoice_id":"` + opID + `"}]}`
	body := orderJSON("ORD-1", "VOIDED", "AUTHORIZE", opID, opID, auths)
	o := b.P.Classify(manual, 200, nil, []byte(body))
	require.NotEqual(t, ledger.OutcomeRefused, o.Class,
		"a repeat showing the order VOIDED around an authorization VOIDED is a charge that was authorized then released (table: succeeded), not a decline: %+v", o)
}

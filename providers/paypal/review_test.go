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

// An operator-approved resend of a refund goes out under a new key (a new
// PayPal-Request-Id and invoice_id). If the earlier generation's refund
// went through (its answer lost), PayPal answers the new one 422
// CAPTURE_FULLY_REFUNDED ("The capture has already been fully refunded",
// https://developer.paypal.com/api/payments/v2/errors/capture_fully_refunded)
// or REFUND_AMOUNT_EXCEEDED (a partial refund that no longer fits). Both
// are evidence that an earlier refund exists, maybe this operation's; the
// adapter reads them as a plain refusal, and the operation is recorded
// failed while its money went back: the service refunds again by other
// means (or the ledger and PayPal disagree for good). Under a later
// generation (Key != OperationID) they should be maybe_sent, so that the
// lookup (which reads the capture's refunds by every key's invoice_id)
// decides.
func TestReviewRefundLaterGenerationAlreadyRefundedIsNotRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	refund := withKind(vaultCharge(), payonce.KindRefund, 500, "CAP-1")
	refund.Key = "0b6f3e1c-2c4d-5e6f-8a9b-0c1d2e3f4a5b.1" // generation 1
	for _, issue := range []string{"CAPTURE_FULLY_REFUNDED", "REFUND_AMOUNT_EXCEEDED"} {
		o := b.P.Classify(refund, 422, nil, []byte(ppErr("UNPROCESSABLE_ENTITY", issue, "already refunded")))
		require.NotEqual(t, ledger.OutcomeRefused, o.Class, "%s to a later generation's refund: an earlier generation's refund may be what took the capture", issue)
	}
}

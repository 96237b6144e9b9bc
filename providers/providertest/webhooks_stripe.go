package providertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
)

// ScenarioWebhookStripeOlderRefundEvents is the scenario of a Stripe
// refund that fails after it succeeded, told to a webhook endpoint of an
// API version before 2024-10-28.
const ScenarioWebhookStripeOlderRefundEvents = "WebhookStripeOlderRefundEvents"

// stripeOlderVersions are webhook endpoint API versions that send no
// refund.* event for a card refund
// (https://docs.stripe.com/changelog/acacia/2024-10-28/refund-webhook-update):
// one whose charge.refunded carries no refunds, and one from before
// 2022-11-15, whose charge.refunded embeds them.
var stripeOlderVersions = []string{"2024-06-20", "2020-08-27"}

// testWebhookStripeOlderRefundEvents: on an endpoint of an API version
// before 2024-10-28, Stripe announces a card refund by charge.refunded and
// its failure, days after it succeeded, only by charge.refund.updated (the
// Refund, status failed). That event contradicts the refund recorded as
// succeeded: the operation goes to review with the event as its reason, as
// refund.failed sends it on later versions; no lookup settles it again and
// nothing is sent. Only the Stripe fake has endpoint versions; the other
// providers skip it.
func testWebhookStripeOlderRefundEvents(t *testing.T, s *suite) {
	b := newBench(t, s, setup{webhooks: func(*mocks.WebhookDelivery) {}})
	b.webhooksOn()
	fake, ok := b.env.Fake.(*mocks.Stripe)
	if !ok {
		t.Skipf("%s: only Stripe's webhook endpoints have API versions that change which event tells a refund's failure", b.env.Provider.Name())
	}
	for _, version := range stripeOlderVersions {
		order := "order-refund-fails-" + version
		require.NoError(t, fake.SetWebhookAPIVersion(version))
		_, err := b.client.Charge(b.ctx, b.charge(order, 4000))
		require.NoError(t, err)
		call := func() (payonce.Result, error) { return b.client.Refund(b.ctx, b.refund(order, 1, 4000)) }
		res, err := call()
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		b.flush()
		for _, e := range b.inbox(ledger.InboxFilter{OperationID: res.OperationID}) {
			require.False(t, strings.HasPrefix(e.Type, "refund."), "%s sends no %s for a card refund", version, e.Type)
		}
		posts := b.allPosts()

		require.NoError(t, fake.FailRefund(res.ProviderRef, "expired_or_canceled_card"))
		b.flush()
		op, atts := b.get(res.OperationID)
		require.Equal(t, ledger.StatusManualReview, op.Status, "%s: %s", version, Describe(op, atts))
		require.Equal(t, ledger.ReviewCodeWebhookContradiction, op.ReviewCode, op.ReviewReason)
		require.Contains(t, op.ReviewReason, "charge.refund.updated", "the reason names the event")
		require.True(t, op.NextCheckAt.IsZero(), "an operator decides: no lookup would settle it again")
		list := b.inbox(ledger.InboxFilter{Disposition: ledger.WebhookContradiction, OperationID: res.OperationID})
		require.Len(t, list, 1, "the inbox lists the contradiction")
		require.Equal(t, "charge.refund.updated", list[0].Type)

		got, err := call()
		require.ErrorIs(t, err, payonce.ErrManualReview, "the caller sees the review")
		require.Equal(t, op.ReviewReason, got.ReviewReason)
		b.clock.Advance(time.Hour)
		b.reconcile()
		again, _ := b.get(res.OperationID)
		require.Equal(t, ledger.StatusManualReview, again.Status, "the reconciler leaves it to the operator")
		require.Equal(t, posts, b.allPosts(), "nothing sent")
	}
}

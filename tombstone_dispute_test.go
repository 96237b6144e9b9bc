package payonce_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/stripe"
)

// TestStripeDisputeAfterCleanupReachesReview: the most common
// contradiction after Cleanup is a chargeback, weeks or months after the
// charge. Stripe's charge.dispute.created names the charge only by its
// PaymentIntent (a Dispute carries no metadata, so the adapter's target has
// no OperationID). The ledger looks for tombstones by operation id only,
// so the dispute of a cleaned-up charge is recorded as unmatched: the
// ledger still says succeeded, nothing reaches review, the feed or the
// gauges, and the merchant loses the disputed money unseen.
func TestStripeDisputeAfterCleanupReachesReview(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		first := chargedAndCleanedUp(t, b, "order-dispute-late", 4200)

		// The dispute as Stripe sends it, read by the real adapter.
		const secret = "whsec_review2"
		psp, err := stripe.New(stripe.Config{APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), WebhookSecret: secret, Now: b.clock.Now})
		require.NoError(t, err)
		body := []byte(`{"id":"evt_dispute_late","object":"event","type":"charge.dispute.created","created":` +
			fmt.Sprint(b.clock.Now().Unix()) + `,"data":{"object":{"id":"dp_1","object":"dispute","reason":"fraudulent",` +
			`"status":"needs_response","payment_intent":"` + first.ProviderRef + `"}}}`)
		ts := b.clock.Now().Unix()
		mac := hmac.New(sha256.New, []byte(secret))
		fmt.Fprintf(mac, "%d.%s", ts, body)
		r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", bytes.NewReader(body))
		r.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%s", ts, hex.EncodeToString(mac.Sum(nil))))
		events, err := psp.ParseWebhook(r, body)
		require.NoError(t, err)
		require.Len(t, events, 1)
		require.Len(t, events[0].Targets, 1)
		require.Empty(t, events[0].Targets[0].OperationID, "a Stripe dispute names the charge only by its PaymentIntent")

		wrep, err := b.client.RecordWebhook(b.ctx, events[0])
		require.NoError(t, err)
		require.Equal(t, []ledger.WebhookOutcome{{OperationID: first.OperationID, Disposition: ledger.WebhookContradiction,
			From: ledger.StatusSucceeded, To: ledger.StatusManualReview}}, wrep.Outcomes,
			"the chargeback of a cleaned-up charge must reopen it in review, not be unmatched")
		got, _, err := b.store.Get(b.ctx, first.OperationID)
		require.NoError(t, err)
		require.Equal(t, ledger.StatusManualReview, got.Status)
		_, err = b.client.Charge(b.ctx, charge("order-dispute-late", 4200))
		require.ErrorIs(t, err, payonce.ErrManualReview)
	})
}

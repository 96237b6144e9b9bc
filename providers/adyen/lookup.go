package adyen

import (
	"context"
	"fmt"

	"github.com/payonce/payonce"
)

// Lookup answers, without sending anything, that Adyen has no record it can
// show: LookupNotFound with Lag = Config.WebhookLag, for every kind.
//
// Why: Adyen has no endpoint that returns a payment's or a modification's
// status. Its Checkout API offers no GET of a payment (CheckoutService-v71.json
// has none), and its maintainers say so: "There is no any API endpoint
// for that. The suggested way is to use the Payment Notifications instead"
// (https://github.com/Adyen/adyen-java-api-library/issues/92, on reading a
// payment by pspReference); "We don't have this kind of API to check
// status. What you can do is implement a notification handler"
// (https://github.com/Adyen/adyen-php-api-library/issues/22). Captures,
// cancels and refunds are answered 201 "received" and "We send a final
// capture result in a separate webhook event" (docs.adyen.com, capture). The
// outcome therefore arrives by webhook, and the ledger applies each
// verified webhook in the transaction that records it (Client.RecordWebhook):
// an operation a webhook settled is never looked up again. Lookup only ever
// sees operations no webhook has settled yet.
//
// How it fits the decision after a "maybe sent" outcome: a "not found" is believed
// only once Lag has passed since the last attempt, which leaves the
// webhook WebhookLag to arrive. After that, inside the key window (31
// days), the client resends with the SAME key, and Adyen answers a key it
// has processed with "the response to the first attempt ... without
// duplication" (https://docs.adyen.com/development-resources/api-idempotency),
// or 704 while that attempt still runs: the resend is Adyen's status read,
// and it can never pay twice. A first attempt that never reached Adyen is
// simply made. After the window the client sends nothing: the operation
// goes to review (ReasonWindowPassed) and a late webhook still settles it.
//
// Lookup must stay read-only: it does no HTTP at all, and hc is not used.
func (p *Provider) Lookup(_ context.Context, _ payonce.HTTPDoer, q payonce.LookupQuery) (payonce.LookupResult, error) {
	switch q.Request.Kind {
	case payonce.KindCharge, payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		return payonce.LookupResult{State: payonce.LookupNotFound, Lag: p.webhookLag}, nil
	}
	return payonce.LookupResult{}, fmt.Errorf("adyen: lookup: unknown kind %q", string(q.Request.Kind))
}

// Package mocks provides fake payment providers for tests: HTTP servers that
// speak a provider's real wire format and keep its idempotency rules, inject
// the faults that make payments hard (answers lost after the money moved,
// hangs, proxy 502s, rate limits, stored 500s), and report what really
// happened, so a test can prove that no fault moved money twice.
//
// The Stripe fake serves PaymentIntents (create, confirm, capture, cancel,
// retrieve, list, search) and Refunds (create, retrieve, list) on API v1,
// with form-encoded requests, JSON answers, Request-Id headers, Stripe's
// error objects and test payment methods (pm_card_visa,
// pm_card_chargeDeclined, ...). Idempotency-Key works as at Stripe: the
// first executed answer (500s included) is stored and replayed with
// Idempotent-Replayed: true; the same key with other parameters is an
// idempotency_error; a repeat while the first still runs is a 409
// idempotency_key_in_use; keys are forgotten after KeyTTL on the fake's
// clock, after which a repeat is a new request.
//
// The YooKassa fake (NewYooKassa) serves API v3 payments (create with a
// saved payment method, retrieve, list with cursor, capture, cancel) and
// refunds (create, retrieve, list) with JSON bodies and HTTP Basic auth. Its
// Idempotence-Key keeps YooKassa's rules: a repeat within KeyTTL (24 h) is the
// same request, a repeat while the first still runs gets 202 with
// retry_after (milliseconds), another body under the key gets 400
// "Idempotence key duplicated", and a 500 is never replayed: a repeat learns
// the real outcome. Test methods: YooKassaMethodSucceeds,
// YooKassaMethodInsufficientFunds, ...
//
// The Checkout.com fake (NewCheckout) serves POST /payments, GET
// /payments/{id}, GET /payments?reference=, GET /payments/{id}/actions and
// captures, voids and refunds (202 Accepted). Its Cko-Idempotency-Key keeps
// an answer only when it was 2xx: after a 4xx or a 5xx (FaultProcessed500:
// the payment was made, then a 500) the same key is processed as a new
// payment, which is what makes a blind resend charge twice there. A repeat
// while the first runs gets 409. Test sources: CheckoutSourceApproved,
// CheckoutSourceDoNotHonour, ...; Truth().ChargesByReference counts
// payments per reference.
//
// The Adyen fake (NewAdyen) serves POST /payments (Checkout API v71) and
// captures, cancels and refunds by pspReference, which answer 201
// "received": their outcomes come only by webhook. Its Idempotency-Key
// replays the first answer; a repeat while the first runs gets 409 with
// errorCode 704.
//
// Every fake can deliver webhooks as its provider does (Options.Webhooks, a
// WebhookDelivery): to a loopback URL only, at least once, possibly late
// (Delay), twice (DuplicateRate), out of order (ReorderRate), with attempts
// failing on the way (FailRate) and retried with backoff up to
// MaxAttempts. The events are the provider's own: Stripe Events signed
// with Stripe-Signature (StripeEvent), Checkout.com notifications signed
// with Cko-Signature (CheckoutEvent), YooKassa notifications, unsigned
// (YooKassaNotification), Adyen standard notifications (AdyenNotification,
// one item per delivery, each signed in additionalData.hmacSignature with
// the hex key Webhooks.Secret, with Basic auth from Webhooks.Username and
// Password); each carries the object as the fake's GET
// returns it at the moment of the change. FlushWebhooks waits for the
// queue, WebhookStats counts what happened, Close stops the sender. Test
// hooks change money after the fact: Stripe's FailRefund (a refund fails
// after it succeeded: refund.failed) and Checkout.com's DeclineCapture (an
// accepted capture is declined: payment_capture_declined), Adyen's
// FailCapture and FailRefund (CAPTURE_FAILED, REFUND_FAILED).
//
// The smallest use:
//
//	f := mocks.NewStripe(mocks.StripeOptions{})
//	defer f.Close()
//	f.Script(mocks.Match{Path: "/v1/payment_intents"}, mocks.FaultDropAfterProcessing)
//
//	form := url.Values{"amount": {"1000"}, "currency": {"usd"}, "confirm": {"true"},
//		"payment_method": {"pm_card_visa"}, "metadata[order]": {"42"}}
//	req, _ := http.NewRequest("POST", f.URL()+"/v1/payment_intents", strings.NewReader(form.Encode()))
//	req.Header.Set("Authorization", "Bearer "+f.APIKey())
//	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
//	req.Header.Set("Idempotency-Key", "order-42-charge")
//	resp, err := f.Client().Do(req) // the connection drops, but the card was charged
//
//	// ... the code under test retries, looks up, reconciles ...
//
//	if dup := f.Truth().Duplicates("order"); len(dup) > 0 {
//		t.Fatalf("charged twice: %v", dup)
//	}
//
// The fault, idempotency and truth machinery (faults.go, idempotency.go,
// truth.go, core.go, clock.go), the handler and server every fake embeds
// (fake.go), the handling of stored objects (objects.go) and the webhook
// sender (webhooks.go) are provider-neutral; each provider's wire format lives in its own files
// (stripe*.go, yookassa*.go, checkout*.go). httpmock responders in Stripe's
// wire format live in the subpackage mockhttp, which only tests import.
package mocks

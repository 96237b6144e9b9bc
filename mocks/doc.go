// Package mocks provides fake payment providers for tests: HTTP servers that
// speak a provider's real wire format and keep its idempotency rules, inject
// the faults that make payments hard (answers lost after the money moved,
// hangs, proxy 502s, rate limits, stored 500s), deliver its webhooks, and
// report what really happened, so that a test can prove that no fault moved
// money twice.
//
// # Starting a fake
//
// Five providers are faked: NewStripe, NewYooKassa, NewCheckout (Checkout.com),
// NewAdyen and NewPayPal. Each starts a real HTTP server on 127.0.0.1 and
// takes its own options type (StripeOptions, YooKassaOptions, CheckoutOptions,
// AdyenOptions, PayPalOptions), which embeds the Options every fake shares (clock, key TTL,
// seed, fault rates and delays, logger, webhooks) and adds the provider's
// credentials and quirks. The zero value of each is ready to use:
//
//	f := mocks.NewStripe(mocks.StripeOptions{})
//	defer f.Close()
//	// point the code under test at f.URL() with f.APIKey()
//
// A constructor panics if its options do not validate (a wrong option is a
// bug in the test); each options type's Validate says what is wrong and how
// to fix it. URL and Client reach the server; the credentials it accepts
// come from APIKey (Stripe, Adyen), SecretKey (Checkout.com) or ShopID and
// SecretKey (YooKassa) or ClientID and ClientSecret (PayPal, exchanged for
// tokens), derived from Seed unless set. NewStripeHandler,
// NewYooKassaHandler, NewCheckoutHandler, NewAdyenHandler and
// NewPayPalHandler return the same
// fakes as http.Handlers, for a server of the caller's own (the payonce fake
// command serves them so). Every fake and handler is safe for concurrent use.
//
// # What each fake serves, and its idempotency rule
//
// Stripe (API v1, form-encoded requests, JSON answers): PaymentIntents
// (create, confirm, capture, cancel, retrieve, list, search), Refunds
// (create, retrieve, list) and Charges (retrieve), with Request-Id headers,
// Stripe's error objects and test payment methods (pm_card_visa,
// pm_card_chargeDeclined, ...). The first executed answer under an
// Idempotency-Key, 500s included, is stored and replayed with
// Idempotent-Replayed: true; the same key with other parameters is an
// idempotency_error; a repeat while the first still runs is a 409
// idempotency_key_in_use.
//
// YooKassa (API v3, JSON, HTTP Basic auth): payments with a saved payment
// method (create, retrieve, list with cursor, capture, cancel) and refunds
// (create, retrieve, list); test methods YooKassaMethodSucceeds,
// YooKassaMethodInsufficientFunds, .... A repeat of an Idempotence-Key is
// the same request; a repeat while the first still runs gets 202 with
// retry_after (milliseconds); another body under the key gets 400
// "Idempotence key duplicated"; a 500 is never replayed: a repeat learns the
// real outcome.
//
// Checkout.com: POST /payments, GET /payments/{id}, GET
// /payments?reference=, GET /payments/{id}/actions, and captures, voids and
// refunds (202 Accepted); test sources CheckoutSourceApproved,
// CheckoutSourceDoNotHonour, .... A Cko-Idempotency-Key keeps an answer only
// when it was 2xx: after a 4xx or a 5xx (FaultProcessed500: the payment was
// made, then a 500) the same key is processed as a new payment, which is what
// makes a blind resend charge twice there. A repeat while the first runs gets
// 409 (or 429, CheckoutOptions.KeyInUseStatus).
//
// Adyen (Checkout API v71): POST /payments and the captures, cancels and
// refunds of a payment by pspReference, which answer 201 "received": their
// outcomes come only by webhook. An Idempotency-Key replays the first
// answer, for every merchant account of the company; a repeat while the
// first runs gets errorCode 704 (409, or 422). Test methods
// AdyenMethodAuthorised, AdyenMethodRefused, ....
//
// PayPal (REST, JSON, OAuth2 client-credentials tokens that expire on the
// fake's clock): Orders v2 (create with a saved payment source, which
// completes at once, retrieve, authorize and capture an approved order;
// ApproveOrder makes one), Payments v2 (authorizations: retrieve, capture,
// void; captures: retrieve, refund; refunds: retrieve), transaction search
// (behind by SearchLag) and webhooks signed with a test certificate that
// chains to WebhookRoots. A PayPal-Request-Id is kept 6 hours on Orders and
// 45 days on Payments; a repeat, whatever its body, answers the LATEST status
// of what the first request made (Orders: 200 instead of 201); a repeat
// while the first runs gets 409 PREVIOUS_REQUEST_IN_PROGRESS; a 500 is not
// kept (after a processed request, the real outcome is); a second payment
// with an invoice_id already paid gets 422 DUPLICATE_INVOICE_ID. Test
// methods PayPalVaultApproved, PayPalVaultDeclined, ....
//
// Every fake forgets a key Options.KeyTTL after its first request, on the
// fake's clock (the provider's documented period by default); a repeat after
// that is a new request.
//
// # Faults
//
// A FaultKind says how the path between client and provider fails, and
// whether the provider processed the request first: FaultDropAfterProcessing,
// FaultHangAfterProcessing, FaultGatewayBefore502, FaultGatewayAfter502,
// FaultRateLimit429, FaultSlow, FaultStored500 and FaultProcessed500. Script
// queues faults for the requests a Match selects, in order; Options.FaultRates
// injects them at random (reproducibly for a Seed). Release ends every hang
// and delay at once.
//
// # Truth
//
// Truth returns what the fake actually did, whatever any client heard: every
// payment and refund it holds (TruthPayment, TruthRefund) and counters of
// requests, faults, replays and refused keys. Truth.Duplicates and
// Truth.ChargesBy find a reference charged twice; Truth.ChargesByReference
// does so for Checkout.com's own reference field.
//
// # Webhooks
//
// With Options.Webhooks (a WebhookDelivery) set, a fake delivers its
// provider's own events whenever a payment or refund changes: Stripe Events
// signed with Stripe-Signature, Checkout.com notifications signed with
// Cko-Signature, YooKassa notifications (unsigned), Adyen standard
// notifications (one item per delivery, each item HMAC-signed, with Basic
// auth). Each event carries the object as the fake's GET returns it at the
// moment of the change. Deliveries go to a loopback URL only, at least once,
// possibly late (Delay), twice (DuplicateRate), out of order (ReorderRate),
// with attempts failing on the way (FailRate) and retried with backoff up to
// MaxAttempts. FlushWebhooks waits for the queue, WebhookStats counts what
// happened, Close stops the sender. Test hooks change money after the fact:
// StripeHandler.FailRefund (refund.failed), CheckoutHandler.DeclineCapture
// (payment_capture_declined), AdyenHandler.FailCapture and
// AdyenHandler.FailRefund (CAPTURE_FAILED, REFUND_FAILED).
//
// # Time
//
// A ManualClock, passed as Options.Clock, moves only when told to, so that a
// test crosses a key's TTL or Stripe's search lag without sleeping.
//
// # A whole test
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
// The fakes talk HTTP only: their wire types are not exported, and a test
// decodes their answers as the code under test does. httpmock responders in
// Stripe's wire format, for unit tests that need no server, are in the
// subpackage mockhttp, which only tests import.
package mocks

// Where the code is: the provider-neutral machinery (faults, idempotency,
// truth, the request pipeline, the clock, the handler and server every fake
// embeds, stored objects, the webhook sender) is in faults.go,
// idempotency.go, truth.go, core.go, clock.go, fake.go, objects.go and
// webhooks.go; each provider's wire format is in its own files (stripe*.go,
// yookassa*.go, checkout*.go, adyen*.go); Stripe's objects, which mockhttp
// renders too, are in internal/stripewire.

// Package adyen is payonce's adapter for Adyen's Checkout API v71 and its
// standard notification webhooks. Charges are payments with a stored
// payment method (storedPaymentMethodId, shopperReference, ContAuth),
// captured at once or later (additionalData.manualCapture), and captures,
// cancels and refunds are modifications of a payment by its pspReference.
// Every POST carries an Idempotency-Key derived from the operation's key and
// the merchant account (IdempotencyKey: Adyen keeps keys per company
// account, at least 31 days, so each merchant account needs keys of its
// own) and the operation id as its reference; every payment carries
// Config.ReturnURL (required by v71).
//
// What makes Adyen different: it has no API that reads a payment's status.
// A payment answers Authorised, Refused, Error or Cancelled at once, or
// Pending/Received; a capture, cancel or refund answers 201 "received",
// and its outcome comes only by webhook (CAPTURE, CANCELLATION, REFUND,
// and later CAPTURE_FAILED, REFUND_FAILED, REFUNDED_REVERSED, CHARGEBACK).
// So the adapter implements payonce.WebhookParser, and its Lookup sends
// nothing: it says "not found" with Lag = Config.WebhookLag. Webhooks
// settle operations in the ledger as they are recorded; once the lag has
// passed with no webhook, the client resends with the same key, which
// Adyen answers with the first request's stored answer (the resend is the
// status read, and cannot pay twice), and after the key window the
// operation goes to review.
//
// The audit (payonce.Client.Audit) reads what Adyen settled from the
// merchant's Settlement details report (CSV, passed as AuditParams.Report:
// payonce audit --report FILE), provider → ledger only: the report holds
// what settled and nothing else (see ListObjects).
//
// The smallest use:
//
//	p, err := adyen.New(adyen.Config{
//		APIKey:          os.Getenv("ADYEN_API_KEY"),
//		MerchantAccount: os.Getenv("ADYEN_MERCHANT_ACCOUNT"),
//		HMACKey:         os.Getenv("ADYEN_HMAC_KEY"),
//		WebhookUsername: os.Getenv("ADYEN_WEBHOOK_USERNAME"),
//		WebhookPassword: os.Getenv("ADYEN_WEBHOOK_PASSWORD"),
//	})
//	if err != nil {
//		return err // names the Config field and how to fix it
//	}
//	client, err := payonce.New(payonce.Config{Provider: p, Store: store})
//	h, err := client.WebhookHandler(payonce.WebhookOptions{})
//	http.Handle("POST /webhooks/adyen", h)
//
// The default BaseURL is the test endpoint; a live account must set its
// own live URL (https://{PREFIX}-checkout-live.adyenpayments.com/checkout/v71).
//
// The API key goes only in the X-API-Key header. It, the HMAC keys and the
// webhook password never appear in errors, in the Outcome or LookupResult
// the adapter returns, or when a Config or Provider is printed or logged.
package adyen

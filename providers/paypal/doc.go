// Package paypal is payonce's adapter for PayPal's REST APIs: Orders v2
// (create an order with a payment source, authorize or capture an approved
// order) and Payments v2 (capture and void an authorization, refund a
// capture), with OAuth2 client-credentials tokens and PayPal-Request-Id
// idempotency.
//
// A charge's Request.PaymentMethod is "order:<ORDER_ID>" (an order the
// payer approved with PayPal's JS SDK or a redirect: the charge captures
// it, or authorizes it with CaptureManual), "paypal:<VAULT_ID>" or
// "card:<VAULT_ID>" (a saved wallet or card: the charge creates the
// order). The order's custom_id is the operation id and its invoice_id
// the key. PayPal refunds captures, so a refund of a manual-capture
// charge goes to its capture (payonce.ProviderInfo.RefundsCapture).
//
// PayPal keeps a PayPal-Request-Id for 6 hours on the Orders endpoints (up
// to 72 hours for accounts that asked their account manager) and for 45
// days on the Payments endpoints: the adapter declares each kind's window
// (payonce.ProviderInfo.KindKeyTTL), and payonce's window and review rules
// use it. A repeat of a request id answers the latest status of the first
// request, and Orders has no search by the adapter's ids: a lookup reads
// by PayPal's ids only, and its "not found" proves nothing
// (LookupProvesAbsence false).
//
// Webhooks (ParseWebhook) are verified offline with PayPal's certificate
// or by PayPal's verify-webhook-signature call; since the signature binds
// the body only by its CRC32, the object an event names is read back from
// PayPal's API and applied as read. The audit (ListObjects) reads the
// transaction search, which lags up to 3 hours (SearchLag).
package paypal

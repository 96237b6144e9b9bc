// Package paypal is payonce's adapter for PayPal's REST APIs: Orders v2
// (create an order with a payment source, authorize or capture an approved
// order) and Payments v2 (capture and void an authorization, refund a
// capture), with OAuth2 client-credentials tokens and PayPal-Request-Id
// idempotency.
//
// PayPal keeps a PayPal-Request-Id for 6 hours on the Orders endpoints (up
// to 72 hours for accounts that asked their account manager) and for 45
// days on the Payments endpoints: the adapter declares each kind's window
// (payonce.ProviderInfo.KindKeyTTL), and payonce's window and review rules
// use it.
package paypal

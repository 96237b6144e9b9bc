package cli

import (
	"fmt"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/paypal"
)

// PayPal's environment variables beside the adapter's own
// (paypal.EnvClientID, paypal.EnvClientSecret).
const (
	// envPayPalWebhookID is the id PayPal gave the webhook (not an event's WH-... id): every
	// signature is made over it, so webhooks verify only with it.
	envPayPalWebhookID = "PAYPAL_WEBHOOK_ID"
	// envPayPalWebhookVerification chooses how webhooks are verified:
	// "offline" (the default: the signature checked with PayPal's
	// certificate) or "api" (PayPal's verify-webhook-signature call).
	envPayPalWebhookVerification = "PAYPAL_WEBHOOK_VERIFICATION"
)

// PayPalAdapter builds the PayPal adapter from PAYPAL_CLIENT_ID and
// PAYPAL_CLIENT_SECRET (the REST app's credentials, exchanged for access
// tokens), and its webhook verification from PAYPAL_WEBHOOK_ID, with
// PAYPAL_WEBHOOK_VERIFICATION=api to ask PayPal instead of checking the
// signature offline. PayPal keeps a PayPal-Request-Id for 6 hours on the
// Orders endpoints (charges) and 45 days on the Payments endpoints
// (captures, cancels, refunds): --key-ttl shortens each window to at most
// its value. Its lookups read objects by PayPal's ids and never lag, so
// --search-lag does not apply.
func PayPalAdapter() Adapter {
	return Adapter{
		Name:           "paypal",
		EnvVars:        []string{paypal.EnvClientID, paypal.EnvClientSecret},
		WebhookEnvVars: []string{envPayPalWebhookID},
		SettingEnvVars: []string{envPayPalWebhookVerification},
		// The longest window PayPal keeps a request id (Payments v2).
		KeyTTL: paypal.DefaultPaymentsKeyTTL,
		New: func(c AdapterConfig) (payonce.Provider, error) {
			verify := paypal.VerifyOffline
			switch v := c.Env[envPayPalWebhookVerification]; v {
			case "", string(paypal.VerifyOffline):
			case string(paypal.VerifyAPI):
				verify = paypal.VerifyAPI
			default:
				return nil, fmt.Errorf("%s is %q: use %q (check the signature with PayPal's certificate) or %q (ask PayPal's verify-webhook-signature)",
					envPayPalWebhookVerification, v, paypal.VerifyOffline, paypal.VerifyAPI)
			}
			cfg := paypal.Config{BaseURL: c.BaseURL, WebhookID: c.Env[envPayPalWebhookID], WebhookVerification: verify}
			if c.KeyTTL > 0 {
				// Shorter only, never longer than what PayPal keeps.
				cfg.OrdersKeyTTL = min(c.KeyTTL, paypal.DefaultOrdersKeyTTL)
				cfg.PaymentsKeyTTL = min(c.KeyTTL, paypal.DefaultPaymentsKeyTTL)
			}
			return paypal.New(paypal.FromEnv(cfg, func(k string) string { return c.Env[k] }))
		},
	}
}

package paypal_test

import (
	"fmt"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/paypal"
)

func Example() {
	// Credentials come from the environment only (PAYPAL_CLIENT_ID,
	// PAYPAL_CLIENT_SECRET): in a service, paypal.FromEnv(cfg, os.Getenv).
	// They are fixed here so that the example runs.
	env := map[string]string{paypal.EnvClientID: "AZexampleclientid", paypal.EnvClientSecret: "EKexamplesecret"}
	cfg := paypal.FromEnv(paypal.Config{BaseURL: paypal.SandboxBaseURL}, func(k string) string { return env[k] })
	p, err := paypal.New(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	info := p.Info()
	fmt.Println(p.Name(), info.KeyTTLFor(payonce.KindCharge), info.KeyTTLFor(payonce.KindRefund), info.MaxKeyLength, info.LookupProvesAbsence)
	fmt.Println(p)
	// Output:
	// paypal 6h0m0s 1080h0m0s 108 false
	// paypal.Provider{ClientID:[REDACTED] ClientSecret:[REDACTED] BaseURL:https://api-m.sandbox.paypal.com OrdersKeyTTL:6h0m0s PaymentsKeyTTL:1080h0m0s WebhookID:"" WebhookVerification:offline}
}

func ExampleNew_error() {
	_, err := paypal.New(paypal.Config{ClientID: "AZexampleclientid", ClientSecret: "EKexamplesecret", OrdersKeyTTL: 96 * time.Hour})
	fmt.Println(err)
	// Output:
	// payonce: invalid paypal.Config.OrdersKeyTTL: is 96h0m0s; PayPal keeps an Orders PayPal-Request-Id 6 h by default and at most 72h0m0s for accounts that asked their account manager: set the window your account has, at most 72h0m0s
}

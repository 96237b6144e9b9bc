package stripe_test

import (
	"fmt"

	"github.com/payonce/payonce/providers/stripe"
)

func Example() {
	p, err := stripe.New(stripe.Config{APIKey: "sk_test_example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name(), p.Info().KeyTTL, p.Info().MaxKeyLength)
	fmt.Println(p)
	// Output:
	// stripe 24h0m0s 255
	// stripe.Provider{APIKey:[REDACTED] BaseURL:https://api.stripe.com KeyTTL:24h0m0s SearchLag:1m0s APIVersion:""}
}

func ExampleNew_error() {
	_, err := stripe.New(stripe.Config{})
	fmt.Println(err)
	// Output:
	// payonce: invalid stripe.Config.APIKey: is empty; set it to your Stripe secret key (sk_live_... / sk_test_...) or a restricted key (rk_...)
}

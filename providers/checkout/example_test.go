package checkout_test

import (
	"fmt"

	"github.com/payonce/payonce/providers/checkout"
)

func Example() {
	p, err := checkout.New(checkout.Config{SecretKey: "sk_sbox_example", BaseURL: checkout.SandboxBaseURL})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name(), p.Info().KeyTTL, p.Info().MaxKeyLength, p.SettleLag())
	fmt.Println(p)
	// Output:
	// checkout 24h0m0s 36 2m0s
	// checkout.Provider{SecretKey:[REDACTED] BaseURL:https://api.sandbox.checkout.com ProcessingChannelID:"" KeyTTL:24h0m0s SettleLag:2m0s}
}

func ExampleNew_error() {
	_, err := checkout.New(checkout.Config{})
	fmt.Println(err)
	// Output:
	// payonce: invalid checkout.Config.SecretKey: is empty; set it to your Checkout.com secret key (sk_... or sk_sbox_...)
}

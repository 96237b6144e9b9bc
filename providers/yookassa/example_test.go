package yookassa_test

import (
	"fmt"

	"github.com/payonce/payonce/providers/yookassa"
)

func Example() {
	p, err := yookassa.New(yookassa.Config{ShopID: "123456", SecretKey: "test_example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Name(), p.Info().KeyTTL, p.Info().MaxKeyLength)
	fmt.Println(p)
	// Output:
	// yookassa 24h0m0s 64
	// yookassa.Provider{ShopID:[REDACTED] SecretKey:[REDACTED] BaseURL:https://api.yookassa.ru KeyTTL:24h0m0s ListLag:1m0s LookupMargin:10m0s}
}

func ExampleNew_error() {
	_, err := yookassa.New(yookassa.Config{ShopID: "123456"})
	fmt.Println(err)
	// Output:
	// payonce: invalid yookassa.Config.SecretKey: is empty; set it to your shop's secret key (live_... or test_...)
}

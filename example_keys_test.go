package payonce_test

import (
	"fmt"

	"github.com/payonce/payonce"
)

// The key of a charge for order 42 is derived from its identity alone: every
// process that charges order 42 through Stripe sends this same key.
func ExampleIdentity_Key() {
	id := payonce.Identity{
		Provider:   "stripe",
		Kind:       payonce.KindCharge,
		References: []string{"order-42"},
	}
	key, err := id.Key()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(key)

	id.References = []string{""}
	_, err = id.Key()
	fmt.Println(err)
	// Output:
	// 8d532230-f55c-5b12-99fd-a4b47f1f8331
	// payonce: invalid References[0]: is empty; it must be 1 to 256 bytes
}

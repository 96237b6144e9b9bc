package payonce_test

import (
	"context"
	"fmt"

	"github.com/payonce/payonce"
)

// A Reconciler running in the background of a service: it sends what was
// enqueued, and settles what calls left unknown, until the service stops it
// by cancelling its context; Run then returns nil. The hook here only
// shows what settled; a service reads the ledger's feed for what it must
// not miss (hooks are best-effort).
func ExampleReconciler_Run() {
	env := newExampleEnv("")
	defer env.Close()
	client, err := payonce.New(env.Config)
	if err != nil {
		panic(err)
	}
	settled := make(chan payonce.Result, 1)
	rec, err := payonce.NewReconciler(payonce.ReconcilerConfig{Store: env.Store, Clients: []*payonce.Client{client},
		Hooks: payonce.Hooks{
			OnSettled: func(_ context.Context, res payonce.Result) { settled <- res },
		}})
	if err != nil {
		panic(err)
	}
	defer rec.Close()

	ctx, stop := context.WithCancel(context.Background())
	op, err := client.PrepareCharge(ctx, payonce.ChargeParams{OrderID: "order-7", Amount: 500, Currency: "EUR",
		PaymentMethod: "pm_card_visa"})
	if err != nil {
		panic(err)
	}
	res, err := client.Enqueue(ctx, op) // recorded as pending; nothing sent by this call
	fmt.Println("enqueued:", res.Status, err)

	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }() // a pass at once, then every Interval (10 s)
	res = <-settled
	fmt.Println("settled:", res.Kind, res.Status, "attempts:", res.Attempts)

	stop() // on shutdown, after the service's own calls have drained
	fmt.Println("Run returned:", <-done)
	// Output:
	// enqueued: pending <nil>
	// settled: charge succeeded attempts: 1
	// Run returned: <nil>
}

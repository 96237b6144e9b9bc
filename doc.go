// Package payonce charges, captures, cancels and refunds through external
// payment providers so that money moves exactly once per operation: no
// double charge after a timeout, a retry, a restart, a deploy or a race
// between replicas, and no operation silently lost.
//
// The idempotency key of an operation is derived from its business identity
// (provider, kind, order id, refund number...), so every process sends the
// same key forever (Identity.Key). Every attempt is journaled in a ledger
// (ledger.Store: PostgreSQL in production, embedded SQLite by default)
// before it is sent. After a timeout or any "maybe sent" outcome the client
// asks the provider what happened before sending again, resends only with the
// same key and only while the provider still remembers it, and sends an
// operation whose key window has passed with the outcome unknown to manual
// review instead of ever posting it again.
//
// The smallest use:
//
//	store, _ := ledgersqlite.Open("payonce.db", ledgersqlite.Config{})
//	_ = store.Migrate(ctx)
//	psp, _ := stripe.New(stripe.Config{APIKey: os.Getenv("STRIPE_API_KEY")})
//	client, _ := payonce.New(payonce.Config{Provider: psp, Store: store})
//	res, err := client.Charge(ctx, payonce.ChargeParams{
//		OrderID: "order-42", Amount: 1999, Currency: "USD", PaymentMethod: "pm_card_visa",
//	})
//	switch {
//	case err == nil: // res.Status == payonce.ResultSucceeded
//	case errors.Is(err, payonce.ErrDeclined): // tell the customer
//	case errors.Is(err, payonce.ErrOutcomeUnknown): // "processing": reconciliation settles it
//	}
//
// docs/ARCHITECTURE.md holds the states, the decision table and the rules
// that keep money safe.
package payonce

// Package stripe is payonce's adapter for Stripe's v1 API: charges are
// PaymentIntents created and confirmed in one call, captures and cancels act
// on a PaymentIntent, refunds are Refunds of a PaymentIntent. It builds the
// form-encoded requests with the operation's Idempotency-Key, classifies
// Stripe's answers, and looks operations up by id, by a search on the
// payonce_op metadata it writes (every hit read again by id), or by listing
// a PaymentIntent's refunds, across every key generation of the operation.
// Every object it reads is checked to belong to the operation (operation
// id, amount, currency); one that does not is a contradiction, for review.
//
// It can be audited (payonce.AuditLister, Provider.ListObjects): the
// PaymentIntents, Refunds and Disputes Stripe created in a period are
// listed with GETs only, paced by Config.AuditRate; a dispute that took
// the charge's funds back (open or lost) shows its PaymentIntent reversed.
//
// The smallest use: build the adapter and hand it to a payonce client.
//
//	p, err := stripe.New(stripe.Config{APIKey: os.Getenv("STRIPE_API_KEY")})
//	if err != nil {
//		return err // names the Config field and how to fix it
//	}
//	client, err := payonce.New(payonce.Config{Provider: p, Store: store})
//
// The API key is sent only in the Authorization header. It never appears in
// errors, in the Outcome or LookupResult the adapter returns, or when a
// Config or Provider is printed or logged.
package stripe

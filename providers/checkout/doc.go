// Package checkout is payonce's adapter for Checkout.com's payments API:
// charges are payments from a stored source (src_...) or a token (tok_...),
// captured at once or later (capture false, then a capture or a void), and
// refunds are refund actions on a payment. It builds the JSON requests with
// the operation's Cko-Idempotency-Key, sends the operation id as the
// reference of every payment and action, classifies Checkout.com's answers,
// and looks operations up by payment id, by GET /payments?reference= or
// among the payment's actions. A list hit is read again by id before it
// counts, every object read (and every 2xx answer) is checked to belong to
// the request (reference and payonce_op, amount, currency), and the objects
// of every key generation are combined by adapterkit.Combine. Checkout.com
// documents no answer to a key reused with another request beyond "the same
// status and body as the original"; such a replay fails the belongs check
// and goes to review (key_mismatch).
//
// The audit (payonce.Client.Audit) checks each ledger operation of the
// period by its reference with Lookup (AuditInfo.ByLookup): Checkout.com
// lists no payments by date (see audit.go).
//
// The smallest use: build the adapter and hand it to a payonce client.
//
//	p, err := checkout.New(checkout.Config{
//		SecretKey: os.Getenv("CKO_SECRET_KEY"),
//		BaseURL:   checkout.SandboxBaseURL,
//	})
//	if err != nil {
//		return err // names the Config field and how to fix it
//	}
//	client, err := payonce.New(payonce.Config{Provider: p, Store: store})
//	res, err := client.Charge(ctx, payonce.ChargeParams{
//		OrderID: "order-42", Amount: 1999, Currency: "USD", PaymentMethod: "src_...",
//	})
//
// What makes Checkout.com different: it caches the answer under an
// idempotency key only when the first request returned 2xx. After a 4xx or
// 5xx, the same key is processed as a NEW payment, so a blind resend after a
// 5xx that came after the card was charged charges it twice. payonce never
// resends a request that may have been processed without asking first: the
// adapter classifies every 5xx, 429, timeout and unreadable answer as
// maybe_sent (key_in_use for a 409, or a 429 duplicate_request: the key's
// first request still runs), the client looks the payment up by its reference before
// anything is sent again, and a "not found" counts only once SettleLag has
// passed since the last attempt, so that an attempt still running at
// Checkout.com has finished and shown its payment. Captures, voids and
// refunds are answered 202 Accepted: they stay unknown until a lookup of the
// payment's actions finds them approved or declined (the Reconciler does
// it, or call again).
//
// The secret key is sent only in the Authorization header. It never appears
// in errors, in the Outcome or LookupResult the adapter returns, or when a
// Config or Provider is printed or logged.
package checkout

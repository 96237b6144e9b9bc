// Package cli is the payonce command-line tool: every command of
// cmd/payonce, testable in-process through Main.
//
// Commands:
//
//	payonce demo      charge and refund through a fake Stripe, YooKassa or Checkout.com with injected faults
//	payonce migrate   create or upgrade the ledger's schema
//	payonce charge    charge (or authorize) one order
//	payonce capture   capture an authorized charge
//	payonce cancel    cancel an authorized, uncaptured charge
//	payonce refund    refund an order (one refund per --refund-seq)
//	payonce reconcile settle what calls left unfinished
//	payonce ops       list and show operations
//	payonce review    list and resolve operations in manual review
//	payonce cleanup   delete finished operations past the retention
//
// The ledger is chosen with --ledger (or PAYONCE_LEDGER): a postgres:// or
// postgresql:// URL selects PostgreSQL (with --schema or PAYONCE_SCHEMA,
// default "public"); sqlite:PATH or a plain path selects SQLite; the default
// is sqlite:payonce.db. Provider credentials are read only from the
// environment, never from flags: STRIPE_API_KEY for --provider stripe,
// YOOKASSA_SHOP_ID and YOOKASSA_SECRET_KEY for --provider yookassa,
// CHECKOUT_SECRET_KEY for --provider checkout.
//
// Exit codes, the same for every command:
//
//	0  succeeded
//	1  any other error (a ledger write failed, the demo found money moved twice, ...)
//	2  usage or configuration error: a bad flag, amount or currency, an unknown
//	   command, provider or status, an unparseable ledger URL, an unreachable
//	   database, a missing credential variable, an operation id that does not exist
//	3  failed: the provider declined or refused the operation (final)
//	4  outcome unknown: the request may have reached the provider; reconciliation settles it
//	5  in progress: another process holds the operation right now
//	6  manual review: an operator must decide; automation sends nothing more
//	7  provider unavailable: nothing was sent; the operation is pending and is sent later
package cli

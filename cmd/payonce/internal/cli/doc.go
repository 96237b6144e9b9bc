// Package cli is the payonce command-line tool: every command of
// cmd/payonce, testable in-process through Main.
//
// Commands:
//
//	payonce demo      charge and refund through a fake Stripe, YooKassa, Checkout.com or Adyen with injected
//	                  faults, its webhooks received on 127.0.0.1 (late, duplicated, reordered; --webhooks=false: off)
//	payonce fake      serve a fake provider (the demo's fakes, with faults and webhooks) on a loopback
//	                  address in its own process, printing one JSON ready line with its URL and fake
//	                  test credentials; GET /__truth tells what it really did
//	payonce migrate   create or upgrade the ledger's schema
//	payonce charge    charge (or authorize) one order
//	payonce capture   capture an authorized charge
//	payonce cancel    cancel an authorized, uncaptured charge
//	payonce refund    refund an order (one refund per --refund-seq)
//	payonce reconcile settle what calls left unfinished
//	payonce ops       list and show operations
//	payonce review    list and resolve operations in manual review
//	payonce console   serve the operator console in a browser (login from PAYONCE_CONSOLE_USERS;
//	                  --console on demo keeps the demo's ledger open in it)
//	payonce cleanup   delete finished operations past the retention
//	payonce audit     compare the ledger with the provider's own records for a period (read-only on both
//	                  sides); audit findings lists the differences recorded, audit ack acknowledges one
//	payonce stats     count operations by provider, kind and status; the oldest open ones; review reasons
//	payonce webhooks  receive providers' webhooks (webhooks serve) and list recorded events
//
// The ledger is chosen with --ledger (or PAYONCE_LEDGER): a postgres:// or
// postgresql:// URL selects PostgreSQL (with --schema or PAYONCE_SCHEMA,
// default "public"); sqlite:PATH or a plain path selects SQLite; the default
// is sqlite:payonce.db. Provider credentials are read only from the
// environment, never from flags: STRIPE_API_KEY for --provider stripe,
// YOOKASSA_SHOP_ID and YOOKASSA_SECRET_KEY for --provider yookassa,
// CHECKOUT_SECRET_KEY for --provider checkout, PAYPAL_CLIENT_ID and
// PAYPAL_CLIENT_SECRET (webhooks: PAYPAL_WEBHOOK_ID) for --provider paypal. "review resolve" needs them
// only for --outcome resend, the one outcome that asks the provider;
// succeeded and failed are recorded in the ledger alone.
//
// Reconcile modes: --once (one pass), --until-idle (passes until one
// claims nothing), --until-settled (passes, sleeping until the earliest next
// check, until nothing of the provider is pending, in flight or unknown;
// --settle-timeout bounds it, exit 9), or by default a loop every --interval.
// --until-idle and --until-settled show progress on stderr: redrawn in place
// on a terminal (without escape sequences when NO_COLOR is set), one plain
// line per pass otherwise or with TERM=dumb.
//
// Observability: the long-running commands, the reconcile loop and
// "webhooks serve", take --metrics-addr HOST:PORT (e.g. 127.0.0.1:9464; off by
// default) and serve the library's OpenTelemetry metrics there as Prometheus
// GET /metrics: an OpenTelemetry SDK MeterProvider exporting to a registry of
// its own (not Prometheus's global one), shut down with the command. The
// ledger gauges (payonce.operations.open, .oldest_age, .in_review) count the
// same open operations as "payonce stats". The dashboard in docs/grafana
// queries only metrics payonce exports (a test checks it against a scrape).
//
// Exit codes, the same for every command:
//
//	0  succeeded
//	1  any other error (a ledger write failed, the demo found money moved twice, ...)
//	2  usage or configuration error: a bad flag, amount or currency, an unknown
//	   command, provider or status, an unparseable ledger URL, wrong database
//	   credentials, a missing credential variable, an operation id that does not exist
//	3  failed: the provider declined or refused the operation (final)
//	4  outcome unknown: the request may have reached the provider; reconciliation settles it
//	5  in progress: another process holds the operation right now
//	6  manual review: an operator must decide; automation sends nothing more
//	7  provider unavailable: nothing was sent; the operation is pending and is sent later
//	8  ledger unavailable: the ledger's database could not be reached or went away
//	   before anything was sent; run the command again later. A call whose request
//	   may already have left when the ledger went away exits 4, never 8
//	9  not settled: reconcile --until-settled stopped (--settle-timeout passed, or a
//	   signal) while operations were still pending, in flight or unknown
//	10 charge not settled: a capture, cancel or refund named an order whose charge is
//	   still pending, in flight, unknown or in manual review (payonce.ErrNotSettled);
//	   nothing was sent or recorded. Settle the charge (reconcile, or an operator's
//	   review resolve), then run the same command again
//	11 the audit found differences: "payonce audit" printed them and, unless --dry-run,
//	   recorded them as findings ("payonce audit findings", "payonce audit ack")
package cli

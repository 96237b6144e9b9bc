// Package crashsuite is payonce's crash-and-fault suite: it checks the
// library's claim, "money moves once, whatever fails", with real processes,
// real SIGKILLs and a real database restart. It is a test package; its only
// non-test file is this one.
//
// # What runs
//
// TestCrashSuite (the driver) starts:
//
//   - a private PostgreSQL cluster (initdb into a temporary directory owned
//     by user postgres, pg_ctl on a free 127.0.0.1 port), never the
//     machine's shared cluster, since it is restarted mid-run;
//   - a fake Stripe (mocks.NewStripeHandler) in its own process on
//     127.0.0.1, on the real clock, failing about 20 % of the requests with
//     every fault the fake knows (answers lost after the charge, hangs past
//     the client's timeout, 502 before and after processing, 429, slow
//     answers, stored and processed 500s, lookups included), with a lagging
//     search and a 20 s key TTL so that key windows pass during the run,
//     plus GET /__truth returning what it really did (mocks.Truth) as JSON;
//     it delivers every event as a signed webhook (StripeOptions.Webhooks:
//     100 ms late, 5 % twice, 5 % out of order, 5 % of the attempts failing
//     on the way, 40 attempts with backoff up to 1.6 s, so that a delivery
//     outlasts every receiver being down for seconds), and GET /__observed
//     returns each delivery attempt with its answer, the sender's counts
//     and the POSTs it received per Idempotency-Key;
//   - a webhook front in the driver (webhook_test.go): the one URL the
//     fake delivers to. It forwards each delivery to the receiver of one
//     live worker and answers 502 when none is up or the receiver gave no
//     answer (the fake delivers again); for 2 % of the deliveries it also
//     sends a forged copy (another event id under the original signature),
//     which must be refused;
//   - several worker processes, each a payonce.Client (300 ms attempt
//     timeout, the adapter's key TTL equal to the fake's, a 2 s safety
//     margin, a 1 s clock-skew allowance) and a payonce.Reconciler on the PostgreSQL ledger. Orders
//     arrive over a while, as traffic would; a worker charges each order of
//     its share and, for some, refunds it once the charge succeeded
//     (RefundSeq 1, partial amounts, some deliberately above the charge so
//     that the provider refuses them); then it reconciles until stopped.
//     Each worker also serves client.WebhookHandler on its own 127.0.0.1
//     port: the receivers die and come back with their workers, answer 503
//     while PostgreSQL is down, and print each event they record (new or
//     duplicate) after the commit and before the reply.
//
// The fake and the workers are the test binary itself, re-executed with
// PAYONCE_CRASHSUITE_MODE=fake or worker (see TestMain). The driver kills
// random workers with SIGKILL at random moments and restarts them (a
// restarted worker goes through the same work list again: calling again
// with the same identity is safe), takes PostgreSQL down once for a few
// seconds while the workers are calling (their calls fail and are made
// again; operations stay pending or unknown; nobody exits; webhook
// deliveries get 503 and are delivered again). Every third kill (the 2nd,
// the 5th, ...) falls between a receiver's commit of an event and its reply:
// the front holds the receiver's 2xx, the driver kills that worker, and the
// front drops the answer, so the fake delivers the event again. The driver
// waits until every worker finished its list, until no operation is
// pending, in flight or unknown (those whose key window passed go to manual
// review by the decision table) and until every webhook got a 2xx, lets the
// reconcilers' read-only lookups settle reviews the provider can answer,
// stops everything and checks, against the fake's truth and the ledger:
//
//   - no reference charged twice (Truth.Duplicates is empty), at most one
//     PaymentIntent and one refund per operation, and no key reused with
//     other parameters;
//   - no refund beyond its charge, per PaymentIntent;
//   - every operation succeeded, failed or in manual review;
//   - the ledger agrees with the provider: a succeeded charge names an
//     authorized PaymentIntent carrying its operation id and amount, a failed
//     one has no money moved (and was a declined card), a succeeded refund
//     names its refund object of the right amount and payment, a refund above
//     the charge never succeeds; and every object the provider holds belongs
//     to an operation that succeeded with it (or is in review);
//   - review only once the key window has passed with the outcome unknown
//     (review time >= key expiry minus the safety margin); reviews for a
//     duplicated object or a key mismatch are reported separately;
//   - every attempt that may have reached the provider started inside its
//     key window, margin to spare, with the operation's key; and every
//     object the provider created for an operation was created with that key
//     after the window opened and before the key's TTL ran out;
//   - no operation made more than 12 attempts (maxAttemptsPerOp): a resend
//     loop that does not stop, or resends without growing intervals, break
//     it;
//   - webhooks, received exactly once (checkWebhooks, reading the inbox
//     from the ledger's tables and the audit events of every operation):
//     every event id is in the inbox once; every event the fake counts as
//     delivered (2xx) is in the inbox, and every event it emitted was
//     delivered (none given up); receivers recorded each event as new at
//     most once, and each (event, operation) has one audit entry matching
//     an inbox outcome; no event moved a settled operation (from succeeded
//     or failed to anything else) or contradicted it (nothing in the run
//     reverses an outcome); an operation a webhook settled is still in that
//     status and started no attempt after it; every event whose reply was
//     lost in a kill after its commit was delivered again and acknowledged
//     as a duplicate; no forged delivery was acknowledged or recorded, and
//     no genuine one refused; and the POSTs the fake received per key stay
//     within two per journaled attempt (net/http may transmit a keyed
//     request once more by itself), every one with an operation's key: an
//     event never makes anything send;
//   - the audit of the fake (auditFake, audit_test.go): before the fake
//     stops, the driver builds a payonce.Client as the workers do (the
//     Stripe adapter on the fake's URL, the run's PostgreSQL ledger) and
//     runs Client.Audit over the run's period (from a minute before its
//     start to a minute after the end), recording findings in the ledger;
//     every difference the audit finds (unknown_to_ledger, status_differs,
//     duplicated, contradicted, missing_at_provider) is a violation. The
//     fake served only the workers, so exactly-once means none: a review
//     whose object failed or never existed is no difference, and one whose
//     object succeeded (status_differs) is settled first by the
//     reconcilers' lookups. The audit's reads outlast the fake's GET
//     faults with a longer per-request timeout and more read retries than
//     the workers' calls; an audit that fails to list compared nothing and
//     fails the run.
//
// It ends with a one-line summary (t.Log and stdout): operations per kind
// and status, attempts per outcome, the most attempts one operation made
// (max_attempts, naming the operation, with the bound) and how many
// operations made 0, 1, 2, 3-5 and 6+ attempts (attempts_per_op), kills, restarts, PostgreSQL restarts,
// faults injected per kind, duplicates, refunds over charge, reviews per
// reason, calls made again during the outage, the webhooks (events queued,
// the sender's duplicates, attempts, acknowledged, failed, given up, 5xx
// answers and those during the outage, attempts with no answer; events the
// receivers recorded, duplicates they acknowledged, forged deliveries sent
// and rejected; dispositions; operations settled by webhook and by a call
// or lookup; the most POSTs for one operation; receiver kills, and those
// after a commit), the audit (objects read, operations, unattributed objects,
// differences per class) and durations.
//
// TestCrashBetweenJournalAndSend, TestCrashBetweenSendAndRecord and
// TestCrashConcurrentProcesses (crash_test.go) kill one charging process
// (the test binary as a "charge" child, charger_test.go) at a chosen moment,
// on SQLite and on the shared test PostgreSQL, and play the restarted
// service. Every child process is run through internal/childproc.
//
// TestRegressionTransportResendMasksProcessedAttempt is a defect the suite
// found, reproduced in-process and deterministically: an attempt the
// provider processed is recorded not_sent when net/http's own resend of the
// POST (keep-alive connections, Idempotency-Key header) meets a 429, and the
// order is charged twice once the key has expired. It fails until the
// library is fixed; the suite then stops reporting "object created before
// its key window opened".
//
// # Running it
//
// The CI-sized run (about 1,500 operations and 2,000 webhooks, 4 workers,
// 8 kills of which 3 after a commit, 1 PostgreSQL restart; a couple of
// minutes on 2 cores under -race) is part
// of the normal test run:
//
//	go test -race -count=1 ./internal/crashsuite/
//
// The long run does more than 10,000 operations and 30 kills:
//
//	PAYONCE_CRASH_LONG=1 go test -count=1 -timeout 30m -v ./internal/crashsuite/
//	go test -count=1 -timeout 30m -v ./internal/crashsuite/ -long
//
// With -short the run is smaller (about 400 operations, 4 kills). The seed
// of the work list, the kill schedule, the fake's faults and its webhook
// deliveries is logged;
// PAYONCE_CRASH_SEED=<seed> repeats a schedule (timing still varies).
//
// TestCrashSuite runs against the fake Stripe unless -provider (or
// PAYONCE_CRASH_PROVIDER) names another provider (provider_test.go):
//
//	go test -race -count=1 -run TestCrashSuite ./internal/crashsuite/ -provider paypal
//
// runs the same suite against the fake PayPal (mocks.NewPayPalHandler) and
// the PayPal adapter: both key windows at the suite's 20 s, webhooks
// verified with PayPal's verify-webhook-signature call (the fake's test
// root is no system root); its final audit does not run (PayPal's
// transaction search lags up to 3 hours and the adapter refuses a period
// it has not published whole). CI runs the suite on Stripe only; the crash
// tests of one charging process run on Stripe.
// PAYONCE_CRASH_LOGDIR=<dir> saves every child's output there.
//
// The suite needs the PostgreSQL server binaries
// (/usr/lib/postgresql/<version>/bin), a system user postgres and root (to
// run them with runuser -u postgres). Without them it skips saying so, or
// fails when PAYONCE_REQUIRE_POSTGRES=1. Every child process and the private
// cluster are stopped when the test ends.
package crashsuite

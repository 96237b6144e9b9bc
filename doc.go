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
//
// # Lifecycle
//
// Build one Client per provider and one Reconciler at start-up, share them
// for the life of the process, and run Reconciler.Run in a goroutine under
// a context the service cancels when it stops. Shut down in this order:
//
//  1. Stop accepting requests (http.Server.Shutdown, or stop consuming the
//     queue), so that no new call starts.
//  2. Drain the calls in flight: wait for the handlers that are inside
//     Charge, Capture, Cancel or Refund to return, bounded by your
//     deadline. A call whose context is cancelled mid-attempt records the
//     attempt "maybe sent" and background work looks it up: safe, but
//     slower to settle than a call allowed to finish.
//  3. Stop the reconciler: cancel Run's context and wait for Run to
//     return. It starts nothing more, lets the operations it is settling
//     end as their context allows, and gives up the leases of those it had
//     claimed but not started (bounded by 5 s), so that another replica
//     takes them at once rather than when their leases end. Run returns nil
//     for this normal stop, whether the context was cancelled or its
//     deadline passed.
//  4. Close the Reconciler (it stops reporting the ledger gauges), then the
//     ledger.
//
// A failing pass (the ledger down) is logged at Warn and retried after
// ReconcilerConfig.Interval; Run never returns it.
//
// # Hooks
//
// Config.Hooks and ReconcilerConfig.Hooks are in-process callbacks:
// OnSettled when an operation reaches succeeded or failed, OnReview when it
// enters manual_review (with the reason), and, on the Reconciler, OnPass
// with each pass's report. They are called after the ledger committed the
// change and the lease was given up, on the goroutine that recorded it, for
// at most Hooks.Timeout (1 s): the call or worker then goes on and the
// hook's context is cancelled. A panic in a hook is recovered and logged.
// Hooks are best-effort (a crash or a deploy between the commit and the
// hook loses the notification, and a webhook that settles an operation
// fires none): use them for caches, metrics and nudges. Work that must see
// every settled operation reads the ledger's durable feed instead.
//
// # Logs
//
// Config.Logger and ReconcilerConfig.Logger (log/slog) get the records
// below; nothing else. Warn means a person should look, or the design is
// recovering from a fault (a failed lookup, ledger write or pass); Info is
// only a reconcile pass that changed something, or a scheduled audit that
// found nothing; everything routine is Debug. Calls and reconciler passes log nothing at Error for a fault the
// design expects: Error is for bugs. Credentials, headers and request
// bodies are never logged. operation_id is semconv.LogKeyOperation.
//
//	level  message                                                     keys
//	Error  payonce: hook panicked                                      hook, operation_id, panic, stack
//	Warn   payonce: operation sent to manual review                    operation_id, kind, from, reason, reason_code
//	Warn   payonce: webhook                                            provider, event_id, type, operation_id, disposition, from, to
//	       (an event that needs a person: disposition contradiction or duplicate, or one that sent its operation to review)
//	Warn   payonce: webhook verified but unreadable; recorded for an   provider, event_id, type, reason
//	       operator (payonce webhooks list --disposition unreadable)
//	Warn   payonce: webhook rejected                                   provider, status, err (and event_id, type for an event too old)
//	Warn   payonce: webhook not recorded; the provider will deliver    provider, event_id, type, err
//	       it again
//	Warn   payonce: status lookup failed                               operation_id, error (Debug when the caller's context ended)
//	Warn   payonce: recording an attempt outcome failed                operation_id, attempt, class, error
//	Warn   payonce: circuit breaker state changed                      provider, from, to
//	Warn   payonce: reconcile pass failed; retrying after the interval error, interval
//	Warn   payonce: giving up a claimed operation's lease failed; it   operation_id, lease_until, error
//	       is due again when the lease ends
//	Warn   payonce: hook still running after its timeout; no longer    hook, operation_id, timeout
//	       waiting for it
//	Warn   payonce: scheduled audit                                    provider, from, to, objects, operations, differences,
//	       (ReconcilerConfig.Audit; an audit that found differences)   unattributed
//	Warn   payonce: scheduled audit failed                             provider, from, to, error
//	Info   payonce: scheduled audit                                    the same keys (an audit that found no difference)
//	Info   payonce: reconcile pass                                     claimed, settled, changed, skipped, released, errors
//	       (a pass in which an operation changed status, or that met errors)
//	Debug  payonce: reconcile pass                                     the same keys (a pass that claimed operations and changed
//	       nothing; a pass that claimed nothing logs nothing)
//	Debug  payonce: operation state changed                            operation_id, kind, from, to
//	Debug  payonce: attempt recorded                                   operation_id, kind, attempt, class, status
//	Debug  payonce: retrying transmission                              operation_id, method, path, retry
//	Debug  payonce: webhook                                            provider, event_id, type, operation_id, disposition, from, to
//	       (every other disposition: settled, confirmed, stale, noted, nudged, unmatched, ambiguous,
//	       tombstoned, other_object; a Stripe payment_intent.succeeded's cancel target is unmatched)
//	Debug  payonce: webhook duplicate                                  provider, event_id, type
//	Debug  payonce: gave up the leases of claimed operations not       released, claimed_not_started
//	       started
//
// # Observability
//
// payonce is instrumented with the OpenTelemetry API (never the SDK):
// Config.MeterProvider and Config.TracerProvider, and the same fields of
// ReconcilerConfig, default to otel.GetMeterProvider() and
// otel.GetTracerProvider(); the instrumentation scope is semconv.ScopeName,
// the import path. With no provider registered (or a no-op one), payonce
// records nothing and starts no spans.
//
// Metrics (semconv.MetricNames lists them; attributes are enums only, never
// ids, keys, references or amounts):
//
//	payonce.call.duration              histogram s       provider, kind, result (the call's status, invalid, error)
//	payonce.attempts                   counter           provider, kind, outcome (success, refused, not_sent, maybe_sent, key_in_use, key_mismatch)
//	payonce.lookups                    counter           provider, kind, lookup.answer, decision (the decision table's action)
//	payonce.transitions                counter           provider, kind, from, to
//	payonce.reviews                    counter           provider, kind, reason (the review code, ledger.ReviewCode)
//	payonce.resend.key_window_remaining histogram s      provider, kind: key window left, less the safety margin, at each resend
//	payonce.breaker.state_changes      counter           provider, breaker.state (the state entered)
//	payonce.webhooks                   counter           provider, result (semconv.WebhookResult*), webhook.disposition
//	payonce.reconcile.pass.duration    histogram s       provider, result
//	payonce.reconcile.operations       counter           provider, what (claimed, settled, skipped, failed)
//	payonce.operations.open            gauge             provider, kind, status
//	payonce.operations.oldest_age      gauge s           provider, kind, status
//	payonce.operations.in_review       gauge             provider, kind, reason (the review code)
//	payonce.audit.runs                 counter           provider, result (consistent, differs, error): Client.Audit
//	payonce.audit.differences          counter           provider, audit.class (ledger.FindingClass)
//
// Attribute keys (package semconv) carry the payonce. prefix; failures
// carry error.type. Per-operation metrics come from the Client that acts
// (the Reconciler's work included); the Reconciler reports its passes. The
// ledger gauges read Store.Stats when collected, at most once per
// StatsInterval (15 s), and are reported by each Reconciler (StatsInterval
// -1: not) or by RegisterLedgerMetrics, never by a Client, so that clients
// sharing a ledger do not repeat them. Replicas report the same ledger, so
// aggregate those gauges with max.
//
// Spans: one per call ("payonce.charge", "payonce.capture",
// "payonce.cancel", "payonce.refund"), with a child per attempt
// ("payonce.attempt": attempt number, outcome) and per lookup
// ("payonce.lookup": answer, decision), status transitions as events, and
// one per reconciler pass and provider ("payonce.reconcile"). A decline, an
// unknown outcome or a review is a result, not an error; a failed attempt,
// a failed lookup, invalid arguments and ledger failures set status Error.
// The attempt's span is in the context the adapter builds its request
// with, so otelhttp on Config.HTTPClient's transport adds the HTTP span and
// sends the traceparent header to the provider; otelpgx on the ledger's
// pool adds the SQL spans. payonce records no HTTP or SQL telemetry of its
// own.
package payonce

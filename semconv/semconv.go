// Package semconv is payonce's telemetry vocabulary: the instrumentation
// scope, the names of the metrics payonce records, their attribute keys and
// values, and the log key that carries an operation's id. Dashboards,
// alerts and tests query by these names; they are stable within a major
// version.
//
// Attributes are low-cardinality enums only: provider, kind, outcome,
// status, reason codes. Operation ids, keys, references, amounts and
// anything a provider sent back are never attributes: they would make a
// series per payment, and some of them identify a customer's payment.
//
// The package holds names only; it records nothing and imports nothing of
// payonce.
package semconv

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of payonce's meters and tracers:
// the import path of package payonce.
const ScopeName = "github.com/payonce/payonce"

// Metric names. MetricNames lists them.
const (
	// MetricCallDuration is a histogram (seconds) of a Charge, Capture,
	// Cancel or Refund call, by the status it reported.
	MetricCallDuration = "payonce.call.duration"
	// MetricAttempts counts attempts sent (or refused before sending), by
	// outcome class.
	MetricAttempts = "payonce.attempts"
	// MetricLookups counts status lookups, by what the provider answered
	// and what was decided.
	MetricLookups = "payonce.lookups"
	// MetricTransitions counts status changes of operations recorded in
	// the ledger.
	MetricTransitions = "payonce.transitions"
	// MetricReviews counts operations sent to manual review, by reason code.
	MetricReviews = "payonce.reviews"
	// MetricResendWindowRemaining is a histogram (seconds) of the key
	// window left, less the safety margin, at each resend.
	MetricResendWindowRemaining = "payonce.resend.key_window_remaining"
	// MetricBreakerStateChanges counts circuit breaker state changes, by
	// the state entered.
	MetricBreakerStateChanges = "payonce.breaker.state_changes"
	// MetricReconcilePassDuration is a histogram (seconds) of one
	// reconciler pass over one provider's due operations.
	MetricReconcilePassDuration = "payonce.reconcile.pass.duration"
	// MetricReconcileOperations counts operations a reconciler claimed,
	// settled, skipped or failed on.
	MetricReconcileOperations = "payonce.reconcile.operations"
	// MetricWebhooks counts webhook events and rejected deliveries, by
	// result (the WebhookResult* values) and disposition.
	MetricWebhooks = "payonce.webhooks"
	// MetricOperationsOpen is a gauge of the ledger's unfinished
	// operations, by provider, kind and status.
	MetricOperationsOpen = "payonce.operations.open"
	// MetricOperationsOldestAge is a gauge (seconds) of the age of the
	// oldest unfinished operation, by provider, kind and status.
	MetricOperationsOldestAge = "payonce.operations.oldest_age"
	// MetricOperationsInReview is a gauge of the operations in manual
	// review, by provider, kind and reason code.
	MetricOperationsInReview = "payonce.operations.in_review"
	// MetricFeedConsumerLag is a gauge (seconds) of a settlement-feed
	// consumer's lag: now minus the time of the oldest entry it has yet to
	// apply, 0 when caught up; by consumer name.
	MetricFeedConsumerLag = "payonce.feed.consumer.lag"
	// MetricAuditRuns counts audits (Client.Audit), by provider and result
	// (AuditResult* values).
	MetricAuditRuns = "payonce.audit.runs"
	// MetricAuditDifferences counts the differences audits found, by
	// provider and class (ledger.FindingClass). The same difference found
	// by every audit of an overlapping period is counted each time.
	MetricAuditDifferences = "payonce.audit.differences"
)

// MetricNames returns the name of every metric payonce records, in a
// stable order: what a dashboard or alert may query. The ledger gauges
// (payonce.operations.*) are reported only where payonce.RegisterLedgerMetrics
// was called (a payonce.Reconciler does it unless its StatsInterval is -1);
// payonce.feed.consumer.lag only by a feed consumer given a MeterProvider
// (ledger.ConsumerOptions).
// The returned slice is a copy.
func MetricNames() []string {
	return []string{
		MetricCallDuration, MetricAttempts, MetricLookups, MetricTransitions, MetricReviews,
		MetricResendWindowRemaining, MetricBreakerStateChanges, MetricReconcilePassDuration,
		MetricReconcileOperations, MetricWebhooks, MetricOperationsOpen, MetricOperationsOldestAge,
		MetricOperationsInReview, MetricFeedConsumerLag, MetricAuditRuns, MetricAuditDifferences,
	}
}

// Attribute keys. OpenTelemetry asks a library's own attributes to carry
// its namespace; error.type is the semantic conventions' attribute for the
// class of a failure.
const (
	// AttrProvider is the provider's name (Provider.Name).
	AttrProvider = attribute.Key("payonce.provider")
	// AttrKind is the operation's kind: charge, capture, cancel, refund.
	AttrKind = attribute.Key("payonce.kind")
	// AttrResult is a call's or pass's result, or a webhook's result (the
	// WebhookResult* values).
	AttrResult = attribute.Key("payonce.result")
	// AttrOutcome is an attempt's outcome class (ledger.OutcomeClass).
	AttrOutcome = attribute.Key("payonce.outcome")
	// AttrAnswer is what a status lookup answered.
	AttrAnswer = attribute.Key("payonce.lookup.answer")
	// AttrDecision is what the decision table made of a lookup's answer.
	AttrDecision = attribute.Key("payonce.decision")
	// AttrFrom is the status a transition left.
	AttrFrom = attribute.Key("payonce.from")
	// AttrTo is the status a transition entered.
	AttrTo = attribute.Key("payonce.to")
	// AttrStatus is an operation's status (ledger.Status).
	AttrStatus = attribute.Key("payonce.status")
	// AttrReason is a review's code (ledger.ReviewCode), never its text.
	AttrReason = attribute.Key("payonce.reason")
	// AttrState is the circuit breaker state entered.
	AttrState = attribute.Key("payonce.breaker.state")
	// AttrWhat is what a reconciler did with an operation: claimed,
	// settled, skipped, failed.
	AttrWhat = attribute.Key("payonce.what")
	// AttrDisposition is what a webhook event did to its first target
	// (ledger.WebhookReport).
	AttrDisposition = attribute.Key("payonce.webhook.disposition")
	// AttrAttempt is an attempt's number, on its span.
	AttrAttempt = attribute.Key("payonce.attempt")
	// AttrReplayed reports, on an attempt's span, that the provider
	// replayed a stored answer for the key.
	AttrReplayed = attribute.Key("payonce.replayed")
	// AttrConsumer is a settlement-feed consumer's name, chosen by the
	// service (a handful per ledger).
	AttrConsumer = attribute.Key("payonce.feed.consumer")
	// AttrClass is the class of an audit's difference (ledger.FindingClass).
	AttrClass = attribute.Key("payonce.audit.class")
	// AttrErrorType is the class of a failure (OpenTelemetry's error.type).
	AttrErrorType = attribute.Key("error.type")
)

// Audit results: the value of AttrResult on payonce.audit.runs.
const (
	// AuditResultConsistent: the audit completed and found no difference.
	AuditResultConsistent = "consistent"
	// AuditResultDiffers: the audit completed and found differences.
	AuditResultDiffers = "differs"
	// AuditResultError: the audit stopped on an error (its report is partial).
	AuditResultError = "error"
)

// Webhook results: the value of AttrResult on payonce.webhooks.
const (
	// WebhookResultRecorded: an event verified, recorded and applied.
	WebhookResultRecorded = "recorded"
	// WebhookResultRecordedUnreadable: an event that verified but could not
	// be read (payonce.WebhookEvent.Unreadable), recorded and acknowledged without
	// being applied. An operator must read it in the provider's dashboard:
	// alert on any.
	WebhookResultRecordedUnreadable = "recorded_unreadable"
	// WebhookResultDuplicate: an event already recorded; nothing changed.
	WebhookResultDuplicate = "duplicate"
	// WebhookResultUnavailable: the ledger could not record the event, or
	// the adapter could not ask the provider what it needed to verify or
	// read it (503); the delivery is refused, so that the provider
	// delivers it again.
	WebhookResultUnavailable = "unavailable"
	// WebhookResultUnauthorized: the delivery's credentials or signature
	// did not verify (401).
	WebhookResultUnauthorized = "rejected_credentials"
	// WebhookResultForbidden: the delivery was refused with 403 (e.g. a
	// source address the provider's adapter does not allow).
	WebhookResultForbidden = "rejected_forbidden"
	// WebhookResultInvalid: the delivery was refused as not a valid event
	// (any refusal other than 401 and 403).
	WebhookResultInvalid = "rejected_invalid"
	// WebhookResultTooLarge: the body exceeded payonce.MaxWebhookBytes.
	WebhookResultTooLarge = "rejected_too_large"
	// WebhookResultUnreadable: the request's body could not be read (the
	// connection failed); nothing was verified or recorded.
	WebhookResultUnreadable = "rejected_unreadable"
	// WebhookResultTimeout: the body did not arrive within
	// payonce.WebhookOptions.Timeout (408).
	WebhookResultTimeout = "rejected_timeout"
	// WebhookResultBusy: every handling slot stayed taken until the
	// request ended; answered 503 with Retry-After, so that the provider
	// delivers it again.
	WebhookResultBusy = "busy"
)

// LogKeyOperation is the log attribute that carries an operation's id in
// every record about one operation (state changes, reviews, retries), so
// that one grep follows a payment through the logs.
const LogKeyOperation = "operation_id"

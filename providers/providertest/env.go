package providertest

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/mocks"
)

// Options are what the suite asks of one environment. The environment
// applies every field to its fake and, where the field says so, to its
// adapter; the suite fills them all in, so a zero value is never meant as
// "the provider's default".
type Options struct {
	// Clock is shared by the fake, the adapter and the client: the fake's
	// Clock, the adapter's Now. Key windows, lags and leases move with it.
	Clock *mocks.ManualClock
	// KeyTTL is how long the provider remembers an idempotency key: the
	// fake's KeyTTL and the adapter's KeyTTL.
	KeyTTL time.Duration
	// LookupLag is the lag the adapter declares on lookups whose "not
	// found" may be premature (Stripe: Config.SearchLag; YooKassa:
	// Config.ListLag; Checkout.com: Config.SettleLag).
	LookupLag time.Duration
	// FakeLag is how far behind the fake's own search really is (the Stripe
	// fake's SearchLag). Zero except in the LookupLag scenario; a fake
	// without such a lag ignores it and leaves Env.FakeLag false.
	FakeLag time.Duration
	// Seed, FaultRates, FaultGETs, HangFor, SlowFor and RetryAfter are the
	// fake's options of the same names.
	Seed       int64
	FaultRates map[mocks.FaultKind]float64
	FaultGETs  bool
	HangFor    time.Duration
	SlowFor    time.Duration
	RetryAfter time.Duration

	// WebhookReceiver is the URL of the receiver Run starts for every
	// subtest: the client's WebhookHandler on a loopback httptest server.
	// Empty outside Run (e.g. an adapter's own end-to-end tests).
	WebhookReceiver string
	// Webhooks is how the fake delivers webhooks in this subtest, to be
	// passed to the fake's options (its Webhooks field) with the
	// provider's credentials added: Secret, Username and Password or
	// Authorization, the values the environment configures its adapter to
	// verify, so that the suite never needs to know a provider's secret
	// format. The webhook scenarios set URL (to WebhookReceiver) and the
	// faults of delivery; the other scenarios leave URL empty, so that
	// their outcomes come from the adapter's calls and lookups alone,
	// unless Env.WebhookOnly (use WebhookDelivery for both cases).
	Webhooks mocks.WebhookDelivery
}

// WebhookDelivery is o.Webhooks for a provider whose fake must deliver in
// every scenario (webhookOnly: Env.WebhookOnly) pointed at the receiver
// when the scenario did not ask for webhooks itself, and o.Webhooks
// otherwise. The caller adds the credentials.
func (o Options) WebhookDelivery(webhookOnly bool) mocks.WebhookDelivery {
	d := o.Webhooks
	if d.URL == "" && webhookOnly {
		d.URL = o.WebhookReceiver
	}
	return d
}

// Fake is what the suite needs of a fake provider. *mocks.Stripe,
// *mocks.YooKassa and *mocks.Checkout satisfy it.
type Fake interface {
	// Script queues faults for the requests that match m.
	Script(m mocks.Match, faults ...mocks.FaultKind)
	// ClearScripts drops the scripted faults not yet consumed.
	ClearScripts()
	// Truth reports what the fake really did.
	Truth() mocks.Truth
	// Release ends every hang and slow delay, current and future.
	Release()
	// FlushWebhooks waits until every webhook queued so far was delivered
	// or given up on; WebhookStats counts what the sender did.
	FlushWebhooks(ctx context.Context) error
	WebhookStats() mocks.WebhookStats
}

// Delivery is one webhook delivery as the receiver got it: a template for
// a replay and for a forgery.
type Delivery struct {
	Body   []byte
	Header http.Header
	// RemoteAddr is the connection's address, "ip:port".
	RemoteAddr string
}

// clone returns a copy of d that can be changed without changing d.
func (d Delivery) clone() Delivery {
	return Delivery{Body: append([]byte(nil), d.Body...), Header: d.Header.Clone(), RemoteAddr: d.RemoteAddr}
}

// Forgery is a delivery the adapter must refuse, made from a genuine one.
type Forgery struct {
	// Name describes it, e.g. "signed with another secret".
	Name string
	// Status is what the client's WebhookHandler must answer: 400 for a
	// signature that does not verify, 401 for wrong credentials, 403 for
	// a source the provider does not send from.
	Status int
	// Forge changes a copy of a genuine delivery (body, headers, source).
	Forge func(d *Delivery)
}

// Reversal is how a fake undoes, later, an operation it reported as
// succeeded, with the event the provider sends for it.
type Reversal struct {
	// Kind is the kind of operation it undoes: payonce.KindCapture or
	// payonce.KindRefund.
	Kind payonce.Kind
	// Reverse undoes the operation whose ProviderRef is ref (Stripe
	// FailRefund, Checkout.com DeclineCapture, Adyen FailCapture and
	// FailRefund); the fake emits the event.
	Reverse func(ref string) error
	// EventType is the type of the event that says so (refund.failed,
	// payment_capture_declined, ...); the review reason names it.
	EventType string
}

// StoredErrors says what a provider keeps under an idempotency key after a
// 5xx, which decides what a resend with the same key does.
type StoredErrors int

const (
	// StoredErrorsReplayed: every executed answer is stored, 500s included,
	// and replayed to each repeat until the key expires (Stripe). A resend
	// after a stored 500 never gets through: the operation stays unknown
	// and goes to review once the key window has passed.
	StoredErrorsReplayed StoredErrors = iota + 1
	// StoredErrorsForgotten: only 2xx answers are stored (Checkout.com).
	// After any other answer the key is free again: a resend is processed
	// as a new request, which is a second payment if the first was made
	// before the 5xx. Only the lookup before every resend prevents it.
	StoredErrorsForgotten
	// StoredErrorsRealOutcome: a 500 is not replayed; after a request that
	// was processed and then answered 500 the key keeps the real outcome,
	// which a repeat receives (YooKassa).
	StoredErrorsRealOutcome
)

// String names the behaviour.
func (s StoredErrors) String() string {
	switch s {
	case StoredErrorsReplayed:
		return "replayed"
	case StoredErrorsForgotten:
		return "forgotten"
	case StoredErrorsRealOutcome:
		return "real_outcome"
	}
	return "unset"
}

// Env is one adapter pointed at one fresh fake, built by the function given
// to Run for every subtest. Fields marked required must be set; the others
// have the defaults they document.
type Env struct {
	// Provider is the adapter under test, pointed at Fake, reading
	// Options.Clock, with Options.KeyTTL and Options.LookupLag applied.
	// Required.
	Provider payonce.Provider
	// Fake is the fake provider, started with the Options (clock, key TTL,
	// seed, faults, hang, slow, retry-after). The function that builds the
	// Env closes it with t.Cleanup. Required.
	Fake Fake

	// Charge, Capture, Cancel and Refund select the POSTs of each endpoint,
	// for scripting faults and counting requests. Path must be the path of
	// the fake's route pattern (e.g. "/v1/payment_intents/{id}/capture"):
	// the suite counts requests under "POST " + Path in Truth().Requests.
	// Charge and Refund are required; Capture and Cancel when TwoStage.
	Charge, Capture, Cancel, Refund mocks.Match
	// Lookup selects the requests of status lookups. Defaults to every GET
	// (mocks.Match{Method: "GET"}).
	Lookup mocks.Match
	// Auxiliary selects requests that neither move money nor look an
	// operation up (PayPal's OAuth2 token call, its webhook certificate
	// and its verify-webhook-signature call): the scenarios' counts of
	// what was sent and requested leave them out, so that fetching a
	// credential after the clock moved, or a certificate to verify a
	// delivery, is never taken for a resend or a lookup.
	Auxiliary []mocks.Match

	// Currency of every amount the suite sends, e.g. "USD". Defaults to USD.
	Currency string
	// GoodMethod is a payment method (ChargeParams.PaymentMethod) that pays.
	// Required.
	GoodMethod string
	// DeclinedMethod is a payment method the provider declines. Required.
	DeclinedMethod string
	// Customer is the customer every charge names (ChargeParams.Customer),
	// for a provider whose stored payment methods belong to one (Adyen's
	// shopperReference). Empty: none.
	Customer string
	// NoFullCapture is true when a capture must name its amount: the
	// provider has no "capture the whole authorization" form (Adyen). The
	// suite then names the authorized amount where it would send 0.
	NoFullCapture bool
	// DeclineErrorCode, DeclineCode and DeclineMessage, when set, are the
	// Code, DeclineCode and Message of the *payonce.DeclinedError a charge
	// with DeclinedMethod must return; empty accepts any non-empty value.
	DeclineErrorCode string
	DeclineCode      string
	DeclineMessage   string

	// StoredErrors is the provider's idempotency rule after a 5xx.
	// Required.
	StoredErrors StoredErrors
	// KeyInUseStatus is the HTTP status with which the provider answers a
	// repeat while the first request with the key still runs (Stripe and
	// Checkout.com: 409; YooKassa: 202 with retry_after). Required.
	KeyInUseStatus int
	// ReportsKeyMismatch is true when the provider answers a key reused
	// with another request in a way the adapter classifies key_mismatch
	// (Stripe, YooKassa). False skips that scenario.
	ReportsKeyMismatch bool
	// TwoStage is true when the adapter supports authorize-then-capture and
	// cancel. False skips that scenario.
	TwoStage bool
	// AcceptsActions is true when the provider accepts a capture, cancel or
	// refund and finishes it later (Checkout.com's 202 Accepted): the first
	// call reports the outcome unknown, and the next call settles it with a
	// lookup, without sending it again. False requires them to finish in
	// the first call.
	AcceptsActions bool
	// RepeatIsLookup is true when the provider has nothing to look a charge
	// up by until its request answered with the provider's id, and answers
	// a repeat of the request with the same key with the first request's
	// latest status (PayPal's Orders: no search by the adapter's ids, "the
	// API returns the latest status of the request"): the same-key repeat
	// is the charge's lookup, made at once (the adapter declares no lag,
	// and Options.LookupLag does not apply to it). Where the suite expects
	// a lost charge found by a lookup without a POST, it expects the
	// repeat: one POST per attempt the ledger journaled, all with the
	// operation's key, one payment; where it makes lookups fail, it makes
	// the repeats fail too.
	RepeatIsLookup bool
	// FakeLag is true when the fake applies Options.FakeLag: a payment it
	// created stays invisible to the lookup the adapter uses for that long.
	// False runs the LookupLag scenario without an invisible payment.
	FakeLag bool

	// PaymentOperation returns the operation id a payment of the fake was
	// made for. Defaults to its metadata payonce_op, else its Reference.
	PaymentOperation func(mocks.TruthPayment) string
	// WireKey returns the idempotency key the adapter sends for an
	// operation's key. Defaults to the key itself; Adyen's adapter scopes it
	// to the merchant account (adyen.IdempotencyKey).
	WireKey func(key string) string
	// RefundOperation returns the operation id a refund was made for.
	// Defaults to its metadata payonce_op, else its Reference, else the id
	// after "payonce_op:" in its Description.
	RefundOperation func(mocks.TruthRefund) string

	// WebhookForgeries are deliveries the adapter must refuse, each made
	// from a genuine one of its fake (at least one for every adapter that
	// implements payonce.WebhookParser).
	WebhookForgeries []Forgery
	// WebhooksLookupOnly is true when the provider signs nothing and its
	// events only make the operation due for a lookup (YooKassa): the
	// suite expects "nudged" where others settle, and a lookup to settle.
	WebhooksLookupOnly bool
	// WebhookOnly is true when some outcomes arrive only by webhook: the
	// provider has no status lookup (Adyen). Its environment delivers
	// webhooks in every scenario (Options.WebhookDelivery), and where the
	// suite expects a lookup to find what a lost answer did, it waits for
	// the webhook to settle it instead.
	WebhookOnly bool
	// WebhookReads is true when the adapter verifies an event by reading
	// its object from the provider (PayPal: the signature binds the body
	// only by its CRC32, so the object is read by id): every delivery,
	// a duplicate included, makes GETs. The webhook scenarios then count
	// only POSTs after a delivery, and let the lookups work again before
	// they hand held deliveries over.
	WebhookReads bool
	// Reversal undoes a settled operation at the fake. Nil when the
	// provider has no event that does (then list ScenarioWebhookContradiction
	// in Skip with the reason).
	Reversal *Reversal

	// Skip names scenarios (top-level subtest names of Run, or a
	// scenario's subtest as "Scenario/subtest") that this adapter cannot
	// run, each with the reason printed when it is skipped.
	Skip map[string]string
}

// soakFaults are the kinds the soak mixes: every kind of mocks. They are
// provider-neutral (mocks/core.go), so every fake built on it injects them.
var soakFaults = []mocks.FaultKind{
	mocks.FaultDropAfterProcessing, mocks.FaultHangAfterProcessing, mocks.FaultGatewayBefore502,
	mocks.FaultGatewayAfter502, mocks.FaultRateLimit429, mocks.FaultSlow, mocks.FaultStored500,
	mocks.FaultProcessed500,
}

// metaOperation is the metadata key every adapter in this repository writes
// the operation id under.
const metaOperation = "payonce_op"

// refundMarker prefixes the operation id in a refund description (YooKassa
// refunds carry no metadata).
const refundMarker = "payonce_op:"

func defaultPaymentOperation(p mocks.TruthPayment) string {
	if v := p.Metadata[metaOperation]; v != "" {
		return v
	}
	return p.Reference
}

func defaultRefundOperation(r mocks.TruthRefund) string {
	if v := r.Metadata[metaOperation]; v != "" {
		return v
	}
	if r.Reference != "" {
		return r.Reference
	}
	if i := strings.Index(r.Description, refundMarker); i >= 0 {
		rest := r.Description[i+len(refundMarker):]
		if j := strings.IndexByte(rest, ' '); j >= 0 {
			rest = rest[:j]
		}
		return rest
	}
	return ""
}

// check fills the defaults in and reports the first required field missing.
func (e *Env) check() string {
	switch {
	case e.Provider == nil:
		return "Env.Provider is nil: return the adapter pointed at the fake"
	case e.Fake == nil:
		return "Env.Fake is nil: return the fake the adapter talks to"
	case e.Charge.Path == "" || e.Refund.Path == "":
		return "Env.Charge.Path and Env.Refund.Path are required: the route paths of the charge and refund POSTs"
	case e.TwoStage && (e.Capture.Path == "" || e.Cancel.Path == ""):
		return "Env.TwoStage needs Env.Capture.Path and Env.Cancel.Path"
	case e.GoodMethod == "" || e.DeclinedMethod == "":
		return "Env.GoodMethod and Env.DeclinedMethod are required: a payment method that pays and one that is declined"
	case e.StoredErrors < StoredErrorsReplayed || e.StoredErrors > StoredErrorsRealOutcome:
		return "Env.StoredErrors is required: what the provider keeps under a key after a 5xx"
	case e.KeyInUseStatus == 0:
		return "Env.KeyInUseStatus is required: the status of a repeat while the key's first request runs (409, 202, ...)"
	}
	if e.Lookup == (mocks.Match{}) {
		e.Lookup = mocks.Match{Method: "GET"}
	}
	if e.Currency == "" {
		e.Currency = "USD"
	}
	if e.PaymentOperation == nil {
		e.PaymentOperation = defaultPaymentOperation
	}
	if e.WireKey == nil {
		e.WireKey = func(key string) string { return key }
	}
	if e.RefundOperation == nil {
		e.RefundOperation = defaultRefundOperation
	}
	return ""
}

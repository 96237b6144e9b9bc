package payonce

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-cleanhttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/payonce/payonce/ledger"
)

// Config configures a Client. Zero fields take the defaults named on each;
// New validates the rest and says how to fix what is wrong.
type Config struct {
	// Provider is the adapter of the provider to call. Required.
	Provider Provider
	// Store is the ledger. Required.
	Store ledger.Store
	// Logger receives state changes and retries; never secrets. Defaults to
	// discarding.
	Logger *slog.Logger
	// Now is the clock. Defaults to time.Now. Tests inject one to move key
	// windows and leases without sleeping.
	Now func() time.Time
	// Random returns a number in [0, 1) for backoff jitter and the owner id.
	// Defaults to math/rand/v2's Float64.
	Random func() float64
	// HTTPClient supplies the transport. Defaults to a pooled client
	// (go-cleanhttp). Its Timeout is ignored: AttemptTimeout applies.
	HTTPClient *http.Client
	// AttemptTimeout bounds one attempt or one lookup. Defaults to 30 s.
	AttemptTimeout time.Duration
	// Retry bounds the attempt loop of one call.
	Retry RetryPolicy
	// Breaker configures the provider's circuit breaker.
	Breaker BreakerSettings
	// LeaseDuration is how long a call or worker holds an operation before
	// another may take it over. Must exceed two AttemptTimeouts. Defaults to
	// 3 × AttemptTimeout + Retry.MaxDelay.
	LeaseDuration time.Duration
	// SafetyMargin is subtracted from the provider's key TTL: resends stop
	// this long before the provider may forget the key. Defaults to
	// AttemptTimeout + max(ClockSkew, 1 % of the key TTL): with the
	// defaults and Stripe's 24 h keys, 30 s + 14 min 24 s. For a provider
	// whose kinds keep keys for different times (ProviderInfo.KindKeyTTL)
	// the shortest window counts. A value set must be at least
	// AttemptTimeout + ClockSkew, so that a resend started inside the
	// window also lands inside it, and below the shortest key TTL.
	SafetyMargin time.Duration
	// CheckInterval is how long after an unsettled call background work first
	// looks the operation up. Defaults to 30 s.
	CheckInterval time.Duration
	// ProcessingReviewAfter sends an operation that the provider still
	// reports as processing to review once its key window has passed and
	// this long has gone by since its first attempt. Defaults to 72 h; -1
	// never sends an operation to review for its age: it is looked
	// up, read-only, until the provider settles it.
	ProcessingReviewAfter time.Duration
	// FailStoredErrors, off by default, records as failed (DeclinedError
	// with Code CodeStoredError, message ReasonNothingMoved) an operation
	// that would otherwise go to review with ledger.ReviewCodeStoredError:
	// the provider replayed a stored error under the operation's current
	// key and two lookups that prove absence, made after the lookup's lag,
	// found nothing. The service may then retry under a new operation (a
	// new OrderID). The risk: a provider whose stored error hides an object
	// its lookup cannot see; the retry would then charge a second time.
	// payonce counts only the lookups of adapters that declare
	// ProviderInfo.LookupProvesAbsence (so the policy never applies to
	// Adyen), and the audit of settled operations against the provider (a
	// later feature) is its safety net. The policy applies only to an
	// adapter that declares ProviderInfo.StoredErrorsFinal, which no
	// built-in adapter does (Stripe: a stored 500 is indeterminate and may
	// be rolled forward later); elsewhere the operation goes to review. Operations already in review stay
	// there, and an operation whose key was not answered by a replayed
	// stored error is never failed by it.
	FailStoredErrors bool
	// Owner names this service in leases, for people reading them (e.g.
	// "orders-api"). Defaults to host/pid. It is a label, not an identity:
	// replicas configured with the same name must still never share a
	// lease, so every lease owner is Owner, a random part drawn once per
	// Client, and a per-call sequence number.
	Owner string
	// ClockSkew is how far the clocks of this process and the provider may
	// disagree. It is part of the safety margin. Defaults to 1 minute.
	ClockSkew time.Duration
	// InboxRetention is how long the ledger keeps webhook inbox entries:
	// RecordWebhook refuses an event that occurred longer ago than this
	// (less ClockSkew), and a Reconciler's Cleanup keeps entries this long
	// (the longest of its Clients'). Defaults to
	// ledger.DefaultInboxRetention (31 days); it must be at least the
	// provider's webhook redelivery window (ProviderInfo.WebhookRedelivery)
	// plus twice ClockSkew. Set the same value on every Client sharing the
	// ledger.
	InboxRetention time.Duration
	// MeterProvider receives the client's metrics (payonce.call.duration,
	// payonce.attempts, ...: semconv.MetricNames). Defaults to
	// otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// TracerProvider receives the client's spans: one per call
	// ("payonce.charge", ...), with a child per attempt and per lookup.
	// Defaults to otel.GetTracerProvider(). The attempt's context reaches
	// the adapter's request, so otelhttp on HTTPClient.Transport puts the
	// provider's HTTP span, and its traceparent header, under the attempt.
	TracerProvider trace.TracerProvider
	// Hooks are in-process callbacks on operations this Client settles or
	// sends to review: its own calls and the background work a Reconciler
	// does through it. Best-effort, after the ledger commit, bounded by
	// Hooks.Timeout (see Hooks); the ledger's feed is the durable account.
	Hooks Hooks
}

// Client charges, captures, cancels and refunds through one provider so that
// money moves at most once per operation identity. It is safe for concurrent
// use; many clients in many processes may share one ledger.
type Client struct {
	cfg  Config
	http *httpLayer
	info ProviderInfo
	tel  *telemetry
	// ownerBase is Config.Owner plus a random part unique to this Client.
	ownerBase string
	seq       atomic.Uint64
}

// New builds a Client from cfg, applying defaults and validating the result.
func New(cfg Config) (*Client, error) {
	if cfg.Provider == nil {
		return nil, invalid("Config.Provider", "required: a provider adapter such as stripe.New(...)")
	}
	if cfg.Store == nil {
		return nil, invalid("Config.Store", "required: a ledger store such as ledgersqlite.Open(path, ledgersqlite.Config{}) or ledgerpg.New(pool, ledgerpg.Config{})")
	}
	info := cfg.Provider.Info()
	name := cfg.Provider.Name()
	if !validProvider(name) {
		return nil, invalid("Config.Provider", "adapter name %q must match [a-z0-9][a-z0-9_.-]{0,63}", name)
	}
	if info.KeyTTL <= 0 {
		return nil, invalid("Config.Provider", "adapter %s declares no key TTL", name)
	}
	for _, k := range slices.Sorted(maps.Keys(info.KindKeyTTL)) {
		if err := k.Validate(); err != nil {
			return nil, invalid("Config.Provider", "adapter %s declares a key TTL for %v", name, err)
		}
		if info.KindKeyTTL[k] <= 0 {
			return nil, invalid("Config.Provider", "adapter %s declares no key TTL for %s", name, k)
		}
	}
	if info.MaxKeyLength < 36 {
		return nil, invalid("Config.Provider", "adapter %s accepts keys of at most %d characters; payonce keys have 36", name, info.MaxKeyLength)
	}
	cfg.setDefaults(info)
	hooks, err := cfg.Hooks.withDefaults("Config.Hooks")
	if err != nil {
		return nil, err
	}
	cfg.Hooks = hooks
	if err := cfg.check(info); err != nil {
		return nil, err
	}
	if err := cfg.Retry.validate(); err != nil {
		return nil, err
	}
	tel, err := newTelemetry(cfg.MeterProvider, cfg.TracerProvider, name)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, info: info, tel: tel, ownerBase: cfg.Owner + "/" + randomTag()}
	c.http = newHTTPLayer(&c.cfg, tel)
	return c, nil
}

// setDefaults fills the zero settings with their defaults (zero means
// default; the fields whose documentation names -1 use it for "off").
func (cfg *Config) setDefaults(info ProviderInfo) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Random == nil {
		cfg.Random = mrand.Float64
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = cleanhttp.DefaultPooledClient()
	}
	if cfg.AttemptTimeout == 0 {
		cfg.AttemptTimeout = 30 * time.Second
	}
	cfg.Retry = cfg.Retry.withDefaults()
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 3*cfg.AttemptTimeout + cfg.Retry.MaxDelay
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = time.Minute
	}
	if cfg.InboxRetention == 0 {
		cfg.InboxRetention = ledger.DefaultInboxRetention
	}
	if cfg.SafetyMargin == 0 {
		// One margin for every kind, sized by the shortest window: a
		// margin grown from a longer window could swallow a short one.
		shortest, _ := info.KeyTTLRange()
		cfg.SafetyMargin = max(cfg.ClockSkew, shortest/100) + cfg.AttemptTimeout
	}
	if cfg.CheckInterval == 0 {
		cfg.CheckInterval = 30 * time.Second
	}
	if cfg.ProcessingReviewAfter == 0 {
		cfg.ProcessingReviewAfter = 72 * time.Hour
	}
	if cfg.Owner == "" {
		cfg.Owner = defaultOwner()
	}
}

func shortestKeyTTL(info ProviderInfo) time.Duration {
	shortest, _ := info.KeyTTLRange()
	return shortest
}

// check refuses settings that would break a safety rule, saying what to
// fix.
func (cfg *Config) check(info ProviderInfo) error {
	switch {
	case cfg.AttemptTimeout < 0:
		return invalid("Config.AttemptTimeout", "must be > 0, got %v", cfg.AttemptTimeout)
	case cfg.LeaseDuration <= 2*cfg.AttemptTimeout:
		return invalid("Config.LeaseDuration", "must exceed two AttemptTimeouts (%v), got %v: a lease that ends mid-attempt lets another worker act at the same time", 2*cfg.AttemptTimeout, cfg.LeaseDuration)
	case cfg.ClockSkew < 0:
		return invalid("Config.ClockSkew", "must be > 0 (0 for the default 1m), got %v", cfg.ClockSkew)
	case cfg.SafetyMargin < cfg.AttemptTimeout+cfg.ClockSkew:
		// A resend started just inside the window must also land inside it:
		// it may take a whole attempt, and the provider's clock may run
		// ahead of ours by the skew allowance.
		return invalid("Config.SafetyMargin", "must be at least AttemptTimeout + ClockSkew (%v), got %v: a resend started inside the key window could land after it", cfg.AttemptTimeout+cfg.ClockSkew, cfg.SafetyMargin)
	case cfg.SafetyMargin >= shortestKeyTTL(info):
		// The margin must leave every kind's window some time to resend in.
		return invalid("Config.SafetyMargin", "must be below the provider's shortest key TTL %v, got %v (AttemptTimeout %v + ClockSkew %v): shorten the timeout or the skew allowance", shortestKeyTTL(info), cfg.SafetyMargin, cfg.AttemptTimeout, cfg.ClockSkew)
	case cfg.InboxRetention < info.WebhookRedelivery+2*cfg.ClockSkew:
		// Rule 7: an event is applied once because its inbox entry makes
		// every later delivery a duplicate. Checkout.com and Adyen sign no
		// timestamp, so once the entry is gone a delivery of the event,
		// from the provider or from whoever captured it, verifies again.
		// The inbox must outlast the provider's redelivery (events older
		// than the retention are refused, so a genuine late redelivery
		// would be lost), with the clocks' skew on both ends.
		return invalid("Config.InboxRetention", "%v is shorter than %s's webhook redelivery window %v plus twice ClockSkew (%v): "+
			"an event the provider may still deliver again could outlive its inbox entry; use at least %v",
			cfg.InboxRetention, cfg.Provider.Name(), info.WebhookRedelivery, 2*cfg.ClockSkew, info.WebhookRedelivery+2*cfg.ClockSkew)
	case cfg.CheckInterval < 0:
		return invalid("Config.CheckInterval", "must be > 0, got %v", cfg.CheckInterval)
	case cfg.ProcessingReviewAfter < 0 && cfg.ProcessingReviewAfter != off:
		return invalid("Config.ProcessingReviewAfter", "must be > 0, or -1 never to send to review for age, got %v", cfg.ProcessingReviewAfter)
	case len(cfg.Owner) > 200:
		return invalid("Config.Owner", "at most 200 bytes, got %d", len(cfg.Owner))
	}
	return nil
}

func defaultOwner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// randomTag is the random part of lease owners: 12 bytes from crypto/rand,
// drawn once per Client or Reconciler. It does not come from Config.Random,
// which tests make deterministic: two clients seeded alike would then share
// leases again.
func randomTag() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Provider returns the adapter the client calls.
func (c *Client) Provider() Provider { return c.cfg.Provider }

// Request-path bounds of RequestPath.
const (
	requestPathAttemptTimeout = 2 * time.Second
	requestPathMaxAttempts    = 1
)

// RequestPath returns cfg set up for calls made while a customer waits (an
// HTTP handler): a Charge returns within about two AttemptTimeouts (one
// attempt and one lookup of 2 s each) plus its ledger writes, and leaves
// whatever it could not settle to the Reconciler, which must run. It overwrites AttemptTimeout
// (2 s) and, in Retry, MaxAttempts (1), MaxRetryAfter (-1: a Retry-After
// ends the call instead of waiting) and LookupRetries (-1); every other
// field is kept, and New applies its defaults as usual (LeaseDuration and
// SafetyMargin follow the shorter AttemptTimeout).
//
// What the customer hears is then one of: succeeded, declined, or
// "processing" (ErrOutcomeUnknown, ErrProviderUnavailable: recorded, the
// Reconciler settles it; answer 202 and poll Client.Status). A second
// attempt is not made in the request path because a resend after a
// timeout must first look the operation up, which doubles the wait. Also
// bound the handler's context (e.g. 5 s): a call whose context ends stops
// at the next step and leaves the operation to the Reconciler, never
// lost. The Reconciler may use the same Client; one built from the default
// policy gives a slow provider more room, as nobody waits on its attempts.
func RequestPath(cfg Config) Config {
	cfg.AttemptTimeout = requestPathAttemptTimeout
	cfg.Retry.MaxAttempts = requestPathMaxAttempts
	cfg.Retry.MaxRetryAfter = off
	cfg.Retry.LookupRetries = off
	return cfg
}

// nextOwner returns a lease owner unique to one call: two calls must never
// share a lease, or both would be allowed to send. The sequence alone is
// unique only within this Client, and Config.Owner is often the service's
// name on every replica, so the Client's random part sits between them.
func (c *Client) nextOwner() string {
	return c.ownerBase + "#" + strconv.FormatUint(c.seq.Add(1), 10)
}

// ChargeParams are the arguments of Charge.
type ChargeParams struct {
	// OrderID identifies the payment in your system. Required. One order is
	// charged at most once: if an order may be paid again after a decline
	// (another card), make each payment attempt its own OrderID.
	OrderID string
	// Amount in minor units (cents). Required, > 0.
	Amount int64
	// Currency is the ISO 4217 code in upper case, e.g. "USD". Required.
	Currency string
	// PaymentMethod is the provider's id or token of the payment method
	// (e.g. Stripe's "pm_..."), as the adapter requires it.
	PaymentMethod string
	// Customer is the provider's customer id, if any.
	Customer string
	// CaptureManual authorizes only; Capture moves the money later.
	CaptureManual bool
	// Description is free text for the provider, at most 1000 bytes.
	Description string
	// Metadata is passed to the provider: at most 50 keys of 1 to 40
	// bytes, values of at most 500 bytes. Like every field, it is part of
	// the request's fingerprint: the same order with other metadata is
	// ErrFingerprintMismatch.
	Metadata map[string]string
}

// CaptureParams are the arguments of Capture.
type CaptureParams struct {
	// OrderID is the order whose charge (an authorization) is captured.
	// Required; one order's charge is captured at most once.
	OrderID string
	// Amount to capture in minor units; 0 captures the full authorization.
	Amount int64
	// Currency is the ISO 4217 code in upper case; required with Amount.
	Currency string
	// PaymentRef is the provider's id of the payment. Defaults to the
	// provider reference of the order's charge in the ledger.
	PaymentRef string
	// Metadata is passed to the provider: at most 50 keys of 1 to 40
	// bytes, values of at most 500 bytes. Like every field, it is part of
	// the request's fingerprint: the same order with other metadata is
	// ErrFingerprintMismatch.
	Metadata map[string]string
}

// CancelParams are the arguments of Cancel.
type CancelParams struct {
	// OrderID is the order whose authorization is released. Required; one
	// order's charge is cancelled at most once.
	OrderID string
	// PaymentRef defaults to the provider reference of the order's charge.
	PaymentRef string
	// Metadata is passed to the provider: at most 50 keys of 1 to 40
	// bytes, values of at most 500 bytes. Like every field, it is part of
	// the request's fingerprint: the same order with other metadata is
	// ErrFingerprintMismatch.
	Metadata map[string]string
}

// RefundParams are the arguments of Refund.
type RefundParams struct {
	// OrderID is the order whose payment is refunded. Required.
	OrderID string
	// RefundSeq numbers the refunds of one order from 1: refund #2 of an
	// order is a different operation from refund #1. Required, >= 1, and
	// without gaps: Refundable's NextSeq is the next free number (a number
	// whose predecessor has no record is refused when the ledger is read).
	RefundSeq int
	// Amount in minor units; 0 refunds what remains. More than remains
	// (Refundable's Remaining) is refused when the ledger is read.
	Amount int64
	// Currency is the ISO 4217 code in upper case; required with Amount.
	Currency string
	// PaymentRef defaults to the provider reference of the order's charge.
	// Given, the ledger is not read at all: neither the amount nor the
	// number is checked against the order's refunds, and the provider's
	// own refusal is the only guard against an over-refund.
	PaymentRef string
	// Metadata is passed to the provider: at most 50 keys of 1 to 40
	// bytes, values of at most 500 bytes. Like every field, it is part of
	// the request's fingerprint: the same order with other metadata is
	// ErrFingerprintMismatch.
	Metadata map[string]string
}

// MaxAmount is the largest amount, in minor units, a call accepts.
const MaxAmount = 999_999_999_999

func checkAmount(a int64, required bool) error {
	switch {
	case a < 0:
		return invalid("Amount", "must not be negative (minor units), got %d", a)
	case required && a == 0:
		return invalid("Amount", "must be > 0 (minor units, e.g. 1999 for 19.99)")
	case a > MaxAmount:
		return invalid("Amount", "must be at most %d minor units, got %d", MaxAmount, a)
	}
	return nil
}

// Charge moves money from the customer once per (provider, OrderID): every
// later call with the same OrderID and request returns the recorded result.
func (c *Client) Charge(ctx context.Context, p ChargeParams) (Result, error) {
	return c.do(ctx, KindCharge, func(context.Context) (Request, error) { return chargeRequest(p) })
}

// Capture captures an authorized charge once per order.
func (c *Client) Capture(ctx context.Context, p CaptureParams) (Result, error) {
	return c.do(ctx, KindCapture, func(ctx context.Context) (Request, error) { return c.captureRequest(ctx, c.ownReader(), p) })
}

// Cancel cancels an authorized, uncaptured charge once per order.
func (c *Client) Cancel(ctx context.Context, p CancelParams) (Result, error) {
	return c.do(ctx, KindCancel, func(ctx context.Context) (Request, error) { return c.cancelRequest(ctx, c.ownReader(), p) })
}

// Refund refunds once per (OrderID, RefundSeq). Without PaymentRef it reads
// the order's charge and refunds from the ledger and refuses, before
// anything is recorded or sent, an Amount above what can still be refunded
// and a RefundSeq that skips a number (see PrepareRefundTx).
func (c *Client) Refund(ctx context.Context, p RefundParams) (Result, error) {
	return c.do(ctx, KindRefund, func(ctx context.Context) (Request, error) { return c.refundRequest(ctx, c.ownReader(), p) })
}

func chargeRequest(p ChargeParams) (Request, error) {
	if err := checkAmount(p.Amount, true); err != nil {
		return Request{}, err
	}
	return Request{
		Kind: KindCharge, Amount: p.Amount, Currency: p.Currency, References: []string{p.OrderID},
		PaymentMethod: p.PaymentMethod, Customer: p.Customer, CaptureManual: p.CaptureManual,
		Description: p.Description, Metadata: p.Metadata,
	}, nil
}

func (c *Client) captureRequest(ctx context.Context, rd ledger.Reader, p CaptureParams) (Request, error) {
	if err := checkAmount(p.Amount, false); err != nil {
		return Request{}, err
	}
	ref, _, err := c.paymentRef(ctx, rd, p.OrderID, p.PaymentRef)
	if err != nil {
		return Request{}, err
	}
	return Request{Kind: KindCapture, Amount: p.Amount, Currency: p.Currency,
		References: []string{p.OrderID}, PaymentRef: ref, Metadata: p.Metadata}, nil
}

func (c *Client) cancelRequest(ctx context.Context, rd ledger.Reader, p CancelParams) (Request, error) {
	ref, _, err := c.paymentRef(ctx, rd, p.OrderID, p.PaymentRef)
	if err != nil {
		return Request{}, err
	}
	return Request{Kind: KindCancel, References: []string{p.OrderID}, PaymentRef: ref, Metadata: p.Metadata}, nil
}

func (c *Client) refundRequest(ctx context.Context, rd ledger.Reader, p RefundParams) (Request, error) {
	if p.RefundSeq < 1 {
		return Request{}, invalid("RefundSeq", "must be >= 1 (the number of this refund within the order), got %d", p.RefundSeq)
	}
	if err := checkAmount(p.Amount, false); err != nil {
		return Request{}, err
	}
	ref, charge, err := c.paymentRef(ctx, rd, p.OrderID, p.PaymentRef)
	if err != nil {
		return Request{}, err
	}
	if p.PaymentRef == "" {
		// Read on every call, repeats included: the reference is part of
		// the request's fingerprint, so a retry must name the same one.
		// First, so that an authorization not captured yet is refused as
		// that rather than as "0 can be refunded".
		if ref, err = c.refundTarget(ctx, rd, p.OrderID, charge); err != nil {
			return Request{}, err
		}
		// The ledger was read for the charge: check the refund against
		// the order's other refunds too (checkRefund says why and when).
		if err := c.checkRefund(ctx, rd, p, charge); err != nil {
			return Request{}, err
		}
	}
	return Request{Kind: KindRefund, Amount: p.Amount, Currency: p.Currency,
		References: refundReferences(p.OrderID, p.RefundSeq), PaymentRef: ref, Metadata: p.Metadata}, nil
}

// refundReferences are the References of refund number seq of an order:
// {OrderID, decimal RefundSeq}, such as {"order-42", "2"}. They are part of
// the refund's key: never change them.
func refundReferences(orderID string, seq int) []string {
	return []string{orderID, strconv.Itoa(seq)}
}

// PrepareCharge returns the ledger record of a charge without recording or
// sending anything: keyed, fingerprinted, validated. Record it with Enqueue,
// or inside your own transaction with the store's CreateOrGetTx. It takes a
// context like the other Prepare methods; a charge reads nothing today, but
// every Prepare method may read the ledger.
func (c *Client) PrepareCharge(ctx context.Context, p ChargeParams) (ledger.NewOperation, error) {
	return c.prepareOp(ctx, func(context.Context) (Request, error) { return chargeRequest(p) })
}

// PrepareCapture is PrepareCharge for a capture. Without PaymentRef it
// reads the order's charge from Config.Store, on the store's own
// connection; inside a transaction use PrepareCaptureTx.
func (c *Client) PrepareCapture(ctx context.Context, p CaptureParams) (ledger.NewOperation, error) {
	return c.PrepareCaptureTx(ctx, c.ownReader(), p)
}

// PrepareCaptureTx is PrepareCapture reading the ledger through rd, such as
// a store's ReaderTx(tx) on the caller's transaction: it sees what tx wrote,
// and takes no second connection while tx holds one (see ledger.Reader for
// why that matters). It reads one record, the order's charge (for its
// PaymentRef), or, when p.PaymentRef is given, nothing at all.
func (c *Client) PrepareCaptureTx(ctx context.Context, rd ledger.Reader, p CaptureParams) (ledger.NewOperation, error) {
	if rd == nil {
		return ledger.NewOperation{}, nilReader()
	}
	return c.prepareOp(ctx, func(ctx context.Context) (Request, error) { return c.captureRequest(ctx, rd, p) })
}

// PrepareCancel is PrepareCharge for a cancel. Without PaymentRef it reads
// the order's charge from Config.Store; inside a transaction use
// PrepareCancelTx.
func (c *Client) PrepareCancel(ctx context.Context, p CancelParams) (ledger.NewOperation, error) {
	return c.PrepareCancelTx(ctx, c.ownReader(), p)
}

// PrepareCancelTx is PrepareCancel reading the ledger through rd (see
// PrepareCaptureTx): the order's charge, or nothing when p.PaymentRef is
// given.
func (c *Client) PrepareCancelTx(ctx context.Context, rd ledger.Reader, p CancelParams) (ledger.NewOperation, error) {
	if rd == nil {
		return ledger.NewOperation{}, nilReader()
	}
	return c.prepareOp(ctx, func(ctx context.Context) (Request, error) { return c.cancelRequest(ctx, rd, p) })
}

// PrepareRefund is PrepareCharge for a refund, with the checks of
// PrepareRefundTx. It reads Config.Store on the store's own connection;
// inside a transaction use PrepareRefundTx.
func (c *Client) PrepareRefund(ctx context.Context, p RefundParams) (ledger.NewOperation, error) {
	return c.PrepareRefundTx(ctx, c.ownReader(), p)
}

// PrepareRefundTx is PrepareRefund reading the ledger through rd, such as a
// store's ReaderTx(tx) on the caller's transaction (see PrepareCaptureTx).
//
// When p.PaymentRef is given it reads nothing and checks nothing against
// the ledger: the provider's own refusal is then the only guard against
// refunding more than was captured. Otherwise it reads what
// RefundableTx reads (the order's charge, its capture for a manual-capture
// charge, and its refunds numbered 1, 2, ... up to the first number not
// recorded) plus, for a RefundSeq beyond that, the refund's own record, and
// refuses with a *ValidationError, before anything is recorded or sent:
//
//   - an Amount above Refundable.Remaining, or Amount 0 (the rest) when
//     nothing remains: the error says how much can still be refunded and
//     why (captured, refunded, open);
//   - a RefundSeq that leaves a gap (the number before it has no record):
//     use Refundable.NextSeq.
//
// A refund whose own operation is already recorded is never refused: the
// call replays it. The check is exact only when the refunds of one order
// are serialized: prepare and record them (CreateOrGetTx) inside one
// transaction that holds the order's row lock, with rd reading through it.
// Two refunds checked concurrently without that both see the same
// Remaining; the provider refusing the second is then the last guard.
func (c *Client) PrepareRefundTx(ctx context.Context, rd ledger.Reader, p RefundParams) (ledger.NewOperation, error) {
	if rd == nil {
		return ledger.NewOperation{}, nilReader()
	}
	return c.prepareOp(ctx, func(ctx context.Context) (Request, error) { return c.refundRequest(ctx, rd, p) })
}

// prepareOp builds a request and returns its ledger record.
func (c *Client) prepareOp(ctx context.Context, build func(context.Context) (Request, error)) (ledger.NewOperation, error) {
	p, err := c.prepare(ctx, build)
	if err != nil {
		return ledger.NewOperation{}, err
	}
	return c.newOperation(p), nil
}

// Enqueue records a prepared operation as pending without calling the
// provider; background reconciliation sends it. Its key is the one a
// synchronous call with the same identity derives, so enqueueing and calling
// directly can never both move money. An operation already recorded is
// returned as it stands.
func (c *Client) Enqueue(ctx context.Context, op ledger.NewOperation) (Result, error) {
	if op.Provider != c.cfg.Provider.Name() {
		return Result{}, invalid("Provider", "operation is for %q, this client calls %q", op.Provider, c.cfg.Provider.Name())
	}
	got, _, err := c.cfg.Store.CreateOrGet(ctx, op, c.cfg.Now())
	if errors.Is(err, ErrFingerprintMismatch) {
		// The ledger's error is ErrFingerprintMismatch and says it all.
		return Result{OperationID: op.ID}, err
	}
	if err != nil {
		return Result{}, fmt.Errorf("payonce: enqueueing: %w", err)
	}
	return ResultOf(got), nil
}

// paymentRef returns the provider's id of the order's payment: the one the
// caller gave (reading nothing), or the one the ledger recorded for the
// order's charge, read through rd, with that charge.
func (c *Client) paymentRef(ctx context.Context, rd ledger.Reader, orderID, given string) (string, ledger.Operation, error) {
	if given != "" {
		return given, ledger.Operation{}, nil
	}
	if orderID == "" {
		return "", ledger.Operation{}, invalid("OrderID", "must not be empty")
	}
	op, err := c.operation(ctx, rd, KindCharge, []string{orderID})
	switch {
	case errors.Is(err, ErrNotFound):
		// Both: the caller may fix it by passing PaymentRef (invalid), and a
		// handler may answer "no such order" (not found).
		return "", op, fmt.Errorf("%w (%w)", invalid("PaymentRef", "the ledger has no charge for order %q; charge it first or pass the provider's payment id", orderID), ErrNotFound)
	case err != nil:
		return "", op, fmt.Errorf("payonce: reading the order's charge: %w", err)
	case !op.Status.Final():
		// Not settled: a capture or refund of a payment whose outcome is
		// unknown would be refused by the provider and that refusal
		// recorded for good under this operation's identity. Nothing is
		// recorded; the caller asks again once the charge has settled.
		return "", op, fmt.Errorf("%w: the charge of order %q is %s; call again once it has settled, or pass PaymentRef",
			ErrNotSettled, orderID, ResultOf(op).Status)
	case op.ProviderRef == "":
		return "", op, invalid("PaymentRef", "the charge of order %q %s without a provider reference; pass the provider's payment id", orderID, op.Status)
	}
	return op.ProviderRef, op, nil
}

// operation reads the operation of kind with references of this client's
// provider from the ledger through rd. Its error wraps ErrNotFound when the
// ledger has no record of it (nor a tombstone); a read that ran out of time
// says on which connection it waited (readError).
func (c *Client) operation(ctx context.Context, rd ledger.Reader, kind Kind, refs []string) (ledger.Operation, error) {
	id, err := Identity{Provider: c.cfg.Provider.Name(), Kind: kind, References: refs}.OperationID()
	if err != nil {
		return ledger.Operation{}, err
	}
	op, _, err := rd.Get(ctx, id)
	return op, readError(rd, err)
}

// StatusQuery names an operation by its business identity, as the call
// that made it did.
type StatusQuery struct {
	// Kind is the operation's kind. Required.
	Kind Kind
	// OrderID is the OrderID the call was made with. Required.
	OrderID string
	// RefundSeq is the refund's number (>= 1); required for KindRefund and
	// zero for the other kinds.
	RefundSeq int
}

// Status answers "what happened to the charge (capture, cancel, refund N)
// of this order?" from the ledger alone: it never calls the provider and
// never changes the operation. It returns the Result and error a call with
// the same identity returns once it can do no more: nil for succeeded, a
// *DeclinedError (ErrDeclined) for failed, ErrOutcomeUnknown for unknown,
// ErrInProgress for in flight (ErrOutcomeUnknown once its lease has lapsed:
// nobody is sending it), ErrProviderUnavailable for pending (nothing
// sent yet), ErrManualReview for manual review (ResultStatus documents the
// mapping). Result.Replayed is true: the answer came from the ledger.
//
// An operation the ledger has no record of returns an error wrapping
// ErrNotFound; a malformed query a *ValidationError (ErrInvalid). A deleted
// operation is answered from its tombstone.
//
// Status reads Config.Store on the store's own connection; inside a
// transaction use StatusTx.
func (c *Client) Status(ctx context.Context, q StatusQuery) (Result, error) {
	return c.StatusTx(ctx, c.ownReader(), q)
}

// StatusTx is Status reading the one record it reads through rd, such as a
// store's ReaderTx(tx) on the caller's transaction: it sees what tx wrote
// and has not committed, and takes no second connection while tx holds
// one.
func (c *Client) StatusTx(ctx context.Context, rd ledger.Reader, q StatusQuery) (Result, error) {
	if rd == nil {
		return Result{}, nilReader()
	}
	if err := q.Kind.Validate(); err != nil {
		return Result{}, err
	}
	if q.OrderID == "" {
		return Result{}, invalid("OrderID", "must not be empty")
	}
	refs := []string{q.OrderID}
	switch {
	case q.Kind == KindRefund && q.RefundSeq < 1:
		return Result{}, invalid("RefundSeq", "must be >= 1 for a refund (the number of the refund within the order), got %d", q.RefundSeq)
	case q.Kind == KindRefund:
		refs = refundReferences(q.OrderID, q.RefundSeq)
	case q.RefundSeq != 0:
		return Result{}, invalid("RefundSeq", "must be 0 for a %s (only refunds are numbered), got %d", q.Kind, q.RefundSeq)
	}
	op, err := c.operation(ctx, rd, q.Kind, refs)
	if errors.Is(err, ErrNotFound) {
		return Result{}, fmt.Errorf("%w: no %s of order %q is recorded", ErrNotFound, q.Kind, q.OrderID)
	}
	if err != nil {
		return Result{}, fmt.Errorf("payonce: reading the %s of order %q: %w", q.Kind, q.OrderID, err)
	}
	if op.Status == ledger.StatusInFlight && !c.cfg.Now().Before(op.LeaseExpiresAt) {
		// Nobody holds the lease any more (the worker died or gave up):
		// no answer is awaited, the attempt may have reached the provider,
		// and the reconciler will treat it as unknown and look it up.
		// "In progress" would tell the caller to wait for nothing.
		op.Status = ledger.StatusUnknown
	}
	r := ResultOf(op)
	r.Replayed = true
	return r, errorOf(op, op.Provider)
}

// prepared is an operation ready to be recorded.
type prepared struct {
	req       Request
	id        Identity
	opID      string
	canonical []byte
	fp        string
}

// prepare builds a call's request and checks, keys and fingerprints it.
func (c *Client) prepare(ctx context.Context, build func(context.Context) (Request, error)) (prepared, error) {
	req, err := build(ctx)
	if err != nil {
		return prepared{}, err
	}
	id := Identity{Provider: c.cfg.Provider.Name(), Kind: req.Kind, References: req.References}
	// OperationID validates the identity and Canonical the request, in
	// that order: the caller hears of a wrong identity first.
	opID, err := id.OperationID()
	if err != nil {
		return prepared{}, err
	}
	canonical, err := req.Canonical()
	if err != nil {
		return prepared{}, err
	}
	fp := fingerprintOf(canonical)
	// Build the request once before anything is recorded, so that an
	// adapter's refusal (a missing field) is a validation error, not an
	// attempt journaled and never sent.
	if _, err := c.cfg.Provider.NewRequest(context.Background(), SendRequest{OperationID: opID, Key: opID, Request: req}); err != nil {
		return prepared{}, invalid("request", "%v", err)
	}
	return prepared{req: req, id: id, opID: opID, canonical: canonical, fp: fp}, nil
}

func (c *Client) newOperation(p prepared) ledger.NewOperation {
	return ledger.NewOperation{
		ID: p.opID, Key: p.opID, Provider: p.id.Provider, Kind: string(p.id.Kind),
		References: p.id.References, Fingerprint: p.fp, Request: p.canonical, KeyTTL: c.info.KeyTTLFor(p.id.Kind),
		PaymentRef: p.req.PaymentRef,
	}
}

// do runs one synchronous call of kind under its span: build its request,
// record, send, and settle as far as the retry policy allows.
func (c *Client) do(ctx context.Context, kind Kind, build func(context.Context) (Request, error)) (res Result, err error) {
	ctx, call := c.tel.startCall(ctx, kind, c.cfg.Now())
	defer func() { call.end(ctx, c.cfg.Now(), res, err) }()
	p, err := c.prepare(ctx, build)
	if err != nil {
		return Result{}, err
	}
	owner := c.nextOwner()
	now := c.cfg.Now()
	// With the breaker refusing, the operation is recorded (pending, for
	// background work) but no attempt is journaled: drive releases it.
	br, err := c.cfg.Store.Begin(ctx, ledger.BeginParams{
		Op: c.newOperation(p), Owner: owner, Now: now, LeaseUntil: now.Add(c.cfg.LeaseDuration), StartAttempt: !c.http.breakerRefuses(),
	})
	switch {
	case errors.Is(err, ErrFingerprintMismatch):
		// The ledger's error is ErrFingerprintMismatch and says it all.
		return Result{OperationID: p.opID, Provider: p.id.Provider, Kind: p.id.Kind}, err
	case errors.Is(err, ErrInProgress):
		r := ResultOf(br.Op)
		r.Status = ResultInProgress
		return r, ErrInProgress
	case err != nil:
		// Rule 2: if the journal write fails, nothing is sent.
		return Result{}, fmt.Errorf("payonce: recording the operation failed, nothing was sent: %w", err)
	}
	if !br.Claimed {
		r := ResultOf(br.Op)
		r.Replayed = true
		return r, errorOf(br.Op, c.cfg.Provider.Name())
	}
	if br.Attempt != nil {
		// An attempt is started only for an operation that was new or
		// pending (an unknown one must be looked up first).
		from := ledger.StatusPending
		if br.Created {
			from = "" // counted as "new"
		}
		c.tel.moved(ctx, br.Op.Kind, from, br.Op.Status, br.Op.ReviewCode)
	}
	return c.drive(ctx, &run{op: br.Op, att: br.Attempt, owner: owner, req: p.req})
}

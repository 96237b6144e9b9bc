package payonce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/semconv"
)

// Webhooks are the provider's own account of what happened: the receiving
// half of the idempotency pattern. Every event is verified by the adapter,
// recorded once in the ledger's inbox (insert-or-nothing on the provider's
// event identity) in the same transaction that applies it, and applied by
// the ledger's state rules (ledgerdriver.ApplyWebhook). An event never causes a
// request to be sent.

// WebhookParser is implemented by adapters whose provider pushes events.
// ParseWebhook verifies one delivery (signature, credentials or source
// address) and returns its events. It must not accept anything it cannot
// verify: an error wrapping ErrWebhookUnauthenticated (bad or missing
// signature or credentials) or ErrWebhookMalformed (a body that is not the
// provider's event format) makes the handler answer 4xx and record nothing.
// body is the raw request body, already read (at most MaxWebhookBytes); r is
// the request, for its headers and remote address (its Body is consumed).
// A delivery may hold several events (Adyen sends batches).
//
// An event that verifies but that the adapter cannot read (a field missing
// or out of range) is returned, not refused: as a WebhookEvent with
// Unreadable set (why), an ID derived from what verified (so that its
// redelivery is a duplicate), a Type and no Targets. The handler records it
// and acknowledges the delivery with the rest of its events. Why not
// refuse it: a refused delivery is delivered again, and a provider that
// redelivers in order (Adyen's per-endpoint queue, one delivery at a time,
// for up to 30 days) would hold every later event of the endpoint behind
// it; one bad item of a batch would also hold back the good ones. Only what
// does not verify is refused.
type WebhookParser interface {
	ParseWebhook(r *http.Request, body []byte) ([]WebhookEvent, error)
}

// Errors a WebhookParser returns (wrapped, with what was wrong).
var (
	// ErrWebhookUnauthenticated: the signature, credentials or source
	// address do not verify. The handler answers 401 for credentials (HTTP
	// basic auth) and 400 otherwise, and records nothing.
	ErrWebhookUnauthenticated = errors.New("payonce: webhook not authenticated")
	// ErrWebhookForbidden: the delivery comes from an address the provider
	// does not send from. The handler answers 403 and records nothing.
	ErrWebhookForbidden = errors.New("payonce: webhook source not allowed")
	// ErrWebhookCredentials: HTTP basic auth is missing or wrong. The handler
	// answers 401. It wraps ErrWebhookUnauthenticated.
	ErrWebhookCredentials = fmt.Errorf("%w: credentials", ErrWebhookUnauthenticated)
	// ErrWebhookMalformed: the body is not an event of the provider's. The
	// handler answers 400 and records nothing.
	ErrWebhookMalformed = errors.New("payonce: webhook malformed")
	// ErrWebhookTooOld: the event occurred longer ago than the ledger keeps
	// inbox entries (Config.InboxRetention), so its entry may be gone and
	// it would apply again: a replay, since no provider redelivers that
	// late. Client.RecordWebhook returns it; the handler answers 400 and
	// records nothing.
	ErrWebhookTooOld = errors.New("payonce: webhook event older than the inbox retention")
)

// WebhookEvent is one verified provider event, as an adapter reads it.
type WebhookEvent struct {
	// ID is the provider's event identity: its event id (Stripe and
	// Checkout.com evt_...), or, where the provider has none, an identity
	// the adapter derives from the event and documents. Redeliveries and
	// replays of one event carry the same ID, so they are recorded once.
	ID string
	// Type is the provider's event type.
	Type string
	// OccurredAt is when the provider says it happened; zero when unknown.
	OccurredAt time.Time
	// Targets are the operations the event speaks of. An event about
	// nothing payonce sends (e.g. a customer update) has none; it is still
	// recorded and acknowledged.
	Targets []WebhookTarget
	// Unreadable, when set, marks an event that verified but that the
	// adapter could not read, and says why (no secrets, no body). It has
	// no Targets and changes no operation: it is recorded with the
	// disposition ledger.WebhookUnreadable, acknowledged, and listed for an
	// operator (payonce webhooks list --disposition unreadable), who reads
	// the event in the provider's dashboard.
	Unreadable string
}

// WebhookTarget is what an event says about one object.
type WebhookTarget struct {
	// Kind is the operation kind the object belongs to.
	Kind Kind
	// OperationID is payonce's operation id when the object carries it
	// (metadata, reference); ProviderRef the object's id at the provider;
	// PaymentRef the payment it belongs to (capture, cancel, refund). The
	// ledger finds the operation by the first of them that is set and
	// matches.
	OperationID string
	ProviderRef string
	PaymentRef  string
	// Key is the idempotency key the object carries, as payonce wrote it
	// (metadata payonce_key); empty when the provider does not echo it.
	// It tells which key generation of the operation the object belongs
	// to: an event about an earlier generation's object never settles the
	// current one.
	Key string
	// Amount (minor units) and Currency are the object's own, when the
	// event carries them: the same fields the adapter's lookup checks with
	// adapterkit.Belongs. An object whose amount or currency is not the
	// operation's is a contradiction (review), never a settlement. Zero
	// and empty mean "not given".
	Amount   int64
	Currency string
	// State is what the event says: LookupSucceeded, LookupFailed or
	// LookupProcessing, read by the adapter's state rules (the same table
	// its lookups use).
	State LookupState
	// Reversal marks an event that undoes an outcome reported as a success
	// before: a refund that failed after it succeeded, a failed capture, a
	// reversed refund, a chargeback.
	Reversal bool
	// LookupOnly marks a notice the adapter cannot verify (YooKassa signs
	// nothing): it only makes the operation due for a status lookup.
	LookupOnly bool
	// Code, DeclineCode and Message are the provider's, secrets scrubbed.
	Code        string
	DeclineCode string
	Message     string
}

// MaxWebhookBytes bounds a webhook delivery's body. Providers' events are a
// few kilobytes; Adyen batches at most a few items.
const MaxWebhookBytes = 1 << 20

// WebhookOptions configure Client.WebhookHandler. Zero values take the
// defaults.
type WebhookOptions struct {
	// MaxConcurrent bounds deliveries verified and recorded at once
	// (default 32); more wait up to Timeout for a slot, then get 503 so the
	// provider delivers again later. A delivery takes a slot only once its
	// body is read: a client that sends its body slowly, or never, holds
	// none.
	MaxConcurrent int
	// Timeout bounds one delivery, reading the body and recording its
	// events (default 8 s: Adyen waits 10 s for an answer). A body not
	// read by then gets 408: the handler moves the connection's read
	// deadline to now (http.ResponseController), which ends a read blocked
	// on a client that stopped sending.
	Timeout time.Duration
	// OnEvent, when set, is called after each event is recorded, with what
	// recording it did (best-effort: for metrics and alerts; it must not
	// block).
	OnEvent func(WebhookEvent, ledger.WebhookReport)
}

// WebhookHandler returns the http.Handler that receives the provider's
// webhooks (mount it on any router, POST only). It answers:
//   - 200 once every event of the delivery is durably recorded (or was
//     already: duplicates are acknowledged and change nothing), unreadable
//     ones included (see WebhookParser);
//   - 400 for a body that does not verify or parse, 401 for wrong
//     credentials, 403 for a source the provider does not send from; nothing
//     is recorded;
//   - 503 when the ledger is unavailable or the handler is saturated, so
//     that the provider delivers again;
//   - 405 for anything but POST, 413 for a body over MaxWebhookBytes, 408
//     for a body not read within Timeout.
//
// It fails when the client's adapter does not implement WebhookParser. It
// logs event ids and types, never bodies or headers.
func (c *Client) WebhookHandler(opts WebhookOptions) (http.Handler, error) {
	parser, ok := c.cfg.Provider.(WebhookParser)
	if !ok {
		return nil, invalid("Provider", "%s's adapter does not receive webhooks (it does not implement payonce.WebhookParser)", c.cfg.Provider.Name())
	}
	if opts.MaxConcurrent < 0 {
		return nil, invalid("MaxConcurrent", "must be >= 0 (0 means 32), got %d", opts.MaxConcurrent)
	}
	if opts.Timeout < 0 {
		return nil, invalid("Timeout", "must be >= 0 (0 means 8s), got %s", opts.Timeout)
	}
	if opts.MaxConcurrent == 0 {
		opts.MaxConcurrent = 32
	}
	if opts.Timeout == 0 {
		opts.Timeout = 8 * time.Second
	}
	return &webhookHandler{c: c, parser: parser, opts: opts, slots: make(chan struct{}, opts.MaxConcurrent)}, nil
}

type webhookHandler struct {
	c      *Client
	parser WebhookParser
	opts   WebhookOptions
	slots  chan struct{}
}

func (h *webhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.Timeout)
	defer cancel()
	// The body is read before a slot is taken, within Timeout. Why before:
	// the endpoint faces the internet, and anyone can open connections that
	// send headers and then their body slowly or never; were the slot taken
	// first, a few such connections would hold every slot and each genuine
	// delivery would get 503 (and Adyen would queue every later event
	// behind it). Reading needs no ledger connection, and the body is at
	// most MaxWebhookBytes, bought byte by byte by the sender.
	body, err := readWebhookBody(ctx, w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			h.c.tel.webhook(ctx, semconv.WebhookResultTooLarge, ledger.WebhookReport{})
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			h.c.tel.webhook(ctx, semconv.WebhookResultTimeout, ledger.WebhookReport{})
			http.Error(w, "body not received in time", http.StatusRequestTimeout)
		default:
			h.c.tel.webhook(ctx, semconv.WebhookResultUnreadable, ledger.WebhookReport{})
			http.Error(w, "could not read the body", http.StatusBadRequest)
		}
		return
	}
	// Bounded concurrency: a flood must not exhaust the ledger's
	// connections. A provider whose delivery gets 503 delivers again.
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-ctx.Done():
		h.c.tel.webhook(ctx, semconv.WebhookResultBusy, ledger.WebhookReport{})
		w.Header().Set("Retry-After", "5")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	log := h.c.cfg.Logger.With("provider", h.c.cfg.Provider.Name())
	events, err := h.parser.ParseWebhook(r, body)
	if err != nil {
		status := webhookRejectStatus(err)
		h.c.tel.webhook(ctx, webhookRejectResult(status), ledger.WebhookReport{})
		log.Warn("payonce: webhook rejected", "status", status, "err", err)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "5")
		}
		http.Error(w, http.StatusText(status), status)
		return
	}
	for _, ev := range events {
		ev, rep, err := h.c.recordWebhook(ctx, ev)
		if errors.Is(err, ErrWebhookTooOld) {
			log.Warn("payonce: webhook rejected", "status", http.StatusBadRequest, "event_id", ev.ID, "type", ev.Type, "err", err)
			http.Error(w, "event older than the inbox retention", http.StatusBadRequest)
			return
		}
		if err != nil {
			// Not recorded: the provider must deliver again. The events
			// recorded before this one are duplicates next time. Warn, not
			// Error: a ledger restart is a fault the design expects, and the
			// redelivery is the recovery.
			log.Warn("payonce: webhook not recorded; the provider will deliver it again",
				"event_id", ev.ID, "type", ev.Type, "err", err)
			w.Header().Set("Retry-After", "5")
			http.Error(w, "ledger unavailable", http.StatusServiceUnavailable)
			return
		}
		logWebhook(log, ev, rep)
		if h.opts.OnEvent != nil {
			h.opts.OnEvent(ev, rep)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// Any 2xx accepts a delivery; "[accepted]" is what Adyen's older
	// integrations expect and harmless for the others.
	_, _ = io.WriteString(w, "[accepted]")
}

// readWebhookBody reads r's body, at most MaxWebhookBytes, until ctx ends.
// When ctx ends first, the connection's read deadline is moved to now,
// which ends a Read blocked on a client that stopped sending; only then,
// because a deadline set up front would replace the one the server set
// from its own ReadTimeout, and could extend it. (The deadline is the
// network's, on the wall clock: Config.Now does not apply.) Where the
// ResponseWriter cannot set deadlines the read is not cut short, but it
// holds no slot either.
func readWebhookBody(ctx context.Context, w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	cut := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(cut)
		_ = rc.SetReadDeadline(time.Now())
	})
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBytes))
	if !stop() {
		// The deadline is being cut: wait, so that it is not moved after
		// the handler returns and the server reuses the connection.
		<-cut
	}
	return body, err
}

func webhookRejectStatus(err error) int {
	switch {
	case errors.Is(err, ErrWebhookCredentials):
		return http.StatusUnauthorized
	case errors.Is(err, ErrWebhookForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrProviderUnavailable):
		// The adapter could not ask the provider what it needs to verify
		// or read the event (PayPal: the verification call, the re-read
		// of the event's object): nothing is wrong with the delivery, the
		// provider delivers it again.
		return http.StatusServiceUnavailable
	default:
		return http.StatusBadRequest
	}
}

// webhookRejectResult is the payonce.webhooks result of a delivery
// rejected with status.
func webhookRejectResult(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return semconv.WebhookResultUnauthorized
	case http.StatusForbidden:
		return semconv.WebhookResultForbidden
	case http.StatusServiceUnavailable:
		return semconv.WebhookResultUnavailable
	}
	return semconv.WebhookResultInvalid
}

func logWebhook(log *slog.Logger, ev WebhookEvent, rep ledger.WebhookReport) {
	if rep.Duplicate {
		log.Debug("payonce: webhook duplicate", "event_id", ev.ID, "type", ev.Type)
		return
	}
	if ev.Unreadable != "" {
		// Acknowledged without being applied: an operator must read it in
		// the provider's dashboard.
		log.Warn("payonce: webhook verified but unreadable; recorded for an operator (payonce webhooks list --disposition unreadable)",
			"event_id", ev.ID, "type", ev.Type, "reason", ev.Unreadable)
		return
	}
	for _, o := range rep.Outcomes {
		level := slog.LevelDebug
		if webhookNeedsPerson(o) {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "payonce: webhook", "event_id", ev.ID, "type", ev.Type,
			semconv.LogKeyOperation, o.OperationID, "disposition", o.Disposition, "from", o.From, "to", o.To)
	}
}

// webhookNeedsPerson says whether what an event did to one operation needs
// a person, and so is logged at Warn; every other outcome is logged at
// Debug. Most events are routine: an event settles or confirms what the
// ledger holds, or names an object payonce did not create (a Stripe
// payment_intent.succeeded also names the intent's cancel target, which
// matches no operation: "unmatched" is normal). An ambiguous event only
// makes its operations due for a lookup, which settles them; an event of
// a cleaned-up operation that agrees with its tombstone changes nothing.
// A person is needed when the event contradicted a settled outcome (the
// operation, or one reopened from its tombstone, went to review), when an
// object that is not the current one succeeded (money may have moved
// twice), or when it moved the operation to review any other way.
func webhookNeedsPerson(o ledger.WebhookOutcome) bool {
	switch o.Disposition {
	case ledger.WebhookContradiction, ledger.WebhookDuplicate:
		return true
	}
	return o.To == ledger.StatusManualReview && o.From != ledger.StatusManualReview
}

// RecordWebhook records one verified event in the ledger's inbox and applies
// it, in one transaction (ledger.Store.RecordWebhook). It is what the
// handler does for each event; call it yourself when events reach the
// service another way (a queue, the provider's event list after an outage).
// The event must have been verified: RecordWebhook trusts it. An event
// that occurred longer ago than Config.InboxRetention is refused with
// ErrWebhookTooOld and nothing is recorded. An event the ledger refuses as
// invalid (ledger.ErrInvalid: a field it cannot store) is recorded as
// unreadable instead (see WebhookEvent.Unreadable), so that a verified
// event is never refused over and over.
func (c *Client) RecordWebhook(ctx context.Context, ev WebhookEvent) (ledger.WebhookReport, error) {
	_, rep, err := c.recordWebhook(ctx, ev)
	return rep, err
}

// recordWebhook is RecordWebhook, returning the event as it was recorded
// (unreadable, when the ledger refused it as it was).
func (c *Client) recordWebhook(ctx context.Context, ev WebhookEvent) (WebhookEvent, ledger.WebhookReport, error) {
	if err := c.checkWebhookAge(ev); err != nil {
		c.tel.webhook(ctx, semconv.WebhookResultInvalid, ledger.WebhookReport{})
		return ev, ledger.WebhookReport{}, err
	}
	le, rep, err := c.storeWebhook(ctx, ev)
	if err != nil && ev.Unreadable == "" && errors.Is(err, ledger.ErrInvalid) {
		// A verified event the ledger cannot store would be refused on
		// every redelivery (and Adyen would hold the endpoint's later
		// events behind it for 30 days): record that it came, and why it
		// could not be read, for an operator.
		ev = unreadableWebhook(ev, err)
		le, rep, err = c.storeWebhook(ctx, ev)
	}
	c.webhookRecorded(ctx, le, rep, err)
	return ev, rep, err
}

// storeWebhook records ev in the ledger.
func (c *Client) storeWebhook(ctx context.Context, ev WebhookEvent) (ledger.WebhookEvent, ledger.WebhookReport, error) {
	le := ledger.WebhookEvent{Provider: c.cfg.Provider.Name(), ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt,
		Unreadable: ev.Unreadable}
	for _, t := range ev.Targets {
		le.Targets = append(le.Targets, c.webhookTarget(ev, t))
	}
	rctx, cancel := recordCtx(ctx)
	defer cancel()
	rep, err := c.cfg.Store.RecordWebhook(rctx, ledger.RecordWebhookParams{Event: le, Now: c.cfg.Now()})
	return le, rep, err
}

// unreadableWebhook is ev, which the ledger refused with err, as an
// unreadable event: its ID and Type where the ledger can store them (a
// redelivery is then a duplicate of it), else ones derived from them.
func unreadableWebhook(ev WebhookEvent, err error) WebhookEvent {
	u := WebhookEvent{ID: ev.ID, Type: ev.Type, OccurredAt: ev.OccurredAt,
		Unreadable: truncate("the ledger cannot store the event as the adapter read it: "+err.Error(), 1000)}
	if !storableText(ev.ID) || len(ev.ID) > ledger.MaxWebhookIDBytes {
		sum := sha256.Sum256([]byte(ev.ID))
		u.ID = "sha256:" + hex.EncodeToString(sum[:])
	}
	if !storableText(ev.Type) {
		u.Type = "unreadable"
	}
	return u
}

// storableText reports whether the ledger can store s as an identity:
// non-empty, UTF-8, no NUL byte.
func storableText(s string) bool {
	return s != "" && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// checkWebhookAge refuses an event the provider says occurred before the
// ledger's inbox retention (less ClockSkew: the provider's clock may run
// ahead of ours) began: its inbox entry, which makes every later delivery a
// duplicate, may have been deleted by Cleanup. No provider redelivers that
// late (New checks InboxRetention against ProviderInfo.WebhookRedelivery),
// so such a delivery is a replay, and Checkout.com and Adyen sign no
// timestamp that would expose it. Checkout.com signs the whole body,
// created_on included (providers/checkout/webhook.go); Adyen's HMAC leaves
// eventDate out (providers/adyen/webhook.go SignedData;
// https://docs.adyen.com/development-resources/webhooks/verify-hmac-signatures/),
// so this stops a replay of an Adyen delivery only when it is sent as it
// was captured. An event without a time (OccurredAt zero) cannot be judged
// and is recorded.
func (c *Client) checkWebhookAge(ev WebhookEvent) error {
	if ev.OccurredAt.IsZero() {
		return nil
	}
	window := c.cfg.InboxRetention - c.cfg.ClockSkew
	if oldest := c.cfg.Now().Add(-window); ev.OccurredAt.Before(oldest) {
		return fmt.Errorf("%w: event %q (%s) occurred at %s, more than %v ago (Config.InboxRetention %v less ClockSkew %v): "+
			"its inbox entry may be gone, so it would apply again; no provider redelivers that late, so it is refused and nothing is recorded",
			ErrWebhookTooOld, ev.ID, ev.Type, ev.OccurredAt.UTC().Format(time.RFC3339), window, c.cfg.InboxRetention, c.cfg.ClockSkew)
	}
	return nil
}

// webhookRecorded counts one event RecordWebhook handled and the status
// changes it made (a duplicate made none).
func (c *Client) webhookRecorded(ctx context.Context, le ledger.WebhookEvent, rep ledger.WebhookReport, err error) {
	switch {
	case err != nil:
		c.tel.webhook(ctx, semconv.WebhookResultUnavailable, ledger.WebhookReport{})
		return
	case rep.Duplicate:
		c.tel.webhook(ctx, semconv.WebhookResultDuplicate, rep)
		return
	case le.Unreadable != "":
		c.tel.webhook(ctx, semconv.WebhookResultRecordedUnreadable, rep)
		return
	}
	c.tel.webhook(ctx, semconv.WebhookResultRecorded, rep)
	for _, o := range rep.Outcomes {
		if o.Target >= 0 && o.Target < len(le.Targets) {
			// The review code the event gave, for payonce.reviews: a
			// second object is a duplicate, not a contradiction.
			code := ledger.ReviewCodeWebhookContradiction
			if o.Disposition == ledger.WebhookDuplicate {
				code = ledger.ReviewCodeDuplicated
			}
			c.tel.moved(ctx, le.Targets[o.Target].Kind, o.From, o.To, code)
		}
	}
}

// webhookTarget turns an adapter's target into the ledger's: the effect by
// the same reading a lookup gets, and the result recorded if it settles.
func (c *Client) webhookTarget(ev WebhookEvent, t WebhookTarget) ledger.WebhookTarget {
	lt := ledger.WebhookTarget{Kind: string(t.Kind), OperationID: t.OperationID, ProviderRef: t.ProviderRef,
		PaymentRef: t.PaymentRef, Key: t.Key, Amount: t.Amount, Currency: t.Currency, Effect: webhookEffect(t)}
	if lt.Effect == ledger.EffectSucceeded || lt.Effect == ledger.EffectFailed || lt.Effect == ledger.EffectReversed {
		lt.Result = encodeResult(Outcome{ProviderRef: t.ProviderRef, Code: t.Code, DeclineCode: t.DeclineCode, Message: t.Message})
	}
	detail := t.Code
	if t.DeclineCode != "" {
		detail += "/" + t.DeclineCode
	}
	if t.Message != "" {
		if detail != "" {
			detail += ": "
		}
		detail += t.Message
	}
	lt.Detail = truncate(detail, 500)
	return lt
}

// webhookEffect maps what an adapter read to the ledger's effect. A state
// it does not know changes nothing (processing), so a new provider state
// can never settle an operation by accident.
func webhookEffect(t WebhookTarget) ledger.WebhookEffect {
	switch {
	case t.LookupOnly:
		return ledger.EffectLookup
	case t.Reversal:
		return ledger.EffectReversed
	case t.State == LookupSucceeded:
		return ledger.EffectSucceeded
	case t.State == LookupFailed:
		return ledger.EffectFailed
	default:
		return ledger.EffectProcessing
	}
}

package payonce_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/semconv"
)

// logCapture is a slog.Handler that keeps every record, at every level,
// with its attributes (those of WithAttrs included) flattened by key.
type logCapture struct {
	mu    *sync.Mutex
	recs  *[]logRecord
	attrs []slog.Attr
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func newLogCapture() (*slog.Logger, *logCapture) {
	h := &logCapture{mu: &sync.Mutex{}, recs: &[]logRecord{}}
	return slog.New(h), h
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.recs = append(*h.recs, rec)
	return nil
}

func (h *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCapture{mu: h.mu, recs: h.recs, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *logCapture) WithGroup(string) slog.Handler { return h }

// records returns the records kept so far.
func (h *logCapture) records() []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.recs)
}

// withMessage returns the records with message msg.
func (h *logCapture) withMessage(msg string) []logRecord {
	var out []logRecord
	for _, r := range h.records() {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// requireNoError fails on any record at ERROR or above.
func (h *logCapture) requireNoError(t *testing.T) {
	t.Helper()
	for _, r := range h.records() {
		require.Less(t, r.level, slog.LevelError, "an expected fault logged at %v: %q %v", r.level, r.msg, r.attrs)
	}
}

const retryMsg = "payonce: retrying transmission"

// Faults the design expects, on a send that never connects (dial retries)
// and on lookups that fail (read retries), log nothing at ERROR, and every
// retry names its operation.
func TestExpectedFaultsLogQuietly(t *testing.T) {
	t.Parallel()
	log, logs := newLogCapture()
	withLog := func(c *payonce.Config) {
		c.Logger = log
		c.Breaker.ConsecutiveFailures = 1000 // about the logs, not the breaker
	}

	t.Run("lookups fail", func(t *testing.T) {
		b := setup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{FaultGETs: true}}, config: withLog})
		res := chargeLostWhileLookupsFail(t, b, charge("order-logs-lookup", 1500), 3)
		r := newReconciler(t, b, func(rc *payonce.ReconcilerConfig) { rc.Logger = log })
		b.clock.Advance(time.Hour)
		drain(t, b, r, time.Hour)
		op, _ := attemptsOf(t, b, res.OperationID)
		require.Equal(t, ledger.StatusSucceeded, op.Status)

		retries := 0
		for _, rec := range logs.withMessage(retryMsg) {
			require.Equal(t, slog.LevelDebug, rec.level)
			if rec.attrs[semconv.LogKeyOperation] == res.OperationID {
				retries++
			}
		}
		require.Positive(t, retries, "the failing lookups were retried, and their retries name the operation")
	})

	t.Run("dial refused", func(t *testing.T) {
		// Port 1 on loopback: nothing listens, every dial is refused.
		b := setup(t, setupOpts{config: withLog, baseURL: "http://127.0.0.1:1"})
		res, err := b.client.Charge(b.ctx, charge("order-logs-dial", 1600))
		require.ErrorIs(t, err, payonce.ErrProviderUnavailable)
		dials := 0
		for _, rec := range logs.withMessage(retryMsg) {
			if rec.attrs[semconv.LogKeyOperation] == res.OperationID && rec.attrs["method"] == "POST" {
				dials++
			}
		}
		require.Positive(t, dials, "a refused dial is retried within the attempt, and the retry names the operation")
	})

	t.Run("ledger down", func(t *testing.T) {
		b := setup(t, setupOpts{config: withLog})
		ctx, cancel := context.WithCancel(b.ctx)
		defer cancel()
		down := &claimFailing{Store: b.store, after: func(n int) {
			if n == 2 {
				cancel()
			}
		}}
		r := newReconciler(t, b, func(rc *payonce.ReconcilerConfig) {
			rc.Store, rc.Logger, rc.Interval, rc.StatsInterval = down, log, time.Millisecond, -1
		})
		require.NoError(t, r.Run(ctx), "a ledger that is down is retried, and the stop is normal")
		failed := logs.withMessage("payonce: reconcile pass failed; retrying after the interval")
		require.NotEmpty(t, failed)
		for _, rec := range failed {
			require.Equal(t, slog.LevelWarn, rec.level)
		}
	})

	logs.requireNoError(t)
	for _, rec := range logs.records() {
		require.NotContains(t, rec.msg, "request failed", "go-retryablehttp's own records are not passed on")
	}
}

// claimFailing is a ledger whose ClaimDue fails, as when the database is
// unreachable; after is called with the count of failed claims.
type claimFailing struct {
	ledger.Store
	mu    sync.Mutex
	n     int
	after func(n int)
}

func (s *claimFailing) ClaimDue(context.Context, ledger.ClaimDueParams) ([]ledger.Operation, error) {
	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	s.after(n)
	return nil, errors.New("connection refused (test)")
}

// Entering review is a Warn record naming the operation and the reason;
// the state changes on the way are Debug.
func TestReviewLogsWarnWithOperation(t *testing.T) {
	t.Parallel()
	log, logs := newLogCapture()
	b := setup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{FaultGETs: true}}, config: func(c *payonce.Config) {
		c.Logger = log
		c.Breaker.ConsecutiveFailures = 1000
	}})
	res := chargeLostWhileLookupsFail(t, b, charge("order-logs-review", 1700), 200)
	r := newReconciler(t, b, nil)
	b.clock.Advance(25 * time.Hour)
	_, err := r.RunOnce(b.ctx)
	require.NoError(t, err)
	op, _ := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusManualReview, op.Status)

	var review []logRecord
	for _, rec := range logs.records() {
		if rec.level >= slog.LevelWarn && rec.attrs["reason"] != "" {
			review = append(review, rec)
		}
	}
	require.Len(t, review, 1, "one Warn record for entering review")
	require.Equal(t, slog.LevelWarn, review[0].level)
	require.Equal(t, res.OperationID, review[0].attrs[semconv.LogKeyOperation])
	require.Equal(t, payonce.ReasonWindowPassed, review[0].attrs["reason"])

	changes := logs.withMessage("payonce: operation state changed")
	require.NotEmpty(t, changes)
	for _, rec := range changes {
		require.Equal(t, slog.LevelDebug, rec.level)
		require.Equal(t, res.OperationID, rec.attrs[semconv.LogKeyOperation])
	}
	logs.requireNoError(t)
}

const (
	webhookMsg = "payonce: webhook"
	passMsg    = "payonce: reconcile pass"
)

// signedStripeEvent is a Stripe event of type typ about object, signed
// with secret at now, as a request to a webhook handler.
func signedStripeEvent(secret, id, typ, object string, now time.Time) *http.Request {
	body := `{"id":"` + id + `","object":"event","type":"` + typ + `","created":` + strconv.FormatInt(now.Unix(), 10) +
		`,"data":{"object":` + object + `}}`
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "%d.%s", now.Unix(), body)
	r := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(body))
	r.Header.Set("Stripe-Signature", fmt.Sprintf("t=%d,v1=%s", now.Unix(), hex.EncodeToString(mac.Sum(nil))))
	return r
}

// A webhook is logged above Debug only when a person must look. Stripe's
// payment_intent.succeeded of a charge payonce made names two objects:
// the charge (confirmed: the call had settled it) and the intent's cancel
// target, which no operation is (unmatched, with no operation id). Both are
// routine: Debug. A dispute of the same charge contradicts its recorded
// success and sends it to review: Warn, naming the operation.
func TestWebhookLogsWarnOnlyWhenAPersonMustLook(t *testing.T) {
	t.Parallel()
	log, logs := newLogCapture()
	const secret = "whsec_logs"
	b := setup(t, setupOpts{})
	psp, err := stripe.New(stripe.Config{APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), WebhookSecret: secret, Now: b.clock.Now})
	require.NoError(t, err)
	cfg := providertest.ClientConfig(psp, b.store, b.clock.Now)
	cfg.Logger = log
	client, err := payonce.New(cfg)
	require.NoError(t, err)
	res, err := client.Charge(b.ctx, charge("order-logs-webhook", 1800))
	require.NoError(t, err)
	h, err := client.WebhookHandler(payonce.WebhookOptions{})
	require.NoError(t, err)
	post := func(id, typ, object string) {
		t.Helper()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signedStripeEvent(secret, id, typ, object, b.clock.Now()))
		require.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
	}

	intent := `{"id":"` + res.ProviderRef + `","object":"payment_intent","amount":1800,"currency":"usd","status":"succeeded",` +
		`"amount_received":1800,"capture_method":"automatic","metadata":{"` + stripe.MetaOperation + `":"` + res.OperationID +
		`","` + stripe.MetaKind + `":"charge","` + stripe.MetaKey + `":"` + res.Key + `"}}`
	post("evt_logs_succeeded", "payment_intent.succeeded", intent)
	got := map[ledger.WebhookDisposition]string{}
	for _, rec := range logs.withMessage(webhookMsg) {
		require.Equal(t, slog.LevelDebug, rec.level, "a routine event is logged at Debug: %v", rec.attrs)
		got[ledger.WebhookDisposition(rec.attrs["disposition"])] = rec.attrs[semconv.LogKeyOperation]
	}
	require.Equal(t, map[ledger.WebhookDisposition]string{ledger.WebhookConfirmed: res.OperationID, ledger.WebhookUnmatched: ""}, got,
		"the charge confirmed, the intent's cancel target unmatched")
	for _, rec := range logs.records() {
		require.Less(t, rec.level, slog.LevelInfo, "nothing above Debug for a routine event: %q %v", rec.msg, rec.attrs)
	}

	post("evt_logs_dispute", "charge.dispute.created", `{"id":"dp_logs","object":"dispute","reason":"fraudulent",`+
		`"status":"needs_response","payment_intent":"`+res.ProviderRef+`"}`)
	var warned []logRecord
	for _, rec := range logs.withMessage(webhookMsg) {
		if rec.level >= slog.LevelInfo {
			warned = append(warned, rec)
		}
	}
	require.Len(t, warned, 1, "the contradiction, once")
	require.Equal(t, slog.LevelWarn, warned[0].level)
	require.Equal(t, string(ledger.WebhookContradiction), warned[0].attrs["disposition"])
	require.Equal(t, res.OperationID, warned[0].attrs[semconv.LogKeyOperation])
	require.Equal(t, string(ledger.StatusManualReview), warned[0].attrs["to"])
	logs.requireNoError(t)
}

// A reconcile pass is logged at Info only when it changed something: an
// idle pass logs nothing, a pass whose lookups fail logs Debug (each
// failed lookup has its own Warn), the pass that settles the operation
// logs Info with what changed.
func TestReconcilePassLogsInfoOnlyWhenItChangedSomething(t *testing.T) {
	t.Parallel()
	log, logs := newLogCapture()
	b := setup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{FaultGETs: true}}, config: func(c *payonce.Config) {
		c.Breaker.ConsecutiveFailures = 1000
	}})
	var stop context.CancelFunc
	r := newReconciler(t, b, func(rc *payonce.ReconcilerConfig) {
		rc.Logger = log
		rc.StatsInterval = -1
		rc.Hooks.OnPass = func(payonce.ReconcileReport) { stop() }
	})
	// pass runs Run for exactly one pass: OnPass stops it.
	pass := func() {
		t.Helper()
		var ctx context.Context
		ctx, stop = context.WithCancel(b.ctx)
		defer stop()
		require.NoError(t, r.Run(ctx))
	}
	atInfo := func() []logRecord {
		var out []logRecord
		for _, rec := range logs.records() {
			if rec.level >= slog.LevelInfo {
				out = append(out, rec)
			}
		}
		return out
	}

	pass()
	require.Empty(t, logs.records(), "an idle pass logs nothing")

	res := chargeLostWhileLookupsFail(t, b, charge("order-logs-pass", 1900), 3)
	b.fake.Script(mocks.Match{Method: "GET"}, slices.Repeat([]mocks.FaultKind{mocks.FaultGatewayBefore502}, 100)...)
	b.clock.Advance(time.Hour)
	pass()
	for _, rec := range atInfo() {
		require.NotEqual(t, passMsg, rec.msg, "a pass whose lookup failed changed nothing: %v", rec.attrs)
	}
	debug := logs.withMessage(passMsg)
	require.Len(t, debug, 1)
	require.Equal(t, slog.LevelDebug, debug[0].level)
	require.Equal(t, "1", debug[0].attrs["claimed"])
	require.Equal(t, "0", debug[0].attrs["changed"])

	b.fake.ClearScripts()
	for range 20 {
		if op, _ := attemptsOf(t, b, res.OperationID); op.Status == ledger.StatusSucceeded {
			break
		}
		b.clock.Advance(time.Hour)
		pass()
	}
	op, _ := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusSucceeded, op.Status)
	var settled []logRecord
	for _, rec := range atInfo() {
		if rec.msg == passMsg {
			settled = append(settled, rec)
		}
	}
	require.Len(t, settled, 1, "one pass changed something")
	require.Equal(t, "1", settled[0].attrs["changed"])
	require.Equal(t, "1", settled[0].attrs["settled"])

	n := len(logs.records())
	pass()
	require.Len(t, logs.records(), n, "an idle pass after it logs nothing")
	logs.requireNoError(t)
}

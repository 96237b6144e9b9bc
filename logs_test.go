package payonce_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
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

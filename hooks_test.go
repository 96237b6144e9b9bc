package payonce_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/providertest"
	"github.com/payonce/payonce/semconv"
)

// hookLog records what hooks were called with, and what the ledger said
// about the operation at that moment.
type hookLog struct {
	mu      sync.Mutex
	settled []payonce.Result
	reviews []string
	codes   []ledger.ReviewCode
	seen    []ledger.Operation // the ledger's record when the hook ran
	passes  []payonce.ReconcileReport
	store   ledger.Store // read by the hooks; set before any call
}

// hooks runs on the hook's own goroutine: assert, not require.
func (h *hookLog) hooks(t *testing.T) payonce.Hooks {
	look := func(ctx context.Context, id string) {
		op, _, err := h.store.Get(ctx, id)
		assert.NoError(t, err)
		h.seen = append(h.seen, op)
	}
	return payonce.Hooks{
		OnSettled: func(ctx context.Context, res payonce.Result) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.settled = append(h.settled, res)
			look(ctx, res.OperationID)
		},
		OnReview: func(ctx context.Context, res payonce.Result) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.reviews = append(h.reviews, res.ReviewReason)
			h.codes = append(h.codes, res.ReviewCode)
			look(ctx, res.OperationID)
		},
	}
}

func TestClientHooksAfterCommit(t *testing.T) {
	t.Parallel()
	eachSetup(t, setupOpts{}, func(t *testing.T, b *bundle) {
		h := &hookLog{store: b.store}
		c := clientWith(t, b, func(cfg *payonce.Config) {
			cfg.Hooks = h.hooks(t)
			cfg.Hooks.OnPass = func(payonce.ReconcileReport) { t.Error("a Client called OnPass") }
		})

		ok, err := c.Charge(b.ctx, charge("order-hook-ok", 1200))
		require.NoError(t, err)
		declined := charge("order-hook-no", 1300)
		declined.PaymentMethod = "pm_card_chargeDeclined"
		no, err := c.Charge(b.ctx, declined)
		require.ErrorIs(t, err, payonce.ErrDeclined)
		// A replay reports what is recorded; nothing changed, nothing fires.
		_, err = c.Charge(b.ctx, charge("order-hook-ok", 1200))
		require.NoError(t, err)

		require.Len(t, h.settled, 2)
		require.Equal(t, ok.OperationID, h.settled[0].OperationID)
		require.Equal(t, payonce.ResultSucceeded, h.settled[0].Status)
		require.NotEmpty(t, h.settled[0].ProviderRef)
		require.Equal(t, no.OperationID, h.settled[1].OperationID)
		require.Equal(t, payonce.ResultFailed, h.settled[1].Status)
		for _, op := range h.seen {
			require.True(t, op.Status.Terminal(), "the hook runs after the ledger commit")
			require.Empty(t, op.LeaseOwner, "and after the lease is given up")
		}
		require.Empty(t, h.reviews)
	})
}

// clientWith is a second client on b's provider, ledger and clock, with
// cfg tweaked.
func clientWith(t *testing.T, b *bundle, tweak func(*payonce.Config)) *payonce.Client {
	t.Helper()
	cfg := providertest.ClientConfig(b.psp, b.store, b.clock.Now)
	tweak(&cfg)
	c, err := payonce.New(cfg)
	require.NoError(t, err)
	return c
}

// Operations the reconciler moves fire the client's hooks and the
// reconciler's: a review with its reason, its later settlement, every pass.
func TestReconcilerHooks(t *testing.T) {
	t.Parallel()
	ch, rh := &hookLog{}, &hookLog{}
	b := setup(t, setupOpts{fake: mocks.StripeOptions{Options: mocks.Options{FaultGETs: true}}, config: func(c *payonce.Config) {
		c.Breaker.ConsecutiveFailures = 1000
		c.Hooks = ch.hooks(t)
	}})
	ch.store, rh.store = b.store, b.store
	res := chargeLostWhileLookupsFail(t, b, charge("order-hook-review", 900), 200)
	require.Empty(t, ch.settled, "unknown is neither settled nor review")
	r := newReconciler(t, b, func(rc *payonce.ReconcilerConfig) {
		rc.Hooks = rh.hooks(t)
		rc.Hooks.OnPass = func(rep payonce.ReconcileReport) {
			rh.mu.Lock()
			defer rh.mu.Unlock()
			rh.passes = append(rh.passes, rep)
		}
	})

	b.clock.Advance(25 * time.Hour)
	rep, err := r.RunOnce(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Transitions["unknown->manual_review"])
	for _, h := range []*hookLog{ch, rh} {
		require.Equal(t, []string{payonce.ReasonWindowPassed}, h.reviews)
		require.Equal(t, []ledger.ReviewCode{ledger.ReviewCodeWindowPassed}, h.codes)
		require.Equal(t, ledger.StatusManualReview, h.seen[0].Status)
		require.Empty(t, h.seen[0].LeaseOwner)
	}
	require.Len(t, rh.passes, 1)
	require.Equal(t, rep.Claimed, rh.passes[0].Claimed)
	rep.Transitions["mutated by the caller"] = 1
	require.NotContains(t, rh.passes[0].Transitions, "mutated by the caller", "OnPass has its own copy")

	b.fake.ClearScripts()
	b.clock.Advance(2 * time.Hour)
	_, err = r.RunOnce(b.ctx)
	require.NoError(t, err)
	for _, h := range []*hookLog{ch, rh} {
		require.Len(t, h.settled, 1)
		require.Equal(t, res.OperationID, h.settled[0].OperationID)
		require.Equal(t, payonce.ResultSucceeded, h.settled[0].Status)
	}
	require.Len(t, rh.passes, 2)
}

// A hook that panics or blocks does not change the call's answer, and the
// call waits for it no longer than Hooks.Timeout.
func TestHooksContained(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	log, logs := newLogCapture()
	panicking := clientWith(t, b, func(cfg *payonce.Config) {
		cfg.Logger = log
		cfg.Hooks.OnSettled = func(context.Context, payonce.Result) { panic("hook bug (test)") }
	})
	res, err := panicking.Charge(b.ctx, charge("order-hook-panic", 500))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	panics := logs.withMessage("payonce: hook panicked")
	require.Len(t, panics, 1)
	require.Equal(t, slog.LevelError, panics[0].level)
	require.Equal(t, res.OperationID, panics[0].attrs[semconv.LogKeyOperation])
	require.Contains(t, panics[0].attrs["panic"], "hook bug (test)")

	released := make(chan struct{})
	cancelled := make(chan struct{})
	blocking := clientWith(t, b, func(cfg *payonce.Config) {
		cfg.Logger = log
		cfg.Hooks.Timeout = 10 * time.Millisecond
		cfg.Hooks.OnSettled = func(ctx context.Context, _ payonce.Result) {
			<-ctx.Done() // told to stop once the call stops waiting
			close(cancelled)
			<-released // and ignores it
		}
	})
	res, err = blocking.Charge(b.ctx, charge("order-hook-block", 600))
	require.NoError(t, err, "the call returns while its hook is still running")
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	<-cancelled
	close(released)
	require.Len(t, logs.withMessage("payonce: hook still running after its timeout; no longer waiting for it"), 1)
}

func TestHooksTimeoutValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	cfg := providertest.ClientConfig(b.psp, b.store, b.clock.Now)
	cfg.Hooks.Timeout = -time.Second
	_, err := payonce.New(cfg)
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "Config.Hooks.Timeout")

	_, err = payonce.NewReconciler(payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client},
		Hooks: payonce.Hooks{Timeout: -1}})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "ReconcilerConfig.Hooks.Timeout")
}

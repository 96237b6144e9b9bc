package payonce_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/providertest"
)

// The inbox makes a redelivered event a duplicate only while it remembers
// it. Checkout.com and Adyen sign no timestamp, so a captured delivery
// verifies again once Cleanup has forgotten it; an event older than the
// inbox retention is therefore refused, and the retention must outlast
// every provider's redelivery.

// parseDated is parseStandIn with the time the event occurred:
// "<event id> <type> <operation id> <state> <reversal|-> <unix seconds|->".
func parseDated(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	f := strings.Fields(string(body))
	if len(f) != 6 {
		return nil, fmt.Errorf("%w: want 6 fields", payonce.ErrWebhookMalformed)
	}
	ev := payonce.WebhookEvent{ID: f[0], Type: f[1], Targets: []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: f[2],
		State: payonce.LookupState(f[3]), Reversal: f[4] == "reversal", Code: "code_" + f[3]}}}
	if f[5] != "-" {
		sec, err := strconv.ParseInt(f[5], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", payonce.ErrWebhookMalformed, err)
		}
		ev.OccurredAt = time.Unix(sec, 0)
	}
	return []payonce.WebhookEvent{ev}, nil
}

func dated(id, typ, opID, state, reversal string, at time.Time) string {
	return fmt.Sprintf("%s %s %s %s %s %d", id, typ, opID, state, reversal, at.Unix())
}

// TestWebhookReplayAfterInboxForgotIsRefused: a chargeback is recorded,
// the operator resolves it, and Cleanup later removes both the operation
// and the inbox entry. The captured delivery sent again verifies, but it
// occurred before the inbox retention: it is refused and records nothing,
// rather than applying anew (which would reopen the operation in review).
func TestWebhookReplayAfterInboxForgotIsRefused(t *testing.T) {
	t.Parallel()
	testkit.EachStore(t, func(t *testing.T, pg bool) {
		hb := setupHooks(t, pg, setupOpts{}, false)
		hb.psp.parse = parseDated
		res, err := hb.client.Charge(hb.ctx, charge("order-replay", 3100))
		require.NoError(t, err)
		captured := dated("evt_cb", "charge.dispute.created", res.OperationID, "failed", "reversal", hb.clock.Now())
		require.Equal(t, http.StatusOK, hb.post(t, "", captured).StatusCode)
		_, err = hb.client.Resolve(hb.ctx, payonce.ResolveParams{OperationID: res.OperationID, Outcome: ledger.ResolveSucceeded,
			Actor: "alice", Note: "dispute won", ProviderRef: res.ProviderRef, Now: hb.clock.Now()})
		require.NoError(t, err)

		hb.clock.Advance(32 * 24 * time.Hour)
		rep, err := newReconciler(t, hb.bundle, nil).Cleanup(hb.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Tombstoned, "%+v", rep)
		require.Equal(t, 1, rep.InboxPurged)
		require.Empty(t, hb.inbox(t), "the inbox has forgotten the event")

		require.Equal(t, http.StatusBadRequest, hb.post(t, "", captured).StatusCode, "the replay is refused")
		require.Empty(t, hb.inbox(t), "nothing is recorded")
		op, _, err := hb.store.Get(hb.ctx, res.OperationID)
		require.NoError(t, err)
		require.True(t, op.Tombstone, "not reopened by the replay")
		require.Equal(t, ledger.StatusSucceeded, op.Status)

		// A recent event about it, and one that says nothing of when it
		// occurred, are recorded.
		require.Equal(t, http.StatusOK, hb.post(t, "", dated("evt_new", "charge.succeeded", res.OperationID, "succeeded", "-",
			hb.clock.Now().Add(-time.Hour))).StatusCode)
		require.Equal(t, http.StatusOK, hb.post(t, "", "evt_undated charge.succeeded "+res.OperationID+" succeeded - -").StatusCode)
		require.Len(t, hb.inbox(t), 2)
	})
}

// TestRecordWebhookAge: the boundary is the retention less the clock skew
// allowance; RecordWebhook refuses with ErrWebhookTooOld, naming what to
// check, and records nothing.
func TestRecordWebhookAge(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{config: func(c *payonce.Config) { c.InboxRetention, c.ClockSkew = 10*24*time.Hour, 2*time.Minute }})
	window := 10*24*time.Hour - 2*time.Minute
	ev := func(id string, occurred time.Time) payonce.WebhookEvent {
		return payonce.WebhookEvent{ID: id, Type: "customer.updated", OccurredAt: occurred}
	}
	_, err := b.client.RecordWebhook(b.ctx, ev("evt_in", b.clock.Now().Add(-window)))
	require.NoError(t, err, "an event exactly at the boundary is recorded")
	_, err = b.client.RecordWebhook(b.ctx, ev("evt_future", b.clock.Now().Add(time.Hour)))
	require.NoError(t, err, "a provider clock ahead of ours is not judged here")
	_, err = b.client.RecordWebhook(b.ctx, ev("evt_old", b.clock.Now().Add(-window-time.Second)))
	require.ErrorIs(t, err, payonce.ErrWebhookTooOld)
	require.ErrorContains(t, err, `event "evt_old" (customer.updated)`)
	require.ErrorContains(t, err, "Config.InboxRetention 240h0m0s less ClockSkew 2m0s")
	got, err := b.store.ListWebhooks(b.ctx, ledger.InboxFilter{})
	require.NoError(t, err)
	require.Len(t, got, 2)
	for _, e := range got {
		require.NotEqual(t, "evt_old", e.ID)
	}
}

// redeliveringPSP is an adapter whose provider redelivers events for window.
type redeliveringPSP struct {
	payonce.Provider
	window time.Duration
}

func (p redeliveringPSP) Info() payonce.ProviderInfo {
	info := p.Provider.Info()
	info.WebhookRedelivery = p.window
	return info
}

// TestInboxRetentionConfig: a retention that does not outlast the
// provider's redelivery (plus the clocks' skew on both ends) is refused,
// naming the provider and its window.
func TestInboxRetentionConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	const day = 24 * time.Hour
	adyenLike := redeliveringPSP{b.psp, 30 * day}
	for _, c := range []struct {
		psp            payonce.Provider
		inbox, skew    time.Duration
		want           string // empty: valid
		wantRetention  time.Duration
		wantRedelivery time.Duration
	}{
		{psp: b.psp, wantRetention: ledger.DefaultInboxRetention},
		{psp: adyenLike, wantRetention: ledger.DefaultInboxRetention},
		{psp: b.psp, inbox: 3*day + 2*time.Minute},
		{psp: b.psp, inbox: 3 * day, want: "invalid Config.InboxRetention: 72h0m0s is shorter than stripe's webhook redelivery window 72h0m0s plus twice ClockSkew (2m0s)"},
		{psp: adyenLike, inbox: 30 * day, want: "stripe's webhook redelivery window 720h0m0s plus twice ClockSkew (2m0s): " +
			"an event the provider may still deliver again could outlive its inbox entry; use at least 720h2m0s"},
		{psp: adyenLike, inbox: 30 * day, skew: 10 * time.Minute, want: "use at least 720h20m0s"},
		{psp: b.psp, inbox: -time.Hour, want: "invalid Config.InboxRetention: -1h0m0s is shorter"},
	} {
		cfg := providertest.ClientConfig(c.psp, b.store, b.clock.Now)
		cfg.InboxRetention, cfg.ClockSkew = c.inbox, c.skew
		_, err := payonce.New(cfg)
		if c.want == "" {
			require.NoError(t, err, "inbox %v", c.inbox)
			continue
		}
		require.ErrorIs(t, err, payonce.ErrInvalid, "inbox %v", c.inbox)
		require.ErrorContains(t, err, c.want)
	}
}

// TestReconcilerCleanupKeepsInboxForItsClients: the reconciler's Cleanup
// keeps inbox entries as long as its Clients accept events
// (Config.InboxRetention), not the ledger's default.
func TestReconcilerCleanupKeepsInboxForItsClients(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{config: func(c *payonce.Config) { c.InboxRetention = 40 * 24 * time.Hour }})
	_, err := b.client.RecordWebhook(b.ctx, payonce.WebhookEvent{ID: "evt_keep", Type: "customer.updated", OccurredAt: b.clock.Now()})
	require.NoError(t, err)
	r := newReconciler(t, b, nil)
	b.clock.Advance(35 * 24 * time.Hour)
	rep, err := r.Cleanup(b.ctx, 30*24*time.Hour, 100)
	require.NoError(t, err)
	require.Zero(t, rep.InboxPurged, "kept 40 days, past the default 31")
	b.clock.Advance(6 * 24 * time.Hour)
	rep, err = r.Cleanup(b.ctx, 30*24*time.Hour, 100)
	require.NoError(t, err)
	require.Equal(t, 1, rep.InboxPurged)
}

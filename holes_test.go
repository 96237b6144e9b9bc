package payonce_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/stripe"
)

// Regression tests for money holes an adversarial review confirmed. Each
// failed before its fix.

// Two replicas configured with the same Owner (the service's name) must
// never hold one lease together: the configured owner is a label, the lease
// owner carries a random part per Client.
func TestSameOwnerOnTwoClientsNeverSharesALease(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{SlowFor: 300 * time.Millisecond},
			config: func(c *payonce.Config) { c.Owner = "orders-api" }})
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultSlow)
		psp, err := stripe.New(stripe.Config{APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), Now: b.clock.Now})
		require.NoError(t, err)
		replica, err := payonce.New(payonce.Config{Provider: psp, Store: b.store, Now: b.clock.Now, Owner: "orders-api",
			AttemptTimeout: 2 * time.Second, Retry: payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}})
		require.NoError(t, err)

		first := make(chan error, 1)
		go func() {
			_, err := b.client.Charge(b.ctx, charge("order-owner", 900))
			first <- err
		}()
		// Wait until the first call's attempt is journaled and out.
		id, _ := payonce.Identity{Provider: "stripe", Kind: payonce.KindCharge, References: []string{"order-owner"}}.OperationID()
		require.Eventually(t, func() bool {
			op, _, err := b.store.Get(b.ctx, id)
			return err == nil && op.Status == ledger.StatusInFlight
		}, 5*time.Second, 5*time.Millisecond)

		res, err := replica.Charge(b.ctx, charge("order-owner", 900))
		require.ErrorIs(t, err, payonce.ErrInProgress, "the other replica holds the lease")
		require.Equal(t, payonce.ResultInProgress, res.Status)
		require.NoError(t, <-first, "the first call keeps its lease and records its success")
		require.Equal(t, 1, postsOf(b))
		require.Equal(t, 1, b.chargesOf(t, id))
	})
}

// ownerSpy records the lease owners the reconciler claims with.
type ownerSpy struct {
	ledger.Store
	mu     sync.Mutex
	owners []string
}

func (s *ownerSpy) ClaimDue(ctx context.Context, p ledger.ClaimDueParams) ([]ledger.Operation, error) {
	s.mu.Lock()
	s.owners = append(s.owners, p.Owner)
	s.mu.Unlock()
	return s.Store.ClaimDue(ctx, p)
}

// Passes of one Reconciler that run at once (Run beside a manual RunOnce)
// must not share a lease owner: a lease that one pass lost to the other
// would still look like its own.
func TestReconcilerPassesHaveTheirOwnOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	spy := &ownerSpy{Store: b.store}
	r := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Store = spy; c.Owner = "orders-api" })
	other := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.Store = spy; c.Owner = "orders-api" })
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.RunOnce(b.ctx)
			require.NoError(t, err)
		}()
	}
	wg.Wait()
	_, err := other.RunOnce(b.ctx)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, o := range spy.owners {
		require.False(t, seen[o], "owner %q used by two passes", o)
		seen[o] = true
		require.Contains(t, o, "orders-api/", "the configured owner stays readable")
	}
	require.Len(t, seen, 5)
}

// A TLS record error that arrives after the whole request was written is no
// proof that nothing was sent: the attempt must not be retransmitted inside
// the HTTP layer, and it is maybe_sent.
func TestTLSErrorAfterWritingIsNotRetransmitted(t *testing.T) {
	t.Parallel()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.StartTLS() // for its certificate and a client that trusts it
	defer tlsSrv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var requests atomic.Int32
	go func() {
		for {
			raw, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer raw.Close()
				conn := tls.Server(raw, tlsSrv.TLS.Clone())
				if conn.Handshake() != nil {
					return
				}
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				if req.Method == http.MethodPost {
					requests.Add(1)
				}
				// The answer bypasses TLS: the client reads a record
				// header with a version it does not expect
				// (tls.RecordHeaderError). Not "HTTP/...": http.Client
				// turns that into ErrSchemeMismatch.
				_, _ = raw.Write([]byte("\x17\x01\x01\x00\x05hello"))
			}()
		}
	}()
	transport := tlsSrv.Client().Transport.(*http.Transport).Clone()
	transport.DisableKeepAlives = true
	b := setup(t, setupOpts{baseURL: "https://" + ln.Addr().String(), config: func(c *payonce.Config) {
		c.HTTPClient = &http.Client{Transport: transport}
		c.Retry.MaxAttempts = 1
	}})
	res, err := b.client.Charge(b.ctx, charge("order-tls", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, int32(1), requests.Load(), "one journaled attempt, one transmission of the POST")
	_, atts := attemptsOf(t, b, res.OperationID)
	require.Len(t, atts, 1)
	require.Equal(t, ledger.OutcomeMaybeSent, atts[0].Outcome)
	t.Logf("attempt error: %s", atts[0].Error)
	var rh tls.RecordHeaderError
	require.False(t, errors.As(err, &rh), "the caller sees the outcome, not the transport error")
}

// The safety margin must cover one whole attempt plus the clock-skew
// allowance, so that a resend started inside the key window lands inside it.
func TestSafetyMarginCoversAnAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, tc := range []struct {
		cfg  payonce.Config
		want string
	}{
		{payonce.Config{AttemptTimeout: 5 * time.Minute, SafetyMargin: 150 * time.Second}, "at least AttemptTimeout + ClockSkew"},
		{payonce.Config{AttemptTimeout: time.Second, SafetyMargin: time.Minute}, "at least AttemptTimeout + ClockSkew (1m1s)"},
		{payonce.Config{AttemptTimeout: time.Second, ClockSkew: -time.Second}, "Config.ClockSkew"},
		{payonce.Config{AttemptTimeout: 12 * time.Hour, ClockSkew: 12 * time.Hour}, "below the provider's key TTL"},
	} {
		tc.cfg.Provider, tc.cfg.Store = b.psp, b.store
		_, err := payonce.New(tc.cfg)
		require.ErrorIs(t, err, payonce.ErrInvalid)
		require.ErrorContains(t, err, tc.want)
	}
	c, err := payonce.New(payonce.Config{Provider: b.psp, Store: b.store, AttemptTimeout: time.Second, ClockSkew: time.Second, SafetyMargin: 2 * time.Second})
	require.NoError(t, err)
	require.NotNil(t, c)
}

// clockOnPost advances the manual clock while a POST is out, as a slow
// attempt would.
type clockOnPost struct {
	base  http.RoundTripper
	clock *mocks.ManualClock
	by    time.Duration
}

func (c clockOnPost) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		c.clock.Advance(c.by)
	}
	return c.base.RoundTrip(r)
}

// An eventually consistent search is given its lag from the end of the
// latest attempt, not from its start: a slow attempt must not shorten it.
func TestLookupLagCountsFromTheEndOfTheAttempt(t *testing.T) {
	t.Parallel()
	var b *bundle
	b = setup(t, setupOpts{config: func(c *payonce.Config) {
		c.CheckInterval = time.Second
		c.AttemptTimeout = 5 * time.Minute
		c.Retry.MaxAttempts = 1
	}})
	// Rebuild the client with a transport that spends 50 s of clock time
	// per POST (the bundle's clock exists only after setup).
	psp, err := stripe.New(stripe.Config{APIKey: b.fake.APIKey(), BaseURL: b.fake.URL(), Now: b.clock.Now})
	require.NoError(t, err)
	slow := clockOnPost{base: &http.Transport{DisableKeepAlives: true}, clock: b.clock, by: 50 * time.Second}
	client, err := payonce.New(payonce.Config{Provider: psp, Store: b.store, Now: b.clock.Now, CheckInterval: time.Second,
		AttemptTimeout: 5 * time.Minute, HTTPClient: &http.Client{Transport: slow}, Retry: payonce.RetryPolicy{MaxAttempts: 1}})
	require.NoError(t, err)
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultGatewayBefore502)

	res, err := client.Charge(b.ctx, charge("order-lag", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, 1, postsOf(b))

	// 70 s after the attempt started, 20 s after it ended: inside the
	// search's 60 s lag counted from the end, so "not found" proves nothing.
	b.clock.Advance(20 * time.Second)
	_, err = client.Charge(b.ctx, charge("order-lag", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	require.Equal(t, 1, postsOf(b), "no resend while the search may still lag behind the attempt")

	b.clock.Advance(45 * time.Second) // 65 s after the attempt ended
	res, err = client.Charge(b.ctx, charge("order-lag", 1500))
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, 2, postsOf(b))
}

// A stored error replayed under the key is final for that key: no more
// resends, only lookups, then review once the window passes.
func TestReplayedStoredErrorStopsResends(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg, config: func(c *payonce.Config) { c.CheckInterval = time.Second }})
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultStored500)
		_, err := b.client.Charge(b.ctx, charge("order-replay", 1500))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		b.clock.Advance(2 * time.Minute)
		res, err := b.client.Charge(b.ctx, charge("order-replay", 1500))
		require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
		require.Equal(t, 1, b.fake.Truth().Replays, "the resend met the stored 500")
		posts := postsOf(b)
		_, atts := attemptsOf(t, b, res.OperationID)
		require.True(t, atts[len(atts)-1].Replayed, "the ledger records the replay")

		// Calls and reconciler passes over the rest of the window send
		// nothing more: every resend would get the same stored answer.
		r := newReconciler(t, b, nil)
		for range 50 { // 25 h: past the key window
			b.clock.Advance(30 * time.Minute)
			_, _ = b.client.Charge(b.ctx, charge("order-replay", 1500))
			_, err := r.RunOnce(b.ctx)
			require.NoError(t, err)
		}
		require.Equal(t, posts, postsOf(b), "no resend after a replayed stored error")
		op, _ := attemptsOf(t, b, res.OperationID)
		require.Equal(t, ledger.StatusManualReview, op.Status, "the window passed with the outcome unknown")
		require.Equal(t, payonce.ReasonWindowPassed, op.ReviewReason)
	})
}

// Resends of one operation across calls and reconciler passes back off, so
// that no operation is sent more than a handful of times in its window,
// whatever the faults.
func TestResendsAcrossPassesBackOff(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{config: func(c *payonce.Config) { c.CheckInterval = 30 * time.Second }})
	faults := make([]mocks.FaultKind, 200)
	for i := range faults {
		faults[i] = mocks.FaultGatewayBefore502 // never processed, always "maybe sent"
	}
	b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, faults...)
	res, err := b.client.Charge(b.ctx, charge("order-backoff", 1500))
	require.ErrorIs(t, err, payonce.ErrOutcomeUnknown)
	r := newReconciler(t, b, nil)
	for range 26 * 60 / 2 { // a pass every 2 minutes for 26 h: past the window
		b.clock.Advance(2 * time.Minute)
		_, err := r.RunOnce(b.ctx)
		require.NoError(t, err)
	}
	op, atts := attemptsOf(t, b, res.OperationID)
	require.Equal(t, ledger.StatusManualReview, op.Status)
	require.LessOrEqual(t, len(atts), 12, "resends back off across passes")
	t.Logf("attempts in 24 h of constant maybe-sent faults: %d", len(atts))
}

// sendAs posts one request to the fake exactly as an attempt under key
// would, bypassing the client: what an earlier generation's attempt left at
// the provider.
func sendAs(t *testing.T, b *bundle, opID, key string, req payonce.Request) {
	t.Helper()
	hr, err := b.psp.NewRequest(b.ctx, payonce.SendRequest{OperationID: opID, Key: key, Request: req})
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
}

// inReview records an operation in review by hand, with ref as its
// provider reference, as if an earlier answer had named that object.
func inReview(t *testing.T, b *bundle, p payonce.ChargeParams, ref, reason string) ledger.Operation {
	t.Helper()
	n, err := b.client.PrepareCharge(p)
	require.NoError(t, err)
	now := b.clock.Now()
	br, err := b.store.Begin(b.ctx, ledger.BeginParams{Op: n, Owner: "test", Now: now, LeaseUntil: now.Add(time.Minute), StartAttempt: true})
	require.NoError(t, err)
	op, err := b.store.Finish(b.ctx, ledger.FinishParams{ID: n.ID, Owner: "test", Now: now, From: ledger.StatusInFlight,
		To: ledger.StatusManualReview, ReviewReason: reason, ProviderRef: ref,
		Attempt: &ledger.AttemptOutcome{Number: br.Attempt.Number, Class: ledger.OutcomeMaybeSent}})
	require.NoError(t, err)
	return op
}

// After an operator's resend, the new key generation starts clean and its
// lookups see every generation's objects: the old generation's failed
// PaymentIntent must not make the new one's charge read as failed.
func TestResendAfterReviewSeesEveryGeneration(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg, fake: mocks.StripeOptions{HangFor: 10 * time.Second},
			config: func(c *payonce.Config) { c.AttemptTimeout = 300 * time.Millisecond }})
		p := charge("order-gen", 2500)
		n, err := b.client.PrepareCharge(p)
		require.NoError(t, err)
		// Generation 0's request reached Stripe and was declined.
		declined, err := payonce.ParseRequest(n.Request)
		require.NoError(t, err)
		declined.PaymentMethod = "pm_card_chargeDeclined"
		sendAs(t, b, n.ID, n.Key, declined)
		failedPI := b.fake.Truth().Payments[0].ID
		op := inReview(t, b, p, failedPI, payonce.ReasonProcessing)
		b.clock.Advance(2 * time.Minute) // past the search lag

		op, err = b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend,
			Actor: "alice", Note: "declined; the customer topped up", Now: b.clock.Now()})
		require.NoError(t, err)
		require.Equal(t, 1, op.Generation)
		require.Empty(t, op.ProviderRef, "the new generation does not inherit the old object")
		events, err := b.store.Events(b.ctx, op.ID)
		require.NoError(t, err)
		require.Contains(t, events[len(events)-1].Detail, failedPI, "the old reference stays in the history")

		// Generation 1 charges, and its answer is lost.
		b.fake.Script(mocks.Match{Method: "POST", Path: chargePath}, mocks.FaultHangAfterProcessing)
		res, err := b.client.Charge(b.ctx, p)
		if errors.Is(err, payonce.ErrOutcomeUnknown) {
			b.clock.Advance(2 * time.Minute)
			res, err = b.client.Charge(b.ctx, p)
		}
		require.NoError(t, err, "the new generation's PaymentIntent succeeded")
		require.Equal(t, payonce.ResultSucceeded, res.Status)
		require.NotEqual(t, failedPI, res.ProviderRef)
		require.Equal(t, 1, b.chargesOf(t, op.ID), "one paid")
		require.Equal(t, 2, b.fake.Truth().PaymentsBy(stripe.MetaOperation)[op.ID], "one declined, one paid")
	})
}

// A resend under a new key is refused while an earlier key's object
// succeeded (or the review says the money moved twice): a new key would
// charge again.
func TestResolveResendRefusedWhenAnEarlierObjectSucceeded(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	p := charge("order-paid", 1200)
	n, err := b.client.PrepareCharge(p)
	require.NoError(t, err)
	req, err := payonce.ParseRequest(n.Request)
	require.NoError(t, err)
	op := inReview(t, b, p, "", payonce.ReasonWindowPassed)
	sendAs(t, b, n.ID, n.Key, req) // the lost attempt did charge
	b.clock.Advance(2 * time.Minute)

	_, err = b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend,
		Actor: "alice", Note: "looks unpaid", Now: b.clock.Now()})
	require.ErrorIs(t, err, payonce.ErrResendRefused)
	require.ErrorContains(t, err, "succeeded")
	got, _ := attemptsOf(t, b, op.ID)
	require.Equal(t, ledger.StatusManualReview, got.Status, "a refused resolution changes nothing")
	require.Equal(t, 0, got.Generation)

	// The operator resolves it as succeeded instead.
	pi := b.fake.Truth().Payments[0].ID
	got, err = b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveSucceeded,
		Actor: "alice", Note: "paid", ProviderRef: pi, Now: b.clock.Now()})
	require.NoError(t, err)
	require.Equal(t, ledger.StatusSucceeded, got.Status)

	// Reason "duplicated" refuses a resend even without asking Stripe.
	dup := inReview(t, b, charge("order-dup", 1300), "", payonce.ReasonDuplicated)
	for _, resolve := range []func() error{
		func() error {
			_, err := payonce.Resolve(b.ctx, b.store, payonce.ResolveParams{OperationID: dup.ID, Outcome: ledger.ResolveResend, Actor: "a", Note: "n"})
			return err
		},
		func() error {
			_, err := b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: dup.ID, Outcome: ledger.ResolveResend, Actor: "a", Note: "n"})
			return err
		},
	} {
		err := resolve()
		require.ErrorIs(t, err, payonce.ErrResendRefused)
		require.ErrorContains(t, err, "more than one object")
	}
}

// Lookups that fail refuse a resend: only the provider's positive word
// that no earlier key moved money allows a new key.
func TestResolveResendRefusedWhenTheProviderCannotBeAsked(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	op := inReview(t, b, charge("order-down", 1400), "", payonce.ReasonWindowPassed)
	b.clock.Advance(2 * time.Minute)
	b.fake.Script(mocks.Match{Method: "GET", Path: "/v1/payment_intents/search"},
		mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502, mocks.FaultGatewayBefore502)
	_, err := b.client.Resolve(b.ctx, payonce.ResolveParams{OperationID: op.ID, Outcome: ledger.ResolveResend, Actor: "a", Note: "n"})
	require.ErrorIs(t, err, payonce.ErrResendRefused)
	require.ErrorContains(t, err, "could not be asked")
}

// A late duplicate call after Cleanup (a redelivered message, a client
// retry a month later) gets the recorded outcome from the tombstone and
// sends nothing: the provider forgot the key long ago, so a new POST would
// be a second charge.
func TestLateCallAfterCleanupSendsNothing(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, pg bool) {
		b := setup(t, setupOpts{postgres: pg})
		first, err := b.client.Charge(b.ctx, charge("order-late", 4200))
		require.NoError(t, err)
		b.clock.Advance(31 * 24 * time.Hour)
		r := newReconciler(t, b, nil)
		rep, err := r.Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, 1, rep.Deleted)
		require.Equal(t, 1, rep.Tombstoned)
		require.Equal(t, 1, rep.Tombstones)

		posts := postsOf(b)
		again, err := b.client.Charge(b.ctx, charge("order-late", 4200))
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, again.Status)
		require.True(t, again.Replayed)
		require.Equal(t, first.ProviderRef, again.ProviderRef)
		require.Equal(t, posts, postsOf(b), "the tombstone answers; nothing is sent")
		require.Equal(t, 1, b.chargesOf(t, first.OperationID))

		n, err := b.client.PrepareCharge(charge("order-late", 4200))
		require.NoError(t, err)
		got, err := b.client.Enqueue(b.ctx, n)
		require.NoError(t, err)
		require.Equal(t, payonce.ResultSucceeded, got.Status, "enqueueing it again records nothing")

		_, err = b.client.Charge(b.ctx, charge("order-late", 9999))
		require.ErrorIs(t, err, payonce.ErrFingerprintMismatch, "the tombstone keeps the fingerprint")

		_, err = payonce.NewReconciler(payonce.ReconcilerConfig{Store: b.store, Clients: []*payonce.Client{b.client}, TombstoneRetention: -time.Hour})
		require.ErrorIs(t, err, payonce.ErrInvalid)
		purger := newReconciler(t, b, func(c *payonce.ReconcilerConfig) { c.TombstoneRetention = 60 * 24 * time.Hour })
		rep, err = purger.Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Zero(t, rep.TombstonesPurged, "kept for 60 days after the operation finished")
		b.clock.Advance(30 * 24 * time.Hour)
		rep, err = purger.Cleanup(b.ctx, 30*24*time.Hour, 100)
		require.NoError(t, err)
		require.Equal(t, 1, rep.TombstonesPurged)
		require.Zero(t, rep.Tombstones)
	})
}

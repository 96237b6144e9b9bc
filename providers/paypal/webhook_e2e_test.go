package paypal_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/mocks"
	"github.com/payonce/payonce/providers/paypal"
)

// The fake PayPal's real signed deliveries, received by a payonce.Client's
// WebhookHandler with a SQLite ledger: what is accepted settles or
// contradicts operations, what is forged, tampered or misdirected is
// refused, and a replay is a duplicate in the root's inbox.

// captured is one delivery the fake sent.
type captured struct {
	header http.Header
	body   []byte
}

// recorder receives the fake's deliveries and keeps them, so that a test
// can hand them (as they are, or changed) to the client's handler.
type recorder struct {
	*httptest.Server
	mu  sync.Mutex
	got []captured
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, captured{header: req.Header.Clone(), body: body})
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

// take returns the deliveries received so far and forgets them.
func (r *recorder) take() []captured {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

type ppE2E struct {
	fake   *mocks.PayPal
	clock  *mocks.ManualClock
	rec    *recorder
	client *payonce.Client
	store  ledger.Store
	ctx    context.Context
	// reports are what the handler recorded, by event id, in order.
	mu      sync.Mutex
	reports []ledger.WebhookReport
	events  []payonce.WebhookEvent
	handler http.Handler
}

func (e *ppE2E) config() paypal.Config {
	return paypal.Config{ClientID: e.fake.ClientID(), ClientSecret: e.fake.ClientSecret(), BaseURL: e.fake.URL(),
		WebhookID: e.fake.WebhookID(), WebhookRoots: e.fake.WebhookRoots(), WebhookCertHosts: []string{e.fake.CertHost()},
		Now: e.clock.Now}
}

func newPPE2E(t *testing.T, mod func(*paypal.Config)) *ppE2E {
	t.Helper()
	e := &ppE2E{clock: mocks.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)), rec: newRecorder(t)}
	e.fake = mocks.NewPayPal(mocks.PayPalOptions{Options: mocks.Options{Clock: e.clock.Now,
		Webhooks: mocks.WebhookDelivery{URL: e.rec.URL + "/paypal"}}})
	t.Cleanup(e.fake.Close)
	cfg := e.config()
	if mod != nil {
		mod(&cfg)
	}
	p, err := paypal.New(cfg)
	require.NoError(t, err)
	e.client, e.store = testkit.NewClient(t, p, e.clock.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	e.ctx = ctx
	e.handler, err = e.client.WebhookHandler(payonce.WebhookOptions{OnEvent: func(ev payonce.WebhookEvent, rep ledger.WebhookReport) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.events = append(e.events, ev)
		e.reports = append(e.reports, rep)
	}})
	require.NoError(t, err)
	return e
}

// deliveries flushes the fake's queue and returns what it sent.
func (e *ppE2E) deliveries(t *testing.T) []captured {
	t.Helper()
	require.NoError(t, e.fake.FlushWebhooks(e.ctx))
	return e.rec.take()
}

// post hands d to handler and returns the status.
func post(handler http.Handler, d captured) int {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/paypal", bytes.NewReader(d.body))
	r.Header = d.header.Clone()
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	return w.Code
}

func (e *ppE2E) lastReport() (payonce.WebhookEvent, ledger.WebhookReport) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.events[len(e.events)-1], e.reports[len(e.reports)-1]
}

func (e *ppE2E) status(t *testing.T, opID string) ledger.Status {
	t.Helper()
	op, _, err := e.store.Get(e.ctx, opID)
	require.NoError(t, err)
	return op.Status
}

// byType picks the delivery of event type typ.
func byType(t *testing.T, ds []captured, typ string) captured {
	t.Helper()
	for _, d := range ds {
		if bytes.Contains(d.body, []byte(`"event_type":"`+typ+`"`)) {
			return d
		}
	}
	t.Fatalf("no %s among %d deliveries", typ, len(ds))
	return captured{}
}

func TestE2EWebhookChargeSettlesAndReplayIsDuplicate(t *testing.T) {
	e := newPPE2E(t, nil)
	res, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-wh-1", Amount: 1000, Currency: "USD", PaymentMethod: mocks.PayPalVaultApproved})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)

	ds := e.deliveries(t)
	require.NotEmpty(t, ds)
	for _, d := range ds {
		require.Equal(t, http.StatusOK, post(e.handler, d), "genuine delivery %s", d.body)
		ev, rep := e.lastReport()
		require.False(t, rep.Duplicate)
		require.Empty(t, ev.Unreadable)
	}
	completed := byType(t, ds, "PAYMENT.CAPTURE.COMPLETED")
	require.Equal(t, http.StatusOK, post(e.handler, completed))
	ev, rep := e.lastReport()
	require.True(t, rep.Duplicate, "a replayed event is recorded once (the root inbox dedups by event id %s)", ev.ID)

	// The event named the charge (by custom_id and by the capture id): it
	// confirmed what the answer settled.
	require.Equal(t, ledger.StatusSucceeded, e.status(t, res.OperationID))
	var confirmed bool
	for i, r := range e.reports {
		if e.events[i].Type != "PAYMENT.CAPTURE.COMPLETED" {
			continue
		}
		for _, o := range r.Outcomes {
			if o.OperationID == res.OperationID && o.Disposition == ledger.WebhookConfirmed {
				confirmed = true
			}
		}
	}
	require.True(t, confirmed, "PAYMENT.CAPTURE.COMPLETED confirmed the charge: %+v", e.reports)
}

func TestE2EWebhookForgeriesAreRefused(t *testing.T) {
	e := newPPE2E(t, nil)
	_, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-wh-2", Amount: 1000, Currency: "USD", PaymentMethod: mocks.PayPalVaultApproved})
	require.NoError(t, err)
	genuine := byType(t, e.deliveries(t), "PAYMENT.CAPTURE.COMPLETED")

	tampered := captured{header: genuine.header, body: bytes.Replace(genuine.body, []byte(`"COMPLETED"`), []byte(`"DECLINED"`), 1)}
	require.Equal(t, http.StatusBadRequest, post(e.handler, tampered), "tampered body")

	// Another webhook id: the same delivery at a receiver configured for
	// another webhook.
	otherCfg := e.config()
	otherCfg.WebhookID = "WH-ANOTHER-WEBHOOK"
	pOther, err := paypal.New(otherCfg)
	require.NoError(t, err)
	_, err = pOther.ParseWebhook(requestOf(genuine), genuine.body)
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
	require.Contains(t, err.Error(), "does not verify")

	// The cert URL moved to another host (serving the very same chain):
	// not fetched, refused.
	elsewhere := newCertServer(t)
	chain := fetchChain(t, genuine.header.Get("Paypal-Cert-Url"))
	moved := captured{header: genuine.header.Clone(), body: genuine.body}
	moved.header.Set("Paypal-Cert-Url", elsewhere.serve("/v1/notifications/certs/CERT-1", chain))
	require.Equal(t, http.StatusBadRequest, post(e.handler, moved), "cert URL on another host")
	require.Zero(t, elsewhere.hits.Load())

	// A receiver whose roots are not the fake's: the chain does not chain.
	cfg := e.config()
	cfg.WebhookRoots = thePKI(t).roots
	pStrict, err := paypal.New(cfg)
	require.NoError(t, err)
	_, err = pStrict.ParseWebhook(requestOf(genuine), genuine.body)
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
	require.Contains(t, err.Error(), "does not chain to a trusted root")

	// A listed host serving a certificate that chains but is not PayPal's
	// signing certificate (another subject).
	k := thePKI(t)
	wrong := newCertServer(t)
	leaf := issue(t, leafTemplate("www.example.com"), k.leafKey, &k.inter)
	wrongURL := wrong.serve("/v1/notifications/certs/CERT-2", pemOf(leaf, k.inter.cert))
	cfg = e.config()
	cfg.WebhookRoots = e.fake.WebhookRoots()
	cfg.WebhookRoots.AddCert(k.root.cert)
	cfg.WebhookCertHosts = []string{e.fake.CertHost(), wrong.host()}
	pWrong, err := paypal.New(cfg)
	require.NoError(t, err)
	named := captured{header: genuine.header.Clone(), body: genuine.body}
	named.header.Set("Paypal-Cert-Url", wrongURL)
	_, err = pWrong.ParseWebhook(requestOf(named), named.body)
	require.ErrorIs(t, err, payonce.ErrWebhookUnauthenticated)
	require.Contains(t, err.Error(), "not PayPal's webhook signing certificate")

	// Nothing refused was recorded; the genuine one still is.
	require.Empty(t, e.reports)
	require.Equal(t, http.StatusOK, post(e.handler, genuine))
}

func requestOf(d captured) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/paypal", bytes.NewReader(d.body))
	r.Header = d.header.Clone()
	return r
}

func fetchChain(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return b
}

// PayPal reverses a capture after the charge settled: a contradiction,
// the operation goes to review.
func TestE2EWebhookReversalAfterSettlementIsAContradiction(t *testing.T) {
	e := newPPE2E(t, nil)
	res, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-wh-3", Amount: 1000, Currency: "USD", PaymentMethod: mocks.PayPalVaultApproved})
	require.NoError(t, err)
	for _, d := range e.deliveries(t) {
		require.Equal(t, http.StatusOK, post(e.handler, d))
	}
	require.Equal(t, ledger.StatusSucceeded, e.status(t, res.OperationID))

	_, err = e.fake.ReverseCapture(res.ProviderRef)
	require.NoError(t, err)
	rev := byType(t, e.deliveries(t), "PAYMENT.CAPTURE.REVERSED")
	require.Equal(t, http.StatusOK, post(e.handler, rev))
	_, rep := e.lastReport()
	var contradicted bool
	for _, o := range rep.Outcomes {
		if o.OperationID == res.OperationID && o.Disposition == ledger.WebhookContradiction {
			contradicted = true
		}
	}
	require.True(t, contradicted, "outcomes %+v", rep.Outcomes)
	require.Equal(t, ledger.StatusManualReview, e.status(t, res.OperationID))
}

// Authorize, capture, refund: every event the fake sends is accepted and
// names the operations it is about.
func TestE2EWebhookAuthorizeCaptureRefund(t *testing.T) {
	e := newPPE2E(t, nil)
	ch, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-wh-4", Amount: 1000, Currency: "USD",
		PaymentMethod: mocks.PayPalVaultApproved, CaptureManual: true})
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, ch.Status)
	cp, err := e.client.Capture(e.ctx, payonce.CaptureParams{OrderID: "order-wh-4", Amount: 1000, Currency: "USD"})
	require.NoError(t, err)
	rf, err := e.client.Refund(e.ctx, payonce.RefundParams{OrderID: "order-wh-4", RefundSeq: 1, Amount: 400, Currency: "USD",
		// The capture is what a refund takes money back from (the charge's
		// reference is the authorization).
		PaymentRef: cp.ProviderRef})
	require.NoError(t, err)

	ds := e.deliveries(t)
	named := map[string]ledger.WebhookDisposition{}
	for _, d := range ds {
		require.Equal(t, http.StatusOK, post(e.handler, d), "%s", d.body)
		_, rep := e.lastReport()
		for _, o := range rep.Outcomes {
			if o.OperationID != "" {
				named[o.OperationID] = o.Disposition
			}
		}
	}
	for _, op := range []string{ch.OperationID, cp.OperationID, rf.OperationID} {
		require.Equal(t, ledger.WebhookConfirmed, named[op], "operation %s: %v", op, named)
		require.Equal(t, ledger.StatusSucceeded, e.status(t, op))
	}
	byType(t, ds, "PAYMENT.AUTHORIZATION.CREATED")
	byType(t, ds, "PAYMENT.CAPTURE.REFUNDED")
}

// VerifyAPI: PayPal's verify-webhook-signature decides.
func TestE2EWebhookVerifyAPI(t *testing.T) {
	e := newPPE2E(t, func(c *paypal.Config) { c.WebhookVerification = paypal.VerifyAPI })
	_, err := e.client.Charge(e.ctx, payonce.ChargeParams{OrderID: "order-wh-5", Amount: 1000, Currency: "USD", PaymentMethod: mocks.PayPalVaultApproved})
	require.NoError(t, err)
	ds := e.deliveries(t)
	for _, d := range ds {
		require.Equal(t, http.StatusOK, post(e.handler, d))
	}
	genuine := byType(t, ds, "PAYMENT.CAPTURE.COMPLETED")
	tampered := captured{header: genuine.header, body: bytes.Replace(genuine.body, []byte(`"COMPLETED"`), []byte(`"DECLINED"`), 1)}
	require.Equal(t, http.StatusBadRequest, post(e.handler, tampered))
	require.Positive(t, e.fake.Truth().Requests["POST /v1/notifications/verify-webhook-signature"])
	// The API is asked only about certificates on the listed hosts.
	moved := captured{header: genuine.header.Clone(), body: genuine.body}
	moved.header.Set("Paypal-Cert-Url", strings.Replace(genuine.header.Get("Paypal-Cert-Url"), "127.0.0.1", "localhost", 1))
	before := e.fake.Truth().Requests["POST /v1/notifications/verify-webhook-signature"]
	require.Equal(t, http.StatusBadRequest, post(e.handler, moved))
	require.Equal(t, before, e.fake.Truth().Requests["POST /v1/notifications/verify-webhook-signature"])
}

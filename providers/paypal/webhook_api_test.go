package paypal_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/paypal"
)

// fakeVerifyAPI is PayPal's token and verify-webhook-signature endpoints,
// answering status/answer and recording what was asked.
type fakeVerifyAPI struct {
	*httptest.Server
	mu       sync.Mutex
	status   int
	answer   string
	fail401  int // answer the next fail401 verifications 401
	bodies   []string
	auths    []string
	tokens   atomic.Int64
	verifies atomic.Int64
}

func newFakeVerifyAPI(t *testing.T) *fakeVerifyAPI {
	a := &fakeVerifyAPI{status: http.StatusOK, answer: `{"verification_status":"SUCCESS"}`}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/v1/oauth2/token":
			n := a.tokens.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"access_token":"A21AAtoken`+strings.Repeat("x", int(n))+`","token_type":"Bearer","expires_in":32400}`)
		case "/v1/notifications/verify-webhook-signature":
			a.verifies.Add(1)
			a.mu.Lock()
			a.bodies = append(a.bodies, string(body))
			a.auths = append(a.auths, r.Header.Get("Authorization"))
			status, answer := a.status, a.answer
			if a.fail401 > 0 {
				a.fail401--
				status, answer = http.StatusUnauthorized, `{"error":"invalid_token","error_description":"Token signature verification failed"}`
			}
			a.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, answer)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *fakeVerifyAPI) set(status int, answer string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.status, a.answer = status, answer
}

func apiFixture(t *testing.T) (*webhookFixture, *fakeVerifyAPI) {
	api := newFakeVerifyAPI(t)
	f := newWebhookFixture(t, func(c *paypal.Config) { c.WebhookVerification = paypal.VerifyAPI; c.BaseURL = api.URL })
	return f, api
}

// The request carries the five headers as they came, the webhook id, and
// the event byte for byte (spacing and characters json.Marshal would
// escape included), under a bearer token.
func TestWebhookVerifyAPIRequest(t *testing.T) {
	f, api := apiFixture(t)
	body := "{ \"id\" : \"WH-1\", \"event_type\":\"CHECKOUT.ORDER.APPROVED\",\n \"summary\":\"<b>&</b>\", \"resource\":{} }"
	d := f.signed(body)
	evs, err := f.parse(d)
	require.NoError(t, err)
	require.Equal(t, "WH-1", evs[0].ID)
	require.Len(t, api.bodies, 1)
	require.True(t, strings.HasSuffix(api.bodies[0], `"webhook_event":`+body+`}`), api.bodies[0])
	var req map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(api.bodies[0]), &req))
	str := func(k string) string {
		var s string
		require.NoError(t, json.Unmarshal(req[k], &s))
		return s
	}
	require.Equal(t, "SHA256withRSA", str("auth_algo"))
	require.Equal(t, d.certURL, str("cert_url"))
	require.Equal(t, d.id, str("transmission_id"))
	require.Equal(t, d.at, str("transmission_time"))
	require.Equal(t, testWebhookID, str("webhook_id"))
	require.Equal(t, d.request().Header.Get("Paypal-Transmission-Sig"), str("transmission_sig"))
	require.Equal(t, "Bearer A21AAtokenx", api.auths[0])
	require.Zero(t, f.srv.hits.Load(), "VerifyAPI fetches no certificate")
}

func TestWebhookVerifyAPIRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, answer, want string
		status             int
	}{
		{"FAILURE", `{"verification_status":"FAILURE"}`, `verification_status "FAILURE"`, http.StatusOK},
		{"no status", `{}`, `verification_status ""`, http.StatusOK},
		{"not JSON", `<html>`, "not JSON", http.StatusOK},
		{"bad request", `{"name":"VALIDATION_ERROR","message":"Invalid request"}`, "HTTP 400 (VALIDATION_ERROR", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, api := apiFixture(t)
			api.set(tc.status, tc.answer)
			evs, err := f.parse(f.signed(pingEvent))
			mustRefuse(t, evs, err, tc.want)
		})
	}
}

// PayPal busy or down: the delivery is refused as unavailable (the handler
// answers 503 and PayPal delivers it again), never as a forgery.
func TestWebhookVerifyAPIUnavailable(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests} {
		f, api := apiFixture(t)
		api.set(status, `{"name":"INTERNAL_SERVICE_ERROR","message":"An internal service error has occurred."}`)
		evs, err := f.parse(f.signed(pingEvent))
		require.Empty(t, evs)
		require.ErrorIs(t, err, payonce.ErrProviderUnavailable, "HTTP %d", status)
		require.NotErrorIs(t, err, payonce.ErrWebhookUnauthenticated, "HTTP %d", status)
		require.ErrorContains(t, err, fmt.Sprintf("HTTP %d", status))
	}
}

// A 401 drops the token and asks once more under a new one; a second 401
// refuses the delivery.
func TestWebhookVerifyAPI401RefreshesTheToken(t *testing.T) {
	f, api := apiFixture(t)
	api.mu.Lock()
	api.fail401 = 1
	api.mu.Unlock()
	_, err := f.parse(f.signed(pingEvent))
	require.NoError(t, err)
	require.Equal(t, int64(2), api.tokens.Load())
	require.Equal(t, []string{"Bearer A21AAtokenx", "Bearer A21AAtokenxx"}, api.auths)
	// The new token is reused while it lives.
	_, err = f.parse(f.signed(pingEvent))
	require.NoError(t, err)
	require.Equal(t, int64(2), api.tokens.Load())

	api.mu.Lock()
	api.fail401 = 2
	api.mu.Unlock()
	_, err = f.parse(f.signed(pingEvent))
	mustRefuse(t, nil, err, "HTTP 401")
	require.Equal(t, int64(3), api.tokens.Load(), "the cached token, then one new one")
}

// A body that is not one JSON object is not sent to PayPal.
func TestWebhookVerifyAPIMalformedBodyIsNotSent(t *testing.T) {
	f, api := apiFixture(t)
	for _, body := range []string{``, `[1]`, `{"a":`, `"x"`} {
		evs, err := f.parse(f.signed(body))
		require.Nil(t, evs)
		require.ErrorIs(t, err, payonce.ErrWebhookMalformed, body)
	}
	require.Zero(t, api.verifies.Load())
}

// The headers are checked before PayPal is asked: a stale or misdirected
// delivery costs no request.
func TestWebhookVerifyAPIChecksHeadersFirst(t *testing.T) {
	f, api := apiFixture(t)
	d := f.signed(pingEvent)
	d.certURL = "https://certs.example.com/v1/notifications/certs/CERT-1"
	_, err := f.parse(d)
	mustRefuse(t, nil, err, "WebhookCertHosts")
	require.Zero(t, api.verifies.Load())
	require.Zero(t, api.tokens.Load())
}

// Concurrent deliveries naming one uncached certificate fetch it once.
func TestWebhookConcurrentDeliveriesFetchTheCertificateOnce(t *testing.T) {
	f := newWebhookFixture(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			_, err := f.parse(f.signed(pingEvent))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(1), f.srv.hits.Load())
}

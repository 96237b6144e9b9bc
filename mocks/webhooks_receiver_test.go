package mocks_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hookReceiver is a webhook endpoint for the fakes' tests. It checks every
// delivery with verify, its own code (not the fake's, not an adapter's),
// answers 400 to one that fails and 200 to one that passes, and keeps the
// bodies and headers of the accepted ones in arrival order.
type hookReceiver struct {
	srv      *httptest.Server
	verify   func(r *http.Request, body []byte) bool
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	rejected int
}

func newHookReceiver(t *testing.T, verify func(r *http.Request, body []byte) bool) *hookReceiver {
	h := &hookReceiver{verify: verify}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || r.Method != http.MethodPost || !h.verify(r, body) {
			h.mu.Lock()
			h.rejected++
			h.mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.headers = append(h.headers, r.Header.Clone())
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// URL is the receiver's endpoint.
func (h *hookReceiver) URL() string { return h.srv.URL + "/webhooks" }

// events decodes every accepted body as T, in arrival order.
func events[T any](t *testing.T, h *hookReceiver) []T {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]T, 0, len(h.bodies))
	for _, b := range h.bodies {
		var v T
		require.NoError(t, json.Unmarshal(b, &v), string(b))
		out = append(out, v)
	}
	return out
}

func (h *hookReceiver) rejects() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rejected
}

// flush waits for f's webhooks.
func flush(t *testing.T, f interface{ FlushWebhooks(context.Context) error }) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, f.FlushWebhooks(ctx))
}

// hmacHex is the hex HMAC-SHA256 of the parts, keyed with key.
func hmacHex(key string, parts ...string) string {
	m := hmac.New(sha256.New, []byte(key))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// stripeVerifier checks Stripe-Signature as Stripe documents it
// (https://docs.stripe.com/webhooks#verify-manually): t=<unix>,v1=<hex
// HMAC-SHA256(secret, "<t>.<body>")>.
func stripeVerifier(secret string) func(r *http.Request, body []byte) bool {
	return func(r *http.Request, body []byte) bool {
		var ts string
		var sigs []string
		for _, kv := range strings.Split(r.Header.Get("Stripe-Signature"), ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "t":
				ts = v
			case "v1":
				sigs = append(sigs, v)
			}
		}
		want := hmacHex(secret, ts, ".", string(body))
		for _, s := range sigs {
			if ts != "" && hmac.Equal([]byte(s), []byte(want)) {
				return true
			}
		}
		return false
	}
}

// ckoVerifier checks Cko-Signature (hex HMAC-SHA256 of the raw body) and,
// when auth is set, the Authorization header.
func ckoVerifier(secret, auth string) func(r *http.Request, body []byte) bool {
	return func(r *http.Request, body []byte) bool {
		if auth != "" && r.Header.Get("Authorization") != auth {
			return false
		}
		return hmac.Equal([]byte(r.Header.Get("Cko-Signature")), []byte(hmacHex(secret, string(body))))
	}
}

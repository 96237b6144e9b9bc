// Helpers for the provider adapters' tests.

package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// DoerFunc is a payonce.HTTPDoer made of a function.
type DoerFunc func(*http.Request) (*http.Response, error)

// Do calls f.
func (f DoerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// TrackedBody is an answer body that records whether it was closed.
type TrackedBody struct {
	io.Reader
	Closed bool
}

// Close records the close.
func (b *TrackedBody) Close() error { b.Closed = true; return nil }

// Header builds a header from name, value pairs.
func Header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// Respond is an answer with status, body and the header pairs kv.
func Respond(status int, body string, kv ...string) *http.Response {
	return &http.Response{StatusCode: status, Header: Header(kv...), Body: io.NopCloser(strings.NewReader(body))}
}

// WithKind turns r into an operation of kind k on the payment ref, for
// amount, without the charge-only fields (payment method, customer,
// description).
func WithKind(r payonce.SendRequest, k payonce.Kind, amount int64, ref string) payonce.SendRequest {
	r.Request.Kind = k
	r.Request.Amount = amount
	r.Request.PaymentRef = ref
	r.Request.PaymentMethod, r.Request.Customer, r.Request.Description = "", "", ""
	return r
}

// Build calls p.NewRequest and returns the request and its body.
func Build(t testing.TB, p payonce.Provider, r payonce.SendRequest) (*http.Request, string) {
	t.Helper()
	hr, err := p.NewRequest(context.Background(), r)
	require.NoError(t, err)
	b, err := io.ReadAll(hr.Body)
	require.NoError(t, err)
	return hr, string(b)
}

// DecodeJSON decodes a JSON object, with numbers as json.Number.
func DecodeJSON(t testing.TB, body string) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(strings.NewReader(body))
	d.UseNumber()
	require.NoError(t, d.Decode(&m))
	return m
}

// RequireInvalid checks that err is a *payonce.ValidationError
// (errors.Is(err, payonce.ErrInvalid)) on field whose text holds none of
// secrets, and returns it.
func RequireInvalid(t testing.TB, err error, field string, secrets ...string) *payonce.ValidationError {
	t.Helper()
	require.ErrorIs(t, err, payonce.ErrInvalid)
	var ve *payonce.ValidationError
	require.True(t, errors.As(err, &ve))
	require.Equal(t, field, ve.Field)
	for _, s := range secrets {
		require.NotContains(t, err.Error(), s)
	}
	return ve
}

// Printed returns every way values may end up printed: under each fmt verb
// a careless log line might use, through String and GoString when they
// have them, and logged by slog as JSON. A leak test checks that no secret
// appears in any of them.
func Printed(values ...any) []string {
	var texts []string
	for _, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d", "%T"} {
			texts = append(texts, fmt.Sprintf(verb, v))
		}
		if s, ok := v.(fmt.Stringer); ok {
			texts = append(texts, s.String())
		}
		if s, ok := v.(fmt.GoStringer); ok {
			texts = append(texts, s.GoString())
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "v", v)
		texts = append(texts, buf.String())
	}
	return texts
}

// RequireLookupTransport checks p.Lookup against the transport: a
// transport error on failQ reaches the caller, and for q answered with
// status 200, 404 and 500 and body, every answer body is closed and every
// request is a GET (lookups only read).
func RequireLookupTransport(t *testing.T, p payonce.Provider, failQ, q payonce.LookupQuery, body string) {
	t.Helper()
	_, err := p.Lookup(context.Background(), DoerFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection reset")
	}), failQ)
	require.ErrorContains(t, err, "connection reset")

	for _, status := range []int{200, 404, 500} {
		b := &TrackedBody{Reader: strings.NewReader(body)}
		var sent *http.Request
		_, _ = p.Lookup(context.Background(), DoerFunc(func(req *http.Request) (*http.Response, error) {
			sent = req
			return &http.Response{StatusCode: status, Header: http.Header{}, Body: b}, nil
		}), q)
		require.True(t, b.Closed, "status %d: body not closed", status)
		require.Equal(t, http.MethodGet, sent.Method, "lookups only read")
	}
}

// NewClient returns a payonce.Client for psp over a fresh, migrated SQLite
// ledger, on the clock now, with short retries, and the ledger. Both are
// closed when the test ends.
func NewClient(t *testing.T, psp payonce.Provider, now func() time.Time) (*payonce.Client, ledger.Store) {
	t.Helper()
	store, err := ledgersqlite.Open(filepath.Join(t.TempDir(), "ledger.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	require.NoError(t, store.Migrate(context.Background()))
	client, err := payonce.New(payonce.Config{
		Provider: psp, Store: store, Now: now,
		// Keep-alives off: a dropped answer must reach the client as a
		// dropped answer.
		HTTPClient:     &http.Client{Transport: &http.Transport{DisableKeepAlives: true}},
		AttemptTimeout: 2 * time.Second,
		Retry:          payonce.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
	})
	require.NoError(t, err)
	return client, store
}

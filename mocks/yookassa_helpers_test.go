package mocks_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// jsonClient is a bare client for the JSON fakes (YooKassa, Checkout.com):
// the tests exercise the wire, not an SDK.
type jsonClient struct {
	t         *testing.T
	base      string
	auth      func(*http.Request)
	keyHeader string
	hc        *http.Client
}

// do sends method path with body (marshalled unless it is a string or
// nil) and the idempotency key, if any.
func (c *jsonClient) do(ctx context.Context, method, path string, body any, key string) (*result, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		raw, err := json.Marshal(b)
		require.NoError(c.t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	require.NoError(c.t, err)
	if c.auth != nil {
		c.auth(req)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set(c.keyHeader, key)
	}
	return send(c.hc, req)
}

func (c *jsonClient) post(path string, body any, key string) *result {
	c.t.Helper()
	r, err := c.do(context.Background(), http.MethodPost, path, body, key)
	require.NoError(c.t, err)
	return r
}

func (c *jsonClient) get(path string) *result {
	c.t.Helper()
	r, err := c.do(context.Background(), http.MethodGet, path, nil, "")
	require.NoError(c.t, err)
	return r
}

// decode decodes the body into v after checking the status.
func decode[T any](t *testing.T, r *result, status int) T {
	t.Helper()
	require.Equal(t, status, r.status, string(r.body))
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v), string(r.body))
	return v
}

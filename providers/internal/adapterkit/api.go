package adapterkit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/payonce/payonce"
)

// API is how an adapter's lookups read its provider: one GET at a time,
// every failure turned into the adapter's own *APIError by the three
// functions it gives. Each adapter keeps its APIError type (its fields
// are the provider's); only the reading is shared.
type API struct {
	// Name starts error texts ("stripe").
	Name string
	// BaseURL is the checked base URL (CheckBaseURL).
	BaseURL string
	// SetHeaders writes the credentials and Accept header of every GET.
	SetHeaders func(http.Header)
	// TooLarge is the error for an answer larger than MaxBodyBytes.
	TooLarge func(path string, e *TooLargeError) error
	// Failed is the error for a non-2xx answer.
	Failed func(path string, status int, header http.Header, body []byte) error
	// Unusable is the error for a 2xx answer whose body is not what the
	// endpoint returns.
	Unusable func(path string, header http.Header, err error) error
	// NotFound recognises the provider's own 404 "no such object" (status
	// 404 already checked). A 404 page from a proxy or a wrong BaseURL
	// says nothing about the object, so it must not pass.
	NotFound func(header http.Header, body []byte) bool
}

// Get sends one GET (Get in http.go) and reads at most MaxBodyBytes of
// the answer; a larger one is the TooLarge error.
func (a API) Get(ctx context.Context, hc payonce.HTTPDoer, path string, query url.Values) (int, http.Header, []byte, error) {
	status, header, body, err := Get(ctx, hc, a.Name, a.BaseURL, path, query, a.SetHeaders)
	if big := (*TooLargeError)(nil); errors.As(err, &big) {
		return 0, nil, nil, a.TooLarge(path, big)
	}
	return status, header, body, err
}

// GetJSON sends one GET and decodes its 2xx answer into v: a non-2xx
// answer is the Failed error, a body that does not decode the Unusable
// one.
func (a API) GetJSON(ctx context.Context, hc payonce.HTTPDoer, path string, query url.Values, v any) (http.Header, error) {
	status, header, body, err := a.Get(ctx, hc, path, query)
	if err != nil {
		return nil, err
	}
	if status < 200 || status >= 300 {
		return nil, a.Failed(path, status, header, body)
	}
	if err := DecodeJSON(body, v); err != nil {
		return nil, a.Unusable(path, header, err)
	}
	return header, nil
}

// GetObject reads one object by id: found is false on the provider's own
// 404 (NotFound); any other non-2xx answer is the Failed error.
func (a API) GetObject(ctx context.Context, hc payonce.HTTPDoer, path string) (status int, header http.Header, body []byte, found bool, err error) {
	status, header, body, err = a.Get(ctx, hc, path, nil)
	if err != nil {
		return 0, nil, nil, false, err
	}
	if status == http.StatusNotFound && a.NotFound(header, body) {
		return status, header, nil, false, nil
	}
	if status < 200 || status >= 300 {
		return 0, nil, nil, false, a.Failed(path, status, header, body)
	}
	return status, header, body, true, nil
}

// Decode parses an answer's body into a T (DecodeJSON) and checks with
// check that it is the object the endpoint returns (its type, its id);
// check's error says what is wrong.
func Decode[T any](body []byte, check func(*T) error) (T, error) {
	var v T
	if err := DecodeJSON(body, &v); err != nil {
		return v, err
	}
	return v, check(&v)
}

// DecodeError parses an error answer's body into a T; nil when the body
// is empty, larger than MaxBodyBytes, not JSON, or holds no error by
// isError (an HTML page from a proxy, an empty body, ...).
func DecodeError[T any](body []byte, isError func(*T) bool) *T {
	if len(body) == 0 || len(body) > MaxBodyBytes {
		return nil
	}
	var e T
	if json.Unmarshal(body, &e) != nil || !isError(&e) {
		return nil
	}
	return &e
}

// ErrNoID is the check error of an object without an id.
var ErrNoID = errors.New("object has no id")

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
// every failure turned into the adapter's own *APIError. Each adapter keeps
// its APIError type (errors.As must tell the providers apart, and its
// fields are the provider's); what such an error holds is built here once,
// as a Failure, and the adapter's Error copies it into its type.
type API struct {
	// Name starts error texts ("stripe").
	Name string
	// BaseURL is the checked base URL (CheckBaseURL).
	BaseURL string
	// SetHeaders writes the credentials and Accept header of every GET.
	SetHeaders func(http.Header)
	// RequestIDHeader is the answer header that carries the provider's
	// request id ("Request-Id"); empty when the provider sends none.
	RequestIDHeader string
	// Scrub makes the text of an unusable answer fit to be kept (the
	// adapter's Scrub).
	Scrub func(string) string
	// Error is the adapter's *APIError of f. body is the answer's body when
	// it was a non-2xx answer, whose error the adapter reads into its
	// fields; it is nil for an answer too large to read or an unusable 2xx
	// body, whose Failure already says what is wrong.
	Error func(f Failure, body []byte) error
	// NotFound recognises the provider's own 404 "no such object" (status
	// 404 already checked). A 404 page from a proxy or a wrong BaseURL
	// says nothing about the object, so it must not pass.
	NotFound func(header http.Header, body []byte) bool
}

// Failure is what every adapter's APIError says about a failed GET.
type Failure struct {
	// Method and Path are the request's, without the query.
	Method, Path string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	// RequestID is the RequestIDHeader of the answer, if any.
	RequestID string
	// Message describes an answer too large to read or an unusable body;
	// it is empty for an error answer, whose body the adapter reads.
	Message string
}

// Fail is the adapter's error for a GET of path answered with status and
// header, with message (already scrubbed) saying what is wrong.
func (a API) Fail(path string, status int, header http.Header, message string) error {
	f := a.failure(path, status, header)
	f.Message = message
	return a.Error(f, nil)
}

// Unusable is the adapter's error for a 2xx answer to a GET of path whose
// body is not what the endpoint returns: err says why.
func (a API) Unusable(path string, header http.Header, err error) error {
	return a.Fail(path, 0, header, a.Scrub("unusable answer: "+err.Error()))
}

// failure names the answer to a GET of path.
func (a API) failure(path string, status int, header http.Header) Failure {
	f := Failure{Method: http.MethodGet, Path: path, HTTPStatus: status}
	if a.RequestIDHeader != "" {
		f.RequestID = header.Get(a.RequestIDHeader)
	}
	return f
}

// Get sends one GET (Get in http.go) and reads at most MaxBodyBytes of
// the answer; a larger one is the adapter's error (Fail) saying so.
func (a API) Get(ctx context.Context, hc payonce.HTTPDoer, path string, query url.Values) (int, http.Header, []byte, error) {
	status, header, body, err := Get(ctx, hc, a.Name, a.BaseURL, path, query, a.SetHeaders)
	if big := (*TooLargeError)(nil); errors.As(err, &big) {
		return 0, nil, nil, a.Fail(path, big.Status, big.Header, big.Error())
	}
	return status, header, body, err
}

// GetJSON sends one GET and decodes its 2xx answer into v: a non-2xx
// answer is the adapter's error of that answer, a body that does not
// decode the Unusable one.
func (a API) GetJSON(ctx context.Context, hc payonce.HTTPDoer, path string, query url.Values, v any) (http.Header, error) {
	status, header, body, err := a.Get(ctx, hc, path, query)
	if err != nil {
		return nil, err
	}
	if status < 200 || status >= 300 {
		return nil, a.Error(a.failure(path, status, header), body)
	}
	if err := DecodeJSON(body, v); err != nil {
		return nil, a.Unusable(path, header, err)
	}
	return header, nil
}

// GetObject reads one object by id: found is false on the provider's own
// 404 (NotFound); any other non-2xx answer is the adapter's error of it.
func (a API) GetObject(ctx context.Context, hc payonce.HTTPDoer, path string) (status int, header http.Header, body []byte, found bool, err error) {
	status, header, body, err = a.Get(ctx, hc, path, nil)
	if err != nil {
		return 0, nil, nil, false, err
	}
	if status == http.StatusNotFound && a.NotFound(header, body) {
		return status, header, nil, false, nil
	}
	if status < 200 || status >= 300 {
		return 0, nil, nil, false, a.Error(a.failure(path, status, header), body)
	}
	return status, header, body, true, nil
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

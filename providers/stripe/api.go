package stripe

import (
	"context"
	"errors"
	"net/http"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// APIError is a Stripe answer that a lookup could not use (an error status,
// or a body that is not what the endpoint returns). It never holds request
// headers or the API key; Message is Stripe's, scrubbed of anything that
// looks like a key.
type APIError struct {
	// Method and Path are the request's, without the query.
	Method string
	Path   string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	RequestID  string
	// Type, Code, DeclineCode and Message come from Stripe's error JSON
	// when there was one; Message may also describe an unusable body.
	Type        string
	Code        string
	DeclineCode string
	Message     string
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("stripe", e.Method, e.Path, e.HTTPStatus, "request", e.RequestID, e.Type, e.Code, e.DeclineCode, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body (a truncated or proxied answer).
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// apiError is err as an *APIError when it is an answer the lookup cannot
// use (an adapterkit.Failure), its message scrubbed of the credentials;
// nil and the transport's errors pass as they are.
func (p *Provider) apiError(err error) error {
	var f *adapterkit.Failure
	if !errors.As(err, &f) {
		return err
	}
	e := &APIError{Method: f.Method, Path: f.Path, HTTPStatus: f.HTTPStatus, RequestID: f.Header.Get("Request-Id"), Message: p.scrub(f.Message)}
	if b := decodeError(f.Body); b != nil {
		e.Type, e.Code, e.DeclineCode, e.Message = b.Type, b.Code, b.DeclineCode, p.scrub(b.Message)
	}
	return e
}

// getObject reads one object by id (adapterkit.Get): found is false on
// Stripe's own 404 resource_missing (a 404 page from a proxy or a wrong
// BaseURL says nothing about the object); every other failure is an
// *APIError.
func (p *Provider) getObject(ctx context.Context, hc payonce.HTTPDoer, path string) (status int, header http.Header, body []byte, found bool, err error) {
	status, header, body, err = adapterkit.Get(ctx, hc, p.Name(), p.baseURL, path, nil, p.setHeaders)
	if f := (*adapterkit.Failure)(nil); errors.As(err, &f) && f.HTTPStatus == http.StatusNotFound && isResourceMissing(f.Body) {
		return f.HTTPStatus, f.Header, nil, false, nil
	}
	return status, header, body, err == nil, p.apiError(err)
}

// isResourceMissing reports Stripe's own "no such object" error body.
func isResourceMissing(body []byte) bool {
	e := decodeError(body)
	return e != nil && e.Code == codeResourceMissing
}

// unusable is the *APIError of a 2xx answer to a GET of path whose body is
// not what the endpoint returns: err says why.
func (p *Provider) unusable(path string, header http.Header, err error) error {
	return p.apiError(adapterkit.Unusable(path, header, err))
}

package checkout

import (
	"context"
	"errors"
	"net/http"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// APIError is a Checkout.com answer that a lookup could not use (an error
// status, or a body that is not what the endpoint returns). It never holds
// request headers or the secret key.
type APIError struct {
	// Method and Path are the request's, without the query.
	Method string
	Path   string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	// RequestID is the Cko-Request-Id header (or the body's request_id).
	RequestID string
	// Code is the error_type and Message the error_codes, when Checkout.com
	// sent them; Message may also describe an unusable body.
	Code    string
	Message string
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("checkout", e.Method, e.Path, e.HTTPStatus, "request", e.RequestID, e.Code, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body.
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// apiError is err as an *APIError when it is an answer the lookup cannot
// use (an adapterkit.Failure), its message scrubbed of the credentials;
// nil and the transport's errors pass as they are.
func (p *Provider) apiError(err error) error {
	var f *adapterkit.Failure
	if !errors.As(err, &f) {
		return err
	}
	e := &APIError{Method: f.Method, Path: f.Path, HTTPStatus: f.HTTPStatus, RequestID: f.Header.Get("Cko-Request-Id"), Message: p.scrub(f.Message)}
	if b := decodeError(f.Body); b != nil {
		e.Code, e.Message = p.scrub(b.ErrorType), p.scrub(b.message())
		if e.RequestID == "" {
			e.RequestID = b.RequestID
		}
	}
	return e
}

// getObject reads one object by id (adapterkit.Get): found is false on
// Checkout.com's own 404 (ckoNotFound); every other failure is an *APIError.
func (p *Provider) getObject(ctx context.Context, hc payonce.HTTPDoer, path string) (status int, header http.Header, body []byte, found bool, err error) {
	status, header, body, err = adapterkit.Get(ctx, hc, p.Name(), p.baseURL, path, nil, p.setHeaders)
	// Only a 404 whose body was read (Message is empty) can be
	// Checkout.com's "no such object": ckoNotFound accepts an empty body,
	// and one too large to read is not empty, it is unknown.
	if f := (*adapterkit.Failure)(nil); errors.As(err, &f) && f.HTTPStatus == http.StatusNotFound && f.Message == "" && ckoNotFound(f.Header, f.Body) {
		return f.HTTPStatus, f.Header, nil, false, nil
	}
	return status, header, body, err == nil, p.apiError(err)
}

// unusable is the *APIError of a 2xx answer to a GET of path whose body is
// not what the endpoint returns: err says why.
func (p *Provider) unusable(path string, header http.Header, err error) error {
	return p.apiError(adapterkit.Unusable(path, header, err))
}

package stripe

import (
	"net/http"

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

// api is how the lookups read Stripe: a 404 counts as "no such object"
// only with Stripe's own resource_missing (a 404 page from a proxy or a
// wrong BaseURL says nothing about the object), and every failure is an
// *APIError.
func (p *Provider) api() adapterkit.API {
	return adapterkit.API{Name: p.Name(), BaseURL: p.baseURL, SetHeaders: p.setHeaders,
		RequestIDHeader: "Request-Id", Scrub: p.scrub,
		Error: func(f adapterkit.Failure, body []byte) error {
			e := &APIError{Method: f.Method, Path: f.Path, HTTPStatus: f.HTTPStatus, RequestID: f.RequestID, Message: f.Message}
			if b := decodeError(body); b != nil {
				e.Type, e.Code, e.DeclineCode, e.Message = b.Type, b.Code, b.DeclineCode, p.scrub(b.Message)
			}
			return e
		},
		NotFound: func(_ http.Header, body []byte) bool {
			e := decodeError(body)
			return e != nil && e.Code == codeResourceMissing
		},
	}
}

func (p *Provider) unusable(path string, header http.Header, err error) error {
	return p.api().Unusable(path, header, err)
}

package checkout

import (
	"net/http"

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

// api is how the lookups read Checkout.com: a 404 counts as "no such
// payment" only when it is Checkout.com's own (ckoNotFound), and every
// failure is an *APIError carrying the Cko-Request-Id (or, when the header
// is missing, the error body's request_id).
func (p *Provider) api() adapterkit.API {
	return adapterkit.API{Name: p.Name(), BaseURL: p.baseURL, SetHeaders: p.setHeaders, NotFound: ckoNotFound,
		RequestIDHeader: "Cko-Request-Id", Scrub: p.scrub,
		Error: func(f adapterkit.Failure, body []byte) error {
			e := &APIError{Method: f.Method, Path: f.Path, HTTPStatus: f.HTTPStatus, RequestID: f.RequestID, Message: f.Message}
			if b := decodeError(body); b != nil {
				e.Code, e.Message = p.scrub(b.ErrorType), p.scrub(b.message())
				if e.RequestID == "" {
					e.RequestID = b.RequestID
				}
			}
			return e
		},
	}
}

func (p *Provider) unusable(path string, header http.Header, err error) error {
	return p.api().Unusable(path, header, err)
}

package adapterkit

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Failure is an answer to a GET that a lookup cannot use: an error status,
// an answer too large to read, or a 2xx body that is not what the endpoint
// returns. Each adapter turns it into its own *APIError, reading Body for
// its provider's error fields and Header for its request id: errors.As
// must tell the providers apart, and an APIError's fields are the
// provider's.
type Failure struct {
	// Method and Path are the request's, without the query.
	Method, Path string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	// Header is the answer's header; nil when the adapter names no answer.
	Header http.Header
	// Body is an error answer's body; nil for an answer too large to read
	// or an unusable 2xx body, whose Message says what is wrong.
	Body []byte
	// Message describes an answer too large to read or an unusable body;
	// it is empty for an error answer. It is not scrubbed: the adapter
	// scrubs it as it builds its APIError.
	Message string
}

// Error names the request and what is wrong with its answer.
func (f *Failure) Error() string {
	return ErrorText("provider", f.Method, f.Path, f.HTTPStatus, "", "", f.Message)
}

// Fail is the Failure of a GET of path answered with status (0 for a 2xx)
// and header, with message saying what is wrong.
func Fail(path string, status int, header http.Header, message string) *Failure {
	return &Failure{Method: http.MethodGet, Path: path, HTTPStatus: status, Header: header, Message: message}
}

// Unusable is the Failure of a 2xx answer to a GET of path whose body is
// not what the endpoint returns: err says why.
func Unusable(path string, header http.Header, err error) *Failure {
	return Fail(path, 0, header, "unusable answer: "+err.Error())
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

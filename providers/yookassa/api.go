package yookassa

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/payonce/payonce"

	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// APIError is a YooKassa answer that a lookup could not use (an error
// status, or a body that is not what the endpoint returns). It never holds
// request headers or credentials; Message is YooKassa's, scrubbed.
type APIError struct {
	// Method and Path are the request's, without the query.
	Method string
	Path   string
	// HTTPStatus is 0 when the status was 2xx but the body unusable.
	HTTPStatus int
	// RequestID is the error object's id, when YooKassa sent one.
	RequestID string
	// Code and Message come from YooKassa's error JSON when there was one;
	// Message may also describe an unusable body.
	Code    string
	Message string
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("yookassa", e.Method, e.Path, e.HTTPStatus, "error id", e.RequestID, e.Code, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body.
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// listLimit is the page size of list lookups (YooKassa's maximum).
const listLimit = 100

// maxListPages bounds the pages one lookup reads; an operation whose search
// would need more is reported as an error rather than guessed about.
const maxListPages = 100

// pageList reads every page of a YooKassa list, calling fn for each item.
func pageList[T any](ctx context.Context, p *Provider, hc payonce.HTTPDoer, path string, filter url.Values, fn func(T) error) error {
	cursor := ""
	for page := 0; ; page++ {
		if page == maxListPages {
			return fmt.Errorf("yookassa: lookup: GET %s has more than %d items for this search; look it up by hand", path, maxListPages*listLimit)
		}
		query := url.Values{"limit": {strconv.Itoa(listLimit)}}
		for k, v := range filter {
			query[k] = v
		}
		if cursor != "" {
			query.Set("cursor", cursor)
		}
		var res listOf[T]
		if _, err := p.api().GetJSON(ctx, hc, path, query, &res); err != nil {
			return err
		}
		if res.Type != typeList {
			return p.unusable(path, fmt.Errorf("type is %q, want %q", res.Type, typeList))
		}
		for _, it := range res.Items {
			if err := fn(it); err != nil {
				return p.unusable(path, err)
			}
		}
		if res.NextCursor == "" {
			return nil
		}
		if len(res.Items) == 0 || res.NextCursor == cursor {
			return p.unusable(path, errors.New("list returned no progress but a next_cursor"))
		}
		cursor = res.NextCursor
	}
}

// api is how the lookups read YooKassa: a 404 counts as "no such object"
// only with YooKassa's own not_found (a 404 page from a proxy or a wrong
// BaseURL says nothing), and every failure is an *APIError. YooKassa
// sends no request id header; an error body's id is the RequestID.
func (p *Provider) api() adapterkit.API {
	return adapterkit.API{Name: p.Name(), BaseURL: p.baseURL, SetHeaders: p.setHeaders, Scrub: p.scrub,
		Error: func(f adapterkit.Failure, body []byte) error {
			e := &APIError{Method: f.Method, Path: f.Path, HTTPStatus: f.HTTPStatus, Message: f.Message}
			if b := decodeError(body); b != nil {
				e.RequestID, e.Code, e.Message = b.ID, b.Code, p.scrub(b.Description)
			}
			return e
		},
		NotFound: func(_ http.Header, body []byte) bool {
			e := decodeError(body)
			return e != nil && e.Code == codeNotFound
		},
	}
}

func (p *Provider) unusable(path string, err error) error { return p.api().Unusable(path, nil, err) }

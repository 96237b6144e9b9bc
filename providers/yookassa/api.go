package yookassa

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

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

	// retryAfter is the body's retry_after (429, 202), for the audit's
	// pacing.
	retryAfter time.Duration
}

// Error describes the failed lookup request.
func (e *APIError) Error() string {
	return adapterkit.ErrorText("yookassa", e.Method, e.Path, e.HTTPStatus, "error id", e.RequestID, e.Code, e.Message)
}

// Temporary reports whether asking again later may give an answer: a 429,
// a 5xx, or an unusable 2xx body.
func (e *APIError) Temporary() bool { return adapterkit.Temporary(e.HTTPStatus) }

// listLimit is the page size of list reads (YooKassa's maximum: limit is
// 1 to 100, https://yookassa.ru/developers/using-api/lists).
const listLimit = 100

// maxListPages bounds the pages one lookup reads; an operation whose search
// would need more is reported as an error rather than guessed about.
const maxListPages = 100

// errStop ends a listing early without it being an unusable answer: the
// caller's fn said so (the audit's yield returned an error, kept aside).
var errStop = errors.New("yookassa: listing stopped")

// listOptions tune pageList for the audit: no page bound, and a pause
// before each request after the first (pace).
type listOptions struct {
	maxPages int // 0: no bound
	pace     func(ctx context.Context) error
}

// pageList reads every page of a YooKassa list, calling fn for each item;
// an error from fn is an unusable answer, except errStop, returned as is.
func pageList[T any](ctx context.Context, p *Provider, hc payonce.HTTPDoer, path string, filter url.Values, fn func(T) error) error {
	return pageListWith(ctx, p, hc, path, filter, listOptions{maxPages: maxListPages}, fn)
}

func pageListWith[T any](ctx context.Context, p *Provider, hc payonce.HTTPDoer, path string, filter url.Values, o listOptions, fn func(T) error) error {
	cursor := ""
	for page := 0; ; page++ {
		if o.maxPages > 0 && page == o.maxPages {
			return fmt.Errorf("yookassa: lookup: GET %s has more than %d items for this search; look it up by hand", path, o.maxPages*listLimit)
		}
		query := url.Values{"limit": {strconv.Itoa(listLimit)}}
		for k, v := range filter {
			query[k] = v
		}
		if cursor != "" {
			query.Set("cursor", cursor)
		}
		var res listOf[T]
		get := func() error {
			_, err := adapterkit.GetJSON(ctx, hc, p.Name(), p.baseURL, path, query, p.setHeaders, &res)
			return p.apiError(err)
		}
		var err error
		if o.pace != nil {
			err = p.paced(ctx, page, o.pace, get)
		} else {
			err = get()
		}
		if err != nil {
			return err
		}
		if res.Type != typeList {
			return p.unusable(path, fmt.Errorf("type is %q, want %q", res.Type, typeList))
		}
		for _, it := range res.Items {
			if err := fn(it); errors.Is(err, errStop) {
				return err
			} else if err != nil {
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

// apiError is err as an *APIError when it is an answer the lookup cannot
// use (an adapterkit.Failure), its message scrubbed of the credentials;
// nil and the transport's errors pass as they are.
func (p *Provider) apiError(err error) error {
	var f *adapterkit.Failure
	if !errors.As(err, &f) {
		return err
	}
	e := &APIError{Method: f.Method, Path: f.Path, HTTPStatus: f.HTTPStatus, Message: p.scrub(f.Message)}
	if b := decodeError(f.Body); b != nil {
		e.RequestID, e.Code, e.Message = b.ID, b.Code, p.scrub(b.Description)
		e.retryAfter = b.retryAfter()
	}
	return e
}

// getObject reads one object by id (adapterkit.Get): found is false on
// YooKassa's own 404 not_found (a 404 page from a proxy or a wrong BaseURL
// says nothing about the object); every other failure is an *APIError.
func (p *Provider) getObject(ctx context.Context, hc payonce.HTTPDoer, path string) (status int, header http.Header, body []byte, found bool, err error) {
	status, header, body, err = adapterkit.Get(ctx, hc, p.Name(), p.baseURL, path, nil, p.setHeaders)
	if f := (*adapterkit.Failure)(nil); errors.As(err, &f) && f.HTTPStatus == http.StatusNotFound && isNotFound(f.Body) {
		return f.HTTPStatus, f.Header, nil, false, nil
	}
	return status, header, body, err == nil, p.apiError(err)
}

// isNotFound reports YooKassa's own "no such object" error body.
func isNotFound(body []byte) bool {
	e := decodeError(body)
	return e != nil && e.Code == codeNotFound
}

// unusable is the *APIError of a 2xx answer to a GET of path whose body is
// not what the endpoint returns: err says why.
func (p *Provider) unusable(path string, err error) error {
	return p.apiError(adapterkit.Unusable(path, nil, err))
}

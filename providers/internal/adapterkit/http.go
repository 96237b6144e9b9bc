package adapterkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce"
)

// MaxBodyBytes is the most of an answer an adapter reads: the client's
// own limit, payonce.MaxBodyBytes.
const MaxBodyBytes = payonce.MaxBodyBytes

// MaxRetryAfter bounds a wait read from an answer (Retry-After or a body's
// retry_after).
const MaxRetryAfter = 24 * time.Hour

// CheckBaseURL checks a Config.BaseURL, def when it is empty: an absolute
// http or https URL without user info, query or fragment. It returns the
// URL without trailing slashes, ready for paths to be appended. The error
// is the problem to report on the Config's BaseURL field; credentials ends
// the user-info problem and says where the credentials go instead
// ("the API key goes in Config.APIKey").
func CheckBaseURL(base, def, credentials string) (string, error) {
	if base == "" {
		base = def
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("is not a valid URL; use an absolute http(s) URL such as %q", def)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("must start with https:// (or http:// for a local fake), such as %q", def)
	case u.Host == "":
		return "", fmt.Errorf("has no host; use an absolute URL such as %q", def)
	case u.User != nil:
		return "", errors.New("must not contain user info; " + credentials)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("must not have a query or fragment; use scheme, host and an optional path prefix only")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Get sends one GET of base+path (with query, if any) through hc, with the
// headers setHeaders writes, and reads at most MaxBodyBytes of the answer;
// the body is always closed. It returns a 2xx answer; any other answer is
// a *Failure holding its status, header and body, and one larger than
// MaxBodyBytes a *Failure that says so, without the body. Other errors
// start with name ("stripe: GET /v1/...") and name the path, never the
// query; an http.Client error names the URL, which holds no secret, and
// never a header.
func Get(ctx context.Context, hc payonce.HTTPDoer, name, base, path string, query url.Values, setHeaders func(http.Header)) (status int, header http.Header, body []byte, err error) {
	u := base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s: build GET %s: %w", name, path, err)
	}
	setHeaders(req.Header)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s: GET %s: %w", name, path, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, MaxBodyBytes+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%s: GET %s: read answer: %w", name, path, err)
	}
	switch {
	case len(body) > MaxBodyBytes && Success(resp.StatusCode):
		// A 2xx body that cannot be read is an unusable answer
		// (HTTPStatus 0), as the adapters' APIError types document.
		return 0, nil, nil, Fail(path, 0, resp.Header, fmt.Sprintf("answer is larger than %d bytes", MaxBodyBytes))
	case len(body) > MaxBodyBytes:
		return 0, nil, nil, Fail(path, resp.StatusCode, resp.Header, fmt.Sprintf("answer is larger than %d bytes", MaxBodyBytes))
	case !Success(resp.StatusCode):
		return 0, nil, nil, &Failure{Method: http.MethodGet, Path: path, HTTPStatus: resp.StatusCode, Header: resp.Header, Body: body}
	}
	return resp.StatusCode, resp.Header, body, nil
}

// GetJSON sends one GET (Get) and decodes its answer into v; a body that
// does not decode is Unusable.
func GetJSON(ctx context.Context, hc payonce.HTTPDoer, name, base, path string, query url.Values, setHeaders func(http.Header), v any) (http.Header, error) {
	_, header, body, err := Get(ctx, hc, name, base, path, query, setHeaders)
	if err != nil {
		return nil, err
	}
	if err := DecodeJSON(body, v); err != nil {
		return nil, Unusable(path, header, err)
	}
	return header, nil
}

// DecodeJSON parses an answer's body into v; a body larger than
// MaxBodyBytes is refused unread. See also DecodeError.
func DecodeJSON(body []byte, v any) error {
	if len(body) > MaxBodyBytes {
		return fmt.Errorf("body is %d bytes, more than the %d the adapter reads", len(body), MaxBodyBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("body is not the expected JSON: %w", err)
	}
	return nil
}

// ErrorText is the text of an adapter's APIError:
//
//	<name>: <method> <path>: HTTP <status> (<idLabel> <id>): <detail>: ...
//
// leaving out a zero status, an empty id and empty details.
func ErrorText(name, method, path string, status int, idLabel, id string, details ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s %s", name, method, path)
	if status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", status)
	}
	if id != "" {
		fmt.Fprintf(&b, " (%s %s)", idLabel, id)
	}
	for _, s := range details {
		if s != "" {
			b.WriteString(": " + s)
		}
	}
	return b.String()
}

// Temporary reports whether asking again later may give an answer, for an
// APIError's HTTP status: a 429, a 5xx, or 0 (an unusable 2xx body: a
// truncated or proxied answer).
func Temporary(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status >= 500
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date,
// which now (called only for a date) turns into a wait. An absent,
// malformed or past value is 0; a value is at most MaxRetryAfter.
func RetryAfter(v string, now func() time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs >= int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now())
	} else {
		return 0
	}
	if d <= 0 {
		return 0
	}
	return min(d, MaxRetryAfter)
}

// Sleep waits d, or until ctx ends (its error then). It is the real wait
// behind an adapter's pacing of audit listings; tests replace it with a
// driven clock's.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

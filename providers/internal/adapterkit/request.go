package adapterkit

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/payonce/payonce"
)

// Invalid is a *payonce.ValidationError on field, named under prefix
// ("stripe.Config.", "stripe "), with the problem format says.
func Invalid(prefix, field, format string, args ...any) error {
	return &payonce.ValidationError{Field: prefix + field, Problem: fmt.Sprintf(format, args...)}
}

// CheckKey checks an attempt's idempotency key before anything is sent:
// set, at most max bytes, and a printable ASCII header value. A key that is
// not fit is a ValidationError on prefix+"Key" ("stripe Key") whose problem
// is empty for a missing key, tooLong (a format given the key's length and
// max) for a longer one.
func CheckKey(prefix, key string, max int, empty, tooLong string) error {
	if why := keyProblem(key, max, empty, tooLong); why != "" {
		return Invalid(prefix, "Key", "%s", why)
	}
	return nil
}

func keyProblem(key string, max int, empty, tooLong string) string {
	switch {
	case key == "":
		return empty
	case len(key) > max:
		return fmt.Sprintf(tooLong, len(key), max)
	case strings.ContainsFunc(key, NotToken):
		return "contains spaces, control or non-ASCII characters; it must be a printable ASCII header value"
	}
	return ""
}

// Post builds the POST of one attempt of kind: body to u, with the
// adapter's headers (setHeaders), contentType, and the key in keyHeader,
// the same bytes on every attempt. Its only inputs are the validated base
// URL and escaped ids: the error names neither a credential nor a header.
func Post(ctx context.Context, name string, kind payonce.Kind, u string, body []byte, setHeaders func(http.Header), contentType, keyHeader, key string) (*http.Request, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: build %s request: %w", name, kind, err)
	}
	setHeaders(hr.Header)
	hr.Header.Set("Content-Type", contentType)
	hr.Header.Set(keyHeader, key)
	return hr, nil
}

// PostJSON is Post of v encoded by EncodeJSON (struct fields in
// declaration order, map keys sorted: the same bytes every time).
func PostJSON(ctx context.Context, name string, kind payonce.Kind, u string, v any, setHeaders func(http.Header), keyHeader, key string) (*http.Request, error) {
	raw, err := EncodeJSON(v)
	if err != nil {
		return nil, fmt.Errorf("%s: encode %s request: %w", name, kind, err)
	}
	return Post(ctx, name, kind, u, raw, setHeaders, "application/json", keyHeader, key)
}

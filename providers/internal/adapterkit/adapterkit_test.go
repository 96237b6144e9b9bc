package adapterkit_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/adyen"
	"github.com/payonce/payonce/providers/checkout"
	"github.com/payonce/payonce/providers/internal/adapterkit"
	"github.com/payonce/payonce/providers/stripe"
	"github.com/payonce/payonce/providers/yookassa"
)

func TestSecretNeverPrints(t *testing.T) {
	t.Parallel()
	const key = "sk_test_supersecret"
	s := adapterkit.Secret(key)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		require.Equal(t, "[REDACTED]", fmt.Sprintf(verb, s), verb)
		require.NotContains(t, fmt.Sprintf(verb, struct{ K adapterkit.Secret }{s}), key, verb)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "key", s)
	require.NotContains(t, buf.String(), key)
	require.Equal(t, `""`, adapterkit.Secret("").String(), "a missing key shows as missing")
	require.Equal(t, key, string(s))
}

func TestDisplayURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		keepUser bool
		want     string
	}{
		{"", false, ""},
		{"https://api.example.com/", false, "https://api.example.com/"},
		{"https://user:secret@api.example.com", false, "https://api.example.com (user info redacted)"},
		{"https://user:secret@api.example.com", true, "https://user:xxxxx@api.example.com"},
		{"https://[::1", false, "(invalid URL)"},
	} {
		require.Equal(t, tc.want, adapterkit.DisplayURL(tc.in, tc.keepUser), tc.in)
	}
}

func TestCheckBaseURL(t *testing.T) {
	t.Parallel()
	const def = "https://api.example.com"
	got, err := adapterkit.CheckBaseURL("", def, "")
	require.NoError(t, err)
	require.Equal(t, def, got)
	got, err = adapterkit.CheckBaseURL("http://127.0.0.1:1/prefix//", def, "")
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:1/prefix", got)
	for in, problem := range map[string]string{
		"https://[::1":             "valid URL",
		"ftp://api.example.com":    "https://",
		"https:///v1":              "host",
		"https://u:p@example.com":  "user info; the key goes elsewhere",
		"https://example.com?x=1":  "query",
		"https://example.com?":     "query",
		"https://example.com#frag": "fragment",
	} {
		_, err := adapterkit.CheckBaseURL(in, def, "the key goes elsewhere")
		require.ErrorContains(t, err, problem, in)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	keyLike := regexp.MustCompile(`\bsk_[a-z0-9_*]+`)
	require.Empty(t, adapterkit.Scrub("", keyLike, "x"))
	got := adapterkit.Scrub("key MYSECRET shop 123456 and sk_live_abc", keyLike, "MYSECRET", "", "123456")
	require.Equal(t, "key [REDACTED] shop [REDACTED] and [REDACTED]", got)

	long := adapterkit.Scrub(strings.Repeat("é", 3000)+"\xff", keyLike)
	require.True(t, utf8.ValidString(long))
	require.LessOrEqual(t, len(long), adapterkit.MaxMessageBytes+3)
	require.True(t, strings.HasSuffix(long, "..."))
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	for v, want := range map[string]time.Duration{
		"":     0,
		" 5 ":  5 * time.Second,
		"-3":   0,
		"1.5":  0,
		"soon": 0,
		now.Add(30 * time.Second).Format(http.TimeFormat): 30 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		"99999999999999999":                               adapterkit.MaxRetryAfter,
		"999999999999999999999999":                        0,
	} {
		require.Equal(t, want, adapterkit.RetryAfter(v, clock), "%q", v)
	}
}

func TestReferences(t *testing.T) {
	t.Parallel()
	require.Equal(t, `[]`, adapterkit.References(nil, 500, adapterkit.Bytes))
	require.Equal(t, `["a<b>&c"]`, adapterkit.References([]string{"a<b>&c"}, 500, adapterkit.Bytes), "no HTML escaping")
	require.Equal(t, `["...+1"]`, adapterkit.References([]string{strings.Repeat(`"`, 256)}, 500, adapterkit.Bytes))

	refs := make([]string, 16)
	for i := range refs {
		refs[i] = strings.Repeat("é", 100)
	}
	for _, m := range []struct {
		limit  int
		length func(string) int
	}{{500, adapterkit.Bytes}, {512, utf8.RuneCountInString}} {
		v := adapterkit.References(refs, m.limit, m.length)
		require.LessOrEqual(t, m.length(v), m.limit)
		var got []string
		require.NoError(t, json.Unmarshal([]byte(v), &got))
		require.Equal(t, refs[:len(got)-1], got[:len(got)-1])
		require.Equal(t, fmt.Sprintf("...+%d", len(refs)-len(got)+1), got[len(got)-1])
	}
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	r := payonce.SendRequest{OperationID: "op", Key: "k", Request: payonce.Request{Kind: payonce.KindRefund, References: []string{"o", "1"}}}
	require.Equal(t, map[string]string{"payonce_op": "op", "payonce_key": "k", "payonce_kind": "refund", "payonce_refs": `["o","1"]`},
		adapterkit.Metadata(r, 500, adapterkit.Bytes))
	require.Len(t, adapterkit.Metadata(r, 500, adapterkit.Bytes), adapterkit.MetadataKeys)
	require.True(t, adapterkit.Reserved("payonce_x"))
	require.False(t, adapterkit.Reserved("order_id"))
	// Case does not make a key payonce's or not.
	for _, k := range []string{"Payonce_op", "PAYONCE_KEY", "payONCE_x", "payonce_"} {
		require.True(t, adapterkit.Reserved(k), k)
	}
	for _, k := range []string{"payonce", "payonceop", "xpayonce_op", ""} {
		require.False(t, adapterkit.Reserved(k), k)
	}

	// The caller's keys are checked, then joined to payonce's.
	r.Request.Metadata = map[string]string{"order_id": "42"}
	l := adapterkit.MetadataLimits{Provider: "YooKassa", Keys: 6, Key: 8, Value: 3, Refs: 500, Length: utf8.RuneCountInString}
	md, err := adapterkit.WithMetadata("yookassa ", r, l)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"order_id": "42", "payonce_op": "op", "payonce_key": "k", "payonce_kind": "refund", "payonce_refs": `["o","1"]`}, md)
	for _, tc := range []struct {
		md      map[string]string
		problem string
	}{
		{map[string]string{"a": "1", "b": "2", "c": "3"}, "has 3 keys; YooKassa allows 6 and payonce adds 4, so use at most 2"},
		{map[string]string{"Payonce_op": "x"}, `key "Payonce_op" uses the reserved prefix "payonce_"; rename it`},
		{map[string]string{"éééééééééé": "1"}, `key "éééééééééé" is longer than YooKassa's 8 characters`},
		{map[string]string{"k": "éééé"}, `value of "k" is longer than YooKassa's 3 characters`},
	} {
		r.Request.Metadata = tc.md
		md, err := adapterkit.WithMetadata("yookassa ", r, l)
		require.Nil(t, md)
		var ve *payonce.ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, payonce.ValidationError{Field: "yookassa Request.Metadata", Problem: tc.problem}, *ve)
	}
	// Characters, not bytes: 8 two-byte runes fit.
	require.NoError(t, adapterkit.CheckMetadata("x ", map[string]string{"éééééééé": "ééé"}, l))
	// No limits but the reserved prefix.
	require.NoError(t, adapterkit.CheckMetadata("x ", map[string]string{strings.Repeat("k", 100): strings.Repeat("v", 1000)}, adapterkit.MetadataLimits{}))
	require.Error(t, adapterkit.CheckMetadata("x ", map[string]string{"payonce_x": ""}, adapterkit.MetadataLimits{}))

	// The adapters document the same keys under their own names.
	for _, keys := range [][4]string{
		{adyen.MetaOperation, adyen.MetaKey, adyen.MetaKind, adyen.MetaReferences},
		{stripe.MetaOperation, stripe.MetaKey, stripe.MetaKind, stripe.MetaReferences},
		{yookassa.MetaOperation, yookassa.MetaKey, yookassa.MetaKind, yookassa.MetaReferences},
		{checkout.MetaOperation, checkout.MetaKey, checkout.MetaKind, checkout.MetaReferences},
	} {
		require.Equal(t, [4]string{adapterkit.MetaOperation, adapterkit.MetaKey, adapterkit.MetaKind, adapterkit.MetaReferences}, keys)
	}
}

func TestErrorTextAndTemporary(t *testing.T) {
	t.Parallel()
	require.Equal(t, "x: GET /p: HTTP 500 (request r1): a: b",
		adapterkit.ErrorText("x", "GET", "/p", 500, "request", "r1", "a", "", "b"))
	require.Equal(t, "x: GET /p", adapterkit.ErrorText("x", "GET", "/p", 0, "request", ""))
	for status, want := range map[int]bool{0: true, 429: true, 500: true, 503: true, 400: false, 404: false} {
		require.Equal(t, want, adapterkit.Temporary(status), status)
	}
}

package adapterkit

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Redacted replaces a secret wherever one would be shown.
const Redacted = "[REDACTED]"

// Secret is a credential (API key, secret key, shop id). It prints as
// [REDACTED] (or `""` when empty, so that a missing key shows as missing)
// under every fmt verb, in %#v and in slog, so it can be handed to Sprintf
// or a logger as it is. string(s) is the credential itself, for the one
// header that needs it.
type Secret string

// String returns [REDACTED], or `""` for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return `""`
	}
	return Redacted
}

// GoString is String: %#v never shows the secret either.
func (s Secret) GoString() string { return s.String() }

// Format writes String for every verb (see Format).
func (s Secret) Format(f fmt.State, verb rune) { Format(f, verb, s) }

// LogValue makes slog log the secret redacted.
func (s Secret) LogValue() slog.Value { return LogValue(s) }

// Redaction. A type that holds a secret (an adapter's Config and Provider,
// Secret) writes one String that leaves the secret out, and its other
// ways of being printed all call that String: GoString returns it, and
// Format and LogValue are these two helpers. The methods have value
// receivers, so that a copied value is redacted too. Nothing else prints
// the type: no fmt verb (%v, %+v, %#v, %s, %d, %x, ...), no slog handler.

// Format writes v.String() for every verb.
func Format(f fmt.State, _ rune, v fmt.Stringer) { _, _ = io.WriteString(f, v.String()) }

// LogValue is v.String() for slog.
func LogValue(v fmt.Stringer) slog.Value { return slog.StringValue(v.String()) }

// NowSet describes a Config's Now for its String: "set" or "nil" (a
// func's address says nothing to a reader).
func NowSet(now func() time.Time) string {
	if now == nil {
		return "nil"
	}
	return "set"
}

// DisplayURL renders a Config.BaseURL for a Config's String: "" stays "",
// and an unparsable URL is "(invalid URL)" (its text could be anything,
// a key included). User info is dropped whole, and the result says so, as
// the user name itself may be a credential; with keepUser, only the
// password is masked (url.URL.Redacted).
func DisplayURL(base string, keepUser bool) string {
	if base == "" {
		return ""
	}
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return "(invalid URL)"
	case keepUser:
		return u.Redacted()
	case u.User != nil:
		u.User = nil
		return u.String() + " (user info redacted)"
	}
	return u.String()
}

// MaxMessageBytes bounds a provider message kept in an Outcome, a
// LookupResult or an error.
const MaxMessageBytes = 1000

// Scrub makes a provider message fit to be stored and logged: it replaces
// every non-empty value of secrets, then every match of keyLike (keys the
// provider may echo, whole or masked), with [REDACTED]; replaces invalid
// UTF-8; and cuts the message to MaxMessageBytes on a rune boundary, ending
// it with "...". Secrets are replaced in the order given.
func Scrub(s string, keyLike *regexp.Regexp, secrets ...string) string {
	if s == "" {
		return ""
	}
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	s = keyLike.ReplaceAllString(s, Redacted)
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > MaxMessageBytes {
		cut := MaxMessageBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// NotToken reports a rune that may not appear in a credential or another
// header value: anything but printable, non-space ASCII.
func NotToken(r rune) bool { return r <= ' ' || r >= 0x7f }

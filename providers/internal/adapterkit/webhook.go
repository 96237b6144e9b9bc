package adapterkit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// Webhooks. What every adapter's ParseWebhook does the same way: compare a
// signature in constant time, decode a bounded body, word its errors (each
// wrapping one of payonce's ErrWebhook* sentinels, so the handler picks the
// status) and check the events before they are handed on (CheckEvent). The
// adapter keeps its provider's facts: header names, what is signed, the
// event shapes and their meaning.
//
// Errors never contain the secret, the signature or the body: the handler
// logs them, and the endpoint faces the internet.

// HMACSHA256 is HMAC-SHA256 of the concatenated parts under key.
func HMACSHA256(key []byte, parts ...[]byte) []byte {
	mac := hmac.New(sha256.New, key)
	for _, p := range parts {
		mac.Write(p) // a hash.Hash never returns an error
	}
	return mac.Sum(nil)
}

// EqualHex reports whether sig, hex-encoded (either case), is mac. The
// comparison is constant-time (hmac.Equal), so that timing does not tell
// an attacker how many bytes of a forged signature are right.
func EqualHex(mac []byte, sig string) bool {
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	return err == nil && len(got) == len(mac) && hmac.Equal(got, mac)
}

// EqualBase64 reports whether sig is mac in standard base64 with padding,
// in constant time. sig must be that text exactly: a MAC has one such
// spelling, and decoding sig instead would also accept others for the same
// bytes (surrounding spaces, line breaks the decoder skips, non-zero
// padding bits), which a provider that signs inside the body (Adyen's
// hmacSignature) never sends.
func EqualBase64(mac []byte, sig string) bool {
	return hmac.Equal([]byte(base64.StdEncoding.EncodeToString(mac)), []byte(sig))
}

// EqualSecret reports whether got is want (a configured header value or
// password), in constant time. Both are hashed first, so that neither the
// content nor the length of want leaks through timing.
func EqualSecret(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// Unauthenticated is an error wrapping payonce.ErrWebhookUnauthenticated:
// "<name>: webhook: <what>". what must not hold a secret or a signature.
func Unauthenticated(name, format string, args ...any) error {
	return fmt.Errorf("%s: webhook: %s: %w", name, fmt.Sprintf(format, args...), payonce.ErrWebhookUnauthenticated)
}

// Credentials is an error wrapping payonce.ErrWebhookCredentials (the
// handler answers 401).
func Credentials(name, format string, args ...any) error {
	return fmt.Errorf("%s: webhook: %s: %w", name, fmt.Sprintf(format, args...), payonce.ErrWebhookCredentials)
}

// Forbidden is an error wrapping payonce.ErrWebhookForbidden (the handler
// answers 403).
func Forbidden(name, format string, args ...any) error {
	return fmt.Errorf("%s: webhook: %s: %w", name, fmt.Sprintf(format, args...), payonce.ErrWebhookForbidden)
}

// Malformed is an error wrapping payonce.ErrWebhookMalformed (the handler
// answers 400).
func Malformed(name, format string, args ...any) error {
	return fmt.Errorf("%s: webhook: %s: %w", name, fmt.Sprintf(format, args...), payonce.ErrWebhookMalformed)
}

// DecodeWebhook parses a verified body into v: a body over
// payonce.MaxWebhookBytes, empty, or not one JSON object is Malformed. The
// JSON error says where the body is wrong, never what it holds.
func DecodeWebhook(name string, body []byte, v any) error {
	switch {
	case len(body) > payonce.MaxWebhookBytes:
		return Malformed(name, "body is %d bytes, more than %d", len(body), payonce.MaxWebhookBytes)
	case len(bytes.TrimSpace(body)) == 0:
		return Malformed(name, "body is empty")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return Malformed(name, "body is not the provider's event JSON (%s)", jsonProblem(err))
	}
	return nil
}

// jsonProblem describes a JSON error without quoting the body: a syntax
// error's offset, a type error's field.
func jsonProblem(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("syntax error at byte %d", e.Offset)
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("field %q has the wrong type (%s)", e.Field, e.Value)
	}
	return "not a JSON object"
}

// CheckEvent makes a verified event fit to be recorded, or says why it is
// Malformed. The ledger refuses (Store.RecordWebhook, as a 5xx that makes
// the provider deliver again and again) an event whose identity is empty,
// too long, not UTF-8 or holds a NUL byte; a signed event like that can
// only be refused here, once, with 400. So:
//   - ID and Type must be set, ID at most ledger.MaxWebhookIDBytes, and
//     both, and every target's Kind, OperationID, ProviderRef and
//     PaymentRef, valid UTF-8 without NUL (JSON's \u0000 decodes to one);
//   - a target must name an object (OperationID, ProviderRef or
//     PaymentRef); one that names none is dropped (nothing can be found
//     by it), and targets beyond ledger.MaxWebhookTargets are dropped too;
//   - Code, DeclineCode and Message go through scrub (the adapter's: its
//     secrets, bounded length) and lose NUL bytes and invalid UTF-8.
func CheckEvent(name string, ev payonce.WebhookEvent, scrub func(string) string) (payonce.WebhookEvent, error) {
	switch {
	case ev.ID == "":
		return ev, Malformed(name, "event has no id")
	case len(ev.ID) > ledger.MaxWebhookIDBytes:
		return ev, Malformed(name, "event id is %d bytes, more than %d", len(ev.ID), ledger.MaxWebhookIDBytes)
	case ev.Type == "":
		return ev, Malformed(name, "event has no type")
	case !storable(ev.ID), !storable(ev.Type):
		return ev, Malformed(name, "event id or type holds a NUL byte or invalid UTF-8")
	}
	targets := make([]payonce.WebhookTarget, 0, len(ev.Targets))
	for _, t := range ev.Targets {
		if t.OperationID == "" && t.ProviderRef == "" && t.PaymentRef == "" {
			continue
		}
		if !storable(string(t.Kind)) || !storable(t.OperationID) || !storable(t.ProviderRef) || !storable(t.PaymentRef) || !storable(t.Key) ||
			len(t.OperationID) > ledger.MaxWebhookIDBytes || len(t.ProviderRef) > ledger.MaxWebhookIDBytes || len(t.PaymentRef) > ledger.MaxWebhookIDBytes ||
			len(t.Key) > ledger.MaxWebhookIDBytes {
			return ev, Malformed(name, "event %s names an object by an id or key that holds a NUL byte, invalid UTF-8 or is too long", cleanText(ev.ID))
		}
		// The ledger refuses what it cannot store; refused here, the
		// delivery is a 400 the provider's logs show, not a 503 that it
		// redelivers for days.
		if t.Amount < 0 || !storable(t.Currency) || len(t.Currency) > 16 {
			return ev, Malformed(name, "event %s gives its object a negative amount or an unreadable currency", cleanText(ev.ID))
		}
		t.Code, t.DeclineCode, t.Message = cleanText(scrub(t.Code)), cleanText(scrub(t.DeclineCode)), cleanText(scrub(t.Message))
		targets = append(targets, t)
		if len(targets) == ledger.MaxWebhookTargets {
			break
		}
	}
	if len(targets) == 0 {
		targets = nil
	}
	ev.Targets = targets
	return ev, nil
}

// OneEvent is the answer of a ParseWebhook whose delivery carries one
// event: ev, checked by CheckEvent.
func OneEvent(name string, ev payonce.WebhookEvent, scrub func(string) string) ([]payonce.WebhookEvent, error) {
	ev, err := CheckEvent(name, ev, scrub)
	if err != nil {
		return nil, err
	}
	return []payonce.WebhookEvent{ev}, nil
}

func storable(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// cleanText drops NUL bytes and replaces invalid UTF-8, so that a
// provider's text can always be stored.
func cleanText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// WebhookState is the LookupState of a State read from a webhook's object.
// VerdictNotYet (a capture or cancel that did not happen yet) and
// VerdictUnknown (a status the adapter does not know) are processing: an
// event changes nothing it does not understand, so a new provider status
// can never settle an operation by accident.
func WebhookState(s State) payonce.LookupState {
	switch s.Verdict {
	case VerdictSucceeded:
		return payonce.LookupSucceeded
	case VerdictFailed:
		return payonce.LookupFailed
	}
	return payonce.LookupProcessing
}

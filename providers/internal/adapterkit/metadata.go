package adapterkit

import (
	"bytes"
	"encoding/json"
	"maps"
	"strconv"
	"strings"

	"github.com/payonce/payonce"
)

// Metadata keys every adapter writes on the objects it creates (the
// adapters export them again, with their own docs, as MetaOperation etc.).
const (
	// MetaOperation holds the operation id; lookups find objects by it.
	MetaOperation = "payonce_op"
	// MetaKey holds the idempotency key of the attempt.
	MetaKey = "payonce_key"
	// MetaKind holds the operation kind.
	MetaKind = "payonce_kind"
	// MetaReferences holds the operation's references as a JSON array, cut
	// to the provider's value limit (see References).
	MetaReferences = "payonce_refs"

	// ReservedPrefix starts every key payonce writes; caller metadata may
	// not use it.
	ReservedPrefix = "payonce_"
	// MetadataKeys is how many keys Metadata adds to the caller's.
	MetadataKeys = 4
)

// Reserved reports whether a caller's metadata key uses ReservedPrefix.
// The check ignores case: a provider that folds metadata keys, or an
// operator reading them, would take "Payonce_op" for payonce's own key, and
// a caller value there could make a lookup match the wrong object.
func Reserved(key string) bool {
	return len(key) >= len(ReservedPrefix) && strings.EqualFold(key[:len(ReservedPrefix)], ReservedPrefix)
}

// Metadata returns payonce's own metadata for an attempt: the operation
// id, the key, the kind and the references (see References, with limit and
// length).
func Metadata(r payonce.SendRequest, limit int, length func(string) int) map[string]string {
	return map[string]string{
		MetaOperation:  r.OperationID,
		MetaKey:        r.Key,
		MetaKind:       string(r.Request.Kind),
		MetaReferences: References(r.Request.References, limit, length),
	}
}

// MetadataLimits are a provider's limits on the metadata of one object,
// which CheckMetadata holds a caller's metadata to. A zero limit is none
// (the provider documents none, or the adapter checks it another way).
type MetadataLimits struct {
	// Provider names the provider in the problems ("YooKassa").
	Provider string
	// Keys is how many keys one object takes, payonce's MetadataKeys
	// included.
	Keys int
	// Key and Value are the longest key and value in characters, as
	// Length counts them.
	Key, Value int
	// Refs bounds the payonce_refs value (References, in WithMetadata);
	// 0 is Value.
	Refs int
	// Length measures keys, values and the references:
	// utf8.RuneCountInString for a provider that counts characters, Bytes
	// for one that counts bytes.
	Length func(string) int
}

// CheckMetadata refuses caller metadata md that the provider would refuse,
// or that would pass for payonce's own: more keys than l.Keys leaves once
// payonce adds its MetadataKeys, a Reserved key, a key or value longer than
// l.Key or l.Value. A problem is a ValidationError on
// prefix+"Request.Metadata" ("yookassa Request.Metadata").
func CheckMetadata(prefix string, md map[string]string, l MetadataLimits) error {
	const field = "Request.Metadata"
	if n := len(md); l.Keys > 0 && n > l.Keys-MetadataKeys {
		return Invalid(prefix, field, "has %d keys; %s allows %d and payonce adds %d, so use at most %d",
			n, l.Provider, l.Keys, MetadataKeys, l.Keys-MetadataKeys)
	}
	for k, v := range md {
		switch {
		case Reserved(k):
			return Invalid(prefix, field, "key %q uses the reserved prefix %q; rename it", k, ReservedPrefix)
		case l.Key > 0 && l.Length(k) > l.Key:
			return Invalid(prefix, field, "key %q is longer than %s's %d characters", k, l.Provider, l.Key)
		case l.Value > 0 && l.Length(v) > l.Value:
			return Invalid(prefix, field, "value of %q is longer than %s's %d characters", k, l.Provider, l.Value)
		}
	}
	return nil
}

// WithMetadata is the metadata map of an attempt's object: the caller's,
// checked by CheckMetadata, and payonce's own keys (Metadata, with the
// references cut to l.Refs, or l.Value, as l.Length measures them).
func WithMetadata(prefix string, r payonce.SendRequest, l MetadataLimits) (map[string]string, error) {
	if err := CheckMetadata(prefix, r.Request.Metadata, l); err != nil {
		return nil, err
	}
	refs := l.Refs
	if refs == 0 {
		refs = l.Value
	}
	out := Metadata(r, refs, l.Length)
	maps.Copy(out, r.Request.Metadata)
	return out, nil
}

// Bytes measures a metadata value in bytes, for References.
func Bytes(s string) int { return len(s) }

// References is the references as a JSON array (no HTML escaping: what the
// caller wrote is what an operator sees). When that is longer than limit,
// as measured by length (bytes or characters, as the provider counts), it
// keeps as many leading references as fit and ends the array with "...+N",
// N being the number left out. The value is for people tracing an object;
// lookups use payonce_op.
func References(refs []string, limit int, length func(string) int) string {
	if refs == nil {
		refs = []string{}
	}
	full := jsonStrings(refs)
	if length(full) <= limit {
		return full
	}
	for n := len(refs) - 1; n >= 0; n-- {
		cut := append(refs[:n:n], "...+"+strconv.Itoa(len(refs)-n))
		if v := jsonStrings(cut); length(v) <= limit {
			return v
		}
	}
	return jsonStrings([]string{"...+" + strconv.Itoa(len(refs))}) // unreachable for any limit the adapters use: n == 0 always fits
}

func jsonStrings(s []string) string {
	if v, ok := plainJSONStrings(s); ok {
		return v
	}
	b, _ := EncodeJSON(s) // a []string always encodes
	return string(b)
}

// plainJSONStrings is EncodeJSON(s) for a non-nil s whose strings hold
// only printable ASCII other than '"' and '\\': those encode as
// themselves between quotes, whatever the escaping settings. ok is false
// for anything else, which EncodeJSON encodes.
func plainJSONStrings(s []string) (string, bool) {
	if s == nil {
		return "", false
	}
	n := 2 + max(len(s)-1, 0)
	for _, v := range s {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
				return "", false
			}
		}
		n += len(v) + 2
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('[')
	for i, v := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(v)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String(), true
}

// EncodeJSON encodes v without HTML escaping and without the trailing
// newline. Struct fields come in declaration order and map keys sorted, so
// the same request always gives the same bytes.
func EncodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

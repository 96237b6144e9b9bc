package payonce

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"

	"golang.org/x/text/currency"
)

// Why fingerprints are frozen: the fingerprint of a Request is stored with
// its operation and compared on every later use of the operation's key. A
// fingerprint that changes across a release makes every stored operation
// refuse its own caller's retry (ErrFingerprintMismatch), or, worse, lets
// another request through under an old key. So the canonical JSON below
// (field names, their order, omitempty, the encoding options) and the hash
// over it MUST NEVER CHANGE for an existing field.

// Limits of a Request. The metadata limits are Stripe's, the strictest of
// the providers payonce knows.
const (
	maxTextBytes        = 256 // PaymentMethod, Customer, PaymentRef
	maxDescriptionBytes = 1000
	maxMetadataKeys     = 50
	maxMetadataKeyBytes = 40
	maxMetadataValBytes = 500
)

// Request is the canonical request of an operation: what the caller asked
// for, independent of any provider's wire format. Its Fingerprint is stored
// with the operation and compared on every reuse of the key, so the same key
// with another request is refused before anything is sent.
//
// The JSON names are part of every stored fingerprint: never rename, remove
// or reorder a field. Fields are declared in byte order of their JSON names,
// so the canonical JSON has sorted keys at every level; a new field must keep
// that order and be omitempty, so that requests without it keep their
// fingerprints.
type Request struct {
	// Amount is in minor units of Currency (cents for USD, yen for JPY); 0
	// means absent (a cancel, or a capture of the full authorization).
	Amount int64 `json:"amount,omitempty"`
	// CaptureManual makes a charge an authorization only, to be captured
	// later with KindCapture. Only a charge may set it.
	CaptureManual bool `json:"capture_manual,omitempty"`
	// Currency is an ISO 4217 code in upper case, such as "USD". Only a
	// request without an amount that is not a charge (a cancel, a capture or
	// refund of the whole) may leave it empty.
	Currency string `json:"currency,omitempty"`
	// Customer is the provider's customer id, if any.
	Customer string `json:"customer,omitempty"`
	// Description is free text, at most 1000 bytes; tab and newline are the
	// only control characters allowed.
	Description string `json:"description,omitempty"`
	// Kind is the kind of money movement.
	Kind Kind `json:"kind"`
	// Metadata is passed to the provider: at most 50 keys of 1 to 40 bytes,
	// values of at most 500 bytes, no control characters (Stripe's limits).
	Metadata map[string]string `json:"metadata,omitempty"`
	// PaymentMethod is the provider's id or token of the payment method.
	PaymentMethod string `json:"payment_method,omitempty"`
	// PaymentRef is the provider's id of the payment a capture, cancel or
	// refund acts on, when known.
	PaymentRef string `json:"payment_ref,omitempty"`
	// References are the business references of the operation, as in its
	// Identity.
	References []string `json:"references"`
}

// Validate returns nil if r can be fingerprinted and sent, else a
// *ValidationError (errors.Is(err, ErrInvalid)) naming the first wrong
// field and what is allowed. It accepts Amount 0; whether a kind needs a
// positive amount is the client's check.
func (r Request) Validate() error {
	if err := r.Kind.Validate(); err != nil {
		return err
	}
	if r.Amount < 0 {
		return invalid("Amount", "is %d; it must be 0 or more minor units", r.Amount)
	}
	if r.CaptureManual && r.Kind != KindCharge {
		return invalid("CaptureManual", "is set on a %s; only a charge can be authorized for later capture", r.Kind)
	}
	if err := validateCurrency(r.Currency, r.Kind, r.Amount); err != nil {
		return err
	}
	if err := validateReferences(r.References); err != nil {
		return err
	}
	for _, f := range [...]struct{ field, value string }{
		{"PaymentMethod", r.PaymentMethod},
		{"Customer", r.Customer},
		{"PaymentRef", r.PaymentRef},
	} {
		if err := checkText(f.field, f.value, 0, maxTextBytes, false); err != nil {
			return err
		}
	}
	if err := checkText("Description", r.Description, 0, maxDescriptionBytes, true); err != nil {
		return err
	}
	return validateMetadata(r.Metadata)
}

func validateCurrency(code string, kind Kind, amount int64) error {
	if code == "" {
		// A charge always names its currency; a capture or refund of "the
		// whole" (Amount 0) and a cancel act on a payment that has one.
		if kind == KindCharge {
			return invalid("Currency", `is required for a %s; use an ISO 4217 code such as "USD"`, kind)
		}
		if amount != 0 {
			return invalid("Currency", `is required when Amount is set; use an ISO 4217 code such as "USD"`)
		}
		return nil
	}
	u, err := currency.ParseISO(code)
	if err != nil {
		return invalid("Currency", `%s is not an ISO 4217 currency code such as "USD"`, quote(code))
	}
	if u.String() == "XXX" {
		return invalid("Currency", `"XXX" means no currency; use the code of the currency charged`)
	}
	if u.String() != code {
		return invalid("Currency", "%s must be upper case; use %q", quote(code), u.String())
	}
	return nil
}

func validateMetadata(m map[string]string) error {
	if len(m) > maxMetadataKeys {
		return invalid("Metadata", "has %d keys; at most %d are allowed", len(m), maxMetadataKeys)
	}
	if len(m) == 0 {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(m)) { // sorted: the same map always reports the same error
		if k == "" {
			return invalid("Metadata", "has an empty key; keys are 1 to %d bytes", maxMetadataKeyBytes)
		}
		if len(k) > maxMetadataKeyBytes {
			return invalid("Metadata", "key %s is %d bytes; at most %d are allowed", quote(k), len(k), maxMetadataKeyBytes)
		}
		if problem := textProblem(k, false); problem != "" {
			return invalid("Metadata", "key %s %s", quote(k), problem)
		}
		if err := checkText("Metadata["+strconv.Quote(k)+"]", m[k], 0, maxMetadataValBytes, false); err != nil {
			return err
		}
	}
	return nil
}

// Canonical returns the canonical JSON of r: keys sorted at every level, no
// insignificant whitespace, no HTML escaping, empty optional fields left
// out. Equal Requests give equal bytes whatever the order their Metadata was
// filled in. It returns a *ValidationError if r is invalid.
func (r Request) Canonical() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r.encodeCanonical()
}

// encodeCanonical is Canonical's encoding by encoding/json, without the
// validation.
func (r Request) encodeCanonical() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("payonce: encode request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Fingerprint returns the lowercase hex SHA-256 (64 characters) of r's
// Canonical JSON: equal Requests give equal fingerprints in every process
// and release, and any change of a field gives another. It returns a
// *ValidationError if r is invalid.
func (r Request) Fingerprint() (string, error) {
	c, err := r.Canonical()
	if err != nil {
		return "", err
	}
	return fingerprintOf(c), nil
}

// fingerprintOf is the fingerprint of a Request's canonical JSON.
func fingerprintOf(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// ParseRequest decodes a Request stored as JSON (normally its Canonical
// form) strictly and validates it: the input must be one JSON object of
// valid UTF-8 whose names are exactly Request's JSON names, each at most
// once, with nothing after it. Key order and whitespace may differ from the
// canonical form; the fingerprint is always computed from the decoded
// Request. Every error matches errors.Is(err, ErrInvalid).
func ParseRequest(data []byte) (Request, error) {
	if err := checkRequestJSON(data); err != nil {
		return Request{}, err
	}
	var r Request
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, invalid("Request", "cannot be decoded: %v", err)
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// checkRequestJSON refuses what encoding/json would accept silently: invalid
// UTF-8 (replaced by U+FFFD), names matched case-insensitively, duplicate
// names (the last one wins) and data after the object.
func checkRequestJSON(data []byte) error {
	if !utf8.Valid(data) {
		return invalid("Request", "is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	seen := make(map[string]bool, 10)
	err := walkObject(dec, func(name string, value json.RawMessage) error {
		if !isRequestField(name) {
			return invalid("Request", "has the unknown field %s", quote(name))
		}
		if seen[name] {
			return invalid("Request", "has the field %s twice", quote(name))
		}
		seen[name] = true
		if name == "metadata" && string(value) != "null" {
			keys := make(map[string]bool)
			return walkObject(json.NewDecoder(bytes.NewReader(value)), func(k string, _ json.RawMessage) error {
				if keys[k] {
					return invalid("Metadata", "has the key %s twice", quote(k))
				}
				keys[k] = true
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("Request", "has data after the JSON object")
	}
	return nil
}

// walkObject reads one JSON object from dec and calls fn for each member.
func walkObject(dec *json.Decoder, fn func(name string, value json.RawMessage) error) error {
	tok, err := dec.Token()
	if err != nil {
		return invalid("Request", "is not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return invalid("Request", "must be a JSON object")
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid("Request", "is not valid JSON: %v", err)
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return invalid("Request", "is not valid JSON: %v", err)
		}
		if err := fn(name, value); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return invalid("Request", "is not valid JSON: %v", err)
	}
	return nil
}

func isRequestField(name string) bool {
	switch name {
	case "amount", "capture_manual", "currency", "customer", "description",
		"kind", "metadata", "payment_method", "payment_ref", "references":
		return true
	}
	return false
}

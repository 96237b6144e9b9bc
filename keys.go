package payonce

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"golang.org/x/text/currency"
)

// Why keys are derived and frozen: the same Identity must give the same key
// in every process, on every machine and in every release of payonce. A key
// that changes across a restart or an upgrade makes the provider see a new
// request for an operation it has already carried out, and it charges (or
// refunds) again. So nothing below may change for an existing version: not
// the namespace, not the version tag, not the byte layout, not the limits in
// a way that makes a stored identity invalid. A new scheme gets a new version
// tag and lives beside this one.

// namespaceText is Namespace written out. It was derived once as
// uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/payonce/payonce/keys/v1"))
// and is hard-coded so that no change in that derivation can move it.
// IT MUST NEVER CHANGE: every key of every deployed service depends on it.
const namespaceText = "321e0492-cca3-5391-af6d-cfe6412907e7"

// Namespace is the UUID namespace of every payonce key:
// 321e0492-cca3-5391-af6d-cfe6412907e7, fixed forever. It is exported so
// that other implementations can reproduce keys; keys are computed from a
// private copy, so assigning to this variable does not change them.
var Namespace = uuid.MustParse(namespaceText)

// namespace is the copy keys are derived from; no caller can reassign it.
var namespace = uuid.MustParse(namespaceText)

// keyVersion is the first field of every canonical identity encoding.
const keyVersion = "payonce/key/v1"

// Limits of an Identity. Raising one is safe; lowering one would make stored
// identities invalid, so never lower them.
const (
	maxProviderBytes  = 64
	maxKindBytes      = 16
	maxReferences     = 16
	maxReferenceBytes = 256
)

// Limits of a Request. The metadata limits are Stripe's, the strictest of
// the providers payonce knows.
const (
	maxTextBytes        = 256 // PaymentMethod, Customer, PaymentRef
	maxDescriptionBytes = 1000
	maxMetadataKeys     = 50
	maxMetadataKeyBytes = 40
	maxMetadataValBytes = 500
)

// Kind is the kind of money movement an operation makes. Its value is part
// of every key and fingerprint, so the values of the constants never change.
type Kind string

// The kinds payonce knows.
const (
	// KindCharge takes money from a payer (an authorization only when
	// Request.CaptureManual is set).
	KindCharge Kind = "charge"
	// KindCapture captures money a charge authorized.
	KindCapture Kind = "capture"
	// KindCancel releases an authorization before it is captured.
	KindCancel Kind = "cancel"
	// KindRefund returns captured money to the payer.
	KindRefund Kind = "refund"
)

const kindChoices = `"charge", "capture", "cancel" or "refund"`

// ParseKind returns the Kind spelled exactly s (lower case, no spaces), or a
// *ValidationError that says which spelling to use.
func ParseKind(s string) (Kind, error) {
	k := Kind(s)
	if err := k.Validate(); err != nil {
		return "", err
	}
	return k, nil
}

// Validate returns nil if k is one of the Kind constants, else a
// *ValidationError for field "Kind" (errors.Is(err, ErrInvalid)).
func (k Kind) Validate() error {
	if k.known() {
		return nil
	}
	if k == "" {
		return invalid("Kind", "is required; use %s", kindChoices)
	}
	if lk := Kind(strings.ToLower(strings.TrimSpace(string(k)))); lk.known() {
		return invalid("Kind", "%s is not a kind; use %q", quote(string(k)), string(lk))
	}
	return invalid("Kind", "%s is not a kind; use %s", quote(string(k)), kindChoices)
}

func (k Kind) known() bool {
	switch k {
	case KindCharge, KindCapture, KindCancel, KindRefund:
		return true
	}
	return false
}

// Identity is what makes an operation that one operation: the provider it
// goes to, its kind, its business references and its key generation. Two
// Identities are the same operation exactly when all four are equal, byte
// for byte (no case folding or Unicode normalization is applied).
type Identity struct {
	// Provider is the adapter's name, such as "stripe":
	// ^[a-z0-9][a-z0-9_.-]{0,63}$.
	Provider string
	// Kind is the kind of money movement.
	Kind Kind
	// References are the ordered business identifiers of the operation,
	// such as {"order-42"} for a charge or {"order-42", "refund-2"} for the
	// second refund of that order: 1 to 16 parts, each 1 to 256 bytes of
	// UTF-8 without control characters.
	References []string
	// Generation is 0 unless an operator, after review, approved sending
	// the operation again under a new key; each approval adds one.
	Generation int
}

// Validate returns nil if id can be keyed, else a *ValidationError
// (errors.Is(err, ErrInvalid)) naming the first wrong field, such as
// "Provider" or "References[1]", and what is allowed.
func (id Identity) Validate() error {
	if id.Provider == "" {
		return invalid("Provider", `is required; use the adapter's name, such as "stripe"`)
	}
	if !validProvider(id.Provider) {
		problem := "must match ^[a-z0-9][a-z0-9_.-]{0,63}$ (lower-case letters, digits, '_', '.', '-'; 1 to 64 bytes)"
		if lp := strings.ToLower(strings.TrimSpace(id.Provider)); validProvider(lp) {
			return invalid("Provider", "%s %s; use %q", quote(id.Provider), problem, lp)
		}
		return invalid("Provider", "%s %s", quote(id.Provider), problem)
	}
	if err := id.Kind.Validate(); err != nil {
		return err
	}
	if err := validateReferences(id.References); err != nil {
		return err
	}
	if id.Generation < 0 {
		return invalid("Generation", "is %d; it must be 0 or more", id.Generation)
	}
	return nil
}

// Canonical returns the versioned, injective byte encoding of id that its
// key is hashed from: distinct valid Identities always give distinct bytes,
// and the bytes of an Identity never change. The layout, with
// lp(x) = uvarint(len(x)) || x, is
//
//	lp("payonce/key/v1") lp(Provider) lp(Kind) uvarint(len(References))
//	lp(References[0]) ... lp(References[n-1]) uvarint(Generation)
//
// so ("ab", "c") and ("a", "bc") differ. It returns a *ValidationError if id
// is invalid.
func (id Identity) Canonical() ([]byte, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	return id.appendCanonical(make([]byte, 0, id.canonicalSize())), nil
}

// Key returns the idempotency key of the operation id names:
// uuid.NewSHA1(Namespace, id.Canonical()) in its 36-character lower-case
// form (UUID version 5, RFC 4122 variant). The same Identity gives the same
// key in every process, on every machine and in every release, so a retry
// after a restart carries the key of the first attempt. 36 characters fit
// every provider's key carrier (Stripe 255, PayPal 108, Adyen 64, Square 45,
// T-Bank's OrderId 36). It returns a *ValidationError if id is invalid.
func (id Identity) Key() (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	return id.key(), nil
}

// OperationID returns the stable id of the operation across generations: the
// Key of the same Identity at Generation 0. It returns a *ValidationError if
// id (including its Generation) is invalid.
func (id Identity) OperationID() (string, error) {
	if err := id.Validate(); err != nil {
		return "", err
	}
	id.Generation = 0
	return id.key(), nil
}

// key derives the key of an Identity already validated.
func (id Identity) key() string {
	return uuid.NewSHA1(namespace, id.appendCanonical(make([]byte, 0, id.canonicalSize()))).String()
}

func (id Identity) canonicalSize() int {
	n := 2*binary.MaxVarintLen64 + len(keyVersion) + len(id.Provider) + len(id.Kind) + 3*binary.MaxVarintLen64
	for _, r := range id.References {
		n += binary.MaxVarintLen64 + len(r)
	}
	return n
}

func (id Identity) appendCanonical(b []byte) []byte {
	b = appendLP(b, keyVersion)
	b = appendLP(b, id.Provider)
	b = appendLP(b, string(id.Kind))
	b = binary.AppendUvarint(b, uint64(len(id.References)))
	for _, r := range id.References {
		b = appendLP(b, r)
	}
	return binary.AppendUvarint(b, uint64(id.Generation))
}

func appendLP(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeCanonical is the inverse of Identity.Canonical. It accepts exactly
// the bytes Canonical can return (valid identity, minimal uvarints, nothing
// after the generation); the tests use it to prove the encoding injective.
func decodeCanonical(b []byte) (Identity, error) {
	r := canonicalReader{b: b}
	if tag := r.text(len(keyVersion)); r.err == nil && tag != keyVersion {
		return Identity{}, fmt.Errorf("payonce: canonical identity: version tag %q, want %q", tag, keyVersion)
	}
	var id Identity
	id.Provider = r.text(maxProviderBytes)
	id.Kind = Kind(r.text(maxKindBytes))
	n := r.uvarint(maxReferences)
	id.References = make([]string, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		id.References = append(id.References, r.text(maxReferenceBytes))
	}
	id.Generation = int(r.uvarint(math.MaxInt))
	if r.err != nil {
		return Identity{}, fmt.Errorf("payonce: canonical identity: %w", r.err)
	}
	if len(r.b) != 0 {
		return Identity{}, fmt.Errorf("payonce: canonical identity: %d bytes after the generation", len(r.b))
	}
	if err := id.Validate(); err != nil {
		return Identity{}, fmt.Errorf("payonce: canonical identity: %w", err)
	}
	if !bytes.Equal(id.appendCanonical(nil), b) {
		return Identity{}, errors.New("payonce: canonical identity: not in canonical form (overlong uvarint)")
	}
	return id, nil
}

type canonicalReader struct {
	b   []byte
	err error
}

func (r *canonicalReader) uvarint(max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errors.New("truncated or overflowing uvarint")
		return 0
	}
	if v > max {
		r.err = fmt.Errorf("value %d over the limit %d", v, max)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *canonicalReader) text(max int) string {
	n := r.uvarint(uint64(max))
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("length %d past the end (%d bytes left)", n, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func validProvider(s string) bool {
	if len(s) == 0 || len(s) > maxProviderBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

func validateReferences(refs []string) error {
	if len(refs) == 0 {
		return invalid("References", "is empty; give 1 to %d parts, such as the order id", maxReferences)
	}
	if len(refs) > maxReferences {
		return invalid("References", "has %d parts; at most %d are allowed", len(refs), maxReferences)
	}
	for i, p := range refs {
		if err := checkText("References["+strconv.Itoa(i)+"]", p, 1, maxReferenceBytes, false); err != nil {
			return err
		}
	}
	return nil
}

// checkText checks that s is min to max bytes of valid UTF-8 without control
// characters (C0, DEL, C1); layout allows tab and newline.
func checkText(field, s string, min, max int, layout bool) error {
	if len(s) < min {
		return invalid(field, "is empty; it must be %d to %d bytes", min, max)
	}
	if len(s) > max {
		return invalid(field, "is %d bytes; at most %d are allowed", len(s), max)
	}
	if problem := textProblem(s, layout); problem != "" {
		return invalid(field, "%s", problem)
	}
	return nil
}

func textProblem(s string, layout bool) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f { // printable ASCII, the common case
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Sprintf("is not valid UTF-8 (byte %d)", i)
		}
		if unicode.IsControl(r) && !(layout && (r == '\t' || r == '\n')) {
			allowed := ""
			if layout {
				allowed = " other than tab and newline"
			}
			return fmt.Sprintf("contains the control character %U at byte %d; control characters (U+0000-U+001F, U+007F-U+009F)%s are not allowed", r, i, allowed)
		}
		i += size
	}
	return ""
}

// quote quotes s for an error message, cut to a readable length.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

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
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
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

package payonce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Why keys are derived and frozen: the same Identity must give the same key
// in every process, on every machine and in every release of payonce. A key
// that changes across a restart or an upgrade makes the provider see a new
// request for an operation it has already carried out, and it charges (or
// refunds) again. So nothing below may change for an existing version: not
// the namespace, not the version tag, not the byte layout, not the limits in
// a way that makes a stored identity invalid. A new scheme gets a new version
// tag and lives beside this one.

// Namespace is the UUID namespace of every payonce key, written out: keys
// are uuid.NewSHA1(uuid.MustParse(Namespace), id.Canonical()). It is a
// constant, published so that other implementations can reproduce keys.
// It was derived once as
// uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/payonce/payonce/keys/v1"))
// and is hard-coded so that no change in that derivation can move it.
// IT MUST NEVER CHANGE: every key of every deployed service depends on it.
const Namespace = "321e0492-cca3-5391-af6d-cfe6412907e7"

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
	// References are the ordered business identifiers of the operation: 1
	// to 16 parts, each 1 to 256 bytes of UTF-8 without control characters.
	// A Client derives them from its call's parameters: {OrderID} for a
	// charge, a capture and a cancel (the Kind tells them apart), and
	// {OrderID, RefundSeq in decimal} for a refund, such as {"order-42"}
	// for the charge of order 42 and {"order-42", "2"} for its second
	// refund. An Identity built another way names another operation.
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
	return id.appendCanonical(nil), nil
}

// Key returns the idempotency key of the operation id names:
// uuid.NewSHA1(uuid.MustParse(Namespace), id.Canonical()) in its
// 36-character lower-case form (UUID version 5, RFC 4122 variant). The same Identity gives the same
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
	return uuid.NewSHA1(uuid.MustParse(Namespace), id.appendCanonical(nil)).String()
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
		// The field's name is built only for an error: valid references
		// are the rule, on the path of every call.
		if len(p) < 1 || len(p) > maxReferenceBytes || textProblem(p, false) != "" {
			return checkText("References["+strconv.Itoa(i)+"]", p, 1, maxReferenceBytes, false)
		}
	}
	return nil
}

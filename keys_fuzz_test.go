package payonce

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// fuzzIdentity builds an Identity from fuzz inputs: kind index 4 is not a
// kind, n%4 parts of a, b, c (0 parts is invalid).
func fuzzIdentity(provider string, kind, n uint8, a, b, c string, gen int64) Identity {
	kinds := [...]Kind{KindCharge, KindCapture, KindCancel, KindRefund, "payout"}
	return Identity{
		Provider:   provider,
		Kind:       kinds[int(kind)%len(kinds)],
		References: []string{a, b, c}[:n%4],
		Generation: int(gen),
	}
}

func sameIdentity(x, y Identity) bool {
	return x.Provider == y.Provider && x.Kind == y.Kind && x.Generation == y.Generation && slices.Equal(x.References, y.References)
}

// checkFuzzIdentity checks one identity and returns its key ("" if invalid).
func checkFuzzIdentity(t *testing.T, id Identity) (key string, canonical []byte) {
	verr := id.Validate()
	c, cerr := id.Canonical()
	k, kerr := id.Key()
	op, oerr := id.OperationID()
	if verr != nil {
		var ve *ValidationError
		for _, err := range []error{verr, cerr, kerr, oerr} {
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &ve) || ve.Field == "" {
				t.Fatalf("%+v: invalid identity gave %v", id, err)
			}
		}
		if c != nil || k != "" || op != "" {
			t.Fatalf("%+v: invalid identity gave output", id)
		}
		return "", nil
	}
	if cerr != nil || kerr != nil || oerr != nil {
		t.Fatalf("%+v: valid identity gave errors %v %v %v", id, cerr, kerr, oerr)
	}
	back, err := decodeCanonical(c)
	if err != nil {
		t.Fatalf("%+v: decode(canonical): %v", id, err)
	}
	if !sameIdentity(back, id) {
		t.Fatalf("decode(canonical(%+v)) = %+v", id, back)
	}
	u, err := uuid.Parse(k)
	if err != nil || len(k) != 36 || u.String() != k || u.Version() != 5 || u.Variant() != uuid.RFC4122 {
		t.Fatalf("%+v: bad key %q (%v)", id, k, err)
	}
	if k2, _ := id.Key(); k2 != k {
		t.Fatalf("%+v: key not deterministic: %q then %q", id, k, k2)
	}
	id0 := id
	id0.Generation = 0
	if k0, _ := id0.Key(); k0 != op {
		t.Fatalf("%+v: operation id %q, key at generation 0 %q", id, op, k0)
	}
	return k, c
}

// FuzzIdentityKey checks, for two identities built from fuzz inputs, that
// nothing panics, invalid identities give *ValidationErrors and no output,
// valid ones round-trip through the canonical encoding, and two different
// identities never share canonical bytes or a key.
func FuzzIdentityKey(f *testing.F) {
	// The classic ambiguity: ("ab","c") vs ("a","bc").
	f.Add("stripe", uint8(0), uint8(2), "ab", "c", "", int64(0), "stripe", uint8(0), uint8(2), "a", "bc", "", int64(0))
	f.Add("stripe", uint8(3), uint8(2), "order-42", "refund-2", "", int64(0), "stripe", uint8(3), uint8(2), "order-42", "refund-2", "", int64(1))
	f.Add("stripe", uint8(0), uint8(1), "a", "", "", int64(0), "stripe", uint8(0), uint8(2), "a", "", "", int64(0))
	f.Add("adyen", uint8(1), uint8(3), "x", "y", "z", int64(7), "adyen", uint8(2), uint8(3), "x", "y", "z", int64(7))
	f.Add("stripe", uint8(0), uint8(1), "42", "", "", int64(0), "stripec", uint8(4), uint8(1), "42", "", "", int64(0))
	f.Add("Stripe", uint8(0), uint8(1), "a\x00", "b", "c", int64(-1), "stripe", uint8(0), uint8(0), "", "", "", int64(1<<62))
	f.Add("yookassa", uint8(2), uint8(3), "заказ", "退款", "\xff", int64(127), "yookassa", uint8(2), uint8(2), "заказ", "退款", "", int64(128))
	f.Add("a.b", uint8(0), uint8(1), "\x01c", "", "", int64(0), "a", uint8(0), uint8(1), "b\x01c", "", "", int64(0))
	f.Fuzz(func(t *testing.T,
		p1 string, k1, n1 uint8, a1, b1, c1 string, g1 int64,
		p2 string, k2, n2 uint8, a2, b2, c2 string, g2 int64,
	) {
		x := fuzzIdentity(p1, k1, n1, a1, b1, c1, g1)
		y := fuzzIdentity(p2, k2, n2, a2, b2, c2, g2)
		kx, cx := checkFuzzIdentity(t, x)
		ky, cy := checkFuzzIdentity(t, y)
		if kx == "" || ky == "" {
			return
		}
		same := sameIdentity(x, y)
		if same != (string(cx) == string(cy)) {
			t.Fatalf("%+v and %+v: same=%v but canonical equal=%v", x, y, same, string(cx) == string(cy))
		}
		if same != (kx == ky) {
			t.Fatalf("%+v and %+v: same=%v but keys %q and %q", x, y, same, kx, ky)
		}
	})
}

// FuzzIdentityDecode checks that the decoder accepts exactly canonical
// encodings: whatever it accepts re-encodes to the same bytes, so together
// with decode(canonical(id)) == id the encoding is a bijection onto its image.
func FuzzIdentityDecode(f *testing.F) {
	for _, id := range []Identity{
		{Provider: "stripe", Kind: KindCharge, References: []string{"ab", "c"}},
		{Provider: "stripe", Kind: KindCharge, References: []string{"a", "bc"}, Generation: 300},
	} {
		c, err := id.Canonical()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := decodeCanonical(b)
		if err != nil {
			return
		}
		c, err := id.Canonical()
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", id, err)
		}
		if string(c) != string(b) {
			t.Fatalf("decode accepted %x, which re-encodes to %x", b, c)
		}
	})
}

// FuzzRequestParse checks that ParseRequest never panics, fails only with
// ErrInvalid, and that what it accepts has a canonical form that parses
// back to the same Request and fingerprint.
func FuzzRequestParse(f *testing.F) {
	f.Add([]byte(`{"amount":4200,"currency":"USD","kind":"charge","metadata":{"a":"1"},"references":["order-42"]}`))
	f.Add([]byte(`{"kind":"cancel","references":["o"],"payment_ref":"pi_1"}`))
	f.Add([]byte(`{"kind":"charge","amount":1,"amount":2,"currency":"USD","references":["o"]}`))
	f.Add([]byte(`{"Kind":"charge","currency":"usd","references":["a\u0000"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRequest(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseRequest(%q): error %v does not match ErrInvalid", data, err)
			}
			return
		}
		c, err := r.Canonical()
		if err != nil {
			t.Fatalf("parsed %+v has no canonical form: %v", r, err)
		}
		back, err := ParseRequest(c)
		if err != nil {
			t.Fatalf("canonical %s does not parse: %v", c, err)
		}
		fp1, _ := r.Fingerprint()
		fp2, _ := back.Fingerprint()
		if fp1 != fp2 {
			t.Fatalf("fingerprint changed through canonical form: %s", c)
		}
	})
}

package payonce

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "add NEW golden vectors to testdata/keys_golden.json (existing vectors are checked, never rewritten)")

func TestKeyNamespace(t *testing.T) {
	t.Parallel()
	derived := uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/payonce/payonce/keys/v1"))
	require.Equal(t, derived.String(), Namespace)
	require.Equal(t, "321e0492-cca3-5391-af6d-cfe6412907e7", Namespace)
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	for _, k := range []Kind{KindCharge, KindCapture, KindCancel, KindRefund} {
		got, err := ParseKind(string(k))
		require.NoError(t, err)
		require.Equal(t, k, got)
		require.NoError(t, k.Validate())
	}
	for _, tc := range []struct {
		in, problem string
	}{
		{"", "is required"},
		{"Charge", `use "charge"`},
		{" refund ", `use "refund"`},
		{"payout", `"charge", "capture", "cancel" or "refund"`},
		{"charge\x00", "is not a kind"},
	} {
		got, err := ParseKind(tc.in)
		require.Empty(t, got, "%q", tc.in)
		requireInvalid(t, err, "Kind", tc.problem)
	}
}

// validIdentity is a valid Identity; each test case breaks one field.
func validIdentity() Identity {
	return Identity{Provider: "stripe", Kind: KindRefund, References: []string{"order-42", "refund-2"}, Generation: 1}
}

func TestIdentityValidate(t *testing.T) {
	t.Parallel()
	many := make([]string, 17)
	for i := range many {
		many[i] = strconv.Itoa(i)
	}
	requireRejected(t, validIdentity, []rejectCase[Identity]{
		{"empty provider", func(id *Identity) { id.Provider = "" }, "Provider", "is required"},
		{"upper-case provider", func(id *Identity) { id.Provider = "Stripe" }, "Provider", `use "stripe"`},
		{"provider starts with dash", func(id *Identity) { id.Provider = "-stripe" }, "Provider", "^[a-z0-9][a-z0-9_.-]{0,63}$"},
		{"provider with space", func(id *Identity) { id.Provider = "my psp" }, "Provider", "must match"},
		{"provider with slash", func(id *Identity) { id.Provider = "a/b" }, "Provider", "must match"},
		{"provider non-ASCII", func(id *Identity) { id.Provider = "strípe" }, "Provider", "must match"},
		{"provider 65 bytes", func(id *Identity) { id.Provider = strings.Repeat("a", 65) }, "Provider", "1 to 64 bytes"},
		{"empty kind", func(id *Identity) { id.Kind = "" }, "Kind", "is required"},
		{"unknown kind", func(id *Identity) { id.Kind = "payout" }, "Kind", "is not a kind"},
		{"upper-case kind", func(id *Identity) { id.Kind = "REFUND" }, "Kind", `use "refund"`},
		{"nil references", func(id *Identity) { id.References = nil }, "References", "is empty"},
		{"empty references", func(id *Identity) { id.References = []string{} }, "References", "is empty"},
		{"17 references", func(id *Identity) { id.References = many }, "References", "at most 16"},
		{"empty part", func(id *Identity) { id.References = []string{"a", ""} }, "References[1]", "is empty"},
		{"257-byte part", func(id *Identity) { id.References = []string{strings.Repeat("x", 257)} }, "References[0]", "at most 256"},
		{"invalid UTF-8", func(id *Identity) { id.References = []string{"a", "b\xffc"} }, "References[1]", "not valid UTF-8"},
		{"truncated UTF-8", func(id *Identity) { id.References = []string{"\xe2\x82"} }, "References[0]", "not valid UTF-8"},
		{"NUL", func(id *Identity) { id.References = []string{"a\x00b"} }, "References[0]", "U+0000"},
		{"newline", func(id *Identity) { id.References = []string{"a", "b", "c\n"} }, "References[2]", "U+000A"},
		{"tab", func(id *Identity) { id.References = []string{"\t"} }, "References[0]", "U+0009"},
		{"DEL", func(id *Identity) { id.References = []string{"a\x7f"} }, "References[0]", "U+007F"},
		{"C1 control", func(id *Identity) { id.References = []string{"a\u0085"} }, "References[0]", "U+0085"},
		{"C1 control U+009F", func(id *Identity) { id.References = []string{"\u009f"} }, "References[0]", "U+009F"},
		{"negative generation", func(id *Identity) { id.Generation = -1 }, "Generation", "0 or more"},
	}, func(t *testing.T, id Identity, invalid func(error)) {
		invalid(id.Validate())
		_, err := id.Key()
		invalid(err)
		_, err = id.OperationID()
		invalid(err)
		c, err := id.Canonical()
		require.Nil(t, c)
		invalid(err)
	})
}

func TestIdentityValidateAcceptsLimits(t *testing.T) {
	t.Parallel()
	max := make([]string, maxReferences)
	for i := range max {
		max[i] = strings.Repeat("é", maxReferenceBytes/2) // 256 bytes
	}
	for _, id := range []Identity{
		{Provider: "a", Kind: KindCharge, References: []string{"1"}},
		{Provider: strings.Repeat("z", 64), Kind: KindCancel, References: max, Generation: 1<<63 - 1},
		{Provider: "0_my.psp-2", Kind: KindCapture, References: []string{" spaces are kept ", "U+FFFD \ufffd", "\u2028", "😀"}},
	} {
		require.NoError(t, id.Validate())
		key, err := id.Key()
		require.NoError(t, err)
		requireKeyFormat(t, key)
	}
}

func TestIdentityKeyInjectivity(t *testing.T) {
	t.Parallel()
	base := Identity{Provider: "stripe", Kind: KindCharge, References: []string{"ab", "c"}}
	with := func(change func(*Identity)) Identity {
		id := base
		id.References = slices.Clone(base.References)
		change(&id)
		return id
	}
	for _, tc := range []struct {
		name string
		a, b Identity
	}{
		{"parts split differently", base, with(func(id *Identity) { id.References = []string{"a", "bc"} })},
		{"parts joined", base, with(func(id *Identity) { id.References = []string{"abc"} })},
		{"separator inside a part", with(func(id *Identity) { id.References = []string{"a:b", "c"} }), with(func(id *Identity) { id.References = []string{"a", "b:c"} })},
		{"extra part", base, with(func(id *Identity) { id.References = []string{"ab", "c", "d"} })},
		{"parts swapped", base, with(func(id *Identity) { id.References = []string{"c", "ab"} })},
		{"generation 0 vs 1", base, with(func(id *Identity) { id.Generation = 1 })},
		{"generation 1 vs 128", with(func(id *Identity) { id.Generation = 1 }), with(func(id *Identity) { id.Generation = 128 })},
		{"kind differs", base, with(func(id *Identity) { id.Kind = KindRefund })},
		{"provider differs", base, with(func(id *Identity) { id.Provider = "adyen" })},
		{"case of a part", with(func(id *Identity) { id.References = []string{"AB", "c"} }), base},
		{"NFC vs NFD", with(func(id *Identity) { id.References = []string{"\u00e9"} }), with(func(id *Identity) { id.References = []string{"e\u0301"} })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ca, err := tc.a.Canonical()
			require.NoError(t, err)
			cb, err := tc.b.Canonical()
			require.NoError(t, err)
			require.NotEqual(t, ca, cb)
			ka, err := tc.a.Key()
			require.NoError(t, err)
			kb, err := tc.b.Key()
			require.NoError(t, err)
			require.NotEqual(t, ka, kb)
		})
	}

	// ("a", "") would collide with ("a") under a naive encoding: it is refused.
	_, err := with(func(id *Identity) { id.References = []string{"a", ""} }).Key()
	requireInvalid(t, err, "References[1]", "is empty")
	_, err = with(func(id *Identity) { id.References = []string{"", "a"} }).Key()
	requireInvalid(t, err, "References[0]", "is empty")
}

// TestIdentityKeyProviderKindBoundary: a field boundary cannot shift
// ("stripe"+"charge" vs "stripec"+"harge"): fields are length-prefixed, and
// Validate refuses such a kind anyway.
func TestIdentityKeyProviderKindBoundary(t *testing.T) {
	t.Parallel()
	_, err := Identity{Provider: "stripec", Kind: "harge", References: []string{"x"}}.Key()
	requireInvalid(t, err, "Kind", "is not a kind")
}

func TestIdentityKeyDeterministic(t *testing.T) {
	t.Parallel()
	a := Identity{Provider: "stripe", Kind: KindRefund, References: []string{"order-42", "refund-2"}, Generation: 1}
	refs := make([]string, 0, 10) // another backing array, other capacity
	refs = append(refs, strings.Clone("order-42"), "refund-"+strconv.Itoa(2))
	b := Identity{Provider: strings.Clone("stripe"), Kind: Kind("ref" + "und"), References: refs, Generation: 1}

	ka1, err := a.Key()
	require.NoError(t, err)
	ka2, err := a.Key()
	require.NoError(t, err)
	kb, err := b.Key()
	require.NoError(t, err)
	require.Equal(t, ka1, ka2)
	require.Equal(t, ka1, kb)

	ca, err := a.Canonical()
	require.NoError(t, err)
	cb, err := b.Canonical()
	require.NoError(t, err)
	require.Equal(t, ca, cb)

	// Key is exactly uuid.NewSHA1(Namespace, Canonical()).
	require.Equal(t, uuid.NewSHA1(uuid.MustParse(Namespace), ca).String(), ka1)
	// Key does not modify its receiver's references.
	require.Equal(t, []string{"order-42", "refund-2"}, a.References)
}

func TestIdentityKeyFormat(t *testing.T) {
	t.Parallel()
	for _, id := range []Identity{
		validIdentity(),
		{Provider: "tbank", Kind: KindCharge, References: []string{"42"}},
		{Provider: "yookassa", Kind: KindCancel, References: []string{"заказ-7"}, Generation: 7},
	} {
		key, err := id.Key()
		require.NoError(t, err)
		requireKeyFormat(t, key)
		opID, err := id.OperationID()
		require.NoError(t, err)
		requireKeyFormat(t, opID)
	}
}

func requireKeyFormat(t *testing.T, key string) {
	t.Helper()
	require.Len(t, key, 36)
	require.Equal(t, strings.ToLower(key), key)
	u, err := uuid.Parse(key)
	require.NoError(t, err)
	require.Equal(t, key, u.String())
	require.Equal(t, uuid.Version(5), u.Version())
	require.Equal(t, uuid.RFC4122, u.Variant())
}

func TestIdentityOperationID(t *testing.T) {
	t.Parallel()
	id := validIdentity()
	id.Generation = 0
	key0, err := id.Key()
	require.NoError(t, err)
	op0, err := id.OperationID()
	require.NoError(t, err)
	require.Equal(t, key0, op0, "at generation 0 the key is the operation id")

	for _, gen := range []int{1, 2, 7, 1 << 40} {
		id.Generation = gen
		key, err := id.Key()
		require.NoError(t, err)
		op, err := id.OperationID()
		require.NoError(t, err)
		require.Equal(t, op0, op, "the operation id is the same in every generation")
		require.NotEqual(t, key0, key, "a new generation has a new key")
	}
	require.Equal(t, 1<<40, id.Generation, "OperationID does not modify its receiver")
}

func TestIdentityCanonicalLayout(t *testing.T) {
	t.Parallel()
	id := Identity{Provider: "stripe", Kind: KindCharge, References: []string{"ab", "c"}, Generation: 300}
	got, err := id.Canonical()
	require.NoError(t, err)
	var want []byte
	want = append(want, 14)
	want = append(want, "payonce/key/v1"...)
	want = append(want, 6)
	want = append(want, "stripe"...)
	want = append(want, 6)
	want = append(want, "charge"...)
	want = append(want, 2, 2, 'a', 'b', 1, 'c')
	want = append(want, 0xac, 0x02) // uvarint(300)
	require.Equal(t, want, got)
}

func TestIdentityCanonicalRoundTrip(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 200) // length prefix of two bytes
	for _, id := range []Identity{
		validIdentity(),
		{Provider: "a", Kind: KindCharge, References: []string{"1"}},
		{Provider: "adyen", Kind: KindCapture, References: []string{"ab", "c"}},
		{Provider: "adyen", Kind: KindCapture, References: []string{"a", "bc"}},
		{Provider: "square", Kind: KindCancel, References: []string{long, "退款", "😀"}, Generation: 1<<63 - 1},
	} {
		c, err := id.Canonical()
		require.NoError(t, err)
		got, err := decodeCanonical(c)
		require.NoError(t, err)
		require.Equal(t, id, got)
	}
}

func TestIdentityCanonicalDecodeRejects(t *testing.T) {
	t.Parallel()
	good, err := Identity{Provider: "stripe", Kind: KindCharge, References: []string{"ab", "c"}}.Canonical()
	require.NoError(t, err)
	// good = 0e "payonce/key/v1" 06 "stripe" 06 "charge" 02 02 "ab" 01 "c" 00
	replace := func(old, new string) []byte {
		b := bytes.Replace(good, []byte(old), []byte(new), 1)
		require.NotEqual(t, good, b, "replace %q", old)
		return b
	}
	for name, b := range map[string][]byte{
		"empty":             nil,
		"truncated":         good[:len(good)-1],
		"trailing byte":     append(slices.Clone(good), 0),
		"version v2":        replace("payonce/key/v1", "payonce/key/v2"),
		"kind payout":       replace("\x06charge", "\x06payout"),
		"provider upper":    replace("stripe", "Stripe"),
		"empty part":        replace("\x02\x02ab\x01c", "\x02\x02ab\x00"),
		"zero parts":        replace("\x02\x02ab\x01c", "\x00"),
		"too many parts":    replace("\x02\x02ab", "\x11\x02ab"),
		"overlong uvarint":  replace("\x01c\x00", "\x01c\x80\x00"),
		"length past end":   replace("\x01c\x00", "\x09c\x00"),
		"overflowing count": append(replace("\x01c\x00", "\x01c"), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
		"NUL in a part":     replace("\x01c", "\x01\x00"),
	} {
		_, err := decodeCanonical(b)
		require.Error(t, err, name)
	}
	for i := range good {
		_, err := decodeCanonical(good[:i])
		require.Error(t, err, "prefix of %d bytes", i)
	}
}

// validRequest is a valid charge Request; each test case breaks one field.
func validRequest() Request {
	return Request{
		Kind:          KindCharge,
		Amount:        4200,
		Currency:      "USD",
		References:    []string{"order-42"},
		PaymentMethod: "pm_card_visa",
		Customer:      "cus_123",
		Description:   "Order #42",
		Metadata:      map[string]string{"order_id": "42"},
	}
}

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	tooMany := make(map[string]string, 51)
	for i := range 51 {
		tooMany["k"+strconv.Itoa(i)] = "v"
	}
	requireRejected(t, validRequest, []rejectCase[Request]{
		{"empty kind", func(r *Request) { r.Kind = "" }, "Kind", "is required"},
		{"unknown kind", func(r *Request) { r.Kind = "payout" }, "Kind", "is not a kind"},
		{"negative amount", func(r *Request) { r.Amount = -1 }, "Amount", "0 or more"},
		{"capture_manual on refund", func(r *Request) { r.Kind = KindRefund; r.CaptureManual = true }, "CaptureManual", "only a charge"},
		{"no currency on a charge", func(r *Request) { r.Currency = "" }, "Currency", "is required for a charge"},
		{"no currency on a partial refund", func(r *Request) { r.Kind = KindRefund; r.Currency = "" }, "Currency", "when Amount is set"},
		{"cancel with amount, no currency", func(r *Request) { r.Kind = KindCancel; r.Currency = "" }, "Currency", "when Amount is set"},
		{"lower-case currency", func(r *Request) { r.Currency = "usd" }, "Currency", `use "USD"`},
		{"mixed-case currency", func(r *Request) { r.Currency = "Eur" }, "Currency", `use "EUR"`},
		{"unknown currency", func(r *Request) { r.Currency = "ABC" }, "Currency", "not an ISO 4217"},
		{"two letters", func(r *Request) { r.Currency = "US" }, "Currency", "not an ISO 4217"},
		{"four letters", func(r *Request) { r.Currency = "USDX" }, "Currency", "not an ISO 4217"},
		{"currency with space", func(r *Request) { r.Currency = "USD " }, "Currency", "not an ISO 4217"},
		{"no currency XXX", func(r *Request) { r.Currency = "XXX" }, "Currency", "no currency"},
		{"no references", func(r *Request) { r.References = nil }, "References", "is empty"},
		{"empty reference part", func(r *Request) { r.References = []string{"a", ""} }, "References[1]", "is empty"},
		{"control in reference", func(r *Request) { r.References = []string{"a\x1b"} }, "References[0]", "U+001B"},
		{"long payment method", func(r *Request) { r.PaymentMethod = strings.Repeat("p", 257) }, "PaymentMethod", "at most 256"},
		{"control in customer", func(r *Request) { r.Customer = "cus\n" }, "Customer", "U+000A"},
		{"bad UTF-8 in payment ref", func(r *Request) { r.PaymentRef = "pi_\xc0" }, "PaymentRef", "not valid UTF-8"},
		{"long description", func(r *Request) { r.Description = strings.Repeat("d", 1001) }, "Description", "at most 1000"},
		{"NUL in description", func(r *Request) { r.Description = "a\x00" }, "Description", "other than tab and newline"},
		{"CR in description", func(r *Request) { r.Description = "a\r\n" }, "Description", "U+000D"},
		{"bad UTF-8 in description", func(r *Request) { r.Description = "\xff" }, "Description", "not valid UTF-8"},
		{"51 metadata keys", func(r *Request) { r.Metadata = tooMany }, "Metadata", "at most 50"},
		{"empty metadata key", func(r *Request) { r.Metadata = map[string]string{"": "v"} }, "Metadata", "empty key"},
		{"41-byte metadata key", func(r *Request) { r.Metadata = map[string]string{strings.Repeat("k", 41): "v"} }, "Metadata", "at most 40"},
		{"control in metadata key", func(r *Request) { r.Metadata = map[string]string{"a\tb": "v"} }, "Metadata", "U+0009"},
		{"bad UTF-8 in metadata key", func(r *Request) { r.Metadata = map[string]string{"\xff": "v"} }, "Metadata", "not valid UTF-8"},
		{"501-byte metadata value", func(r *Request) { r.Metadata = map[string]string{"k": strings.Repeat("v", 501)} }, "Metadata[\"k\"]", "at most 500"},
		{"control in metadata value", func(r *Request) { r.Metadata = map[string]string{"k": "a\nb"} }, "Metadata[\"k\"]", "U+000A"},
		{"C1 in metadata value", func(r *Request) { r.Metadata = map[string]string{"k": "\u0080"} }, "Metadata[\"k\"]", "U+0080"},
	}, func(t *testing.T, r Request, invalid func(error)) {
		invalid(r.Validate())
		c, err := r.Canonical()
		require.Nil(t, c)
		invalid(err)
		_, err = r.Fingerprint()
		invalid(err)
	})
}

func TestRequestValidateAccepts(t *testing.T) {
	t.Parallel()
	fifty := make(map[string]string, 50)
	for i := range 50 {
		fifty[fmt.Sprintf("key-%02d-%s", i, strings.Repeat("k", 33))] = strings.Repeat("v", 500)
	}
	for name, r := range map[string]Request{
		"charge":          validRequest(),
		"zero amount":     {Kind: KindCharge, Currency: "JPY", References: []string{"1"}},
		"authorize":       {Kind: KindCharge, Amount: 1, Currency: "EUR", References: []string{"1"}, CaptureManual: true},
		"bare cancel":     {Kind: KindCancel, References: []string{"1"}, PaymentRef: "pi_1"},
		"cancel with cur": {Kind: KindCancel, Currency: "USD", Amount: 10, References: []string{"1"}},
		"refund":          {Kind: KindRefund, Amount: 1, Currency: "RUB", References: []string{"o", "r"}},
		"capture":         {Kind: KindCapture, Currency: "GBP", References: []string{"o"}},
		"limits":          {Kind: KindCharge, Amount: 1<<63 - 1, Currency: "KWD", References: []string{"o"}, Description: strings.Repeat("é", 500), Metadata: fifty},
		"layout":          {Kind: KindCharge, Currency: "USD", References: []string{"o"}, Description: "line 1\n\tline 2"},
		"empty value":     {Kind: KindCharge, Currency: "USD", References: []string{"o"}, Metadata: map[string]string{"k": ""}},
	} {
		require.NoError(t, r.Validate(), name)
		fp, err := r.Fingerprint()
		require.NoError(t, err, name)
		require.Len(t, fp, 64, name)
		_, err = hex.DecodeString(fp)
		require.NoError(t, err, name)
		require.Equal(t, strings.ToLower(fp), fp, name)
	}
}

func TestRequestCanonical(t *testing.T) {
	t.Parallel()
	r := Request{
		Kind:        KindCharge,
		Amount:      100,
		Currency:    "USD",
		References:  []string{"order-42"},
		Description: "<b>Tom & Jerry</b> — ü",
		Metadata:    map[string]string{"z": "1", "a": "2", "é": "3", "B": "4"},
	}
	c, err := r.Canonical()
	require.NoError(t, err)
	require.Equal(t, `{"amount":100,"currency":"USD","description":"<b>Tom & Jerry</b> — ü","kind":"charge","metadata":{"B":"4","a":"2","z":"1","é":"3"},"references":["order-42"]}`, string(c))

	// Zero means absent: an empty map, nil map and no optional fields all give the same bytes.
	bare := Request{Kind: KindCancel, References: []string{"o"}}
	withEmpty := bare
	withEmpty.Metadata = map[string]string{}
	cb, err := bare.Canonical()
	require.NoError(t, err)
	ce, err := withEmpty.Canonical()
	require.NoError(t, err)
	require.Equal(t, `{"kind":"cancel","references":["o"]}`, string(cb))
	require.Equal(t, cb, ce)
}

// TestRequestFieldsSorted guards the canonical form: the struct's JSON names
// must stay in byte order so the canonical JSON has sorted keys.
func TestRequestFieldsSorted(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[Request]()
	var names []string
	for f := range typ.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		require.NotEmpty(t, name, f.Name)
		require.True(t, isRequestField(name), "isRequestField must know %q", name)
		names = append(names, name)
	}
	require.True(t, slices.IsSorted(names), "JSON names not sorted: %v", names)
}

func TestRequestFingerprintStableAcrossMapOrder(t *testing.T) {
	t.Parallel()
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	build := func(order []string) Request {
		r := validRequest()
		r.Metadata = make(map[string]string)
		for _, k := range order {
			r.Metadata[k] = "v-" + k
		}
		return r
	}
	want, err := build(keys).Fingerprint()
	require.NoError(t, err)
	reversed := slices.Clone(keys)
	slices.Reverse(reversed)
	interleaved := make([]string, 0, len(keys))
	for i := range 25 {
		interleaved = append(interleaved, keys[49-i], keys[i])
	}
	for _, order := range [][]string{keys, reversed, interleaved} {
		for range 20 { // map iteration order is random in every round
			got, err := build(order).Fingerprint()
			require.NoError(t, err)
			require.Equal(t, want, got)
		}
	}
}

func TestRequestFingerprintSensitive(t *testing.T) {
	t.Parallel()
	base, err := validRequest().Fingerprint()
	require.NoError(t, err)
	seen := map[string]string{base: "base"}
	for name, change := range map[string]func(*Request){
		"amount":          func(r *Request) { r.Amount++ },
		"currency":        func(r *Request) { r.Currency = "EUR" },
		"kind":            func(r *Request) { r.Kind = KindRefund },
		"references":      func(r *Request) { r.References = []string{"order-43"} },
		"references more": func(r *Request) { r.References = []string{"order-42", "x"} },
		"payment method":  func(r *Request) { r.PaymentMethod = "pm_other" },
		"customer":        func(r *Request) { r.Customer = "" },
		"payment ref":     func(r *Request) { r.PaymentRef = "pi_1" },
		"capture manual":  func(r *Request) { r.CaptureManual = true },
		"description":     func(r *Request) { r.Description = "Order #42 " },
		"metadata value":  func(r *Request) { r.Metadata["order_id"] = "43" },
		"metadata key":    func(r *Request) { r.Metadata = map[string]string{"order": "42"} },
		"metadata extra":  func(r *Request) { r.Metadata["x"] = "" },
		"no metadata":     func(r *Request) { r.Metadata = nil },
	} {
		r := validRequest()
		change(&r)
		fp, err := r.Fingerprint()
		require.NoError(t, err, name)
		require.NotContains(t, seen, fp, "%s gives the fingerprint of %s", name, seen[fp])
		seen[fp] = name
	}
}

func TestParseRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, r := range []Request{
		validRequest(),
		{Kind: KindCancel, References: []string{"o"}, PaymentRef: "pi_1"},
		{Kind: KindCharge, Amount: 1, Currency: "EUR", References: []string{"a", "b"}, CaptureManual: true, Description: "<&>\n\t\u2028", Metadata: map[string]string{"é": "ü", "k": ""}},
	} {
		c, err := r.Canonical()
		require.NoError(t, err)
		got, err := ParseRequest(c)
		require.NoError(t, err)
		require.Equal(t, r, got)
		c2, err := got.Canonical()
		require.NoError(t, err)
		require.Equal(t, c, c2)
	}

	// Stored JSON need not be byte-canonical (a jsonb column reorders keys
	// and adds spaces); the fingerprint comes from the decoded Request.
	got, err := ParseRequest([]byte(" {\"references\": [\"order-42\"], \"kind\": \"charge\",\n \"currency\": \"USD\", \"amount\": 4200, \"metadata\": null}\n"))
	require.NoError(t, err)
	require.Equal(t, Request{Kind: KindCharge, Amount: 4200, Currency: "USD", References: []string{"order-42"}}, got)
}

func TestParseRequestRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, json, field, problem string
	}{
		{"empty", ``, "Request", "not valid JSON"},
		{"bad JSON", `{"kind":"charge",`, "Request", "not valid JSON"},
		{"not an object", `["charge"]`, "Request", "must be a JSON object"},
		{"null", `null`, "Request", "must be a JSON object"},
		{"unknown field", `{"kind":"charge","amount":1,"currency":"USD","references":["o"],"amount_minor":1}`, "Request", `unknown field "amount_minor"`},
		{"field in another case", `{"Kind":"charge","amount":1,"currency":"USD","references":["o"]}`, "Request", `unknown field "Kind"`},
		{"duplicate field", `{"kind":"charge","amount":1,"amount":2,"currency":"USD","references":["o"]}`, "Request", `"amount" twice`},
		{"duplicate escaped field", `{"kind":"charge","amount":1,"amo\u0075nt":2,"currency":"USD","references":["o"]}`, "Request", `"amount" twice`},
		{"duplicate metadata key", `{"kind":"charge","currency":"USD","references":["o"],"metadata":{"a":"1","a":"2"}}`, "Metadata", `"a" twice`},
		{"trailing object", `{"kind":"cancel","references":["o"]}{}`, "Request", "data after"},
		{"trailing garbage", `{"kind":"cancel","references":["o"]} x`, "Request", "data after"},
		{"invalid UTF-8", "{\"kind\":\"cancel\",\"references\":[\"o\xff\"]}", "Request", "not valid UTF-8"},
		{"string amount", `{"kind":"charge","amount":"1","currency":"USD","references":["o"]}`, "Request", "cannot be decoded"},
		{"fractional amount", `{"kind":"charge","amount":1.5,"currency":"USD","references":["o"]}`, "Request", "cannot be decoded"},
		{"exponent amount", `{"kind":"charge","amount":1e2,"currency":"USD","references":["o"]}`, "Request", "cannot be decoded"},
		{"amount overflow", `{"kind":"charge","amount":9223372036854775808,"currency":"USD","references":["o"]}`, "Request", "cannot be decoded"},
		{"metadata not strings", `{"kind":"charge","currency":"USD","references":["o"],"metadata":{"a":1}}`, "Request", "cannot be decoded"},
		{"metadata not object", `{"kind":"charge","currency":"USD","references":["o"],"metadata":[]}`, "Request", "must be a JSON object"},
		{"invalid content", `{"kind":"charge","amount":1,"currency":"usd","references":["o"]}`, "Currency", `use "USD"`},
		{"missing kind", `{"amount":1,"currency":"USD","references":["o"]}`, "Kind", "is required"},
		{"missing references", `{"kind":"cancel"}`, "References", "is empty"},
		{"control char escaped", `{"kind":"cancel","references":["a\u0000"]}`, "References[0]", "U+0000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := ParseRequest([]byte(tc.json))
			require.Zero(t, r)
			requireInvalid(t, err, tc.field, tc.problem)
		})
	}
}

// requireInvalid checks that err is a *ValidationError for field whose
// message contains problem, and that it matches ErrInvalid.
// rejectCase is one row of a validation table: change makes an invalid
// value out of a valid one, and every error it meets must be a
// ValidationError naming field and problem.
type rejectCase[T any] struct {
	name    string
	change  func(*T)
	field   string
	problem string
}

// requireRejected runs each case as a parallel subtest: check gets the
// subtest, the changed value and invalid, which asserts that an error is the case's
// ValidationError.
func requireRejected[T any](t *testing.T, valid func() T, cases []rejectCase[T], check func(t *testing.T, v T, invalid func(error))) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := valid()
			tc.change(&v)
			check(t, v, func(err error) { requireInvalid(t, err, tc.field, tc.problem) })
		})
	}
}

func requireInvalid(t *testing.T, err error, field, problem string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, ErrInvalid)
	var ve *ValidationError
	require.True(t, errors.As(err, &ve), "%v is not a *ValidationError", err)
	require.Equal(t, field, ve.Field, "%v", err)
	require.Contains(t, ve.Problem, problem)
}

// Golden vectors.
//
// THESE VECTORS MUST NEVER CHANGE. They pin the key and fingerprint of real
// operations: a change would make every deployed service derive new keys for
// old operations, the providers would see new requests, and money would move
// again. If this test fails, the code is wrong, not the file. Add vectors for
// new inputs with -update (go test -run TestKeyGoldenVectors -update .);
// -update never rewrites an existing vector and refuses to write while one
// fails.

const goldenFile = "testdata/keys_golden.json"

type goldenFileData struct {
	Comment    string            `json:"comment"`
	Identities []goldenIdentity  `json:"identities"`
	Requests   []goldenRequestV1 `json:"requests"`
}

type goldenIdentity struct {
	Name         string   `json:"name"`
	Provider     string   `json:"provider"`
	Kind         Kind     `json:"kind"`
	References   []string `json:"references"`
	Generation   int      `json:"generation"`
	CanonicalHex string   `json:"canonical_hex"`
	Key          string   `json:"key"`
	OperationID  string   `json:"operation_id"`
}

type goldenRequestV1 struct {
	Name        string          `json:"name"`
	Request     json.RawMessage `json:"request"`
	Canonical   string          `json:"canonical"`
	Fingerprint string          `json:"fingerprint"`
}

// goldenIdentityInputs and goldenRequestInputs are the inputs of the golden
// file. Append new ones here (with a new name) and run -update; never edit
// or remove one.
func goldenIdentityInputs() map[string]Identity {
	return map[string]Identity{
		"stripe charge order 42":  {Provider: "stripe", Kind: KindCharge, References: []string{"order-42"}},
		"stripe refund 2 gen 0":   {Provider: "stripe", Kind: KindRefund, References: []string{"order-42", "refund-2"}},
		"stripe refund 2 gen 1":   {Provider: "stripe", Kind: KindRefund, References: []string{"order-42", "refund-2"}, Generation: 1},
		"adyen capture":           {Provider: "adyen", Kind: KindCapture, References: []string{"psp-8815", "capture-1"}},
		"adyen cancel gen 7":      {Provider: "adyen", Kind: KindCancel, References: []string{"order-1001"}, Generation: 7},
		"paypal charge cyrillic":  {Provider: "paypal", Kind: KindCharge, References: []string{"заказ-17"}},
		"square refund cjk":       {Provider: "square", Kind: KindRefund, References: []string{"order-9", "退款-1", "部分"}},
		"tbank charge 42":         {Provider: "tbank", Kind: KindCharge, References: []string{"42"}},
		"yookassa capture emoji":  {Provider: "yookassa", Kind: KindCapture, References: []string{"order-42", "🧾 receipt"}, Generation: 1},
		"checkout.com ab c":       {Provider: "checkout.com", Kind: KindCharge, References: []string{"ab", "c"}},
		"checkout.com a bc":       {Provider: "checkout.com", Kind: KindCharge, References: []string{"a", "bc"}},
		"razorpay refund 4 parts": {Provider: "razorpay", Kind: KindRefund, References: []string{"order 42", "line/3", "a:b", "x=y&z<>"}},
		"my_psp-2 long reference": {Provider: "my_psp-2", Kind: KindCharge, References: []string{strings.Repeat("0123456789abcdef", 16)}},
		"stripe charge 16 parts":  {Provider: "stripe", Kind: KindCharge, References: []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16"}},
		"stripe charge gen 300":   {Provider: "stripe", Kind: KindCharge, References: []string{"order-42"}, Generation: 300},
		"stripe charge combining": {Provider: "stripe", Kind: KindCharge, References: []string{"cafe\u0301", "U+2028\u2028"}},
	}
}

func goldenRequestInputs() map[string]Request {
	return map[string]Request{
		"charge with metadata": {
			Kind: KindCharge, Amount: 4200, Currency: "USD", References: []string{"order-42"},
			PaymentMethod: "pm_card_visa", Customer: "cus_123", Description: "Order #42 <gift> & more",
			Metadata: map[string]string{"order_id": "42", "cart": "a&b<c>", "Zone": "EU"},
		},
		"authorize rub": {
			Kind: KindCharge, Amount: 100000, Currency: "RUB", References: []string{"заказ-17"}, CaptureManual: true,
		},
		"capture eur": {
			Kind: KindCapture, Amount: 4200, Currency: "EUR", References: []string{"order-42"}, PaymentRef: "pi_3abc",
		},
		"cancel bare": {
			Kind: KindCancel, References: []string{"order-1001"}, PaymentRef: "8815",
		},
		"refund jpy unicode": {
			Kind: KindRefund, Amount: 1500, Currency: "JPY", References: []string{"order-9", "退款-1"},
			Description: "line 1\n\tline 2 \u2028 😀",
			Metadata:    map[string]string{"原因": "顾客要求", "z": "last", "a": "first", "é": "e-acute"},
		},
	}
}

func TestKeyGoldenVectors(t *testing.T) {
	data, err := os.ReadFile(goldenFile)
	var golden goldenFileData
	switch {
	case err == nil:
		require.NoError(t, json.Unmarshal(data, &golden), goldenFile)
	case errors.Is(err, os.ErrNotExist) && *update:
		golden.Comment = "payonce key and fingerprint golden vectors. NEVER CHANGE an existing vector: deployed services derive keys for stored operations from these rules. Add new vectors with: go test -run TestKeyGoldenVectors -update ."
	default:
		t.Fatalf("read %s: %v", goldenFile, err)
	}

	// Every stored vector must still derive exactly.
	names := map[string]bool{}
	for _, v := range golden.Identities {
		names["identity "+v.Name] = true
		id := Identity{Provider: v.Provider, Kind: v.Kind, References: v.References, Generation: v.Generation}
		checkGoldenVector(t, "identity", v.Name, id, goldenIdentityInputs(), deriveGoldenIdentity, func(got goldenIdentity) string {
			if reflect.DeepEqual(got, v) {
				return ""
			}
			return fmt.Sprintf("%+v\nwant (golden, must never change)\n%+v", got, v)
		})
	}
	for _, v := range golden.Requests {
		names["request "+v.Name] = true
		r, err := ParseRequest(v.Request)
		if err != nil {
			t.Errorf("request %q: %v", v.Name, err)
			continue
		}
		checkGoldenVector(t, "request", v.Name, r, goldenRequestInputs(), deriveGoldenRequest, func(got goldenRequestV1) string {
			if got.Canonical == v.Canonical && got.Fingerprint == v.Fingerprint {
				return ""
			}
			return fmt.Sprintf("%s %s\nwant (golden, must never change)\n%s %s", got.Canonical, got.Fingerprint, v.Canonical, v.Fingerprint)
		})
	}
	if t.Failed() {
		t.Fatalf("golden vectors differ: the key or fingerprint derivation changed; this would charge deployed operations again")
	}

	// Inputs in code without a vector: add them with -update, else fail.
	newIdentities := missingVectors(t, "identity", goldenIdentityInputs(), names, deriveGoldenIdentity)
	newRequests := missingVectors(t, "request", goldenRequestInputs(), names, deriveGoldenRequest)
	golden.Identities = append(golden.Identities, newIdentities...)
	golden.Requests = append(golden.Requests, newRequests...)
	added := len(newIdentities) + len(newRequests)
	if added == 0 {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(golden))
	require.NoError(t, os.MkdirAll(filepath.Dir(goldenFile), 0o755))
	require.NoError(t, os.WriteFile(goldenFile, buf.Bytes(), 0o644))
	t.Logf("added %d golden vectors to %s", added, goldenFile)
}

// missingVectors derives, with -update, the vector of every input that has
// none in names (keyed "kind name"); without -update it fails for each.
// checkGoldenVector checks the stored vector name of kind ("identity" or
// "request"), whose input in is read from the golden file: an input in code
// of the same name must be the same input, and in must derive what is
// stored; diff describes how got differs from the stored vector, "" when it
// does not.
func checkGoldenVector[I, V any](t *testing.T, kind, name string, in I, inputs map[string]I, derive func(string, I) (V, error), diff func(got V) string) {
	t.Helper()
	if want, ok := inputs[name]; ok {
		require.Equal(t, want, in, "%s %q: the input in code differs from the golden file; add a new vector instead of editing one", kind, name)
	}
	got, err := derive(name, in)
	if err != nil {
		t.Errorf("%s %q: %v", kind, name, err)
		return
	}
	if d := diff(got); d != "" {
		t.Errorf("%s %q: derived\n%s", kind, name, d)
	}
}

func missingVectors[I, V any](t *testing.T, kind string, inputs map[string]I, names map[string]bool, derive func(string, I) (V, error)) []V {
	t.Helper()
	var added []V
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if names[kind+" "+name] {
			continue
		}
		if !*update {
			t.Errorf("%s %q has no golden vector; run go test -run TestKeyGoldenVectors -update . and review the diff", kind, name)
			continue
		}
		v, err := derive(name, inputs[name])
		require.NoError(t, err)
		added = append(added, v)
	}
	return added
}

func deriveGoldenIdentity(name string, id Identity) (goldenIdentity, error) {
	c, errC := id.Canonical()
	key, errK := id.Key()
	opID, errO := id.OperationID()
	if err := errors.Join(errC, errK, errO); err != nil {
		return goldenIdentity{}, err
	}
	return goldenIdentity{
		Name: name, Provider: id.Provider, Kind: id.Kind, References: id.References, Generation: id.Generation,
		CanonicalHex: hex.EncodeToString(c), Key: key, OperationID: opID,
	}, nil
}

func deriveGoldenRequest(name string, r Request) (goldenRequestV1, error) {
	c, errC := r.Canonical()
	fp, errF := r.Fingerprint()
	if err := errors.Join(errC, errF); err != nil {
		return goldenRequestV1{}, err
	}
	return goldenRequestV1{Name: name, Request: json.RawMessage(c), Canonical: string(c), Fingerprint: fp}, nil
}

func BenchmarkKey(b *testing.B) {
	id := Identity{Provider: "stripe", Kind: KindRefund, References: []string{"order-42", "refund-2"}, Generation: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := id.Key(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFingerprint(b *testing.B) {
	r := validRequest()
	r.Metadata = map[string]string{"order_id": "42", "cart": "a&b<c>", "customer_email": "a@example.com"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Fingerprint(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFullRefundAndCaptureNeedNoCurrency(t *testing.T) {
	for _, k := range []Kind{KindRefund, KindCapture, KindCancel} {
		r := Request{Kind: k, References: []string{"order-1"}, PaymentRef: "pi_1"}
		require.NoError(t, r.Validate(), "full %s needs no currency", k)
	}
	require.Error(t, Request{Kind: KindCharge, Amount: 100, References: []string{"o"}}.Validate())
}

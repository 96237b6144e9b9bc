package payonce

import (
	"bytes"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// TestEncodeResultIsMarshal checks the hand-written encoding of a stored
// result against json.Marshal, on plain strings and on ones Marshal
// escapes (which take the fallback).
func TestEncodeResultIsMarshal(t *testing.T) {
	r := mrand.New(mrand.NewPCG(3, 5))
	alphabet := []string{"", "a", "pi_123", " ", "<", ">", "&", `"`, `\`, "\n", "\x7f", "é", "\u2028", "\xff", "~", "HTTP 402 card_declined: Your card was declined."}
	pick := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return b.String()
	}
	for i := range 20000 {
		o := Outcome{ProviderRef: pick(), Code: pick(), DeclineCode: pick(), Message: pick(), RequestID: pick(),
			HTTPStatus: []int{0, 200, 402, 500, -1}[r.IntN(5)], Replayed: r.IntN(2) == 0}
		want, err := json.Marshal(storedOf(o))
		if err != nil {
			t.Fatal(err)
		}
		if got := encodeResult(o); !bytes.Equal(got, want) {
			t.Fatalf("case %d: got %s, want %s", i, got, want)
		}
	}
}

// TestReadAnswerIsReadAll checks readAnswer against
// io.ReadAll(io.LimitReader(...)) for right, wrong and unknown lengths.
func TestReadAnswerIsReadAll(t *testing.T) {
	for _, n := range []int{0, 1, 511, 512, 513, 2000, MaxBodyBytes - 1, MaxBodyBytes, MaxBodyBytes + 1, MaxBodyBytes + 5000} {
		body := bytes.Repeat([]byte("x"), n)
		want, _ := io.ReadAll(io.LimitReader(bytes.NewReader(body), MaxBodyBytes+1))
		for _, size := range []int64{-1, int64(n), int64(n) + 7, int64(n) / 2, 0} {
			for _, rd := range []io.Reader{bytes.NewReader(body), iotest.OneByteReader(bytes.NewReader(body)), iotest.DataErrReader(bytes.NewReader(body))} {
				if n > 100_000 && rd != nil {
					if _, ok := rd.(*bytes.Reader); !ok {
						continue // byte by byte is slow; the small sizes cover it
					}
				}
				got, err := readAnswer(rd, size)
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("n=%d size=%d: got %d bytes, err %v; want %d", n, size, len(got), err, len(want))
				}
			}
		}
	}
	if _, err := readAnswer(iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v", err)
	}
}

// TestAppendCanonicalIsEncoder checks the hand-written canonical JSON
// against encoding/json's, on random requests; ones with strings the
// encoder escapes must take the fallback.
func TestAppendCanonicalIsEncoder(t *testing.T) {
	r := mrand.New(mrand.NewPCG(13, 17))
	plain := []string{"", "a", "USD", "pm_card_visa", " ", "<>&", "~", "z", "{}", "order-42"}
	escaped := []string{`"`, `\`, "\n", "\x7f", "é", "\u2028", "\xff"}
	pick := func() string {
		var b strings.Builder
		for range r.IntN(4) {
			if r.IntN(40) == 0 {
				b.WriteString(escaped[r.IntN(len(escaped))])
			} else {
				b.WriteString(plain[r.IntN(len(plain))])
			}
		}
		return b.String()
	}
	fast := 0
	for i := range 30000 {
		q := Request{Amount: []int64{0, 1, 1999, -5, MaxAmount}[r.IntN(5)], CaptureManual: r.IntN(2) == 0,
			Currency: pick(), Customer: pick(), Description: pick(), Kind: Kind(pick()), PaymentMethod: pick(), PaymentRef: pick()}
		if n := r.IntN(4); n > 0 {
			q.References = make([]string, n-1)
			for j := range q.References {
				q.References[j] = pick()
			}
		}
		if n := r.IntN(20); n > 0 {
			q.Metadata = map[string]string{}
			for range n - 1 {
				q.Metadata[pick()] = pick()
			}
		}
		want, err := q.encodeCanonical()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := q.appendCanonical()
		if !ok {
			continue
		}
		fast++
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d: got %s, want %s", i, got, want)
		}
	}
	if fast < 5000 {
		t.Fatalf("only %d requests took the hand-written path", fast)
	}
}

// The hand-written encoders know each field of the types they write, and
// those of a frozen format above all: a field added to Request or to the
// stored result that they did not write would leave it out of the
// fingerprint (two different requests under one key) or of the record. This
// fails first, saying which encoder to extend.
func TestHandEncodersKnowEveryField(t *testing.T) {
	for _, c := range []struct {
		typ     reflect.Type
		encoder string
		fields  []string
	}{
		{reflect.TypeFor[Request](), "Request.appendCanonical", []string{
			"amount,omitempty", "capture_manual,omitempty", "currency,omitempty", "customer,omitempty",
			"description,omitempty", "kind", "metadata,omitempty", "payment_method,omitempty",
			"payment_ref,omitempty", "references",
		}},
		{reflect.TypeFor[storedResult](), "storedResult.appendPlain", []string{
			"provider_ref,omitempty", "code,omitempty", "decline_code,omitempty", "message,omitempty",
			"http_status,omitempty", "request_id,omitempty", "replayed,omitempty",
		}},
	} {
		var got []string
		for f := range c.typ.Fields() {
			got = append(got, f.Tag.Get("json"))
		}
		if !reflect.DeepEqual(got, c.fields) {
			t.Errorf("%s has the JSON fields %q; %s writes %q: extend it (and this list) or drop it", c.typ, got, c.encoder, c.fields)
		}
	}
}

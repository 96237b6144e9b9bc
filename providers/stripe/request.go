package stripe

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Metadata keys the adapter writes on every PaymentIntent and Refund it
// creates. Caller metadata may not use the "payonce_" prefix.
const (
	// MetaOperation holds the operation id; lookups find objects by it.
	MetaOperation = "payonce_op"
	// MetaKey holds the idempotency key of the attempt that created the object.
	MetaKey = "payonce_key"
	// MetaKind holds the operation kind ("charge", "refund").
	MetaKind = "payonce_kind"
	// MetaReferences holds the operation's references as a JSON array (cut
	// to Stripe's 500-byte value limit, ending with "...+N" for the N
	// references left out).
	MetaReferences = "payonce_refs"
)

// Stripe's metadata limits: 50 keys, keys up to 40 characters without
// square brackets, values up to 500 characters.
const (
	stripeMaxMetadataKeys  = 50
	stripeMaxMetadataValue = 500
)

// NewRequest builds the form-encoded POST of one attempt:
//
//   - charge:  POST /v1/payment_intents (created and confirmed at once)
//   - capture: POST /v1/payment_intents/{PaymentRef}/capture
//   - cancel:  POST /v1/payment_intents/{PaymentRef}/cancel
//   - refund:  POST /v1/refunds
//
// Every request carries r.Key in the Idempotency-Key header and the API key
// as a Bearer token. The body's form keys are sorted, so every attempt of an
// operation sends the same bytes. An error (nothing to send) is a
// *payonce.ValidationError naming the field.
func (p *Provider) NewRequest(ctx context.Context, r payonce.SendRequest) (*http.Request, error) {
	if err := adapterkit.CheckKey("stripe ", r.Key, MaxKeyLength, "is empty; every Stripe POST carries the operation's idempotency key",
		"is %d bytes; Stripe accepts at most %d"); err != nil {
		return nil, err
	}
	req := r.Request
	var (
		path string
		// A charge sets at most 12 fields besides the caller's metadata:
		// the backing array keeps a usual form off the heap.
		fields [16]formField
		form   = formFields(fields[:0])
	)
	switch req.Kind {
	case payonce.KindCharge:
		if r.OperationID == "" {
			return nil, invalidSend("OperationID", "is empty; it is written to the PaymentIntent's metadata so that a lookup can find it")
		}
		path = chargePath
		form = form.set("amount", strconv.FormatInt(req.Amount, 10))
		form = form.set("currency", lowerCurrency(req.Currency))
		form = form.set("confirm", "true")
		if req.CaptureManual {
			form = form.set("capture_method", "manual")
		} else {
			form = form.set("capture_method", "automatic")
		}
		// A server-side create-and-confirm has nobody to redirect. Since API
		// 2023-08-16 a PaymentIntent enables the Dashboard's payment methods
		// by default, and confirming one without return_url fails ("A
		// return_url must be specified ... set automatic_payment_methods
		// [allow_redirects] to never"). So payonce enables automatic payment
		// methods explicitly (the same on every API version) and refuses
		// redirect-based ones: a payment method that needs a redirect is
		// refused by Stripe (400) instead of leaving a PaymentIntent that
		// waits for a customer who will never come back.
		//
		// off_session is deliberately NOT sent. off_session=true declares a
		// merchant-initiated payment, which needs the customer's prior
		// consent and a payment method saved for off-session use; payonce
		// cannot know that, and a false claim gets declines (or breaks card
		// network rules). Without it, a card that asks for authentication
		// leaves the PaymentIntent in requires_action, which Classify
		// refuses: payonce never hands out the client secret, so nobody can
		// complete the action and no money can move.
		form = form.set("automatic_payment_methods[enabled]", "true")
		form = form.set("automatic_payment_methods[allow_redirects]", "never")
		form = form.setIf("payment_method", req.PaymentMethod)
		form = form.setIf("customer", req.Customer)
		form = form.setIf("description", req.Description)
		var err error
		if form, err = setMetadata(form, r); err != nil {
			return nil, err
		}
	case payonce.KindCapture:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a capture needs the PaymentIntent id (pi_...) of the authorized charge")
		}
		path = "/v1/payment_intents/" + url.PathEscape(req.PaymentRef) + "/capture"
		if req.Amount > 0 {
			form = form.set("amount_to_capture", strconv.FormatInt(req.Amount, 10))
		}
	case payonce.KindCancel:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a cancel needs the PaymentIntent id (pi_...) to cancel")
		}
		path = "/v1/payment_intents/" + url.PathEscape(req.PaymentRef) + "/cancel"
	case payonce.KindRefund:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a refund needs the PaymentIntent id (pi_...) of the charge to refund")
		}
		if r.OperationID == "" {
			return nil, invalidSend("OperationID", "is empty; it is written to the Refund's metadata so that a lookup can find it")
		}
		path = "/v1/refunds"
		form = form.set("payment_intent", req.PaymentRef)
		if req.Amount > 0 {
			form = form.set("amount", strconv.FormatInt(req.Amount, 10))
		}
		var err error
		if form, err = setMetadata(form, r); err != nil {
			return nil, err
		}
	default:
		return nil, invalidSend("Request.Kind", "is %q; the Stripe adapter sends charge, capture, cancel and refund", string(req.Kind))
	}

	body := form.encode() // sorted by key, as url.Values.Encode: the same bytes on every attempt
	const contentType = "application/x-www-form-urlencoded"
	u := p.baseURL + path
	if p.apiVersion != "" {
		return adapterkit.PostHeaders(ctx, "stripe", req.Kind, u, body, contentType, "Idempotency-Key", r.Key,
			"Authorization", string(p.authorization()), "Accept", "application/json", "Stripe-Version", p.apiVersion)
	}
	return adapterkit.PostHeaders(ctx, "stripe", req.Kind, u, body, contentType, "Idempotency-Key", r.Key,
		"Authorization", string(p.authorization()), "Accept", "application/json")
}

// chargePath is the path of a charge: PaymentIntents are created (and
// confirmed) there.
const chargePath = "/v1/payment_intents"

// lowerCurrency is strings.ToLower(c). The codes callers pass are ISO 4217
// in upper case, so the usual ones are constants here instead of a new
// string per request.
func lowerCurrency(c string) string {
	switch c {
	case "USD":
		return "usd"
	case "EUR":
		return "eur"
	case "GBP":
		return "gbp"
	}
	return strings.ToLower(c)
}

// authorization is the Authorization header's value: the API key as a
// Bearer token.
func (p *Provider) authorization() adapterkit.Secret {
	return adapterkit.Secret("Bearer " + string(p.apiKey))
}

func invalidSend(field, format string, args ...any) error {
	return adapterkit.Invalid("stripe ", field, format, args...)
}

func (form formFields) setIf(k, v string) formFields {
	if v != "" {
		form = form.set(k, v)
	}
	return form
}

// setMetadata writes the caller's metadata and payonce's own keys. The
// caller's keys are checked against Stripe's rules that the root package
// cannot know: the "payonce_" prefix is reserved, keys may not hold square
// brackets (they would change the form's structure), and the caller may use
// at most 50 - 4 keys since payonce adds four.
func setMetadata(form formFields, r payonce.SendRequest) (formFields, error) {
	md := r.Request.Metadata
	if err := adapterkit.CheckMetadata("stripe ", md, adapterkit.MetadataLimits{Provider: "Stripe", Keys: stripeMaxMetadataKeys}); err != nil {
		return form, err
	}
	for k, v := range md {
		if strings.ContainsAny(k, "[]") {
			return form, invalidSend("Request.Metadata", "key %q contains a square bracket, which Stripe does not allow in metadata keys", k)
		}
		form = form.set("metadata["+k+"]", v)
	}
	// payonce's own keys (adapterkit.Metadata), set after the caller's.
	// They are constants, so their form keys are too; the map Metadata
	// returns would be built only to be read once.
	form = form.set("metadata["+adapterkit.MetaOperation+"]", r.OperationID)
	form = form.set("metadata["+adapterkit.MetaKey+"]", r.Key)
	form = form.set("metadata["+adapterkit.MetaKind+"]", string(r.Request.Kind))
	form = form.set("metadata["+adapterkit.MetaReferences+"]", adapterkit.References(r.Request.References, stripeMaxMetadataValue, adapterkit.Bytes))
	return form, nil
}

// formField is one key and value of a form being built.
type formField struct{ k, v string }

// formFields builds a form body as url.Values does (Set, then Encode)
// for keys with one value each, without the map and the slice per value.
// Its output is byte for byte that of url.Values.Encode: keys sorted,
// key=value pairs joined by "&", both escaped by url.QueryEscape. It is
// passed and returned by value, like append's slices, so that the array
// behind a usual form stays on the caller's stack.
type formFields []formField

// set replaces the value of k, or adds k, as url.Values.Set does.
func (f formFields) set(k, v string) formFields {
	for i := range f {
		if f[i].k == k {
			f[i].v = v
			return f
		}
	}
	return append(f, formField{k, v})
}

// encode is url.Values.Encode of the form, in one allocation.
func (f formFields) encode() []byte {
	if !queryEscapeVerified {
		v := make(url.Values, len(f))
		for _, fl := range f {
			v.Set(fl.k, fl.v)
		}
		return []byte(v.Encode())
	}
	// Insertion sort: a form has a few dozen keys at most, and unlike
	// slices.SortFunc it keeps the fields' array on the caller's stack.
	fs := f
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].k < fs[j-1].k; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
	n := 0
	for i, fl := range f {
		if i > 0 {
			n++
		}
		n += queryEscapedLen(fl.k) + 1 + queryEscapedLen(fl.v)
	}
	b := make([]byte, 0, n)
	for i, fl := range f {
		if i > 0 {
			b = append(b, '&')
		}
		b = appendQueryEscape(b, fl.k)
		b = append(b, '=')
		b = appendQueryEscape(b, fl.v)
	}
	return b
}

// queryUnreserved reports the bytes url.QueryEscape leaves as they are:
// letters, digits and "-_.~" (RFC 3986 unreserved). It turns a space into
// "+" and every other byte into %XX with upper-case hex digits.
func queryUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

func queryEscapedLen(s string) int {
	n := len(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && !queryUnreserved(c) {
			n += 2
		}
	}
	return n
}

// appendQueryEscape appends url.QueryEscape(s) to b.
func appendQueryEscape(b []byte, s string) []byte {
	const upperhex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case queryUnreserved(c):
			b = append(b, c)
		case c == ' ':
			b = append(b, '+')
		default:
			b = append(b, '%', upperhex[c>>4], upperhex[c&15])
		}
	}
	return b
}

// queryEscapeVerified reports that appendQueryEscape escapes every byte as
// this Go version's url.QueryEscape does. QueryEscape maps each byte on its
// own, so agreeing on all 256 bytes is agreeing on every string. Should a
// future net/url escape differently, the form is encoded by url.Values
// itself: the body of an attempt must stay what url.Values.Encode makes.
var queryEscapeVerified = func() bool {
	var one [1]byte
	for c := range 256 {
		one[0] = byte(c)
		if string(appendQueryEscape(nil, string(one[:]))) != url.QueryEscape(string(one[:])) {
			return false
		}
	}
	return true
}()

// setHeaders writes the headers of every request but the key and the
// content type: the API key, Accept and, when set, Stripe-Version.
func (p *Provider) setHeaders(h http.Header) {
	if p.apiVersion != "" {
		adapterkit.SetHeaders(h, "Authorization", string(p.authorization()), "Accept", "application/json", "Stripe-Version", p.apiVersion)
	} else {
		adapterkit.SetHeaders(h, "Authorization", string(p.authorization()), "Accept", "application/json")
	}
}

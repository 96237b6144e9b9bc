package paypal

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/currency"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The forms of Request.PaymentMethod a charge takes.
const (
	// MethodOrder prefixes the id of an order the payer approved with
	// PayPal's JS SDK or redirect ("order:5O190127TN364715T"): the charge
	// captures it (or authorizes it, with CaptureManual).
	MethodOrder = "order:"
	// MethodPayPal prefixes the vault id of a saved PayPal wallet
	// ("paypal:8kk8451t"): the charge creates an order paid with it.
	MethodPayPal = "paypal:"
	// MethodCard prefixes the vault id of a saved card ("card:7ts2yx1y"):
	// the charge creates an order paid with it, as a merchant-initiated
	// payment.
	MethodCard = "card:"
)

// idPattern is what an order or vault id may hold: PayPal's pattern for
// vault_id (^[0-9a-zA-Z_-]+$, at most 255: PayPal-TypeScript-Server-SDK,
// doc/models/card-request.md and paypal-wallet.md); order ids are
// alphanumeric. Nothing else can reach a URL path.
var idPattern = regexp.MustCompile(`^[0-9A-Za-z_-]{1,255}$`)

// maxDescription is how much of a purchase unit's description PayPal
// keeps ("any content beyond 127 characters ... will be truncated":
// doc/models/purchase-unit-request.md).
const maxDescription = 127

// NewRequest builds the JSON POST of one attempt. It makes no network
// call (the client also calls it to validate a request before recording
// it); the access token is added by AuthorizeRequest.
//
//   - charge, PaymentMethod "order:<id>": POST /v2/checkout/orders/{id}/capture,
//     or /authorize with CaptureManual; body {}.
//   - charge, PaymentMethod "paypal:<vault id>" or "card:<vault id>":
//     POST /v2/checkout/orders with intent CAPTURE (AUTHORIZE with
//     CaptureManual), one purchase unit {amount, custom_id: the operation
//     id, invoice_id: the key, description} and payment_source
//     paypal.vault_id or card.vault_id (cards as merchant-initiated
//     unscheduled stored credentials).
//   - capture: POST /v2/payments/authorizations/{PaymentRef}/capture
//     {amount when set, invoice_id: the key, final_capture: true}.
//   - cancel:  POST /v2/payments/authorizations/{PaymentRef}/void, body {}.
//   - refund:  POST /v2/payments/captures/{PaymentRef}/refund
//     {amount when set, custom_id: the operation id, invoice_id: the key}.
//
// Every request carries the key in PayPal-Request-Id, "Prefer:
// return=representation" (so that every answer, a repeat's included, holds
// the whole object the states table reads) and the same bytes on every
// attempt. Amounts are PayPal's decimal strings in PayPal's exponent for
// the currency (HUF and TWD take no decimals there): an amount PayPal
// cannot express is refused here. An error is a *payonce.ValidationError
// naming the field and the forms that exist.
//
// Why custom_id and invoice_id: custom_id (the operation id, the same in
// every key generation) is copied onto the authorization or capture and
// shows in webhooks and transaction search: it attributes an object to its
// operation. invoice_id (the key, one per generation) lets an account with
// PayPal's "block duplicate invoice ID" setting refuse a second order under
// the same key even after the 6 h window (422 DUPLICATE_INVOICE_ID, which
// Classify reads as evidence the order exists), while an operator-approved
// resend under a new key generation still goes through.
func (p *Provider) NewRequest(ctx context.Context, r payonce.SendRequest) (*http.Request, error) {
	// PayPal-Request-Id: "Maximum Length: 108" (doc/controllers/orders.md).
	if err := adapterkit.CheckKey("paypal ", r.Key, MaxKeyLength, "is empty; every PayPal POST carries the operation's PayPal-Request-Id",
		"is %d bytes; PayPal-Request-Id holds at most %d"); err != nil {
		return nil, err
	}
	if r.OperationID == "" {
		return nil, invalidSend("OperationID", "is empty; it is sent as custom_id so that the order, capture or refund names its operation")
	}
	req := r.Request
	if len(req.Metadata) > 0 {
		// PayPal's orders and payments have no metadata map: dropping the
		// caller's keys silently would lose them.
		return nil, invalidSend("Request.Metadata", "has %d keys; PayPal orders and payments carry no metadata (the adapter writes the operation id in custom_id): leave it empty", len(req.Metadata))
	}
	var (
		path string
		body any
	)
	switch req.Kind {
	case payonce.KindCharge:
		if req.Amount <= 0 {
			return nil, invalidSend("Request.Amount", "is %d; a charge needs a positive amount in minor units", req.Amount)
		}
		amount, err := toPayPal(req.Amount, req.Currency)
		if err != nil {
			return nil, err
		}
		form, id, err := paymentMethod(req.PaymentMethod)
		if err != nil {
			return nil, err
		}
		if form == MethodOrder {
			action := "/capture"
			if req.CaptureManual {
				action = "/authorize"
			}
			path, body = "/v2/checkout/orders/"+url.PathEscape(id)+action, emptyBody{}
			break
		}
		src := paymentSourceRequest{}
		if form == MethodPayPal {
			src.PayPal = &vaultSource{VaultID: id}
		} else {
			// A saved card charged without the cardholder present is a
			// merchant-initiated, unscheduled stored-credential payment
			// (CardStoredCredential: payment_initiator MERCHANT,
			// payment_type UNSCHEDULED, usage SUBSEQUENT;
			// doc/models/card-stored-credential.md).
			src.Card = &vaultSource{VaultID: id, StoredCredential: &storedCredential{PaymentInitiator: "MERCHANT", PaymentType: "UNSCHEDULED", Usage: "SUBSEQUENT"}}
		}
		path, body = "/v2/checkout/orders", orderRequest{
			Intent: intentOf(req),
			PurchaseUnits: []purchaseUnitRequest{{Amount: amount, CustomID: r.OperationID, InvoiceID: r.Key,
				Description: cut(req.Description, maxDescription)}},
			PaymentSource: src,
		}
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		if !idPattern.MatchString(req.PaymentRef) {
			what := map[payonce.Kind]string{payonce.KindCapture: "authorization", payonce.KindCancel: "authorization", payonce.KindRefund: "capture"}[req.Kind]
			if req.PaymentRef == "" {
				return nil, invalidSend("Request.PaymentRef", "is empty; a %s needs the PayPal %s id", req.Kind, what)
			}
			return nil, invalidSend("Request.PaymentRef", "is %q; a %s needs a PayPal %s id (letters, digits, _ and -)", req.PaymentRef, req.Kind, what)
		}
		var amount *money
		if req.Amount > 0 && req.Kind != payonce.KindCancel {
			m, err := toPayPal(req.Amount, req.Currency)
			if err != nil {
				return nil, err
			}
			amount = &m
		}
		ref := url.PathEscape(req.PaymentRef)
		switch req.Kind {
		case payonce.KindCapture:
			// final_capture: payonce captures an authorization once; the
			// rest is released.
			path, body = "/v2/payments/authorizations/"+ref+"/capture", captureRequest{Amount: amount, InvoiceID: r.Key, FinalCapture: true}
		case payonce.KindCancel:
			path, body = "/v2/payments/authorizations/"+ref+"/void", emptyBody{}
		default:
			path, body = "/v2/payments/captures/"+ref+"/refund", refundRequest{Amount: amount, CustomID: r.OperationID, InvoiceID: r.Key}
		}
	default:
		return nil, invalidSend("Request.Kind", "is %q; the PayPal adapter sends charge, capture, cancel and refund", string(req.Kind))
	}
	return adapterkit.PostJSON(ctx, "paypal", req.Kind, p.baseURL+path, body, setPostHeaders, "PayPal-Request-Id", r.Key)
}

// setPostHeaders sets what every POST carries besides the key and the
// token: return=representation makes PayPal answer with the whole object
// (the default, return=minimal, holds only id, status and links:
// doc/controllers/orders.md, "prefer").
func setPostHeaders(h http.Header) {
	h.Set("Accept", "application/json")
	h.Set("Prefer", "return=representation")
}

// paymentMethod splits a charge's PaymentMethod into its form (MethodOrder,
// MethodPayPal, MethodCard) and id.
func paymentMethod(pm string) (form, id string, err error) {
	for _, f := range []string{MethodOrder, MethodPayPal, MethodCard} {
		if rest, ok := strings.CutPrefix(pm, f); ok {
			if !idPattern.MatchString(rest) {
				return "", "", invalidSend("Request.PaymentMethod", "is %q; the id after %q must be 1 to 255 letters, digits, _ or -", pm, f)
			}
			return f, rest, nil
		}
	}
	if pm == "" {
		return "", "", invalidSend("Request.PaymentMethod", `is empty; a PayPal charge takes "order:<ORDER_ID>" (an order the payer approved), "paypal:<VAULT_ID>" or "card:<VAULT_ID>" (a saved payment method)`)
	}
	return "", "", invalidSend("Request.PaymentMethod", `is %q; a PayPal charge takes "order:<ORDER_ID>" (an order the payer approved), "paypal:<VAULT_ID>" or "card:<VAULT_ID>" (a saved payment method)`, pm)
}

func invalidSend(field, format string, args ...any) error {
	return adapterkit.Invalid("paypal ", field, format, args...)
}

// cut returns the first n characters of s.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// ---- money ----

// payPalDecimals are the currencies whose decimals in PayPal's API differ
// from ISO 4217's: "HUF: This currency does not support decimals. If you
// pass a decimal amount, an error occurs." and the same for TWD (JPY has
// none in ISO 4217 either): https://developer.paypal.com/api/rest/reference/currency-codes/.
var payPalDecimals = map[string]int{"HUF": 0, "TWD": 0}

// isoScale is the ISO 4217 minor-unit digits of code, the unit payonce
// counts amounts in (golang.org/x/text/currency, as payonce's own
// validation).
func isoScale(code string) (int, error) {
	u, err := currency.ParseISO(code)
	if err != nil || u.String() != code {
		return 0, fmt.Errorf("%q is not an ISO 4217 currency code in upper case", code)
	}
	scale, _ := currency.Standard.Rounding(u)
	return scale, nil
}

// scales is the ISO and the PayPal number of decimals of code.
func scales(code string) (iso, pp int, err error) {
	iso, err = isoScale(code)
	if err != nil {
		return 0, 0, err
	}
	pp = iso
	if d, ok := payPalDecimals[code]; ok {
		pp = d
	}
	return iso, pp, nil
}

// toPayPal renders minor (ISO minor units of code) as PayPal's Money, in
// PayPal's decimals. An amount with a fraction PayPal cannot express
// (1050 HUF minor units: 10.50 forints) is a ValidationError.
func toPayPal(minor int64, code string) (money, error) {
	iso, pp, err := scales(code)
	if err != nil {
		return money{}, invalidSend("Request.Currency", "%v", err)
	}
	if minor <= 0 {
		return money{}, invalidSend("Request.Amount", "is %d; PayPal amounts are positive", minor)
	}
	if iso > pp {
		f := pow10(iso - pp)
		if minor%f != 0 {
			return money{}, invalidSend("Request.Amount", "is %d minor units of %s (%s %s); PayPal takes %s without decimals: use a multiple of %d",
				minor, code, decimal(minor, iso), code, code, f)
		}
		minor /= f
	}
	return money{CurrencyCode: code, Value: decimal(minor, pp)}, nil
}

// fromPayPal reads PayPal's Money as ISO minor units of its currency: the
// one amount parser of the adapter (Classify, Lookup, webhooks and the
// audit's transaction search all read amounts through it, so that an
// amount means the same wherever it is read). It accepts up to the ISO
// number of decimals ("10.5" USD is 1050; "10.00" HUF is 1000), and zeros
// past them ("1500.00" JPY is 1500: the same number); it refuses any other
// digit past them, a sign, or anything but digits and one dot.
func fromPayPal(m money) (int64, error) {
	iso, _, err := scales(m.CurrencyCode)
	if err != nil {
		return 0, err
	}
	intPart, frac, hasDot := strings.Cut(m.Value, ".")
	if intPart == "" || strings.Trim(intPart, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || (hasDot && frac == "") {
		return 0, fmt.Errorf("amount %q is not a decimal number", m.Value)
	}
	if len(frac) > iso {
		if strings.Trim(frac[iso:], "0") != "" {
			return 0, fmt.Errorf("amount %q has more than %d decimals for %s", m.Value, iso, m.CurrencyCode)
		}
		frac = frac[:iso]
	}
	n, err := strconv.ParseInt(intPart+frac+strings.Repeat("0", iso-len(frac)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("amount %q is out of range", m.Value)
	}
	return n, nil
}

func pow10(n int) int64 {
	f := int64(1)
	for range n {
		f *= 10
	}
	return f
}

// decimal renders n with scale decimals ("1050", 2 → "10.50").
func decimal(n int64, scale int) string {
	s := strconv.FormatInt(n, 10)
	if scale == 0 {
		return s
	}
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	return s[:len(s)-scale] + "." + s[len(s)-scale:]
}

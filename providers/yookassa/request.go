package yookassa

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Metadata keys the adapter writes on every payment it creates. Caller
// metadata may not use the "payonce_" prefix.
const (
	// MetaOperation holds the operation id; lookups find payments by it.
	MetaOperation = "payonce_op"
	// MetaKey holds the idempotency key of the attempt that created the
	// payment.
	MetaKey = "payonce_key"
	// MetaKind holds the operation kind ("charge").
	MetaKind = "payonce_kind"
	// MetaReferences holds the operation's references as a JSON array, cut
	// to YooKassa's 512-character value limit.
	MetaReferences = "payonce_refs"
)

// RefundMarker prefixes the operation id in a refund's description. YooKassa
// refunds carry no metadata, so the description is what a lookup matches a
// refund on: "payonce_op:<operation id>".
const RefundMarker = "payonce_op:"

// RefundKeyMarker prefixes the idempotency key in the description of a
// refund sent under a later key generation (after an operator approved a
// resend under a new key): "payonce_op:<operation id> payonce_key:<key>".
// A lookup tells the generations' refunds apart by it. At generation 0 the
// key is the operation id, so it is not written and the description is the
// same bytes as before generations existed.
const RefundKeyMarker = "payonce_key:"

// YooKassa's limits on what the adapter sends. The metadata ones are the
// API reference's for a payment's metadata: at most 16 key-value pairs,
// keys of at most 32 characters, values of at most 512, UTF-8 strings
// (https://yookassa.ru/developers/api#create_payment_metadata).
const (
	maxMetadataKeys        = 16
	maxMetadataKeyRunes    = 32
	maxMetadataValueRunes  = 512
	maxPaymentDescription  = 128
	maxRefundDescription   = 250
	refundDescriptionSpace = " "
)

// metadataLimits are YooKassa's metadata limits that the root package
// cannot know: at most 16 keys (so 12 for the caller), keys of at most 32
// characters, values of at most 512; a payment's metadata (the caller's
// plus payonce's) is held to them.
var metadataLimits = adapterkit.MetadataLimits{Provider: "YooKassa",
	Keys: maxMetadataKeys, Key: maxMetadataKeyRunes, Value: maxMetadataValueRunes, Length: utf8.RuneCountInString}

type paymentBody struct {
	Amount          amount            `json:"amount"`
	Capture         bool              `json:"capture"`
	PaymentMethodID string            `json:"payment_method_id"`
	Description     string            `json:"description,omitempty"`
	Metadata        map[string]string `json:"metadata"`
}

type captureBody struct {
	Amount *amount `json:"amount,omitempty"`
}

type refundBody struct {
	PaymentID   string `json:"payment_id"`
	Amount      amount `json:"amount"`
	Description string `json:"description"`
}

// NewRequest builds the JSON POST of one attempt:
//
//   - charge:  POST /v3/payments with payment_method_id (a saved payment
//     method), capture = !CaptureManual, metadata payonce_op/_key/_kind/_refs
//   - capture: POST /v3/payments/{PaymentRef}/capture (amount when set)
//   - cancel:  POST /v3/payments/{PaymentRef}/cancel
//   - refund:  POST /v3/refunds with payment_id, amount (required) and a
//     description carrying RefundMarker + the operation id (and, under a
//     later key generation, RefundKeyMarker + the key)
//
// Every request carries r.Key in the Idempotence-Key header and the shop id
// and secret key as HTTP Basic credentials. Amounts are written with the
// currency's minor-unit digits. The body is the same bytes on every
// attempt. An error (nothing to send) is a *payonce.ValidationError naming
// the field.
//
// Request.Customer is not sent (a saved payment method already belongs to a
// customer); Request.Metadata is sent on charges only: YooKassa's capture,
// cancel and refund requests carry none.
func (p *Provider) NewRequest(ctx context.Context, r payonce.SendRequest) (*http.Request, error) {
	if err := adapterkit.CheckKey("yookassa ", r.Key, MaxKeyLength, "is empty; every YooKassa POST carries the operation's Idempotence-Key",
		"is %d bytes; YooKassa accepts at most %d"); err != nil {
		return nil, err
	}
	req := r.Request
	var (
		path string
		body any
	)
	switch req.Kind {
	case payonce.KindCharge:
		if r.OperationID == "" {
			return nil, invalidSend("OperationID", "is empty; it is written to the payment's metadata so that a lookup can find it")
		}
		if req.PaymentMethod == "" {
			return nil, invalidSend("Request.PaymentMethod", "is empty; a server-side YooKassa charge needs the id of a saved payment method (payment_method_id)")
		}
		amt, err := formatAmount(req.Amount, req.Currency)
		if err != nil {
			return nil, invalidSend("Request.Amount", "%v", err)
		}
		if n := utf8.RuneCountInString(req.Description); n > maxPaymentDescription {
			return nil, invalidSend("Request.Description", "is %d characters; YooKassa accepts at most %d for a payment", n, maxPaymentDescription)
		}
		md, err := adapterkit.WithMetadata("yookassa ", r, metadataLimits)
		if err != nil {
			return nil, err
		}
		path = "/v3/payments"
		body = paymentBody{Amount: amt, Capture: !req.CaptureManual, PaymentMethodID: req.PaymentMethod,
			Description: req.Description, Metadata: md}
	case payonce.KindCapture:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a capture needs the YooKassa payment id of the authorized charge")
		}
		var cb captureBody
		if req.Amount > 0 {
			amt, err := formatAmount(req.Amount, req.Currency)
			if err != nil {
				return nil, invalidSend("Request.Amount", "%v", err)
			}
			cb.Amount = &amt
		}
		path = "/v3/payments/" + url.PathEscape(req.PaymentRef) + "/capture"
		body = cb
	case payonce.KindCancel:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a cancel needs the YooKassa payment id to cancel")
		}
		path = "/v3/payments/" + url.PathEscape(req.PaymentRef) + "/cancel"
		body = struct{}{}
	case payonce.KindRefund:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a refund needs the YooKassa payment id of the charge to refund")
		}
		if r.OperationID == "" {
			return nil, invalidSend("OperationID", "is empty; it is written to the refund's description so that a lookup can find it")
		}
		if req.Amount <= 0 {
			return nil, invalidSend("Request.Amount", "is 0; YooKassa refunds need the amount to refund (it has no \"refund what remains\")")
		}
		amt, err := formatAmount(req.Amount, req.Currency)
		if err != nil {
			return nil, invalidSend("Request.Amount", "%v", err)
		}
		path = "/v3/refunds"
		body = refundBody{PaymentID: req.PaymentRef, Amount: amt, Description: refundDescription(r.OperationID, r.Key, req.Description)}
	default:
		return nil, invalidSend("Request.Kind", "is %q; the YooKassa adapter sends charge, capture, cancel and refund", string(req.Kind))
	}

	return adapterkit.PostJSON(ctx, "yookassa", req.Kind, p.baseURL+path, body, p.setHeaders, "Idempotence-Key", r.Key)
}

func (p *Provider) setHeaders(h http.Header) {
	cred := base64.StdEncoding.EncodeToString([]byte(string(p.shopID) + ":" + string(p.secretKey)))
	h.Set("Authorization", "Basic "+cred)
	h.Set("Accept", "application/json")
}

func invalidSend(field, format string, args ...any) error {
	return adapterkit.Invalid("yookassa ", field, format, args...)
}

// refundDescription is the refund's description: the caller's, cut to fit,
// followed by RefundMarker and the operation id, and RefundKeyMarker and the
// key when the key is not the operation id (a later key generation), within
// YooKassa's 250 characters.
func refundDescription(op, key, desc string) string {
	marker := RefundMarker + op
	if key != "" && key != op {
		marker += refundDescriptionSpace + RefundKeyMarker + key
	}
	if desc == "" {
		return marker
	}
	room := maxRefundDescription - utf8.RuneCountInString(marker) - len(refundDescriptionSpace)
	if room <= 0 {
		return marker
	}
	if utf8.RuneCountInString(desc) > room {
		desc = string([]rune(desc)[:room])
	}
	return desc + refundDescriptionSpace + marker
}

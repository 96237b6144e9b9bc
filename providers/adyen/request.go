package adyen

import (
	"context"
	"net/http"
	"net/url"
	"unicode/utf8"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Metadata keys the adapter writes on every payment it creates. Caller
// metadata may not use the "payonce_" prefix.
const (
	// MetaOperation holds the operation id (also sent as the reference).
	MetaOperation = "payonce_op"
	// MetaKey holds the idempotency key of the attempt.
	MetaKey = "payonce_key"
	// MetaKind holds the operation kind.
	MetaKind = "payonce_kind"
	// MetaReferences holds the operation's references as a JSON array, cut
	// to MaxMetadataValue characters.
	MetaReferences = "payonce_refs"
)

// Adyen's metadata limits on POST /payments: "Maximum 20 key-value pairs
// per request. When exceeding, the "177" error occurs: "Metadata size
// exceeds limit". Maximum 20 characters per key. Maximum 80 characters per
// value." (CheckoutService-v71.json, PaymentRequest.metadata). The adapter
// adds adapterkit.MetadataKeys (4) keys of its own.
const (
	MaxMetadataKeys  = 20
	MaxMetadataKey   = 20
	MaxMetadataValue = 80
)

// metadataLimits are Adyen's metadata limits, counted in characters, that
// a payment's metadata (the caller's plus payonce's) is held to.
var metadataLimits = adapterkit.MetadataLimits{Provider: "Adyen",
	Keys: MaxMetadataKeys, Key: MaxMetadataKey, Value: MaxMetadataValue, Length: utf8.RuneCountInString}

// maxReference is the longest reference Adyen takes on payments and
// modifications ("Maximum length: 80 characters", PaymentRequest.reference,
// PaymentCaptureRequest.reference, ...). Operation ids are 36.
const maxReference = 80

// amount is Adyen's Amount: value in minor units, ISO currency.
type amount struct {
	Currency string `json:"currency"`
	Value    int64  `json:"value"`
}

// paymentMethod is a stored payment method (a token from an earlier
// payment): {"type":"scheme","storedPaymentMethodId":"..."}.
type paymentMethod struct {
	Type                  string `json:"type"`
	StoredPaymentMethodID string `json:"storedPaymentMethodId"`
}

type paymentBody struct {
	Amount                   amount            `json:"amount"`
	Reference                string            `json:"reference"`
	MerchantAccount          string            `json:"merchantAccount"`
	PaymentMethod            paymentMethod     `json:"paymentMethod"`
	ShopperReference         string            `json:"shopperReference"`
	ShopperInteraction       string            `json:"shopperInteraction"`
	RecurringProcessingModel string            `json:"recurringProcessingModel"`
	ReturnURL                string            `json:"returnUrl"`
	AdditionalData           map[string]string `json:"additionalData,omitempty"`
	Metadata                 map[string]string `json:"metadata"`
}

type modificationBody struct {
	MerchantAccount string  `json:"merchantAccount"`
	Amount          *amount `json:"amount,omitempty"`
	Reference       string  `json:"reference"`
}

// NewRequest builds the JSON POST of one attempt:
//
//   - charge:  POST /payments with amount {value, currency} in minor units,
//     reference = the operation id, merchantAccount, paymentMethod
//     {type: "scheme", storedPaymentMethodId: Request.PaymentMethod},
//     shopperReference = Request.Customer, shopperInteraction "ContAuth"
//     and recurringProcessingModel "UnscheduledCardOnFile" (a payment with
//     stored details and no shopper present: payonce never redirects or
//     challenges a shopper), additionalData.manualCapture "true" for
//     CaptureManual ("Set to true to require manual capture for the
//     transaction", AdditionalDataCommon.manualCapture), and metadata
//     payonce_op/_key/_kind/_refs next to the caller's.
//   - capture: POST /payments/{PaymentRef}/captures {merchantAccount,
//     amount, reference}
//   - cancel:  POST /payments/{PaymentRef}/cancels {merchantAccount,
//     reference}
//   - refund:  POST /payments/{PaymentRef}/refunds {merchantAccount,
//     amount, reference}
//
// (CheckoutService-v71.json: PaymentRequest, PaymentCaptureRequest,
// PaymentCancelRequest, PaymentRefundRequest; amount is required on
// captures and refunds, so a capture or refund needs Amount and Currency.)
// Modifications carry no metadata in v71: their reference is the operation
// id. Request.Description is not sent: /payments has no free-text field
// that is not shown to the shopper or the scheme.
//
// Every request carries IdempotencyKey(Config.MerchantAccount, r.Key) in
// the Idempotency-Key header (Adyen keeps keys per company account, so the
// key is scoped to the merchant account: IdempotencyKey) and the API key in
// X-API-Key; every payment carries Config.ReturnURL as returnUrl. The body
// is the same bytes on every attempt. An error (nothing to send) is a
// *payonce.ValidationError naming the field.
//
// The reference stays the operation id, the same on every merchant
// account: webhooks name the operation by it (merchantReference), and an
// item is read only with its merchantAccountCode, which the webhook parser checks
// against Config.MerchantAccount, so the pair (merchant account,
// reference) is what names an operation at Adyen. Adyen neither
// deduplicates nor replays anything by reference (it only "strongly
// recommend[s] that you use a unique value for each transaction",
// PaymentRequest.reference in CheckoutService-v71.json): two merchant
// accounts sharing one reference move no money twice; only the shared key
// did. payonce's own key is in the payment's metadata (payonce_key),
// unchanged.
func (p *Provider) NewRequest(ctx context.Context, r payonce.SendRequest) (*http.Request, error) {
	if err := adapterkit.CheckKey("adyen ", r.Key, MaxKeyLength, "is empty; every Adyen POST carries the operation's Idempotency-Key",
		"is %d characters; Adyen accepts at most %d"); err != nil {
		return nil, err
	}
	if r.OperationID == "" {
		return nil, invalidSend("OperationID", "is empty; it is sent as the reference so that webhooks name the operation")
	}
	if len(r.OperationID) > maxReference {
		return nil, invalidSend("OperationID", "is %d bytes; Adyen references are at most %d characters", len(r.OperationID), maxReference)
	}
	req := r.Request
	var (
		path string
		body any
	)
	switch req.Kind {
	case payonce.KindCharge:
		md, err := adapterkit.WithMetadata("adyen ", r, metadataLimits)
		if err != nil {
			return nil, err
		}
		switch {
		case req.Amount <= 0:
			return nil, invalidSend("Request.Amount", "is %d; a charge needs a positive amount in minor units", req.Amount)
		case req.PaymentMethod == "":
			return nil, invalidSend("Request.PaymentMethod", "is empty; an Adyen charge needs the storedPaymentMethodId of the shopper's stored card")
		case len(req.Customer) < 3:
			return nil, invalidSend("Request.Customer", "is %q; an Adyen payment with a stored payment method needs the shopperReference it was stored under (at least 3 characters)", req.Customer)
		}
		pb := paymentBody{Amount: amount{Currency: req.Currency, Value: req.Amount}, Reference: r.OperationID,
			MerchantAccount: p.merchant, PaymentMethod: paymentMethod{Type: "scheme", StoredPaymentMethodID: req.PaymentMethod},
			ShopperReference: req.Customer, ShopperInteraction: "ContAuth", RecurringProcessingModel: "UnscheduledCardOnFile",
			ReturnURL: p.returnURL, Metadata: md}
		if req.CaptureManual {
			pb.AdditionalData = map[string]string{"manualCapture": "true"}
		}
		path, body = "/payments", pb
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a %s needs the pspReference of the Adyen payment", req.Kind)
		}
		mb := modificationBody{MerchantAccount: p.merchant, Reference: r.OperationID}
		suffix := "/cancels"
		if req.Kind != payonce.KindCancel {
			if req.Amount <= 0 || req.Currency == "" {
				return nil, invalidSend("Request.Amount", "is %d; Adyen needs the amount and currency of a %s (it has no \"the whole payment\" form)", req.Amount, req.Kind)
			}
			mb.Amount = &amount{Currency: req.Currency, Value: req.Amount}
			suffix = "/captures"
			if req.Kind == payonce.KindRefund {
				suffix = "/refunds"
			}
		}
		path, body = "/payments/"+url.PathEscape(req.PaymentRef)+suffix, mb
	default:
		return nil, invalidSend("Request.Kind", "is %q; the Adyen adapter sends charge, capture, cancel and refund", string(req.Kind))
	}
	return adapterkit.PostJSON(ctx, "adyen", req.Kind, p.baseURL+path, body, p.setHeaders, "Idempotency-Key", IdempotencyKey(p.merchant, r.Key))
}

func (p *Provider) setHeaders(h http.Header) {
	h.Set("X-API-Key", string(p.apiKey))
	h.Set("Accept", "application/json")
}

func invalidSend(field, format string, args ...any) error {
	return adapterkit.Invalid("adyen ", field, format, args...)
}

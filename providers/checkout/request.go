package checkout

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Metadata keys the adapter writes on every payment and action it creates.
// Caller metadata may not use the "payonce_" prefix.
const (
	// MetaOperation holds the operation id (also sent as the reference).
	MetaOperation = "payonce_op"
	// MetaKey holds the idempotency key of the attempt.
	MetaKey = "payonce_key"
	// MetaKind holds the operation kind.
	MetaKind = "payonce_kind"
	// MetaReferences holds the operation's references as a JSON array, cut
	// to maxReferencesValue bytes.
	MetaReferences = "payonce_refs"
)

// maxReferencesValue bounds the payonce_refs value; Checkout.com documents
// no metadata limits, so the adapter keeps its own value short.
const maxReferencesValue = 255

type source struct {
	Type  string `json:"type"`
	ID    string `json:"id,omitempty"`
	Token string `json:"token,omitempty"`
}

type customer struct {
	ID string `json:"id"`
}

type paymentBody struct {
	Source              source            `json:"source"`
	Amount              int64             `json:"amount"`
	Currency            string            `json:"currency"`
	Reference           string            `json:"reference"`
	Capture             bool              `json:"capture"`
	Description         string            `json:"description,omitempty"`
	Customer            *customer         `json:"customer,omitempty"`
	ProcessingChannelID string            `json:"processing_channel_id,omitempty"`
	Metadata            map[string]string `json:"metadata"`
}

type actionBody struct {
	Amount    int64             `json:"amount,omitempty"`
	Reference string            `json:"reference"`
	Metadata  map[string]string `json:"metadata"`
}

// NewRequest builds the JSON POST of one attempt:
//
//   - charge:  POST /payments with source {type: "id", id: src_...} or
//     {type: "token", token: tok_...}, integer amount in minor units,
//     currency, capture = !CaptureManual, reference = the operation id
//   - capture: POST /payments/{PaymentRef}/captures (amount when set)
//   - cancel:  POST /payments/{PaymentRef}/voids
//   - refund:  POST /payments/{PaymentRef}/refunds (amount when set; all
//     that remains otherwise)
//
// Every request carries r.Key in the Cko-Idempotency-Key header, the secret
// key as a Bearer token, reference = the operation id (lookups find the
// payment or action by it) and metadata payonce_op/_key/_kind/_refs next to
// the caller's. The body is the same bytes on every attempt. An error
// (nothing to send) is a *payonce.ValidationError naming the field.
func (p *Provider) NewRequest(ctx context.Context, r payonce.SendRequest) (*http.Request, error) {
	if err := adapterkit.CheckKey("checkout ", r.Key, MaxKeyLength, "is empty; every Checkout.com POST carries the operation's Cko-Idempotency-Key",
		"is %d bytes; the adapter sends at most %d (a UUID)"); err != nil {
		return nil, err
	}
	if r.OperationID == "" {
		return nil, invalidSend("OperationID", "is empty; it is sent as the reference so that a lookup can find the payment or action")
	}
	req := r.Request
	// Checkout.com documents no metadata limits: only the reserved prefix
	// is checked.
	md, err := adapterkit.WithMetadata("checkout ", r, adapterkit.MetadataLimits{Refs: maxReferencesValue, Length: adapterkit.Bytes})
	if err != nil {
		return nil, err
	}
	var (
		path string
		body any
	)
	switch req.Kind {
	case payonce.KindCharge:
		src, err := sourceOf(req.PaymentMethod)
		if err != nil {
			return nil, err
		}
		if req.Amount <= 0 {
			return nil, invalidSend("Request.Amount", "is %d; a charge needs a positive amount in minor units", req.Amount)
		}
		pb := paymentBody{Source: src, Amount: req.Amount, Currency: req.Currency, Reference: r.OperationID,
			Capture: !req.CaptureManual, Description: req.Description, ProcessingChannelID: p.channel, Metadata: md}
		if req.Customer != "" {
			pb.Customer = &customer{ID: req.Customer}
		}
		path, body = "/payments", pb
	case payonce.KindCapture, payonce.KindCancel, payonce.KindRefund:
		if req.PaymentRef == "" {
			return nil, invalidSend("Request.PaymentRef", "is empty; a %s needs the Checkout.com payment id (pay_...)", req.Kind)
		}
		ab := actionBody{Reference: r.OperationID, Metadata: md}
		switch req.Kind {
		case payonce.KindCapture:
			path, ab.Amount = "/captures", req.Amount
		case payonce.KindCancel:
			path = "/voids"
		default:
			path, ab.Amount = "/refunds", req.Amount
		}
		path = "/payments/" + url.PathEscape(req.PaymentRef) + path
		body = ab
	default:
		return nil, invalidSend("Request.Kind", "is %q; the Checkout.com adapter sends charge, capture, cancel and refund", string(req.Kind))
	}

	return adapterkit.PostJSON(ctx, "checkout", req.Kind, p.baseURL+path, body, p.setHeaders, "Cko-Idempotency-Key", r.Key)
}

func (p *Provider) setHeaders(h http.Header) {
	h.Set("Authorization", "Bearer "+string(p.secretKey))
	h.Set("Accept", "application/json")
}

// sourceOf turns Request.PaymentMethod into the payment source: a stored
// source id (src_...) or a one-time token (tok_...).
func sourceOf(pm string) (source, error) {
	switch {
	case strings.HasPrefix(pm, "src_"):
		return source{Type: "id", ID: pm}, nil
	case strings.HasPrefix(pm, "tok_"):
		return source{Type: "token", Token: pm}, nil
	case pm == "":
		return source{}, invalidSend("Request.PaymentMethod", "is empty; a Checkout.com charge needs a source id (src_...) or a token (tok_...)")
	}
	return source{}, invalidSend("Request.PaymentMethod", "is %q; use a Checkout.com source id (src_...) or token (tok_...)", pm)
}

func invalidSend(field, format string, args ...any) error {
	return adapterkit.Invalid("checkout ", field, format, args...)
}

package paypal

import (
	"encoding/json"
	"errors"
	"strings"
)

// The JSON shapes of PayPal's Orders v2 and Payments v2 objects, as far as
// the adapter reads or writes them. Field names are PayPal's
// (paypal/PayPal-TypeScript-Server-SDK, src/models: order.ts,
// purchaseUnit.ts, paymentCollection.ts, authorizationWithAdditionalData.ts,
// capturedPayment.ts, refund.ts, money.ts, customError.ts, errorDetails.ts).

// money is PayPal's Money: a currency code and a decimal string in the
// currency's PayPal exponent (money.go).
type money struct {
	CurrencyCode string `json:"currency_code"`
	Value        string `json:"value"`
}

// ---- requests ----

// orderRequest is the body of POST /v2/checkout/orders (OrderRequest).
type orderRequest struct {
	Intent        string                `json:"intent"`
	PurchaseUnits []purchaseUnitRequest `json:"purchase_units"`
	PaymentSource paymentSourceRequest  `json:"payment_source"`
}

// purchaseUnitRequest is PurchaseUnitRequest: custom_id holds the operation
// id and invoice_id the key (see NewRequest).
type purchaseUnitRequest struct {
	Amount      money  `json:"amount"`
	CustomID    string `json:"custom_id"`
	InvoiceID   string `json:"invoice_id"`
	Description string `json:"description,omitempty"`
}

// paymentSourceRequest names one saved payment method (PaymentSource:
// paypal.vault_id or card.vault_id).
type paymentSourceRequest struct {
	PayPal *vaultSource `json:"paypal,omitempty"`
	Card   *vaultSource `json:"card,omitempty"`
}

type vaultSource struct {
	VaultID          string            `json:"vault_id"`
	StoredCredential *storedCredential `json:"stored_credential,omitempty"`
}

// storedCredential is CardStoredCredential: who started a payment with a
// saved card.
type storedCredential struct {
	PaymentInitiator string `json:"payment_initiator"`
	PaymentType      string `json:"payment_type"`
	Usage            string `json:"usage,omitempty"`
}

// captureRequest is the body of POST /v2/payments/authorizations/{id}/capture
// (CaptureRequest: amount, invoice_id, final_capture; it has no custom_id).
type captureRequest struct {
	Amount       *money `json:"amount,omitempty"`
	InvoiceID    string `json:"invoice_id"`
	FinalCapture bool   `json:"final_capture"`
}

// refundRequest is the body of POST /v2/payments/captures/{id}/refund
// (RefundRequest: amount, custom_id, invoice_id).
type refundRequest struct {
	Amount    *money `json:"amount,omitempty"`
	CustomID  string `json:"custom_id"`
	InvoiceID string `json:"invoice_id"`
}

// emptyBody is the body of the POSTs that take none ({} in PayPal's own
// examples: order capture and authorize, authorization void).
type emptyBody struct{}

// ---- answers ----

// order is PayPal's Order (and OrderAuthorizeResponse).
type order struct {
	ID            string         `json:"id"`
	Status        string         `json:"status"`
	Intent        string         `json:"intent"`
	PurchaseUnits []purchaseUnit `json:"purchase_units"`
}

// purchaseUnit is PurchaseUnit, with the payments made on it.
type purchaseUnit struct {
	Amount    *money              `json:"amount"`
	CustomID  string              `json:"custom_id"`
	InvoiceID string              `json:"invoice_id"`
	Payments  *paymentsCollection `json:"payments"`
}

// paymentsCollection is PaymentCollection.
type paymentsCollection struct {
	Authorizations []payment `json:"authorizations"`
	Captures       []payment `json:"captures"`
	Refunds        []payment `json:"refunds"`
}

// payment is an authorization, a capture or a refund: the three share the
// fields the adapter reads (AuthorizationWithAdditionalData,
// CapturedPayment, Refund).
type payment struct {
	ID                string             `json:"id"`
	Status            string             `json:"status"`
	StatusDetails     *statusDetails     `json:"status_details"`
	Amount            *money             `json:"amount"`
	CustomID          string             `json:"custom_id"`
	InvoiceID         string             `json:"invoice_id"`
	ProcessorResponse *processorResponse `json:"processor_response"`
	SupplementaryData *supplementaryData `json:"supplementary_data"`
}

type statusDetails struct {
	Reason string `json:"reason"`
}

// processorResponse is ProcessorResponse: response_code is the processor's
// code of a card decline.
type processorResponse struct {
	ResponseCode string `json:"response_code"`
}

// supplementaryData is PaymentSupplementaryData: the ids of the order and
// the payments a payment belongs to.
type supplementaryData struct {
	RelatedIDs struct {
		OrderID         string `json:"order_id"`
		AuthorizationID string `json:"authorization_id"`
		CaptureID       string `json:"capture_id"`
	} `json:"related_ids"`
}

// orderID is the order a payment belongs to, "" when it does not say.
func (pm payment) orderID() string {
	if pm.SupplementaryData == nil {
		return ""
	}
	return pm.SupplementaryData.RelatedIDs.OrderID
}

// apiError is PayPal's error body (CustomError: name, message, debug_id,
// details[{issue, description}]), and the OAuth2 error of the token
// endpoint (error, error_description).
type apiError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	DebugID string `json:"debug_id"`
	Details []struct {
		Issue       string `json:"issue"`
		Description string `json:"description"`
	} `json:"details"`
	OAuthError       string `json:"error"`
	OAuthDescription string `json:"error_description"`
}

// issue is the fine-grained code of the error (details[0].issue), else its
// name, else the OAuth2 error.
func (e *apiError) issue() string {
	for _, d := range e.Details {
		if d.Issue != "" {
			return d.Issue
		}
	}
	if e.Name != "" {
		return e.Name
	}
	return e.OAuthError
}

// hasIssue reports whether the error names code as its name or as one of
// its details' issues.
func (e *apiError) hasIssue(codes ...string) bool {
	if e == nil {
		return false
	}
	for _, c := range codes {
		if e.Name == c {
			return true
		}
		for _, d := range e.Details {
			if d.Issue == c {
				return true
			}
		}
	}
	return false
}

// text is the error's message and its details' descriptions.
func (e *apiError) text() string {
	parts := []string{}
	if e.Message != "" {
		parts = append(parts, e.Message)
	}
	if e.OAuthDescription != "" {
		parts = append(parts, e.OAuthDescription)
	}
	for _, d := range e.Details {
		if d.Description != "" {
			parts = append(parts, d.Description)
		}
	}
	return strings.Join(parts, "; ")
}

// decodeError reads an error body; nil when it holds no PayPal error (an
// empty body, a proxy's HTML page).
func decodeError(body []byte) *apiError {
	if len(body) == 0 || len(body) > maxBody {
		return nil
	}
	var e apiError
	if json.Unmarshal(body, &e) != nil || (e.Name == "" && e.OAuthError == "" && len(e.Details) == 0) {
		return nil
	}
	return &e
}

const maxBody = 1 << 20

// decodeOrder reads an Order answer: it must have an id and a status.
func decodeOrder(body []byte) (order, error) {
	var o order
	if err := decodeObject(body, &o); err != nil {
		return order{}, err
	}
	if o.ID == "" {
		return order{}, errors.New("order has no id")
	}
	if o.Status == "" {
		return order{}, errors.New("order " + o.ID + " has no status")
	}
	return o, nil
}

// decodePayment reads an authorization, capture or refund answer: it must
// have an id and a status.
func decodePayment(body []byte, what string) (payment, error) {
	var pm payment
	if err := decodeObject(body, &pm); err != nil {
		return payment{}, err
	}
	if pm.ID == "" {
		return payment{}, errors.New(what + " has no id")
	}
	if pm.Status == "" {
		return payment{}, errors.New(what + " " + pm.ID + " has no status")
	}
	return pm, nil
}

func decodeObject(body []byte, v any) error {
	if len(body) == 0 {
		return errors.New("empty body")
	}
	if len(body) > maxBody {
		return errors.New("body larger than 1 MiB")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errors.New("body is not the expected JSON object")
	}
	return nil
}

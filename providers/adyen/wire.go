package adyen

import (
	"errors"
	"fmt"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The JSON shapes below hold only the fields the adapter reads
// (CheckoutService-v71.json: PaymentResponse, PaymentCaptureResponse,
// PaymentCancelResponse, PaymentRefundResponse, ServiceError).

// Result codes of PaymentResponse.resultCode ("Authorised ... This is a
// final state", "Refused ... final", "Cancelled ... final", "Error ...
// There was an error when the payment was being processed. ... This is a
// final state", "Pending ... not possible to obtain the final status",
// "Received ... will be processed. This is the initial state for all
// payments").
const (
	resultAuthorised          = "Authorised"
	resultPartiallyAuthorised = "PartiallyAuthorised"
	resultRefused             = "Refused"
	resultCancelled           = "Cancelled"
	resultError               = "Error"
	resultPending             = "Pending"
	resultReceived            = "Received"
	resultRedirectShopper     = "RedirectShopper"
	resultIdentifyShopper     = "IdentifyShopper"
	resultChallengeShopper    = "ChallengeShopper"
	resultPresentToShopper    = "PresentToShopper"
)

// statusReceived is the status of every modification answer: "This will
// always have the value received" (PaymentCaptureResponse.status, ...).
const statusReceived = "received"

// Codes the adapter puts in Outcomes and webhook targets.
const (
	codeRefused         = "refused"
	codeCancelled       = "cancelled"
	codeError           = "error"
	codeShopperAction   = "shopper_action_required"
	codeRateLimited     = "too_many_requests"
	codeCaptureFailed   = "capture_failed"
	codeRefundFailed    = "refund_failed"
	codeRefundReversed  = "refunded_reversed"
	codeChargeback      = "chargeback"
	codeModificationNot = "modification_failed"
)

// errorCodeInProgress is Adyen's errorCode 704, "request already processed
// or in progress", answered with 409 and with 422 to a key whose first
// request has not finished.
const errorCodeInProgress = "704"

// paymentResponse is the answer to POST /payments.
type paymentResponse struct {
	PspReference      string  `json:"pspReference"`
	ResultCode        string  `json:"resultCode"`
	MerchantReference string  `json:"merchantReference"`
	Amount            *amount `json:"amount"`
	RefusalReason     string  `json:"refusalReason"`
	RefusalReasonCode string  `json:"refusalReasonCode"`
	ErrorCode         string  `json:"errorCode"`
}

// modificationResponse is the 201 answer to a capture, cancel or refund.
type modificationResponse struct {
	PspReference        string  `json:"pspReference"`
	PaymentPspReference string  `json:"paymentPspReference"`
	Status              string  `json:"status"`
	Reference           string  `json:"reference"`
	MerchantAccount     string  `json:"merchantAccount"`
	Amount              *amount `json:"amount"`
	ErrorCode           string  `json:"errorCode"`
}

// apiError is Adyen's ServiceError: {status, errorCode, message,
// errorType, pspReference}.
type apiError struct {
	Status       int    `json:"status"`
	ErrorCode    string `json:"errorCode"`
	Message      string `json:"message"`
	ErrorType    string `json:"errorType"`
	PspReference string `json:"pspReference"`
}

// namesIdempotencyKey reports an error about the idempotency key other than
// 704. Adyen documents no answer to a key reused with another request;
// Classify reads one that names the key as key_mismatch, not as a refusal.
func (e *apiError) namesIdempotencyKey() bool {
	return e.ErrorCode != errorCodeInProgress && strings.Contains(strings.ToLower(e.Message+" "+e.ErrorType), "idempoten")
}

func decodePayment(body []byte) (paymentResponse, error) {
	var p paymentResponse
	if err := adapterkit.DecodeJSON(body, &p); err != nil {
		return p, err
	}
	switch {
	case p.ErrorCode != "":
		return p, fmt.Errorf("body is an error (errorCode %q), not a payment", p.ErrorCode)
	case p.ResultCode == "":
		return p, errors.New("payment answer has no resultCode")
	}
	return p, nil
}

func decodeModification(body []byte) (modificationResponse, error) {
	var m modificationResponse
	if err := adapterkit.DecodeJSON(body, &m); err != nil {
		return m, err
	}
	switch {
	case m.ErrorCode != "":
		return m, fmt.Errorf("body is an error (errorCode %q), not a modification", m.ErrorCode)
	case m.PspReference == "":
		return m, adapterkit.ErrNoID
	case m.Status != statusReceived:
		return m, fmt.Errorf("modification status is %q, not %q", m.Status, statusReceived)
	}
	return m, nil
}

// readError reads Adyen's ServiceError into o: errorCode is the code,
// errorType and message the message, pspReference the request id (Adyen
// sends no request id header; the pspReference of an error names the
// request to Adyen's support).
func (p *Provider) readError(o *payonce.Outcome, body []byte) *apiError {
	e := decodeError(body)
	if e == nil {
		return nil
	}
	o.Code = p.scrub(e.ErrorCode)
	o.Message = p.scrub(strings.TrimPrefix(e.ErrorType+": "+e.Message, ": "))
	o.RequestID = p.scrub(e.PspReference)
	return e
}

// decodeError parses an error answer; nil when the body holds none (an
// HTML page from a proxy, an empty body).
func decodeError(body []byte) *apiError {
	return adapterkit.DecodeError(body, func(e *apiError) bool { return e.ErrorCode != "" || e.ErrorType != "" })
}

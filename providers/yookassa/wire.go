package yookassa

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// The JSON shapes below hold only the fields the adapter reads; YooKassa
// sends many more, which encoding/json ignores.

// Payment statuses (https://yookassa.ru/developers/payment-acceptance/getting-started/payment-process).
const (
	statusPending           = "pending"
	statusWaitingForCapture = "waiting_for_capture"
	statusSucceeded         = "succeeded"
	statusCanceled          = "canceled"
)

// Cancellation reasons that follow a successful authorization: the payment
// was held (waiting_for_capture), then released by the merchant or by
// expiry. YooKassa documents canceled_by_merchant as "payment canceled via
// API during a two-stage payment" and expired_on_capture as the end of a
// two-stage payment's capture period
// (https://yookassa.ru/en/developers/payment-acceptance/after-the-payment/declined-payments;
// CancellationDetailsReasonCode in yoomoney/yookassa-sdk-python), and says
// that only from waiting_for_capture does a payment become canceled because
// "you canceled it"; from pending only "if something went wrong"
// (payment statuses, https://yookassa.ru/developers/payment-acceptance/getting-started/payment-process).
// Every other reason (insufficient_funds, card_expired, 3d_secure_failed,
// expired_on_confirmation, ...) is read as a decline before authorization.
// The paid flag and authorization_details are not used to tell the two
// apart: YooKassa does not document what they hold once a payment is
// canceled.
const (
	reasonCanceledByMerchant = "canceled_by_merchant"
	reasonExpiredOnCapture   = "expired_on_capture"
)

// Error codes and texts the classification depends on.
const (
	codeInvalidRequest   = "invalid_request"
	codeNotFound         = "not_found"
	codeTooManyRequests  = "too_many_requests"
	typeError            = "error"
	typeList             = "list"
	typeProcessing       = "processing"
	paramIdempotenceKey  = "Idempotence-Key"
	descKeyDuplicated    = "Idempotence key duplicated"
	codeCanceled         = "canceled"
	codeRefundCanceled   = "refund_canceled"
	codeStillPending     = "pending"
	codeUnexpectedStatus = "unexpected_status"
)

type amount struct {
	Value    string `json:"value"`
	Currency string `json:"currency"`
}

type cancellationDetails struct {
	Party  string `json:"party"`
	Reason string `json:"reason"`
}

type payment struct {
	// Type is empty on a payment; errors, lists and 202 answers carry one.
	Type                string               `json:"type"`
	ID                  string               `json:"id"`
	Status              string               `json:"status"`
	Paid                bool                 `json:"paid"`
	Amount              amount               `json:"amount"`
	Metadata            map[string]string    `json:"metadata"`
	CancellationDetails *cancellationDetails `json:"cancellation_details"`
	// CreatedAt is read by the audit only (ISO 8601, UTC).
	CreatedAt string `json:"created_at"`
}

type refund struct {
	Type                string               `json:"type"`
	ID                  string               `json:"id"`
	PaymentID           string               `json:"payment_id"`
	Status              string               `json:"status"`
	Amount              amount               `json:"amount"`
	Description         string               `json:"description"`
	Metadata            map[string]string    `json:"metadata"`
	CancellationDetails *cancellationDetails `json:"cancellation_details"`
	// CreatedAt is read by the audit only (ISO 8601, UTC).
	CreatedAt string `json:"created_at"`
}

type listOf[T any] struct {
	Type       string `json:"type"`
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// apiError is YooKassa's error body, and also reads the 202 "processing"
// body (type, description, retry_after).
type apiError struct {
	Type        string          `json:"type"`
	ID          string          `json:"id"`
	Code        string          `json:"code"`
	Description string          `json:"description"`
	Parameter   string          `json:"parameter"`
	RetryAfter  json.RawMessage `json:"retry_after"`
}

func decodePayment(body []byte) (payment, error) {
	var p payment
	if err := adapterkit.DecodeJSON(body, &p); err != nil {
		return p, err
	}
	switch {
	case p.Type != "":
		return p, fmt.Errorf("body is a %q, not a payment", p.Type)
	case p.ID == "":
		return p, adapterkit.ErrNoID
	case p.Status == "":
		return p, errors.New("payment has no status")
	}
	return p, nil
}

func decodeRefund(body []byte) (refund, error) {
	var r refund
	if err := adapterkit.DecodeJSON(body, &r); err != nil {
		return r, err
	}
	switch {
	case r.Type != "":
		return r, fmt.Errorf("body is a %q, not a refund", r.Type)
	case r.ID == "":
		return r, adapterkit.ErrNoID
	case r.PaymentID == "":
		return r, errors.New("object has no payment_id: not a refund")
	case r.Status == "":
		return r, errors.New("refund has no status")
	}
	return r, nil
}

// readError reads YooKassa's error JSON into o: its id is the request id
// (YooKassa sends no request id header), the parameter it names ends the
// message.
func (p *Provider) readError(o *payonce.Outcome, body []byte) *apiError {
	e := decodeError(body)
	if e == nil {
		return nil
	}
	o.RequestID, o.Code, o.Message = e.ID, e.Code, p.scrub(e.Description)
	if e.Parameter != "" && o.Message != "" {
		o.Message += " (parameter " + e.Parameter + ")"
	}
	return e
}

// decodeError parses an error (or 202 processing) body; nil when the body
// holds none (an HTML page from a proxy, an empty body, ...).
func decodeError(body []byte) *apiError {
	return adapterkit.DecodeError(body, func(e *apiError) bool { return e.Type != "" })
}

// keyDuplicated recognises YooKassa's answer to a key reused with another
// body: invalid_request, "Idempotence key duplicated", parameter
// Idempotence-Key. Other errors about the header (missing, too long) are
// ordinary refusals.
func keyDuplicated(e *apiError) bool {
	if e.Code != codeInvalidRequest {
		return false
	}
	d := strings.ToLower(e.Description)
	return strings.Contains(d, strings.ToLower(descKeyDuplicated)) ||
		(strings.EqualFold(e.Parameter, paramIdempotenceKey) && strings.Contains(d, "duplicat"))
}

// retryAfter reads retry_after, in milliseconds, bounded by
// adapterkit.MaxRetryAfter;
// 0 when absent or unreadable.
func (e *apiError) retryAfter() time.Duration {
	if e == nil || len(e.RetryAfter) == 0 {
		return 0
	}
	ms, err := strconv.ParseFloat(string(e.RetryAfter), 64)
	if err != nil || ms <= 0 {
		return 0
	}
	if ms >= float64(adapterkit.MaxRetryAfter/time.Millisecond) {
		return adapterkit.MaxRetryAfter
	}
	return time.Duration(ms * float64(time.Millisecond))
}

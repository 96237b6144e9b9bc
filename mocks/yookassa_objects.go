package mocks

// yooKassaAmount is YooKassa's money object: a decimal string with the
// currency's minor-unit digits ("1200.00" for RUB) and an upper-case ISO
// 4217 code.
type yooKassaAmount struct {
	Value    string `json:"value"`
	Currency string `json:"currency"`
}

// yooKassaCancellationDetails says who canceled a payment or refund and why
// (party: yoo_money, payment_network or merchant; reason: insufficient_funds,
// general_decline, canceled_by_merchant, expired_on_capture, ...).
type yooKassaCancellationDetails struct {
	Party  string `json:"party"`
	Reason string `json:"reason"`
}

// yooKassaPaymentMethod is the payment method object of a payment.
type yooKassaPaymentMethod struct {
	Type  string `json:"type"`
	ID    string `json:"id"`
	Saved bool   `json:"saved"`
	Title string `json:"title,omitempty"`
}

// yooKassaConfirmation is the confirmation a pending payment waits for.
type yooKassaConfirmation struct {
	Type            string `json:"type"`
	ConfirmationURL string `json:"confirmation_url,omitempty"`
}

// yooKassaPayment is a payment as YooKassa's API v3 renders it (the fields
// payonce reads and a few more). Status is pending, waiting_for_capture,
// succeeded or canceled. It is exported so tests can decode the fake's
// answers and build httpmock fixtures.
type yooKassaPayment struct {
	ID                  string                       `json:"id"`
	Status              string                       `json:"status"`
	Paid                bool                         `json:"paid"`
	Amount              yooKassaAmount               `json:"amount"`
	Description         string                       `json:"description,omitempty"`
	PaymentMethod       *yooKassaPaymentMethod       `json:"payment_method,omitempty"`
	Confirmation        *yooKassaConfirmation        `json:"confirmation,omitempty"`
	CapturedAt          string                       `json:"captured_at,omitempty"`
	CreatedAt           string                       `json:"created_at"`
	ExpiresAt           string                       `json:"expires_at,omitempty"`
	Test                bool                         `json:"test"`
	RefundedAmount      *yooKassaAmount              `json:"refunded_amount,omitempty"`
	Refundable          bool                         `json:"refundable"`
	Metadata            map[string]string            `json:"metadata,omitempty"`
	CancellationDetails *yooKassaCancellationDetails `json:"cancellation_details,omitempty"`
}

// yooKassaRefund is a refund as YooKassa renders it. Status is pending,
// succeeded or canceled. YooKassa refunds carry a description but no
// metadata.
type yooKassaRefund struct {
	ID                  string                       `json:"id"`
	PaymentID           string                       `json:"payment_id"`
	Status              string                       `json:"status"`
	CreatedAt           string                       `json:"created_at"`
	Amount              yooKassaAmount               `json:"amount"`
	Description         string                       `json:"description,omitempty"`
	CancellationDetails *yooKassaCancellationDetails `json:"cancellation_details,omitempty"`
}

// yooKassaList is YooKassa's list envelope: {"type": "list", "items": [...],
// "next_cursor": "..."}; NextCursor is absent on the last page.
type yooKassaList[T any] struct {
	Type       string `json:"type"`
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// yooKassaError is YooKassa's error body: {"type": "error", "id": ...,
// "code": "invalid_request", "description": ..., "parameter": ...}. A 429
// may carry RetryAfter (milliseconds).
type yooKassaError struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Code        string `json:"code"`
	Description string `json:"description,omitempty"`
	Parameter   string `json:"parameter,omitempty"`
	RetryAfter  int64  `json:"retry_after,omitempty"`
}

// yooKassaProcessing is the body of YooKassa's 202 answer: the request with
// this Idempotence-Key is still being processed; repeat it after RetryAfter
// milliseconds.
type yooKassaProcessing struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	RetryAfter  int64  `json:"retry_after"`
}

package mocks

// checkoutLink is one entry of a Checkout.com "_links" object.
type checkoutLink struct {
	Href string `json:"href"`
}

// checkoutSource is the source of a payment as Checkout.com renders it.
type checkoutSource struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
}

// checkoutBalances are a payment's running totals, in minor units.
type checkoutBalances struct {
	TotalAuthorized    int64 `json:"total_authorized"`
	TotalVoided        int64 `json:"total_voided"`
	AvailableToVoid    int64 `json:"available_to_void"`
	TotalCaptured      int64 `json:"total_captured"`
	AvailableToCapture int64 `json:"available_to_capture"`
	TotalRefunded      int64 `json:"total_refunded"`
	AvailableToRefund  int64 `json:"available_to_refund"`
}

// checkoutPayment is a payment as Checkout.com's API renders it: the answer
// to POST /payments (201 processed, 202 pending) and GET /payments/{id}.
// Status is Pending, Authorized, Captured, Partially Captured, Declined,
// Voided, Refunded, Partially Refunded, ... Amounts are integer minor
// units. It is exported so tests can decode the fake's answers and build
// httpmock fixtures.
type checkoutPayment struct {
	ID              string                  `json:"id"`
	ActionID        string                  `json:"action_id,omitempty"`
	RequestedOn     string                  `json:"requested_on,omitempty"`
	ProcessedOn     string                  `json:"processed_on,omitempty"`
	Amount          int64                   `json:"amount"`
	Currency        string                  `json:"currency"`
	Approved        bool                    `json:"approved"`
	Status          string                  `json:"status"`
	AuthCode        string                  `json:"auth_code,omitempty"`
	ResponseCode    string                  `json:"response_code,omitempty"`
	ResponseSummary string                  `json:"response_summary,omitempty"`
	Reference       string                  `json:"reference,omitempty"`
	Description     string                  `json:"description,omitempty"`
	Source          *checkoutSource         `json:"source,omitempty"`
	Balances        *checkoutBalances       `json:"balances,omitempty"`
	Metadata        map[string]string       `json:"metadata,omitempty"`
	Links           map[string]checkoutLink `json:"_links,omitempty"`
}

// checkoutAction is one entry of GET /payments/{id}/actions (a bare JSON
// array): Type is Authorization, Capture, Void or Refund.
type checkoutAction struct {
	ID              string            `json:"id"`
	Type            string            `json:"type"`
	ProcessedOn     string            `json:"processed_on"`
	Amount          int64             `json:"amount"`
	Approved        bool              `json:"approved"`
	ResponseCode    string            `json:"response_code,omitempty"`
	ResponseSummary string            `json:"response_summary,omitempty"`
	Reference       string            `json:"reference,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
}

// checkoutActionAccepted is the 202 answer to a capture, void or refund:
// the action is accepted and processed asynchronously.
type checkoutActionAccepted struct {
	ActionID  string                  `json:"action_id"`
	Reference string                  `json:"reference,omitempty"`
	Links     map[string]checkoutLink `json:"_links,omitempty"`
}

// checkoutPaymentList is the answer to GET /payments?reference=...
type checkoutPaymentList struct {
	Limit      int               `json:"limit"`
	Skip       int               `json:"skip"`
	TotalCount int               `json:"total_count"`
	Data       []checkoutPayment `json:"data"`
}

// checkoutError is Checkout.com's error body: {"request_id": ...,
// "error_type": "request_invalid", "error_codes": [...]}.
type checkoutError struct {
	RequestID  string   `json:"request_id"`
	ErrorType  string   `json:"error_type"`
	ErrorCodes []string `json:"error_codes,omitempty"`
}

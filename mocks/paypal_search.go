package mocks

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Transaction search: GET /v1/reporting/transactions
// (reporting_transactions_v1.json; doc/controllers/transaction-search.md
// of the TypeScript SDK). "It takes a maximum of three hours for executed
// transactions to appear in the list transactions call": the fake shows a
// transaction once SearchLag has passed since it happened.

// ppTxn is one row of transaction search.
type ppTxn struct {
	id, refID, eventCode string
	amount               int64 // signed: refunds and voids are negative
	currency, status     string
	customField, invoice string
	at                   time.Time
}

// Transaction event codes (https://developer.paypal.com/docs/transaction-search/transaction-event-codes/).
const (
	ppEventCheckout      = "T0006" // PayPal Checkout APIs: a capture
	ppEventReversal      = "T1106" // payment reversal, initiated by PayPal
	ppEventRefund        = "T1107" // payment refund, initiated by the merchant
	ppEventAuthorization = "T1300" // general authorization
	ppEventVoid          = "T1302" // void of an authorization
)

// ppTxnStatus is the transaction_status of a capture's status: S success,
// P pending; "" for a capture that makes no row (declined).
func ppTxnStatus(captureStatus string) string {
	switch captureStatus {
	case "COMPLETED", "PARTIALLY_REFUNDED", "REFUNDED":
		return "S"
	case "PENDING":
		return "P"
	}
	return ""
}

// txnLocked adds a row for what a payment did at now, unless status is ""
// (nothing to report). h.mu must be held.
func (h *PayPalHandler) txnLocked(t ppTxn) {
	if t.status == "" {
		return
	}
	h.txns = append(h.txns, &t)
}

type paypalTxnInfo struct {
	PayPalAccountID           string  `json:"paypal_account_id,omitempty"`
	TransactionID             string  `json:"transaction_id"`
	PayPalReferenceID         string  `json:"paypal_reference_id,omitempty"`
	PayPalReferenceIDType     string  `json:"paypal_reference_id_type,omitempty"`
	TransactionEventCode      string  `json:"transaction_event_code"`
	TransactionInitiationDate string  `json:"transaction_initiation_date"`
	TransactionUpdatedDate    string  `json:"transaction_updated_date"`
	TransactionAmount         ppMoney `json:"transaction_amount"`
	TransactionStatus         string  `json:"transaction_status"`
	InvoiceID                 string  `json:"invoice_id,omitempty"`
	CustomField               string  `json:"custom_field,omitempty"`
}

type paypalTxnDetail struct {
	TransactionInfo paypalTxnInfo `json:"transaction_info"`
}

// paypalSearch is the answer of GET /v1/reporting/transactions.
type paypalSearch struct {
	TransactionDetails    []paypalTxnDetail `json:"transaction_details"`
	AccountNumber         string            `json:"account_number"`
	StartDate             string            `json:"start_date"`
	EndDate               string            `json:"end_date"`
	LastRefreshedDatetime string            `json:"last_refreshed_datetime"`
	Page                  int               `json:"page"`
	TotalItems            int               `json:"total_items"`
	TotalPages            int               `json:"total_pages"`
	Links                 []ppLink          `json:"links"`
}

// ppMaxSearchRange: "The maximum supported range is 31 days."
const ppMaxSearchRange = 31 * 24 * time.Hour

// searchTransactions is GET /v1/reporting/transactions: start_date and
// end_date (RFC 3339, at most 31 days apart), optional transaction_id,
// fields (transaction_info or all), page_size (1..500, default 100) and
// page (from 1).
func (h *PayPalHandler) searchTransactions(c *call) (*response, bool) {
	q := c.query
	bad := func(field, desc string) (*response, bool) {
		return h.errorResponse(c, http.StatusBadRequest, "INVALID_REQUEST",
			"Request is not well-formed, syntactically incorrect, or violates schema.",
			ppDetail{Field: field, Location: "query", Issue: "INVALID_PARAMETER_VALUE", Description: desc}), false
	}
	start, err := time.Parse(time.RFC3339, q.Get("start_date"))
	if err != nil {
		return bad("start_date", "start_date is required, in RFC 3339 with seconds, e.g. 2026-03-01T00:00:00Z.")
	}
	end, err := time.Parse(time.RFC3339, q.Get("end_date"))
	if err != nil {
		return bad("end_date", "end_date is required, in RFC 3339 with seconds, e.g. 2026-03-31T00:00:00Z.")
	}
	if end.Before(start) {
		return bad("end_date", "end_date is before start_date.")
	}
	if end.Sub(start) > ppMaxSearchRange {
		return bad("end_date", "Date range is greater than 31 days")
	}
	for _, f := range strings.Split(orDefault(q.Get("fields"), "transaction_info"), ",") {
		switch strings.TrimSpace(f) {
		case "transaction_info", "all", "payer_info", "shipping_info", "auction_info", "cart_info", "incentive_info", "store_info":
		default:
			return bad("fields", "fields takes transaction_info, all, payer_info, shipping_info, auction_info, cart_info, incentive_info or store_info.")
		}
	}
	size, page := 100, 1
	if v := q.Get("page_size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return bad("page_size", "page_size is between 1 and 500.")
		}
		size = n
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return bad("page", "page starts at 1.")
		}
		page = n
	}
	txID := q.Get("transaction_id")
	refreshed := c.now.Add(-h.searchLag)

	h.mu.Lock()
	defer h.mu.Unlock()
	txns := slices.Clone(h.txns)
	// Oldest first: rows injected with an earlier time sort into place.
	slices.SortStableFunc(txns, func(a, b *ppTxn) int { return a.at.Compare(b.at) })
	var rows []paypalTxnDetail
	for _, t := range txns {
		if t.at.After(refreshed) || t.at.Before(start) || t.at.After(end) || (txID != "" && t.id != txID) {
			continue
		}
		info := paypalTxnInfo{PayPalAccountID: "QYR5Z8XDVJNXQ", TransactionID: t.id, PayPalReferenceID: t.refID,
			TransactionEventCode: t.eventCode, TransactionInitiationDate: ppTime(t.at), TransactionUpdatedDate: ppTime(t.at),
			TransactionAmount: ppMoneyOf(t.amount, t.currency), TransactionStatus: t.status, InvoiceID: t.invoice, CustomField: t.customField}
		if t.refID != "" {
			info.PayPalReferenceIDType = "TXN"
		}
		rows = append(rows, paypalTxnDetail{TransactionInfo: info})
	}
	out := paypalSearch{TransactionDetails: []paypalTxnDetail{}, AccountNumber: "QYR5Z8XDVJNXQ", StartDate: ppTime(start), EndDate: ppTime(end),
		LastRefreshedDatetime: ppTime(refreshed), Page: page, TotalItems: len(rows), TotalPages: (len(rows) + size - 1) / size}
	if from := (page - 1) * size; from < len(rows) {
		out.TransactionDetails = rows[from:min(from+size, len(rows))]
	}
	self := ppBase + "/v1/reporting/transactions?" + q.Encode()
	out.Links = []ppLink{{Href: self, Rel: "self", Method: "GET"}}
	if page < out.TotalPages {
		nq := q
		nq.Set("page", strconv.Itoa(page+1))
		out.Links = append(out.Links, ppLink{Href: ppBase + "/v1/reporting/transactions?" + nq.Encode(), Rel: "next", Method: "GET"})
	}
	return h.jsonResponse(http.StatusOK, out), true
}

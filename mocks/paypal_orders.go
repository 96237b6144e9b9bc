package mocks

import (
	"net/http"
	"strings"
)

// Orders v2: POST /v2/checkout/orders, GET /{id}, POST /{id}/authorize and
// /{id}/capture (checkout_orders_v2.json).

type ppVaultRequest struct {
	VaultID           string         `json:"vault_id"`
	StoredCredential  map[string]any `json:"stored_credential"`
	ExperienceContext map[string]any `json:"experience_context"`
}

type ppPaymentSourceRequest struct {
	Card   *ppVaultRequest `json:"card"`
	PayPal *ppVaultRequest `json:"paypal"`
}

type ppUnitRequest struct {
	ReferenceID    string   `json:"reference_id"`
	Amount         *ppMoney `json:"amount"`
	Description    string   `json:"description"`
	CustomID       string   `json:"custom_id"`
	InvoiceID      string   `json:"invoice_id"`
	SoftDescriptor string   `json:"soft_descriptor"`
	// Documented fields the fake takes and ignores (purchase_unit_request,
	// checkout_orders_v2.json); any other field is refused, to catch typos.
	Payee              any `json:"payee"`
	PaymentInstruction any `json:"payment_instruction"`
	Items              any `json:"items"`
	Shipping           any `json:"shipping"`
}

type ppOrderRequest struct {
	Intent             string                  `json:"intent"`
	PurchaseUnits      []ppUnitRequest         `json:"purchase_units"`
	PaymentSource      *ppPaymentSourceRequest `json:"payment_source"`
	Payer              any                     `json:"payer"`
	ApplicationContext any                     `json:"application_context"`
}

type ppOrderActionRequest struct {
	PaymentSource map[string]any `json:"payment_source"`
}

// minimal reports whether c asked for PayPal's default, minimal answer:
// anything but Prefer: return=representation.
func ppMinimal(c *call) bool {
	return !strings.Contains(strings.ToLower(c.r.Header.Get("Prefer")), "return=representation")
}

// orderAnswerLocked renders o for c with status, and sets what a repeat of
// c's PayPal-Request-Id answers: the order's latest status, 200 OK ("If a
// duplicate response is retried, returns the HTTP 200 OK status code",
// checkout_orders_v2.json), in the form (minimal or representation) the
// first request asked for. h.mu must be held.
func (h *PayPalHandler) orderAnswerLocked(c *call, status int, o *ppOrder) *response {
	minimal := ppMinimal(c)
	render := func(status int) *response {
		if minimal {
			return h.jsonResponse(status, paypalMinimal{ID: o.id, Status: o.status, Links: o.links()})
		}
		return h.jsonResponse(status, o.view())
	}
	r := render(status)
	r.latest = func() *response {
		h.mu.Lock()
		defer h.mu.Unlock()
		return render(http.StatusOK)
	}
	return r
}

// createOrder is POST /v2/checkout/orders. With a payment source (a vault
// id) the order is processed at once: it completes with a capture or an
// authorization (declined, pending or approved as the vault id says), or
// waits for the payer (PAYER_ACTION_REQUIRED). Without one it is CREATED,
// for the payer to approve.
func (h *PayPalHandler) createOrder(c *call) (*response, bool) {
	var req ppOrderRequest
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	if req.Intent != "CAPTURE" && req.Intent != "AUTHORIZE" {
		return h.invalid(c, "/intent", "INVALID_PARAMETER_VALUE", "The value of a field is invalid."), false
	}
	if len(req.PurchaseUnits) != 1 {
		// The fake keeps to one purchase unit, as the adapter sends.
		return h.invalid(c, "/purchase_units", "INVALID_ARRAY_MAX_ITEMS", "The fake PayPal takes exactly one purchase unit."), false
	}
	u := req.PurchaseUnits[0]
	if u.Amount == nil {
		return h.invalid(c, "/purchase_units/0/amount", "MISSING_REQUIRED_PARAMETER", "A required field / parameter is missing."), false
	}
	amount, issue := ppParseMoney(*u.Amount)
	if issue != "" {
		return h.invalid(c, "/purchase_units/0/amount/value", issue, "The amount is not valid: "+issue), false
	}
	if len(u.CustomID) > 127 || len(u.InvoiceID) > 127 {
		return h.invalid(c, "/purchase_units/0", "INVALID_STRING_MAX_LENGTH", "custom_id and invoice_id are at most 127 characters."), false
	}
	var source, vaultID string
	var vault ppVault
	if ps := req.PaymentSource; ps != nil {
		switch {
		case ps.Card != nil && ps.PayPal == nil:
			source, vaultID = "card", ps.Card.VaultID
		case ps.PayPal != nil && ps.Card == nil:
			source, vaultID = "paypal", ps.PayPal.VaultID
		default:
			return h.invalid(c, "/payment_source", "ONLY_ONE_PAYMENT_SOURCE_ALLOWED", "Exactly one payment source (card or paypal) is taken."), false
		}
		v, ok := lookupPPVault(source, vaultID)
		if !ok {
			return h.unprocessable(c, "PAYMENT_SOURCE_CANNOT_BE_USED", "The vault id "+vaultID+" is not one of the fake's test vault ids."), false
		}
		vault = v
		// "It is mandatory for all single-step create order calls"
		// (PayPal-Request-Id, doc/controllers/orders.md).
		if c.key == "" {
			return h.invalid(c, "PayPal-Request-Id", "PAYPAL_REQUEST_ID_REQUIRED",
				"A PayPal-Request-Id is required if you are trying to process payment for an Order."), false
		}
	}
	if len(c.key) > paypalMaxKeyLength {
		return h.invalid(c, "PayPal-Request-Id", "INVALID_STRING_MAX_LENGTH", "PayPal-Request-Id is at most 108 characters."), false
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	o := &ppOrder{stored: h.stamp(c), id: ppUpperID(h.core.ids, 17), intent: req.Intent, status: "CREATED",
		amount: amount, currency: u.Amount.CurrencyCode, customID: u.CustomID, invoiceID: u.InvoiceID,
		description: u.Description, unitRef: orDefault(u.ReferenceID, "default"), source: source, vaultID: vaultID, vault: vault,
		updated: c.now}
	if source == "" {
		h.addOrderLocked(o)
		return h.orderAnswerLocked(c, http.StatusCreated, o), true
	}
	if vault.payerAction {
		// Created, waiting for the payer: 201 like any first answer ("A
		// successful response to a non-idempotent request returns the HTTP
		// 201 Created status code").
		o.status = "PAYER_ACTION_REQUIRED"
		h.addOrderLocked(o)
		return h.orderAnswerLocked(c, http.StatusCreated, o), true
	}
	if r := h.duplicateInvoiceLocked(c, o.invoiceID, o.id); r != nil {
		return r, true
	}
	h.addOrderLocked(o)
	h.completeOrderLocked(c, o)
	return h.orderAnswerLocked(c, http.StatusCreated, o), true
}

// duplicateInvoiceLocked is the account's "block duplicate invoice ID"
// guard: 422 DUPLICATE_INVOICE_ID, "Requested invoice_id has been
// previously captured. Possible duplicate transaction." for an invoice_id
// another order's payment already used (payments_payment_v2.json;
// https://developer.paypal.com/api/rest/troubleshooting/rest_unprocessable_entity).
// h.mu must be held.
func (h *PayPalHandler) duplicateInvoiceLocked(c *call, invoiceID, orderID string) *response {
	if !h.dupInvoice || invoiceID == "" {
		return nil
	}
	if owner, used := h.invoices[invoiceID]; used && owner != orderID {
		return h.unprocessable(c, "DUPLICATE_INVOICE_ID", "Requested invoice_id has been previously captured. Possible duplicate transaction.")
	}
	return nil
}

func (h *PayPalHandler) addOrderLocked(o *ppOrder) {
	h.orders[o.id] = o
	h.orderList = append(h.orderList, o)
}

// completeOrderLocked makes o's payment object as its vault says and
// completes o: an authorization (intent AUTHORIZE) or a capture. h.mu must
// be held.
func (h *PayPalHandler) completeOrderLocked(c *call, o *ppOrder) {
	now := c.now
	o.status, o.updated = "COMPLETED", now
	if o.intent == "AUTHORIZE" {
		a := &ppAuth{stored: h.stamp(c), id: ppUpperID(h.core.ids, 17), amount: o.amount, currency: o.currency,
			customID: o.customID, invoiceID: o.invoiceID, order: o, updated: now}
		a.status, a.reason, a.authorized, a.processor = o.paymentOutcome("CREATED", "DENIED")
		o.auth = a
		h.auths[a.id] = a
		if a.authorized {
			h.invoices[o.invoiceID] = o.id
		}
		h.txnLocked(ppTxn{id: a.id, eventCode: ppEventAuthorization, amount: a.amount, currency: a.currency,
			status: map[string]string{"CREATED": "S", "PENDING": "P"}[a.status], customField: a.customID, invoice: a.invoiceID, at: now})
		switch a.status {
		case "CREATED":
			h.emitLocked(now, "PAYMENT.AUTHORIZATION.CREATED", "authorization", a.view())
		}
		h.emitLocked(now, "CHECKOUT.ORDER.COMPLETED", "checkout-order", o.view())
		return
	}
	p := &ppCapture{stored: h.stamp(c), id: ppUpperID(h.core.ids, 17), amount: o.amount, currency: o.currency,
		customID: o.customID, invoiceID: o.invoiceID, final: true, order: o, updated: now}
	p.status, p.reason, p.authorized, p.processor = o.paymentOutcome("COMPLETED", "DECLINED")
	o.capture = p
	h.captures[p.id] = p
	if p.authorized {
		h.invoices[o.invoiceID] = o.id
	}
	h.txnLocked(ppTxn{id: p.id, eventCode: ppEventCheckout, amount: p.amount, currency: p.currency,
		status: ppTxnStatus(p.status), customField: p.customID, invoice: p.invoiceID, at: now})
	h.emitLocked(now, "PAYMENT.CAPTURE."+p.status, "capture", p.view())
	h.emitLocked(now, "CHECKOUT.ORDER.COMPLETED", "checkout-order", o.view())
}

// paymentOutcome is what o's test vault makes of the payment its
// completion creates: ok (CREATED, COMPLETED) or declined (DENIED,
// DECLINED, with the processor's decline code), or PENDING in review; a
// card payment carries a processor response.
func (o *ppOrder) paymentOutcome(ok, declined string) (status, reason string, authorized bool, processor *ppProcessorResponse) {
	status, authorized = ok, true
	switch {
	case o.vault.decline:
		status, authorized = declined, false
		processor = &ppProcessorResponse{AVSCode: "Y", CVVCode: "M", ResponseCode: ppDeclineCode}
	case o.vault.pending:
		status, reason = "PENDING", "PENDING_REVIEW"
	}
	if o.source == "card" && processor == nil {
		processor = &ppProcessorResponse{AVSCode: "Y", CVVCode: "M", ResponseCode: "0000"}
	}
	return status, reason, authorized, processor
}

// ppDeclineCode is the processor response of the declined test vault:
// 5120, one of the codes of processor_response.response_code
// (checkout_orders_v2.json), INSUFFICIENT_FUNDS in PayPal's processor
// response table.
const ppDeclineCode = "5120"

// getOrder is GET /v2/checkout/orders/{id}.
func (h *PayPalHandler) getOrder(c *call) (*response, bool) {
	return withObject(&h.mu, h.orders, c, func(string) *response { return h.notFound(c) }, func(o *ppOrder) (*response, bool) {
		return h.jsonResponse(http.StatusOK, o.view()), true
	})
}

// authorizeOrder is POST /v2/checkout/orders/{id}/authorize.
func (h *PayPalHandler) authorizeOrder(c *call) (*response, bool) {
	return h.orderAction(c, "AUTHORIZE")
}

// captureOrder is POST /v2/checkout/orders/{id}/capture.
func (h *PayPalHandler) captureOrder(c *call) (*response, bool) { return h.orderAction(c, "CAPTURE") }

// orderAction authorizes or captures an approved order.
func (h *PayPalHandler) orderAction(c *call, intent string) (*response, bool) {
	var req ppOrderActionRequest
	if r := h.decodeBody(c, &req); r != nil {
		return r, false
	}
	if len(c.key) > paypalMaxKeyLength {
		return h.invalid(c, "PayPal-Request-Id", "INVALID_STRING_MAX_LENGTH", "PayPal-Request-Id is at most 108 characters."), false
	}
	return withObject(&h.mu, h.orders, c, func(string) *response { return h.notFound(c) }, func(o *ppOrder) (*response, bool) {
		switch {
		case o.intent != intent:
			return h.unprocessable(c, "ACTION_DOES_NOT_MATCH_INTENT",
				"Order was created with an intent to '"+o.intent+"'. Use the matching action or create an order with intent '"+intent+"'."), true
		case o.status == "COMPLETED" && intent == "CAPTURE":
			return h.unprocessable(c, "ORDER_ALREADY_CAPTURED", "Order already captured. If 'intent=CAPTURE' only one capture per order is allowed."), true
		case o.status == "COMPLETED":
			return h.unprocessable(c, "ORDER_ALREADY_AUTHORIZED", "Order already authorized. If 'intent=AUTHORIZE' only one authorization per order is allowed."), true
		case o.status == "PAYER_ACTION_REQUIRED":
			return h.unprocessable(c, "PAYER_ACTION_REQUIRED", "Transaction cannot complete successfully, instruct the buyer to return to PayPal."), true
		case o.status == "VOIDED":
			return h.unprocessable(c, "ORDER_COMPLETED_OR_VOIDED", "Order is voided or completed and hence cannot be processed."), true
		case o.status != "APPROVED":
			return h.unprocessable(c, "ORDER_NOT_APPROVED", "Payer has not yet approved the Order for payment."), true
		}
		if r := h.duplicateInvoiceLocked(c, o.invoiceID, o.id); r != nil {
			return r, true
		}
		h.completeOrderLocked(c, o)
		return h.orderAnswerLocked(c, http.StatusCreated, o), true
	})
}

// ApproveOrder makes an order the payer approved, as PayPal's JS SDK or
// the approval redirect leaves it (status APPROVED, paid with the wallet
// PayPalWalletApproved), and returns its id, for `order:<id>` charges:
// POST .../{id}/capture (intent "CAPTURE") or .../{id}/authorize (intent
// "AUTHORIZE") then pays it. amount is in ISO 4217 minor units of currency
// (as payonce counts: 150000 HUF are 1500 forints, "1500" at PayPal). It
// panics on an intent, currency or amount PayPal does not take (a bug in
// the test).
func (h *PayPalHandler) ApproveOrder(intent string, amount int64, currency string) string {
	return h.ApproveOrderWith(PayPalOrderSpec{Intent: intent, Amount: amount, Currency: currency})
}

// PayPalOrderSpec is an order ApproveOrderWith makes.
type PayPalOrderSpec struct {
	// Intent is "CAPTURE" or "AUTHORIZE"; Amount (ISO 4217 minor units,
	// whole in PayPal's exponent: a multiple of 100 for HUF and TWD) and
	// Currency are required.
	Intent   string
	Amount   int64
	Currency string
	// CustomID and InvoiceID go on the purchase unit, as a merchant's
	// front end set them; empty for none.
	CustomID, InvoiceID string
	// Vault decides how the payment goes: one of the PayPalVault*
	// constants. Defaults to PayPalWalletApproved.
	Vault string
}

// ApproveOrderWith is ApproveOrder with the purchase unit's ids and the
// payment source's behaviour.
func (h *PayPalHandler) ApproveOrderWith(s PayPalOrderSpec) string {
	if s.Intent != "CAPTURE" && s.Intent != "AUTHORIZE" {
		panic("mocks: ApproveOrder: intent " + s.Intent + " is not CAPTURE or AUTHORIZE")
	}
	if why := ppCheckMinor(s.Amount, s.Currency); why != "" {
		panic("mocks: ApproveOrder: " + why)
	}
	src, vaultID, _ := strings.Cut(orDefault(s.Vault, PayPalWalletApproved), ":")
	vault, ok := lookupPPVault(src, vaultID)
	if !ok {
		panic("mocks: ApproveOrder: Vault " + s.Vault + " is not one of the PayPalVault constants")
	}
	now := h.core.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	o := &ppOrder{stored: stored{seq: h.seq, createdAt: now}, id: ppUpperID(h.core.ids, 17), intent: s.Intent, status: "APPROVED",
		amount: s.Amount, currency: s.Currency, customID: s.CustomID, invoiceID: s.InvoiceID, unitRef: "default",
		source: src, vaultID: vaultID, vault: vault, updated: now}
	h.addOrderLocked(o)
	return o.id
}

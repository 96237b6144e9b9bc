package mocks

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/currency"
)

// The PayPal fake's objects: what it stores (ppOrder, ppAuth, ppCapture,
// ppRefund) and how PayPal renders them (the paypal* wire types, in the
// shapes of checkout_orders_v2.json and payments_payment_v2.json of
// https://github.com/paypal/paypal-rest-api-specifications).

// ppMoney is PayPal's money: a currency code and a decimal string in the
// currency's exponent.
type ppMoney struct {
	CurrencyCode string `json:"currency_code"`
	Value        string `json:"value"`
}

// ppLink is one HATEOAS link.
type ppLink struct {
	Href   string `json:"href"`
	Rel    string `json:"rel"`
	Method string `json:"method,omitempty"`
}

// ppStatusDetails says why a payment or refund is PENDING, DENIED, ...
type ppStatusDetails struct {
	Reason string `json:"reason"`
}

// ppProcessorResponse is a card processor's answer to a capture or an
// authorization.
type ppProcessorResponse struct {
	AVSCode      string `json:"avs_code,omitempty"`
	CVVCode      string `json:"cvv_code,omitempty"`
	ResponseCode string `json:"response_code,omitempty"`
}

// ppRelatedIDs ties a payment to its order and authorization.
type ppRelatedIDs struct {
	OrderID         string `json:"order_id,omitempty"`
	AuthorizationID string `json:"authorization_id,omitempty"`
	CaptureID       string `json:"capture_id,omitempty"`
}

type ppSupplementary struct {
	RelatedIDs ppRelatedIDs `json:"related_ids"`
}

// paypalAuthorization is an authorization as GET
// /v2/payments/authorizations/{id} and an order render it.
type paypalAuthorization struct {
	ID                string               `json:"id"`
	Status            string               `json:"status"`
	StatusDetails     *ppStatusDetails     `json:"status_details,omitempty"`
	Amount            ppMoney              `json:"amount"`
	InvoiceID         string               `json:"invoice_id,omitempty"`
	CustomID          string               `json:"custom_id,omitempty"`
	ExpirationTime    string               `json:"expiration_time,omitempty"`
	ProcessorResponse *ppProcessorResponse `json:"processor_response,omitempty"`
	SupplementaryData *ppSupplementary     `json:"supplementary_data,omitempty"`
	Links             []ppLink             `json:"links"`
	CreateTime        string               `json:"create_time"`
	UpdateTime        string               `json:"update_time"`
}

// paypalCapture is a captured payment.
type paypalCapture struct {
	ID                string               `json:"id"`
	Status            string               `json:"status"`
	StatusDetails     *ppStatusDetails     `json:"status_details,omitempty"`
	Amount            ppMoney              `json:"amount"`
	InvoiceID         string               `json:"invoice_id,omitempty"`
	CustomID          string               `json:"custom_id,omitempty"`
	FinalCapture      bool                 `json:"final_capture"`
	ProcessorResponse *ppProcessorResponse `json:"processor_response,omitempty"`
	SupplementaryData *ppSupplementary     `json:"supplementary_data,omitempty"`
	Links             []ppLink             `json:"links"`
	CreateTime        string               `json:"create_time"`
	UpdateTime        string               `json:"update_time"`
}

// paypalRefund is a refund.
type paypalRefund struct {
	ID            string           `json:"id"`
	Status        string           `json:"status"`
	StatusDetails *ppStatusDetails `json:"status_details,omitempty"`
	Amount        ppMoney          `json:"amount"`
	InvoiceID     string           `json:"invoice_id,omitempty"`
	CustomID      string           `json:"custom_id,omitempty"`
	NoteToPayer   string           `json:"note_to_payer,omitempty"`
	Links         []ppLink         `json:"links"`
	CreateTime    string           `json:"create_time"`
	UpdateTime    string           `json:"update_time"`
}

// paypalOrder is an order as the Orders API renders it.
type paypalOrder struct {
	ID            string                    `json:"id"`
	Intent        string                    `json:"intent,omitempty"`
	Status        string                    `json:"status"`
	PaymentSource map[string]map[string]any `json:"payment_source,omitempty"`
	PurchaseUnits []paypalPurchaseUnit      `json:"purchase_units,omitempty"`
	Links         []ppLink                  `json:"links"`
	CreateTime    string                    `json:"create_time,omitempty"`
	UpdateTime    string                    `json:"update_time,omitempty"`
}

type paypalPurchaseUnit struct {
	ReferenceID string              `json:"reference_id"`
	Amount      ppMoney             `json:"amount"`
	Description string              `json:"description,omitempty"`
	CustomID    string              `json:"custom_id,omitempty"`
	InvoiceID   string              `json:"invoice_id,omitempty"`
	Payments    *paypalUnitPayments `json:"payments,omitempty"`
}

// paypalUnitPayments is a purchase unit's payment_collection: "The
// collection of payments, or transactions, for a purchase unit in an
// order. For example, authorized payments, captured payments, and
// refunds." Refunds are rendered as GET /v2/payments/refunds/{id} renders
// them (the same Refund model: id, status, status_details, amount,
// invoice_id, custom_id, note_to_payer, links, create_time, update_time):
// paypal/PayPal-TypeScript-Server-SDK src/models/paymentCollection.ts and
// refund.ts.
type paypalUnitPayments struct {
	Authorizations []paypalAuthorization `json:"authorizations,omitempty"`
	Captures       []paypalCapture       `json:"captures,omitempty"`
	Refunds        []paypalRefund        `json:"refunds,omitempty"`
}

// paypalMinimal is the answer under Prefer: return=minimal (PayPal's
// default): "id, status and HATEOAS links".
type paypalMinimal struct {
	ID     string   `json:"id"`
	Status string   `json:"status"`
	Links  []ppLink `json:"links"`
}

// ppVault is the behaviour of a test vault id.
type ppVault struct {
	decline, payerAction, pending, refundDecline bool
}

func lookupPPVault(source, vaultID string) (ppVault, bool) {
	switch source + ":" + vaultID {
	case PayPalVaultApproved, PayPalWalletApproved:
		return ppVault{}, true
	case PayPalVaultDeclined:
		return ppVault{decline: true}, true
	case PayPalVaultPayerAction:
		return ppVault{payerAction: true}, true
	case PayPalVaultPending:
		return ppVault{pending: true}, true
	case PayPalVaultRefundDeclined:
		return ppVault{refundDecline: true}, true
	}
	return ppVault{}, false
}

// ppOrder is an order the fake holds: one purchase unit, and the payment
// object it made (an authorization or a capture), if any.
type ppOrder struct {
	stored
	id, intent, status   string
	amount               int64
	currency             string
	customID, invoiceID  string
	description, unitRef string
	source, vaultID      string // "card" or "paypal", and the vault id; "" for none
	vault                ppVault
	auth                 *ppAuth
	capture              *ppCapture // the capture of an intent CAPTURE order
	updated              time.Time
	injected             bool
}

// ppAuth is an authorization.
type ppAuth struct {
	stored
	id, status, reason  string
	amount, captured    int64
	currency            string
	customID, invoiceID string
	order               *ppOrder
	captures            []*ppCapture
	authorized          bool // funds were held
	processor           *ppProcessorResponse
	updated             time.Time
	injected            bool
}

// ppCapture is a capture, of an order (auth nil) or of an authorization.
type ppCapture struct {
	stored
	id, status, reason  string
	amount              int64
	currency            string
	customID, invoiceID string
	final               bool
	order               *ppOrder
	auth                *ppAuth
	refunds             []*ppRefund
	authorized          bool // the money moved (or is held, PENDING)
	processor           *ppProcessorResponse
	updated             time.Time
	injected            bool
}

// ppRefund is a refund of a capture.
type ppRefund struct {
	stored
	id, status, reason  string
	amount              int64
	currency            string
	customID, invoiceID string
	note                string
	capture             *ppCapture
	updated             time.Time
	injected            bool
}

// refunded is what c's COMPLETED and PENDING refunds took back.
func (c *ppCapture) refunded() (n int64) {
	for _, r := range c.refunds {
		if r.status == "COMPLETED" || r.status == "PENDING" {
			n += r.amount
		}
	}
	return n
}

// settledRefunds is what c's COMPLETED refunds took back.
func (c *ppCapture) settledRefunds() (n int64) {
	for _, r := range c.refunds {
		if r.status == "COMPLETED" {
			n += r.amount
		}
	}
	return n
}

// capturedAmount is the money a capture took: its amount once COMPLETED
// (refunds later do not undo the capture).
func (c *ppCapture) capturedAmount() int64 {
	switch c.status {
	case "COMPLETED", "PARTIALLY_REFUNDED", "REFUNDED":
		return c.amount
	}
	return 0
}

const ppBase = "https://api.sandbox.paypal.com"

func (o *ppOrder) links() []ppLink {
	self := ppLink{Href: ppBase + "/v2/checkout/orders/" + o.id, Rel: "self", Method: "GET"}
	switch o.status {
	case "CREATED":
		return []ppLink{self, {Href: "https://www.sandbox.paypal.com/checkoutnow?token=" + o.id, Rel: "approve", Method: "GET"}}
	case "APPROVED":
		action := "capture"
		if o.intent == "AUTHORIZE" {
			action = "authorize"
		}
		return []ppLink{self, {Href: ppBase + "/v2/checkout/orders/" + o.id + "/" + action, Rel: action, Method: "POST"}}
	case "PAYER_ACTION_REQUIRED":
		return []ppLink{self, {Href: "https://www.sandbox.paypal.com/webapps/helios?action=verify&flow=3ds&cart_id=" + o.id, Rel: "payer-action", Method: "GET"}}
	}
	return []ppLink{self}
}

func (a *ppAuth) view() paypalAuthorization {
	v := paypalAuthorization{
		ID: a.id, Status: a.status, Amount: ppMoneyOf(a.amount, a.currency), InvoiceID: a.invoiceID, CustomID: a.customID,
		ProcessorResponse: a.processor, CreateTime: ppTime(a.createdAt), UpdateTime: ppTime(a.updated),
		SupplementaryData: &ppSupplementary{RelatedIDs: ppRelatedIDs{OrderID: a.order.id}},
	}
	if a.reason != "" {
		v.StatusDetails = &ppStatusDetails{Reason: a.reason}
	}
	if a.status == "CREATED" || a.status == "PARTIALLY_CAPTURED" {
		// An authorization is honoured for 3 days and may be captured for
		// 29 (https://developer.paypal.com/docs/checkout/standard/customize/authorization/).
		v.ExpirationTime = ppTime(a.createdAt.Add(29 * 24 * time.Hour))
	}
	self := ppBase + "/v2/payments/authorizations/" + a.id
	v.Links = []ppLink{{Href: self, Rel: "self", Method: "GET"}}
	if a.status == "CREATED" || a.status == "PARTIALLY_CAPTURED" {
		v.Links = append(v.Links, ppLink{Href: self + "/capture", Rel: "capture", Method: "POST"},
			ppLink{Href: self + "/void", Rel: "void", Method: "POST"})
	}
	v.Links = append(v.Links, ppLink{Href: ppBase + "/v2/checkout/orders/" + a.order.id, Rel: "up", Method: "GET"})
	return v
}

func (c *ppCapture) view() paypalCapture {
	v := paypalCapture{
		ID: c.id, Status: c.status, Amount: ppMoneyOf(c.amount, c.currency), InvoiceID: c.invoiceID, CustomID: c.customID,
		FinalCapture: c.final, ProcessorResponse: c.processor, CreateTime: ppTime(c.createdAt), UpdateTime: ppTime(c.updated),
		SupplementaryData: &ppSupplementary{RelatedIDs: ppRelatedIDs{OrderID: c.order.id}},
	}
	if c.reason != "" {
		v.StatusDetails = &ppStatusDetails{Reason: c.reason}
	}
	up := ppBase + "/v2/checkout/orders/" + c.order.id
	if c.auth != nil {
		v.SupplementaryData.RelatedIDs.AuthorizationID = c.auth.id
		up = ppBase + "/v2/payments/authorizations/" + c.auth.id
	}
	self := ppBase + "/v2/payments/captures/" + c.id
	v.Links = []ppLink{{Href: self, Rel: "self", Method: "GET"}}
	if c.status == "COMPLETED" || c.status == "PARTIALLY_REFUNDED" {
		v.Links = append(v.Links, ppLink{Href: self + "/refund", Rel: "refund", Method: "POST"})
	}
	v.Links = append(v.Links, ppLink{Href: up, Rel: "up", Method: "GET"})
	return v
}

func (r *ppRefund) view() paypalRefund {
	v := paypalRefund{
		ID: r.id, Status: r.status, Amount: ppMoneyOf(r.amount, r.currency), InvoiceID: r.invoiceID, CustomID: r.customID,
		NoteToPayer: r.note, CreateTime: ppTime(r.createdAt), UpdateTime: ppTime(r.updated),
		Links: []ppLink{{Href: ppBase + "/v2/payments/refunds/" + r.id, Rel: "self", Method: "GET"},
			{Href: ppBase + "/v2/payments/captures/" + r.capture.id, Rel: "up", Method: "GET"}},
	}
	if r.reason != "" {
		v.StatusDetails = &ppStatusDetails{Reason: r.reason}
	}
	return v
}

func (o *ppOrder) view() paypalOrder {
	u := paypalPurchaseUnit{ReferenceID: o.unitRef, Amount: ppMoneyOf(o.amount, o.currency), Description: o.description,
		CustomID: o.customID, InvoiceID: o.invoiceID}
	var captures []*ppCapture
	switch {
	case o.auth != nil:
		u.Payments = &paypalUnitPayments{Authorizations: []paypalAuthorization{o.auth.view()}}
		captures = o.auth.captures
	case o.capture != nil:
		u.Payments = &paypalUnitPayments{}
		captures = []*ppCapture{o.capture}
	}
	// The refunds of every capture of the unit, oldest first (a refund
	// made on the capture's endpoint belongs to the order's history too).
	var refunds []*ppRefund
	for _, c := range captures {
		u.Payments.Captures = append(u.Payments.Captures, c.view())
		refunds = append(refunds, c.refunds...)
	}
	slices.SortStableFunc(refunds, func(a, b *ppRefund) int { return cmp.Compare(a.seq, b.seq) })
	for _, r := range refunds {
		u.Payments.Refunds = append(u.Payments.Refunds, r.view())
	}
	v := paypalOrder{ID: o.id, Intent: o.intent, Status: o.status, PurchaseUnits: []paypalPurchaseUnit{u},
		Links: o.links(), CreateTime: ppTime(o.createdAt), UpdateTime: ppTime(o.updated)}
	switch o.source {
	case "card":
		v.PaymentSource = map[string]map[string]any{"card": {"last_digits": "1111", "brand": "VISA", "type": "CREDIT",
			"attributes": map[string]any{"vault": map[string]any{"id": o.vaultID, "status": "VAULTED"}}}}
	case "paypal":
		v.PaymentSource = map[string]map[string]any{"paypal": {"email_address": "payer@example.com", "account_id": "QYR5Z8XDVJNXQ",
			"attributes": map[string]any{"vault": map[string]any{"id": o.vaultID, "status": "VAULTED"}}}}
	}
	return v
}

// ---- money ----

// The fake keeps every amount in ISO 4217 minor units (the units payonce's
// ledger and Truth count in: golang.org/x/text/currency, 2 for HUF and
// TWD), and renders and parses PayPal's decimal strings in PayPal's own
// exponent, which differs for HUF and TWD (no decimals at PayPal): 1500.00
// forints are 150000 minor units here and "1500" on the wire.

// paypalCurrencies are the currencies PayPal's REST APIs take, with their
// exponents in PayPal's API: "HUF, JPY, TWD: this currency does not
// support decimals" (https://developer.paypal.com/api/rest/reference/currency-codes/).
var paypalCurrencies = map[string]int{
	"AUD": 2, "BRL": 2, "CAD": 2, "CNY": 2, "CZK": 2, "DKK": 2, "EUR": 2, "HKD": 2, "HUF": 0, "ILS": 2, "JPY": 0,
	"MYR": 2, "MXN": 2, "TWD": 0, "NZD": 2, "NOK": 2, "PHP": 2, "PLN": 2, "GBP": 2, "RUB": 2, "SGD": 2, "SEK": 2,
	"CHF": 2, "THB": 2, "USD": 2,
}

// ppScale is the factor from PayPal's units of currency to ISO minor
// units: 10^(ISO exponent − PayPal exponent), 100 for HUF and TWD, 1 for
// the rest (JPY has 0 decimals in both).
func ppScale(currencyCode string) int64 {
	pp, ok := paypalCurrencies[currencyCode]
	if !ok {
		return 1
	}
	u, err := currency.ParseISO(currencyCode)
	if err != nil {
		return 1
	}
	iso, _ := currency.Standard.Rounding(u)
	f := int64(1)
	for range iso - pp {
		f *= 10
	}
	return f
}

// ppCheckMinor says why minor ISO units of currencyCode cannot be a PayPal
// amount ("" when they can): PayPal must take the currency and the amount
// must be positive and whole in PayPal's exponent (a multiple of 100 for
// HUF and TWD).
func ppCheckMinor(minor int64, currencyCode string) string {
	if _, ok := paypalCurrencies[currencyCode]; !ok || minor <= 0 {
		return fmt.Sprintf("amount %d %q is not a positive amount in a currency PayPal takes", minor, currencyCode)
	}
	if f := ppScale(currencyCode); minor%f != 0 {
		return fmt.Sprintf("amount %d %s (ISO minor units) has decimals PayPal does not take for %s: use a multiple of %d",
			minor, currencyCode, currencyCode, f)
	}
	return ""
}

// ppMoneyOf renders ISO minor units in currency's PayPal exponent. Every
// amount the fake holds came through ppParseMoney or ppCheckMinor, so it
// divides exactly.
func ppMoneyOf(minor int64, code string) ppMoney {
	return ppMoney{CurrencyCode: code, Value: ppFormat(minor/ppScale(code), paypalCurrencies[code])}
}

func ppFormat(minor int64, exp int) string {
	if exp == 0 {
		return strconv.FormatInt(minor, 10)
	}
	neg := minor < 0
	if neg {
		minor = -minor
	}
	p := int64(1)
	for range exp {
		p *= 10
	}
	s := fmt.Sprintf("%d.%0*d", minor/p, exp, minor%p)
	if neg {
		s = "-" + s
	}
	return s
}

// ppParseMoney reads a PayPal amount into ISO minor units, or names the issue
// PayPal reports (payments_payment_v2.json: DECIMAL_PRECISION,
// DECIMALS_NOT_SUPPORTED, CANNOT_BE_ZERO_OR_NEGATIVE, ...).
func ppParseMoney(m ppMoney) (minor int64, issue string) {
	exp, ok := paypalCurrencies[m.CurrencyCode]
	switch {
	case m.CurrencyCode == "":
		return 0, "MISSING_REQUIRED_PARAMETER"
	case !ok:
		return 0, "CURRENCY_NOT_SUPPORTED"
	case m.Value == "":
		return 0, "MISSING_REQUIRED_PARAMETER"
	}
	whole, frac, dotted := strings.Cut(m.Value, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || (dotted && frac == "") ||
		len(whole) > 10 {
		if strings.HasPrefix(m.Value, "-") {
			return 0, "CANNOT_BE_ZERO_OR_NEGATIVE"
		}
		return 0, "INVALID_PARAMETER_SYNTAX"
	}
	if len(frac) > exp {
		if exp == 0 {
			return 0, "DECIMALS_NOT_SUPPORTED"
		}
		return 0, "DECIMAL_PRECISION"
	}
	frac += strings.Repeat("0", exp-len(frac))
	n, err := strconv.ParseInt(whole+frac, 10, 64)
	if err != nil {
		return 0, "INVALID_PARAMETER_SYNTAX"
	}
	if n <= 0 {
		return 0, "CANNOT_BE_ZERO_OR_NEGATIVE"
	}
	return n * ppScale(m.CurrencyCode), ""
}

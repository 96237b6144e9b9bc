package adyen

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

// Adyen's standard notification webhook (Webhooks-v1.json,
// github.com/Adyen/adyen-openapi; the Go SDK's src/webhook package):
//
//	{"live":"false","notificationItems":[{"NotificationRequestItem":{
//	  "additionalData":{"hmacSignature":"..."},"amount":{"currency":"EUR","value":1000},
//	  "eventCode":"CAPTURE","eventDate":"2021-01-01T01:00:00+01:00",
//	  "merchantAccountCode":"...","merchantReference":"...","originalReference":"...",
//	  "pspReference":"...","reason":"","success":"true"}}]}

type notification struct {
	Live              string             `json:"live"`
	NotificationItems []notificationItem `json:"notificationItems"`
}

type notificationItem struct {
	Item *notificationRequestItem `json:"NotificationRequestItem"`
}

type notificationRequestItem struct {
	AdditionalData      map[string]any `json:"additionalData"`
	Amount              *itemAmount    `json:"amount"`
	EventCode           string         `json:"eventCode"`
	EventDate           string         `json:"eventDate"`
	MerchantAccountCode string         `json:"merchantAccountCode"`
	MerchantReference   string         `json:"merchantReference"`
	OriginalReference   string         `json:"originalReference"`
	PspReference        string         `json:"pspReference"`
	Reason              string         `json:"reason"`
	Success             string         `json:"success"`
}

type itemAmount struct {
	// Value is a JSON number, or a string of one (the Java SDK's test
	// notifications carry "value":"0").
	Value    json.RawMessage `json:"value"`
	Currency string          `json:"currency"`
}

// Event codes the adapter maps to targets (Webhooks-v1.json, webhooks).
const (
	eventAuthorisation    = "AUTHORISATION"
	eventCapture          = "CAPTURE"
	eventCaptureFailed    = "CAPTURE_FAILED"
	eventCancellation     = "CANCELLATION"
	eventRefund           = "REFUND"
	eventRefundFailed     = "REFUND_FAILED"
	eventRefundedReversed = "REFUNDED_REVERSED"
	eventChargeback       = "CHARGEBACK"
)

// maxItems bounds the items of one delivery (Adyen batches a few; the
// ledger takes at most a few per event anyway).
const maxItems = 100

// maxField bounds the identity fields of an item: pspReference is 16
// characters, eventCode a short name; the event id must stay well under
// ledger.MaxWebhookIDBytes.
const maxField = 128

// ParseWebhook verifies one delivery of Adyen's standard webhook and
// returns one event per notification item.
//
// Verification, in order:
//  1. Basic auth, when Config.WebhookUsername is set: the credentials
//     configured on the endpoint ("we will include these in the header of
//     the notification":
//     https://docs.adyen.com/development-resources/notifications/best-practices),
//     compared in constant time. Missing or wrong: payonce.ErrWebhookCredentials
//     (the handler answers 401).
//  2. The HMAC signature of EVERY item: additionalData.hmacSignature must be
//     base64(HMAC-SHA256(hex-decoded HMACKey, pspReference:originalReference:
//     merchantAccountCode:merchantReference:value:currency:eventCode:success)),
//     each missing field an empty string, nothing escaped (the official
//     SDKs: Adyen/adyen-go-api-library src/hmacvalidator/hmacvalidator.go
//     GetDataToSign and encode; Adyen/adyen-java-api-library
//     src/main/java/com/adyen/util/HMACValidator.java getDataToSign, whose
//     test testValidateHMACWithoutEscaping signs a merchantReference
//     holding ':' and '\' as it is). Compared in constant time, as the
//     exact base64 text Adyen sends (adapterkit.EqualBase64).
//
// One item that does not verify rejects the whole delivery
// (payonce.ErrWebhookUnauthenticated; the handler answers 400 and records
// nothing). Why not keep the items that verify: Adyen signs every item of a
// genuine delivery, so a batch with a bad one was altered or forged, and
// nothing in it can be trusted to be the batch Adyen sent; and if the fault
// is ours (a rotated key not configured yet), refusing makes Adyen deliver
// the batch again, for up to 30 days, while acknowledging part of it would
// lose the rest for good. A body that is not Adyen's notification JSON
// (adapterkit.DecodeWebhook), or an item with no NotificationRequestItem,
// is payonce.ErrWebhookMalformed: nothing in it is signed.
//
// What verifies is never refused. The signed text is built from the
// fields as they are sent (an amount.value that is not an integer, a
// success that is neither "true" nor "false", are signed as written), so
// an item verifies or not before it is read. A verified item the adapter
// cannot read (no pspReference or eventCode, a field the ledger cannot
// store or too long, success neither "true" nor "false", an amount or
// currency that is not one, a metadata.payonce_key that is not a key) is
// returned as an unreadable event (payonce.WebhookEvent.Unreadable: which
// item, which field; no targets), which the handler records and
// acknowledges with the rest of the batch. Why: Adyen retries a delivery
// that was not acknowledged "three times immediately" and then from a
// per-endpoint queue for up to 30 days, one webhook at a time: "If a retry
// is successful, we continue with the next webhook in the queue"
// (https://docs.adyen.com/development-resources/webhooks/troubleshoot). A
// 400 for one item Adyen signed would hold every later event of the
// endpoint, and the batch's readable items, behind it for 30 days.
//
// Event identity: Adyen gives no event id. Each item's ID is
// pspReference + ":" + eventCode + ":" + success: a redelivery repeats all
// three, a CAPTURE and a later CAPTURE_FAILED of one capture are two events,
// and an AUTHORISATION success=false followed by success=true (which the
// ledger must see as a contradiction) are two events. An unreadable item's
// ID is "unreadable:" + the hex SHA-256 of its signed text: the same for
// its redelivery, whatever else the delivery holds.
//
// Targets (only for items of Config.MerchantAccount; others are recorded
// without targets):
//
//	AUTHORISATION      charge: ProviderRef pspReference, succeeded/failed by success,
//	                   Key metadata.payonce_key, Amount/Currency the item's amount
//	CAPTURE            capture: succeeded/failed by success, Amount/Currency
//	CAPTURE_FAILED     capture: reversal (capture_failed), Amount/Currency
//	CANCELLATION       cancel: succeeded/failed by success
//	REFUND             refund: succeeded/failed by success, Amount/Currency
//	REFUND_FAILED      refund: reversal (refund_failed), Amount/Currency
//	REFUNDED_REVERSED  refund: reversal (refunded_reversed), Amount/Currency
//	CHARGEBACK         charge: reversal (chargeback), ProviderRef originalReference
//	anything else      no targets
//
// Key: Adyen echoes the metadata of a payment request in its AUTHORISATION
// item's additionalData, each key prefixed with "metadata." ("A set of
// key-value pairs provided in the request, prefixed with 'metadata.'. For
// example, 'metadata.myField: myValue'", Webhooks-v1.json,
// AuthorisationNotificationAdditionalData.metadata, in
// github.com/Adyen/adyen-openapi), so metadata.payonce_key is the
// idempotency key the charge was sent with. Modifications carry no
// metadata in v71 (NewRequest) and Adyen does not echo the Idempotency-Key
// header: their targets carry no Key, and none is taken from a
// modification item's additionalData, which could only be the payment's.
//
// Amount and Currency are the item's amount where it is the object's own:
// the payment's on AUTHORISATION; the modification's on CAPTURE, REFUND
// and their failures and reversals (the item's pspReference is the
// modification's). The same fields Classify checks an answer with
// (adapterkit.Belongs): an object of another amount is a contradiction for
// the ledger, never a settlement. None on CANCELLATION (its amount is the
// payment's; a cancel has none) and CHARGEBACK (the disputed amount, which
// may be part of the payment).
//
// Modification targets carry ProviderRef = the item's pspReference (the
// modification's, which Classify recorded from the 201 answer) and
// PaymentRef = originalReference ("For modifications, this field
// corresponds to the payment request assigned to the original payment").
// OperationID is the merchantReference when it has the form of a payonce
// operation id. Adyen does not say whether a modification's
// merchantReference is the modification's reference (the operation id the
// adapter sent) or the payment's; the ledger matches an OperationID only
// with the target's kind, so the payment's reference (a charge's operation
// id) never matches a capture, and the pspReference does instead.
// CANCEL_OR_REFUND and TECHNICAL_CANCEL answer requests the adapter never
// sends (/reversals, cancels by merchant reference), so they settle none of
// payonce's operations: recorded, no targets. A technical cancel releases
// an authorisation, which does not undo the charge (docs/ADAPTERS.md,
// Lookup rule 9).
func (p *Provider) ParseWebhook(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	if err := p.checkBasicAuth(r); err != nil {
		return nil, err
	}
	if len(p.hmacKeys) == 0 {
		return nil, adapterkit.Unauthenticated(p.Name(), "no HMAC key is configured (set adyen.Config.HMACKey); every delivery is refused")
	}
	var n notification
	if err := adapterkit.DecodeWebhook(p.Name(), body, &n); err != nil {
		return nil, err
	}
	switch {
	case len(n.NotificationItems) == 0:
		return nil, adapterkit.Malformed(p.Name(), "notification has no notificationItems")
	case len(n.NotificationItems) > maxItems:
		return nil, adapterkit.Malformed(p.Name(), "notification has %d items; at most %d are read", len(n.NotificationItems), maxItems)
	}
	events := make([]payonce.WebhookEvent, 0, len(n.NotificationItems))
	for i, ni := range n.NotificationItems {
		it := ni.Item
		if it == nil {
			return nil, adapterkit.Malformed(p.Name(), "item %d has no NotificationRequestItem", i)
		}
		data := signedData(it)
		sig, _ := it.AdditionalData["hmacSignature"].(string)
		if sig == "" {
			return nil, adapterkit.Unauthenticated(p.Name(), "item %d has no additionalData.hmacSignature", i)
		}
		if !p.verify(data, sig) {
			return nil, adapterkit.Unauthenticated(p.Name(), "item %d: the HMAC signature does not verify (check adyen.Config.HMACKey)", i)
		}
		// Verified: from here on the item is recorded, read or not.
		ev, err := p.event(it)
		if err == nil {
			// The ledger refuses an event it cannot store; caught here, it
			// is recorded as unreadable instead.
			ev, err = adapterkit.CheckEvent(p.Name(), ev, p.scrub)
		}
		if err != nil {
			ev = p.unreadable(i, it, data, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// checkBasicAuth compares the delivery's basic-auth credentials with the
// configured ones in constant time; both are compared, so that the timing
// does not say which of the two was wrong.
func (p *Provider) checkBasicAuth(r *http.Request) error {
	if p.user == "" {
		return nil
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		return adapterkit.Credentials(p.Name(), "the delivery carries no basic-auth credentials (set them on the webhook in the Customer Area, or clear adyen.Config.WebhookUsername)")
	}
	userOK := adapterkit.EqualSecret(user, string(p.user))
	passOK := adapterkit.EqualSecret(pass, string(p.pass))
	if !userOK || !passOK {
		return adapterkit.Credentials(p.Name(), "wrong basic-auth credentials (check adyen.Config.WebhookUsername and WebhookPassword)")
	}
	return nil
}

// SignedData returns the text Adyen signs for a notification item:
// pspReference:originalReference:merchantAccountCode:merchantReference:
// value:currency:eventCode:success. Exported for tests, which sign what
// they deliver with it (the fake provider in mocks signs with its own
// copy, so that a mistake in one is caught by the other).
func SignedData(pspReference, originalReference, merchantAccount, merchantReference string, value int64, currency, eventCode, success string) string {
	return strings.Join([]string{pspReference, originalReference, merchantAccount, merchantReference,
		strconv.FormatInt(value, 10), currency, eventCode, success}, ":")
}

// Sign returns base64(HMAC-SHA256(key, data)), Adyen's hmacSignature, for a
// hex key as the Customer Area shows it.
func Sign(hexKey, data string) (string, error) {
	key, err := hex.DecodeString(hexKey)
	if err != nil || len(key) == 0 {
		return "", errors.New("adyen: the HMAC key is not a hex string")
	}
	return base64.StdEncoding.EncodeToString(adapterkit.HMACSHA256(key, []byte(data))), nil
}

// verify reports whether sig is data's signature under one of the keys.
func (p *Provider) verify(data, sig string) bool {
	ok := false
	for _, k := range p.hmacKeys {
		// Every key is tried, so that the time taken does not say which
		// one matched.
		if adapterkit.EqualBase64(adapterkit.HMACSHA256(k, []byte(data)), sig) {
			ok = true
		}
	}
	return ok
}

// signedData is the signed text of it, built from its fields as they are
// sent. A missing amount or value is an empty string (the Java SDK: "If
// any value is null, it is represented as an empty string"); a value is a
// JSON integer, or a string of one (the Java SDK's test notifications
// carry "value":"0"), written back in decimal as the SDKs do; any other
// value is signed as written (a string's content, a number's text), and so
// is success: whether the item can be read is decided after it verified.
func signedData(it *notificationRequestItem) string {
	var value, currency string
	if it.Amount != nil {
		currency = it.Amount.Currency
		value = valueText(it.Amount.Value)
	}
	return strings.Join([]string{it.PspReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
		value, currency, it.EventCode, it.Success}, ":")
}

// valueText is the signed text of amount.value: "" when missing or null,
// the decimal integer when it is one, else what was sent.
func valueText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	text := string(raw)
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			text = s
		}
	}
	if v, err := strconv.ParseInt(text, 10, 64); err == nil {
		return strconv.FormatInt(v, 10)
	}
	return text
}

// amountOf reads it's amount: value in minor units and currency, zero
// and empty when the item carries none. A value that is not an integer of
// at least 0, or a currency that is not three letters, is an error: the
// ledger checks an object's amount against the operation's, and an amount
// misread could pass for another.
func amountOf(it *notificationRequestItem) (int64, string, error) {
	if it.Amount == nil {
		return 0, "", nil
	}
	var value int64
	if text := valueText(it.Amount.Value); text != "" {
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v < 0 {
			return 0, "", fmt.Errorf("amount.value %s is not an amount in minor units", quote(truncate(text)))
		}
		value = v
	}
	cur := it.Amount.Currency
	if cur != "" && !currencyLike.MatchString(cur) {
		return 0, "", fmt.Errorf("amount.currency %s is not an ISO 4217 code", quote(truncate(cur)))
	}
	if value != 0 && cur == "" {
		return 0, "", errors.New("amount has a value but no currency")
	}
	return value, cur, nil
}

// currencyLike is the form of an ISO 4217 code.
var currencyLike = regexp.MustCompile(`^[A-Za-z]{3}$`)

// metaKey is where an AUTHORISATION item carries the idempotency key the
// payment was sent with (the request's metadata, see ParseWebhook).
const metaKey = "metadata." + MetaKey

// keyOf reads the idempotency key payonce wrote on the payment, echoed in
// it's additionalData; empty when it is not there (a payment made
// elsewhere). A value that is not a key payonce could have written is an
// error.
func keyOf(it *notificationRequestItem) (string, error) {
	v, ok := it.AdditionalData[metaKey]
	if !ok || v == nil {
		return "", nil
	}
	k, ok := v.(string)
	if !ok || len(k) > MaxKeyLength || !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
		return "", fmt.Errorf("additionalData.%s is not an idempotency key payonce wrote (a string of at most %d bytes)", metaKey, MaxKeyLength)
	}
	return k, nil
}

// identityOK reports whether s can be part of an event's identity: set,
// at most maxField bytes, UTF-8 without control characters.
func identityOK(s string) bool {
	if s == "" || len(s) > maxField || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

// unreadable is the event of verified item i that the adapter could not
// read, for why: recorded and acknowledged, applied to nothing, listed for
// an operator with the item's pspReference and eventCode where they can be
// shown. Its ID is derived from the signed text, so that a redelivery of
// the item is a duplicate.
func (p *Provider) unreadable(i int, it *notificationRequestItem, data string, why error) payonce.WebhookEvent {
	sum := sha256.Sum256([]byte(data))
	ev := payonce.WebhookEvent{ID: "unreadable:" + hex.EncodeToString(sum[:]), Type: "unreadable"}
	if identityOK(it.EventCode) {
		ev.Type = it.EventCode
	}
	if t, err := time.Parse(time.RFC3339, it.EventDate); err == nil {
		ev.OccurredAt = t
	}
	where := fmt.Sprintf("item %d", i)
	if identityOK(it.PspReference) {
		where += " (pspReference " + quote(it.PspReference) + ")"
	}
	ev.Unreadable = strings.ToValidUTF8(strings.ReplaceAll(p.scrub(where+": "+why.Error()), "\x00", ""), "")
	return ev
}

// opIDLike is the form of payonce's operation ids (a UUID).
var opIDLike = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// event turns a verified item into its event.
func (p *Provider) event(it *notificationRequestItem) (payonce.WebhookEvent, error) {
	switch {
	case it.PspReference == "" || it.EventCode == "":
		return payonce.WebhookEvent{}, errors.New("item has no pspReference or eventCode")
	case !identityOK(it.PspReference) || !identityOK(it.EventCode) ||
		(it.OriginalReference != "" && !identityOK(it.OriginalReference)):
		return payonce.WebhookEvent{}, fmt.Errorf("pspReference, originalReference or eventCode is longer than %d bytes, or holds invalid UTF-8 or a control character", maxField)
	case it.Success != "true" && it.Success != "false":
		return payonce.WebhookEvent{}, fmt.Errorf("success is %s, not \"true\" or \"false\"", quote(truncate(it.Success)))
	}
	ev := payonce.WebhookEvent{ID: it.PspReference + ":" + it.EventCode + ":" + it.Success, Type: it.EventCode}
	if t, err := time.Parse(time.RFC3339, it.EventDate); err == nil {
		ev.OccurredAt = t
	}
	if it.MerchantAccountCode != p.merchant {
		// Another merchant account (an endpoint may be configured for the
		// company account, whose merchant accounts may use the same
		// references and, Adyen storing keys per company, the same keys):
		// its payments are not this adapter's operations, whatever its
		// merchantReference or pspReference matches. Recorded and
		// acknowledged with no targets, so it never settles one of ours.
		// merchantAccountCode is "the merchant account identifier used in
		// the transaction the notification item is for" (Webhooks-v1.json)
		// and is signed.
		return ev, nil
	}
	op := ""
	if opIDLike.MatchString(it.MerchantReference) {
		op = it.MerchantReference
	}
	// What the item says of its operation, by success; the reversals
	// below say it failed after all.
	st := adapterkit.State{Verdict: adapterkit.VerdictSucceeded}
	if !it.isSuccess() {
		st = adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: codeRefused, Message: p.scrub(it.Reason)}
	}
	t := payonce.WebhookTarget{OperationID: op, ProviderRef: it.PspReference, PaymentRef: it.OriginalReference}
	// A reversal that did not happen (success false) undoes nothing.
	reversal := func(code string) bool {
		t.Reversal = true
		st = adapterkit.State{Verdict: adapterkit.VerdictFailed, Code: code, Message: p.scrub(it.Reason)}
		return it.isSuccess()
	}
	// A modification that did not happen is one that failed, not a
	// refusal of the payment.
	modification := func() {
		if st.Verdict == adapterkit.VerdictFailed {
			st.Code = codeModificationNot
		}
	}
	// ownAmount: the item's amount is the object's own (see ParseWebhook).
	keep, ownAmount := true, true
	switch it.EventCode {
	case eventAuthorisation:
		t.Kind, t.PaymentRef = payonce.KindCharge, ""
		key, err := keyOf(it)
		if err != nil {
			return payonce.WebhookEvent{}, err
		}
		t.Key = key
	case eventCapture:
		t.Kind = payonce.KindCapture
		modification()
	case eventCaptureFailed:
		t.Kind = payonce.KindCapture
		keep = reversal(codeCaptureFailed)
	case eventCancellation:
		t.Kind, ownAmount = payonce.KindCancel, false
		modification()
	case eventRefund:
		t.Kind = payonce.KindRefund
		modification()
	case eventRefundFailed:
		t.Kind = payonce.KindRefund
		keep = reversal(codeRefundFailed)
	case eventRefundedReversed:
		t.Kind = payonce.KindRefund
		keep = reversal(codeRefundReversed)
	case eventChargeback:
		// The chargeback's own pspReference is not the payment's: the
		// payment is originalReference. ProviderRef is what the ledger
		// records on a settled charge, so it must be the payment's or
		// nothing.
		t.Kind, t.ProviderRef, t.PaymentRef, ownAmount = payonce.KindCharge, it.OriginalReference, "", false
		keep = reversal(codeChargeback)
	default:
		return ev, nil
	}
	if !keep || (t.OperationID == "" && t.ProviderRef == "" && t.PaymentRef == "") {
		return ev, nil
	}
	if ownAmount {
		value, cur, err := amountOf(it)
		if err != nil {
			return payonce.WebhookEvent{}, err
		}
		t.Amount, t.Currency = value, cur
	}
	t.State = adapterkit.WebhookState(st)
	if t.State == payonce.LookupFailed {
		t.Code, t.Message = st.Code, st.Message
	}
	ev.Targets = []payonce.WebhookTarget{t}
	return ev, nil
}

func (it *notificationRequestItem) isSuccess() bool { return it.Success == "true" }

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

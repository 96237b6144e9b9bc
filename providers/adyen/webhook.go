package adyen

import (
	"bytes"
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
// (adapterkit.DecodeWebhook), or a verified item whose identity the ledger
// could not store (adapterkit.CheckEvent: a NUL byte or invalid UTF-8 in
// pspReference or eventCode), is payonce.ErrWebhookMalformed.
//
// Event identity: Adyen gives no event id. Each item's ID is
// pspReference + ":" + eventCode + ":" + success: a redelivery repeats all
// three, a CAPTURE and a later CAPTURE_FAILED of one capture are two events,
// and an AUTHORISATION success=false followed by success=true (which the
// ledger must see as a contradiction) are two events.
//
// Targets (only for items of Config.MerchantAccount; others are recorded
// without targets):
//
//	AUTHORISATION      charge: ProviderRef pspReference, succeeded/failed by success
//	CAPTURE            capture: succeeded/failed by success
//	CAPTURE_FAILED     capture: reversal (capture_failed)
//	CANCELLATION       cancel: succeeded/failed by success
//	REFUND             refund: succeeded/failed by success
//	REFUND_FAILED      refund: reversal (refund_failed)
//	REFUNDED_REVERSED  refund: reversal (refunded_reversed)
//	CHARGEBACK         charge: reversal (chargeback), ProviderRef originalReference
//	anything else      no targets
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
		data, err := signedData(it)
		if err != nil {
			return nil, adapterkit.Malformed(p.Name(), "item %d: %v", i, err)
		}
		sig, _ := it.AdditionalData["hmacSignature"].(string)
		if sig == "" {
			return nil, adapterkit.Unauthenticated(p.Name(), "item %d has no additionalData.hmacSignature", i)
		}
		if !p.verify(data, sig) {
			return nil, adapterkit.Unauthenticated(p.Name(), "item %d: the HMAC signature does not verify (check adyen.Config.HMACKey)", i)
		}
		ev, err := p.event(it)
		if err != nil {
			return nil, adapterkit.Malformed(p.Name(), "item %d: %v", i, err)
		}
		// The ledger refuses an id it cannot store with an error that
		// makes Adyen deliver again for 30 days; refused here, it is a 400
		// once.
		if ev, err = adapterkit.CheckEvent(p.Name(), ev, p.scrub); err != nil {
			return nil, err
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

// signedData is the signed text of it. A missing amount or value is an
// empty string (the Java SDK: "If any value is null, it is represented as
// an empty string"); a value is a JSON integer, or a string of one, written
// back in decimal as the SDKs do. success must be "true" or "false".
func signedData(it *notificationRequestItem) (string, error) {
	var value, currency string
	if it.Amount != nil {
		currency = it.Amount.Currency
		raw := bytes.TrimSpace(it.Amount.Value)
		if len(raw) > 0 && string(raw) != "null" {
			if raw[0] == '"' {
				var s string
				if err := json.Unmarshal(raw, &s); err != nil {
					return "", fmt.Errorf("amount.value: %v", err)
				}
				raw = []byte(s)
			}
			v, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil {
				return "", fmt.Errorf("amount.value is not an integer in minor units")
			}
			value = strconv.FormatInt(v, 10)
		}
	}
	if it.Success != "true" && it.Success != "false" {
		return "", fmt.Errorf("success is %q, not \"true\" or \"false\"", truncate(it.Success))
	}
	return strings.Join([]string{it.PspReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
		value, currency, it.EventCode, it.Success}, ":"), nil
}

// opIDLike is the form of payonce's operation ids (a UUID).
var opIDLike = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// event turns a verified item into its event.
func (p *Provider) event(it *notificationRequestItem) (payonce.WebhookEvent, error) {
	switch {
	case it.PspReference == "" || it.EventCode == "":
		return payonce.WebhookEvent{}, errors.New("item has no pspReference or eventCode")
	case len(it.PspReference) > maxField || len(it.EventCode) > maxField || len(it.OriginalReference) > maxField:
		return payonce.WebhookEvent{}, fmt.Errorf("pspReference, originalReference or eventCode is longer than %d bytes", maxField)
	}
	ev := payonce.WebhookEvent{ID: it.PspReference + ":" + it.EventCode + ":" + it.Success, Type: it.EventCode}
	if t, err := time.Parse(time.RFC3339, it.EventDate); err == nil {
		ev.OccurredAt = t
	}
	if it.MerchantAccountCode != p.merchant {
		// Another merchant account of the same company (an endpoint may be
		// configured for the company): none of this adapter's operations.
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
	keep := true
	switch it.EventCode {
	case eventAuthorisation:
		t.Kind, t.PaymentRef = payonce.KindCharge, ""
	case eventCapture:
		t.Kind = payonce.KindCapture
		modification()
	case eventCaptureFailed:
		t.Kind = payonce.KindCapture
		keep = reversal(codeCaptureFailed)
	case eventCancellation:
		t.Kind = payonce.KindCancel
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
		t.Kind, t.ProviderRef, t.PaymentRef = payonce.KindCharge, it.OriginalReference, ""
		keep = reversal(codeChargeback)
	default:
		return ev, nil
	}
	if !keep || (t.OperationID == "" && t.ProviderRef == "" && t.PaymentRef == "") {
		return ev, nil
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

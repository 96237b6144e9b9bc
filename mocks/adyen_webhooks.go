package mocks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Adyen's standard notification webhook, as the fake delivers it
// (Webhooks-v1.json in github.com/Adyen/adyen-openapi; NotificationRequest
// in the Go SDK's src/webhook package):
//
//	{"live":"false","notificationItems":[{"NotificationRequestItem":{
//	  "additionalData":{"hmacSignature":"..."},"amount":{"currency":"EUR","value":1000},
//	  "eventCode":"CAPTURE","eventDate":"2021-01-01T01:00:00+01:00",
//	  "merchantAccountCode":"...","merchantReference":"...","originalReference":"...",
//	  "pspReference":"...","reason":"","success":"true"}}]}
//
// Adyen may batch several items in one delivery; the fake sends one item
// per delivery, which a receiver must accept as well. The signature is per
// item and inside the body, so a body is rendered and signed once, when
// the change happens, and every attempt of it is the same bytes (as
// Adyen's retries are). The delivery itself carries HTTP Basic auth
// ("After you have set up a username and password for basic
// authentication in your Customer Area, we will include these in the
// header of the notification",
// https://docs.adyen.com/development-resources/notifications/best-practices).

// adyUserAgent names the fake's deliveries. Adyen documents no User-Agent
// for its webhooks, so a receiver must not depend on one.
const adyUserAgent = "payonce-mocks-adyen-webhooks"

// adyenNotification is the body of one delivery.
type adyenNotification struct {
	Live              string                       `json:"live"`
	NotificationItems []adyenNotificationContainer `json:"notificationItems"`
}

// adyenNotificationContainer wraps one item, as Adyen does.
type adyenNotificationContainer struct {
	Item adyenNotificationItem `json:"NotificationRequestItem"`
}

// adyenNotificationItem is one event. AdditionalData holds hmacSignature:
// base64 of the HMAC-SHA256, keyed with the hex-decoded
// AdyenOptions.Webhooks.Secret, of pspReference:originalReference:
// merchantAccountCode:merchantReference:value:currency:eventCode:success;
// on AUTHORISATION also the payment request's metadata, each key prefixed
// "metadata." (metadata.payonce_key is the key the adapter sent).
type adyenNotificationItem struct {
	AdditionalData      map[string]string `json:"additionalData"`
	Amount              adyenAmount       `json:"amount"`
	EventCode           string            `json:"eventCode"`
	EventDate           string            `json:"eventDate"`
	MerchantAccountCode string            `json:"merchantAccountCode"`
	MerchantReference   string            `json:"merchantReference"`
	OriginalReference   string            `json:"originalReference,omitempty"`
	PaymentMethod       string            `json:"paymentMethod"`
	PspReference        string            `json:"pspReference"`
	Reason              string            `json:"reason"`
	Success             string            `json:"success"`
}

// Items returns the notification's items in order.
func (n adyenNotification) Items() []adyenNotificationItem {
	out := make([]adyenNotificationItem, len(n.NotificationItems))
	for i, c := range n.NotificationItems {
		out[i] = c.Item
	}
	return out
}

// newAdyenNotification returns the body of one delivery holding items in
// order, e.g. items of several single-item deliveries batched as Adyen may
// batch them. Each item keeps its own signature.
func newAdyenNotification(items ...adyenNotificationItem) adyenNotification {
	n := adyenNotification{Live: "false", NotificationItems: make([]adyenNotificationContainer, len(items))}
	for i, it := range items {
		n.NotificationItems[i].Item = it
	}
	return n
}

// adySignedData is the text Adyen signs for an item:
// pspReference:originalReference:merchantAccountCode:merchantReference:
// value:currency:eventCode:success, as Adyen's SDKs compute it
// (Adyen/adyen-go-api-library src/hmacvalidator/hmacvalidator.go
// GetDataToSign), nothing escaped.
func adySignedData(it adyenNotificationItem) string {
	return strings.Join([]string{it.PspReference, it.OriginalReference, it.MerchantAccountCode, it.MerchantReference,
		strconv.FormatInt(it.Amount.Value, 10), it.Amount.Currency, it.EventCode, it.Success}, ":")
}

// checkAdyenWebhooks is the Adyen half of AdyenOptions.Validate: the
// signing key is what the receiver verifies every item with, and Adyen's
// only credentials are Basic ones.
func checkAdyenWebhooks(d WebhookDelivery) error {
	const name = "AdyenOptions.Webhooks"
	if d.enabled() || d.Secret != "" {
		if b, err := hex.DecodeString(d.Secret); err != nil || len(b) == 0 {
			return fmt.Errorf("mocks: %s.Secret is not a hex HMAC key; set the key the receiver verifies hmacSignature with, in hex as the Customer Area shows it (64 hex digits)", name)
		}
	}
	if d.Authorization != "" {
		return fmt.Errorf("mocks: %s.Authorization is set, but Adyen sends only HTTP Basic credentials; set Webhooks.Username and Password instead", name)
	}
	// RFC 7617: the user-id of Basic credentials cannot contain a colon
	// (the first one ends it), and the adapter refuses such a name too.
	if strings.Contains(d.Username, ":") {
		return fmt.Errorf("mocks: %s.Username contains ':', which Basic credentials cannot carry in a user name; use a name without it", name)
	}
	return nil
}

// adySignWebhook sets the headers of every attempt. The signature is in
// the body already, and the sender adds the Basic credentials.
func adySignWebhook(_ []byte, h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", adyUserAgent)
}

// emitLocked queues the notification of one event, signed. h.mu must be
// held, so that notifications queue in the order the changes happened.
func (h *AdyenHandler) emitLocked(now time.Time, event, psp, orig, ref string, amt adyenAmount, success bool, reason string) {
	if !h.webhooksOn() {
		return
	}
	it := adyenNotificationItem{
		Amount: amt, EventCode: event, EventDate: now.Format(time.RFC3339), MerchantAccountCode: h.merchantOfLocked(psp, orig),
		MerchantReference: ref, OriginalReference: orig, PaymentMethod: "visa", PspReference: psp, Reason: reason,
		Success: strconv.FormatBool(success),
	}
	mac := hmac.New(sha256.New, h.hmacKey)
	mac.Write([]byte(adySignedData(it)))
	it.AdditionalData = map[string]string{"hmacSignature": base64.StdEncoding.EncodeToString(mac.Sum(nil))}
	if p := h.payments[psp]; p != nil && event == "AUTHORISATION" {
		// Adyen echoes the payment request's metadata in the AUTHORISATION
		// item, each key prefixed "metadata." ("A set of key-value pairs
		// provided in the request, prefixed with 'metadata.'", Webhooks-v1.json,
		// AuthorisationNotificationAdditionalData). Modification requests
		// carry no metadata, and their items echo none.
		for k, v := range p.metadata {
			it.AdditionalData["metadata."+k] = v
		}
	}
	body, err := json.Marshal(newAdyenNotification(it))
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot render an Adyen notification: %v", err))
	}
	h.emitWebhook(body)
}

// FailCapture makes the capture modification psp fail after it succeeded
// (the scheme rejected it): the payment's captured amount goes back and a
// CAPTURE_FAILED notification is delivered. It reports whether psp is a
// capture that had succeeded.
func (h *AdyenHandler) FailCapture(psp string) bool {
	return h.failLater(psp, "capture", "CAPTURE_FAILED", "Capture Failed")
}

// FailRefund makes the refund modification psp fail after it succeeded: the
// payment's refunded amount goes back, the refund's status becomes
// "failed" and a REFUND_FAILED notification is delivered. It reports
// whether psp is a refund that had succeeded.
func (h *AdyenHandler) FailRefund(psp string) bool {
	return h.failLater(psp, "refund", "REFUND_FAILED", "Refund Failed")
}

func (h *AdyenHandler) failLater(psp, kind, event, reason string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.mods[psp]
	if !ok || m.kind != kind || m.status != "succeeded" {
		return false
	}
	p := h.payments[m.payment]
	m.status = "failed"
	if kind == "capture" {
		p.captured -= m.amount
	} else {
		p.refunded -= m.amount
	}
	// As in Adyen's examples, the failure event reports success "true": the
	// event (the failure) happened.
	h.emitLocked(h.core.now(), event, m.psp, m.payment, m.reference, adyenAmount{Currency: m.currency, Value: m.amount}, true, reason)
	return true
}

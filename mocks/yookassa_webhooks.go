package mocks

import (
	"encoding/json"
	"fmt"
)

// YooKassa notification events the fake emits: the event types of
// WebhookNotificationEventType in github.com/yoomoney/yookassa-sdk-python
// (src/yookassa/domain/notification/webhook_notification_types.py;
// https://yookassa.ru/en/developers/using-api/webhooks):
//
//	payment.waiting_for_capture  a payment with capture false was authorized
//	payment.succeeded            a payment was paid (at once, or by its capture)
//	payment.canceled             a payment was declined or canceled
//	refund.succeeded             a refund succeeded
//
// A pending payment and a canceled refund have no event there, so the fake
// emits none for them.
const (
	ykEvtWaitingForCapture = "payment.waiting_for_capture"
	ykEvtSucceeded         = "payment.succeeded"
	ykEvtCanceled          = "payment.canceled"
	ykEvtRefundSucceeded   = "refund.succeeded"
	ykNotificationType     = "notification"
)

// yooKassaNotification is a YooKassa webhook notification: {"type":
// "notification", "event": ..., "object": {...}}, object being the payment
// or refund as the fake's GET of it answers at the moment of the change,
// amount, metadata (payonce_op, payonce_key, payonce_kind) and refund
// description included: YooKassa's notice carries "all the data of the
// object at the moment its status changed"
// (https://yookassa.ru/developers/using-api/webhooks; WebhookNotification
// in the Python SDK's webhook_notification.py). It
// carries no signature: a receiver must trust it only after reading the
// object back by id.
type yooKassaNotification struct {
	Type   string          `json:"type"`
	Event  string          `json:"event"`
	Object json.RawMessage `json:"object"`
}

// emitLocked queues the notification event about obj. y.mu must be held.
func (y *YooKassaHandler) emitLocked(event string, obj any) {
	if !y.webhooksOn() {
		return
	}
	raw := mustMarshal(obj)
	body, err := json.Marshal(yooKassaNotification{Type: ykNotificationType, Event: event, Object: raw})
	if err != nil {
		panic(fmt.Sprintf("mocks: cannot render a YooKassa notification: %v", err))
	}
	y.emitWebhook(body)
}

// emitPaymentLocked queues the notification of p's current status, if its
// status has one. y.mu must be held.
func (y *YooKassaHandler) emitPaymentLocked(p *ykPayment) {
	switch p.p.Status {
	case "waiting_for_capture":
		y.emitLocked(ykEvtWaitingForCapture, p.p)
	case "succeeded":
		y.emitLocked(ykEvtSucceeded, p.p)
	case "canceled":
		y.emitLocked(ykEvtCanceled, p.p)
	}
}

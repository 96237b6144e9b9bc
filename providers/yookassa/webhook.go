package yookassa

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/internal/adapterkit"
)

var _ payonce.WebhookParser = (*Provider)(nil)

// Notification events the adapter reads (WebhookNotificationEventType in
// src/yookassa/domain/notification/webhook_notification_types.py of
// github.com/yoomoney/yookassa-sdk-python; "Available events",
// https://yookassa.ru/developers/using-api/webhooks).
const (
	evtWaitingForCapture = "payment.waiting_for_capture"
	evtPaymentSucceeded  = "payment.succeeded"
	evtPaymentCanceled   = "payment.canceled"
	evtRefundSucceeded   = "refund.succeeded"
	// typeNotification is a notification's type (WebhookNotificationType).
	typeNotification = "notification"
)

// DefaultWebhookAllow returns YooKassa's published notification networks,
// IPv4 and IPv6. YooKassa's notification docs list 185.71.76.0/27,
// 185.71.77.0/27, 77.75.153.0/25, 77.75.156.11, 77.75.156.35,
// 77.75.154.128/25 and 2a02:5180::/32 ("IP addresses" on
// https://yookassa.ru/developers/using-api/webhooks, the list integrations
// copy from that page). The official SDKs list only four /64s inside
// 2a02:5180::/32 (SecurityHelper.YOOKASSA_NETWORKS in
// src/yookassa/domain/common/security_helper.py of
// github.com/yoomoney/yookassa-sdk-python, getIPv6TrustedList in
// lib/Helpers/SecurityHelper.php of yoomoney/yookassa-sdk-php): a
// notification from any other address of YooKassa's /32 would be refused
// with 403 and, never acknowledged, redelivered until YooKassa gives up, so
// the documented /32 is used. Check them against YooKassa's docs when you
// deploy, and set Config.WebhookAllow if they changed. A new slice on every
// call: nothing shared can be changed.
func DefaultWebhookAllow() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("185.71.76.0/27"),
		netip.MustParsePrefix("185.71.77.0/27"),
		netip.MustParsePrefix("77.75.153.0/25"),
		netip.MustParsePrefix("77.75.154.128/25"),
		netip.MustParsePrefix("77.75.156.11/32"),
		netip.MustParsePrefix("77.75.156.35/32"),
		netip.MustParsePrefix("2a02:5180::/32"),
	}
}

// notification is a YooKassa notification:
// {"type":"notification","event":"payment.succeeded","object":{...}}.
type notification struct {
	Type   string          `json:"type"`
	Event  string          `json:"event"`
	Object json.RawMessage `json:"object"`
}

// ParseWebhook reads a YooKassa notification (payonce.WebhookParser).
//
// YooKassa signs nothing: a delivery is refused (payonce.ErrWebhookForbidden,
// 403) unless it comes from an address in Config.WebhookAllow, and even
// then it is never trusted. Anyone on an allowed network, or who can spoof
// one, could write it; so every target is LookupOnly: it only makes the
// operation due for a status lookup now, and the lookup (a GET of the
// object by id) decides. The targets name:
//
//   - payment.waiting_for_capture, payment.succeeded, payment.canceled: the
//     charge (payonce_op when payonce_kind is charge; ProviderRef the
//     payment id) and, for succeeded and canceled, a capture and a cancel
//     of it (PaymentRef the payment id);
//   - refund.succeeded: the refund (ProviderRef the refund id, PaymentRef
//     its payment_id, the operation id from the refund's payonce marker).
//
// A notification carries the whole object as it was when its status
// changed ("В уведомлении будут все данные об объекте на момент, когда его
// статус изменился", https://yookassa.ru/developers/using-api/webhooks), so
// each target also carries what the lookup checks the object against
// (adapterkit.Belongs), unverified like the rest:
//
//	charge            Key: payonce_key when payonce_kind is charge; Amount,
//	                  Currency: the payment's
//	capture, cancel   Currency: the payment's (the lookup compares no amount
//	                  and the payment's key is the charge's, not theirs)
//	refund            Key: the refund's payonce_key marker (the operation id
//	                  at generation 0: refundMarks); Amount, Currency: the
//	                  refund's
//
// An amount that cannot be read in the currency's minor units is left 0
// ("not given"): the lookup that the notice triggers reads the object
// again and reports it. A key or currency holding a NUL byte makes the
// notification Malformed (the ledger could not store it).
//
// Other events have no targets. YooKassa gives a notification no id, so
// its identity is derived: "<object id>:<event>". A redelivery of one
// notification repeats both, so it is recorded once; and a payment or
// refund enters each status once (its statuses only move forward:
// pending, waiting_for_capture, then succeeded or canceled), so two
// different notifications do not share it.
func (p *Provider) ParseWebhook(r *http.Request, body []byte) ([]payonce.WebhookEvent, error) {
	addr, ok := remoteAddr(r.RemoteAddr)
	if !ok {
		return nil, adapterkit.Forbidden(p.Name(), "the source address %q cannot be read", r.RemoteAddr)
	}
	if !p.allowed(addr) {
		return nil, adapterkit.Forbidden(p.Name(), "%s is not in yookassa.Config.WebhookAllow (YooKassa's published ranges by default); behind a proxy, see Config.WebhookAllow", addr)
	}
	var n notification
	if err := adapterkit.DecodeWebhook(p.Name(), body, &n); err != nil {
		return nil, err
	}
	switch {
	case n.Type != typeNotification:
		return nil, adapterkit.Malformed(p.Name(), "type is %q, not %q", p.scrub(n.Type), typeNotification)
	case n.Event == "":
		return nil, adapterkit.Malformed(p.Name(), "notification has no event")
	}
	var head struct {
		ID string `json:"id"`
	}
	if len(n.Object) > 0 {
		if err := json.Unmarshal(n.Object, &head); err != nil {
			return nil, adapterkit.Malformed(p.Name(), "object is not a JSON object")
		}
	}
	if head.ID == "" {
		return nil, adapterkit.Malformed(p.Name(), "notification %s has no object id", p.scrub(n.Event))
	}
	ev := payonce.WebhookEvent{ID: head.ID + ":" + n.Event, Type: n.Event}
	targets, err := p.notificationTargets(n)
	if err != nil {
		return nil, adapterkit.Malformed(p.Name(), "notification %s of %s: %s", p.scrub(n.Event), p.scrub(head.ID), p.scrub(err.Error()))
	}
	ev.Targets = targets
	return adapterkit.OneEvent(p.Name(), ev, p.scrub)
}

// remoteAddr reads the address of http.Request.RemoteAddr ("ip:port", or
// an address alone), an IPv4-mapped IPv6 address as IPv4 and without a
// zone, so that it compares with the allowlist's networks.
func remoteAddr(s string) (netip.Addr, bool) {
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(strings.TrimSpace(host))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}

func (p *Provider) allowed(a netip.Addr) bool {
	for _, pf := range p.webhookAllow {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

// notificationTargets maps the notification's object (see ParseWebhook).
// Each target's State is what the object claims, by the lookup's own
// rules (states.go), for the audit trail only: LookupOnly targets never
// settle anything.
func (p *Provider) notificationTargets(n notification) ([]payonce.WebhookTarget, error) {
	note := "yookassa: unverified notification " + n.Event + "; a lookup decides"
	switch n.Event {
	case evtWaitingForCapture, evtPaymentSucceeded, evtPaymentCanceled:
		pm, err := decodePayment(n.Object)
		if err != nil {
			return nil, err
		}
		op, key := "", ""
		if pm.Metadata[MetaKind] == string(payonce.KindCharge) {
			op, key = pm.Metadata[MetaOperation], pm.Metadata[MetaKey]
		}
		if err := storableText(key, pm.Amount.Currency); err != nil {
			return nil, err
		}
		cur := pm.Amount.Currency
		ts := []payonce.WebhookTarget{{Kind: payonce.KindCharge, OperationID: op, ProviderRef: pm.ID,
			Key: key, Amount: minorUnits(pm.Amount), Currency: cur}}
		if n.Event != evtWaitingForCapture {
			// A capture's and a cancel's ProviderRef is the payment they
			// acted on (lookup.go), and so is their PaymentRef.
			ts = append(ts, payonce.WebhookTarget{Kind: payonce.KindCapture, ProviderRef: pm.ID, PaymentRef: pm.ID, Currency: cur},
				payonce.WebhookTarget{Kind: payonce.KindCancel, ProviderRef: pm.ID, PaymentRef: pm.ID, Currency: cur})
		}
		for i := range ts {
			ts[i].LookupOnly, ts[i].Message = true, note
			ts[i].State = adapterkit.WebhookState(p.paymentState(ts[i].Kind, pm))
		}
		return ts, nil
	case evtRefundSucceeded:
		rf, err := decodeRefund(n.Object)
		if err != nil {
			return nil, err
		}
		op, key := refundMarks(rf)
		if err := storableText(key, rf.Amount.Currency); err != nil {
			return nil, err
		}
		return []payonce.WebhookTarget{{Kind: payonce.KindRefund, OperationID: op, ProviderRef: rf.ID, PaymentRef: rf.PaymentID,
			Key: key, Amount: minorUnits(rf.Amount), Currency: rf.Amount.Currency,
			LookupOnly: true, State: adapterkit.WebhookState(p.refundState(rf)), Message: note}}, nil
	}
	return nil, nil
}

// minorUnits is a notice's amount in minor units, 0 ("not given") when it
// cannot be read (see ParseWebhook).
func minorUnits(a amount) int64 {
	n, err := parseAmount(a)
	if err != nil {
		return 0
	}
	return n
}

// storableText refuses a key or currency the ledger cannot store (a NUL
// byte; JSON strings are valid UTF-8 once decoded).
func storableText(key, currency string) error {
	if strings.IndexByte(key, 0) >= 0 || strings.IndexByte(currency, 0) >= 0 {
		return errors.New("payonce_key or currency holds a NUL byte")
	}
	return nil
}
